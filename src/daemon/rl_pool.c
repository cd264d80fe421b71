/* The lent rollout pool of an RL job sized from the trainer's measured wait
 * (docs/rl.md, "The daemon sizes the pool"): a tide_rl_pool_t per RL job
 * registered with a spec, fed the measures the trainer reports with each
 * step (POST /v1/rl/{job}/step). Each decision is recorded as an rl_pool
 * event in the same transaction as the step: its payload names every pool
 * job with its hold and carries the controller's state. The loop applies
 * the holds when it feeds the event (tide_engine_job_hold), replay applies
 * them at the same step, and recovery restores the controller from the
 * payloads, so a restart holds the same jobs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/internal.h"
#include "util/util.h"

typedef struct drlpool {
    char *job;
    tide_rl_pool_t pool;
    tide_rl_stats_t sum;     /* cumulative measures fed (now = steps reported) */
    int n;                   /* pool jobs */
    char **id;
    int *reps;               /* rollout replicas per pool job */
    unsigned char *held;
} drlpool_t;

struct drlpools {
    drlpool_t *v;
    size_t n, cap;
};

static drlpool_t *pool_find(tide_daemon_t *d, const char *job)
{
    for (size_t i = 0; d->rlp && i < d->rlp->n; i++)
        if (!strcmp(d->rlp->v[i].job, job))
            return &d->rlp->v[i];
    return NULL;
}

static void pool_clear(drlpool_t *p)
{
    for (int k = 0; k < p->n; k++)
        free(p->id[k]);
    free(p->id);
    free(p->reps);
    free(p->held);
    free(p->job);
    memset(p, 0, sizeof *p);
}

/* job's entry, emptied (new when absent) with n pool jobs. */
static drlpool_t *pool_slot(tide_daemon_t *d, const char *job, int n)
{
    drlpool_t *p = pool_find(d, job);
    if (!d->rlp)
        d->rlp = tide_xcalloc(1, sizeof *d->rlp);
    if (!p) {
        tide_grow((void **)&d->rlp->v, &d->rlp->cap, d->rlp->n + 1, sizeof *d->rlp->v);
        p = &d->rlp->v[d->rlp->n++];
        memset(p, 0, sizeof *p);
    } else
        pool_clear(p);
    p->job = tide_xstrdup(job);
    p->n = n;
    p->id = tide_xcalloc((size_t)(n ? n : 1), sizeof *p->id);
    p->reps = tide_xcalloc((size_t)(n ? n : 1), sizeof *p->reps);
    p->held = tide_xcalloc((size_t)(n ? n : 1), 1);
    return p;
}

void dmn_rl_pool_free(tide_daemon_t *d)
{
    for (size_t i = 0; d->rlp && i < d->rlp->n; i++)
        pool_clear(&d->rlp->v[i]);
    if (d->rlp)
        free(d->rlp->v);
    free(d->rlp);
    d->rlp = NULL;
}

/* ------------------------------------------------------------- payload */

static json_t *stats_json(const tide_rl_stats_t *s)
{
    return json_pack("{s:I,s:i,s:f,s:f,s:f,s:f,s:f}", "now", (json_int_t)s->now, "version",
                     s->version, "wait_s", s->wait_s, "compute_s", s->compute_s, "active_rep_s",
                     s->active_rep_s, "slot_s", s->slot_s, "slot_busy_s", s->slot_busy_s);
}

static void stats_read(const json_t *o, tide_rl_stats_t *s)
{
    memset(s, 0, sizeof *s);
    s->max_accepted_staleness = -1;
    s->now = (tide_time_t)json_integer_value(json_object_get(o, "now"));
    s->version = (int)json_integer_value(json_object_get(o, "version"));
    s->wait_s = json_number_value(json_object_get(o, "wait_s"));
    s->compute_s = json_number_value(json_object_get(o, "compute_s"));
    s->active_rep_s = json_number_value(json_object_get(o, "active_rep_s"));
    s->slot_s = json_number_value(json_object_get(o, "slot_s"));
    s->slot_busy_s = json_number_value(json_object_get(o, "slot_busy_s"));
}

