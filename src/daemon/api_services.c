/* The services API: list, get, create, change replica bounds, demand, and
 * replicas reporting ready. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/internal.h"
#include "util/util.h"

static int count_reps(const tide_daemon_t *d, int svc, int state)
{
    int n = 0;
    for (size_t r = 0; r < d->n_reps; r++)
        n += d->reps[r].service == svc && d->reps[r].state == state && !d->reps[r].rehearsal;
    return n;
}

static json_t *service_json(tide_daemon_t *d, int s)
{
    const tide_service_spec_t *sp = tide_engine_service(d->e, s);
    tide_forecast_info_t fc = {0};
    tide_engine_forecast(d->e, s, 3600, &fc);
    char types[256];
    json_t *o = json_object();
    api_set(o, "name", api_str(sp->name));
    api_set(o, "gpus_per_replica", json_integer(sp->gpus_per_replica));
    api_set(o, "replica_rps", api_num(sp->replica_rps));
    api_set(o, "min_replicas", json_integer(sp->min_replicas));
    api_set(o, "max_replicas", json_integer(sp->max_replicas));
    api_set(o, "warmup_s", json_integer(sp->warmup_s));
    api_set(o, "stage_s", json_integer(sp->stage_s));
    /* the target sizing aims at: the service's own, else the daemon's */
    api_set(o, "slo_target", api_num(sp->slo_target > 0 ? sp->slo_target : d->cfg.slo_target));
    api_set(o, "fixed_replicas", json_integer(sp->fixed_replicas));
    api_set(o, "gpu_types", json_string(tide_json_types_str(d->cluster, sp->gpu_types, types, sizeof types)));
    api_set(o, "demand_rps", api_num(fc.last_observed));
    api_set(o, "ready", json_integer(count_reps(d, s, REP_UP)));
    api_set(o, "warming", json_integer(count_reps(d, s, REP_WARM)));
    api_set(o, "ready_rps", api_num(count_reps(d, s, REP_UP) * sp->replica_rps));
    api_set(o, "margin", api_num(fc.margin));
    api_set(o, "forecast_peak_rps", api_num(fc.peak));
    api_set(o, "forecast_peak_margin_rps", api_num(fc.peak_with_margin));
    api_set(o, "lead_s", json_integer(fc.lead_s));
    api_set(o, "rehearsal", dmn_rehearsal_json(d, s));
    for (size_t i = 0; i < d->n_src; i++)
        if (d->src[i].svc == s) {
            json_t *src = json_object();
            api_set(src, "url", api_str(d->src[i].url));
            api_set(src, "up", json_boolean(d->src[i].up));
            api_set(o, "demand_source", src);
        }
    return o;
}

API_HANDLER(api_services)
{
    (void)req;
    tide_daemon_t *d = API_D(app);
    tide_daemon_lock(d);
    json_t *arr = json_array();
    for (int s = 0; s < tide_engine_services(d->e); s++)
        json_array_append_new(arr, service_json(d, s));
    tide_daemon_unlock(d);
    json_t *o = json_object();
    api_set(o, "services", arr);
    tide_http_reply_json(rep, 200, o);
}

API_HANDLER(api_service_get)
{
    tide_daemon_t *d = API_D(app);
    tide_daemon_lock(d);
    int s = tide_engine_service_find(d->e, req->params[0]);
    json_t *o = s >= 0 ? service_json(d, s) : NULL;
    tide_daemon_unlock(d);
    if (!o)
        tide_http_reply_error(rep, 404, "ENOENT", "unknown service '%s'", req->params[0]);
    else
        tide_http_reply_json(rep, 200, o);
}

API_HANDLER(api_service_create)
{
    tide_daemon_t *d = API_D(app);
    tide_service_request_t sr;
    tide_error_t err = {0};
    if (tide_json_service_request(req->body, req->body_len, d->cluster, &sr, &err) < 0) {
        api_fail(rep, &err);
        return;
    }
    tide_daemon_lock(d);
    if (!api_stopping(d, rep)) {
        if (dmn_service_add(d, &sr.spec, &err) < 0)
            api_fail(rep, &err);
        else
            tide_http_reply_json(rep, 201, json_pack("{s:s}", "name", sr.name));
    }
    tide_daemon_unlock(d);
    tide_service_request_free(&sr);
}

API_HANDLER(api_service_patch)
{
    tide_daemon_t *d = API_D(app);
    int mn, mx, hmn, hmx;
    tide_error_t err = {0};
    if (tide_json_service_patch(req->body, req->body_len, &mn, &hmn, &mx, &hmx, &err) < 0) {
        api_fail(rep, &err);
        return;
    }
    tide_daemon_lock(d);
    int s = tide_engine_service_find(d->e, req->params[0]);
    if (s < 0 || api_stopping(d, rep)) {
        tide_daemon_unlock(d);
        if (s < 0)
            tide_http_reply_error(rep, 404, "ENOENT", "unknown service '%s'", req->params[0]);
        return;
    }
    int rc = dmn_service_bounds(d, s, mn, hmn, mx, hmx, &err);
    json_t *o = rc == 0 ? service_json(d, tide_engine_service_find(d->e, req->params[0])) : NULL;
    tide_daemon_unlock(d);
    if (rc < 0)
        api_fail(rep, &err);
    else
        tide_http_reply_json(rep, 200, o);
}

API_HANDLER(api_demand)
{
    tide_daemon_t *d = API_D(app);
    double rps;
    tide_error_t err = {0};
    if (tide_json_demand(req->body, req->body_len, &rps, &err) < 0) {
        api_fail(rep, &err);
        return;
    }
    /* through the group commit (no lock held here): the service is looked up
     * inside the batch */
    if (dmn_demand_set(d, req, req->params[0], rps, &err) < 0) {
        if (err.code == TIDE_ESTATE)
            tide_http_reply_error(rep, 503, "ESTATE", "%s", err.msg);
        else
            api_fail(rep, &err); /* ENOENT: 404 unknown service */
        return;
    }
    tide_http_reply_json(rep, 200, json_pack("{s:s,s:f}", "service", req->params[0], "rps", rps));
}

/* A replica reports that it loaded, warmed and passed its health check
 * (backends running real processes: the replica's own script calls this). */
API_HANDLER(api_replica_ready)
{
    tide_daemon_t *d = API_D(app);
    long long r;
    if (tide_parse_int(req->params[0], &r) < 0 || r < 0 || r > INT32_MAX) {
        tide_http_reply_error(rep, 400, "EINVAL", "replica: '%s' is not a replica number",
                              req->params[0]);
        return;
    }
    char svc[128];
    int ready;
    tide_error_t err = {0};
    if (dmn_replica_ready(d, req, (int32_t)r, svc, sizeof svc, &ready, &err) < 0) {
        if (err.code == TIDE_ESTATE)
            tide_http_reply_error(rep, 503, "ESTATE", "%s", err.msg);
        else
            api_fail(rep, &err);
        return;
    }
    tide_http_reply_json(rep, ready ? 200 : 202,
                         json_pack("{s:I,s:s,s:s}", "replica", (json_int_t)r, "service", svc,
                                   "state", ready ? "ready" : "warming"));
}
