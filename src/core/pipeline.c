/* The model pipeline: a registry of models and versions, evaluation gates
 * and a rollout state machine per model (include/tide/pipeline.h). Pure:
 * the driver reports, the step decides and returns actions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/pipeline.h"
#include "util/util.h"

typedef struct version {
    char *job, *uri, *digest;
    int64_t ckpt_step, size_bytes;
    int state;
    tide_time_t registered_at, state_at;
    int gate;                 /* last evaluation gate, -1 none */
    int eval;                 /* -1 running, 0 failed, 1 completed */
    int held;                 /* inconclusive: waits for a person */
    int released;             /* promoted by a person despite the gates */
    tide_metric_t metrics[TIDE_PIPE_MAX_METRICS];
    size_t n_metrics;
} version_t;

typedef struct rollout {
    int active, version, old, step, phase, paused, failures;
    tide_time_t started_at, step_at, hold_until, next_gate;
    int sent_new, sent_old;   /* last REPLICAS targets emitted (-1 none) */
    int skip;                 /* PROMOTE: end the hold now */
    int passed;               /* SLO gates passed in this step */
    int abort;                /* ABORT: roll back now */
} rollout_t;

typedef struct model {
    char *name, *service, *eval_command;
    int eval_gpus;
    tide_time_t eval_limit_s;
    tide_gate_rule_t rules[TIDE_PIPE_MAX_RULES];
    size_t n_rules;
    tide_rollout_plan_t plan;
    version_t *v;
    size_t n_v, cap_v;
    int alias[TIDE_ALIAS_COUNT];
    rollout_t ro;
    tide_pipe_obs_t obs;
    int have_obs, prev_need;
} model_t;

struct tide_pipeline {
    model_t *m;
    size_t n_m, cap_m;
    tide_time_t now;
    int started, check;
    tide_pipe_acts_t *out;
};

/* ----------------------------------------------------------------- names */

static const char *const ver_names[] = {"registered", "evaluating", "rejected", "canary",
                                        "serving", "retired", "rolled-back"};
static const char *const alias_names[] = {"serving", "candidate", "last-good"};
static const char *const gate_names[] = {"pass", "fail", "inconclusive"};
static const char *const act_names[] = {"eval-start", "state", "replicas", "route",
                                        "step", "rollback", "promoted"};

#define NAME_OF(tab, k) ((k) >= 0 && (size_t)(k) < sizeof tab / sizeof tab[0] ? tab[k] : "unknown")
const char *tide_ver_state_name(int s) { return NAME_OF(ver_names, s); }
const char *tide_alias_name(int a) { return NAME_OF(alias_names, a); }
const char *tide_gate_name(int g) { return NAME_OF(gate_names, g); }
const char *tide_pipe_act_name(int k) { return NAME_OF(act_names, k); }

/* ----------------------------------------------------------------- gates */

static const tide_metric_t *metric_find(const tide_metric_t *m, size_t n, const char *name)
{
    for (size_t i = 0; m && i < n; i++)
        if (!strcmp(m[i].name, name))
            return &m[i];
    return NULL;
}

static int rule_eval(const tide_gate_rule_t *r, const tide_metric_t *cand, size_t n_cand,
                     const tide_metric_t *serving, size_t n_serving)
{
    const tide_metric_t *c = metric_find(cand, n_cand, r->metric);
    if (!c)
        return TIDE_GATE_INCONCLUSIVE;
    double limit = r->threshold;
    if (r->vs_serving) {
        const tide_metric_t *s = metric_find(serving, n_serving, r->metric);
        if (!s)
            return TIDE_GATE_INCONCLUSIVE;
        limit += s->value;
    }
    int ok = r->op == TIDE_GATE_LE ? c->value <= limit : c->value >= limit;
    return ok ? TIDE_GATE_PASS : TIDE_GATE_FAIL;
}

int tide_gate_eval(const tide_gate_rule_t *rules, size_t n_rules, const tide_metric_t *cand,
                   size_t n_cand, const tide_metric_t *serving, size_t n_serving)
{
    int worst = TIDE_GATE_PASS;
    for (size_t i = 0; i < n_rules; i++) {
        int g = rule_eval(&rules[i], cand, n_cand, serving, n_serving);
        if (g == TIDE_GATE_FAIL)
            return g;
        if (g == TIDE_GATE_INCONCLUSIVE)
            worst = g;
    }
    return worst;
}

