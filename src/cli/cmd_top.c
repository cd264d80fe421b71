/* `tide top`: a live terminal view of the daemon: GPUs by owner per node as a
 * grid of characters, the queue, services' demand and ready capacity. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "util/util.h"

#define TOP_QUEUE_ROWS 10

static void top_usage(FILE *f)
{
    fprintf(f,
            "usage: tide top [--once] [--interval D] [--server URL] [--token T] [--json]\n"
            "\n"
            "A live view of the cluster, redrawn every 2 s until interrupted (Ctrl-C):\n"
            "GPU counts by state, one character per GPU grouped by node, the services'\n"
            "demand and ready capacity, and the head of the training queue.\n"
            "\n"
            "grid:  S inference replica   T training job   B training on borrowed GPUs\n"
            "       (a lease)   R training job under a reclaim notice   . free\n"
            "       x node down\n"
            "\n"
            "options:\n"
            "      --once         print one frame and exit (no screen clearing)\n"
            "  -i, --interval D   refresh period (default 2s)\n" TIDE_REMOTE_HELP
            "\nWith --json, each frame is one JSON object {cluster, nodes, services, queue,\n"
            "leases} on one line.\n" TIDE_REMOTE_EXIT_HELP);
}

/* Everything one frame shows (owned JSON documents). */
typedef struct frame {
    json_t *cluster, *nodes, *services, *queue, *reclaiming, *leases;
} frame_t;

static void frame_free(frame_t *f)
{
    json_decref(f->cluster);
    json_decref(f->nodes);
    json_decref(f->services);
    json_decref(f->queue);
    json_decref(f->reclaiming);
    json_decref(f->leases);
    memset(f, 0, sizeof *f);
}

static int frame_fetch(const tide_client_t *c, frame_t *f, tide_error_t *err)
{
    char qpath[64];
    snprintf(qpath, sizeof qpath, "/v1/jobs?state=queued&limit=%d", TOP_QUEUE_ROWS);
    if (!(f->cluster = tide_remote_get(c, "/v1/cluster", err)) ||
        !(f->nodes = tide_remote_get(c, "/v1/nodes", err)) ||
        !(f->services = tide_remote_get(c, "/v1/services", err)) ||
        !(f->queue = tide_remote_get(c, qpath, err)) ||
        !(f->reclaiming = tide_remote_get(c, "/v1/jobs?state=reclaiming&limit=1000", err)) ||
        !(f->leases = tide_remote_get(c, "/v1/leases?active=1", err)))
        return -1;
    return 0;
}

/* Is job id in the "jobs" array of list (by "id") / the "leases" array (by "job")? */
static int listed(const json_t *arr, const char *key, const char *id)
{
    size_t i;
    const json_t *x;
    json_array_foreach(arr, i, x) {
        const char *v = json_string_value(json_object_get(x, key));
        if (v && !strcmp(v, id))
            return 1;
    }
    return 0;
}

static char gpu_char(const frame_t *f, int up, const json_t *owner)
{
    if (!up)
        return 'x';
    const char *o = json_string_value(owner);
    if (!o)
        return '.';
    if (!strncmp(o, "replica:", 8))
        return 'S';
    if (!strncmp(o, "job:", 4)) {
        const char *id = o + 4;
        if (listed(json_object_get(f->reclaiming, "jobs"), "id", id))
            return 'R';
        if (listed(json_object_get(f->leases, "leases"), "job", id))
            return 'B';
        return 'T';
    }
    return '?';
}

static int term_width(void)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
        return ws.ws_col;
    const char *cols = getenv("COLUMNS");
    long long v;
    if (cols && tide_parse_int(cols, &v) == 0 && v >= 20 && v < 10000)
        return (int)v;
    return 100;
}

/* Print the stats object: scalars on one line, nested objects one line each. */
static void print_stats(FILE *o, const json_t *stats)
{
    const char *key;
    const json_t *v;
    char buf[256];
    int col = 0;
    json_object_foreach((json_t *)stats, key, v) {
        if (json_is_object(v) || json_is_array(v))
            continue;
        col += fprintf(o, "%s%s %s", col ? "  " : "", key, tide_remote_fmt(v, 1, buf, sizeof buf));
        if (col > 90) {
            fputc('\n', o);
            col = 0;
        }
    }
    if (col)
        fputc('\n', o);
    json_object_foreach((json_t *)stats, key, v) {
        if (!json_is_object(v))
            continue;
        fprintf(o, "%s:", key);
        const char *k2, *k3;
        const json_t *v2, *v3;
        json_object_foreach((json_t *)v, k2, v2) {
            if (!json_is_object(v2)) {
                fprintf(o, " %s %s", k2, tide_remote_fmt(v2, 1, buf, sizeof buf));
                continue;
            }
            if (json_object_size(v2) == 0)
                continue; /* nested and empty: nothing to say */
            fprintf(o, " %s(", k2);
            int first = 1;
            json_object_foreach((json_t *)v2, k3, v3) {
                fprintf(o, "%s%s %s", first ? "" : ", ", k3, tide_remote_fmt(v3, 1, buf, sizeof buf));
                first = 0;
            }
            fputc(')', o);
        }
        fputc('\n', o);
    }
}

