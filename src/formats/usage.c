/* Usage accounting over time: the writer (tide_usage_sample at each timeline
 * boundary) and the aggregation behind `tide usage`. */
#include "formats/usage.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/csv.h"
#include "formats/json.h"
#include "formats/usage_priv.h"
#include "util/util.h"

#define NCELL (TIDE_C_COUNT * TIDE_S_COUNT * TIDE_T_COUNT)
#define SVC_NCELL (TIDE_S_COUNT * TIDE_T_COUNT)
#define EPS_GPU_S 0.0005 /* rows below this (GPU-seconds) are not written */

/* ================================================================= writer */

/* What was written so far for one policy (cumulative, as rounded). */
typedef struct pstate {
    char *policy;
    const tide_engine_t *e;
    tide_time_t t;            /* the previous sample */
    int n_types;
    int n_teams;
    double *team;             /* [team][class][state][tier][type] */
    int n_svcs;
    double *svc;              /* [service][state][tier][type] */
    double idle[TIDE_T_COUNT][TIDE_MAX_GPU_TYPES];
    double foreign[TIDE_T_COUNT][TIDE_MAX_GPU_TYPES];
    int meta_written;
} pstate_t;

struct tide_usage {
    const tide_governance_t *g;
    FILE *f, *ft, *fs;
    char path[4096], tpath[4096], spath[4096];
    pstate_t *ps;
    size_t n_ps, cap_ps;
    char tname[TIDE_MAX_GPU_TYPES][TIDE_MAX_TYPE_NAME + 16]; /* GPU type names */
    double *vals;              /* the sampler's scratch (walk_t.v) */
    size_t capvals;
    int failed;
    /* Row text kept between rows (emit): keys[kind][k] is a team's
     * (kind 0) or service's (kind 1) cell k as "kind,class,state,tier,
     * gpu_type" for key_nt GPU types, built on first use (key_table); pre
     * is "policy,time_s" of the sample being written (tide_usage_sample). */
    char *keys[2];
    uint32_t *key_off[2];      /* [n + 1]: key k is keys[kind][off[k] .. off[k+1]) */
    int key_nt;                /* 0: none built */
    char *pre;
    size_t npre;
    /* usage.csv rows of the sample being written, fwritten at its end (or
     * when full); own is the owner column of the last owner written (own_of:
     * its name, NULL after a sample: names are the engine's) */
    char *buf;
    size_t len, cap;
    /* The runs of adjacent rows (cls x TIDE_S_COUNT + state) of a team's
     * cells that tide_engine_team_cell_live says can be non-zero: run r is
     * rows [run[r][0], run[r][1]). The sampler scans only these; the other
     * cells stay zero, as written. */
    int team_run[TIDE_C_COUNT * TIDE_S_COUNT][2];
    int n_team_run;
    FILE *bf;                  /* the file u->buf goes to (u->f or u->ft) */
    const char *own_of;
    char *own;
    size_t nown, capown;
};

