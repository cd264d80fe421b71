/* The model pipeline driving an engine (include/tide/pipeline.h, "Driving
 * an engine"): which version each replica runs, the observation of a
 * model's service, and the engine events (TIDE_EV_SURGE,
 * TIDE_EV_REPLICA_RETIRE) that make the service hold what the rollout asks.
 * Shared by the daemon and the simulator's pipeline driver. Pure. */
#include <stdlib.h>
#include <string.h>

#include "tide/engine.h"
#include "tide/pipeline.h"
#include "util/util.h"

void tide_pipe_labels_init(tide_pipe_labels_t *l) { memset(l, 0, sizeof *l); }

void tide_pipe_labels_free(tide_pipe_labels_t *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

void tide_pipe_labels_reset(tide_pipe_labels_t *l)
{
    for (size_t i = 0; i < l->cap; i++)
        l->v[i] = (tide_pipe_label_t){.model = -1};
}

tide_pipe_label_t *tide_pipe_label(tide_pipe_labels_t *l, int32_t r)
{
    size_t old = l->cap;
    tide_grow((void **)&l->v, &l->cap, (size_t)r + 1, sizeof *l->v);
    for (size_t i = old; i < l->cap; i++)
        l->v[i] = (tide_pipe_label_t){.model = -1};
    return &l->v[r];
}

/* The model released to service s (-1 none). */
static int model_of_service(const tide_pipeline_t *p, const tide_engine_t *e, int s)
{
    const tide_service_spec_t *sp = tide_engine_service(e, s);
    for (int mi = 0; sp && mi < tide_pipeline_models(p); mi++) {
        tide_model_info_t m;
        tide_pipeline_model(p, mi, &m);
        if (!strcmp(m.service, sp->name))
            return mi;
    }
    return -1;
}

/* The version replica r of model mi runs (unlabeled: what served before). */
static int version_of(tide_pipe_labels_t *l, int32_t r, int mi, int oldv)
{
    const tide_pipe_label_t *x = tide_pipe_label(l, r);
    return x->model == mi ? x->version : oldv;
}

size_t tide_pipeline_label_starts(const tide_pipeline_t *p, const tide_engine_t *e,
                                  const tide_actions_t *acts, tide_pipe_labels_t *l,
                                  int32_t *labeled, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < acts->n; i++) {
        const tide_action_t *a = &acts->v[i];
        int mi = a->kind == TIDE_ACT_REPLICA_START ? model_of_service(p, e, a->service) : -1;
        if (mi < 0)
            continue;
        tide_model_info_t m;
        tide_rollout_info_t ro;
        tide_pipeline_model(p, mi, &m);
        tide_pipeline_rollout(p, mi, &ro);
        int held_new = 0;
        for (int r = 0; ro.active && r < tide_engine_replicas(e); r++) {
            tide_replica_info_t ri;
            tide_engine_replica(e, r, &ri);
            held_new += !ri.stopped && r != a->replica && ri.service == a->service &&
                        version_of(l, r, mi, -1) == ro.version;
        }
        int v = ro.active && held_new < ro.target_new ? ro.version : m.alias[TIDE_ALIAS_SERVING];
        *tide_pipe_label(l, a->replica) = (tide_pipe_label_t){.model = mi, .version = v};
        if (labeled && n < cap)
            labeled[n] = a->replica;
        n++;
    }
    return n;
}

