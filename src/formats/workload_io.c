/* Readers for services.csv, demand.csv and jobs.csv on top of formats/csv.h. */
#include "formats/workload_io.h"

#include <limits.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/csv.h"
#include "util/util.h"

#define NODEF LLONG_MIN /* "no default": the value is required */

/* ------------------------------------------------------------ name index */

/* Open-addressing hash map from borrowed strings to ints. Each slot keeps
 * its key's hash (the low 32 bits: the table never has 2^32 slots), so a
 * probe compares strings only on an equal hash and a growth moves the slots
 * without reading the keys (a table of a million job ids: a string read is a
 * cache miss). 16 bytes a slot. */
typedef struct idx_slot_t {
    const char *key; /* NULL: free */
    uint32_t h;      /* (uint32_t)tide_hash_str(key) */
    int val;
} idx_slot_t;

struct tide_name_index {
    idx_slot_t *s;
    size_t cap, n;
};

static struct tide_name_index *idx_new(void)
{
    return tide_xcalloc(1, sizeof(struct tide_name_index));
}

static void idx_free(struct tide_name_index *x)
{
    if (!x)
        return;
    free(x->s);
    free(x);
}

/* The slot of k (hash h), or the free slot where it would go. */
static size_t idx_slot(const struct tide_name_index *x, const char *k, uint32_t h)
{
    size_t m = x->cap - 1, i = (size_t)h & m;
    while (x->s[i].key && (x->s[i].h != h || strcmp(x->s[i].key, k) != 0))
        i = (i + 1) & m;
    return i;
}

static int idx_get(const struct tide_name_index *x, const char *k)
{
    if (!x || !x->cap || !k)
        return -1;
    size_t i = idx_slot(x, k, (uint32_t)tide_hash_str(k));
    return x->s[i].key ? x->s[i].val : -1;
}

/* Room for one more key (the table grows at half full). */
static void idx_reserve(struct tide_name_index *x)
{
    if (2 * (x->n + 1) > x->cap) {
        size_t oc = x->cap;
        idx_slot_t *os = x->s;
        x->cap = oc ? 2 * oc : 16;
        x->s = tide_xcalloc(x->cap, sizeof *x->s);
        for (size_t i = 0; i < oc; i++)
            if (os[i].key) { /* keys are unique: the first free slot from its hash */
                size_t m = x->cap - 1, j = (size_t)os[i].h & m;
                while (x->s[j].key)
                    j = (j + 1) & m;
                x->s[j] = os[i];
            }
        free(os);
    }
}

/* The value of k, or -1 when absent; then *at is the free slot where k goes
 * (idx_put_at, before any other change of x) and *h its hash. */
static int idx_probe(struct tide_name_index *x, const char *k, uint32_t *h, size_t *at)
{
    idx_reserve(x);
    *h = (uint32_t)tide_hash_str(k);
    *at = idx_slot(x, k, *h);
    return x->s[*at].key ? x->s[*at].val : -1;
}

/* Insert k -> v at the free slot idx_probe gave for it (k is borrowed and
 * must outlive x; k equals the probed string). */
static void idx_put_at(struct tide_name_index *x, size_t at, const char *k, uint32_t h, int v)
{
    x->s[at] = (idx_slot_t){.key = k, .h = h, .val = v};
    x->n++;
}

/* Insert k -> v (k must not be present; k is borrowed and must outlive x). */
static void idx_put(struct tide_name_index *x, const char *k, int v)
{
    uint32_t h;
    size_t at;
    (void)idx_probe(x, k, &h, &at);
    idx_put_at(x, at, k, h, v);
}

/* ---------------------------------------------------------- field helpers */

static const char *fld(const tide_csv_t *csv, int col)
{
    const char *s = tide_csv_field(csv, col);
    return s ? s : "";
}

/* Find the columns of `names` (n of them) in the header; required ones must be
 * present. cols[i] = -1 for an absent optional column. */
static int find_cols(tide_csv_t *csv, const char *const *names, int n_req, int n, int *cols,
                     tide_error_t *err)
{
    for (int i = 0; i < n; i++) {
        cols[i] = tide_csv_col(csv, names[i]);
        if (cols[i] < 0 && i < n_req) {
            char have[300] = "";
            size_t hl = 0;
            for (int k = 0; k < tide_csv_ncols(csv) && hl < sizeof have - 1; k++) {
                int w = snprintf(have + hl, sizeof have - hl, "%s%s", k ? "," : "",
                                 tide_csv_colname(csv, k));
                if (w < 0)
                    break;
                hl += (size_t)w;
            }
            return tide_csv_fail(csv, err, -1, TIDE_EINVAL,
                                 "missing required column '%s' (the header is: %.200s)", names[i],
                                 have);
        }
    }
    return 0;
}