static FILE *open_w(const char *dir, const char *name, char *path, size_t n, tide_error_t *err)
{
    snprintf(path, n, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        tide_errf(err, TIDE_EIO, "cannot write %s: %s", path, strerror(errno));
    return f;
}

tide_usage_t *tide_usage_open(const char *dir, const tide_governance_t *g, tide_error_t *err)
{
    if (!dir || !*dir) {
        tide_errf(err, TIDE_EINVAL, "usage: no output directory given");
        return NULL;
    }
    tide_usage_t *u = tide_xcalloc(1, sizeof *u);
    u->g = g;
    u->f = open_w(dir, TIDE_USAGE_CSV, u->path, sizeof u->path, err);
    if (u->f)
        u->ft = open_w(dir, TIDE_USAGE_TEAMS_CSV, u->tpath, sizeof u->tpath, err);
    if (u->ft)
        u->fs = open_w(dir, TIDE_USAGE_SERVICES_CSV, u->spath, sizeof u->spath, err);
    if (!u->fs) {
        if (u->f)
            fclose(u->f);
        if (u->ft)
            fclose(u->ft);
        free(u);
        return NULL;
    }
    for (int k = 0; k < TIDE_MAX_GPU_TYPES; k++)
        tide_governance_type_name(g, k, u->tname[k], sizeof u->tname[k]);
    for (int row = 0; row < TIDE_C_COUNT * TIDE_S_COUNT; row++) {
        if (!tide_engine_team_cell_live(row / TIDE_S_COUNT, row % TIDE_S_COUNT))
            continue;
        if (u->n_team_run && u->team_run[u->n_team_run - 1][1] == row)
            u->team_run[u->n_team_run - 1][1] = row + 1;
        else {
            u->team_run[u->n_team_run][0] = row;
            u->team_run[u->n_team_run++][1] = row + 1;
        }
    }
    fputs("policy,time_s,owner,kind,class,state,tier,gpu_type,gpu_s,cost\n", u->f);
    fputs("policy,time_s,team,weight,quota_gpus,used_gpus,borrowed_gpus,usage_gpu_s\n", u->ft);
    fputs("policy,service,gpus_per_replica,min_replicas,max_replicas\n", u->fs);
    return u;
}

static void ps_reset(pstate_t *p, const tide_engine_t *e, tide_time_t t0)
{
    free(p->team);
    free(p->svc);
    p->team = p->svc = NULL;
    p->n_teams = p->n_svcs = 0;
    memset(p->idle, 0, sizeof p->idle);
    memset(p->foreign, 0, sizeof p->foreign);
    p->e = e;
    p->t = t0;
    p->meta_written = 0;
}

static pstate_t *ps_get(tide_usage_t *u, const char *policy)
{
    for (size_t i = 0; i < u->n_ps; i++)
        if (!strcmp(u->ps[i].policy, policy))
            return &u->ps[i];
    tide_grow((void **)&u->ps, &u->cap_ps, u->n_ps + 1, sizeof *u->ps);
    pstate_t *p = &u->ps[u->n_ps++];
    memset(p, 0, sizeof *p);
    p->policy = tide_xstrdup(policy);
    p->t = -1;
    return p;
}

/* A cell's key columns: kind, class, state, tier, gpu_type. */
static void key_fields(const tide_usage_t *u, tide_csv_row_t *row, int kind, int cls, int state,
                       int tier, int type)
{
    tide_csv_row_str(row, tide_owner_kind_name(kind));
    tide_csv_row_str(row, tide_class_name(cls));
    tide_csv_row_str(row, tide_state_name(state));
    tide_csv_row_str(row, tide_tier_name(tier));
    tide_csv_row_str(row, u->tname[type]);
}

static void row_take(tide_csv_row_t *r, char **dst, size_t *n);

/* Room for n more bytes in u->buf (written out when full). */
static char *ubuf_room(tide_usage_t *u, size_t n)
{
    if (u->len + n > u->cap) {
        if (u->len)
            fwrite(u->buf, 1, u->len, u->bf);
        u->len = 0;
        if (n > u->cap) {
            u->cap = n > 65536 ? n : 65536;
            u->buf = tide_xrealloc(u->buf, u->cap);
        }
    }
    return u->buf + u->len;
}

/* Append text (n bytes) to u->buf. */
static void ubuf_put(tide_usage_t *u, const char *text, size_t n)
{
    memcpy(ubuf_room(u, n), text, n);
    u->len += n;
}

/* Append k / 1000 as %.3f writes it (a sign, the whole part, 3 decimals). */
static void ubuf_milli(tide_usage_t *u, long long k)
{
    char *d = ubuf_room(u, 32);
    size_t n = 0;
    unsigned long long m = k < 0 ? 0ULL - (unsigned long long)k : (unsigned long long)k;
    if (k < 0)
        d[n++] = '-';
    n += (size_t)tide_fmt_i64(d + n, (long long)(m / 1000));
    unsigned f = (unsigned)(m % 1000);
    d[n++] = '.';
    d[n++] = (char)('0' + f / 100);
    d[n++] = (char)('0' + f / 10 % 10);
    d[n++] = (char)('0' + f % 10);
    u->len += n;
}

/* Append x as %.*f writes it (dec 0..6). */
static void ubuf_fixed(tide_usage_t *u, double x, int dec)
{
    enum { MAXF = 330 }; /* as tide_csv_row_fixed: %.*f of the largest doubles */
    int n = tide_fmt_fixed(ubuf_room(u, MAXF), MAXF, x, dec);
    u->len += n > 0 ? (size_t)n : 0;
}

/* Write one row for cumulative value `cum` whose written part is *w; key
 * (n bytes) is the cell's key columns as key_fields writes them, or NULL
 * to write them here. The same bytes as tide_csv_row_* would write, built
 * in u->buf. */
static void emit(tide_usage_t *u, const char *owner, int kind, int cls, int state, int tier,
                 int type, const char *key, size_t n, double cum, double *w)
{
    double d = cum - *w;
    if (fabs(d) < EPS_GPU_S)
        return;
    double k = round(d * 1000.0);
    d = k / 1000.0; /* round3 */
    if (d == 0)
        return;
    *w += d;
    double price = tide_governance_price(u->g, type, tide_cost_category(kind, state, tier));
    double cost = d / 3600.0 * price;
    if (owner != u->own_of) { /* the owner column, once per owner and sample */
        tide_csv_row_t row;
        tide_csv_row_begin(&row);
        tide_csv_row_str(&row, owner);
        row_take(&row, &u->own, &u->nown);
        u->own_of = owner;
    }
    ubuf_put(u, u->pre, u->npre);
    ubuf_put(u, ",", 1);
    ubuf_put(u, u->own, u->nown);
    ubuf_put(u, ",", 1);
    if (key) {
        ubuf_put(u, key, n);
    } else {
        tide_csv_row_t row;
        tide_csv_row_begin(&row);
        key_fields(u, &row, kind, cls, state, tier, type);
        ubuf_put(u, row.p, row.len);
        if (row.p != row.inl)
            free(row.p);
    }
    ubuf_put(u, ",", 1);
    /* d = k / 1000 exactly rounded: %.3f of it is k itself while a
     * thousandth is far above d's rounding error (|d| < 1e12) */
    if (fabs(k) < 1e15)
        ubuf_milli(u, (long long)k);
    else
        ubuf_fixed(u, d, 3);
    if (cost == 0) {
        ubuf_put(u, ",0.0000\n", 8);
    } else {
        ubuf_put(u, ",", 1);
        ubuf_fixed(u, cost, 4);
        ubuf_put(u, "\n", 1);
    }
}

static int count_types(const tide_engine_t *e)
{
    int n = 0;
    while (n < TIDE_MAX_GPU_TYPES && tide_engine_type_gpus(e, n, NULL) > 0)
        n++;
    return n;
}

/* The keys of cell k of an owner in usage order (type fastest, nt GPU
 * types) into x; x->kind says whether the class is part of k (teams) or
 * inference. */
static void cell_keys(tide_usage_cell_t *x, size_t k, int nt)
{
    x->type = (int)(k % (size_t)nt);
    k /= (size_t)nt;
    x->tier = (int)(k % TIDE_T_COUNT);
    k /= TIDE_T_COUNT;
    x->state = (int)(k % TIDE_S_COUNT);
    x->cls = x->kind == TIDE_OWNER_TEAM ? (int)(k / TIDE_S_COUNT) : TIDE_C_INFERENCE;
}

/* The text of row r's fields so far into *dst (realloc'd), its length into
 * *n; r is empty again. */
static void row_take(tide_csv_row_t *r, char **dst, size_t *n)
{
    *dst = tide_xrealloc(*dst, r->len ? r->len : 1);
    memcpy(*dst, r->p, r->len);
    *n = r->len;
    if (r->p != r->inl)
        free(r->p);
    tide_csv_row_begin(r);
}

/* Build u->keys for nt GPU types (once: an engine's types do not change,
 * and all policies of a run share the cluster). */
static void key_table(tide_usage_t *u, int nt)
{
    if (u->key_nt == nt)
        return;
    static const int kinds[2] = {TIDE_OWNER_TEAM, TIDE_OWNER_SERVICE};
    for (int j = 0; j < 2; j++) {
        size_t n = (size_t)(j == 0 ? NCELL : SVC_NCELL) * (size_t)nt;
        tide_csv_row_t row;
        tide_csv_row_begin(&row);
        u->key_off[j] = tide_xrealloc(u->key_off[j], (n + 1) * sizeof *u->key_off[j]);
        u->key_off[j][0] = 0;
        for (size_t k = 0; k < n; k++) {
            tide_usage_cell_t x = {.kind = kinds[j]};
            cell_keys(&x, k, nt);
            /* each key on its own: drop the ',' the row puts between them */
            size_t at = row.len;
            key_fields(u, &row, x.kind, x.cls, x.state, x.tier, x.type);
            if (k > 0) {
                memmove(row.p + at, row.p + at + 1, row.len - at - 1);
                row.len--;
            }
            u->key_off[j][k + 1] = (uint32_t)row.len;
        }
        size_t len;
        row_take(&row, &u->keys[j], &len);
    }
    u->key_nt = nt;
}

/* u->pre: the policy and time columns of the rows of p's sample at t. */
static void row_prefix(tide_usage_t *u, const char *policy, tide_time_t t)
{
    tide_csv_row_t row;
    tide_csv_row_begin(&row);
    tide_csv_row_str(&row, policy);
    tide_csv_row_i64(&row, (long long)t);
    row_take(&row, &u->pre, &u->npre);
}

static void write_meta(tide_usage_t *u, pstate_t *p, const tide_engine_t *e)
{
    int ns = tide_engine_services(e);
    for (int s = 0; s < ns; s++) {
        const tide_service_spec_t *sp = tide_engine_service(e, s);
        if (!sp)
            continue;
        tide_csv_write_field(u->fs, p->policy);
        fputc(',', u->fs);
        tide_csv_write_field(u->fs, sp->name);
        fprintf(u->fs, ",%d,%d,%d\n", sp->gpus_per_replica, sp->min_replicas, sp->max_replicas);
    }
    p->meta_written = 1;
}

/* ------------------------------------------------------------------ cells */

/* Idle GPU-seconds per tier and type into cell: exact per tier (the
 * engine's cells) and per type (the type's GPUs x elapsed minus what teams
 * and services held: alloc_type; svc_a: replicas on Tier A). */
static void idle_split(const tide_engine_t *e, const tide_stats_t *st, int nt,
                       const double *alloc_type, const double *svc_a,
                       double cell[TIDE_T_COUNT][TIDE_MAX_GPU_TYPES])
{
    double elapsed = (double)(st->now - st->start);
    double idle_tier[TIDE_T_COUNT] = {0};
    for (int c = 0; c < TIDE_C_COUNT; c++)
        for (int r = 0; r < TIDE_T_COUNT; r++)
            idle_tier[r] += st->gpu_s[c][TIDE_S_IDLE][r];
    memset(cell, 0, sizeof(double) * TIDE_T_COUNT * TIDE_MAX_GPU_TYPES);
    if (nt == 1) {
        for (int r = 0; r < TIDE_T_COUNT; r++)
            cell[r][0] = idle_tier[r];
        return;
    }
    if (nt < 1)
        return;
    double idle_type[TIDE_MAX_GPU_TYPES] = {0};
    double a_sum = 0, rem_sum = 0, rem[TIDE_MAX_GPU_TYPES];
    for (int k = 0; k < nt; k++) {
        int reserve = 0;
        int gpus = tide_engine_type_gpus(e, k, &reserve);
        idle_type[k] = TIDE_MAX((double)gpus * elapsed - alloc_type[k], 0.0);
        double a = (double)reserve * elapsed - svc_a[k];
        cell[TIDE_T_A][k] = TIDE_MIN(TIDE_MAX(a, 0.0), idle_type[k]);
        a_sum += cell[TIDE_T_A][k];
    }
    double scale = a_sum > 0 ? idle_tier[TIDE_T_A] / a_sum : 0;
    for (int k = 0; k < nt; k++) {
        cell[TIDE_T_A][k] *= scale;
        rem[k] = TIDE_MAX(idle_type[k] - cell[TIDE_T_A][k], 0.0);
        rem_sum += rem[k];
    }
    for (int r = 0; r < TIDE_T_COUNT; r++) {
        if (r == TIDE_T_A && a_sum > 0)
            continue;
        /* (Tier A too when no type's reserve shows idle time: its total
         * still goes somewhere, so the tier margin stays exact) */
        for (int k = 0; k < nt; k++)
            cell[r][k] = rem_sum > 0 ? idle_tier[r] * rem[k] / rem_sum
                                     : (k == 0 ? idle_tier[r] : 0);
    }
}

/* One owner's (team's or service's) cells now into v[0..n), in usage order
 * (type fastest): the engine's bulk accessor, or cell by cell when its
 * layout differs (a GPU type without GPUs). */
static void owner_values(const tide_engine_t *e, int kind, int i, int nt, double *v, size_t n)
{
    int got = kind == TIDE_OWNER_TEAM ? tide_engine_team_gpu_s_all(e, i, v, n)
                                      : tide_engine_service_gpu_s_all(e, i, v, n);
    if (got == (int)n)
        return;
    for (size_t k = 0; k < n; k++) {
        tide_usage_cell_t x = {.kind = kind};
        cell_keys(&x, k, nt);
        v[k] = kind == TIDE_OWNER_TEAM
                   ? tide_engine_team_gpu_s(e, i, x.cls, x.state, x.tier, x.type)
                   : tide_engine_service_gpu_s(e, i, x.state, x.tier, x.type);
    }
}

/* A walk over an engine's cells, shared by tide_usage_cells and the
 * sampler: per owner its values (owner_fn), then the idle and foreign cells
 * (which need the owners' sums per type). */
typedef struct walk {
    const tide_engine_t *e;
    int nt;
    double *v;                 /* scratch: one owner's values */
    size_t cap;
    void (*owner_fn)(void *ctx, int kind, int index, const char *owner, const double *v,
                     size_t n);
    void *ctx;
    double idle[TIDE_T_COUNT][TIDE_MAX_GPU_TYPES];
    double foreign[TIDE_T_COUNT][TIDE_MAX_GPU_TYPES];
} walk_t;

/* Values of one owner to owner_fn; its GPU-seconds into the sums per type. */
static void walk_owner(walk_t *w, int kind, int i, const char *owner, double *alloc_type,
                       double *svc_a)
{
    size_t nt = (size_t)w->nt, n = (kind == TIDE_OWNER_TEAM ? NCELL : SVC_NCELL) * nt;
    tide_grow((void **)&w->v, &w->cap, n, sizeof *w->v);
    owner_values(w->e, kind, i, w->nt, w->v, n);
    if (nt > 1) /* the sums only split idle time between types */
        for (size_t c = 0, k = 0; c < n / nt; c++)
            for (size_t type = 0; type < nt; type++, k++) {
                alloc_type[type] += w->v[k];
                if (svc_a && c % TIDE_T_COUNT == TIDE_T_A)
                    svc_a[type] += w->v[k];
            }
    w->owner_fn(w->ctx, kind, i, owner, w->v, n);
}

static void walk(walk_t *w, const tide_stats_t *st)
{
    const tide_engine_t *e = w->e;
    int nt = w->nt;
    double alloc_type[TIDE_MAX_GPU_TYPES] = {0};
    double svc_a[TIDE_MAX_GPU_TYPES] = {0}; /* replica GPU-seconds on Tier A per type */
    for (int i = 0; i < tide_engine_teams(e); i++) {
        tide_team_stats_t ts;
        if (tide_engine_team(e, i, &ts) == 0 && ts.team)
            walk_owner(w, TIDE_OWNER_TEAM, i, ts.team, alloc_type, NULL);
    }
    for (int i = 0; i < tide_engine_services(e); i++) {
        const tide_service_spec_t *sp = tide_engine_service(e, i);
        if (sp)
            walk_owner(w, TIDE_OWNER_SERVICE, i, sp->name, alloc_type, svc_a);
    }
    /* GPUs that jobs tide does not manage held: neither idle nor tide's */
    for (int r = 0; r < TIDE_T_COUNT; r++)
        for (int k = 0; k < nt; k++)
            alloc_type[k] += w->foreign[r][k] = tide_engine_foreign_gpu_s(e, r, k);
    idle_split(e, st, nt, alloc_type, svc_a, w->idle);
}

typedef struct cells_ctx {
    const tide_governance_t *g;
    tide_usage_cell_fn fn;
    void *ctx;
    int nt;
} cells_ctx_t;

static double cell_cost(const tide_governance_t *g, const tide_usage_cell_t *x)
{
    if (x->kind == TIDE_OWNER_FOREIGN)
        return 0; /* tide does not price what it does not run */
    return x->gpu_s / 3600.0 *
           tide_governance_price(g, x->type, tide_cost_category(x->kind, x->state, x->tier));
}

static void cells_owner(void *ctx, int kind, int index, const char *owner, const double *v,
                        size_t n)
{
    cells_ctx_t *c = ctx;
    tide_usage_cell_t x = {.kind = kind, .index = index, .owner = owner};
    for (size_t k = 0; k < n; k++) {
        cell_keys(&x, k, c->nt);
        x.gpu_s = v[k];
        x.cost = cell_cost(c->g, &x);
        c->fn(c->ctx, &x);
    }
}

/* The idle cells (by tier, type), then the foreign ones, to fn. */
static void tail_cells(const walk_t *w, const tide_governance_t *g, tide_usage_cell_fn fn,
                       void *ctx)
{
    static const int kinds[2] = {TIDE_OWNER_IDLE, TIDE_OWNER_FOREIGN};
    static const int states[2] = {TIDE_S_IDLE, TIDE_S_FOREIGN};
    for (int j = 0; j < 2; j++) {
        tide_usage_cell_t x = {.kind = kinds[j], .index = -1, .owner = "-",
                               .cls = TIDE_C_NONE, .state = states[j]};
        for (x.tier = 0; x.tier < TIDE_T_COUNT; x.tier++)
            for (x.type = 0; x.type < w->nt; x.type++) {
                x.gpu_s = j == 0 ? w->idle[x.tier][x.type] : w->foreign[x.tier][x.type];
                x.cost = cell_cost(g, &x);
                fn(ctx, &x);
            }
    }
}

void tide_usage_cells(const tide_engine_t *e, const tide_governance_t *g, tide_usage_cell_fn fn,
                      void *ctx)
{
    tide_stats_t st;
    tide_engine_stats(e, &st);
    cells_ctx_t c = {g, fn, ctx, count_types(e)};
    walk_t w = {.e = e, .nt = c.nt, .owner_fn = cells_owner, .ctx = &c};
    walk(&w, &st);
    free(w.v);
    tail_cells(&w, g, fn, ctx);
}

/* ----------------------------------------------------------------- sample */

/* Grow p's written-so-far cells to the engine's teams and services. */
static void ps_fit(pstate_t *p, const tide_engine_t *e, int nt)
{
    int teams = tide_engine_teams(e);
    if (teams > p->n_teams) {
        size_t per = (size_t)NCELL * (size_t)nt;
        p->team = tide_xrealloc(p->team, (size_t)teams * per * sizeof *p->team);
        memset(p->team + (size_t)p->n_teams * per, 0,
               (size_t)(teams - p->n_teams) * per * sizeof *p->team);
        p->n_teams = teams;
    }
    int ns = tide_engine_services(e);
    if (ns > p->n_svcs) {
        size_t per = (size_t)SVC_NCELL * (size_t)nt;
        p->svc = tide_xrealloc(p->svc, (size_t)ns * per * sizeof *p->svc);
        memset(p->svc + (size_t)p->n_svcs * per, 0,
               (size_t)(ns - p->n_svcs) * per * sizeof *p->svc);
        p->n_svcs = ns;
    }
}

typedef struct sample_ctx {
    tide_usage_t *u;
    pstate_t *p;
} sample_ctx_t;

/* The first cell from k on that moved (v[k] not within EPS_GPU_S of what
 * was written, w[k]), or n. Most cells did not (classes, states and tiers
 * an owner never uses): four are tested at once, without a branch each. */
static size_t next_moved(const double *v, const double *w, size_t k, size_t n)
{
    for (; k + 4 <= n; k += 4) {
        int still = (fabs(v[k] - w[k]) < EPS_GPU_S) & (fabs(v[k + 1] - w[k + 1]) < EPS_GPU_S) &
                    (fabs(v[k + 2] - w[k + 2]) < EPS_GPU_S) &
                    (fabs(v[k + 3] - w[k + 3]) < EPS_GPU_S);
        if (!still)
            break;
    }
    while (k < n && fabs(v[k] - w[k]) < EPS_GPU_S)
        k++;
    return k;
}

/* One owner's rows: only the cells that moved since the previous sample (a
 * cell within EPS_GPU_S of what was written gives no row: emit's test, done
 * first so that the others cost one comparison). A team's rows that no job
 * is accounted in are skipped: their cells are zero, as written. */
static void sample_owner(void *ctx, int kind, int index, const char *owner, const double *v,
                         size_t n)
{
    sample_ctx_t *s = ctx;
    pstate_t *p = s->p;
    double *w = kind == TIDE_OWNER_TEAM ? p->team + (size_t)index * n : p->svc + (size_t)index * n;
    int j = kind == TIDE_OWNER_TEAM ? 0 : 1;
    const char *keys = s->u->keys[j];
    const uint32_t *off = s->u->key_off[j];
    size_t per = (size_t)TIDE_T_COUNT * (size_t)p->n_types; /* cells of one row */
    int all_rows[1][2] = {{0, (int)(n / (per ? per : 1))}};
    const int(*run)[2] = kind == TIDE_OWNER_TEAM ? (const int(*)[2])s->u->team_run
                                                 : (const int(*)[2])all_rows;
    int nrun = kind == TIDE_OWNER_TEAM ? s->u->n_team_run : 1;
    for (int r = 0; r < nrun; r++) {
        size_t end = (size_t)run[r][1] * per;
        for (size_t k = next_moved(v, w, (size_t)run[r][0] * per, end); k < end;
             k = next_moved(v, w, k + 1, end)) {
            tide_usage_cell_t x = {.kind = kind};
            cell_keys(&x, k, p->n_types);
            emit(s->u, owner, kind, x.cls, x.state, x.tier, x.type, keys + off[k],
                 off[k + 1] - off[k], v[k], &w[k]);
        }
    }
}

/* The idle and foreign cells' rows. */
static void sample_tail(void *ctx, const tide_usage_cell_t *c)
{
    sample_ctx_t *s = ctx;
    pstate_t *p = s->p;
    double *w = c->kind == TIDE_OWNER_FOREIGN ? &p->foreign[c->tier][c->type]
                                              : &p->idle[c->tier][c->type];
    emit(s->u, c->owner, c->kind, c->cls, c->state, c->tier, c->type, NULL, 0, c->gpu_s, w);
}

/* %g of x (usage_teams.csv's weight): integers below 1e6 directly (what %g
 * prints for them), anything else through snprintf. */
static void fmt_g(char *buf, size_t n, double x)
{
    if (x == floor(x) && fabs(x) < 1e6 && !(x == 0 && signbit(x)))
        tide_fmt_i64(buf, (long long)x);
    else
        snprintf(buf, n, "%g", x);
}

/* Append s as one CSV field (quoted as tide_csv_row_str quotes). */
static void ubuf_str(tide_usage_t *u, const char *s)
{
    tide_csv_row_t row;
    tide_csv_row_begin(&row);
    tide_csv_row_str(&row, s);
    ubuf_put(u, row.p, row.len);
    if (row.p != row.inl)
        free(row.p);
}

/* Append v as %lld writes it. */
static void ubuf_i64(tide_usage_t *u, long long v)
{
    u->len += (size_t)tide_fmt_i64(ubuf_room(u, 24), v);
}

/* usage_teams.csv: the teams' governance state at t (rows in u->buf, the
 * same bytes as tide_csv_row_* would write). */
static void sample_teams(tide_usage_t *u, const pstate_t *p, tide_time_t t,
                         const tide_engine_t *e)
{
    char wt[64];
    u->bf = u->ft;
    u->len = 0;
    ubuf_str(u, p->policy); /* "policy,t," once, kept at the front */
    ubuf_put(u, ",", 1);
    ubuf_i64(u, (long long)t);
    ubuf_put(u, ",", 1);
    size_t npre = u->len;
    char *pre = tide_xmalloc(npre);
    memcpy(pre, u->buf, npre);
    u->len = 0;
    for (int i = 0; i < tide_engine_teams(e); i++) {
        tide_team_info_t ti;
        if (tide_engine_team_info(e, i, &ti) != 0 || !ti.team)
            continue;
        fmt_g(wt, sizeof wt, ti.weight);
        ubuf_put(u, pre, npre);
        ubuf_str(u, ti.team);
        ubuf_put(u, ",", 1);
        ubuf_str(u, wt);
        ubuf_put(u, ",", 1);
        ubuf_i64(u, ti.quota_gpus);
        ubuf_put(u, ",", 1);
        ubuf_i64(u, ti.used_gpus);
        ubuf_put(u, ",", 1);
        ubuf_i64(u, ti.borrowed_gpus);
        ubuf_put(u, ",", 1);
        ubuf_fixed(u, ti.usage, 1);
        ubuf_put(u, "\n", 1);
    }
    free(pre);
    if (u->len)
        fwrite(u->buf, 1, u->len, u->ft);
    u->len = 0;
}

int tide_usage_sample(tide_usage_t *u, const char *policy, tide_time_t t,
                      const tide_engine_t *e)
{
    if (!u || !e || !policy)
        return -1;
    tide_stats_t st;
    tide_engine_stats(e, &st);
    pstate_t *p = ps_get(u, policy);
    if (p->e != e || t < p->t) {
        ps_reset(p, e, st.start);
        p->n_types = count_types(e); /* an engine's GPU types do not change */
    }
    if (!p->meta_written)
        write_meta(u, p, e);
    ps_fit(p, e, p->n_types);
    key_table(u, p->n_types);
    row_prefix(u, p->policy, p->t);
    u->bf = u->f;
    sample_ctx_t sc = {u, p};
    walk_t w = {.e = e, .nt = p->n_types, .v = u->vals, .cap = u->capvals,
                .owner_fn = sample_owner, .ctx = &sc};
    walk(&w, &st);
    u->vals = w.v;
    u->capvals = w.cap;
    tail_cells(&w, u->g, sample_tail, &sc);
    if (u->len)
        fwrite(u->buf, 1, u->len, u->f);
    u->len = 0;
    u->own_of = NULL; /* the next sample may come from another engine */
    sample_teams(u, p, t, e);
    p->t = t;
    if (ferror(u->f) || ferror(u->ft) || ferror(u->fs))
        u->failed = 1;
    return u->failed ? -1 : 0;
}

static int close_one(FILE *f, const char *path, int failed, tide_error_t *err)
{
    if (!f)
        return 0;
    int bad = ferror(f) || failed;
    if (fclose(f) != 0 || bad)
        return tide_errf(err, TIDE_EIO, "cannot write %s", path);
    return 0;
}

int tide_usage_close(tide_usage_t *u, tide_error_t *err)
{
    if (!u)
        return 0;
    int rc = 0;
    if (close_one(u->f, u->path, u->failed, err) < 0)
        rc = -1;
    if (close_one(u->ft, u->tpath, 0, rc ? NULL : err) < 0)
        rc = -1;
    if (close_one(u->fs, u->spath, 0, rc ? NULL : err) < 0)
        rc = -1;
    for (size_t i = 0; i < u->n_ps; i++) {
        free(u->ps[i].policy);
        free(u->ps[i].team);
        free(u->ps[i].svc);
    }
    free(u->ps);
    free(u->vals);
    for (int j = 0; j < 2; j++) {
        free(u->keys[j]);
        free(u->key_off[j]);
    }
    free(u->pre);
    free(u->buf);
    free(u->own);
    free(u);
    return rc;
}

/* ============================================================ strings */

static void strtab_rehash(strtab_t *s, size_t cap)
{
    free(s->slots);
    s->slots = tide_xcalloc(cap, sizeof *s->slots);
    s->scap = cap;
    for (size_t i = 0; i < s->n; i++) {
        size_t h = tide_hash_str(s->v[i]) & (cap - 1);
        while (s->slots[h])
            h = (h + 1) & (cap - 1);
        s->slots[h] = (int)i + 1;
    }
}

int strtab_find(const strtab_t *s, const char *str)
{
    if (!s->scap)
        return -1;
    size_t h = tide_hash_str(str) & (s->scap - 1);
    while (s->slots[h]) {
        int id = s->slots[h] - 1;
        if (!strcmp(s->v[id], str))
            return id;
        h = (h + 1) & (s->scap - 1);
    }
    return -1;
}

int strtab_intern(strtab_t *s, const char *str)
{
    int id = strtab_find(s, str);
    if (id >= 0)
        return id;
    if ((s->n + 1) * 2 > s->scap)
        strtab_rehash(s, s->scap ? s->scap * 2 : 64);
    TIDE_PUSH(s->v, s->n, s->cap, tide_xstrdup(str));
    size_t h = tide_hash_str(str) & (s->scap - 1);
    while (s->slots[h])
        h = (h + 1) & (s->scap - 1);
    s->slots[h] = (int)s->n;
    return (int)s->n - 1;
}

void strtab_free(strtab_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    free(s->slots);
    memset(s, 0, sizeof *s);
}

/* ============================================================ loading */

static int name_index(const char *s, const char *(*fn)(int), int count)
{
    for (int i = 0; i < count; i++)
        if (!strcmp(fn(i), s))
            return i;
    return -1;
}

const char *urec_owner(const udata_t *d, const urec_t *r)
{
    return r->state == TIDE_S_LOST ? TIDE_USAGE_LOST_OWNER : d->str.v[r->owner];
}

void udata_free(udata_t *d)
{
    strtab_free(&d->str);
    free(d->v);
    memset(d, 0, sizeof *d);
}

/* The columns of usage.csv that udata_load reads. */
static const char *const ucols[] = {"policy", "time_s", "owner", "kind", "class",
                                    "state",  "tier",   "gpu_type", "gpu_s", "cost"};
enum { C_POLICY, C_TIME, C_OWNER, C_KIND, C_CLASS, C_STATE, C_TIER, C_TYPE, C_GPU_S, C_COST,
       C_N };

/* The time, names and numbers of the current row into x (strings not
 * interned). Returns 0 or -1 with err naming the cell. */
static int parse_urec(tide_csv_t *c, const int *col, urec_t *x, tide_error_t *err)
{
    memset(x, 0, sizeof *x);
    long long t;
    if (tide_parse_int(tide_csv_field(c, col[C_TIME]), &t) < 0 || t < 0)
        return tide_csv_fail(c, err, col[C_TIME], TIDE_EINVAL, "not a time in seconds: '%s'",
                             tide_csv_field(c, col[C_TIME]));
    x->t = t;
    int k = tide_owner_kind_find(tide_csv_field(c, col[C_KIND]));
    int cls = name_index(tide_csv_field(c, col[C_CLASS]), tide_class_name, TIDE_C_COUNT);
    int st = name_index(tide_csv_field(c, col[C_STATE]), tide_state_name, TIDE_S_COUNT);
    int tier = name_index(tide_csv_field(c, col[C_TIER]), tide_tier_name, TIDE_T_COUNT);
    int bad = k < 0 ? C_KIND : cls < 0 ? C_CLASS : st < 0 ? C_STATE : tier < 0 ? C_TIER : -1;
    if (bad >= 0)
        return tide_csv_fail(c, err, col[bad], TIDE_EINVAL, "unknown %s '%s'", ucols[bad],
                             tide_csv_field(c, col[bad]));
    if (tide_parse_double(tide_csv_field(c, col[C_GPU_S]), &x->gpu_s) < 0)
        return tide_csv_fail(c, err, col[C_GPU_S], TIDE_EINVAL, "not a number: '%s'",
                             tide_csv_field(c, col[C_GPU_S]));
    const char *cs = tide_csv_field(c, col[C_COST]);
    if (*cs && tide_parse_double(cs, &x->cost) < 0)
        return tide_csv_fail(c, err, col[C_COST], TIDE_EINVAL, "not a number: '%s'", cs);
    x->kind = (signed char)k;
    x->cls = (signed char)cls;
    x->state = (signed char)st;
    x->tier = (signed char)tier;
    return 0;
}

/* "policy 'x' is not in path (it has: a, b)" */
static int policy_missing(const char *policy, const char *path, const strtab_t *all,
                          tide_error_t *err)
{
    char list[512] = "";
    for (size_t i = 0; i < all->n; i++) {
        if (i)
            strncat(list, ", ", sizeof list - strlen(list) - 1);
        strncat(list, all->v[i], sizeof list - strlen(list) - 1);
    }
    return tide_errf(err, TIDE_EINVAL, "policy '%s' is not in %s (it has: %s)", policy, path,
                     all->n ? list : "no rows");
}

/* The run's end: summary.json's horizon, else the last interval's end. */
static void udata_end(const char *dir, udata_t *d, tide_time_t last_dt)
{
    json_t *sum = tide_json_load_file(dir, "summary.json", NULL);
    json_t *h = sum ? json_object_get(sum, "horizon_s") : NULL;
    d->have_summary = sum != NULL;
    if (h && json_is_integer(h)) {
        d->end = (tide_time_t)json_integer_value(h);
        d->horizon_known = 1;
    } else {
        tide_time_t mx = 0;
        for (size_t i = 0; i < d->n; i++)
            mx = TIDE_MAX(mx, d->v[i].t);
        d->end = mx + last_dt;
    }
    json_decref(sum);
}

int udata_load(const char *dir, const char *policy, udata_t *d, tide_error_t *err)
{
    memset(d, 0, sizeof *d);
    if (!dir)
        return tide_errf(err, TIDE_EINVAL, "no directory given");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, TIDE_USAGE_CSV);
    tide_csv_t *c = tide_csv_open_file(path, err);
    if (!c)
        return -1;
    int col[C_N];
    for (int i = 0; i < C_N; i++) {
        col[i] = tide_csv_col(c, ucols[i]);
        if (col[i] < 0) {
            tide_errf(err, TIDE_EINVAL, "%s:1: missing column '%s'", path, ucols[i]);
            tide_csv_close(c);
            return -1;
        }
    }
    int rc = 0, seen_policy = policy == NULL;
    tide_time_t last_t = -1, prev_t = -1;
    int last_policy = -1;
    tide_time_t last_dt = 0;
    strtab_t all = {0}; /* every policy in the file, for the message */
    for (;;) {
        int r = tide_csv_next(c, err);
        if (r == 0)
            break;
        if (r < 0) {
            rc = -1;
            break;
        }
        const char *pol = tide_csv_field(c, col[C_POLICY]);
        strtab_intern(&all, pol);
        if (policy && strcmp(pol, policy) != 0)
            continue;
        seen_policy = 1;
        urec_t x;
        if ((rc = parse_urec(c, col, &x, err)) < 0)
            break;
        x.policy = strtab_intern(&d->str, pol);
        x.owner = strtab_intern(&d->str, tide_csv_field(c, col[C_OWNER]));
        x.type = strtab_intern(&d->str, tide_csv_field(c, col[C_TYPE]));
        int known = 0;
        for (int i = 0; i < d->n_policies; i++)
            known |= d->policies[i] == x.policy;
        if (!known) {
            if (d->n_policies == (int)(sizeof d->policies / sizeof d->policies[0])) {
                rc = tide_csv_fail(c, err, col[C_POLICY], TIDE_EINVAL, "too many policies");
                break;
            }
            d->policies[d->n_policies++] = x.policy;
        }
        if (x.policy != last_policy) {
            last_policy = x.policy;
            prev_t = last_t = -1;
        }
        if (x.t != last_t) {
            prev_t = last_t;
            last_t = x.t;
            if (prev_t >= 0 && last_t > prev_t)
                last_dt = last_t - prev_t;
        }
        TIDE_PUSH(d->v, d->n, d->cap, x);
    }
    tide_csv_close(c);
    if (rc == 0 && !seen_policy)
        rc = policy_missing(policy, path, &all, err);
    strtab_free(&all);
    if (rc < 0) {
        udata_free(d);
        return -1;
    }
    udata_end(dir, d, last_dt);
    return 0;
}

