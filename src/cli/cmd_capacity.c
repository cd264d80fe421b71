/* `tide capacity DIR`: capacity signals from a simulation output folder
 * (summary.json, timeline.csv, events.csv, sweep.csv; src/report/signals.h). */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "report/signals.h"
#include "util/util.h"

static void capacity_usage(FILE *f)
{
    tide_signals_opts_t d;
    tide_signals_opts_default(&d);
    fprintf(f,
            "usage: tide capacity DIR [--policy NAME] [--format table|json] [thresholds]\n"
            "\n"
            "Turn a tide sim output folder into capacity findings: preemptions too\n"
            "frequent (the inference floor is too small), a deep training queue\n"
            "(training is undersized), a low watermark (waste), and with DIR/sweep.csv\n"
            "what more Tier A GPUs buy in SLO attainment and cost in training.\n"
            "\n"
            "      --policy NAME         only this policy (default every policy)\n"
            "      --format F            table (default) or json\n"
            "      --preempt-rate N      preemptions per day per 100 GPUs (default %g)\n"
            "      --queue-p95 D         p95 queue time, a duration (default %gh)\n"
            "      --queue-gpus F        mean queued GPUs / cluster GPUs (default %g)\n"
            "      --util-low F          utilization below F is waste (default %g)\n"
            "      --idle-high F         idle share above F is waste (default %g)\n"
            "      --slo-target F        SLO the sweep recommendation aims at (default %g)\n"
            "  -h, --help                show this help\n"
            "\n"
            "Rules and examples: docs/governance.md.\n",
            d.preempt_per_day_per_100, d.queue_p95_h, d.queue_gpus_frac, d.util_low,
            d.idle_high, d.slo_target);
}

#define bad(...) tide_cli_usage_error("capacity", __VA_ARGS__)

static int frac(const char *opt, const char *arg, double *out)
{
    if (tide_parse_double(arg, out) < 0 || *out < 0 || *out > 1)
        return bad("%s: '%s' is not a number in 0..1", opt, arg);
    return 0;
}

int tide_cmd_capacity(int argc, char **argv)
{
    enum { O_POLICY = 256, O_FORMAT, O_RATE, O_P95, O_QGPUS, O_ULOW, O_IHIGH, O_SLO };
    static const struct option longopts[] = {
        {"policy", required_argument, NULL, O_POLICY},
        {"format", required_argument, NULL, O_FORMAT},
        {"preempt-rate", required_argument, NULL, O_RATE},
        {"queue-p95", required_argument, NULL, O_P95},
        {"queue-gpus", required_argument, NULL, O_QGPUS},
        {"util-low", required_argument, NULL, O_ULOW},
        {"idle-high", required_argument, NULL, O_IHIGH},
        {"slo-target", required_argument, NULL, O_SLO},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    tide_signals_opts_t so;
    tide_signals_opts_default(&so);
    const char *policy = NULL;
    int json = 0, o, rc;
    int64_t d;
    optind = 0;
    opterr = 0;
    while ((o = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (o) {
        case O_POLICY: policy = optarg; break;
        case O_FORMAT:
            if (!strcmp(optarg, "json"))
                json = 1;
            else if (!strcmp(optarg, "table"))
                json = 0;
            else
                return bad("--format: '%s' is not table or json", optarg);
            break;
        case O_RATE:
            if (tide_parse_double(optarg, &so.preempt_per_day_per_100) < 0 ||
                so.preempt_per_day_per_100 < 0)
                return bad("--preempt-rate: '%s' is not a number >= 0", optarg);
            break;
        case O_P95:
            if (tide_parse_duration(optarg, &d) < 0)
                return bad("--queue-p95: '%s' is not a duration (90s, 15m, 36h, 14d)", optarg);
            so.queue_p95_h = (double)d / 3600.0;
            break;
        case O_QGPUS:
            if (tide_parse_double(optarg, &so.queue_gpus_frac) < 0 || so.queue_gpus_frac < 0)
                return bad("--queue-gpus: '%s' is not a number >= 0", optarg);
            break;
        case O_ULOW:
            if ((rc = frac("--util-low", optarg, &so.util_low)) != 0)
                return rc;
            break;
        case O_IHIGH:
            if ((rc = frac("--idle-high", optarg, &so.idle_high)) != 0)
                return rc;
            break;
        case O_SLO:
            if ((rc = frac("--slo-target", optarg, &so.slo_target)) != 0)
                return rc;
            break;
        case 'h': capacity_usage(stdout); return 0;
        default: return tide_cli_getopt_error("capacity", o, argv);
        }
    }
    if (optind >= argc)
        return bad("DIR (a tide sim output folder) is required");
    if (optind + 1 < argc)
        return bad("unexpected argument '%s'", argv[optind + 1]);
    tide_error_t err = {0};
    json_t *sig = tide_signals_compute(argv[optind], policy, &so, &err);
    if (!sig) {
        fprintf(stderr, "tide capacity: %s\n", err.msg);
        return tide_cli_exit_code(err.code ? err.code : TIDE_EINVAL);
    }
    if (json) {
        rc = json_dumpf(sig, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                         JSON_REAL_PRECISION(10));
        fputc('\n', stdout);
    } else {
        rc = tide_signals_print(stdout, sig);
    }
    json_decref(sig);
    return rc == 0 ? 0 : tide_cli_exit_code(TIDE_EIO);
}
