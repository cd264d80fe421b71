/* Accepted events: API events are committed as pending rows, then queued for
 * the loop, which feeds them to the engine at its next step; loop events
 * (backend polls, pulled demand, recovery) wait in their own queue. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/internal.h"
#include "util/util.h"

void dmn_dev_free(dmn_ev_t *v)
{
    free(v->job_id);
    free(v->service_name);
    free(v->payload);
    free(v->team);
    memset(v, 0, sizeof *v);
}

void dmn_devq_clear(devq_t *q)
{
    for (size_t i = 0; i < q->n; i++)
        dmn_dev_free(&q->v[i]);
    q->n = 0;
}

/* Submits point their job_spec at their own spec: re-link after moving. */
static void devq_relink(devq_t *q)
{
    for (size_t i = 0; i < q->n; i++)
        if (q->v[i].ev.kind == TIDE_EV_JOB_SUBMIT)
            q->v[i].ev.job_spec = &q->v[i].spec;
}

void dmn_devq_drop_front(devq_t *q, size_t k)
{
    for (size_t i = 0; i < k; i++)
        dmn_dev_free(&q->v[i]);
    if (k == 0)
        return;
    if (q->n > k)
        memmove(q->v, q->v + k, (q->n - k) * sizeof *q->v);
    q->n -= k;
    devq_relink(q);
}

static char *dup_or_null(const char *s) { return s ? tide_xstrdup(s) : NULL; }

dmn_ev_t *dmn_devq_push(devq_t *q, const tide_event_t *ev, tide_time_t t, int64_t seq,
                        const dmn_evx_t *x, const char *source)
{
    static const dmn_evx_t none = {0};
    if (!x)
        x = &none;
    tide_grow((void **)&q->v, &q->cap, q->n + 1, sizeof *q->v);
    devq_relink(q); /* growing moved the array */
    dmn_ev_t *v = &q->v[q->n++];
    memset(v, 0, sizeof *v);
    v->ev = *ev;
    v->ev.job_spec = NULL;
    v->t = t;
    v->seq = seq;
    v->job_id = dup_or_null(x->job_id);
    v->service_name = dup_or_null(x->service_name);
    v->payload = dup_or_null(x->payload);
    v->source = source;
    if (x->spec && ev->kind == TIDE_EV_JOB_SUBMIT) {
        v->spec = *x->spec;
        v->team = tide_xstrdup(x->spec->team ? x->spec->team : "");
        v->spec.team = v->team;
        if (!v->job_id)
            v->job_id = tide_xstrdup(x->spec->id ? x->spec->id : "");
        v->spec.id = v->job_id;
        v->ev.job_spec = &v->spec;
    } else if (x->team && ev->kind == TIDE_STORE_KIND_TEAM_SET) {
        v->tspec = *x->team;
        v->team = tide_xstrdup(x->team->name ? x->team->name : "");
        v->tspec.name = v->team;
        v->has_tspec = 1;
    }
    return v;
}

int dmn_pending_append(tide_daemon_t *d, const tide_event_t *ev, const dmn_evx_t *x,
                       int64_t *seq, tide_time_t *t, tide_error_t *err)
{
    *t = dmn_clock_now(d);
    tide_store_event_t se = {.step = 0, .time_s = *t, .ev = *ev, .job_id = x ? x->job_id : NULL,
                             .service_name = x ? x->service_name : NULL, .source = "api",
                             .payload = x ? x->payload : NULL};
    if (tide_store_event_append(d->st, &se, err) < 0)
        return -1;
    *seq = se.seq;
    return 0;
}

void dmn_queue(tide_daemon_t *d, const tide_event_t *ev, const dmn_evx_t *x, int64_t seq,
               tide_time_t t)
{
    dmn_devq_push(&d->pending, ev, t, seq, x, "api");
    dmn_kick(d);
}

int64_t dmn_accept(tide_daemon_t *d, const tide_event_t *ev, const dmn_evx_t *x,
                   tide_error_t *err)
{
    int64_t seq;
    tide_time_t t;
    if (tide_store_begin(d->st, err) < 0)
        return -1;
    if (dmn_pending_append(d, ev, x, &seq, &t, err) < 0) {
        tide_store_rollback(d->st);
        return -1;
    }
    if (tide_store_commit(d->st, err) < 0)
        return -1;
    dmn_queue(d, ev, x, seq, t);
    return seq;
}

