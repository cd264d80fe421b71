/* Inference: size each service from its forecast (or its observed demand, or
 * its fixed peak, by policy), place replicas whole inside one domain, and when
 * the free GPUs are not enough, reclaim training: the cheapest domain is
 * claimed for the service, elastic jobs shrink their data-parallel width,
 * others get a checkpoint notice (graceful) or are stopped at once (reactive
 * preemption). P0 replicas are never victims. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

static int clamp_replicas(const service_t *s, int n)
{
    if (n < s->spec.min_replicas)
        n = s->spec.min_replicas;
    if (s->spec.max_replicas && n > s->spec.max_replicas)
        n = s->spec.max_replicas;
    return n;
}

static int replicas_for(const service_t *s, double rps, double margin)
{
    if (rps <= 0)
        return 0;
    return tide__ceil_sat(rps * (1.0 + margin) / s->spec.replica_rps - 1e-9, 0,
                          tide__replicas_cap(s->spec.gpus_per_replica));
}

int tide__replicas_for(const service_t *s, double rps, double margin)
{
    return clamp_replicas(s, replicas_for(s, rps, margin));
}

/* Window the forecast must cover for a decision taken now: the reclaim lead
 * (checkpoint + warm-up + extra), or the warm-up lead for policies that do
 * not reclaim; both include the measured lateness of capacity. */
static tide_time_t warmup_p99(service_t *s)
{
    double w = s->warm.n >= 5 ? tide__samples_q99(&s->warm) : (double)s->spec.warmup_s;
    if (w < (double)s->spec.warmup_s)
        w = (double)s->spec.warmup_s;
    return (tide_time_t)ceil(tide__warmup_floor(s, w));
}

void tide__ens_window(tide_engine_t *e, int si, tide_time_t lead, tide_ens_win_t *w)
{
    service_t *s = &e->svcs[si];
    double u = s->spec.replica_rps;
    int tp = s->spec.gpus_per_replica, fit = 0, gpus = 0, big = 0;
    /* replicas free GPUs take now: whole domains' free GPUs (unclaimed), or
     * all of them when a replica spans domains */
    for (int i = 0; i < e->n_doms; i++) {
        const domain_t *d = &e->doms[i];
        if (d->claim_kind != CLAIM_NONE ||
            !tide__domain_ok(e, d, s->spec.gpu_types, e->pol->inf_zones, OWN_REPLICA, si))
            continue;
        big |= d->gpus >= tp;
        fit += tp > 0 ? d->free / tp : 0;
        gpus += d->free;
    }
    double ck = e->smp[TIDE_SAMPLE_CKPT].win_n >= 20 ? tide__samples_q99(&e->smp[TIDE_SAMPLE_CKPT])
                                                 : e->declared_ckpt_max;
    w->lead = lead;
    w->delay = warmup_p99(s);
    w->hold = e->cfg.scale_down_hold_s;
    w->unit = u;
    w->lo = s->spec.min_replicas * u;
    w->hi = s->spec.max_replicas * u;
    w->period = e->cfg.slo_period_s;
    w->slo = s->slo_target;
    w->wait = e->pol->reclaim_mode == RECLAIM_KILL ? 0 : (tide_time_t)ceil(ck);
    w->free = (big ? fit : (tp > 0 ? gpus / tp : 0)) * u;
}

double tide__warmup_floor(const service_t *s, double w)
{
    return s->rh_done > 0 && s->rh_last > w ? s->rh_last : w;
}

tide_time_t tide__warmup_lead(tide_engine_t *e, int si)
{
    service_t *s = &e->svcs[si];
    return warmup_p99(s) + e->cfg.lead_extra_s + s->late_extra + e->cfg.tick_s;
}

tide_time_t tide__decision_window(tide_engine_t *e, int si)
{
    if (e->pol->use_lead)
        return tide__reclaim_lead(e, si);
    return tide__warmup_lead(e, si);
}

