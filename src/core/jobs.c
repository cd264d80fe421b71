/* Training job lifecycle: queue, start, checkpoint notice, shrink/grow, stop.
 * Every change of a job's GPUs or phase goes through here so that accounting,
 * leases and actions stay consistent. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

double tide__job_progress_now(const job_t *j, tide_time_t now)
{
    double p = j->progress;
    if ((j->state == TIDE_JOB_RUNNING || j->state == TIDE_JOB_RECLAIMING) &&
        j->phase == TIDE_PHASE_TRAINING && now > j->progress_at)
        p += (double)(now - j->progress_at) * j->width / j->dp_max * (j->speed > 0 ? j->speed : 1);
    if (p > (double)j->spec.duration_s)
        p = (double)j->spec.duration_s;
    return p;
}

tide_time_t tide__job_expected_end(const job_t *j, tide_time_t now)
{
    double rem = (double)j->spec.duration_s - tide__job_progress_now(j, now);
    if (rem < 0)
        rem = 0;
    int w = j->width > 0 ? j->width : j->dp_max;
    double t = rem * j->dp_max / w / (j->speed > 0 ? j->speed : 1);
    t += floor(t / (double)j->spec.ckpt_interval_s) * (double)j->spec.ckpt_s;
    if (j->state == TIDE_JOB_QUEUED) {
        if (j->committed > 0)
            t += (double)j->spec.restore_s;
    } else if (j->phase == TIDE_PHASE_RESTORING) {
        double left = (double)(j->progress_at + j->spec.restore_s - now);
        t += left > 0 ? left : 0;
    } else if (j->phase == TIDE_PHASE_CHECKPOINTING) {
        t += (double)j->spec.ckpt_s;
    }
    return now + (tide_time_t)ceil(t);
}

int tide__team_intern(tide_engine_t *e, const char *name)
{
    for (int i = 0; i < e->n_teams; i++)
        if (!strcmp(e->teams[i].name, name))
            return i;
    tide_grow((void **)&e->teams, &e->cap_teams, (size_t)e->n_teams + 1, sizeof *e->teams);
    team_t *t = &e->teams[e->n_teams];
    memset(t, 0, sizeof *t);
    t->name = tide_xstrdup(name);
    t->weight = 1.0;
    t->quota = tide_xmalloc((size_t)e->n_types * sizeof *t->quota);
    for (int k = 0; k < e->n_types; k++)
        t->quota[k] = -1;
    t->used = tide_xcalloc((size_t)e->n_types, sizeof *t->used);
    t->borrow_limit = t->lend_cap = -1;
    t->dusage_at = e->now;
    t->cells = tide_xcalloc((size_t)TIDE_C_COUNT * TIDE_S_COUNT * TIDE_T_COUNT * (size_t)e->n_types,
                            sizeof *t->cells);
    return e->n_teams++;
}

job_t *tide__job_new(tide_engine_t *e, size_t h)
{
    size_t b = h / JOB_BLOCK;
    while (e->n_job_blk <= b)
        TIDE_PUSH(e->job_blk, e->n_job_blk, e->cap_job_blk,
                  tide_xcalloc(JOB_BLOCK, sizeof **e->job_blk));
    return &e->job_blk[b][h % JOB_BLOCK];
}

int tide__job_team_owned(const tide_engine_t *e, const job_t *j)
{
    return j->team < 0 || j->team >= e->n_teams || j->spec.team != e->teams[j->team].name;
}

/* Fair-share usage: GPU-seconds decayed with the configured half-life H.
 * Holding g GPUs for dt adds g*H/ln2*(1 - 2^(-dt/H)) after decaying the past
 * by 2^(-dt/H). */
double tide__team_usage(const tide_engine_t *e, const team_t *t, tide_time_t now)
{
    double h = (double)e->cfg.fairshare_half_life_s;
    double dt = (double)(now - t->dusage_at);
    if (dt <= 0 || h <= 0)
        return t->dusage;
    double k = exp2(-dt / h);
    return t->dusage * k + (double)t->gpus_now * h / M_LN2 * (1.0 - k);
}

void tide__team_usage_update(tide_engine_t *e, team_t *t)
{
    t->gpu_s = tide__team_gpu_s(e, t);
    t->gpu_s_at = e->now;
    t->dusage = tide__team_usage(e, t, e->now);
    t->dusage_at = e->now;
}



/* ------------------------------------------------------------------ queue */

static int qless(const tide_engine_t *e, int32_t a, int32_t b)
{
    const job_t *x = e->jobs[a], *y = e->jobs[b];
    if (x->submitted != y->submitted)
        return x->submitted < y->submitted;
    return a < b;
}