int dmn_wait_fed(tide_daemon_t *d, int64_t seq, double timeout_s)
{
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    double end = (double)dl.tv_sec + dl.tv_nsec * 1e-9 + timeout_s;
    while (d->fed_seq < seq && d->loop_running && !d->stop) {
        dl.tv_sec = (time_t)end;
        dl.tv_nsec = (long)((end - (double)dl.tv_sec) * 1e9);
        if (pthread_cond_timedwait(&d->step_cv, &d->mu, &dl) == ETIMEDOUT)
            break;
    }
    return d->fed_seq >= seq;
}

/* ----------------------------------------------------------- group commit */

int dmn_op_event(tide_daemon_t *d, dmn_op_t *op, const tide_event_t *ev, const dmn_evx_t *x,
                 tide_error_t *err)
{
    if (op->n_ev >= 2)
        return tide_errf(err, TIDE_EIO, "a write carries at most two events");
    int i = op->n_ev;
    if (dmn_pending_append(d, ev, x, &op->seq[i], &op->t[i], err) < 0)
        return -1;
    op->ev[i] = *ev;
    op->x[i] = x ? *x : (dmn_evx_t){0};
    op->n_ev++;
    return 0;
}

void dmn_readers_in(tide_daemon_t *d)
{
    if (d->rd)
        pthread_mutex_unlock(&d->mu);
}

void dmn_readers_out(tide_daemon_t *d)
{
    if (d->rd)
        pthread_mutex_lock(&d->mu);
}

int dmn_store_commit(tide_daemon_t *d, tide_error_t *err)
{
    dmn_readers_in(d);
    int rc = tide_store_commit(d->st, err);
    dmn_readers_out(d);
    return rc;
}

/* A rejection of one write (the batch goes on), not a failure of the batch. */
static int op_rejected(int code)
{
    return code == TIDE_EEXIST || code == TIDE_ESTATE || code == TIDE_ENOENT ||
           code == TIDE_EINVAL;
}

/* One write of the batch: its apply, then (accepted) its audit row. 0, or
 * -1 when the batch fails (*err); a rejection only sets op->rc. */
