/* tide: the policy engine. Pure: no I/O, no clock, no globals. Drivers (the
 * simulator, the daemon) feed it events with the current time and enact the
 * actions it returns. */
#ifndef TIDE_ENGINE_H
#define TIDE_ENGINE_H

#include "tide/cluster.h"
#include "tide/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- workload */

/* Priorities. P0 is inference only; training uses P1..P3. */
enum { TIDE_P0 = 0, TIDE_P1 = 1, TIDE_P2 = 2, TIDE_P3 = 3, TIDE_NPRIO = 4 };

/* An inference service (priority P0). Strings are copied by the engine. */
typedef struct tide_service_spec {
    const char *name;
    int gpus_per_replica;     /* tensor-parallel size; one replica is one gang */
    double replica_rps;       /* requests/s one replica serves within its SLO */
    int min_replicas;         /* hot floor (Tier A) */
    int max_replicas;         /* 0 = unlimited */
    tide_time_t warmup_s;     /* load + communicator + graphs + health check */
    uint32_t gpu_types;       /* accepted GPU types (bitmask), 0 = any */
    int fixed_replicas;       /* used by the `isolated` policy: replicas kept hot
                                 all the time (the peak); 0 = derive from floor */
    double slo_target;        /* fraction of requests to serve, in (0, 1); 0 = the
                                 config's slo_target. Sizing aims at it. */
    tide_time_t stage_s;      /* the part of warmup_s that needs no GPU (weight fetch to
                                 host memory), 0..warmup_s; 0 = none. A replica started
                                 on GPUs reclaimed for it was staged during the victims'
                                 checkpoint (tide_action_t.credit). */
} tide_service_spec_t;

/* A training job. Strings are copied by the engine. */
typedef struct tide_job_spec {
    const char *id;
    const char *team;
    int priority;             /* 1..3 */
    int gpus;                 /* GPUs at full width = gang_gpus * dp_max */
    int gang_gpus;            /* GPUs of one model replica (TP x PP); <= gpus */
    int dp_min;               /* smallest data-parallel width (replicas) it can run at */
    tide_time_t submit_s;     /* informational; the engine uses the event time */
    tide_time_t duration_s;   /* run time at full width without interruption */
    tide_time_t ckpt_interval_s;
    tide_time_t ckpt_s;       /* time to write and commit a checkpoint */
    tide_time_t restore_s;    /* time to restore from a checkpoint */
    uint32_t gpu_types;       /* accepted GPU types (bitmask), 0 = any */
} tide_job_spec_t;

/* Fill defaults for optional job fields (gang = min(gpus,8), dp_min = not
 * elastic, ckpt 1800/60, restore 120) where they are 0, then validate.
 * Errors: EINVAL with a message naming the field. */
int tide_job_spec_normalize(tide_job_spec_t *j, tide_error_t *err);

/* Could a job of spec s ever run on cluster c (all of it empty)? Each gang
 * must fit inside one high-speed domain of an accepted GPU type, or (gangs
 * larger than every domain) be whole accepted domains of one size, and dp_min
 * gangs must fit at once. The engine refuses a JOB_SUBMIT by the same rule.
 * Returns 0, or -1 with EINVAL naming the field ("gang_gpus: ...",
 * "dp_min: ...") or a cluster without GPUs. */
int tide_job_spec_fits(const tide_job_spec_t *s, const tide_cluster_t *c, tide_error_t *err);

/* Validate a service spec. Errors: EINVAL naming the field. */
int tide_service_spec_check(const tide_service_spec_t *s, tide_error_t *err);

/* ----------------------------------------------------------------- config */

