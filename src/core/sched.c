/* Training: priority queues with EASY-style backfill. The head job of each
 * priority that does not fit gets a reservation (the earliest time its gang
 * fits, from the declared durations of running jobs, and the GPUs per domain
 * it will take then); later jobs start only if they end before that time or
 * leave those GPUs alone. A P1 head that does not fit preempts P2/P3 victims
 * (whole jobs, lowest priority and least work lost first) through the same
 * checkpoint protocol. Leftover GPUs grow shrunken elastic jobs back. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

unsigned tide__train_zones_now(const tide_engine_t *e, tide_time_t now)
{
    return e->pol->train_zones(e, now);
}


static int contrib(int avail, int gang) { return avail / gang; }

/* Domains with GPUs available for a reservation: the only ones with
 * avail[d] > 0, listed once each (a domain is listed exactly when its
 * avail turns positive: avail never falls during a computation). */
typedef struct touched {
    int *v, n;
} touched_t;

/* The listed domains with at least a gang's GPUs (avail[d] >= g), as they
 * get there: the only ones the best fit may pick. n = -1 once more than
 * CAND_MAX (then the best fit gathers them from the list). */
enum { CAND_MAX = 64 };
typedef struct cands {
    int v[CAND_MAX], n;
} cands_t;

static void cand_add(cands_t *c, int d)
{
    if (c->n == CAND_MAX)
        c->n = -1;
    else if (c->n >= 0)
        c->v[c->n++] = d;
}

/* avail[d]: the free GPUs of domain d usable by h, less what the prior
 * reservations took there (0 for every domain without free GPUs: only the
 * free-domain index is visited, one word of every free count's bitmap at
 * a time). avail and res are zero but on the n_nz domains nz lists (the
 * last computation's), cleared first: t lists into nz, c those with a
 * gang. Returns the gangs of g the listed domains hold (0 for g larger
 * than every domain). */
static int reservation_avail(const tide_engine_t *e, int32_t h, uint32_t types, unsigned tz,
                             const reservation_t *prior, int n_prior, int *avail, int *res,
                             const int *nz, int n_nz, touched_t *t, int g, cands_t *c)
{
    for (int k = 0; k < n_nz; k++)
        avail[nz[k]] = res[nz[k]] = 0;
    int cap = 0, nf = e->max_dom_gpus, nw = (e->n_doms + 63) >> 6;
    const uint64_t *m1 = tide__free_map(e, 1);
    size_t stride = e->dom_words;
    for (int w = 0; w < nw; w++) {
        uint64_t x = 0;
        for (int f = 0; f < nf; f++)
            x |= m1[(size_t)f * stride + (size_t)w];
        for (; x; x &= x - 1) {
            int d = (w << 6) + __builtin_ctzll(x);
            const domain_t *dm = &e->doms[d];
            if (!tide__domain_ok(e, dm, types, tz, OWN_JOB, h))
                continue;
            int a = dm->free_slot; /* >= 1: d is in free map a */
            if (n_prior) {
                for (int k = 0; k < n_prior; k++)
                    a -= prior[k].res[d];
                if (a <= 0)
                    continue;
            }
            avail[d] = a;
            t->v[t->n++] = d;
            if (a >= g) {
                cap += a / g;
                cand_add(c, d);
            }
        }
    }
    return cap;
}

/* The listed domain with the fewest GPUs left that still hold a gang of g
 * (the lowest index among equals, as a scan in index order), or -1. */
static int touched_best_fit(const touched_t *t, const int *avail, const int *res, int g)
{
    int best = -1, best_left = 0;
    for (int k = 0; k < t->n; k++) {
        int d = t->v[k], left = avail[d] - res[d];
        if (left >= g && (best < 0 || left < best_left || (left == best_left && d < best))) {
            best = d;
            best_left = left;
        }
    }
    return best;
}

/* need gangs of g, each to touched_best_fit's domain (the fewest GPUs left
 * that hold a gang, ties to the lowest index). Only the domains that hold a
 * gang now can take one (what is left only falls): with c listing them,
 * each gang scans those. Else (more than CAND_MAX) a single gang scans the
 * list t, several are bucketed by GPUs left (a bitmap of domain indices per
 * count, 0..max_dom_gpus): a gang goes to the lowest index in the lowest
 * bucket >= g, which moves down g buckets. */
static void best_fit_gangs(const tide_engine_t *e, const touched_t *t, const cands_t *c, const int *avail,
                           int *res, int g, int need)
{
    const int *cand = c->v;
    int nc = c->n;
    int nb = e->max_dom_gpus + 1, scan = nc >= 0 || need < 2;
    for (int k = 0; !scan && k < t->n; k++)
        scan = avail[t->v[k]] >= nb; /* more than a domain: no bucket */
    if (scan) {
        touched_t cl = {(int *)cand, nc};
        const touched_t *l = nc >= 0 ? &cl : t;
        for (int x = 0; x < need; x++) {
            int best = touched_best_fit(l, avail, res, g);
            if (best < 0)
                return;
            res[best] += g;
        }
        return;
    }
    size_t words = ((size_t)e->n_doms + 63) / 64;
    uint64_t *b = tide_xcalloc((size_t)nb * words, sizeof *b);
    for (int k = 0; k < t->n; k++) {
        int d = t->v[k], left = avail[d] - res[d];
        if (left >= g)
            b[(size_t)left * words + (size_t)d / 64] |= (uint64_t)1 << (d % 64);
    }
    for (int k = 0; k < need; k++) {
        int d = -1;
        for (int l = g; l < nb && d < 0; l++)
            for (size_t w = 0; w < words && d < 0; w++)
                if (b[(size_t)l * words + w])
                    d = (int)(w * 64) + __builtin_ctzll(b[(size_t)l * words + w]);
        if (d < 0)
            break;
        int left = avail[d] - res[d];
        b[(size_t)left * words + (size_t)d / 64] &= ~((uint64_t)1 << (d % 64));
        res[d] += g;
        if (left - g >= g)
            b[(size_t)(left - g) * words + (size_t)d / 64] |= (uint64_t)1 << (d % 64);
    }
    free(b);
}

/* Whole-domain gangs: need gangs on domains left entirely available, lowest
 * indices first. */
static void whole_fit(const tide_engine_t *e, int need, int g, const int *avail, int *res)
{
    for (int k = 0; k < need; k++) {
        int best = -1;
        for (int d = 0; d < e->n_doms && best < 0; d++)
            if (avail[d] - res[d] == e->doms[d].gpus)
                best = d;
        if (best < 0)
            break;
        res[best] += e->doms[best].gpus;
        int more = g / e->doms[best].gpus - 1;
        for (int d = 0; d < e->n_doms && more > 0; d++)
            if (d != best && avail[d] - res[d] == e->doms[d].gpus) {
                res[d] += e->doms[d].gpus;
                more--;
            }
    }
}

