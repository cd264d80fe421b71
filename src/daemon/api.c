/* The HTTP API (docs/api.md): the routes table, and the helpers the
 * handlers share. Handlers live by resource: api_jobs.c, api_services.c,
 * api_nodes.c, api_usage.c, api_admin.c, api_rl.c. Each validates its input without
 * the lock where it can, then takes the daemon mutex, calls one daemon
 * function (src/daemon/ops.c) that owns its transaction, and answers. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "daemon/internal.h"
#include "formats/json.h"
#include "util/util.h"

/* ---------------------------------------------------------------- helpers */

json_t *api_num(double v) { return tide_json_real(v); }

json_t *api_time(tide_time_t t)
{
    return t < 0 || t == TIDE_TIME_NEVER ? json_null() : json_integer(t);
}

void api_set(json_t *o, const char *k, json_t *v) { tide_json_set(o, k, v); }

/* A string that may be invalid UTF-8 (ids are bytes): JSON null then. */
json_t *api_str(const char *s)
{
    json_t *j = s ? json_string(s) : NULL;
    return j ? j : json_null();
}

void api_fail(tide_http_reply_t *rep, const tide_error_t *err)
{
    /* the store refused (a held lock, a full disk, a lost file): nothing was
     * accepted, and a retry may succeed (503 carries Retry-After) */
    if (err && err->code == TIDE_EIO && !strncmp(err->msg, "database", 8)) {
        tide_http_reply_error(rep, 503, "EIO", "%s: nothing was accepted; retry later", err->msg);
        return;
    }
    tide_http_reply_err(rep, err);
}

void api_bad(tide_http_reply_t *rep, const char *fmt, const char *arg)
{
    tide_http_reply_error(rep, 400, "EINVAL", fmt, arg);
}

int api_is_admin(const tide_http_req_t *req) { return req->who.role == TIDE_ROLE_ADMIN; }

int api_sees_team(const tide_http_req_t *req, const char *team)
{
    return api_is_admin(req) || (team && !strcmp(team, req->who.team));
}

int api_team_ok(const tide_http_req_t *req, const char *team, const char *id,
                tide_http_reply_t *rep)
{
    if (api_sees_team(req, team))
        return 1;
    /* the other team is not named: teams are tenants */
    tide_http_reply_error(rep, 403, "EPERM", "job %s belongs to another team than %s", id,
                          req->who.team);
    return 0;
}

/* Lock held: the state mutex at least. */
int api_sees_job(tide_daemon_t *d, const tide_http_req_t *req, const char *id)
{
    if (api_is_admin(req))
        return 1;
    if (!id)
        return 1; /* names no job */
    tide_job_info_t ji;
    int32_t h = tide_engine_job_find(d->e, id);
    if (h >= 0 && tide_engine_job(d->e, h, &ji) == 0 && ji.spec)
        return api_sees_team(req, ji.spec->team);
    tide_store_job_t row;
    int got = tide_store_job_get(dmn_rd(d), id, &row, NULL); /* committed rows */
    dmn_rd_done(d);
    if (got < 0)
        return 0;
    int ok = api_sees_team(req, row.spec.team);
    tide_store_job_free(&row);
    return ok;
}

int api_q_int(const tide_http_req_t *req, const char *key, long long min, long long max,
              long long def, long long *out, tide_http_reply_t *rep)
{
    char buf[64];
    const char *v = tide_http_query(req, key, buf, sizeof buf);
    *out = def;
    if (!v)
        return 0;
    long long x;
    if (tide_parse_int(v, &x) < 0 || x < min || x > max) {
        tide_http_reply_error(rep, 400, "EINVAL", "%s: '%s' is not a whole number in %lld..%lld",
                              key, v, min, max);
        return -1;
    }
    *out = x;
    return 0;
}

