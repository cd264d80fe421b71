/* `tide usage`: GPU-hours accounting from a running daemon (GET /v1/usage).
 *
 * Two modes share the command: a first argument that is not an option is a
 * simulation output folder (`tide usage DIR`, cmd_usage_dir.c); otherwise
 * parse_args fills a cmdline_t and usage_daemon() asks the daemon. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "util/util.h"

static const char *const usage_dims[] = {"team", "service", "class", "state", "tier", NULL};

static void usage_usage(FILE *f)
{
    fprintf(f,
            "usage: tide usage [--by DIMS] [--since D] [--until D]\n"
            "                  [--server URL] [--token T] [--json]\n"
            "       tide usage DIR ...   a tide sim output folder (tide usage DIR --help)\n"
            "\n"
            "GPU-hours accounted by the daemon (GET /v1/usage), grouped by the\n"
            "dimensions given: team, service, class (inference, p1, p2, p3, none), state (serving,\n"
            "warming, training, checkpointing, restoring, lost, idle) and tier (A reserve,\n"
            "B inference, C lent under a lease, D training).\n"
            "\n"
            "options:\n"
            "  -b, --by DIMS      comma-separated dimensions (default team,class)\n"
            "  -s, --since D      only the last D of engine time: 30d, 12h, 3600\n"
            "  -u, --until D      up to D before now (default: now)\n" TIDE_REMOTE_HELP
            TIDE_REMOTE_EXIT_HELP);
}

#define BAD(...) tide_cli_usage_error("usage", __VA_ARGS__)

typedef struct cmdline {
    tide_remote_opts_t ro;
    char by[128];
    const char *dims[8];
    size_t ndims;
    int64_t since, until; /* seconds before now, -1 = not given */
} cmdline_t;

