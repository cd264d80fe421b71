/* Gang placement on topology-compatible groups: a gang lands whole inside one
 * high-speed domain (or on whole free domains when it is larger than one), or
 * not at all. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

void tide__alloc_free(alloc_t *a)
{
    free(a->gpus);
    memset(a, 0, sizeof *a);
}

void tide__alloc_push(alloc_t *a, int32_t gpu)
{
    size_t cap = (size_t)a->cap;
    tide_grow((void **)&a->gpus, &cap, (size_t)a->n + 1, sizeof *a->gpus);
    a->cap = (int)cap;
    a->gpus[a->n++] = gpu;
}

/* The node of a GPU (a scan of its domain's nodes). */
static int node_of_gpu(const tide_engine_t *e, int gpu)
{
    const domain_t *d = &e->doms[dom_of_gpu(e, gpu)];
    for (int n = d->first_node; n < d->first_node + d->n_nodes; n++)
        if (gpu >= e->nodes[n].first_gpu && gpu < e->nodes[n].first_gpu + e->nodes[n].gpus)
            return n;
    return d->first_node;
}

void tide__dom_take(tide_engine_t *e, int gpu, int kind, int32_t id)
{
    domain_t *d = &e->doms[dom_of_gpu(e, gpu)];
    tide__place_changed(e);
    e->own_kind[gpu] = (uint8_t)kind;
    e->own_id[gpu] = id;
    d->free--;
    e->zone_free[d->zone]--;
    tide__dom_free_mark(e, (int)(d - e->doms));
}

/* Mark free GPU g of node n as held by a foreign job. */
static void foreign_take(tide_engine_t *e, int n, int g)
{
    domain_t *d = &e->doms[e->nodes[n].domain];
    tide__dom_take(e, g, OWN_FOREIGN, n);
    e->nodes[n].foreign++;
    d->foreign++;
    e->zone_foreign[d->zone]++;
    tide__acct_foreign(e, d, 1);
}

/* Unmark foreign GPU g of node n (the caller fixes the free counts). */
static void foreign_untake(tide_engine_t *e, int n, int g)
{
    domain_t *d = &e->doms[e->nodes[n].domain];
    tide__place_changed(e);
    tide__dom_touch(e, e->nodes[n].domain);
    e->own_kind[g] = OWN_FREE;
    e->own_id[g] = -1;
    e->nodes[n].foreign--;
    d->foreign--;
    e->zone_foreign[d->zone]--;
    tide__acct_foreign(e, d, -1);
}

void tide__dom_release(tide_engine_t *e, int gpu)
{
    domain_t *d = &e->doms[dom_of_gpu(e, gpu)];
    int n = node_of_gpu(e, gpu);
    tide__place_changed(e);
    tide__dom_touch(e, (int)(d - e->doms));
    e->own_kind[gpu] = OWN_FREE;
    e->own_id[gpu] = -1;
    if (e->nodes[n].cut) {
        d->cut_held--; /* down from tide's view until the node is back */
        e->zone_cut[d->zone]--;
    } else if (e->nodes[n].up) {
        d->free++;
        e->zone_free[d->zone]++;
        tide__dom_free_mark(e, (int)(d - e->doms));
        /* a foreign job reported here holds more than it was given so far:
         * tide's view was behind, the GPU is the foreign job's */
        if (e->nodes[n].foreign < e->nodes[n].foreign_want)
            foreign_take(e, n, gpu);
    }
}

void tide__place_undo(tide_engine_t *e, const int32_t *gpus, int n, uint64_t v0)
{
    int same = 1;
    for (int k = 0; k < n; k++) {
        tide__dom_release(e, gpus[k]);
        same &= e->own_kind[gpus[k]] == OWN_FREE && !e->nodes[node_of_gpu(e, gpus[k])].cut;
    }
    if (same)
        e->place_ver = v0;
}

