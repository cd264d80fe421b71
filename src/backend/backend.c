/* Backend dispatch: the built-in backends by name, and each action to the
 * operation its kind names in the ops table. */
#include "backend/backend.h"

#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* The built-in backends. */
static tide_backend_t *sim_create(const tide_engine_t *e, const tide_backend_opts_t *o,
                                  tide_error_t *err)
{
    (void)err;
    return tide_backend_sim_create_opts(e, o);
}

static const struct builtin {
    const tide_backend_ops_t *ops;
    tide_backend_t *(*create)(const tide_engine_t *e, const tide_backend_opts_t *o,
                              tide_error_t *err);
} builtins[] = {
    {&tide_backend_sim_ops, sim_create},
    {&tide_backend_slurm_ops, tide_backend_slurm_create},
};
#define N_BUILTINS (sizeof builtins / sizeof builtins[0])

static const struct builtin *builtin_find(const char *name)
{
    for (size_t i = 0; name && i < N_BUILTINS; i++)
        if (!strcmp(builtins[i].ops->name, name))
            return &builtins[i];
    return NULL;
}

const tide_backend_ops_t *tide_backend_find(const char *name)
{
    const struct builtin *b = builtin_find(name);
    return b ? b->ops : NULL;
}

const char *tide_backend_known(void) { return "sim, slurm"; }

tide_backend_t *tide_backend_create(const char *name, const tide_engine_t *e,
                                    const tide_backend_opts_t *o, tide_error_t *err)
{
    const struct builtin *b = builtin_find(name);
    if (!b) {
        tide_errf(err, TIDE_EINVAL, "unknown backend '%s' (known: %s)", name ? name : "(null)",
                  tide_backend_known());
        return NULL;
    }
    return b->create(e, o, err);
}

void tide_backend_destroy(tide_backend_t *b)
{
    if (!b)
        return;
    if (b->ops->destroy)
        b->ops->destroy(b->ctx);
    free(b);
}

int tide_backend_enact(tide_backend_t *b, tide_time_t now, const tide_actions_t *acts,
                       const tide_backend_work_t *const *work, tide_error_t *err)
{
    int refused = 0;
    for (size_t i = 0; acts && i < acts->n; i++) {
        const tide_action_t *a = &acts->v[i];
        tide_backend_act_fn fn =
            a->kind >= 0 && a->kind < TIDE_ACT_KIND_COUNT ? b->ops->act[a->kind] : NULL;
        if (!fn)
            continue;
        tide_backend_act_t x = {.now = now, .a = a, .gpus = NULL, .work = work ? work[i] : NULL};
        if ((a->kind == TIDE_ACT_JOB_START || a->kind == TIDE_ACT_JOB_RESIZE ||
             a->kind == TIDE_ACT_REPLICA_START || a->kind == TIDE_ACT_POWER_CAP) &&
            a->n_gpus > 0 && a->gpu_off + (size_t)a->n_gpus <= acts->ngpus)
            x.gpus = acts->gpus + a->gpu_off;
        tide_error_t e1 = {0};
        if (fn(b->ctx, &x, &e1) < 0) {
            if (!refused && err)
                *err = e1;
            refused++;
        }
    }
    return refused;
}

size_t tide_backend_poll_all(tide_backend_t *b, tide_time_t now, tide_event_t **v, size_t *n,
                             size_t *cap)
{
    if (!b->ops->poll)
        return 0;
    size_t added = 0;
    for (;;) {
        tide_grow((void **)v, cap, *n + 256, sizeof **v);
        size_t got = b->ops->poll(b->ctx, now, *v + *n, 256);
        *n += got;
        added += got;
        if (got < 256)
            break;
    }
    return added;
}

tide_time_t tide_backend_next_event(const tide_backend_t *b)
{
    return b->ops->next_event ? b->ops->next_event(b->ctx) : TIDE_TIME_NEVER;
}

int tide_backend_job_alive(const tide_backend_t *b, int32_t job)
{
    return b->ops->job_alive ? b->ops->job_alive(b->ctx, job) : 0;
}

int tide_backend_replica_alive(const tide_backend_t *b, int32_t replica)
{
    return b->ops->replica_alive ? b->ops->replica_alive(b->ctx, replica) : 0;
}

int tide_backend_job_info(const tide_backend_t *b, int32_t job, tide_backend_job_info_t *out)
{
    memset(out, 0, sizeof *out);
    out->exit_code = -1;
    return b->ops->job_info ? b->ops->job_info(b->ctx, job, out) : -1;
}

void tide_backend_status(const tide_backend_t *b, tide_backend_status_t *out)
{
    memset(out, 0, sizeof *out);
    out->reachable = 1;
    if (b->ops->status)
        b->ops->status(b->ctx, out);
}

const char *tide_backend_node_name(const tide_backend_t *b, int node)
{
    return b && b->ops->node_name ? b->ops->node_name(b->ctx, node) : NULL;
}
