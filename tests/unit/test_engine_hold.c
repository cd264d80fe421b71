/* Holding a job on its driver's behalf (tide_engine_job_hold; how the lent
 * rollout pool of an RL job is sized, docs/rl.md): a held queued job is not
 * started, a held running one gets a checkpoint notice (reason scale) and is
 * stopped at its commit without counting as a preemption, a released one
 * starts again; bad handles and finished jobs are refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine_fixture.h"

static ef_t *train_only(void)
{
    tide_config_t cfg = ef_cfg("static");
    cfg.split_inf = 0;
    return ef_new("1x8", &cfg);
}

static void test_hold_queued_then_release(void **st)
{
    (void)st;
    ef_t *f = train_only();
    tide_job_spec_t a = ef_job("a", 2, 8, 8, 0, 3600), b = ef_job("b", 3, 8, 8, 0, 600);
    int32_t ha = ef_submit(f, 0, &a);
    int32_t hb = ef_submit(f, 10, &b); /* queued behind a */
    assert_int_equal(tide_engine_job_hold(f->e, hb, 1, NULL), 0);
    assert_int_equal(ef_info(f, hb).held, 1);
    assert_int_equal(tide_engine_queue(f->e, NULL, 0), 0); /* out of the queue */
    tide_event_t done = ef_ev(TIDE_EV_JOB_FINISHED);
    done.job = ha;
    ef_step(f, 3600, &done, 1);
    ef_ticks(f, 7200, 60);
    assert_int_equal(ef_info(f, hb).state, TIDE_JOB_QUEUED); /* free GPUs, still held */
    assert_null(ef_find(f, 0, TIDE_ACT_JOB_START, -1, hb));
    assert_int_equal(tide_engine_job_hold(f->e, hb, 0, NULL), 0);
    assert_int_equal(tide_engine_queue(f->e, NULL, 0), 1);
    ef_tick(f, 7260);
    assert_int_equal(ef_info(f, hb).state, TIDE_JOB_RUNNING);
    assert_int_equal(ef_info(f, hb).held, 0);
    ef_free(f);
}

static void test_hold_running_drains_and_stops(void **st)
{
    (void)st;
    ef_t *f = train_only();
    tide_job_spec_t a = ef_job("a", 3, 8, 8, 0, 36000);
    int32_t h = ef_submit(f, 0, &a);
    assert_int_equal(ef_info(f, h).state, TIDE_JOB_RUNNING);
    int pre = ef_info(f, h).preemptions;
    assert_int_equal(tide_engine_job_hold(f->e, h, 1, NULL), 0);
    assert_int_equal(tide_engine_job_hold(f->e, h, 1, NULL), 0); /* no-op */
    size_t from = f->nlog;
    ef_tick(f, 60);
    assert_int_equal(ef_count(f, from, TIDE_ACT_JOB_CKPT, TIDE_R_SCALE, h), 1);
    assert_int_equal(ef_info(f, h).state, TIDE_JOB_RECLAIMING);
    ef_commit(f, 120, h, 100);
    assert_non_null(ef_find(f, from, TIDE_ACT_JOB_STOP, TIDE_R_SCALE, h));
    tide_job_info_t ji = ef_info(f, h);
    assert_int_equal(ji.state, TIDE_JOB_QUEUED);
    assert_int_equal(ji.preemptions, pre);
    assert_true(ji.committed >= 100);
    from = f->nlog;
    ef_ticks(f, 1800, 60);
    assert_null(ef_find(f, from, TIDE_ACT_JOB_START, -1, h));
    assert_int_equal(tide_engine_job_hold(f->e, h, 0, NULL), 0);
    ef_tick(f, 1860);
    assert_non_null(ef_find(f, from, TIDE_ACT_JOB_START, -1, h));
    ef_free(f);
}

/* A snapshot keeps the hold: the restored engine decides as the original,
 * held job included (a pending notice of a running held job too). */
static void test_hold_snapshot(void **st)
{
    (void)st;
    ef_t *f = train_only();
    tide_job_spec_t a = ef_job("a", 3, 8, 8, 0, 36000), b = ef_job("b", 3, 8, 8, 0, 600);
    int32_t ha = ef_submit(f, 0, &a);
    int32_t hb = ef_submit(f, 10, &b);
    assert_int_equal(tide_engine_job_hold(f->e, hb, 1, NULL), 0);
    assert_int_equal(tide_engine_job_hold(f->e, ha, 1, NULL), 0); /* noticed at the next step */
    size_t len;
    void *buf = tide_engine_snapshot(f->e, &len);
    tide_engine_t *r = tide_engine_restore(f->e, buf, len, NULL);
    assert_non_null(r);
    tide_engine_t *two[2] = {f->e, r};
    tide_actions_t acts[2];
    for (int k = 0; k < 2; k++) {
        tide_actions_init(&acts[k]);
        assert_int_equal(tide_engine_step(two[k], 60, NULL, 0, &acts[k], NULL), 0);
        tide_event_t c = ef_ev(TIDE_EV_CKPT_COMMITTED);
        c.job = ha;
        c.value = 50;
        assert_int_equal(tide_engine_step(two[k], 120, &c, 1, &acts[k], NULL), 0);
        assert_int_equal(tide_engine_job_hold(two[k], hb, 0, NULL), 0);
        assert_int_equal(tide_engine_step(two[k], 180, NULL, 0, &acts[k], NULL), 0);
    }
    assert_int_equal(acts[0].n, acts[1].n);
    assert_true(acts[0].n > 0);
    for (size_t i = 0; i < acts[0].n; i++) {
        assert_int_equal(acts[0].v[i].kind, acts[1].v[i].kind);
        assert_int_equal(acts[0].v[i].job, acts[1].v[i].job);
    }
    tide_job_info_t ia, ib;
    assert_int_equal(tide_engine_job(r, ha, &ia), 0);
    assert_int_equal(tide_engine_job(r, hb, &ib), 0);
    assert_true(ia.held && ia.state == TIDE_JOB_QUEUED);
    assert_true(!ib.held && ib.state == TIDE_JOB_RUNNING);
    size_t l0, l1;
    void *s0 = tide_engine_snapshot(f->e, &l0), *s1 = tide_engine_snapshot(r, &l1);
    assert_int_equal(l0, l1);
    assert_memory_equal(s0, s1, l0);
    free(s0);
    free(s1);
    free(buf);
    for (int k = 0; k < 2; k++)
        tide_actions_free(&acts[k]);
    tide_engine_destroy(r);
    f->track = 0; /* the steps above bypassed the fixture's log */
    ef_free(f);
}

static void test_hold_errors(void **st)
{
    (void)st;
    ef_t *f = train_only();
    tide_error_t e;
    assert_int_equal(tide_engine_job_hold(f->e, 0, 1, &e), -1);
    assert_int_equal(e.code, TIDE_ENOENT);
    tide_job_spec_t a = ef_job("a", 3, 8, 8, 0, 600);
    int32_t h = ef_submit(f, 0, &a);
    tide_event_t c = ef_ev(TIDE_EV_JOB_CANCEL);
    c.job = h;
    ef_step(f, 10, &c, 1);
    assert_int_equal(tide_engine_job_hold(f->e, h, 1, &e), -1);
    assert_int_equal(e.code, TIDE_ESTATE);
    assert_int_equal(tide_engine_job_hold(f->e, -1, 0, &e), -1);
    ef_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hold_queued_then_release),
        cmocka_unit_test(test_hold_running_drains_and_stops),
        cmocka_unit_test(test_hold_snapshot),
        cmocka_unit_test(test_hold_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