/* ========================================================== aggregation */

static const char *const key_names[TIDE_UK_COUNT] = {
    "policy", "owner", "kind", "class", "state", "tier", "gpu_type", "category"};

const char *tide_usage_key_name(int k)
{
    return k >= 0 && k < TIDE_UK_COUNT ? key_names[k] : "unknown";
}

int tide_usage_parse_by(const char *list, int *keys, tide_error_t *err)
{
    if (!list)
        return 0;
    char *buf = tide_xstrdup(list), *save = NULL;
    int n = 0, rc = 0;
    for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        while (*p == ' ')
            p++;
        size_t l = strlen(p);
        while (l && p[l - 1] == ' ')
            p[--l] = '\0';
        int k = -1;
        if (!strcmp(p, "team"))
            k = TIDE_UK_OWNER;
        else if (!strcmp(p, "type"))
            k = TIDE_UK_GPU_TYPE;
        else if (!strcmp(p, "cost") || !strcmp(p, "cost_category"))
            k = TIDE_UK_CATEGORY;
        else
            for (int i = 0; i < TIDE_UK_COUNT; i++)
                if (!strcmp(p, key_names[i]))
                    k = i;
        if (k < 0) {
            rc = tide_errf(err, TIDE_EINVAL,
                           "--by: unknown key '%s' (known: policy, owner (or team), kind, class, "
                           "state, tier, gpu_type, category)",
                           p);
            break;
        }
        for (int i = 0; i < n; i++)
            if (keys[i] == k) {
                rc = tide_errf(err, TIDE_EINVAL, "--by: '%s' given twice", key_names[k]);
                break;
            }
        if (rc < 0)
            break;
        keys[n++] = k;
    }
    free(buf);
    if (rc == 0 && n == 0)
        rc = tide_errf(err, TIDE_EINVAL, "--by: empty list");
    return rc < 0 ? -1 : n;
}