static size_t qpos(const tide_engine_t *e, int p, int32_t h)
{
    size_t lo = 0, hi = e->qn[p];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (qless(e, e->q[p][mid], h))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The index of shape (gang, dp_min, types) in e->qshapes, interned if new
 * (the sub-queues grow with it). A scan: workloads have a few shapes. */
static int32_t qshape_of(tide_engine_t *e, int32_t gang, int32_t dp_min, uint32_t types)
{
    for (size_t s = 0; s < e->n_qshapes; s++)
        if (e->qshapes[s].gang == gang && e->qshapes[s].dp_min == dp_min && e->qshapes[s].types == types)
            return (int32_t)s;
    TIDE_PUSH(e->qshapes, e->n_qshapes, e->cap_qshapes, ((qshape_t){gang, dp_min, types}));
    size_t old = e->cap_tq;
    tide_grow_zeroed((void **)&e->tq, &e->cap_tq, e->n_qshapes * TIDE_NPRIO, sizeof *e->tq);
    for (size_t k = old; k < e->cap_tq; k++)
        e->tq[k].at = -1;
    return (int32_t)(e->n_qshapes - 1);
}

qkey_t tide__qkey_of(const tide_engine_t *e, int32_t h)
{
    const job_t *j = e->jobs[h];
    return (qkey_t){.sub = j->submitted, .h = h, .gang = j->spec.gang_gpus, .dp_min = j->spec.dp_min,
                    .team = j->team, .types = j->spec.gpu_types, .shape = -1};
}

/* The same job and shape (x's shape index must name k's shape). */
static int qkey_same(const tide_engine_t *e, const qkey_t *x, const qkey_t *k)
{
    if (x->shape < 0 || (size_t)x->shape >= e->n_qshapes)
        return 0;
    const qshape_t *s = &e->qshapes[x->shape];
    return x->sub == k->sub && x->h == k->h && x->gang == k->gang && x->dp_min == k->dp_min &&
           x->team == k->team && x->types == k->types && s->gang == k->gang && s->dp_min == k->dp_min &&
           s->types == k->types;
}

/* Queued job k (of priority p, its shape set) into its sub-queue. */
static void tq_insert(tide_engine_t *e, int p, const qkey_t *k)
{
    tq_shape_t *x = &e->tq[(size_t)k->shape * TIDE_NPRIO + (size_t)p];
    tide_grow_zeroed((void **)&x->team, &x->cap_team, (size_t)k->team + 1, sizeof *x->team);
    tqueue_t *l = &x->team[k->team];
    tide_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v);
    size_t at = tide__tq_pos(l, k->sub, k->h);
    memmove(&l->v[at + 1], &l->v[at], (l->n - at) * sizeof *l->v);
    l->v[at] = (tq_ent_t){.sub = k->sub, .h = k->h};
    if (l->n++ == 0)
        tide_bitset_put(&x->teams, (size_t)k->team, 1);
    tide_grow_zeroed((void **)&e->q_team_n[p], &e->cap_q_team_n[p], (size_t)k->team + 1, sizeof *e->q_team_n[p]);
    if (e->q_team_n[p][k->team]++ == 0)
        tide_bitset_put(&e->q_teams[p], (size_t)k->team, 1);
    if (x->n++ == 0) {
        x->at = (int32_t)e->n_qs_live[p];
        TIDE_PUSH(e->qs_live[p], e->n_qs_live[p], e->cap_qs_live[p], k->shape);
    }
}

static void tq_remove(tide_engine_t *e, int p, const qkey_t *k)
{
    tq_shape_t *x = &e->tq[(size_t)k->shape * TIDE_NPRIO + (size_t)p];
    if ((size_t)k->team >= x->cap_team)
        return;
    tqueue_t *l = &x->team[k->team];
    size_t at = tide__tq_pos(l, k->sub, k->h);
    if (at >= l->n || l->v[at].h != k->h)
        return;
    memmove(&l->v[at], &l->v[at + 1], (l->n - at - 1) * sizeof *l->v);
    if (--l->n == 0)
        tide_bitset_put(&x->teams, (size_t)k->team, 0);
    if (--e->q_team_n[p][k->team] == 0)
        tide_bitset_put(&e->q_teams[p], (size_t)k->team, 0);
    if (--x->n == 0) { /* off the live shapes: the last one takes its place */
        int32_t last = e->qs_live[p][--e->n_qs_live[p]];
        e->qs_live[p][x->at] = last;
        e->tq[(size_t)last * TIDE_NPRIO + (size_t)p].at = x->at;
        x->at = -1;
    }
}