static int op_apply(tide_daemon_t *d, dmn_op_t *op, tide_error_t *err)
{
    tide_error_t oe = {0};
    int rc = op->apply(d, op, &oe);
    int rejected = rc < 0 && op_rejected(oe.code);
    if (rc == 0 && op->audit_req && dmn_audit_op(d, op, &oe) < 0)
        rc = -1; /* a store write: the batch fails */
    if (rc == 0)
        return 0;
    op->rc = -1;
    op->err = oe;
    if (rejected)
        return 0;
    *err = oe;
    return -1;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The leader: one transaction for every write of the batch and the audit
 * rows of those accepted, the events queued only once it committed. Takes
 * db_mu, then mu. Returns the seconds from holding both to the commit's
 * end (not the wait for a step holding them). */
static double batch_run(tide_daemon_t *d, dmn_op_t *ops)
{
    pthread_mutex_lock(&d->db_mu);
    pthread_mutex_lock(&d->mu);
    double t0 = mono_s();
    tide_error_t err = {0};
    int ok = tide_store_begin(d->st, &err) == 0;
    long n = 0;
    d->gc_applying = ops;
    for (dmn_op_t *op = ops; op; op = op->next, n++) {
        op->n_ev = 0;
        op->rc = 0;
        op->audited = 0;
        if (ok && op_apply(d, op, &err) < 0)
            ok = 0;
    }
    d->gc_applying = NULL;
    if (ok)
        ok = dmn_store_commit(d, &err) == 0; /* rolls back when it fails */
    else
        tide_store_rollback(d->st);
    for (dmn_op_t *op = ops; op; op = op->next) {
        if (!ok) {
            op->rc = -1;
            op->err = err;
            continue;
        }
        op->audited = op->rc == 0 && op->audit_req;
        for (int i = 0; op->rc == 0 && i < op->n_ev; i++)
            dmn_queue(d, &op->ev[i], &op->x[i], op->seq[i], op->t[i]);
    }
    if (ok) {
        d->gc_batches++;
        d->gc_writes += n;
    }
    double took = mono_s() - t0;
    pthread_mutex_unlock(&d->mu);
    pthread_mutex_unlock(&d->db_mu);
    return took;
}

/* A leader about to take the batch (gc_mu held, gc_busy set): when fewer
 * writers are queued than were active around the last batch, wait for the
 * missing ones, at most one batch's duration. Closed-loop clients answered
 * by the last commit come back within a round trip: without the wait, the
 * first of them to return would lead a batch alone and the writers would
 * split into two groups taking turns, each batch half full. The wait costs
 * at most one batch's time (its apply and commit, not a wait for a step
 * holding the write connection), once: expect follows what arrives. */
static void gc_gather(tide_daemon_t *d)
{
    if (d->gc_queued >= d->gc_expect || d->gc_batch_s <= 0)
        return;
    double end = mono_s() + d->gc_batch_s;
    __atomic_fetch_add(&d->gc_gathers, 1, __ATOMIC_RELAXED); /* /metrics reads it without gc_mu */
    pthread_cond_broadcast(&d->gc_cv); /* observers (a test) */
    while (d->gc_queued < d->gc_expect && !d->stop) {
        struct timespec dl;
        dl.tv_sec = (time_t)end;
        dl.tv_nsec = (long)((end - (double)dl.tv_sec) * 1e9);
        if (pthread_cond_timedwait(&d->gc_cv, &d->gc_mu, &dl) == ETIMEDOUT)
            break;
    }
}

/* Lead one batch (gc_mu held on entry and return, released meanwhile):
 * gather, take every write queued, commit, answer them all. */
static void gc_lead(tide_daemon_t *d, const dmn_op_t *self)
{
    d->gc_busy = 1;
    gc_gather(d);
    dmn_op_t *batch = d->gc_head;
    long n = d->gc_queued;
    d->gc_head = NULL;
    d->gc_tail = &d->gc_head;
    d->gc_queued = 0;
    pthread_mutex_unlock(&d->gc_mu);
    double took = batch_run(d, batch);
    pthread_mutex_lock(&d->gc_mu);
    d->gc_batch_s = d->gc_batch_s > 0 ? 0.875 * d->gc_batch_s + 0.125 * took : took;
    d->gc_expect = n + d->gc_queued; /* this batch's writers and those that queued behind it */
    for (dmn_op_t *o = batch, *next; o; o = next) {
        next = o->next; /* o may be gone once done is seen (after gc_mu) */
        o->done = 1;
        if (o != self)
            pthread_cond_signal(&o->cv);
    }
    d->gc_busy = 0;
    if (d->gc_head) /* the first one queued meanwhile leads the next batch */
        pthread_cond_signal(&d->gc_head->cv);
}

/* Each waiting writer sleeps on its own condition variable: a finished
 * batch wakes its own writers and the next leader, not every writer queued
 * (with a hundred requests in flight, one broadcast woke them all to
 * contend for gc_mu). */
int dmn_commit(tide_daemon_t *d, dmn_op_t *op)
{
    op->done = 0;
    op->next = NULL;
    pthread_cond_init(&op->cv, NULL);
    pthread_mutex_lock(&d->gc_mu);
    if (!d->gc_tail)
        d->gc_tail = &d->gc_head;
    *d->gc_tail = op;
    d->gc_tail = &op->next;
    d->gc_queued++;
    pthread_cond_broadcast(&d->gc_cv); /* a gathering leader, a test */
    while (!op->done) {
        if (d->gc_busy)
            pthread_cond_wait(&op->cv, &d->gc_mu);
        else
            gc_lead(d, op); /* everything queued so far (op among it) is this batch */
    }
    pthread_mutex_unlock(&d->gc_mu);
    pthread_cond_destroy(&op->cv);
    dmn_audit_committed(op);
    return op->rc;
}