/* Capacity (rps) that decisions taken up to one warm-up ago should have
 * made ready by now: ready replicas, and warming ones started at least the
 * P99 warm-up ago (late: the lead's business). Replicas started more
 * recently (a reaction to demand seen since) could not be ready yet. */
double tide__capacity_due(tide_engine_t *e, int si, tide_time_t now)
{
    service_t *s = &e->svcs[si];
    int n = s->ready;
    if (s->warming > 0)
        n += tide__warm_due(e, si, now, warmup_p99(s)); /* its warming list, not every replica */
    return n * s->spec.replica_rps;
}

static void late_add(service_t *s, double v)
{
    s->late[s->late_pos] = v;
    s->late_pos = (s->late_pos + 1) % LATE_RING;
    if (s->late_n < LATE_RING)
        s->late_n++;
    if (s->late_n < LATE_MIN) {
        s->late_extra = 0;
        return;
    }
    double p = tide_quantile(s->late, (size_t)s->late_n, 0.95);
    s->late_extra = (tide_time_t)ceil(p < LATE_CAP ? p : LATE_CAP);
}

/* A shortfall (demand above ready capacity) that ends because replicas
 * became ready measures how late capacity came after the rise; one that ends
 * because demand fell back (a burst) says nothing about the lead. */
void tide__infer_observe(tide_engine_t *e, tide_time_t now)
{
    for (int si = 0; si < e->n_svcs; si++) {
        service_t *s = &e->svcs[si];
        double cap = s->ready * s->spec.replica_rps;
        if (s->demand > cap + 1e-9) {
            if (s->short_since < 0) {
                s->short_since = now;
                s->short_ready = s->ready;
            }
            continue;
        }
        if (s->short_since >= 0 && s->ready > s->short_ready)
            late_add(s, (double)(now - s->short_since));
        s->short_since = -1;
    }
}

/* `k8s` (HPA): scale up to the recommendation at once; scale down only to
 * the highest recommendation of the stabilisation window. The window is a
 * deque of (time, replicas) with decreasing values: its head is the maximum. */
static void hpa_targets(tide_engine_t *e, int si, tide_time_t now, int *up, int *down)
{
    service_t *s = &e->svcs[si];
    int want = tide__replicas_for(s, s->demand, e->cfg.headroom);
    while (s->hpa_n > 0 && s->hpa[s->hpa_n - 1].n <= want)
        s->hpa_n--;
    struct hpa_rec rec = {now, want};
    TIDE_PUSH(s->hpa, s->hpa_n, s->hpa_cap, rec);
    size_t old = 0;
    while (old < s->hpa_n && s->hpa[old].t < now - e->cfg.hpa_window_s)
        old++;
    if (old > 0 && old == s->hpa_n)
        old--; /* keep the newest */
    if (old) {
        memmove(s->hpa, s->hpa + old, (s->hpa_n - old) * sizeof *s->hpa);
        s->hpa_n -= old;
    }
    *up = want;
    *down = s->hpa[0].n;
}

static void targets(tide_engine_t *e, int si, tide_time_t now, int *up, int *down)
{
    service_t *s = &e->svcs[si];
    switch (e->pol->scale_mode) {
    case SCALE_FIXED:
        *up = *down = clamp_replicas(s, s->spec.fixed_replicas ? s->spec.fixed_replicas : 0);
        return;
    case SCALE_REACTIVE:
        /* what the observed demand needs right now, plus the headroom of an
         * autoscaler's utilisation target */
        *up = *down = tide__replicas_for(s, s->demand, e->cfg.headroom);
        return;
    case SCALE_HPA:
        hpa_targets(e, si, now, up, down);
        return;
    default: {
        tide_time_t h = tide__decision_window(e, si);
        /* the forecast need; and at least what is observed now (react to a
         * rise the forecast missed), which the scale-down does not hold on to */
        tide_time_t obs = e->pol->obs_floor ? e->cfg.obs_window_s : 0;
        double need = tide__ensemble_on(e) ? tide__ens_need(&s->fc, s->fc.ens_pick, now, h)
                                           : tide__fc_need(&s->fc, now, h, obs);
        *down = tide__replicas_for(s, need, 0);
        int now_need = tide__replicas_for(s, s->demand, 0);
        *up = now_need > *down ? now_need : *down;
        return;
    }
    }
    if (*down < *up)
        *down = *up;
}


