/* Demand history at start (docs/serve.md "Demand history"): past demand fed
 * to every fresh engine before its first step, so the forecast knows the
 * daily and weekly shapes from minute one.
 *
 * Where it comes from, once, when the database has no step yet (its first
 * start): `--demand-history FILE` (demand.csv whose latest time is "now"),
 * and for each `--demand-query` service the file does not cover, a
 * Prometheus range query over the last `--demand-history-days` days of
 * engine time (wall seconds x speed). A failed range query is a warning;
 * a bad file is an error.
 *
 * The points, in engine time, are stored in the database (meta
 * "demand_history", JSON) and every engine the daemon builds (recovery,
 * in-place rebuild, a new epoch) gets the stored ones: recovery replays
 * exactly what the first start saw, whatever the file or Prometheus say
 * later (a changed file is reported, not used). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/internal.h"
#include "formats/workload_io.h"
#include "http/get.h"
#include "util/util.h"

#define META_KEY "demand_history"
#define META_FILE "demand_history_file" /* the file's name and content hash */
#define RANGE_POINTS 11000               /* Prometheus answers at most 11,000 points a series */
#define RANGE_MIN_STEP_S 60              /* engine seconds */
#define RANGE_TIMEOUT_MS 10000
#define RANGE_MAX_BODY (64u << 20)

typedef struct hist_series {
    char *service;
    tide_time_t *t;
    double *rps;
    size_t n, cap_t, cap_r;
    const char *from; /* static: "file" or "prometheus" */
} hseries_t;

typedef struct hist {
    hseries_t *v;
    size_t n, cap;
} hist_t;

static hseries_t *series_get(hist_t *h, const char *service, const char *from)
{
    for (size_t i = 0; i < h->n; i++)
        if (!strcmp(h->v[i].service, service))
            return &h->v[i];
    hseries_t s = {.service = tide_xstrdup(service), .from = from};
    TIDE_PUSH(h->v, h->n, h->cap, s);
    return &h->v[h->n - 1];
}

static void series_add(hseries_t *s, tide_time_t t, double rps)
{
    size_t n = s->n;
    TIDE_PUSH(s->t, n, s->cap_t, t);
    TIDE_PUSH(s->rps, s->n, s->cap_r, rps);
}

static void hist_free(hist_t *h)
{
    for (size_t i = 0; i < h->n; i++) {
        free(h->v[i].service);
        free(h->v[i].t);
        free(h->v[i].rps);
    }
    free(h->v);
    memset(h, 0, sizeof *h);
}

/* ------------------------------------------------------------- storage */

static char *hist_encode(const hist_t *h)
{
    json_t *series = json_array();
    for (size_t i = 0; i < h->n; i++) {
        json_t *t = json_array(), *r = json_array();
        for (size_t k = 0; k < h->v[i].n; k++) {
            json_array_append_new(t, json_integer(h->v[i].t[k]));
            json_array_append_new(r, json_real(h->v[i].rps[k]));
        }
        json_array_append_new(series, json_pack("{s:s, s:s, s:o, s:o}", "service", h->v[i].service,
                                                "from", h->v[i].from, "t", t, "rps", r));
    }
    json_t *j = json_pack("{s:i, s:o}", "version", 1, "series", series);
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return s;
}

static int hist_decode(const char *s, hist_t *h, tide_error_t *err)
{
    json_error_t je;
    json_t *j = json_loads(s, 0, &je);
    const json_t *series = json_object_get(j, "series");
    if (!j || !json_is_array(series)) {
        json_decref(j);
        return tide_errf(err, TIDE_EIO, "database: the stored demand history is not readable");
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < json_array_size(series); i++) {
        const json_t *o = json_array_get(series, i);
        const char *name = json_string_value(json_object_get(o, "service"));
        const char *from = json_string_value(json_object_get(o, "from"));
        const json_t *t = json_object_get(o, "t"), *r = json_object_get(o, "rps");
        if (!name || !json_is_array(t) || !json_is_array(r) || json_array_size(t) != json_array_size(r)) {
            rc = tide_errf(err, TIDE_EIO, "database: the stored demand history is not readable");
            break;
        }
        hseries_t *sv = series_get(h, name, from && !strcmp(from, "file") ? "file" : "prometheus");
        for (size_t k = 0; k < json_array_size(t); k++)
            series_add(sv, (tide_time_t)json_integer_value(json_array_get(t, k)),
                       json_number_value(json_array_get(r, k)));
    }
    json_decref(j);
    return rc;
}

