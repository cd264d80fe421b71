/* The RL trajectory ledger (docs/api.md, "RL trajectory ledger"): runs
 * registered per job, trajectories pushed by rollout workers, trainer steps
 * that consume batches. Every write goes through the group commit
 * (queue.c) and is answered once committed, so an acknowledged trajectory
 * or step survives a crash exactly as answered; retries are answered from
 * the rows (trajectory ids are unique per job, steps are numbered). The
 * ledger lives in the store only (src/store/rl.c): the engine, its replay
 * and its snapshots never touch it. */
#include <stdlib.h>
#include <string.h>

#include "daemon/internal.h"
#include "tide/rl.h"
#include "util/util.h"

/* ------------------------------------------------------------ the writes */

typedef struct rl_reg {
    const char *job;
    int64_t max_staleness, batch_size;
    int created;
    const json_t *spec;              /* submitted with a spec: its pool is sized */
    char *keep[2];                   /* the pool event's strings (rl_pool.c) */
} rl_reg_t;

static int shutting(const tide_daemon_t *d, tide_error_t *err)
{
    if (d->stop || d->failed)
        return tide_errf(err, TIDE_ESTATE, "the daemon is shutting down");
    return 0;
}

/* A store failure after rows may have been written fails the whole batch. */
static int rl_store_failed(tide_error_t *err)
{
    if (err && (err->code == TIDE_ENOENT || err->code == TIDE_EEXIST ||
                err->code == TIDE_ESTATE || err->code == TIDE_EINVAL))
        return -1; /* a rejection: checked before any row */
    if (err)
        err->code = TIDE_EIO;
    return -1;
}

static int reg_apply(tide_daemon_t *d, dmn_op_t *op, tide_error_t *err)
{
    rl_reg_t *r = op->arg;
    if (shutting(d, err) < 0)
        return -1;
    int rc = tide_store_rl_run_create(d->st, r->job, r->max_staleness, r->batch_size,
                                      dmn_clock_now(d), err);
    if (rc < 0)
        return rl_store_failed(err);
    r->created = rc;
    if (r->spec && dmn_rl_pool_register(d, op, r->job, r->spec, r->keep, err) < 0)
        return err->code = TIDE_EIO, -1;
    return 0;
}

typedef struct rl_push {
    const char *job;
    const tide_rl_push_request_t *pr;
    tide_rl_outcome_t *outcome;      /* per trajectory */
    int64_t *stored;                 /* per trajectory: the version acknowledged */
    int64_t trainer_version;
} rl_push_t;

static int push_apply(tide_daemon_t *d, dmn_op_t *op, tide_error_t *err)
{
    rl_push_t *r = op->arg;
    if (shutting(d, err) < 0)
        return -1;
    for (size_t i = 0; i < r->pr->n; i++) {
        const tide_rl_traj_request_t *q = &r->pr->v[i];
        tide_store_rl_traj_t t = {.id = q->id, .policy_version = q->policy_version,
                                  .payload = q->payload};
        if (tide_store_rl_push(d->st, r->job, &t, &r->outcome[i], &r->stored[i],
                               &r->trainer_version, err) < 0)
            return i == 0 ? rl_store_failed(err) : (err->code = TIDE_EIO, -1);
    }
    return 0;
}

typedef struct rl_step {
    const char *job;
    int64_t step, queued;
    tide_rl_step_report_t rep;       /* the trainer's measures */
    char *keep[2];                   /* the pool event's strings (rl_pool.c) */
    int dup;
    json_t *batch;                   /* the trajectories consumed */
} rl_step_t;

static void step_row(void *ctx, const char *id, int64_t version, const char *payload)
{
    rl_step_t *r = ctx;
    json_t *o = json_object();
    api_set(o, "trajectory_id", api_str(id));
    api_set(o, "policy_version", json_integer(version));
    api_set(o, "age", json_integer(r->step - 1 - version));
    json_t *t = payload ? json_loads(payload, 0, NULL) : NULL;
    api_set(o, "trajectory", t ? t : json_null());
    json_array_append_new(r->batch, o);
}

