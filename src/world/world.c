/* The simulated world: a min-heap of timed entries (time, seq) over jobs and
 * replicas. Timer entries carry the job's generation and are dropped when it
 * has changed (resize, stop, restart); notification entries (events decided
 * in tide_world_apply but delivered by tide_world_pop) carry the job's run
 * number and are dropped when the job was stopped or restarted since.
 *
 * Faults (sim/inject.h): an optional shared storage whose transfers
 * (checkpoint writes, weight loads) share the bandwidth max-min fairly, lease
 * deadlines enforced while the control plane is down, rank failures and node
 * deaths. Without them nothing here changes the timings above. */
#include "world/world.h"

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
    W_XFER_DONE,        /* storage: a transfer finished (no event) */
    W_LEASE_EXPIRE,     /* ctl down: the backend ends the job at its lease deadline */
    W_NOTE_RANK,        /* notification: EV_RANK_FAILED (the job is already gone) */
    W_NOTE_LAST,        /* notification: EV_JOB_PHASE, the last phase and progress of a
                           job that ended while tide was down (the job is gone) */
    W_NOTE_EXPIRED,     /* notification: EV_JOB_EXPIRED (the job is gone) */
};

enum { XF_CKPT = 0, XF_LOAD, XF_EXT /* a driver's (tide_world_xfer_begin) */ };
/* Priority classes of the QoS (tide_world_set_qos): weight loads, checkpoints
 * the engine asked for (reclaims, preemptions), periodic checkpoints. Their
 * values are also the tide_world_xfer_kind_t of their transfer times. */
enum { XC_LOAD = 0, XC_CKPT_ASKED, XC_CKPT_PERIODIC, XC_COUNT };

/* What a transfer puts on racks with an uplink: rate x frac[i] on rack[i]. */
typedef struct wspan {
    int n, cap;
    int *rack;
    double *frac;
} wspan_t;

/* A rack's uplink: its budget, figures and a reshare's scratch. */
typedef struct wdom {
    double up; /* GB/s, 0 = unlimited */
    double dem_now, dem_peak, dem_gb, sat_s, moved_gb, rate_peak, ckpt_rate_peak;
    long started;
    int active;
    double used, ckpt_used; /* scratch: GB/s given (all, checkpoints) */
    double res, wsum;       /* scratch of fill_domains: room left, live weight */
} wdom_t;

/* A driver transfer that finished (tide_world_xfer_finished). */
typedef struct wdone {
    uint64_t tag;
    tide_time_t at;
} wdone_t;

/* 40 bytes: the heap moves them around, the smaller the better. */
typedef struct wentry {
    tide_time_t t;
    uint64_t seq;
    double value;  /* notes */
    int32_t id;    /* job or replica handle, or transfer slot */
    uint32_t gen;  /* job generation (timers), run (notes), replica generation,
                      transfer generation or lease generation */
    int32_t aux;   /* service of a replica; node of a rank note (-1: unknown) */
    int16_t kind;  /* enum wkind */
    int16_t phase; /* notes: a TIDE_PHASE_* */
} wentry_t;

/* A job's run in the world: what only a running job needs. One per active
 * job (wjob_t.r), kept from its start to its end; ended runs wait in
 * w->spare for the next start (their span buffers with them). */
typedef struct wrun {
    int W;                      /* full data-parallel width */
    int gang;                   /* GPUs of one data-parallel replica */
    double speed;               /* relative throughput under a power cap (1 = none) */
    double ckpt_value;          /* progress at the start of the pending checkpoint */
    tide_time_t t_last;         /* progress and train_s are as of this time */
    tide_time_t train_s;        /* training time since (re)start or last commit */
    tide_time_t phase_end;      /* end of RESTORING / CHECKPOINTING */
    /* copied from the spec at start (engine pointers may move) */
    tide_time_t duration_s, ckpt_interval_s, ckpt_s, restore_s;
    wspan_t span;               /* its GPUs on racks with an uplink */
    tide_time_t ckpt_hold;      /* QoS stagger: no periodic checkpoint before this */
    tide_time_t held_since;     /* QoS stagger: first deferral of the pending one (-1 = none) */
} wrun_t;

/* What the world keeps of every job it has seen, for its whole life (one per
 * job handle, in pages of WJOB_PAGE: 64 bytes a job however many ran). */
typedef struct wjob {
    double progress, committed; /* full-width seconds */
    double ckpt_gb;             /* checkpoint size (storage model) */
    tide_time_t lease_deadline; /* latest return of its lease */
    wrun_t *r;                  /* its run while active, else NULL */
    uint32_t gen, run, lease_gen;
    int32_t width;              /* current data-parallel width */
    int32_t xfer;               /* 1 + transfer slot of the pending checkpoint, 0 = none */
    uint8_t seen, active, has_lease;
    uint8_t phase;
} wjob_t;
#define WJOB_PAGE 4096

/* A transfer through the shared storage. */
typedef struct xfer {
    int used;
    int kind;              /* XF_CKPT, XF_LOAD */
    int cls;               /* XC_* */
    tide_time_t start;
    int32_t id;            /* job or replica handle */
    int32_t aux;           /* service of a replica */
    uint32_t owner;        /* job run / replica generation at the start */
    uint32_t gen;          /* bumped when its entry moves or it ends */
    double total, rem;     /* GB */
    double cap;            /* GB/s it may use at most (INFINITY = no cap) */
    double rate;           /* GB/s now */
    tide_time_t floor_end; /* start + declared time */
    tide_time_t due;       /* time of its pending W_XFER_DONE entry (-1 = none) */
    wspan_t span;          /* racks with an uplink it goes through (owned) */
    uint64_t tag;          /* XF_EXT: the driver's tag */
} xfer_t;

/* A 4-ary min-heap of entries on (t, seq). */
typedef struct wheap {
    wentry_t *v;
    size_t n, cap;
} wheap_t;

/* An entry in a calendar bucket (a FIFO list through next). */
typedef struct wnode {
    wentry_t x;
    int32_t next; /* next in its bucket or in the free list, -1 = none */
} wnode_t;

/* The queue of timed entries: a calendar of one-second buckets and two
 * heaps (see q_push). */
typedef struct wqueue {
    tide_time_t cursor;     /* the window is [cursor, cursor + CAL_B) */
    int32_t *head, *tail;   /* [CAL_B] first and last node of a bucket */
    uint64_t *bits;         /* [CAL_B / 64] non-empty buckets */
    wnode_t *nodes;         /* node pool */
    size_t n_nodes, cap_nodes;
    int32_t free_node;      /* free list of nodes, -1 = none */
    size_t nb;              /* entries in buckets */
    tide_time_t first;      /* the earliest bucket entry's time (when nb > 0) */
    wheap_t far, late;
} wqueue_t;

struct tide_world {
    const tide_engine_t *e;
    wqueue_t q;
    uint64_t seq;
    wjob_t **jpages;  /* job h is jpages[h / WJOB_PAGE][h % WJOB_PAGE] (NULL: none seen) */
    size_t njpages;
    wrun_t **spare;   /* ended runs, reused by the next starts */
    size_t nspare, capspare;
    uint32_t *rgen; /* per replica handle */
    wspan_t *rspan; /* per replica handle: its GPUs on racks with an uplink */
    size_t nrep;
    const tide_actions_t *cur; /* the actions being applied (their GPU ids) */
    int ctl_down;
    double warm_factor;  /* replica warm-ups take this x warmup_s (0 = 1) */
    /* storage */
    double gbps;
    double *svc_gb;
    size_t nsvc_gb;
    xfer_t *xf;
    size_t nxf, capxf;
    tide_time_t st_last;       /* integrals are as of this time */
    wdom_t st;                 /* the storage's figures (st.up = gbps) */
    /* bulk-traffic QoS (0 = off) */
    double qos_share;
    long staggered;                   /* periodic checkpoints deferred */
    double *dur[TIDE_XFER_KIND_COUNT]; /* transfer times by tide_world_xfer_kind_t */
    size_t ndur[TIDE_XFER_KIND_COUNT], capdur[TIDE_XFER_KIND_COUNT];
    /* per-domain budgets: rack uplinks (tide_world_set_uplink) */
    wdom_t *dom;      /* [ndom] racks */
    int ndom, dom_on; /* dom_on: some rack has an uplink */
    int *gpu_rack;    /* [ngpu] */
    int ngpu;
    wdone_t *done;    /* driver transfers finished, not yet reported */
    size_t ndone, capdone;
};

