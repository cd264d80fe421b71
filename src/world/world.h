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
 *                EV_CKPT_COMMITTED after ckpt_s); checkpointing: nothing
 *                (with the QoS its write becomes an asked one, below);
 *                restoring: EV_CKPT_COMMITTED now with the committed progress;
 *  JOB_RESIZE    progress is brought up to now and the new width applies;
 *  JOB_STOP      the job is forgotten (progress falls back to its commit);
 *  REPLICA_START EV_REPLICA_READY after the service's warmup_s less the
 *                action's credit (weights staged before the start; not with
 *                shared storage, where the whole load moves after the start);
 *  REPLICA_STOP  cancels a pending ready event;
 *  LEASE_*       the job's latest return is tracked (GRANT/RENEW set it,
 *                RETURN clears it); the world enforces it only while the
 *                control plane is down (tide_world_set_ctl_down), otherwise
 *                the engine does.
 * With shared storage (tide_world_set_storage) checkpoints and replica
 * warm-ups also move bytes through it and may take longer (below).
 * Events due at `now` are queued for tide_world_pop. The caller must have
 * popped every event due before `now` (time never goes backwards). Actions
 * naming unknown jobs or services are ignored. */
void tide_world_apply(tide_world_t *w, tide_time_t now, const tide_actions_t *acts);

/* A checkpointing job's commit comes at `now` (>= the world's time) instead
 * of at its declared end: for a job whose "checkpoint" is a drain that
 * finished early (an RL rollout job, docs/rl.md), as its driver learned.
 * EV_CKPT_COMMITTED is then due at now. Returns 0, or -1 (nothing changes)
 * when the job is not checkpointing, moves bytes through the storage model,
 * or would commit by now anyway. */
int tide_world_ckpt_early(tide_world_t *w, tide_time_t now, int32_t job);

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
    tide_time_t lease_deadline; /* latest return of its lease, TIDE_TIME_NEVER if none */
} tide_world_job_t;
int tide_world_job(const tide_world_t *w, int32_t job, tide_world_job_t *out);

/* ------------------------------------------------------------- faults
 * Used by the driver for fault injection (sim/inject.h, docs/sim.md). */

/* Shared checkpoint / weight-load storage of gbps GB/s (0 = none, the
 * default: every checkpoint takes ckpt_s and every warm-up warmup_s exactly).
 * With storage, a checkpoint writes the job's ckpt_gb and a replica warm-up
 * loads the service's weights_gb (sizes set below; 0 = no transfer). Each
 * transfer may move at most bytes / declared time (ckpt_s, warmup_s; no cap
 * when that is 0) and the bandwidth is shared max-min fairly: every active
 * transfer gets an equal share, and what a capped transfer leaves is shared
 * by the others (water-filling). Finish times are recomputed whenever a
 * transfer starts or ends. A checkpoint commits, and a replica is ready, when
 * both its declared time has passed and its transfer is done: alone it takes
 * exactly ckpt_s / warmup_s, with a share s below its cap bytes / s. Set
 * before the first action. */
void tide_world_set_storage(tide_world_t *w, double gbps);
/* Every replica warm-up takes f x its service's declared warmup_s (f > 0;
 * 1, the default: exactly). Models declared warm-ups that are optimistic
 * (what warm-up rehearsals find out). */
void tide_world_set_warmup_factor(tide_world_t *w, double f);
void tide_world_set_job_gb(tide_world_t *w, int32_t job, double ckpt_gb);
void tide_world_set_service_gb(tide_world_t *w, int service, double weights_gb);

/* Storage figures up to `now` (>= the world's last change; integrals are
 * extended to now without changing the world). */
