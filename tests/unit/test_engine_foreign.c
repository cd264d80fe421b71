/* Foreign jobs (TIDE_EV_FOREIGN): GPUs that jobs tide does not manage hold on
 * its nodes (a plain sbatch job on a Slurm node of tide's partition). Tide
 * never places on them, counts them as class none / state foreign, takes a
 * count above the node's free GPUs as tide's GPUs there are released, drops
 * and restores them with the node, and its invariants hold throughout (every
 * step runs tide_engine_check and replays the actions, engine_fixture.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine_fixture.h"

static ef_t *train_only(const char *cluster)
{
    tide_config_t cfg = ef_cfg("static");
    cfg.split_inf = 0;
    return ef_new(cluster, &cfg);
}

static void foreign(ef_t *f, tide_time_t t, int node, double gpus)
{
    tide_event_t ev = ef_ev(TIDE_EV_FOREIGN);
    ev.node = node;
    ev.value = gpus;
    ef_step(f, t, &ev, 1);
}

static int foreign_now(const ef_t *f)
{
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    return st.gpus_now[TIDE_C_NONE][TIDE_S_FOREIGN];
}

/* GPUs of node n that the engine marks foreign (owner kind 3, owner n). */
static int marked(const ef_t *f, int n)
{
    int k = 0;
    for (int g = n * 8; g < n * 8 + 8; g++) {
        int32_t own;
        if (tide_engine_gpu_owner(f->e, g, &own) == 3) {
            assert_int_equal(own, n);
            k++;
        }
    }
    return k;
}

static void test_never_placed_on_foreign_gpus(void **state)
{
    (void)state;
    ef_t *f = train_only("2x8");
    foreign(f, 0, 0, 6); /* node 0: 2 GPUs left */
    assert_int_equal(marked(f, 0), 6);
    int want = -1;
    assert_int_equal(tide_engine_node_foreign(f->e, 0, &want), 6);
    assert_int_equal(want, 6);
    assert_int_equal(foreign_now(f), 6);
    tide_job_spec_t a = ef_job("a", 2, 8, 8, 0, 36000);
    tide_job_spec_t b = ef_job("b", 2, 8, 8, 0, 36000);
    tide_job_spec_t c = ef_job("c", 2, 2, 2, 0, 36000);
    int32_t ha = ef_submit(f, 10, &a), hb = ef_submit(f, 20, &b), hc = ef_submit(f, 30, &c);
    int32_t g[64];
    assert_int_equal(ef_job_gpus(f, ha, g), 8);
    assert_int_equal(ef_node_of(f, g[0]), 1);
    assert_int_equal(ef_info(f, hb).state, TIDE_JOB_QUEUED); /* node 0 has 2 GPUs */
    assert_int_equal(ef_job_gpus(f, hc, g), 2);              /* ... which a 2-GPU gang gets */
    assert_int_equal(ef_node_of(f, g[0]), 0);
    ef_ticks(f, 3600, 60);
    assert_int_equal(ef_info(f, hb).state, TIDE_JOB_QUEUED);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    assert_int_equal(st.gpus_now[TIDE_C_NONE][TIDE_S_IDLE], 0);
    /* 6 GPUs x 3600 s foreign, on the training partition (tier D) */
    assert_float_equal(st.gpu_s[TIDE_C_NONE][TIDE_S_FOREIGN][TIDE_T_D], 6.0 * (double)(st.now - st.start), 1e-6);
    assert_float_equal(st.lost_gpu_s, 0, 1e-9);
    ef_assert_gpu_seconds(f);
    /* the foreign job ends; c still holds 2 of node 0's GPUs, so b (a whole
     * node) waits until c is done */
    foreign(f, 3700, 0, 0);
    assert_int_equal(marked(f, 0), 0);
    assert_int_equal(ef_info(f, hb).state, TIDE_JOB_QUEUED);
    tide_event_t fin = ef_ev(TIDE_EV_JOB_FINISHED);
    fin.job = hc;
    ef_step(f, 3800, &fin, 1);
    assert_int_equal(ef_info(f, hb).state, TIDE_JOB_RUNNING);
    ef_assert_gpu_seconds(f);
    ef_free(f);
}

/* Tide's view was behind (a gang it placed that Slurm never started): the
 * foreign count above the free GPUs is marked as tide's GPUs are released,
 * and nothing new lands there meanwhile. */
static void test_count_above_free_waits_for_release(void **state)
{
    (void)state;
    ef_t *f = train_only("2x8");
    tide_job_spec_t a = ef_job("a", 2, 6, 6, 0, 36000);
    int32_t ha = ef_submit(f, 0, &a);
    int32_t g[64];
    assert_int_equal(ef_job_gpus(f, ha, g), 6);
    int n = ef_node_of(f, g[0]);
    foreign(f, 10, n, 5); /* 2 free: marked at once, 3 wait */
    assert_int_equal(marked(f, n), 2);
    int want;
    assert_int_equal(tide_engine_node_foreign(f->e, n, &want), 2);
    assert_int_equal(want, 5);
    tide_event_t fail = ef_ev(TIDE_EV_RANK_FAILED);
    fail.job = ha;
    ef_step(f, 20, &fail, 1);
    assert_int_equal(marked(f, n), 5);
    /* a restarts on the other node, not on the 3 GPUs left free here */
    ef_ticks(f, 120, 60);
    assert_int_equal(ef_job_gpus(f, ha, g), 6);
    assert_int_equal(ef_node_of(f, g[0]), 1 - n);
    assert_int_equal(foreign_now(f), 5);
    ef_assert_gpu_seconds(f);
    ef_free(f);
}

