/* `tide audit`: the daemon's audit trail (GET /v1/audit, admins only) as a
 * table or as JSON lines for a SIEM. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "util/util.h"

#define AUDIT_PAGE 5000 /* rows per request (the API's most) */

static void audit_usage(FILE *f)
{
    fprintf(f,
            "usage: tide audit [--since T] [--team TEAM] [--kind KIND] [--limit N]\n"
            "                  [--server URL] [--token T] [--json]\n"
            "\n"
            "Print the daemon's audit trail (GET /v1/audit; an admin token): every request\n"
            "to a write route of the API, answered or refused, oldest first: when (UTC),\n"
            "the token's team and role, the client's address, the kind (job.submit,\n"
            "job.cancel, node.state, service.demand, admin.reload, ...), the method and\n"
            "path, the HTTP status and the error. --json prints one JSON object per line\n"
            "(with the request's first bytes, its length and SHA-256) for a SIEM.\n"
            "\n"
            "options:\n"
            "      --since T      rows at or after T: an ISO 8601 UTC time\n"
            "                     (2026-12-01T16:00:00Z) or a duration ago (1h, 7d);\n"
            "                     default: every row kept\n"
            "      --team TEAM    only this team's requests (\"\" for requests without a\n"
            "                     valid token)\n"
            "      --kind KIND    only this kind of write\n"
            "      --limit N      at most N rows (the oldest matching; default all)\n" TIDE_REMOTE_HELP
            TIDE_REMOTE_EXIT_HELP);
}

typedef struct audit_args {
    double since;
    const char *team, *kind;
    long long limit; /* 0 = all */
} audit_args_t;

static int parse_args(int argc, char **argv, tide_remote_opts_t *ro, audit_args_t *a)
{
    static const struct option longopts[] = {
        {"since", required_argument, NULL, 's'}, {"team", required_argument, NULL, 't'},
        {"kind", required_argument, NULL, 'k'},  {"limit", required_argument, NULL, 'n'},
        TIDE_REMOTE_LONGOPTS,                    {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int o;
    optind = 0;
    opterr = 0;
    while ((o = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (tide_remote_opt(ro, o, optarg))
            continue;
        switch (o) {
        case 's':
            if (tide_cli_parse_since(optarg, &a->since) < 0)
                return tide_cli_usage_error("audit", "--since: '%s' is not an ISO 8601 UTC time "
                                            "(2026-12-01T16:00:00Z) or a duration ago (1h)",
                                            optarg);
            break;
        case 't': a->team = optarg; break;
        case 'k': a->kind = optarg; break;
        case 'n':
            if (tide_parse_int(optarg, &a->limit) < 0 || a->limit < 1)
                return tide_cli_usage_error("audit", "--limit: '%s' is not a count >= 1", optarg);
            break;
        case 'h': audit_usage(stdout); return 0;
        default: return tide_cli_getopt_error("audit", o, argv);
        }
    }
    if (optind < argc)
        return tide_cli_usage_error("audit", "unexpected argument '%s'", argv[optind]);
    return -1;
}

static void add_arg(char *path, size_t n, const char *key, const char *val)
{
    char enc[512] = "";
    tide_client_urlenc(enc, sizeof enc, val);
    size_t l = strlen(path);
    snprintf(path + l, n - l, "&%s=%s", key, enc);
}

static void table_row(tide_table_t *t, const json_t *r)
{
    char b[8][256];
    double tm = json_number_value(json_object_get(r, "time"));
    time_t ts = (time_t)floor(tm);
    struct tm u;
    gmtime_r(&ts, &u);
    strftime(b[0], sizeof b[0], "%Y-%m-%dT%H:%M:%SZ", &u);
    snprintf(b[5], sizeof b[5], "%s %s", json_string_value(json_object_get(r, "method")),
             json_string_value(json_object_get(r, "path")));
    const char *msg = json_string_value(json_object_get(r, "message"));
    snprintf(b[7], sizeof b[7], "%.80s", msg ? msg : "");
    const char *row[8] = {b[0],
                          tide_remote_val(r, "team", 0, b[1], sizeof b[1]),
                          tide_remote_val(r, "role", 0, b[2], sizeof b[2]),
                          tide_remote_val(r, "peer", 0, b[3], sizeof b[3]),
                          tide_remote_val(r, "kind", 0, b[4], sizeof b[4]),
                          b[5],
                          tide_remote_val(r, "status", 0, b[6], sizeof b[6]),
                          msg ? b[7] : NULL};
    tide_table_row(t, row);
}

/* Page through GET /v1/audit (cursor `after`) until done or the limit. */
static int fetch_all(const tide_client_t *c, const audit_args_t *a, int json,
                     tide_table_t *t)
{
    long long after = 0, printed = 0;
    for (;;) {
        long long want = AUDIT_PAGE;
        if (a->limit && a->limit - printed < want)
            want = a->limit - printed;
        char path[2048];
        snprintf(path, sizeof path, "/v1/audit?since=%lld&after=%lld&limit=%lld",
                 (long long)floor(a->since), after, want);
        if (a->team)
            add_arg(path, sizeof path, "team", a->team);
        if (a->kind)
            add_arg(path, sizeof path, "kind", a->kind);
        tide_error_t err = {0};
        json_t *j = tide_remote_get(c, path, &err);
        if (!j)
            return tide_remote_fail(&err);
        const json_t *rows = json_object_get(j, "audit");
        size_t i, n = json_array_size(rows);
        const json_t *r;
        json_array_foreach(rows, i, r) {
            if (json) {
                char *s = json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER);
                printf("%s\n", s ? s : "{}");
                free(s);
            } else {
                table_row(t, r);
            }
        }
        printed += (long long)n;
        after = json_integer_value(json_object_get(j, "next"));
        json_decref(j);
        if ((long long)n < want || (a->limit && printed >= a->limit))
            return 0;
    }
}

int tide_cmd_audit(int argc, char **argv)
{
    tide_remote_opts_t ro = {0};
    audit_args_t a = {0};
    int rc = parse_args(argc, argv, &ro, &a);
    if (rc >= 0)
        return rc;
    tide_client_t c;
    if ((rc = tide_remote_connect(&ro, &c)) >= 0)
        return rc;
    static const char *const head[] = {"TIME", "TEAM", "ROLE", "PEER", "KIND",
                                       "REQUEST", ">STATUS", "ERROR"};
    tide_table_t t;
    tide_table_init(&t, 8, head);
    rc = fetch_all(&c, &a, ro.json, &t);
    tide_client_fini(&c);
    if (rc == 0 && !ro.json)
        tide_table_print(&t, stdout);
    tide_table_free(&t);
    return rc;
}
