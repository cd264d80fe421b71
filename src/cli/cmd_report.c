/* `tide report DIR [--out FILE]`: write the self-contained HTML report of a
 * `tide sim` output directory (src/report/report.h, docs/report.md). */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "report/report.h"
#include "sim/sim.h"
#include "sim/sweep.h"

static void report_usage(FILE *f)
{
    fprintf(f,
            "usage: tide report DIR [--out FILE]\n"
            "\n"
            "Write one self-contained HTML file (inline CSS, script and data; nothing is\n"
            "loaded from the network) with the charts of a `tide sim --out DIR` run:\n"
            "GPUs by state and class over time with demand and SLO misses, training\n"
            "queue, leases and reclaims, GPU-hours per team, the policies compared on a\n"
            "Pareto chart, the parameter sweep (DIR/sweep.json, if any) and the answers\n"
            "to the five questions per policy.\n"
            "\n"
            "options:\n"
            "  -o, --out FILE   output file (default DIR/report.html)\n"
            "  -h, --help       show this help\n"
            "\n"
            "Open the file in any browser. Details: docs/report.md.\n");
}

#define bad(...) tide_cli_usage_error("report", __VA_ARGS__)

int tide_cmd_report(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"out", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *out = NULL, *dir = NULL;
    int c;
    optind = 0; /* full reset: the CLI may be called more than once (tests) */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'h': report_usage(stdout); return 0;
        default: return tide_cli_getopt_error("report", c, argv);
        }
    }
    if (optind >= argc)
        return bad("the run directory DIR is required");
    dir = argv[optind++];
    if (optind < argc)
        return bad("unexpected argument '%s'", argv[optind]);
    tide_error_t err = {0};
    if (tide_report_write(dir, out, &err) != 0) {
        fprintf(stderr, "tide report: %s\n", err.msg);
        return tide_cli_exit_code(err.code ? err.code : TIDE_EINVAL);
    }
    if (out)
        printf("tide report: wrote %s\n", out);
    else
        printf("tide report: wrote %s/report.html\n", dir);
    return 0;
}

/* ----------------------------------------------- tide sim --sweep / --report */

int tide_cli_sim_check_sweep(const char *spec, const tide_sim_opts_t *o)
{
    if (!spec)
        return -1;
    tide_sweep_grid_t g;
    tide_error_t err = {0};
    int rc = -1;
    if (tide_sweep_parse(spec, &g, &err) != 0 ||
        tide_sweep_check(&g, tide_cluster_gpus(o->cluster), &o->cfg, &err) != 0) {
        fprintf(stderr, "tide sim: %s (see tide sim --help)\n", err.msg);
        rc = 2;
    }
    tide_sweep_grid_free(&g);
    return rc;
}

int tide_cli_sim_finish(const char *spec, const char *report, const tide_sim_opts_t *o)
{
    tide_error_t err = {0};
    if (spec) {
        tide_sweep_grid_t g;
        int rc = tide_sweep_parse(spec, &g, &err);
        if (rc == 0) {
            fflush(stdout);
            rc = tide_sweep_run(o, &g, spec, 0, stdout, NULL, &err);
        }
        tide_sweep_grid_free(&g);
        if (rc != 0) {
            fprintf(stderr, "tide sim: %s\n", err.msg);
            return tide_cli_exit_code(err.code ? err.code : TIDE_EINVAL);
        }
        printf("tide sim: wrote %s/sweep.csv, %s/sweep.json (runs in %s/sweep/)\n", o->out_dir,
               o->out_dir, o->out_dir);
    }
    if (report) {
        if (tide_report_write(o->out_dir, report, &err) != 0) {
            fprintf(stderr, "tide sim: --report: %s\n", err.msg);
            return tide_cli_exit_code(err.code ? err.code : TIDE_EINVAL);
        }
        printf("tide sim: wrote report %s\n", report);
    }
    return 0;
}
