/* Failure domains: a service's replicas (and the Tier A reserve) spread
 * across racks and power domains within spread_max_skew; losing the rack
 * that holds the most replicas leaves each service its stated share of the
 * floor, and would not without spreading. Network partitions: an unreachable
 * node's replicas stop counting, its gangs are not placed again until the
 * node is fenced, nothing is allocated twice. Rank loss: an elastic job
 * shrinks past the failed gang and grows back; a rigid one restarts. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine_fixture.h"

static uint64_t rnd(uint64_t *st)
{
    uint64_t z = (*st += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A fixture on one node group with explicit rack and power sizes. */
static ef_t *ef_topo(int nodes, int gpn, int dom_nodes, int rack_nodes, int power_nodes,
                     const tide_config_t *cfg)
{
    ef_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    tide_error_t err = {0};
    f->c = tide_cluster_create();
    tide_node_group_t g = {.count = nodes, .gpus_per_node = gpn, .domain_nodes = dom_nodes,
                           .rack_nodes = rack_nodes, .power_nodes = power_nodes};
    if (tide_cluster_add_group(f->c, &g, &err) < 0)
        fail_msg("cluster: %s", err.msg);
    f->e = tide_engine_create(f->c, cfg, &err);
    if (!f->e)
        fail_msg("engine: %s", err.msg);
    f->ngpus = tide_cluster_gpus(f->c);
    ef_init_tables(f, cfg->policy);
    /* snapshots: a restored engine takes every step too and must decide alike
     * (spread counts, unreachable nodes, rank-loss wake-ups survive a restore) */
    f->shadow_at = 3;
    f->shadow_every = 7;
    return f;
}

static void ef_done(ef_t *f)
{
    if (f->shadow)
        ef_shadow_finish(f);
    ef_free(f);
}

static tide_node_info_t node_info(const ef_t *f, int n)
{
    tide_node_info_t ni;
    assert_int_equal(tide_cluster_node(f->c, n, &ni), 0);
    return ni;
}

/* Placed (not stopped) replicas of service s per rack (power 0) or power
 * domain (power 1) into cnt[], and their total. */
static int per_domain(const ef_t *f, int s, int power, int *cnt, int n)
{
    memset(cnt, 0, (size_t)n * sizeof *cnt);
    int total = 0;
    for (int r = 0; r < tide_engine_replicas(f->e); r++) {
        tide_replica_info_t ri;
        tide_engine_replica(f->e, r, &ri);
        if (ri.service != s || ri.stopped)
            continue;
        int32_t owner;
        for (int g = 0; g < f->ngpus; g++)
            if (tide_engine_gpu_owner(f->e, g, &owner) == 2 && owner == r) {
                tide_node_info_t ni = node_info(f, ef_node_of(f, g));
                cnt[power ? ni.power : ni.rack]++;
                break;
            }
        total++;
    }
    return total;
}

static int busiest(const int *cnt, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (cnt[i] > cnt[b])
            b = i;
    return b;
}

/* Step to t reporting every warming replica ready (warm-ups take one tick). */
static void tick_ready(ef_t *f, tide_time_t t)
{
    tide_event_t ev[256];
    size_t n = 0;
    for (int r = 0; r < tide_engine_replicas(f->e) && n < 256; r++) {
        tide_replica_info_t ri;
        tide_engine_replica(f->e, r, &ri);
        if (!ri.stopped && !ri.ready) {
            ev[n] = ef_ev(TIDE_EV_REPLICA_READY);
            ev[n++].replica = r;
        }
    }
    ef_step(f, t, ev, n);
}

static void ticks_ready(ef_t *f, tide_time_t until)
{
    for (tide_time_t t = f->now + 60; t <= until; t += 60)
        tick_ready(f, t);
}

/* Fail (up 0) or recover every node of rack r in one step. */
static void rack_event(ef_t *f, tide_time_t t, int rack, int up)
{
    tide_event_t ev[64];
    size_t n = 0;
    for (int i = 0; i < tide_cluster_nodes(f->c) && n < 64; i++)
        if (node_info(f, i).rack == rack) {
            ev[n] = ef_ev(up ? TIDE_EV_NODE_RECOVERED : TIDE_EV_NODE_FAILED);
            ev[n++].node = i;
        }
    ef_step(f, t, ev, n);
}

