/* The daemon: opening and recovery, the step (feed, persist, enact), the
 * loop, epochs (service changes) and reloads. */
#include "daemon/internal.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http/codec.h"
#include "http/get.h"
#include "formats/cluster_file.h"
#include "util/util.h"

#define MAX_PASSES 100000 /* steps at one instant before we call it a livelock */

/* ------------------------------------------------------------------ small */

static double mono_now(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double wall(tide_daemon_t *d) { return d->clock(d->clock_ctx); }

void dmn_log(tide_daemon_t *d, const char *fmt, ...)
{
    FILE *f = d->log ? d->log : stderr;
    va_list ap;
    va_start(ap, fmt);
    fprintf(f, "tide serve: [t=%lld] ", (long long)d->now);
    vfprintf(f, fmt, ap);
    fputc('\n', f);
    fflush(f);
    va_end(ap);
}

tide_time_t dmn_clock_now(tide_daemon_t *d)
{
    double dt = (wall(d) - d->wall0) * d->speed;
    tide_time_t t = d->t0 + (dt > 0 ? (tide_time_t)floor(dt + 1e-9) : 0);
    if (t < d->last_clock)
        t = d->last_clock;
    if (t < d->now)
        t = d->now;
    d->last_clock = t;
    return t;
}

void dmn_kick(tide_daemon_t *d)
{
    d->kick = 1;
    pthread_cond_signal(&d->loop_cv);
}

djob_t *dmn_job(tide_daemon_t *d, int32_t h)
{
    if ((size_t)h >= d->n_jobs) {
        size_t n = d->n_jobs ? d->n_jobs : 64;
        while (n <= (size_t)h)
            n *= 2;
        d->jobs = tide_xrealloc(d->jobs, n * sizeof *d->jobs);
        for (size_t i = d->n_jobs; i < n; i++)
            d->jobs[i] = (djob_t){.db_state = TIDE_JOB_QUEUED};
        d->n_jobs = n;
    }
    return &d->jobs[h];
}

drep_t *dmn_rep(tide_daemon_t *d, int32_t r)
{
    if ((size_t)r >= d->n_reps) {
        size_t n = d->n_reps ? d->n_reps : 64;
        while (n <= (size_t)r)
            n *= 2;
        d->reps = tide_xrealloc(d->reps, n * sizeof *d->reps);
        for (size_t i = d->n_reps; i < n; i++)
            d->reps[i] = (drep_t){.service = -1, .state = REP_NONE};
        d->n_reps = n;
    }
    return &d->reps[r];
}

static void dev_free(dmn_ev_t *v)
{
    free(v->job_id);
    free(v->service_name);
    free(v->payload);
    free(v->team);
    memset(v, 0, sizeof *v);
}

static void devq_clear(devq_t *q)
{
    for (size_t i = 0; i < q->n; i++)
        dev_free(&q->v[i]);
    q->n = 0;
}

/* Drop the first k entries of q (freeing them). */
static void devq_drop_front(devq_t *q, size_t k)
{
    for (size_t i = 0; i < k; i++)
        dev_free(&q->v[i]);
    if (k == 0)
        return;
    if (q->n > k)
        memmove(q->v, q->v + k, (q->n - k) * sizeof *q->v);
    q->n -= k;
    /* submits point their job_spec at their own spec: re-link after moving */
    for (size_t i = 0; i < q->n; i++)
        if (q->v[i].ev.kind == TIDE_EV_JOB_SUBMIT)
            q->v[i].ev.job_spec = &q->v[i].spec;
}

static dmn_ev_t *devq_push(devq_t *q, const tide_event_t *ev, tide_time_t t, int64_t seq,
                        const char *job_id, const char *service_name, const char *payload,
                        const char *source, const tide_job_spec_t *spec)
{
    tide_grow((void **)&q->v, &q->cap, q->n + 1, sizeof *q->v);
    /* growing moved the array: re-link earlier submits */
    for (size_t i = 0; i < q->n; i++)
        if (q->v[i].ev.kind == TIDE_EV_JOB_SUBMIT)
            q->v[i].ev.job_spec = &q->v[i].spec;
    dmn_ev_t *v = &q->v[q->n++];
    memset(v, 0, sizeof *v);
    v->ev = *ev;
    v->ev.job_spec = NULL;
    v->t = t;
    v->seq = seq;
    v->job_id = job_id ? tide_xstrdup(job_id) : NULL;
    v->service_name = service_name ? tide_xstrdup(service_name) : NULL;
    v->payload = payload ? tide_xstrdup(payload) : NULL;
    v->source = source;
    if (spec && ev->kind == TIDE_EV_JOB_SUBMIT) {
        v->spec = *spec;
        v->team = tide_xstrdup(spec->team ? spec->team : "");
        v->spec.team = v->team;
        if (!v->job_id)
            v->job_id = tide_xstrdup(spec->id ? spec->id : "");
        v->spec.id = v->job_id;
        v->ev.job_spec = &v->spec;
    }
    return v;
}

static tide_event_t blank_event(int kind)
{
    return (tide_event_t){.kind = kind, .job = -1, .service = -1, .replica = -1, .node = -1};
}

static const char *job_id_of(const tide_engine_t *e, int32_t h)
{
    tide_job_info_t ji;
    if (h < 0 || tide_engine_job(e, h, &ji) != 0 || !ji.spec)
        return NULL;
    return ji.spec->id;
}

static const char *service_name_of(const tide_engine_t *e, int32_t s)
{
    const tide_service_spec_t *sp = s >= 0 ? tide_engine_service(e, s) : NULL;
    return sp ? sp->name : NULL;
}

/* -------------------------------------------------------------- clusters */

static char *cluster_json(const tide_cluster_t *c)
{
    json_t *a = json_array();
    for (int i = 0; i < tide_cluster_groups(c); i++) {
        tide_node_group_t g;
        if (tide_cluster_group(c, i, &g) != 0)
            continue;
        json_array_append_new(a, json_pack("{s:i,s:i,s:s,s:i,s:i,s:i}", "count", g.count,
                                           "gpus_per_node", g.gpus_per_node, "gpu_type",
                                           g.gpu_type ? g.gpu_type : "gpu", "domain_nodes",
                                           g.domain_nodes, "rack_nodes", g.rack_nodes,
                                           "power_nodes", g.power_nodes));
    }
    char *s = json_dumps(a, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(a);
    char *r = tide_xstrdup(s ? s : "[]");
    free(s);
    return r;
}

static tide_cluster_t *cluster_from_json(const char *s, tide_error_t *err)
{
    json_error_t je;
    json_t *a = json_loads(s, 0, &je);
    if (!json_is_array(a)) {
        json_decref(a);
        tide_errf(err, TIDE_EIO, "database: the stored cluster is unreadable");
        return NULL;
    }
    tide_cluster_t *c = tide_cluster_create();
    size_t i;
    json_t *x;
    json_array_foreach(a, i, x) {
        tide_node_group_t g = {0};
        const char *type = NULL;
        if (json_unpack(x, "{s:i,s:i,s:s,s:i,s:i,s:i}", "count", &g.count, "gpus_per_node",
                        &g.gpus_per_node, "gpu_type", &type, "domain_nodes", &g.domain_nodes,
                        "rack_nodes", &g.rack_nodes, "power_nodes", &g.power_nodes) != 0 ||
            (g.gpu_type = type, tide_cluster_add_group(c, &g, err) != 0)) {
            if (err && !err->msg[0])
                tide_errf(err, TIDE_EIO, "database: the stored cluster is unreadable");
            tide_cluster_destroy(c);
            json_decref(a);
            return NULL;
        }
    }
    json_decref(a);
    return c;
}

/* ---------------------------------------------------------------- teams */

static dteam_t *team_slot(tide_daemon_t *d, const char *name)
{
    for (size_t i = 0; i < d->n_teams; i++)
        if (!strcmp(d->teams[i].name, name))
            return &d->teams[i];
    return NULL;
}

static void teams_clear(tide_daemon_t *d)
{
    for (size_t i = 0; i < d->n_teams; i++) {
        free(d->teams[i].name);
        free(d->teams[i].json);
    }
    d->n_teams = 0;
}

/* Apply a team_set payload to the engine (before a step). */
static void team_apply(tide_daemon_t *d, const char *payload)
{
    tide_team_spec_t t;
    char *name = NULL;
    tide_error_t err = {0};
    if (tide_json_team_from_string(payload, &t, &name, &err) < 0 ||
        tide_engine_set_team(d->e, &t, &err) < 0) {
        dmn_log(d, "team definition ignored: %s", err.msg);
        free(name);
        return;
    }
    dteam_t *s = team_slot(d, name);
    if (!s) {
        dteam_t n = {.name = tide_xstrdup(name), .json = NULL};
        TIDE_PUSH(d->teams, d->n_teams, d->cap_teams, n);
        s = &d->teams[d->n_teams - 1];
    }
    free(s->json);
    s->json = tide_xstrdup(payload);
    free(name);
}

/* Log a team_set for each team of gov that differs from what the engine has
 * (inside the caller's transaction, queued after commit by the caller). */
static int teams_accept(tide_daemon_t *d, const tide_governance_t *gov, int *changed,
                        tide_error_t *err);

/* -------------------------------------------------------------- derived */

static void notice_set(tide_daemon_t *d, const tide_action_t *a, tide_time_t t)
{
    djob_t *j = dmn_job(d, a->job);
    notice_t *n = &j->notice;
    n->id = ++d->notice_seq;
    n->kind = a->kind;
    n->reason = a->reason;
    n->at = t;
    n->deadline = a->kind == TIDE_ACT_JOB_CKPT ? a->deadline : t;
    n->prev_width = j->width;
    n->width = a->kind == TIDE_ACT_JOB_RESIZE ? a->width : j->width;
    n->active = 1;
    n->acked = 0;
}

static void notice_clear(tide_daemon_t *d, int32_t h)
{
    djob_t *j = dmn_job(d, h);
    j->notice.active = 0; /* keep the id: pollers compare it */
}

/* Update what the daemon derives from the stream (live and replay alike). */
static void derive(tide_daemon_t *d, tide_time_t t, const tide_event_t *ev, size_t n,
                   const tide_actions_t *acts)
{
    int noticed = 0;
    for (size_t i = 0; i < n; i++) {
        const tide_event_t *x = &ev[i];
        switch (x->kind) {
        case TIDE_EV_REPLICA_READY:
            if (x->replica >= 0 && dmn_rep(d, x->replica)->state == REP_WARM)
                dmn_rep(d, x->replica)->state = REP_UP;
            break;
        case TIDE_EV_REPLICA_FAILED:
            if (x->replica >= 0)
                dmn_rep(d, x->replica)->state = REP_NONE;
            break;
        case TIDE_EV_NODE_FAILED:
        case TIDE_EV_NODE_RECOVERED:
            if (x->node >= 0 && x->node < tide_cluster_nodes(d->cluster))
                d->node_up[x->node] = x->kind == TIDE_EV_NODE_RECOVERED;
            break;
        case TIDE_EV_CKPT_COMMITTED:
            if (x->job >= 0 && dmn_job(d, x->job)->notice.kind == TIDE_ACT_JOB_CKPT)
                notice_clear(d, x->job);
            break;
        case TIDE_EV_DEMAND:
            if (x->service >= 0 && (size_t)x->service < d->n_svcs)
                d->last_demand[x->service] = x->value;
            break;
        default:
            break;
        }
    }
    for (size_t i = 0; acts && i < acts->n; i++) {
        const tide_action_t *a = &acts->v[i];
        switch (a->kind) {
        case TIDE_ACT_JOB_START:
            notice_clear(d, a->job);
            dmn_job(d, a->job)->width = a->width;
            break;
        case TIDE_ACT_JOB_STOP:
            notice_clear(d, a->job);
            dmn_job(d, a->job)->width = 0;
            if (a->reason != TIDE_R_COMPLETE && a->reason != TIDE_R_CANCEL && a->reason >= 0 &&
                a->reason < TIDE_R_COUNT)
                d->preempt[a->reason]++;
            break;
        case TIDE_ACT_JOB_CKPT:
            notice_set(d, a, t);
            noticed = 1;
            break;
        case TIDE_ACT_JOB_RESIZE:
            notice_set(d, a, t);
            dmn_job(d, a->job)->width = a->width;
            noticed = 1;
            break;
        case TIDE_ACT_REPLICA_START: {
            drep_t *r = dmn_rep(d, a->replica);
            r->service = a->service;
            r->state = REP_WARM;
            break;
        }
        case TIDE_ACT_REPLICA_STOP:
            dmn_rep(d, a->replica)->state = REP_NONE;
            break;
        default:
            break;
        }
    }
    if (noticed)
        pthread_cond_broadcast(&d->notice_cv);
}

/* ---------------------------------------------------------------- engine */

static void derived_reset(tide_daemon_t *d)
{
    free(d->reps);
    d->reps = NULL;
    d->n_reps = 0;
    free(d->jobs);
    d->jobs = NULL;
    d->n_jobs = 0;
    int nn = tide_cluster_nodes(d->cluster);
    free(d->node_up);
    d->node_up = tide_xmalloc((size_t)(nn > 0 ? nn : 1));
    memset(d->node_up, 1, (size_t)(nn > 0 ? nn : 1));
    free(d->last_demand);
    d->last_demand = tide_xmalloc((d->n_svcs ? d->n_svcs : 1) * sizeof *d->last_demand);
    for (size_t i = 0; i < d->n_svcs; i++)
        d->last_demand[i] = -1;
    memset(d->preempt, 0, sizeof d->preempt);
    teams_clear(d);
    d->started = 0;
    d->next_wake = 0;
}

static int engine_build(tide_daemon_t *d, tide_error_t *err)
{
    tide_engine_destroy(d->e);
    d->e = tide_engine_create(d->cluster, &d->cfg, err);
    if (!d->e)
        return -1;
    for (size_t i = 0; i < d->n_svcs; i++) {
        int idx = tide_engine_add_service(d->e, &d->svcs[i], err);
        if (idx < 0)
            return tide_err_prefix(err, "service %s: ", d->svcs[i].name);
        if ((size_t)idx != i)
            return tide_errf(err, TIDE_ESTATE, "service %s got index %d, expected %zu",
                             d->svcs[i].name, idx, i);
    }
    derived_reset(d);
    return 0;
}

/* Resolve an event's job handle from its id (live and replay alike). */
static void resolve(const tide_daemon_t *d, tide_event_t *ev, const char *job_id)
{
    if (job_id && ev->kind != TIDE_EV_JOB_SUBMIT)
        ev->job = tide_engine_job_find(d->e, job_id);
}

static void evbuf_push(tide_daemon_t *d, const tide_event_t *ev)
{
    TIDE_PUSH(d->evbuf, d->n_evbuf, d->cap_evbuf, *ev);
}

/* ---------------------------------------------------------------- replay */

static int same_action(const tide_action_t *a, const tide_store_action_rec_t *r)
{
    return a->kind == r->kind && a->reason == r->reason && a->job == r->job &&
           a->replica == r->replica && a->n_gpus == r->n_gpus &&
           (a->kind != TIDE_ACT_JOB_START && a->kind != TIDE_ACT_JOB_RESIZE ? 1 : a->width == r->width);
}

static int replay_step(void *ctx, int64_t step, tide_time_t t, const tide_store_event_t *ev,
                       size_t n, const tide_store_action_rec_t *rec, size_t nrec)
{
    tide_daemon_t *d = ctx;
    d->n_evbuf = 0;
    for (size_t i = 0; i < n; i++)
        if (ev[i].ev.kind == TIDE_STORE_KIND_TEAM_SET && ev[i].payload)
            team_apply(d, ev[i].payload);
    for (size_t i = 0; i < n; i++) {
        if (ev[i].ev.kind < 0 || ev[i].ev.kind >= TIDE_EV_KIND_COUNT)
            continue;
        tide_event_t x = ev[i].ev;
        resolve(d, &x, ev[i].job_id);
        evbuf_push(d, &x);
    }
    tide_error_t err = {0};
    if (tide_engine_step(d->e, t, d->evbuf, d->n_evbuf, &d->acts, &err) != 0) {
        if (strstr(err.msg, "backwards"))
            return 1;
        d->step_errors++;
    }
    int same = d->acts.n == nrec;
    for (size_t i = 0; same && i < nrec; i++)
        same = same_action(&d->acts.v[i], &rec[i]);
    if (!same) {
        if (d->replay_mismatch < 5)
            dmn_log(d, "replay: step %lld at t=%lld gave %zu actions, %zu were recorded "
                       "(the engine is not deterministic, or the log was edited)",
                    (long long)step, (long long)t, d->acts.n, nrec);
        d->replay_mismatch++;
    }
    derive(d, t, d->evbuf, d->n_evbuf, &d->acts);
    d->started = 1;
    d->now = t;
    d->next_wake = d->acts.next_wake;
    d->step = step;
    d->steps_total++;
    return 0;
}

static int pending_load(void *ctx, int64_t step, tide_time_t t, const tide_store_event_t *ev,
                        size_t n, const tide_store_action_rec_t *rec, size_t nrec)
{
    (void)step;
    (void)t;
    (void)rec;
    (void)nrec;
    tide_daemon_t *d = ctx;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].ev.kind < 0 || ev[i].ev.kind > TIDE_STORE_KIND_TEAM_SET)
            continue;
        devq_push(&d->pending, &ev[i].ev, ev[i].time_s, ev[i].seq, ev[i].job_id,
                  ev[i].service_name, ev[i].payload, "api",
                  ev[i].ev.kind == TIDE_EV_JOB_SUBMIT && ev[i].spec.id ? &ev[i].spec : NULL);
    }
    return 0;
}

