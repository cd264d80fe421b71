/* GET /v1/stream (src/daemon/stream.c) on a daemon with the sim backend and
 * a manual clock, read through the stream ops as a server would: viewers
 * never receive another team's job ids (those rows keep only the team), an
 * admin sees them; Last-Event-ID resumes right after that event; heartbeats
 * follow the daemon's clock; a client that had caught up and cannot take
 * what is new is dropped (its stream ends) while the others go on; a client
 * catching up through a small buffer gets every row, in order, without
 * gaps. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/internal.h"

typedef struct fx {
    char dir[64], db[128];
    double clock;
    tide_cluster_t *cluster;
    tide_daemon_t *d;
    tide_auth_t *auth;
    tide_router_t *rt;
    FILE *log;
    tide_governance_t gov;
} fx_t;

static double manual_clock(void *ctx) { return *(double *)ctx; }

static const char tokens[] = "adm default admin\n"
                             "va a viewer\n"
                             "sa a submitter\n"
                             "sb b submitter\n";

static const tide_service_spec_t chat = {.name = "chat", .gpus_per_replica = 8,
                                         .replica_rps = 10, .min_replicas = 1,
                                         .max_replicas = 3, .warmup_s = 120};

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/tide-stream-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->db, sizeof f->db, "%s/tide.db", f->dir);
    tide_error_t err = {0};
    f->cluster = tide_cluster_parse("4x8", &err);
    f->clock = 1000.0;
    f->auth = tide_auth_create();
    tide_auth_set_min_len(f->auth, 1); /* short readable tokens */
    assert_int_equal(tide_auth_load_mem(f->auth, tokens, strlen(tokens), "tokens", &err), 4);
    f->log = getenv("TIDE_TEST_VERBOSE") ? stderr : fopen("/dev/null", "w");
    tide_governance_init(&f->gov, f->cluster);
    static const char *const names[] = {"a", "b"};
    for (int i = 0; i < 2; i++) {
        tide_team_spec_t t;
        tide_team_spec_default(&t);
        t.name = names[i];
        assert_true(tide_governance_add_team(&f->gov, &t, 0, &err) >= 0);
    }
    tide_daemon_opts_t o;
    tide_daemon_opts_default(&o);
    o.db_path = f->db;
    o.cluster = f->cluster;
    o.gov = &f->gov;
    o.services = &chat;
    o.n_services = 1;
    o.clock = manual_clock;
    o.clock_ctx = &f->clock;
    o.log = f->log;
    o.auth = f->auth;
    f->d = tide_daemon_open(&o, &err);
    if (!f->d)
        fail_msg("open: %s", err.msg);
    size_t n;
    const tide_route_t *r = tide_daemon_routes(&n);
    f->rt = tide_router_create(r, n, f->auth, f->d);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    tide_daemon_stop(f->d);
    tide_daemon_close(f->d);
    tide_router_destroy(f->rt);
    tide_auth_destroy(f->auth);
    tide_governance_free(&f->gov);
    tide_cluster_destroy(f->cluster);
    if (f->log != stderr)
        fclose(f->log);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", f->dir);
    free(f);
    return 0;
}

typedef struct hdrs {
    const char *auth, *last_id;
} hdrs_t;

static const char *header(void *ctx, const char *name)
{
    const hdrs_t *h = ctx;
    return !strcasecmp(name, "Last-Event-ID") ? h->last_id : NULL;
}

/* A request through the router; the caller frees rep. */
static int request(fx_t *f, const char *method, const char *path, const char *query_since,
                   const char *token, const char *last_id, const char *body,
                   tide_http_reply_t *rep)
{
    char auth[64];
    snprintf(auth, sizeof auth, "Bearer %s", token);
    hdrs_t h = {auth, last_id};
    const char *q[2] = {"since", query_since};
    tide_http_input_t in = {.method = method, .path = path, .query = q,
                            .n_query = query_since ? 1 : 0, .authorization = auth,
                            .body = body, .body_len = body ? strlen(body) : 0,
                            .header = header, .header_ctx = &h};
    tide_router_handle(f->rt, &in, rep);
    return rep->status;
}

