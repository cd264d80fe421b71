/* Unit tests for the scenario generator (src/sim/gen.c) and `tide gen`
 * (src/cli/cmd_gen.c, compiled in here so the CLI is tested without the
 * tide binary). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/gen.h"

#include "cli/cli_util.c"
#include "cli/cmd_gen.c"

/* ------------------------------------------------------------- helpers */

static char *tmpdir_new(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/tide-gen-XXXXXX", base && *base ? base : "/tmp");
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

/* rm -r of a directory holding files and one level of subdirectories. */
static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char p[1024];
        int n = snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (n < 0 || (size_t)n >= sizeof p)
            continue;
        struct stat st;
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
            rm_tree(p);
        else
            remove(p);
    }
    closedir(d);
    rmdir(dir);
}

static char *path_of(const char *dir, const char *name)
{
    static char buf[4][1024];
    static int k;
    k = (k + 1) % 4;
    int n = snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    assert_true(n > 0 && (size_t)n < sizeof buf[k]);
    return buf[k];
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return b;
}

static int same_file(const char *a, const char *b)
{
    size_t na, nb;
    char *x = slurp(a, &na), *y = slurp(b, &nb);
    int same = na == nb && !memcmp(x, y, na);
    free(x);
    free(y);
    return same;
}

/* A parsed CSV: the header line and rows of fields. */
typedef struct table {
    char *buf;
    char *header;
    char ***rows;
    int *nf;
    size_t n;
} table_t;

static void table_load(table_t *t, const char *path)
{
    memset(t, 0, sizeof *t);
    t->buf = slurp(path, NULL);
    size_t len = strlen(t->buf);
    assert_true(len > 0);
    assert_int_equal(t->buf[len - 1], '\n');
    size_t lines = 0;
    for (char *p = t->buf; *p; p++)
        lines += *p == '\n';
    t->rows = calloc(lines, sizeof *t->rows);
    t->nf = calloc(lines, sizeof *t->nf);
    char *save = NULL;
    char *line = strtok_r(t->buf, "\n", &save);
    t->header = line;
    while ((line = strtok_r(NULL, "\n", &save))) {
        char **f = calloc(16, sizeof *f);
        int n = 0;
        char *p = line;
        for (;;) {
            assert_true(n < 16);
            f[n++] = p;
            char *c = strchr(p, ',');
            if (!c)
                break;
            *c = '\0';
            p = c + 1;
        }
        t->rows[t->n] = f;
        t->nf[t->n++] = n;
    }
}

static void table_free(table_t *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->rows[i]);
    free(t->rows);
    free(t->nf);
    free(t->buf);
}

/* Strict integer / number fields. */
static long long ival(const char *s)
{
    assert_true(*s != '\0');
    char *end;
    long long v = strtoll(s, &end, 10);
    assert_true(*end == '\0');
    return v;
}

static double dval(const char *s)
{
    assert_true(*s != '\0');
    char *end;
    double v = strtod(s, &end);
    assert_true(*end == '\0');
    assert_true(isfinite(v));
    return v;
}

static int gen(const char *scenario, int days, uint64_t seed, int nodes, long jobs,
               const char *dir, tide_gen_summary_t *sum, tide_error_t *err)
{
    tide_gen_opts_t o = {.scenario = scenario, .days = days, .seed = seed, .nodes = nodes,
                         .jobs = jobs, .outdir = dir};
    return tide_gen_write_ex(&o, sum, err);
}

#define SVC_HEADER "service,gpus_per_replica,replica_rps,min_replicas,warmup_s,max_replicas"
#define DEMAND_HEADER "time_s,service,rps"
#define JOBS_HEADER                                                                            \
    "job_id,submit_s,team,priority,gpus,duration_s,gang_gpus,dp_min,ckpt_interval_s,ckpt_s,"   \
    "restore_s"

typedef struct svc_row {
    const char *name;
    int gpr, min_rep, max_rep, warmup;
    double rr;
} svc_row_t;