/* 16 nodes of 8 GPUs, racks of 4 nodes: a service of 8-GPU replicas with a
 * floor of 4. Returns the fixture after the floor is placed. */
/* elastic on `nodes` nodes of 8 GPUs (racks and power domains as given),
 * one service of 8-GPU replicas with floor `floor_n`, run to `until`. */
static ef_t *floor_on(int nodes, int rack_nodes, int power_nodes, int floor_n, int spread,
                      double share, int check, tide_time_t until)
{
    tide_config_t cfg = ef_cfg("elastic");
    cfg.spread_max_skew = spread;
    cfg.survive_share = share;
    cfg.check_invariants = check;
    ef_t *f = ef_topo(nodes, 8, 1, rack_nodes, power_nodes, &cfg);
    f->check = check;
    ef_service(f, "chat", 8, 10, floor_n, 300);
    ef_demand(f, 0, 0, 5);
    ticks_ready(f, until);
    return f;
}

static ef_t *four_racks(int spread, double share)
{
    return floor_on(16, 4, 4, 4, spread, share, 1, 600);
}

static void test_floor_spread_over_racks(void **state)
{
    (void)state;
    ef_t *f = four_racks(1, 0.75);
    int cnt[4];
    assert_int_equal(per_domain(f, 0, 0, cnt, 4), 4);
    for (int r = 0; r < 4; r++)
        assert_int_equal(cnt[r], 1);
    /* the Tier A reserve itself spans the racks */
    int a_racks[4] = {0};
    for (int g = 0; g < f->ngpus; g++)
        if (tide_engine_gpu_zone(f->e, g) == 'A')
            a_racks[node_info(f, ef_node_of(f, g)).rack] = 1;
    for (int r = 0; r < 4; r++)
        assert_int_equal(a_racks[r], 1);
    ef_done(f);
}

/* rack-fail on the rack holding the most replicas: with spreading, 3 of the
 * floor of 4 (75%) survive; without it, the floor sits in one rack and none
 * does. After recovery the invariant holds again (checked every step). */
static void test_rack_fail_with_and_without_spreading(void **state)
{
    (void)state;
    for (int spread = 1; spread >= 0; spread--) {
        ef_t *f = four_racks(spread, spread ? 0.75 : 0);
        int cnt[4];
        int total = per_domain(f, 0, 0, cnt, 4);
        int r = busiest(cnt, 4);
        /* what survives is what ran outside the rack (replacements come after) */
        int left = total - cnt[r];
        rack_event(f, 700, r, 0);
        tide_stats_t st;
        tide_engine_stats(f->e, &st);
        assert_true(st.replicas_ready >= left);
        if (spread)
            assert_true(left >= 3);
        else
            assert_true(left < 3);
        ticks_ready(f, 1300);
        rack_event(f, 1400, r, 1);
        ticks_ready(f, 9000);
        /* back to one replica per rack once the extra one was scaled down */
        if (spread) {
            assert_int_equal(per_domain(f, 0, 0, cnt, 4), 4);
            for (int k = 0; k < 4; k++)
                assert_int_equal(cnt[k], 1);
        }
        ef_done(f);
    }
}

/* A power domain of two racks: the floor spreads over the power domains
 * first, and losing one leaves half. */
static void test_power_domains(void **state)
{
    (void)state;
    ef_t *f = floor_on(16, 2, 4, 4, 1, 0.5, 1, 600); /* 8 racks, 4 power domains */
    int cnt[4];
    per_domain(f, 0, 1, cnt, 4);
    for (int p = 0; p < 4; p++)
        assert_int_equal(cnt[p], 1);
    ef_done(f);
}

/* The invariant fails when the topology cannot hold it: one rack. */
static void test_invariant_reports(void **state)
{
    (void)state;
    ef_t *f = floor_on(4, 4, 4, 2, 1, 0.5, 0, 120);
    tide_error_t err = {0};
    assert_int_equal(tide_engine_check(f->e, &err), -1);
    assert_non_null(strstr(err.msg, "losing rack 0"));
    ef_done(f);
}

