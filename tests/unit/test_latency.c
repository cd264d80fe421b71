/* The serving latency model (src/world/latency.c): conservation of requests,
 * queueing when demand exceeds ready capacity, bounded queue, no latency
 * beyond the target when capacity suffices, determinism; a service's
 * figures do not depend on what other services of the model did between its
 * steps (the per-service memo of the last rate and bin). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "world/latency.h"

static tide_latency_t *one(double rps)
{
    tide_latency_spec_t sp = {.replica_rps = rps};
    tide_latency_t *m = tide_latency_create(&sp, 1);
    assert_non_null(m);
    return m;
}

static void assert_conserved(const tide_latency_t *m, int s)
{
    tide_latency_stats_t st;
    assert_int_equal(tide_latency_stats(m, s, &st), 0);
    double sum = st.served + st.queued + st.rejected;
    assert_true(fabs(sum - st.arrived) <= 1e-6 * (st.arrived > 1 ? st.arrived : 1));
}

static void conservation(void **state)
{
    (void)state;
    tide_latency_spec_t sp[2] = {{.replica_rps = 10}, {.replica_rps = 3, .queue_max_s = 5}};
    tide_latency_t *m = tide_latency_create(sp, 2);
    assert_non_null(m);
    /* below, at, above capacity, no replica, back */
    const double dem[] = {5, 20, 35, 50, 0, 12, 80, 1};
    const int ready[] = {2, 2, 2, 1, 0, 3, 0, 4};
    for (size_t i = 0; i < sizeof dem / sizeof dem[0]; i++) {
        tide_latency_advance(m, 0, 60 + 7.0 * (double)i, dem[i], ready[i]);
        tide_latency_advance(m, 1, 13, dem[i] / 4, ready[i]);
        assert_conserved(m, 0);
        assert_conserved(m, 1);
        assert_conserved(m, -1);
    }
    tide_latency_stats_t st;
    assert_int_equal(tide_latency_stats(m, -1, &st), 0);
    assert_true(st.rejected > 0); /* demand with no replica is rejected at once */
    assert_int_equal(tide_latency_stats(m, 2, &st), -1);
    tide_latency_destroy(m);
}

static void enough_capacity_meets_targets(void **state)
{
    (void)state;
    tide_latency_t *m = one(10);
    for (int i = 0; i < 50; i++) /* up to 100% of ready capacity */
        tide_latency_advance(m, 0, 300, 3 + 0.54 * i, 3);
    tide_latency_stats_t st;
    assert_int_equal(tide_latency_stats(m, 0, &st), 0);
    const tide_latency_spec_t *sp = tide_latency_spec(m, 0);
    assert_true(st.rejected == 0 && st.queued < 1e-9);
    assert_true(st.ttft_p99_s > 0 && st.ttft_p99_s <= sp->ttft_target_s);
    assert_true(st.tbt_p99_s > 0 && st.tbt_p99_s <= sp->tbt_target_s);
    assert_true(st.ttft_p50_s <= st.ttft_p99_s && st.tbt_p50_s <= st.tbt_p99_s);
    assert_true(st.ttft_attain == 1.0 && st.tbt_attain == 1.0);
    tide_latency_destroy(m);
}

/* P99 TTFT after a shortfall of length d (demand 1.5x ready capacity). */
static double ttft_after_shortfall(double d, tide_latency_stats_t *out)
{
    tide_latency_spec_t sp = {.replica_rps = 10, .queue_max_s = 1e6};
    tide_latency_t *m = tide_latency_create(&sp, 1);
    tide_latency_advance(m, 0, 3600, 10, 2);
    tide_latency_advance(m, 0, d, 30, 2);
    tide_latency_advance(m, 0, 3600, 10, 4); /* capacity back: the queue drains */
    assert_int_equal(tide_latency_stats(m, 0, out), 0);
    tide_latency_destroy(m);
    return out->ttft_p99_s;
}

