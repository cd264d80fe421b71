/* Unit tests: Philly importer (philly.csv -> jobs.csv) and the shared
 * date-time parser. Fixtures are written into a mkdtemp directory. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "formats/workload_io.h"
#include "trace/trace.h"

#define HDR "timestamp,duration,num_gpus,gpu_time,cluster\n"

/* Rows out of order; line numbers matter (job ids, P1 hash: line 2 is P1). */
static const char *const FIXTURE = HDR
    "2017-10-02 00:10:00,7200.0,8,57600.0,vc1\n"      /* 2: P1 (hash), 8 GPUs */
    "2017-10-01 23:00:00,100.0,1,100.0,vc2\n"         /* 3: P3 (< 10 GPU-min) */
    "2017-10-02 01:00:00,300.0,1,300.0,vc2\n"         /* 4: P3 (1 GPU < 1 h) */
    "2017-10-02 02:00:00,90000.0,16,1440000.0,vc1\n"  /* 5: P2, elastic 2 -> 1 */
    "2017-10-02 03:00:00,3600.4,12,43204.8,vc3\n"     /* 6: P2, gang 4 x 3 */
    "2017-10-03 00:00:00,50.0,24,1200.0,vc3\n";       /* 7: P2, gang 8 x 3, dp_min 2 */

#define JHDR "job_id,submit_s,team,priority,gpus,duration_s,gang_gpus,dp_min,ckpt_interval_s," \
             "ckpt_s,restore_s\n"

typedef struct fx {
    char dir[64];
    char src[128];
    char out[128];
} fx_t;

