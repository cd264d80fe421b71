/* Shadow mode and rehearsals in the daemon (src/daemon/shadow.c) on the sim
 * backend with a manual clock: a shadow enacts nothing (the real backend's
 * counters stay 0) and its would-be lending equals what an enacting daemon
 * lends on the same inputs; the switch to enact (POST /v1/mode) and a
 * restart in enact mode keep the learned forecast exactly; rehearsals asked
 * over the API and on a schedule complete and are reported. */
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

#include "daemon/daemon.h"
#include "http/router.h"

typedef struct dx {
    char dir[64], db[128];
    double clock;
    tide_daemon_t *d;
    tide_router_t *rt;
} dx_t;

typedef struct fx {
    tide_cluster_t *cluster;
    tide_auth_t *auth;
    FILE *log;
    dx_t a, b;
} fx_t;

static double manual_clock(void *ctx) { return *(double *)ctx; }

static const tide_service_spec_t chat = {.name = "chat", .gpus_per_replica = 8,
                                         .replica_rps = 10, .min_replicas = 1,
                                         .max_replicas = 3, .warmup_s = 120};

static void dx_dir(dx_t *x)
{
    snprintf(x->dir, sizeof x->dir, "/tmp/tide-shadow-XXXXXX");
    assert_non_null(mkdtemp(x->dir));
    snprintf(x->db, sizeof x->db, "%s/tide.db", x->dir);
    x->clock = 1000.0;
}

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    tide_error_t err = {0};
    f->cluster = tide_cluster_parse("4x8", &err);
    f->auth = tide_auth_create();
    f->log = getenv("TIDE_TEST_VERBOSE") ? stderr : fopen("/dev/null", "w");
    dx_dir(&f->a);
    dx_dir(&f->b);
    *state = f;
    return 0;
}

static void dx_close(dx_t *x)
{
    tide_router_destroy(x->rt);
    x->rt = NULL;
    tide_daemon_close(x->d);
    x->d = NULL;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    dx_t *v[] = {&f->a, &f->b};
    for (int i = 0; i < 2; i++) {
        dx_close(v[i]);
        char cmd[256];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", v[i]->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "cannot remove %s\n", v[i]->dir);
    }
    tide_auth_destroy(f->auth);
    tide_cluster_destroy(f->cluster);
    if (f->log != stderr)
        fclose(f->log);
    free(f);
    return 0;
}

static void dx_open(fx_t *f, dx_t *x, int shadow, int fresh, tide_time_t rehearse_every)
{
    tide_daemon_opts_t o;
    tide_daemon_opts_default(&o);
    o.db_path = x->db;
    o.cluster = fresh ? f->cluster : NULL;
    if (fresh) {
        o.services = &chat;
        o.n_services = 1;
    }
    o.speed = 1;
    o.check = 1;
    o.clock = manual_clock;
    o.clock_ctx = &x->clock;
    o.log = f->log;
    o.auth = f->auth;
    o.shadow = shadow;
    o.rehearse_every_s = rehearse_every;
    tide_error_t err = {0};
    if (!(x->d = tide_daemon_open(&o, &err)))
        fail_msg("open: %s", err.msg);
    size_t n;
    const tide_route_t *r = tide_daemon_routes(&n);
    x->rt = tide_router_create(r, n, f->auth, x->d);
    tide_daemon_set_router(x->d, x->rt);
}

static int call(dx_t *x, const char *method, const char *path, const char *body, json_t **out)
{
    tide_http_input_t in = {.method = method, .path = path, .body = body,
                            .body_len = body ? strlen(body) : 0};
    tide_http_reply_t rep;
    tide_router_handle(x->rt, &in, &rep);
    int st = rep.status;
    if (out)
        *out = rep.body ? json_loads(rep.body, 0, NULL) : NULL;
    tide_http_reply_free(&rep);
    return st;
}

static void advance(dx_t *x, double s)
{
    x->clock += s;
    tide_error_t err = {0};
    if (tide_daemon_pump(x->d, &err) < 0)
        fail_msg("pump: %s", err.msg);
}

static void demand(dx_t *x, double rps)
{
    char b[64];
    snprintf(b, sizeof b, "{\"rps\": %g}", rps);
    assert_int_equal(call(x, "POST", "/v1/services/chat/demand", b, NULL), 200);
}

/* The same day of inputs: a demand wave every 5 minutes, two jobs. */
static void script(dx_t *x)
{
    assert_int_equal(call(x, "POST", "/v1/jobs",
                          "{\"job_id\":\"j1\",\"team\":\"t\",\"gpus\":8,\"duration_s\":20000}", NULL),
                     201);
    assert_int_equal(call(x, "POST", "/v1/jobs",
                          "{\"job_id\":\"j2\",\"team\":\"t\",\"gpus\":8,\"duration_s\":50000}", NULL),
                     201);
    for (int k = 0; k < 288; k++) {
        demand(x, 10 + 12 * (1 + sin(2 * M_PI * k / 288.0)));
        advance(x, 300);
    }
}

static double lent_gpu_s(dx_t *x)
{
    tide_stats_t st;
    tide_daemon_lock(x->d);
    tide_engine_stats(tide_daemon_engine(x->d), &st);
    tide_daemon_unlock(x->d);
    return st.borrowed_gpu_s;
}

static tide_forecast_info_t forecast(dx_t *x)
{
    tide_forecast_info_t fc;
    tide_daemon_lock(x->d);
    assert_int_equal(tide_engine_forecast(tide_daemon_engine(x->d), 0, 3600, &fc), 0);
    tide_daemon_unlock(x->d);
    return fc;
}

