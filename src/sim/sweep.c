/* Parameter sweeps: parse a grid, run tide_sim_run per point on a pool of
 * threads (each point owns its options, output directory and error), collect
 * the per-policy figures from each point's summary.json, write sweep.csv and
 * sweep.json, and print the Pareto front. */
#include "sim/sweep.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/csv.h"
#include "util/fs.h"
#include "util/util.h"

#define PATH_N 4096

/* ------------------------------------------------------------------ keys */

typedef struct keydef {
    const char *name;
    int integer;  /* values must be whole numbers */
    int duration; /* values parse as durations (90, 5m, 1h) */
    double max;   /* largest value (before the cluster check) */
} keydef_t;

static const keydef_t KEYS[TIDE_SWEEP_NKEYS] = {
    [TIDE_SWEEP_RESERVE] = {"reserve", 1, 0, 1e7},
    [TIDE_SWEEP_MARGIN] = {"margin", 0, 0, 1.0},
    [TIDE_SWEEP_SPLIT] = {"split", 1, 0, 1e7},
    [TIDE_SWEEP_LEAD] = {"lead", 1, 1, 366.0 * 86400},
    [TIDE_SWEEP_HOLD] = {"hold", 1, 1, 366.0 * 86400},
};

const char *tide_sweep_key_name(int key)
{
    return key >= 0 && key < TIDE_SWEEP_NKEYS ? KEYS[key].name : "?";
}

static int key_find(const char *s, size_t n)
{
    for (int k = 0; k < TIDE_SWEEP_NKEYS; k++)
        if (strlen(KEYS[k].name) == n && !strncmp(KEYS[k].name, s, n))
            return k;
    return -1;
}

/* ------------------------------------------------------------------ grid */

void tide_sweep_grid_free(tide_sweep_grid_t *g)
{
    if (!g)
        return;
    for (size_t a = 0; a < g->n_axes; a++)
        free(g->axis[a].v);
    memset(g, 0, sizeof *g);
}

/* One number of a range: a duration for duration keys, else a real. */
static int parse_value(const keydef_t *k, const char *s, double *out)
{
    if (k->duration) {
        int64_t d;
        if (tide_parse_duration(s, &d) != 0)
            return -1;
        *out = (double)d;
        return 0;
    }
    return tide_parse_double(s, out);
}

static int check_value(const keydef_t *k, double v)
{
    if (!isfinite(v) || v < 0 || v > k->max)
        return -1;
    if (k->integer && v != floor(v))
        return -1;
    return 0;
}

