/* The Teams part of the HTML report (report_priv.h): usage.csv reduced per
 * policy to per-team chargeback figures (GPU-hours and cost by state and
 * class, tier C, lost work apart), per-service replica-hours and cost, the
 * platform's idle GPU-hours, and, for the largest teams, GPU series bucketed
 * on the timeline's intervals; usage_teams.csv adds quota, weight and
 * GPU-hours above quota, usage_services.csv the replica sizes. */
#include "report/report_priv.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/csv.h"
#include "formats/json.h"
#include "formats/governance.h"
#include "report/report.h"
#include "report/rows.h"
#include "formats/usage.h"
#include "tide/engine.h"
#include "util/util.h"

#define PATH_N 4096
#define MAX_POLICIES 64

/* Series of a team, per bucket: GPU-seconds by class (P1..P3), by state
 * (training includes the work later lost: training + lost is what the jobs
 * held in the interval), the lost work booked in the bucket, and the part on
 * lent GPUs (tier C). */
enum { SER_P1, SER_P2, SER_P3, SER_TRAIN, SER_CKPT, SER_RESTORE, SER_OTHER, SER_LOST, SER_TIER_C,
       SER_N };
static const char *const SER_NAMES[SER_N] = {"p1",        "p2",    "p3",     "training",
                                             "checkpointing", "restoring", "other", "lost_h",
                                             "tier_c"};

/* [GPU-hours, cost] */
static json_t *hc(double gpu_s, double cost)
{
    json_t *a = json_array();
    json_array_append_new(a, tide_json_num(gpu_s / 3600.0));
    json_array_append_new(a, tide_json_num(cost));
    return a;
}

/* ------------------------------------------------------------- owners */

typedef struct owner {
    char *name;
    double gpu_s, cost; /* every row */
    double st_s[TIDE_S_COUNT], st_c[TIDE_S_COUNT];
    double cl_s[TIDE_C_COUNT], cl_c[TIDE_C_COUNT];
    double tier_c_s;
    double *ser; /* nb x SER_N GPU-seconds (teams), NULL until a row comes */
    /* usage_teams.csv */
    int seen_state;
    double weight, above_s, last_t;
    long long quota, last_b;
    /* usage_services.csv */
    int gpr, min_rep, max_rep;
} owner_t;

/* Owners by name: open addressing over indexes (slot = index + 1). */
typedef struct omap {
    owner_t *v;
    size_t n, cap;
    size_t *slot, scap;
} omap_t;

static void omap_free(omap_t *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->v[i].name);
        free(m->v[i].ser);
    }
    free(m->v);
    free(m->slot);
    memset(m, 0, sizeof *m);
}

static size_t omap_pos(const omap_t *m, const char *name)
{
    size_t i = (size_t)tide_hash_str(name) & (m->scap - 1);
    while (m->slot[i] && strcmp(m->v[m->slot[i] - 1].name, name))
        i = (i + 1) & (m->scap - 1);
    return i;
}

static owner_t *omap_find(const omap_t *m, const char *name)
{
    if (!m->scap)
        return NULL;
    size_t i = omap_pos(m, name);
    return m->slot[i] ? &m->v[m->slot[i] - 1] : NULL;
}

static owner_t *omap_get(omap_t *m, const char *name)
{
    owner_t *o = omap_find(m, name);
    if (o)
        return o;
    if ((m->n + 1) * 2 > m->scap) {
        size_t nc = m->scap ? m->scap * 2 : 64;
        free(m->slot);
        m->slot = tide_xcalloc(nc, sizeof *m->slot);
        m->scap = nc;
        for (size_t k = 0; k < m->n; k++)
            m->slot[omap_pos(m, m->v[k].name)] = k + 1;
    }
    size_t i = omap_pos(m, name);
    tide_grow((void **)&m->v, &m->cap, m->n + 1, sizeof *m->v);
    o = &m->v[m->n];
    memset(o, 0, sizeof *o);
    o->name = tide_xstrdup(name);
    o->quota = -1;
    o->weight = NAN;
    o->last_t = -1;
    m->slot[i] = ++m->n;
    return o;
}

/* ----------------------------------------------------------- policies */

