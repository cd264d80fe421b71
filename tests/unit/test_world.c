/* The simulated world (src/sim/world.c): the events it reports, and when, for
 * actions constructed by hand. A real engine on a small cluster supplies the
 * job and service specs; its own actions are ignored. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "world/world.h"
#include "tide/engine.h"

typedef struct fixture {
    tide_cluster_t *c;
    tide_engine_t *e;
    tide_world_t *w;
    tide_actions_t acts;
} fixture_t;

/* Jobs known to the engine: id, gpus, gang, duration, interval, ckpt, restore. */
static const struct {
    const char *id;
    int gpus, gang;
    tide_time_t duration, interval, ckpt, restore;
} jobs[] = {
    {"long-interval", 8, 8, 3600, 100000, 60, 120}, /* 0: no periodic checkpoint in the way */
    {"periodic", 8, 8, 7200, 1800, 60, 120},        /* 1 */
    {"wide", 16, 8, 3600, 100000, 60, 120},         /* 2: dp_max 2 */
    {"ckpt", 16, 8, 3600, 1800, 60, 120},           /* 3: dp_max 2 */
    {"far", 8, 8, 20000, 100000, 60, 120},          /* 4: finishes past the queue's window */
};
#define NJOBS (sizeof jobs / sizeof jobs[0])

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    tide_error_t err = {0};
    f->c = tide_cluster_parse("4x8", &err);
    assert_non_null(f->c);
    tide_config_t cfg;
    tide_config_default(&cfg);
    cfg.policy = "static";
    f->e = tide_engine_create(f->c, &cfg, &err);
    if (!f->e)
        fail_msg("engine: %s", err.msg);
    tide_service_spec_t s = {.name = "chat", .gpus_per_replica = 8, .replica_rps = 10,
                             .min_replicas = 0, .warmup_s = 300};
    assert_int_equal(tide_engine_add_service(f->e, &s, &err), 0);
    tide_job_spec_t specs[NJOBS];
    tide_event_t ev[NJOBS];
    memset(ev, 0, sizeof ev);
    for (size_t i = 0; i < NJOBS; i++) {
        specs[i] = (tide_job_spec_t){.id = jobs[i].id, .team = "t", .priority = 2,
                                     .gpus = jobs[i].gpus, .gang_gpus = jobs[i].gang,
                                     .dp_min = 1, .duration_s = jobs[i].duration,
                                     .ckpt_interval_s = jobs[i].interval,
                                     .ckpt_s = jobs[i].ckpt, .restore_s = jobs[i].restore};
        if (tide_job_spec_normalize(&specs[i], &err) != 0)
            fail_msg("job %s: %s", jobs[i].id, err.msg);
        ev[i] = (tide_event_t){.kind = TIDE_EV_JOB_SUBMIT, .job = -1, .service = -1,
                               .replica = -1, .node = -1, .job_spec = &specs[i]};
    }
    tide_actions_init(&f->acts);
    if (tide_engine_step(f->e, 0, ev, NJOBS, &f->acts, &err) != 0)
        fail_msg("step: %s", err.msg);
    f->w = tide_world_create(f->e);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    tide_world_destroy(f->w);
    tide_actions_free(&f->acts);
    tide_engine_destroy(f->e);
    tide_cluster_destroy(f->c);
    free(f);
    return 0;
}

static int32_t handle(fixture_t *f, const char *id)
{
    int32_t h = tide_engine_job_find(f->e, id);
    assert_true(h >= 0);
    return h;
}

/* Apply one action at time t. */
static void act(fixture_t *f, tide_time_t t, tide_action_t a)
{
    tide_actions_t acts = {.v = &a, .n = 1, .cap = 1, .next_wake = TIDE_TIME_NEVER};
    tide_world_apply(f->w, t, &acts);
}

static void job_act(fixture_t *f, tide_time_t t, int kind, int32_t job, int width)
{
    act(f, t, (tide_action_t){.kind = kind, .job = job, .service = -1, .replica = -1,
                              .lease = -1, .width = width});
}

