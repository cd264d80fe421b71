/* The model pipeline's API (src/daemon/pipe.c): models, versions, metrics,
 * the canary's SLO, rollout controls, and the routes routers follow. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/internal.h"
#include "util/util.h"

static json_t *rollout_json(tide_daemon_t *d, int mi)
{
    tide_rollout_info_t ro;
    tide_pipeline_rollout(dmn_pipe_pl(d), mi, &ro);
    if (!ro.active)
        return json_null();
    tide_model_info_t m;
    tide_pipeline_model(dmn_pipe_pl(d), mi, &m);
    json_t *o = json_object();
    api_set(o, "version", json_integer(ro.version));
    api_set(o, "old_version", json_integer(ro.old_version));
    api_set(o, "step", json_integer(ro.step + 1));
    api_set(o, "steps", json_integer(m.plan->n_steps));
    api_set(o, "weight", api_num(ro.weight));
    api_set(o, "phase", json_string(ro.phase == TIDE_RO_ADDING ? "adding" : "holding"));
    api_set(o, "paused", json_boolean(ro.paused));
    api_set(o, "failures", json_integer(ro.failures));
    api_set(o, "started_s", api_time(ro.started_at));
    api_set(o, "step_s", api_time(ro.step_at));
    api_set(o, "hold_until_s", ro.phase == TIDE_RO_HOLDING ? api_time(ro.hold_until) : json_null());
    api_set(o, "target_new", json_integer(ro.target_new));
    api_set(o, "target_old", json_integer(ro.target_old));
    api_set(o, "bound_replicas", json_integer(ro.bound));
    return o;
}

static json_t *model_json(tide_daemon_t *d, int mi, int full)
{
    tide_model_info_t m;
    tide_pipeline_model(dmn_pipe_pl(d), mi, &m);
    json_t *o = tide_json_model(&m);
    for (int k = 0; k < TIDE_LINK_COUNT; k++)
        api_set(o, tide_model_link_names[k], api_str(dmn_pipe_link(d, mi, k)));
    api_set(o, "versions", json_integer(m.versions));
    api_set(o, "rollout", rollout_json(d, mi));
    if (!full)
        return o;
    json_t *arr = json_array();
    for (int v = 1; v <= m.versions; v++) {
        tide_version_info_t vi;
        tide_pipeline_version(dmn_pipe_pl(d), mi, v, &vi);
        json_array_append_new(arr, dmn_pipe_version_json(&vi));
    }
    api_set(o, "versions", arr);
    return o;
}

static void history_row(void *ctx, tide_time_t t, int version, const char *kind,
                        const char *detail)
{
    json_array_append_new(ctx, json_pack("{s:I,s:i,s:s,s:o}", "time_s", (json_int_t)t, "version",
                                         version, "kind", kind, "detail", api_str(detail)));
}

/* The model named in the path (lock held), or -1 with a 404 written. */
static int model_of(tide_daemon_t *d, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    int mi = tide_pipeline_model_find(dmn_pipe_pl(d), req->params[0]);
    if (mi < 0)
        tide_http_reply_error(rep, 404, "ENOENT", "model %.200s: not defined", req->params[0]);
    return mi;
}

API_HANDLER(api_models)
{
    (void)req;
    tide_daemon_t *d = API_D(app);
    tide_daemon_lock(d);
    json_t *arr = json_array();
    for (int mi = 0; mi < tide_pipeline_models(dmn_pipe_pl(d)); mi++)
        json_array_append_new(arr, model_json(d, mi, 0));
    tide_daemon_unlock(d);
    tide_http_reply_json(rep, 200, json_pack("{s:o}", "models", arr));
}

API_HANDLER(api_model_create)
{
    tide_daemon_t *d = API_D(app);
    tide_model_request_t mr;
    tide_error_t err = {0};
    if (tide_json_model_request(req->body, req->body_len, &mr, &err) < 0) {
        api_fail(rep, &err);
        return;
    }
    tide_daemon_lock(d);
    int mi = api_stopping(d, rep) ? -2 : dmn_pipe_model_define(d, &mr, &err);
    if (mi >= 0)
        tide_http_reply_json(rep, 201, model_json(d, mi, 0));
    else if (mi == -1)
        api_fail(rep, &err);
    tide_daemon_unlock(d);
    tide_model_request_free(&mr);
}

API_HANDLER(api_model_get)
{
    tide_daemon_t *d = API_D(app);
    long long limit;
    if (api_q_int(req, "history", 0, 10000, 50, &limit, rep) < 0)
        return;
    tide_daemon_lock(d);
    int mi = model_of(d, req, rep);
    if (mi >= 0) {
        json_t *o = model_json(d, mi, 1), *h = json_array();
        tide_store_pipe_events(d->st, req->params[0], (int)limit, history_row, h, NULL);
        api_set(o, "history", h);
        tide_http_reply_json(rep, 200, o);
    }
    tide_daemon_unlock(d);
}

