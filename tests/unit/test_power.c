/* Power budgets: the model and its throughput curve, budgets in the cluster,
 * the capping pass (P3 before P2, only as far as needed, lifted when headroom
 * returns), serving never capped, capped training slowed and accounted, and a
 * property test: on random workloads under random budgets the planned draw of
 * a power domain never exceeds its budget while training there could give
 * way (tide_engine_check after every step, the fixture's default). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine_fixture.h"
#include "tide/power.h"

/* An engine on cluster `cl` whose power budgets are `factor` x nameplate. */
static ef_t *pw_new(const char *cl, double factor, const tide_config_t *cfg)
{
    ef_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    tide_error_t err = {0};
    f->c = tide_cluster_parse(cl, &err);
    assert_non_null(f->c);
    assert_int_equal(tide_cluster_scale_power_budgets(f->c, factor, &err), 0);
    f->e = tide_engine_create(f->c, cfg, &err);
    if (!f->e)
        fail_msg("engine: %s", err.msg);
    f->ngpus = tide_cluster_gpus(f->c);
    ef_init_tables(f, cfg->policy);
    return f;
}

static ef_t *train_only(const char *cl, double factor)
{
    tide_config_t cfg = ef_cfg("static");
    cfg.split_inf = 0;
    return pw_new(cl, factor, &cfg);
}

/* Every power domain's planned draw is within its budget. */
static void assert_within(const ef_t *f)
{
    for (int d = 0; d < tide_cluster_power_domains(f->c); d++) {
        tide_power_info_t pi;
        assert_int_equal(tide_engine_power(f->e, d, &pi), 0);
        if (pi.budget_w > 0 && pi.watts > pi.budget_w + 1e-6)
            fail_msg("domain %d draws %.0f W over its budget %.0f W", d, pi.watts, pi.budget_w);
    }
}

static void test_model(void **state)
{
    (void)state;
    tide_power_model_t m;
    tide_power_model_default(&m);
    const char *why = NULL;
    assert_int_equal(tide_power_model_check(&m, &why), 0);
    assert_true(tide_power_speed(&m, 0) == 1.0);
    assert_true(tide_power_speed(&m, m.train_w) == 1.0);
    assert_true(fabs(tide_power_speed(&m, 0.8 * m.train_w) - 0.95) < 1e-9);
    /* interpolated, monotonic, flat below the last point */
    double prev = 1.0;
    for (double w = m.train_w; w >= 50; w -= 10) {
        double s = tide_power_speed(&m, w);
        assert_true(s <= prev + 1e-12 && s > 0);
        prev = s;
    }
    assert_true(fabs(tide_power_speed(&m, 10) - m.curve_speed[m.n_curve - 1]) < 1e-12);
    assert_true(fabs(tide_power_serving(&m, 0.5) - (m.serve_idle_w + m.serve_full_w) / 2) < 1e-9);
    assert_true(tide_power_serving(&m, 7) == m.serve_full_w);
    tide_power_model_t bad = m;
    bad.min_cap_w = m.train_w + 1;
    assert_int_equal(tide_power_model_check(&bad, &why), -1);
    assert_non_null(why);
    bad = m;
    bad.curve_frac[2] = 0.95; /* not descending */
    assert_int_equal(tide_power_model_check(&bad, NULL), -1);
    bad = m;
    bad.idle_w = -1;
    assert_int_equal(tide_power_model_check(&bad, NULL), -1);
}

