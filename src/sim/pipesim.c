/* The model pipeline in a replay: see pipesim.h. Figures: time from the
 * checkpoint to full serving, GPU-hours of evaluations and of replicas held
 * above the service's need during rollouts, the worst extra GPUs at a step,
 * SLO attainment during rollouts, next to a "2x capacity blue/green" release
 * (the whole service doubled from the rollout's start to its end, the same
 * evaluation and the same gated soak). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "sim/pipesim.h"
#include "tide/pipeline.h"
#include "util/util.h"

/* One version: when it was published, reached canary, ended (and how). */
typedef struct pver {
    tide_time_t reg_at, canary_at, end_at;
    int outcome; /* 1 serving, -1 rolled back, 0 not yet */
    int noted;   /* its "registered" row was written */
} pver_t;

/* One evaluation job (its spec outlives the engine's copy of the pointer). */
typedef struct peval {
    tide_job_spec_t spec;
    char id[48];
    int version;
} peval_t;

struct tide_pipesim {
    tide_pipesim_opts_t o;
    tide_engine_t *e;
    tide_pipeline_t *p;
    tide_pipe_labels_t lab;
    tide_pipe_acts_t pa;
    char model[96], service[96];
    int svc, surge_sent;
    tide_time_t next_pub, wake, warmup_s, soak_s;
    tide_event_t *pend;
    size_t npend, cappend;
    peval_t **evals;
    size_t nevals, capevals;
    pver_t *ver;
    size_t nver, capver;
    /* measures */
    double extra_gpu_s, bg_gpu_s, worst_extra, worst_bg, last_t;
    double dem0, srv0, dem_ro, srv_ro;
    int in_ro;
};

static tide_event_t blank(int kind)
{
    tide_event_t ev = {.kind = kind, .job = -1, .service = -1, .replica = -1, .node = -1};
    return ev;
}

static void push(tide_pipesim_t *ps, tide_event_t ev)
{
    TIDE_PUSH(ps->pend, ps->npend, ps->cappend, ev);
}

tide_pipesim_t *tide_pipesim_create(const tide_pipesim_opts_t *o, tide_engine_t *e,
                                    tide_error_t *err)
{
    if (!(o->every_s > 0))
        return tide_errf(err, TIDE_EINVAL, "--publish-every must be positive"), NULL;
    int svc = o->service ? tide_engine_service_find(e, o->service) : 0;
    const tide_service_spec_t *sp = svc >= 0 ? tide_engine_service(e, svc) : NULL;
    if (!sp)
        return tide_errf(err, TIDE_EINVAL, "--publish-service: no service '%s'",
                         o->service ? o->service : "(none)"),
               NULL;
    tide_pipesim_t *ps = tide_xcalloc(1, sizeof *ps);
    ps->o = *o;
    ps->e = e;
    ps->svc = svc;
    ps->surge_sent = -1;
    ps->wake = TIDE_TIME_NEVER;
    ps->next_pub = o->first_s > 0 ? o->first_s : 6 * 3600;
    snprintf(ps->model, sizeof ps->model, "%.80s-model", sp->name);
    snprintf(ps->service, sizeof ps->service, "%s", sp->name);
    ps->p = tide_pipeline_create(1);
    tide_pipe_labels_init(&ps->lab);
    tide_pipe_acts_init(&ps->pa);
    tide_model_spec_t m = {.name = ps->model, .service = sp->name, .eval_command = "eval",
                           .eval_gpus = o->eval_gpus > 0 ? o->eval_gpus
                                                         : sp->gpus_per_replica,
                           .eval_limit_s = o->eval_s > 0 ? o->eval_s : 3600};
    tide_rollout_plan_default(&m.plan);
    m.plan.hold_s = o->hold_s > 0 ? o->hold_s : 1800;
    m.plan.gate_interval_s = o->gate_s > 0 ? o->gate_s : 300;
    if (tide_pipeline_add_model(ps->p, &m, err) < 0) {
        tide_pipesim_destroy(ps);
        return NULL;
    }
    ps->warmup_s = sp->warmup_s;
    ps->soak_s = m.plan.hold_s * m.plan.n_steps;
    return ps;
}

void tide_pipesim_destroy(tide_pipesim_t *ps)
{
    if (!ps)
        return;
    tide_pipe_acts_free(&ps->pa);
    tide_pipe_labels_free(&ps->lab);
    tide_pipeline_destroy(ps->p);
    for (size_t i = 0; i < ps->nevals; i++)
        free(ps->evals[i]);
    free(ps->evals);
    free(ps->pend);
    free(ps->ver);
    free(ps);
}

static void publish(tide_pipesim_t *ps, tide_time_t t)
{
    char uri[64];
    snprintf(uri, sizeof uri, "sim://ckpt/%lld", (long long)t);
    tide_version_spec_t v = {.source_job = "train", .ckpt_step = t, .manifest_uri = uri,
                             .size_bytes = 0};
    int ver = tide_pipeline_register(ps->p, 0, &v, t, NULL);
    if (ver <= 0)
        return;
    tide_grow_zeroed((void **)&ps->ver, &ps->capver, (size_t)ver, sizeof *ps->ver);
    ps->ver[ver - 1].reg_at = t;
    ps->nver = (size_t)ver;
}

