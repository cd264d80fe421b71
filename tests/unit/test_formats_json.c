/* Unit tests: finite JSON numbers, JSON files (src/formats/json.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/json.h"

/* The compact text of v (and v released). */
static void expect_text(json_t *v, const char *want)
{
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    assert_non_null(s);
    assert_string_equal(s, want);
    free(s);
    json_decref(v);
}

static void test_real(void **state)
{
    (void)state;
    expect_text(tide_json_real(1.5), "1.5");
    expect_text(tide_json_real(2.0), "2.0");
    expect_text(tide_json_real(NAN), "0.0");
    expect_text(tide_json_real(INFINITY), "0.0");
    expect_text(tide_json_real(-INFINITY), "0.0");
}

static void test_num(void **state)
{
    (void)state;
    expect_text(tide_json_num(3.0), "3");
    expect_text(tide_json_num(-7.0), "-7");
    expect_text(tide_json_num(0.25), "0.25");
    expect_text(tide_json_num(1e16), "10000000000000000.0"); /* a real: too large for an integer */
    expect_text(tide_json_num(NAN), "null");
    expect_text(tide_json_num(INFINITY), "null");
}

static void test_round(void **state)
{
    (void)state;
    expect_text(tide_json_round(1.23456, 2), "1.23");
    expect_text(tide_json_round(1.25456, 1), "1.3");
    expect_text(tide_json_round(2.999, 2), "3");
    expect_text(tide_json_round(NAN, 2), "null");
    expect_text(tide_json_round(0.5, 0), "1");
    expect_text(tide_json_round(0.123456789012, 99), "0.123456789");
}

static void test_set(void **state)
{
    (void)state;
    json_t *o = json_object();
    tide_json_set(o, "a", tide_json_num(1));
    tide_json_set(o, "a", tide_json_num(2)); /* replaces, no leak under ASan */
    expect_text(o, "{\"a\":2}");
}

static void put(const char *dir, const char *name, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_load_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/tide_json_XXXXXX";
    assert_non_null(mkdtemp(dir));
    put(dir, "ok.json", "{\"a\": 1}");
    put(dir, "bad.json", "{\"a\": 1,\n  oops}");
    tide_error_t err = {0, ""};
    json_t *j = tide_json_load_file(dir, "ok.json", &err);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "a")), 1);
    json_decref(j);
    assert_null(tide_json_load_file(dir, "missing.json", &err));
    assert_int_equal(err.code, TIDE_ENOENT);
    assert_non_null(strstr(err.msg, "missing.json: cannot open"));
    err = (tide_error_t){0, ""};
    assert_null(tide_json_load_file(dir, "bad.json", &err));
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_non_null(strstr(err.msg, "bad.json:2: invalid JSON"));
    assert_null(tide_json_load_file(dir, "bad.json", NULL)); /* err is optional */
    char p[256];
    snprintf(p, sizeof p, "%s/ok.json", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/bad.json", dir);
    unlink(p);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real),
        cmocka_unit_test(test_num),
        cmocka_unit_test(test_round),
        cmocka_unit_test(test_set),
        cmocka_unit_test(test_load_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
