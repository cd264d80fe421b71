/* Unit tests: tide_slurm_gres_gpus (src/backend/slurm_api.h), the GPUs of a
 * Slurm node's GRES string. Every input is passed as an exactly-sized heap
 * copy (ASan in `make asan` catches a read past its NUL), and type is
 * surrounded by canary bytes (a write past ntype is caught here). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/slurm_api.h"

#define CANARY 'Z'

/* Parse gres (NULL allowed) with a type buffer of ntype bytes; check the
 * count, the type, the return value and that nothing beyond ntype changed. */
static void check_n(const char *gres, size_t ntype, int want_gpus, const char *want_type)
{
    char *in = NULL;
    if (gres) {
        size_t n = strlen(gres) + 1;
        in = malloc(n);
        assert_non_null(in);
        memcpy(in, gres, n);
    }
    char buf[8 + 64 + 8];
    memset(buf, CANARY, sizeof buf);
    assert_true(ntype <= 64);
    char *type = buf + 8;
    int gpus = -42;
    errno = 1234;
    int rc = tide_slurm_gres_gpus(in, &gpus, type, ntype);
    if (rc != 0 || gpus != want_gpus || strcmp(type, want_type) != 0)
        fail_msg("'%s' (ntype %zu): rc %d, %d GPUs, type '%.*s'; want 0, %d, '%s'",
                 gres ? gres : "(NULL)", ntype, rc, gpus, (int)ntype, type, want_gpus, want_type);
    assert_int_equal(errno, 1234); /* the caller's errno is kept */
    for (size_t i = 0; i < 8; i++)
        assert_int_equal(buf[i], CANARY);
    for (size_t i = 8 + ntype; i < sizeof buf; i++)
        if (buf[i] != CANARY)
            fail_msg("'%s': byte %zu past ntype %zu written", gres ? gres : "(NULL)", i - 8 - ntype,
                     ntype);
    free(in);
}

static void check(const char *gres, int want_gpus, const char *want_type)
{
    check_n(gres, 32, want_gpus, want_type); /* as tide_slurm_node_t.gpu_type */
}

static void forms(void **state)
{
    (void)state;
    check("gpu:h100:8", 8, "h100");
    check("gpu:8", 8, "");
    check("gpu", 1, "");
    check("gpu:h100", 1, "h100");
    check("gpu:h100:8(S:0-1)", 8, "h100");
    check("gpu:h100:8(IDX:0-7)", 8, "h100");
    check("gpu:h100:4(S:0),gpu:h100:4(S:1)", 8, "h100"); /* the comma in (...) does not split */
    check("gpu:h100:4(S:0,1),gpu:h100:4", 8, "h100");
    check("gpu:a100:4,gpu:h100:4", 8, "a100");
    check("gpu:8,gpu:h100:4", 12, "h100"); /* the first type seen */
    check("mps:100,gpu:2", 2, "");
    check("gpu:2,mps:100", 2, "");
    check("shard:4,nic:2", 0, "");
    check("", 0, "");
    check(NULL, 0, "");
    check("(null)", 0, ""); /* what Slurm prints for no GRES */
    check("gpu:h100:0", 0, "h100");
    check("gpu:a100:0,gpu:h100:4", 4, "a100");
    check("gpu::8", 8, "");
    check("gpu:h100:8:no_consume", 8, "h100");
    check("gpu:8k", 8192, "");
    check("gpu:t:2K", 2048, "t");
    check("gpu:1m", 1048576, "");
    check("gpu:1G", 1073741824, "");
    check("gpu:8x", 8, "");
    check("gpu:1.5", 1, "");
    check(",,gpu:4,,", 4, "");
    check("GPU:8", 0, "");  /* case-sensitive */
    check(" gpu:8", 0, ""); /* no trimming of the name */
    check("gpu:h100: 8", 8, "h100");
    check("gpu:h100:+8", 8, "h100");
}

static void garbage(void **state)
{
    (void)state;
    check("gpu:", 1, "");
    check("gpu:x:y", 0, "");
    check("gpu:x:y,gpu:h100:2", 2, "h100"); /* the failed entry leaves the type alone */
    check("gpu:-3", 1, "-3");               /* "-3" is taken for a type */
    check("gpu:h100:-3", INT_MAX, "h100");  /* strtoull wraps a negative count */
    check("gpu:99999999999999999999", 0, "");
    check("gpu:18446744073709551615", INT_MAX, ""); /* fits an unsigned long long */
    check("gpu:18446744073709551616", 0, "");       /* does not */
    check("gpu:2147483647", INT_MAX, "");
    check("gpu:2147483648", INT_MAX, "");
    check("gpu:2147483647,gpu:5", INT_MAX, ""); /* the total saturates */
    check("gpu:2147483647G", INT_MAX, "");
    check("gpu:x", 1, "x");
    check(":", 0, "");
    check(":::", 0, "");
    check("(", 0, "");
    check(")", 0, "");
    check("gpu(:8", 1, "");
    check("(gpu:8", 0, "");
    check("gpu:h100:8)(", 8, "h100");
    check("gpu:1(,gpu:2", 1, ""); /* the unclosed '(' swallows the rest */
    check("gpu:1),gpu:2", 3, "");
    check("gpu:h100:8\n", 8, "h100");
}