/* FNV-1a 64 of a file's content as hex (0 when unreadable). */
static int file_hash(const char *path, char *out, size_t n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    uint64_t h = 1469598103934665603ULL;
    int c;
    while ((c = getc(f)) != EOF) {
        h ^= (unsigned char)c;
        h *= 1099511628211ULL;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad)
        return -1;
    snprintf(out, n, "%016llx", (unsigned long long)h);
    return 0;
}

/* -------------------------------------------------------------- sources */

/* FILE, aligned so its latest time is `start`. */
static int load_file(tide_daemon_t *d, const char *path, tide_time_t start, hist_t *h,
                     tide_error_t *err)
{
    if (d->n_svcs == 0)
        return tide_errf(err, TIDE_EINVAL,
                         "--demand-history %s: the database has no services yet (give --services)",
                         path);
    tide_services_t *svcs = tide_services_from_specs(d->svcs, d->n_svcs);
    tide_demand_t *dem = tide_demand_read_file(path, svcs, NULL, err);
    int rc = dem ? tide_demand_history_align(dem, start, err) : -1;
    for (size_t i = 0; rc == 0 && i < dem->n; i++)
        series_add(series_get(h, svcs->v[dem->v[i].service].name, "file"), dem->v[i].t,
                   dem->v[i].rps);
    tide_demand_free(dem);
    tide_services_free(svcs);
    return rc < 0 ? tide_err_prefix(err, "--demand-history %s: ", path) : 0;
}

/* One range query: the last `days` days of engine time before `start`. */
static int load_range(tide_daemon_t *d, const tide_demand_query_t *q, int days, tide_time_t start,
                      hist_t *h, tide_error_t *err)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    double end = (double)now.tv_sec + now.tv_nsec * 1e-9;
    double span = (double)days * 86400.0;
    double step = ceil(span / RANGE_POINTS);
    if (step < RANGE_MIN_STEP_S)
        step = RANGE_MIN_STEP_S;
    if (step / d->speed < 0.001) /* Prometheus's resolution is 1 ms */
        step = 0.001 * d->speed;
    char url[8192];
    if (tide_prom_range_url(q->url, end - span / d->speed, end, step / d->speed, url, sizeof url,
                            err) < 0)
        return -1;
    char *body = NULL;
    size_t len = 0;
    int status = 0;
    double *ts = NULL, *v = NULL;
    size_t n = 0;
    int rc = tide_http_get(url, RANGE_TIMEOUT_MS, RANGE_MAX_BODY, &body, &len, &status, err);
    if (rc == 0) {
        rc = tide_prom_range_values(body, len, &ts, &v, &n, err);
        if (status != 200 && rc < 0 && err && err->code == TIDE_EIO) {
            tide_err_prefix(err, "HTTP %d: ", status); /* Prometheus's error body */
        } else if (status != 200) {
            free(ts);
            free(v);
            ts = v = NULL;
            rc = tide_errf(err, TIDE_EIO, "HTTP %d from %.200s", status, url);
        }
    }
    free(body);
    hseries_t *s = rc == 0 ? series_get(h, q->service, "prometheus") : NULL;
    for (size_t i = 0; s && i < n; i++) {
        tide_time_t t = start + (tide_time_t)floor((ts[i] - end) * d->speed + 0.5);
        if (t <= start && (s->n == 0 || t > s->t[s->n - 1]))
            series_add(s, t, v[i]);
    }
    free(ts);
    free(v);
    return rc;
}

static int has_service(const tide_daemon_t *d, const char *name)
{
    for (size_t i = 0; i < d->n_svcs; i++)
        if (!strcmp(d->svcs[i].name, name))
            return 1;
    return 0;
}

/* The first start: the history from the options. */
static int hist_gather(tide_daemon_t *d, const tide_daemon_opts_t *o, tide_time_t start,
                       hist_t *h, tide_error_t *err)
{
    if (o->demand_history && load_file(d, o->demand_history, start, h, err) < 0)
        return -1;
    for (size_t i = 0; o->history_days > 0 && i < o->n_queries; i++) {
        const tide_demand_query_t *q = &o->queries[i];
        int covered = 0;
        for (size_t k = 0; k < h->n; k++)
            covered |= !strcmp(h->v[k].service, q->service);
        if (covered || !has_service(d, q->service))
            continue; /* the file wins; an unknown service is refused later */
        tide_error_t qe = {0};
        if (load_range(d, q, o->history_days, start, h, &qe) < 0)
            dmn_log(d, "demand history: the range query for %s failed (%s): starting without "
                       "its history",
                    q->service, qe.msg);
    }
    return 0;
}

