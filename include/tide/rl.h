/* tide: agentic RL jobs (docs/rl.md). An RL job is a trainer (a gang like any
 * training job) plus a rollout pool (replicas like a service) that generate
 * trajectories under a policy version; the trainer consumes a batch of them
 * per step and accepts a trajectory of version v at step k only if
 * k - v <= max_staleness.
 *
 * Two parts, both pure (no I/O, no clock, no globals):
 *  - tide_rl_jobs: the engine jobs an RL job is submitted as. The trainer and
 *    min_replicas rollout replicas are dedicated; the rollout replicas beyond
 *    them are lowest-priority "pool" jobs (one per group of replicas that
 *    fills a node's 8 GPUs) the engine places on GPUs it lends under leases
 *    (inference headroom included) and reclaims ahead of a forecast rise
 *    through its notice protocol. A pool job's checkpoint is a DRAIN
 *    (ckpt_s = drain bound, nothing written) and its restore a weight sync
 *    (restore_s = sync_s), so the engine's reclaim lead covers both.
 *  - tide_rl_t: the rollout/trainer model driven by the capacity the engine
 *    gives (tide_rl_set): trajectories with long-tailed lengths, weight
 *    versions, refresh, drain, the staleness bound, and the measures (trainer
 *    wait, step times, staleness distribution, stale drops). */
#ifndef TIDE_RL_H
#define TIDE_RL_H

#include "tide/engine.h"
#include "tide/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An RL job. Strings are borrowed by the calls below (copied by the engine
 * when the jobs are submitted). Fields marked "(d)" take a default when 0. */
typedef struct tide_rl_spec {
    const char *id;           /* job id; the engine jobs are id-trainer, id-rollout, id-pool */
    const char *team;
    int priority;             /* 1..3: the trainer and its dedicated rollouts */
    tide_time_t submit_s;
    tide_time_t duration_s;   /* time the job holds its GPUs (its budget), >= 1 */
    int trainer_gpus;         /* trainer GPUs (>= 1) */
    int trainer_gang_gpus;    /* (d) GPUs of one trainer replica: min(trainer_gpus, 8) */
    tide_time_t step_s;       /* trainer compute per step once its batch is there (>= 1) */
    int batch;                /* trajectories per trainer step (>= 1): the rate the
                                 trainer needs is batch / step_s */
    int rollout_gpus;         /* GPUs per rollout replica (>= 1) */
    double replica_tps;       /* trajectories/s one replica produces (> 0) */
    int replica_slots;        /* (d) trajectories in flight per replica: 16. The
                                 mean trajectory length is slots / replica_tps */
    double len_sigma;         /* trajectory length: lognormal with this sigma
                                 (the long tail); 0 = fixed length. (d) none */
    tide_time_t sync_s;       /* (d) weight sync to one replica: 30 */
    double weights_gb;        /* (d) GB a weight sync moves to one replica: 16 x
                                 rollout_gpus (bf16 weights, as a service's
                                 weights_gb); used only by a driver with a
                                 bandwidth model (tide sim --inject storage:G) */
    tide_time_t drain_s;      /* (d) drain bound: in-flight trajectories finish within
                                 it or are abandoned: 120 */
    int max_staleness;        /* >= 0 trainer steps */
    int min_replicas;         /* dedicated replicas (>= 1) */
    int max_replicas;         /* >= min_replicas; beyond min: lent */
    tide_time_t ckpt_interval_s; /* (d) trainer checkpoints: 1800, 60, 120 */
    tide_time_t ckpt_s;
    tide_time_t restore_s;
    uint64_t seed;            /* trajectory lengths (the model only) */
} tide_rl_spec_t;

/* Fill defaults (d) and validate. Errors: EINVAL naming the field. */
int tide_rl_spec_normalize(tide_rl_spec_t *s, tide_error_t *err);

/* How the rollout pool is provisioned. */
enum {
    TIDE_RL_FIXED = 0, /* the frameworks' default: a static pool sized at start,
                          all dedicated (tide_rl_jobs' fixed_replicas) */
    TIDE_RL_LENT = 1   /* min_replicas dedicated, the rest lent (the pool job) */
};
/* Engine jobs of an RL job (indices into tide_rl_jobs_t.v; pool jobs are
 * TIDE_RL_JOB_POOL .. n-1). */
enum { TIDE_RL_JOB_TRAINER = 0, TIDE_RL_JOB_ROLLOUT, TIDE_RL_JOB_POOL };

#define TIDE_RL_ID_MAX 216
typedef struct tide_rl_jobs {
    tide_job_spec_t *v;           /* n specs; ids point into id[] */
    char (*id)[TIDE_RL_ID_MAX];
    int n;                        /* 2 + pool jobs */
} tide_rl_jobs_t;

