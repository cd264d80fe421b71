/* The group commit (src/daemon/queue.c): API writes that arrive while a
 * commit is in flight share the next transaction and are all answered
 * after it. Deterministic: the test holds the daemon's lock so that the
 * first writer's commit cannot start, waits (on the batcher's condition
 * variable, no sleeping) until every other writer queued behind it, then
 * lets go: exactly two transactions carry the N writes. An accepted write's
 * audit row commits in its own transaction (the hook adds none after).
 * A leader gathers: it waits (at most one batch's duration) for the writers
 * the last batch saw, so that closed-loop clients share one transaction. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/internal.h"
#include "store/store.h"
#include "util/util.h"

#define N 24

static double manual_clock(void *ctx) { return *(double *)ctx; }

typedef struct writer {
    tide_daemon_t *d;
    const tide_http_req_t *req; /* the HTTP request it answers (NULL: none) */
    char id[32];
    int rc;
    tide_error_t err;
} writer_t;

static void *submit_one(void *arg)
{
    writer_t *w = arg;
    tide_job_request_t jr;
    memset(&jr, 0, sizeof jr);
    jr.id = tide_xstrdup(w->id);
    jr.team = tide_xstrdup("t");
    jr.spec.team = jr.team;
    jr.spec.gpus = 1;
    jr.spec.gang_gpus = 1;
    jr.spec.dp_min = 1;
    jr.spec.priority = 3;
    jr.spec.duration_s = 600;
    char old[32];
    w->rc = dmn_job_submit(w->d, w->req, &jr, old, sizeof old, &w->err);
    tide_job_request_free(&jr);
    return NULL;
}

/* A daemon on a fresh database in a new folder (dir: its name, removed by
 * done_daemon). */
typedef struct fixture {
    char dir[32], db[96];
    tide_cluster_t *c;
    double clock;
    FILE *log;
    tide_daemon_t *d;
} fixture_t;

static void open_daemon(fixture_t *f)
{
    snprintf(f->dir, sizeof f->dir, "/tmp/tide-batch-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->db, sizeof f->db, "%s/tide.db", f->dir);
    tide_error_t err = {0};
    f->c = tide_cluster_parse("4x8", &err);
    f->clock = 1000;
    f->log = fopen("/dev/null", "w");
    tide_daemon_opts_t o;
    tide_daemon_opts_default(&o);
    o.db_path = f->db;
    o.cluster = f->c;
    o.speed = 1;
    o.clock = manual_clock;
    o.clock_ctx = &f->clock;
    o.log = f->log;
    f->d = tide_daemon_open(&o, &err);
    if (!f->d)
        fail_msg("open: %s", err.msg);
}

static void done_daemon(fixture_t *f)
{
    tide_daemon_close(f->d);
    tide_cluster_destroy(f->c);
    fclose(f->log);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
}

static void concurrent_submits_share_transactions(void **state)
{
    (void)state;
    fixture_t f;
    open_daemon(&f);
    tide_daemon_t *d = f.d;
    tide_error_t err = {0};

    writer_t w[N];
    pthread_t th[N];
    tide_daemon_lock(d); /* the first leader waits here: the others queue */
    for (int i = 0; i < N; i++) {
        w[i] = (writer_t){.d = d};
        /* writers 0 and 1 submit the same id: one is refused (409) */
        snprintf(w[i].id, sizeof w[i].id, "j%d", i == 1 ? 0 : i);
        assert_int_equal(pthread_create(&th[i], NULL, submit_one, &w[i]), 0);
    }
    pthread_mutex_lock(&d->gc_mu);
    while (!(d->gc_busy && d->gc_queued == N - 1))
        pthread_cond_wait(&d->gc_cv, &d->gc_mu);
    pthread_mutex_unlock(&d->gc_mu);
    long batches0 = d->gc_batches;
    tide_daemon_unlock(d);
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);

    int ok = 0, taken = 0;
    tide_store_t *st = tide_daemon_store(d);
    for (int i = 0; i < N; i++) {
        if (w[i].rc == 0) {
            ok++;
            tide_store_job_t row;
            assert_int_equal(tide_store_job_get(st, w[i].id, &row, &err), 0);
            tide_store_job_free(&row);
        } else {
            assert_int_equal(w[i].err.code, TIDE_EEXIST);
            taken++;
        }
    }
    assert_int_equal(ok, N - 1);
    assert_int_equal(taken, 1);
    tide_daemon_lock(d);
    assert_int_equal(d->gc_batches - batches0, 2); /* the lone first, then the rest */
    assert_int_equal(d->gc_writes, N);
    assert_int_equal((long)d->pending.n, N - 1); /* queued for the loop only after the commit */
    assert_true(tide_store_jobs_count(st, &err) == N - 1);
    tide_daemon_unlock(d);
    /* the loop feeds them: every acknowledged job reaches the engine */
    assert_true(tide_daemon_pump(d, &err) >= 1);
    tide_daemon_lock(d);
    for (int i = 0; i < N; i++)
        if (w[i].rc == 0)
            assert_true(tide_engine_job_find(tide_daemon_engine(d), w[i].id) >= 0);
    tide_daemon_unlock(d);
    done_daemon(&f);
}

