/* Unit tests: a rollout's surge and retirements in the engine
 * (TIDE_EV_SURGE, TIDE_EV_REPLICA_RETIRE, tide_engine_service_target). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine_fixture.h"

static int active(ef_t *f, int s)
{
    int n = 0;
    for (int r = 0; r < tide_engine_replicas(f->e); r++) {
        tide_replica_info_t ri;
        tide_engine_replica(f->e, r, &ri);
        n += ri.service == s && !ri.stopped;
    }
    return n;
}

static int32_t oldest_active(ef_t *f, int s)
{
    for (int r = 0; r < tide_engine_replicas(f->e); r++) {
        tide_replica_info_t ri;
        tide_engine_replica(f->e, r, &ri);
        if (ri.service == s && !ri.stopped)
            return r;
    }
    return -1;
}

static void test_surge_and_retire(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("elastic");
    ef_t *f = ef_new("4x8", &cfg);
    int s = ef_service(f, "chat", 2, 100, 3, 60);
    ef_tick(f, 0);
    int surge = -1;
    assert_int_equal(tide_engine_service_target(f->e, s, &surge), 3);
    assert_int_equal(surge, 0);
    assert_int_equal(active(f, s), 3);
    /* a surge of 2: two more replicas, the target unchanged */
    tide_event_t ev = ef_ev(TIDE_EV_SURGE);
    ev.service = s;
    ev.value = 2;
    ef_step(f, 60, &ev, 1);
    assert_int_equal(active(f, s), 5);
    assert_int_equal(tide_engine_service_target(f->e, s, &surge), 3);
    assert_int_equal(surge, 2);
    /* the sizing never scales the surge away, however long it holds */
    ef_tick(f, 60 + 4 * 3600);
    assert_int_equal(active(f, s), 5);
    /* retire two old replicas and end the surge in one step: no restart */
    tide_event_t x[3] = {ef_ev(TIDE_EV_REPLICA_RETIRE), ef_ev(TIDE_EV_REPLICA_RETIRE),
                         ef_ev(TIDE_EV_SURGE)};
    x[0].replica = oldest_active(f, s);
    x[1].replica = x[0].replica + 1;
    x[2].service = s;
    x[2].value = 0;
    int reps_before = tide_engine_replicas(f->e);
    ef_step(f, 60 + 4 * 3600 + 60, x, 3);
    assert_int_equal(active(f, s), 3);
    assert_int_equal(tide_engine_replicas(f->e), reps_before);
    tide_replica_info_t ri;
    tide_engine_replica(f->e, x[0].replica, &ri);
    assert_int_equal(ri.stopped, 1);
    /* bad input is refused, the engine unchanged */
    tide_error_t err;
    ev.value = -1;
    assert_int_equal(ef_step_rc(f, 60 + 4 * 3600 + 120, &ev, 1, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    ev = ef_ev(TIDE_EV_REPLICA_RETIRE);
    ev.replica = 999;
    assert_int_equal(ef_step_rc(f, 60 + 4 * 3600 + 180, &ev, 1, &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
    assert_int_equal(active(f, s), 3);
    ef_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_surge_and_retire)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