static int step_apply(tide_daemon_t *d, dmn_op_t *op, tide_error_t *err)
{
    rl_step_t *r = op->arg;
    if (shutting(d, err) < 0)
        return -1;
    json_array_clear(r->batch);
    if (tide_store_rl_step(d->st, r->job, r->step, step_row, r, &r->dup, &r->queued, err) < 0)
        return rl_store_failed(err);
    tide_store_rl_run_t run;
    if (r->dup || r->rep.wait_s < 0 || tide_store_rl_run_get(d->st, r->job, &run, NULL) < 0)
        return 0;
    if (dmn_rl_pool_step(d, op, r->job, r->step, r->rep.wait_s, r->rep.compute_s,
                         r->rep.rollout_busy, r->queued, run.batch_size, r->keep, err) < 0)
        return err->code = TIDE_EIO, -1;
    return 0;
}

static int rl_commit(tide_daemon_t *d, int (*apply)(tide_daemon_t *, dmn_op_t *, tide_error_t *),
                     void *arg, tide_error_t *err)
{
    dmn_op_t op = {.apply = apply, .arg = arg};
    if (dmn_commit(d, &op) < 0)
        *err = op.err;
    return op.rc;
}

/* ------------------------------------------------------------- handlers */

static json_t *run_json(const char *job, const tide_store_rl_run_t *r)
{
    json_t *o = json_object();
    api_set(o, "job", api_str(job));
    api_set(o, "max_staleness", json_integer(r->max_staleness));
    api_set(o, "batch_size", json_integer(r->batch_size));
    api_set(o, "step", json_integer(r->step));
    api_set(o, "policy_version", json_integer(r->policy_version));
    api_set(o, "queue_depth", json_integer(r->queued));
    api_set(o, "counts", json_pack("{s:I,s:I,s:I,s:I,s:I}", "accepted", (json_int_t)r->accepted,
                                   "duplicates", (json_int_t)r->duplicates, "stale_rejected",
                                   (json_int_t)r->stale_rejected, "stale_dropped",
                                   (json_int_t)r->stale_dropped, "consumed",
                                   (json_int_t)r->consumed));
    api_set(o, "created_s", api_time(r->created_s));
    return o;
}

static void age_row(void *ctx, int consumed, int64_t age, int64_t count)
{
    json_t *h = json_object_get(ctx, consumed ? "consumed" : "queued");
    json_array_append_new(h, json_pack("{s:I,s:I}", "age", (json_int_t)age, "count",
                                       (json_int_t)count));
}

/* The run of job as JSON with its staleness histogram (mu held), or NULL
 * with err. */
static json_t *run_get(tide_daemon_t *d, const char *job, tide_error_t *err)
{
    tide_store_rl_run_t r;
    tide_store_t *s = dmn_rd(d);
    json_t *o = NULL, *h = json_pack("{s:[],s:[]}", "consumed", "queued");
    if (tide_store_rl_run_get(s, job, &r, err) == 0 && tide_store_rl_ages(s, job, age_row, h, err) == 0) {
        o = run_json(job, &r);
        api_set(o, "staleness", json_incref(h));
    }
    dmn_rd_done(d);
    json_decref(h);
    return o;
}

/* The register body: {"max_staleness", "batch_size"} (required without a
 * spec; with one they default to its max_staleness and batch and must agree)
 * and "spec" (optional: *spec a new reference, else NULL). */
static int reg_parse(const tide_http_req_t *req, rl_reg_t *r, json_t **spec, tide_error_t *err)
{
    json_t *o = tide_json_parse_object(req->body, req->body_len, err);
    if (!o)
        return -1;
    *spec = json_incref(json_object_get(o, "spec"));
    json_object_del(o, "spec");
    char *rest = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    int rc = *spec ? 0 : tide_json_rl_run(rest, strlen(rest), &r->max_staleness, &r->batch_size, err);
    free(rest);
    return rc;
}