static void test_cluster_budgets(void **state)
{
    (void)state;
    tide_error_t err = {0};
    tide_cluster_t *c = tide_cluster_parse("8x8:H100,1x4:L4", &err);
    assert_non_null(c);
    assert_int_equal(tide_cluster_power_domains(c), 3);
    assert_false(tide_cluster_power_budgeted(c));
    const tide_power_model_t *m = tide_cluster_power_model(c, 0);
    assert_non_null(m);
    assert_true(tide_cluster_power_nameplate(c, 0) == 32 * m->tdp_w);
    assert_true(tide_cluster_power_nameplate(c, -1) == 68 * m->tdp_w);
    assert_int_equal(tide_cluster_scale_power_budgets(c, 0.85, &err), 0);
    assert_true(fabs(tide_cluster_power_budget(c, 1) - 0.85 * 32 * m->tdp_w) < 1e-9);
    assert_true(tide_cluster_power_budgeted(c));
    /* a measured model for L4 replaces the default; bad ones are refused */
    tide_power_model_t l4 = *m;
    l4.tdp_w = 72, l4.idle_w = 16, l4.serve_idle_w = 20, l4.serve_full_w = 70, l4.train_w = 70;
    l4.ckpt_w = 30, l4.min_cap_w = 40;
    assert_int_equal(tide_cluster_set_power_model(c, 1, &l4, &err), 0);
    assert_true(tide_cluster_power_nameplate(c, 2) == 4 * 72);
    l4.min_cap_w = 0;
    assert_int_equal(tide_cluster_set_power_model(c, 1, &l4, &err), -1);
    assert_int_equal(tide_cluster_set_power_budget(c, 9, 100, &err), -1);
    assert_int_equal(tide_cluster_scale_power_budgets(c, 0, &err), -1);
    tide_cluster_t *d = tide_cluster_copy(c);
    assert_true(tide_cluster_power_budget(d, 1) == tide_cluster_power_budget(c, 1));
    assert_true(tide_cluster_power_model(d, 1)->tdp_w == 72);
    tide_cluster_destroy(d);
    tide_cluster_destroy(c);
}

/* One power domain of 32 GPUs at 85% of nameplate: two 16-GPU jobs
 * training uncapped would draw 32 x 650 W > 19040 W. The P3 job is capped
 * (just enough), the P2 job is not; when the P2 job ends the cap is lifted. */
static void test_caps_p3_first_and_lift(void **state)
{
    (void)state;
    ef_t *f = train_only("4x8", 0.85);
    tide_job_spec_t p2 = ef_job("p2", 2, 16, 8, 2, 36000);
    tide_job_spec_t p3 = ef_job("p3", 3, 16, 8, 2, 36000);
    int32_t h2 = ef_submit(f, 0, &p2);
    int32_t h3 = ef_submit(f, 0, &p3);
    assert_int_equal(ef_info(f, h2).state, TIDE_JOB_RUNNING);
    assert_int_equal(ef_info(f, h3).state, TIDE_JOB_RUNNING);
    assert_within(f);
    const tide_power_model_t *m = tide_cluster_power_model(f->c, 0);
    tide_job_info_t i2 = ef_info(f, h2), i3 = ef_info(f, h3);
    assert_true(i2.cap_w == 0);
    assert_true(i3.cap_w > m->min_cap_w && i3.cap_w < m->train_w);
    assert_true(i3.speed < 1.0 && i3.speed > 0.8);
    /* just enough: one cap step (25 W) higher would break the budget */
    assert_true(16 * m->train_w + 16 * (i3.cap_w + 25) > 0.85 * 32 * m->tdp_w);
    assert_non_null(ef_find(f, 0, TIDE_ACT_POWER_CAP, TIDE_R_POWER, h3));
    assert_null(ef_find(f, 0, TIDE_ACT_POWER_CAP, TIDE_R_POWER, h2));
    /* the P2 job goes: the P3 job's cap is lifted */
    size_t from = f->nlog;
    tide_event_t ev = ef_ev(TIDE_EV_JOB_CANCEL);
    ev.job = h2;
    ef_step(f, 600, &ev, 1);
    const ef_act_t *lift = ef_find(f, from, TIDE_ACT_POWER_CAP, TIDE_R_POWER, h3);
    assert_non_null(lift);
    assert_true(lift->a.value == 0);
    assert_true(ef_info(f, h3).cap_w == 0);
    assert_true(ef_info(f, h3).capped_s == 600);
    ef_free(f);
}

/* With budgets so low that even the lowest caps cannot hold two jobs, the
 * second is held back (not started), not capped into a breach. */
static void test_start_held(void **state)
{
    (void)state;
    ef_t *f = train_only("4x8", 0.25); /* 5600 W: 16 GPUs at 200 W + 16 idle = 4640 W,
                                          32 at 200 W = 6400 W */
    tide_job_spec_t a = ef_job("a", 2, 16, 8, 2, 36000);
    tide_job_spec_t b = ef_job("b", 2, 16, 8, 2, 36000);
    int32_t ha = ef_submit(f, 0, &a);
    assert_int_equal(ef_info(f, ha).state, TIDE_JOB_RUNNING);
    int32_t hb = ef_submit(f, 60, &b);
    assert_int_equal(ef_info(f, hb).state, TIDE_JOB_QUEUED);
    assert_within(f);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    assert_true(st.power_held > 0);
    ef_free(f);
}

