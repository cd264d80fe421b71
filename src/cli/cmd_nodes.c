/* `tide nodes`: the daemon's nodes as sinfo shows them (GET /v1/nodes): state,
 * GPUs by owner (inference, training, foreign jobs, idle), drain reason. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "util/util.h"

static void nodes_usage(FILE *f)
{
    fprintf(f,
            "usage: tide nodes [--server URL] [--token T] [--output table|wide|json]\n"
            "\n"
            "List the daemon's nodes (GET /v1/nodes), like sinfo: NODE (the backend's\n"
            "name, e.g. Slurm's hostname, else the index), STATE (up, drained: down\n"
            "with a reason, down), ZONE (A Tier A reserve, I inference, T training,\n"
            "S shared), GPUS, then the GPUs by owner: INFER (serving or warming\n"
            "replicas), TRAIN (training jobs, lent or not), FOREIGN (held by jobs tide\n"
            "does not manage, e.g. a plain sbatch job: tide never places on them),\n"
            "IDLE, and REASON (why it was drained). --output wide adds the node index,\n"
            "GPU type, domain, and OWNERS (who holds the GPUs: job:ID xN, replica:R xN).\n"
            "\n"
            "options:\n" TIDE_REMOTE_HELP TIDE_REMOTE_EXIT_HELP);
}

/* Tally of one node's GPUs by what they do. */
typedef struct tally {
    int infer, train, foreign, idle;
    char owners[512];
} tally_t;

static void owners_add(tally_t *t, const char *owner)
{
    /* "owner xN" entries in order of first appearance, counts kept inline */
    char key[200];
    snprintf(key, sizeof key, "%s x", owner);
    char *p = strstr(t->owners, key);
    size_t kl = strlen(key);
    if (p && (p == t->owners || p[-1] == ' ')) {
        int n = atoi(p + kl) + 1;
        char rest[512];
        const char *after = p + kl;
        while (*after >= '0' && *after <= '9')
            after++;
        snprintf(rest, sizeof rest, "%s", after);
        snprintf(p + kl, sizeof t->owners - (size_t)(p + kl - t->owners), "%d%s", n, rest);
        return;
    }
    size_t l = strlen(t->owners);
    snprintf(t->owners + l, sizeof t->owners - l, "%s%s1", l ? " " : "", key);
}

static void tally_node(const json_t *node, tally_t *t)
{
    memset(t, 0, sizeof *t);
    size_t i;
    const json_t *g;
    json_array_foreach(json_object_get(node, "gpus"), i, g) {
        const char *st = json_string_value(json_object_get(g, "state"));
        const json_t *own = json_object_get(g, "owner");
        st = st ? st : "";
        if (!strcmp(st, "serving") || !strcmp(st, "warming"))
            t->infer++;
        else if (!strcmp(st, "training") || !strcmp(st, "lent") || !strcmp(st, "reclaiming"))
            t->train++;
        else if (!strcmp(st, "foreign"))
            t->foreign++;
        else if (!strcmp(st, "idle"))
            t->idle++;
        if (json_is_string(own))
            owners_add(t, json_string_value(own));
        else if (json_is_string(json_object_get(g, "team")))
            owners_add(t, json_string_value(json_object_get(g, "team")));
    }
}

static void print_nodes(const json_t *nodes, int wide)
{
    static const char *const head[] = {"NODE", "STATE", "ZONE", ">GPUS", ">INFER", ">TRAIN",
                                       ">FOREIGN", ">IDLE", "REASON", ">INDEX", "TYPE",
                                       ">DOMAIN", "OWNERS"};
    enum { NARROW = 9, WIDE = 13 };
    tide_table_t t;
    tide_table_init(&t, wide ? WIDE : NARROW, head);
    size_t i;
    const json_t *n;
    json_array_foreach(nodes, i, n) {
        tally_t ty;
        tally_node(n, &ty);
        char b[WIDE][128];
        const json_t *name = json_object_get(n, "name");
        int up = json_is_true(json_object_get(n, "up"));
        const json_t *reason = json_object_get(n, "reason");
        snprintf(b[0], sizeof b[0], "%s",
                 json_is_string(name) ? json_string_value(name)
                                      : tide_remote_val(n, "node", 0, b[12], sizeof b[12]));
        snprintf(b[1], sizeof b[1], "%s", up ? "up" : json_is_string(reason) ? "drained" : "down");
        snprintf(b[3], sizeof b[3], "%zu", json_array_size(json_object_get(n, "gpus")));
        snprintf(b[4], sizeof b[4], "%d", ty.infer);
        snprintf(b[5], sizeof b[5], "%d", ty.train);
        snprintf(b[6], sizeof b[6], "%d", ty.foreign);
        snprintf(b[7], sizeof b[7], "%d", up ? ty.idle : 0);
        const char *row[WIDE] = {
            b[0], b[1], tide_remote_val(n, "zone", 0, b[2], sizeof b[2]), b[3], b[4], b[5], b[6],
            b[7], tide_remote_val(n, "reason", 0, b[8], sizeof b[8]),
            tide_remote_val(n, "node", 0, b[9], sizeof b[9]),
            tide_remote_val(n, "type", 0, b[10], sizeof b[10]),
            tide_remote_val(n, "domain", 0, b[11], sizeof b[11]), ty.owners[0] ? ty.owners : "-",
        };
        tide_table_row(&t, row);
    }
    tide_table_print(&t, stdout);
    tide_table_free(&t);
}

int tide_cmd_nodes(int argc, char **argv)
{
    tide_remote_opts_t ro = {0};
    int rc = tide_remote_args("nodes", argc, argv, &ro, nodes_usage);
    if (rc >= 0)
        return rc;
    if (optind < argc)
        return tide_cli_usage_error("nodes", "unexpected argument '%s'", argv[optind]);
    tide_client_t c;
    if ((rc = tide_remote_connect(&ro, &c)) >= 0)
        return rc;
    tide_error_t err = {0};
    json_t *j = tide_remote_get(&c, "/v1/nodes", &err);
    tide_client_fini(&c);
    if (!j)
        return tide_remote_fail(&err);
    const json_t *nodes = json_object_get(j, "nodes");
    if (!json_is_array(nodes)) {
        json_decref(j);
        tide_errf(&err, TIDE_EIO, "GET /v1/nodes: the answer has no \"nodes\" array");
        return tide_remote_fail(&err);
    }
    if (ro.json)
        tide_remote_print_json(j);
    else
        print_nodes(nodes, ro.output == TIDE_OUT_WIDE);
    json_decref(j);
    return 0;
}
