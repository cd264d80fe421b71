/* The daemon (src/daemon) on a temporary database with the sim backend and
 * a manual clock (no sleeping): jobs submitted through the API survive a
 * crash, nothing is duplicated, the rebuilt engine holds its invariants and
 * replays to the recorded actions, running jobs come back requeued with
 * their loss counted; store faults in the middle of a step or a submit leave
 * no half-written state; the API's flows (notices, checkpoints, cancel,
 * services, demand, usage, events, metrics). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "http/router.h"

typedef struct fx {
    char dir[64], db[128];
    double clock;
    tide_cluster_t *cluster;
    tide_daemon_t *d;
    tide_auth_t *auth;
    tide_router_t *rt;
    FILE *log;
    tide_governance_t gov;
    long snap_every;     /* --snapshot-every (0 = the default, -1 = off) */
} fx_t;

static double manual_clock(void *ctx) { return *(double *)ctx; }

static const tide_service_spec_t chat = {.name = "chat", .gpus_per_replica = 8,
                                         .replica_rps = 10, .min_replicas = 1,
                                         .max_replicas = 3, .warmup_s = 120};

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/tide-daemon-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->db, sizeof f->db, "%s/tide.db", f->dir);
    tide_error_t err = {0};
    f->cluster = tide_cluster_parse("4x8", &err);
    f->clock = 1000.0;
    f->auth = tide_auth_create();
    f->log = getenv("TIDE_TEST_VERBOSE") ? stderr : fopen("/dev/null", "w");
    /* two teams from the "cluster file": their definitions are logged and
     * replayed like events. (With fair share over two or more teams the
     * engine also avoids a memcpy from a NULL queue that UBSan flags in
     * sched.c when one team runs alone and no P1 job was ever queued.) */
    tide_governance_init(&f->gov, f->cluster);
    static const char *const names[] = {"t", "u"};
    for (int i = 0; i < 2; i++) {
        tide_team_spec_t t;
        tide_team_spec_default(&t);
        t.name = names[i];
        t.weight = i + 1;
        assert_true(tide_governance_add_team(&f->gov, &t, 0, &err) >= 0);
    }
    *state = f;
    return 0;
}

