/* The cluster model: nodes in order, GPUs numbered node by node, high-speed
 * domains, racks and power domains numbered globally, GPU types interned. Pure. */
#include "tide/cluster.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/util.h"

struct tide_cluster {
    tide_node_info_t *nodes;
    size_t nnodes, ncap;
    tide_node_group_t *groups; /* gpu_type points into types[] */
    size_t ngroups, gcap;
    char *types[TIDE_MAX_GPU_TYPES];
    int ntypes;
    int ngpus;
    int ndomains, nracks, npower;
    int max_domain_gpus;
    tide_power_model_t pmodel[TIDE_MAX_GPU_TYPES];
    double *pbudget;           /* [npower] watts, 0 = none */
    size_t pbcap;
    double *uplink;            /* [nracks] GB/s, 0 = none */
    size_t upcap;
};

tide_cluster_t *tide_cluster_create(void)
{
    return tide_xcalloc(1, sizeof(tide_cluster_t));
}

void tide_cluster_destroy(tide_cluster_t *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->ntypes; i++)
        free(c->types[i]);
    free(c->nodes);
    free(c->groups);
    free(c->pbudget);
    free(c->uplink);
    free(c);
}

int tide_cluster_type_find(const tide_cluster_t *c, const char *name)
{
    if (!c || !name)
        return -1;
    for (int i = 0; i < c->ntypes; i++)
        if (strcmp(c->types[i], name) == 0)
            return i;
    return -1;
}

static int type_char_ok(int ch)
{
    return isalnum(ch) || ch == '-' || ch == '_' || ch == '.';
}

/* 0 if name is a valid GPU type name, else -1 with err. */
static int check_type_name(const char *name, tide_error_t *err)
{
    size_t n = strlen(name);
    if (n > TIDE_MAX_TYPE_NAME)
        return tide_errf(err, TIDE_EINVAL, "GPU type name '%.40s...' is longer than %d characters",
                         name, TIDE_MAX_TYPE_NAME);
    for (size_t i = 0; i < n; i++)
        if (!type_char_ok((unsigned char)name[i]))
            return tide_errf(err, TIDE_EINVAL,
                             "GPU type name '%s' has an invalid character (use letters, digits, "
                             "'.', '-' or '_')",
                             name);
    if (strcasecmp(name, "any") == 0)
        return tide_errf(err, TIDE_EINVAL, "'any' is reserved and cannot name a GPU type");
    return 0;
}