void tide__foreign_set(tide_engine_t *e, int n, int want)
{
    node_t *nd = &e->nodes[n];
    nd->foreign_want = want;
    if (!nd->up)
        return; /* marked when the node is back */
    for (int g = nd->first_gpu; g < nd->first_gpu + nd->gpus && nd->foreign < want; g++)
        if (e->own_kind[g] == OWN_FREE)
            foreign_take(e, n, g);
    domain_t *d = &e->doms[nd->domain];
    for (int g = nd->first_gpu + nd->gpus; g-- > nd->first_gpu && nd->foreign > want;)
        if (e->own_kind[g] == OWN_FOREIGN) {
            foreign_untake(e, n, g);
            d->free++;
            e->zone_free[d->zone]++;
            tide__dom_free_mark(e, nd->domain);
        }
}

void tide__foreign_drop(tide_engine_t *e, int n)
{
    node_t *nd = &e->nodes[n];
    domain_t *d = &e->doms[nd->domain];
    for (int g = nd->first_gpu; g < nd->first_gpu + nd->gpus; g++)
        if (e->own_kind[g] == OWN_FOREIGN) {
            foreign_untake(e, n, g);
            if (nd->up) {
                d->free++;
                e->zone_free[d->zone]++;
                tide__dom_free_mark(e, nd->domain);
            }
        }
}

/* Domains of one size dividing a gang larger than each: how many of each
 * size (at most 16 sizes: one per node group in practice). */
typedef struct sizecount {
    int sizes[16], counts[16], ns;
} sizecount_t;

static void sizecount_add(sizecount_t *sc, int gpus)
{
    int k = 0;
    while (k < sc->ns && sc->sizes[k] != gpus)
        k++;
    if (k == sc->ns) {
        if (sc->ns == 16)
            return;
        sc->sizes[sc->ns] = gpus;
        sc->counts[sc->ns++] = 0;
    }
    sc->counts[k]++;
}

/* Gangs of `gang` GPUs the counted domains make, whole domains of one size each. */
static int sizecount_gangs(const sizecount_t *sc, int gang)
{
    int cap = 0;
    for (int k = 0; k < sc->ns; k++)
        cap += sc->counts[k] / (gang / sc->sizes[k]);
    return cap;
}

/* Gangs larger than one domain take whole domains of one size. Capacity in
 * such gangs, summed over the domain sizes that divide the gang: domains
 * whole and free (avail, or d->free when NULL) in the zones allowed. */
static int whole_capacity(const tide_engine_t *e, const int *avail, int gang, uint32_t types,
                          unsigned zones, int kind, int32_t owner)
{
    sizecount_t sc = {.ns = 0};
    for (int i = 0; i < e->n_doms; i++) {
        const domain_t *d = &e->doms[i];
        if (gang <= d->gpus || gang % d->gpus)
            continue;
        if (types && !(types & (1u << d->type)))
            continue;
        if (!tide__domain_ok(e, d, types, zones, kind, owner))
            continue;
        int a = avail ? avail[i] : d->free;
        if (a == d->gpus && d->up_gpus == d->gpus)
            sizecount_add(&sc, d->gpus);
    }
    return sizecount_gangs(&sc, gang);
}

int tide__capacity_for(const tide_engine_t *e, const int *avail, int gang, uint32_t types, unsigned zones,
                 int kind, int32_t owner)
{
    if (gang > e->max_dom_gpus)
        return whole_capacity(e, avail, gang, types, zones, kind, owner);
    int cap = 0;
    if (!avail) {
        /* only domains with at least a gang free count: visit just those */
        for (int f = gang; f <= e->max_dom_gpus; f++)
            for (int i = tide__dom_next_free(e, f, 0); i >= 0; i = tide__dom_next_free(e, f, i + 1))
                if (gang <= e->doms[i].gpus && tide__domain_ok(e, &e->doms[i], types, zones, kind, owner))
                    cap += f / gang;
        return cap;
    }
    for (int i = 0; i < e->n_doms; i++) {
        const domain_t *d = &e->doms[i];
        if (gang > d->gpus || !tide__domain_ok(e, d, types, zones, kind, owner))
            continue;
        cap += avail[i] / gang;
    }
    return cap;
}

