/* `tide demand SERVICE RPS`: push a service's observed demand
 * (POST /v1/services/SERVICE/demand). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "util/util.h"

static void demand_usage(FILE *f)
{
    fprintf(f,
            "usage: tide demand SERVICE RPS [--server URL] [--token T] [--json]\n"
            "\n"
            "Push the demand a service observes now, in requests per second (POST\n"
            "/v1/services/SERVICE/demand {\"rps\": RPS}): what a router or a load\n"
            "balancer's exporter would send. It holds until the next push (or the next\n"
            "pulled value with --demand-query). Routers and admins only.\n"
            "\n"
            "options:\n" TIDE_REMOTE_HELP TIDE_REMOTE_EXIT_HELP);
}

int tide_cmd_demand(int argc, char **argv)
{
    tide_remote_opts_t ro = {0};
    int rc = tide_remote_args("demand", argc, argv, &ro, demand_usage);
    if (rc >= 0)
        return rc;
    if (argc - optind != 2)
        return tide_cli_usage_error("demand", "give SERVICE and RPS (requests per second)");
    double rps;
    if (tide_parse_double(argv[optind + 1], &rps) < 0 || !isfinite(rps) || rps < 0)
        return tide_cli_usage_error("demand", "RPS: '%s' is not a number >= 0", argv[optind + 1]);
    tide_client_t c;
    if ((rc = tide_remote_connect(&ro, &c)) >= 0)
        return rc;
    char path[1024] = "/v1/services/";
    tide_client_urlenc(path, sizeof path, argv[optind]);
    strncat(path, "/demand", sizeof path - strlen(path) - 1);
    json_t *body = json_pack("{s:f}", "rps", rps);
    tide_error_t err = {0};
    json_t *res = tide_client_call(&c, "POST", path, body, NULL, &err);
    json_decref(body);
    tide_client_fini(&c);
    if (!res)
        return tide_remote_fail(&err);
    if (ro.json) {
        tide_remote_print_json(res);
    } else {
        printf("%s: demand %g rps\n", argv[optind], rps);
    }
    json_decref(res);
    return 0;
}
