/* Cluster YAML loader on libyaml's event parser: a small recursive descent
 * over events that accepts exactly the documented shape. */
#include "formats/cluster_file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "formats/governance.h"
#include "util/util.h"

typedef struct yp {
    yaml_parser_t p;
    yaml_event_t ev; /* current event (valid when have) */
    int have;
    const char *name;
    tide_error_t *err;
} yp_t;

/* The governance section as read, before GPU type names are resolved
 * against the cluster (groups may come after teams and prices). */
typedef struct rawq {
    char type[TIDE_MAX_TYPE_NAME + 1];
    int value, line;
} rawq_t;

typedef struct rawteam {
    tide_team_spec_t spec;   /* name owned; quota filled at resolution */
    int line;                /* the team's mapping */
    int scalar_quota;        /* -1 = none */
    int scalar_line;
    rawq_t *q;               /* quota map entries */
    size_t nq;
} rawteam_t;

typedef struct rawprice {
    char type[TIDE_MAX_TYPE_NAME + 1]; /* a GPU type name or "default" */
    int line;
    double v[TIDE_COST_COUNT];
    int given[TIDE_COST_COUNT];
} rawprice_t;

/* A power model as read (resolved against the cluster's types at the end). */
typedef struct rawpower {
    char type[TIDE_MAX_TYPE_NAME + 1];
    int line;
    tide_power_model_t m;
} rawpower_t;

typedef struct gov_raw {
    rawteam_t *teams;
    size_t n_teams;
    rawprice_t *prices;
    size_t n_prices;
    int have_teams, have_prices, have_fairshare, have_qos;
    int fairshare;           /* -1 not given */
    tide_time_t half_life;   /* 0 not given */
    int n_qos;               /* qos: NAME: 1..3 */
    char qos_names[TIDE_GOV_MAX_QOS][64];
    int qos_prio[TIDE_GOV_MAX_QOS];
    int have_power;
    rawpower_t *power;       /* power: TYPE: {...} */
    size_t n_power;
} gov_raw_t;

static void gov_raw_free(gov_raw_t *r)
{
    for (size_t i = 0; i < r->n_teams; i++) {
        free((char *)r->teams[i].spec.name);
        free(r->teams[i].q);
    }
    free(r->teams);
    free(r->prices);
    free(r->power);
    memset(r, 0, sizeof *r);
}

static int line_of(const yaml_event_t *ev)
{
    return (int)ev->start_mark.line + 1;
}

