/* The HTTP layer (src/http) without a daemon: the API's routes table
 * (matching, parameters, 404/405), auth decisions for every role on every
 * route, the tokens file, JSON validation errors that name the field, the
 * body limit (in the router and over a real socket through libmicrohttpd),
 * the Prometheus exposition, and the small GET client. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "http/auth.h"
#include "http/codec.h"
#include "http/get.h"
#include "http/prom.h"
#include "http/router.h"
#include "http/server.h"
#include "http/status.h"

/* ---------------------------------------------------------------- routes */

static int match(const char *method, const char *path, const char **pattern, char *p0, int *why,
                 char *allow)
{
    size_t n;
    const tide_route_t *r = tide_daemon_routes(&n);
    char buf[512];
    const char *params[TIDE_HTTP_MAX_PARAMS];
    size_t np;
    int i = tide_route_match(r, n, method, path, buf, sizeof buf, params, &np, why, allow, 64);
    if (i >= 0) {
        *pattern = r[i].pattern;
        snprintf(p0, 128, "%s", np ? params[0] : "");
    }
    return i;
}

static void test_route_table(void **state)
{
    (void)state;
    static const struct {
        const char *method, *path, *pattern, *param;
        int why;
    } cases[] = {
        {"GET", "/healthz", "/healthz", "", 0},
        {"GET", "/metrics", "/metrics", "", 0},
        {"GET", "/v1/jobs", "/v1/jobs", "", 0},
        {"POST", "/v1/jobs", "/v1/jobs", "", 0},
        {"GET", "/v1/jobs/abc", "/v1/jobs/{id}", "abc", 0},
        {"GET", "/v1/jobs/a%2Fb%20c", "/v1/jobs/{id}", "a/b c", 0},
        {"POST", "/v1/jobs/j-1/cancel", "/v1/jobs/{id}/cancel", "j-1", 0},
        {"POST", "/v1/jobs/j/checkpoints", "/v1/jobs/{id}/checkpoints", "j", 0},
        {"GET", "/v1/jobs/j/notice", "/v1/jobs/{id}/notice", "j", 0},
        {"POST", "/v1/jobs/j/notice/ack", "/v1/jobs/{id}/notice/ack", "j", 0},
        {"PATCH", "/v1/services/chat", "/v1/services/{name}", "chat", 0},
        {"POST", "/v1/services/chat/demand", "/v1/services/{name}/demand", "chat", 0},
        {"POST", "/v1/nodes/3/state", "/v1/nodes/{n}/state", "3", 0},
        {"POST", "/v1/admin/reload", "/v1/admin/reload", "", 0},
        {"DELETE", "/v1/jobs", NULL, NULL, 405},
        {"PUT", "/v1/jobs/x", NULL, NULL, 405},
        {"GET", "/v1/jobs/", NULL, NULL, 404},
        {"GET", "/v1", NULL, NULL, 404},
        {"GET", "//v1/jobs", NULL, NULL, 404},
        {"GET", "/v1/jobs/x/y", NULL, NULL, 404},
        {"GET", "/v1/jobs/a%2", NULL, NULL, 404},    /* bad escape */
        {"GET", "/v1/jobs/a%00b", NULL, NULL, 404},  /* encoded NUL */
        {"GET", "/v1/jobs/%zz", NULL, NULL, 404},
        {"GET", "", NULL, NULL, 404},
        {"GET", "v1/jobs", NULL, NULL, 404},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *pattern = NULL;
        char p0[128] = "", allow[64] = "";
        int why = 0;
        int r = match(cases[i].method, cases[i].path, &pattern, p0, &why, allow);
        if (cases[i].pattern) {
            if (r < 0)
                fail_msg("%s %s: no match (%d)", cases[i].method, cases[i].path, why);
            assert_string_equal(pattern, cases[i].pattern);
            assert_string_equal(p0, cases[i].param);
        } else {
            if (r >= 0)
                fail_msg("%s %s matched %s", cases[i].method, cases[i].path, pattern);
            assert_int_equal(why, cases[i].why);
            if (why == 405)
                assert_true(strstr(allow, "GET") != NULL);
        }
    }
    /* every route matches a path made from its own pattern */
    size_t n;
    const tide_route_t *r = tide_daemon_routes(&n);
    assert_true(n >= 20);
    for (size_t i = 0; i < n; i++) {
        char path[256] = "";
        const char *p = r[i].pattern;
        while (*p) {
            if (*p == '{') {
                strcat(path, "x1");
                p = strchr(p, '}') + 1;
            } else {
                strncat(path, p, 1);
                p++;
            }
        }
        const char *pattern;
        char p0[128], allow[64];
        int why;
        int k = match(r[i].method, path, &pattern, p0, &why, allow);
        assert_int_equal(k, (int)i);
        /* no two rows share a method and a pattern */
        for (size_t j = 0; j < i; j++)
            assert_false(!strcmp(r[i].method, r[j].method) && !strcmp(r[i].pattern, r[j].pattern));
    }
}

static void test_unescape(void **state)
{
    (void)state;
    char b[16];
    assert_int_equal(tide_http_unescape("a%20b+c", 7, b, sizeof b, 1), 5);
    assert_string_equal(b, "a b c");
    assert_int_equal(tide_http_unescape("a+b", 3, b, sizeof b, 0), 3);
    assert_string_equal(b, "a+b");
    assert_int_equal(tide_http_unescape("%4", 2, b, sizeof b, 0), -1);
    assert_int_equal(tide_http_unescape("%4g", 3, b, sizeof b, 0), -1);
    assert_int_equal(tide_http_unescape("%00", 3, b, sizeof b, 0), -1);
    assert_int_equal(tide_http_unescape("0123456789abcdefgh", 18, b, sizeof b, 0), -1);
    assert_int_equal(tide_http_unescape("", 0, b, sizeof b, 0), 0);
}

/* ------------------------------------------------------------------ auth */