static void rep_act(fixture_t *f, tide_time_t t, int kind, int32_t rep, int32_t svc)
{
    act(f, t, (tide_action_t){.kind = kind, .job = -1, .service = svc, .replica = rep,
                              .lease = -1});
}

/* Expect exactly one event, at time t (the world's next time), of this kind. */
static tide_event_t expect_one(fixture_t *f, tide_time_t t, int kind)
{
    assert_int_equal(tide_world_next(f->w), t);
    tide_event_t ev[4];
    if (t > 0)
        assert_int_equal(tide_world_pop(f->w, t - 1, ev, 4), 0);
    size_t n = tide_world_pop(f->w, t, ev, 1);
    assert_int_equal(n, 1);
    if (ev[0].kind != kind)
        fail_msg("at t=%lld expected %s, got %s", (long long)t, tide_event_name(kind),
                 tide_event_name(ev[0].kind));
    return ev[0];
}

static void expect_phase(fixture_t *f, tide_time_t t, int32_t job, int phase, double value)
{
    tide_event_t ev = expect_one(f, t, TIDE_EV_JOB_PHASE);
    assert_int_equal(ev.job, job);
    assert_int_equal(ev.phase, phase);
    assert_float_equal(ev.value, value, 1e-6);
}

static void expect_commit(fixture_t *f, tide_time_t t, int32_t job, double value)
{
    tide_event_t ev = expect_one(f, t, TIDE_EV_CKPT_COMMITTED);
    assert_int_equal(ev.job, job);
    assert_float_equal(ev.value, value, 1e-6);
}

static void expect_finish(fixture_t *f, tide_time_t t, int32_t job)
{
    tide_event_t ev = expect_one(f, t, TIDE_EV_JOB_FINISHED);
    assert_int_equal(ev.job, job);
}

static void expect_nothing(fixture_t *f)
{
    assert_true(tide_world_next(f->w) == TIDE_TIME_NEVER);
}

/* ------------------------------------------------------------------ tests */

static void start_then_finish(void **state)
{
    fixture_t *f = *state;
    int32_t j = handle(f, "long-interval");
    job_act(f, 100, TIDE_ACT_JOB_START, j, 1);
    tide_world_job_t wj;
    assert_int_equal(tide_world_job(f->w, j, &wj), 0);
    assert_int_equal(wj.phase, TIDE_PHASE_TRAINING); /* no commit: no restore, no event */
    expect_finish(f, 3700, j);
    expect_nothing(f);
    assert_int_equal(tide_world_job(f->w, j, &wj), 0);
    assert_int_equal(wj.active, 0);
}

static void periodic_checkpoints(void **state)
{
    fixture_t *f = *state;
    int32_t j = handle(f, "periodic");
    job_act(f, 0, TIDE_ACT_JOB_START, j, 1);
    /* train 1800, checkpoint 60 (no progress), and so on */
    expect_phase(f, 1800, j, TIDE_PHASE_CHECKPOINTING, 1800);
    expect_commit(f, 1860, j, 1800);
    expect_phase(f, 3660, j, TIDE_PHASE_CHECKPOINTING, 3600);
    expect_commit(f, 3720, j, 3600);
    expect_phase(f, 5520, j, TIDE_PHASE_CHECKPOINTING, 5400);
    expect_commit(f, 5580, j, 5400);
    /* the last 1800 s end exactly when the next checkpoint would start: finish wins */
    expect_finish(f, 7380, j);
    expect_nothing(f);
}