/* With a spec: the top-level fields agree with it (absent: taken from it). */
static int reg_agree(const tide_http_req_t *req, rl_reg_t *r, int64_t ms, int64_t bs,
                     tide_error_t *err)
{
    json_t *o = tide_json_parse_object(req->body, req->body_len, err);
    json_object_del(o, "spec");
    if (!json_object_get(o, "max_staleness"))
        json_object_set_new(o, "max_staleness", json_integer(ms));
    if (!json_object_get(o, "batch_size"))
        json_object_set_new(o, "batch_size", json_integer(bs));
    char *rest = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    int rc = tide_json_rl_run(rest, strlen(rest), &r->max_staleness, &r->batch_size, err);
    free(rest);
    if (rc == 0 && (r->max_staleness != ms || r->batch_size != bs))
        rc = tide_errf(err, TIDE_EINVAL, "%s: differs from the spec's (%lld)",
                       r->max_staleness != ms ? "max_staleness" : "batch_size",
                       (long long)(r->max_staleness != ms ? ms : bs));
    return rc;
}

/* The job named in the path, or the trainer of the RL job it names
 * ({job}-trainer, submitted with a spec): as api_job_owned, *id the path's. */
static int rl_owned(tide_daemon_t *d, const tide_http_req_t *req, char **id, tide_http_reply_t *rep)
{
    char trainer[TIDE_RL_ID_MAX + 16];
    snprintf(trainer, sizeof trainer, "%.200s-trainer", req->params[0]);
    dmn_lock_read(d);
    tide_store_job_t row;
    int plain = tide_store_job_get(dmn_rd(d), req->params[0], &row, NULL) == 0;
    dmn_rd_done(d);
    dmn_unlock_read(d);
    if (plain)
        tide_store_job_free(&row);
    if (api_job_owned_as(d, req, plain ? req->params[0] : trainer, id, rep) < 0)
        return -1;
    free(*id);
    *id = tide_xstrdup(req->params[0]);
    return 0;
}

API_HANDLER(api_rl_register)
{
    tide_daemon_t *d = API_D(app);
    tide_error_t err = {0};
    rl_reg_t r = {0};
    json_t *spec = NULL;
    int jobs = 0;
    int64_t ms, bs;
    if (reg_parse(req, &r, &spec, &err) < 0) {
        api_fail(rep, &err);
        return;
    }
    char *id = NULL;
    int rc = 0;
    if (spec) { /* every check before the first job is submitted */
        rc = dmn_rl_spec_values(spec, req->params[0], &ms, &bs, &err) < 0 ||
                     reg_agree(req, &r, ms, bs, &err) < 0
                 ? (api_fail(rep, &err), -1)
                 : dmn_rl_submit(d, req, req->params[0], spec, &jobs, rep);
        id = rc == 0 ? tide_xstrdup(req->params[0]) : NULL;
    } else
        rc = rl_owned(d, req, &id, rep);
    if (rc < 0) {
        json_decref(spec);
        return;
    }
    r.job = id;
    r.spec = spec;
    if (rl_commit(d, reg_apply, &r, &err) < 0) {
        api_write_failed(d, rep, &err);
    } else {
        dmn_lock_read(d);
        json_t *o = run_get(d, id, &err);
        if (o && spec)
            api_set(o, "jobs", dmn_rl_jobs_json(d, id));
        dmn_unlock_read(d);
        if (o) {
            api_set(o, "created", json_boolean(r.created || jobs));
            api_set(o, "jobs_submitted", json_integer(jobs));
            tide_http_reply_json(rep, r.created || jobs ? 201 : 200, o);
        } else
            api_fail(rep, &err);
    }
    json_decref(spec);
    free(r.keep[0]);
    free(r.keep[1]);
    free(id);
}

API_HANDLER(api_rl_get)
{
    tide_daemon_t *d = API_D(app);
    tide_error_t err = {0};
    dmn_lock_read(d);
    json_t *o = NULL;
    char trainer[TIDE_RL_ID_MAX + 16];
    snprintf(trainer, sizeof trainer, "%.200s-trainer", req->params[0]);
    if (!api_sees_job(d, req, req->params[0]) && !api_sees_job(d, req, trainer))
        tide_errf(&err, TIDE_ENOENT, "job %.200s: no RL run registered", req->params[0]);
    else
        o = run_get(d, req->params[0], &err);
    if (o)
        api_set(o, "jobs", dmn_rl_jobs_json(d, req->params[0])); /* [] for a plain run */
    json_t *pool = o ? dmn_rl_pool_json(d, req->params[0]) : NULL;
    if (pool)
        api_set(o, "pool", pool);
    dmn_unlock_read(d);
    if (o)
        tide_http_reply_json(rep, 200, o);
    else
        api_fail(rep, &err);
}

