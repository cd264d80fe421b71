/* Policy-change review: the verdict (review.h, docs/review.md). */
#include "sim/review.h"

#include <math.h>
#include <stddef.h>

void tide_review_outcome_of(const tide_sweep_row_t *r, tide_review_outcome_t *o)
{
    o->slo_attainment = r->slo_attainment;
    o->tier_a_breach_gpu_h = r->tier_a_breach_gpu_s / 3600.0;
    o->useful_utilization = r->useful_utilization;
    o->mean_queue_s = r->mean_queue_s;
    o->preemptions = (double)r->preemptions;
    o->gpu_hours_lost = r->gpu_hours_lost;
    o->jobs_completed = (double)r->jobs_completed;
}

void tide_review_limits_default(tide_review_limits_t *l)
{
    l->max_slo_drop = 0.0005;
    l->max_breach_rise_h = 0;
    l->max_useful_drop = 0.02;
    l->max_wait_rise = NAN;
    l->max_lost_rise_h = NAN;
}

/* The metrics: where each is, which way is better, which limit applies and
 * whether the limit is relative to OLD's value; tol: differences at most
 * this are "same" (simulation noise of one replay is zero, but rounding of
 * figures read back from summary.json is not). */
static const struct {
    const char *name, *side;
    size_t off;
    int higher_better;
    size_t limit_off; /* offset in tide_review_limits_t */
    int relative;
    double tol;
} METRICS[TIDE_REVIEW_METRICS] = {
    {"slo_attainment", "inference", offsetof(tide_review_outcome_t, slo_attainment), 1,
     offsetof(tide_review_limits_t, max_slo_drop), 0, 1e-9},
    {"tier_a_breach_gpu_h", "inference", offsetof(tide_review_outcome_t, tier_a_breach_gpu_h), 0,
     offsetof(tide_review_limits_t, max_breach_rise_h), 0, 1e-6},
    {"useful_utilization", "training", offsetof(tide_review_outcome_t, useful_utilization), 1,
     offsetof(tide_review_limits_t, max_useful_drop), 0, 1e-9},
    {"mean_queue_s", "training", offsetof(tide_review_outcome_t, mean_queue_s), 0,
     offsetof(tide_review_limits_t, max_wait_rise), 1, 1e-6},
    {"preemptions", "training", offsetof(tide_review_outcome_t, preemptions), 0, (size_t)-1, 0,
     0.5},
    {"gpu_hours_lost", "training", offsetof(tide_review_outcome_t, gpu_hours_lost), 0,
     offsetof(tide_review_limits_t, max_lost_rise_h), 0, 1e-6},
};

static double field(const void *base, size_t off)
{
    return *(const double *)((const char *)base + off);
}

int tide_review_judge(const tide_review_outcome_t *old_o, const tide_review_outcome_t *new_o,
                      const tide_review_limits_t *l, tide_review_verdict_t *out)
{
    int fails = 0;
    for (size_t i = 0; i < TIDE_REVIEW_METRICS; i++) {
        tide_review_verdict_t *v = &out[i];
        v->metric = METRICS[i].name;
        v->side = METRICS[i].side;
        v->old_v = field(old_o, METRICS[i].off);
        v->new_v = field(new_o, METRICS[i].off);
        v->delta = v->new_v - v->old_v;
        v->limit = METRICS[i].limit_off == (size_t)-1 ? NAN : field(l, METRICS[i].limit_off);
        v->direction = TIDE_REVIEW_SAME;
        v->fails = 0;
        if (!isfinite(v->delta) || fabs(v->delta) <= METRICS[i].tol)
            continue;
        /* how much worse NEW is (> 0 worse), in the limit's terms */
        double worse = METRICS[i].higher_better ? -v->delta : v->delta;
        v->direction = worse > 0 ? TIDE_REVIEW_WORSE : TIDE_REVIEW_BETTER;
        if (METRICS[i].relative)
            worse = v->old_v > 0 ? worse / v->old_v : (worse > 0 ? INFINITY : 0);
        if (worse > 0 && isfinite(v->limit) && worse > v->limit + METRICS[i].tol) {
            v->fails = 1;
            fails++;
        }
    }
    return fails;
}

/* Does a dominate b: no worse on both, strictly better on one? */
static int dominates(const tide_sweep_row_t *a, const tide_sweep_row_t *b)
{
    return a->useful_utilization >= b->useful_utilization &&
           a->slo_attainment >= b->slo_attainment &&
           (a->useful_utilization > b->useful_utilization ||
            a->slo_attainment > b->slo_attainment);
}

size_t tide_review_dominated(const tide_sweep_row_t *ra, const size_t *fa, size_t na,
                             const tide_sweep_row_t *rb, const size_t *fb, size_t nb)
{
    size_t n = 0;
    for (size_t i = 0; i < na; i++) {
        int dom = 0;
        for (size_t k = 0; k < nb && !dom; k++)
            dom = dominates(&rb[fb[k]], &ra[fa[i]]);
        n += (size_t)dom;
    }
    return n;
}