static int fail(yp_t *y, int line, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(yp_t *y, int line, int code, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tide_errf(y->err, code, "%s:%d: %s", y->name, line, msg);
}

/* Advance to the next event. */
static int next(yp_t *y)
{
    if (y->have) {
        yaml_event_delete(&y->ev);
        y->have = 0;
    }
    if (!yaml_parser_parse(&y->p, &y->ev)) {
        const char *problem = y->p.problem ? y->p.problem : "unknown error";
        int line = (int)y->p.problem_mark.line + 1;
        if (y->p.error == YAML_READER_ERROR)
            return fail(y, line, TIDE_EINVAL, "YAML: %s (at byte %zu)", problem,
                        y->p.problem_offset);
        if (y->p.error == YAML_MEMORY_ERROR)
            return fail(y, line, TIDE_ENOMEM, "YAML: out of memory");
        if (y->p.context)
            return fail(y, line, TIDE_EINVAL, "YAML syntax error: %s %s (line %d)", problem,
                        y->p.context, (int)y->p.context_mark.line + 1);
        return fail(y, line, TIDE_EINVAL, "YAML syntax error: %s", problem);
    }
    y->have = 1;
    if (y->ev.type == YAML_ALIAS_EVENT)
        return fail(y, line_of(&y->ev), TIDE_EINVAL, "aliases (*name) are not supported");
    return 0;
}

static const char *kind_name(yaml_event_type_t t)
{
    switch (t) {
    case YAML_SCALAR_EVENT: return "a scalar";
    case YAML_SEQUENCE_START_EVENT: return "a list";
    case YAML_MAPPING_START_EVENT: return "a mapping";
    default: return "something else";
    }
}

static const char *scalar(const yp_t *y)
{
    return (const char *)y->ev.data.scalar.value;
}

/* The current event must be a scalar key; copy it into key. */
static int read_key(yp_t *y, char *key, size_t n)
{
    if (y->ev.type != YAML_SCALAR_EVENT)
        return fail(y, line_of(&y->ev), TIDE_EINVAL, "keys must be plain names, got %s",
                    kind_name(y->ev.type));
    if (y->ev.data.scalar.length >= n || strlen(scalar(y)) != y->ev.data.scalar.length)
        return fail(y, line_of(&y->ev), TIDE_EINVAL, "unknown key '%.40s'", scalar(y));
    memcpy(key, scalar(y), y->ev.data.scalar.length + 1);
    return 0;
}

/* The current event is the value of `key`: a plain whole number in 1..max. */
static int read_int(yp_t *y, const char *key, int min, int max, int *out)
{
    int line = line_of(&y->ev);
    if (y->ev.type != YAML_SCALAR_EVENT)
        return fail(y, line, TIDE_EINVAL, "'%s' must be a number, got %s", key,
                    kind_name(y->ev.type));
    long long v;
    if (y->ev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return fail(y, line, TIDE_EINVAL, "'%s' must be a number, got the quoted string '%.40s'",
                    key, scalar(y));
    if (tide_parse_int(scalar(y), &v) < 0 || strlen(scalar(y)) != y->ev.data.scalar.length)
        return fail(y, line, TIDE_EINVAL, "'%s' must be a whole number, got '%.40s'", key,
                    scalar(y));
    if (v < min || v > max)
        return fail(y, line, TIDE_EINVAL, "'%s' must be %d..%d, got %lld", key, min, max, v);
    *out = (int)v;
    return 0;
}

/* The next key of a mapping whose keys are keys[0..nk) (current event: the
 * mapping's start or the previous value). Returns 1 at the mapping's end, 0
 * with *k its index and the value as the current event, -1 on an unknown or
 * repeated key ("WHO: unknown key 'x' (expected LIST)", "WHO: 'x' given
 * twice"). seen[nk] must start zeroed. */
static int map_key(yp_t *y, const char *const *keys, int nk, int *seen, const char *who,
                   const char *list, int *k)
{
    if (next(y) < 0)
        return -1;
    if (y->ev.type == YAML_MAPPING_END_EVENT)
        return 1;
    char key[64];
    int kline = line_of(&y->ev);
    if (read_key(y, key, sizeof key) < 0)
        return -1;
    for (*k = 0; *k < nk && strcmp(keys[*k], key) != 0;)
        (*k)++;
    if (*k == nk)
        return fail(y, kline, TIDE_EINVAL, "%s: unknown key '%s' (expected %s)", who, key, list);
    if (seen[*k])
        return fail(y, kline, TIDE_EINVAL, "%s: '%s' given twice", who, key);
    seen[*k] = 1;
    return next(y);
}

static int read_watts(yp_t *y, const char *key, double *out);
static int read_quantity(yp_t *y, const char *key, const char *unit, double *out);

/* One group mapping (current event: MAPPING_START). */
static int read_group(yp_t *y, tide_cluster_t *c, int gi)
{
    int gline = line_of(&y->ev);
    tide_node_group_t g;
    memset(&g, 0, sizeof g);
    char type[TIDE_MAX_TYPE_NAME + 1] = "";
    enum { K_COUNT, K_GPUS, K_TYPE, K_DOMAIN, K_RACK, K_POWER, K_BUDGET, K_UPLINK, K_N };
    static const char *const keys[K_N] = {"count",        "gpus_per_node", "gpu_type",
                                          "domain_nodes", "rack_nodes",    "power_nodes",
                                          "power_budget_w", "uplink_gbps"};
    int seen[K_N] = {0};
    char who[32];
    snprintf(who, sizeof who, "group %d", gi);
    for (;;) {
        int k, end = map_key(y, keys, K_N, seen, who,
                             "count, gpus_per_node, gpu_type, domain_nodes, rack_nodes, "
                             "power_nodes, power_budget_w, uplink_gbps",
                             &k);
        if (end < 0)
            return -1;
        if (end)
            break;
        const char *key = keys[k];
        int rc = 0;
        switch (k) {
        case K_COUNT: rc = read_int(y, key, 1, TIDE_MAX_NODES, &g.count); break;
        case K_GPUS: rc = read_int(y, key, 1, TIDE_MAX_GPUS_PER_NODE, &g.gpus_per_node); break;
        case K_DOMAIN: rc = read_int(y, key, 1, TIDE_MAX_NODES, &g.domain_nodes); break;
        case K_RACK: rc = read_int(y, key, 1, TIDE_MAX_NODES, &g.rack_nodes); break;
        case K_POWER: rc = read_int(y, key, 1, TIDE_MAX_NODES, &g.power_nodes); break;
        case K_BUDGET: rc = read_watts(y, key, &g.power_budget_w); break;
        case K_UPLINK: rc = read_quantity(y, key, "GB/s", &g.uplink_gbps); break;
        case K_TYPE:
            if (y->ev.type != YAML_SCALAR_EVENT)
                return fail(y, line_of(&y->ev), TIDE_EINVAL, "'gpu_type' must be a name, got %s",
                            kind_name(y->ev.type));
            if (y->ev.data.scalar.length == 0)
                return fail(y, line_of(&y->ev), TIDE_EINVAL,
                            "'gpu_type' is empty (leave the key out for the default 'gpu')");
            if (y->ev.data.scalar.length > TIDE_MAX_TYPE_NAME ||
                strlen(scalar(y)) != y->ev.data.scalar.length)
                return fail(y, line_of(&y->ev), TIDE_EINVAL,
                            "'gpu_type' is longer than %d characters", TIDE_MAX_TYPE_NAME);
            memcpy(type, scalar(y), y->ev.data.scalar.length + 1);
            g.gpu_type = type;
            break;
        }
        if (rc < 0)
            return -1;
    }
    if (!seen[K_COUNT])
        return fail(y, gline, TIDE_EINVAL, "group %d: missing 'count' (number of nodes)", gi);
    if (!seen[K_GPUS])
        return fail(y, gline, TIDE_EINVAL, "group %d: missing 'gpus_per_node'", gi);
    if (tide_cluster_add_group(c, &g, y->err) < 0)
        return tide_err_prefix(y->err, "%s:%d: group %d: ", y->name, gline, gi);
    return 0;
}

/* The value of `groups` (current event). */
static int read_groups(yp_t *y, tide_cluster_t *c)
{
    int line = line_of(&y->ev);
    if (y->ev.type != YAML_SEQUENCE_START_EVENT)
        return fail(y, line, TIDE_EINVAL, "'groups' must be a list of node groups, got %s",
                    kind_name(y->ev.type));
    int gi = 0;
    for (;;) {
        if (next(y) < 0)
            return -1;
        if (y->ev.type == YAML_SEQUENCE_END_EVENT)
            break;
        gi++;
        if (y->ev.type != YAML_MAPPING_START_EVENT)
            return fail(y, line_of(&y->ev), TIDE_EINVAL,
                        "group %d must be a mapping (count: ..., gpus_per_node: ...), got %s", gi,
                        kind_name(y->ev.type));
        if (read_group(y, c, gi) < 0)
            return -1;
    }
    if (gi == 0)
        return fail(y, line, TIDE_EINVAL, "'groups' is empty: a cluster needs at least one group");
    return 0;
}

/* ------------------------------------------------------------ governance */

/* The current event is a scalar value for `key`: a plain (unquoted) scalar. */
static int want_plain(yp_t *y, const char *key, const char *what)
{
    int line = line_of(&y->ev);
    if (y->ev.type != YAML_SCALAR_EVENT)
        return fail(y, line, TIDE_EINVAL, "'%s' must be %s, got %s", key, what,
                    kind_name(y->ev.type));
    if (y->ev.data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return fail(y, line, TIDE_EINVAL, "'%s' must be %s, got the quoted string '%.40s'", key,
                    what, scalar(y));
    if (strlen(scalar(y)) != y->ev.data.scalar.length)
        return fail(y, line, TIDE_EINVAL, "'%s' must be %s", key, what);
    return 0;
}

/* A plain decimal number >= 0 (> 0 when positive), at most TIDE_CF_MAX_REAL. */
static int read_real(yp_t *y, const char *key, int positive, double *out)
{
    const char *what = positive ? "a number > 0" : "a number >= 0";
    if (want_plain(y, key, what) < 0)
        return -1;
    double v;
    if (tide_parse_decimal(scalar(y), &v) < 0)
        return fail(y, line_of(&y->ev), TIDE_EINVAL, "'%s' must be %s, got '%.40s'", key, what,
                    scalar(y));
    if (positive ? !(v > 0) : v < 0)
        return fail(y, line_of(&y->ev), TIDE_EINVAL, "'%s' must be %s, got %.40s", key, what,
                    scalar(y));
    if (v > TIDE_CF_MAX_REAL)
        return fail(y, line_of(&y->ev), TIDE_EINVAL, "'%s' must be at most %g, got %.40s", key,
                    TIDE_CF_MAX_REAL, scalar(y));
    *out = v;
    return 0;
}

/* A GPU count >= 0, or `unlimited` (-1) when allow_unlimited. */
static int read_count(yp_t *y, const char *key, int allow_unlimited, int *out)
{
    const char *what = allow_unlimited ? "a GPU count >= 0 or 'unlimited'" : "a GPU count >= 0";
    if (want_plain(y, key, what) < 0)
        return -1;
    if (allow_unlimited && !strcmp(scalar(y), "unlimited")) {
        *out = -1;
        return 0;
    }
    long long v;
    if (tide_parse_int(scalar(y), &v) < 0)
        return fail(y, line_of(&y->ev), TIDE_EINVAL, "'%s' must be %s, got '%.40s'", key, what,
                    scalar(y));
    if (v < 0 || v > (long long)TIDE_MAX_NODES * TIDE_MAX_GPUS_PER_NODE)
        return fail(y, line_of(&y->ev), TIDE_EINVAL, "'%s' must be %s, got %lld", key, what, v);
    *out = (int)v;
    return 0;
}

/* A name-like scalar (team name, GPU type): non-empty, no control characters,
 * at most max bytes. */
static int read_name(yp_t *y, const char *key, size_t max, char *out)
{
    int line = line_of(&y->ev);
    if (y->ev.type != YAML_SCALAR_EVENT)
        return fail(y, line, TIDE_EINVAL, "'%s' must be a name, got %s", key,
                    kind_name(y->ev.type));
    size_t n = y->ev.data.scalar.length;
    if (n == 0)
        return fail(y, line, TIDE_EINVAL, "'%s' is empty", key);
    if (n > max || strlen(scalar(y)) != n)
        return fail(y, line, TIDE_EINVAL, "'%s' is longer than %zu characters", key, max);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)scalar(y)[i] < 0x20 || scalar(y)[i] == 0x7f)
            return fail(y, line, TIDE_EINVAL, "'%s' has a control character", key);
    memcpy(out, scalar(y), n + 1);
    return 0;
}

/* quota: a number, or a mapping {TYPE: number, ...} (current event). */
static int read_quota(yp_t *y, rawteam_t *t)
{
    if (y->ev.type == YAML_SCALAR_EVENT) {
        t->scalar_line = line_of(&y->ev);
        return read_count(y, "quota", 0, &t->scalar_quota);
    }
    if (y->ev.type != YAML_MAPPING_START_EVENT)
        return fail(y, line_of(&y->ev), TIDE_EINVAL,
                    "'quota' must be a GPU count or a map of GPU type to count, got %s",
                    kind_name(y->ev.type));
    for (;;) {
        if (next(y) < 0)
            return -1;
        if (y->ev.type == YAML_MAPPING_END_EVENT)
            break;
        rawq_t q;
        memset(&q, 0, sizeof q);
        q.line = line_of(&y->ev);
        if (read_name(y, "quota", TIDE_MAX_TYPE_NAME, q.type) < 0)
            return -1;
        for (size_t i = 0; i < t->nq; i++)
            if (!strcmp(t->q[i].type, q.type))
                return fail(y, q.line, TIDE_EINVAL, "quota for GPU type '%s' given twice",
                            q.type);
        if (next(y) < 0 || read_count(y, "quota", 0, &q.value) < 0)
            return -1;
        t->q = tide_xrealloc(t->q, (t->nq + 1) * sizeof *t->q);
        t->q[t->nq++] = q;
    }
    return 0;
}

/* One team mapping (current event: MAPPING_START). */
static int read_team(yp_t *y, gov_raw_t *r, int ti)
{
    rawteam_t t;
    memset(&t, 0, sizeof t);
    tide_team_spec_default(&t.spec);
    t.line = line_of(&y->ev);
    t.scalar_quota = -1;
    char name[256] = "";
    enum { K_NAME, K_WEIGHT, K_QUOTA, K_BORROW, K_LEND, K_N };
    static const char *const keys[K_N] = {"name", "weight", "quota", "borrow_limit", "lend_cap"};
    int seen[K_N] = {0}, rc = 0;
    while (rc == 0) {
        if ((rc = next(y)) < 0)
            break;
        if (y->ev.type == YAML_MAPPING_END_EVENT)
            break;
        char key[64];
        int kline = line_of(&y->ev);
        if ((rc = read_key(y, key, sizeof key)) < 0)
            break;
        int k = 0;
        while (k < K_N && strcmp(keys[k], key) != 0)
            k++;
        if (k == K_N) {
            rc = fail(y, kline, TIDE_EINVAL,
                      "team %d: unknown key '%s' (expected name, weight, quota, borrow_limit, "
                      "lend_cap)",
                      ti, key);
            break;
        }
        if (seen[k]) {
            rc = fail(y, kline, TIDE_EINVAL, "team %d: '%s' given twice", ti, key);
            break;
        }
        seen[k] = 1;
        if ((rc = next(y)) < 0)
            break;
        switch (k) {
        case K_NAME: rc = read_name(y, "name", sizeof name - 1, name); break;
        case K_WEIGHT: rc = read_real(y, "weight", 1, &t.spec.weight); break;
        case K_QUOTA: rc = read_quota(y, &t); break;
        case K_BORROW: rc = read_count(y, "borrow_limit", 1, &t.spec.borrow_limit); break;
        case K_LEND: rc = read_count(y, "lend_cap", 1, &t.spec.lend_cap); break;
        }
    }
    if (rc == 0 && !seen[K_NAME])
        rc = fail(y, t.line, TIDE_EINVAL, "team %d: missing 'name'", ti);
    for (size_t i = 0; rc == 0 && i < r->n_teams; i++)
        if (!strcmp(r->teams[i].spec.name, name))
            rc = fail(y, t.line, TIDE_EINVAL, "team '%s' is defined twice (first on line %d)",
                      name, r->teams[i].line);
    if (rc == 0 && r->n_teams >= TIDE_GOV_MAX_TEAMS)
        rc = fail(y, t.line, TIDE_ERANGE, "too many teams (at most %d)", TIDE_GOV_MAX_TEAMS);
    if (rc < 0) {
        free(t.q);
        return -1;
    }
    t.spec.name = tide_xstrdup(name);
    r->teams = tide_xrealloc(r->teams, (r->n_teams + 1) * sizeof *r->teams);
    r->teams[r->n_teams++] = t;
    return 0;
}

static int read_teams(yp_t *y, gov_raw_t *r)
{
    if (y->ev.type != YAML_SEQUENCE_START_EVENT)
        return fail(y, line_of(&y->ev), TIDE_EINVAL, "'teams' must be a list of teams, got %s",
                    kind_name(y->ev.type));
    for (int ti = 1;; ti++) {
        if (next(y) < 0)
            return -1;
        if (y->ev.type == YAML_SEQUENCE_END_EVENT)
            break;
        if (y->ev.type != YAML_MAPPING_START_EVENT)
            return fail(y, line_of(&y->ev), TIDE_EINVAL,
                        "team %d must be a mapping (name: ..., weight: ...), got %s", ti,
                        kind_name(y->ev.type));
        if (read_team(y, r, ti) < 0)
            return -1;
    }
    return 0;
}

/* prices: {TYPE|default: {category: $/GPU-hour, ...}, ...} */
static int read_prices(yp_t *y, gov_raw_t *r)
{
    if (y->ev.type != YAML_MAPPING_START_EVENT)
        return fail(y, line_of(&y->ev), TIDE_EINVAL,
                    "'prices' must be a map of GPU type (or 'default') to prices, got %s",
                    kind_name(y->ev.type));
    for (;;) {
        if (next(y) < 0)
            return -1;
        if (y->ev.type == YAML_MAPPING_END_EVENT)
            break;
        rawprice_t p;
        memset(&p, 0, sizeof p);
        p.line = line_of(&y->ev);
        if (read_name(y, "prices", TIDE_MAX_TYPE_NAME, p.type) < 0)
            return -1;
        for (size_t i = 0; i < r->n_prices; i++)
            if (!strcmp(r->prices[i].type, p.type))
                return fail(y, p.line, TIDE_EINVAL, "prices for '%s' given twice", p.type);
        if (next(y) < 0)
            return -1;
        if (y->ev.type != YAML_MAPPING_START_EVENT)
            return fail(y, line_of(&y->ev), TIDE_EINVAL,
                        "prices for '%s' must be a map like {serving: 2.5, training: 2.0}, got %s",
                        p.type, kind_name(y->ev.type));
        for (;;) {
            if (next(y) < 0)
                return -1;
            if (y->ev.type == YAML_MAPPING_END_EVENT)
                break;
            char key[64];
            int kline = line_of(&y->ev);
            if (read_key(y, key, sizeof key) < 0)
                return -1;
            int cat = tide_cost_find(key);
            if (cat < 0)
                return fail(y, kline, TIDE_EINVAL,
                            "prices for '%s': unknown category '%s' (expected reserved, serving, "
                            "training, lent, lost, idle)",
                            p.type, key);
            if (p.given[cat])
                return fail(y, kline, TIDE_EINVAL, "prices for '%s': '%s' given twice", p.type,
                            key);
            char what[TIDE_MAX_TYPE_NAME + 80];
            snprintf(what, sizeof what, "prices.%s.%s", p.type, key);
            if (next(y) < 0 || read_real(y, what, 0, &p.v[cat]) < 0)
                return -1;
            p.given[cat] = 1;
        }
        r->prices = tide_xrealloc(r->prices, (r->n_prices + 1) * sizeof *r->prices);
        r->prices[r->n_prices++] = p;
    }
    return 0;
}

static int read_bool(yp_t *y, const char *key, int *out)
{
    if (want_plain(y, key, "true or false") < 0)
        return -1;
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "on"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "off"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (!strcmp(scalar(y), yes[i])) {
            *out = 1;
            return 0;
        }
        if (!strcmp(scalar(y), no[i])) {
            *out = 0;
            return 0;
        }
    }
    return fail(y, line_of(&y->ev), TIDE_EINVAL, "'%s' must be true or false, got '%.40s'", key,
                scalar(y));
}

