/* Byte buffers for snapshots: a growable writer and a bounds-checked reader
 * of native-endian scalars, strings, arrays and structs described by field
 * tables (so padding bytes are never written and equal states give equal
 * bytes). The reader never reads past its end: a short or malformed input
 * sets `bad` and yields zeros. */
#ifndef TIDE_UTIL_BYTES_H
#define TIDE_UTIL_BYTES_H

#include <stddef.h>
#include <stdint.h>

/* One member of a struct: offset and size (an array member is one field). */
typedef struct tide_field {
    uint16_t off, size;
} tide_field_t;
#define TIDE_FIELD(T, f) {(uint16_t)offsetof(T, f), (uint16_t)sizeof(((T *)0)->f)}
#define TIDE_NFIELDS(a) (sizeof(a) / sizeof *(a))

typedef struct tide_wbuf {
    uint8_t *p;
    size_t n, cap;
} tide_wbuf_t;

typedef struct tide_rbuf {
    const uint8_t *p;
    size_t n, pos;
    int bad;             /* read past the end or an impossible count */
} tide_rbuf_t;

/* Writer (the buffer starts zeroed; the caller frees p). */
void tide_w_raw(tide_wbuf_t *b, const void *p, size_t n);
void tide_w_u64(tide_wbuf_t *b, uint64_t v);
void tide_w_str(tide_wbuf_t *b, const char *s);            /* NULL and "" differ */
void tide_w_arr(tide_wbuf_t *b, const void *p, size_t n, size_t size); /* count, then bytes */
void tide_w_struct(tide_wbuf_t *b, const void *s, const tide_field_t *f, size_t nf);

/* Reader. */
void tide_r_init(tide_rbuf_t *r, const void *p, size_t n);
int tide_r_raw(tide_rbuf_t *r, void *p, size_t n);          /* 0, or -1 (bad, p zeroed) */
uint64_t tide_r_u64(tide_rbuf_t *r);
char *tide_r_str(tide_rbuf_t *r);                           /* owned; NULL when written NULL */
/* A count of elements of `size` wire bytes each, at most max: bad (0) when
 * larger or when they cannot all be in the rest of the input. */
size_t tide_r_count(tide_rbuf_t *r, size_t size, size_t max);
/* An array written by tide_w_arr: allocated (at least one element, zeroed),
 * its count in *n. */
void *tide_r_arr(tide_rbuf_t *r, size_t size, size_t *n);
/* An array written by tide_w_arr that must have exactly n elements: read
 * into p. Returns 0, or -1 (bad) for another count. */
int tide_r_fixed(tide_rbuf_t *r, void *p, size_t n, size_t size);
void tide_r_struct(tide_rbuf_t *r, void *s, const tide_field_t *f, size_t nf);
/* Bytes a struct takes on the wire. */
size_t tide_fields_size(const tide_field_t *f, size_t nf);

/* FNV-1a hash of n bytes, continuing from h (start with TIDE_FNV_INIT). */
#define TIDE_FNV_INIT 1469598103934665603ULL
uint64_t tide_hash_bytes(uint64_t h, const void *p, size_t n);

#endif
