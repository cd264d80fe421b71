/* Per-domain bandwidth budgets in the simulated world (src/world/world.c,
 * tide_world_set_uplink): rack uplinks beside the shared storage, shared
 * max-min fairly over both (progressive filling), the QoS on each uplink, and
 * driver transfers (tide_world_xfer_begin: RL weight syncs). Actions are made
 * by hand with the GPUs they name; a real engine supplies the specs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "tide/engine.h"
#include "world/world.h"

/* 8 nodes x 8 GPUs: rack 0 = nodes 0-3 (GPUs 0-31), rack 1 = nodes 4-7. */
enum { J_A, J_B, J_C, J_X, NJ };
static const struct {
    const char *id;
    int gpus;
    int first_gpu; /* where it runs: GPUs first_gpu .. first_gpu + gpus - 1 */
} jdef[NJ] = {
    {"a", 8, 0},   /* rack 0 (node 0) */
    {"b", 8, 32},  /* rack 1 (node 4) */
    {"c", 8, 8},   /* rack 0 (node 1) */
    {"x", 16, 24}, /* nodes 3 and 4: half on rack 0, half on rack 1; no periodic
                      checkpoint */
};

typedef struct ufix {
    tide_cluster_t *c;
    tide_engine_t *e;
    tide_world_t *w;
    int32_t h[NJ];
} ufix_t;

/* Actions with their GPU ids, as the engine hands them to a driver. */
static void apply(ufix_t *f, tide_time_t t, const tide_action_t *v, size_t n,
                  const int32_t *gpus, size_t ngpus)
{
    tide_actions_t acts = {.v = (tide_action_t *)v, .n = n, .cap = n,
                           .gpus = (int32_t *)gpus, .ngpus = ngpus, .gcap = ngpus,
                           .next_wake = TIDE_TIME_NEVER};
    tide_event_t ev[16];
    size_t k = tide_world_pop(f->w, t - 1, ev, 16);
    for (size_t i = 0; i < k; i++)
        assert_int_equal(ev[i].kind, TIDE_EV_JOB_PHASE);
    tide_world_apply(f->w, t, &acts);
}

/* Jobs a, b, c, x (600 GB checkpoints of 60 s: 10 GB/s alone; periodic
 * every iv s) started at 0 on their GPUs; storage of gbps; uplinks up0 and
 * up1 (0 = none); QoS share (0 = off). A service loads 3000 GB over 300 s. */
static void ufix_init(ufix_t *f, double gbps, double up0, double up1, double qos,
                      tide_time_t iv)
{
    tide_error_t err = {0, ""};
    memset(f, 0, sizeof *f);
    f->c = tide_cluster_parse("8x8", &err);
    assert_non_null(f->c);
    assert_int_equal(tide_cluster_racks(f->c), 2);
    tide_config_t cfg;
    tide_config_default(&cfg);
    cfg.policy = "static";
    f->e = tide_engine_create(f->c, &cfg, &err);
    assert_non_null(f->e);
    tide_service_spec_t s = {.name = "chat", .gpus_per_replica = 8, .replica_rps = 10,
                             .warmup_s = 300};
    assert_int_equal(tide_engine_add_service(f->e, &s, &err), 0);
    tide_job_spec_t specs[NJ];
    tide_event_t ev[NJ];
    for (int i = 0; i < NJ; i++) {
        specs[i] = (tide_job_spec_t){.id = jdef[i].id, .team = "t", .priority = 2,
                                     .gpus = jdef[i].gpus, .gang_gpus = 8,
                                     .dp_min = 1, .submit_s = 0, .duration_s = 100000,
                                     .ckpt_interval_s = i == J_X ? 100000 : iv, .ckpt_s = 60,
                                     .restore_s = 120};
        ev[i] = (tide_event_t){.kind = TIDE_EV_JOB_SUBMIT, .job = -1, .service = -1,
                               .replica = -1, .node = -1, .job_spec = &specs[i]};
    }
    tide_actions_t acts;
    tide_actions_init(&acts);
    assert_int_equal(tide_engine_step(f->e, 0, ev, NJ, &acts, &err), 0);
    tide_actions_free(&acts);
    f->w = tide_world_create(f->e);
    tide_world_set_storage(f->w, gbps);
    tide_world_set_uplink(f->w, 0, up0);
    tide_world_set_uplink(f->w, 1, up1);
    tide_world_set_qos(f->w, qos);
    tide_world_set_service_gb(f->w, 0, 3000);
    tide_action_t st[NJ];
    int32_t gpus[64];
    size_t ng = 0;
    for (int i = 0; i < NJ; i++) {
        f->h[i] = tide_engine_job_find(f->e, jdef[i].id);
        tide_world_set_job_gb(f->w, f->h[i], 600);
        st[i] = (tide_action_t){.kind = TIDE_ACT_JOB_START, .job = f->h[i], .service = -1,
                                .replica = -1, .lease = -1, .width = jdef[i].gpus / 8,
                                .gpu_off = ng, .n_gpus = jdef[i].gpus};
        for (int g = 0; g < jdef[i].gpus; g++)
            gpus[ng++] = jdef[i].first_gpu + g;
    }
    apply(f, 0, st, NJ, gpus, ng);
}

