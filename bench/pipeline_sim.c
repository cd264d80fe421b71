/* The model pipeline in the simulator: a scenario written by `tide gen`
 * (seed200) replayed through the elastic engine and the simulated world, with
 * a model version published every day for one service, evaluated as a P1 job,
 * released through the gated canary (include/tide/pipeline.h: the same core
 * the daemon drives) and, for every Kth version, a regressing canary rolled
 * back. Prints the figures of README "The model pipeline": time from
 * checkpoint to full serving, GPU-hours of evaluations and of canary replicas
 * above the service's need, the worst extra GPUs at any step, SLO attainment
 * during rollouts, against a "2x capacity blue/green" baseline (the whole
 * service doubled from the start of each rollout to its end).
 *
 *   tide gen --scenario seed200 --days 14 --seed 1 --out /tmp/s200
 *   build/bench/pipeline_sim /tmp/s200 [--service NAME] [--regress K]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/workload_io.h"
#include "tide/engine.h"
#include "tide/pipeline.h"
#include "util/util.h"
#include "world/world.h"

#define DAY 86400
#define MAXEV 4096

typedef struct run {
    tide_engine_t *e;
    tide_world_t *w;
    tide_pipeline_t *p;
    tide_pipe_labels_t lab;
    tide_actions_t acts;
    tide_pipe_acts_t pa;
    int surge_sent, svc, regress, versions;
    tide_event_t ev[MAXEV], pend[MAXEV];
    size_t nev, npend;
    tide_job_spec_t evals[64];
    char eval_ids[64][32];
    int n_evals;
    /* measures */
    tide_time_t reg_at[64], end_at[64], canary_at[64];
    tide_time_t warmup_s, soak_s;
    int outcome[64]; /* 1 serving, -1 rolled back */
    double extra_gpu_s, bg_gpu_s, worst_extra, worst_bg, last_t;
    double dem0, srv0, dem_ro, srv_ro;
    int in_ro;
} run_t;

static void die(const char *what, const tide_error_t *err)
{
    fprintf(stderr, "pipeline_sim: %s: %s\n", what, err->msg);
    exit(1);
}

static void push(run_t *r, tide_event_t ev)
{
    if (r->npend < MAXEV)
        r->pend[r->npend++] = ev;
}

static tide_event_t blank(int kind)
{
    tide_event_t ev = {.kind = kind, .job = -1, .service = -1, .replica = -1, .node = -1};
    return ev;
}

/* Integrate the extra GPUs the rollout holds, and the blue/green baseline's,
 * from the last measure to t. */
static void measure(run_t *r, tide_time_t t)
{
    tide_pipe_count_t c;
    tide_rollout_info_t ro;
    tide_pipeline_rollout(r->p, 0, &ro);
    if (tide_pipeline_count(r->p, 0, r->e, &r->lab, &c) == 0 && ro.active) {
        double extra = (double)(c.held_old + c.held_new - c.need) * c.gpus_per_replica;
        double bg = (double)c.need * c.gpus_per_replica;
        extra = extra > 0 ? extra : 0;
        r->extra_gpu_s += extra * ((double)t - r->last_t);
        r->bg_gpu_s += bg * ((double)t - r->last_t);
        r->worst_extra = fmax(r->worst_extra, extra);
        r->worst_bg = fmax(r->worst_bg, bg);
    }
    r->last_t = (double)t;
}

/* The rollout window's requests (SLO during rollouts). */
static void window(run_t *r, int active)
{
    tide_stats_t st;
    tide_engine_stats(r->e, &st);
    if (active && !r->in_ro) {
        r->dem0 = st.requests_demanded;
        r->srv0 = st.requests_served;
    } else if (!active && r->in_ro) {
        r->dem_ro += st.requests_demanded - r->dem0;
        r->srv_ro += st.requests_served - r->srv0;
    }
    r->in_ro = active;
}

static void eval_start(run_t *r, const tide_pipe_act_t *a)
{
    if (r->n_evals >= 64)
        return;
    int k = r->n_evals++;
    snprintf(r->eval_ids[k], sizeof r->eval_ids[k], "eval-v%d", a->version);
    r->evals[k] = (tide_job_spec_t){.id = r->eval_ids[k], .team = "pipeline",
                                    .priority = TIDE_P1, .gpus = a->n,
                                    .duration_s = a->deadline};
    tide_event_t ev = blank(TIDE_EV_JOB_SUBMIT);
    ev.job_spec = &r->evals[k];
    push(r, ev);
}

