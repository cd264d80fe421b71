/* `tide review OLD.yaml NEW.yaml`: replay the same workload under two
 * configurations and judge the change (docs/review.md). */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/review.h"
#include "sim/gen.h"
#include "util/fs.h"
#include "util/util.h"

#define DEFAULT_FRONT "margin=0:0.3:0.1"

static void review_usage(FILE *f)
{
    fprintf(f,
            "usage: tide review OLD.yaml NEW.yaml [--traces DIR] [options]\n"
            "\n"
            "Replay the same inference and training workload under two configurations\n"
            "(tide serve --config files: cluster or cluster-file with teams and quotas,\n"
            "services, policy, reserve, split, lead-extra, lease-max, control-period,\n"
            "scale-down-hold; the daemon's own keys are ignored) and compare them: both\n"
            "outcomes (SLO attainment, Tier A breach, useful utilisation, training wait,\n"
            "preemptions, lost work) with a verdict per metric, and both Pareto fronts on\n"
            "(useful utilisation, SLO attainment) over the --front grid. Exit 1 when NEW\n"
            "is worse than OLD beyond a limit (a CI gate), 0 when it is not.\n"
            "\n"
            "workload:\n"
            "      --traces DIR        replay DIR/demand.csv and DIR/jobs.csv (and\n"
            "                          DIR/services.csv unless the configs name services;\n"
            "                          `tide trace import` or `tide gen` writes them)\n"
            "      --scenario NAME     without --traces: a generated workload (tide gen),\n"
            "                          seed200 (default), seed32 or bench\n"
            "      --days N            its days (default 3)\n"
            "      --seed S            its seed (default 1)\n"
            "      --horizon D         simulated time (default: the workload's, whole days)\n"
            "      --inject LIST       faults in both replays (tide sim --inject), e.g.\n"
            "                          storage:0.5 (slow checkpoints), burst:2x@36h+1h\n"
            "comparison:\n"
            "      --front GRID        the grid each front is over (tide sim --sweep grammar;\n"
            "                          default " DEFAULT_FRONT ": the forecast margin\n"
            "                          floor, a knob the configurations do not set)\n"
            "      --max-slo-drop X    NEW may lose at most X of SLO attainment (default\n"
            "                          0.0005: half the error budget of a 99.9%% SLO)\n"
            "      --max-breach-rise H NEW may add at most H GPU-hours of Tier A breach\n"
            "                          (default 0)\n"
            "      --max-useful-drop X NEW may lose at most X of useful utilisation\n"
            "                          (default 0.02)\n"
            "      --max-wait-rise X   NEW's mean training wait may grow at most by the\n"
            "                          fraction X (default: no limit)\n"
            "      --max-lost-rise H   NEW may lose at most H more GPU-hours of training\n"
            "                          work (default: no limit)\n"
            "output:\n"
            "      --out DIR           keep the replays in DIR/old, DIR/new (and the\n"
            "                          generated workload in DIR/workload); default: a\n"
            "                          temporary directory, removed\n"
            "      --threads N         replays at once (default: the online CPUs)\n"
            "      --json              one JSON document instead of the tables\n"
            "  -h, --help              show this help\n"
            "\n"
            "Exit status: 0 NEW passes, 1 NEW is worse beyond a limit, 2 bad options or\n"
            "files, 3 a missing file. Details: docs/review.md.\n");
}

#define bad(...) tide_cli_usage_error("review", __VA_ARGS__)

typedef struct rargs {
    const char *old_path, *new_path, *traces, *scenario, *front, *out;
    long long days, threads;
    uint64_t seed;
    int64_t horizon;
    int json;
    tide_inject_t inject;
    tide_review_limits_t lim;
} rargs_t;

enum { O_TRACES = 1000, O_SCENARIO, O_DAYS, O_SEED, O_HORIZON, O_INJECT, O_FRONT, O_SLO,
       O_BREACH, O_USEFUL, O_WAIT, O_LOST, O_OUT, O_THREADS, O_JSON };

