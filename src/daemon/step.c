/* One step: the batch of due events fed to the engine, the step persisted in
 * one transaction (events, actions, job states, usage), the actions enacted
 * through the backend - in that order: a step the store refuses is undone
 * (the engine rebuilt from the store) and enacts nothing; and what the
 * daemon derives from the stream (notices, replica and node states), live
 * and in replay alike. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/internal.h"
#include "util/util.h"

#define MAX_PASSES 100000 /* steps at one instant before we call it a livelock */

/* -------------------------------------------------------------- derived */

static void notice_set(tide_daemon_t *d, const tide_action_t *a, tide_time_t t)
{
    djob_t *j = dmn_job(d, a->job);
    notice_t *n = &j->notice;
    n->id = ++d->notice_seq;
    n->kind = a->kind;
    n->reason = a->reason;
    n->at = t;
    n->deadline = a->kind == TIDE_ACT_JOB_CKPT ? a->deadline : t;
    n->prev_width = j->width;
    n->width = a->kind == TIDE_ACT_JOB_RESIZE ? a->width : j->width;
    n->active = 1;
    n->acked = 0;
}

static void notice_clear(tide_daemon_t *d, int32_t h)
{
    djob_t *j = dmn_job(d, h);
    j->notice.active = 0; /* keep the id: pollers compare it */
}

static void derive_event(tide_daemon_t *d, const tide_event_t *x)
{
    switch (x->kind) {
    case TIDE_EV_REPLICA_READY:
        if (x->replica >= 0 && dmn_rep(d, x->replica)->state == REP_WARM)
            dmn_rep(d, x->replica)->state = REP_UP;
        break;
    case TIDE_EV_REPLICA_FAILED:
        if (x->replica >= 0)
            dmn_rep(d, x->replica)->state = REP_NONE;
        break;
    case TIDE_EV_NODE_FAILED:
    case TIDE_EV_NODE_RECOVERED:
        if (x->node >= 0 && x->node < tide_cluster_nodes(d->cluster))
            d->node_up[x->node] = x->kind == TIDE_EV_NODE_RECOVERED ? 1
                                  : x->value == 1                   ? 2 /* unreachable */
                                                                    : 0;
        break;
    case TIDE_EV_CKPT_COMMITTED:
        /* a commit answers a checkpoint notice, and shows a resized job runs
         * on at its new width (whichever of its gangs reports it) */
        if (x->job >= 0 && (dmn_job(d, x->job)->notice.kind == TIDE_ACT_JOB_CKPT ||
                            dmn_job(d, x->job)->notice.kind == TIDE_ACT_JOB_RESIZE))
            notice_clear(d, x->job);
        break;
    case TIDE_EV_DEMAND:
        if (x->service >= 0 && (size_t)x->service < d->n_svcs)
            d->last_demand[x->service] = x->value;
        break;
    default:
        break;
    }
}

/* Returns 1 when the action is a notice. */
static int derive_action(tide_daemon_t *d, tide_time_t t, const tide_action_t *a)
{
    switch (a->kind) {
    case TIDE_ACT_JOB_START:
        notice_clear(d, a->job);
        dmn_job(d, a->job)->width = a->width;
        dmn_job(d, a->job)->ckpt_seen = 0; /* a new run: its restored step may be older */
        return 0;
    case TIDE_ACT_JOB_STOP:
        notice_clear(d, a->job);
        dmn_job(d, a->job)->width = 0;
        if (a->reason != TIDE_R_COMPLETE && a->reason != TIDE_R_CANCEL && a->reason >= 0 &&
            a->reason < TIDE_R_COUNT)
            d->preempt[a->reason]++;
        return 0;
    case TIDE_ACT_JOB_CKPT:
        notice_set(d, a, t);
        return 1;
    case TIDE_ACT_JOB_RESIZE:
        notice_set(d, a, t);
        dmn_job(d, a->job)->width = a->width;
        return 1;
    case TIDE_ACT_REPLICA_START: {
        drep_t *r = dmn_rep(d, a->replica);
        r->service = a->service;
        r->state = REP_WARM;
        r->rehearsal = a->reason == TIDE_R_REHEARSAL;
        return 0;
    }
    case TIDE_ACT_REPLICA_STOP:
        dmn_rep(d, a->replica)->state = REP_NONE;
        return 0;
    default:
        return 0;
    }
}

