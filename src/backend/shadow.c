/* The shadow backend (shadow mode, docs/serve.md): the real backend is only
 * observed; every action plays out on a simulated twin instead, so the
 * engine's decisions have consequences it can keep deciding on (replicas
 * warm, jobs run, leases come back) while the cluster is left alone. */
#include <stdlib.h>

#include "backend/backend.h"
#include "util/util.h"

typedef struct shadowbe {
    tide_backend_t *real, *twin;
    tide_event_t *tmp; /* scratch for real's events */
    size_t ntmp;
} shadowbe_t;

static int sh_act(void *ctx, const tide_backend_act_t *x, tide_error_t *err)
{
    shadowbe_t *s = ctx;
    tide_backend_act_fn fn = s->twin->ops->act[x->a->kind];
    return fn ? fn(s->twin->ctx, x, err) : 0;
}

/* An observation of the cluster itself, not of tide's own work. */
static int observation(const tide_event_t *ev) { return ev->job < 0 && ev->replica < 0; }

static size_t sh_poll(void *ctx, tide_time_t now, tide_event_t *out, size_t max)
{
    shadowbe_t *s = ctx;
    size_t n = s->twin->ops->poll ? s->twin->ops->poll(s->twin->ctx, now, out, max) : 0;
    if (n == max || !s->real->ops->poll)
        return n;
    for (;;) {
        size_t room = max - n;
        if (room == 0)
            break;
        tide_grow_zeroed((void **)&s->tmp, &s->ntmp, room, sizeof *s->tmp);
        size_t got = s->real->ops->poll(s->real->ctx, now, s->tmp, room);
        for (size_t i = 0; i < got; i++)
            if (observation(&s->tmp[i]))
                out[n++] = s->tmp[i];
        if (got < room)
            break;
    }
    return n;
}

static tide_time_t sh_next(void *ctx)
{
    shadowbe_t *s = ctx;
    tide_time_t a = tide_backend_next_event(s->twin), b = tide_backend_next_event(s->real);
    return a < b ? a : b;
}

static int sh_job_alive(void *ctx, int32_t job)
{
    return tide_backend_job_alive(((shadowbe_t *)ctx)->twin, job);
}

static int sh_rep_alive(void *ctx, int32_t r)
{
    return tide_backend_replica_alive(((shadowbe_t *)ctx)->twin, r);
}

static int sh_job_info(void *ctx, int32_t job, tide_backend_job_info_t *out)
{
    return tide_backend_job_info(((shadowbe_t *)ctx)->twin, job, out);
}

static void sh_status(void *ctx, tide_backend_status_t *out)
{
    tide_backend_status(((shadowbe_t *)ctx)->real, out);
}

static const char *sh_node_name(void *ctx, int node)
{
    return tide_backend_node_name(((shadowbe_t *)ctx)->real, node);
}

static void sh_destroy(void *ctx)
{
    shadowbe_t *s = ctx;
    tide_backend_destroy(s->real);
    tide_backend_destroy(s->twin);
    free(s->tmp);
    free(s);
}

static const tide_backend_ops_t shadow_ops = {
    .name = "shadow",
    .act = {[TIDE_ACT_JOB_START] = sh_act, [TIDE_ACT_JOB_CKPT] = sh_act,
            [TIDE_ACT_JOB_RESIZE] = sh_act, [TIDE_ACT_JOB_STOP] = sh_act,
            [TIDE_ACT_REPLICA_START] = sh_act, [TIDE_ACT_REPLICA_STOP] = sh_act,
            [TIDE_ACT_LEASE_GRANT] = sh_act, [TIDE_ACT_LEASE_RENEW] = sh_act,
            [TIDE_ACT_LEASE_RETURN] = sh_act, [TIDE_ACT_POWER_CAP] = sh_act},
    .poll = sh_poll,
    .next_event = sh_next,
    .job_alive = sh_job_alive,
    .replica_alive = sh_rep_alive,
    .job_info = sh_job_info,
    .status = sh_status,
    .node_name = sh_node_name,
    .destroy = sh_destroy,
};

tide_backend_t *tide_backend_shadow_create(tide_backend_t *real, const tide_engine_t *e,
                                           const tide_backend_opts_t *o)
{
    if (!real)
        return NULL;
    shadowbe_t *s = tide_xcalloc(1, sizeof *s);
    s->real = real;
    s->twin = tide_backend_sim_create_opts(e, o);
    tide_backend_t *b = tide_xcalloc(1, sizeof *b);
    b->ops = &shadow_ops;
    b->ctx = s;
    return b;
}

int tide_backend_is_shadow(const tide_backend_t *b) { return b && b->ops == &shadow_ops; }

tide_backend_t *tide_backend_shadow_release(tide_backend_t *b)
{
    if (!tide_backend_is_shadow(b))
        return b;
    shadowbe_t *s = b->ctx;
    tide_backend_t *real = s->real;
    s->real = NULL;
    tide_backend_destroy(s->twin);
    free(s->tmp);
    free(s);
    free(b);
    return real;
}