static const char *rec_key(const udata_t *d, const urec_t *r, int k)
{
    switch (k) {
    case TIDE_UK_POLICY: return d->str.v[r->policy];
    case TIDE_UK_OWNER: return urec_owner(d, r);
    case TIDE_UK_KIND: return tide_owner_kind_name(r->kind);
    case TIDE_UK_CLASS: return tide_class_name(r->cls);
    case TIDE_UK_STATE: return tide_state_name(r->state);
    case TIDE_UK_TIER: return tide_tier_name(r->tier);
    case TIDE_UK_GPU_TYPE: return d->str.v[r->type];
    case TIDE_UK_CATEGORY: return tide_cost_name(tide_cost_category(r->kind, r->state, r->tier));
    default: return "";
    }
}

typedef struct upriv {
    strtab_t keys;  /* composite keys -> row index */
    strtab_t parts; /* key components (the rows' strings) */
} upriv_t;

/* qsort without a context pointer: rows are sorted by an index array. */
typedef struct rowref {
    const tide_usage_row_t *r;
    const int *keys;
    int n_keys;
} rowref_t;

static int rowref_cmp(const void *a, const void *b)
{
    const rowref_t *x = a, *y = b;
    if (x->r->gpu_s != y->r->gpu_s)
        return x->r->gpu_s > y->r->gpu_s ? -1 : 1;
    for (int i = 0; i < x->n_keys; i++) {
        int k = x->keys[i];
        int c = strcmp(x->r->key[k] ? x->r->key[k] : "", y->r->key[k] ? y->r->key[k] : "");
        if (c)
            return c;
    }
    return 0;
}

