/* Inference sizing (policy "elastic"): on a noisy series (a daily curve times
 * lognormal minute-level bursts, seeded) the capacity held stays within a
 * stated factor of the need while the SLO target is met; the learned lead
 * grows after capacity came late; demand history preloaded before the first
 * step gives a forecast that foresees the daily rise at minute one. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine_fixture.h"

#define DAY 86400


static double rng_normal(uint64_t *s)
{
    double u = ef_rng_unit(s), v = ef_rng_unit(s);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* Daily curve: 60 rps at 04:00, 180 rps at 16:00 (cosine). */
static double diurnal(tide_time_t t)
{
    double h = (double)(t % DAY) / 3600.0;
    return 120.0 - 60.0 * cos(6.283185307179586 * (h - 4.0) / 24.0);
}

typedef struct noisy_ctx {
    tide_time_t from;          /* measure from here */
    double held_gpu_s, need_gpu_s;
    tide_stats_t at_from;
    int have_from;
    tide_time_t last_t;
    double rps_per_replica;
} noisy_ctx_t;

static void noisy_hook(ef_t *f, tide_time_t t, void *vctx)
{
    noisy_ctx_t *c = vctx;
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    if (t >= c->from && !c->have_from) {
        c->at_from = st;
        c->have_from = 1;
    }
    if (c->have_from && t > c->last_t && c->last_t >= c->from) {
        /* over [last_t, t): replicas (1 GPU each) held and needed now */
        double dt = (double)(t - c->last_t);
        c->held_gpu_s += (double)(st.replicas_ready + st.replicas_warming) * dt;
        c->need_gpu_s += ceil(st.demand_rps / c->rps_per_replica - 1e-9) * dt;
    }
    c->last_t = t;
}

/* Run 5 days of diurnal x lognormal(sigma) bursts per minute; measure days
 * 3..5 (two days to learn). Returns the held/need ratio and the SLO there. */
static void run_noisy(double sigma, uint64_t seed, double *ratio, double *slo)
{
    tide_config_t cfg = ef_cfg("elastic");
    cfg.check_invariants = 0;
    ef_t *f = ef_new("24x8", &cfg); /* room for 2.5x the peak: the cluster never limits */
    f->check = 0;
    ef_service(f, "chat", 1, 4, 1, 120);
    ef_input_t *in = NULL;
    size_t n = 0, cap = 0;
    uint64_t s = seed;
    for (tide_time_t t = 0; t <= 5 * DAY; t += 60)
        ef_in_push(&in, &n, &cap, ef_in_demand(t, 0, diurnal(t) * exp(sigma * rng_normal(&s) - sigma * sigma / 2)));
    noisy_ctx_t c = {.from = 2 * DAY, .rps_per_replica = 4};
    ef_run(f, in, n, 5 * DAY, noisy_hook, &c);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    double dem = st.requests_demanded - c.at_from.requests_demanded;
    double srv = st.requests_served - c.at_from.requests_served;
    *ratio = c.held_gpu_s / c.need_gpu_s;
    *slo = srv / dem;
    free(in);
    ef_free(f);
}

/* The least constant multiple c of the mean that leaves at most `budget` of
 * lognormal(sigma) demand unserved: E[(X - c)+] / E[X] = budget. No policy
 * without foresight of the minute-level noise can hold less for the SLO. */
static double lognormal_bound(double sigma, double budget)
{
    double lo = 0.5, hi = 20;
    for (int i = 0; i < 200; i++) {
        double c = (lo + hi) / 2, d1 = (-log(c) + sigma * sigma / 2) / sigma, d2 = d1 - sigma;
        double loss = 0.5 * (1 + erf(d1 / sqrt(2))) - c * 0.5 * (1 + erf(d2 / sqrt(2)));
        if (loss > budget)
            lo = c;
        else
            hi = c;
    }
    return (lo + hi) / 2;
}

static void test_noisy_series_held_near_need(void **state)
{
    (void)state;
    static const double sigmas[] = {0.05, 0.15, 0.3};
    for (size_t i = 0; i < sizeof sigmas / sizeof sigmas[0]; i++)
        for (uint64_t seed = 1; seed <= 2; seed++) {
            double ratio, slo;
            run_noisy(sigmas[i], seed, &ratio, &slo);
            double bound = lognormal_bound(sigmas[i], 0.001);
            /* within 15% of the least capacity that meets the SLO; the old
             * model (peak x (1 + P95 error), latched for 30 min) held 1.6x..3.4x
             * the need on such series */
            if (!(ratio <= 1.15 * bound))
                fail_msg("sigma %.2f seed %llu: held %.3fx the need, bound %.3fx (SLO %.5f)",
                         sigmas[i], (unsigned long long)seed, ratio, bound, slo);
            if (sigmas[i] <= 0.05 && !(ratio <= 1.3))
                fail_msg("sigma %.2f seed %llu: held %.3fx the need (> 1.3x)", sigmas[i],
                         (unsigned long long)seed, ratio);
            if (!(slo >= 0.999))
                fail_msg("sigma %.2f seed %llu: SLO %.5f below 0.999 (held %.3fx the need)",
                         sigmas[i], (unsigned long long)seed, slo, ratio);
            if (getenv("TIDE_TEST_VERBOSE"))
                fprintf(stderr, "sigma %.2f seed %llu: held %.3fx need (bound %.3f), SLO %.5f\n",
                        sigmas[i], (unsigned long long)seed, ratio, bound, slo);
        }
}

