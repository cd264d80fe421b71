/* The jobs API: submit, list, get, cancel, checkpoints, reclaim notices. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/internal.h"
#include "util/util.h"

/* ------------------------------------------------------------- rendering */

static const char *notice_action(const notice_t *n)
{
    if (n->kind == TIDE_ACT_JOB_CKPT)
        return "checkpoint";
    return n->width < n->prev_width ? "shrink" : "grow";
}

static json_t *notice_json(const notice_t *n)
{
    json_t *o = json_object();
    api_set(o, "id", json_integer((json_int_t)n->id));
    api_set(o, "reason", json_string(n->reason ? tide_reason_name(n->reason) : "none"));
    api_set(o, "action", json_string(notice_action(n)));
    api_set(o, "deadline_s", json_integer(n->deadline));
    api_set(o, "issued_s", json_integer(n->at));
    api_set(o, "width", json_integer(n->width));
    api_set(o, "acked", json_boolean(n->acked));
    api_set(o, "active", json_boolean(n->active));
    return o;
}

/* The engine's queue inspection (tide_engine_queue), indexed by job handle:
 * taken once per request under the read lock. */
typedef struct queue_view {
    tide_queue_info_t *q;
    int32_t *at; /* per handle: index in q + 1, 0 when not queued */
    int n_handles;
    int32_t one; /* or just one job's (tide_engine_queue_job): its handle, q[0] */
} queue_view_t;

static void queue_view_load(const tide_daemon_t *d, queue_view_t *v)
{
    size_t n = tide_engine_queue(d->e, NULL, 0);
    v->n_handles = tide_engine_jobs(d->e);
    v->one = -1;
    v->q = tide_xcalloc(n ? n : 1, sizeof *v->q);
    v->at = tide_xcalloc(v->n_handles > 0 ? (size_t)v->n_handles : 1, sizeof *v->at);
    n = tide_engine_queue(d->e, v->q, n);
    for (size_t i = 0; i < n; i++)
        if (v->q[i].job >= 0 && v->q[i].job < v->n_handles)
            v->at[v->q[i].job] = (int32_t)i + 1;
}

/* The whole queue inspection, taken again only when the engine stepped
 * since (one pass for every read between two steps, not one per request).
 * Read lock held; returns with qc_mu held (qc_release lets it go). */
static const struct dqcache *qc_take(tide_daemon_t *d)
{
    struct dqcache *c = &d->qc;
    pthread_mutex_lock(&d->qc_mu);
    if (!c->q || c->steps != d->steps_total || c->epoch != d->epoch || c->e != d->e ||
        c->n_handles != tide_engine_jobs(d->e)) {
        queue_view_t v;
        queue_view_load(d, &v);
        free(c->q);
        free(c->at);
        *c = (struct dqcache){.q = v.q, .at = v.at, .n_handles = v.n_handles,
                              .steps = d->steps_total, .epoch = d->epoch, .e = d->e};
    }
    return c;
}

static void qc_release(tide_daemon_t *d) { pthread_mutex_unlock(&d->qc_mu); }

/* One job's queue fields (read lock held), from qc_take's inspection. 0, or
 * -1 when the job is not queued. */
static int queue_info_cached(tide_daemon_t *d, int32_t h, tide_queue_info_t *out)
{
    if (h < 0)
        return -1;
    const struct dqcache *c = qc_take(d);
    int rc = h < c->n_handles && c->at[h] ? 0 : -1;
    if (rc == 0)
        *out = c->q[c->at[h] - 1];
    qc_release(d);
    return rc;
}

/* reason, expected_start_s, position: null unless the engine queues the job. */
static void queue_fields(json_t *o, const queue_view_t *v, int32_t h)
{
    const tide_queue_info_t *q = v && h >= 0 && h < v->n_handles && v->at[h] ? &v->q[v->at[h] - 1]
                                 : v && h >= 0 && h == v->one                  ? v->q
                                                                               : NULL;
    api_set(o, "reason", q ? json_string(tide_wait_name(q->reason)) : json_null());
    api_set(o, "expected_start_s", q ? api_time(q->expected_start) : json_null());
    api_set(o, "position", q ? json_integer(q->position) : json_null());
}

