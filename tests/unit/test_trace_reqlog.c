/* Unit tests: request-log importers (Azure LLM 2023 CSV, Mooncake JSONL) ->
 * services.csv + demand.csv: binning, tokens -> replica_rps, bad rows,
 * scaling to a peak. Fixtures live in a mkdtemp dir. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/workload_io.h"
#include "trace/trace.h"

#define AHDR "TIMESTAMP,ContextTokens,GeneratedTokens\n"

/* Five requests; with 60 s windows from the first (18:00:00.5): 2, 1, 1, and
 * the last one (at exactly 3 windows) falls in the dropped partial tail. */
static const char *const AZURE = AHDR "2023-11-16 18:00:00.5000000,100,10\n"
                                      "2023-11-16 18:00:30.0000000,200,20\n"
                                      "2023-11-16 18:01:10.0000000,300,30\n"
                                      "2023-11-16 18:02:05.0000000,400,40\n"
                                      "2023-11-16 18:03:00.5000000,500,50\n";

static const char *const MOONCAKE =
    "{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 100, \"hash_ids\": [1, 2]}\n"
    "{\"timestamp\": 30000, \"input_length\": 2000, \"output_length\": 200}\r\n"
    "\n"
    "{\"output_length\": 300, \"input_length\": 3000, \"timestamp\": 60000}\n"
    "{\"timestamp\": 119999.5, \"input_length\": 4000, \"output_length\": 400}\n"
    "{\"timestamp\": 120000, \"input_length\": 9000, \"output_length\": 900}";

typedef struct fx {
    char dir[64];
    char azure[128], moon[128], out[128];
} fx_t;

