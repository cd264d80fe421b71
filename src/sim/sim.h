/* tide simulator: the trace-replay driver (`tide sim`). For each policy it
 * creates an engine on the cluster, replays job submissions and demand
 * points in virtual time through tide_engine_step, enacts the actions in a
 * simulated world (world/world.h) and feeds what happens back as events. It
 * writes timeline.csv, events.csv and summary.json (docs/sim.md). */
#ifndef TIDE_SIM_SIM_H
#define TIDE_SIM_SIM_H

#include <stdint.h>
#include <stdio.h>

#include "formats/governance.h"
#include "sim/inject.h"
#include "formats/workload_io.h"
#include "world/world.h"
#include "tide/cluster.h"
#include "tide/engine.h"

#define TIDE_SIM_DEFAULT_INTERVAL 300 /* timeline period, seconds */
#define TIDE_SIM_MAX_POLICIES 16

/* The output files tide_sim_run may write (tide_sim_opts_t.outputs). */
enum {
    TIDE_SIM_OUT_SUMMARY = 1,   /* summary.json */
    TIDE_SIM_OUT_TIMELINE = 2,  /* timeline.csv */
    TIDE_SIM_OUT_EVENTS = 4,    /* events.csv */
    TIDE_SIM_OUT_USAGE = 8,     /* usage.csv, usage_teams.csv, usage_services.csv */
    TIDE_SIM_OUT_ALL = 15
};
/* "summary,timeline,events,usage" (any subset, or "all") -> a mask. Returns 0,
 * or -1 with err (EINVAL naming the unknown item). */
int tide_sim_outputs_parse(const char *list, unsigned *mask, tide_error_t *err);

/* What a step observer sees (tests): the policy, the time, the engine and
 * world after the step (the actions already enacted), the events fed and the
 * actions returned. Everything is borrowed for the call. */
typedef struct tide_sim_step {
    const char *policy;
    tide_time_t t;
    const tide_engine_t *e;
    const tide_world_t *w;
    tide_world_t *world;          /* the same world, for observers that act on it
                                     (tide_world_ckpt_early: sim/rl_sim.c) */
    tide_engine_t *engine;        /* the same engine, for observers that act on it
                                     between steps (tide_engine_job_hold: sim/rl_sim.c) */
    const tide_event_t *events;
    size_t n_events;
    const tide_actions_t *acts;
    tide_time_t *wake;            /* an observer may lower *wake (TIDE_TIME_NEVER on entry):
                                     the driver steps again no later than then, if it is
                                     after t (sim/rl_sim.c: a trainer step's end) */
} tide_sim_step_t;
typedef void (*tide_sim_observe_fn)(void *ctx, const tide_sim_step_t *s);

/* Options of one simulation run. All pointers are borrowed for the call. */
typedef struct tide_sim_opts {
    const tide_cluster_t *cluster;       /* required */
    const tide_service_spec_t *services; /* services, in the order the engine gets them */
    size_t n_services;
    const tide_demand_point_t *demand;   /* sorted by time; .service indexes services */
    size_t n_demand;
    const tide_demand_point_t *history;  /* past demand fed to the forecast before the
                                            replay (tide_engine_demand_history): times
                                            <= 0, sorted by time; NULL = none */
    size_t n_history;
    const tide_job_spec_t *jobs;         /* any order (replayed by submit_s, stable) */
    size_t n_jobs;
    const char *const *policies;         /* names, run in this order */
    size_t n_policies;                   /* 0 = all of tide_policy_names() */
    tide_config_t cfg;                   /* base config; .policy is set per run,
                                            .check_invariants by `check` */
    tide_time_t horizon_s;               /* 0 = max(last demand point, last submit)
                                            rounded up to a whole day (>= 1 day) */
    tide_time_t interval_s;              /* timeline period (0 = 300) */
    uint64_t seed;                       /* recorded in summary.json */
    const char *out_dir;                 /* required; created (with parents) if missing */
    FILE *table;                         /* readable table at the end (NULL = none) */
    int progress;                        /* 1: progress lines on stderr even if not a TTY */
    int check;                           /* 1: tide_engine_check after every step */
    const tide_inject_t *inject;         /* faults to inject (NULL = none; docs/sim.md) */
    const tide_governance_t *governance; /* teams, prices (NULL = none; docs/governance.md) */
    const double *job_ckpt_gb;           /* parallel to jobs: GB per checkpoint (NULL =
                                            TIDE_IO_CKPT_GB_PER_GPU x gpus) */
    const double *service_weights_gb;    /* parallel to services: GB of weights per replica
                                            (NULL = TIDE_IO_WEIGHTS_GB_PER_GPU x gpus) */
    const struct tide_pipesim_opts *pipeline; /* the model pipeline (NULL = none; pipesim.h) */
    const tide_io_latency_t *service_latency; /* parallel to services: latency declarations
                                            (NULL = all defaults; world/latency.h) */
    double bulk_qos;                     /* bulk-traffic QoS share (tide_world_set_qos;
                                            0 = off; needs the storage fault) */
    double uplink_gbps;                  /* every rack's uplink in GB/s (tide_world_set_uplink;
                                            0 = the cluster's uplink_gbps; needs the
                                            storage fault) */
    tide_sim_observe_fn observe;         /* called after every engine step (NULL = none) */
    void *observe_ctx;
    unsigned outputs;                    /* TIDE_SIM_OUT_* mask (0 = all); the files not
                                            asked for are removed from out_dir */
    int inline_outputs;                  /* 1: events.csv formatted and written on the
                                            simulation thread (no writer thread; a sweep,
                                            whose points already use every CPU). The bytes
                                            are the same either way */
    const char *const *argv;             /* the command line, recorded in summary.json's
                                            options.command (NULL = none) */
    int argc;
} tide_sim_opts_t;

/* Fill o with defaults: no inputs, all policies, tide_config_default, horizon
 * auto, interval 300, seed 0, no table, no progress. */
void tide_sim_opts_default(tide_sim_opts_t *o);

/* Run every policy of o in order and write the outputs into o->out_dir
 * (timeline.csv, events.csv, summary.json; the table to o->table).
 * A policy that fails does not stop the others: its entry in summary.json is
 * {"error": message}, its table row reads "failed", and the call returns -1
 * with the first failure once every policy has run. Nothing is printed but
 * the table and the progress lines.
 * Returns 0, or -1 with err: EINVAL for bad options (no cluster or out dir,
 * unknown policy, an --inject item naming a service, job or node count the
 * workload does not have) or a service the engine rejects; EIO when an output cannot
 * be written; the engine's code when a step fails (EINVAL, ESTATE) and ESTATE
 * for a failed invariant check (the message names the policy and time). */
int tide_sim_run(const tide_sim_opts_t *o, tide_error_t *err);

/* The horizon tide_sim_run uses when o->horizon_s is 0. */
tide_time_t tide_sim_auto_horizon(const tide_sim_opts_t *o);

#endif
