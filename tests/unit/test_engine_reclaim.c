/* Reclaim (policy "elastic"): Tier A is never lent to training; a rise in
 * demand sends a checkpoint notice to a job on the shared pool, whose GPUs
 * move only once the checkpoint is committed (or the deadline passes, then the
 * engine stops the job itself and counts the lost work); elastic jobs shrink
 * instead; P3 goes before P2 before P1; every job on the shared pool holds a
 * lease. Policy "preempt" stops the job at once instead. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine_fixture.h"

static int32_t start_job(ef_t *f, tide_time_t t, const tide_job_spec_t *j)
{
    int32_t h = ef_submit(f, t, j);
    if (ef_info(f, h).state != TIDE_JOB_RUNNING)
        fail_msg("job %s did not start at submit", j->id);
    return h;
}

static int same_set(const int32_t *a, int na, const int32_t *b, int nb)
{
    if (na != nb)
        return 0;
    for (int i = 0; i < na; i++) {
        int found = 0;
        for (int k = 0; k < nb; k++)
            found |= a[i] == b[k];
        if (!found)
            return 0;
    }
    return 1;
}

typedef struct tier_ctx {
    long queued_with_free_reserve; /* time points with a queue and >= 8 free Tier A GPUs */
} tier_ctx_t;

static void tier_hook(ef_t *f, tide_time_t t, void *vctx)
{
    tier_ctx_t *ctx = vctx;
    for (int g = 0; g < f->ngpus; g++) {
        int32_t own;
        if (tide_engine_gpu_owner(f->e, g, &own) == 1 && tide_engine_gpu_zone(f->e, g) == 'A')
            fail_msg("t=%lld: job %d holds Tier A GPU %d", (long long)t, own, g);
    }
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    int free_a = 0;
    for (int g = 0; g < 16; g++) {
        int32_t own;
        free_a += tide_engine_gpu_owner(f->e, g, &own) == 0;
    }
    if (st.queue_jobs > 0 && free_a >= 8)
        ctx->queued_with_free_reserve++;
}

static void test_layout_and_tier_a_never_lent(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("elastic");
    cfg.reserve_gpus = 16; /* nodes 0-1: one replica on node 0, node 1 spare */
    ef_t *f = ef_new("4x8", &cfg);
    ef_service(f, "chat", 8, 10, 1, 300);
    ef_input_t *in = NULL;
    size_t n = 0, cap = 0;
    for (tide_time_t t = 0; t <= 8 * 3600; t += 300)
        ef_in_push(&in, &n, &cap, ef_in_demand(t, 0, 5));
    static const struct { const char *id; int prio, gpus, gang, dp_min; tide_time_t dur; } J[] = {
        {"el-p1", 1, 32, 8, 1, 4000}, {"p2-8", 2, 8, 8, 0, 3000}, {"p3-4", 3, 4, 4, 0, 2000},
        {"p3-1", 3, 1, 1, 0, 1500},   {"p1-16", 1, 16, 8, 0, 3000}, {"p2-2", 2, 2, 1, 1, 4000},
    };
    tide_job_spec_t specs[6];
    for (int i = 0; i < 6; i++) {
        specs[i] = ef_job(J[i].id, J[i].prio, J[i].gpus, J[i].gang, J[i].dp_min, J[i].dur);
        ef_in_push(&in, &n, &cap, ef_in_submit(60 + 600 * i, &specs[i]));
    }
    ef_in_sort(in, n);
    tier_ctx_t ctx = {0};
    ef_run(f, in, n, 8 * 3600, tier_hook, &ctx);
    for (int g = 0; g < 32; g++)
        assert_int_equal(tide_engine_gpu_zone(f->e, g), g < 16 ? 'A' : 'S');
    /* no START/RESIZE ever named a Tier A GPU (the fixture checks every step
     * too), though jobs waited while a whole reserve node was free */
    size_t starts = 0;
    for (size_t i = 0; i < f->nlog; i++) {
        const ef_act_t *x = &f->log[i];
        if (x->a.kind != TIDE_ACT_JOB_START && x->a.kind != TIDE_ACT_JOB_RESIZE)
            continue;
        starts++;
        for (int k = 0; k < x->a.n_gpus; k++)
            if (tide_engine_gpu_zone(f->e, ef_gpus(f, x)[k]) == 'A')
                fail_msg("t=%lld: job %d given Tier A GPU %d", (long long)x->t, x->a.job,
                         ef_gpus(f, x)[k]);
    }
    assert_true(starts >= 6);
    assert_true(ctx.queued_with_free_reserve > 10);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    assert_int_equal(st.jobs_completed, 6);
    for (int c = TIDE_C_P1; c <= TIDE_C_P3; c++)
        for (int s = 0; s < TIDE_S_COUNT; s++)
            assert_true(st.gpu_s[c][s][TIDE_T_A] == 0);
    free(in);
    ef_free(f);
}

