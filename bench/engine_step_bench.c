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

int main(int argc, char **argv)
{
    int nodes = 2048, queued = 10000, hours = 6, warm = 2;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--nodes"))
            nodes = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--queued"))
            queued = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--hours"))
            hours = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: engine_step_bench [--nodes N] [--queued Q] [--hours H]\n");
            return 2;
        }
    }
    if (nodes < 4 || queued < 0 || hours < 1) {
        fprintf(stderr, "engine_step_bench: bad arguments\n");
        return 2;
    }
    char spec[64];
    snprintf(spec, sizeof spec, "%dx8:H100", nodes);
    tide_error_t err = {0};
    tide_cluster_t *c = tide_cluster_parse(spec, &err);
    tide_config_t cfg;
    tide_config_default(&cfg);
    cfg.policy = "elastic";
    tide_engine_t *e = c ? tide_engine_create(c, &cfg, &err) : NULL;
    if (!e) {
        fprintf(stderr, "engine_step_bench: %s\n", err.msg);
        return 1;
    }
    static const char *const names[3] = {"chat", "code", "batch"};
    for (int s = 0; s < 3; s++) {
        tide_service_spec_t sv = {.name = names[s], .gpus_per_replica = 8, .replica_rps = 4,
                                  .min_replicas = 4, .warmup_s = 600};
        if (tide_engine_add_service(e, &sv, &err) < 0) {
            fprintf(stderr, "engine_step_bench: %s\n", err.msg);
            return 1;
        }
    }
    tide_world_t *w = tide_world_create(e);
    tide_actions_t acts;
    tide_actions_init(&acts);
    size_t cap_ev = 1 << 16;
    tide_event_t *ev = calloc(cap_ev, sizeof *ev);
    /* submit at once enough jobs to fill the cluster's training side and
     * leave `queued` waiting (a job per 7.5 GPUs, plus the queue), then
     * two a minute, so that a pass runs every tick as under a steady load */
    int total = nodes * 8 * 2 / 15 + queued, next_job = 0;
    size_t n_specs = (size_t)total + (size_t)(warm + hours) * 120 + 8;
    tide_job_spec_t *specs = calloc(n_specs, sizeof *specs);
    char (*ids)[16] = calloc(n_specs, sizeof *ids);
    if (!ev || !specs || !ids)
        return 1;
    samples_t all = {0}, ticks = {0}, all_cpu = {0}, ticks_cpu = {0};
    tide_time_t t = 0, next_tick = 0, end = (tide_time_t)(warm + hours) * 3600;
    long steps = 0;
    int max_q = 0, min_q = 1 << 30, max_l = 0, min_l = 1 << 30;
    while (t <= end) {
        size_t n = 0;
        if (t == 0)
            for (; next_job < total && n < cap_ev; next_job++, n++) {
                job_spec(&specs[next_job], ids[next_job], sizeof ids[0], next_job);
                ev[n] = (tide_event_t){.kind = TIDE_EV_JOB_SUBMIT, .job = -1, .service = -1,
                                       .replica = -1, .node = -1, .job_spec = &specs[next_job]};
            }
        int tick = t >= next_tick;
        for (int k = 0; t > 0 && tick && k < 2 && (size_t)next_job < n_specs; k++, next_job++, n++) {
            job_spec(&specs[next_job], ids[next_job], sizeof ids[0], next_job);
            ev[n] = (tide_event_t){.kind = TIDE_EV_JOB_SUBMIT, .job = -1, .service = -1,
                                   .replica = -1, .node = -1, .job_spec = &specs[next_job]};
        }
        if (tick) {
            for (int s = 0; s < 3 && n < cap_ev; s++, n++)
                ev[n] = (tide_event_t){.kind = TIDE_EV_DEMAND, .job = -1, .service = s,
                                       .replica = -1, .node = -1, .value = demand(s, t)};
            next_tick = t + 60;
        }
        n += tide_world_pop(w, t, ev + n, cap_ev - n);
        double t0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_THREAD_CPUTIME_ID);
        if (tide_engine_step(e, t, ev, n, &acts, &err) < 0)
            fprintf(stderr, "engine_step_bench: step at %lld: %s\n", (long long)t, err.msg);
        double dt = now_ms(CLOCK_MONOTONIC) - t0, dc = now_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
        tide_world_apply(w, t, &acts);
        steps++;
        if (t >= (tide_time_t)warm * 3600) {
            push(&all, dt);
            push(&all_cpu, dc);
            if (tick) {
                push(&ticks, dt);
                push(&ticks_cpu, dc);
            }
            if (tick) {
                tide_stats_t st;
                tide_engine_stats(e, &st);
                int l = 0;
                for (int k = 0; k < tide_engine_leases(e); k++) {
                    tide_lease_info_t li;
                    if (tide_engine_lease(e, k, &li) == 0 && !li.returned)
                        l++;
                }
                max_q = st.queue_jobs > max_q ? st.queue_jobs : max_q;
                min_q = st.queue_jobs < min_q ? st.queue_jobs : min_q;
                max_l = l > max_l ? l : max_l;
                min_l = l < min_l ? l : min_l;
            }
        }
        tide_time_t nx = next_tick;
        if (tide_world_next(w) < nx)
            nx = tide_world_next(w);
        if (acts.next_wake < nx)
            nx = acts.next_wake;
        t = nx > t ? nx : t + 1;
    }
    size_t na = all.n, nt = ticks.n;
    double a50 = pct(all.v, na, 0.5), a99 = pct(all.v, na, 0.99), amax = na ? all.v[na - 1] : 0;
    double t50 = pct(ticks.v, nt, 0.5), t99 = pct(ticks.v, nt, 0.99), tmax = nt ? ticks.v[nt - 1] : 0;
    printf("engine_step_bench: %dx8 (%d GPUs), elastic, %d jobs submitted; %ld steps, %zu measured "
           "over %d h after %d h warm-up\n",
           nodes, nodes * 8, total, steps, na, hours, warm);
    printf("queued jobs %d..%d, active leases %d..%d (at the measured ticks)\n", min_q, max_q, min_l,
           max_l);
    printf("wall clock  every step:  P50 %.3f ms  P99 %.3f ms  max %.3f ms\n", a50, a99, amax);
    printf("wall clock  tick steps:  P50 %.3f ms  P99 %.3f ms  max %.3f ms (%zu ticks)\n", t50, t99, tmax,
           nt);
    a50 = pct(all_cpu.v, na, 0.5), a99 = pct(all_cpu.v, na, 0.99), amax = na ? all_cpu.v[na - 1] : 0;
    t50 = pct(ticks_cpu.v, nt, 0.5), t99 = pct(ticks_cpu.v, nt, 0.99);
    tmax = nt ? ticks_cpu.v[nt - 1] : 0;
    printf("thread CPU  every step:  P50 %.3f ms  P99 %.3f ms  max %.3f ms\n", a50, a99, amax);
    printf("thread CPU  tick steps:  P50 %.3f ms  P99 %.3f ms  max %.3f ms\n", t50, t99, tmax);
    {
        tide_stats_t st;
        tide_engine_stats(e, &st);
        int busy = 0;
        for (int k = 0; k < TIDE_C_COUNT; k++)
            for (int q = 0; q < TIDE_S_COUNT; q++)
                busy += k == TIDE_C_NONE && q == TIDE_S_IDLE ? 0 : st.gpus_now[k][q];
        printf("at the end: %zu jobs running, %d of %d GPUs busy, demand %.0f rps, %d replicas\n",
               tide_world_running(w, NULL, NULL, 0), busy, nodes * 8, st.demand_rps,
               st.replicas_ready + st.replicas_warming);
    }
    tide_actions_free(&acts);
    tide_world_destroy(w);
    tide_engine_destroy(e);
    tide_cluster_destroy(c);
    free(ev);
    free(specs);
    free(ids);
    free(all.v);
    free(ticks.v);
    free(all_cpu.v);
    free(ticks_cpu.v);
    return 0;
}
