/* Backend dispatch: one table from action kind to operation. */
#include "backend/backend.h"

#include <stdlib.h>
#include <string.h>

#include "util/util.h"

typedef int (*op_fn)(const tide_backend_t *b, tide_time_t now, const tide_action_t *a,
                     const int32_t *gpus, tide_error_t *err);

static int op_start(const tide_backend_t *b, tide_time_t now, const tide_action_t *a,
                    const int32_t *gpus, tide_error_t *err)
{
    return b->ops->start_job ? b->ops->start_job(b->ctx, now, a, gpus, err) : 0;
}
static int op_ckpt(const tide_backend_t *b, tide_time_t now, const tide_action_t *a,
                   const int32_t *gpus, tide_error_t *err)
{
    (void)gpus;
    return b->ops->signal_ckpt ? b->ops->signal_ckpt(b->ctx, now, a, err) : 0;
}
static int op_resize(const tide_backend_t *b, tide_time_t now, const tide_action_t *a,
                     const int32_t *gpus, tide_error_t *err)
{
    return b->ops->resize ? b->ops->resize(b->ctx, now, a, gpus, err) : 0;
}
static int op_stop(const tide_backend_t *b, tide_time_t now, const tide_action_t *a,
                   const int32_t *gpus, tide_error_t *err)
{
    (void)gpus;
    return b->ops->stop_job ? b->ops->stop_job(b->ctx, now, a, err) : 0;
}
static int op_rstart(const tide_backend_t *b, tide_time_t now, const tide_action_t *a,
                     const int32_t *gpus, tide_error_t *err)
{
    return b->ops->start_replica ? b->ops->start_replica(b->ctx, now, a, gpus, err) : 0;
}
static int op_rstop(const tide_backend_t *b, tide_time_t now, const tide_action_t *a,
                    const int32_t *gpus, tide_error_t *err)
{
    (void)gpus;
    return b->ops->stop_replica ? b->ops->stop_replica(b->ctx, now, a, err) : 0;
}
static int op_lease(const tide_backend_t *b, tide_time_t now, const tide_action_t *a,
                    const int32_t *gpus, tide_error_t *err)
{
    (void)gpus;
    return b->ops->lease ? b->ops->lease(b->ctx, now, a, err) : 0;
}

static const op_fn ops_by_kind[TIDE_ACT_KIND_COUNT] = {
    [TIDE_ACT_JOB_START] = op_start,     [TIDE_ACT_JOB_CKPT] = op_ckpt,
    [TIDE_ACT_JOB_RESIZE] = op_resize,   [TIDE_ACT_JOB_STOP] = op_stop,
    [TIDE_ACT_REPLICA_START] = op_rstart, [TIDE_ACT_REPLICA_STOP] = op_rstop,
    [TIDE_ACT_LEASE_GRANT] = op_lease,   [TIDE_ACT_LEASE_RENEW] = op_lease,
    [TIDE_ACT_LEASE_RETURN] = op_lease,
};

static const char *const names[] = {"sim", "slurm", NULL};

const char *const *tide_backend_names(void) { return names; }

tide_backend_t *tide_backend_create(const char *name, const tide_engine_t *e,
                                    const tide_backend_opts_t *o, tide_error_t *err)
{
    if (name && !strcmp(name, "sim"))
        return tide_backend_sim_create(e);
    if (name && !strcmp(name, "slurm"))
        return tide_backend_slurm_create(e, o, err);
    tide_errf(err, TIDE_EINVAL, "unknown backend '%s' (known: sim, slurm)", name ? name : "(null)");
    return NULL;
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
                       tide_error_t *err)
{
    int refused = 0;
    for (size_t i = 0; acts && i < acts->n; i++) {
        const tide_action_t *a = &acts->v[i];
        if (a->kind < 0 || a->kind >= TIDE_ACT_KIND_COUNT || !ops_by_kind[a->kind])
            continue;
        const int32_t *gpus = NULL;
        if ((a->kind == TIDE_ACT_JOB_START || a->kind == TIDE_ACT_JOB_RESIZE ||
             a->kind == TIDE_ACT_REPLICA_START) &&
            a->n_gpus > 0 && a->gpu_off + (size_t)a->n_gpus <= acts->ngpus)
            gpus = acts->gpus + a->gpu_off;
        tide_error_t e1 = {0};
        if (ops_by_kind[a->kind](b, now, a, gpus, &e1) < 0) {
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