int tide_usage_aggregate(const char *dir, const tide_usage_query_t *q, tide_usage_table_t *out,
                         tide_error_t *err)
{
    memset(out, 0, sizeof *out);
    udata_t d;
    if (udata_load(dir, q->policy, &d, err) < 0)
        return -1;
    out->n_keys = q->n_keys;
    memcpy(out->keys, q->keys, sizeof out->keys);
    out->to_s = d.end;
    out->from_s = q->since_s > 0 && d.end > q->since_s ? d.end - q->since_s : 0;
    upriv_t *pv = tide_xcalloc(1, sizeof *pv);
    out->priv = pv;
    size_t cap = 0;
    char comp[4096];
    for (size_t i = 0; i < d.n; i++) {
        const urec_t *r = &d.v[i];
        if (r->t < out->from_s || r->t >= out->to_s)
            continue;
        out->rows_read++;
        size_t len = 0;
        comp[0] = '\0';
        for (int j = 0; j < q->n_keys; j++) {
            const char *s = rec_key(&d, r, q->keys[j]);
            int w = snprintf(comp + len, sizeof comp - len, "%s\x1f", s);
            if (w > 0)
                len = TIDE_MIN(len + (size_t)w, sizeof comp - 1);
        }
        int id = strtab_intern(&pv->keys, comp);
        if ((size_t)id == out->n) {
            tide_grow((void **)&out->rows, &cap, out->n + 1, sizeof *out->rows);
            tide_usage_row_t *row = &out->rows[out->n++];
            memset(row, 0, sizeof *row);
            for (int j = 0; j < q->n_keys; j++) {
                int k = q->keys[j];
                int part = strtab_intern(&pv->parts, rec_key(&d, r, k));
                row->key[k] = pv->parts.v[part];
            }
        }
        out->rows[id].gpu_s += r->gpu_s;
        out->rows[id].cost += r->cost;
        out->gpu_s += r->gpu_s;
        out->cost += r->cost;
    }
    /* parts' pointers are stable (each string allocated on its own) */
    rowref_t *refs = tide_xmalloc((out->n ? out->n : 1) * sizeof *refs);
    for (size_t i = 0; i < out->n; i++)
        refs[i] = (rowref_t){&out->rows[i], out->keys, out->n_keys};
    qsort(refs, out->n, sizeof *refs, rowref_cmp);
    tide_usage_row_t *sorted = tide_xmalloc((out->n ? out->n : 1) * sizeof *sorted);
    for (size_t i = 0; i < out->n; i++)
        sorted[i] = *refs[i].r;
    free(refs);
    free(out->rows);
    out->rows = sorted;
    udata_free(&d);
    return 0;
}