/* Rebuild the engine from the database: replay the epoch, load pending
 * events, check invariants, create the backend and reconcile with it. */
static int rebuild(tide_daemon_t *d, tide_error_t *err)
{
    tide_backend_destroy(d->be);
    d->be = NULL;
    devq_clear(&d->pending);
    devq_clear(&d->extra);
    if (engine_build(d, err) < 0)
        return -1;
    d->replay_mismatch = 0;
    int rc = tide_store_replay(d->st, d->epoch, replay_step, d, err);
    if (rc != 0) {
        if (rc > 0)
            tide_errf(err, TIDE_EIO, "replay: time went backwards in the event log");
        return tide_err_prefix(err, "recovery: ");
    }
    if (tide_store_pending(d->st, pending_load, d, err) != 0)
        return tide_err_prefix(err, "recovery: ");
    int64_t last;
    tide_time_t lt;
    if (tide_store_last_step(d->st, &last, &lt, err) < 0)
        return -1;
    d->step = last;
    if (lt > d->now)
        d->now = lt;
    for (size_t i = 0; i < d->pending.n; i++)
        if (d->pending.v[i].t > d->now)
            d->now = d->pending.v[i].t;
    if (d->started) {
        tide_error_t ce = {0};
        if (tide_engine_check(d->e, &ce) < 0)
            return tide_errf(err, TIDE_ESTATE,
                             "recovery: the engine rebuilt from %s violates an invariant: %s "
                             "(refusing to run)",
                             d->db_path, ce.msg);
    }
    /* the jobs table matches the engine after a complete replay */
    for (int h = 0; h < tide_engine_jobs(d->e); h++) {
        tide_job_info_t ji;
        if (tide_engine_job(d->e, h, &ji) == 0)
            dmn_job(d, h)->db_state = ji.state;
    }
    if (!(d->be = tide_backend_create(d->backend_name, d->e, &d->bopts, err)))
        return -1;
    /* reconcile: what the engine believes runs but the backend does not know */
    int lost_jobs = 0, lost_reps = 0;
    for (int h = 0; d->started && h < tide_engine_jobs(d->e); h++) {
        tide_job_info_t ji;
        if (tide_engine_job(d->e, h, &ji) != 0 ||
            (ji.state != TIDE_JOB_RUNNING && ji.state != TIDE_JOB_RECLAIMING))
            continue;
        if (tide_backend_job_alive(d->be, h))
            continue;
        tide_event_t ev = blank_event(TIDE_EV_JOB_EXPIRED);
        ev.job = h;
        devq_push(&d->extra, &ev, d->now, 0, ji.spec->id, NULL, NULL, "recovery", NULL);
        lost_jobs++;
    }
    for (size_t r = 0; r < d->n_reps; r++) {
        if (d->reps[r].state == REP_NONE || tide_backend_replica_alive(d->be, (int32_t)r))
            continue;
        tide_event_t ev = blank_event(TIDE_EV_REPLICA_FAILED);
        ev.replica = (int32_t)r;
        ev.service = d->reps[r].service;
        devq_push(&d->extra, &ev, d->now, 0, NULL, service_name_of(d->e, ev.service), NULL,
                  "recovery", NULL);
        lost_reps++;
    }
    if (d->started)
        dmn_log(d, "recovered %lld steps of epoch %lld from %s: %d jobs, %zu pending events; "
                   "%d running jobs requeued (backend lost them), %d replicas restarted%s",
                (long long)d->steps_total, (long long)d->epoch, d->db_path, tide_engine_jobs(d->e),
                d->pending.n, lost_jobs, lost_reps,
                d->replay_mismatch ? " (replay mismatches: see above)" : "");
    return 0;
}

