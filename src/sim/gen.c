/* tide simulator: built-in scenario generator (`tide gen`).
 *
 * Writes services.csv, demand.csv and jobs.csv for one of three scenarios.
 * Deterministic: a xoshiro256** generator seeded through splitmix64 from the
 * seed, with one independent stream per part (demand, jobs), so the same
 * options give byte-identical files and changing --jobs does not move the
 * demand curve. No rand(), no clock.
 *
 * Where the numbers come from (also in docs/gen.md):
 *
 * seed200 -- the sources' worked case "200 H100, enterprise API by day,
 *   training always queued" (/work/shared/design/domain.md, "Worked cases"):
 *   - cluster 25x8 H100; inference baseline 40 GPUs reserved, 160 in the
 *     preemptible pool; the static split it replaced gave inference 80 GPUs,
 *     so the day peak needs ~80 GPUs and the night trough ~40.
 *     Two services: api-large (TP8, 4 rps/replica, 3 replicas floor) and
 *     api-small (TP4, 6 rps/replica, 4 replicas floor): floor 24+16 = 40 GPUs;
 *     weekday peak 5.5 + 7.3 replicas (ceil -> 6x8 + 8x4 = 80 GPUs), night
 *     2.6 + 3.5 replicas (ceil -> 3x8 + 4x4 = 40 GPUs). Peak targets sit below
 *     whole replicas so the noise never tips a row to one more replica.
 *   - curve: business-day shape (enterprise API): night trough 23:00-07:00
 *     (the case's "40 GPUs x 8 night hours"), cosine rise 07-10, plateau 10-17
 *     with a 4% lunch dip, cosine decline 17-23; weekend peak 70% of a
 *     weekday's; a per-day factor on the peak (sd 1.5%, clipped +-3%) and
 *     multiplicative noise per 5-minute row (sd 2%, clipped +-5%). t=0 is
 *     Monday 00:00.
 *   - warm-up 540 s (TP8) / 360 s (TP4): weight load + communicator + graph
 *     capture + health check, "a few minutes" (domain.md, control loop).
 *   - training: Poisson arrivals at a rate computed so that the offered load
 *     (sum gpus x duration) is 1.4x training's average share (cluster minus
 *     the mean inference need) -- "training always queued". Plus a backlog at
 *     t=0 of jobs totalling >= 200 GPUs, so training is full from the start.
 *     Sizes: Philly's sizes (1..64 GPUs) re-weighted toward multi-GPU jobs
 *     (1: 35%, 2: 12%, 4: 15%, 8: 22%, 16: 9%, 32: 5%, 64: 2%; Philly itself
 *     is 93% 1-GPU, /work/shared/traces/README.md). Durations lognormal,
 *     median 1.5 h, sigma 1.5 (p99 ~ 48 h), clamped to [5 min, 48 h]; the
 *     Poisson count and the heavy tails make one draw's load wander (1.15x to
 *     1.65x over 14 days), so the arrivals' durations are then scaled by one
 *     common factor (about 0.85..1.2) to make the offered load exactly 1.4x.
 *     Six teams. Priorities P1 5%, P2 60%, P3 35% (the sources' priority
 *     matrix: P1 urgent, P2 regular, P3 experiments).
 *
 * seed32 -- the sources' "32 GPUs, 8 per high-speed domain" case (domain.md):
 *   - cluster 4x8 H100. Day: two TP8 decode replicas (16 GPUs), a TP4 prefill
 *     pool of 2 replicas (8), 8 GPUs of preemptible fine-tuning. Night: one TP8
 *     hot decode replica, 24 GPUs as a 3xDP TP8 training mesh.
 *     decode: TP8, 3 rps/replica, floor 1, day 1.7 replicas (-> 2), night 0.6
 *     (-> 1). prefill: TP4, 5 rps/replica, floor 0, day 1.7 (-> 2), night 0.
 *     Same business-day shape, no weekend effect (the case is one day's cycle).
 *   - jobs: "mesh-3xdp" 24 GPUs, gang 8, dp_min 1, P2, submitted at 0, 2.75-3.25
 *     days of work at full width; "ft-dNN" 8-GPU P3 fine-tunes submitted most
 *     mornings (85% of days, 08:30-10:00), median 6 h; a few small P3/P2
 *     experiments (Poisson, 4/day, 1-4 GPUs, median 45 min).
 *
 * bench -- a large synthetic trace for the benchmark:
 *   - cluster nodes x 8 (default 128x8). Job sizes from Philly's figures
 *     (traces README: 1 GPU 93.2%, 2: 2.2%, 4: 2.3%, 8: 2.0%, 16: 0.24%,
 *     >=32: 0.09%, max 128; the >=32 share is split 32: 0.06%, 64: 0.025%,
 *     128: 0.005% here), capped at half the cluster. Durations lognormal with
 *     Philly's median 1,144 s and p90 11,266 s (sigma = ln(11266/1144)/1.2816
 *     = 1.785), clamped to [60 s, Philly's p99 254,884 s], then all scaled by
 *     one factor so that the offered load is exactly 1.1x training's average
 *     share. Arrivals: exactly --jobs of them, from a non-homogeneous process
 *     (weekly cycle stronger than daily, as the README notes for Philly:
 *     weekend 0.55x, work hours 1.5x night; plus an hourly lognormal burst
 *     factor, sigma 0.7, "very bursty"). 15 teams ("vc01".."vc15", Philly's 15
 *     virtual clusters) with Zipf(0.8) weights.
 *   - demand: three services (chat TP8, code TP4, embed TP1; 60/30/10% of the
 *     GPUs) peaking near 35% of the cluster and troughing near 15%: a
 *     peak/trough ratio ~2.3, like ServeGen's m-small tier (about 2.2x, peak
 *     20:00, trough 05:00; traces README), whose consumer shape is used.
 *
 * All training scenarios: gang_gpus = min(gpus, 8) (one high-speed domain);
 * 30% of jobs with >= 16 GPUs are elastic (dp_min = dp_max/2 or dp_max/4, at
 * least 1); ckpt_interval_s 1800; ckpt_s = (30 + 15 log2 gpus) x U(0.85,1.15)
 * clamped to [30, 120] (checkpoint bytes grow with model size); restore_s =
 * ckpt_s x U(1.8, 2.2). These follow domain.md ("every job declares checkpoint
 * bytes, expected time and minimum gang size"; "changing DP is cheap").
 */
