/* Unit tests: cluster model, compact spec parser, GPU type masks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "tide/cluster.h"

static void expect_parse_error(const char *spec, const char *needle)
{
    tide_error_t err = {0, ""};
    tide_cluster_t *c = tide_cluster_parse(spec, &err);
    if (c) {
        tide_cluster_destroy(c);
        fail_msg("spec '%s' should have been rejected", spec);
    }
    assert_int_not_equal(err.code, TIDE_OK);
    if (!strstr(err.msg, needle))
        fail_msg("spec '%s': message '%s' lacks '%s'", spec, err.msg, needle);
}

static void test_parse_simple(void **state)
{
    (void)state;
    tide_error_t err;
    tide_cluster_t *c = tide_cluster_parse("25x8", &err);
    assert_non_null(c);
    assert_int_equal(tide_cluster_nodes(c), 25);
    assert_int_equal(tide_cluster_gpus(c), 200);
    assert_int_equal(tide_cluster_domains(c), 25);
    assert_int_equal(tide_cluster_types(c), 1);
    assert_string_equal(tide_cluster_type_name(c, 0), "gpu");
    assert_int_equal(tide_cluster_max_domain_gpus(c), 8);
    assert_int_equal(tide_cluster_racks(c), 7); /* 25 nodes, 4 per rack */
    assert_int_equal(tide_cluster_power_domains(c), 7);
    tide_node_info_t n;
    assert_int_equal(tide_cluster_node(c, 24, &n), 0);
    assert_int_equal(n.first_gpu, 192);
    assert_int_equal(n.gpus, 8);
    assert_int_equal(n.domain, 24);
    assert_int_equal(n.rack, 6);
    assert_int_equal(tide_cluster_node(c, 25, &n), -1);
    assert_int_equal(tide_cluster_node(c, -1, &n), -1);
    tide_cluster_destroy(c);
}

static void test_parse_multi(void **state)
{
    (void)state;
    tide_error_t err;
    tide_cluster_t *c = tide_cluster_parse(" 16x8:H100 , 8x4:A100,18x4:GB200/18,2x8:H100/2", &err);
    assert_non_null(c);
    assert_int_equal(tide_cluster_nodes(c), 16 + 8 + 18 + 2);
    assert_int_equal(tide_cluster_gpus(c), 128 + 32 + 72 + 16);
    assert_int_equal(tide_cluster_types(c), 3);
    assert_string_equal(tide_cluster_type_name(c, 0), "H100");
    assert_string_equal(tide_cluster_type_name(c, 1), "A100");
    assert_string_equal(tide_cluster_type_name(c, 2), "GB200");
    assert_null(tide_cluster_type_name(c, 3));
    assert_int_equal(tide_cluster_type_find(c, "A100"), 1);
    assert_int_equal(tide_cluster_type_find(c, "B200"), -1);
    /* 16 + 8 one-node domains, 1 GB200 domain of 18 nodes, 1 of 2 H100 nodes */
    assert_int_equal(tide_cluster_domains(c), 16 + 8 + 1 + 1);
    assert_int_equal(tide_cluster_max_domain_gpus(c), 72);

    tide_node_info_t n;
    assert_int_equal(tide_cluster_node(c, 16, &n), 0); /* first A100 node */
    assert_int_equal(n.type, 1);
    assert_int_equal(n.gpus, 4);
    assert_int_equal(n.first_gpu, 128);
    assert_int_equal(n.domain, 16);
    assert_int_equal(n.rack, 4);
    assert_int_equal(tide_cluster_node(c, 24, &n), 0); /* first GB200 node */
    assert_int_equal(n.domain, 24);
    assert_int_equal(n.first_gpu, 160);
    assert_int_equal(tide_cluster_node(c, 41, &n), 0); /* last GB200 node */
    assert_int_equal(n.domain, 24);
    assert_int_equal(n.type, 2);
    assert_int_equal(tide_cluster_node(c, 43, &n), 0); /* last node */
    assert_int_equal(n.domain, 25);
    assert_int_equal(n.type, 0);
    assert_int_equal(n.first_gpu, 240);

    char buf[128];
    int len = tide_cluster_format(c, buf, sizeof buf);
    assert_string_equal(buf, "16x8:H100,8x4:A100,18x4:GB200/18,2x8:H100/2");
    assert_int_equal(len, (int)strlen(buf));
    char small[8];
    assert_int_equal(tide_cluster_format(c, small, sizeof small), len);
    assert_string_equal(small, "16x8:H1");

    assert_int_equal(tide_cluster_groups(c), 4);
    tide_node_group_t g;
    assert_int_equal(tide_cluster_group(c, 2, &g), 0);
    assert_int_equal(g.count, 18);
    assert_int_equal(g.domain_nodes, 18);
    assert_int_equal(g.rack_nodes, 4);
    assert_int_equal(g.power_nodes, 4);
    assert_string_equal(g.gpu_type, "GB200");
    assert_int_equal(tide_cluster_group(c, 4, &g), -1);

    tide_cluster_t *d = tide_cluster_copy(c);
    tide_cluster_destroy(c);
    assert_non_null(d);
    assert_int_equal(tide_cluster_gpus(d), 248);
    assert_int_equal(tide_cluster_group(d, 1, &g), 0);
    assert_string_equal(g.gpu_type, "A100");
    assert_int_equal(tide_cluster_node(d, 43, &n), 0);
    assert_int_equal(n.first_gpu, 240);
    tide_cluster_format(d, buf, sizeof buf);
    assert_string_equal(buf, "16x8:H100,8x4:A100,18x4:GB200/18,2x8:H100/2");
    tide_cluster_destroy(d);
}