typedef struct upol {
    char *name;
    omap_t teams, svcs;
    double cat_s[TIDE_COST_COUNT], cat_c[TIDE_COST_COUNT];
    double kind_s[TIDE_OWNER_COUNT], kind_c[TIDE_OWNER_COUNT]; /* lost rows excluded */
    double lost_s, lost_c, total_s, total_c;
    long long rows;
    int have_states; /* usage_teams.csv had rows of this policy */
    int have_svc;    /* usage_services.csv had rows of this policy */
    /* buckets over the grid */
    const tide_report_grid_t *g;
    size_t k, nb, hint;
} upol_t;

typedef struct uset {
    upol_t pol[MAX_POLICIES];
    int n;
} uset_t;

static void uset_free(uset_t *u)
{
    for (int i = 0; i < u->n; i++) {
        free(u->pol[i].name);
        omap_free(&u->pol[i].teams);
        omap_free(&u->pol[i].svcs);
    }
    u->n = 0;
}

static upol_t *uset_find(uset_t *u, const char *name)
{
    for (int i = 0; i < u->n; i++)
        if (!strcmp(u->pol[i].name, name))
            return &u->pol[i];
    return NULL;
}

static upol_t *uset_get(uset_t *u, const char *name, const tide_report_grid_t *grid,
                        size_t ngrid)
{
    upol_t *p = uset_find(u, name);
    if (p || u->n == MAX_POLICIES)
        return p;
    p = &u->pol[u->n++];
    memset(p, 0, sizeof *p);
    p->name = tide_xstrdup(name);
    for (size_t i = 0; i < ngrid; i++)
        if (!strcmp(grid[i].policy, name) && grid[i].n > 0)
            p->g = &grid[i];
    if (p->g) {
        p->k = (p->g->n + TIDE_REPORT_MAX_TEAM_POINTS - 1) / TIDE_REPORT_MAX_TEAM_POINTS;
        if (p->k < 1)
            p->k = 1;
        p->nb = (p->g->n + p->k - 1) / p->k;
    }
    return p;
}

/* Bucket of time t on p's grid (the interval holding t; before the first one:
 * the first). */
static size_t bucket_of(upol_t *p, double t)
{
    const double *v = p->g->t;
    size_t n = p->g->n, i = p->hint < n ? p->hint : 0;
    if (!(v[i] <= t && (i + 1 == n || t < v[i + 1]))) {
        size_t lo = 0, hi = n; /* first index with v[idx] > t */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (v[mid] <= t)
                lo = mid + 1;
            else
                hi = mid;
        }
        i = lo ? lo - 1 : 0;
    }
    p->hint = i;
    return i / p->k;
}

static int name_index(const char *s, const char *(*fn)(int), int count)
{
    for (int i = 0; i < count; i++)
        if (!strcmp(fn(i), s))
            return i;
    return -1;
}

static void add_row(upol_t *p, const char *owner, int kind, int cls, int st, int tier, double t,
                    double gpu_s, double cost)
{
    p->rows++;
    p->total_s += gpu_s;
    p->total_c += cost;
    int cat = tide_cost_category(kind, st, tier);
    if (cat >= 0) {
        p->cat_s[cat] += gpu_s;
        p->cat_c[cat] += cost;
    }
    if (st == TIDE_S_LOST) {
        p->lost_s += gpu_s;
        p->lost_c += cost;
    } else {
        p->kind_s[kind] += gpu_s;
        p->kind_c[kind] += cost;
    }
    if (kind != TIDE_OWNER_TEAM && kind != TIDE_OWNER_SERVICE)
        return;
    owner_t *o = omap_get(kind == TIDE_OWNER_TEAM ? &p->teams : &p->svcs, owner);
    o->gpu_s += gpu_s;
    o->cost += cost;
    o->st_s[st] += gpu_s;
    o->st_c[st] += cost;
    o->cl_s[cls] += gpu_s;
    o->cl_c[cls] += cost;
    if (tier == TIDE_T_C)
        o->tier_c_s += gpu_s;
    if (kind != TIDE_OWNER_TEAM || !p->g)
        return;
    if (!o->ser)
        o->ser = tide_xcalloc(p->nb * SER_N, sizeof *o->ser);
    double *b = o->ser + bucket_of(p, t) * SER_N;
    if (cls >= TIDE_C_P1 && cls <= TIDE_C_P3)
        b[SER_P1 + cls - TIDE_C_P1] += gpu_s;
    b[st == TIDE_S_TRAINING || st == TIDE_S_LOST ? SER_TRAIN
      : st == TIDE_S_CHECKPOINTING               ? SER_CKPT
      : st == TIDE_S_RESTORING                   ? SER_RESTORE
                                                 : SER_OTHER] += gpu_s;
    if (st == TIDE_S_LOST)
        b[SER_LOST] += gpu_s;
    if (tier == TIDE_T_C)
        b[SER_TIER_C] += gpu_s;
}