/* ------------------------------------------------------------------ queue */

static int before(const wentry_t *a, const wentry_t *b)
{
    /* bitwise, not ||/&&: no branch to mispredict in the heap's compares */
    return (a->t < b->t) | ((a->t == b->t) & (a->seq < b->seq));
}

/* A 4-ary min-heap on (t, seq): a total order, so entries come out in the
 * same order as from any other heap; half the levels of a binary heap, and
 * the children of a node share a cache line or two. */
#define HEAP_D 4

/* The earliest of the children from c on (c < h->n): four as a tournament
 * of index arithmetic (no branch per child); keys are unique, so any order
 * of comparison finds the same one. */
static size_t min_child(const wheap_t *hp, size_t c)
{
    const wentry_t *h = hp->v;
    if (c + HEAP_D <= hp->n) {
        size_t a = c + (size_t)before(&h[c + 1], &h[c]);
        size_t b = c + 2 + (size_t)before(&h[c + 3], &h[c + 2]);
        return before(&h[b], &h[a]) ? b : a;
    }
    size_t m = c;
    for (size_t k = c + 1; k < hp->n; k++)
        if (before(&h[k], &h[m]))
            m = k;
    return m;
}

/* Put x in free slot i and sift it down to its place. */
static void sift_down(wheap_t *h, size_t i, wentry_t x)
{
    for (size_t c; (c = HEAP_D * i + 1) < h->n;) {
        size_t m = min_child(h, c);
        if (!before(&h->v[m], &x))
            break;
        h->v[i] = h->v[m];
        i = m;
    }
    h->v[i] = x;
}

static void heap_push(wheap_t *h, wentry_t x)
{
    tide_grow((void **)&h->v, &h->cap, h->n + 1, sizeof *h->v);
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / HEAP_D;
        if (!before(&x, &h->v[p]))
            break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = x;
}

/* Remove and return the root of a non-empty heap. */
static wentry_t heap_pop(wheap_t *h)
{
    wentry_t top = h->v[0];
    wentry_t last = h->v[--h->n];
    if (h->n > 0)
        sift_down(h, 0, last);
    return top;
}

/* The world's queue (w->q): a calendar of CAL_B one-second buckets for the
 * times [cursor, cursor + CAL_B), each a FIFO list, plus two heaps for the
 * rest: `far` (pushed at cursor + CAL_B or later) and `late` (pushed before
 * the cursor; drivers push at their now, which is never before an entry
 * already delivered, so it stays empty in practice). Entries come out in
 * (t, seq) order, the order of one heap of them all:
 *  - a bucket holds one time, its entries in seq order: they are appended
 *    either when pushed (seq grows) or, for the entries of `far`, all at
 *    once in heap order when their time enters the window (cal_advance),
 *    before anything can be pushed to that time directly;
 *  - every `late` entry is before the cursor, every bucket entry at or after
 *    it and before every `far` entry.
 * A push or pop of a bucket entry costs a few dozen instructions, where a
 * heap of the running jobs' timers cost a sift of a few hundred. */
#define CAL_BITS 13
#define CAL_B ((tide_time_t)1 << CAL_BITS)
#define CAL_WORDS (CAL_B / 64)

static void cal_init(wqueue_t *q)
{
    q->head = tide_xmalloc((size_t)CAL_B * sizeof *q->head);
    q->tail = tide_xmalloc((size_t)CAL_B * sizeof *q->tail);
    q->bits = tide_xcalloc((size_t)CAL_WORDS, sizeof *q->bits);
    q->free_node = -1;
}

static void cal_free(wqueue_t *q)
{
    free(q->head);
    free(q->tail);
    free(q->bits);
    free(q->nodes);
    free(q->far.v);
    free(q->late.v);
}

/* Append x to its bucket (x.t within the window). */
static void cal_append(wqueue_t *q, const wentry_t *x)
{
    int32_t k = q->free_node;
    if (k >= 0) {
        q->free_node = q->nodes[k].next;
    } else {
        tide_grow((void **)&q->nodes, &q->cap_nodes, q->n_nodes + 1, sizeof *q->nodes);
        k = (int32_t)q->n_nodes++;
    }
    q->nodes[k].x = *x;
    q->nodes[k].next = -1;
    size_t b = (size_t)x->t & (size_t)(CAL_B - 1);
    uint64_t bit = 1ull << (b % 64);
    if (q->bits[b / 64] & bit)
        q->nodes[q->tail[b]].next = k;
    else {
        q->bits[b / 64] |= bit;
        q->head[b] = k;
    }
    q->tail[b] = k;
    if (!q->nb++ || x->t < q->first)
        q->first = x->t;
}

/* The time of the earliest bucket entry (q->nb > 0): the first non-empty
 * bucket from the cursor's, round the ring. */
static tide_time_t cal_first(const wqueue_t *q)
{
    size_t c = (size_t)q->cursor & (size_t)(CAL_B - 1), w = c / 64;
    uint64_t m = q->bits[w] & (~0ull << (c % 64));
    while (!m) {
        w = (w + 1) % CAL_WORDS;
        m = q->bits[w];
    }
    size_t b = w * 64 + (size_t)__builtin_ctzll(m);
    return q->cursor + (tide_time_t)((b - c) & (size_t)(CAL_B - 1));
}

/* Move the cursor forward to t (no bucket entry before t) and bring the
 * `far` entries now within the window into their buckets, in heap order. */
static void cal_advance(wqueue_t *q, tide_time_t t)
{
    q->cursor = t;
    while (q->far.n > 0 && (uint64_t)q->far.v[0].t - (uint64_t)t < (uint64_t)CAL_B) {
        wentry_t x = heap_pop(&q->far);
        cal_append(q, &x);
    }
}

static void q_push(tide_world_t *w, wentry_t x)
{
    wqueue_t *q = &w->q;
    x.seq = w->seq++;
    if (x.t < q->cursor) {
        heap_push(&q->late, x);
        return;
    }
    if (q->nb == 0 && q->far.n == 0)
        q->cursor = x.t; /* nothing after the cursor: the window may start at x */
    if ((uint64_t)x.t - (uint64_t)q->cursor < (uint64_t)CAL_B)
        cal_append(q, &x);
    else
        heap_push(&q->far, x);
}

/* The earliest entry, or NULL when there is none. */
static const wentry_t *q_top(const tide_world_t *w)
{
    const wqueue_t *q = &w->q;
    if (q->late.n)
        return &q->late.v[0];
    if (q->nb)
        return &q->nodes[q->head[(size_t)q->first & (size_t)(CAL_B - 1)]].x;
    return q->far.n ? &q->far.v[0] : NULL;
}

/* Remove and return the earliest entry (the queue is not empty). */
static wentry_t q_pop(tide_world_t *w)
{
    wqueue_t *q = &w->q;
    if (q->late.n)
        return heap_pop(&q->late);
    if (!q->nb) /* the window is empty: move it to the first `far` entry */
        cal_advance(q, q->far.v[0].t);
    size_t b = (size_t)q->first & (size_t)(CAL_B - 1);
    int32_t k = q->head[b];
    wentry_t x = q->nodes[k].x;
    q->head[b] = q->nodes[k].next;
    q->nodes[k].next = q->free_node;
    q->free_node = k;
    q->nb--;
    if (q->head[b] < 0)
        q->bits[b / 64] &= ~(1ull << (b % 64));
    if (x.t > q->cursor)
        cal_advance(q, x.t); /* may fill buckets, and set first */
    if (q->nb && q->head[b] < 0)
        q->first = cal_first(q);
    return x;
}

/* ------------------------------------------------------------ job state */

/* Job h's record, or NULL when its page was never made (never seen). */
static wjob_t *job_at(const tide_world_t *w, int32_t job)
{
    if (job < 0)
        return NULL;
    size_t p = (size_t)job / WJOB_PAGE;
    if (p >= w->njpages || !w->jpages[p])
        return NULL;
    return &w->jpages[p][(size_t)job % WJOB_PAGE];
}

