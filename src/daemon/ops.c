/* What the API does to the daemon: one function per write, called by its
 * handler with the lock held after the input was validated. Each owns its
 * transaction: what it accepts is committed (rows and pending events
 * together) before it is queued for the loop and answered. */
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

int dmn_job_submit(tide_daemon_t *d, tide_job_request_t *jr, char *old_state, size_t n,
                   tide_error_t *err)
{
    if (!jr->id) {
        char idbuf[64];
        if (new_job_id(d, idbuf, sizeof idbuf, err) < 0)
            return -1;
        jr->id = tide_xstrdup(idbuf);
    }
    jr->spec.id = jr->id;
    int taken = job_taken(d, jr->id, old_state, n, err);
    if (taken < 0)
        return -1;
    if (taken)
        return tide_errf(err, TIDE_EEXIST, "job already submitted");
    tide_time_t now = dmn_clock_now(d);
    tide_store_job_t row = {.spec = jr->spec, .command = jr->command, .env = jr->env,
                            .state = (char *)"queued", .submitted_s = now, .updated_s = now};
    row.spec.submit_s = now;
    tide_event_t ev = dmn_blank_event(TIDE_EV_JOB_SUBMIT);
    dmn_evx_t x = {.job_id = jr->id, .spec = &jr->spec};
    int64_t seq;
    tide_time_t t;
    if (tide_store_begin(d->st, err) < 0)
        return -1;
    if (tide_store_job_insert(d->st, &row, err) < 0 ||
        dmn_pending_append(d, &ev, &x, &seq, &t, err) < 0 || tide_store_commit(d->st, err) < 0) {
        tide_store_rollback(d->st);
        return -1;
    }
    dmn_queue(d, &ev, &x, seq, t);
    return 0;
}

static int cancel_pending(const tide_daemon_t *d, const char *id)
{
    for (size_t i = 0; i < d->pending.n; i++)
        if (d->pending.v[i].ev.kind == TIDE_EV_JOB_CANCEL && d->pending.v[i].job_id &&
            !strcmp(d->pending.v[i].job_id, id))
            return 1;
    return 0;
}

int dmn_job_cancel(tide_daemon_t *d, const char *id, int32_t h, const char **state,
                   tide_error_t *err)
{
    tide_job_info_t ji;
    *state = "cancelling";
    if (h >= 0 && tide_engine_job(d->e, h, &ji) == 0 &&
        (ji.state == TIDE_JOB_DONE || ji.state == TIDE_JOB_CANCELLED))
        return tide_errf(err, TIDE_ESTATE, "job %s: already %s", id, tide_job_state_name(ji.state));
    if (cancel_pending(d, id))
        return 0;
    tide_event_t ev = dmn_blank_event(TIDE_EV_JOB_CANCEL);
    ev.job = h;
    dmn_evx_t x = {.job_id = id};
    int64_t seq = dmn_accept(d, &ev, &x, err);
    if (seq < 0)
        return -1;
    /* the loop feeds it at once: answer with the resulting state */
    if (dmn_wait_fed(d, seq, 5.0)) {
        h = tide_engine_job_find(d->e, id);
        if (h >= 0 && tide_engine_job(d->e, h, &ji) == 0)
            *state = tide_job_state_name(ji.state);
    }
    return 0;
}

int dmn_job_checkpoint(tide_daemon_t *d, const char *id, int32_t h, const tide_ckpt_request_t *ck,
                       double *value, tide_error_t *err)
{
    *value = ck->progress_s;
    tide_job_info_t ji;
    int running = h >= 0 && tide_engine_job(d->e, h, &ji) == 0 &&
                  (ji.state == TIDE_JOB_RUNNING || ji.state == TIDE_JOB_RECLAIMING);
    if (ck->committed) {
        if (!running)
            return tide_errf(err, TIDE_ESTATE,
                             "job %s: not running (a committed checkpoint needs a running job)", id);
        if (*value < 0)
            *value = ji.progress;
        if (*value > (double)ji.spec->duration_s)
            *value = (double)ji.spec->duration_s;
    }
    /* a real job (not a simulated one) knows its progress better than the
     * engine's estimate from wall time (start-up, slow steps): resync first */
    int resync = ck->committed && ck->progress_s >= 0 && d->be_ops->reports_progress;
    tide_event_t ev[2] = {dmn_blank_event(TIDE_EV_JOB_PHASE), dmn_blank_event(TIDE_EV_CKPT_COMMITTED)};
    ev[0].job = ev[1].job = h;
    ev[0].phase = TIDE_PHASE_TRAINING;
    ev[0].value = ev[1].value = *value;
    const int feed[2] = {resync, ck->committed};
    int64_t seq[2] = {0, 0};
    tide_time_t t[2] = {0, 0};
    dmn_evx_t x = {.job_id = id};
    if (tide_store_begin(d->st, err) < 0)
        return -1;
    int ok = tide_store_checkpoint_add(d->st, id, dmn_clock_now(d), ck->step, ck->bytes, ck->shards,
                                       ck->committed, ck->committed ? *value : ck->progress_s,
                                       err) == 0;
    for (int i = 0; i < 2 && ok; i++)
        ok = !feed[i] || dmn_pending_append(d, &ev[i], &x, &seq[i], &t[i], err) == 0;
    if (!ok || tide_store_commit(d->st, err) < 0) {
        tide_store_rollback(d->st);
        return -1;
    }
    for (int i = 0; i < 2; i++)
        if (feed[i])
            dmn_queue(d, &ev[i], &x, seq[i], t[i]);
    return 0;
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

int dmn_node_set(tide_daemon_t *d, int node, int up, tide_error_t *err)
{
    tide_event_t ev = dmn_blank_event(up ? TIDE_EV_NODE_RECOVERED : TIDE_EV_NODE_FAILED);
    ev.node = node;
    return dmn_accept(d, &ev, NULL, err) < 0 ? -1 : 0;
}

int dmn_demand_set(tide_daemon_t *d, int service, double rps, tide_error_t *err)
{
    tide_event_t ev = dmn_blank_event(TIDE_EV_DEMAND);
    ev.service = service;
    ev.value = rps;
    dmn_evx_t x = {.service_name = dmn_service_name(d->e, service)};
    return dmn_accept(d, &ev, &x, err) < 0 ? -1 : 0;
}

int dmn_replica_ready(tide_daemon_t *d, int32_t r, const char **service, int *ready,
                      tide_error_t *err)
{
    *service = "";
    *ready = 0;
    if ((size_t)r >= d->n_reps || d->reps[r].state == REP_NONE)
        return tide_errf(err, TIDE_ENOENT, "replica %lld: not running", (long long)r);
    const char *svc = dmn_service_name(d->e, d->reps[r].service);
    *service = svc ? svc : "";
    if (d->reps[r].state == REP_UP) {
        *ready = 1;
        return 0;
    }
    tide_event_t ev = dmn_blank_event(TIDE_EV_REPLICA_READY);
    ev.service = d->reps[r].service;
    ev.replica = r;
    dmn_evx_t x = {.service_name = *service};
    return dmn_accept(d, &ev, &x, err) < 0 ? -1 : 0;
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
