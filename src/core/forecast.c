/* Demand forecast: a baseline for the predictable part, and a learned
 * distribution of the bursts around it.
 *
 * Baseline. History is the time-weighted mean demand of each bucket (5 min)
 * of the last `days` days: means, not maxima, so one noisy minute does not
 * become the shape. The shape of a future bucket is the same bucket one week
 * earlier (weekly cycles) or the median of the last three days (daily
 * cycles), whichever has forecast the recent buckets better; it is scaled by
 * how the last hour compares with the shape over that hour (0.25x..4x), and
 * never below the current level (mean of the last ~15 min) extended by its
 * rising trend (which is all there is without history).
 *
 * Bursts. Once per tick the engine records the baseline peak it predicted for
 * its decision window [now, now + lead]. One lead later, the demand seen now
 * divided by that prediction is a burst sample (weighted by the prediction,
 * so the samples count requests). Samples of the last day form a histogram
 * of log-spaced bins. The burst multiplier q is the smallest one such that
 * capacity q x prediction would have left at most the error budget
 * (1 - slo_target) of the requests unserved: a quantile weighted by requests,
 * not by minutes. The budget is scaled by feedback from measured attainment
 * (decayed over `slo_window_s`): above target the budget grows and GPUs go
 * back, below it shrinks and headroom is added. q - 1 is reported as the
 * margin, clamped to [margin_min, margin_max].
 *
 * Only the past is ever read: there is no look-ahead. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

#define BIN_LO (-2.772588722239781) /* ln(1/16): ratios below share bin 0 */
#define BIN_H (0.010830424696249145) /* ln(2) / 64 */
#define RATIO_MAX 64.0
#define LEVEL_S 900                  /* current level: mean over this much */
#define TREND_S 1800                 /* trend: last half hour vs the one before */
#define TREND_MAX_S 3600             /* extrapolate the trend at most this far */
#define RATIO_MIN 0.25
#define RATIO_MAXF 4.0
#define K_MIN (-2.302585092994046)   /* error budget factor 0.1 .. 10 */
#define K_MAX (2.302585092994046)
#define K_GAIN (0.6931471805599453 / 7200.0) /* at most x2 per 2 h */
#define BUDGET_AIM 0.7                /* aim inside the budget: the start (no
                                         history) and misses that headroom
                                         cannot prevent spend the rest */
#define AIM_MIN 0.1                   /* aim at least this much of the aim */
#define PAYBACK_S 86400.0             /* overspent budget is paid back within a day */

/* What a forecast from `now` needs, computed once per call. */
typedef struct fc_now {
    int64_t b;
    double level, slope, ratio;
} fc_now_t;

/* A value over buckets [k0, k1], valid at the `ver` it was made at. */
struct range_memo {
    int valid;
    uint64_t ver;
    int64_t k0, k1;
    double v;
};

/* The memos of one forecast, each valid at the `ver` it was made at:
 * fc_now's (level, trend, ratio) of one bucket; the highest shape over a
 * bucket range (pk; -1: none) with the last peak asked (pk_now, pk_from,
 * pk_to: the debug check recomputes it by the scan); the highest mean
 * demand seen over a bucket range (rm). */
struct fc_now_memo {
    int valid;
    uint64_t ver;
    tide_time_t now;
    fc_now_t c;
    struct range_memo pk, rm;
    tide_time_t pk_now, pk_from, pk_to;
};

typedef double range_fn(const forecast_t *f, int64_t k0, int64_t k1);

/* calc(f, k0, k1), from the memo m when it was made at this ver and range. */
static double range_get(const forecast_t *f, struct range_memo *m, int64_t k0, int64_t k1, range_fn *calc)
{
    if (!(m->valid && m->ver == f->ver && m->k0 == k0 && m->k1 == k1))
        *m = (struct range_memo){.valid = 1, .ver = f->ver, .k0 = k0, .k1 = k1, .v = calc(f, k0, k1)};
    return m->v;
}

/* Does a memo that would be reused now differ from calc? */
static int range_bad(const forecast_t *f, const struct range_memo *m, range_fn *calc)
{
    if (!m->valid || m->ver != f->ver)
        return 0;
    double x = calc(f, m->k0, m->k1);
    return memcmp(&x, &m->v, sizeof x) != 0;
}
static void fc_now_calc(const forecast_t *f, tide_time_t now, fc_now_t *c);

static int64_t floordiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
static size_t ring_len(const forecast_t *f) { return (size_t)f->nb * (size_t)(f->days + 1); }
static size_t slot(const forecast_t *f, int64_t b)
{
    int64_t n = (int64_t)ring_len(f), r = b % n;
    return (size_t)(r < 0 ? r + n : r);
}

static size_t mx_blocks(const forecast_t *f) { return (ring_len(f) + 63) / 64; }

