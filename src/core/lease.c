/* Leases: every GPU lent to training carries a lease with a latest return
 * time. Under `elastic` the latest return is forecast-aware: the earlier of
 * now + lease_max and the next forecast rise that needs these GPUs, minus the
 * return lead (so that even with tide down, the backend's enforcement hands
 * them back in time for the rise). Leases are renewed at half their term, so
 * a control-plane outage shorter than the remaining half expires nothing;
 * they are shortened as soon as a rise that needs them appears. The engine
 * enforces the deadline itself: a job still holding lent GPUs at its latest
 * return is stopped (its work since the last committed checkpoint is lost and
 * counted, as a lease expiry, not as a late reclaim). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

static void lower_deadline(tide_engine_t *e, tide_time_t t)
{
    if (t < e->next_deadline)
        e->next_deadline = t;
}

void tide__lease_grant(tide_engine_t *e, int32_t h)
{
    job_t *j = e->jobs[h];
    tide_grow((void **)&e->leases, &e->cap_leases, e->n_leases + 1, sizeof *e->leases);
    int32_t id = (int32_t)e->n_leases++;
    lease_t *l = &e->leases[id];
    memset(l, 0, sizeof *l);
    l->job = h;
    l->gpus = j->n_leased;
    l->start = e->now;
    l->term_start = e->now;
    if (e->pol->lease_renew_deadline)
        e->need_avail -= j->n_leased; /* counted as free by this tick's plan */
    l->latest_return = e->pol->lease_deadline(e, e->now);
    l->ckpt_cost = j->spec.ckpt_s;
    l->can_shrink = j->spec.dp_min < j->dp_max;
    j->lease = id;
    tide__deadline_push(e, l->latest_return, h);
    lower_deadline(e, l->latest_return);
    tide__lease_note(e, h);
    e->st.leases_granted++;
    tide_action_t *a = tide__act_push(e, TIDE_ACT_LEASE_GRANT, TIDE_R_NONE);
    a->lease = id;
    a->job = h;
    a->n_gpus = l->gpus;
    a->deadline = l->latest_return;
}

void tide__lease_update(tide_engine_t *e, int32_t h)
{
    job_t *j = e->jobs[h];
    lease_t *l = &e->leases[j->lease];
    if (j->n_leased == 0) {
        tide__lease_return(e, h, TIDE_R_RECLAIM, 0);
        return;
    }
    l->gpus = j->n_leased;
    tide__lease_note(e, h); /* its width (reclaim-order key) changed */
}

void tide__lease_return(tide_engine_t *e, int32_t h, int reason, int late)
{
    job_t *j = e->jobs[h];
    if (j->lease < 0)
        return;
    lease_t *l = &e->leases[j->lease];
    l->returned = 1;
    l->late = late;
    if (l->noticed && j->notice_at >= 0)
        tide__samples_add(&e->smp[TIDE_SAMPLE_RECLAIM_RETURN], (double)(e->now - j->notice_at));
    tide_action_t *a = tide__act_push(e, TIDE_ACT_LEASE_RETURN, reason);
    a->lease = j->lease;
    a->job = h;
    a->n_gpus = l->gpus;
    a->deadline = l->latest_return;
    j->lease = -1;
    tide__lease_note(e, h);
}

tide_time_t tide__reclaim_lead(tide_engine_t *e, int service)
{
    samples_t *ck = &e->smp[TIDE_SAMPLE_CKPT];
    double c = ck->n >= 20 ? tide__samples_q99(ck) : e->declared_ckpt_max;
    if (c < e->declared_ckpt_max && ck->n < 20)
        c = e->declared_ckpt_max;
    service_t *s = &e->svcs[service];
    double w = s->warm.n >= 5 ? tide__samples_q99(&s->warm) : (double)s->spec.warmup_s;
    if (w < (double)s->spec.warmup_s && s->warm.n < 5)
        w = (double)s->spec.warmup_s;
    w = tide__warmup_floor(s, w);
    return (tide_time_t)ceil(c + w) + e->cfg.lead_extra_s + s->late_extra + e->cfg.tick_s;
}

/* Time a checkpoint notice gives a job (as tide__job_notice does). */
static tide_time_t notice_span(tide_engine_t *e)
{
    double ck = tide__samples_q99(&e->smp[TIDE_SAMPLE_CKPT]);
    double base = 2.0 * e->declared_ckpt_max;
    if (1.5 * ck > base)
        base = 1.5 * ck;
    return (tide_time_t)ceil(base) + e->cfg.tick_s;
}

/* tide__replicas_for(s, v, margin) with the service's terms read once by
 * the caller: m1 = 1 + margin, rr its rate per replica, cap, lo, hi its
 * sizing cap and replica bounds. The same expression, so the same bits. */
