/* `tide events`: the daemon's event log (GET /v1/events), once or followed. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "util/util.h"

#define EVENTS_PAGE 500

static void events_usage(FILE *f)
{
    fprintf(f,
            "usage: tide events [--cursor N] [--limit N] [--follow [--interval D]]\n"
            "                   [--server URL] [--token T] [--json]\n"
            "\n"
            "Print the daemon's event log (GET /v1/events): reclaim notices, lease\n"
            "grants and returns, replica starts and readiness, job starts, stops and\n"
            "checkpoints, in order. Times are engine-clock times.\n"
            "\n"
            "options:\n"
            "  -c, --cursor N     start after this cursor (default 0: from the beginning)\n"
            "  -n, --limit N      print at most N events, then stop (also with --follow)\n"
            "  -f, --follow       keep polling for new events until interrupted\n"
            "      --interval D   poll period with --follow (default 1s; 500ms works)\n"
            TIDE_REMOTE_HELP
            "\nWith --json: one {\"events\": [...], \"next\": N} document, or with --follow one\n"
            "event per line (JSON lines). Without --follow the table ends with the cursor to\n"
            "continue from (--cursor N).\n"
            TIDE_REMOTE_EXIT_HELP);
}

#define BAD(...) tide_cli_usage_error("events", __VA_ARGS__)

/* Columns of their own, and "type" (event or action: the kind tells). */
static const char *const known_keys[] = {"seq", "time_s", "kind", "job", "service", "gpus",
                                         "reason", "type", NULL};

static void print_header(void)
{
    printf("%7s  %-12s  %-16s  %-18s  %-12s  %5s  %-10s  %s\n", "SEQ", "TIME", "KIND", "JOB",
           "SERVICE", "GPUS", "REASON", "DETAILS");
}

static void print_event(const json_t *e)
{
    char b[7][256];
    printf("%7s  %-12s  %-16s  %-18s  %-12s  %5s  %-10s ", tide_remote_val(e, "seq", 0, b[0], 256),
           tide_remote_clock(e, "time_s", b[1], 256), tide_remote_val(e, "kind", 0, b[2], 256),
           tide_remote_val(e, "job", 0, b[3], 256), tide_remote_val(e, "service", 0, b[4], 256),
           tide_remote_val(e, "gpus", 0, b[5], 256), tide_remote_val(e, "reason", 0, b[6], 256));
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)e, key, v) {
        int known = 0;
        for (const char *const *k = known_keys; *k && !known; k++)
            known = !strcmp(*k, key);
        if (!known && !json_is_null(v)) {
            char buf[512];
            printf(" %s=%s", key, tide_remote_fmt(v, 3, buf, sizeof buf));
        }
    }
    putchar('\n');
}

static void sleep_s(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int tide_cmd_events(int argc, char **argv)
{
    enum { O_INTERVAL = 256 };
    static const struct option longopts[] = {
        {"cursor", required_argument, NULL, 'c'},
        {"limit", required_argument, NULL, 'n'},
        {"follow", no_argument, NULL, 'f'},
        {"interval", required_argument, NULL, O_INTERVAL},
        TIDE_REMOTE_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    tide_remote_opts_t ro = {0};
    long long cursor = 0, limit = -1;
    double interval = 1.0;
    int o, rc, follow = 0;
    optind = 0;
    opterr = 0;
    while ((o = getopt_long(argc, argv, ":hc:n:f", longopts, NULL)) != -1) {
        if (tide_remote_opt(&ro, o, optarg))
            continue;
        switch (o) {
        case 'c':
            if (tide_parse_int(optarg, &cursor) < 0 || cursor < 0)
                return BAD("--cursor: '%s' is not a whole number >= 0", optarg);
            break;
        case 'n':
            if (tide_parse_int(optarg, &limit) < 0 || limit < 1)
                return BAD("--limit: '%s' is not a whole number >= 1", optarg);
            break;
        case 'f': follow = 1; break;
        case O_INTERVAL: {
            size_t l = strlen(optarg);
            double ms;
            int64_t s;
            if (l > 2 && !strcmp(optarg + l - 2, "ms")) {
                char tmp[64];
                snprintf(tmp, sizeof tmp, "%.*s", (int)(l - 2), optarg);
                if (tide_parse_double(tmp, &ms) < 0 || ms < 10)
                    return BAD("--interval: '%s' is not a duration >= 10ms", optarg);
                interval = ms / 1000;
            } else if (tide_parse_duration(optarg, &s) == 0 && s >= 1) {
                interval = (double)s;
            } else {
                return BAD("--interval: '%s' is not a duration (1s, 500ms)", optarg);
            }
            break;
        }
        case 'h': events_usage(stdout); return 0;
        default: return tide_cli_getopt_error("events", o, argv);
        }
    }
    if (optind < argc)
        return BAD("unexpected argument '%s'", argv[optind]);

    tide_client_t c;
    if ((rc = tide_remote_connect(&ro, &c)) >= 0)
        return rc;
    json_t *all = (ro.json && !follow) ? json_array() : NULL;
    long long printed = 0;
    int header = 0;
    rc = 0;
    for (;;) {
        char path[128];
        long long want = EVENTS_PAGE;
        if (limit > 0 && limit - printed < want)
            want = limit - printed;
        snprintf(path, sizeof path, "/v1/events?cursor=%lld&limit=%lld", cursor, want);
        tide_error_t err = {0};
        json_t *page = tide_remote_get(&c, path, &err);
        if (!page) {
            rc = tide_remote_fail(&err);
            break;
        }
        const json_t *evs = json_object_get(page, "events");
        const json_t *next = json_object_get(page, "next");
        if (!json_is_array(evs)) {
            json_decref(page);
            tide_errf(&err, TIDE_EIO, "GET /v1/events: the answer has no \"events\" array");
            rc = tide_remote_fail(&err);
            break;
        }
        if (!ro.json && !header) {
            print_header();
            header = 1;
        }
        size_t i;
        json_t *e;
        int truncated = 0;
        long long last_seq = -1;
        json_array_foreach(evs, i, e) {
            if (limit > 0 && printed >= limit) {
                truncated = 1;
                break;
            }
            printed++;
            if (json_is_integer(json_object_get(e, "seq")))
                last_seq = (long long)json_integer_value(json_object_get(e, "seq"));
            if (all)
                json_array_append(all, e);
            else if (ro.json) {
                json_dumpf(e, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
                putchar('\n');
            } else
                print_event(e);
        }
        size_t got = json_array_size(evs);
        long long nc = json_is_number(next) ? (long long)json_number_value(next) : cursor;
        if (json_is_string(next))
            tide_parse_int(json_string_value(next), &nc);
        if (truncated && last_seq >= 0)
            nc = last_seq; /* resume right after the last event printed */
        int moved = nc != cursor;
        cursor = nc;
        json_decref(page);
        fflush(stdout);
        if (limit > 0 && printed >= limit)
            break;
        if (got > 0 && moved)
            continue; /* more may be waiting */
        if (!follow)
            break;
        sleep_s(interval);
    }
    tide_client_fini(&c);
    if (all) {
        if (rc == 0) {
            json_t *out = json_pack("{s:O,s:I}", "events", all, "next", (json_int_t)cursor);
            tide_remote_print_json(out);
            json_decref(out);
        }
        json_decref(all);
    } else if (!ro.json && rc == 0 && !follow) {
        printf("next cursor: %lld\n", cursor);
    }
    return rc;
}