/* e->jdom[h] from job h's GPUs (see internal.h). */
static int32_t job_doms_of(const tide_engine_t *e, int32_t h)
{
    const job_t *j = e->jobs[h];
    int g = j->spec.gang_gpus, n = j->alloc.n;
    if (g > e->max_dom_gpus || n < 1 || n > 255 || n % g)
        return -1;
    int d = dom_of_gpu(e, j->alloc.gpus[0]);
    for (int k = g; k < n; k += g)
        if (dom_of_gpu(e, j->alloc.gpus[k]) != d)
            return -1;
    return d < (1 << 23) ? (int32_t)((d << 8) | n) : -1;
}

void tide__job_doms_note(tide_engine_t *e, int32_t h)
{
    tide_grow((void **)&e->jdom, &e->jdomcap, (size_t)h + 1, sizeof *e->jdom);
    e->jdom[h] = job_doms_of(e, h);
}

void tide__job_doms_rebuild(tide_engine_t *e)
{
    for (size_t i = 0; i < e->n_by_end; i++)
        tide__job_doms_note(e, e->by_end[i]);
}

int32_t tide__job_doms_check(const tide_engine_t *e)
{
    for (size_t i = 0; i < e->n_by_end; i++) {
        int32_t h = e->by_end[i];
        if ((size_t)h >= e->jdomcap || e->jdom[h] != job_doms_of(e, h))
            return h;
    }
    return -1;
}

/* The state of a reservation's walk over the releases (reservation_compute). */
typedef struct walk {
    const tide_engine_t *e;
    int32_t h;
    uint32_t types;
    unsigned tz;
    int g, whole, have;
    int *avail;
    touched_t t;
    cands_t c;
} walk_t;

/* n GPUs of domain d released (one gang's step, or a whole job's GPUs on d:
 * the same, as the clamp composes and the gangs counted telescope). */
static inline void walk_add(walk_t *w, int d, int n)
{
    const domain_t *dm = &w->e->doms[d];
    if (!tide__domain_ok(w->e, dm, w->types, w->tz, OWN_JOB, w->h))
        return;
    int a0 = w->avail[d], a1 = TIDE_MIN(a0 + n, dm->gpus);
    if (!a0)
        w->t.v[w->t.n++] = d;
    w->avail[d] = a1;
    if (!w->whole && a1 >= w->g) { /* below g: no gang before or after */
        w->have += contrib(a1, w->g) - contrib(a0, w->g);
        if (a0 < w->g)
            cand_add(&w->c, d);
    }
}

/* The releases of running job h (the walk's next one). */
static inline void walk_job(walk_t *w, int32_t h)
{
    const tide_engine_t *e = w->e;
    int32_t jd = e->jdom[h];
    if (jd >= 0) {
        walk_add(w, jd >> 8, jd & 255);
        return;
    }
    const job_t *x = e->jobs[h];
    int xg = x->spec.gang_gpus;
    int step = xg <= e->max_dom_gpus ? xg : 1;
    for (int k = 0; k < x->alloc.n; k += step)
        walk_add(w, dom_of_gpu(e, x->alloc.gpus[k]), step);
}

/* The EASY reservation of head job h after the n_prior reservations before
 * it: the earliest time its gang fits (from the expected releases of running
 * jobs) and the GPUs per domain it takes then. Read-only on the engine:
 * fills out->avail (free GPUs per domain at that time) and out->res (GPUs
 * reserved per domain), listing in out->nz every domain where either is
 * non-zero (out must come zero but on the domains out->nz lists); returns
 * that time or TIDE_TIME_NEVER. Visits the domains with free GPUs and those
 * the releases touch, not the cluster (but for gangs larger than a domain). */
static tide_time_t reservation_compute(const tide_engine_t *e, int32_t h, unsigned tz,
                                       const reservation_t *prior, int n_prior, reservation_t *out)
{
    const job_t *j = e->jobs[h];
    int g = j->spec.gang_gpus, need = j->spec.dp_min;
    uint32_t types = j->spec.gpu_types;
    int *avail = out->avail, *res = out->res;
    walk_t w = {.e = e, .h = h, .types = types, .tz = tz, .g = g, .whole = g > e->max_dom_gpus,
                .avail = avail, .t = {out->nz, 0}, .c = {.n = 0}};
    int whole = w.whole;
    w.have = reservation_avail(e, h, types, tz, prior, n_prior, avail, res, out->nz, out->n_nz, &w.t, g,
                               &w.c);
    out->n_nz = 0; /* cleared: w.t lists the new ones */
    /* walk running jobs in order of expected release until the head fits
     * (none if it fits now), then every release at the same instant: a
     * domain is listed when its avail turns positive, res stays 0 until the
     * best fit */
    tide_time_t shadow = TIDE_TIME_NEVER;
    size_t i = 0, n = e->n_by_end;
    if (whole) {
        w.have = tide__capacity_for(e, avail, g, types, tz, OWN_JOB, h);
        if (w.have < need)
            for (; i < n && w.have < need; i++) {
                walk_job(&w, e->by_end[i]);
                w.have = tide__capacity_for(e, avail, g, types, tz, OWN_JOB, h);
            }
    } else if (w.have < need) {
        for (; i < n && w.have < need; i++)
            walk_job(&w, e->by_end[i]);
    }
    if (i > 0 && w.have >= need) {
        shadow = e->by_end_t[i - 1];
        for (; i < n && e->by_end_t[i] == shadow; i++)
            walk_job(&w, e->by_end[i]);
    }
    /* GPUs the head takes at shadow time: best fit */
    if (shadow != TIDE_TIME_NEVER && whole)
        whole_fit(e, need, g, avail, res);
    if (shadow != TIDE_TIME_NEVER && !whole)
        best_fit_gangs(e, &w.t, &w.c, avail, res, g, need);
    out->n_nz = w.t.n;
    return shadow;
}

/* Debug check of a memoised reservation: recomputed from scratch, equal? */
static int memo_same(const tide_engine_t *e, int32_t h, unsigned tz, const reservation_t *r,
                     tide_time_t shadow)
{
    size_t nd = (size_t)e->n_doms;
    reservation_t x = {.avail = tide_xcalloc(nd, sizeof(int)), .res = tide_xcalloc(nd, sizeof(int)),
                       .nz = tide_xmalloc((nd + 1) * sizeof(int))};
    tide_time_t s = reservation_compute(e, h, tz, e->resv, e->n_resv, &x);
    int same = s == shadow && (s == TIDE_TIME_NEVER || (!memcmp(x.avail, r->avail, nd * sizeof(int)) &&
                                                        !memcmp(x.res, r->res, nd * sizeof(int))));
    free(x.avail);
    free(x.res);
    free(x.nz);
    return same;
}

/* Compute the reservation of head job h (priority pass) into e->resv[e->n_resv]:
 * the same inputs as the slot's last computation (resv_memo) reuse it. */
