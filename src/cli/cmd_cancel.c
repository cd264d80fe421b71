/* `tide cancel ID`: cancel a training job (POST /v1/jobs/ID/cancel). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "util/util.h"

static void cancel_usage(FILE *f)
{
    fprintf(f,
            "usage: tide cancel ID... [--server URL] [--token T] [--json]\n"
            "\n"
            "Cancel training jobs (POST /v1/jobs/ID/cancel). A queued job is removed\n"
            "from the queue; a running one is stopped and its GPUs freed. Submitters may\n"
            "cancel only their own team's jobs. With several ids, every one is tried and\n"
            "the exit status is the first failure's.\n"
            "\n"
            "options:\n" TIDE_REMOTE_HELP TIDE_REMOTE_EXIT_HELP);
}

int tide_cmd_cancel(int argc, char **argv)
{
    tide_remote_opts_t ro = {0};
    int rc = tide_remote_args("cancel", argc, argv, &ro, cancel_usage);
    if (rc >= 0)
        return rc;
    if (optind >= argc)
        return tide_cli_usage_error("cancel", "a job id is required");
    tide_client_t c;
    if ((rc = tide_remote_connect(&ro, &c)) >= 0)
        return rc;
    rc = 0;
    for (int i = optind; i < argc; i++) {
        char path[2048] = "/v1/jobs/";
        tide_client_urlenc(path, sizeof path, argv[i]);
        strncat(path, "/cancel", sizeof path - strlen(path) - 1);
        tide_error_t err = {0};
        json_t *j = tide_client_call(&c, "POST", path, NULL, NULL, &err);
        if (!j) {
            int r = tide_remote_fail(&err);
            if (!rc)
                rc = r;
            continue;
        }
        if (ro.json) {
            tide_remote_print_json(j);
        } else {
            char b1[512], b2[64];
            const char *id = json_object_get(j, "id") ? tide_remote_val(j, "id", 0, b1, sizeof b1)
                                                      : argv[i];
            printf("cancelled %s (state %s)\n", id, tide_remote_val(j, "state", 0, b2, sizeof b2));
        }
        json_decref(j);
    }
    tide_client_fini(&c);
    return rc;
}
