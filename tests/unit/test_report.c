/* Unit tests: the HTML report (src/sim/report.h) on a real tiny run and on
 * hand-written inputs (extra columns, fault rows, downsampling, escaping,
 * errors), and its Teams and Capacity signals sections (usage.csv sums,
 * prices, quotas, a missing or malformed usage.csv). */
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

#include "formats/cluster_file.h"
#include "formats/csv.h"
#include "formats/governance.h"
#include "report/report.h"
#include "sim_fixture.h"

static const char *const CHARTS[] = {
    "chart-gpu-state", "chart-gpu-class", "chart-training",   "chart-leases",
    "chart-storage",   "chart-team-hours", "chart-class-hours", "chart-team-loss",
    "chart-pareto",    "chart-sweep",     "summary-table",    "questions",
    "policy-tabs",     "day-controls",    "teams",            "team-policy-tabs",
    "team-tabs",       "team-figures",    "chart-team-class-time", "chart-team-state-time",
    "chart-team-chargeback", "chart-teams-compare", "teams-table", "services-table",
    "signals",         "signals-body"};

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
    assert_int_equal(json_array_size(pols), 6);
    const char *names[] = {"isolated", "static", "preempt", "k8s", "elastic", "timeshare"};
    for (size_t i = 0; i < 6; i++) {
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

    /* Teams: both teams of the fixture under every policy, with series */
    json_t *teams = json_object_get(d, "teams");
    assert_true(json_is_true(json_object_get(teams, "available")));
    assert_true(json_is_false(json_object_get(teams, "governance")));
    for (size_t i = 0; i < 6; i++) {
        json_t *tp = json_object_get(json_object_get(teams, "policies"), names[i]);
        assert_non_null(tp);
        json_t *ta = json_object_get(tp, "teams");
        assert_int_equal(json_array_size(ta), 2);
        int seen_vision = 0, seen_lang = 0;
        size_t k;
        json_t *tm;
        json_array_foreach(ta, k, tm) {
            const char *n = json_string_value(json_object_get(tm, "name"));
            seen_vision |= !strcmp(n, "vision");
            seen_lang |= !strcmp(n, "lang");
            assert_true(json_is_object(json_object_get(tm, "series")));
            assert_true(json_is_object(json_object_get(tm, "by_state")));
            assert_true(json_is_number(json_object_get(tm, "mean_queue_s")));
            assert_true(json_is_null(json_object_get(tm, "quota_gpus")));
        }
        assert_true(seen_vision && seen_lang);
        assert_int_equal(json_array_size(json_object_get(tp, "t")), 288);
        /* the one service, with its replica-hours */
        json_t *sv = json_array_get(json_object_get(tp, "services"), 0);
        assert_string_equal(json_string_value(json_object_get(sv, "name")), "chat");
        assert_true(json_number_value(json_object_get(sv, "replica_hours")) > 0);
        /* capacity signals of every policy */
        json_t *sp = json_object_get(json_object_get(json_object_get(d, "signals"), "policies"),
                                     names[i]);
        assert_true(json_array_size(json_object_get(sp, "findings")) >= 1);
    }
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

    /* no usage.csv (an older run): the Teams section says so, the signals
     * are still computed */
    json_t *teams = json_object_get(d, "teams");
    assert_true(json_is_false(json_object_get(teams, "available")));
    assert_true(json_is_true(json_object_get(teams, "missing")));
    assert_non_null(strstr(json_string_value(json_object_get(teams, "error")), "usage.csv"));
    assert_null(json_object_get(teams, "policies"));
    assert_non_null(strstr(html, "<section id=\"teams\">"));
    assert_non_null(json_object_get(json_object_get(json_object_get(d, "signals"), "policies"),
                                    "elastic"));
    json_decref(d);
    free(html);
    sf_rm_rf(dir);
}

/* ------------------------------------------------------------------ teams */

static int near(double a, double b, double tol) { return fabs(a - b) <= tol; }