/* Property: random clusters and service mixes, demand only rising (so free
 * space only shrinks): every replica is one whole gang (tide_engine_check),
 * and two racks differ by more than max_skew only when the emptier one has
 * no room for another replica of that service. */
static void test_property_spread(void **state)
{
    (void)state;
    uint64_t st = 12345;
    for (int round = 0; round < 40; round++) {
        tide_config_t cfg = ef_cfg("elastic");
        cfg.spread_max_skew = 1 + (int)(rnd(&st) % 2);
        int rack_nodes = 1 + (int)(rnd(&st) % 3);
        int nodes = rack_nodes * (3 + (int)(rnd(&st) % 4));
        ef_t *f = ef_topo(nodes, 8, 1, rack_nodes, rack_nodes, &cfg);
        snprintf(f->tag, sizeof f->tag, "round %d", round);
        int ns = 1 + (int)(rnd(&st) % 3);
        static const int tps[] = {1, 2, 4, 8};
        char names[3][16];
        int tp[3];
        for (int s = 0; s < ns; s++) {
            snprintf(names[s], sizeof names[s], "s%d", s);
            tp[s] = tps[rnd(&st) % 4];
            ef_service(f, names[s], tp[s], 10, 1, 300);
        }
        double rps = 5;
        for (tide_time_t t = 0; t <= 3600; t += 300) {
            rps += (double)(rnd(&st) % 40);
            for (int s = 0; s < ns; s++)
                ef_demand(f, t, s, rps / ns);
            int racks = tide_cluster_racks(f->c), cnt[64];
            for (int s = 0; s < ns; s++) {
                per_domain(f, s, 0, cnt, racks);
                for (int hi = 0; hi < racks; hi++)
                    for (int lo = 0; lo < racks; lo++) {
                        if (cnt[hi] - cnt[lo] <= cfg.spread_max_skew)
                            continue;
                        /* the emptier rack must be full for this gang size */
                        for (int n = 0; n < nodes; n++) {
                            if (node_info(f, n).rack != lo)
                                continue;
                            int free = 0;
                            int32_t o;
                            for (int g = n * 8; g < n * 8 + 8; g++)
                                free += tide_engine_gpu_owner(f->e, g, &o) == 0;
                            if (free >= tp[s])
                                fail_msg("round %d t=%lld service %d: racks %d/%d hold %d/%d "
                                         "replicas while rack %d has room",
                                         round, (long long)t, s, hi, lo, cnt[hi], cnt[lo], lo);
                        }
                    }
            }
        }
        ef_done(f);
    }
}

/* ------------------------------------------------------------- partition */

static void node_ev(ef_t *f, tide_time_t t, int kind, int node, double value)
{
    tide_event_t ev = ef_ev(kind);
    ev.node = node;
    ev.value = value;
    ef_step(f, t, &ev, 1);
}

/* elastic on 8x8 (Tier A: one node), a 2-gang rigid job on lent GPUs. */
static ef_t *partition_setup(int32_t *job, int *node)
{
    tide_config_t cfg = ef_cfg("elastic");
    cfg.lease_max_s = 3 * 3600;
    ef_t *f = ef_topo(8, 8, 1, 2, 2, &cfg);
    ef_service(f, "chat", 8, 10, 1, 300);
    ef_demand(f, 0, 0, 5);
    tide_job_spec_t js = ef_job("train", 2, 16, 8, 2, 100000);
    *job = ef_submit(f, 60, &js);
    ticks_ready(f, 600);
    assert_int_equal(ef_info(f, *job).state, TIDE_JOB_RUNNING);
    int32_t gp[64];
    assert_int_equal(ef_job_gpus(f, *job, gp), 16);
    *node = ef_node_of(f, gp[0]);
    return f;
}

/* Unreachable: the job keeps its GPUs and is not started anywhere else (no
 * GPU is allocated twice: the fixture replays every action); fenced: it
 * restarts elsewhere. */