static void eval_poll(run_t *r)
{
    for (int k = 0; k < r->n_evals; k++) {
        int32_t h = tide_engine_job_find(r->e, r->eval_ids[k]);
        tide_job_info_t ji;
        int ver = atoi(r->eval_ids[k] + 6);
        tide_version_info_t vi;
        if (h < 0 || tide_engine_job(r->e, h, &ji) < 0 || ji.state != TIDE_JOB_DONE ||
            tide_pipeline_version(r->p, 0, ver, &vi) < 0 || vi.state != TIDE_VER_EVALUATING ||
            vi.gate >= 0)
            continue;
        tide_pipeline_metric(r->p, 0, ver, "accuracy", 0.8, NULL);
        tide_pipeline_eval_done(r->p, 0, ver, 1, NULL);
    }
}

static void pipe_acts(run_t *r, tide_time_t t)
{
    for (size_t i = 0; i < r->pa.n; i++) {
        const tide_pipe_act_t *a = &r->pa.v[i];
        if (a->kind == TIDE_PA_EVAL_START)
            eval_start(r, a);
        if (a->kind == TIDE_PA_STATE && a->state == TIDE_VER_CANARY && a->version < 64)
            r->canary_at[a->version] = t;
        if ((a->kind == TIDE_PA_PROMOTED || a->kind == TIDE_PA_ROLLBACK) && a->version < 64) {
            r->end_at[a->version] = t;
            r->outcome[a->version] = a->kind == TIDE_PA_PROMOTED ? 1 : -1;
        }
    }
}

/* After an engine step at t: labels, evaluations, the canary's SLO (every
 * Kth version regresses), the pipeline's step, the engine events. */
static tide_time_t pipe_step(run_t *r, tide_time_t t)
{
    tide_pipeline_label_starts(r->p, r->e, &r->acts, &r->lab, NULL, 0);
    eval_poll(r);
    tide_pipe_count_t c;
    tide_rollout_info_t ro;
    tide_pipeline_rollout(r->p, 0, &ro);
    if (tide_pipeline_count(r->p, 0, r->e, &r->lab, &c) == 0) {
        int bad = ro.active && r->regress > 0 && ro.version % r->regress == 0;
        tide_pipe_obs_t o = {.need = c.need, .gpus_per_replica = c.gpus_per_replica,
                             .held_old = c.held_old, .held_new = c.held_new,
                             .ready_new = c.ready_new, .have_slo = ro.active && ro.weight > 0,
                             .slo = bad ? 0.9 : 0.9995, .error_rate = bad ? 0.05 : 0.0005};
        tide_error_t err = {0};
        if (tide_pipeline_observe(r->p, 0, &o, &err) < 0)
            die("observe", &err);
    }
    tide_error_t err = {0};
    if (tide_pipeline_step(r->p, t, &r->pa, &err) < 0)
        die("pipeline step", &err);
    pipe_acts(r, t);
    tide_pipeline_rollout(r->p, 0, &ro);
    window(r, ro.active);
    tide_event_t ev[64];
    size_t n = tide_pipeline_engine_events(r->p, 0, r->e, &r->lab, &r->surge_sent, ev, 64);
    for (size_t i = 0; i < n; i++)
        push(r, ev[i]);
    return r->pa.next_wake;
}

static void publish(run_t *r, tide_time_t t)
{
    char uri[64];
    snprintf(uri, sizeof uri, "sim://ckpt/day-%lld", (long long)(t / DAY));
    tide_version_spec_t v = {.source_job = "pretrain", .ckpt_step = t, .manifest_uri = uri,
                             .size_bytes = 140LL << 30};
    int ver = tide_pipeline_register(r->p, 0, &v, t, NULL);
    if (ver > 0 && ver < 64) {
        r->reg_at[ver] = t;
        r->versions = ver;
    }
}

static tide_time_t tmin(tide_time_t a, tide_time_t b) { return a < b ? a : b; }