/* usage.csv. Returns 0, or -1 with err (ENOENT when it is missing). */
static int read_usage(const char *path, uset_t *u, const tide_report_grid_t *grid, size_t ngrid,
                      tide_error_t *err)
{
    tide_csv_t *c = tide_csv_open_file(path, err);
    if (!c)
        return -1;
    static const char *const cols[] = {"policy", "time_s", "owner", "kind",  "class",
                                       "state",  "tier",   "gpu_s", "cost"};
    enum { C_POLICY, C_TIME, C_OWNER, C_KIND, C_CLASS, C_STATE, C_TIER, C_GPU_S, C_COST, C_N };
    int col[C_N];
    for (int i = 0; i < C_N; i++) {
        col[i] = tide_csv_col(c, cols[i]);
        if (col[i] < 0 && i != C_COST) {
            tide_errf(err, TIDE_EINVAL, "%s:1: missing column '%s'", path, cols[i]);
            tide_csv_close(c);
            return -1;
        }
    }
    int r, rc = 0;
    upol_t *p = NULL;
    while ((r = tide_csv_next(c, err)) != 0) {
        if (r < 0) {
            rc = -1;
            break;
        }
        const char *pol = tide_csv_field(c, col[C_POLICY]);
        if (!p || strcmp(p->name, pol)) {
            p = uset_get(u, pol, grid, ngrid);
            if (!p) {
                rc = tide_csv_fail(c, err, col[C_POLICY], TIDE_EINVAL, "more than %d policies",
                                   MAX_POLICIES);
                break;
            }
        }
        double t, gpu_s, cost = 0;
        int kind = tide_owner_kind_find(tide_csv_field(c, col[C_KIND]));
        int cls = name_index(tide_csv_field(c, col[C_CLASS]), tide_class_name, TIDE_C_COUNT);
        int st = name_index(tide_csv_field(c, col[C_STATE]), tide_state_name, TIDE_S_COUNT);
        int tier = name_index(tide_csv_field(c, col[C_TIER]), tide_tier_name, TIDE_T_COUNT);
        int bad = kind < 0 ? C_KIND : cls < 0 ? C_CLASS : st < 0 ? C_STATE : tier < 0 ? C_TIER : -1;
        if (bad >= 0) {
            rc = tide_csv_fail(c, err, col[bad], TIDE_EINVAL, "unknown %s '%s'", cols[bad],
                               tide_csv_field(c, col[bad]));
            break;
        }
        if (tide_parse_double(tide_csv_field(c, col[C_TIME]), &t) < 0 || !isfinite(t)) {
            rc = tide_csv_fail(c, err, col[C_TIME], TIDE_EINVAL, "not a time: '%s'",
                               tide_csv_field(c, col[C_TIME]));
            break;
        }
        if (tide_parse_double(tide_csv_field(c, col[C_GPU_S]), &gpu_s) < 0 || !isfinite(gpu_s)) {
            rc = tide_csv_fail(c, err, col[C_GPU_S], TIDE_EINVAL, "not a number: '%s'",
                               tide_csv_field(c, col[C_GPU_S]));
            break;
        }
        const char *cs = col[C_COST] >= 0 ? tide_csv_field(c, col[C_COST]) : "";
        if (*cs && (tide_parse_double(cs, &cost) < 0 || !isfinite(cost))) {
            rc = tide_csv_fail(c, err, col[C_COST], TIDE_EINVAL, "not a number: '%s'", cs);
            break;
        }
        add_row(p, tide_csv_field(c, col[C_OWNER]), kind, cls, st, tier, t, gpu_s, cost);
    }
    tide_csv_close(c);
    return rc;
}