typedef struct runs_ctx {
    tide_daemon_t *d;
    const tide_http_req_t *req;
    json_t *arr;
    struct run_row {
        char *job;
        tide_store_rl_run_t r;
    } *v;
    size_t n, cap;
} runs_ctx_t;

static int runs_row(void *ctx, const char *job, const tide_store_rl_run_t *r)
{
    runs_ctx_t *c = ctx;
    tide_grow((void **)&c->v, &c->cap, c->n + 1, sizeof *c->v);
    c->v[c->n].job = tide_xstrdup(job ? job : "");
    c->v[c->n++].r = *r;
    return 0;
}

/* Every run (mu held): c->v, c->n. */
static int runs_load(tide_daemon_t *d, runs_ctx_t *c, tide_error_t *err)
{
    int n = tide_store_rl_runs(dmn_rd(d), runs_row, c, err);
    dmn_rd_done(d);
    return n;
}

static void runs_free(runs_ctx_t *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->v[i].job);
    free(c->v);
}

API_HANDLER(api_rl_runs)
{
    tide_daemon_t *d = API_D(app);
    tide_error_t err = {0};
    runs_ctx_t c = {.d = d, .req = req};
    dmn_lock_read(d);
    int n = runs_load(d, &c, &err);
    json_t *arr = json_array();
    for (size_t i = 0; n >= 0 && i < c.n; i++)
        if (api_sees_job(d, req, c.v[i].job))
            json_array_append_new(arr, run_json(c.v[i].job, &c.v[i].r));
    dmn_unlock_read(d);
    runs_free(&c);
    if (n < 0) {
        json_decref(arr);
        api_fail(rep, &err);
        return;
    }
    tide_http_reply_json(rep, 200, json_pack("{s:o}", "runs", arr));
}

/* The answer to one pushed trajectory. */
static json_t *push_result(const rl_push_t *r, size_t i, int *http)
{
    static const int status[TIDE_RL_OUTCOMES] = {
        [TIDE_RL_ACCEPTED] = 201, [TIDE_RL_DUPLICATE] = 200, [TIDE_RL_CONFLICT] = 409,
        [TIDE_RL_STALE] = 409, [TIDE_RL_AHEAD] = 409};
    static const char *const why[TIDE_RL_OUTCOMES] = {
        [TIDE_RL_CONFLICT] = "acknowledged before with policy version %lld",
        [TIDE_RL_STALE] = "older than max_staleness (the trainer's policy version is %lld)",
        [TIDE_RL_AHEAD] = "ahead of the trainer (its policy version is %lld)"};
    const tide_rl_traj_request_t *q = &r->pr->v[i];
    tide_rl_outcome_t o = r->outcome[i];
    json_t *j = json_pack("{s:o,s:I,s:s,s:b}", "trajectory_id", api_str(q->id), "policy_version",
                          (json_int_t)q->policy_version, "status", tide_rl_outcome_name(o),
                          "duplicate", o == TIDE_RL_DUPLICATE);
    if (why[o]) {
        char msg[256];
        snprintf(msg, sizeof msg, why[o],
                 (long long)(o == TIDE_RL_CONFLICT ? r->stored[i] : r->trainer_version));
        api_set(j, "error", json_pack("{s:s,s:s}", "code", o == TIDE_RL_CONFLICT ? "EEXIST" : "ESTATE",
                                      "message", msg));
    }
    *http = status[o];
    return j;
}

