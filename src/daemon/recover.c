/* Recovery: the engine rebuilt from the database. The recorded steps of the
 * current epoch are replayed through a fresh engine (deterministic: the
 * actions must match the recorded ones), pending events are loaded, the
 * invariants checked; then the backend is created and reconciled: running
 * jobs it does not know expire (requeued, loss counted), replicas it does not
 * know fail. A step that could not be persisted is undone the same way
 * without touching the backend (dmn_rewind): it enacted nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/internal.h"
#include "util/util.h"

static void jobs_free(tide_daemon_t *d)
{
    for (size_t i = 0; i < d->n_jobs; i++)
        dmn_work_free(d->jobs[i].work);
    free(d->jobs);
    d->jobs = NULL;
    d->n_jobs = 0;
}

static void derived_reset(tide_daemon_t *d)
{
    free(d->reps);
    d->reps = NULL;
    d->n_reps = 0;
    jobs_free(d);
    int nn = tide_cluster_nodes(d->cluster);
    free(d->node_up);
    d->node_up = tide_xmalloc((size_t)(nn > 0 ? nn : 1));
    memset(d->node_up, 1, (size_t)(nn > 0 ? nn : 1));
    free(d->last_demand);
    d->last_demand = tide_xmalloc((d->n_svcs ? d->n_svcs : 1) * sizeof *d->last_demand);
    for (size_t i = 0; i < d->n_svcs; i++)
        d->last_demand[i] = -1;
    memset(d->preempt, 0, sizeof d->preempt);
    dmn_teams_clear(d);
    dmn_power_reset(d);
    d->started = 0;
    d->next_wake = 0;
}

int dmn_engine_build(tide_daemon_t *d, tide_error_t *err)
{
    tide_engine_destroy(d->e);
    d->e = tide_engine_create(d->cluster, &d->cfg, err);
    if (!d->e)
        return -1;
    for (size_t i = 0; i < d->n_svcs; i++) {
        int idx = tide_engine_add_service(d->e, &d->svcs[i], err);
        if (idx < 0)
            return tide_err_prefix(err, "service %s: ", d->svcs[i].name);
        if ((size_t)idx != i)
            return tide_errf(err, TIDE_ESTATE, "service %s got index %d, expected %zu",
                             d->svcs[i].name, idx, i);
    }
    dmn_history_apply(d); /* before the first step, as at the first start */
    derived_reset(d);
    return 0;
}

/* ---------------------------------------------------------------- replay */

static int same_action(const tide_action_t *a, const tide_store_action_rec_t *r)
{
    return a->kind == r->kind && a->reason == r->reason && a->job == r->job &&
           a->replica == r->replica && a->n_gpus == r->n_gpus &&
           (a->kind != TIDE_ACT_JOB_START && a->kind != TIDE_ACT_JOB_RESIZE ? 1 : a->width == r->width);
}

/* A stored team definition applied to the engine (replay). */
static void team_replay(tide_daemon_t *d, const char *payload)
{
    tide_team_spec_t t;
    char *name = NULL;
    tide_error_t err = {0};
    if (dmn_team_decode(payload, &t, &name, &err) < 0)
        dmn_log(d, "team definition ignored: %s", err.msg);
    else
        dmn_team_apply(d, &t, payload);
    free(name);
}