static void ckpt_signal_while_training(void **state)
{
    fixture_t *f = *state;
    int32_t j = handle(f, "periodic");
    job_act(f, 0, TIDE_ACT_JOB_START, j, 1);
    assert_int_equal(tide_world_pop(f->w, 500, (tide_event_t[1]){{0}}, 1), 0);
    job_act(f, 500, TIDE_ACT_JOB_CKPT, j, 0);
    expect_phase(f, 500, j, TIDE_PHASE_CHECKPOINTING, 500);
    /* a second signal while checkpointing changes nothing */
    job_act(f, 530, TIDE_ACT_JOB_CKPT, j, 0);
    expect_commit(f, 560, j, 500);
    /* the periodic clock restarts at the commit */
    expect_phase(f, 2360, j, TIDE_PHASE_CHECKPOINTING, 2300);
}

static void ckpt_signal_while_restoring(void **state)
{
    fixture_t *f = *state;
    int32_t j = handle(f, "periodic");
    job_act(f, 0, TIDE_ACT_JOB_START, j, 1);
    expect_phase(f, 1800, j, TIDE_PHASE_CHECKPOINTING, 1800);
    expect_commit(f, 1860, j, 1800);
    job_act(f, 2000, TIDE_ACT_JOB_STOP, j, 0);
    job_act(f, 2500, TIDE_ACT_JOB_START, j, 1); /* restoring until 2620 */
    tide_world_job_t wj;
    assert_int_equal(tide_world_job(f->w, j, &wj), 0);
    assert_int_equal(wj.phase, TIDE_PHASE_RESTORING);
    job_act(f, 2550, TIDE_ACT_JOB_CKPT, j, 0);
    expect_commit(f, 2550, j, 1800); /* immediate: nothing new to save */
    expect_phase(f, 2620, j, TIDE_PHASE_TRAINING, 1800);
    expect_phase(f, 4420, j, TIDE_PHASE_CHECKPOINTING, 3600);
}

static void resize_halves_speed(void **state)
{
    fixture_t *f = *state;
    int32_t j = handle(f, "wide");
    tide_job_info_t info;
    assert_int_equal(tide_engine_job(f->e, j, &info), 0);
    assert_int_equal(info.dp_max, 2);
    job_act(f, 0, TIDE_ACT_JOB_START, j, 2);
    assert_int_equal(tide_world_next(f->w), 3600);
    assert_int_equal(tide_world_pop(f->w, 1000, (tide_event_t[1]){{0}}, 1), 0);
    job_act(f, 1000, TIDE_ACT_JOB_RESIZE, j, 1);
    tide_world_job_t wj;
    assert_int_equal(tide_world_job(f->w, j, &wj), 0);
    assert_float_equal(wj.progress, 1000, 1e-9);
    /* 2600 full-width seconds left at half speed: 5200 s; the old 3600 is dropped */
    expect_finish(f, 6200, j);
    expect_nothing(f);
}

static void resize_fractional_finish_rounds_up(void **state)
{
    fixture_t *f = *state;
    int32_t j = handle(f, "wide");
    job_act(f, 0, TIDE_ACT_JOB_START, j, 1); /* half speed: 7200 s */
    assert_int_equal(tide_world_pop(f->w, 1001, (tide_event_t[1]){{0}}, 1), 0);
    job_act(f, 1001, TIDE_ACT_JOB_RESIZE, j, 2); /* progress 500.5 */
    /* 3099.5 s left at full speed: exact end 4100.5, reported at 4101 */
    expect_finish(f, 4101, j);
}

static void stop_then_restart_restores(void **state)
{
    fixture_t *f = *state;
    int32_t j = handle(f, "ckpt");
    job_act(f, 0, TIDE_ACT_JOB_START, j, 2);
    expect_phase(f, 1800, j, TIDE_PHASE_CHECKPOINTING, 1800);
    expect_commit(f, 1860, j, 1800);
    job_act(f, 2000, TIDE_ACT_JOB_STOP, j, 0); /* 140 s of work lost */
    expect_nothing(f);
    tide_world_job_t wj;
    assert_int_equal(tide_world_job(f->w, j, &wj), 0);
    assert_int_equal(wj.active, 0);
    assert_float_equal(wj.progress, 1800, 1e-9);
    job_act(f, 3000, TIDE_ACT_JOB_START, j, 2);
    expect_phase(f, 3120, j, TIDE_PHASE_TRAINING, 1800);
    expect_finish(f, 4920, j);
    expect_nothing(f);
}

