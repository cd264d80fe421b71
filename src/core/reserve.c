/* Tier A is physical: the reserve is a number of healthy GPUs, not a fixed
 * set of domains. When reserve GPUs go down with their node, the reserve
 * borrows whole healthy domains of the same GPU type from the shared pool:
 * a domain without training moves at once (replicas on it become Tier A); a
 * domain with lent training is claimed (nothing new starts there) and its
 * jobs are reclaimed through the policy's normal protocol (shrink, or a
 * checkpoint notice with its deadline), and the domain joins the reserve when
 * the last training GPU has left. A borrowed domain goes back to the shared
 * pool as soon as the reserve is whole without it (the failed node
 * recovered). GPUs below the reserve are integrated into
 * tide_stats_t.tier_a_breach_gpu_s (acct.c). */
#include <string.h>

#include "core/internal.h"

/* Move domain di to zone z: zone counters follow, replicas on it change tier. */
static void set_zone(tide_engine_t *e, int di, int z)
{
    domain_t *d = &e->doms[di];
    if (d->zone == z)
        return;
    e->zone_gpus[d->zone] -= d->up_gpus;
    e->zone_free[d->zone] -= d->free;
    e->zone_total[d->zone] -= d->gpus;
    e->zone_foreign[d->zone] -= d->foreign;
    e->zone_cut[d->zone] -= d->cut_held;
    tide__acct_foreign(e, d, -d->foreign);
    d->zone = z;
    tide__place_changed(e);
    e->zone_foreign[z] += d->foreign;
    e->zone_cut[z] += d->cut_held;
    tide__acct_foreign(e, d, d->foreign);
    e->zone_gpus[z] += d->up_gpus;
    e->zone_free[z] += d->free;
    e->zone_total[z] += d->gpus;
    for (int g = d->first_gpu; g < d->first_gpu + d->gpus; g++) {
        if (e->own_kind[g] != OWN_REPLICA)
            continue;
        replica_t *r = &e->reps[e->own_id[g]];
        if (r->alloc.n == 0 || r->alloc.gpus[0] != g)
            continue; /* once per replica, at its first GPU */
        tide__acct_rep_set(e, r, 0);
        r->tier = z == Z_RESERVE ? TIDE_T_A : TIDE_T_B;
        tide__acct_rep_set(e, r, 1);
    }
    e->sched_dirty = e->infer_dirty = 1;
}

void tide__reserve_init(tide_engine_t *e)
{
    e->reserve_type = tide_xcalloc((size_t)e->n_types, sizeof *e->reserve_type);
    e->reserve_target = 0;
    for (int d = 0; d < e->n_doms; d++)
        if (e->doms[d].zone == Z_RESERVE) {
            e->reserve_type[e->doms[d].type] += e->doms[d].gpus;
            e->reserve_target += e->doms[d].gpus;
        }
    e->reserve_dirty = 1;
}

static int training_gpus_on(const tide_engine_t *e, const domain_t *d)
{
    int n = 0;
    for (int g = d->first_gpu; g < d->first_gpu + d->gpus; g++)
        n += e->own_kind[g] == OWN_JOB;
    return n;
}

/* Healthy reserve GPUs of type t (have) and GPUs being drained for it (incoming). */
static void reserve_have(const tide_engine_t *e, int t, int *have, int *incoming)
{
    *have = *incoming = 0;
    for (int di = 0; di < e->n_doms; di++) {
        const domain_t *d = &e->doms[di];
        if (d->type != t)
            continue;
        if (d->zone == Z_RESERVE)
            *have += d->up_gpus - d->foreign; /* foreign jobs' GPUs serve no one of ours */
        else if (d->claim_kind == CLAIM_RESERVE)
            *incoming += d->up_gpus;
    }
}

static int reclaim_ok(const tide_engine_t *e, const job_t *j, const void *ctx)
{
    (void)e, (void)j, (void)ctx;
    return 1; /* every training job leaves a domain the reserve needs */
}

/* The cheapest whole healthy shared domain of type t (-1 if none). Cost:
 * the reclaim plan's for all the training on it (0 when there is none). */
