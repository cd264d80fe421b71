/* tide simulator: the agentic RL comparison (sim/rl_sim.h, docs/rl.md). */
#include "sim/rl_sim.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "formats/workload_io.h"
#include "sim/inject.h"
#include "util/fs.h"
#include "util/util.h"

static const char *const variant_names[TIDE_SIM_RL_NVAR] = {"fixed-min", "fixed-max", "lent-all",
                                                             "lent"};

/* The observer's state: the model, the RL jobs' ids and handles. */
typedef struct rl_obs {
    tide_rl_t *rl;
    const tide_rl_jobs_t *jobs;
    int32_t *h;            /* engine handles of jobs->v (-1: not yet known) */
    tide_stats_t last;
    tide_time_t t;
    int failed;
    tide_error_t err;
    double hour_gpu_s[24];    /* lent GPU-seconds by hour of day */
    int lent_gpus;            /* lent GPUs since x->t */
    tide_sim_observe_fn user; /* the caller's observer, called after ours */
    void *user_ctx;
    /* weight syncs through the world's storage model (with storage:G) */
    tide_rl_spec_t spec;
    int ext;
    struct fly { uint64_t tag; double t0; } *fly; /* syncs in flight */
    size_t nfly, capfly;
    double *sync_s;           /* each finished sync's time, asked -> done */
    size_t nsync, capsync;
    int pool_next;            /* the pool job the next lent sync is attributed to */
    int sized;                /* the pool follows the controller (variant lent) */
    tide_rl_pool_t pool;
    unsigned char *held;      /* per job of jobs: held now */
} rl_obs_t;

/* Active, phase and width of RL job k as the world sees it. */
static int world_job(rl_obs_t *x, const tide_sim_step_t *s, int k, tide_world_job_t *wj)
{
    memset(wj, 0, sizeof *wj);
    if (k >= x->jobs->n)
        return 0;
    if (x->h[k] < 0)
        x->h[k] = tide_engine_job_find(s->e, x->jobs->id[k]);
    return x->h[k] >= 0 && tide_world_job(s->w, x->h[k], wj) == 0 && wj->active;
}

/* Pool jobs whose replicas all drained (nothing in flight) commit now
 * instead of at the drain bound: replicas are interchangeable, so the
 * drained ones are handed to the draining jobs in handle order. */
static void drains_done(rl_obs_t *x, const tide_sim_step_t *s)
{
    int drained = tide_rl_drained(x->rl), g = x->jobs->v[TIDE_RL_JOB_ROLLOUT].gang_gpus;
    tide_world_job_t po;
    for (int k = TIDE_RL_JOB_POOL; k < x->jobs->n && drained > 0; k++) {
        if (!world_job(x, s, k, &po) || po.phase != TIDE_PHASE_CHECKPOINTING)
            continue;
        int reps = po.width * x->jobs->v[k].gang_gpus / g;
        if (reps <= drained && tide_world_ckpt_early(s->world, s->t, x->h[k]) == 0)
            drained -= reps;
    }
}

/* ----------------------------------------------------- weight syncs as I/O */

static uint64_t sync_tag(int rep, uint32_t seq) { return (uint64_t)seq << 32 | (uint32_t)rep; }

/* The job whose GPUs a sync goes through (its racks' uplinks): the dedicated
 * rollout job, or for a lent replica the running pool jobs in turn. */
static int32_t sync_job(rl_obs_t *x, const tide_sim_step_t *s, int lent)
{
    tide_world_job_t wj;
    if (!lent)
        return world_job(x, s, TIDE_RL_JOB_ROLLOUT, &wj) ? x->h[TIDE_RL_JOB_ROLLOUT] : -1;
    int pools = x->jobs->n - TIDE_RL_JOB_POOL;
    for (int i = 0; i < pools; i++) {
        int k = TIDE_RL_JOB_POOL + (x->pool_next + i) % pools;
        if (world_job(x, s, k, &wj)) {
            x->pool_next = (k - TIDE_RL_JOB_POOL + 1) % pools;
            return x->h[k];
        }
    }
    return -1;
}

/* Syncs whose bytes the world moved: the model's replicas are ready then. */
static void syncs_done(rl_obs_t *x, const tide_sim_step_t *s)
{
    uint64_t tags[64];
    tide_time_t at[64];
    size_t n;
    while ((n = tide_world_xfer_finished(s->world, tags, at, 64)) > 0) {
        for (size_t i = 0; i < n; i++) {
            int rep = (int)(uint32_t)tags[i];
            uint32_t seq = (uint32_t)(tags[i] >> 32);
            for (size_t k = 0; k < x->nfly; k++)
                if (x->fly[k].tag == tags[i]) {
                    TIDE_PUSH(x->sync_s, x->nsync, x->capsync, (double)at[i] - x->fly[k].t0);
                    x->fly[k] = x->fly[--x->nfly];
                    break;
                }
            (void)tide_rl_sync_done(x->rl, rep, seq, (double)at[i]);
        }
        if (n < 64)
            break;
    }
}

