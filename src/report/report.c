/* The HTML report: read a `tide sim` output directory, reduce it to what the
 * page draws (downsampled timeline, SLO-miss intervals, lease lifecycles,
 * fault rows, storage and burst figures, per-team usage from usage.csv in
 * report_teams.c, the capacity signals of signals.c), embed that as JSON next to the
 * inline CSS and script (src/report/report.css, src/report/report.js, compiled in
 * by cmake/embed.cmake) and write one self-contained HTML file. */
#include "report/report.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report_assets.h" /* generated: tide_report_css[], tide_chart_js[], tide_report_js[] */
#include "formats/csv.h"
#include "formats/json.h"
#include "report/report_priv.h"
#include "report/signals.h"
#include "util/util.h"

#define PATH_N 4096
#define MAX_LEASE_ID (1 << 24) /* lease handles beyond this are ignored */

/* ------------------------------------------------------------ small helpers */

static int ci_contains(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == needle[i])
            i++;
        if (i == n)
            return 1;
    }
    return 0;
}

/* Number in a field; empty or absent -> NAN. Returns 0, -1 when not a number. */
static int field_num(const char *s, double *out)
{
    if (!s || !*s) {
        *out = NAN;
        return 0;
    }
    return tide_parse_double(s, out);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ------------------------------------------------------------- timeline.csv */

/* Columns documented in docs/sim.md (after `policy`). Anything else is an
 * "extra" column (fault injection adds e.g. storage_gbps). */
static const char *const KNOWN_COLS[] = {
    "time_s", "serving", "warming", "training", "checkpointing", "restoring", "lost", "idle",
    "inference_gpus", "p1_gpus", "p2_gpus", "p3_gpus", "demand_rps", "ready_rps", "queue_jobs",
    "queue_gpus", "running_jobs", "leased_gpus", "tier_a_gpus", "forecast_rps", "sized_rps"};
#define N_KNOWN ((int)(sizeof KNOWN_COLS / sizeof KNOWN_COLS[0]))

typedef struct tcol {
    char *name;
    int csv;   /* column in the file */
    int extra; /* not documented */
    int bad;   /* extra column with a non-numeric value: not embedded */
} tcol_t;

typedef struct tpol {
    char *name;
    size_t n, cap; /* rows */
    double *v;     /* n x ncols, row-major */
} tpol_t;

typedef struct tline {
    tcol_t *cols;
    int ncols;
    tpol_t *pol;
    size_t npol, cap;
} tline_t;

static void tline_free(tline_t *t)
{
    for (int k = 0; k < t->ncols; k++)
        free(t->cols[k].name);
    free(t->cols);
    for (size_t i = 0; i < t->npol; i++) {
        free(t->pol[i].name);
        free(t->pol[i].v);
    }
    free(t->pol);
}

static int tline_col(const tline_t *t, const char *name)
{
    for (int k = 0; k < t->ncols; k++)
        if (!strcmp(t->cols[k].name, name))
            return k;
    return -1;
}

static tpol_t *tline_policy(tline_t *t, const char *name)
{
    for (size_t i = t->npol; i-- > 0;)
        if (!strcmp(t->pol[i].name, name))
            return &t->pol[i];
    tide_grow((void **)&t->pol, &t->cap, t->npol + 1, sizeof *t->pol);
    tpol_t *p = &t->pol[t->npol++];
    memset(p, 0, sizeof *p);
    p->name = tide_xstrdup(name);
    return p;
}

static double tval(const tline_t *t, const tpol_t *p, size_t row, int col)
{
    return col < 0 ? NAN : p->v[row * (size_t)t->ncols + (size_t)col];
}

static int tline_read(const char *path, tline_t *t, tide_error_t *err)
{
    tide_csv_t *c = tide_csv_open_file(path, err);
    if (!c)
        return -1;
    int pcol = tide_csv_col(c, "policy");
    int rc = -1;
    if (pcol < 0 || tide_csv_col(c, "time_s") < 0) {
        tide_errf(err, TIDE_EINVAL, "%s: no 'policy' and 'time_s' columns (not a tide sim "
                  "timeline)", path);
        goto out;
    }
    t->cols = tide_xcalloc((size_t)tide_csv_ncols(c), sizeof *t->cols);
    for (int i = 0; i < tide_csv_ncols(c); i++) {
        /* per-service columns (COLUMN:SERVICE, e.g. forecast_rps:chat) stay in
         * the CSV: the report draws the sums */
        if (i == pcol || strchr(tide_csv_colname(c, i), ':'))
            continue;
        tcol_t *k = &t->cols[t->ncols++];
        k->name = tide_xstrdup(tide_csv_colname(c, i));
        for (char *s = k->name; *s; s++)
            *s = (char)tolower((unsigned char)*s);
        k->csv = i;
        k->extra = 1;
        for (int j = 0; j < N_KNOWN; j++)
            if (!strcmp(k->name, KNOWN_COLS[j]))
                k->extra = 0;
    }
    int r;
    while ((r = tide_csv_next(c, err)) == 1) {
        const char *pol = tide_csv_field(c, pcol);
        if (!pol || !*pol) {
            tide_csv_fail(c, err, pcol, TIDE_EINVAL, "empty policy");
            goto out;
        }
        tpol_t *p = tline_policy(t, pol);
        tide_grow((void **)&p->v, &p->cap, (p->n + 1) * (size_t)t->ncols, sizeof *p->v);
        double *row = p->v + p->n * (size_t)t->ncols;
        for (int k = 0; k < t->ncols; k++) {
            tcol_t *col = &t->cols[k];
            if (field_num(tide_csv_field(c, col->csv), &row[k]) != 0) {
                if (!col->extra) {
                    tide_csv_fail(c, err, col->csv, TIDE_EINVAL, "not a number");
                    goto out;
                }
                col->bad = 1;
                row[k] = NAN;
            }
        }
        if (!isfinite(row[0])) {
            tide_csv_fail(c, err, t->cols[0].csv, TIDE_EINVAL, "time_s is empty");
            goto out;
        }
        if (p->n > 0 && row[0] <= tval(t, p, p->n - 1, 0)) {
            tide_csv_fail(c, err, t->cols[0].csv, TIDE_EINVAL,
                          "time_s does not increase within policy %s", pol);
            goto out;
        }
        p->n++;
    }
    if (r < 0)
        goto out;
    rc = 0;
out:
    tide_csv_close(c);
    return rc;
}

/* Length of row i's interval (the last row takes the previous period). */
static double row_dt(const tline_t *t, const tpol_t *p, size_t i)
{
    if (i + 1 < p->n)
        return tval(t, p, i + 1, 0) - tval(t, p, i, 0);
    if (p->n >= 2)
        return tval(t, p, p->n - 1, 0) - tval(t, p, p->n - 2, 0);
    return 300;
}

/* Downsampled series of one policy: {step, raw_step, n_raw, factor, t, cols}. */
static json_t *tl_policy_json(const tline_t *t, const tpol_t *p)
{
    size_t k = (p->n + TIDE_REPORT_MAX_POINTS - 1) / TIDE_REPORT_MAX_POINTS;
    if (k < 1)
        k = 1;
    json_t *o = json_object();
    double raw = p->n ? row_dt(t, p, 0) : 300;
    tide_json_set(o, "raw_step", tide_json_num(raw));
    tide_json_set(o, "step", tide_json_num(raw * (double)k));
    tide_json_set(o, "n_raw", json_integer((json_int_t)p->n));
    tide_json_set(o, "factor", json_integer((json_int_t)k));
    json_t *ts = json_array();
    json_t *cols = json_object();
    json_t **arr = tide_xcalloc((size_t)t->ncols, sizeof *arr);
    for (int c = 1; c < t->ncols; c++)
        if (!t->cols[c].bad) {
            arr[c] = json_array();
            tide_json_set(cols, t->cols[c].name, arr[c]);
        }
    for (size_t b = 0; b < p->n; b += k) {
        size_t e = TIDE_MIN(b + k, p->n);
        json_array_append_new(ts, tide_json_num(tval(t, p, b, 0)));
        for (int c = 1; c < t->ncols; c++) {
            if (!arr[c])
                continue;
            double sum = 0, mx = -INFINITY;
            size_t cnt = 0;
            for (size_t i = b; i < e; i++) {
                double v = tval(t, p, i, c);
                if (!isfinite(v))
                    continue;
                sum += v;
                mx = v > mx ? v : mx;
                cnt++;
            }
            double v = cnt == 0 ? NAN : t->cols[c].extra ? mx : sum / (double)cnt;
            json_array_append_new(arr[c], tide_json_round(v, 2));
        }
    }
    free(arr);
    tide_json_set(o, "t", ts);
    tide_json_set(o, "cols", cols);
    return o;
}

/* Intervals [t0, t1, worst deficit rps] where ready_rps < demand_rps, merged. */
static json_t *misses_json(const tline_t *t, const tpol_t *p)
{
    json_t *a = json_array();
    int dc = tline_col(t, "demand_rps"), rc = tline_col(t, "ready_rps");
    if (dc < 0 || rc < 0)
        return a;
    double s = -1, e = -1, worst = 0;
    size_t n = 0;
    for (size_t i = 0; i <= p->n; i++) {
        int miss = 0;
        double d = 0;
        if (i < p->n) {
            double dem = tval(t, p, i, dc), rdy = tval(t, p, i, rc);
            miss = isfinite(dem) && isfinite(rdy) && rdy < dem;
            d = miss ? dem - rdy : 0;
        }
        if (miss && s >= 0 && tval(t, p, i, 0) <= e) {
            e = tval(t, p, i, 0) + row_dt(t, p, i);
            worst = TIDE_MAX(worst, d);
            continue;
        }
        if (s >= 0 && n < TIDE_REPORT_MAX_MISSES) {
            json_t *iv = json_array();
            json_array_append_new(iv, tide_json_num(s));
            json_array_append_new(iv, tide_json_num(e));
            json_array_append_new(iv, tide_json_round(worst, 2));
            json_array_append_new(a, iv);
            n++;
        }
        s = -1;
        if (miss) {
            s = tval(t, p, i, 0);
            e = s + row_dt(t, p, i);
            worst = d;
        }
    }
    return a;
}

/* Storage bandwidth figures from a timeline column (storage_gbps, or the
 * first extra column whose name mentions storage), or NULL. limit: the
 * bandwidth in GB/s (NAN = unknown). */
static json_t *storage_json(const tline_t *t, const tpol_t *p, double limit)
{
    int col = tline_col(t, "storage_gbps");
    for (int k = 1; col < 0 && k < t->ncols; k++)
        if (t->cols[k].extra && !t->cols[k].bad && ci_contains(t->cols[k].name, "storage"))
            col = k;
    if (col < 0 || t->cols[col].bad || p->n == 0)
        return NULL;
    double *v = tide_xmalloc(p->n * sizeof *v);
    size_t n = 0, active = 0, near = 0;
    double sum = 0, mx = -INFINITY, peak_t = 0;
    for (size_t i = 0; i < p->n; i++) {
        double x = tval(t, p, i, col);
        if (!isfinite(x))
            continue;
        v[n++] = x;
        sum += x;
        active += x > 0;
        near += isfinite(limit) && limit > 0 && x >= 0.9 * limit;
        if (x > mx) {
            mx = x;
            peak_t = tval(t, p, i, 0);
        }
    }
    json_t *o = NULL;
    /* an all-zero column without a bandwidth in summary.json: not simulated */
    if (n > 0 && (active > 0 || (isfinite(limit) && limit > 0))) {
        qsort(v, n, sizeof *v, cmp_double);
        o = json_object();
        tide_json_set(o, "column", json_string(t->cols[col].name));
        tide_json_set(o, "max", tide_json_round(mx, 2));
        tide_json_set(o, "peak_t", tide_json_num(peak_t));
        tide_json_set(o, "mean", tide_json_num(round(sum / (double)n * 1000) / 1000));
        tide_json_set(o, "median", tide_json_round(v[n / 2], 2));
        tide_json_set(o, "p99", tide_json_round(v[(size_t)floor(0.99 * (double)(n - 1))], 2));
        tide_json_set(o, "intervals", json_integer((json_int_t)n));
        tide_json_set(o, "active_intervals", json_integer((json_int_t)active));
        tide_json_set(o, "limit_gbps", tide_json_num(limit));
        tide_json_set(o, "near_limit_intervals", json_integer((json_int_t)near));
    }
    free(v);
    return o;
}

/* Inference figures of [t0, t1) from the timeline: approximate SLO (ready
 * capped at demand over demand, rps x interval), the worst ready/demand ratio,
 * peak demand, intervals short. */
static json_t *window_json(const tline_t *t, const tpol_t *p, double t0, double t1)
{
    int dc = tline_col(t, "demand_rps"), rc = tline_col(t, "ready_rps");
    if (dc < 0 || rc < 0)
        return NULL;
    double dem_sum = 0, srv_sum = 0, worst = INFINITY, peak = 0;
    int short_n = 0, n = 0;
    for (size_t i = 0; i < p->n; i++) {
        double ts = tval(t, p, i, 0), dt = row_dt(t, p, i);
        if (ts + dt <= t0 || ts >= t1)
            continue;
        double d = tval(t, p, i, dc), r = tval(t, p, i, rc);
        if (!isfinite(d) || !isfinite(r))
            continue;
        n++;
        dem_sum += d * dt;
        srv_sum += TIDE_MIN(d, r) * dt;
        peak = TIDE_MAX(peak, d);
        if (d > 0)
            worst = TIDE_MIN(worst, r / d);
        short_n += r < d;
    }
    json_t *o = json_object();
    tide_json_set(o, "start", tide_json_num(t0));
    tide_json_set(o, "end", tide_json_num(t1));
    tide_json_set(o, "intervals", json_integer(n));
    tide_json_set(o, "slo", tide_json_num(dem_sum > 0 ? srv_sum / dem_sum : 1.0));
    tide_json_set(o, "min_ready_ratio", isfinite(worst) ? tide_json_num(worst) : json_null());
    tide_json_set(o, "peak_demand_rps", tide_json_round(peak, 2));
    tide_json_set(o, "short_intervals", json_integer(short_n));
    return o;
}

/* --------------------------------------------------------------- events.csv */

/* String -> int map (open addressing) for job id -> open lease. */
typedef struct smap {
    char **k;
    int *v;
    size_t cap, n;
} smap_t;

static void smap_free(smap_t *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->k[i]);
    free(m->k);
    free(m->v);
    memset(m, 0, sizeof *m);
}

