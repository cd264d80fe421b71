/* One engine step at scale: tide_engine_step on a 2048x8 cluster (16,384
 * GPUs, policy elastic) with about 10,000 jobs queued and about 2,000
 * leases, driven directly (no daemon, no I/O) on a manual clock. The
 * simulated world (src/world) enacts the actions, as `tide sim` does; demand
 * for three services follows a day curve. After a warm-up, every step (the
 * one-minute control tick and the world's events in between) is timed with
 * CLOCK_MONOTONIC (wall) and CLOCK_THREAD_CPUTIME_ID (CPU: what the step
 * computed, without the time the OS gave the core to other processes);
 * prints P50 / P99 / max of all steps and of tick steps, and the queue and
 * lease counts seen. STEP_TRACE=MS prints each step slower than MS.
 *   build/bench/engine_step_bench [--nodes N] [--queued Q] [--hours H]
 * Defaults: 2048 nodes, 10000 queued, 6 measured hours after 2 warm-up hours.
 * Demand peaks near 30% of 16,384 GPUs; jobs are mostly 4-GPU gangs so that
 * ~2,000 of them run on lent GPUs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tide/cluster.h"
#include "tide/engine.h"
#include "world/world.h"

static double now_ms(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double q)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    size_t k = (size_t)ceil(q * (double)n);
    return v[k ? k - 1 : 0];
}

typedef struct samples {
    double *v;
    size_t n, cap;
} samples_t;

static void push(samples_t *s, double x)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 4096;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        if (!s->v)
            abort();
    }
    s->v[s->n++] = x;
}

/* Jobs: 4-GPU gangs (most), some 8 and 16 GPUs, P1..P3, hours to days. */
static void job_spec(tide_job_spec_t *j, char *id, size_t idn, int k)
{
    static const int gpus[8] = {4, 4, 4, 4, 4, 8, 8, 16};
    static const char *const teams[4] = {"nlp", "vision", "speech", "research"};
    unsigned x = (unsigned)k * 2654435761u;
    memset(j, 0, sizeof *j);
    snprintf(id, idn, "j%d", k);
    j->id = id;
    j->team = teams[x % 4];
    j->priority = 1 + (int)((x >> 8) % 10 == 0 ? 0 : 1 + (x >> 12) % 2);
    j->gpus = gpus[(x >> 4) % 8];
    j->gang_gpus = j->gpus > 8 ? 8 : j->gpus;
    j->dp_min = j->gpus / j->gang_gpus;
    j->duration_s = 3600 * (tide_time_t)(2 + (x >> 16) % 70);
    j->ckpt_interval_s = 1800;
    j->ckpt_s = 60;
    j->restore_s = 120;
}

static double demand(int s, tide_time_t t)
{
    static const double peak[3] = {1200, 800, 400};
    double day = 0.5 - 0.5 * cos(2 * M_PI * (double)(t % 86400) / 86400.0);
    return peak[s] * (0.35 + 0.65 * day);
}

/* The run: engine, world, submitted jobs, and what was measured. */
typedef struct bench {
    int nodes, queued, hours, warm;
    tide_cluster_t *c;
    tide_engine_t *e;
    tide_world_t *w;
    tide_actions_t acts;
    tide_event_t *ev;
    size_t cap_ev;
    tide_job_spec_t *specs;
    char (*ids)[16];
    size_t n_specs;
    int total, next_job;
    samples_t all, ticks, all_cpu, ticks_cpu;
    long steps;
    int max_q, min_q, max_l, min_l;
} bench_t;