/* Job h's record, made (zeroed, with its page) if need be. */
static wjob_t *job_get(tide_world_t *w, int32_t job)
{
    if (job < 0)
        return NULL;
    size_t p = (size_t)job / WJOB_PAGE;
    if (p >= w->njpages) {
        size_t n = TIDE_MAX(p + 1, 2 * w->njpages);
        w->jpages = tide_xrealloc(w->jpages, n * sizeof *w->jpages);
        memset(w->jpages + w->njpages, 0, (n - w->njpages) * sizeof *w->jpages);
        w->njpages = n;
    }
    if (!w->jpages[p])
        w->jpages[p] = tide_xcalloc(WJOB_PAGE, sizeof **w->jpages);
    return &w->jpages[p][(size_t)job % WJOB_PAGE];
}

/* Give job j a run (a spare one if any; every field is set by the start). */
static void run_take(tide_world_t *w, wjob_t *j)
{
    if (j->r)
        return;
    j->r = w->nspare ? w->spare[--w->nspare] : tide_xcalloc(1, sizeof *j->r);
}

/* Job j no longer runs: its run goes back to the spares. */
static void run_drop(tide_world_t *w, wjob_t *j)
{
    if (!j->r)
        return;
    TIDE_PUSH(w->spare, w->nspare, w->capspare, j->r);
    j->r = NULL;
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
        w->rspan = tide_xrealloc(w->rspan, n * sizeof *w->rspan);
        memset(w->rspan + w->nrep, 0, (n - w->nrep) * sizeof *w->rspan);
        w->nrep = n;
    }
    return &w->rgen[rep];
}

/* Bring a training job's progress and training time up to `now`. */
static void job_advance(wjob_t *j, tide_time_t now)
{
    if (now <= j->r->t_last) {
        return;
    }
    if (j->phase == TIDE_PHASE_TRAINING) {
        tide_time_t dt = now - j->r->t_last;
        if (j->width > 0 && j->r->W > 0)
            j->progress += (double)dt * j->width / j->r->W * (j->r->speed > 0 ? j->r->speed : 1.0);
        double dur = (double)j->r->duration_s;
        if (j->progress > dur)
            j->progress = dur;
        j->r->train_s += dt;
    }
    j->r->t_last = now;
}

/* ---------------------------------------------------------------- storage */

#define SAT_EPS 1e-9

/* ------------------------------------------------------------------ spans */

static void span_free(wspan_t *sp)
{
    free(sp->rack);
    free(sp->frac);
    memset(sp, 0, sizeof *sp);
}

/* Entry of rack r in sp (appended with frac 0 when absent). */
static int span_slot(wspan_t *sp, int r)
{
    for (int i = 0; i < sp->n; i++)
        if (sp->rack[i] == r)
            return i;
    if (sp->n == sp->cap) {
        sp->cap = sp->cap ? 2 * sp->cap : 4;
        sp->rack = tide_xrealloc(sp->rack, (size_t)sp->cap * sizeof *sp->rack);
        sp->frac = tide_xrealloc(sp->frac, (size_t)sp->cap * sizeof *sp->frac);
    }
    sp->rack[sp->n] = r;
    sp->frac[sp->n] = 0;
    return sp->n++;
}

static void span_copy(wspan_t *dst, const wspan_t *src)
{
    dst->n = 0;
    for (int i = 0; src && i < src->n; i++) {
        int k = span_slot(dst, src->rack[i]); /* may move dst->frac */
        dst->frac[k] = src->frac[i];
    }
}

/* Share of sp on rack r (0 when it does not go through r). */
static double span_frac(const wspan_t *sp, int r)
{
    for (int i = 0; i < sp->n; i++)
        if (sp->rack[i] == r)
            return sp->frac[i];
    return 0;
}

/* sp becomes the span of the GPUs of action a: per rack with an uplink, its
 * GPUs there over all its GPUs (empty without uplinks). */
static void span_set(tide_world_t *w, wspan_t *sp, const tide_action_t *a)
{
    sp->n = 0;
    if (!w->dom_on || !w->cur || a->n_gpus <= 0 || a->gpu_off + (size_t)a->n_gpus > w->cur->ngpus)
        return;
    const int32_t *g = w->cur->gpus + a->gpu_off;
    for (int i = 0; i < a->n_gpus; i++) {
        int r = g[i] >= 0 && g[i] < w->ngpu ? w->gpu_rack[g[i]] : -1;
        if (r >= 0 && w->dom[r].up > 0) {
            int k = span_slot(sp, r); /* may move sp->frac */
            sp->frac[k] += 1.0 / a->n_gpus;
        }
    }
}

/* ---------------------------------------------------------------- sharing */

/* Extend d's demand integrals by dt seconds at its current demand. */
static void dom_integrate(wdom_t *d, double dt)
{
    d->dem_gb += d->dem_now * dt;
    if (d->dem_now > d->up * (1 + SAT_EPS))
        d->sat_s += dt;
}

/* d's figures up to dt seconds after the last change (integrals extended). */
static void dom_figures(const wdom_t *d, double dt, tide_world_storage_t *out)
{
    wdom_t x = *d;
    dom_integrate(&x, dt);
    out->gbps = x.up;
    out->demand_gbps = x.dem_now;
    out->peak_gbps = x.dem_peak;
    out->demand_gb = x.dem_gb;
    out->saturated_s = x.sat_s;
    out->moved_gb = x.moved_gb;
    out->transfers = x.started;
    out->active = x.active;
    out->rate_peak_gbps = x.rate_peak;
    out->ckpt_rate_peak_gbps = x.ckpt_rate_peak;
}

/* Bring the transfers' remaining bytes and the demand integrals up to now. */
static void storage_advance(tide_world_t *w, tide_time_t now)
{
    if (now <= w->st_last)
        return;
    double dt = (double)(now - w->st_last);
    for (size_t i = 0; i < w->nxf; i++) {
        xfer_t *x = &w->xf[i];
        if (!x->used)
            continue;
        x->rem -= x->rate * dt;
        if (x->rem < 0)
            x->rem = 0;
    }
    dom_integrate(&w->st, dt);
    for (int r = 0; w->dom_on && r < w->ndom; r++)
        dom_integrate(&w->dom[r], dt);
    w->st_last = now;
}

static int cap_cmp(const void *a, const void *b)
{
    double x = (*(xfer_t *const *)a)->cap, y = (*(xfer_t *const *)b)->cap;
    return x < y ? -1 : x > y;
}

/* Water-fill `left` GB/s over the n transfers of x (each gets min(cap, an
 * equal share of what is left), capped ones leave the rest to the others).
 * Returns the GB/s given. */
static double water_fill(xfer_t **x, size_t n, double left)
{
    double given = 0;
    qsort(x, n, sizeof *x, cap_cmp);
    for (size_t i = 0; i < n; i++) {
        double share = left / (double)(n - i);
        x[i]->rate = x[i]->cap < share ? x[i]->cap : share;
        left -= x[i]->rate;
        given += x[i]->rate;
        if (left < 0)
            left = 0;
    }
    return given;
}

/* The part of a budget of gbps a class may use given what the classes
 * before it took (used; ckpt_used of it by checkpoints): without QoS
 * everything is one class; with it periodic checkpoints get at most what the
 * asked ones leave of qos_share of the budget. */
static double bw_room(const tide_world_t *w, double gbps, int cls, double used, double ckpt_used)
{
    double left = gbps - used;
    if (w->qos_share > 0 && cls == XC_CKPT_PERIODIC) {
        double budget = w->qos_share * gbps - ckpt_used;
        left = budget < left ? budget : left;
    }
    return left > 0 ? left : 0;
}

/* Does transfer x stop rising: at its cap, or a constraint it uses is full? */
static int fill_stops(const tide_world_t *w, const xfer_t *x, int full)
{
    if (full || x->rate >= x->cap * (1 - SAT_EPS))
        return 1;
    for (int s = 0; s < x->span.n; s++) {
        const wdom_t *d = &w->dom[x->span.rack[s]];
        if (d->res <= d->up * SAT_EPS)
            return 1;
    }
    return 0;
}

/* Progressive filling of the k transfers of x over `room` GB/s of the
 * storage and what the class may use of their racks' uplinks: every live
 * rate rises by the same amount until a transfer reaches its cap or a
 * constraint is full, which stops the transfers it holds; again until none
 * is live (max-min fair over all constraints). Returns the GB/s given. */
