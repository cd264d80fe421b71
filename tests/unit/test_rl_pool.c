/* Unit tests: the lent rollout pool sized from the trainer's measured wait
 * (tide_rl_pool_t, include/tide/rl.h), in a closed loop with the rollout
 * model (the lent replicas it wants are the ones the model gets): a trainer
 * starved by an undersized pool gets more replicas and waits less; an
 * oversized pool whose slots sit idle shrinks without starving the trainer;
 * the staleness bound holds throughout; bad configurations are refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "tide/rl.h"

static tide_rl_spec_t spec(int max_replicas)
{
    tide_rl_spec_t s = {.id = "rl", .team = "t", .priority = 2, .duration_s = 86400,
                        .trainer_gpus = 16, .step_s = 30, .batch = 128, .rollout_gpus = 2,
                        .replica_tps = 0.5, .replica_slots = 8, .len_sigma = 1.0,
                        .sync_s = 10, .drain_s = 60, .max_staleness = 2, .min_replicas = 2,
                        .max_replicas = max_replicas, .seed = 7};
    assert_int_equal(tide_rl_spec_normalize(&s, NULL), 0);
    return s;
}

typedef struct loop {
    tide_rl_t *rl;
    tide_rl_pool_t pool;
    tide_time_t t;
    int min_want, max_want;
} loop_t;

static void loop_init(loop_t *l, const tide_rl_spec_t *s, int start_want)
{
    memset(l, 0, sizeof *l);
    l->rl = tide_rl_create(s, 0, NULL);
    assert_non_null(l->rl);
    assert_int_equal(tide_rl_pool_init(&l->pool, s, NULL, NULL), 0);
    l->pool.want = start_want; /* the pool as a wrong declaration would size it */
    l->min_want = l->max_want = start_want;
}

/* Run until `until`, one engine tick (60 s) at a time, the lent replicas the
 * controller wants given at once; returns the trainer's wait fraction over
 * the run. */
static double loop_run(loop_t *l, tide_time_t until)
{
    tide_rl_stats_t a, b;
    tide_rl_stats(l->rl, &a);
    for (; l->t < until; l->t += 60) {
        tide_rl_capacity_t cap = {.trainer = 1, .trainer_held = 1,
                                  .dedicated = l->pool.min_replicas, .lent = l->pool.want};
        assert_int_equal(tide_rl_set(l->rl, l->t + 60, &cap, NULL), 0);
        tide_rl_stats(l->rl, &b);
        int w = tide_rl_pool_observe(&l->pool, &b);
        assert_true(w >= 0 && w <= l->pool.max_replicas - l->pool.min_replicas);
        l->min_want = w < l->min_want ? w : l->min_want;
        l->max_want = w > l->max_want ? w : l->max_want;
    }
    tide_rl_stats(l->rl, &b);
    double dw = b.wait_s - a.wait_s, dc = b.compute_s - a.compute_s;
    return dw + dc > 0 ? dw / (dw + dc) : 0;
}

/* Starved by an undersized pool (no lent replica at all), the trainer gets
 * more replicas from the measured wait, and waits less once it has them. */
static void test_starved_trainer_grows_pool(void **st)
{
    (void)st;
    tide_rl_spec_t s = spec(16);
    loop_t l;
    loop_init(&l, &s, 0);
    double before = loop_run(&l, 1800);
    assert_true(before > l.pool.cfg.target_wait); /* starved */
    double after = loop_run(&l, 4 * 3600);
    assert_true(l.pool.grows >= 1);
    assert_int_equal(l.pool.shrinks, 0);
    assert_true(l.pool.want > 0);
    double last = loop_run(&l, 6 * 3600);
    assert_true(last < before / 2);
    assert_true(after < before);
    tide_rl_stats_t x;
    tide_rl_stats(l.rl, &x);
    assert_true(x.max_accepted_staleness <= s.max_staleness);
    tide_rl_destroy(l.rl);
}

/* An oversized pool (every replica lent while the trainer consumes a
 * fraction): its slots sit idle behind the staleness gate, so it shrinks,
 * and the trainer is not starved by the smaller pool. */
static void test_oversized_pool_shrinks(void **st)
{
    (void)st;
    tide_rl_spec_t s = spec(40);
    loop_t l;
    loop_init(&l, &s, 38);
    double before = loop_run(&l, 1800);
    loop_run(&l, 4 * 3600);
    assert_true(l.pool.shrinks >= 1);
    assert_true(l.pool.want < 38);
    double last = loop_run(&l, 8 * 3600);
    assert_true(last <= before + l.pool.cfg.target_wait);
    assert_true(last <= 2 * l.pool.cfg.target_wait);
    /* it settles: the last hours changed the pool at most a few times */
    int changes = l.pool.grows + l.pool.shrinks;
    loop_run(&l, 12 * 3600);
    assert_true(l.pool.grows + l.pool.shrinks - changes <= 2);
    tide_rl_stats_t x;
    tide_rl_stats(l.rl, &x);
    assert_true(x.max_accepted_staleness <= s.max_staleness);
    long hist = 0;
    for (int k = 0; k <= s.max_staleness; k++)
        hist += tide_rl_staleness_count(l.rl, k);
    assert_int_equal(hist, x.accepted);
    tide_rl_destroy(l.rl);
}

