/* Queue inspection (tide_engine_queue): per queued job its position in the
 * scheduler's order, why it waits and, for the head of a priority, the
 * expected start from its EASY reservation; the call changes nothing. Every
 * inspection here also asks tide_engine_queue_job for each job: the same. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine_fixture.h"

static ef_t *train_only(const char *cluster)
{
    tide_config_t cfg = ef_cfg("static");
    cfg.split_inf = 0;
    return ef_new(cluster, &cfg);
}

/* A job whose expected end is exactly start + duration (no checkpoint inside). */
static tide_job_spec_t job(const char *id, int prio, int gpus, int gang, tide_time_t dur)
{
    tide_job_spec_t j = ef_job(id, prio, gpus, gang, 0, dur);
    j.ckpt_interval_s = 1000000;
    return j;
}

static size_t inspect(const ef_t *f, tide_queue_info_t *q, size_t cap)
{
    size_t n = tide_engine_queue(f->e, q, cap);
    assert_true(n <= cap);
    for (size_t i = 0; i < n; i++) {
        tide_queue_info_t one;
        assert_int_equal(tide_engine_queue_job(f->e, q[i].job, &one), 0);
        assert_int_equal(one.job, q[i].job);
        assert_int_equal(one.position, q[i].position);
        assert_int_equal(one.reason, q[i].reason);
        assert_int_equal(one.expected_start, q[i].expected_start);
    }
    tide_queue_info_t none;
    assert_int_equal(tide_engine_queue_job(f->e, -1, &none), -1);
    assert_int_equal(tide_engine_queue_job(f->e, tide_engine_jobs(f->e), &none), -1);
    return n;
}

static const tide_queue_info_t *of(const tide_queue_info_t *q, size_t n, const ef_t *f, const char *id)
{
    int32_t h = tide_engine_job_find(f->e, id);
    for (size_t i = 0; i < n; i++)
        if (q[i].job == h)
            return &q[i];
    fail_msg("job %s is not in the queue inspection", id);
    return NULL;
}

/* The head waits for GPUs (Resources) and is expected when the running job
 * ends; the job behind it in the same priority waits on Priority with no
 * estimate; an empty queue gives nothing. */
static void test_head_resources_and_priority(void **state)
{
    (void)state;
    ef_t *f = train_only("2x8");
    assert_int_equal(tide_engine_queue(f->e, NULL, 0), 0);
    tide_job_spec_t a = job("a", 2, 16, 8, 3600), b = job("b", 2, 8, 8, 600), c = job("c", 2, 8, 8, 600);
    ef_submit(f, 0, &a);
    ef_submit(f, 10, &b);
    ef_submit(f, 20, &c);
    assert_int_equal(tide_engine_queue(f->e, NULL, 0), 2);
    tide_queue_info_t q[8];
    size_t n = inspect(f, q, 8);
    assert_int_equal(n, 2);
    const tide_queue_info_t *qb = of(q, n, f, "b"), *qc = of(q, n, f, "c");
    assert_int_equal(qb->position, 1);
    assert_int_equal(qb->reason, TIDE_WAIT_RESOURCES);
    assert_int_equal(qb->expected_start, 3600);
    assert_int_equal(qc->position, 2);
    assert_int_equal(qc->reason, TIDE_WAIT_PRIORITY);
    assert_int_equal(qc->expected_start, TIDE_TIME_NEVER);
    assert_string_equal(tide_wait_name(qb->reason), "Resources");
    assert_string_equal(tide_wait_name(qc->reason), "Priority");
    /* a short cap fills only the first positions and still counts all */
    assert_int_equal(tide_engine_queue(f->e, q, 1), 2);
    assert_int_equal(q[0].position, 1);
    ef_free(f);
}

/* A 16-GPU head waits for the 8-GPU job to end at 3600: a long 8-GPU job that
 * fits the free node now would delay it (Reservation), a short one backfills. */