static size_t smap_find(const smap_t *m, const char *key)
{
    size_t i = (size_t)tide_hash_str(key) & (m->cap - 1);
    while (m->k[i] && strcmp(m->k[i], key))
        i = (i + 1) & (m->cap - 1);
    return i;
}

static void smap_put(smap_t *m, const char *key, int v)
{
    if ((m->n + 1) * 2 > m->cap) {
        smap_t g = {tide_xcalloc(m->cap ? m->cap * 2 : 64, sizeof *g.k),
                    tide_xcalloc(m->cap ? m->cap * 2 : 64, sizeof *g.v), m->cap ? m->cap * 2 : 64,
                    0};
        for (size_t i = 0; i < m->cap; i++)
            if (m->k[i]) {
                size_t j = smap_find(&g, m->k[i]);
                g.k[j] = m->k[i];
                g.v[j] = m->v[i];
                g.n++;
            }
        free(m->k);
        free(m->v);
        *m = g;
    }
    size_t i = smap_find(m, key);
    if (!m->k[i]) {
        m->k[i] = tide_xstrdup(key);
        m->n++;
    }
    m->v[i] = v;
}

static int smap_get(const smap_t *m, const char *key)
{
    if (!m->cap)
        return -1;
    size_t i = smap_find(m, key);
    return m->k[i] ? m->v[i] : -1;
}