static const char tokens[] = "# tokens\n"
                             "a1 ops admin\n"
                             "s1\tresearch\tsubmitter   # a comment\n"
                             "\n"
                             "v1 research viewer\n"
                             "r1 edge router\n";

static void test_role_matrix(void **state)
{
    (void)state;
    /* have x need */
    static const int want[TIDE_ROLE_COUNT][TIDE_ROLE_COUNT] = {
        /*            public viewer submitter admin router */
        [TIDE_ROLE_PUBLIC] = {1, 0, 0, 0, 0},
        [TIDE_ROLE_VIEWER] = {1, 1, 0, 0, 0},
        [TIDE_ROLE_SUBMITTER] = {1, 1, 1, 0, 0},
        [TIDE_ROLE_ADMIN] = {1, 1, 1, 1, 1},
        [TIDE_ROLE_ROUTER] = {1, 0, 0, 0, 1},
    };
    for (int h = 0; h < TIDE_ROLE_COUNT; h++)
        for (int n = 0; n < TIDE_ROLE_COUNT; n++)
            assert_int_equal(tide_role_allows(h, n), want[h][n]);
    assert_int_equal(tide_role_allows(-1, 0), 0);
    assert_int_equal(tide_role_find("admin"), TIDE_ROLE_ADMIN);
    assert_int_equal(tide_role_find("root"), -1);
}

