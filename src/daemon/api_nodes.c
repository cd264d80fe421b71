/* The cluster API: the cluster and its statistics, nodes (and marking one
 * failed or recovered), leases. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/internal.h"
#include "util/util.h"

/* Per team: definition and quota state (the dashboard's Teams view). */
static json_t *teams_json(const tide_engine_t *e)
{
    json_t *arr = json_array();
    for (int t = 0; t < tide_engine_teams(e); t++) {
        tide_team_info_t ti;
        tide_team_stats_t ts;
        if (tide_engine_team_info(e, t, &ti) != 0 || tide_engine_team(e, t, &ts) != 0)
            continue;
        json_t *o = json_object();
        api_set(o, "team", api_str(ti.team));
        api_set(o, "weight", api_num(ti.weight));
        api_set(o, "usage_gpu_s", api_num(ti.usage));
        api_set(o, "quota_gpus", ti.quota_gpus >= 0 ? json_integer(ti.quota_gpus) : json_null());
        api_set(o, "used_gpus", json_integer(ti.used_gpus));
        api_set(o, "borrowed_gpus", json_integer(ti.borrowed_gpus));
        api_set(o, "borrow_limit", ti.borrow_limit >= 0 ? json_integer(ti.borrow_limit) : json_null());
        api_set(o, "lend_cap", ti.lend_cap >= 0 ? json_integer(ti.lend_cap) : json_null());
        api_set(o, "preemptions", json_integer(ts.preemptions));
        api_set(o, "lost_gpu_hours", api_num(ts.lost_gpu_s / 3600.0));
        api_set(o, "gpu_hours", api_num(ts.gpu_s / 3600.0));
        json_array_append_new(arr, o);
    }
    return arr;
}

