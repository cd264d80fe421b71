/* Unit tests: cluster YAML loader. */
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

#include "formats/cluster_file.h"
#include "formats/governance.h"

static tide_cluster_t *load_str(const char *s, tide_error_t *err)
{
    return tide_cluster_file_load_mem(s, strlen(s), "c.yaml", err);
}

static void expect_bad(const char *yaml, int code, const char *needle)
{
    tide_error_t err = {0, ""};
    tide_cluster_t *c = load_str(yaml, &err);
    if (c) {
        tide_cluster_destroy(c);
        fail_msg("YAML should be rejected:\n%s", yaml);
    }
    if (err.code != code || !strstr(err.msg, needle))
        fail_msg("YAML:\n%s\ngave code %d '%s', expected %d with '%s'", yaml, err.code, err.msg,
                 code, needle);
}

static void test_good(void **state)
{
    (void)state;
    const char *y = "# cluster.yaml\n"
                    "groups:\n"
                    "  - count: 16          # nodes\n"
                    "    gpus_per_node: 8\n"
                    "    gpu_type: H100\n"
                    "    domain_nodes: 2\n"
                    "    rack_nodes: 4\n"
                    "    power_nodes: 8\n"
                    "  - count: 18\n"
                    "    gpus_per_node: 4\n"
                    "    gpu_type: \"GB200\"\n"
                    "    domain_nodes: 18\n"
                    "  - {count: 3, gpus_per_node: 2}\n";
    tide_error_t err;
    tide_cluster_t *c = load_str(y, &err);
    if (!c)
        fail_msg("%s", err.msg);
    assert_int_equal(tide_cluster_nodes(c), 37);
    assert_int_equal(tide_cluster_gpus(c), 128 + 72 + 6);
    assert_int_equal(tide_cluster_domains(c), 8 + 1 + 3);
    assert_int_equal(tide_cluster_types(c), 3);
    assert_string_equal(tide_cluster_type_name(c, 2), "gpu");
    assert_int_equal(tide_cluster_max_domain_gpus(c), 72);
    tide_node_group_t g;
    assert_int_equal(tide_cluster_group(c, 0, &g), 0);
    assert_int_equal(g.power_nodes, 8);
    assert_int_equal(g.rack_nodes, 4);
    assert_int_equal(tide_cluster_group(c, 1, &g), 0);
    assert_int_equal(g.rack_nodes, 4);  /* default */
    assert_int_equal(g.power_nodes, 4); /* default = rack */
    assert_int_equal(tide_cluster_power_domains(c), 2 + 5 + 1);
    tide_node_info_t n;
    assert_int_equal(tide_cluster_node(c, 15, &n), 0);
    assert_int_equal(n.domain, 7);
    assert_int_equal(n.power, 1);
    assert_int_equal(tide_cluster_node(c, 36, &n), 0);
    assert_int_equal(n.first_gpu, 204);
    char buf[128];
    tide_cluster_format(c, buf, sizeof buf);
    assert_string_equal(buf, "16x8:H100/2,18x4:GB200/18,3x2:gpu");
    tide_cluster_destroy(c);

    /* flow style and an explicit document marker */
    c = load_str("---\n{groups: [{count: 2, gpus_per_node: 8, gpu_type: A100}]}\n...\n", &err);
    assert_non_null(c);
    assert_int_equal(tide_cluster_gpus(c), 16);
    tide_cluster_destroy(c);
}