static void write_str(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(s, f);
    fclose(f);
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

static int setup(void **state)
{
    fx_t *x = calloc(1, sizeof *x);
    strcpy(x->dir, "/tmp/tide-trace-req-XXXXXX");
    if (!mkdtemp(x->dir))
        return -1;
    snprintf(x->azure, sizeof x->azure, "%s/AzureLLMInferenceTrace_code.csv", x->dir);
    snprintf(x->moon, sizeof x->moon, "%s/conversation_trace.jsonl", x->dir);
    snprintf(x->out, sizeof x->out, "%s/out", x->dir);
    write_str(x->azure, AZURE);
    write_str(x->moon, MOONCAKE);
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

static void import_ok(fx_t *x, const char *fmt, const char *src, const tide_trace_opts_t *o,
                      tide_trace_summary_t *sum)
{
    tide_error_t err = {0, ""};
    const char *srcs[] = {src};
    if (tide_trace_import(fmt, srcs, 1, o, x->out, sum, &err) != 0)
        fail_msg("import failed: %s", err.msg);
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

static void test_azure(void **state)
{
    fx_t *x = *state;
    tide_trace_opts_t o;
    tide_trace_opts_default(&o);
    o.window_s = 60;
    tide_trace_summary_t sum;
    import_ok(x, "azure-llm", x->azure, &o, &sum);
    /* mean cost (110+220+330+440)/4 = 275 tokens: 20000/275 = 72.7273 rps */
    expect_file(x, "services.csv",
                "service,gpus_per_replica,replica_rps,min_replicas,warmup_s\n"
                "AzureLLMInferenceTrace_code,8,72.7273,1,300\n");
    expect_file(x, "demand.csv",
                "time_s,service,rps\n0,AzureLLMInferenceTrace_code,0.0333\n"
                "60,AzureLLMInferenceTrace_code,0.0167\n120,AzureLLMInferenceTrace_code,0.0167\n");
    assert_int_equal(sum.requests, 4);
    assert_int_equal(sum.rows_read, 5);
    assert_non_null(strstr(sum.line, "4 requests binned"));
    assert_non_null(strstr(sum.line, "(from tokens)"));
    /* prefill weight 0: only output tokens count (mean 25) */
    o.prefill_weight = 0;
    o.fit.replica_tokens_per_s = 1000;
    const char *name[] = {"code"};
    o.services = name;
    o.n_services = 1;
    import_ok(x, "azure-llm", x->azure, &o, &sum);
    expect_file(x, "services.csv",
                "service,gpus_per_replica,replica_rps,min_replicas,warmup_s\ncode,8,40,1,300\n");
    /* a window longer than the log: one window, every request */
    tide_trace_opts_default(&o);
    o.window_s = 3600;
    import_ok(x, "azure-llm", x->azure, &o, &sum);
    expect_file(x, "demand.csv",
                "time_s,service,rps\n0,AzureLLMInferenceTrace_code,0.0014\n");
    assert_int_equal(sum.requests, 5);
    /* --replica-rps wins over tokens */
    o.fit.replica_rps = 2;
    import_ok(x, "azure-llm", x->azure, &o, &sum);
    char *s = slurp(x->out, "services.csv");
    assert_non_null(strstr(s, ",8,2,1,300\n"));
    free(s);
}

static void test_mooncake(void **state)
{
    fx_t *x = *state;
    tide_trace_opts_t o;
    tide_trace_opts_default(&o);
    o.window_s = 60;
    o.fit.gpus_per_replica = 4;
    o.fit.min_replicas = 2;
    o.fit.warmup_s = 120;
    tide_trace_summary_t sum;
    import_ok(x, "mooncake", x->moon, &o, &sum);
    /* mean cost (1100+2200+3300+4400)/4 = 2750: 20000/2750 = 7.2727 */
    expect_file(x, "services.csv",
                "service,gpus_per_replica,replica_rps,min_replicas,warmup_s\n"
                "conversation_trace,4,7.2727,2,120\n");
    expect_file(x, "demand.csv",
                "time_s,service,rps\n0,conversation_trace,0.0333\n"
                "60,conversation_trace,0.0333\n");
    assert_int_equal(sum.rows_read, 5);
    assert_int_equal(sum.requests, 4);
    /* floor 2 replicas of 4 GPUs */
    assert_true(sum.fit.peak_need_gpus == 8 && sum.fit.trough_need_gpus == 8);
}

/* Scaling hits the peak and repeating covers the duration. */
static void test_fit(void **state)
{
    fx_t *x = *state;
    tide_trace_opts_t o;
    tide_trace_opts_default(&o);
    o.window_s = 60;
    o.fit.peak_gpus = 64;
    o.fit.min_replicas = 0;
    o.fit.duration_s = 86400;
    o.fit.shift_h = 0.5;
    tide_trace_summary_t sum;
    import_ok(x, "mooncake", x->moon, &o, &sum);
    assert_true(sum.fit.peak_need_gpus == 64);
    assert_int_equal(sum.fit.windows, 1440);
    assert_int_equal(sum.demand_rows, 1440);
    /* 8 replicas x 7.2727 rps at the peak */
    assert_true(fabs(sum.fit.peak_rps - 8 * 7.2727) < 1e-3);
    assert_true(sum.fit.peak_rps <= 8 * 7.2727);
    /* stretch: 60 s windows x 2 */
    o.fit.stretch = 2;
    o.fit.duration_s = 0;
    o.fit.shift_h = 0;
    import_ok(x, "mooncake", x->moon, &o, &sum);
    expect_file(x, "demand.csv",
                "time_s,service,rps\n0,conversation_trace,58.1816\n"
                "120,conversation_trace,58.1816\n");
}

static void moon_bad(const char *line, const char *needle)
{
    char in[512];
    snprintf(in, sizeof in,
             "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1}\n%s\n"
             "{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1}\n",
             line);
    tide_trace_reqs_t r;
    tide_trace_reqs_init(&r);
    tide_error_t err = {0, ""};
    if (tide_trace_mooncake_read_mem(&r, in, strlen(in), "m.jsonl", 0, &err) == 0)
        fail_msg("accepted bad line '%s'", line);
    if (!strstr(err.msg, "m.jsonl:2: ") || !strstr(err.msg, needle))
        fail_msg("message '%s' lacks 'm.jsonl:2: ' / '%s'", err.msg, needle);
    tide_trace_reqs_free(&r);
    tide_trace_reqs_init(&r);
    assert_int_equal(tide_trace_mooncake_read_mem(&r, in, strlen(in), "m.jsonl", 1, &err), 0);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.rows_skipped, 1);
    assert_non_null(strstr(r.first_skip.msg, needle));
    tide_trace_reqs_free(&r);
}

static void azure_bad(const char *row, const char *needle)
{
    char in[512];
    snprintf(in, sizeof in, AHDR "2023-11-16 18:00:00,1,1\n%s\n2023-11-16 18:00:05,1,1\n", row);
    tide_trace_reqs_t r;
    tide_trace_reqs_init(&r);
    tide_error_t err = {0, ""};
    if (tide_trace_azure_read_mem(&r, in, strlen(in), "a.csv", 0, &err) == 0)
        fail_msg("accepted bad row '%s'", row);
    if (!strstr(err.msg, "a.csv:3: ") || !strstr(err.msg, needle))
        fail_msg("message '%s' lacks 'a.csv:3: ' / '%s'", err.msg, needle);
    tide_trace_reqs_free(&r);
    tide_trace_reqs_init(&r);
    assert_int_equal(tide_trace_azure_read_mem(&r, in, strlen(in), "a.csv", 1, &err), 0);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.rows_skipped, 1);
    tide_trace_reqs_free(&r);
}

static void test_bad_rows(void **state)
{
    (void)state;
    moon_bad("{\"timestamp\": -1, \"input_length\": 1, \"output_length\": 1}",
             "field 'timestamp'");
    moon_bad("{\"timestamp\": \"0\", \"input_length\": 1, \"output_length\": 1}",
             "field 'timestamp': not a number");
    moon_bad("{\"timestamp\": 1, \"input_length\": 1.5, \"output_length\": 1}",
             "field 'input_length'");
    moon_bad("{\"timestamp\": 1, \"input_length\": 1}", "field 'output_length': missing");
    moon_bad("{\"timestamp\": 1, \"input_length\": 1000000000000, \"output_length\": 1}",
             "field 'input_length'");
    moon_bad("[1, 2]", "not a JSON object");
    moon_bad("{\"timestamp\": 1,", "invalid JSON");
    moon_bad("{} {}", "invalid JSON");
    azure_bad("2023-11-16 18:00:01,x,1", "column 'ContextTokens': 'x'");
    azure_bad("2023-11-16 18:00:01,1,-1", "column 'GeneratedTokens'");
    azure_bad("2023-11-16 25:00:01,1,1", "column 'TIMESTAMP'");
    azure_bad("2023-11-16 18:00:01,1", "fields");
    /* missing column */
    tide_trace_reqs_t r;
    tide_trace_reqs_init(&r);
    tide_error_t err = {0, ""};
    const char *in = "TIMESTAMP,ContextTokens\n2023-11-16 18:00:01,1\n";
    assert_int_equal(tide_trace_azure_read_mem(&r, in, strlen(in), "a.csv", 1, &err), -1);
    assert_non_null(strstr(err.msg, "a.csv:1: missing required column 'GeneratedTokens'"));
    /* nothing to bin */
    tide_trace_demand_t d;
    tide_trace_demand_init(&d);
    assert_int_equal(tide_trace_reqs_bin(&r, 0, 60, 1, "s", &d, &err), -1);
    assert_non_null(strstr(err.msg, "no request"));
    /* too many windows */
    in = "{\"timestamp\":0,\"input_length\":1,\"output_length\":1}\n"
         "{\"timestamp\":1e13,\"input_length\":1,\"output_length\":1}\n";
    assert_int_equal(tide_trace_mooncake_read_mem(&r, in, strlen(in), "m", 0, &err), 0);
    assert_int_equal(tide_trace_reqs_bin(&r, 0, 60, 1, "s", &d, &err), -1);
    assert_non_null(strstr(err.msg, "windows"));
    tide_trace_reqs_free(&r);
    tide_trace_demand_free(&d);
}

static void test_import_errors(void **state)
{
    fx_t *x = *state;
    tide_error_t err = {0, ""};
    char p[256];
    snprintf(p, sizeof p, "%s/none.jsonl", x->dir);
    const char *srcs[] = {p};
    assert_int_equal(tide_trace_import("mooncake", srcs, 1, NULL, x->out, NULL, &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
    /* an empty log */
    write_str(p, "\n\n");
    assert_int_equal(tide_trace_import("mooncake", srcs, 1, NULL, x->out, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "no request"));
    /* a bad line stops the import with file:line */
    write_str(p, "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1}\nnot json\n");
    assert_int_equal(tide_trace_import("mooncake", srcs, 1, NULL, x->out, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "none.jsonl:2: invalid JSON"));
    /* two logs: common origin, equal lengths, names from the files */
    tide_trace_opts_t o;
    tide_trace_opts_default(&o);
    o.window_s = 60;
    o.skip_bad = 1;
    const char *two[] = {x->moon, p};
    tide_trace_summary_t sum;
    assert_int_equal(tide_trace_import("mooncake", two, 2, &o, x->out, &sum, &err), 0);
    assert_int_equal(sum.services, 2);
    assert_int_equal(sum.rows_skipped, 1);
    char *s = slurp(x->out, "services.csv");
    assert_non_null(strstr(s, "\nconversation_trace,"));
    assert_non_null(strstr(s, "\nnone,"));
    free(s);
    s = slurp(x->out, "demand.csv");
    assert_non_null(strstr(s, "\n60,none,0.0167\n"));
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_azure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mooncake, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fit, setup, teardown),
        cmocka_unit_test(test_bad_rows),
        cmocka_unit_test_setup_teardown(test_import_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
