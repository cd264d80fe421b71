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

static void test_i64(void **state)
{
    (void)state;
    long long v[] = {0, 1, -1, 9, 10, 99, 100, 1234567890123LL, LLONG_MAX, LLONG_MIN, -42};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        char want[32], got[32];
        snprintf(want, sizeof want, "%lld", v[i]);
        assert_int_equal(tide_fmt_i64(got, v[i]), (int)strlen(want));
        assert_string_equal(got, want);
    }
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_i64),
        cmocka_unit_test(test_fixed_edges),
        cmocka_unit_test(test_fixed_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