static void test_bad(void **state)
{
    (void)state;
    expect_bad("", TIDE_EINVAL, "c.yaml:1: empty file");
    expect_bad("# nothing\n", TIDE_EINVAL, "empty file");
    expect_bad("groups: [\n", TIDE_EINVAL, "c.yaml:2: YAML syntax error");
    expect_bad("groups:\n  - count: 1\n\tgpus_per_node: 8\n", TIDE_EINVAL,
               "c.yaml:3: YAML syntax error: found a tab character");
    expect_bad("groups:\n  - count: 1\n    gpus_per_node: 8: 9\n", TIDE_EINVAL,
               "c.yaml:3: YAML syntax error: mapping values are not allowed");
    expect_bad("- 1\n- 2\n", TIDE_EINVAL, "c.yaml:1: the top level must be a mapping");
    expect_bad("groups:\n  - count: 2\n", TIDE_EINVAL, "c.yaml:2: group 1: missing 'gpus_per_node'");
    expect_bad("groups:\n  - gpus_per_node: 2\n", TIDE_EINVAL, "c.yaml:2: group 1: missing 'count'");
    expect_bad("groups:\n  - count: 2\n    gpus_per_node: 8\n    gpu: H100\n", TIDE_EINVAL,
               "c.yaml:4: group 1: unknown key 'gpu'");
    expect_bad("groups:\n  - count: two\n    gpus_per_node: 8\n", TIDE_EINVAL,
               "c.yaml:2: 'count' must be a whole number, got 'two'");
    expect_bad("groups:\n  - count: \"2\"\n    gpus_per_node: 8\n", TIDE_EINVAL,
               "c.yaml:2: 'count' must be a number, got the quoted string '2'");
    expect_bad("groups:\n  - count: [2]\n    gpus_per_node: 8\n", TIDE_EINVAL,
               "c.yaml:2: 'count' must be a number, got a list");
    expect_bad("groups:\n  - count: 0\n    gpus_per_node: 8\n", TIDE_EINVAL,
               "c.yaml:2: 'count' must be 1..65536, got 0");
    expect_bad("groups:\n  - count: 2\n    gpus_per_node: 65\n", TIDE_EINVAL,
               "c.yaml:3: 'gpus_per_node' must be 1..64, got 65");
    expect_bad("groups:\n  - count: 4\n    gpus_per_node: 8\n    domain_nodes: 3\n", TIDE_EINVAL,
               "c.yaml:2: group 1: domain_nodes (3) must divide the node count (4)");
    expect_bad("groups:\n  - count: 4\n    count: 4\n", TIDE_EINVAL,
               "c.yaml:3: group 1: 'count' given twice");
    expect_bad("groups:\n  - count: 4\n    gpus_per_node: 8\n    gpu_type: {a: 1}\n", TIDE_EINVAL,
               "c.yaml:4: 'gpu_type' must be a name, got a mapping");
    expect_bad("groups:\n  - count: 4\n    gpus_per_node: 8\n    gpu_type: \"H 100\"\n",
               TIDE_EINVAL, "c.yaml:2: group 1: GPU type name 'H 100' has an invalid character");
    expect_bad("groups:\n  - count: 4\n    gpus_per_node: 8\n    gpu_type:\n", TIDE_EINVAL,
               "c.yaml:4: 'gpu_type' is empty");
    expect_bad("groups: []\n", TIDE_EINVAL, "c.yaml:1: 'groups' is empty");
    expect_bad("groups: 3\n", TIDE_EINVAL, "c.yaml:1: 'groups' must be a list");
    expect_bad("groups:\n  - 3\n", TIDE_EINVAL, "c.yaml:2: group 1 must be a mapping");
    expect_bad("nodes: 3\n", TIDE_EINVAL,
               "c.yaml:1: unknown key 'nodes' (expected 'groups', 'teams', 'prices', "
               "'fairshare', 'qos' or 'power')");
    /* the governance section is parsed (tests/unit/test_governance.c) and
     * validated even by the functions that discard it */
    /* weights and prices: plain decimals up to TIDE_CF_MAX_REAL */
    expect_bad("groups:\n  - {count: 1, gpus_per_node: 1}\nteams:\n  - {name: a, weight: 1e300}\n",
               TIDE_EINVAL, "c.yaml:4: 'weight' must be at most 1e+06");
    expect_bad("groups:\n  - {count: 1, gpus_per_node: 1}\nteams:\n  - {name: a, weight: 0x10}\n",
               TIDE_EINVAL, "'weight' must be a number > 0, got '0x10'");
    expect_bad("groups:\n  - {count: 1, gpus_per_node: 1}\nprices:\n  default: {idle: 1e7}\n",
               TIDE_EINVAL, "'prices.default.idle' must be at most 1e+06");
    expect_bad("groups:\n  - {count: 1, gpus_per_node: 1}\nteams:\n  - a\n", TIDE_EINVAL,
               "c.yaml:4: team 1 must be a mapping");
    expect_bad("prices: {}\n", TIDE_EINVAL, "c.yaml:1: missing 'groups'");
    expect_bad("groups:\n  - {count: 1, gpus_per_node: 1}\ngroups: []\n", TIDE_EINVAL,
               "c.yaml:3: 'groups' given twice");
    expect_bad("x: &a 1\ngroups: *a\n", TIDE_EINVAL, "unknown key 'x'");
    expect_bad("groups:\n  - &g {count: 1, gpus_per_node: 1}\n  - *g\n", TIDE_EINVAL,
               "c.yaml:3: aliases (*name) are not supported");
    expect_bad("{groups: [{count: 1, gpus_per_node: 1}]}\n---\n{}\n", TIDE_EINVAL,
               "c.yaml:2: more than one YAML document");
    expect_bad("comment: \"x\"\n", TIDE_EINVAL, "unknown key 'comment'");
    expect_bad("[1]: 2\n", TIDE_EINVAL, "keys must be plain names");
    expect_bad("groups:\n  - count: 65536\n    gpus_per_node: 8\n  - count: 1\n    gpus_per_node: 8\n",
               TIDE_ERANGE, "c.yaml:4: group 2: too many nodes");
    static const char nul[] = "groups: [\0]\n";
    tide_error_t err;
    assert_null(tide_cluster_file_load_mem(nul, sizeof nul - 1, NULL, &err));
    assert_non_null(strstr(err.msg, "<memory>:1:"));
}

