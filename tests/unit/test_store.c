/* The SQLite store (src/store): migrations from an empty database, on
 * re-open and from version 5 (services gain slo_target and stage_s), every
 * service field round-tripped, the event log (append, claim, replay, pending, feed), job
 * uniqueness and listing, usage snapshots, and fault injection: whichever
 * store call fails, a transaction leaves nothing half-written. */
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

#include "store/store.h"
#include "util/util.h"

typedef struct fx {
    char dir[64];
    char path[128];
} fx_t;

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/tide-store-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/t.db", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", f->dir);
    free(f);
    return 0;
}

static tide_store_t *open_ok(const char *path)
{
    tide_error_t err = {0};
    tide_store_t *s = tide_store_open(path, &err);
    if (!s)
        fail_msg("open %s: %s", path, err.msg);
    return s;
}

static tide_job_spec_t spec(const char *id, const char *team)
{
    return (tide_job_spec_t){.id = id, .team = team, .priority = 2, .gpus = 8, .gang_gpus = 8,
                             .dp_min = 1, .duration_s = 3600, .ckpt_interval_s = 1800,
                             .ckpt_s = 60, .restore_s = 120};
}

static int insert_job(tide_store_t *s, const char *id, const char *team, tide_error_t *err)
{
    tide_store_job_t j = {.spec = spec(id, team), .submitted_s = 5, .updated_s = 5};
    return tide_store_job_insert(s, &j, err);
}

/* --------------------------------------------------------------- schema */

static void test_migrations(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    int latest = tide_store_schema_latest();
    assert_true(latest >= 1);
    tide_store_t *s = open_ok(f->path);
    assert_int_equal(tide_store_version(s, &err), latest);
    assert_int_equal(tide_store_meta_set(s, "k", "v1", &err), 0);
    char *v = tide_store_meta_get(s, "missing", &err);
    assert_null(v);
    assert_int_equal(err.code, TIDE_ENOENT);
    tide_store_close(s);
    /* re-open: nothing to migrate, data kept */
    s = open_ok(f->path);
    assert_int_equal(tide_store_version(s, &err), latest);
    v = tide_store_meta_get(s, "k", &err);
    assert_string_equal(v, "v1");
    free(v);
    assert_int_equal(tide_store_meta_set(s, "k", "v2", &err), 0);
    v = tide_store_meta_get(s, "k", &err);
    assert_string_equal(v, "v2");
    free(v);
    tide_store_close(s);
}

static void test_newer_schema_refused(void **state)
{
    fx_t *f = *state;
    tide_store_t *s = open_ok(f->path);
    tide_store_close(s);
    /* pretend a newer tide wrote it */
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "INSERT INTO schema_version VALUES (999, 'later')", NULL,
                                  NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    tide_error_t err = {0};
    assert_null(tide_store_open(f->path, &err));
    assert_int_equal(err.code, TIDE_ESTATE);
    assert_non_null(strstr(err.msg, "newer"));
}

static void test_not_a_database(void **state)
{
    fx_t *f = *state;
    FILE *fp = fopen(f->path, "w");
    assert_non_null(fp);
    fputs("this is not a database, just text that is long enough to be a header....\n", fp);
    fclose(fp);
    tide_error_t err = {0};
    assert_null(tide_store_open(f->path, &err));
    assert_int_equal(err.code, TIDE_EIO);
}

/* ------------------------------------------------------------- services */

static const tide_service_spec_t svc_full = {
    .name = "chat", .gpus_per_replica = 8, .replica_rps = 12.5, .min_replicas = 2,
    .max_replicas = 6, .warmup_s = 300, .gpu_types = 5, .fixed_replicas = 4,
    .slo_target = 0.995, .stage_s = 120};

static void assert_same_service(const tide_service_spec_t *a, const tide_service_spec_t *b)
{
    assert_string_equal(a->name, b->name);
    assert_int_equal(a->gpus_per_replica, b->gpus_per_replica);
    assert_true(a->replica_rps == b->replica_rps);
    assert_int_equal(a->min_replicas, b->min_replicas);
    assert_int_equal(a->max_replicas, b->max_replicas);
    assert_int_equal(a->warmup_s, b->warmup_s);
    assert_int_equal(a->gpu_types, b->gpu_types);
    assert_int_equal(a->fixed_replicas, b->fixed_replicas);
    assert_true(a->slo_target == b->slo_target);
    assert_int_equal(a->stage_s, b->stage_s);
}