/* Parse "KEY=RANGE" (item[0..n)) into axis. */
static int parse_item(const char *item, size_t n, tide_sweep_grid_t *g, tide_error_t *err)
{
    char buf[256];
    if (n == 0)
        return tide_errf(err, TIDE_EINVAL, "--sweep: empty item");
    if (n >= sizeof buf)
        return tide_errf(err, TIDE_EINVAL, "--sweep: item too long ('%.40s...')", item);
    memcpy(buf, item, n);
    buf[n] = '\0';
    char orig[256]; /* buf is split in place below; messages quote the item */
    memcpy(orig, buf, n + 1);
    char *eq = strchr(buf, '=');
    if (!eq)
        return tide_errf(err, TIDE_EINVAL, "--sweep: '%s' is not KEY=VALUE or KEY=LO:HI:STEP",
                         buf);
    int key = key_find(buf, (size_t)(eq - buf));
    if (key < 0)
        return tide_errf(err, TIDE_EINVAL,
                         "--sweep: '%s': unknown key '%.*s' (known: reserve, margin, split, "
                         "lead, hold)", buf, (int)(eq - buf), buf);
    for (size_t a = 0; a < g->n_axes; a++)
        if (g->axis[a].key == key)
            return tide_errf(err, TIDE_EINVAL, "--sweep: key '%s' given twice", KEYS[key].name);
    if (g->n_axes >= TIDE_SWEEP_NKEYS) /* cannot happen: keys are distinct */
        return tide_errf(err, TIDE_EINVAL, "--sweep: too many items (one per key)");
    const keydef_t *k = &KEYS[key];
    char *parts[3];
    int np = 0;
    char *rest = eq + 1;
    /* strtok_r would merge empty fields ("1::2"); split by hand */
    for (char *s = rest;; s++) {
        if (*s == ':' || *s == '\0') {
            int end = *s == '\0';
            if (np == 3)
                return tide_errf(err, TIDE_EINVAL, "--sweep: '%s': a range is LO:HI:STEP", orig);
            parts[np++] = rest;
            *s = '\0';
            rest = s + 1;
            if (end)
                break;
        }
    }
    if (np == 2)
        return tide_errf(err, TIDE_EINVAL, "--sweep: '%s': a range is LO:HI:STEP (the step is "
                         "required)", orig);
    double lo = 0, hi = 0, step = 0;
    const char *what = k->duration ? "a duration (300, 5m, 1h)" :
                       k->integer  ? "a whole number" : "a number";
    for (int i = 0; i < np; i++) {
        double v;
        if (parse_value(k, parts[i], &v) != 0)
            return tide_errf(err, TIDE_EINVAL, "--sweep: %s: '%s' is not %s", k->name,
                             parts[i], what);
        if (i == 0)
            lo = v;
        else if (i == 1)
            hi = v;
        else
            step = v;
    }
    if (np == 1) {
        hi = lo;
        step = 1;
    }
    if (check_value(k, lo) != 0 || check_value(k, hi) != 0)
        return tide_errf(err, TIDE_EINVAL, "--sweep: %s: values must be %s in 0..%g", k->name,
                         k->integer ? "whole numbers" : "numbers", k->max);
    if (!(step > 0) || !isfinite(step) || (k->integer && step != floor(step)))
        return tide_errf(err, TIDE_EINVAL, "--sweep: %s: the step must be %s > 0", k->name,
                         k->integer ? "a whole number" : "a number");
    if (lo > hi)
        return tide_errf(err, TIDE_EINVAL, "--sweep: %s: LO %g is above HI %g", k->name, lo, hi);
    double count = floor((hi - lo) / step + 1e-9) + 1;
    if (count > TIDE_SWEEP_MAX_VALUES)
        return tide_errf(err, TIDE_EINVAL, "--sweep: %s: %.0f values (at most %d)", k->name,
                         count, TIDE_SWEEP_MAX_VALUES);
    tide_sweep_axis_t *ax = &g->axis[g->n_axes];
    ax->key = key;
    ax->n = (size_t)count;
    ax->v = tide_xmalloc(ax->n * sizeof *ax->v);
    size_t m = 0;
    for (size_t i = 0; i < ax->n; i++) {
        double v = lo + (double)i * step;
        v = k->integer ? round(v) : round(v * 1e9) / 1e9; /* 0.15, not 0.15000000000000002 */
        v = v > hi ? hi : v;
        if (m == 0 || v > ax->v[m - 1]) /* a step below the rounding merges values */
            ax->v[m++] = v;
    }
    ax->n = m;
    g->n_axes++;
    return 0;
}

int tide_sweep_parse(const char *spec, tide_sweep_grid_t *g, tide_error_t *err)
{
    memset(g, 0, sizeof *g);
    if (!spec || !*spec)
        return tide_errf(err, TIDE_EINVAL, "--sweep: empty grid (like reserve=24:64:8)");
    const char *s = spec;
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        if (parse_item(s, n, g, err) != 0) {
            tide_sweep_grid_free(g);
            return -1;
        }
        if (!comma)
            break;
        s = comma + 1;
    }
    size_t points = 1;
    for (size_t a = 0; a < g->n_axes; a++) {
        if (points > TIDE_SWEEP_MAX_POINTS / g->axis[a].n) {
            tide_sweep_grid_free(g);
            return tide_errf(err, TIDE_EINVAL, "--sweep: more than %d points",
                             TIDE_SWEEP_MAX_POINTS);
        }
        points *= g->axis[a].n;
    }
    g->n_points = points;
    return 0;
}

void tide_sweep_point(const tide_sweep_grid_t *g, size_t i, double *vals)
{
    for (size_t a = g->n_axes; a-- > 0;) {
        const tide_sweep_axis_t *ax = &g->axis[a];
        vals[a] = ax->v[i % ax->n];
        i /= ax->n;
    }
}