/* The engine jobs to submit for spec s (normalized) in `mode`: the trainer
 * (id-trainer), the dedicated rollout replicas (id-rollout: fixed_replicas in
 * FIXED mode, 0 = max_replicas; min_replicas in LENT mode), and in LENT mode
 * the pool jobs id-pool-1.. (P3, each one gang of max(1, 8 / rollout_gpus)
 * replicas, the last one the rest, max - min replicas in all: a pool job
 * fills a node's 8 GPUs and is lent and reclaimed as a whole). Rollout jobs
 * have ckpt_s = drain_s, restore_s = sync_s and no periodic checkpoint.
 * Every job has duration_s. The specs are normalized
 * (tide_job_spec_normalize); their team points to s->team. Free with
 * tide_rl_jobs_free. Returns 0, or -1 with EINVAL (a bad spec, bad mode,
 * fixed_replicas < 0, a job id over 200 characters; nothing to free then). */
int tide_rl_jobs(const tide_rl_spec_t *s, int mode, int fixed_replicas, tide_rl_jobs_t *out,
                 tide_error_t *err);
void tide_rl_jobs_free(tide_rl_jobs_t *j);

/* ------------------------------------------------------------------ model */

typedef struct tide_rl tide_rl_t;

/* A model of RL job s (normalized; copied). Starts at time `start` with no
 * capacity. Returns NULL with err (EINVAL) for a bad spec. */
tide_rl_t *tide_rl_create(const tide_rl_spec_t *s, tide_time_t start, tide_error_t *err);
void tide_rl_destroy(tide_rl_t *rl); /* NULL is a no-op */

/* Capacity the engine gives the job from now on (what the driver sees of
 * its jobs: active, width, phase). */
typedef struct tide_rl_capacity {
    int trainer;       /* 1: the trainer runs (trains); 0: stopped, restoring,
                          checkpointing: its compute pauses */
    int trainer_held;  /* 1: the trainer holds its GPUs (any phase) */
    int dedicated;     /* dedicated rollout replicas held */
    int lent;          /* lent rollout replicas held, draining ones included */
    int draining;      /* of them, replicas draining (their pool job was asked
                          to checkpoint): no new trajectories; in-flight ones
                          finish within drain_s or are abandoned */
} tide_rl_capacity_t;

/* Run the model to `now` (>= its time) under the capacity it had, then apply
 * cap. New replicas load the current weights (sync_s) before generating;
 * replicas beyond cap are removed (in-flight trajectories abandoned, counted).
 * Returns 0, or -1 with EINVAL (time backwards, negative counts: the model
 * is unchanged). */
int tide_rl_set(tide_rl_t *rl, tide_time_t now, const tide_rl_capacity_t *cap,
                tide_error_t *err);

/* Run the model to `now` under the current capacity (no-op if now is not
 * later than its time). */
void tide_rl_advance(tide_rl_t *rl, tide_time_t now);

/* Measures so far. */
typedef struct tide_rl_stats {
    tide_time_t now;
    int version;                /* trainer steps done = current policy version */
    long generated;             /* trajectories completed by replicas */
    long accepted;              /* consumed by the trainer */
    long dropped_stale;         /* completed but older than max_staleness when needed */
    long abandoned;             /* in flight when a drain bound passed or a replica went */
    int max_accepted_staleness; /* largest trainer_step - version accepted (-1: none) */
    int drains;                 /* replica drains started */
    int drains_clean;           /* drains ended with every in-flight trajectory finished */
    long refreshes;             /* weight syncs (new replicas included) */
    double wait_s;              /* trainer running but waiting for its batch */
    double compute_s;           /* trainer computing */
    double trainer_gpu_s, dedicated_gpu_s, lent_gpu_s; /* rollout GPUs by provenance */
    double lent_idle_gpu_s;     /* lent GPU-seconds spent draining or syncing */
    double active_rep_s;        /* replica-seconds of replicas not draining (syncing
                                   or generating): the pool the trainer is fed by */
    double slot_s, slot_busy_s; /* trajectory-slot-seconds of generating replicas, and
                                   of them with a trajectory in flight (the rest sat
                                   idle: the staleness gate held generation back) */
} tide_rl_stats_t;
void tide_rl_stats(const tide_rl_t *rl, tide_rl_stats_t *out);

/* Draining lent replicas with nothing left in flight (their drain is over:
 * a driver may report the pool job's commit now). */
int tide_rl_drained(const tide_rl_t *rl);

/* Step times (seconds from the previous step's end, or the first start, to
 * this step's end), one per step done; borrowed until the next call that
 * changes the model. */
const double *tide_rl_step_times(const tide_rl_t *rl, size_t *n);
/* Accepted trajectories with staleness k (0..max_staleness; 0 beyond). */
long tide_rl_staleness_count(const tide_rl_t *rl, int k);

/* Weight syncs moved by the driver (a bandwidth model: tide sim with
 * --inject storage:G, docs/rl.md). With on = 1 a sync no longer ends after
 * sync_s: the replica waits until the driver reports the sync done
 * (tide_rl_sync_done). Set before the first tide_rl_set; 0 (the default):
 * every sync takes sync_s. */
