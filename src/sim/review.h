/* tide simulator: policy-change review (`tide review OLD.yaml NEW.yaml`).
 *
 * The same workload is replayed under two configurations; each side gets its
 * outcome (the configuration as written) and a Pareto front on
 * (useful_utilization, slo_attainment) over a grid of the knobs a
 * configuration does not fix (by default the forecast margin floor). The
 * verdict compares the outcomes metric by metric; a metric with a limit
 * fails the review when NEW is worse than OLD by more than the limit
 * (docs/review.md). */
#ifndef TIDE_SIM_REVIEW_H
#define TIDE_SIM_REVIEW_H

#include <stddef.h>

#include "sim/sweep.h"

/* One side's outcome: the figures the verdict compares. */
typedef struct tide_review_outcome {
    double slo_attainment;      /* inference: fraction of requests served (higher better) */
    double tier_a_breach_gpu_h; /* inference: GPU-hours the Tier A reserve was short */
    double useful_utilization;  /* training + serving useful share of GPU time */
    double mean_queue_s;        /* training: mean wait before a first start */
    double preemptions;         /* training: jobs preempted */
    double gpu_hours_lost;      /* training: work lost (since the last checkpoint) */
    double jobs_completed;
} tide_review_outcome_t;

/* The outcome of a sweep row (tide_sweep_row_t of a run that succeeded). */
void tide_review_outcome_of(const tide_sweep_row_t *r, tide_review_outcome_t *o);

/* Limits: how much worse NEW may be. NAN = no limit (the metric only gets a
 * verdict). Drops and rises are absolute, in the metric's unit. */
typedef struct tide_review_limits {
    double max_slo_drop;        /* default 0.0005 (half a 99.9% SLO's error budget) */
    double max_breach_rise_h;   /* default 0 GPU-hours beyond the tolerance */
    double max_useful_drop;     /* default 0.02 */
    double max_wait_rise;       /* relative rise of the mean wait (default NAN) */
    double max_lost_rise_h;     /* default NAN */
} tide_review_limits_t;

void tide_review_limits_default(tide_review_limits_t *l);

enum { TIDE_REVIEW_WORSE = -1, TIDE_REVIEW_SAME = 0, TIDE_REVIEW_BETTER = 1 };

/* The verdict on one metric. */
typedef struct tide_review_verdict {
    const char *metric;  /* "slo_attainment", ... (static) */
    const char *side;    /* "inference" or "training" (static) */
    double old_v, new_v, delta; /* delta = new - old */
    int direction;       /* TIDE_REVIEW_*: NEW compared to OLD (within a tolerance: same) */
    double limit;        /* the limit applied (NAN: none) */
    int fails;           /* 1: worse beyond the limit */
} tide_review_verdict_t;

#define TIDE_REVIEW_METRICS 6

/* Compare NEW to OLD: out gets TIDE_REVIEW_METRICS verdicts (table order:
 * slo_attainment, tier_a_breach_gpu_h, useful_utilization, mean_queue_s,
 * preemptions, gpu_hours_lost). Returns the number of failed limits (0 =
 * NEW passes). A metric that is not finite on either side is "same" and
 * never fails. */
int tide_review_judge(const tide_review_outcome_t *old_o, const tide_review_outcome_t *new_o,
                      const tide_review_limits_t *l, tide_review_verdict_t *out);

/* Fronts compared: how many points of front a are dominated by some point of
 * front b on (useful_utilization, slo_attainment) (strictly better on one,
 * no worse on the other). rows/idx as tide_sweep_result_t's. */
size_t tide_review_dominated(const tide_sweep_row_t *ra, const size_t *fa, size_t na,
                             const tide_sweep_row_t *rb, const size_t *fb, size_t nb);

#endif