static const struct option longopts[] = {
    {"traces", required_argument, NULL, O_TRACES},
    {"scenario", required_argument, NULL, O_SCENARIO},
    {"days", required_argument, NULL, O_DAYS},
    {"seed", required_argument, NULL, O_SEED},
    {"horizon", required_argument, NULL, O_HORIZON},
    {"inject", required_argument, NULL, O_INJECT},
    {"front", required_argument, NULL, O_FRONT},
    {"max-slo-drop", required_argument, NULL, O_SLO},
    {"max-breach-rise", required_argument, NULL, O_BREACH},
    {"max-useful-drop", required_argument, NULL, O_USEFUL},
    {"max-wait-rise", required_argument, NULL, O_WAIT},
    {"max-lost-rise", required_argument, NULL, O_LOST},
    {"out", required_argument, NULL, O_OUT},
    {"threads", required_argument, NULL, O_THREADS},
    {"json", no_argument, NULL, O_JSON},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* A limit: a number >= 0. */
static int limit_opt(rargs_t *a, int o, const char *arg)
{
    static const struct {
        int opt;
        size_t off;
        const char *flag;
    } L[] = {{O_SLO, offsetof(tide_review_limits_t, max_slo_drop), "--max-slo-drop"},
             {O_BREACH, offsetof(tide_review_limits_t, max_breach_rise_h), "--max-breach-rise"},
             {O_USEFUL, offsetof(tide_review_limits_t, max_useful_drop), "--max-useful-drop"},
             {O_WAIT, offsetof(tide_review_limits_t, max_wait_rise), "--max-wait-rise"},
             {O_LOST, offsetof(tide_review_limits_t, max_lost_rise_h), "--max-lost-rise"}};
    for (size_t i = 0; i < sizeof L / sizeof L[0]; i++) {
        if (L[i].opt != o)
            continue;
        double v;
        if (tide_parse_decimal(arg, &v) < 0 || v < 0)
            return bad("%s: '%s' is not a number >= 0", L[i].flag, arg);
        *(double *)((char *)&a->lim + L[i].off) = v;
        return -1;
    }
    return -2;
}

static int one_opt(rargs_t *a, int o, char **argv)
{
    tide_error_t err = {0};
    int rc = limit_opt(a, o, optarg);
    if (rc != -2)
        return rc;
    switch (o) {
    case O_TRACES: a->traces = optarg; break;
    case O_SCENARIO: a->scenario = optarg; break;
    case O_FRONT: a->front = optarg; break;
    case O_OUT: a->out = optarg; break;
    case O_JSON: a->json = 1; break;
    case O_DAYS:
        if (tide_parse_int(optarg, &a->days) < 0 || a->days < 1 || a->days > TIDE_GEN_MAX_DAYS)
            return bad("--days: '%s' is not a number of days in 1..%d", optarg,
                       TIDE_GEN_MAX_DAYS);
        break;
    case O_SEED:
        if (tide_parse_u64(optarg, &a->seed) < 0)
            return bad("--seed: '%s' is not a whole number", optarg);
        break;
    case O_HORIZON:
        if (tide_parse_duration(optarg, &a->horizon) < 0 || a->horizon <= 0)
            return bad("--horizon: '%s' is not a positive duration", optarg);
        break;
    case O_THREADS:
        if (tide_parse_int(optarg, &a->threads) < 0 || a->threads < 1 ||
            a->threads > TIDE_SWEEP_MAX_THREADS)
            return bad("--threads: '%s' is not a count in 1..%d", optarg,
                       TIDE_SWEEP_MAX_THREADS);
        break;
    case O_INJECT:
        if (tide_inject_parse(&a->inject, optarg, &err) < 0)
            return bad("--inject: %s", err.msg);
        break;
    case 'h': review_usage(stdout); return 0;
    default: return tide_cli_getopt_error("review", o, argv);
    }
    return -1;
}

static int parse_args(rargs_t *a, int argc, char **argv)
{
    int o, rc;
    optind = 0;
    opterr = 0;
    while ((o = getopt_long(argc, argv, ":h", longopts, NULL)) != -1)
        if ((rc = one_opt(a, o, argv)) >= 0)
            return rc;
    if (argc - optind != 2)
        return bad("two configuration files are needed (OLD.yaml NEW.yaml), %d given",
                   argc - optind);
    a->old_path = argv[optind];
    a->new_path = argv[optind + 1];
    if (a->traces && (a->scenario || a->days))
        return bad("--scenario and --days describe a generated workload: not with --traces");
    if (a->scenario && !tide_gen_cluster_spec(a->scenario))
        return bad("--scenario: unknown scenario '%s' (seed200, seed32, bench)", a->scenario);
    return -1;
}

/* ------------------------------------------------------------ workload */

typedef struct paths {
    char services[4096], demand[4096], jobs[4096], workload[4096];
} paths_t;

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The workload: --traces DIR's files, or a generated scenario in dir/workload. */
static int workload(const rargs_t *a, const char *dir, paths_t *p, review_workload_t *w,
                    tide_error_t *err)
{
    memset(w, 0, sizeof *w);
    w->horizon_s = a->horizon;
    w->inject = &a->inject;
    w->seed = a->seed;
    const char *base = a->traces;
    if (!base) {
        snprintf(p->workload, sizeof p->workload, "%s/workload", dir);
        tide_gen_opts_t g = {.scenario = a->scenario ? a->scenario : "seed200",
                             .days = a->days ? (int)a->days : 3, .seed = a->seed,
                             .outdir = p->workload};
        if (g.scenario && !strcmp(g.scenario, "bench"))
            g.jobs = 5000;
        if (tide_gen_write(&g, err) < 0)
            return -1;
        w->cluster = tide_gen_cluster_spec(g.scenario);
        base = p->workload;
    }
    if (strlen(base) > sizeof p->jobs - 16)
        return tide_errf(err, TIDE_EINVAL, "--traces: the path is too long");
    snprintf(p->services, sizeof p->services, "%.4000s/services.csv", base);
    snprintf(p->demand, sizeof p->demand, "%.4000s/demand.csv", base);
    snprintf(p->jobs, sizeof p->jobs, "%.4000s/jobs.csv", base);
    if (!is_file(p->demand) || !is_file(p->jobs))
        return tide_errf(err, TIDE_ENOENT, "--traces %s: no demand.csv and jobs.csv there "
                         "(tide trace import writes them)", base);
    w->services = is_file(p->services) ? p->services : NULL;
    w->demand = p->demand;
    w->jobs = p->jobs;
    return 0;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* ------------------------------------------------------------- output */

static const char *dir_word(int d)
{
    return d > 0 ? "better" : d < 0 ? "worse" : "same";
}

static void print_verdicts(const tide_review_verdict_t *v, FILE *f)
{
    fprintf(f, "%-20s %-10s %14s %14s %14s  %s\n", "METRIC", "SIDE", "OLD", "NEW", "DELTA",
            "VERDICT");
    for (int i = 0; i < TIDE_REVIEW_METRICS; i++) {
        char lim[64] = "";
        if (isfinite(v[i].limit))
            snprintf(lim, sizeof lim, " (limit %g)", v[i].limit);
        fprintf(f, "%-20s %-10s %14.6f %14.6f %+14.6f  %s%s%s\n", v[i].metric, v[i].side,
                v[i].old_v, v[i].new_v, v[i].delta, dir_word(v[i].direction),
                v[i].fails ? ": FAIL" : "", v[i].fails ? lim : "");
    }
}

static void front_cell(const review_side_t *s, size_t k, char *buf, size_t n)
{
    buf[0] = '\0';
    if (k >= s->front.n_front)
        return;
    const tide_sweep_row_t *r = &s->front.rows[s->front.front[k]];
    char label[128];
    tide_sweep_label(&s->front_grid, r->point, label, sizeof label);
    snprintf(buf, n, "%-18.60s %7.4f %9.6f", label, r->useful_utilization, r->slo_attainment);
}

static void print_fronts(const review_side_t *o, const review_side_t *n, const char *grid,
                         FILE *f)
{
    fprintf(f, "\nPareto fronts on (useful utilisation, SLO attainment) over %s:\n", grid);
    fprintf(f, "%-18s %7s %9s   %-18s %7s %9s\n", "OLD point", "useful", "slo", "NEW point",
            "useful", "slo");
    size_t rows = TIDE_MAX(o->front.n_front, n->front.n_front);
    for (size_t k = 0; k < rows; k++) {
        char a[128], b[128];
        front_cell(o, k, a, sizeof a);
        front_cell(n, k, b, sizeof b);
        fprintf(f, "%-36s   %s\n", a, b);
    }
    size_t nd = tide_review_dominated(n->front.rows, n->front.front, n->front.n_front,
                                      o->front.rows, o->front.front, o->front.n_front);
    size_t od = tide_review_dominated(o->front.rows, o->front.front, o->front.n_front,
                                      n->front.rows, n->front.front, n->front.n_front);
    fprintf(f, "front: %zu of NEW's %zu points dominated by OLD's front; %zu of OLD's %zu by "
               "NEW's\n", nd, n->front.n_front, od, o->front.n_front);
}

static void print_text(const rargs_t *a, const review_side_t *o, const review_side_t *n,
                       const tide_review_verdict_t *v, int fails, const char *wl)
{
    printf("tide review: OLD %s (%s) vs NEW %s (%s), workload %s\n\n", a->old_path,
           o->o.cfg.policy, a->new_path, n->o.cfg.policy, wl);
    print_verdicts(v, stdout);
    print_fronts(o, n, a->front ? a->front : DEFAULT_FRONT, stdout);
    if (!fails) {
        printf("verdict: PASS (NEW is within every limit)\n");
        return;
    }
    printf("verdict: FAIL (%d limit%s exceeded:", fails, fails > 1 ? "s" : "");
    const char *sep = " ";
    for (int i = 0; i < TIDE_REVIEW_METRICS; i++)
        if (v[i].fails) {
            printf("%s%s %+g, limit %g", sep, v[i].metric, v[i].delta, v[i].limit);
            sep = "; ";
        }
    printf(")\n");
}

static json_t *jnum(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *front_json(const review_side_t *s)
{
    json_t *arr = json_array();
    for (size_t k = 0; k < s->front.n_front; k++) {
        const tide_sweep_row_t *r = &s->front.rows[s->front.front[k]];
        char label[128];
        tide_sweep_label(&s->front_grid, r->point, label, sizeof label);
        json_array_append_new(arr, json_pack("{s:s,s:o,s:o}", "point", label, "useful_utilization",
                                             jnum(r->useful_utilization), "slo_attainment",
                                             jnum(r->slo_attainment)));
    }
    return arr;
}

static void print_json(const rargs_t *a, const review_side_t *o, const review_side_t *n,
                       const tide_review_verdict_t *v, int fails, const char *wl)
{
    json_t *ms = json_array();
    for (int i = 0; i < TIDE_REVIEW_METRICS; i++)
        json_array_append_new(ms, json_pack("{s:s,s:s,s:o,s:o,s:o,s:s,s:o,s:b}", "metric",
                                            v[i].metric, "side", v[i].side, "old", jnum(v[i].old_v),
                                            "new", jnum(v[i].new_v), "delta", jnum(v[i].delta),
                                            "verdict", dir_word(v[i].direction), "limit",
                                            jnum(v[i].limit), "fails", v[i].fails));
    json_t *d = json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:{s:o,s:o},s:s,s:i}", "old", a->old_path,
                          "new", a->new_path, "old_policy", o->o.cfg.policy, "new_policy",
                          n->o.cfg.policy, "workload", wl, "metrics", ms, "fronts", "old",
                          front_json(o), "new", front_json(n), "front_grid",
                          a->front ? a->front : DEFAULT_FRONT, "fails", fails);
    json_object_set_new(d, "pass", json_boolean(fails == 0));
    char *s = json_dumps(d, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    printf("%s\n", s ? s : "{}");
    free(s);
    json_decref(d);
}

/* ---------------------------------------------------------------- run */

/* Load and replay both sides into dir; print; the exit status. */
static int review(const rargs_t *a, const char *dir, review_side_t *o, review_side_t *n)
{
    tide_error_t err = {0};
    paths_t p;
    review_workload_t w;
    if (workload(a, dir, &p, &w, &err) < 0 || review_side_read(o, a->old_path, &err) < 0 ||
        review_side_read(n, a->new_path, &err) < 0 || review_side_load(o, &w, &err) < 0 ||
        review_side_load(n, &w, &err) < 0)
        return tide_cli_fail("review", &err);
    char od[4096], nd[4096];
    snprintf(od, sizeof od, "%s/old", dir);
    snprintf(nd, sizeof nd, "%s/new", dir);
    const char *front = a->front ? a->front : DEFAULT_FRONT;
    int threads = (int)a->threads;
    if (review_side_run(o, od, front, threads, &err) < 0 ||
        review_side_run(n, nd, front, threads, &err) < 0)
        return tide_cli_fail("review", &err);
    tide_review_verdict_t v[TIDE_REVIEW_METRICS];
    int fails = tide_review_judge(&o->out, &n->out, &a->lim, v);
    char wl[4200];
    if (a->traces)
        snprintf(wl, sizeof wl, "%s", a->traces);
    else
        snprintf(wl, sizeof wl, "generated %s, %lld days, seed %llu",
                 a->scenario ? a->scenario : "seed200", a->days ? a->days : 3,
                 (unsigned long long)a->seed);
    if (a->json)
        print_json(a, o, n, v, fails, wl);
    else
        print_text(a, o, n, v, fails, wl);
    return fails ? 1 : 0;
}

int tide_cmd_review(int argc, char **argv)
{
    rargs_t a = {.seed = 1};
    tide_review_limits_default(&a.lim);
    tide_inject_init(&a.inject);
    int rc = parse_args(&a, argc, argv);
    if (rc >= 0) {
        tide_inject_free(&a.inject);
        return rc;
    }
    char tmpl[4096] = "";
    const char *dir = a.out;
    tide_error_t err = {0};
    if (!dir) {
        const char *t = getenv("TMPDIR");
        snprintf(tmpl, sizeof tmpl, "%s/tide-review.XXXXXX", t && *t ? t : "/tmp");
        if (!(dir = mkdtemp(tmpl))) {
            tide_errf(&err, TIDE_EIO, "cannot create a temporary directory in %s", tmpl);
            tide_inject_free(&a.inject);
            return tide_cli_fail("review", &err);
        }
    } else if (tide_mkdir_p(dir, &err) < 0) {
        tide_inject_free(&a.inject);
        return tide_cli_fail("review", &err);
    }
    review_side_t o, n;
    memset(&o, 0, sizeof o);
    memset(&n, 0, sizeof n);
    rc = review(&a, dir, &o, &n);
    review_side_free(&o);
    review_side_free(&n);
    if (!a.out)
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    tide_inject_free(&a.inject);
    return rc;
}