/* ------------------------------------------------------------------ usage */

void dmn_usage_now(tide_daemon_t *d, usage_rows_t *out)
{
    out->n = 0;
    const tide_engine_t *e = d->e;
    int nty = tide_cluster_types(d->cluster);
    if (nty < 1)
        nty = 1;
    for (int ti = 0; ti < tide_engine_teams(e); ti++) {
        tide_team_info_t info;
        if (tide_engine_team_info(e, ti, &info) != 0 || !info.team)
            continue;
        for (int c = TIDE_C_P1; c <= TIDE_C_P3; c++)
            for (int s = 0; s < TIDE_S_COUNT; s++)
                for (int r = 0; r < TIDE_T_COUNT; r++) {
                    double v = 0;
                    for (int k = 0; k < nty; k++)
                        v += tide_engine_team_gpu_s(e, ti, c, s, r, k);
                    if (v == 0)
                        continue;
                    tide_store_usage_t u = {"team", info.team, tide_class_name(c),
                                            tide_state_name(s), tide_tier_name(r), v};
                    TIDE_PUSH(out->v, out->n, out->cap, u);
                }
    }
    for (int si = 0; si < tide_engine_services(e); si++)
        for (int s = 0; s < TIDE_S_COUNT; s++)
            for (int r = 0; r < TIDE_T_COUNT; r++) {
                double v = 0;
                for (int k = 0; k < nty; k++)
                    v += tide_engine_service_gpu_s(e, si, s, r, k);
                if (v == 0)
                    continue;
                tide_store_usage_t u = {"service", tide_engine_service(e, si)->name,
                                        tide_class_name(TIDE_C_INFERENCE), tide_state_name(s),
                                        tide_tier_name(r), v};
                TIDE_PUSH(out->v, out->n, out->cap, u);
            }
    tide_stats_t st;
    tide_engine_stats(e, &st);
    for (int r = 0; r < TIDE_T_COUNT; r++) {
        double v = st.gpu_s[TIDE_C_NONE][TIDE_S_IDLE][r];
        if (v == 0)
            continue;
        tide_store_usage_t u = {"idle", "", tide_class_name(TIDE_C_NONE),
                                tide_state_name(TIDE_S_IDLE), tide_tier_name(r), v};
        TIDE_PUSH(out->v, out->n, out->cap, u);
    }
}