static void reservation_now(tide_engine_t *e, int32_t h, unsigned tz)
{
    int k = e->n_resv;
    reservation_t *r = &e->resv[k];
    struct resv_memo *m = &e->resv_memo[k];
    if (!r->avail) {
        r->avail = tide_xcalloc((size_t)e->n_doms, sizeof(int));
        r->res = tide_xcalloc((size_t)e->n_doms, sizeof(int));
        r->nz = tide_xmalloc(((size_t)e->n_doms + 1) * sizeof(int));
        r->n_nz = 0;
    }
    tide_time_t shadow;
    if (m->valid && m->ver == e->place_ver && m->h == h && m->tz == tz) {
        shadow = m->shadow;
        if (e->cfg.check_invariants && !memo_same(e, h, tz, r, shadow))
            e->memo_bad = 1;
    } else {
        shadow = reservation_compute(e, h, tz, e->resv, k, r);
        *m = (struct resv_memo){.ver = e->place_ver, .h = h, .tz = tz, .valid = 1, .shadow = shadow};
        for (int x = k + 1; x < TIDE_NPRIO; x++)
            e->resv_memo[x].valid = 0;
    }
    if (shadow == TIDE_TIME_NEVER)
        return;
    r->shadow = shadow;
    e->n_resv++;
}

/* Compute the pending reservation, if any (see make_reservation). Called
 * before the reservations are read and before the pass changes anything a
 * reservation reads (a placement, a preemption or quota reclaim, the next
 * head): so it is computed on the state the head saw. */
static void resv_settle(tide_engine_t *e)
{
    struct resv_pending *p = &e->resv_pend;
    if (!p->on)
        return;
    p->on = 0;
    if (e->cfg.check_invariants && p->ver != e->place_ver)
        e->memo_bad = 1;
    reservation_now(e, p->h, p->tz);
}

/* The reservation of head job h, computed lazily: a pass in which no later
 * candidate reads the reservations (too few GPUs free for any of them, as
 * a rule) never computes it. */
static void make_reservation(tide_engine_t *e, int32_t h, unsigned tz)
{
    resv_settle(e);
    if (e->n_resv < TIDE_NPRIO)
        e->resv_pend = (struct resv_pending){.on = 1, .h = h, .tz = tz, .ver = e->place_ver};
}

/* May job h start now on allocation a (width w) without delaying any
 * reservation? */
static int respects(tide_engine_t *e, int32_t h, const alloc_t *a, int w, tide_time_t now)
{
    resv_settle(e);
    if (!e->n_resv)
        return 1;
    job_t *j = e->jobs[h];
    int saved = j->width;
    j->width = w;
    tide_time_t end = tide__job_expected_end(j, now);
    j->width = saved;
    for (int k = 0; k < e->n_resv; k++) {
        reservation_t *r = &e->resv[k];
        if (end <= r->shadow)
            continue;
        /* per-domain usage must fit in the surplus at shadow time */
        int *used = e->scratch_b, ok = 1;
        for (int x = 0; x < a->n; x++)
            used[dom_of_gpu(e, a->gpus[x])]++;
        for (int x = 0; x < a->n; x++) {
            int d = dom_of_gpu(e, a->gpus[x]);
            if (used[d] > r->avail[d] - r->res[d])
                ok = 0;
        }
        for (int x = 0; x < a->n; x++)
            used[dom_of_gpu(e, a->gpus[x])] = 0;
        if (!ok)
            return 0;
    }
    return 1;
}

/* Would a try of job h (gang g <= a domain, at least min gangs) surely place
 * and surely fail respects()? Then the pass skips the placement and its
 * undo (a large elastic job takes and puts back up to dp_max gangs, per
 * pass). It places iff the free domains it may use hold min gangs (C); a
 * reservation it would outlast even at its widest (the earliest end) takes
 * it only if each gang fits that domain's surplus, so fewer than min gangs
 * of surplus on the free domains (B) fails it whatever the placement. One
 * visit of the free domains, as one placement step. */
static int surely_delays(tide_engine_t *e, int32_t h, int g, int min, uint32_t types, unsigned tz,
                         tide_time_t now)
{
    resv_settle(e);
    if (!e->n_resv || g > e->max_dom_gpus)
        return 0;
    job_t *j = e->jobs[h];
    int saved = j->width;
    j->width = j->dp_max;
    tide_time_t end = tide__job_expected_end(j, now); /* no width ends earlier */
    j->width = saved;
    int b[TIDE_NPRIO], c = 0, any = 0;
    const reservation_t *r[TIDE_NPRIO];
    for (int k = 0; k < e->n_resv; k++) {
        r[k] = end > e->resv[k].shadow ? &e->resv[k] : NULL;
        b[k] = 0;
        any |= r[k] != NULL;
    }
    if (!any)
        return 0;
    for (int f = g; f <= e->max_dom_gpus; f++)
        for (int d = tide__dom_next_free(e, f, 0); d >= 0; d = tide__dom_next_free(e, f, d + 1)) {
            if (g > e->doms[d].gpus || !tide__domain_ok(e, &e->doms[d], types, tz, OWN_JOB, h))
                continue;
            c += f / g;
            for (int k = 0; k < e->n_resv; k++)
                if (r[k])
                    b[k] += TIDE_MAX(TIDE_MIN(f, r[k]->avail[d] - r[k]->res[d]), 0) / g;
        }
    for (int k = 0; c >= min && k < e->n_resv; k++)
        if (r[k] && b[k] < min)
            return 1;
    return 0;
}

/* Debug check of surely_delays: the placement it skipped places and is
 * refused by respects (then undone). */
static int delays_checked(tide_engine_t *e, int32_t h, unsigned tz, tide_time_t now)
{
    job_t *j = e->jobs[h];
    alloc_t a = {0};
    uint64_t v0 = e->place_ver;
    int w = tide__place_gangs(e, j->spec.gang_gpus, j->dp_max, j->spec.dp_min, j->spec.gpu_types, tz,
                              OWN_JOB, h, &a, 0);
    int ok = w && !respects(e, h, &a, w, now);
    tide__place_undo(e, a.gpus, a.n, v0);
    tide__alloc_free(&a);
    return ok;
}

/* ---------------------------------------------------------------- P1 preemption */

/* Make room for job h, gang by gang: empty the cheapest domain of the
 * victims `ok` accepts through the checkpoint protocol (or a DP shrink) and
 * claim it for h so that nobody else starts there meanwhile. */