void dmn_derive(tide_daemon_t *d, tide_time_t t, const tide_event_t *ev, size_t n,
                const tide_actions_t *acts)
{
    int noticed = 0;
    for (size_t i = 0; i < n; i++)
        derive_event(d, &ev[i]);
    for (size_t i = 0; acts && i < acts->n; i++)
        noticed |= derive_action(d, t, &acts->v[i]);
    if (noticed)
        pthread_cond_broadcast(&d->notice_cv);
}

void dmn_resolve(const tide_daemon_t *d, tide_event_t *ev, const char *job_id)
{
    if (job_id && ev->kind != TIDE_EV_JOB_SUBMIT)
        ev->job = tide_engine_job_find(d->e, job_id);
}

/* One bound: handle h must be -1 or below n. */
static int handle_ok(int32_t h, long n) { return h == -1 || (h >= 0 && h < n); }

int dmn_event_check(const tide_daemon_t *d, const tide_event_t *ev, tide_error_t *err)
{
    const tide_engine_t *e = d->e;
    /* a job submitted in the same step has no handle yet: the engine sees to it */
    long jobs = ev->kind == TIDE_EV_JOB_SUBMIT ? INT32_MAX : tide_engine_jobs(e);
    if (!handle_ok(ev->job, jobs))
        return tide_errf(err, TIDE_EINVAL, "job handle %d unknown", (int)ev->job);
    if (!handle_ok(ev->replica, tide_engine_replicas(e)))
        return tide_errf(err, TIDE_EINVAL, "replica handle %d unknown", (int)ev->replica);
    if (!handle_ok(ev->service, tide_engine_services(e)))
        return tide_errf(err, TIDE_EINVAL, "service index %d unknown", (int)ev->service);
    if (!handle_ok(ev->node, tide_cluster_nodes(d->cluster)))
        return tide_errf(err, TIDE_EINVAL, "node %d unknown", (int)ev->node);
    if (!isfinite(ev->value))
        return tide_errf(err, TIDE_EINVAL, "value is not a finite number");
    if (ev->kind == TIDE_EV_DEMAND && !(ev->value >= 0 && ev->value <= TIDE_MAX_RPS))
        return tide_errf(err, TIDE_EINVAL, "demand %g is outside 0..%g rps", ev->value,
                         TIDE_MAX_RPS);
    return 0;
}

static void evbuf_push(tide_daemon_t *d, const tide_event_t *ev)
{
    TIDE_PUSH(d->evbuf, d->n_evbuf, d->cap_evbuf, *ev);
}

/* ------------------------------------------------------------- persist */

/* The job named by the step's i-th fed event (pass 0) or action (pass 1),
 * -1 none. */
static int32_t step_job(const tide_daemon_t *d, int pass, size_t i, const tide_event_t *fed)
{
    if (pass)
        return d->acts.v[i].job;
    if (fed[i].kind == TIDE_EV_JOB_SUBMIT && fed[i].job_spec)
        return tide_engine_job_find(d->e, fed[i].job_spec->id);
    return fed[i].job;
}

/* Write the state of every job the step names whose stored state differs
 * (write = 1), or note the states as stored (write = 0, after the commit). */
static int job_states(tide_daemon_t *d, tide_time_t t, const tide_event_t *fed, size_t n_fed,
                      int write, tide_error_t *err)
{
    for (int pass = 0; pass < 2; pass++) {
        size_t n = pass ? d->acts.n : n_fed;
        for (size_t i = 0; i < n; i++) {
            int32_t h = step_job(d, pass, i, fed);
            tide_job_info_t ji;
            if (h < 0 || tide_engine_job(d->e, h, &ji) != 0)
                continue;
            djob_t *j = dmn_job(d, h);
            if (!write)
                j->db_state = ji.state;
            else if (j->db_state != (int)ji.state &&
                     tide_store_job_set_state(d->st, ji.spec->id, tide_job_state_name(ji.state), t,
                                              err) < 0)
                return -1;
        }
    }
    return 0;
}