/* Measured draws make the caps insufficient: the lowest cap the GPUs accept
 * is now 600 W. The P3 job is stopped (requeued, reason power) - the last
 * resort -, the P2 job keeps running capped, and the P3 job is then held
 * back rather than restarted into a breach. */
static void test_stop_last_resort(void **state)
{
    (void)state;
    ef_t *f = train_only("4x8", 0.85);
    tide_job_spec_t p2 = ef_job("p2", 2, 16, 8, 2, 36000);
    tide_job_spec_t p3 = ef_job("p3", 3, 16, 8, 2, 36000);
    int32_t h2 = ef_submit(f, 0, &p2);
    int32_t h3 = ef_submit(f, 0, &p3);
    tide_power_model_t m = *tide_cluster_power_model(tide_engine_cluster(f->e), 0);
    m.min_cap_w = 600;
    tide_error_t err = {0};
    assert_int_equal(tide_engine_set_power_model(f->e, 0, &m, &err), 0);
    size_t from = f->nlog;
    ef_tick(f, 60);
    assert_non_null(ef_find(f, from, TIDE_ACT_JOB_STOP, TIDE_R_POWER, h3));
    assert_null(ef_find(f, from, TIDE_ACT_JOB_STOP, TIDE_R_POWER, h2));
    assert_int_equal(ef_info(f, h2).state, TIDE_JOB_RUNNING);
    assert_int_equal(ef_info(f, h3).state, TIDE_JOB_QUEUED);
    assert_within(f);
    ef_ticks(f, 3600, 300);
    assert_int_equal(ef_info(f, h3).state, TIDE_JOB_QUEUED);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    assert_int_equal(st.power_stops, 1);
    assert_true(st.power_held > 0);
    ef_free(f);
}

/* Serving is never capped: replicas for the demand come up and serve it; the
 * training next to them is what gives way. */
static void test_serving_first(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("elastic");
    cfg.reserve_gpus = 8;
    ef_t *f = pw_new("4x8", 0.7, &cfg);
    ef_service(f, "chat", 8, 10, 1, 300);
    ef_input_t *in = NULL;
    size_t n = 0, cap = 0;
    tide_job_spec_t j = ef_job("t", 3, 24, 8, 1, 20 * 3600);
    ef_in_push(&in, &n, &cap, ef_in_submit(0, &j));
    for (tide_time_t t = 0; t <= 8 * 3600; t += 600)
        ef_in_push(&in, &n, &cap, ef_in_demand(t, 0, t < 4 * 3600 ? 5 : 19.5));
    ef_run(f, in, n, 8 * 3600, NULL, NULL);
    assert_string_equal(f->viol, "");
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    assert_true(st.ready_rps >= st.demand_rps);
    assert_true(st.power_caps > 0);
    assert_within(f);
    for (size_t i = 0; i < f->nlog; i++)
        if (f->log[i].a.kind == TIDE_ACT_POWER_CAP)
            assert_true(f->log[i].a.job >= 0);
    free(in);
    ef_free(f);
}

/* A capped job progresses at the curve's speed: it finishes later than its
 * duration, and its figures say by how much and what energy it saved. */
