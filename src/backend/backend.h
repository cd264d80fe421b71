/* tide backends: what enacts the engine's decisions on real (or simulated)
 * machines and reports what happens back as engine events. The daemon
 * persists each action, then calls the backend; the backend's observations
 * come back through poll(). Backends use core types only.
 *
 * Built-in: "sim" - virtual nodes that run jobs and replicas in engine time
 * (the simulator's world, src/world/world.h). The engine time advances with the
 * wall clock times --speed, so the simulated jobs do too.
 * "slurm" - a real Slurm cluster (src/backend/slurm.c, docs/slurm.md): every
 * data-parallel gang of a training job and every inference replica is a Slurm
 * batch job pinned to the nodes the engine chose; leases are Slurm time
 * limits; reclaim is a signal, then a requeue. Engine time must be wall time. */
#ifndef TIDE_BACKEND_BACKEND_H
#define TIDE_BACKEND_BACKEND_H

#include <stddef.h>
#include <stdio.h>

#include "backend/slurm_api.h"
#include "tide/engine.h"
#include "tide/types.h"

/* The power-cap command: tmpl with {node} and {watts} replaced (node names of
 * [A-Za-z0-9._-] only, EINVAL otherwise; ERANGE when out (n bytes) is too
 * small), and that run with /bin/sh -c, waiting for it: 0, or -1 with err
 * (EIO: it could not run or exited non-zero). */
int tide_power_cmd_expand(const char *tmpl, const char *node, long watts, char *out, size_t n,
                          tide_error_t *err);
int tide_power_cmd_run(const char *tmpl, const char *node, long watts, tide_error_t *err);

/* Options of the backends (borrowed: the driver keeps them alive as long as
 * the backend). Zero means the default. */
typedef struct tide_backend_opts {
    const char *slurm_conf;        /* NULL: $SLURM_CONF, then Slurm's default */
    const char *partition;         /* training gangs; NULL: Slurm's default partition */
    const char *infer_partition;   /* replicas; NULL: the training partition */
    int ckpt_signal;               /* signal number for a checkpoint notice (SIGUSR1) */
    const char *replica_command;   /* run by every inference replica (required with services) */
    const char *power_cap_cmd;     /* per-node power cap: a /bin/sh command with {node} and
                                      {watts} (a lifted cap: the GPU type's tdp); NULL = caps
                                      are not enacted (tide_power_cmd_run) */
    const char *workdir;           /* jobs' working directory and TIDE_WORKDIR (cwd) */
    const char *api_url;           /* TIDE_API given to jobs */
    tide_time_t deadline_slack_s;  /* time limits end this much before a lease's latest
                                      return: Slurm checks limits every 30 s, then KillWait (60) */
    tide_time_t poll_s;            /* seconds between looks at Slurm (2) */
    tide_time_t pending_timeout_s; /* a started gang Slurm cannot place by then fails (180) */
    int max_failures;              /* consecutive failed runs before a job is cancelled (3) */
    tide_time_t node_grace_s;      /* a node down / not responding this long is a failure (30);
                                      a drain counts at once */
    int probe_thread;              /* while Slurm is unreachable, probe it from a thread and
                                      defer every call: the caller (holding the daemon lock)
                                      never waits on Slurm's timeouts. 0: retry inline at
                                      each poll (deterministic: the unit tests) */
    const tide_slurm_ops_t *slurm; /* NULL: libslurm (tests plug a fake) */
    int read_only;                 /* shadow mode: the cluster engine is only read. Slurm:
                                      every write (submit, release, update, signal,
                                      requeue, cancel) is refused before libslurm and
                                      counted in status.refused */
    double sim_warmup_factor;      /* sim: replica warm-ups take this x the declared
                                      warmup_s (0 = 1; tide_world_set_warmup_factor) */
    FILE *log;                     /* NULL: stderr */
    double (*unix_clock)(void *); /* NULL: time(); tests use a manual clock */
    void *unix_clock_ctx;
} tide_backend_opts_t;

/* What a backend reports about one job (for the API). */
typedef struct tide_backend_job_info {
    char ids[128];      /* the backend's ids, e.g. Slurm job ids "1041,1042" */
    char state[64];     /* the backend's state, e.g. "RUNNING", "PENDING(held)" */
    char nodes[128];    /* where it runs, "" when nowhere */
    int exit_code;      /* last exit code seen (-1 none) */
    int restarts;       /* restarts the backend counted */
} tide_backend_job_info_t;

