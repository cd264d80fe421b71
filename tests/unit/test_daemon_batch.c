/* The group commit (src/daemon/queue.c): API writes that arrive while a
 * commit is in flight share the next transaction and are all answered
 * after it. Deterministic: the test holds the daemon's lock so that the
 * first writer's commit cannot start, waits (on the batcher's condition
 * variable, no sleeping) until every other writer queued behind it, then
 * lets go: exactly two transactions carry the N writes. */
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
    w->rc = dmn_job_submit(w->d, NULL, &jr, old, sizeof old, &w->err);
    tide_job_request_free(&jr);
    return NULL;
}

static void concurrent_submits_share_transactions(void **state)
{
    (void)state;
    char dir[] = "/tmp/tide-batch-XXXXXX", db[96];
    assert_non_null(mkdtemp(dir));
    snprintf(db, sizeof db, "%s/tide.db", dir);
    tide_error_t err = {0};
    tide_cluster_t *c = tide_cluster_parse("4x8", &err);
    assert_non_null(c);
    double clock = 1000;
    FILE *log = fopen("/dev/null", "w");
    tide_daemon_opts_t o;
    tide_daemon_opts_default(&o);
    o.db_path = db;
    o.cluster = c;
    o.speed = 1;
    o.clock = manual_clock;
    o.clock_ctx = &clock;
    o.log = log;
    tide_daemon_t *d = tide_daemon_open(&o, &err);
    if (!d)
        fail_msg("open: %s", err.msg);

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
    tide_daemon_close(d);
    tide_cluster_destroy(c);
    fclose(log);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* A batch whose commit fails answers every write in it with the error and
 * queues nothing for the loop; the next batch works. */
static void failed_commit_answers_all(void **state)
{
    (void)state;
    char dir[] = "/tmp/tide-batch-XXXXXX", db[96];
    assert_non_null(mkdtemp(dir));
    snprintf(db, sizeof db, "%s/tide.db", dir);
    tide_error_t err = {0};
    tide_cluster_t *c = tide_cluster_parse("4x8", &err);
    double clock = 1000;
    FILE *log = fopen("/dev/null", "w");
    tide_daemon_opts_t o;
    tide_daemon_opts_default(&o);
    o.db_path = db;
    o.cluster = c;
    o.speed = 1;
    o.clock = manual_clock;
    o.clock_ctx = &clock;
    o.log = log;
    tide_daemon_t *d = tide_daemon_open(&o, &err);
    assert_non_null(d);
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
    tide_daemon_close(d);
    tide_cluster_destroy(c);
    fclose(log);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(concurrent_submits_share_transactions),
        cmocka_unit_test(failed_commit_answers_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
