/* The model pipeline's commands: `tide models` (GET /v1/models), `tide
 * model show|create|register|metrics`, `tide rollout
 * status|pause|resume|promote|abort` (docs/api.md, Models). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "util/util.h"

/* ---------------------------------------------------------------- helpers */

/* "/v1/models/NAME" + tail into buf. */
static const char *model_path(char *buf, size_t n, const char *name, const char *tail)
{
    snprintf(buf, n, "/v1/models/");
    tide_client_urlenc(buf, n, name);
    strncat(buf, tail, n - strlen(buf) - 1);
    return buf;
}

/* Call and print the JSON (--json) or let show() print it. */
static int call(const tide_remote_opts_t *ro, const char *method, const char *path, json_t *body,
                void (*show)(const json_t *j))
{
    return tide_remote_call(ro, method, path, body, show);
}

static const char *rollout_text(const json_t *m, char *buf, size_t n)
{
    const json_t *r = json_object_get(m, "rollout");
    if (!json_is_object(r))
        return "-";
    char w[32];
    snprintf(buf, n, "v%lld step %lld/%lld at %s%%%s",
             (long long)json_integer_value(json_object_get(r, "version")),
             (long long)json_integer_value(json_object_get(r, "step")),
             (long long)json_integer_value(json_object_get(r, "steps")),
             tide_remote_val(r, "weight", 1, w, sizeof w),
             json_is_true(json_object_get(r, "paused")) ? " (paused)" : "");
    return buf;
}

/* ----------------------------------------------------------------- models */

static void models_usage(FILE *f)
{
    fprintf(f,
            "usage: tide models [--server URL] [--token T] [--json]\n"
            "\n"
            "List the model pipeline's models (GET /v1/models): the service each is\n"
            "released to, its aliases (SERVING, CANDIDATE, LAST_GOOD: version numbers,\n"
            "0 none), how many versions were registered and the rollout in progress.\n"
            "\n"
            "options:\n" TIDE_REMOTE_HELP TIDE_REMOTE_EXIT_HELP);
}

static void models_show(const json_t *j)
{
    static const char *const head[] = {"MODEL", "SERVICE", ">SERVING", ">CANDIDATE",
                                       ">LAST_GOOD", ">VERSIONS", "ROLLOUT"};
    tide_table_t t;
    tide_table_init(&t, 7, head);
    size_t i;
    const json_t *m;
    json_array_foreach(json_object_get(j, "models"), i, m) {
        char b[7][160];
        const json_t *al = json_object_get(m, "aliases");
        const char *row[7] = {tide_remote_val(m, "name", 0, b[0], sizeof b[0]),
                              tide_remote_val(m, "service", 0, b[1], sizeof b[1]),
                              tide_remote_val(al, "serving", 0, b[2], sizeof b[2]),
                              tide_remote_val(al, "candidate", 0, b[3], sizeof b[3]),
                              tide_remote_val(al, "last-good", 0, b[4], sizeof b[4]),
                              tide_remote_val(m, "versions", 0, b[5], sizeof b[5]),
                              rollout_text(m, b[6], sizeof b[6])};
        tide_table_row(&t, row);
    }
    tide_table_print(&t, stdout);
    tide_table_free(&t);
}

int tide_cmd_models(int argc, char **argv)
{
    tide_remote_opts_t ro = {0};
    int rc = tide_remote_args("models", argc, argv, &ro, models_usage);
    if (rc >= 0)
        return rc;
    if (optind < argc)
        return tide_cli_usage_error("models", "unexpected argument '%s'", argv[optind]);
    return call(&ro, "GET", "/v1/models", NULL, models_show);
}

/* ------------------------------------------------------------------ model */