/* The highest mx of block j (slots 64 j ..), as peak_seen's scan took it. */
static double mx_block(const forecast_t *f, size_t j)
{
    size_t i0 = j * 64, i1 = i0 + 64 < ring_len(f) ? i0 + 64 : ring_len(f);
    double p = f->mx[i0];
    for (size_t i = i0 + 1; i < i1; i++)
        if (f->mx[i] > p)
            p = f->mx[i];
    return p;
}

/* Ring slot i starts a new bucket: nothing observed. */
static void slot_clear(forecast_t *f, size_t i)
{
    f->sum[i] = f->dur[i] = f->mx[i] = 0;
    if (f->mx_blk_ok)
        f->mx_blk[i / 64] = mx_block(f, i / 64);
}

static double bin_center(int b) { return b == 0 ? 0.0 : exp(BIN_LO + ((double)b - 0.5) * BIN_H); }

static int bin_of(double r)
{
    if (!(r > 0))
        return 0;
    if (r > RATIO_MAX)
        r = RATIO_MAX;
    double x = (log(r) - BIN_LO) / BIN_H;
    if (x < 0)
        return 0;
    int b = 1 + (int)x;
    return b >= FC_BINS ? FC_BINS - 1 : b;
}

void tide__fc_init(forecast_t *f, tide_time_t bucket_s, int days, tide_time_t tick_s, double margin0)
{
    memset(f, 0, sizeof *f);
    if (bucket_s < 1)
        bucket_s = 300;
    if (days < 1)
        days = 1;
    if (tick_s < 1)
        tick_s = 60;
    f->bucket_s = bucket_s;
    f->nb = (int)((86400 + bucket_s - 1) / bucket_s);
    f->days = days;
    f->sum = tide_xcalloc(ring_len(f), sizeof *f->sum);
    f->dur = tide_xcalloc(ring_len(f), sizeof *f->dur);
    f->mx = tide_xcalloc(ring_len(f), sizeof *f->mx);
    f->mx_blk = tide_xcalloc(mx_blocks(f), sizeof *f->mx_blk);
    f->last_bucket = -1;
    f->first_bucket = -1;
    f->err_day = f->err_week = -1;
    f->bs_cap = (size_t)((86400 + tick_s - 1) / tick_s);
    f->bs = tide_xcalloc(f->bs_cap, sizeof *f->bs);
    f->bin_c = tide_xcalloc(FC_BINS, sizeof *f->bin_c);
    for (int b = 0; b < FC_BINS; b++)
        f->bin_c[b] = bin_center(b);
    f->shape_v = tide_xcalloc(ring_len(f), sizeof *f->shape_v);
    f->shape_tag = tide_xcalloc(ring_len(f), sizeof *f->shape_tag);
    for (size_t i = 0; i < ring_len(f); i++)
        f->shape_tag[i] = INT64_MIN;
    f->now_memo = tide_xcalloc(1, sizeof *f->now_memo);
    f->q = 1.0 + margin0;
    f->margin = margin0;
    f->ens_at = -1;
    for (int r = 0; r < ENS_RULES; r++)
        f->ens_last[r] = -1;
    f->ens_cf = tide_xcalloc(ENS_RULES, sizeof *f->ens_cf);
    for (int r = 0; r < ENS_RULES; r++)
        for (int k = 0; k < ENS_WARM; k++)
            f->ens_cf[r].warm_t[k] = -1;
}


double tide__fc_budget(const forecast_t *f, double slo_target)
{
    double budget = 1.0 - slo_target;
    if (budget < 1e-6)
        budget = 1e-6;
    return budget * exp(f->logk);
}

void tide__fc_free(forecast_t *f)
{
    free(f->sum);
    free(f->dur);
    free(f->mx);
    free(f->mx_blk);
    free(f->bs);
    free(f->bin_c);
    free(f->shape_v);
    free(f->shape_tag);
    free(f->now_memo);
    free(f->ens_cf);
    memset(f, 0, sizeof *f);
}

/* Mean demand of absolute bucket k (the current one: so far), -1 unknown. */
static double seen(const forecast_t *f, int64_t k)
{
    if (!f->filled || k < f->first_bucket || k > f->last_bucket ||
        k <= f->last_bucket - (int64_t)ring_len(f))
        return -1;
    size_t i = slot(f, k);
    return f->dur[i] > 0 ? f->sum[i] / f->dur[i] : -1;
}

static double med3(double a, double b, double c)
{
    if (a > b) {
        double t = a;
        a = b;
        b = t;
    }
    return c < a ? a : c > b ? b : c;
}

/* Shape candidates for bucket k: the median of the last three days (the
 * mean of two, or one), and the same bucket a week earlier. -1 = none. */
