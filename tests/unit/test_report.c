/* Unit tests: the HTML report (src/sim/report.h) on a real tiny run and on
 * hand-written inputs (extra columns, fault rows, downsampling, escaping,
 * errors). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/report.h"
#include "sim_fixture.h"

static const char *const CHARTS[] = {
    "chart-gpu-state", "chart-gpu-class", "chart-training",   "chart-leases",
    "chart-storage",   "chart-team-hours", "chart-class-hours", "chart-team-loss",
    "chart-pareto",    "chart-sweep",     "summary-table",    "questions",
    "policy-tabs",     "day-controls"};

/* Case-insensitive strstr. */
static const char *find_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (!strncasecmp(hay, needle, n))
            return hay;
    return NULL;
}

/* The embedded data of a page, parsed. */
static json_t *page_data(const char *html)
{
    const char *tag = "<script type=\"application/json\" id=\"tide-data\">";
    const char *s = strstr(html, tag);
    assert_non_null(s);
    s += strlen(tag);
    const char *e = strstr(s, "</script>");
    assert_non_null(e);
    json_error_t je;
    json_t *j = json_loadb(s, (size_t)(e - s), 0, &je);
    if (!j)
        fail_msg("embedded JSON does not parse: %s (line %d)", je.text, je.line);
    return j;
}

/* Self-contained: no network references, no external script or stylesheet. */
static void assert_self_contained(const char *html)
{
    assert_null(strstr(html, "http://"));
    assert_null(strstr(html, "https://"));
    for (const char *p = html; (p = find_ci(p, "<script")) != NULL; p++) {
        const char *end = strchr(p, '>');
        assert_non_null(end);
        for (const char *q = p; q < end; q++)
            if (!strncasecmp(q, "src=", 4))
                fail_msg("external script: %.60s", p);
    }
    assert_null(find_ci(html, "<link"));
    assert_null(find_ci(html, "@import"));
    assert_null(find_ci(html, "url(http"));
}

static void test_report_real_run(void **state)
{
    (void)state;
    char dir[256], path[512];
    sf_tmpdir(dir, sizeof dir);
    sf_work_t w;
    sf_load(&w);
    tide_sim_opts_t o;
    sf_opts(&w, &o, dir);
    tide_error_t err = {0};
    if (tide_sim_run(&o, &err) != 0)
        fail_msg("sim: %s", err.msg);
    assert_int_equal(tide_report_write(dir, NULL, &err), 0);

    snprintf(path, sizeof path, "%s/report.html", dir);
    size_t len;
    char *html = sf_slurp(path, &len);
    assert_non_null(html);
    assert_true(len > 20000);
    assert_non_null(strstr(html, "<!DOCTYPE html>"));
    assert_non_null(strstr(html, "<script type=\"application/json\" id=\"tide-data\">"));
    for (size_t i = 0; i < sizeof CHARTS / sizeof CHARTS[0]; i++) {
        char id[64];
        snprintf(id, sizeof id, "id=\"%s\"", CHARTS[i]);
        if (!strstr(html, id))
            fail_msg("no container %s", id);
    }
    assert_self_contained(html);

    json_t *d = page_data(html);
    json_t *pols = json_object_get(d, "policies");
    assert_int_equal(json_array_size(pols), 5);
    const char *names[] = {"isolated", "static", "preempt", "elastic", "timeshare"};
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(json_string_value(json_array_get(pols, i)), names[i]);
        json_t *tl = json_object_get(json_object_get(d, "timeline"), names[i]);
        assert_non_null(tl);
        assert_int_equal(json_array_size(json_object_get(tl, "t")), 288); /* 1 day / 5 min */
        json_t *cols = json_object_get(tl, "cols");
        assert_int_equal(json_array_size(json_object_get(cols, "serving")), 288);
        assert_int_equal(json_array_size(json_object_get(cols, "demand_rps")), 288);
        assert_non_null(json_object_get(json_object_get(d, "leases"), names[i]));
        assert_true(json_is_array(json_object_get(json_object_get(d, "misses"), names[i])));
    }
    /* elastic lends GPUs: its leases are there and agree with summary.json */
    json_t *le = json_object_get(json_object_get(d, "leases"), "elastic");
    json_t *sum = json_object_get(d, "summary");
    json_t *rc = json_object_get(json_object_get(json_object_get(sum, "policies"), "elastic"),
                                 "reclaim");
    assert_int_equal(json_integer_value(json_object_get(le, "total")),
                     json_integer_value(json_object_get(rc, "leases_granted")));
    assert_true(json_integer_value(json_object_get(le, "total")) > 0);
    assert_true(json_is_null(json_object_get(d, "sweep")));
    json_decref(d);

    /* deterministic: the same inputs give the same bytes */
    snprintf(path, sizeof path, "%s/again.html", dir);
    assert_int_equal(tide_report_write(dir, path, &err), 0);
    char *html2 = sf_slurp(path, NULL);
    assert_string_equal(html, html2);
    free(html2);
    free(html);
    sf_free(&w);
    sf_rm_rf(dir);
}

