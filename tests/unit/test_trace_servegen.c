/* Unit tests: ServeGen importer (tier directories -> services.csv +
 * demand.csv), gap filling and the shared fitting (stretch, shift,
 * repeat/trim, align-with, scale to a peak). Fixtures live in a mkdtemp dir. */
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
#include <unistd.h>

#include "formats/workload_io.h"
#include "trace/trace.h"

typedef struct fx {
    char dir[64];
    char tier[128], tier2[128], out[128];
} fx_t;

static void write_str(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(s, f);
    fclose(f);
}

static void write_in(const char *dir, const char *name, const char *s)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    write_str(p, s);
}

static char *slurp(const char *dir, const char *name)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    size_t got = fread(b, 1, (size_t)n, f);
    b[got] = '\0';
    fclose(f);
    return b;
}

/* Tier "tierA": two clients, windows of 600 s. 1200 and 1800 are all-zero
 * (gaps), 2400 is missing from both files (gap), the rest is data. */
static int setup(void **state)
{
    fx_t *x = calloc(1, sizeof *x);
    strcpy(x->dir, "/tmp/tide-trace-sg-XXXXXX");
    if (!mkdtemp(x->dir))
        return -1;
    snprintf(x->tier, sizeof x->tier, "%s/tierA", x->dir);
    snprintf(x->tier2, sizeof x->tier2, "%s/tierB/", x->dir);
    snprintf(x->out, sizeof x->out, "%s/out", x->dir);
    mkdir(x->tier, 0777);
    mkdir(x->tier2, 0777);
    write_in(x->tier, "chunk-0-trace.csv",
             "0,1.0,2.5,Gamma,0.5,1.2\n600,2.0,1,Weibull,0.3,0.4\n1200,0,0,,0,0\n1800,0,0,,0,0\n"
             "3000,4.0,1,Gamma,1,1\n");
    write_in(x->tier, "chunk-1-trace.csv",
             "0,0.5,1,Gamma,1,1\n600,0,0,,0,0\n1200,0,0,,0,0\n1800,0,0,,0,0\n3000,1.0,1,,0,0\n");
    write_in(x->tier, "DERIVED_other.csv", "this,is,ignored\n");
    /* tierB: leading and trailing gaps */
    write_in(x->tier2, "chunk-7-trace.csv",
             "0,0,0,,0,0\n600,3,1,,0,0\n1200,6,1,,0,0\n1800,0,0,,0,0\n");
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    fx_t *x = *state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", x->dir);
    if (system(cmd) != 0)
        return -1;
    free(x);
    return 0;
}

static void import_ok(fx_t *x, const char *const *srcs, size_t n, const tide_trace_opts_t *o,
                      tide_trace_summary_t *sum)
{
    tide_error_t err = {0, ""};
    if (tide_trace_import("servegen", srcs, n, o, x->out, sum, &err) != 0)
        fail_msg("import failed: %s", err.msg);
    /* tide reads what we wrote */
    char sp[256], dp[256];
    snprintf(sp, sizeof sp, "%s/services.csv", x->out);
    snprintf(dp, sizeof dp, "%s/demand.csv", x->out);
    tide_services_t *s = tide_services_read_file(sp, NULL, &err);
    if (!s)
        fail_msg("services.csv: %s", err.msg);
    tide_demand_t *d = tide_demand_read_file(dp, s, NULL, &err);
    if (!d)
        fail_msg("demand.csv: %s", err.msg);
    tide_demand_free(d);
    tide_services_free(s);
}

