/* RL weight syncs moved by a driver (include/tide/rl.h, "external syncs";
 * src/core/rl.c): a sync ends when the driver says, not after sync_s; the
 * syncs started are reported once; a replica removed while syncing no longer
 * waits; weights_gb's default; when no trainer step can end before. */
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
                        .trainer_gpus = 16, .step_s = 30, .batch = 16, .rollout_gpus = 2,
                        .replica_tps = 0.5, .replica_slots = 8, .sync_s = 10, .drain_s = 60,
                        .max_staleness = 2, .min_replicas = 2, .max_replicas = 4, .seed = 7};
    assert_int_equal(tide_rl_spec_normalize(&s, NULL), 0);
    return s;
}

static void test_weights_gb(void **st)
{
    (void)st;
    tide_rl_spec_t s = spec();
    assert_true(s.weights_gb == 32); /* 16 GB per rollout GPU */
    s.weights_gb = 140;
    assert_int_equal(tide_rl_spec_normalize(&s, NULL), 0);
    assert_true(s.weights_gb == 140);
    tide_error_t err = {0};
    s.weights_gb = -1;
    assert_int_equal(tide_rl_spec_normalize(&s, &err), -1);
    assert_non_null(strstr(err.msg, "weights_gb"));
}

static tide_rl_stats_t stats(const tide_rl_t *rl)
{
    tide_rl_stats_t x;
    tide_rl_stats(rl, &x);
    return x;
}

static void test_external_sync(void **st)
{
    (void)st;
    tide_rl_spec_t s = spec();
    tide_rl_t *rl = tide_rl_create(&s, 0, NULL), *ref = tide_rl_create(&s, 0, NULL);
    tide_rl_set_external_sync(rl, 1);
    tide_rl_capacity_t cap = {.trainer = 1, .trainer_held = 1, .dedicated = 2};
    assert_int_equal(tide_rl_set(rl, 0, &cap, NULL), 0);
    assert_int_equal(tide_rl_set(ref, 0, &cap, NULL), 0);
    tide_rl_sync_t v[8];
    assert_int_equal(tide_rl_syncs_started(rl, v, 8), 2);
    assert_int_equal(v[0].rep, 0);
    assert_int_equal(v[1].rep, 1);
    assert_int_equal(v[0].lent, 0);
    assert_true(v[0].t == 0);
    assert_int_equal(tide_rl_syncs_started(rl, v + 2, 6), 0); /* reported once */
    assert_int_equal(tide_rl_syncs_started(ref, v + 2, 6), 0); /* not external: none */
    /* nothing generated until the driver says the weights are there */
    tide_rl_advance(rl, 100);
    tide_rl_advance(ref, 100);
    assert_int_equal(stats(rl).generated, 0);
    assert_true(stats(ref).generated > 0); /* synced after sync_s */
    assert_int_equal(tide_rl_sync_waiting(rl, 0, v[0].seq), 1);
    assert_int_equal(tide_rl_sync_waiting(rl, 0, v[0].seq + 1), 0);
    /* done "at 50": the model is at 100, so from now on */
    assert_int_equal(tide_rl_sync_done(rl, 0, v[0].seq, 50), 0);
    assert_int_equal(tide_rl_sync_waiting(rl, 0, v[0].seq), 0);
    assert_int_equal(tide_rl_sync_done(rl, 0, v[0].seq, 50), -1);
    /* replica 1 goes while syncing: it no longer waits, and is not done later */
    cap.dedicated = 1;
    assert_int_equal(tide_rl_set(rl, 100, &cap, NULL), 0);
    assert_int_equal(tide_rl_sync_waiting(rl, 1, v[1].seq), 0);
    assert_int_equal(tide_rl_sync_done(rl, 1, v[1].seq, 100), -1);
    tide_rl_advance(rl, 200);
    assert_true(stats(rl).generated > 0);
    assert_int_equal(tide_rl_sync_waiting(rl, 99, 1), 0); /* no such replica */
    tide_rl_destroy(rl);
    tide_rl_destroy(ref);
}

/* No trainer step ends before tide_rl_next_step_end: waiting for its batch,
 * the model's time + step_s; computing, the step's end; stopped, never. */
static void test_next_step_end(void **st)
{
    (void)st;
    tide_rl_spec_t s = spec();
    tide_rl_t *rl = tide_rl_create(&s, 0, NULL);
    assert_true(isinf(tide_rl_next_step_end(rl))); /* no trainer yet */
    tide_rl_capacity_t cap = {.trainer = 1, .trainer_held = 1, .dedicated = 2};
    assert_int_equal(tide_rl_set(rl, 0, &cap, NULL), 0);
    assert_true(tide_rl_next_step_end(rl) == 30);
    /* step by step: every step ends at or after what was announced */
    double bound = tide_rl_next_step_end(rl);
    for (tide_time_t t = 1; t <= 3000; t++) {
        int before = stats(rl).version;
        tide_rl_advance(rl, t);
        if (stats(rl).version > before) /* a step ended in (t - 1, t] */
            assert_true((double)t >= bound);
        bound = tide_rl_next_step_end(rl);
        assert_true(bound >= (double)t);
    }
    assert_true(stats(rl).version > 0);
    cap.trainer = 0;
    assert_int_equal(tide_rl_set(rl, 3000, &cap, NULL), 0);
    assert_true(isinf(tide_rl_next_step_end(rl)));
    tide_rl_destroy(rl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weights_gb),
        cmocka_unit_test(test_external_sync),
        cmocka_unit_test(test_next_step_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
