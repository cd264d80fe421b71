/* The simulated world: a min-heap of timed entries (time, seq) over jobs and
 * replicas. Timer entries carry the job's generation and are dropped when it
 * has changed (resize, stop, restart); notification entries (events decided
 * in tide_world_apply but delivered by tide_world_pop) carry the job's run
 * number and are dropped when the job was stopped or restarted since. */
#include "sim/world.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

enum wkind {
    W_RESTORE_DONE = 0, /* timer: restoring -> training */
    W_CKPT_START,       /* timer: training -> checkpointing (periodic) */
    W_CKPT_DONE,        /* timer: checkpoint committed, back to training */
    W_FINISH,           /* timer: all work done */
    W_NOTE_PHASE,       /* notification: EV_JOB_PHASE decided in apply */
    W_NOTE_COMMIT,      /* notification: EV_CKPT_COMMITTED decided in apply */
    W_REPLICA_READY,    /* replica warm */
};

typedef struct wentry {
    tide_time_t t;
    uint64_t seq;
    int kind;
    int32_t id;    /* job or replica handle */
    uint32_t gen;  /* job generation (timers), run (notes) or replica generation */
    int phase;     /* notes */
    int32_t aux;   /* service of a replica */
    double value;  /* notes */
} wentry_t;

typedef struct wjob {
    int seen;
    int active;
    int phase;
    int width, W;               /* current and full data-parallel width */
    double progress, committed; /* full-width seconds */
    double ckpt_value;          /* progress at the start of the pending checkpoint */
    tide_time_t t_last;         /* progress and train_s are as of this time */
    tide_time_t train_s;        /* training time since (re)start or last commit */
    tide_time_t phase_end;      /* end of RESTORING / CHECKPOINTING */
    uint32_t gen, run;
    /* copied from the spec at start (engine pointers may move) */
    tide_time_t duration_s, ckpt_interval_s, ckpt_s, restore_s;
} wjob_t;

struct tide_world {
    const tide_engine_t *e;
    wentry_t *heap;
    size_t n, cap;
    uint64_t seq;
    wjob_t *jobs;
    size_t njobs;
    uint32_t *rgen; /* per replica handle */
    size_t nrep;
};

/* ------------------------------------------------------------------ heap */

static int before(const wentry_t *a, const wentry_t *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void heap_push(tide_world_t *w, wentry_t x)
{
    x.seq = w->seq++;
    tide_grow((void **)&w->heap, &w->cap, w->n + 1, sizeof *w->heap);
    size_t i = w->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(&x, &w->heap[p]))
            break;
        w->heap[i] = w->heap[p];
        i = p;
    }
    w->heap[i] = x;
}

static wentry_t heap_pop(tide_world_t *w)
{
    wentry_t top = w->heap[0];
    wentry_t last = w->heap[--w->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const wentry_t *best = &last;
        if (l < w->n && before(&w->heap[l], best)) {
            m = l;
            best = &w->heap[l];
        }
        if (r < w->n && before(&w->heap[r], best))
            m = r;
        if (m == i)
            break;
        w->heap[i] = w->heap[m];
        i = m;
    }
    if (w->n > 0)
        w->heap[i] = last;
    return top;
}

/* ------------------------------------------------------------ job state */

static wjob_t *job_get(tide_world_t *w, int32_t job)
{
    if (job < 0)
        return NULL;
    if ((size_t)job >= w->njobs) {
        size_t n = w->njobs ? w->njobs : 16;
        while (n <= (size_t)job)
            n *= 2;
        w->jobs = tide_xrealloc(w->jobs, n * sizeof *w->jobs);
        memset(w->jobs + w->njobs, 0, (n - w->njobs) * sizeof *w->jobs);
        w->njobs = n;
    }
    return &w->jobs[job];
}

