/* Unit tests: agentic RL jobs (include/tide/rl.h, src/core/rl.c): the engine
 * jobs an RL job becomes (min replicas dedicated, lent pool jobs drained, not
 * checkpointed), the model's drain bound, the staleness bound under
 * arbitrary capacity changes, and determinism. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "tide/rl.h"

static tide_rl_spec_t spec(void)
{
    tide_rl_spec_t s = {.id = "rl", .team = "t", .priority = 2, .duration_s = 86400,
                        .trainer_gpus = 16, .step_s = 30, .batch = 128, .rollout_gpus = 2,
                        .replica_tps = 0.5, .replica_slots = 8, .len_sigma = 1.0,
                        .sync_s = 10, .drain_s = 60, .max_staleness = 2, .min_replicas = 2,
                        .max_replicas = 12, .seed = 7};
    assert_int_equal(tide_rl_spec_normalize(&s, NULL), 0);
    return s;
}

/* LENT: the trainer and min_replicas are dedicated at the job's priority;
 * the rest are P3 pool jobs of node-sized groups whose checkpoint is a
 * drain of drain_s and whose restore a weight sync, never periodic. */
static void test_jobs_min_dedicated_pool_drains(void **st)
{
    (void)st;
    tide_rl_spec_t s = spec();
    tide_rl_jobs_t j;
    assert_int_equal(tide_rl_jobs(&s, TIDE_RL_LENT, 0, &j, NULL), 0);
    assert_string_equal(j.v[TIDE_RL_JOB_TRAINER].id, "rl-trainer");
    assert_int_equal(j.v[TIDE_RL_JOB_TRAINER].gpus, s.trainer_gpus);
    const tide_job_spec_t *ro = &j.v[TIDE_RL_JOB_ROLLOUT];
    assert_int_equal(ro->gpus, s.min_replicas * s.rollout_gpus);
    assert_int_equal(ro->dp_min, s.min_replicas); /* not shrinkable: the floor */
    assert_int_equal(ro->priority, s.priority);
    int pooled = 0;
    for (int k = TIDE_RL_JOB_POOL; k < j.n; k++) {
        const tide_job_spec_t *p = &j.v[k];
        assert_int_equal(p->priority, TIDE_P3);
        assert_int_equal(p->gang_gpus, p->gpus); /* one gang, inside a node */
        assert_int_equal(p->dp_min, 1);
        assert_true(p->gpus <= 8 && p->gpus % s.rollout_gpus == 0);
        assert_int_equal(p->ckpt_s, s.drain_s);
        assert_int_equal(p->restore_s, s.sync_s);
        assert_true(p->ckpt_interval_s > p->duration_s);
        pooled += p->gpus / s.rollout_gpus;
    }
    assert_int_equal(pooled, s.max_replicas - s.min_replicas);
    tide_rl_jobs_free(&j);
    assert_int_equal(tide_rl_jobs(&s, TIDE_RL_FIXED, 5, &j, NULL), 0);
    assert_int_equal(j.n, 2);
    assert_int_equal(j.v[TIDE_RL_JOB_ROLLOUT].dp_min, 5);
    tide_rl_jobs_free(&j);
    tide_error_t e;
    assert_int_equal(tide_rl_jobs(&s, 7, 0, &j, &e), -1);
    s.rollout_gpus = 0; /* not normalized: refused, no division by zero */
    assert_int_equal(tide_rl_jobs(&s, TIDE_RL_LENT, 0, &j, &e), -1);
    assert_non_null(strstr(e.msg, "rollout_gpus"));
}

static void test_spec_errors(void **st)
{
    (void)st;
    tide_rl_spec_t s = spec();
    tide_error_t e;
    s.max_replicas = 1;
    assert_int_equal(tide_rl_spec_normalize(&s, &e), -1);
    assert_non_null(strstr(e.msg, "max_replicas"));
    s = spec();
    s.replica_tps = 0;
    assert_int_equal(tide_rl_spec_normalize(&s, &e), -1);
    assert_non_null(strstr(e.msg, "replica_tps"));
    s = spec();
    s.max_staleness = -1;
    assert_null(tide_rl_create(&s, 0, &e));
    assert_int_equal(tide_rl_accepts(5, 3, 2), 1);
    assert_int_equal(tide_rl_accepts(5, 2, 2), 0);
    assert_int_equal(tide_rl_accepts(5, 6, 2), 0);
}

static tide_rl_capacity_t cap(int ded, int lent, int draining)
{
    return (tide_rl_capacity_t){.trainer = 1, .trainer_held = 1, .dedicated = ded,
                                .lent = lent, .draining = draining};
}

/* A drain ahead of a rise: no new trajectories on the draining replicas,
 * in-flight ones finish or are abandoned by the bound; the trainer goes on
 * on the dedicated replicas; lent GPUs stop counting when they go. */