typedef struct tide_config {
    const char *policy;        /* "elastic", "static", "preempt", "k8s", "isolated", "timeshare" */
    int reserve_gpus;          /* Tier A GPUs for `elastic` (-1 = sum of service floors) */
    int split_inf;             /* inference GPUs for `static`/`timeshare` (-1 = auto) */
    int night_start_h;         /* `timeshare` window, hours of day [start, end) */
    int night_end_h;
    double margin_min;         /* floor of the learned burst margin (0) */
    double margin_max;         /* ceiling of the burst margin (4: up to 5x the baseline) */
    double slo_target;         /* default fraction of requests a service must serve (0.999) */
    tide_time_t slo_window_s;  /* half-life of the measured attainment fed back into
                                  sizing (6 h) */
    tide_time_t slo_period_s;  /* half-life of the attainment the SLO is judged on
                                  (its compliance period, 7 d): budget overspent
                                  there is paid back within a day (0 = off) */
    tide_time_t tick_s;        /* control loop period (60) */
    tide_time_t lead_extra_s;  /* floor of the margin added to ckpt P99 + warm-up P99;
                                  the measured lateness of capacity is added (300) */
    tide_time_t lease_max_s;   /* longest lease granted at once (6 h) */
    tide_time_t scale_down_hold_s; /* keep capacity this long past the forecast need (1800) */
    tide_time_t forecast_bucket_s; /* forecast resolution (300) */
    int forecast_days;         /* days of history kept (7) */
    int backfill_depth;        /* queued jobs examined per pass (256) */
    int check_invariants;      /* check invariants after every step (debug) */
    int fairshare;             /* order jobs of equal priority by weighted decayed
                                  team usage (1, default) or by submission (0, FIFO) */
    tide_time_t fairshare_half_life_s; /* decay half-life of team usage (24 h) */
    int warm_start;            /* replicas placed at the very first step count as
                                  ready at once: a replay starts from a running
                                  cluster, not a cold one (simulator) */
    double headroom;           /* `preempt` and `k8s`: replicas = ceil(demand x
                                  (1 + headroom) / replica_rps); 0.25 is an
                                  autoscaler's 80% utilisation target (0.25) */
    tide_time_t hpa_window_s;  /* `k8s`: scale-down stabilisation window, the
                                  highest recommendation over it is kept
                                  (HPA's default, 300) */
    int sizing_ensemble;       /* `elastic`: size each service by the rule (the
                                  forecast, or observed demand x (1 + h) for a
                                  few h) that met the error budget at the lowest
                                  counterfactual cost over the last day (1), or
                                  by the forecast alone (0, default) */
    tide_time_t obs_window_s;  /* `elastic`: the forecast
                                  baseline is at least the highest 5-minute mean
                                  demand observed over the last this long, and
                                  the burst multiplier applies to it (an
                                  observed floor; 0 = off, the default; measured
                                  in docs/engine.md) */
    int spread_max_skew;       /* failure domains: inference replicas of a service (and
                                  the Tier A reserve) spread across racks and power
                                  domains; a replica goes where its rack's and power
                                  domain's replica counts exceed the least loaded
                                  candidate's by at most this; 0 = no spreading, the default
                                  (first fit, the reserve on the first domains) */
    double survive_share;      /* invariant (tide_engine_check): losing any one rack or
                                  power domain leaves each service at least this share
                                  of its Tier A floor (min_replicas) in placed replicas;
                                  0 = not checked (0) */
} tide_config_t;

/* Fill c with defaults (elastic). */
void tide_config_default(tide_config_t *c);

/* A team: fair-share weight, guaranteed quota, borrowing and lending limits
 * (Kueue-style cohort semantics; inference Tier A stays above all of this). */
typedef struct tide_team_spec {
    const char *name;
    double weight;                       /* > 0; share of contended GPUs (1) */
    int quota[TIDE_MAX_GPU_TYPES];       /* guaranteed training GPUs per GPU type (-1 = none) */
    int borrow_limit;                    /* GPUs beyond its quota it may borrow (-1 = unlimited) */
    int lend_cap;                        /* GPUs of its unused quota others may borrow (-1 = unlimited) */
} tide_team_spec_t;

/* Defaults: weight 1, no quota, unlimited borrowing and lending. */
void tide_team_spec_default(tide_team_spec_t *t);

/* Names of the built-in policies, NULL-terminated (static storage). */
const char *const *tide_policy_names(void);

/* ----------------------------------------------------------------- events */

