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