/* A job: the stored row (may be NULL) merged with the engine's view (h >= 0). */
static json_t *job_json(tide_daemon_t *d, const tide_store_job_t *row, int32_t h, const queue_view_t *qv)
{
    tide_job_info_t ji;
    int live = h >= 0 && tide_engine_job(d->e, h, &ji) == 0;
    const tide_job_spec_t *sp = live ? ji.spec : &row->spec;
    char types[256];
    json_t *o = json_object();
    api_set(o, "id", api_str(sp->id));
    api_set(o, "team", api_str(sp->team));
    api_set(o, "state", json_string(live ? tide_job_state_name(ji.state) : (row ? row->state : "queued")));
    api_set(o, "priority", json_integer(sp->priority));
    api_set(o, "gpus", json_integer(sp->gpus));
    api_set(o, "gang_gpus", json_integer(sp->gang_gpus));
    api_set(o, "dp_min", json_integer(sp->dp_min));
    api_set(o, "dp_max", json_integer(sp->gang_gpus > 0 ? sp->gpus / sp->gang_gpus : 0));
    api_set(o, "duration_s", json_integer(sp->duration_s));
    api_set(o, "ckpt_interval_s", json_integer(sp->ckpt_interval_s));
    api_set(o, "ckpt_s", json_integer(sp->ckpt_s));
    api_set(o, "restore_s", json_integer(sp->restore_s));
    api_set(o, "gpu_types", json_string(tide_json_types_str(d->cluster, sp->gpu_types, types, sizeof types)));
    int active = live && (ji.state == TIDE_JOB_RUNNING || ji.state == TIDE_JOB_RECLAIMING);
    api_set(o, "width", json_integer(active ? ji.width : 0));
    api_set(o, "phase", active ? json_string(tide_phase_name(ji.phase)) : json_null());
    api_set(o, "progress_s", api_num(live ? ji.progress : 0));
    api_set(o, "committed_s", api_num(live ? ji.committed : 0));
    api_set(o, "submitted_s", json_integer(live ? ji.submitted : (row ? row->submitted_s : 0)));
    api_set(o, "started_s", api_time(live ? ji.first_start : -1));
    api_set(o, "finished_s", api_time(live ? ji.finished : -1));
    api_set(o, "preemptions", json_integer(live ? ji.preemptions : 0));
    api_set(o, "lost_gpu_s", api_num(live ? ji.lost_gpu_s : 0));
    api_set(o, "lease", live && ji.lease >= 0 ? json_integer(ji.lease) : json_null());
    queue_fields(o, qv, live && ji.state == TIDE_JOB_QUEUED ? h : -1);
    if (row) {
        api_set(o, "command", api_str(row->command));
        json_t *env = row->env ? json_loads(row->env, 0, NULL) : NULL;
        api_set(o, "env", env ? env : json_null());
    }
    const notice_t *n = live && (size_t)h < d->n_jobs ? &d->jobs[h].notice : NULL;
    api_set(o, "notice", n && n->id && n->active && !n->acked ? notice_json(n) : json_null());
    return o;
}

/* Find a job by id (mu held): its committed row (caller frees) and engine
 * handle (-1 when the engine has not seen it yet). 0, or -1 with a 404/500
 * written. */
static int job_lookup(tide_daemon_t *d, const char *id, tide_store_job_t *row, int32_t *h,
                      tide_http_reply_t *rep)
{
    tide_error_t err = {0};
    int rc = tide_store_job_get(dmn_rd(d), id, row, &err);
    dmn_rd_done(d);
    if (rc < 0) {
        api_fail(rep, &err);
        return -1;
    }
    *h = tide_engine_job_find(d->e, id);
    return 0;
}

