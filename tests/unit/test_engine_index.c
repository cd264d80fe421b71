/* Unit tests: the engine's indexes over running jobs (src/core/runidx.c,
 * lease.c) stay equal to a scan of the running jobs. grow_slots lists the run
 * slots of elastic jobs: an elastic job moved to another slot (jobs before it
 * finished) still grows. The renewal pass's list of new renewable leases:
 * every job holding a lease is renewed although no pass scans the running
 * jobs. The renewal pass's order keeps each listed lease's key without
 * looking at its job unless noted: a lent elastic job shrunk to its minimum
 * (key change), noticed and stopped is noted each time. Every step ends with
 * tide_engine_check (the fixture), which compares the indexes with a
 * brute-force scan (and every listed key with its job's). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine_fixture.h"

static ef_t *train_only(void)
{
    tide_config_t cfg = ef_cfg("static");
    cfg.split_inf = 0;
    return ef_new("4x8", &cfg);
}

static void test_moved_elastic_job_grows(void **state)
{
    (void)state;
    ef_t *f = train_only();
    char ids[24][8];
    int32_t small[24];
    /* 24 one-GPU jobs in slots 0..23; the elastic job takes slot 24 */
    for (int i = 0; i < 24; i++) {
        snprintf(ids[i], sizeof ids[i], "s%d", i);
        tide_job_spec_t s = ef_job(ids[i], 2, 1, 1, 0, 3600);
        small[i] = ef_submit(f, 0, &s);
    }
    tide_job_spec_t el = ef_job("elastic", 2, 16, 4, 1, 36000);
    int32_t he = ef_submit(f, 10, &el);
    assert_int_equal(ef_info(f, he).state, TIDE_JOB_RUNNING);
    assert_int_equal(ef_info(f, he).width, 2); /* 8 GPUs were left */
    /* finishing the jobs in front moves it down the slots (the last running
     * job fills each freed slot); the GPUs come back one domain at a time */
    for (int i = 0; i < 24; i++) {
        tide_event_t fin = ef_ev(TIDE_EV_JOB_FINISHED);
        fin.job = small[i];
        ef_step(f, 100 + i, &fin, 1);
    }
    assert_int_equal(ef_info(f, he).width, 4);
    assert_true(ef_count(f, 0, TIDE_ACT_JOB_RESIZE, -1, he) >= 1);
    ef_free(f);
}

static void test_every_lease_renewed(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("elastic");
    ef_t *f = ef_new("4x8", &cfg);
    ef_service(f, "chat", 1, 1.0, 1, 60);
    ef_demand(f, 0, 0, 1.0);
    char ids[12][8];
    int32_t h[12];
    for (int i = 0; i < 12; i++) {
        snprintf(ids[i], sizeof ids[i], "j%d", i);
        tide_job_spec_t s = ef_job(ids[i], 2 + i % 2, 2, 2, 0, 40 * 86400);
        h[i] = ef_submit(f, 60 * i, &s);
    }
    ef_ticks(f, 3 * 86400, 60);
    int leased = 0;
    for (int i = 0; i < 12; i++) {
        if (ef_count(f, 0, TIDE_ACT_LEASE_GRANT, -1, h[i]) == 0)
            continue;
        leased++;
        /* a lease nobody reclaimed is renewed, never run out */
        assert_true(ef_count(f, 0, TIDE_ACT_LEASE_RENEW, -1, h[i]) >= 1);
        assert_int_equal(ef_info(f, h[i]).state, TIDE_JOB_RUNNING);
    }
    assert_true(leased > 0);
    ef_free(f);
}

static void test_lease_order_follows_changes(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("elastic");
    cfg.margin_min = cfg.margin_max = 0.05;
    ef_t *f = ef_new("4x8", &cfg);
    ef_service(f, "chat", 8, 10, 1, 300);
    ef_demand(f, 0, 0, 5);
    /* a lent elastic job: 3 gangs of 8, minimum 2 */
    tide_job_spec_t el = ef_job("elastic", 3, 24, 8, 2, 100000);
    int32_t he = ef_submit(f, 10, &el);
    assert_int_equal(ef_info(f, he).width, 3);
    ef_ticks(f, 540, 60); /* renewal passes list it (shrinkable) */
    assert_true(ef_count(f, 0, TIDE_ACT_LEASE_GRANT, -1, he) >= 1);
    /* a rise to 2 replicas shrinks it to its minimum: its key changes */
    ef_demand(f, 600, 0, 15);
    assert_int_equal(ef_info(f, he).width, 2);
    ef_ticks(f, 1800, 60);
    assert_int_equal(ef_info(f, he).state, TIDE_JOB_RUNNING);
    /* a rise past it: a notice (its lease is noticed), the job stops */
    ef_demand(f, 1860, 0, 25);
    ef_ticks(f, 3 * 3600, 60);
    assert_int_equal(ef_count(f, 0, TIDE_ACT_JOB_CKPT, -1, he), 1);
    assert_true(ef_count(f, 0, TIDE_ACT_LEASE_RETURN, -1, he) >= 1);
    /* demand falls: it is lent again and renewed */
    size_t mark = f->nlog;
    ef_demand(f, 4 * 3600 + 60, 0, 5);
    ef_ticks(f, 2 * 86400, 60);
    assert_true(ef_count(f, mark, TIDE_ACT_LEASE_RENEW, -1, -1) >= 1);
    ef_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moved_elastic_job_grows),
        cmocka_unit_test(test_every_lease_renewed),
        cmocka_unit_test(test_lease_order_follows_changes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