/* Sum of usage.csv's gpu_s (want_cost 0) or cost (1) over the rows of
 * `policy` whose owner and kind match (NULL = any); lost: -1 any state, 0 all
 * but `lost`, 1 only `lost`. */
static double usage_sum(const char *dir, const char *policy, const char *owner, const char *kind,
                        int lost, int want_cost)
{
    char path[512];
    snprintf(path, sizeof path, "%s/usage.csv", dir);
    tide_error_t err = {0};
    tide_csv_t *c = tide_csv_open_file(path, &err);
    if (!c)
        fail_msg("usage.csv: %s", err.msg);
    int cp = tide_csv_col(c, "policy"), co = tide_csv_col(c, "owner"), ck = tide_csv_col(c, "kind"),
        cs = tide_csv_col(c, "state"), cv = tide_csv_col(c, want_cost ? "cost" : "gpu_s");
    double sum = 0;
    while (tide_csv_next(c, &err) == 1) {
        if (strcmp(tide_csv_field(c, cp), policy) || (owner && strcmp(tide_csv_field(c, co), owner)) ||
            (kind && strcmp(tide_csv_field(c, ck), kind)))
            continue;
        int is_lost = !strcmp(tide_csv_field(c, cs), "lost");
        if ((lost == 0 && is_lost) || (lost == 1 && !is_lost))
            continue;
        sum += atof(tide_csv_field(c, cv));
    }
    tide_csv_close(c);
    return sum;
}

static double jget(json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }

static const char GOV_YAML[] = "groups:\n"
                               "  - {count: 4, gpus_per_node: 8, gpu_type: H100}\n"
                               "teams:\n"
                               "  - {name: vision, weight: 2, quota: 8}\n"
                               "  - {name: lang}\n"
                               "prices:\n"
                               "  H100: {reserved: 2.0, serving: 2.5, training: 2.0, lent: 1.25, "
                               "lost: 3.0, idle: 0.5}\n";

/* A real run with prices and a quota: every cost on the page is the sum of
 * its usage.csv rows, lost work is apart, the series add up to the team's
 * GPU-hours. */