json_t *api_job_view(tide_daemon_t *d, const char *id)
{
    tide_store_job_t row;
    if (tide_store_job_get(dmn_rd(d), id, &row, NULL) < 0) {
        dmn_rd_done(d);
        return NULL;
    }
    dmn_rd_done(d);
    json_t *o = job_json(d, &row, tide_engine_job_find(d->e, id), NULL);
    tide_store_job_free(&row);
    return o;
}

/* ---------------------------------------------------------------- routes */

/* 409 for an id already taken: the job's id and state when the caller may
 * see it (a retry of its own submit), else only that the id is taken. */
static void reply_taken(tide_daemon_t *d, const tide_http_req_t *req, tide_http_reply_t *rep,
                        const char *id, const char *state)
{
    dmn_lock_read(d);
    int own = api_sees_job(d, req, id);
    dmn_unlock_read(d);
    json_t *o = json_object();
    json_t *e = json_pack("{s:s,s:s}", "code", "EEXIST", "message",
                          own ? "job already submitted"
                              : "job id taken (ids are unique across teams): choose another");
    api_set(o, "error", e);
    api_set(o, "id", api_str(id));
    if (own)
        api_set(o, "state", json_string(state));
    tide_http_reply_json(rep, 409, o);
}

/* The request checks that need no lock: team, placement, a command when the
 * backend runs one. 0, or -1 with the answer written. */
static int submit_check(tide_daemon_t *d, const tide_http_req_t *req, tide_job_request_t *jr,
                        tide_http_reply_t *rep)
{
    tide_error_t err = {0};
    if (!jr->team)
        jr->team = tide_xstrdup(req->who.team);
    jr->spec.team = jr->team;
    if (!api_is_admin(req) && strcmp(jr->team, req->who.team)) {
        tide_http_reply_error(rep, 403, "EPERM", "team: a %s of team %s cannot submit for team %s",
                              tide_role_name(req->who.role), req->who.team, jr->team);
        return -1;
    }
    if (tide_job_spec_fits(&jr->spec, d->cluster, &err) < 0) {
        api_fail(rep, &err);
        return -1;
    }
    if (d->be_ops->needs_command && (!jr->command || !*jr->command)) {
        tide_http_reply_error(rep, 400, "EINVAL",
                              "command: required with the %s backend (what the job's batch "
                              "script runs)",
                              d->backend_name);
        return -1;
    }
    return 0;
}

API_HANDLER(api_job_submit)
{
    tide_daemon_t *d = API_D(app);
    tide_job_request_t jr;
    tide_error_t err = {0};
    if (tide_json_job_request(req->body, req->body_len, d->cluster, &jr, &err) < 0) {
        api_fail(rep, &err);
        return;
    }
    char *model = NULL;
    int every = -1;
    if (dmn_pipe_publish_parse(req->body, req->body_len, &model, &every, &err) < 0) {
        api_fail(rep, &err);
        tide_job_request_free(&jr);
        return;
    }
    if (submit_check(d, req, &jr, rep) < 0) {
        tide_job_request_free(&jr);
        free(model);
        return;
    }
    /* refused while stopping or degraded; else answered after the group
     * commit carrying it (no lock held there) */
    dmn_lock_read(d);
    int refused = api_stopping(d, rep);
    dmn_unlock_read(d);
    if (!refused) {
        char old[32];
        if (dmn_job_submit(d, req, &jr, old, sizeof old, &err) == 0) {
            if (model) { /* the write lock waits for the next commit in flight */
                tide_daemon_lock(d);
                dmn_pipe_publish_set(d, jr.id, model, every);
                tide_daemon_unlock(d);
            }
            tide_http_reply_json(rep, 201,
                                 json_pack("{s:o,s:s}", "id", api_str(jr.id), "state", "queued"));
        } else if (err.code == TIDE_EEXIST)
            reply_taken(d, req, rep, jr.id, old);
        else if (err.code == TIDE_ESTATE)
            tide_http_reply_error(rep, 503, "ESTATE", "%s", err.msg);
        else
            api_fail(rep, &err);
    }
    tide_job_request_free(&jr);
    free(model);
}

