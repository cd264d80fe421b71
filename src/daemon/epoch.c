/* Epochs: the service list can change only while no job was ever submitted.
 * A change starts a new epoch: the services are replaced in the database, a
 * fresh engine and backend are built, and what must survive (team
 * definitions, the measured power model, the last demand of services that
 * stay, failed nodes) is carried over as pending events of the new epoch. */
#include <stdlib.h>
#include <string.h>

#include "daemon/internal.h"
#include "util/util.h"

tide_service_spec_t *dmn_svcs_copy(const tide_service_spec_t *v, size_t n)
{
    tide_service_spec_t *c = tide_xmalloc((n ? n : 1) * sizeof *c);
    for (size_t i = 0; i < n; i++) {
        c[i] = v[i];
        c[i].name = tide_xstrdup(v[i].name ? v[i].name : "");
    }
    return c;
}

void dmn_svcs_free(tide_service_spec_t *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free((char *)v[i].name);
    free(v);
}

/* Same services, every field of the spec (a field added to
 * tide_service_spec_t belongs here and in the store's services table). */
static int svcs_equal(const tide_service_spec_t *a, size_t na, const tide_service_spec_t *b,
                      size_t nb)
{
    if (na != nb)
        return 0;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i].name, b[i].name) || a[i].gpus_per_replica != b[i].gpus_per_replica ||
            a[i].replica_rps != b[i].replica_rps || a[i].min_replicas != b[i].min_replicas ||
            a[i].max_replicas != b[i].max_replicas || a[i].warmup_s != b[i].warmup_s ||
            a[i].gpu_types != b[i].gpu_types || a[i].fixed_replicas != b[i].fixed_replicas ||
            a[i].slo_target != b[i].slo_target || a[i].stage_s != b[i].stage_s)
            return 0;
    return 1;
}

int dmn_services_backend_ok(const tide_daemon_t *d, const tide_service_spec_t *v, size_t n,
                            tide_error_t *err)
{
    for (size_t i = 0; i < n && !d->be_ops->can_stage; i++)
        if (v[i].stage_s > 0)
            return tide_errf(err, TIDE_EINVAL,
                             "service %s: stage_s %lld: the %s backend cannot stage weights "
                             "(no fetch to host memory before a replica's GPUs are free); "
                             "use stage_s 0 with it",
                             v[i].name, (long long)v[i].stage_s, d->backend_name);
    return 0;
}

/* ---------------------------------------------------------------- carry */

/* An event carried into the new epoch (strings and team owned: the
 * current teams are cleared by the new engine before the queueing). */
typedef struct carry {
    tide_event_t ev;
    char *payload, *svc;
    tide_team_spec_t team;  /* name owned */
    int has_team;
    int64_t seq;
    tide_time_t t;
} carry_t;

typedef struct carries {
    carry_t *v;
    size_t n, cap;
} carries_t;

static void carry_add(carries_t *c, tide_event_t ev, const char *payload, const char *svc,
                      const tide_team_spec_t *team)
{
    carry_t x = {.ev = ev};
    x.payload = payload ? tide_xstrdup(payload) : NULL;
    x.svc = svc ? tide_xstrdup(svc) : NULL;
    if (team) {
        x.team = *team;
        x.team.name = tide_xstrdup(team->name ? team->name : "");
        x.has_team = 1;
    }
    TIDE_PUSH(c->v, c->n, c->cap, x);
}

/* What carry i carries besides its event (borrowed from it). */
static dmn_evx_t carry_x(const carry_t *x)
{
    return (dmn_evx_t){.payload = x->payload, .service_name = x->svc,
                       .team = x->has_team ? &x->team : NULL};
}

static void carries_free(carries_t *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].payload);
        free(c->v[i].svc);
        if (c->v[i].has_team)
            free((char *)c->v[i].team.name);
    }
    free(c->v);
}

/* What the new services v keep of the current epoch: teams, the measured
 * power model, last demand of services that stay, failed nodes. */
static void carries_build(const tide_daemon_t *d, const tide_service_spec_t *v, size_t n,
                          carries_t *c)
{
    for (size_t i = 0; i < d->n_teams; i++)
        carry_add(c, dmn_blank_event(TIDE_STORE_KIND_TEAM_SET), d->teams[i].json, NULL,
                  &d->teams[i].spec);
    tide_time_t pt;
    const char *power = dmn_power_payload(d, &pt);
    if (power)
        carry_add(c, dmn_blank_event(TIDE_STORE_KIND_POWER_MODEL), power, NULL, NULL);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < d->n_svcs; k++)
            if (!strcmp(v[i].name, d->svcs[k].name) && d->last_demand[k] >= 0) {
                tide_event_t ev = dmn_blank_event(TIDE_EV_DEMAND);
                ev.service = (int32_t)i;
                ev.value = d->last_demand[k];
                carry_add(c, ev, NULL, v[i].name, NULL);
            }
    for (int nd = 0; nd < tide_cluster_nodes(d->cluster); nd++)
        if (d->node_up[nd] != 1) {
            tide_event_t ev = dmn_blank_event(TIDE_EV_NODE_FAILED);
            ev.node = nd;
            ev.value = d->node_up[nd] == 2; /* unreachable, not down */
            carry_add(c, ev, NULL, NULL, NULL);
        }
}

/* The new services and epoch in the database, the carried events as
 * pending rows: one transaction. */