/* Three P3 jobs on the three shared nodes, each with a lease. */
typedef struct three {
    ef_t *f;
    int32_t j[3];
} three_t;

static three_t three_jobs(int p0, int p1, int p2)
{
    three_t c;
    c.f = ef_elastic4();
    int prio[3] = {p0, p1, p2};
    static const char *ids[3] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        tide_job_spec_t s = ef_job(ids[i], prio[i], 8, 8, 0, 100000);
        c.j[i] = start_job(c.f, 10, &s);
    }
    return c;
}

static void test_leases_for_jobs_on_shared_pool(void **state)
{
    (void)state;
    three_t c = three_jobs(3, 3, 3);
    ef_t *f = c.f;
    tide_config_t def;
    tide_config_default(&def);
    for (int i = 0; i < 3; i++) {
        const ef_act_t *st = ef_find(f, 0, TIDE_ACT_JOB_START, -1, c.j[i]);
        const ef_act_t *g = ef_find(f, 0, TIDE_ACT_LEASE_GRANT, -1, c.j[i]);
        assert_non_null(st);
        assert_non_null(g);
        assert_int_equal(g->t, st->t);
        assert_int_equal(g->a.n_gpus, 8);
        assert_int_equal(g->a.deadline, st->t + def.lease_max_s);
        tide_job_info_t ji = ef_info(f, c.j[i]);
        assert_int_equal(ji.lease, g->a.lease);
        tide_lease_info_t li;
        assert_int_equal(tide_engine_lease(f->e, g->a.lease, &li), 0);
        assert_int_equal(li.job, c.j[i]);
        assert_int_equal(li.gpus, 8);
        assert_int_equal(li.latest_return, g->a.deadline);
        assert_int_equal(li.returned, 0);
        assert_int_equal(li.noticed, 0);
        assert_int_equal(li.late, 0);
    }
    assert_int_equal(tide_engine_leases(f->e), 3);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    assert_int_equal(st.leases_granted, 3);
    /* nobody needs the GPUs: leases are renewed, the jobs run past 6 h */
    for (tide_time_t t = 60; t <= 8 * 3600; t += 60) {
        if (t % 300 == 0)
            ef_demand(f, t, 0, 5);
        else
            ef_tick(f, t);
    }
    assert_int_equal(ef_count(f, 0, TIDE_ACT_JOB_STOP, -1, -1), 0);
    assert_true(ef_count(f, 0, TIDE_ACT_LEASE_RENEW, -1, -1) >= 3);
    for (int i = 0; i < 3; i++) {
        tide_job_info_t ji = ef_info(f, c.j[i]);
        assert_int_equal(ji.state, TIDE_JOB_RUNNING);
        tide_lease_info_t li;
        assert_int_equal(tide_engine_lease(f->e, ji.lease, &li), 0);
        assert_true(li.latest_return > 8 * 3600);
    }
    tide_engine_stats(f->e, &st);
    assert_true(st.borrowed_gpu_s > 0);
    ef_free(f);
}