static void print_grid(FILE *o, const frame_t *f, int width)
{
    const json_t *nodes = json_object_get(f->nodes, "nodes");
    size_t i;
    const json_t *n;
    /* widest cell: "n123 TYPE " + GPUs */
    size_t cellw = 0, maxg = 0, typew = 0;
    json_array_foreach(nodes, i, n) {
        maxg = TIDE_MAX(maxg, json_array_size(json_object_get(n, "gpus")));
        const char *t = json_string_value(json_object_get(n, "type"));
        typew = TIDE_MAX(typew, t ? strlen(t) : 0);
    }
    int idw = snprintf(NULL, 0, "%zu", json_array_size(nodes));
    cellw = (size_t)idw + 1 + typew + 1 + maxg + 3;
    size_t per_line = TIDE_MAX((size_t)1, (size_t)width / TIDE_MAX(cellw, (size_t)1));
    size_t col = 0;
    json_array_foreach(nodes, i, n) {
        const json_t *g = json_object_get(n, "gpus");
        int up = !json_is_false(json_object_get(n, "up"));
        char cells[256] = "";
        size_t k = 0, gi;
        const json_t *gpu;
        json_array_foreach(g, gi, gpu) {
            if (k + 1 < sizeof cells)
                cells[k++] = gpu_char(f, up, json_object_get(gpu, "owner"));
        }
        cells[k] = '\0';
        const json_t *id = json_object_get(n, "node");
        const char *t = json_string_value(json_object_get(n, "type"));
        fprintf(o, "n%-*lld %-*s %-*s", idw, json_is_integer(id) ? (long long)json_integer_value(id) : (long long)i,
                (int)typew, t ? t : "", (int)maxg, cells);
        if (++col == per_line || i + 1 == json_array_size(nodes)) {
            fputc('\n', o);
            col = 0;
        } else {
            fputs("   ", o);
        }
    }
}

static void print_services(FILE *o, const json_t *svcs)
{
    static const char *const head[] = {"SERVICE", ">DEMAND_RPS", ">READY", ">WARMING",
                                       ">CAPACITY_RPS", ">MARGIN"};
    tide_table_t t;
    tide_table_init(&t, 6, head);
    size_t i;
    const json_t *s;
    json_array_foreach(svcs, i, s) {
        char b[6][128];
        snprintf(b[4], sizeof b[4], "%.1f",
                 json_number_value(json_object_get(s, "ready")) *
                     json_number_value(json_object_get(s, "replica_rps")));
        const json_t *m = json_object_get(s, "margin");
        if (json_is_number(m))
            snprintf(b[5], sizeof b[5], "%.1f%%", 100 * json_number_value(m));
        else
            snprintf(b[5], sizeof b[5], "-");
        const char *row[6] = {tide_remote_val(s, "name", 1, b[0], 128),
                              tide_remote_val(s, "demand_rps", 1, b[1], 128),
                              tide_remote_val(s, "ready", 1, b[2], 128),
                              tide_remote_val(s, "warming", 1, b[3], 128), b[4], b[5]};
        tide_table_row(&t, row);
    }
    tide_table_print(&t, o);
    tide_table_free(&t);
}

static void print_queue(FILE *o, const json_t *jobs)
{
    static const char *const head[] = {"QUEUED", "TEAM", ">PRI", ">GPUS", ">PROGRESS",
                                       "SUBMITTED"};
    tide_table_t t;
    tide_table_init(&t, 6, head);
    size_t i;
    const json_t *j;
    json_array_foreach(jobs, i, j) {
        char b[6][128];
        const char *row[6] = {tide_remote_val(j, "id", 0, b[0], 128),
                              tide_remote_val(j, "team", 0, b[1], 128),
                              tide_remote_val(j, "priority", 0, b[2], 128),
                              tide_remote_val(j, "gpus", 0, b[3], 128),
                              tide_remote_dur(j, "progress_s", b[4], 128),
                              tide_remote_clock(j, "submitted_s", b[5], 128)};
        tide_table_row(&t, row);
    }
    tide_table_print(&t, o);
    tide_table_free(&t);
}