static void ufix_free(ufix_t *f)
{
    tide_world_destroy(f->w);
    tide_engine_destroy(f->e);
    tide_cluster_destroy(f->c);
}

/* The engine asks job j to checkpoint at t. */
static void ckpt(ufix_t *f, tide_time_t t, int j)
{
    tide_action_t a = {.kind = TIDE_ACT_JOB_CKPT, .job = f->h[j], .service = -1, .replica = -1,
                       .lease = -1};
    apply(f, t, &a, 1, NULL, 0);
}

/* Replica r of the service starts at t on node `node`'s 8 GPUs. */
static void replica(ufix_t *f, tide_time_t t, int32_t r, int node)
{
    int32_t gpus[8];
    for (int g = 0; g < 8; g++)
        gpus[g] = node * 8 + g;
    tide_action_t a = {.kind = TIDE_ACT_REPLICA_START, .job = -1, .service = 0, .replica = r,
                       .lease = -1, .gpu_off = 0, .n_gpus = 8};
    apply(f, t, &a, 1, gpus, 8);
}

/* Pop everything up to `until`: the last commit time of each job, the
 * replica's ready time (-1: none). */
typedef struct useen {
    tide_time_t commit[NJ], ready;
} useen_t;

static useen_t run(ufix_t *f, tide_time_t until)
{
    useen_t s;
    for (int i = 0; i < NJ; i++)
        s.commit[i] = -1;
    s.ready = -1;
    tide_event_t ev[16];
    for (tide_time_t t = tide_world_next(f->w); t <= until; t = tide_world_next(f->w)) {
        size_t n = tide_world_pop(f->w, t, ev, 16);
        for (size_t i = 0; i < n; i++) {
            for (int j = 0; j < NJ; j++)
                if (ev[i].kind == TIDE_EV_CKPT_COMMITTED && ev[i].job == f->h[j])
                    s.commit[j] = t;
            if (ev[i].kind == TIDE_EV_REPLICA_READY)
                s.ready = t;
        }
    }
    return s;
}

/* Each rack's transfers are held to its own uplink. */
static void racks_limit_their_own_transfers(void **state)
{
    (void)state;
    ufix_t f;
    /* no uplinks: both at their cap (10 GB/s), 60 s */
    ufix_init(&f, 100, 0, 0, 0, 100000);
    ckpt(&f, 500, J_A);
    ckpt(&f, 500, J_B);
    useen_t s = run(&f, 10000);
    assert_int_equal(s.commit[J_A], 560);
    assert_int_equal(s.commit[J_B], 560);
    tide_world_storage_t u;
    assert_int_equal(tide_world_uplink(f.w, 10000, 0, &u), 0);
    assert_float_equal(u.gbps, 0, 0); /* no uplink: no figures */
    assert_int_equal(tide_world_uplink(f.w, 10000, 2, &u), -1);
    ufix_free(&f);
    /* rack 0 at 5 GB/s, rack 1 at 2 GB/s */
    ufix_init(&f, 100, 5, 2, 0, 100000);
    ckpt(&f, 500, J_A);
    ckpt(&f, 500, J_B);
    s = run(&f, 10000);
    assert_int_equal(s.commit[J_A], 500 + 120); /* 600 GB at 5 */
    assert_int_equal(s.commit[J_B], 500 + 300); /* 600 GB at 2 */
    assert_int_equal(tide_world_uplink(f.w, 10000, 0, &u), 0);
    assert_float_equal(u.gbps, 5, 0);
    assert_float_equal(u.peak_gbps, 10, 1e-9);     /* demanded: its cap */
    assert_float_equal(u.rate_peak_gbps, 5, 1e-9); /* got: the uplink */
    assert_float_equal(u.saturated_s, 120, 0);
    assert_float_equal(u.moved_gb, 600, 1e-6);
    assert_int_equal(u.transfers, 1);
    assert_int_equal(tide_world_uplink(f.w, 10000, 1, &u), 0);
    assert_float_equal(u.saturated_s, 300, 0);
    assert_float_equal(u.demand_gb, 10 * 300, 1e-6);
    tide_world_storage_t ws;
    tide_world_storage(f.w, 10000, &ws);
    assert_float_equal(ws.saturated_s, 0, 0); /* the storage was never the limit */
    size_t n;
    assert_float_equal(tide_world_xfer_quantile(f.w, TIDE_XFER_CKPT_ASKED, 1, &n), 300, 1e-9);
    assert_int_equal(n, 2);
    ufix_free(&f);
}