/* ------------------------------------------------------------ learned lead */

static void ready_all(ef_t *f, tide_time_t t)
{
    /* every replica started so far and still warming becomes ready at t */
    tide_event_t ev[64];
    size_t n = 0;
    for (size_t i = 0; i < f->nlog && n < 64; i++) {
        if (f->log[i].a.kind != TIDE_ACT_REPLICA_START)
            continue;
        int32_t r = f->log[i].a.replica, stopped = 0;
        for (size_t k = i + 1; k < f->nlog; k++)
            if ((f->log[k].a.kind == TIDE_ACT_REPLICA_STOP) && f->log[k].a.replica == r)
                stopped = 1;
        if (stopped)
            continue;
        ev[n] = ef_ev(TIDE_EV_REPLICA_READY);
        ev[n].replica = r;
        n++;
    }
    ef_step(f, t, ev, n);
}

static void test_learned_lead_grows_after_late_capacity(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("elastic");
    cfg.scale_down_hold_s = 60;
    ef_t *f = ef_new("8x8", &cfg);
    ef_service(f, "chat", 8, 10, 1, 300);
    ef_demand(f, 0, 0, 5);
    ready_all(f, 300);
    tide_forecast_info_t fi;
    memset(&fi, 0, sizeof fi);
    assert_int_equal(tide_engine_forecast(f->e, 0, 600, &fi), 0);
    assert_int_equal(fi.late_s, 0);
    tide_time_t lead0 = fi.lead_s;
    assert_true(lead0 >= 300 + 300); /* warm-up + lead_extra_s at least */
    /* three rises (5 -> 25 rps); capacity comes 15 min after each */
    tide_time_t t = 360;
    for (int k = 0; k < 3; k++) {
        t = 3600 * (2 * k + 1);
        ef_ticks(f, t - 60, 60);
        ef_demand(f, t, 0, 25);
        ef_ticks(f, t + 900, 60);
        ready_all(f, t + 900);
        ef_ticks(f, t + 960, 60);
        ef_demand(f, t + 960, 0, 5);
        ef_ticks(f, t + 2 * 3600 - 120, 60);
    }
    assert_int_equal(tide_engine_forecast(f->e, 0, 600, &fi), 0);
    if (!(fi.late_s >= 900))
        fail_msg("lateness learned %lld s after capacity came 900 s late three times",
                 (long long)fi.late_s);
    assert_true(fi.lead_s >= lead0 + 900);
    ef_free(f);
}

/* ------------------------------------------------------------ history */

/* 50 rps at night, 200 rps from 08:00 to 20:00. */
static double daily(tide_time_t t)
{
    tide_time_t h = ((t % DAY) + DAY) % DAY / 3600;
    return h >= 8 && h < 20 ? 200 : 50;
}