static int parse_args(bench_t *b, int argc, char **argv)
{
    b->nodes = 2048, b->queued = 10000, b->hours = 6, b->warm = 2;
    for (int i = 1; i < argc; i += 2) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: engine_step_bench [--nodes N] [--queued Q] [--hours H]\n"
                   "One engine step at scale (policy elastic): NODESx8 GPUs (default 2048),\n"
                   "about Q jobs queued (default 10000), H measured hours after 2 of warm-up\n"
                   "(default 6); prints P50/P99/max wall and thread-CPU time per step.\n");
            return 1;
        }
        int *dst = !strcmp(argv[i], "--nodes")    ? &b->nodes
                   : !strcmp(argv[i], "--queued") ? &b->queued
                   : !strcmp(argv[i], "--hours")  ? &b->hours
                                                  : NULL;
        if (!dst || i + 1 >= argc) {
            fprintf(stderr, "usage: engine_step_bench [--nodes N] [--queued Q] [--hours H]\n");
            return -1;
        }
        *dst = atoi(argv[i + 1]);
    }
    if (b->nodes < 4 || b->queued < 0 || b->hours < 1) {
        fprintf(stderr, "engine_step_bench: bad arguments (--nodes >= 4, --queued >= 0, --hours >= 1)\n");
        return -1;
    }
    return 0;
}

static int setup(bench_t *b)
{
    char spec[64];
    snprintf(spec, sizeof spec, "%dx8:H100", b->nodes);
    tide_error_t err = {0};
    b->c = tide_cluster_parse(spec, &err);
    tide_config_t cfg;
    tide_config_default(&cfg);
    cfg.policy = "elastic";
    b->e = b->c ? tide_engine_create(b->c, &cfg, &err) : NULL;
    if (!b->e) {
        fprintf(stderr, "engine_step_bench: %s\n", err.msg);
        return -1;
    }
    static const char *const names[3] = {"chat", "code", "batch"};
    for (int s = 0; s < 3; s++) {
        tide_service_spec_t sv = {.name = names[s], .gpus_per_replica = 8, .replica_rps = 4,
                                  .min_replicas = 4, .warmup_s = 600};
        if (tide_engine_add_service(b->e, &sv, &err) < 0) {
            fprintf(stderr, "engine_step_bench: %s\n", err.msg);
            return -1;
        }
    }
    b->w = tide_world_create(b->e);
    tide_actions_init(&b->acts);
    b->cap_ev = 1 << 16;
    b->ev = calloc(b->cap_ev, sizeof *b->ev);
    /* submit at once enough jobs to fill the cluster's training side and
     * leave `queued` waiting (a job per 7.5 GPUs, plus the queue), then
     * two a minute, so that a pass runs every tick as under a steady load */
    b->total = b->nodes * 8 * 2 / 15 + b->queued;
    b->n_specs = (size_t)b->total + (size_t)(b->warm + b->hours) * 120 + 8;
    b->specs = calloc(b->n_specs, sizeof *b->specs);
    b->ids = calloc(b->n_specs, sizeof *b->ids);
    b->max_l = b->max_q = 0;
    b->min_l = b->min_q = 1 << 30;
    return b->ev && b->specs && b->ids ? 0 : -1;
}

static size_t submit(bench_t *b, size_t n)
{
    if ((size_t)b->next_job >= b->n_specs || n >= b->cap_ev)
        return n;
    int k = b->next_job++;
    job_spec(&b->specs[k], b->ids[k], sizeof b->ids[0], k);
    b->ev[n] = (tide_event_t){.kind = TIDE_EV_JOB_SUBMIT, .job = -1, .service = -1, .replica = -1,
                              .node = -1, .job_spec = &b->specs[k]};
    return n + 1;
}

/* Queue and active-lease counts at a measured tick. */
static void census(bench_t *b)
{
    tide_stats_t st;
    tide_engine_stats(b->e, &st);
    int l = 0;
    for (int k = 0; k < tide_engine_leases(b->e); k++) {
        tide_lease_info_t li;
        if (tide_engine_lease(b->e, k, &li) == 0 && !li.returned)
            l++;
    }
    b->max_q = st.queue_jobs > b->max_q ? st.queue_jobs : b->max_q;
    b->min_q = st.queue_jobs < b->min_q ? st.queue_jobs : b->min_q;
    b->max_l = l > b->max_l ? l : b->max_l;
    b->min_l = l < b->min_l ? l : b->min_l;
}