/* A replica on free GPUs: one that serves (placed as inference is, claimed
 * GPUs first), or a rehearsal (free GPUs only, training's zone order: lent
 * and idle GPUs before the reserve). Returns its handle, or -1. */
static int32_t replica_new(tide_engine_t *e, int si, tide_time_t now, int rehearsal)
{
    service_t *s = &e->svcs[si];
    alloc_t a = {0};
    if (!tide__place_gangs(e, s->spec.gpus_per_replica, 1, 1, s->spec.gpu_types, e->pol->inf_zones,
                     OWN_REPLICA, rehearsal ? -1 : si, &a, !rehearsal)) {
        tide__alloc_free(&a);
        return -1;
    }
    tide_grow((void **)&e->reps, &e->cap_reps, e->n_reps + 1, sizeof *e->reps);
    int32_t id = (int32_t)e->n_reps++;
    replica_t *r = &e->reps[id];
    memset(r, 0, sizeof *r);
    r->service = si;
    r->rehearsal = rehearsal;
    r->state = e->cfg.warm_start && now == e->start && !rehearsal ? REP_READY : REP_WARMING;
    if (r->state == REP_WARMING && !rehearsal)
        tide__warm_note(e, id);
    if (e->svcs[si].live_ok)
        TIDE_PUSH(e->svcs[si].live_ids, e->svcs[si].n_live_ids, e->svcs[si].cap_live_ids, id);
    r->started = now;
    r->notice_at = -1;
    r->alloc = a;
    /* the placement recorded the service index as owner; use the replica id */
    for (int k = 0; k < a.n; k++)
        e->own_id[a.gpus[k]] = id;
    domain_t *d = &e->doms[dom_of_gpu(e, a.gpus[0])];
    r->tier = d->zone == Z_RESERVE ? TIDE_T_A : TIDE_T_B;
    if (!rehearsal && d->claim_kind == CLAIM_SERVICE && d->claim_id == si) {
        r->notice_at = d->claim_since;
        /* its weights were staged since the reclaim for it began */
        r->credit = TIDE_MIN(s->spec.stage_s, now - d->claim_since);
        tide__dom_claim(e, d, d->claim_n > 1 ? CLAIM_SERVICE : CLAIM_NONE, si, d->claim_n - 1);
        tide__place_changed(e);
    }
    tide__acct_rep_set(e, r, 1);
    tide__spread_add(e, r, 1);
    if (rehearsal)
        s->rh_rep = id;
    else if (r->state == REP_READY)
        s->ready++;
    else
        s->warming++;
    tide_action_t *act =
        tide__act_push(e, TIDE_ACT_REPLICA_START, rehearsal ? TIDE_R_REHEARSAL : TIDE_R_SCALE);
    act->service = si;
    act->replica = id;
    act->credit = r->credit;
    tide__act_gpus(e, act, &r->alloc);
    return id;
}

static int start_replica(tide_engine_t *e, int si, tide_time_t now)
{
    return replica_new(e, si, now, 0) >= 0;
}

void tide__rehearse_pass(tide_engine_t *e, tide_time_t now)
{
    for (int si = 0; si < e->n_svcs; si++) {
        service_t *s = &e->svcs[si];
        if (s->rh_want && s->rh_rep < 0 && replica_new(e, si, now, 1) >= 0)
            s->rh_want = 0;
    }
}

