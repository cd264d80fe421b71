/* HTTP GET of a URL (through http/client.c) and Prometheus query responses. */
#include "http/get.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/client.h"
#include "util/util.h"

int tide_http_url_parse(const char *url, char *host, size_t hostn, char *port, size_t portn,
                        char *path, size_t pathn, tide_error_t *err)
{
    if (!url || strncmp(url, "http://", 7))
        return tide_errf(err, TIDE_EINVAL, "'%.200s' is not an http:// URL", url ? url : "");
    const char *h = url + 7, *end = h + strcspn(h, "/?#");
    const char *hs = h, *he, *ps = NULL, *pe = end;
    if (*h == '[') {
        he = memchr(h, ']', (size_t)(end - h));
        if (!he)
            return tide_errf(err, TIDE_EINVAL, "'%.200s': unterminated [IPv6] host", url);
        hs = h + 1;
        if (he + 1 < end && he[1] == ':')
            ps = he + 2;
        else if (he + 1 != end)
            return tide_errf(err, TIDE_EINVAL, "'%.200s': garbage after the host", url);
    } else {
        he = memchr(h, ':', (size_t)(end - h));
        if (he)
            ps = he + 1;
        else
            he = end;
    }
    if (memchr(h, '@', (size_t)(end - h)))
        return tide_errf(err, TIDE_EINVAL, "'%.200s': user info is not supported", url);
    if (he == hs || (size_t)(he - hs) >= hostn)
        return tide_errf(err, TIDE_EINVAL, "'%.200s': bad host", url);
    memcpy(host, hs, (size_t)(he - hs));
    host[he - hs] = '\0';
    if (ps) {
        size_t pl = (size_t)(pe - ps);
        if (pl == 0 || pl >= portn || pl > 5)
            return tide_errf(err, TIDE_EINVAL, "'%.200s': bad port", url);
        for (size_t i = 0; i < pl; i++)
            if (ps[i] < '0' || ps[i] > '9')
                return tide_errf(err, TIDE_EINVAL, "'%.200s': bad port", url);
        memcpy(port, ps, pl);
        port[pl] = '\0';
        if (atoi(port) < 1 || atoi(port) > 65535)
            return tide_errf(err, TIDE_EINVAL, "'%.200s': bad port", url);
    } else {
        snprintf(port, portn, "80");
    }
    const char *rest = end;
    if (*rest == '#')
        rest = "";
    size_t rl = strcspn(rest, "#");
    if (rl + 2 > pathn)
        return tide_errf(err, TIDE_EINVAL, "'%.200s': path too long", url);
    size_t o = 0;
    if (*rest != '/')
        path[o++] = '/';
    memcpy(path + o, rest, rl);
    path[o + rl] = '\0';
    for (char *p = path; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f)
            return tide_errf(err, TIDE_EINVAL, "'%.200s': spaces or control characters in the path",
                             url);
    return 0;
}

int tide_http_get(const char *url, int timeout_ms, size_t max, char **body, size_t *len,
                  int *status, tide_error_t *err)
{
    *body = NULL;
    *len = 0;
    *status = 0;
    char host[256], port[8], path[4096];
    if (tide_http_url_parse(url, host, sizeof host, port, sizeof port, path, sizeof path, err) < 0)
        return -1;
    tide_http_call_t rq = {.method = "GET", .host = host, .port = port, .path = path,
                          .what = url, .timeout_ms = timeout_ms, .max = max};
    tide_http_resp_t r;
    if (tide_http_request(&rq, &r, err) < 0)
        return -1;
    *body = r.body;
    *len = r.len;
    *status = r.status;
    return 0;
}

/* One [ts, "value"] pair as given: *ts and the value's text *s (NULL with
 * EINVAL when the pair is malformed). */
static const char *pair_text(const json_t *pair, double *ts, tide_error_t *err)
{
    if (!json_is_array(pair) || json_array_size(pair) != 2 || !json_is_number(json_array_get(pair, 0)) ||
        !json_is_string(json_array_get(pair, 1))) {
        tide_errf(err, TIDE_EINVAL, "query result: expected [time, \"value\"]");
        return NULL;
    }
    *ts = json_number_value(json_array_get(pair, 0));
    return json_string_value(json_array_get(pair, 1));
}

/* One [ts, "value"] pair whose value is a finite number >= 0. */
static int sample(const json_t *pair, double *v, double *ts, tide_error_t *err)
{
    const char *s = pair_text(pair, ts, err);
    if (!s)
        return -1;
    char *end;
    *v = strtod(s, &end);
    if (end == s || *end || !isfinite(*v) || *v < 0)
        return tide_errf(err, TIDE_EINVAL, "query result: value '%.40s' is not a finite number >= 0",
                         s);
    return 0;
}

