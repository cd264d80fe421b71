/* Reclaim planning: the cheapest way to empty room on one domain, shared by
 * inference reclaim and P1 preemption. Victims, cheapest first: jobs already
 * on their way out (free), elastic jobs that can shrink their data-parallel
 * width off the domain, then whole jobs: lowest priority first, then the
 * least disruption (checkpoint + restore GPU-seconds when graceful, work lost
 * since the last checkpoint when killed). P0 replicas are never victims. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

static const double prio_weight[TIDE_NPRIO] = {1e15, 1e13, 1e12, 0};

static double victim_cost(const tide_engine_t *e, const job_t *j, int shrink_gangs, int kill)
{
    double c = prio_weight[j->spec.priority];
    if (shrink_gangs)
        return c + (double)shrink_gangs * j->spec.gang_gpus * 60.0;
    if (kill)
        return c + (tide__job_progress_now(j, e->now) - j->committed) * j->spec.gpus +
               (double)j->spec.restore_s * j->spec.gpus;
    return c + (double)j->spec.gpus * (double)(j->spec.ckpt_s + j->spec.restore_s);
}

int tide__victim_min_prio(const tide_engine_t *e, const job_t *j, const void *ctx)
{
    (void)e;
    return j->spec.priority >= *(const int *)ctx;
}

double tide__reclaim_plan_domain(tide_engine_t *e, int di, int need, int kill, victim_ok_fn ok,
                           const void *ctx, victim_t *v, int *nv)
{
    domain_t *d = &e->doms[di];
    int have = d->free;
    *nv = 0;
    victim_t *cand = e->vict_cand;
    int nc = 0;
    for (int g = d->first_gpu; g < d->first_gpu + d->gpus; g++) {
        if (e->own_kind[g] != OWN_JOB)
            continue;
        int32_t h = e->own_id[g];
        int k;
        for (k = 0; k < nc; k++)
            if (cand[k].job == h)
                break;
        if (k == nc) {
            cand[nc].job = h;
            cand[nc].gpus = 0;
            cand[nc].shrink = 0;
            cand[nc].cost = 0;
            nc++;
        }
        cand[k].gpus++;
    }
    for (int k = 0; k < nc; k++) {
        job_t *j = e->jobs[cand[k].job];
        if (!ok(e, j, ctx)) {
            cand[k].cost = -1;
            continue;
        }
        if (j->state == TIDE_JOB_RECLAIMING && j->stop_pending) {
            have += cand[k].gpus; /* already on its way out */
            cand[k].cost = -1;
            continue;
        }
        int gangs_here = cand[k].gpus / j->spec.gang_gpus;
        int can = j->width - j->spec.dp_min;
        /* shrink only when it vacates all the job's GPUs here; otherwise stop */
        if (j->state == TIDE_JOB_RUNNING && gangs_here > 0 && can >= gangs_here &&
            gangs_here * j->spec.gang_gpus == cand[k].gpus) {
            cand[k].shrink = gangs_here;
            cand[k].cost = victim_cost(e, j, gangs_here, kill);
        } else if (j->state == TIDE_JOB_RUNNING) {
            cand[k].shrink = 0;
            cand[k].cost = victim_cost(e, j, 0, kill);
        } else {
            cand[k].cost = -1;
        }
    }
    if (have >= need)
        return 0; /* pending releases cover it */
    /* pick cheapest per freed GPU until enough (small n: selection sort) */
    double cost = 0;
    int *used = e->vict_used;
    memset(used, 0, (size_t)nc * sizeof *used);
    while (have < need) {
        int best = -1;
        for (int k = 0; k < nc; k++) {
            if (used[k] || cand[k].cost < 0 || cand[k].gpus <= 0)
                continue;
            if (best < 0 || cand[k].cost < cand[best].cost)
                best = k;
        }
        if (best < 0)
            return -1;
        used[best] = 1;
        have += cand[best].gpus;
        cost += cand[best].cost;
        v[(*nv)++] = cand[best];
    }
    return cost;
}


/* ------------------------------------------------------------ plan memo */

void tide__plan_memo_init(tide_engine_t *e)
{
    size_t n = (size_t)e->n_doms + 1;
    e->dom_ver = tide_xcalloc(n, sizeof *e->dom_ver);
    for (int c = 0; c < PLAN_CHANS; c++) {
        e->plan_ch[c].at = tide_xcalloc(n, sizeof *e->plan_ch[c].at);
        e->plan_ch[c].cost = tide_xcalloc(n, sizeof *e->plan_ch[c].cost);
    }
}

void tide__plan_memo_free(tide_engine_t *e)
{
    free(e->dom_ver);
    for (int c = 0; c < PLAN_CHANS; c++) {
        free(e->plan_ch[c].at);
        free(e->plan_ch[c].cost);
    }
}

void tide__dom_touch_job(tide_engine_t *e, const job_t *j)
{
    int last = -1;
    for (int k = 0; k < j->alloc.n; k++) {
        int d = dom_of_gpu(e, j->alloc.gpus[k]);
        if (d != last)
            tide__dom_touch(e, d);
        last = d;
    }
}

/* The channel of key (min_prio, need): found, or the least recently used
 * one reset to it (every entry it held is then stale). */
struct plan_chan *tide__plan_chan(tide_engine_t *e, int min_prio, int need)
{
    struct plan_chan *lru = &e->plan_ch[0];
    for (int c = 0; c < PLAN_CHANS; c++) {
        struct plan_chan *ch = &e->plan_ch[c];
        if (ch->on && ch->min_prio == min_prio && ch->need == need) {
            ch->used = ++e->plan_clock;
            return ch;
        }
        if (ch->used < lru->used)
            lru = ch;
    }
    lru->on = 1;
    lru->min_prio = min_prio;
    lru->need = need;
    lru->reset = lru->used = ++e->plan_clock;
    return lru;
}

double tide__reclaim_plan_cost(tide_engine_t *e, struct plan_chan *ch, int di)
{
    int nv, need = ch->need, min_prio = ch->min_prio;
    if (ch->at[di] > e->dom_ver[di] && ch->at[di] > ch->reset) {
        if (e->cfg.check_invariants) { /* debug builds: the memo against planning again */
            double x = tide__reclaim_plan_domain(e, di, need, 0, tide__victim_min_prio, &min_prio,
                                                 e->vict_v, &nv);
            if (memcmp(&x, &ch->cost[di], sizeof x))
                e->memo_bad = 1;
        }
        return ch->cost[di];
    }
    ch->cost[di] = tide__reclaim_plan_domain(e, di, need, 0, tide__victim_min_prio, &min_prio,
                                             e->vict_v, &nv);
    ch->at[di] = ++e->plan_clock;
    return ch->cost[di];
}