void dmn_usage_free(usage_rows_t *r)
{
    free(r->v);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------ step */

/* Persist one step: step row, claimed pending events, new events, actions,
 * job states, usage. One transaction. */
static int persist_step(tide_daemon_t *d, int64_t step, tide_time_t t, int64_t upto_seq,
                        const size_t *extra_idx, size_t n_extra, const tide_event_t *fed,
                        size_t n_fed, tide_error_t *err)
{
    tide_store_t *st = d->st;
    if (tide_store_begin(st, err) < 0)
        return -1;
    if (tide_store_step_append(st, step, t, d->epoch, err) < 0)
        goto fail;
    if (upto_seq > 0 && tide_store_events_claim_upto(st, step, upto_seq, err) < 0)
        goto fail;
    for (size_t i = 0; i < n_extra; i++) {
        const dmn_ev_t *x = &d->extra.v[extra_idx[i]];
        tide_store_event_t se = {.step = step, .time_s = t, .ev = x->ev, .job_id = x->job_id,
                                 .service_name = x->service_name, .source = x->source,
                                 .payload = x->payload};
        if (!se.job_id && x->ev.job >= 0)
            se.job_id = job_id_of(d->e, x->ev.job);
        if (!se.service_name && x->ev.service >= 0)
            se.service_name = service_name_of(d->e, x->ev.service);
        if (tide_store_event_append(st, &se, err) < 0)
            goto fail;
    }
    for (size_t i = 0; i < d->acts.n; i++) {
        const tide_action_t *a = &d->acts.v[i];
        const int32_t *g = a->n_gpus > 0 && a->gpu_off + (size_t)a->n_gpus <= d->acts.ngpus
                               ? d->acts.gpus + a->gpu_off
                               : NULL;
        if (tide_store_action_append(st, step, t, a, g, job_id_of(d->e, a->job),
                                     service_name_of(d->e, a->service), err) < 0)
            goto fail;
    }
    /* job states that changed (jobs named by the step's events and actions) */
    for (size_t pass = 0; pass < 2; pass++) {
        size_t n = pass ? d->acts.n : n_fed;
        for (size_t i = 0; i < n; i++) {
            int32_t h = pass ? d->acts.v[i].job : fed[i].job;
            if (!pass && fed[i].kind == TIDE_EV_JOB_SUBMIT && fed[i].job_spec)
                h = tide_engine_job_find(d->e, fed[i].job_spec->id);
            tide_job_info_t ji;
            if (h < 0 || tide_engine_job(d->e, h, &ji) != 0)
                continue;
            djob_t *j = dmn_job(d, h);
            if (j->db_state == ji.state)
                continue;
            if (tide_store_job_set_state(st, ji.spec->id, tide_job_state_name(ji.state), t, err) < 0)
                goto fail;
        }
    }
    if (t >= d->next_usage) {
        usage_rows_t u = {0};
        dmn_usage_now(d, &u);
        int rc = tide_store_usage_put(st, t, u.v, u.n, err);
        dmn_usage_free(&u);
        if (rc < 0)
            goto fail;
    }
    if (tide_store_commit(st, err) < 0)
        return -1;
    /* only now is the jobs table as the memo says */
    for (size_t pass = 0; pass < 2; pass++) {
        size_t n = pass ? d->acts.n : n_fed;
        for (size_t i = 0; i < n; i++) {
            int32_t h = pass ? d->acts.v[i].job : fed[i].job;
            if (!pass && fed[i].kind == TIDE_EV_JOB_SUBMIT && fed[i].job_spec)
                h = tide_engine_job_find(d->e, fed[i].job_spec->id);
            tide_job_info_t ji;
            if (h >= 0 && tide_engine_job(d->e, h, &ji) == 0)
                dmn_job(d, h)->db_state = ji.state;
        }
    }
    if (t >= d->next_usage)
        d->next_usage = t - t % d->usage_interval_s + d->usage_interval_s;
    return 0;
fail:
    tide_store_rollback(st);
    return -1;
}

/* The engine state could not be persisted: throw it away and rebuild from
 * the database (what was committed is the truth). */
static int recover_inplace(tide_daemon_t *d, const tide_error_t *why, tide_error_t *err)
{
    dmn_log(d, "could not persist a step (%s): rebuilding the engine from the database", why->msg);
    int64_t steps = d->steps_total;
    d->steps_total = 0;
    int rc = rebuild(d, err);
    d->steps_total += steps;
    if (rc < 0) {
        dmn_log(d, "rebuild failed: %s", err ? err->msg : "?");
        d->failed = 1;
        d->stop = 1;
        pthread_cond_broadcast(&d->loop_cv);
        pthread_cond_broadcast(&d->notice_cv);
    }
    return rc;
}

/* Is job_id submitted by one of the first k pending events? */
static int submitted_before(const devq_t *q, size_t k, const char *job_id)
{
    for (size_t i = 0; i < k; i++)
        if (q->v[i].ev.kind == TIDE_EV_JOB_SUBMIT && q->v[i].job_id &&
            !strcmp(q->v[i].job_id, job_id))
            return 1;
    return 0;
}

/* One engine step at t with everything due. Returns 1 (stepped), 0 (nothing
 * to do) or -1. */
static int step_at(tide_daemon_t *d, tide_time_t t, int force, tide_error_t *err)
{
    /* the batch of pending API events: due by t; a batch ends before an
     * event about a job submitted earlier in the same batch (its handle is
     * only known after the step) */
    size_t np = 0;
    for (; np < d->pending.n; np++) {
        const dmn_ev_t *p = &d->pending.v[np];
        if (p->t > t)
            break;
        if (p->job_id && p->ev.kind != TIDE_EV_JOB_SUBMIT &&
            tide_engine_job_find(d->e, p->job_id) < 0 && submitted_before(&d->pending, np, p->job_id))
            break;
    }
    /* backend observations */
    size_t nb0 = d->n_evbuf = 0;
    tide_backend_poll_all(d->be, t, &d->evbuf, &d->n_evbuf, &d->cap_evbuf);
    for (size_t i = nb0; i < d->n_evbuf; i++)
        devq_push(&d->extra, &d->evbuf[i], t, 0, NULL, NULL, NULL, "backend", NULL);
    /* loop events due */
    size_t *xi = tide_xmalloc((d->extra.n ? d->extra.n : 1) * sizeof *xi);
    size_t nx = 0;
    for (size_t i = 0; i < d->extra.n; i++)
        if (d->extra.v[i].t <= t)
            xi[nx++] = i;
    if (np == 0 && nx == 0 && !force && d->started && t < d->next_wake) {
        free(xi);
        return 0;
    }
    /* teams first, then the events in order */
    d->n_evbuf = 0;
    int64_t upto = 0;
    for (size_t i = 0; i < np; i++) {
        const dmn_ev_t *p = &d->pending.v[i];
        upto = p->seq;
        if (p->ev.kind == TIDE_STORE_KIND_TEAM_SET && p->payload)
            team_apply(d, p->payload);
    }
    for (size_t i = 0; i < np; i++) {
        dmn_ev_t *p = &d->pending.v[i];
        if (p->ev.kind < 0 || p->ev.kind >= TIDE_EV_KIND_COUNT)
            continue;
        tide_event_t x = p->ev;
        if (x.kind == TIDE_EV_JOB_SUBMIT)
            x.job_spec = &p->spec;
        resolve(d, &x, p->job_id);
        evbuf_push(d, &x);
    }
    for (size_t i = 0; i < nx; i++) {
        dmn_ev_t *p = &d->extra.v[xi[i]];
        tide_event_t x = p->ev;
        resolve(d, &x, p->job_id);
        evbuf_push(d, &x);
    }
    tide_error_t serr = {0};
    if (tide_engine_step(d->e, t, d->evbuf, d->n_evbuf, &d->acts, &serr) != 0) {
        d->step_errors++;
        dmn_log(d, "step at t=%lld: an event was rejected: %s", (long long)t, serr.msg);
    }
    d->started = 1;
    int64_t step = d->step + 1;
    tide_error_t perr = {0};
    if (persist_step(d, step, t, upto, xi, nx, d->evbuf, d->n_evbuf, &perr) < 0) {
        free(xi);
        if (err)
            *err = perr;
        tide_error_t rerr = {0};
        recover_inplace(d, &perr, &rerr);
        return -1;
    }
    /* committed: the step happened */
    d->step = step;
    d->now = t;
    d->next_wake = d->acts.next_wake;
    d->steps_total++;
    if (upto > d->fed_seq)
        d->fed_seq = upto;
    /* take the fed events out of the queues (extras: compact in place) */
    size_t w = 0, k = 0;
    for (size_t i = 0; i < d->extra.n; i++) {
        if (k < nx && xi[k] == i) {
            dev_free(&d->extra.v[i]);
            k++;
        } else {
            d->extra.v[w++] = d->extra.v[i];
        }
    }
    d->extra.n = w;
    free(xi);
    derive(d, t, d->evbuf, d->n_evbuf, &d->acts);
    devq_drop_front(&d->pending, np);
    tide_error_t berr = {0};
    if (tide_backend_enact(d->be, t, &d->acts, &berr) > 0)
        dmn_log(d, "backend refused an action: %s", berr.msg);
    pthread_cond_broadcast(&d->step_cv);
    if (d->check) {
        tide_error_t ce = {0};
        if (tide_engine_check(d->e, &ce) < 0) {
            tide_errf(err, TIDE_ESTATE, "invariant violated after the step at t=%lld: %s",
                      (long long)t, ce.msg);
            return -1;
        }
    }
    return 1;
}

static int pump_locked(tide_daemon_t *d, tide_error_t *err)
{
    tide_time_t target = dmn_clock_now(d);
    int steps = 0;
    tide_time_t last_t = -1;
    long same_t = 0;
    for (;;) {
        if (d->failed)
            return tide_errf(err, TIDE_EIO, "the daemon stopped after a fatal error");
        tide_time_t t = target;
        tide_time_t tb = tide_backend_next_event(d->be);
        if (tb < t)
            t = tb;
        if (d->started && d->next_wake < t)
            t = d->next_wake;
        if (t < d->now)
            t = d->now;
        int force = !d->started || t >= d->next_wake || tb <= t;
        int rc = step_at(d, t, force, err);
        if (rc < 0)
            return -1;
        if (rc == 0) {
            if (t >= target)
                break;
            continue; /* cannot happen: force was set for t < target */
        }
        steps++;
        if (t == last_t) {
            if (++same_t > MAX_PASSES)
                return tide_errf(err, TIDE_ESTATE, "no progress at t=%lld (livelock)", (long long)t);
        } else {
            last_t = t;
            same_t = 0;
        }
    }
    return steps;
}

int tide_daemon_pump(tide_daemon_t *d, tide_error_t *err)
{
    pthread_mutex_lock(&d->mu);
    int rc = pump_locked(d, err);
    pthread_mutex_unlock(&d->mu);
    return rc;
}

/* ------------------------------------------------------------- accepting */

int64_t dmn_accept(tide_daemon_t *d, const tide_event_t *ev, const tide_job_spec_t *spec,
                   const char *job_id, const char *service_name, const char *payload,
                   tide_error_t *err)
{
    int own = !tide_store_in_tx(d->st);
    if (own && tide_store_begin(d->st, err) < 0)
        return -1;
    tide_time_t t = dmn_clock_now(d);
    tide_store_event_t se = {.step = 0, .time_s = t, .ev = *ev, .job_id = job_id,
                             .service_name = service_name, .source = "api", .payload = payload};
    if (tide_store_event_append(d->st, &se, err) < 0) {
        if (own)
            tide_store_rollback(d->st);
        return -1;
    }
    if (own && tide_store_commit(d->st, err) < 0)
        return -1;
    if (!own) {
        /* the caller commits; it queues with dmn_queue after that */
        return se.seq;
    }
    devq_push(&d->pending, ev, t, se.seq, job_id, service_name, payload, "api", spec);
    dmn_kick(d);
    return se.seq;
}

/* Queue an event whose pending row the caller committed (seq from dmn_accept
 * inside the caller's transaction). */
void dmn_queue(tide_daemon_t *d, const tide_event_t *ev, const tide_job_spec_t *spec, int64_t seq,
               const char *job_id, const char *service_name, const char *payload)
{
    devq_push(&d->pending, ev, dmn_clock_now(d), seq, job_id, service_name, payload, "api", spec);
    dmn_kick(d);
}

int dmn_wait_fed(tide_daemon_t *d, int64_t seq, double timeout_s)
{
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    double end = (double)dl.tv_sec + dl.tv_nsec * 1e-9 + timeout_s;
    while (d->fed_seq < seq && d->loop_running && !d->stop) {
        dl.tv_sec = (time_t)end;
        dl.tv_nsec = (long)((end - (double)dl.tv_sec) * 1e9);
        if (pthread_cond_timedwait(&d->step_cv, &d->mu, &dl) == ETIMEDOUT)
            break;
    }
    return d->fed_seq >= seq;
}

/* --------------------------------------------------------------- teams */

static int teams_accept(tide_daemon_t *d, const tide_governance_t *gov, int *changed,
                        tide_error_t *err)
{
    *changed = 0;
    int nty = tide_cluster_types(d->cluster);
    for (size_t i = 0; gov && i < gov->n_teams; i++) {
        char *js = tide_json_team_to_string(&gov->teams[i], nty > 0 ? nty : 1);
        const dteam_t *cur = team_slot(d, gov->teams[i].name);
        /* the latest definition may still be pending */
        int pending_same = 0;
        for (size_t k = 0; k < d->pending.n; k++)
            if (d->pending.v[k].ev.kind == TIDE_STORE_KIND_TEAM_SET && d->pending.v[k].payload)
                pending_same = !strcmp(d->pending.v[k].payload, js);
        if ((cur && cur->json && !strcmp(cur->json, js)) || pending_same) {
            free(js);
            continue;
        }
        tide_event_t ev = blank_event(TIDE_STORE_KIND_TEAM_SET);
        int64_t seq = dmn_accept(d, &ev, NULL, NULL, NULL, js, err);
        free(js);
        if (seq < 0)
            return -1;
        (*changed)++;
    }
    return 0;
}

int dmn_reload(tide_daemon_t *d, int *n_tokens, int *n_teams, int *changed, tide_error_t *err)
{
    *n_tokens = -1;
    *n_teams = -1;
    *changed = 0;
    if (d->tokens_path && d->auth) {
        int n = tide_auth_load(d->auth, d->tokens_path, err);
        if (n < 0)
            return tide_err_prefix(err, "--tokens: ");
        *n_tokens = n;
    }
    if (!d->cluster_file)
        return 0;
    tide_governance_t gov;
    tide_governance_init(&gov, NULL);
    tide_cluster_t *c = tide_cluster_file_load_ex(d->cluster_file, &gov, err);
    if (!c)
        return tide_err_prefix(err, "--cluster-file: ");
    char *a = cluster_json(c), *b = cluster_json(d->cluster);
    int same = !strcmp(a, b);
    free(a);
    free(b);
    tide_cluster_destroy(c);
    int rc = 0;
    if (!same)
        rc = tide_errf(err, TIDE_ESTATE,
                       "--cluster-file %s: the node groups changed; that needs a restart with a new "
                       "database (teams, quotas and prices reload live)",
                       d->cluster_file);
    else {
        *n_teams = (int)gov.n_teams;
        rc = teams_accept(d, &gov, changed, err);
    }
    tide_governance_free(&gov);
    return rc;
}

/* ------------------------------------------------------------- epochs */

static tide_service_spec_t *svcs_copy(const tide_service_spec_t *v, size_t n)
{
    tide_service_spec_t *c = tide_xmalloc((n ? n : 1) * sizeof *c);
    for (size_t i = 0; i < n; i++) {
        c[i] = v[i];
        c[i].name = tide_xstrdup(v[i].name ? v[i].name : "");
    }
    return c;
}

static void svcs_free(tide_service_spec_t *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free((char *)v[i].name);
    free(v);
}

static int svcs_equal(const tide_service_spec_t *a, size_t na, const tide_service_spec_t *b,
                      size_t nb)
{
    if (na != nb)
        return 0;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i].name, b[i].name) || a[i].gpus_per_replica != b[i].gpus_per_replica ||
            a[i].replica_rps != b[i].replica_rps || a[i].min_replicas != b[i].min_replicas ||
            a[i].max_replicas != b[i].max_replicas || a[i].warmup_s != b[i].warmup_s ||
            a[i].gpu_types != b[i].gpu_types || a[i].fixed_replicas != b[i].fixed_replicas)
            return 0;
    return 1;
}