/* Queued job h's key (e->qk) set and its sub-queue entry made. */
static void queue_key_add(tide_engine_t *e, int p, int32_t h)
{
    tide_grow((void **)&e->qk, &e->qkcap, (size_t)h + 1, sizeof *e->qk);
    qkey_t *k = &e->qk[h];
    *k = tide__qkey_of(e, h);
    k->shape = qshape_of(e, k->gang, k->dp_min, k->types);
    tq_insert(e, p, k);
}

void tide__queue_keys_rebuild(tide_engine_t *e)
{
    for (size_t k = 0; k < e->cap_tq; k++) {
        for (size_t t = 0; t < e->tq[k].cap_team; t++)
            e->tq[k].team[t].n = 0;
        tide_bitset_clear(&e->tq[k].teams);
        e->tq[k].n = 0;
        e->tq[k].at = -1;
    }
    for (int p = 0; p < TIDE_NPRIO; p++) {
        e->n_qs_live[p] = 0;
        if (e->cap_q_team_n[p])
            memset(e->q_team_n[p], 0, e->cap_q_team_n[p] * sizeof *e->q_team_n[p]);
        tide_bitset_clear(&e->q_teams[p]);
    }
    for (int p = 0; p < TIDE_NPRIO; p++)
        for (size_t i = 0; i < e->qn[p]; i++)
            queue_key_add(e, p, e->q[p][i]); /* appends: q is in queue order */
}

int32_t tide__queue_keys_check(const tide_engine_t *e)
{
    /* a walk of each queue in order meets every sub-queue's entries in its
     * order: per sub-queue, the entries met so far */
    size_t n_sub = 0;
    for (size_t k = 0; k < e->cap_tq; k++)
        n_sub += e->tq[k].cap_team;
    size_t *base = tide_xcalloc(e->cap_tq + 1, sizeof *base), *met = tide_xcalloc(n_sub + 1, sizeof *met);
    for (size_t k = 0; k < e->cap_tq; k++)
        base[k + 1] = base[k] + e->tq[k].cap_team;
    int32_t bad = -1;
    for (int p = 0; p < TIDE_NPRIO && bad < 0; p++)
        for (size_t i = 0; i < e->qn[p] && bad < 0; i++) {
            qkey_t k = tide__qkey_of(e, e->q[p][i]);
            bad = k.h;
            if ((size_t)k.h >= e->qkcap || !qkey_same(e, &e->qk[k.h], &k) || k.team < 0)
                continue;
            size_t x = (size_t)e->qk[k.h].shape * TIDE_NPRIO + (size_t)p;
            if ((size_t)k.team >= e->tq[x].cap_team)
                continue;
            const tqueue_t *l = &e->tq[x].team[k.team];
            size_t *m = &met[base[x] + (size_t)k.team];
            if (*m < l->n && l->v[*m].sub == k.sub && l->v[*m].h == k.h) {
                ++*m;
                bad = -1;
            }
        }
    for (size_t x = 0; x < e->cap_tq && bad < 0; x++) {
        size_t n = 0;
        for (size_t t = 0; t < e->tq[x].cap_team && bad < 0; t++) {
            if (met[base[x] + t] != e->tq[x].team[t].n) /* left over: a job no longer queued */
                bad = e->tq[x].team[t].v[met[base[x] + t]].h;
            else if (tide_bitset_has(&e->tq[x].teams, t) != (e->tq[x].team[t].n > 0))
                bad = e->n_jobs ? 0 : -1; /* (reported as a job's) */
            n += e->tq[x].team[t].n;
        }
        if (bad < 0 && tide_bitset_next(&e->tq[x].teams, e->tq[x].cap_team, SIZE_MAX) >= 0)
            bad = e->n_jobs ? 0 : -1;
        /* the count and the live list */
        int p = (int)(x % TIDE_NPRIO);
        const tq_shape_t *y = &e->tq[x];
        int listed = y->at >= 0 && (size_t)y->at < e->n_qs_live[p] &&
                     (size_t)e->qs_live[p][y->at] == x / TIDE_NPRIO;
        if (bad < 0 && (n != y->n || listed != (n > 0)))
            bad = e->n_jobs ? 0 : -1; /* (reported as a job's) */
    }
    for (int p = 0; p < TIDE_NPRIO && bad < 0; p++)
        for (size_t t = 0; t < e->cap_q_team_n[p] && bad < 0; t++) {
            size_t n = 0;
            for (size_t s = 0; s < e->n_qshapes; s++)
                n += tide__tq(e, (int32_t)s, p, (int)t) ? tide__tq(e, (int32_t)s, p, (int)t)->n : 0;
            if (n != (size_t)e->q_team_n[p][t] || tide_bitset_has(&e->q_teams[p], t) != (n > 0))
                bad = e->n_jobs ? 0 : -1;
        }
    for (int p = 0; p < TIDE_NPRIO && bad < 0; p++)
        if (tide_bitset_next(&e->q_teams[p], e->cap_q_team_n[p], SIZE_MAX) >= 0)
            bad = e->n_jobs ? 0 : -1;
    size_t live = 0;
    for (int p = 0; p < TIDE_NPRIO; p++)
        live += e->n_qs_live[p];
    for (size_t x = 0; x < e->cap_tq; x++)
        live -= e->tq[x].n > 0;
    if (bad < 0 && live && e->n_jobs) /* a shape listed twice */
        bad = 0;
    free(base);
    free(met);
    return bad;
}