/* Kinds documented in docs/sim.md; other kinds are fault rows. */
static const char *const KNOWN_KINDS[] = {
    "job_start", "ckpt_notice", "job_resize", "job_stop", "replica_start", "replica_stop",
    "lease_grant", "lease_renew", "lease_return", "power_cap", "submit", "ckpt_committed",
    "job_finished", "replica_ready", "version"};

static int kind_known(const char *k)
{
    for (size_t i = 0; i < sizeof KNOWN_KINDS / sizeof KNOWN_KINDS[0]; i++)
        if (!strcmp(KNOWN_KINDS[i], k))
            return 1;
    return 0;
}

/* One reclaim notice on a lease, until the GPUs came back: the lease was
 * returned, or the job shrank off the reclaimed GPUs and the lease was
 * renewed (its notice withdrawn). */
enum { EP_OPEN = 0, EP_RETURNED, EP_SHRUNK, EP_WITHDRAWN };
static const char *const EP_HOW[] = {"open", "returned", "shrunk", "withdrawn"};

typedef struct episode {
    double notice, commit, end;
    int how;      /* EP_* */
    char *reason; /* of the notice (reclaim, priority, window, ...) */
} episode_t;

typedef struct lease {
    double grant, ret, deadline;
    int gpus, late;
    char *job, *ret_reason;
    episode_t *ep;
    size_t nep, capep;
    int open; /* index of the open episode, -1 none */
} lease_t;

typedef struct epol {
    char *name;
    lease_t *l;
    size_t nl, capl;
    int *by_id; /* lease handle -> index in l, -1 none */
    size_t nid;
    smap_t job_lease;
    json_t *kinds;  /* kind -> rows */
    json_t *faults; /* [t, kind, reason, job, service, gpus, value] */
    json_t *versions; /* the model pipeline: [t, "model:vN", what, weight or null] */
    long faults_total;
    /* burst windows from the fault rows: start, end (NAN = open), factor */
    int nbw;
    double bw_s[TIDE_REPORT_MAX_BURSTS], bw_e[TIDE_REPORT_MAX_BURSTS], bw_f[TIDE_REPORT_MAX_BURSTS];
} epol_t;

typedef struct events {
    epol_t *pol;
    size_t npol, cap;
    int present;
} events_t;

static void events_free(events_t *ev)
{
    for (size_t i = 0; i < ev->npol; i++) {
        epol_t *p = &ev->pol[i];
        for (size_t j = 0; j < p->nl; j++) {
            free(p->l[j].job);
            for (size_t k = 0; k < p->l[j].nep; k++)
                free(p->l[j].ep[k].reason);
            free(p->l[j].ep);
            free(p->l[j].ret_reason);
        }
        free(p->l);
        free(p->by_id);
        smap_free(&p->job_lease);
        json_decref(p->kinds);
        json_decref(p->faults);
        json_decref(p->versions);
        free(p->name);
    }
    free(ev->pol);
}

static epol_t *events_policy(events_t *ev, const char *name)
{
    for (size_t i = ev->npol; i-- > 0;)
        if (!strcmp(ev->pol[i].name, name))
            return &ev->pol[i];
    tide_grow((void **)&ev->pol, &ev->cap, ev->npol + 1, sizeof *ev->pol);
    epol_t *p = &ev->pol[ev->npol++];
    memset(p, 0, sizeof *p);
    p->name = tide_xstrdup(name);
    p->kinds = json_object();
    p->faults = json_array();
    p->versions = json_array();
    return p;
}

static lease_t *lease_by_id(epol_t *p, double id)
{
    if (!isfinite(id) || id < 0 || id >= MAX_LEASE_ID || (size_t)id >= p->nid)
        return NULL;
    int k = p->by_id[(size_t)id];
    return k >= 0 ? &p->l[k] : NULL;
}