int tide_cluster_add_group(tide_cluster_t *c, const tide_node_group_t *g, tide_error_t *err)
{
    if (!c || !g)
        return tide_errf(err, TIDE_EINVAL, "no cluster or node group given");
    if (g->count < 1)
        return tide_errf(err, TIDE_EINVAL, "node count must be >= 1 (got %d)", g->count);
    if (g->gpus_per_node < 1 || g->gpus_per_node > TIDE_MAX_GPUS_PER_NODE)
        return tide_errf(err, TIDE_EINVAL, "gpus_per_node must be 1..%d (got %d)",
                         TIDE_MAX_GPUS_PER_NODE, g->gpus_per_node);
    int dn = g->domain_nodes == 0 ? 1 : g->domain_nodes;
    if (dn < 1)
        return tide_errf(err, TIDE_EINVAL, "domain_nodes must be >= 1 (got %d)", g->domain_nodes);
    if (g->count % dn != 0)
        return tide_errf(err, TIDE_EINVAL,
                         "domain_nodes (%d) must divide the node count (%d)", dn, g->count);
    int rn = g->rack_nodes == 0 ? 4 : g->rack_nodes;
    if (rn < 1)
        return tide_errf(err, TIDE_EINVAL, "rack_nodes must be >= 1 (got %d)", g->rack_nodes);
    int pn = g->power_nodes == 0 ? rn : g->power_nodes;
    if (pn < 1)
        return tide_errf(err, TIDE_EINVAL, "power_nodes must be >= 1 (got %d)", g->power_nodes);
    if (!(g->power_budget_w >= 0) || g->power_budget_w > 1e12)
        return tide_errf(err, TIDE_EINVAL, "power_budget_w must be 0..1e12 watts (got %g)",
                         g->power_budget_w);
    if (!(g->uplink_gbps >= 0) || g->uplink_gbps > 1e9)
        return tide_errf(err, TIDE_EINVAL, "uplink_gbps must be 0..1e9 GB/s (got %g)",
                         g->uplink_gbps);
    if ((size_t)g->count > TIDE_MAX_NODES - c->nnodes)
        return tide_errf(err, TIDE_ERANGE, "too many nodes: the cluster would have %zu (max %d)",
                         c->nnodes + (size_t)g->count, TIDE_MAX_NODES);
    /* domain GPUs: dn <= count <= TIDE_MAX_NODES, gpus <= 64: fits in int */
    const char *tname = (g->gpu_type && *g->gpu_type) ? g->gpu_type : "gpu";
    int type = tide_cluster_type_find(c, tname);
    if (type < 0) {
        if (check_type_name(tname, err) < 0)
            return -1;
        if (c->ntypes >= TIDE_MAX_GPU_TYPES)
            return tide_errf(err, TIDE_ERANGE, "too many GPU types (max %d) adding '%s'",
                             TIDE_MAX_GPU_TYPES, tname);
        type = c->ntypes;
        c->types[c->ntypes++] = tide_xstrdup(tname);
        tide_power_model_default(&c->pmodel[type]);
    }

    tide_grow((void **)&c->nodes, &c->ncap, c->nnodes + (size_t)g->count, sizeof *c->nodes);
    for (int i = 0; i < g->count; i++) {
        tide_node_info_t *n = &c->nodes[c->nnodes + (size_t)i];
        n->gpus = g->gpus_per_node;
        n->type = type;
        n->domain = c->ndomains + i / dn;
        n->rack = c->nracks + i / rn;
        n->power = c->npower + i / pn;
        n->first_gpu = c->ngpus + i * g->gpus_per_node;
    }
    int new_power = (g->count + pn - 1) / pn;
    tide_grow((void **)&c->pbudget, &c->pbcap, (size_t)(c->npower + new_power), sizeof *c->pbudget);
    for (int i = 0; i < new_power; i++)
        c->pbudget[c->npower + i] = g->power_budget_w;
    int new_racks = (g->count + rn - 1) / rn;
    tide_grow((void **)&c->uplink, &c->upcap, (size_t)(c->nracks + new_racks), sizeof *c->uplink);
    for (int i = 0; i < new_racks; i++)
        c->uplink[c->nracks + i] = g->uplink_gbps;
    c->nnodes += (size_t)g->count;
    c->ngpus += g->count * g->gpus_per_node;
    c->ndomains += g->count / dn;
    c->nracks += (g->count + rn - 1) / rn;
    c->npower += (g->count + pn - 1) / pn;
    if (dn * g->gpus_per_node > c->max_domain_gpus)
        c->max_domain_gpus = dn * g->gpus_per_node;

    tide_node_group_t ng = *g;
    ng.gpu_type = c->types[type];
    ng.domain_nodes = dn;
    ng.rack_nodes = rn;
    ng.power_nodes = pn;
    TIDE_PUSH(c->groups, c->ngroups, c->gcap, ng);
    return 0;
}

tide_cluster_t *tide_cluster_copy(const tide_cluster_t *c)
{
    if (!c)
        return NULL;
    tide_cluster_t *d = tide_xmalloc(sizeof *d);
    *d = *c;
    d->nodes = tide_xmalloc((c->nnodes ? c->nnodes : 1) * sizeof *d->nodes);
    if (c->nnodes)
        memcpy(d->nodes, c->nodes, c->nnodes * sizeof *d->nodes);
    d->ncap = c->nnodes;
    d->groups = tide_xmalloc((c->ngroups ? c->ngroups : 1) * sizeof *d->groups);
    d->gcap = c->ngroups;
    for (int i = 0; i < c->ntypes; i++)
        d->types[i] = tide_xstrdup(c->types[i]);
    d->pbudget = tide_xmalloc((c->npower ? (size_t)c->npower : 1) * sizeof *d->pbudget);
    d->pbcap = c->npower ? (size_t)c->npower : 1;
    if (c->npower)
        memcpy(d->pbudget, c->pbudget, (size_t)c->npower * sizeof *d->pbudget);
    d->uplink = tide_xcalloc(c->nracks ? (size_t)c->nracks : 1, sizeof *d->uplink);
    d->upcap = c->nracks ? (size_t)c->nracks : 1;
    if (c->nracks && c->uplink)
        memcpy(d->uplink, c->uplink, (size_t)c->nracks * sizeof *d->uplink);
    for (size_t i = 0; i < c->ngroups; i++) {
        d->groups[i] = c->groups[i];
        d->groups[i].gpu_type = d->types[tide_cluster_type_find(c, c->groups[i].gpu_type)];
    }
    return d;
}