static double fill_domains(tide_world_t *w, xfer_t **x, size_t k, int cls, double room)
{
    unsigned char *live = tide_xmalloc(k ? k : 1);
    double given = 0, full_at = w->gbps * SAT_EPS;
    for (size_t i = 0; i < k; i++) {
        x[i]->rate = 0;
        live[i] = x[i]->cap > 0;
        for (int s = 0; s < x[i]->span.n; s++) {
            wdom_t *d = &w->dom[x[i]->span.rack[s]];
            d->res = bw_room(w, d->up, cls, d->used, d->ckpt_used);
        }
    }
    for (;;) {
        size_t na = 0;
        for (size_t i = 0; i < k; i++)
            for (int s = 0; s < x[i]->span.n; s++)
                w->dom[x[i]->span.rack[s]].wsum = 0;
        for (size_t i = 0; i < k; i++)
            for (int s = 0; live[i] && s < x[i]->span.n; s++)
                w->dom[x[i]->span.rack[s]].wsum += x[i]->span.frac[s];
        double d = INFINITY;
        for (size_t i = 0; i < k; i++) {
            if (!live[i])
                continue;
            na++;
            d = fmin(d, x[i]->cap - x[i]->rate);
            for (int s = 0; s < x[i]->span.n; s++) {
                const wdom_t *dm = &w->dom[x[i]->span.rack[s]];
                d = fmin(d, dm->res / dm->wsum);
            }
        }
        if (na == 0)
            break;
        d = fmin(d, room / (double)na);
        d = d > 0 ? d : 0;
        room -= d * (double)na;
        given += d * (double)na;
        for (size_t i = 0; i < k; i++) {
            if (!live[i])
                continue;
            x[i]->rate += d;
            for (int s = 0; s < x[i]->span.n; s++)
                w->dom[x[i]->span.rack[s]].res -= d * x[i]->span.frac[s];
        }
        size_t stopped = 0;
        for (size_t i = 0; i < k; i++)
            if (live[i] && fill_stops(w, x[i], room <= full_at)) {
                live[i] = 0;
                stopped++;
            }
        if (!stopped)
            break; /* rounding: nothing reached a limit exactly; what is given stands */
    }
    free(live);
    return given;
}

/* The demand now, on the storage and on every rack; its peaks. Returns the
 * number of active transfers. */
static size_t storage_demand(tide_world_t *w)
{
    size_t n = 0;
    double dem = 0;
    for (int r = 0; w->dom_on && r < w->ndom; r++) {
        w->dom[r].dem_now = 0;
        w->dom[r].active = 0;
        w->dom[r].used = w->dom[r].ckpt_used = 0;
    }
    for (size_t i = 0; i < w->nxf; i++) {
        const xfer_t *x = &w->xf[i];
        if (!x->used)
            continue;
        n++;
        dem += isfinite(x->cap) ? x->cap : w->gbps;
        for (int s = 0; s < x->span.n; s++) {
            wdom_t *d = &w->dom[x->span.rack[s]];
            d->dem_now += x->span.frac[s] * (isfinite(x->cap) ? x->cap : d->up);
            d->active++;
        }
    }
    w->st.dem_now = dem;
    if (dem > w->st.dem_peak)
        w->st.dem_peak = dem;
    for (int r = 0; w->dom_on && r < w->ndom; r++)
        w->dom[r].dem_peak = TIDE_MAX(w->dom[r].dem_peak, w->dom[r].dem_now);
    w->st.active = (int)n;
    return n;
}

/* Charge the rates of the k transfers of x to their racks. */
static void dom_charge(tide_world_t *w, xfer_t *const *x, size_t k)
{
    for (size_t i = 0; i < k; i++)
        for (int s = 0; s < x[i]->span.n; s++) {
            wdom_t *d = &w->dom[x[i]->span.rack[s]];
            double r = x[i]->rate * x[i]->span.frac[s];
            d->used += r;
            if (x[i]->kind == XF_CKPT)
                d->ckpt_used += r;
        }
}

/* Move each transfer's completion entry where it now falls. */
static void storage_reschedule(tide_world_t *w, tide_time_t now)
{
    for (size_t i = 0; i < w->nxf; i++) {
        xfer_t *x = &w->xf[i];
        if (!x->used)
            continue;
        tide_time_t due = now;
        if (x->rem > 0 && x->rate > 0) {
            double fin = (double)now + x->rem / x->rate;
            due = fin < 9.0e18 ? (tide_time_t)ceil(fin - 1e-6) : TIDE_TIME_NEVER;
            if (due < now)
                due = now;
        } else if (x->rem > 0) {
            due = TIDE_TIME_NEVER; /* held back by the QoS until a reshare */
        }
        if (due != x->due) {
            x->due = due;
            x->gen++;
            if (due != TIDE_TIME_NEVER)
                q_push(w, (wentry_t){.t = due, .kind = W_XFER_DONE, .id = (int32_t)i,
                                        .gen = x->gen});
        }
    }
}

/* Share the bandwidth among the active transfers (strict priority by class
 * with QoS, one class without; over the storage alone, or over the storage
 * and the rack uplinks) and move their completion entries. */
static void storage_reshare(tide_world_t *w, tide_time_t now)
{
    size_t n = storage_demand(w);
    if (n == 0)
        return;
    xfer_t **v = tide_xmalloc(n * sizeof *v);
    double used = 0, ckpt_used = 0;
    for (int cls = 0; cls < XC_COUNT; cls++) {
        size_t k = 0;
        for (size_t i = 0; i < w->nxf; i++)
            if (w->xf[i].used && (w->qos_share <= 0 || w->xf[i].cls == cls))
                v[k++] = &w->xf[i];
        double room = bw_room(w, w->gbps, cls, used, ckpt_used);
        double given = w->dom_on ? fill_domains(w, v, k, cls, room) : water_fill(v, k, room);
        used += given;
        if (cls != XC_LOAD)
            ckpt_used += given;
        if (w->dom_on)
            dom_charge(w, v, k);
        if (w->qos_share <= 0)
            break; /* one class: all done */
    }
    free(v);
    double ck = 0;
    for (size_t i = 0; i < w->nxf; i++)
        if (w->xf[i].used && w->xf[i].kind == XF_CKPT)
            ck += w->xf[i].rate;
    w->st.rate_peak = TIDE_MAX(w->st.rate_peak, used);
    w->st.ckpt_rate_peak = TIDE_MAX(w->st.ckpt_rate_peak, ck);
    for (int r = 0; w->dom_on && r < w->ndom; r++) {
        wdom_t *d = &w->dom[r];
        d->rate_peak = TIDE_MAX(d->rate_peak, d->used);
        d->ckpt_rate_peak = TIDE_MAX(d->ckpt_rate_peak, d->ckpt_used);
    }
    storage_reschedule(w, now);
}

/* A new transfer of gb GB that should take declared seconds, through the
 * racks of sp (NULL: none); the caller reshares. Returns its slot. */
static size_t xfer_new(tide_world_t *w, tide_time_t now, int cls, int32_t id, int32_t aux,
                       uint32_t owner, double gb, tide_time_t declared, const wspan_t *sp)
{
    storage_advance(w, now);
    size_t i;
    for (i = 0; i < w->nxf; i++)
        if (!w->xf[i].used)
            break;
    if (i == w->nxf) {
        tide_grow((void **)&w->xf, &w->capxf, w->nxf + 1, sizeof *w->xf);
        memset(&w->xf[w->nxf], 0, sizeof *w->xf);
        w->nxf++;
    }
    xfer_t *x = &w->xf[i];
    uint32_t gen = x->gen + 1;
    wspan_t span = x->span; /* keep its arrays */
    *x = (xfer_t){.used = 1, .kind = cls == XC_LOAD ? XF_LOAD : XF_CKPT, .cls = cls,
                  .start = now, .id = id, .aux = aux, .owner = owner, .gen = gen,
                  .total = gb, .rem = gb,
                  .cap = declared > 0 ? gb / (double)declared : INFINITY,
                  .floor_end = now + (declared > 0 ? declared : 0), .due = -1, .span = span};
    span_copy(&x->span, sp);
    for (int s = 0; s < x->span.n; s++)
        w->dom[x->span.rack[s]].started++;
    w->st.started++;
    return i;
}