int tide_gate_rule_parse(const char *s, tide_gate_rule_t *out, tide_error_t *err)
{
    memset(out, 0, sizeof *out);
    const char *op = s ? strpbrk(s, "<>") : NULL;
    if (!op || op == s || op[1] != '=' || (size_t)(op - s) >= sizeof out->metric)
        return tide_errf(err, TIDE_EINVAL,
                         "gate '%s': expected METRIC>=VALUE or METRIC<=VALUE (VALUE may be "
                         "serving+D or serving-D)",
                         s ? s : "");
    memcpy(out->metric, s, (size_t)(op - s));
    out->op = *op == '>' ? TIDE_GATE_GE : TIDE_GATE_LE;
    const char *v = op + 2;
    if (!strncmp(v, "serving", 7)) {
        out->vs_serving = 1;
        v += 7;
        if (!*v)
            return 0;
    }
    double x;
    if (tide_parse_double(v, &x) < 0 || !isfinite(x) ||
        (out->vs_serving && *v != '+' && *v != '-'))
        return tide_errf(err, TIDE_EINVAL, "gate '%s': '%s' is not a number", s, v);
    out->threshold = x;
    return 0;
}

const char *tide_gate_rule_format(const tide_gate_rule_t *r, char *buf, size_t n)
{
    const char *op = r->op == TIDE_GATE_LE ? "<=" : ">=";
    if (r->vs_serving)
        snprintf(buf, n, "%s%sserving%+g", r->metric, op, r->threshold);
    else
        snprintf(buf, n, "%s%s%g", r->metric, op, r->threshold);
    return buf;
}

/* ------------------------------------------------------------------ plan */

void tide_rollout_plan_default(tide_rollout_plan_t *p)
{
    memset(p, 0, sizeof *p);
    static const double w[] = {5, 25, 50, 100};
    p->n_steps = 4;
    memcpy(p->weights, w, sizeof w);
    p->hold_s = 600;
    p->gate_interval_s = 60;
    p->slo_min = 0.99;
    p->error_max = 0.01;
    p->failure_limit = 0;
}

int tide_rollout_plan_check(const tide_rollout_plan_t *p, tide_error_t *err)
{
    if (p->n_steps < 1 || p->n_steps > TIDE_ROLLOUT_MAX_STEPS)
        return tide_errf(err, TIDE_EINVAL, "steps: 1..%d weights", TIDE_ROLLOUT_MAX_STEPS);
    for (int i = 0; i < p->n_steps; i++)
        if (!(p->weights[i] > 0 && p->weights[i] <= 100) ||
            (i > 0 && !(p->weights[i] > p->weights[i - 1])))
            return tide_errf(err, TIDE_EINVAL,
                             "steps: weights must increase strictly within (0, 100]");
    if (p->weights[p->n_steps - 1] != 100)
        return tide_errf(err, TIDE_EINVAL, "steps: the last weight must be 100");
    if (p->hold_s < 0 || p->gate_interval_s < 1)
        return tide_errf(err, TIDE_EINVAL, "hold must be >= 0 and gate_interval >= 1 s");
    if (!(p->slo_min >= 0 && p->slo_min <= 1) || !(p->error_max >= 0 && p->error_max <= 1) ||
        !(p->latency_max_ms >= 0) || !isfinite(p->latency_max_ms))
        return tide_errf(err, TIDE_EINVAL, "slo_min, error_max in [0, 1], latency_max >= 0");
    if (p->failure_limit < 0)
        return tide_errf(err, TIDE_EINVAL, "failure_limit must be >= 0");
    return 0;
}

int tide_rollout_weights_parse(const char *s, tide_rollout_plan_t *p, tide_error_t *err)
{
    char buf[256];
    if (!s || strlen(s) >= sizeof buf)
        return tide_errf(err, TIDE_EINVAL, "steps: expected a list like 5,25,50,100");
    snprintf(buf, sizeof buf, "%s", s);
    int n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        double w;
        if (n >= TIDE_ROLLOUT_MAX_STEPS || tide_parse_double(t, &w) < 0)
            return tide_errf(err, TIDE_EINVAL, "steps: '%s' is not a list of up to %d percents",
                             s, TIDE_ROLLOUT_MAX_STEPS);
        p->weights[n++] = w;
    }
    p->n_steps = n;
    return tide_rollout_plan_check(p, err);
}

/* Replicas of the new version at step i for a need of n (at least one). */
static int new_target(const tide_rollout_plan_t *p, int i, int n)
{
    if (i < 0 || n <= 0)
        return 0;
    if (p->weights[i] >= 100)
        return n;
    int k = (int)ceil(p->weights[i] * n / 100.0 - 1e-9);
    return k < 1 ? 1 : k > n ? n : k;
}

/* Replicas of the old version at step i: the rest of the need, but one at
 * least while the step routes less than everything to the new version (a
 * weight needs somewhere to go). nt + old_target <= n + S(n) still: nt <= n
 * and S(n) >= 1. */
static int old_target(const tide_rollout_plan_t *p, int i, int n)
{
    int k = n - new_target(p, i, n);
    return k < 1 && n > 0 && (i < 0 || p->weights[i] < 100) ? 1 : k;
}

