/* Tier A is physical (elastic): when reserve GPUs go down with their node,
 * the reserve moves to healthy domains (at once when one is free of
 * training, else after the lent training was reclaimed gracefully), goes back
 * when the node recovers, and the GPU-seconds below the reserve are counted
 * while it cannot move. Also: the oracle caps each job at its own width; the
 * headroom of preempt/k8s; k8s waits for its stabilisation window before
 * scaling down and never preempts P0. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine_fixture.h"

static int zone_gpus(const ef_t *f, char z, int node_lo, int node_hi)
{
    int n = 0;
    for (int g = node_lo * 8; g < node_hi * 8; g++)
        n += tide_engine_gpu_zone(f->e, g) == z;
    return n;
}

static tide_stats_t stats(const ef_t *f)
{
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    return st;
}

static void node_event(ef_t *f, tide_time_t t, int node, int up)
{
    tide_event_t ev = ef_ev(up ? TIDE_EV_NODE_RECOVERED : TIDE_EV_NODE_FAILED);
    ev.node = node;
    ef_step(f, t, &ev, 1);
}

/* A free shared domain joins the reserve at once; the failed node's GPUs are
 * not Tier A while down; on recovery the borrowed domain goes back. */
static void test_reserve_moves_to_a_free_domain(void **state)
{
    (void)state;
    ef_t *f = ef_elastic4();
    ef_ticks(f, 600, 60);
    assert_int_equal(zone_gpus(f, 'A', 0, 1), 8);
    assert_int_equal(stats(f).tier_a_target_gpus, 8);
    node_event(f, 1000, 0, 0);
    tide_stats_t st = stats(f);
    assert_int_equal(st.tier_a_short_gpus, 0);
    assert_int_equal(zone_gpus(f, 'A', 1, 4), 8); /* a healthy node took its place */
    ef_ticks(f, 4000, 60);
    node_event(f, 4000, 0, 1);
    assert_int_equal(zone_gpus(f, 'A', 0, 1), 8);
    assert_int_equal(zone_gpus(f, 'A', 1, 4), 0); /* given back */
    ef_ticks(f, 5000, 60);
    st = stats(f);
    assert_true(st.tier_a_breach_gpu_s == 0);
    /* Tier A GPU-seconds: 8 healthy reserve GPUs all the time */
    double a = 0;
    for (int c = 0; c < TIDE_C_COUNT; c++)
        for (int s = 0; s < TIDE_S_COUNT; s++)
            a += st.gpu_s[c][s][TIDE_T_A];
    assert_float_equal(a, 8.0 * (double)st.now, 1e-6);
    ef_free(f);
}

/* Every shared domain holds lent training: the cheapest is claimed, its job
 * gets a checkpoint notice, and the domain joins the reserve once the
 * checkpoint is committed; the breach is counted until then. */
static void test_reserve_reclaims_lent_training(void **state)
{
    (void)state;
    ef_t *f = ef_elastic4();
    int32_t j[3];
    static const char *ids[3] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        tide_job_spec_t s = ef_job(ids[i], 3, 8, 8, 0, 100000);
        j[i] = ef_submit(f, 10, &s);
        assert_int_equal(ef_info(f, j[i]).state, TIDE_JOB_RUNNING);
    }
    ef_ticks(f, 600, 60);
    size_t mark = f->nlog;
    node_event(f, 1000, 0, 0);
    assert_int_equal(stats(f).tier_a_short_gpus, 8);
    /* notices: one for the reserve, one for the replica that died with node 0 */
    int noticed = 0;
    for (int i = 0; i < 3; i++)
        noticed += ef_find(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_RECLAIM, j[i]) != NULL;
    assert_int_equal(noticed, 2);
    assert_int_equal(zone_gpus(f, 'A', 1, 4), 0); /* not before the training left */
    for (int i = 0; i < 3; i++)
        if (ef_info(f, j[i]).state == TIDE_JOB_RECLAIMING)
            ef_commit(f, 1100, j[i], 90);
    assert_int_equal(zone_gpus(f, 'A', 1, 4), 8);
    tide_stats_t st = stats(f);
    assert_int_equal(st.tier_a_short_gpus, 0);
    assert_float_equal(st.tier_a_breach_gpu_s, 8.0 * 100, 1e-6);
    assert_int_equal(st.reclaims_late, 0);
    /* no job ever ran on a Tier A GPU (the fixture's invariants ran every step) */
    for (int g = 0; g < 32; g++) {
        int32_t own;
        if (tide_engine_gpu_owner(f->e, g, &own) == 1)
            assert_true(tide_engine_gpu_zone(f->e, g) != 'A');
    }
    ef_free(f);
}

/* A cluster too small to move the reserve: the breach is counted for as long
 * as the node is down, and stops when it recovers. */