/* A Prometheus API response (what: "query" or "range query" for messages):
 * its root (caller decrefs), result type (NULL when none) and result; NULL
 * with err: EINVAL not JSON, EIO status "error". */
static json_t *prom_load(const char *body, size_t len, const char *what, const char **rt,
                         const json_t **res, tide_error_t *err)
{
    json_error_t je;
    json_t *j = json_loadb(body, len, 0, &je);
    if (!j) {
        tide_errf(err, TIDE_EINVAL, "%s response is not JSON: %s", what, je.text);
        return NULL;
    }
    const char *st = json_string_value(json_object_get(j, "status"));
    const json_t *data = json_object_get(j, "data");
    *rt = json_string_value(json_object_get(data, "resultType"));
    *res = json_object_get(data, "result");
    if (!st || strcmp(st, "success")) {
        const char *m = json_string_value(json_object_get(j, "error"));
        tide_errf(err, TIDE_EIO, "%s failed: %.300s", what, m ? m : "status is not success");
        json_decref(j);
        return NULL;
    }
    return j;
}

int tide_prom_query_value(const char *body, size_t len, double *value, double *ts, tide_error_t *err)
{
    const char *rt;
    const json_t *res;
    json_t *j = prom_load(body, len, "query", &rt, &res, err);
    if (!j)
        return -1;
    int rc = 0;
    if (rt && !strcmp(rt, "scalar")) {
        rc = sample(res, value, ts, err);
    } else if (rt && !strcmp(rt, "vector") && json_is_array(res)) {
        if (json_array_size(res) == 0)
            rc = tide_errf(err, TIDE_ENOENT, "query returned no series");
        double sum = 0, last = -INFINITY;
        for (size_t i = 0; rc == 0 && i < json_array_size(res); i++) {
            double v, t;
            rc = sample(json_object_get(json_array_get(res, i), "value"), &v, &t, err);
            if (rc == 0) {
                sum += v;
                if (t > last)
                    last = t;
            }
        }
        if (rc == 0) {
            *value = sum;
            *ts = last;
        }
    } else {
        rc = tide_errf(err, TIDE_EINVAL, "query result type '%.40s' (want vector or scalar)",
                       rt ? rt : "?");
    }
    json_decref(j);
    return rc;
}

/* ------------------------------------------------------------ range query */

typedef struct rpt {
    double ts, v;
} rpt_t;