static void preempt_for(tide_engine_t *e, int32_t h, unsigned tz, tide_time_t now, victim_ok_fn ok,
                        const void *ctx, int reason)
{
    job_t *j = e->jobs[h];
    int g = j->spec.gang_gpus;
    if (g > e->max_dom_gpus)
        return; /* whole-domain gangs wait for their reservation */
    int claimed = 0;
    for (int d = 0; e->n_claimed[CLAIM_JOB] && d < e->n_doms; d++) /* none claimed for a job: no scan */
        if (e->doms[d].claim_kind == CLAIM_JOB && e->doms[d].claim_id == h)
            claimed += e->doms[d].gpus / g;
    int missing = j->spec.dp_min - claimed - tide__capacity_for(e, NULL, g, j->spec.gpu_types, tz, OWN_JOB, h);
    if (missing <= 0)
        return;
    /* plan every missing gang first (claiming tentatively), act only when the
     * whole job can be served: never a notice that cannot help */
    int *chosen = e->scratch_c, n_chosen = 0;
    victim_t *v = e->vict_v, *best_v = e->vict_best;
    struct plan_chan *ch = ok == tide__victim_min_prio ? tide__plan_chan(e, *(const int *)ctx, g) : NULL;
    for (int m = 0; m < missing; m++) {
        int best = -1;
        double best_cost = 0;
        for (int di = 0; di < e->n_doms; di++) {
            domain_t *d = &e->doms[di];
            if (d->claim_kind != CLAIM_NONE || d->up_gpus < g || d->free >= g ||
                !tide__domain_ok(e, d, j->spec.gpu_types, tz, OWN_JOB, h))
                continue;
            int nv;
            double c = ch ? tide__reclaim_plan_cost(e, ch, di) /* memoised */
                          : tide__reclaim_plan_domain(e, di, g, 0, ok, ctx, v, &nv);
            if (c < 0 || (best >= 0 && c >= best_cost))
                continue;
            best = di;
            best_cost = c;
        }
        if (best < 0)
            break;
        tide__dom_claim(e, &e->doms[best], CLAIM_JOB, h, e->doms[best].claim_n);
        e->doms[best].claim_since = now;
        chosen[n_chosen++] = best;
        tide__place_changed(e);
    }
    if (n_chosen < missing) {
        for (int k = 0; k < n_chosen; k++)
            tide__dom_unclaim(e, &e->doms[chosen[k]]);
        tide__place_changed(e);
        return;
    }
    for (int k = 0; k < n_chosen; k++) {
        int di = chosen[k], nv;
        tide__dom_unclaim(e, &e->doms[di]); /* plan as unclaimed, then claim again */
        if (tide__reclaim_plan_domain(e, di, g, 0, ok, ctx, best_v, &nv) < 0)
            nv = 0;
        tide__dom_claim(e, &e->doms[di], CLAIM_JOB, e->doms[di].claim_id, e->doms[di].claim_n);
        tide__place_changed(e);
        for (int i = 0; i < nv; i++) {
            job_t *x = e->jobs[best_v[i].job];
            if (best_v[i].shrink && x->state == TIDE_JOB_RUNNING)
                tide__job_shrink(e, best_v[i].job, di, best_v[i].shrink);
            else if (x->state == TIDE_JOB_RUNNING)
                tide__job_notice(e, best_v[i].job, reason, 1);
        }
    }
}

/* ---------------------------------------------------------------- quotas */

static int team_quota_total(const tide_engine_t *e, const team_t *t)
{
    int q = 0;
    for (int k = 0; k < e->n_types; k++)
        q += t->quota[k] > 0 ? t->quota[k] : 0;
    return q;
}

static int team_used_total(const tide_engine_t *e, const team_t *t)
{
    int u = 0;
    for (int k = 0; k < e->n_types; k++)
        u += t->used[k];
    return u;
}

static int team_over(const tide_engine_t *e, const team_t *t, int k, int extra)
{
    int q = t->quota[k] > 0 ? t->quota[k] : 0;
    int o = t->used[k] + extra - q;
    (void)e;
    return o > 0 ? o : 0;
}

/* May team of job h hold the GPUs of allocation a on top of what it holds?
 * Within its quota always; beyond it only up to its borrow limit and while
 * the GPUs borrowed by all teams stay within what owners leave unused (capped
 * by their lend caps) plus capacity no one is guaranteed. */
static int quota_ok(tide_engine_t *e, int32_t h, const alloc_t *a, unsigned tz)
{
    if (!e->quotas_on)
        return 1;
    job_t *j = e->jobs[h];
    team_t *t = &e->teams[j->team];
    int local[TIDE_MAX_GPU_TYPES] = {0};
    for (int x = 0; x < a->n; x++)
        local[e->doms[dom_of_gpu(e, a->gpus[x])].type]++;
    int over_total = 0;
    for (int k = 0; k < e->n_types; k++)
        over_total += team_over(e, t, k, local[k]);
    if (over_total == 0)
        return 1;
    if (t->borrow_limit >= 0 && over_total > t->borrow_limit)
        return 0;
    for (int k = 0; k < e->n_types; k++) {
        if (!local[k] || !team_over(e, t, k, local[k]))
            continue;
        int cap = 0;
        for (int d = 0; d < e->n_doms; d++)
            if (e->doms[d].type == k && (tz & ZBIT(e->doms[d].zone)))
                cap += e->doms[d].up_gpus;
        long lendable = 0, owned = 0, borrowed = 0;
        for (int i = 0; i < e->n_teams; i++) {
            const team_t *o = &e->teams[i];
            int q = o->quota[k] > 0 ? o->quota[k] : 0;
            owned += q;
            int unused = q - o->used[k];
            if (unused > 0)
                lendable += o->lend_cap >= 0 && o->lend_cap < unused ? o->lend_cap : unused;
            borrowed += team_over(e, o, k, o == t ? local[k] : 0);
        }
        if (cap > owned)
            lendable += cap - owned;
        if (borrowed > lendable)
            return 0;
    }
    return 1;
}

typedef struct quota_ctx {
    int prio;
} quota_ctx_t;

/* Victims for a quota reclaim: jobs of teams holding more than their quota,
 * of the same or lower priority. */
static int victim_borrower(const tide_engine_t *e, const job_t *v, const void *ctx)
{
    const quota_ctx_t *c = ctx;
    const team_t *t = &e->teams[v->team];
    if (v->spec.priority < c->prio)
        return 0;
    for (int k = 0; k < e->n_types; k++)
        if (team_over(e, t, k, 0) > 0)
            return 1;
    return 0;
}

/* Job h waits although its team is within its guarantee: take GPUs back from
 * borrowers. */
static void quota_reclaim(tide_engine_t *e, int32_t h, unsigned tz, tide_time_t now)
{
    job_t *j = e->jobs[h];
    team_t *t = &e->teams[j->team];
    if (!t->has_quota || team_used_total(e, t) + j->spec.gpus > team_quota_total(e, t))
        return;
    quota_ctx_t c = {j->spec.priority};
    preempt_for(e, h, tz, now, victim_borrower, &c, TIDE_R_QUOTA);
}

/* ---------------------------------------------------------------- the pass */

typedef struct shape {
    int gang, min;
    uint32_t types;
} shape_t;

/* Grow the running jobs below dp_max, in e->running order: only elastic
 * jobs can be below it, so only their slots (e->grow_slots) are visited. */
static void grow_elastic(tide_engine_t *e, unsigned tz)
{
    for (long i = tide_bitset_next(&e->grow_slots, 0, e->n_running); i >= 0;
         i = tide_bitset_next(&e->grow_slots, (size_t)i + 1, e->n_running)) {
        int32_t h = e->running[i];
        job_t *j = e->jobs[h];
        if (j->state != TIDE_JOB_RUNNING || j->width >= j->dp_max || e->now < j->grow_after)
            continue;
        alloc_t a = {0};
        uint64_t v0 = e->place_ver;
        int got = tide__place_gangs(e, j->spec.gang_gpus, j->dp_max - j->width, 1, j->spec.gpu_types,
                              tz, OWN_JOB, h, &a, 0);
        if (got && quota_ok(e, h, &a, tz) && tide__power_admit(e, &a))
            tide__job_grow(e, h, &a, got);
        else
            tide__place_undo(e, a.gpus, a.n, v0);
        tide__alloc_free(&a);
    }
}