static void test_breach_when_nothing_can_take_over(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("elastic");
    ef_t *f = ef_new("1x8", &cfg);
    ef_service(f, "chat", 8, 10, 1, 300);
    ef_demand(f, 0, 0, 5);
    ef_ticks(f, 600, 60);
    node_event(f, 1000, 0, 0);
    ef_ticks(f, 3000, 60);
    assert_int_equal(stats(f).tier_a_short_gpus, 8);
    assert_float_equal(stats(f).tier_a_breach_gpu_s, 8.0 * (double)(stats(f).now - 1000), 1e-6);
    node_event(f, 3000, 0, 1);
    ef_ticks(f, 4000, 60);
    assert_int_equal(stats(f).tier_a_short_gpus, 0);
    assert_float_equal(stats(f).tier_a_breach_gpu_s, 8.0 * 2000, 1e-6);
    ef_free(f);
}

/* The oracle caps each job at its width. 8 GPUs, no inference: a 2-GPU job
 * of 1000 s and a 4-GPU job of 3000 s, both at t=0. Capped: 6 GPUs busy until
 * 1000, 4 until 3000: 3000 GPU-s at 500, 10000 at 2000, 14000 from 3000 on.
 * Uncapped (the old bound) would have 4000 at 500. Then two 6-GPU jobs of
 * 1000 s share the 8 GPUs: each at 2/3 of its width, both done at 1500 s. */
static void test_oracle_caps_each_job(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("preempt");
    ef_t *f = ef_new("1x8", &cfg);
    tide_job_spec_t a = ef_job("a", 2, 2, 1, 0, 1000), b = ef_job("b", 2, 4, 4, 0, 3000);
    b.ckpt_interval_s = 3000; /* no periodic checkpoint inside the run */
    ef_submit(f, 0, &a);
    ef_submit(f, 0, &b);
    static const struct { tide_time_t t; double want; } pts[] = {
        {500, 3000}, {1000, 6000}, {2000, 10000}, {3000, 14000}, {5000, 14000}};
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
        ef_ticks(f, pts[i].t, 50);
        assert_float_equal(stats(f).oracle_gpu_s, pts[i].want, 1e-6);
        assert_true(stats(f).oracle_gpu_s <= 8.0 * (double)pts[i].t + 1e-6);
    }
    ef_free(f);
    f = ef_new("1x8", &cfg);
    tide_job_spec_t c = ef_job("c", 2, 6, 6, 0, 1000), d = ef_job("d", 2, 6, 6, 0, 1000);
    ef_submit(f, 0, &c);
    ef_submit(f, 0, &d);
    ef_ticks(f, 1200, 50);
    assert_float_equal(stats(f).oracle_gpu_s, 8.0 * 1200, 1e-6);
    ef_ticks(f, 3000, 50);
    assert_float_equal(stats(f).oracle_gpu_s, 12000, 1e-6);
    ef_free(f);
}

/* The oracle charges a job's periodic checkpoints: a 4-GPU job of 3000 s
 * checkpointing 60 s every 1000 s takes 3120 s on its GPUs (two checkpoints
 * strictly inside the run), of which 3000 s train: 12000 GPU-s of training,
 * done at 3120 s. */
static void test_oracle_charges_checkpoints(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("preempt");
    ef_t *f = ef_new("1x8", &cfg);
    tide_job_spec_t a = ef_job("a", 2, 4, 4, 0, 3000);
    a.ckpt_interval_s = 1000;
    ef_submit(f, 0, &a);
    ef_ticks(f, 1560, 60);
    assert_float_equal(stats(f).oracle_gpu_s, 6000, 1e-6); /* half way */
    ef_ticks(f, 5000, 60);
    assert_float_equal(stats(f).oracle_gpu_s, 12000, 1e-6);
    ef_free(f);
}

/* The oracle charges warm-up with perfect foresight: a replica level that
 * comes back after a gap costs min(gap, warm-up) x gpus_per_replica, taken
 * from the spare GPUs (here: training that would have filled them). 2x8, one
 * 8-GPU service (warm-up 300 s), a 16-GPU-wide job that keeps 8 GPUs busy
 * otherwise; demand for one replica from 0 (warm at the start), none over
 * [600, 700) (gap 100 s < warm-up: kept), none over [1000, 2000) (restarted:
 * 300 s). */
static void test_oracle_charges_warmup(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("preempt");
    cfg.warm_start = 1;
    ef_t *f = ef_new("2x8", &cfg);
    ef_service(f, "chat", 8, 10, 0, 300);
    tide_job_spec_t a = ef_job("a", 2, 16, 8, 1, 100000);
    a.ckpt_interval_s = 100000;
    ef_submit(f, 0, &a);
    ef_demand(f, 0, 0, 5);
    ef_ticks(f, 600, 60);
    ef_demand(f, 600, 0, 0);
    ef_ticks(f, 700, 50);
    ef_demand(f, 700, 0, 5);
    ef_ticks(f, 1000, 60);
    ef_demand(f, 1000, 0, 0);
    ef_ticks(f, 2000, 60);
    ef_demand(f, 2000, 0, 5);
    ef_ticks(f, 2960, 60);
    ef_tick(f, 3000);
    /* 16 GPUs busy all along (need + training), less the warm-ups: 100 s
     * bridged and 300 s before 2000, 8 GPUs each */
    assert_float_equal(stats(f).oracle_gpu_s, 16.0 * 3000 - 8.0 * (100 + 300), 1e-6);
    ef_free(f);
}