static void submit(fx_t *f, const char *token, const char *id, const char *team)
{
    char b[256];
    snprintf(b, sizeof b,
             "{\"job_id\": \"%s\", \"team\": \"%s\", \"gpus\": 8, \"duration_s\": 3600}", id,
             team);
    tide_http_reply_t rep;
    int st = request(f, "POST", "/v1/jobs", NULL, token, NULL, b, &rep);
    if (st != 201)
        fail_msg("submit %s: %d %s", id, st, rep.body ? rep.body : "");
    tide_http_reply_free(&rep);
}

static void advance(fx_t *f, double s)
{
    f->clock += s;
    tide_error_t err = {0};
    if (tide_daemon_pump(f->d, &err) < 0)
        fail_msg("pump: %s", err.msg);
}

static void hub_turn(fx_t *f)
{
    tide_daemon_lock(f->d);
    dmn_stream_pump(f->d);
    tide_daemon_unlock(f->d);
}

/* Everything the stream has now (appended to *acc); returns -1 at its end. */
static long drain(tide_http_reply_t *rep, char **acc, size_t *n)
{
    char buf[4096];
    long k, total = 0;
    while ((k = rep->stream->read(rep->stream_ctx, buf, sizeof buf)) > 0) {
        *acc = realloc(*acc, *n + (size_t)k + 1);
        memcpy(*acc + *n, buf, (size_t)k);
        *n += (size_t)k;
        (*acc)[*n] = '\0';
        total += k;
    }
    return k < 0 ? -1 : total;
}

static tide_http_reply_t open_stream(fx_t *f, const char *token, const char *since,
                                     const char *last_id)
{
    tide_http_reply_t rep;
    int st = request(f, "GET", "/v1/stream", since, token, last_id, NULL, &rep);
    if (st != 200 || !rep.stream)
        fail_msg("stream: %d %s", st, rep.body ? rep.body : "");
    assert_string_equal(rep.content_type, "text/event-stream");
    return rep;
}

/* The ids of the events in text, in order (at most max). */
static int ids_of(const char *text, long long *ids, int max)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, "\nid: ")) && n < max; p++)
        ids[n++] = atoll(p + 5);
    if (!strncmp(text, "id: ", 4) && n < max) {
        memmove(ids + 1, ids, (size_t)n * sizeof *ids);
        ids[0] = atoll(text + 4);
        n++;
    }
    return n;
}

static void test_viewer_sees_own_team_only(void **state)
{
    fx_t *f = *state;
    tide_http_reply_t viewer = open_stream(f, "va", "0", NULL);
    tide_http_reply_t admin = open_stream(f, "adm", "0", NULL);
    submit(f, "sa", "alpha-1", "a");
    submit(f, "sb", "bravo-1", "b");
    submit(f, "sb", "bravo-2", "b");
    advance(f, 10);
    advance(f, 400);
    hub_turn(f);
    char *v = NULL, *a = NULL;
    size_t nv = 0, na = 0;
    assert_true(drain(&viewer, &v, &nv) > 0);
    assert_true(drain(&admin, &a, &na) > 0);
    /* the admin sees every job, started too */
    assert_non_null(strstr(a, "\"job\":\"bravo-1\""));
    assert_non_null(strstr(a, "\"job\":\"bravo-2\""));
    assert_non_null(strstr(a, "\"kind\":\"job_start\",\"job\":\"bravo-1\""));
    /* the viewer of team a: its own job by id, team b's only as rows with
     * the team and no id (they count), never an id of b's */
    assert_non_null(strstr(v, "\"job\":\"alpha-1\""));
    assert_null(strstr(v, "bravo"));
    assert_non_null(strstr(v, "\"job\":null"));
    assert_non_null(strstr(v, "\"team\":\"b\""));
    /* the same rows, in the same order */
    long long iv[256], ia[256];
    int kv = ids_of(v, iv, 256), ka = ids_of(a, ia, 256);
    assert_true(kv >= 6);
    assert_int_equal(kv, ka);
    assert_memory_equal(iv, ia, (size_t)kv * sizeof *iv);
    free(v);
    free(a);
    tide_http_reply_free(&viewer);
    tide_http_reply_free(&admin);
}

