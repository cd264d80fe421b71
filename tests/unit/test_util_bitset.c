/* Unit tests: tide_bitset_t (src/util/bitset.c) agrees with a plain array of
 * flags under random puts and clears, and its in-order visit (next) lists
 * exactly the members below a limit. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "util/bitset.h"

#define N 700

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Visiting with next from 0 below lim gives the flagged slots in order. */
static void same_members(const tide_bitset_t *b, const unsigned char *want, size_t lim)
{
    size_t expect = 0;
    for (long i = tide_bitset_next(b, 0, lim); i >= 0; i = tide_bitset_next(b, (size_t)i + 1, lim)) {
        while (expect < lim && !want[expect])
            expect++;
        assert_int_equal(i, (long)expect);
        expect++;
    }
    while (expect < lim && !want[expect])
        expect++;
    assert_true(expect >= lim);
}

static void test_random_ops(void **state)
{
    (void)state;
    tide_bitset_t b = {0};
    unsigned char want[N];
    memset(want, 0, sizeof want);
    for (int op = 0; op < 200000; op++) {
        size_t i = next_rand() % N;
        int on = (int)(next_rand() & 1);
        tide_bitset_put(&b, i, on);
        want[i] = (unsigned char)on;
        if (op % 97 == 0) {
            size_t lim = next_rand() % (N + 70);
            same_members(&b, want, lim < N ? lim : N);
            for (size_t k = 0; k < N; k++)
                assert_int_equal(tide_bitset_has(&b, k), want[k]);
        }
        if (op % 50021 == 0) {
            tide_bitset_clear(&b);
            memset(want, 0, sizeof want);
        }
    }
    same_members(&b, want, N);
    tide_bitset_free(&b);
    assert_int_equal(tide_bitset_next(&b, 0, N), -1);
}

static void test_edges(void **state)
{
    (void)state;
    tide_bitset_t b = {0};
    assert_int_equal(tide_bitset_next(&b, 0, 100), -1); /* empty, never grown */
    tide_bitset_put(&b, 5, 0);                          /* clearing does not grow */
    assert_int_equal(b.nw, 0);
    assert_false(tide_bitset_has(&b, 1000000));
    tide_bitset_put(&b, 63, 1);
    tide_bitset_put(&b, 64, 1);
    tide_bitset_put(&b, 200, 1);
    assert_int_equal(tide_bitset_next(&b, 0, 1000), 63);
    assert_int_equal(tide_bitset_next(&b, 64, 1000), 64);
    assert_int_equal(tide_bitset_next(&b, 65, 1000), 200);
    assert_int_equal(tide_bitset_next(&b, 65, 200), -1); /* the limit is exclusive */
    assert_int_equal(tide_bitset_next(&b, 201, (size_t)-1), -1);
    assert_int_equal(tide_bitset_next(&b, 5000, 6000), -1);
    tide_bitset_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_ops),
        cmocka_unit_test(test_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