void tide_pipesim_events(tide_pipesim_t *ps, tide_time_t t, tide_event_t **v, size_t *n,
                         size_t *cap)
{
    if (t >= ps->next_pub) {
        publish(ps, t);
        ps->next_pub += ps->o.every_s;
    }
    for (size_t i = 0; i < ps->npend; i++)
        TIDE_PUSH(*v, *n, *cap, ps->pend[i]);
    ps->npend = 0;
}

/* Integrate the extra GPUs the rollout holds, and blue/green's, up to t
 * (c: the service's counts now, NULL when it has none). */
static void measure(tide_pipesim_t *ps, tide_time_t t, const tide_rollout_info_t *ro,
                    const tide_pipe_count_t *c)
{
    if (ro->active && c) {
        double extra = (double)(c->held_old + c->held_new - c->need) * c->gpus_per_replica;
        double bg = (double)c->need * c->gpus_per_replica;
        extra = extra > 0 ? extra : 0;
        ps->extra_gpu_s += extra * ((double)t - ps->last_t);
        ps->bg_gpu_s += bg * ((double)t - ps->last_t);
        ps->worst_extra = fmax(ps->worst_extra, extra);
        ps->worst_bg = fmax(ps->worst_bg, bg);
    }
    ps->last_t = (double)t;
}

/* The requests of the rollout windows (SLO during rollouts). */
static void window(tide_pipesim_t *ps, int active)
{
    tide_stats_t st;
    tide_engine_stats(ps->e, &st);
    if (active && !ps->in_ro) {
        ps->dem0 = st.requests_demanded;
        ps->srv0 = st.requests_served;
    } else if (!active && ps->in_ro) {
        ps->dem_ro += st.requests_demanded - ps->dem0;
        ps->srv_ro += st.requests_served - ps->srv0;
    }
    ps->in_ro = active;
}

static void eval_start(tide_pipesim_t *ps, const tide_pipe_act_t *a)
{
    peval_t *x = tide_xcalloc(1, sizeof *x);
    snprintf(x->id, sizeof x->id, "eval-%.30s-v%d", ps->model, a->version);
    x->version = a->version;
    x->spec = (tide_job_spec_t){.id = x->id, .team = "pipeline", .priority = TIDE_P1,
                                .gpus = a->n, .duration_s = a->deadline};
    TIDE_PUSH(ps->evals, ps->nevals, ps->capevals, x);
    tide_event_t ev = blank(TIDE_EV_JOB_SUBMIT);
    ev.job_spec = &x->spec;
    push(ps, ev);
}

/* Evaluations that finished pass (the regressions show at the canary). */
static void eval_poll(tide_pipesim_t *ps)
{
    for (size_t k = 0; k < ps->nevals; k++) {
        int32_t h = tide_engine_job_find(ps->e, ps->evals[k]->id);
        tide_job_info_t ji;
        tide_version_info_t vi;
        int ver = ps->evals[k]->version;
        if (h < 0 || tide_engine_job(ps->e, h, &ji) < 0 || ji.state != TIDE_JOB_DONE ||
            tide_pipeline_version(ps->p, 0, ver, &vi) < 0 || vi.state != TIDE_VER_EVALUATING ||
            vi.gate >= 0)
            continue;
        tide_pipeline_metric(ps->p, 0, ver, "accuracy", 0.8, NULL);
        tide_pipeline_eval_done(ps->p, 0, ver, 1, NULL);
    }
}

/* One events.csv row of kind "version": job = MODEL:vN, reason = what happened. */
static void row(FILE *f, const char *policy, tide_time_t t, const tide_pipesim_t *ps, int ver,
                const char *what, double weight)
{
    if (!f)
        return;
    fprintf(f, "%s,%lld,version,%s:v%d,%s,,,,,%s,,", policy, (long long)t, ps->model, ver,
            ps->service, what);
    if (weight >= 0)
        fprintf(f, "%g", weight);
    fputc('\n', f);
}

static void acts_note(tide_pipesim_t *ps, tide_time_t t, FILE *f, const char *policy)
{
    for (size_t i = 0; i < ps->nver; i++)
        if (!ps->ver[i].noted) {
            ps->ver[i].noted = 1;
            row(f, policy, ps->ver[i].reg_at, ps, (int)i + 1, "registered", -1);
        }
    for (size_t i = 0; i < ps->pa.n; i++) {
        const tide_pipe_act_t *a = &ps->pa.v[i];
        pver_t *v = a->version > 0 && (size_t)a->version <= ps->nver ? &ps->ver[a->version - 1]
                                                                      : NULL;
        if (a->kind == TIDE_PA_EVAL_START)
            eval_start(ps, a);
        if (a->kind == TIDE_PA_STATE) {
            if (v && a->state == TIDE_VER_CANARY)
                v->canary_at = t;
            row(f, policy, t, ps, a->version, tide_ver_state_name(a->state), -1);
        }
        if (a->kind == TIDE_PA_STEP)
            row(f, policy, t, ps, a->version, "step", a->weight);
        if ((a->kind == TIDE_PA_PROMOTED || a->kind == TIDE_PA_ROLLBACK) && v) {
            v->end_at = t;
            v->outcome = a->kind == TIDE_PA_PROMOTED ? 1 : -1;
        }
    }
}