static void test_resume_and_heartbeat(void **state)
{
    fx_t *f = *state;
    submit(f, "sa", "a1", "a");
    submit(f, "sa", "a2", "a");
    advance(f, 10);
    tide_http_reply_t all = open_stream(f, "adm", "0", NULL);
    hub_turn(f);
    char *t = NULL;
    size_t n = 0;
    drain(&all, &t, &n);
    long long ids[64];
    int k = ids_of(t, ids, 64);
    assert_true(k >= 4);
    for (int i = 1; i < k; i++)
        assert_true(ids[i] > ids[i - 1]);
    /* reconnect with the id of the second event: the next one comes first
     * (Last-Event-ID wins over ?since=) */
    char last[32];
    snprintf(last, sizeof last, "%lld", ids[1]);
    tide_http_reply_t again = open_stream(f, "adm", "0", last);
    hub_turn(f);
    char *t2 = NULL;
    size_t n2 = 0;
    drain(&again, &t2, &n2);
    long long ids2[64];
    int k2 = ids_of(t2, ids2, 64);
    assert_int_equal(k2, k - 2);
    assert_memory_equal(ids2, ids + 2, (size_t)k2 * sizeof *ids);
    /* nothing new: a heartbeat once the interval (15 s by default) passed */
    free(t2);
    t2 = NULL;
    n2 = 0;
    f->clock += 16;
    hub_turn(f);
    drain(&again, &t2, &n2);
    assert_non_null(t2);
    assert_non_null(strstr(t2, ": heartbeat"));
    assert_null(strstr(t2, "id: "));
    /* a bad Last-Event-ID is refused */
    tide_http_reply_t bad;
    assert_int_equal(request(f, "GET", "/v1/stream", NULL, "adm", "x7", NULL, &bad), 400);
    tide_http_reply_free(&bad);
    free(t);
    free(t2);
    tide_http_reply_free(&all);
    tide_http_reply_free(&again);
}

static void test_slow_client_dropped(void **state)
{
    fx_t *f = *state;
    tide_http_reply_t fast = open_stream(f, "adm", NULL, NULL);
    dmn_stream_set_limit(f->d, 1024);
    tide_http_reply_t slow = open_stream(f, "adm", NULL, NULL);
    hub_turn(f); /* both caught up (live) */
    char *ft = NULL, *st = NULL;
    size_t fn = 0, sn = 0;
    assert_true(drain(&slow, &st, &sn) > 0); /* the hello */
    char id[32];
    for (int i = 0; i < 20; i++) {
        snprintf(id, sizeof id, "job-%02d", i);
        submit(f, "sa", id, "a");
        hub_turn(f);
        assert_true(drain(&fast, &ft, &fn) >= 0);
    }
    /* the slow one never read: dropped, its stream ends at once (what it
     * had buffered is thrown away; it resumes with its Last-Event-ID) */
    free(st);
    st = NULL;
    sn = 0;
    assert_int_equal(drain(&slow, &st, &sn), -1);
    assert_int_equal(sn, 0);
    /* the fast one got all 20 */
    assert_non_null(strstr(ft, "\"job\":\"job-00\""));
    assert_non_null(strstr(ft, "\"job\":\"job-19\""));
    int clients;
    unsigned long served, dropped;
    dmn_stream_counts(f->d, &clients, &served, &dropped);
    assert_int_equal(dropped, 1);
    assert_int_equal(served, 2);
    free(ft);
    free(st);
    tide_http_reply_free(&fast);
    tide_http_reply_free(&slow);
}

static void test_catch_up_small_buffer(void **state)
{
    fx_t *f = *state;
    char id[32];
    for (int i = 0; i < 30; i++) {
        snprintf(id, sizeof id, "c-%02d", i);
        submit(f, "sa", id, "a");
    }
    advance(f, 5);
    tide_http_reply_t big = open_stream(f, "adm", "0", NULL);
    hub_turn(f);
    char *bt = NULL;
    size_t bn = 0;
    drain(&big, &bt, &bn);
    dmn_stream_set_limit(f->d, 1024);
    tide_http_reply_t small = open_stream(f, "adm", "0", NULL);
    char *s = NULL;
    size_t sn = 0;
    for (int turn = 0; turn < 200; turn++) {
        hub_turn(f);
        if (drain(&small, &s, &sn) < 0)
            fail_msg("a client catching up was dropped");
    }
    long long a[256], b[256];
    int ka = ids_of(bt, a, 256), kb = ids_of(s, b, 256);
    assert_true(ka >= 30);
    assert_int_equal(ka, kb);
    assert_memory_equal(a, b, (size_t)ka * sizeof *a);
    free(bt);
    free(s);
    tide_http_reply_free(&big);
    tide_http_reply_free(&small);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_viewer_sees_own_team_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resume_and_heartbeat, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_client_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_catch_up_small_buffer, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