const char *tide_sweep_label(const tide_sweep_grid_t *g, size_t i, char *buf, size_t n)
{
    double vals[TIDE_SWEEP_NKEYS];
    tide_sweep_point(g, i, vals);
    size_t off = 0;
    if (n)
        buf[0] = '\0';
    for (size_t a = 0; a < g->n_axes && off < n; a++) {
        int w = snprintf(buf + off, n - off, "%s%s=%.10g", a ? "," : "",
                         KEYS[g->axis[a].key].name, vals[a]);
        if (w < 0)
            break;
        off += (size_t)w;
    }
    return buf;
}

int tide_sweep_apply(const tide_sweep_grid_t *g, size_t i, int gpus, tide_config_t *cfg,
                     tide_error_t *err)
{
    double vals[TIDE_SWEEP_NKEYS];
    tide_sweep_point(g, i, vals);
    for (size_t a = 0; a < g->n_axes; a++) {
        double v = vals[a];
        switch (g->axis[a].key) {
        case TIDE_SWEEP_RESERVE:
            if (v > gpus)
                return tide_errf(err, TIDE_EINVAL, "--sweep: reserve=%g but the cluster has %d "
                                 "GPUs", v, gpus);
            cfg->reserve_gpus = (int)v;
            break;
        case TIDE_SWEEP_SPLIT:
            if (v > gpus)
                return tide_errf(err, TIDE_EINVAL, "--sweep: split=%g inference GPUs but the "
                                 "cluster has %d", v, gpus);
            cfg->split_inf = (int)v;
            break;
        case TIDE_SWEEP_MARGIN:
            if (v > cfg->margin_max)
                return tide_errf(err, TIDE_EINVAL, "--sweep: margin=%g is above the margin "
                                 "ceiling %g", v, cfg->margin_max);
            cfg->margin_min = v;
            break;
        case TIDE_SWEEP_LEAD: cfg->lead_extra_s = (tide_time_t)v; break;
        case TIDE_SWEEP_HOLD: cfg->scale_down_hold_s = (tide_time_t)v; break;
        default: return tide_errf(err, TIDE_EINVAL, "--sweep: bad key %d", g->axis[a].key);
        }
    }
    return 0;
}

int tide_sweep_check(const tide_sweep_grid_t *g, int gpus, const tide_config_t *base,
                     tide_error_t *err)
{
    for (size_t i = 0; i < g->n_points; i++) {
        tide_config_t cfg = *base;
        if (tide_sweep_apply(g, i, gpus, &cfg, err) != 0)
            return -1;
    }
    return 0;
}

/* ----------------------------------------------------------------- front */

typedef struct frow {
    double u, s;
    size_t i;
} frow_t;

static int front_cmp(const void *a, const void *b)
{
    const frow_t *x = a, *y = b;
    if (x->u != y->u)
        return x->u > y->u ? -1 : 1;
    if (x->s != y->s)
        return x->s > y->s ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

size_t tide_sweep_front(const tide_sweep_row_t *rows, size_t n, size_t **out)
{
    frow_t *f = tide_xmalloc((n ? n : 1) * sizeof *f);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].ok && isfinite(rows[i].useful_utilization) && isfinite(rows[i].slo_attainment))
            f[m++] = (frow_t){rows[i].useful_utilization, rows[i].slo_attainment, i};
    qsort(f, m, sizeof *f, front_cmp);
    size_t *res = tide_xmalloc((m ? m : 1) * sizeof *res), k = 0;
    double best = -INFINITY; /* best slo among rows of strictly higher useful */
    for (size_t a = 0; a < m;) {
        size_t b = a;
        while (b < m && f[b].u == f[a].u)
            b++;
        double gmax = f[a].s; /* sorted: the group's first has the highest slo */
        if (gmax > best)
            for (size_t j = a; j < b && f[j].s == gmax; j++)
                res[k++] = f[j].i;
        if (gmax > best)
            best = gmax;
        a = b;
    }
    free(f);
    *out = res;
    return k;
}

/* ------------------------------------------------------------------- run */

void tide_sweep_result_free(tide_sweep_result_t *r)
{
    if (!r)
        return;
    free(r->rows);
    free(r->front);
    memset(r, 0, sizeof *r);
}

/* Everything the workers share. Only `next`, `done` and the progress output
 * are touched under the lock; each point writes only its own rows. */
