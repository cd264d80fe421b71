/* Agentic RL jobs: the engine jobs an RL job is submitted as, and the
 * rollout/trainer model (include/tide/rl.h, docs/rl.md). Pure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tide/rl.h"
#include "util/util.h"

/* ------------------------------------------------------------------ spec */

int tide_rl_spec_normalize(tide_rl_spec_t *s, tide_error_t *err)
{
    if (!s->id || !*s->id)
        return tide_errf(err, TIDE_EINVAL, "rl_id: must not be empty");
    if (strlen(s->id) > 200)
        return tide_errf(err, TIDE_EINVAL, "rl_id: longer than 200 characters");
    if (!s->team || !*s->team)
        return tide_errf(err, TIDE_EINVAL, "team: must not be empty");
    if (s->priority < TIDE_P1 || s->priority > TIDE_P3)
        return tide_errf(err, TIDE_EINVAL, "priority: %d is not 1..3", s->priority);
    if (s->trainer_gpus < 1 || s->trainer_gpus > 1000000)
        return tide_errf(err, TIDE_EINVAL, "trainer_gpus: %d is not 1..1000000", s->trainer_gpus);
    if (s->trainer_gang_gpus == 0)
        s->trainer_gang_gpus = s->trainer_gpus < 8 ? s->trainer_gpus : 8;
    if (s->trainer_gang_gpus < 1 || s->trainer_gpus % s->trainer_gang_gpus)
        return tide_errf(err, TIDE_EINVAL, "trainer_gang_gpus: %d must divide trainer_gpus (%d)",
                         s->trainer_gang_gpus, s->trainer_gpus);
    if (s->duration_s < 1 || s->step_s < 1 || s->submit_s < 0)
        return tide_errf(err, TIDE_EINVAL, "duration_s, step_s: must be >= 1; submit_s >= 0");
    if (s->batch < 1 || s->batch > 100000000)
        return tide_errf(err, TIDE_EINVAL, "batch: %d is not 1..100000000", s->batch);
    if (s->rollout_gpus < 1 || s->rollout_gpus > 1000000)
        return tide_errf(err, TIDE_EINVAL, "rollout_gpus: %d is not 1..1000000", s->rollout_gpus);
    if (!(s->replica_tps > 0) || s->replica_tps > TIDE_MAX_RPS)
        return tide_errf(err, TIDE_EINVAL, "replica_tps: must be > 0");
    if (s->replica_slots == 0)
        s->replica_slots = 16;
    if (s->replica_slots < 1 || s->replica_slots > 65536)
        return tide_errf(err, TIDE_EINVAL, "replica_slots: %d is not 1..65536", s->replica_slots);
    if (!(s->len_sigma >= 0) || s->len_sigma > 4)
        return tide_errf(err, TIDE_EINVAL, "len_sigma: must be in [0, 4]");
    if (s->sync_s == 0)
        s->sync_s = 30;
    if (s->drain_s == 0)
        s->drain_s = 120;
    if (s->sync_s < 1 || s->drain_s < 1)
        return tide_errf(err, TIDE_EINVAL, "sync_s, drain_s: must be >= 1");
    if (s->weights_gb == 0) /* bf16 weights: a service's default (TIDE_IO_WEIGHTS_GB_PER_GPU) */
        s->weights_gb = 16.0 * s->rollout_gpus;
    if (!(s->weights_gb > 0) || s->weights_gb > 1e9)
        return tide_errf(err, TIDE_EINVAL, "weights_gb: must be in (0, 1e9]");
    if (s->max_staleness < 0 || s->max_staleness > 1000)
        return tide_errf(err, TIDE_EINVAL, "max_staleness: %d is not 0..1000", s->max_staleness);
    if (s->min_replicas < 1 || s->max_replicas < s->min_replicas || s->max_replicas > 100000)
        return tide_errf(err, TIDE_EINVAL,
                         "min_replicas, max_replicas: need 1 <= min (%d) <= max (%d) <= 100000",
                         s->min_replicas, s->max_replicas);
    s->ckpt_interval_s = s->ckpt_interval_s ? s->ckpt_interval_s : 1800;
    s->ckpt_s = s->ckpt_s ? s->ckpt_s : 60;
    s->restore_s = s->restore_s ? s->restore_s : 120;
    if (s->ckpt_interval_s < 1 || s->ckpt_s < 1 || s->restore_s < 1)
        return tide_errf(err, TIDE_EINVAL, "ckpt_interval_s, ckpt_s, restore_s: must be >= 1");
    return 0;
}

