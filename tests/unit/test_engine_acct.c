/* Unit tests: the accounting's lazily integrated counters (src/core/acct.c).
 * tide__acct_job_set adds a job's GPUs to a team cell once per run of GPUs in
 * the same domain; that gives the same bits as one tide__lc_add per GPU
 * (the later calls at the same time integrate over dt = 0). Checked on a
 * seeded random sequence of times, run lengths and signs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "core/internal.h"

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void test_lc_add_run_same_bits(void **state)
{
    (void)state;
    lc_t one = {0}, run = {0};
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    tide_time_t now = 0;
    for (int step = 0; step < 20000; step++) {
        now += (tide_time_t)(rnd(&seed) % 5000); /* often dt = 0 as well */
        int n = 1 + (int)(rnd(&seed) % 8);
        /* never below zero, as a cell's count never is */
        int sign = (run.n >= n && rnd(&seed) % 2) ? -1 : 1;
        for (int k = 0; k < n; k++)
            tide__lc_add(&one, now, sign);
        tide__lc_add(&run, now, sign * n);
        assert_int_equal(one.n, run.n);
        assert_int_equal(one.t, run.t);
        assert_memory_equal(&one.acc, &run.acc, sizeof one.acc);
    }
    assert_true(run.acc > 0);
    assert_true(tide__lc_value(&one, now + 77) == tide__lc_value(&run, now + 77));
}

/* tide__ceil_sat by its definition: ceil, then clamped; NaN gives lo. */
static int ceil_sat_ref(double x, int lo, int hi)
{
    if (x != x)
        return lo;
    double c = ceil(x);
    return c <= (double)lo ? lo : c >= (double)hi ? hi : (int)c;
}

/* The truncation path of tide__ceil_sat gives ceil's integer: random
 * values at every scale, integers and their neighbours, halves, signed
 * zeros, the edges of its range and beyond, infinities and NaN. */
static void test_ceil_sat_is_ceil(void **state)
{
    (void)state;
    const int lims[][2] = {{0, 1 << 24}, {0, 7}, {-5, 5}, {3, 3}, {INT32_MIN, INT32_MAX}};
    double fixed[] = {0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1e-9, -1e-9, 2.5, 7.0, 7.000001, 6.999999,
                      1e15, -1e15, 999999999999999.9, -999999999999999.9, 1e16, -1e16, 4e9,
                      -4e9, 2147483647.5, -2147483648.5, INFINITY, -INFINITY, NAN};
    uint64_t seed = 0x2545f4914f6cdd1dULL;
    for (size_t l = 0; l < sizeof lims / sizeof lims[0]; l++) {
        int lo = lims[l][0], hi = lims[l][1];
        for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
            assert_int_equal(tide__ceil_sat(fixed[i], lo, hi), ceil_sat_ref(fixed[i], lo, hi));
        for (int k = 0; k < 200000; k++) {
            uint64_t r = rnd(&seed);
            double x;
            if (k % 3 == 0) /* any finite double */
                do {
                    r = rnd(&seed);
                    memcpy(&x, &r, sizeof x);
                } while (!isfinite(x));
            else if (k % 3 == 1) /* an integer or its neighbour */
                x = nextafter((double)((int64_t)(r >> 20) - (1LL << 43)), (r & 1) ? INFINITY : -INFINITY);
            else /* demand / rate sized values */
                x = (double)(r % 100000000) / 977.0 - 1e-9 - (double)(r >> 60);
            assert_int_equal(tide__ceil_sat(x, lo, hi), ceil_sat_ref(x, lo, hi));
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lc_add_run_same_bits),
        cmocka_unit_test(test_ceil_sat_is_ceil),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
