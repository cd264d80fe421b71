/* Unit tests: tide_fmt_i64 and tide_fmt_fixed (src/util/util.c) give the
 * bytes printf gives, on edge cases and on a million pseudo-random values
 * (ties on the exact binary value included). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

static void same_fixed(double x, int dec)
{
    char want[400], got[400];
    int wn = snprintf(want, sizeof want, "%.*f", dec, x);
    int n = tide_fmt_fixed(got, sizeof got, x, dec);
    if (strcmp(want, got) != 0)
        fail_msg("%.17g with %d decimals: printf %s, tide_fmt_fixed %s", x, dec, want, got);
    assert_int_equal(n, wn);
    char small[8], small_want[8]; /* a short buffer truncates as snprintf does */
    assert_int_equal(tide_fmt_fixed(small, sizeof small, x, dec),
                     snprintf(small_want, sizeof small_want, "%.*f", dec, x));
    assert_string_equal(small, small_want);
}

static void same_i64(long long v)
{
    char want[32], got[32];
    snprintf(want, sizeof want, "%lld", v);
    assert_int_equal(tide_fmt_i64(got, v), (int)strlen(want));
    assert_string_equal(got, want);
}

static void test_i64(void **state)
{
    (void)state;
    long long v[] = {0, 1, -1, 9, 10, 99, 100, 1234567890123LL, LLONG_MAX, LLONG_MIN, -42};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        same_i64(v[i]);
    /* the digit count at every length's edges: 10^k - 1, 10^k, 10^k + 1,
     * and the powers of two either side of each (bit length changes) */
    unsigned long long p = 1;
    for (int k = 0; k <= 18; k++, p *= 10)
        for (long long d = -1; d <= 1; d++)
            for (int sgn = 0; sgn < 2; sgn++)
                same_i64(sgn ? -((long long)p + d) : (long long)p + d);
    for (int b = 0; b < 63; b++)
        for (long long d = -1; d <= 1; d++)
            same_i64((1LL << b) + d);
}

static void test_fixed_edges(void **state)
{
    (void)state;
    double v[] = {0.0, -0.0, 0.005, 0.015, 0.125, 0.375, 1.005, 2.675, -0.001, -0.005, 0.5, 1.5,
                  2.5, 99.995, 123456789.125, 1e14, 3.999e15, 5e15, 1e300, -1e300, 1e-300,
                  INFINITY, -INFINITY, NAN, 0.045, 1.045, 4503599627370495.5 / 1e6};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        for (int dec = 0; dec <= 6; dec++)
            same_fixed(v[i], dec);
}

static void test_fixed_random(void **state)
{
    (void)state;
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < 1000000; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        double mant = (double)(s >> 11) / 9007199254740992.0;
        int ex = (int)(s % 40) - 12;
        double x = ldexp(mant, ex);
        if (s & 1)
            x = -x;
        if ((s >> 5) % 4 == 0) /* exact ties: k / 2^m */
            x = ldexp((double)((s >> 20) % 100000), -(int)((s >> 40) % 8));
        same_fixed(x, 2);
        same_fixed(x, (int)((s >> 8) % 7));
    }
}

/* Every digit count and the edges around each power of ten, both signs, and
 * random values of every magnitude. */
static void test_i64_all_lengths(void **state)
{
    (void)state;
    uint64_t s = 0x2545f4914f6cdd1dULL;
    unsigned long long p = 1;
    for (int d = 0; d < 20; d++, p *= 10) {
        long long edge[] = {(long long)p - 1, (long long)p, (long long)p + 1, (long long)(p / 2)};
        for (int i = 0; i < 4 * 200; i++) {
            long long v = edge[i % 4];
            if (i >= 4) {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                v = (long long)(s % (p * 10 > p ? p * 10 : ULLONG_MAX)) & LLONG_MAX;
            }
            for (int neg = 0; neg < 2; neg++) {
                long long x = neg ? -v : v;
                char want[32], got[32];
                snprintf(want, sizeof want, "%lld", x);
                assert_int_equal(tide_fmt_i64(got, x), (int)strlen(want));
                assert_string_equal(got, want);
            }
        }
    }
}

/* Near the fast path's limit (|x| 10^dec just under 4e15), subnormals, and
 * halves of every decimal place (exact binary ties). */
static void test_fixed_limits(void **state)
{
    (void)state;
    static const double pow10[7] = {1, 10, 100, 1000, 1e4, 1e5, 1e6};
    uint64_t s = 0x853c49e6748fea9bULL;
    for (int dec = 0; dec <= 6; dec++) {
        double lim = 4e15 / pow10[dec];
        for (int k = 0; k < 2000; k++) {
            same_fixed(nextafter(lim, 0) - k * (lim / 1e9), dec);
            same_fixed(ldexp(1.0, -1074 + k % 64) * (k + 1), dec);
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            /* j + 1/2^m: a tie at decimal place m when 10^dec x ends in .5 */
            double odd = (double)(2 * ((s >> 40) % 64) + 1);
            double x = (double)(s % 100000) + ldexp(odd, -(int)(1 + (s >> 20) % 12));
            same_fixed(x, dec);
            same_fixed(-x / pow10[dec], dec);
        }
    }
}

/* tide_parse_double's integer shortcut gives strtod's value to the bit
 * (signs, -0, leading zeros, 15 and 16 digits) and refuses what it refused. */
static void test_parse_integers(void **state)
{
    (void)state;
    const char *ok[] = {"0", "-0", "+0", "7", "-7", "+42", "000123", "999999999999999",
                        "-999999999999999", "1000000000000000", "9007199254740993",
                        "12345678901234567890", "86400", "1.5", "-2e3"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        double v = 1, want = strtod(ok[i], NULL);
        assert_int_equal(tide_parse_double(ok[i], &v), 0);
        assert_memory_equal(&v, &want, sizeof v);
    }
    uint64_t s = 88172645463325252ULL;
    for (int i = 0; i < 100000; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        char b[32];
        unsigned long long n = (s % 10000000000000000ULL) >> (s >> 58);
        snprintf(b, sizeof b, "%s%llu", s & 1 ? "-" : "", n);
        double v, want = strtod(b, NULL);
        assert_int_equal(tide_parse_double(b, &v), 0);
        assert_memory_equal(&v, &want, sizeof v);
    }
    const char *bad[] = {"", "-", "+", "12a", "1 ", "--1", "+-1", "1e999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        double v;
        assert_int_equal(tide_parse_double(bad[i], &v), -1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_i64),
        cmocka_unit_test(test_fixed_edges),
        cmocka_unit_test(test_fixed_random),
        cmocka_unit_test(test_i64_all_lengths),
        cmocka_unit_test(test_fixed_limits),
        cmocka_unit_test(test_parse_integers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
