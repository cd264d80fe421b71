/* Unit tests: parameter sweeps (src/sim/sweep.h): grid parsing, the Pareto
 * front, and a 2x2 sweep of the tiny workload on two threads (rows, front,
 * files, the same results as on one thread, the report's sweep data). */
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

#include "report/report.h"
#include "sim/sweep.h"
#include "sim_fixture.h"

static void test_parse_good(void **state)
{
    (void)state;
    tide_sweep_grid_t g;
    tide_error_t err = {0};
    char label[256];
    double v[TIDE_SWEEP_NKEYS];

    assert_int_equal(tide_sweep_parse("reserve=24:64:8,margin=0.05:0.3:0.05", &g, &err), 0);
    assert_int_equal(g.n_axes, 2);
    assert_int_equal(g.axis[0].key, TIDE_SWEEP_RESERVE);
    assert_int_equal(g.axis[0].n, 6); /* 24 32 40 48 56 64 */
    assert_int_equal(g.axis[1].key, TIDE_SWEEP_MARGIN);
    assert_int_equal(g.axis[1].n, 6); /* 0.05 .. 0.30 inclusive despite rounding */
    assert_int_equal(g.n_points, 36);
    assert_true(g.axis[0].v[5] == 64);
    assert_true(g.axis[1].v[2] == 0.15);
    assert_true(g.axis[1].v[5] == 0.3);
    /* the last axis varies fastest */
    tide_sweep_point(&g, 7, v);
    assert_true(v[0] == 32 && v[1] == 0.1);
    assert_string_equal(tide_sweep_label(&g, 7, label, sizeof label), "reserve=32,margin=0.1");
    assert_string_equal(tide_sweep_label(&g, 35, label, sizeof label), "reserve=64,margin=0.3");
    tide_sweep_grid_free(&g);

    /* single values, durations, every key */
    assert_int_equal(tide_sweep_parse("lead=5m,hold=60:180:60,split=80,reserve=0,margin=1", &g,
                                      &err), 0);
    assert_int_equal(g.n_axes, 5);
    assert_int_equal(g.n_points, 3);
    assert_true(g.axis[0].v[0] == 300);
    assert_true(g.axis[1].v[2] == 180);
    tide_sweep_point(&g, 1, v);
    assert_true(v[0] == 300 && v[1] == 120 && v[2] == 80 && v[3] == 0 && v[4] == 1);

    /* apply: every field, and the cluster checks */
    tide_config_t cfg;
    tide_config_default(&cfg);
    assert_int_equal(tide_sweep_apply(&g, 2, 200, &cfg, &err), 0);
    assert_int_equal(cfg.lead_extra_s, 300);
    assert_int_equal(cfg.scale_down_hold_s, 180);
    assert_int_equal(cfg.split_inf, 80);
    assert_int_equal(cfg.reserve_gpus, 0);
    assert_true(cfg.margin_min == 1);
    assert_int_equal(tide_sweep_check(&g, 200, &cfg, &err), 0);
    assert_int_equal(tide_sweep_check(&g, 64, &cfg, &err), -1); /* split 80 > 64 GPUs */
    assert_non_null(strstr(err.msg, "split=80"));
    tide_sweep_grid_free(&g);
    tide_sweep_grid_free(&g); /* twice is fine */
    tide_sweep_grid_free(NULL);

    /* a step that overshoots HI stops at the last value below it */
    assert_int_equal(tide_sweep_parse("reserve=10:20:7", &g, &err), 0);
    assert_int_equal(g.axis[0].n, 2);
    assert_true(g.axis[0].v[1] == 17);
    tide_sweep_grid_free(&g);
}

static void expect_bad(const char *spec, const char *needle)
{
    tide_sweep_grid_t g;
    tide_error_t err = {0};
    if (tide_sweep_parse(spec, &g, &err) == 0) {
        tide_sweep_grid_free(&g);
        fail_msg("'%s' should be refused", spec ? spec : "(null)");
    }
    assert_int_equal(err.code, TIDE_EINVAL);
    if (!strstr(err.msg, needle))
        fail_msg("'%s': message '%s' lacks '%s'", spec ? spec : "(null)", err.msg, needle);
    assert_int_equal(g.n_axes, 0);
    tide_sweep_grid_free(&g);
}