static int rpt_cmp(const void *a, const void *b)
{
    const rpt_t *x = a, *y = b;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* The samples of one series ("values": [[ts, "v"], ...]) appended to *p. */
static int series_values(const json_t *vals, rpt_t **p, size_t *n, size_t *cap, tide_error_t *err)
{
    if (!json_is_array(vals))
        return tide_errf(err, TIDE_EINVAL, "range result: a series without \"values\"");
    for (size_t i = 0; i < json_array_size(vals); i++) {
        const json_t *pair = json_array_get(vals, i);
        const json_t *s = json_array_get(pair, 1);
        /* Prometheus writes "NaN" where a ratio has no value (0/0): no sample */
        if (json_is_string(s) && !strcmp(json_string_value(s), "NaN") && json_array_size(pair) == 2)
            continue;
        rpt_t r;
        if (sample(pair, &r.v, &r.ts, err) < 0)
            return tide_err_prefix(err, "range ");
        if (!isfinite(r.ts))
            return tide_errf(err, TIDE_EINVAL, "range query result: bad sample time");
        TIDE_PUSH(*p, *n, *cap, r);
    }
    return 0;
}

int tide_prom_range_values(const char *body, size_t len, double **ts, double **values, size_t *n,
                           tide_error_t *err)
{
    *ts = *values = NULL;
    *n = 0;
    const char *rt;
    const json_t *res;
    json_t *j = prom_load(body, len, "range query", &rt, &res, err);
    if (!j)
        return -1;
    rpt_t *p = NULL;
    size_t np = 0, cap = 0;
    int rc = 0;
    if (!rt || strcmp(rt, "matrix") || !json_is_array(res)) {
        rc = tide_errf(err, TIDE_EINVAL, "range query result type '%.40s' (want matrix)",
                       rt ? rt : "?");
    } else {
        for (size_t i = 0; rc == 0 && i < json_array_size(res); i++)
            rc = series_values(json_object_get(json_array_get(res, i), "values"), &p, &np, &cap, err);
    }
    json_decref(j);
    if (rc == 0 && np == 0)
        rc = tide_errf(err, TIDE_ENOENT, "range query returned no samples");
    if (rc < 0) {
        free(p);
        return -1;
    }
    /* series summed at each time (Prometheus aligns them on the step) */
    qsort(p, np, sizeof *p, rpt_cmp);
    *ts = tide_xmalloc(np * sizeof **ts);
    *values = tide_xmalloc(np * sizeof **values);
    for (size_t i = 0; i < np; i++) {
        if (*n > 0 && (*ts)[*n - 1] == p[i].ts) {
            (*values)[*n - 1] += p[i].v;
            continue;
        }
        (*ts)[*n] = p[i].ts;
        (*values)[*n] = p[i].v;
        (*n)++;
    }
    free(p);
    return 0;
}

/* Is query argument a (at a, length n) one the range query sets itself? */
static int range_arg(const char *a, size_t n)
{
    static const char *const own[] = {"time=", "start=", "end=", "step="};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (n >= strlen(own[i]) && !strncmp(a, own[i], strlen(own[i])))
            return 1;
    return 0;
}

int tide_prom_range_url(const char *url, double start, double end, double step, char *out,
                        size_t n, tide_error_t *err)
{
    static const char api[] = "/api/v1/query";
    const char *q = url ? strchr(url, '?') : NULL;
    const char *pe = q ? q : url ? url + strlen(url) : NULL;
    size_t al = sizeof api - 1;
    if (!pe || (size_t)(pe - url) < al || strncmp(pe - al, api, al))
        return tide_errf(err, TIDE_EINVAL,
                         "'%.200s' is not a Prometheus instant query URL (.../api/v1/query?query=...)",
                         url ? url : "");
    if (!(step > 0) || !(end >= start) || !isfinite(start) || !isfinite(end))
        return tide_errf(err, TIDE_EINVAL, "range query: bad range [%g, %g] step %g", start, end, step);
    size_t o = (size_t)(pe - url);
    if (o + 8 > n)
        return tide_errf(err, TIDE_ERANGE, "range query URL too long");
    memcpy(out, url, o);
    memcpy(out + o, "_range?", 8);
    o += 7;
    int first = 1;
    for (const char *a = q ? q + 1 : ""; *a;) {
        size_t l = strcspn(a, "&");
        if (l > 0 && !range_arg(a, l)) {
            if (o + l + 2 > n)
                return tide_errf(err, TIDE_ERANGE, "range query URL too long");
            if (!first)
                out[o++] = '&';
            memcpy(out + o, a, l);
            o += l;
            first = 0;
        }
        a += l + (a[l] == '&');
    }
    int w = snprintf(out + o, n - o, "%sstart=%.3f&end=%.3f&step=%.3f", first ? "" : "&", start,
                     end, step);
    if (w < 0 || (size_t)w >= n - o)
        return tide_errf(err, TIDE_ERANGE, "range query URL too long");
    return 0;
}

/* One series of a vector into *o (labels asked for). */
static int series_one(const json_t *r, const char *const *labels, size_t nl,
                      tide_prom_series_t *o, tide_error_t *err)
{
    const json_t *met = json_object_get(r, "metric");
    const char *s = pair_text(json_object_get(r, "value"), &o->ts, err);
    if (!s)
        return -1;
    char *end;
    o->value = strtod(s, &end);
    if (end == s || *end)
        o->value = NAN; /* not a number: the caller refuses it */
    for (size_t k = 0; k < nl; k++) {
        const char *v = json_string_value(json_object_get(met, labels[k]));
        o->label[k] = v ? tide_xstrdup(v) : NULL;
    }
    return 0;
}

int tide_prom_query_series(const char *body, size_t len, const char *const *labels,
                           size_t n_labels, tide_prom_series_t **out, size_t *n,
                           tide_error_t *err)
{
    *out = NULL;
    *n = 0;
    if (n_labels > TIDE_PROM_SERIES_LABELS)
        return tide_errf(err, TIDE_EINVAL, "at most %d labels", TIDE_PROM_SERIES_LABELS);
    const char *rt;
    const json_t *res;
    json_t *j = prom_load(body, len, "query", &rt, &res, err);
    if (!j)
        return -1;
    int rc = 0;
    if (!rt || strcmp(rt, "vector") || !json_is_array(res)) {
        rc = tide_errf(err, TIDE_EINVAL, "query result type '%.40s' (want vector)",
                       rt ? rt : "?");
    } else {
        size_t m = json_array_size(res);
        *out = tide_xcalloc(m ? m : 1, sizeof **out);
        for (size_t i = 0; rc == 0 && i < m; i++, (*n)++)
            rc = series_one(json_array_get(res, i), labels, n_labels, &(*out)[i], err);
        if (rc < 0) {
            tide_prom_series_free(*out, *n);
            *out = NULL;
            *n = 0;
        }
    }
    json_decref(j);
    return rc;
}

void tide_prom_series_free(tide_prom_series_t *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        for (int k = 0; k < TIDE_PROM_SERIES_LABELS; k++)
            free(v[i].label[k]);
    free(v);
}