static double shape_day(const forecast_t *f, int64_t k)
{
    double v[3];
    int n = 0;
    for (int d = 1; d <= 3 && d <= f->days; d++) {
        double s = seen(f, k - (int64_t)d * f->nb);
        if (s >= 0)
            v[n++] = s;
    }
    return n == 3 ? med3(v[0], v[1], v[2]) : n == 2 ? (v[0] + v[1]) / 2 : n == 1 ? v[0] : -1;
}

static double shape_week(const forecast_t *f, int64_t k)
{
    return f->days >= 7 ? seen(f, k - 7 * (int64_t)f->nb) : -1;
}

static double shape_raw(const forecast_t *f, int64_t k)
{
    double d = shape_day(f, k), w = shape_week(f, k);
    if (w >= 0 && (d < 0 || (f->err_week >= 0 && f->err_week < f->err_day)))
        return w;
    return d;
}

/* The shape with one-bucket spikes removed (median of neighbours). */
static double shape_calc(const forecast_t *f, int64_t k)
{
    double a = shape_raw(f, k - 1), b = shape_raw(f, k), c = shape_raw(f, k + 1);
    if (b < 0 || a < 0 || c < 0)
        return b;
    return med3(a, b, c);
}

/* Which shape shape_raw takes when both exist: 1 the week's, 0 the day's. */
static int shape_pick(const forecast_t *f) { return f->err_week >= 0 && f->err_week < f->err_day; }

/* Can shape(k) be memoised now? When every bucket shape_calc reads is
 * complete (k + 1 one day back is before the current bucket) and still in
 * memory (the oldest, k - 1 a week or three days back, is not yet
 * overwritten): those do not change, so shape_calc(k) changes only with
 * the pick. */
static int shape_memo_ok(const forecast_t *f, int64_t k)
{
    int back = f->days >= 7 ? 7 : f->days < 3 ? f->days : 3;
    return f->filled && k + 1 - f->nb < f->last_bucket &&
           f->last_bucket < k - 1 - (int64_t)back * f->nb + (int64_t)ring_len(f);
}

/* shape_calc, memoised (see shape_memo_ok and forecast_t.shape_v). */
static double shape(const forecast_t *f, int64_t k)
{
    if (!shape_memo_ok(f, k))
        return shape_calc(f, k);
    size_t i = slot(f, k);
    int64_t tag = 2 * k + shape_pick(f);
    if (f->shape_tag[i] != tag) {
        f->shape_v[i] = shape_calc(f, k);
        f->shape_tag[i] = tag;
    }
    return f->shape_v[i];
}

/* A walk over consecutive buckets' shapes: the memo's range (the buckets
 * shape_memo_ok accepts now: lo..hi) and the ring slot carried along, so
 * that each bucket costs no modulo and no range test of its own. */
typedef struct shape_cur {
    int64_t lo, hi, pick;
    size_t i, n;
} shape_cur_t;

static void shape_cur_init(const forecast_t *f, int64_t k, shape_cur_t *s)
{
    int back = f->days >= 7 ? 7 : f->days < 3 ? f->days : 3;
    s->n = ring_len(f);
    s->lo = f->last_bucket + 2 + (int64_t)back * f->nb - (int64_t)s->n;
    s->hi = f->filled ? f->last_bucket + f->nb - 2 : s->lo - 1;
    s->pick = shape_pick(f);
    s->i = slot(f, k);
}

/* shape_next's miss: compute, and memoise when k is in the range. */
static double shape_fill(const forecast_t *f, const shape_cur_t *s, size_t i, int64_t k)
{
    double v = shape_calc(f, k);
    if (k >= s->lo && k <= s->hi) {
        f->shape_v[i] = v;
        f->shape_tag[i] = 2 * k + s->pick;
    }
    return v;
}

/* shape(k) for k one past the last bucket walked (the first: the init's). */
static inline double shape_next(const forecast_t *f, shape_cur_t *s, int64_t k)
{
    size_t i = s->i;
    s->i = i + 1 == s->n ? 0 : i + 1;
    if (k >= s->lo && k <= s->hi && f->shape_tag[i] == 2 * k + s->pick)
        return f->shape_v[i];
    return shape_fill(f, s, i, k);
}

/* A memoised shape near the current bucket that differs from shape_calc:
 * its bucket, or INT64_MIN when none (tide__fc_memo_bad). */
static int64_t shape_memo_bad(const forecast_t *f)
{
    if (!f->filled)
        return INT64_MIN;
    for (int64_t k = f->last_bucket - f->nb; k <= f->last_bucket + f->nb; k++) {
        size_t i = slot(f, k);
        if (!shape_memo_ok(f, k) || f->shape_tag[i] != 2 * k + shape_pick(f))
            continue;
        double x = shape_calc(f, k);
        if (memcmp(&x, &f->shape_v[i], sizeof x) != 0)
            return k;
    }
    return INT64_MIN;
}