static void expect_file(fx_t *x, const char *name, const char *want)
{
    char *got = slurp(x->out, name);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void test_gaps_filled(void **state)
{
    fx_t *x = *state;
    tide_trace_summary_t sum;
    const char *srcs[] = {x->tier};
    import_ok(x, srcs, 1, NULL, &sum);
    expect_file(x, "services.csv",
                "service,gpus_per_replica,replica_rps,min_replicas,warmup_s\ntierA,8,10,1,300\n");
    /* 1200, 1800, 2400 interpolated between 600 (2.0) and 3000 (5.0) */
    expect_file(x, "demand.csv",
                "time_s,service,rps\n0,tierA,1.5\n600,tierA,2\n1200,tierA,2.75\n"
                "1800,tierA,3.5\n2400,tierA,4.25\n3000,tierA,5\n");
    assert_int_equal(sum.gaps_filled, 3);
    assert_int_equal(sum.sources, 2);
    assert_int_equal(sum.rows_read, 10);
    assert_int_equal(sum.rows_skipped, 0);
    assert_int_equal(sum.demand_rows, 6);
    assert_non_null(strstr(sum.line, "3 gaps filled"));
    assert_true(sum.fit.peak_rps == 5.0);
    assert_true(sum.fit.trough_rps == 1.5);
    assert_true(sum.fit.peak_need_gpus == 8);
}

static void test_edges_and_two_tiers(void **state)
{
    fx_t *x = *state;
    tide_trace_summary_t sum;
    const char *srcs[] = {x->tier, x->tier2};
    tide_trace_opts_t o;
    tide_trace_opts_default(&o);
    o.fit.min_replicas = 0;
    o.fit.replica_rps = 2.5;
    o.fit.gpus_per_replica = 4;
    o.fit.warmup_s = 90;
    import_ok(x, srcs, 2, &o, &sum);
    expect_file(x, "services.csv",
                "service,gpus_per_replica,replica_rps,min_replicas,warmup_s\n"
                "tierA,4,2.5,0,90\ntierB,4,2.5,0,90\n");
    /* tierB: 4 windows, leading gap = next value, trailing = previous; then
     * repeated cyclically to tierA's 6 windows */
    expect_file(x, "demand.csv",
                "time_s,service,rps\n0,tierA,1.5\n0,tierB,3\n600,tierA,2\n600,tierB,3\n"
                "1200,tierA,2.75\n1200,tierB,6\n1800,tierA,3.5\n1800,tierB,6\n"
                "2400,tierA,4.25\n2400,tierB,3\n3000,tierA,5\n3000,tierB,3\n");
    assert_int_equal(sum.gaps_filled, 5);
    assert_int_equal(sum.services, 2);
    /* need at 1200: ceil(2.75/2.5)=2 + ceil(6/2.5)=3 replicas of 4 GPUs */
    assert_true(sum.fit.peak_need_gpus == 20);
    /* service names */
    const char *names[] = {"large", "small"};
    o.services = names;
    o.n_services = 2;
    import_ok(x, srcs, 2, &o, &sum);
    char *s = slurp(x->out, "services.csv");
    assert_non_null(strstr(s, "\nlarge,4,2.5,0,90\nsmall,4,2.5,0,90\n"));
    free(s);
    /* the same tier twice: a duplicate name */
    const char *twice[] = {x->tier, x->tier};
    tide_error_t err = {0, ""};
    assert_int_equal(tide_trace_import("servegen", twice, 2, NULL, x->out, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "service name 'tierA'"));
}

/* Scaling hits the peak: the busiest window needs exactly peak_gpus. */
static void test_peak_scaling(void **state)
{
    fx_t *x = *state;
    tide_trace_summary_t sum;
    const char *srcs[] = {x->tier};
    tide_trace_opts_t o;
    tide_trace_opts_default(&o);
    o.fit.peak_gpus = 200; /* 25 replicas of 8 at 10 rps: peak 250 rps */
    import_ok(x, srcs, 1, &o, &sum);
    expect_file(x, "demand.csv",
                "time_s,service,rps\n0,tierA,75\n600,tierA,100\n1200,tierA,137.5\n"
                "1800,tierA,175\n2400,tierA,212.5\n3000,tierA,250\n");
    assert_true(sum.fit.peak_need_gpus == 200);
    assert_true(fabs(sum.fit.scale - 50) < 1e-9);
    /* awkward replica throughput: still exactly the peak, never one more */
    int peaks[] = {8, 64, 200, 512, 1000};
    double rrs[] = {3.3333, 0.7, 12.3456, 1.1, 2.9};
    for (size_t i = 0; i < sizeof peaks / sizeof peaks[0]; i++)
        for (size_t k = 0; k < sizeof rrs / sizeof rrs[0]; k++) {
            o.fit.peak_gpus = peaks[i];
            o.fit.replica_rps = rrs[k];
            o.fit.min_replicas = 0;
            import_ok(x, srcs, 1, &o, &sum);
            int want = (peaks[i] + 7) / 8 * 8;
            if (sum.fit.peak_need_gpus != want)
                fail_msg("peak %d rr %g: need %g GPUs, want %d", peaks[i], rrs[k],
                         sum.fit.peak_need_gpus, want);
            /* and tide's own reading agrees: ceil(peak rps / replica_rps) */
            tide_error_t err;
            char sp[256], dp[256];
            snprintf(sp, sizeof sp, "%s/services.csv", x->out);
            snprintf(dp, sizeof dp, "%s/demand.csv", x->out);
            tide_services_t *sv = tide_services_read_file(sp, NULL, &err);
            tide_demand_t *dm = tide_demand_read_file(dp, sv, NULL, &err);
            double peak = 0;
            for (size_t j = 0; j < dm->n; j++)
                peak = fmax(peak, dm->v[j].rps);
            assert_true(ceil(peak / sv->v[0].replica_rps) * 8 == want);
            tide_demand_free(dm);
            tide_services_free(sv);
        }
}

/* The fit steps on a hand-made series: 1,2,3,4 per hour. */
static void fit_series(const tide_trace_fit_t *f, const char *want_demand, double want_step)
{
    tide_trace_demand_t d;
    tide_trace_demand_init(&d);
    double v[] = {1, 2, 3, 4};
    tide_error_t err = {0, ""};
    assert_int_equal(tide_trace_demand_add(&d, "s", v, 4, 3600, 0, &err), 0);
    tide_trace_fit_result_t r;
    if (tide_trace_fit_apply(&d, f, &r, &err) != 0)
        fail_msg("fit: %s", err.msg);
    assert_true(r.step_s == want_step);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    tide_trace_out_t out = {&d, f};
    assert_int_equal(tide_trace_demand_write(m, &out), 0);
    fclose(m);
    assert_string_equal(buf, want_demand);
    free(buf);
    tide_trace_demand_free(&d);
}

static void test_fit_steps(void **state)
{
    (void)state;
    tide_trace_fit_t f;
    tide_trace_fit_default(&f);
    fit_series(&f, "time_s,service,rps\n0,s,1\n3600,s,2\n7200,s,3\n10800,s,4\n", 3600);
    f.shift_h = 1; /* what happened at 00:00 now happens at 01:00 */
    fit_series(&f, "time_s,service,rps\n0,s,4\n3600,s,1\n7200,s,2\n10800,s,3\n", 3600);
    f.shift_h = -1;
    fit_series(&f, "time_s,service,rps\n0,s,2\n3600,s,3\n7200,s,4\n10800,s,1\n", 3600);
    f.shift_h = 5; /* modulo the 4 h span */
    fit_series(&f, "time_s,service,rps\n0,s,4\n3600,s,1\n7200,s,2\n10800,s,3\n", 3600);
    f.shift_h = 0;
    f.stretch = 0.5;
    fit_series(&f, "time_s,service,rps\n0,s,1\n1800,s,2\n3600,s,3\n5400,s,4\n", 1800);
    f.stretch = 2.5;
    fit_series(&f, "time_s,service,rps\n0,s,1\n9000,s,2\n18000,s,3\n27000,s,4\n", 9000);
    f.stretch = 1;
    f.duration_s = 5 * 3600; /* repeat */
    fit_series(&f, "time_s,service,rps\n0,s,1\n3600,s,2\n7200,s,3\n10800,s,4\n14400,s,1\n",
               3600);
    f.duration_s = 9000; /* trim: 2.5 windows -> 3 */
    fit_series(&f, "time_s,service,rps\n0,s,1\n3600,s,2\n7200,s,3\n", 3600);
    f.duration_s = 6 * 3600; /* shift first, then repeat */
    f.shift_h = 1;
    fit_series(&f,
               "time_s,service,rps\n0,s,4\n3600,s,1\n7200,s,2\n10800,s,3\n14400,s,4\n18000,s,1\n",
               3600);
    /* bad fits */
    tide_trace_demand_t d;
    tide_trace_demand_init(&d);
    tide_error_t err;
    tide_trace_fit_default(&f);
    assert_int_equal(tide_trace_fit_apply(&d, &f, NULL, &err), -1); /* no service */
    double z[] = {0, 0};
    assert_int_equal(tide_trace_demand_add(&d, "z", z, 2, 600, 0, &err), 0);
    f.peak_gpus = 8;
    assert_int_equal(tide_trace_fit_apply(&d, &f, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "zero everywhere"));
    f.peak_gpus = 0;
    f.stretch = 0.001; /* 0.6 s windows */
    assert_int_equal(tide_trace_fit_apply(&d, &f, NULL, &err), -1);
    f.stretch = -1;
    assert_int_equal(tide_trace_fit_apply(&d, &f, NULL, &err), -1);
    f.stretch = 1;
    f.duration_s = 600LL * (TIDE_TRACE_MAX_WINDOWS + 1);
    assert_int_equal(tide_trace_fit_apply(&d, &f, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "windows"));
    /* names: control characters, duplicates, other steps */
    assert_int_equal(tide_trace_demand_add(&d, "a\tb", z, 2, 600, 0, &err), -1);
    assert_int_equal(tide_trace_demand_add(&d, "", z, 2, 600, 0, &err), -1);
    assert_int_equal(tide_trace_demand_add(&d, "z", z, 2, 600, 0, &err), -1);
    assert_int_equal(tide_trace_demand_add(&d, "y", z, 2, 300, 0, &err), -1);
    assert_non_null(strstr(err.msg, "windows of 300s"));
    tide_trace_demand_free(&d);
}

static void test_align_with(void **state)
{
    fx_t *x = *state;
    char jobs[256];
    snprintf(jobs, sizeof jobs, "%s/jobs.csv", x->dir);
    write_str(jobs, "job_id,submit_s,team,priority,gpus,duration_s\na,0,t,2,8,100\n"
                    "b,90000,t,2,8,100\n");
    int64_t span;
    tide_error_t err = {0, ""};
    assert_int_equal(tide_trace_jobs_span(jobs, &span, &err), 0);
    assert_int_equal(span, 2 * 86400);
    tide_trace_opts_t o;
    tide_trace_opts_default(&o);
    o.align_with = jobs;
    tide_trace_summary_t sum;
    const char *srcs[] = {x->tier};
    import_ok(x, srcs, 1, &o, &sum);
    assert_int_equal(sum.fit.windows, 2 * 86400 / 600);
    assert_int_equal(sum.fit.span_s, 2 * 86400);
    char *d = slurp(x->out, "demand.csv");
    assert_non_null(strstr(d, "\n3600,tierA,1.5\n4200,tierA,2\n")); /* second cycle */
    assert_non_null(strstr(d, "\n172200,tierA,"));
    assert_null(strstr(d, "\n172800,"));
    free(d);
    o.align_with = "/nonexistent/jobs.csv";
    assert_int_equal(tide_trace_import("servegen", srcs, 1, &o, x->out, NULL, &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
    assert_non_null(strstr(err.msg, "--align-with"));
}

/* A bad row in a client file: file:line: column; skip_bad counts it. */
static void bad_row(const char *row, const char *needle)
{
    char in[256];
    snprintf(in, sizeof in, "0,1,1,,0,0\n%s\n1200,2,1,,0,0\n1800,3,1,,0,0\n", row);
    tide_trace_sg_t sg;
    tide_trace_sg_init(&sg);
    tide_error_t err = {0, ""};
    if (tide_trace_servegen_add_mem(&sg, in, strlen(in), "c.csv", 0, &err) == 0)
        fail_msg("accepted bad row '%s'", row);
    if (!strstr(err.msg, "c.csv:2: ") || !strstr(err.msg, needle))
        fail_msg("message '%s' lacks 'c.csv:2: ' / '%s'", err.msg, needle);
    tide_trace_sg_free(&sg);
    tide_trace_sg_init(&sg);
    assert_int_equal(tide_trace_servegen_add_mem(&sg, in, strlen(in), "c.csv", 1, &err), 0);
    assert_int_equal(sg.n, 3);
    assert_int_equal(sg.rows_skipped, 1);
    tide_trace_demand_t d;
    tide_trace_demand_init(&d);
    assert_int_equal(tide_trace_servegen_finish(&sg, "t", &d, &err), 0);
    assert_int_equal(d.rows_skipped, 1);
    assert_non_null(strstr(d.first_skip.msg, needle));
    assert_int_equal(d.v[0].n, 4); /* 600 is a gap now */
    assert_true(d.v[0].rps[1] == 1.5);
    assert_int_equal(d.gaps_filled, 1);
    tide_trace_demand_free(&d);
    tide_trace_sg_free(&sg);
}

static void test_bad_rows(void **state)
{
    (void)state;
    bad_row("600,abc,1,,0,0", "column 'rate': 'abc'");
    bad_row("600,-1,1,,0,0", "column 'rate'");
    bad_row("600,inf,1,,0,0", "column 'rate'");
    bad_row("600,1e10,1,,0,0", "column 'rate'");
    bad_row("600.5,1,1,,0,0", "column 'window_start_s': '600.5'");
    bad_row("-600,1,1,,0,0", "column 'window_start_s'");
    bad_row(",1,1,,0,0", "column 'window_start_s'");
    bad_row("600", "1 field(s)");
    /* a broken quote stops even with skip_bad */
    tide_trace_sg_t sg;
    tide_trace_sg_init(&sg);
    tide_error_t err = {0, ""};
    const char *in = "0,1\n\"600,1\n";
    assert_int_equal(tide_trace_servegen_add_mem(&sg, in, strlen(in), "c.csv", 1, &err), -1);
    assert_non_null(strstr(err.msg, "c.csv:3: unterminated quoted field (opened on line 2)"));
    tide_trace_sg_free(&sg);
    /* no rows, only gaps, too many windows */
    tide_trace_demand_t d;
    tide_trace_demand_init(&d);
    tide_trace_sg_init(&sg);
    assert_int_equal(tide_trace_servegen_add_mem(&sg, "", 0, "c.csv", 0, &err), 0);
    assert_int_equal(tide_trace_servegen_finish(&sg, "t", &d, &err), -1);
    assert_non_null(strstr(err.msg, "no data row"));
    in = "0,0\n600,0\n";
    assert_int_equal(tide_trace_servegen_add_mem(&sg, in, strlen(in), "c.csv", 0, &err), 0);
    assert_int_equal(tide_trace_servegen_finish(&sg, "t", &d, &err), -1);
    assert_non_null(strstr(err.msg, "every window is a gap"));
    in = "1,1\n100000000,1\n";
    assert_int_equal(tide_trace_servegen_add_mem(&sg, in, strlen(in), "c.csv", 0, &err), 0);
    assert_int_equal(tide_trace_servegen_finish(&sg, "t", &d, &err), -1);
    assert_non_null(strstr(err.msg, "windows"));
    tide_trace_sg_free(&sg);
    tide_trace_demand_free(&d);
}

static void test_paths(void **state)
{
    fx_t *x = *state;
    tide_error_t err = {0, ""};
    const char *srcs[] = {x->dir}; /* no chunk files directly inside */
    assert_int_equal(tide_trace_import("servegen", srcs, 1, NULL, x->out, NULL, &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
    assert_non_null(strstr(err.msg, "no chunk-<client>-trace.csv"));
    char p[256];
    snprintf(p, sizeof p, "%s/missing", x->dir);
    srcs[0] = p;
    assert_int_equal(tide_trace_import("servegen", srcs, 1, NULL, x->out, NULL, &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
    /* a single client file is a tier of its own, named after the file */
    snprintf(p, sizeof p, "%s/chunk-0-trace.csv", x->tier);
    tide_trace_summary_t sum;
    import_ok(x, srcs, 1, NULL, &sum);
    char *s = slurp(x->out, "services.csv");
    assert_non_null(strstr(s, "\nchunk-0-trace,8,10,1,300\n"));
    free(s);
    /* a bad row in a file of the tier names that file and line */
    write_in(x->tier, "chunk-2-trace.csv", "0,1\n600,x\n");
    srcs[0] = x->tier;
    assert_int_equal(tide_trace_import("servegen", srcs, 1, NULL, x->out, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "tierA/chunk-2-trace.csv:2: column 'rate'"));
    tide_trace_opts_t o;
    tide_trace_opts_default(&o);
    o.skip_bad = 1;
    import_ok(x, srcs, 1, &o, &sum);
    assert_int_equal(sum.rows_skipped, 1);
    assert_non_null(strstr(sum.line, "1 skipped"));
    /* basename */
    char *b = tide_trace_basename("a/b/tier//", NULL);
    assert_string_equal(b, "tier");
    free(b);
    b = tide_trace_basename("x.jsonl", ".csv|.jsonl");
    assert_string_equal(b, "x");
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_gaps_filled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_edges_and_two_tiers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peak_scaling, setup, teardown),
        cmocka_unit_test(test_fit_steps),
        cmocka_unit_test_setup_teardown(test_align_with, setup, teardown),
        cmocka_unit_test(test_bad_rows),
        cmocka_unit_test_setup_teardown(test_paths, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
