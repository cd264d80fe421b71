/* tide simulator: parameter sweeps (`tide sim ... --sweep SPEC`).
 *
 * A sweep runs tide_sim_run once per point of a grid of policy parameters,
 * each point into its own directory DIR/sweep/<key=value,...>/ (no table, no
 * progress), on several threads (the engine and tide_sim_run keep no global
 * state), then writes DIR/sweep.csv (one row per point x policy) and
 * DIR/sweep.json (every row and the Pareto front on (useful_utilization,
 * slo_attainment)), and prints the front as a table. docs/report.md.
 *
 * Grid grammar: comma-separated KEY=RANGE items, each key at most once;
 * RANGE is a single value V or LO:HI:STEP (inclusive, STEP > 0, LO <= HI).
 * Keys and what they set in tide_config_t:
 *   reserve  reserve_gpus       Tier A GPUs for elastic (whole GPUs, 0..cluster)
 *   margin   margin_min         floor of the forecast margin (0..margin_max)
 *   split    split_inf          inference GPUs of static/timeshare (whole, 0..cluster)
 *   lead     lead_extra_s       extra reclaim lead (a duration: 300, 5m)
 *   hold     scale_down_hold_s  scale-down hold (a duration: 1800, 30m)
 * Example: "reserve=24:64:8,margin=0.05:0.3:0.05" (6 x 6 = 36 points). */
#ifndef TIDE_SIM_SWEEP_H
#define TIDE_SIM_SWEEP_H

#include <stddef.h>
#include <stdio.h>

#include "sim/sim.h"
#include "tide/types.h"

#define TIDE_SWEEP_MAX_POINTS 4096  /* grid points per sweep */
#define TIDE_SWEEP_MAX_VALUES 1024  /* values of one key */
#define TIDE_SWEEP_MAX_THREADS 64

typedef enum tide_sweep_key {
    TIDE_SWEEP_RESERVE = 0,
    TIDE_SWEEP_MARGIN,
    TIDE_SWEEP_SPLIT,
    TIDE_SWEEP_LEAD,
    TIDE_SWEEP_HOLD,
    TIDE_SWEEP_NKEYS
} tide_sweep_key_t;

/* One axis of the grid: a key and its values (owned). */
typedef struct tide_sweep_axis {
    int key;   /* tide_sweep_key_t */
    double *v;
    size_t n;
} tide_sweep_axis_t;

/* A parsed grid: axes in the order given; point i enumerates them with the
 * last axis varying fastest. */
typedef struct tide_sweep_grid {
    tide_sweep_axis_t axis[TIDE_SWEEP_NKEYS];
    size_t n_axes;
    size_t n_points;
} tide_sweep_grid_t;

/* Name of a key ("reserve", ...; "?" when out of range). */
const char *tide_sweep_key_name(int key);

/* Parse spec into g (overwritten; free with tide_sweep_grid_free even on
 * error). Returns 0, or -1 with err (EINVAL) naming the item: unknown or
 * repeated key, malformed number or duration, STEP <= 0, LO > HI, a value
 * out of its key's range (negative, margin above 1, a fraction for a GPU
 * count), too many values or points. */
int tide_sweep_parse(const char *spec, tide_sweep_grid_t *g, tide_error_t *err);
void tide_sweep_grid_free(tide_sweep_grid_t *g); /* NULL is a no-op; leaves it empty */

/* Values of point i (0 <= i < n_points): vals[a] for axis a. */
void tide_sweep_point(const tide_sweep_grid_t *g, size_t i, double *vals);

/* The point's directory name, "reserve=24,margin=0.05" (axis order), into
 * buf. Returns buf. */
const char *tide_sweep_label(const tide_sweep_grid_t *g, size_t i, char *buf, size_t n);

/* Apply point i to cfg, checking it against a cluster of `gpus` GPUs
 * (reserve, split <= gpus; margin <= cfg->margin_max). Returns 0 or -1 with
 * err (EINVAL) naming the key and value. */
int tide_sweep_apply(const tide_sweep_grid_t *g, size_t i, int gpus, tide_config_t *cfg,
                     tide_error_t *err);

/* One row of sweep.csv: a point run under one policy. */
typedef struct tide_sweep_row {
    size_t point;
    const char *policy;   /* borrowed from the base options / tide_policy_names */
    int ok;               /* 0: the policy failed at this point (error holds why) */
    double utilization, useful_utilization, slo_attainment, mean_queue_s, gpu_hours_lost;
    long preemptions, reclaims, reclaims_late, jobs_completed;
    double reserve_effective; /* elastic's Tier A as it acted (the services' floors
                                 when --reserve was below them); NAN when unknown */
    double tier_a_breach_gpu_s; /* GPU-seconds the Tier A reserve was short (NAN unknown) */
    char error[160];
} tide_sweep_row_t;

typedef struct tide_sweep_result {
    tide_sweep_row_t *rows; /* n_points x n_policies, point-major */
    size_t n_rows;
    size_t *front;          /* indexes into rows: the Pareto front, by useful desc */
    size_t n_front;
} tide_sweep_result_t;

void tide_sweep_result_free(tide_sweep_result_t *r); /* NULL is a no-op */

/* Indexes of the rows (ok ones only) not dominated on (useful_utilization,
 * slo_attainment): no other row is >= on both and > on one. Equal rows are
 * all kept. Sorted by useful_utilization descending, then slo descending,
 * then index. Returns the count; *out is allocated (free it). */
size_t tide_sweep_front(const tide_sweep_row_t *rows, size_t n, size_t **out);

/* Check every point of g against a cluster of `gpus` GPUs and the base
 * config (as tide_sweep_apply, on a copy). Returns 0 or -1 with err. */
int tide_sweep_check(const tide_sweep_grid_t *g, int gpus, const tide_config_t *base,
                     tide_error_t *err);

/* Run every point of g with base options `base` (its cfg is the starting
 * point, its out_dir the sweep's DIR; table and progress are off for the
 * points) on `threads` threads (0 = the online CPUs, at most the points),
 * write DIR/sweep.csv and DIR/sweep.json, print the front as a table on
 * `table` (NULL = none) and fill *res if not NULL. spec is recorded in
 * sweep.json. A point whose run fails does not stop the others: its rows
 * carry the error and stay off the front.
 * Returns 0, or -1 with err: EINVAL for a point the cluster cannot take
 * (checked for every point before anything runs), EIO when an output cannot
 * be written, ESTATE when every point failed. */
int tide_sweep_run(const tide_sim_opts_t *base, const tide_sweep_grid_t *g, const char *spec,
                   int threads, FILE *table, tide_sweep_result_t *res, tide_error_t *err);

#endif
