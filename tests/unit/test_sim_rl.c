/* `tide sim --rl` (sim/rl_sim.c): an RL job on 5 x 8 GPUs beside the
 * fixture's service, whose inference rises from 1 to 3 replicas at 08:00, with a history so
 * the forecast knows. The lent pool jobs run by night and are drained (a
 * checkpoint notice, which for a rollout job writes nothing) ahead of the
 * rise, never stopped without one; the trainer and the dedicated rollout
 * replica keep running; the engine's invariants hold at every step (Tier A
 * never lent); no accepted trajectory is older than max_staleness. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim/inject.h"
#include "sim/rl_sim.h"
#include "sim_fixture.h"

#define RISE (8 * 3600)

typedef struct seen {
    int lent_runs;                /* steps seen of the lent variant */
    tide_time_t first_notice;     /* first checkpoint notice to a pool job */
    int pool_notices, pool_stops_unnoticed, trainer_stops, pool_started;
    unsigned char noticed[64];    /* per job handle: a notice came */
    tide_time_t notice_at[64];    /* ... at this time */
    tide_time_t drain_min, drain_max; /* notice -> commit of pool jobs */
    int trainer_asked;            /* checkpoints asked of the trainer */
    size_t asked_xfers;           /* asked checkpoints through the storage model */
    int scale_notices;            /* drains of pool jobs the controller holds */
} seen_t;

static int is_pool(const tide_engine_t *e, int32_t job)
{
    tide_job_info_t ji;
    return job >= 0 && tide_engine_job(e, job, &ji) == 0 && strstr(ji.spec->id, "-pool-");
}

static void observe(void *ctx, const tide_sim_step_t *s)
{
    seen_t *x = ctx;
    if (tide_engine_job_find(s->e, "rl-pool-1") < 0)
        return; /* a fixed variant */
    x->lent_runs++;
    int32_t trainer = tide_engine_job_find(s->e, "rl-trainer");
    (void)tide_world_xfer_quantile(s->w, TIDE_XFER_CKPT_ASKED, 1, &x->asked_xfers);
    for (size_t i = 0; i < s->n_events; i++) {
        const tide_event_t *ev = &s->events[i];
        if (ev->kind != TIDE_EV_CKPT_COMMITTED || !is_pool(s->e, ev->job) || ev->job >= 64 ||
            !x->noticed[ev->job])
            continue;
        tide_time_t d = s->t - x->notice_at[ev->job];
        x->drain_min = x->drain_min < 0 || d < x->drain_min ? d : x->drain_min;
        x->drain_max = d > x->drain_max ? d : x->drain_max;
    }
    for (size_t i = 0; i < s->acts->n; i++) {
        const tide_action_t *a = &s->acts->v[i];
        if (a->kind == TIDE_ACT_JOB_STOP && a->job == trainer)
            x->trainer_stops++;
        if (a->kind == TIDE_ACT_JOB_CKPT && a->job == trainer)
            x->trainer_asked++;
        if (!is_pool(s->e, a->job) || a->job >= 64)
            continue;
        if (a->kind == TIDE_ACT_JOB_START)
            x->pool_started++;
        /* a drain: for a reclaim, or (reason scale) a pool job the lent
         * variant's controller holds */
        if (a->kind == TIDE_ACT_JOB_CKPT &&
            (a->reason == TIDE_R_RECLAIM || a->reason == TIDE_R_SCALE)) {
            x->noticed[a->job] = 1;
            x->notice_at[a->job] = s->t;
        }
        x->scale_notices += a->kind == TIDE_ACT_JOB_CKPT && a->reason == TIDE_R_SCALE;
        if (a->kind == TIDE_ACT_JOB_CKPT && a->reason == TIDE_R_RECLAIM) {
            x->pool_notices++;
            if (x->first_notice < 0)
                x->first_notice = s->t;
        }
        if (a->kind == TIDE_ACT_JOB_STOP && a->reason != TIDE_R_COMPLETE &&
            !x->noticed[a->job])
            x->pool_stops_unnoticed++;
        if (a->kind == TIDE_ACT_JOB_STOP)
            x->noticed[a->job] = 0;
    }
}

static tide_demand_t *history(const sf_work_t *w)
{
    static char buf[1 << 16];
    size_t n = (size_t)snprintf(buf, sizeof buf, "time_s,service,rps\n");
    for (long t = 0; t <= 3 * 86400; t += 300) {
        long h = t % 86400 / 3600;
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%ld,chat,%d\n", t,
                              h >= 8 && h < 20 ? 250 : 60);
    }
    tide_error_t err = {0};
    tide_demand_t *d = tide_demand_read_mem(buf, n, "history.csv", w->svcs, NULL, &err);
    assert_non_null(d);
    assert_int_equal(tide_demand_history_align(d, 0, &err), 0);
    return d;
}