/* fairshare: {enabled: true, half_life: 24h} */
static int read_fairshare(yp_t *y, gov_raw_t *r)
{
    if (y->ev.type != YAML_MAPPING_START_EVENT)
        return fail(y, line_of(&y->ev), TIDE_EINVAL,
                    "'fairshare' must be a map {enabled: true, half_life: 24h}, got %s",
                    kind_name(y->ev.type));
    int seen_en = 0, seen_hl = 0;
    for (;;) {
        if (next(y) < 0)
            return -1;
        if (y->ev.type == YAML_MAPPING_END_EVENT)
            break;
        char key[64];
        int kline = line_of(&y->ev);
        if (read_key(y, key, sizeof key) < 0)
            return -1;
        int *seen = !strcmp(key, "enabled") ? &seen_en : !strcmp(key, "half_life") ? &seen_hl
                                                                                  : NULL;
        if (!seen)
            return fail(y, kline, TIDE_EINVAL,
                        "fairshare: unknown key '%s' (expected enabled, half_life)", key);
        if (*seen)
            return fail(y, kline, TIDE_EINVAL, "fairshare: '%s' given twice", key);
        *seen = 1;
        if (next(y) < 0)
            return -1;
        if (seen == &seen_en) {
            if (read_bool(y, "enabled", &r->fairshare) < 0)
                return -1;
            continue;
        }
        int64_t d;
        if (want_plain(y, "half_life", "a duration like 24h") < 0)
            return -1;
        if (tide_parse_duration(scalar(y), &d) < 0 || d <= 0)
            return fail(y, line_of(&y->ev), TIDE_EINVAL,
                        "'half_life' must be a positive duration (90s, 15m, 36h, 14d), got '%.40s'",
                        scalar(y));
        r->half_life = d;
    }
    if (seen_hl && !seen_en)
        r->fairshare = 1; /* a half-life means fair share is wanted */
    return 0;
}