static void test_node_down_drops_and_restores(void **state)
{
    (void)state;
    ef_t *f = train_only("2x8");
    foreign(f, 0, 1, 8);
    assert_int_equal(foreign_now(f), 8);
    tide_event_t down = ef_ev(TIDE_EV_NODE_FAILED);
    down.node = 1;
    ef_step(f, 100, &down, 1);
    assert_int_equal(foreign_now(f), 0); /* a down node's GPUs are idle (down) */
    assert_int_equal(marked(f, 1), 0);
    foreign(f, 150, 1, 4); /* reported while down: kept for later */
    tide_event_t up = ef_ev(TIDE_EV_NODE_RECOVERED);
    up.node = 1;
    ef_step(f, 200, &up, 1);
    assert_int_equal(marked(f, 1), 4);
    tide_job_spec_t a = ef_job("a", 2, 16, 8, 0, 3600);
    int32_t ha = ef_submit(f, 210, &a);
    assert_int_equal(ef_info(f, ha).state, TIDE_JOB_QUEUED);
    foreign(f, 300, 1, 0);
    assert_int_equal(ef_info(f, ha).state, TIDE_JOB_RUNNING);
    ef_assert_gpu_seconds(f);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    assert_float_equal(st.gpu_s[TIDE_C_NONE][TIDE_S_FOREIGN][TIDE_T_D], 8 * 100.0 + 4 * 100.0, 1e-6);
    ef_free(f);
}

static void test_bad_foreign_events(void **state)
{
    (void)state;
    ef_t *f = train_only("2x8");
    static const struct {
        int node;
        double v;
        int code;
    } cases[] = {{2, 1, TIDE_ENOENT}, {-1, 1, TIDE_ENOENT}, {0, 9, TIDE_EINVAL},
                 {0, -1, TIDE_EINVAL}, {0, 1.5, TIDE_EINVAL}, {0, NAN, TIDE_EINVAL}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tide_event_t ev = ef_ev(TIDE_EV_FOREIGN);
        ev.node = cases[i].node;
        ev.value = cases[i].v;
        tide_error_t err = {0};
        assert_int_equal(ef_step_rc(f, (tide_time_t)i, &ev, 1, &err), -1);
        assert_int_equal(err.code, cases[i].code);
    }
    assert_int_equal(foreign_now(f), 0);
    assert_string_equal(tide_event_name(TIDE_EV_FOREIGN), "foreign");
    assert_string_equal(tide_state_name(TIDE_S_FOREIGN), "foreign");
    ef_free(f);
}

/* Foreign GPUs on the Tier A reserve serve none of tide's replicas: the
 * reserve borrows a healthy shared domain to stay whole. */
static void test_foreign_on_reserve_borrows(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("elastic");
    cfg.reserve_gpus = 16;
    ef_t *f = ef_new("4x8", &cfg);
    ef_service(f, "chat", 8, 100, 1, 60);
    ef_tick(f, 0);
    int empty_a = -1, a_nodes = 0;
    for (int n = 0; n < 4; n++) {
        if (tide_engine_gpu_zone(f->e, n * 8) != 'A')
            continue;
        a_nodes++;
        int32_t own;
        if (tide_engine_gpu_owner(f->e, n * 8, &own) == 0)
            empty_a = n;
    }
    assert_int_equal(a_nodes, 2);
    assert_true(empty_a >= 0);
    foreign(f, 60, empty_a, 8);
    ef_ticks(f, 600, 60);
    a_nodes = 0;
    for (int n = 0; n < 4; n++)
        a_nodes += tide_engine_gpu_zone(f->e, n * 8) == 'A';
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    assert_int_equal(a_nodes, 3); /* a shared node joined the reserve */
    assert_int_equal(st.tier_a_short_gpus, 0);
    assert_float_equal(st.gpu_s[TIDE_C_NONE][TIDE_S_FOREIGN][TIDE_T_A], 8 * 540.0, 1e-6);
    /* the foreign job ends: the borrowed node goes back */
    foreign(f, 660, empty_a, 0);
    ef_ticks(f, 720, 60);
    a_nodes = 0;
    for (int n = 0; n < 4; n++)
        a_nodes += tide_engine_gpu_zone(f->e, n * 8) == 'A';
    assert_int_equal(a_nodes, 2);
    ef_assert_gpu_seconds(f);
    ef_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_never_placed_on_foreign_gpus),
        cmocka_unit_test(test_count_above_free_waits_for_release),
        cmocka_unit_test(test_node_down_drops_and_restores),
        cmocka_unit_test(test_bad_foreign_events),
        cmocka_unit_test(test_foreign_on_reserve_borrows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