/* Whole domains of one size dividing the gang, summed over the sizes. */
static int whole_on_empty(const domain_t *doms, int n_doms, int gang, uint32_t types)
{
    sizecount_t sc = {.ns = 0};
    for (int i = 0; i < n_doms; i++) {
        const domain_t *d = &doms[i];
        if (d->gpus > 0 && gang > d->gpus && gang % d->gpus == 0 &&
            (!types || (types & (1u << d->type))))
            sizecount_add(&sc, d->gpus);
    }
    return sizecount_gangs(&sc, gang);
}

int tide__gangs_on_empty(const domain_t *doms, int n_doms, int gang, uint32_t types)
{
    if (gang <= 0)
        return 0;
    int max = 0;
    for (int i = 0; i < n_doms; i++)
        max = TIDE_MAX(max, doms[i].gpus);
    if (gang > max)
        return whole_on_empty(doms, n_doms, gang, types);
    int cap = 0;
    for (int i = 0; i < n_doms; i++) {
        const domain_t *d = &doms[i];
        if (gang <= d->gpus && (!types || (types & (1u << d->type))))
            cap += d->gpus / gang;
    }
    return cap;
}

int tide__capacity_empty(tide_engine_t *e, int gang, uint32_t types)
{
    /* domain sizes and types never change: remember the answer per
     * (gang, types) in a small direct-mapped table */
    unsigned k = ((unsigned)gang * 2654435761u ^ types * 40503u) % CAP_EMPTY_SLOTS;
    cap_empty_t *c = &e->cap_empty[k];
    if (!c->valid || c->gang != gang || c->types != types) {
        c->gang = gang;
        c->types = types;
        c->cap = tide__gangs_on_empty(e->doms, e->n_doms, gang, types);
        c->valid = 1;
    }
    return c->cap;
}

int tide_job_spec_fits(const tide_job_spec_t *s, const tide_cluster_t *c, tide_error_t *err)
{
    int nd = tide_cluster_domains(c), nn = tide_cluster_nodes(c);
    if (nd <= 0 || tide_cluster_gpus(c) <= 0)
        return tide_errf(err, TIDE_EINVAL, "the cluster has no GPUs");
    domain_t *doms = tide_xcalloc((size_t)nd, sizeof *doms);
    for (int n = 0; n < nn; n++) {
        tide_node_info_t ni;
        if (tide_cluster_node(c, n, &ni) == 0 && ni.domain >= 0 && ni.domain < nd) {
            if (doms[ni.domain].gpus == 0)
                doms[ni.domain].type = ni.type;
            doms[ni.domain].gpus += ni.gpus;
        }
    }
    int g = s->gang_gpus, cap = tide__gangs_on_empty(doms, nd, g, s->gpu_types);
    free(doms);
    if (cap <= 0)
        return tide_errf(err, TIDE_EINVAL,
                         "gang_gpus: a gang of %d GPUs can never be placed on this cluster (a gang "
                         "must fit one high-speed domain or be whole domains of the accepted types)",
                         g);
    if (cap < s->dp_min)
        return tide_errf(err, TIDE_EINVAL,
                         "dp_min: %d gangs of %d GPUs can never run at once on this cluster (it "
                         "holds %d such gangs of the accepted types)",
                         s->dp_min, g, cap);
    return 0;
}

/* Take `gang` free GPUs inside domain d for owner. */
static void take_in_domain(tide_engine_t *e, domain_t *d, int gang, int kind, int32_t owner,
                           alloc_t *out)
{
    int got = 0;
    for (int n = d->first_node; n < d->first_node + d->n_nodes && got < gang; n++) {
        const node_t *nd = &e->nodes[n];
        if (!nd->up)
            continue;
        for (int g = nd->first_gpu; g < nd->first_gpu + nd->gpus && got < gang; g++) {
            if (e->own_kind[g] != OWN_FREE)
                continue;
            tide__dom_take(e, g, kind, owner);
            tide__alloc_push(out, g);
            got++;
        }
    }
}

