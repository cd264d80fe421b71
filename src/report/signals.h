/* tide capacity signals (`tide capacity DIR`, docs/governance.md): turn a
 * simulation output folder into findings with numbers.
 *
 * Rules (thresholds are the defaults of tide_signals_opts_default):
 *
 *   preemptions  preemptions caused by inference (job stops with reason
 *                reclaim, preempt, deadline or window in events.csv; without
 *                events.csv every preemption of summary.json) per day per 100
 *                cluster GPUs > 5                -> the inference floor (Tier A
 *                reserve) is too small
 *   queue        training.p95_queue_s > 24 h, or mean queued GPUs
 *                (timeline.csv queue_gpus) > 25% of the cluster
 *                                                -> training is undersized
 *   waste        utilization < 60%, or idle GPU-hours > 30% of the total
 *                                                -> capacity is wasted (also
 *                reports idle_while_queued_gpu_hours: GPUs idle while jobs
 *                waited, a placement / fragmentation problem)
 *   sweep        with DIR/sweep.csv holding a `reserve` (or `reserve_gpus`)
 *                column: for consecutive reserve values of the same policy
 *                (and the same other parameters), "N more Tier A GPUs raise
 *                SLO attainment from X to Y and cost Z training GPU-hours";
 *                plus the smallest reserve reaching slo_target.
 *
 * Reads summary.json (required), timeline.csv, events.csv and sweep.csv
 * (optional). */
#ifndef TIDE_SIM_SIGNALS_H
#define TIDE_SIM_SIGNALS_H

#include <stdio.h>

#include <jansson.h>

#include "tide/types.h"

typedef struct tide_signals_opts {
    double preempt_per_day_per_100; /* 5 */
    double queue_p95_h;             /* 24 */
    double queue_gpus_frac;         /* 0.25 */
    double util_low;                /* 0.60 */
    double idle_high;               /* 0.30 */
    double slo_target;              /* 0.999: for the sweep recommendation */
} tide_signals_opts_t;

void tide_signals_opts_default(tide_signals_opts_t *o);

/* Findings for `policy` (NULL = every policy of summary.json, in order):
 *   {"thresholds": {...},
 *    "policies": {name: {"metrics": {...}, "findings": [{"signal", "level"
 *                 ("warn" | "ok" | "info"), "value", "threshold", "message"}]}},
 *    "sweep": {"available": bool, "source": "sweep.csv", "steps": [...],
 *              "recommend": [...]}}
 * Caller owns the result. NULL with err: ENOENT (no summary.json), EINVAL
 * (malformed file, unknown policy, bad thresholds). */
json_t *tide_signals_compute(const char *dir, const char *policy, const tide_signals_opts_t *o,
                             tide_error_t *err);

/* Print the findings as text (one line per finding). Returns 0 or -1. */
int tide_signals_print(FILE *f, const json_t *sig);

#endif