/* Syncs the model dropped (their replica went) stop moving bytes; the ones
 * it started become transfers through the storage and their racks. */
static void syncs_begin(rl_obs_t *x, const tide_sim_step_t *s)
{
    for (size_t k = 0; k < x->nfly;) {
        uint64_t tag = x->fly[k].tag;
        if (tide_rl_sync_waiting(x->rl, (int)(uint32_t)tag, (uint32_t)(tag >> 32))) {
            k++;
            continue;
        }
        tide_world_xfer_cancel(s->world, s->t, tag);
        x->fly[k] = x->fly[--x->nfly];
    }
    const tide_rl_spec_t *sp = &x->spec;
    tide_rl_sync_t v[64];
    size_t n;
    while ((n = tide_rl_syncs_started(x->rl, v, 64)) > 0) {
        for (size_t i = 0; i < n; i++) {
            uint64_t tag = sync_tag(v[i].rep, v[i].seq);
            tide_time_t since = (tide_time_t)ceil(v[i].t - 1e-9); /* <= s->t */
            if (tide_world_xfer_begin(s->world, s->t, since, sync_job(x, s, v[i].lent),
                                      sp->weights_gb, sp->sync_s, tag))
                TIDE_PUSH(x->fly, x->nfly, x->capfly, ((struct fly){tag, v[i].t}));
            else /* no storage model after all: the declared time */
                (void)tide_rl_sync_done(x->rl, v[i].rep, v[i].seq, v[i].t + (double)sp->sync_s);
        }
        if (n < 64)
            break;
    }
}

/* The pool jobs, in order, released while their replicas are within the
 * controller's want, held beyond it. */
static void size_pool(rl_obs_t *x, const tide_sim_step_t *s)
{
    tide_rl_stats_t st;
    tide_rl_stats(x->rl, &st);
    int want = tide_rl_pool_observe(&x->pool, &st), have = 0;
    int g = x->jobs->v[TIDE_RL_JOB_ROLLOUT].gang_gpus;
    tide_world_job_t wj;
    for (int k = TIDE_RL_JOB_POOL; k < x->jobs->n; k++) {
        int hold = have >= want;
        have += x->jobs->v[k].gpus / g;
        world_job(x, s, k, &wj); /* finds the handle */
        if (x->h[k] < 0 || x->held[k] == hold)
            continue;
        if (tide_engine_job_hold(s->engine, x->h[k], hold, NULL) == 0)
            x->held[k] = (unsigned char)hold;
    }
}

/* After every engine step: give the model the capacity the jobs hold. */
static void observe(void *ctx, const tide_sim_step_t *s)
{
    rl_obs_t *x = ctx;
    tide_world_job_t tr, ro, po;
    tide_rl_capacity_t cap = {0};
    if (x->ext)
        syncs_done(x, s);
    if (world_job(x, s, TIDE_RL_JOB_TRAINER, &tr)) {
        cap.trainer_held = 1;
        cap.trainer = tr.phase == TIDE_PHASE_TRAINING;
    }
    if (world_job(x, s, TIDE_RL_JOB_ROLLOUT, &ro))
        cap.dedicated = ro.width;
    for (int k = TIDE_RL_JOB_POOL; k < x->jobs->n; k++) {
        if (!world_job(x, s, k, &po))
            continue;
        int reps = po.width * x->jobs->v[k].gang_gpus / x->jobs->v[TIDE_RL_JOB_ROLLOUT].gang_gpus;
        cap.lent += reps;
        if (po.phase == TIDE_PHASE_CHECKPOINTING)
            cap.draining += reps;
    }
    if (!x->failed && tide_rl_set(x->rl, s->t, &cap, &x->err) != 0)
        x->failed = 1;
    if (x->ext) {
        syncs_begin(x, s);
        double end = tide_rl_next_step_end(x->rl); /* its syncs start then */
        if (s->wake && end < 9.0e18)
            *s->wake = TIDE_MIN(*s->wake, (tide_time_t)ceil(end - 1e-6));
    }
    drains_done(x, s);
    if (x->sized)
        size_pool(x, s);
    if (s->t > x->t) /* steps are at most a tick apart: bucket by the start */
        x->hour_gpu_s[x->t % 86400 / 3600] += (double)(s->t - x->t) * x->lent_gpus;
    x->lent_gpus = cap.lent * x->jobs->v[TIDE_RL_JOB_ROLLOUT].gang_gpus;
    tide_engine_stats(s->e, &x->last);
    x->t = s->t;
    if (x->user)
        x->user(x->user_ctx, s);
}