int tide_pipeline_count(const tide_pipeline_t *p, int mi, const tide_engine_t *e,
                        tide_pipe_labels_t *l, tide_pipe_count_t *c)
{
    tide_model_info_t m;
    tide_rollout_info_t ro;
    memset(c, 0, sizeof *c);
    if (tide_pipeline_model(p, mi, &m) < 0 || tide_pipeline_rollout(p, mi, &ro) < 0)
        return -1;
    c->service = tide_engine_service_find(e, m.service);
    if (c->service < 0)
        return -1;
    int target = tide_engine_service_target(e, c->service, &c->surge), active = 0;
    c->old_version = ro.active ? ro.old_version : m.alias[TIDE_ALIAS_SERVING];
    for (int r = 0; r < tide_engine_replicas(e); r++) {
        tide_replica_info_t ri;
        tide_engine_replica(e, r, &ri);
        if (ri.stopped || ri.service != c->service)
            continue;
        active++;
        if (ro.active && version_of(l, r, mi, c->old_version) == ro.version) {
            c->held_new++;
            c->ready_new += ri.ready;
        } else {
            c->held_old++;
        }
    }
    /* the need: what the sizing keeps (its target, or more in its hold window) */
    c->need = active - c->surge > target ? active - c->surge : target;
    c->gpus_per_replica = tide_engine_service(e, c->service)->gpus_per_replica;
    return 0;
}

/* Retire up to n replicas of version v (warming ones first) into out. */
static size_t retire(int mi, const tide_engine_t *e, tide_pipe_labels_t *l, int svc, int v,
                     int oldv, int n, tide_event_t *out, size_t cap)
{
    size_t k = 0;
    for (int pass = 0; pass < 2 && n > 0; pass++)
        for (int r = tide_engine_replicas(e); r-- > 0 && n > 0 && k < cap;) {
            tide_replica_info_t ri;
            tide_engine_replica(e, r, &ri);
            tide_pipe_label_t *x = tide_pipe_label(l, r);
            if (ri.stopped || ri.service != svc || version_of(l, r, mi, oldv) != v ||
                x->retiring || ri.ready != pass)
                continue;
            memset(&out[k], 0, sizeof out[k]);
            out[k].kind = TIDE_EV_REPLICA_RETIRE;
            out[k].job = out[k].service = out[k].node = -1;
            out[k++].replica = r;
            x->retiring = 1;
            n--;
        }
    return k;
}

size_t tide_pipeline_engine_events(const tide_pipeline_t *p, int mi, const tide_engine_t *e,
                                   tide_pipe_labels_t *l, int *surge_sent, tide_event_t *out,
                                   size_t cap)
{
    tide_rollout_info_t ro;
    tide_pipe_count_t c;
    if (tide_pipeline_rollout(p, mi, &ro) < 0 || tide_pipeline_count(p, mi, e, l, &c) < 0)
        return 0;
    int oldv = c.old_version;
    int tn = ro.active && ro.target_new > 0 ? ro.target_new : 0;
    int to = ro.active && ro.target_old >= 0 ? ro.target_old : c.need;
    int surge = ro.active && tn + to > c.need ? tn + to - c.need : 0;
    size_t k = 0;
    if (ro.active && c.held_new > tn)
        k += retire(mi, e, l, c.service, ro.version, oldv, c.held_new - tn, out + k, cap - k);
    if (ro.active && c.held_old > to)
        k += retire(mi, e, l, c.service, oldv, oldv, c.held_old - to, out + k, cap - k);
    /* outside a rollout: replicas of any other version go */
    for (int r = 0; !ro.active && r < tide_engine_replicas(e) && k < cap; r++) {
        tide_replica_info_t ri;
        tide_engine_replica(e, r, &ri);
        int v = version_of(l, r, mi, oldv);
        if (!ri.stopped && ri.service == c.service && v != oldv)
            k += retire(mi, e, l, c.service, v, oldv, 1, out + k, cap - k);
    }
    if (*surge_sent == c.surge)
        *surge_sent = -1; /* the engine has it */
    if (surge != c.surge && surge != *surge_sent && k < cap) {
        memset(&out[k], 0, sizeof out[k]);
        out[k].kind = TIDE_EV_SURGE;
        out[k].job = out[k].replica = out[k].node = -1;
        out[k].service = c.service;
        out[k++].value = surge;
        *surge_sent = surge;
    }
    return k;
}