static lease_t *lease_of_job(epol_t *p, const char *job)
{
    int k = job && *job ? smap_get(&p->job_lease, job) : -1;
    return k >= 0 ? &p->l[k] : NULL;
}

static json_t *jstr_or_null(const char *s) { return s && *s ? json_string(s) : json_null(); }

/* A notice on l at t (nothing if one is already open). */
static void episode_open(lease_t *l, double t, const char *reason)
{
    if (l->open >= 0)
        return;
    episode_t e = {.notice = t, .commit = NAN, .end = NAN, .how = EP_OPEN,
                   .reason = tide_xstrdup_nonempty(reason)};
    l->open = (int)l->nep;
    TIDE_PUSH(l->ep, l->nep, l->capep, e);
}

/* Column indexes of events.csv. */
typedef struct ecols {
    int policy, time, kind, job, service, lease, gpus, reason, deadline, value;
} ecols_t;

/* One events.csv row, its numbers parsed (NAN when absent). */
typedef struct erow {
    const char *kind, *job, *reason, *service;
    double t, lease_id, gpus, deadline, value;
} erow_t;

/* A fault or an unknown kind: listed, and burst windows opened or closed. */
static void fault_row(epol_t *p, const erow_t *e)
{
    p->faults_total++;
    if (json_array_size(p->faults) < TIDE_REPORT_MAX_FAULTS) {
        json_t *r = json_array();
        json_array_append_new(r, tide_json_num(e->t));
        json_array_append_new(r, json_string(e->kind));
        json_array_append_new(r, jstr_or_null(e->reason));
        json_array_append_new(r, jstr_or_null(e->job));
        json_array_append_new(r, jstr_or_null(e->service));
        json_array_append_new(r, tide_json_num(e->gpus));
        json_array_append_new(r, tide_json_num(e->value));
        json_array_append_new(p->faults, r);
    }
    if (!ci_contains(e->kind, "burst") && !(e->reason && ci_contains(e->reason, "burst")))
        return;
    if (ci_contains(e->kind, "end") || ci_contains(e->kind, "stop")) {
        /* closes the latest open window */
        for (int i = p->nbw; i-- > 0;)
            if (isnan(p->bw_e[i]) || p->bw_e[i] == e->t) {
                p->bw_e[i] = e->t;
                break;
            }
    } else if (p->nbw < TIDE_REPORT_MAX_BURSTS) {
        p->bw_s[p->nbw] = e->t;
        p->bw_e[p->nbw] = isfinite(e->deadline) && e->deadline > e->t ? e->deadline : NAN;
        p->bw_f[p->nbw] = e->value;
        p->nbw++;
    }
}

static void ev_lease_grant(epol_t *p, const erow_t *e)
{
    if (!isfinite(e->lease_id) || e->lease_id < 0 || e->lease_id >= MAX_LEASE_ID)
        return;
    size_t id = (size_t)e->lease_id;
    if (id >= p->nid) {
        size_t nn = TIDE_MAX(id + 1, p->nid * 2);
        p->by_id = tide_xrealloc(p->by_id, nn * sizeof *p->by_id);
        for (size_t i = p->nid; i < nn; i++)
            p->by_id[i] = -1;
        p->nid = nn;
    }
    lease_t l = {.grant = e->t,
                 .ret = NAN,
                 .deadline = e->deadline,
                 .gpus = isfinite(e->gpus) ? (int)e->gpus : 0,
                 .job = tide_xstrdup_nonempty(e->job),
                 .open = -1};
    p->by_id[id] = (int)p->nl;
    TIDE_PUSH(p->l, p->nl, p->capl, l);
    if (e->job && *e->job)
        smap_put(&p->job_lease, e->job, (int)p->nl - 1);
}

static void ev_lease_renew(epol_t *p, const erow_t *e)
{
    lease_t *l = lease_by_id(p, e->lease_id);
    if (!l || !isnan(l->ret))
        return;
    if (isfinite(e->deadline))
        l->deadline = e->deadline;
    if (e->reason && *e->reason)
        episode_open(l, e->t, e->reason);
    else if (l->open >= 0) { /* renewed: the notice was withdrawn */
        episode_t *ep = &l->ep[l->open];
        if (isnan(ep->end)) {
            ep->end = e->t;
            ep->how = EP_WITHDRAWN;
        }
        l->open = -1;
    }
}

static void ev_ckpt_notice(epol_t *p, const erow_t *e)
{
    lease_t *l = lease_of_job(p, e->job);
    if (l && isnan(l->ret)) {
        episode_open(l, e->t, e->reason);
        if (isfinite(e->deadline))
            l->deadline = e->deadline;
    }
}

static void ev_ckpt_committed(epol_t *p, const erow_t *e)
{
    lease_t *l = lease_of_job(p, e->job);
    if (l && l->open >= 0 && isnan(l->ep[l->open].commit) && isnan(l->ep[l->open].end))
        l->ep[l->open].commit = e->t;
}

static void ev_job_resize(epol_t *p, const erow_t *e)
{
    lease_t *l = lease_of_job(p, e->job);
    if (l && l->open >= 0 && isnan(l->ep[l->open].end) && e->reason &&
        !strcmp(e->reason, "reclaim")) {
        l->ep[l->open].end = e->t;
        l->ep[l->open].how = EP_SHRUNK;
    }
}

static void ev_lease_return(epol_t *p, const erow_t *e)
{
    lease_t *l = lease_by_id(p, e->lease_id);
    if (!l || !isnan(l->ret))
        return;
    l->ret = e->t;
    l->ret_reason = tide_xstrdup_nonempty(e->reason);
    l->late = (e->reason && !strcmp(e->reason, "deadline")) ||
              (isfinite(l->deadline) && l->deadline > 0 && e->t > l->deadline);
    if (l->open >= 0) {
        episode_t *ep = &l->ep[l->open];
        if (isnan(ep->end) || ep->how == EP_SHRUNK) {
            ep->end = e->t;
            ep->how = EP_RETURNED;
        }
        l->open = -1;
    }
    if (l->job && smap_get(&p->job_lease, l->job) == (int)(l - p->l))
        smap_put(&p->job_lease, l->job, -1);
}

/* The model pipeline's rows (at most TIDE_REPORT_MAX_VERSION_ROWS). */
static void ev_version(epol_t *p, const erow_t *e)
{
    if (json_array_size(p->versions) >= TIDE_REPORT_MAX_VERSION_ROWS || !e->job || !e->reason)
        return;
    json_array_append_new(p->versions, json_pack("[o,s,s,o]", tide_json_num(e->t), e->job,
                                                 e->reason, tide_json_num(e->value)));
}