static void loop(run_t *r, const tide_demand_t *dm, const tide_jobs_t *jobs, tide_time_t end,
                 tide_time_t first_pub)
{
    size_t di = 0, ji = 0;
    tide_time_t t = 0, next_pub = first_pub, wake = 0, pwake = TIDE_TIME_NEVER;
    while (t <= end) {
        r->nev = 0;
        for (; di < dm->n && dm->v[di].t <= t && r->nev < MAXEV / 2; di++) {
            tide_event_t ev = blank(TIDE_EV_DEMAND);
            ev.service = dm->v[di].service;
            ev.value = dm->v[di].rps;
            r->ev[r->nev++] = ev;
        }
        for (; ji < jobs->n && jobs->v[ji].submit_s <= t && r->nev < MAXEV * 3 / 4; ji++) {
            tide_event_t ev = blank(TIDE_EV_JOB_SUBMIT);
            ev.job_spec = &jobs->v[ji];
            r->ev[r->nev++] = ev;
        }
        r->nev += tide_world_pop(r->w, t, r->ev + r->nev, MAXEV - r->nev - r->npend);
        memcpy(r->ev + r->nev, r->pend, r->npend * sizeof *r->pend);
        r->nev += r->npend;
        r->npend = 0;
        if (t >= next_pub) {
            publish(r, t);
            next_pub += DAY;
        }
        measure(r, t);
        tide_error_t err = {0};
        if (tide_engine_step(r->e, t, r->ev, r->nev, &r->acts, &err) < 0)
            die("engine step", &err);
        tide_world_apply(r->w, t, &r->acts);
        wake = r->acts.next_wake;
        pwake = pipe_step(r, t);
        if (r->npend)
            continue; /* the pipeline's events go in at the same time */
        tide_time_t nt = tmin(tmin(wake, pwake), tmin(next_pub, tide_world_next(r->w)));
        if (di < dm->n)
            nt = tmin(nt, dm->v[di].t);
        if (ji < jobs->n)
            nt = tmin(nt, jobs->v[ji].submit_s);
        t = nt > t ? nt : t + 1;
    }
}

static void report(const run_t *r, const char *svc, int gpr)
{
    double sum = 0, mx = 0, bg = 0;
    int served = 0, rolled = 0;
    for (int v = 1; v <= r->versions && v < 64; v++) {
        if (r->outcome[v] == 1) {
            double h = (double)(r->end_at[v] - r->reg_at[v]) / 3600.0;
            sum += h;
            mx = fmax(mx, h);
            served++;
            /* blue/green: the same evaluation, one warm-up of the whole green
             * side, the same total soak */
            bg += (double)(r->canary_at[v] - r->reg_at[v] + r->warmup_s + r->soak_s) / 3600.0;
        }
        rolled += r->outcome[v] == -1;
    }
    double eval_h = 0;
    for (int k = 0; k < r->n_evals; k++) {
        tide_job_info_t ji;
        int32_t h = tide_engine_job_find(r->e, r->eval_ids[k]);
        if (h >= 0 && tide_engine_job(r->e, h, &ji) == 0 && ji.first_start >= 0)
            eval_h += (double)ji.spec->gpus * (double)((ji.finished >= 0 ? ji.finished : (tide_time_t)r->last_t) - ji.first_start) / 3600.0;
    }
    tide_stats_t st;
    tide_engine_stats(r->e, &st);
    printf("service %s (%d GPUs a replica): %d versions published, %d reached serving, %d rolled back\n",
           svc, gpr, r->versions, served, rolled);
    printf("| | pipeline (need + one step) | 2x blue/green |\n|---|---|---|\n");
    printf("| checkpoint -> full serving, mean / max | %.2f h / %.2f h | %.2f h (mean) |\n",
           served ? sum / served : 0, mx, served ? bg / served : 0);
    printf("| evaluation GPU-hours (P1 jobs on lent GPUs) | %.1f | %.1f |\n", eval_h, eval_h);
    printf("| GPU-hours held above the service's need during rollouts | %.1f | %.1f |\n",
           r->extra_gpu_s / 3600, r->bg_gpu_s / 3600);
    printf("| extra GPUs at the worst step | %.0f | %.0f |\n", r->worst_extra, r->worst_bg);
    printf("| SLO attainment during rollouts | %.5f | - |\n",
           r->dem_ro > 0 ? r->srv_ro / r->dem_ro : 1.0);
    printf("| jobs completed, preemptions, lost GPU-h | %d, %d, %.1f | - |\n", st.jobs_completed,
           st.preemptions, st.lost_gpu_s / 3600);
}

