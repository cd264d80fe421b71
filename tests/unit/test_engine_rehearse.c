/* Warm-up rehearsals (TIDE_EV_REHEARSE): one replica on free GPUs, never
 * capacity, accounted as state rehearsing; its measured warm-up feeds the
 * lead (the warm-up term is at least the latest rehearsal's); a rehearsal
 * slower than the lead allowed counts as slow; it waits for free GPUs and
 * counts as failed when its node dies. Every step runs tide_engine_check
 * and replays the actions (engine_fixture.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine_fixture.h"

static void rehearse(ef_t *f, tide_time_t t, int s)
{
    tide_event_t ev = ef_ev(TIDE_EV_REHEARSE);
    ev.service = s;
    ef_step(f, t, &ev, 1);
}

static void ready(ef_t *f, tide_time_t t, int32_t r)
{
    tide_event_t ev = ef_ev(TIDE_EV_REPLICA_READY);
    ev.replica = r;
    ef_step(f, t, &ev, 1);
}

static tide_rehearsal_info_t info(const ef_t *f, int s)
{
    tide_rehearsal_info_t ri;
    assert_int_equal(tide_engine_rehearsal(f->e, s, &ri), 0);
    return ri;
}

static tide_time_t lead(const ef_t *f, int s)
{
    tide_forecast_info_t fc;
    assert_int_equal(tide_engine_forecast(f->e, s, 3600, &fc), 0);
    return fc.lead_s;
}

/* A service of one 8-GPU replica (warm-up 100 s) on 4x8, ready at t=100. */
static ef_t *one_service(void)
{
    tide_config_t cfg = ef_cfg("elastic");
    ef_t *f = ef_new("4x8", &cfg);
    ef_service(f, "chat", 8, 100, 1, 100);
    ef_demand(f, 0, 0, 50);
    const ef_act_t *x = ef_find(f, 0, TIDE_ACT_REPLICA_START, -1, -1);
    assert_non_null(x);
    ready(f, 100, x->a.replica);
    return f;
}

static void test_rehearsal_measures_and_moves_the_lead(void **state)
{
    (void)state;
    ef_t *f = one_service();
    tide_time_t l0 = lead(f, 0);
    size_t mark = f->nlog;
    rehearse(f, 200, 0);
    const ef_act_t *x = ef_find(f, mark, TIDE_ACT_REPLICA_START, TIDE_R_REHEARSAL, -1);
    assert_non_null(x);
    int32_t r = x->a.replica;
    tide_rehearsal_info_t ri = info(f, 0);
    assert_int_equal(ri.running, 1);
    /* not capacity: the service still has one replica ready, none warming */
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    assert_int_equal(st.replicas_ready, 1);
    assert_int_equal(st.replicas_warming, 0);
    assert_int_equal(st.gpus_now[TIDE_C_INFERENCE][TIDE_S_REHEARSING], 8);
    /* a second request while one runs changes nothing */
    mark = f->nlog;
    rehearse(f, 210, 0);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_REPLICA_START, -1, -1), 0);
    /* ready after 250 s: measured, stopped at once */
    mark = f->nlog;
    ready(f, 450, r);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_REPLICA_STOP, TIDE_R_REHEARSAL, -1), 1);
    ri = info(f, 0);
    assert_int_equal(ri.done, 1);
    assert_int_equal(ri.running, 0);
    assert_true(ri.last_warmup_s == 250);
    assert_int_equal(ri.last_at, 450);
    /* allowed: declared 100 + lead_extra 300 + tick 60 = 460 > 250: not slow */
    assert_true(ri.allowed_s == 460);
    assert_int_equal(ri.slow, 0);
    assert_true(ri.gpu_s == 8 * 250);
    assert_int_equal(lead(f, 0), l0 + 150); /* the warm-up term went 100 -> 250 */
    tide_engine_stats(f->e, &st);
    assert_int_equal(st.gpus_now[TIDE_C_INFERENCE][TIDE_S_REHEARSING], 0);
    double acc = 0;
    for (int t = 0; t < TIDE_T_COUNT; t++)
        acc += st.gpu_s[TIDE_C_INFERENCE][TIDE_S_REHEARSING][t];
    assert_true(acc == 8 * 250);
    ef_assert_gpu_seconds(f);
    /* a slow one: 1000 s against 250 + 300 + 60 */
    rehearse(f, 500, 0);
    x = ef_find_last(f, TIDE_ACT_REPLICA_START, TIDE_R_REHEARSAL, -1);
    ready(f, 1500, x->a.replica);
    ri = info(f, 0);
    assert_int_equal(ri.done, 2);
    assert_int_equal(ri.slow, 1);
    assert_true(ri.allowed_s == 610);
    assert_int_equal(lead(f, 0), l0 + 900);
    /* a fast one brings the lead back down to the declared floor */
    rehearse(f, 1600, 0);
    x = ef_find_last(f, TIDE_ACT_REPLICA_START, TIDE_R_REHEARSAL, -1);
    ready(f, 1680, x->a.replica);
    assert_int_equal(info(f, 0).slow, 1);
    assert_int_equal(lead(f, 0), l0);
    ef_free(f);
}

static void test_rehearsal_waits_for_free_gpus(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("elastic");
    ef_t *f = ef_new("2x8", &cfg);
    ef_service(f, "chat", 8, 100, 1, 100);
    ef_demand(f, 0, 0, 50);
    tide_job_spec_t j = ef_job("big", 2, 8, 8, 1, 100000);
    tide_event_t ev = ef_ev(TIDE_EV_JOB_SUBMIT);
    ev.job_spec = &j;
    ef_step(f, 10, &ev, 1);
    size_t mark = f->nlog;
    rehearse(f, 20, 0);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_REPLICA_START, TIDE_R_REHEARSAL, -1), 0);
    assert_int_equal(info(f, 0).running, 2); /* asked, waiting */
    /* the job ends: the rehearsal takes its GPUs */
    ev = ef_ev(TIDE_EV_JOB_FINISHED);
    ev.job = 0;
    ef_step(f, 30, &ev, 1);
    const ef_act_t *x = ef_find(f, mark, TIDE_ACT_REPLICA_START, TIDE_R_REHEARSAL, -1);
    assert_non_null(x);
    assert_int_equal(info(f, 0).running, 1);
    /* its node fails: a failed rehearsal, not a sample */
    ev = ef_ev(TIDE_EV_NODE_FAILED);
    ev.node = ef_node_of(f, ef_gpus(f, x)[0]);
    ef_step(f, 40, &ev, 1);
    tide_rehearsal_info_t ri = info(f, 0);
    assert_int_equal(ri.failed, 1);
    assert_int_equal(ri.done, 0);
    assert_int_equal(ri.running, 0);
    /* an unknown service is refused */
    ev = ef_ev(TIDE_EV_REHEARSE);
    ev.service = 5;
    tide_error_t err = {0};
    assert_int_equal(ef_step_rc(f, 50, &ev, 1, &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
    assert_int_equal(tide_engine_rehearsal(f->e, 5, &ri), -1);
    ef_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rehearsal_measures_and_moves_the_lead),
        cmocka_unit_test(test_rehearsal_waits_for_free_gpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