void tide__rehearse_report(tide_engine_t *e, int32_t id, int ready)
{
    replica_t *r = &e->reps[id];
    if (r->state != REP_WARMING)
        return; /* stopped meanwhile */
    service_t *s = &e->svcs[r->service];
    if (!ready) {
        tide__replica_stop(e, id, TIDE_R_FAILURE);
        return;
    }
    double w = (double)(e->now - r->started);
    /* what the lead allowed the warm-up before this sample */
    double allowed = (double)warmup_p99(s) + (double)e->cfg.lead_extra_s +
                     (double)s->late_extra + (double)e->cfg.tick_s;
    tide__samples_add(&s->warm, w);
    tide__samples_add(&e->smp[TIDE_SAMPLE_WARMUP], w);
    s->rh_done++;
    s->rh_slow += w > allowed;
    s->rh_last = w;
    s->rh_allowed = allowed;
    s->rh_at = e->now;
    tide__replica_stop(e, id, TIDE_R_REHEARSAL);
    e->infer_dirty = e->sched_dirty = 1;
}

void tide__replica_stop(tide_engine_t *e, int32_t id, int reason)
{
    replica_t *r = &e->reps[id];
    if (r->state == REP_STOPPED)
        return;
    service_t *s = &e->svcs[r->service];
    tide__acct_rep_set(e, r, 0);
    if (r->rehearsal) {
        if (s->rh_rep == id) {
            s->rh_rep = -1;
            if (reason != TIDE_R_REHEARSAL)
                s->rh_failed++; /* its node failed, or it did */
        }
    } else if (r->cut) {
        /* not counted while unreachable */
    } else if (r->state == REP_READY) {
        s->ready--;
    } else {
        s->warming--;
    }
    tide__spread_add(e, r, -1);
    for (int k = 0; k < r->alloc.n; k++)
        tide__dom_release(e, r->alloc.gpus[k]);
    r->state = REP_STOPPED;
    tide_action_t *act = tide__act_push(e, TIDE_ACT_REPLICA_STOP, reason);
    act->service = r->service;
    act->replica = id;
    act->n_gpus = r->alloc.n;
    tide__alloc_free(&r->alloc);
    e->sched_dirty = 1;
}

/* The replica of service si scale_down stops next in a pass (state, in the
 * reserve or not), -1 if none: newest first, or when spreading the one on
 * the most loaded rack and power domain. With a survival share
 * (survive_share) there is one pass: load first, whatever the state and
 * tier (warming, then lendable zones, among equals), so a scale-down never
 * leaves a failure domain crowded. */
static int32_t scale_down_pick(const tide_engine_t *e, int si, int want_state, int want_reserve)
{
    int spread = e->cfg.spread_max_skew > 0, one_pass = spread && e->cfg.survive_share > 0;
    int32_t best = -1;
    int best_load = -1;
    const service_t *s = &e->svcs[si];
    /* the service's replicas not stopped, newest first: every replica ever
     * made, newest first, less those the test below skips anyway */
    for (size_t x = s->n_live_ids; x-- > 0;) {
        size_t i = (size_t)s->live_ids[x];
        const replica_t *r = &e->reps[i];
        if (r->service != si || r->rehearsal || r->cut || r->state == REP_STOPPED ||
            (!one_pass && (r->state != want_state || (r->tier == TIDE_T_A) != want_reserve)))
            continue;
        if (!spread)
            return (int32_t)i;
        int load = tide__spread_load(e, r) * 4 + (r->state == REP_WARMING) * 2 +
                   (r->tier != TIDE_T_A);
        if (load > best_load) {
            best = (int32_t)i;
            best_load = load;
        }
    }
    return best;
}

/* Service si's live_ids made current: built from every replica when not
 * live_ok, else the stopped ones dropped (a replica never leaves
 * REP_STOPPED; ids only grow, so appending at birth keeps the order). */
static void live_list(tide_engine_t *e, int si)
{
    service_t *s = &e->svcs[si];
    if (!s->live_ok) {
        s->n_live_ids = 0;
        for (size_t r = 0; r < e->n_reps; r++)
            if (e->reps[r].service == si && e->reps[r].state != REP_STOPPED)
                TIDE_PUSH(s->live_ids, s->n_live_ids, s->cap_live_ids, (int32_t)r);
        s->live_ok = 1;
        return;
    }
    size_t k = 0;
    for (size_t i = 0; i < s->n_live_ids; i++)
        if (e->reps[s->live_ids[i]].state != REP_STOPPED)
            s->live_ids[k++] = s->live_ids[i];
    s->n_live_ids = k;
}