static void stop_before_any_commit_starts_over(void **state)
{
    fixture_t *f = *state;
    int32_t j = handle(f, "long-interval");
    job_act(f, 0, TIDE_ACT_JOB_START, j, 1);
    job_act(f, 1000, TIDE_ACT_JOB_STOP, j, 0);
    expect_nothing(f);
    job_act(f, 2000, TIDE_ACT_JOB_START, j, 1); /* nothing committed: trains at once */
    expect_finish(f, 5600, j);
}

static void replica_ready_after_warmup(void **state)
{
    fixture_t *f = *state;
    rep_act(f, 10, TIDE_ACT_REPLICA_START, 5, 0);
    tide_event_t ev = expect_one(f, 310, TIDE_EV_REPLICA_READY);
    assert_int_equal(ev.replica, 5);
    assert_int_equal(ev.service, 0);
    expect_nothing(f);
}

/* A start carrying a warm-up credit (weights staged before it) is ready
 * credit seconds sooner; a credit above the warm-up makes it ready at once. */
static void replica_credit_shortens_warmup(void **state)
{
    fixture_t *f = *state;
    act(f, 10, (tide_action_t){.kind = TIDE_ACT_REPLICA_START, .job = -1, .service = 0,
                               .replica = 5, .lease = -1, .credit = 120});
    tide_event_t ev = expect_one(f, 190, TIDE_EV_REPLICA_READY);
    assert_int_equal(ev.replica, 5);
    expect_nothing(f);
    act(f, 200, (tide_action_t){.kind = TIDE_ACT_REPLICA_START, .job = -1, .service = 0,
                                .replica = 6, .lease = -1, .credit = 900});
    ev = expect_one(f, 200, TIDE_EV_REPLICA_READY);
    assert_int_equal(ev.replica, 6);
    expect_nothing(f);
}

static void stale_events_dropped(void **state)
{
    fixture_t *f = *state;
    /* a replica stopped while warming never becomes ready */
    rep_act(f, 0, TIDE_ACT_REPLICA_START, 1, 0);
    rep_act(f, 100, TIDE_ACT_REPLICA_STOP, 1, 0);
    expect_nothing(f);
    /* a replica restarted: only the second start counts */
    rep_act(f, 200, TIDE_ACT_REPLICA_START, 2, 0);
    rep_act(f, 250, TIDE_ACT_REPLICA_STOP, 2, 0);
    rep_act(f, 400, TIDE_ACT_REPLICA_START, 2, 0);
    tide_event_t ev = expect_one(f, 700, TIDE_EV_REPLICA_READY);
    assert_int_equal(ev.replica, 2);
    /* a checkpoint signalled then the job stopped in the same step: no phase event */
    int32_t j = handle(f, "periodic");
    job_act(f, 1000, TIDE_ACT_JOB_START, j, 1);
    tide_action_t two[2] = {
        {.kind = TIDE_ACT_JOB_CKPT, .job = j, .service = -1, .replica = -1, .lease = -1},
        {.kind = TIDE_ACT_JOB_STOP, .job = j, .service = -1, .replica = -1, .lease = -1},
    };
    tide_actions_t acts = {.v = two, .n = 2, .cap = 2, .next_wake = TIDE_TIME_NEVER};
    tide_world_apply(f->w, 1500, &acts);
    expect_nothing(f);
    /* actions on unknown or idle jobs are ignored */
    job_act(f, 1600, TIDE_ACT_JOB_CKPT, j, 0);
    job_act(f, 1600, TIDE_ACT_JOB_RESIZE, 9999, 1);
    job_act(f, 1600, TIDE_ACT_JOB_START, 9999, 1);
    expect_nothing(f);
}

