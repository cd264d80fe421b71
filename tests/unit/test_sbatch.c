/* #SBATCH lines (formats/sbatch.c): the forms sbatch accepts, Slurm's time
 * formats, where the options end, and bad input refused with the line. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "formats/sbatch.h"

static tide_sbatch_t parse_ok(const char *text)
{
    tide_sbatch_t sb;
    tide_error_t err = {0};
    if (tide_sbatch_parse(text, strlen(text), &sb, &err) < 0)
        fail_msg("parse failed: %s", err.msg);
    return sb;
}

static void parse_bad(const char *text, const char *want)
{
    tide_sbatch_t sb;
    tide_error_t err = {0};
    assert_int_equal(tide_sbatch_parse(text, strlen(text), &sb, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    if (!strstr(err.msg, want))
        fail_msg("error '%s' does not say '%s'", err.msg, want);
}

static void issue_example(void **state)
{
    (void)state;
    tide_sbatch_t sb = parse_ok("#!/bin/bash\n#SBATCH --gres=gpu:8 --nodes=2 --time=4:00:00\n"
                                "srun python train.py\n");
    assert_int_equal(sb.gpus_per_node, 8);
    assert_int_equal(sb.nodes, 2);
    assert_int_equal(sb.time_s, 4 * 3600);
    assert_int_equal(sb.gpus, -1);
    assert_int_equal(sb.lines, 1);
    assert_int_equal(sb.n_ignored, 0);
}

static void forms(void **state)
{
    (void)state;
    tide_sbatch_t sb = parse_ok("#!/bin/sh\n"
                                "\n"
                                "# a comment between\n"
                                "#SBATCH -N 3\n"
                                "#SBATCH -t1-02:03:04\n"
                                "#SBATCH -J 'my job' --qos normal\n"
                                "#SBATCH --comment=\"two words\" # trailing comment\n"
                                "#SBATCH --ntasks-per-node=8\n"
                                "#SBATCH --gres=nic:1,gpu:h100:4\n"
                                "#SBATCH -p train -A research\n"
                                "#SBATCH --mem=0 --exclusive -c 16 --frobnicate=1\n"
                                "#SBATCHX --nodes=7\n"
                                "  #SBATCH --gpus=h100:12\n"
                                "echo start\n"
                                "#SBATCH --nodes=9\n");
    assert_int_equal(sb.nodes, 3);
    assert_int_equal(sb.time_s, 86400 + 2 * 3600 + 3 * 60 + 4);
    assert_string_equal(sb.job_name, "my job");
    assert_string_equal(sb.qos, "normal");
    assert_string_equal(sb.comment, "two words");
    assert_int_equal(sb.ntasks_per_node, 8);
    assert_int_equal(sb.gpus_per_node, 4);
    assert_string_equal(sb.gpu_type, "h100");
    assert_string_equal(sb.partition, "train");
    assert_string_equal(sb.account, "research");
    assert_int_equal(sb.gpus, 12);
    assert_int_equal(sb.n_ignored, 4);
    assert_string_equal(sb.ignored[0], "--mem");
    assert_string_equal(sb.ignored[1], "--exclusive");
    assert_string_equal(sb.ignored[2], "-c");
    assert_string_equal(sb.ignored[3], "--frobnicate");
    /* CRLF line ends, --gpus-per-node, N-M nodes */
    sb = parse_ok("#SBATCH --gpus-per-node=a100:2\r\n#SBATCH --nodes=2-4\r\n");
    assert_int_equal(sb.gpus_per_node, 2);
    assert_string_equal(sb.gpu_type, "a100");
    assert_int_equal(sb.nodes, 2);
    /* nothing at all */
    sb = parse_ok("");
    assert_int_equal(sb.lines, 0);
    assert_int_equal(sb.nodes, -1);
    assert_int_equal(sb.time_s, -1);
}

static void times(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        int64_t v;
    } ok[] = {{"30", 1800},       {"0", 0},           {"10:30", 630},        {"4:00:00", 14400},
              {"1-0", 86400},     {"2-12", 216000},   {"1-02:30", 95400},    {"1-02:03:04", 93784},
              {"90", 5400},       {"UNLIMITED", -1},  {"INFINITE", -1},      {"100:00:00", 360000}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t v = -2;
        if (tide_sbatch_time(ok[i].s, &v) < 0 || v != ok[i].v)
            fail_msg("'%s': got %lld, want %lld", ok[i].s, (long long)v, (long long)ok[i].v);
    }
    static const char *const bad[] = {"", "x", "1:2:3:4", "-1", "1-", "1-24", "10:61", "1:60:00",
                                      "4h", "1.5", "1--2", ":30"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v;
        if (tide_sbatch_time(bad[i], &v) == 0)
            fail_msg("'%s' accepted as %lld", bad[i], (long long)v);
    }
}

static void bad_input(void **state)
{
    (void)state;
    parse_bad("#SBATCH --nodes=x\n", "line 1: --nodes");
    parse_bad("#!/bin/bash\n#SBATCH --nodes=0\n", "line 2: --nodes");
    parse_bad("#SBATCH --time=4h\n", "--time");
    parse_bad("#SBATCH --gres=gpu:h100:x\n", "--gres");
    parse_bad("#SBATCH --gres=gpu:0\n", "--gres");
    parse_bad("#SBATCH --gpus=0\n", "--gpus");
    parse_bad("#SBATCH --job-name\n", "needs a value");
    parse_bad("#SBATCH -J\n", "needs a value");
    parse_bad("#SBATCH --comment='open\n", "unterminated quote");
    parse_bad("#SBATCH nodes=2\n", "not an option");
    tide_sbatch_t sb;
    tide_error_t err = {0};
    assert_int_equal(tide_sbatch_parse("#SBATCH -N 2\0x", 15, &sb, &err), -1);
    assert_non_null(strstr(err.msg, "NUL"));
    assert_int_equal(tide_sbatch_parse(NULL, 0, &sb, &err), -1);
    char longname[400];
    memset(longname, 'a', sizeof longname);
    memcpy(longname, "#SBATCH -J ", 11);
    longname[sizeof longname - 2] = '\n';
    longname[sizeof longname - 1] = 0;
    parse_bad(longname, "longer than");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(issue_example),
        cmocka_unit_test(forms),
        cmocka_unit_test(times),
        cmocka_unit_test(bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
