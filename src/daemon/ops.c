/* What the API does to the daemon: one function per write. The writes of
 * jobs, demand and replicas are called by their handler with no lock held
 * and go through the group commit (queue.c): their apply checks the request
 * against the state inside the batch's transaction; what it accepts is
 * committed (rows and pending events together) before it is queued for the
 * loop and answered. Node states and services keep their own transaction
 * under tide_daemon_lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/internal.h"
#include "util/util.h"

/* ------------------------------------------------------------------- jobs */

/* A fresh job id ("job-000042"): not in the table. */
static int new_job_id(tide_daemon_t *d, char *buf, size_t n, tide_error_t *err)
{
    int64_t k = tide_store_jobs_count(d->st, err);
    if (k < 0)
        return -1;
    for (int tries = 0; tries < 1000000; tries++) {
        snprintf(buf, n, "job-%06lld", (long long)(k + 1 + tries));
        tide_store_job_t row;
        tide_error_t e2 = {0};
        if (tide_store_job_get(d->st, buf, &row, &e2) == 0) {
            tide_store_job_free(&row);
            continue;
        }
        if (e2.code != TIDE_ENOENT) {
            if (err)
                *err = e2;
            return -1;
        }
        return 0;
    }
    return tide_errf(err, TIDE_EIO, "cannot make a job id");
}

/* Is id taken? 0 free, 1 taken (*state: its state), -1 error. */
static int job_taken(tide_daemon_t *d, const char *id, char *state, size_t n, tide_error_t *err)
{
    tide_store_job_t old;
    tide_error_t e2 = {0};
    if (tide_store_job_get(d->st, id, &old, &e2) == 0) {
        snprintf(state, n, "%s", old.state ? old.state : "");
        tide_store_job_free(&old);
        return 1;
    }
    if (e2.code != TIDE_ENOENT) {
        if (err)
            *err = e2;
        return -1;
    }
    return 0;
}

/* A store write failed inside the batch: whatever its code, the batch fails
 * (rows may have been written). */
static int store_failed(tide_error_t *err)
{
    if (err)
        err->code = TIDE_EIO;
    return -1;
}

/* ---- submit */

typedef struct submit_req {
    tide_job_request_t *jr;
    char *old_state;
    size_t n;
} submit_req_t;

/* In the batch: the id (made, or checked against the table, where an
 * earlier write of the same batch is visible), the row, the event. */
static int submit_apply(tide_daemon_t *d, dmn_op_t *op, tide_error_t *err)
{
    submit_req_t *r = op->arg;
    tide_job_request_t *jr = r->jr;
    if (d->stop || d->failed)
        return tide_errf(err, TIDE_ESTATE, "the daemon is shutting down");
    if (!jr->id) {
        char idbuf[64];
        if (new_job_id(d, idbuf, sizeof idbuf, err) < 0)
            return -1;
        jr->id = tide_xstrdup(idbuf);
    }
    jr->spec.id = jr->id;
    int taken = job_taken(d, jr->id, r->old_state, r->n, err);
    if (taken < 0)
        return -1;
    if (taken)
        return tide_errf(err, TIDE_EEXIST, "job already submitted");
    tide_time_t now = dmn_clock_now(d);
    tide_store_job_t row = {.spec = jr->spec, .command = jr->command, .env = jr->env,
                            .state = (char *)"queued", .submitted_s = now, .updated_s = now};
    row.spec.submit_s = now;
    jr->spec.submit_s = now; /* the engine gets the spec a replay reads back from the row */
    tide_event_t ev = dmn_blank_event(TIDE_EV_JOB_SUBMIT);
    dmn_evx_t x = {.job_id = jr->id, .spec = &jr->spec};
    if (tide_store_job_insert(d->st, &row, err) < 0)
        return store_failed(err);
    return dmn_op_event(d, op, &ev, &x, err);
}