typedef enum tide_event_kind {
    TIDE_EV_TICK = 0,        /* nothing happened; the clock moved */
    TIDE_EV_JOB_SUBMIT,      /* job_spec */
    TIDE_EV_JOB_CANCEL,      /* job */
    TIDE_EV_DEMAND,          /* service, value = requests/s observed from now on */
    TIDE_EV_REPLICA_READY,   /* replica passed warm-up and health check */
    TIDE_EV_REPLICA_FAILED,  /* replica died */
    TIDE_EV_JOB_PHASE,       /* job, phase (tide_phase_t), value = progress */
    TIDE_EV_CKPT_COMMITTED,  /* job, value = progress saved (manifest committed) */
    TIDE_EV_JOB_FINISHED,    /* job completed its work */
    TIDE_EV_RANK_FAILED,     /* job lost a rank: the gang aborts (value: progress
                                reached, when known; 0 = the engine's estimate;
                                node: where, -1 = unknown). An elastic job running
                                above dp_min drops the gang with GPUs on node and
                                goes on: JOB_RESIZE with
                                reason failure, grown back from the next tick on;
                                any other job (or node unknown) stops and restarts
                                from its committed checkpoint */
    TIDE_EV_NODE_FAILED,     /* node: down (fenced); what ran there is gone. value 1:
                                unreachable only (a network partition): its
                                replicas stop counting as capacity and nothing new
                                goes there, but its jobs keep their GPUs (they may
                                still run) and their leases are not renewed: they
                                are placed again only once the node is fenced
                                (NODE_FAILED, value 0) or a lease runs out */
    TIDE_EV_NODE_RECOVERED,  /* node: up and reachable again */
    TIDE_EV_JOB_EXPIRED,     /* job: the backend ended it at its lease deadline
                                (e.g. while tide was down); work since the last
                                commit is lost, the job is requeued (value:
                                progress reached, when known) */
    TIDE_EV_FOREIGN,         /* node, value = GPUs of the node that jobs tide does
                                not manage hold now (an absolute count, 0..the
                                node's GPUs; 0 clears). Tide never places on
                                them; a count above the node's free GPUs is
                                taken as tide's GPUs there are released */
    TIDE_EV_REHEARSE,        /* service: start one rehearsal replica (a warm-up
                                measured on free GPUs, then stopped; see
                                tide_engine_rehearsal). Ignored while one runs */
    TIDE_EV_SURGE,           /* service, value = replicas held above the service's own
                                sizing (a rollout's new-version replicas; 0 ends it).
                                Placed like any replica: free GPUs, else reclaimed */
    TIDE_EV_REPLICA_RETIRE,  /* replica: stop it now (a rollout retires an old-version
                                replica); the sizing may start another */
    TIDE_EV_KIND_COUNT
} tide_event_kind_t;

/* Phases of a running job, as reported by the driver. */
typedef enum tide_phase {
    TIDE_PHASE_RESTORING = 0,
    TIDE_PHASE_TRAINING,
    TIDE_PHASE_CHECKPOINTING,
    TIDE_PHASE_COUNT
} tide_phase_t;

typedef struct tide_event {
    int kind;                      /* tide_event_kind_t */
    int32_t job;                   /* job handle (from actions / lookup) */
    int32_t service;               /* service index */
    int32_t replica;               /* replica handle */
    int32_t node;                  /* node index */
    int phase;                     /* tide_phase_t for JOB_PHASE */
    double value;                  /* rps, or progress in full-width seconds */
    const tide_job_spec_t *job_spec; /* JOB_SUBMIT (borrowed for the call) */
} tide_event_t;

/* ---------------------------------------------------------------- actions */

typedef enum tide_action_kind {
    TIDE_ACT_JOB_START = 0,   /* job, width, gpus: start (restore if it has a checkpoint) */
    TIDE_ACT_JOB_CKPT,        /* job, deadline: finish the step, commit a checkpoint */
    TIDE_ACT_JOB_RESIZE,      /* job, width, gpus = GPUs it holds afterwards */
    TIDE_ACT_JOB_STOP,        /* job, reason: stop and requeue (or end if cancelled) */
    TIDE_ACT_REPLICA_START,   /* service, replica, gpus: load, warm, health-check */
    TIDE_ACT_REPLICA_STOP,    /* service, replica */
    TIDE_ACT_LEASE_GRANT,     /* lease, job, n_gpus, deadline = latest return */
    TIDE_ACT_LEASE_RENEW,     /* lease, job, deadline = new latest return */
    TIDE_ACT_LEASE_RETURN,    /* lease, job, reason: GPUs are back */
    TIDE_ACT_POWER_CAP,       /* job, n_gpus, value = watts per GPU (0 = lift the cap):
                                 cap the job's GPUs; training slows by the type's
                                 throughput-vs-cap curve (tide/power.h) */
    TIDE_ACT_KIND_COUNT
} tide_action_kind_t;

typedef enum tide_reason {
    TIDE_R_NONE = 0,
    TIDE_R_RECLAIM,       /* inference needs the GPUs (checkpoint committed) */
    TIDE_R_PREEMPT,       /* reactive preemption without checkpoint */
    TIDE_R_PRIORITY,      /* a higher-priority job needs the GPUs */
    TIDE_R_DEADLINE,      /* lease deadline passed before the checkpoint */
    TIDE_R_CANCEL,        /* user cancelled */
    TIDE_R_FAILURE,       /* rank or node failure */
    TIDE_R_COMPLETE,      /* job finished */
    TIDE_R_SCALE,         /* autoscaler */
    TIDE_R_WINDOW,        /* time-share window closing */
    TIDE_R_QUOTA,         /* a team takes its guaranteed quota back from a borrower */
    TIDE_R_REHEARSAL,     /* a warm-up rehearsal's replica (start and stop) */
    TIDE_R_POWER,         /* a power domain's budget (caps were not enough) */
    TIDE_R_COUNT
} tide_reason_t;

