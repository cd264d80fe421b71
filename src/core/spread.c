/* Failure domains: a service's inference replicas (and the Tier A reserve)
 * spread across racks and power domains. Each replica is still one gang
 * packed inside one high-speed domain; it is the replicas that spread. Per
 * service, counts of placed replicas per rack and per power domain (kept as
 * replicas start and stop) let a placement prefer domains whose rack and
 * power domain stay within spread_max_skew of the least loaded candidate. The
 * invariant: losing any one rack or power domain leaves each service at least
 * survive_share of its Tier A floor. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

void tide__spread_alloc(tide_engine_t *e, service_t *s)
{
    s->spread = tide_xcalloc((size_t)(e->n_racks + e->n_power) + 1, sizeof *s->spread);
}

/* The domain a replica is counted in (its first GPU's). */
static const domain_t *rep_dom(const tide_engine_t *e, const replica_t *r)
{
    return &e->doms[dom_of_gpu(e, r->alloc.gpus[0])];
}

void tide__spread_add(tide_engine_t *e, const replica_t *r, int delta)
{
    if (r->rehearsal || r->alloc.n == 0)
        return;
    const domain_t *d = rep_dom(e, r);
    int *c = e->svcs[r->service].spread;
    c[d->rack] += delta;
    c[e->n_racks + d->power] += delta;
}

void tide__spread_rebuild(tide_engine_t *e)
{
    for (int s = 0; s < e->n_svcs; s++)
        memset(e->svcs[s].spread, 0, (size_t)(e->n_racks + e->n_power) * sizeof(int));
    for (size_t i = 0; i < e->n_reps; i++)
        if (e->reps[i].state != REP_STOPPED)
            tide__spread_add(e, &e->reps[i], 1);
}

long tide__spread_excess(const tide_engine_t *e, int si, const domain_t *d, int min_rack,
                         int min_power)
{
    const int *c = e->svcs[si].spread;
    int skew = e->cfg.spread_max_skew;
    long x = (long)c[d->rack] + 1 - min_rack - skew;
    long y = (long)c[e->n_racks + d->power] + 1 - min_power - skew;
    return (x > 0 ? x : 0) + (y > 0 ? y : 0);
}

int tide__spread_short(const tide_engine_t *e, int si)
{
    const service_t *s = &e->svcs[si];
    int all = s->ready + s->warming, floor_n = s->spec.min_replicas;
    if (!(e->cfg.survive_share > 0) || e->cfg.spread_max_skew <= 0 || floor_n <= 0 ||
        all < floor_n || s->warming > 0)
        return 0;
    int most = 0;
    for (int x = 0; x < e->n_racks + e->n_power; x++)
        most = TIDE_MAX(most, s->spread[x]);
    return all - most < e->cfg.survive_share * floor_n - 1e-9;
}

int tide__spread_load(const tide_engine_t *e, const replica_t *r)
{
    if (r->alloc.n == 0)
        return 0;
    const domain_t *d = rep_dom(e, r);
    const int *c = e->svcs[r->service].spread;
    return c[e->n_racks + d->power] * 4096 + c[d->rack];
}

/* ------------------------------------------------------------- layout */

typedef struct okey {
    int k_rack;   /* its rank among its rack's domains */
    int k_power;  /* its rack's rank among its power domain's racks */
    int power, rack, d;
} okey_t;

static int okey_cmp(const void *a, const void *b)
{
    const okey_t *x = a, *y = b;
    int v[4][2] = {{x->k_rack, y->k_rack}, {x->k_power, y->k_power}, {x->power, y->power},
                   {x->d, y->d}};
    for (int i = 0; i < 4; i++)
        if (v[i][0] != v[i][1])
            return v[i][0] < v[i][1] ? -1 : 1;
    return 0;
}

