/* The admin API: health, metrics, the event feed, reloads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/internal.h"
#include "http/prom.h"
#include "util/util.h"

/* Ready: the loop runs, the database is the file we opened and it writes
 * (not degraded). */
API_HANDLER(api_healthz)
{
    (void)req;
    tide_daemon_t *d = API_D(app);
    tide_daemon_lock(d);
    tide_error_t err = {0};
    dmn_store_recheck(d);
    int db = tide_store_ping(d->st, &err);
    if (db < 0)
        dmn_store_fault(d, &err); /* noticed here first (a lost file): degraded now */
    if (db == 0 && d->degraded)
        snprintf(err.msg, sizeof err.msg, "%s", d->degraded_why);
    json_t *o = json_object();
    int ok = db == 0 && !d->failed && !d->degraded && !d->stop;
    api_set(o, "ok", json_boolean(ok));
    api_set(o, "now_s", json_integer(d->now));
    api_set(o, "db", json_string(ok || (db == 0 && !d->degraded) ? "ok" : err.msg));
    api_set(o, "store", json_string(d->lost ? "lost" : d->degraded ? "degraded" : "writable"));
    api_set(o, "backend", json_string(d->backend_name));
    api_set(o, "steps", json_integer(d->step));
    api_set(o, "epoch", json_integer(d->epoch));
    tide_daemon_unlock(d);
    tide_http_reply_json(rep, ok ? 200 : 503, o);
}

/* Alive: the process answers and its loop did not stop on a fatal error.
 * Takes no lock (a long rebuild must not look like a hang). */
API_HANDLER(api_livez)
{
    (void)req;
    tide_daemon_t *d = API_D(app);
    int failed = __atomic_load_n(&d->failed, __ATOMIC_RELAXED);
    json_t *o = json_object();
    api_set(o, "ok", json_boolean(!failed));
    tide_http_reply_json(rep, failed ? 503 : 200, o);
}

API_HANDLER(api_metrics)
{
    (void)req;
    tide_daemon_t *d = API_D(app);
    tide_daemon_lock(d);
    size_t len;
    char *text = dmn_metrics(d, &len);
    tide_daemon_unlock(d);
    tide_http_reply_text(rep, 200, TIDE_PROM_CONTENT_TYPE, text, len);
    free(text);
}

typedef struct feed_ctx {
    json_t *arr;
    int64_t last;
    tide_daemon_t *d;
    const tide_http_req_t *req;
    long hidden;             /* rows about other teams' jobs (non-admins see a count) */
} feed_ctx_t;

json_t *api_feed_row(const tide_store_feed_row_t *r)
{
    json_t *o = json_object();
    api_set(o, "seq", json_integer(r->seq));
    api_set(o, "time_s", json_integer(r->time_s));
    api_set(o, "type", json_string(r->is_action ? "action" : "event"));
    api_set(o, "kind", api_str(r->kind));
    api_set(o, "job", api_str(r->job_id));
    api_set(o, "service", api_str(r->service_name));
    api_set(o, "gpus", r->has_gpus ? json_integer(r->gpus) : json_null());
    api_set(o, "reason", api_str(r->reason));
    if (r->has_replica)
        api_set(o, "replica", json_integer(r->replica));
    if (r->has_lease)
        api_set(o, "lease", json_integer(r->lease));
    if (r->has_width)
        api_set(o, "width", json_integer(r->width));
    if (r->has_deadline)
        api_set(o, "deadline_s", json_integer(r->deadline_s));
    if (r->has_value)
        api_set(o, "value", api_num(r->value));
    if (r->has_node)
        api_set(o, "node", json_integer(r->node));
    if (r->source)
        api_set(o, "source", api_str(r->source));
    if (!r->step)
        api_set(o, "pending", json_true());
    return o;
}

static int feed_one(void *ctx, const tide_store_feed_row_t *r)
{
    feed_ctx_t *c = ctx;
    c->last = r->seq;
    if (!api_sees_job(c->d, c->req, r->job_id)) {
        c->hidden++;
        return 0;
    }
    json_array_append_new(c->arr, api_feed_row(r));
    return 0;
}

API_HANDLER(api_events)
{
    tide_daemon_t *d = API_D(app);
    long long cursor, limit;
    if (api_q_int(req, "cursor", 0, INT64_MAX, 0, &cursor, rep) < 0 ||
        api_q_int(req, "limit", 1, 5000, 500, &limit, rep) < 0)
        return;
    feed_ctx_t c = {.arr = json_array(), .last = cursor, .d = d, .req = req};
    tide_error_t err = {0};
    tide_daemon_lock(d);
    int n = tide_store_feed(d->st, cursor, (int)limit, feed_one, &c, &err);
    tide_daemon_unlock(d);
    if (n < 0) {
        json_decref(c.arr);
        api_fail(rep, &err);
        return;
    }
    json_t *o = json_object();
    api_set(o, "events", c.arr);
    api_set(o, "next", json_integer(c.last));
    if (!api_is_admin(req))
        api_set(o, "other_teams", json_integer(c.hidden));
    tide_http_reply_json(rep, 200, o);
}

API_HANDLER(api_reload)
{
    (void)req;
    tide_daemon_t *d = API_D(app);
    tide_daemon_lock(d);
    if (api_stopping(d, rep)) {
        tide_daemon_unlock(d);
        return;
    }
    int nt, nteams, changed;
    tide_error_t err = {0};
    int rc = dmn_reload(d, &nt, &nteams, &changed, &err);
    tide_daemon_unlock(d);
    if (rc < 0) {
        api_fail(rep, &err);
        return;
    }
    json_t *o = json_object();
    api_set(o, "tokens", nt >= 0 ? json_integer(nt) : json_null());
    api_set(o, "teams", nteams >= 0 ? json_integer(nteams) : json_null());
    api_set(o, "teams_changed", json_integer(changed));
    tide_http_reply_json(rep, 200, o);
}