static void score(double *err, double pred, double actual, double alpha)
{
    if (pred < 0)
        return;
    double e = fabs(pred - actual) / (actual > 1e-9 ? actual : 1e-9);
    if (e > 4)
        e = 4;
    *err = *err < 0 ? e : *err + alpha * (e - *err);
}

/* Bucket k is complete: score both shapes against it. */
static void complete(forecast_t *f, int64_t k)
{
    double a = seen(f, k);
    if (a < 0)
        return;
    double alpha = 1.0 / f->nb;
    score(&f->err_day, shape_day(f, k), a, alpha);
    score(&f->err_week, shape_week(f, k), a, alpha);
}

void tide__fc_advance(forecast_t *f, tide_time_t now)
{
    if (!f->have)
        return;
    int64_t b = floordiv(now, f->bucket_s);
    if (!f->filled) {
        f->filled = 1;
        f->last_bucket = f->first_bucket = b;
        slot_clear(f, slot(f, b));
        f->last_t = now;
        f->ver++;
        return;
    }
    if (now <= f->last_t)
        return;
    if (b - f->last_bucket >= (int64_t)ring_len(f)) {
        /* a gap longer than the memory: start afresh from the last value */
        memset(f->sum, 0, ring_len(f) * sizeof *f->sum);
        memset(f->dur, 0, ring_len(f) * sizeof *f->dur);
        memset(f->mx, 0, ring_len(f) * sizeof *f->mx);
        f->mx_blk_ok = 0;
        for (size_t i = 0; i < ring_len(f); i++)
            f->shape_tag[i] = INT64_MIN; /* the memoised shapes read the old ring */
        f->first_bucket = b - (int64_t)ring_len(f) + 1;
        f->last_bucket = f->first_bucket;
        f->last_t = f->first_bucket * f->bucket_s;
    }
    tide_time_t t = f->last_t;
    while (t < now) {
        int64_t k = floordiv(t, f->bucket_s);
        if (k > f->last_bucket) {
            for (int64_t x = f->last_bucket + 1; x <= k; x++) {
                complete(f, x - 1);
                slot_clear(f, slot(f, x));
            }
            f->last_bucket = k;
            f->peak_dirty = 1;
        }
        tide_time_t end = (k + 1) * f->bucket_s;
        if (end > now)
            end = now;
        f->sum[slot(f, k)] += f->cur * (double)(end - t);
        f->dur[slot(f, k)] += (double)(end - t);
        t = end;
    }
    if (b > f->last_bucket) {
        for (int64_t x = f->last_bucket + 1; x <= b; x++) {
            complete(f, x - 1);
            slot_clear(f, slot(f, x));
        }
        f->last_bucket = b;
        f->peak_dirty = 1;
    }
    f->last_t = now;
    f->ver++;
}

void tide__fc_observe(forecast_t *f, tide_time_t now, double rps)
{
    tide__fc_advance(f, now);
    f->cur = rps;
    f->ver++;
    if (!f->have) {
        f->have = 1;
        tide__fc_advance(f, now);
    }
    size_t i = slot(f, floordiv(now, f->bucket_s));
    if (rps > f->mx[i]) {
        f->mx[i] = rps;
        if (f->mx_blk_ok && rps > f->mx_blk[i / 64])
            f->mx_blk[i / 64] = rps;
    }
    if (rps > f->peak_seen)
        f->peak_seen = rps;
}

/* Highest demand seen in the memory (recomputed when a bucket ends): the
 * current demand and every bucket's highest, over the block maxima (the
 * same value: a maximum does not depend on the grouping). */
static double peak_seen(forecast_t *f)
{
    if (f->peak_dirty) {
        if (!f->mx_blk_ok) {
            for (size_t j = 0; j < mx_blocks(f); j++)
                f->mx_blk[j] = mx_block(f, j);
            f->mx_blk_ok = 1;
        }
        double p = f->cur;
        for (size_t j = 0; j < mx_blocks(f); j++)
            if (f->mx_blk[j] > p)
                p = f->mx_blk[j];
        f->peak_seen = p;
        f->peak_dirty = 0;
    }
    return f->peak_seen;
}

int tide__fc_day_seen(const forecast_t *f)
{
    return f->filled && f->last_bucket - f->first_bucket + 1 > f->nb;
}

static double recent_max_scan(const forecast_t *f, int64_t k0, int64_t k1)
{
    double m = 0;
    for (int64_t k = k0; k <= k1; k++) {
        double v = seen(f, k);
        if (v > m)
            m = v;
    }
    return m;
}

/* The scan, memoised per (ver, buckets). */
double tide__fc_recent_max(const forecast_t *f, tide_time_t now, tide_time_t window)
{
    return range_get(f, &f->now_memo->rm, floordiv(now - window, f->bucket_s), floordiv(now, f->bucket_s),
                     recent_max_scan);
}

