/* Request-log importers: Azure LLM inference 2023 (CSV: TIMESTAMP,
 * ContextTokens, GeneratedTokens) and Mooncake/Kimi (JSONL: timestamp in ms,
 * input_length, output_length). Arrivals are binned per window into req/s;
 * tokens give each service's mean cost per request, from which the fit derives
 * replica_rps (docs/trace.md). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/csv.h"
#include "formats/workload_io.h"
#include "trace/trace.h"
#include "util/util.h"

void tide_trace_reqs_init(tide_trace_reqs_t *r) { memset(r, 0, sizeof *r); }

void tide_trace_reqs_free(tide_trace_reqs_t *r)
{
    if (!r)
        return;
    free(r->v);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------- azure */

static int azure_row(tide_csv_t *c, const int *col, tide_trace_req_t *q, tide_error_t *err)
{
    static const char *const names[] = {"TIMESTAMP", "ContextTokens", "GeneratedTokens"};
    const char *name = tide_csv_name(c);
    int line = tide_csv_line(c);
    const char *ts = tide_csv_field(c, col[0]);
    if (tide_trace_parse_datetime(ts, &q->t) < 0)
        return tide_trace_row_fail(err, name, line, names[0],
                                   "'%s' is not a date-time YYYY-MM-DD HH:MM:SS[.fraction]", ts);
    double *dst[2] = {&q->in, &q->out};
    for (int k = 0; k < 2; k++) {
        const char *f = tide_csv_field(c, col[k + 1]);
        long long v;
        if (tide_trace_parse_count(f, 0, TIDE_TRACE_MAX_TOKENS, &v) < 0)
            return tide_trace_row_fail(err, name, line, names[k + 1],
                                       "'%s' is not a whole token count in 0..%lld", f,
                                       TIDE_TRACE_MAX_TOKENS);
        *dst[k] = (double)v;
    }
    return 0;
}

int tide_trace_azure_read_mem(tide_trace_reqs_t *r, const char *buf, size_t len,
                              const char *name, int skip_bad, tide_error_t *err)
{
    tide_csv_t *c = tide_csv_open_mem(buf, len, name, err);
    if (!c)
        return -1;
    static const char *const need[] = {"TIMESTAMP", "ContextTokens", "GeneratedTokens"};
    int col[3];
    for (int i = 0; i < 3; i++)
        if ((col[i] = tide_csv_col(c, need[i])) < 0) {
            tide_errf(err, TIDE_EINVAL,
                      "%s:%d: missing required column '%s' (expected "
                      "TIMESTAMP,ContextTokens,GeneratedTokens)",
                      tide_csv_name(c), tide_csv_line(c), need[i]);
            tide_csv_close(c);
            return -1;
        }
    int rc = 0;
    for (;;) {
        tide_error_t e = {0, ""};
        int k = tide_csv_next(c, &e);
        if (k == 0)
            break;
        r->rows_read++;
        tide_trace_req_t q;
        if (k < 0) {
            if (tide_csv_recoverable(c) &&
                tide_trace_skip_row(skip_bad, &r->rows_skipped, &r->first_skip, &e) == 0)
                continue;
        } else if (azure_row(c, col, &q, &e) == 0) {
            TIDE_PUSH(r->v, r->n, r->cap, q);
            continue;
        } else if (tide_trace_skip_row(skip_bad, &r->rows_skipped, &r->first_skip, &e) == 0) {
            continue;
        }
        if (err)
            *err = e;
        rc = -1;
        break;
    }
    tide_csv_close(c);
    return rc;
}

/* ---------------------------------------------------------------- mooncake */

/* A number field of obj in lo..hi (whole if `whole`). */
static int json_num(json_t *obj, const char *key, double lo, double hi, int whole, double *out,
                    const char *name, int line, tide_error_t *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return tide_errf(err, TIDE_EINVAL, "%s:%d: field '%s': missing", name, line, key);
    if (!json_is_number(v))
        return tide_errf(err, TIDE_EINVAL, "%s:%d: field '%s': not a number", name, line, key);
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || x > hi || (whole && x != floor(x)))
        return tide_errf(err, TIDE_EINVAL, "%s:%d: field '%s': %g is not %s in %g..%g", name,
                         line, key, x, whole ? "a whole number" : "a number", lo, hi);
    *out = x + 0.0;
    return 0;
}

static int mooncake_line(const char *s, size_t n, const char *name, int line,
                         tide_trace_req_t *q, tide_error_t *err)
{
    json_error_t je;
    json_t *o = json_loadb(s, n, 0, &je);
    if (!o)
        return tide_errf(err, TIDE_EINVAL, "%s:%d: invalid JSON: %s", name, line, je.text);
    int rc = -1;
    double ms;
    if (!json_is_object(o))
        tide_errf(err, TIDE_EINVAL, "%s:%d: not a JSON object", name, line);
    else if (json_num(o, "timestamp", 0, 1e14, 0, &ms, name, line, err) == 0 &&
             json_num(o, "input_length", 0, (double)TIDE_TRACE_MAX_TOKENS, 1, &q->in, name, line,
                      err) == 0 &&
             json_num(o, "output_length", 0, (double)TIDE_TRACE_MAX_TOKENS, 1, &q->out, name,
                      line, err) == 0) {
        q->t = ms / 1000.0;
        rc = 0;
    }
    json_decref(o);
    return rc;
}

