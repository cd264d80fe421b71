/* `tide ui DIR`: the dashboard of `tide serve` (the same embedded page and
 * scripts) over a replay of a `tide sim` output folder (src/report/replay.h,
 * docs/ui.md), served on loopback. The page asks the same GET routes with
 * ?at=SECONDS and shows a time slider instead of the live stream. */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "daemon/daemon.h"
#include "http/auth.h"
#include "http/router.h"
#include "http/server.h"
#include "report/replay.h"
#include "util/util.h"

static void ui_usage(FILE *f)
{
    fprintf(f,
            "usage: tide ui DIR [--listen 127.0.0.1:PORT] [--policy NAME] [--jobs J.csv]\n"
            "               [--cluster SPEC]\n"
            "\n"
            "Serve the dashboard of `tide serve` (the same page, views and test hooks)\n"
            "over a replay of a `tide sim --out DIR` run: a time slider picks the moment;\n"
            "the cluster map, leases, services, queue (with why pending and expected\n"
            "start), Gantt, teams and events show the run's state then. The first line\n"
            "on stdout is \"listening on http://HOST:PORT\"; open HOST:PORT/ui/ (add\n"
            "#t=SECONDS to open at a time). SIGINT or SIGTERM stops it.\n"
            "\n"
            "options:\n"
            "  -l, --listen ADDR   loopback address and port (default 127.0.0.1:7071; port 0\n"
            "                      picks a free one). Only loopback addresses are accepted\n"
            "  -p, --policy NAME   the policy to replay (default: the first in summary.json)\n"
            "  -j, --jobs FILE     the run's jobs.csv: team, priority and gang of each job\n"
            "                      (without it teams show as ? and priorities as 2)\n"
            "  -c, --cluster SPEC  the run's --cluster (nodes and domains of the map;\n"
            "                      default: the run's GPUs in nodes of 8)\n"
            "  -h, --help          show this help\n"
            "\n"
            "The folder records GPU counts, not GPU ids: the replay places replicas from\n"
            "the first GPU up and jobs from the last GPU down. Details: docs/ui.md.\n");
}

#define bad(...) tide_cli_usage_error("ui", __VA_ARGS__)

typedef struct ui_app {
    tide_replay_t *r;
    pthread_mutex_t mu;
} ui_app_t;

/* ?at=SECONDS (default: the run's end). 0, or -1 with a 400 written. */
static int at_param(const ui_app_t *a, const tide_http_req_t *req, tide_time_t *t, tide_http_reply_t *rep)
{
    char buf[64];
    const char *s = tide_http_query(req, "at", buf, sizeof buf);
    *t = tide_replay_end(a->r);
    if (!s || !*s)
        return 0;
    char *end;
    double v = strtod(s, &end);
    if (*end || v != v) {
        tide_http_reply_error(rep, 400, "EINVAL", "at: '%s' is not a time in seconds", s);
        return -1;
    }
    *t = (tide_time_t)v;
    return 0;
}

static void reply_view(ui_app_t *a, const tide_http_req_t *req, tide_http_reply_t *rep, const char *view,
                       const char *arg)
{
    tide_time_t t;
    if (at_param(a, req, &t, rep) < 0)
        return;
    pthread_mutex_lock(&a->mu);
    json_t *o = tide_replay_view(a->r, view, arg, t);
    pthread_mutex_unlock(&a->mu);
    if (o)
        tide_http_reply_json(rep, 200, o);
    else
        tide_http_reply_error(rep, 404, "ENOENT", "no %s '%s' at %lld s", view, arg ? arg : "",
                              (long long)t);
}

#define VIEW(fn, view)                                                                         \
    static void fn(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)             \
    {                                                                                          \
        reply_view(app, req, rep, view, NULL);                                                 \
    }
VIEW(ui_cluster, "cluster")
VIEW(ui_nodes, "nodes")
VIEW(ui_services, "services")
VIEW(ui_leases, "leases")
VIEW(ui_usage_team, "usage")
VIEW(ui_events, "events")
VIEW(ui_timeline, "timeline")

static void ui_jobs(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    char sb[64];
    const char *state = tide_http_query(req, "state", sb, sizeof sb);
    reply_view(app, req, rep, "jobs", state && *state ? state : NULL);
}

static void ui_job(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    reply_view(app, req, rep, "job", req->params[0]);
}