int tide__live_check(const tide_engine_t *e)
{
    for (int si = 0; si < e->n_svcs; si++) {
        const service_t *s = &e->svcs[si];
        if (!s->live_ok)
            continue;
        size_t x = 0;
        for (size_t r = 0; r < e->n_reps; r++) {
            int listed = x < s->n_live_ids && s->live_ids[x] == (int32_t)r;
            if (listed)
                x++;
            if (listed ? e->reps[r].service != si
                       : e->reps[r].service == si && e->reps[r].state != REP_STOPPED)
                return si; /* another's, missing, or the list out of order */
        }
        if (x != s->n_live_ids)
            return si;
    }
    return -1;
}

/* Stop n replicas of a service: warming before ready, lendable zones before
 * the reserve, newest first (spreading: see scale_down_pick). */
static void scale_down(tide_engine_t *e, int si, int n)
{
    live_list(e, si);
    int passes = e->cfg.spread_max_skew > 0 && e->cfg.survive_share > 0 ? 1 : 4;
    for (int pass = 0; pass < passes && n > 0; pass++) {
        int32_t id;
        while (n > 0 && (id = scale_down_pick(e, si, pass < 2 ? REP_WARMING : REP_READY,
                                              pass % 2)) >= 0) {
            tide__replica_stop(e, id, TIDE_R_SCALE);
            n--;
        }
    }
}

/* ----------------------------------------------------------------- reclaim */

/* Forget the reclaim plans of the domains where job h holds GPUs. */
static void plans_stale_job(tide_engine_t *e, int32_t h)
{
    const job_t *j = e->jobs[h];
    for (int k = 0; k < j->alloc.n; k++)
        e->plan_ok[dom_of_gpu(e, j->alloc.gpus[k])] = 0;
}

/* The cheapest domain to empty for one replica of tp GPUs (-1: none): each
 * domain's graceful plan from the plan memo (tide__reclaim_plan_cost); a
 * killing plan from e->plan_cost while e->plan_ok says it is still current
 * (reclaim_for forgets the domains its actions touch; it reads the time). */
static int cheapest_domain(tide_engine_t *e, const service_t *s, int si, int tp, int kill, unsigned zones)
{
    static const int any_training = TIDE_P1;
    int best = -1, n_ok = 0, min_rack = 0, min_power = 0;
    int spread = e->cfg.spread_max_skew > 0;
    double best_cost = 0;
    int *ok = spread ? tide_xmalloc(((size_t)e->n_doms + 1) * sizeof *ok) : NULL;
    struct plan_chan *ch = kill ? NULL : tide__plan_chan(e, any_training, tp);
    for (int di = 0; di < e->n_doms; di++) {
        domain_t *d = &e->doms[di];
        if (d->claim_kind != CLAIM_NONE || d->gpus < tp || d->up_gpus < tp ||
            !tide__domain_ok(e, d, s->spec.gpu_types, zones, OWN_REPLICA, si))
            continue;
        if (!kill) { /* graceful plans are memoised across passes */
            e->plan_cost[di] = tide__reclaim_plan_cost(e, ch, di);
        } else if (!e->plan_ok[di]) {
            int nv;
            e->plan_cost[di] = tide__reclaim_plan_domain(e, di, tp, kill, tide__victim_min_prio,
                                                         &any_training, e->vict_v, &nv);
            e->plan_ok[di] = 1;
        }
        double c = e->plan_cost[di];
        if (c < 0)
            continue;
        if (spread) {
            int r = s->spread[d->rack], p = s->spread[e->n_racks + d->power];
            min_rack = n_ok == 0 || r < min_rack ? r : min_rack;
            min_power = n_ok == 0 || p < min_power ? p : min_power;
            ok[n_ok++] = di;
        } else if (best < 0 || c < best_cost) {
            best = di;
            best_cost = c;
        }
    }
    /* spreading: a domain keeping the skew first, then the cheapest */
    long best_x = 0;
    for (int k = 0; k < n_ok; k++) {
        int di = ok[k];
        long x = tide__spread_excess(e, si, &e->doms[di], min_rack, min_power);
        double c = e->plan_cost[di];
        if (best < 0 || x < best_x || (x == best_x && c < best_cost)) {
            best = di;
            best_x = x;
            best_cost = c;
        }
    }
    free(ok);
    return best;
}