static void test_parse_bad(void **state)
{
    (void)state;
    expect_bad(NULL, "empty");
    expect_bad("", "empty");
    expect_bad(",", "empty item");
    expect_bad("reserve=8,", "empty item");
    expect_bad("reserve", "KEY=VALUE");
    expect_bad("bogus=1", "unknown key 'bogus'");
    expect_bad("=1", "unknown key");
    expect_bad("reserve=", "not a whole number");
    expect_bad("reserve=1:2", "STEP");
    expect_bad("reserve=1:2:0", "step");
    expect_bad("reserve=1:2:-1", "step");
    expect_bad("reserve=5:1:1", "above");
    expect_bad("reserve=1.5", "whole");
    expect_bad("reserve=1:9:1.5", "step");
    expect_bad("reserve=-8", "0..");
    expect_bad("margin=2", "0..1");
    expect_bad("margin=0.1:0.5:x", "not a number");
    expect_bad("margin=nan", "margin");
    expect_bad("lead=abc", "duration");
    expect_bad("reserve=1,reserve=2", "twice");
    expect_bad("reserve=1::1", "whole number");
    expect_bad("reserve=1:2:3:4", "LO:HI:STEP");
    expect_bad("reserve=0:100000:1", "values");
    expect_bad("reserve=0:1000:1,split=0:1000:1", "points");
    expect_bad("reserve=1,margin=0.1,split=1,lead=1,hold=1,reserve=2", "twice");
}

static void test_front(void **state)
{
    (void)state;
    /* (useful, slo): 0 (0.9, 0.99) front; 1 (0.8, 1.0) front; 2 (0.8, 0.99)
     * dominated by 0 and 1; 3 = 0 (equal: kept); 4 failed; 5 (0.95, 0.9) front;
     * 6 (0.7, 1.0) dominated by 1 */
    tide_sweep_row_t r[7];
    memset(r, 0, sizeof r);
    double u[] = {0.9, 0.8, 0.8, 0.9, 0.99, 0.95, 0.7};
    double s[] = {0.99, 1.0, 0.99, 0.99, 1.0, 0.9, 1.0};
    for (int i = 0; i < 7; i++) {
        r[i].ok = i != 4;
        r[i].useful_utilization = u[i];
        r[i].slo_attainment = s[i];
    }
    size_t *f = NULL, n = tide_sweep_front(r, 7, &f);
    assert_int_equal(n, 4);
    assert_int_equal(f[0], 5); /* useful descending */
    assert_int_equal(f[1], 0);
    assert_int_equal(f[2], 3);
    assert_int_equal(f[3], 1);
    free(f);
    n = tide_sweep_front(r, 0, &f);
    assert_int_equal(n, 0);
    free(f);
}

/* No row of the front dominates another, and every row off the front is
 * dominated by one on it. */