/* Would an engine with this configuration and these services start? (Some
 * problems, like a reserve the services do not fit, only show at the first
 * step.) 0 or -1 with err. */
static int probe(const tide_cluster_t *c, const tide_config_t *cfg, const tide_service_spec_t *v,
                 size_t n, tide_error_t *err)
{
    tide_engine_t *e = tide_engine_create(c, cfg, err);
    if (!e)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        if (tide_engine_add_service(e, &v[i], err) < 0)
            rc = -1;
    if (rc == 0) {
        tide_actions_t a;
        tide_actions_init(&a);
        if (tide_engine_step(e, 0, NULL, 0, &a, err) < 0)
            rc = -1;
        tide_actions_free(&a);
    }
    tide_engine_destroy(e);
    return rc;
}

int dmn_services_set(tide_daemon_t *d, const tide_service_spec_t *v, size_t n, tide_error_t *err)
{
    int64_t jobs = tide_store_jobs_count(d->st, err);
    if (jobs < 0)
        return -1;
    if (jobs > 0)
        return tide_errf(err, TIDE_ESTATE,
                         "services can only change before the first job is submitted (%lld jobs); "
                         "start a new database to change them",
                         (long long)jobs);
    /* check the new set against a scratch engine before touching anything */
    if (probe(d->cluster, &d->cfg, v, n, err) < 0)
        return -1;
    int64_t epoch = d->started ? d->epoch + 1 : d->epoch;
    char eb[32];
    snprintf(eb, sizeof eb, "%lld", (long long)epoch);
    /* carry over: teams, last demand of services that stay, failed nodes */
    typedef struct carry {
        tide_event_t ev;
        char *payload, *svc; /* owned */
    } carry_t;
    carry_t *cv = NULL;
    size_t nc = 0, cc = 0;
    for (size_t i = 0; i < d->n_teams; i++) {
        carry_t c = {blank_event(TIDE_STORE_KIND_TEAM_SET), tide_xstrdup(d->teams[i].json), NULL};
        TIDE_PUSH(cv, nc, cc, c);
    }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < d->n_svcs; k++)
            if (!strcmp(v[i].name, d->svcs[k].name) && d->last_demand[k] >= 0) {
                carry_t c = {blank_event(TIDE_EV_DEMAND), NULL, tide_xstrdup(v[i].name)};
                c.ev.service = (int32_t)i;
                c.ev.value = d->last_demand[k];
                TIDE_PUSH(cv, nc, cc, c);
            }
    for (int nd = 0; nd < tide_cluster_nodes(d->cluster); nd++)
        if (!d->node_up[nd]) {
            carry_t c = {blank_event(TIDE_EV_NODE_FAILED), NULL, NULL};
            c.ev.node = nd;
            TIDE_PUSH(cv, nc, cc, c);
        }
    int64_t *seqs = tide_xmalloc((nc ? nc : 1) * sizeof *seqs);
    if (tide_store_begin(d->st, err) < 0) {
        free(cv);
        free(seqs);
        return -1;
    }
    int ok = tide_store_services_replace(d->st, v, n, err) == 0 &&
             tide_store_meta_set(d->st, "epoch", eb, err) == 0;
    for (size_t i = 0; ok && i < nc; i++)
        ok = (seqs[i] = dmn_accept(d, &cv[i].ev, NULL, NULL, cv[i].svc, cv[i].payload, err)) > 0;
    if (!ok || tide_store_commit(d->st, err) < 0) {
        tide_store_rollback(d->st);
        for (size_t i = 0; i < nc; i++) {
            free(cv[i].payload);
            free(cv[i].svc);
        }
        free(cv);
        free(seqs);
        return -1;
    }
    /* stop what runs, then start over with the new set */
    tide_actions_t stop;
    tide_actions_init(&stop);
    for (size_t r = 0; r < d->n_reps; r++)
        if (d->reps[r].state != REP_NONE) {
            tide_action_t a = {.kind = TIDE_ACT_REPLICA_STOP, .reason = TIDE_R_SCALE, .job = -1,
                               .service = d->reps[r].service, .replica = (int32_t)r, .lease = -1};
            TIDE_PUSH(stop.v, stop.n, stop.cap, a);
        }
    if (d->be)
        tide_backend_enact(d->be, d->now, &stop, NULL);
    free(stop.v);
    tide_backend_destroy(d->be);
    d->be = NULL;
    /* v may point into d->svcs: copy before freeing */
    tide_service_spec_t *nv = svcs_copy(v, n);
    svcs_free(d->svcs, d->n_svcs);
    d->svcs = nv;
    d->n_svcs = n;
    d->epoch = epoch;
    /* the pending events stay; the carried ones join them */
    tide_error_t e2 = {0};
    if (engine_build(d, &e2) < 0 || !(d->be = tide_backend_create(d->backend_name, d->e, &d->bopts, &e2))) {
        dmn_log(d, "new epoch: %s", e2.msg);
        d->failed = 1;
        for (size_t i = 0; i < nc; i++) {
            free(cv[i].payload);
            free(cv[i].svc);
        }
        free(cv);
        free(seqs);
        return tide_errf(err, TIDE_EIO, "%s", e2.msg);
    }
    for (size_t i = 0; i < nc; i++) {
        dmn_queue(d, &cv[i].ev, NULL, seqs[i], NULL, cv[i].svc, cv[i].payload);
        free(cv[i].payload);
        free(cv[i].svc);
    }
    free(cv);
    free(seqs);
    dmn_log(d, "services changed: epoch %lld with %zu services", (long long)epoch, n);
    dmn_kick(d);
    return 0;
}