static void test_partition_then_fence(void **state)
{
    (void)state;
    int32_t job;
    int node;
    ef_t *f = partition_setup(&job, &node);
    int32_t before[64], after[64];
    ef_job_gpus(f, job, before);
    size_t from = f->nlog;
    node_ev(f, 700, TIDE_EV_NODE_FAILED, node, 1);
    ticks_ready(f, 3000);
    assert_int_equal(ef_count(f, from, TIDE_ACT_JOB_START, -1, job), 0);
    assert_int_equal(ef_count(f, from, TIDE_ACT_JOB_STOP, -1, job), 0);
    assert_int_equal(ef_job_gpus(f, job, after), 16);
    assert_memory_equal(before, after, sizeof(int32_t) * 16);
    node_ev(f, 3060, TIDE_EV_NODE_FAILED, node, 0);
    assert_non_null(ef_find(f, from, TIDE_ACT_JOB_STOP, TIDE_R_FAILURE, job));
    ticks_ready(f, 3600);
    const ef_act_t *st = ef_find(f, from, TIDE_ACT_JOB_START, -1, job);
    assert_non_null(st);
    for (int k = 0; k < st->a.n_gpus; k++)
        assert_int_not_equal(ef_node_of(f, ef_gpus(f, st)[k]), node);
    node_ev(f, 3700, TIDE_EV_NODE_RECOVERED, node, 0);
    ticks_ready(f, 4000);
    ef_done(f);
}

/* Unreachable until the lease runs out: not renewed, stopped at its latest
 * return (the far side expired it on its own), then placed again; never
 * twice at once. */
static void test_partition_lease_expires(void **state)
{
    (void)state;
    int32_t job;
    int node;
    ef_t *f = partition_setup(&job, &node);
    tide_job_info_t ji = ef_info(f, job);
    tide_lease_info_t li;
    assert_true(ji.lease >= 0);
    assert_int_equal(tide_engine_lease(f->e, ji.lease, &li), 0);
    tide_time_t until = li.latest_return;
    size_t from = f->nlog;
    node_ev(f, 700, TIDE_EV_NODE_FAILED, node, 1);
    ticks_ready(f, until + 600);
    assert_int_equal(ef_count(f, from, TIDE_ACT_LEASE_RENEW, -1, job), 0);
    const ef_act_t *stop = ef_find(f, from, TIDE_ACT_JOB_STOP, -1, job);
    assert_non_null(stop);
    assert_true(stop->t >= until);
    const ef_act_t *start = ef_find(f, from, TIDE_ACT_JOB_START, -1, job);
    assert_non_null(start);
    assert_true(start->t >= stop->t);
    ef_done(f);
}

/* An unreachable node's replica is not capacity: a replacement starts
 * elsewhere while it keeps its GPUs; reachable again, it counts again. */
static void test_partition_replica(void **state)
{
    (void)state;
    ef_t *f = floor_on(4, 1, 1, 1, 1, 0, 1, 600);
    int32_t owner = -1;
    int node = -1;
    for (int g = 0; g < f->ngpus && node < 0; g++)
        if (tide_engine_gpu_owner(f->e, g, &owner) == 2)
            node = ef_node_of(f, g);
    assert_true(node >= 0);
    size_t from = f->nlog;
    node_ev(f, 660, TIDE_EV_NODE_FAILED, node, 1);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    assert_int_equal(ef_count(f, from, TIDE_ACT_REPLICA_STOP, -1, -1), 0);
    /* replacements (the sizing reacts to the lost capacity), none on the node */
    assert_true(ef_count(f, from, TIDE_ACT_REPLICA_START, -1, -1) >= 1);
    for (size_t i = from; i < f->nlog; i++)
        if (f->log[i].a.kind == TIDE_ACT_REPLICA_START)
            assert_int_not_equal(ef_node_of(f, ef_gpus(f, &f->log[i])[0]), node);
    assert_int_equal(st.replicas_ready, 0);
    int32_t o2;
    tide_node_info_t ni = node_info(f, node);
    assert_int_equal(tide_engine_gpu_owner(f->e, ni.first_gpu, &o2), 2);
    assert_int_equal(o2, owner);
    ticks_ready(f, 900);
    tide_engine_stats(f->e, &st);
    int ready = st.replicas_ready;
    assert_true(ready >= 1);
    node_ev(f, 960, TIDE_EV_NODE_RECOVERED, node, 0);
    tide_engine_stats(f->e, &st);
    assert_true(st.replicas_ready >= ready); /* it counts again (the sizing may drop one) */
    ticks_ready(f, 20000); /* the extra ones are scaled down after the hold */
    tide_engine_stats(f->e, &st);
    assert_true(st.replicas_ready < ready + 1);
    ef_done(f);
}