static inline int need_r(double v, double m1, double rr, int cap, int lo, int hi)
{
    int r = v <= 0 ? 0 : tide__ceil_sat(v * m1 / rr - 1e-9, 0, cap);
    if (r < lo)
        r = lo;
    if (hi && r > hi)
        r = hi;
    return r;
}

/* curve[i] += tide__replicas_for(s, v[i], s->fc.margin) x gpus_per_replica
 * for each of the n buckets (need_r: no call per bucket, 73 per service
 * per tick). Debug builds (check_invariants) compare every bucket with
 * tide__replicas_for (memo_bad). */
static void need_add(tide_engine_t *e, const service_t *s, const double *v, int n, int *curve)
{
    double m1 = 1.0 + s->fc.margin, rr = s->spec.replica_rps;
    int cap = tide__replicas_cap(s->spec.gpus_per_replica), lo = s->spec.min_replicas,
        hi = s->spec.max_replicas, g = s->spec.gpus_per_replica;
    for (int i = 0; i < n; i++)
        curve[i] += need_r(v[i], m1, rr, cap, lo, hi) * g;
    if (e->cfg.check_invariants)
        for (int i = 0; i < n; i++)
            if (need_r(v[i], m1, rr, cap, lo, hi) != tide__replicas_for(s, v[i], s->fc.margin))
                e->memo_bad = 1;
}

void tide__lease_plan(tide_engine_t *e, tide_time_t now)
{
    tide_time_t lead = 0;
    for (int s = 0; s < e->n_svcs; s++) {
        tide_time_t l = tide__reclaim_lead(e, s);
        if (l > lead)
            lead = l;
    }
    tide_time_t span = notice_span(e);
    e->ret_lead = lead - span > e->cfg.tick_s ? lead - span : e->cfg.tick_s;
    e->min_term = span + 2 * e->cfg.tick_s;
    if (!e->pol->lease_renew_deadline)
        return;
    tide_time_t b = e->cfg.forecast_bucket_s;
    int n = (int)((e->cfg.lease_max_s + b - 1) / b) + 1;
    if (n > e->need_n) {
        free(e->need_curve);
        free(e->need_vals);
        e->need_curve = tide_xcalloc((size_t)n, sizeof *e->need_curve);
        e->need_vals = tide_xcalloc((size_t)n, sizeof *e->need_vals);
    }
    e->need_n = n;
    int64_t k0 = now >= 0 ? now / b : -((-now + b - 1) / b);
    e->need_t0 = k0 * b;
    memset(e->need_curve, 0, (size_t)n * sizeof *e->need_curve);
    double *v = e->need_vals;
    for (int si = 0; si < e->n_svcs; si++) {
        service_t *s = &e->svcs[si];
        tide__fc_curve(&s->fc, now, k0, n, v);
        need_add(e, s, v, n, e->need_curve);
    }
    /* what inference can use without taking lent GPUs back */
    int avail = 0;
    for (int z = 0; z < Z_COUNT; z++)
        if (e->pol->inf_zones & ZBIT(z))
            avail += e->zone_gpus[z] - e->zone_foreign[z];
    e->need_avail = avail - e->lent_run; /* kept by tide__lent_sync */
    tide__lease_need_pmax(e);
}

/* need_pmax[i]: the highest need of buckets 0..i (one pass over the curve,
 * per plan and after a restore). */
void tide__lease_need_pmax(tide_engine_t *e)
{
    tide_grow((void **)&e->need_pmax, &e->cap_need_pmax, (size_t)e->need_n + 1, sizeof *e->need_pmax);
    for (int i = 0, m = INT_MIN; i < e->need_n; i++)
        e->need_pmax[i] = m = e->need_curve[i] > m ? e->need_curve[i] : m;
}

int tide__lease_need_pmax_bad(const tide_engine_t *e)
{
    if (e->need_n && (size_t)e->need_n > e->cap_need_pmax)
        return 1;
    for (int i = 0, m = INT_MIN; i < e->need_n; i++) {
        m = e->need_curve[i] > m ? e->need_curve[i] : m;
        if (e->need_pmax[i] != m)
            return 1;
    }
    return 0;
}

tide_time_t tide__lease_deadline_forecast_at(const tide_engine_t *e, tide_time_t now, int gpus_before,
                                             int *cursor)
{
    tide_time_t end = now + e->cfg.lease_max_s;
    if (!e->need_n)
        return end;
    int have = e->need_avail + gpus_before;
    /* buckets before *cursor needed at most what fewer GPUs covered */
    for (int i = cursor ? *cursor : 0; i < e->need_n; i++) {
        tide_time_t t = e->need_t0 + (tide_time_t)i * e->cfg.forecast_bucket_s;
        if (t >= end)
            break;
        if (e->need_curve[i] > have) {
            if (cursor)
                *cursor = i;
            tide_time_t r = t - e->ret_lead;
            if (r < now + e->min_term)
                r = now + e->min_term;
            return r < end ? r : end;
        }
    }
    if (cursor)
        *cursor = e->need_n;
    return end;
}