static void test_auth_check(void **state)
{
    (void)state;
    tide_auth_t *a = tide_auth_create();
    tide_auth_set_min_len(a, 1); /* short readable tokens */
    tide_error_t err = {0};
    tide_principal_t who;
    /* open mode: everyone is the admin of team default */
    assert_true(tide_auth_is_open(a));
    assert_int_equal(tide_auth_check(a, NULL, TIDE_ROLE_ADMIN, &who, &err), 0);
    assert_string_equal(who.team, "default");
    assert_int_equal(who.role, TIDE_ROLE_ADMIN);

    assert_int_equal(tide_auth_load_mem(a, tokens, strlen(tokens), "tokens", &err), 4);
    assert_false(tide_auth_is_open(a));
    assert_int_equal(tide_auth_check(a, NULL, TIDE_ROLE_VIEWER, &who, &err), 401);
    assert_int_equal(tide_auth_check(a, "Basic YTE=", TIDE_ROLE_VIEWER, &who, &err), 401);
    assert_int_equal(tide_auth_check(a, "Bearer nope", TIDE_ROLE_VIEWER, &who, &err), 401);
    assert_int_equal(tide_auth_check(a, "Bearer a", TIDE_ROLE_VIEWER, &who, &err), 401);
    assert_int_equal(tide_auth_check(a, "Bearer a1x", TIDE_ROLE_VIEWER, &who, &err), 401);
    assert_int_equal(tide_auth_check(a, "Bearer ", TIDE_ROLE_VIEWER, &who, &err), 401);
    assert_int_equal(tide_auth_check(a, NULL, TIDE_ROLE_PUBLIC, &who, &err), 0);
    assert_int_equal(tide_auth_check(a, "bearer s1", TIDE_ROLE_SUBMITTER, &who, &err), 0);
    assert_string_equal(who.team, "research");
    assert_int_equal(who.role, TIDE_ROLE_SUBMITTER);
    static const struct {
        const char *tok;
        int need, status;
    } cases[] = {
        {"a1", TIDE_ROLE_ADMIN, 0},      {"a1", TIDE_ROLE_ROUTER, 0},
        {"a1", TIDE_ROLE_VIEWER, 0},     {"s1", TIDE_ROLE_ADMIN, 403},
        {"s1", TIDE_ROLE_SUBMITTER, 0},  {"s1", TIDE_ROLE_VIEWER, 0},
        {"s1", TIDE_ROLE_ROUTER, 403},   {"v1", TIDE_ROLE_VIEWER, 0},
        {"v1", TIDE_ROLE_SUBMITTER, 403}, {"v1", TIDE_ROLE_ADMIN, 403},
        {"r1", TIDE_ROLE_ROUTER, 0},     {"r1", TIDE_ROLE_VIEWER, 403},
        {"r1", TIDE_ROLE_SUBMITTER, 403},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char h[64];
        snprintf(h, sizeof h, "Bearer %s", cases[i].tok);
        int st = tide_auth_check(a, h, cases[i].need, &who, &err);
        if (st != cases[i].status)
            fail_msg("token %s need %s: %d, want %d", cases[i].tok,
                     tide_role_name(cases[i].need), st, cases[i].status);
    }
    /* a bad reload keeps the old tokens */
    static const char *const bad[] = {
        "x y\n", "x y z w\n", "x team god\n", "a b admin\na c viewer\n", "# nothing\n\n", "",
        "x t public\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.msg[0] = '\0';
        assert_int_equal(tide_auth_load_mem(a, bad[i], strlen(bad[i]), "t", &err), -1);
        assert_int_equal(err.code, TIDE_EINVAL);
        assert_true(strlen(err.msg) > 0);
    }
    assert_int_equal(tide_auth_check(a, "Bearer a1", TIDE_ROLE_ADMIN, &who, &err), 0);
    assert_int_equal(tide_auth_load(a, "/nonexistent/tokens", &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
    tide_auth_destroy(a);
}

/* A router over the daemon's table whose handlers only say 200: the auth
 * decision for every role on every route. */
static void stub(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    (void)app;
    json_t *o = json_object();
    json_object_set_new(o, "route", json_string(req->route->pattern));
    json_object_set_new(o, "team", json_string(req->who.team));
    json_object_set_new(o, "p0", json_string(req->n_params ? req->params[0] : ""));
    char b[64];
    const char *q = tide_http_query(req, "q", b, sizeof b);
    json_object_set_new(o, "q", q ? json_string(q) : json_null());
    json_object_set_new(o, "len", json_integer((json_int_t)req->body_len));
    tide_http_reply_json(rep, 200, o);
}

static void count_all(void *ctx, const char *route, int status, unsigned long n)
{
    (void)route;
    (void)status;
    *(unsigned long *)ctx += n;
}

static void test_route_roles(void **state)
{
    (void)state;
    size_t n;
    const tide_route_t *r = tide_daemon_routes(&n);
    tide_route_t *copy = calloc(n, sizeof *copy);
    for (size_t i = 0; i < n; i++) {
        copy[i] = r[i];
        copy[i].fn = stub;
    }
    tide_auth_t *a = tide_auth_create();
    tide_auth_set_min_len(a, 1); /* short readable tokens */
    tide_error_t err = {0};
    assert_int_equal(tide_auth_load_mem(a, tokens, strlen(tokens), "tokens", &err), 4);
    tide_router_t *rt = tide_router_create(copy, n, a, NULL);
    static const struct {
        const char *tok;
        int role;
    } who[] = {{NULL, TIDE_ROLE_PUBLIC},        {"a1", TIDE_ROLE_ADMIN},
               {"s1", TIDE_ROLE_SUBMITTER},     {"v1", TIDE_ROLE_VIEWER},
               {"r1", TIDE_ROLE_ROUTER},        {"bogus", -1}};
    int writes_open = 0;
    for (size_t i = 0; i < n; i++) {
        char path[256] = "";
        for (const char *p = r[i].pattern; *p;) {
            if (*p == '{') {
                strcat(path, "x");
                p = strchr(p, '}') + 1;
            } else {
                strncat(path, p, 1);
                p++;
            }
        }
        for (size_t k = 0; k < sizeof who / sizeof who[0]; k++) {
            char h[64];
            snprintf(h, sizeof h, "Bearer %s", who[k].tok ? who[k].tok : "");
            tide_http_input_t in = {.method = r[i].method, .path = path,
                                    .authorization = who[k].tok ? h : NULL};
            tide_http_reply_t rep;
            tide_router_handle(rt, &in, &rep);
            int want;
            if (r[i].role == TIDE_ROLE_PUBLIC)
                want = 200;
            else if (who[k].role <= TIDE_ROLE_PUBLIC)
                want = 401;
            else
                want = tide_role_allows(who[k].role, r[i].role) ? 200 : 403;
            if (rep.status != want)
                fail_msg("%s %s as %s: %d, want %d", r[i].method, r[i].pattern,
                         who[k].tok ? who[k].tok : "(none)", rep.status, want);
            if (strcmp(r[i].method, "GET") && rep.status == 200 && !who[k].tok)
                writes_open++;
            tide_http_reply_free(&rep);
        }
    }
    assert_int_equal(writes_open, 0); /* no write route answers without a token */
    /* 413 before the handler, whatever the route */
    tide_http_input_t in = {.method = "POST", .path = "/v1/jobs", .authorization = "Bearer s1",
                            .body_too_large = 1};
    tide_http_reply_t rep;
    tide_router_handle(rt, &in, &rep);
    assert_int_equal(rep.status, 413);
    assert_non_null(strstr(rep.body, "E2BIG"));
    tide_http_reply_free(&rep);
    /* every request was counted under its route and status */
    unsigned long total = 0;
    tide_router_counts(rt, count_all, &total);
    assert_int_equal(total, n * (sizeof who / sizeof who[0]) + 1);
    tide_router_destroy(rt);
    tide_auth_destroy(a);
    free(copy);
}

/* -------------------------------------------------------------- bodies */

static void test_job_validation(void **state)
{
    (void)state;
    tide_error_t err = {0};
    tide_cluster_t *c = tide_cluster_parse("4x8:H100,2x8:A100", &err);
    assert_non_null(c);
    static const struct {
        const char *body, *want; /* want NULL = valid */
    } cases[] = {
        {"{\"gpus\": 8, \"duration_s\": 60}", NULL},
        {"{\"job_id\": \"j\", \"team\": \"t\", \"priority\": \"P1\", \"gpus\": 16, \"gang_gpus\": 8, "
         "\"dp_min\": 1, \"duration_s\": 3600.4, \"ckpt_interval_s\": 900, \"ckpt_s\": 30, "
         "\"restore_s\": 45, \"gpu_types\": \"H100|A100\", \"submit_s\": 5, \"command\": \"run\", "
         "\"env\": {\"A\": \"1\"}}",
         NULL},
        {"", "empty body"},
        {"[1,2]", "JSON object"},
        {"{\"gpus\": 8, \"duration_s\": 60", "malformed JSON"},
        {"{\"gpus\": 8, \"gpus\": 8, \"duration_s\": 60}", "malformed JSON"},
        {"{\"gpus\": 8, \"duration_s\": 60, \"gpu\": 1}", "unknown field 'gpu'"},
        {"{\"duration_s\": 60}", "gpus:"},
        {"{\"gpus\": 8}", "duration_s:"},
        {"{\"gpus\": \"8\", \"duration_s\": 60}", "gpus: expected a whole number"},
        {"{\"gpus\": 8.0, \"duration_s\": 60}", "gpus: expected a whole number"},
        {"{\"gpus\": 0, \"duration_s\": 60}", "gpus:"},
        {"{\"gpus\": -3, \"duration_s\": 60}", "gpus:"},
        {"{\"gpus\": 99999999999, \"duration_s\": 60}", "gpus:"},
        {"{\"gpus\": 8, \"duration_s\": 0}", "duration_s:"},
        {"{\"gpus\": 8, \"duration_s\": \"1h\"}", "duration_s:"},
        {"{\"gpus\": 8, \"duration_s\": 1e300}", "duration_s:"},
        {"{\"gpus\": 8, \"gang_gpus\": 3, \"duration_s\": 60}", "gang_gpus:"},
        {"{\"gpus\": 8, \"dp_min\": 2, \"duration_s\": 60}", "dp_min:"},
        {"{\"gpus\": 8, \"priority\": 0, \"duration_s\": 60}", "priority:"},
        {"{\"gpus\": 8, \"priority\": \"P7\", \"duration_s\": 60}", "priority:"},
        {"{\"gpus\": 8, \"priority\": true, \"duration_s\": 60}", "priority:"},
        {"{\"gpus\": 8, \"duration_s\": 60, \"job_id\": \"\"}", "job_id:"},
        {"{\"gpus\": 8, \"duration_s\": 60, \"job_id\": 7}", "job_id:"},
        {"{\"gpus\": 8, \"duration_s\": 60, \"job_id\": \"a\\nb\"}", "job_id:"},
        {"{\"gpus\": 8, \"duration_s\": 60, \"team\": null}", "team:"},
        {"{\"gpus\": 8, \"duration_s\": 60, \"gpu_types\": \"B200\"}", "gpu_types:"},
        {"{\"gpus\": 8, \"duration_s\": 60, \"gpu_types\": 3}", "gpu_types:"},
        {"{\"gpus\": 8, \"duration_s\": 60, \"ckpt_interval_s\": 0}", "ckpt_interval_s:"},
        {"{\"gpus\": 8, \"duration_s\": 60, \"ckpt_s\": -1}", "ckpt_s:"},
        {"{\"gpus\": 8, \"duration_s\": 60, \"env\": [1]}", "env:"},
        {"{\"gpus\": 8, \"duration_s\": 60, \"env\": {\"A\": 1}}", "env.A:"},
        {"{\"gpus\": 8, \"duration_s\": 60, \"env\": {\"A=B\": \"1\"}}", "env:"},
        {"{\"gpus\": 8, \"duration_s\": 60, \"command\": 5}", "command:"},
        {"{\"gpus\": 8, \"duration_s\": 60, \"x\": \"\\u0000\"}", "malformed JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tide_job_request_t r;
        err = (tide_error_t){0};
        int rc = tide_json_job_request(cases[i].body, strlen(cases[i].body), c, &r, &err);
        if (!cases[i].want) {
            if (rc != 0)
                fail_msg("case %zu should pass: %s", i, err.msg);
            tide_job_request_free(&r);
            continue;
        }
        if (rc == 0)
            fail_msg("case %zu should fail (%s)", i, cases[i].want);
        assert_int_equal(err.code, TIDE_EINVAL);
        if (!strstr(err.msg, cases[i].want))
            fail_msg("case %zu: '%s' does not name '%s'", i, err.msg, cases[i].want);
    }
    /* defaults as in jobs.csv */
    tide_job_request_t r;
    const char *b = "{\"gpus\": 24, \"duration_s\": 60}";
    assert_int_equal(tide_json_job_request(b, strlen(b), c, &r, &err), 0);
    assert_int_equal(r.spec.gang_gpus, 8);
    assert_int_equal(r.spec.dp_min, 3);
    assert_int_equal(r.spec.priority, 2);
    assert_int_equal(r.spec.ckpt_interval_s, 1800);
    assert_null(r.id);
    assert_null(r.team);
    /* fits: 24 GPUs as 3 gangs of 8 on 48 GPUs */
    assert_int_equal(tide_job_spec_fits(&r.spec, c, &err), 0);
    tide_job_request_free(&r);
    /* impossible gangs */
    static const char *const never[] = {
        "{\"gpus\": 12, \"gang_gpus\": 12, \"duration_s\": 60}", /* 8-GPU domains */
        "{\"gpus\": 64, \"gang_gpus\": 8, \"dp_min\": 8, \"duration_s\": 60}", /* > 48 GPUs */
        "{\"gpus\": 24, \"gang_gpus\": 8, \"dp_min\": 3, \"gpu_types\": \"A100\", \"duration_s\": 60}",
    };
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++) {
        assert_int_equal(tide_json_job_request(never[i], strlen(never[i]), c, &r, &err), 0);
        assert_int_equal(tide_job_spec_fits(&r.spec, c, &err), -1);
        assert_true(strstr(err.msg, "gang_gpus:") || strstr(err.msg, "dp_min:"));
        tide_job_request_free(&r);
    }
    tide_cluster_destroy(c);
}

static void test_other_bodies(void **state)
{
    (void)state;
    tide_error_t err = {0};
    tide_cluster_t *c = tide_cluster_parse("4x8", &err);
    tide_service_request_t s;
    const char *ok = "{\"service\": \"chat\", \"gpus_per_replica\": 8, \"replica_rps\": 10, "
                     "\"min_replicas\": 1, \"warmup_s\": 120, \"max_replicas\": 4}";
    assert_int_equal(tide_json_service_request(ok, strlen(ok), c, &s, &err), 0);
    assert_string_equal(s.spec.name, "chat");
    assert_int_equal(s.spec.stage_s, 0); /* absent: no staging */
    tide_service_request_free(&s);
    const char *st = "{\"service\": \"chat\", \"gpus_per_replica\": 8, \"replica_rps\": 10, "
                     "\"min_replicas\": 1, \"warmup_s\": 120, \"stage_s\": 90}";
    assert_int_equal(tide_json_service_request(st, strlen(st), c, &s, &err), 0);
    assert_int_equal(s.spec.stage_s, 90);
    tide_service_request_free(&s);
    static const struct {
        const char *body, *want;
    } svc[] = {
        {"{\"gpus_per_replica\": 8, \"replica_rps\": 1, \"min_replicas\": 0, \"warmup_s\": 1}", "service:"},
        {"{\"name\": \"a\", \"service\": \"b\"}", "name:"},
        {"{\"name\": \"a\", \"gpus_per_replica\": 16, \"replica_rps\": 1, \"min_replicas\": 0, \"warmup_s\": 1}",
         "gpus_per_replica:"},
        {"{\"name\": \"a\", \"gpus_per_replica\": 8, \"replica_rps\": 0, \"min_replicas\": 0, \"warmup_s\": 1}",
         "replica_rps:"},
        {"{\"name\": \"a\", \"gpus_per_replica\": 8, \"replica_rps\": 1, \"min_replicas\": 3, "
         "\"warmup_s\": 1, \"max_replicas\": 2}",
         "max_replicas:"},
        {"{\"name\": \"a\", \"gpus_per_replica\": 8, \"replica_rps\": 1, \"min_replicas\": 0}", "warmup_s:"},
        {"{\"name\": \"a\", \"rps\": 1}", "unknown field 'rps'"},
        {"{\"name\": \"a\", \"gpus_per_replica\": 8, \"replica_rps\": 1, \"min_replicas\": 0, "
         "\"warmup_s\": 60, \"stage_s\": 61}",
         "stage_s: 61 is above warmup_s (60)"},
    };
    for (size_t i = 0; i < sizeof svc / sizeof svc[0]; i++) {
        assert_int_equal(tide_json_service_request(svc[i].body, strlen(svc[i].body), c, &s, &err), -1);
        if (!strstr(err.msg, svc[i].want))
            fail_msg("service case %zu: '%s' does not name '%s'", i, err.msg, svc[i].want);
    }
    double rps;
    assert_int_equal(tide_json_demand("{\"rps\": 12.5}", 13, &rps, &err), 0);
    assert_true(rps == 12.5);
    assert_int_equal(tide_json_demand("{\"rps\": -1}", 11, &rps, &err), -1);
    assert_non_null(strstr(err.msg, "rps:"));
    assert_int_equal(tide_json_demand("{}", 2, &rps, &err), -1);
    assert_non_null(strstr(err.msg, "rps:"));
    tide_ckpt_request_t ck;
    const char *cb = "{\"step\": 1200, \"bytes\": 123456789, \"shards\": 64, \"committed\": true, "
                     "\"progress_s\": 3600}";
    assert_int_equal(tide_json_ckpt(cb, strlen(cb), &ck, &err), 0);
    assert_true(ck.committed && ck.step == 1200 && ck.progress_s == 3600);
    assert_int_equal(tide_json_ckpt("{\"committed\": 1}", 16, &ck, &err), -1);
    assert_non_null(strstr(err.msg, "committed:"));
    assert_int_equal(tide_json_ckpt("{}", 2, &ck, &err), 0);
    assert_false(ck.committed);
    int up;
    assert_int_equal(tide_json_node_state("{\"up\": false}", 13, &up, &err), 0);
    assert_int_equal(up, 0);
    assert_int_equal(tide_json_node_state("{\"up\": \"no\"}", 12, &up, &err), -1);
    assert_non_null(strstr(err.msg, "up:"));
    int mn, hmn, mx, hmx;
    assert_int_equal(tide_json_service_patch("{\"min_replicas\": 2}", 19, &mn, &hmn, &mx, &hmx, &err), 0);
    assert_true(hmn && !hmx && mn == 2);
    assert_int_equal(tide_json_service_patch("{\"warmup_s\": 2}", 15, &mn, &hmn, &mx, &hmx, &err), -1);
    assert_non_null(strstr(err.msg, "warmup_s"));
    /* team records round-trip */
    tide_team_spec_t t;
    tide_team_spec_default(&t);
    t.name = "research";
    t.weight = 2.5;
    t.quota[0] = 16;
    char *js = tide_json_team_to_string(&t, 1);
    tide_team_spec_t u;
    char *name = NULL;
    assert_int_equal(tide_json_team_from_string(js, &u, &name, &err), 0);
    assert_string_equal(u.name, "research");
    assert_true(u.weight == 2.5 && u.quota[0] == 16 && u.borrow_limit == t.borrow_limit);
    free(name);
    free(js);
    tide_cluster_destroy(c);
}

/* ----------------------------------------------------------- prometheus */

static void test_prom(void **state)
{
    (void)state;
    tide_prom_t p;
    tide_prom_init(&p);
    tide_prom_family(&p, "x_total", "counter", "help with \\ and\nnewline");
    const char *l[] = {"route", "a\"b\\c\nd"};
    tide_prom_sample(&p, "x_total", l, 1, 3);
    double bounds[] = {1, 10};
    double obs[] = {0.5, 2, 20, 10};
    tide_prom_family(&p, "h_seconds", "histogram", "h");
    tide_prom_histogram(&p, "h_seconds", NULL, 0, bounds, 2, obs, 4);
    assert_non_null(strstr(p.buf, "# HELP x_total help with \\\\ and\\nnewline\n"));
    assert_non_null(strstr(p.buf, "x_total{route=\"a\\\"b\\\\c\\nd\"} 3\n"));
    assert_non_null(strstr(p.buf, "h_seconds_bucket{le=\"1\"} 1\n"));
    assert_non_null(strstr(p.buf, "h_seconds_bucket{le=\"10\"} 3\n"));
    assert_non_null(strstr(p.buf, "h_seconds_bucket{le=\"+Inf\"} 4\n"));
    assert_non_null(strstr(p.buf, "h_seconds_sum 32.5\n"));
    assert_non_null(strstr(p.buf, "h_seconds_count 4\n"));
    tide_prom_free(&p);
}

/* ------------------------------------------------- the network, for real */

/* Send raw bytes to 127.0.0.1:port and read the status code of the answer. */
static int raw_status(int port, const char *head, size_t body_len, char fill)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    if (write(fd, head, strlen(head)) < 0) {
        close(fd);
        return -1;
    }
    char chunk[65536];
    memset(chunk, fill, sizeof chunk);
    size_t sent = 0;
    while (sent < body_len) {
        size_t k = body_len - sent < sizeof chunk ? body_len - sent : sizeof chunk;
        ssize_t w = send(fd, chunk, k, MSG_NOSIGNAL);
        if (w <= 0)
            break; /* the server may answer early and close */
        sent += (size_t)w;
    }
    char resp[4096];
    size_t n = 0;
    ssize_t r;
    while (n + 1 < sizeof resp && (r = read(fd, resp + n, sizeof resp - 1 - n)) > 0)
        n += (size_t)r;
    resp[n] = '\0';
    close(fd);
    int st = -1;
    if (sscanf(resp, "HTTP/1.%*d %d", &st) != 1)
        return -1;
    return st;
}

static void prom_stub(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    (void)app;
    (void)req;
    const char *body = "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
                       "{\"metric\":{},\"value\":[1700000000.5,\"40\"]},"
                       "{\"metric\":{\"a\":\"b\"},\"value\":[1700000001,\"2.5\"]}]}}";
    tide_http_reply_text(rep, 200, "application/json", body, strlen(body));
}

static void test_server(void **state)
{
    (void)state;
    static const tide_route_t routes[] = {
        {"POST", "/v1/jobs", TIDE_ROLE_PUBLIC, stub, NULL},
        {"GET", "/v1/jobs/{id}", TIDE_ROLE_PUBLIC, stub, NULL},
        {"GET", "/api/v1/query", TIDE_ROLE_PUBLIC, prom_stub, NULL},
    };
    tide_auth_t *a = tide_auth_create();
    tide_router_t *rt = tide_router_create(routes, 3, a, NULL);
    tide_error_t err = {0};
    tide_http_server_t *s = tide_http_server_start("127.0.0.1:0", rt, &err);
    if (!s)
        fail_msg("server: %s", err.msg);
    int port = tide_http_server_port(s);
    assert_true(port > 0);
    char head[256];
    /* over the limit by its Content-Length */
    snprintf(head, sizeof head,
             "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: %u\r\nConnection: close\r\n\r\n",
             TIDE_HTTP_MAX_BODY + 1);
    assert_int_equal(raw_status(port, head, TIDE_HTTP_MAX_BODY + 1, 'a'), 413);
    /* over the limit, chunked (no length known in advance) */
    snprintf(head, sizeof head,
             "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: "
             "close\r\n\r\n");
    {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
        assert_true(write(fd, head, strlen(head)) > 0);
        char chunk[70000];
        int hl = snprintf(chunk, sizeof chunk, "%x\r\n", 65536);
        memset(chunk + hl, 'b', 65536);
        memcpy(chunk + hl + 65536, "\r\n", 2);
        for (int i = 0; i < 20; i++)
            if (send(fd, chunk, (size_t)hl + 65538, MSG_NOSIGNAL) <= 0)
                break;
        if (send(fd, "0\r\n\r\n", 5, MSG_NOSIGNAL) < 0) {
            /* answered early */
        }
        char resp[1024];
        ssize_t r = read(fd, resp, sizeof resp - 1);
        close(fd);
        assert_true(r > 0);
        resp[r] = '\0';
        assert_non_null(strstr(resp, " 413 "));
    }
    /* at the limit is fine */
    snprintf(head, sizeof head,
             "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: %u\r\nConnection: close\r\n\r\n",
             TIDE_HTTP_MAX_BODY);
    assert_int_equal(raw_status(port, head, TIDE_HTTP_MAX_BODY, 'c'), 200);
    /* path parameters and query arguments survive libmicrohttpd raw */
    char *body = NULL;
    size_t len;
    int status;
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/jobs/a%%2Fb?q=x%%20y", port);
    assert_int_equal(tide_http_get(url, 2000, 1 << 20, &body, &len, &status, &err), 0);
    assert_int_equal(status, 200);
    assert_non_null(strstr(body, "\"p0\":\"a/b\""));
    assert_non_null(strstr(body, "\"q\":\"x y\""));
    free(body);
    /* the pull client against a Prometheus-shaped answer */
    snprintf(url, sizeof url, "http://127.0.0.1:%d/api/v1/query?query=sum(rate(x[1m]))", port);
    assert_int_equal(tide_http_get(url, 2000, 1 << 20, &body, &len, &status, &err), 0);
    double v, ts;
    assert_int_equal(tide_prom_query_value(body, len, &v, &ts, &err), 0);
    assert_true(v == 42.5);
    assert_true(ts == 1700000001);
    free(body);
    /* nobody listening */
    tide_http_server_stop(s);
    assert_int_equal(tide_http_get(url, 500, 1 << 20, &body, &len, &status, &err), -1);
    assert_int_equal(err.code, TIDE_EIO);
    tide_router_destroy(rt);
    tide_auth_destroy(a);
}

static void test_get_parsing(void **state)
{
    (void)state;
    char h[64], p[8], path[256];
    tide_error_t err = {0};
    assert_int_equal(tide_http_url_parse("http://127.0.0.1:9090/api/v1/query?query=up", h, sizeof h, p,
                                         sizeof p, path, sizeof path, &err),
                     0);
    assert_string_equal(h, "127.0.0.1");
    assert_string_equal(p, "9090");
    assert_string_equal(path, "/api/v1/query?query=up");
    assert_int_equal(tide_http_url_parse("http://[::1]/x", h, sizeof h, p, sizeof p, path,
                                         sizeof path, &err),
                     0);
    assert_string_equal(h, "::1");
    assert_string_equal(p, "80");
    static const char *const bad[] = {"https://a/", "http://", "http://a:99999/", "http://a:x/",
                                      "ftp://a", "http://u@a/", "http://a/b c"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(tide_http_url_parse(bad[i], h, sizeof h, p, sizeof p, path, sizeof path,
                                             &err),
                         -1);
    double v, ts;
    const char *scalar = "{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[1,\"7\"]}}";
    assert_int_equal(tide_prom_query_value(scalar, strlen(scalar), &v, &ts, &err), 0);
    assert_true(v == 7);
    const char *empty = "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}";
    assert_int_equal(tide_prom_query_value(empty, strlen(empty), &v, &ts, &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
    const char *nan = "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"value\":[1,\"NaN\"]}]}}";
    assert_int_equal(tide_prom_query_value(nan, strlen(nan), &v, &ts, &err), -1);
    const char *e = "{\"status\":\"error\",\"error\":\"bad query\"}";
    assert_int_equal(tide_prom_query_value(e, strlen(e), &v, &ts, &err), -1);
    assert_non_null(strstr(err.msg, "bad query"));
    char lh[64], lp[8];
    assert_int_equal(tide_http_listen_parse("127.0.0.1:0", lh, sizeof lh, lp, sizeof lp, &err), 0);
    assert_string_equal(lp, "0");
    assert_int_equal(tide_http_listen_parse("7070", lh, sizeof lh, lp, sizeof lp, &err), 0);
    assert_string_equal(lh, "127.0.0.1");
    assert_int_equal(tide_http_listen_parse("[::1]:80", lh, sizeof lh, lp, sizeof lp, &err), 0);
    assert_string_equal(lh, "::1");
    assert_int_equal(tide_http_listen_parse("x:99999", lh, sizeof lh, lp, sizeof lp, &err), -1);
}

/* A DCGM-style vector: each series with the labels asked for, values as
 * given (NaN kept for the caller to refuse), an empty vector is no error. */
static void test_prom_series(void **state)
{
    (void)state;
    tide_error_t err = {0};
    const char *labels[] = {"Hostname", "gpu"};
    const char *body =
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
        "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_POWER_USAGE\",\"Hostname\":\"n0\",\"gpu\":\"3\"},"
        "\"value\":[1700000000.5,\"612.25\"]},"
        "{\"metric\":{\"gpu\":\"1\"},\"value\":[1700000000.5,\"NaN\"]}]}}";
    tide_prom_series_t *v = NULL;
    size_t n = 0;
    assert_int_equal(tide_prom_query_series(body, strlen(body), labels, 2, &v, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(v[0].label[0], "n0");
    assert_string_equal(v[0].label[1], "3");
    assert_true(v[0].value == 612.25 && v[0].ts == 1700000000.5);
    assert_null(v[1].label[0]);
    assert_true(v[1].value != v[1].value); /* NaN */
    tide_prom_series_free(v, n);
    const char *empty = "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}";
    assert_int_equal(tide_prom_query_series(empty, strlen(empty), labels, 2, &v, &n, &err), 0);
    assert_int_equal(n, 0);
    tide_prom_series_free(v, n);
    const char *scalar = "{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[1,\"7\"]}}";
    assert_int_equal(tide_prom_query_series(scalar, strlen(scalar), labels, 2, &v, &n, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    const char *e = "{\"status\":\"error\",\"error\":\"bad query\"}";
    assert_int_equal(tide_prom_query_series(e, strlen(e), labels, 2, &v, &n, &err), -1);
    assert_int_equal(err.code, TIDE_EIO);
    const char *bad = "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"value\":7}]}}";
    assert_int_equal(tide_prom_query_series(bad, strlen(bad), labels, 2, &v, &n, &err), -1);
    assert_null(v);
    assert_int_equal(tide_prom_query_series("nope", 4, labels, 2, &v, &n, &err), -1);
}

/* Prometheus range queries: the URL made from an instant query URL, and the
 * matrix parsed (series summed per time, NaN skipped, errors named). */
static void test_prom_range(void **state)
{
    (void)state;
    tide_error_t err = {0};
    char u[512];
    assert_int_equal(tide_prom_range_url("http://p:9090/api/v1/query?query=sum(x)&time=5", 100, 700,
                                         60, u, sizeof u, &err),
                     0);
    assert_string_equal(u, "http://p:9090/api/v1/query_range?query=sum(x)&start=100.000"
                           "&end=700.000&step=60.000");
    assert_int_equal(tide_prom_range_url("http://p/api/v1/query", 0, 1, 0.5, u, sizeof u, &err), 0);
    assert_string_equal(u, "http://p/api/v1/query_range?start=0.000&end=1.000&step=0.500");
    assert_int_equal(tide_prom_range_url("http://p/metrics?query=x", 0, 1, 1, u, sizeof u, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_int_equal(tide_prom_range_url("http://p/api/v1/query?query=x", 5, 1, 1, u, sizeof u, &err),
                     -1);
    assert_int_equal(tide_prom_range_url("http://p/api/v1/query?query=x", 0, 1, 1, u, 20, &err), -1);
    assert_int_equal(err.code, TIDE_ERANGE);

    const char *two = "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
                      "{\"metric\":{\"a\":\"1\"},\"values\":[[120,\"2\"],[60,\"1\"],[180,\"NaN\"]]},"
                      "{\"metric\":{\"a\":\"2\"},\"values\":[[60,\"10\"],[120,\"20\"],[180,\"30\"]]}]}}";
    double *ts = NULL, *v = NULL;
    size_t n = 0;
    assert_int_equal(tide_prom_range_values(two, strlen(two), &ts, &v, &n, &err), 0);
    assert_int_equal(n, 3);
    assert_true(ts[0] == 60 && v[0] == 11);
    assert_true(ts[1] == 120 && v[1] == 22);
    assert_true(ts[2] == 180 && v[2] == 30);
    free(ts);
    free(v);
    static const char *const bad[] = {
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"values\":[[1,\"-1\"]]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"values\":[[1,\"+Inf\"]]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"values\":[[1]]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":{}}]}}",
        "not json"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(tide_prom_range_values(bad[i], strlen(bad[i]), &ts, &v, &n, &err), -1);
        assert_int_equal(err.code, TIDE_EINVAL);
        assert_null(ts);
    }
    const char *none = "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
                       "{\"values\":[[1,\"NaN\"]]}]}}";
    assert_int_equal(tide_prom_range_values(none, strlen(none), &ts, &v, &n, &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
    const char *e = "{\"status\":\"error\",\"error\":\"too many points\"}";
    assert_int_equal(tide_prom_range_values(e, strlen(e), &ts, &v, &n, &err), -1);
    assert_int_equal(err.code, TIDE_EIO);
    assert_non_null(strstr(err.msg, "too many points"));
}

/* Error codes <-> names and HTTP statuses, both ways. */
static void test_status_table(void **state)
{
    (void)state;
    static const struct {
        int code;
        const char *name;
        int status;
    } t[] = {{TIDE_EINVAL, "EINVAL", 400}, {TIDE_ENOENT, "ENOENT", 404},
             {TIDE_EEXIST, "EEXIST", 409}, {TIDE_ENOMEM, "ENOMEM", 503},
             {TIDE_EIO, "EIO", 500},       {TIDE_ESTATE, "ESTATE", 409},
             {TIDE_ERANGE, "ERANGE", 400}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        assert_string_equal(tide_errcode_name(t[i].code), t[i].name);
        assert_int_equal(tide_errcode_find(t[i].name), t[i].code);
        assert_int_equal(tide_http_status(t[i].code), t[i].status);
    }
    assert_string_equal(tide_errcode_name(99), "EUNKNOWN");
    assert_int_equal(tide_errcode_find("EPERM"), -1);
    assert_int_equal(tide_errcode_find(NULL), -1);
    assert_int_equal(tide_http_status(99), 500);
    /* back: the first code with that status, else by class */
    assert_int_equal(tide_http_status_code(404), TIDE_ENOENT);
    assert_int_equal(tide_http_status_code(409), TIDE_EEXIST);
    assert_int_equal(tide_http_status_code(400), TIDE_EINVAL);
    assert_int_equal(tide_http_status_code(403), TIDE_EINVAL);
    assert_int_equal(tide_http_status_code(502), TIDE_EIO);
}

/* ------------------------------------------------------------ audit hook */

/* Every route that changes anything (not GET) names an audit kind, and no
 * GET does: a new write route cannot be left out of the audit trail. */
static void test_routes_audited(void **state)
{
    (void)state;
    size_t n;
    const tide_route_t *r = tide_daemon_routes(&n);
    int writes = 0;
    for (size_t i = 0; i < n; i++) {
        int is_write = strcmp(r[i].method, "GET") != 0;
        if (is_write != (r[i].audit != NULL))
            fail_msg("%s %s: audit kind %s", r[i].method, r[i].pattern,
                     r[i].audit ? r[i].audit : "(none)");
        for (size_t k = 0; is_write && k < i; k++)
            if (r[k].audit && !strcmp(r[k].audit, r[i].audit))
                fail_msg("audit kind %s given twice", r[i].audit);
        writes += is_write;
    }
    assert_true(writes >= 10);
}

typedef struct seen {
    int n, status;
    char team[160], role[16], peer[64], body[64], kind[32];
} seen_t;

static void audit_rec(void *app, const tide_http_req_t *req, const tide_http_reply_t *rep)
{
    seen_t *s = app;
    s->n++;
    s->status = rep->status;
    snprintf(s->team, sizeof s->team, "%s", req->who.authenticated ? req->who.team : "");
    snprintf(s->role, sizeof s->role, "%s",
             req->who.authenticated ? tide_role_name(req->who.role) : "none");
    snprintf(s->peer, sizeof s->peer, "%s", req->peer);
    snprintf(s->body, sizeof s->body, "%s", req->body);
    snprintf(s->kind, sizeof s->kind, "%s", req->route->audit);
}

static void ok_stub(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    (void)app;
    (void)req;
    tide_http_reply_error(rep, 409, "EEXIST", "taken");
}

/* The hook sees answered and refused requests to audited routes, and only those. */
static void test_audit_hook(void **state)
{
    (void)state;
    static const tide_route_t routes[] = {
        {"POST", "/w", TIDE_ROLE_SUBMITTER, ok_stub, "thing.write"},
        {"GET", "/r", TIDE_ROLE_VIEWER, ok_stub, NULL},
    };
    tide_auth_t *a = tide_auth_create();
    const char *toks = "viewer-token-0123456 red viewer\nsubmit-token-0123456 blue submitter\n";
    tide_error_t err = {0};
    if (tide_auth_load_mem(a, toks, strlen(toks), "t", &err) < 0)
        fail_msg("%s", err.msg);
    seen_t s = {0};
    tide_router_t *rt = tide_router_create(routes, 2, a, &s);
    tide_router_set_audit(rt, audit_rec);
    tide_http_reply_t rep;
    tide_http_input_t in = {.method = "POST", .path = "/w", .peer = "10.1.2.3",
                            .authorization = "Bearer submit-token-0123456", .body = "{\"a\":1}",
                            .body_len = 7};
    tide_router_handle(rt, &in, &rep);
    tide_http_reply_free(&rep);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.status, 409);
    assert_string_equal(s.team, "blue");
    assert_string_equal(s.role, "submitter");
    assert_string_equal(s.peer, "10.1.2.3");
    assert_string_equal(s.body, "{\"a\":1}");
    assert_string_equal(s.kind, "thing.write");
    in.authorization = "Bearer viewer-token-0123456"; /* refused: 403, still audited */
    tide_router_handle(rt, &in, &rep);
    tide_http_reply_free(&rep);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.status, 403);
    assert_string_equal(s.role, "viewer");
    in.authorization = NULL; /* no token: 401, audited with no team */
    tide_router_handle(rt, &in, &rep);
    tide_http_reply_free(&rep);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.status, 401);
    assert_string_equal(s.role, "none");
    assert_string_equal(s.team, "");
    in = (tide_http_input_t){.method = "GET", .path = "/r",
                             .authorization = "Bearer viewer-token-0123456"};
    tide_router_handle(rt, &in, &rep); /* a read: not audited */
    tide_http_reply_free(&rep);
    assert_int_equal(s.n, 3);
    tide_router_destroy(rt);
    tide_auth_destroy(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_route_table),   cmocka_unit_test(test_unescape),
        cmocka_unit_test(test_status_table),
        cmocka_unit_test(test_role_matrix),   cmocka_unit_test(test_auth_check),
        cmocka_unit_test(test_route_roles),   cmocka_unit_test(test_job_validation),
        cmocka_unit_test(test_other_bodies),  cmocka_unit_test(test_prom),
        cmocka_unit_test(test_server),        cmocka_unit_test(test_get_parsing),
        cmocka_unit_test(test_prom_range),    cmocka_unit_test(test_prom_series),
        cmocka_unit_test(test_routes_audited), cmocka_unit_test(test_audit_hook),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