typedef struct tide_action {
    int kind;              /* tide_action_kind_t */
    int reason;            /* tide_reason_t */
    int32_t job;           /* job handle or -1 */
    int32_t service;       /* service index or -1 */
    int32_t replica;       /* replica handle or -1 */
    int32_t lease;         /* lease handle or -1 */
    int width;             /* data-parallel width after the action */
    int n_gpus;            /* GPUs concerned */
    tide_time_t deadline;  /* checkpoint deadline / latest return */
    size_t gpu_off;        /* GPU ids: actions->gpus[gpu_off .. gpu_off+n_gpus) (START/RESIZE) */
    double value;          /* progress lost (STOP) */
    tide_time_t credit;    /* REPLICA_START: seconds of its warm-up already done (weights
                              staged while its GPUs were reclaimed: min(stage_s, start -
                              reclaim)); ready after warmup_s - credit. 0 otherwise */
} tide_action_t;

/* Output buffer of one step. Initialise with tide_actions_init, reuse across
 * steps (tide_engine_step clears it), free with tide_actions_free. */
typedef struct tide_actions {
    tide_action_t *v;
    size_t n, cap;
    int32_t *gpus;
    size_t ngpus, gcap;
    tide_time_t next_wake;  /* the engine wants a step at this time even if nothing happens */
} tide_actions_t;

void tide_actions_init(tide_actions_t *a);
void tide_actions_free(tide_actions_t *a);

/* Names for logs and CSVs (static strings). */
const char *tide_action_name(int kind);
const char *tide_event_name(int kind);
const char *tide_reason_name(int reason);
const char *tide_phase_name(int phase);

/* ----------------------------------------------------------------- engine */

typedef struct tide_engine tide_engine_t;

/* Create an engine on a copy of cluster c with config cfg (copied). Services
 * must be added before the first step. Caller owns the engine.
 * Errors: EINVAL for an unknown policy or bad parameters. */
tide_engine_t *tide_engine_create(const tide_cluster_t *c, const tide_config_t *cfg,
                                  tide_error_t *err);
void tide_engine_destroy(tide_engine_t *e); /* NULL is a no-op */

/* Exchange the whole states of engines a and b; each handle keeps its
 * address. A driver rebuilds an engine into b (replaying its log) and swaps
 * it into a, which others (a backend) keep borrowing; job specs stay where
 * they were allocated, so spec pointers follow their engine's state. */
void tide_engine_swap(tide_engine_t *a, tide_engine_t *b);

/* Snapshots. tide_engine_snapshot: the whole state of e as bytes (malloc'd,
 * *len bytes; the caller frees them). Pure: equal states give equal bytes;
 * the bytes carry a format version (TIDE_SNAPSHOT_VERSION), a fingerprint of
 * this build's state layout, and e's shape (cluster, config, services).
 * tide_engine_restore: a new engine in the state of a snapshot, made with the
 * cluster, config and services of `like` (which is not changed); stepping it
 * decides exactly as the snapshotted engine would. Returns NULL with err
 * (EINVAL: another format version or build layout, another shape, truncated
 * or malformed bytes). Caller owns the engine. */
#define TIDE_SNAPSHOT_VERSION 1
void *tide_engine_snapshot(const tide_engine_t *e, size_t *len);
tide_engine_t *tide_engine_restore(const tide_engine_t *like, const void *buf, size_t len,
                                   tide_error_t *err);

/* Define or update a team (any time, e.g. on a reload). Returns the team
 * index or -1 with err (EINVAL: weight <= 0, negative limits). Teams that only
 * appear in jobs get the defaults. */
int tide_engine_set_team(tide_engine_t *e, const tide_team_spec_t *t, tide_error_t *err);

/* Add an inference service; returns its index (>= 0) or -1 with err. */
int tide_engine_add_service(tide_engine_t *e, const tide_service_spec_t *s, tide_error_t *err);

/* Move the world forward to `now` (>= the previous now), apply the events,
 * decide, and fill `out` (cleared first) with actions and next_wake.
 * Returns 0, or -1 with err (EINVAL: time went backwards or an event names an
 * unknown job/service; the engine state is unchanged by the bad event, the
 * others are applied). */
int tide_engine_step(tide_engine_t *e, tide_time_t now, const tide_event_t *events,
                     size_t n_events, tide_actions_t *out, tide_error_t *err);

/* Power by power domain (tide_cluster_power_domains) as the engine plans it
 * now: modelled draw of the domain's GPUs in their current states, with caps,
 * its budget (0 = none) and GPUs under a cap. 0, or -1 for a bad domain. */