static tide_job_spec_t *job_base(const tide_rl_spec_t *s, tide_rl_jobs_t *o, const char *suffix)
{
    int k = o->n++;
    snprintf(o->id[k], TIDE_RL_ID_MAX, "%s-%s", s->id, suffix);
    tide_job_spec_t *j = &o->v[k];
    memset(j, 0, sizeof *j);
    j->id = o->id[k];
    j->team = s->team;
    j->priority = s->priority;
    j->submit_s = s->submit_s;
    j->duration_s = s->duration_s;
    j->ckpt_interval_s = s->ckpt_interval_s;
    j->ckpt_s = s->ckpt_s;
    j->restore_s = s->restore_s;
    j->gpus = s->trainer_gpus;
    j->gang_gpus = s->trainer_gang_gpus;
    return j;
}

/* A job of n rollout replicas (not elastic): no state to checkpoint. */
static void rollout_job(const tide_rl_spec_t *s, tide_job_spec_t *j, int n)
{
    j->gpus = n * s->rollout_gpus;
    j->gang_gpus = s->rollout_gpus;
    j->dp_min = n;
    j->ckpt_interval_s = s->duration_s + 1; /* no periodic checkpoint */
    j->ckpt_s = s->drain_s;                 /* a drain, not a checkpoint */
    j->restore_s = s->sync_s;               /* a weight sync */
}

int tide_rl_jobs(const tide_rl_spec_t *s, int mode, int fixed_replicas, tide_rl_jobs_t *out,
                 tide_error_t *err)
{
    memset(out, 0, sizeof *out);
    tide_rl_spec_t c = *s;
    if (tide_rl_spec_normalize(&c, err) != 0)
        return -1;
    s = &c;
    if (mode != TIDE_RL_FIXED && mode != TIDE_RL_LENT)
        return tide_errf(err, TIDE_EINVAL, "rl mode: %d is not fixed (0) or lent (1)", mode);
    if (fixed_replicas < 0 || fixed_replicas > 100000)
        return tide_errf(err, TIDE_EINVAL, "fixed_replicas: %d is not 0..100000", fixed_replicas);
    int extra = mode == TIDE_RL_LENT ? s->max_replicas - s->min_replicas : 0;
    int chunk = s->rollout_gpus < 8 ? 8 / s->rollout_gpus : 1;
    int npool = (extra + chunk - 1) / chunk;
    out->v = tide_xcalloc((size_t)npool + 2, sizeof *out->v);
    out->id = tide_xcalloc((size_t)npool + 2, sizeof *out->id);
    job_base(s, out, "trainer");
    int ded = mode == TIDE_RL_LENT ? s->min_replicas
                                   : (fixed_replicas ? fixed_replicas : s->max_replicas);
    rollout_job(s, job_base(s, out, "rollout"), ded);
    for (int k = 0; k < npool; k++) {
        char suffix[32];
        snprintf(suffix, sizeof suffix, "pool-%d", k + 1);
        tide_job_spec_t *p = job_base(s, out, suffix);
        rollout_job(s, p, extra - k * chunk < chunk ? extra - k * chunk : chunk);
        p->priority = TIDE_P3;
        p->gang_gpus = p->gpus; /* one gang: lent and reclaimed a node at a time */
        p->dp_min = 1;
    }
    for (int k = 0; k < out->n; k++)
        if (tide_job_spec_normalize(&out->v[k], err) != 0) {
            tide_err_prefix(err, "%s: ", out->id[k]);
            tide_rl_jobs_free(out);
            return -1;
        }
    return 0;
}

void tide_rl_jobs_free(tide_rl_jobs_t *j)
{
    free(j->v);
    free(j->id);
    memset(j, 0, sizeof *j);
}

int tide_rl_accepts(int trainer_step, int version, int max_staleness)
{
    int d = trainer_step - version;
    return d >= 0 && d <= max_staleness;
}

/* ----------------------------------------------------------------- model */

enum { R_OFF = 0, R_SYNC, R_RUN, R_DRAIN };