/* The controller and the pool jobs (their holds) as JSON. */
static json_t *pool_json(const drlpool_t *p)
{
    const tide_rl_pool_t *c = &p->pool;
    json_t *jobs = json_array();
    for (int k = 0; k < p->n; k++)
        json_array_append_new(jobs, json_pack("{s:s,s:i,s:b}", "id", p->id[k], "replicas",
                                              p->reps[k], "held", p->held[k]));
    json_t *o = json_pack("{s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "job", p->job, "want", c->want,
                          "total", c->total, "streak", c->streak, "grows", c->grows, "shrinks",
                          c->shrinks, "min_replicas", c->min_replicas, "max_replicas",
                          c->max_replicas);
    api_set(o, "last_wait", c->last_wait < 0 ? json_null() : json_real(c->last_wait));
    api_set(o, "cfg", json_pack("{s:f,s:f,s:i}", "target_wait", c->cfg.target_wait, "headroom",
                                c->cfg.headroom, "patience", c->cfg.patience));
    api_set(o, "last", stats_json(&c->last));
    api_set(o, "sum", stats_json(&p->sum));
    api_set(o, "jobs", jobs);
    return o;
}

/* payload back into a controller (NULL: not one). */
static drlpool_t *pool_read(tide_daemon_t *d, const char *payload)
{
    json_t *o = payload ? json_loads(payload, 0, NULL) : NULL;
    const json_t *jobs = json_object_get(o, "jobs"), *job = json_object_get(o, "job");
    if (!json_is_string(job) || !json_is_array(jobs)) {
        json_decref(o);
        return NULL;
    }
    drlpool_t *p = pool_slot(d, json_string_value(job), (int)json_array_size(jobs));
    tide_rl_pool_t *c = &p->pool;
    const json_t *cfg = json_object_get(o, "cfg"), *lw = json_object_get(o, "last_wait");
    c->cfg.target_wait = json_number_value(json_object_get(cfg, "target_wait"));
    c->cfg.headroom = json_number_value(json_object_get(cfg, "headroom"));
    c->cfg.patience = (int)json_integer_value(json_object_get(cfg, "patience"));
    static const char *const ik[] = {"want", "total", "streak", "grows", "shrinks",
                                     "min_replicas", "max_replicas"};
    int *iv[] = {&c->want, &c->total, &c->streak, &c->grows, &c->shrinks, &c->min_replicas,
                 &c->max_replicas};
    for (size_t i = 0; i < sizeof ik / sizeof ik[0]; i++)
        *iv[i] = (int)json_integer_value(json_object_get(o, ik[i]));
    c->last_wait = json_is_number(lw) ? json_number_value(lw) : -1;
    stats_read(json_object_get(o, "last"), &c->last);
    stats_read(json_object_get(o, "sum"), &p->sum);
    for (int k = 0; k < p->n; k++) {
        const json_t *x = json_array_get(jobs, (size_t)k);
        const json_t *id = json_object_get(x, "id");
        p->id[k] = tide_xstrdup(json_is_string(id) ? json_string_value(id) : "");
        p->reps[k] = (int)json_integer_value(json_object_get(x, "replicas"));
        p->held[k] = json_is_true(json_object_get(x, "held"));
    }
    json_decref(o);
    return p;
}

void dmn_rl_pool_restore(tide_daemon_t *d, const char *payload)
{
    if (!pool_read(d, payload))
        dmn_log(d, "rl_pool event ignored: not a pool decision");
}

void dmn_rl_pool_hold(tide_daemon_t *d, const char *payload)
{
    json_t *o = payload ? json_loads(payload, 0, NULL) : NULL;
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(o, "jobs"), i, x) {
        int32_t h = tide_engine_job_find(d->e, json_string_value(json_object_get(x, "id")));
        if (h >= 0) /* a job done or cancelled meanwhile keeps its end */
            (void)tide_engine_job_hold(d->e, h, json_is_true(json_object_get(x, "held")), NULL);
    }
    json_decref(o);
}