typedef struct list_ctx {
    tide_daemon_t *d;
    const queue_view_t *qv;
    json_t *arr;
    int64_t last, prev;
} list_ctx_t;

static int list_one(void *ctx, const tide_store_job_t *j)
{
    list_ctx_t *c = ctx;
    json_array_append_new(c->arr, job_json(c->d, j, tide_engine_job_find(c->d->e, j->spec.id), c->qv));
    c->prev = c->last;
    c->last = j->seq;
    return 0;
}

API_HANDLER(api_jobs_list)
{
    tide_daemon_t *d = API_D(app);
    char tb[256], sb[64], cb[64];
    const char *team = tide_http_query(req, "team", tb, sizeof tb);
    const char *state = tide_http_query(req, "state", sb, sizeof sb);
    const char *cursor = tide_http_query(req, "cursor", cb, sizeof cb);
    long long prio, limit, after = 0;
    if (team && !*team)
        team = NULL;
    if (state && !*state)
        state = NULL;
    if (api_q_int(req, "priority", 0, 3, 0, &prio, rep) < 0 ||
        api_q_int(req, "limit", 1, 1000, 100, &limit, rep) < 0)
        return;
    if (cursor && *cursor && (tide_parse_int(cursor, &after) < 0 || after < 0)) {
        api_bad(rep, "cursor: '%s' is not a cursor from a previous page", cursor);
        return;
    }
    if (state) {
        int ok = 0;
        for (int k = 0; k < TIDE_JOB_STATE_COUNT; k++)
            ok |= !strcmp(state, tide_job_state_name(k));
        if (!ok) {
            api_bad(rep, "state: '%s' is not queued, running, reclaiming, done or cancelled", state);
            return;
        }
    }
    if (!api_is_admin(req)) {
        if (team && strcmp(team, req->who.team)) {
            tide_http_reply_error(rep, 403, "EPERM", "team: a %s of team %s cannot list team %s",
                                  tide_role_name(req->who.role), req->who.team, team);
            return;
        }
        team = req->who.team;
    }
    tide_store_job_filter_t f = {.team = team, .state = state, .priority = (int)prio,
                                 .after_seq = after, .limit = (int)limit + 1};
    dmn_lock_read(d);
    const struct dqcache *qc = qc_take(d); /* the inspection GETs share */
    queue_view_t qv = {.q = qc->q, .at = qc->at, .n_handles = qc->n_handles, .one = -1};
    list_ctx_t c = {.d = d, .qv = &qv, .arr = json_array(), .last = after};
    tide_error_t err = {0};
    int n = tide_store_jobs_list(dmn_rd(d), &f, list_one, &c, &err);
    dmn_rd_done(d);
    qc_release(d);
    dmn_unlock_read(d);
    if (n < 0) {
        json_decref(c.arr);
        api_fail(rep, &err);
        return;
    }
    json_t *next = json_null();
    if (n > limit) {
        /* one more than asked: there is a next page, ending at the limit-th */
        json_array_remove(c.arr, json_array_size(c.arr) - 1);
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", (long long)c.prev);
        next = json_string(buf);
    }
    json_t *o = json_object();
    api_set(o, "jobs", c.arr);
    api_set(o, "next", next);
    tide_http_reply_json(rep, 200, o);
}

/* A job's "backend" member (state lock held), or NULL when the backend has none. */
static json_t *backend_json(tide_daemon_t *d, int32_t h)
{
    tide_backend_job_info_t bi;
    if (h < 0 || !d->be || tide_backend_job_info(d->be, h, &bi) != 0)
        return NULL;
    json_t *b = json_object();
    api_set(b, "name", json_string(d->backend_name));
    api_set(b, "ids", json_string(bi.ids));
    api_set(b, "state", json_string(bi.state));
    api_set(b, "nodes", json_string(bi.nodes));
    api_set(b, "exit_code", bi.exit_code >= 0 ? json_integer(bi.exit_code) : json_null());
    api_set(b, "restarts", json_integer(bi.restarts));
    return b;
}

