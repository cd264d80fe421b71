/* tide simulator: built-in scenario generator (`tide gen`).
 *
 * Writes a scenario's services.csv, demand.csv and jobs.csv (the three inputs
 * of `tide sim`) into a directory. Output is a pure function of the options:
 * the same options give byte-identical files (own PRNG, no clock, no rand()).
 * Where every distribution comes from is documented at the top of gen.c and
 * in docs/gen.md. */
#ifndef TIDE_SIM_GEN_H
#define TIDE_SIM_GEN_H

#include <stdint.h>

#include "tide/types.h"

/* Options. Zero fields take the scenario's default. */
typedef struct tide_gen_opts {
    const char *scenario; /* "seed200", "seed32" or "bench" */
    int days;             /* horizon in whole days, 1..TIDE_GEN_MAX_DAYS (0 = default:
                             seed200 14, seed32 7, bench 30) */
    uint64_t seed;        /* PRNG seed (any value, 0 included) */
    int nodes;            /* bench only: 8-GPU nodes, TIDE_GEN_MIN_NODES..TIDE_GEN_MAX_NODES
                             (0 = 128); seed200/seed32 are defined by their size */
    long jobs;            /* bench only: jobs to write, 1..TIDE_GEN_MAX_JOBS (0 = 100000) */
    const char *outdir;   /* created (with its parents) if missing */
} tide_gen_opts_t;

#define TIDE_GEN_MAX_DAYS 366
#define TIDE_GEN_MIN_NODES 4
#define TIDE_GEN_MAX_NODES 16384
#define TIDE_GEN_MAX_JOBS 10000000L
#define TIDE_GEN_STEP_S 300 /* demand.csv row period */

/* What was written. "Need" of a service at a demand row is
 * ceil(rps / replica_rps) * gpus_per_replica; peak/trough are the max/min over
 * rows of the sum over services. */
typedef struct tide_gen_summary {
    char cluster_spec[64];   /* e.g. "25x8:H100" (bench: reflects --nodes) */
    int cluster_gpus;
    int days;
    int services;
    long demand_rows;        /* data rows in demand.csv */
    int peak_gpus;           /* inference GPUs needed at the busiest row */
    int trough_gpus;         /* ... at the quietest row */
    int floor_gpus;          /* sum of min_replicas * gpus_per_replica (Tier A) */
    double mean_inf_gpus;    /* mean over rows of sum max(need, floor) */
    double train_gpus;       /* cluster_gpus - mean_inf_gpus: training's average share */
    long jobs;               /* data rows in jobs.csv */
    long backlog_jobs;       /* of which injected at t=0 to fill training (seed200) */
    int backlog_gpus;
    double jobs_per_day;     /* arrivals (backlog excluded) per day */
    double offered_load;     /* sum gpus*duration_s of arrivals / (train_gpus * horizon) */
} tide_gen_summary_t;

/* Generate scenario o->scenario into o->outdir (services.csv, demand.csv,
 * jobs.csv; each written to a temporary name then renamed). Returns 0 or -1
 * with err: EINVAL for bad options (unknown scenario, --nodes/--jobs given to a
 * scenario that does not take them, out of range values), EIO when the
 * directory or a file cannot be created or written. */
int tide_gen_write(const tide_gen_opts_t *o, tide_error_t *err);

/* Same, and fill *sum (may be NULL) with the figures of what was written. */
int tide_gen_write_ex(const tide_gen_opts_t *o, tide_gen_summary_t *sum, tide_error_t *err);

/* Default cluster spec of a scenario ("25x8:H100", "4x8:H100", "128x8:H100")
 * in static storage, or NULL for an unknown scenario. */
const char *tide_gen_cluster_spec(const char *scenario);

/* Names of the scenarios, NULL-terminated (static storage). */
const char *const *tide_gen_scenarios(void);

#endif
