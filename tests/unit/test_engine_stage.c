/* Weight staging (service stage_s): a replica started on GPUs reclaimed for
 * it under graceful reclaim carries a warm-up credit = min(stage_s, start -
 * reclaim), the time its weights could be fetched to host memory while the
 * victims checkpointed; the engine counts it due (and the world ready) that
 * much sooner. stage_s = 0, and any policy that kills its victims, give
 * exactly the actions of an unstaged service. The spec is validated. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine_fixture.h"

/* `policy` on 4x8, one 8-GPU service (warm-up 300 s, floor 1: node 0 is Tier
 * A) staging stage_s, the margin frozen at 5% (5 rps -> 1 replica, 15 -> 2),
 * three P3 jobs of 8 GPUs filling the shared nodes at t = 10. */
static ef_t *staged_new(const char *policy, tide_time_t stage_s)
{
    tide_config_t cfg = ef_cfg(policy);
    cfg.margin_min = cfg.margin_max = 0.05;
    ef_t *f = ef_new("4x8", &cfg);
    tide_service_spec_t s = {.name = "chat", .gpus_per_replica = 8, .replica_rps = 10,
                             .min_replicas = 1, .warmup_s = 300, .stage_s = stage_s};
    ef_service_full(f, &s);
    return f;
}

static ef_t *staged(const char *policy, tide_time_t stage_s, int32_t j[3])
{
    ef_t *f = staged_new(policy, stage_s);
    ef_demand(f, 0, 0, 5);
    static const char *ids[3] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        tide_job_spec_t js = ef_job(ids[i], 3, 8, 8, 0, 100000);
        j[i] = ef_submit(f, 10, &js);
        assert_int_equal(ef_info(f, j[i]).state, TIDE_JOB_RUNNING);
    }
    for (tide_time_t t = 60; t <= 840; t += 60)
        ef_tick(f, t);
    return f;
}

/* Demand rises at 900; the victim commits at t_commit: the credit of the
 * replica that starts then. */
static tide_time_t credit_after(tide_time_t stage_s, tide_time_t t_commit)
{
    int32_t j[3];
    ef_t *f = staged("elastic", stage_s, j);
    size_t mark = f->nlog;
    ef_demand(f, 900, 0, 15);
    const ef_act_t *ck = ef_find(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_RECLAIM, -1);
    assert_non_null(ck);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_REPLICA_START, -1, -1), 0);
    size_t m2 = f->nlog;
    ef_commit(f, t_commit, ck->a.job, (double)(t_commit - 10));
    const ef_act_t *rep = ef_find(f, m2, TIDE_ACT_REPLICA_START, -1, -1);
    assert_non_null(rep);
    assert_int_equal(rep->t, t_commit);
    tide_time_t credit = rep->a.credit;
    ef_free(f);
    return credit;
}

static void test_credit_is_the_checkpoint_wait(void **state)
{
    (void)state;
    assert_int_equal(credit_after(120, 930), 30);
    assert_int_equal(credit_after(120, 1000), 100);
}

static void test_credit_capped_at_stage_s(void **state)
{
    (void)state;
    assert_int_equal(credit_after(20, 960), 20);
    assert_int_equal(credit_after(300, 1500), 300); /* stage_s = warmup_s */
}

static void test_no_staging_no_credit(void **state)
{
    (void)state;
    assert_int_equal(credit_after(0, 960), 0);
}

/* Inputs of a run in the world: the three P3 jobs at t = 10 and the demand
 * (in[0] at t = 0, then n more points from 900 on, every 300 s). */
static size_t world_inputs(ef_input_t *in, tide_job_spec_t js[3], const double *rps, size_t n)
{
    static const char *ids[3] = {"a", "b", "c"};
    in[0] = ef_in_demand(0, 0, 5);
    for (int i = 0; i < 3; i++) {
        js[i] = ef_job(ids[i], 3, 8, 8, 0, 100000);
        in[1 + i] = ef_in_submit(10, &js[i]);
    }
    for (size_t i = 0; i < n; i++)
        in[4 + i] = ef_in_demand(900 + 300 * (tide_time_t)i, 0, rps[i]);
    return 4 + n;
}

/* In the world: the victim commits after ckpt_s = 60 s, the replica starts
 * then with a credit of 60 s and is ready 240 s later, not 300. */
