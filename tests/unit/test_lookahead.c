/* No look-ahead: two runs of engine + simulated world whose inputs are
 * identical before time T and differ from T on (demand x2, extra jobs) must
 * emit exactly the same actions at every time < T, under every policy. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine_fixture.h"

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s) { return (double)(rng_next(s) >> 11) / 9007199254740992.0; }
static int rng_int(uint64_t *s, int lo, int hi) { return lo + (int)(rng_next(s) % (uint64_t)(hi - lo + 1)); }

#define NJOBS 24
#define T_CUT (20 * 3600)
#define HORIZON (28 * 3600)

typedef struct workload {
    char ids[NJOBS][24];
    tide_job_spec_t jobs[NJOBS];
    ef_input_t *in;
    size_t n, cap;
} workload_t;

/* Demand and jobs from seed; variant 1 doubles demand from T_CUT on and
 * submits extra jobs after T_CUT. */
static void make_workload(workload_t *w, uint64_t seed, int variant)
{
    memset(w, 0, sizeof *w);
    uint64_t s = seed;
    double base[2] = {20 + 40 * rng_unit(&s), 30 + 60 * rng_unit(&s)};
    for (tide_time_t t = 0; t <= HORIZON; t += 300) {
        for (int k = 0; k < 2; k++) {
            double day = 1 + 0.6 * sin(2 * M_PI * (double)(t - 6 * 3600) / 86400.0);
            double burst = rng_unit(&s) < 0.03 ? 1.5 + rng_unit(&s) : 1.0;
            double v = base[k] * day * burst * (0.9 + 0.2 * rng_unit(&s));
            if (variant && t >= T_CUT)
                v *= 2;
            ef_in_push(&w->in, &w->n, &w->cap, ef_in_demand(t, k, v));
        }
    }
    for (int i = 0; i < NJOBS; i++) {
        snprintf(w->ids[i], sizeof w->ids[i], "job-%d", i);
        static const int gangs[] = {1, 2, 4, 8, 8, 16};
        int gang = gangs[rng_int(&s, 0, 5)];
        int dp = gang == 16 ? 1 : rng_int(&s, 1, 3);
        tide_job_spec_t j = ef_job(w->ids[i], rng_int(&s, 1, 3), gang * dp, gang,
                                   rng_unit(&s) < 0.5 ? 1 : 0, rng_int(&s, 1200, 20000));
        j.ckpt_interval_s = rng_int(&s, 600, 3600);
        j.ckpt_s = rng_int(&s, 20, 200);
        j.restore_s = rng_int(&s, 20, 300);
        tide_time_t at = (tide_time_t)rng_int(&s, 0, HORIZON - 3600);
        w->jobs[i] = j;
        /* jobs submitted after the cut exist only in variant 1 */
        if (at >= T_CUT && !variant)
            continue;
        ef_in_push(&w->in, &w->n, &w->cap, ef_in_submit(at, &w->jobs[i]));
    }
    ef_in_sort(w->in, w->n);
}

static ef_t *run_obs(const char *policy, const workload_t *w, tide_time_t obs_window)
{
    tide_config_t cfg = ef_cfg(policy);
    cfg.obs_window_s = obs_window;
    ef_t *f = ef_new("6x8,2x8:A100", &cfg);
    tide_service_spec_t a = {.name = "chat", .gpus_per_replica = 8, .replica_rps = 20,
                             .min_replicas = 1, .warmup_s = 300, .fixed_replicas = 3,
                             .stage_s = 120}; /* staged while its victims checkpoint */
    tide_service_spec_t b = {.name = "embed", .gpus_per_replica = 2, .replica_rps = 15,
                             .min_replicas = 2, .warmup_s = 120, .fixed_replicas = 6};
    ef_service_full(f, &a);
    ef_service_full(f, &b);
    ef_run(f, w->in, w->n, HORIZON, NULL, NULL);
    return f;
}

static ef_t *run(const char *policy, const workload_t *w)
{
    return run_obs(policy, w, 0);
}

static int act_equal(const ef_t *fa, const ef_act_t *x, const ef_t *fb, const ef_act_t *y)
{
    const tide_action_t *a = &x->a, *b = &y->a;
    if (x->t != y->t || a->kind != b->kind || a->reason != b->reason || a->job != b->job ||
        a->service != b->service || a->replica != b->replica || a->lease != b->lease ||
        a->width != b->width || a->n_gpus != b->n_gpus || a->deadline != b->deadline ||
        a->value != b->value || a->credit != b->credit)
        return 0;
    if (a->gpu_off != (size_t)-1 &&
        memcmp(ef_gpus(fa, x), ef_gpus(fb, y), (size_t)a->n_gpus * sizeof(int32_t)))
        return 0;
    return 1;
}