static void test_report_teams_costs(void **state)
{
    (void)state;
    char dir[256], path[512];
    sf_tmpdir(dir, sizeof dir);
    sf_work_t w;
    sf_load(&w);
    tide_governance_t g;
    tide_error_t err = {0};
    tide_cluster_t *cl = tide_cluster_file_load_mem_ex(GOV_YAML, strlen(GOV_YAML), "gov.yaml", &g,
                                                       &err);
    if (!cl)
        fail_msg("cluster: %s", err.msg);
    tide_sim_opts_t o;
    sf_opts(&w, &o, dir);
    o.cluster = cl;
    o.governance = &g;
    if (tide_sim_run(&o, &err) != 0)
        fail_msg("sim: %s", err.msg);
    snprintf(path, sizeof path, "%s/r.html", dir);
    assert_int_equal(tide_report_write(dir, path, &err), 0);
    char *html = sf_slurp(path, NULL);
    assert_non_null(html);
    assert_self_contained(html);
    json_t *d = page_data(html);
    json_t *teams = json_object_get(d, "teams");
    assert_true(json_is_true(json_object_get(teams, "available")));
    assert_true(json_is_true(json_object_get(teams, "governance")));
    double horizon = 86400, priced = 0;
    const char *pol;
    json_t *tp;
    json_object_foreach(json_object_get(teams, "policies"), pol, tp) {
        assert_string_equal(json_string_value(json_object_get(tp, "lost_owner")),
                            "(policy: lost work)");
        json_t *tot = json_object_get(tp, "total"), *lost = json_object_get(tp, "lost");
        assert_true(near(json_number_value(json_array_get(tot, 1)),
                         usage_sum(dir, pol, NULL, NULL, -1, 1), 1e-6));
        assert_true(near(json_number_value(json_array_get(tot, 0)) * 3600, 32 * horizon, 1e-3));
        assert_true(near(json_number_value(json_array_get(lost, 1)),
                         usage_sum(dir, pol, NULL, NULL, 1, 1), 1e-6));
        json_t *ts = json_object_get(tp, "t");
        size_t nb = json_array_size(ts);
        size_t k;
        json_t *tm;
        json_array_foreach(json_object_get(tp, "teams"), k, tm) {
            const char *name = json_string_value(json_object_get(tm, "name"));
            double cost = usage_sum(dir, pol, name, "team", 0, 1);
            double lost_c = usage_sum(dir, pol, name, "team", 1, 1);
            double gpu_s = usage_sum(dir, pol, name, "team", -1, 0);
            if (!near(jget(tm, "cost"), cost, 1e-6))
                fail_msg("%s/%s: cost %.6f on the page, %.6f in usage.csv", pol, name,
                         jget(tm, "cost"), cost);
            assert_true(near(jget(tm, "lost_cost"), lost_c, 1e-6));
            assert_true(near(jget(tm, "gpu_hours") * 3600, gpu_s, 1e-3));
            assert_true(near(jget(tm, "lost_gpu_hours") * 3600,
                             usage_sum(dir, pol, name, "team", 1, 0), 1e-3));
            priced += cost;
            /* by state: the states add up to the team's cost plus its lost work */
            double bs_c = 0;
            const char *sk;
            json_t *sv;
            json_object_foreach(json_object_get(tm, "by_state"), sk, sv) bs_c +=
                json_number_value(json_array_get(sv, 1));
            assert_true(near(bs_c, cost + lost_c, 1e-6));
            /* quota and weight from usage_teams.csv */
            if (!strcmp(name, "vision")) {
                assert_int_equal(json_integer_value(json_object_get(tm, "quota_gpus")), 8);
                assert_true(near(jget(tm, "weight"), 2, 1e-12));
            } else {
                assert_true(json_is_null(json_object_get(tm, "quota_gpus")));
            }
            assert_true(json_is_number(json_object_get(tm, "above_quota_gpu_hours")));
            /* the series: mean GPUs per bucket x bucket length = GPU-seconds */
            json_t *ser = json_object_get(tm, "series");
            double step = jget(tp, "step"), integral = 0;
            for (size_t b = 0; b < nb; b++) {
                double t0 = json_number_value(json_array_get(ts, b));
                double t1 = b + 1 < nb ? json_number_value(json_array_get(ts, b + 1)) : horizon;
                double v = 0;
                static const char *const cls[] = {"p1", "p2", "p3"};
                for (int c = 0; c < 3; c++)
                    v += json_number_value(json_array_get(json_object_get(ser, cls[c]), b));
                integral += v * (t1 - t0);
            }
            if (!near(integral, gpu_s, 0.05 * 3 * step * (double)nb + 1))
                fail_msg("%s/%s: series integral %.1f, usage.csv %.1f", pol, name, integral,
                         gpu_s);
        }
        json_t *sv = json_array_get(json_object_get(tp, "services"), 0);
        assert_true(near(jget(sv, "cost"), usage_sum(dir, pol, "chat", "service", -1, 1), 1e-6));
        assert_true(jget(sv, "cost") > 0);
        assert_true(near(jget(sv, "replica_hours") * 8 * 3600,
                         usage_sum(dir, pol, "chat", "service", -1, 0), 1e-3));
    }
    assert_true(priced > 0);
    json_decref(d);
    free(html);
    tide_cluster_destroy(cl);
    tide_governance_free(&g);
    sf_free(&w);
    sf_rm_rf(dir);
}

/* Hand-written usage files on the mini run: exact figures, bucketing on the
 * downsampled grid, lost work apart, quota and weight, borrowing. */