/* The first want is the declared-rate estimate, within the spec's range;
 * nothing is decided before a trainer step ends; a change needs `patience`
 * agreeing steps (one starved step does not grow the pool). */
static void test_declared_start_and_hysteresis(void **st)
{
    (void)st;
    tide_rl_spec_t s = spec(16);
    tide_rl_pool_t p;
    assert_int_equal(tide_rl_pool_init(&p, &s, NULL, NULL), 0);
    /* 128 / 30 / 0.5 = 8.53 replicas x 1.25 = 10.7: 11, of which 2 dedicated */
    assert_int_equal(p.want, 9);
    tide_rl_stats_t m = {.now = 100, .version = 0, .wait_s = 100};
    assert_int_equal(tide_rl_pool_observe(&p, &m), 9); /* no step yet */
    p.want = 0;
    /* one starved step (waited 90 of 120 s, slots all busy, 2 replicas) */
    m = (tide_rl_stats_t){.now = 220, .version = 1, .wait_s = 190, .compute_s = 30,
                          .active_rep_s = 240, .slot_s = 240 * 8, .slot_busy_s = 240 * 8};
    assert_int_equal(tide_rl_pool_observe(&p, &m), 0);
    for (int k = 2; k <= p.cfg.patience; k++) {
        m.now += 120;
        m.version++;
        m.wait_s += 90;
        m.compute_s += 30;
        m.active_rep_s += 240;
        m.slot_s += 240 * 8;
        m.slot_busy_s += 240 * 8;
        tide_rl_pool_observe(&p, &m);
    }
    /* 2 replicas x 120 / 30 x 0.95 = 7.6: 8 in all, 6 lent */
    assert_int_equal(p.want, 6);
    assert_int_equal(p.grows, 1);
    s.min_replicas = s.max_replicas = 4;
    assert_int_equal(tide_rl_pool_init(&p, &s, NULL, NULL), 0);
    assert_int_equal(p.want, 0); /* nothing to lend */
}

static void test_bad_config(void **st)
{
    (void)st;
    tide_rl_spec_t s = spec(16);
    tide_rl_pool_t p;
    tide_rl_pool_cfg_t c;
    tide_error_t e;
    tide_rl_pool_cfg_default(&c);
    c.target_wait = 1;
    assert_int_equal(tide_rl_pool_init(&p, &s, &c, &e), -1);
    assert_int_equal(e.code, TIDE_EINVAL);
    assert_non_null(strstr(e.msg, "target_wait"));
    tide_rl_pool_cfg_default(&c);
    c.patience = 0;
    assert_int_equal(tide_rl_pool_init(&p, &s, &c, &e), -1);
    tide_rl_pool_cfg_default(&c);
    c.headroom = 0;
    assert_int_equal(tide_rl_pool_init(&p, &s, &c, &e), -1);
    s.max_replicas = 1; /* < min */
    assert_int_equal(tide_rl_pool_init(&p, &s, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "max_replicas"));
}

static void test_cfg_parse(void **st)
{
    (void)st;
    tide_rl_pool_cfg_t c;
    tide_error_t e;
    tide_rl_pool_cfg_default(&c);
    assert_int_equal(tide_rl_pool_cfg_parse("target_wait=0.1,patience=5", &c, &e), 0);
    assert_true(c.target_wait == 0.1 && c.patience == 5 && c.headroom == 0.25);
    assert_int_equal(tide_rl_pool_cfg_parse("headroom=0.5", &c, &e), 0);
    assert_true(c.headroom == 0.5 && c.patience == 5);
    const char *bad[] = {"target_wait", "target_wait=x", "colour=1", "patience=1.5",
                         "target_wait=1", "headroom=0", "patience=0", "patience=-3"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(tide_rl_pool_cfg_parse(bad[i], &c, &e), -1);
        assert_int_equal(e.code, TIDE_EINVAL);
        assert_true(c.headroom == 0.5 && c.patience == 5); /* unchanged */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_starved_trainer_grows_pool),
        cmocka_unit_test(test_oversized_pool_shrinks),
        cmocka_unit_test(test_declared_start_and_hysteresis),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_cfg_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