typedef struct slot {
    double end;
    int version;
    int busy;
    uint32_t seq;
} slot_t;

typedef struct rep {
    int state;
    int lent;
    int version;  /* weights it generates with (being loaded while R_SYNC) */
    double until; /* R_SYNC: sync end; R_DRAIN: drain bound */
    uint32_t sync_seq; /* external syncs: number of its latest sync */
    int sync_new;      /* external syncs: started, not yet reported */
    double sync_t;     /* external syncs: when it started */
    int busy;
    int dirty;    /* R_DRAIN: abandoned something */
    slot_t *slots;
} rep_t;

typedef struct hent {
    double t;
    int rep, slot;
    uint32_t seq;
} hent_t;

struct tide_rl {
    tide_rl_spec_t s;
    char *id, *team;
    double t;            /* model time */
    tide_rl_capacity_t cap;
    rep_t *rep;
    size_t nrep, caprep;
    hent_t *heap;
    size_t nheap, capheap;
    uint64_t rng;
    int ext_sync;        /* syncs end when the driver says (tide_rl_set_external_sync) */
    int computing;       /* the trainer has its batch and computes */
    double compute_left; /* seconds of the current step left */
    double step_start;   /* previous step end (or first start); < 0: not started */
    long *buf;           /* completed trajectories by version % (S + 1) */
    long buffered, inflight;
    long *hist;          /* accepted by staleness */
    double *steps;
    size_t nsteps, capsteps;
    tide_rl_stats_t st;
};

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double unit(uint64_t *x) { return ((double)(splitmix(x) >> 11) + 1.0) / 9007199254740993.0; }

/* A trajectory length: lognormal with mean slots / replica_tps. */
static double traj_len(tide_rl_t *rl)
{
    double mean = rl->s.replica_slots / rl->s.replica_tps, sg = rl->s.len_sigma;
    if (sg <= 0)
        return mean;
    double z = sqrt(-2.0 * log(unit(&rl->rng))) * cos(6.283185307179586 * unit(&rl->rng));
    return exp(log(mean) - 0.5 * sg * sg + sg * z);
}

static int hent_less(const hent_t *a, const hent_t *b)
{
    if (a->t != b->t)
        return a->t < b->t;
    if (a->rep != b->rep)
        return a->rep < b->rep;
    return a->slot < b->slot;
}

static void heap_push(tide_rl_t *rl, hent_t h)
{
    TIDE_PUSH(rl->heap, rl->nheap, rl->capheap, h);
    size_t i = rl->nheap - 1;
    while (i > 0 && hent_less(&rl->heap[i], &rl->heap[(i - 1) / 2])) {
        hent_t x = rl->heap[i];
        rl->heap[i] = rl->heap[(i - 1) / 2];
        rl->heap[(i - 1) / 2] = x;
        i = (i - 1) / 2;
    }
}

static void heap_pop(tide_rl_t *rl)
{
    rl->heap[0] = rl->heap[--rl->nheap];
    size_t i = 0, n = rl->nheap;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && hent_less(&rl->heap[l], &rl->heap[m]))
            m = l;
        if (r < n && hent_less(&rl->heap[r], &rl->heap[m]))
            m = r;
        if (m == i)
            return;
        hent_t x = rl->heap[i];
        rl->heap[i] = rl->heap[m];
        rl->heap[m] = x;
        i = m;
    }
}

/* The earliest live trajectory end (stale heap entries are dropped). */
static const hent_t *heap_top(tide_rl_t *rl)
{
    while (rl->nheap) {
        const hent_t *h = &rl->heap[0];
        const slot_t *sl = &rl->rep[h->rep].slots[h->slot];
        if (sl->busy && sl->seq == h->seq)
            return h;
        heap_pop(rl);
    }
    return NULL;
}

tide_rl_t *tide_rl_create(const tide_rl_spec_t *s, tide_time_t start, tide_error_t *err)
{
    tide_rl_spec_t c = *s;
    if (tide_rl_spec_normalize(&c, err) != 0)
        return NULL;
    tide_rl_t *rl = tide_xcalloc(1, sizeof *rl);
    rl->id = tide_xstrdup(c.id);
    rl->team = tide_xstrdup(c.team);
    c.id = rl->id;
    c.team = rl->team;
    rl->s = c;
    rl->t = (double)start;
    rl->rng = c.seed;
    rl->step_start = -1;
    rl->buf = tide_xcalloc((size_t)c.max_staleness + 1, sizeof *rl->buf);
    rl->hist = tide_xcalloc((size_t)c.max_staleness + 1, sizeof *rl->hist);
    rl->st.max_accepted_staleness = -1;
    return rl;
}

