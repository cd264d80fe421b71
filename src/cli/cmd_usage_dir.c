/* `tide usage DIR`: GPU-hours and cost from a simulation output folder
 * (DIR/usage.csv), grouped by any of policy, owner (team), kind, class,
 * state, tier, gpu_type, category; or the governance report (--report).
 * tide_cmd_usage (cmd_usage.c, the daemon mode) hands over to
 * tide_cmd_usage_dir when its first argument is not an option. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "formats/usage.h"
#include "util/util.h"

static void usage_usage(FILE *f)
{
    fprintf(f,
            "usage: tide usage DIR [--since D] [--by LIST] [--format table|csv|json]\n"
            "                      [--policy NAME]\n"
            "       tide usage DIR --report [--since D] [--policy NAME] [--format table|json]\n"
            "                      [--peak-quantile Q] [--phase-cv X]\n"
            "\n"
            "Sum the GPU-hours and cost of DIR/usage.csv (written by tide sim) over the\n"
            "last D of the run (default: all of it).\n"
            "\n"
            "      --since D           90s, 15m, 36h, 30d: intervals starting in the last D\n"
            "      --by LIST           group by: policy, owner (or team), kind, class, state,\n"
            "                          tier, gpu_type, category (default policy,owner)\n"
            "      --format F          table (default), csv or json\n"
            "      --policy NAME       only this policy; required when DIR holds several\n"
            "                          policies and --by does not group by policy (their\n"
            "                          GPU-hours would add up)\n"
            "      --report            answer the governance questions: GPU-hours by task\n"
            "                          type, top team at peak demand, long-lived replicas,\n"
            "                          phase-like demand, preemptions, borrowing\n"
            "      --peak-quantile Q   peak = intervals with demand >= this quantile (0.9)\n"
            "      --phase-cv X        daily GPU-hours CV above X = phase-like (0.5)\n"
            "  -h, --help              show this help\n"
            "\n"
            "Lost work is charged to the policy: its rows show as owner\n"
            "'(policy: lost work)'. Details: docs/governance.md.\n");
}

#define bad(...) tide_cli_usage_error("usage", __VA_ARGS__)

#define fail(err) tide_cli_fail("usage", (err))

/* Without --policy and without grouping by policy, the rows of several
 * policies (each a replay of the same cluster) would add up: refuse, naming
 * them. -1 to go on, or the exit status. */
static int one_policy_check(const char *dir, const tide_usage_query_t *q)
{
    if (q->policy)
        return -1;
    for (int i = 0; i < q->n_keys; i++)
        if (q->keys[i] == TIDE_UK_POLICY)
            return -1;
    tide_usage_query_t pq = *q;
    pq.keys[0] = TIDE_UK_POLICY;
    pq.n_keys = 1;
    tide_usage_table_t t;
    tide_error_t err = {0};
    if (tide_usage_aggregate(dir, &pq, &t, &err) < 0)
        return -1; /* the real query reports it */
    int rc = -1;
    if (t.n > 1) {
        char list[1024] = "";
        size_t len = 0;
        for (size_t i = 0; i < t.n && len < sizeof list; i++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "",
                                    t.rows[i].key[TIDE_UK_POLICY]);
        rc = bad("%s holds %zu policies (%s): their GPU-hours would add up; give --policy NAME, "
                 "or group --by policy", dir, t.n, list);
    }
    tide_usage_table_free(&t);
    return rc;
}

int tide_cmd_usage_dir(int argc, char **argv)
{
    enum { O_SINCE = 256, O_BY, O_FORMAT, O_POLICY, O_REPORT, O_PEAKQ, O_PHASECV };
    static const struct option longopts[] = {
        {"since", required_argument, NULL, O_SINCE},
        {"by", required_argument, NULL, O_BY},
        {"format", required_argument, NULL, O_FORMAT},
        {"policy", required_argument, NULL, O_POLICY},
        {"report", no_argument, NULL, O_REPORT},
        {"peak-quantile", required_argument, NULL, O_PEAKQ},
        {"phase-cv", required_argument, NULL, O_PHASECV},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    tide_usage_query_t q;
    memset(&q, 0, sizeof q);
    tide_usage_report_opts_t ro;
    tide_usage_report_opts_default(&ro);
    const char *by = NULL;
    int format = TIDE_UFMT_TABLE, report = 0, o;
    tide_error_t err = {0};
    optind = 0;
    opterr = 0;
    while ((o = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (o) {
        case O_SINCE:
            if (tide_parse_duration(optarg, &q.since_s) < 0 || q.since_s <= 0)
                return bad("--since: '%s' is not a positive duration (90s, 15m, 36h, 30d)",
                           optarg);
            break;
        case O_BY: by = optarg; break;
        case O_FORMAT:
            if ((format = tide_usage_format_find(optarg)) < 0)
                return bad("--format: '%s' is not table, csv or json", optarg);
            break;
        case O_POLICY: q.policy = optarg; break;
        case O_REPORT: report = 1; break;
        case O_PEAKQ:
            if (tide_parse_double(optarg, &ro.peak_quantile) < 0 || ro.peak_quantile < 0 ||
                ro.peak_quantile > 1)
                return bad("--peak-quantile: '%s' is not a number in 0..1", optarg);
            break;
        case O_PHASECV:
            if (tide_parse_double(optarg, &ro.phase_cv) < 0 || ro.phase_cv < 0)
                return bad("--phase-cv: '%s' is not a number >= 0", optarg);
            break;
        case 'h': usage_usage(stdout); return 0;
        default: return tide_cli_getopt_error("usage", o, argv);
        }
    }
    if (optind >= argc)
        return bad("DIR (a tide sim output folder) is required");
    if (optind + 1 < argc)
        return bad("unexpected argument '%s'", argv[optind + 1]);
    const char *dir = argv[optind];
    if (report) {
        if (by)
            return bad("--by does not apply to --report");
        if (format == TIDE_UFMT_CSV)
            return bad("--report prints a table or json, not csv");
        ro.since_s = q.since_s;
        json_t *r = tide_usage_report(dir, q.policy, &ro, &err);
        if (!r)
            return fail(&err);
        int rc;
        if (format == TIDE_UFMT_JSON) {
            rc = json_dumpf(r, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                           JSON_REAL_PRECISION(10));
            fputc('\n', stdout);
        } else {
            rc = tide_usage_report_print(stdout, r);
        }
        json_decref(r);
        return rc == 0 ? 0 : tide_cli_exit_code(TIDE_EIO);
    }
    if (by) {
        if ((q.n_keys = tide_usage_parse_by(by, q.keys, &err)) < 0)
            return bad("%s", err.msg);
    } else {
        q.keys[0] = TIDE_UK_POLICY;
        q.keys[1] = TIDE_UK_OWNER;
        q.n_keys = 2;
    }
    int rc = one_policy_check(dir, &q);
    if (rc >= 0)
        return rc;
    tide_usage_table_t t;
    if (tide_usage_aggregate(dir, &q, &t, &err) < 0)
        return fail(&err);
    rc = tide_usage_table_print(stdout, &t, format);
    tide_usage_table_free(&t);
    return rc == 0 ? 0 : tide_cli_exit_code(TIDE_EIO);
}