static int parse_by(cmdline_t *c, const char *arg)
{
    if (strlen(arg) >= sizeof c->by)
        return BAD("--by: '%s' is too long", arg);
    strcpy(c->by, arg);
    c->ndims = 0;
    char tmp[128], *save = NULL;
    strcpy(tmp, arg);
    for (char *p = strtok_r(tmp, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        const char *const *d = usage_dims;
        while (*d && strcmp(*d, p))
            d++;
        if (!*d)
            return BAD("--by: unknown dimension '%s' (known: team, service, class, state, tier)", p);
        for (size_t i = 0; i < c->ndims; i++)
            if (c->dims[i] == *d)
                return BAD("--by: '%s' given twice", p);
        c->dims[c->ndims++] = *d;
    }
    if (!c->ndims)
        return BAD("--by: empty list");
    return 0;
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(cmdline_t *c, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"by", required_argument, NULL, 'b'},
        {"since", required_argument, NULL, 's'},
        {"until", required_argument, NULL, 'u'},
        TIDE_REMOTE_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int o, rc;
    optind = 0;
    opterr = 0;
    while ((o = getopt_long(argc, argv, ":hb:s:u:", longopts, NULL)) != -1) {
        if (tide_remote_opt(&c->ro, o, optarg))
            continue;
        switch (o) {
        case 'b':
            if ((rc = parse_by(c, optarg)) != 0)
                return rc;
            break;
        case 's':
            if (tide_parse_duration(optarg, &c->since) < 0 || c->since <= 0)
                return BAD("--since: '%s' is not a positive duration (30d, 12h, 3600)", optarg);
            break;
        case 'u':
            if (tide_parse_duration(optarg, &c->until) < 0)
                return BAD("--until: '%s' is not a duration (1d, 2h, 0)", optarg);
            break;
        case 'h': usage_usage(stdout); return 0;
        default: return tide_cli_getopt_error("usage", o, argv);
        }
    }
    if (optind < argc)
        return BAD("unexpected argument '%s'", argv[optind]);
    if (c->since >= 0 && c->until >= 0 && c->until >= c->since)
        return BAD("--until %llds ago is not after --since %llds ago", (long long)c->until,
                   (long long)c->since);
    return -1;
}

static void print_table(const cmdline_t *c, const json_t *res)
{
    const json_t *rows = json_object_get(res, "rows");
    double total = json_number_value(json_object_get(res, "total_gpu_hours"));
    const char *head[10];
    char hb[8][16];
    size_t n = 0;
    for (size_t i = 0; i < c->ndims; i++) {
        snprintf(hb[i], sizeof hb[i], "%s", c->dims[i]);
        for (char *p = hb[i]; *p; p++)
            *p = (char)(*p - 'a' + 'A');
        head[n++] = hb[i];
    }
    head[n++] = ">GPU_HOURS";
    head[n++] = ">SHARE";
    tide_table_t t;
    tide_table_init(&t, n, head);
    size_t i;
    const json_t *r;
    double sum = 0;
    json_array_foreach(rows, i, r) {
        char b[10][128];
        const char *cells[10];
        size_t k = 0;
        for (size_t d = 0; d < c->ndims; d++, k++)
            cells[k] = tide_remote_val(r, c->dims[d], 1, b[k], sizeof b[k]);
        double gh = json_number_value(json_object_get(r, "gpu_hours"));
        sum += gh;
        snprintf(b[k], sizeof b[k], "%.2f", gh);
        cells[k] = b[k];
        k++;
        snprintf(b[k], sizeof b[k], "%.1f%%", total > 0 ? 100 * gh / total : 0.0);
        cells[k] = b[k];
        tide_table_row(&t, cells);
    }
    char tb[2][64];
    const char *cells[10];
    size_t k = 0;
    for (size_t d = 0; d < c->ndims; d++)
        cells[k++] = d == 0 ? "total" : "";
    snprintf(tb[0], sizeof tb[0], "%.2f", json_object_get(res, "total_gpu_hours") ? total : sum);
    snprintf(tb[1], sizeof tb[1], "100.0%%");
    cells[k++] = tb[0];
    cells[k++] = tb[1];
    tide_table_row(&t, cells);
    tide_table_print(&t, stdout);
    tide_table_free(&t);
}

static int usage_daemon(const cmdline_t *c)
{
    tide_client_t cl;
    int rc;
    if ((rc = tide_remote_connect(&c->ro, &cl)) >= 0)
        return rc;
    tide_error_t err = {0};
    char path[512] = "/v1/usage?by=";
    tide_client_urlenc(path, sizeof path, c->by);
    if (c->since >= 0 || c->until >= 0) {
        json_t *h = tide_remote_get(&cl, "/healthz", &err);
        if (!h) {
            tide_client_fini(&cl);
            return tide_remote_fail(&err);
        }
        long long now = (long long)json_number_value(json_object_get(h, "now_s"));
        json_decref(h);
        if (c->since >= 0)
            snprintf(path + strlen(path), sizeof path - strlen(path), "&since=%lld",
                     TIDE_MAX(0, now - (long long)c->since));
        if (c->until >= 0)
            snprintf(path + strlen(path), sizeof path - strlen(path), "&until=%lld",
                     TIDE_MAX(0, now - (long long)c->until));
    }
    json_t *res = tide_remote_get(&cl, path, &err);
    tide_client_fini(&cl);
    if (!res)
        return tide_remote_fail(&err);
    if (c->ro.json)
        tide_remote_print_json(res);
    else
        print_table(c, res);
    json_decref(res);
    return 0;
}

int tide_cmd_usage(int argc, char **argv)
{
    if (argc > 1 && argv[1][0] != '-') /* `tide usage DIR`: a tide sim output folder */
        return tide_cmd_usage_dir(argc, argv);
    cmdline_t c = {.since = -1, .until = -1};
    int rc = parse_by(&c, "team,class");
    if (rc != 0)
        return rc;
    if ((rc = parse_args(&c, argc, argv)) >= 0)
        return rc;
    return usage_daemon(&c);
}