/* Teams in fair-share order (ascending decayed usage / weight, then index):
 * rank[t] = position. order holds n_prev teams in the order of an earlier
 * ranking (n_prev 0: none); the insertion sort starts from it, which gives
 * the same order (the order is total) in about n_teams steps when the
 * ranking barely moved since. A NaN score (no total order) starts from
 * index order, as the sort always did. */
static void rank_teams(const tide_engine_t *e, tide_time_t now, int *order, int n_prev, int *rank,
                       double *score)
{
    int n = e->n_teams, nan = 0;
    for (int t = 0; t < n; t++) {
        score[t] = tide__team_usage(e, &e->teams[t], now) / e->teams[t].weight;
        nan |= score[t] != score[t];
    }
    if (nan || n_prev != n)
        for (int t = 0; t < n; t++)
            order[t] = t;
    for (int i = 1; i < n; i++) {
        int t = order[i], k = i;
        double s = score[t];
        /* from index order the tie test never holds: an earlier index */
        while (k > 0 && (score[order[k - 1]] > s || (score[order[k - 1]] == s && order[k - 1] > t))) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = t;
    }
    for (int k = 0; k < n; k++)
        rank[order[k]] = k;
}

/* What the pass past the head of a priority skips (with no quota reclaim
 * to make): a job that cannot start in this pass, because its shape needs
 * more GPUs than are free or its placement failed already (memo: gang,
 * types and at most its dp_min). Both only grow during a pass. */
typedef struct cand_filter {
    const int *free_gpus;
    const shape_t *memo;
    const int *n_memo;
} cand_filter_t;

static int shape_dead(const cand_filter_t *f, int g, int dp_min, uint32_t types)
{
    if (*f->free_gpus < g * dp_min)
        return 1;
    for (int m = 0; m < *f->n_memo; m++)
        if (f->memo[m].gang == g && f->memo[m].min <= dp_min && f->memo[m].types == types)
            return 1;
    return 0;
}

enum { CAND_BUF = 16 };

/* The candidates of one priority in the order the pass examines them,
 * produced one at a time: the first n jobs of queue p, in queue order, or
 * (order given: fair share) grouped by team rank keeping queue order inside
 * a team. Fair share reads a team's candidates from its sub-queues, one per
 * shape with queued jobs (e->tq, e->qs_live), merged in queue order, each up
 * to the n-th job of the queue (the cut key); with a filter, the shapes it
 * rejects are not read at all, and once it rejects every shape the reading
 * ends. A pass reads the keys it returns and, per team it reaches, the head
 * of each shape's sub-queue. A candidate that starts leaves the queue while
 * the pass reads on: the next read finds its successor by its key. Set up
 * by cand_begin, in place (not to be copied); released by cand_end. */
typedef struct cand_iter {
    const tide_engine_t *e;
    const int *order; /* teams by rank, or NULL: the queue itself */
    int p, r;         /* r: rank of the team being read */
    int cut;          /* 0: no candidates */
    int64_t cut_sub;  /* the n-th job of the queue (the last candidate) */
    int32_t cut_h;
    size_t i;         /* queue order: next index in q[p] */
    int last_s;       /* where the last key came from (its shape's slot; 0 in queue order), or -1 */
    int64_t last_sub; /* the last key */
    int32_t last_h;
    /* fair share: per slot (a shape with queued jobs, e->qs_live[p][slot])
     * the next index in the team's sub-queue (valid when seen[slot] is the
     * team's rank + 1), whether past the cut, whether the filter rejects
     * it; alive: the slots it does not reject */
    int ns, n_alive;
    size_t *cur;
    int32_t *shp; /* the slot's shape (a copy: a shape that empties leaves e->qs_live) */
    int *seen, *alive;
    uint8_t *flag; /* 1: rejected, 2: past the cut for this team */
    uint64_t *want; /* with a filter: the teams with jobs of some alive slot */
    size_t n_want;  /* words */
    int st_free, st_memo; /* the filter's state the flags were set at */
    qkey_t out;
    size_t cur_buf[CAND_BUF];
    int32_t shp_buf[CAND_BUF];
    int seen_buf[CAND_BUF], alive_buf[CAND_BUF];
    uint8_t flag_buf[CAND_BUF];
    uint64_t want_buf[4];
} cand_iter_t;

/* want: the union of the team sets of the alive slots, the teams a
 * filtered read visits. */
static void cand_want(cand_iter_t *it)
{
    const tide_engine_t *e = it->e;
    memset(it->want, 0, it->n_want * sizeof *it->want);
    for (int a = 0; a < it->n_alive; a++) {
        const tide_bitset_t *b = &e->tq[(size_t)it->shp[it->alive[a]] * TIDE_NPRIO + (size_t)it->p].teams;
        for (size_t w = 0; w < b->nw && w < it->n_want; w++)
            it->want[w] |= b->w[w];
    }
}

static void cand_begin(cand_iter_t *it, const tide_engine_t *e, int p, size_t n, const int *order)
{
    it->e = e;
    it->order = order;
    it->p = p;
    it->r = 0;
    it->cut = 0;
    it->i = 0;
    it->last_s = -1;
    it->ns = (int)e->n_qs_live[p];
    it->n_alive = it->ns;
    it->st_free = INT_MIN;
    it->st_memo = -1;
    it->cur = it->cur_buf;
    it->shp = it->shp_buf;
    it->seen = it->seen_buf;
    it->alive = it->alive_buf;
    it->flag = it->flag_buf;
    it->n_want = ((size_t)e->n_teams + 63) / 64;
    it->want = it->n_want > 4 ? tide_xmalloc(it->n_want * sizeof *it->want) : it->want_buf;
    if (order && it->ns > CAND_BUF) {
        it->cur = tide_xmalloc((size_t)it->ns * sizeof *it->cur);
        it->shp = tide_xmalloc((size_t)it->ns * sizeof *it->shp);
        it->seen = tide_xmalloc((size_t)it->ns * sizeof *it->seen);
        it->alive = tide_xmalloc((size_t)it->ns * sizeof *it->alive);
        it->flag = tide_xmalloc((size_t)it->ns);
    }
    if (order) {
        for (int s = 0; s < it->ns; s++) {
            it->shp[s] = e->qs_live[p][s];
            it->seen[s] = 0;
            it->flag[s] = 0;
            it->alive[s] = s;
        }
    }
    if (n > 0) {
        const qkey_t *last = &e->qk[e->q[p][TIDE_MIN(n, e->qn[p]) - 1]];
        it->cut = 1;
        it->cut_sub = last->sub;
        it->cut_h = last->h;
    }
}

static void cand_end(cand_iter_t *it)
{
    if (it->want != it->want_buf)
        free(it->want);
    if (it->cur != it->cur_buf) {
        free(it->cur);
        free(it->shp);
        free(it->seen);
        free(it->alive);
        free(it->flag);
    }
}

static int past_cut(const cand_iter_t *it, int64_t sub, int32_t h)
{
    return sub > it->cut_sub || (sub == it->cut_sub && h > it->cut_h);
}

