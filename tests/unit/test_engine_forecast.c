/* Forecast and accounting: the safety margin grows after under-forecasts and
 * stays within [margin_min, margin_max]; the forecast uses yesterday's curve
 * (a daily rise is foreseen, and capacity is added before it); GPU-seconds
 * add up to GPUs x elapsed, by tier too. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine_fixture.h"

#define DAY 86400

static tide_forecast_info_t fc(const ef_t *f, int s, tide_time_t horizon)
{
    tide_forecast_info_t fi;
    memset(&fi, 0, sizeof fi);
    assert_int_equal(tide_engine_forecast(f->e, s, horizon, &fi), 0);
    return fi;
}

/* Demand points every 300 s, steps every 60 s, from the current time
 * (exclusive; 0 inclusive on a fresh fixture) to `until`. rps(t) gives the
 * demand. Checks the margin bounds at every step. */
static void feed(ef_t *f, tide_time_t until, double (*rps)(tide_time_t), double mmin, double mmax)
{
    tide_time_t t = f->stepped ? f->now + 60 : 0;
    for (; t <= until; t += 60) {
        if (t % 300 == 0)
            ef_demand(f, t, 0, rps(t));
        else
            ef_tick(f, t);
        tide_forecast_info_t fi = fc(f, 0, 600);
        if (fi.margin < mmin - 1e-12 || fi.margin > mmax + 1e-12)
            fail_msg("t=%lld: margin %.4f outside [%.4f, %.4f]", (long long)t, fi.margin, mmin,
                     mmax);
    }
}

static double steady(tide_time_t t) { (void)t; return 100; }

/* 100 rps, with a 250 rps burst in one 5-minute bucket of every 30 min. */
static double bursty(tide_time_t t) { return (t % 1800) / 300 == 3 ? 250 : 100; }

static void test_margin_grows_after_under_forecasts(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("elastic");
    cfg.margin_min = 0.05;
    cfg.margin_max = 0.8;
    ef_t *f = ef_new("4x8", &cfg);
    ef_service(f, "chat", 1, 10, 1, 300);
    feed(f, DAY, steady, cfg.margin_min, cfg.margin_max);
    tide_forecast_info_t a = fc(f, 0, 600);
    assert_true(a.samples > 100);
    assert_true(fabs(a.margin - cfg.margin_min) < 1e-12); /* a perfect forecast */
    assert_true(fabs(a.last_observed - 100) < 1e-9);
    feed(f, DAY + 12 * 3600, bursty, cfg.margin_min, cfg.margin_max);
    tide_forecast_info_t b = fc(f, 0, 600);
    assert_true(b.samples > a.samples);
    if (!(b.margin > a.margin + 0.1))
        fail_msg("margin %.4f after 12 h of under-forecasts (was %.4f)", b.margin, a.margin);
    /* 150% misses: the margin is capped */
    assert_true(fabs(b.margin - cfg.margin_max) < 1e-12);
    assert_true(b.peak_with_margin >= b.peak * (1 + cfg.margin_max) - 1e-9);
    ef_free(f);
}

/* Flat 50 rps at night, 200 rps from 08:00 to 20:00. */
static double daily(tide_time_t t)
{
    tide_time_t h = t % DAY / 3600;
    return h >= 8 && h < 20 ? 200 : 50;
}

static void test_forecast_uses_yesterday(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("elastic");
    ef_t *f = ef_new("4x8", &cfg);
    ef_service(f, "chat", 1, 10, 1, 300);
    tide_time_t t_look = 2 * DAY + 6 * 3600 + 1800; /* day 3, 06:30 */
    feed(f, t_look, daily, cfg.margin_min, cfg.margin_max);
    tide_forecast_info_t a = fc(f, 0, 3 * 3600);
    assert_true(fabs(a.last_observed - 50) < 1e-9);
    if (!(a.peak >= 190))
        fail_msg("day 3, 06:30: forecast peak over the next 3 h is %.1f rps (now %.1f); "
                 "yesterday's 08:00 rise to 200 is not foreseen",
                 a.peak, a.last_observed);
    assert_true(a.peak_with_margin >= a.peak);
    /* over the next hour only (before the rise) it stays low */
    tide_forecast_info_t near = fc(f, 0, 3600);
    assert_true(near.peak < 60);

    /* without history the same morning is flat */
    ef_t *g = ef_new("4x8", &cfg);
    ef_service(g, "chat", 1, 10, 1, 300);
    feed(g, 6 * 3600 + 1800, daily, cfg.margin_min, cfg.margin_max);
    tide_forecast_info_t c = fc(g, 0, 3 * 3600);
    assert_true(c.peak < 60);
    ef_free(g);

    /* capacity is added before the rise: by 07:59 of day 3 there are enough
     * replicas (ready or warming) for 200 rps */
    feed(f, 2 * DAY + 8 * 3600 - 60, daily, cfg.margin_min, cfg.margin_max);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    assert_true(fabs(st.demand_rps - 50) < 1e-9);
    if (st.replicas_ready + st.replicas_warming < 20)
        fail_msg("07:59 on day 3: %d replicas for a 200 rps rise at 08:00",
                 st.replicas_ready + st.replicas_warming);
    ef_free(f);
}

