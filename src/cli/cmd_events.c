/* `tide events`: the daemon's event log (GET /v1/events), once or followed. */
#include <getopt.h>
#include <math.h>
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
            "usage: tide events [--job ID] [--kind K[,K...]] [--since T] [--cursor N]\n"
            "                   [--limit N] [--follow [--interval D]]\n"
            "                   [--server URL] [--token T] [--output table|json]\n"
            "\n"
            "Print the daemon's event log (GET /v1/events): reclaim notices, lease\n"
            "grants and returns, replica starts and readiness, job starts, stops and\n"
            "checkpoints, in order. Times are wall-clock UTC (ISO 8601) when the\n"
            "daemon gives its clock mapping, else engine-clock times.\n"
            "\n"
            "filters (all must match):\n"
            "      --job ID       only events of this job\n"
            "      --kind K,...   only these kinds (job_start, job_stop, ckpt_notice,\n"
            "                     ckpt_committed, lease_grant, foreign, node_failed, ...)\n"
            "      --since T      only events at or after T: an ISO 8601 UTC time\n"
            "                     (2026-12-01T16:00:00Z), or a duration ago (10m, 2h)\n"
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
    printf("%7s  %-20s  %-16s  %-18s  %-12s  %5s  %-10s  %s\n", "SEQ", "TIME", "KIND", "JOB",
           "SERVICE", "GPUS", "REASON", "DETAILS");
}

static void print_event(const json_t *e)
{
    char b[7][256];
    printf("%7s  %-20s  %-16s  %-18s  %-12s  %5s  %-10s ", tide_remote_val(e, "seq", 0, b[0], 256),
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

/* --interval: a duration >= 1s ("2s") or milliseconds >= 10 ("500ms").
 * Returns 0, or -1 with *why set. */
static int parse_interval(const char *arg, double *out, const char **why)
{
    size_t l = strlen(arg);
    double ms;
    int64_t s;
    if (l > 2 && !strcmp(arg + l - 2, "ms")) {
        char tmp[64];
        snprintf(tmp, sizeof tmp, "%.*s", (int)(l - 2), arg);
        if (tide_parse_double(tmp, &ms) < 0 || ms < 10) {
            *why = "is not a duration >= 10ms";
            return -1;
        }
        *out = ms / 1000;
        return 0;
    }
    if (tide_parse_duration(arg, &s) == 0 && s >= 1) {
        *out = (double)s;
        return 0;
    }
    *why = "is not a duration (1s, 500ms)";
    return -1;
}

/* One `tide events` run: options and progress. */
typedef struct evrun {
    long long cursor, limit, printed;
    double interval;
    int follow, json, header;
    json_t *all; /* --json without --follow: every event, printed at the end */
    const char *job, *kinds; /* filters (NULL: any) */
    double since;            /* engine time (-inf: any) */
} evrun_t;

/* Is name one of the comma-separated names in list? */
static int in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        size_t l = strcspn(p, ",");
        if (l == n && !strncmp(p, name, n))
            return 1;
        p += l;
        if (*p)
            p++;
    }
    return 0;
}

/* Does event e pass the filters? */
static int wanted(const evrun_t *r, const json_t *e)
{
    const json_t *job = json_object_get(e, "job"), *kind = json_object_get(e, "kind"),
                 *t = json_object_get(e, "time_s");
    if (r->job && !(json_is_string(job) && !strcmp(json_string_value(job), r->job)))
        return 0;
    if (r->kinds && !(json_is_string(kind) && in_list(r->kinds, json_string_value(kind))))
        return 0;
    if (isfinite(r->since) && !(json_is_number(t) && json_number_value(t) >= r->since))
        return 0;
    return 1;
}

/* Print (or collect) a page of events up to the limit. Returns 1 when the
 * limit cut the page (*last_seq = the last event printed), else 0. */