char *dmn_rl_pool_save(tide_daemon_t *d)
{
    if (!d->rlp || !d->rlp->n)
        return NULL;
    json_t *a = json_array();
    for (size_t i = 0; i < d->rlp->n; i++)
        json_array_append_new(a, pool_json(&d->rlp->v[i]));
    char *js = json_dumps(a, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(a);
    return js;
}

void dmn_rl_pool_load(tide_daemon_t *d, const char *saved)
{
    json_t *a = saved ? json_loads(saved, 0, NULL) : NULL;
    size_t i;
    json_t *x;
    json_array_foreach(a, i, x) {
        char *one = json_dumps(x, JSON_COMPACT | JSON_REAL_PRECISION(17));
        dmn_rl_pool_restore(d, one);
        free(one);
    }
    json_decref(a);
}

json_t *dmn_rl_pool_json(tide_daemon_t *d, const char *job)
{
    drlpool_t *p = pool_find(d, job);
    if (!p)
        return NULL;
    json_t *o = pool_json(p);
    json_object_del(o, "sum");
    json_object_del(o, "job");
    json_t *held = json_array();
    for (int k = 0; k < p->n; k++)
        if (p->held[k])
            json_array_append_new(held, json_string(p->id[k]));
    api_set(o, "held", held);
    return o;
}

/* ------------------------------------------------------------ decisions */

/* Hold the pool jobs beyond the first want replicas (in pool order, as the
 * simulator does) and record the decision as an rl_pool event of op. */
static int pool_record(tide_daemon_t *d, dmn_op_t *op, drlpool_t *p, char **keep,
                       tide_error_t *err)
{
    int have = 0;
    for (int k = 0; k < p->n; k++) {
        p->held[k] = have >= p->pool.want;
        have += p->reps[k];
    }
    json_t *o = pool_json(p);
    char *js = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(o);
    tide_event_t ev = dmn_blank_event(TIDE_STORE_KIND_RL_POOL);
    /* the last pool job: a batch of pending events ends before this one when
     * that job was submitted in it (its handle is known after the step) */
    keep[0] = js;
    keep[1] = tide_xstrdup(p->n ? p->id[p->n - 1] : p->job);
    dmn_evx_t x = {.job_id = keep[1], .payload = keep[0]};
    return dmn_op_event(d, op, &ev, &x, err);
}

int dmn_rl_pool_register(tide_daemon_t *d, dmn_op_t *op, const char *job, const json_t *spec,
                         char **keep, tide_error_t *err)
{
    if (pool_find(d, job))
        return 0; /* a retry: the first decision is recorded */
    tide_rl_specs_t *ss = NULL;
    tide_rl_jobs_t j = {0};
    if (dmn_rl_spec_read(spec, job, &ss, err) < 0 ||
        tide_rl_jobs(&ss->v[0], TIDE_RL_LENT, 0, &j, err) < 0) {
        tide_rl_specs_free(ss);
        return -1;
    }
    tide_rl_pool_t c;
    int rc = tide_rl_pool_init(&c, &ss->v[0], NULL, err);
    if (rc == 0) {
        drlpool_t *p = pool_slot(d, job, j.n - TIDE_RL_JOB_POOL);
        int g = j.v[TIDE_RL_JOB_ROLLOUT].gang_gpus > 0 ? j.v[TIDE_RL_JOB_ROLLOUT].gang_gpus : 1;
        p->pool = c;
        p->sum.max_accepted_staleness = -1;
        for (int k = 0; k < p->n; k++) {
            p->id[k] = tide_xstrdup(j.id[TIDE_RL_JOB_POOL + k]);
            p->reps[k] = j.v[TIDE_RL_JOB_POOL + k].gpus / g;
        }
        rc = pool_record(d, op, p, keep, err);
    }
    tide_rl_jobs_free(&j);
    tide_rl_specs_free(ss);
    return rc;
}

/* Replicas that fed the trainer: the dedicated ones and the released pool
 * jobs' while they run. */
static double pool_active(const tide_daemon_t *d, const drlpool_t *p)
{
    double r = p->pool.min_replicas;
    for (int k = 0; k < p->n; k++) {
        tide_job_info_t ji;
        int32_t h = tide_engine_job_find(d->e, p->id[k]);
        if (!p->held[k] && h >= 0 && tide_engine_job(d->e, h, &ji) == 0 &&
            ji.state == TIDE_JOB_RUNNING)
            r += p->reps[k];
    }
    return r;
}

int dmn_rl_pool_step(tide_daemon_t *d, dmn_op_t *op, const char *job, int64_t step,
                     double wait_s, double compute_s, double busy, int64_t queued,
                     int64_t batch, char **keep, tide_error_t *err)
{
    drlpool_t *p = pool_find(d, job);
    if (!p || wait_s < 0 || step <= p->sum.version)
        return 0; /* no controller, no measures, or a retry */
    if (busy < 0) /* not reported: busy unless rollouts ran more than a batch ahead */
        busy = queued <= batch ? 1 : (double)batch / (double)queued;
    double r = pool_active(d, p);
    p->sum.now++; /* each step weighs the same: replica-steps, not seconds */
    p->sum.version = (int)step;
    p->sum.wait_s += wait_s;
    p->sum.compute_s += compute_s;
    p->sum.active_rep_s += r;
    p->sum.slot_s += r;
    p->sum.slot_busy_s += r * busy;
    int was = p->pool.want, grows = p->pool.grows, shrinks = p->pool.shrinks;
    tide_rl_pool_observe(&p->pool, &p->sum);
    if (p->pool.want != was || p->pool.grows != grows || p->pool.shrinks != shrinks)
        dmn_log(d, "rl %s: step %lld: the pool wants %d lent replicas (was %d; wait %.3f)", job,
                (long long)step, p->pool.want, was, p->pool.last_wait);
    return pool_record(d, op, p, keep, err);
}