/* ------------------------------------------------------------------ power */

int tide_cluster_set_power_model(tide_cluster_t *c, int type, const tide_power_model_t *m,
                                 tide_error_t *err)
{
    if (!c || !m || type < 0 || type >= c->ntypes)
        return tide_errf(err, TIDE_EINVAL, "power model: no such GPU type (%d)", type);
    const char *why = NULL;
    if (tide_power_model_check(m, &why) < 0)
        return tide_errf(err, TIDE_EINVAL, "power model of %s: %s", c->types[type], why);
    c->pmodel[type] = *m;
    return 0;
}

const tide_power_model_t *tide_cluster_power_model(const tide_cluster_t *c, int type)
{
    return c && type >= 0 && type < c->ntypes ? &c->pmodel[type] : NULL;
}

int tide_cluster_set_power_budget(tide_cluster_t *c, int domain, double watts, tide_error_t *err)
{
    if (!c || domain < 0 || domain >= c->npower)
        return tide_errf(err, TIDE_EINVAL, "no power domain %d", domain);
    if (!(watts >= 0) || watts > 1e12)
        return tide_errf(err, TIDE_EINVAL, "power budget must be 0..1e12 watts (got %g)", watts);
    c->pbudget[domain] = watts;
    return 0;
}

double tide_cluster_power_budget(const tide_cluster_t *c, int domain)
{
    return c && domain >= 0 && domain < c->npower ? c->pbudget[domain] : 0;
}

double tide_cluster_power_nameplate(const tide_cluster_t *c, int domain)
{
    double w = 0;
    for (size_t n = 0; c && n < c->nnodes; n++)
        if (domain < 0 || c->nodes[n].power == domain)
            w += c->nodes[n].gpus * c->pmodel[c->nodes[n].type].tdp_w;
    return w;
}

int tide_cluster_scale_power_budgets(tide_cluster_t *c, double factor, tide_error_t *err)
{
    if (!c || !(factor > 0) || factor > 100)
        return tide_errf(err, TIDE_EINVAL, "power budget factor must be in (0, 100] (got %g)",
                         factor);
    for (int d = 0; d < c->npower; d++)
        c->pbudget[d] = 0;
    for (size_t n = 0; n < c->nnodes; n++)
        c->pbudget[c->nodes[n].power] += factor * c->nodes[n].gpus * c->pmodel[c->nodes[n].type].tdp_w;
    return 0;
}

double tide_cluster_rack_uplink(const tide_cluster_t *c, int rack)
{
    return c && c->uplink && rack >= 0 && rack < c->nracks ? c->uplink[rack] : 0;
}

int tide_cluster_power_budgeted(const tide_cluster_t *c)
{
    for (int d = 0; c && d < c->npower; d++)
        if (c->pbudget[d] > 0)
            return 1;
    return 0;
}

/* ------------------------------------------------------------------ parse */

/* Parse decimal digits at *p (no sign) into *out, advancing *p. -1 if there
 * are no digits, -2 if the value exceeds 10^9. */
static int parse_uint(const char **p, int *out)
{
    const char *s = *p;
    long v = 0;
    if (!isdigit((unsigned char)*s))
        return -1;
    while (isdigit((unsigned char)*s)) {
        v = v * 10 + (*s - '0');
        if (v > 1000000000L)
            return -2;
        s++;
    }
    *p = s;
    *out = (int)v;
    return 0;
}