typedef struct tide_power_info {
    double watts, budget_w, nameplate_w;
    int capped_gpus;
} tide_power_info_t;
int tide_engine_power(const tide_engine_t *e, int domain, tide_power_info_t *out);
/* The planned draw of every power domain at once into watts[0 .. min(n,
 * domains)); returns the number of power domains. */
int tide_engine_power_all(const tide_engine_t *e, double *watts, int n);

/* Replace GPU type `type`'s power model (e.g. with measured draws); the next
 * step plans with it. 0, or -1 with err (EINVAL: bad type or model). */
int tide_engine_set_power_model(tide_engine_t *e, int type, const tide_power_model_t *m,
                                tide_error_t *err);

/* Check every invariant (no GPU allocated twice, gangs whole inside one
 * domain, Tier A never lent, GPU-seconds add up, counters consistent).
 * Returns 0 or -1 with a message naming the first violation. */
int tide_engine_check(const tide_engine_t *e, tide_error_t *err);

/* ------------------------------------------------------------ inspection */

/* Replicas service s's own sizing wanted at the last step (its need, without
 * a surge), and the surge (TIDE_EV_SURGE) into *surge when not NULL.
 * -1 for an unknown service. */
int tide_engine_service_target(const tide_engine_t *e, int s, int *surge);
/* Ready replicas of service s now (the capacity its requests are served
 * from), and into *demand (may be NULL) the demand it last observed (rps).
 * Returns -1 for an unknown service. */
int tide_engine_service_ready(const tide_engine_t *e, int s, double *demand);

typedef enum tide_job_state {
    TIDE_JOB_QUEUED = 0,
    TIDE_JOB_RUNNING,
    TIDE_JOB_RECLAIMING,   /* notice sent, waiting for the checkpoint */
    TIDE_JOB_DONE,
    TIDE_JOB_CANCELLED,
    TIDE_JOB_STATE_COUNT
} tide_job_state_t;
const char *tide_job_state_name(int s);

typedef struct tide_job_info {
    const tide_job_spec_t *spec; /* borrowed: valid while the engine lives */
    int state;                  /* tide_job_state_t */
    int phase;                  /* tide_phase_t when running */
    int width;                  /* current data-parallel width (replicas) */
    int dp_max;
    double progress;            /* full-width seconds done (as of the last step) */
    double committed;           /* progress in the last committed checkpoint */
    tide_time_t submitted, first_start, finished;
    int preemptions;
    double lost_gpu_s;
    int32_t lease;              /* current lease or -1 */
    double cap_w;               /* power cap per GPU now (0 = none) */
    double speed;               /* relative training throughput under it (1 = none) */
    double capped_s;            /* seconds it ran under a cap (all runs) */
    double cap_delay_s;         /* full-width seconds of progress the caps cost */
    double cap_energy_j;        /* energy under caps minus what the same progress
                                   took uncapped (negative: energy saved) */
    int held;                   /* 1: held by its driver (tide_engine_job_hold) */
} tide_job_info_t;

/* The engine's copy of its cluster (borrowed: valid while the engine lives). */
const tide_cluster_t *tide_engine_cluster(const tide_engine_t *e);

int tide_engine_jobs(const tide_engine_t *e);
int tide_engine_job(const tide_engine_t *e, int32_t job, tide_job_info_t *out);
int32_t tide_engine_job_find(const tide_engine_t *e, const char *id); /* -1 if unknown */

/* Hold (hold = 1) or release (0) job h on its driver's behalf: a held job
 * is not started (it stays QUEUED, out of the queue); one that runs is given
 * a checkpoint notice (reason TIDE_R_SCALE) at the next step and stopped at
 * its commit (or deadline), not counted as a preemption; a released one is
 * queued again. The lent rollout pool of an RL job is sized this way
 * (tide_rl_pool_t in tide/rl.h). A no-op when it is already so. Returns 0,
 * or -1 with err (ENOENT: unknown job; ESTATE: done or cancelled). */
int tide_engine_job_hold(tide_engine_t *e, int32_t h, int hold, tide_error_t *err);

int tide_engine_services(const tide_engine_t *e);
const tide_service_spec_t *tide_engine_service(const tide_engine_t *e, int s);
int tide_engine_service_find(const tide_engine_t *e, const char *name);

typedef struct tide_lease_info {
    int32_t job;
    int gpus;
    tide_time_t start, latest_return;
    tide_time_t ckpt_cost_s;
    int can_shrink;
    int noticed;   /* reclaim notice sent */
    int returned;
    int late;      /* returned by deadline enforcement */
} tide_lease_info_t;
int tide_engine_leases(const tide_engine_t *e);
int tide_engine_lease(const tide_engine_t *e, int32_t lease, tide_lease_info_t *out);

