/* Governance: the YAML section (teams, prices, fair share) with exact values
 * and line-numbered errors; then, through the real engine and the simulated
 * world (the loop of src/sim/sim.c, engine_fixture.h): quota guarantees,
 * borrowing limits, lend caps, weighted fair share against FIFO, and the
 * usage accounting adding up (usage.csv, tide usage aggregation, report). */
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

#include "formats/cluster_file.h"
#include "formats/csv.h"
#include "formats/governance.h"
#include "formats/usage.h"
#include "tide/engine.h"
#include "engine_fixture.h"
#include "util/util.h"

/* ------------------------------------------------------------------ YAML */

static tide_cluster_t *load_gov(const char *s, tide_governance_t *g, tide_error_t *err)
{
    return tide_cluster_file_load_mem_ex(s, strlen(s), "gov.yaml", g, err);
}

static void test_yaml_good(void **state)
{
    (void)state;
    const char *y = "groups:\n"                                              /* 1 */
                    "  - {count: 4, gpus_per_node: 8, gpu_type: H100}\n"     /* 2 */
                    "  - {count: 2, gpus_per_node: 8, gpu_type: A100}\n"     /* 3 */
                    "teams:\n"                                               /* 4 */
                    "  - name: research\n"                                   /* 5 */
                    "    weight: 2\n"                                        /* 6 */
                    "    quota: {H100: 16, A100: 8}\n"                       /* 7 */
                    "    borrow_limit: 64\n"                                 /* 8 */
                    "    lend_cap: 4\n"                                      /* 9 */
                    "  - name: product\n"                                    /* 10 */
                    "    weight: 0.5\n"                                      /* 11 */
                    "    quota: {A100: 0}\n"                                 /* 12 */
                    "    borrow_limit: unlimited\n"                          /* 13 */
                    "  - {name: \"sweeps, misc\"}\n"                         /* 14 */
                    "prices:\n"                                              /* 15 */
                    "  default: {serving: 3.0, idle: 0.25, lost: 9}\n"       /* 16 */
                    "  H100: {reserved: 2.0, serving: 2.5, training: 2.0, lent: 1.2, lost: 2.0, "
                    "idle: 0.5}\n"                                           /* 17 */
                    "  A100: {training: 1.0}\n"                              /* 18 */
                    "fairshare:\n"                                           /* 19 */
                    "  enabled: false\n"                                     /* 20 */
                    "  half_life: 36h\n";                                    /* 21 */
    tide_governance_t g;
    tide_error_t err = {0};
    tide_cluster_t *c = load_gov(y, &g, &err);
    if (!c)
        fail_msg("%s", err.msg);
    assert_int_equal(tide_cluster_gpus(c), 48);
    assert_int_equal(g.n_types, 2);
    assert_string_equal(g.type_names[0], "H100");
    assert_string_equal(g.type_names[1], "A100");
    assert_int_equal(g.n_teams, 3);
    assert_string_equal(g.teams[0].name, "research");
    assert_true(g.teams[0].weight == 2.0);
    assert_int_equal(g.teams[0].quota[0], 16);
    assert_int_equal(g.teams[0].quota[1], 8);
    assert_int_equal(g.teams[0].quota[2], -1);
    assert_int_equal(g.teams[0].borrow_limit, 64);
    assert_int_equal(g.teams[0].lend_cap, 4);
    assert_int_equal(g.team_lines[0], 5);
    assert_string_equal(g.teams[1].name, "product");
    assert_true(g.teams[1].weight == 0.5);
    assert_int_equal(g.teams[1].quota[0], -1);
    assert_int_equal(g.teams[1].quota[1], 0);
    assert_int_equal(g.teams[1].borrow_limit, -1);
    assert_int_equal(g.teams[1].lend_cap, -1);
    assert_string_equal(g.teams[2].name, "sweeps, misc");
    assert_true(g.teams[2].weight == 1.0); /* defaults */
    assert_int_equal(g.teams[2].quota[0], -1);
    assert_int_equal(g.teams[2].borrow_limit, -1);
    assert_int_equal(tide_governance_team_find(&g, "product"), 1);
    assert_int_equal(tide_governance_team_find(&g, "nobody"), -1);
    /* prices: the type's own entry, else default, else 0 */
    assert_int_equal(g.has_prices, 1);
    assert_true(tide_governance_price(&g, 0, TIDE_COST_RESERVED) == 2.0);
    assert_true(tide_governance_price(&g, 0, TIDE_COST_SERVING) == 2.5);
    assert_true(tide_governance_price(&g, 0, TIDE_COST_TRAINING) == 2.0);
    assert_true(tide_governance_price(&g, 0, TIDE_COST_LENT) == 1.2);
    assert_true(tide_governance_price(&g, 0, TIDE_COST_LOST) == 2.0);
    assert_true(tide_governance_price(&g, 0, TIDE_COST_IDLE) == 0.5);
    assert_true(tide_governance_price(&g, 1, TIDE_COST_TRAINING) == 1.0);
    assert_true(tide_governance_price(&g, 1, TIDE_COST_SERVING) == 3.0);
    assert_true(tide_governance_price(&g, 1, TIDE_COST_IDLE) == 0.25);
    assert_true(tide_governance_price(&g, 1, TIDE_COST_LOST) == 9.0);
    assert_true(tide_governance_price(&g, 1, TIDE_COST_RESERVED) == 0.0);
    assert_true(tide_governance_price(&g, 1, TIDE_COST_LENT) == 0.0);
    assert_true(tide_governance_price(NULL, 0, TIDE_COST_SERVING) == 0.0);
    assert_int_equal(g.fairshare, 0);
    assert_int_equal(g.fairshare_half_life_s, 36 * 3600);

    /* apply: config first, then the teams into an engine */
    tide_config_t cfg;
    tide_config_default(&cfg);
    cfg.policy = "static";
    assert_int_equal(cfg.fairshare, 1);
    assert_int_equal(tide_governance_apply(&g, NULL, &cfg, &err), 0);
    assert_int_equal(cfg.fairshare, 0);
    assert_int_equal(cfg.fairshare_half_life_s, 36 * 3600);
    tide_engine_t *e = tide_engine_create(c, &cfg, &err);
    assert_non_null(e);
    if (tide_governance_apply(&g, e, NULL, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(tide_engine_teams(e), 3);
    tide_team_info_t ti;
    assert_int_equal(tide_engine_team_info(e, 0, &ti), 0);
    assert_string_equal(ti.team, "research");
    assert_true(ti.weight == 2.0);
    assert_int_equal(ti.quota_gpus, 24);
    assert_int_equal(ti.borrow_limit, 64);
    assert_int_equal(ti.lend_cap, 4);
    assert_int_equal(tide_engine_team_info(e, 1, &ti), 0);
    assert_int_equal(ti.quota_gpus, 0); /* a quota of 0 A100: everything is borrowed */
    assert_int_equal(tide_engine_team_info(e, 2, &ti), 0);
    assert_int_equal(ti.quota_gpus, -1);
    tide_engine_destroy(e);
    tide_cluster_destroy(c);
    tide_governance_free(&g);
    tide_governance_free(&g); /* safe twice */

    /* a plain quota on a single-type cluster; half_life alone turns fair share on */
    c = load_gov("groups: [{count: 4, gpus_per_node: 8}]\n"
                 "teams: [{name: a, quota: 16}, {name: b, weight: 3}]\n"
                 "fairshare: {half_life: 2d}\n",
                 &g, &err);
    if (!c)
        fail_msg("%s", err.msg);
    assert_int_equal(g.n_teams, 2);
    assert_int_equal(g.teams[0].quota[0], 16);
    assert_true(g.teams[1].weight == 3.0);
    assert_int_equal(g.has_prices, 0);
    assert_true(tide_governance_price(&g, 0, TIDE_COST_SERVING) == 0.0);
    assert_int_equal(g.fairshare, 1);
    assert_int_equal(g.fairshare_half_life_s, 2 * 86400);
    tide_cluster_destroy(c);
    tide_governance_free(&g);

    /* no governance section: empty, fair share not given; the old API accepts teams */
    c = load_gov("groups: [{count: 1, gpus_per_node: 8, gpu_type: B200}]\n", &g, &err);
    assert_non_null(c);
    assert_int_equal(g.n_teams, 0);
    assert_int_equal(g.fairshare, -1);
    assert_string_equal(g.type_names[0], "B200");
    tide_cluster_destroy(c);
    tide_governance_free(&g);
    const char *old = "groups: [{count: 1, gpus_per_node: 8}]\nteams: [{name: a}]\n";
    c = tide_cluster_file_load_mem(old, strlen(old), NULL, &err);
    assert_non_null(c);
    tide_cluster_destroy(c);
    /* a compact spec through from_arg_ex gives an empty governance for it */
    c = tide_cluster_file_from_arg_ex("2x8:H100,1x4:A100", &g, &err);
    assert_non_null(c);
    assert_int_equal(g.n_types, 2);
    assert_string_equal(g.type_names[1], "A100");
    char tb[40];
    assert_string_equal(tide_governance_type_name(&g, 1, tb, sizeof tb), "A100");
    assert_string_equal(tide_governance_type_name(NULL, 1, tb, sizeof tb), "type1");
    tide_cluster_destroy(c);
    tide_governance_free(&g);
}

static void expect_bad(const char *yaml, const char *needle)
{
    tide_error_t err = {0, ""};
    tide_governance_t g;
    memset(&g, 0x5a, sizeof g); /* untouched on failure: must not be freed */
    tide_cluster_t *c = load_gov(yaml, &g, &err);
    if (c) {
        tide_cluster_destroy(c);
        tide_governance_free(&g);
        fail_msg("YAML should be rejected:\n%s", yaml);
    }
    if (err.code != TIDE_EINVAL || !strstr(err.msg, needle))
        fail_msg("YAML:\n%s\ngave code %d '%s', expected EINVAL with '%s'", yaml, err.code,
                 err.msg, needle);
    /* the old entry point rejects it the same way */
    c = tide_cluster_file_load_mem(yaml, strlen(yaml), "gov.yaml", &err);
    assert_null(c);
    assert_non_null(strstr(err.msg, needle));
}

#define G1 "groups:\n  - {count: 4, gpus_per_node: 8, gpu_type: H100}\n"
#define G2 G1 "  - {count: 2, gpus_per_node: 8, gpu_type: A100}\n"

static void test_yaml_bad(void **state)
{
    (void)state;
    /* lines: G1 is 2 lines, G2 is 3 */
    expect_bad(G1 "teams:\n  - name: a\n    wieght: 2\n",
               "gov.yaml:5: team 1: unknown key 'wieght' (expected name, weight, quota, "
               "borrow_limit, lend_cap)");
    expect_bad(G1 "teams:\n  - name: a\n    weight: 0\n",
               "gov.yaml:5: 'weight' must be a number > 0, got 0");
    expect_bad(G1 "teams:\n  - name: a\n    weight: -1.5\n",
               "gov.yaml:5: 'weight' must be a number > 0, got -1.5");
    expect_bad(G1 "teams:\n  - name: a\n    weight: heavy\n",
               "gov.yaml:5: 'weight' must be a number > 0, got 'heavy'");
    expect_bad(G2 "teams:\n  - name: a\n    quota: {H100: 8, B200: 4}\n",
               "gov.yaml:6: team 'a': quota for unknown GPU type 'B200' (the cluster has: "
               "H100, A100)");
    expect_bad(G2 "teams:\n  - name: a\n    quota: 8\n",
               "gov.yaml:6: team 'a': 'quota' is one number but the cluster has 2 GPU types");
    expect_bad(G1 "teams:\n  - name: a\n    quota: -4\n",
               "gov.yaml:5: 'quota' must be a GPU count >= 0, got -4");
    expect_bad(G1 "teams:\n  - name: a\n    quota: 40\n",
               "gov.yaml:4: team 'a': quotas of H100 add up to 40 GPUs but the cluster has 32");
    expect_bad(G1 "teams:\n  - name: a\n    borrow_limit: -1\n",
               "gov.yaml:5: 'borrow_limit' must be a GPU count >= 0 or 'unlimited', got -1");
    expect_bad(G1 "teams:\n  - name: a\n    lend_cap: -8\n",
               "gov.yaml:5: 'lend_cap' must be a GPU count >= 0 or 'unlimited', got -8");
    expect_bad(G1 "teams:\n  - name: a\n    lend_cap: \"4\"\n",
               "gov.yaml:5: 'lend_cap' must be a GPU count >= 0 or 'unlimited', got the quoted "
               "string '4'");
    expect_bad(G1 "teams:\n  - weight: 2\n", "gov.yaml:4: team 1: missing 'name'");
    expect_bad(G1 "teams:\n  - name: a\n  - name: b\n  - name: a\n",
               "gov.yaml:6: team 'a' is defined twice (first on line 4)");
    expect_bad(G1 "teams:\n  - name: a\n    name: b\n", "gov.yaml:5: team 1: 'name' given twice");
    expect_bad(G1 "teams: {a: 1}\n", "gov.yaml:3: 'teams' must be a list of teams, got a mapping");
    expect_bad(G1 "teams:\n  - a\n", "gov.yaml:4: team 1 must be a mapping");
    expect_bad(G1 "teams: []\nteams: []\n", "gov.yaml:4: 'teams' given twice");
    expect_bad(G1 "prices:\n  H100: {serving: -2}\n",
               "gov.yaml:4: 'prices.H100.serving' must be a number >= 0, got -2");
    expect_bad(G1 "prices:\n  H100: {serving: cheap}\n",
               "gov.yaml:4: 'prices.H100.serving' must be a number >= 0, got 'cheap'");
    expect_bad(G1 "prices:\n  H100: {serving: .nan}\n",
               "gov.yaml:4: 'prices.H100.serving' must be a number >= 0, got '.nan'");
    expect_bad(G1 "prices:\n  H100: {servng: 2}\n",
               "gov.yaml:4: prices for 'H100': unknown category 'servng' (expected reserved, "
               "serving, training, lent, lost, idle)");
    expect_bad(G1 "prices:\n  H100: {idle: 1}\n  B200: {idle: 2}\n",
               "gov.yaml:5: prices for unknown GPU type 'B200' (the cluster has: H100; or use "
               "'default')");
    expect_bad(G1 "prices:\n  H100: 2.5\n", "gov.yaml:4: prices for 'H100' must be a map");
    expect_bad(G1 "prices:\n  H100: {idle: 1}\n  H100: {idle: 2}\n",
               "gov.yaml:5: prices for 'H100' given twice");
    expect_bad(G1 "fairshare:\n  enabled: maybe\n",
               "gov.yaml:4: 'enabled' must be true or false, got 'maybe'");
    expect_bad(G1 "fairshare:\n  half_life: 0\n",
               "gov.yaml:4: 'half_life' must be a positive duration (90s, 15m, 36h, 14d), got '0'");
    expect_bad(G1 "fairshare:\n  half_life: soon\n", "gov.yaml:4: 'half_life' must be a positive");
    expect_bad(G1 "fairshare:\n  decay: 1h\n",
               "gov.yaml:4: fairshare: unknown key 'decay' (expected enabled, half_life)");
    expect_bad(G1 "fairshare: on\n", "gov.yaml:3: 'fairshare' must be a map");
    expect_bad(G1 "budget: 3\n",
               "gov.yaml:3: unknown key 'budget' (expected 'groups', 'teams', 'prices', "
               "'fairshare', 'qos' or 'power')");
}

/* -------------------------------------------------------- engine scenarios */

#define TICK 300

typedef struct scen {
    ef_t *f;
    tide_governance_t g;
    tide_usage_t *u;
    char dir[256];
    int nteams;
    const char *teams[4];
    int max_used[4];         /* over the run, per team (engine's team_info) */
    tide_time_t reached[4];  /* first time a team held `want[i]` GPUs (-1 never) */
    int want[4];
    /* closed-loop top-up (fair-share scenario) */
    int topup[4];            /* keep this many jobs queued per team (0 = off) */
    int next_id;
    tide_time_t job_s;
    tide_time_t fail_at;     /* a rank failure of one running job of teams[1] (0 = none) */
    int failed;
} scen_t;

static int team_index(const ef_t *f, const char *name)
{
    for (int i = 0; i < tide_engine_teams(f->e); i++) {
        tide_team_stats_t ts;
        if (tide_engine_team(f->e, i, &ts) == 0 && !strcmp(ts.team, name))
            return i;
    }
    return -1;
}

static int queued_of(const ef_t *f, const char *team)
{
    int n = 0;
    for (int h = 0; h < tide_engine_jobs(f->e); h++) {
        tide_job_info_t ji;
        if (tide_engine_job(f->e, h, &ji) == 0 && ji.state == TIDE_JOB_QUEUED &&
            !strcmp(ji.spec->team, team))
            n++;
    }
    return n;
}

static void scen_hook(ef_t *f, tide_time_t t, void *ctx)
{
    scen_t *s = ctx;
    for (int i = 0; i < s->nteams; i++) {
        int ti = team_index(f, s->teams[i]);
        tide_team_info_t info;
        if (ti < 0 || tide_engine_team_info(f->e, ti, &info) != 0)
            continue;
        if (info.used_gpus > s->max_used[i])
            s->max_used[i] = info.used_gpus;
        if (s->want[i] > 0 && s->reached[i] < 0 && info.used_gpus >= s->want[i])
            s->reached[i] = t;
    }
    if (t % TICK != 0)
        return;
    if (s->fail_at > 0 && !s->failed && t >= s->fail_at) {
        for (int h = 0; h < tide_engine_jobs(f->e) && !s->failed; h++) {
            tide_job_info_t ji;
            if (tide_engine_job(f->e, h, &ji) == 0 && ji.state == TIDE_JOB_RUNNING &&
                !strcmp(ji.spec->team, s->teams[1])) {
                tide_event_t ev = ef_ev(TIDE_EV_RANK_FAILED);
                ev.job = h;
                ef_step(f, t, &ev, 1);
                s->failed = 1;
            }
        }
    }
    for (int i = 0; i < s->nteams; i++) {
        if (!s->topup[i])
            continue;
        int need = s->topup[i] - queued_of(f, s->teams[i]);
        if (need <= 0)
            continue;
        char (*ids)[32] = calloc((size_t)need, sizeof *ids);
        tide_job_spec_t *specs = calloc((size_t)need, sizeof *specs);
        tide_event_t *ev = calloc((size_t)need, sizeof *ev);
        for (int k = 0; k < need; k++) {
            snprintf(ids[k], sizeof ids[k], "%s-%d", s->teams[i], s->next_id++);
            specs[k] = ef_job(ids[k], 2, 1, 1, 1, s->job_s);
            specs[k].team = s->teams[i];
            specs[k].ckpt_interval_s = 1000000;
            ev[k] = ef_ev(TIDE_EV_JOB_SUBMIT);
            ev[k].job_spec = &specs[k];
        }
        ef_step(f, t, ev, (size_t)need);
        free(ids);
        free(specs);
        free(ev);
    }
    tide_usage_sample(s->u, "static", t, f->e);
}

static void scen_init(scen_t *s, const char *yaml, int fairshare, const char *const *teams,
                      int nteams)
{
    memset(s, 0, sizeof *s);
    tide_error_t err = {0};
    tide_cluster_t *c = tide_cluster_file_load_mem_ex(yaml, strlen(yaml), "s.yaml", &s->g, &err);
    if (!c)
        fail_msg("%s", err.msg);
    char spec[64];
    tide_cluster_format(c, spec, sizeof spec);
    tide_cluster_destroy(c);
    tide_config_t cfg = ef_cfg("static");
    assert_int_equal(tide_governance_apply(&s->g, NULL, &cfg, &err), 0);
    cfg.fairshare = fairshare; /* like --fairshare on|off: overrides the file */
    s->f = ef_new(spec, &cfg);
    s->f->track = 0; /* long runs: the engine's own check (Debug) is enough */
    if (tide_governance_apply(&s->g, s->f->e, NULL, &err) != 0)
        fail_msg("%s", err.msg);
    const char *base = getenv("TMPDIR");
    snprintf(s->dir, sizeof s->dir, "%s/tide_gov_XXXXXX", base && *base ? base : "/tmp");
    assert_non_null(mkdtemp(s->dir));
    s->u = tide_usage_open(s->dir, &s->g, &err);
    if (!s->u)
        fail_msg("%s", err.msg);
    s->nteams = nteams;
    for (int i = 0; i < nteams; i++) {
        s->teams[i] = teams[i];
        s->reached[i] = -1;
    }
    s->job_s = 3600;
}

/* Inputs: the given submissions plus a tick at every boundary up to `until`. */
static void scen_run(scen_t *s, ef_input_t *in, size_t n, tide_time_t until)
{
    size_t cap = n + (size_t)(until / TICK) + 2, k = n;
    in = realloc(in, cap * sizeof *in);
    for (tide_time_t t = 0; t <= until; t += TICK) {
        memset(&in[k], 0, sizeof in[k]);
        in[k].t = t;
        in[k].ev = ef_ev(TIDE_EV_TICK);
        k++;
    }
    ef_in_sort(in, k);
    ef_run(s->f, in, k, until, scen_hook, s);
    free(in);
    tide_error_t err = {0};
    if (tide_usage_close(s->u, &err) != 0)
        fail_msg("%s", err.msg);
    s->u = NULL;
}

static void rm_dir(const char *dir)
{
    static const char *const files[] = {"usage.csv", "usage_teams.csv", "usage_services.csv"};
    char p[512];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
}

static void scen_free(scen_t *s)
{
    tide_usage_close(s->u, NULL);
    rm_dir(s->dir);
    ef_free(s->f);
    tide_governance_free(&s->g);
}

static ef_input_t submit(tide_time_t t, const char *id, const char *team, int gpus, int gang,
                         tide_time_t dur)
{
    tide_job_spec_t j = ef_job(id, 2, gpus, gang, gang == gpus ? 1 : gpus / gang, dur);
    j.team = team;
    ef_input_t x = ef_in_submit(t, &j);
    /* the spec's strings must outlive the run: they are literals here */
    return x;
}

/* usage.csv sums: total and per team (kind team), checked against the engine. */
static void check_usage_totals(scen_t *s, tide_time_t horizon)
{
    char path[512];
    snprintf(path, sizeof path, "%s/usage.csv", s->dir);
    tide_error_t err = {0};
    tide_csv_t *c = tide_csv_open_file(path, &err);
    if (!c)
        fail_msg("%s", err.msg);
    int co = tide_csv_col(c, "owner"), ck = tide_csv_col(c, "kind"), cg = tide_csv_col(c, "gpu_s"),
        cc = tide_csv_col(c, "cost"), cs = tide_csv_col(c, "state");
    double total = 0, team[4] = {0}, lost = 0, cost = 0;
    int r;
    while ((r = tide_csv_next(c, &err)) == 1) {
        double v, x;
        assert_int_equal(tide_parse_double(tide_csv_field(c, cg), &v), 0);
        assert_int_equal(tide_parse_double(tide_csv_field(c, cc), &x), 0);
        total += v;
        cost += x;
        if (!strcmp(tide_csv_field(c, cs), "lost"))
            lost += v;
        if (strcmp(tide_csv_field(c, ck), "team") != 0)
            continue;
        for (int i = 0; i < s->nteams; i++)
            if (!strcmp(tide_csv_field(c, co), s->teams[i]))
                team[i] += v;
    }
    assert_int_equal(r, 0);
    tide_csv_close(c);
    double want = 32.0 * (double)horizon;
    if (fabs(total - want) > 0.01)
        fail_msg("usage.csv sums to %.3f GPU-s, the cluster had %.3f", total, want);
    for (int i = 0; i < s->nteams; i++) {
        tide_team_stats_t ts;
        int ti = team_index(s->f, s->teams[i]);
        if (ti < 0) {
            assert_true(team[i] == 0);
            continue;
        }
        assert_int_equal(tide_engine_team(s->f->e, ti, &ts), 0);
        if (fabs(team[i] - ts.gpu_s) > 0.01)
            fail_msg("team %s: usage.csv %.3f GPU-s, engine %.3f", s->teams[i], team[i], ts.gpu_s);
    }
    /* tide usage DIR: the aggregation and the report give the same totals */
    tide_usage_query_t q;
    memset(&q, 0, sizeof q);
    q.keys[0] = TIDE_UK_OWNER;
    q.n_keys = 1;
    tide_usage_table_t t;
    if (tide_usage_aggregate(s->dir, &q, &t, &err) != 0)
        fail_msg("%s", err.msg);
    assert_true(fabs(t.gpu_s - want) < 0.01);
    assert_true(fabs(t.cost - cost) < 1e-6);
    double lost_row = 0;
    for (size_t i = 0; i < t.n; i++) {
        if (!strcmp(t.rows[i].key[TIDE_UK_OWNER], TIDE_USAGE_LOST_OWNER))
            lost_row = t.rows[i].gpu_s;
        for (int k = 0; k < s->nteams; k++)
            if (!strcmp(t.rows[i].key[TIDE_UK_OWNER], s->teams[k])) {
                tide_team_stats_t ts;
                tide_engine_team(s->f->e, team_index(s->f, s->teams[k]), &ts);
                /* a team's line excludes its lost work: that is the policy's */
                assert_true(fabs(t.rows[i].gpu_s - (ts.gpu_s - ts.lost_gpu_s)) < 0.01);
            }
    }
    assert_true(fabs(lost_row - lost) < 0.01);
    tide_usage_table_free(&t);
    json_t *rep = tide_usage_report(s->dir, NULL, NULL, &err);
    if (!rep)
        fail_msg("%s", err.msg);
    json_t *p = json_object_get(json_object_get(rep, "policies"), "static");
    assert_non_null(p);
    double rep_total = json_number_value(json_object_get(json_object_get(p, "total"), "gpu_hours"));
    assert_true(fabs(rep_total * 3600 - want) < 0.01);
    double by_class = 0;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(p, "by_class"), k, v)
        by_class += json_number_value(json_object_get(v, "gpu_hours"));
    assert_true(fabs(by_class * 3600 - want) < 0.01);
    json_decref(rep);
}

static const char *const AB[] = {"a", "b"};

/* A's quota of 16 holds: B borrows the whole pool while A is idle; when A
 * submits, B gets checkpoint notices (reason quota) and A reaches 16 GPUs. */
static void test_quota_guarantee(void **state)
{
    (void)state;
    scen_t s;
    scen_init(&s, "groups: [{count: 4, gpus_per_node: 8}]\n"
                  "teams: [{name: a, quota: 16}, {name: b}]\n"
                  "prices: {default: {training: 2, idle: 0.5, lost: 3}}\n",
                  1, AB, 2);
    s.want[0] = 16;
    s.want[1] = 32;
    s.fail_at = 10 * 3600;
    size_t n = 0, cap = 0;
    ef_input_t *in = NULL;
    static const char *const bj[] = {"b1", "b2", "b3", "b4", "b5", "b6"};
    static const char *const aj[] = {"a1", "a2"};
    for (int i = 0; i < 6; i++)
        ef_in_push(&in, &n, &cap, submit(0, bj[i], "b", 8, 8, 20 * 3600));
    for (int i = 0; i < 2; i++)
        ef_in_push(&in, &n, &cap, submit(2 * 3600, aj[i], "a", 8, 8, 20 * 3600));
    scen_run(&s, in, n, 16 * 3600);
    /* B held the whole pool before A came */
    assert_true(s.reached[1] >= 0 && s.reached[1] < 2 * 3600);
    /* A got its guarantee, promptly (checkpoint 60 s + ticks) */
    if (!(s.reached[0] >= 2 * 3600 && s.reached[0] <= 2 * 3600 + 900))
        fail_msg("team a reached 16 GPUs at t=%lld", (long long)s.reached[0]);
    size_t notices = ef_count(s.f, 0, TIDE_ACT_JOB_CKPT, TIDE_R_QUOTA, -1);
    assert_true(notices >= 2);
    for (size_t i = 0; i < s.f->nlog; i++) {
        const ef_act_t *x = &s.f->log[i];
        if (x->a.kind == TIDE_ACT_JOB_CKPT && x->a.reason == TIDE_R_QUOTA) {
            tide_job_info_t ji = ef_info(s.f, x->a.job);
            assert_string_equal(ji.spec->team, "b"); /* only the borrower */
            assert_true(x->t >= 2 * 3600);
        }
    }
    assert_true(ef_count(s.f, 0, TIDE_ACT_JOB_STOP, TIDE_R_QUOTA, -1) >= 2);
    /* and kept it while its jobs ran */
    tide_team_info_t ti;
    assert_int_equal(tide_engine_team_info(s.f->e, team_index(s.f, "a"), &ti), 0);
    assert_int_equal(ti.used_gpus, 16);
    assert_int_equal(ti.borrowed_gpus, 0);
    assert_int_equal(s.max_used[0], 16);
    /* the injected failure lost work: accounted, charged to the policy */
    tide_team_stats_t ts;
    assert_int_equal(tide_engine_team(s.f->e, team_index(s.f, "b"), &ts), 0);
    assert_true(ts.lost_gpu_s > 0);
    check_usage_totals(&s, 16 * 3600);
    scen_free(&s);
}

/* B (quota 8, borrow_limit 4) never holds more than 12 GPUs, though 20 stay idle. */
static void test_borrow_limit(void **state)
{
    (void)state;
    scen_t s;
    scen_init(&s, "groups: [{count: 4, gpus_per_node: 8}]\n"
                  "teams: [{name: a, quota: 16}, {name: b, quota: 8, borrow_limit: 4}]\n",
                  1, AB, 2);
    s.want[1] = 12;
    size_t n = 0, cap = 0;
    ef_input_t *in = NULL;
    static const char *const bj[] = {"b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8"};
    for (int i = 0; i < 8; i++)
        ef_in_push(&in, &n, &cap, submit(0, bj[i], "b", 4, 4, 3 * 3600));
    scen_run(&s, in, n, 8 * 3600);
    assert_int_equal(s.max_used[1], 12); /* quota + borrow_limit, reached */
    assert_true(s.reached[1] == 0);
    tide_stats_t st;
    tide_engine_stats(s.f->e, &st);
    assert_true(st.idle_while_queued_gpu_s > 0); /* the limit, not the capacity, binds */
    check_usage_totals(&s, 8 * 3600);
    scen_free(&s);
}

/* A owns the whole pool with lend_cap 8: others never borrow more than 8. */
static void test_lend_cap(void **state)
{
    (void)state;
    scen_t s;
    scen_init(&s, "groups: [{count: 4, gpus_per_node: 8}]\n"
                  "teams: [{name: a, quota: 32, lend_cap: 8}, {name: b}]\n",
                  1, AB, 2);
    s.want[1] = 8;
    size_t n = 0, cap = 0;
    ef_input_t *in = NULL;
    static const char *const bj[] = {"b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8"};
    for (int i = 0; i < 8; i++)
        ef_in_push(&in, &n, &cap, submit(0, bj[i], "b", 4, 4, 3 * 3600));
    scen_run(&s, in, n, 8 * 3600);
    assert_int_equal(s.max_used[1], 8);
    assert_true(s.reached[1] == 0);
    scen_free(&s);
}

/* Three teams with weights 1, 2, 3, always with queued 1-GPU jobs of one
 * hour, no quotas. Team a keeps 3x as many jobs queued (and is topped up
 * first): under FIFO that wins it the most GPUs; under fair share the
 * GPU-hour shares converge to the weights. */
static void fair_run(int fairshare, double share[3])
{
    static const char *const T3[] = {"a", "b", "c"};
    scen_t s;
    scen_init(&s, "groups: [{count: 4, gpus_per_node: 8}]\n"
                  "teams: [{name: a, weight: 1}, {name: b, weight: 2}, {name: c, weight: 3}]\n"
                  "fairshare: {half_life: 24h}\n",
                  fairshare, T3, 3);
    s.topup[0] = 60;
    s.topup[1] = 20;
    s.topup[2] = 20;
    tide_time_t horizon = 6 * 86400;
    scen_run(&s, NULL, 0, horizon);
    double tot = 0, g[3];
    for (int i = 0; i < 3; i++) {
        tide_team_stats_t ts;
        assert_int_equal(tide_engine_team(s.f->e, team_index(s.f, T3[i]), &ts), 0);
        g[i] = ts.gpu_s;
        tot += g[i];
    }
    for (int i = 0; i < 3; i++)
        share[i] = g[i] / tot;
    print_message("fairshare %s: shares a %.4f b %.4f c %.4f (busy %.1f%%)\n",
                  fairshare ? "on " : "off", share[0], share[1], share[2],
                  100 * tot / (32.0 * (double)horizon));
    assert_true(tot > 0.99 * 32.0 * (double)horizon); /* contended all along */
    check_usage_totals(&s, horizon);
    scen_free(&s);
}

static void test_fair_share_weights(void **state)
{
    (void)state;
    double on[3], off[3];
    const double want[3] = {1.0 / 6, 2.0 / 6, 3.0 / 6};
    fair_run(1, on);
    for (int i = 0; i < 3; i++)
        if (fabs(on[i] - want[i]) > 0.05)
            fail_msg("fair share: team %d got %.4f, weight share %.4f", i, on[i], want[i]);
    fair_run(0, off);
    double worst = 0;
    for (int i = 0; i < 3; i++)
        worst = fmax(worst, fabs(off[i] - want[i]));
    if (worst <= 0.05)
        fail_msg("FIFO should not follow the weights for this arrival pattern (off by %.4f)",
                 worst);
    assert_true(off[0] > on[0] + 0.2); /* FIFO favours the team that queues the most */
}

/* The sampler shared by usage.csv and the daemon's snapshots
 * (tide_usage_cells): on a two-type cluster with a service and training,
 * the idle cells of each tier sum over the types to the engine's idle
 * GPU-seconds of that tier; each team's and service's cells to the engine's
 * figures; and the type varies fastest (the daemon sums consecutive cells). */
typedef struct cells {
    double idle[TIDE_T_COUNT];
    double team, svc, foreign;
    double by_type[TIDE_MAX_GPU_TYPES];
    int n, out_of_order;
    tide_usage_cell_t prev;
} cells_t;

static void cell_add(void *ctx, const tide_usage_cell_t *c)
{
    cells_t *x = ctx;
    if (x->n && c->type > 0 &&
        (c->type != x->prev.type + 1 || c->kind != x->prev.kind || c->tier != x->prev.tier ||
         c->state != x->prev.state || c->cls != x->prev.cls || c->index != x->prev.index))
        x->out_of_order++;
    if (c->kind == TIDE_OWNER_IDLE)
        x->idle[c->tier] += c->gpu_s;
    else if (c->kind == TIDE_OWNER_TEAM)
        x->team += c->gpu_s;
    else if (c->kind == TIDE_OWNER_FOREIGN)
        x->foreign += c->gpu_s;
    else
        x->svc += c->gpu_s;
    if (c->type >= 0 && c->type < TIDE_MAX_GPU_TYPES)
        x->by_type[c->type] += c->gpu_s;
    x->prev = *c;
    x->n++;
}

/* A two-type cluster after 2 h with a service (*svc) and two jobs. */
static ef_t *two_types(int *svc)
{
    static tide_job_spec_t j1, j2; /* the engine may keep the pointers */
    tide_config_t cfg = ef_cfg("elastic");
    cfg.reserve_gpus = 8;
    ef_t *f = ef_new("2x8:h100,2x8:a100", &cfg);
    int s = ef_service(f, "chat", 8, 100, 1, 60);
    ef_tick(f, 0);
    ef_demand(f, 10, s, 150);
    j1 = ef_job("j1", 2, 8, 8, 1, 20000);
    j2 = ef_job("j2", 3, 16, 8, 1, 20000);
    ef_submit(f, 20, &j1);
    ef_submit(f, 30, &j2);
    ef_ticks(f, 7200, 60);
    *svc = s;
    return f;
}

static void test_usage_cells_margins(void **state)
{
    (void)state;
    int s;
    ef_t *f = two_types(&s);
    cells_t x;
    memset(&x, 0, sizeof x);
    tide_usage_cells(f->e, NULL, cell_add, &x);
    assert_int_equal(x.out_of_order, 0);
    assert_true(x.n > 0);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    double total_idle = 0;
    for (int r = 0; r < TIDE_T_COUNT; r++) {
        double want = 0;
        for (int c = 0; c < TIDE_C_COUNT; c++)
            want += st.gpu_s[c][TIDE_S_IDLE][r];
        total_idle += want;
        assert_true(fabs(x.idle[r] - want) <= 1e-6 * (1 + want));
    }
    assert_true(total_idle > 0);
    double team = 0, svc = 0;
    for (int k = 0; k < 2; k++)
        for (int c = 0; c < TIDE_C_COUNT; c++)
            for (int st2 = 0; st2 < TIDE_S_COUNT; st2++)
                for (int r = 0; r < TIDE_T_COUNT; r++) {
                    for (int i = 0; i < tide_engine_teams(f->e); i++)
                        team += tide_engine_team_gpu_s(f->e, i, c, st2, r, k);
                    if (c == 0)
                        svc += tide_engine_service_gpu_s(f->e, s, st2, r, k);
                }
    assert_true(team > 0 && svc > 0);
    assert_true(fabs(x.team - team) <= 1e-6 * team);
    assert_true(fabs(x.svc - svc) <= 1e-6 * svc);
    ef_free(f);
}

/* The bulk accessors behind the usage sampler give, bit for bit, what the
 * per-cell accessors give, in the documented order; a bad index or a short
 * buffer is refused. */
static void test_gpu_s_all(void **state)
{
    (void)state;
    int s;
    ef_t *f = two_types(&s);
    enum { NT = 2, TEAM_N = TIDE_C_COUNT * TIDE_S_COUNT * TIDE_T_COUNT * NT };
    double v[TEAM_N];
    double nonzero = 0;
    for (int i = 0; i < tide_engine_teams(f->e); i++) {
        for (int k = 0; k < TEAM_N; k++)
            v[k] = NAN; /* every cell is written, the skipped rows too */
        assert_int_equal(tide_engine_team_gpu_s_all(f->e, i, v, TEAM_N), TEAM_N);
        int k = 0;
        for (int c = 0; c < TIDE_C_COUNT; c++)
            for (int st = 0; st < TIDE_S_COUNT; st++)
                for (int r = 0; r < TIDE_T_COUNT; r++)
                    for (int t = 0; t < NT; t++, k++) {
                        double one = tide_engine_team_gpu_s(f->e, i, c, st, r, t);
                        assert_memory_equal(&v[k], &one, sizeof one);
                        if (!tide_engine_team_cell_live(c, st)) /* rows no job is in */
                            assert_true(one == 0);
                        nonzero += one;
                    }
    }
    assert_true(tide_engine_team_cell_live(TIDE_C_P1, TIDE_S_TRAINING));
    assert_true(tide_engine_team_cell_live(TIDE_C_P3, TIDE_S_LOST));
    assert_false(tide_engine_team_cell_live(TIDE_C_INFERENCE, TIDE_S_TRAINING));
    assert_false(tide_engine_team_cell_live(TIDE_C_P2, TIDE_S_SERVING));
    assert_int_equal(tide_engine_service_gpu_s_all(f->e, s, v, TEAM_N),
                     TIDE_S_COUNT * TIDE_T_COUNT * NT);
    for (int st = 0, k = 0; st < TIDE_S_COUNT; st++)
        for (int r = 0; r < TIDE_T_COUNT; r++)
            for (int t = 0; t < NT; t++, k++) {
                double one = tide_engine_service_gpu_s(f->e, s, st, r, t);
                assert_memory_equal(&v[k], &one, sizeof one);
                nonzero += one;
            }
    assert_true(nonzero > 0);
    assert_int_equal(tide_engine_team_gpu_s_all(f->e, -1, v, TEAM_N), -1);
    assert_int_equal(tide_engine_team_gpu_s_all(f->e, tide_engine_teams(f->e), v, TEAM_N), -1);
    assert_int_equal(tide_engine_team_gpu_s_all(f->e, 0, v, TEAM_N - 1), -1);
    assert_int_equal(tide_engine_service_gpu_s_all(f->e, s + 1, v, TEAM_N), -1);
    assert_int_equal(tide_engine_service_gpu_s_all(f->e, s, v, 3), -1);
    ef_free(f);
}

/* GPUs that jobs tide does not manage hold (TIDE_EV_FOREIGN) are in the
 * cells as kind foreign / class none / state foreign, so that the cells add
 * up to the cluster's GPUs x the elapsed time, per GPU type too, while
 * foreign jobs come, change and go next to tide's training and replicas. */
static void foreign_ev(ef_t *f, tide_time_t t, int node, double gpus)
{
    tide_event_t ev = ef_ev(TIDE_EV_FOREIGN);
    ev.node = node;
    ev.value = gpus;
    ef_step(f, t, &ev, 1);
}

static void test_usage_cells_foreign(void **state)
{
    (void)state;
    tide_config_t cfg = ef_cfg("elastic");
    cfg.reserve_gpus = 8;
    ef_t *f = ef_new("2x8:h100,2x8:a100", &cfg);
    int s = ef_service(f, "chat", 8, 100, 1, 60);
    ef_tick(f, 0);
    foreign_ev(f, 5, 1, 3); /* an h100 node */
    foreign_ev(f, 5, 3, 2); /* an a100 node */
    ef_demand(f, 10, s, 150);
    tide_job_spec_t j1 = ef_job("j1", 2, 16, 8, 1, 20000);
    ef_submit(f, 20, &j1);
    ef_ticks(f, 3600, 60);
    foreign_ev(f, 3605, 3, 0); /* the a100 foreign job ends */
    ef_ticks(f, 7200, 60);
    cells_t x;
    memset(&x, 0, sizeof x);
    tide_usage_cells(f->e, NULL, cell_add, &x);
    assert_int_equal(x.out_of_order, 0);
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    double elapsed = (double)(st.now - st.start);
    assert_true(elapsed > 3605);
    /* the engine's foreign GPU-seconds, and the cells' */
    double want = 0;
    for (int r = 0; r < TIDE_T_COUNT; r++)
        want += st.gpu_s[TIDE_C_NONE][TIDE_S_FOREIGN][r];
    assert_true(want > 0);
    assert_true(fabs(x.foreign - want) <= 1e-6 * want);
    /* node 1 held 3 from t=5 to the end, node 3 held 2 from t=5 to t=3605 */
    double held = 3.0 * ((double)st.now - 5) + 2.0 * 3600;
    assert_true(fabs(x.foreign - held) <= 1e-6 * held);
    assert_true(x.team > 0 && x.svc > 0);
    double total = x.team + x.svc + x.foreign;
    for (int r = 0; r < TIDE_T_COUNT; r++)
        total += x.idle[r];
    double gpus_x_time = 32.0 * elapsed;
    if (fabs(total - gpus_x_time) > 1e-6 * gpus_x_time)
        fail_msg("cells sum to %.1f GPU-s, the cluster had %.1f (foreign %.1f)", total,
                 gpus_x_time, x.foreign);
    for (int k = 0; k < 2; k++) { /* and per type: 16 GPUs of each */
        assert_int_equal(tide_engine_type_gpus(f->e, k, NULL), 16);
        assert_true(fabs(x.by_type[k] - 16.0 * elapsed) <= 1e-6 * 16.0 * elapsed);
    }
    ef_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_yaml_good),
        cmocka_unit_test(test_yaml_bad),
        cmocka_unit_test(test_quota_guarantee),
        cmocka_unit_test(test_borrow_limit),
        cmocka_unit_test(test_lend_cap),
        cmocka_unit_test(test_fair_share_weights),
        cmocka_unit_test(test_usage_cells_margins),
        cmocka_unit_test(test_gpu_s_all),
        cmocka_unit_test(test_usage_cells_foreign),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
