#include "util/util.h"

#include <errno.h>
#include <math.h>
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

int tide_fmt_i64(char *buf, long long v)
{
    char tmp[24];
    int n = 0, len = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        buf[len++] = '-';
    while (n)
        buf[len++] = tmp[--n];
    buf[len] = 0;
    return len;
}

/* round(x * scale) to nearest, ties to even, on the exact product (x >= 0,
 * x * scale < 2^52): floor from the rounded product, corrected with fma,
 * whose single rounding keeps the sign of the exact difference. */
static unsigned long long scaled_round(double x, double scale)
{
    double n = floor(x * scale);
    if (fma(x, scale, -n) < 0)
        n -= 1;
    else if (fma(x, scale, -(n + 1)) >= 0)
        n += 1;
    double d = fma(x, scale, -(n + 0.5));
    unsigned long long r = (unsigned long long)n;
    if (d > 0 || (d == 0 && (r & 1)))
        r++;
    return r;
}

int tide_fmt_fixed(char *buf, size_t n, double x, int dec)
{
    static const double pow10[7] = {1, 10, 100, 1000, 1e4, 1e5, 1e6};
    if (n < 32 || dec < 0 || dec > 6 || !(fabs(x) * pow10[dec] < 4e15))
        return snprintf(buf, n, "%.*f", dec, x);
    int len = 0;
    if (signbit(x)) {
        buf[len++] = '-';
        x = -x;
    }
    unsigned long long r = scaled_round(x, pow10[dec]);
    unsigned long long p = (unsigned long long)pow10[dec];
    len += tide_fmt_i64(buf + len, (long long)(r / p));
    if (dec) {
        unsigned long long f = r % p;
        buf[len++] = '.';
        for (int k = dec - 1; k >= 0; k--) {
            buf[len + k] = (char)('0' + f % 10);
            f /= 10;
        }
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