int tide_rollout_step_replicas(const tide_rollout_plan_t *p, int n)
{
    int s = 0;
    for (int i = 0; i < p->n_steps; i++) {
        int d = new_target(p, i, n) - new_target(p, i - 1, n);
        if (d > s)
            s = d;
    }
    return s;
}

/* --------------------------------------------------------------- actions */

void tide_pipe_acts_init(tide_pipe_acts_t *a) { memset(a, 0, sizeof *a); }
void tide_pipe_acts_free(tide_pipe_acts_t *a)
{
    free(a->v);
    memset(a, 0, sizeof *a);
}

static tide_pipe_act_t *act(tide_pipeline_t *p, int kind, int model, int version)
{
    tide_pipe_acts_t *o = p->out;
    tide_grow((void **)&o->v, &o->cap, o->n + 1, sizeof *o->v);
    tide_pipe_act_t *a = &o->v[o->n++];
    memset(a, 0, sizeof *a);
    a->kind = kind;
    a->model = model;
    a->version = version;
    a->gate = -1;
    return a;
}

static void wake_at(tide_pipeline_t *p, tide_time_t t)
{
    if (t > p->now && t < p->out->next_wake)
        p->out->next_wake = t;
}

static void set_state(tide_pipeline_t *p, int mi, int ver, int state)
{
    version_t *v = &p->m[mi].v[ver - 1];
    if (v->state == state)
        return;
    v->state = state;
    v->state_at = p->now;
    act(p, TIDE_PA_STATE, mi, ver)->state = state;
}

/* --------------------------------------------------------------- create */

tide_pipeline_t *tide_pipeline_create(int check_invariants)
{
    tide_pipeline_t *p = tide_xcalloc(1, sizeof *p);
    p->check = check_invariants;
    return p;
}

static void model_free(model_t *m)
{
    for (size_t i = 0; i < m->n_v; i++) {
        free(m->v[i].job);
        free(m->v[i].uri);
        free(m->v[i].digest);
    }
    free(m->v);
    free(m->name);
    free(m->service);
    free(m->eval_command);
}

void tide_pipeline_destroy(tide_pipeline_t *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n_m; i++)
        model_free(&p->m[i]);
    free(p->m);
    free(p);
}

static int spec_check(const tide_model_spec_t *s, tide_error_t *err)
{
    if (!s->name || !*s->name || strlen(s->name) > 128)
        return tide_errf(err, TIDE_EINVAL, "name: 1..128 characters");
    if (!s->service || !*s->service)
        return tide_errf(err, TIDE_EINVAL, "model %s: service is required", s->name);
    if (s->eval_command && *s->eval_command && (s->eval_gpus < 1 || s->eval_limit_s < 1))
        return tide_errf(err, TIDE_EINVAL, "model %s: eval_gpus and eval_limit must be >= 1",
                         s->name);
    if (s->n_rules > TIDE_PIPE_MAX_RULES || (s->n_rules && !s->rules))
        return tide_errf(err, TIDE_EINVAL, "model %s: at most %d gate rules", s->name,
                         TIDE_PIPE_MAX_RULES);
    for (size_t i = 0; i < s->n_rules; i++)
        if (!s->rules[i].metric[0] || !isfinite(s->rules[i].threshold) ||
            (s->rules[i].op != TIDE_GATE_GE && s->rules[i].op != TIDE_GATE_LE))
            return tide_errf(err, TIDE_EINVAL, "model %s: gate rule %zu: metric, op and a finite "
                             "threshold are required", s->name, i + 1);
    if (tide_rollout_plan_check(&s->plan, err) < 0)
        return tide_err_prefix(err, "model %s: ", s->name);
    return 0;
}

int tide_pipeline_add_model(tide_pipeline_t *p, const tide_model_spec_t *s, tide_error_t *err)
{
    if (spec_check(s, err) < 0)
        return -1;
    int mi = tide_pipeline_model_find(p, s->name);
    if (mi < 0) {
        tide_grow((void **)&p->m, &p->cap_m, p->n_m + 1, sizeof *p->m);
        mi = (int)p->n_m++;
        memset(&p->m[mi], 0, sizeof p->m[mi]);
        p->m[mi].name = tide_xstrdup(s->name);
        p->m[mi].ro.sent_new = p->m[mi].ro.sent_old = -1;
    }
    model_t *m = &p->m[mi];
    free(m->service);
    free(m->eval_command);
    m->service = tide_xstrdup(s->service);
    m->eval_command = s->eval_command && *s->eval_command ? tide_xstrdup(s->eval_command) : NULL;
    m->eval_gpus = m->eval_command ? s->eval_gpus : 0;
    m->eval_limit_s = m->eval_command ? s->eval_limit_s : 0;
    m->n_rules = s->n_rules;
    if (s->n_rules)
        memcpy(m->rules, s->rules, s->n_rules * sizeof *s->rules);
    m->plan = s->plan;
    return mi;
}