static int replay_step(void *ctx, int64_t step, tide_time_t t, const tide_store_event_t *ev,
                       size_t n, const tide_store_action_rec_t *rec, size_t nrec)
{
    tide_daemon_t *d = ctx;
    d->n_evbuf = 0;
    for (size_t i = 0; i < n; i++)
        if (ev[i].ev.kind == TIDE_STORE_KIND_TEAM_SET && ev[i].payload)
            team_replay(d, ev[i].payload);
        else if (ev[i].ev.kind == TIDE_STORE_KIND_POWER_MODEL && ev[i].payload)
            dmn_power_apply(d, ev[i].payload, t);
        else if (ev[i].ev.kind == TIDE_STORE_KIND_RL_POOL) {
            dmn_rl_pool_hold(d, ev[i].payload);
            dmn_rl_pool_restore(d, ev[i].payload);
        }
    for (size_t i = 0; i < n; i++) {
        if (ev[i].ev.kind < 0 || ev[i].ev.kind >= TIDE_EV_KIND_COUNT)
            continue;
        tide_event_t x = ev[i].ev;
        dmn_resolve(d, &x, ev[i].job_id);
        tide_error_t qe = {0};
        if (dmn_event_check(d, &x, &qe) < 0) {
            /* a bad row (an edited log, an older build's value) must not stop a restart */
            if (d->quarantined++ < 20)
                dmn_log(d, "replay: step %lld: event %lld (%s) quarantined, not fed: %s",
                        (long long)step, (long long)ev[i].seq,
                        tide_store_event_kind_name(ev[i].ev.kind), qe.msg);
            continue;
        }
        TIDE_PUSH(d->evbuf, d->n_evbuf, d->cap_evbuf, x);
    }
    tide_error_t err = {0};
    if (tide_engine_step(d->e, t, d->evbuf, d->n_evbuf, &d->acts, &err) != 0) {
        if (strstr(err.msg, "backwards"))
            return 1;
        if (d->step_errors++ < 20)
            dmn_log(d, "replay: step %lld: the engine rejected an event (as it did live): %s",
                    (long long)step, err.msg);
    }
    int same = d->acts.n == nrec;
    for (size_t i = 0; same && i < nrec; i++)
        same = same_action(&d->acts.v[i], &rec[i]);
    if (!same) {
        if (d->replay_mismatch < 5)
            dmn_log(d, "replay: step %lld at t=%lld gave %zu actions, %zu were recorded "
                       "(the engine is not deterministic, or the log was edited)",
                    (long long)step, (long long)t, d->acts.n, nrec);
        d->replay_mismatch++;
    }
    dmn_derive(d, t, d->evbuf, d->n_evbuf, &d->acts);
    d->started = 1;
    d->now = t;
    d->next_wake = d->acts.next_wake;
    d->step = step;
    d->steps_total++;
    return 0;
}

/* A pending (accepted, not fed) event back into the queue; a team
 * definition is decoded here, once. */
static int pending_load(void *ctx, int64_t step, tide_time_t t, const tide_store_event_t *ev,
                        size_t n, const tide_store_action_rec_t *rec, size_t nrec)
{
    (void)step;
    (void)t;
    (void)rec;
    (void)nrec;
    tide_daemon_t *d = ctx;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].ev.kind < 0 || ev[i].ev.kind > TIDE_STORE_KIND_LAST)
            continue;
        if (ev[i].ev.kind == TIDE_STORE_KIND_RL_POOL)
            dmn_rl_pool_restore(d, ev[i].payload); /* its holds when it is fed */
        dmn_evx_t x = {.job_id = ev[i].job_id, .service_name = ev[i].service_name,
                       .payload = ev[i].payload};
        if (ev[i].ev.kind == TIDE_EV_JOB_SUBMIT && ev[i].spec.id)
            x.spec = &ev[i].spec;
        tide_team_spec_t team;
        char *name = NULL;
        if (ev[i].ev.kind == TIDE_STORE_KIND_TEAM_SET && ev[i].payload) {
            tide_error_t err = {0};
            if (dmn_team_decode(ev[i].payload, &team, &name, &err) < 0)
                dmn_log(d, "team definition ignored: %s", err.msg);
            else
                x.team = &team;
        }
        dmn_devq_push(&d->pending, &ev[i].ev, ev[i].time_s, ev[i].seq, &x, "api");
        free(name);
    }
    return 0;
}

/* ------------------------------------------------------------- rebuild */

/* Replay the epoch (and load the pending events when pending is set); the
 * engine must then hold its invariants. */
static int replay_all(tide_daemon_t *d, int pending, tide_error_t *err)
{
    d->replay_mismatch = 0;
    d->notice_seq = 0; /* the replay hands out the same notice ids again */
    /* from the newest usable snapshot on, or the whole epoch */
    int64_t after = dmn_snapshot_restore(d, err);
    if (after < -1)
        return tide_err_prefix(err, "recovery: ");
    d->snap_restored = after;
    long before = d->steps_total;
    int rc = tide_store_replay_after(d->st, d->epoch, after, replay_step, d, err);
    d->replayed = d->steps_total - before;
    if (rc != 0) {
        if (rc > 0)
            tide_errf(err, TIDE_EIO, "replay: time went backwards in the event log");
        return tide_err_prefix(err, "recovery: ");
    }
    if (pending && tide_store_pending(d->st, pending_load, d, err) != 0)
        return tide_err_prefix(err, "recovery: ");
    int64_t last;
    tide_time_t lt;
    if (tide_store_last_step(d->st, &last, &lt, err) < 0)
        return -1;
    d->step = last;
    if (lt > d->now)
        d->now = lt;
    for (size_t i = 0; i < d->pending.n; i++)
        if (d->pending.v[i].t > d->now)
            d->now = d->pending.v[i].t;
    if (d->started) {
        tide_error_t ce = {0};
        if (tide_engine_check(d->e, &ce) < 0)
            return tide_errf(err, TIDE_ESTATE,
                             "recovery: the engine rebuilt from %s violates an invariant: %s "
                             "(refusing to run)",
                             d->db_path, ce.msg);
    }
    /* the jobs table matches the engine after a complete replay */
    for (int h = 0; h < tide_engine_jobs(d->e); h++) {
        tide_job_info_t ji;
        if (tide_engine_job(d->e, h, &ji) == 0)
            dmn_job(d, h)->db_state = ji.state;
    }
    return 0;
}

