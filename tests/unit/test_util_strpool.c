/* Unit tests: tide_strpool_t (src/util/util.c) keeps every copy intact and
 * where it was while thousands more, short and long, are added; long strings
 * get a block of their own without breaking the block being filled. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

#define N 20000

/* The i-th test string: short ids, and every 997th a long one (> 16 KiB). */
static void text(int i, char *buf, size_t n)
{
    if (i % 997 == 0) {
        size_t len = 20000 + (size_t)i % 7;
        if (len >= n)
            len = n - 1;
        memset(buf, 'a' + i % 26, len);
        buf[len] = 0;
        return;
    }
    snprintf(buf, n, "j%06d-%s", i, i % 3 ? "x" : "");
}

static void test_strpool_copies_stay(void **state)
{
    (void)state;
    static char buf[32768];
    tide_strpool_t p = {0};
    const char **at = calloc(N, sizeof *at);
    for (int i = 0; i < N; i++) {
        text(i, buf, sizeof buf);
        at[i] = tide_strpool_dup(&p, buf);
        assert_ptr_not_equal(at[i], buf);
        assert_string_equal(at[i], buf);
    }
    for (int i = 0; i < N; i++) { /* nothing moved or was overwritten */
        text(i, buf, sizeof buf);
        assert_string_equal(at[i], buf);
    }
    assert_true(p.n_blk < N / 100); /* packed: far fewer blocks than strings */
    tide_strpool_free(&p);
    assert_int_equal(p.n_blk, 0);
    assert_string_equal(tide_strpool_dup(&p, ""), ""); /* usable again */
    tide_strpool_free(&p);
    free(at);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_strpool_copies_stay)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
