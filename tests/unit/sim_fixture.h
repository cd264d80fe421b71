/* Shared helpers for tests that run the simulator on a tiny workload
 * (test_report.c, test_sweep.c). Header-only: every helper is static and may
 * go unused. Include <stdarg.h>, <stddef.h>, <setjmp.h>, <stdint.h>,
 * <cmocka.h> first.
 *
 * The workload: 4 nodes x 8 GPUs, one service "chat" (8 GPUs a replica,
 * 100 rps, floor 1, warm-up 300 s) with a day/night curve (250 rps 08-20 h,
 * else 60), and six training jobs of two teams: enough for every policy to
 * queue, preempt, lend and reclaim within one simulated day. */
#ifndef TIDE_TEST_SIM_FIXTURE_H
#define TIDE_TEST_SIM_FIXTURE_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/cluster_file.h"
#include "sim/sim.h"
#include "formats/workload_io.h"
#include "tide/cluster.h"

#define SF_FN static __attribute__((unused))

typedef struct sf_work {
    tide_cluster_t *cluster;
    tide_services_t *svcs;
    tide_demand_t *dem;
    tide_jobs_t *jobs;
} sf_work_t;

static const char SF_SERVICES[] =
    "service,gpus_per_replica,replica_rps,min_replicas,warmup_s\n"
    "chat,8,100,1,300\n";

static const char SF_JOBS[] =
    "job_id,submit_s,team,priority,gpus,duration_s,gang_gpus,dp_min,ckpt_interval_s,ckpt_s,"
    "restore_s\n"
    "a,0,vision,2,8,20000,8,1,1800,60,120\n"
    "b,0,lang,3,16,30000,8,1,1800,60,120\n"
    "c,3600,lang,1,8,7200,8,1,1800,60,120\n"
    "d,7200,vision,2,1,5000,1,1,1800,30,60\n"
    "e,40000,lang,2,16,20000,8,1,1800,60,120\n"
    "f,50000,vision,3,4,10000,4,1,1800,60,120\n";

SF_FN void sf_load(sf_work_t *w)
{
    tide_error_t err = {0};
    memset(w, 0, sizeof *w);
    w->cluster = tide_cluster_file_from_arg("4x8", &err);
    if (!w->cluster)
        fail_msg("cluster: %s", err.msg);
    tide_read_opts_t ro = {.cluster = w->cluster};
    w->svcs = tide_services_read_mem(SF_SERVICES, strlen(SF_SERVICES), "services.csv", &ro, &err);
    if (!w->svcs)
        fail_msg("services: %s", err.msg);
    char dem[2048];
    size_t n = (size_t)snprintf(dem, sizeof dem, "time_s,service,rps\n");
    for (int h = 0; h < 24; h++)
        n += (size_t)snprintf(dem + n, sizeof dem - n, "%d,chat,%d\n", h * 3600,
                              h >= 8 && h < 20 ? 250 : 60);
    w->dem = tide_demand_read_mem(dem, n, "demand.csv", w->svcs, &ro, &err);
    if (!w->dem)
        fail_msg("demand: %s", err.msg);
    w->jobs = tide_jobs_read_mem(SF_JOBS, strlen(SF_JOBS), "jobs.csv", &ro, &err);
    if (!w->jobs)
        fail_msg("jobs: %s", err.msg);
}

SF_FN void sf_free(sf_work_t *w)
{
    tide_jobs_free(w->jobs);
    tide_demand_free(w->dem);
    tide_services_free(w->svcs);
    tide_cluster_destroy(w->cluster);
    memset(w, 0, sizeof *w);
}

/* Options for a one-day run of every policy into out (no table). */
SF_FN void sf_opts(const sf_work_t *w, tide_sim_opts_t *o, const char *out)
{
    tide_sim_opts_default(o);
    o->cluster = w->cluster;
    o->services = w->svcs->v;
    o->n_services = w->svcs->n;
    o->demand = w->dem->v;
    o->n_demand = w->dem->n;
    o->jobs = w->jobs->v;
    o->n_jobs = w->jobs->n;
    o->horizon_s = 86400;
    o->seed = 7;
    o->out_dir = out;
}

/* A fresh temporary directory (path into buf). */
SF_FN const char *sf_tmpdir(char *buf, size_t n)
{
    const char *base = getenv("TMPDIR");
    snprintf(buf, n, "%s/tide-test-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(buf))
        fail_msg("mkdtemp %s failed", buf);
    return buf;
}

/* rm -rf path (directories recursively; symlinks are not followed). */
SF_FN void sf_rm_rf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            size_t n = strlen(path) + strlen(e->d_name) + 2;
            char *sub = malloc(n);
            snprintf(sub, n, "%s/%s", path, e->d_name);
            sf_rm_rf(sub);
            free(sub);
        }
        if (d)
            closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* The whole file as a NUL-terminated string (free it), or NULL. */
SF_FN char *sf_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    buf[got] = '\0';
    if (len)
        *len = got;
    return buf;
}

/* Write s to path (asserting). */
SF_FN void sf_write(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    if (!f)
        fail_msg("cannot write %s", path);
    fputs(s, f);
    fclose(f);
}

#endif