static void test_reclaim_waits_for_commit(void **state)
{
    (void)state;
    three_t c = three_jobs(3, 3, 3);
    ef_t *f = c.f;
    for (tide_time_t t = 60; t <= 840; t += 60)
        ef_tick(f, t);
    size_t mark = f->nlog;
    ef_demand(f, 900, 0, 15); /* one more replica */
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, -1, -1), 1);
    const ef_act_t *ck = ef_find(f, mark, TIDE_ACT_JOB_CKPT, -1, -1);
    assert_int_equal(ck->a.reason, TIDE_R_RECLAIM);
    assert_true(ck->a.deadline > 900);
    int32_t v = ck->a.job;
    assert_true(v == c.j[0] || v == c.j[1] || v == c.j[2]);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_STOP, -1, -1), 0);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_REPLICA_START, -1, -1), 0);
    assert_int_equal(ef_info(f, v).state, TIDE_JOB_RECLAIMING);
    int32_t vg[64];
    int nv = ef_job_gpus(f, v, vg);
    assert_int_equal(nv, 8);
    tide_lease_info_t li;
    assert_int_equal(tide_engine_lease(f->e, ef_info(f, v).lease, &li), 0);
    assert_int_equal(li.noticed, 1);
    assert_true(li.latest_return <= ck->a.deadline);
    /* no commit yet: nothing moves */
    ef_tick(f, 960);
    ef_tick(f, 1020);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_STOP, -1, -1), 0);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_LEASE_RETURN, -1, -1), 0);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_REPLICA_START, -1, -1), 0);
    int32_t now_g[64];
    assert_true(same_set(vg, nv, now_g, ef_job_gpus(f, v, now_g)));
    /* commit: stop (reclaim), lease returned, replica on exactly those GPUs */
    tide_time_t t_commit = 1030;
    double progress = (double)(t_commit - 10);
    size_t m2 = f->nlog;
    ef_commit(f, t_commit, v, progress);
    const ef_act_t *stop = ef_find(f, m2, TIDE_ACT_JOB_STOP, -1, v);
    const ef_act_t *ret = ef_find(f, m2, TIDE_ACT_LEASE_RETURN, -1, v);
    const ef_act_t *rep = ef_find(f, m2, TIDE_ACT_REPLICA_START, -1, -1);
    assert_non_null(stop);
    assert_non_null(ret);
    assert_non_null(rep);
    assert_int_equal(stop->a.reason, TIDE_R_RECLAIM);
    assert_true(stop < rep);
    assert_true(same_set(ef_gpus(f, rep), rep->a.n_gpus, vg, nv));
    assert_int_equal(ef_count(f, m2, TIDE_ACT_REPLICA_START, -1, -1), 1);
    assert_int_equal(tide_engine_lease(f->e, ret->a.lease, &li), 0);
    assert_int_equal(li.returned, 1);
    assert_int_equal(li.late, 0);
    tide_job_info_t ji = ef_info(f, v);
    assert_int_equal(ji.state, TIDE_JOB_QUEUED);
    assert_int_equal(ji.lease, -1);
    assert_true(ji.lost_gpu_s < 1e-6);
    assert_true(fabs(ji.committed - progress) < 1e-6);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    assert_int_equal(st.reclaims, 1);
    assert_int_equal(st.reclaims_late, 0);
    /* the other two jobs were never touched */
    for (int i = 0; i < 3; i++)
        if (c.j[i] != v)
            assert_int_equal(ef_info(f, c.j[i]).state, TIDE_JOB_RUNNING);
    ef_free(f);
}

static void test_need_gone_before_commit_keeps_job(void **state)
{
    (void)state;
    three_t c = three_jobs(3, 3, 3);
    ef_t *f = c.f;
    size_t mark = f->nlog;
    ef_demand(f, 600, 0, 15);
    const ef_act_t *ck = ef_find(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_RECLAIM, -1);
    assert_non_null(ck);
    int32_t v = ck->a.job;
    ef_demand(f, 620, 0, 5); /* the need is gone */
    size_t m2 = f->nlog;
    ef_commit(f, 650, v, 640);
    assert_int_equal(ef_count(f, m2, TIDE_ACT_JOB_STOP, -1, v), 0);
    assert_int_equal(ef_count(f, m2, TIDE_ACT_LEASE_RENEW, -1, v), 1);
    assert_int_equal(ef_info(f, v).state, TIDE_JOB_RUNNING);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_REPLICA_START, -1, -1), 0);
    ef_free(f);
}

static void test_elastic_job_shrinks_instead(void **state)
{
    (void)state;
    ef_t *f = ef_elastic4();
    tide_job_spec_t s = ef_job("elastic", 3, 24, 8, 1, 100000);
    int32_t h = start_job(f, 10, &s);
    assert_int_equal(ef_info(f, h).width, 3);
    int32_t before[64];
    int nb = ef_job_gpus(f, h, before);
    assert_int_equal(nb, 24);
    size_t mark = f->nlog;
    ef_demand(f, 600, 0, 15);
    const ef_act_t *rs = ef_find(f, mark, TIDE_ACT_JOB_RESIZE, -1, h);
    assert_non_null(rs);
    assert_int_equal(rs->a.width, 2);
    assert_int_equal(rs->a.n_gpus, 16);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, -1, -1), 0);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_STOP, -1, -1), 0);
    /* the replica starts at once on the gang given up */
    const ef_act_t *rep = ef_find(f, mark, TIDE_ACT_REPLICA_START, -1, -1);
    assert_non_null(rep);
    assert_true(rs < rep);
    int32_t after[64];
    int na = ef_job_gpus(f, h, after);
    assert_int_equal(na, 16);
    for (int k = 0; k < rep->a.n_gpus; k++) {
        int32_t g = ef_gpus(f, rep)[k];
        int was = 0, is = 0;
        for (int i = 0; i < nb; i++)
            was |= before[i] == g;
        for (int i = 0; i < na; i++)
            is |= after[i] == g;
        assert_true(was && !is);
    }
    tide_job_info_t ji = ef_info(f, h);
    assert_int_equal(ji.state, TIDE_JOB_RUNNING);
    assert_int_equal(ji.width, 2);
    tide_lease_info_t li;
    assert_int_equal(tide_engine_lease(f->e, ji.lease, &li), 0);
    assert_int_equal(li.gpus, 16);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    assert_int_equal(st.shrinks, 1);
    ef_free(f);
}

