/* Fluid queueing model of serving latency (latency.h). Per service a queue
 * level Q (requests) evolves over each sub-step of length h at arrival rate
 * lambda and capacity mu = ready x replica_rps:
 *   served = min(Q + lambda h, mu h), Q' = Q + lambda h - served,
 *   rejected = max(Q' - B, 0) with B = queue_max_s x mu.
 * The requests served in the sub-step waited (Q + Q') / 2 / mu (Little's
 * law over the sub-step). TTFT = wait + prefill, prefill = prompt_tokens /
 * prefill_tps / (1 - rho_p) with rho_p the prefill load of a replica (capped
 * at 0.95). Decode: per-replica request rate x gives the concurrency c that
 * solves c = x L TBT(c), TBT(c) = (c + knee) / decode_tps, i.e.
 * c = x L knee / (decode_tps - x L) (capped where the denominator vanishes). */
#include "world/latency.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

#define SUBSTEPS 8
#define H_MIN 1e-5          /* seconds: the first bin's upper edge */
#define H_PER_DECADE 40
#define H_DECADES 10        /* 1e-5 .. 1e5 s */
#define H_BINS (H_PER_DECADE * H_DECADES + 2)
#define RHO_P_MAX 0.95
#define CONC_MAX_FACTOR 64  /* concurrency cap: knee x this */

typedef struct hist {
    double w[H_BINS];
    double total;
    double last_x; /* the last value binned and its bin: a service in a steady */
    int last_b;    /* state adds the same x every sub-step (0 -> bin 0 at calloc) */
} hist_t;

/* What one sub-step added (so that an identical one can add it again). */
typedef struct lstep {
    double a, rej, served;
    int counted;         /* served > 0: into the histograms and the sums */
    int ttft_ok, tbt_ok; /* within the targets */
} lstep_t;

/* A call of tide_latency_advance whose first sub-step left the queue where
 * it found it (the rest repeat it): the same dt, rate, ready replicas and
 * queue give the same sub-step, so a later such call only repeats st eight
 * times, with the histogram bins and per-replica memo the sub-step left. */
#define LMEMO 8 /* entries per service, by dt (most steps are 1..8 s apart) */
typedef struct lmemo {
    double dt, lambda, q;   /* the inputs (dt 0: empty) */
    int ready;
    lstep_t st;
    double ttft_x, tbt_x;   /* hist last_x / last_b after it (counted) */
    int ttft_b, tbt_b;
    double memo_x, memo_pre, memo_tbt;
} lmemo_t;

typedef struct lsvc {
    tide_latency_spec_t sp;
    double q;                        /* queue level (requests) */
    double arrived, served, rejected, max_q;
    double ttft_ok, tbt_ok;          /* served within target */
    double memo_x, memo_pre, memo_tbt; /* prefill and TBT at the last per-replica rate */
    hist_t ttft, tbt;
    lmemo_t memo[LMEMO];
} lsvc_t;

struct tide_latency {
    lsvc_t *v;
    size_t n;
    int full;  /* tide_latency_set_full: compute every sub-step (tests) */
};

static int bin_of(double x)
{
    if (!(x > H_MIN))
        return 0;
    int b = 1 + (int)floor(log10(x / H_MIN) * H_PER_DECADE);
    return b >= H_BINS ? H_BINS - 1 : b;
}

/* Upper edge of bin b (seconds). */
static double bin_hi(int b) { return H_MIN * pow(10.0, (double)b / H_PER_DECADE); }

static void hist_add(hist_t *h, double x, double w)
{
    if (!(w > 0))
        return;
    if (x != h->last_x) {
        h->last_b = bin_of(x);
        h->last_x = x;
    }
    h->w[h->last_b] += w;
    h->total += w;
}

static void hist_merge(hist_t *into, const hist_t *h)
{
    for (int b = 0; b < H_BINS; b++)
        into->w[b] += h->w[b];
    into->total += h->total;
}

/* Quantile q of the histogram, interpolated inside the bin. */
static double hist_q(const hist_t *h, double q)
{
    if (!(h->total > 0))
        return 0;
    double want = q * h->total, acc = 0;
    for (int b = 0; b < H_BINS; b++) {
        if (h->w[b] <= 0)
            continue;
        if (acc + h->w[b] >= want) {
            double lo = b == 0 ? 0 : bin_hi(b - 1), hi = bin_hi(b);
            double f = (want - acc) / h->w[b];
            return lo + (hi - lo) * (f < 0 ? 0 : f);
        }
        acc += h->w[b];
    }
    return bin_hi(H_BINS - 1);
}

static int bad(double x) { return !isfinite(x) || x < 0; }

