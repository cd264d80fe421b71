/* The verdict of `tide review` (src/sim/review.c): limits, directions,
 * tolerances, fronts compared. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "sim/review.h"

static tide_review_outcome_t base(void)
{
    return (tide_review_outcome_t){.slo_attainment = 0.999, .tier_a_breach_gpu_h = 0,
                                   .useful_utilization = 0.60, .mean_queue_s = 3600,
                                   .preemptions = 10, .gpu_hours_lost = 5, .jobs_completed = 100};
}

static const tide_review_verdict_t *find(const tide_review_verdict_t *v, const char *m)
{
    for (int i = 0; i < TIDE_REVIEW_METRICS; i++)
        if (!strcmp(v[i].metric, m))
            return &v[i];
    fail_msg("no metric %s", m);
    return NULL;
}

static void test_identical_passes(void **state)
{
    (void)state;
    tide_review_outcome_t o = base();
    tide_review_limits_t l;
    tide_review_limits_default(&l);
    tide_review_verdict_t v[TIDE_REVIEW_METRICS];
    assert_int_equal(tide_review_judge(&o, &o, &l, v), 0);
    for (int i = 0; i < TIDE_REVIEW_METRICS; i++) {
        assert_int_equal(v[i].direction, TIDE_REVIEW_SAME);
        assert_int_equal(v[i].fails, 0);
    }
    /* the table order the docs give */
    assert_string_equal(v[0].metric, "slo_attainment");
    assert_string_equal(v[0].side, "inference");
    assert_string_equal(v[2].metric, "useful_utilization");
    assert_string_equal(v[5].metric, "gpu_hours_lost");
}

static void test_slo_drop_limit(void **state)
{
    (void)state;
    tide_review_outcome_t o = base(), n = base();
    tide_review_limits_t l;
    tide_review_limits_default(&l);
    tide_review_verdict_t v[TIDE_REVIEW_METRICS];
    n.slo_attainment = o.slo_attainment - 0.0004; /* within the default 0.0005 */
    assert_int_equal(tide_review_judge(&o, &n, &l, v), 0);
    assert_int_equal(find(v, "slo_attainment")->direction, TIDE_REVIEW_WORSE);
    n.slo_attainment = o.slo_attainment - 0.0006; /* beyond */
    assert_int_equal(tide_review_judge(&o, &n, &l, v), 1);
    const tide_review_verdict_t *s = find(v, "slo_attainment");
    assert_int_equal(s->fails, 1);
    assert_true(fabs(s->delta + 0.0006) < 1e-12);
    assert_true(s->limit == 0.0005);
    l.max_slo_drop = 0.001; /* a looser limit lets it through */
    assert_int_equal(tide_review_judge(&o, &n, &l, v), 0);
    n.slo_attainment = 1.0; /* better never fails */
    l.max_slo_drop = 0;
    assert_int_equal(tide_review_judge(&o, &n, &l, v), 0);
    assert_int_equal(find(v, "slo_attainment")->direction, TIDE_REVIEW_BETTER);
}

static void test_lower_is_better(void **state)
{
    (void)state;
    tide_review_outcome_t o = base(), n = base();
    tide_review_limits_t l;
    tide_review_limits_default(&l);
    tide_review_verdict_t v[TIDE_REVIEW_METRICS];
    n.tier_a_breach_gpu_h = 0.5; /* default: no rise allowed */
    n.mean_queue_s = 1800;        /* shorter wait: better */
    n.preemptions = 30;           /* worse, no limit */
    assert_int_equal(tide_review_judge(&o, &n, &l, v), 1);
    assert_int_equal(find(v, "tier_a_breach_gpu_h")->fails, 1);
    assert_int_equal(find(v, "mean_queue_s")->direction, TIDE_REVIEW_BETTER);
    assert_int_equal(find(v, "preemptions")->direction, TIDE_REVIEW_WORSE);
    assert_int_equal(find(v, "preemptions")->fails, 0);
    assert_true(isnan(find(v, "preemptions")->limit));
    /* the wait's limit is relative to OLD's wait */
    n = base();
    n.mean_queue_s = 3600 * 1.4;
    l.max_wait_rise = 0.5;
    assert_int_equal(tide_review_judge(&o, &n, &l, v), 0);
    l.max_wait_rise = 0.3;
    assert_int_equal(tide_review_judge(&o, &n, &l, v), 1);
    assert_int_equal(find(v, "mean_queue_s")->fails, 1);
}

static void test_useful_and_lost(void **state)
{
    (void)state;
    tide_review_outcome_t o = base(), n = base();
    tide_review_limits_t l;
    tide_review_limits_default(&l);
    tide_review_verdict_t v[TIDE_REVIEW_METRICS];
    n.useful_utilization = 0.55; /* -0.05 beyond the default 0.02 */
    n.gpu_hours_lost = 50;       /* no limit by default */
    n.slo_attainment = 0.9999;   /* better */
    assert_int_equal(tide_review_judge(&o, &n, &l, v), 1);
    assert_int_equal(find(v, "useful_utilization")->fails, 1);
    assert_int_equal(find(v, "gpu_hours_lost")->fails, 0);
    l.max_lost_rise_h = 10;
    assert_int_equal(tide_review_judge(&o, &n, &l, v), 2);
}

static void test_not_finite_never_fails(void **state)
{
    (void)state;
    tide_review_outcome_t o = base(), n = base();
    tide_review_limits_t l;
    tide_review_limits_default(&l);
    tide_review_verdict_t v[TIDE_REVIEW_METRICS];
    n.slo_attainment = NAN; /* no inference served: nothing to compare */
    assert_int_equal(tide_review_judge(&o, &n, &l, v), 0);
    assert_int_equal(find(v, "slo_attainment")->direction, TIDE_REVIEW_SAME);
}

static void test_outcome_of_row(void **state)
{
    (void)state;
    tide_sweep_row_t r = {.ok = 1, .slo_attainment = 0.99, .useful_utilization = 0.7,
                          .mean_queue_s = 60, .gpu_hours_lost = 2, .preemptions = 3,
                          .jobs_completed = 9, .tier_a_breach_gpu_s = 7200};
    tide_review_outcome_t o;
    tide_review_outcome_of(&r, &o);
    assert_true(o.tier_a_breach_gpu_h == 2.0);
    assert_true(o.preemptions == 3.0);
    assert_true(o.slo_attainment == 0.99);
}

static void test_fronts_dominated(void **state)
{
    (void)state;
    tide_sweep_row_t a[2] = {{.ok = 1, .useful_utilization = 0.5, .slo_attainment = 0.999},
                             {.ok = 1, .useful_utilization = 0.6, .slo_attainment = 0.99}};
    tide_sweep_row_t b[1] = {{.ok = 1, .useful_utilization = 0.55, .slo_attainment = 0.9995}};
    size_t fa[2] = {0, 1}, fb[1] = {0};
    /* b's point beats a's first (more of both), not its second (less useful) */
    assert_int_equal(tide_review_dominated(a, fa, 2, b, fb, 1), 1);
    assert_int_equal(tide_review_dominated(b, fb, 1, a, fa, 2), 0);
    /* equal points do not dominate each other */
    assert_int_equal(tide_review_dominated(a, fa, 2, a, fa, 2), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identical_passes),   cmocka_unit_test(test_slo_drop_limit),
        cmocka_unit_test(test_lower_is_better),    cmocka_unit_test(test_useful_and_lost),
        cmocka_unit_test(test_not_finite_never_fails), cmocka_unit_test(test_outcome_of_row),
        cmocka_unit_test(test_fronts_dominated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