static void fill_result(tide_sim_rl_result_t *r, const rl_obs_t *x, const tide_rl_spec_t *rl,
                        const tide_rl_jobs_t *jobs, int v)
{
    memset(r, 0, sizeof *r);
    r->variant = variant_names[v];
    tide_rl_stats(x->rl, &r->st);
    const double *st = tide_rl_step_times(x->rl, &r->steps);
    double sum = 0;
    for (size_t i = 0; i < r->steps; i++)
        sum += st[i];
    r->step_mean = r->steps ? sum / (double)r->steps : 0;
    r->step_p50 = tide_quantile(st, r->steps, 0.5);
    r->step_p99 = tide_quantile(st, r->steps, 0.99);
    for (int k = 0; k <= rl->max_staleness; k++)
        r->stale_hist[k < 7 ? k : 7] += tide_rl_staleness_count(x->rl, k);
    const tide_stats_t *es = &x->last;
    r->served_frac = es->requests_demanded > 0 ? es->requests_served / es->requests_demanded : 1;
    r->borrowed_gpu_s = es->borrowed_gpu_s;
    r->reclaims_late = es->reclaims_late;
    r->max_staleness = rl->max_staleness;
    r->dedicated_gpus = jobs->v[TIDE_RL_JOB_TRAINER].gpus + jobs->v[TIDE_RL_JOB_ROLLOUT].gpus;
    double days = (double)(x->t - rl->submit_s) / 86400.0;
    for (int h = 0; h < 24; h++)
        r->lent_gpus_by_hour[h] = days > 0 ? x->hour_gpu_s[h] / 3600.0 / days : 0;
    r->syncs_io = x->ext;
    r->syncs = x->nsync;
    r->sync_p50 = tide_quantile(x->sync_s, x->nsync, 0.5);
    r->sync_p99 = tide_quantile(x->sync_s, x->nsync, 0.99);
    if (x->sized) {
        r->pool_grows = x->pool.grows;
        r->pool_shrinks = x->pool.shrinks;
        r->pool_want = x->pool.want;
    }
}

/* Checkpoint sizes for the storage model (o->jobs = the RL jobs, then the
 * background jobs): the trainer writes its state; a rollout job's
 * "checkpoint" is a drain and writes nothing; background jobs as given.
 * Caller frees. */
static double *ckpt_sizes(const tide_sim_opts_t *base, const tide_rl_jobs_t *jobs)
{
    size_t n = base->n_jobs + (size_t)jobs->n;
    double *gb = tide_xmalloc(n * sizeof *gb);
    for (int k = 0; k < jobs->n; k++)
        gb[k] = k == TIDE_RL_JOB_TRAINER ? TIDE_IO_CKPT_GB_PER_GPU * jobs->v[k].gpus : 0;
    for (size_t i = 0; i < base->n_jobs; i++)
        gb[(size_t)jobs->n + i] = base->job_ckpt_gb ? base->job_ckpt_gb[i]
                                                    : TIDE_IO_CKPT_GB_PER_GPU * base->jobs[i].gpus;
    return gb;
}

