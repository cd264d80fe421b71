/* Byte buffers for snapshots (bytes.h). */
#include "util/bytes.h"

#include <string.h>

#include "util/util.h"

void tide_w_raw(tide_wbuf_t *b, const void *p, size_t n)
{
    if (!n)
        return;
    tide_grow((void **)&b->p, &b->cap, b->n + n, 1);
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

void tide_w_u64(tide_wbuf_t *b, uint64_t v) { tide_w_raw(b, &v, sizeof v); }

void tide_w_str(tide_wbuf_t *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    tide_w_u64(b, s ? n + 1 : 0);
    tide_w_raw(b, s, n);
}

void tide_w_arr(tide_wbuf_t *b, const void *p, size_t n, size_t size)
{
    tide_w_u64(b, n);
    tide_w_raw(b, p, n * size);
}

void tide_w_struct(tide_wbuf_t *b, const void *s, const tide_field_t *f, size_t nf)
{
    for (size_t i = 0; i < nf; i++)
        tide_w_raw(b, (const char *)s + f[i].off, f[i].size);
}

void tide_r_init(tide_rbuf_t *r, const void *p, size_t n)
{
    *r = (tide_rbuf_t){.p = p, .n = p ? n : 0};
}

int tide_r_raw(tide_rbuf_t *r, void *p, size_t n)
{
    if (r->bad || n > r->n - r->pos) {
        r->bad = 1;
        if (p && n)
            memset(p, 0, n);
        return -1;
    }
    if (n)
        memcpy(p, r->p + r->pos, n);
    r->pos += n;
    return 0;
}

uint64_t tide_r_u64(tide_rbuf_t *r)
{
    uint64_t v = 0;
    tide_r_raw(r, &v, sizeof v);
    return v;
}

size_t tide_r_count(tide_rbuf_t *r, size_t size, size_t max)
{
    uint64_t n = tide_r_u64(r);
    if (r->bad || n > max || (size && n > (r->n - r->pos) / size)) {
        r->bad = 1;
        return 0;
    }
    return (size_t)n;
}

char *tide_r_str(tide_rbuf_t *r)
{
    size_t n = tide_r_count(r, 0, SIZE_MAX - 1); /* length + 1; the NUL is not written */
    if (n == 0 || r->bad)
        return NULL;
    if (n - 1 > r->n - r->pos) {
        r->bad = 1;
        return NULL;
    }
    char *s = tide_xmalloc(n);
    tide_r_raw(r, s, n - 1);
    s[n - 1] = 0;
    return s;
}

void *tide_r_arr(tide_rbuf_t *r, size_t size, size_t *n)
{
    *n = tide_r_count(r, size, SIZE_MAX);
    void *p = tide_xcalloc(*n ? *n : 1, size);
    tide_r_raw(r, p, *n * size);
    return p;
}

int tide_r_fixed(tide_rbuf_t *r, void *p, size_t n, size_t size)
{
    size_t got = tide_r_count(r, size, n);
    if (got != n)
        r->bad = 1;
    return tide_r_raw(r, p, n * size);
}

void tide_r_struct(tide_rbuf_t *r, void *s, const tide_field_t *f, size_t nf)
{
    for (size_t i = 0; i < nf; i++)
        tide_r_raw(r, (char *)s + f[i].off, f[i].size);
}

size_t tide_fields_size(const tide_field_t *f, size_t nf)
{
    size_t n = 0;
    for (size_t i = 0; i < nf; i++)
        n += f[i].size;
    return n;
}

uint64_t tide_hash_bytes(uint64_t h, const void *p, size_t n)
{
    const uint8_t *c = p;
    for (size_t i = 0; i < n; i++) {
        h ^= c[i];
        h *= 1099511628211ULL;
    }
    return h;
}