int tide_latency_spec_default(tide_latency_spec_t *s)
{
    if (!(s->replica_rps > 0) || !isfinite(s->replica_rps) || bad(s->ttft_target_s) ||
        bad(s->tbt_target_s) || bad(s->prompt_tokens) || bad(s->output_tokens) ||
        bad(s->prefill_tps) || bad(s->decode_tps) || bad(s->decode_knee) || bad(s->queue_max_s))
        return -1;
    if (s->ttft_target_s == 0)
        s->ttft_target_s = 2.0;
    if (s->tbt_target_s == 0)
        s->tbt_target_s = 0.1;
    if (s->prompt_tokens == 0)
        s->prompt_tokens = 1024;
    if (s->output_tokens == 0)
        s->output_tokens = 256;
    if (s->prefill_tps == 0)
        s->prefill_tps = 8 * s->replica_rps * s->prompt_tokens;
    if (s->decode_tps == 0)
        s->decode_tps = 2 * s->replica_rps * s->output_tokens;
    if (s->decode_knee == 0)
        s->decode_knee = 32;
    if (s->queue_max_s == 0)
        s->queue_max_s = 30;
    return 0;
}

tide_latency_t *tide_latency_create(const tide_latency_spec_t *specs, size_t n)
{
    tide_latency_t *m = tide_xcalloc(1, sizeof *m);
    m->v = tide_xcalloc(n ? n : 1, sizeof *m->v);
    m->n = n;
    for (size_t i = 0; i < n; i++) {
        m->v[i].sp = specs[i];
        m->v[i].memo_x = NAN; /* none yet */
        if (tide_latency_spec_default(&m->v[i].sp) != 0) {
            tide_latency_destroy(m);
            return NULL;
        }
    }
    return m;
}

void tide_latency_destroy(tide_latency_t *m)
{
    if (!m)
        return;
    free(m->v);
    free(m);
}

/* Time between tokens of a replica serving x requests/s. */
static double tbt_at(const tide_latency_spec_t *sp, double x)
{
    double load = x * sp->output_tokens, knee = sp->decode_knee;
    double cmax = knee * CONC_MAX_FACTOR;
    double c = load < sp->decode_tps ? load * knee / (sp->decode_tps - load) : cmax;
    if (c > cmax)
        c = cmax;
    return (c + knee) / sp->decode_tps;
}

/* Prefill time of a request at a replica serving x requests/s. */
static double prefill_at(const tide_latency_spec_t *sp, double x)
{
    double rho = x * sp->prompt_tokens / sp->prefill_tps;
    if (rho > RHO_P_MAX)
        rho = RHO_P_MAX;
    return sp->prompt_tokens / sp->prefill_tps / (1 - rho);
}

/* One sub-step of h seconds; what it added into *st. */
static void substep(lsvc_t *v, double h, double lambda, int ready, lstep_t *st)
{
    const tide_latency_spec_t *sp = &v->sp;
    double mu = ready * sp->replica_rps, a = lambda * h;
    double served = v->q + a < mu * h ? v->q + a : mu * h;
    double q1 = v->q + a - served, bound = sp->queue_max_s * mu;
    *st = (lstep_t){.a = a, .served = served};
    v->arrived += a;
    if (q1 > bound) {
        st->rej = q1 - bound;
        v->rejected += st->rej;
        q1 = bound;
    }
    if (served > 0 && mu > 0) {
        double x = served / h / ready; /* requests/s per replica */
        if (!(x == v->memo_x)) { /* a steady service repeats x every sub-step */
            v->memo_x = x;
            v->memo_pre = prefill_at(sp, x);
            v->memo_tbt = tbt_at(sp, x);
        }
        double ttft = (v->q + q1) / 2 / mu + v->memo_pre, tbt = v->memo_tbt;
        hist_add(&v->ttft, ttft, served);
        hist_add(&v->tbt, tbt, served);
        v->served += served;
        st->counted = 1;
        st->ttft_ok = ttft <= sp->ttft_target_s;
        st->tbt_ok = tbt <= sp->tbt_target_s;
        if (st->ttft_ok)
            v->ttft_ok += served;
        if (st->tbt_ok)
            v->tbt_ok += served;
    }
    v->q = q1;
    if (q1 > v->max_q)
        v->max_q = q1;
}

/* k more sub-steps after one that left the queue where it found it: their
 * inputs are the same, so they add what st says, one by one as substep adds
 * (the sums round as they would); the histogram bins are the memoised ones
 * (hist_add saw the same values last). */