static void check_front(const tide_sweep_result_t *res)
{
    assert_true(res->n_front > 0);
    unsigned char *on = calloc(res->n_rows, 1);
    for (size_t a = 0; a < res->n_front; a++) {
        on[res->front[a]] = 1;
        const tide_sweep_row_t *x = &res->rows[res->front[a]];
        assert_true(x->ok);
        for (size_t b = 0; b < res->n_front; b++) {
            const tide_sweep_row_t *y = &res->rows[res->front[b]];
            int dom = y->useful_utilization >= x->useful_utilization &&
                      y->slo_attainment >= x->slo_attainment &&
                      (y->useful_utilization > x->useful_utilization ||
                       y->slo_attainment > x->slo_attainment);
            assert_false(dom);
        }
    }
    for (size_t i = 0; i < res->n_rows; i++) {
        if (on[i] || !res->rows[i].ok)
            continue;
        int dominated = 0;
        for (size_t a = 0; a < res->n_front && !dominated; a++) {
            const tide_sweep_row_t *y = &res->rows[res->front[a]];
            dominated = y->useful_utilization >= res->rows[i].useful_utilization &&
                        y->slo_attainment >= res->rows[i].slo_attainment;
        }
        assert_true(dominated);
    }
    free(on);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_sweep_run(void **state)
{
    (void)state;
    char dir[256], dir1[300], path[512];
    sf_tmpdir(dir, sizeof dir);
    sf_work_t w;
    sf_load(&w);
    tide_sim_opts_t o;
    sf_opts(&w, &o, dir);
    tide_error_t err = {0};
    /* the base run, as `tide sim --sweep` does before the sweep */
    if (tide_sim_run(&o, &err) != 0)
        fail_msg("sim: %s", err.msg);

    const char *spec = "reserve=8:16:8,margin=0.1:0.2:0.1";
    tide_sweep_grid_t g;
    assert_int_equal(tide_sweep_parse(spec, &g, &err), 0);
    assert_int_equal(g.n_points, 4);
    tide_sweep_result_t res = {0};
    FILE *table = tmpfile();
    assert_non_null(table);
    if (tide_sweep_run(&o, &g, spec, 2, table, &res, &err) != 0)
        fail_msg("sweep: %s", err.msg);
    assert_int_equal(res.n_rows, 4 * 6);
    const char *names[] = {"isolated", "static", "preempt", "k8s", "elastic", "timeshare"};
    for (size_t k = 0; k < 6; k++) {
        int rows = 0;
        for (size_t i = 0; i < res.n_rows; i++)
            if (!strcmp(res.rows[i].policy, names[k])) {
                rows++;
                assert_true(res.rows[i].ok);
                assert_true(res.rows[i].slo_attainment > 0 && res.rows[i].slo_attainment <= 1);
                assert_true(res.rows[i].useful_utilization > 0 &&
                            res.rows[i].useful_utilization <= 1);
            }
        assert_int_equal(rows, 4);
    }
    check_front(&res);

    /* the table: a header line, a column line and one line per front row */
    rewind(table);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, table);
    buf[n] = '\0';
    fclose(table);
    assert_non_null(strstr(buf, "Pareto front"));
    /* one line per distinct result; the counts add up to the front */
    int lines = count_lines(buf);
    assert_true(lines >= 3 && lines <= 2 + (int)res.n_front);
    int counted = 0;
    for (char *l = strchr(buf, '\n') + 1; (l = strchr(l, '\n')) != NULL && l[1];) {
        l++;
        char *e = strchr(l, '\n');
        while (e > l && e[-1] == ' ')
            e--;
        char *c = e;
        while (c > l && c[-1] != ' ')
            c--;
        counted += atoi(c);
    }
    assert_int_equal(counted, (int)res.n_front);

    /* files: a run per point, sweep.csv (header + 24 rows), sweep.json */
    snprintf(path, sizeof path, "%s/sweep/reserve=16,margin=0.2/summary.json", dir);
    char *sum = sf_slurp(path, NULL);
    assert_non_null(sum);
    free(sum);
    snprintf(path, sizeof path, "%s/sweep.csv", dir);
    char *csv = sf_slurp(path, NULL);
    assert_non_null(csv);
    assert_int_equal(count_lines(csv), 1 + 24);
    assert_true(!strncmp(csv, "point,label,reserve,margin,policy,utilization,useful_utilization,"
                              "slo_attainment,mean_queue_s,gpu_hours_lost,preemptions,reclaims,"
                              "reclaims_late,", 114));
    free(csv);
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    assert_non_null(j);
    assert_int_equal(json_array_size(json_object_get(j, "rows")), 24);
    assert_int_equal(json_array_size(json_object_get(j, "front")), res.n_front);
    assert_int_equal(json_integer_value(json_object_get(j, "points")), 4);
    assert_string_equal(json_string_value(json_object_get(j, "spec")), spec);
    json_t *r0 = json_array_get(json_object_get(j, "rows"), 0);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r0, "params"), "reserve")),
                     8);
    assert_int_equal(json_object_size(json_object_get(j, "front_by_policy")), 6);
    json_decref(j);

    /* one thread gives the same figures (the runs share nothing) */
    snprintf(dir1, sizeof dir1, "%s/one", dir);
    tide_sim_opts_t o1 = o;
    o1.out_dir = dir1;
    tide_sweep_result_t res1 = {0};
    if (tide_sweep_run(&o1, &g, spec, 1, NULL, &res1, &err) != 0)
        fail_msg("sweep (1 thread): %s", err.msg);
    assert_int_equal(res1.n_rows, res.n_rows);
    for (size_t i = 0; i < res.n_rows; i++) {
        assert_string_equal(res.rows[i].policy, res1.rows[i].policy);
        assert_true(res.rows[i].useful_utilization == res1.rows[i].useful_utilization);
        assert_true(res.rows[i].slo_attainment == res1.rows[i].slo_attainment);
        assert_int_equal(res.rows[i].preemptions, res1.rows[i].preemptions);
        assert_int_equal(res.rows[i].reclaims, res1.rows[i].reclaims);
    }
    assert_int_equal(res1.n_front, res.n_front);
    tide_sweep_result_free(&res1);

    /* the report picks the sweep up */
    assert_int_equal(tide_report_write(dir, NULL, &err), 0);
    snprintf(path, sizeof path, "%s/report.html", dir);
    char *html = sf_slurp(path, NULL);
    assert_non_null(html);
    assert_non_null(strstr(html, "\"sweep\":{\"spec\":\"reserve=8:16:8,margin=0.1:0.2:0.1\""));
    free(html);

    /* a point the cluster cannot take is refused before anything runs */
    tide_sweep_grid_t big;
    assert_int_equal(tide_sweep_parse("reserve=8:40:32", &big, &err), 0);
    assert_int_equal(tide_sweep_run(&o, &big, "reserve=8:40:32", 2, NULL, NULL, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_non_null(strstr(err.msg, "reserve=40"));
    tide_sweep_grid_free(&big);

    tide_sweep_result_free(&res);
    tide_sweep_result_free(NULL);
    tide_sweep_grid_free(&g);
    sf_free(&w);
    sf_rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_good),
        cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_front),
        cmocka_unit_test(test_sweep_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