static void ui_page(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    (void)app;
    const char *type, *data = tide_daemon_ui_asset(req->n_params ? req->params[0] : "", &type);
    if (data)
        tide_http_reply_text(rep, 200, type, data, strlen(data));
    else
        tide_http_reply_error(rep, 404, "ENOENT", "no dashboard file '%s'", req->params[0]);
}

static const tide_route_t routes[] = {
    {"GET", "/", TIDE_ROLE_PUBLIC, ui_page, NULL},
    {"GET", "/ui", TIDE_ROLE_PUBLIC, ui_page, NULL},
    {"GET", "/ui/", TIDE_ROLE_PUBLIC, ui_page, NULL},
    {"GET", "/ui/{file}", TIDE_ROLE_PUBLIC, ui_page, NULL},
    {"GET", "/v1/cluster", TIDE_ROLE_PUBLIC, ui_cluster, NULL},
    {"GET", "/v1/nodes", TIDE_ROLE_PUBLIC, ui_nodes, NULL},
    {"GET", "/v1/services", TIDE_ROLE_PUBLIC, ui_services, NULL},
    {"GET", "/v1/leases", TIDE_ROLE_PUBLIC, ui_leases, NULL},
    {"GET", "/v1/jobs", TIDE_ROLE_PUBLIC, ui_jobs, NULL},
    {"GET", "/v1/jobs/{id}", TIDE_ROLE_PUBLIC, ui_job, NULL},
    {"GET", "/v1/usage", TIDE_ROLE_PUBLIC, ui_usage_team, NULL},
    {"GET", "/v1/events", TIDE_ROLE_PUBLIC, ui_events, NULL},
    {"GET", "/v1/replay/timeline", TIDE_ROLE_PUBLIC, ui_timeline, NULL},
};

static int loopback(const char *listen)
{
    char host[256], port[32];
    tide_error_t err = {0};
    if (tide_http_listen_parse(listen, host, sizeof host, port, sizeof port, &err) < 0)
        return 0;
    return !strncmp(host, "127.", 4) || !strcmp(host, "::1") || !strcmp(host, "localhost");
}

/* Serve until SIGINT / SIGTERM. */
static int serve(ui_app_t *a, const char *listen)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* before the server's threads exist */
    tide_error_t err = {0};
    tide_auth_t *auth = tide_auth_create();
    tide_router_t *router = tide_router_create(routes, sizeof routes / sizeof routes[0], auth, a);
    tide_http_server_t *srv = tide_http_server_start(listen, router, &err);
    int rc = 0;
    if (!srv) {
        rc = tide_cli_fail("ui", &err);
    } else {
        printf("listening on %s\n", tide_http_server_url(srv));
        fflush(stdout);
        int sig = 0;
        sigwait(&set, &sig);
        fprintf(stderr, "tide ui: %s: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
        tide_http_server_stop(srv);
    }
    tide_router_destroy(router);
    tide_auth_destroy(auth);
    return rc;
}

int tide_cmd_ui(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"listen", required_argument, NULL, 'l'}, {"policy", required_argument, NULL, 'p'},
        {"jobs", required_argument, NULL, 'j'},   {"cluster", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    const char *listen = "127.0.0.1:7071", *policy = NULL, *jobs = NULL, *cluster = NULL;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":l:p:j:c:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'l': listen = optarg; break;
        case 'p': policy = optarg; break;
        case 'j': jobs = optarg; break;
        case 'c': cluster = optarg; break;
        case 'h': ui_usage(stdout); return 0;
        default: return tide_cli_getopt_error("ui", c, argv);
        }
    }
    if (optind >= argc)
        return bad("the run directory DIR (tide sim --out DIR) is required");
    const char *dir = argv[optind++];
    if (optind < argc)
        return bad("unexpected argument '%s'", argv[optind]);
    if (!loopback(listen))
        return bad("--listen: '%s' is not a loopback address (127.0.0.1:PORT, [::1]:PORT)", listen);
    tide_error_t err = {0};
    ui_app_t a = {.r = tide_replay_open(dir, policy, jobs, cluster, &err)};
    if (!a.r)
        return tide_cli_fail("ui", &err);
    pthread_mutex_init(&a.mu, NULL);
    int rc = serve(&a, listen);
    pthread_mutex_destroy(&a.mu);
    tide_replay_free(a.r);
    return rc;
}