double tide__fc_need(forecast_t *f, tide_time_t now, tide_time_t horizon, tide_time_t obs_window)
{
    double b = tide__fc_peak(f, now, now, now + horizon);
    /* observed floor: the level the last obs_window actually ran at, so a
     * rise the baseline missed is sized with the burst multiplier too */
    if (obs_window > 0) {
        double o = tide__fc_recent_max(f, now, obs_window);
        if (o > b)
            b = o;
    }
    double n = b * f->q, cap = peak_seen(f);
    /* bursts never call for more than the highest demand seen, unless the
     * baseline itself goes there; before a whole day is seen, the day's peak
     * is not known yet, and the cap allows the burst multiplier over it */
    if (!tide__fc_day_seen(f))
        cap *= f->q;
    if (n > cap)
        n = cap > b ? cap : b;
    return n;
}

/* Time-weighted mean over the buckets [k0, k1] (the current one so far);
 * -1 when nothing was observed there. */
static double mean_over(const forecast_t *f, int64_t k0, int64_t k1)
{
    double s = 0, d = 0;
    for (int64_t k = k0; k <= k1; k++) {
        if (seen(f, k) < 0)
            continue;
        s += f->sum[slot(f, k)];
        d += f->dur[slot(f, k)];
    }
    return d > 0 ? s / d : -1;
}

static void fc_now_calc(const forecast_t *f, tide_time_t now, fc_now_t *c)
{
    c->b = floordiv(now, f->bucket_s);
    int64_t nl = (LEVEL_S + f->bucket_s - 1) / f->bucket_s, nt = (TREND_S + f->bucket_s - 1) / f->bucket_s;
    double lv = mean_over(f, c->b - nl, c->b);
    c->level = lv >= 0 ? lv : f->cur;
    double m1 = mean_over(f, c->b - nt + 1, c->b), m0 = mean_over(f, c->b - 2 * nt + 1, c->b - nt);
    c->slope = (m0 >= 0 && m1 > m0) ? (m1 - m0) / (double)(nt * f->bucket_s) : 0;
    /* how the last hour runs against the shape */
    int64_t nh = (3600 + f->bucket_s - 1) / f->bucket_s;
    double a = 0, p = 0;
    shape_cur_t cur;
    shape_cur_init(f, c->b - nh, &cur);
    for (int64_t k = c->b - nh; k <= c->b; k++) {
        double s = seen(f, k), sh = shape_next(f, &cur, k);
        if (s < 0 || sh < 0)
            continue;
        double w = f->dur[slot(f, k)];
        a += s * w;
        p += sh * w;
    }
    c->ratio = p > 0 ? a / p : 1.0;
    if (c->ratio < RATIO_MIN)
        c->ratio = RATIO_MIN;
    if (c->ratio > RATIO_MAXF)
        c->ratio = RATIO_MAXF;
}

/* fc_now, memoised: the same bucket and nothing changed since (f->ver).
 * fc_now_calc reads `now` only through its bucket (c->b), so any time in
 * the same bucket gives the same bits. */
static void fc_now(const forecast_t *f, tide_time_t now, fc_now_t *c)
{
    struct fc_now_memo *m = f->now_memo;
    if (m->valid && m->ver == f->ver && m->c.b == floordiv(now, f->bucket_s)) {
        *c = m->c;
        return;
    }
    fc_now_calc(f, now, c);
    m->valid = 1;
    m->ver = f->ver;
    m->now = now;
    m->c = *c;
}

/* The level extended by the trend to absolute bucket k, seen from now. */
static double trend_at(const forecast_t *f, const fc_now_t *c, tide_time_t now, int64_t k)
{
    double dt = (double)(k * f->bucket_s - now);
    if (dt < 0)
        dt = 0;
    if (dt > TREND_MAX_S)
        dt = TREND_MAX_S;
    return c->level + c->slope * dt;
}

/* Baseline of a bucket from its trend and shape s (-1: none). */
static double fc_of(const fc_now_t *c, double trend, double s)
{
    if (s < 0)
        return trend;
    return s * c->ratio > trend ? s * c->ratio : trend;
}

/* Baseline for absolute bucket k, seen from now. */
static double fc_at(const forecast_t *f, const fc_now_t *c, tide_time_t now, int64_t k)
{
    return fc_of(c, trend_at(f, c, now, k), shape(f, k));
}

/* The peak by definition: the highest baseline of the buckets (and 0). */
static double peak_scan(const forecast_t *f, tide_time_t now, tide_time_t from, tide_time_t to)
{
    fc_now_t c;
    fc_now_calc(f, now, &c);
    double p = 0;
    for (int64_t k = floordiv(from, f->bucket_s); k <= floordiv(to, f->bucket_s); k++) {
        double v = fc_at(f, &c, now, k);
        if (v > p)
            p = v;
    }
    return p;
}