void tide_usage_table_free(tide_usage_table_t *t)
{
    if (!t)
        return;
    upriv_t *pv = t->priv;
    if (pv) {
        strtab_free(&pv->keys);
        strtab_free(&pv->parts);
        free(pv);
    }
    free(t->rows);
    memset(t, 0, sizeof *t);
}

int tide_usage_format_find(const char *name)
{
    if (!name)
        return -1;
    if (!strcmp(name, "table"))
        return TIDE_UFMT_TABLE;
    if (!strcmp(name, "csv"))
        return TIDE_UFMT_CSV;
    if (!strcmp(name, "json"))
        return TIDE_UFMT_JSON;
    return -1;
}

json_t *tide_usage_table_json(const tide_usage_table_t *t)
{
    json_t *o = json_object();
    json_object_set_new(o, "from_s", json_integer(t->from_s));
    json_object_set_new(o, "to_s", json_integer(t->to_s));
    json_t *keys = json_array();
    for (int i = 0; i < t->n_keys; i++)
        json_array_append_new(keys, json_string(key_names[t->keys[i]]));
    json_object_set_new(o, "keys", keys);
    json_t *rows = json_array();
    for (size_t i = 0; i < t->n; i++) {
        json_t *r = json_object();
        for (int j = 0; j < t->n_keys; j++) {
            int k = t->keys[j];
            json_object_set_new(r, key_names[k], json_string(t->rows[i].key[k]));
        }
        json_object_set_new(r, "gpu_hours", json_real(t->rows[i].gpu_s / 3600.0));
        json_object_set_new(r, "cost", json_real(t->rows[i].cost));
        json_array_append_new(rows, r);
    }
    json_object_set_new(o, "rows", rows);
    json_t *tot = json_object();
    json_object_set_new(tot, "gpu_hours", json_real(t->gpu_s / 3600.0));
    json_object_set_new(tot, "cost", json_real(t->cost));
    json_object_set_new(o, "total", tot);
    return o;
}

