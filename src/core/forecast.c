/* Demand forecast with a safety margin learned from its own errors.
 *
 * History: the highest demand seen in each bucket (default 5 min) of the last
 * `days` days, in a ring. Forecast for a future bucket: the same bucket a week
 * earlier (else a day, else two days earlier), scaled by how today's level
 * compares with that history now (0.5x..3x), and never below the current level
 * extended by its rising trend over the last hour (which is all there is
 * without history).
 * Margin: every bucket the engine records the peak it predicted over its
 * decision window; once the window has passed, the relative error
 * actual/predicted - 1 goes into a ring (3 days); the margin is the configured
 * quantile of those errors, clamped to [margin_min, margin_max]. Only the past
 * is ever read: there is no look-ahead. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

#define ERR_WINDOW_DAYS 3

static size_t ring_len(const forecast_t *f) { return (size_t)f->nb * (size_t)f->days; }

void tide__fc_init(forecast_t *f, tide_time_t bucket_s, int days, double margin0)
{
    memset(f, 0, sizeof *f);
    if (bucket_s < 1)
        bucket_s = 300;
    if (days < 1)
        days = 1;
    f->bucket_s = bucket_s;
    f->nb = (int)((86400 + bucket_s - 1) / bucket_s);
    f->days = days;
    f->hist = tide_xmalloc(ring_len(f) * sizeof *f->hist);
    for (size_t i = 0; i < ring_len(f); i++)
        f->hist[i] = -1;
    f->last_bucket = -1;
    f->first_bucket = -1;
    f->pend_last_bucket = -1;
    f->margin = margin0;
    f->err_cap = (size_t)f->nb * ERR_WINDOW_DAYS;
    f->err = tide_xcalloc(f->err_cap, sizeof *f->err);
}

void tide__fc_free(forecast_t *f)
{
    free(f->hist);
    free(f->err);
    free(f->pend);
    memset(f, 0, sizeof *f);
}

static float *slot(const forecast_t *f, int64_t b) { return &f->hist[(size_t)(b % (int64_t)ring_len(f))]; }

void tide__fc_advance(forecast_t *f, tide_time_t now)
{
    int64_t b = now / f->bucket_s;
    if (f->last_bucket < 0) {
        f->last_bucket = f->first_bucket = b;
        *slot(f, b) = f->have ? (float)f->cur : -1.0f;
        return;
    }
    if (b <= f->last_bucket)
        return;
    int64_t from = f->last_bucket + 1;
    if (b - from >= (int64_t)ring_len(f))
        from = b - (int64_t)ring_len(f) + 1;
    for (int64_t k = from; k <= b; k++)
        *slot(f, k) = f->have ? (float)f->cur : -1.0f;
    f->last_bucket = b;
}

void tide__fc_observe(forecast_t *f, tide_time_t now, double rps)
{
    tide__fc_advance(f, now);
    f->cur = rps;
    f->have = 1;
    float *s = slot(f, now / f->bucket_s);
    if (*s < (float)rps)
        *s = (float)rps;
}

/* Observed value of absolute bucket k, or -1 when unknown. */
static double seen(const forecast_t *f, int64_t k)
{
    if (f->last_bucket < 0 || k < f->first_bucket || k > f->last_bucket ||
        k <= f->last_bucket - (int64_t)ring_len(f))
        return -1;
    return *slot(f, k);
}

/* Same time one week ago when known (weekly cycles), else yesterday, else
 * the day before. Returns -1 without history. */
static double seasonal(const forecast_t *f, int64_t k)
{
    static const int lags[] = {7, 1, 2};
    for (size_t i = 0; i < sizeof lags / sizeof lags[0]; i++) {
        double s = seen(f, k - (int64_t)lags[i] * f->nb);
        if (s >= 0)
            return s;
    }
    return -1;
}

/* Raw forecast (no margin) for absolute bucket k, seen from `now`: the
 * seasonal value scaled by how today runs against history, and never below
 * the current level extended by its rising trend of the last hour. */
static double fc_at(const forecast_t *f, tide_time_t now, int64_t k)
{
    int64_t bnow = now / f->bucket_s;
    double past = seen(f, bnow - 3600 / f->bucket_s);
    double slope = (past >= 0 && f->cur > past) ? (f->cur - past) / 3600.0 : 0;
    double dt = (double)(k * f->bucket_s - now);
    if (dt < 0)
        dt = 0;
    double trend = f->cur + slope * dt;
    double s = seasonal(f, k);
    if (s < 0)
        return trend;
    double s_now = seasonal(f, bnow);
    double r = (s_now > 0) ? f->cur / s_now : 1.0;
    if (r < 0.5)
        r = 0.5;
    if (r > 3)
        r = 3;
    return s * r > trend ? s * r : trend;
}

double tide__fc_peak(const forecast_t *f, tide_time_t now, tide_time_t from, tide_time_t to)
{
    if (!f->have)
        return 0;
    double p = from <= now ? f->cur : 0;
    for (int64_t k = from / f->bucket_s; k <= to / f->bucket_s; k++) {
        double v = fc_at(f, now, k);
        if (v > p)
            p = v;
    }
    return p;
}

void tide__fc_learn(forecast_t *f, tide_time_t now, tide_time_t horizon, const tide_config_t *cfg)
{
    if (!f->have)
        return;
    tide__fc_advance(f, now);
    int64_t b = now / f->bucket_s;
    int changed = 0;
    /* evaluate matured predictions */
    size_t w = 0;
    for (size_t i = 0; i < f->pend_n; i++) {
        if (f->pend[i].end > now) {
            f->pend[w++] = f->pend[i];
            continue;
        }
        double actual = -1;
        for (int64_t k = f->pend[i].start / f->bucket_s; k <= f->pend[i].end / f->bucket_s; k++) {
            double s = seen(f, k);
            if (s > actual)
                actual = s;
        }
        if (actual < 0 || f->pend[i].pred <= 0)
            continue;
        double err = actual / f->pend[i].pred - 1.0;
        f->err[f->err_pos] = err;
        f->err_pos = (f->err_pos + 1) % f->err_cap;
        if (f->err_n < f->err_cap)
            f->err_n++;
        f->samples++;
        changed = 1;
    }
    f->pend_n = w;
    if (changed) {
        double *c = tide_xmalloc(f->err_n * sizeof *c);
        memcpy(c, f->err, f->err_n * sizeof *c);
        size_t k = (size_t)ceil(cfg->margin_quantile * (double)f->err_n);
        double m = tide_select(c, f->err_n, k ? k - 1 : 0);
        free(c);
        if (m < cfg->margin_min)
            m = cfg->margin_min;
        if (m > cfg->margin_max)
            m = cfg->margin_max;
        f->margin = m;
    }
    /* one new prediction per bucket */
    if (b != f->pend_last_bucket) {
        f->pend_last_bucket = b;
        tide_grow((void **)&f->pend, &f->pend_cap, f->pend_n + 1, sizeof *f->pend);
        f->pend[f->pend_n].start = now;
        f->pend[f->pend_n].end = now + horizon;
        f->pend[f->pend_n].pred = tide__fc_peak(f, now, now, now + horizon);
        f->pend_n++;
    }
}