/* A batch whose commit fails answers every write in it with the error and
 * queues nothing for the loop; the next batch works. */
static void failed_commit_answers_all(void **state)
{
    (void)state;
    fixture_t f;
    open_daemon(&f);
    tide_daemon_t *d = f.d;
    tide_error_t err = {0};
    writer_t w[4];
    pthread_t th[4];
    tide_daemon_lock(d);
    for (int i = 0; i < 4; i++) {
        w[i] = (writer_t){.d = d};
        snprintf(w[i].id, sizeof w[i].id, "f%d", i);
        assert_int_equal(pthread_create(&th[i], NULL, submit_one, &w[i]), 0);
    }
    pthread_mutex_lock(&d->gc_mu);
    while (!(d->gc_busy && d->gc_queued == 3))
        pthread_cond_wait(&d->gc_cv, &d->gc_mu);
    pthread_mutex_unlock(&d->gc_mu);
    /* the first batch (f-lone) commits; the second (3 writes: begin, then
     * per write a job-get, an insert, an event append) fails at its commit */
    tide_store_fail_at(tide_daemon_store(d), 5 + 1 + 3 * 3 + 1);
    tide_daemon_unlock(d);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    tide_store_fail_at(tide_daemon_store(d), 0);
    int ok = 0, failed = 0, lost = -1;
    for (int i = 0; i < 4; i++) {
        if (w[i].rc == 0)
            ok++;
        else
            failed++, lost = i, assert_int_equal(w[i].err.code, TIDE_EIO);
    }
    assert_int_equal(ok, 1);
    assert_int_equal(failed, 3);
    tide_daemon_lock(d);
    assert_int_equal((long)d->pending.n, 1);
    assert_true(tide_store_jobs_count(tide_daemon_store(d), &err) == 1);
    tide_daemon_unlock(d);
    /* a writer of the failed batch (whichever thread the lone first batch
     * took, it is not one of them) retries and is accepted */
    writer_t again = {.d = d};
    snprintf(again.id, sizeof again.id, "%s", w[lost].id);
    submit_one(&again);
    assert_int_equal(again.rc, 0);
    done_daemon(&f);
}

static int count_rows(void *ctx, const tide_store_audit_t *a)
{
    int *n = ctx;
    n[0]++;
    n[1] += a->status == 201 && !strcmp(a->kind, "job.submit");
    return 0;
}

/* An accepted write's audit row is in the write's own transaction (one
 * commit for both); the router's hook then writes no second row for it,
 * but does for a request whose row no write carried (a refusal). */
