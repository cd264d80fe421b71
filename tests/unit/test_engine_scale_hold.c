/* The scale-down hold of forecast sizing (infer.c, forecast_hold) under the
 * observed floor (config obs_window_s, `tide sim --obs-window`).
 *
 * A need sized from the observed floor already keeps the highest 5-minute
 * mean of the floor's window; the hold (scale_down_hold_s) counts from that
 * window, not after it. Stacked, a 30-minute floor under a 30-minute hold
 * kept a level for an hour after it went (servegen: 1.1 points of useful
 * utilisation; docs/engine.md, "Observed floor").
 *
 * Series: demand HIGH for two hours, then LOW (a step down at DROP), one
 * service of one-GPU replicas, manual clock. Checked:
 *   - with the floor, the replicas held stay at HIGH's while the window
 *     still holds HIGH (the floor's contract), and are down to LOW's within
 *     the window + one bucket + two ticks of the drop (the hold is not
 *     added again); a longer hold than the window still adds what exceeds it;
 *   - without the floor the forecast need is held for the whole hold.
 * (Replicas held, not the target: the hold keeps replicas above it.) */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine_fixture.h"

#define RPS 4.0      /* per replica (one GPU) */
#define HIGH 200.0
#define LOW 40.0
#define DROP 7200
#define BUCKET 300
#define TICK 60

typedef struct trace {
    int held[3 * 3600 / TICK + 2]; /* replicas ready or warming at each tick */
} trace_t;

static void hook(ef_t *f, tide_time_t t, void *vctx)
{
    trace_t *c = vctx;
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    if (t % TICK == 0 && t / TICK < (tide_time_t)(sizeof c->held / sizeof c->held[0]))
        c->held[t / TICK] = st.replicas_ready + st.replicas_warming;
}

static void run(tide_time_t window, tide_time_t hold, trace_t *c)
{
    tide_config_t cfg = ef_cfg("elastic");
    cfg.check_invariants = 0;
    cfg.obs_window_s = window;
    cfg.scale_down_hold_s = hold;
    ef_t *f = ef_new("16x8", &cfg); /* room for HIGH several times over */
    f->check = 0;
    ef_service(f, "chat", 1, RPS, 1, 120);
    ef_input_t *in = NULL;
    size_t n = 0, cap = 0;
    ef_in_push(&in, &n, &cap, ef_in_demand(0, 0, HIGH));
    ef_in_push(&in, &n, &cap, ef_in_demand(DROP, 0, LOW));
    memset(c, 0, sizeof *c);
    ef_run(f, in, n, 3 * 3600, hook, c);
    free(in);
    ef_free(f);
}

static int at(const trace_t *c, tide_time_t t) { return c->held[t / TICK]; }

/* The first tick after the drop from which the replicas held stay at or below
 * `level` to the end of the trace. */
static tide_time_t down_at(const trace_t *c, int level)
{
    tide_time_t t = 3 * 3600;
    while (t - TICK > DROP && at(c, t - TICK) <= level)
        t -= TICK;
    return t;
}

#define HIGH_REPLICAS ((int)ceil(HIGH / RPS))

/* Run with a floor of `window` (0: none) under a hold of `hold`; check that
 * the replicas held do come down below HIGH's; return when they settled. */
static tide_time_t settle(tide_time_t window, tide_time_t hold, trace_t *c)
{
    run(window, hold, c);
    int settled = at(c, 3 * 3600);
    tide_time_t down = down_at(c, settled);
    if (getenv("TIDE_TEST_VERBOSE"))
        fprintf(stderr, "floor %llds, hold %llds: %d replicas before, %d settled %+llds after the drop\n",
                (long long)window, (long long)hold, at(c, DROP - TICK), settled,
                (long long)(down - DROP));
    assert_true(settled < HIGH_REPLICAS); /* it does come down */
    return down;
}

static void test_hold_counts_from_the_floor_window(void **state)
{
    (void)state;
    const tide_time_t window = 1800;
    trace_t c;
    tide_time_t down = settle(window, 1800, &c);
    /* the floor's contract: HIGH is held while the window still reaches it */
    for (tide_time_t t = DROP; t < DROP + window; t += TICK)
        assert_true(at(&c, t) >= HIGH_REPLICAS);
    /* and no longer than the window (bucket-aligned) and a tick or two:
     * the hold is not added after it */
    assert_true(down <= DROP + window + BUCKET + 2 * TICK);
}

static void test_hold_beyond_the_window_still_holds(void **state)
{
    (void)state;
    const tide_time_t hold = 2400;
    trace_t c;
    tide_time_t down = settle(1200, hold, &c);
    /* what the hold exceeds the window by is still held */
    assert_true(down >= DROP + hold - BUCKET);
    assert_true(down <= DROP + hold + BUCKET + 2 * TICK);
}

static void test_without_floor_the_hold_is_whole(void **state)
{
    (void)state;
    const tide_time_t hold = 1800;
    trace_t c;
    /* the forecast's last need at HIGH is held for the whole hold */
    assert_true(settle(0, hold, &c) >= DROP + hold);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hold_counts_from_the_floor_window),
        cmocka_unit_test(test_hold_beyond_the_window_still_holds),
        cmocka_unit_test(test_without_floor_the_hold_is_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
