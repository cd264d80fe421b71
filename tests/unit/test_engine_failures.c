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
    return f;
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
static ef_t *four_racks(int spread, double share)
{
    tide_config_t cfg = ef_cfg("elastic");
    cfg.spread_max_skew = spread;
    cfg.survive_share = share;
    ef_t *f = ef_topo(16, 8, 1, 4, 4, &cfg);
    ef_service(f, "chat", 8, 10, 4, 300);
    ef_demand(f, 0, 0, 5);
    ticks_ready(f, 600);
    return f;
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
    ef_free(f);
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
        ef_free(f);
    }
}

/* A power domain of two racks: the floor spreads over the power domains
 * first, and losing one leaves half. */
static void test_power_domains(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("elastic");
    cfg.survive_share = 0.5;
    ef_t *f = ef_topo(16, 8, 1, 2, 4, &cfg); /* 8 racks, 4 power domains */
    ef_service(f, "chat", 8, 10, 4, 300);
    ef_demand(f, 0, 0, 5);
    ef_ticks(f, 600, 60);
    int cnt[4];
    per_domain(f, 0, 1, cnt, 4);
    for (int p = 0; p < 4; p++)
        assert_int_equal(cnt[p], 1);
    ef_free(f);
}

/* The invariant fails when the topology cannot hold it: one rack. */
static void test_invariant_reports(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("elastic");
    cfg.survive_share = 0.5;
    cfg.check_invariants = 0;
    ef_t *f = ef_topo(4, 8, 1, 4, 4, &cfg);
    f->check = 0;
    ef_service(f, "chat", 8, 10, 2, 300);
    ef_demand(f, 0, 0, 5);
    ef_ticks(f, 120, 60);
    tide_error_t err = {0};
    assert_int_equal(tide_engine_check(f->e, &err), -1);
    assert_non_null(strstr(err.msg, "losing rack 0"));
    ef_free(f);
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
        char names[3][8];
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
        ef_free(f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_floor_spread_over_racks),
        cmocka_unit_test(test_rack_fail_with_and_without_spreading),
        cmocka_unit_test(test_power_domains),
        cmocka_unit_test(test_invariant_reports),
        cmocka_unit_test(test_property_spread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
