/* tide_bitset_t (bitset.h). */
#include "util/bitset.h"

#include <stdlib.h>
#include <string.h>

#include "util/util.h"

void tide_bitset_put(tide_bitset_t *b, size_t i, int on)
{
    size_t w = i >> 6;
    if (w >= b->nw) {
        if (!on)
            return;
        size_t cap = b->nw;
        tide_grow_zeroed((void **)&b->w, &cap, w + 1, sizeof *b->w);
        b->nw = cap;
    }
    uint64_t bit = (uint64_t)1 << (i & 63);
    if (on)
        b->w[w] |= bit;
    else
        b->w[w] &= ~bit;
}

long tide_bitset_next(const tide_bitset_t *b, size_t i, size_t lim)
{
    if (lim > b->nw * 64)
        lim = b->nw * 64;
    if (i >= lim)
        return -1;
    size_t w = i >> 6, last = (lim - 1) >> 6;
    uint64_t x = b->w[w] & (~(uint64_t)0 << (i & 63));
    while (!x) {
        if (++w > last)
            return -1;
        x = b->w[w];
    }
    size_t r = (w << 6) + (size_t)__builtin_ctzll(x);
    return r < lim ? (long)r : -1;
}

void tide_bitset_clear(tide_bitset_t *b)
{
    if (b->nw)
        memset(b->w, 0, b->nw * sizeof *b->w);
}

void tide_bitset_free(tide_bitset_t *b)
{
    free(b->w);
    b->w = NULL;
    b->nw = 0;
}