/* Queue order (no fair share): q[p] in place, keys from e->qk. */
static const qkey_t *cand_next_queue(cand_iter_t *it)
{
    const tide_engine_t *e = it->e;
    const int32_t *q = e->q[it->p];
    size_t len = e->qn[it->p], i = it->i;
    if (it->last_s >= 0 && (i > len || q[i - 1] != it->last_h)) {
        /* the last one left the queue (it started): its successor */
        size_t lo = 0, hi = len;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            const qkey_t *x = &e->qk[q[mid]];
            if (x->sub < it->last_sub || (x->sub == it->last_sub && x->h < it->last_h))
                lo = mid + 1;
            else
                hi = mid;
        }
        i = lo < len && q[lo] == it->last_h ? lo + 1 : lo;
    }
    if (i >= len || past_cut(it, e->qk[q[i]].sub, q[i]))
        return NULL;
    const qkey_t *k = &e->qk[q[i]];
    it->i = i + 1;
    it->last_s = 0;
    it->last_sub = k->sub;
    it->last_h = k->h;
    return k;
}

/* The filter's verdicts for the slots still alive, when its state moved. */
static void cand_refilter(cand_iter_t *it, const cand_filter_t *f)
{
    if (*f->free_gpus == it->st_free && *f->n_memo == it->st_memo)
        return;
    const tide_engine_t *e = it->e;
    int n = 0;
    for (int a = 0; a < it->n_alive; a++) {
        int s = it->alive[a];
        const qshape_t *x = &e->qshapes[it->shp[s]];
        if (shape_dead(f, x->gang, x->dp_min, x->types))
            it->flag[s] |= 1;
        else
            it->alive[n++] = s;
    }
    if (n < it->n_alive || it->st_memo < 0) {
        it->n_alive = n;
        cand_want(it);
    }
    it->st_free = *f->free_gpus;
    it->st_memo = *f->n_memo;
}

/* The next candidate (past those f rejects, f given), or NULL after the
 * last. */
static const qkey_t *cand_next(cand_iter_t *it, const cand_filter_t *f)
{
    const tide_engine_t *e = it->e;
    if (!it->cut)
        return NULL;
    if (!it->order)
        return cand_next_queue(it);
    const int32_t *live = it->shp;
    if (it->last_s >= 0) {
        const tqueue_t *l = tide__tq(e, live[it->last_s], it->p, it->order[it->r]);
        size_t c = it->cur[it->last_s];
        if (c > l->n || l->v[c - 1].h != it->last_h) { /* it started: its successor */
            c = tide__tq_pos(l, it->last_sub, it->last_h);
            it->cur[it->last_s] = c < l->n && l->v[c].h == it->last_h ? c + 1 : c;
        }
        it->last_s = -1;
    }
    if (f)
        cand_refilter(it, f);
    int n = f ? it->n_alive : it->ns;
    for (; n > 0 && it->r < e->n_teams; it->r++) {
        int t = it->order[it->r], best = -1;
        if (f ? !((it->want[t >> 6] >> (t & 63)) & 1) : !tide_bitset_has(&e->q_teams[it->p], (size_t)t))
            continue; /* no job of an alive slot, or none at all */
        const tq_ent_t *bk = NULL;
        for (int a = 0; a < n; a++) {
            int s = f ? it->alive[a] : a;
            if (it->seen[s] != it->r + 1) { /* first look at this team */
                it->seen[s] = it->r + 1;
                it->cur[s] = 0;
                it->flag[s] &= 1;
            }
            if (it->flag[s] & 2)
                continue;
            const tqueue_t *l = tide__tq(e, live[s], it->p, t);
            size_t c = it->cur[s];
            if (!l || c >= l->n)
                continue;
            const tq_ent_t *k = &l->v[c];
            if (past_cut(it, k->sub, k->h)) {
                it->flag[s] |= 2; /* the rest of this sub-queue too */
                continue;
            }
            if (!bk || k->sub < bk->sub || (k->sub == bk->sub && k->h < bk->h)) {
                best = s;
                bk = k;
            }
        }
        if (best < 0)
            continue;
        const qshape_t *x = &e->qshapes[live[best]];
        it->cur[best]++;
        it->last_s = best;
        it->last_sub = bk->sub;
        it->last_h = bk->h;
        it->out = (qkey_t){.sub = bk->sub, .h = bk->h, .gang = x->gang, .dp_min = x->dp_min, .team = t,
                           .types = x->types, .shape = live[best]};
        return &it->out;
    }
    return NULL;
}

/* Debug check of cand_next: the first n jobs of queue p in the order the
 * pass examines them, as a stable counting sort by team rank (rank NULL:
 * queue order), into cands (n entries; bucket n_teams + 1). */
static void order_candidates(const tide_engine_t *e, int p, size_t n, const int *rank, int *bucket,
                             int32_t *cands)
{
    const int32_t *q = e->q[p];
    if (!rank) {
        memcpy(cands, q, n * sizeof *cands);
        return;
    }
    memset(bucket, 0, ((size_t)e->n_teams + 1) * sizeof *bucket);
    for (size_t i = 0; i < n; i++)
        bucket[rank[e->jobs[q[i]]->team] + 1]++;
    for (int t = 0; t < e->n_teams; t++)
        bucket[t + 1] += bucket[t];
    for (size_t i = 0; i < n; i++)
        cands[bucket[rank[e->jobs[q[i]]->team]]++] = q[i];
}

/* Shapes (gang, types) whose placement failed in this pass, each with the
 * least dp_min that failed (memo[]): a candidate of that gang and types and
 * at least that dp_min is not tried again. The last (gang, types) asked is
 * kept with its answer until the memo grows. */
typedef struct memo_cache {
    int gang, min, n_memo; /* n_memo -1: empty */
    uint32_t types;
} memo_cache_t;

/* Debug check: would the filter pass over queued job h? */
static int ref_dead(const tide_engine_t *e, const cand_filter_t *f, int32_t h)
{
    const qkey_t *k = &e->qk[h];
    return shape_dead(f, k->gang, k->dp_min, k->types);
}

static int memo_failed(const shape_t *memo, int n_memo, memo_cache_t *mc, int g, int dp_min, uint32_t types)
{
    if (mc->n_memo != n_memo || mc->gang != g || mc->types != types) {
        int min = INT_MAX;
        for (int m = 0; m < n_memo; m++)
            if (memo[m].gang == g && memo[m].types == types && memo[m].min < min)
                min = memo[m].min;
        *mc = (memo_cache_t){.gang = g, .min = min, .n_memo = n_memo, .types = types};
    }
    return dp_min >= mc->min;
}