/* What the lease timeline reads from each event kind. */
static const struct {
    const char *kind;
    void (*fn)(epol_t *p, const erow_t *e);
} event_fns[] = {
    {"lease_grant", ev_lease_grant},       {"lease_renew", ev_lease_renew},
    {"ckpt_notice", ev_ckpt_notice},       {"ckpt_committed", ev_ckpt_committed},
    {"job_resize", ev_job_resize},         {"lease_return", ev_lease_return},
    {"version", ev_version},
};

/* A number field, NAN when absent or not a number. */
static double field_or_nan(tide_csv_t *c, int col)
{
    double v;
    return field_num(tide_csv_field(c, col), &v) == 0 ? v : NAN;
}

static void event_row(epol_t *p, const ecols_t *ec, tide_csv_t *c)
{
    erow_t e = {.kind = tide_csv_field(c, ec->kind),
                .job = tide_csv_field(c, ec->job),
                .reason = tide_csv_field(c, ec->reason),
                .service = tide_csv_field(c, ec->service)};
    if (!e.kind || !*e.kind || field_num(tide_csv_field(c, ec->time), &e.t) != 0 || !isfinite(e.t))
        return;
    e.lease_id = field_or_nan(c, ec->lease);
    e.gpus = field_or_nan(c, ec->gpus);
    e.deadline = field_or_nan(c, ec->deadline);
    e.value = field_or_nan(c, ec->value);

    json_t *cnt = json_object_get(p->kinds, e.kind);
    if (cnt)
        json_integer_set(cnt, json_integer_value(cnt) + 1);
    else
        tide_json_set(p->kinds, e.kind, json_integer(1));

    if (!kind_known(e.kind) || (e.reason && !strcmp(e.reason, "failure"))) {
        fault_row(p, &e);
        return;
    }
    for (size_t i = 0; i < sizeof event_fns / sizeof event_fns[0]; i++)
        if (!strcmp(e.kind, event_fns[i].kind)) {
            event_fns[i].fn(p, &e);
            return;
        }
}

static int events_read(const char *path, events_t *ev, tide_error_t *err)
{
    struct stat st;
    if (stat(path, &st) != 0 && errno == ENOENT)
        return 0; /* optional */
    tide_csv_t *c = tide_csv_open_file(path, err);
    if (!c)
        return -1;
    ev->present = 1;
    ecols_t ec = {tide_csv_col(c, "policy"), tide_csv_col(c, "time_s"), tide_csv_col(c, "kind"),
                  tide_csv_col(c, "job"), tide_csv_col(c, "service"), tide_csv_col(c, "lease"),
                  tide_csv_col(c, "gpus"), tide_csv_col(c, "reason"),
                  tide_csv_col(c, "deadline_s"), tide_csv_col(c, "value")};
    if (ec.policy < 0 || ec.time < 0 || ec.kind < 0) {
        tide_csv_close(c);
        return tide_errf(err, TIDE_EINVAL, "%s: no 'policy', 'time_s' and 'kind' columns (not a "
                         "tide sim event log)", path);
    }
    int r;
    epol_t *p = NULL;
    while ((r = tide_csv_next(c, err)) != 0) {
        if (r < 0) {
            if (tide_csv_recoverable(c))
                continue; /* a short row: skip it */
            tide_csv_close(c);
            return -1;
        }
        const char *pol = tide_csv_field(c, ec.policy);
        if (!pol || !*pol)
            continue;
        if (!p || strcmp(p->name, pol))
            p = events_policy(ev, pol);
        event_row(p, &ec, c);
    }
    tide_csv_close(c);
    return 0;
}

static int lease_pick_cmp(const void *a, const void *b)
{
    /* entries are (noticed ? 0 : 1) * 2^32 + index, compared as integers */
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return (x > y) - (x < y);
}

static int lease_idx_cmp(const void *a, const void *b)
{
    unsigned long long x = *(const unsigned long long *)a & 0xffffffffULL;
    unsigned long long y = *(const unsigned long long *)b & 0xffffffffULL;
    return (x > y) - (x < y);
}

/* {total, shown, noticed, late, episodes, rows: [grant, return, gpus,
 * deadline, late, job, return_reason, [[notice, commit, end, how, reason],
 * ...]]} */
static json_t *leases_json(const epol_t *p)
{
    json_t *o = json_object();
    unsigned long long *pick = tide_xmalloc((p->nl ? p->nl : 1) * sizeof *pick);
    long noticed = 0, late = 0, episodes = 0;
    for (size_t i = 0; i < p->nl; i++) {
        int has = p->l[i].nep > 0;
        noticed += has;
        episodes += (long)p->l[i].nep;
        late += p->l[i].late;
        pick[i] = ((unsigned long long)(has ? 0 : 1) << 32) | i;
    }
    qsort(pick, p->nl, sizeof *pick, lease_pick_cmp);
    size_t shown = TIDE_MIN(p->nl, (size_t)TIDE_REPORT_MAX_LEASES);
    qsort(pick, shown, sizeof *pick, lease_idx_cmp);
    json_t *rows = json_array();
    for (size_t j = 0; j < shown; j++) {
        const lease_t *l = &p->l[pick[j] & 0xffffffffULL];
        json_t *r = json_array();
        json_array_append_new(r, tide_json_num(l->grant));
        json_array_append_new(r, tide_json_num(l->ret));
        json_array_append_new(r, json_integer(l->gpus));
        json_array_append_new(r, tide_json_num(l->deadline));
        json_array_append_new(r, json_integer(l->late));
        json_array_append_new(r, jstr_or_null(l->job));
        json_array_append_new(r, jstr_or_null(l->ret_reason));
        json_t *eps = json_array();
        for (size_t k = 0; k < l->nep; k++) {
            const episode_t *e = &l->ep[k];
            json_t *x = json_array();
            json_array_append_new(x, tide_json_num(e->notice));
            json_array_append_new(x, tide_json_num(e->commit));
            json_array_append_new(x, tide_json_num(e->end));
            json_array_append_new(x, json_string(EP_HOW[e->how]));
            json_array_append_new(x, jstr_or_null(e->reason));
            json_array_append_new(eps, x);
        }
        json_array_append_new(r, eps);
        json_array_append_new(rows, r);
    }
    free(pick);
    tide_json_set(o, "total", json_integer((json_int_t)p->nl));
    tide_json_set(o, "shown", json_integer((json_int_t)shown));
    tide_json_set(o, "noticed", json_integer(noticed));
    tide_json_set(o, "episodes", json_integer(episodes));
    tide_json_set(o, "late", json_integer(late));
    tide_json_set(o, "rows", rows);
    return o;
}