static int claim_match(const domain_t *d, int kind, int32_t owner)
{
    return (kind == OWN_JOB && d->claim_kind == CLAIM_JOB && d->claim_id == owner) ||
           (kind == OWN_REPLICA && d->claim_kind == CLAIM_SERVICE && d->claim_id == owner);
}

/* Can any domain be claimed for an owner of this kind (claim_match)? From
 * the count of domains per claim kind (svcidx.c), not a scan. */
static int claim_possible(const tide_engine_t *e, int kind)
{
    return (kind == OWN_JOB && e->n_claimed[CLAIM_JOB] > 0) ||
           (kind == OWN_REPLICA && e->n_claimed[CLAIM_SERVICE] > 0);
}

/* Spreading a service's replicas: the least loaded rack and power domain
 * among the domains one more replica could use now (*spread = 0 when the
 * placement is not a service's replica or spreading is off). */
static void spread_floor(const tide_engine_t *e, int gang, uint32_t types, unsigned zones,
                         int kind, int32_t owner, int *spread, int *min_rack, int *min_power)
{
    *spread = kind == OWN_REPLICA && owner >= 0 && e->cfg.spread_max_skew > 0 &&
              gang <= e->max_dom_gpus;
    *min_rack = *min_power = 0;
    if (!*spread)
        return;
    const int *c = e->svcs[owner].spread;
    int first = 1;
    for (int f = gang; f <= e->max_dom_gpus; f++)
        for (int i = tide__dom_next_free(e, f, 0); i >= 0; i = tide__dom_next_free(e, f, i + 1)) {
            const domain_t *d = &e->doms[i];
            if (!tide__domain_ok(e, d, types, zones, kind, owner))
                continue;
            int r = c[d->rack], p = c[e->n_racks + d->power];
            if (first || r < *min_rack)
                *min_rack = r;
            if (first || p < *min_power)
                *min_power = p;
            first = 0;
        }
}

/* The best domain with room for one gang inside it (-1: none): a domain
 * claimed for the owner first, then (spreading a service's replicas) one
 * keeping its rack and power domain within the skew, then the zone order,
 * then the best fit. The domains with f >= gang free GPUs are visited by f
 * then index: equal scores have equal f, so the lowest index wins; the visit
 * stops once no domain left can score lower (a full cluster's first fitting
 * domain in the preferred zone ends it). */
/* The lowest rank among the zones that may hold a domain with free GPUs:
 * free GPUs counted there, or GPUs down (a down node can leave a domain's
 * count negative, so the zone's sum proves nothing); all zones if none. */
static int min_free_rank(const tide_engine_t *e, unsigned zones, const int *rank)
{
    int min_rank = Z_COUNT, any = Z_COUNT;
    for (int z = 0; z < Z_COUNT; z++) {
        if (!(zones & ZBIT(z)))
            continue;
        any = TIDE_MIN(any, rank[z]);
        if ((e->zone_free[z] > 0 || e->zone_gpus[z] != e->zone_total[z]) && rank[z] < min_rank)
            min_rank = rank[z];
    }
    return min_rank < Z_COUNT ? min_rank : any;
}