static void test_parse_errors(void **state)
{
    (void)state;
    expect_parse_error("", "group 1");
    expect_parse_error("", "empty group");
    expect_parse_error("abc", "expected a node count");
    expect_parse_error("0x8", "node count must be >= 1");
    expect_parse_error("-3x8", "positive");
    expect_parse_error("4x-8", "positive");
    expect_parse_error("4x0", "GPUs per node must be 1..64");
    expect_parse_error("4x65", "GPUs per node must be 1..64 (got 65)");
    expect_parse_error("4*8", "expected 'x'");
    expect_parse_error("4x", "expected GPUs per node");
    expect_parse_error("4x8:", "empty GPU type");
    expect_parse_error("4x8:H100/", "nodes per domain");
    expect_parse_error("4x8/0", "nodes per domain must be >= 1");
    expect_parse_error("4x8/3", "domain_nodes (3) must divide the node count (4)");
    expect_parse_error("4x8:H 100", "invalid character");
    expect_parse_error("4x8:any", "reserved");
    expect_parse_error("4x8junk", "unexpected 'j'");
    expect_parse_error("4x8,", "group 2");
    expect_parse_error("4x8,,2x8", "empty group");
    expect_parse_error("99999999999x8", "node count is too large");
    expect_parse_error("4x99999999999", "GPUs per node must be 1..64");
    expect_parse_error("70000x8", "too many nodes");
    expect_parse_error("4x8:ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "longer than 31");
    tide_error_t err;
    assert_null(tide_cluster_parse(NULL, &err));
    assert_null(tide_cluster_parse("4x0", NULL)); /* err is optional */

    /* 33 distinct types */
    char spec[1024] = "";
    for (int i = 0; i < 33; i++) {
        char g[32];
        snprintf(g, sizeof g, "%s1x1:T%d", i ? "," : "", i);
        strcat(spec, g);
    }
    expect_parse_error(spec, "too many GPU types");
    err.code = 0;
    assert_null(tide_cluster_parse(spec, &err));
    assert_int_equal(err.code, TIDE_ERANGE);
}

static void test_add_group(void **state)
{
    (void)state;
    tide_error_t err;
    tide_cluster_t *c = tide_cluster_create();
    tide_node_group_t g = {.count = 16, .gpus_per_node = 8, .gpu_type = "H100",
                           .domain_nodes = 2, .rack_nodes = 4, .power_nodes = 8};
    assert_int_equal(tide_cluster_add_group(c, &g, &err), 0);
    assert_int_equal(tide_cluster_domains(c), 8);
    assert_int_equal(tide_cluster_racks(c), 4);
    assert_int_equal(tide_cluster_power_domains(c), 2);
    tide_node_info_t n;
    tide_cluster_node(c, 9, &n);
    assert_int_equal(n.domain, 4);
    assert_int_equal(n.rack, 2);
    assert_int_equal(n.power, 1);
    /* a second group continues the numbering; 0 means defaults */
    tide_node_group_t g2 = {.count = 6, .gpus_per_node = 4, .gpu_type = NULL};
    assert_int_equal(tide_cluster_add_group(c, &g2, &err), 0);
    assert_int_equal(tide_cluster_types(c), 2);
    assert_string_equal(tide_cluster_type_name(c, 1), "gpu");
    tide_cluster_node(c, 21, &n);
    assert_int_equal(n.domain, 8 + 5);
    assert_int_equal(n.rack, 4 + 1);  /* racks of 4 */
    assert_int_equal(n.power, 2 + 1); /* power = rack size */
    assert_int_equal(n.first_gpu, 128 + 20);
    assert_int_equal(tide_cluster_racks(c), 6);
    assert_int_equal(tide_cluster_max_domain_gpus(c), 16);

    tide_node_group_t bad = g;
    bad.domain_nodes = 5;
    assert_int_equal(tide_cluster_add_group(c, &bad, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_non_null(strstr(err.msg, "must divide"));
    bad = g;
    bad.rack_nodes = -1;
    assert_int_equal(tide_cluster_add_group(c, &bad, &err), -1);
    assert_non_null(strstr(err.msg, "rack_nodes"));
    bad = g;
    bad.power_nodes = -2;
    assert_int_equal(tide_cluster_add_group(c, &bad, &err), -1);
    assert_non_null(strstr(err.msg, "power_nodes"));
    bad = g;
    bad.count = 0;
    assert_int_equal(tide_cluster_add_group(c, &bad, &err), -1);
    assert_int_equal(tide_cluster_add_group(c, NULL, &err), -1);
    /* failures leave the cluster unchanged */
    assert_int_equal(tide_cluster_nodes(c), 22);
    assert_int_equal(tide_cluster_gpus(c), 152);
    tide_cluster_destroy(c);
    tide_cluster_destroy(NULL);
}

static void test_type_mask(void **state)
{
    (void)state;
    tide_error_t err;
    tide_cluster_t *c = tide_cluster_parse("2x8:H100,2x8:A100,1x4:L40S", &err);
    assert_non_null(c);
    uint32_t m = 99;
    assert_int_equal(tide_cluster_type_mask(c, "H100|A100", &m, &err), 0);
    assert_int_equal(m, 3u);
    assert_int_equal(tide_cluster_type_mask(c, " L40S ; H100 ", &m, &err), 0);
    assert_int_equal(m, 5u);
    assert_int_equal(tide_cluster_type_mask(c, "A100", &m, &err), 0);
    assert_int_equal(m, 2u);
    m = 99;
    assert_int_equal(tide_cluster_type_mask(c, NULL, &m, &err), 0);
    assert_int_equal(m, 0u);
    m = 99;
    assert_int_equal(tide_cluster_type_mask(c, "", &m, &err), 0);
    assert_int_equal(m, 0u);
    m = 99;
    assert_int_equal(tide_cluster_type_mask(c, "any", &m, &err), 0);
    assert_int_equal(m, 0u);
    assert_int_equal(tide_cluster_type_mask(c, "ANY", &m, &err), 0);
    assert_int_equal(m, 0u);

    assert_int_equal(tide_cluster_type_mask(c, "H100|B200", &m, &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
    assert_non_null(strstr(err.msg, "unknown GPU type 'B200'"));
    assert_non_null(strstr(err.msg, "H100, A100, L40S"));
    assert_int_equal(tide_cluster_type_mask(c, "H100||A100", &m, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_int_equal(tide_cluster_type_mask(c, "H100|", &m, &err), -1);
    assert_int_equal(tide_cluster_type_mask(c, "any|H100", &m, &err), -1);
    assert_non_null(strstr(err.msg, "'any'"));
    assert_int_equal(tide_cluster_type_mask(c, "h100", &m, &err), -1); /* case matters */
    assert_int_equal(tide_cluster_type_mask(NULL, "H100", &m, &err), -1);
    tide_cluster_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_simple), cmocka_unit_test(test_parse_multi),
        cmocka_unit_test(test_parse_errors), cmocka_unit_test(test_add_group),
        cmocka_unit_test(test_type_mask),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