static void render(FILE *o, const tide_client_t *c, const frame_t *f, double interval, int once)
{
    const json_t *cl = f->cluster;
    char b1[64], b2[64], b3[64];
    fprintf(o, "tide top  %s  policy %s  engine %s  GPUs %s  nodes %s", c->url,
            tide_remote_val(cl, "policy", 0, b1, sizeof b1),
            tide_remote_clock(cl, "now_s", b2, sizeof b2),
            tide_remote_val(cl, "gpus", 0, b3, sizeof b3),
            tide_remote_val(cl, "nodes", 0, (char[32]){0}, 32));
    if (!once)
        fprintf(o, "  (every %gs, Ctrl-C quits)", interval);
    fputc('\n', o);
    const json_t *stats = json_object_get(cl, "stats");
    if (json_is_object(stats))
        print_stats(o, stats);
    fputs("\nGPUs (S inference, T training, B borrowed, R reclaiming, . free, x down)\n", o);
    print_grid(o, f, term_width());
    fputc('\n', o);
    print_services(o, json_object_get(f->services, "services"));
    fputc('\n', o);
    const json_t *q = json_object_get(f->queue, "jobs");
    print_queue(o, q);
    const json_t *qn = json_object_get(stats, "queue_jobs");
    if (json_is_number(qn) && json_number_value(qn) > (double)json_array_size(q))
        fprintf(o, "... %g queued in all\n", json_number_value(qn));
}

static void sleep_s(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int tide_cmd_top(int argc, char **argv)
{
    enum { O_ONCE = 256 };
    static const struct option longopts[] = {
        {"once", no_argument, NULL, O_ONCE},
        {"interval", required_argument, NULL, 'i'},
        TIDE_REMOTE_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    tide_remote_opts_t ro = {0};
    int o, rc, once = 0;
    double interval = 2;
    optind = 0;
    opterr = 0;
    while ((o = getopt_long(argc, argv, ":hi:", longopts, NULL)) != -1) {
        if (tide_remote_opt(&ro, o, optarg))
            continue;
        switch (o) {
        case O_ONCE: once = 1; break;
        case 'i': {
            int64_t s;
            if (tide_parse_duration(optarg, &s) < 0 || s < 1)
                return tide_cli_usage_error("top", "--interval: '%s' is not a duration >= 1s", optarg);
            interval = (double)s;
            break;
        }
        case 'h': top_usage(stdout); return 0;
        default: return tide_cli_getopt_error("top", o, argv);
        }
    }
    if (optind < argc)
        return tide_cli_usage_error("top", "unexpected argument '%s'", argv[optind]);
    tide_client_t c;
    if ((rc = tide_remote_connect(&ro, &c)) >= 0)
        return rc;
    rc = 0;
    for (;;) {
        frame_t f = {0};
        tide_error_t err = {0};
        char *text = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        if (!m) {
            rc = 5;
            break;
        }
        int ok = frame_fetch(&c, &f, &err) == 0;
        if (ok && ro.json) {
            json_t *doc = json_pack("{s:O?,s:O?,s:O?,s:O?,s:O?}", "cluster", f.cluster, "nodes",
                                    json_object_get(f.nodes, "nodes"), "services",
                                    json_object_get(f.services, "services"), "queue",
                                    json_object_get(f.queue, "jobs"), "leases",
                                    json_object_get(f.leases, "leases"));
            json_dumpf(doc, m, JSON_COMPACT | JSON_PRESERVE_ORDER);
            fputc('\n', m);
            json_decref(doc);
        } else if (ok) {
            render(m, &c, &f, interval, once);
        }
        fclose(m);
        frame_free(&f);
        if (once) {
            if (ok)
                fwrite(text, 1, len, stdout);
            else
                rc = tide_remote_fail(&err);
            free(text);
            break;
        }
        if (!ro.json)
            fputs("\033[H\033[J", stdout);
        if (ok)
            fwrite(text, 1, len, stdout);
        else
            printf("tide top: %s (retrying every %gs)\n", err.msg, interval);
        fflush(stdout);
        free(text);
        sleep_s(interval);
    }
    tide_client_fini(&c);
    return rc;
}
