#include "util/util.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t n)
{
    fprintf(stderr, "tide: out of memory (%zu bytes)\n", n);
    abort();
}

void *tide_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *tide_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom(n * size);
    return p;
}

void *tide_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

char *tide_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = tide_xmalloc(n);
    memcpy(p, s, n);
    return p;
}

void tide_grow(void **pv, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return;
    size_t c = *cap ? *cap : 8;
    while (c < need)
        c *= 2;
    *pv = tide_xrealloc(*pv, c * size);
    *cap = c;
}

char *tide_xstrdup_nonempty(const char *s) { return s && *s ? tide_xstrdup(s) : NULL; }

void tide_grow_zeroed(void **pv, size_t *cap, size_t need, size_t size)
{
    size_t old = *cap;
    tide_grow(pv, cap, need, size);
    if (*cap > old)
        memset((char *)*pv + old * size, 0, (*cap - old) * size);
}

int tide_parse_int(const char *s, long long *out)
{
    if (!s || !*s)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int tide_parse_double(const char *s, double *out)
{
    if (!s || !*s)
        return -1;
    /* the common case first: an integer of at most 15 digits is exact in a
     * double, the value strtod gives */
    const char *p = s + (*s == '-' || *s == '+');
    unsigned long long u = 0;
    int nd = 0;
    for (; *p >= '0' && *p <= '9' && nd < 16; p++, nd++)
        u = u * 10 + (unsigned)(*p - '0');
    if (!*p && nd > 0 && nd <= 15) {
        *out = *s == '-' ? -(double)u : (double)u;
        return 0;
    }
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* Is s a plain decimal number: [+-]digits[.digits][(e|E)[+-]digits], at
 * least one digit before the exponent? (strtod alone also takes hex like
 * 0x10, leading blanks, inf and nan, which the formats do not allow.) */
static int plain_decimal(const char *s)
{
    int digits = 0;
    if (*s == '+' || *s == '-')
        s++;
    for (; *s >= '0' && *s <= '9'; s++)
        digits++;
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++)
            digits++;
    if (!digits)
        return 0;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!(*s >= '0' && *s <= '9'))
            return 0;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == '\0';
}

int tide_parse_decimal(const char *s, double *out)
{
    return s && plain_decimal(s) ? tide_parse_double(s, out) : -1;
}

int tide_parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int tide_parse_duration(const char *s, int64_t *out)
{
    if (!s || !*s)
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0)
        return -1;
    double mul = 1;
    if (*end) {
        if (end[1])
            return -1;
        switch (*end) {
        case 's': mul = 1; break;
        case 'm': mul = 60; break;
        case 'h': mul = 3600; break;
        case 'd': mul = 86400; break;
        case 'w': mul = 7 * 86400; break;
        default: return -1;
        }
    }
    double r = v * mul;
    if (r > 9.0e15)
        return -1;
    *out = (int64_t)llround(r);
    return 0;
}