int api_stopping(tide_daemon_t *d, tide_http_reply_t *rep)
{
    if (d->stop || d->failed) {
        tide_http_reply_error(rep, 503, "ESTATE", "the daemon is shutting down");
        return 1;
    }
    /* flags only: the store is probed by the loop (its tick, with the write
     * connection's lock) and by /readyz, never from here (a group commit
     * may be using the write connection) */
    if (d->degraded) {
        tide_http_reply_error(rep, 503, "EIO",
                              "the store cannot write (%s): nothing is accepted until it can; "
                              "retry later",
                              d->degraded_why);
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ table */

/* The last column is the audit kind: every route that changes anything has
 * one (test_http_routes checks that every non-GET route does), and the
 * router hands each request to it, answered or refused, to audit.c. */

static const tide_route_t routes[] = {
    {"GET", "/healthz", TIDE_ROLE_PUBLIC, api_healthz, NULL},
    {"GET", "/readyz", TIDE_ROLE_PUBLIC, api_healthz, NULL},
    {"GET", "/livez", TIDE_ROLE_PUBLIC, api_livez, NULL},
    {"GET", "/metrics", TIDE_ROLE_PUBLIC, api_metrics, NULL},
    {"GET", "/openapi.json", TIDE_ROLE_PUBLIC, api_openapi, NULL},
    {"GET", "/v1/cluster", TIDE_ROLE_VIEWER, api_cluster, NULL},
    {"GET", "/v1/nodes", TIDE_ROLE_VIEWER, api_nodes, NULL},
    {"POST", "/v1/nodes/{n}/state", TIDE_ROLE_ADMIN, api_node_state, "node.state"},
    {"GET", "/v1/services", TIDE_ROLE_VIEWER, api_services, NULL},
    {"POST", "/v1/services", TIDE_ROLE_ADMIN, api_service_create, "service.create"},
    {"GET", "/v1/services/{name}", TIDE_ROLE_VIEWER, api_service_get, NULL},
    {"PATCH", "/v1/services/{name}", TIDE_ROLE_ADMIN, api_service_patch, "service.update"},
    {"POST", "/v1/services/{name}/demand", TIDE_ROLE_ROUTER, api_demand, "service.demand"},
    {"POST", "/v1/services/{name}/rehearse", TIDE_ROLE_ADMIN, api_rehearse, "service.rehearse"},
    {"GET", "/v1/shadow", TIDE_ROLE_VIEWER, api_shadow, NULL},
    {"POST", "/v1/mode", TIDE_ROLE_ADMIN, api_mode, "admin.mode"},
    {"GET", "/v1/services/{name}/routes", TIDE_ROLE_VIEWER, api_service_routes, NULL},
    {"GET", "/v1/models", TIDE_ROLE_VIEWER, api_models, NULL},
    {"POST", "/v1/models", TIDE_ROLE_ADMIN, api_model_create, "model.create"},
    {"GET", "/v1/models/{m}", TIDE_ROLE_VIEWER, api_model_get, NULL},
    {"POST", "/v1/models/{m}/versions", TIDE_ROLE_SUBMITTER, api_model_version_add, "model.version"},
    {"GET", "/v1/models/{m}/versions/{v}", TIDE_ROLE_VIEWER, api_model_version_get, NULL},
    {"POST", "/v1/models/{m}/versions/{v}/metrics", TIDE_ROLE_SUBMITTER, api_model_metrics,
     "model.metrics"},
    {"POST", "/v1/models/{m}/canary", TIDE_ROLE_ROUTER, api_model_canary, "model.canary"},
    {"POST", "/v1/models/{m}/rollout/{cmd}", TIDE_ROLE_ADMIN, api_model_rollout, "model.rollout"},
    {"POST", "/v1/jobs", TIDE_ROLE_SUBMITTER, api_job_submit, "job.submit"},
    {"GET", "/v1/jobs", TIDE_ROLE_VIEWER, api_jobs_list, NULL},
    {"GET", "/v1/jobs/{id}", TIDE_ROLE_VIEWER, api_job_get, NULL},
    {"POST", "/v1/jobs/{id}/cancel", TIDE_ROLE_SUBMITTER, api_job_cancel, "job.cancel"},
    {"POST", "/v1/jobs/{id}/checkpoints", TIDE_ROLE_SUBMITTER, api_job_ckpt, "job.checkpoint"},
    {"GET", "/v1/jobs/{id}/notice", TIDE_ROLE_SUBMITTER, api_notice, NULL},
    {"POST", "/v1/jobs/{id}/notice/ack", TIDE_ROLE_SUBMITTER, api_notice_ack, "job.notice-ack"},
    {"POST", "/v1/replicas/{r}/ready", TIDE_ROLE_ROUTER, api_replica_ready, "replica.ready"},
    {"GET", "/v1/rl", TIDE_ROLE_VIEWER, api_rl_runs, NULL},
    {"POST", "/v1/rl/{job}", TIDE_ROLE_SUBMITTER, api_rl_register, "rl.register"},
    {"GET", "/v1/rl/{job}", TIDE_ROLE_VIEWER, api_rl_get, NULL},
    {"POST", "/v1/rl/{job}/trajectories", TIDE_ROLE_SUBMITTER, api_rl_push, "rl.push"},
    {"POST", "/v1/rl/{job}/step", TIDE_ROLE_SUBMITTER, api_rl_step, "rl.step"},
    {"GET", "/v1/leases", TIDE_ROLE_VIEWER, api_leases, NULL},
    {"GET", "/v1/power", TIDE_ROLE_VIEWER, api_power, NULL},
    {"GET", "/v1/events", TIDE_ROLE_VIEWER, api_events, NULL},
    {"GET", "/v1/stream", TIDE_ROLE_VIEWER, api_stream, NULL},
    {"GET", "/v1/usage", TIDE_ROLE_VIEWER, api_usage, NULL},
    {"POST", "/v1/admin/reload", TIDE_ROLE_ADMIN, api_reload, "admin.reload"},
    {"GET", "/v1/audit", TIDE_ROLE_ADMIN, api_audit, NULL},
    {"GET", "/", TIDE_ROLE_PUBLIC, api_ui_page, NULL},
    {"GET", "/ui", TIDE_ROLE_PUBLIC, api_ui_page, NULL},
    {"GET", "/ui/", TIDE_ROLE_PUBLIC, api_ui_page, NULL},
    {"GET", "/ui/{file}", TIDE_ROLE_PUBLIC, api_ui_asset, NULL},
};

/* Quick routes (tide_router_set_quick): short reads that wait on nothing
 * but the state lock, answered on the server's I/O thread. */
static const char *const quick_routes[][2] = {{"GET", "/v1/jobs/{id}"}, {"GET", "/livez"}};

void dmn_api_set_quick(tide_router_t *r)
{
    for (size_t i = 0; i < sizeof quick_routes / sizeof quick_routes[0]; i++)
        tide_router_set_quick(r, quick_routes[i][0], quick_routes[i][1]);
}

const tide_route_t *tide_daemon_routes(size_t *n)
{
    *n = sizeof routes / sizeof routes[0];
    return routes;
}