int tide_pipeline_model_find(const tide_pipeline_t *p, const char *name)
{
    for (size_t i = 0; name && i < p->n_m; i++)
        if (!strcmp(p->m[i].name, name))
            return (int)i;
    return -1;
}

int tide_pipeline_models(const tide_pipeline_t *p) { return (int)p->n_m; }

static model_t *model_at(tide_pipeline_t *p, int mi, tide_error_t *err)
{
    if (mi < 0 || (size_t)mi >= p->n_m) {
        tide_errf(err, TIDE_ENOENT, "unknown model %d", mi);
        return NULL;
    }
    return &p->m[mi];
}

static version_t *version_at(tide_pipeline_t *p, int mi, int ver, tide_error_t *err)
{
    model_t *m = model_at(p, mi, err);
    if (!m)
        return NULL;
    if (ver < 1 || (size_t)ver > m->n_v) {
        tide_errf(err, TIDE_ENOENT, "model %s: no version %d", m->name, ver);
        return NULL;
    }
    return &m->v[ver - 1];
}

/* -------------------------------------------------------------- registry */

static int same_source(const version_t *v, const tide_version_spec_t *s)
{
    return v->job && s->source_job && !strcmp(v->job, s->source_job) &&
           v->ckpt_step == s->ckpt_step;
}

int tide_pipeline_register(tide_pipeline_t *p, int mi, const tide_version_spec_t *s,
                           tide_time_t now, tide_error_t *err)
{
    model_t *m = model_at(p, mi, err);
    if (!m)
        return -1;
    if (!s->manifest_uri || !*s->manifest_uri || s->size_bytes < 0 || s->ckpt_step < 0)
        return tide_errf(err, TIDE_EINVAL,
                         "model %s: a version needs a manifest URI, step >= 0 and size >= 0",
                         m->name);
    for (size_t i = 0; i < m->n_v; i++)
        if (same_source(&m->v[i], s))
            return tide_errf(err, TIDE_EEXIST, "model %s: job %s step %lld is version %zu",
                             m->name, s->source_job, (long long)s->ckpt_step, i + 1);
    tide_grow((void **)&m->v, &m->cap_v, m->n_v + 1, sizeof *m->v);
    version_t *v = &m->v[m->n_v++];
    memset(v, 0, sizeof *v);
    v->job = s->source_job && *s->source_job ? tide_xstrdup(s->source_job) : NULL;
    v->uri = tide_xstrdup(s->manifest_uri);
    v->digest = s->digest && *s->digest ? tide_xstrdup(s->digest) : NULL;
    v->ckpt_step = s->ckpt_step;
    v->size_bytes = s->size_bytes;
    v->state = TIDE_VER_REGISTERED;
    v->registered_at = v->state_at = now;
    v->gate = -1;
    v->eval = -1;
    return (int)m->n_v;
}

int tide_pipeline_metric(tide_pipeline_t *p, int mi, int ver, const char *name, double value,
                         tide_error_t *err)
{
    version_t *v = version_at(p, mi, ver, err);
    if (!v)
        return -1;
    if (!name || !*name || strlen(name) >= TIDE_METRIC_NAME_MAX || !isfinite(value))
        return tide_errf(err, TIDE_EINVAL, "metric: a name of 1..%d characters and a finite value",
                         TIDE_METRIC_NAME_MAX - 1);
    tide_metric_t *x = (tide_metric_t *)metric_find(v->metrics, v->n_metrics, name);
    if (!x) {
        if (v->n_metrics >= TIDE_PIPE_MAX_METRICS)
            return tide_errf(err, TIDE_ERANGE, "metric %s: at most %d metrics per version", name,
                             TIDE_PIPE_MAX_METRICS);
        x = &v->metrics[v->n_metrics++];
        snprintf(x->name, sizeof x->name, "%s", name);
    }
    x->value = value;
    if (v->held && !v->released && v->state == TIDE_VER_EVALUATING)
        v->held = 0; /* held for want of a metric: the gates look again */
    return 0;
}

int tide_pipeline_eval_done(tide_pipeline_t *p, int mi, int ver, int ok, tide_error_t *err)
{
    version_t *v = version_at(p, mi, ver, err);
    if (!v)
        return -1;
    if (v->state != TIDE_VER_EVALUATING || v->eval != -1)
        return tide_errf(err, TIDE_ESTATE, "version %d: not being evaluated (%s)", ver,
                         tide_ver_state_name(v->state));
    v->eval = ok ? 1 : 0;
    return 0;
}

