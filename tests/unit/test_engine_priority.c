/* Priorities: P0 inference is never preempted for training; a P1 job that
 * does not fit preempts P3 before P2 through the checkpoint protocol (notice,
 * commit, stop) and then starts on the freed GPUs; victims are whole jobs or
 * DP shrinks; among equals the least work lost is chosen. */
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

static int32_t start_job(ef_t *f, tide_time_t t, const tide_job_spec_t *j)
{
    int32_t h = ef_submit(f, t, j);
    if (ef_info(f, h).state != TIDE_JOB_RUNNING)
        fail_msg("job %s did not start at submit", j->id);
    return h;
}

static int sorted_eq(const int32_t *a, const int32_t *b, int n)
{
    int32_t x[256], y[256];
    memcpy(x, a, (size_t)n * sizeof *x);
    memcpy(y, b, (size_t)n * sizeof *y);
    for (int i = 1; i < n; i++)
        for (int k = i; k > 0 && x[k - 1] > x[k]; k--) {
            int32_t t = x[k]; x[k] = x[k - 1]; x[k - 1] = t;
        }
    for (int i = 1; i < n; i++)
        for (int k = i; k > 0 && y[k - 1] > y[k]; k--) {
            int32_t t = y[k]; y[k] = y[k - 1]; y[k - 1] = t;
        }
    return !memcmp(x, y, (size_t)n * sizeof *x);
}

/* ------------------------------------------------------------ P0 */

/* Inference replicas fill 3 of 4 nodes under every policy; a P1 job needing
 * two nodes waits for hours: no replica is ever stopped for it. */
static void test_p0_never_preempted(void **state)
{
    (void)state;
    for (const char *const *p = tide_policy_names(); *p; p++) {
        tide_config_t cfg = ef_cfg(*p);
        ef_t *f = ef_new("4x8", &cfg);
        tide_service_spec_t s = {.name = "chat", .gpus_per_replica = 8, .replica_rps = 10,
                                 .min_replicas = 1, .warmup_s = 300, .fixed_replicas = 3};
        ef_service_full(f, &s);
        ef_input_t *in = NULL;
        size_t n = 0, cap = 0;
        for (tide_time_t t = 0; t <= 4 * 3600; t += 300)
            ef_in_push(&in, &n, &cap, ef_in_demand(t, 0, 25)); /* 3 replicas */
        tide_job_spec_t p1 = ef_job("p1", 1, 16, 8, 0, 7200);
        ef_in_push(&in, &n, &cap, ef_in_submit(1800, &p1));
        ef_in_sort(in, n);
        ef_run(f, in, n, 4 * 3600, NULL, NULL);
        int32_t h = tide_engine_job_find(f->e, "p1");
        assert_true(h >= 0);
        for (size_t i = 0; i < f->nlog; i++) {
            const ef_act_t *x = &f->log[i];
            if (x->a.kind == TIDE_ACT_REPLICA_STOP && x->a.reason != TIDE_R_SCALE)
                fail_msg("policy %s: replica %d stopped at t=%lld (reason %s) while P1 waits", *p,
                         x->a.replica, (long long)x->t, tide_reason_name(x->a.reason));
        }
        assert_int_equal(ef_count(f, 0, TIDE_ACT_JOB_START, -1, h), 0);
        assert_int_equal(ef_info(f, h).state, TIDE_JOB_QUEUED);
        tide_stats_t st;
        tide_engine_stats(f->e, &st);
        if (st.replicas_ready < 3)
            fail_msg("policy %s: %d replicas ready at the end, want 3", *p, st.replicas_ready);
        free(in);
        ef_free(f);
    }
}

/* A P1 job that could not start even if every P2/P3 job were evicted (the
 * rest of the cluster is inference) must not evict anyone: the checkpoint,
 * restore and idle claimed GPUs would be pure loss. */
