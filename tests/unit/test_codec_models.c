/* Unit tests: the model pipeline's JSON (src/http/codec_models.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "http/codec.h"

#define REQ(s) s, strlen(s)

static void test_model_round_trip(void **state)
{
    (void)state;
    tide_model_request_t mr;
    tide_error_t err = {0};
    assert_int_equal(tide_json_model_request(
                         REQ("{\"name\":\"llama\",\"service\":\"chat\",\"eval_command\":\"e.sh\","
                             "\"eval_gpus\":4,\"eval_limit_s\":1800,\"gates\":[\"acc>=serving-0.01\","
                             "\"loss<=2\"],\"steps\":\"10,100\",\"hold_s\":120,\"failure_limit\":2}"),
                         &mr, &err),
                     0);
    assert_string_equal(mr.spec.name, "llama");
    assert_null(mr.link[TIDE_LINK_WEBHOOK]);
    assert_int_equal(mr.spec.eval_gpus, 4);
    assert_int_equal(mr.spec.eval_limit_s, 1800);
    assert_int_equal(mr.spec.n_rules, 2);
    assert_int_equal(mr.rules[0].vs_serving, 1);
    assert_int_equal(mr.spec.plan.n_steps, 2);
    assert_int_equal(mr.spec.plan.hold_s, 120);
    assert_int_equal(mr.spec.plan.gate_interval_s, 60); /* the default */
    assert_int_equal(mr.spec.plan.failure_limit, 2);
    /* to JSON (the stored form) and back */
    tide_pipeline_t *p = tide_pipeline_create(1);
    int mi = tide_pipeline_add_model(p, &mr.spec, &err);
    assert_true(mi >= 0);
    tide_pipeline_restore_alias(p, mi, TIDE_ALIAS_LAST_GOOD, 0, NULL);
    tide_model_info_t m;
    tide_pipeline_model(p, mi, &m);
    json_t *j = tide_json_model(&m);
    char *s = json_dumps(j, JSON_COMPACT);
    tide_model_request_t back;
    assert_int_equal(tide_json_model_request(s, strlen(s), &back, &err), 0);
    assert_int_equal(back.spec.n_rules, 2);
    assert_string_equal(back.rules[1].metric, "loss");
    assert_int_equal(back.spec.plan.n_steps, 2);
    assert_true(back.spec.plan.weights[0] == 10);
    assert_string_equal(back.spec.eval_command, "e.sh");
    free(s);
    json_decref(j);
    tide_model_request_free(&back);
    tide_model_request_free(&mr);
    tide_pipeline_destroy(p);
}

/* The links: every one parsed into its slot, empty = none. */
static void test_model_links(void **state)
{
    (void)state;
    tide_model_request_t mr;
    tide_error_t err = {0};
    assert_int_equal(tide_json_model_request(
                         REQ("{\"name\":\"m\",\"service\":\"s\",\"webhook\":\"http://h/x\","
                             "\"slo_query\":\"http://p/q?query=slo{version}\",\"error_query\":\"\","
                             "\"latency_query\":\"http://p/l\"}"),
                         &mr, &err),
                     0);
    assert_string_equal(mr.link[TIDE_LINK_WEBHOOK], "http://h/x");
    assert_string_equal(mr.link[TIDE_LINK_SLO_QUERY], "http://p/q?query=slo{version}");
    assert_null(mr.link[TIDE_LINK_ERROR_QUERY]);
    assert_string_equal(mr.link[TIDE_LINK_LATENCY_QUERY], "http://p/l");
    assert_string_equal(tide_model_link_names[TIDE_LINK_LATENCY_QUERY], "latency_query");
    tide_model_request_free(&mr);
    assert_null(mr.link[TIDE_LINK_WEBHOOK]);
}

static void test_model_bad(void **state)
{
    (void)state;
    tide_model_request_t mr;
    tide_error_t err = {0};
    static const char *const bad[] = {
        "{\"name\":\"a\",\"service\":\"s\",\"steps\":[50,10,100]}",
        "{\"name\":\"a\",\"service\":\"s\",\"gates\":[\"x\"]}",
        "{\"name\":\"a\",\"service\":\"s\",\"gates\":\"acc>=1\"}",
        "{\"name\":\"a\",\"service\":\"s\",\"slo_min\":2}",
        "{\"name\":\"a\",\"service\":\"s\",\"colour\":1}",
        "{\"name\":5,\"service\":\"s\"}",
        "{\"name\":\"a\",\"service\":\"s\",\"slo_query\":\"https://p/q\"}",
        "{\"name\":\"a\",\"service\":\"s\",\"latency_query\":3}",
        "{\"name\":\"a\",\"service\":\"s\",\"webhook\":\"file:///etc\"}",
        "[1]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.code = 0;
        if (tide_json_model_request(bad[i], strlen(bad[i]), &mr, &err) == 0)
            fail_msg("accepted %s", bad[i]);
        assert_int_equal(err.code, TIDE_EINVAL);
    }
}

static void test_version_and_canary(void **state)
{
    (void)state;
    tide_version_request_t vr;
    tide_error_t err = {0};
    assert_int_equal(tide_json_version_request(
                         REQ("{\"manifest_uri\":\"s3://x\",\"source_job\":\"j\",\"step\":7}"), &vr, &err),
                     0);
    assert_string_equal(vr.spec.manifest_uri, "s3://x");
    assert_int_equal(vr.spec.ckpt_step, 7);
    tide_version_request_free(&vr);
    assert_int_equal(tide_json_version_request(REQ("{\"source_job\":\"j\"}"), &vr, &err), -1);
    assert_non_null(strstr(err.msg, "manifest_uri"));
    assert_int_equal(tide_json_version_request(REQ("{\"manifest_uri\":\"x\",\"step\":-1}"), &vr, &err), -1);
    double slo, er, lat;
    assert_int_equal(tide_json_canary(REQ("{\"slo\":0.9}"), &slo, &er, &lat, &err), 0);
    assert_true(slo == 0.9 && er == 0 && lat == 0);
    assert_int_equal(tide_json_canary(REQ("{}"), &slo, &er, &lat, &err), -1);
    assert_int_equal(tide_json_canary(REQ("{\"error_rate\":1.5}"), &slo, &er, &lat, &err), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_model_round_trip),
                                       cmocka_unit_test(test_model_links), cmocka_unit_test(test_model_bad),
                                       cmocka_unit_test(test_version_and_canary)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