void tide_rl_destroy(tide_rl_t *rl)
{
    if (!rl)
        return;
    for (size_t i = 0; i < rl->nrep; i++)
        free(rl->rep[i].slots);
    free(rl->rep);
    free(rl->heap);
    free(rl->buf);
    free(rl->hist);
    free(rl->steps);
    free(rl->id);
    free(rl->team);
    free(rl);
}

/* Accumulate the integrals from the model time to t. */
static void integrate(tide_rl_t *rl, double t)
{
    double dt = t - rl->t;
    if (dt <= 0)
        return;
    double g = rl->s.rollout_gpus;
    if (rl->cap.trainer_held)
        rl->st.trainer_gpu_s += dt * rl->s.trainer_gpus;
    if (rl->cap.trainer && rl->step_start >= 0) {
        if (rl->computing)
            rl->st.compute_s += dt;
        else
            rl->st.wait_s += dt;
    }
    for (size_t i = 0; i < rl->nrep; i++) {
        const rep_t *r = &rl->rep[i];
        if (r->state == R_OFF)
            continue;
        if (r->state != R_DRAIN)
            rl->st.active_rep_s += dt;
        if (r->state == R_RUN) {
            rl->st.slot_s += dt * rl->s.replica_slots;
            rl->st.slot_busy_s += dt * r->busy;
        }
        if (!r->lent)
            rl->st.dedicated_gpu_s += dt * g;
        else {
            rl->st.lent_gpu_s += dt * g;
            if (r->state != R_RUN)
                rl->st.lent_idle_gpu_s += dt * g;
        }
    }
    rl->t = t;
}

/* Generation runs at most two batches ahead of the trainer (the batch it
 * takes next and the one after: more would only go stale), one when no
 * staleness is allowed (on-policy). */
static int gate_open(const tide_rl_t *rl)
{
    long ahead = rl->s.max_staleness > 0 ? 2 : 1;
    return rl->buffered + rl->inflight < ahead * rl->s.batch;
}

/* Start trajectories in r's free slots while the staleness gate allows. */
static void fill_rep(tide_rl_t *rl, int i)
{
    rep_t *r = &rl->rep[i];
    for (int k = 0; k < rl->s.replica_slots && r->state == R_RUN && gate_open(rl); k++) {
        slot_t *sl = &r->slots[k];
        if (sl->busy)
            continue;
        sl->busy = 1;
        sl->seq++;
        sl->version = r->version;
        sl->end = rl->t + traj_len(rl);
        r->busy++;
        rl->inflight++;
        heap_push(rl, (hent_t){sl->end, i, k, sl->seq});
    }
}

static void fill_all(tide_rl_t *rl)
{
    for (size_t i = 0; i < rl->nrep && gate_open(rl); i++)
        fill_rep(rl, (int)i);
}

/* Abandon r's in-flight trajectories. */
static void abandon(tide_rl_t *rl, rep_t *r)
{
    for (int k = 0; k < rl->s.replica_slots; k++) {
        if (!r->slots[k].busy)
            continue;
        r->slots[k].busy = 0;
        rl->inflight--;
        rl->st.abandoned++;
        r->dirty = 1;
    }
    r->busy = 0;
}

/* A replica's drain ends (it goes or resumes). */
static void drain_end(tide_rl_t *rl, rep_t *r)
{
    if (!r->dirty && r->busy == 0)
        rl->st.drains_clean++;
}

static void sync_rep(tide_rl_t *rl, rep_t *r)
{
    r->state = R_SYNC;
    r->version = rl->st.version;
    r->until = rl->t + (double)rl->s.sync_s;
    rl->st.refreshes++;
    if (rl->ext_sync) { /* the driver moves the weights and says when they are there */
        r->until = INFINITY;
        r->sync_seq++;
        r->sync_new = 1;
        r->sync_t = rl->t;
    }
}

