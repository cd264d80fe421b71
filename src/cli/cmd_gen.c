/* `tide gen`: write a built-in scenario's services.csv, demand.csv, jobs.csv. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "sim/gen.h"
#include "util/util.h"

static void gen_usage(FILE *f)
{
    fprintf(f,
            "usage: tide gen --scenario NAME --out DIR [--days N] [--seed S] [--nodes N] [--jobs N]\n"
            "\n"
            "Write DIR/services.csv, DIR/demand.csv and DIR/jobs.csv (the inputs of\n"
            "`tide sim`) for a built-in scenario. The same options always give\n"
            "byte-identical files.\n"
            "\n"
            "options:\n"
            "  -s, --scenario NAME  seed200  25x8 H100, enterprise API (peak ~80 GPUs,\n"
            "                                trough ~40), training always queued\n"
            "                       seed32   4x8 H100, day: 2 TP8 decode + 2 TP4 prefill,\n"
            "                                night: 1 decode + a 3xDP TP8 training mesh\n"
            "                       bench    NODESx8 H100, Philly-like jobs (load 1.1x),\n"
            "                                demand peaking near 35%% of the cluster\n"
            "  -o, --out DIR        output directory (created if missing)\n"
            "  -d, --days N         horizon in whole days: 14, 14d, 2w (default: seed200 14,\n"
            "                       seed32 7, bench 30; at most %d)\n"
            "      --seed S         PRNG seed, decimal or 0x hex (default 1)\n"
            "      --nodes N        bench only: 8-GPU nodes, %d..%d (default 128)\n"
            "      --jobs N         bench only: jobs to write, 1..%ld (default 100000)\n"
            "  -h, --help           show this help\n"
            "\n"
            "Distributions and their sources: docs/gen.md.\n",
            TIDE_GEN_MAX_DAYS, TIDE_GEN_MIN_NODES, TIDE_GEN_MAX_NODES, TIDE_GEN_MAX_JOBS);
}

/* Print "tide gen: <message> (see tide gen --help)" and return the usage status. */
#define bad(...) tide_cli_usage_error("gen", __VA_ARGS__)

/* "14", "14d", "2w", "336h": a positive whole number of days. */
static int parse_days(const char *s, int *out)
{
    long long v;
    if (tide_parse_int(s, &v) == 0) {
        if (v < 1 || v > TIDE_GEN_MAX_DAYS)
            return -1;
        *out = (int)v;
        return 0;
    }
    int64_t sec;
    if (tide_parse_duration(s, &sec) < 0 || sec <= 0 || sec % 86400 != 0 ||
        sec / 86400 > TIDE_GEN_MAX_DAYS)
        return -1;
    *out = (int)(sec / 86400);
    return 0;
}

#define parse_seed tide_parse_u64

int tide_cmd_gen(int argc, char **argv)
{
    enum { OPT_SEED = 256, OPT_NODES, OPT_JOBS };
    static const struct option longopts[] = {
        {"scenario", required_argument, NULL, 's'}, {"out", required_argument, NULL, 'o'},
        {"days", required_argument, NULL, 'd'},     {"seed", required_argument, NULL, OPT_SEED},
        {"nodes", required_argument, NULL, OPT_NODES}, {"jobs", required_argument, NULL, OPT_JOBS},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    tide_gen_opts_t o = {.seed = 1};
    long long v;
    int c;
    optind = 0; /* full reset: the CLI may be called more than once (tests) */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":s:o:d:h", longopts, NULL)) != -1) {
        switch (c) {
        case 's': o.scenario = optarg; break;
        case 'o': o.outdir = optarg; break;
        case 'd':
            if (parse_days(optarg, &o.days) < 0)
                return bad("--days: '%s' is not a whole number of days in 1..%d", optarg,
                           TIDE_GEN_MAX_DAYS);
            break;
        case OPT_SEED:
            if (parse_seed(optarg, &o.seed) < 0)
                return bad("--seed: '%s' is not an unsigned 64-bit integer", optarg);
            break;
        case OPT_NODES:
            if (tide_parse_int(optarg, &v) < 0 || v < TIDE_GEN_MIN_NODES || v > TIDE_GEN_MAX_NODES)
                return bad("--nodes: '%s' is not a node count in %d..%d", optarg,
                           TIDE_GEN_MIN_NODES, TIDE_GEN_MAX_NODES);
            o.nodes = (int)v;
            break;
        case OPT_JOBS:
            if (tide_parse_int(optarg, &v) < 0 || v < 1 || v > TIDE_GEN_MAX_JOBS)
                return bad("--jobs: '%s' is not a job count in 1..%ld", optarg, TIDE_GEN_MAX_JOBS);
            o.jobs = (long)v;
            break;
        case 'h': gen_usage(stdout); return 0;
        default: return tide_cli_getopt_error("gen", c, argv);
        }
    }
    if (optind < argc)
        return bad("unexpected argument '%s'", argv[optind]);
    if (!o.scenario)
        return bad("--scenario is required (seed200, seed32 or bench)");
    if (!o.outdir)
        return bad("--out DIR is required");

    tide_gen_summary_t s;
    tide_error_t err = {0};
    if (tide_gen_write_ex(&o, &s, &err) < 0) {
        fprintf(stderr, "tide gen: %s\n", err.msg);
        return tide_cli_exit_code(err.code);
    }
    printf("tide gen: %s -> %s: cluster %s, %d days, seed %llu; %ld jobs (%ld backlog at t=0, "
           "%.1f/day), offered load %.2fx of %.1f training GPUs; demand peak %d GPUs, "
           "trough %d GPUs (floor %d)\n",
           o.scenario, o.outdir, s.cluster_spec, s.days, (unsigned long long)o.seed, s.jobs,
           s.backlog_jobs, s.jobs_per_day, s.offered_load, s.train_gpus, s.peak_gpus,
           s.trough_gpus, s.floor_gpus);
    return 0;
}