/* A required non-empty name without control characters (no tabs, newlines). */
static int get_str(const tide_csv_t *csv, int col, const char **out, tide_error_t *err)
{
    const char *s = fld(csv, col);
    if (!*s)
        return tide_csv_fail(csv, err, col, TIDE_EINVAL, "missing value");
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return tide_csv_fail(csv, err, col, TIDE_EINVAL,
                                 "control character (byte 0x%02x) in a name", (unsigned char)*p);
    *out = s;
    return 0;
}

/* A whole number in [lo, hi]; an empty field (or absent column) takes dflt,
 * or is an error when dflt is NODEF. */
static int get_int(const tide_csv_t *csv, int col, long long lo, long long hi, long long dflt,
                   int *out, tide_error_t *err)
{
    const char *s = fld(csv, col);
    long long v;
    if (!*s) {
        if (dflt == NODEF)
            return tide_csv_fail(csv, err, col, TIDE_EINVAL, "missing value");
        *out = (int)dflt;
        return 0;
    }
    if (tide_parse_int(s, &v) < 0)
        return tide_csv_fail(csv, err, col, TIDE_EINVAL, "expected a whole number, got '%.40s'",
                             s);
    if (v < lo)
        return tide_csv_fail(csv, err, col, TIDE_EINVAL, "must be >= %lld (got %lld)", lo, v);
    if (v > hi)
        return tide_csv_fail(csv, err, col, TIDE_EINVAL, "must be <= %lld (got %lld)", hi, v);
    *out = (int)v;
    return 0;
}

/* Seconds: a plain number >= 0, rounded; the result must be >= lo. */
static int get_secs(const tide_csv_t *csv, int col, long long lo, long long dflt,
                    tide_time_t *out, tide_error_t *err)
{
    const char *s = fld(csv, col);
    double v;
    if (!*s) {
        if (dflt == NODEF)
            return tide_csv_fail(csv, err, col, TIDE_EINVAL, "missing value");
        *out = dflt;
        return 0;
    }
    if (tide_parse_decimal(s, &v) < 0)
        return tide_csv_fail(csv, err, col, TIDE_EINVAL,
                             "expected seconds as a plain number (like 90 or 1.5), got '%.40s'",
                             s);
    if (v < 0)
        return tide_csv_fail(csv, err, col, TIDE_EINVAL, "must be >= 0 (got %.40s)", s);
    if (v > (double)TIDE_IO_MAX_SECONDS)
        return tide_csv_fail(csv, err, col, TIDE_EINVAL, "too large (at most %lld seconds)",
                             (long long)TIDE_IO_MAX_SECONDS);
    long long r = llround(v);
    if (r < lo)
        return tide_csv_fail(csv, err, col, TIDE_EINVAL, "must be at least %lld second%s (got %.40s)",
                             lo, lo == 1 ? "" : "s", s);
    *out = r;
    return 0;
}

/* A size in GB: a finite number in [0, TIDE_IO_MAX_GB]; empty takes dflt. */
static int get_gb(const tide_csv_t *csv, int col, double dflt, double *out, tide_error_t *err)
{
    const char *s = fld(csv, col);
    double v;
    if (!*s) {
        *out = dflt;
        return 0;
    }
    if (tide_parse_decimal(s, &v) < 0)
        return tide_csv_fail(csv, err, col, TIDE_EINVAL, "expected GB as a number, got '%.40s'",
                             s);
    if (v < 0 || v > TIDE_IO_MAX_GB)
        return tide_csv_fail(csv, err, col, TIDE_EINVAL, "must be 0..%g GB (got %.40s)",
                             TIDE_IO_MAX_GB, s);
    *out = v;
    return 0;
}

/* A finite number at most hi; > lo when strict, else >= lo. */
static int get_double(const tide_csv_t *csv, int col, double lo, int strict, double hi,
                      double *out, tide_error_t *err)
{
    const char *s = fld(csv, col);
    double v;
    if (!*s)
        return tide_csv_fail(csv, err, col, TIDE_EINVAL, "missing value");
    if (tide_parse_decimal(s, &v) < 0)
        return tide_csv_fail(csv, err, col, TIDE_EINVAL, "expected a finite number, got '%.40s'",
                             s);
    if (strict ? !(v > lo) : !(v >= lo))
        return tide_csv_fail(csv, err, col, TIDE_EINVAL, "must be %s %g (got %.40s)",
                             strict ? ">" : ">=", lo, s);
    if (v > hi)
        return tide_csv_fail(csv, err, col, TIDE_EINVAL, "must be at most %g (got %.40s)", hi, s);
    *out = v;
    return 0;
}

static int get_types(const tide_csv_t *csv, int col, const tide_read_opts_t *o, uint32_t *out,
                     tide_error_t *err)
{
    const char *s = fld(csv, col);
    *out = 0;
    if (!*s || !o->cluster)
        return 0;
    tide_error_t e;
    if (tide_cluster_type_mask(o->cluster, s, out, &e) < 0)
        return tide_csv_fail(csv, err, col, e.code, "%s", e.msg);
    return 0;
}

