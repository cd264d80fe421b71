/* Pulled demand: one Prometheus query per service, fetched every tick. A
 * fresh value becomes a DEMAND event; a failed source (or one without a fresh
 * value for 3 ticks) is reported and simply feeds nothing, so the engine keeps
 * its last value, its forecast and its margin (never a zero). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/internal.h"
#include "http/get.h"
#include "util/util.h"

#define STALE_TICKS 3
#define REFEED_S 60 /* feed an unchanged value again after this many engine seconds */

void dmn_demand_fetch(const dsrc_t *src, size_t n, dfetch_t *out, int timeout_ms)
{
    for (size_t i = 0; i < n; i++) {
        dfetch_t *f = &out[i];
        memset(f, 0, sizeof *f);
        char *body = NULL;
        size_t len = 0;
        int status = 0;
        tide_error_t err = {0};
        if (tide_http_get(src[i].url, timeout_ms, 1u << 20, &body, &len, &status, &err) < 0) {
            snprintf(f->err, sizeof f->err, "%s", err.msg);
        } else if (status != 200) {
            snprintf(f->err, sizeof f->err, "HTTP %d", status);
        } else if (tide_prom_query_value(body, len, &f->value, &f->ts, &err) < 0) {
            f->empty = err.code == TIDE_ENOENT;
            snprintf(f->err, sizeof f->err, "%s", err.msg);
        } else if (!(f->value <= TIDE_MAX_RPS)) {
            /* out of range: refused like a failed query (the engine keeps its value) */
            snprintf(f->err, sizeof f->err, "value %g is above the maximum demand %g rps",
                     f->value, TIDE_MAX_RPS);
        } else {
            f->ok = 1;
        }
        free(body);
    }
}

void dmn_demand_apply(tide_daemon_t *d, const dfetch_t *f, tide_time_t now)
{
    for (size_t i = 0; i < d->n_src; i++) {
        dsrc_t *s = &d->src[i];
        int fresh = f[i].ok && (!s->have || f[i].ts != s->last_ts);
        if (fresh) {
            s->have = 1;
            s->last_ts = f[i].ts;
            s->last_value = f[i].value;
            s->misses = 0;
            if (!s->up)
                dmn_log(d, "demand source for %s is up (%.3f rps)", s->service, f[i].value);
            s->up = 1;
            s->down_reported = 0;
            s->last_err[0] = '\0';
            if (s->fed_t < 0 || f[i].value != s->fed_value || now - s->fed_t >= REFEED_S) {
                tide_event_t ev = {.kind = TIDE_EV_DEMAND, .job = -1, .service = s->svc,
                                   .replica = -1, .node = -1, .value = f[i].value};
                tide_grow((void **)&d->extra.v, &d->extra.cap, d->extra.n + 1, sizeof *d->extra.v);
                dmn_ev_t *x = &d->extra.v[d->extra.n++];
                memset(x, 0, sizeof *x);
                x->ev = ev;
                x->t = now;
                x->source = "demand";
                x->service_name = tide_xstrdup(s->service);
                s->fed_value = f[i].value;
                s->fed_t = now;
            }
            continue;
        }
        s->misses++;
        if (!f[i].ok && !f[i].empty)
            snprintf(s->last_err, sizeof s->last_err, "%s", f[i].err);
        else
            snprintf(s->last_err, sizeof s->last_err, "no fresh value for %d ticks", s->misses);
        int down = (!f[i].ok && !f[i].empty) || s->misses >= STALE_TICKS;
        if (down && !s->down_reported) {
            s->down_reported = 1;
            dmn_log(d,
                    "demand source for %s is down (%s): feeding nothing, the engine keeps its "
                    "forecast and margin",
                    s->service, s->last_err);
        }
        if (down)
            s->up = 0;
    }
}