int tide_pipeline_observe(tide_pipeline_t *p, int mi, const tide_pipe_obs_t *o, tide_error_t *err)
{
    model_t *m = model_at(p, mi, err);
    if (!m)
        return -1;
    if (o->need < 0 || o->held_old < 0 || o->held_new < 0 || o->ready_new < 0 ||
        o->ready_new > o->held_new || o->gpus_per_replica < 1)
        return tide_errf(err, TIDE_EINVAL, "model %s: bad replica counts", m->name);
    if (o->have_slo && (!(o->slo >= 0 && o->slo <= 1) || !(o->error_rate >= 0 && o->error_rate <= 1) ||
                        !(o->latency_ms >= 0) || !isfinite(o->latency_ms)))
        return tide_errf(err, TIDE_EINVAL, "model %s: slo and error rate in [0, 1], latency >= 0",
                         m->name);
    int had = m->obs.have_slo;
    tide_pipe_obs_t keep = m->obs;
    m->prev_need = m->have_obs ? m->obs.need : o->need;
    m->obs = *o;
    if (!o->have_slo && had) { /* fresh SLO data stays until a gate uses it */
        m->obs.have_slo = 1;
        m->obs.slo = keep.slo;
        m->obs.error_rate = keep.error_rate;
        m->obs.latency_ms = keep.latency_ms;
    }
    m->have_obs = 1;
    return 0;
}

/* ------------------------------------------------------------ evaluation */

static const version_t *serving_version(const model_t *m)
{
    int s = m->alias[TIDE_ALIAS_SERVING];
    return s > 0 ? &m->v[s - 1] : NULL;
}

/* A version passed: it becomes the candidate; an older candidate that has
 * not started rolling out is superseded (retired). */
static void version_passed(tide_pipeline_t *p, int mi, int ver)
{
    model_t *m = &p->m[mi];
    int old = m->alias[TIDE_ALIAS_CANDIDATE];
    if (old > 0 && old != ver && old < ver && !(m->ro.active && m->ro.version == old))
        set_state(p, mi, old, TIDE_VER_RETIRED);
    if (old <= ver)
        m->alias[TIDE_ALIAS_CANDIDATE] = ver;
    else
        set_state(p, mi, ver, TIDE_VER_RETIRED);
}

static void eval_one(tide_pipeline_t *p, int mi, int ver)
{
    model_t *m = &p->m[mi];
    version_t *v = &m->v[ver - 1];
    if (v->state == TIDE_VER_REGISTERED) {
        set_state(p, mi, ver, TIDE_VER_EVALUATING);
        v->eval = m->eval_command ? -1 : 1;
        if (m->eval_command) {
            tide_pipe_act_t *a = act(p, TIDE_PA_EVAL_START, mi, ver);
            a->n = m->eval_gpus;
            a->deadline = m->eval_limit_s;
            return;
        }
    }
    if (v->state != TIDE_VER_EVALUATING || v->eval < 0 || (v->held && !v->released) ||
        v->gate == TIDE_GATE_PASS)
        return; /* running, held for a person, or passed (decided once) */
    if (v->eval == 0) {
        v->gate = TIDE_GATE_FAIL;
        set_state(p, mi, ver, TIDE_VER_REJECTED);
        return;
    }
    const version_t *sv = serving_version(m);
    int g = v->released ? TIDE_GATE_PASS
                        : tide_gate_eval(m->rules, m->n_rules, v->metrics, v->n_metrics,
                                         sv ? sv->metrics : NULL, sv ? sv->n_metrics : 0);
    v->gate = g;
    if (g == TIDE_GATE_FAIL)
        set_state(p, mi, ver, TIDE_VER_REJECTED);
    else if (g == TIDE_GATE_INCONCLUSIVE)
        v->held = 1;
    else if (!(m->ro.active && m->ro.version == ver) && m->alias[TIDE_ALIAS_CANDIDATE] != ver)
        version_passed(p, mi, ver);
}

/* -------------------------------------------------------------- rollout */

static void send_targets(tide_pipeline_t *p, int mi, int nt, int ot)
{
    model_t *m = &p->m[mi];
    rollout_t *r = &m->ro;
    /* retirements first: the bound holds while the driver enacts them */
    int order[2][2] = {{r->version, nt}, {r->old, ot}};
    int *sent[2] = {&r->sent_new, &r->sent_old};
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < 2; k++) {
            int shrink = order[k][1] < *sent[k] || *sent[k] < 0;
            if ((pass == 0) != shrink || order[k][1] == *sent[k])
                continue;
            act(p, TIDE_PA_REPLICAS, mi, order[k][0])->n = order[k][1];
            *sent[k] = order[k][1];
        }
}

static void route(tide_pipeline_t *p, int mi, double w)
{
    rollout_t *r = &p->m[mi].ro;
    tide_pipe_act_t *a = act(p, TIDE_PA_ROUTE, mi, r->version);
    a->old_version = r->old;
    a->weight = w;
}