/* ------------------------------------------------------------- row loop */

typedef int (*row_fn)(void *ctx, tide_csv_t *csv, tide_error_t *err);

/* Call fn on each data row. Row errors fail the read unless skip_bad, in
 * which case they are counted in *skipped (first one kept in *first). */
static int each_row(tide_csv_t *csv, const tide_read_opts_t *o, row_fn fn, void *ctx,
                    size_t *skipped, tide_error_t *first, tide_error_t *err)
{
    for (;;) {
        tide_error_t e = {0, ""};
        int r = tide_csv_next(csv, &e);
        if (r == 0)
            return 0;
        int row_err = r < 0 ? tide_csv_recoverable(csv) : fn(ctx, csv, &e) < 0;
        if (r > 0 && !row_err)
            continue;
        if (row_err && o->skip_bad) {
            if ((*skipped)++ == 0)
                *first = e;
            continue;
        }
        if (err)
            *err = e;
        return -1;
    }
}

static const tide_read_opts_t default_opts = {NULL, 0};

/* ------------------------------------------------------------ services.csv */

enum { S_NAME, S_GPUS, S_RPS, S_MIN, S_WARM, S_MAX, S_FIXED, S_TYPES, S_WGB, S_SLO,
       S_STAGE, S_LAT0, S_NCOLS = S_LAT0 + 8 };
static const char *const svc_cols[S_NCOLS] = {
    "service", "gpus_per_replica", "replica_rps", "min_replicas", "warmup_s",
    "max_replicas", "fixed_replicas", "gpu_types", "weights_gb", "slo_target", "stage_s",
    /* latency declarations (tide_io_latency_t, in its field order) */
    "ttft_target_s", "tbt_target_s", "prompt_tokens", "output_tokens", "prefill_tps",
    "decode_tps", "decode_knee", "queue_max_s"};
static const size_t lat_off[S_NCOLS - S_LAT0] = {
    offsetof(tide_io_latency_t, ttft_target_s), offsetof(tide_io_latency_t, tbt_target_s),
    offsetof(tide_io_latency_t, prompt_tokens), offsetof(tide_io_latency_t, output_tokens),
    offsetof(tide_io_latency_t, prefill_tps),   offsetof(tide_io_latency_t, decode_tps),
    offsetof(tide_io_latency_t, decode_knee),   offsetof(tide_io_latency_t, queue_max_s)};

/* Optional finite number >= 0; absent or empty = 0 (the default). */
static int get_opt_nonneg(const tide_csv_t *csv, int col, double *out, tide_error_t *err)
{
    *out = 0;
    if (!*fld(csv, col))
        return 0;
    return get_double(csv, col, 0, 0, 1e12, out, err);
}

/* The latency columns of a services.csv row. */
static int get_latency(const tide_csv_t *csv, const int *c, tide_io_latency_t *lat,
                       tide_error_t *err)
{
    memset(lat, 0, sizeof *lat);
    for (int k = S_LAT0; k < S_NCOLS; k++)
        if (get_opt_nonneg(csv, c[k], (double *)((char *)lat + lat_off[k - S_LAT0]), err) < 0)
            return -1;
    return 0;
}

/* Optional fraction in (0, 1); absent or empty = 0 (the engine's default). */
static int get_frac(const tide_csv_t *csv, int col, double *out, tide_error_t *err)
{
    const char *s = fld(csv, col);
    double v;
    *out = 0;
    if (!*s)
        return 0;
    if (tide_parse_decimal(s, &v) < 0 || !(v > 0 && v < 1))
        return tide_csv_fail(csv, err, col, TIDE_EINVAL,
                             "expected a fraction in (0, 1), e.g. 0.999, got '%.40s'", s);
    *out = v;
    return 0;
}
#define S_NREQ 5

typedef struct svc_ctx {
    tide_services_t *out;
    size_t cap, gbcap, latcap;
    int cols[S_NCOLS];
    int *lines;
    size_t lcap;
    const tide_read_opts_t *o;
} svc_ctx_t;

