/* Leases under "elastic": a lease ends before the next forecast rise that
 * needs its GPUs (latest return <= rise - (lead - notice span)), and only the
 * leases the rise needs (in reclaim order); leases are renewed at half their
 * term, so a control-plane outage shorter than the remaining half expires
 * nothing; an expiry is counted as such, not as a late reclaim. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine_fixture.h"

#define DAY 86400
#define RISE (8 * 3600)

/* 5 rps at night, 25 rps (3 replicas of 8 GPUs at 10 rps) from 08:00 to 20:00. */
static double daily(tide_time_t t)
{
    tide_time_t h = ((t % DAY) + DAY) % DAY / 3600;
    return h >= 8 && h < 20 ? 25 : 5;
}

/* elastic on 4x8, one 8-GPU service (floor 1: node 0 is Tier A), with
 * `days` days of daily history before t = 0. */
static ef_t *elastic4(int days)
{
    tide_config_t cfg = ef_cfg("elastic");
    ef_t *f = ef_new("4x8", &cfg);
    ef_service(f, "chat", 8, 10, 1, 300);
    tide_error_t err = {0};
    for (tide_time_t t = -(tide_time_t)days * DAY; t < 0; t += 300)
        assert_int_equal(tide_engine_demand_history(f->e, 0, t, daily(t), &err), 0);
    ef_demand(f, 0, 0, 5);
    return f;
}

static tide_lease_info_t lease_of(const ef_t *f, int32_t job)
{
    tide_job_info_t ji = ef_info(f, job);
    tide_lease_info_t li;
    memset(&li, 0, sizeof li);
    assert_true(ji.lease >= 0);
    assert_int_equal(tide_engine_lease(f->e, ji.lease, &li), 0);
    return li;
}

static void test_lease_ends_before_forecast_rise(void **state)
{
    (void)state;
    ef_t *f = elastic4(3);
    /* three 8-GPU P3 jobs take the three shared nodes at 01:00 */
    static const char *ids[] = {"a", "b", "c"};
    tide_job_spec_t js[3];
    int32_t h[3];
    for (int i = 0; i < 3; i++) {
        js[i] = ef_job(ids[i], 3, 8, 8, 0, 10 * DAY);
        h[i] = ef_submit(f, 3600, &js[i]);
        assert_int_equal(ef_info(f, h[i]).state, TIDE_JOB_RUNNING);
    }
    /* by the half of the first terms, each lease has its place in the
     * reclaim order */
    ef_ticks(f, 4 * 3600, 60);
    tide_forecast_info_t fi;
    memset(&fi, 0, sizeof fi);
    assert_int_equal(tide_engine_forecast(f->e, 0, 600, &fi), 0);
    /* the rise needs 3 replicas: the reserve node and two of the three
     * shared nodes; the notice span is 2 x ckpt (60 s) + a tick */
    tide_time_t ret_lead = fi.lead_s - (2 * 60 + 60);
    int before_rise = 0, long_term = 0;
    for (int i = 0; i < 3; i++) {
        tide_lease_info_t li = lease_of(f, h[i]);
        if (li.latest_return <= RISE - ret_lead)
            before_rise++;
        else if (li.latest_return >= 4 * 3600 + 3 * 3600)
            long_term++;
    }
    if (before_rise != 2 || long_term != 1)
        fail_msg("%d leases end before the 08:00 rise - %lld s, %d run on (want 2 and 1)",
                 before_rise, (long long)ret_lead, long_term);
    /* the same jobs without history: nothing foreseen, 6 h leases */
    ef_t *g = elastic4(0);
    int32_t hg = ef_submit(g, 3600, &js[0]);
    ef_ticks(g, 3600 + 600, 60);
    assert_true(lease_of(g, hg).latest_return >= 3600 + 6 * 3600);
    ef_free(g);
    ef_free(f);
}

static void test_renewal_at_half_and_outage_expires_nothing(void **state)
{
    (void)state;
    ef_t *f = elastic4(0); /* flat 5 rps: no rise ever */
    tide_job_spec_t j = ef_job("a", 3, 8, 8, 0, 10 * DAY);
    int32_t h = ef_submit(f, 60, &j);
    tide_lease_info_t li = lease_of(f, h);
    assert_int_equal(li.latest_return, 60 + 6 * 3600);
    size_t mark = f->nlog;
    ef_ticks(f, 60 + 3 * 3600 - 60, 60);
    assert_int_equal(ef_count(f, mark, TIDE_ACT_LEASE_RENEW, -1, h), 0);
    ef_ticks(f, 60 + 3 * 3600 + 60, 60);
    const ef_act_t *rn = ef_find(f, mark, TIDE_ACT_LEASE_RENEW, -1, h);
    assert_non_null(rn);
    /* at half the term, for a full term */
    assert_true(rn->t >= 60 + 3 * 3600 && rn->t <= 60 + 3 * 3600 + 60);
    assert_int_equal(rn->a.deadline, rn->t + 6 * 3600);
    /* from now on at least half a term is always left: a 2.5 h outage (no
     * step at all) at any time expires nothing */
    ef_ticks(f, 5 * 3600, 60);
    tide_time_t back = 5 * 3600 + 9000;
    ef_demand(f, back, 0, 5);
    assert_int_equal(ef_count(f, 0, TIDE_ACT_JOB_STOP, -1, h), 0);
    assert_int_equal(ef_info(f, h).state, TIDE_JOB_RUNNING);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    assert_int_equal(st.leases_expired, 0);
    assert_int_equal(st.reclaims_late, 0);
    ef_free(f);
}

static void test_expiry_is_not_a_late_reclaim(void **state)
{
    (void)state;
    ef_t *f = elastic4(0);
    tide_job_spec_t ja = ef_job("a", 3, 8, 8, 0, 10 * DAY), jb = ef_job("b", 3, 8, 8, 0, 10 * DAY);
    int32_t a = ef_submit(f, 60, &ja), b = ef_submit(f, 60, &jb);
    tide_time_t end = lease_of(f, a).latest_return;
    /* tide is down past the latest return: the engine stops the job itself
     * when it comes back (a lease expiry), and the backend reports the other */
    tide_event_t ex = ef_ev(TIDE_EV_JOB_EXPIRED);
    ex.job = b;
    ef_step(f, end + 600, &ex, 1);
    const ef_act_t *st = ef_find(f, 0, TIDE_ACT_JOB_STOP, TIDE_R_DEADLINE, a);
    assert_non_null(st);
    assert_non_null(ef_find(f, 0, TIDE_ACT_JOB_STOP, TIDE_R_DEADLINE, b));
    tide_stats_t s;
    tide_engine_stats(f->e, &s);
    assert_int_equal(s.leases_expired, 2);
    assert_int_equal(s.reclaims_late, 0);
    assert_true(s.reclaims_late <= s.reclaims);
    ef_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lease_ends_before_forecast_rise),
        cmocka_unit_test(test_renewal_at_half_and_outage_expires_nothing),
        cmocka_unit_test(test_expiry_is_not_a_late_reclaim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