static void test_no_useless_priority_preemption(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("elastic");
    ef_t *f = ef_new("4x8", &cfg);
    ef_service(f, "chat", 8, 10, 1, 300);
    ef_demand(f, 0, 0, 25); /* 3 replicas: node 0 (Tier A) + two shared nodes */
    tide_job_spec_t p3 = ef_job("p3", 3, 8, 8, 0, 100000);
    int32_t h3 = start_job(f, 10, &p3);
    tide_job_spec_t p1 = ef_job("p1", 1, 16, 8, 0, 7200); /* needs 2 nodes */
    ef_submit(f, 20, &p1);
    for (tide_time_t t = 60; t <= 1800; t += 60) {
        if (t % 300 == 0)
            ef_demand(f, t, 0, 25);
        else
            ef_tick(f, t);
    }
    const ef_act_t *ck = ef_find(f, 0, TIDE_ACT_JOB_CKPT, -1, h3);
    if (ck)
        fail_msg("P3 job got a checkpoint notice (reason %s) at t=%lld although the P1 job "
                 "cannot start even with its GPUs",
                 tide_reason_name(ck->a.reason), (long long)ck->t);
    assert_int_equal(ef_info(f, h3).state, TIDE_JOB_RUNNING);
    ef_free(f);
}

/* ------------------------------------------------------------ P1 preempts */

typedef struct full4 {
    ef_t *f;
    int32_t p3a, p3b, p2a, p2b;
} full4_t;

/* 4x8 full of whole-node jobs: two P3, two P2. */
static full4_t full_cluster(void)
{
    full4_t c;
    c.f = train_only("4x8");
    tide_job_spec_t a = ef_job("p3a", 3, 8, 8, 0, 100000);
    tide_job_spec_t b = ef_job("p2a", 2, 8, 8, 0, 100000);
    tide_job_spec_t d = ef_job("p3b", 3, 8, 8, 0, 100000);
    tide_job_spec_t e = ef_job("p2b", 2, 8, 8, 0, 100000);
    c.p3a = start_job(c.f, 0, &a);
    c.p2a = start_job(c.f, 1, &b);
    c.p3b = start_job(c.f, 2, &d);
    c.p2b = start_job(c.f, 3, &e);
    return c;
}

static void test_p1_preempts_p3_then_starts(void **state)
{
    (void)state;
    full4_t c = full_cluster();
    ef_t *f = c.f;
    ef_ticks(f, 600, 60);
    tide_job_spec_t p1 = ef_job("p1", 1, 8, 8, 0, 7200);
    size_t mark = f->nlog;
    int32_t h = ef_submit(f, 620, &p1);
    /* exactly one notice, to a P3 job, reason priority; no P2 touched */
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, -1, -1), 1);
    const ef_act_t *ck = ef_find(f, mark, TIDE_ACT_JOB_CKPT, -1, -1);
    assert_int_equal(ck->a.reason, TIDE_R_PRIORITY);
    assert_true(ck->a.job == c.p3a || ck->a.job == c.p3b);
    assert_true(ck->a.deadline > 620);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_STOP, -1, -1), 0);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_RESIZE, -1, -1), 0);
    int32_t victim = ck->a.job;
    assert_int_equal(ef_info(f, victim).state, TIDE_JOB_RECLAIMING);
    assert_int_equal(ef_info(f, h).state, TIDE_JOB_QUEUED);
    /* the victim keeps its GPUs until it commits */
    int32_t vg[64];
    int nv = ef_job_gpus(f, victim, vg);
    assert_int_equal(nv, 8);
    ef_tick(f, 660);
    assert_int_equal(ef_job_gpus(f, victim, vg), 8);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_START, -1, h), 0);
    /* commit: the victim stops (priority), the P1 job starts on its GPUs */
    mark = f->nlog;
    ef_commit(f, 680, victim, 600);
    const ef_act_t *stop = ef_find(f, mark, TIDE_ACT_JOB_STOP, -1, victim);
    assert_non_null(stop);
    assert_int_equal(stop->a.reason, TIDE_R_PRIORITY);
    const ef_act_t *st = ef_find(f, mark, TIDE_ACT_JOB_START, -1, h);
    assert_non_null(st);
    assert_int_equal(st->a.n_gpus, 8);
    assert_true(sorted_eq(ef_gpus(f, st), vg, 8));
    assert_int_equal(ef_info(f, victim).state, TIDE_JOB_QUEUED);
    assert_int_equal(ef_info(f, victim).preemptions, 1);
    assert_true(ef_info(f, victim).committed >= 600 - 1e-9);
    /* P2 jobs untouched all along */
    assert_int_equal(ef_count(f, 0, TIDE_ACT_JOB_CKPT, -1, c.p2a), 0);
    assert_int_equal(ef_count(f, 0, TIDE_ACT_JOB_CKPT, -1, c.p2b), 0);
    assert_int_equal(ef_info(f, c.p2a).state, TIDE_JOB_RUNNING);
    assert_int_equal(ef_info(f, c.p2b).state, TIDE_JOB_RUNNING);
    ef_free(f);
}