/* Replicas (handles 0..n-1, stopped ones included). */
typedef struct tide_replica_info {
    int service;
    int ready;     /* passed warm-up */
    int stopped;
    int gpus;
    int tier;      /* TIDE_T_A on the reserve, else TIDE_T_B */
} tide_replica_info_t;
int tide_engine_replicas(const tide_engine_t *e);
/* Fill out for replica r. Returns 0, or -1 for an unknown handle. */
int tide_engine_replica(const tide_engine_t *e, int32_t r, tide_replica_info_t *out);

/* Owner of each GPU: -1 free, else a job handle (kind 1), replica handle
 * (kind 2) or node index (kind 3: a foreign job, see TIDE_EV_FOREIGN).
 * Returns the kind (0 free). */
int tide_engine_gpu_owner(const tide_engine_t *e, int gpu, int32_t *owner);
/* GPUs of node n that foreign jobs hold now (owner kind 3 in
 * tide_engine_gpu_owner), and the count last reported (*want, may exceed the
 * held ones until tide's GPUs there are released). -1 for an unknown node. */
int tide_engine_node_foreign(const tide_engine_t *e, int node, int *want);
/* Tier of a GPU: 'A' reserve, 'I' inference partition, 'T' training partition, 'S' shared. */
char tide_engine_gpu_zone(const tide_engine_t *e, int gpu);

/* Forecast state of a service: baseline (predictable part) peak over
 * [now, now+horizon], the learned burst margin, and their product, which is
 * what the service is sized for. */
typedef struct tide_forecast_info {
    double margin;            /* burst multiplier - 1 for the SLO target */
    double peak;              /* baseline peak over the horizon */
    double peak_with_margin;  /* peak x (1 + margin) */
    double last_observed;
    int samples;              /* burst samples seen */
    tide_time_t lead_s;       /* reclaim lead now (elastic, timeshare) or warm-up lead */
    tide_time_t late_s;       /* measured lateness of capacity added to the lead */
    const char *rule;         /* sizing rule in use: "forecast", or the rule the
                                 sizing ensemble picked (static storage) */
} tide_forecast_info_t;
int tide_engine_forecast(const tide_engine_t *e, int service, tide_time_t horizon,
                         tide_forecast_info_t *out);

/* Warm-up rehearsals of a service (TIDE_EV_REHEARSE). A rehearsal replica
 * is placed on free GPUs of the service's zones (never on GPUs claimed by a
 * reclaim, never counted as capacity), accounted as state REHEARSING; when
 * it reports ready its warm-up is a sample of the service's warm-up
 * distribution and it stops at once. The warm-up part of the lead is then at
 * least the latest rehearsal's (a cold start measured on purpose). A
 * rehearsal is slow when its warm-up exceeds what the lead allowed for the
 * warm-up before it: the lead's warm-up term + lead_extra_s + the measured
 * lateness + one tick. */
typedef struct tide_rehearsal_info {
    int done, slow, failed;      /* rehearsals completed, of them slow; failed */
    int running;                 /* 1 while one warms up; 2 asked, waiting for GPUs */
    double last_warmup_s;        /* the latest completed one's warm-up (0: none) */
    double allowed_s;            /* what the lead allowed it (0: none) */
    tide_time_t last_at;         /* when it completed (-1: never) */
    double gpu_s;                /* GPU-seconds rehearsals held (state REHEARSING) */
} tide_rehearsal_info_t;
int tide_engine_rehearsal(const tide_engine_t *e, int service, tide_rehearsal_info_t *out);

/* Preload past demand of a service so the forecast works from the first
 * step: `rps` was the demand from time t until the next point. Points of a
 * service must come in non-decreasing t; before the first step any t is
 * accepted (times before the first step's are the past), afterwards only
 * t <= the engine's now and not before the service's last point. Feeds the
 * forecast only (no accounting, no SLO). Returns 0 or -1 with err (ENOENT
 * unknown service, EINVAL bad rps or time order). */
int tide_engine_demand_history(tide_engine_t *e, int service, tide_time_t t, double rps,
                               tide_error_t *err);

/* ------------------------------------------------------------- accounting */

typedef enum tide_state {
    TIDE_S_SERVING = 0,
    TIDE_S_WARMING,
    TIDE_S_TRAINING,
    TIDE_S_CHECKPOINTING,
    TIDE_S_RESTORING,
    TIDE_S_LOST,
    TIDE_S_IDLE,
    TIDE_S_FOREIGN,  /* held by jobs tide does not manage (class none) */
    TIDE_S_REHEARSING, /* a warm-up rehearsal's replica (class inference) */
    TIDE_S_COUNT
} tide_state_t;
const char *tide_state_name(int s);