static tide_engine_t *engine(const tide_cluster_t *c, const tide_services_t *sv,
                             tide_error_t *err)
{
    tide_config_t cfg;
    tide_config_default(&cfg);
    cfg.policy = "elastic";
    cfg.reserve_gpus = 40;
    cfg.warm_start = 1;
    cfg.check_invariants = 1;
    tide_engine_t *e = tide_engine_create(c, &cfg, err);
    for (size_t i = 0; e && i < sv->n; i++)
        if (tide_engine_add_service(e, &sv->v[i], err) < 0)
            return NULL;
    return e;
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *svc = NULL;
    int regress = 5, days = 14, off = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--service") && i + 1 < argc)
            svc = argv[++i];
        else if (!strcmp(argv[i], "--regress") && i + 1 < argc)
            regress = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--off"))
            off = 1;
        else if (!strcmp(argv[i], "--days") && i + 1 < argc)
            days = atoi(argv[++i]);
        else if (argv[i][0] == '-') {
            printf("usage: pipeline_sim DIR [--service NAME] [--regress K] [--days N] [--off]\n"
                   "DIR: `tide gen --scenario seed200 --out DIR`; a version published every day,\n"
                   "every Kth one regressing at its canary (0: none; default 5); --off: no\n"
                   "version at all (the same replay without the pipeline)\n");
            return !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h") ? 0 : 2;
        } else
            dir = argv[i];
    }
    if (!dir || days < 1) {
        fprintf(stderr, "pipeline_sim: give the scenario folder (see --help)\n");
        return 2;
    }
    char path[4096];
    tide_error_t err = {0};
    tide_cluster_t *c = tide_cluster_parse("25x8:H100", &err);
    tide_read_opts_t ro = {.cluster = c};
    snprintf(path, sizeof path, "%s/services.csv", dir);
    tide_services_t *sv = c ? tide_services_read_file(path, &ro, &err) : NULL;
    snprintf(path, sizeof path, "%s/demand.csv", dir);
    tide_demand_t *dm = sv ? tide_demand_read_file(path, sv, &ro, &err) : NULL;
    snprintf(path, sizeof path, "%s/jobs.csv", dir);
    tide_jobs_t *jobs = dm ? tide_jobs_read_file(path, &ro, &err) : NULL;
    if (!jobs)
        die(dir, &err);
    static run_t r;
    r.e = engine(c, sv, &err);
    if (!r.e)
        die("engine", &err);
    r.svc = svc ? tide_services_find(sv, svc) : 0;
    if (r.svc < 0) {
        fprintf(stderr, "pipeline_sim: no service %s\n", svc);
        return 2;
    }
    r.w = tide_world_create(r.e);
    r.p = tide_pipeline_create(1);
    r.regress = regress;
    r.surge_sent = -1;
    tide_pipe_labels_init(&r.lab);
    tide_actions_init(&r.acts);
    tide_pipe_acts_init(&r.pa);
    tide_model_spec_t m = {.name = "model", .service = sv->v[r.svc].name, .eval_command = "eval",
                           .eval_gpus = 8, .eval_limit_s = 3600};
    tide_rollout_plan_default(&m.plan);
    m.plan.hold_s = 1800;
    m.plan.gate_interval_s = 300;
    if (tide_pipeline_add_model(r.p, &m, &err) < 0)
        die("model", &err);
    r.warmup_s = sv->v[r.svc].warmup_s;
    r.soak_s = m.plan.hold_s * m.plan.n_steps;
    loop(&r, dm, jobs, (tide_time_t)days * DAY, off ? TIDE_TIME_NEVER : 6 * 3600);
    report(&r, sv->v[r.svc].name, sv->v[r.svc].gpus_per_replica);
    tide_pipe_acts_free(&r.pa);
    tide_actions_free(&r.acts);
    tide_pipe_labels_free(&r.lab);
    tide_pipeline_destroy(r.p);
    tide_world_destroy(r.w);
    tide_engine_destroy(r.e);
    tide_jobs_free(jobs);
    tide_demand_free(dm);
    tide_services_free(sv);
    tide_cluster_destroy(c);
    return 0;
}