/* What the engine believes runs but the backend does not know: jobs expire,
 * replicas fail (loop events of the first step). */
void dmn_reconcile(tide_daemon_t *d, int *lost_jobs, int *lost_reps)
{
    *lost_jobs = *lost_reps = 0;
    for (int h = 0; d->started && h < tide_engine_jobs(d->e); h++) {
        tide_job_info_t ji;
        if (tide_engine_job(d->e, h, &ji) != 0 ||
            (ji.state != TIDE_JOB_RUNNING && ji.state != TIDE_JOB_RECLAIMING))
            continue;
        if (tide_backend_job_alive(d->be, h))
            continue;
        tide_event_t ev = dmn_blank_event(TIDE_EV_JOB_EXPIRED);
        ev.job = h;
        dmn_evx_t x = {.job_id = ji.spec->id};
        dmn_devq_push(&d->extra, &ev, d->now, 0, &x, "recovery");
        (*lost_jobs)++;
    }
    for (size_t r = 0; r < d->n_reps; r++) {
        if (d->reps[r].state == REP_NONE || tide_backend_replica_alive(d->be, (int32_t)r))
            continue;
        tide_event_t ev = dmn_blank_event(TIDE_EV_REPLICA_FAILED);
        ev.replica = (int32_t)r;
        ev.service = d->reps[r].service;
        dmn_evx_t x = {.service_name = dmn_service_name(d->e, ev.service)};
        dmn_devq_push(&d->extra, &ev, d->now, 0, &x, "recovery");
        (*lost_reps)++;
    }
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int dmn_rebuild(tide_daemon_t *d, tide_error_t *err)
{
    double t0 = mono_s();
    d->qc.steps = -1; /* the queue inspection GETs use is of the old engine (no reader now) */
    tide_backend_destroy(d->be);
    d->be = NULL;
    dmn_devq_clear(&d->pending);
    dmn_devq_clear(&d->extra);
    if (dmn_engine_build(d, err) < 0 || replay_all(d, 1, err) < 0)
        return -1;
    if (!(d->be = dmn_backend_create(d, err)))
        return -1;
    int lost_jobs, lost_reps;
    dmn_reconcile(d, &lost_jobs, &lost_reps);
    char from[96] = "";
    if (d->snap_restored >= 0)
        snprintf(from, sizeof from, " after the snapshot of step %lld",
                 (long long)d->snap_restored);
    if (d->started)
        dmn_log(d, "recovered epoch %lld from %s in %.3f s: replayed %ld steps%s; %d jobs, %zu "
                   "pending events; %d running jobs requeued (backend lost them), %d replicas "
                   "restarted%s",
                (long long)d->epoch, d->db_path, mono_s() - t0, d->replayed, from,
                tide_engine_jobs(d->e),
                d->pending.n, lost_jobs, lost_reps,
                d->replay_mismatch ? " (replay mismatches: see above)" : "");
    return 0;
}

int dmn_rewind(tide_daemon_t *d, tide_error_t *err)
{
    /* the live engine keeps its address (the backend borrows it): the
     * rebuilt state is swapped into it */
    tide_engine_t *live = d->e;
    d->e = NULL;
    d->qc.steps = -1; /* the queue inspection GETs use may be of the undone step */
    long steps = d->steps_total, mismatch = d->replay_mismatch;
    d->steps_total = 0;
    int rc = dmn_engine_build(d, err);
    if (rc == 0)
        rc = replay_all(d, 0, err);
    tide_engine_t *built = d->e;
    d->e = live;
    d->steps_total = steps;
    if (rc < 0) {
        tide_engine_destroy(built);
        d->replay_mismatch = mismatch;
        return tide_err_prefix(err, "rebuilding the engine after a failed step: ");
    }
    tide_engine_swap(live, built);
    tide_engine_destroy(built);
    d->rewind = 0;
    if (d->replay_mismatch)
        dmn_log(d, "rewind: %ld replay mismatches (see above)", d->replay_mismatch);
    return 0;
}
