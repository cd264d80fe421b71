/* `tide usage DIR` aggregation and report, and `tide capacity DIR` signals,
 * on hand-written output folders whose answers are worked out by hand below.
 *
 * The folder: 32 GPUs, 2 days, intervals of 6 h (k = 0..7), policy elastic:
 *   alpha  4 GPUs p2 training tier D, all along         192 GPU-h x $2  = 384
 *   beta  10 GPUs p3 training tier C on day 0 (k 0..3)  240 GPU-h x $1  = 240
 *         + 4 GPU-h lost at k = 1 (tier C)                4 GPU-h x $4  =  16
 *   chat   4 GPUs serving tier A all along               192 GPU-h x $3  = 576
 *         + 2 GPUs serving tier B at k = 2 and 6          24 GPU-h x $3  =  72
 *   idle   the rest, tier B                              884 GPU-h x $0.5 = 442
 *   total                                               1536 GPU-h         1730
 * Demand peaks (200 rps against 50) at k = 2 and 6. Policy static has one
 * row, to check the policy filter. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report/signals.h"
#include "formats/csv.h"
#include "formats/usage.h"
#include "tide/cluster.h"
#include "tide/engine.h"

#define DT 21600
#define H 3600.0

typedef struct fx {
    char dir[256];
} fx_t;

static void put(const char *dir, const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void row(FILE *f, const char *pol, int k, const char *owner, const char *kind,
                const char *cls, const char *state, const char *tier, double gpus, double price)
{
    double gs = gpus * DT;
    fprintf(f, "%s,%d,%s,%s,%s,%s,%s,H100,%.3f,%.4f\n", pol, k * DT, owner, kind, cls, state, tier,
            gs, gs / H * price);
}

static int setup(void **state)
{
    fx_t *x = calloc(1, sizeof *x);
    const char *base = getenv("TMPDIR");
    snprintf(x->dir, sizeof x->dir, "%s/tide_usage_XXXXXX", base && *base ? base : "/tmp");
    assert_non_null(mkdtemp(x->dir));
    char p[512];
    snprintf(p, sizeof p, "%s/usage.csv", x->dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("policy,time_s,owner,kind,class,state,tier,gpu_type,gpu_s,cost\n", f);
    for (int k = 0; k < 8; k++) {
        double used = 4 + 4;
        row(f, "elastic", k, "alpha", "team", "p2", "training", "D", 4, 2.0);
        if (k < 4) {
            row(f, "elastic", k, "beta", "team", "p3", "training", "C", 10, 1.0);
            used += 10;
        }
        if (k == 1) { /* 4 GPU-hours lost = 14400 GPU-s */
            row(f, "elastic", k, "beta", "team", "p3", "lost", "C", 14400.0 / DT, 4.0);
            used += 14400.0 / DT;
        }
        row(f, "elastic", k, "chat", "service", "inference", "serving", "A", 4, 3.0);
        if (k == 2 || k == 6) {
            row(f, "elastic", k, "chat", "service", "inference", "serving", "B", 2, 3.0);
            used += 2;
        }
        row(f, "elastic", k, "-", "idle", "none", "idle", "B", 32 - used, 0.5);
    }
    fputs("static,0,-,idle,none,idle,B,H100,100,0\n", f);
    fclose(f);

    f = fopen((snprintf(p, sizeof p, "%s/timeline.csv", x->dir), p), "w");
    fputs("policy,time_s,serving,idle,demand_rps,queue_jobs,queue_gpus\n", f);
    for (int k = 0; k < 8; k++)
        fprintf(f, "elastic,%d,4,10,%d,2,8\n", k * DT, k == 2 || k == 6 ? 200 : 50);
    fputs("static,0,4,1,50,0,0\n", f);
    fclose(f);

    f = fopen((snprintf(p, sizeof p, "%s/usage_teams.csv", x->dir), p), "w");
    fputs("policy,time_s,team,weight,quota_gpus,used_gpus,borrowed_gpus,usage_gpu_s\n", f);
    for (int k = 0; k <= 8; k++) {
        fprintf(f, "elastic,%d,alpha,1,8,4,0,0\n", k * DT);
        fprintf(f, "elastic,%d,beta,2,4,%d,%d,0\n", k * DT, k < 4 ? 10 : 0, k < 4 ? 6 : 0);
    }
    fclose(f);

    put(x->dir, "usage_services.csv",
        "policy,service,gpus_per_replica,min_replicas,max_replicas\n"
        "elastic,chat,2,2,0\nstatic,chat,2,2,0\n");
    put(x->dir, "summary.json",
        "{\"horizon_s\": 172800, \"cluster_gpus\": 32, \"policies\": {\n"
        " \"static\": {\"utilization\": 0.9, \"useful_utilization\": 0.85,\n"
        "   \"gpu_hours\": {\"idle\": 153.6}, \"inference\": {\"slo_attainment\": 0.9999},\n"
        "   \"training\": {\"preemptions\": 0, \"p95_queue_s\": 3600, \"mean_queue_s\": 600,\n"
        "                 \"gpu_hours_lost\": 0},\n"
        "   \"idle_while_queued_gpu_hours\": 0, \"teams\": {}},\n"
        " \"elastic\": {\"utilization\": 0.42, \"useful_utilization\": 0.40,\n"
        "   \"gpu_hours\": {\"idle\": 884}, \"inference\": {\"slo_attainment\": 0.99},\n"
        "   \"training\": {\"preemptions\": 6, \"p95_queue_s\": 100000, \"mean_queue_s\": 3600,\n"
        "                 \"gpu_hours_lost\": 4},\n"
        "   \"idle_while_queued_gpu_hours\": 10,\n"
        "   \"teams\": {\"alpha\": {\"preemptions\": 0, \"gpu_hours_lost\": 0, \"mean_queue_s\": 60},\n"
        "             \"beta\": {\"preemptions\": 6, \"gpu_hours_lost\": 4, \"mean_queue_s\": 7200}}}}}\n");
    put(x->dir, "events.csv",
        "policy,time_s,kind,job,service,replica,lease,gpus,width,reason,deadline_s,value\n"
        "elastic,10,job_stop,j1,,,,,,reclaim,,0\n"
        "elastic,20,job_stop,j2,,,,,,reclaim,,0\n"
        "elastic,30,job_stop,j3,,,,,,reclaim,,0\n"
        "elastic,40,job_stop,j4,,,,,,deadline,,0\n"
        "elastic,50,job_stop,j5,,,,,,preempt,,3600\n"
        "elastic,60,job_stop,j6,,,,,,quota,,0\n"
        "elastic,70,ckpt_notice,j6,,,,,,quota,100,\n"
        "elastic,80,job_stop,j7,,,,,,complete,,0\n");
    put(x->dir, "sweep.csv",
        "policy,reserve,margin,utilization,useful_utilization,slo_attainment,gpu_hours_lost,"
        "training_gpu_hours\n"
        "elastic,16,0.1,0.8,0.7,0.9900,2,950\n"
        "elastic,8,0.1,0.8,0.7,0.9500,5,1000\n"
        "elastic,24,0.1,0.8,0.7,0.9995,1,880.5\n"
        "elastic,8,0.2,0.8,0.7,0.9600,5,990\n"
        "elastic,16,0.2,0.8,0.7,0.9700,5,940\n");
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    fx_t *x = *state;
    static const char *const files[] = {"usage.csv",   "timeline.csv", "usage_teams.csv",
                                        "usage_services.csv", "summary.json", "events.csv",
                                        "sweep.csv",   "out.txt"};
    char p[512];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", x->dir, files[i]);
        unlink(p);
    }
    rmdir(x->dir);
    free(x);
    return 0;
}