/* Start a transfer (xfer_new) and reshare. Returns 1 + slot. */
static int xfer_start(tide_world_t *w, tide_time_t now, int cls, int32_t id, int32_t aux,
                      uint32_t owner, double gb, tide_time_t declared, const wspan_t *sp)
{
    size_t i = xfer_new(w, now, cls, id, aux, owner, gb, declared, sp);
    storage_reshare(w, now);
    return (int)i + 1;
}

/* End transfer slot i at now (done: its bytes were moved). */
static void xfer_end(tide_world_t *w, tide_time_t now, size_t i, int done)
{
    storage_advance(w, now);
    xfer_t *x = &w->xf[i];
    if (done) {
        w->st.moved_gb += x->total;
        for (int s = 0; s < x->span.n; s++)
            w->dom[x->span.rack[s]].moved_gb += x->span.frac[s] * x->total;
    }
    x->used = 0;
    x->span.n = 0;
    x->gen++;
    storage_reshare(w, now);
}

/* Cancel the transfer of a replica (a stopped job's goes through j->xfer). */
static void xfer_cancel_replica(tide_world_t *w, tide_time_t now, int32_t rep)
{
    for (size_t i = 0; i < w->nxf; i++)
        if (w->xf[i].used && w->xf[i].kind == XF_LOAD && w->xf[i].id == rep) {
            xfer_end(w, now, i, 0);
            return;
        }
}

/* Record a transfer time of kind k (tide_world_xfer_kind_t). */
static void dur_add(tide_world_t *w, int k, double s)
{
    TIDE_PUSH(w->dur[k], w->ndur[k], w->capdur[k], s);
}

/* Drop the job's pending timers and schedule the next one from its state. */
static void job_schedule(tide_world_t *w, int32_t id, wjob_t *j)
{
    j->gen++;
    wentry_t x = {.id = id, .gen = j->gen};
    switch (j->phase) {
    case TIDE_PHASE_RESTORING:
        x.kind = W_RESTORE_DONE;
        x.t = j->r->phase_end;
        break;
    case TIDE_PHASE_CHECKPOINTING:
        if (j->xfer)
            return; /* the transfer's completion schedules the commit */
        x.kind = W_CKPT_DONE;
        x.t = j->r->phase_end;
        break;
    default: {
        tide_time_t ckpt_at = TIDE_TIME_NEVER;
        if (j->r->ckpt_interval_s > 0)
            ckpt_at = TIDE_MAX(j->r->t_last + TIDE_MAX(j->r->ckpt_interval_s - j->r->train_s, 0),
                               j->r->ckpt_hold);
        double rem = (double)j->r->duration_s - j->progress;
        if (rem < 0)
            rem = 0;
        double fin = INFINITY;
        if (j->width > 0 && j->r->W > 0)
            fin = (double)j->r->t_last + rem * j->r->W / j->width / (j->r->speed > 0 ? j->r->speed : 1.0);
        if (fin <= (double)ckpt_at && fin < 9.0e18) {
            x.kind = W_FINISH;
            /* a hair of slack so that 3600.0000000001 still finishes at 3600 */
            x.t = (tide_time_t)ceil(fin - 1e-6);
            if (x.t < j->r->t_last)
                x.t = j->r->t_last;
        } else if (ckpt_at != TIDE_TIME_NEVER) {
            x.kind = W_CKPT_START;
            x.t = ckpt_at;
        } else {
            return; /* width 0 and no checkpoints: nothing will happen */
        }
        break;
    }
    }
    q_push(w, x);
}

static void note(tide_world_t *w, tide_time_t now, int32_t id, const wjob_t *j, int kind,
                 int phase, double value)
{
    q_push(w, (wentry_t){.t = now, .kind = kind, .id = id, .gen = j->run, .phase = phase,
                            .value = value});
}

/* Training -> checkpointing at time t (progress already advanced to t). With
 * storage the checkpoint also writes ckpt_gb; the commit waits for both. */
static void ckpt_begin(tide_world_t *w, int32_t id, wjob_t *j, tide_time_t t, int cls)
{
    j->phase = TIDE_PHASE_CHECKPOINTING;
    j->r->ckpt_value = j->progress;
    j->r->phase_end = t + j->r->ckpt_s;
    if (j->r->held_since >= 0) /* a staggered periodic checkpoint (or overtaken by an asked one) */
        dur_add(w, TIDE_XFER_STAGGER, (double)(t - j->r->held_since));
    j->r->held_since = -1;
    j->r->ckpt_hold = 0;
    if (w->gbps > 0 && j->ckpt_gb > 0)
        j->xfer = xfer_start(w, t, cls, id, -1, j->run, j->ckpt_gb, j->r->ckpt_s, &j->r->span);
}

/* QoS stagger on the racks: does job j's checkpoint (cap GB/s, INFINITY =
 * none) fit in what the writing ones leave of share x each of its racks'
 * uplinks (or is nothing writing there)? */
static int ckpt_fits_racks(const tide_world_t *w, const wjob_t *j, double cap)
{
    for (int s = 0; s < j->r->span.n; s++) {
        int r = j->r->span.rack[s];
        const wdom_t *d = &w->dom[r];
        double dem = 0;
        for (size_t i = 0; i < w->nxf; i++) {
            const xfer_t *x = &w->xf[i];
            if (x->used && x->kind == XF_CKPT)
                dem += span_frac(&x->span, r) * (isfinite(x->cap) ? x->cap : d->up);
        }
        double mine = j->r->span.frac[s] * (isfinite(cap) ? cap : d->up);
        if (dem > 0 && dem + mine > w->qos_share * d->up * (1 + SAT_EPS))
            return 0;
    }
    return 1;
}

/* QoS stagger: may job j start a periodic checkpoint at now? It may when no
 * checkpoint is writing or when its cap fits in what the writing ones leave
 * of the checkpoint budget (of the storage and of its racks' uplinks).
 * Otherwise *retry gets the earliest time one of them is due to end. */
static int ckpt_fits(const tide_world_t *w, const wjob_t *j, tide_time_t now, tide_time_t *retry)
{
    if (w->qos_share <= 0 || w->gbps <= 0 || j->ckpt_gb <= 0)
        return 1;
    double budget = w->qos_share * w->gbps, dem = 0;
    tide_time_t first = TIDE_TIME_NEVER;
    int writing = 0;
    for (size_t i = 0; i < w->nxf; i++) {
        const xfer_t *x = &w->xf[i];
        if (!x->used || x->kind != XF_CKPT)
            continue;
        writing++;
        dem += isfinite(x->cap) ? x->cap : w->gbps;
        tide_time_t end = TIDE_MAX(x->due, x->floor_end);
        if (x->due >= 0 && end < first)
            first = end;
    }
    double cap = j->r->ckpt_s > 0 ? j->ckpt_gb / (double)j->r->ckpt_s : w->gbps;
    if (!writing || (dem + cap <= budget * (1 + SAT_EPS) &&
                     ckpt_fits_racks(w, j, j->r->ckpt_s > 0 ? cap : INFINITY)))
        return 1;
    if (first == TIDE_TIME_NEVER) /* the writing ones wait for loads: try a while later */
        first = now + TIDE_MAX(j->r->ckpt_s, 1);
    *retry = first > now ? first : now + 1;
    return 0;
}

/* The job ends in the world at now (stopped, killed, expired, failed): its
 * progress falls back to its commit, pending timers, notes and its
 * checkpoint transfer are dropped, its lease is forgotten. */
static void job_end(tide_world_t *w, tide_time_t now, wjob_t *j)
{
    if (j->xfer) {
        xfer_end(w, now, (size_t)(j->xfer - 1), 0);
        j->xfer = 0;
    }
    j->active = 0;
    j->progress = j->committed;
    j->gen++;
    j->run++;
    j->has_lease = 0;
    j->lease_gen++;
    run_drop(w, j);
}

/* Progress lost if the job ended now. */
static double job_loss(wjob_t *j, tide_time_t now)
{
    job_advance(j, now);
    double lost = j->progress - j->committed;
    return lost > 0 ? lost : 0;
}

/* A job ends abnormally at now while tide is down: events carry no time, so
 * the engine, stepping only when it is back, would not know how far the job
 * got. Report its last phase and progress first (a JOB_PHASE note). Call
 * after job_loss (progress at now) and before job_end; gen is the run the
 * job will have after job_end. */
