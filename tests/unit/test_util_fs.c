/* Unit tests: tide_mkdir_p (src/util/fs.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fs.h"

static char root[64];

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/tide_fs_XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static void test_creates_parents(void **state)
{
    (void)state;
    char p[256];
    tide_error_t err = {0, ""};
    snprintf(p, sizeof p, "%s/a/b/c", root);
    assert_int_equal(tide_mkdir_p(p, &err), 0);
    assert_true(is_dir(p));
    /* again: an existing directory is fine, trailing and double slashes too */
    snprintf(p, sizeof p, "%s/a//b/c//", root);
    assert_int_equal(tide_mkdir_p(p, &err), 0);
    snprintf(p, sizeof p, "%s/a/b/d/", root);
    assert_int_equal(tide_mkdir_p(p, NULL), 0);
    snprintf(p, sizeof p, "%s/a/b/d", root);
    assert_true(is_dir(p));
}

static void test_not_a_directory(void **state)
{
    (void)state;
    char f[256], p[300];
    snprintf(f, sizeof f, "%s/file", root);
    FILE *fp = fopen(f, "w");
    assert_non_null(fp);
    fclose(fp);
    /* the path itself is a file */
    tide_error_t err = {0, ""};
    assert_int_equal(tide_mkdir_p(f, &err), -1);
    assert_int_equal(err.code, TIDE_EIO);
    assert_non_null(strstr(err.msg, "is not a directory"));
    assert_non_null(strstr(err.msg, f));
    /* a parent is a file */
    snprintf(p, sizeof p, "%s/sub", f);
    err = (tide_error_t){0, ""};
    assert_int_equal(tide_mkdir_p(p, &err), -1);
    assert_int_equal(err.code, TIDE_EIO);
    assert_non_null(strstr(err.msg, "cannot create directory"));
}

static void test_empty(void **state)
{
    (void)state;
    tide_error_t err = {0, ""};
    assert_int_equal(tide_mkdir_p("", &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_int_equal(tide_mkdir_p(NULL, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_creates_parents, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