/* Workload classes: inference, then training by priority. */
enum { TIDE_C_INFERENCE = 0, TIDE_C_P1, TIDE_C_P2, TIDE_C_P3, TIDE_C_NONE, TIDE_C_COUNT };
const char *tide_class_name(int c);

/* Tiers: A reserve, B inference beyond the reserve, C lent under a lease,
 * D dedicated training / unlent. */
enum { TIDE_T_A = 0, TIDE_T_B, TIDE_T_C, TIDE_T_D, TIDE_T_COUNT };
const char *tide_tier_name(int t);

/* Cumulative totals since the engine started (up to the last step's now). */
typedef struct tide_stats {
    tide_time_t start, now;
    int cluster_gpus;
    double gpu_s[TIDE_C_COUNT][TIDE_S_COUNT][TIDE_T_COUNT]; /* class x state x tier */
    double useful_serving_gpu_s;   /* serving GPUs up to what demand needed */
    double oracle_gpu_s;           /* perfect-foresight, free-switching bound */
    double requests_demanded, requests_served;
    double idle_while_queued_gpu_s;
    /* training */
    int jobs_submitted, jobs_completed, jobs_running, jobs_queued;
    int preemptions;               /* job stops caused by someone else */
    int shrinks;
    double lost_gpu_s;
    /* reclaim */
    int reclaims, reclaims_late;   /* reclaim notices (inference, window), and those
                                      not answered by their deadline */
    int leases_expired;            /* leases that reached their latest return without
                                      a reclaim notice (e.g. while tide was down) */
    int leases_granted;
    double borrowed_gpu_s;         /* GPU-seconds training held under leases */
    /* Tier A: GPU-seconds the healthy reserve stayed below its size (failed
     * nodes not yet replaced by healthy domains); 0 for policies without one */
    double tier_a_breach_gpu_s;
    int tier_a_target_gpus;        /* the reserve's size (0 = no reserve) */
    int tier_a_short_gpus;         /* GPUs below the reserve now */
    /* instantaneous */
    int gpus_now[TIDE_C_COUNT][TIDE_S_COUNT];
    int queue_jobs, queue_gpus;
    double demand_rps, ready_rps;  /* summed over services */
    int replicas_ready, replicas_warming;
    /* power and energy (modelled draw, tide/power.h): joules by what the GPUs
     * did - serving (inference replicas), training (jobs), idle (free), other
     * (foreign jobs) -; power caps set (actions), jobs stopped because caps
     * were not enough, starts held back for power; GPU-seconds under a cap;
     * steps that ended above a budget (0 unless only serving or foreign load
     * is left there) and the largest such excess in watts */
    double energy_serving_j, energy_training_j, energy_idle_j, energy_other_j;
    int power_caps, power_stops, power_held, power_breaches;
    double capped_gpu_s, power_excess_w;
    int power_capped_gpus;         /* now */
} tide_stats_t;

/* Fill out with the totals. */
void tide_engine_stats(const tide_engine_t *e, tide_stats_t *out);
/* Training GPU-seconds lost so far (tide_stats_t.lost_gpu_s without the
 * copy of every total: drivers read it around each step). */
double tide_engine_lost_gpu_s(const tide_engine_t *e);

/* Per-team figures. */
typedef struct tide_team_stats {
    const char *team;       /* borrowed */
    double gpu_s;           /* allocated GPU-seconds (all states but idle) */
    double lost_gpu_s;
    int preemptions;
    int jobs;               /* submitted */
    double queue_s_sum;     /* sum of queue time (jobs not started counted to now) */
} tide_team_stats_t;
int tide_engine_teams(const tide_engine_t *e);
int tide_engine_team(const tide_engine_t *e, int team, tide_team_stats_t *out);

/* Team configuration and live quota state. */
typedef struct tide_team_info {
    const char *team;       /* borrowed */
    double weight;
    double usage;           /* decayed GPU-seconds (fair-share usage) */
    int quota_gpus;         /* sum over types, -1 = none */
    int used_gpus;          /* GPUs its jobs hold now */
    int borrowed_gpus;      /* held beyond its quota */
    int borrow_limit, lend_cap;
} tide_team_info_t;
int tide_engine_team_info(const tide_engine_t *e, int team, tide_team_info_t *out);

/* GPU-seconds so far by (class, state, tier, GPU type) for one team's jobs,
 * or for one service's replicas (class inference). Out-of-range -> 0. */
double tide_engine_team_gpu_s(const tide_engine_t *e, int team, int cls, int state, int tier,
                              int type);
double tide_engine_service_gpu_s(const tide_engine_t *e, int service, int state, int tier,
                                 int type);