static void test_capped_slower(void **state)
{
    (void)state;
    ef_t *f = train_only("4x8", 0.85);
    tide_job_spec_t p2 = ef_job("p2", 2, 16, 8, 2, 8 * 3600);
    tide_job_spec_t p3 = ef_job("p3", 3, 16, 8, 2, 4 * 3600);
    ef_input_t *in = NULL;
    size_t n = 0, cap = 0;
    ef_in_push(&in, &n, &cap, ef_in_submit(0, &p2));
    ef_in_push(&in, &n, &cap, ef_in_submit(0, &p3));
    ef_run(f, in, n, 6 * 3600, NULL, NULL);
    int32_t h3 = tide_engine_job_find(f->e, "p3");
    tide_job_info_t i3 = ef_info(f, h3);
    assert_int_equal(i3.state, TIDE_JOB_DONE);
    assert_true(i3.finished > 4 * 3600);
    assert_true(i3.cap_delay_s > 0);
    assert_true(i3.cap_energy_j < 0);
    /* the delay is the training time beyond the duration: periodic
     * checkpoints (60 s every 1800 s of training) aside, the run trained
     * for finished - checkpoints and advanced 4 h */
    double n_ckpt = floor((double)i3.finished / 1860.0);
    double trained = (double)i3.finished - 60.0 * n_ckpt;
    assert_true(fabs(i3.cap_delay_s - (trained - 4 * 3600)) < 60);
    /* the cap stays through the checkpoints (no lift and re-cap each time) */
    assert_int_equal(ef_count(f, 0, TIDE_ACT_POWER_CAP, TIDE_R_POWER, h3), 1);
    free(in);
    ef_free(f);
}

/* Random workloads under random budgets: the engine's invariant check (on
 * every step) includes the power budget; caps must have been exercised. */
static void test_property_budget(void **state)
{
    (void)state;
    static const char *const clusters[] = {"4x8", "8x8", "6x4,2x8:A100"};
    long caps = 0;
    for (unsigned seed = 1; seed <= 12; seed++) {
        srand(seed);
        tide_config_t cfg = ef_cfg(seed % 3 == 0 ? "static" : "elastic");
        cfg.reserve_gpus = 8;
        double factor = 0.45 + 0.05 * (rand() % 10);
        ef_t *f = pw_new(clusters[seed % 3], factor, &cfg);
        snprintf(f->tag, sizeof f->tag, "seed %u factor %.2f", seed, factor);
        ef_service(f, "svc", 4, 8, 1, 300);
        ef_input_t *in = NULL;
        size_t n = 0, cap = 0;
        static tide_job_spec_t jobs[24];
        static char ids[24][16];
        for (int k = 0; k < 24; k++) {
            snprintf(ids[k], sizeof ids[k], "j%d", k);
            int gang = rand() % 2 ? 4 : 8, dp = 1 + rand() % 3;
            jobs[k] = ef_job(ids[k], 1 + rand() % 3, gang * dp, gang, 1,
                             (tide_time_t)(1800 + rand() % 14400));
            ef_in_push(&in, &n, &cap, ef_in_submit((tide_time_t)(rand() % 36000), &jobs[k]));
        }
        for (tide_time_t t = 0; t <= 12 * 3600; t += 900)
            ef_in_push(&in, &n, &cap, ef_in_demand(t, 0, (double)(rand() % 30)));
        ef_in_sort(in, n);
        ef_run(f, in, n, 12 * 3600, NULL, NULL);
        if (f->viol[0])
            fail_msg("%s: %s", f->tag, f->viol);
        tide_stats_t st;
        tide_engine_stats(f->e, &st);
        caps += st.power_caps;
        free(in);
        ef_free(f);
    }
    assert_true(caps > 0);
}

/* Fitting measured draws: samples refused, means per state, the serving line,
 * smoothing across pulls, the order restored, declared values kept. */
