/* Unit tests: the accounting's lazily integrated counters (src/core/acct.c).
 * tide__acct_job_set adds a job's GPUs to a team cell once per run of GPUs in
 * the same domain; that gives the same bits as one tide__lc_add per GPU
 * (the later calls at the same time integrate over dt = 0). Checked on a
 * seeded random sequence of times, run lengths and signs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lc_add_run_same_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