int tide_trace_mooncake_read_mem(tide_trace_reqs_t *r, const char *buf, size_t len,
                                 const char *name, int skip_bad, tide_error_t *err)
{
    if (!name)
        name = "<memory>";
    size_t pos = 0;
    int line = 0;
    while (pos < len) {
        line++;
        const char *s = buf + pos;
        const char *nl = memchr(s, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - s) : len - pos;
        pos += n + (nl ? 1 : 0);
        if (n && s[n - 1] == '\r')
            n--;
        size_t k = 0;
        while (k < n && (s[k] == ' ' || s[k] == '\t'))
            k++;
        if (k == n)
            continue; /* blank line */
        r->rows_read++;
        tide_trace_req_t q;
        tide_error_t e = {0, ""};
        if (mooncake_line(s, n, name, line, &q, &e) == 0) {
            TIDE_PUSH(r->v, r->n, r->cap, q);
            continue;
        }
        if (tide_trace_skip_row(skip_bad, &r->rows_skipped, &r->first_skip, &e) == 0)
            continue;
        if (err)
            *err = e;
        return -1;
    }
    return 0;
}

/* --------------------------------------------------------------------- bin */

int tide_trace_reqs_bin(const tide_trace_reqs_t *r, double t0, double window_s,
                        double prefill_weight, const char *service, tide_trace_demand_t *d,
                        tide_error_t *err)
{
    if (!service)
        service = "";
    if (r->n == 0)
        return tide_errf(err, TIDE_EINVAL, "service '%s': no request", service);
    if (!(window_s >= 1) || window_s > (double)TIDE_IO_MAX_SECONDS)
        return tide_errf(err, TIDE_EINVAL, "window must be 1s..%llds, not %g",
                         (long long)TIDE_IO_MAX_SECONDS, window_s);
    if (!(prefill_weight >= 0) || prefill_weight > 1e6)
        return tide_errf(err, TIDE_EINVAL, "prefill weight must be in 0..1e6, not %g",
                         prefill_weight);
    double tmax = t0;
    for (size_t i = 0; i < r->n; i++) {
        if (!(r->v[i].t >= t0))
            return tide_errf(err, TIDE_EINVAL, "service '%s': request before the origin",
                             service);
        tmax = TIDE_MAX(tmax, r->v[i].t);
    }
    double full = floor((tmax - t0) / window_s);
    if (full > TIDE_TRACE_MAX_WINDOWS)
        return tide_errf(err, TIDE_EINVAL,
                         "service '%s': %.0f windows of %gs (at most %d; use a larger --window)",
                         service, full, window_s, TIDE_TRACE_MAX_WINDOWS);
    size_t n = full < 1 ? 1 : (size_t)full;
    double end = full < 1 ? INFINITY : t0 + (double)n * window_s;
    double *rps = tide_xcalloc(n, sizeof *rps);
    long long kept = 0;
    double cost = 0;
    for (size_t i = 0; i < r->n; i++) {
        const tide_trace_req_t *q = &r->v[i];
        if (q->t >= end)
            continue;
        double w = floor((q->t - t0) / window_s);
        size_t k = w < 0 ? 0 : w >= (double)n ? n - 1 : (size_t)w;
        rps[k] += 1;
        kept++;
        cost += prefill_weight * q->in + q->out;
    }
    for (size_t k = 0; k < n; k++)
        rps[k] /= window_s;
    int rc = tide_trace_demand_add(d, service, rps, n, window_s, kept ? cost / (double)kept : 0,
                                   err);
    free(rps);
    if (rc < 0)
        return -1;
    d->v[d->n - 1].requests = kept;
    d->requests += kept;
    return 0;
}

/* ------------------------------------------------------------------- load */

typedef int (*read_fn)(tide_trace_reqs_t *r, const char *buf, size_t len, const char *name,
                       int skip_bad, tide_error_t *err);

/* Read every source, bin them from their common first arrival. */
static int load(const char *const *srcs, size_t n, const tide_trace_opts_t *o,
                tide_trace_demand_t *d, read_fn rd, const char *strip, tide_error_t *err)
{
    tide_trace_reqs_t *rs = tide_xcalloc(n, sizeof *rs);
    int rc = 0;
    double t0 = INFINITY;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char *buf;
        size_t len;
        if ((rc = tide_trace_read_all(srcs[i], &buf, &len, err)) < 0)
            break;
        rc = rd(&rs[i], buf, len, srcs[i], o->skip_bad, err);
        free(buf);
        d->files++;
        d->rows_read += rs[i].rows_read;
        if (d->rows_skipped == 0 && rs[i].rows_skipped)
            d->first_skip = rs[i].first_skip;
        d->rows_skipped += rs[i].rows_skipped;
        for (size_t k = 0; k < rs[i].n; k++)
            t0 = TIDE_MIN(t0, rs[i].v[k].t);
        if (rc == 0 && rs[i].n == 0)
            rc = tide_errf(err, TIDE_EINVAL, "%s: no request", srcs[i]);
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        char *name = tide_trace_service_name(o, i, srcs[i], strip);
        rc = tide_trace_reqs_bin(&rs[i], t0, o->window_s, o->prefill_weight, name, d, err);
        free(name);
    }
    for (size_t i = 0; i < n; i++)
        tide_trace_reqs_free(&rs[i]);
    free(rs);
    return rc;
}

int tide_trace_azure_load(const char *const *srcs, size_t n, const tide_trace_opts_t *o,
                          tide_trace_demand_t *d, tide_error_t *err)
{
    return load(srcs, n, o, d, tide_trace_azure_read_mem, ".csv", err);
}

int tide_trace_mooncake_load(const char *const *srcs, size_t n, const tide_trace_opts_t *o,
                             tide_trace_demand_t *d, tide_error_t *err)
{
    return load(srcs, n, o, d, tide_trace_mooncake_read_mem, ".jsonl|.json", err);
}