static void assert_same_forecast(tide_forecast_info_t a, tide_forecast_info_t b)
{
    assert_true(a.margin == b.margin);
    assert_true(a.peak == b.peak);
    assert_int_equal(a.samples, b.samples);
    assert_int_equal(a.lead_s, b.lead_s);
}

static double num(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);
    return json_number_value(b ? json_object_get(v, b) : v);
}

static void test_shadow_predicts_what_enact_does(void **state)
{
    fx_t *f = *state;
    dx_open(f, &f->a, 1, 1, 0);
    dx_open(f, &f->b, 0, 1, 0);
    script(&f->a);
    script(&f->b);
    json_t *o = NULL;
    assert_int_equal(call(&f->a, "GET", "/v1/shadow", NULL, &o), 200);
    assert_string_equal(json_string_value(json_object_get(o, "mode")), "shadow");
    /* nothing enacted */
    assert_true(num(o, "backend", "submits") == 0 && num(o, "backend", "cancels") == 0 &&
                num(o, "backend", "signals") == 0);
    /* what it would have lent is what the enacting daemon lent (the twin is
     * the sim world the enacting daemon's backend is: the bound is exact) */
    double would = num(o, "lent_gpu_hours", NULL) * 3600;
    assert_true(would > 0);
    assert_true(fabs(would - lent_gpu_s(&f->b)) < 1e-6 * (1 + would));
    assert_true(fabs(would - lent_gpu_s(&f->a)) < 1e-6 * (1 + would));
    assert_true(num(o, "jobs_started_early", NULL) >= 1);
    json_decref(o);
    assert_int_equal(call(&f->b, "GET", "/v1/shadow", NULL, &o), 200);
    assert_string_equal(json_string_value(json_object_get(o, "mode")), "enact");
    assert_null(json_object_get(o, "lent_gpu_hours")); /* never in shadow */
    json_decref(o);
}

static void test_switch_keeps_the_forecast(void **state)
{
    fx_t *f = *state;
    dx_t *x = &f->a;
    dx_open(f, x, 1, 1, 0);
    script(x);
    tide_forecast_info_t before = forecast(x);
    assert_true(before.samples > 0);
    json_t *o = NULL;
    assert_int_equal(call(x, "POST", "/v1/mode", "{\"mode\":\"enact\"}", &o), 200);
    assert_string_equal(json_string_value(json_object_get(o, "mode")), "enact");
    json_decref(o);
    assert_same_forecast(before, forecast(x));
    assert_int_equal(call(x, "POST", "/v1/mode", "{\"mode\":\"enact\"}", NULL), 200);
    assert_int_equal(call(x, "POST", "/v1/mode", "{\"mode\":\"shadow\"}", NULL), 409);
    assert_int_equal(call(x, "POST", "/v1/mode", "{\"mode\":7}", NULL), 400);
    /* the real backend now runs the work the shadow's twin ran */
    advance(x, 60);
    assert_int_equal(call(x, "GET", "/v1/shadow", NULL, &o), 200);
    assert_true(num(o, "backend", "submits") == 0); /* frozen at the switch */
    json_decref(o);
    tide_forecast_info_t at_close = forecast(x);
    dx_close(x);
    /* a restart in enact mode replays the shadow's steps: same forecast */
    dx_open(f, x, 0, 0, 0);
    assert_same_forecast(at_close, forecast(x));
    /* and a restart of a shadow database in enact mode, never switched live */
    dx_t *y = &f->b;
    dx_open(f, y, 1, 1, 0);
    script(y);
    tide_forecast_info_t sh = forecast(y);
    dx_close(y);
    dx_open(f, y, 0, 0, 0);
    assert_same_forecast(sh, forecast(y));
}

static void test_rehearsals(void **state)
{
    fx_t *f = *state;
    dx_t *x = &f->a;
    dx_open(f, x, 0, 1, 0);
    demand(x, 5);
    advance(x, 300);
    assert_int_equal(call(x, "POST", "/v1/services/chat/rehearse", NULL, NULL), 202);
    assert_int_equal(call(x, "POST", "/v1/services/nope/rehearse", NULL, NULL), 404);
    advance(x, 1);
    advance(x, 200);
    json_t *o = NULL;
    assert_int_equal(call(x, "GET", "/v1/services/chat", NULL, &o), 200);
    const json_t *r = json_object_get(o, "rehearsal");
    assert_int_equal(json_integer_value(json_object_get(r, "done")), 1);
    assert_true(json_number_value(json_object_get(r, "last_warmup_s")) == 120);
    assert_true(json_number_value(json_object_get(r, "gpu_s")) == 8 * 120);
    json_decref(o);
    /* the request is an event in the log: a restart replays it */
    dx_close(x);
    dx_open(f, x, 0, 0, 0);
    assert_int_equal(call(x, "GET", "/v1/services/chat", NULL, &o), 200);
    r = json_object_get(o, "rehearsal");
    assert_int_equal(json_integer_value(json_object_get(r, "done")), 1);
    json_decref(o);
    /* scheduled: every hour of engine time */
    dx_t *y = &f->b;
    dx_open(f, y, 0, 1, 3600);
    for (int k = 0; k < 30; k++)
        advance(y, 300); /* 2.5 h */
    assert_int_equal(call(y, "GET", "/v1/services/chat", NULL, &o), 200);
    r = json_object_get(o, "rehearsal");
    assert_int_equal(json_integer_value(json_object_get(r, "done")), 2);
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_shadow_predicts_what_enact_does, setup, teardown),
        cmocka_unit_test_setup_teardown(test_switch_keeps_the_forecast, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rehearsals, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