static int pick_domain(tide_engine_t *e, int t, victim_t *v, int *nv)
{
    int best = -1;
    double best_cost = 0;
    int n;
    for (int di = 0; di < e->n_doms; di++) {
        domain_t *d = &e->doms[di];
        if (d->type != t || d->zone != Z_SHARED || d->claim_kind != CLAIM_NONE ||
            d->up_gpus != d->gpus || d->foreign > 0)
            continue;
        int need = d->free + training_gpus_on(e, d);
        double c = tide__reclaim_plan_domain(e, di, need, e->pol->reclaim_mode == RECLAIM_KILL,
                                             reclaim_ok, NULL, e->vict_v, &n);
        if (c < 0)
            continue;
        if (best < 0 || c < best_cost) {
            best = di;
            best_cost = c;
            *nv = n;
            memcpy(v, e->vict_v, sizeof(victim_t) * (size_t)n);
        }
    }
    return best;
}

/* Claim domain di for the reserve and start moving its training out. */
static void claim_domain(tide_engine_t *e, int di, const victim_t *v, int nv, tide_time_t now)
{
    domain_t *d = &e->doms[di];
    for (int i = 0; i < nv; i++) {
        job_t *j = e->jobs[v[i].job];
        if (v[i].shrink)
            tide__job_shrink(e, v[i].job, di, v[i].shrink);
        else if (e->pol->reclaim_mode == RECLAIM_KILL)
            tide__job_stop(e, v[i].job, TIDE_R_PREEMPT, 1);
        else if (j->state == TIDE_JOB_RUNNING)
            tide__job_notice(e, v[i].job, TIDE_R_RECLAIM, 1);
    }
    if (training_gpus_on(e, d) == 0) {
        set_zone(e, di, Z_RESERVE);
        d->borrowed = 1;
        return;
    }
    tide__dom_claim(e, d, CLAIM_RESERVE, -1, d->claim_n);
    tide__place_changed(e);
    d->claim_since = now;
}

static void rebalance_type(tide_engine_t *e, int t, tide_time_t now)
{
    int have, incoming;
    reserve_have(e, t, &have, &incoming);
    int target = e->reserve_type[t];
    /* give back what is no longer needed: borrowed domains, then drains */
    for (int di = e->n_doms; di-- > 0;) {
        domain_t *d = &e->doms[di];
        if (d->type != t)
            continue;
        if (d->zone == Z_RESERVE && d->borrowed && have - (d->up_gpus - d->foreign) >= target) {
            have -= d->up_gpus - d->foreign;
            set_zone(e, di, Z_SHARED);
            d->borrowed = 0;
        } else if (d->claim_kind == CLAIM_RESERVE && have + incoming - d->up_gpus >= target) {
            incoming -= d->up_gpus;
            tide__dom_unclaim(e, d); /* noticed jobs keep running after their checkpoint */
            tide__place_changed(e);
            e->sched_dirty = 1;
        }
    }
    /* drains that are done join the reserve */
    for (int di = 0; di < e->n_doms; di++) {
        domain_t *d = &e->doms[di];
        if (d->type == t && d->claim_kind == CLAIM_RESERVE && training_gpus_on(e, d) == 0) {
            tide__dom_unclaim(e, d);
            tide__place_changed(e);
            set_zone(e, di, Z_RESERVE);
            d->borrowed = 1;
            have += d->up_gpus - d->foreign;
            incoming -= d->up_gpus;
        }
    }
    while (have + incoming < target) {
        int nv = 0;
        int di = pick_domain(e, t, e->vict_best, &nv);
        if (di < 0)
            break; /* nothing healthy left to move: the breach is counted */
        claim_domain(e, di, e->vict_best, nv, now);
        if (e->doms[di].zone == Z_RESERVE)
            have += e->doms[di].up_gpus; /* picked without foreign GPUs */
        else
            incoming += e->doms[di].up_gpus;
    }
}

void tide__reserve_update(tide_engine_t *e, tide_time_t now)
{
    if (e->reserve_target <= 0)
        return;
    int pending = 0, shortfall = 0;
    for (int t = 0; t < e->n_types; t++) {
        if (e->reserve_type[t] <= 0)
            continue;
        rebalance_type(e, t, now);
        int have, incoming;
        reserve_have(e, t, &have, &incoming);
        if (have < e->reserve_type[t])
            shortfall += e->reserve_type[t] - have;
        pending += incoming > 0;
    }
    e->reserve_short = shortfall;
    e->reserve_dirty = pending > 0;
}