static void rollout_start(tide_pipeline_t *p, int mi, int ver)
{
    model_t *m = &p->m[mi];
    rollout_t *r = &m->ro;
    *r = (rollout_t){.active = 1, .version = ver, .old = m->alias[TIDE_ALIAS_SERVING],
                     .phase = TIDE_RO_ADDING, .started_at = p->now, .step_at = p->now,
                     .sent_new = -1, .sent_old = -1};
    set_state(p, mi, ver, TIDE_VER_CANARY);
}

static void rollout_end(tide_pipeline_t *p, int mi)
{
    model_t *m = &p->m[mi];
    m->ro.active = 0;
    m->ro.sent_new = m->ro.sent_old = -1;
    if (m->alias[TIDE_ALIAS_CANDIDATE] == m->ro.version)
        m->alias[TIDE_ALIAS_CANDIDATE] = 0;
}

static void rollback(tide_pipeline_t *p, int mi, int gate)
{
    model_t *m = &p->m[mi];
    rollout_t *r = &m->ro;
    route(p, mi, 0); /* no request goes to the canary from here on */
    send_targets(p, mi, 0, m->obs.need);
    set_state(p, mi, r->version, TIDE_VER_ROLLED_BACK);
    tide_pipe_act_t *a = act(p, TIDE_PA_ROLLBACK, mi, r->version);
    a->old_version = r->old;
    a->gate = gate;
    a->step = r->step;
    rollout_end(p, mi);
}

static void promote(tide_pipeline_t *p, int mi)
{
    model_t *m = &p->m[mi];
    rollout_t *r = &m->ro;
    send_targets(p, mi, m->obs.need, 0);
    if (r->old > 0)
        set_state(p, mi, r->old, TIDE_VER_RETIRED);
    set_state(p, mi, r->version, TIDE_VER_SERVING);
    m->alias[TIDE_ALIAS_SERVING] = m->alias[TIDE_ALIAS_LAST_GOOD] = r->version;
    act(p, TIDE_PA_PROMOTED, mi, r->version)->old_version = r->old;
    rollout_end(p, mi);
}

/* One SLO check of the canary on the freshest observation. */
static int slo_gate(model_t *m)
{
    const tide_pipe_obs_t *o = &m->obs;
    const tide_rollout_plan_t *pl = &m->plan;
    if (!o->have_slo)
        return TIDE_GATE_INCONCLUSIVE;
    m->obs.have_slo = 0;
    if ((pl->slo_min > 0 && o->slo < pl->slo_min) ||
        (pl->error_max > 0 && o->error_rate > pl->error_max) ||
        (pl->latency_max_ms > 0 && o->latency_ms > pl->latency_max_ms))
        return TIDE_GATE_FAIL;
    return TIDE_GATE_PASS;
}

/* Gates due now; returns 1 when the rollout was rolled back. */
static int gates_due(tide_pipeline_t *p, int mi)
{
    model_t *m = &p->m[mi];
    rollout_t *r = &m->ro;
    if (r->abort) {
        rollback(p, mi, -1);
        return 1;
    }
    while (r->phase == TIDE_RO_HOLDING && p->now >= r->next_gate) {
        r->next_gate += m->plan.gate_interval_s;
        int g = slo_gate(m);
        r->passed += g == TIDE_GATE_PASS;
        if (g == TIDE_GATE_FAIL && ++r->failures > m->plan.failure_limit) {
            rollback(p, mi, TIDE_GATE_FAIL);
            return 1;
        }
    }
    wake_at(p, r->next_gate);
    return 0;
}

static void step_begin(tide_pipeline_t *p, int mi, int nt, int ot)
{
    model_t *m = &p->m[mi];
    rollout_t *r = &m->ro;
    double w = m->plan.weights[r->step];
    route(p, mi, w);
    tide_pipe_act_t *a = act(p, TIDE_PA_STEP, mi, r->version);
    a->step = r->step;
    a->weight = w;
    send_targets(p, mi, nt, ot);
    r->phase = TIDE_RO_HOLDING;
    r->step_at = p->now;
    r->hold_until = p->now + m->plan.hold_s;
    r->next_gate = p->now + m->plan.gate_interval_s;
    r->passed = 0;
    m->obs.have_slo = 0; /* data from before this step's weight gates nothing */
}

static void rollout_advance(tide_pipeline_t *p, int mi)
{
    model_t *m = &p->m[mi];
    rollout_t *r = &m->ro;
    int n = m->obs.need;
    int nt = new_target(&m->plan, r->step, n);
    if (gates_due(p, mi))
        return;
    if (r->phase == TIDE_RO_ADDING) {
        send_targets(p, mi, nt, old_target(&m->plan, r->step - 1, n));
        if (m->obs.ready_new < nt)
            return; /* warming; the driver's next observation wakes us */
        step_begin(p, mi, nt, old_target(&m->plan, r->step, n));
        wake_at(p, r->hold_until);
        wake_at(p, r->next_gate);
        return;
    }
    send_targets(p, mi, nt, old_target(&m->plan, r->step, n));
    int unchecked = m->obs.slo_expected && !r->passed; /* pulled figures never came */
    if ((p->now < r->hold_until || r->paused || unchecked) && !r->skip) {
        wake_at(p, r->hold_until > p->now ? r->hold_until : r->next_gate);
        return;
    }
    r->skip = 0;
    if (r->step + 1 >= m->plan.n_steps) {
        promote(p, mi);
        return;
    }
    r->step++;
    r->phase = TIDE_RO_ADDING;
    rollout_advance(p, mi);
}