static const char MINI_SUMMARY[] =
    "{\"horizon_s\": 86400, \"cluster_gpus\": 8, \"seed\": 1,"
    " \"oracle\": {\"max_utilization\": 0.9},"
    " \"policies\": {\"elastic\": {\"utilization\": 0.5, \"useful_utilization\": 0.4,"
    "   \"inference\": {\"slo_attainment\": 0.99},"
    "   \"faults\": {\"bursts\": 1, \"storage\": {\"gbps\": 10.0}}}}}\n";

/* A hand-made run directory: 6000 timeline rows (downsampled), an extra
 * storage_gbps column, fault rows with a burst window, a job id that tries
 * to close the script element. */
static void make_mini(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    sf_write(path, MINI_SUMMARY);
    snprintf(path, sizeof path, "%s/timeline.csv", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "policy,time_s,serving,warming,training,checkpointing,restoring,lost,idle,"
               "inference_gpus,p1_gpus,p2_gpus,p3_gpus,demand_rps,ready_rps,queue_jobs,"
               "queue_gpus,running_jobs,leased_gpus,tier_a_gpus,storage_gbps,note\n");
    for (int i = 0; i < 6000; i++) {
        int t = i * 14; /* 6000 x 14 s = 84000 s */
        /* ready < demand for 10 rows from row 100; a storage spike at row 3001 */
        double demand = 10, ready = (i >= 100 && i < 110) ? 5 : 20;
        fprintf(f, "elastic,%d,4,0,4,0,0,0,0,4,0,4,0,%.2f,%.2f,1,4,1,4,4,%.2f,x%d\n", t, demand,
                ready, i == 3001 ? 9.5 : 1.0, i);
    }
    fclose(f);
    snprintf(path, sizeof path, "%s/events.csv", dir);
    sf_write(path,
             "policy,time_s,kind,job,service,replica,lease,gpus,width,reason,deadline_s,value\n"
             "elastic,0,lease_grant,x</script><script>alert(1),,,0,4,,,21600,\n"
             "elastic,100,lease_renew,x</script><script>alert(1),,,0,,,reclaim,400,\n"
             "elastic,200,ckpt_committed,x</script><script>alert(1),,,,,,,,50.00\n"
             "elastic,500,lease_return,x</script><script>alert(1),,,0,4,,reclaim,,\n"
             "elastic,3600,fault_burst_start,,,,,,,,10800,2.00\n"
             "elastic,10800,fault_burst_end,,,,,,,,,2.00\n"
             "elastic,20000,fault_node_fail,,,,,8,,,,0.00\n");
}