/* The highest shape >= 0 over buckets [k0, k1], -1 if none. */
static double shape_max(const forecast_t *f, int64_t k0, int64_t k1)
{
    double s = -1;
    shape_cur_t cur;
    shape_cur_init(f, k0, &cur);
    for (int64_t k = k0; k <= k1; k++) {
        double x = shape_next(f, &cur, k);
        if (x >= 0 && x > s)
            s = x;
    }
    return s;
}

/* peak_scan, to the same bits: the highest of the buckets' baselines is
 * the highest of their trends and of their shapes x ratio. The trend only
 * grows along the buckets (slope >= 0, dt grows, rounding is monotone), so
 * its highest is the last bucket's; and ratio > 0, so the highest product
 * is the highest shape's (memoised per ver and buckets: it moves only with
 * the buckets read). */
double tide__fc_peak(const forecast_t *f, tide_time_t now, tide_time_t from, tide_time_t to)
{
    if (!f->have)
        return 0;
    int64_t k0 = floordiv(from, f->bucket_s), k1 = floordiv(to, f->bucket_s);
    if (k1 < k0)
        return 0;
    fc_now_t c;
    fc_now(f, now, &c);
    struct fc_now_memo *m = f->now_memo;
    double smax = range_get(f, &m->pk, k0, k1, shape_max);
    m->pk_now = now;
    m->pk_from = from;
    m->pk_to = to;
    double p = 0, t = trend_at(f, &c, now, k1);
    if (t > p)
        p = t;
    if (smax >= 0 && smax * c.ratio > p)
        p = smax * c.ratio;
    return p;
}

void tide__fc_curve(const forecast_t *f, tide_time_t now, int64_t k0, int n, double *out)
{
    if (!f->have) {
        for (int i = 0; i < n; i++)
            out[i] = 0;
        return;
    }
    fc_now_t c;
    fc_now(f, now, &c);
    shape_cur_t cur;
    shape_cur_init(f, k0, &cur);
    for (int i = 0; i < n; i++)
        out[i] = fc_of(&c, trend_at(f, &c, now, k0 + i), shape_next(f, &cur, k0 + i));
}

/* bw_nz from bw (bit b: bw[b] != 0). */
static void bw_bits(const forecast_t *f, uint64_t *nz)
{
    memset(nz, 0, FC_BIN_WORDS * sizeof *nz);
    for (int b = 0; b < FC_BINS; b++)
        if (f->bw[b] != 0)
            nz[b / 64] |= 1ull << (b % 64);
}

static void bw_bit_set(forecast_t *f, int b)
{
    uint64_t bit = 1ull << (b % 64);
    if (f->bw[b] != 0)
        f->bw_nz[b / 64] |= bit;
    else
        f->bw_nz[b / 64] &= ~bit;
}

/* Smallest multiplier q such that sum w (r - q)+ <= budget * sum w r: a
 * scan of every bin (the definition; tide__fc_memo_bad compares burst_q
 * with it). */
static double burst_q_scan(const forecast_t *f, double budget)
{
    double tw = 0, ts = 0;
    for (int b = 0; b < FC_BINS; b++) {
        tw += f->bw[b];
        ts += f->bw[b] * f->bin_c[b];
    }
    if (!(tw > 0) || !(ts > 0))
        return -1;
    double allow = budget * ts, W = 0, S = 0;
    for (int b = FC_BINS - 1; b > 0; b--) {
        W += f->bw[b];
        S += f->bw[b] * f->bin_c[b];
        double lo = f->bin_c[b - 1];
        if (W > 0 && S - lo * W > allow)
            return (S - allow) / W;
    }
    return 0;
}

/* burst_q_scan over the non-zero bins only (bw_nz), to the same bits: an
 * empty bin adds +0.0 to the sums, which changes none of them; and between
 * two non-empty bins W and S stay the same while lo falls, so S - lo x W
 * only grows (rounding is monotone): the scan's test passes somewhere in
 * that run iff it passes at the run's lowest lo, the next non-empty bin's
 * centre (bin 0's below the last), and it returns (S - allow) / W, the same
 * wherever in the run it passes. */
static double burst_q(const forecast_t *f, double budget)
{
    double tw = 0, ts = 0;
    for (int w = 0; w < FC_BIN_WORDS; w++)
        for (uint64_t m = f->bw_nz[w]; m; m &= m - 1) {
            int b = w * 64 + __builtin_ctzll(m);
            tw += f->bw[b];
            ts += f->bw[b] * f->bin_c[b];
        }
    if (!(tw > 0) || !(ts > 0))
        return -1;
    double allow = budget * ts, W = 0, S = 0;
    for (int w = FC_BIN_WORDS - 1; w >= 0; w--)
        for (uint64_t m = f->bw_nz[w]; m;) {
            int hb = 63 - __builtin_clzll(m);
            m &= ~(1ull << hb);
            int b = w * 64 + hb;
            if (W > 0 && S - f->bin_c[b] * W > allow)
                return (S - allow) / W;
            if (b == 0)
                return 0;
            W += f->bw[b];
            S += f->bw[b] * f->bin_c[b];
        }
    if (W > 0 && S - f->bin_c[0] * W > allow)
        return (S - allow) / W;
    return 0;
}