static void test_world_ready_after_credit(void **state)
{
    (void)state;
    ef_t *f = staged_new("elastic", 120);
    tide_job_spec_t js[3];
    ef_input_t in[5];
    static const double rise[1] = {15};
    size_t n = world_inputs(in, js, rise, 1);
    ef_run(f, in, n, 1199, NULL, NULL);
    const ef_act_t *ck = ef_find(f, 0, TIDE_ACT_JOB_CKPT, TIDE_R_RECLAIM, -1);
    assert_non_null(ck);
    assert_int_equal(ck->t, 900);
    const ef_act_t *rep = ef_find_last(f, TIDE_ACT_REPLICA_START, -1, -1);
    assert_non_null(rep);
    assert_int_equal(rep->t, 960);
    assert_int_equal(rep->a.credit, 60);
    int32_t id = rep->a.replica;
    tide_replica_info_t ri;
    assert_int_equal(tide_engine_replica(f->e, id, &ri), 0);
    assert_int_equal(ri.ready, 0);
    ef_run(f, in, n, 1200, NULL, NULL);
    assert_int_equal(tide_engine_replica(f->e, id, &ri), 0);
    assert_int_equal(ri.ready, 1);
    ef_free(f);
}

/* A bursty demand for two hours over a full shared pool, replayed in the
 * world, a snapshot restored mid-run deciding alongside (it must decide the
 * same): the action stream of the whole run. */
static ef_t *replay(const char *policy, tide_time_t stage_s)
{
    ef_t *f = staged_new(policy, stage_s);
    f->shadow_at = 30;
    double rps[24];
    uint64_t rng = 11;
    for (int i = 0; i < 24; i++)
        rps[i] = 5 + 22 * ef_rng_unit(&rng);
    tide_job_spec_t js[3];
    ef_input_t in[28];
    size_t n = world_inputs(in, js, rps, 24);
    ef_run(f, in, n, 900 + 300 * 24, NULL, NULL);
    ef_shadow_finish(f);
    return f;
}

static int same_log(const ef_t *a, const ef_t *b)
{
    if (a->nlog != b->nlog)
        return 0;
    for (size_t i = 0; i < a->nlog; i++) {
        const tide_action_t *x = &a->log[i].a, *y = &b->log[i].a;
        if (a->log[i].t != b->log[i].t || x->kind != y->kind || x->reason != y->reason ||
            x->job != y->job || x->replica != y->replica || x->deadline != y->deadline ||
            x->credit != y->credit || x->n_gpus != y->n_gpus)
            return 0;
    }
    return 1;
}

/* preempt kills its victims and starts at once: nothing to overlap, the same
 * run whatever stage_s says. */
static void test_preempt_never_staged(void **state)
{
    (void)state;
    ef_t *a = replay("preempt", 0), *b = replay("preempt", 150);
    assert_true(ef_count(a, 0, TIDE_ACT_REPLICA_START, -1, -1) > 1);
    assert_true(same_log(a, b));
    for (size_t i = 0; i < b->nlog; i++)
        assert_int_equal(b->log[i].a.credit, 0);
    ef_free(a);
    ef_free(b);
}

/* elastic with stage_s = 0: no start carries a credit; with staging the
 * credited starts are exactly those on reclaimed GPUs, each within bounds. */
static void test_elastic_credits_bounded(void **state)
{
    (void)state;
    ef_t *a = replay("elastic", 0), *b = replay("elastic", 150);
    for (size_t i = 0; i < a->nlog; i++)
        assert_int_equal(a->log[i].a.credit, 0);
    int credited = 0;
    for (size_t i = 0; i < b->nlog; i++) {
        const tide_action_t *x = &b->log[i].a;
        if (x->kind != TIDE_ACT_REPLICA_START) {
            assert_int_equal(x->credit, 0);
            continue;
        }
        assert_true(x->credit >= 0 && x->credit <= 150);
        credited += x->credit > 0;
    }
    if (!credited)
        fail_msg("no replica of a reclaim carried a staging credit");
    ef_free(a);
    ef_free(b);
}

static void test_spec_validation(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("elastic");
    ef_t *f = ef_new("4x8", &cfg);
    tide_service_spec_t s = {.name = "chat", .gpus_per_replica = 8, .replica_rps = 10,
                             .min_replicas = 1, .warmup_s = 300, .stage_s = 301};
    tide_error_t err = {0};
    assert_true(tide_engine_add_service(f->e, &s, &err) < 0);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_non_null(strstr(err.msg, "stage_s"));
    s.stage_s = -1;
    assert_true(tide_engine_add_service(f->e, &s, &err) < 0);
    s.stage_s = 300;
    assert_int_equal(tide_engine_add_service(f->e, &s, &err), 0);
    assert_int_equal(tide_engine_service(f->e, 0)->stage_s, 300);
    ef_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_credit_is_the_checkpoint_wait),
        cmocka_unit_test(test_credit_capped_at_stage_s),
        cmocka_unit_test(test_no_staging_no_credit),
        cmocka_unit_test(test_world_ready_after_credit),
        cmocka_unit_test(test_preempt_never_staged),
        cmocka_unit_test(test_elastic_credits_bounded),
        cmocka_unit_test(test_spec_validation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