static int svc_row(void *vctx, tide_csv_t *csv, tide_error_t *err)
{
    svc_ctx_t *x = vctx;
    const int *c = x->cols;
    tide_service_spec_t s;
    memset(&s, 0, sizeof s);
    const char *name = "";
    if (get_str(csv, c[S_NAME], &name, err) < 0 ||
        get_int(csv, c[S_GPUS], 1, TIDE_IO_MAX_COUNT, NODEF, &s.gpus_per_replica, err) < 0 ||
        get_double(csv, c[S_RPS], 0, 1, TIDE_MAX_RPS, &s.replica_rps, err) < 0 ||
        get_int(csv, c[S_MIN], 0, TIDE_IO_MAX_COUNT, NODEF, &s.min_replicas, err) < 0 ||
        get_secs(csv, c[S_WARM], 0, NODEF, &s.warmup_s, err) < 0 ||
        get_int(csv, c[S_MAX], 0, TIDE_IO_MAX_COUNT, 0, &s.max_replicas, err) < 0 ||
        get_int(csv, c[S_FIXED], 0, TIDE_IO_MAX_COUNT, 0, &s.fixed_replicas, err) < 0 ||
        get_types(csv, c[S_TYPES], x->o, &s.gpu_types, err) < 0 ||
        get_frac(csv, c[S_SLO], &s.slo_target, err) < 0 ||
        get_secs(csv, c[S_STAGE], 0, 0, &s.stage_s, err) < 0)
        return -1;
    if (s.stage_s > s.warmup_s)
        return tide_csv_fail(csv, err, c[S_STAGE], TIDE_EINVAL,
                             "must be <= warmup_s (%lld), got %lld", (long long)s.warmup_s,
                             (long long)s.stage_s);
    double wgb;
    tide_io_latency_t lat;
    if (get_gb(csv, c[S_WGB], TIDE_IO_WEIGHTS_GB_PER_GPU * s.gpus_per_replica, &wgb, err) < 0 ||
        get_latency(csv, c, &lat, err) < 0)
        return -1;
    if (s.max_replicas > 0 && s.max_replicas < s.min_replicas)
        return tide_csv_fail(csv, err, c[S_MAX], TIDE_EINVAL,
                             "must be 0 (unlimited) or >= min_replicas (%d), got %d",
                             s.min_replicas, s.max_replicas);
    int prev = idx_get(x->out->idx, name);
    if (prev >= 0)
        return tide_csv_fail(csv, err, c[S_NAME], TIDE_EEXIST,
                             "duplicate service '%.100s' (first defined on line %d)", name,
                             x->lines[prev]);
    char *own = tide_xstrdup(name);
    s.name = own;
    size_t n = x->out->n, gn = n, latn = n;
    TIDE_PUSH(x->out->weights_gb, gn, x->gbcap, wgb);
    TIDE_PUSH(x->out->latency, latn, x->latcap, lat);
    TIDE_PUSH(x->out->v, x->out->n, x->cap, s);
    size_t ln = n;
    TIDE_PUSH(x->lines, ln, x->lcap, tide_csv_line(csv));
    idx_put(x->out->idx, own, (int)n);
    return 0;
}

static tide_services_t *read_services(tide_csv_t *csv, const tide_read_opts_t *o,
                                      tide_error_t *err)
{
    if (!csv)
        return NULL;
    if (!o)
        o = &default_opts;
    svc_ctx_t x;
    memset(&x, 0, sizeof x);
    x.o = o;
    x.out = tide_xcalloc(1, sizeof *x.out);
    x.out->idx = idx_new();
    int rc = find_cols(csv, svc_cols, S_NREQ, S_NCOLS, x.cols, err);
    if (rc == 0)
        rc = each_row(csv, o, svc_row, &x, &x.out->skipped, &x.out->first_skip, err);
    free(x.lines);
    tide_csv_close(csv);
    if (rc < 0) {
        tide_services_free(x.out);
        return NULL;
    }
    return x.out;
}

tide_services_t *tide_services_read_mem(const char *buf, size_t len, const char *name,
                                        const tide_read_opts_t *opts, tide_error_t *err)
{
    return read_services(tide_csv_open_mem(buf, len, name, err), opts, err);
}

tide_services_t *tide_services_read_file(const char *path, const tide_read_opts_t *opts,
                                         tide_error_t *err)
{
    return read_services(tide_csv_open_file(path, err), opts, err);
}

void tide_services_free(tide_services_t *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        free((char *)s->v[i].name);
    free(s->v);
    free(s->weights_gb);
    free(s->latency);
    idx_free(s->idx);
    free(s);
}

int tide_services_find(const tide_services_t *s, const char *name)
{
    return s ? idx_get(s->idx, name) : -1;
}

tide_services_t *tide_services_from_specs(const tide_service_spec_t *v, size_t n)
{
    tide_services_t *s = tide_xcalloc(1, sizeof *s);
    s->idx = idx_new();
    s->v = tide_xcalloc(n ? n : 1, sizeof *s->v);
    s->weights_gb = tide_xcalloc(n ? n : 1, sizeof *s->weights_gb);
    s->latency = tide_xcalloc(n ? n : 1, sizeof *s->latency);
    for (size_t i = 0; i < n; i++) {
        s->v[i] = v[i];
        s->v[i].name = tide_xstrdup(v[i].name ? v[i].name : "");
        s->weights_gb[i] = TIDE_IO_WEIGHTS_GB_PER_GPU * v[i].gpus_per_replica;
        if (idx_get(s->idx, s->v[i].name) < 0)
            idx_put(s->idx, s->v[i].name, (int)i);
    }
    s->n = n;
    return s;
}

/* -------------------------------------------------------------- demand.csv */

enum { D_TIME, D_SVC, D_RPS, D_NCOLS };
static const char *const dem_cols[D_NCOLS] = {"time_s", "service", "rps"};