static int is_space(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* Parse one group in [s, e) (spaces already trimmed) into g; the type name
 * is written to tbuf. */
static int parse_group(const char *s, const char *e, tide_node_group_t *g, char *tbuf,
                       size_t tcap, tide_error_t *err)
{
    /* work on a NUL-terminated copy so the helpers can scan freely */
    size_t len = (size_t)(e - s);
    char *buf = tide_xmalloc(len + 1);
    memcpy(buf, s, len);
    buf[len] = 0;
    const char *p = buf;
    int rc = -1, pr;
    memset(g, 0, sizeof *g);
    tbuf[0] = 0;

    if (len == 0) {
        tide_errf(err, TIDE_EINVAL, "empty group (expected COUNTxGPUS like 16x8)");
        goto out;
    }
    if (*p == '-' || *p == '+') {
        tide_errf(err, TIDE_EINVAL, "node count must be a positive whole number");
        goto out;
    }
    if ((pr = parse_uint(&p, &g->count)) < 0) {
        tide_errf(err, TIDE_EINVAL, pr == -2 ? "node count is too large"
                                             : "expected a node count (digits) at the start");
        goto out;
    }
    if (*p != 'x' && *p != 'X') {
        tide_errf(err, TIDE_EINVAL, "expected 'x' after the node count (like 16x8)");
        goto out;
    }
    p++;
    if (*p == '-' || *p == '+') {
        tide_errf(err, TIDE_EINVAL, "GPUs per node must be a positive whole number");
        goto out;
    }
    if ((pr = parse_uint(&p, &g->gpus_per_node)) < 0) {
        tide_errf(err, TIDE_EINVAL, pr == -2 ? "GPUs per node must be 1..%d"
                                             : "expected GPUs per node (digits) after 'x'",
                  TIDE_MAX_GPUS_PER_NODE);
        goto out;
    }
    if (*p == ':') {
        p++;
        const char *t = p;
        while (*p && *p != '/')
            p++;
        size_t tl = (size_t)(p - t);
        if (tl == 0) {
            tide_errf(err, TIDE_EINVAL, "empty GPU type after ':'");
            goto out;
        }
        if (tl >= tcap) {
            tide_errf(err, TIDE_EINVAL, "GPU type name is longer than %d characters",
                      TIDE_MAX_TYPE_NAME);
            goto out;
        }
        memcpy(tbuf, t, tl);
        tbuf[tl] = 0;
        if (check_type_name(tbuf, err) < 0)
            goto out;
        g->gpu_type = tbuf;
    }
    if (*p == '/') {
        p++;
        if ((pr = parse_uint(&p, &g->domain_nodes)) < 0) {
            tide_errf(err, TIDE_EINVAL, pr == -2 ? "nodes per domain is too large"
                                                 : "expected nodes per domain (digits) after '/'");
            goto out;
        }
        if (g->domain_nodes < 1) {
            tide_errf(err, TIDE_EINVAL, "nodes per domain must be >= 1");
            goto out;
        }
    }
    if (*p) {
        tide_errf(err, TIDE_EINVAL, "unexpected '%c' (expected COUNTxGPUS[:TYPE][/DOMAIN])", *p);
        goto out;
    }
    if (g->count < 1) {
        tide_errf(err, TIDE_EINVAL, "node count must be >= 1");
        goto out;
    }
    if (g->gpus_per_node < 1 || g->gpus_per_node > TIDE_MAX_GPUS_PER_NODE) {
        tide_errf(err, TIDE_EINVAL, "GPUs per node must be 1..%d (got %d)",
                  TIDE_MAX_GPUS_PER_NODE, g->gpus_per_node);
        goto out;
    }
    rc = 0;
out:
    free(buf);
    return rc;
}

tide_cluster_t *tide_cluster_parse(const char *spec, tide_error_t *err)
{
    if (!spec) {
        tide_errf(err, TIDE_EINVAL, "cluster spec: none given");
        return NULL;
    }
    tide_cluster_t *c = tide_cluster_create();
    const char *p = spec;
    int gi = 0;
    for (;;) {
        gi++;
        const char *e = strchr(p, ',');
        if (!e)
            e = p + strlen(p);
        const char *s = p, *t = e;
        while (s < t && is_space(*s))
            s++;
        while (t > s && is_space(t[-1]))
            t--;
        tide_node_group_t g;
        char tbuf[TIDE_MAX_TYPE_NAME + 1];
        if (parse_group(s, t, &g, tbuf, sizeof tbuf, err) < 0 ||
            tide_cluster_add_group(c, &g, err) < 0) {
            tide_err_prefix(err, "cluster spec '%.100s': group %d ('%.*s'): ", spec, gi,
                            (int)TIDE_MIN(t - s, 60), s);
            tide_cluster_destroy(c);
            return NULL;
        }
        if (!*e)
            break;
        p = e + 1;
    }
    return c;
}

/* ------------------------------------------------------------- accessors */

int tide_cluster_nodes(const tide_cluster_t *c) { return c ? (int)c->nnodes : 0; }
int tide_cluster_gpus(const tide_cluster_t *c) { return c ? c->ngpus : 0; }
int tide_cluster_domains(const tide_cluster_t *c) { return c ? c->ndomains : 0; }
int tide_cluster_types(const tide_cluster_t *c) { return c ? c->ntypes : 0; }
int tide_cluster_racks(const tide_cluster_t *c) { return c ? c->nracks : 0; }
int tide_cluster_power_domains(const tide_cluster_t *c) { return c ? c->npower : 0; }
int tide_cluster_max_domain_gpus(const tide_cluster_t *c) { return c ? c->max_domain_gpus : 0; }
int tide_cluster_groups(const tide_cluster_t *c) { return c ? (int)c->ngroups : 0; }

const char *tide_cluster_type_name(const tide_cluster_t *c, int type)
{
    if (!c || type < 0 || type >= c->ntypes)
        return NULL;
    return c->types[type];
}

int tide_cluster_node(const tide_cluster_t *c, int node, tide_node_info_t *out)
{
    if (!c || node < 0 || (size_t)node >= c->nnodes || !out)
        return -1;
    *out = c->nodes[node];
    return 0;
}

int tide_cluster_group(const tide_cluster_t *c, int i, tide_node_group_t *out)
{
    if (!c || i < 0 || (size_t)i >= c->ngroups || !out)
        return -1;
    *out = c->groups[i];
    return 0;
}

int tide_cluster_format(const tide_cluster_t *c, char *buf, size_t n)
{
    size_t len = 0;
    if (n > 0)
        buf[0] = 0;
    for (size_t i = 0; c && i < c->ngroups; i++) {
        const tide_node_group_t *g = &c->groups[i];
        char tmp[128];
        int k = snprintf(tmp, sizeof tmp, "%s%dx%d:%s", i ? "," : "", g->count, g->gpus_per_node,
                         g->gpu_type);
        if (g->domain_nodes > 1)
            k += snprintf(tmp + k, sizeof tmp - (size_t)k, "/%d", g->domain_nodes);
        if (len < n) {
            size_t room = n - len - 1;
            size_t cp = (size_t)k < room ? (size_t)k : room;
            memcpy(buf + len, tmp, cp);
            buf[len + cp] = 0;
        }
        len += (size_t)k;
    }
    return (int)len;
}

/* -------------------------------------------------------------- type mask */

int tide_cluster_type_mask(const tide_cluster_t *c, const char *names, uint32_t *mask,
                           tide_error_t *err)
{
    uint32_t m = 0;
    if (mask)
        *mask = 0;
    if (!names)
        return 0;
    const char *p = names;
    while (is_space(*p))
        p++;
    if (!*p)
        return 0;
    int n_items = 0, saw_any = 0;
    for (;;) {
        const char *e = p;
        while (*e && *e != '|' && *e != ';')
            e++;
        const char *s = p, *t = e;
        while (s < t && is_space(*s))
            s++;
        while (t > s && is_space(t[-1]))
            t--;
        size_t len = (size_t)(t - s);
        if (len == 0)
            return tide_errf(err, TIDE_EINVAL,
                             "GPU types '%.100s': empty name (separate names with '|')", names);
        n_items++;
        if (len == 3 && strncasecmp(s, "any", 3) == 0) {
            saw_any = 1;
        } else {
            int found = -1;
            for (int i = 0; c && i < c->ntypes; i++)
                if (strlen(c->types[i]) == len && memcmp(c->types[i], s, len) == 0)
                    found = i;
            if (found < 0) {
                char known[256] = "";
                size_t kl = 0;
                for (int i = 0; c && i < c->ntypes && kl < sizeof known - 1; i++) {
                    int k = snprintf(known + kl, sizeof known - kl, "%s%s", i ? ", " : "",
                                     c->types[i]);
                    if (k < 0)
                        break;
                    kl += (size_t)k;
                }
                if (kl >= sizeof known)
                    kl = sizeof known - 1;
                return tide_errf(err, TIDE_ENOENT,
                                 "unknown GPU type '%.*s' (the cluster has: %s)",
                                 (int)TIDE_MIN(len, 64), s, kl ? known : "no types");
            }
            m |= 1u << found;
        }
        if (!*e)
            break;
        p = e + 1;
    }
    if (saw_any && n_items > 1)
        return tide_errf(err, TIDE_EINVAL, "GPU types '%.100s': 'any' cannot be combined with "
                                           "other names", names);
    if (mask)
        *mask = saw_any ? 0 : m;
    return 0;
}