/* ------------------------------------------------------------- rank loss */

static void rank_failed(ef_t *f, tide_time_t t, int32_t job, int node)
{
    tide_event_t ev = ef_ev(TIDE_EV_RANK_FAILED);
    ev.job = job;
    ev.node = node;
    ef_step(f, t, &ev, 1);
}

/* A 4-gang elastic job (dp_min 2) loses a rank in its third gang: it goes on
 * at 3 gangs without that gang's GPUs, then grows back to 4. */
static void test_rank_loss_elastic(void **state)
{
    (void)state;
    ef_t *f = floor_on(6, 2, 2, 1, 1, 0, 1, 0);
    tide_job_spec_t js = ef_job("big", 2, 32, 8, 2, 100000);
    int32_t job = ef_submit(f, 60, &js);
    ticks_ready(f, 600);
    assert_int_equal(ef_info(f, job).width, 4);
    const ef_act_t *last = ef_find_last(f, TIDE_ACT_JOB_START, -1, job);
    assert_non_null(last);
    int node = ef_node_of(f, ef_gpus(f, last)[2 * 8]); /* gang 2 */
    size_t from = f->nlog;
    rank_failed(f, 610, job, node);
    const ef_act_t *rs = ef_find(f, from, TIDE_ACT_JOB_RESIZE, TIDE_R_FAILURE, job);
    assert_non_null(rs);
    assert_int_equal(rs->a.width, 3);
    for (int k = 0; k < rs->a.n_gpus; k++)
        assert_int_not_equal(ef_node_of(f, ef_gpus(f, rs)[k]), node);
    tide_job_info_t ji = ef_info(f, job);
    assert_int_equal(ji.state, TIDE_JOB_RUNNING);
    assert_int_equal(ji.width, 3);
    assert_int_equal(ef_count(f, from, TIDE_ACT_JOB_STOP, -1, job), 0);
    ticks_ready(f, 800);
    assert_int_equal(ef_info(f, job).width, 4);
    assert_non_null(ef_find(f, from, TIDE_ACT_JOB_RESIZE, TIDE_R_SCALE, job));
    ef_done(f);
}

/* A job at dp_min (not elastic) restarts from its committed checkpoint. */
static void test_rank_loss_rigid(void **state)
{
    (void)state;
    ef_t *f = floor_on(6, 2, 2, 1, 1, 0, 1, 0);
    tide_job_spec_t js = ef_job("rigid", 2, 32, 8, 4, 100000);
    int32_t job = ef_submit(f, 60, &js);
    ticks_ready(f, 600);
    ef_commit(f, 620, job, 300);
    size_t from = f->nlog;
    rank_failed(f, 900, job, -1);
    assert_non_null(ef_find(f, from, TIDE_ACT_JOB_STOP, TIDE_R_FAILURE, job));
    assert_int_equal(ef_count(f, from, TIDE_ACT_JOB_RESIZE, -1, job), 0);
    ticks_ready(f, 1200);
    tide_job_info_t ji = ef_info(f, job);
    assert_true(ef_find(f, from, TIDE_ACT_JOB_START, -1, job) != NULL);
    assert_true(ji.committed >= 300);
    ef_done(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_floor_spread_over_racks),
        cmocka_unit_test(test_rack_fail_with_and_without_spreading),
        cmocka_unit_test(test_power_domains),
        cmocka_unit_test(test_invariant_reports),
        cmocka_unit_test(test_property_spread),
        cmocka_unit_test(test_partition_then_fence),
        cmocka_unit_test(test_partition_lease_expires),
        cmocka_unit_test(test_partition_replica),
        cmocka_unit_test(test_rank_loss_elastic),
        cmocka_unit_test(test_rank_loss_rigid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