static void order_is_time_then_scheduling(void **state)
{
    fixture_t *f = *state;
    int32_t a = handle(f, "long-interval"), b = handle(f, "wide");
    job_act(f, 0, TIDE_ACT_JOB_START, b, 2);  /* finishes at 3600 */
    job_act(f, 0, TIDE_ACT_JOB_START, a, 1);  /* finishes at 3600, scheduled later */
    rep_act(f, 3300, TIDE_ACT_REPLICA_START, 7, 0); /* ready at 3600, scheduled last */
    tide_event_t ev[8];
    size_t n = tide_world_pop(f->w, 4000, ev, 8);
    assert_int_equal(n, 3);
    assert_int_equal(ev[0].kind, TIDE_EV_JOB_FINISHED);
    assert_int_equal(ev[0].job, b);
    assert_int_equal(ev[1].kind, TIDE_EV_JOB_FINISHED);
    assert_int_equal(ev[1].job, a);
    assert_int_equal(ev[2].kind, TIDE_EV_REPLICA_READY);
    /* max limits the batch; the rest stays for the next call */
    job_act(f, 5000, TIDE_ACT_JOB_START, a, 1);
    rep_act(f, 5000, TIDE_ACT_REPLICA_START, 8, 0);
    rep_act(f, 5000, TIDE_ACT_REPLICA_START, 9, 0);
    assert_int_equal(tide_world_pop(f->w, 5300, ev, 1), 1);
    assert_int_equal(ev[0].replica, 8);
    assert_int_equal(tide_world_pop(f->w, 5300, ev, 8), 1);
    assert_int_equal(ev[0].replica, 9);
    assert_int_equal(tide_world_next(f->w), 8600);
}

/* Two jobs' timers interleaved: each fired timer schedules the job's next
 * one in the slot the fired one leaves (tide_world_pop), which must still
 * come out after the other job's earlier ones; a finish schedules nothing
 * (the slot is dropped). */
static void interleaved_timers(void **state)
{
    fixture_t *f = *state;
    int32_t p = handle(f, "periodic"), c = handle(f, "ckpt");
    job_act(f, 0, TIDE_ACT_JOB_START, p, 1);
    job_act(f, 1000, TIDE_ACT_JOB_START, c, 2);
    expect_phase(f, 1800, p, TIDE_PHASE_CHECKPOINTING, 1800);
    expect_commit(f, 1860, p, 1800); /* its next start (3660) goes after c's 2800 */
    expect_phase(f, 2800, c, TIDE_PHASE_CHECKPOINTING, 1800);
    expect_commit(f, 2860, c, 1800);
    expect_phase(f, 3660, p, TIDE_PHASE_CHECKPOINTING, 3600);
    expect_commit(f, 3720, p, 3600);
    expect_finish(f, 4660, c);
    expect_phase(f, 5520, p, TIDE_PHASE_CHECKPOINTING, 5400);
    expect_commit(f, 5580, p, 5400);
    expect_finish(f, 7380, p);
    expect_nothing(f);
}

static void deterministic(void **state)
{
    fixture_t *f = *state;
    /* the same script twice on two worlds gives the same events */
    tide_event_t out[2][64];
    size_t n[2];
    for (int k = 0; k < 2; k++) {
        tide_world_t *w = tide_world_create(f->e);
        tide_world_t *save = f->w;
        f->w = w;
        int32_t j = handle(f, "ckpt");
        job_act(f, 0, TIDE_ACT_JOB_START, j, 2);
        n[k] = tide_world_pop(f->w, 2000, out[k], 64);
        job_act(f, 2000, TIDE_ACT_JOB_RESIZE, j, 1);
        n[k] += tide_world_pop(f->w, 100000, out[k] + n[k], 64 - n[k]);
        f->w = save;
        tide_world_destroy(w);
    }
    assert_int_equal(n[0], n[1]);
    assert_true(n[0] >= 4);
    assert_memory_equal(out[0], out[1], n[0] * sizeof out[0][0]);
    assert_int_equal(out[0][n[0] - 1].kind, TIDE_EV_JOB_FINISHED);
}