API_HANDLER(api_cluster)
{
    (void)req;
    tide_daemon_t *d = API_D(app);
    tide_daemon_lock(d);
    const tide_engine_t *e = d->e;
    tide_stats_t st;
    tide_engine_stats(e, &st);
    json_t *o = json_object();
    api_set(o, "policy", json_string(d->policy));
    api_set(o, "now_s", json_integer(d->now));
    api_set(o, "gpus", json_integer(tide_cluster_gpus(d->cluster)));
    api_set(o, "nodes", json_integer(tide_cluster_nodes(d->cluster)));
    api_set(o, "domains", json_integer(tide_cluster_domains(d->cluster)));
    char spec[512];
    tide_cluster_format(d->cluster, spec, sizeof spec);
    api_set(o, "spec", json_string(spec));
    json_t *types = json_array();
    for (int t = 0; t < tide_cluster_types(d->cluster); t++) {
        int reserve = 0;
        int n = tide_engine_type_gpus(e, t, &reserve);
        json_array_append_new(types, json_pack("{s:s,s:i,s:i}", "name",
                                               tide_cluster_type_name(d->cluster, t), "gpus", n,
                                               "reserve_gpus", reserve));
    }
    api_set(o, "types", types);
    api_set(o, "backend", json_string(d->backend_name));
    api_set(o, "mode", json_string(d->shadow ? "shadow" : "enact"));
    api_set(o, "speed", api_num(d->speed));
    api_set(o, "epoch", json_integer(d->epoch));
    /* the wall clock of engine time 0 (Unix seconds): engine time t happened
     * at wall_origin + t / speed */
    {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double unix_now = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
        double sp = d->speed > 0 ? d->speed : 1;
        api_set(o, "wall_origin", api_num(unix_now - (double)dmn_clock_now(d) / sp));
    }
    json_t *s = json_object();
    json_t *by_state = json_object(), *by_class = json_object(), *grid = json_object();
    for (int k = 0; k < TIDE_S_COUNT; k++) {
        int n = 0;
        for (int c = 0; c < TIDE_C_COUNT; c++)
            n += st.gpus_now[c][k];
        api_set(by_state, tide_state_name(k), json_integer(n));
    }
    for (int c = 0; c < TIDE_C_COUNT; c++) {
        int n = 0;
        json_t *row = json_object();
        for (int k = 0; k < TIDE_S_COUNT; k++) {
            n += st.gpus_now[c][k];
            if (st.gpus_now[c][k])
                api_set(row, tide_state_name(k), json_integer(st.gpus_now[c][k]));
        }
        api_set(by_class, tide_class_name(c), json_integer(n));
        api_set(grid, tide_class_name(c), row);
    }
    api_set(s, "gpus_by_state", by_state);
    api_set(s, "gpus_by_class", by_class);
    api_set(s, "gpus", grid);
    api_set(s, "demand_rps", api_num(st.demand_rps));
    api_set(s, "ready_rps", api_num(st.ready_rps));
    api_set(s, "queue_jobs", json_integer(st.queue_jobs));
    api_set(s, "queue_gpus", json_integer(st.queue_gpus));
    api_set(s, "jobs_submitted", json_integer(st.jobs_submitted));
    api_set(s, "jobs_completed", json_integer(st.jobs_completed));
    api_set(s, "jobs_running", json_integer(st.jobs_running));
    api_set(s, "replicas_ready", json_integer(st.replicas_ready));
    api_set(s, "replicas_warming", json_integer(st.replicas_warming));
    api_set(s, "preemptions", json_integer(st.preemptions));
    api_set(s, "shrinks", json_integer(st.shrinks));
    api_set(s, "reclaims", json_integer(st.reclaims));
    api_set(s, "reclaims_late", json_integer(st.reclaims_late));
    api_set(s, "leases_expired", json_integer(st.leases_expired));
    api_set(s, "leases_granted", json_integer(st.leases_granted));
    api_set(s, "tier_a_breach_gpu_s", api_num(st.tier_a_breach_gpu_s));
    api_set(s, "tier_a_short_gpus", json_integer(st.tier_a_short_gpus));
    api_set(s, "lost_gpu_hours", api_num(st.lost_gpu_s / 3600.0));
    api_set(s, "slo_attainment",
        api_num(st.requests_demanded > 0 ? st.requests_served / st.requests_demanded : 1.0));
    double total = (double)st.cluster_gpus * (double)(st.now - st.start), idle = 0;
    for (int t = 0; t < TIDE_T_COUNT; t++)
        idle += st.gpu_s[TIDE_C_NONE][TIDE_S_IDLE][t];
    api_set(s, "utilization", api_num(total > 0 ? 1.0 - idle / total : 0));
    api_set(o, "stats", s);
    api_set(o, "teams", teams_json(e));
    tide_daemon_unlock(d);
    tide_http_reply_json(rep, 200, o);
}

/* What GPU g does, for the dashboard: serving, warming (a replica),
 * lent (training on a lease), reclaiming (its lease got a reclaim notice),
 * training (dedicated), idle, down (its node failed). */
static const char *gpu_ui_state(tide_daemon_t *d, int g, int up, int kind, int32_t who,
                                const tide_job_info_t *ji, const tide_lease_info_t *li)
{
    int cls, state, tier;
    dmn_gpu_class(d, g, &cls, &state, &tier);
    if (!up)
        return "down";
    if (kind == 2)
        return state == TIDE_S_SERVING ? "serving" : "warming";
    if (kind == 3)
        return "foreign";
    if (kind == 1 && ji) {
        /* a reclaim notice not yet satisfied (the lease may have been renewed
         * to the notice's deadline) */
        int noticed = (li && li->noticed && !li->returned) ||
                      ((size_t)who < d->n_jobs && d->jobs[who].notice.active);
        if (li || noticed)
            return noticed ? "reclaiming" : "lent";
        return "training";
    }
    return "idle";
}

/* One GPU of /v1/nodes. A job of another team (for a caller who is not an
 * admin) shows as "other-team", counted in *hidden: never its id or team. */