static void audit_row_in_the_write_transaction(void **state)
{
    (void)state;
    fixture_t f;
    open_daemon(&f);
    static const tide_route_t rt = {"POST", "/v1/jobs", TIDE_ROLE_SUBMITTER, NULL, "job.submit"};
    tide_http_req_t req = {.method = "POST", .path = "/v1/jobs", .body = "{\"job_id\":\"a1\"}",
                           .body_len = 16, .peer = "127.0.0.1", .route = &rt};
    tide_store_stats_t s0, s1;
    tide_store_stats(tide_daemon_store(f.d), &s0);
    writer_t w = {.d = f.d, .req = &req, .id = "a1"};
    submit_one(&w);
    assert_int_equal(w.rc, 0);
    tide_store_stats(tide_daemon_store(f.d), &s1);
    assert_int_equal(s1.commits - s0.commits, 1);
    tide_http_reply_t rep = {.status = 201};
    dmn_audit_hook(f.d, &req, &rep); /* carried: no second row, no commit */
    tide_store_stats(tide_daemon_store(f.d), &s0);
    assert_int_equal(s0.commits, s1.commits);
    int n[2] = {0, 0};
    tide_error_t err = {0};
    tide_store_audit_query_t q = {.limit = 100};
    assert_int_equal(tide_store_audit_list(tide_daemon_store(f.d), &q, count_rows, n, &err), 1);
    assert_int_equal(n[1], 1);
    /* the same id again: refused in the batch (409), so the hook records it */
    submit_one(&w);
    assert_int_equal(w.err.code, TIDE_EEXIST);
    rep.status = 409;
    dmn_audit_hook(f.d, &req, &rep);
    n[0] = n[1] = 0;
    assert_int_equal(tide_store_audit_list(tide_daemon_store(f.d), &q, count_rows, n, &err), 2);
    assert_int_equal(n[1], 1);
    done_daemon(&f);
}

/* Wait (gc_mu, on the batcher's condition variable) until a leader is
 * gathering with `queued` writes queued. */
static void wait_gathering(tide_daemon_t *d, long gathers, long queued)
{
    pthread_mutex_lock(&d->gc_mu);
    while (!(d->gc_busy && d->gc_gathers == gathers && d->gc_queued == queued))
        pthread_cond_wait(&d->gc_cv, &d->gc_mu);
    pthread_mutex_unlock(&d->gc_mu);
}

/* Set what the next leader expects: writers, and a batch's duration (its
 * longest wait, s). Returns the gathers so far. */
static long expect_writers(tide_daemon_t *d, long writers, double batch_s)
{
    pthread_mutex_lock(&d->gc_mu);
    d->gc_expect = writers;
    d->gc_batch_s = batch_s;
    long g = d->gc_gathers;
    pthread_mutex_unlock(&d->gc_mu);
    return g;
}

/* Gathering: a leader that finds fewer writers queued than were active
 * around the last batch waits for the missing ones (closed-loop clients
 * coming back), so that they share its transaction. The deadline (one
 * batch's duration) is set far off: only the arrivals end the wait. */
static void leader_gathers_returning_writers(void **state)
{
    (void)state;
    fixture_t f;
    open_daemon(&f);
    tide_daemon_t *d = f.d;
    long gathers0 = expect_writers(d, 3, 600);
    long batches0 = d->gc_batches, writes0 = d->gc_writes;
    writer_t w[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        w[i] = (writer_t){.d = d};
        snprintf(w[i].id, sizeof w[i].id, "g%d", i);
        assert_int_equal(pthread_create(&th[i], NULL, submit_one, &w[i]), 0);
        /* the first leads and waits; the second joins its batch; the third
         * completes it (the leader takes the batch at once: no state to see) */
        if (i < 2)
            wait_gathering(d, gathers0 + 1, i + 1);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].rc, 0);
    }
    tide_daemon_lock(d);
    assert_int_equal(d->gc_batches - batches0, 1); /* one transaction for the three */
    assert_int_equal(d->gc_writes - writes0, 3);
    assert_int_equal(d->gc_gathers - gathers0, 1);
    assert_int_equal(d->gc_expect, 3); /* its three writers, none queued behind */
    assert_true(d->gc_batch_s < 600);  /* the batch's duration went into the average */
    tide_daemon_unlock(d);
    done_daemon(&f);
}

/* The writers expected do not come: the leader commits what it has once a
 * batch's duration passed, and expects no more than it saw. A lone writer
 * (expect 1) never waits. */
static void gathering_ends_at_the_deadline(void **state)
{
    (void)state;
    fixture_t f;
    open_daemon(&f);
    tide_daemon_t *d = f.d;
    long gathers0 = expect_writers(d, 4, 0.005);
    long batches0 = d->gc_batches;
    writer_t w = {.d = d, .id = "lone"};
    submit_one(&w);
    assert_int_equal(w.rc, 0);
    assert_int_equal(d->gc_batches - batches0, 1);
    assert_int_equal(d->gc_gathers - gathers0, 1);
    assert_int_equal(d->gc_expect, 1);
    snprintf(w.id, sizeof w.id, "lone2");
    submit_one(&w);
    assert_int_equal(w.rc, 0);
    assert_int_equal(d->gc_gathers - gathers0, 1); /* no wait this time */
    assert_int_equal(d->gc_batches - batches0, 2);
    done_daemon(&f);
}

