/* tide simulator: the agentic RL comparison (`tide sim --rl`, docs/rl.md).
 * One RL job replayed on the same cluster, services, demand and background
 * jobs under three rollout provisionings: fixed-min (a static pool of
 * min_replicas, the trainer's dedicated GPUs only), fixed-max (a static pool
 * of max_replicas sized at start, the frameworks' default when sized for the
 * peak), lent-all (min_replicas dedicated, the rest lent by tide as far as
 * lending allows) and lent (the same, the lent pool sized from the trainer's
 * measured wait on rollouts: tide_rl_pool_t, the pool jobs beyond it held
 * with tide_engine_job_hold). */
#ifndef TIDE_SIM_RL_SIM_H
#define TIDE_SIM_RL_SIM_H

#include <stdio.h>

#include "sim/sim.h"
#include "tide/rl.h"

enum {
    TIDE_SIM_RL_FIXED_MIN = 0,
    TIDE_SIM_RL_FIXED_MAX,
    TIDE_SIM_RL_LENT_ALL, /* lent: every pool job released, as lending allows */
    TIDE_SIM_RL_LENT,     /* lent: pool sized from the trainer's measured wait */
    TIDE_SIM_RL_NVAR
};

/* What one variant measured. */
typedef struct tide_sim_rl_result {
    const char *variant;         /* "fixed-min", "fixed-max", "lent" (static) */
    tide_rl_stats_t st;
    size_t steps;                /* trainer steps done */
    double step_mean, step_p50, step_p99; /* seconds */
    long stale_hist[8];          /* accepted by staleness 0..6, [7] = 7 and more */
    double served_frac;          /* inference requests served / demanded */
    double borrowed_gpu_s;       /* training GPU-seconds under leases (whole cluster) */
    int reclaims_late;
    int max_staleness;           /* the spec's bound */
    int dedicated_gpus;          /* trainer + dedicated rollout GPUs */
    double lent_gpus_by_hour[24]; /* mean lent rollout GPUs in each hour of the day */
    int syncs_io;                /* 1: weight syncs went through the storage model */
    size_t syncs;                /* then: syncs done, and their times (asked -> done, s) */
    double sync_p50, sync_p99;
    int pool_grows, pool_shrinks; /* lent: the controller's changes (tide_rl_pool_t) */
    int pool_want;                /* lent: lent replicas it wants at the end */
} tide_sim_rl_result_t;

/* Run the four variants of RL job rl (normalized) with the workload of
 * base (its jobs are background jobs; its first policy, default elastic, is
 * used; `pool` (NULL = defaults) configures the lent variant's controller; its observe hook, if any, is called after the RL model saw each step,
 * with s->policy the engine's policy). Each variant writes the usual outputs
 * into base->out_dir/<variant>/; then base->out_dir/rl.json and rl.csv get
 * the side-by-side figures and `table` (NULL = none) a readable table.
 * res (may be NULL) receives the TIDE_SIM_RL_NVAR results.
 * Returns 0, or -1 with err (the sim's errors; EINVAL for a bad RL spec). */
int tide_sim_rl_run(const tide_sim_opts_t *base, const tide_rl_spec_t *rl,
                    const tide_rl_pool_cfg_t *pool, FILE *table, tide_sim_rl_result_t *res,
                    tide_error_t *err);

#endif