static inline __attribute__((always_inline)) void repeat_body(lsvc_t *v, const lstep_t *st,
                                                             int k)
{
    /* The sums in locals (registers). A sum skipped here would get +0.0:
     * every sum here starts at +0.0 and only grows by values >= 0 (or NaN),
     * so x + 0.0 == x to the bit. A sub-step that served nothing (!counted)
     * has served == 0 (mu h = 0 then). */
    typedef double v2d __attribute__((vector_size(16)));
    if (st->rej > 0) {
        double rej = st->rej, rejected = v->rejected;
        for (int i = 0; i < k; i++)
            rejected += rej;
        v->rejected = rejected;
    }
    if (!st->counted) {
        double a = st->a, arrived = v->arrived;
        for (int i = 0; i < k; i++)
            arrived += a;
        v->arrived = arrived;
        return;
    }
    /* The eight sums in pairs (one vector add is two IEEE additions, each
     * rounding as the scalar one): arrived and served, the TTFT bin and
     * total, the TBT bin and total, the two within-target sums (+0.0 for a
     * target missed, as above). */
    double sv = st->served;
    double *tw = &v->ttft.w[v->ttft.last_b], *bw = &v->tbt.w[v->tbt.last_b];
    v2d as = {v->arrived, v->served}, t = {*tw, v->ttft.total}, b = {*bw, v->tbt.total};
    v2d ok = {v->ttft_ok, v->tbt_ok};
    v2d das = {st->a, sv}, d = {sv, sv}, dok = {st->ttft_ok ? sv : 0.0, st->tbt_ok ? sv : 0.0};
#pragma GCC unroll 8
    for (int i = 0; i < k; i++) {
        as += das;
        t += d;
        b += d;
        ok += dok;
    }
    v->arrived = as[0];
    v->served = as[1];
    *tw = t[0];
    v->ttft.total = t[1];
    *bw = b[0];
    v->tbt.total = b[1];
    v->ttft_ok = ok[0];
    v->tbt_ok = ok[1];
}

/* k more sub-steps (repeat_body); k == SUBSTEPS (a memoised call) unrolled. */
static void substep_repeat(lsvc_t *v, const lstep_t *st, int k)
{
    if (k == SUBSTEPS)
        repeat_body(v, st, SUBSTEPS);
    else
        repeat_body(v, st, k);
}

void tide_latency_advance(tide_latency_t *m, int s, double dt, double demand_rps, int ready)
{
    if (!m || s < 0 || (size_t)s >= m->n || !(dt > 0) || !isfinite(dt) || bad(demand_rps))
        return;
    if (ready < 0)
        ready = 0;
    lsvc_t *v = &m->v[s];
    lmemo_t *me = &v->memo[(int)(dt < 1e9 ? dt : 0) & (LMEMO - 1)];
    if (!m->full && me->dt == dt && me->lambda == demand_rps && me->ready == ready &&
        me->q == v->q) {
        /* what the first sub-step would leave but its sums (substep_repeat's) */
        if (me->st.counted) {
            v->ttft.last_x = me->ttft_x;
            v->ttft.last_b = me->ttft_b;
            v->tbt.last_x = me->tbt_x;
            v->tbt.last_b = me->tbt_b;
            v->memo_x = me->memo_x;
            v->memo_pre = me->memo_pre;
            v->memo_tbt = me->memo_tbt;
        }
        substep_repeat(v, &me->st, SUBSTEPS);
        return;
    }
    for (int k = 0; k < SUBSTEPS; k++) {
        double q0 = v->q;
        lstep_t st;
        substep(v, dt / SUBSTEPS, demand_rps, ready, &st);
        if (v->q == q0 && !m->full) { /* steady: the rest repeat this one */
            if (k == 0)
                *me = (lmemo_t){.dt = dt, .lambda = demand_rps, .q = q0, .ready = ready,
                                .st = st, .ttft_x = v->ttft.last_x, .ttft_b = v->ttft.last_b,
                                .tbt_x = v->tbt.last_x, .tbt_b = v->tbt.last_b,
                                .memo_x = v->memo_x, .memo_pre = v->memo_pre,
                                .memo_tbt = v->memo_tbt};
            substep_repeat(v, &st, SUBSTEPS - 1 - k);
            return;
        }
    }
}

void tide_latency_set_full(tide_latency_t *m, int full)
{
    if (m)
        m->full = full;
}

static double frac(double ok, double of) { return of > 0 ? ok / of : 1.0; }

int tide_latency_stats(const tide_latency_t *m, int s, tide_latency_stats_t *out)
{
    if (!m || s < -1 || (s >= 0 && (size_t)s >= m->n))
        return -1;
    memset(out, 0, sizeof *out);
    hist_t *ttft = tide_xcalloc(2, sizeof *ttft), *tbt = ttft + 1;
    double ttft_ok = 0, tbt_ok = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (s >= 0 && (size_t)s != i)
            continue;
        const lsvc_t *v = &m->v[i];
        out->arrived += v->arrived;
        out->served += v->served;
        out->queued += v->q;
        out->rejected += v->rejected;
        out->max_queue = TIDE_MAX(out->max_queue, v->max_q);
        ttft_ok += v->ttft_ok;
        tbt_ok += v->tbt_ok;
        hist_merge(ttft, &v->ttft);
        hist_merge(tbt, &v->tbt);
    }
    out->ttft_p50_s = hist_q(ttft, 0.50);
    out->ttft_p99_s = hist_q(ttft, 0.99);
    out->tbt_p50_s = hist_q(tbt, 0.50);
    out->tbt_p99_s = hist_q(tbt, 0.99);
    out->ttft_attain = frac(ttft_ok, out->served + out->rejected);
    out->tbt_attain = frac(tbt_ok, out->served + out->rejected);
    free(ttft);
    return 0;
}

const tide_latency_spec_t *tide_latency_spec(const tide_latency_t *m, int s)
{
    return m && s >= 0 && (size_t)s < m->n ? &m->v[s].sp : NULL;
}