/* qos: {normal: 2, urgent: 1, scavenger: 3}: Slurm QOS names to priorities
 * (what `tide sbatch --qos` maps through). */
static int read_qos(yp_t *y, gov_raw_t *r)
{
    if (y->ev.type != YAML_MAPPING_START_EVENT)
        return fail(y, line_of(&y->ev), TIDE_EINVAL,
                    "'qos' must be a map of QOS names to priorities {normal: 2, urgent: 1}, got %s",
                    kind_name(y->ev.type));
    for (;;) {
        if (next(y) < 0)
            return -1;
        if (y->ev.type == YAML_MAPPING_END_EVENT)
            return 0;
        char key[64];
        int kline = line_of(&y->ev);
        if (read_key(y, key, sizeof key) < 0)
            return -1;
        for (int i = 0; i < r->n_qos; i++)
            if (!strcmp(r->qos_names[i], key))
                return fail(y, kline, TIDE_EINVAL, "qos: '%s' given twice", key);
        if (r->n_qos >= TIDE_GOV_MAX_QOS)
            return fail(y, kline, TIDE_ERANGE, "qos: more than %d names", TIDE_GOV_MAX_QOS);
        if (next(y) < 0 || want_plain(y, key, "a priority 1..3") < 0)
            return -1;
        const char *v = scalar(y);
        long long p;
        if (v[0] == 'P' || v[0] == 'p')
            v++;
        if (tide_parse_int(v, &p) < 0 || p < 1 || p > 3)
            return fail(y, line_of(&y->ev), TIDE_EINVAL,
                        "qos: '%s' must map to a priority 1..3 (or P1..P3), got '%.40s'", key,
                        scalar(y));
        snprintf(r->qos_names[r->n_qos], sizeof r->qos_names[0], "%s", key);
        r->qos_prio[r->n_qos++] = (int)p;
    }
}