static void model_usage(FILE *f)
{
    fprintf(f,
            "usage: tide model show MODEL[:VERSION]\n"
            "       tide model create MODEL --service S [--eval CMD] [--eval-gpus N]\n"
            "             [--eval-limit D] [--gate RULE]... [--steps 5,25,50,100] [--hold D]\n"
            "             [--gate-interval D] [--slo-min X] [--error-max X]\n"
            "             [--latency-max MS] [--failure-limit N] [--webhook URL]\n"
            "             [--slo-query URL] [--error-query URL] [--latency-query URL]\n"
            "       tide model register MODEL --manifest URI [--job ID] [--step N]\n"
            "             [--digest D] [--size BYTES]\n"
            "       tide model metrics MODEL:VERSION NAME=VALUE...\n"
            "  (each also takes --server URL --token T --json)\n"
            "\n"
            "show: a model's versions (state, source job and step, gate, metrics) and its\n"
            "rollout, or one version. create: define a model (admin): the service its\n"
            "versions are released to, the evaluation job (a P1 tide job running CMD on\n"
            "N GPUs for at most D; it reports metrics), the gates (METRIC>=VALUE,\n"
            "METRIC<=VALUE, or against the serving version: accuracy>=serving-0.01),\n"
            "the canary's traffic steps in percent, each held D and gated every D on\n"
            "the canary's SLO attainment, error rate and latency (--failure-limit failed\n"
            "checks are tolerated; the next rolls back), the http:// URL told of every\n"
            "pipeline event (signed with the daemon's TIDE_WEBHOOK_SECRET; retried), and\n"
            "Prometheus query URLs the canary's figures are pulled from ({version} is\n"
            "replaced; a step then holds until its gate passed on pulled figures). register: a\n"
            "version by hand (jobs submitted with \"model\" and \"publish\" register their\n"
            "checkpoints).\n"
            "metrics: report evaluation metrics of a version.\n"
            "\n"
            "options:\n" TIDE_REMOTE_HELP TIDE_REMOTE_EXIT_HELP);
}

/* {"acc": 0.81, "loss": 1.2} as "acc=0.81 loss=1.2" ("-" none). */
static const char *metrics_text(const json_t *mx, char *buf, size_t n)
{
    const char *k;
    const json_t *x;
    buf[0] = 0;
    json_object_foreach((json_t *)mx, k, x) {
        size_t l = strlen(buf);
        snprintf(buf + l, n - l, "%s%s=%g", l ? " " : "", k, json_number_value(x));
    }
    return buf[0] ? buf : "-";
}

static void version_row(tide_table_t *t, const json_t *v)
{
    char b[7][256];
    const char *row[7] = {tide_remote_val(v, "version", 0, b[0], sizeof b[0]),
                          tide_remote_val(v, "state", 0, b[1], sizeof b[1]),
                          tide_remote_val(v, "source_job", 0, b[2], sizeof b[2]),
                          tide_remote_val(v, "step", 0, b[3], sizeof b[3]),
                          tide_remote_val(v, "gate", 0, b[4], sizeof b[4]),
                          metrics_text(json_object_get(v, "metrics"), b[5], sizeof b[5]),
                          tide_remote_val(v, "manifest_uri", 0, b[6], sizeof b[6])};
    tide_table_row(t, row);
}

static void versions_show(const json_t *j)
{
    static const char *const head[] = {">VERSION", "STATE", "JOB", ">STEP", "GATE", "METRICS",
                                       "MANIFEST"};
    tide_table_t t;
    tide_table_init(&t, 7, head);
    const json_t *vs = json_object_get(j, "versions");
    size_t i;
    const json_t *v;
    if (json_is_array(vs)) {
        json_array_foreach(vs, i, v) version_row(&t, v);
    } else {
        version_row(&t, j);
    }
    tide_table_print(&t, stdout);
    tide_table_free(&t);
    char b[256];
    if (json_is_array(vs))
        printf("\nrollout: %s\n", rollout_text(j, b, sizeof b));
}

enum { M_SERVICE = 1, M_EVAL, M_EVAL_GPUS, M_EVAL_LIMIT, M_GATE, M_STEPS, M_HOLD, M_GATE_INT,
       M_SLO, M_ERR, M_LAT, M_FAIL, M_MANIFEST, M_JOB, M_STEP, M_DIGEST, M_SIZE, M_HOOK,
       M_SLOQ, M_ERRQ, M_LATQ };

static const struct option model_opts[] = {
    {"service", required_argument, NULL, M_SERVICE},
    {"eval", required_argument, NULL, M_EVAL},
    {"eval-gpus", required_argument, NULL, M_EVAL_GPUS},
    {"eval-limit", required_argument, NULL, M_EVAL_LIMIT},
    {"gate", required_argument, NULL, M_GATE},
    {"steps", required_argument, NULL, M_STEPS},
    {"hold", required_argument, NULL, M_HOLD},
    {"gate-interval", required_argument, NULL, M_GATE_INT},
    {"slo-min", required_argument, NULL, M_SLO},
    {"error-max", required_argument, NULL, M_ERR},
    {"latency-max", required_argument, NULL, M_LAT},
    {"failure-limit", required_argument, NULL, M_FAIL},
    {"manifest", required_argument, NULL, M_MANIFEST},
    {"job", required_argument, NULL, M_JOB},
    {"step", required_argument, NULL, M_STEP},
    {"digest", required_argument, NULL, M_DIGEST},
    {"size", required_argument, NULL, M_SIZE},
    {"webhook", required_argument, NULL, M_HOOK},
    {"slo-query", required_argument, NULL, M_SLOQ},
    {"error-query", required_argument, NULL, M_ERRQ},
    {"latency-query", required_argument, NULL, M_LATQ},
    {"help", no_argument, NULL, 'h'},
    TIDE_REMOTE_LONGOPTS,
    {NULL, 0, NULL, 0},
};