static void add_sample(forecast_t *f, double ratio, double w)
{
    if (f->bs_n == f->bs_cap) {
        fc_sample_t *o = &f->bs[f->bs_pos];
        f->bw[o->bin] -= o->w;
        if (f->bw[o->bin] < 1e-12)
            f->bw[o->bin] = 0;
        if (f->bw_nz_ok)
            bw_bit_set(f, o->bin);
    } else {
        f->bs_n++;
    }
    fc_sample_t *s = &f->bs[f->bs_pos];
    s->bin = (int16_t)bin_of(ratio);
    s->w = (float)w;
    f->bw[s->bin] += s->w;
    if (f->bw_nz_ok)
        bw_bit_set(f, s->bin);
    f->bs_pos = (f->bs_pos + 1) % f->bs_cap;
    f->samples++;
}

/* The prediction made one horizon ago (the latest one at or before then). */
static int pred_back(const forecast_t *f, tide_time_t when)
{
    for (size_t i = 0; i < f->pred_n; i++) {
        size_t k = (f->pred_pos + FC_PRED_RING - 1 - i) % FC_PRED_RING;
        if (f->pred[k].t <= when)
            return (int)k;
    }
    return -1;
}

void tide__fc_served(forecast_t *f, double dt, double demanded, double served)
{
    (void)dt;
    double miss = demanded > served ? demanded - served : 0;
    f->dem_d += demanded;
    f->miss_d += miss;
    f->dem_new += demanded;
    f->miss_new += miss;
}

/* The miss rate to aim at over the next hours: BUDGET_AIM of the budget,
 * less what was overspent over the SLO's compliance period (slo_period_s),
 * to be paid back within a day; more (up to the whole budget) while that
 * period runs below its aim. A cold start or a surge nobody foresaw is
 * then paid for by the hours after it, so the period meets the target. */
static double aim_rate(const forecast_t *f, double budget, const tide_config_t *cfg)
{
    double aim = BUDGET_AIM * budget;
    if (cfg->slo_period_s <= 0 || !(f->dur_p > 0) || !(f->dem_p > 0))
        return aim;
    double day = f->dem_p / f->dur_p * PAYBACK_S; /* demand expected in a day */
    double r = aim - (f->miss_p - aim * f->dem_p) / day;
    if (r < AIM_MIN * aim)
        r = AIM_MIN * aim;
    if (r > budget)
        r = budget;
    return r;
}

double tide__fc_aim(const forecast_t *f, double slo_target, const tide_config_t *cfg)
{
    double budget = 1.0 - slo_target;
    return aim_rate(f, budget < 1e-6 ? 1e-6 : budget, cfg);
}

static void decay_period(forecast_t *f, double dt, const tide_config_t *cfg)
{
    if (cfg->slo_period_s <= 0)
        return;
    double d = exp(-dt * 0.6931471805599453 / (double)cfg->slo_period_s);
    f->dem_p = f->dem_p * d + f->dem_new;
    f->miss_p = f->miss_p * d + f->miss_new;
    f->dur_p = f->dur_p * d + dt;
}

/* Error budget feedback: decay the measured sums, move the budget factor
 * towards the aim. */
static void feedback(forecast_t *f, tide_time_t now, double budget, const tide_config_t *cfg)
{
    double hl = cfg->slo_window_s > 0 ? (double)cfg->slo_window_s : 6 * 3600.0;
    if (!f->fb_on) {
        /* a prior of one half-life of demand at the aim, so that the first
         * minutes (a cold start) do not swing the budget */
        f->fb_on = 1;
        f->fb_at = now;
        f->dem_d += f->cur * hl;
        f->miss_d += f->cur * hl * BUDGET_AIM * budget;
        f->dem_new = f->miss_new = 0;
        return;
    }
    double dt = (double)(now - f->fb_at);
    f->fb_at = now;
    if (dt <= 0)
        return;
    decay_period(f, dt, cfg);
    f->dem_new = f->miss_new = 0;
    double aim = aim_rate(f, budget, cfg);
    /* while another rule of the sizing ensemble sizes the service, the
     * misses measured are not the forecast's: its factor stays as it was
     * (it would loosen the forecast's burst quantile on what another rule
     * served, and score the forecast by that) */
    if (f->dem_d > 0 && budget > 0 && f->ens_pick == 0) {
        double m = f->miss_d / f->dem_d;
        double e = 1.0 - m / aim;
        if (e < -4)
            e = -4;
        f->logk += K_GAIN * e * dt;
        if (f->logk < K_MIN)
            f->logk = K_MIN;
        if (f->logk > K_MAX)
            f->logk = K_MAX;
    }
    double decay = exp(-dt * 0.6931471805599453 / hl);
    f->dem_d *= decay;
    f->miss_d *= decay;
}