/* Watts: a plain decimal number in 0..1e9. */
/* The current event is a plain number in 0..1e9 of `unit` (watts, GB/s). */
static int read_quantity(yp_t *y, const char *key, const char *unit, double *out)
{
    char what[32];
    snprintf(what, sizeof what, "a number of %s", unit);
    if (want_plain(y, key, what) < 0)
        return -1;
    double v;
    if (tide_parse_decimal(scalar(y), &v) < 0 || !(v >= 0) || v > 1e9)
        return fail(y, line_of(&y->ev), TIDE_EINVAL, "'%s' must be %s in 0..1e9, got '%.40s'",
                    key, unit, scalar(y));
    *out = v;
    return 0;
}

static int read_watts(yp_t *y, const char *key, double *out)
{
    return read_quantity(y, key, "watts", out);
}

/* curve: {CAP_FRACTION: SPEED, ...} (current event), highest fraction first. */
static int read_curve(yp_t *y, tide_power_model_t *m)
{
    if (y->ev.type != YAML_MAPPING_START_EVENT)
        return fail(y, line_of(&y->ev), TIDE_EINVAL,
                    "'curve' must be a map of cap fraction to speed {1.0: 1.0, 0.8: 0.95}, got %s",
                    kind_name(y->ev.type));
    m->n_curve = 0;
    for (;;) {
        if (next(y) < 0)
            return -1;
        if (y->ev.type == YAML_MAPPING_END_EVENT)
            break;
        if (m->n_curve >= TIDE_POWER_CURVE_MAX)
            return fail(y, line_of(&y->ev), TIDE_EINVAL, "'curve' has more than %d points",
                        TIDE_POWER_CURVE_MAX);
        double f, s;
        if (want_plain(y, "curve", "a cap fraction") < 0)
            return -1;
        if (tide_parse_decimal(scalar(y), &f) < 0)
            return fail(y, line_of(&y->ev), TIDE_EINVAL, "'curve': '%.40s' is not a number",
                        scalar(y));
        if (next(y) < 0 || want_plain(y, "curve", "a speed") < 0)
            return -1;
        if (tide_parse_decimal(scalar(y), &s) < 0)
            return fail(y, line_of(&y->ev), TIDE_EINVAL, "'curve': '%.40s' is not a number",
                        scalar(y));
        m->curve_frac[m->n_curve] = f;
        m->curve_speed[m->n_curve++] = s;
    }
    return 0;
}