static const tide_usage_row_t *find_row(const tide_usage_table_t *t, int key, const char *v)
{
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->rows[i].key[key], v))
            return &t->rows[i];
    fail_msg("no row %s", v);
    return NULL;
}

static void near(double got, double want)
{
    if (fabs(got - want) > 1e-3 * (1 + fabs(want)))
        fail_msg("got %.6f, want %.6f", got, want);
}

static void test_parse_by(void **state)
{
    (void)state;
    int k[TIDE_UK_COUNT];
    tide_error_t err = {0};
    assert_int_equal(tide_usage_parse_by("team,class", k, &err), 2);
    assert_int_equal(k[0], TIDE_UK_OWNER);
    assert_int_equal(k[1], TIDE_UK_CLASS);
    assert_int_equal(tide_usage_parse_by("policy, type ,category,tier,state,kind,owner", k, &err),
                     7);
    assert_int_equal(k[1], TIDE_UK_GPU_TYPE);
    assert_int_equal(tide_usage_parse_by("team,owner", k, &err), -1);
    assert_non_null(strstr(err.msg, "--by: 'owner' given twice"));
    assert_int_equal(tide_usage_parse_by("team,colour", k, &err), -1);
    assert_non_null(strstr(err.msg, "--by: unknown key 'colour'"));
    assert_int_equal(tide_usage_parse_by(",", k, &err), -1);
    assert_int_equal(tide_usage_format_find("csv"), TIDE_UFMT_CSV);
    assert_int_equal(tide_usage_format_find("xml"), -1);
}