/* Every field of a service spec is stored and read back, across a re-open. */
static void test_services_round_trip(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    tide_service_spec_t v[2] = {svc_full, {.name = "embed", .gpus_per_replica = 1,
                                           .replica_rps = 3, .min_replicas = 0, .warmup_s = 30}};
    tide_store_t *s = open_ok(f->path);
    assert_int_equal(tide_store_services_replace(s, v, 2, &err), 0);
    tide_store_close(s);
    s = open_ok(f->path);
    tide_service_spec_t *got = NULL;
    size_t n = 0;
    assert_int_equal(tide_store_services_load(s, &got, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_same_service(&got[0], &v[0]);
    assert_same_service(&got[1], &v[1]); /* zeros stay zeros (the defaults) */
    tide_store_services_free(got, n);
    tide_store_close(s);
}

/* A database of schema version 5 (services without slo_target and stage_s)
 * opens, migrates, and its services come back with those at 0, the meaning
 * they had; new ones keep them. The v5 database is made by undoing
 * migration 6 on a fresh one (SQLite >= 3.35 drops columns). */
static void test_services_migrate_from_v5(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    tide_store_close(open_ok(f->path));
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    const char *v5 = "ALTER TABLE services DROP COLUMN slo_target;"
                     "ALTER TABLE services DROP COLUMN stage_s;"
                     "DELETE FROM schema_version WHERE version >= 6;"
                     "INSERT INTO services(idx, name, gpus_per_replica, replica_rps, min_replicas, "
                     "max_replicas, warmup_s, gpu_types, fixed_replicas) "
                     "VALUES (0, 'chat', 8, 12.5, 2, 6, 300, 5, 4);";
    char *msg = NULL;
    if (sqlite3_exec(db, v5, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("make a v5 database: %s", msg ? msg : "?");
    sqlite3_close(db);
    tide_store_t *s = open_ok(f->path);
    assert_int_equal(tide_store_version(s, &err), tide_store_schema_latest());
    assert_true(tide_store_schema_latest() >= 6);
    tide_service_spec_t *got = NULL;
    size_t n = 0;
    assert_int_equal(tide_store_services_load(s, &got, &n, &err), 0);
    assert_int_equal(n, 1);
    tide_service_spec_t want = svc_full;
    want.slo_target = 0;
    want.stage_s = 0;
    assert_same_service(&got[0], &want);
    tide_store_services_free(got, n);
    assert_int_equal(tide_store_services_replace(s, &svc_full, 1, &err), 0);
    assert_int_equal(tide_store_services_load(s, &got, &n, &err), 0);
    assert_same_service(&got[0], &svc_full);
    tide_store_services_free(got, n);
    tide_store_close(s);
}

/* ----------------------------------------------------------------- jobs */

typedef struct list_ctx {
    char ids[16][32];
    int n;
} list_ctx_t;

static int collect(void *ctx, const tide_store_job_t *j)
{
    list_ctx_t *c = ctx;
    if (c->n < 16)
        snprintf(c->ids[c->n++], 32, "%s", j->spec.id);
    return 0;
}

static void test_jobs_unique(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    tide_store_t *s = open_ok(f->path);
    assert_int_equal(insert_job(s, "a", "t1", &err), 0);
    assert_int_equal(insert_job(s, "b", "t2", &err), 0);
    assert_int_equal(insert_job(s, "a", "t2", &err), -1);
    assert_int_equal(err.code, TIDE_EEXIST);
    assert_int_equal(tide_store_jobs_count(s, &err), 2);
    tide_store_job_t j;
    assert_int_equal(tide_store_job_get(s, "a", &j, &err), 0);
    assert_string_equal(j.spec.team, "t1");
    assert_string_equal(j.state, "queued");
    assert_int_equal(j.spec.gpus, 8);
    tide_store_job_free(&j);
    assert_int_equal(tide_store_job_get(s, "zz", &j, &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
    assert_int_equal(tide_store_job_set_state(s, "b", "running", 9, &err), 0);
    assert_int_equal(tide_store_job_set_state(s, "zz", "running", 9, &err), -1);
    /* filters and cursor */
    assert_int_equal(insert_job(s, "c", "t1", &err), 0);
    list_ctx_t c = {0};
    tide_store_job_filter_t fl = {.team = "t1"};
    assert_int_equal(tide_store_jobs_list(s, &fl, collect, &c, &err), 2);
    assert_string_equal(c.ids[0], "a");
    assert_string_equal(c.ids[1], "c");
    memset(&c, 0, sizeof c);
    fl = (tide_store_job_filter_t){.state = "running"};
    assert_int_equal(tide_store_jobs_list(s, &fl, collect, &c, &err), 1);
    assert_string_equal(c.ids[0], "b");
    memset(&c, 0, sizeof c);
    tide_store_job_get(s, "a", &j, &err);
    fl = (tide_store_job_filter_t){.after_seq = j.seq, .limit = 1};
    tide_store_job_free(&j);
    assert_int_equal(tide_store_jobs_list(s, &fl, collect, &c, &err), 1);
    assert_string_equal(c.ids[0], "b");
    tide_store_close(s);
    /* uniqueness survives a re-open (the sequence continues) */
    s = open_ok(f->path);
    assert_int_equal(insert_job(s, "a", "t1", &err), -1);
    assert_int_equal(err.code, TIDE_EEXIST);
    assert_int_equal(insert_job(s, "d", "t1", &err), 0);
    tide_store_close(s);
}

/* --------------------------------------------------------------- events */

typedef struct rec {
    int64_t step[8];
    tide_time_t t[8];
    int nev[8], nact[8];
    int kinds[8][4];
    char job0[8][32];
    int gpus0[8];
    int n;
} rec_t;

static int on_step(void *ctx, int64_t step, tide_time_t t, const tide_store_event_t *ev, size_t n,
                   const tide_store_action_rec_t *a, size_t na)
{
    rec_t *r = ctx;
    assert_true(r->n < 8);
    r->step[r->n] = step;
    r->t[r->n] = t;
    r->nev[r->n] = (int)n;
    r->nact[r->n] = (int)na;
    for (size_t i = 0; i < n && i < 4; i++)
        r->kinds[r->n][i] = ev[i].ev.kind;
    if (n && ev[0].job_id)
        snprintf(r->job0[r->n], 32, "%s", ev[0].job_id);
    if (n && ev[0].ev.kind == TIDE_EV_JOB_SUBMIT) {
        assert_non_null(ev[0].ev.job_spec);
        r->gpus0[r->n] = ev[0].ev.job_spec->gpus;
        assert_non_null(ev[0].ev.job_spec->team);
    }
    if (na) {
        assert_int_equal(a[0].kind, TIDE_ACT_JOB_START);
        assert_int_equal(a[0].width, 1);
        assert_int_equal(a[0].n_gpus, 8);
    }
    r->n++;
    return 0;
}

static void test_event_log(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    tide_store_t *s = open_ok(f->path);
    /* an accepted submit (pending), then a step that feeds it */
    assert_int_equal(tide_store_begin(s, &err), 0);
    assert_int_equal(insert_job(s, "j1", "t1", &err), 0);
    tide_store_event_t e1 = {.time_s = 10,
                             .ev = {.kind = TIDE_EV_JOB_SUBMIT, .job = -1, .service = -1,
                                    .replica = -1, .node = -1},
                             .job_id = "j1", .source = "api"};
    assert_int_equal(tide_store_event_append(s, &e1, &err), 0);
    assert_int_equal(tide_store_commit(s, &err), 0);
    assert_true(e1.seq > 0);
    rec_t r = {0};
    assert_int_equal(tide_store_pending(s, on_step, &r, &err), 0);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.nev[0], 1);
    assert_int_equal(r.gpus0[0], 8);

    assert_int_equal(tide_store_begin(s, &err), 0);
    assert_int_equal(tide_store_step_append(s, 1, 10, 1, &err), 0);
    assert_int_equal(tide_store_events_claim(s, 1, &err), 1);
    tide_action_t a = {.kind = TIDE_ACT_JOB_START, .job = 0, .service = -1, .replica = -1,
                       .lease = -1, .width = 1, .n_gpus = 8};
    int32_t gpus[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    assert_int_equal(tide_store_action_append(s, 1, 10, &a, gpus, "j1", NULL, &err), 0);
    assert_int_equal(tide_store_commit(s, &err), 0);
    /* an empty step (tick) and a step of another epoch */
    assert_int_equal(tide_store_begin(s, &err), 0);
    assert_int_equal(tide_store_step_append(s, 2, 70, 1, &err), 0);
    tide_store_event_t e2 = {.step = 2, .time_s = 70,
                             .ev = {.kind = TIDE_EV_JOB_PHASE, .job = 0, .service = -1,
                                    .replica = -1, .node = -1, .phase = TIDE_PHASE_TRAINING,
                                    .value = 12.5},
                             .job_id = "j1", .source = "backend"};
    assert_int_equal(tide_store_event_append(s, &e2, &err), 0);
    assert_int_equal(tide_store_step_append(s, 3, 80, 2, &err), 0);
    assert_int_equal(tide_store_commit(s, &err), 0);
    tide_store_close(s);

    s = open_ok(f->path);
    memset(&r, 0, sizeof r);
    assert_int_equal(tide_store_replay(s, 1, on_step, &r, &err), 0);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.step[0], 1);
    assert_int_equal(r.t[0], 10);
    assert_int_equal(r.nev[0], 1);
    assert_int_equal(r.kinds[0][0], TIDE_EV_JOB_SUBMIT);
    assert_string_equal(r.job0[0], "j1");
    assert_int_equal(r.nact[0], 1);
    assert_int_equal(r.nev[1], 1);
    assert_int_equal(r.kinds[1][0], TIDE_EV_JOB_PHASE);
    memset(&r, 0, sizeof r);
    assert_int_equal(tide_store_replay(s, 2, on_step, &r, &err), 0);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.nev[0], 0);
    memset(&r, 0, sizeof r);
    assert_int_equal(tide_store_pending(s, on_step, &r, &err), 0);
    assert_int_equal(r.n, 0); /* nothing pending any more */
    int64_t last;
    tide_time_t lt;
    assert_int_equal(tide_store_last_step(s, &last, &lt, &err), 0);
    assert_int_equal(last, 3);
    assert_int_equal(lt, 80);
    /* the sequence shared by events and actions continues after a re-open */
    tide_store_event_t e3 = {.time_s = 90, .ev = {.kind = TIDE_EV_TICK, .job = -1, .service = -1,
                                                   .replica = -1, .node = -1}};
    assert_int_equal(tide_store_event_append(s, &e3, &err), 0);
    assert_int_equal(e3.seq, e2.seq + 1);
    tide_store_close(s);
}

typedef struct feed {
    int n, actions;
    int64_t last;
    char kinds[8][24];
} feed_t;

static int on_feed(void *ctx, const tide_store_feed_row_t *r)
{
    feed_t *f = ctx;
    assert_true(r->seq > f->last);
    f->last = r->seq;
    if (f->n < 8)
        snprintf(f->kinds[f->n], 24, "%s", r->kind);
    f->n++;
    f->actions += r->is_action;
    return 0;
}

static void test_feed(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    tide_store_t *s = open_ok(f->path);
    tide_store_event_t t = {.time_s = 1, .ev = {.kind = TIDE_EV_TICK, .job = -1, .service = -1,
                                                 .replica = -1, .node = -1}};
    tide_store_event_t d = {.time_s = 1, .ev = {.kind = TIDE_EV_DEMAND, .job = -1, .service = 0,
                                                 .replica = -1, .node = -1, .value = 3},
                            .service_name = "chat"};
    assert_int_equal(tide_store_event_append(s, &t, &err), 0);
    assert_int_equal(tide_store_event_append(s, &d, &err), 0);
    tide_action_t a = {.kind = TIDE_ACT_REPLICA_START, .reason = TIDE_R_SCALE, .job = -1,
                       .service = 0, .replica = 0, .lease = -1, .n_gpus = 8};
    assert_int_equal(tide_store_action_append(s, 1, 1, &a, NULL, NULL, "chat", &err), 0);
    feed_t fd = {0};
    assert_int_equal(tide_store_feed(s, 0, 100, on_feed, &fd, &err), 2);
    assert_int_equal(fd.actions, 1);
    assert_string_equal(fd.kinds[0], "demand");
    assert_string_equal(fd.kinds[1], "replica_start");
    feed_t fd2 = {.last = fd.last};
    assert_int_equal(tide_store_feed(s, fd.last, 100, on_feed, &fd2, &err), 0);
    tide_store_close(s);
}

/* ----------------------------------------------------------------- usage */

typedef struct usum {
    double sum;
    int n;
} usum_t;

static int on_usage(void *ctx, const tide_store_usage_t *r)
{
    usum_t *u = ctx;
    u->sum += r->gpu_s;
    u->n++;
    return 0;
}

static void test_usage(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    tide_store_t *s = open_ok(f->path);
    tide_store_usage_t rows[2] = {{"team", "t1", "p2", "training", "D", 100},
                                  {"idle", "", "none", "idle", "B", 50}};
    assert_int_equal(tide_store_usage_put(s, 3600, rows, 2, &err), 0);
    rows[0].gpu_s = 300;
    assert_int_equal(tide_store_usage_put(s, 7200, rows, 1, &err), 0);
    usum_t u = {0};
    tide_time_t at;
    assert_int_equal(tide_store_usage_at(s, 100, &at, on_usage, &u, &err), 0);
    assert_int_equal(at, -1);
    assert_int_equal(tide_store_usage_at(s, 5000, &at, on_usage, &u, &err), 0);
    assert_int_equal(at, 3600);
    assert_int_equal(u.n, 2);
    assert_true(u.sum == 150);
    u = (usum_t){0};
    assert_int_equal(tide_store_usage_at(s, 9999, &at, on_usage, &u, &err), 0);
    assert_int_equal(at, 7200);
    assert_true(u.sum == 300);
    assert_int_equal(tide_store_usage_last(s, &at, &err), 0);
    assert_int_equal(at, 7200);
    tide_store_close(s);
}

/* --------------------------------------------------------------- faults */

/* Rows of a table, read with a separate connection (what a new process sees). */
static int count_rows(const char *path, const char *table)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return -1;
    }
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
    sqlite3_stmt *st = NULL;
    int n = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

/* The daemon's submit transaction: job row + pending event; then a step
 * transaction: step row + claim + action. The n-th call fails: either all of
 * a transaction is there or none of it. */
static void test_fault_injection(void **state)
{
    fx_t *f = *state;
    int failures = 0;
    for (long n = 1; n <= 12; n++) {
        unlink(f->path);
        char wal[160];
        snprintf(wal, sizeof wal, "%s-wal", f->path);
        unlink(wal);
        tide_store_t *s = open_ok(f->path);
        tide_error_t err = {0};
        tide_store_fail_at(s, n);
        int ok1 = tide_store_begin(s, &err) == 0;
        tide_store_job_t j = {.spec = spec("j", "t"), .submitted_s = 1, .updated_s = 1};
        tide_store_event_t e = {.time_s = 1, .ev = {.kind = TIDE_EV_JOB_SUBMIT, .job = -1,
                                                    .service = -1, .replica = -1, .node = -1},
                                .job_id = "j", .source = "api"};
        ok1 = ok1 && tide_store_job_insert(s, &j, &err) == 0;
        ok1 = ok1 && tide_store_event_append(s, &e, &err) == 0;
        ok1 = ok1 && tide_store_commit(s, &err) == 0;
        if (!ok1) {
            tide_store_rollback(s);
            assert_non_null(strstr(err.msg, "injected"));
        }
        int ok2 = 0;
        if (ok1) {
            tide_action_t a = {.kind = TIDE_ACT_JOB_START, .job = 0, .service = -1,
                               .replica = -1, .lease = -1, .width = 1, .n_gpus = 8};
            ok2 = tide_store_begin(s, &err) == 0;
            ok2 = ok2 && tide_store_step_append(s, 1, 1, 1, &err) == 0;
            ok2 = ok2 && tide_store_events_claim(s, 1, &err) >= 0;
            ok2 = ok2 && tide_store_action_append(s, 1, 1, &a, NULL, "j", NULL, &err) == 0;
            ok2 = ok2 && tide_store_commit(s, &err) == 0;
            if (!ok2)
                tide_store_rollback(s);
        }
        failures += !ok1 || !ok2;
        tide_store_close(s);
        int jobs = count_rows(f->path, "jobs"), evs = count_rows(f->path, "events_in");
        int steps = count_rows(f->path, "steps"), acts = count_rows(f->path, "actions");
        assert_true(jobs >= 0 && evs >= 0 && steps >= 0 && acts >= 0);
        /* first transaction: all or nothing */
        assert_int_equal(jobs, ok1 ? 1 : 0);
        assert_int_equal(evs, ok1 ? 1 : 0);
        /* second: all or nothing */
        assert_int_equal(steps, ok2 ? 1 : 0);
        assert_int_equal(acts, ok2 ? 1 : 0);
        /* the pending event is claimed exactly when the step is there */
        s = open_ok(f->path);
        rec_t r = {0};
        assert_int_equal(tide_store_pending(s, on_step, &r, &err), 0);
        assert_int_equal(r.n, ok1 && !ok2 ? 1 : 0);
        tide_store_close(s);
    }
    assert_true(failures >= 8); /* each of the 9 calls failed once */
}

/* ---------------------------------------------------------- audit trail */

static int audit_collect(void *ctx, const tide_store_audit_t *a)
{
    char *out = ctx;
    size_t l = strlen(out);
    snprintf(out + l, 512 - l, "%lld:%s:%s:%d;", (long long)a->id, a->team, a->kind, a->status);
    return 0;
}

static void audit_add(tide_store_t *s, double t, const char *team, const char *kind, int status,
                      const char *body)
{
    tide_error_t err = {0};
    tide_store_audit_t a = {.time = t, .team = team, .role = "submitter", .peer = "127.0.0.1",
                            .method = "POST", .path = "/v1/jobs", .kind = kind,
                            .request = body, .bytes = -1, .status = status,
                            .error = status >= 400 ? "EINVAL" : NULL};
    if (tide_store_audit_append(s, &a, &err) < 0)
        fail_msg("append: %s", err.msg);
    assert_true(a.id > 0);
}

static void test_audit(void **state)
{
    fx_t *f = *state;
    tide_store_t *s = open_ok(f->path);
    audit_add(s, 100, "red", "job.submit", 201, "{\"gpus\":8}");
    audit_add(s, 200, "blue", "job.cancel", 409, "");
    audit_add(s, 300, "red", "job.cancel", 200, "");
    char out[512] = "";
    tide_error_t err = {0};
    tide_store_audit_query_t q = {.since = 0};
    assert_int_equal(tide_store_audit_list(s, &q, audit_collect, out, &err), 3);
    assert_string_equal(out, "1:red:job.submit:201;2:blue:job.cancel:409;3:red:job.cancel:200;");
    out[0] = '\0';
    q = (tide_store_audit_query_t){.since = 150, .team = "red"};
    assert_int_equal(tide_store_audit_list(s, &q, audit_collect, out, &err), 1);
    assert_string_equal(out, "3:red:job.cancel:200;");
    out[0] = '\0';
    q = (tide_store_audit_query_t){.kind = "job.cancel", .limit = 1}; /* the oldest first */
    assert_int_equal(tide_store_audit_list(s, &q, audit_collect, out, &err), 1);
    assert_string_equal(out, "2:blue:job.cancel:409;");
    out[0] = '\0';
    q.after = 2; /* the cursor: the next page */
    assert_int_equal(tide_store_audit_list(s, &q, audit_collect, out, &err), 1);
    assert_string_equal(out, "3:red:job.cancel:200;");
    /* the body: bounded copy, whole length and SHA-256 of the whole */
    size_t big = TIDE_STORE_AUDIT_BODY * 3;
    char *body = malloc(big + 1);
    memset(body, 'x', big);
    body[big] = '\0';
    audit_add(s, 400, "red", "job.submit", 201, body);
    free(body);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT length(request), bytes, digest FROM audit "
                                            "WHERE id = 4", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), TIDE_STORE_AUDIT_BODY);
    assert_int_equal(sqlite3_column_int(st, 1), (int)big);
    char want[65];
    char *xs = malloc(big);
    memset(xs, 'x', big);
    tide_sha256_hex(xs, big, want);
    free(xs);
    assert_string_equal((const char *)sqlite3_column_text(st, 2), want);
    sqlite3_finalize(st);
    /* append-only: an update is refused */
    char *msg = NULL;
    assert_int_not_equal(sqlite3_exec(db, "UPDATE audit SET team = 'x' WHERE id = 1", NULL, NULL,
                                      &msg), SQLITE_OK);
    assert_non_null(strstr(msg, "append-only"));
    sqlite3_free(msg);
    sqlite3_close(db);
    /* retention: by age, then by count (the oldest go first) */
    assert_int_equal(tide_store_audit_prune(s, 150, 0, &err), 1);
    assert_int_equal(tide_store_audit_prune(s, 0, 2, &err), 1);
    out[0] = '\0';
    q = (tide_store_audit_query_t){.since = 0};
    assert_int_equal(tide_store_audit_list(s, &q, audit_collect, out, &err), 2);
    assert_string_equal(out, "3:red:job.cancel:200;4:red:job.submit:201;");
    assert_int_equal(tide_store_audit_prune(s, 0, 0, &err), 0); /* no limits: nothing */
    tide_store_close(s);
}

static void test_sha256(void **state)
{
    (void)state;
    char h[65];
    tide_sha256_hex("", 0, h);
    assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    tide_sha256_hex("abc", 3, h);
    assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 bytes */
    tide_sha256_hex(m, strlen(m), h);
    assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

/* The model pipeline's documents and event log (src/store/pipeline.c). */
typedef struct pipe_rows {
    char keys[8][64], vals[8][64];
    int n;
} pipe_rows_t;

static int pipe_row(void *ctx, const char *key, const char *value)
{
    pipe_rows_t *r = ctx;
    if (r->n >= 8)
        return -1;
    snprintf(r->keys[r->n], sizeof r->keys[r->n], "%s", key);
    snprintf(r->vals[r->n++], sizeof r->vals[0], "%s", value);
    return 0;
}

static void pipe_event(void *ctx, tide_time_t t, int version, const char *kind, const char *detail)
{
    pipe_rows_t *r = ctx;
    snprintf(r->keys[r->n], sizeof r->keys[0], "%lld/%d/%s", (long long)t, version, kind);
    snprintf(r->vals[r->n++], sizeof r->vals[0], "%s", detail ? detail : "(null)");
}

static void test_pipeline_rows(void **state)
{
    fx_t *f = *state;
    tide_store_t *s = open_ok(f->path);
    tide_error_t err = {0};
    assert_int_equal(tide_store_pipe_put(s, "version", "m/000002", "{\"v\":2}", &err), 0);
    assert_int_equal(tide_store_pipe_put(s, "version", "m/000001", "{\"v\":1}", &err), 0);
    assert_int_equal(tide_store_pipe_put(s, "version", "m/000001", "{\"v\":11}", &err), 0);
    assert_int_equal(tide_store_pipe_put(s, "model", "m", "{}", &err), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(tide_store_pipe_event_add(s, 10 * i, "m", i, "step", i ? "x" : NULL, &err), 0);
    tide_store_close(s);
    s = open_ok(f->path); /* it survives a reopen */
    pipe_rows_t r = {0};
    assert_int_equal(tide_store_pipe_list(s, "version", pipe_row, &r, &err), 0);
    assert_int_equal(r.n, 2); /* in key order, the replaced one once */
    assert_string_equal(r.keys[0], "m/000001");
    assert_string_equal(r.vals[0], "{\"v\":11}");
    assert_string_equal(r.vals[1], "{\"v\":2}");
    memset(&r, 0, sizeof r);
    assert_int_equal(tide_store_pipe_events(s, "m", 3, pipe_event, &r, &err), 0);
    assert_int_equal(r.n, 3); /* the latest 3, oldest first */
    assert_string_equal(r.keys[0], "20/2/step");
    assert_string_equal(r.keys[2], "40/4/step");
    memset(&r, 0, sizeof r);
    assert_int_equal(tide_store_pipe_events(s, "other", 10, pipe_event, &r, &err), 0);
    assert_int_equal(r.n, 0);
    tide_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_migrations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_services_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_services_migrate_from_v5, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newer_schema_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_database, setup, teardown),
        cmocka_unit_test_setup_teardown(test_jobs_unique, setup, teardown),
        cmocka_unit_test_setup_teardown(test_event_log, setup, teardown),
        cmocka_unit_test_setup_teardown(test_feed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_usage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_injection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_audit, setup, teardown),
        cmocka_unit_test(test_sha256),
        cmocka_unit_test_setup_teardown(test_pipeline_rows, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