static void close_router(fx_t *f)
{
    tide_router_destroy(f->rt);
    f->rt = NULL;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    close_router(f);
    tide_daemon_close(f->d);
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

/* Open with --services v (NULL: none, the database's). */
static tide_daemon_t *try_open_svc(fx_t *f, const tide_cluster_t *c, const char *policy,
                                   const tide_service_spec_t *v, tide_error_t *err)
{
    tide_daemon_opts_t o;
    tide_daemon_opts_default(&o);
    o.db_path = f->db;
    o.cluster = c;
    o.gov = &f->gov;
    o.policy = policy;
    o.services = v;
    o.n_services = v ? 1 : 0;
    o.speed = 1;
    o.check = 1;
    o.clock = manual_clock;
    o.clock_ctx = &f->clock;
    o.log = f->log;
    o.auth = f->auth;
    o.usage_interval_s = 600;
    if (f->snap_every)
        o.snapshot_steps = f->snap_every < 0 ? 0 : f->snap_every;
    return tide_daemon_open(&o, err);
}

static tide_daemon_t *try_open(fx_t *f, const tide_cluster_t *c, const char *policy,
                               int services, tide_error_t *err)
{
    return try_open_svc(f, c, policy, services ? &chat : NULL, err);
}

/* Open the database with --services v (NULL: none), with the router. */
static void open_with(fx_t *f, const tide_cluster_t *c, const tide_service_spec_t *v)
{
    tide_error_t err = {0};
    f->d = try_open_svc(f, c, NULL, v, &err);
    if (!f->d)
        fail_msg("open: %s", err.msg);
    size_t n;
    const tide_route_t *r = tide_daemon_routes(&n);
    f->rt = tide_router_create(r, n, f->auth, f->d);
    tide_daemon_set_router(f->d, f->rt);
}

static void open_daemon(fx_t *f, int fresh)
{
    open_with(f, fresh ? f->cluster : NULL, fresh ? &chat : NULL);
}

/* Simulate kill -9: nothing more is written; reopen later. */
static void crash(fx_t *f)
{
    close_router(f);
    tide_daemon_crash(f->d);
    f->d = NULL;
}

static int call(fx_t *f, const char *method, const char *path, const char *body, json_t **out)
{
    char p[512];
    snprintf(p, sizeof p, "%s", path);
    const char *q[16];
    size_t nq = 0;
    char *qs = strchr(p, '?');
    if (qs) {
        *qs++ = '\0';
        for (char *kv = strtok(qs, "&"); kv && nq < 8; kv = strtok(NULL, "&")) {
            char *eq = strchr(kv, '=');
            if (eq)
                *eq++ = '\0';
            q[2 * nq] = kv;
            q[2 * nq + 1] = eq;
            nq++;
        }
    }
    tide_http_input_t in = {.method = method, .path = p, .query = q, .n_query = nq,
                            .body = body, .body_len = body ? strlen(body) : 0};
    tide_http_reply_t rep;
    tide_router_handle(f->rt, &in, &rep);
    int st = rep.status;
    if (out)
        *out = rep.body ? json_loads(rep.body, 0, NULL) : NULL;
    if (getenv("TIDE_TEST_VERBOSE"))
        fprintf(stderr, "%s %s -> %d %.300s\n", method, path, st, rep.body ? rep.body : "");
    tide_http_reply_free(&rep);
    return st;
}

static void advance(fx_t *f, double s)
{
    f->clock += s;
    tide_error_t err = {0};
    if (tide_daemon_pump(f->d, &err) < 0)
        fail_msg("pump: %s", err.msg);
}

static void submit(fx_t *f, const char *id, int gpus, int duration)
{
    char b[256];
    snprintf(b, sizeof b,
             "{\"job_id\": \"%s\", \"team\": \"t\", \"gpus\": %d, \"duration_s\": %d, "
             "\"ckpt_interval_s\": 600, \"ckpt_s\": 60, \"restore_s\": 30}",
             id, gpus, duration);
    json_t *o = NULL;
    int st = call(f, "POST", "/v1/jobs", b, &o);
    if (st != 201)
        fail_msg("submit %s: %d", id, st);
    assert_string_equal(json_string_value(json_object_get(o, "id")), id);
    json_decref(o);
}

typedef struct snap {
    char state[16];
    double committed, progress, lost;
    int preemptions;
} snap_t;

static int job_snap(fx_t *f, const char *id, snap_t *s)
{
    tide_daemon_lock(f->d);
    const tide_engine_t *e = tide_daemon_engine(f->d);
    int32_t h = tide_engine_job_find(e, id);
    tide_job_info_t ji;
    int rc = -1;
    if (h >= 0 && tide_engine_job(e, h, &ji) == 0) {
        snprintf(s->state, sizeof s->state, "%s", tide_job_state_name(ji.state));
        s->committed = ji.committed;
        s->progress = ji.progress;
        s->lost = ji.lost_gpu_s;
        s->preemptions = ji.preemptions;
        rc = 0;
    }
    tide_daemon_unlock(f->d);
    return rc;
}

static void check_engine(fx_t *f)
{
    tide_daemon_lock(f->d);
    tide_error_t err = {0};
    int rc = tide_engine_check(tide_daemon_engine(f->d), &err);
    tide_daemon_unlock(f->d);
    if (rc < 0)
        fail_msg("invariant: %s", err.msg);
}

static int db_count(fx_t *f, const char *sql)
{
    sqlite3 *db = NULL;
    int n = -1;
    if (sqlite3_open_v2(f->db, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return n;
}

/* The engine's state as bytes (tide_engine_snapshot), and GET path's body. */
static void *engine_bytes(fx_t *f, size_t *n)
{
    tide_daemon_lock(f->d);
    void *b = tide_engine_snapshot(tide_daemon_engine(f->d), n);
    tide_daemon_unlock(f->d);
    return b;
}

static char *get_body(fx_t *f, const char *path)
{
    json_t *o = NULL;
    assert_int_equal(call(f, "GET", path, NULL, &o), 200);
    char *s = json_dumps(o, JSON_SORT_KEYS);
    json_decref(o);
    return s;
}

/* What a recovered daemon holds: engine bytes, jobs, notices, replicas. */
typedef struct recovered {
    void *eng;
    size_t n;
    char *jobs, *svc, *nodes;
    long replayed;
    int64_t snap;
} recovered_t;

static void recovered_take(fx_t *f, recovered_t *r)
{
    r->eng = engine_bytes(f, &r->n);
    r->jobs = get_body(f, "/v1/jobs");
    r->svc = get_body(f, "/v1/services");
    r->nodes = get_body(f, "/v1/nodes");
    r->replayed = tide_daemon_replayed_steps(f->d);
    r->snap = tide_daemon_snapshot_step(f->d);
}

static void recovered_free(recovered_t *r)
{
    free(r->eng);
    free(r->jobs);
    free(r->svc);
    free(r->nodes);
}

/* Snapshots: a daemon restored from the newest snapshot and the steps after
 * it is in the same state as one that replayed the whole log (engine bytes,
 * jobs, services, nodes after the same first step; no replay mismatch); a
 * snapshot with a wrong checksum is skipped and the whole log replayed; only
 * two are kept. */
static void test_snapshot_recovery(void **state)
{
    fx_t *f = *state;
    f->snap_every = 7;
    open_daemon(f, 1);
    for (int i = 1; i <= 5; i++) {
        char id[8];
        snprintf(id, sizeof id, "s%d", i);
        submit(f, id, 8, 3000 + 1000 * i);
        advance(f, 1);
    }
    for (int i = 0; i < 60; i++) {
        advance(f, 97);
        if (i == 20)
            assert_int_equal(call(f, "POST", "/v1/jobs/s2/cancel", NULL, NULL), 200);
        if (i == 30)
            assert_int_equal(call(f, "POST", "/v1/services/chat/demand", "{\"rps\": 25}", NULL),
                             200);
    }
    int64_t steps = tide_daemon_steps(f->d);
    assert_true(steps > 40);
    crash(f);
    assert_int_equal(db_count(f, "SELECT count(*) FROM snapshots"), 2);
    int64_t last = db_count(f, "SELECT max(step) FROM snapshots");
    assert_true(last > steps - 9 && last < steps);
    char copy[sizeof f->db], cmd[4 * sizeof f->db + 64];
    snprintf(copy, sizeof copy, "%s/full.db", f->dir);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s' && (cp '%s-wal' '%s-wal' 2>/dev/null; true)", f->db,
             copy, f->db, copy);
    assert_int_equal(system(cmd), 0);

    /* from the snapshot */
    f->clock += 5;
    open_daemon(f, 0);
    check_engine(f);
    assert_int_equal(tide_daemon_replay_mismatches(f->d), 0);
    recovered_t a, b;
    recovered_take(f, &a);
    assert_int_equal(a.snap, last);
    assert_int_equal(a.replayed, steps - last);
    crash(f);
    /* the whole log, on the copy */
    char saved[sizeof f->db];
    memcpy(saved, f->db, sizeof saved);
    snprintf(f->db, sizeof f->db, "%s", copy);
    f->snap_every = -1;
    open_daemon(f, 0);
    assert_int_equal(tide_daemon_replay_mismatches(f->d), 0);
    recovered_take(f, &b);
    assert_int_equal(b.snap, -1);
    assert_int_equal(b.replayed, steps);
    if (a.n != b.n || memcmp(a.eng, b.eng, a.n)) {
        size_t k = 0;
        while (k < a.n && k < b.n && ((char *)a.eng)[k] == ((char *)b.eng)[k])
            k++;
        fail_msg("the engine restored from a snapshot differs from the full replay's (%zu and "
                 "%zu bytes, from byte %zu)", a.n, b.n, k);
    }
    assert_string_equal(a.jobs, b.jobs);
    assert_string_equal(a.svc, b.svc);
    assert_string_equal(a.nodes, b.nodes);
    recovered_free(&a);
    recovered_free(&b);
    crash(f);
    memcpy(f->db, saved, sizeof saved);

    /* corrupt snapshots are skipped (a log line each), the whole log replayed */
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "UPDATE snapshots SET checksum = '0'", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    int64_t all = db_count(f, "SELECT count(*) FROM steps");
    f->snap_every = 7;
    open_daemon(f, 0);
    check_engine(f);
    assert_int_equal(tide_daemon_snapshot_step(f->d), -1);
    assert_int_equal(tide_daemon_replayed_steps(f->d), all);
    assert_int_equal(tide_daemon_replay_mismatches(f->d), 0);
    for (int i = 0; i < 20; i++)
        advance(f, 97); /* new snapshots replace them */
    assert_int_equal(db_count(f, "SELECT count(*) FROM snapshots WHERE checksum = '0'"), 0);
}

/* ------------------------------------------------------------------ tests */

static void test_crash_recovery(void **state)
{
    fx_t *f = *state;
    open_daemon(f, 1);
    for (int i = 1; i <= 4; i++) {
        char id[8];
        snprintf(id, sizeof id, "j%d", i);
        submit(f, id, 8, 36000);
    }
    advance(f, 1);
    advance(f, 1000);
    check_engine(f);
    snap_t before[5];
    int running = 0;
    for (int i = 1; i <= 4; i++) {
        char id[8];
        snprintf(id, sizeof id, "j%d", i);
        assert_int_equal(job_snap(f, id, &before[i]), 0);
        if (!strcmp(before[i].state, "running")) {
            running++;
            assert_true(before[i].committed > 0);               /* a checkpoint committed */
            assert_true(before[i].progress > before[i].committed); /* and work since */
        }
    }
    assert_int_equal(running, 3); /* 32 GPUs: 8 for the chat floor, 24 for training */
    /* accepted (committed) but not yet fed when the process dies */
    submit(f, "j5", 8, 600);
    int64_t steps = tide_daemon_steps(f->d);
    crash(f);
    assert_int_equal(db_count(f, "SELECT count(*) FROM jobs"), 5);
    assert_int_equal(db_count(f, "SELECT count(*) FROM events_in WHERE step IS NULL"), 1);

    f->clock += 5; /* the daemon was down for 5 s */
    open_daemon(f, 0);
    check_engine(f);
    assert_int_equal(tide_daemon_replay_mismatches(f->d), 0);
    assert_true(tide_daemon_steps(f->d) > steps);
    for (int i = 1; i <= 4; i++) {
        char id[8];
        snprintf(id, sizeof id, "j%d", i);
        snap_t now;
        assert_int_equal(job_snap(f, id, &now), 0);
        if (!strcmp(before[i].state, "running")) {
            /* requeued (and maybe restarted at once) with the loss counted */
            assert_int_equal(now.preemptions, before[i].preemptions + 1);
            assert_true(now.lost > before[i].lost);
            assert_true(now.committed >= before[i].committed);
        }
    }
    snap_t j5;
    assert_int_equal(job_snap(f, "j5", &j5), 0); /* the acknowledged job is there */
    assert_int_equal(db_count(f, "SELECT count(*) FROM events_in WHERE step IS NULL"), 0);
    assert_int_equal(db_count(f, "SELECT count(*) FROM events_in WHERE kind = 'job_expired' AND "
                                 "source = 'recovery'"),
                     running);
    /* a retried POST: 409 with the existing id, no duplicate */
    json_t *o = NULL;
    assert_int_equal(call(f, "POST", "/v1/jobs",
                          "{\"job_id\": \"j2\", \"team\": \"t\", \"gpus\": 8, \"duration_s\": 60}", &o),
                     409);
    assert_string_equal(json_string_value(json_object_get(o, "id")), "j2");
    json_decref(o);
    assert_int_equal(db_count(f, "SELECT count(*) FROM jobs"), 5);
    /* life goes on: the others are cancelled, j5 runs and finishes */
    for (int i = 1; i <= 4; i++) {
        char path[64];
        snprintf(path, sizeof path, "/v1/jobs/j%d/cancel", i);
        assert_int_equal(call(f, "POST", path, NULL, NULL), 200);
    }
    for (int i = 0; i < 40; i++)
        advance(f, 60);
    check_engine(f);
    assert_int_equal(job_snap(f, "j5", &j5), 0);
    assert_string_equal(j5.state, "done");
    /* a second crash with nothing pending, clean replay again */
    crash(f);
    open_daemon(f, 0);
    check_engine(f);
    assert_int_equal(tide_daemon_replay_mismatches(f->d), 0);
    assert_int_equal(job_snap(f, "j5", &j5), 0);
    assert_string_equal(j5.state, "done");
}

static void test_cancel_pending_in_same_batch(void **state)
{
    fx_t *f = *state;
    open_daemon(f, 1);
    /* submit and cancel before the loop feeds either: two steps at one time */
    submit(f, "a", 8, 3600);
    json_t *o = NULL;
    assert_int_equal(call(f, "POST", "/v1/jobs/a/cancel", NULL, &o), 200);
    json_decref(o);
    advance(f, 0);
    snap_t s;
    assert_int_equal(job_snap(f, "a", &s), 0);
    assert_string_equal(s.state, "cancelled");
    assert_int_equal(call(f, "POST", "/v1/jobs/a/cancel", NULL, NULL), 409);
    crash(f);
    open_daemon(f, 0);
    assert_int_equal(tide_daemon_replay_mismatches(f->d), 0);
    assert_int_equal(job_snap(f, "a", &s), 0);
    assert_string_equal(s.state, "cancelled");
    assert_int_equal(call(f, "GET", "/v1/jobs?state=cancelled", NULL, &o), 200);
    assert_int_equal(json_array_size(json_object_get(o, "jobs")), 1);
    json_decref(o);
}

static void test_step_faults(void **state)
{
    fx_t *f = *state;
    open_daemon(f, 1);
    submit(f, "x1", 8, 7200);
    advance(f, 1);
    for (long k = 1; k <= 14; k++) {
        char id[16];
        snprintf(id, sizeof id, "f%ld", k);
        submit(f, id, 8, 1200);
        tide_store_fail_at(tide_daemon_store(f->d), k);
        f->clock += 97;
        tide_error_t err = {0};
        int rc = tide_daemon_pump(f->d, &err);
        tide_store_fail_at(tide_daemon_store(f->d), 0);
        if (rc < 0)
            assert_non_null(strstr(err.msg, "injected"));
        check_engine(f);
        /* never half a step: every action and claimed event belongs to a step row */
        assert_int_equal(db_count(f, "SELECT count(*) FROM actions WHERE step NOT IN (SELECT step "
                                     "FROM steps)"),
                         0);
        assert_int_equal(db_count(f, "SELECT count(*) FROM events_in WHERE step IS NOT NULL AND "
                                     "step NOT IN (SELECT step FROM steps)"),
                         0);
        /* the rebuilt daemon goes on */
        advance(f, 1);
        snap_t s;
        assert_int_equal(job_snap(f, id, &s), 0);
    }
    assert_int_equal(db_count(f, "SELECT count(*) FROM jobs"), 15);
    crash(f);
    open_daemon(f, 0);
    check_engine(f);
    assert_int_equal(tide_daemon_replay_mismatches(f->d), 0);
}

static void test_submit_faults(void **state)
{
    fx_t *f = *state;
    open_daemon(f, 1);
    int failed = 0;
    for (long k = 1; k <= 6; k++) {
        char id[16], b[128];
        snprintf(id, sizeof id, "s%ld", k);
        snprintf(b, sizeof b, "{\"job_id\": \"%s\", \"gpus\": 8, \"duration_s\": 60}", id);
        tide_store_fail_at(tide_daemon_store(f->d), k);
        int st = call(f, "POST", "/v1/jobs", b, NULL);
        tide_store_fail_at(tide_daemon_store(f->d), 0);
        char path[64];
        snprintf(path, sizeof path, "/v1/jobs/%s", id);
        if (st == 201) {
            assert_int_equal(call(f, "GET", path, NULL, NULL), 200);
        } else {
            failed++;
            assert_int_equal(st, 503); /* the store refused: retry later */
            assert_int_equal(call(f, "GET", path, NULL, NULL), 404);
        }
    }
    assert_true(failed >= 3);
    assert_int_equal(db_count(f, "SELECT count(*) FROM events_in WHERE kind = 'submit'"),
                     db_count(f, "SELECT count(*) FROM jobs"));
    advance(f, 1);
    check_engine(f);
}

static void test_api_flows(void **state)
{
    fx_t *f = *state;
    open_daemon(f, 1);
    json_t *o = NULL;
    /* services: a new one before the first job (new epoch), none after */
    assert_int_equal(call(f, "POST", "/v1/services",
                          "{\"service\": \"embed\", \"gpus_per_replica\": 8, \"replica_rps\": 100, "
                          "\"min_replicas\": 0, \"warmup_s\": 30}",
                          &o),
                     201);
    json_decref(o);
    assert_int_equal(call(f, "POST", "/v1/services",
                          "{\"service\": \"embed\", \"gpus_per_replica\": 8, \"replica_rps\": 100, "
                          "\"min_replicas\": 0, \"warmup_s\": 30}",
                          NULL),
                     409);
    assert_int_equal(call(f, "PATCH", "/v1/services/embed", "{\"max_replicas\": 1}", NULL), 200);
    assert_int_equal(call(f, "PATCH", "/v1/services/nope", "{\"max_replicas\": 1}", NULL), 404);
    advance(f, 1);
    assert_int_equal(call(f, "GET", "/v1/services", NULL, &o), 200);
    assert_int_equal(json_array_size(json_object_get(o, "services")), 2);
    json_decref(o);
    /* demand */
    assert_int_equal(call(f, "POST", "/v1/services/chat/demand", "{\"rps\": 12}", NULL), 200);
    assert_int_equal(call(f, "POST", "/v1/services/nope/demand", "{\"rps\": 12}", NULL), 404);
    assert_int_equal(call(f, "POST", "/v1/services/chat/demand", "{\"rps\": \"x\"}", NULL), 400);
    advance(f, 1);
    /* a job, then services are frozen */
    submit(f, "big", 16, 36000);
    assert_int_equal(call(f, "POST", "/v1/services",
                          "{\"service\": \"late\", \"gpus_per_replica\": 8, \"replica_rps\": 1, "
                          "\"min_replicas\": 0, \"warmup_s\": 30}",
                          NULL),
                     409);
    advance(f, 1);
    /* an uncommitted checkpoint is recorded, a committed one is fed */
    assert_int_equal(call(f, "POST", "/v1/jobs/big/checkpoints",
                          "{\"step\": 10, \"bytes\": 1000, \"shards\": 2, \"committed\": false}", &o),
                     201);
    assert_true(json_is_false(json_object_get(o, "used")));
    json_decref(o);
    advance(f, 100);
    assert_int_equal(call(f, "POST", "/v1/jobs/big/checkpoints",
                          "{\"step\": 20, \"committed\": true, \"progress_s\": 50}", &o),
                     201);
    json_decref(o);
    advance(f, 0);
    snap_t s;
    assert_int_equal(job_snap(f, "big", &s), 0);
    assert_true(s.committed >= 50);
    assert_int_equal(call(f, "POST", "/v1/jobs/nope/checkpoints", "{\"committed\": true}", NULL), 404);
    assert_int_equal(call(f, "POST", "/v1/jobs/big/checkpoints", "{\"committed\": \"yes\"}", NULL), 400);
    /* no notice yet: the long poll answers null at once with wait=0 */
    assert_int_equal(call(f, "GET", "/v1/jobs/big/notice?wait=0", NULL, &o), 200);
    assert_true(json_is_null(json_object_get(o, "notice")));
    json_decref(o);
    assert_int_equal(call(f, "POST", "/v1/jobs/big/notice/ack", NULL, NULL), 409);
    assert_int_equal(call(f, "GET", "/v1/jobs/big/notice?wait=x", NULL, NULL), 400);
    /* demand rises: the lent GPUs are reclaimed with a notice */
    assert_int_equal(call(f, "POST", "/v1/services/chat/demand", "{\"rps\": 29}", NULL), 200);
    int noticed = 0;
    for (int i = 0; i < 30 && !noticed; i++) {
        advance(f, 20);
        assert_int_equal(call(f, "GET", "/v1/jobs/big/notice?wait=0", NULL, &o), 200);
        json_t *n = json_object_get(o, "notice");
        if (json_is_object(n)) {
            noticed = 1;
            const char *act = json_string_value(json_object_get(n, "action"));
            assert_true(!strcmp(act, "checkpoint") || !strcmp(act, "shrink"));
            assert_true(json_integer_value(json_object_get(n, "deadline_s")) > 0);
        }
        json_decref(o);
    }
    assert_true(noticed);
    int ack = call(f, "POST", "/v1/jobs/big/notice/ack", NULL, NULL);
    assert_true(ack == 200 || ack == 409); /* the sim world may have committed already */
    check_engine(f);
    /* nodes */
    assert_int_equal(call(f, "POST", "/v1/nodes/3/state", "{\"up\": false}", NULL), 200);
    assert_int_equal(call(f, "POST", "/v1/nodes/99/state", "{\"up\": false}", NULL), 404);
    advance(f, 1);
    assert_int_equal(call(f, "GET", "/v1/nodes", NULL, &o), 200);
    assert_true(json_is_false(json_object_get(json_array_get(json_object_get(o, "nodes"), 3), "up")));
    json_decref(o);
    check_engine(f);
    /* reads */
    assert_int_equal(call(f, "GET", "/v1/cluster", NULL, &o), 200);
    assert_int_equal(json_integer_value(json_object_get(o, "gpus")), 32);
    json_decref(o);
    assert_int_equal(call(f, "GET", "/v1/leases?active=1", NULL, NULL), 200);
    assert_int_equal(call(f, "GET", "/v1/events?cursor=0&limit=3", NULL, &o), 200);
    assert_int_equal(json_array_size(json_object_get(o, "events")), 3);
    json_int_t next = json_integer_value(json_object_get(o, "next"));
    json_decref(o);
    char path[64];
    snprintf(path, sizeof path, "/v1/events?cursor=%lld&limit=5000", (long long)next);
    assert_int_equal(call(f, "GET", path, NULL, &o), 200);
    assert_true(json_array_size(json_object_get(o, "events")) > 3);
    assert_true(json_integer_value(json_object_get(json_array_get(json_object_get(o, "events"), 0),
                                                   "seq")) > next);
    json_decref(o);
    advance(f, 1300); /* past a usage snapshot */
    assert_int_equal(call(f, "GET", "/v1/usage", NULL, &o), 200);
    assert_true(json_real_value(json_object_get(o, "total_gpu_hours")) > 0);
    json_decref(o);
    assert_int_equal(call(f, "GET", "/v1/usage?by=team&since=600", NULL, &o), 200);
    json_decref(o);
    assert_int_equal(call(f, "GET", "/v1/usage?by=colour", NULL, NULL), 400);
    assert_int_equal(call(f, "GET", "/v1/jobs?state=weird", NULL, NULL), 400);
    assert_int_equal(call(f, "GET", "/v1/jobs?limit=0", NULL, NULL), 400);
    assert_int_equal(call(f, "GET", "/metrics", NULL, NULL), 200);
    assert_int_equal(call(f, "GET", "/healthz", NULL, &o), 200);
    assert_true(json_is_true(json_object_get(o, "ok")));
    json_decref(o);
    /* cancel a running job */
    assert_int_equal(call(f, "POST", "/v1/jobs/big/cancel", NULL, NULL), 200);
    advance(f, 0);
    assert_int_equal(job_snap(f, "big", &s), 0);
    assert_string_equal(s.state, "cancelled");
    crash(f);
    open_daemon(f, 0);
    check_engine(f);
    assert_int_equal(tide_daemon_replay_mismatches(f->d), 0);
    assert_int_equal(call(f, "GET", "/v1/services", NULL, &o), 200);
    assert_int_equal(json_array_size(json_object_get(o, "services")), 2);
    json_decref(o);
}

static void test_jobs_paging(void **state)
{
    fx_t *f = *state;
    open_daemon(f, 1);
    for (int i = 0; i < 7; i++)
        assert_int_equal(call(f, "POST", "/v1/jobs", "{\"gpus\": 1, \"duration_s\": 60}", NULL), 201);
    int seen = 0;
    char path[128] = "/v1/jobs?limit=3";
    for (int page = 0; page < 5; page++) {
        json_t *o = NULL;
        assert_int_equal(call(f, "GET", path, NULL, &o), 200);
        seen += (int)json_array_size(json_object_get(o, "jobs"));
        json_t *next = json_object_get(o, "next");
        if (json_is_null(next)) {
            json_decref(o);
            break;
        }
        snprintf(path, sizeof path, "/v1/jobs?limit=3&cursor=%s", json_string_value(next));
        json_decref(o);
    }
    assert_int_equal(seen, 7);
    json_t *o = NULL;
    assert_int_equal(call(f, "GET", "/v1/jobs/job-000001", NULL, &o), 200);
    assert_string_equal(json_string_value(json_object_get(o, "team")), "default");
    json_decref(o);
}

static void test_start_without_services(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    f->d = try_open(f, f->cluster, NULL, 0, &err);
    if (!f->d)
        fail_msg("open: %s", err.msg);
    size_t n;
    const tide_route_t *r = tide_daemon_routes(&n);
    f->rt = tide_router_create(r, n, f->auth, f->d);
    advance(f, 30);
    json_t *o = NULL;
    assert_int_equal(call(f, "GET", "/v1/services", NULL, &o), 200);
    assert_int_equal(json_array_size(json_object_get(o, "services")), 0);
    json_decref(o);
    assert_int_equal(call(f, "POST", "/v1/services",
                          "{\"name\": \"chat\", \"gpus_per_replica\": 8, \"replica_rps\": 10, "
                          "\"min_replicas\": 1, \"warmup_s\": 60}",
                          NULL),
                     201);
    advance(f, 0); /* the new epoch starts at once (the loop is woken) */
    advance(f, 61);
    assert_int_equal(call(f, "GET", "/v1/services/chat", NULL, &o), 200);
    assert_int_equal(json_integer_value(json_object_get(o, "ready")), 1);
    json_decref(o);
    crash(f);
    open_daemon(f, 0);
    check_engine(f);
    assert_int_equal(call(f, "GET", "/v1/services/chat", NULL, NULL), 200);
}

static const tide_service_spec_t *engine_chat(fx_t *f)
{
    const tide_engine_t *e = tide_daemon_engine(f->d);
    return tide_engine_service(e, tide_engine_service_find(e, "chat"));
}

static long long cluster_epoch(fx_t *f)
{
    json_t *o = NULL;
    assert_int_equal(call(f, "GET", "/v1/cluster", NULL, &o), 200);
    long long ep = json_integer_value(json_object_get(o, "epoch"));
    json_decref(o);
    return ep;
}

/* Every field of a service posted to the API comes back after a restart
 * from the database (slo_target and stage_s were lost before migration 6),
 * and --services that differ only in one of them replace the stored ones
 * (the startup comparison sees every field). */
static void test_service_fields_survive_restart(void **state)
{
    fx_t *f = *state;
    open_with(f, f->cluster, NULL);
    advance(f, 30);
    assert_int_equal(call(f, "POST", "/v1/services",
                          "{\"name\": \"chat\", \"gpus_per_replica\": 8, \"replica_rps\": 10, "
                          "\"min_replicas\": 1, \"max_replicas\": 3, \"fixed_replicas\": 2, "
                          "\"warmup_s\": 120, \"stage_s\": 45, \"slo_target\": 0.99}",
                          NULL),
                     201);
    advance(f, 0);
    advance(f, 200);
    crash(f);
    open_daemon(f, 0);
    check_engine(f);
    const tide_service_spec_t *sp = engine_chat(f);
    assert_non_null(sp);
    assert_true(sp->slo_target == 0.99);
    assert_int_equal(sp->stage_s, 45);
    assert_int_equal(sp->fixed_replicas, 2);
    assert_int_equal(sp->max_replicas, 3);
    assert_int_equal(sp->warmup_s, 120);
    json_t *o = NULL;
    assert_int_equal(call(f, "GET", "/v1/services/chat", NULL, &o), 200);
    assert_true(json_number_value(json_object_get(o, "slo_target")) == 0.99);
    assert_int_equal(json_integer_value(json_object_get(o, "stage_s")), 45);
    json_decref(o);
    /* the same services again: nothing changes, no new epoch */
    long long ep = cluster_epoch(f);
    tide_service_spec_t same = *sp;
    same.name = "chat";
    crash(f);
    open_with(f, NULL, &same);
    assert_int_equal(cluster_epoch(f), ep);
    /* only stage_s differs, then only slo_target: the new value is taken */
    tide_service_spec_t other = same;
    other.stage_s = 60;
    crash(f);
    open_with(f, NULL, &other);
    assert_int_equal(engine_chat(f)->stage_s, 60);
    assert_true(engine_chat(f)->slo_target == 0.99);
    assert_true(cluster_epoch(f) > ep);
    other.slo_target = 0;
    crash(f);
    open_with(f, NULL, &other);
    assert_true(engine_chat(f)->slo_target == 0);
    assert_int_equal(call(f, "GET", "/v1/services/chat", NULL, &o), 200);
    assert_true(json_number_value(json_object_get(o, "slo_target")) == 0.999); /* the default */
    json_decref(o);
    check_engine(f);
}

/* Bad slo_target values are refused naming the field. */
static void test_service_slo_target_refused(void **state)
{
    fx_t *f = *state;
    open_daemon(f, 1);
    static const char *const bad[] = {"1", "1.5", "-0.1", "\"high\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char b[256];
        snprintf(b, sizeof b,
                 "{\"name\": \"x\", \"gpus_per_replica\": 8, \"replica_rps\": 10, "
                 "\"min_replicas\": 0, \"warmup_s\": 60, \"slo_target\": %s}",
                 bad[i]);
        json_t *o = NULL;
        assert_int_equal(call(f, "POST", "/v1/services", b, &o), 400);
        const char *msg = json_string_value(json_object_get(json_object_get(o, "error"), "message"));
        assert_non_null(msg);
        assert_non_null(strstr(msg, "slo_target"));
        json_decref(o);
    }
}

static void test_options_conflict(void **state)
{
    fx_t *f = *state;
    open_daemon(f, 1);
    submit(f, "z", 8, 60);
    crash(f);
    tide_error_t err = {0};
    tide_cluster_t *other = tide_cluster_parse("2x8", &err);
    assert_null(try_open(f, other, NULL, 0, &err));
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_non_null(strstr(err.msg, "cluster"));
    tide_cluster_destroy(other);
    assert_null(try_open(f, NULL, "static", 0, &err));
    assert_non_null(strstr(err.msg, "policy"));
    /* other services once jobs exist: refused */
    tide_daemon_opts_t o;
    tide_daemon_opts_default(&o);
    tide_service_spec_t s2 = chat;
    s2.min_replicas = 2;
    o.db_path = f->db;
    o.services = &s2;
    o.n_services = 1;
    o.clock = manual_clock;
    o.clock_ctx = &f->clock;
    o.log = f->log;
    assert_null(tide_daemon_open(&o, &err));
    assert_non_null(strstr(err.msg, "services"));
    /* a new database without a cluster */
    snprintf(f->db, sizeof f->db, "%s/new.db", f->dir);
    assert_null(try_open(f, NULL, NULL, 0, &err));
    assert_non_null(strstr(err.msg, "cluster"));
}


/* ------------------------------------------------------------ store faults */

/* Start n 8-GPU jobs and let them run. */
static void run_jobs(fx_t *f, int n)
{
    for (int i = 1; i <= n; i++) {
        char id[16];
        snprintf(id, sizeof id, "r%d", i);
        submit(f, id, 8, 36000);
    }
    advance(f, 1);
    advance(f, 300);
}

/* Every job r1..rn: not preempted, nothing lost; returns how many run. */
static int jobs_intact(fx_t *f, int n)
{
    int running = 0;
    for (int i = 1; i <= n; i++) {
        char id[16];
        snprintf(id, sizeof id, "r%d", i);
        snap_t s;
        assert_int_equal(job_snap(f, id, &s), 0);
        assert_int_equal(s.preemptions, 0);
        assert_true(s.lost == 0);
        running += !strcmp(s.state, "running");
    }
    return running;
}

static int pump_status(fx_t *f, double s, tide_error_t *err)
{
    f->clock += s;
    return tide_daemon_pump(f->d, err);
}

/* Another process holds SQLite's write lock: the steps fail before the
 * engine moves, writes answer 503, readiness fails, liveness holds; once
 * the lock goes the daemon goes on by itself, nothing preempted. */
static void test_held_lock_degrades(void **state)
{
    fx_t *f = *state;
    open_daemon(f, 1);
    run_jobs(f, 3);
    assert_int_equal(jobs_intact(f, 3), 3);
    assert_int_equal(call(f, "GET", "/readyz", NULL, NULL), 200);
    sqlite3 *other = NULL;
    assert_int_equal(sqlite3_open(f->db, &other), SQLITE_OK);
    assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    for (int i = 0; i < 3; i++) {
        tide_error_t err = {0};
        assert_int_equal(pump_status(f, 60, &err), -1);
        assert_non_null(strstr(err.msg, "locked"));
    }
    json_t *o = NULL;
    assert_int_equal(call(f, "GET", "/readyz", NULL, &o), 503);
    assert_string_equal(json_string_value(json_object_get(o, "store")), "degraded");
    json_decref(o);
    assert_int_equal(call(f, "GET", "/healthz", NULL, NULL), 503);
    assert_int_equal(call(f, "GET", "/livez", NULL, NULL), 200);
    assert_int_equal(call(f, "POST", "/v1/jobs", "{\"job_id\": \"late\", \"gpus\": 8, "
                                                 "\"duration_s\": 60}", NULL),
                     503);
    assert_int_equal(call(f, "POST", "/v1/jobs/r1/cancel", NULL, NULL), 503);
    assert_int_equal(call(f, "GET", "/v1/jobs/r1", NULL, NULL), 200); /* reads go on */
    assert_int_equal(call(f, "GET", "/metrics", NULL, NULL), 200);
    assert_int_equal(jobs_intact(f, 3), 3);
    sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(other);
    advance(f, 60); /* recovers on its own */
    assert_int_equal(call(f, "GET", "/readyz", NULL, NULL), 200);
    assert_int_equal(jobs_intact(f, 3), 3);
    submit(f, "late", 8, 60);
    check_engine(f);
    assert_int_equal(db_count(f, "SELECT count(*) FROM events_in WHERE kind = 'job_expired'"), 0);
    crash(f);
    open_daemon(f, 0);
    assert_int_equal(tide_daemon_replay_mismatches(f->d), 0);
}

/* A step that fails after the engine took it (a full disk at commit, any
 * store call of the step): the engine is rebuilt from the store, the
 * backend kept; nothing preempted or lost, the replay stays exact. */
static void test_commit_fault_keeps_jobs(void **state)
{
    fx_t *f = *state;
    open_daemon(f, 1);
    run_jobs(f, 3);
    int failed = 0;
    for (long k = 1; k <= 12; k++) {
        tide_store_fail_at(tide_daemon_store(f->d), k);
        tide_error_t err = {0};
        failed += pump_status(f, 97, &err) < 0;
        tide_store_fail_at(tide_daemon_store(f->d), 0);
        check_engine(f);
        assert_int_equal(tide_daemon_replay_mismatches(f->d), 0);
        assert_int_equal(jobs_intact(f, 3), 3);
        advance(f, 1);
    }
    assert_true(failed >= 6);
    assert_int_equal(db_count(f, "SELECT count(*) FROM events_in WHERE kind = 'job_expired'"), 0);
    assert_int_equal(db_count(f, "SELECT count(*) FROM actions WHERE kind = 'job_stop'"), 0);
    crash(f);
    open_daemon(f, 0);
    assert_int_equal(tide_daemon_replay_mismatches(f->d), 0);
}

/* The database file deleted under the daemon: noticed at the next write,
 * degraded for good (no rebuild: the jobs keep running as they were). */
static void test_lost_file_stays_degraded(void **state)
{
    fx_t *f = *state;
    open_daemon(f, 1);
    run_jobs(f, 2);
    assert_int_equal(unlink(f->db), 0);
    for (int i = 0; i < 3; i++) {
        tide_error_t err = {0};
        assert_int_equal(pump_status(f, 60, &err), -1);
        assert_non_null(strstr(err.msg, "deleted"));
    }
    json_t *o = NULL;
    assert_int_equal(call(f, "GET", "/readyz", NULL, &o), 503);
    assert_string_equal(json_string_value(json_object_get(o, "store")), "lost");
    json_decref(o);
    assert_int_equal(call(f, "POST", "/v1/jobs", "{\"gpus\": 8, \"duration_s\": 60}", NULL), 503);
    assert_int_equal(jobs_intact(f, 2), 2);
}

/* Rows a later edit (or an older build) left out of range: replay
 * quarantines them with a log line and the daemon opens, every time. */
static void test_bad_event_quarantined(void **state)
{
    fx_t *f = *state;
    open_daemon(f, 1);
    run_jobs(f, 2);
    crash(f);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    const char *sql =
        "INSERT INTO events_in (step, time_s, kind, replica, service, source) SELECT max(step), "
        "max(time_s), 'replica_ready', 2000000000, 0, 'backend' FROM steps;"
        "INSERT INTO events_in (step, time_s, kind, service, value, source) SELECT max(step), "
        "max(time_s), 'demand', 0, 1e12, 'api' FROM steps;"
        "INSERT INTO events_in (step, time_s, kind, job, source) SELECT max(step), max(time_s), "
        "'ckpt_committed', -7, 'backend' FROM steps;"
        "INSERT INTO events_in (step, time_s, kind, node, source) SELECT max(step), max(time_s), "
        "'node_failed', 99, 'api' FROM steps;";
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    for (int round = 0; round < 2; round++) {
        open_daemon(f, 0);
        check_engine(f);
        json_t *o = NULL;
        assert_int_equal(call(f, "GET", "/readyz", NULL, &o), 200);
        json_decref(o);
        tide_http_input_t in = {.method = "GET", .path = "/metrics"};
        tide_http_reply_t rep;
        tide_router_handle(f->rt, &in, &rep);
        assert_int_equal(rep.status, 200);
        assert_non_null(strstr(rep.body, "tide_events_quarantined_total 4"));
        tide_http_reply_free(&rep);
        advance(f, 60);
        crash(f);
    }
}

/* Demands from outside are bounded: 1e12 rps is refused at the API. */
static void test_demand_bounds(void **state)
{
    fx_t *f = *state;
    open_daemon(f, 1);
    assert_int_equal(call(f, "POST", "/v1/services/chat/demand", "{\"rps\": 1e12}", NULL), 400);
    assert_int_equal(call(f, "POST", "/v1/services/chat/demand", "{\"rps\": 1e9}", NULL), 200);
    assert_int_equal(call(f, "POST", "/v1/services",
                          "{\"service\": \"x\", \"gpus_per_replica\": 8, \"replica_rps\": 1e10, "
                          "\"min_replicas\": 0, \"warmup_s\": 30}",
                          NULL),
                     400);
    advance(f, 600);
    check_engine(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_crash_recovery, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_pending_in_same_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_step_faults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_submit_faults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_api_flows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_jobs_paging, setup, teardown),
        cmocka_unit_test_setup_teardown(test_start_without_services, setup, teardown),
        cmocka_unit_test_setup_teardown(test_service_fields_survive_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_service_slo_target_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_options_conflict, setup, teardown),
        cmocka_unit_test_setup_teardown(test_held_lock_degrades, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commit_fault_keeps_jobs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lost_file_stays_degraded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_event_quarantined, setup, teardown),
        cmocka_unit_test_setup_teardown(test_demand_bounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_recovery, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