static void ttft_grows_with_queue(void **state)
{
    (void)state;
    tide_latency_stats_t a, b, c;
    double t0 = ttft_after_shortfall(0.5, &a), t1 = ttft_after_shortfall(600, &b),
           t2 = ttft_after_shortfall(1800, &c);
    assert_true(t0 < t1 && t1 < t2);
    assert_true(a.max_queue < b.max_queue && b.max_queue < c.max_queue);
    assert_true(c.ttft_attain < b.ttft_attain && b.ttft_attain < 1.0);
    assert_true(c.queued < 1e-6); /* drained */
}

static void queue_is_bounded(void **state)
{
    (void)state;
    tide_latency_spec_t sp = {.replica_rps = 10, .queue_max_s = 20};
    tide_latency_t *m = tide_latency_create(&sp, 1);
    tide_latency_advance(m, 0, 7200, 50, 2); /* 2.5x capacity for two hours */
    tide_latency_stats_t st;
    assert_int_equal(tide_latency_stats(m, 0, &st), 0);
    assert_true(st.max_queue <= 20 * 20 + 1e-9);
    assert_true(st.rejected > 0);
    /* the worst wait is the bound plus prefill */
    assert_true(st.ttft_p99_s <= 20 * 1.1 + 1);
    assert_conserved(m, 0);
    tide_latency_destroy(m);
}

static void deterministic_and_validated(void **state)
{
    (void)state;
    tide_latency_stats_t x[2];
    for (int k = 0; k < 2; k++) {
        tide_latency_t *m = one(7);
        for (int i = 0; i < 100; i++)
            tide_latency_advance(m, 0, 1 + i % 17, (i * 37) % 50, i % 5);
        assert_int_equal(tide_latency_stats(m, 0, &x[k]), 0);
        tide_latency_destroy(m);
    }
    assert_memory_equal(&x[0], &x[1], sizeof x[0]);
    tide_latency_spec_t bad = {.replica_rps = 0};
    assert_null(tide_latency_create(&bad, 1));
    bad = (tide_latency_spec_t){.replica_rps = 1, .ttft_target_s = -1};
    assert_null(tide_latency_create(&bad, 1));
    bad = (tide_latency_spec_t){.replica_rps = 1, .decode_tps = NAN};
    assert_null(tide_latency_create(&bad, 1));
    tide_latency_t *m = one(1);
    tide_latency_advance(m, 0, -5, 10, 1);
    tide_latency_advance(m, 3, 5, 10, 1);
    tide_latency_advance(m, 0, 5, NAN, 1);
    tide_latency_stats_t st;
    assert_int_equal(tide_latency_stats(m, 0, &st), 0);
    assert_true(st.arrived == 0 && st.ttft_p99_s == 0 && st.ttft_attain == 1.0);
    tide_latency_destroy(m);
}

/* Two services stepped interleaved, with steady runs (the same rate for many
 * steps: the memo's case) and jumps, against each alone in its own model. */
static void services_independent(void **state)
{
    (void)state;
    tide_latency_spec_t sp[2] = {{.replica_rps = 7}, {.replica_rps = 3, .prompt_tokens = 4096}};
    tide_latency_t *both = tide_latency_create(sp, 2);
    tide_latency_t *alone[2] = {tide_latency_create(&sp[0], 1), tide_latency_create(&sp[1], 1)};
    assert_non_null(both);
    uint32_t r = 12345;
    for (int i = 0; i < 2000; i++) {
        int s = i % 3 == 0;
        r = r * 1103515245u + 12345u;
        double dem = (i / 50) % 4 == 0 ? 20.0 : (double)(r >> 16 & 63);
        int ready = (i / 30) % 6;
        double dt = 1 + (r >> 8 & 7);
        tide_latency_advance(both, s, dt, dem, ready);
        tide_latency_advance(alone[s], 0, dt, dem, ready);
    }
    for (int s = 0; s < 2; s++) {
        tide_latency_stats_t a, b;
        assert_int_equal(tide_latency_stats(both, s, &a), 0);
        assert_int_equal(tide_latency_stats(alone[s], 0, &b), 0);
        assert_true(a.served > 0 && a.ttft_p99_s > 0);
        assert_memory_equal(&a, &b, sizeof a);
        tide_latency_destroy(alone[s]);
    }
    tide_latency_destroy(both);
}