/* Free room for `k` more replicas of service si by reclaiming training. */
static void reclaim_for(tide_engine_t *e, int si, int k, tide_time_t now)
{
    service_t *s = &e->svcs[si];
    int tp = s->spec.gpus_per_replica;
    int kill = e->pol->reclaim_mode == RECLAIM_KILL;
    unsigned zones = e->pol->reclaim_zones & e->pol->inf_zones;
    memset(e->plan_ok, 0, (size_t)e->n_doms);
    for (int r = 0; r < k; r++) {
        int best = cheapest_domain(e, s, si, tp, kill, zones), best_nv = 0;
        if (best < 0)
            return; /* nothing left to reclaim */
        static const int any_training = TIDE_P1;
        victim_t *best_v = e->vict_best;
        tide__reclaim_plan_domain(e, best, tp, kill, tide__victim_min_prio, &any_training, best_v,
                                  &best_nv);
        e->plan_ok[best] = 0;
        domain_t *d = &e->doms[best];
        for (int i = 0; i < best_nv; i++) {
            job_t *j = e->jobs[best_v[i].job];
            plans_stale_job(e, best_v[i].job);
            if (best_v[i].shrink)
                tide__job_shrink(e, best_v[i].job, best, best_v[i].shrink);
            else if (kill)
                tide__job_stop(e, best_v[i].job, TIDE_R_PREEMPT, 1);
            else if (j->state == TIDE_JOB_RUNNING)
                tide__job_notice(e, best_v[i].job, TIDE_R_RECLAIM, 1);
        }
        if (kill || d->free >= tp) {
            size_t before = e->n_reps;
            start_replica(e, si, now);
            for (size_t i = before; i < e->n_reps; i++)
                for (int g = 0; g < e->reps[i].alloc.n; g++)
                    e->plan_ok[dom_of_gpu(e, e->reps[i].alloc.gpus[g])] = 0;
        } else {
            tide__dom_claim(e, d, CLAIM_SERVICE, si, 1);
            tide__place_changed(e);
            d->claim_since = now;
        }
    }
}

static void drop_claims(tide_engine_t *e, int si, int n)
{
    for (int i = e->n_doms; i-- > 0 && n > 0;) {
        domain_t *d = &e->doms[i];
        if (d->claim_kind != CLAIM_SERVICE || d->claim_id != si)
            continue;
        int x = TIDE_MIN(n, d->claim_n);
        n -= x;
        tide__dom_claim(e, d, d->claim_n - x > 0 ? CLAIM_SERVICE : CLAIM_NONE, si, d->claim_n - x);
        tide__place_changed(e);
        e->sched_dirty = 1;
    }
}

/* Scale down only after the need stayed lower for the whole hold window
 * (stabilization, as autoscalers do), to the highest need of the window. */
static void hold_reactive(tide_engine_t *e, int si, tide_time_t now, int active, int up, int down)
{
    service_t *s = &e->svcs[si];
    if (active <= down) {
        s->down_since = -1;
        return;
    }
    if (s->down_since < 0) {
        s->down_since = now;
        s->hold_max = down;
    }
    if (down > s->hold_max)
        s->hold_max = down;
    /* `k8s` has its own window (hpa_targets) */
    tide_time_t hold = e->pol->scale_mode == SCALE_HPA ? 0 : e->cfg.scale_down_hold_s;
    if (now - s->down_since >= hold) {
        int keep = s->hold_max > up ? s->hold_max : up;
        if (active > keep)
            scale_down(e, si, active - keep);
        s->down_since = -1;
    }
}

