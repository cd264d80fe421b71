/* `tide sim --demand-history`: past demand preloaded before the replay, so
 * the first day's rise is met by the forecast instead of reactively; and
 * the history file's times aligned so its latest time is the start. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim_fixture.h"
#include "tide/engine.h"

/* Replicas (ready + warming) the elastic engine holds at 07:59, seen by the
 * step observer; the demand rises from 60 to 250 rps at 08:00. */
typedef struct seen {
    int replicas;
    tide_time_t at;
} seen_t;

static void observe(void *ctx, const tide_sim_step_t *s)
{
    seen_t *x = ctx;
    if (s->t <= 8 * 3600 - 60) {
        tide_stats_t st;
        tide_engine_stats(s->e, &st);
        x->replicas = st.replicas_ready + st.replicas_warming;
        x->at = s->t;
    }
}

/* Three days of the fixture's curve, one row every 5 min, as a history
 * file whose times start at an arbitrary origin (a Unix-time export). */
static tide_demand_t *history(const sf_work_t *w)
{
    static char buf[1 << 16];
    size_t n = (size_t)snprintf(buf, sizeof buf, "time_s,service,rps\n");
    const long origin = 1700000000L - 1700000000L % 86400;
    for (long t = 0; t <= 3 * 86400; t += 300) {
        long h = t % 86400 / 3600;
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%ld,chat,%d\n", origin + t,
                              h >= 8 && h < 20 ? 250 : 60);
    }
    tide_error_t err = {0};
    tide_demand_t *d = tide_demand_read_mem(buf, n, "history.csv", w->svcs, NULL, &err);
    if (!d)
        fail_msg("history: %s", err.msg);
    assert_int_equal(tide_demand_history_align(d, 0, &err), 0);
    return d;
}

static int replicas_at_0759(const sf_work_t *w, const tide_demand_t *h)
{
    char dir[256];
    sf_tmpdir(dir, sizeof dir);
    tide_sim_opts_t o;
    sf_opts(w, &o, dir);
    const char *pol[] = {"elastic"};
    o.policies = pol;
    o.n_policies = 1;
    seen_t x = {.replicas = -1, .at = -1};
    o.observe = observe;
    o.observe_ctx = &x;
    if (h) {
        o.history = h->v;
        o.n_history = h->n;
    }
    tide_error_t err = {0};
    if (tide_sim_run(&o, &err) != 0)
        fail_msg("sim: %s", err.msg);
    sf_rm_rf(dir);
    assert_true(x.at >= 8 * 3600 - 300);
    return x.replicas;
}

static void test_history_aligned_to_start(void **state)
{
    (void)state;
    sf_work_t w;
    sf_load(&w);
    tide_demand_t *h = history(&w);
    assert_int_equal(h->v[h->n - 1].t, 0);
    assert_int_equal(h->v[0].t, -3 * 86400);
    tide_demand_t empty = {0};
    tide_error_t err = {0};
    assert_int_equal(tide_demand_history_align(&empty, 0, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    tide_demand_free(h);
    sf_free(&w);
}

static void test_history_warms_the_first_rise(void **state)
{
    (void)state;
    sf_work_t w;
    sf_load(&w);
    tide_demand_t *h = history(&w);
    int cold = replicas_at_0759(&w, NULL);
    int warm = replicas_at_0759(&w, h);
    print_message("replicas at 07:59: %d without history, %d with\n", cold, warm);
    /* 250 rps at 100 rps a replica: 3 replicas, on their way before 08:00 */
    if (warm < 3)
        fail_msg("with 3 days of history: %d replicas at 07:59 (want >= 3)", warm);
    if (cold >= 3)
        fail_msg("without history: %d replicas at 07:59 (the rise is not foreseeable)", cold);
    tide_demand_free(h);
    sf_free(&w);
}

static void test_bad_history_refused(void **state)
{
    (void)state;
    sf_work_t w;
    sf_load(&w);
    char dir[256];
    sf_tmpdir(dir, sizeof dir);
    tide_sim_opts_t o;
    sf_opts(&w, &o, dir);
    tide_demand_point_t bad[] = {{.t = -600, .service = 0, .rps = 5}, {.t = 60, .service = 0, .rps = 5}};
    o.history = bad;
    o.n_history = 2;
    tide_error_t err = {0};
    assert_int_equal(tide_sim_run(&o, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    bad[1] = (tide_demand_point_t){.t = -900, .service = 0, .rps = 5}; /* out of order */
    assert_int_equal(tide_sim_run(&o, &err), -1);
    bad[1] = (tide_demand_point_t){.t = 0, .service = 4, .rps = 5}; /* unknown service */
    assert_int_equal(tide_sim_run(&o, &err), -1);
    sf_rm_rf(dir);
    sf_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_history_aligned_to_start),
        cmocka_unit_test(test_history_warms_the_first_rise),
        cmocka_unit_test(test_bad_history_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
