/* `tide job ID`: show one training job (GET /v1/jobs/ID). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "util/util.h"

static void job_usage(FILE *f)
{
    fprintf(f,
            "usage: tide job ID [--server URL] [--token T] [--json]\n"
            "\n"
            "Show one training job (GET /v1/jobs/ID): its state, width, progress,\n"
            "last committed checkpoint, times (wall-clock UTC), preemptions, lost work and\n"
            "current lease.\n"
            "\n"
            "options:\n" TIDE_REMOTE_HELP TIDE_REMOTE_EXIT_HELP);
}

/* Fields printed first, in this order, with how to show them. */
typedef enum { F_VAL, F_DUR, F_CLOCK } fkind_t;

static void print_job(const json_t *j)
{
    static const struct {
        const char *key;
        fkind_t kind;
    } order[] = {
        {"id", F_VAL},          {"team", F_VAL},        {"state", F_VAL},
        {"priority", F_VAL},    {"gpus", F_VAL},        {"gang_gpus", F_VAL},
        {"dp_min", F_VAL},      {"width", F_VAL},       {"duration_s", F_DUR},
        {"progress_s", F_DUR},  {"committed_s", F_DUR}, {"submitted_s", F_CLOCK},
        {"started_s", F_CLOCK}, {"finished_s", F_CLOCK}, {"preemptions", F_VAL},
        {"lost_gpu_s", F_VAL},  {"lease", F_VAL},
    };
    char buf[1024];
    size_t n = sizeof order / sizeof order[0];
    for (size_t i = 0; i < n; i++) {
        if (!json_object_get(j, order[i].key))
            continue;
        const char *v = order[i].kind == F_DUR     ? tide_remote_dur(j, order[i].key, buf, sizeof buf)
                        : order[i].kind == F_CLOCK ? tide_remote_clock(j, order[i].key, buf, sizeof buf)
                                                   : tide_remote_val(j, order[i].key, 1, buf, sizeof buf);
        printf("%-16s %s\n", order[i].key, v);
    }
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)j, key, v) {
        int seen = 0;
        for (size_t i = 0; i < n && !seen; i++)
            seen = !strcmp(key, order[i].key);
        if (!seen)
            printf("%-16s %s\n", key, tide_remote_fmt(v, 3, buf, sizeof buf));
    }
}

int tide_cmd_job(int argc, char **argv)
{
    tide_remote_opts_t ro = {0};
    int rc = tide_remote_args("job", argc, argv, &ro, job_usage);
    if (rc >= 0)
        return rc;
    if (optind >= argc)
        return tide_cli_usage_error("job", "a job id is required");
    if (optind + 1 < argc)
        return tide_cli_usage_error("job", "unexpected argument '%s'", argv[optind + 1]);
    tide_client_t c;
    if ((rc = tide_remote_connect(&ro, &c)) >= 0)
        return rc;
    if (!ro.json)
        tide_remote_wall_load(&c);
    char path[2048] = "/v1/jobs/";
    tide_client_urlenc(path, sizeof path, argv[optind]);
    tide_error_t err = {0};
    json_t *j = tide_remote_get(&c, path, &err);
    tide_client_fini(&c);
    if (!j)
        return tide_remote_fail(&err);
    if (ro.json)
        tide_remote_print_json(j);
    else
        print_job(j);
    json_decref(j);
    return 0;
}