static void test_p1_two_gangs_takes_both_p3(void **state)
{
    (void)state;
    full4_t c = full_cluster();
    ef_t *f = c.f;
    tide_job_spec_t p1 = ef_job("p1", 1, 16, 8, 0, 7200);
    size_t mark = f->nlog;
    int32_t h = ef_submit(f, 100, &p1);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_PRIORITY, c.p3a), 1);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_PRIORITY, c.p3b), 1);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, -1, c.p2a), 0);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, -1, c.p2b), 0);
    ef_commit(f, 150, c.p3a, 100);
    /* one node free is not enough for a non-elastic 2-gang job */
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_START, -1, h), 0);
    ef_commit(f, 170, c.p3b, 100);
    const ef_act_t *st = ef_find(f, mark, TIDE_ACT_JOB_START, -1, h);
    assert_non_null(st);
    assert_int_equal(st->t, 170);
    assert_int_equal(st->a.n_gpus, 16);
    ef_free(f);
}

static void test_p1_takes_p2_only_when_p3_not_enough(void **state)
{
    (void)state;
    full4_t c = full_cluster();
    ef_t *f = c.f;
    tide_job_spec_t p1 = ef_job("p1", 1, 24, 8, 0, 7200); /* 3 nodes */
    size_t mark = f->nlog;
    ef_submit(f, 100, &p1);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_PRIORITY, c.p3a), 1);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_PRIORITY, c.p3b), 1);
    size_t p2 = ef_count(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_PRIORITY, c.p2a) +
                ef_count(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_PRIORITY, c.p2b);
    assert_int_equal(p2, 1);
    ef_free(f);
}

/* A priority victim (no lease: `static` training part) that never commits is
 * stopped by the engine itself at its checkpoint deadline; its work since
 * the last commit is lost and counted; the P1 job then starts. */
static void test_priority_notice_deadline_without_lease(void **state)
{
    (void)state;
    full4_t c = full_cluster();
    ef_t *f = c.f;
    ef_ticks(f, 1200, 60);
    assert_int_equal(tide_engine_leases(f->e), 0);
    tide_job_spec_t p1 = ef_job("p1", 1, 8, 8, 0, 7200);
    size_t mark = f->nlog;
    int32_t h = ef_submit(f, 1230, &p1);
    const ef_act_t *ck = ef_find(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_PRIORITY, -1);
    assert_non_null(ck);
    int32_t v = ck->a.job;
    tide_time_t dl = ck->a.deadline;
    assert_true(dl > 1230);
    tide_time_t t = 1230;
    while (t < dl) {
        tide_time_t next = f->acts.next_wake;
        assert_true(next > t && next <= dl); /* woken by the deadline at the latest */
        t = next;
        ef_tick(f, t);
        if (t < dl) {
            assert_int_equal(ef_info(f, v).state, TIDE_JOB_RECLAIMING);
            assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_START, -1, h), 0);
        }
    }
    const ef_act_t *stop = ef_find(f, mark, TIDE_ACT_JOB_STOP, -1, v);
    if (!stop)
        fail_msg("victim still %s at its checkpoint deadline %lld",
                 tide_job_state_name(ef_info(f, v).state), (long long)dl);
    assert_int_equal(stop->t, dl);
    assert_int_equal(stop->a.reason, TIDE_R_DEADLINE);
    double lost = (double)dl; /* the victims started at t = 0..3 and never committed */
    assert_true(stop->a.value > lost - 4 && stop->a.value <= lost);
    tide_job_info_t ji = ef_info(f, v);
    assert_int_equal(ji.state, TIDE_JOB_QUEUED);
    assert_true(ji.lost_gpu_s > 0);
    const ef_act_t *st = ef_find(f, mark, TIDE_ACT_JOB_START, -1, h);
    assert_non_null(st);
    assert_int_equal(st->t, dl);
    ef_free(f);
}

