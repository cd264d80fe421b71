/* The "sim" backend: the simulator's world (src/world/world.c) driven with the
 * daemon's engine clock. Each action is applied on its own, in order, exactly
 * as tide_world_apply would apply the whole step. */
#include <stdlib.h>

#include "backend/backend.h"
#include "world/world.h"
#include "util/util.h"

typedef struct simbe {
    tide_world_t *w;
    uint8_t *rep_live; /* replicas started and not stopped, by handle */
    size_t nrep;
    tide_backend_status_t st;
} simbe_t;

/* What an action counts as in the status (a table by kind). */
static long *act_counter(simbe_t *s, int kind)
{
    switch (kind) {
    case TIDE_ACT_JOB_START:
    case TIDE_ACT_REPLICA_START:
        return &s->st.submits;
    case TIDE_ACT_JOB_CKPT:
    case TIDE_ACT_JOB_RESIZE:
        return &s->st.signals;
    case TIDE_ACT_JOB_STOP:
    case TIDE_ACT_REPLICA_STOP:
        return &s->st.cancels;
    default:
        return NULL;
    }
}

static void apply_one(simbe_t *s, tide_time_t now, const tide_action_t *a)
{
    tide_actions_t one = {.v = (tide_action_t *)a, .n = 1, .cap = 1, .next_wake = TIDE_TIME_NEVER};
    tide_world_apply(s->w, now, &one);
}

static void rep_mark(simbe_t *s, int32_t r, uint8_t live)
{
    if (r < 0)
        return;
    tide_grow_zeroed((void **)&s->rep_live, &s->nrep, (size_t)r + 1, sizeof *s->rep_live);
    s->rep_live[r] = live;
}

/* Every action: applied to the world; replicas also tracked for
 * reconciliation. */
static int sim_act(void *ctx, const tide_backend_act_t *x, tide_error_t *err)
{
    (void)err;
    simbe_t *s = ctx;
    long *c = act_counter(s, x->a->kind);
    s->st.calls++;
    if (c)
        (*c)++;
    if (x->a->kind == TIDE_ACT_REPLICA_START || x->a->kind == TIDE_ACT_REPLICA_STOP)
        rep_mark(ctx, x->a->replica, x->a->kind == TIDE_ACT_REPLICA_START);
    apply_one(ctx, x->now, x->a);
    return 0;
}

static size_t sim_poll(void *ctx, tide_time_t now, tide_event_t *out, size_t max)
{
    simbe_t *s = ctx;
    size_t n = tide_world_pop(s->w, now, out, max);
    for (size_t i = 0; i < n; i++)
        if (out[i].kind == TIDE_EV_REPLICA_FAILED)
            rep_mark(s, out[i].replica, 0);
    return n;
}

static tide_time_t sim_next(void *ctx) { return tide_world_next(((simbe_t *)ctx)->w); }

static int sim_job_alive(void *ctx, int32_t job)
{
    tide_world_job_t j;
    return tide_world_job(((simbe_t *)ctx)->w, job, &j) == 0 && j.active;
}

static int sim_rep_alive(void *ctx, int32_t r)
{
    simbe_t *s = ctx;
    return r >= 0 && (size_t)r < s->nrep && s->rep_live[r];
}

static void sim_status(void *ctx, tide_backend_status_t *out)
{
    *out = ((simbe_t *)ctx)->st;
    out->reachable = 1;
}

static void sim_destroy(void *ctx)
{
    simbe_t *s = ctx;
    tide_world_destroy(s->w);
    free(s->rep_live);
    free(s);
}

const tide_backend_ops_t tide_backend_sim_ops = {
    .name = "sim",
    /* simulated jobs: no command, any clock speed, progress is the engine's */
    .can_stage = 1, /* the world credits a staged replica (tide_action_t.credit) */
    .act = {[TIDE_ACT_JOB_START] = sim_act, [TIDE_ACT_JOB_CKPT] = sim_act,
            [TIDE_ACT_JOB_RESIZE] = sim_act, [TIDE_ACT_JOB_STOP] = sim_act,
            [TIDE_ACT_REPLICA_START] = sim_act, [TIDE_ACT_REPLICA_STOP] = sim_act,
            [TIDE_ACT_LEASE_GRANT] = sim_act, [TIDE_ACT_LEASE_RENEW] = sim_act,
            [TIDE_ACT_LEASE_RETURN] = sim_act, [TIDE_ACT_POWER_CAP] = sim_act},
    .poll = sim_poll,
    .next_event = sim_next,
    .job_alive = sim_job_alive,
    .replica_alive = sim_rep_alive,
    .status = sim_status,
    .destroy = sim_destroy,
};

tide_backend_t *tide_backend_sim_create(const tide_engine_t *e)
{
    return tide_backend_sim_create_opts(e, NULL);
}

tide_backend_t *tide_backend_sim_create_opts(const tide_engine_t *e, const tide_backend_opts_t *o)
{
    simbe_t *s = tide_xcalloc(1, sizeof *s);
    s->w = tide_world_create(e);
    if (o && o->sim_warmup_factor > 0)
        tide_world_set_warmup_factor(s->w, o->sim_warmup_factor);
    tide_backend_t *b = tide_xcalloc(1, sizeof *b);
    b->ops = &tide_backend_sim_ops;
    b->ctx = s;
    return b;
}