static void test_report_extras(void **state)
{
    (void)state;
    char dir[256], path[512];
    sf_tmpdir(dir, sizeof dir);
    make_mini(dir);
    tide_error_t err = {0};
    snprintf(path, sizeof path, "%s/r.html", dir);
    if (tide_report_write(dir, path, &err) != 0)
        fail_msg("report: %s", err.msg);
    char *html = sf_slurp(path, NULL);
    assert_non_null(html);
    assert_self_contained(html);
    assert_null(strstr(html, "</script><script>alert")); /* data cannot end the element */
    json_t *d = page_data(html);

    json_t *tl = json_object_get(json_object_get(d, "timeline"), "elastic");
    assert_int_equal(json_integer_value(json_object_get(tl, "n_raw")), 6000);
    assert_int_equal(json_integer_value(json_object_get(tl, "factor")), 3);
    size_t nt = json_array_size(json_object_get(tl, "t"));
    assert_int_equal(nt, 2000);
    assert_true(nt <= TIDE_REPORT_MAX_POINTS);
    json_t *cols = json_object_get(tl, "cols");
    json_t *sg = json_object_get(cols, "storage_gbps");
    assert_int_equal(json_array_size(sg), 2000);
    /* extra columns keep the bucket maximum: rows 3000..3002 -> point 1000 */
    assert_true(fabs(json_number_value(json_array_get(sg, 1000)) - 9.5) < 1e-9);
    assert_null(json_object_get(cols, "note")); /* not numeric: left out */
    json_t *extra = json_object_get(d, "extra_columns");
    assert_int_equal(json_array_size(extra), 1);
    assert_string_equal(json_string_value(json_array_get(extra, 0)), "storage_gbps");

    json_t *st = json_object_get(json_object_get(d, "storage"), "elastic");
    assert_true(fabs(json_number_value(json_object_get(st, "max")) - 9.5) < 1e-9);
    assert_true(fabs(json_number_value(json_object_get(st, "limit_gbps")) - 10) < 1e-9);
    assert_int_equal(json_integer_value(json_object_get(st, "near_limit_intervals")), 1);

    /* misses at full resolution: rows 100..109 -> [1400, 1540) */
    json_t *m = json_object_get(json_object_get(d, "misses"), "elastic");
    assert_int_equal(json_array_size(m), 1);
    assert_int_equal(json_integer_value(json_array_get(json_array_get(m, 0), 0)), 1400);
    assert_int_equal(json_integer_value(json_array_get(json_array_get(m, 0), 1)), 1540);

    /* the burst window from the fault rows, with its figures */
    json_t *b = json_object_get(json_object_get(d, "burst"), "elastic");
    assert_int_equal(json_array_size(b), 1);
    json_t *b0 = json_array_get(b, 0);
    assert_int_equal(json_integer_value(json_object_get(b0, "start")), 3600);
    assert_int_equal(json_integer_value(json_object_get(b0, "end")), 10800);
    assert_true(json_is_true(json_object_get(b0, "end_known")));
    assert_int_equal(json_integer_value(json_object_get(b0, "factor")), 2);
    assert_int_equal(json_integer_value(json_object_get(b0, "short_intervals")), 0);

    /* the lease and its reclaim episode; three fault rows */
    json_t *le = json_object_get(json_object_get(d, "leases"), "elastic");
    assert_int_equal(json_integer_value(json_object_get(le, "noticed")), 1);
    assert_int_equal(json_integer_value(json_object_get(le, "late")), 1);
    json_t *row = json_array_get(json_object_get(le, "rows"), 0);
    assert_int_equal(json_integer_value(json_array_get(row, 0)), 0);   /* granted */
    assert_int_equal(json_integer_value(json_array_get(row, 1)), 500); /* returned */
    assert_int_equal(json_integer_value(json_array_get(row, 3)), 400); /* deadline (notice) */
    assert_int_equal(json_integer_value(json_array_get(row, 4)), 1);   /* late: 500 > 400 */
    json_t *ep = json_array_get(json_array_get(row, 7), 0);
    assert_int_equal(json_integer_value(json_array_get(ep, 0)), 100); /* notice */
    assert_int_equal(json_integer_value(json_array_get(ep, 1)), 200); /* committed */
    assert_int_equal(json_integer_value(json_array_get(ep, 2)), 500); /* GPUs back */
    assert_string_equal(json_string_value(json_array_get(ep, 3)), "returned");
    assert_string_equal(json_string_value(json_array_get(ep, 4)), "reclaim");
    json_t *fa = json_object_get(json_object_get(d, "faults"), "elastic");
    assert_int_equal(json_integer_value(json_object_get(fa, "total")), 3);
    json_decref(d);
    free(html);
    sf_rm_rf(dir);
}

static void expect_error(const char *dir, const char *out, int code, const char *needle)
{
    tide_error_t err = {0};
    assert_int_equal(tide_report_write(dir, out, &err), -1);
    if (err.code != code)
        fail_msg("code %d, expected %d (%s)", err.code, code, err.msg);
    if (!strstr(err.msg, needle))
        fail_msg("message '%s' lacks '%s'", err.msg, needle);
}

static void test_report_errors(void **state)
{
    (void)state;
    char dir[256], path[512];
    expect_error("/nonexistent/tide-run", NULL, TIDE_ENOENT, "/nonexistent/tide-run");
    expect_error("", NULL, TIDE_EINVAL, "directory");
    sf_tmpdir(dir, sizeof dir);
    expect_error(dir, NULL, TIDE_ENOENT, "summary.json");
    snprintf(path, sizeof path, "%s/summary.json", dir);
    sf_write(path, "{\"policies\": ");
    expect_error(dir, NULL, TIDE_EINVAL, "summary.json");
    sf_write(path, "{\"horizon_s\": 1}");
    expect_error(dir, NULL, TIDE_EINVAL, "policies");
    sf_write(path, MINI_SUMMARY);
    expect_error(dir, NULL, TIDE_ENOENT, "timeline.csv");
    snprintf(path, sizeof path, "%s/timeline.csv", dir);
    sf_write(path, "policy,time_s,serving\nelastic,0,1\nelastic,300,abc\n");
    expect_error(dir, NULL, TIDE_EINVAL, "timeline.csv:3");
    sf_write(path, "policy,time_s,serving\nelastic,300,1\nelastic,0,1\n");
    expect_error(dir, NULL, TIDE_EINVAL, "does not increase");
    sf_write(path, "a,b\n1,2\n");
    expect_error(dir, NULL, TIDE_EINVAL, "time_s");
    sf_write(path, "policy,time_s,serving\nelastic,0,1\n");
    /* events.csv is optional: without it the report is still written */
    tide_error_t err = {0};
    assert_int_equal(tide_report_write(dir, NULL, &err), 0);
    snprintf(path, sizeof path, "%s/no/such/dir/r.html", dir);
    expect_error(dir, path, TIDE_EIO, "r.html");
    /* a file instead of a directory */
    snprintf(path, sizeof path, "%s/summary.json", dir);
    expect_error(path, NULL, TIDE_EINVAL, "not a directory");
    sf_rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_real_run),
        cmocka_unit_test(test_report_extras),
        cmocka_unit_test(test_report_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