/* Between two P3 jobs the cheaper one (GPUs x (ckpt + restore)) goes,
 * whichever was submitted first. */
static void test_least_work_lost(void **state)
{
    (void)state;
    for (int order = 0; order < 2; order++) {
        ef_t *f = train_only("4x8");
        tide_job_spec_t cheap = ef_job("cheap", 3, 8, 8, 0, 100000);
        cheap.ckpt_s = 30;
        cheap.restore_s = 30;
        tide_job_spec_t dear = ef_job("dear", 3, 8, 8, 0, 100000);
        dear.ckpt_s = 600;
        dear.restore_s = 900;
        tide_job_spec_t p2 = ef_job("p2", 2, 16, 8, 0, 100000);
        int32_t hc, hd;
        if (order == 0) {
            hc = start_job(f, 0, &cheap);
            hd = start_job(f, 1, &dear);
        } else {
            hd = start_job(f, 0, &dear);
            hc = start_job(f, 1, &cheap);
        }
        start_job(f, 2, &p2);
        tide_job_spec_t p1 = ef_job("p1", 1, 8, 8, 0, 3600);
        size_t mark = f->nlog;
        ef_submit(f, 100, &p1);
        assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_PRIORITY, -1), 1);
        assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_PRIORITY, hc), 1);
        assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, -1, hd), 0);
        ef_free(f);
    }
    /* a bigger job with a cheap checkpoint can still cost more in total */
    {
        ef_t *f = train_only("4x8");
        tide_job_spec_t big = ef_job("big", 3, 16, 8, 0, 100000); /* 16 x 180 */
        tide_job_spec_t small = ef_job("small", 3, 8, 8, 0, 100000);
        small.ckpt_s = 150;
        small.restore_s = 150; /* 8 x 300 */
        tide_job_spec_t p2 = ef_job("p2", 2, 8, 8, 0, 100000);
        int32_t hb = start_job(f, 0, &big);
        int32_t hs = start_job(f, 1, &small);
        start_job(f, 2, &p2);
        tide_job_spec_t p1 = ef_job("p1", 1, 8, 8, 0, 3600);
        size_t mark = f->nlog;
        ef_submit(f, 100, &p1);
        assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_PRIORITY, hs), 1);
        assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, -1, hb), 0);
        ef_free(f);
    }
}

/* Victims are whole jobs: a non-elastic 2-node P3 job is noticed as a whole
 * (and stopped as a whole), never cut to one gang. */
static void test_victims_are_whole_jobs(void **state)
{
    (void)state;
    ef_t *f = train_only("4x8");
    tide_job_spec_t wide = ef_job("wide", 3, 16, 8, 0, 100000);
    tide_job_spec_t p2 = ef_job("p2", 2, 16, 8, 0, 100000);
    int32_t hw = start_job(f, 0, &wide);
    start_job(f, 1, &p2);
    tide_job_spec_t p1 = ef_job("p1", 1, 8, 8, 0, 3600);
    size_t mark = f->nlog;
    int32_t h = ef_submit(f, 100, &p1);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_PRIORITY, hw), 1);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_RESIZE, -1, hw), 0);
    ef_commit(f, 160, hw, 100);
    const ef_act_t *stop = ef_find(f, mark, TIDE_ACT_JOB_STOP, -1, hw);
    assert_non_null(stop);
    int32_t g[64];
    assert_int_equal(ef_job_gpus(f, hw, g), 0);
    assert_int_equal(ef_info(f, hw).state, TIDE_JOB_QUEUED);
    assert_int_equal(ef_info(f, h).state, TIDE_JOB_RUNNING);
    ef_free(f);
}

/* An elastic P3 job is shrunk off a node (no checkpoint, no stop) when that
 * is cheaper, and the P1 job then starts on the freed GPUs without waiting
 * for some unrelated event. */