/* One step at t (tick: the control tick is due); times it once measured. */
static void step(bench_t *b, tide_time_t t, int tick)
{
    size_t n = 0;
    while (t == 0 && b->next_job < b->total && n < b->cap_ev)
        n = submit(b, n);
    for (int k = 0; t > 0 && tick && k < 2; k++)
        n = submit(b, n);
    for (int s = 0; tick && s < 3 && n < b->cap_ev; s++, n++)
        b->ev[n] = (tide_event_t){.kind = TIDE_EV_DEMAND, .job = -1, .service = s, .replica = -1,
                                  .node = -1, .value = demand(s, t)};
    n += tide_world_pop(b->w, t, b->ev + n, b->cap_ev - n);
    tide_error_t err = {0};
    double t0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_THREAD_CPUTIME_ID);
    if (tide_engine_step(b->e, t, b->ev, n, &b->acts, &err) < 0)
        fprintf(stderr, "engine_step_bench: step at %lld: %s\n", (long long)t, err.msg);
    double dt = now_ms(CLOCK_MONOTONIC) - t0, dc = now_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
    if (getenv("STEP_TRACE") && dt > atof(getenv("STEP_TRACE")))
        fprintf(stderr, "slow step t=%lld %.3f ms: %zu events in, %zu actions out\n", (long long)t,
                dt, n, b->acts.n);
    tide_world_apply(b->w, t, &b->acts);
    b->steps++;
    if (t < (tide_time_t)b->warm * 3600)
        return;
    push(&b->all, dt);
    push(&b->all_cpu, dc);
    if (tick) {
        push(&b->ticks, dt);
        push(&b->ticks_cpu, dc);
        census(b);
    }
}

static void print_pct(const char *what, samples_t *s)
{
    double p50 = pct(s->v, s->n, 0.5), p99 = pct(s->v, s->n, 0.99), mx = s->n ? s->v[s->n - 1] : 0;
    printf("%s:  P50 %.3f ms  P99 %.3f ms  max %.3f ms\n", what, p50, p99, mx);
}

static void report(bench_t *b)
{
    printf("engine_step_bench: %dx8 (%d GPUs), elastic, %d jobs submitted; %ld steps, %zu measured "
           "over %d h after %d h warm-up (%zu ticks)\n",
           b->nodes, b->nodes * 8, b->next_job, b->steps, b->all.n, b->hours, b->warm, b->ticks.n);
    printf("queued jobs %d..%d, active leases %d..%d (at the measured ticks)\n", b->min_q, b->max_q,
           b->min_l, b->max_l);
    print_pct("wall clock  every step", &b->all);
    print_pct("wall clock  tick steps", &b->ticks);
    print_pct("thread CPU  every step", &b->all_cpu);
    print_pct("thread CPU  tick steps", &b->ticks_cpu);
}

static void teardown(bench_t *b)
{
    tide_actions_free(&b->acts);
    tide_world_destroy(b->w);
    tide_engine_destroy(b->e);
    tide_cluster_destroy(b->c);
    free(b->ev);
    free(b->specs);
    free(b->ids);
    free(b->all.v);
    free(b->ticks.v);
    free(b->all_cpu.v);
    free(b->ticks_cpu.v);
}

int main(int argc, char **argv)
{
    bench_t b = {0};
    int rc = parse_args(&b, argc, argv);
    if (rc != 0)
        return rc < 0 ? 2 : 0;
    if (setup(&b) < 0) {
        teardown(&b);
        return 1;
    }
    tide_time_t t = 0, next_tick = 0, end = (tide_time_t)(b.warm + b.hours) * 3600;
    while (t <= end) {
        int tick = t >= next_tick;
        if (tick)
            next_tick = t + 60;
        step(&b, t, tick);
        tide_time_t nx = next_tick;
        if (tide_world_next(b.w) < nx)
            nx = tide_world_next(b.w);
        if (b.acts.next_wake < nx)
            nx = b.acts.next_wake;
        t = nx > t ? nx : t + 1;
    }
    report(&b);
    teardown(&b);
    return 0;
}
