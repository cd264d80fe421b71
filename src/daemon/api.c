/* The HTTP API (docs/api.md): the routes table and its handlers. Each
 * handler validates its input without the lock where it can, then takes the
 * daemon mutex, commits what it accepts, queues the engine event and answers. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/internal.h"
#include "http/codec.h"
#include "http/prom.h"
#include "util/util.h"

#define D(app) ((tide_daemon_t *)(app))

/* ---------------------------------------------------------------- helpers */

static json_t *jnum(double v) { return json_real(isfinite(v) ? v : 0.0); }

static json_t *jtime(tide_time_t t)
{
    return t < 0 || t == TIDE_TIME_NEVER ? json_null() : json_integer(t);
}

static void set(json_t *o, const char *k, json_t *v) { json_object_set_new(o, k, v); }

/* A string that may be invalid UTF-8 (ids are bytes): JSON null then. */
static json_t *jstr(const char *s)
{
    json_t *j = s ? json_string(s) : NULL;
    return j ? j : json_null();
}

static void fail(tide_http_reply_t *rep, const tide_error_t *err) { tide_http_reply_err(rep, err); }

static void bad(tide_http_reply_t *rep, const char *fmt, const char *arg)
{
    tide_http_reply_error(rep, 400, "EINVAL", fmt, arg);
}

static int is_admin(const tide_http_req_t *req) { return req->who.role == TIDE_ROLE_ADMIN; }

/* May the caller see / act on a job of `team`? Else a 403 is written. */
static int team_ok(const tide_http_req_t *req, const char *team, const char *id,
                   tide_http_reply_t *rep)
{
    if (is_admin(req) || (team && !strcmp(team, req->who.team)))
        return 1;
    tide_http_reply_error(rep, 403, "EPERM", "job %s belongs to team %s, not %s", id,
                          team ? team : "?", req->who.team);
    return 0;
}

