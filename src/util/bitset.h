/* A growable set of small non-negative integers (slots), as a bitmap:
 * membership set and cleared in O(1), and the members visited in increasing
 * order in time proportional to them plus the words scanned (n / 64). Used by
 * the core to index a subset of an array (e.g. the run slots of the jobs
 * that may grow) without scanning the array. */
#ifndef TIDE_BITSET_H
#define TIDE_BITSET_H

#include <stddef.h>
#include <stdint.h>

typedef struct tide_bitset {
    uint64_t *w;  /* words; bits past nw * 64 are members of nothing */
    size_t nw;
} tide_bitset_t;

/* Make i a member (on != 0) or not; grows the set as needed. */
void tide_bitset_put(tide_bitset_t *b, size_t i, int on);

/* Is i a member? */
static inline int tide_bitset_has(const tide_bitset_t *b, size_t i)
{
    return (i >> 6) < b->nw && ((b->w[i >> 6] >> (i & 63)) & 1);
}

/* The smallest member >= i and < lim, or -1. */
long tide_bitset_next(const tide_bitset_t *b, size_t i, size_t lim);

/* Remove every member (keeps the storage). */
void tide_bitset_clear(tide_bitset_t *b);

/* Release the storage (the set is empty afterwards). */
void tide_bitset_free(tide_bitset_t *b);

#endif