void tide__spread_order(const tide_engine_t *e, int *order)
{
    okey_t *k = tide_xmalloc((size_t)(e->n_doms + 1) * sizeof *k);
    int *in_rack = tide_xcalloc((size_t)e->n_racks + 1, sizeof(int));
    int *rack_rank = tide_xmalloc(((size_t)e->n_racks + 1) * sizeof(int));
    int *in_power = tide_xcalloc((size_t)e->n_power + 1, sizeof(int));
    for (int r = 0; r < e->n_racks; r++)
        rack_rank[r] = -1;
    /* domains are in node order, so racks and power domains come in order */
    for (int i = 0; i < e->n_doms; i++) {
        const domain_t *d = &e->doms[i];
        if (rack_rank[d->rack] < 0)
            rack_rank[d->rack] = in_power[d->power]++;
        k[i] = (okey_t){.k_rack = in_rack[d->rack]++, .k_power = rack_rank[d->rack],
                        .power = d->power, .rack = d->rack, .d = i};
    }
    qsort(k, (size_t)e->n_doms, sizeof *k, okey_cmp);
    for (int i = 0; i < e->n_doms; i++)
        order[i] = k[i].d;
    free(k);
    free(in_rack);
    free(rack_rank);
    free(in_power);
}

/* ---------------------------------------------------------- invariant */

/* Count replica r once in every rack and power domain holding one of its
 * GPUs: in[0..n_racks) racks, then power domains; stamp[] dedups per replica. */
static void count_domains(const tide_engine_t *e, const replica_t *r, int *in, int32_t *stamp,
                          int32_t id)
{
    for (int k = 0; k < r->alloc.n; k++) {
        int g = r->alloc.gpus[k];
        const domain_t *d = &e->doms[dom_of_gpu(e, g)];
        int n = d->first_node;
        while (n + 1 < d->first_node + d->n_nodes && e->nodes[n + 1].first_gpu <= g)
            n++;
        tide_node_info_t ni;
        tide_cluster_node(e->cluster, n, &ni);
        int x[2] = {ni.rack, e->n_racks + ni.power};
        for (int p = 0; p < 2; p++)
            if (stamp[x[p]] != id) {
                stamp[x[p]] = id;
                in[x[p]]++;
            }
    }
}

/* One service: its placed replicas (ready or warming, reachable) against
 * each failure domain's share of them. */
static int check_service(const tide_engine_t *e, int si, int *in, int32_t *stamp,
                         tide_error_t *err)
{
    static const char *const what[2] = {"rack", "power domain"};
    const service_t *s = &e->svcs[si];
    int floor_n = s->spec.min_replicas, nx = e->n_racks + e->n_power, all = 0;
    double share = e->cfg.survive_share;
    if (floor_n <= 0 || s->ready + s->warming < floor_n)
        return 0; /* below its floor already: Tier A accounting reports it */
    memset(in, 0, (size_t)nx * sizeof *in);
    for (int x = 0; x < nx; x++)
        stamp[x] = -1;
    for (size_t i = 0; i < e->n_reps; i++) {
        const replica_t *r = &e->reps[i];
        if (r->service != si || r->state == REP_STOPPED || r->rehearsal || r->cut)
            continue;
        all++;
        count_domains(e, r, in, stamp, (int32_t)i);
    }
    for (int x = 0; x < nx; x++) {
        int p = x >= e->n_racks;
        if (all - in[x] < share * floor_n - 1e-9)
            return tide_errf(err, TIDE_ESTATE,
                             "service %s: losing %s %d leaves %d of %d replicas, below %.0f%% "
                             "of its floor %d",
                             s->spec.name, what[p], p ? x - e->n_racks : x, all - in[x], all,
                             share * 100, floor_n);
    }
    return 0;
}

int tide__spread_check(const tide_engine_t *e, tide_error_t *err)
{
    if (!(e->cfg.survive_share > 0))
        return 0;
    /* "losing one": while a node is down or cut off, one is lost already */
    for (int n = 0; n < e->n_nodes; n++)
        if (!e->nodes[n].up)
            return 0;
    size_t nx = (size_t)(e->n_racks + e->n_power) + 1;
    int *in = tide_xmalloc(nx * sizeof *in);
    int32_t *stamp = tide_xmalloc(nx * sizeof *stamp);
    int rc = 0;
    for (int si = 0; si < e->n_svcs && !rc; si++)
        rc = check_service(e, si, in, stamp, err);
    free(in);
    free(stamp);
    return rc;
}