/* Both models' figures (every service and the total) are the same to the
 * last bit, and the run served and rejected requests (and, with
 * need_queue, queued some); destroys both. */
static void assert_same_then_destroy(tide_latency_t *fast, tide_latency_t *full, int need_queue)
{
    for (int s = -1; s < 2; s++) {
        tide_latency_stats_t a, b;
        assert_int_equal(tide_latency_stats(fast, s, &a), 0);
        assert_int_equal(tide_latency_stats(full, s, &b), 0);
        assert_true(a.served > 0 && a.rejected > 0);
        if (need_queue)
            assert_true(a.max_queue > 0);
        assert_memory_equal(&a, &b, sizeof a);
    }
    tide_latency_destroy(fast);
    tide_latency_destroy(full);
}

/* The steady-state shortcut (the sub-steps after one that left the queue
 * where it found it only add its increments) gives the same figures to the
 * last bit as computing every sub-step: steady loads below capacity, queues
 * that grow, drain and sit at their bound, no replica, fractional rates. */
static void shortcut_is_exact(void **state)
{
    (void)state;
    tide_latency_spec_t sp[2] = {{.replica_rps = 7}, {.replica_rps = 3, .queue_max_s = 2}};
    tide_latency_t *fast = tide_latency_create(sp, 2), *full = tide_latency_create(sp, 2);
    assert_non_null(fast);
    assert_non_null(full);
    tide_latency_set_full(full, 1);
    uint32_t r = 777;
    for (int i = 0; i < 5000; i++) {
        r = r * 1103515245u + 12345u;
        int s = (int)(r >> 30 & 1);
        double dem = (i / 40) % 3 == 0 ? 13.5 : (double)(r >> 12 & 31) / 1.7;
        int ready = (i / 25) % 5;
        double dt = 1 + (double)(r >> 4 & 15) * 0.37;
        tide_latency_advance(fast, s, dt, dem, ready);
        tide_latency_advance(full, s, dt, dem, ready);
    }
    assert_same_then_destroy(fast, full, 1);
}

/* Calls that repeat an earlier call's dt, rate, ready replicas and queue
 * (integral dt of a few seconds, rates and replicas that hold for a while:
 * the simulator's common case) reuse its first sub-step; the figures stay
 * those of computing every sub-step, to the last bit, for loads below
 * capacity, queues held at their bound (rejecting) and no replica. */
static void repeated_calls_are_exact(void **state)
{
    (void)state;
    tide_latency_spec_t sp[2] = {{.replica_rps = 5}, {.replica_rps = 2, .queue_max_s = 1}};
    tide_latency_t *fast = tide_latency_create(sp, 2), *full = tide_latency_create(sp, 2);
    assert_non_null(fast);
    assert_non_null(full);
    tide_latency_set_full(full, 1);
    uint32_t r = 4242;
    for (int i = 0; i < 20000; i++) {
        r = r * 1103515245u + 12345u;
        int s = (int)(r >> 30 & 1);
        double dem = (i / 300) % 4 == 0 ? 40.0 : (i / 300) % 4 == 1 ? 3.3 : 7.0 + (i / 300);
        int ready = (i / 500) % 4;
        double dt = 1 + (double)(r >> 4 & 3) + ((r >> 8 & 63) == 0 ? 9 : 0);
        tide_latency_advance(fast, s, dt, dem, ready);
        tide_latency_advance(full, s, dt, dem, ready);
    }
    assert_same_then_destroy(fast, full, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conservation),
        cmocka_unit_test(enough_capacity_meets_targets),
        cmocka_unit_test(ttft_grows_with_queue),
        cmocka_unit_test(queue_is_bounded),
        cmocka_unit_test(deterministic_and_validated),
        cmocka_unit_test(services_independent),
        cmocka_unit_test(shortcut_is_exact),
        cmocka_unit_test(repeated_calls_are_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
