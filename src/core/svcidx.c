/* Indexes the inference pass reads per service and tick, kept as domains'
 * claims and replicas change, so that a tick costs no scan of the cluster's
 * domains nor of every replica ever made:
 * - service_t.claimed: replicas claimed for the service, the sum of claim_n
 *   over the domains claimed for it (CLAIM_SERVICE, claim_id);
 * - e->n_claimed[kind]: domains holding a claim of each kind but CLAIM_NONE
 *   (its cell stays 0; a job start
 *   looks for its claims only when some domain is claimed for a job);
 * - service_t.warm_ids: its serving (not rehearsal) replicas made warming,
 *   oldest first. A replica leaves REP_WARMING once and never comes back,
 *   so tide__capacity_due drops those that left as it reads the list.
 * tide__dom_claim is the only writer of a domain's claim; all three are
 * rebuilt after a restore and compared with a scan by tide_engine_check. */
#include <stdlib.h>

#include "core/internal.h"

static void claim_count(tide_engine_t *e, const domain_t *d, int sign)
{
    if (d->claim_kind != CLAIM_NONE)
        e->n_claimed[d->claim_kind] += sign;
    if (d->claim_kind == CLAIM_SERVICE && d->claim_id >= 0 && d->claim_id < e->n_svcs)
        e->svcs[d->claim_id].claimed += sign * d->claim_n;
}

void tide__dom_claim(tide_engine_t *e, domain_t *d, int kind, int32_t id, int n)
{
    claim_count(e, d, -1);
    d->claim_kind = kind;
    d->claim_id = id;
    d->claim_n = n;
    claim_count(e, d, 1);
}

void tide__dom_unclaim(tide_engine_t *e, domain_t *d)
{
    tide__dom_claim(e, d, CLAIM_NONE, d->claim_id, d->claim_n);
}

void tide__warm_note(tide_engine_t *e, int32_t rep)
{
    service_t *s = &e->svcs[e->reps[rep].service];
    TIDE_PUSH(s->warm_ids, s->n_warm_ids, s->cap_warm_ids, rep);
}

int tide__warm_due(tide_engine_t *e, int si, tide_time_t now, tide_time_t w)
{
    service_t *s = &e->svcs[si];
    size_t k = 0;
    int n = 0;
    for (size_t i = 0; i < s->n_warm_ids; i++) {
        const replica_t *r = &e->reps[s->warm_ids[i]];
        if (r->state != REP_WARMING)
            continue;
        s->warm_ids[k++] = s->warm_ids[i];
        n += now - r->started + r->credit >= w; /* staged: due credit s sooner */
    }
    s->n_warm_ids = k;
    return n;
}

static void claims_zero(tide_engine_t *e)
{
    for (int k = 0; k < CLAIM_KINDS; k++)
        e->n_claimed[k] = 0;
    for (int s = 0; s < e->n_svcs; s++)
        e->svcs[s].claimed = 0;
}

void tide__svc_index_rebuild(tide_engine_t *e)
{
    claims_zero(e);
    for (int d = 0; d < e->n_doms; d++)
        claim_count(e, &e->doms[d], 1);
    for (int s = 0; s < e->n_svcs; s++)
        e->svcs[s].n_warm_ids = 0;
    for (size_t r = 0; r < e->n_reps; r++)
        if (e->reps[r].state == REP_WARMING && !e->reps[r].rehearsal)
            tide__warm_note(e, (int32_t)r);
}

/* 1 when a warming serving replica of service si is missing from its list
 * (each is listed once: the list only grows by tide__warm_note, at a
 * replica's birth), else 0. */
static int warm_missing(const tide_engine_t *e, int si)
{
    const service_t *s = &e->svcs[si];
    int want = 0, listed = 0;
    for (size_t r = 0; r < e->n_reps; r++)
        want += e->reps[r].service == si && e->reps[r].state == REP_WARMING && !e->reps[r].rehearsal;
    for (size_t i = 0; i < s->n_warm_ids; i++) {
        const replica_t *r = &e->reps[s->warm_ids[i]];
        listed += r->service == si && r->state == REP_WARMING && !r->rehearsal;
    }
    return want != listed;
}

int tide__svc_index_check(const tide_engine_t *e)
{
    int kinds[CLAIM_KINDS] = {0};
    for (int d = 0; d < e->n_doms; d++)
        kinds[e->doms[d].claim_kind]++;
    for (int k = CLAIM_NONE + 1; k < CLAIM_KINDS; k++)
        if (kinds[k] != e->n_claimed[k])
            return -2;
    for (int si = 0; si < e->n_svcs; si++) {
        int n = 0;
        for (int d = 0; d < e->n_doms; d++)
            if (e->doms[d].claim_kind == CLAIM_SERVICE && e->doms[d].claim_id == si)
                n += e->doms[d].claim_n;
        if (n != e->svcs[si].claimed || warm_missing(e, si))
            return si;
    }
    return -1;
}