typedef struct pool {
    const tide_sim_opts_t *base;
    const tide_sweep_grid_t *g;
    const char *const *policies;
    size_t np;
    int gpus;
    tide_sweep_row_t *rows;
    pthread_mutex_t lock;
    size_t next, done;
} pool_t;

static double jnumber(json_t *o, const char *a, const char *b)
{
    json_t *v = b ? json_object_get(json_object_get(o, a), b) : json_object_get(o, a);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Fill the rows of point i from its summary.json (or with run_err). */
static void collect(pool_t *p, size_t i, const char *dir, const tide_error_t *run_err, int ran)
{
    char path[PATH_N + 16];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    json_t *sum = ran ? json_load_file(path, 0, NULL) : NULL;
    json_t *pols = json_object_get(sum, "policies");
    for (size_t k = 0; k < p->np; k++) {
        tide_sweep_row_t *r = &p->rows[i * p->np + k];
        memset(r, 0, sizeof *r);
        r->point = i;
        r->policy = p->policies[k];
        json_t *o = json_object_get(pols, p->policies[k]);
        json_t *e = json_object_get(o, "error");
        if (!o || e) {
            const char *msg = e ? json_string_value(e) : run_err->msg[0] ? run_err->msg
                                                                          : "no result";
            size_t len = strnlen(msg ? msg : "", sizeof r->error - 1);
            memcpy(r->error, msg ? msg : "", len);
            r->error[len] = '\0';
            r->utilization = r->useful_utilization = r->slo_attainment = NAN;
            r->mean_queue_s = r->gpu_hours_lost = r->reserve_effective = NAN;
            r->tier_a_breach_gpu_s = NAN;
            continue;
        }
        r->ok = 1;
        r->utilization = jnumber(o, "utilization", NULL);
        r->useful_utilization = jnumber(o, "useful_utilization", NULL);
        r->slo_attainment = jnumber(o, "inference", "slo_attainment");
        r->mean_queue_s = jnumber(o, "training", "mean_queue_s");
        r->gpu_hours_lost = jnumber(o, "training", "gpu_hours_lost");
        r->preemptions = (long)jnumber(o, "training", "preemptions");
        r->jobs_completed = (long)jnumber(o, "training", "jobs_completed");
        r->reclaims = (long)jnumber(o, "reclaim", "count");
        r->reclaims_late = (long)jnumber(o, "reclaim", "late");
        r->reserve_effective = jnumber(o, "tier_a", "reserve_effective_gpus");
        r->tier_a_breach_gpu_s = jnumber(o, "tier_a", "breach_gpu_s");
    }
    json_decref(sum);
}

static void run_point(pool_t *p, size_t i)
{
    const tide_sim_opts_t *b = p->base;
    char label[512], dir[PATH_N];
    tide_sweep_label(p->g, i, label, sizeof label);
    snprintf(dir, sizeof dir, "%s/sweep/%s", b->out_dir, label);
    tide_sim_opts_t o = *b;
    o.out_dir = dir;
    if (o.outputs) /* the point's summary.json is read back */
        o.outputs |= TIDE_SIM_OUT_SUMMARY;
    o.table = NULL;
    o.progress = 0;
    o.inline_outputs = 1; /* the pool's points fill every CPU: no writer threads */
    tide_error_t err = {0};
    int ran = 0;
    if (tide_sweep_apply(p->g, i, p->gpus, &o.cfg, &err) == 0) {
        /* a failed policy still leaves summary.json with its error */
        tide_sim_run(&o, &err);
        ran = 1;
    }
    collect(p, i, dir, &err, ran);
    pthread_mutex_lock(&p->lock);
    p->done++;
    if (b->progress)
        fprintf(stderr, "tide sim: sweep %zu/%zu %s%s%s\n", p->done, p->g->n_points, label,
                err.msg[0] ? ": " : "", err.msg);
    pthread_mutex_unlock(&p->lock);
}

static void *worker(void *arg)
{
    pool_t *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        size_t i = p->next < p->g->n_points ? p->next++ : SIZE_MAX;
        pthread_mutex_unlock(&p->lock);
        if (i == SIZE_MAX)
            return NULL;
        run_point(p, i);
    }
}

static void fmt_num(char *buf, size_t n, double v)
{
    if (isfinite(v))
        snprintf(buf, n, "%.10g", v);
    else
        buf[0] = '\0';
}