static void test_drain_bound_no_checkpoint(void **st)
{
    (void)st;
    tide_rl_spec_t s = spec();
    tide_rl_t *rl = tide_rl_create(&s, 0, NULL);
    tide_rl_capacity_t c = cap(2, 10, 0);
    assert_int_equal(tide_rl_set(rl, 0, &c, NULL), 0);
    tide_rl_advance(rl, 3600);
    tide_rl_stats_t a, b;
    tide_rl_stats(rl, &a);
    assert_true(a.version > 0);
    c = cap(2, 10, 10); /* the pool jobs got a notice: drain */
    assert_int_equal(tide_rl_set(rl, 3600, &c, NULL), 0);
    tide_rl_advance(rl, 3600 + s.drain_s);
    tide_rl_stats(rl, &b);
    assert_int_equal(b.drains, 10);
    assert_int_equal(tide_rl_drained(rl), 10); /* nothing left in flight */
    /* by the bound nothing is in flight on lent replicas: the pool can go */
    c = cap(2, 0, 0);
    long before = b.abandoned;
    assert_int_equal(tide_rl_set(rl, 3600 + s.drain_s, &c, NULL), 0);
    tide_rl_stats(rl, &b);
    assert_int_equal(b.abandoned, before); /* nothing left to abandon */
    assert_int_equal(b.drains_clean + (b.abandoned > a.abandoned ? 1 : 0) > 0, 1);
    double lent = b.lent_gpu_s;
    tide_rl_advance(rl, 7200);
    tide_rl_stats(rl, &b);
    assert_true(b.lent_gpu_s == lent); /* lent GPUs returned */
    assert_true(b.version > a.version + 10); /* the trainer went on */
    assert_true(b.max_accepted_staleness <= s.max_staleness);
    tide_rl_destroy(rl);
}

/* With a long tail and a short bound, a drain abandons what did not finish,
 * and only that. */
static void test_drain_abandons_at_bound(void **st)
{
    (void)st;
    tide_rl_spec_t s = spec();
    s.len_sigma = 2.0;
    s.drain_s = 1;
    tide_rl_t *rl = tide_rl_create(&s, 0, NULL);
    tide_rl_capacity_t c = cap(2, 10, 0);
    tide_rl_set(rl, 0, &c, NULL);
    c = cap(2, 10, 10);
    tide_rl_set(rl, 600, &c, NULL);
    tide_rl_stats_t a, b;
    tide_rl_stats(rl, &a);
    tide_rl_advance(rl, 602);
    tide_rl_stats(rl, &b);
    assert_true(b.abandoned > a.abandoned);
    c = cap(2, 0, 0);
    tide_rl_set(rl, 602, &c, NULL);
    tide_rl_stats(rl, &b);
    assert_true(b.drains_clean < b.drains);
    tide_rl_destroy(rl);
}

static uint64_t mix(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

/* Arbitrary capacity changes (dedicated, lent, draining, trainer pauses):
 * no accepted trajectory is older than max_staleness, the histogram adds up,
 * and min replicas given as dedicated are never touched by a drain. Returns
 * a digest of the run for the determinism test. */
static double random_run(int stale, uint64_t seed)
{
    tide_rl_spec_t s = spec();
    s.max_staleness = stale;
    s.seed = seed;
    tide_rl_t *rl = tide_rl_create(&s, 0, NULL);
    uint64_t x = seed;
    for (tide_time_t t = 0; t < 40000; t += 1 + (tide_time_t)(mix(&x) % 600)) {
        int lent = (int)(mix(&x) % 11);
        tide_rl_capacity_t c = cap(s.min_replicas, lent, lent ? (int)(mix(&x) % (lent + 1)) : 0);
        c.trainer = mix(&x) % 8 != 0;
        assert_int_equal(tide_rl_set(rl, t, &c, NULL), 0);
    }
    tide_rl_advance(rl, 50000);
    tide_rl_stats_t r;
    tide_rl_stats(rl, &r);
    assert_true(r.max_accepted_staleness <= stale);
    long sum = 0;
    for (int k = 0; k <= stale; k++)
        sum += tide_rl_staleness_count(rl, k);
    assert_int_equal(sum, r.accepted);
    long extra = r.accepted - (long)r.version * s.batch; /* the batch being trained on */
    assert_true(extra == 0 || extra == s.batch);
    assert_true(r.generated >= r.accepted);
    /* dedicated replicas ran the whole time: 2 replicas x 2 GPUs x 50000 s */
    assert_true(fabs(r.dedicated_gpu_s - 2.0 * 2 * 50000) < 1e-3);
    size_t n;
    const double *steps = tide_rl_step_times(rl, &n);
    assert_int_equal(n, (size_t)r.version);
    double d = r.wait_s + 3 * (double)r.generated + 7 * (double)r.dropped_stale + r.lent_gpu_s;
    for (size_t i = 0; i < n; i++)
        d += steps[i] * (double)(i % 13);
    tide_rl_destroy(rl);
    return d;
}

static void test_staleness_bound(void **st)
{
    (void)st;
    for (int stale = 0; stale <= 4; stale++)
        for (uint64_t seed = 1; seed <= 4; seed++)
            random_run(stale, seed);
}

static void test_deterministic(void **st)
{
    (void)st;
    assert_true(random_run(2, 11) == random_run(2, 11));
    assert_true(random_run(1, 3) == random_run(1, 3));
}

static void test_bad_inputs(void **st)
{
    (void)st;
    tide_rl_spec_t s = spec();
    tide_rl_t *rl = tide_rl_create(&s, 100, NULL);
    tide_error_t e;
    tide_rl_capacity_t c = cap(1, 2, 3); /* draining > lent */
    assert_int_equal(tide_rl_set(rl, 200, &c, &e), -1);
    c = cap(1, 0, 0);
    assert_int_equal(tide_rl_set(rl, 50, &c, &e), -1); /* backwards */
    assert_int_equal(tide_rl_set(rl, 200, &c, &e), 0);
    tide_rl_destroy(rl);
    tide_rl_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jobs_min_dedicated_pool_drains),
        cmocka_unit_test(test_spec_errors),
        cmocka_unit_test(test_drain_bound_no_checkpoint),
        cmocka_unit_test(test_drain_abandons_at_bound),
        cmocka_unit_test(test_staleness_bound),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_bad_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