static void note_last(tide_world_t *w, tide_time_t now, int32_t id, const wjob_t *j)
{
    q_push(w, (wentry_t){.t = now, .kind = W_NOTE_LAST, .id = id, .gen = j->run + 1,
                            .phase = j->phase, .value = j->progress});
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
    if (j->xfer) { /* not stopped first: forget the old run's checkpoint */
        xfer_end(w, now, (size_t)(j->xfer - 1), 0);
        j->xfer = 0;
    }
    run_take(w, j);
    j->seen = 1;
    j->active = 1;
    j->run++;
    j->r->duration_s = info.spec->duration_s;
    j->r->ckpt_interval_s = info.spec->ckpt_interval_s;
    j->r->ckpt_s = info.spec->ckpt_s;
    j->r->restore_s = info.spec->restore_s;
    j->r->gang = info.spec->gang_gpus;
    j->r->W = info.dp_max > 0 ? info.dp_max : 1;
    j->width = a->width;
    span_set(w, &j->r->span, a);
    j->r->speed = 1.0;
    j->progress = j->committed;
    j->r->t_last = now;
    j->r->train_s = 0;
    j->r->ckpt_hold = 0;
    j->r->held_since = -1;
    if (j->committed > 0) {
        j->phase = TIDE_PHASE_RESTORING;
        j->r->phase_end = now + j->r->restore_s;
    } else {
        j->phase = TIDE_PHASE_TRAINING;
    }
    job_schedule(w, a->job, j);
}

static wjob_t *active_job(const tide_world_t *w, int32_t job)
{
    wjob_t *j = job_at(w, job);
    return j && j->active ? j : NULL;
}

static void act_job_ckpt(tide_world_t *w, tide_time_t now, const tide_action_t *a)
{
    wjob_t *j = active_job(w, a->job);
    if (!j)
        return;
    switch (j->phase) {
    case TIDE_PHASE_TRAINING:
        job_advance(j, now);
        ckpt_begin(w, a->job, j, now, XC_CKPT_ASKED);
        note(w, now, a->job, j, W_NOTE_PHASE, TIDE_PHASE_CHECKPOINTING, j->progress);
        job_schedule(w, a->job, j);
        break;
    case TIDE_PHASE_RESTORING:
        note(w, now, a->job, j, W_NOTE_COMMIT, 0, j->committed);
        break;
    default: /* checkpointing: the pending commit serves, now as an asked one */
        if (j->xfer && w->xf[j->xfer - 1].cls != XC_CKPT_ASKED) {
            storage_advance(w, now);
            w->xf[j->xfer - 1].cls = XC_CKPT_ASKED;
            storage_reshare(w, now);
        }
        break;
    }
}

int tide_world_ckpt_early(tide_world_t *w, tide_time_t now, int32_t job)
{
    wjob_t *j = active_job(w, job);
    if (!j || j->phase != TIDE_PHASE_CHECKPOINTING || j->xfer || j->r->phase_end <= now)
        return -1;
    j->r->phase_end = now;
    job_schedule(w, job, j);
    return 0;
}

static void act_job_resize(tide_world_t *w, tide_time_t now, const tide_action_t *a)
{
    wjob_t *j = active_job(w, a->job);
    if (!j)
        return;
    job_advance(j, now);
    j->width = a->width;
    span_set(w, &j->r->span, a);
    job_schedule(w, a->job, j);
}

/* A power cap: training from now on at the engine's throughput under it. */
static void act_power_cap(tide_world_t *w, tide_time_t now, const tide_action_t *a)
{
    wjob_t *j = active_job(w, a->job);
    tide_job_info_t info;
    if (!j || tide_engine_job(w->e, a->job, &info) != 0)
        return;
    job_advance(j, now);
    j->r->speed = info.speed > 0 ? info.speed : 1.0;
    job_schedule(w, a->job, j);
}

static void act_job_stop(tide_world_t *w, tide_time_t now, const tide_action_t *a)
{
    wjob_t *j = active_job(w, a->job);
    if (!j)
        return;
    job_end(w, now, j);
}

static void act_replica_start(tide_world_t *w, tide_time_t now, const tide_action_t *a)
{
    const tide_service_spec_t *s = tide_engine_service(w->e, a->service);
    uint32_t *g = rep_gen(w, a->replica);
    if (!s || !g)
        return;
    (*g)++;
    double gb = w->gbps > 0 && a->service >= 0 && (size_t)a->service < w->nsvc_gb
                    ? w->svc_gb[a->service]
                    : 0;
    if (w->gbps > 0)
        xfer_cancel_replica(w, now, a->replica);
    tide_time_t warm = TIDE_MAX(s->warmup_s, 0);
    if (w->warm_factor > 0)
        warm = (tide_time_t)ceil((double)warm * w->warm_factor);
    if (gb > 0) { /* ready when the weights are loaded and warmup_s has passed */
        /* the storage link carries the whole load from the start: staging
         * (a->credit) is not modelled on the link (docs/engine.md, Weight staging) */
        wspan_t *sp = &w->rspan[a->replica];
        span_set(w, sp, a);
        xfer_start(w, now, XC_LOAD, a->replica, a->service, *g, gb, warm, sp);
        return;
    }
    /* staged weights (the credit) shorten the warm-up, never below 0 */
    warm -= TIDE_MIN(TIDE_MAX(a->credit, 0), warm);
    q_push(w, (wentry_t){.t = now + warm, .kind = W_REPLICA_READY,
                            .id = a->replica, .gen = *g, .aux = a->service});
}

static void act_replica_stop(tide_world_t *w, tide_time_t now, const tide_action_t *a)
{
    uint32_t *g = rep_gen(w, a->replica);
    if (g)
        (*g)++;
    if (g && w->gbps > 0)
        xfer_cancel_replica(w, now, a->replica);
}

/* Push the backend's lease enforcement for job j (only while tide is down). */
static void lease_arm(tide_world_t *w, tide_time_t now, int32_t id, const wjob_t *j)
{
    if (!w->ctl_down || !j->active || !j->has_lease || j->lease_deadline == TIDE_TIME_NEVER)
        return;
    q_push(w, (wentry_t){.t = TIDE_MAX(j->lease_deadline, now), .kind = W_LEASE_EXPIRE,
                            .id = id, .gen = j->lease_gen});
}

static void act_lease_set(tide_world_t *w, tide_time_t now, const tide_action_t *a)
{
    wjob_t *j = job_at(w, a->job);
    if (!j || !j->seen)
        return;
    j->has_lease = 1;
    j->lease_deadline = a->deadline;
    j->lease_gen++;
    lease_arm(w, now, a->job, j);
}

static void act_lease_return(tide_world_t *w, tide_time_t now, const tide_action_t *a)
{
    (void)now;
    wjob_t *j = job_at(w, a->job);
    if (!j)
        return;
    j->has_lease = 0;
    j->lease_gen++;
}

typedef void (*act_fn)(tide_world_t *w, tide_time_t now, const tide_action_t *a);

static const act_fn act_table[TIDE_ACT_KIND_COUNT] = {
    [TIDE_ACT_JOB_START] = act_job_start,
    [TIDE_ACT_JOB_CKPT] = act_job_ckpt,
    [TIDE_ACT_JOB_RESIZE] = act_job_resize,
    [TIDE_ACT_JOB_STOP] = act_job_stop,
    [TIDE_ACT_REPLICA_START] = act_replica_start,
    [TIDE_ACT_REPLICA_STOP] = act_replica_stop,
    /* leases: tracked for the backend's own enforcement while tide is down */
    [TIDE_ACT_LEASE_GRANT] = act_lease_set,
    [TIDE_ACT_LEASE_RENEW] = act_lease_set,
    [TIDE_ACT_LEASE_RETURN] = act_lease_return,
    [TIDE_ACT_POWER_CAP] = act_power_cap,
};

/* ------------------------------------------------------------- delivery */