/* Health and counters (for /metrics). */
typedef struct tide_backend_status {
    int reachable;      /* 1 when the last call to the cluster engine succeeded */
    long calls, errors; /* calls made to the cluster engine, and those that failed */
    long submits, requeues, signals, cancels;
    long exits_ok, exits_failed, timeouts; /* jobs the backend saw end */
    long pending_ops;   /* changes waiting because the cluster engine did not answer */
    long refused;       /* writes a read-only backend refused (shadow mode) */
    long power_cmds, power_cmd_failures; /* per-node power-cap commands run, and failed */
} tide_backend_status_t;

/* The work of a training job as submitted (or of a replica: the model version
 * it must load, TIDE_MODEL_VERSION and TIDE_MODEL_MANIFEST): what a backend that runs real
 * processes starts for it. Borrowed for the call; the backend copies what it
 * keeps. */
typedef struct tide_backend_work {
    const char *command;     /* NULL = none */
    const char *const *env;  /* NULL-terminated "KEY=VALUE" list, NULL = none */
} tide_backend_work_t;

/* One action to enact: the engine time, the action, its GPU ids (NULL when
 * it has none) and, for JOB_START and JOB_RESIZE, the job's work, for
 * REPLICA_START the environment of the model version it runs (NULL when
 * the driver has none). */
typedef struct tide_backend_act {
    tide_time_t now;
    const tide_action_t *a;
    const int32_t *gpus;
    const tide_backend_work_t *work;
} tide_backend_act_t;

/* An enact operation: returns 0, or -1 with err when the backend could not
 * even try (the daemon logs it; failures of the work itself come back later
 * as events: RANK_FAILED, REPLICA_FAILED, ...). */
typedef int (*tide_backend_act_fn)(void *ctx, const tide_backend_act_t *x, tide_error_t *err);

/* The operations and capabilities of a backend. NULL operations are no-ops. */
typedef struct tide_backend_ops {
    const char *name;
    /* Capabilities: what drivers ask instead of comparing names. */
    int needs_command;    /* jobs run a command: a job submitted without one is refused */
    int wall_clock;       /* real work: engine time must be wall time (--speed 1) */
    int reports_progress; /* jobs report their own progress: a committed checkpoint's
                             progress resyncs the engine's estimate */
    int can_stage;        /* can fetch a replica's weights to host memory before its GPUs
                             are free (a service's stage_s, docs/engine.md "Weight
                             staging"); a driver refuses stage_s > 0 where it cannot */
    /* Enact operations by action kind (TIDE_ACT_JOB_START, ..., the three
     * LEASE_* kinds: deadline bookkeeping for backends that enforce time
     * limits while tide is down). */
    tide_backend_act_fn act[TIDE_ACT_KIND_COUNT];
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
    /* What the backend knows of a job (0, or -1 when it knows nothing). */
    int (*job_info)(void *ctx, int32_t job, tide_backend_job_info_t *out);
    void (*status)(void *ctx, tide_backend_status_t *out);
    /* The backend's name of node n (e.g. Slurm's "gpu3"), NULL when none. */
    const char *(*node_name)(void *ctx, int node);
    void (*destroy)(void *ctx);
} tide_backend_ops_t;

typedef struct tide_backend {
    const tide_backend_ops_t *ops;
    void *ctx;
} tide_backend_t;

/* The ops tables of the built-in backends (src/backend/sim.c, slurm.c). */
extern const tide_backend_ops_t tide_backend_sim_ops, tide_backend_slurm_ops;

/* The ops table of built-in backend `name` (static storage: its
 * capabilities can be read before creating one), NULL when unknown. */
const tide_backend_ops_t *tide_backend_find(const char *name);

/* "sim, slurm": the built-in backends' names for messages (static). */
const char *tide_backend_known(void);

/* Create backend `name` for engine e (borrowed: the backend must not outlive
 * it) with options o (NULL = defaults). Caller owns the result
 * (tide_backend_destroy). Errors: EINVAL unknown name or options the backend
 * refuses, EIO the cluster engine cannot be reached. */
tide_backend_t *tide_backend_create(const char *name, const tide_engine_t *e,
                                    const tide_backend_opts_t *o, tide_error_t *err);