static void test_fit_samples(void **state)
{
    (void)state;
    tide_power_fit_t f;
    memset(&f, 0, sizeof f);
    assert_int_equal(tide_power_fit_add(&f, TIDE_PSTATE_IDLE, 0, NAN, 1400), -1);
    assert_int_equal(tide_power_fit_add(&f, TIDE_PSTATE_IDLE, 0, -5, 1400), -1);
    assert_int_equal(tide_power_fit_add(&f, TIDE_PSTATE_IDLE, 0, 1e9, 1400), -1);
    assert_int_equal(tide_power_fit_add(&f, TIDE_PSTATE_COUNT, 0, 100, 1400), -1);
    assert_int_equal(tide_power_fit_add(&f, TIDE_PSTATE_SERVING, NAN, 300, 1400), -1);
    assert_int_equal(f.rejected, 5);
    tide_power_model_t m, dec;
    tide_power_model_default(&dec);
    m = dec;
    unsigned mask = 0;
    assert_int_equal(tide_power_fit_apply(&f, 1, 0.3, &m, &mask), 0); /* nothing to fit */
    assert_memory_equal(&m, &dec, sizeof m);
    assert_int_equal(mask, 0);
    /* idle 100 and 110, training 600 and 620 */
    assert_int_equal(tide_power_fit_add(&f, TIDE_PSTATE_IDLE, 0, 100, 1400), 0);
    assert_int_equal(tide_power_fit_add(&f, TIDE_PSTATE_IDLE, 0, 110, 1400), 0);
    assert_int_equal(tide_power_fit_add(&f, TIDE_PSTATE_TRAINING, 0, 600, 1400), 0);
    assert_int_equal(tide_power_fit_add(&f, TIDE_PSTATE_TRAINING, 0, 620, 1400), 0);
    assert_int_equal(tide_power_fit_apply(&f, 1, 0.3, &m, &mask), 2);
    assert_true(fabs(m.idle_w - 105) < 1e-9);
    assert_true(fabs(m.train_w - 610) < 1e-9);
    assert_int_equal(mask, (1u << TIDE_PSTATE_IDLE) | (1u << TIDE_PSTATE_TRAINING));
    /* no measurement: declared */
    assert_true(m.serve_idle_w == dec.serve_idle_w && m.serve_full_w == dec.serve_full_w);
    assert_true(m.ckpt_w == dec.ckpt_w && m.tdp_w == dec.tdp_w && m.min_cap_w == dec.min_cap_w);
    assert_int_equal(tide_power_model_check(&m, NULL), 0);
    /* a second pull smooths: idle 205 -> 105 + 0.3 x 100 */
    tide_power_fit_t g;
    memset(&g, 0, sizeof g);
    tide_power_fit_add(&g, TIDE_PSTATE_IDLE, 0, 205, 1400);
    assert_int_equal(tide_power_fit_apply(&g, 1, 0.3, &m, &mask), 1);
    assert_true(fabs(m.idle_w - 135) < 1e-9);
    /* min_n: one sample is not enough for a state that needs two */
    tide_power_model_t m2 = m;
    assert_int_equal(tide_power_fit_apply(&g, 2, 0.3, &m2, &mask), 0);
    assert_true(m2.idle_w == m.idle_w);
}

static void test_fit_serving(void **state)
{
    (void)state;
    tide_power_model_t dec, m;
    tide_power_model_default(&dec); /* serving 200 .. 600 W */
    /* loads spread: the line through watts = 250 + 300 x load */
    tide_power_fit_t f;
    memset(&f, 0, sizeof f);
    const double loads[] = {0.1, 0.4, 0.7, 0.9, 2.0 /* clamped to 1 */};
    for (size_t i = 0; i < sizeof loads / sizeof loads[0]; i++) {
        double l = loads[i] > 1 ? 1 : loads[i];
        assert_int_equal(tide_power_fit_add(&f, TIDE_PSTATE_SERVING, loads[i], 250 + 300 * l, 1400), 0);
    }
    m = dec;
    unsigned mask = 0;
    assert_int_equal(tide_power_fit_apply(&f, 1, 0.3, &m, &mask), 1);
    assert_true(fabs(m.serve_idle_w - 250) < 1e-6);
    assert_true(fabs(m.serve_full_w - 550) < 1e-6);
    assert_int_equal(mask, 1u << TIDE_PSTATE_SERVING);
    /* one load only: the declared line shifted through the mean (load 0.5:
     * declared 400 W, measured 450 W -> 250 .. 650 W) */
    memset(&f, 0, sizeof f);
    tide_power_fit_add(&f, TIDE_PSTATE_SERVING, 0.5, 440, 1400);
    tide_power_fit_add(&f, TIDE_PSTATE_SERVING, 0.5, 460, 1400);
    m = dec;
    mask = 0;
    assert_int_equal(tide_power_fit_apply(&f, 1, 0.3, &m, &mask), 1);
    assert_true(fabs(m.serve_idle_w - 250) < 1e-9);
    assert_true(fabs(m.serve_full_w - 650) < 1e-9);
    assert_int_equal(tide_power_model_check(&m, NULL), 0);
}

/* Measured values that break the model's order are clamped and reordered,
 * so the result always passes tide_power_model_check. */