static int write_csv(const pool_t *p, const tide_sweep_result_t *res, const char *path,
                     tide_error_t *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return tide_errf(err, TIDE_EIO, "cannot write %s: %s", path, strerror(errno));
    unsigned char *on = tide_xcalloc(res->n_rows ? res->n_rows : 1, 1);
    for (size_t k = 0; k < res->n_front; k++)
        on[res->front[k]] = 1;
    const char *head[32];
    int nh = 0;
    head[nh++] = "point";
    head[nh++] = "label";
    for (size_t a = 0; a < p->g->n_axes; a++)
        head[nh++] = KEYS[p->g->axis[a].key].name;
    static const char *const cols[] = {"policy", "utilization", "useful_utilization",
                                       "slo_attainment", "mean_queue_s", "gpu_hours_lost",
                                       "preemptions", "reclaims", "reclaims_late",
                                       "jobs_completed", "on_front", "error",
                                       "reserve_effective_gpus"};
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
        head[nh++] = cols[c];
    tide_csv_write_row(f, head, nh);
    char cells[32][64];
    char label[512];
    for (size_t r = 0; r < res->n_rows; r++) {
        const tide_sweep_row_t *row = &res->rows[r];
        const char *fl[32];
        int n = 0;
        double vals[TIDE_SWEEP_NKEYS];
        tide_sweep_point(p->g, row->point, vals);
        snprintf(cells[n], sizeof cells[n], "%zu", row->point);
        fl[n] = cells[n];
        n++;
        fl[n++] = tide_sweep_label(p->g, row->point, label, sizeof label);
        for (size_t a = 0; a < p->g->n_axes; a++, n++) {
            fmt_num(cells[n], sizeof cells[n], vals[a]);
            fl[n] = cells[n];
        }
        fl[n++] = row->policy;
        double nums[] = {row->utilization, row->useful_utilization, row->slo_attainment,
                         row->mean_queue_s, row->gpu_hours_lost};
        for (size_t c = 0; c < sizeof nums / sizeof nums[0]; c++, n++) {
            fmt_num(cells[n], sizeof cells[n], row->ok ? nums[c] : NAN);
            fl[n] = cells[n];
        }
        long ints[] = {row->preemptions, row->reclaims, row->reclaims_late, row->jobs_completed};
        for (size_t c = 0; c < sizeof ints / sizeof ints[0]; c++, n++) {
            if (row->ok)
                snprintf(cells[n], sizeof cells[n], "%ld", ints[c]);
            else
                cells[n][0] = '\0';
            fl[n] = cells[n];
        }
        fl[n++] = on[r] ? "1" : "0";
        fl[n++] = row->ok ? "" : row->error;
        fmt_num(cells[n], sizeof cells[n], row->ok ? row->reserve_effective : NAN);
        fl[n] = cells[n];
        n++;
        tide_csv_write_row(f, fl, n);
    }
    free(on);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return tide_errf(err, TIDE_EIO, "cannot write %s", path);
    return 0;
}

static json_t *jnum_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *front_array(const size_t *idx, size_t n)
{
    json_t *a = json_array();
    for (size_t k = 0; k < n; k++)
        json_array_append_new(a, json_integer((json_int_t)idx[k]));
    return a;
}