static void test_history_forecast_at_minute_one(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("elastic");
    ef_t *f = ef_new("4x8", &cfg);
    ef_service(f, "chat", 1, 10, 1, 300);
    tide_error_t err = {0};
    /* three days before t = 0, one point every 5 min */
    for (tide_time_t t = -3 * DAY; t < 0; t += 300)
        assert_int_equal(tide_engine_demand_history(f->e, 0, t, daily(t), &err), 0);
    /* bad points: unknown service, negative rps, out of order */
    assert_int_equal(tide_engine_demand_history(f->e, 3, 0, 1, &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
    assert_int_equal(tide_engine_demand_history(f->e, 0, 0, -1, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_int_equal(tide_engine_demand_history(f->e, 0, -DAY, 50, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    /* the first step at 06:30 */
    tide_time_t t0 = 6 * 3600 + 1800;
    assert_int_equal(tide_engine_demand_history(f->e, 0, 0, 50, &err), 0);
    ef_demand(f, t0, 0, 50);
    tide_forecast_info_t fi;
    memset(&fi, 0, sizeof fi);
    assert_int_equal(tide_engine_forecast(f->e, 0, 3 * 3600, &fi), 0);
    if (!(fi.peak >= 190 && fi.peak <= 210))
        fail_msg("06:30 with 3 days of history: peak over 3 h %.1f rps (want ~200)", fi.peak);
    assert_int_equal(tide_engine_forecast(f->e, 0, 3600, &fi), 0);
    assert_true(fi.peak < 60);
    /* after the first step, points in the future are refused */
    assert_int_equal(tide_engine_demand_history(f->e, 0, t0 + 60, 50, &err), -1);
    /* capacity for the 08:00 rise is there before it */
    ef_ticks(f, 8 * 3600 - 60, 60);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    if (st.replicas_ready + st.replicas_warming < 20)
        fail_msg("07:59 of the first day: %d replicas for a 200 rps rise at 08:00",
                 st.replicas_ready + st.replicas_warming);

    /* without history the same morning is flat */
    ef_t *g = ef_new("4x8", &cfg);
    ef_service(g, "chat", 1, 10, 1, 300);
    ef_demand(g, t0, 0, 50);
    assert_int_equal(tide_engine_forecast(g->e, 0, 3 * 3600, &fi), 0);
    assert_true(fi.peak < 60);
    ef_free(g);
    ef_free(f);
}

/* ------------------------------------------------------------ error budget */

typedef struct surge_ctx {
    tide_time_t at;          /* the surge starts here */
    tide_time_t covered_at;  /* first time ready capacity covered it (-1) */
    double day1_demanded, day1_served; /* requests of the first day */
    double rps_per_replica;
} surge_ctx_t;

static void surge_hook(ef_t *f, tide_time_t t, void *vctx)
{
    surge_ctx_t *c = vctx;
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    if (t >= c->at && c->covered_at < 0 && st.ready_rps >= st.demand_rps)
        c->covered_at = t;
    if (t == DAY) {
        c->day1_demanded = st.requests_demanded;
        c->day1_served = st.requests_served;
    }
}

/* Five days of a calm diurnal series (lognormal 0.05 per minute) from a
 * cold start (no history), with a surge nobody could foresee on day 3 at
 * 14:00: 2.5x for 40 minutes after a calm day. Returns the SLO over the
 * whole run and how long the surge went uncovered. */
static void run_surge(tide_time_t period_s, double *slo, double *slo_day1, tide_time_t *uncovered)
{
    tide_config_t cfg = ef_cfg("elastic");
    cfg.check_invariants = 0;
    cfg.warm_start = 1; /* replicas started at t = 0 are ready: no history, but no empty cluster */
    cfg.slo_period_s = period_s;
    ef_t *f = ef_new("24x8", &cfg);
    f->check = 0;
    ef_service(f, "chat", 1, 4, 1, 120);
    ef_input_t *in = NULL;
    size_t n = 0, cap = 0;
    uint64_t s = 7;
    tide_time_t at = 3 * DAY + 14 * 3600;
    for (tide_time_t t = 0; t <= 5 * DAY; t += 60) {
        double x = diurnal(t) * exp(0.05 * rng_normal(&s) - 0.00125);
        if (t >= at && t < at + 2400)
            x *= 2.5;
        ef_in_push(&in, &n, &cap, ef_in_demand(t, 0, x));
    }
    surge_ctx_t c = {.at = at, .covered_at = -1, .rps_per_replica = 4};
    ef_run(f, in, n, 5 * DAY, surge_hook, &c);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    *slo = st.requests_served / st.requests_demanded;
    *slo_day1 = c.day1_served / c.day1_demanded;
    *uncovered = c.covered_at < 0 ? 5 * DAY : c.covered_at - at;
    free(in);
    ef_free(f);
}

/* The cold start (no history) and the surge overspend the error budget; the
 * compliance period pays it back in the hours after, which the short
 * feedback window alone does not. The first day, without history, still
 * meets the target; the surge is met within one warm-up (120 s) and a tick. */
static void test_budget_paid_back_after_cold_start_and_surge(void **state)
{
    (void)state;
    double slo, slo_short, day1, day1_short;
    tide_time_t unc, unc_short;
    run_surge(7 * DAY, &slo, &day1, &unc);
    run_surge(0, &slo_short, &day1_short, &unc_short);
    if (getenv("TIDE_TEST_VERBOSE"))
        fprintf(stderr, "surge: SLO %.5f, first day %.5f (period off: %.5f, %.5f), uncovered %llds\n",
                slo, day1, slo_short, day1_short, (long long)unc);
    if (!(day1 >= 0.999))
        fail_msg("first day without history: SLO %.5f below 0.999", day1);
    if (!(slo > slo_short))
        fail_msg("5 days: SLO %.5f with the compliance period, %.5f without", slo, slo_short);
    if (!(unc <= 120 + 60))
        fail_msg("the surge went uncovered for %lld s (warm-up 120 s)", (long long)unc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_noisy_series_held_near_need),
        cmocka_unit_test(test_learned_lead_grows_after_late_capacity),
        cmocka_unit_test(test_history_forecast_at_minute_one),
        cmocka_unit_test(test_budget_paid_back_after_cold_start_and_surge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
