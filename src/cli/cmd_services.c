/* `tide services`: list inference services (GET /v1/services). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "util/util.h"

static void services_usage(FILE *f)
{
    fprintf(f,
            "usage: tide services [--server URL] [--token T] [--json]\n"
            "\n"
            "List inference services (GET /v1/services): replica size and throughput,\n"
            "floor and ceiling, warm-up, the demand last pushed, ready and warming\n"
            "replicas, the capacity of the ready ones (ready x replica_rps), the\n"
            "forecast (FORECAST: baseline peak over the next hour; SIZED_FOR: that\n"
            "peak x (1 + MARGIN), what tide scales to), the learned burst margin and\n"
            "the lead time new capacity needs now (LEAD: reclaim or warm-up).\n"
            "\n"
            "options:\n" TIDE_REMOTE_HELP TIDE_REMOTE_EXIT_HELP);
}

static void print_table(const json_t *svcs)
{
    static const char *const head[] = {"SERVICE", ">GPUS/R", ">RPS/R", ">MIN", ">MAX", ">WARMUP",
                                       ">DEMAND", ">READY", ">WARMING", ">CAPACITY", ">FORECAST", ">SIZED_FOR",
                                       ">MARGIN", ">LEAD"};
    enum { NCOL = sizeof head / sizeof head[0] };
    tide_table_t t;
    tide_table_init(&t, NCOL, head);
    size_t i;
    const json_t *s;
    json_array_foreach(svcs, i, s) {
        char b[NCOL][128];
        double cap = json_number_value(json_object_get(s, "ready")) *
                     json_number_value(json_object_get(s, "replica_rps"));
        snprintf(b[9], sizeof b[9], "%.1f", cap);
        const json_t *mv = json_object_get(s, "margin");
        if (json_is_number(mv))
            snprintf(b[12], sizeof b[12], "%.1f%%", 100 * json_number_value(mv));
        else
            snprintf(b[12], sizeof b[12], "-");
        const char *row[NCOL] = {
            tide_remote_val(s, "name", 1, b[0], sizeof b[0]),
            tide_remote_val(s, "gpus_per_replica", 1, b[1], sizeof b[1]),
            tide_remote_val(s, "replica_rps", 1, b[2], sizeof b[2]),
            tide_remote_val(s, "min_replicas", 1, b[3], sizeof b[3]),
            tide_remote_val(s, "max_replicas", 1, b[4], sizeof b[4]),
            tide_remote_dur(s, "warmup_s", b[5], sizeof b[5]),
            tide_remote_val(s, "demand_rps", 1, b[6], sizeof b[6]),
            tide_remote_val(s, "ready", 1, b[7], sizeof b[7]),
            tide_remote_val(s, "warming", 1, b[8], sizeof b[8]),
            b[9],
            tide_remote_val(s, "forecast_peak_rps", 1, b[10], sizeof b[10]),
            tide_remote_val(s, "forecast_peak_margin_rps", 1, b[11], sizeof b[11]),
            b[12],
            tide_remote_dur(s, "lead_s", b[13], sizeof b[13]),
        };
        tide_table_row(&t, row);
    }
    tide_table_print(&t, stdout);
    tide_table_free(&t);
}

int tide_cmd_services(int argc, char **argv)
{
    tide_remote_opts_t ro = {0};
    int rc = tide_remote_args("services", argc, argv, &ro, services_usage);
    if (rc >= 0)
        return rc;
    if (optind < argc)
        return tide_cli_usage_error("services", "unexpected argument '%s'", argv[optind]);
    tide_client_t c;
    if ((rc = tide_remote_connect(&ro, &c)) >= 0)
        return rc;
    tide_error_t err = {0};
    json_t *j = tide_remote_get(&c, "/v1/services", &err);
    tide_client_fini(&c);
    if (!j)
        return tide_remote_fail(&err);
    if (ro.json)
        tide_remote_print_json(j);
    else
        print_table(json_object_get(j, "services"));
    json_decref(j);
    return 0;
}