/* tide__lease_deadline_forecast_at(e, now, 0, NULL) without the walk of the
 * curve: the walk returns at the first bucket above need_avail (found by
 * binary search on the running maxima need_pmax) unless a bucket at or
 * past now + lease_max comes first, and the buckets' times only grow. */
tide_time_t tide__lease_deadline_forecast(const tide_engine_t *e, tide_time_t now)
{
    tide_time_t end = now + e->cfg.lease_max_s;
    int lo = 0, hi = e->need_n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (e->need_pmax[mid] > e->need_avail)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (lo >= e->need_n)
        return end;
    tide_time_t t = e->need_t0 + (tide_time_t)lo * e->cfg.forecast_bucket_s;
    if (t >= end)
        return end;
    tide_time_t r = t - e->ret_lead;
    if (r < now + e->min_term)
        r = now + e->min_term;
    return r < end ? r : end;
}

/* Reclaim order of lent jobs, cheapest first (as reclaim.c picks victims):
 * lower priority, then shrinkable, then checkpoint + restore GPU-seconds. */
static int order_cmp(const void *a, const void *b)
{
    const struct lease_key *x = a, *y = b;
    if (x->prio != y->prio)
        return y->prio - x->prio;
    if (x->shrink != y->shrink)
        return y->shrink - x->shrink;
    if (x->cost != y->cost)
        return x->cost < y->cost ? -1 : 1;
    return x->h < y->h ? -1 : x->h > y->h;
}

