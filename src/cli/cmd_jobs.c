/* `tide jobs`: list training jobs (GET /v1/jobs, following `next` cursors). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "util/util.h"

#define JOBS_PAGE 100 /* jobs asked for per request */

static void jobs_usage(FILE *f)
{
    fprintf(f,
            "usage: tide jobs [--team T] [--state S] [--priority P] [--limit N]\n"
            "                 [--server URL] [--token T] [--output table|wide|json]\n"
            "\n"
            "List training jobs (GET /v1/jobs) in the server's order, following its\n"
            "`next` cursors until the list ends or --limit jobs were printed.\n"
            "REASON is why a queued job waits (Resources, Priority, Quota, ...) and\n"
            "START when it is expected to start (a running job: when it started), as\n"
            "squeue's REASON and START_TIME, when the daemon gives them. Times are\n"
            "wall-clock UTC (ISO 8601). --output wide adds POS (queue position),\n"
            "GANG (GPUs per gang) and LOST_GPU_S.\n"
            "\n"
            "filters:\n"
            "      --team T       only this team's jobs (submitters and viewers only\n"
            "                     ever see their own team's)\n"
            "      --state S      queued, running, reclaiming, done or cancelled\n"
            "  -p, --priority P   1..3 or P1..P3\n"
            "  -n, --limit N      print at most N jobs (default: all)\n"
            "connection:\n" TIDE_REMOTE_HELP
            "\nWith --json the pages are merged into one {\"jobs\": [...], \"next\": ...}.\n"
            TIDE_REMOTE_EXIT_HELP);
}

#define BAD(...) tide_cli_usage_error("jobs", __VA_ARGS__)

/* START: when a queued job is expected to start (expected_start_s, from the
 * head-of-queue reservation, when the daemon gives it), else when it started. */
static const char *start_cell(const json_t *j, char *buf, size_t n)
{
    if (json_is_number(json_object_get(j, "expected_start_s")))
        return tide_remote_clock(j, "expected_start_s", buf, n);
    return tide_remote_clock(j, "started_s", buf, n);
}

static void print_table(const json_t *jobs, int wide)
{
    static const char *const head[] = {"ID",       "TEAM",      ">PRI",   "STATE",  ">GPUS",
                                       ">WIDTH",   ">PROGRESS", ">COMMITTED", "SUBMITTED",
                                       ">PREEMPT", "REASON",    "START",  ">POS",   ">GANG",
                                       ">LOST_GPU_S"};
    enum { NARROW = 12, WIDE = 15 };
    size_t nc = wide ? WIDE : NARROW;
    tide_table_t t;
    tide_table_init(&t, nc, head);
    size_t i;
    const json_t *j;
    json_array_foreach(jobs, i, j) {
        char b[WIDE][128];
        const char *row[WIDE] = {
            tide_remote_val(j, "id", 3, b[0], sizeof b[0]),
            tide_remote_val(j, "team", 3, b[1], sizeof b[1]),
            tide_remote_val(j, "priority", 3, b[2], sizeof b[2]),
            tide_remote_val(j, "state", 3, b[3], sizeof b[3]),
            tide_remote_val(j, "gpus", 3, b[4], sizeof b[4]),
            tide_remote_val(j, "width", 3, b[5], sizeof b[5]),
            tide_remote_dur(j, "progress_s", b[6], sizeof b[6]),
            tide_remote_dur(j, "committed_s", b[7], sizeof b[7]),
            tide_remote_clock(j, "submitted_s", b[8], sizeof b[8]),
            tide_remote_val(j, "preemptions", 3, b[9], sizeof b[9]),
            tide_remote_val(j, "reason", 3, b[10], sizeof b[10]),
            start_cell(j, b[11], sizeof b[11]),
            tide_remote_val(j, "position", 3, b[12], sizeof b[12]),
            tide_remote_val(j, "gang_gpus", 3, b[13], sizeof b[13]),
            tide_remote_val(j, "lost_gpu_s", 0, b[14], sizeof b[14]),
        };
        if (!b[10][0])
            row[10] = "-";
        tide_table_row(&t, row);
    }
    tide_table_print(&t, stdout);
    tide_table_free(&t);
}