static uint32_t *rep_gen(tide_world_t *w, int32_t rep)
{
    if (rep < 0)
        return NULL;
    if ((size_t)rep >= w->nrep) {
        size_t n = w->nrep ? w->nrep : 16;
        while (n <= (size_t)rep)
            n *= 2;
        w->rgen = tide_xrealloc(w->rgen, n * sizeof *w->rgen);
        memset(w->rgen + w->nrep, 0, (n - w->nrep) * sizeof *w->rgen);
        w->nrep = n;
    }
    return &w->rgen[rep];
}

/* Bring a training job's progress and training time up to `now`. */
static void job_advance(wjob_t *j, tide_time_t now)
{
    if (now <= j->t_last) {
        return;
    }
    if (j->phase == TIDE_PHASE_TRAINING) {
        tide_time_t dt = now - j->t_last;
        if (j->width > 0 && j->W > 0)
            j->progress += (double)dt * j->width / j->W;
        double dur = (double)j->duration_s;
        if (j->progress > dur)
            j->progress = dur;
        j->train_s += dt;
    }
    j->t_last = now;
}

/* Drop the job's pending timers and schedule the next one from its state. */
static void job_schedule(tide_world_t *w, int32_t id, wjob_t *j)
{
    j->gen++;
    wentry_t x = {.id = id, .gen = j->gen};
    switch (j->phase) {
    case TIDE_PHASE_RESTORING:
        x.kind = W_RESTORE_DONE;
        x.t = j->phase_end;
        break;
    case TIDE_PHASE_CHECKPOINTING:
        x.kind = W_CKPT_DONE;
        x.t = j->phase_end;
        break;
    default: {
        tide_time_t ckpt_at = TIDE_TIME_NEVER;
        if (j->ckpt_interval_s > 0)
            ckpt_at = j->t_last + TIDE_MAX(j->ckpt_interval_s - j->train_s, 0);
        double rem = (double)j->duration_s - j->progress;
        if (rem < 0)
            rem = 0;
        double fin = INFINITY;
        if (j->width > 0 && j->W > 0)
            fin = (double)j->t_last + rem * j->W / j->width;
        if (fin <= (double)ckpt_at && fin < 9.0e18) {
            x.kind = W_FINISH;
            /* a hair of slack so that 3600.0000000001 still finishes at 3600 */
            x.t = (tide_time_t)ceil(fin - 1e-6);
            if (x.t < j->t_last)
                x.t = j->t_last;
        } else if (ckpt_at != TIDE_TIME_NEVER) {
            x.kind = W_CKPT_START;
            x.t = ckpt_at;
        } else {
            return; /* width 0 and no checkpoints: nothing will happen */
        }
        break;
    }
    }
    heap_push(w, x);
}

static void note(tide_world_t *w, tide_time_t now, int32_t id, const wjob_t *j, int kind,
                 int phase, double value)
{
    heap_push(w, (wentry_t){.t = now, .kind = kind, .id = id, .gen = j->run, .phase = phase,
                            .value = value});
}

/* Training -> checkpointing at time t (progress already advanced to t). */
static void ckpt_begin(wjob_t *j, tide_time_t t)
{
    j->phase = TIDE_PHASE_CHECKPOINTING;
    j->ckpt_value = j->progress;
    j->phase_end = t + j->ckpt_s;
}

/* ----------------------------------------------------------------- actions */

static void act_job_start(tide_world_t *w, tide_time_t now, const tide_action_t *a)
{
    tide_job_info_t info;
    if (tide_engine_job(w->e, a->job, &info) != 0 || !info.spec)
        return;
    wjob_t *j = job_get(w, a->job);
    if (!j)
        return;
    j->seen = 1;
    j->active = 1;
    j->run++;
    j->duration_s = info.spec->duration_s;
    j->ckpt_interval_s = info.spec->ckpt_interval_s;
    j->ckpt_s = info.spec->ckpt_s;
    j->restore_s = info.spec->restore_s;
    j->W = info.dp_max > 0 ? info.dp_max : 1;
    j->width = a->width;
    j->progress = j->committed;
    j->t_last = now;
    j->train_s = 0;
    if (j->committed > 0) {
        j->phase = TIDE_PHASE_RESTORING;
        j->phase_end = now + j->restore_s;
    } else {
        j->phase = TIDE_PHASE_TRAINING;
    }
    job_schedule(w, a->job, j);
}