/* The committed rows come from the read connection without the state lock
 * (which steps, writes and every other read share); the lock is held only
 * for the engine's view, and the answer is encoded after it. */
API_HANDLER(api_job_get)
{
    tide_daemon_t *d = API_D(app);
    int locked = !d->rd; /* no read connection: the writer's needs the lock */
    if (locked)
        dmn_lock_read(d);
    tide_store_job_t row;
    tide_error_t err = {0};
    tide_store_t *rd = dmn_rd(d);
    int rc = tide_store_job_get(rd, req->params[0], &row, &err);
    int64_t nck = rc == 0 ? tide_store_checkpoints_count(rd, row.spec.id, &err) : 0;
    dmn_rd_done(d);
    json_t *o = NULL;
    if (rc < 0)
        api_fail(rep, &err);
    else if (api_team_ok(req, row.spec.team, row.spec.id, rep)) {
        if (!locked)
            dmn_lock_read(d);
        locked = 1;
        int32_t h = tide_engine_job_find(d->e, row.spec.id);
        tide_queue_info_t qi;
        queue_view_t qv = {.q = &qi, .one = -1};
        if (queue_info_cached(d, h, &qi) == 0)
            qv.one = h;
        o = job_json(d, &row, h, &qv);
        api_set(o, "checkpoints", json_integer(nck > 0 ? nck : 0));
        json_t *b = backend_json(d, h);
        if (b)
            api_set(o, "backend", b);
    }
    if (locked)
        dmn_unlock_read(d);
    if (rc == 0)
        tide_store_job_free(&row);
    if (o)
        tide_http_reply_json(rep, 200, o);
}

/* The job and the caller's right to it (mu alone, released on return): 0,
 * or -1 with the answer written. The write itself goes through the group
 * commit, which checks the job's state again. */
int api_job_owned(tide_daemon_t *d, const tide_http_req_t *req, char **id,
                  tide_http_reply_t *rep)
{
    return api_job_owned_as(d, req, req->params[0], id, rep);
}

int api_job_owned_as(tide_daemon_t *d, const tide_http_req_t *req, const char *job, char **id,
                     tide_http_reply_t *rep)
{
    dmn_lock_read(d);
    tide_store_job_t row;
    int32_t h;
    int rc = -1;
    if (job_lookup(d, job, &row, &h, rep) == 0) {
        if (api_team_ok(req, row.spec.team, row.spec.id, rep) && !api_stopping(d, rep)) {
            *id = tide_xstrdup(row.spec.id ? row.spec.id : "");
            rc = 0;
        }
        tide_store_job_free(&row);
    }
    dmn_unlock_read(d);
    return rc;
}

/* A write refused by the group commit: ESTATE while stopping is a 503. */
void api_write_failed(tide_daemon_t *d, tide_http_reply_t *rep, const tide_error_t *err)
{
    if (err->code == TIDE_ESTATE && (d->stop || d->failed))
        tide_http_reply_error(rep, 503, "ESTATE", "%s", err->msg);
    else
        api_fail(rep, err);
}

API_HANDLER(api_job_cancel)
{
    tide_daemon_t *d = API_D(app);
    char *id;
    if (api_job_owned(d, req, &id, rep) < 0)
        return;
    const char *state;
    tide_error_t err = {0};
    if (dmn_job_cancel(d, req, id, &state, &err) < 0)
        api_write_failed(d, rep, &err);
    else
        tide_http_reply_json(rep, 200, json_pack("{s:o,s:s}", "id", api_str(id), "state", state));
    free(id);
}

/* A committed checkpoint may publish a model version (src/daemon/pipe.c):
 * "manifest" (a URI string) and "digest" come from the request. */
static void ckpt_publish(tide_daemon_t *d, const char *id, const tide_ckpt_request_t *ck,
                         const tide_http_req_t *req)
{
    json_t *o = json_loadb(req->body, req->body_len, 0, NULL);
    tide_daemon_lock(d);
    dmn_pipe_ckpt(d, id, ck->step, ck->bytes, json_string_value(json_object_get(o, "manifest")),
                  json_string_value(json_object_get(o, "digest")));
    tide_daemon_unlock(d);
    json_decref(o);
}