/* ------------------------------------------------------------ accounting */

typedef struct acct_ctx {
    int reserve;
    int elastic;
    long checks;
} acct_ctx_t;

static void acct_hook(ef_t *f, tide_time_t t, void *vctx)
{
    acct_ctx_t *ctx = vctx;
    (void)t;
    ef_assert_gpu_seconds(f);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    double el = (double)(st.now - st.start);
    double tier[TIDE_T_COUNT] = {0}, train = 0;
    for (int c = 0; c < TIDE_C_COUNT; c++)
        for (int s = 0; s < TIDE_S_COUNT; s++)
            for (int k = 0; k < TIDE_T_COUNT; k++) {
                double v = st.gpu_s[c][s][k];
                if (v < -1e-6)
                    fail_msg("t=%lld: negative GPU-seconds %.3f in %s/%s/%s", (long long)t, v,
                             tide_class_name(c), tide_state_name(s), tide_tier_name(k));
                tier[k] += v;
                if (c >= TIDE_C_P1 && c <= TIDE_C_P3)
                    train += v;
            }
    double tol = 1e-6 * (el * st.cluster_gpus + 1) + 1e-3;
    if (ctx->elastic) {
        /* Tier A is exactly the reserve; Tier C exactly what was lent */
        if (fabs(tier[TIDE_T_A] - ctx->reserve * el) > tol)
            fail_msg("t=%lld: Tier A %.1f GPU-s, reserve %d x %.0f s", (long long)t,
                     tier[TIDE_T_A], ctx->reserve, el);
        if (fabs(tier[TIDE_T_C] - st.borrowed_gpu_s) > tol)
            fail_msg("t=%lld: Tier C %.1f GPU-s, borrowed %.1f", (long long)t, tier[TIDE_T_C],
                     st.borrowed_gpu_s);
    }
    /* per-team allocations add up to the training classes */
    double teams = 0;
    for (int k = 0; k < tide_engine_teams(f->e); k++) {
        tide_team_stats_t ts;
        assert_int_equal(tide_engine_team(f->e, k, &ts), 0);
        teams += ts.gpu_s;
    }
    if (fabs(teams - train) > tol)
        fail_msg("t=%lld: teams hold %.1f GPU-s, training classes %.1f", (long long)t, teams,
                 train);
    ctx->checks++;
}

static void test_gpu_seconds_add_up(void **state)
{
    (void)state;
    for (const char *const *p = tide_policy_names(); *p; p++) {
        tide_config_t cfg = ef_cfg(*p);
        ef_t *f = ef_new("3x8,2x4:A100", &cfg);
        tide_service_spec_t s = {.name = "chat", .gpus_per_replica = 4, .replica_rps = 10,
                                 .min_replicas = 1, .warmup_s = 240, .fixed_replicas = 3};
        ef_service_full(f, &s);
        ef_input_t *in = NULL;
        size_t n = 0, cap = 0;
        for (tide_time_t t = 0; t <= 30 * 3600; t += 300)
            ef_in_push(&in, &n, &cap, ef_in_demand(t, 0, 10 + 25 * (daily(t) > 100)));
        static const struct { const char *id, *team; int prio, gpus, gang, dp_min; } J[] = {
            {"a", "x", 3, 8, 8, 0}, {"b", "y", 2, 16, 8, 1}, {"c", "x", 1, 4, 4, 0},
            {"d", "z", 3, 2, 1, 1}, {"e", "y", 2, 8, 4, 0},  {"f", "z", 1, 12, 4, 1},
        };
        tide_job_spec_t specs[6];
        for (int i = 0; i < 6; i++) {
            specs[i] = ef_job(J[i].id, J[i].prio, J[i].gpus, J[i].gang, J[i].dp_min,
                              3000 + 2000 * i);
            specs[i].team = J[i].team;
            specs[i].ckpt_interval_s = 900;
            ef_in_push(&in, &n, &cap, ef_in_submit(600 + 2400 * i, &specs[i]));
        }
        ef_input_t fail = {.t = 5 * 3600, .ev = ef_ev(TIDE_EV_NODE_FAILED)};
        fail.ev.node = 1;
        ef_input_t back = {.t = 7 * 3600, .ev = ef_ev(TIDE_EV_NODE_RECOVERED)};
        back.ev.node = 1;
        ef_in_push(&in, &n, &cap, fail);
        ef_in_push(&in, &n, &cap, back);
        ef_in_sort(in, n);
        acct_ctx_t ctx = {.elastic = !strcmp(*p, "elastic")};
        ef_run(f, in, n, 0, NULL, NULL); /* first step: layout */
        for (int g = 0; g < f->ngpus; g++)
            ctx.reserve += tide_engine_gpu_zone(f->e, g) == 'A';
        if (ctx.elastic)
            assert_true(ctx.reserve > 0);
        ef_run(f, in, n, 30 * 3600, acct_hook, &ctx);
        assert_true(ctx.checks > 100);
        tide_stats_t st;
        tide_engine_stats(f->e, &st);
        assert_int_equal(st.now - st.start, 30 * 3600);
        assert_true(st.jobs_completed >= 1);
        ef_assert_gpu_seconds(f);
        free(in);
        ef_free(f);
    }
}