/* One GPU type's power model {tdp: 700, idle: 90, ...} (current event). */
static int read_power_model(yp_t *y, rawpower_t *p)
{
    static const char *const keys[] = {"tdp",      "idle",       "serving_idle", "serving_full",
                                       "training", "checkpoint", "min_cap",      "curve"};
    double *dst[] = {&p->m.tdp_w,   &p->m.idle_w, &p->m.serve_idle_w, &p->m.serve_full_w,
                     &p->m.train_w, &p->m.ckpt_w, &p->m.min_cap_w,    NULL};
    enum { NK = sizeof keys / sizeof keys[0] };
    int seen[NK] = {0};
    if (y->ev.type != YAML_MAPPING_START_EVENT)
        return fail(y, line_of(&y->ev), TIDE_EINVAL,
                    "power model of '%s' must be a map like {tdp: 700, training: 650}, got %s",
                    p->type, kind_name(y->ev.type));
    char who[TIDE_MAX_TYPE_NAME + 40];
    snprintf(who, sizeof who, "power model of '%s'", p->type);
    for (;;) {
        int k, end = map_key(y, keys, NK, seen, who,
                             "tdp, idle, serving_idle, serving_full, training, checkpoint, "
                             "min_cap, curve",
                             &k);
        if (end)
            return end < 0 ? -1 : 0;
        if ((dst[k] ? read_watts(y, keys[k], dst[k]) : read_curve(y, &p->m)) < 0)
            return -1;
    }
}

/* power: {TYPE: model, ...}: keys a model leaves out keep the defaults. */
static int read_power(yp_t *y, gov_raw_t *r)
{
    if (y->ev.type != YAML_MAPPING_START_EVENT)
        return fail(y, line_of(&y->ev), TIDE_EINVAL,
                    "'power' must be a map of GPU type to power model, got %s",
                    kind_name(y->ev.type));
    for (;;) {
        if (next(y) < 0)
            return -1;
        if (y->ev.type == YAML_MAPPING_END_EVENT)
            return 0;
        rawpower_t p;
        memset(&p, 0, sizeof p);
        p.line = line_of(&y->ev);
        tide_power_model_default(&p.m);
        if (read_name(y, "power", TIDE_MAX_TYPE_NAME, p.type) < 0)
            return -1;
        for (size_t i = 0; i < r->n_power; i++)
            if (!strcmp(r->power[i].type, p.type))
                return fail(y, p.line, TIDE_EINVAL, "power model of '%s' given twice", p.type);
        if (next(y) < 0 || read_power_model(y, &p) < 0)
            return -1;
        r->power = tide_xrealloc(r->power, (r->n_power + 1) * sizeof *r->power);
        r->power[r->n_power++] = p;
    }
}

/* Set the power models on the cluster (types resolved now). */
static int resolve_power(yp_t *y, const gov_raw_t *r, tide_cluster_t *c)
{
    for (size_t i = 0; i < r->n_power; i++) {
        int k = tide_cluster_type_find(c, r->power[i].type);
        if (k < 0)
            return fail(y, r->power[i].line, TIDE_EINVAL,
                        "power model for unknown GPU type '%s'", r->power[i].type);
        if (tide_cluster_set_power_model(c, k, &r->power[i].m, y->err) < 0)
            return tide_err_prefix(y->err, "%s:%d: ", y->name, r->power[i].line);
    }
    return 0;
}