/* The step's rows: claimed pending events, new (loop) events, actions. */
static int step_rows(tide_daemon_t *d, int64_t step, tide_time_t t, int64_t upto_seq,
                     const size_t *extra_idx, size_t n_extra, tide_error_t *err)
{
    tide_store_t *st = d->st;
    if (tide_store_step_append(st, step, t, d->epoch, err) < 0)
        return -1;
    if (upto_seq > 0 && tide_store_events_claim_upto(st, step, upto_seq, err) < 0)
        return -1;
    for (size_t i = 0; i < n_extra; i++) {
        const dmn_ev_t *x = &d->extra.v[extra_idx[i]];
        tide_store_event_t se = {.step = step, .time_s = t, .ev = x->ev, .job_id = x->job_id,
                                 .service_name = x->service_name, .source = x->source,
                                 .payload = x->payload};
        if (!se.job_id && x->ev.job >= 0)
            se.job_id = dmn_job_id(d->e, x->ev.job);
        if (!se.service_name && x->ev.service >= 0)
            se.service_name = dmn_service_name(d->e, x->ev.service);
        if (tide_store_event_append(st, &se, err) < 0)
            return -1;
    }
    for (size_t i = 0; i < d->acts.n; i++) {
        const tide_action_t *a = &d->acts.v[i];
        const int32_t *g = a->n_gpus > 0 && a->gpu_off + (size_t)a->n_gpus <= d->acts.ngpus
                               ? d->acts.gpus + a->gpu_off
                               : NULL;
        if (tide_store_action_append(st, step, t, a, g, dmn_job_id(d->e, a->job),
                                     dmn_service_name(d->e, a->service), err) < 0)
            return -1;
    }
    return 0;
}

/* Persist one step inside the transaction step_at opened: step row,
 * claimed pending events, new events, actions, job states, usage; commit. */
static int persist_step(tide_daemon_t *d, int64_t step, tide_time_t t, int64_t upto_seq,
                        const size_t *extra_idx, size_t n_extra, tide_error_t *err)
{
    tide_store_t *st = d->st;
    /* the rows and the fsync: readers may take mu meanwhile (writers wait
     * for db_mu, so nothing the step refers to moves; the rows read only
     * jobs, names and usage, no cache a reader fills) */
    dmn_readers_in(d);
    if (d->on_persist)
        d->on_persist(d, d->on_persist_ctx);
    if (step_rows(d, step, t, upto_seq, extra_idx, n_extra, err) < 0 ||
        job_states(d, t, d->evbuf, d->n_evbuf, 1, err) < 0)
        goto fail;
    if (t >= d->next_usage) {
        usage_rows_t u = {0};
        dmn_usage_now(d, &u);
        int rc = tide_store_usage_put(st, t, u.v, u.n, err);
        dmn_usage_free(&u);
        if (rc < 0)
            goto fail;
    }
    int rc = tide_store_commit(st, err);
    dmn_readers_out(d);
    if (rc < 0)
        return -1;
    /* only now is the jobs table as the memo says */
    job_states(d, t, d->evbuf, d->n_evbuf, 0, NULL);
    if (t >= d->next_usage)
        d->next_usage = t - t % d->usage_interval_s + d->usage_interval_s;
    return 0;
fail:
    tide_store_rollback(st);
    dmn_readers_out(d);
    return -1;
}

/* The step could not be persisted after the engine took it: nothing was
 * enacted, so the engine goes back to what the store holds (the backend,
 * the queued and the pending events stay). */
static void step_undo(tide_daemon_t *d, const tide_error_t *why)
{
    d->rewind = 1;
    dmn_store_fault(d, why);
    tide_error_t rerr = {0};
    if (dmn_rewind(d, &rerr) < 0)
        dmn_log(d, "%s (tried again before the next step)", rerr.msg);
}

/* ---------------------------------------------------------------- step */

/* Is job_id submitted by one of the first k pending events? */
static int submitted_before(const devq_t *q, size_t k, const char *job_id)
{
    for (size_t i = 0; i < k; i++)
        if (q->v[i].ev.kind == TIDE_EV_JOB_SUBMIT && q->v[i].job_id &&
            !strcmp(q->v[i].job_id, job_id))
            return 1;
    return 0;
}

/* The batch of pending API events for a step at t: due by t; a batch ends
 * before an event about a job submitted earlier in the same batch (its
 * handle is only known after the step). */
static size_t pending_batch(const tide_daemon_t *d, tide_time_t t)
{
    size_t np = 0;
    for (; np < d->pending.n; np++) {
        const dmn_ev_t *p = &d->pending.v[np];
        if (p->t > t)
            break;
        if (p->job_id && p->ev.kind != TIDE_EV_JOB_SUBMIT &&
            tide_engine_job_find(d->e, p->job_id) < 0 &&
            submitted_before(&d->pending, np, p->job_id))
            break;
    }
    return np;
}