static void test_reservation_blocks_long_job(void **state)
{
    (void)state;
    ef_t *f = train_only("2x8");
    tide_job_spec_t a = job("a", 2, 8, 8, 3600), big = job("big", 2, 16, 8, 600);
    tide_job_spec_t lng = job("long", 2, 8, 8, 7200), sht = job("short", 2, 8, 8, 600);
    ef_submit(f, 0, &a);
    ef_submit(f, 10, &big);
    ef_submit(f, 20, &lng);
    tide_queue_info_t q[8];
    size_t n = inspect(f, q, 8);
    assert_int_equal(n, 2);
    assert_int_equal(of(q, n, f, "big")->reason, TIDE_WAIT_RESOURCES);
    assert_int_equal(of(q, n, f, "big")->expected_start, 3600);
    assert_int_equal(of(q, n, f, "long")->reason, TIDE_WAIT_RESERVATION);
    assert_int_equal(of(q, n, f, "long")->expected_start, TIDE_TIME_NEVER);
    int32_t hs = ef_submit(f, 30, &sht);
    assert_int_equal(ef_info(f, hs).state, TIDE_JOB_RUNNING); /* backfilled */
    assert_int_equal(inspect(f, q, 8), 2);
    ef_free(f);
}

static void ef_finish(ef_t *f, tide_time_t t, int32_t h)
{
    tide_event_t ev = ef_ev(TIDE_EV_JOB_FINISHED);
    ev.job = h;
    ef_step(f, t, &ev, 1);
}

/* The head's reservation is reused by the passes that change nothing it
 * reads (a long job tried and put back) and recomputed after a change (a
 * short job backfilled, then ended): with the invariant checks on, every
 * reuse is compared with a recomputation (tide_engine_check). Long jobs never
 * delay the head; it starts once the running job has ended. */
static void test_reservation_reused_across_passes(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("static");
    cfg.split_inf = 0;
    cfg.check_invariants = 1;
    ef_t *f = ef_new("2x8", &cfg);
    tide_job_spec_t a = job("a", 2, 8, 8, 3600), big = job("big", 2, 16, 8, 600);
    int32_t ha = ef_submit(f, 0, &a);
    int32_t hb = ef_submit(f, 10, &big), hs = -1;
    char id[16];
    for (int k = 0; k < 6; k++) {
        snprintf(id, sizeof id, "long%d", k);
        tide_job_spec_t lng = job(id, 2, 8, 8, 7200);
        int32_t hl = ef_submit(f, 20 + 100 * k, &lng);
        assert_int_equal(ef_info(f, hl).state, TIDE_JOB_QUEUED);
        if (k == 2) {
            tide_job_spec_t sht = job("short", 2, 8, 8, 60);
            hs = ef_submit(f, 30 + 100 * k, &sht);
            assert_int_equal(ef_info(f, hs).state, TIDE_JOB_RUNNING); /* backfilled */
        }
        if (k == 3)
            ef_finish(f, 20 + 100 * k + 10, hs);
        assert_int_equal(ef_info(f, hb).state, TIDE_JOB_QUEUED);
    }
    for (tide_time_t t = 700; t < 3600; t += 100)
        ef_tick(f, t);
    assert_int_equal(ef_info(f, hb).state, TIDE_JOB_QUEUED);
    ef_finish(f, 3600, ha);
    assert_int_equal(ef_info(f, hb).state, TIDE_JOB_RUNNING);
    tide_error_t err;
    assert_int_equal(tide_engine_check(f->e, &err), 0);
    ef_free(f);
}

/* Positions follow the scheduler's order: P1 before P2 whatever the
 * submission order, and each priority has its own head. */
static void test_positions_by_priority(void **state)
{
    (void)state;
    ef_t *f = train_only("2x8");
    tide_job_spec_t a = job("a", 1, 16, 8, 3600), p3 = job("p3", 3, 8, 8, 600);
    tide_job_spec_t p2 = job("p2", 2, 8, 8, 600), p1 = job("p1", 1, 8, 8, 600);
    ef_submit(f, 0, &a);
    ef_submit(f, 10, &p3);
    ef_submit(f, 20, &p2);
    ef_submit(f, 30, &p1);
    tide_queue_info_t q[8];
    size_t n = inspect(f, q, 8);
    assert_int_equal(n, 3);
    assert_int_equal(of(q, n, f, "p1")->position, 1);
    assert_int_equal(of(q, n, f, "p2")->position, 2);
    assert_int_equal(of(q, n, f, "p3")->position, 3);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(q[i].position, (int)i + 1);
        assert_int_equal(q[i].reason, TIDE_WAIT_RESOURCES); /* every priority's head */
    }
    assert_int_equal(of(q, n, f, "p1")->expected_start, 3600);
    ef_free(f);
}