API_HANDLER(api_model_version_add)
{
    tide_daemon_t *d = API_D(app);
    tide_version_request_t vr;
    tide_error_t err = {0};
    if (tide_json_version_request(req->body, req->body_len, &vr, &err) < 0) {
        api_fail(rep, &err);
        return;
    }
    tide_daemon_lock(d);
    int mi = api_stopping(d, rep) ? -1 : model_of(d, req, rep);
    int ver = mi >= 0 ? dmn_pipe_register(d, mi, &vr.spec, &err) : 0;
    if (ver > 0) {
        tide_version_info_t vi;
        tide_pipeline_version(dmn_pipe_pl(d), mi, ver, &vi);
        tide_http_reply_json(rep, 201, dmn_pipe_version_json(&vi));
    } else if (ver < 0) {
        api_fail(rep, &err);
    }
    tide_daemon_unlock(d);
    tide_version_request_free(&vr);
}

static int version_of(const tide_http_req_t *req, tide_http_reply_t *rep)
{
    long long v;
    if (tide_parse_int(req->params[1], &v) < 0 || v < 1 || v > 1000000000) {
        api_bad(rep, "version: '%.100s' is not a version number", req->params[1]);
        return -1;
    }
    return (int)v;
}

API_HANDLER(api_model_version_get)
{
    tide_daemon_t *d = API_D(app);
    int ver = version_of(req, rep);
    if (ver < 0)
        return;
    tide_daemon_lock(d);
    int mi = model_of(d, req, rep);
    tide_version_info_t vi;
    if (mi >= 0 && tide_pipeline_version(dmn_pipe_pl(d), mi, ver, &vi) == 0)
        tide_http_reply_json(rep, 200, dmn_pipe_version_json(&vi));
    else if (mi >= 0)
        tide_http_reply_error(rep, 404, "ENOENT", "model %.200s: no version %d", req->params[0], ver);
    tide_daemon_unlock(d);
}

/* {"metrics": {"name": value, ...}}: an evaluation reports. */
API_HANDLER(api_model_metrics)
{
    tide_daemon_t *d = API_D(app);
    int ver = version_of(req, rep);
    tide_error_t err = {0};
    json_t *o = ver > 0 ? tide_json_parse_object(req->body, req->body_len, &err) : NULL;
    json_t *mx = o ? json_object_get(o, "metrics") : NULL;
    if (ver > 0 && (!mx || !json_is_object(mx) || !json_object_size(mx))) {
        if (o)
            tide_errf(&err, TIDE_EINVAL, "metrics: expected an object of metric: number");
        api_fail(rep, &err);
    } else if (ver > 0) {
        tide_daemon_lock(d);
        int mi = model_of(d, req, rep), rc = 0;
        const char *k;
        json_t *x;
        json_object_foreach(mx, k, x) {
            if (mi < 0 || rc < 0)
                break;
            if (!json_is_number(x))
                rc = tide_errf(&err, TIDE_EINVAL, "metrics: %s is not a number", k);
            else
                rc = dmn_pipe_metric(d, mi, ver, k, json_number_value(x), &err);
        }
        if (mi >= 0 && rc < 0)
            api_fail(rep, &err);
        else if (mi >= 0)
            tide_http_reply_json(rep, 200, json_pack("{s:i,s:O}", "version", ver, "metrics", mx));
        tide_daemon_unlock(d);
    }
    json_decref(o);
}

API_HANDLER(api_model_canary)
{
    tide_daemon_t *d = API_D(app);
    double slo, er, lat;
    tide_error_t err = {0};
    if (tide_json_canary(req->body, req->body_len, &slo, &er, &lat, &err) < 0) {
        api_fail(rep, &err);
        return;
    }
    tide_daemon_lock(d);
    int mi = model_of(d, req, rep);
    if (mi >= 0 && dmn_pipe_canary(d, mi, slo, er, lat, &err) == 0)
        tide_http_reply_json(rep, 200, json_pack("{s:I,s:o}", "reported_s",
                                                 (json_int_t)dmn_clock_now(d), "rollout",
                                                 rollout_json(d, mi)));
    else if (mi >= 0)
        api_fail(rep, &err);
    tide_daemon_unlock(d);
}

API_HANDLER(api_model_rollout)
{
    static const char *const cmds[] = {"pause", "resume", "promote", "abort"};
    tide_daemon_t *d = API_D(app);
    int cmd = -1;
    for (int k = 0; k < 4; k++)
        if (!strcmp(req->params[1], cmds[k]))
            cmd = k;
    if (cmd < 0) {
        api_bad(rep, "rollout: '%.100s' is not pause, resume, promote or abort", req->params[1]);
        return;
    }
    json_t *o = req->body_len ? json_loadb(req->body, req->body_len, 0, NULL) : NULL;
    int ver = (int)json_integer_value(json_object_get(o, "version"));
    json_decref(o);
    tide_error_t err = {0};
    tide_daemon_lock(d);
    int mi = model_of(d, req, rep);
    if (mi >= 0 && dmn_pipe_control(d, mi, cmd, ver, &err) == 0)
        tide_http_reply_json(rep, 200, json_pack("{s:s,s:o}", "done", cmds[cmd], "rollout",
                                                 rollout_json(d, mi)));
    else if (mi >= 0)
        api_fail(rep, &err);
    tide_daemon_unlock(d);
}