static int epoch_commit(tide_daemon_t *d, const tide_service_spec_t *v, size_t n, int64_t epoch,
                        carries_t *c, tide_error_t *err)
{
    char eb[32];
    snprintf(eb, sizeof eb, "%lld", (long long)epoch);
    if (tide_store_begin(d->st, err) < 0)
        return -1;
    int ok = tide_store_services_replace(d->st, v, n, err) == 0 &&
             tide_store_meta_set(d->st, "epoch", eb, err) == 0;
    for (size_t i = 0; ok && i < c->n; i++) {
        dmn_evx_t x = carry_x(&c->v[i]);
        ok = dmn_pending_append(d, &c->v[i].ev, &x, &c->v[i].seq, &c->v[i].t, err) == 0;
    }
    if (!ok || tide_store_commit(d->st, err) < 0) {
        tide_store_rollback(d->st);
        return -1;
    }
    return 0;
}

/* Stop every replica the backend runs, and the backend. */
static void backend_retire(tide_daemon_t *d)
{
    tide_actions_t stop;
    tide_actions_init(&stop);
    for (size_t r = 0; r < d->n_reps; r++)
        if (d->reps[r].state != REP_NONE) {
            tide_action_t a = {.kind = TIDE_ACT_REPLICA_STOP, .reason = TIDE_R_SCALE, .job = -1,
                               .service = d->reps[r].service, .replica = (int32_t)r, .lease = -1};
            TIDE_PUSH(stop.v, stop.n, stop.cap, a);
        }
    if (d->be)
        tide_backend_enact(d->be, d->now, &stop, NULL, NULL);
    free(stop.v);
    tide_backend_destroy(d->be);
    d->be = NULL;
}

int dmn_services_set(tide_daemon_t *d, const tide_service_spec_t *v, size_t n, tide_error_t *err)
{
    if (dmn_services_backend_ok(d, v, n, err) < 0)
        return -1;
    int64_t jobs = tide_store_jobs_count(d->st, err);
    if (jobs < 0)
        return -1;
    if (jobs > 0)
        return tide_errf(err, TIDE_ESTATE,
                         "services can only change before the first job is submitted (%lld jobs); "
                         "start a new database to change them",
                         (long long)jobs);
    /* check the new set against a scratch engine before touching anything */
    if (dmn_probe(d->cluster, &d->cfg, v, n, err) < 0)
        return -1;
    int64_t epoch = d->started ? d->epoch + 1 : d->epoch;
    carries_t c = {0};
    carries_build(d, v, n, &c);
    if (epoch_commit(d, v, n, epoch, &c, err) < 0) {
        carries_free(&c);
        return -1;
    }
    /* stop what runs, then start over with the new set */
    dmn_shadow_epoch(d, 0);
    backend_retire(d);
    /* v may point into d->svcs: copy before freeing */
    tide_service_spec_t *nv = dmn_svcs_copy(v, n);
    dmn_svcs_free(d->svcs, d->n_svcs);
    d->svcs = nv;
    d->n_svcs = n;
    d->epoch = epoch;
    /* the pending events stay; the carried ones join them */
    tide_error_t e2 = {0};
    if (dmn_engine_build(d, &e2) < 0 ||
        !(d->be = dmn_backend_create(d, &e2))) {
        dmn_log(d, "new epoch: %s", e2.msg);
        d->failed = 1;
        carries_free(&c);
        return tide_errf(err, TIDE_EIO, "%s", e2.msg);
    }
    dmn_shadow_epoch(d, 1);
    for (size_t i = 0; i < c.n; i++) {
        dmn_evx_t x = carry_x(&c.v[i]);
        dmn_queue(d, &c.v[i].ev, &x, c.v[i].seq, c.v[i].t);
    }
    carries_free(&c);
    dmn_log(d, "services changed: epoch %lld with %zu services", (long long)epoch, n);
    dmn_kick(d);
    return 0;
}

int dmn_services_open(tide_daemon_t *d, const tide_daemon_opts_t *o, tide_error_t *err)
{
    if (!o->services || svcs_equal(o->services, o->n_services, d->svcs, d->n_svcs))
        return 0;
    /* new services: only while no job exists; a new epoch when the current
     * one has steps */
    int64_t jobs = tide_store_jobs_count(d->st, err);
    int64_t last;
    tide_time_t lt;
    if (jobs < 0 || tide_store_last_step(d->st, &last, &lt, err) < 0)
        return -1;
    if (jobs > 0)
        return tide_errf(err, TIDE_EINVAL,
                         "--services differ from the services in %s, which already has jobs; "
                         "start without --services to keep them, or use a new --db",
                         o->db_path);
    if (dmn_probe(d->cluster, &d->cfg, o->services, o->n_services, err) < 0)
        return tide_err_prefix(err, "--services: ");
    char eb[32];
    snprintf(eb, sizeof eb, "%lld", (long long)(last > 0 ? d->epoch + 1 : d->epoch));
    if (tide_store_begin(d->st, err) < 0)
        return -1;
    if (tide_store_services_replace(d->st, o->services, o->n_services, err) < 0 ||
        tide_store_meta_set(d->st, "epoch", eb, err) < 0 || tide_store_commit(d->st, err) < 0) {
        tide_store_rollback(d->st);
        return -1;
    }
    if (last > 0)
        d->epoch++;
    dmn_svcs_free(d->svcs, d->n_svcs);
    d->svcs = dmn_svcs_copy(o->services, o->n_services);
    d->n_svcs = o->n_services;
    return 0;
}