static int active_replicas(const ef_t *f)
{
    tide_stats_t st = stats(f);
    return st.replicas_ready + st.replicas_warming;
}

/* replicas = ceil(demand x (1 + headroom) / replica_rps). */
static void test_headroom_sizing(void **state)
{
    (void)state;
    static const struct { const char *policy; double headroom, rps; int want; } C[] = {
        {"preempt", 0, 35, 4},    {"preempt", 0.25, 35, 5}, {"preempt", 0.5, 20, 3},
        {"preempt", 0.25, 40, 5}, {"k8s", 0.25, 35, 5},     {"k8s", 0, 35, 4},
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        tide_config_t cfg = ef_cfg(C[i].policy);
        cfg.headroom = C[i].headroom;
        ef_t *f = ef_new("8x8", &cfg);
        ef_service(f, "chat", 8, 10, 1, 300);
        ef_demand(f, 0, 0, C[i].rps);
        if (active_replicas(f) != C[i].want)
            fail_msg("%s headroom %g at %g rps: %d replicas, want %d", C[i].policy,
                     C[i].headroom, C[i].rps, active_replicas(f), C[i].want);
        ef_free(f);
    }
    tide_config_t def;
    tide_config_default(&def);
    assert_float_equal(def.headroom, 0.25, 0);
    assert_int_equal(def.hpa_window_s, 300);
}

/* k8s scales down only when the window has passed since the last higher
 * recommendation; preempt keeps its 30-minute hold. */
static void test_k8s_scale_down_window(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("k8s");
    ef_t *f = ef_new("8x8", &cfg);
    ef_service(f, "chat", 8, 10, 1, 300);
    ef_demand(f, 0, 0, 35);
    ef_ticks(f, 540, 60);
    assert_int_equal(active_replicas(f), 5);
    ef_demand(f, 600, 0, 5); /* 1 replica from now on; 5 was last recommended at 540 */
    ef_ticks(f, 840, 60);
    assert_int_equal(active_replicas(f), 5);
    ef_ticks(f, 900, 60);
    assert_int_equal(active_replicas(f), 1);
    /* a rise is followed at once */
    ef_demand(f, 960, 0, 35);
    assert_int_equal(active_replicas(f), 5);
    ef_free(f);

    cfg = ef_cfg("preempt");
    f = ef_new("8x8", &cfg);
    ef_service(f, "chat", 8, 10, 1, 300);
    ef_demand(f, 0, 0, 35);
    ef_ticks(f, 540, 60);
    ef_demand(f, 600, 0, 5);
    ef_ticks(f, 900, 60);
    assert_int_equal(active_replicas(f), 5);
    ef_ticks(f, 600 + 1800, 60);
    assert_int_equal(active_replicas(f), 1);
    ef_free(f);
}

/* k8s preempts training for inference at once (work since the last commit is
 * lost), priority preemption between training jobs never touches P0. */
static void test_k8s_preempts_training_never_p0(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("k8s");
    ef_t *f = ef_new("2x8", &cfg);
    ef_service(f, "chat", 8, 10, 1, 300);
    ef_demand(f, 0, 0, 5);
    tide_job_spec_t low = ef_job("low", 3, 8, 8, 0, 100000);
    int32_t hl = ef_submit(f, 10, &low);
    assert_int_equal(ef_info(f, hl).state, TIDE_JOB_RUNNING);
    ef_ticks(f, 1200, 60);
    size_t mark = f->nlog;
    ef_demand(f, 1200, 0, 12); /* 12 x 1.25 / 10 -> 2 replicas: node 1 is needed */
    const ef_act_t *stop = ef_find(f, mark, TIDE_ACT_JOB_STOP, TIDE_R_PREEMPT, hl);
    assert_non_null(stop);
    assert_true(stop->a.value > 0); /* nothing committed: the work is lost */
    assert_int_equal(active_replicas(f), 2);
    /* a P1 job cannot take a GPU from inference */
    mark = f->nlog;
    tide_job_spec_t high = ef_job("high", 1, 8, 8, 0, 1000);
    int32_t hh = ef_submit(f, 1300, &high);
    ef_ticks(f, 3000, 60);
    assert_int_equal(ef_info(f, hh).state, TIDE_JOB_QUEUED);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_REPLICA_STOP, -1, -1), 0);
    assert_int_equal(active_replicas(f), 2);
    ef_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve_moves_to_a_free_domain),
        cmocka_unit_test(test_reserve_reclaims_lent_training),
        cmocka_unit_test(test_breach_when_nothing_can_take_over),
        cmocka_unit_test(test_oracle_caps_each_job),
        cmocka_unit_test(test_oracle_charges_checkpoints),
        cmocka_unit_test(test_oracle_charges_warmup),
        cmocka_unit_test(test_headroom_sizing),
        cmocka_unit_test(test_k8s_scale_down_window),
        cmocka_unit_test(test_k8s_preempts_training_never_p0),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