/* The scale-down hold of forecast sizing. A need sized from the observed
 * floor already holds the highest demand of the floor's window, so the hold
 * is what remains of scale_down_hold_s after that window: stacked, the two
 * kept a level for their sum after it went (a 30-minute floor under a
 * 30-minute hold held an hour; docs/engine.md, "Observed floor"). */
/* The highest of `floor` and the ring's values: the ring as its two
 * contiguous runs (no modulo per entry). */
static int hold_max(const hold_t *h, int floor)
{
    int n1 = HOLD_RING - h->first < h->n ? HOLD_RING - h->first : h->n;
    for (int i = h->first; i < h->first + n1; i++)
        floor = h->v[i] > floor ? h->v[i] : floor;
    for (int i = 0; i < h->n - n1; i++)
        floor = h->v[i] > floor ? h->v[i] : floor;
    return floor;
}

static tide_time_t forecast_hold(tide_engine_t *e)
{
    tide_time_t hold = e->cfg.scale_down_hold_s;
    if (e->pol->obs_floor && e->cfg.obs_window_s > 0 && !tide__ensemble_on(e))
        hold = hold > e->cfg.obs_window_s ? hold - e->cfg.obs_window_s : 0;
    return hold;
}

/* Forecast sizing: keep the highest forecast need of the last hold window
 * (the forecast is smooth: no noisy maximum to latch onto), replicas added
 * for demand observed above it for one decision window, and what demand
 * needs now. */
static void hold_forecast(tide_engine_t *e, int si, tide_time_t now, int active, int up, int down)
{
    service_t *s = &e->svcs[si];
    hold_t *h = &s->hold;
    if (h->n == HOLD_RING) {
        h->first = (h->first + 1) % HOLD_RING;
        h->n--;
    }
    int last = (h->first + h->n - 1 + HOLD_RING) % HOLD_RING;
    if (h->n && h->t[last] == now) {
        if (down > h->v[last])
            h->v[last] = down;
    } else {
        int k = (h->first + h->n) % HOLD_RING;
        h->t[k] = now;
        h->v[k] = down;
        h->n++;
    }
    tide_time_t hold = forecast_hold(e);
    while (h->n && h->t[h->first] <= now - hold && h->n > 1) {
        h->first = (h->first + 1) % HOLD_RING;
        h->n--;
    }
    int keep = hold_max(h, up);
    if (up > down) {
        s->react = up;
        s->react_at = now;
    }
    if (s->react_at >= 0 && now - s->react_at < tide__decision_window(e, si) && s->react > keep)
        keep = s->react;
    if (active > keep)
        scale_down(e, si, active - keep);
}

void tide__infer_pass(tide_engine_t *e, tide_time_t now)
{
    for (int si = 0; si < e->n_svcs; si++) {
        service_t *s = &e->svcs[si];
        int up, down;
        targets(e, si, now, &up, &down);
        s->target = up;
        int active = s->ready + s->warming;
        int deficit = 0;
        if (active < up + s->surge) {
            int n = up + s->surge - active;
            while (n > 0 && start_replica(e, si, now))
                n--;
            deficit = n;
        }
        /* the surge's replicas are not the sizing's to scale down */
        int own = active > s->surge ? active - s->surge : 0;
        if (e->pol->scale_mode == SCALE_FORECAST)
            hold_forecast(e, si, now, own, up, down);
        else
            hold_reactive(e, si, now, own, up, down);
        if (!deficit && tide__spread_short(e, si))
            start_replica(e, si, now); /* repair the spread (after a failure) */
        int incoming = s->claimed; /* claims_of, kept by tide__dom_claim */
        if (incoming > deficit)
            drop_claims(e, si, incoming - deficit);
        else if (deficit > incoming && e->pol->reclaim_mode != RECLAIM_NONE)
            reclaim_for(e, si, deficit - incoming, now);
    }
}