/* One option into the request body: its JSON key and how to read it. */
static const struct mopt {
    int id;
    const char *key;
    char kind; /* s string, d duration, n number, i integer, g gate (list) */
} mopts[] = {
    {M_SERVICE, "service", 's'}, {M_EVAL, "eval_command", 's'}, {M_EVAL_GPUS, "eval_gpus", 'i'},
    {M_EVAL_LIMIT, "eval_limit_s", 'd'}, {M_GATE, "gates", 'g'}, {M_STEPS, "steps", 's'},
    {M_HOLD, "hold_s", 'd'}, {M_GATE_INT, "gate_interval_s", 'd'}, {M_SLO, "slo_min", 'n'},
    {M_ERR, "error_max", 'n'}, {M_LAT, "latency_max_ms", 'n'}, {M_FAIL, "failure_limit", 'i'},
    {M_MANIFEST, "manifest_uri", 's'}, {M_JOB, "source_job", 's'}, {M_STEP, "step", 'i'},
    {M_DIGEST, "digest", 's'}, {M_SIZE, "size_bytes", 'i'}, {M_HOOK, "webhook", 's'},
    {M_SLOQ, "slo_query", 's'}, {M_ERRQ, "error_query", 's'}, {M_LATQ, "latency_query", 's'},
};

static int mopt_set(json_t *body, int id, const char *arg)
{
    for (size_t k = 0; k < sizeof mopts / sizeof mopts[0]; k++) {
        if (mopts[k].id != id)
            continue;
        long long i;
        int64_t dur;
        double x;
        json_t *v = NULL;
        switch (mopts[k].kind) {
        case 's': v = json_string(arg); break;
        case 'i': v = tide_parse_int(arg, &i) == 0 ? json_integer(i) : NULL; break;
        case 'n': v = tide_parse_double(arg, &x) == 0 ? json_real(x) : NULL; break;
        case 'd': v = tide_parse_duration(arg, &dur) == 0 ? json_integer(dur) : NULL; break;
        case 'g':
            if (!json_object_get(body, "gates"))
                json_object_set_new(body, "gates", json_array());
            return json_array_append_new(json_object_get(body, "gates"), json_string(arg));
        }
        if (!v)
            return tide_cli_usage_error("model", "--%s: '%s' is not valid", model_opts[id - 1].name, arg);
        json_object_set_new(body, mopts[k].key, v);
        return 0;
    }
    return -1;
}

/* MODEL[:VERSION] -> name (in buf) and version (0: none). */
static int split_ref(const char *ref, char *name, size_t n, long long *ver)
{
    const char *colon = strrchr(ref, ':');
    *ver = 0;
    snprintf(name, n, "%.*s", colon ? (int)(colon - ref) : (int)strlen(ref), ref);
    if (colon && (tide_parse_int(colon + 1, ver) < 0 || *ver < 1))
        return tide_cli_usage_error("model", "'%s': expected MODEL:VERSION (a version >= 1)", ref);
    return 0;
}

static int model_metrics(const tide_remote_opts_t *ro, int argc, char **argv, int i)
{
    char name[512], path[1200], tail[64];
    long long ver;
    if (i >= argc || split_ref(argv[i], name, sizeof name, &ver) != 0 || ver < 1)
        return tide_cli_usage_error("model", "metrics: give MODEL:VERSION NAME=VALUE...");
    json_t *mx = json_object();
    for (int k = i + 1; k < argc; k++) {
        char *eq = strchr(argv[k], '=');
        double x;
        if (!eq || eq == argv[k] || tide_parse_double(eq + 1, &x) < 0) {
            json_decref(mx);
            return tide_cli_usage_error("model", "metrics: '%s' is not NAME=VALUE", argv[k]);
        }
        *eq = 0;
        json_object_set_new(mx, argv[k], json_real(x));
    }
    snprintf(tail, sizeof tail, "/versions/%lld/metrics", ver);
    return call(ro, "POST", model_path(path, sizeof path, name, tail), json_pack("{s:o}", "metrics", mx),
                NULL);
}