static void test_p1_dp_shrink_then_starts(void **state)
{
    (void)state;
    ef_t *f = train_only("4x8");
    tide_job_spec_t el = ef_job("elastic", 3, 16, 8, 1, 100000);
    tide_job_spec_t p3 = ef_job("p3", 3, 8, 8, 0, 100000);
    tide_job_spec_t p2 = ef_job("p2", 2, 8, 8, 0, 100000);
    int32_t he = start_job(f, 0, &el);
    int32_t h3 = start_job(f, 1, &p3);
    start_job(f, 2, &p2);
    tide_job_spec_t p1 = ef_job("p1", 1, 8, 8, 0, 3600);
    size_t mark = f->nlog;
    int32_t h = ef_submit(f, 100, &p1);
    const ef_act_t *rs = ef_find(f, mark, TIDE_ACT_JOB_RESIZE, -1, he);
    assert_non_null(rs);
    assert_int_equal(rs->a.width, 1);
    assert_int_equal(rs->a.n_gpus, 8);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, -1, -1), 0);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_STOP, -1, -1), 0);
    assert_int_equal(ef_info(f, h3).state, TIDE_JOB_RUNNING);
    /* the node given up by the shrink */
    int32_t kept[64];
    int nk = ef_job_gpus(f, he, kept);
    assert_int_equal(nk, 8);
    /* within one control period (and no other event), the P1 job runs */
    for (tide_time_t t = 120; t <= 1200; t += 60)
        ef_tick(f, t);
    const ef_act_t *st = ef_find(f, mark, TIDE_ACT_JOB_START, -1, h);
    if (!st)
        fail_msg("P1 job still %s 1100 s after the shrink freed 8 GPUs (idle: GPUs free while "
                 "it waits)",
                 tide_job_state_name(ef_info(f, h).state));
    assert_true(st->t <= 160);
    for (int k = 0; k < 8; k++)
        assert_int_not_equal(ef_gpus(f, st)[k] / 8, kept[0] / 8);
    ef_free(f);
}

/* A single high-speed domain of 72 GPUs (NVL72-like, "18x4:GB200/18") full
 * of 72 one-GPU P3 jobs: a P1 job must preempt one of them like anywhere
 * else (the planner must not assume a domain holds <= 64 jobs). */
static void test_preempt_on_large_domain(void **state)
{
    (void)state;
    ef_t *f = train_only("18x4:GB200/18");
    static char ids[72][16];
    tide_job_spec_t js[72];
    tide_event_t ev[72];
    for (int i = 0; i < 72; i++) {
        snprintf(ids[i], sizeof ids[i], "p3-%d", i);
        js[i] = ef_job(ids[i], 3, 1, 1, 0, 100000);
        ev[i] = ef_ev(TIDE_EV_JOB_SUBMIT);
        ev[i].job_spec = &js[i];
    }
    ef_step(f, 0, ev, 72);
    assert_int_equal(ef_count(f, 0, TIDE_ACT_JOB_START, -1, -1), 72);
    tide_job_spec_t p1 = ef_job("p1", 1, 1, 1, 0, 3600);
    size_t mark = f->nlog;
    int32_t h = ef_submit(f, 100, &p1);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_PRIORITY, -1), 1);
    const ef_act_t *ck = ef_find(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_PRIORITY, -1);
    ef_commit(f, 160, ck->a.job, 100);
    assert_int_equal(ef_info(f, h).state, TIDE_JOB_RUNNING);
    ef_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_p0_never_preempted),
        cmocka_unit_test(test_no_useless_priority_preemption),
        cmocka_unit_test(test_p1_preempts_p3_then_starts),
        cmocka_unit_test(test_p1_two_gangs_takes_both_p3),
        cmocka_unit_test(test_p1_takes_p2_only_when_p3_not_enough),
        cmocka_unit_test(test_priority_notice_deadline_without_lease),
        cmocka_unit_test(test_least_work_lost),
        cmocka_unit_test(test_victims_are_whole_jobs),
        cmocka_unit_test(test_p1_dp_shrink_then_starts),
        cmocka_unit_test(test_preempt_on_large_domain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