/* Resolve GPU type names of the raw section against cluster c into g
 * (initialised here). Errors name the line. */
static int resolve_gov(yp_t *y, const gov_raw_t *r, const tide_cluster_t *c,
                       tide_governance_t *g)
{
    tide_governance_init(g, c);
    int nt = g->n_types;
    char have[256] = "";
    for (int k = 0; k < nt; k++) {
        if (k)
            strncat(have, ", ", sizeof have - strlen(have) - 1);
        strncat(have, g->type_names[k], sizeof have - strlen(have) - 1);
    }
    long sum[TIDE_MAX_GPU_TYPES] = {0};
    for (size_t i = 0; i < r->n_teams; i++) {
        const rawteam_t *t = &r->teams[i];
        tide_team_spec_t spec = t->spec;
        for (int k = 0; k < TIDE_MAX_GPU_TYPES; k++)
            spec.quota[k] = -1;
        if (t->scalar_quota >= 0) {
            if (nt != 1)
                return fail(y, t->scalar_line, TIDE_EINVAL,
                            "team '%s': 'quota' is one number but the cluster has %d GPU types "
                            "(%s): give a map like {%s: %d}",
                            spec.name, nt, have, g->type_names[0], t->scalar_quota);
            spec.quota[0] = t->scalar_quota;
        }
        for (size_t j = 0; j < t->nq; j++) {
            int k = tide_cluster_type_find(c, t->q[j].type);
            if (k < 0)
                return fail(y, t->q[j].line, TIDE_EINVAL,
                            "team '%s': quota for unknown GPU type '%s' (the cluster has: %s)",
                            spec.name, t->q[j].type, have);
            spec.quota[k] = t->q[j].value;
        }
        for (int k = 0; k < nt; k++) {
            if (spec.quota[k] <= 0)
                continue;
            sum[k] += spec.quota[k];
            int gpus = 0;
            for (int n = 0; n < tide_cluster_nodes(c); n++) {
                tide_node_info_t ni;
                if (tide_cluster_node(c, n, &ni) == 0 && ni.type == k)
                    gpus += ni.gpus;
            }
            if (sum[k] > gpus)
                return fail(y, t->line, TIDE_EINVAL,
                            "team '%s': quotas of %s add up to %ld GPUs but the cluster has %d",
                            spec.name, g->type_names[k], sum[k], gpus);
        }
        if (tide_governance_add_team(g, &spec, t->line, y->err) < 0)
            return tide_err_prefix(y->err, "%s:%d: ", y->name, t->line);
    }
    int dflt = -1;
    for (size_t i = 0; i < r->n_prices; i++) {
        if (!strcmp(r->prices[i].type, "default")) {
            dflt = (int)i;
            continue;
        }
        if (tide_cluster_type_find(c, r->prices[i].type) < 0)
            return fail(y, r->prices[i].line, TIDE_EINVAL,
                        "prices for unknown GPU type '%s' (the cluster has: %s; or use "
                        "'default')",
                        r->prices[i].type, have);
    }
    g->has_prices = r->have_prices;
    for (int k = 0; k < nt; k++)
        for (int cat = 0; cat < TIDE_COST_COUNT; cat++) {
            double v = 0;
            if (dflt >= 0 && r->prices[dflt].given[cat])
                v = r->prices[dflt].v[cat];
            for (size_t i = 0; i < r->n_prices; i++)
                if ((int)i != dflt && r->prices[i].given[cat] &&
                    tide_cluster_type_find(c, r->prices[i].type) == k)
                    v = r->prices[i].v[cat];
            g->price[k][cat] = v;
        }
    g->fairshare = r->fairshare;
    g->fairshare_half_life_s = r->half_life;
    g->n_qos = r->n_qos;
    memcpy(g->qos_names, r->qos_names, sizeof g->qos_names);
    memcpy(g->qos_prio, r->qos_prio, sizeof g->qos_prio);
    return 0;
}