static void long_types(void **state)
{
    (void)state;
    /* a type longer than the buffer: cut to ntype - 1, the count kept */
    char g[512], want[64];
    snprintf(g, sizeof g, "gpu:%s:4", "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH");
    check(g, 4, "abcdefghijklmnopqrstuvwxyz01234");
    check_n(g, 1, 4, "");
    check_n(g, 2, 4, "a");
    check_n(g, 5, 4, "abcd");
    check_n("gpu:h100:8", 4, 8, "h10");
    check_n("gpu:h100:8", 5, 8, "h100");
    /* an entry longer than 255 bytes is cut there first: its count is lost */
    char t[301];
    memset(t, 'a', 300);
    t[300] = 0;
    snprintf(g, sizeof g, "gpu:%s:8", t);
    memset(want, 'a', 31);
    want[31] = 0;
    check(g, 1, want);
    snprintf(g, sizeof g, "gpu:%.240s:8", t); /* 4 + 240 + 2 = 246 bytes: whole */
    check(g, 8, want);
    snprintf(g, sizeof g, "gpu:%.249s:8", t); /* 255 bytes: whole */
    check(g, 8, want);
    snprintf(g, sizeof g, "gpu:%.249s:80", t); /* 256 bytes: "8" is read */
    check(g, 8, want);
    snprintf(g, sizeof g, "gpu:%.250s:8", t); /* 256 bytes: ":" is the last one read */
    check(g, 1, want);
    /* a long other GRES before the GPUs does not matter */
    snprintf(g, sizeof g, "license:%s:3,gpu:h100:2", t);
    check(g, 2, "h100");
}

static void null_outputs(void **state)
{
    (void)state;
    char type[8] = "xxxxxxx";
    int gpus = 7;
    assert_int_equal(tide_slurm_gres_gpus("gpu:8", NULL, type, sizeof type), -1);
    assert_string_equal(type, "");
    assert_int_equal(tide_slurm_gres_gpus("gpu:8", &gpus, NULL, 8), -1);
    assert_int_equal(gpus, 0);
    gpus = 7;
    type[0] = 'x';
    assert_int_equal(tide_slurm_gres_gpus("gpu:8", &gpus, type, 0), -1);
    assert_int_equal(gpus, 0);
    assert_int_equal(type[0], 'x'); /* ntype 0: not written */
    assert_int_equal(tide_slurm_gres_gpus("gpu:8", NULL, NULL, 0), -1);
    assert_int_equal(tide_slurm_gres_gpus(NULL, NULL, NULL, 0), -1);
    assert_int_equal(tide_slurm_gres_gpus(NULL, &gpus, type, sizeof type), 0);
    assert_int_equal(gpus, 0);
    assert_string_equal(type, "");
    /* the outputs are reset on every call, not accumulated */
    assert_int_equal(tide_slurm_gres_gpus("gpu:h100:8", &gpus, type, sizeof type), 0);
    assert_int_equal(tide_slurm_gres_gpus("gpu:4", &gpus, type, sizeof type), 0);
    assert_int_equal(gpus, 4);
    assert_string_equal(type, "");
}

/* GPUs per node of a job: allocation details first, then the per-node
 * request, then the allocated total over the nodes. */
static void job_gpus_per_node(void **state)
{
    (void)state;
    const char *det[] = {"gpu:h100:2(IDX:0-1)", "gpu:h100:4(IDX:0-3)"};
    assert_int_equal(tide_slurm_job_gpus_per_node(det, 2, "gres:gpu:1", NULL, 2), 4);
    const char *one[] = {"gpu:8"};
    assert_int_equal(tide_slurm_job_gpus_per_node(one, 1, NULL, NULL, 1), 8);
    const char *none[] = {"(null)", NULL};
    assert_int_equal(tide_slurm_job_gpus_per_node(none, 2, "gres:gpu:3", NULL, 1), 3);
    assert_int_equal(tide_slurm_job_gpus_per_node(NULL, 0, "gres/gpu:h100:2", NULL, 1), 2);
    assert_int_equal(tide_slurm_job_gpus_per_node(NULL, 0, "gres:nic:1,gres:gpu:2", NULL, 1), 2);
    assert_int_equal(tide_slurm_job_gpus_per_node(NULL, 0, "gres:gpu:2;gres:mps:100", NULL, 1), 2);
    assert_int_equal(tide_slurm_job_gpus_per_node(NULL, 0, NULL,
                                                  "cpu=2,mem=1G,node=2,billing=2,gres/gpu=6", 2), 3);
    assert_int_equal(tide_slurm_job_gpus_per_node(NULL, 0, "", "cpu=2,gres/gpu=5", 2), 3);
    assert_int_equal(tide_slurm_job_gpus_per_node(NULL, 0, "", "cpu=2,gres/gpu:h100=4", 0), 4);
    assert_int_equal(tide_slurm_job_gpus_per_node(NULL, 0, NULL, "cpu=2,mem=1G", 1), 0);
    assert_int_equal(tide_slurm_job_gpus_per_node(NULL, 0, NULL, NULL, 1), 0);
    assert_int_equal(tide_slurm_job_gpus_per_node(NULL, 0, "gres:gpu:99999999999", NULL, 1), INT_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(forms),
        cmocka_unit_test(garbage),
        cmocka_unit_test(long_types),
        cmocka_unit_test(null_outputs),
        cmocka_unit_test(job_gpus_per_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
