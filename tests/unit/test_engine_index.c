/* Unit tests: the engine's indexes over running jobs (src/core/runidx.c,
 * lease.c) stay equal to a scan of the running jobs. grow_slots lists the run
 * slots of elastic jobs: an elastic job moved to another slot (jobs before it
 * finished) still grows. The renewal pass's list of new renewable leases:
 * every job holding a lease is renewed although no pass scans the running
 * jobs. The renewal pass's order keeps each listed lease's key without
 * looking at its job unless noted: a lent elastic job shrunk to its minimum
 * (key change), noticed and stopped is noted each time. Every step ends with
 * tide_engine_check (the fixture), which compares the indexes with a
 * brute-force scan (and every listed key with its job's). The inference
 * pass's indexes (src/core/svcidx.c): the replicas claimed for a service and
 * the domains per claim kind follow a claim made, taken by the replica and
 * dropped; the warming replicas of a service are listed until they are
 * ready. A backfill candidate that would outlast a reservation covering
 * every free GPU is refused without a placement (sched.c surely_delays; the
 * fixture's check places it and confirms respects() refuses it), one that
 * ends before the reservation still starts. The renewal pass's tail
 * (leases past the forecast's need curve) skips the leases before their
 * wake time (the pass, in check builds, confirms each skipped one is not
 * due) and still renews every lease; a noted lease is dropped from the
 * order by binary search, and a key that cannot be found that way (its
 * priority changed under it) falls back to the scan. A blocked head's
 * reservation is computed only when a later candidate reads it (sched.c
 * resv_settle): not in a pass where nothing else could start. The count
 * of lent GPUs of running jobs (runidx.c lent_run) follows a lent job. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine_fixture.h"
#include "core/internal.h"

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

/* ef_elastic4 and a lent elastic job submitted at 10 s: 3 gangs of 8,
 * minimum 2 (*he). */
static ef_t *lent_elastic_job(int32_t *he)
{
    ef_t *f = ef_elastic4();
    tide_job_spec_t el = ef_job("elastic", 3, 24, 8, 2, 100000);
    *he = ef_submit(f, 10, &el);
    return f;
}

/* e->lent_run (runidx.c), the lent GPUs of running jobs not stopping, kept
 * by tide__lent_sync, equals a scan of the running jobs through a lent job's
 * life: lent, shrunk, noticed to stop (its share drops to 0 while it still
 * holds the GPUs), stopped, lent again; and tide_engine_check notices a
 * count that drifted from the scan. */
static void lent_matches_scan(ef_t *f, int *max_seen)
{
    assert_int_equal(f->e->lent_run, tide__lent_scan(f->e));
    if (f->e->lent_run > *max_seen)
        *max_seen = f->e->lent_run;
}

static void test_lent_count_follows_jobs(void **state)
{
    (void)state;
    int32_t he;
    ef_t *f = lent_elastic_job(&he);
    int max_seen = 0;
    lent_matches_scan(f, &max_seen);
    const job_t *j = f->e->jobs[he];
    assert_true(j->n_leased > 0);
    assert_int_equal(f->e->lent_run, j->n_leased);
    ef_ticks(f, 540, 60);
    ef_demand(f, 600, 0, 15); /* shrinks it to its minimum */
    assert_int_equal(ef_info(f, he).width, 2);
    lent_matches_scan(f, &max_seen);
    ef_demand(f, 1860, 0, 25); /* a notice to stop */
    lent_matches_scan(f, &max_seen);
    assert_int_equal(j->state, TIDE_JOB_RECLAIMING);
    assert_true(j->stop_pending && j->alloc.n > 0 && j->n_leased > 0);
    assert_int_equal(f->e->lent_run, 0);
    for (int k = 0; k < 180; k++) {
        ef_ticks(f, 1860 + 60 * (k + 1), 60);
        lent_matches_scan(f, &max_seen);
    }
    assert_int_equal(ef_count(f, 0, TIDE_ACT_JOB_CKPT, -1, he), 1);
    ef_demand(f, 4 * 3600 + 60, 0, 5); /* lent again */
    ef_ticks(f, 86400, 60);
    lent_matches_scan(f, &max_seen);
    assert_true(max_seen >= 16);
    /* a count that drifted from the scan fails the engine check */
    f->e->lent_run++;
    tide_error_t err = {0};
    assert_int_equal(tide_engine_check(f->e, &err), -1);
    assert_non_null(strstr(err.msg, "lent GPUs"));
    f->e->lent_run--;
    assert_int_equal(tide_engine_check(f->e, &err), 0);
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
    int32_t he;
    ef_t *f = lent_elastic_job(&he);
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

/* elastic on 4x8, one 8-GPU service (5 rps per replica at most 1 replica,
 * 15 rps: 2), three 8-GPU jobs filling the shared pool */
static ef_t *claims_setup(void)
{
    ef_t *f = ef_elastic4();
    static const char *ids[3] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        tide_job_spec_t s = ef_job(ids[i], 3, 8, 8, 0, 100000);
        ef_submit(f, 10, &s);
    }
    return f;
}

