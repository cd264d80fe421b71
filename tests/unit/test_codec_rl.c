/* Unit tests: the RL trajectory ledger's request bodies (src/http/codec.c):
 * one trajectory or a batch, the payload kept as given, every refusal an
 * EINVAL naming the field (and the batch entry). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/codec.h"
#include "util/util.h"

#define REQ(s) s, strlen(s)

static void test_push_one(void **state)
{
    (void)state;
    tide_rl_push_request_t pr;
    tide_error_t err = {0};
    assert_int_equal(tide_json_rl_push(REQ("{\"trajectory_id\":\"t-1\",\"policy_version\":3,"
                                           "\"reward\":0.5,\"tokens\":[1,2]}"),
                                       &pr, &err),
                     0);
    assert_int_equal(pr.n, 1);
    assert_int_equal(pr.batch, 0);
    assert_string_equal(pr.v[0].id, "t-1");
    assert_int_equal(pr.v[0].policy_version, 3);
    /* the payload is the object as given (its fields, compact) */
    assert_non_null(strstr(pr.v[0].payload, "\"reward\":0.5"));
    assert_non_null(strstr(pr.v[0].payload, "\"tokens\":[1,2]"));
    tide_rl_push_request_free(&pr);
    tide_rl_push_request_free(&pr); /* safe twice */
}

static void test_push_batch(void **state)
{
    (void)state;
    tide_rl_push_request_t pr;
    tide_error_t err = {0};
    assert_int_equal(tide_json_rl_push(REQ("{\"trajectories\":[{\"trajectory_id\":\"a\","
                                           "\"policy_version\":0},{\"trajectory_id\":\"b\","
                                           "\"policy_version\":7},{\"trajectory_id\":\"a\","
                                           "\"policy_version\":0}]}"),
                                       &pr, &err),
                     0);
    assert_int_equal(pr.n, 3);
    assert_int_equal(pr.batch, 1);
    assert_string_equal(pr.v[1].id, "b");
    assert_int_equal(pr.v[1].policy_version, 7);
    assert_string_equal(pr.v[2].id, "a"); /* the ledger answers the repeat */
    tide_rl_push_request_free(&pr);
}

static void refused(const char *body, const char *needle)
{
    tide_rl_push_request_t pr;
    tide_error_t err = {0};
    if (tide_json_rl_push(body, strlen(body), &pr, &err) == 0)
        fail_msg("accepted: %s", body);
    assert_int_equal(err.code, TIDE_EINVAL);
    if (!strstr(err.msg, needle))
        fail_msg("%s: message '%s' does not name '%s'", body, err.msg, needle);
    assert_null(pr.v);
    assert_int_equal(pr.n, 0);
}

static void test_push_refused(void **state)
{
    (void)state;
    refused("", "");
    refused("[]", "");
    refused("{\"policy_version\":1}", "trajectory_id: required");
    refused("{\"trajectory_id\":\"a\"}", "policy_version: required");
    refused("{\"trajectory_id\":\"\",\"policy_version\":1}", "trajectory_id");
    refused("{\"trajectory_id\":\"a\\nb\",\"policy_version\":1}", "control character");
    refused("{\"trajectory_id\":7,\"policy_version\":1}", "trajectory_id: expected a string");
    refused("{\"trajectory_id\":\"a\",\"policy_version\":-1}", "policy_version");
    refused("{\"trajectory_id\":\"a\",\"policy_version\":1.5}", "policy_version");
    refused("{\"trajectories\":[]}", "trajectories: expected a list");
    refused("{\"trajectories\":{}}", "trajectories: expected a list");
    refused("{\"trajectories\":[{\"trajectory_id\":\"a\",\"policy_version\":1}],\"x\":1}",
            "unknown field 'x'");
    refused("{\"trajectories\":[{\"trajectory_id\":\"a\",\"policy_version\":1},3]}",
            "trajectories[1]: expected an object");
    refused("{\"trajectories\":[{\"trajectory_id\":\"a\",\"policy_version\":1},"
            "{\"trajectory_id\":\"b\"}]}",
            "trajectories[1]: policy_version: required");
    /* an id one byte too long */
    char body[512], id[TIDE_JSON_MAX_ID + 2];
    memset(id, 'x', sizeof id - 1);
    id[sizeof id - 1] = 0;
    snprintf(body, sizeof body, "{\"trajectory_id\":\"%s\",\"policy_version\":1}", id);
    refused(body, "longer than");
}