/* Lost work is taken back from the tiers it was done on. timeshare on 2x8:
 * node 0 is the inference part (lent at night, Tier C), node 1 training
 * (Tier D). A 12-GPU job (gangs of 4) runs 2 gangs on node 1 and 1 gang on
 * node 0 under a lease, trains 600 s with nothing committed, and loses a
 * rank: 7200 GPU-s are lost, 2400 of them done on Tier C and 4800 on Tier D.
 * No cell may go negative and each tier keeps what it really carried. */
static void test_lost_work_charged_to_its_tiers(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("timeshare");
    cfg.split_inf = 8;
    ef_t *f = ef_new("2x8", &cfg);
    ef_service(f, "chat", 8, 10, 0, 300);
    ef_demand(f, 0, 0, 0); /* 00:00: inside the 22-08 window, nothing to serve */
    tide_job_spec_t j = ef_job("mixed", 2, 12, 4, 0, 100000);
    int32_t h = ef_submit(f, 60, &j);
    const ef_act_t *st = ef_find(f, 0, TIDE_ACT_JOB_START, -1, h);
    assert_non_null(st);
    int on_inf = 0;
    for (int k = 0; k < st->a.n_gpus; k++)
        on_inf += tide_engine_gpu_zone(f->e, ef_gpus(f, st)[k]) == 'I';
    assert_int_equal(on_inf, 4);
    const ef_act_t *lg = ef_find(f, 0, TIDE_ACT_LEASE_GRANT, -1, h);
    assert_non_null(lg);
    assert_int_equal(lg->a.n_gpus, 4);
    for (tide_time_t t = 120; t <= 660; t += 60)
        ef_tick(f, t);
    tide_event_t rf = ef_ev(TIDE_EV_RANK_FAILED);
    rf.job = h;
    ef_step(f, 660, &rf, 1);
    tide_job_info_t ji = ef_info(f, h);
    assert_true(fabs(ji.lost_gpu_s - 600.0 * 12) < 1e-6);
    tide_stats_t s;
    tide_engine_stats(f->e, &s);
    double tc = s.gpu_s[TIDE_C_P2][TIDE_S_TRAINING][TIDE_T_C];
    double td = s.gpu_s[TIDE_C_P2][TIDE_S_TRAINING][TIDE_T_D];
    double lc = s.gpu_s[TIDE_C_P2][TIDE_S_LOST][TIDE_T_C];
    double ld = s.gpu_s[TIDE_C_P2][TIDE_S_LOST][TIDE_T_D];
    if (tc < -1e-6 || td < -1e-6 || fabs(lc - 2400) > 1e-6 || fabs(ld - 4800) > 1e-6)
        fail_msg("lost work charged to the wrong tiers: training C %.0f D %.0f, lost C %.0f D "
                 "%.0f (want training 0/0, lost 2400/4800)",
                 tc, td, lc, ld);
    ef_assert_gpu_seconds(f);
    ef_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_margin_grows_after_under_forecasts),
        cmocka_unit_test(test_forecast_uses_yesterday),
        cmocka_unit_test(test_gpu_seconds_add_up),
        cmocka_unit_test(test_lost_work_charged_to_its_tiers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