/* Replicas behind the trainer's version are refreshed (a weight sync): what
 * they start from then on is at most one step old when it starts, which
 * leaves max_staleness - 1 steps for the long tail of trajectory lengths.
 * In-flight trajectories finish on the old weights. */
static void refresh_old(tide_rl_t *rl)
{
    for (size_t i = 0; i < rl->nrep; i++) {
        rep_t *r = &rl->rep[i];
        if (r->state == R_RUN && rl->st.version > r->version)
            sync_rep(rl, r);
    }
}

/* The trainer takes its batch (oldest acceptable versions first) if it can. */
static void try_take(tide_rl_t *rl)
{
    if (!rl->cap.trainer || rl->computing || rl->buffered < rl->s.batch)
        return;
    int S = rl->s.max_staleness, V = rl->st.version;
    long need = rl->s.batch;
    for (int v = V - S; v <= V && need > 0; v++) {
        if (v < 0)
            continue;
        long *c = &rl->buf[v % (S + 1)];
        long take = *c < need ? *c : need;
        *c -= take;
        need -= take;
        rl->hist[V - v] += take;
        if (take > 0 && V - v > rl->st.max_accepted_staleness)
            rl->st.max_accepted_staleness = V - v;
    }
    rl->buffered -= rl->s.batch;
    rl->st.accepted += rl->s.batch;
    rl->computing = 1;
    rl->compute_left = (double)rl->s.step_s;
    fill_all(rl);
}

/* The trainer finished a step: publish a version, expire what became stale. */
static void step_done(tide_rl_t *rl)
{
    int S = rl->s.max_staleness;
    TIDE_PUSH(rl->steps, rl->nsteps, rl->capsteps, rl->t - rl->step_start);
    rl->step_start = rl->t;
    rl->computing = 0;
    rl->st.version++;
    long *c = &rl->buf[rl->st.version % (S + 1)]; /* version - S - 1: expired */
    rl->st.dropped_stale += *c;
    rl->buffered -= *c;
    *c = 0;
    refresh_old(rl);
    try_take(rl);
    fill_all(rl);
}

/* A trajectory ends at the model time. */
static void traj_done(tide_rl_t *rl, int i, int k)
{
    rep_t *r = &rl->rep[i];
    slot_t *sl = &r->slots[k];
    sl->busy = 0;
    r->busy--;
    rl->inflight--;
    rl->st.generated++;
    if (!tide_rl_accepts(rl->st.version, sl->version, rl->s.max_staleness)) {
        rl->st.dropped_stale++;
    } else {
        rl->buf[sl->version % (rl->s.max_staleness + 1)]++;
        rl->buffered++;
    }
    try_take(rl);
    if (r->state == R_RUN)
        fill_rep(rl, i);
}

/* Sync ends and drain bounds: the earliest at or before `by`, or -1. */
static int next_timer(const tide_rl_t *rl, double *when)
{
    int best = -1;
    for (size_t i = 0; i < rl->nrep; i++) {
        const rep_t *r = &rl->rep[i];
        int timed = r->state == R_SYNC || (r->state == R_DRAIN && r->busy > 0);
        if (timed && (best < 0 || r->until < *when)) {
            best = (int)i;
            *when = r->until;
        }
    }
    return best;
}

static void timer_fire(tide_rl_t *rl, int i)
{
    rep_t *r = &rl->rep[i];
    if (r->state == R_DRAIN) {
        abandon(rl, r);
        return;
    }
    r->state = R_RUN;
    refresh_old(rl); /* a new version came out while it synced */
    fill_rep(rl, i);
}

/* Process the earliest event at or before `now`; 0 when there is none. */
static int next_event(tide_rl_t *rl, double now)
{
    double tc = rl->cap.trainer && rl->computing ? rl->t + rl->compute_left : INFINITY;
    double tt = INFINITY;
    int ti = next_timer(rl, &tt);
    const hent_t *h = heap_top(rl);
    double th = h ? h->t : INFINITY;
    double tn = fmin(tc, fmin(tt, th));
    if (tn > now)
        return 0;
    if (tn < rl->t)
        tn = rl->t;
    double dt = tn - rl->t;
    integrate(rl, tn);
    if (rl->cap.trainer && rl->computing)
        rl->compute_left -= dt;
    if (tc <= tn) {
        step_done(rl);
    } else if (ti >= 0 && tt <= tn) {
        timer_fire(rl, ti);
    } else {
        int i = h->rep, k = h->slot;
        heap_pop(rl);
        traj_done(rl, i, k);
    }
    return 1;
}