/* usage_teams.csv: each team's last weight and quota, and GPU-seconds above
 * quota (borrowed_gpus held from one sample to the next, as `tide usage
 * --report`). Optional: a missing or odd file only loses these figures. */
static void read_team_states(const char *path, uset_t *u)
{
    tide_csv_t *c = tide_csv_open_file(path, NULL);
    if (!c)
        return;
    int cp = tide_csv_col(c, "policy"), ct = tide_csv_col(c, "time_s"),
        cn = tide_csv_col(c, "team"), cw = tide_csv_col(c, "weight"),
        cq = tide_csv_col(c, "quota_gpus"), cb = tide_csv_col(c, "borrowed_gpus");
    upol_t *p = NULL;
    while (cp >= 0 && ct >= 0 && cn >= 0 && cb >= 0 && tide_report_rows_next(c, -1, NULL)) {
        const char *pol = tide_csv_field(c, cp);
        if (!p || strcmp(p->name, pol))
            p = uset_find(u, pol);
        if (!p)
            continue;
        double t, w = NAN;
        long long q = -1, b;
        if (tide_parse_double(tide_csv_field(c, ct), &t) < 0 ||
            tide_parse_int(tide_csv_field(c, cb), &b) < 0)
            continue;
        if (cw >= 0 && tide_parse_double(tide_csv_field(c, cw), &w) < 0)
            w = NAN;
        if (cq >= 0 && tide_parse_int(tide_csv_field(c, cq), &q) < 0)
            q = -1;
        owner_t *o = omap_get(&p->teams, tide_csv_field(c, cn));
        p->have_states = 1;
        o->seen_state = 1;
        o->weight = w;
        o->quota = q;
        if (o->last_t >= 0 && t > o->last_t)
            o->above_s += (double)o->last_b * (t - o->last_t);
        o->last_t = t;
        o->last_b = b;
    }
    tide_csv_close(c);
}

/* usage_services.csv: replica sizes and floors. Optional. */
static void read_services(const char *path, uset_t *u)
{
    tide_csv_t *c = tide_csv_open_file(path, NULL);
    if (!c)
        return;
    int cp = tide_csv_col(c, "policy"), cs = tide_csv_col(c, "service"),
        cg = tide_csv_col(c, "gpus_per_replica"), cmin = tide_csv_col(c, "min_replicas"),
        cmax = tide_csv_col(c, "max_replicas");
    while (cp >= 0 && cs >= 0 && cg >= 0 && tide_report_rows_next(c, -1, NULL)) {
        upol_t *p = uset_find(u, tide_csv_field(c, cp));
        long long g, mn = -1, mx = -1;
        if (!p || tide_parse_int(tide_csv_field(c, cg), &g) < 0 || g < 1 || g > 1 << 20)
            continue;
        if (cmin >= 0 && tide_parse_int(tide_csv_field(c, cmin), &mn) < 0)
            mn = -1;
        if (cmax >= 0 && tide_parse_int(tide_csv_field(c, cmax), &mx) < 0)
            mx = -1;
        owner_t *o = omap_get(&p->svcs, tide_csv_field(c, cs));
        p->have_svc = 1;
        o->gpr = (int)g;
        o->min_rep = mn >= 0 && mn < 1 << 30 ? (int)mn : -1;
        o->max_rep = mx >= 0 && mx < 1 << 30 ? (int)mx : -1;
    }
    tide_csv_close(c);
}

/* -------------------------------------------------------------- output */