static wjob_t *active_job(tide_world_t *w, int32_t job)
{
    if (job < 0 || (size_t)job >= w->njobs || !w->jobs[job].active)
        return NULL;
    return &w->jobs[job];
}

static void act_job_ckpt(tide_world_t *w, tide_time_t now, const tide_action_t *a)
{
    wjob_t *j = active_job(w, a->job);
    if (!j)
        return;
    switch (j->phase) {
    case TIDE_PHASE_TRAINING:
        job_advance(j, now);
        ckpt_begin(j, now);
        note(w, now, a->job, j, W_NOTE_PHASE, TIDE_PHASE_CHECKPOINTING, j->progress);
        job_schedule(w, a->job, j);
        break;
    case TIDE_PHASE_RESTORING:
        note(w, now, a->job, j, W_NOTE_COMMIT, 0, j->committed);
        break;
    default: /* checkpointing: the pending commit serves */
        break;
    }
}

static void act_job_resize(tide_world_t *w, tide_time_t now, const tide_action_t *a)
{
    wjob_t *j = active_job(w, a->job);
    if (!j)
        return;
    job_advance(j, now);
    j->width = a->width;
    job_schedule(w, a->job, j);
}

static void act_job_stop(tide_world_t *w, tide_time_t now, const tide_action_t *a)
{
    (void)now;
    wjob_t *j = active_job(w, a->job);
    if (!j)
        return;
    j->active = 0;
    j->progress = j->committed;
    j->gen++;
    j->run++;
}

static void act_replica_start(tide_world_t *w, tide_time_t now, const tide_action_t *a)
{
    const tide_service_spec_t *s = tide_engine_service(w->e, a->service);
    uint32_t *g = rep_gen(w, a->replica);
    if (!s || !g)
        return;
    (*g)++;
    heap_push(w, (wentry_t){.t = now + TIDE_MAX(s->warmup_s, 0), .kind = W_REPLICA_READY,
                            .id = a->replica, .gen = *g, .aux = a->service});
}

static void act_replica_stop(tide_world_t *w, tide_time_t now, const tide_action_t *a)
{
    (void)now;
    uint32_t *g = rep_gen(w, a->replica);
    if (g)
        (*g)++;
}

typedef void (*act_fn)(tide_world_t *w, tide_time_t now, const tide_action_t *a);

static const act_fn act_table[TIDE_ACT_KIND_COUNT] = {
    [TIDE_ACT_JOB_START] = act_job_start,
    [TIDE_ACT_JOB_CKPT] = act_job_ckpt,
    [TIDE_ACT_JOB_RESIZE] = act_job_resize,
    [TIDE_ACT_JOB_STOP] = act_job_stop,
    [TIDE_ACT_REPLICA_START] = act_replica_start,
    [TIDE_ACT_REPLICA_STOP] = act_replica_stop,
    /* leases: nothing to enact */
};

/* ------------------------------------------------------------- delivery */

/* Is the entry still meaningful? */
static int live(const tide_world_t *w, const wentry_t *x)
{
    if (x->kind == W_REPLICA_READY)
        return (size_t)x->id < w->nrep && w->rgen[x->id] == x->gen;
    if (x->id < 0 || (size_t)x->id >= w->njobs)
        return 0;
    const wjob_t *j = &w->jobs[x->id];
    if (!j->active)
        return 0;
    if (x->kind == W_NOTE_PHASE || x->kind == W_NOTE_COMMIT)
        return j->run == x->gen;
    return j->gen == x->gen;
}

static void purge_top(tide_world_t *w)
{
    while (w->n > 0 && !live(w, &w->heap[0]))
        (void)heap_pop(w);
}

