/* Numbers from outside never overflow the engine's sizing: a pushed demand
 * of 1e12 rps (or DBL_MAX) sizes the service at its maximum replicas - not
 * at its floor, as an (int) conversion overflow once gave - and the engine's
 * accounting stays finite. Meant for the ASan+UBSan build too, where the old
 * conversion aborted. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <string.h>

#include "tide/cluster.h"
#include "tide/engine.h"

static tide_event_t ev_of(int kind)
{
    tide_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    ev.job = ev.service = ev.replica = ev.node = -1;
    return ev;
}

/* Replicas of service s not stopped. */
static int live_replicas(const tide_engine_t *e, int s)
{
    int n = 0;
    for (int r = 0; r < tide_engine_replicas(e); r++) {
        tide_replica_info_t ri;
        if (tide_engine_replica(e, r, &ri) == 0 && ri.service == s && !ri.stopped)
            n++;
    }
    return n;
}

/* An engine on 8x8 with one service (8 GPUs per replica, max_replicas max,
 * 0 = unbounded), demand rps pushed at t=0, stepped for an hour. */
static int replicas_at(double rps, int max, const char *policy, double *useful)
{
    tide_error_t err = {0};
    tide_cluster_t *c = tide_cluster_parse("8x8", &err);
    assert_non_null(c);
    tide_config_t cfg;
    tide_config_default(&cfg);
    cfg.policy = policy;
    cfg.check_invariants = 1;
    tide_engine_t *e = tide_engine_create(c, &cfg, &err);
    assert_non_null(e);
    tide_service_spec_t s = {.name = "chat", .gpus_per_replica = 8, .replica_rps = 10,
                             .min_replicas = 1, .max_replicas = max, .warmup_s = 60};
    assert_int_equal(tide_engine_add_service(e, &s, &err), 0);
    tide_actions_t acts;
    tide_actions_init(&acts);
    tide_event_t ev = ev_of(TIDE_EV_DEMAND);
    ev.service = 0;
    ev.value = rps;
    assert_int_equal(tide_engine_step(e, 0, &ev, 1, &acts, &err), 0);
    for (tide_time_t t = 60; t <= 3600; t += 60)
        assert_int_equal(tide_engine_step(e, t, NULL, 0, &acts, &err), 0);
    assert_int_equal(tide_engine_check(e, &err), 0);
    int n = live_replicas(e, 0);
    tide_stats_t st;
    tide_engine_stats(e, &st);
    assert_true(isfinite(st.useful_serving_gpu_s) && st.useful_serving_gpu_s >= 0);
    assert_true(isfinite(st.oracle_gpu_s) && st.oracle_gpu_s >= 0);
    if (useful)
        *useful = st.useful_serving_gpu_s;
    tide_actions_free(&acts);
    tide_engine_destroy(e);
    tide_cluster_destroy(c);
    return n;
}

static void test_huge_demand_gives_max(void **state)
{
    (void)state;
    static const char *const policies[] = {"elastic", "preempt", "k8s", "static"};
    for (size_t p = 0; p < sizeof policies / sizeof policies[0]; p++) {
        int want = replicas_at(3e9, 5, policies[p], NULL); /* in range: the maximum */
        if (!strcmp(policies[p], "static"))
            continue; /* fixed split: not sized from demand */
        assert_int_equal(want, 5);
        assert_int_equal(replicas_at(1e12, 5, policies[p], NULL), 5);
        assert_int_equal(replicas_at(1e300, 5, policies[p], NULL), 5);
        assert_int_equal(replicas_at(DBL_MAX, 5, policies[p], NULL), 5);
    }
}

static void test_huge_demand_unbounded_service(void **state)
{
    (void)state;
    /* no max_replicas: as many as the cluster holds (8 nodes of 8), never
     * the floor */
    double useful = 0;
    int n = replicas_at(1e12, 0, "elastic", &useful);
    assert_true(n >= 7);
    assert_true(useful >= 0); /* no world: no replica reports ready */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_huge_demand_gives_max),
        cmocka_unit_test(test_huge_demand_unbounded_service),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