int tide_usage_table_print(FILE *f, const tide_usage_table_t *t, int format)
{
    if (format == TIDE_UFMT_JSON) {
        json_t *o = tide_usage_table_json(t);
        int rc = json_dumpf(o, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
        fputc('\n', f);
        json_decref(o);
        return rc == 0 && !ferror(f) ? 0 : -1;
    }
    if (format == TIDE_UFMT_CSV) {
        for (int j = 0; j < t->n_keys; j++)
            fprintf(f, "%s,", key_names[t->keys[j]]);
        fputs("gpu_hours,cost\n", f);
        for (size_t i = 0; i < t->n; i++) {
            for (int j = 0; j < t->n_keys; j++) {
                tide_csv_write_field(f, t->rows[i].key[t->keys[j]]);
                fputc(',', f);
            }
            fprintf(f, "%.4f,%.4f\n", t->rows[i].gpu_s / 3600.0, t->rows[i].cost);
        }
        return ferror(f) ? -1 : 0;
    }
    /* table */
    int w[TIDE_UK_COUNT];
    for (int j = 0; j < t->n_keys; j++) {
        w[j] = (int)strlen(key_names[t->keys[j]]);
        if (j == 0 && w[j] < 5)
            w[j] = 5; /* "total" */
        for (size_t i = 0; i < t->n; i++) {
            int l = (int)strlen(t->rows[i].key[t->keys[j]]);
            if (l > w[j])
                w[j] = l;
        }
    }
    char tf[64], tt[64];
    fprintf(f, "usage from %s to %s (%.1f h)\n", tide_fmt_duration(t->from_s, tf, sizeof tf),
            tide_fmt_duration(t->to_s, tt, sizeof tt), (double)(t->to_s - t->from_s) / 3600.0);
    for (int j = 0; j < t->n_keys; j++)
        fprintf(f, "%-*s  ", w[j], key_names[t->keys[j]]);
    fprintf(f, "%12s %12s %7s\n", "gpu_hours", "cost", "share%");
    for (size_t i = 0; i < t->n; i++) {
        for (int j = 0; j < t->n_keys; j++)
            fprintf(f, "%-*s  ", w[j], t->rows[i].key[t->keys[j]]);
        fprintf(f, "%12.2f %12.2f %7.2f\n", t->rows[i].gpu_s / 3600.0, t->rows[i].cost,
                t->gpu_s != 0 ? 100.0 * t->rows[i].gpu_s / t->gpu_s : 0.0);
    }
    if (t->n_keys > 0) {
        fprintf(f, "%-*s  ", w[0], "total");
        for (int j = 1; j < t->n_keys; j++)
            fprintf(f, "%-*s  ", w[j], "");
    } else {
        fputs("total  ", f);
    }
    fprintf(f, "%12.2f %12.2f %7.2f\n", t->gpu_s / 3600.0, t->cost, t->gpu_s != 0 ? 100.0 : 0.0);
    return ferror(f) ? -1 : 0;
}