static int write_json(const pool_t *p, const tide_sweep_result_t *res, const char *spec,
                      int threads, const char *path, tide_error_t *err)
{
    json_t *top = json_object();
    json_object_set_new(top, "spec", json_string(spec ? spec : ""));
    json_t *keys = json_array();
    for (size_t a = 0; a < p->g->n_axes; a++)
        json_array_append_new(keys, json_string(KEYS[p->g->axis[a].key].name));
    json_object_set_new(top, "keys", keys);
    json_object_set_new(top, "points", json_integer((json_int_t)p->g->n_points));
    json_t *pols = json_array();
    for (size_t k = 0; k < p->np; k++)
        json_array_append_new(pols, json_string(p->policies[k]));
    json_object_set_new(top, "policies", pols);
    json_object_set_new(top, "threads", json_integer(threads));
    json_t *rows = json_array();
    char label[512];
    for (size_t r = 0; r < res->n_rows; r++) {
        const tide_sweep_row_t *row = &res->rows[r];
        json_t *o = json_object();
        double vals[TIDE_SWEEP_NKEYS];
        tide_sweep_point(p->g, row->point, vals);
        json_object_set_new(o, "point", json_integer((json_int_t)row->point));
        json_object_set_new(o, "label",
                            json_string(tide_sweep_label(p->g, row->point, label, sizeof label)));
        json_t *params = json_object();
        for (size_t a = 0; a < p->g->n_axes; a++)
            json_object_set_new(params, KEYS[p->g->axis[a].key].name,
                                KEYS[p->g->axis[a].key].integer ? json_integer((json_int_t)vals[a])
                                                                : json_real(vals[a]));
        json_object_set_new(o, "params", params);
        json_object_set_new(o, "policy", json_string(row->policy));
        json_object_set_new(o, "utilization", jnum_or_null(row->utilization));
        json_object_set_new(o, "useful_utilization", jnum_or_null(row->useful_utilization));
        json_object_set_new(o, "slo_attainment", jnum_or_null(row->slo_attainment));
        json_object_set_new(o, "mean_queue_s", jnum_or_null(row->mean_queue_s));
        json_object_set_new(o, "gpu_hours_lost", jnum_or_null(row->gpu_hours_lost));
        json_object_set_new(o, "preemptions", json_integer(row->preemptions));
        json_object_set_new(o, "reclaims", json_integer(row->reclaims));
        json_object_set_new(o, "reclaims_late", json_integer(row->reclaims_late));
        json_object_set_new(o, "jobs_completed", json_integer(row->jobs_completed));
        if (!row->ok)
            json_object_set_new(o, "error", json_string(row->error));
        json_array_append_new(rows, o);
    }
    json_object_set_new(top, "rows", rows);
    json_object_set_new(top, "front", front_array(res->front, res->n_front));
    /* per policy: the front among that policy's rows */
    json_t *byp = json_object();
    tide_sweep_row_t *sub = tide_xmalloc((p->g->n_points ? p->g->n_points : 1) * sizeof *sub);
    for (size_t k = 0; k < p->np; k++) {
        for (size_t i = 0; i < p->g->n_points; i++)
            sub[i] = res->rows[i * p->np + k];
        size_t *f = NULL, nf = tide_sweep_front(sub, p->g->n_points, &f);
        for (size_t j = 0; j < nf; j++)
            f[j] = f[j] * p->np + k; /* back to indexes into rows */
        json_object_set_new(byp, p->policies[k], front_array(f, nf));
        free(f);
    }
    free(sub);
    json_object_set_new(top, "front_by_policy", byp);
    int rc = json_dump_file(top, path, JSON_INDENT(1) | JSON_PRESERVE_ORDER |
                                           JSON_REAL_PRECISION(10));
    json_decref(top);
    if (rc != 0)
        return tide_errf(err, TIDE_EIO, "cannot write %s", path);
    return 0;
}

static int same_figures(const tide_sweep_row_t *a, const tide_sweep_row_t *b)
{
    return !strcmp(a->policy, b->policy) && a->useful_utilization == b->useful_utilization &&
           a->slo_attainment == b->slo_attainment && a->utilization == b->utilization &&
           a->mean_queue_s == b->mean_queue_s && a->gpu_hours_lost == b->gpu_hours_lost &&
           a->preemptions == b->preemptions && a->reclaims == b->reclaims &&
           a->reclaims_late == b->reclaims_late;
}

/* The front, one line per distinct result: runs of the same policy with the
 * same figures (knobs that policy ignores) are shown once, with their count. */