#include "sim/gen.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "util/fs.h"
#include "util/util.h"

#define DAY_S 86400
#define ROWS_PER_DAY (DAY_S / TIDE_GEN_STEP_S)
#define GEN_PI 3.14159265358979323846
#define MAX_SVC 4

/* ------------------------------------------------------------------ PRNG */

typedef struct rng {
    uint64_t s[4];
} rng_t;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Independent stream `stream` of seed `seed`. */
static void rng_seed(rng_t *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ (stream * 0xd1b54a32d192ed03ULL);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* xoshiro256** (Blackman & Vigna). */
static uint64_t rng_next(rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

/* Uniform in [0, 1). */
static double rng_u01(rng_t *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* Uniform in (0, 1]. */
static double rng_u01_open(rng_t *r) { return (double)((rng_next(r) >> 11) + 1) * 0x1.0p-53; }

static double rng_range(rng_t *r, double lo, double hi) { return lo + (hi - lo) * rng_u01(r); }

/* Standard normal (Box-Muller, one value per call). */
static double rng_normal(rng_t *r)
{
    double u = rng_u01_open(r), v = rng_u01(r);
    return sqrt(-2.0 * log(u)) * cos(2.0 * GEN_PI * v);
}

static double rng_exp(rng_t *r) { return -log(rng_u01_open(r)); }

/* 1 + N(0, sd) clipped to [1 - clip, 1 + clip]. */
static double rng_factor(rng_t *r, double sd, double clip)
{
    double z = rng_normal(r) * sd;
    if (z > clip)
        z = clip;
    if (z < -clip)
        z = -clip;
    return 1.0 + z;
}

/* Lognormal with the given median, clamped to [lo, hi]. */
static double rng_lognormal(rng_t *r, double median, double sigma, double lo, double hi)
{
    double x = median * exp(sigma * rng_normal(r));
    return x < lo ? lo : x > hi ? hi : x;
}

/* Index drawn from weights w[0..n) (need not sum to 1). */
static int rng_pick(rng_t *r, const double *w, int n)
{
    double tot = 0;
    for (int i = 0; i < n; i++)
        tot += w[i];
    double x = rng_u01(r) * tot;
    for (int i = 0; i < n; i++) {
        if (x < w[i])
            return i;
        x -= w[i];
    }
    return n - 1;
}

/* ---------------------------------------------------------- distributions */

static double phi(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

/* E[clamp(X, lo, hi)] for X lognormal(median, sigma). */
static double lognormal_clamped_mean(double median, double sigma, double lo, double hi)
{
    double mu = log(median);
    double a = (log(lo) - mu) / sigma, b = (log(hi) - mu) / sigma;
    return lo * phi(a) + exp(mu + sigma * sigma / 2) * (phi(b - sigma) - phi(a - sigma)) +
           hi * (1.0 - phi(b));
}

typedef struct size_mix {
    int gpus;
    double w;
} size_mix_t;

/* seed200: Philly's sizes re-weighted toward multi-GPU jobs. */
static const size_mix_t seed200_sizes[] = {
    {1, 35}, {2, 12}, {4, 15}, {8, 22}, {16, 9}, {32, 5}, {64, 2},
};
/* bench: Philly's figures (traces README), >=32 split by us. */
static const size_mix_t philly_sizes[] = {
    {1, 93.2}, {2, 2.2}, {4, 2.3}, {8, 2.0}, {16, 0.24}, {32, 0.06}, {64, 0.025}, {128, 0.005},
};

static const char *const seed200_teams[] = {"pretrain", "posttrain", "multimodal",
                                            "speech",   "search",    "research"};
static const double seed200_team_w[] = {15, 20, 15, 10, 15, 25};

/* Priorities P1, P2, P3 (the sources' matrix). */
static const double prio_w[] = {5, 60, 35};

/* ------------------------------------------------------------- day shapes */

static double ease(double x)
{
    if (x <= 0)
        return 0;
    if (x >= 1)
        return 1;
    return 0.5 - 0.5 * cos(GEN_PI * x);
}

/* Business day (enterprise API), 0 at night, 1 at the plateau. */
static double shape_business(double h)
{
    if (h < 7)
        return 0;
    if (h < 10)
        return ease((h - 7) / 3);
    if (h < 17) {
        double dip = (h >= 12 && h < 14) ? 0.04 * (0.5 - 0.5 * cos(GEN_PI * (h - 12))) : 0;
        return 1 - dip;
    }
    if (h < 23)
        return 1 - ease((h - 17) / 6);
    return 0;
}

/* Consumer day (ServeGen m-small): trough 05:00, peak 20:00. */
static double shape_consumer(double h)
{
    if (h >= 5 && h < 20)
        return ease((h - 5) / 15);
    double x = h >= 20 ? h - 20 : h + 4; /* hours since 20:00 */
    return 1 - ease(x / 9);
}

enum { SHAPE_BUSINESS = 0, SHAPE_CONSUMER };

static double shape_at(int shape, double h)
{
    return shape == SHAPE_CONSUMER ? shape_consumer(h) : shape_business(h);
}

/* ------------------------------------------------------------- scenarios */

typedef struct svc {
    char name[24];
    int gpr;             /* gpus_per_replica */
    double replica_rps;
    int min_rep, max_rep;
    int warmup_s;
    double peak_rep;     /* demand in replicas at a weekday peak */
    double trough_rep;   /* demand in replicas at night */
    double weekend;      /* weekend peak / weekday peak */
    int shape;
    double day_sd, day_clip;     /* per-day factor on the peak */
    double noise_sd, noise_clip; /* per-row multiplicative noise */
} svc_t;

typedef struct job {
    char id[24];
    int64_t submit;
    const char *team; /* static storage or ctx->teams */
    int prio, gpus, gang, dp_min;
    int64_t dur, ckpt_int, ckpt_s, restore_s;
    double raw;  /* drawn duration before scale_durations */
    int backlog;
    size_t seq;
} job_t;

typedef struct ctx {
    const char *scenario;
    int days;
    int64_t horizon;
    int nodes, gpus;
    long jobs_wanted;
    uint64_t seed;
    svc_t svc[MAX_SVC];
    int nsvc;
    long nrows;          /* time rows (per service) */
    double *rps;         /* nrows * nsvc, rounded to 3 decimals */
    int peak, trough, floor_gpus;
    double mean_inf;
    job_t *jobs;
    size_t njobs, jcap;
    char teams[16][8];
} ctx_t;

typedef struct scen {
    const char *name;
    int nodes;        /* default */
    int days;         /* default */
    int takes_nodes;  /* --nodes / --jobs accepted */
    void (*services)(ctx_t *c);
    void (*jobs)(ctx_t *c, rng_t *r);
} scen_t;

static void svc_add(ctx_t *c, const svc_t *s) { c->svc[c->nsvc++] = *s; }

static job_t *job_new(ctx_t *c)
{
    tide_grow((void **)&c->jobs, &c->jcap, c->njobs + 1, sizeof *c->jobs);
    job_t *j = &c->jobs[c->njobs];
    memset(j, 0, sizeof *j);
    j->seq = c->njobs++;
    j->ckpt_int = 1800;
    return j;
}

/* Gang, elasticity and checkpoint costs from the size (see the header). */
static void job_shape(job_t *j, rng_t *r, int gpus)
{
    j->gpus = gpus;
    j->gang = gpus < 8 ? gpus : 8;
    int dp_max = gpus / j->gang;
    j->dp_min = dp_max;
    if (gpus >= 16 && rng_u01(r) < 0.30) {
        int d = dp_max >> (rng_u01(r) < 0.5 ? 1 : 2);
        j->dp_min = d < 1 ? 1 : d;
    }
    double ck = (30.0 + 15.0 * log2((double)gpus)) * rng_range(r, 0.85, 1.15);
    ck = ck < 30 ? 30 : ck > 120 ? 120 : ck;
    j->ckpt_s = llround(ck);
    j->restore_s = llround((double)j->ckpt_s * rng_range(r, 1.8, 2.2));
}

static int pick_size(rng_t *r, const size_mix_t *m, int n, int cap)
{
    double w[16];
    for (int i = 0; i < n; i++)
        w[i] = m[i].w;
    int g = m[rng_pick(r, w, n)].gpus;
    while (g > cap && g > 1)
        g /= 2;
    return g;
}

static double mean_size(const size_mix_t *m, int n, int cap)
{
    double tot = 0, s = 0;
    for (int i = 0; i < n; i++) {
        int g = m[i].gpus;
        while (g > cap && g > 1)
            g /= 2;
        tot += m[i].w;
        s += m[i].w * g;
    }
    return s / tot;
}

static int prio_pick(rng_t *r) { return 1 + rng_pick(r, prio_w, 3); }

/* Scale the drawn durations (raw) of the non-backlog jobs by one factor so
 * that their offered work sum(gpus * duration) is `target` GPU-seconds, each
 * duration clamped to [lo, hi] after scaling (a few fixed-point passes, as the
 * clamp moves the sum). */
static void scale_durations(ctx_t *c, double target, double lo, double hi)
{
    double f = 1.0;
    for (int pass = 0; pass < 8; pass++) {
        double work = 0;
        for (size_t i = 0; i < c->njobs; i++) {
            const job_t *j = &c->jobs[i];
            if (j->backlog)
                continue;
            double d = j->raw * f;
            work += (double)j->gpus * (d < lo ? lo : d > hi ? hi : d);
        }
        if (work <= 0)
            return;
        double g = target / work;
        f *= g;
        if (fabs(g - 1) < 1e-9)
            break;
    }
    for (size_t i = 0; i < c->njobs; i++) {
        job_t *j = &c->jobs[i];
        if (j->backlog)
            continue;
        double d = j->raw * f;
        j->dur = llround(d < lo ? lo : d > hi ? hi : d);
    }
}

/* seed200 ------------------------------------------------------------- */

static void seed200_services(ctx_t *c)
{
    svc_add(c, &(svc_t){.name = "api-large", .gpr = 8, .replica_rps = 4.0, .min_rep = 3,
                        .max_rep = 12, .warmup_s = 540, .peak_rep = 5.5, .trough_rep = 2.6,
                        .weekend = 0.7, .shape = SHAPE_BUSINESS, .day_sd = 0.015,
                        .day_clip = 0.03, .noise_sd = 0.02, .noise_clip = 0.05});
    svc_add(c, &(svc_t){.name = "api-small", .gpr = 4, .replica_rps = 6.0, .min_rep = 4,
                        .max_rep = 16, .warmup_s = 360, .peak_rep = 7.3, .trough_rep = 3.5,
                        .weekend = 0.7, .shape = SHAPE_BUSINESS, .day_sd = 0.015,
                        .day_clip = 0.03, .noise_sd = 0.02, .noise_clip = 0.05});
}

#define S200_MEDIAN 5400.0
#define S200_SIGMA 1.5
#define S200_DMIN 300.0
#define S200_DMAX 172800.0
#define S200_LOAD 1.4

static void seed200_job(ctx_t *c, rng_t *r, int64_t submit, int backlog)
{
    job_t *j = job_new(c);
    j->submit = submit;
    j->backlog = backlog;
    j->team = seed200_teams[rng_pick(r, seed200_team_w, 6)];
    j->prio = prio_pick(r);
    int n = (int)(sizeof seed200_sizes / sizeof seed200_sizes[0]);
    job_shape(j, r, pick_size(r, seed200_sizes, n, c->gpus));
    j->raw = rng_lognormal(r, S200_MEDIAN, S200_SIGMA, S200_DMIN, S200_DMAX);
    j->dur = llround(j->raw);
}

static void seed200_jobs(ctx_t *c, rng_t *r)
{
    /* Backlog at t=0: at least the whole cluster's worth of GPUs. */
    int gpus = 0;
    while (gpus < c->gpus) {
        seed200_job(c, r, 0, 1);
        gpus += c->jobs[c->njobs - 1].gpus;
    }
    int n = (int)(sizeof seed200_sizes / sizeof seed200_sizes[0]);
    double gpu_s = mean_size(seed200_sizes, n, c->gpus) *
                   lognormal_clamped_mean(S200_MEDIAN, S200_SIGMA, S200_DMIN, S200_DMAX);
    double lambda = S200_LOAD * (c->gpus - c->mean_inf) / gpu_s; /* jobs per second */
    double t = 0;
    for (;;) {
        t += rng_exp(r) / lambda;
        if (t >= (double)c->horizon)
            break;
        /* t=0 is the backlog's: an arrival in the first second gets t=1 */
        seed200_job(c, r, t < 1 ? 1 : (int64_t)t, 0);
    }
    /* The Poisson count and the heavy tails make the drawn load wander
     * (1.15x..1.65x over 14 days): pin it to S200_LOAD exactly. */
    scale_durations(c, S200_LOAD * (c->gpus - c->mean_inf) * (double)c->horizon, S200_DMIN,
                    S200_DMAX);
}

/* seed32 -------------------------------------------------------------- */

static void seed32_services(ctx_t *c)
{
    svc_add(c, &(svc_t){.name = "decode", .gpr = 8, .replica_rps = 3.0, .min_rep = 1,
                        .max_rep = 3, .warmup_s = 480, .peak_rep = 1.7, .trough_rep = 0.6,
                        .weekend = 1.0, .shape = SHAPE_BUSINESS, .day_sd = 0.015,
                        .day_clip = 0.03, .noise_sd = 0.02, .noise_clip = 0.05});
    svc_add(c, &(svc_t){.name = "prefill", .gpr = 4, .replica_rps = 5.0, .min_rep = 0,
                        .max_rep = 4, .warmup_s = 300, .peak_rep = 1.7, .trough_rep = 0.0,
                        .weekend = 1.0, .shape = SHAPE_BUSINESS, .day_sd = 0.015,
                        .day_clip = 0.03, .noise_sd = 0.02, .noise_clip = 0.05});
}

static void seed32_jobs(ctx_t *c, rng_t *r)
{
    job_t *j = job_new(c);
    snprintf(j->id, sizeof j->id, "mesh-3xdp");
    j->team = "pretrain";
    j->prio = 2;
    j->gpus = 24;
    j->gang = 8;
    j->dp_min = 1;
    j->dur = 60 * llround(rng_range(r, 2.75, 3.25) * DAY_S / 60);
    j->ckpt_s = 100;
    j->restore_s = 200;

    for (int d = 0; d < c->days; d++) {
        if (d > 0 && rng_u01(r) >= 0.85)
            continue;
        j = job_new(c);
        snprintf(j->id, sizeof j->id, "ft-d%02d", d);
        j->submit = (int64_t)d * DAY_S + (int64_t)rng_range(r, 8.5 * 3600, 10 * 3600);
        j->team = "finetune";
        j->prio = 3;
        job_shape(j, r, 8);
        j->dur = llround(rng_lognormal(r, 6 * 3600.0, 0.25, 2 * 3600.0, 10 * 3600.0));
    }

    static const size_mix_t small[] = {{1, 50}, {2, 30}, {4, 20}};
    double t = 0;
    int k = 0;
    for (;;) {
        t += rng_exp(r) / (4.0 / DAY_S);
        if (t >= (double)c->horizon)
            break;
        j = job_new(c);
        snprintf(j->id, sizeof j->id, "exp-%03d", ++k);
        j->submit = (int64_t)t;
        j->team = "research";
        j->prio = rng_u01(r) < 0.85 ? 3 : 2;
        job_shape(j, r, pick_size(r, small, 3, c->gpus));
        j->dur = llround(rng_lognormal(r, 45 * 60.0, 0.8, 300.0, 6 * 3600.0));
    }
}

/* bench --------------------------------------------------------------- */

static void bench_services(ctx_t *c)
{
    static const struct {
        const char *name;
        int gpr;
        double rps, share;
        int warmup;
    } d[] = {{"chat", 8, 3.0, 0.6, 600}, {"code", 4, 5.0, 0.3, 420}, {"embed", 1, 40.0, 0.1, 120}};
    for (int i = 0; i < 3; i++) {
        svc_t s = {.gpr = d[i].gpr, .replica_rps = d[i].rps, .warmup_s = d[i].warmup,
                   .weekend = 1.0, .shape = SHAPE_CONSUMER, .day_sd = 0.015,
                   .day_clip = 0.03, .noise_sd = 0.02, .noise_clip = 0.05};
        snprintf(s.name, sizeof s.name, "%s", d[i].name);
        s.peak_rep = 0.34 * c->gpus * d[i].share / d[i].gpr;
        s.trough_rep = 0.145 * c->gpus * d[i].share / d[i].gpr;
        s.min_rep = (int)floor(s.trough_rep * 0.95);
        if (s.min_rep < 1)
            s.min_rep = 1;
        s.max_rep = (int)ceil(2 * s.peak_rep);
        svc_add(c, &s);
    }
}

#define PHILLY_MEDIAN 1144.0
#define PHILLY_P90 11266.0
#define PHILLY_P99 254884.0
#define BENCH_LOAD 1.1

/* Arrival intensity of 5-minute bucket b (Philly: weekly cycle stronger than
 * daily, very bursty); burst is the hour's factor. */
static double bench_intensity(long b, double burst)
{
    long day = b / ROWS_PER_DAY;
    double h = (double)(b % ROWS_PER_DAY) * TIDE_GEN_STEP_S / 3600.0;
    double week = (day % 7) < 5 ? 1.0 : 0.55;
    double daily = 0.8 + 0.4 * shape_business(h);
    return week * daily * burst;
}

static void bench_jobs(ctx_t *c, rng_t *r)
{
    double team_w[15];
    for (int i = 0; i < 15; i++) {
        snprintf(c->teams[i], sizeof c->teams[i], "vc%02d", i + 1);
        team_w[i] = 1.0 / pow(i + 1, 0.8);
    }

    /* Bucket weights and their cumulative sum. */
    long nb = c->nrows;
    double *cum = tide_xmalloc((size_t)(nb + 1) * sizeof *cum);
    cum[0] = 0;
    double burst = 1;
    for (long b = 0; b < nb; b++) {
        if (b % (3600 / TIDE_GEN_STEP_S) == 0)
            burst = exp(0.7 * rng_normal(r) - 0.7 * 0.7 / 2);
        cum[b + 1] = cum[b] + bench_intensity(b, burst);
    }

    /* n sorted uniforms from exponential spacings, mapped through the
     * inverse of the cumulative intensity. */
    size_t n = (size_t)c->jobs_wanted;
    double *u = tide_xmalloc((n + 1) * sizeof *u);
    double s = 0;
    for (size_t k = 0; k <= n; k++) {
        s += rng_exp(r);
        u[k] = s;
    }
    double total = u[n];
    long b = 0;
    int cap = c->gpus / 2;
    int nsz = (int)(sizeof philly_sizes / sizeof philly_sizes[0]);
    double sigma = log(PHILLY_P90 / PHILLY_MEDIAN) / 1.2815515655446004;
    for (size_t k = 0; k < n; k++) {
        double x = u[k] / total * cum[nb];
        while (b < nb - 1 && cum[b + 1] <= x)
            b++;
        double w = cum[b + 1] - cum[b];
        double t = (double)b * TIDE_GEN_STEP_S + (w > 0 ? TIDE_GEN_STEP_S * (x - cum[b]) / w : 0);
        int64_t ts = (int64_t)t;
        if (ts >= c->horizon)
            ts = c->horizon - 1;
        job_t *j = job_new(c);
        j->submit = ts;
        j->team = c->teams[rng_pick(r, team_w, 15)];
        j->prio = prio_pick(r);
        job_shape(j, r, pick_size(r, philly_sizes, nsz, cap));
        j->raw = rng_lognormal(r, PHILLY_MEDIAN, sigma, 60.0, PHILLY_P99);
    }
    free(u);
    free(cum);

    scale_durations(c, BENCH_LOAD * (c->gpus - c->mean_inf) * (double)c->horizon, 60.0,
                    1e15);
}

static const scen_t scenarios[] = {
    {"seed200", 25, 14, 0, seed200_services, seed200_jobs},
    {"seed32", 4, 7, 0, seed32_services, seed32_jobs},
    {"bench", 128, 30, 1, bench_services, bench_jobs},
};
#define NSCEN ((int)(sizeof scenarios / sizeof scenarios[0]))

static const scen_t *scen_find(const char *name)
{
    for (int i = 0; name && i < NSCEN; i++)
        if (!strcmp(scenarios[i].name, name))
            return &scenarios[i];
    return NULL;
}

const char *const *tide_gen_scenarios(void)
{
    static const char *const names[] = {"seed200", "seed32", "bench", NULL};
    return names;
}

const char *tide_gen_cluster_spec(const char *scenario)
{
    const scen_t *s = scen_find(scenario);
    if (!s)
        return NULL;
    if (!strcmp(s->name, "seed200"))
        return "25x8:H100";
    if (!strcmp(s->name, "seed32"))
        return "4x8:H100";
    return "128x8:H100";
}

/* ---------------------------------------------------------------- demand */

static int need_gpus(const svc_t *s, double rps)
{
    return (int)ceil(rps / s->replica_rps - 1e-9) * s->gpr;
}

static void gen_demand(ctx_t *c, rng_t *r)
{
    c->nrows = (long)c->days * ROWS_PER_DAY;
    c->rps = tide_xmalloc((size_t)c->nrows * (size_t)c->nsvc * sizeof *c->rps);
    c->floor_gpus = 0;
    for (int k = 0; k < c->nsvc; k++)
        c->floor_gpus += c->svc[k].min_rep * c->svc[k].gpr;
    c->peak = 0;
    c->trough = INT32_MAX;
    double inf_sum = 0;
    double dayf[MAX_SVC] = {0};
    for (long row = 0; row < c->nrows; row++) {
        long day = row / ROWS_PER_DAY;
        if (row % ROWS_PER_DAY == 0)
            for (int k = 0; k < c->nsvc; k++)
                dayf[k] = rng_factor(r, c->svc[k].day_sd, c->svc[k].day_clip);
        double h = ((double)(row % ROWS_PER_DAY) + 0.5) * TIDE_GEN_STEP_S / 3600.0;
        int weekend = (day % 7) >= 5;
        int need = 0, held = 0;
        for (int k = 0; k < c->nsvc; k++) {
            const svc_t *s = &c->svc[k];
            double peak = s->peak_rep * dayf[k] * (weekend ? s->weekend : 1.0);
            double level = s->trough_rep + (peak - s->trough_rep) * shape_at(s->shape, h);
            double v = level * s->replica_rps * rng_factor(r, s->noise_sd, s->noise_clip);
            v = round(v * 1000.0) / 1000.0;
            c->rps[row * c->nsvc + k] = v;
            int n = need_gpus(s, v);
            need += n;
            held += TIDE_MAX(n, s->min_rep * s->gpr);
        }
        c->peak = TIDE_MAX(c->peak, need);
        c->trough = TIDE_MIN(c->trough, need);
        inf_sum += held;
    }
    c->mean_inf = inf_sum / (double)c->nrows;
}

/* ---------------------------------------------------------------- output */

static int job_cmp(const void *a, const void *b)
{
    const job_t *x = a, *y = b;
    if (x->submit != y->submit)
        return x->submit < y->submit ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int write_services(FILE *f, const void *ctx)
{
    const ctx_t *c = ctx;
    fputs("service,gpus_per_replica,replica_rps,min_replicas,warmup_s,max_replicas\n", f);
    for (int k = 0; k < c->nsvc; k++) {
        const svc_t *s = &c->svc[k];
        fprintf(f, "%s,%d,%g,%d,%d,%d\n", s->name, s->gpr, s->replica_rps, s->min_rep,
                s->warmup_s, s->max_rep);
    }
    return 0;
}

static int write_demand(FILE *f, const void *ctx)
{
    const ctx_t *c = ctx;
    fputs("time_s,service,rps\n", f);
    for (long row = 0; row < c->nrows; row++)
        for (int k = 0; k < c->nsvc; k++)
            fprintf(f, "%ld,%s,%.3f\n", row * TIDE_GEN_STEP_S, c->svc[k].name,
                    c->rps[row * c->nsvc + k]);
    return 0;
}

static int write_jobs(FILE *f, const void *ctx)
{
    const ctx_t *c = ctx;
    fputs("job_id,submit_s,team,priority,gpus,duration_s,gang_gpus,dp_min,ckpt_interval_s,"
          "ckpt_s,restore_s\n",
          f);
    for (size_t i = 0; i < c->njobs; i++) {
        const job_t *j = &c->jobs[i];
        fprintf(f, "%s,%lld,%s,%d,%d,%lld,%d,%d,%lld,%lld,%lld\n", j->id, (long long)j->submit,
                j->team, j->prio, j->gpus, (long long)j->dur, j->gang, j->dp_min,
                (long long)j->ckpt_int, (long long)j->ckpt_s, (long long)j->restore_s);
    }
    return 0;
}

/* ----------------------------------------------------------------- entry */

static int check_opts(const tide_gen_opts_t *o, const scen_t **ps, tide_error_t *err)
{
    if (!o)
        return tide_errf(err, TIDE_EINVAL, "no options");
    if (!o->scenario || !*o->scenario)
        return tide_errf(err, TIDE_EINVAL, "no scenario given (seed200, seed32 or bench)");
    const scen_t *s = scen_find(o->scenario);
    if (!s)
        return tide_errf(err, TIDE_EINVAL, "unknown scenario '%s' (seed200, seed32 or bench)",
                         o->scenario);
    if (!o->outdir || !*o->outdir)
        return tide_errf(err, TIDE_EINVAL, "no output directory given");
    if (o->days < 0 || o->days > TIDE_GEN_MAX_DAYS)
        return tide_errf(err, TIDE_EINVAL, "days must be 1..%d, not %d", TIDE_GEN_MAX_DAYS,
                         o->days);
    if (!s->takes_nodes && o->nodes)
        return tide_errf(err, TIDE_EINVAL,
                         "--nodes is only accepted by bench: %s is defined by its size (%s)",
                         s->name, tide_gen_cluster_spec(s->name));
    if (!s->takes_nodes && o->jobs)
        return tide_errf(err, TIDE_EINVAL,
                         "--jobs is only accepted by bench: %s's job count follows from its "
                         "arrival process",
                         s->name);
    if (o->nodes && (o->nodes < TIDE_GEN_MIN_NODES || o->nodes > TIDE_GEN_MAX_NODES))
        return tide_errf(err, TIDE_EINVAL, "nodes must be %d..%d, not %d", TIDE_GEN_MIN_NODES,
                         TIDE_GEN_MAX_NODES, o->nodes);
    if (o->jobs < 0 || o->jobs > TIDE_GEN_MAX_JOBS)
        return tide_errf(err, TIDE_EINVAL, "jobs must be 1..%ld, not %ld", TIDE_GEN_MAX_JOBS,
                         o->jobs);
    *ps = s;
    return 0;
}

int tide_gen_write_ex(const tide_gen_opts_t *o, tide_gen_summary_t *sum, tide_error_t *err)
{
    const scen_t *s = NULL;
    if (check_opts(o, &s, err) < 0)
        return -1;
    ctx_t c = {0};
    c.scenario = s->name;
    c.days = o->days ? o->days : s->days;
    c.horizon = (int64_t)c.days * DAY_S;
    c.nodes = o->nodes ? o->nodes : s->nodes;
    c.gpus = c.nodes * 8;
    c.jobs_wanted = o->jobs ? o->jobs : 100000;
    c.seed = o->seed;

    s->services(&c);
    rng_t r;
    rng_seed(&r, o->seed, 1);
    gen_demand(&c, &r);
    rng_seed(&r, o->seed, 2);
    s->jobs(&c, &r);
    qsort(c.jobs, c.njobs, sizeof *c.jobs, job_cmp);
    for (size_t i = 0; i < c.njobs; i++)
        if (!c.jobs[i].id[0])
            snprintf(c.jobs[i].id, sizeof c.jobs[i].id, "j%06zu", i + 1);

    int rc = -1;
    if (tide_mkdir_p(o->outdir, err) < 0 ||
        tide_fs_write_atomic(o->outdir, "services.csv", write_services, &c, err) < 0 ||
        tide_fs_write_atomic(o->outdir, "demand.csv", write_demand, &c, err) < 0 ||
        tide_fs_write_atomic(o->outdir, "jobs.csv", write_jobs, &c, err) < 0)
        goto out;
    rc = 0;

    if (sum) {
        memset(sum, 0, sizeof *sum);
        if (s->takes_nodes)
            snprintf(sum->cluster_spec, sizeof sum->cluster_spec, "%dx8:H100", c.nodes);
        else
            snprintf(sum->cluster_spec, sizeof sum->cluster_spec, "%s",
                     tide_gen_cluster_spec(s->name));
        sum->cluster_gpus = c.gpus;
        sum->days = c.days;
        sum->services = c.nsvc;
        sum->demand_rows = c.nrows * c.nsvc;
        sum->peak_gpus = c.peak;
        sum->trough_gpus = c.trough;
        sum->floor_gpus = c.floor_gpus;
        sum->mean_inf_gpus = c.mean_inf;
        sum->train_gpus = c.gpus - c.mean_inf;
        sum->jobs = (long)c.njobs;
        double work = 0;
        for (size_t i = 0; i < c.njobs; i++) {
            const job_t *j = &c.jobs[i];
            if (j->backlog) {
                sum->backlog_jobs++;
                sum->backlog_gpus += j->gpus;
            } else {
                work += (double)j->gpus * (double)j->dur;
            }
        }
        sum->jobs_per_day = (double)(sum->jobs - sum->backlog_jobs) / c.days;
        sum->offered_load = sum->train_gpus > 0 ? work / (sum->train_gpus * (double)c.horizon) : 0;
    }
out:
    free(c.rps);
    free(c.jobs);
    return rc;
}

int tide_gen_write(const tide_gen_opts_t *o, tide_error_t *err)
{
    return tide_gen_write_ex(o, NULL, err);
}