typedef struct tide_world_storage {
    double gbps;          /* bandwidth (0 = no storage model) */
    double demand_gbps;   /* demanded now: sum of the active transfers' caps
                             (an uncapped transfer demands the whole bandwidth) */
    double peak_gbps;     /* highest demand so far */
    double demand_gb;     /* integral of the demand over time (GB) */
    double saturated_s;   /* seconds with demand above the bandwidth */
    double moved_gb;      /* bytes of the finished transfers */
    long transfers;       /* transfers started */
    int active;           /* transfers in flight now */
    double rate_peak_gbps;      /* highest bandwidth actually in use (<= gbps) */
    double ckpt_rate_peak_gbps; /* highest bandwidth checkpoints used together */
    long staggered;             /* periodic checkpoints the QoS deferred */
} tide_world_storage_t;
void tide_world_storage(const tide_world_t *w, tide_time_t now, tide_world_storage_t *out);

/* Bulk-traffic QoS on the shared storage (with tide_world_set_storage;
 * share 0, the default, = off: every transfer is alike, as above). With a
 * share in (0, 1]:
 *  - priority: the bandwidth goes first to weight loads (replica warm-ups,
 *    which a reclaim waits for), then to checkpoints the engine asked for
 *    (JOB_CKPT: reclaims, preemptions), then to periodic checkpoints; inside
 *    a class it is shared max-min fairly as above;
 *  - rate cap: periodic checkpoints get at most what the asked ones leave
 *    of share x gbps (the rest is headroom for loads and other traffic; an
 *    asked checkpoint is urgent and gets whatever the loads leave);
 *  - stagger: a periodic checkpoint starts only when no checkpoint is writing
 *    or its cap (ckpt_gb / ckpt_s) fits in what the writing ones leave of
 *    share x gbps; otherwise the job keeps training and tries again when the
 *    first writing checkpoint is due to end (counted in `staggered`).
 * Set before the first action. Values outside (0, 1] turn it off. */
void tide_world_set_qos(tide_world_t *w, double share);

/* Transfer times through the storage (start to commit / ready, seconds), by
 * kind, and the delays of staggered periodic checkpoints. */
typedef enum tide_world_xfer_kind {
    TIDE_XFER_LOAD = 0,          /* weight loads */
    TIDE_XFER_CKPT_ASKED,        /* checkpoints the engine asked for */
    TIDE_XFER_CKPT_PERIODIC,     /* periodic checkpoints (the world timed them) */
    TIDE_XFER_STAGGER,           /* stagger delays */
    TIDE_XFER_SYNC,              /* transfers a driver asked for (RL weight syncs) */
    TIDE_XFER_KIND_COUNT
} tide_world_xfer_kind_t;
/* Quantile q in [0, 1] of the finished transfers of `kind` (0 when none);
 * *n (may be NULL) gets how many there are. */
double tide_world_xfer_quantile(const tide_world_t *w, int kind, double q, size_t *n);

/* ------------------------------------------------- per-domain budgets
 * Rack uplinks (docs/sim.md "storage"): with the storage model on, rack r may
 * have an uplink of gbps GB/s (0 = unlimited, the default). A transfer is
 * split over the racks of the GPUs that make it (a job's, a replica's) in
 * proportion to their GPUs there: on rack r it uses frac_r x its rate. The
 * bandwidth is then shared max-min fairly over every constraint at once
 * (progressive filling: all rates rise together; a transfer stops rising at
 * its cap, or when the storage or one of its racks' uplinks is full), class
 * by class with the QoS (which caps periodic checkpoints at share x each
 * uplink too, and staggers them on their racks as on the storage). Without
 * any uplink every figure is what the storage alone gives. Set before the
 * first action; needs tide_world_set_storage. Bad racks and values are
 * ignored (a negative or non-finite gbps is 0). */
void tide_world_set_uplink(tide_world_t *w, int rack, double gbps);

/* Figures of rack r's uplink up to `now`, in the storage's terms: gbps (the
 * uplink), demand_gbps / peak_gbps (sum over its transfers of frac x cap),
 * demand_gb, saturated_s (demand above the uplink), moved_gb (frac x bytes
 * of the finished transfers), transfers (started on it), active,
 * rate_peak_gbps / ckpt_rate_peak_gbps (in use). Zeroes for a rack without
 * an uplink. Returns 0, or -1 for a bad rack. */
