/* Observed floor (config obs_window_s, `tide sim --obs-window`): the forecast
 * baseline a service is sized from is at least the highest 5-minute mean
 * demand of the last obs_window_s, times the learned burst multiplier.
 *
 * On a synthetic series of 10-minute steps (a daily curve times a uniform
 * step-to-step factor, seeded: levels a forecast cannot foresee, like
 * ServeGen's), checked every tick after the first day:
 *   - the target never falls below the replicas for the highest 5-minute
 *     mean of the window (the floor's contract);
 *   - the capacity held stays within 2x the need, at SLO 0.999.
 * (On this series the forecast and its multiplier already meet the SLO:
 * the floor neither helps nor costs much here; the measured effect on real
 * traces is in docs/engine.md, "Observed floor".)
 * On a flat series the floor changes nothing measurable. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine_fixture.h"

#define DAY 86400
#define STEP 600     /* demand changes every 10 minutes */
#define BUCKET 300   /* the forecast's bucket (forecast_bucket_s default) */
#define WINDOW 1800  /* the floor's window under test */
#define RPS 4.0      /* per replica (one GPU) */
#define DAYS 4


/* Step i's demand: 60..180 rps daily curve x U(1 - jitter, 1 + jitter). */
static double *make_steps(uint64_t seed, double jitter, int n)
{
    double *v = malloc((size_t)n * sizeof *v);
    uint64_t s = seed;
    for (int i = 0; i < n; i++) {
        double h = (double)((i * STEP) % DAY) / 3600.0;
        double day = 120.0 - 60.0 * cos(6.283185307179586 * (h - 4.0) / 24.0);
        v[i] = day * (1.0 - jitter + 2.0 * jitter * ef_rng_unit(&s));
    }
    return v;
}

typedef struct floor_ctx {
    const double *steps;
    int n_steps;
    tide_time_t window;      /* the floor checked (whether the engine has it or not) */
    tide_time_t last_t;
    double held_gpu_s, need_gpu_s;
    int checked, below;      /* ticks checked, ticks below the floor */
    tide_stats_t at_day1;
    int have_day1;
} floor_ctx_t;

/* Highest 5-minute mean over the buckets [now - window, now]: the steps are
 * whole buckets, so it is the highest step touching that span. */
static double floor_rps(const floor_ctx_t *c, tide_time_t now)
{
    tide_time_t from = (now - c->window) / BUCKET * BUCKET;
    double m = 0;
    for (tide_time_t i = from / STEP; i <= now / STEP && i < c->n_steps; i++)
        if (c->steps[i] > m)
            m = c->steps[i];
    return m;
}

static void floor_hook(ef_t *f, tide_time_t t, void *vctx)
{
    floor_ctx_t *c = vctx;
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    if (t >= DAY && !c->have_day1) {
        c->at_day1 = st;
        c->have_day1 = 1;
    }
    if (c->have_day1 && t > c->last_t && c->last_t >= DAY) {
        double dt = (double)(t - c->last_t);
        c->held_gpu_s += (double)(st.replicas_ready + st.replicas_warming) * dt;
        c->need_gpu_s += ceil(st.demand_rps / RPS - 1e-9) * dt;
    }
    if (t >= DAY && t % 60 == 0) {
        int target = tide_engine_service_target(f->e, 0, NULL);
        int want = (int)ceil(floor_rps(c, t) / RPS - 1e-9);
        c->checked++;
        if (target < want) {
            c->below++;
            if (c->below == 1 && getenv("TIDE_TEST_VERBOSE"))
                print_message("t=%lld: target %d below the floor %d\n", (long long)t, target, want);
        }
    }
    c->last_t = t;
}

typedef struct result {
    double ratio, missed, slo;
    int checked, below;
} result_t;

static result_t run(const double *steps, int n_steps, tide_time_t window)
{
    tide_config_t cfg = ef_cfg("elastic");
    cfg.check_invariants = 0;
    cfg.obs_window_s = window;
    ef_t *f = ef_new("48x8", &cfg); /* room for the peak several times over */
    f->check = 0;
    ef_service(f, "chat", 1, RPS, 1, 120);
    ef_input_t *in = NULL;
    size_t n = 0, cap = 0;
    for (int i = 0; i < n_steps; i++)
        ef_in_push(&in, &n, &cap, ef_in_demand((tide_time_t)i * STEP, 0, steps[i]));
    floor_ctx_t c = {.steps = steps, .n_steps = n_steps, .window = WINDOW};
    ef_run(f, in, n, (tide_time_t)DAYS * DAY, floor_hook, &c);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    double dem = st.requests_demanded - c.at_day1.requests_demanded;
    double srv = st.requests_served - c.at_day1.requests_served;
    result_t r = {c.held_gpu_s / c.need_gpu_s, dem - srv, srv / dem, c.checked, c.below};
    free(in);
    ef_free(f);
    return r;
}

static void test_floor_on_steps(void **state)
{
    (void)state;
    int n = DAYS * DAY / STEP + 1;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        double *steps = make_steps(seed, 0.3, n);
        result_t off = run(steps, n, 0), on = run(steps, n, WINDOW);
        if (getenv("TIDE_TEST_VERBOSE"))
            fprintf(stderr, "seed %llu: off held %.3fx need, SLO %.5f; floor held %.3fx, SLO %.5f\n",
                    (unsigned long long)seed, off.ratio, off.slo, on.ratio, on.slo);
        assert_true(on.checked > 1000);
        /* the check is not vacuous: without the floor the target does go
         * below the window's highest 5-minute mean */
        assert_true(off.below > 0);
        if (on.below)
            fail_msg("seed %llu: the target fell below the window's highest 5-minute mean on %d of %d ticks",
                     (unsigned long long)seed, on.below, on.checked);
        if (!(on.ratio <= 2.0))
            fail_msg("seed %llu: held %.3fx the need with the floor (> 2x)", (unsigned long long)seed,
                     on.ratio);
        if (!(on.slo >= 0.999))
            fail_msg("seed %llu: SLO %.5f with the floor (the forecast alone: %.5f)",
                     (unsigned long long)seed, on.slo, off.slo);
        free(steps);
    }
}

static void test_floor_changes_nothing_on_flat_demand(void **state)
{
    (void)state;
    int n = DAYS * DAY / STEP + 1;
    double *steps = malloc((size_t)n * sizeof *steps);
    for (int i = 0; i < n; i++)
        steps[i] = 100.0;
    result_t off = run(steps, n, 0), on = run(steps, n, WINDOW);
    assert_int_equal(on.below, 0);
    assert_int_equal(off.below, 0);
    assert_true(fabs(on.ratio - off.ratio) <= 0.01 * off.ratio);
    assert_true(on.slo >= 0.999 && off.slo >= 0.999);
    free(steps);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_floor_on_steps),
        cmocka_unit_test(test_floor_changes_nothing_on_flat_demand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