static void test_reclaim_order_p3_p2_p1(void **state)
{
    (void)state;
    three_t c = three_jobs(1, 2, 3); /* a = P1, b = P2, c = P3 */
    ef_t *f = c.f;
    int32_t p1 = c.j[0], p2 = c.j[1], p3 = c.j[2];
    size_t mark = f->nlog;
    ef_demand(f, 600, 0, 15);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, -1, -1), 1);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_RECLAIM, p3), 1);
    ef_commit(f, 620, p3, 610);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_REPLICA_START, -1, -1), 1);
    mark = f->nlog;
    ef_demand(f, 640, 0, 25);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, -1, -1), 1);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_RECLAIM, p2), 1);
    ef_commit(f, 660, p2, 650);
    mark = f->nlog;
    ef_demand(f, 680, 0, 35);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_RECLAIM, p1), 1);
    ef_free(f);
}

static void test_deadline_enforced(void **state)
{
    (void)state;
    three_t c = three_jobs(3, 3, 3);
    ef_t *f = c.f;
    for (tide_time_t t = 60; t <= 840; t += 60)
        ef_tick(f, t);
    size_t mark = f->nlog;
    ef_demand(f, 900, 0, 15);
    const ef_act_t *ck = ef_find(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_RECLAIM, -1);
    assert_non_null(ck);
    int32_t v = ck->a.job;
    tide_time_t dl = ck->a.deadline;
    int32_t lease = ef_info(f, v).lease;
    int32_t vg[64];
    int nv = ef_job_gpus(f, v, vg);
    /* follow the engine's wake-ups, never committing */
    tide_time_t t = 900;
    int stopped_at = -1;
    while (t < dl + 300) {
        tide_time_t next = f->acts.next_wake;
        assert_true(next > t);
        if (t < dl)
            assert_true(next <= dl); /* the engine asks to be woken by the deadline */
        t = next;
        size_t m = f->nlog;
        ef_tick(f, t);
        if (ef_find(f, m, TIDE_ACT_JOB_STOP, -1, v)) {
            stopped_at = (int)t;
            break;
        }
        assert_int_equal(ef_info(f, v).state, TIDE_JOB_RECLAIMING);
    }
    assert_int_equal(stopped_at, dl);
    const ef_act_t *stop = ef_find(f, mark, TIDE_ACT_JOB_STOP, -1, v);
    assert_int_equal(stop->a.reason, TIDE_R_DEADLINE);
    double lost = (double)(dl - 10); /* nothing was ever committed */
    assert_true(fabs(stop->a.value - lost) < 1e-6);
    const ef_act_t *ret = ef_find(f, mark, TIDE_ACT_LEASE_RETURN, -1, v);
    assert_non_null(ret);
    assert_int_equal(ret->a.reason, TIDE_R_DEADLINE);
    tide_lease_info_t li;
    assert_int_equal(tide_engine_lease(f->e, lease, &li), 0);
    assert_int_equal(li.returned, 1);
    assert_int_equal(li.late, 1);
    tide_job_info_t ji = ef_info(f, v);
    assert_int_equal(ji.state, TIDE_JOB_QUEUED);
    assert_true(ji.lost_gpu_s > 0);
    assert_true(fabs(ji.lost_gpu_s - lost * 8) < 1e-6);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    assert_int_equal(st.reclaims_late, 1);
    assert_true(st.lost_gpu_s >= lost * 8 - 1e-6);
    assert_true(st.gpu_s[TIDE_C_P3][TIDE_S_LOST][TIDE_T_C] > 0);
    /* and the replica goes onto those GPUs */
    const ef_act_t *rep = ef_find(f, mark, TIDE_ACT_REPLICA_START, -1, -1);
    assert_non_null(rep);
    assert_int_equal(rep->t, dl);
    assert_true(same_set(ef_gpus(f, rep), rep->a.n_gpus, vg, nv));
    ef_assert_gpu_seconds(f);
    ef_free(f);
}