static void model_step(tide_pipeline_t *p, int mi)
{
    model_t *m = &p->m[mi];
    for (size_t i = 0; i < m->n_v; i++)
        eval_one(p, mi, (int)i + 1);
    int c = m->alias[TIDE_ALIAS_CANDIDATE];
    if (!m->ro.active && c > 0 && m->have_obs && m->v[c - 1].state == TIDE_VER_EVALUATING)
        rollout_start(p, mi, c);
    if (m->ro.active && m->have_obs)
        rollout_advance(p, mi);
}

int tide_pipeline_step(tide_pipeline_t *p, tide_time_t now, tide_pipe_acts_t *out,
                       tide_error_t *err)
{
    if (p->started && now < p->now)
        return tide_errf(err, TIDE_EINVAL, "time went backwards (%lld < %lld)", (long long)now,
                         (long long)p->now);
    out->n = 0;
    out->next_wake = TIDE_TIME_NEVER;
    p->out = out;
    p->now = now;
    p->started = 1;
    for (size_t i = 0; i < p->n_m; i++)
        model_step(p, (int)i);
    p->out = NULL;
    if (p->check && tide_pipeline_check(p, err) < 0)
        return -1;
    return 0;
}

int tide_pipeline_check(const tide_pipeline_t *p, tide_error_t *err)
{
    for (size_t i = 0; i < p->n_m; i++) {
        const model_t *m = &p->m[i];
        if (!m->ro.active || !m->have_obs)
            continue;
        /* the need the driver enacted against may be the previous one */
        int n = m->obs.need > m->prev_need ? m->obs.need : m->prev_need;
        int bound = n + tide_rollout_step_replicas(&m->plan, n);
        int held = m->obs.held_old + m->obs.held_new;
        if (held > bound)
            return tide_errf(err, TIDE_ESTATE,
                             "model %s: service %s holds %d GPUs during a rollout, above its "
                             "need plus one step (%d GPUs)",
                             m->name, m->service, held * m->obs.gpus_per_replica,
                             bound * m->obs.gpus_per_replica);
        if (m->ro.sent_new >= 0 && m->ro.sent_old >= 0 && m->ro.sent_new + m->ro.sent_old > bound)
            return tide_errf(err, TIDE_ESTATE, "model %s: rollout asks for %d replicas, bound %d",
                             m->name, m->ro.sent_new + m->ro.sent_old, bound);
    }
    return 0;
}

/* -------------------------------------------------------------- controls */

static int release_held(tide_pipeline_t *p, int mi, int ver, tide_error_t *err)
{
    model_t *m = &p->m[mi];
    for (size_t i = m->n_v; i-- > 0 && ver == 0;)
        if (m->v[i].held && m->v[i].state == TIDE_VER_EVALUATING)
            ver = (int)i + 1;
    version_t *v = ver > 0 ? version_at(p, mi, ver, err) : NULL;
    if (!v || v->state != TIDE_VER_EVALUATING || !v->held)
        return tide_errf(err, TIDE_ESTATE, "model %s: no rollout and no version held for a person",
                         m->name);
    v->released = 1;
    return 0;
}

int tide_pipeline_control(tide_pipeline_t *p, int mi, int cmd, int ver, tide_error_t *err)
{
    model_t *m = model_at(p, mi, err);
    if (!m)
        return -1;
    rollout_t *r = &m->ro;
    if (cmd == TIDE_ROLLOUT_PROMOTE && (!r->active || (ver && ver != r->version)))
        return release_held(p, mi, ver, err);
    if (!r->active)
        return tide_errf(err, TIDE_ESTATE, "model %s: no rollout in progress", m->name);
    switch (cmd) {
    case TIDE_ROLLOUT_PAUSE: r->paused = 1; return 0;
    case TIDE_ROLLOUT_RESUME: r->paused = 0; return 0;
    case TIDE_ROLLOUT_PROMOTE: r->skip = 1; return 0;
    case TIDE_ROLLOUT_ABORT: r->abort = 1; return 0;
    default: return tide_errf(err, TIDE_EINVAL, "unknown rollout command %d", cmd);
    }
}

/* ------------------------------------------------------------ inspection */