/* The step's events into d->evbuf: teams and power models first (applied to
 * the engine, as of the step at t), then the pending batch and the due loop
 * events in order. Returns the highest pending seq fed. */
static int64_t feed_build(tide_daemon_t *d, tide_time_t t, size_t np, const size_t *xi,
                          size_t nx)
{
    d->n_evbuf = 0;
    int64_t upto = 0;
    for (size_t i = 0; i < np; i++) {
        const dmn_ev_t *p = &d->pending.v[i];
        upto = p->seq;
        if (p->ev.kind == TIDE_STORE_KIND_TEAM_SET && p->has_tspec)
            dmn_team_apply(d, &p->tspec, p->payload);
        else if (p->ev.kind == TIDE_STORE_KIND_POWER_MODEL && p->payload)
            dmn_power_apply(d, p->payload, t);
        else if (p->ev.kind == TIDE_STORE_KIND_RL_POOL)
            dmn_rl_pool_hold(d, p->payload);
    }
    for (size_t i = 0; i < nx; i++) {
        const dmn_ev_t *p = &d->extra.v[xi[i]];
        if (p->ev.kind == TIDE_STORE_KIND_POWER_MODEL && p->payload)
            dmn_power_apply(d, p->payload, t);
    }
    for (size_t i = 0; i < np; i++) {
        dmn_ev_t *p = &d->pending.v[i];
        if (p->ev.kind < 0 || p->ev.kind >= TIDE_EV_KIND_COUNT)
            continue;
        tide_event_t x = p->ev;
        if (x.kind == TIDE_EV_JOB_SUBMIT)
            x.job_spec = &p->spec;
        dmn_resolve(d, &x, p->job_id);
        evbuf_push(d, &x);
    }
    for (size_t i = 0; i < nx; i++) {
        dmn_ev_t *p = &d->extra.v[xi[i]];
        if (p->ev.kind < 0 || p->ev.kind >= TIDE_EV_KIND_COUNT)
            continue;
        tide_event_t x = p->ev;
        dmn_resolve(d, &x, p->job_id);
        evbuf_push(d, &x);
    }
    return upto;
}

/* Take the fed loop events (indices xi, ascending) out of d->extra. */
static void extra_drop(tide_daemon_t *d, const size_t *xi, size_t nx)
{
    size_t w = 0, k = 0;
    for (size_t i = 0; i < d->extra.n; i++) {
        if (k < nx && xi[k] == i) {
            dmn_dev_free(&d->extra.v[i]);
            k++;
        } else {
            d->extra.v[w++] = d->extra.v[i];
        }
    }
    d->extra.n = w;
}

/* The step at t is committed: advance, drop what was fed, enact. */
static int step_done(tide_daemon_t *d, int64_t step, tide_time_t t, int64_t upto, size_t np,
                     const size_t *xi, size_t nx, tide_error_t *err)
{
    d->step = step;
    d->now = t;
    d->next_wake = d->acts.next_wake;
    d->steps_total++;
    if (upto > d->fed_seq)
        d->fed_seq = upto;
    extra_drop(d, xi, nx);
    dmn_derive(d, t, d->evbuf, d->n_evbuf, &d->acts);
    dmn_devq_drop_front(&d->pending, np);
    dmn_pipe_label_starts(d); /* replicas started now learn their model version */
    tide_error_t berr = {0};
    if (tide_backend_enact(d->be, t, &d->acts, dmn_work(d, &d->acts), &berr) > 0)
        dmn_log(d, "backend refused an action: %s", berr.msg);
    dmn_work_release(d, &d->acts);
    dmn_shadow_step(d, t, &d->acts);
    dmn_pipe_step(d, t);
    pthread_cond_broadcast(&d->step_cv);
    if (d->check) {
        tide_error_t ce = {0};
        if (tide_engine_check(d->e, &ce) < 0)
            return tide_errf(err, TIDE_ESTATE, "invariant violated after the step at t=%lld: %s",
                             (long long)t, ce.msg);
    }
    return 1;
}

/* One engine step at t with everything due. Returns 1 (stepped), 0 (nothing
 * to do) or -1. */