/* ------------------------------------------------------------------ open */

void tide_daemon_opts_default(tide_daemon_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->reserve_gpus = -2;
    o->split_inf = -2;
}

static int meta_int(tide_store_t *st, const char *key, long long *v, tide_error_t *err)
{
    tide_error_t e2 = {0};
    char *s = tide_store_meta_get(st, key, &e2);
    if (!s) {
        if (e2.code == TIDE_ENOENT)
            return 0;
        if (err)
            *err = e2;
        return -1;
    }
    int rc = tide_parse_int(s, v) == 0 ? 1 : tide_errf(err, TIDE_EIO, "database: bad %s", key);
    free(s);
    return rc;
}

static int meta_put_int(tide_store_t *st, const char *key, long long v, tide_error_t *err)
{
    char b[32];
    snprintf(b, sizeof b, "%lld", v);
    return tide_store_meta_set(st, key, b, err);
}

/* Settings: create them in a new database, or load them and check the
 * options against them. */
static int settings(tide_daemon_t *d, const tide_daemon_opts_t *o, tide_error_t *err)
{
    tide_error_t e2 = {0};
    char *cj = tide_store_meta_get(d->st, "cluster", &e2);
    if (!cj && e2.code != TIDE_ENOENT) {
        if (err)
            *err = e2;
        return -1;
    }
    tide_config_default(&d->cfg);
    if (!cj) {
        /* a new database */
        if (!o->cluster)
            return tide_errf(err, TIDE_EINVAL, "a new database needs --cluster or --cluster-file");
        d->cluster = tide_cluster_copy(o->cluster);
        const char *pol = o->policy ? o->policy : "elastic";
        snprintf(d->policy, sizeof d->policy, "%s", pol);
        d->cfg.policy = d->policy;
        if (o->reserve_gpus >= -1)
            d->cfg.reserve_gpus = o->reserve_gpus;
        if (o->split_inf >= -1)
            d->cfg.split_inf = o->split_inf;
        if (o->lease_max_s > 0)
            d->cfg.lease_max_s = o->lease_max_s;
        if (o->lead_extra_s > 0)
            d->cfg.lead_extra_s = o->lead_extra_s;
        if (o->control_period_s > 0)
            d->cfg.tick_s = o->control_period_s;
        if (o->gov && tide_governance_apply(o->gov, NULL, &d->cfg, err) < 0)
            return -1;
        /* validate by building an engine before writing anything */
        if (probe(d->cluster, &d->cfg, o->services, o->services ? o->n_services : 0, err) < 0)
            return tide_err_prefix(err, "cannot start the engine: ");
        char *cs = cluster_json(d->cluster);
        int ok = tide_store_begin(d->st, err) == 0 &&
                 tide_store_meta_set(d->st, "cluster", cs, err) == 0 &&
                 tide_store_meta_set(d->st, "policy", d->policy, err) == 0 &&
                 meta_put_int(d->st, "reserve_gpus", d->cfg.reserve_gpus, err) == 0 &&
                 meta_put_int(d->st, "split_inf", d->cfg.split_inf, err) == 0 &&
                 meta_put_int(d->st, "fairshare", d->cfg.fairshare, err) == 0 &&
                 meta_put_int(d->st, "fairshare_half_life_s", d->cfg.fairshare_half_life_s, err) == 0 &&
                 meta_put_int(d->st, "lease_max_s", d->cfg.lease_max_s, err) == 0 &&
                 meta_put_int(d->st, "lead_extra_s", d->cfg.lead_extra_s, err) == 0 &&
                 meta_put_int(d->st, "control_period_s", d->cfg.tick_s, err) == 0 &&
                 meta_put_int(d->st, "epoch", 1, err) == 0 &&
                 tide_store_meta_set(d->st, "created_by", "tide serve", err) == 0 &&
                 tide_store_commit(d->st, err) == 0;
        free(cs);
        if (!ok) {
            tide_store_rollback(d->st);
            return -1;
        }
        d->epoch = 1;
        return 0;
    }
    d->cluster = cluster_from_json(cj, err);
    if (!d->cluster) {
        free(cj);
        return -1;
    }
    if (o->cluster) {
        char *given = cluster_json(o->cluster);
        int same = !strcmp(given, cj);
        free(given);
        if (!same) {
            char a[256], b[256];
            tide_cluster_format(d->cluster, a, sizeof a);
            tide_cluster_format(o->cluster, b, sizeof b);
            free(cj);
            return tide_errf(err, TIDE_EINVAL,
                             "%s was created for cluster %s, not %s (use another --db)",
                             o->db_path, a, b);
        }
    }
    free(cj);
    char *pol = tide_store_meta_get(d->st, "policy", err);
    if (!pol)
        return -1;
    snprintf(d->policy, sizeof d->policy, "%s", pol);
    free(pol);
    d->cfg.policy = d->policy;
    if (o->policy && strcmp(o->policy, d->policy))
        return tide_errf(err, TIDE_EINVAL, "%s runs policy %s, not %s (use another --db)",
                         o->db_path, d->policy, o->policy);
    long long v;
    int rc;
    if ((rc = meta_int(d->st, "reserve_gpus", &v, err)) < 0)
        return -1;
    if (rc)
        d->cfg.reserve_gpus = (int)v;
    if (o->reserve_gpus >= -1 && o->reserve_gpus != d->cfg.reserve_gpus)
        return tide_errf(err, TIDE_EINVAL, "%s runs with --reserve %d, not %d (use another --db)",
                         o->db_path, d->cfg.reserve_gpus, o->reserve_gpus);
    if ((rc = meta_int(d->st, "split_inf", &v, err)) < 0)
        return -1;
    if (rc)
        d->cfg.split_inf = (int)v;
    if (o->split_inf >= -1 && o->split_inf != d->cfg.split_inf)
        return tide_errf(err, TIDE_EINVAL, "%s runs with an inference split of %d GPUs, not %d",
                         o->db_path, d->cfg.split_inf, o->split_inf);
    if ((rc = meta_int(d->st, "fairshare", &v, err)) < 0)
        return -1;
    if (rc)
        d->cfg.fairshare = (int)v;
    if ((rc = meta_int(d->st, "fairshare_half_life_s", &v, err)) < 0)
        return -1;
    if (rc)
        d->cfg.fairshare_half_life_s = v;
    /* engine timings fixed at creation (older databases: the defaults) */
    static const struct {
        const char *key, *flag;
        size_t off;
    } timings[] = {
        {"lease_max_s", "--lease-max", offsetof(tide_config_t, lease_max_s)},
        {"lead_extra_s", "--lead-extra", offsetof(tide_config_t, lead_extra_s)},
        {"control_period_s", "--control-period", offsetof(tide_config_t, tick_s)},
    };
    const tide_time_t given[] = {o->lease_max_s, o->lead_extra_s, o->control_period_s};
    for (size_t i = 0; i < sizeof timings / sizeof timings[0]; i++) {
        tide_time_t *field = (tide_time_t *)((char *)&d->cfg + timings[i].off);
        if ((rc = meta_int(d->st, timings[i].key, &v, err)) < 0)
            return -1;
        if (rc)
            *field = v;
        if (given[i] > 0 && given[i] != *field)
            return tide_errf(err, TIDE_EINVAL, "%s runs with %s %llds, not %llds (use another --db)",
                             o->db_path, timings[i].flag, (long long)*field, (long long)given[i]);
    }
    if ((rc = meta_int(d->st, "epoch", &v, err)) < 0)
        return -1;
    d->epoch = rc ? v : 1;
    return 0;
}