const char *tide_fmt_duration(int64_t s, char *buf, size_t n)
{
    if (s < 0)
        s = 0;
    if (s >= 86400)
        snprintf(buf, n, "%lldd%02lldh", (long long)(s / 86400), (long long)(s % 86400 / 3600));
    else if (s >= 3600)
        snprintf(buf, n, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
    else if (s >= 60)
        snprintf(buf, n, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
    else
        snprintf(buf, n, "%llds", (long long)s);
    return buf;
}

uint64_t tide_hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

/* "00" "01" ... "99": two digits at a time. */
static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324252627282930"
                                     "31323334353637383940414243444546474849505152535455565758596061"
                                     "62636465666768697071727374757677787980818283848586878889909192"
                                     "93949596979899";

/* The nd decimal digits of u ending at end (written backwards). */
static void put_digits(char *end, unsigned long long u, int nd)
{
    for (; nd >= 2; nd -= 2) {
        unsigned r = (unsigned)(u % 100);
        u /= 100;
        end -= 2;
        end[0] = digit_pairs[2 * r];
        end[1] = digit_pairs[2 * r + 1];
    }
    if (nd)
        end[-1] = (char)('0' + u);
}

/* The number of decimal digits of u (1 for 0): from its bit length, the
 * power of ten just below 2^bits (bits x log10(2) ~ bits x 1233 / 4096),
 * and one comparison; no loop. */
static int dec_digits(unsigned long long u)
{
    static const unsigned long long p10[20] = {
        1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
        100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL,
        10000000000000ULL, 100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL,
        100000000000000000ULL, 1000000000000000000ULL, 10000000000000000000ULL};
    int bits = 64 - __builtin_clzll(u | 1);
    int t = bits * 1233 >> 12; /* 10^t <= 2^(bits-1) <= u | 1, or 10^t just above */
    return t + ((u | 1) >= p10[t]);
}

int tide_fmt_i64(char *buf, long long v)
{
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    int len = 0, nd = dec_digits(u);
    if (v < 0)
        buf[len++] = '-';
    put_digits(buf + len + nd, u, nd);
    len += nd;
    buf[len] = 0;
    return len;
}

/* round(x * p) to nearest, ties to even, on the exact product (x >= 0
 * finite, x * p < 2^63, p <= 10^6): x = m x 2^-sh exactly with m < 2^53,
 * so x * p is m p / 2^sh, an integer division with its remainder in 128
 * bits (m p < 2^73). */
static unsigned long long scaled_round(double x, unsigned long long p)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    int ex = (int)(bits >> 52 & 0x7ff);
    uint64_t m = bits & ((1ULL << 52) - 1);
    if (ex)
        m |= 1ULL << 52;
    else
        ex = 1; /* subnormal */
    int sh = 1075 - ex;
    unsigned __int128 prod = (unsigned __int128)m * p;
    if (sh <= 0)
        return (unsigned long long)(prod << -sh);
    if (sh >= 100) /* m p < 2^73 <= half of 2^sh: rounds to 0 */
        return 0;
    unsigned long long q = (unsigned long long)(prod >> sh);
    unsigned __int128 rem = prod & (((unsigned __int128)1 << sh) - 1);
    unsigned __int128 half = (unsigned __int128)1 << (sh - 1);
    if (rem > half || (rem == half && (q & 1)))
        q++;
    return q;
}

int tide_fmt_fixed(char *buf, size_t n, double x, int dec)
{
    static const unsigned long long pow10[7] = {1, 10, 100, 1000, 10000, 100000, 1000000};
    if (n < 32 || dec < 0 || dec > 6 || !(fabs(x) * (double)pow10[dec] < 4e15))
        return snprintf(buf, n, "%.*f", dec, x);
    int len = 0;
    if (signbit(x)) {
        buf[len++] = '-';
        x = -x;
    }
    unsigned long long p = pow10[dec], r = scaled_round(x, p), whole = r / p;
    len += tide_fmt_i64(buf + len, (long long)whole);
    if (dec) {
        buf[len++] = '.';
        put_digits(buf + len + dec, r - whole * p, dec);
        len += dec;
        buf[len] = 0;
    }
    return len;
}

#define STRPOOL_BLOCK 65536

char *tide_strpool_dup(tide_strpool_t *p, const char *s)
{
    size_t n = strlen(s) + 1;
    if (!p->n_blk || p->used + n > p->room) {
        size_t room = n > STRPOOL_BLOCK / 4 ? n : STRPOOL_BLOCK;
        TIDE_PUSH(p->blk, p->n_blk, p->cap_blk, tide_xmalloc(room));
        if (room == n && p->n_blk > 1) { /* a long string: its own block, before the one filled */
            char *own = p->blk[p->n_blk - 1];
            p->blk[p->n_blk - 1] = p->blk[p->n_blk - 2];
            p->blk[p->n_blk - 2] = own;
            memcpy(own, s, n);
            return own;
        }
        p->used = 0;
        p->room = room;
    }
    char *d = p->blk[p->n_blk - 1] + p->used;
    memcpy(d, s, n);
    p->used += n;
    return d;
}

void tide_strpool_free(tide_strpool_t *p)
{
    for (size_t i = 0; i < p->n_blk; i++)
        free(p->blk[i]);
    free(p->blk);
    memset(p, 0, sizeof *p);
}