/* Carry out a due entry; fill ev. */
static void fire(tide_world_t *w, const wentry_t *x, tide_event_t *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->job = -1;
    ev->service = -1;
    ev->replica = -1;
    ev->node = -1;
    if (x->kind == W_REPLICA_READY) {
        ev->kind = TIDE_EV_REPLICA_READY;
        ev->replica = x->id;
        ev->service = x->aux;
        return;
    }
    wjob_t *j = &w->jobs[x->id];
    ev->job = x->id;
    switch (x->kind) {
    case W_NOTE_PHASE:
        ev->kind = TIDE_EV_JOB_PHASE;
        ev->phase = x->phase;
        ev->value = x->value;
        break;
    case W_NOTE_COMMIT:
        ev->kind = TIDE_EV_CKPT_COMMITTED;
        ev->value = x->value;
        break;
    case W_RESTORE_DONE:
        j->phase = TIDE_PHASE_TRAINING;
        j->t_last = x->t;
        j->train_s = 0;
        ev->kind = TIDE_EV_JOB_PHASE;
        ev->phase = TIDE_PHASE_TRAINING;
        ev->value = j->progress;
        job_schedule(w, x->id, j);
        break;
    case W_CKPT_START:
        job_advance(j, x->t);
        ckpt_begin(j, x->t);
        ev->kind = TIDE_EV_JOB_PHASE;
        ev->phase = TIDE_PHASE_CHECKPOINTING;
        ev->value = j->progress;
        job_schedule(w, x->id, j);
        break;
    case W_CKPT_DONE:
        j->committed = j->ckpt_value;
        j->phase = TIDE_PHASE_TRAINING;
        j->t_last = x->t;
        j->train_s = 0;
        ev->kind = TIDE_EV_CKPT_COMMITTED;
        ev->value = j->ckpt_value;
        job_schedule(w, x->id, j);
        break;
    case W_FINISH:
        j->progress = (double)j->duration_s;
        j->t_last = x->t;
        j->active = 0;
        j->gen++;
        j->run++;
        ev->kind = TIDE_EV_JOB_FINISHED;
        ev->value = j->progress;
        break;
    default:
        break;
    }
}

/* ------------------------------------------------------------------- API */

tide_world_t *tide_world_create(const tide_engine_t *e)
{
    tide_world_t *w = tide_xcalloc(1, sizeof *w);
    w->e = e;
    return w;
}

void tide_world_destroy(tide_world_t *w)
{
    if (!w)
        return;
    free(w->heap);
    free(w->jobs);
    free(w->rgen);
    free(w);
}

void tide_world_apply(tide_world_t *w, tide_time_t now, const tide_actions_t *acts)
{
    for (size_t i = 0; acts && i < acts->n; i++) {
        const tide_action_t *a = &acts->v[i];
        if (a->kind >= 0 && a->kind < TIDE_ACT_KIND_COUNT && act_table[a->kind])
            act_table[a->kind](w, now, a);
    }
    purge_top(w);
}

tide_time_t tide_world_next(const tide_world_t *w)
{
    return w->n > 0 ? w->heap[0].t : TIDE_TIME_NEVER;
}

size_t tide_world_pop(tide_world_t *w, tide_time_t now, tide_event_t *out, size_t max)
{
    size_t k = 0;
    purge_top(w);
    while (k < max && w->n > 0 && w->heap[0].t <= now) {
        wentry_t x = heap_pop(w);
        fire(w, &x, &out[k++]);
        purge_top(w);
    }
    return k;
}

int tide_world_job(const tide_world_t *w, int32_t job, tide_world_job_t *out)
{
    if (job < 0 || (size_t)job >= w->njobs || !w->jobs[job].seen)
        return -1;
    const wjob_t *j = &w->jobs[job];
    out->active = j->active;
    out->phase = j->phase;
    out->width = j->width;
    out->progress = j->progress;
    out->committed = j->committed;
    return 0;
}
