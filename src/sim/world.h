/* tide simulator: the simulated world. It enacts the engine's actions in
 * virtual time and reports what happens as events (a job started now restores,
 * trains, checkpoints every ckpt_interval_s and finishes; a replica started now
 * becomes ready after its warm-up). Deterministic: the same actions at the same
 * times give the same events. Pure: no I/O, no clock. */
#ifndef TIDE_SIM_WORLD_H
#define TIDE_SIM_WORLD_H

#include <stddef.h>

#include "tide/engine.h"

typedef struct tide_world tide_world_t;

/* Create a world for engine e. The world borrows e (job specs and services
 * are looked up in it when actions name them) and must not outlive it.
 * Caller owns the world; free with tide_world_destroy. Never returns NULL. */
tide_world_t *tide_world_create(const tide_engine_t *e);

/* Free the world. NULL is a no-op. */
void tide_world_destroy(tide_world_t *w);

/* Enact the actions of one engine step taken at `now`:
 *  JOB_START     the job restores from its last commit (restore_s, then an
 *                EV_JOB_PHASE TRAINING) or, with nothing committed, trains at once;
 *  JOB_CKPT      training: checkpoint now (EV_JOB_PHASE CHECKPOINTING now,
 *                EV_CKPT_COMMITTED after ckpt_s); checkpointing: nothing;
 *                restoring: EV_CKPT_COMMITTED now with the committed progress;
 *  JOB_RESIZE    progress is brought up to now and the new width applies;
 *  JOB_STOP      the job is forgotten (progress falls back to its commit);
 *  REPLICA_START EV_REPLICA_READY after the service's warmup_s;
 *  REPLICA_STOP  cancels a pending ready event;
 *  LEASE_*       nothing (the engine enforces deadlines itself).
 * Events due at `now` are queued for tide_world_pop. The caller must have
 * popped every event due before `now` (time never goes backwards). Actions
 * naming unknown jobs or services are ignored. */
void tide_world_apply(tide_world_t *w, tide_time_t now, const tide_actions_t *acts);

/* Time of the world's next pending event, or TIDE_TIME_NEVER. */
tide_time_t tide_world_next(const tide_world_t *w);

/* Move the world to `now` and copy up to `max` events due at <= now into out,
 * in (time, order of scheduling) order. Returns how many were written; call
 * again while it returns max. Events carry job/replica handles and service
 * indices; other fields are 0 (job_spec NULL). */
size_t tide_world_pop(tide_world_t *w, tide_time_t now, tide_event_t *out, size_t max);

/* What the world believes about a job (for tests and reports). Returns 0, or
 * -1 if the world has never seen the job. `active` is 1 while it runs. */
typedef struct tide_world_job {
    int active;
    int phase;        /* tide_phase_t while active */
    int width;
    double progress;  /* full-width seconds, as of the last update */
    double committed; /* progress in the last committed checkpoint */
} tide_world_job_t;
int tide_world_job(const tide_world_t *w, int32_t job, tide_world_job_t *out);

#endif
