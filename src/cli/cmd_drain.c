/* `tide drain NODE --reason R` and `tide resume NODE`: take a node out of
 * tide's placement and give it back (POST /v1/nodes/N/state). NODE is the
 * backend's name (Slurm's hostname) or the node index. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "util/util.h"

static void drain_usage(FILE *f, int drain)
{
    if (drain)
        fprintf(f,
                "usage: tide drain NODE --reason R [--server URL] [--token T] [--json]\n"
                "\n"
                "Drain a node (POST /v1/nodes/N/state {\"up\": false, \"reason\": R}): what runs\n"
                "on it stops as on a node failure (training requeues from its last\n"
                "checkpoint, replicas are replaced elsewhere) and nothing is placed there\n"
                "until `tide resume NODE`. NODE is the node's name as `tide nodes` shows it\n"
                "(Slurm's hostname with the slurm backend) or its index. Admins only.\n"
                "The reason shows in `tide nodes` (not kept across a daemon restart).\n"
                "\n"
                "options:\n"
                "  -r, --reason R     why (required, like scontrol's Reason=)\n" TIDE_REMOTE_HELP
                TIDE_REMOTE_EXIT_HELP);
    else
        fprintf(f,
                "usage: tide resume NODE [--server URL] [--token T] [--json]\n"
                "\n"
                "Give a drained node back to tide (POST /v1/nodes/N/state {\"up\": true}):\n"
                "it is placed on again at once. NODE is a name from `tide nodes` or an\n"
                "index. Admins only.\n"
                "\n"
                "options:\n" TIDE_REMOTE_HELP TIDE_REMOTE_EXIT_HELP);
}

/* The index of node `name` (a name in /v1/nodes, or a number). -1 with err. */
static long long node_index(const tide_client_t *c, const char *name, tide_error_t *err)
{
    json_t *j = tide_remote_get(c, "/v1/nodes", err);
    if (!j)
        return -1;
    long long idx = -1, num;
    int numeric = tide_parse_int(name, &num) == 0;
    size_t i, count = 0;
    const json_t *n;
    char known[512] = "";
    json_array_foreach(json_object_get(j, "nodes"), i, n) {
        const json_t *nm = json_object_get(n, "name"), *ix = json_object_get(n, "node");
        if (json_is_string(nm) && !strcmp(json_string_value(nm), name))
            idx = json_integer_value(ix);
        else if (idx < 0 && numeric && json_is_integer(ix) && json_integer_value(ix) == num)
            idx = num;
        if (json_is_string(nm) && count++ < 12) {
            size_t l = strlen(known);
            snprintf(known + l, sizeof known - l, "%s%s", l ? ", " : "", json_string_value(nm));
        }
    }
    json_decref(j);
    if (idx < 0)
        tide_errf(err, TIDE_ENOENT, "no node '%s'%s%s%s", name, known[0] ? " (nodes: " : "",
                  known, known[0] ? ")" : "");
    return idx;
}

static int node_cmd(int argc, char **argv, int drain)
{
    const char *cmd = drain ? "drain" : "resume";
    static const struct option longopts[] = {
        {"reason", required_argument, NULL, 'r'},
        TIDE_REMOTE_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    tide_remote_opts_t ro = {0};
    const char *reason = NULL;
    int o, rc;
    optind = 0;
    opterr = 0;
    while ((o = getopt_long(argc, argv, drain ? ":hr:" : ":h", longopts, NULL)) != -1) {
        if (tide_remote_opt(&ro, o, optarg))
            continue;
        if (o == 'h') {
            drain_usage(stdout, drain);
            return 0;
        }
        if (o == 'r' && drain) {
            reason = optarg;
            continue;
        }
        if (o == 'r')
            return tide_cli_usage_error(cmd, "--reason is for tide drain");
        return tide_cli_getopt_error(cmd, o, argv);
    }
    if (optind >= argc)
        return tide_cli_usage_error(cmd, "a node name or index is required");
    if (optind + 1 < argc)
        return tide_cli_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
    if (drain && (!reason || !*reason))
        return tide_cli_usage_error(cmd, "--reason is required (why the node leaves)");
    tide_client_t c;
    if ((rc = tide_remote_connect(&ro, &c)) >= 0)
        return rc;
    tide_error_t err = {0};
    long long idx = node_index(&c, argv[optind], &err);
    json_t *res = NULL;
    if (idx >= 0) {
        char path[64];
        snprintf(path, sizeof path, "/v1/nodes/%lld/state", idx);
        json_t *body = json_pack("{s:b}", "up", !drain);
        if (drain)
            json_object_set_new(body, "reason", json_string(reason));
        res = tide_client_call(&c, "POST", path, body, NULL, &err);
        json_decref(body);
    }
    tide_client_fini(&c);
    if (!res)
        return tide_remote_fail(&err);
    if (ro.json)
        tide_remote_print_json(res);
    else
        printf("%s %s (node %lld)%s%s\n", drain ? "drained" : "resumed", argv[optind], idx,
               drain ? ": " : "", drain ? reason : "");
    json_decref(res);
    return 0;
}

int tide_cmd_drain(int argc, char **argv) { return node_cmd(argc, argv, 1); }
int tide_cmd_resume(int argc, char **argv) { return node_cmd(argc, argv, 0); }