/* ------------------------------------------------------------ burst window */

static int obj_num(json_t *o, const char *const *keys, double *out)
{
    for (; *keys; keys++) {
        json_t *v = json_object_get(o, *keys);
        if (json_is_number(v)) {
            *out = json_number_value(v);
            return 1;
        }
    }
    return 0;
}

/* Widen [*s, *e] by the window described by object o (start + end or
 * duration). Returns 1 if o had a start. */
static int burst_from_obj(json_t *o, double *s, double *e)
{
    static const char *const starts[] = {"start_s", "start", "from_s", "from", "at_s", "at",
                                         "begin_s", "t0", "time_s", NULL};
    static const char *const ends[] = {"end_s", "end", "until_s", "until", "to_s", "t1", NULL};
    static const char *const durs[] = {"duration_s", "duration", "for_s", "length_s", "len_s",
                                       NULL};
    double a, b, d;
    if (!json_is_object(o) || !obj_num(o, starts, &a))
        return 0;
    if (!obj_num(o, ends, &b))
        b = obj_num(o, durs, &d) ? a + d : NAN;
    if (isnan(*s) || a < *s)
        *s = a;
    if (!isnan(b) && (isnan(*e) || b > *e))
        *e = b;
    return 1;
}

/* Look for a key mentioning "burst" in a faults object (depth-limited) and
 * take the window(s) it describes. */
static int burst_from_json(json_t *v, int depth, double *s, double *e)
{
    if (!json_is_object(v) || depth > 4)
        return 0;
    const char *k;
    json_t *x;
    int found = 0;
    json_object_foreach(v, k, x) {
        if (ci_contains(k, "burst")) {
            if (json_is_array(x)) {
                size_t i;
                json_t *y;
                json_array_foreach(x, i, y) found |= burst_from_obj(y, s, e);
            } else if (burst_from_obj(x, s, e)) {
                found = 1;
            } else {
                found |= burst_from_json(x, depth + 1, s, e);
            }
        } else if (json_is_object(x)) {
            found |= burst_from_json(x, depth + 1, s, e);
        }
    }
    return found;
}

/* One burst window [s, e) (e NAN = end unknown: the first hour is used). */
static json_t *window_of(double s, double e, double factor, const char *source,
                         const tline_t *t, const tpol_t *tp, double horizon)
{
    int end_known = !isnan(e) && e > s;
    if (!end_known)
        e = s + 3600;
    if (horizon > 0 && e > horizon)
        e = horizon;
    json_t *o = tp ? window_json(t, tp, s, e) : NULL;
    if (!o) {
        o = json_object();
        tide_json_set(o, "start", tide_json_num(s));
        tide_json_set(o, "end", tide_json_num(e));
    }
    tide_json_set(o, "source", json_string(source));
    tide_json_set(o, "end_known", json_boolean(end_known));
    if (isfinite(factor) && factor > 0 && factor <= 1000)
        tide_json_set(o, "factor", tide_json_num(factor));
    /* the same hours one day earlier, as a reference */
    if (tp && s >= 86400) {
        json_t *ref = window_json(t, tp, s - 86400, e - 86400);
        if (ref)
            tide_json_set(o, "day_before", ref);
    }
    return o;
}

/* The burst windows of a policy: from the burst rows of events.csv, else from
 * summary.json faults (the policy's, then the global one); NULL if none. */
static json_t *burst_json(json_t *summary, const char *policy, const epol_t *ep,
                          const tline_t *t, const tpol_t *tp, double horizon)
{
    json_t *a = json_array();
    if (ep)
        for (int i = 0; i < ep->nbw; i++)
            json_array_append_new(a, window_of(ep->bw_s[i], ep->bw_e[i], ep->bw_f[i],
                                               "events.csv", t, tp, horizon));
    if (json_array_size(a) == 0) {
        double s = NAN, e = NAN;
        json_t *pol = json_object_get(json_object_get(summary, "policies"), policy);
        if (burst_from_json(json_object_get(pol, "faults"), 0, &s, &e))
            json_array_append_new(a, window_of(s, e, NAN, "summary.json policies.<policy>.faults",
                                               t, tp, horizon));
        else if (burst_from_json(json_object_get(summary, "faults"), 0, &s, &e))
            json_array_append_new(a, window_of(s, e, NAN, "summary.json faults", t, tp, horizon));
    }
    if (json_array_size(a) == 0) {
        json_decref(a);
        return NULL;
    }
    return a;
}

/* ------------------------------------------------------------------- output */

static void html_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* The JSON, with '<' written as \u003c so that nothing in the data can end
 * the <script> element or open a comment ('<' only occurs inside strings). */
static void write_json_script(FILE *f, const char *js)
{
    for (const char *s = js; *s; s++) {
        if (*s == '<')
            fputs("\\u003c", f);
        else
            fputc(*s, f);
    }
}