static void test_aggregate(void **state)
{
    fx_t *x = *state;
    tide_usage_query_t q;
    memset(&q, 0, sizeof q);
    q.policy = "elastic";
    q.keys[0] = TIDE_UK_OWNER;
    q.n_keys = 1;
    tide_usage_table_t t;
    tide_error_t err = {0};
    if (tide_usage_aggregate(x->dir, &q, &t, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(t.from_s, 0);
    assert_int_equal(t.to_s, 172800);
    near(t.gpu_s / H, 1536);
    near(t.cost, 1730);
    assert_int_equal(t.n, 5);
    assert_string_equal(t.rows[0].key[TIDE_UK_OWNER], "-"); /* sorted by GPU-hours */
    near(find_row(&t, TIDE_UK_OWNER, "-")->gpu_s / H, 884);
    near(find_row(&t, TIDE_UK_OWNER, "beta")->gpu_s / H, 240); /* its lost work is not its */
    near(find_row(&t, TIDE_UK_OWNER, "beta")->cost, 240);
    near(find_row(&t, TIDE_UK_OWNER, TIDE_USAGE_LOST_OWNER)->gpu_s / H, 4);
    near(find_row(&t, TIDE_UK_OWNER, TIDE_USAGE_LOST_OWNER)->cost, 16);
    near(find_row(&t, TIDE_UK_OWNER, "chat")->cost, 648);
    near(find_row(&t, TIDE_UK_OWNER, "alpha")->cost, 384);
    assert_null(t.rows[0].key[TIDE_UK_CLASS]);

    /* csv and json outputs */
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    assert_int_equal(tide_usage_table_print(m, &t, TIDE_UFMT_CSV), 0);
    fclose(m);
    assert_non_null(strstr(buf, "owner,gpu_hours,cost\n-,884.0000,442.0000\n"));
    assert_non_null(strstr(buf, "\n(policy: lost work),4.0000,16.0000\n"));
    free(buf);
    m = open_memstream(&buf, &len);
    assert_int_equal(tide_usage_table_print(m, &t, TIDE_UFMT_TABLE), 0);
    fclose(m);
    assert_non_null(strstr(buf, "total"));
    assert_non_null(strstr(buf, "1536.00"));
    assert_non_null(strstr(buf, "1730.00"));
    free(buf);
    json_t *j = tide_usage_table_json(&t);
    near(json_number_value(json_object_get(json_object_get(j, "total"), "gpu_hours")), 1536);
    assert_int_equal(json_array_size(json_object_get(j, "rows")), 5);
    json_decref(j);
    tide_usage_table_free(&t);

    /* the last day only, by category */
    q.since_s = 86400;
    q.keys[0] = TIDE_UK_CATEGORY;
    if (tide_usage_aggregate(x->dir, &q, &t, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(t.from_s, 86400);
    near(t.gpu_s / H, 768);
    near(t.cost, 798);
    near(find_row(&t, TIDE_UK_CATEGORY, "training")->gpu_s / H, 96);
    near(find_row(&t, TIDE_UK_CATEGORY, "serving")->gpu_s / H, 108);
    near(find_row(&t, TIDE_UK_CATEGORY, "idle")->gpu_s / H, 564);
    assert_int_equal(t.n, 3);
    tide_usage_table_free(&t);

    /* every policy, by policy,class; no keys = one total */
    q.policy = NULL;
    q.since_s = 0;
    q.keys[0] = TIDE_UK_POLICY;
    q.keys[1] = TIDE_UK_CLASS;
    q.n_keys = 2;
    assert_int_equal(tide_usage_aggregate(x->dir, &q, &t, &err), 0);
    near(t.gpu_s, 1536 * H + 100);
    assert_int_equal(t.n, 5); /* elastic: p2 p3 inference none; static: none */
    tide_usage_table_free(&t);
    q.n_keys = 0;
    assert_int_equal(tide_usage_aggregate(x->dir, &q, &t, &err), 0);
    assert_int_equal(t.n, 1);
    tide_usage_table_free(&t);

    /* errors */
    q.policy = "fifo";
    assert_int_equal(tide_usage_aggregate(x->dir, &q, &t, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_non_null(strstr(err.msg, "policy 'fifo' is not in"));
    assert_non_null(strstr(err.msg, "(it has: elastic, static)"));
    q.policy = NULL;
    assert_int_equal(tide_usage_aggregate("/nonexistent/dir", &q, &t, &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
    char bad[300];
    snprintf(bad, sizeof bad, "%s/bad", x->dir);
    mkdir(bad, 0777);
    put(bad, "usage.csv", "policy,time_s,owner,kind,class,state,tier,gpu_type,gpu_s,cost\n"
                          "p,0,a,team,p2,training,D,H100,10,0\n"
                          "p,0,a,team,p9,training,D,H100,10,0\n");
    assert_int_equal(tide_usage_aggregate(bad, &q, &t, &err), -1);
    assert_non_null(strstr(err.msg, "usage.csv:3: column 'class': unknown class 'p9'"));
    put(bad, "usage.csv", "policy,time_s,owner,kind,class,state,tier,gpu_type,gpu_s,cost\n"
                          "p,0,a,team,p2,training,D,H100,lots,0\n");
    assert_int_equal(tide_usage_aggregate(bad, &q, &t, &err), -1);
    assert_non_null(strstr(err.msg, "usage.csv:2: column 'gpu_s': not a number: 'lots'"));
    /* without summary.json the end is the last interval's end */
    put(bad, "usage.csv", "policy,time_s,owner,kind,class,state,tier,gpu_type,gpu_s,cost\n"
                          "p,0,a,team,p2,training,D,H100,10,0\n"
                          "p,300,a,team,p2,training,D,H100,10,0\n");
    assert_int_equal(tide_usage_aggregate(bad, &q, &t, &err), 0);
    assert_int_equal(t.to_s, 600);
    tide_usage_table_free(&t);
    snprintf(bad + strlen(bad), sizeof bad - strlen(bad), "/usage.csv");
    unlink(bad);
    bad[strlen(bad) - strlen("/usage.csv")] = '\0';
    rmdir(bad);
}

static json_t *find_team(json_t *arr, const char *key, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) if (!strcmp(json_string_value(json_object_get(v, key)), name))
        return v;
    fail_msg("no %s %s", key, name);
    return NULL;
}

static double jnum(json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }

static void test_report(void **state)
{
    fx_t *x = *state;
    tide_error_t err = {0};
    json_t *r = tide_usage_report(x->dir, "elastic", NULL, &err);
    if (!r)
        fail_msg("%s", err.msg);
    json_t *p = json_object_get(json_object_get(r, "policies"), "elastic");
    assert_non_null(p);
    assert_null(json_object_get(json_object_get(r, "policies"), "static"));
    json_t *bc = json_object_get(p, "by_class");
    near(jnum(json_object_get(bc, "p2"), "gpu_hours"), 192);
    near(jnum(json_object_get(bc, "p3"), "gpu_hours"), 244);
    near(jnum(json_object_get(bc, "inference"), "gpu_hours"), 216);
    near(jnum(json_object_get(bc, "idle"), "gpu_hours"), 884);
    near(jnum(json_object_get(p, "lost"), "cost"), 16);
    near(jnum(json_object_get(p, "total"), "gpu_hours"), 1536);
    near(jnum(json_object_get(p, "total"), "cost"), 1730);
    /* peak: k = 2 and 6; alpha 4 GPUs x 12 h, beta 10 x 6 h */
    json_t *pk = json_object_get(p, "peak");
    assert_true(json_is_true(json_object_get(pk, "available")));
    assert_int_equal((int)jnum(pk, "intervals"), 2);
    near(jnum(pk, "hours"), 12);
    near(jnum(pk, "threshold_rps"), 200);
    assert_string_equal(json_string_value(json_object_get(pk, "top_team")), "beta");
    near(jnum(find_team(json_object_get(pk, "teams"), "team", "beta"), "gpu_hours"), 60);
    near(jnum(find_team(json_object_get(pk, "teams"), "team", "beta"), "share"), 60.0 / 108);
    near(jnum(find_team(json_object_get(pk, "teams"), "team", "alpha"), "gpu_hours"), 48);
    /* long-lived replicas: chat keeps 2 replicas (4 GPUs) all along */
    json_t *sv = find_team(json_object_get(json_object_get(p, "services"), "services"), "service",
                           "chat");
    near(jnum(sv, "replica_hours"), 108);
    near(jnum(sv, "mean_replicas"), 2.25);
    near(jnum(sv, "always_on_replicas"), 2);
    near(jnum(sv, "floor_gpu_hours"), 192);
    near(jnum(sv, "cost"), 648);
    near(jnum(sv, "always_on_cost"), 576);
    /* phases: alpha steady (cv 0), beta all on day 0 (cv 1) */
    json_t *ph = json_object_get(p, "phases");
    assert_int_equal((int)jnum(ph, "days"), 2);
    json_t *a = find_team(json_object_get(ph, "teams"), "team", "alpha");
    json_t *b = find_team(json_object_get(ph, "teams"), "team", "beta");
    near(jnum(a, "cv"), 0);
    near(jnum(a, "mean_daily_gpu_hours"), 96);
    assert_true(json_is_false(json_object_get(a, "phase_like")));
    near(jnum(b, "cv"), 1);
    near(jnum(b, "mean_daily_gpu_hours"), 122);
    assert_true(json_is_true(json_object_get(b, "phase_like")));
    /* preemptions: 6 in 2 days; lost work charged to the policy */
    json_t *pr = json_object_get(p, "preemptions");
    b = find_team(json_object_get(pr, "teams"), "team", "beta");
    assert_int_equal((int)jnum(b, "preemptions"), 6);
    near(jnum(b, "per_day"), 3);
    near(jnum(b, "gpu_hours_lost"), 4);
    near(jnum(b, "lost_cost"), 16);
    near(jnum(pr, "policy_lost_cost"), 16);
    /* borrowing: beta 244 tier-C GPU-hours, 6 GPUs above its quota for a day */
    json_t *bo = json_object_get(p, "borrowing");
    b = find_team(json_object_get(bo, "teams"), "team", "beta");
    near(jnum(b, "tier_c_gpu_hours"), 244);
    near(jnum(b, "above_quota_gpu_hours"), 144);
    near(jnum(b, "cost"), 240);
    assert_int_equal((int)jnum(b, "quota_gpus"), 4);
    a = find_team(json_object_get(bo, "teams"), "team", "alpha");
    near(jnum(a, "above_quota_gpu_hours"), 0);
    near(jnum(a, "tier_c_gpu_hours"), 0);
    /* text rendering */
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    assert_int_equal(tide_usage_report_print(m, r), 0);
    fclose(m);
    assert_non_null(strstr(buf, "top team beta"));
    assert_non_null(strstr(buf, "phase-like"));
    assert_non_null(strstr(buf, TIDE_USAGE_LOST_OWNER));
    free(buf);
    json_decref(r);

    /* the last day: beta idle, nothing phase-like (one full day is not enough) */
    tide_usage_report_opts_t o;
    tide_usage_report_opts_default(&o);
    o.since_s = 86400;
    r = tide_usage_report(x->dir, NULL, &o, &err);
    assert_non_null(r);
    p = json_object_get(json_object_get(r, "policies"), "elastic");
    near(jnum(json_object_get(p, "total"), "gpu_hours"), 768);
    assert_int_equal((int)jnum(json_object_get(p, "phases"), "days"), 1);
    assert_int_equal(json_array_size(json_object_get(json_object_get(p, "phases"), "teams")), 0);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(p, "peak"), "top_team")), "alpha");
    json_decref(r);
}

static json_t *find_signal(json_t *sig, const char *policy, const char *name)
{
    json_t *fs = json_object_get(json_object_get(json_object_get(sig, "policies"), policy),
                                 "findings");
    size_t i;
    json_t *v;
    json_array_foreach(fs, i, v) if (!strcmp(json_string_value(json_object_get(v, "signal")), name))
        return v;
    return NULL;
}

static void test_capacity(void **state)
{
    fx_t *x = *state;
    tide_error_t err = {0};
    json_t *s = tide_signals_compute(x->dir, NULL, NULL, &err);
    if (!s)
        fail_msg("%s", err.msg);
    /* elastic: 5 stops by inference in 2 days on 32 GPUs = 7.8125 per day per 100 */
    json_t *f = find_signal(s, "elastic", "preemptions");
    assert_non_null(f);
    near(jnum(f, "value"), 7.8125);
    assert_non_null(strstr(json_string_value(json_object_get(f, "message")),
                           "7.8 per day per 100 GPUs"));
    assert_non_null(strstr(json_string_value(json_object_get(f, "message")),
                           "inference floor (Tier A reserve) is too small"));
    f = find_signal(s, "elastic", "queue");
    assert_non_null(f);
    near(jnum(f, "value"), 100000 / H);
    assert_non_null(strstr(json_string_value(json_object_get(f, "message")),
                           "p95 queue time 27.8 h"));
    f = find_signal(s, "elastic", "waste");
    assert_non_null(f);
    near(jnum(f, "value"), 0.42);
    assert_non_null(strstr(json_string_value(json_object_get(f, "message")), "utilization 42.0%"));
    assert_non_null(find_signal(s, "elastic", "contention")); /* the quota stop */
    json_t *m = json_object_get(json_object_get(json_object_get(s, "policies"), "elastic"),
                                "metrics");
    assert_int_equal((int)jnum(m, "stops_by_inference"), 5);
    near(jnum(m, "mean_queue_gpus"), 8);
    /* static: nothing to say */
    assert_non_null(find_signal(s, "static", "ok"));
    assert_null(find_signal(s, "static", "waste"));
    /* sweep: consecutive reserves of the same policy and margin */
    json_t *sw = json_object_get(s, "sweep");
    assert_true(json_is_true(json_object_get(sw, "available")));
    json_t *steps = json_object_get(sw, "steps");
    assert_int_equal(json_array_size(steps), 3);
    int seen = 0;
    size_t i;
    json_t *v;
    json_array_foreach(steps, i, v)
    {
        const char *msg = json_string_value(json_object_get(v, "message"));
        if (strstr(msg, "8 more Tier A GPUs (reserve 8 -> 16) raise SLO attainment from 0.9500 "
                        "to 0.9900 and cost 50.0 training GPU-hours"))
            seen |= 1;
        if (strstr(msg, "(reserve 16 -> 24) raise SLO attainment from 0.9900 to 0.9995 and cost "
                        "69.5 training GPU-hours"))
            seen |= 2;
        if (strstr(msg, "from 0.9600 to 0.9700 and cost 50.0"))
            seen |= 4;
    }
    assert_int_equal(seen, 7);
    json_t *rec = json_object_get(sw, "recommend");
    assert_int_equal(json_array_size(rec), 2);
    int hit = 0;
    json_array_foreach(rec, i, v)
    {
        const char *msg = json_string_value(json_object_get(v, "message"));
        if (strstr(msg, "the smallest reserve reaching SLO 0.9990 is 24"))
            hit |= 1;
        if (strstr(msg, "no reserve in the sweep reaches SLO 0.9990 (best 0.9700 at reserve 16)"))
            hit |= 2;
    }
    assert_int_equal(hit, 3);
    char *buf = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&buf, &len);
    assert_int_equal(tide_signals_print(mf, s), 0);
    fclose(mf);
    assert_non_null(strstr(buf, "[warn] preemptions"));
    assert_non_null(strstr(buf, "=> elastic: the smallest reserve"));
    free(buf);
    json_decref(s);

    /* thresholds are overridable: nothing fires for elastic with lax ones */
    tide_signals_opts_t o;
    tide_signals_opts_default(&o);
    o.preempt_per_day_per_100 = 10;
    o.queue_p95_h = 48;
    o.util_low = 0.4;
    o.idle_high = 0.6;
    s = tide_signals_compute(x->dir, "elastic", &o, &err);
    assert_non_null(s);
    assert_non_null(find_signal(s, "elastic", "ok"));
    assert_null(json_object_get(json_object_get(s, "policies"), "static"));
    json_decref(s);
    /* errors */
    assert_null(tide_signals_compute(x->dir, "fifo", NULL, &err));
    assert_non_null(strstr(err.msg, "policy 'fifo' is not in"));
    assert_null(tide_signals_compute("/nonexistent/dir", NULL, NULL, &err));
    assert_int_equal(err.code, TIDE_ENOENT);
    o.util_low = 2;
    assert_null(tide_signals_compute(x->dir, NULL, &o, &err));
    assert_int_equal(err.code, TIDE_EINVAL);
}

/* The commands themselves (TIDE_BIN is set by ctest). */
static int run(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_cli(void **state)
{
    fx_t *x = *state;
    const char *bin = getenv("TIDE_BIN");
    if (!bin || access(bin, X_OK) != 0) {
        print_message("TIDE_BIN not set: CLI checks skipped\n");
        return;
    }
    char cmd[4096], out[300];
    snprintf(out, sizeof out, "%s/out.txt", x->dir);
    snprintf(cmd, sizeof cmd, "%s usage %s --by team --policy elastic --format csv > %s", bin,
             x->dir, out);
    assert_int_equal(run(cmd), 0);
    FILE *f = fopen(out, "r");
    char buf[4096] = "";
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    assert_non_null(strstr(buf, "owner,gpu_hours,cost\n-,884.0000,442.0000\n"));
    snprintf(cmd, sizeof cmd, "%s usage %s --since 1d --by class,state > %s", bin, x->dir, out);
    assert_int_equal(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s usage %s --report --format json > %s", bin, x->dir, out);
    assert_int_equal(run(cmd), 0);
    json_error_t je;
    json_t *j = json_load_file(out, 0, &je);
    assert_non_null(j);
    json_decref(j);
    snprintf(cmd, sizeof cmd, "%s usage %s --by colour 2>%s", bin, x->dir, out);
    assert_int_equal(run(cmd), 2);
    snprintf(cmd, sizeof cmd, "%s usage %s/none 2>%s", bin, x->dir, out);
    assert_int_equal(run(cmd), 3);
    snprintf(cmd, sizeof cmd, "%s capacity %s --queue-p95 2d > %s", bin, x->dir, out);
    assert_int_equal(run(cmd), 0);
    f = fopen(out, "r");
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    assert_non_null(strstr(buf, "[warn] preemptions"));
    assert_null(strstr(buf, "[warn] queue"));
    snprintf(cmd, sizeof cmd, "%s capacity %s --format json > %s", bin, x->dir, out);
    assert_int_equal(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s capacity %s --util-low 3 2>%s", bin, x->dir, out);
    assert_int_equal(run(cmd), 2);
    snprintf(cmd, sizeof cmd, "%s capacity --help > %s && %s usage %s --help > %s", bin, out, bin,
             x->dir, out);
    assert_int_equal(run(cmd), 0);
}


/* ------------------------------------------------------ writer vs cells */

typedef struct sumrow {
    char key[160];
    double gpu_s;
} sumrow_t;

typedef struct sums {
    sumrow_t v[512];
    int n, teams, services, types[2];
} sums_t;

static double *sum_find(sums_t *s, const char *key)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->v[i].key, key))
            return &s->v[i].gpu_s;
    return NULL;
}

static double *sum_at(sums_t *s, const char *key)
{
    double *v = sum_find(s, key);
    if (v)
        return v;
    assert_true(s->n < 512);
    snprintf(s->v[s->n].key, sizeof s->v[s->n].key, "%s", key);
    return &s->v[s->n++].gpu_s;
}

/* Every cell tide_usage_cells reports now equals the sum of its usage.csv
 * rows (each row rounded to 0.001). */
static void cell_matches_rows(void *ctx, const tide_usage_cell_t *c)
{
    sums_t *s = ctx;
    char key[160];
    char type[16];
    snprintf(type, sizeof type, "type%d", c->type);
    snprintf(key, sizeof key, "%s|%s|%s|%s|%s|%s", c->owner, tide_owner_kind_name(c->kind),
             tide_class_name(c->cls), tide_state_name(c->state), tide_tier_name(c->tier), type);
    const double *row = sum_find(s, key);
    double got = row ? *row : 0.0;
    if (fabs(got - c->gpu_s) > 0.01)
        fail_msg("%s: rows sum to %.3f, the cell is %.3f", key, got, c->gpu_s);
}

/* The sampler's rows (their key columns kept as text per cell, two GPU
 * types, teams and a service) add up to the engine's cells. */
static void test_writer_rows(void **state)
{
    (void)state;
    tide_error_t err = {0};
    tide_cluster_t *c = tide_cluster_parse("2x8:H100,2x4:A100", &err);
    assert_non_null(c);
    tide_config_t cfg;
    tide_config_default(&cfg);
    cfg.policy = "static";
    tide_engine_t *e = tide_engine_create(c, &cfg, &err);
    assert_non_null(e);
    tide_service_spec_t sv = {.name = "chat", .gpus_per_replica = 4, .replica_rps = 10,
                              .min_replicas = 1, .warmup_s = 60};
    assert_int_equal(tide_engine_add_service(e, &sv, &err), 0);
    static const char *const ids[] = {"j1", "j2", "j3"}, *const teams[] = {"a", "b", "a"};
    static const int gpus[] = {8, 4, 2};
    tide_job_spec_t js[3];
    tide_event_t ev[3];
    for (int i = 0; i < 3; i++) {
        js[i] = (tide_job_spec_t){.id = ids[i], .team = teams[i], .priority = 2 + i % 2,
                                  .gpus = gpus[i], .gang_gpus = gpus[i], .dp_min = 1,
                                  .duration_s = 1000 * (i + 1), .ckpt_interval_s = 1800,
                                  .ckpt_s = 30, .restore_s = 60};
        assert_int_equal(tide_job_spec_normalize(&js[i], &err), 0);
        ev[i] = (tide_event_t){.kind = TIDE_EV_JOB_SUBMIT, .job = -1, .service = -1,
                               .replica = -1, .node = -1, .job_spec = &js[i]};
    }
    char dir[] = "/tmp/tide_usage_w_XXXXXX";
    assert_non_null(mkdtemp(dir));
    tide_usage_t *u = tide_usage_open(dir, NULL, &err);
    assert_non_null(u);
    tide_actions_t acts = {0};
    for (tide_time_t t = 0; t <= 4000; t += 500) {
        assert_int_equal(tide_engine_step(e, t, t ? NULL : ev, t ? 0 : 3, &acts, &err), 0);
        assert_int_equal(tide_usage_sample(u, "static", t, e), 0);
    }
    assert_int_equal(tide_usage_close(u, &err), 0);
    char p[512];
    snprintf(p, sizeof p, "%s/usage.csv", dir);
    tide_csv_t *csv = tide_csv_open_file(p, &err);
    assert_non_null(csv);
    sums_t *s = calloc(1, sizeof *s);
    while (tide_csv_next(csv, &err) == 1) {
        char key[160];
        snprintf(key, sizeof key, "%s|%s|%s|%s|%s|%s", tide_csv_field(csv, 2),
                 tide_csv_field(csv, 3), tide_csv_field(csv, 4), tide_csv_field(csv, 5),
                 tide_csv_field(csv, 6), tide_csv_field(csv, 7));
        *sum_at(s, key) += atof(tide_csv_field(csv, 8));
        s->teams += !strcmp(tide_csv_field(csv, 3), "team");
        s->services += !strcmp(tide_csv_field(csv, 3), "service");
        for (int k = 0; k < 2; k++)
            s->types[k] += tide_csv_field(csv, 7)[4] == '0' + k;
    }
    tide_csv_close(csv);
    assert_true(s->teams > 0 && s->services > 0 && s->types[0] > 0 && s->types[1] > 0);
    tide_usage_cells(e, NULL, cell_matches_rows, s);
    free(s);
    static const char *const files[] = {"usage.csv", "usage_teams.csv", "usage_services.csv"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
    tide_actions_free(&acts);
    tide_engine_destroy(e);
    tide_cluster_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_by),
        cmocka_unit_test(test_writer_rows),
        cmocka_unit_test_setup_teardown(test_aggregate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report, setup, teardown),
        cmocka_unit_test_setup_teardown(test_capacity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cli, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