void tide_rl_set_external_sync(tide_rl_t *rl, int on);

/* A sync the model started (external syncs): replica index, its sync
 * number, whether the replica is lent, and the model time it started. */
typedef struct tide_rl_sync {
    int rep;
    uint32_t seq;
    int lent;
    double t;
} tide_rl_sync_t;

/* Syncs started since the last call, up to max (call again while it returns
 * max). A replica removed or done before it is reported is not. */
size_t tide_rl_syncs_started(tide_rl_t *rl, tide_rl_sync_t *out, size_t max);

/* 1 while replica rep still waits for its sync seq, else 0 (it was removed,
 * or the sync is done). */
int tide_rl_sync_waiting(const tide_rl_t *rl, int rep, uint32_t seq);

/* Sync seq of replica rep is done at `at` (the model's time if earlier): the
 * replica generates from then on. Returns 0, or -1 when it no longer waits
 * for that sync (nothing changes). */
int tide_rl_sync_done(tide_rl_t *rl, int rep, uint32_t seq, double at);

/* No trainer step ends (publishing a version: the replicas behind it start
 * syncing) before this time: the end of the step in progress, else, while
 * the trainer waits for its batch, the model's time + step_s (a step that
 * starts later ends later); INFINITY while the trainer does not run. A
 * driver that moves syncs (above) steps then, so that they start on time. */
double tide_rl_next_step_end(const tide_rl_t *rl);
/* ------------------------------------------------------ pool controller */

/* Sizes the lent rollout pool from what the trainer measured, once per
 * trainer step (docs/rl.md, "Sizing the pool from the trainer's wait").
 * Over the steps since its last decision it reads the trainer's wait
 * fraction w (wait / (wait + compute)), the replicas that fed it R (mean
 * of active_rep_s) and the busy share u of their trajectory slots:
 *  - grow when w > target_wait while the slots are busy (u >= 1 / (1 +
 *    headroom): rollout throughput, not trajectory latency, starves the
 *    trainer) to R x (wait + compute) x (1 - target_wait) / compute, the
 *    replicas at which the measured per-replica rate meets the trainer's
 *    consumption with target_wait left;
 *  - shrink when w <= target_wait and u < 1 / (1 + headroom) (capacity sat
 *    idle: generation was held back because it ran more than the staleness
 *    bound allows ahead of the trainer) to R x u x (1 + headroom);
 *  - a change needs `patience` consecutive decisions in the same direction
 *    (hysteresis), and the count restarts after each change.
 * Pure and deterministic: it reads measures, never a clock. */
typedef struct tide_rl_pool_cfg {
    double target_wait; /* (0, 1): trainer wait fraction tolerated (0.05) */
    double headroom;    /* > 0: capacity kept beyond the busy slots (0.25) */
    int patience;       /* >= 1: agreeing decisions before a change (3) */
} tide_rl_pool_cfg_t;
void tide_rl_pool_cfg_default(tide_rl_pool_cfg_t *c);
/* Parse "KEY=VALUE,..." (keys target_wait, headroom, patience) over c's
 * values. Returns 0, or -1 with EINVAL naming the bad item. */
int tide_rl_pool_cfg_parse(const char *s, tide_rl_pool_cfg_t *c, tide_error_t *err);

typedef struct tide_rl_pool {
    tide_rl_pool_cfg_t cfg;
    int min_replicas, max_replicas; /* the spec's */
    int want;               /* lent replicas wanted now, 0 .. max - min */
    int streak;             /* agreeing decisions so far: > 0 grow, < 0 shrink */
    int total;              /* replicas the last decision asked for (dedicated + lent) */
    int grows, shrinks;     /* changes made */
    double last_wait;       /* w of the last decision (-1: none yet) */
    tide_rl_stats_t last;   /* measures at the last decision */
} tide_rl_pool_t;

/* Start a controller for spec s (normalized; not kept) with cfg (NULL =
 * defaults). The first want is the declared-rate estimate: the replicas
 * (x (1 + headroom)) whose replica_tps meets batch / step_s, less the
 * dedicated ones, within 0 .. max - min. Returns 0, or -1 with EINVAL (a bad
 * spec or cfg). */
int tide_rl_pool_init(tide_rl_pool_t *p, const tide_rl_spec_t *s, const tide_rl_pool_cfg_t *cfg,
                      tide_error_t *err);

/* Feed the model's (or a driver's) cumulative measures; decides when at
 * least one trainer step ended since the last decision. Returns the lent
 * replicas wanted (p->want). */
int tide_rl_pool_observe(tide_rl_pool_t *p, const tide_rl_stats_t *st);

/* The acceptance rule, for drivers that count real trajectories (the daemon):
 * 1 when a trajectory of policy `version` may be used by trainer step
 * `trainer_step` (0 <= trainer_step - version <= max_staleness), else 0. */
int tide_rl_accepts(int trainer_step, int version, int max_staleness);

#ifdef __cplusplus
}
#endif
#endif