/* Whole number query argument in [min, max] (def when absent). 0 ok, -1 400 written. */
static int q_int(const tide_http_req_t *req, const char *key, long long min, long long max,
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

static int stopping(tide_daemon_t *d, tide_http_reply_t *rep)
{
    if (d->stop || d->failed) {
        tide_http_reply_error(rep, 503, "ESTATE", "the daemon is shutting down");
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------- rendering */

static const char *notice_action(const notice_t *n)
{
    if (n->kind == TIDE_ACT_JOB_CKPT)
        return "checkpoint";
    return n->width < n->prev_width ? "shrink" : "grow";
}

static json_t *notice_json(const notice_t *n)
{
    json_t *o = json_object();
    set(o, "id", json_integer((json_int_t)n->id));
    set(o, "reason", json_string(n->reason ? tide_reason_name(n->reason) : "none"));
    set(o, "action", json_string(notice_action(n)));
    set(o, "deadline_s", json_integer(n->deadline));
    set(o, "issued_s", json_integer(n->at));
    set(o, "width", json_integer(n->width));
    set(o, "acked", json_boolean(n->acked));
    set(o, "active", json_boolean(n->active));
    return o;
}

/* A job: the stored row (may be NULL) merged with the engine's view (h >= 0). */
static json_t *job_json(tide_daemon_t *d, const tide_store_job_t *row, int32_t h)
{
    tide_job_info_t ji;
    int live = h >= 0 && tide_engine_job(d->e, h, &ji) == 0;
    const tide_job_spec_t *sp = live ? ji.spec : &row->spec;
    char types[256];
    json_t *o = json_object();
    set(o, "id", jstr(sp->id));
    set(o, "team", jstr(sp->team));
    set(o, "state", json_string(live ? tide_job_state_name(ji.state) : (row ? row->state : "queued")));
    set(o, "priority", json_integer(sp->priority));
    set(o, "gpus", json_integer(sp->gpus));
    set(o, "gang_gpus", json_integer(sp->gang_gpus));
    set(o, "dp_min", json_integer(sp->dp_min));
    set(o, "dp_max", json_integer(sp->gang_gpus > 0 ? sp->gpus / sp->gang_gpus : 0));
    set(o, "duration_s", json_integer(sp->duration_s));
    set(o, "ckpt_interval_s", json_integer(sp->ckpt_interval_s));
    set(o, "ckpt_s", json_integer(sp->ckpt_s));
    set(o, "restore_s", json_integer(sp->restore_s));
    set(o, "gpu_types", json_string(tide_json_types_str(d->cluster, sp->gpu_types, types, sizeof types)));
    int active = live && (ji.state == TIDE_JOB_RUNNING || ji.state == TIDE_JOB_RECLAIMING);
    set(o, "width", json_integer(active ? ji.width : 0));
    set(o, "phase", active ? json_string(tide_phase_name(ji.phase)) : json_null());
    set(o, "progress_s", jnum(live ? ji.progress : 0));
    set(o, "committed_s", jnum(live ? ji.committed : 0));
    set(o, "submitted_s", json_integer(live ? ji.submitted : (row ? row->submitted_s : 0)));
    set(o, "started_s", jtime(live ? ji.first_start : -1));
    set(o, "finished_s", jtime(live ? ji.finished : -1));
    set(o, "preemptions", json_integer(live ? ji.preemptions : 0));
    set(o, "lost_gpu_s", jnum(live ? ji.lost_gpu_s : 0));
    set(o, "lease", live && ji.lease >= 0 ? json_integer(ji.lease) : json_null());
    if (row) {
        set(o, "command", jstr(row->command));
        json_t *env = row->env ? json_loads(row->env, 0, NULL) : NULL;
        set(o, "env", env ? env : json_null());
    }
    const notice_t *n = live && (size_t)h < d->n_jobs ? &d->jobs[h].notice : NULL;
    set(o, "notice", n && n->id && n->active && !n->acked ? notice_json(n) : json_null());
    return o;
}

/* Find a job by id: its row (caller frees) and engine handle (-1 when the
 * engine has not seen it yet). 0, or -1 with a 404/500 written. */
static int job_lookup(tide_daemon_t *d, const char *id, tide_store_job_t *row, int32_t *h,
                      tide_http_reply_t *rep)
{
    tide_error_t err = {0};
    if (tide_store_job_get(d->st, id, row, &err) < 0) {
        fail(rep, &err);
        return -1;
    }
    *h = tide_engine_job_find(d->e, id);
    return 0;
}

static int count_reps(const tide_daemon_t *d, int svc, int state)
{
    int n = 0;
    for (size_t r = 0; r < d->n_reps; r++)
        n += d->reps[r].service == svc && d->reps[r].state == state;
    return n;
}

static json_t *service_json(tide_daemon_t *d, int s)
{
    const tide_service_spec_t *sp = tide_engine_service(d->e, s);
    tide_forecast_info_t fc = {0};
    tide_engine_forecast(d->e, s, 3600, &fc);
    char types[256];
    json_t *o = json_object();
    set(o, "name", jstr(sp->name));
    set(o, "gpus_per_replica", json_integer(sp->gpus_per_replica));
    set(o, "replica_rps", jnum(sp->replica_rps));
    set(o, "min_replicas", json_integer(sp->min_replicas));
    set(o, "max_replicas", json_integer(sp->max_replicas));
    set(o, "warmup_s", json_integer(sp->warmup_s));
    set(o, "fixed_replicas", json_integer(sp->fixed_replicas));
    set(o, "gpu_types", json_string(tide_json_types_str(d->cluster, sp->gpu_types, types, sizeof types)));
    set(o, "demand_rps", jnum(fc.last_observed));
    set(o, "ready", json_integer(count_reps(d, s, REP_UP)));
    set(o, "warming", json_integer(count_reps(d, s, REP_WARM)));
    set(o, "ready_rps", jnum(count_reps(d, s, REP_UP) * sp->replica_rps));
    set(o, "margin", jnum(fc.margin));
    set(o, "forecast_peak_rps", jnum(fc.peak));
    for (size_t i = 0; i < d->n_src; i++)
        if (d->src[i].svc == s) {
            json_t *src = json_object();
            set(src, "url", jstr(d->src[i].url));
            set(src, "up", json_boolean(d->src[i].up));
            set(o, "demand_source", src);
        }
    return o;
}

/* ---------------------------------------------------------------- routes */

static void h_healthz(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    (void)req;
    tide_daemon_t *d = D(app);
    tide_daemon_lock(d);
    tide_error_t err = {0};
    int db = tide_store_ping(d->st, &err);
    json_t *o = json_object();
    int ok = db == 0 && !d->failed;
    set(o, "ok", json_boolean(ok));
    set(o, "now_s", json_integer(d->now));
    set(o, "db", json_string(db == 0 ? "ok" : err.msg));
    set(o, "backend", json_string(d->backend_name));
    set(o, "steps", json_integer(d->step));
    set(o, "epoch", json_integer(d->epoch));
    tide_daemon_unlock(d);
    tide_http_reply_json(rep, ok ? 200 : 503, o);
}

static void h_metrics(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    (void)req;
    tide_daemon_t *d = D(app);
    tide_daemon_lock(d);
    size_t len;
    char *text = dmn_metrics(d, &len);
    tide_daemon_unlock(d);
    tide_http_reply_text(rep, 200, TIDE_PROM_CONTENT_TYPE, text, len);
    free(text);
}

static void h_cluster(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    (void)req;
    tide_daemon_t *d = D(app);
    tide_daemon_lock(d);
    const tide_engine_t *e = d->e;
    tide_stats_t st;
    tide_engine_stats(e, &st);
    json_t *o = json_object();
    set(o, "policy", json_string(d->policy));
    set(o, "now_s", json_integer(d->now));
    set(o, "gpus", json_integer(tide_cluster_gpus(d->cluster)));
    set(o, "nodes", json_integer(tide_cluster_nodes(d->cluster)));
    set(o, "domains", json_integer(tide_cluster_domains(d->cluster)));
    char spec[512];
    tide_cluster_format(d->cluster, spec, sizeof spec);
    set(o, "spec", json_string(spec));
    json_t *types = json_array();
    for (int t = 0; t < tide_cluster_types(d->cluster); t++) {
        int reserve = 0;
        int n = tide_engine_type_gpus(e, t, &reserve);
        json_array_append_new(types, json_pack("{s:s,s:i,s:i}", "name",
                                               tide_cluster_type_name(d->cluster, t), "gpus", n,
                                               "reserve_gpus", reserve));
    }
    set(o, "types", types);
    set(o, "backend", json_string(d->backend_name));
    set(o, "speed", jnum(d->speed));
    set(o, "epoch", json_integer(d->epoch));
    json_t *s = json_object();
    json_t *by_state = json_object(), *by_class = json_object(), *grid = json_object();
    for (int k = 0; k < TIDE_S_COUNT; k++) {
        int n = 0;
        for (int c = 0; c < TIDE_C_COUNT; c++)
            n += st.gpus_now[c][k];
        set(by_state, tide_state_name(k), json_integer(n));
    }
    for (int c = 0; c < TIDE_C_COUNT; c++) {
        int n = 0;
        json_t *row = json_object();
        for (int k = 0; k < TIDE_S_COUNT; k++) {
            n += st.gpus_now[c][k];
            if (st.gpus_now[c][k])
                set(row, tide_state_name(k), json_integer(st.gpus_now[c][k]));
        }
        set(by_class, tide_class_name(c), json_integer(n));
        set(grid, tide_class_name(c), row);
    }
    set(s, "gpus_by_state", by_state);
    set(s, "gpus_by_class", by_class);
    set(s, "gpus", grid);
    set(s, "demand_rps", jnum(st.demand_rps));
    set(s, "ready_rps", jnum(st.ready_rps));
    set(s, "queue_jobs", json_integer(st.queue_jobs));
    set(s, "queue_gpus", json_integer(st.queue_gpus));
    set(s, "jobs_submitted", json_integer(st.jobs_submitted));
    set(s, "jobs_completed", json_integer(st.jobs_completed));
    set(s, "jobs_running", json_integer(st.jobs_running));
    set(s, "replicas_ready", json_integer(st.replicas_ready));
    set(s, "replicas_warming", json_integer(st.replicas_warming));
    set(s, "preemptions", json_integer(st.preemptions));
    set(s, "shrinks", json_integer(st.shrinks));
    set(s, "reclaims", json_integer(st.reclaims));
    set(s, "reclaims_late", json_integer(st.reclaims_late));
    set(s, "leases_expired", json_integer(st.leases_expired));
    set(s, "leases_granted", json_integer(st.leases_granted));
    set(s, "tier_a_breach_gpu_s", jnum(st.tier_a_breach_gpu_s));
    set(s, "tier_a_short_gpus", json_integer(st.tier_a_short_gpus));
    set(s, "lost_gpu_hours", jnum(st.lost_gpu_s / 3600.0));
    set(s, "slo_attainment",
        jnum(st.requests_demanded > 0 ? st.requests_served / st.requests_demanded : 1.0));
    double total = (double)st.cluster_gpus * (double)(st.now - st.start), idle = 0;
    for (int t = 0; t < TIDE_T_COUNT; t++)
        idle += st.gpu_s[TIDE_C_NONE][TIDE_S_IDLE][t];
    set(s, "utilization", jnum(total > 0 ? 1.0 - idle / total : 0));
    set(o, "stats", s);
    tide_daemon_unlock(d);
    tide_http_reply_json(rep, 200, o);
}

static void h_nodes(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    (void)req;
    tide_daemon_t *d = D(app);
    tide_daemon_lock(d);
    json_t *arr = json_array();
    for (int n = 0; n < tide_cluster_nodes(d->cluster); n++) {
        tide_node_info_t ni;
        if (tide_cluster_node(d->cluster, n, &ni) != 0)
            continue;
        json_t *o = json_object();
        set(o, "node", json_integer(n));
        const char *bn = tide_backend_node_name(d->be, n);
        if (bn)
            set(o, "name", json_string(bn));
        set(o, "type", json_string(tide_cluster_type_name(d->cluster, ni.type)));
        set(o, "domain", json_integer(ni.domain));
        set(o, "up", json_boolean(d->node_up[n]));
        char z[2] = {tide_engine_gpu_zone(d->e, ni.first_gpu), 0};
        set(o, "zone", json_string(z));
        json_t *gs = json_array();
        for (int g = ni.first_gpu; g < ni.first_gpu + ni.gpus; g++) {
            int32_t who;
            int kind = tide_engine_gpu_owner(d->e, g, &who);
            json_t *owner = json_null();
            char buf[300];
            if (kind == 1) {
                const char *id = NULL;
                tide_job_info_t ji;
                if (tide_engine_job(d->e, who, &ji) == 0)
                    id = ji.spec->id;
                snprintf(buf, sizeof buf, "job:%s", id ? id : "?");
                owner = jstr(buf);
            } else if (kind == 2) {
                snprintf(buf, sizeof buf, "replica:%d", (int)who);
                owner = json_string(buf);
            }
            json_array_append_new(gs, json_pack("{s:i,s:o}", "gpu", g, "owner", owner));
        }
        set(o, "gpus", gs);
        json_array_append_new(arr, o);
    }
    tide_daemon_unlock(d);
    json_t *top = json_object();
    set(top, "nodes", arr);
    tide_http_reply_json(rep, 200, top);
}

static void h_node_state(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    tide_daemon_t *d = D(app);
    long long node;
    if (tide_parse_int(req->params[0], &node) < 0 || node < 0 ||
        node >= tide_cluster_nodes(d->cluster)) {
        tide_http_reply_error(rep, 404, "ENOENT", "no node '%s' (nodes are 0..%d)", req->params[0],
                              tide_cluster_nodes(d->cluster) - 1);
        return;
    }
    int up;
    tide_error_t err = {0};
    if (tide_json_node_state(req->body, req->body_len, &up, &err) < 0) {
        fail(rep, &err);
        return;
    }
    tide_daemon_lock(d);
    if (stopping(d, rep)) {
        tide_daemon_unlock(d);
        return;
    }
    tide_event_t ev = {.kind = up ? TIDE_EV_NODE_RECOVERED : TIDE_EV_NODE_FAILED, .job = -1,
                       .service = -1, .replica = -1, .node = (int32_t)node};
    int64_t seq = dmn_accept(d, &ev, NULL, NULL, NULL, NULL, &err);
    tide_daemon_unlock(d);
    if (seq < 0) {
        fail(rep, &err);
        return;
    }
    tide_http_reply_json(rep, 200, json_pack("{s:I,s:b}", "node", (json_int_t)node, "up", up));
}

static void h_services(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    (void)req;
    tide_daemon_t *d = D(app);
    tide_daemon_lock(d);
    json_t *arr = json_array();
    for (int s = 0; s < tide_engine_services(d->e); s++)
        json_array_append_new(arr, service_json(d, s));
    tide_daemon_unlock(d);
    json_t *o = json_object();
    set(o, "services", arr);
    tide_http_reply_json(rep, 200, o);
}

static void h_service_get(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    tide_daemon_t *d = D(app);
    tide_daemon_lock(d);
    int s = tide_engine_service_find(d->e, req->params[0]);
    json_t *o = s >= 0 ? service_json(d, s) : NULL;
    tide_daemon_unlock(d);
    if (!o)
        tide_http_reply_error(rep, 404, "ENOENT", "unknown service '%s'", req->params[0]);
    else
        tide_http_reply_json(rep, 200, o);
}

static void h_service_create(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    tide_daemon_t *d = D(app);
    tide_service_request_t sr;
    tide_error_t err = {0};
    if (tide_json_service_request(req->body, req->body_len, d->cluster, &sr, &err) < 0) {
        fail(rep, &err);
        return;
    }
    tide_daemon_lock(d);
    int rc = -1;
    if (stopping(d, rep)) {
        tide_daemon_unlock(d);
        tide_service_request_free(&sr);
        return;
    }
    if (tide_engine_service_find(d->e, sr.name) >= 0) {
        tide_errf(&err, TIDE_EEXIST, "service %s: already defined", sr.name);
    } else {
        tide_service_spec_t *v = tide_xmalloc((d->n_svcs + 1) * sizeof *v);
        if (d->n_svcs)
            memcpy(v, d->svcs, d->n_svcs * sizeof *v);
        v[d->n_svcs] = sr.spec;
        rc = dmn_services_set(d, v, d->n_svcs + 1, &err);
        free(v);
    }
    tide_daemon_unlock(d);
    if (rc < 0)
        fail(rep, &err);
    else
        tide_http_reply_json(rep, 201, json_pack("{s:s}", "name", sr.name));
    tide_service_request_free(&sr);
}

static void h_service_patch(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    tide_daemon_t *d = D(app);
    int mn, mx, hmn, hmx;
    tide_error_t err = {0};
    if (tide_json_service_patch(req->body, req->body_len, &mn, &hmn, &mx, &hmx, &err) < 0) {
        fail(rep, &err);
        return;
    }
    tide_daemon_lock(d);
    int s = tide_engine_service_find(d->e, req->params[0]);
    if (s < 0) {
        tide_daemon_unlock(d);
        tide_http_reply_error(rep, 404, "ENOENT", "unknown service '%s'", req->params[0]);
        return;
    }
    tide_service_spec_t *v = tide_xmalloc(d->n_svcs * sizeof *v);
    if (d->n_svcs)
        memcpy(v, d->svcs, d->n_svcs * sizeof *v);
    if (hmn)
        v[s].min_replicas = mn;
    if (hmx)
        v[s].max_replicas = mx;
    int rc;
    if (v[s].max_replicas > 0 && v[s].max_replicas < v[s].min_replicas)
        rc = tide_errf(&err, TIDE_EINVAL, "max_replicas: %d is below min_replicas (%d)",
                       v[s].max_replicas, v[s].min_replicas);
    else
        rc = dmn_services_set(d, v, d->n_svcs, &err);
    free(v);
    json_t *o = rc == 0 ? service_json(d, tide_engine_service_find(d->e, req->params[0])) : NULL;
    tide_daemon_unlock(d);
    if (rc < 0)
        fail(rep, &err);
    else
        tide_http_reply_json(rep, 200, o);
}

static void h_demand(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    tide_daemon_t *d = D(app);
    double rps;
    tide_error_t err = {0};
    if (tide_json_demand(req->body, req->body_len, &rps, &err) < 0) {
        fail(rep, &err);
        return;
    }
    tide_daemon_lock(d);
    int s = tide_engine_service_find(d->e, req->params[0]);
    if (s < 0) {
        tide_daemon_unlock(d);
        tide_http_reply_error(rep, 404, "ENOENT", "unknown service '%s'", req->params[0]);
        return;
    }
    if (stopping(d, rep)) {
        tide_daemon_unlock(d);
        return;
    }
    tide_event_t ev = {.kind = TIDE_EV_DEMAND, .job = -1, .service = s, .replica = -1, .node = -1,
                       .value = rps};
    int64_t seq = dmn_accept(d, &ev, NULL, NULL, req->params[0], NULL, &err);
    tide_daemon_unlock(d);
    if (seq < 0)
        fail(rep, &err);
    else
        tide_http_reply_json(rep, 200, json_pack("{s:s,s:f}", "service", req->params[0], "rps", rps));
}

/* A replica reports that it loaded, warmed and passed its health check
 * (backends running real processes: the replica's own script calls this). */
static void h_replica_ready(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    tide_daemon_t *d = D(app);
    long long r;
    if (tide_parse_int(req->params[0], &r) < 0 || r < 0 || r > INT32_MAX) {
        tide_http_reply_error(rep, 400, "EINVAL", "replica: '%s' is not a replica number",
                              req->params[0]);
        return;
    }
    tide_daemon_lock(d);
    if (stopping(d, rep))
        goto out;
    if ((size_t)r >= d->n_reps || d->reps[r].state == REP_NONE) {
        tide_http_reply_error(rep, 404, "ENOENT", "replica %lld: not running", r);
        goto out;
    }
    const tide_service_spec_t *sp = tide_engine_service(d->e, d->reps[r].service);
    const char *svc = sp ? sp->name : "";
    if (d->reps[r].state == REP_UP) {
        tide_http_reply_json(rep, 200, json_pack("{s:I,s:s,s:s}", "replica", (json_int_t)r,
                                                 "service", svc, "state", "ready"));
        goto out;
    }
    tide_error_t err = {0};
    tide_event_t ev = {.kind = TIDE_EV_REPLICA_READY, .job = -1, .service = d->reps[r].service,
                       .replica = (int32_t)r, .node = -1};
    if (dmn_accept(d, &ev, NULL, NULL, svc, NULL, &err) < 0) {
        fail(rep, &err);
        goto out;
    }
    tide_http_reply_json(rep, 202, json_pack("{s:I,s:s,s:s}", "replica", (json_int_t)r, "service",
                                             svc, "state", "warming"));
out:
    tide_daemon_unlock(d);
}

/* ------------------------------------------------------------------- jobs */

/* A fresh job id ("job-000042"): not in the table. */
static int new_job_id(tide_daemon_t *d, char *buf, size_t n, tide_error_t *err)
{
    int64_t k = tide_store_jobs_count(d->st, err);
    if (k < 0)
        return -1;
    for (int tries = 0; tries < 1000000; tries++) {
        snprintf(buf, n, "job-%06lld", (long long)(k + 1 + tries));
        tide_store_job_t row;
        tide_error_t e2 = {0};
        if (tide_store_job_get(d->st, buf, &row, &e2) == 0) {
            tide_store_job_free(&row);
            continue;
        }
        if (e2.code != TIDE_ENOENT) {
            if (err)
                *err = e2;
            return -1;
        }
        return 0;
    }
    return tide_errf(err, TIDE_EIO, "cannot make a job id");
}

static void h_job_submit(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    tide_daemon_t *d = D(app);
    tide_job_request_t jr;
    tide_error_t err = {0};
    if (tide_json_job_request(req->body, req->body_len, d->cluster, &jr, &err) < 0) {
        fail(rep, &err);
        return;
    }
    if (!jr.team)
        jr.team = tide_xstrdup(req->who.team);
    jr.spec.team = jr.team;
    if (!is_admin(req) && strcmp(jr.team, req->who.team)) {
        tide_http_reply_error(rep, 403, "EPERM", "team: a %s of team %s cannot submit for team %s",
                              tide_role_name(req->who.role), req->who.team, jr.team);
        tide_job_request_free(&jr);
        return;
    }
    if (tide_job_fits(&jr.spec, d->cluster, &err) < 0) {
        fail(rep, &err);
        tide_job_request_free(&jr);
        return;
    }
    if (!strcmp(d->backend_name, "slurm") && (!jr.command || !*jr.command)) {
        tide_http_reply_error(rep, 400, "EINVAL",
                              "command: required with the slurm backend (what the job's Slurm "
                              "batch script runs)");
        tide_job_request_free(&jr);
        return;
    }
    tide_daemon_lock(d);
    if (stopping(d, rep))
        goto out;
    char idbuf[64];
    if (!jr.id) {
        if (new_job_id(d, idbuf, sizeof idbuf, &err) < 0) {
            fail(rep, &err);
            goto out;
        }
        jr.id = tide_xstrdup(idbuf);
    }
    jr.spec.id = jr.id;
    tide_store_job_t old;
    tide_error_t e2 = {0};
    if (tide_store_job_get(d->st, jr.id, &old, &e2) == 0) {
        json_t *o = json_object();
        json_t *e = json_pack("{s:s,s:s}", "code", "EEXIST", "message", "job already submitted");
        set(o, "error", e);
        set(o, "id", jstr(old.spec.id));
        set(o, "state", json_string(old.state));
        tide_store_job_free(&old);
        tide_http_reply_json(rep, 409, o);
        goto out;
    }
    if (e2.code != TIDE_ENOENT) {
        fail(rep, &e2);
        goto out;
    }
    tide_time_t now = dmn_clock_now(d);
    tide_store_job_t row = {.spec = jr.spec, .command = jr.command, .env = jr.env,
                            .state = (char *)"queued", .submitted_s = now, .updated_s = now};
    row.spec.submit_s = now;
    tide_event_t ev = {.kind = TIDE_EV_JOB_SUBMIT, .job = -1, .service = -1, .replica = -1,
                       .node = -1};
    int64_t seq = -1;
    if (tide_store_begin(d->st, &err) == 0) {
        if (tide_store_job_insert(d->st, &row, &err) == 0 &&
            (seq = dmn_accept(d, &ev, &jr.spec, jr.id, NULL, NULL, &err)) > 0 &&
            tide_store_commit(d->st, &err) == 0) {
            dmn_queue(d, &ev, &jr.spec, seq, jr.id, NULL, NULL);
        } else {
            tide_store_rollback(d->st);
            seq = -1;
        }
    }
    if (seq < 0)
        fail(rep, &err);
    else
        tide_http_reply_json(rep, 201, json_pack("{s:o,s:s}", "id", jstr(jr.id), "state", "queued"));
out:
    tide_daemon_unlock(d);
    tide_job_request_free(&jr);
}

typedef struct list_ctx {
    tide_daemon_t *d;
    json_t *arr;
    int64_t last, prev;
} list_ctx_t;

static int list_one(void *ctx, const tide_store_job_t *j)
{
    list_ctx_t *c = ctx;
    json_array_append_new(c->arr, job_json(c->d, j, tide_engine_job_find(c->d->e, j->spec.id)));
    c->prev = c->last;
    c->last = j->seq;
    return 0;
}

static void h_jobs_list(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    tide_daemon_t *d = D(app);
    char tb[256], sb[64], cb[64];
    const char *team = tide_http_query(req, "team", tb, sizeof tb);
    const char *state = tide_http_query(req, "state", sb, sizeof sb);
    const char *cursor = tide_http_query(req, "cursor", cb, sizeof cb);
    long long prio, limit, after = 0;
    if (team && !*team)
        team = NULL;
    if (state && !*state)
        state = NULL;
    if (q_int(req, "priority", 0, 3, 0, &prio, rep) < 0 ||
        q_int(req, "limit", 1, 1000, 100, &limit, rep) < 0)
        return;
    if (cursor && *cursor && (tide_parse_int(cursor, &after) < 0 || after < 0)) {
        bad(rep, "cursor: '%s' is not a cursor from a previous page", cursor);
        return;
    }
    if (state) {
        int ok = 0;
        for (int k = 0; k < TIDE_JOB_STATE_COUNT; k++)
            ok |= !strcmp(state, tide_job_state_name(k));
        if (!ok) {
            bad(rep, "state: '%s' is not queued, running, reclaiming, done or cancelled", state);
            return;
        }
    }
    if (!is_admin(req)) {
        if (team && strcmp(team, req->who.team)) {
            tide_http_reply_error(rep, 403, "EPERM", "team: a %s of team %s cannot list team %s",
                                  tide_role_name(req->who.role), req->who.team, team);
            return;
        }
        team = req->who.team;
    }
    tide_store_job_filter_t f = {.team = team, .state = state, .priority = (int)prio,
                                 .after_seq = after, .limit = (int)limit + 1};
    tide_daemon_lock(d);
    list_ctx_t c = {.d = d, .arr = json_array(), .last = after};
    tide_error_t err = {0};
    int n = tide_store_jobs_list(d->st, &f, list_one, &c, &err);
    tide_daemon_unlock(d);
    if (n < 0) {
        json_decref(c.arr);
        fail(rep, &err);
        return;
    }
    json_t *next = json_null();
    if (n > limit) {
        /* one more than asked: there is a next page, ending at the limit-th */
        json_array_remove(c.arr, json_array_size(c.arr) - 1);
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", (long long)c.prev);
        next = json_string(buf);
    }
    json_t *o = json_object();
    set(o, "jobs", c.arr);
    set(o, "next", next);
    tide_http_reply_json(rep, 200, o);
}

static void h_job_get(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    tide_daemon_t *d = D(app);
    tide_daemon_lock(d);
    tide_store_job_t row;
    int32_t h;
    if (job_lookup(d, req->params[0], &row, &h, rep) == 0) {
        if (team_ok(req, row.spec.team, row.spec.id, rep)) {
            json_t *o = job_json(d, &row, h);
            tide_error_t err = {0};
            int64_t nck = tide_store_checkpoints_count(d->st, row.spec.id, &err);
            set(o, "checkpoints", json_integer(nck > 0 ? nck : 0));
            tide_backend_job_info_t bi;
            if (h >= 0 && d->be && tide_backend_job_info(d->be, h, &bi) == 0) {
                json_t *b = json_object();
                set(b, "name", json_string(d->backend_name));
                set(b, "ids", json_string(bi.ids));
                set(b, "state", json_string(bi.state));
                set(b, "nodes", json_string(bi.nodes));
                set(b, "exit_code", bi.exit_code >= 0 ? json_integer(bi.exit_code) : json_null());
                set(b, "restarts", json_integer(bi.restarts));
                set(o, "backend", b);
            }
            tide_http_reply_json(rep, 200, o);
        }
        tide_store_job_free(&row);
    }
    tide_daemon_unlock(d);
}

static void h_job_cancel(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    tide_daemon_t *d = D(app);
    tide_daemon_lock(d);
    tide_store_job_t row;
    int32_t h;
    if (job_lookup(d, req->params[0], &row, &h, rep) < 0)
        goto out0;
    if (!team_ok(req, row.spec.team, row.spec.id, rep) || stopping(d, rep))
        goto out;
    tide_job_info_t ji;
    if (h >= 0 && tide_engine_job(d->e, h, &ji) == 0 &&
        (ji.state == TIDE_JOB_DONE || ji.state == TIDE_JOB_CANCELLED)) {
        tide_http_reply_error(rep, 409, "ESTATE", "job %s: already %s", row.spec.id,
                              tide_job_state_name(ji.state));
        goto out;
    }
    for (size_t i = 0; i < d->pending.n; i++)
        if (d->pending.v[i].ev.kind == TIDE_EV_JOB_CANCEL && d->pending.v[i].job_id &&
            !strcmp(d->pending.v[i].job_id, row.spec.id)) {
            tide_http_reply_json(rep, 200, json_pack("{s:o,s:s}", "id", jstr(row.spec.id),
                                                     "state", "cancelling"));
            goto out;
        }
    tide_event_t ev = {.kind = TIDE_EV_JOB_CANCEL, .job = h, .service = -1, .replica = -1,
                       .node = -1};
    tide_error_t err = {0};
    int64_t seq = dmn_accept(d, &ev, NULL, row.spec.id, NULL, NULL, &err);
    if (seq < 0) {
        fail(rep, &err);
        goto out;
    }
    /* the loop feeds it at once: answer with the resulting state */
    const char *state = "cancelling";
    if (dmn_wait_fed(d, seq, 5.0)) {
        h = tide_engine_job_find(d->e, row.spec.id);
        if (h >= 0 && tide_engine_job(d->e, h, &ji) == 0)
            state = tide_job_state_name(ji.state);
    }
    tide_http_reply_json(rep, 200, json_pack("{s:o,s:s}", "id", jstr(row.spec.id), "state", state));
out:
    tide_store_job_free(&row);
out0:
    tide_daemon_unlock(d);
}

static void h_job_ckpt(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    tide_daemon_t *d = D(app);
    tide_ckpt_request_t ck;
    tide_error_t err = {0};
    if (tide_json_ckpt(req->body, req->body_len, &ck, &err) < 0) {
        fail(rep, &err);
        return;
    }
    tide_daemon_lock(d);
    tide_store_job_t row;
    int32_t h;
    if (job_lookup(d, req->params[0], &row, &h, rep) < 0)
        goto out0;
    if (!team_ok(req, row.spec.team, row.spec.id, rep) || stopping(d, rep))
        goto out;
    double value = ck.progress_s;
    tide_job_info_t ji;
    int running = h >= 0 && tide_engine_job(d->e, h, &ji) == 0 &&
                  (ji.state == TIDE_JOB_RUNNING || ji.state == TIDE_JOB_RECLAIMING);
    if (ck.committed) {
        if (!running) {
            tide_http_reply_error(rep, 409, "ESTATE",
                                  "job %s: not running (a committed checkpoint needs a running job)",
                                  row.spec.id);
            goto out;
        }
        if (value < 0)
            value = ji.progress;
        if (value > (double)ji.spec->duration_s)
            value = (double)ji.spec->duration_s;
    }
    tide_time_t now = dmn_clock_now(d);
    tide_event_t ev = {.kind = TIDE_EV_CKPT_COMMITTED, .job = h, .service = -1, .replica = -1,
                       .node = -1, .value = value};
    int64_t seq = 0;
    int ok = tide_store_begin(d->st, &err) == 0;
    ok = ok && tide_store_checkpoint_add(d->st, row.spec.id, now, ck.step, ck.bytes, ck.shards,
                                         ck.committed, ck.committed ? value : ck.progress_s,
                                         &err) == 0;
    /* a real job (not the sim backend's) knows its progress better than the
     * engine's estimate from wall time (start-up, slow steps): resync first */
    int resync = ck.committed && ck.progress_s >= 0 && strcmp(d->backend_name, "sim") != 0;
    tide_event_t ph = {.kind = TIDE_EV_JOB_PHASE, .job = h, .service = -1, .replica = -1,
                       .node = -1, .phase = TIDE_PHASE_TRAINING, .value = value};
    int64_t seq_ph = 0;
    if (ok && resync)
        ok = (seq_ph = dmn_accept(d, &ph, NULL, row.spec.id, NULL, NULL, &err)) > 0;
    if (ok && ck.committed)
        ok = (seq = dmn_accept(d, &ev, NULL, row.spec.id, NULL, NULL, &err)) > 0;
    ok = ok && tide_store_commit(d->st, &err) == 0;
    if (!ok) {
        tide_store_rollback(d->st);
        fail(rep, &err);
        goto out;
    }
    if (resync)
        dmn_queue(d, &ph, NULL, seq_ph, row.spec.id, NULL, NULL);
    if (ck.committed)
        dmn_queue(d, &ev, NULL, seq, row.spec.id, NULL, NULL);
    json_t *o = json_object();
    set(o, "id", jstr(row.spec.id));
    set(o, "committed", json_boolean(ck.committed));
    set(o, "used", json_boolean(ck.committed));
    set(o, "progress_s", ck.committed ? jnum(value) : json_null());
    tide_http_reply_json(rep, 201, o);
out:
    tide_store_job_free(&row);
out0:
    tide_daemon_unlock(d);
}

static void h_notice(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    tide_daemon_t *d = D(app);
    long long wait;
    if (q_int(req, "wait", 0, 300, 0, &wait, rep) < 0)
        return;
    tide_daemon_lock(d);
    tide_store_job_t row;
    int32_t h;
    if (job_lookup(d, req->params[0], &row, &h, rep) < 0)
        goto out0;
    if (!team_ok(req, row.spec.team, row.spec.id, rep))
        goto out;
    uint64_t seen = h >= 0 ? dmn_job(d, h)->notice.id : 0;
    const notice_t *hit = NULL;
    if (h >= 0 && seen && dmn_job(d, h)->notice.active && !dmn_job(d, h)->notice.acked)
        hit = &dmn_job(d, h)->notice;
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += (time_t)wait;
    while (!hit && wait > 0 && !d->stop) {
        if (pthread_cond_timedwait(&d->notice_cv, &d->mu, &dl) == ETIMEDOUT)
            break;
        h = tide_engine_job_find(d->e, row.spec.id);
        if (h >= 0 && dmn_job(d, h)->notice.id > seen)
            hit = &dmn_job(d, h)->notice;
    }
    json_t *o = json_object();
    set(o, "id", jstr(row.spec.id));
    set(o, "notice", hit ? notice_json(hit) : json_null());
    tide_http_reply_json(rep, 200, o);
out:
    tide_store_job_free(&row);
out0:
    tide_daemon_unlock(d);
}

static void h_notice_ack(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    tide_daemon_t *d = D(app);
    if (req->body_len) {
        tide_error_t err = {0};
        json_t *o = tide_json_parse_object(req->body, req->body_len, &err);
        static const char *const none[] = {"id", NULL};
        if (!o || tide_json_only(o, none, &err) < 0) {
            json_decref(o);
            fail(rep, &err);
            return;
        }
        json_decref(o);
    }
    tide_daemon_lock(d);
    tide_store_job_t row;
    int32_t h;
    if (job_lookup(d, req->params[0], &row, &h, rep) < 0)
        goto out0;
    if (!team_ok(req, row.spec.team, row.spec.id, rep))
        goto out;
    notice_t *n = h >= 0 ? &dmn_job(d, h)->notice : NULL;
    if (!n || !n->id || n->acked) {
        tide_http_reply_error(rep, 409, "ESTATE", "job %s: no notice to acknowledge", row.spec.id);
        goto out;
    }
    n->acked = 1;
    tide_http_reply_json(rep, 200, json_pack("{s:o,s:I,s:b}", "id", jstr(row.spec.id), "notice",
                                             (json_int_t)n->id, "acked", 1));
out:
    tide_store_job_free(&row);
out0:
    tide_daemon_unlock(d);
}

static void h_leases(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    tide_daemon_t *d = D(app);
    long long active;
    if (q_int(req, "active", 0, 1, 0, &active, rep) < 0)
        return;
    tide_daemon_lock(d);
    json_t *arr = json_array();
    for (int l = 0; l < tide_engine_leases(d->e); l++) {
        tide_lease_info_t li;
        if (tide_engine_lease(d->e, l, &li) != 0 || (active && li.returned))
            continue;
        json_t *o = json_object();
        set(o, "id", json_integer(l));
        set(o, "job", json_null());
        tide_job_info_t ji;
        if (li.job >= 0 && tide_engine_job(d->e, li.job, &ji) == 0)
            set(o, "job", jstr(ji.spec->id));
        set(o, "gpus", json_integer(li.gpus));
        set(o, "start_s", json_integer(li.start));
        set(o, "latest_return_s", jtime(li.latest_return));
        set(o, "ckpt_cost_s", json_integer(li.ckpt_cost_s));
        set(o, "can_shrink", json_boolean(li.can_shrink));
        set(o, "noticed", json_boolean(li.noticed));
        set(o, "returned", json_boolean(li.returned));
        set(o, "late", json_boolean(li.late));
        json_array_append_new(arr, o);
    }
    tide_daemon_unlock(d);
    json_t *o = json_object();
    set(o, "leases", arr);
    tide_http_reply_json(rep, 200, o);
}

typedef struct feed_ctx {
    json_t *arr;
    int64_t last;
} feed_ctx_t;

static int feed_one(void *ctx, const tide_store_feed_row_t *r)
{
    feed_ctx_t *c = ctx;
    json_t *o = json_object();
    set(o, "seq", json_integer(r->seq));
    set(o, "time_s", json_integer(r->time_s));
    set(o, "type", json_string(r->is_action ? "action" : "event"));
    set(o, "kind", jstr(r->kind));
    set(o, "job", jstr(r->job_id));
    set(o, "service", jstr(r->service_name));
    set(o, "gpus", r->has_gpus ? json_integer(r->gpus) : json_null());
    set(o, "reason", jstr(r->reason));
    if (r->has_replica)
        set(o, "replica", json_integer(r->replica));
    if (r->has_lease)
        set(o, "lease", json_integer(r->lease));
    if (r->has_width)
        set(o, "width", json_integer(r->width));
    if (r->has_deadline)
        set(o, "deadline_s", json_integer(r->deadline_s));
    if (r->has_value)
        set(o, "value", jnum(r->value));
    if (r->has_node)
        set(o, "node", json_integer(r->node));
    if (r->source)
        set(o, "source", jstr(r->source));
    if (!r->step)
        set(o, "pending", json_true());
    json_array_append_new(c->arr, o);
    c->last = r->seq;
    return 0;
}

static void h_events(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    tide_daemon_t *d = D(app);
    long long cursor, limit;
    if (q_int(req, "cursor", 0, INT64_MAX, 0, &cursor, rep) < 0 ||
        q_int(req, "limit", 1, 5000, 500, &limit, rep) < 0)
        return;
    feed_ctx_t c = {.arr = json_array(), .last = cursor};
    tide_error_t err = {0};
    tide_daemon_lock(d);
    int n = tide_store_feed(d->st, cursor, (int)limit, feed_one, &c, &err);
    tide_daemon_unlock(d);
    if (n < 0) {
        json_decref(c.arr);
        fail(rep, &err);
        return;
    }
    json_t *o = json_object();
    set(o, "events", c.arr);
    set(o, "next", json_integer(c.last));
    tide_http_reply_json(rep, 200, o);
}

/* ----------------------------------------------------------------- usage */

enum { U_TEAM, U_SERVICE, U_CLASS, U_STATE, U_TIER, U_DIMS };
static const char *const udims[U_DIMS] = {"team", "service", "class", "state", "tier"};

typedef struct ucell {
    const char *key[U_DIMS]; /* NULL = not grouped / absent */
    char *store[U_DIMS];     /* owned copies */
    double gpu_s;
} ucell_t;

typedef struct uacc {
    int by[U_DIMS];
    ucell_t *v;
    size_t n, cap;
    double sign;
} uacc_t;

static int ukey_eq(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

static int uadd(void *ctx, const tide_store_usage_t *r)
{
    uacc_t *u = ctx;
    const char *k[U_DIMS] = {
        !strcmp(r->owner_kind, "team") ? r->owner : NULL,
        !strcmp(r->owner_kind, "service") ? r->owner : NULL, r->cls, r->state, r->tier};
    for (int i = 0; i < U_DIMS; i++)
        if (!u->by[i])
            k[i] = NULL;
    size_t c;
    for (c = 0; c < u->n; c++) {
        int eq = 1;
        for (int i = 0; i < U_DIMS && eq; i++)
            eq = ukey_eq(u->v[c].key[i], k[i]);
        if (eq)
            break;
    }
    if (c == u->n) {
        ucell_t cell = {0};
        for (int i = 0; i < U_DIMS; i++)
            if (k[i]) {
                cell.store[i] = tide_xstrdup(k[i]);
                cell.key[i] = cell.store[i];
            }
        TIDE_PUSH(u->v, u->n, u->cap, cell);
    }
    u->v[c].gpu_s += u->sign * r->gpu_s;
    return 0;
}

/* Cumulative usage at t into u (sign applied): live when t >= now. *at gets
 * the snapshot time used (-1 none). */
static int usage_at(tide_daemon_t *d, tide_time_t t, uacc_t *u, tide_time_t *at, tide_error_t *err)
{
    if (t >= d->now) {
        usage_rows_t rows = {0};
        dmn_usage_now(d, &rows);
        for (size_t i = 0; i < rows.n; i++)
            uadd(u, &rows.v[i]);
        dmn_usage_free(&rows);
        *at = d->now;
        return 0;
    }
    return tide_store_usage_at(d->st, t, at, uadd, u, err);
}

static void h_usage(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    tide_daemon_t *d = D(app);
    char byb[256];
    const char *by = tide_http_query(req, "by", byb, sizeof byb);
    uacc_t u = {0};
    if (!by || !*by) {
        u.by[U_TEAM] = u.by[U_CLASS] = u.by[U_STATE] = u.by[U_TIER] = 1;
    } else {
        char tmp[256];
        snprintf(tmp, sizeof tmp, "%s", by);
        char *save = NULL;
        for (char *p = strtok_r(tmp, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
            int k = -1;
            for (int i = 0; i < U_DIMS; i++)
                if (!strcmp(udims[i], p))
                    k = i;
            if (k < 0) {
                bad(rep, "by: unknown dimension '%s' (team, service, class, state, tier)", p);
                return;
            }
            u.by[k] = 1;
        }
    }
    long long since, until;
    if (q_int(req, "since", 0, INT64_MAX / 2, 0, &since, rep) < 0 ||
        q_int(req, "until", 0, INT64_MAX / 2, INT64_MAX / 2, &until, rep) < 0)
        return;
    if (until < since) {
        tide_http_reply_error(rep, 400, "EINVAL", "until: %lld is before since (%lld)", until, since);
        return;
    }
    tide_daemon_lock(d);
    tide_time_t at_u, at_s = -1;
    tide_error_t err = {0};
    u.sign = 1;
    int rc = usage_at(d, until, &u, &at_u, &err);
    if (rc == 0 && since > 0) {
        u.sign = -1;
        rc = usage_at(d, since, &u, &at_s, &err);
    }
    tide_time_t now = d->now;
    tide_daemon_unlock(d);
    if (rc < 0) {
        fail(rep, &err);
        goto done;
    }
    json_t *rows = json_array();
    double total = 0;
    for (size_t c = 0; c < u.n; c++) {
        if (fabs(u.v[c].gpu_s) < 1e-9)
            continue;
        json_t *o = json_object();
        for (int i = 0; i < U_DIMS; i++)
            if (u.by[i])
                set(o, udims[i], jstr(u.v[c].key[i]));
        set(o, "gpu_hours", jnum(u.v[c].gpu_s / 3600.0));
        total += u.v[c].gpu_s;
        json_array_append_new(rows, o);
    }
    json_t *o = json_object();
    set(o, "rows", rows);
    set(o, "total_gpu_hours", jnum(total / 3600.0));
    set(o, "since_s", json_integer(at_s >= 0 ? at_s : 0));
    set(o, "until_s", json_integer(until > now ? now : (at_u >= 0 ? at_u : 0)));
    tide_http_reply_json(rep, 200, o);
done:
    for (size_t c = 0; c < u.n; c++)
        for (int i = 0; i < U_DIMS; i++)
            free(u.v[c].store[i]);
    free(u.v);
}

static void h_reload(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    (void)req;
    tide_daemon_t *d = D(app);
    tide_daemon_lock(d);
    int nt, nteams, changed;
    tide_error_t err = {0};
    int rc = dmn_reload(d, &nt, &nteams, &changed, &err);
    tide_daemon_unlock(d);
    if (rc < 0) {
        fail(rep, &err);
        return;
    }
    json_t *o = json_object();
    set(o, "tokens", nt >= 0 ? json_integer(nt) : json_null());
    set(o, "teams", nteams >= 0 ? json_integer(nteams) : json_null());
    set(o, "teams_changed", json_integer(changed));
    tide_http_reply_json(rep, 200, o);
}

/* ------------------------------------------------------------------ table */

static const tide_route_t routes[] = {
    {"GET", "/healthz", TIDE_ROLE_PUBLIC, h_healthz},
    {"GET", "/metrics", TIDE_ROLE_PUBLIC, h_metrics},
    {"GET", "/v1/cluster", TIDE_ROLE_VIEWER, h_cluster},
    {"GET", "/v1/nodes", TIDE_ROLE_VIEWER, h_nodes},
    {"POST", "/v1/nodes/{n}/state", TIDE_ROLE_ADMIN, h_node_state},
    {"GET", "/v1/services", TIDE_ROLE_VIEWER, h_services},
    {"POST", "/v1/services", TIDE_ROLE_ADMIN, h_service_create},
    {"GET", "/v1/services/{name}", TIDE_ROLE_VIEWER, h_service_get},
    {"PATCH", "/v1/services/{name}", TIDE_ROLE_ADMIN, h_service_patch},
    {"POST", "/v1/services/{name}/demand", TIDE_ROLE_ROUTER, h_demand},
    {"POST", "/v1/jobs", TIDE_ROLE_SUBMITTER, h_job_submit},
    {"GET", "/v1/jobs", TIDE_ROLE_VIEWER, h_jobs_list},
    {"GET", "/v1/jobs/{id}", TIDE_ROLE_VIEWER, h_job_get},
    {"POST", "/v1/jobs/{id}/cancel", TIDE_ROLE_SUBMITTER, h_job_cancel},
    {"POST", "/v1/jobs/{id}/checkpoints", TIDE_ROLE_SUBMITTER, h_job_ckpt},
    {"GET", "/v1/jobs/{id}/notice", TIDE_ROLE_SUBMITTER, h_notice},
    {"POST", "/v1/jobs/{id}/notice/ack", TIDE_ROLE_SUBMITTER, h_notice_ack},
    {"POST", "/v1/replicas/{r}/ready", TIDE_ROLE_ROUTER, h_replica_ready},
    {"GET", "/v1/leases", TIDE_ROLE_VIEWER, h_leases},
    {"GET", "/v1/events", TIDE_ROLE_VIEWER, h_events},
    {"GET", "/v1/usage", TIDE_ROLE_VIEWER, h_usage},
    {"POST", "/v1/admin/reload", TIDE_ROLE_ADMIN, h_reload},
};

const tide_route_t *tide_daemon_routes(size_t *n)
{
    *n = sizeof routes / sizeof routes[0];
    return routes;
}
