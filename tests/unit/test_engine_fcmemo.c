/* Forecast memos give the bits a computation from scratch gives: two
 * forecasts fed the same demand, one with every memo forgotten before each
 * use (tide__fc_memo_reset), agree on every curve, need, peak and margin to
 * the bit; and the debug check (tide__fc_memo_bad: memoised shapes, the
 * fc_now memo, the burst bins' bitmap and the burst quantile over it) finds
 * nothing, over weeks (the week-ago shape), a gap longer than the memory,
 * and several memory lengths. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "core/internal.h"

#define DAY 86400
#define TICK 60

/* Deterministic demand: a daily and a weekly cycle, noise, and bursts. */
static double demand(tide_time_t t, uint64_t *rng)
{
    *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(*rng >> 11) / 9007199254740992.0;
    double day = 100 + 60 * sin(2 * M_PI * (double)(t % DAY) / DAY);
    double week = (t / DAY) % 7 >= 5 ? 0.6 : 1.0;
    double burst = u > 0.97 ? 2.5 : 1.0;
    return day * week * burst * (0.9 + 0.2 * u);
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Learn at every tick (observing every 300 s) from t0 to t1 in both
 * forecasts; query both at several times between ticks too. */
static void run(forecast_t *a, forecast_t *b, tide_time_t t0, tide_time_t t1, const tide_config_t *cfg,
                uint64_t *rng, long *checked)
{
    enum { N = 80 };
    double ca[N], cb[N];
    for (tide_time_t t = t0; t <= t1; t += TICK) {
        if (t % 300 == 0) {
            double x = demand(t, rng);
            tide__fc_observe(a, t, x);
            tide__fc_observe(b, t, x);
        }
        double cap = a->cur * (0.8 + 0.05 * (double)(t / TICK % 7));
        tide__fc_memo_reset(b);
        tide__fc_learn(a, t, 1800, 0.999, cap, cfg);
        tide__fc_learn(b, t, 1800, 0.999, cap, cfg);
        assert_true(same_bits(a->q, b->q));
        for (tide_time_t dt = 0; dt < TICK; dt += 25) {
            tide_time_t now = t + dt;
            int64_t k0 = now / 300;
            tide__fc_curve(a, now, k0, N, ca);
            tide__fc_memo_reset(b);
            tide__fc_curve(b, now, k0, N, cb);
            for (int i = 0; i < N; i++)
                if (!same_bits(ca[i], cb[i]))
                    fail_msg("t=%lld bucket %d: memoised %.17g, fresh %.17g", (long long)now, i, ca[i], cb[i]);
            double na = tide__fc_need(a, now, 2400, 1800);
            tide__fc_memo_reset(b);
            double nb = tide__fc_need(b, now, 2400, 1800);
            assert_true(same_bits(na, nb));
            double pa = tide__fc_peak(a, now, now + 600, now + 7200);
            tide__fc_memo_reset(b);
            assert_true(same_bits(pa, tide__fc_peak(b, now, now + 600, now + 7200)));
            assert_int_equal(tide__fc_memo_bad(a), 0);
            (*checked)++;
        }
    }
}

static void memo_matches_scratch(int days)
{
    tide_config_t cfg;
    tide_config_default(&cfg);
    forecast_t a, b;
    tide__fc_init(&a, cfg.forecast_bucket_s, days, TICK, 0.1);
    tide__fc_init(&b, cfg.forecast_bucket_s, days, TICK, 0.1);
    uint64_t rng = 42;
    long checked = 0;
    tide_time_t end = (tide_time_t)(days + 2) * DAY;
    run(&a, &b, 0, end, &cfg, &rng, &checked);
    /* a silence longer than the memory: the ring starts afresh */
    tide_time_t back = end + (tide_time_t)(days + 3) * DAY;
    run(&a, &b, back, back + 2 * DAY, &cfg, &rng, &checked);
    assert_true(checked > 1000);
    assert_true(a.samples > 100);
    assert_true(a.err_week >= 0 || days < 7); /* the week-ago shape was scored */
    tide__fc_free(&a);
    tide__fc_free(&b);
}

static void test_memo_one_day(void **state) { (void)state; memo_matches_scratch(1); }
static void test_memo_three_days(void **state) { (void)state; memo_matches_scratch(3); }
static void test_memo_week(void **state) { (void)state; memo_matches_scratch(7); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memo_one_day),
        cmocka_unit_test(test_memo_three_days),
        cmocka_unit_test(test_memo_week),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