static void test_service_claims_follow(void **state)
{
    (void)state;
    ef_t *f = claims_setup();
    const tide_engine_t *e = f->e;
    assert_int_equal(e->svcs[0].claimed, 0);
    /* a second replica: a domain claimed for it while its job checkpoints */
    size_t mark = f->nlog;
    ef_demand(f, 600, 0, 15);
    const ef_act_t *ck = ef_find(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_RECLAIM, -1);
    assert_non_null(ck);
    assert_int_equal(e->svcs[0].claimed, 1);
    assert_int_equal(e->n_claimed[CLAIM_SERVICE], 1);
    /* the need gone: the claim is dropped */
    ef_demand(f, 620, 0, 5);
    assert_int_equal(e->svcs[0].claimed, 0);
    assert_int_equal(e->n_claimed[CLAIM_SERVICE], 0);
    /* again, and this time the commit lets the replica take the domain */
    ef_commit(f, 650, ck->a.job, 640);
    mark = f->nlog;
    ef_demand(f, 700, 0, 15);
    const ef_act_t *ck2 = ef_find(f, mark, TIDE_ACT_JOB_CKPT, TIDE_R_RECLAIM, -1);
    assert_non_null(ck2);
    assert_int_equal(e->svcs[0].claimed, 1);
    ef_commit(f, 760, ck2->a.job, 750);
    assert_non_null(ef_find(f, mark, TIDE_ACT_REPLICA_START, -1, -1));
    assert_int_equal(e->svcs[0].claimed, 0);
    assert_int_equal(e->n_claimed[CLAIM_SERVICE], 0);
    assert_true(e->svcs[0].warming >= 1);
    assert_true(e->svcs[0].n_warm_ids >= (size_t)e->svcs[0].warming);
    /* once ready, the next read drops them from the list */
    for (size_t r = 0; r < e->n_reps; r++)
        if (e->reps[r].state == REP_WARMING) {
            tide_event_t ready = ef_ev(TIDE_EV_REPLICA_READY);
            ready.replica = (int32_t)r;
            ef_step(f, 1200, &ready, 1);
        }
    assert_int_equal(e->svcs[0].warming, 0);
    assert_int_equal(tide__warm_due(f->e, 0, 760 + 3600, 0), 0);
    assert_int_equal(e->svcs[0].n_warm_ids, 0);
    assert_int_equal(tide__svc_index_check(e), -1);
    ef_free(f);
}

/* 4x8, training only: 24 GPUs busy until ~1000 s (submitted at 0), a
 * queued head (at 1) needing all 32: its reservation takes every domain at
 * that time, so no surplus is left anywhere; 8 GPUs stay free. */
static ef_t *blocked_head_setup(void)
{
    ef_t *f = train_only();
    tide_job_spec_t run = ef_job("run", 2, 24, 8, 0, 1000);
    int32_t hr = ef_submit(f, 0, &run);
    assert_int_equal(ef_info(f, hr).state, TIDE_JOB_RUNNING);
    tide_job_spec_t big = ef_job("big", 2, 32, 8, 0, 5000);
    int32_t hb = ef_submit(f, 1, &big);
    assert_int_equal(ef_info(f, hb).state, TIDE_JOB_QUEUED);
    return f;
}

static void test_backfill_skip_keeps_decisions(void **state)
{
    (void)state;
    ef_t *f = blocked_head_setup();
    /* elastic, 1 or 2 gangs of 8: ends after the reservation at any width */
    tide_job_spec_t lng = ef_job("long", 2, 16, 8, 1, 100000);
    int32_t hl = ef_submit(f, 2, &lng);
    assert_int_equal(ef_info(f, hl).state, TIDE_JOB_QUEUED);
    tide_job_spec_t shrt = ef_job("short", 2, 8, 8, 0, 100);
    int32_t hs = ef_submit(f, 3, &shrt);
    assert_int_equal(ef_info(f, hs).state, TIDE_JOB_RUNNING);
    ef_tick(f, 60);
    assert_int_equal(ef_info(f, hl).state, TIDE_JOB_QUEUED);
    ef_free(f);
}

/* Listed leases whose wake is after now (the pass skips them). */
static size_t skipped_now(const tide_engine_t *e)
{
    size_t n = 0;
    for (size_t i = 0; i < e->n_lease_order; i++)
        n += e->now < e->lease_order[i].wake && e->lease_order[i].wake_mt == e->min_term;
    return n;
}

