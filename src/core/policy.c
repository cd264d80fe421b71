/* The policy table and the helpers policies share (layouts, night window). */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

static const tide_policy_t *const policies[] = {
    &tide_policy_isolated, &tide_policy_static, &tide_policy_preempt, &tide_policy_k8s,
    &tide_policy_elastic,  &tide_policy_timeshare,
};
#define N_POLICIES (sizeof policies / sizeof policies[0])

static const char *const policy_names[N_POLICIES + 1] = {"isolated", "static",  "preempt",
                                                         "k8s",      "elastic", "timeshare",
                                                         NULL};

const char *const *tide_policy_names(void) { return policy_names; }

const tide_policy_t *tide_policy_find(const char *name)
{
    for (size_t i = 0; i < N_POLICIES; i++)
        if (name && !strcmp(policies[i]->name, name))
            return policies[i];
    return NULL;
}

int tide__layout_split(tide_engine_t *e, int inf_gpus, int inf_zone, int rest_zone, tide_error_t *err)
{
    if (inf_gpus < 0 || inf_gpus > e->n_gpus)
        return tide_errf(err, TIDE_EINVAL,
                         "policy %s: %d inference GPUs do not fit in a cluster of %d GPUs",
                         e->pol->name, inf_gpus, e->n_gpus);
    /* spreading: the zone takes domains round robin over power domains and
     * racks, so losing one takes the fewest of its GPUs */
    int *order = e->scratch_a;
    if (e->cfg.spread_max_skew > 0)
        tide__spread_order(e, order);
    else
        tide__power_spread(e, order); /* over power domains with budgets, else identity */
    int got = 0;
    for (int i = 0; i < e->n_doms; i++) {
        domain_t *d = &e->doms[order[i]];
        d->zone = got < inf_gpus ? inf_zone : rest_zone;
        tide__place_changed(e);
        if (d->zone == inf_zone)
            got += d->gpus;
    }
    return 0;
}

/* GPUs needed to hold every service's fixed (or floor) replicas, packed per domain. */
int tide__layout_peak_gpus(const tide_engine_t *e)
{
    int total = 0;
    for (int s = 0; s < e->n_svcs; s++) {
        const tide_service_spec_t *sp = &e->svcs[s].spec;
        int n = sp->fixed_replicas > sp->min_replicas ? sp->fixed_replicas : sp->min_replicas;
        int per = e->max_dom_gpus / sp->gpus_per_replica;
        if (per < 1)
            per = 1;
        total += (n + per - 1) / per * e->max_dom_gpus;
    }
    return total;
}

tide_time_t tide__lease_deadline_default(const tide_engine_t *e, tide_time_t now)
{
    return now + e->cfg.lease_max_s;
}

static int hour_of(tide_time_t t) { return (int)((t % 86400 + 86400) % 86400 / 3600); }

int tide__in_night(const tide_engine_t *e, tide_time_t t)
{
    int h = hour_of(t), a = e->cfg.night_start_h, b = e->cfg.night_end_h;
    if (a == b)
        return 0;
    return a < b ? (h >= a && h < b) : (h >= a || h < b);
}

tide_time_t tide__night_next_edge(const tide_engine_t *e, tide_time_t t)
{
    tide_time_t day = t - (t % 86400 + 86400) % 86400, best = TIDE_TIME_NEVER;
    int hours[2] = {e->cfg.night_start_h, e->cfg.night_end_h};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 2; i++) {
            tide_time_t c = day + (tide_time_t)k * 86400 + (tide_time_t)hours[i] * 3600;
            if (c > t && c < best)
                best = c;
        }
    return best;
}