int tide_pipesim_after(tide_pipesim_t *ps, tide_time_t t, const tide_actions_t *acts, FILE *evf,
                       const char *policy, tide_error_t *err)
{
    tide_pipeline_label_starts(ps->p, ps->e, acts, &ps->lab, NULL, 0);
    /* one count for the measures and the observation (an evaluation's
     * outcome changes no replica and starts no rollout before the step) */
    tide_pipe_count_t c;
    tide_rollout_info_t ro;
    tide_pipeline_rollout(ps->p, 0, &ro);
    int counted = tide_pipeline_count(ps->p, 0, ps->e, &ps->lab, &c) == 0;
    measure(ps, t, &ro, counted ? &c : NULL);
    eval_poll(ps);
    if (counted) {
        int bad = ro.active && ps->o.regress > 0 && ro.version % ps->o.regress == 0;
        tide_pipe_obs_t o = {.need = c.need, .gpus_per_replica = c.gpus_per_replica,
                             .held_old = c.held_old, .held_new = c.held_new,
                             .ready_new = c.ready_new, .have_slo = ro.active && ro.weight > 0,
                             .slo = bad ? 0.9 : 0.9995, .error_rate = bad ? 0.05 : 0.0005};
        if (tide_pipeline_observe(ps->p, 0, &o, err) < 0)
            return -1;
    }
    if (tide_pipeline_step(ps->p, t, &ps->pa, err) < 0)
        return -1;
    acts_note(ps, t, evf, policy);
    tide_pipeline_rollout(ps->p, 0, &ro);
    window(ps, ro.active);
    tide_event_t ev[64];
    size_t n = tide_pipeline_engine_events(ps->p, 0, ps->e, &ps->lab, &ps->surge_sent, ev, 64);
    for (size_t i = 0; i < n; i++)
        push(ps, ev[i]);
    ps->wake = ps->pa.next_wake;
    return 0;
}

tide_time_t tide_pipesim_next(const tide_pipesim_t *ps, tide_time_t t)
{
    if (ps->npend)
        return t;
    return ps->wake < ps->next_pub ? ps->wake : ps->next_pub;
}

json_t *tide_pipesim_json(const tide_pipesim_t *ps, tide_time_t end)
{
    double sum = 0, mx = 0, bg = 0, eval_h = 0;
    int served = 0, rolled = 0;
    for (size_t i = 0; i < ps->nver; i++) {
        const pver_t *v = &ps->ver[i];
        if (v->outcome == 1) {
            double h = (double)(v->end_at - v->reg_at) / 3600.0;
            sum += h;
            mx = fmax(mx, h);
            served++;
            /* blue/green: the same evaluation, one warm-up of the whole green
             * side, the same soak */
            bg += (double)(v->canary_at - v->reg_at + ps->warmup_s + ps->soak_s) / 3600.0;
        }
        rolled += v->outcome == -1;
    }
    for (size_t k = 0; k < ps->nevals; k++) {
        tide_job_info_t ji;
        int32_t h = tide_engine_job_find(ps->e, ps->evals[k]->id);
        if (h >= 0 && tide_engine_job(ps->e, h, &ji) == 0 && ji.first_start >= 0)
            eval_h += (double)ji.spec->gpus *
                      (double)((ji.finished >= 0 ? ji.finished : end) - ji.first_start) / 3600.0;
    }
    double dem = ps->dem_ro, srv = ps->srv_ro;
    if (ps->in_ro) { /* a rollout still open at the end */
        tide_stats_t st;
        tide_engine_stats(ps->e, &st);
        dem += st.requests_demanded - ps->dem0;
        srv += st.requests_served - ps->srv0;
    }
    json_t *bgj = json_pack("{s:o,s:o,s:o,s:o}", "ckpt_to_serving_mean_h",
                            tide_json_num(served ? bg / served : 0), "eval_gpu_hours",
                            tide_json_num(eval_h), "extra_gpu_hours",
                            tide_json_num(ps->bg_gpu_s / 3600), "worst_extra_gpus",
                            tide_json_num(ps->worst_bg));
    return json_pack("{s:s,s:i,s:i,s:i,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "model", ps->model,
                     "versions", (int)ps->nver, "served", served, "rolled_back", rolled,
                     "ckpt_to_serving_mean_h", tide_json_num(served ? sum / served : 0),
                     "ckpt_to_serving_max_h", tide_json_num(mx), "eval_gpu_hours",
                     tide_json_num(eval_h), "extra_gpu_hours",
                     tide_json_num(ps->extra_gpu_s / 3600), "worst_extra_gpus",
                     tide_json_num(ps->worst_extra), "slo_during_rollouts",
                     tide_json_num(dem > 0 ? srv / dem : 1.0), "blue_green_2x", bgj);
}