static const tide_rl_spec_t RL = {
    .id = "rl", .team = "post", .priority = 2, .duration_s = 86400, .trainer_gpus = 4,
    .step_s = 30, .batch = 256, .rollout_gpus = 2, .replica_tps = 0.4, .replica_slots = 8,
    .len_sigma = 1.0, .sync_s = 10, .drain_s = 90, .max_staleness = 2, .min_replicas = 1,
    .max_replicas = 9, .seed = 3};

/* The comparison of RL job rl, with faults `inject` (NULL = none). */
static void run_with(const tide_rl_spec_t *rl, tide_sim_rl_result_t *res, seen_t *x,
                     const char *inject)
{
    sf_work_t w;
    sf_load(&w);
    tide_demand_t *h = history(&w);
    char dir[256];
    sf_tmpdir(dir, sizeof dir);
    tide_sim_opts_t o;
    sf_opts(&w, &o, dir);
    tide_cluster_t *c5 = tide_cluster_file_from_arg("5x8", NULL); /* room for the margin */
    assert_non_null(c5);
    o.cluster = c5;
    o.jobs = NULL;
    o.n_jobs = 0;
    o.history = h->v;
    o.n_history = h->n;
    o.check = 1;
    o.outputs = TIDE_SIM_OUT_SUMMARY;
    o.observe = observe;
    o.observe_ctx = x;
    tide_error_t err = {0};
    tide_inject_t inj;
    tide_inject_init(&inj);
    if (inject) {
        assert_int_equal(tide_inject_parse(&inj, inject, &err), 0);
        o.inject = &inj;
    }
    if (tide_sim_rl_run(&o, rl, NULL, NULL, res, &err) != 0)
        fail_msg("sim --rl: %s", err.msg);
    tide_inject_free(&inj);
    sf_rm_rf(dir);
    tide_cluster_destroy(c5);
    tide_demand_free(h);
    sf_free(&w);
}

static void run(tide_sim_rl_result_t *res, seen_t *x) { run_with(&RL, res, x, NULL); }

static void test_drained_ahead_of_rise(void **st)
{
    (void)st;
    tide_sim_rl_result_t r[TIDE_SIM_RL_NVAR];
    seen_t x = {.first_notice = -1, .drain_min = -1};
    run(r, &x);
    assert_true(x.lent_runs > 0);
    assert_true(x.pool_started > 0);         /* lent by night */
    assert_true(x.pool_notices > 0);         /* reclaimed ... */
    assert_true(x.first_notice < RISE);      /* ... ahead of the rise */
    assert_int_equal(x.pool_stops_unnoticed, 0); /* always by drain */
    assert_int_equal(x.trainer_stops, 0);
    /* a drain takes at most its bound, less when the in-flight trajectories end sooner */
    assert_true(x.drain_min >= 0 && x.drain_max <= RL.drain_s);
    assert_true(x.drain_min < RL.drain_s);
    const tide_sim_rl_result_t *le = &r[TIDE_SIM_RL_LENT], *fm = &r[TIDE_SIM_RL_FIXED_MIN];
    assert_true(le->st.drains > 0);
    assert_true(le->st.lent_gpu_s > 0);
    assert_int_equal(fm->st.lent_gpu_s, 0);
    assert_int_equal(le->dedicated_gpus, fm->dedicated_gpus);
    assert_true(le->steps >= fm->steps);
    /* the lent variant's pool is what its controller wants, within the spec */
    assert_true(le->pool_want >= 0 && le->pool_want <= RL.max_replicas - RL.min_replicas);
    assert_int_equal(r[TIDE_SIM_RL_LENT_ALL].pool_grows + r[TIDE_SIM_RL_LENT_ALL].pool_shrinks, 0);
    assert_int_equal(r[TIDE_SIM_RL_LENT_ALL].dedicated_gpus, fm->dedicated_gpus);
    for (int v = 0; v < TIDE_SIM_RL_NVAR; v++) {
        assert_true(r[v].st.max_accepted_staleness <= RL.max_staleness);
        assert_true(r[v].steps > 0);
    }
    /* deterministic: the same run again */
    tide_sim_rl_result_t r2[TIDE_SIM_RL_NVAR];
    seen_t y = {.first_notice = -1, .drain_min = -1};
    run(r2, &y);
    for (int v = 0; v < TIDE_SIM_RL_NVAR; v++) {
        assert_int_equal(r2[v].steps, r[v].steps);
        assert_true(r2[v].step_mean == r[v].step_mean);
        assert_int_equal(r2[v].st.generated, r[v].st.generated);
    }
    assert_int_equal(y.first_notice, x.first_notice);
}

