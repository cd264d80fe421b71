/* `tide leases`: list GPU leases held by training (GET /v1/leases). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "util/util.h"

static void leases_usage(FILE *f)
{
    fprintf(f,
            "usage: tide leases [--active] [--server URL] [--token T] [--json]\n"
            "\n"
            "List the leases under which training borrows inference GPUs (GET\n"
            "/v1/leases): the job, GPUs, start and latest return (wall-clock UTC), the\n"
            "checkpoint cost, whether it may shrink instead, and whether a reclaim\n"
            "notice was sent, the GPUs came back, and came back late.\n"
            "\n"
            "options:\n"
            "  -a, --active       only live leases (not yet returned)\n" TIDE_REMOTE_HELP
            TIDE_REMOTE_EXIT_HELP);
}

static void print_table(const json_t *leases)
{
    static const char *const head[] = {">LEASE", "JOB", ">GPUS", "START", "LATEST_RETURN",
                                       ">CKPT", "SHRINK", "NOTICED", "RETURNED", "LATE"};
    tide_table_t t;
    tide_table_init(&t, 10, head);
    size_t i;
    const json_t *l;
    json_array_foreach(leases, i, l) {
        char b[10][128];
        const char *row[10] = {
            tide_remote_val(l, "id", 0, b[0], sizeof b[0]),
            tide_remote_val(l, "job", 0, b[1], sizeof b[1]),
            tide_remote_val(l, "gpus", 0, b[2], sizeof b[2]),
            tide_remote_clock(l, "start_s", b[3], sizeof b[3]),
            tide_remote_clock(l, "latest_return_s", b[4], sizeof b[4]),
            tide_remote_dur(l, "ckpt_cost_s", b[5], sizeof b[5]),
            tide_remote_val(l, "can_shrink", 0, b[6], sizeof b[6]),
            tide_remote_val(l, "noticed", 0, b[7], sizeof b[7]),
            tide_remote_val(l, "returned", 0, b[8], sizeof b[8]),
            tide_remote_val(l, "late", 0, b[9], sizeof b[9]),
        };
        tide_table_row(&t, row);
    }
    tide_table_print(&t, stdout);
    tide_table_free(&t);
}

int tide_cmd_leases(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"active", no_argument, NULL, 'a'},
        TIDE_REMOTE_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    tide_remote_opts_t ro = {0};
    int o, rc, active = 0;
    optind = 0;
    opterr = 0;
    while ((o = getopt_long(argc, argv, ":ha", longopts, NULL)) != -1) {
        if (tide_remote_opt(&ro, o, optarg))
            continue;
        switch (o) {
        case 'a': active = 1; break;
        case 'h': leases_usage(stdout); return 0;
        default: return tide_cli_getopt_error("leases", o, argv);
        }
    }
    if (optind < argc)
        return tide_cli_usage_error("leases", "unexpected argument '%s'", argv[optind]);
    tide_client_t c;
    if ((rc = tide_remote_connect(&ro, &c)) >= 0)
        return rc;
    if (!ro.json)
        tide_remote_wall_load(&c);
    tide_error_t err = {0};
    json_t *j = tide_remote_get(&c, active ? "/v1/leases?active=1" : "/v1/leases", &err);
    tide_client_fini(&c);
    if (!j)
        return tide_remote_fail(&err);
    if (ro.json)
        tide_remote_print_json(j);
    else
        print_table(json_object_get(j, "leases"));
    json_decref(j);
    return 0;
}