typedef struct dem_ctx {
    tide_demand_t *out;
    size_t cap;
    int cols[D_NCOLS];
    const tide_services_t *svcs;
    tide_time_t *last; /* per service: time of its last row, -1 = none */
    int *last_line;
} dem_ctx_t;

static int dem_row(void *vctx, tide_csv_t *csv, tide_error_t *err)
{
    dem_ctx_t *x = vctx;
    const int *c = x->cols;
    tide_demand_point_t p;
    const char *name = "";
    if (get_secs(csv, c[D_TIME], 0, NODEF, &p.t, err) < 0 ||
        get_str(csv, c[D_SVC], &name, err) < 0)
        return -1;
    p.service = tide_services_find(x->svcs, name);
    if (p.service < 0)
        return tide_csv_fail(csv, err, c[D_SVC], TIDE_ENOENT,
                             "unknown service '%.100s' (not in the services file)", name);
    if (get_double(csv, c[D_RPS], 0, 0, TIDE_MAX_RPS, &p.rps, err) < 0)
        return -1;
    if (p.t < x->last[p.service])
        return tide_csv_fail(csv, err, c[D_TIME], TIDE_EINVAL,
                             "time %lld is before the previous row of service '%.100s' "
                             "(time %lld on line %d); rows of a service must be in time order",
                             (long long)p.t, name, (long long)x->last[p.service],
                             x->last_line[p.service]);
    x->last[p.service] = p.t;
    x->last_line[p.service] = tide_csv_line(csv);
    TIDE_PUSH(x->out->v, x->out->n, x->cap, p);
    return 0;
}

typedef struct dem_key {
    tide_demand_point_t p;
    size_t seq;
} dem_key_t;