int tide_cmd_model(int argc, char **argv)
{
    tide_remote_opts_t ro = {0};
    json_t *body = json_object();
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", model_opts, NULL)) != -1) {
        if (opt == 'h') {
            model_usage(stdout);
            json_decref(body);
            return 0;
        }
        if (tide_remote_opt(&ro, opt, optarg))
            continue;
        if (opt == '?' || mopt_set(body, opt, optarg) != 0) {
            json_decref(body);
            return opt == '?' ? tide_cli_usage_error("model", "see tide model --help") : 2;
        }
    }
    const char *sub = optind < argc ? argv[optind] : NULL;
    char name[512], path[1200], tail[64];
    long long ver = 0;
    if (!sub || optind + 1 >= argc) {
        json_decref(body);
        return tide_cli_usage_error("model", "give show, create, register or metrics and a model");
    }
    if (!strcmp(sub, "metrics")) {
        json_decref(body);
        return model_metrics(&ro, argc, argv, optind + 1);
    }
    if (split_ref(argv[optind + 1], name, sizeof name, &ver) != 0) {
        json_decref(body);
        return 2;
    }
    if (!strcmp(sub, "show")) {
        json_decref(body);
        tail[0] = 0;
        if (ver)
            snprintf(tail, sizeof tail, "/versions/%lld", ver);
        return call(&ro, "GET", model_path(path, sizeof path, name, tail), NULL, versions_show);
    }
    if (!strcmp(sub, "create")) {
        json_object_set_new(body, "name", json_string(name));
        return call(&ro, "POST", "/v1/models", body, NULL);
    }
    if (!strcmp(sub, "register"))
        return call(&ro, "POST", model_path(path, sizeof path, name, "/versions"), body, versions_show);
    json_decref(body);
    return tide_cli_usage_error("model", "unknown subcommand '%s' (show, create, register, metrics)", sub);
}

/* ---------------------------------------------------------------- rollout */

static void rollout_usage(FILE *f)
{
    fprintf(f,
            "usage: tide rollout status|pause|resume|promote|abort MODEL [--version N]\n"
            "             [--server URL] [--token T] [--json]\n"
            "\n"
            "A model's rollout: status shows its step, weight, phase and failed gate\n"
            "checks; pause holds the current step (gates still run); resume goes on;\n"
            "promote ends the current step's hold now (or, without a rollout, releases\n"
            "the version held for a person by an inconclusive gate: --version N or the\n"
            "latest); abort rolls back to the serving version at once.\n"
            "\n"
            "options:\n"
            "      --version N    (promote) the held version to release\n" TIDE_REMOTE_HELP
                TIDE_REMOTE_EXIT_HELP);
}

static void rollout_show(const json_t *j)
{
    char b[256];
    const json_t *r = json_object_get(j, "rollout");
    if (!json_is_object(r)) {
        printf("no rollout in progress%s\n", json_object_get(j, "done") ? " (done)" : "");
        return;
    }
    printf("%s%s\n", json_object_get(j, "done") ? "done; " : "", rollout_text(j, b, sizeof b));
    const char *keys[] = {"old_version", "phase", "failures", "target_new", "target_old",
                          "bound_replicas"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        printf("  %-15s %s\n", keys[k], tide_remote_val(r, keys[k], 2, b, sizeof b));
}

int tide_cmd_rollout(int argc, char **argv)
{
    static const struct option opts[] = {{"version", required_argument, NULL, 'v'},
                                         {"help", no_argument, NULL, 'h'},
                                         TIDE_REMOTE_LONGOPTS,
                                         {NULL, 0, NULL, 0}};
    tide_remote_opts_t ro = {0};
    long long ver = 0;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (opt == 'h') {
            rollout_usage(stdout);
            return 0;
        }
        if (tide_remote_opt(&ro, opt, optarg))
            continue;
        if (opt != 'v' || tide_parse_int(optarg, &ver) < 0 || ver < 1)
            return tide_cli_usage_error("rollout", "see tide rollout --help");
    }
    if (optind + 2 != argc)
        return tide_cli_usage_error("rollout", "give status, pause, resume, promote or abort and a model");
    const char *cmd = argv[optind];
    char path[1200], tail[64];
    if (!strcmp(cmd, "status"))
        return call(&ro, "GET", model_path(path, sizeof path, argv[optind + 1], "?history=0"), NULL,
                    rollout_show);
    if (strcmp(cmd, "pause") && strcmp(cmd, "resume") && strcmp(cmd, "promote") && strcmp(cmd, "abort"))
        return tide_cli_usage_error("rollout", "unknown command '%s'", cmd);
    snprintf(tail, sizeof tail, "/rollout/%s", cmd);
    return call(&ro, "POST", model_path(path, sizeof path, argv[optind + 1], tail),
                ver ? json_pack("{s:I}", "version", (json_int_t)ver) : NULL, rollout_show);
}