static void test_fit_order(void **state)
{
    (void)state;
    tide_power_model_t m;
    tide_power_model_default(&m); /* tdp 700, serving idle 200, min cap 200 */
    tide_power_fit_t f;
    memset(&f, 0, sizeof f);
    tide_power_fit_add(&f, TIDE_PSTATE_IDLE, 0, 300, 1400);      /* above serving unloaded */
    tide_power_fit_add(&f, TIDE_PSTATE_TRAINING, 0, 150, 1400);  /* below the lowest cap */
    tide_power_fit_add(&f, TIDE_PSTATE_CKPT, 0, 900, 1400);      /* above TDP */
    unsigned mask = 0;
    assert_int_equal(tide_power_fit_apply(&f, 1, 1, &m, &mask), 3);
    assert_true(m.idle_w == 300 && m.serve_idle_w == 300 && m.serve_full_w == 600);
    assert_true(m.train_w == 150 && m.min_cap_w == 150);
    assert_true(m.ckpt_w == 700);
    assert_int_equal(tide_power_model_check(&m, NULL), 0);
    assert_string_equal(tide_power_state_name(TIDE_PSTATE_CKPT), "checkpointing");
    assert_null(tide_power_state_name(TIDE_PSTATE_COUNT));
}

/* A model set on a running engine changes its plan at once (running jobs'
 * draw follows it) and survives a snapshot and restore. */
static void test_measured_model_snapshot(void **state)
{
    (void)state;
    ef_t *f = train_only("4x8", 0.85);
    tide_job_spec_t p3 = ef_job("p3", 3, 16, 8, 2, 36000);
    int32_t h3 = ef_submit(f, 0, &p3);
    assert_int_equal(ef_info(f, h3).state, TIDE_JOB_RUNNING);
    tide_power_info_t before, after;
    assert_int_equal(tide_engine_power(f->e, 0, &before), 0);
    tide_power_model_t m = *tide_cluster_power_model(tide_engine_cluster(f->e), 0);
    m.train_w = 500;
    m.idle_w = 60;
    tide_error_t err = {0};
    assert_int_equal(tide_engine_set_power_model(f->e, 0, &m, &err), 0);
    assert_int_equal(tide_engine_power(f->e, 0, &after), 0);
    assert_true(after.watts < before.watts);
    ef_tick(f, 600);
    size_t len = 0;
    void *snap = tide_engine_snapshot(f->e, &len);
    tide_config_t cfg = ef_cfg("static");
    cfg.split_inf = 0;
    tide_engine_t *fresh = tide_engine_create(f->c, &cfg, &err);
    assert_non_null(fresh);
    tide_engine_t *r = tide_engine_restore(fresh, snap, len, &err);
    if (!r)
        fail_msg("restore: %s", err.msg);
    const tide_power_model_t *rm = tide_cluster_power_model(tide_engine_cluster(r), 0);
    assert_true(rm->train_w == 500 && rm->idle_w == 60);
    /* the same run from here */
    tide_actions_t a = {0}, b = {0};
    assert_int_equal(tide_engine_step(f->e, 1200, NULL, 0, &a, &err), 0);
    assert_int_equal(tide_engine_step(r, 1200, NULL, 0, &b, &err), 0);
    tide_stats_t sa, sb;
    tide_engine_stats(f->e, &sa);
    tide_engine_stats(r, &sb);
    assert_true(sa.energy_training_j == sb.energy_training_j);
    assert_true(sa.energy_idle_j == sb.energy_idle_j);
    assert_int_equal(a.n, b.n);
    tide_actions_free(&a);
    tide_actions_free(&b);
    free(snap);
    tide_engine_destroy(r);
    tide_engine_destroy(fresh);
    ef_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model),
        cmocka_unit_test(test_cluster_budgets),
        cmocka_unit_test(test_caps_p3_first_and_lift),
        cmocka_unit_test(test_start_held),
        cmocka_unit_test(test_stop_last_resort),
        cmocka_unit_test(test_serving_first),
        cmocka_unit_test(test_capped_slower),
        cmocka_unit_test(test_property_budget),
        cmocka_unit_test(test_fit_samples),
        cmocka_unit_test(test_fit_serving),
        cmocka_unit_test(test_fit_order),
        cmocka_unit_test(test_measured_model_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