API_HANDLER(api_job_ckpt)
{
    tide_daemon_t *d = API_D(app);
    tide_ckpt_request_t ck;
    tide_error_t err = {0};
    if (tide_json_ckpt(req->body, req->body_len, &ck, &err) < 0) {
        api_fail(rep, &err);
        return;
    }
    char *id;
    if (api_job_owned(d, req, &id, rep) < 0)
        return;
    double value;
    int dup = 0;
    if (dmn_job_checkpoint(d, req, id, &ck, &value, &dup, &err) < 0) {
        api_write_failed(d, rep, &err);
    } else {
        if (ck.committed && !dup)
            ckpt_publish(d, id, &ck, req);
        json_t *o = json_object();
        api_set(o, "id", api_str(id));
        api_set(o, "committed", json_boolean(ck.committed));
        api_set(o, "used", json_boolean(ck.committed && !dup));
        api_set(o, "duplicate", json_boolean(dup));
        api_set(o, "progress_s", ck.committed ? api_num(value) : json_null());
        tide_http_reply_json(rep, 201, o);
    }
    free(id);
}

API_HANDLER(api_notice)
{
    tide_daemon_t *d = API_D(app);
    long long wait;
    if (api_q_int(req, "wait", 0, 300, 0, &wait, rep) < 0)
        return;
    dmn_lock_read(d);
    tide_store_job_t row;
    int32_t h;
    if (job_lookup(d, req->params[0], &row, &h, rep) < 0)
        goto out0;
    if (!api_team_ok(req, row.spec.team, row.spec.id, rep))
        goto out;
    uint64_t seen = h >= 0 ? dmn_job(d, h)->notice.id : 0;
    const notice_t *hit = NULL;
    if (h >= 0 && seen && dmn_job(d, h)->notice.active && !dmn_job(d, h)->notice.acked)
        hit = &dmn_job(d, h)->notice;
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += (time_t)wait;
    while (!hit && wait > 0 && !d->stop) {
        if (pthread_cond_timedwait(&d->notice_cv, &d->mu, &dl) == ETIMEDOUT)
            break;
        h = tide_engine_job_find(d->e, row.spec.id);
        if (h >= 0 && dmn_job(d, h)->notice.id > seen)
            hit = &dmn_job(d, h)->notice;
    }
    json_t *o = json_object();
    api_set(o, "id", api_str(row.spec.id));
    api_set(o, "notice", hit ? notice_json(hit) : json_null());
    tide_http_reply_json(rep, 200, o);
out:
    tide_store_job_free(&row);
out0:
    dmn_unlock_read(d);
}

API_HANDLER(api_notice_ack)
{
    tide_daemon_t *d = API_D(app);
    tide_error_t err = {0};
    if (req->body_len) {
        json_t *o = tide_json_parse_object(req->body, req->body_len, &err);
        static const char *const none[] = {"id", NULL};
        if (!o || tide_json_only(o, none, &err) < 0) {
            json_decref(o);
            api_fail(rep, &err);
            return;
        }
        json_decref(o);
    }
    dmn_lock_read(d);
    tide_store_job_t row;
    int32_t h;
    if (job_lookup(d, req->params[0], &row, &h, rep) < 0)
        goto out0;
    if (!api_team_ok(req, row.spec.team, row.spec.id, rep) || api_stopping(d, rep))
        goto out;
    uint64_t id;
    if (dmn_notice_ack(d, row.spec.id, h, &id, &err) < 0)
        api_fail(rep, &err);
    else
        tide_http_reply_json(rep, 200, json_pack("{s:o,s:I,s:b}", "id", api_str(row.spec.id),
                                                 "notice", (json_int_t)id, "acked", 1));
out:
    tide_store_job_free(&row);
out0:
    dmn_unlock_read(d);
}