/* Two checkpoints on a saturated rack slow each other; the other rack's
 * checkpoint at the same time is not slowed. */
static void saturated_rack_slows_only_its_own(void **state)
{
    (void)state;
    ufix_t f;
    ufix_init(&f, 100, 10, 10, 0, 100000);
    ckpt(&f, 500, J_A);
    ckpt(&f, 500, J_C);
    ckpt(&f, 500, J_B);
    useen_t s = run(&f, 10000);
    assert_int_equal(s.commit[J_A], 620); /* 5 GB/s each on rack 0 */
    assert_int_equal(s.commit[J_C], 620);
    assert_int_equal(s.commit[J_B], 560); /* alone on rack 1: as declared */
    tide_world_storage_t u0, u1;
    tide_world_uplink(f.w, 10000, 0, &u0);
    tide_world_uplink(f.w, 10000, 1, &u1);
    assert_float_equal(u0.peak_gbps, 20, 1e-9);
    assert_float_equal(u0.saturated_s, 120, 0);
    assert_float_equal(u1.peak_gbps, 10, 1e-9);
    assert_float_equal(u1.saturated_s, 0, 0);
    ufix_free(&f);
    /* a replica loading on rack 1 shares rack 1's uplink only */
    ufix_init(&f, 100, 10, 10, 0, 100000);
    replica(&f, 1000, 7, 5);
    ckpt(&f, 1000, J_B);
    ckpt(&f, 1000, J_A);
    s = run(&f, 10000);
    assert_int_equal(s.commit[J_A], 1060);
    assert_int_equal(s.commit[J_B], 1120);  /* 600 GB at 5 */
    assert_int_equal(s.ready, 1000 + 360);  /* 600 GB at 5, then 2400 GB at 10 */
    ufix_free(&f);
}

/* Both constraints at once: a's rack holds it to 4 GB/s, and b gets what the
 * storage has left (12 - 4 = 8), not an equal share (6). A job on both racks
 * puts half its rate on each. */
static void storage_and_uplink_together(void **state)
{
    (void)state;
    ufix_t f;
    ufix_init(&f, 12, 4, 0, 0, 100000);
    ckpt(&f, 500, J_A);
    ckpt(&f, 500, J_B);
    useen_t s = run(&f, 10000);
    assert_int_equal(s.commit[J_A], 500 + 150); /* 600 GB at 4 */
    assert_int_equal(s.commit[J_B], 500 + 75);  /* 600 GB at 8 */
    tide_world_storage_t ws;
    tide_world_storage(f.w, 10000, &ws);
    assert_float_equal(ws.rate_peak_gbps, 12, 1e-9);
    assert_float_equal(ws.saturated_s, 75, 0); /* demand 20 > 12 while b wrote */
    ufix_free(&f);
    /* the storage binds first: 2 x 6 < the uplink */
    ufix_init(&f, 12, 20, 20, 0, 100000);
    ckpt(&f, 500, J_A);
    ckpt(&f, 500, J_B);
    s = run(&f, 10000);
    assert_int_equal(s.commit[J_A], 600);
    assert_int_equal(s.commit[J_B], 600);
    ufix_free(&f);
    /* x: half its GPUs on rack 0, whose 2 GB/s holds it to 4 GB/s in all */
    ufix_init(&f, 100, 2, 100, 0, 100000);
    ckpt(&f, 500, J_X);
    s = run(&f, 10000);
    assert_int_equal(s.commit[J_X], 500 + 150);
    tide_world_storage_t u;
    tide_world_uplink(f.w, 10000, 1, &u);
    assert_float_equal(u.rate_peak_gbps, 2, 1e-9);
    assert_float_equal(u.moved_gb, 300, 1e-6);
    ufix_free(&f);
}