static void test_file_and_arg(void **state)
{
    (void)state;
    char dir[] = "/tmp/tide_cf_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/cluster.yaml", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("groups:\n  - count: 25\n    gpus_per_node: 8\n    gpu_type: H100\n", f);
    fclose(f);
    tide_error_t err;
    tide_cluster_t *c = tide_cluster_file_load(path, &err);
    assert_non_null(c);
    assert_int_equal(tide_cluster_gpus(c), 200);
    tide_cluster_destroy(c);
    c = tide_cluster_file_from_arg(path, &err);
    assert_non_null(c);
    assert_int_equal(tide_cluster_nodes(c), 25);
    tide_cluster_destroy(c);
    c = tide_cluster_file_from_arg("4x8:A100", &err);
    assert_non_null(c);
    assert_int_equal(tide_cluster_gpus(c), 32);
    tide_cluster_destroy(c);
    assert_null(tide_cluster_file_from_arg("4x8:", &err));
    assert_null(tide_cluster_file_from_arg(NULL, &err));

    f = fopen(path, "w");
    fputs("groups:\n  - count: 25\n    gpus_per_node: nine\n", f);
    fclose(f);
    assert_null(tide_cluster_file_load(path, &err));
    char want[300];
    snprintf(want, sizeof want, "%s:3: 'gpus_per_node' must be a whole number", path);
    if (!strstr(err.msg, want))
        fail_msg("got '%s'", err.msg);

    unlink(path);
    assert_null(tide_cluster_file_load(path, &err));
    assert_int_equal(err.code, TIDE_ENOENT);
    assert_null(tide_cluster_file_from_arg(path, &err));
    assert_int_equal(err.code, TIDE_ENOENT);
    assert_null(tide_cluster_file_load(dir, &err));
    assert_int_equal(err.code, TIDE_EIO);
    rmdir(dir);
}

/* qos: QOS names to priorities (tide sbatch --qos). */
static void test_qos(void **state)
{
    (void)state;
    const char *y = "groups:\n  - {count: 1, gpus_per_node: 8}\nqos:\n  urgent: 1\n  normal: P2\n"
                    "  scavenger: p3\n";
    tide_governance_t g;
    tide_error_t err = {0};
    tide_cluster_t *c = tide_cluster_file_load_mem_ex(y, strlen(y), "q.yaml", &g, &err);
    if (!c)
        fail_msg("%s", err.msg);
    assert_int_equal(g.n_qos, 3);
    assert_int_equal(tide_governance_qos(&g, "urgent"), 1);
    assert_int_equal(tide_governance_qos(&g, "normal"), 2);
    assert_int_equal(tide_governance_qos(&g, "scavenger"), 3);
    assert_int_equal(tide_governance_qos(&g, "gold"), -1);
    assert_int_equal(tide_governance_qos(NULL, "urgent"), -1);
    tide_governance_free(&g);
    tide_cluster_destroy(c);
    expect_bad("groups:\n  - {count: 1, gpus_per_node: 1}\nqos:\n  a: 4\n", TIDE_EINVAL,
               "c.yaml:4: qos: 'a' must map to a priority 1..3 (or P1..P3), got '4'");
    expect_bad("groups:\n  - {count: 1, gpus_per_node: 1}\nqos:\n  a: 1\n  a: 2\n", TIDE_EINVAL,
               "c.yaml:5: qos: 'a' given twice");
    expect_bad("groups:\n  - {count: 1, gpus_per_node: 1}\nqos: [a]\n", TIDE_EINVAL,
               "c.yaml:3: 'qos' must be a map");
    expect_bad("groups:\n  - {count: 1, gpus_per_node: 1}\nqos:\n  a: {b: 1}\n", TIDE_EINVAL,
               "c.yaml:4:");
}