/* The command and environment of a job, for backends that run real
 * processes (lock held: called while enacting). */
static int job_command_of(void *ctx, const char *id, char **command, char ***env)
{
    tide_daemon_t *d = ctx;
    tide_store_job_t row;
    *command = NULL;
    *env = NULL;
    if (tide_store_job_get(d->st, id, &row, NULL) < 0)
        return -1;
    if (row.command)
        *command = tide_xstrdup(row.command);
    if (row.env) {
        json_t *o = json_loads(row.env, 0, NULL);
        if (json_is_object(o)) {
            size_t n = json_object_size(o), k = 0;
            char **v = tide_xcalloc(n + 1, sizeof *v);
            const char *key;
            json_t *val;
            json_object_foreach(o, key, val)
            {
                const char *sv = json_is_string(val) ? json_string_value(val) : NULL;
                char num[64];
                if (!sv && json_is_number(val)) {
                    snprintf(num, sizeof num, "%.17g", json_number_value(val));
                    sv = num;
                }
                if (!sv)
                    continue;
                size_t len = strlen(key) + strlen(sv) + 2;
                v[k] = tide_xmalloc(len);
                snprintf(v[k], len, "%s=%s", key, sv);
                k++;
            }
            *env = v;
        }
        json_decref(o);
    }
    tide_store_job_free(&row);
    return 0;
}

static char *dup_opt(const char *s) { return s ? tide_xstrdup(s) : NULL; }

static void backend_opts_copy(tide_daemon_t *d, const tide_backend_opts_t *o)
{
    if (o)
        d->bopts = *o;
    d->bopts.slurm_conf = d->bo_conf = dup_opt(d->bopts.slurm_conf);
    d->bopts.partition = d->bo_part = dup_opt(d->bopts.partition);
    d->bopts.infer_partition = d->bo_ipart = dup_opt(d->bopts.infer_partition);
    d->bopts.replica_command = d->bo_rcmd = dup_opt(d->bopts.replica_command);
    d->bopts.workdir = d->bo_workdir = dup_opt(d->bopts.workdir);
    d->bopts.api_url = d->bo_api = dup_opt(d->bopts.api_url);
    d->bopts.probe_thread = 1; /* never hold the daemon lock through Slurm's timeouts */
    d->bopts.job_command = job_command_of;
    d->bopts.job_command_ctx = d;
    if (!d->bopts.log)
        d->bopts.log = d->log;
}

tide_daemon_t *tide_daemon_open(const tide_daemon_opts_t *o, tide_error_t *err)
{
    if (!o->db_path || !*o->db_path) {
        tide_errf(err, TIDE_EINVAL, "--db is required");
        return NULL;
    }
    if (o->speed < 0 || !isfinite(o->speed) || o->tick_s < 0 || !isfinite(o->tick_s)) {
        tide_errf(err, TIDE_EINVAL, "--speed and --tick must be > 0");
        return NULL;
    }
    tide_daemon_t *d = tide_xcalloc(1, sizeof *d);
    pthread_mutex_init(&d->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->loop_cv, &ca);
    pthread_cond_init(&d->notice_cv, &ca);
    pthread_cond_init(&d->step_cv, &ca);
    pthread_condattr_destroy(&ca);
    tide_actions_init(&d->acts);
    d->db_path = tide_xstrdup(o->db_path);
    d->cluster_file = o->cluster_file ? tide_xstrdup(o->cluster_file) : NULL;
    d->tokens_path = o->tokens_path ? tide_xstrdup(o->tokens_path) : NULL;
    d->auth = o->auth;
    snprintf(d->backend_name, sizeof d->backend_name, "%s", o->backend ? o->backend : "sim");
    d->speed = o->speed > 0 ? o->speed : 1;
    d->tick_s = o->tick_s > 0 ? o->tick_s : 1;
    d->usage_interval_s = o->usage_interval_s > 0 ? o->usage_interval_s : 3600;
    d->check = o->check;
    d->clock = o->clock ? o->clock : mono_now;
    d->clock_ctx = o->clock_ctx;
    d->log = o->log;
    tide_error_t e2 = {0};
    if (!err)
        err = &e2;
    int known = 0;
    for (const char *const *b = tide_backend_names(); *b; b++)
        known |= !strcmp(*b, d->backend_name);
    if (!known) {
        tide_errf(err, TIDE_EINVAL, "--backend: unknown backend '%s' (known: sim, slurm)",
                  d->backend_name);
        goto fail;
    }
    backend_opts_copy(d, o->backend_opts);
    if (!strcmp(d->backend_name, "slurm") && d->speed != 1) {
        tide_errf(err, TIDE_EINVAL,
                  "--speed %g: the slurm backend runs real jobs, so engine time is wall time "
                  "(--speed 1)",
                  d->speed);
        goto fail;
    }
    if (!(d->st = tide_store_open(o->db_path, err)) || settings(d, o, err) < 0)
        goto fail;
    if (tide_store_services_load(d->st, &d->svcs, &d->n_svcs, err) < 0)
        goto fail;
    if (o->services && !svcs_equal(o->services, o->n_services, d->svcs, d->n_svcs)) {
        /* new services: only while no job exists; a new epoch when the
         * current one has steps */
        int64_t jobs = tide_store_jobs_count(d->st, err);
        int64_t last;
        tide_time_t lt;
        if (jobs < 0 || tide_store_last_step(d->st, &last, &lt, err) < 0)
            goto fail;
        if (jobs > 0) {
            tide_errf(err, TIDE_EINVAL,
                      "--services differ from the services in %s, which already has jobs; start "
                      "without --services to keep them, or use a new --db",
                      o->db_path);
            goto fail;
        }
        if (probe(d->cluster, &d->cfg, o->services, o->n_services, err) < 0) {
            tide_err_prefix(err, "--services: ");
            goto fail;
        }
        char eb[32];
        snprintf(eb, sizeof eb, "%lld", (long long)(last > 0 ? d->epoch + 1 : d->epoch));
        if (tide_store_begin(d->st, err) < 0)
            goto fail;
        if (tide_store_services_replace(d->st, o->services, o->n_services, err) < 0 ||
            tide_store_meta_set(d->st, "epoch", eb, err) < 0 || tide_store_commit(d->st, err) < 0) {
            tide_store_rollback(d->st);
            goto fail;
        }
        if (last > 0)
            d->epoch++;
        svcs_free(d->svcs, d->n_svcs);
        d->svcs = svcs_copy(o->services, o->n_services);
        d->n_svcs = o->n_services;
    }
    d->wall0 = wall(d);
    if (rebuild(d, err) < 0)
        goto fail;
    /* the engine clock resumes at the last recorded time */
    d->t0 = d->now;
    d->last_clock = d->now;
    d->wall0 = wall(d);
    /* teams of the cluster file that the engine does not have yet */
    int changed = 0;
    if (o->gov && teams_accept(d, o->gov, &changed, err) < 0)
        goto fail;
    /* pulled demand sources */
    for (size_t i = 0; i < o->n_queries; i++) {
        int s = tide_engine_service_find(d->e, o->queries[i].service);
        if (s < 0) {
            tide_errf(err, TIDE_EINVAL, "--demand-query: unknown service '%s'", o->queries[i].service);
            goto fail;
        }
        char host[256], port[8], path[4096];
        if (tide_http_url_parse(o->queries[i].url, host, sizeof host, port, sizeof port, path,
                                sizeof path, err) < 0) {
            tide_err_prefix(err, "--demand-query %s: ", o->queries[i].service);
            goto fail;
        }
        dsrc_t src = {.service = tide_xstrdup(o->queries[i].service),
                      .url = tide_xstrdup(o->queries[i].url), .svc = s, .up = 0,
                      .fed_t = -1};
        size_t cap = d->n_src;
        TIDE_PUSH(d->src, d->n_src, cap, src);
    }
    d->next_usage = 0;
    tide_time_t ut;
    if (tide_store_usage_last(d->st, &ut, err) < 0)
        goto fail;
    if (ut >= 0)
        d->next_usage = ut - ut % d->usage_interval_s + d->usage_interval_s;
    /* the first step: restarts what the backend lost, starts a new engine */
    if (tide_daemon_pump(d, err) < 0)
        goto fail;
    return d;
fail:
    tide_daemon_crash(d);
    return NULL;
}