void tide__sched_pass(tide_engine_t *e, tide_time_t now)
{
    unsigned tz = tide__train_zones_now(e, now);
    int free_gpus = 0;
    for (int z = 0; z < Z_COUNT; z++)
        if (tz & ZBIT(z))
            free_gpus += e->zone_free[z];
    e->n_resv = 0;
    e->resv_pend.on = 0;
    shape_t memo[32];
    memo_cache_t mc = {.n_memo = -1};
    int n_memo = 0, examined = 0, blocked_head = 0;
    const cand_filter_t filt = {&free_gpus, memo, &n_memo};
    if (free_gpus == 0 && e->qn[TIDE_P1] == 0 && !e->quotas_on)
        return; /* nothing can start and nobody may preempt */
    /* fair share: teams ranked by decayed usage / weight once per pass; the
     * candidates of a priority are then read team by team in rank order,
     * in queue order inside a team (cand_next) */
    int fair = e->cfg.fairshare && e->n_teams > 1;
    size_t nt = (size_t)e->n_teams;
    if (fair) {
        if (nt > e->cap_fs) {
            size_t c = e->cap_fs;
            tide_grow((void **)&e->fs_order, &c, nt, sizeof *e->fs_order);
            c = e->cap_fs;
            tide_grow((void **)&e->fs_rank, &c, nt, sizeof *e->fs_rank);
            tide_grow((void **)&e->fs_score, &e->cap_fs, nt, sizeof *e->fs_score);
        }
        rank_teams(e, now, e->fs_order, e->fs_n, e->fs_rank, e->fs_score);
        e->fs_n = e->n_teams;
    }
    uint8_t *quota_tried = e->quotas_on ? tide_xcalloc(nt, 1) : NULL;
    for (int p = TIDE_P1; p < TIDE_NPRIO; p++) {
        int head_seen = 0;
        size_t n = e->qn[p];
        if (n > (size_t)(e->cfg.backfill_depth - examined))
            n = (size_t)(e->cfg.backfill_depth - examined);
        cand_iter_t it;
        cand_begin(&it, e, p, n, fair ? e->fs_order : NULL);
        /* a loop that ends without the break below examined all n; after
         * the break nothing examines more (free_gpus stays <= 0) */
        examined += (int)n;
        int32_t *ref = NULL; /* debug builds: the candidates as a sort orders them */
        size_t n_ref = 0, broke = 0;
        if (e->cfg.check_invariants && n) {
            ref = tide_xmalloc(n * sizeof *ref + ((size_t)e->n_teams + 1) * sizeof(int));
            order_candidates(e, p, n, fair ? e->fs_rank : NULL, (int *)(ref + n), ref);
        }
        for (const qkey_t *c; (c = cand_next(&it, head_seen && !quota_tried ? &filt : NULL));) {
            if (ref) { /* the sort's next, past those the filter passed over */
                while (it.order && head_seen && !quota_tried && n_ref < n && ref_dead(e, &filt, ref[n_ref]))
                    n_ref++;
                if (n_ref >= n || ref[n_ref++] != c->h)
                    e->memo_bad = 1;
            }
            /* nothing more can start: only a P1 head (preemption) or quota
             * reclaims still need looking at */
            if (free_gpus <= 0 && !e->quotas_on && (p > TIDE_P1 || head_seen)) {
                broke = 1;
                break;
            }
            int32_t h = c->h;
            int g = c->gang;
            int fits = free_gpus >= g * c->dp_min && !memo_failed(memo, n_memo, &mc, g, c->dp_min, c->types);
            if (!fits && head_seen && !quota_tried)
                continue; /* past the head, a job that cannot start changes nothing */
            if (fits && surely_delays(e, h, g, c->dp_min, c->types, tz, now)) {
                fits = 0; /* as placed, refused by respects and undone */
                if (e->cfg.check_invariants && !delays_checked(e, h, tz, now))
                    e->memo_bad = 1;
            }
            if (fits) {
                job_t *j = e->jobs[h];
                alloc_t a = {0};
                uint64_t v0 = e->place_ver;
                int w = tide__place_gangs(e, g, j->dp_max, j->spec.dp_min, j->spec.gpu_types, tz, OWN_JOB,
                                    h, &a, 0);
                if (w && respects(e, h, &a, w, now) && quota_ok(e, h, &a, tz) &&
                    tide__power_admit(e, &a)) {
                    tide__job_start(e, h, &a, w);
                    free_gpus -= w * g;
                    tide__alloc_free(&a);
                    continue;
                }
                if (w) {
                    tide__place_undo(e, a.gpus, a.n, v0);
                } else if (n_memo < 32) {
                    memo[n_memo].gang = g;
                    memo[n_memo].min = j->spec.dp_min;
                    memo[n_memo].types = j->spec.gpu_types;
                    n_memo++;
                }
                tide__alloc_free(&a);
            }
            if (quota_tried && !quota_tried[c->team]) {
                quota_tried[c->team] = 1;
                resv_settle(e);
                quota_reclaim(e, h, tz, now);
            }
            if (!head_seen) {
                head_seen = 1;
                blocked_head = 1;
                if (p == TIDE_P1) {
                    static const int lower = TIDE_P2;
                    resv_settle(e);
                    preempt_for(e, h, tz, now, tide__victim_min_prio, &lower, TIDE_R_PRIORITY);
                }
                if (free_gpus > 0)
                    make_reservation(e, h, tz);
            }
        }
        while (ref && !broke && it.order && head_seen && !quota_tried && n_ref < n &&
               ref_dead(e, &filt, ref[n_ref]))
            n_ref++;
        if (ref && !broke && n_ref != n)
            e->memo_bad = 1;
        free(ref);
        cand_end(&it);
    }
    e->resv_pend.on = 0; /* nobody read it: never computed */
    free(quota_tried);
    if (!blocked_head && free_gpus > 0)
        grow_elastic(e, tz);
}

/* ---------------------------------------------------------------- inspection */

static const char *const wait_names[TIDE_WAIT_COUNT] = {
    "Ready", "Resources", "Priority", "Reservation", "Quota", "Draining", "GangTooLarge"};

const char *tide_wait_name(int reason)
{
    return reason >= 0 && reason < TIDE_WAIT_COUNT ? wait_names[reason] : "?";
}


/* Would j's team go beyond its quota plus borrow limit at dp_min? */
static int quota_blocks(const tide_engine_t *e, const job_t *j)
{
    if (!e->quotas_on)
        return 0;
    const team_t *t = &e->teams[j->team];
    if (!t->has_quota || t->borrow_limit < 0)
        return 0;
    int over = team_used_total(e, t) + j->spec.gang_gpus * j->spec.dp_min - team_quota_total(e, t);
    return over > t->borrow_limit;
}

#define HEALTHY_MEMO 16

typedef struct inspect {
    const tide_engine_t *e;
    unsigned tz;
    int free_gpus, examined, n_rs;
    reservation_t rs[TIDE_NPRIO];
    domain_t *tmp;
    /* per inspection (the cluster does not change during one): gangs on
     * the healthy GPUs, all empty, by (gang size, GPU types); the jobs
     * domains are claimed for */
    struct { int gang, gangs; uint32_t types; } healthy[HEALTHY_MEMO];
    int n_healthy;
    int32_t *claimed;
    int n_claimed;
} inspect_t;

/* Could dp_min gangs of j fit the healthy GPUs, all empty? (memoised) */
static int fits_healthy(inspect_t *s, const job_t *j)
{
    const tide_engine_t *e = s->e;
    int g = j->spec.gang_gpus;
    uint32_t types = j->spec.gpu_types;
    for (int i = 0; i < s->n_healthy; i++)
        if (s->healthy[i].gang == g && s->healthy[i].types == types)
            return s->healthy[i].gangs >= j->spec.dp_min;
    memcpy(s->tmp, e->doms, (size_t)e->n_doms * sizeof *s->tmp);
    for (int d = 0; d < e->n_doms; d++)
        s->tmp[d].gpus = s->tmp[d].up_gpus;
    int gangs = tide__gangs_on_empty(s->tmp, e->n_doms, g, types);
    if (s->n_healthy < HEALTHY_MEMO) {
        s->healthy[s->n_healthy].gang = g;
        s->healthy[s->n_healthy].gangs = gangs;
        s->healthy[s->n_healthy++].types = types;
    }
    return gangs >= j->spec.dp_min;
}