static int dem_cmp(const void *a, const void *b)
{
    const dem_key_t *x = a, *y = b;
    if (x->p.t != y->p.t)
        return x->p.t < y->p.t ? -1 : 1;
    if (x->p.service != y->p.service)
        return x->p.service < y->p.service ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static tide_demand_t *read_demand(tide_csv_t *csv, const tide_services_t *svcs,
                                  const tide_read_opts_t *o, tide_error_t *err)
{
    if (!csv)
        return NULL;
    if (!o)
        o = &default_opts;
    if (!svcs) {
        tide_csv_fail(csv, err, -1, TIDE_EINVAL, "no services given to resolve demand rows");
        tide_csv_close(csv);
        return NULL;
    }
    dem_ctx_t x;
    memset(&x, 0, sizeof x);
    x.svcs = svcs;
    x.out = tide_xcalloc(1, sizeof *x.out);
    x.last = tide_xmalloc((svcs->n + 1) * sizeof *x.last);
    x.last_line = tide_xcalloc(svcs->n + 1, sizeof *x.last_line);
    for (size_t i = 0; i < svcs->n; i++)
        x.last[i] = -1;
    int rc = find_cols(csv, dem_cols, D_NCOLS, D_NCOLS, x.cols, err);
    if (rc == 0)
        rc = each_row(csv, o, dem_row, &x, &x.out->skipped, &x.out->first_skip, err);
    free(x.last);
    free(x.last_line);
    tide_csv_close(csv);
    if (rc < 0) {
        tide_demand_free(x.out);
        return NULL;
    }
    tide_demand_t *d = x.out;
    if (d->n > 1) {
        dem_key_t *k = tide_xmalloc(d->n * sizeof *k);
        for (size_t i = 0; i < d->n; i++) {
            k[i].p = d->v[i];
            k[i].seq = i;
        }
        qsort(k, d->n, sizeof *k, dem_cmp);
        for (size_t i = 0; i < d->n; i++)
            d->v[i] = k[i].p;
        free(k);
    }
    return d;
}

tide_demand_t *tide_demand_read_mem(const char *buf, size_t len, const char *name,
                                    const tide_services_t *svcs, const tide_read_opts_t *opts,
                                    tide_error_t *err)
{
    return read_demand(tide_csv_open_mem(buf, len, name, err), svcs, opts, err);
}

tide_demand_t *tide_demand_read_file(const char *path, const tide_services_t *svcs,
                                     const tide_read_opts_t *opts, tide_error_t *err)
{
    return read_demand(tide_csv_open_file(path, err), svcs, opts, err);
}

void tide_demand_free(tide_demand_t *d)
{
    if (!d)
        return;
    free(d->v);
    free(d);
}

int tide_demand_history_align(tide_demand_t *d, tide_time_t end, tide_error_t *err)
{
    if (!d || d->n == 0)
        return tide_errf(err, TIDE_EINVAL, "the demand history has no rows");
    tide_time_t last = d->v[d->n - 1].t; /* sorted by time */
    for (size_t i = 0; i < d->n; i++)
        d->v[i].t = d->v[i].t - last + end;
    return 0;
}

/* ---------------------------------------------------------------- jobs.csv */

enum {
    J_ID, J_SUBMIT, J_TEAM, J_PRIO, J_GPUS, J_DUR, /* required */
    J_GANG, J_DPMIN, J_CKINT, J_CKPT, J_RESTORE, J_TYPES, J_CKGB, J_NCOLS
};
static const char *const job_cols[J_NCOLS] = {
    "job_id", "submit_s", "team", "priority", "gpus", "duration_s",
    "gang_gpus", "dp_min", "ckpt_interval_s", "ckpt_s", "restore_s", "gpu_types", "ckpt_gb"};
#define J_NREQ 6

typedef struct job_ctx {
    tide_jobs_t *out;
    size_t cap, gbcap;
    int cols[J_NCOLS];
    struct tide_name_index *ids; /* id -> line */
    struct tide_name_index *teams; /* team name -> index in team_names */
    const char **team_names;       /* one copy per team, in out->strs */
    size_t n_teams, cap_teams;
    const tide_read_opts_t *o;
} job_ctx_t;

/* The one copy of team name t in x->out->strs (jobs of a team share it). */
static const char *team_copy(job_ctx_t *x, const char *t)
{
    int i = idx_get(x->teams, t);
    if (i >= 0)
        return x->team_names[i];
    const char *c = tide_strpool_dup(&x->out->strs, t);
    idx_put(x->teams, c, (int)x->n_teams);
    TIDE_PUSH(x->team_names, x->n_teams, x->cap_teams, c);
    return c;
}

static int gcd(int a, int b)
{
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static int get_prio(const tide_csv_t *csv, int col, int *out, tide_error_t *err)
{
    const char *s = fld(csv, col);
    if (!*s)
        return tide_csv_fail(csv, err, col, TIDE_EINVAL, "missing value");
    const char *d = (s[0] == 'P' || s[0] == 'p') ? s + 1 : s;
    if (d[0] >= '1' && d[0] <= '3' && d[1] == 0) {
        *out = d[0] - '0';
        return 0;
    }
    return tide_csv_fail(csv, err, col, TIDE_EINVAL,
                         "expected 1, 2, 3 or P1, P2, P3 (P0 is for inference), got '%.40s'", s);
}

static int job_row(void *vctx, tide_csv_t *csv, tide_error_t *err)
{
    job_ctx_t *x = vctx;
    const int *c = x->cols;
    tide_job_spec_t j;
    memset(&j, 0, sizeof j);
    const char *id = "", *team = "";
    if (get_str(csv, c[J_ID], &id, err) < 0 ||
        get_secs(csv, c[J_SUBMIT], 0, NODEF, &j.submit_s, err) < 0 ||
        get_str(csv, c[J_TEAM], &team, err) < 0 ||
        get_prio(csv, c[J_PRIO], &j.priority, err) < 0 ||
        get_int(csv, c[J_GPUS], 1, TIDE_IO_MAX_COUNT, NODEF, &j.gpus, err) < 0 ||
        get_secs(csv, c[J_DUR], 1, NODEF, &j.duration_s, err) < 0)
        return -1;
    int dgang = j.gpus <= 8 ? j.gpus : gcd(j.gpus, 8);
    if (get_int(csv, c[J_GANG], 1, TIDE_IO_MAX_COUNT, dgang, &j.gang_gpus, err) < 0)
        return -1;
    if (j.gang_gpus > j.gpus)
        return tide_csv_fail(csv, err, c[J_GANG], TIDE_EINVAL,
                             "must be <= gpus (%d), got %d", j.gpus, j.gang_gpus);
    if (j.gpus % j.gang_gpus != 0)
        return tide_csv_fail(csv, err, c[J_GANG], TIDE_EINVAL, "%d does not divide gpus (%d)",
                             j.gang_gpus, j.gpus);
    int dp_max = j.gpus / j.gang_gpus;
    if (get_int(csv, c[J_DPMIN], 1, TIDE_IO_MAX_COUNT, dp_max, &j.dp_min, err) < 0)
        return -1;
    if (j.dp_min > dp_max)
        return tide_csv_fail(csv, err, c[J_DPMIN], TIDE_EINVAL,
                             "must be <= gpus / gang_gpus = %d (got %d)", dp_max, j.dp_min);
    if (get_secs(csv, c[J_CKINT], 1, 1800, &j.ckpt_interval_s, err) < 0 ||
        get_secs(csv, c[J_CKPT], 0, 60, &j.ckpt_s, err) < 0 ||
        get_secs(csv, c[J_RESTORE], 0, 120, &j.restore_s, err) < 0 ||
        get_types(csv, c[J_TYPES], x->o, &j.gpu_types, err) < 0)
        return -1;
    double ckgb;
    if (get_gb(csv, c[J_CKGB], TIDE_IO_CKPT_GB_PER_GPU * j.gpus, &ckgb, err) < 0)
        return -1;
    uint32_t h;
    size_t at;
    int prev = idx_probe(x->ids, id, &h, &at);
    if (prev >= 0)
        return tide_csv_fail(csv, err, c[J_ID], TIDE_EEXIST,
                             "duplicate job id '%.100s' (first defined on line %d)", id, prev);
    char *own_id = tide_strpool_dup(&x->out->strs, id);
    j.id = own_id;
    j.team = team_copy(x, team);
    size_t gn = x->out->n;
    TIDE_PUSH(x->out->ckpt_gb, gn, x->gbcap, ckgb);
    TIDE_PUSH(x->out->v, x->out->n, x->cap, j);
    idx_put_at(x->ids, at, own_id, h, tide_csv_line(csv));
    return 0;
}

typedef struct job_key {
    tide_time_t t;
    size_t seq;
} job_key_t;

static int job_cmp(const void *a, const void *b)
{
    const job_key_t *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static tide_jobs_t *read_jobs(tide_csv_t *csv, const tide_read_opts_t *o, tide_error_t *err)
{
    if (!csv)
        return NULL;
    if (!o)
        o = &default_opts;
    job_ctx_t x;
    memset(&x, 0, sizeof x);
    x.o = o;
    x.out = tide_xcalloc(1, sizeof *x.out);
    x.ids = idx_new();
    x.teams = idx_new();
    int rc = find_cols(csv, job_cols, J_NREQ, J_NCOLS, x.cols, err);
    if (rc == 0)
        rc = each_row(csv, o, job_row, &x, &x.out->skipped, &x.out->first_skip, err);
    idx_free(x.ids);
    idx_free(x.teams);
    free(x.team_names);
    tide_csv_close(csv);
    if (rc < 0) {
        tide_jobs_free(x.out);
        return NULL;
    }
    tide_jobs_t *js = x.out;
    size_t sorted = 1; /* already in submit order (as tide gen writes them): nothing moves */
    while (sorted < js->n && js->v[sorted - 1].submit_s <= js->v[sorted].submit_s)
        sorted++;
    if (sorted < js->n) {
        job_key_t *k = tide_xmalloc(js->n * sizeof *k);
        for (size_t i = 0; i < js->n; i++) {
            k[i].t = js->v[i].submit_s;
            k[i].seq = i;
        }
        qsort(k, js->n, sizeof *k, job_cmp);
        tide_job_spec_t *v = tide_xmalloc(js->n * sizeof *v);
        double *gb = tide_xmalloc(js->n * sizeof *gb);
        for (size_t i = 0; i < js->n; i++) {
            v[i] = js->v[k[i].seq];
            gb[i] = js->ckpt_gb[k[i].seq];
        }
        free(js->v);
        free(js->ckpt_gb);
        js->v = v;
        js->ckpt_gb = gb;
        free(k);
    }
    return js;
}

tide_jobs_t *tide_jobs_read_mem(const char *buf, size_t len, const char *name,
                                const tide_read_opts_t *opts, tide_error_t *err)
{
    return read_jobs(tide_csv_open_mem(buf, len, name, err), opts, err);
}

tide_jobs_t *tide_jobs_read_file(const char *path, const tide_read_opts_t *opts,
                                 tide_error_t *err)
{
    return read_jobs(tide_csv_open_file(path, err), opts, err);
}

void tide_jobs_free(tide_jobs_t *j)
{
    if (!j)
        return;
    tide_strpool_free(&j->strs);
    free(j->v);
    free(j->ckpt_gb);
    free(j);
}

/* ------------------------------------------------------------------ rl.csv */

enum {
    L_ID, L_SUBMIT, L_TEAM, L_PRIO, L_DUR, L_TGPUS, L_STEP, L_BATCH, L_RGPUS, L_TPS, L_STALE,
    L_MIN, L_MAX, /* required */
    L_TGANG, L_SLOTS, L_SIGMA, L_SYNC, L_DRAIN, L_SEED, L_WGB, L_NCOLS
};
static const char *const rl_cols[L_NCOLS] = {
    "rl_id", "submit_s", "team", "priority", "duration_s", "trainer_gpus", "step_s", "batch",
    "rollout_gpus", "replica_tps", "max_staleness", "min_replicas", "max_replicas",
    "trainer_gang_gpus", "replica_slots", "len_sigma", "sync_s", "drain_s", "seed", "weights_gb"};
#define L_NREQ 13

typedef struct rl_ctx {
    tide_rl_specs_t *out;
    size_t cap;
    int cols[L_NCOLS];
    struct tide_name_index *ids;
} rl_ctx_t;

static int rl_optional(const tide_csv_t *csv, const int *c, tide_rl_spec_t *s, tide_error_t *err)
{
    int seed = 0;
    s->len_sigma = 0;
    if (get_int(csv, c[L_TGANG], 1, TIDE_IO_MAX_COUNT, 0, &s->trainer_gang_gpus, err) < 0 ||
        get_int(csv, c[L_SLOTS], 1, 65536, 16, &s->replica_slots, err) < 0 ||
        get_secs(csv, c[L_SYNC], 1, 30, &s->sync_s, err) < 0 ||
        get_secs(csv, c[L_DRAIN], 1, 120, &s->drain_s, err) < 0 ||
        get_int(csv, c[L_SEED], 0, 2147483647, 1, &seed, err) < 0 ||
        get_gb(csv, c[L_WGB], 0, &s->weights_gb, err) < 0) /* 0: the spec's default */
        return -1;
    if (*fld(csv, c[L_WGB]) && !(s->weights_gb > 0))
        return tide_csv_fail(csv, err, c[L_WGB], TIDE_EINVAL, "must be > 0 GB (leave it empty "
                             "for the default, 16 x rollout_gpus)");
    if (*fld(csv, c[L_SIGMA]) && get_double(csv, c[L_SIGMA], 0, 0, 4, &s->len_sigma, err) < 0)
        return -1;
    s->seed = (uint64_t)seed;
    return 0;
}

static int rl_row(void *vctx, tide_csv_t *csv, tide_error_t *err)
{
    rl_ctx_t *x = vctx;
    const int *c = x->cols;
    tide_rl_spec_t s;
    memset(&s, 0, sizeof s);
    const char *id = "", *team = "";
    if (get_str(csv, c[L_ID], &id, err) < 0 ||
        get_secs(csv, c[L_SUBMIT], 0, NODEF, &s.submit_s, err) < 0 ||
        get_str(csv, c[L_TEAM], &team, err) < 0 ||
        get_prio(csv, c[L_PRIO], &s.priority, err) < 0 ||
        get_secs(csv, c[L_DUR], 1, NODEF, &s.duration_s, err) < 0 ||
        get_int(csv, c[L_TGPUS], 1, TIDE_IO_MAX_COUNT, NODEF, &s.trainer_gpus, err) < 0 ||
        get_secs(csv, c[L_STEP], 1, NODEF, &s.step_s, err) < 0 ||
        get_int(csv, c[L_BATCH], 1, 100000000, NODEF, &s.batch, err) < 0 ||
        get_int(csv, c[L_RGPUS], 1, TIDE_IO_MAX_COUNT, NODEF, &s.rollout_gpus, err) < 0 ||
        get_double(csv, c[L_TPS], 0, 1, TIDE_MAX_RPS, &s.replica_tps, err) < 0 ||
        get_int(csv, c[L_STALE], 0, 1000, NODEF, &s.max_staleness, err) < 0 ||
        get_int(csv, c[L_MIN], 1, 100000, NODEF, &s.min_replicas, err) < 0 ||
        get_int(csv, c[L_MAX], 1, 100000, NODEF, &s.max_replicas, err) < 0 ||
        rl_optional(csv, c, &s, err) < 0)
        return -1;
    s.id = id;
    s.team = team;
    tide_error_t e;
    if (tide_rl_spec_normalize(&s, &e) != 0)
        return tide_csv_fail(csv, err, -1, TIDE_EINVAL, "%s", e.msg);
    int prev = idx_get(x->ids, id);
    if (prev >= 0)
        return tide_csv_fail(csv, err, c[L_ID], TIDE_EEXIST,
                             "duplicate rl id '%.100s' (first defined on line %d)", id, prev);
    s.id = tide_xstrdup(id);
    s.team = tide_xstrdup(team);
    TIDE_PUSH(x->out->v, x->out->n, x->cap, s);
    idx_put(x->ids, s.id, tide_csv_line(csv));
    return 0;
}

static tide_rl_specs_t *read_rl(tide_csv_t *csv, const tide_read_opts_t *o, tide_error_t *err)
{
    if (!csv)
        return NULL;
    if (!o)
        o = &default_opts;
    rl_ctx_t x;
    memset(&x, 0, sizeof x);
    x.out = tide_xcalloc(1, sizeof *x.out);
    x.ids = idx_new();
    int rc = find_cols(csv, rl_cols, L_NREQ, L_NCOLS, x.cols, err);
    if (rc == 0)
        rc = each_row(csv, o, rl_row, &x, &x.out->skipped, &x.out->first_skip, err);
    idx_free(x.ids);
    tide_csv_close(csv);
    if (rc < 0) {
        tide_rl_specs_free(x.out);
        return NULL;
    }
    return x.out;
}

tide_rl_specs_t *tide_rl_specs_read_mem(const char *buf, size_t len, const char *name,
                                        const tide_read_opts_t *opts, tide_error_t *err)
{
    return read_rl(tide_csv_open_mem(buf, len, name, err), opts, err);
}

tide_rl_specs_t *tide_rl_specs_read_file(const char *path, const tide_read_opts_t *opts,
                                         tide_error_t *err)
{
    return read_rl(tide_csv_open_file(path, err), opts, err);
}

void tide_rl_specs_free(tide_rl_specs_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free((char *)r->v[i].id);
        free((char *)r->v[i].team);
    }
    free(r->v);
    free(r);
}