static int read_doc(yp_t *y, tide_cluster_t *c, gov_raw_t *r)
{
    if (next(y) < 0)
        return -1;
    if (y->ev.type != YAML_STREAM_START_EVENT)
        return fail(y, line_of(&y->ev), TIDE_EINVAL, "YAML: expected the start of a stream");
    if (next(y) < 0)
        return -1;
    if (y->ev.type != YAML_DOCUMENT_START_EVENT)
        return fail(y, line_of(&y->ev), TIDE_EINVAL, "empty file: expected 'groups:'");
    if (next(y) < 0)
        return -1;
    if (y->ev.type != YAML_MAPPING_START_EVENT) {
        if (y->ev.type == YAML_SCALAR_EVENT && y->ev.data.scalar.length == 0)
            return fail(y, line_of(&y->ev), TIDE_EINVAL, "empty document: expected 'groups:'");
        return fail(y, line_of(&y->ev), TIDE_EINVAL,
                    "the top level must be a mapping with 'groups:', got %s",
                    kind_name(y->ev.type));
    }
    int have_groups = 0, mline = line_of(&y->ev);
    for (;;) {
        if (next(y) < 0)
            return -1;
        if (y->ev.type == YAML_MAPPING_END_EVENT)
            break;
        char key[64];
        int kline = line_of(&y->ev);
        if (read_key(y, key, sizeof key) < 0)
            return -1;
        int *seen = !strcmp(key, "groups")      ? &have_groups
                    : !strcmp(key, "teams")     ? &r->have_teams
                    : !strcmp(key, "prices")    ? &r->have_prices
                    : !strcmp(key, "fairshare") ? &r->have_fairshare
                    : !strcmp(key, "qos")       ? &r->have_qos
                    : !strcmp(key, "power")     ? &r->have_power
                                                : NULL;
        if (!seen)
            return fail(y, kline, TIDE_EINVAL,
                        "unknown key '%s' (expected 'groups', 'teams', 'prices', 'fairshare', "
                        "'qos' or 'power')",
                        key);
        if (*seen)
            return fail(y, kline, TIDE_EINVAL, "'%s' given twice", key);
        *seen = 1;
        if (next(y) < 0)
            return -1;
        int rc = seen == &have_groups    ? read_groups(y, c)
                 : seen == &r->have_teams  ? read_teams(y, r)
                 : seen == &r->have_prices ? read_prices(y, r)
                 : seen == &r->have_qos    ? read_qos(y, r)
                 : seen == &r->have_power  ? read_power(y, r)
                                           : read_fairshare(y, r);
        if (rc < 0)
            return -1;
    }
    if (!have_groups)
        return fail(y, mline, TIDE_EINVAL, "missing 'groups'");
    if (next(y) < 0) /* document end */
        return -1;
    if (next(y) < 0)
        return -1;
    if (y->ev.type == YAML_DOCUMENT_START_EVENT)
        return fail(y, line_of(&y->ev), TIDE_EINVAL,
                    "more than one YAML document (only one is expected)");
    return 0;
}

/* Parse the document; with gov, also return the governance section
 * (resolved against the cluster; validated even when gov is NULL). */
static tide_cluster_t *load(yp_t *y, tide_governance_t *gov)
{
    tide_cluster_t *c = tide_cluster_create();
    gov_raw_t raw;
    memset(&raw, 0, sizeof raw);
    raw.fairshare = -1;
    int rc = read_doc(y, c, &raw);
    if (y->have)
        yaml_event_delete(&y->ev);
    yaml_parser_delete(&y->p);
    tide_governance_t g;
    tide_governance_init(&g, NULL);
    if (rc == 0)
        rc = resolve_power(y, &raw, c);
    if (rc == 0)
        rc = resolve_gov(y, &raw, c, &g);
    gov_raw_free(&raw);
    if (rc < 0) {
        tide_governance_free(&g);
        tide_cluster_destroy(c);
        return NULL;
    }
    if (gov)
        *gov = g;
    else
        tide_governance_free(&g);
    return c;
}

tide_cluster_t *tide_cluster_file_load_mem(const char *buf, size_t len, const char *name,
                                           tide_error_t *err)
{
    return tide_cluster_file_load_mem_ex(buf, len, name, NULL, err);
}

tide_cluster_t *tide_cluster_file_load_mem_ex(const char *buf, size_t len, const char *name,
                                              tide_governance_t *gov, tide_error_t *err)
{
    yp_t y;
    memset(&y, 0, sizeof y);
    y.name = name ? name : "<memory>";
    y.err = err;
    if (!yaml_parser_initialize(&y.p)) {
        tide_errf(err, TIDE_ENOMEM, "%s: cannot initialise the YAML parser", y.name);
        return NULL;
    }
    yaml_parser_set_input_string(&y.p, (const unsigned char *)(buf ? buf : ""), buf ? len : 0);
    return load(&y, gov);
}

tide_cluster_t *tide_cluster_file_load(const char *path, tide_error_t *err)
{
    return tide_cluster_file_load_ex(path, NULL, err);
}

tide_cluster_t *tide_cluster_file_load_ex(const char *path, tide_governance_t *gov,
                                          tide_error_t *err)
{
    if (!path) {
        tide_errf(err, TIDE_EINVAL, "no cluster file name given");
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        tide_errf(err, e == ENOENT ? TIDE_ENOENT : TIDE_EIO, "%s: cannot open: %s", path,
                  strerror(e));
        return NULL;
    }
    yp_t y;
    memset(&y, 0, sizeof y);
    y.name = path;
    y.err = err;
    if (!yaml_parser_initialize(&y.p)) {
        fclose(f);
        tide_errf(err, TIDE_ENOMEM, "%s: cannot initialise the YAML parser", path);
        return NULL;
    }
    yaml_parser_set_input_file(&y.p, f);
    errno = 0;
    tide_cluster_t *c = load(&y, gov);
    if (!c && ferror(f))
        tide_errf(err, TIDE_EIO, "%s: read error: %s", path, strerror(errno ? errno : EIO));
    fclose(f);
    return c;
}

static int ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcasecmp(s + n - m, suf) == 0;
}

tide_cluster_t *tide_cluster_file_from_arg(const char *arg, tide_error_t *err)
{
    return tide_cluster_file_from_arg_ex(arg, NULL, err);
}

tide_cluster_t *tide_cluster_file_from_arg_ex(const char *arg, tide_governance_t *gov,
                                              tide_error_t *err)
{
    if (!arg) {
        tide_errf(err, TIDE_EINVAL, "no cluster given");
        return NULL;
    }
    if (ends_with(arg, ".yaml") || ends_with(arg, ".yml"))
        return tide_cluster_file_load_ex(arg, gov, err);
    tide_cluster_t *c = tide_cluster_parse(arg, err);
    if (c && gov)
        tide_governance_init(gov, c);
    return c;
}