/* What a scenario directory says, computed from the files alone. */
typedef struct facts {
    int nsvc;
    svc_row_t svc[8];
    long times;          /* demand time rows */
    int *need;           /* times x nsvc replicas needed */
    int peak, trough;    /* GPUs */
    double mean_held;    /* mean over times of sum max(need, floor) GPUs */
    long jobs;
    double work;         /* sum gpus * duration of jobs not submitted at 0 */
    double work_all;     /* ... of all jobs */
    int gpus_at0;
    int p[4];
    double median_dur;
    long long max_dur;
    int teams;
} facts_t;

static int dur_cmp(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* Check every format rule and every job constraint; fill f. */
static void check_dir(const char *dir, int days, facts_t *f)
{
    memset(f, 0, sizeof *f);
    long long horizon = (long long)days * 86400;

    table_t s;
    table_load(&s, path_of(dir, "services.csv"));
    assert_string_equal(s.header, SVC_HEADER);
    assert_true(s.n >= 1 && s.n <= 8);
    for (size_t i = 0; i < s.n; i++) {
        assert_int_equal(s.nf[i], 6);
        svc_row_t *v = &f->svc[f->nsvc++];
        v->name = strdup(s.rows[i][0]);
        assert_true(strlen(v->name) > 0);
        v->gpr = (int)ival(s.rows[i][1]);
        v->rr = dval(s.rows[i][2]);
        v->min_rep = (int)ival(s.rows[i][3]);
        v->warmup = (int)ival(s.rows[i][4]);
        v->max_rep = (int)ival(s.rows[i][5]);
        assert_true(v->gpr >= 1 && v->gpr <= 8);
        assert_true(v->rr > 0);
        assert_true(v->min_rep >= 0);
        assert_true(v->warmup >= 60 && v->warmup <= 900);
        assert_true(v->max_rep == 0 || v->max_rep >= v->min_rep);
    }
    table_free(&s);

    table_t d;
    table_load(&d, path_of(dir, "demand.csv"));
    assert_string_equal(d.header, DEMAND_HEADER);
    f->times = (long)days * 288;
    assert_int_equal(d.n, (size_t)f->times * (size_t)f->nsvc);
    f->need = calloc((size_t)f->times * (size_t)f->nsvc, sizeof *f->need);
    f->trough = 1 << 30;
    double held_sum = 0;
    for (long t = 0; t < f->times; t++) {
        int need = 0, held = 0;
        for (int k = 0; k < f->nsvc; k++) {
            size_t i = (size_t)t * (size_t)f->nsvc + (size_t)k;
            assert_int_equal(d.nf[i], 3);
            assert_int_equal(ival(d.rows[i][0]), t * 300);
            assert_string_equal(d.rows[i][1], f->svc[k].name);
            const char *dot = strchr(d.rows[i][2], '.');
            assert_non_null(dot);
            assert_int_equal(strlen(dot + 1), 3);
            double rps = dval(d.rows[i][2]);
            assert_true(rps >= 0);
            int n = (int)ceil(rps / f->svc[k].rr - 1e-9);
            f->need[i] = n;
            need += n * f->svc[k].gpr;
            held += (n > f->svc[k].min_rep ? n : f->svc[k].min_rep) * f->svc[k].gpr;
        }
        if (need > f->peak)
            f->peak = need;
        if (need < f->trough)
            f->trough = need;
        held_sum += held;
    }
    f->mean_held = held_sum / (double)f->times;
    table_free(&d);

    table_t j;
    table_load(&j, path_of(dir, "jobs.csv"));
    assert_string_equal(j.header, JOBS_HEADER);
    f->jobs = (long)j.n;
    long long prev = 0;
    long long *durs = calloc(j.n + 1, sizeof *durs);
    const char *teams[64];
    for (size_t i = 0; i < j.n; i++) {
        char **r = j.rows[i];
        assert_int_equal(j.nf[i], 11);
        assert_true(strlen(r[0]) > 0);
        long long submit = ival(r[1]);
        assert_true(submit >= prev); /* sorted by submit_s */
        assert_true(submit < horizon);
        prev = submit;
        assert_true(strlen(r[2]) > 0);
        long long prio = ival(r[3]), gpus = ival(r[4]), dur = ival(r[5]), gang = ival(r[6]);
        long long dpmin = ival(r[7]), ivl = ival(r[8]), ck = ival(r[9]), rs = ival(r[10]);
        assert_true(prio >= 1 && prio <= 3);
        assert_true(gpus >= 1);
        assert_true(dur >= 1);
        assert_true(gang >= 1 && gang <= 8 && gang <= gpus);
        assert_int_equal(gpus % gang, 0);
        assert_int_equal(gang, gpus < 8 ? gpus : 8);
        assert_true(dpmin >= 1 && dpmin <= gpus / gang);
        assert_true(ivl > 0);
        assert_true(ck >= 30 && ck <= 120);
        assert_true(rs >= ck && rs <= 3 * ck);
        f->p[prio]++;
        durs[i] = dur;
        if (dur > f->max_dur)
            f->max_dur = dur;
        if (submit == 0)
            f->gpus_at0 += (int)gpus;
        else
            f->work += (double)gpus * (double)dur;
        f->work_all += (double)gpus * (double)dur;
        int seen = 0;
        for (int k = 0; k < f->teams; k++)
            seen |= !strcmp(teams[k], r[2]);
        if (!seen && f->teams < 64)
            teams[f->teams++] = r[2];
        /* ids unique: compare with the previous few (ids are generated in
         * order) and, for small files, with all */
        if (j.n <= 5000)
            for (size_t k = 0; k < i; k++)
                assert_string_not_equal(j.rows[k][0], r[0]);
    }
    qsort(durs, j.n, sizeof *durs, dur_cmp);
    f->median_dur = j.n ? (double)durs[j.n / 2] : 0;
    free(durs);
    table_free(&j);
}

static void facts_free(facts_t *f)
{
    for (int k = 0; k < f->nsvc; k++)
        free((char *)f->svc[k].name);
    free(f->need);
}

/* ---------------------------------------------------------------- tests */

static void test_determinism(void **state)
{
    (void)state;
    char *root = tmpdir_new();
    const char *names[] = {"services.csv", "demand.csv", "jobs.csv"};
    char a[1024], b[1024], c[1024];
    snprintf(a, sizeof a, "%s/a", root);
    snprintf(b, sizeof b, "%s/b", root);
    snprintf(c, sizeof c, "%s/c", root);
    tide_error_t err = {0};

    assert_int_equal(gen("seed200", 3, 7, 0, 0, a, NULL, &err), 0);
    assert_int_equal(gen("seed200", 3, 7, 0, 0, b, NULL, &err), 0);
    assert_int_equal(gen("seed200", 3, 8, 0, 0, c, NULL, &err), 0);
    for (int i = 0; i < 3; i++)
        assert_true(same_file(path_of(a, names[i]), path_of(b, names[i])));
    assert_true(same_file(path_of(a, "services.csv"), path_of(c, "services.csv")));
    assert_false(same_file(path_of(a, "demand.csv"), path_of(c, "demand.csv")));
    assert_false(same_file(path_of(a, "jobs.csv"), path_of(c, "jobs.csv")));

    /* the other scenarios too; and regenerating into an existing dir */
    assert_int_equal(gen("seed32", 2, 99, 0, 0, a, NULL, &err), 0);
    assert_int_equal(gen("seed32", 2, 99, 0, 0, b, NULL, &err), 0);
    for (int i = 0; i < 3; i++)
        assert_true(same_file(path_of(a, names[i]), path_of(b, names[i])));
    assert_int_equal(gen("bench", 2, 5, 8, 3000, a, NULL, &err), 0);
    assert_int_equal(gen("bench", 2, 5, 8, 3000, b, NULL, &err), 0);
    for (int i = 0; i < 3; i++)
        assert_true(same_file(path_of(a, names[i]), path_of(b, names[i])));
    /* the demand stream does not depend on the job count */
    assert_int_equal(gen("bench", 2, 5, 8, 100, c, NULL, &err), 0);
    assert_true(same_file(path_of(a, "demand.csv"), path_of(c, "demand.csv")));
    assert_false(same_file(path_of(a, "jobs.csv"), path_of(c, "jobs.csv")));
    /* no temporary file left behind */
    assert_int_equal(access(path_of(a, "jobs.csv.tmp"), F_OK), -1);
    rm_tree(root);
    free(root);
}

static void test_seed200(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    tide_error_t err = {0};
    for (uint64_t seed = 1; seed <= 3; seed++) {
        tide_gen_summary_t sum;
        assert_int_equal(gen("seed200", 14, seed, 0, 0, dir, &sum, &err), 0);
        facts_t f;
        check_dir(dir, 14, &f);
        /* demand: peak ~80 GPUs, trough ~40 */
        assert_true(f.peak >= 70 && f.peak <= 90);
        assert_true(f.trough >= 30 && f.trough <= 50);
        assert_int_equal(sum.peak_gpus, f.peak);
        assert_int_equal(sum.trough_gpus, f.trough);
        int floor_gpus = 0;
        for (int k = 0; k < f.nsvc; k++)
            floor_gpus += f.svc[k].min_rep * f.svc[k].gpr;
        assert_int_equal(floor_gpus, 40);
        assert_int_equal(sum.floor_gpus, 40);
        assert_true(fabs(sum.mean_inf_gpus - f.mean_held) < 1e-6);
        /* weekdays peak higher than weekends; nights at the trough */
        for (int day = 0; day < 14; day++) {
            int dpeak = 0;
            for (long t = day * 288L; t < (day + 1) * 288L; t++) {
                int g = 0;
                for (int k = 0; k < f.nsvc; k++)
                    g += f.need[t * f.nsvc + k] * f.svc[k].gpr;
                dpeak = g > dpeak ? g : dpeak;
                long h = (t % 288) / 12;
                if (h < 6)
                    assert_true(g <= 50);
            }
            if (day % 7 < 5)
                assert_true(dpeak >= 70);
            else
                assert_true(dpeak < 70 && dpeak > 40);
        }
        /* training: backlog fills it, load 1.3-1.5x of its average share */
        assert_true(f.gpus_at0 >= 160);
        double load = f.work / ((200.0 - f.mean_held) * 14 * 86400);
        assert_true(load > 1.3 && load < 1.5);
        assert_true(fabs(sum.offered_load - load) < 1e-6);
        assert_int_equal(sum.jobs, f.jobs);
        assert_true(sum.jobs_per_day > 100 && sum.jobs_per_day < 250);
        assert_true(f.teams >= 5 && f.teams <= 8);
        double n = (double)f.jobs;
        assert_true(f.p[1] / n > 0.02 && f.p[1] / n < 0.09);
        assert_true(f.p[2] / n > 0.52 && f.p[2] / n < 0.68);
        assert_true(f.p[3] / n > 0.28 && f.p[3] / n < 0.42);
        assert_true(f.median_dur >= 0.75 * 3600 && f.median_dur <= 2.5 * 3600);
        assert_true(f.max_dur <= 2 * 86400);
        assert_string_equal(sum.cluster_spec, "25x8:H100");
        assert_int_equal(sum.cluster_gpus, 200);
        facts_free(&f);
    }
    rm_tree(dir);
    free(dir);
}

static void test_seed200_multi_gpu_and_elastic(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    tide_error_t err = {0};
    assert_int_equal(gen("seed200", 14, 11, 0, 0, dir, NULL, &err), 0);
    table_t j;
    table_load(&j, path_of(dir, "jobs.csv"));
    int multi = 0, big = 0, elastic = 0;
    for (size_t i = 0; i < j.n; i++) {
        long long gpus = ival(j.rows[i][4]), gang = ival(j.rows[i][6]), dpmin = ival(j.rows[i][7]);
        multi += gpus > 1;
        if (gpus >= 16) {
            big++;
            elastic += dpmin < gpus / gang;
        }
        if (gpus < 16)
            assert_int_equal(dpmin, gpus / gang); /* small jobs are not elastic */
    }
    assert_true((double)multi / (double)j.n > 0.5); /* heavier than Philly's 7% */
    assert_true(big > 0);
    assert_true((double)elastic / big > 0.15 && (double)elastic / big < 0.45);
    table_free(&j);
    rm_tree(dir);
    free(dir);
}

static void test_seed32(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    tide_error_t err = {0};
    tide_gen_summary_t sum;
    assert_int_equal(gen("seed32", 7, 3, 0, 0, dir, &sum, &err), 0);
    facts_t f;
    check_dir(dir, 7, &f);
    assert_int_equal(f.nsvc, 2);
    int dec = !strcmp(f.svc[0].name, "decode") ? 0 : 1, pre = 1 - dec;
    assert_string_equal(f.svc[dec].name, "decode");
    assert_string_equal(f.svc[pre].name, "prefill");
    assert_int_equal(f.svc[dec].gpr, 8);
    assert_int_equal(f.svc[dec].min_rep, 1);
    assert_int_equal(f.svc[pre].gpr, 4);
    assert_true(f.svc[pre].min_rep <= 1);
    for (long t = 0; t < f.times; t++) {
        long h = (t % 288) / 12;
        int nd = f.need[t * 2 + dec], np = f.need[t * 2 + pre];
        if (h >= 11 && h < 17) { /* day: 2 TP8 decode + 2 TP4 prefill = 24 GPUs */
            assert_int_equal(nd, 2);
            assert_int_equal(np, 2);
        }
        if (h < 6) { /* night: one hot decode replica, no prefill */
            assert_int_equal(nd, 1);
            assert_int_equal(np, 0);
        }
        assert_true(nd >= 1 && nd <= 2 && np <= 2);
    }
    assert_int_equal(f.peak, 24);
    assert_int_equal(f.trough, 8);
    assert_string_equal(sum.cluster_spec, "4x8:H100");

    table_t j;
    table_load(&j, path_of(dir, "jobs.csv"));
    int mesh = 0, ft = 0, small = 0;
    for (size_t i = 0; i < j.n; i++) {
        char **r = j.rows[i];
        long long gpus = ival(r[4]);
        if (gpus == 24) {
            mesh++;
            assert_int_equal(ival(r[1]), 0);
            assert_int_equal(ival(r[3]), 2);
            assert_int_equal(ival(r[6]), 8);
            assert_int_equal(ival(r[7]), 1);
            assert_true(ival(r[5]) >= 2 * 86400);
        } else if (gpus == 8) {
            ft++;
            assert_int_equal(ival(r[3]), 3);
        } else {
            assert_true(gpus <= 4);
            small++;
        }
    }
    assert_int_equal(mesh, 1);
    assert_true(ft >= 4 && ft <= 7); /* daily-ish */
    assert_true(small >= 2);
    table_free(&j);
    facts_free(&f);
    rm_tree(dir);
    free(dir);
}

static void test_bench(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    tide_error_t err = {0};
    tide_gen_summary_t sum;
    assert_int_equal(gen("bench", 5, 2, 16, 4321, dir, &sum, &err), 0);
    facts_t f;
    check_dir(dir, 5, &f);
    assert_int_equal(f.jobs, 4321);
    assert_int_equal(sum.jobs, 4321);
    assert_int_equal(sum.cluster_gpus, 128);
    assert_string_equal(sum.cluster_spec, "16x8:H100");
    double load = f.work_all / ((128.0 - f.mean_held) * 5 * 86400);
    assert_true(fabs(sum.offered_load - load) < 1e-6);
    assert_true(load > 1.05 && load < 1.15);
    facts_free(&f);

    /* defaults: 128 nodes, 30 days, 100000 jobs */
    assert_int_equal(gen("bench", 0, 1, 0, 0, dir, &sum, &err), 0);
    check_dir(dir, 30, &f);
    assert_int_equal(f.jobs, 100000);
    assert_int_equal(sum.cluster_gpus, 1024);
    assert_true(f.nsvc >= 2 && f.nsvc <= 3);
    assert_true(f.peak >= 0.30 * 1024 && f.peak <= 0.40 * 1024);
    assert_true(f.trough >= 0.10 * 1024 && f.trough <= 0.20 * 1024);
    load = f.work_all / ((1024.0 - f.mean_held) * 30 * 86400);
    assert_true(load > 1.05 && load < 1.15);
    double n = (double)f.jobs;
    assert_true(f.p[1] / n > 0.03 && f.p[1] / n < 0.07);
    table_t j;
    table_load(&j, path_of(dir, "jobs.csv"));
    long one = 0;
    for (size_t i = 0; i < j.n; i++)
        one += ival(j.rows[i][4]) == 1;
    assert_true(one / n > 0.90 && one / n < 0.96); /* Philly: 93.2% */
    table_free(&j);
    facts_free(&f);
    rm_tree(dir);
    free(dir);
}

static void test_bad_options(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    tide_error_t err = {0};
    assert_int_equal(gen("nope", 1, 1, 0, 0, dir, NULL, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_non_null(strstr(err.msg, "nope"));
    assert_int_equal(gen(NULL, 1, 1, 0, 0, dir, NULL, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_int_equal(gen("seed200", 1, 1, 0, 0, NULL, NULL, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_int_equal(gen("seed200", 1, 1, 30, 0, dir, NULL, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_non_null(strstr(err.msg, "--nodes"));
    assert_int_equal(gen("seed32", 1, 1, 0, 10, dir, NULL, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_non_null(strstr(err.msg, "--jobs"));
    assert_int_equal(gen("bench", 400, 1, 0, 0, dir, NULL, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_int_equal(gen("bench", -1, 1, 0, 0, dir, NULL, &err), -1);
    assert_int_equal(gen("bench", 1, 1, 2, 0, dir, NULL, &err), -1);
    assert_int_equal(gen("bench", 1, 1, 0, -5, dir, NULL, &err), -1);
    assert_int_equal(tide_gen_write(NULL, &err), -1);
    /* nothing was written by the failures */
    assert_int_equal(access(path_of(dir, "jobs.csv"), F_OK), -1);

    /* output under a regular file: EIO */
    FILE *fp = fopen(path_of(dir, "file"), "w");
    assert_non_null(fp);
    fclose(fp);
    assert_int_equal(gen("seed32", 1, 1, 0, 0, path_of(dir, "file/sub"), NULL, &err), -1);
    assert_int_equal(err.code, TIDE_EIO);
    assert_int_equal(gen("seed32", 1, 1, 0, 0, path_of(dir, "file"), NULL, &err), -1);
    assert_int_equal(err.code, TIDE_EIO);
    /* nested directories are created */
    assert_int_equal(gen("seed32", 1, 1, 0, 0, path_of(dir, "x/y/z/"), NULL, &err), 0);
    assert_int_equal(access(path_of(dir, "x/y/z/demand.csv"), F_OK), 0);
    rm_tree(dir);
    free(dir);
}

static void test_cluster_spec(void **state)
{
    (void)state;
    assert_string_equal(tide_gen_cluster_spec("seed200"), "25x8:H100");
    assert_string_equal(tide_gen_cluster_spec("seed32"), "4x8:H100");
    assert_string_equal(tide_gen_cluster_spec("bench"), "128x8:H100");
    assert_null(tide_gen_cluster_spec("nope"));
    assert_null(tide_gen_cluster_spec(NULL));
    const char *const *names = tide_gen_scenarios();
    int n = 0;
    for (; names[n]; n++)
        assert_non_null(tide_gen_cluster_spec(names[n]));
    assert_int_equal(n, 3);
}

static int run_cli(int argc, ...)
{
    char *argv[32];
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    argv[argc] = NULL;
    fflush(stdout);
    return tide_cmd_gen(argc, argv);
}

static void test_cli(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    char out[1024], out2[1024];
    snprintf(out, sizeof out, "%s/o", dir);
    snprintf(out2, sizeof out2, "%s/o2", dir);
    assert_int_equal(run_cli(2, "gen", "--help"), 0);
    assert_int_equal(run_cli(2, "gen", "-h"), 0);
    assert_int_equal(run_cli(1, "gen"), 2);                               /* no scenario */
    assert_int_equal(run_cli(3, "gen", "--scenario", "seed32"), 2);       /* no --out */
    assert_int_equal(run_cli(5, "gen", "--scenario", "nope", "--out", out), 2);
    assert_int_equal(run_cli(7, "gen", "-s", "seed200", "-o", out, "--nodes", "30"), 2);
    assert_int_equal(run_cli(7, "gen", "-s", "seed32", "-o", out, "--jobs", "30"), 2);
    assert_int_equal(run_cli(7, "gen", "-s", "seed32", "-o", out, "--days", "1.5"), 2);
    assert_int_equal(run_cli(7, "gen", "-s", "seed32", "-o", out, "--days", "0"), 2);
    assert_int_equal(run_cli(7, "gen", "-s", "seed32", "-o", out, "--days", "36h"), 2);
    assert_int_equal(run_cli(7, "gen", "-s", "seed32", "-o", out, "--seed", "-1"), 2);
    assert_int_equal(run_cli(7, "gen", "-s", "seed32", "-o", out, "--seed", "12x"), 2);
    assert_int_equal(run_cli(7, "gen", "-s", "bench", "-o", out, "--nodes", "abc"), 2);
    assert_int_equal(run_cli(7, "gen", "-s", "bench", "-o", out, "--jobs", "0"), 2);
    assert_int_equal(run_cli(6, "gen", "-s", "seed32", "-o", out, "--bogus"), 2);
    assert_int_equal(run_cli(6, "gen", "-s", "seed32", "-o", out, "-x"), 2);
    assert_int_equal(run_cli(6, "gen", "-s", "seed32", "-o", out, "--days"), 2);
    assert_int_equal(run_cli(6, "gen", "-s", "seed32", "-o", out, "extra"), 2);
    assert_int_equal(access(path_of(out, "jobs.csv"), F_OK), -1);

    /* "2" and "2d" are the same horizon; hex seeds work */
    assert_int_equal(run_cli(9, "gen", "-s", "seed32", "-o", out, "--days", "2", "--seed", "0x10"),
                     0);
    assert_int_equal(run_cli(9, "gen", "--scenario=seed32", "--out", out2, "--days=2d", "--seed",
                             "16", "-d", "2"),
                     0);
    assert_true(same_file(path_of(out, "jobs.csv"), path_of(out2, "jobs.csv")));
    assert_true(same_file(path_of(out, "demand.csv"), path_of(out2, "demand.csv")));
    facts_t f;
    check_dir(out, 2, &f);
    facts_free(&f);
    assert_int_equal(run_cli(11, "gen", "-s", "bench", "-o", out, "--days", "1w", "--nodes", "8",
                             "--jobs", "777", "--seed", "3"),
                     0);
    check_dir(out, 7, &f);
    assert_int_equal(f.jobs, 777);
    facts_free(&f);
    rm_tree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_seed200),
        cmocka_unit_test(test_seed200_multi_gpu_and_elastic),
        cmocka_unit_test(test_seed32),
        cmocka_unit_test(test_bench),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_cluster_spec),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