/* One variant: the RL jobs added to the background jobs, one sim run. */
static int run_variant(const tide_sim_opts_t *base, const tide_rl_spec_t *rl,
                       const tide_rl_pool_cfg_t *pool, int v, tide_sim_rl_result_t *res,
                       tide_error_t *err)
{
    tide_rl_jobs_t jobs;
    int mode = v >= TIDE_SIM_RL_LENT_ALL ? TIDE_RL_LENT : TIDE_RL_FIXED;
    int fixed = v == TIDE_SIM_RL_FIXED_MIN ? rl->min_replicas : rl->max_replicas;
    if (tide_rl_jobs(rl, mode, fixed, &jobs, err) != 0)
        return -1;
    tide_sim_opts_t o = *base;
    size_t n = base->n_jobs + (size_t)jobs.n;
    tide_job_spec_t *all = tide_xmalloc(n * sizeof *all);
    memcpy(all, jobs.v, (size_t)jobs.n * sizeof *all);
    if (base->n_jobs)
        memcpy(all + jobs.n, base->jobs, base->n_jobs * sizeof *all);
    o.jobs = all;
    o.n_jobs = n;
    o.job_ckpt_gb = NULL;
    static const char *const elastic[] = {"elastic"};
    if (!base->n_policies) {
        o.policies = elastic;
        o.n_policies = 1;
    } else {
        o.n_policies = 1;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", base->out_dir, variant_names[v]);
    o.out_dir = dir;
    o.table = NULL;
    rl_obs_t x = {.jobs = &jobs, .h = tide_xmalloc((size_t)jobs.n * sizeof(int32_t)),
                  .held = tide_xcalloc((size_t)jobs.n, 1), .sized = v == TIDE_SIM_RL_LENT};
    if (x.sized && tide_rl_pool_init(&x.pool, rl, pool, err) != 0) {
        free(x.h);
        free(x.held);
        free(all);
        tide_rl_jobs_free(&jobs);
        return -1;
    }
    x.ext = base->inject && tide_inject_storage_gbps(base->inject) > 0;
    double *gb = x.ext ? ckpt_sizes(base, &jobs) : NULL;
    o.job_ckpt_gb = gb;
    for (int k = 0; k < jobs.n; k++)
        x.h[k] = -1;
    x.rl = tide_rl_create(rl, rl->submit_s, err);
    x.spec = *rl;
    if (x.rl && x.ext)
        tide_rl_set_external_sync(x.rl, 1);
    x.user = base->observe;
    x.user_ctx = base->observe_ctx;
    o.observe = observe;
    o.observe_ctx = &x;
    int rc = x.rl ? tide_sim_run(&o, err) : -1;
    if (rc == 0 && x.failed) {
        *err = x.err;
        rc = -1;
    }
    if (rc == 0) {
        tide_time_t h = base->horizon_s ? base->horizon_s : tide_sim_auto_horizon(&o);
        tide_rl_advance(x.rl, h > x.t ? h : x.t);
        fill_result(res, &x, rl, &jobs, v);
    }
    tide_rl_destroy(x.rl);
    free(x.fly);
    free(x.sync_s);
    free(gb);
    free(x.h);
    free(x.held);
    free(all);
    tide_rl_jobs_free(&jobs);
    return rc;
}

static json_t *result_json(const tide_sim_rl_result_t *r)
{
    json_t *hours = json_array();
    for (int h = 0; h < 24; h++)
        json_array_append_new(hours, tide_json_round(r->lent_gpus_by_hour[h], 1));
    json_t *st = json_array();
    for (int k = 0; k < 8 && k <= r->max_staleness; k++)
        json_array_append_new(st, json_integer(r->stale_hist[k]));
    const tide_rl_stats_t *s = &r->st;
    return json_pack(
        "{s:s, s:i, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:I, s:i,"
        " s:i, s:i, s:o, s:i, s:o, s:o, s:i, s:i, s:i}",
        "variant", r->variant, "dedicated_gpus", r->dedicated_gpus, "steps", (int)r->steps,
        "step_mean_s", tide_json_round(r->step_mean, 2), "step_p50_s",
        tide_json_round(r->step_p50, 2), "step_p99_s", tide_json_round(r->step_p99, 2),
        "trainer_wait_s", tide_json_round(s->wait_s, 1), "trainer_gpu_h",
        tide_json_round(s->trainer_gpu_s / 3600, 2), "dedicated_rollout_gpu_h",
        tide_json_round(s->dedicated_gpu_s / 3600, 2), "lent_rollout_gpu_h",
        tide_json_round(s->lent_gpu_s / 3600, 2), "lent_idle_gpu_h",
        tide_json_round(s->lent_idle_gpu_s / 3600, 2), "inference_served",
        tide_json_round(r->served_frac, 6), "generated", (json_int_t)s->generated, "accepted",
        (json_int_t)s->accepted, "dropped_stale", (json_int_t)s->dropped_stale, "abandoned",
        (json_int_t)s->abandoned, "max_staleness", r->max_staleness, "max_accepted_staleness",
        s->max_accepted_staleness, "drains", s->drains, "staleness_hist", st, "drains_clean",
        s->drains_clean, "borrowed_gpu_h", tide_json_round(r->borrowed_gpu_s / 3600, 2),
        "lent_gpus_by_hour", hours, "pool_grows", r->pool_grows, "pool_shrinks",
        r->pool_shrinks, "pool_want", r->pool_want);
}

static int write_outputs(const char *dir, const tide_sim_rl_result_t *r, tide_error_t *err)
{
    char path[4096];
    json_t *arr = json_array();
    for (int v = 0; v < TIDE_SIM_RL_NVAR; v++) {
        json_t *x = result_json(&r[v]);
        if (r[v].syncs_io) { /* weight syncs through the storage model */
            tide_json_set(x, "syncs", json_integer((json_int_t)r[v].syncs));
            tide_json_set(x, "sync_p50_s", tide_json_round(r[v].sync_p50, 2));
            tide_json_set(x, "sync_p99_s", tide_json_round(r[v].sync_p99, 2));
        }
        json_array_append_new(arr, x);
    }
    snprintf(path, sizeof path, "%s/rl.json", dir);
    int rc = json_dump_file(arr, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(arr);
    if (rc != 0)
        return tide_errf(err, TIDE_EIO, "%s: cannot write", path);
    snprintf(path, sizeof path, "%s/rl.csv", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return tide_errf(err, TIDE_EIO, "%s: cannot write", path);
    fprintf(f, "variant,dedicated_gpus,steps,step_mean_s,step_p50_s,step_p99_s,trainer_wait_s,"
               "dedicated_rollout_gpu_h,lent_rollout_gpu_h,inference_served,"
               "max_accepted_staleness,max_staleness,dropped_stale,abandoned,drains\n");
    for (int v = 0; v < TIDE_SIM_RL_NVAR; v++) {
        const tide_sim_rl_result_t *x = &r[v];
        fprintf(f, "%s,%d,%zu,%.2f,%.2f,%.2f,%.1f,%.2f,%.2f,%.6f,%d,%d,%ld,%ld,%d\n", x->variant,
                x->dedicated_gpus, x->steps, x->step_mean, x->step_p50, x->step_p99,
                x->st.wait_s, x->st.dedicated_gpu_s / 3600, x->st.lent_gpu_s / 3600,
                x->served_frac, x->st.max_accepted_staleness, x->max_staleness,
                x->st.dropped_stale, x->st.abandoned, x->st.drains);
    }
    if (fclose(f) != 0)
        return tide_errf(err, TIDE_EIO, "%s: write failed", path);
    return 0;
}

static void print_table(FILE *f, const tide_sim_rl_result_t *r)
{
    fprintf(f, "%-10s %5s %6s %8s %8s %8s %7s %9s %9s %10s %6s %7s %6s\n", "rollouts",
            "dedGPU", "steps", "mean_s", "p50_s", "p99_s", "wait%", "ded_gpu_h", "lent_gpu_h",
            "inf_served", "stale", "dropped", "drains");
    for (int v = 0; v < TIDE_SIM_RL_NVAR; v++) {
        const tide_sim_rl_result_t *x = &r[v];
        double run = x->st.wait_s + x->st.compute_s;
        fprintf(f, "%-10s %5d %6zu %8.1f %8.1f %8.1f %6.1f%% %9.1f %9.1f %9.4f%% %3d/%-2d %7ld %6d\n",
                x->variant, x->dedicated_gpus, x->steps, x->step_mean, x->step_p50, x->step_p99,
                run > 0 ? 100 * x->st.wait_s / run : 0,
                (x->st.trainer_gpu_s + x->st.dedicated_gpu_s) / 3600, x->st.lent_gpu_s / 3600,
                100 * x->served_frac, x->st.max_accepted_staleness, x->max_staleness,
                x->st.dropped_stale, x->st.drains);
    }
    for (int v = 0; v < TIDE_SIM_RL_NVAR; v++)
        if (r[v].syncs_io)
            fprintf(f, "weight syncs (storage): %s: %zu, P50 %.1f s, P99 %.1f s\n",
                    r[v].variant, r[v].syncs, r[v].sync_p50, r[v].sync_p99);
}

int tide_sim_rl_run(const tide_sim_opts_t *base, const tide_rl_spec_t *rl,
                    const tide_rl_pool_cfg_t *pool, FILE *table, tide_sim_rl_result_t *res,
                    tide_error_t *err)
{
    tide_rl_spec_t s = *rl;
    if (tide_rl_spec_normalize(&s, err) != 0)
        return -1;
    if (!base->out_dir)
        return tide_errf(err, TIDE_EINVAL, "no output directory");
    if (tide_mkdir_p(base->out_dir, err) != 0)
        return -1;
    tide_sim_rl_result_t r[TIDE_SIM_RL_NVAR];
    for (int v = 0; v < TIDE_SIM_RL_NVAR; v++)
        if (run_variant(base, &s, pool, v, &r[v], err) != 0)
            return tide_err_prefix(err, "rl %s: ", variant_names[v]);
    if (write_outputs(base->out_dir, r, err) != 0)
        return -1;
    if (table)
        print_table(table, r);
    if (res)
        memcpy(res, r, sizeof r);
    return 0;
}