void tide_backend_destroy(tide_backend_t *b); /* NULL is a no-op */

/* Enact the actions of one step in order through the ops table. work is
 * NULL or has acts->n entries: work[i] is the work of action i's job (read
 * for JOB_START and JOB_RESIZE; NULL when none). Returns the number of
 * actions the backend refused (their errors go to the first err). */
int tide_backend_enact(tide_backend_t *b, tide_time_t now, const tide_actions_t *acts,
                       const tide_backend_work_t *const *work, tide_error_t *err);

/* Collect every observation due at <= now, appending to *v (grown with
 * tide_grow; *n events, *cap capacity). Returns how many were added. */
size_t tide_backend_poll_all(tide_backend_t *b, tide_time_t now, tide_event_t **v, size_t *n,
                             size_t *cap);

tide_time_t tide_backend_next_event(const tide_backend_t *b);
int tide_backend_job_alive(const tide_backend_t *b, int32_t job);
int tide_backend_replica_alive(const tide_backend_t *b, int32_t replica);
/* -1 when the backend has nothing to say about the job. */
int tide_backend_job_info(const tide_backend_t *b, int32_t job, tide_backend_job_info_t *out);
/* The backend's name of a node, NULL when it has none. */
const char *tide_backend_node_name(const tide_backend_t *b, int node);
/* Zeros (reachable = 1) for backends without counters. */
void tide_backend_status(const tide_backend_t *b, tide_backend_status_t *out);

/* The sim backend's constructor (also reachable by name). Its status counts
 * what it enacted: submits (job and replica starts), signals (checkpoint
 * notices and resizes), cancels (stops). */
tide_backend_t *tide_backend_sim_create(const tide_engine_t *e);
/* ... with options (NULL = defaults: sim_warmup_factor). */
tide_backend_t *tide_backend_sim_create_opts(const tide_engine_t *e, const tide_backend_opts_t *o);

/* Shadow mode: a backend that enacts nothing on `real` (taken over: the
 * shadow owns it). Every action goes to a simulated twin (a sim backend on
 * the same engine, with o's sim options): the engine's decisions play out
 * there (replicas warm, jobs run) so it can keep deciding. poll() returns
 * the twin's events, then real's observations of the cluster itself (events
 * naming no job and no replica: nodes failing and recovering, foreign jobs);
 * real's events about tide's own work are dropped (it runs none). Node
 * names and status are real's (its counters show what it really did);
 * job_alive, replica_alive and job_info answer for the twin. Caller owns
 * the result; NULL real is refused (NULL). */
tide_backend_t *tide_backend_shadow_create(tide_backend_t *real, const tide_engine_t *e,
                                           const tide_backend_opts_t *o);
/* Is b a shadow backend? */
int tide_backend_is_shadow(const tide_backend_t *b);
/* Leave shadow mode: the real backend taken out of shadow b (b and its twin
 * are freed), or b itself when it is no shadow. */
tide_backend_t *tide_backend_shadow_release(tide_backend_t *b);

/* The Slurm backend's constructor (also reachable by name "slurm"). Checks
 * that Slurm's GPU nodes match the engine's cluster. Errors: EIO Slurm
 * unreachable, EINVAL the clusters differ or tide was built without libslurm. */
tide_backend_t *tide_backend_slurm_create(const tide_engine_t *e, const tide_backend_opts_t *o,
                                          tide_error_t *err);

/* Describe Slurm's GPU nodes (of `partition` when not NULL) as a compact
 * cluster spec ("4x8:h100", nodes in Slurm's order, consecutive equal nodes
 * grouped) into buf. ops NULL = libslurm. Errors: EIO unreachable, ENOENT no
 * such partition, EINVAL no GPU nodes / buf too small. */
int tide_slurm_cluster_spec(const tide_slurm_ops_t *ops, const char *conf, const char *partition,
                            char *buf, size_t n, tide_error_t *err);

/* Signal by name ("USR1", "SIGUSR1", "usr2") or number ("10"): its number,
 * or -1. Only USR1 USR2 TERM INT HUP QUIT CONT URG ALRM WINCH (a job is told
 * the signal by name). */
int tide_signal_parse(const char *s);
/* Name without "SIG" of a signal number ("USR1" for unknown ones), static. */
const char *tide_signal_name(int sig);

#endif