void tide__queue_insert(tide_engine_t *e, int32_t h)
{
    job_t *j = e->jobs[h];
    j->state = TIDE_JOB_QUEUED;
    if (j->held)
        return; /* queued but not eligible until released (tide_engine_job_hold) */
    int p = j->spec.priority;
    tide_grow((void **)&e->q[p], &e->qcap[p], e->qn[p] + 1, sizeof *e->q[p]);
    size_t at = qpos(e, p, h);
    memmove(&e->q[p][at + 1], &e->q[p][at], (e->qn[p] - at) * sizeof *e->q[p]);
    e->q[p][at] = h;
    queue_key_add(e, p, h);
    e->qn[p]++;
    e->queue_gpus += j->spec.gpus;
    j->state = TIDE_JOB_QUEUED;
    e->sched_dirty = 1;
}

void tide__queue_remove(tide_engine_t *e, int32_t h)
{
    job_t *j = e->jobs[h];
    int p = j->spec.priority;
    size_t at = qpos(e, p, h);
    if (at >= e->qn[p] || e->q[p][at] != h)
        return;
    memmove(&e->q[p][at], &e->q[p][at + 1], (e->qn[p] - at - 1) * sizeof *e->q[p]);
    e->qn[p]--;
    tq_remove(e, p, &e->qk[h]); /* its key as inserted */
    e->queue_gpus -= j->spec.gpus;
}

/* ------------------------------------------------------------------ end index */

/* First index whose (key, handle) is not below (t, h); reads only the
 * contiguous key array, and the handles on equal keys. */