API_HANDLER(api_rl_push)
{
    tide_daemon_t *d = API_D(app);
    tide_error_t err = {0};
    tide_rl_push_request_t pr;
    if (tide_json_rl_push(req->body, req->body_len, &pr, &err) < 0) {
        api_fail(rep, &err);
        return;
    }
    char *id;
    if (rl_owned(d, req, &id, rep) < 0) {
        tide_rl_push_request_free(&pr);
        return;
    }
    rl_push_t r = {.job = id, .pr = &pr, .outcome = tide_xcalloc(pr.n, sizeof *r.outcome),
                   .stored = tide_xcalloc(pr.n, sizeof *r.stored)};
    if (rl_commit(d, push_apply, &r, &err) < 0) {
        api_write_failed(d, rep, &err);
    } else {
        json_t *arr = json_array(), *o;
        long cnt[TIDE_RL_OUTCOMES] = {0};
        int http = 200;
        for (size_t i = 0; i < pr.n; i++) {
            json_array_append_new(arr, push_result(&r, i, &http));
            cnt[r.outcome[i]]++;
        }
        o = json_pack("{s:o,s:I,s:i,s:i,s:i,s:o}", "job", api_str(id), "trainer_version",
                      (json_int_t)r.trainer_version, "accepted", (int)cnt[TIDE_RL_ACCEPTED],
                      "duplicates", (int)cnt[TIDE_RL_DUPLICATE], "refused",
                      (int)(pr.n - cnt[TIDE_RL_ACCEPTED] - cnt[TIDE_RL_DUPLICATE]), "results", arr);
        if (!pr.batch && http == 409)
            api_set(o, "error", json_incref(json_object_get(json_array_get(arr, 0), "error")));
        tide_http_reply_json(rep, pr.batch ? 200 : http, o);
    }
    free(r.outcome);
    free(r.stored);
    free(id);
    tide_rl_push_request_free(&pr);
}

API_HANDLER(api_rl_step)
{
    tide_daemon_t *d = API_D(app);
    tide_error_t err = {0};
    rl_step_t r = {0};
    if (tide_json_rl_step_report(req->body, req->body_len, &r.rep, &err) < 0) {
        api_fail(rep, &err);
        return;
    }
    r.step = r.rep.step;
    char *id;
    if (rl_owned(d, req, &id, rep) < 0)
        return;
    r.job = id;
    r.batch = json_array();
    if (rl_commit(d, step_apply, &r, &err) < 0)
        api_write_failed(d, rep, &err);
    else
        tide_http_reply_json(rep, 200,
                             json_pack("{s:o,s:I,s:I,s:b,s:O}", "job", api_str(id), "step",
                                       (json_int_t)r.step, "policy_version", (json_int_t)r.step,
                                       "duplicate", r.dup, "trajectories", r.batch));
    json_decref(r.batch);
    free(r.keep[0]);
    free(r.keep[1]);
    free(id);
}

/* -------------------------------------------------------------- metrics */

void dmn_rl_metrics(tide_daemon_t *d, tide_prom_t *p)
{
    static const char *const fam[][3] = {
        {"tide_rl_trainer_step", "gauge", "Trainer steps acknowledged per RL run."},
        {"tide_rl_queue_depth", "gauge", "Fresh trajectories queued (acknowledged, not consumed, within max_staleness) per RL run."},
        {"tide_rl_trajectories_total", "counter",
         "Pushed trajectories of an RL run by outcome: accepted, duplicate (a retry), "
         "stale_rejected (refused when pushed), stale_dropped (queued, too old at a step), consumed."},
    };
    tide_error_t err = {0};
    runs_ctx_t c = {.d = d};
    if (runs_load(d, &c, &err) < 0) {
        runs_free(&c);
        return;
    }
    for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++) {
        tide_prom_family(p, fam[f][0], fam[f][1], fam[f][2]);
        for (size_t i = 0; i < c.n; i++) {
            const tide_store_rl_run_t *r = &c.v[i].r;
            const char *l[] = {"job", c.v[i].job, "outcome", NULL};
            if (f < 2) {
                tide_prom_sample(p, fam[f][0], l, 1, (double)(f == 0 ? r->step : r->queued));
                continue;
            }
            const struct { const char *k; int64_t v; } o[] = {
                {"accepted", r->accepted}, {"duplicate", r->duplicates},
                {"stale_rejected", r->stale_rejected}, {"stale_dropped", r->stale_dropped},
                {"consumed", r->consumed}};
            for (size_t k = 0; k < sizeof o / sizeof o[0]; k++) {
                l[3] = o[k].k;
                tide_prom_sample(p, fam[f][0], l, 2, (double)o[k].v);
            }
        }
    }
    runs_free(&c);
}