static void print_front(FILE *f, const pool_t *p, const tide_sweep_result_t *res)
{
    fprintf(f, "sweep: %zu points x %zu policies; Pareto front on (useful utilization, SLO "
            "attainment): %zu runs\n", p->g->n_points, p->np, res->n_front);
    fprintf(f, "%-10s", "policy");
    for (size_t a = 0; a < p->g->n_axes; a++)
        fprintf(f, " %8s", KEYS[p->g->axis[a].key].name);
    fprintf(f, " %7s %7s %8s %8s %9s %8s %14s %6s\n", "useful%", "util%", "SLO", "queue_h",
            "lost_gpuh", "preempt", "reclaims(late)", "points");
    unsigned char *done = tide_xcalloc(res->n_front ? res->n_front : 1, 1);
    for (size_t k = 0; k < res->n_front; k++) {
        if (done[k])
            continue;
        const tide_sweep_row_t *r = &res->rows[res->front[k]];
        size_t same = 0;
        for (size_t j = k; j < res->n_front; j++)
            if (!done[j] && same_figures(r, &res->rows[res->front[j]])) {
                done[j] = 1;
                same++;
            }
        double vals[TIDE_SWEEP_NKEYS];
        tide_sweep_point(p->g, r->point, vals);
        fprintf(f, "%-10s", r->policy);
        for (size_t a = 0; a < p->g->n_axes; a++)
            fprintf(f, " %8.6g", vals[a]);
        char rl[48];
        snprintf(rl, sizeof rl, "%ld(%ld)", r->reclaims, r->reclaims_late);
        fprintf(f, " %7.2f %7.2f %8.4f %8.2f %9.1f %8ld %14s %6zu\n",
                100 * r->useful_utilization, 100 * r->utilization, r->slo_attainment,
                r->mean_queue_s / 3600.0, r->gpu_hours_lost, r->preemptions, rl, same);
    }
    free(done);
}

int tide_sweep_run(const tide_sim_opts_t *base, const tide_sweep_grid_t *g, const char *spec,
                   int threads, FILE *table, tide_sweep_result_t *res, tide_error_t *err)
{
    if (!base || !base->cluster || !base->out_dir || !*base->out_dir)
        return tide_errf(err, TIDE_EINVAL, "sweep: no cluster or output directory given");
    if (!g || g->n_points == 0)
        return tide_errf(err, TIDE_EINVAL, "sweep: empty grid");
    pool_t p = {.base = base, .g = g, .gpus = tide_cluster_gpus(base->cluster)};
    if (tide_sweep_check(g, p.gpus, &base->cfg, err) != 0)
        return -1;
    p.policies = base->n_policies ? base->policies : tide_policy_names();
    p.np = base->n_policies;
    if (!p.np)
        while (p.policies[p.np])
            p.np++;
    char dir[PATH_N];
    snprintf(dir, sizeof dir, "%s/sweep", base->out_dir);
    if (tide_mkdir_p(dir, err) != 0)
        return -1;

    if (threads <= 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cpus > 0 ? (int)cpus : 1;
    }
    if (threads > TIDE_SWEEP_MAX_THREADS)
        threads = TIDE_SWEEP_MAX_THREADS;
    if ((size_t)threads > g->n_points)
        threads = (int)g->n_points;

    tide_sweep_result_t r = {0};
    r.n_rows = g->n_points * p.np;
    r.rows = tide_xcalloc(r.n_rows, sizeof *r.rows);
    p.rows = r.rows;
    pthread_mutex_init(&p.lock, NULL);
    json_object_seed(0); /* jansson's hash seed, before any thread makes objects */
    pthread_t tid[TIDE_SWEEP_MAX_THREADS];
    int started = 0;
    for (int t = 1; t < threads; t++) {
        if (pthread_create(&tid[started], NULL, worker, &p) != 0)
            break; /* fewer threads: the others (and this one) do the work */
        started++;
    }
    worker(&p);
    for (int t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    pthread_mutex_destroy(&p.lock);

    r.n_front = tide_sweep_front(r.rows, r.n_rows, &r.front);
    size_t ok = 0;
    for (size_t i = 0; i < r.n_rows; i++)
        ok += r.rows[i].ok;
    char path[PATH_N];
    int rc = 0;
    snprintf(path, sizeof path, "%s/sweep.csv", base->out_dir);
    if (write_csv(&p, &r, path, err) != 0)
        rc = -1;
    snprintf(path, sizeof path, "%s/sweep.json", base->out_dir);
    if (rc == 0 && write_json(&p, &r, spec, started + 1, path, err) != 0)
        rc = -1;
    if (rc == 0 && table)
        print_front(table, &p, &r);
    if (rc == 0 && ok == 0) {
        rc = tide_errf(err, TIDE_ESTATE, "sweep: every run failed (first: %s)",
                       r.rows[0].error);
    }
    if (res && rc == 0)
        *res = r;
    else
        tide_sweep_result_free(&r);
    return rc;
}