static int hist_store(tide_daemon_t *d, const hist_t *h, const char *file, tide_error_t *err)
{
    char *enc = h->n ? hist_encode(h) : tide_xstrdup("");
    char fh[4200] = "";
    char hash[32];
    if (file && file_hash(file, hash, sizeof hash) == 0)
        snprintf(fh, sizeof fh, "%s\t%.4000s", hash, file);
    int rc = tide_store_begin(d->st, err);
    if (rc == 0 && (tide_store_meta_set(d->st, META_KEY, enc, err) < 0 ||
                    tide_store_meta_set(d->st, META_FILE, fh, err) < 0 ||
                    tide_store_commit(d->st, err) < 0)) {
        tide_store_rollback(d->st);
        rc = -1;
    }
    free(enc);
    return rc;
}

/* A restart: say what the history options no longer do. */
static void hist_note(tide_daemon_t *d, const tide_daemon_opts_t *o, int stored)
{
    if (!o->demand_history && !(o->history_days > 0 && o->n_queries > 0))
        return;
    if (!stored) {
        dmn_log(d, "demand history: the database already has steps, so --demand-history and the "
                   "range queries are not used (history is loaded at a database's first start)");
        return;
    }
    if (!o->demand_history)
        return;
    tide_error_t e = {0};
    char *was = tide_store_meta_get(d->st, META_FILE, &e);
    char hash[32];
    if (file_hash(o->demand_history, hash, sizeof hash) < 0)
        dmn_log(d, "demand history: %s is not readable; the history stored at the first start "
                   "is used",
                o->demand_history);
    else if (!was || strncmp(was, hash, strlen(hash)))
        dmn_log(d, "demand history: %s changed since the database stored its history (at its "
                   "first start); the stored history is used (start a new --db to load another)",
                o->demand_history);
    free(was);
}

/* ------------------------------------------------------------------ api */

static void hist_log(tide_daemon_t *d, const hist_t *h)
{
    for (size_t i = 0; i < h->n; i++)
        if (h->v[i].n)
            dmn_log(d, "demand history: %s: %zu points from %s, t %lld..%lld", h->v[i].service,
                    h->v[i].n, h->v[i].from, (long long)h->v[i].t[0],
                    (long long)h->v[i].t[h->v[i].n - 1]);
}

int dmn_history_open(tide_daemon_t *d, const tide_daemon_opts_t *o, tide_error_t *err)
{
    int64_t last;
    tide_time_t lt;
    if (tide_store_last_step(d->st, &last, &lt, err) < 0)
        return -1;
    hist_t h = {0};
    if (last > 0) {
        tide_error_t ge = {0};
        char *s = tide_store_meta_get(d->st, META_KEY, &ge);
        if (!s && ge.code != TIDE_ENOENT) {
            *err = ge;
            return -1;
        }
        int rc = s && *s ? hist_decode(s, &h, err) : 0;
        hist_note(d, o, s && *s);
        free(s);
        if (rc < 0) {
            hist_free(&h);
            return -1;
        }
    } else {
        /* no step yet: what an earlier attempt stored was never used */
        tide_error_t ge = {0};
        char *old = tide_store_meta_get(d->st, META_KEY, &ge);
        int had = old && *old;
        free(old);
        if (hist_gather(d, o, lt, &h, err) < 0 ||
            ((h.n || had) && hist_store(d, &h, o->demand_history, err) < 0)) {
            hist_free(&h);
            return -1;
        }
    }
    hist_log(d, &h);
    dmn_history_free(d);
    d->hist = tide_xcalloc(1, sizeof h);
    *(hist_t *)d->hist = h;
    return 0;
}

void dmn_history_apply(tide_daemon_t *d)
{
    const hist_t *h = d->hist;
    for (size_t i = 0; h && i < h->n; i++) {
        int s = tide_engine_service_find(d->e, h->v[i].service);
        tide_error_t e = {0};
        for (size_t k = 0; s >= 0 && k < h->v[i].n; k++)
            if (tide_engine_demand_history(d->e, s, h->v[i].t[k], h->v[i].rps[k], &e) < 0) {
                dmn_log(d, "demand history of %s not applied from t=%lld: %s", h->v[i].service,
                        (long long)h->v[i].t[k], e.msg);
                break;
            }
    }
}

void dmn_history_free(tide_daemon_t *d)
{
    if (d->hist)
        hist_free(d->hist);
    free(d->hist);
    d->hist = NULL;
}