static void describe(char *buf, size_t n, const ef_act_t *x)
{
    snprintf(buf, n, "t=%lld %s(%s) job=%d svc=%d rep=%d lease=%d width=%d gpus=%d deadline=%lld",
             (long long)x->t, tide_action_name(x->a.kind), tide_reason_name(x->a.reason),
             x->a.job, x->a.service, x->a.replica, x->a.lease, x->a.width, x->a.n_gpus,
             (long long)x->a.deadline);
}

/* Returns 1 when the runs differ at or after T_CUT (sanity: the cut matters). */
static int compare(const char *policy, uint64_t seed, const ef_t *fa, const ef_t *fb)
{
    size_t na = 0, nb = 0;
    while (na < fa->nlog && fa->log[na].t < T_CUT)
        na++;
    while (nb < fb->nlog && fb->log[nb].t < T_CUT)
        nb++;
    size_t m = na < nb ? na : nb;
    for (size_t i = 0; i < m; i++) {
        if (!act_equal(fa, &fa->log[i], fb, &fb->log[i])) {
            char da[256], db[256];
            describe(da, sizeof da, &fa->log[i]);
            describe(db, sizeof db, &fb->log[i]);
            fail_msg("policy %s seed %llu: action %zu before T=%d differs:\n  run A: %s\n  run B: %s",
                     policy, (unsigned long long)seed, i, T_CUT, da, db);
        }
    }
    if (na != nb)
        fail_msg("policy %s seed %llu: %zu actions before T in run A, %zu in run B", policy,
                 (unsigned long long)seed, na, nb);
    assert_true(na > 20); /* the comparison is not vacuous */
    if (fa->nlog != fb->nlog)
        return 1;
    for (size_t i = na; i < fa->nlog; i++)
        if (!act_equal(fa, &fa->log[i], fb, &fb->log[i]))
            return 1;
    return 0;
}

/* Identical runs give identical actions. */
static void assert_same_actions(const char *what, const ef_t *fa, const ef_t *fb)
{
    assert_int_equal(fa->nlog, fb->nlog);
    for (size_t i = 0; i < fa->nlog; i++)
        if (!act_equal(fa, &fa->log[i], fb, &fb->log[i]))
            fail_msg("%s: action %zu differs between identical runs", what, i);
}

static void workloads_free(workload_t *wa, workload_t *wb)
{
    free(wa->in);
    free(wb->in);
    free(wa);
    free(wb);
}

static void test_no_lookahead(void **state)
{
    (void)state;
    int diverged = 0, runs = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        workload_t *wa = malloc(sizeof *wa), *wb = malloc(sizeof *wb);
        make_workload(wa, seed, 0);
        make_workload(wb, seed, 1);
        for (const char *const *p = tide_policy_names(); *p; p++) {
            ef_t *fa = run(*p, wa);
            ef_t *fb = run(*p, wb);
            diverged += compare(*p, seed, fa, fb);
            runs++;
            ef_free(fa);
            ef_free(fb);
        }
        workloads_free(wa, wb);
    }
    /* doubling the demand from T on changes what happens after T */
    assert_true(diverged >= runs / 2);
}

/* Same inputs, same actions (determinism), and the engine's own view agrees. */
static void test_same_inputs_same_actions(void **state)
{
    (void)state;
    workload_t *w = malloc(sizeof *w);
    make_workload(w, 42, 1);
    for (const char *const *p = tide_policy_names(); *p; p++) {
        ef_t *fa = run(*p, w);
        ef_t *fb = run(*p, w);
        assert_same_actions(*p, fa, fb);
        tide_stats_t sa, sb;
        tide_engine_stats(fa->e, &sa);
        tide_engine_stats(fb->e, &sb);
        assert_true(memcmp(sa.gpu_s, sb.gpu_s, sizeof sa.gpu_s) == 0);
        assert_int_equal(sa.jobs_completed, sb.jobs_completed);
        ef_free(fa);
        ef_free(fb);
    }
    free(w->in);
    free(w);
}

/* The observed floor (obs_window_s) reads only demand already seen: no
 * look-ahead, and two runs give the same actions. */
static void test_obs_floor_no_lookahead(void **state)
{
    (void)state;
    int diverged = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        workload_t *wa = malloc(sizeof *wa), *wb = malloc(sizeof *wb);
        make_workload(wa, seed, 0);
        make_workload(wb, seed, 1);
        ef_t *fa = run_obs("elastic", wa, 1800), *fb = run_obs("elastic", wb, 1800);
        diverged += compare("elastic (obs_window 30m)", seed, fa, fb);
        ef_t *fc = run_obs("elastic", wa, 1800);
        assert_same_actions("elastic (obs_window 30m)", fa, fc);
        ef_free(fa);
        ef_free(fb);
        ef_free(fc);
        workloads_free(wa, wb);
    }
    assert_true(diverged >= 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_lookahead),
        cmocka_unit_test(test_same_inputs_same_actions),
        cmocka_unit_test(test_obs_floor_no_lookahead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