int tide_world_uplink(const tide_world_t *w, tide_time_t now, int rack, tide_world_storage_t *out);

/* Transfers a driver asks for (an RL rollout replica's weight sync,
 * docs/rl.md): gb GB through the storage and the uplinks of job `job`'s
 * racks (-1 or a job not running: the storage only), at most gb / declared
 * GB/s, a weight-load class for the QoS. `since` (<= now) is when the driver's
 * model asked for it: the bytes it would have moved alone since then (at its
 * cap) count as moved, and it is done no earlier than since + declared.
 * Returns 1, or 0 (nothing started) without the storage model or for gb <= 0.
 * Its end is reported by tide_world_xfer_finished with `tag` (which the
 * driver keeps unique among its transfers in flight). */
int tide_world_xfer_begin(tide_world_t *w, tide_time_t now, tide_time_t since, int32_t job,
                          double gb, tide_time_t declared, uint64_t tag);
/* Drop the driver's transfer with `tag` (its replica went) at now. Unknown
 * or finished tags are ignored. */
void tide_world_xfer_cancel(tide_world_t *w, tide_time_t now, uint64_t tag);
/* Driver transfers finished since the last call, oldest first: up to max tags
 * and the times they are done (>= their end: no earlier than since +
 * declared; either array may be NULL). Returns how many were written; call
 * again while it returns max. */
size_t tide_world_xfer_finished(tide_world_t *w, uint64_t *tags, tide_time_t *at, size_t max);

/* The control plane goes down (down = 1) or comes back (0) at `now`. While
 * down, a job whose lease deadline passes is ended by the world at that
 * deadline (like a scheduler's time limit): its progress falls back to its
 * last commit and EV_JOB_EXPIRED (value = progress lost, full-width seconds)
 * is reported at the deadline, right after an EV_JOB_PHASE with the phase and
 * progress the job had then. (Events carry no time and the engine only hears
 * of them when it is back: without that report it could not tell how much
 * work was lost.) */
void tide_world_set_ctl_down(tide_world_t *w, tide_time_t now, int down);

/* A rank of an active job fails at `now`: the gang aborts at once (progress
 * falls back to the last commit, pending timers are dropped) and
 * EV_RANK_FAILED (value = progress lost) is queued at now (while the control
 * plane is down, after an EV_JOB_PHASE with the job's last phase and
 * progress, as for an expiry). Returns 0, or -1 when the job is not active
 * (nothing happens). *lost (may be NULL) gets the progress lost. */
int tide_world_fail_rank(tide_world_t *w, tide_time_t now, int32_t job, double *lost);

/* A rank of an elastic job fails at `now` on node `node` and its framework
 * drops that gang: the job goes on one gang narrower (no work lost beyond
 * the step) and EV_RANK_FAILED (value 0: the engine's estimate; node) is
 * queued at now; the engine's RESIZE follows. Returns 0, or -1 when the job
 * is not active or runs a single gang. */
int tide_world_fail_gang(tide_world_t *w, tide_time_t now, int32_t job, int node);

/* A job / replica dies with its node at `now`, silently (the engine learns of
 * it from EV_NODE_FAILED). No-ops when not active. kill_job returns 0 and the
 * job's last phase and progress (either pointer may be NULL; a driver whose
 * engine is down reports them as EV_JOB_PHASE before EV_NODE_FAILED), or -1
 * when the job was not active. */
int tide_world_kill_job(tide_world_t *w, tide_time_t now, int32_t job, int *phase,
                        double *progress);
void tide_world_kill_replica(tide_world_t *w, tide_time_t now, int32_t replica);

/* Active jobs in handle order: up to max handles into jobs[] and the GPUs
 * each holds (width x gang) into gpus[] (may be NULL). Returns the number of
 * active jobs (which may exceed max). */
size_t tide_world_running(const tide_world_t *w, int32_t *jobs, int *gpus, size_t max);

#endif