static size_t end_pos(const tide_engine_t *e, tide_time_t t, int32_t h)
{
    size_t lo = 0, hi = e->n_by_end;
    const tide_time_t *k = e->by_end_t;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (k[mid] < t || (k[mid] == t && e->by_end[mid] < h))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Remove h; shifts whichever side of it is shorter (an ending job is near
 * the front, so its removal moves almost nothing). */
static void end_index_del(tide_engine_t *e, int32_t h)
{
    tide_time_t t = e->jobs[h]->exp_end;
    size_t at = end_pos(e, t, h);
    tide__place_changed(e);
    if (at < e->n_by_end && e->by_end[at] == h) {
        size_t tail = e->n_by_end - at - 1;
        if (at < tail) {
            memmove(&e->by_end[1], &e->by_end[0], at * sizeof *e->by_end);
            memmove(&e->by_end_t[1], &e->by_end_t[0], at * sizeof *e->by_end_t);
            e->by_end++;
            e->by_end_t++;
            e->by_end_lo++;
        } else {
            memmove(&e->by_end[at], &e->by_end[at + 1], tail * sizeof *e->by_end);
            memmove(&e->by_end_t[at], &e->by_end_t[at + 1], tail * sizeof *e->by_end_t);
        }
        e->n_by_end--;
    }
}

/* Make room for one more entry after the last: compact to the start of the
 * allocation when a quarter of it is unused in front, else double it. */
static void end_index_room(tide_engine_t *e)
{
    size_t lo = e->by_end_lo, n = e->n_by_end;
    if (lo + n < e->cap_by_end)
        return;
    int32_t *hb = e->by_end ? e->by_end - lo : NULL;
    tide_time_t *tb = e->by_end_t ? e->by_end_t - lo : NULL;
    if (lo > 0 && lo >= e->cap_by_end / 4) {
        memmove(hb, e->by_end, n * sizeof *hb);
        memmove(tb, e->by_end_t, n * sizeof *tb);
    } else {
        size_t cap = e->cap_by_end < 8 ? 16 : 2 * e->cap_by_end;
        int32_t *nh = tide_xcalloc(cap, sizeof *nh);
        tide_time_t *nt = tide_xcalloc(cap, sizeof *nt);
        if (n) {
            memcpy(nh, e->by_end, n * sizeof *nh);
            memcpy(nt, e->by_end_t, n * sizeof *nt);
        }
        free(hb);
        free(tb);
        hb = nh;
        tb = nt;
        e->cap_by_end = cap;
    }
    e->by_end = hb;
    e->by_end_t = tb;
    e->by_end_lo = 0;
}

/* Insert h at its (exp_end, handle) place; shifts the shorter side when
 * there is room in front. */
static void end_index_add(tide_engine_t *e, int32_t h)
{
    tide__place_changed(e);
    tide_time_t t = e->jobs[h]->exp_end;
    size_t at = end_pos(e, t, h);
    size_t tail = e->n_by_end - at;
    if (e->by_end_lo > 0 && at < tail) {
        e->by_end--;
        e->by_end_t--;
        e->by_end_lo--;
        memmove(&e->by_end[0], &e->by_end[1], at * sizeof *e->by_end);
        memmove(&e->by_end_t[0], &e->by_end_t[1], at * sizeof *e->by_end_t);
    } else {
        end_index_room(e);
        memmove(&e->by_end[at + 1], &e->by_end[at], tail * sizeof *e->by_end);
        memmove(&e->by_end_t[at + 1], &e->by_end_t[at], tail * sizeof *e->by_end_t);
    }
    e->by_end[at] = h;
    e->by_end_t[at] = t;
    e->n_by_end++;
}

void tide__end_index_set(tide_engine_t *e, int32_t h, tide_time_t end)
{
    end_index_del(e, h);
    e->jobs[h]->exp_end = end;
    end_index_add(e, h);
}

void tide__end_index_rekey(tide_engine_t *e)
{
    /* a restored e->by_end is its own allocation of exactly n (or 1) entries */
    free(e->by_end_t); /* a fresh engine's: by_end_lo is 0 */
    e->cap_by_end = e->n_by_end ? e->n_by_end : 1;
    e->by_end_lo = 0;
    e->by_end_t = tide_xcalloc(e->cap_by_end, sizeof *e->by_end_t);
    for (size_t i = 0; i < e->n_by_end; i++)
        e->by_end_t[i] = e->jobs[e->by_end[i]]->exp_end;
}

int tide__end_index_check(const tide_engine_t *e)
{
    if (e->n_by_end != e->n_running)
        return -2;
    for (size_t i = 0; i < e->n_by_end; i++) {
        int32_t h = e->by_end[i];
        if (h < 0 || (size_t)h >= e->n_jobs || e->jobs[h]->run_idx < 0 ||
            (size_t)e->jobs[h]->run_idx >= e->n_running || e->running[e->jobs[h]->run_idx] != h ||
            e->by_end_t[i] != e->jobs[h]->exp_end)
            return -2;
        if (i && (e->by_end_t[i - 1] > e->by_end_t[i] ||
                  (e->by_end_t[i - 1] == e->by_end_t[i] && e->by_end[i - 1] >= h)))
            return -2;
    }
    return -1;
}

static void running_add(tide_engine_t *e, int32_t h)
{
    e->jobs[h]->exp_end = tide__job_expected_end(e->jobs[h], e->now);
    end_index_add(e, h);
    e->jobs[h]->run_idx = (int32_t)e->n_running;
    TIDE_PUSH(e->running, e->n_running, e->cap_running, h);
    tide__grow_slot_set(e, e->n_running - 1);
}

static void running_del(tide_engine_t *e, int32_t h)
{
    int32_t i = e->jobs[h]->run_idx;
    if (i < 0)
        return;
    end_index_del(e, h);
    int32_t last = e->running[--e->n_running];
    e->running[i] = last;
    e->jobs[last]->run_idx = i;
    e->jobs[h]->run_idx = -1;
    tide__grow_slot_set(e, (size_t)i);
    tide__grow_slot_set(e, e->n_running);
}

static int count_leased(const tide_engine_t *e, const alloc_t *a)
{
    unsigned lz = e->pol->lease_zones;
    int n = 0;
    for (int k = 0; k < a->n; k++) {
        int g = a->gpus[k];
        int lo = dom_of_gpu(e, g);
        if (lz & ZBIT(e->doms[lo].zone))
            n++;
    }
    return n;
}

/* ------------------------------------------------------------------ lifecycle */

static void clear_job_claims(tide_engine_t *e, int32_t h)
{
    for (int i = 0; e->n_claimed[CLAIM_JOB] && i < e->n_doms; i++)
        if (e->doms[i].claim_kind == CLAIM_JOB && e->doms[i].claim_id == h)
            tide__dom_unclaim(e, &e->doms[i]);
    tide__place_changed(e);
}

void tide__job_start(tide_engine_t *e, int32_t h, alloc_t *a, int width)
{
    job_t *j = e->jobs[h];
    tide__queue_remove(e, h);
    clear_job_claims(e, h);
    tide__alloc_free(&j->alloc);
    j->alloc = *a;
    memset(a, 0, sizeof *a);
    tide__job_doms_note(e, h);
    j->width = width;
    j->state = TIDE_JOB_RUNNING;
    j->phase = j->committed > 0 ? TIDE_PHASE_RESTORING : TIDE_PHASE_TRAINING;
    j->progress = j->committed;
    j->progress_at = e->now;
    j->run_start = e->now;
    tide__power_job_reset(j);
    j->stop_pending = 0;
    if (j->first_start < 0) {
        j->first_start = e->now;
        team_t *t = &e->teams[j->team];
        t->waiting--;
        t->waiting_submit_sum -= (double)j->submitted;
        t->queue_started_s += (double)(j->first_start - j->submitted);
    }
    j->n_leased = count_leased(e, &j->alloc);
    j->tr_c = j->tr_d = 0;
    tide__acct_job_set(e, j, 1);
    running_add(e, h);
    tide__lent_sync(e, j);
    if ((double)j->spec.ckpt_s > e->declared_ckpt_max)
        e->declared_ckpt_max = (double)j->spec.ckpt_s;
    tide_action_t *act = tide__act_push(e, TIDE_ACT_JOB_START, TIDE_R_NONE);
    act->job = h;
    act->width = width;
    tide__act_gpus(e, act, &j->alloc);
    if (j->n_leased)
        tide__lease_grant(e, h);
    e->st.jobs_running++;
}

void tide__job_stop(tide_engine_t *e, int32_t h, int reason, int requeue)
{
    job_t *j = e->jobs[h];
    if (j->state != TIDE_JOB_RUNNING && j->state != TIDE_JOB_RECLAIMING)
        return;
    double lost = 0;
    if (reason != TIDE_R_COMPLETE)
        lost = tide__job_progress_now(j, e->now) - j->committed;
    if (reason == TIDE_R_DEADLINE && j->state == TIDE_JOB_RECLAIMING && j->notice_at >= 0)
        /* a checkpoint that missed its deadline took at least this long: a
         * censored sample that still pushes the measured P99 (and the next
         * deadlines and lead times) up */
        tide__samples_add(&e->smp[TIDE_SAMPLE_CKPT], (double)(e->now - j->notice_at));
    if (reason == TIDE_R_DEADLINE) {
        /* a reclaim notice not answered in time is a late reclaim; a lease
         * that ran out without one (e.g. while tide was down) an expiry */
        if (j->state == TIDE_JOB_RECLAIMING &&
            (j->reclaim_reason == TIDE_R_RECLAIM || j->reclaim_reason == TIDE_R_WINDOW))
            e->st.reclaims_late++;
        else if (j->lease >= 0 && !e->leases[j->lease].noticed)
            e->st.leases_expired++;
    }
    tide__acct_job_set(e, j, 0);
    tide__acct_lost(e, j, lost);
    for (int k = 0; k < j->alloc.n; k++)
        tide__dom_release(e, j->alloc.gpus[k]);
    j->alloc.n = 0;
    if (j->lease >= 0) /* late: a notice was pending and its deadline passed */
        tide__lease_return(e, h, reason, reason == TIDE_R_DEADLINE && j->state == TIDE_JOB_RECLAIMING);
    j->n_leased = 0;
    running_del(e, h);
    tide__lent_sync(e, j);
    e->st.jobs_running--;
    if (reason != TIDE_R_COMPLETE) {
        tide_action_t *act = tide__act_push(e, TIDE_ACT_JOB_STOP, reason);
        act->job = h;
        act->width = 0;
        act->value = lost;
    }
    j->width = 0;
    j->progress = j->committed;
    j->progress_at = e->now;
    j->stop_pending = 0;
    tide__power_job_reset(j);
    switch (reason) {
    case TIDE_R_COMPLETE:
        j->state = TIDE_JOB_DONE;
        j->finished = e->now;
        j->progress = (double)j->spec.duration_s;
        e->st.jobs_completed++;
        break;
    case TIDE_R_CANCEL:
        j->state = TIDE_JOB_CANCELLED;
        j->finished = e->now;
        break;
    case TIDE_R_FAILURE:
        break;
    default:
        if (j->held)
            break; /* its driver asked for it (tide_engine_job_hold) */
        j->preemptions++;
        e->teams[j->team].preemptions++;
        e->st.preemptions++;
        break;
    }
    if (requeue && reason != TIDE_R_COMPLETE && reason != TIDE_R_CANCEL)
        tide__queue_insert(e, h);
    e->sched_dirty = 1;
    e->infer_dirty = 1;
}

static void resize_action(tide_engine_t *e, int32_t h, int reason)
{
    job_t *j = e->jobs[h];
    tide_action_t *act = tide__act_push(e, TIDE_ACT_JOB_RESIZE, reason);
    act->job = h;
    act->width = j->width;
    tide__act_gpus(e, act, &j->alloc);
}

/* Release the gangs of job h that pick() chooses (gang k, its GPUs) and
 * resize it to the rest, with reason. */
static void drop_gangs(tide_engine_t *e, int32_t h, int (*pick)(const int32_t *gpus, int g, int k,
                                                                  const void *ctx),
                       const void *ctx, int reason)
{
    job_t *j = e->jobs[h];
    int g = j->spec.gang_gpus;
    j->progress = tide__job_progress_now(j, e->now);
    j->progress_at = e->now;
    tide__acct_job_set(e, j, 0);
    int w = 0;
    for (int k = 0; k < j->width; k++) {
        if (pick(&j->alloc.gpus[k * g], g, k, ctx)) {
            for (int x = 0; x < g; x++)
                tide__dom_release(e, j->alloc.gpus[k * g + x]);
            continue;
        }
        if (w != k)
            memmove(&j->alloc.gpus[w * g], &j->alloc.gpus[k * g], (size_t)g * sizeof(int32_t));
        w++;
    }
    j->width = w;
    j->alloc.n = w * g;
    tide__job_doms_note(e, h);
    j->n_leased = count_leased(e, &j->alloc);
    tide__lent_sync(e, j);
    tide__acct_job_set(e, j, 1);
    if (j->lease >= 0)
        tide__lease_update(e, h);
    e->st.shrinks++;
    tide__end_index_set(e, h, tide__job_expected_end(j, e->now));
    resize_action(e, h, reason);
    e->infer_dirty = 1;
    e->sched_dirty = 1;
}

/* tide__job_shrink's choice: the first `gangs` gangs inside a domain. */
struct in_dom {
    const domain_t *d;
    int left;
};
static int pick_in_domain(const int32_t *gpus, int g, int k, const void *ctx)
{
    (void)g, (void)k;
    struct in_dom *x = (struct in_dom *)ctx;
    int in_d = gpus[0] >= x->d->first_gpu && gpus[0] < x->d->first_gpu + x->d->gpus;
    if (!in_d || x->left <= 0)
        return 0;
    x->left--;
    return 1;
}

void tide__job_shrink(tide_engine_t *e, int32_t h, int domain, int gangs)
{
    struct in_dom x = {&e->doms[domain], gangs};
    drop_gangs(e, h, pick_in_domain, &x, TIDE_R_RECLAIM);
}

static int pick_index(const int32_t *gpus, int g, int k, const void *ctx)
{
    (void)gpus, (void)g;
    return k == *(const int *)ctx;
}

/* The gang of job j with a GPU on node n (-1 when n is unknown or holds
 * none of its GPUs). */
static int gang_on_node(const tide_engine_t *e, const job_t *j, int n)
{
    int g = j->spec.gang_gpus;
    if (n >= 0 && n < e->n_nodes) {
        const node_t *nd = &e->nodes[n];
        for (int k = 0; k < j->alloc.n; k++)
            if (j->alloc.gpus[k] >= nd->first_gpu && j->alloc.gpus[k] < nd->first_gpu + nd->gpus)
                return k / g;
    }
    return -1;
}

int tide__job_cut(const tide_engine_t *e, const job_t *j)
{
    if (!e->n_cut)
        return 0;
    for (int k = 0; k < j->alloc.n; k++) {
        const domain_t *d = &e->doms[dom_of_gpu(e, j->alloc.gpus[k])];
        for (int n = d->first_node; n < d->first_node + d->n_nodes; n++)
            if (e->nodes[n].cut && j->alloc.gpus[k] >= e->nodes[n].first_gpu &&
                j->alloc.gpus[k] < e->nodes[n].first_gpu + e->nodes[n].gpus)
                return 1;
    }
    return 0;
}

int tide__job_rank_lost(tide_engine_t *e, int32_t h, int node)
{
    job_t *j = e->jobs[h];
    if (j->state != TIDE_JOB_RUNNING || j->width - 1 < j->spec.dp_min || j->width < 2)
        return 0;
    int k = gang_on_node(e, j, node);
    if (k < 0)
        return 0; /* where is unknown: the whole job restarts */
    drop_gangs(e, h, pick_index, &k, TIDE_R_FAILURE);
    j->grow_after = e->now + e->cfg.tick_s;
    if (j->grow_after < e->grow_at)
        e->grow_at = j->grow_after;
    return 1;
}

void tide__job_grow(tide_engine_t *e, int32_t h, alloc_t *extra, int gangs)
{
    job_t *j = e->jobs[h];
    j->progress = tide__job_progress_now(j, e->now);
    j->progress_at = e->now;
    tide__acct_job_set(e, j, 0);
    for (int k = 0; k < extra->n; k++)
        tide__alloc_push(&j->alloc, extra->gpus[k]);
    extra->n = 0;
    j->width += gangs;
    tide__job_doms_note(e, h);
    j->n_leased = count_leased(e, &j->alloc);
    tide__lent_sync(e, j);
    tide__acct_job_set(e, j, 1);
    if (j->lease >= 0)
        tide__lease_update(e, h);
    else if (j->n_leased)
        tide__lease_grant(e, h);
    tide__end_index_set(e, h, tide__job_expected_end(j, e->now));
    resize_action(e, h, TIDE_R_SCALE);
}

void tide__job_notice(tide_engine_t *e, int32_t h, int reason, int stop)
{
    job_t *j = e->jobs[h];
    if (j->state != TIDE_JOB_RUNNING)
        return;
    j->state = TIDE_JOB_RECLAIMING;
    j->notice_at = e->now;
    j->reclaim_reason = reason;
    j->stop_pending = stop;
    tide__lent_sync(e, j);
    double ck = tide__samples_q99(&e->smp[TIDE_SAMPLE_CKPT]);
    double base = 2.0 * (double)j->spec.ckpt_s;
    if (1.5 * ck > base)
        base = 1.5 * ck;
    j->deadline = e->now + (tide_time_t)ceil(base) + e->cfg.tick_s;
    tide__deadline_push(e, j->deadline, h);
    if (j->deadline < e->next_deadline)
        e->next_deadline = j->deadline;
    tide__end_index_set(e, h, j->deadline);
    tide_action_t *act = tide__act_push(e, TIDE_ACT_JOB_CKPT, reason);
    act->job = h;
    act->deadline = j->deadline;
    act->width = j->width;
    if (j->lease >= 0) {
        lease_t *l = &e->leases[j->lease];
        l->noticed = 1;
        tide__lease_note(e, h);
        if (l->latest_return > j->deadline) {
            l->latest_return = j->deadline;
            tide__deadline_push(e, l->latest_return, h);
            tide_action_t *r = tide__act_push(e, TIDE_ACT_LEASE_RENEW, reason);
            r->job = h;
            r->lease = j->lease;
            r->n_gpus = l->gpus;
            r->deadline = l->latest_return;
        } else {
            j->deadline = l->latest_return;
            act->deadline = j->deadline;
        }
    }
    if (reason == TIDE_R_RECLAIM || reason == TIDE_R_WINDOW)
        e->st.reclaims++;
}

/* ------------------------------------------------------------------ hold */

int tide_engine_job_hold(tide_engine_t *e, int32_t h, int hold, tide_error_t *err)
{
    if (h < 0 || (size_t)h >= e->n_jobs)
        return tide_errf(err, TIDE_ENOENT, "unknown job %d", (int)h);
    job_t *j = e->jobs[h];
    if (j->state == TIDE_JOB_DONE || j->state == TIDE_JOB_CANCELLED)
        return tide_errf(err, TIDE_ESTATE, "job %s: already %s", j->spec.id,
                         tide_job_state_name(j->state));
    hold = hold != 0;
    if (j->held == hold)
        return 0;
    if (!hold) {
        j->held = 0;
        if (j->state == TIDE_JOB_QUEUED)
            tide__queue_insert(e, h);
        return 0;
    }
    if (j->state == TIDE_JOB_QUEUED) {
        tide__queue_remove(e, h);
        clear_job_claims(e, h);
        e->sched_dirty = 1;
    } else {
        e->hold_dirty = 1;
    }
    j->held = 1;
    return 0;
}

void tide__job_hold_pass(tide_engine_t *e)
{
    e->hold_dirty = 0;
    for (size_t i = 0; i < e->n_running; i++) {
        int32_t h = e->running[i];
        job_t *j = e->jobs[h];
        if (!j->held)
            continue;
        if (j->state == TIDE_JOB_RUNNING)
            tide__job_notice(e, h, TIDE_R_SCALE, 1);
        else if (j->state == TIDE_JOB_RECLAIMING) {
            j->stop_pending = 1;
            tide__lent_sync(e, j);
        }
    }
}