void tide_rl_advance(tide_rl_t *rl, tide_time_t now)
{
    double n = (double)now;
    while (next_event(rl, n))
        ;
    if (n > rl->t) {
        double dt = n - rl->t;
        integrate(rl, n);
        if (rl->cap.trainer && rl->computing)
            rl->compute_left -= dt;
    }
}

/* Replicas with lent = `lent` that hold GPUs now. */
static int count_reps(const tide_rl_t *rl, int lent)
{
    int n = 0;
    for (size_t i = 0; i < rl->nrep; i++)
        n += rl->rep[i].state != R_OFF && rl->rep[i].lent == lent;
    return n;
}

static void add_rep(tide_rl_t *rl, int lent)
{
    size_t i = 0;
    while (i < rl->nrep && rl->rep[i].state != R_OFF)
        i++;
    if (i == rl->nrep) {
        tide_grow_zeroed((void **)&rl->rep, &rl->caprep, rl->nrep + 1, sizeof *rl->rep);
        rl->rep[i].slots = tide_xcalloc((size_t)rl->s.replica_slots, sizeof(slot_t));
        rl->nrep++;
    }
    rl->rep[i].lent = lent;
    sync_rep(rl, &rl->rep[i]);
}

/* Remove one replica of kind `lent`: a draining one first (the drain of
 * its pool job ended), else the idlest (fewest in flight), last first. */
static void remove_rep(tide_rl_t *rl, int lent)
{
    int best = -1;
    for (size_t i = rl->nrep; i-- > 0;) {
        const rep_t *r = &rl->rep[i];
        if (r->state == R_OFF || r->lent != lent)
            continue;
        const rep_t *b = best >= 0 ? &rl->rep[best] : NULL;
        int dr = r->state == R_DRAIN, bdr = b && b->state == R_DRAIN;
        if (!b || dr > bdr || (dr == bdr && r->busy < b->busy))
            best = (int)i;
    }
    if (best < 0)
        return;
    rep_t *r = &rl->rep[best];
    if (r->state == R_DRAIN)
        drain_end(rl, r);
    abandon(rl, r);
    r->state = R_OFF;
}

static void resize_kind(tide_rl_t *rl, int lent, int want)
{
    int have = count_reps(rl, lent);
    for (; have < want; have++)
        add_rep(rl, lent);
    for (; have > want; have--)
        remove_rep(rl, lent);
}

/* Exactly `want` lent replicas drain: more start draining (the busiest
 * last), or the extra ones resume (their pool job came back). */
static void set_draining(tide_rl_t *rl, int want)
{
    int have = 0;
    for (size_t i = 0; i < rl->nrep; i++)
        have += rl->rep[i].state == R_DRAIN;
    for (size_t i = 0; i < rl->nrep && have > want; i++) {
        rep_t *r = &rl->rep[i];
        if (r->state == R_DRAIN) {
            drain_end(rl, r);
            r->state = R_RUN;
            have--;
        }
    }
    for (size_t i = 0; i < rl->nrep && have < want; i++) {
        rep_t *r = &rl->rep[i];
        if (r->state == R_OFF || r->state == R_DRAIN || !r->lent)
            continue;
        r->state = R_DRAIN;
        r->dirty = 0;
        r->until = rl->t + (double)rl->s.drain_s;
        rl->st.drains++;
        have++;
    }
    refresh_old(rl);
}

int tide_rl_set(tide_rl_t *rl, tide_time_t now, const tide_rl_capacity_t *cap,
                tide_error_t *err)
{
    if ((double)now < rl->t)
        return tide_errf(err, TIDE_EINVAL, "rl: time went backwards (%lld)", (long long)now);
    if (cap->dedicated < 0 || cap->lent < 0 || cap->dedicated > 100000 || cap->lent > 100000 ||
        cap->draining < 0 || cap->draining > cap->lent)
        return tide_errf(err, TIDE_EINVAL,
                         "rl: replica counts must be 0..100000, draining <= lent");
    tide_rl_advance(rl, now);
    if (cap->trainer && rl->step_start < 0)
        rl->step_start = rl->t;
    rl->cap.trainer = cap->trainer != 0;
    rl->cap.trainer_held = cap->trainer_held != 0 || cap->trainer != 0;
    resize_kind(rl, 0, cap->dedicated);
    resize_kind(rl, 1, cap->lent);
    set_draining(rl, cap->draining);
    rl->cap.dedicated = cap->dedicated;
    rl->cap.lent = cap->lent;
    rl->cap.draining = cap->draining;
    try_take(rl);
    fill_all(rl);
    return 0;
}