int dmn_job_submit(tide_daemon_t *d, const tide_http_req_t *req, tide_job_request_t *jr,
                   char *old_state, size_t n, tide_error_t *err)
{
    submit_req_t r = {.jr = jr, .old_state = old_state, .n = n};
    dmn_op_t op = {.apply = submit_apply, .arg = &r, .audit_req = req, .audit_status = 201};
    if (dmn_commit(d, &op) < 0 && err)
        *err = op.err;
    return op.rc;
}

/* ---- cancel */

static int cancel_pending(const tide_daemon_t *d, const char *id)
{
    for (size_t i = 0; i < d->pending.n; i++)
        if (d->pending.v[i].ev.kind == TIDE_EV_JOB_CANCEL && d->pending.v[i].job_id &&
            !strcmp(d->pending.v[i].job_id, id))
            return 1;
    return 0;
}

typedef struct cancel_req {
    const char *id;
} cancel_req_t;

/* Is a cancel of id already among the writes applied before op? */
static int cancel_batched(const tide_daemon_t *d, const dmn_op_t *op, const char *id);

static int cancel_apply(tide_daemon_t *d, dmn_op_t *op, tide_error_t *err)
{
    cancel_req_t *r = op->arg;
    if (d->stop || d->failed)
        return tide_errf(err, TIDE_ESTATE, "the daemon is shutting down");
    int32_t h = tide_engine_job_find(d->e, r->id);
    tide_job_info_t ji;
    if (h >= 0 && tide_engine_job(d->e, h, &ji) == 0 &&
        (ji.state == TIDE_JOB_DONE || ji.state == TIDE_JOB_CANCELLED))
        return tide_errf(err, TIDE_ESTATE, "job %s: already %s", r->id,
                         tide_job_state_name(ji.state));
    if (cancel_pending(d, r->id) || cancel_batched(d, op, r->id))
        return 0;
    tide_event_t ev = dmn_blank_event(TIDE_EV_JOB_CANCEL);
    ev.job = h;
    dmn_evx_t x = {.job_id = r->id};
    return dmn_op_event(d, op, &ev, &x, err);
}

/* The batch's cancels reach the pending queue only after its commit: a
 * second cancel of one job in the same batch looks at the writes before it. */
static int cancel_batched(const tide_daemon_t *d, const dmn_op_t *op, const char *id)
{
    for (const dmn_op_t *o = d->gc_applying; o && o != op; o = o->next)
        if (o->apply == cancel_apply && o->rc == 0 && o->n_ev &&
            !strcmp(((const cancel_req_t *)o->arg)->id, id))
            return 1;
    return 0;
}

int dmn_job_cancel(tide_daemon_t *d, const tide_http_req_t *req, const char *id,
                   const char **state, tide_error_t *err)
{
    *state = "cancelling";
    cancel_req_t r = {.id = id};
    dmn_op_t op = {.apply = cancel_apply, .arg = &r, .audit_req = req, .audit_status = 200};
    if (dmn_commit(d, &op) < 0) {
        if (err)
            *err = op.err;
        return -1;
    }
    if (!op.n_ev)
        return 0;
    /* the loop feeds it at once: answer with the resulting state */
    dmn_lock_read(d);
    if (dmn_wait_fed(d, op.seq[0], 5.0)) {
        int32_t h = tide_engine_job_find(d->e, id);
        tide_job_info_t ji;
        if (h >= 0 && tide_engine_job(d->e, h, &ji) == 0)
            *state = tide_job_state_name(ji.state);
    }
    dmn_unlock_read(d);
    return 0;
}

/* ---- checkpoints */

typedef struct ckpt_req {
    const char *id;
    const tide_ckpt_request_t *ck;
    double value;
    int dup;
} ckpt_req_t;

