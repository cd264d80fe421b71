/* Unit tests: tide_mkdir_p, tide_fs_write_atomic (src/util/fs.c). */
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

static int write_text(FILE *f, const void *ctx)
{
    return fputs(ctx, f) < 0 ? -1 : 0;
}

static int write_fails(FILE *f, const void *ctx)
{
    (void)ctx;
    fputs("half", f);
    return -1;
}

static void read_back(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = '\0';
    fclose(f);
}

static void test_write_atomic(void **state)
{
    (void)state;
    char p[256], t[256], got[64];
    tide_error_t err = {0, ""};
    snprintf(p, sizeof p, "%s/out.csv", root);
    snprintf(t, sizeof t, "%s/out.csv.tmp", root);
    assert_int_equal(tide_fs_write_atomic(root, "out.csv", write_text, "a,b\n1,2\n", &err), 0);
    read_back(p, got, sizeof got);
    assert_string_equal(got, "a,b\n1,2\n");
    assert_int_equal(access(t, F_OK), -1);
    /* a writer that fails leaves the old file whole and no temporary */
    assert_int_equal(tide_fs_write_atomic(root, "out.csv", write_fails, NULL, &err), -1);
    assert_int_equal(err.code, TIDE_EIO);
    assert_non_null(strstr(err.msg, "cannot write"));
    read_back(p, got, sizeof got);
    assert_string_equal(got, "a,b\n1,2\n");
    assert_int_equal(access(t, F_OK), -1);
    /* a folder that does not exist */
    char d[256];
    snprintf(d, sizeof d, "%s/missing", root);
    err = (tide_error_t){0, ""};
    assert_int_equal(tide_fs_write_atomic(d, "x.csv", write_text, "x", &err), -1);
    assert_int_equal(err.code, TIDE_EIO);
    assert_non_null(strstr(err.msg, "cannot create"));
    /* the destination is a directory: the rename fails, the temporary goes */
    snprintf(d, sizeof d, "%s/dir.csv/sub", root);
    assert_int_equal(tide_mkdir_p(d, NULL), 0);
    err = (tide_error_t){0, ""};
    assert_int_equal(tide_fs_write_atomic(root, "dir.csv", write_text, "x", &err), -1);
    assert_non_null(strstr(err.msg, "cannot rename"));
    snprintf(t, sizeof t, "%s/dir.csv.tmp", root);
    assert_int_equal(access(t, F_OK), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_creates_parents, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_atomic, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