/* Readers on different threads hold different read connections at once
 * (a read does not queue behind another), each seeing committed rows. */
typedef struct reader {
    tide_daemon_t *d;
    tide_store_t *got;
    int found;
    pthread_mutex_t *mu;
    pthread_cond_t *cv;
    int *step; /* 1: holding, 2: may release */
} reader_t;

static void *read_one(void *arg)
{
    reader_t *r = arg;
    r->got = dmn_rd(r->d);
    tide_store_job_t row;
    r->found = tide_store_job_get(r->got, "seen", &row, NULL) == 0;
    if (r->found)
        tide_store_job_free(&row);
    pthread_mutex_lock(r->mu);
    *r->step = 1;
    pthread_cond_broadcast(r->cv);
    while (*r->step != 2)
        pthread_cond_wait(r->cv, r->mu);
    pthread_mutex_unlock(r->mu);
    dmn_rd_done(r->d);
    return NULL;
}

/* A daemon (open_daemon) with one committed job, "seen". */
static tide_daemon_t *open_with_seen(fixture_t *f)
{
    open_daemon(f);
    writer_t w = {.d = f->d, .id = "seen"};
    submit_one(&w);
    assert_int_equal(w.rc, 0);
    return f->d;
}

static void readers_hold_their_own_connections(void **state)
{
    (void)state;
    fixture_t f;
    tide_daemon_t *d = open_with_seen(&f);
    assert_true(d->n_rdp > 1);
    tide_store_t *mine = dmn_rd(d); /* held while the other thread reads */
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    int step = 0;
    reader_t r = {.d = d, .mu = &mu, .cv = &cv, .step = &step};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, read_one, &r), 0);
    pthread_mutex_lock(&mu);
    while (step != 1)
        pthread_cond_wait(&cv, &mu);
    step = 2;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(th, NULL);
    assert_non_null(r.got);
    assert_ptr_not_equal(r.got, mine);
    assert_ptr_not_equal(r.got, tide_daemon_store(d)); /* never the writer's */
    assert_true(r.found);
    dmn_rd_done(d);
    done_daemon(&f);
}

/* Inside the step's store writes (the rows and the fsync) the state lock
 * is free: a read does not wait for a step writing to disk. The hook runs
 * on the stepping thread, so the lock it finds free is not its own. */
typedef struct window {
    int calls, lock_free;
    tide_store_t *rd;
    int found;
} window_t;

static void in_window(tide_daemon_t *d, void *ctx)
{
    window_t *w = ctx;
    w->calls++;
    if (pthread_mutex_trylock(&d->mu) == 0) {
        w->lock_free++;
        pthread_mutex_unlock(&d->mu);
    }
    tide_store_t *rd = dmn_rd(d); /* a reader's connection: committed rows */
    tide_store_job_t row;
    w->found += tide_store_job_get(rd, "seen", &row, NULL) == 0;
    if (w->found)
        tide_store_job_free(&row);
    dmn_rd_done(d);
}

static void step_writes_let_readers_in(void **state)
{
    (void)state;
    fixture_t f;
    tide_daemon_t *d = open_with_seen(&f);
    window_t win = {0};
    d->on_persist = in_window;
    d->on_persist_ctx = &win;
    f.clock += 60;
    tide_error_t err = {0};
    assert_true(tide_daemon_pump(d, &err) > 0);
    assert_true(win.calls > 0);
    assert_int_equal(win.lock_free, win.calls); /* free in every step's window */
    assert_int_equal(win.found, win.calls);     /* and the committed job readable */
    d->on_persist = NULL;
    done_daemon(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(concurrent_submits_share_transactions),
        cmocka_unit_test(failed_commit_answers_all),
        cmocka_unit_test(audit_row_in_the_write_transaction),
        cmocka_unit_test(leader_gathers_returning_writers),
        cmocka_unit_test(gathering_ends_at_the_deadline),
        cmocka_unit_test(readers_hold_their_own_connections),
        cmocka_unit_test(step_writes_let_readers_in),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