static int ckpt_apply(tide_daemon_t *d, dmn_op_t *op, tide_error_t *err)
{
    ckpt_req_t *r = op->arg;
    const tide_ckpt_request_t *ck = r->ck;
    if (d->stop || d->failed)
        return tide_errf(err, TIDE_ESTATE, "the daemon is shutting down");
    int32_t h = tide_engine_job_find(d->e, r->id);
    r->value = ck->progress_s;
    tide_job_info_t ji;
    int running = h >= 0 && tide_engine_job(d->e, h, &ji) == 0 &&
                  (ji.state == TIDE_JOB_RUNNING || ji.state == TIDE_JOB_RECLAIMING);
    if (ck->committed) {
        if (!running)
            return tide_errf(err, TIDE_ESTATE,
                             "job %s: not running (a committed checkpoint needs a running job)",
                             r->id);
        if (r->value < 0)
            r->value = ji.progress;
        if (r->value > (double)ji.spec->duration_s)
            r->value = (double)ji.spec->duration_s;
        djob_t *dj = dmn_job(d, h);
        if (ck->step >= 0 && ck->step < dj->ckpt_seen) {
            r->dup = 1; /* every gang reports the commit: one counts */
            r->value = ji.committed;
            return 0;
        }
    }
    /* a real job (not a simulated one) knows its progress better than the
     * engine's estimate from wall time (start-up, slow steps): resync first */
    int resync = ck->committed && ck->progress_s >= 0 && d->be_ops->reports_progress;
    tide_event_t ev[2] = {dmn_blank_event(TIDE_EV_JOB_PHASE), dmn_blank_event(TIDE_EV_CKPT_COMMITTED)};
    ev[0].job = ev[1].job = h;
    ev[0].phase = TIDE_PHASE_TRAINING;
    ev[0].value = ev[1].value = r->value;
    const int feed[2] = {resync, ck->committed};
    dmn_evx_t x = {.job_id = r->id};
    if (tide_store_checkpoint_add(d->st, r->id, dmn_clock_now(d), ck->step, ck->bytes, ck->shards,
                                  ck->committed, ck->committed ? r->value : ck->progress_s,
                                  err) < 0)
        return store_failed(err);
    for (int i = 0; i < 2; i++)
        if (feed[i] && dmn_op_event(d, op, &ev[i], &x, err) < 0)
            return -1;
    if (ck->committed && ck->step >= 0)
        dmn_job(d, h)->ckpt_seen = ck->step + 1;
    return 0;
}

int dmn_job_checkpoint(tide_daemon_t *d, const tide_http_req_t *req, const char *id,
                       const tide_ckpt_request_t *ck, double *value, int *dup,
                       tide_error_t *err)
{
    ckpt_req_t r = {.id = id, .ck = ck};
    dmn_op_t op = {.apply = ckpt_apply, .arg = &r, .audit_req = req, .audit_status = 201};
    if (dmn_commit(d, &op) < 0 && err)
        *err = op.err;
    *value = r.value;
    *dup = r.dup;
    return op.rc;
}

int dmn_notice_ack(tide_daemon_t *d, const char *id, int32_t h, uint64_t *notice_id,
                   tide_error_t *err)
{
    notice_t *n = h >= 0 ? &dmn_job(d, h)->notice : NULL;
    if (!n || !n->id || n->acked)
        return tide_errf(err, TIDE_ESTATE, "job %s: no notice to acknowledge", id);
    n->acked = 1;
    *notice_id = n->id;
    return 0;
}

/* ------------------------------------------------------ nodes, replicas */

int64_t dmn_node_set(tide_daemon_t *d, int node, int up, tide_error_t *err)
{
    tide_event_t ev = dmn_blank_event(up ? TIDE_EV_NODE_RECOVERED : TIDE_EV_NODE_FAILED);
    ev.node = node;
    return dmn_accept(d, &ev, NULL, err);
}

/* ---- pushed demand */

typedef struct demand_req {
    const char *svc;
    double rps;
} demand_req_t;

static int demand_apply(tide_daemon_t *d, dmn_op_t *op, tide_error_t *err)
{
    demand_req_t *r = op->arg;
    if (d->stop || d->failed)
        return tide_errf(err, TIDE_ESTATE, "the daemon is shutting down");
    int s = tide_engine_service_find(d->e, r->svc);
    if (s < 0)
        return tide_errf(err, TIDE_ENOENT, "unknown service '%s'", r->svc);
    tide_event_t ev = dmn_blank_event(TIDE_EV_DEMAND);
    ev.service = s;
    ev.value = r->rps;
    dmn_evx_t x = {.service_name = r->svc};
    return dmn_op_event(d, op, &ev, &x, err);
}