static const char PAGE_BODY[] =
    "<header><h1>tide report</h1><div id=\"meta\" class=\"meta\"></div>"
    "<nav><a href=\"#compare\">Policies compared</a><a href=\"#questions-sec\">Five questions</a>"
    "<a href=\"#per-policy\">Per policy</a><a href=\"#teams\">Teams</a>"
    "<a href=\"#signals\">Capacity signals</a><a href=\"#sweep\">Sweep</a>"
    "<a href=\"#notes\">Notes</a></nav></header>\n"
    "<main>\n"
    "<section id=\"compare\"><h2>Policies compared</h2>"
    "<div id=\"summary-table\" class=\"tablebox\"></div>"
    "<div class=\"chart\" id=\"chart-pareto\"></div></section>\n"
    "<section id=\"sweep\"><h2>Parameter sweep</h2><div class=\"chart\" id=\"chart-sweep\"></div>"
    "<div id=\"sweep-table\" class=\"tablebox\"></div></section>\n"
    "<section id=\"per-policy\"><h2>Per policy</h2>"
    "<div class=\"controls\"><div id=\"policy-tabs\" class=\"tabs\" role=\"tablist\"></div>"
    "<div id=\"day-controls\" class=\"daybar\"></div></div>\n"
    "<div id=\"questions-sec\"><h3 class=\"sub\">The five questions</h3>"
    "<div id=\"questions\"></div></div>\n"
    "<div class=\"chart\" id=\"chart-gpu-state\"></div>\n"
    "<div class=\"chart\" id=\"chart-forecast\"></div>\n"
    "<div class=\"chart\" id=\"chart-gpu-class\"></div>\n"
    "<div class=\"chart\" id=\"chart-training\"></div>\n"
    "<div class=\"chart\" id=\"chart-leases\"></div>\n"
    "<div class=\"chart\" id=\"chart-pipeline\"></div>\n"
    "<div class=\"chart\" id=\"chart-storage\"></div>\n"
    "<div id=\"uplink-table\" class=\"tablebox\"></div>\n"
    "<div class=\"chart\" id=\"chart-power\"></div>\n"
    "<div id=\"power-table\" class=\"tablebox\"></div>\n"
    "<div class=\"chart\" id=\"chart-class-hours\"></div>\n"
    "<div class=\"grid2\"><div class=\"chart\" id=\"chart-team-hours\"></div>"
    "<div class=\"chart\" id=\"chart-team-loss\"></div></div>\n"
    "<div id=\"fault-list\"></div>\n"
    "</section>\n"
    "<section id=\"teams\"><h2>Teams</h2>"
    "<div class=\"controls\"><div id=\"team-policy-tabs\" class=\"tabs\" role=\"tablist\"></div>"
    "<div id=\"team-tabs\" class=\"tabs\" role=\"tablist\"></div></div>\n"
    "<div id=\"teams-note\" class=\"note\"></div>\n"
    "<div id=\"team-card\"><div id=\"team-figures\" class=\"card\"></div>\n"
    "<div class=\"chart\" id=\"chart-team-class-time\"></div>\n"
    "<div class=\"chart\" id=\"chart-team-state-time\"></div>\n"
    "<div class=\"chart\" id=\"chart-team-chargeback\"></div></div>\n"
    "<h3 class=\"sub\">All teams</h3>"
    "<div class=\"chart\" id=\"chart-teams-compare\"></div>\n"
    "<div id=\"teams-table\" class=\"tablebox\"></div>\n"
    "<h3 class=\"sub\">Services</h3><div id=\"services-table\" class=\"tablebox\"></div>\n"
    "</section>\n"
    "<section id=\"signals\"><h2>Capacity signals</h2><div id=\"signals-body\"></div>"
    "</section>\n"
    "<section id=\"notes\"><h2>Notes</h2><div id=\"notes-body\"></div></section>\n"
    "</main>\n"
    "<div id=\"tip\" class=\"tip\" hidden></div>\n"
    "<pre id=\"errors\" class=\"errors\" hidden></pre>\n";

/* Installed before the main script so that even a syntax error in it is seen. */
static const char ERROR_HOOK[] =
    "window.__errors=[];window.onerror=function(m,s,l,c){window.__errors.push(String(m)+"
    "(l?' (line '+l+':'+c+')':''));var e=document.getElementById('errors');if(e){e.hidden="
    "false;e.textContent=window.__errors.join('\\n');}document.body&&document.body.setAttribute("
    "'data-errors',String(window.__errors.length));};";

static int write_html(FILE *f, const char *dir, const char *json)
{
    const char *base = strrchr(dir, '/');
    base = base && base[1] ? base + 1 : dir;
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<title>tide report: ", f);
    html_escape(f, base);
    fputs("</title>\n<style>\n", f);
    fputs(tide_report_css, f);
    fputs("</style>\n<script>", f);
    fputs(ERROR_HOOK, f);
    fputs("</script>\n</head>\n<body data-errors=\"0\">\n", f);
    fputs(PAGE_BODY, f);
    fputs("<script type=\"application/json\" id=\"tide-data\">", f);
    write_json_script(f, json);
    fputs("</script>\n<script>\n", f);
    fputs(tide_chart_js, f);
    fputs(tide_report_js, f);
    fputs("</script>\n</body>\n</html>\n", f);
    return ferror(f) ? -1 : 0;
}

/* --------------------------------------------------------------------- API */

static json_t *policy_order(json_t *summary, const tline_t *t)
{
    json_t *a = json_array();
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(summary, "policies"), k, v) json_array_append_new(
        a, json_string(k));
    for (size_t i = 0; i < t->npol; i++) {
        int have = 0;
        size_t j;
        json_array_foreach(a, j, v) have |= !strcmp(json_string_value(v), t->pol[i].name);
        if (!have)
            json_array_append_new(a, json_string(t->pol[i].name));
    }
    return a;
}

static json_t *load_json(const char *path, int required, tide_error_t *err)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j) {
        struct stat st;
        if (stat(path, &st) != 0)
            tide_errf(err, required ? TIDE_ENOENT : TIDE_OK, "%s: %s", path, strerror(errno));
        else
            tide_errf(err, TIDE_EINVAL, "%s:%d: %s", path, je.line, je.text);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        tide_errf(err, TIDE_EINVAL, "%s: not a JSON object", path);
        return NULL;
    }
    return j;
}