static int cmp_owner(const void *a, const void *b)
{
    const owner_t *x = *(owner_t *const *)a, *y = *(owner_t *const *)b;
    if (x->gpu_s != y->gpu_s)
        return x->gpu_s > y->gpu_s ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Owners of m sorted by GPU-seconds (descending), then name. */
static owner_t **sorted(const omap_t *m)
{
    owner_t **v = tide_xmalloc((m->n ? m->n : 1) * sizeof *v);
    for (size_t i = 0; i < m->n; i++)
        v[i] = &m->v[i];
    qsort(v, m->n, sizeof *v, cmp_owner);
    return v;
}

/* The bucket grid: {t, step, raw_step, n_raw, factor} into o; dur[b] = the
 * length of bucket b. */
static void grid_json(json_t *o, const upol_t *p, double *dur)
{
    const tide_report_grid_t *g = p->g;
    json_t *ts = json_array();
    for (size_t b = 0; b < p->nb; b++) {
        size_t i0 = b * p->k, i1 = TIDE_MIN(i0 + p->k, g->n);
        double end = i1 < g->n ? g->t[i1] : g->end;
        dur[b] = end - g->t[i0];
        json_array_append_new(ts, tide_json_num(g->t[i0]));
    }
    double raw = g->n >= 2 ? g->t[1] - g->t[0] : g->end - g->t[0];
    tide_json_set(o, "t", ts);
    tide_json_set(o, "raw_step", tide_json_num(raw));
    tide_json_set(o, "step", tide_json_num(raw * (double)p->k));
    tide_json_set(o, "n_raw", json_integer((json_int_t)g->n));
    tide_json_set(o, "factor", json_integer((json_int_t)p->k));
}

/* v rounded to 1 decimal. */
/* A team's series: mean GPUs per bucket (GPU-hours per hour) to 0.1 GPU, lost
 * work in GPU-hours per bucket to 0.01; all-zero series are left out, and so
 * is `training`, which the page derives (classes minus the other states) to
 * keep the page small. */
static json_t *series_json(const upol_t *p, const owner_t *o, const double *dur)
{
    json_t *s = json_object();
    for (int k = 0; k < SER_N; k++) {
        int any = 0;
        for (size_t b = 0; b < p->nb && !any; b++) {
            double v = o->ser[b * SER_N + (size_t)k];
            any = k == SER_LOST ? fabs(v) >= 18 : dur[b] > 0 && fabs(v / dur[b]) >= 0.05;
        }
        if (!any || k == SER_TRAIN)
            continue;
        json_t *a = json_array();
        for (size_t b = 0; b < p->nb; b++) {
            double v = o->ser[b * SER_N + (size_t)k];
            json_array_append_new(a, k == SER_LOST ? tide_json_round(v / 3600.0, 2)
                                     : dur[b] > 0  ? tide_json_round(v / dur[b], 1)
                                                   : json_null());
        }
        tide_json_set(s, SER_NAMES[k], a);
    }
    return s;
}

/* summary.json's figures of team `name` under policy `pol`, or NULL. */
static json_t *summary_team(const json_t *summary, const char *pol, const char *name)
{
    return json_object_get(
        json_object_get(json_object_get(json_object_get(summary, "policies"), pol), "teams"),
        name);
}

static json_t *team_json(const upol_t *p, const owner_t *o, const json_t *summary,
                         double teams_s, int with_series, const double *dur)
{
    json_t *x = json_object();
    double lost_s = o->st_s[TIDE_S_LOST], lost_c = o->st_c[TIDE_S_LOST];
    tide_json_set(x, "name", json_string(o->name));
    tide_json_set(x, "gpu_hours", tide_json_num(o->gpu_s / 3600.0));
    tide_json_set(x, "share", tide_json_num(teams_s > 0 ? o->gpu_s / teams_s : 0));
    tide_json_set(x, "cost", tide_json_num(o->cost - lost_c)); /* lost work is the policy's */
    tide_json_set(x, "lost_gpu_hours", tide_json_num(lost_s / 3600.0));
    tide_json_set(x, "lost_cost", tide_json_num(lost_c));
    tide_json_set(x, "tier_c_gpu_hours", tide_json_num(o->tier_c_s / 3600.0));
    tide_json_set(x, "above_quota_gpu_hours",
                  p->have_states ? tide_json_num(o->above_s / 3600.0) : json_null());
    tide_json_set(x, "weight", o->seen_state ? tide_json_num(o->weight) : json_null());
    tide_json_set(x, "quota_gpus",
                  o->seen_state && o->quota >= 0 ? json_integer(o->quota) : json_null());
    json_t *bs = json_object();
    for (int s = 0; s < TIDE_S_COUNT; s++)
        if (o->st_s[s] != 0 || o->st_c[s] != 0)
            tide_json_set(bs, tide_state_name(s), hc(o->st_s[s], o->st_c[s]));
    tide_json_set(x, "by_state", bs);
    json_t *bc = json_object();
    for (int c = 0; c < TIDE_C_COUNT; c++)
        if (o->cl_s[c] != 0 || o->cl_c[c] != 0)
            tide_json_set(bc, tide_class_name(c), hc(o->cl_s[c], o->cl_c[c]));
    tide_json_set(x, "by_class", bc);
    json_t *st = summary_team(summary, p->name, o->name);
    static const char *const keys[] = {"preemptions", "gpu_hours_lost", "mean_queue_s", "jobs"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        json_t *v = json_object_get(st, keys[k]);
        tide_json_set(x, keys[k], json_is_number(v) ? json_incref(v) : json_null());
    }
    tide_json_set(x, "series", with_series && o->ser ? series_json(p, o, dur) : json_null());
    return x;
}

static json_t *service_json(const owner_t *o, double horizon)
{
    json_t *x = json_object();
    tide_json_set(x, "name", json_string(o->name));
    tide_json_set(x, "gpu_hours", tide_json_num(o->gpu_s / 3600.0));
    tide_json_set(x, "cost", tide_json_num(o->cost));
    tide_json_set(x, "serving_gpu_hours", tide_json_num(o->st_s[TIDE_S_SERVING] / 3600.0));
    tide_json_set(x, "warming_gpu_hours", tide_json_num(o->st_s[TIDE_S_WARMING] / 3600.0));
    int g = o->gpr;
    tide_json_set(x, "gpus_per_replica", g > 0 ? json_integer(g) : json_null());
    tide_json_set(x, "replica_hours", g > 0 ? tide_json_num(o->gpu_s / 3600.0 / g) : json_null());
    tide_json_set(x, "mean_replicas",
         g > 0 && horizon > 0 ? tide_json_num(o->gpu_s / g / horizon) : json_null());
    tide_json_set(x, "min_replicas",
                  g > 0 && o->min_rep >= 0 ? json_integer(o->min_rep) : json_null());
    tide_json_set(x, "max_replicas",
                  g > 0 && o->max_rep >= 0 ? json_integer(o->max_rep) : json_null());
    return x;
}

static json_t *policy_json(upol_t *p, const json_t *summary, double horizon)
{
    json_t *o = json_object();
    /* teams of summary.json without a usage row (nothing ever ran) */
    const char *tn;
    json_t *tv;
    json_object_foreach(json_object_get(json_object_get(json_object_get(summary, "policies"),
                                                        p->name),
                                        "teams"),
                        tn, tv) omap_get(&p->teams, tn);
    tide_json_set(o, "rows", json_integer((json_int_t)p->rows));
    double *dur = NULL;
    if (p->g && p->nb) {
        dur = tide_xcalloc(p->nb, sizeof *dur);
        grid_json(o, p, dur);
    }
    tide_json_set(o, "total", hc(p->total_s, p->total_c));
    tide_json_set(o, "teams_total", hc(p->kind_s[TIDE_OWNER_TEAM], p->kind_c[TIDE_OWNER_TEAM]));
    tide_json_set(o, "services_total",
                  hc(p->kind_s[TIDE_OWNER_SERVICE], p->kind_c[TIDE_OWNER_SERVICE]));
    tide_json_set(o, "idle_total", hc(p->kind_s[TIDE_OWNER_IDLE], p->kind_c[TIDE_OWNER_IDLE]));
    tide_json_set(o, "lost", hc(p->lost_s, p->lost_c));
    tide_json_set(o, "lost_owner", json_string(TIDE_USAGE_LOST_OWNER));
    json_t *cat = json_object();
    for (int c = 0; c < TIDE_COST_COUNT; c++)
        tide_json_set(cat, tide_cost_name(c), hc(p->cat_s[c], p->cat_c[c]));
    tide_json_set(o, "categories", cat);
    tide_json_set(o, "above_quota_available", json_boolean(p->have_states));

    double teams_s = 0;
    for (size_t i = 0; i < p->teams.n; i++)
        teams_s += p->teams.v[i].gpu_s;
    owner_t **tv2 = sorted(&p->teams);
    json_t *ta = json_array();
    size_t shown = TIDE_MIN(p->teams.n, (size_t)TIDE_REPORT_MAX_TEAMS);
    for (size_t i = 0; i < shown; i++)
        json_array_append_new(ta, team_json(p, tv2[i], summary, teams_s,
                                            dur && i < TIDE_REPORT_MAX_TEAM_SERIES, dur));
    double rest_s = 0, rest_c = 0;
    for (size_t i = shown; i < p->teams.n; i++) {
        rest_s += tv2[i]->gpu_s;
        rest_c += tv2[i]->cost - tv2[i]->st_c[TIDE_S_LOST];
    }
    free(tv2);
    tide_json_set(o, "teams", ta);
    tide_json_set(o, "teams_count", json_integer((json_int_t)p->teams.n));
    tide_json_set(o, "teams_not_listed", hc(rest_s, rest_c));

    owner_t **sv = sorted(&p->svcs);
    json_t *sa = json_array();
    shown = TIDE_MIN(p->svcs.n, (size_t)TIDE_REPORT_MAX_SERVICES);
    for (size_t i = 0; i < shown; i++)
        json_array_append_new(sa, service_json(sv[i], horizon));
    free(sv);
    tide_json_set(o, "services", sa);
    tide_json_set(o, "services_count", json_integer((json_int_t)p->svcs.n));
    tide_json_set(o, "services_meta", json_boolean(p->have_svc));
    free(dur);
    return o;
}

/* summary.json's governance section (top level or the policy's), if any. */
static int summary_has_governance(const json_t *summary)
{
    if (json_object_get(summary, "governance"))
        return 1;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(summary, "policies"), k, v) if (json_object_get(
        v, "governance")) return 1;
    return 0;
}