/* All of one team's (or one service's) cells at once, for samplers that
 * read every cell: out[((cls x TIDE_S_COUNT + state) x TIDE_T_COUNT + tier) x
 * types + type] (services: without cls), types = the cluster's GPU types.
 * Returns the number of cells written, or -1 (bad index, or n smaller than
 * that number; nothing written). */
int tide_engine_team_gpu_s_all(const tide_engine_t *e, int team, double *out, size_t n);
/* Can a team's cells of (cls, state) ever hold GPU-seconds? Only the
 * classes of jobs (P1..P3) by the states a job is accounted in (training,
 * checkpointing, restoring, lost); every other team cell is zero at all
 * times (tide_engine_check verifies it), so a sampler may skip them. */
int tide_engine_team_cell_live(int cls, int state);
int tide_engine_service_gpu_s_all(const tide_engine_t *e, int service, double *out, size_t n);
/* GPU-seconds so far that jobs tide does not manage held (class none, state
 * foreign; TIDE_EV_FOREIGN) by tier and GPU type. Out-of-range -> 0. */
double tide_engine_foreign_gpu_s(const tide_engine_t *e, int tier, int type);
/* GPUs of each type in the cluster, and of each type on the Tier A reserve. */
int tide_engine_type_gpus(const tide_engine_t *e, int type, int *reserve_gpus);

/* Why a queued job waits (tide_engine_queue). Names (tide_wait_name):
 * Ready: it fits the free GPUs and starts at the next scheduling step.
 * Resources: the head of its priority; not enough free GPUs where it may run.
 * Priority: jobs ahead of it in the queue come first (not the head of its
 *   priority and does not fit the free GPUs, or beyond the backfill depth).
 * Reservation: it fits the free GPUs but would delay a head job's EASY
 *   reservation (it would end after that head is due to start, on its GPUs).
 * Quota: its team would exceed its quota plus borrow limit.
 * Draining: GPUs are being emptied for it (a P1 or quota preemption whose
 *   victims are checkpointing).
 * GangTooLarge: the healthy nodes cannot hold dp_min of its gangs even empty
 *   (nodes are down). */
enum { TIDE_WAIT_READY = 0, TIDE_WAIT_RESOURCES, TIDE_WAIT_PRIORITY, TIDE_WAIT_RESERVATION,
       TIDE_WAIT_QUOTA, TIDE_WAIT_DRAINING, TIDE_WAIT_GANG_TOO_LARGE, TIDE_WAIT_COUNT };
const char *tide_wait_name(int reason); /* "Ready", "Resources", ...; "?" out of range */

/* One queued job as the scheduler sees it (tide_engine_queue). */
typedef struct tide_queue_info {
    int32_t job;                /* handle (tide_engine_job) */
    int position;               /* 1-based, in the order the scheduler examines the queue:
                                   P1 first, then P2, P3; inside a priority by fair share
                                   (when on) then submission */
    int reason;                 /* TIDE_WAIT_* */
    tide_time_t expected_start; /* Ready: the last step's time; the head of a priority:
                                   its EASY reservation (when the expected releases of
                                   running jobs free its gangs); else TIDE_TIME_NEVER */
} tide_queue_info_t;

/* Inspect the queue as of the last step, read-only (the engine is not
 * changed and later steps decide exactly as without the call). Fills
 * out[0 .. min(n, cap)) in position order, where n, the number of queued
 * jobs, is returned (call with cap 0 to size the array). Reservations are
 * computed for the head of every priority, also when no GPU is free (the
 * scheduling pass skips them then), from the declared durations of running
 * jobs: an estimate, not a promise (a reclaim or a P1 job may come first). */
size_t tide_engine_queue(const tide_engine_t *e, tide_queue_info_t *out, size_t cap);
/* The same for one queued job (handle job): its position, reason and
 * expected start as tide_engine_queue gives them, scanning the queue only up
 * to it. 0, or -1 when the job is not queued. */
int tide_engine_queue_job(const tide_engine_t *e, int32_t job, tide_queue_info_t *out);

/* Samples a driver can turn into percentiles (borrowed arrays, valid until the
 * next step): reclaim notice -> GPUs returned, notice -> warm replica ready. */
typedef struct tide_samples {
    const double *v;
    size_t n;
} tide_samples_t;
enum { TIDE_SAMPLE_RECLAIM_RETURN = 0, TIDE_SAMPLE_RECLAIM_TO_READY, TIDE_SAMPLE_CKPT,
       TIDE_SAMPLE_WARMUP, TIDE_SAMPLE_COUNT };
tide_samples_t tide_engine_samples(const tide_engine_t *e, int which);

/* Quantile q in [0,1] of n values (copied and sorted internally; 0 if n = 0). */
double tide_quantile(const double *v, size_t n, double q);

#ifdef __cplusplus
}
#endif
#endif