void tide_rl_stats(const tide_rl_t *rl, tide_rl_stats_t *out)
{
    *out = rl->st;
    out->now = (tide_time_t)rl->t;
}

int tide_rl_drained(const tide_rl_t *rl)
{
    int n = 0;
    for (size_t i = 0; i < rl->nrep; i++)
        n += rl->rep[i].state == R_DRAIN && rl->rep[i].busy == 0;
    return n;
}

const double *tide_rl_step_times(const tide_rl_t *rl, size_t *n)
{
    *n = rl->nsteps;
    return rl->steps;
}

long tide_rl_staleness_count(const tide_rl_t *rl, int k)
{
    return k >= 0 && k <= rl->s.max_staleness ? rl->hist[k] : 0;
}

/* ---------------------------------------------------------- external syncs */

void tide_rl_set_external_sync(tide_rl_t *rl, int on) { rl->ext_sync = on != 0; }

size_t tide_rl_syncs_started(tide_rl_t *rl, tide_rl_sync_t *out, size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < rl->nrep && k < max; i++) {
        rep_t *r = &rl->rep[i];
        if (!r->sync_new)
            continue;
        r->sync_new = 0;
        if (r->state == R_SYNC)
            out[k++] = (tide_rl_sync_t){.rep = (int)i, .seq = r->sync_seq, .lent = r->lent,
                                        .t = r->sync_t};
    }
    return k;
}

int tide_rl_sync_waiting(const tide_rl_t *rl, int rep, uint32_t seq)
{
    if (rep < 0 || (size_t)rep >= rl->nrep)
        return 0;
    const rep_t *r = &rl->rep[rep];
    return r->state == R_SYNC && r->sync_seq == seq && isinf(r->until);
}

int tide_rl_sync_done(tide_rl_t *rl, int rep, uint32_t seq, double at)
{
    if (!tide_rl_sync_waiting(rl, rep, seq))
        return -1;
    rl->rep[rep].until = at > rl->t ? at : rl->t;
    return 0;
}

double tide_rl_next_step_end(const tide_rl_t *rl)
{
    if (!rl->cap.trainer)
        return INFINITY;
    return rl->t + (rl->computing ? rl->compute_left : (double)rl->s.step_s);
}

/* ------------------------------------------------------ pool controller */

void tide_rl_pool_cfg_default(tide_rl_pool_cfg_t *c)
{
    c->target_wait = 0.05;
    c->headroom = 0.25;
    c->patience = 3;
}

static int pool_cfg_check(const tide_rl_pool_cfg_t *c, tide_error_t *err)
{
    if (!(c->target_wait > 0 && c->target_wait < 1) || !(c->headroom > 0) || c->headroom > 100 ||
        c->patience < 1 || c->patience > 1000000)
        return tide_errf(err, TIDE_EINVAL,
                         "rl pool: need 0 < target_wait < 1, 0 < headroom <= 100, "
                         "1 <= patience <= 1000000");
    return 0;
}