static int print_page(evrun_t *r, const json_t *evs, long long *last_seq)
{
    size_t i;
    json_t *e;
    *last_seq = -1;
    json_array_foreach(evs, i, e) {
        if (r->limit > 0 && r->printed >= r->limit)
            return 1;
        if (json_is_integer(json_object_get(e, "seq")))
            *last_seq = (long long)json_integer_value(json_object_get(e, "seq"));
        if (!wanted(r, e))
            continue;
        r->printed++;
        if (r->all)
            json_array_append(r->all, e);
        else if (r->json) {
            json_dumpf(e, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
            putchar('\n');
        } else
            print_event(e);
    }
    return 0;
}

/* Page through /v1/events from r->cursor (following when asked). Returns 0
 * or the exit status (message printed). */
static int fetch_events(tide_client_t *c, evrun_t *r)
{
    for (;;) {
        char path[128];
        long long want = EVENTS_PAGE;
        if (r->limit > 0 && r->limit - r->printed < want)
            want = r->limit - r->printed;
        snprintf(path, sizeof path, "/v1/events?cursor=%lld&limit=%lld", r->cursor, want);
        tide_error_t err = {0};
        json_t *page = tide_remote_get(c, path, &err);
        if (!page)
            return tide_remote_fail(&err);
        const json_t *evs = json_object_get(page, "events");
        const json_t *next = json_object_get(page, "next");
        if (!json_is_array(evs)) {
            json_decref(page);
            tide_errf(&err, TIDE_EIO, "GET /v1/events: the answer has no \"events\" array");
            return tide_remote_fail(&err);
        }
        if (!r->json && !r->header) {
            print_header();
            r->header = 1;
        }
        long long last_seq;
        int truncated = print_page(r, evs, &last_seq);
        size_t got = json_array_size(evs);
        long long nc = json_is_number(next) ? (long long)json_number_value(next) : r->cursor;
        if (json_is_string(next))
            tide_parse_int(json_string_value(next), &nc);
        if (truncated && last_seq >= 0)
            nc = last_seq; /* resume right after the last event printed */
        int moved = nc != r->cursor;
        r->cursor = nc;
        json_decref(page);
        fflush(stdout);
        if (r->limit > 0 && r->printed >= r->limit)
            return 0;
        if (got > 0 && moved)
            continue; /* more may be waiting */
        if (!r->follow)
            return 0;
        sleep_s(r->interval);
    }
}

int tide_cmd_events(int argc, char **argv)
{
    enum { O_INTERVAL = 256, O_JOB, O_KIND, O_SINCE };
    static const struct option longopts[] = {
        {"job", required_argument, NULL, O_JOB},
        {"kind", required_argument, NULL, O_KIND},
        {"since", required_argument, NULL, O_SINCE},
        {"cursor", required_argument, NULL, 'c'},
        {"limit", required_argument, NULL, 'n'},
        {"follow", no_argument, NULL, 'f'},
        {"interval", required_argument, NULL, O_INTERVAL},
        TIDE_REMOTE_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    tide_remote_opts_t ro = {0};
    evrun_t r = {.limit = -1, .interval = 1.0, .since = -INFINITY};
    const char *why, *since = NULL;
    double since_unix = 0;
    int o, rc;
    optind = 0;
    opterr = 0;
    while ((o = getopt_long(argc, argv, ":hc:n:f", longopts, NULL)) != -1) {
        if (tide_remote_opt(&ro, o, optarg))
            continue;
        switch (o) {
        case 'c':
            if (tide_parse_int(optarg, &r.cursor) < 0 || r.cursor < 0)
                return BAD("--cursor: '%s' is not a whole number >= 0", optarg);
            break;
        case 'n':
            if (tide_parse_int(optarg, &r.limit) < 0 || r.limit < 1)
                return BAD("--limit: '%s' is not a whole number >= 1", optarg);
            break;
        case 'f': r.follow = 1; break;
        case O_JOB: r.job = optarg; break;
        case O_KIND:
            if (!*optarg)
                return BAD("--kind: empty (give event kinds like job_start,job_stop)");
            r.kinds = optarg;
            break;
        case O_SINCE:
            if (tide_cli_parse_since(optarg, &since_unix) < 0)
                return BAD("--since: '%s' is not an ISO 8601 UTC time (2026-12-01T16:00:00Z) or a "
                           "duration (10m)", optarg);
            since = optarg;
            break;
        case O_INTERVAL:
            if (parse_interval(optarg, &r.interval, &why) < 0)
                return BAD("--interval: '%s' %s", optarg, why);
            break;
        case 'h': events_usage(stdout); return 0;
        default: return tide_cli_getopt_error("events", o, argv);
        }
    }
    if (optind < argc)
        return BAD("unexpected argument '%s'", argv[optind]);

    tide_client_t c;
    if ((rc = tide_remote_connect(&ro, &c)) >= 0)
        return rc;
    r.json = ro.json;
    if (tide_remote_wall_load(&c) == 0 && since) {
        tide_client_fini(&c);
        fprintf(stderr, "tide events: --since: the daemon gives no wall clock mapping\n");
        return 6;
    }
    if (since) {
        /* engine time of since_unix: the inverse of tide_remote_wall_of */
        double w0 = tide_remote_wall_of(0), w1 = tide_remote_wall_of(1);
        r.since = (since_unix - w0) / (w1 - w0);
    }
    r.all = (ro.json && !r.follow) ? json_array() : NULL;
    rc = fetch_events(&c, &r);
    tide_client_fini(&c);
    if (r.all) {
        if (rc == 0) {
            json_t *out = json_pack("{s:O,s:I}", "events", r.all, "next", (json_int_t)r.cursor);
            tide_remote_print_json(out);
            json_decref(out);
        }
        json_decref(r.all);
    } else if (!ro.json && rc == 0 && !r.follow) {
        printf("next cursor: %lld\n", r.cursor);
    }
    return rc;
}