static int claimed_for(const inspect_t *s, int32_t h)
{
    for (int i = 0; i < s->n_claimed; i++)
        if (s->claimed[i] == h)
            return 1;
    return 0;
}

/* Reason of job h (not yet the head: head_seen says whether one was). */
static int wait_reason(inspect_t *s, int32_t h, int head_seen)
{
    const tide_engine_t *e = s->e;
    const job_t *j = e->jobs[h];
    int g = j->spec.gang_gpus, need = g * j->spec.dp_min;
    if (!fits_healthy(s, j))
        return TIDE_WAIT_GANG_TOO_LARGE;
    if (quota_blocks(e, j))
        return TIDE_WAIT_QUOTA;
    if (claimed_for(s, h))
        return TIDE_WAIT_DRAINING;
    if (s->examined >= e->cfg.backfill_depth)
        return TIDE_WAIT_PRIORITY;
    /* the placement question last: beyond the backfill depth it is not asked */
    if (s->free_gpus >= need &&
        tide__capacity_for(e, NULL, g, j->spec.gpu_types, s->tz, OWN_JOB, h) >= j->spec.dp_min) {
        if (s->n_rs)
            return TIDE_WAIT_RESERVATION;
        s->free_gpus -= need;
        return TIDE_WAIT_READY;
    }
    return head_seen ? TIDE_WAIT_PRIORITY : TIDE_WAIT_RESOURCES;
}

/* Job h is the head of its priority: its reservation (as the pass makes it). */
static tide_time_t inspect_head(inspect_t *s, int32_t h, int reason)
{
    const tide_engine_t *e = s->e;
    if (s->n_rs >= TIDE_NPRIO || reason == TIDE_WAIT_GANG_TOO_LARGE)
        return TIDE_TIME_NEVER;
    reservation_t *r = &s->rs[s->n_rs];
    tide_time_t shadow = reservation_compute(e, h, s->tz, s->rs, s->n_rs, r);
    if (shadow == TIDE_TIME_NEVER)
        return shadow;
    r->shadow = shadow;
    s->n_rs++;
    return reason == TIDE_WAIT_QUOTA ? TIDE_TIME_NEVER : TIDE_MAX(shadow, e->now);
}

static size_t queue_scan(const tide_engine_t *e, tide_queue_info_t *out, size_t cap, int32_t stop);

size_t tide_engine_queue(const tide_engine_t *e, tide_queue_info_t *out, size_t cap)
{
    return queue_scan(e, out, cap, -1);
}

int tide_engine_queue_job(const tide_engine_t *e, int32_t job, tide_queue_info_t *out)
{
    size_t total = tide_engine_queue(e, NULL, 0);
    if (job < 0 || (size_t)job >= e->n_jobs || e->jobs[job]->state != TIDE_JOB_QUEUED || !total)
        return -1;
    /* the scan writes every job before this one: its own slot is the last */
    tide_queue_info_t *v = tide_xcalloc(total, sizeof *v);
    size_t n = queue_scan(e, v, total, job);
    int found = n > 0 && v[n - 1].job == job;
    if (found)
        *out = v[n - 1];
    free(v);
    return found ? 0 : -1;
}

/* The queue as the next pass sees it, into out (at most cap); with stop >= 0
 * the scan ends after job stop. Returns the number written when stop >= 0,
 * else the number queued. */
static size_t queue_scan(const tide_engine_t *e, tide_queue_info_t *out, size_t cap, int32_t stop)
{
    size_t total = 0, pos = 0, maxq = 0;
    for (int p = TIDE_P1; p < TIDE_NPRIO; p++) {
        total += e->qn[p];
        maxq = TIDE_MAX(maxq, e->qn[p]);
    }
    if (!out || !cap || !total)
        return total;
    inspect_t s = {.e = e, .tz = tide__train_zones_now(e, e->now)};
    for (int z = 0; z < Z_COUNT; z++)
        if (s.tz & ZBIT(z))
            s.free_gpus += e->zone_free[z];
    for (int k = 0; k < TIDE_NPRIO; k++) {
        s.rs[k].avail = tide_xcalloc((size_t)e->n_doms, sizeof(int));
        s.rs[k].res = tide_xcalloc((size_t)e->n_doms, sizeof(int));
        s.rs[k].nz = tide_xmalloc(((size_t)e->n_doms + 1) * sizeof(int));
        s.rs[k].n_nz = 0;
    }
    s.tmp = tide_xmalloc((size_t)e->n_doms * sizeof *s.tmp);
    s.claimed = tide_xmalloc(((size_t)e->n_doms + 1) * sizeof *s.claimed);
    for (int d = 0; d < e->n_doms; d++)
        if (e->doms[d].claim_kind == CLAIM_JOB && !claimed_for(&s, e->doms[d].claim_id))
            s.claimed[s.n_claimed++] = e->doms[d].claim_id;
    int fair = e->cfg.fairshare && e->n_teams > 1;
    int *order = NULL, *rank = NULL;
    double *score = NULL;
    if (fair) { /* the pass's order (rank_teams from the last pass's, the same result) */
        order = tide_xmalloc((size_t)e->n_teams * sizeof *order);
        rank = tide_xmalloc((size_t)e->n_teams * sizeof *rank);
        score = tide_xmalloc((size_t)e->n_teams * sizeof *score);
        if (e->fs_n == e->n_teams)
            memcpy(order, e->fs_order, (size_t)e->n_teams * sizeof *order);
        rank_teams(e, e->now, order, e->fs_n, rank, score);
    }
    for (int p = TIDE_P1; p < TIDE_NPRIO && pos < cap; p++) {
        int head_seen = 0;
        cand_iter_t it;
        cand_begin(&it, e, p, e->qn[p], order);
        for (const qkey_t *c; pos < cap && (c = cand_next(&it, NULL));) {
            int32_t h = c->h;
            tide_queue_info_t *q = &out[pos];
            q->job = h;
            q->position = (int)++pos;
            q->reason = wait_reason(&s, h, head_seen);
            q->expected_start = q->reason == TIDE_WAIT_READY ? e->now : TIDE_TIME_NEVER;
            s.examined++;
            if (!head_seen && q->reason != TIDE_WAIT_READY && q->reason != TIDE_WAIT_PRIORITY) {
                head_seen = 1;
                q->expected_start = inspect_head(&s, h, q->reason);
            }
            if (h == stop) {
                total = pos;
                p = TIDE_NPRIO;
                break;
            }
        }
        cand_end(&it);
    }
    for (int k = 0; k < TIDE_NPRIO; k++) {
        free(s.rs[k].avail);
        free(s.rs[k].res);
        free(s.rs[k].nz);
    }
    free(s.tmp);
    free(s.claimed);
    free(order);
    free(rank);
    free(score);
    return total;
}