/* power: budgets per power domain (per group) and models per GPU type. */
static void test_power(void **state)
{
    (void)state;
    const char *y = "groups:\n  - {count: 8, gpus_per_node: 8, gpu_type: H100, power_nodes: 4,\n"
                    "     power_budget_w: 19040}\n  - {count: 2, gpus_per_node: 4, gpu_type: L4}\n"
                    "power:\n  L4: {tdp: 72, idle: 16, serving_idle: 20, serving_full: 70,\n"
                    "       training: 70, checkpoint: 30, min_cap: 40,\n"
                    "       curve: {1.0: 1.0, 0.75: 0.9, 0.5: 0.7}}\n  H100: {training: 620}\n";
    tide_error_t err = {0};
    tide_cluster_t *c = load_str(y, &err);
    if (!c)
        fail_msg("%s", err.msg);
    assert_int_equal(tide_cluster_power_domains(c), 3);
    assert_true(tide_cluster_power_budget(c, 0) == 19040);
    assert_true(tide_cluster_power_budget(c, 1) == 19040);
    assert_true(tide_cluster_power_budget(c, 2) == 0);
    const tide_power_model_t *h = tide_cluster_power_model(c, 0), *l = tide_cluster_power_model(c, 1);
    assert_true(h->train_w == 620 && h->tdp_w == 700); /* the rest are defaults */
    assert_true(l->tdp_w == 72 && l->min_cap_w == 40 && l->n_curve == 3);
    assert_true(fabs(tide_power_speed(l, 0.75 * 70) - 0.9) < 1e-9);
    tide_cluster_destroy(c);
    expect_bad("groups:\n  - {count: 1, gpus_per_node: 8, power_budget_w: -5}\n", TIDE_EINVAL,
               "c.yaml:2: 'power_budget_w' must be watts in 0..1e9, got '-5'");
    expect_bad("groups:\n  - {count: 1, gpus_per_node: 8}\npower:\n  A100: {tdp: 400}\n",
               TIDE_EINVAL, "c.yaml:4: power model for unknown GPU type 'A100'");
    expect_bad("groups:\n  - {count: 1, gpus_per_node: 8}\npower:\n  gpu: {min_cap: 900}\n",
               TIDE_EINVAL, "c.yaml:4: power model of gpu: need 0 < min_cap <= training");
    expect_bad("groups:\n  - {count: 1, gpus_per_node: 8}\npower:\n  gpu: {watts: 9}\n",
               TIDE_EINVAL, "c.yaml:4: power model of 'gpu': unknown key 'watts'");
    expect_bad("groups:\n  - {count: 1, gpus_per_node: 8}\npower:\n  gpu: {curve: {0.5: 0.9, 0.8: 0.95}}\n",
               TIDE_EINVAL, "curve cap fractions must descend");
}

/* uplink_gbps: each rack of a group gets it; copies keep it. */
static void test_uplink(void **state)
{
    (void)state;
    const char *y = "groups:\n  - {count: 8, gpus_per_node: 8, rack_nodes: 4, uplink_gbps: 12.5}\n"
                    "  - {count: 2, gpus_per_node: 4}\n";
    tide_error_t err = {0};
    tide_cluster_t *c = load_str(y, &err);
    if (!c)
        fail_msg("%s", err.msg);
    assert_int_equal(tide_cluster_racks(c), 3);
    assert_true(tide_cluster_rack_uplink(c, 0) == 12.5);
    assert_true(tide_cluster_rack_uplink(c, 1) == 12.5);
    assert_true(tide_cluster_rack_uplink(c, 2) == 0);
    assert_true(tide_cluster_rack_uplink(c, 3) == 0); /* no such rack */
    tide_cluster_t *d = tide_cluster_copy(c);
    assert_true(tide_cluster_rack_uplink(d, 1) == 12.5);
    tide_cluster_destroy(d);
    tide_cluster_destroy(c);
    expect_bad("groups:\n  - {count: 1, gpus_per_node: 8, uplink_gbps: -1}\n", TIDE_EINVAL,
               "c.yaml:2: 'uplink_gbps' must be GB/s in 0..1e9, got '-1'");
    expect_bad("groups:\n  - {count: 1, gpus_per_node: 8, uplink_gbps: \"5\"}\n", TIDE_EINVAL,
               "c.yaml:2: 'uplink_gbps' must be a number of GB/s");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_qos),
        cmocka_unit_test(test_power),
        cmocka_unit_test(test_uplink),
        cmocka_unit_test(test_file_and_arg),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