static void test_report_teams_mini(void **state)
{
    (void)state;
    char dir[256], path[512];
    sf_tmpdir(dir, sizeof dir);
    make_mini(dir);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    sf_write(path, "{\"horizon_s\": 86400, \"cluster_gpus\": 8, \"seed\": 1,"
                   " \"policies\": {\"elastic\": {\"utilization\": 0.5,"
                   "   \"training\": {\"preemptions\": 3, \"p95_queue_s\": 100000},"
                   "   \"teams\": {\"teamA\": {\"preemptions\": 3, \"jobs\": 2, \"mean_queue_s\": 60},"
                   "               \"teamB\": {\"preemptions\": 0, \"jobs\": 1, "
                   "\"mean_queue_s\": 7200}}}}}\n");
    snprintf(path, sizeof path, "%s/usage.csv", dir);
    sf_write(path, "policy,time_s,owner,kind,class,state,tier,gpu_type,gpu_s,cost\n"
                   "elastic,0,teamA,team,p2,training,D,H100,56.000,1.0000\n"
                   "elastic,0,chat,service,inference,serving,B,H100,140.000,3.0000\n"
                   "elastic,0,-,idle,none,idle,D,H100,10.000,0.1000\n"
                   "elastic,14,teamA,team,p2,lost,D,H100,28.000,0.5000\n"
                   "elastic,14,teamA,team,p2,training,D,H100,-14.000,-0.2500\n"
                   "elastic,28,teamA,team,p1,checkpointing,C,H100,14.000,0.2000\n");
    snprintf(path, sizeof path, "%s/usage_teams.csv", dir);
    sf_write(path, "policy,time_s,team,weight,quota_gpus,used_gpus,borrowed_gpus,usage_gpu_s\n"
                   "elastic,0,teamA,2,16,10,4,0\n"
                   "elastic,100,teamA,2,16,10,2,0\n"
                   "elastic,200,teamA,2,16,10,0,0\n");
    snprintf(path, sizeof path, "%s/usage_services.csv", dir);
    sf_write(path, "policy,service,gpus_per_replica,min_replicas,max_replicas\n"
                   "elastic,chat,4,1,3\n");
    tide_error_t err = {0};
    snprintf(path, sizeof path, "%s/r.html", dir);
    if (tide_report_write(dir, path, &err) != 0)
        fail_msg("report: %s", err.msg);
    char *html = sf_slurp(path, NULL);
    json_t *d = page_data(html);
    json_t *teams = json_object_get(d, "teams");
    assert_true(json_is_true(json_object_get(teams, "available")));
    assert_true(json_is_true(json_object_get(teams, "governance"))); /* weight 2, quota 16 */
    json_t *tp = json_object_get(json_object_get(teams, "policies"), "elastic");
    /* 6000 timeline rows -> buckets of 12 rows (168 s) */
    assert_int_equal(json_integer_value(json_object_get(tp, "factor")), 12);
    assert_int_equal(json_array_size(json_object_get(tp, "t")), 500);
    assert_int_equal(json_integer_value(json_object_get(tp, "step")), 168);
    json_t *ta = json_object_get(tp, "teams");
    assert_int_equal(json_array_size(ta), 2); /* teamB from summary.json only */
    json_t *a = json_array_get(ta, 0), *b = json_array_get(ta, 1);
    assert_string_equal(json_string_value(json_object_get(a, "name")), "teamA");
    assert_string_equal(json_string_value(json_object_get(b, "name")), "teamB");
    assert_true(near(jget(a, "gpu_hours"), 84.0 / 3600, 1e-9));
    assert_true(near(jget(a, "cost"), 0.95, 1e-9)); /* 1.0 - 0.25 + 0.2: lost work apart */
    assert_true(near(jget(a, "lost_cost"), 0.5, 1e-9));
    assert_true(near(jget(a, "lost_gpu_hours"), 28.0 / 3600, 1e-9));
    assert_true(near(jget(a, "tier_c_gpu_hours"), 14.0 / 3600, 1e-9));
    assert_true(near(jget(a, "above_quota_gpu_hours"), 600.0 / 3600, 1e-9));
    assert_true(near(jget(a, "share"), 1.0, 1e-12));
    assert_true(near(jget(a, "weight"), 2, 1e-12));
    assert_int_equal(json_integer_value(json_object_get(a, "quota_gpus")), 16);
    assert_int_equal(json_integer_value(json_object_get(a, "preemptions")), 3);
    assert_int_equal(json_integer_value(json_object_get(a, "mean_queue_s")), 60);
    json_t *bs = json_object_get(a, "by_state");
    assert_true(near(json_number_value(json_array_get(json_object_get(bs, "training"), 1)), 0.75,
                     1e-9));
    assert_true(near(json_number_value(json_array_get(json_object_get(bs, "lost"), 0)),
                     28.0 / 3600, 1e-9));
    assert_true(near(jget(b, "gpu_hours"), 0, 0));
    assert_int_equal(json_integer_value(json_object_get(b, "mean_queue_s")), 7200);
    /* bucket 0 = [0, 168): p2 (56 + 28 - 14) / 168 = 0.42 -> 0.4 GPUs, p1 and
     * tier C 14 / 168 -> 0.1, lost 28 GPU-s -> 0.01 GPU-h; the rest zero */
    json_t *ser = json_object_get(a, "series");
    assert_true(near(json_number_value(json_array_get(json_object_get(ser, "p2"), 0)), 0.4, 1e-9));
    assert_true(near(json_number_value(json_array_get(json_object_get(ser, "p1"), 0)), 0.1, 1e-9));
    assert_true(near(json_number_value(json_array_get(json_object_get(ser, "tier_c"), 0)), 0.1,
                     1e-9));
    assert_true(near(json_number_value(json_array_get(json_object_get(ser, "lost_h"), 0)), 0.01,
                     1e-9));
    assert_true(near(json_number_value(json_array_get(json_object_get(ser, "p2"), 1)), 0, 0));
    assert_null(json_object_get(ser, "p3"));       /* all zero: left out */
    assert_null(json_object_get(ser, "training")); /* derived by the page */
    assert_true(json_is_null(json_object_get(b, "series")));
    /* policy lines: lost work, services, idle, total */
    assert_true(near(json_number_value(json_array_get(json_object_get(tp, "lost"), 1)), 0.5, 1e-9));
    assert_true(near(json_number_value(json_array_get(json_object_get(tp, "total"), 1)), 4.55,
                     1e-9));
    assert_true(near(json_number_value(json_array_get(json_object_get(tp, "idle_total"), 1)), 0.1,
                     1e-9));
    json_t *sv = json_array_get(json_object_get(tp, "services"), 0);
    assert_true(near(jget(sv, "replica_hours"), 140.0 / 3600 / 4, 1e-9));
    assert_true(near(jget(sv, "cost"), 3.0, 1e-9));
    assert_int_equal(json_integer_value(json_object_get(sv, "min_replicas")), 1);
    /* capacity signals, with their numbers */
    json_t *sp = json_object_get(json_object_get(json_object_get(d, "signals"), "policies"),
                                 "elastic");
    assert_non_null(sp);
    assert_true(json_array_size(json_object_get(sp, "findings")) >= 1);
    assert_true(json_is_number(json_object_get(json_object_get(sp, "metrics"), "p95_queue_h")));
    json_decref(d);
    free(html);

    /* a malformed usage.csv only loses the Teams section */
    snprintf(path, sizeof path, "%s/usage.csv", dir);
    sf_write(path, "policy,time_s,owner,kind,class,state,tier,gpu_type,gpu_s,cost\n"
                   "elastic,0,teamA,team,p2,training,D,H100,56.000,1.0000\n"
                   "elastic,0,teamA,team,p9,training,D,H100,56.000,1.0000\n");
    snprintf(path, sizeof path, "%s/r.html", dir);
    assert_int_equal(tide_report_write(dir, path, &err), 0);
    html = sf_slurp(path, NULL);
    d = page_data(html);
    teams = json_object_get(d, "teams");
    assert_true(json_is_false(json_object_get(teams, "available")));
    const char *msg = json_string_value(json_object_get(teams, "error"));
    assert_non_null(msg);
    if (!strstr(msg, "usage.csv:3") || !strstr(msg, "p9"))
        fail_msg("message: %s", msg);
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
        cmocka_unit_test(test_report_teams_costs),
        cmocka_unit_test(test_report_teams_mini),
        cmocka_unit_test(test_report_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