/* Weight syncs as I/O (storage:G): with bandwidth to spare a sync takes its
 * declared sync_s; on a storage too small for every replica's sync at once
 * (9 replicas x 32 GB in 10 s = 28.8 GB/s) syncs take longer, the trainer
 * waits longer and does fewer steps, and no accepted trajectory is older
 * than max_staleness. Without storage nothing moves through it. */
static void test_syncs_through_storage(void **st)
{
    (void)st;
    tide_sim_rl_result_t none[TIDE_SIM_RL_NVAR], wide[TIDE_SIM_RL_NVAR],
        tight[TIDE_SIM_RL_NVAR];
    seen_t x = {.first_notice = -1, .drain_min = -1}, y = x, z = x;
    run(none, &x);
    run_with(&RL, wide, &y, "storage:1000");
    run_with(&RL, tight, &z, "storage:4");
    for (int v = 0; v < TIDE_SIM_RL_NVAR; v++) {
        assert_int_equal(none[v].syncs_io, 0);
        assert_int_equal(none[v].syncs, 0);
        assert_int_equal(wide[v].syncs_io, 1);
        assert_true(wide[v].syncs > 0);
        /* alone: the declared time (the sync starts on a whole second) */
        assert_true(wide[v].sync_p50 >= RL.sync_s && wide[v].sync_p99 <= RL.sync_s + 1);
        assert_true(tight[v].syncs > 0);
        assert_true(tight[v].st.max_accepted_staleness <= RL.max_staleness);
        assert_true(wide[v].st.max_accepted_staleness <= RL.max_staleness);
    }
    /* the lent-all pool (up to 9 replicas) syncs together after every step */
    const tide_sim_rl_result_t *lw = &wide[TIDE_SIM_RL_LENT_ALL],
                                *lt = &tight[TIDE_SIM_RL_LENT_ALL];
    assert_true(lt->sync_p50 > 1.5 * RL.sync_s);
    assert_true(lt->st.wait_s > lw->st.wait_s);
    assert_true(lt->steps < lw->steps);
    /* a pool job's drain (an asked checkpoint) moves no bytes */
    assert_true(y.pool_notices > 0 && z.pool_notices > 0);
    assert_true(y.asked_xfers <= (size_t)y.trainer_asked);
    assert_true(z.asked_xfers <= (size_t)z.trainer_asked);
    /* with bandwidth to spare the lent pool does what it does without the model */
    const tide_sim_rl_result_t *ln = &none[TIDE_SIM_RL_LENT_ALL];
    assert_true(lw->steps >= ln->steps * 95 / 100 && lw->steps <= ln->steps * 105 / 100);
}

/* A pool the trainer needs little of: the lent variant's controller wants
 * fewer replicas than max_replicas (the declared-rate estimate, then what
 * the trainer's wait says), so the pool jobs beyond them are held: drained
 * if they started (a scale notice, then the commit and the stop) and not
 * started again; the released ones cover what it wants. The trainer runs on,
 * staleness stays bounded. */
static void test_controller_holds_extra_pool_jobs(void **st)
{
    (void)st;
    tide_rl_spec_t small = RL;
    small.batch = 32;
    small.max_replicas = 17; /* 4 pool jobs of 4 replicas */
    tide_sim_rl_result_t r[TIDE_SIM_RL_NVAR];
    seen_t x = {.first_notice = -1, .drain_min = -1};
    run_with(&small, r, &x, NULL);
    const tide_sim_rl_result_t *le = &r[TIDE_SIM_RL_LENT], *la = &r[TIDE_SIM_RL_LENT_ALL];
    assert_true(le->pool_want < small.max_replicas - small.min_replicas);
    assert_true(x.scale_notices > 0);            /* held ones drained ... */
    assert_int_equal(x.pool_stops_unnoticed, 0); /* ... never stopped without one */
    assert_int_equal(x.trainer_stops, 0);
    assert_true(le->st.lent_gpu_s < la->st.lent_gpu_s); /* a smaller lent pool */
    assert_true(le->st.max_accepted_staleness <= small.max_staleness);
    assert_true(le->steps > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_drained_ahead_of_rise),
        cmocka_unit_test(test_syncs_through_storage),
        cmocka_unit_test(test_controller_holds_extra_pool_jobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