int dmn_demand_set(tide_daemon_t *d, const tide_http_req_t *req, const char *svc, double rps,
                   tide_error_t *err)
{
    demand_req_t r = {.svc = svc, .rps = rps};
    dmn_op_t op = {.apply = demand_apply, .arg = &r, .audit_req = req, .audit_status = 200};
    if (dmn_commit(d, &op) < 0 && err)
        *err = op.err;
    return op.rc;
}

/* ---- replica ready */

typedef struct ready_req {
    int32_t r;
    char service[128];
    int ready;
} ready_req_t;

static int ready_apply(tide_daemon_t *d, dmn_op_t *op, tide_error_t *err)
{
    ready_req_t *q = op->arg;
    int32_t r = q->r;
    if (d->stop || d->failed)
        return tide_errf(err, TIDE_ESTATE, "the daemon is shutting down");
    if ((size_t)r >= d->n_reps || d->reps[r].state == REP_NONE)
        return tide_errf(err, TIDE_ENOENT, "replica %lld: not running", (long long)r);
    const char *svc = dmn_service_name(d->e, d->reps[r].service);
    snprintf(q->service, sizeof q->service, "%s", svc ? svc : "");
    if (d->reps[r].state == REP_UP) {
        q->ready = 1;
        op->audit_status = 200; /* the answer says it already was */
        return 0;
    }
    tide_event_t ev = dmn_blank_event(TIDE_EV_REPLICA_READY);
    ev.service = d->reps[r].service;
    ev.replica = r;
    dmn_evx_t x = {.service_name = q->service};
    return dmn_op_event(d, op, &ev, &x, err);
}

int dmn_replica_ready(tide_daemon_t *d, const tide_http_req_t *req, int32_t r, char *service,
                      size_t n, int *ready, tide_error_t *err)
{
    ready_req_t q = {.r = r};
    dmn_op_t op = {.apply = ready_apply, .arg = &q, .audit_req = req, .audit_status = 202};
    if (dmn_commit(d, &op) < 0 && err)
        *err = op.err;
    snprintf(service, n, "%s", q.service);
    *ready = q.ready;
    return op.rc;
}

/* --------------------------------------------------------------- services */

int dmn_service_add(tide_daemon_t *d, const tide_service_spec_t *sp, tide_error_t *err)
{
    if (tide_engine_service_find(d->e, sp->name) >= 0)
        return tide_errf(err, TIDE_EEXIST, "service %s: already defined", sp->name);
    tide_service_spec_t *v = tide_xmalloc((d->n_svcs + 1) * sizeof *v);
    if (d->n_svcs)
        memcpy(v, d->svcs, d->n_svcs * sizeof *v);
    v[d->n_svcs] = *sp;
    int rc = dmn_services_set(d, v, d->n_svcs + 1, err);
    free(v);
    return rc;
}

int dmn_service_bounds(tide_daemon_t *d, int s, int min_r, int has_min, int max_r, int has_max,
                       tide_error_t *err)
{
    tide_service_spec_t *v = tide_xmalloc((d->n_svcs ? d->n_svcs : 1) * sizeof *v);
    if (d->n_svcs)
        memcpy(v, d->svcs, d->n_svcs * sizeof *v);
    if (has_min)
        v[s].min_replicas = min_r;
    if (has_max)
        v[s].max_replicas = max_r;
    int rc;
    if (v[s].max_replicas > 0 && v[s].max_replicas < v[s].min_replicas)
        rc = tide_errf(err, TIDE_EINVAL, "max_replicas: %d is below min_replicas (%d)",
                       v[s].max_replicas, v[s].min_replicas);
    else
        rc = dmn_services_set(d, v, d->n_svcs, err);
    free(v);
    return rc;
}
