/* Small helpers shared by every layer: checked allocation, growable arrays. */
#ifndef TIDE_UTIL_H
#define TIDE_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Allocation that aborts with a message when the machine is out of memory
 * (the same policy as git's xmalloc): callers never see NULL. */
void *tide_xmalloc(size_t n);
void *tide_xcalloc(size_t n, size_t size);
void *tide_xrealloc(void *p, size_t n);
char *tide_xstrdup(const char *s);
/* A copy of s, or NULL when s is NULL or empty. */
char *tide_xstrdup_nonempty(const char *s);

/* Grow *pv (element size `size`) so that it holds at least `need` elements. */
void tide_grow(void **pv, size_t *cap, size_t need, size_t size);
/* The same, the new elements zeroed (arrays indexed by handle). */
void tide_grow_zeroed(void **pv, size_t *cap, size_t need, size_t size);

#define TIDE_PUSH(arr, n, cap, val)                                               \
    do {                                                                          \
        if ((size_t)(n) + 1 > (cap)) /* no call while there is room */            \
            tide_grow((void **)&(arr), &(cap), (size_t)(n) + 1, sizeof *(arr));   \
        (arr)[(n)++] = (val);                                                     \
    } while (0)

/* A string pool: copies of many small strings (job ids, team names) packed
 * into large blocks, without a malloc header and 32-byte minimum chunk per
 * string; the copies stay where they are until tide_strpool_free frees them
 * all. A zeroed pool is empty. */
typedef struct tide_strpool {
    char **blk;      /* blocks, the last one being filled */
    size_t n_blk, cap_blk;
    size_t used, room; /* bytes used and size of the last block */
} tide_strpool_t;
/* A copy of s in p (stable until tide_strpool_free). */
char *tide_strpool_dup(tide_strpool_t *p, const char *s);
void tide_strpool_free(tide_strpool_t *p);

#define TIDE_MIN(a, b) ((a) < (b) ? (a) : (b))
#define TIDE_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Parse a duration "90", "90s", "15m", "36h", "14d", "1.5h" into seconds.
 * Returns 0 or -1 (not a duration). */
int tide_parse_duration(const char *s, int64_t *out);

/* Format seconds as "3d04h", "2h05m", "45s" into buf. */
const char *tide_fmt_duration(int64_t s, char *buf, size_t n);

/* Strict number parsers: whole string, no overflow. Return 0 or -1. */
/* Decimal text of v into buf (at least 21 bytes); returns its length. As
 * printf("%lld") but without printf. */
int tide_fmt_i64(char *buf, long long v);

/* x with `dec` (0..6) decimals into buf of n bytes; returns the length as
 * snprintf does. Byte-identical to snprintf(buf, n, "%.*f", dec, x) (round
 * half to even on the exact binary value, "-0.00" for small negatives),
 * computed without printf when n >= 32 and |x| x 10^dec < 4e15. */
int tide_fmt_fixed(char *buf, size_t n, double x, int dec);

int tide_parse_int(const char *s, long long *out);
int tide_parse_double(const char *s, double *out);
/* A finite plain decimal number only: [+-]digits[.digits][e[+-]digits]
 * (no hex like 0x10, no blanks, inf or nan, which strtod also takes). */
int tide_parse_decimal(const char *s, double *out);
/* Unsigned 64-bit number, decimal or 0x hex, whole string, no sign. */
int tide_parse_u64(const char *s, uint64_t *out);

/* FNV-1a hash of a string (for small hash tables). */
uint64_t tide_hash_str(const char *s);

/* SHA-256 of data[0..n) as 64 lowercase hex digits and a NUL into out. */
void tide_sha256_hex(const void *data, size_t n, char out[65]);
/* SHA-256 of data (sha256.c), HMAC-SHA256 of msg under key (RFC 2104), and
 * n bytes as lowercase hex into out (2n + 1 bytes; returns out). */
void tide_sha256(const void *data, size_t n, unsigned char out[32]);
void tide_hmac_sha256(const void *key, size_t nk, const void *msg, size_t nm,
                      unsigned char out[32]);
char *tide_hex(const unsigned char *v, size_t n, char *out);

#endif