/* The first of the n sorted keys o not before k. */
static size_t lower_bound(const struct lease_key *o, size_t n, const struct lease_key *k)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (order_cmp(&o[mid], k) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Does lease key k renew at deadline d: a rise needs its GPUs sooner, or d
 * extends it and it is at half its term or within min_term of its end? */
static int renew_due(const tide_engine_t *e, const struct lease_key *k, tide_time_t now, tide_time_t d)
{
    tide_time_t left = k->latest - now;
    int half = now - k->term_start >= (k->latest - k->term_start) / 2;
    int sooner = d < k->latest - e->cfg.forecast_bucket_s && d > now; /* a rise needs them */
    return sooner || (d > k->latest + e->cfg.tick_s && (half || left < e->min_term));
}

/* The earliest time from t0 on at which renew_due can hold for k in the
 * tail (d = now + lease_max) while the shortest term is e->min_term: t0
 * itself if a deadline sooner than k's may still come; else once d passes
 * latest + tick and k is at half its term or within min_term of its end
 * (each of those holds from some time on: the first time all hold). */
static void tail_wake_set(const tide_engine_t *e, struct lease_key *k, tide_time_t t0)
{
    tide_time_t lmax = e->cfg.lease_max_s, w;
    if (lmax > 0 && k->latest - e->cfg.forecast_bucket_s - lmax > t0) {
        w = t0;
    } else {
        tide_time_t grow = k->latest + e->cfg.tick_s - lmax + 1;
        tide_time_t half = k->term_start + (k->latest - k->term_start) / 2;
        tide_time_t near = k->latest - e->min_term + 1;
        w = TIDE_MAX(grow, TIDE_MIN(half, near));
    }
    k->wake = w;
    k->wake_mt = e->min_term;
}

/* The renewal tail's block bounds (e->lw_min): blocks of 16 keys of
 * lease_order (LW_SHIFT), each with a time no live key of it wakes before.
 * The tail skips a whole block before its bound and sets the bound of each
 * whole block it visits; a key given a new wake in place lowers its
 * block's bound (lw_lower), merge_runs carries the bounds across its
 * shifts (lw_merge; more new keys than LW_SPAN blocks hold make the bounds
 * after the first one unknown: lw_from), and a new min_term, a compaction
 * or a re-sort makes all unknown (lw_mt). */
#define LW_SHIFT 4
#define LW_SPAN 16 /* merge_runs carries bounds across up to 16 blocks of new keys */

static void lw_lower(tide_engine_t *e, size_t p, tide_time_t w)
{
    size_t b = p >> LW_SHIFT;
    if (b < e->cap_lw && w < e->lw_min[b])
        e->lw_min[b] = w;
}

static void lw_from(tide_engine_t *e, size_t p)
{
    for (size_t b = p >> LW_SHIFT; b < e->cap_lw; b++)
        e->lw_min[b] = INT64_MIN;
}

/* The block bounds after merge_runs put nm new keys at the ascending
 * positions pos[] of the n keys, the kept ones (kept of them) in their
 * order: a kept key at new position p was at p - (new keys before p). So
 * new block [P, Q) holds kept keys from old positions P - c(Q) to
 * Q - 1 - c(P) (c(t): new keys before t), whose old blocks' bounds
 * bound them, and the new keys placed in it, bounded by their wakes.
 * Blocks from the last down: the old bounds read are at or below the
 * block written. Blocks before the first new key's do not change. */
static void lw_merge(tide_engine_t *e, size_t kept, size_t n, const size_t *pos, size_t nm)
{
    const struct lease_key *o = e->lease_order;
    size_t B = (size_t)1 << LW_SHIFT, cq = nm, cp = nm;
    for (size_t b = (n - 1) >> LW_SHIFT; ; b--) {
        size_t P = b * B, Q = P + B;
        while (cq > 0 && pos[cq - 1] >= Q)
            cq--;
        cp = cq;
        tide_time_t lo = TIDE_TIME_NEVER;
        while (cp > 0 && pos[cp - 1] >= P) {
            cp--;
            if (o[pos[cp]].wake < lo)
                lo = o[pos[cp]].wake;
        }
        /* kept keys: old positions [P - cq, Q - 1 - cp], below kept */
        size_t from = P > cq ? P - cq : 0, to = Q - 1 - cp;
        if (to > kept - 1)
            to = kept - 1;
        if (kept && from <= to)
            for (size_t ob = from >> LW_SHIFT; ob <= to >> LW_SHIFT; ob++)
                if (e->lw_min[ob] < lo)
                    lo = e->lw_min[ob];
        e->lw_min[b] = lo;
        if (cp == 0 || b == 0)
            break; /* no new key before this block: the rest stands */
    }
}

static void renew(tide_engine_t *e, struct lease_key *k, tide_time_t now, tide_time_t d)
{
    int32_t h = k->h;
    lease_t *l = &e->leases[k->lease];
    k->latest = d;
    k->term_start = now;
    tail_wake_set(e, k, now);
    lw_lower(e, (size_t)(k - e->lease_order), k->wake);
    l->latest_return = d;
    tide__deadline_push(e, d, h);
    l->term_start = now;
    tide_action_t *a = tide__act_push(e, TIDE_ACT_LEASE_RENEW, TIDE_R_NONE);
    a->lease = e->jobs[h]->lease;
    a->job = h;
    a->n_gpus = l->gpus;
    a->deadline = d;
}

static int renewable(const tide_engine_t *e, const job_t *j)
{
    return j->lease >= 0 && !e->leases[j->lease].noticed && j->state == TIDE_JOB_RUNNING;
}

static struct lease_key key_of(const tide_engine_t *e, const job_t *j, int32_t h)
{
    const lease_t *l = &e->leases[j->lease];
    struct lease_key k = {.prio = j->spec.priority, .shrink = j->width > j->spec.dp_min,
                          .cost = (double)j->spec.gpus * (double)(j->spec.ckpt_s + j->spec.restore_s),
                          .h = h, .lease = j->lease, .n_leased = j->n_leased,
                          .term_start = l->term_start, .latest = l->latest_return};
    tail_wake_set(e, &k, e->now);
    return k;
}

/* Merge the sorted runs lease_order[0, kept) and [kept, n) in place: the
 * new keys (few, as a rule) are copied aside, then from the last one down
 * each finds its place among the kept ones by binary search and the kept
 * keys after it move up in one memmove (each kept key moves once). */
static void merge_runs(tide_engine_t *e, size_t kept, size_t n)
{
    struct lease_key *o = e->lease_order, *m;
    size_t nm = n - kept, a = kept;
    tide_grow((void **)&e->lease_merge, &e->cap_lease_merge, nm, sizeof *e->lease_merge);
    m = e->lease_merge;
    memcpy(m, o + kept, nm * sizeof *m);
    /* the tail's block bounds (up to LW_SPAN blocks of new keys; else
     * unknown from the first new key on): see lw_merge */
    size_t pos[LW_SPAN << LW_SHIFT];
    int shift = nm <= (LW_SPAN << LW_SHIFT) && ((n - 1) >> LW_SHIFT) < e->cap_lw;
    if (!shift)
        lw_from(e, lower_bound(o, kept, &m[0]));
    for (size_t x = nm; x-- > 0;) {
        size_t lo = lower_bound(o, a, &m[x]); /* first kept key after m[x] (the order is total) */
        memmove(o + lo + x + 1, o + lo, (a - lo) * sizeof *o);
        o[lo + x] = m[x];
        if (shift)
            pos[x] = lo + x;
        a = lo;
    }
    if (shift)
        lw_merge(e, kept, n, pos, nm);
}

static int noted(const tide_engine_t *e, int32_t h)
{
    return (size_t)h < e->cap_renew_mark && e->renew_mark[h];
}

/* Position of listed job h's key in lease_order, by binary search on the
 * key it was listed with: its priority and cost come from its spec, which
 * does not change; its shrink flag may have, so both are tried. SIZE_MAX
 * if not found. */
static size_t find_listed(const tide_engine_t *e, const job_t *j, int32_t h)
{
    struct lease_key k = {.prio = j->spec.priority,
                          .cost = (double)j->spec.gpus * (double)(j->spec.ckpt_s + j->spec.restore_s),
                          .h = h};
    const struct lease_key *o = e->lease_order;
    for (k.shrink = 0; k.shrink < 2; k.shrink++) {
        size_t lo = lower_bound(o, e->n_lease_order, &k);
        while (lo < e->n_lease_order && o[lo].h == h && o[lo].lease < 0)
            lo++; /* a dropped key of the same job (same key) */
        if (lo < e->n_lease_order && o[lo].h == h)
            return lo;
    }
    return SIZE_MAX;
}

static int pos_cmp(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* Re-key or drop the noted jobs' keys in lease_order without a look at
 * the others: each is found by find_listed; one still renewable whose new
 * key keeps its place is re-keyed there, the others are dropped (those
 * still renewable are keyed again as new ones): marked dropped (lease -1)
 * in place, so that nothing moves; compact_order removes them later.
 * Returns the length of the list, or SIZE_MAX (nothing changed) if one was
 * not found: then the caller scans the list. */
static size_t drop_noted(tide_engine_t *e)
{
    size_t *pos = tide_xmalloc((e->n_renew_new + 1) * sizeof *pos), np = 0;
    for (size_t i = 0; i < e->n_renew_new; i++) {
        int32_t h = e->renew_new[i];
        const job_t *j = e->jobs[h];
        if (!j->in_lease_order)
            continue;
        pos[np] = find_listed(e, j, h);
        if (pos[np++] == SIZE_MAX) {
            free(pos);
            return SIZE_MAX;
        }
    }
    qsort(pos, np, sizeof *pos, pos_cmp);
    struct lease_key *o = e->lease_order;
    size_t n = e->n_lease_order, nd = 0;
    /* still renewable with a key that stays between its neighbours' (the
     * array stays sorted through each such write): re-keyed in place */
    for (size_t x = 0; x < np; x++) {
        size_t p = pos[x];
        job_t *j = e->jobs[o[p].h];
        if (renewable(e, j)) {
            struct lease_key k = key_of(e, j, o[p].h);
            if ((p == 0 || order_cmp(&o[p - 1], &k) < 0) && (p + 1 >= n || order_cmp(&k, &o[p + 1]) < 0)) {
                o[p] = k;
                lw_lower(e, p, k.wake);
                continue;
            }
        }
        j->in_lease_order = 0;
        o[p].lease = -1; /* dropped: keeps its key, so the list stays sorted */
        o[p].n_leased = 0;
        o[p].wake = TIDE_TIME_NEVER; /* the tail's first test passes over it */
        nd++;
    }
    e->n_lease_dead += nd;
    free(pos);
    return n;
}

/* Remove the dropped keys (lease -1) from lease_order in one pass, once
 * they are a quarter of it: each drop then costs O(1) moves amortised
 * instead of a memmove of the keys after it. The live keys keep their
 * order; the walks (renew_pass, find_listed, merge_runs) skip or pass
 * over the dropped ones, which keep their keys (sorted, and a live key
 * comes before a dropped one equal to it: merge_runs inserts at the
 * lower bound). */
static void compact_order(tide_engine_t *e, int force)
{
    if (!e->n_lease_dead || (!force && e->n_lease_dead * 4 < e->n_lease_order))
        return;
    struct lease_key *o = e->lease_order;
    size_t n = 0;
    for (size_t i = 0; i < e->n_lease_order; i++)
        if (o[i].lease >= 0) {
            if (n != i)
                o[n] = o[i];
            n++;
        }
    e->n_lease_order = n;
    e->n_lease_dead = 0;
    e->lw_mt = 0; /* keys moved: every block bound unknown */
}

static size_t rekey_listed(tide_engine_t *e, int *sorted);

/* The renewable leases in reclaim order, updated from the previous pass:
 * those not noted since keep their place and key without a look at the job
 * (every change of their renewability or key notes them), the noted ones
 * are dropped (drop_noted; or re-keyed in a scan, rekey_listed) and keyed
 * again if still renewable, new ones are sorted and merged in. The order is total (ties broken by handle), so this
 * equals sorting them all. Returns their number. */
static size_t renew_order(tide_engine_t *e)
{
    if (!e->renew_rescan && !e->n_renew_new)
        return e->n_lease_order; /* nothing noted: the order and keys stand */
    int sorted = 1;
    size_t n = e->renew_rescan ? SIZE_MAX : drop_noted(e);
    if (n == SIZE_MAX)
        n = rekey_listed(e, &sorted);
    size_t kept = n;
    /* the others renewable now: among the jobs noted since the last pass
     * (every running job after a restore) */
    size_t nc = e->renew_rescan ? e->n_running : e->n_renew_new;
    const int32_t *cand = e->renew_rescan ? e->running : e->renew_new;
    for (size_t i = 0; i < nc; i++) {
        int32_t h = cand[i];
        job_t *j = e->jobs[h];
        if (j->in_lease_order || !renewable(e, j))
            continue;
        tide_grow((void **)&e->lease_order, &e->cap_lease_order, n + 1, sizeof *e->lease_order);
        e->lease_order[n++] = key_of(e, j, h);
        j->in_lease_order = 1;
    }
    for (size_t i = 0; i < e->n_renew_new; i++)
        e->renew_mark[e->renew_new[i]] = 0;
    e->n_renew_new = 0;
    e->renew_rescan = 0;
    struct lease_key *o = e->lease_order;
    e->n_lease_order = n;
    if (!sorted) {
        qsort(o, n, sizeof *o, order_cmp);
        e->lw_mt = 0;
    } else if (n > kept) {
        qsort(o + kept, n - kept, sizeof *o, order_cmp);
        merge_runs(e, kept, n);
    }
    compact_order(e, 0);
    return e->n_lease_order;
}

/* The listed leases, each noted job's re-keyed in place or dropped (no
 * longer renewable), in one scan; *sorted is cleared if a new key breaks
 * the order. Returns how many stay. */
static size_t rekey_listed(tide_engine_t *e, int *sorted)
{
    struct lease_key *o = e->lease_order;
    size_t n = 0;
    int rekeyed = 0; /* rekeyed: o[n - 1] got a new key */
    for (size_t i = 0; i < e->n_lease_order; i++) {
        int32_t h = o[i].h;
        if (o[i].lease < 0)
            continue; /* dropped (drop_noted): removed here */
        int fresh = e->renew_rescan || noted(e, h);
        if (fresh) {
            job_t *j = e->jobs[h];
            j->in_lease_order = renewable(e, j);
            if (!j->in_lease_order)
                continue;
            o[n] = key_of(e, j, h);
        } else if (n != i) {
            o[n] = o[i];
        }
        /* two kept keys stay in order */
        if (n && (fresh || rekeyed) && order_cmp(&o[n - 1], &o[n]) > 0)
            *sorted = 0;
        rekeyed = fresh;
        n++;
    }
    e->n_lease_dead = 0;
    e->lw_mt = 0; /* keys moved: every block bound unknown */
    return n;
}

void tide__lease_note(tide_engine_t *e, int32_t h)
{
    if (!e->pol->renew_leases || noted(e, h))
        return;
    tide_grow_zeroed((void **)&e->renew_mark, &e->cap_renew_mark, (size_t)h + 1, 1);
    e->renew_mark[h] = 1;
    TIDE_PUSH(e->renew_new, e->n_renew_new, e->cap_renew_new, h);
}

/* A listed lease not noted whose job is not renewable or whose key changed,
 * or -1. */
static int32_t listed_check(const tide_engine_t *e)
{
    const struct lease_key *live = NULL; /* the last live key */
    size_t dead = 0;
    for (size_t i = 0; i < e->n_lease_order; i++) {
        const struct lease_key *k = &e->lease_order[i];
        const job_t *j = e->jobs[k->h];
        /* sorted; live keys strictly, and none after a dropped one equal to it */
        if (i && (order_cmp(k - 1, k) > 0 || (order_cmp(k - 1, k) == 0 && k->lease >= 0)))
            return k->h; /* out of order: find_listed would miss it */
        if (k->lease < 0) {
            dead++;
            continue;
        }
        if (live && order_cmp(live, k) >= 0)
            return k->h;
        live = k;
        if (noted(e, k->h))
            continue;
        if (!renewable(e, j) || !j->in_lease_order)
            return k->h;
        struct lease_key now = key_of(e, j, k->h);
        if (now.prio != k->prio || now.shrink != k->shrink || now.cost != k->cost ||
            now.lease != k->lease || now.n_leased != k->n_leased ||
            now.term_start != k->term_start || now.latest != k->latest)
            return k->h;
    }
    if (dead != e->n_lease_dead)
        return e->n_lease_order ? e->lease_order[0].h : 0;
    return -1;
}

int32_t tide__renew_check(const tide_engine_t *e)
{
    if (e->renew_rescan || !e->pol->renew_leases)
        return -1;
    int32_t bad = listed_check(e);
    for (size_t i = 0; i < e->n_running && bad < 0; i++) {
        int32_t h = e->running[i];
        const job_t *j = e->jobs[h];
        if (renewable(e, j) && !j->in_lease_order && !noted(e, h))
            bad = h;
    }
    return bad;
}

static void renew_if_due(tide_engine_t *e, struct lease_key *k, tide_time_t now, tide_time_t d)
{
    if (!renew_due(e, k, now, d))
        return;
    if (e->n_cut && tide__job_cut(e, e->jobs[k->h]))
        return; /* the far side cannot hear: its lease runs out on its own */
    renew(e, k, now, d);
}

/* Renew at half the term, shorten when a rise needs the GPUs sooner, and
 * never let a lease nobody noticed run out while tide is up. The forecast
 * deadline, once its cursor has passed the need curve, is now + lease_max
 * for every lease after (tide__lease_deadline_forecast_at): not asked again. */
static void renew_pass(tide_engine_t *e, tide_time_t now)
{
    size_t n = renew_order(e), i = 0;
    int before = 0, cursor = 0;
    int fc = e->pol->lease_renew_deadline == tide__lease_deadline_forecast_at;
    for (; i < n && !(fc && cursor >= e->need_n); i++) {
        struct lease_key *k = &e->lease_order[i];
        if (k->lease < 0)
            continue; /* dropped */
        tide_time_t d = e->pol->lease_renew_deadline ? e->pol->lease_renew_deadline(e, now, before, &cursor)
                                                     : e->pol->lease_deadline(e, now);
        before += k->n_leased;
        renew_if_due(e, k, now, d);
    }
    /* the tail: past the need curve every deadline is now + lease_max, and
     * a lease before its wake is not due (checked in debug builds); a wake
     * computed under another min_term is computed again from now */
    tide_time_t d = now + e->cfg.lease_max_s;
    struct lease_key *o = e->lease_order;
    int chk = e->cfg.check_invariants;
    tide_time_t mt = e->min_term; /* set by tide__lease_plan, not here */
    size_t nb = (n >> LW_SHIFT) + 1;
    if (nb > e->cap_lw) {
        size_t old = e->cap_lw;
        tide_grow((void **)&e->lw_min, &e->cap_lw, nb, sizeof *e->lw_min);
        for (size_t b = old; b < e->cap_lw; b++)
            e->lw_min[b] = INT64_MIN;
    }
    if (e->lw_mt != mt) { /* another shortest term: every wake is computed again */
        lw_from(e, 0);
        e->lw_mt = mt;
    }
    while (i < n) {
        size_t b = i >> LW_SHIFT, end = (b + 1) << LW_SHIFT;
        if (end > n)
            end = n;
        int whole = (i & ((1u << LW_SHIFT) - 1)) == 0;
        /* a whole block before its bound: no key of it is due (debug
         * builds visit it, and any key due or not yet keyed under mt there
         * is a wrong bound) */
        int skip = whole && now < e->lw_min[b];
        if (skip && !chk) {
            i = end;
            continue;
        }
        tide_time_t lo = TIDE_TIME_NEVER;
        for (; i < end; i++) {
            struct lease_key *k = &o[i];
            /* a dropped key's wake is never (drop_noted): one test passes
             * over it with the live keys before their wake */
            if (now < k->wake && k->wake_mt == mt) {
                if (chk && k->lease >= 0 && renew_due(e, k, now, d))
                    e->memo_bad = 1;
            } else if (k->lease >= 0) {
                if (skip)
                    e->memo_bad = 1;
                if (k->wake_mt != mt)
                    tail_wake_set(e, k, now); /* the shortest term changed since */
                if (now >= k->wake)
                    renew_if_due(e, k, now, d);
                else if (chk && renew_due(e, k, now, d))
                    e->memo_bad = 1;
            }
            if (k->wake < lo)
                lo = k->wake;
        }
        if (whole)
            e->lw_min[b] = lo;
    }
}

/* ---------------------------------------------------------------- deadlines */


static int dl_less(const struct deadline_ent *a, const struct deadline_ent *b)
{
    return a->t < b->t || (a->t == b->t && a->h < b->h);
}

/* The deadline heap is 4-ary (children of i: 4 i + 1 .. 4 i + 4): half the
 * levels of a binary one. Only its least entry is ever read, and the pops
 * take out the same entries whatever the arity (stop_due orders the due
 * jobs by run slot), so the arity changes no decision. */
static void dl_sift_down(struct deadline_ent *v, size_t n, size_t i)
{
    struct deadline_ent x = v[i];
    for (;;) {
        size_t c = 4 * i + 1;
        if (c >= n)
            break;
        size_t m = c, end = c + 4 < n ? c + 4 : n;
        for (size_t k = c + 1; k < end; k++)
            if (dl_less(&v[k], &v[m]))
                m = k;
        if (!dl_less(&v[m], &x))
            break;
        v[i] = v[m];
        i = m;
    }
    v[i] = x;
}

/* Is entry x one of the job's current deadlines? */
static int dl_live(const tide_engine_t *e, const struct deadline_ent *x)
{
    const job_t *j = e->jobs[x->h];
    if (j->run_idx < 0)
        return 0;
    return (j->lease >= 0 && e->leases[j->lease].latest_return == x->t) ||
           (j->state == TIDE_JOB_RECLAIMING && j->deadline == x->t);
}

static void dl_pop(tide_engine_t *e)
{
    e->dl[0] = e->dl[--e->n_dl];
    dl_sift_down(e->dl, e->n_dl, 0);
}

/* Drop the stale entries when they outnumber the live ones. */
static void dl_compact(tide_engine_t *e)
{
    size_t n = 0;
    for (size_t i = 0; i < e->n_dl; i++)
        if (dl_live(e, &e->dl[i]))
            e->dl[n++] = e->dl[i];
    e->n_dl = n;
    for (size_t i = n / 4 + 1; i-- > 0;)
        dl_sift_down(e->dl, n, i);
}

void tide__deadline_push(tide_engine_t *e, tide_time_t t, int32_t h)
{
    if (e->n_dl >= 1024 && e->n_dl >= 4 * e->n_running)
        dl_compact(e);
    tide_grow((void **)&e->dl, &e->cap_dl, e->n_dl + 1, sizeof *e->dl);
    size_t i = e->n_dl++;
    struct deadline_ent x = {t, h};
    while (i > 0 && dl_less(&x, &e->dl[(i - 1) / 4])) {
        e->dl[i] = e->dl[(i - 1) / 4];
        i = (i - 1) / 4;
    }
    e->dl[i] = x;
}

int32_t tide__deadline_check(const tide_engine_t *e)
{
    /* count, per job, the live entries for each of its two deadlines */
    uint8_t *has = tide_xcalloc(e->n_jobs + 1, 1);
    for (size_t i = 0; i < e->n_dl; i++) {
        const struct deadline_ent *x = &e->dl[i];
        const job_t *j = e->jobs[x->h];
        if (j->run_idx < 0)
            continue;
        if (j->lease >= 0 && e->leases[j->lease].latest_return == x->t)
            has[x->h] |= 1;
        if (j->state == TIDE_JOB_RECLAIMING && j->deadline == x->t)
            has[x->h] |= 2;
    }
    int32_t bad = -1;
    for (size_t i = 0; i < e->n_running && bad < 0; i++) {
        int32_t h = e->running[i];
        const job_t *j = e->jobs[h];
        int want = (j->lease >= 0 ? 1 : 0) | (j->state == TIDE_JOB_RECLAIMING ? 2 : 0);
        if ((has[h] & want) != want)
            bad = h;
    }
    free(has);
    return bad;
}

static int due(const tide_engine_t *e, const job_t *j, tide_time_t now)
{
    return (j->state == TIDE_JOB_RECLAIMING && now >= j->deadline) ||
           (j->lease >= 0 && now >= e->leases[j->lease].latest_return);
}

/* Stop the running jobs past a deadline, in the order a scan of e->running
 * would (tide__job_stop moves the last running job into the freed slot,
 * which the scan then looks at): the due jobs come from the heap. */
static void stop_due(tide_engine_t *e, tide_time_t now)
{
    int32_t *d = NULL;
    size_t n = 0, cap = 0;
    while (e->n_dl && e->dl[0].t <= now) {
        int32_t h = e->dl[0].h;
        dl_pop(e);
        job_t *j = e->jobs[h];
        int listed = 0;
        for (size_t k = 0; k < n && !listed; k++)
            listed = d[k] == h;
        if (!listed && j->run_idx >= 0 && due(e, j, now))
            TIDE_PUSH(d, n, cap, h);
    }
    int32_t at = 0;
    while (n) {
        size_t best = n;
        for (size_t k = 0; k < n; k++) {
            int32_t r = e->jobs[d[k]]->run_idx;
            if (r >= at && (best == n || r < e->jobs[d[best]]->run_idx))
                best = k;
        }
        if (best == n)
            break;
        int32_t h = d[best];
        d[best] = d[--n];
        at = e->jobs[h]->run_idx;
        if (due(e, e->jobs[h], now))
            tide__job_stop(e, h, TIDE_R_DEADLINE, 1);
    }
    free(d);
}

void tide__lease_tick(tide_engine_t *e, tide_time_t now)
{
    stop_due(e, now);
    if (e->pol->renew_leases)
        renew_pass(e, now);
    while (e->n_dl && !dl_live(e, &e->dl[0]))
        dl_pop(e);
    e->next_deadline = e->n_dl ? e->dl[0].t : TIDE_TIME_NEVER;
}