/* With a node down the healthy GPUs cannot hold a two-node gang job. */
static void test_gang_too_large_when_nodes_down(void **state)
{
    (void)state;
    ef_t *f = train_only("2x8");
    tide_event_t ev = ef_ev(TIDE_EV_NODE_FAILED);
    ev.node = 1;
    ef_step(f, 0, &ev, 1);
    tide_job_spec_t big = job("big", 2, 16, 16, 600);
    ef_submit(f, 10, &big);
    tide_queue_info_t q[4];
    size_t n = inspect(f, q, 4);
    assert_int_equal(n, 1);
    assert_int_equal(q[0].reason, TIDE_WAIT_GANG_TOO_LARGE);
    assert_string_equal(tide_wait_name(q[0].reason), "GangTooLarge");
    assert_int_equal(q[0].expected_start, TIDE_TIME_NEVER);
    ef_free(f);
}

/* A team at its quota with no borrowing waits on Quota. */
static void test_quota(void **state)
{
    (void)state;
    ef_t *f = train_only("4x8");
    tide_team_spec_t t;
    tide_team_spec_default(&t);
    t.name = "t";
    t.quota[0] = 8;
    t.borrow_limit = 0;
    tide_error_t err = {0};
    assert_int_equal(tide_engine_set_team(f->e, &t, &err), 0);
    tide_job_spec_t a = job("a", 2, 8, 8, 3600), b = job("b", 2, 8, 8, 600);
    ef_submit(f, 0, &a);
    ef_submit(f, 10, &b);
    tide_queue_info_t q[4];
    size_t n = inspect(f, q, 4);
    assert_int_equal(n, 1);
    assert_int_equal(q[0].reason, TIDE_WAIT_QUOTA);
    assert_int_equal(q[0].expected_start, TIDE_TIME_NEVER);
    assert_string_equal(tide_wait_name(TIDE_WAIT_COUNT), "?");
    ef_free(f);
}

/* Inspecting after every step changes no decision: two engines fed the same
 * inputs through the simulated world, one inspected at every time point,
 * give the same actions at the same times. */
static void inspect_hook(ef_t *f, tide_time_t t, void *ctx)
{
    (void)t;
    tide_queue_info_t q[16];
    size_t n = tide_engine_queue(f->e, q, 16);
    *(size_t *)ctx += n;
}

static size_t run_mixed(ef_t *f, int inspect_each)
{
    static tide_job_spec_t js[12];
    static char ids[12][8];
    ef_input_t *in = NULL;
    size_t n = 0, cap = 0, seen = 0;
    for (int i = 0; i < 12; i++) {
        snprintf(ids[i], sizeof ids[i], "j%d", i);
        js[i] = ef_job(ids[i], 1 + i % 3, 8 * (1 + i % 3), 8, 0, 900 + 600 * (i % 4));
        ef_in_push(&in, &n, &cap, ef_in_submit(400 * i, &js[i]));
    }
    ef_run(f, in, n, 12 * 3600, inspect_each ? inspect_hook : NULL, &seen);
    free(in);
    return seen;
}

static void test_read_only(void **state)
{
    (void)state;
    ef_t *x = train_only("3x8"), *y = train_only("3x8");
    run_mixed(x, 0);
    assert_true(run_mixed(y, 1) > 0); /* jobs were queued while inspected */
    assert_int_equal(x->nlog, y->nlog);
    for (size_t i = 0; i < x->nlog; i++) {
        assert_int_equal(x->log[i].t, y->log[i].t);
        assert_int_equal(x->log[i].a.kind, y->log[i].a.kind);
        assert_int_equal(x->log[i].a.job, y->log[i].a.job);
        assert_int_equal(x->log[i].a.width, y->log[i].a.width);
    }
    assert_int_equal(ef_count(x, 0, TIDE_ACT_JOB_START, -1, -1) >= 12, 1);
    assert_int_equal(tide_engine_queue(x->e, NULL, 0), 0); /* all done by the end */
    ef_free(x);
    ef_free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_head_resources_and_priority),
        cmocka_unit_test(test_reservation_blocks_long_job),
        cmocka_unit_test(test_reservation_reused_across_passes),
        cmocka_unit_test(test_positions_by_priority),
        cmocka_unit_test(test_gang_too_large_when_nodes_down),
        cmocka_unit_test(test_quota),
        cmocka_unit_test(test_read_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