static void test_preempt_policy_stops_at_once(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("preempt");
    ef_t *f = ef_new("4x8", &cfg);
    ef_service(f, "chat", 8, 10, 1, 300);
    ef_demand(f, 0, 0, 5);
    int32_t j[3];
    static const char *ids[3] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        tide_job_spec_t s = ef_job(ids[i], 3, 8, 8, 0, 100000);
        j[i] = start_job(f, 10, &s);
        assert_int_equal(ef_count(f, 0, TIDE_ACT_LEASE_GRANT, -1, j[i]), 0);
    }
    for (tide_time_t t = 60; t <= 960; t += 60)
        ef_tick(f, t);
    /* one job commits a checkpoint at 500: its loss is smaller, it goes */
    ef_commit(f, 970, j[1], 500);
    size_t mark = f->nlog;
    ef_demand(f, 1000, 0, 15);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_CKPT, -1, -1), 0);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_JOB_STOP, -1, -1), 1);
    const ef_act_t *stop = ef_find(f, mark, TIDE_ACT_JOB_STOP, -1, -1);
    assert_int_equal(stop->a.reason, TIDE_R_PREEMPT);
    assert_int_equal(stop->a.job, j[1]);
    double lost = (double)(1000 - 10) - 500;
    assert_true(fabs(stop->a.value - lost) < 1e-6);
    tide_job_info_t ji = ef_info(f, j[1]);
    assert_int_equal(ji.state, TIDE_JOB_QUEUED);
    assert_true(fabs(ji.lost_gpu_s - lost * 8) < 1e-6);
    assert_true(fabs(ji.committed - 500) < 1e-6);
    const ef_act_t *rep = ef_find(f, mark, TIDE_ACT_REPLICA_START, -1, -1);
    assert_non_null(rep);
    assert_int_equal(rep->t, 1000);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    assert_int_equal(st.preemptions, 1);
    ef_free(f);
}

/* The node of a domain claimed for a replica fails while its job
 * checkpoints: the service still needs the replica and two other shared
 * nodes hold P3 work, so the engine must reclaim elsewhere (not wait for the
 * dead node to come back). */
static void test_claim_on_failed_node_reclaims_elsewhere(void **state)
{
    (void)state;
    three_t c = three_jobs(3, 3, 3);
    ef_t *f = c.f;
    size_t mark = f->nlog;
    ef_demand(f, 600, 0, 15);
    const ef_act_t *ck = ef_find(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_RECLAIM, -1);
    assert_non_null(ck);
    int32_t v = ck->a.job;
    int32_t vg[64];
    ef_job_gpus(f, v, vg);
    tide_event_t nf = ef_ev(TIDE_EV_NODE_FAILED);
    nf.node = ef_node_of(f, vg[0]);
    size_t m2 = f->nlog;
    ef_step(f, 630, &nf, 1);
    assert_int_equal(ef_count(f, m2, TIDE_ACT_JOB_STOP, TIDE_R_FAILURE, v), 1);
    for (tide_time_t t = 660; t <= 1800; t += 60) {
        if (t % 300 == 0)
            ef_demand(f, t, 0, 15);
        else
            ef_tick(f, t);
    }
    size_t notices = ef_count(f, m2, TIDE_ACT_JOB_CKPT, TIDE_R_RECLAIM, -1);
    size_t reps = ef_count(f, m2, TIDE_ACT_REPLICA_START, -1, -1);
    if (notices == 0 && reps == 0)
        fail_msg("20 min after the claimed node failed, no other job was asked to give "
                 "GPUs back and no replica started: the service stays one replica short");
    ef_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_and_tier_a_never_lent),
        cmocka_unit_test(test_leases_for_jobs_on_shared_pool),
        cmocka_unit_test(test_reclaim_waits_for_commit),
        cmocka_unit_test(test_need_gone_before_commit_keeps_job),
        cmocka_unit_test(test_elastic_job_shrinks_instead),
        cmocka_unit_test(test_reclaim_order_p3_p2_p1),
        cmocka_unit_test(test_deadline_enforced),
        cmocka_unit_test(test_preempt_policy_stops_at_once),
        cmocka_unit_test(test_claim_on_failed_node_reclaims_elsewhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