static json_t *gpu_json(tide_daemon_t *d, const tide_http_req_t *req, int g, int up,
                        long *hidden)
{
    int32_t who;
    int kind = tide_engine_gpu_owner(d->e, g, &who);
    json_t *o = json_object();
    api_set(o, "gpu", json_integer(g));
    char buf[300];
    tide_job_info_t ji;
    int have_job = kind == 1 && tide_engine_job(d->e, who, &ji) == 0;
    tide_lease_info_t li;
    int have_lease = have_job && ji.lease >= 0 && tide_engine_lease(d->e, ji.lease, &li) == 0;
    if (kind == 1) {
        const char *id = have_job ? ji.spec->id : NULL;
        const char *team = have_job && ji.spec->team ? ji.spec->team : "";
        if (have_job && !api_sees_team(req, team)) {
            (*hidden)++;
            api_set(o, "owner", json_string("other-team"));
        } else {
            snprintf(buf, sizeof buf, "job:%s", id ? id : "?");
            api_set(o, "owner", api_str(buf));
            api_set(o, "team", api_str(team));
            if (have_job)
                api_set(o, "priority", json_integer(ji.spec->priority));
        }
    } else if (kind == 2) {
        snprintf(buf, sizeof buf, "replica:%d", (int)who);
        api_set(o, "owner", json_string(buf));
        drep_t *r = (size_t)who < d->n_reps ? &d->reps[who] : NULL;
        const char *svc = r ? dmn_service_name(d->e, r->service) : NULL;
        if (svc)
            api_set(o, "service", api_str(svc));
    } else if (kind == 3) {
        api_set(o, "owner", json_string("foreign"));
    } else {
        api_set(o, "owner", json_null());
    }
    api_set(o, "state", json_string(gpu_ui_state(d, g, up, kind, who, have_job ? &ji : NULL,
                                                  have_lease ? &li : NULL)));
    char z[2] = {tide_engine_gpu_zone(d->e, g), 0};
    if (z[0] == 'A')
        api_set(o, "tier_a", json_true());
    if (have_lease) {
        api_set(o, "lease", json_integer(ji.lease));
        api_set(o, "latest_return_s", api_time(li.latest_return));
    }
    return o;
}

API_HANDLER(api_nodes)
{
    tide_daemon_t *d = API_D(app);
    long hidden = 0;
    tide_daemon_lock(d);
    json_t *arr = json_array();
    for (int n = 0; n < tide_cluster_nodes(d->cluster); n++) {
        tide_node_info_t ni;
        if (tide_cluster_node(d->cluster, n, &ni) != 0)
            continue;
        json_t *o = json_object();
        api_set(o, "node", json_integer(n));
        const char *bn = tide_backend_node_name(d->be, n);
        if (bn)
            api_set(o, "name", json_string(bn));
        api_set(o, "type", json_string(tide_cluster_type_name(d->cluster, ni.type)));
        api_set(o, "domain", json_integer(ni.domain));
        api_set(o, "up", json_boolean(d->node_up[n] == 1));
        if (d->node_up[n] == 2)
            api_set(o, "unreachable", json_true());
        int fwant = 0, fheld = tide_engine_node_foreign(d->e, n, &fwant);
        api_set(o, "foreign", json_integer(fheld > 0 ? fheld : 0));
        if (fwant > fheld)
            api_set(o, "foreign_reported", json_integer(fwant));
        if (d->node_reason && d->node_reason[n][0])
            api_set(o, "reason", json_string(d->node_reason[n]));
        char z[2] = {tide_engine_gpu_zone(d->e, ni.first_gpu), 0};
        api_set(o, "zone", json_string(z));
        json_t *gs = json_array();
        for (int g = ni.first_gpu; g < ni.first_gpu + ni.gpus; g++)
            json_array_append_new(gs, gpu_json(d, req, g, d->node_up[n] == 1, &hidden));
        api_set(o, "gpus", gs);
        json_array_append_new(arr, o);
    }
    tide_daemon_unlock(d);
    json_t *top = json_object();
    api_set(top, "nodes", arr);
    if (!api_is_admin(req))
        api_set(top, "other_team_gpus", json_integer(hidden));
    tide_http_reply_json(rep, 200, top);
}