/* The QoS on an uplink: weight loads first, periodic checkpoints capped at
 * share x the uplink and staggered on it. */
static void qos_on_uplinks(void **state)
{
    (void)state;
    ufix_t f;
    /* a weight load on rack 0 goes before an asked checkpoint there */
    ufix_init(&f, 100, 10, 0, 0.5, 100000);
    replica(&f, 1000, 3, 2);
    ckpt(&f, 1000, J_A);
    useen_t s = run(&f, 10000);
    assert_int_equal(s.ready, 1000 + 300);
    assert_int_equal(s.commit[J_A], 1300 + 60);
    ufix_free(&f);
    /* periodic checkpoints of a and c (rack 0, uplink 10, share 0.5): one at a
     * time, each at 5 GB/s; b's on rack 1 (no uplink) neither waits nor slows */
    ufix_init(&f, 100, 10, 0, 0.5, 1000);
    s = run(&f, 1300);
    tide_world_storage_t ws, u;
    tide_world_storage(f.w, 1300, &ws);
    tide_world_uplink(f.w, 1300, 0, &u);
    assert_int_equal(ws.staggered, 1);
    assert_true(u.ckpt_rate_peak_gbps <= 5 + 1e-9);
    assert_int_equal(s.commit[J_B], 1060);
    tide_time_t first = s.commit[J_A] < s.commit[J_C] ? s.commit[J_A] : s.commit[J_C];
    tide_time_t second = s.commit[J_A] < s.commit[J_C] ? s.commit[J_C] : s.commit[J_A];
    assert_int_equal(first, 1000 + 120);
    assert_int_equal(second, 1120 + 120);
    ufix_free(&f);
}

/* Driver transfers: through the storage and the job's racks; bytes credited
 * for the time since they were asked for; cancelled; reported once. */
static void driver_transfers(void **state)
{
    (void)state;
    ufix_t f;
    ufix_init(&f, 100, 0, 0, 0, 100000);
    /* without the storage model nothing starts */
    tide_world_set_storage(f.w, 0);
    assert_int_equal(tide_world_xfer_begin(f.w, 100, 100, f.h[J_A], 100, 20, 1), 0);
    ufix_free(&f);

    ufix_init(&f, 100, 5, 0, 0, 100000);
    /* 100 GB over 20 s (5 GB/s) on a's rack, asked for at 90: 50 GB already moved */
    assert_int_equal(tide_world_xfer_begin(f.w, 100, 90, f.h[J_A], 100, 20, 7), 1);
    /* and one on b's rack (no uplink) that starts now */
    assert_int_equal(tide_world_xfer_begin(f.w, 100, 100, f.h[J_B], 100, 20, 8), 1);
    /* a third, cancelled */
    assert_int_equal(tide_world_xfer_begin(f.w, 100, 100, f.h[J_C], 100, 20, 9), 1);
    tide_world_xfer_cancel(f.w, 100, 9);
    ckpt(&f, 100, J_C); /* 10 GB/s asked on rack 0: shares its 5 GB/s with tag 7 */
    useen_t s = run(&f, 10000);
    uint64_t tags[4];
    tide_time_t at[4];
    assert_int_equal(tide_world_xfer_finished(f.w, tags, at, 4), 2);
    assert_int_equal(tags[0], 8);
    assert_int_equal(at[0], 120); /* alone on its rack: as declared */
    assert_int_equal(tags[1], 7);
    assert_int_equal(at[1], 120); /* 50 GB left at 2.5 GB/s */
    assert_int_equal(tide_world_xfer_finished(f.w, tags, at, 4), 0);
    /* c: 50 GB at 2.5 until 120, then 550 GB at 5 */
    assert_int_equal(s.commit[J_C], 120 + 110);
    size_t n;
    assert_float_equal(tide_world_xfer_quantile(f.w, TIDE_XFER_SYNC, 1, &n), 30, 1e-9);
    assert_int_equal(n, 2);
    ufix_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(racks_limit_their_own_transfers),
        cmocka_unit_test(saturated_rack_slows_only_its_own),
        cmocka_unit_test(storage_and_uplink_together),
        cmocka_unit_test(qos_on_uplinks),
        cmocka_unit_test(driver_transfers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