static void test_renewal_tail_skips_and_drops(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("elastic");
    cfg.margin_min = cfg.margin_max = 0.05;
    cfg.lease_max_s = 4 * 3600;
    ef_t *f = ef_new("8x8", &cfg);
    /* a restored engine (no marked keys: a snapshot holds the live ones)
     * takes every step too and must decide alike */
    f->shadow_at = 3;
    f->shadow_every = 97;
    ef_service(f, "chat", 8, 10, 1, 300);
    ef_demand(f, 0, 0, 5);
    char ids[40][8];
    int32_t h[40];
    for (int i = 0; i < 40; i++) {
        snprintf(ids[i], sizeof ids[i], "j%d", i);
        int gang = 1 + i % 3, elastic = i % 4 == 0; /* elastic: 2 gangs, 1 at least */
        tide_job_spec_t s = ef_job(ids[i], 2 + i % 2, gang * (1 + elastic), gang, elastic,
                                   3600 * (40 + i % 50));
        h[i] = ef_submit(f, 10 + i, &s);
    }
    size_t most_skipped = 0, most_dead = 0;
    for (int k = 0; k < 24; k++) { /* a rise and a fall every 6 hours */
        tide_time_t t0 = 60 + (tide_time_t)k * 3 * 3600;
        ef_demand(f, t0, 0, k % 2 ? 5 : 25);
        for (tide_time_t t = t0 + 60; t < t0 + 3 * 3600; t += 60) {
            ef_tick(f, t);
            size_t sk = skipped_now(f->e);
            most_skipped = sk > most_skipped ? sk : most_skipped;
            /* dropped keys wait in the order, marked, until compacted */
            most_dead = f->e->n_lease_dead > most_dead ? f->e->n_lease_dead : most_dead;
            assert_int_equal(tide__renew_check(f->e), -1);
        }
    }
    assert_true(most_skipped > 0);
    assert_true(most_dead > 0);
    int renewed = 0;
    for (int i = 0; i < 40; i++)
        renewed += ef_count(f, 0, TIDE_ACT_LEASE_RENEW, -1, h[i]) > 0;
    assert_true(renewed > 5);
    assert_int_equal(f->e->memo_bad, 0);
    assert_true(f->shadows > 10);
    ef_shadow_finish(f);
    tide_engine_destroy(f->shadow);
    tide_actions_free(&f->sacts);
    f->shadow = NULL;
    f->shadow_at = 0;
    /* a listed job's priority changed under the order, then noted: the
     * binary search cannot find its old key, the scan re-keys it */
    tide_engine_t *e = f->e;
    assert_true(e->n_lease_order > 1);
    size_t first = 0; /* the cheapest to reclaim (past dropped keys) */
    while (e->lease_order[first].lease < 0)
        first++;
    int32_t moved = e->lease_order[first].h;
    assert_true(e->jobs[moved]->spec.priority > 1);
    e->jobs[moved]->spec.priority = 1;
    tide__lease_note(e, moved);
    ef_tick(f, 73 * 3600);
    assert_int_equal(tide__renew_check(e), -1);
    /* priority 1 is reclaimed last */
    assert_int_equal(e->lease_order[e->n_lease_order - 1].h, moved);
    ef_free(f);
}

static void test_reservation_only_when_read(void **state)
{
    (void)state;
    ef_t *f = blocked_head_setup();
    /* a candidate of 16 GPUs cannot start on 8: nobody reads the head's
     * reservation, the pass never computes it */
    tide_job_spec_t wide = ef_job("wide", 2, 16, 8, 0, 100);
    int32_t hw = ef_submit(f, 2, &wide);
    assert_int_equal(ef_info(f, hw).state, TIDE_JOB_QUEUED);
    assert_int_equal(f->e->n_resv, 0);
    assert_int_equal(f->e->resv_pend.on, 0);
    /* one of 8 GPUs may: its try reads the reservation (it ends before the
     * head's start, so it starts) */
    tide_job_spec_t shrt = ef_job("short", 2, 8, 8, 0, 100);
    int32_t hs = ef_submit(f, 3, &shrt);
    assert_int_equal(ef_info(f, hs).state, TIDE_JOB_RUNNING);
    assert_int_equal(f->e->n_resv, 1);
    assert_int_equal(f->e->resv[0].shadow >= 1000, 1);
    assert_int_equal(ef_info(f, hw).state, TIDE_JOB_QUEUED);
    ef_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moved_elastic_job_grows),
        cmocka_unit_test(test_every_lease_renewed),
        cmocka_unit_test(test_lent_count_follows_jobs),
        cmocka_unit_test(test_lease_order_follows_changes),
        cmocka_unit_test(test_service_claims_follow),
        cmocka_unit_test(test_backfill_skip_keeps_decisions),
        cmocka_unit_test(test_renewal_tail_skips_and_drops),
        cmocka_unit_test(test_reservation_only_when_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