/* Is the entry still meaningful? */
static int live(const tide_world_t *w, const wentry_t *x)
{
    if (x->kind <= W_FINISH) { /* a job's timer, the most frequent (the checks below, in short) */
        const wjob_t *j = job_at(w, x->id);
        return j && j->active && j->gen == x->gen;
    }
    if (x->kind == W_REPLICA_READY)
        return (size_t)x->id < w->nrep && w->rgen[x->id] == x->gen;
    if (x->kind == W_XFER_DONE)
        return x->id >= 0 && (size_t)x->id < w->nxf && w->xf[x->id].used &&
               w->xf[x->id].gen == x->gen;
    const wjob_t *j = job_at(w, x->id);
    if (!j)
        return 0;
    if (x->kind == W_NOTE_RANK || x->kind == W_NOTE_LAST || x->kind == W_NOTE_EXPIRED)
        return j->run == x->gen;
    if (!j->active)
        return 0;
    if (x->kind == W_LEASE_EXPIRE)
        return w->ctl_down && j->has_lease && j->lease_gen == x->gen;
    if (x->kind == W_NOTE_PHASE || x->kind == W_NOTE_COMMIT)
        return j->run == x->gen;
    return j->gen == x->gen;
}

static void purge_top(tide_world_t *w)
{
    for (const wentry_t *x; (x = q_top(w)) && !live(w, x);)
        (void)q_pop(w);
}

/* A transfer finished at x->t: schedule what waited for it. No event. */
static void xfer_done(tide_world_t *w, const wentry_t *x)
{
    size_t i = (size_t)x->id;
    xfer_t xf = w->xf[i];
    xfer_end(w, x->t, i, 1);
    tide_time_t at = TIDE_MAX(xf.floor_end, x->t);
    dur_add(w, xf.kind == XF_EXT ? TIDE_XFER_SYNC : xf.cls, (double)(at - xf.start));
    if (xf.kind == XF_EXT) {
        TIDE_PUSH(w->done, w->ndone, w->capdone, ((wdone_t){.tag = xf.tag, .at = at}));
        return;
    }
    if (xf.kind == XF_LOAD) {
        if ((size_t)xf.id < w->nrep && w->rgen[xf.id] == xf.owner)
            q_push(w, (wentry_t){.t = at, .kind = W_REPLICA_READY, .id = xf.id,
                                    .gen = xf.owner, .aux = xf.aux});
        return;
    }
    wjob_t *j = job_at(w, xf.id);
    if (!j || !j->active || j->run != xf.owner || j->xfer != (int)i + 1)
        return;
    j->xfer = 0;
    j->r->phase_end = at;
    job_schedule(w, xf.id, j);
}

/* Carry out a due entry; fill ev. Returns 1 if it is an event, 0 if not. */
static int fire(tide_world_t *w, const wentry_t *x, tide_event_t *ev)
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
        return 1;
    }
    if (x->kind == W_XFER_DONE) {
        xfer_done(w, x);
        return 0;
    }
    wjob_t *j = job_at(w, x->id); /* live: seen */
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
        j->r->t_last = x->t;
        j->r->train_s = 0;
        ev->kind = TIDE_EV_JOB_PHASE;
        ev->phase = TIDE_PHASE_TRAINING;
        ev->value = j->progress;
        job_schedule(w, x->id, j);
        break;
    case W_CKPT_START: {
        tide_time_t retry;
        job_advance(j, x->t);
        if (!ckpt_fits(w, j, x->t, &retry)) { /* staggered: keep training, try again */
            if (j->r->held_since < 0) {
                j->r->held_since = x->t;
                w->staggered++;
            }
            j->r->ckpt_hold = retry;
            job_schedule(w, x->id, j);
            return 0;
        }
        ckpt_begin(w, x->id, j, x->t, XC_CKPT_PERIODIC);
        ev->kind = TIDE_EV_JOB_PHASE;
        ev->phase = TIDE_PHASE_CHECKPOINTING;
        ev->value = j->progress;
        job_schedule(w, x->id, j);
        break;
    }
    case W_CKPT_DONE:
        j->committed = j->r->ckpt_value;
        j->phase = TIDE_PHASE_TRAINING;
        j->r->t_last = x->t;
        j->r->train_s = 0;
        ev->kind = TIDE_EV_CKPT_COMMITTED;
        ev->value = j->r->ckpt_value;
        job_schedule(w, x->id, j);
        break;
    case W_FINISH:
        j->progress = (double)j->r->duration_s;
        j->r->t_last = x->t;
        j->active = 0;
        j->gen++;
        j->run++;
        run_drop(w, j);
        ev->kind = TIDE_EV_JOB_FINISHED;
        ev->value = j->progress;
        break;
    case W_LEASE_EXPIRE: {
        /* the last phase report now, EV_JOB_EXPIRED right after it */
        (void)job_loss(j, x->t); /* brings progress up to now */
        double reached = j->progress;
        ev->kind = TIDE_EV_JOB_PHASE;
        ev->phase = j->phase;
        ev->value = j->progress;
        job_end(w, x->t, j);
        q_push(w, (wentry_t){.t = x->t, .kind = W_NOTE_EXPIRED, .id = x->id, .gen = j->run,
                                .value = reached});
        break;
    }
    case W_NOTE_LAST:
        ev->kind = TIDE_EV_JOB_PHASE;
        ev->phase = x->phase;
        ev->value = x->value;
        break;
    case W_NOTE_EXPIRED:
        ev->kind = TIDE_EV_JOB_EXPIRED;
        ev->value = x->value;
        break;
    case W_NOTE_RANK:
        ev->kind = TIDE_EV_RANK_FAILED;
        ev->value = x->value;
        ev->node = x->aux;
        break;
    default:
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------- API */

tide_world_t *tide_world_create(const tide_engine_t *e)
{
    tide_world_t *w = tide_xcalloc(1, sizeof *w);
    w->e = e;
    cal_init(&w->q);
    return w;
}

void tide_world_destroy(tide_world_t *w)
{
    if (!w)
        return;
    for (size_t p = 0; p < w->njpages; p++) {
        for (size_t i = 0; w->jpages[p] && i < WJOB_PAGE; i++)
            run_drop(w, &w->jpages[p][i]);
        free(w->jpages[p]);
    }
    for (size_t i = 0; i < w->nspare; i++) {
        span_free(&w->spare[i]->span);
        free(w->spare[i]);
    }
    for (size_t i = 0; i < w->nrep; i++)
        span_free(&w->rspan[i]);
    for (size_t i = 0; i < w->nxf; i++)
        span_free(&w->xf[i].span);
    cal_free(&w->q);
    free(w->jpages);
    free(w->spare);
    free(w->rgen);
    free(w->rspan);
    free(w->svc_gb);
    free(w->xf);
    for (int k = 0; k < TIDE_XFER_KIND_COUNT; k++)
        free(w->dur[k]);
    free(w->dom);
    free(w->gpu_rack);
    free(w->done);
    free(w);
}

void tide_world_apply(tide_world_t *w, tide_time_t now, const tide_actions_t *acts)
{
    w->cur = acts;
    for (size_t i = 0; acts && i < acts->n; i++) {
        const tide_action_t *a = &acts->v[i];
        if (a->kind >= 0 && a->kind < TIDE_ACT_KIND_COUNT && act_table[a->kind])
            act_table[a->kind](w, now, a);
    }
    w->cur = NULL;
    purge_top(w);
}

tide_time_t tide_world_next(const tide_world_t *w)
{
    const wentry_t *x = q_top(w);
    return x ? x->t : TIDE_TIME_NEVER;
}

size_t tide_world_pop(tide_world_t *w, tide_time_t now, tide_event_t *out, size_t max)
{
    size_t k = 0;
    purge_top(w);
    for (const wentry_t *top; k < max && (top = q_top(w)) && top->t <= now;) {
        wentry_t x = q_pop(w);
        if (fire(w, &x, &out[k]))
            k++;
        purge_top(w);
    }
    return k;
}

int tide_world_job(const tide_world_t *w, int32_t job, tide_world_job_t *out)
{
    const wjob_t *j = job_at(w, job);
    if (!j || !j->seen)
        return -1;
    out->active = j->active;
    out->phase = j->phase;
    out->width = j->width;
    out->progress = j->progress;
    out->committed = j->committed;
    out->lease_deadline = j->has_lease ? j->lease_deadline : TIDE_TIME_NEVER;
    return 0;
}

/* ------------------------------------------------------------- faults */

void tide_world_set_warmup_factor(tide_world_t *w, double f)
{
    w->warm_factor = f > 0 && isfinite(f) ? f : 0;
}