static int best_domain(tide_engine_t *e, int gang, uint32_t types, unsigned zones,
                       int kind, int32_t owner, const int *rank, int power)
{
    int spread, min_rack, min_power;
    spread_floor(e, gang, types, zones, kind, owner, &spread, &min_rack, &min_power);
    int best = -1;
    long long best_score = 0;
    /* every score on level f is at least the rank term of the best zone
     * that can hold a domain with free GPUs, plus f - gang: once the best
     * found is that low, nothing after it is lower */
    int min_rank = min_free_rank(e, zones, rank);
    /* and the claim term, when no domain is claimed for any owner of this
     * kind (claims are rare: a P1 job's preempted domains, a service's
     * emptied ones): then every domain carries it */
    long long claim_floor = claim_possible(e, kind) ? 0 : 1000000000000LL;
    for (int f = gang; f <= e->max_dom_gpus; f++) {
        long long floor_f = claim_floor + (long long)min_rank * 10000LL + (f - gang);
        if (best >= 0 && best_score <= floor_f)
            return best;
        for (int i = tide__dom_next_free(e, f, 0); i >= 0; i = tide__dom_next_free(e, f, i + 1)) {
            const domain_t *d = &e->doms[i];
            if (!tide__domain_ok(e, d, types, zones, kind, owner))
                continue;
            if (power && !tide__power_room(e, i, gang, 0))
                continue; /* would not fit its power budget at full load */
            long long excess = spread ? tide__spread_excess(e, owner, d, min_rack, min_power) : 0;
            long long score = (long long)(claim_match(d, kind, owner) ? 0 : 1) * 1000000000000LL +
                              TIDE_MIN(excess, 9999LL) * 100000000LL +
                              (long long)rank[d->zone] * 10000LL + (d->free - gang);
            if (best < 0 || score < best_score) {
                best = i;
                best_score = score;
                if (best_score <= floor_f)
                    return best;
            }
        }
    }
    return best;
}

int tide__place_gangs(tide_engine_t *e, int gang, int want, int min, uint32_t types, unsigned zones,
                int kind, int32_t owner, alloc_t *out, int prefer_inference)
{
    /* zone preference: inference fills the reserve, then its partition, then
     * the shared pool; training fills its own partition first. */
    static const int rank_inf[Z_COUNT] = {[Z_RESERVE] = 0, [Z_INF] = 1, [Z_SHARED] = 2, [Z_TRAIN] = 3};
    static const int rank_train[Z_COUNT] = {[Z_TRAIN] = 0, [Z_SHARED] = 1, [Z_INF] = 2, [Z_RESERVE] = 3};
    const int *rank = prefer_inference ? rank_inf : rank_train;
    int start_n = out->n, placed = 0;
    uint64_t v0 = e->place_ver;
    int power = kind == OWN_REPLICA && e->power_on;
    if (power)
        tide__power_room_init(e);
    for (; placed < want; placed++) {
        if (gang <= e->max_dom_gpus) {
            int best = best_domain(e, gang, types, zones, kind, owner, rank, power);
            if (best < 0)
                break;
            if (power)
                tide__power_room(e, best, gang, 1);
            take_in_domain(e, &e->doms[best], gang, kind, owner, out);
        } else {
            /* whole free domains of one size: try each size that divides the gang */
            int need = 0, found = 0;
            int *pick = e->scratch_c;
            for (int si = 0; si < e->n_doms && !(need && found == need); si++) {
                int sz = e->doms[si].gpus;
                if (gang % sz || gang <= sz)
                    continue;
                int seen_before = 0;
                for (int k = 0; k < si && !seen_before; k++)
                    seen_before = e->doms[k].gpus == sz;
                if (seen_before)
                    continue;
                need = gang / sz;
                found = 0;
                for (int r = 0; r < Z_COUNT && found < need; r++) {
                    for (int i = 0; i < e->n_doms && found < need; i++) {
                        domain_t *d = &e->doms[i];
                        if (d->gpus != sz || rank[d->zone] != r || d->free != d->gpus ||
                            d->up_gpus != d->gpus || !tide__domain_ok(e, d, types, zones, kind, owner))
                            continue;
                        pick[found++] = i;
                    }
                }
            }
            if (!need || found < need)
                break;
            for (int k = 0; k < found; k++)
                take_in_domain(e, &e->doms[pick[k]], e->doms[pick[k]].gpus, kind, owner, out);
        }
    }
    if (placed < min) {
        tide__place_undo(e, out->gpus + start_n, out->n - start_n, v0);
        out->n = start_n;
        return 0;
    }
    return placed;
}