static void test_push_limit(void **state)
{
    (void)state;
    size_t cap = (TIDE_JSON_MAX_TRAJ_BATCH + 2) * 48 + 64, n = 0;
    char *b = tide_xmalloc(cap);
    n += (size_t)snprintf(b + n, cap - n, "{\"trajectories\":[");
    for (int i = 0; i <= TIDE_JSON_MAX_TRAJ_BATCH; i++)
        n += (size_t)snprintf(b + n, cap - n, "%s{\"trajectory_id\":\"t%d\",\"policy_version\":0}",
                              i ? "," : "", i);
    snprintf(b + n, cap - n, "]}");
    refused(b, "1..4096");
    free(b);
}

static void test_run_and_step(void **state)
{
    (void)state;
    tide_error_t err = {0};
    int64_t ms = -1, bs = -1, k = -1;
    assert_int_equal(tide_json_rl_run(REQ("{\"max_staleness\":0,\"batch_size\":64}"), &ms, &bs, &err), 0);
    assert_int_equal(ms, 0);
    assert_int_equal(bs, 64);
    assert_int_equal(tide_json_rl_run(REQ("{\"max_staleness\":1}"), &ms, &bs, &err), -1);
    assert_non_null(strstr(err.msg, "batch_size: required"));
    assert_int_equal(tide_json_rl_run(REQ("{\"max_staleness\":1,\"batch_size\":0}"), &ms, &bs, &err), -1);
    assert_non_null(strstr(err.msg, "batch_size"));
    assert_int_equal(tide_json_rl_run(REQ("{\"max_staleness\":1,\"batch_size\":2,\"b\":1}"), &ms,
                                      &bs, &err),
                     -1);
    assert_non_null(strstr(err.msg, "unknown field 'b'"));
    assert_int_equal(tide_json_rl_step(REQ("{\"step\":12}"), &k, &err), 0);
    assert_int_equal(k, 12);
    assert_int_equal(tide_json_rl_step(REQ("{\"step\":0}"), &k, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_int_equal(tide_json_rl_step(REQ("{\"step\":\"1\"}"), &k, &err), -1);
    assert_non_null(strstr(err.msg, "step: expected a whole number"));
    assert_int_equal(tide_json_rl_step(REQ("{}"), &k, &err), -1);
    assert_non_null(strstr(err.msg, "step: required"));
}

/* The step with the trainer's measures: optional, wait_s and compute_s
 * together, rollout_busy a share. */
static void test_step_report(void **state)
{
    (void)state;
    tide_error_t err = {0};
    tide_rl_step_report_t r;
    assert_int_equal(tide_json_rl_step_report(REQ("{\"step\":3}"), &r, &err), 0);
    assert_int_equal(r.step, 3);
    assert_true(r.wait_s < 0 && r.compute_s < 0 && r.rollout_busy < 0);
    assert_int_equal(tide_json_rl_step_report(
                         REQ("{\"step\":4,\"wait_s\":1.5,\"compute_s\":30,\"rollout_busy\":0.25}"),
                         &r, &err),
                     0);
    assert_int_equal(r.step, 4);
    assert_true(r.wait_s == 1.5 && r.compute_s == 30 && r.rollout_busy == 0.25);
    assert_int_equal(tide_json_rl_step_report(REQ("{\"step\":4,\"wait_s\":0,\"compute_s\":1}"),
                                              &r, &err),
                     0);
    assert_true(r.wait_s == 0 && r.rollout_busy < 0);
    static const struct {
        const char *body, *msg;
    } bad[] = {
        {"{\"step\":1,\"wait_s\":1}", "compute_s: required with wait_s"},
        {"{\"step\":1,\"compute_s\":1}", "wait_s: required with compute_s"},
        {"{\"step\":1,\"wait_s\":-1,\"compute_s\":1}", "wait_s"},
        {"{\"step\":1,\"wait_s\":\"1\",\"compute_s\":1}", "wait_s"},
        {"{\"step\":1,\"wait_s\":1,\"compute_s\":1,\"rollout_busy\":1.5}", "rollout_busy"},
        {"{\"step\":0}", "step"},
        {"{\"wait_s\":1,\"compute_s\":1}", "step: required"},
        {"{\"step\":1,\"b\":1}", "unknown field 'b'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&err, 0, sizeof err);
        assert_int_equal(tide_json_rl_step_report(bad[i].body, strlen(bad[i].body), &r, &err), -1);
        assert_int_equal(err.code, TIDE_EINVAL);
        if (!strstr(err.msg, bad[i].msg))
            fail_msg("%s: %s", bad[i].body, err.msg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_push_one),     cmocka_unit_test(test_push_batch),
        cmocka_unit_test(test_push_refused), cmocka_unit_test(test_push_limit),
        cmocka_unit_test(test_run_and_step), cmocka_unit_test(test_step_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