void tide_world_set_storage(tide_world_t *w, double gbps)
{
    w->gbps = gbps > 0 && isfinite(gbps) ? gbps : 0;
    w->st.up = w->gbps;
}

void tide_world_set_qos(tide_world_t *w, double share)
{
    w->qos_share = share > 0 && share <= 1 ? share : 0;
}

double tide_world_xfer_quantile(const tide_world_t *w, int kind, double q, size_t *n)
{
    if (n)
        *n = 0;
    if (kind < 0 || kind >= TIDE_XFER_KIND_COUNT)
        return 0;
    if (n)
        *n = w->ndur[kind];
    return w->ndur[kind] ? tide_quantile(w->dur[kind], w->ndur[kind], q) : 0;
}

void tide_world_set_job_gb(tide_world_t *w, int32_t job, double ckpt_gb)
{
    wjob_t *j = job_get(w, job);
    if (j)
        j->ckpt_gb = ckpt_gb > 0 && isfinite(ckpt_gb) ? ckpt_gb : 0;
}

void tide_world_set_service_gb(tide_world_t *w, int service, double weights_gb)
{
    if (service < 0)
        return;
    if ((size_t)service >= w->nsvc_gb) {
        size_t n = (size_t)service + 1;
        w->svc_gb = tide_xrealloc(w->svc_gb, n * sizeof *w->svc_gb);
        for (size_t i = w->nsvc_gb; i < n; i++)
            w->svc_gb[i] = 0;
        w->nsvc_gb = n;
    }
    w->svc_gb[service] = weights_gb > 0 && isfinite(weights_gb) ? weights_gb : 0;
}

void tide_world_storage(const tide_world_t *w, tide_time_t now, tide_world_storage_t *out)
{
    memset(out, 0, sizeof *out);
    dom_figures(&w->st, now > w->st_last ? (double)(now - w->st_last) : 0, out);
    out->staggered = w->staggered;
}

void tide_world_set_ctl_down(tide_world_t *w, tide_time_t now, int down)
{
    w->ctl_down = down ? 1 : 0;
    if (w->ctl_down) {
        for (size_t i = 0; i < w->njpages * WJOB_PAGE; i++) {
            const wjob_t *j = job_at(w, (int32_t)i);
            if (j)
                lease_arm(w, now, (int32_t)i, j);
        }
    }
    purge_top(w);
}

int tide_world_fail_rank(tide_world_t *w, tide_time_t now, int32_t job, double *lost)
{
    wjob_t *j = active_job(w, job);
    if (!j)
        return -1;
    double l = job_loss(j, now), reached = j->progress;
    if (w->ctl_down)
        note_last(w, now, job, j);
    job_end(w, now, j);
    /* the event carries the progress the job had reached (docs: engine.h) */
    q_push(w, (wentry_t){.t = now, .kind = W_NOTE_RANK, .id = job, .gen = j->run,
                            .value = reached, .aux = -1});
    if (lost)
        *lost = l;
    return 0;
}

int tide_world_fail_gang(tide_world_t *w, tide_time_t now, int32_t job, int node)
{
    wjob_t *j = active_job(w, job);
    if (!j || j->width < 2)
        return -1;
    job_advance(j, now);
    j->width--;
    job_schedule(w, job, j);
    q_push(w, (wentry_t){.t = now, .kind = W_NOTE_RANK, .id = job, .gen = j->run,
                            .aux = node});
    return 0;
}

int tide_world_kill_job(tide_world_t *w, tide_time_t now, int32_t job, int *phase,
                        double *progress)
{
    wjob_t *j = active_job(w, job);
    if (!j)
        return -1;
    job_advance(j, now);
    if (phase)
        *phase = j->phase;
    if (progress)
        *progress = j->progress;
    job_end(w, now, j);
    purge_top(w);
    return 0;
}

void tide_world_kill_replica(tide_world_t *w, tide_time_t now, int32_t replica)
{
    if (replica < 0 || (size_t)replica >= w->nrep)
        return;
    w->rgen[replica]++;
    if (w->gbps > 0)
        xfer_cancel_replica(w, now, replica);
    purge_top(w);
}

size_t tide_world_running(const tide_world_t *w, int32_t *jobs, int *gpus, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < w->njpages * WJOB_PAGE; i++) {
        const wjob_t *j = job_at(w, (int32_t)i);
        if (!j || !j->active)
            continue;
        if (n < max) {
            jobs[n] = (int32_t)i;
            if (gpus)
                gpus[n] = j->width * (j->r->gang > 0 ? j->r->gang : 1);
        }
        n++;
    }
    return n;
}

/* ----------------------------------------------------- per-domain budgets */

/* The racks and the GPU -> rack map (once, from the engine's cluster). */
static void dom_init(tide_world_t *w)
{
    if (w->dom)
        return;
    const tide_cluster_t *c = tide_engine_cluster(w->e);
    w->ndom = tide_cluster_racks(c);
    w->dom = tide_xcalloc(w->ndom > 0 ? (size_t)w->ndom : 1, sizeof *w->dom);
    w->ngpu = tide_cluster_gpus(c);
    w->gpu_rack = tide_xmalloc(w->ngpu > 0 ? (size_t)w->ngpu * sizeof *w->gpu_rack : 1);
    for (int n = 0, nn = tide_cluster_nodes(c); n < nn; n++) {
        tide_node_info_t ni;
        if (tide_cluster_node(c, n, &ni) != 0)
            continue;
        for (int g = 0; g < ni.gpus && ni.first_gpu + g < w->ngpu; g++)
            w->gpu_rack[ni.first_gpu + g] = ni.rack;
    }
}

void tide_world_set_uplink(tide_world_t *w, int rack, double gbps)
{
    dom_init(w);
    if (rack < 0 || rack >= w->ndom)
        return;
    w->dom[rack].up = gbps > 0 && isfinite(gbps) ? gbps : 0;
    w->dom_on = 0;
    for (int r = 0; r < w->ndom; r++)
        w->dom_on |= w->dom[r].up > 0;
}

int tide_world_uplink(const tide_world_t *w, tide_time_t now, int rack, tide_world_storage_t *out)
{
    memset(out, 0, sizeof *out);
    if (rack < 0 || rack >= tide_cluster_racks(tide_engine_cluster(w->e)))
        return -1;
    if (!w->dom || w->dom[rack].up <= 0)
        return 0;
    dom_figures(&w->dom[rack], now > w->st_last ? (double)(now - w->st_last) : 0, out);
    return 0;
}

int tide_world_xfer_begin(tide_world_t *w, tide_time_t now, tide_time_t since, int32_t job,
                          double gb, tide_time_t declared, uint64_t tag)
{
    if (w->gbps <= 0 || !(gb > 0) || !isfinite(gb))
        return 0;
    const wjob_t *j = active_job(w, job);
    size_t i = xfer_new(w, now, XC_LOAD, -1, -1, 0, gb, declared, j ? &j->r->span : NULL);
    xfer_t *x = &w->xf[i];
    since = TIDE_MIN(since, now);
    x->kind = XF_EXT;
    x->tag = tag;
    x->start = since;
    x->floor_end = since + (declared > 0 ? declared : 0);
    if (isfinite(x->cap)) /* what it would have moved alone since it was asked for */
        x->rem = fmax(0, gb - x->cap * (double)(now - since));
    storage_reshare(w, now);
    return 1;
}

void tide_world_xfer_cancel(tide_world_t *w, tide_time_t now, uint64_t tag)
{
    for (size_t i = 0; i < w->nxf; i++)
        if (w->xf[i].used && w->xf[i].kind == XF_EXT && w->xf[i].tag == tag) {
            xfer_end(w, now, i, 0);
            purge_top(w);
            return;
        }
}

size_t tide_world_xfer_finished(tide_world_t *w, uint64_t *tags, tide_time_t *at, size_t max)
{
    size_t k = w->ndone < max ? w->ndone : max;
    for (size_t i = 0; i < k; i++) {
        if (tags)
            tags[i] = w->done[i].tag;
        if (at)
            at[i] = w->done[i].at;
    }
    if (k == 0) /* nothing done (w->done may still be NULL) */
        return 0;
    memmove(w->done, w->done + k, (w->ndone - k) * sizeof *w->done);
    w->ndone -= k;
    return k;
}