API_HANDLER(api_node_state)
{
    tide_daemon_t *d = API_D(app);
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
        api_fail(rep, &err);
        return;
    }
    char reason[128] = "";
    json_t *body = json_loadb(req->body ? req->body : "{}", req->body ? req->body_len : 2, 0, NULL);
    const json_t *rj = json_object_get(body, "reason");
    if (rj && !json_is_string(rj) && !json_is_null(rj)) {
        json_decref(body);
        tide_http_reply_error(rep, 400, "EINVAL", "reason: must be a string");
        return;
    }
    snprintf(reason, sizeof reason, "%s", json_is_string(rj) ? json_string_value(rj) : "");
    json_decref(body);
    tide_daemon_lock(d);
    if (api_stopping(d, rep)) {
        tide_daemon_unlock(d);
        return;
    }
    int64_t seq = dmn_node_set(d, (int)node, up, &err);
    int rc = seq < 0 ? -1 : 0;
    if (rc == 0 && (reason[0] || up)) {
        if (!d->node_reason)
            d->node_reason = tide_xcalloc((size_t)tide_cluster_nodes(d->cluster), sizeof *d->node_reason);
        snprintf(d->node_reason[node], sizeof d->node_reason[node], "%s", up ? "" : reason);
    }
    tide_daemon_unlock(d);
    if (rc < 0) {
        api_fail(rep, &err);
        return;
    }
    /* answer once the engine has it, so that a GET right after shows the new state */
    dmn_lock_read(d);
    int fed = dmn_wait_fed(d, seq, 5.0);
    dmn_unlock_read(d);
    tide_http_reply_json(rep, 200, json_pack("{s:I,s:b,s:b}", "node", (json_int_t)node, "up", up,
                                             "applied", fed));
}

API_HANDLER(api_leases)
{
    tide_daemon_t *d = API_D(app);
    long long active;
    if (api_q_int(req, "active", 0, 1, 0, &active, rep) < 0)
        return;
    long hidden = 0;
    tide_daemon_lock(d);
    json_t *arr = json_array();
    for (int l = 0; l < tide_engine_leases(d->e); l++) {
        tide_lease_info_t li;
        if (tide_engine_lease(d->e, l, &li) != 0 || (active && li.returned))
            continue;
        tide_job_info_t ji;
        int has_job = li.job >= 0 && tide_engine_job(d->e, li.job, &ji) == 0 && ji.spec;
        if (has_job && !api_sees_team(req, ji.spec->team)) {
            hidden++; /* another team's lease: only counted */
            continue;
        }
        json_t *o = json_object();
        api_set(o, "id", json_integer(l));
        api_set(o, "job", has_job ? api_str(ji.spec->id) : json_null());
        if (has_job)
            api_set(o, "team", api_str(ji.spec->team ? ji.spec->team : ""));
        api_set(o, "gpus", json_integer(li.gpus));
        api_set(o, "start_s", json_integer(li.start));
        api_set(o, "latest_return_s", api_time(li.latest_return));
        api_set(o, "ckpt_cost_s", json_integer(li.ckpt_cost_s));
        api_set(o, "can_shrink", json_boolean(li.can_shrink));
        api_set(o, "noticed", json_boolean(li.noticed));
        api_set(o, "returned", json_boolean(li.returned));
        api_set(o, "late", json_boolean(li.late));
        json_array_append_new(arr, o);
    }
    tide_daemon_unlock(d);
    json_t *o = json_object();
    api_set(o, "leases", arr);
    if (!api_is_admin(req))
        api_set(o, "other_team_leases", json_integer(hidden));
    tide_http_reply_json(rep, 200, o);
}
