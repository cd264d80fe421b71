/* tide backends: what enacts the engine's decisions on real (or simulated)
 * machines and reports what happens back as engine events. The daemon
 * persists each action, then calls the backend; the backend's observations
 * come back through poll(). Backends use core types only.
 *
 * Built-in: "sim" - virtual nodes that run jobs and replicas in engine time
 * (the simulator's world, src/sim/world.h). The engine time advances with the
 * wall clock times --speed, so the simulated jobs do too. */
#ifndef TIDE_BACKEND_BACKEND_H
#define TIDE_BACKEND_BACKEND_H

#include <stddef.h>

#include "tide/engine.h"
#include "tide/types.h"

/* The operations of a backend. Every enact operation gets the engine time,
 * the action and its GPU ids (NULL when the action has none) and returns 0,
 * or -1 with err when the backend could not even try (the daemon logs it;
 * failures of the work itself come back later as events: RANK_FAILED,
 * REPLICA_FAILED, ...). NULL operations are no-ops. */
typedef struct tide_backend_ops {
    const char *name;
    int (*start_job)(void *ctx, tide_time_t now, const tide_action_t *a, const int32_t *gpus,
                     tide_error_t *err);
    int (*signal_ckpt)(void *ctx, tide_time_t now, const tide_action_t *a, tide_error_t *err);
    int (*resize)(void *ctx, tide_time_t now, const tide_action_t *a, const int32_t *gpus,
                  tide_error_t *err);
    int (*stop_job)(void *ctx, tide_time_t now, const tide_action_t *a, tide_error_t *err);
    int (*start_replica)(void *ctx, tide_time_t now, const tide_action_t *a, const int32_t *gpus,
                         tide_error_t *err);
    int (*stop_replica)(void *ctx, tide_time_t now, const tide_action_t *a, tide_error_t *err);
    /* lease grant / renew / return (deadline bookkeeping for backends that
     * enforce time limits while tide is down) */
    int (*lease)(void *ctx, tide_time_t now, const tide_action_t *a, tide_error_t *err);
    /* Observations due at <= now: up to max events into out (job/replica
     * handles, service indices; job_spec NULL). Returns how many; the caller
     * calls again while it returns max. */
    size_t (*poll)(void *ctx, tide_time_t now, tide_event_t *out, size_t max);
    /* Engine time of the next observation the backend already knows of
     * (TIDE_TIME_NEVER if none): the daemon wakes then. */
    tide_time_t (*next_event)(void *ctx);
    /* Reconciliation after a restart: is the job / replica still running? */
    int (*job_alive)(void *ctx, int32_t job);
    int (*replica_alive)(void *ctx, int32_t replica);
    void (*destroy)(void *ctx);
} tide_backend_ops_t;

typedef struct tide_backend {
    const tide_backend_ops_t *ops;
    void *ctx;
} tide_backend_t;

/* Names of the built-in backends (NULL-terminated, static). */
const char *const *tide_backend_names(void);

/* Create backend `name` for engine e (borrowed: the backend must not outlive
 * it). Caller owns the result (tide_backend_destroy). Errors: EINVAL unknown
 * name. */
tide_backend_t *tide_backend_create(const char *name, const tide_engine_t *e, tide_error_t *err);
void tide_backend_destroy(tide_backend_t *b); /* NULL is a no-op */

/* Enact the actions of one step in order through the ops table. Returns the
 * number of actions the backend refused (their errors go to the first err). */
int tide_backend_enact(tide_backend_t *b, tide_time_t now, const tide_actions_t *acts,
                       tide_error_t *err);

/* Collect every observation due at <= now, appending to *v (grown with
 * tide_grow; *n events, *cap capacity). Returns how many were added. */
size_t tide_backend_poll_all(tide_backend_t *b, tide_time_t now, tide_event_t **v, size_t *n,
                             size_t *cap);

tide_time_t tide_backend_next_event(const tide_backend_t *b);
int tide_backend_job_alive(const tide_backend_t *b, int32_t job);
int tide_backend_replica_alive(const tide_backend_t *b, int32_t replica);

/* The sim backend's constructor (also reachable by name). */
tide_backend_t *tide_backend_sim_create(const tide_engine_t *e);

#endif