static void write_str(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(s, f);
    fclose(f);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
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

static int setup(void **state)
{
    fx_t *x = calloc(1, sizeof *x);
    strcpy(x->dir, "/tmp/tide-trace-philly-XXXXXX");
    if (!mkdtemp(x->dir))
        return -1;
    snprintf(x->src, sizeof x->src, "%s/philly.csv", x->dir);
    snprintf(x->out, sizeof x->out, "%s/out", x->dir);
    write_str(x->src, FIXTURE);
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

/* Import with opts and compare out/jobs.csv to want. */
static void import_expect(fx_t *x, const tide_trace_opts_t *o, const char *want)
{
    tide_error_t err = {0, ""};
    tide_trace_summary_t sum;
    const char *srcs[] = {x->src};
    if (tide_trace_import("philly", srcs, 1, o, x->out, &sum, &err) != 0)
        fail_msg("import failed: %s", err.msg);
    char path[256];
    snprintf(path, sizeof path, "%s/jobs.csv", x->out);
    char *got = slurp(path);
    assert_non_null(got);
    assert_string_equal(got, want);
    /* what we write, tide reads */
    tide_jobs_t *j = tide_jobs_read_file(path, NULL, &err);
    if (!j)
        fail_msg("tide cannot read the output: %s", err.msg);
    tide_jobs_free(j);
    free(got);
}

static void test_datetime(void **state)
{
    (void)state;
    double t;
    assert_int_equal(tide_trace_parse_datetime("1970-01-01 00:00:00", &t), 0);
    assert_true(t == 0);
    assert_int_equal(tide_trace_parse_datetime("2017-10-02 00:10:00", &t), 0);
    assert_true(t == 1506903000.0);
    assert_int_equal(tide_trace_parse_datetime("2023-11-16 18:17:03.9799600", &t), 0);
    assert_true(t > 1700158623.97 && t < 1700158623.99);
    assert_int_equal(tide_trace_parse_datetime("2024-02-29T12:00:00", &t), 0);
    const char *bad[] = {"2023-02-29 00:00:00", "2017-13-01 00:00:00", "2017-10-02 24:00:00",
                         "2017-10-02 00:60:00", "2017-10-02", "2017-10-02 00:10:00.",
                         "2017-10-02 00:10:00 ", "17-10-02 00:10:00", "", "2017-10-02x00:10:00",
                         "2017-04-31 00:00:00"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (tide_trace_parse_datetime(bad[i], &t) == 0)
            fail_msg("'%s' accepted", bad[i]);
    char b[32];
    assert_string_equal(tide_trace_fmt_datetime(1506903000.0, b, sizeof b), "2017-10-02 00:10:00");
}

static void test_priority_rule(void **state)
{
    (void)state;
    assert_int_equal(tide_trace_philly_priority(1, 599, 0, 9), TIDE_P3);   /* < 10 GPU-min */
    assert_int_equal(tide_trace_philly_priority(2, 299, 0, 9), TIDE_P3);   /* 598 GPU-s */
    assert_int_equal(tide_trace_philly_priority(1, 3599, 0, 9), TIDE_P3);  /* 1 GPU < 1 h */
    assert_int_equal(tide_trace_philly_priority(1, 3600, 0, 2), TIDE_P2);  /* 1 GPU: never P1 */
    assert_int_equal(tide_trace_philly_priority(2, 400, 0, 9), TIDE_P2);
    assert_int_equal(tide_trace_philly_priority(8, 7200, 0, 2), TIDE_P1);  /* hash(0,2) % 10 == 0 */
    assert_int_equal(tide_trace_philly_priority(8, 7200, 0, 3), TIDE_P2);
    /* about one in ten of the large jobs */
    int p1 = 0;
    for (int line = 2; line < 10002; line++)
        p1 += tide_trace_philly_priority(8, 7200, 0, line) == TIDE_P1;
    assert_in_range(p1, 900, 1100);
}

static void test_all_days(void **state)
{
    fx_t *x = *state;
    tide_trace_opts_t o;
    tide_trace_opts_default(&o);
    import_expect(x, &o,
                  JHDR "philly-3,0,vc2,3,1,100,1,1,1800,60,120\n"
                       "philly-2,4200,vc1,1,8,7200,8,1,1800,60,120\n"
                       "philly-4,7200,vc2,3,1,300,1,1,1800,60,120\n"
                       "philly-5,10800,vc1,2,16,90000,8,1,1800,60,120\n"
                       "philly-6,14400,vc3,2,12,3600,4,3,1800,60,120\n"
                       "philly-7,90000,vc3,2,24,50,8,2,1800,60,120\n");
}

static void test_window(void **state)
{
    fx_t *x = *state;
    tide_trace_opts_t o;
    tide_trace_opts_default(&o);
    o.philly.day_a = 1; /* from 2017-10-01 (the first job's day): 2017-10-02 */
    o.philly.day_b = 2;
    const char *want_first = JHDR "philly-2,0,vc1,1,8,7200,8,1,1800,60,120\n"
                                  "philly-4,3000,vc2,3,1,300,1,1,1800,60,120\n"
                                  "philly-5,6600,vc1,2,16,90000,8,1,1800,60,120\n"
                                  "philly-6,10200,vc3,2,12,3600,4,3,1800,60,120\n";
    import_expect(x, &o, want_first);
    /* the same window from an explicit start day */
    double t;
    assert_int_equal(tide_trace_parse_datetime("2017-10-02 00:00:00", &t), 0);
    o.philly.has_start = 1;
    o.philly.start_s = (int64_t)t;
    o.philly.day_a = 0;
    o.philly.day_b = 1;
    import_expect(x, &o, want_first);
    /* origin at the window start keeps the time of day */
    o.philly.origin_window = 1;
    import_expect(x, &o,
                  JHDR "philly-2,600,vc1,1,8,7200,8,1,1800,60,120\n"
                       "philly-4,3600,vc2,3,1,300,1,1,1800,60,120\n"
                       "philly-5,7200,vc1,2,16,90000,8,1,1800,60,120\n"
                       "philly-6,10800,vc3,2,12,3600,4,3,1800,60,120\n");
    /* an empty window is an error naming the trace's span */
    o.philly.day_a = 30;
    o.philly.day_b = 31;
    tide_error_t err = {0, ""};
    const char *srcs[] = {x->src};
    assert_int_equal(tide_trace_import("philly", srcs, 1, &o, x->out, NULL, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_non_null(strstr(err.msg, "no job submitted in the window 2017-11-01 00:00:00"));
    assert_non_null(strstr(err.msg, "from 2017-10-01 23:00:00"));
}

static void test_scale_arrivals(void **state)
{
    (void)state;
    /* 1000 single-GPU jobs, one a minute */
    size_t cap = 64 + 1000 * 64;
    char *buf = malloc(cap);
    size_t n = (size_t)snprintf(buf, cap, HDR);
    for (int i = 0; i < 1000; i++)
        n += (size_t)snprintf(buf + n, cap - n, "2017-10-02 %02d:%02d:00,7200,1,7200,vc%d\n",
                              i / 60 % 24, i % 60, i % 3);
    tide_trace_philly_t p;
    tide_trace_philly_init(&p);
    tide_error_t err = {0, ""};
    assert_int_equal(tide_trace_philly_read_mem(&p, buf, n, "p.csv", 0, &err), 0);
    assert_int_equal(p.n, 1000);
    tide_trace_philly_opts_t o;
    tide_trace_philly_opts_default(&o);
    tide_trace_jobs_t j, j2;
    /* x0.3: a deterministic ~30% */
    o.scale_arrivals = 0.3;
    o.seed = 7;
    assert_int_equal(tide_trace_philly_convert(&p, &o, &j, &err), 0);
    assert_int_equal(tide_trace_philly_convert(&p, &o, &j2, &err), 0);
    assert_in_range(j.n, 250, 350);
    assert_int_equal(j.n, j2.n);
    for (size_t i = 0; i < j.n; i++)
        assert_string_equal(j.v[i].id, j2.v[i].id);
    tide_trace_jobs_free(&j);
    tide_trace_jobs_free(&j2);
    /* x2.5: every job twice and half of them a third time, copies jittered < 600 s */
    o.scale_arrivals = 2.5;
    assert_int_equal(tide_trace_philly_convert(&p, &o, &j, &err), 0);
    assert_in_range(j.n, 2400, 2600);
    int originals = 0;
    for (size_t i = 0; i < j.n; i++) {
        originals += strstr(j.v[i].id, "-c") == NULL;
        if (i)
            assert_true(j.v[i].submit_s >= j.v[i - 1].submit_s);
    }
    assert_int_equal(originals, 1000);
    /* a copy lands within 600 s of its original */
    for (size_t i = 0; i < j.n; i++) {
        const char *c = strstr(j.v[i].id, "-c");
        if (!c)
            continue;
        int line = atoi(j.v[i].id + strlen("philly-"));
        int64_t orig = (int64_t)(line - 2) * 60;
        assert_in_range(j.v[i].submit_s, orig, orig + 599);
    }
    tide_trace_jobs_free(&j);
    /* another seed picks other jobs */
    o.scale_arrivals = 0.5;
    o.seed = 1;
    assert_int_equal(tide_trace_philly_convert(&p, &o, &j, &err), 0);
    o.seed = 2;
    assert_int_equal(tide_trace_philly_convert(&p, &o, &j2, &err), 0);
    int same = j.n == j2.n;
    for (size_t i = 0; same && i < j.n; i++)
        same = !strcmp(j.v[i].id, j2.v[i].id);
    assert_false(same);
    tide_trace_jobs_free(&j);
    tide_trace_jobs_free(&j2);
    /* bad factors */
    o.scale_arrivals = 0;
    assert_int_equal(tide_trace_philly_convert(&p, &o, &j, &err), -1);
    o.scale_arrivals = 101;
    assert_int_equal(tide_trace_philly_convert(&p, &o, &j, &err), -1);
    tide_trace_philly_free(&p);
    free(buf);
}

/* One bad row: strict fails with file:line: column; skip_bad counts it. */
static void bad_row(const char *row, const char *col, const char *needle)
{
    char in[512];
    snprintf(in, sizeof in, HDR "2017-10-02 00:10:00,7200.0,8,57600.0,vc1\n%s\n"
                                "2017-10-02 00:20:00,60,1,60,vc1\n",
             row);
    tide_trace_philly_t p;
    tide_trace_philly_init(&p);
    tide_error_t err = {0, ""};
    if (tide_trace_philly_read_mem(&p, in, strlen(in), "ph.csv", 0, &err) == 0)
        fail_msg("accepted bad row '%s'", row);
    char want[128];
    snprintf(want, sizeof want, "ph.csv:3: column '%s'", col);
    if (!strstr(err.msg, want) || !strstr(err.msg, needle))
        fail_msg("message '%s' lacks '%s' / '%s'", err.msg, want, needle);
    assert_int_equal(err.code, TIDE_EINVAL);
    tide_trace_philly_free(&p);
    tide_trace_philly_init(&p);
    assert_int_equal(tide_trace_philly_read_mem(&p, in, strlen(in), "ph.csv", 1, &err), 0);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.rows_read, 3);
    assert_int_equal(p.rows_skipped, 1);
    assert_non_null(strstr(p.first_skip.msg, want));
    tide_trace_philly_free(&p);
}

static void test_bad_rows(void **state)
{
    (void)state;
    bad_row("2017-10-02 25:00:00,60,1,60,vc1", "timestamp", "not a date-time");
    bad_row("yesterday,60,1,60,vc1", "timestamp", "'yesterday'");
    bad_row("2017-10-02 00:30:00,0,1,0,vc1", "duration", "'0'");
    bad_row("2017-10-02 00:30:00,-5,1,0,vc1", "duration", "> 0");
    bad_row("2017-10-02 00:30:00,nan,1,0,vc1", "duration", "'nan'");
    bad_row("2017-10-02 00:30:00,60,0,0,vc1", "num_gpus", "'0'");
    bad_row("2017-10-02 00:30:00,60,1.5,0,vc1", "num_gpus", "whole");
    bad_row("2017-10-02 00:30:00,60,two,0,vc1", "num_gpus", "'two'");
    bad_row("2017-10-02 00:30:00,60,2000000,0,vc1", "num_gpus", "1..");
    bad_row("2017-10-02 00:30:00,60,1,60,", "cluster", "empty");
    bad_row("2017-10-02 00:30:00,60,1,60,\"a\tb\"", "cluster", "control character");
    /* a wrong field count is a row error too (recoverable) */
    tide_trace_philly_t p;
    tide_trace_philly_init(&p);
    tide_error_t err = {0, ""};
    const char *in = HDR "2017-10-02 00:10:00,60,1,60\n2017-10-02 00:20:00,60,1,60,vc\n";
    assert_int_equal(tide_trace_philly_read_mem(&p, in, strlen(in), "ph.csv", 0, &err), -1);
    assert_non_null(strstr(err.msg, "ph.csv:2:"));
    assert_int_equal(tide_trace_philly_read_mem(&p, in, strlen(in), "ph.csv", 1, &err), 0);
    assert_int_equal(p.n, 1);
    tide_trace_philly_free(&p);
    /* structure and header errors fail even with skip_bad */
    tide_trace_philly_init(&p);
    in = "timestamp,duration,num_gpus,cluster_x\n2017-10-02 00:10:00,60,1,vc\n";
    assert_int_equal(tide_trace_philly_read_mem(&p, in, strlen(in), "ph.csv", 1, &err), -1);
    assert_non_null(strstr(err.msg, "ph.csv:1: missing required column 'cluster'"));
    in = HDR "2017-10-02 00:10:00,60,1,60,\"vc\n";
    assert_int_equal(tide_trace_philly_read_mem(&p, in, strlen(in), "ph.csv", 1, &err), -1);
    assert_non_null(strstr(err.msg, "unterminated quoted field (opened on line 2)"));
    assert_int_equal(tide_trace_philly_read_mem(&p, "", 0, "ph.csv", 1, &err), -1);
    tide_trace_philly_free(&p);
    /* no rows: convert says so */
    tide_trace_philly_init(&p);
    assert_int_equal(tide_trace_philly_read_mem(&p, HDR, strlen(HDR), "ph.csv", 0, &err), 0);
    tide_trace_philly_opts_t o;
    tide_trace_philly_opts_default(&o);
    tide_trace_jobs_t j;
    assert_int_equal(tide_trace_philly_convert(&p, &o, &j, &err), -1);
    tide_trace_philly_free(&p);
}

static void test_import_errors(void **state)
{
    fx_t *x = *state;
    tide_error_t err = {0, ""};
    char path[256];
    snprintf(path, sizeof path, "%s/nonexistent.csv", x->dir);
    const char *srcs[] = {path};
    assert_int_equal(tide_trace_import("philly", srcs, 1, NULL, x->out, NULL, &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
    assert_non_null(strstr(err.msg, "nonexistent.csv"));
    assert_int_equal(tide_trace_import("phily", srcs, 1, NULL, x->out, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "unknown format 'phily'"));
    /* output under a regular file */
    const char *ok[] = {x->src};
    snprintf(path, sizeof path, "%s/philly.csv/out", x->dir);
    assert_int_equal(tide_trace_import("philly", ok, 1, NULL, path, NULL, &err), -1);
    assert_int_equal(err.code, TIDE_EIO);
}

/* Two sources: ids carry the source index. */
static void test_two_sources(void **state)
{
    fx_t *x = *state;
    char second[256];
    snprintf(second, sizeof second, "%s/philly2.csv", x->dir);
    write_str(second, HDR "2017-10-01 23:30:00,60,1,60,vc9\n");
    tide_error_t err = {0, ""};
    tide_trace_summary_t sum;
    const char *srcs[] = {x->src, second};
    assert_int_equal(tide_trace_import("philly", srcs, 2, NULL, x->out, &sum, &err), 0);
    assert_int_equal(sum.jobs, 7);
    assert_int_equal(sum.rows_read, 7);
    assert_int_equal(sum.by_prio[3], 3);
    assert_non_null(strstr(sum.line, "7 jobs written"));
    char path[256];
    snprintf(path, sizeof path, "%s/jobs.csv", x->out);
    char *got = slurp(path);
    assert_non_null(strstr(got, "\nphilly0-3,0,vc2,3,"));
    assert_non_null(strstr(got, "\nphilly1-2,1800,vc9,3,"));
    free(got);
}

/* The CLI: usage errors exit 2, --help exits 0 (when TIDE_BIN is set). */
static void test_cli(void **state)
{
    fx_t *x = *state;
    const char *bin = getenv("TIDE_BIN");
    if (!bin || access(bin, X_OK) != 0)
        skip();
    struct {
        const char *args;
        int status;
    } cases[] = {
        {"trace import --help", 0},
        {"trace --help", 0},
        {"trace", 2},
        {"trace nonesuch", 2},
        {"trace import --format philly", 2},                      /* no --out, no SRC */
        {"trace import --format philly --out %s/o", 2},           /* no SRC */
        {"trace import --format nope %s/philly.csv --out %s/o", 2},
        {"trace import --format philly %s/philly.csv --out %s/o --peak-gpus 10", 2},
        {"trace import --format philly %s/philly.csv --out %s/o --days 5:2", 2},
        {"trace import --format philly %s/philly.csv --out %s/o --scale-arrivals 0", 2},
        {"trace import --format philly %s/philly.csv --out %s/o --bogus", 2},
        {"trace import --format philly %s/missing.csv --out %s/o", 3},
        {"trace import --format philly %s/philly.csv --out %s/o --days 1:2", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[512], cmd[1024];
        snprintf(args, sizeof args, cases[i].args, x->dir, x->dir);
        snprintf(cmd, sizeof cmd, "'%s' %s >/dev/null 2>&1", bin, args);
        int st = system(cmd);
        assert_true(WIFEXITED(st));
        if (WEXITSTATUS(st) != cases[i].status)
            fail_msg("'%s' exited %d, expected %d", args, WEXITSTATUS(st), cases[i].status);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_datetime),
        cmocka_unit_test(test_priority_rule),
        cmocka_unit_test_setup_teardown(test_all_days, setup, teardown),
        cmocka_unit_test_setup_teardown(test_window, setup, teardown),
        cmocka_unit_test(test_scale_arrivals),
        cmocka_unit_test(test_bad_rows),
        cmocka_unit_test_setup_teardown(test_import_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_sources, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cli, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