static int step_at(tide_daemon_t *d, tide_time_t t, int force, tide_error_t *err)
{
    size_t np = pending_batch(d, t);
    /* backend observations */
    d->n_evbuf = 0;
    tide_backend_poll_all(d->be, t, &d->evbuf, &d->n_evbuf, &d->cap_evbuf);
    for (size_t i = 0; i < d->n_evbuf; i++)
        dmn_devq_push(&d->extra, &d->evbuf[i], t, 0, NULL, "backend");
    /* loop events due */
    size_t *xi = tide_xmalloc((d->extra.n ? d->extra.n : 1) * sizeof *xi);
    size_t nx = 0;
    for (size_t i = 0; i < d->extra.n; i++)
        if (d->extra.v[i].t <= t)
            xi[nx++] = i;
    if (np == 0 && nx == 0 && !force && d->started && t < d->next_wake) {
        free(xi);
        return 0;
    }
    /* the write lock first: a store that cannot even begin leaves the
     * engine untouched */
    tide_error_t perr = {0};
    if (tide_store_begin(d->st, &perr) < 0) {
        free(xi);
        dmn_store_fault(d, &perr);
        if (err)
            *err = perr;
        return -1;
    }
    /* the state after the previous step, in this step's transaction */
    if (dmn_snapshot_due(d) && dmn_snapshot_write(d, &perr) < 0) {
        free(xi);
        tide_store_rollback(d->st);
        dmn_store_fault(d, &perr);
        if (err)
            *err = perr;
        return -1;
    }
    int64_t upto = feed_build(d, t, np, xi, nx);
    tide_error_t serr = {0};
    if (tide_engine_step(d->e, t, d->evbuf, d->n_evbuf, &d->acts, &serr) != 0) {
        d->step_errors++;
        dmn_log(d, "step at t=%lld: an event was rejected: %s", (long long)t, serr.msg);
    }
    d->started = 1;
    int64_t step = d->step + 1;
    if (persist_step(d, step, t, upto, xi, nx, &perr) < 0) {
        free(xi);
        if (err)
            *err = perr;
        step_undo(d, &perr);
        return -1;
    }
    int rc = step_done(d, step, t, upto, np, xi, nx, err);
    free(xi);
    return rc;
}

/* Before stepping: a lost store stays lost; an engine ahead of the store is
 * rebuilt; a degraded store must take a write first. 0 or -1 with err. */
static int pump_ready(tide_daemon_t *d, tide_error_t *err)
{
    if (d->lost)
        return tide_errf(err, TIDE_EIO, "%s", d->degraded_why);
    if (d->rewind && dmn_rewind(d, err) < 0)
        return -1;
    if (d->degraded && dmn_store_probe(d, err) < 0) {
        d->store_retries++;
        return -1;
    }
    return 0;
}

int dmn_pump(tide_daemon_t *d, tide_error_t *err)
{
    tide_time_t target = dmn_clock_now(d);
    int steps = 0;
    tide_time_t last_t = -1;
    long same_t = 0;
    if (pump_ready(d, err) < 0)
        return -1;
    dmn_rehearse_due(d, target);
    for (;;) {
        if (d->failed)
            return tide_errf(err, TIDE_EIO, "the daemon stopped after a fatal error");
        tide_time_t t = target;
        tide_time_t tb = tide_backend_next_event(d->be);
        if (tb < t)
            t = tb;
        if (d->started && d->next_wake < t)
            t = d->next_wake;
        if (t < d->now)
            t = d->now;
        int force = !d->started || t >= d->next_wake || tb <= t;
        int rc = step_at(d, t, force, err);
        if (rc < 0)
            return -1;
        if (rc == 0) {
            if (t >= target)
                break;
            continue; /* cannot happen: force was set for t < target */
        }
        steps++;
        if (t == last_t) {
            if (++same_t > MAX_PASSES)
                return tide_errf(err, TIDE_ESTATE, "no progress at t=%lld (livelock)", (long long)t);
        } else {
            last_t = t;
            same_t = 0;
        }
    }
    if (d->degraded)
        dmn_store_ok(d);
    return steps;
}

int tide_daemon_pump(tide_daemon_t *d, tide_error_t *err)
{
    tide_daemon_lock(d);
    int rc = dmn_pump(d, err);
    tide_daemon_unlock(d);
    return rc;
}