void tide__fc_learn(forecast_t *f, tide_time_t now, tide_time_t horizon, double slo_target,
                    double capacity, const tide_config_t *cfg)
{
    if (!f->have)
        return;
    tide__fc_advance(f, now);
    double budget = 1.0 - slo_target;
    if (budget < 1e-6)
        budget = 1e-6;
    feedback(f, now, budget, cfg);
    int back = pred_back(f, now - horizon);
    if (back >= 0 && f->pred[back].base > 0) {
        /* capacity (ready or warming) per unit of multiplier: what the
         * decisions since one lead ago (and the hold, and whole replicas)
         * made of the prediction. Capacity that comes late is the lead's
         * business (learned separately), not the bursts'. */
        double unit = capacity / f->pred[back].q;
        /* when another rule of the ensemble sized the service, the
         * capacity says nothing about the forecast: its own prediction is
         * the unit */
        if (f->pred[back].rule != 0)
            unit = f->pred[back].base;
        if (unit > 0)
            add_sample(f, f->cur / unit, unit);
        else if (f->cur > 0)
            add_sample(f, RATIO_MAX, f->cur / RATIO_MAX);
    }
    f->pred[f->pred_pos].t = now;
    f->pred[f->pred_pos].q = f->q;
    f->pred[f->pred_pos].base = tide__fc_peak(f, now, now, now + horizon);
    f->pred[f->pred_pos].rule = f->ens_pick;
    f->pred_pos = (f->pred_pos + 1) % FC_PRED_RING;
    if (f->pred_n < FC_PRED_RING)
        f->pred_n++;
    if (!f->bw_nz_ok) {
        bw_bits(f, f->bw_nz);
        f->bw_nz_ok = 1;
    }
    double q = burst_q(f, budget * exp(f->logk));
    double m = q < 0 ? cfg->margin_min : q - 1.0;
    if (m < cfg->margin_min)
        m = cfg->margin_min;
    if (m > cfg->margin_max)
        m = cfg->margin_max;
    f->margin = m;
    f->q = 1.0 + m;
}

/* The memos (fc_now, shapes, the burst bins' bitmap and burst_q over it)
 * against their computation from scratch. */
int tide__fc_memo_bad(const forecast_t *f)
{
    if (shape_memo_bad(f) != INT64_MIN)
        return 1;
    for (size_t j = 0; f->mx_blk_ok && j < mx_blocks(f); j++) {
        double x = mx_block(f, j);
        if (memcmp(&x, &f->mx_blk[j], sizeof x) != 0)
            return 1;
    }
    if (f->bw_nz_ok) {
        uint64_t nz[FC_BIN_WORDS];
        bw_bits(f, nz);
        if (memcmp(nz, f->bw_nz, sizeof nz) != 0)
            return 1;
        static const double budgets[] = {1e-6, 1e-4, 1e-3, 0.01, 0.05, 0.3};
        for (size_t i = 0; i < sizeof budgets / sizeof budgets[0]; i++) {
            double a = burst_q(f, budgets[i]), b = burst_q_scan(f, budgets[i]);
            if (memcmp(&a, &b, sizeof a) != 0)
                return 1;
        }
    }
    const struct fc_now_memo *m = f->now_memo;
    if (range_bad(f, &m->rm, recent_max_scan) || range_bad(f, &m->pk, shape_max))
        return 1;
    if (m->pk.valid && m->pk.ver == f->ver) {
        double x = peak_scan(f, m->pk_now, m->pk_from, m->pk_to);
        double y = tide__fc_peak(f, m->pk_now, m->pk_from, m->pk_to);
        if (memcmp(&x, &y, sizeof x) != 0)
            return 1;
    }
    if (!m->valid || m->ver != f->ver)
        return 0; /* not reusable: nothing to compare */
    fc_now_t x;
    fc_now_calc(f, m->now, &x);
    return memcmp(&x, &m->c, sizeof x) != 0;
}

void tide__fc_memo_reset(forecast_t *f)
{
    for (size_t i = 0; i < ring_len(f); i++)
        f->shape_tag[i] = INT64_MIN;
    f->now_memo->valid = f->now_memo->pk.valid = f->now_memo->rm.valid = 0;
    f->bw_nz_ok = 0;
    f->mx_blk_ok = 0;
}