/* ------------------------------------------------------------------ routes */

static json_t *routes_json(tide_daemon_t *d, int s)
{
    const char *svc = tide_engine_service(d->e, s)->name;
    int mi = -1;
    for (int k = 0; k < tide_pipeline_models(dmn_pipe_pl(d)) && mi < 0; k++) {
        tide_model_info_t m;
        tide_pipeline_model(dmn_pipe_pl(d), k, &m);
        if (!strcmp(m.service, svc))
            mi = k;
    }
    double w = 0;
    int wv = 0, wold = 0, serving = 0;
    tide_model_info_t m = {0};
    if (mi >= 0) {
        dmn_pipe_route(d, mi, &w, &wv, &wold);
        tide_pipeline_model(dmn_pipe_pl(d), mi, &m);
        serving = m.alias[TIDE_ALIAS_SERVING];
    }
    tide_rollout_info_t ro = {0};
    if (mi >= 0)
        tide_pipeline_rollout(dmn_pipe_pl(d), mi, &ro);
    /* a route weight only while that version rolls out (or was just rolled back: 0) */
    int newv = ro.active ? ro.version : -1;
    double share_new = ro.active && wv == ro.version ? w / 100.0 : 0;
    int n_new = 0, n_old = 0;
    int nr = tide_engine_replicas(d->e);
    int *ver = tide_xcalloc((size_t)nr + 1, sizeof *ver);
    for (int r = 0; r < nr; r++) {
        tide_replica_info_t ri;
        tide_engine_replica(d->e, r, &ri);
        int lm, lv;
        ver[r] = dmn_pipe_label(d, r, &lm, &lv) == mi && mi >= 0 ? lv : serving;
        if (!ri.stopped && ri.ready && ri.service == s)
            *(ver[r] == newv ? &n_new : &n_old) += 1;
    }
    if (!n_new || !n_old) /* a side without a ready replica takes nothing */
        share_new = n_new ? 1 : 0;
    json_t *arr = json_array();
    for (int r = 0; r < nr; r++) {
        tide_replica_info_t ri;
        tide_engine_replica(d->e, r, &ri);
        if (ri.stopped || ri.service != s)
            continue;
        double share = ver[r] == newv ? share_new : 1 - share_new;
        int n = ver[r] == newv ? n_new : n_old;
        tide_version_info_t vi = {0};
        if (mi >= 0 && ver[r] > 0)
            tide_pipeline_version(dmn_pipe_pl(d), mi, ver[r], &vi);
        json_array_append_new(
            arr, json_pack("{s:i,s:i,s:o,s:b,s:o}", "replica", r, "version", ver[r],
                           "manifest_uri", api_str(vi.manifest_uri), "ready", ri.ready,
                           "weight", api_num(ri.ready && n > 0 ? share / n : 0)));
    }
    free(ver);
    json_t *o = json_object();
    api_set(o, "service", json_string(svc));
    api_set(o, "generation", json_integer((json_int_t)dmn_pipe_gen(d)));
    api_set(o, "model", mi >= 0 ? json_string(m.name) : json_null());
    api_set(o, "serving_version", json_integer(serving));
    api_set(o, "rollout", mi >= 0 ? rollout_json(d, mi) : json_null());
    api_set(o, "replicas", arr);
    return o;
}

/* ?after=G&wait=S: answer once the generation is above G (long poll, up to
 * S seconds), else at once. */
API_HANDLER(api_service_routes)
{
    tide_daemon_t *d = API_D(app);
    long long after, wait;
    if (api_q_int(req, "after", -1, INT64_MAX, -1, &after, rep) < 0 ||
        api_q_int(req, "wait", 0, 300, 0, &wait, rep) < 0)
        return;
    dmn_lock_read(d);
    int s = tide_engine_service_find(d->e, req->params[0]);
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += (time_t)wait;
    while (s >= 0 && wait > 0 && !d->stop && (long long)dmn_pipe_gen(d) <= after)
        if (pthread_cond_timedwait(&d->step_cv, &d->mu, &dl) == ETIMEDOUT)
            break;
    if (s < 0)
        tide_http_reply_error(rep, 404, "ENOENT", "service %.200s: not defined", req->params[0]);
    else
        tide_http_reply_json(rep, 200, routes_json(d, s));
    dmn_unlock_read(d);
}