int tide_pipeline_model(const tide_pipeline_t *p, int mi, tide_model_info_t *out)
{
    if (mi < 0 || (size_t)mi >= p->n_m)
        return -1;
    const model_t *m = &p->m[mi];
    *out = (tide_model_info_t){.name = m->name, .service = m->service,
                               .eval_command = m->eval_command, .eval_gpus = m->eval_gpus,
                               .eval_limit_s = m->eval_limit_s, .versions = (int)m->n_v,
                               .plan = &m->plan, .rules = m->rules, .n_rules = m->n_rules};
    memcpy(out->alias, m->alias, sizeof m->alias);
    return 0;
}

int tide_pipeline_version(const tide_pipeline_t *p, int mi, int ver, tide_version_info_t *out)
{
    if (mi < 0 || (size_t)mi >= p->n_m || ver < 1 || (size_t)ver > p->m[mi].n_v)
        return -1;
    const version_t *v = &p->m[mi].v[ver - 1];
    *out = (tide_version_info_t){.number = ver, .state = v->state, .source_job = v->job,
                                 .manifest_uri = v->uri, .digest = v->digest,
                                 .ckpt_step = v->ckpt_step, .size_bytes = v->size_bytes,
                                 .registered_at = v->registered_at, .state_at = v->state_at,
                                 .gate = v->gate, .metrics = v->metrics,
                                 .n_metrics = v->n_metrics};
    return 0;
}

int tide_pipeline_rollout(const tide_pipeline_t *p, int mi, tide_rollout_info_t *out)
{
    if (mi < 0 || (size_t)mi >= p->n_m)
        return -1;
    const model_t *m = &p->m[mi];
    const rollout_t *r = &m->ro;
    memset(out, 0, sizeof *out);
    if (!r->active)
        return 0;
    int n = m->obs.need;
    *out = (tide_rollout_info_t){.active = 1, .version = r->version, .old_version = r->old,
                                 .step = r->step, .phase = r->phase, .paused = r->paused,
                                 .failures = r->failures, .started_at = r->started_at,
                                 .step_at = r->step_at, .hold_until = r->hold_until,
                                 .target_new = r->sent_new, .target_old = r->sent_old,
                                 .bound = n + tide_rollout_step_replicas(&m->plan, n)};
    out->weight = r->phase == TIDE_RO_HOLDING ? m->plan.weights[r->step]
                  : r->step > 0               ? m->plan.weights[r->step - 1]
                                              : 0;
    return 0;
}

int tide_pipeline_restore_version(tide_pipeline_t *p, int mi, int ver, int state,
                                  tide_time_t state_at, tide_error_t *err)
{
    version_t *v = version_at(p, mi, ver, err);
    if (!v)
        return -1;
    if (state < 0 || state >= TIDE_VER_COUNT)
        return tide_errf(err, TIDE_EINVAL, "unknown version state %d", state);
    /* an interrupted evaluation or canary starts over */
    v->state = state == TIDE_VER_CANARY || state == TIDE_VER_EVALUATING ? TIDE_VER_REGISTERED
                                                                         : state;
    v->state_at = state_at;
    return 0;
}

int tide_pipeline_restore_alias(tide_pipeline_t *p, int mi, int alias, int ver, tide_error_t *err)
{
    model_t *m = model_at(p, mi, err);
    if (!m)
        return -1;
    if (alias < 0 || alias >= TIDE_ALIAS_COUNT || ver < 0 || (size_t)ver > m->n_v)
        return tide_errf(err, TIDE_EINVAL, "model %s: bad alias %d -> version %d", m->name,
                         alias, ver);
    m->alias[alias] = ver;
    return 0;
}

int tide_pipeline_restore_rollout(tide_pipeline_t *p, int mi, const tide_rollout_info_t *ri,
                                  tide_error_t *err)
{
    model_t *m = model_at(p, mi, err);
    if (!m)
        return -1;
    if (!ri->active)
        return 0;
    if (ri->version < 1 || (size_t)ri->version > m->n_v || ri->old_version < 0 ||
        (size_t)ri->old_version > m->n_v || ri->step < 0 || ri->step >= m->plan.n_steps ||
        ri->phase < 0 || ri->phase >= TIDE_RO_PHASE_COUNT || ri->failures < 0)
        return tide_errf(err, TIDE_EINVAL, "model %s: bad rollout (version %d, step %d)", m->name,
                         ri->version, ri->step);
    rollout_t *r = &m->ro;
    *r = (rollout_t){.active = 1, .version = ri->version, .old = ri->old_version,
                     .step = ri->step, .phase = ri->phase, .paused = ri->paused,
                     .failures = ri->failures, .started_at = ri->started_at,
                     .step_at = ri->step_at, .hold_until = ri->hold_until,
                     .next_gate = ri->step_at + m->plan.gate_interval_s, .sent_new = -1,
                     .sent_old = -1};
    m->v[ri->version - 1].state = TIDE_VER_CANARY;
    m->alias[TIDE_ALIAS_CANDIDATE] = ri->version;
    return 0;
}