int tide_cmd_jobs(int argc, char **argv)
{
    enum { O_TEAM = 256, O_STATE };
    static const struct option longopts[] = {
        {"team", required_argument, NULL, O_TEAM},
        {"state", required_argument, NULL, O_STATE},
        {"priority", required_argument, NULL, 'p'},
        {"limit", required_argument, NULL, 'n'},
        TIDE_REMOTE_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    tide_remote_opts_t ro = {0};
    const char *team = NULL, *state = NULL;
    long long prio = 0, limit = -1;
    int o, rc;
    optind = 0;
    opterr = 0;
    while ((o = getopt_long(argc, argv, ":hp:n:", longopts, NULL)) != -1) {
        if (tide_remote_opt(&ro, o, optarg))
            continue;
        switch (o) {
        case O_TEAM: team = optarg; break;
        case O_STATE: state = optarg; break;
        case 'p': {
            const char *p = (optarg[0] == 'P' || optarg[0] == 'p') ? optarg + 1 : optarg;
            if (tide_parse_int(p, &prio) < 0 || prio < 1 || prio > 3)
                return BAD("--priority: '%s' is not 1..3 or P1..P3", optarg);
            break;
        }
        case 'n':
            if (tide_parse_int(optarg, &limit) < 0 || limit < 1)
                return BAD("--limit: '%s' is not a whole number >= 1", optarg);
            break;
        case 'h': jobs_usage(stdout); return 0;
        default: return tide_cli_getopt_error("jobs", o, argv);
        }
    }
    if (optind < argc)
        return BAD("unexpected argument '%s'", argv[optind]);

    tide_client_t c;
    if ((rc = tide_remote_connect(&ro, &c)) >= 0)
        return rc;
    if (!ro.json)
        tide_remote_wall_load(&c);
    json_t *all = json_array();
    json_t *next = json_null();
    tide_error_t err = {0};
    char *cursor = NULL;
    rc = 0;
    for (;;) {
        char path[2048] = "/v1/jobs?limit=";
        long long want = JOBS_PAGE;
        if (limit > 0 && limit - (long long)json_array_size(all) < want)
            want = limit - (long long)json_array_size(all);
        snprintf(path + strlen(path), sizeof path - strlen(path), "%lld", want);
        if (team) {
            strcat(path, "&team=");
            tide_client_urlenc(path, sizeof path, team);
        }
        if (state) {
            strncat(path, "&state=", sizeof path - strlen(path) - 1);
            tide_client_urlenc(path, sizeof path, state);
        }
        if (prio)
            snprintf(path + strlen(path), sizeof path - strlen(path), "&priority=%lld", prio);
        if (cursor) {
            strncat(path, "&cursor=", sizeof path - strlen(path) - 1);
            tide_client_urlenc(path, sizeof path, cursor);
        }
        json_t *page = tide_remote_get(&c, path, &err);
        if (!page) {
            rc = tide_remote_fail(&err);
            break;
        }
        const json_t *jobs = json_object_get(page, "jobs");
        if (!json_is_array(jobs)) {
            json_decref(page);
            tide_errf(&err, TIDE_EIO, "GET /v1/jobs: the answer has no \"jobs\" array");
            rc = tide_remote_fail(&err);
            break;
        }
        size_t i;
        json_t *j;
        json_array_foreach(jobs, i, j) {
            if (limit > 0 && (long long)json_array_size(all) >= limit)
                break;
            json_array_append(all, j);
        }
        json_decref(next);
        next = json_incref(json_object_get(page, "next"));
        if (!next)
            next = json_null();
        free(cursor);
        cursor = NULL;
        if (json_is_string(next))
            cursor = tide_xstrdup(json_string_value(next));
        else if (json_is_integer(next))
            cursor = tide_xstrdup(tide_remote_fmt(next, 0, (char[32]){0}, 32));
        size_t got = json_array_size(jobs);
        json_decref(page);
        if (!cursor || got == 0 || (limit > 0 && (long long)json_array_size(all) >= limit))
            break;
    }
    free(cursor);
    tide_client_fini(&c);
    if (rc == 0) {
        if (ro.json) {
            json_t *out = json_pack("{s:O,s:O}", "jobs", all, "next", next);
            tide_remote_print_json(out);
            json_decref(out);
        } else {
            print_table(all, ro.output == TIDE_OUT_WIDE);
        }
    }
    json_decref(all);
    json_decref(next);
    return rc;
}