/* ------------------------------------------------------------------ loop */

static void deadline_in(struct timespec *ts, double s)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    if (s < 0)
        s = 0;
    if (s > 3600)
        s = 3600;
    double end = (double)ts->tv_sec + ts->tv_nsec * 1e-9 + s;
    ts->tv_sec = (time_t)end;
    ts->tv_nsec = (long)((end - (double)ts->tv_sec) * 1e9);
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Wall time at which the engine clock reaches t. */
static double wall_of(const tide_daemon_t *d, tide_time_t t)
{
    if (t == TIDE_TIME_NEVER)
        return INFINITY;
    return d->wall0 + (double)(t - d->t0) / d->speed + 1e-6;
}

int tide_daemon_run(tide_daemon_t *d, tide_error_t *err)
{
    pthread_mutex_lock(&d->mu);
    d->loop_running = 1;
    double next_tick = wall(d);
    dfetch_t *fetched = tide_xcalloc(d->n_src ? d->n_src : 1, sizeof *fetched);
    dsrc_t *copy = tide_xcalloc(d->n_src ? d->n_src : 1, sizeof *copy);
    int rc = 0, backoff = 0;
    while (!d->stop) {
        double w = wall(d);
        if (w >= next_tick) {
            if (d->n_src) {
                memcpy(copy, d->src, d->n_src * sizeof *copy); /* strings stay owned by d */
                size_t n = d->n_src;
                int tmo = (int)(TIDE_MIN(d->tick_s, 2.0) * 1000);
                pthread_mutex_unlock(&d->mu);
                dmn_demand_fetch(copy, n, fetched, tmo < 100 ? 100 : tmo);
                pthread_mutex_lock(&d->mu);
                dmn_demand_apply(d, fetched, dmn_clock_now(d));
            }
            while (next_tick <= w)
                next_tick += d->tick_s;
        }
        tide_error_t perr = {0};
        if (pump_locked(d, &perr) < 0) {
            if (d->failed || perr.code == TIDE_ESTATE) {
                dmn_log(d, "stopping: %s", perr.msg);
                d->failed = 1;
                if (err)
                    *err = perr;
                rc = -1;
                break;
            }
            /* the step was not persisted and the engine was rebuilt from the
             * database: try again at the next tick */
            backoff = 1;
        }
        if (d->stop)
            break;
        double until = next_tick;
        if (backoff) {
            /* after a failed write, wait a tick before trying again */
            backoff = 0;
            d->kick = 0;
            struct timespec ts;
            deadline_in(&ts, d->tick_s);
            pthread_cond_timedwait(&d->loop_cv, &d->mu, &ts);
            continue;
        }
        if (d->started)
            until = TIDE_MIN(until, wall_of(d, d->next_wake));
        until = TIDE_MIN(until, wall_of(d, tide_backend_next_event(d->be)));
        if (!d->kick) {
            struct timespec ts;
            deadline_in(&ts, until - wall(d));
            pthread_cond_timedwait(&d->loop_cv, &d->mu, &ts);
        }
        d->kick = 0;
    }
    d->loop_running = 0;
    pthread_cond_broadcast(&d->step_cv);
    pthread_cond_broadcast(&d->notice_cv);
    pthread_mutex_unlock(&d->mu);
    free(fetched);
    free(copy);
    return rc;
}

void tide_daemon_stop(tide_daemon_t *d)
{
    pthread_mutex_lock(&d->mu);
    d->stop = 1;
    pthread_cond_broadcast(&d->loop_cv);
    pthread_cond_broadcast(&d->notice_cv);
    pthread_cond_broadcast(&d->step_cv);
    pthread_mutex_unlock(&d->mu);
}

static void daemon_free(tide_daemon_t *d)
{
    if (!d)
        return;
    tide_backend_destroy(d->be);
    tide_engine_destroy(d->e);
    tide_store_close(d->st);
    tide_actions_free(&d->acts);
    devq_clear(&d->pending);
    devq_clear(&d->extra);
    free(d->pending.v);
    free(d->extra.v);
    free(d->evbuf);
    free(d->reps);
    free(d->jobs);
    free(d->node_up);
    free(d->last_demand);
    teams_clear(d);
    free(d->teams);
    for (size_t i = 0; i < d->n_src; i++) {
        free(d->src[i].service);
        free(d->src[i].url);
    }
    free(d->src);
    svcs_free(d->svcs, d->n_svcs);
    tide_cluster_destroy(d->cluster);
    free(d->db_path);
    free(d->cluster_file);
    free(d->tokens_path);
    free(d->bo_conf);
    free(d->bo_part);
    free(d->bo_ipart);
    free(d->bo_rcmd);
    free(d->bo_workdir);
    free(d->bo_api);
    pthread_cond_destroy(&d->loop_cv);
    pthread_cond_destroy(&d->notice_cv);
    pthread_cond_destroy(&d->step_cv);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

void tide_daemon_close(tide_daemon_t *d)
{
    if (!d)
        return;
    if (d->st)
        dmn_log(d, "stopped after step %lld (everything acknowledged is in %s)", (long long)d->step,
                d->db_path);
    daemon_free(d);
}

void tide_daemon_crash(tide_daemon_t *d) { daemon_free(d); }

/* ------------------------------------------------------------ accessors */

void tide_daemon_set_router(tide_daemon_t *d, tide_router_t *r) { d->router = r; }
void tide_daemon_lock(tide_daemon_t *d) { pthread_mutex_lock(&d->mu); }
void tide_daemon_unlock(tide_daemon_t *d) { pthread_mutex_unlock(&d->mu); }
const tide_engine_t *tide_daemon_engine(const tide_daemon_t *d) { return d->e; }
tide_store_t *tide_daemon_store(const tide_daemon_t *d) { return d->st; }
tide_time_t tide_daemon_now(const tide_daemon_t *d) { return d->now; }
int64_t tide_daemon_steps(const tide_daemon_t *d) { return d->step; }
long tide_daemon_replay_mismatches(const tide_daemon_t *d) { return d->replay_mismatch; }