/* Mtime in nanoseconds, or -1. */
static long long mtime_ns(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    return (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
}

/* The per-policy sections: timeline, misses, leases, faults, event kinds,
 * storage, burst and the model pipeline, each an object keyed by policy name
 * in `order`. */
static void policy_sections(json_t *root, json_t *order, json_t *summary, tline_t *tl,
                            events_t *ev, double horizon)
{
    json_t *jt = json_object(), *jm = json_object(), *jl = json_object(), *jf = json_object(),
           *jk = json_object(), *js = json_object(), *jb = json_object(), *jp = json_object();
    size_t i;
    json_t *pv;
    json_array_foreach(order, i, pv) {
        const char *name = json_string_value(pv);
        tpol_t *tp = NULL;
        for (size_t j = 0; j < tl->npol; j++)
            if (!strcmp(tl->pol[j].name, name))
                tp = &tl->pol[j];
        epol_t *ep = NULL;
        for (size_t j = 0; j < ev->npol; j++)
            if (!strcmp(ev->pol[j].name, name))
                ep = &ev->pol[j];
        if (tp) {
            tide_json_set(jt, name, tl_policy_json(tl, tp));
            tide_json_set(jm, name, misses_json(tl, tp));
            json_t *pf = json_object_get(
                json_object_get(json_object_get(summary, "policies"), name), "faults");
            json_t *lim = json_object_get(json_object_get(pf, "storage"), "gbps");
            if (!json_is_number(lim))
                lim = json_object_get(json_object_get(json_object_get(summary, "faults"),
                                                      "storage"), "gbps");
            json_t *sj = storage_json(tl, tp, json_is_number(lim) ? json_number_value(lim) : NAN);
            tide_json_set(js, name, sj ? sj : json_null());
        }
        if (ep) {
            tide_json_set(jl, name, leases_json(ep));
            json_t *fo = json_object();
            tide_json_set(fo, "total", json_integer(ep->faults_total));
            tide_json_set(fo, "rows", json_incref(ep->faults));
            tide_json_set(jf, name, fo);
            tide_json_set(jk, name, json_incref(ep->kinds));
            json_t *pf = json_object_get(
                json_object_get(json_object_get(summary, "policies"), name), "pipeline");
            tide_json_set(jp, name, json_pack("{s:O,s:O}", "rows", ep->versions, "figures",
                                              pf ? pf : json_null()));
        }
        json_t *b = burst_json(summary, name, ep, tl, tp, horizon);
        tide_json_set(jb, name, b ? b : json_null());
    }
    tide_json_set(root, "timeline", jt);
    tide_json_set(root, "misses", jm);
    tide_json_set(root, "leases", jl);
    tide_json_set(root, "faults", jf);
    tide_json_set(root, "kinds", jk);
    tide_json_set(root, "storage", js);
    tide_json_set(root, "burst", jb);
    tide_json_set(root, "pipeline", jp);
}

/* Teams from usage.csv, bucketed on each policy's timeline intervals. */
static json_t *teams_section(const char *dir, json_t *summary, json_t *order, tline_t *tl,
                             double horizon)
{
    tide_report_grid_t *grid = tide_xcalloc(tl->npol ? tl->npol : 1, sizeof *grid);
    for (size_t j = 0; j < tl->npol; j++) {
        const tpol_t *tp = &tl->pol[j];
        grid[j].policy = tp->name;
        grid[j].n = tp->n;
        grid[j].t = tide_xmalloc((tp->n ? tp->n : 1) * sizeof *grid[j].t);
        for (size_t r = 0; r < tp->n; r++)
            grid[j].t[r] = tval(tl, tp, r, 0);
        double last = tp->n ? tval(tl, tp, tp->n - 1, 0) : 0;
        grid[j].end = horizon > last ? horizon : last + (tp->n ? row_dt(tl, tp, tp->n - 1) : 0);
    }
    json_t *teams = tide_report_teams(dir, summary, order, grid, tl->npol);
    for (size_t j = 0; j < tl->npol; j++)
        free(grid[j].t);
    free(grid);

    return teams;
}

/* Write the page with the data root to out_html. Returns 0 or -1 (EIO). */
static int write_report_file(const char *out_html, const char *dir, const json_t *root,
                             tide_error_t *err)
{
    char *text = json_dumps(root, JSON_COMPACT | JSON_ESCAPE_SLASH | JSON_PRESERVE_ORDER |
                                      JSON_REAL_PRECISION(10));
    if (!text)
        return tide_errf(err, TIDE_EIO, "cannot encode the report data");
    FILE *f = fopen(out_html, "w");
    if (!f) {
        tide_errf(err, TIDE_EIO, "cannot write %s: %s", out_html, strerror(errno));
        free(text);
        return -1;
    }
    int bad = write_html(f, dir, text) != 0;
    free(text);
    if (fclose(f) != 0 || bad)
        return tide_errf(err, TIDE_EIO, "cannot write %s: %s", out_html, strerror(errno));
    return 0;
}

int tide_report_write(const char *dir, const char *out_html, tide_error_t *err)
{
    if (!dir || !*dir)
        return tide_errf(err, TIDE_EINVAL, "no directory given");
    struct stat st;
    if (stat(dir, &st) != 0)
        return tide_errf(err, TIDE_ENOENT, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return tide_errf(err, TIDE_EINVAL, "%s is not a directory", dir);
    char p_sum[PATH_N], p_tl[PATH_N], p_ev[PATH_N], p_sw[PATH_N], p_out[PATH_N];
    snprintf(p_sum, sizeof p_sum, "%s/summary.json", dir);
    snprintf(p_tl, sizeof p_tl, "%s/timeline.csv", dir);
    snprintf(p_ev, sizeof p_ev, "%s/events.csv", dir);
    snprintf(p_sw, sizeof p_sw, "%s/sweep.json", dir);
    snprintf(p_out, sizeof p_out, "%s/report.html", dir);
    if (!out_html || !*out_html)
        out_html = p_out;

    tline_t tl = {0};
    events_t ev = {0};
    json_t *summary = load_json(p_sum, 1, err), *root = NULL, *sweep = NULL;
    int rc = -1;
    if (!summary)
        goto out;
    if (!json_is_object(json_object_get(summary, "policies"))) {
        tide_errf(err, TIDE_EINVAL, "%s: no 'policies' object (not a tide sim summary)", p_sum);
        goto out;
    }
    if (tline_read(p_tl, &tl, err) != 0 || events_read(p_ev, &ev, err) != 0)
        goto out;
    if (mtime_ns(p_sw) >= 0 && mtime_ns(p_sw) >= mtime_ns(p_sum)) {
        tide_error_t serr = {0};
        sweep = load_json(p_sw, 0, &serr); /* a bad sweep.json only loses the chart */
    }
    double horizon = json_number_value(json_object_get(summary, "horizon_s"));

    root = json_object();
    tide_json_set(root, "format", json_integer(1));
    tide_json_set(root, "dir", json_string(dir));
    json_t *order = policy_order(summary, &tl);
    tide_json_set(root, "policies", order);
    tide_json_set(root, "summary", json_incref(summary));
    json_t *cols = json_array();
    for (int k = 1; k < tl.ncols; k++)
        if (!tl.cols[k].bad)
            json_array_append_new(cols, json_string(tl.cols[k].name));
    tide_json_set(root, "timeline_columns", cols);
    json_t *extra = json_array();
    for (int k = 1; k < tl.ncols; k++)
        if (tl.cols[k].extra && !tl.cols[k].bad)
            json_array_append_new(extra, json_string(tl.cols[k].name));
    tide_json_set(root, "extra_columns", extra);
    tide_json_set(root, "events_present", json_boolean(ev.present));

    policy_sections(root, order, summary, &tl, &ev, horizon);
    tide_json_set(root, "sweep", sweep ? json_incref(sweep) : json_null());

    tide_json_set(root, "teams", teams_section(dir, summary, order, &tl, horizon));

    /* capacity signals (default thresholds), every policy; a failure only
     * loses the section */
    tide_error_t serr = {0};
    json_t *sig = tide_signals_compute(dir, NULL, NULL, &serr);
    if (!sig) {
        sig = json_object();
        tide_json_set(sig, "error",
                      json_string(serr.msg[0] ? serr.msg : "capacity signals failed"));
    }
    tide_json_set(root, "signals", sig);

    if (write_report_file(out_html, dir, root, err) < 0)
        goto out;
    rc = 0;
out:
    json_decref(root);
    json_decref(sweep);
    json_decref(summary);
    tline_free(&tl);
    events_free(&ev);
    return rc;
}