int tide_rl_pool_cfg_parse(const char *s, tide_rl_pool_cfg_t *c, tide_error_t *err)
{
    tide_rl_pool_cfg_t x = *c;
    char buf[256];
    if (strlen(s) >= sizeof buf)
        return tide_errf(err, TIDE_EINVAL, "rl pool: '%.40s...' is too long", s);
    strcpy(buf, s);
    for (char *save = NULL, *it = strtok_r(buf, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(it, '='), *end = NULL;
        if (!eq)
            return tide_errf(err, TIDE_EINVAL, "rl pool: '%s' is not KEY=VALUE", it);
        *eq++ = 0;
        double v = strtod(eq, &end);
        if (!*eq || *end)
            return tide_errf(err, TIDE_EINVAL, "rl pool: %s: '%s' is not a number", it, eq);
        if (!strcmp(it, "target_wait"))
            x.target_wait = v;
        else if (!strcmp(it, "headroom"))
            x.headroom = v;
        else if (!strcmp(it, "patience") && v == floor(v) && fabs(v) <= 1e7)
            x.patience = (int)v;
        else
            return tide_errf(err, TIDE_EINVAL,
                             "rl pool: '%s=%s': keys are target_wait, headroom, patience (a "
                             "whole number)", it, eq);
    }
    if (pool_cfg_check(&x, err) != 0)
        return -1;
    *c = x;
    return 0;
}

/* Lent replicas for `total` replicas in all, within the spec's range. */
static int lent_of(const tide_rl_pool_t *p, double total)
{
    double lent = ceil(total - 1e-9) - p->min_replicas;
    double most = p->max_replicas - p->min_replicas;
    return (int)(lent < 0 ? 0 : lent > most ? most : lent);
}

int tide_rl_pool_init(tide_rl_pool_t *p, const tide_rl_spec_t *s, const tide_rl_pool_cfg_t *cfg,
                      tide_error_t *err)
{
    memset(p, 0, sizeof *p);
    tide_rl_spec_t c = *s;
    if (tide_rl_spec_normalize(&c, err) != 0)
        return -1;
    if (cfg)
        p->cfg = *cfg;
    else
        tide_rl_pool_cfg_default(&p->cfg);
    if (pool_cfg_check(&p->cfg, err) != 0)
        return -1;
    p->min_replicas = c.min_replicas;
    p->max_replicas = c.max_replicas;
    double need = (double)c.batch / ((double)c.step_s * c.replica_tps) * (1 + p->cfg.headroom);
    p->want = lent_of(p, need);
    p->total = p->min_replicas + p->want;
    p->last_wait = -1;
    p->last.max_accepted_staleness = -1;
    return 0;
}

/* Replicas in all the measures since the last decision ask for (0: keep). */
static int pool_proposal(tide_rl_pool_t *p, const tide_rl_stats_t *st, int *dir)
{
    const tide_rl_stats_t *o = &p->last;
    double dw = st->wait_s - o->wait_s, dc = st->compute_s - o->compute_s;
    double dt = (double)(st->now - o->now), dslot = st->slot_s - o->slot_s;
    double reps = dt > 0 ? (st->active_rep_s - o->active_rep_s) / dt : 0;
    double u = dslot > 0 ? (st->slot_busy_s - o->slot_busy_s) / dslot : 1;
    double w = dw + dc > 0 ? dw / (dw + dc) : 0, busy = 1 / (1 + p->cfg.headroom);
    p->last_wait = w;
    *dir = 0;
    if (w > p->cfg.target_wait && u >= busy) {
        *dir = 1;
        double t = dc > 0 ? reps * (dw + dc) * (1 - p->cfg.target_wait) / dc : p->max_replicas;
        return (int)ceil(fmax(t, floor(reps) + 1) - 1e-9);
    }
    if (w <= p->cfg.target_wait && u < busy) {
        *dir = -1;
        return (int)ceil(fmin(reps * u * (1 + p->cfg.headroom), ceil(reps) - 1) - 1e-9);
    }
    return 0;
}

int tide_rl_pool_observe(tide_rl_pool_t *p, const tide_rl_stats_t *st)
{
    if (st->version <= p->last.version || st->now <= p->last.now) {
        if (st->version < p->last.version || st->now < p->last.now ||
            (st->version == 0 && st->wait_s == 0 && st->compute_s == 0))
            p->last = *st; /* another run's measures, or the trainer has not started:
                              measure from here */
        return p->want;
    }
    int dir;
    int total = pool_proposal(p, st, &dir);
    p->last = *st;
    if (dir == 0 || (p->streak != 0 && (p->streak > 0) != (dir > 0)))
        p->streak = 0;
    if (dir == 0)
        return p->want;
    p->streak += dir;
    if (p->streak * dir < p->cfg.patience)
        return p->want;
    p->streak = 0;
    int want = lent_of(p, total);
    if (dir > 0 && want > p->want) {
        p->want = want;
        p->grows++;
    } else if (dir < 0 && want < p->want) {
        p->want = want;
        p->shrinks++;
    }
    p->total = p->min_replicas + p->want;
    return p->want;
}