/* The world's queue keeps the next 8192 s in one-second buckets and later
 * entries in a heap, moved into their bucket when their time comes within
 * the window; entries pushed before the window (a driver going back in
 * time) go to a heap of their own. All come out as from one heap: by time,
 * then in the order they were scheduled. */
static void queue_window(void **state)
{
    fixture_t *f = *state;
    int32_t far = handle(f, "far"), p = handle(f, "periodic"), a = handle(f, "long-interval");
    int32_t wide = handle(f, "wide"), c = handle(f, "ckpt");
    job_act(f, 0, TIDE_ACT_JOB_START, far, 1); /* finishes at 20000: past the window */
    job_act(f, 0, TIDE_ACT_JOB_START, p, 1);
    expect_phase(f, 1800, p, TIDE_PHASE_CHECKPOINTING, 1800);
    expect_commit(f, 1860, p, 1800);
    expect_phase(f, 3660, p, TIDE_PHASE_CHECKPOINTING, 3600);
    expect_commit(f, 3720, p, 3600);
    expect_phase(f, 5520, p, TIDE_PHASE_CHECKPOINTING, 5400);
    expect_commit(f, 5580, p, 5400);
    expect_finish(f, 7380, p);
    /* popped at 13600, the window reaches 20000: far's finish moves in ... */
    job_act(f, 10000, TIDE_ACT_JOB_START, wide, 2);
    expect_finish(f, 13600, wide);
    /* ... before a finish scheduled later for the same second */
    job_act(f, 16400, TIDE_ACT_JOB_START, a, 1);
    expect_finish(f, 20000, far);
    expect_finish(f, 20000, a);
    /* the window is empty: a later entry goes there, an earlier one first */
    job_act(f, 21000, TIDE_ACT_JOB_START, wide, 2); /* finishes at 24600 */
    job_act(f, 500, TIDE_ACT_JOB_START, c, 2);      /* before the window */
    expect_phase(f, 2300, c, TIDE_PHASE_CHECKPOINTING, 1800);
    expect_commit(f, 2360, c, 1800);
    expect_finish(f, 4160, c);
    expect_finish(f, 24600, wide);
    /* two finishes past the window, scheduled in turn, come out in turn */
    job_act(f, 30000, TIDE_ACT_JOB_START, far, 1); /* 50000 */
    job_act(f, 46400, TIDE_ACT_JOB_START, a, 1);   /* 50000, scheduled later */
    expect_finish(f, 50000, far);
    expect_finish(f, 50000, a);
    expect_nothing(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(start_then_finish, setup, teardown),
        cmocka_unit_test_setup_teardown(periodic_checkpoints, setup, teardown),
        cmocka_unit_test_setup_teardown(ckpt_signal_while_training, setup, teardown),
        cmocka_unit_test_setup_teardown(ckpt_signal_while_restoring, setup, teardown),
        cmocka_unit_test_setup_teardown(resize_halves_speed, setup, teardown),
        cmocka_unit_test_setup_teardown(resize_fractional_finish_rounds_up, setup, teardown),
        cmocka_unit_test_setup_teardown(stop_then_restart_restores, setup, teardown),
        cmocka_unit_test_setup_teardown(stop_before_any_commit_starts_over, setup, teardown),
        cmocka_unit_test_setup_teardown(replica_ready_after_warmup, setup, teardown),
        cmocka_unit_test_setup_teardown(replica_credit_shortens_warmup, setup, teardown),
        cmocka_unit_test_setup_teardown(stale_events_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(order_is_time_then_scheduling, setup, teardown),
        cmocka_unit_test_setup_teardown(interleaved_timers, setup, teardown),
        cmocka_unit_test_setup_teardown(deterministic, setup, teardown),
        cmocka_unit_test_setup_teardown(queue_window, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