json_t *tide_report_teams(const char *dir, const json_t *summary, const json_t *order,
                          const tide_report_grid_t *grid, size_t ngrid)
{
    json_t *out = json_object();
    tide_json_set(out, "max_points", json_integer(TIDE_REPORT_MAX_TEAM_POINTS));
    tide_json_set(out, "max_teams", json_integer(TIDE_REPORT_MAX_TEAMS));
    tide_json_set(out, "max_series", json_integer(TIDE_REPORT_MAX_TEAM_SERIES));
    char path[PATH_N];
    snprintf(path, sizeof path, "%s/%s", dir, TIDE_USAGE_CSV);
    struct stat st;
    if (stat(path, &st) != 0) {
        tide_json_set(out, "available", json_false());
        tide_json_set(out, "missing", json_true());
        tide_json_set(out, "error",
                      json_string("usage.csv was not found next to summary.json (a run "
                                  "from before usage accounting): re-run tide sim to get "
                                  "the per-team figures"));
        return out;
    }
    uset_t u = {.n = 0};
    tide_error_t err = {0};
    if (read_usage(path, &u, grid, ngrid, &err) != 0) {
        uset_free(&u);
        tide_json_set(out, "available", json_false());
        tide_json_set(out, "error", json_string(err.msg[0] ? err.msg : "usage.csv cannot be read"));
        return out;
    }
    snprintf(path, sizeof path, "%s/%s", dir, TIDE_USAGE_TEAMS_CSV);
    read_team_states(path, &u);
    snprintf(path, sizeof path, "%s/%s", dir, TIDE_USAGE_SERVICES_CSV);
    read_services(path, &u);

    int gov = summary_has_governance(summary);
    for (int i = 0; i < u.n && !gov; i++)
        for (size_t j = 0; j < u.pol[i].teams.n && !gov; j++) {
            const owner_t *o = &u.pol[i].teams.v[j];
            gov = o->seen_state && (o->quota >= 0 || (isfinite(o->weight) && o->weight != 1));
        }
    tide_json_set(out, "available", json_true());
    tide_json_set(out, "governance", json_boolean(gov));
    json_t *gs = json_object_get(summary, "governance");
    if (gs)
        tide_json_set(out, "governance_summary", json_incref(gs));
    double horizon = json_number_value(json_object_get(summary, "horizon_s"));
    json_t *pols = json_object();
    size_t i;
    json_t *pv;
    json_array_foreach(order, i, pv) {
        upol_t *p = uset_find(&u, json_string_value(pv));
        if (p)
            tide_json_set(pols, p->name, policy_json(p, summary, horizon));
    }
    tide_json_set(out, "policies", pols);
    uset_free(&u);
    return out;
}
