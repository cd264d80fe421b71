/* `tide rl status|register|push|step`: the RL trajectory ledger of a
 * running daemon (docs/api.md, "RL trajectory ledger"). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "util/util.h"

#define RL_CHUNK 512 /* trajectories per request of `rl push` */

typedef struct rl_args {
    tide_remote_opts_t ro;
    const char *job, *file, *spec;
    long long max_staleness, batch_size, step;
    double meas[3];    /* (step) --wait, --compute, --rollout-busy; -1: not given */
} rl_args_t;

typedef struct rl_sub {
    const char *name;
    int (*run)(rl_args_t *a);
    const char *usage; /* its synopsis and text */
} rl_sub_t;

/* ----------------------------------------------------------------- status */

static void status_show(const json_t *j)
{
    char b[256];
    const json_t *runs = json_object_get(j, "runs");
    if (json_is_array(runs)) {
        printf("%-24s %8s %8s %6s %10s %10s\n", "JOB", "STEP", "QUEUED", "BATCH", "STALENESS",
               "CONSUMED");
        for (size_t i = 0; i < json_array_size(runs); i++) {
            const json_t *r = json_array_get(runs, i);
            char c[6][64];
            const char *k[] = {"job", "step", "queue_depth", "batch_size", "max_staleness"};
            for (int x = 0; x < 5; x++)
                tide_remote_val(r, k[x], 0, c[x], sizeof c[x]);
            tide_remote_val(json_object_get(r, "counts"), "consumed", 0, c[5], sizeof c[5]);
            printf("%-24s %8s %8s %6s %10s %10s\n", c[0], c[1], c[2], c[3], c[4], c[5]);
        }
        return;
    }
    const char *keys[] = {"job", "step", "policy_version", "queue_depth", "batch_size",
                          "max_staleness"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        printf("%-16s %s\n", keys[k], tide_remote_val(j, keys[k], 0, b, sizeof b));
    const json_t *c = json_object_get(j, "counts");
    const char *ck[] = {"accepted", "duplicates", "stale_rejected", "stale_dropped", "consumed"};
    for (size_t k = 0; k < sizeof ck / sizeof ck[0]; k++)
        printf("%-16s %s\n", ck[k], tide_remote_val(c, ck[k], 0, b, sizeof b));
    const json_t *h = json_object_get(j, "staleness");
    const char *hk[] = {"consumed", "queued"};
    for (int w = 0; w < 2; w++) {
        const json_t *a = json_object_get(h, hk[w]);
        printf("ages (%s):", hk[w]);
        for (size_t i = 0; i < json_array_size(a); i++)
            printf(" %lld:%lld", (long long)json_integer_value(json_object_get(json_array_get(a, i), "age")),
                   (long long)json_integer_value(json_object_get(json_array_get(a, i), "count")));
        printf("%s\n", json_array_size(a) ? "" : " -");
    }
}

/* /v1/rl/JOB + tail into buf. */
static const char *rl_path(char *buf, size_t n, const char *job, const char *tail)
{
    snprintf(buf, n, "/v1/rl/");
    tide_client_urlenc(buf, n, job);
    strncat(buf, tail, n - strlen(buf) - 1);
    return buf;
}

static void register_show(const json_t *j);

static int rl_status(rl_args_t *a)
{
    char path[1200];
    return tide_remote_call(&a->ro, "GET", a->job ? rl_path(path, sizeof path, a->job, "") : "/v1/rl",
                            NULL, a->job ? register_show : status_show);
}

static char *slurp(const char *file, size_t *len);

/* register's output: the run, then the RL job's engine jobs (with --spec). */
static void register_show(const json_t *j)
{
    status_show(j);
    const json_t *jobs = json_object_get(j, "jobs");
    char b[3][64];
    for (size_t i = 0; i < json_array_size(jobs); i++) {
        const json_t *o = json_array_get(jobs, i);
        printf("%-8s %-28s %s\n", tide_remote_val(o, "role", 0, b[0], sizeof b[0]),
               tide_remote_val(o, "id", 0, b[1], sizeof b[1]),
               tide_remote_val(o, "state", 0, b[2], sizeof b[2]));
    }
    if (json_object_get(j, "jobs_submitted"))
        printf("jobs submitted now: %lld\n",
               (long long)json_integer_value(json_object_get(j, "jobs_submitted")));
}

static int rl_register(rl_args_t *a)
{
    json_t *body = json_object(), *spec = NULL;
    if (a->spec) {
        size_t len;
        char *buf = slurp(a->spec, &len);
        spec = buf ? json_loadb(buf, len, 0, NULL) : NULL;
        free(buf);
        if (!json_is_object(spec)) {
            json_decref(spec);
            json_decref(body);
            return tide_cli_usage_error("rl", "register: --spec %s: not a readable JSON object "
                                              "(the rl.csv columns)", a->spec);
        }
        json_object_set_new(body, "spec", spec);
    } else if (a->max_staleness < 0 || a->batch_size < 1) {
        json_decref(body);
        return tide_cli_usage_error("rl", "register: --max-staleness N and --batch-size N (or "
                                          "--spec FILE) are required");
    }
    if (a->max_staleness >= 0)
        json_object_set_new(body, "max_staleness", json_integer(a->max_staleness));
    if (a->batch_size >= 0)
        json_object_set_new(body, "batch_size", json_integer(a->batch_size));
    char path[1200];
    return tide_remote_call(&a->ro, "POST", rl_path(path, sizeof path, a->job, ""), body,
                            register_show);
}

static void step_show(const json_t *j)
{
    const json_t *t = json_object_get(j, "trajectories");
    printf("step %lld%s: %zu trajectories\n", (long long)json_integer_value(json_object_get(j, "step")),
           json_is_true(json_object_get(j, "duplicate")) ? " (taken before: the same batch)" : "",
           json_array_size(t));
    for (size_t i = 0; i < json_array_size(t); i++) {
        const json_t *r = json_array_get(t, i);
        printf("  %s v%lld age %lld\n", json_string_value(json_object_get(r, "trajectory_id")),
               (long long)json_integer_value(json_object_get(r, "policy_version")),
               (long long)json_integer_value(json_object_get(r, "age")));
    }
}

static int rl_step(rl_args_t *a)
{
    if (a->step < 1)
        return tide_cli_usage_error("rl", "step: --step K (>= 1) is required");
    static const char *const keys[] = {"wait_s", "compute_s", "rollout_busy"};
    json_t *body = json_pack("{s:I}", "step", (json_int_t)a->step);
    for (int i = 0; i < 3; i++) /* the daemon checks them (400 naming the field) */
        if (a->meas[i] >= 0)
            json_object_set_new(body, keys[i], json_real(a->meas[i]));
    char path[1200];
    return tide_remote_call(&a->ro, "POST", rl_path(path, sizeof path, a->job, "/step"), body,
                            step_show);
}

/* ------------------------------------------------------------------- push */

/* The whole of a file ("-": stdin), NUL-terminated; NULL when unreadable. */
static char *slurp(const char *file, size_t *len)
{
    FILE *f = strcmp(file, "-") ? fopen(file, "rb") : stdin;
    if (!f)
        return NULL;
    size_t cap = 65536, n = 0, got;
    char *buf = tide_xmalloc(cap);
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0)
        if ((n += got) + 1 >= cap)
            buf = tide_xrealloc(buf, cap *= 2);
    buf[n] = 0;
    *len = n;
    if (f != stdin)
        fclose(f);
    return buf;
}

/* The trajectories of a file: a JSON object (one trajectory, or
 * {"trajectories": [...]}), a JSON array of them, or JSON lines. NULL with
 * a message printed. */
static json_t *push_load(const char *file)
{
    size_t len;
    char *buf = slurp(file, &len);
    if (!buf) {
        tide_cli_usage_error("rl", "push: cannot read %s", file);
        return NULL;
    }
    json_t *all = json_loadb(buf, len, 0, NULL), *arr = NULL;
    if (json_is_object(all) && json_is_array(json_object_get(all, "trajectories")))
        arr = json_incref(json_object_get(all, "trajectories"));
    else if (json_is_array(all))
        arr = json_incref(all);
    else if (json_is_object(all))
        arr = json_pack("[O]", all);
    json_decref(all);
    int line = 0, lines = !arr && !all; /* not one JSON value: JSON lines */
    if (lines)
        arr = json_array();
    for (char *p = buf, *nl; lines && p && *p; p = nl ? nl + 1 : NULL) {
        line++;
        if ((nl = strchr(p, '\n')) != NULL)
            *nl = 0;
        if (strspn(p, " \t\r") == strlen(p))
            continue;
        json_t *o = json_loads(p, 0, NULL);
        if (!json_is_object(o)) {
            json_decref(o);
            tide_cli_usage_error("rl", "push: %s:%d: not a JSON object", file, line);
            arr = (json_decref(arr), NULL);
            break;
        }
        json_array_append_new(arr, o);
    }
    free(buf);
    if (arr && !json_array_size(arr)) {
        tide_cli_usage_error("rl", "push: %s: no trajectories", file);
        arr = (json_decref(arr), NULL);
    } else if (!arr && !lines) {
        tide_cli_usage_error("rl", "push: %s: expected a trajectory object, a list of them or "
                             "JSON lines", file);
    }
    return arr;
}

static int rl_push(rl_args_t *a)
{
    if (!a->file)
        return tide_cli_usage_error("rl", "push: --file F is required (- for stdin)");
    json_t *arr = push_load(a->file);
    if (!arr)
        return 2;
    tide_client_t c;
    int rc = tide_remote_connect(&a->ro, &c);
    if (rc >= 0) {
        json_decref(arr);
        return rc;
    }
    rc = 0;
    long cnt[3] = {0};
    char path[1200];
    rl_path(path, sizeof path, a->job, "/trajectories");
    for (size_t at = 0; rc == 0 && at < json_array_size(arr); at += RL_CHUNK) {
        json_t *chunk = json_array();
        for (size_t i = at; i < at + RL_CHUNK && i < json_array_size(arr); i++)
            json_array_append(chunk, json_array_get(arr, i));
        json_t *body = json_pack("{s:o}", "trajectories", chunk);
        tide_error_t err = {0};
        json_t *j = tide_client_call(&c, "POST", path, body, NULL, &err);
        json_decref(body);
        if (!j) {
            rc = tide_remote_fail(&err);
            break;
        }
        const char *k[] = {"accepted", "duplicates", "refused"};
        for (int x = 0; x < 3; x++)
            cnt[x] += (long)json_integer_value(json_object_get(j, k[x]));
        const json_t *res = json_object_get(j, "results");
        for (size_t i = 0; i < json_array_size(res); i++) {
            const json_t *r = json_array_get(res, i), *e = json_object_get(r, "error");
            if (a->ro.json)
                tide_remote_print_json(r);
            else if (e)
                printf("refused %s: %s\n", json_string_value(json_object_get(r, "trajectory_id")),
                       json_string_value(json_object_get(e, "message")));
        }
        json_decref(j);
    }
    tide_client_fini(&c);
    json_decref(arr);
    if (!a->ro.json && rc == 0)
        printf("accepted %ld, duplicates %ld, refused %ld\n", cnt[0], cnt[1], cnt[2]);
    return rc ? rc : cnt[2] ? tide_cli_exit_code(TIDE_ESTATE) : 0;
}

/* ---------------------------------------------------------------- command */

static const rl_sub_t subs[] = {
    {"status", rl_status,
     "usage: tide rl status [JOB] [--server URL] [--token T] [--json]\n\n"
     "An RL run's trainer step, policy version, queue depth, counts (accepted,\n"
     "duplicates, stale_rejected, stale_dropped, consumed) and staleness histogram\n"
     "(AGE:COUNT); without JOB, every run the caller may see.\n"},
    {"register", rl_register,
     "usage: tide rl register JOB --max-staleness N --batch-size N [--server URL] ...\n"
     "       tide rl register JOB --spec FILE [--server URL] ...\n\n"
     "Register job JOB (submitted before) as an RL run: trajectories may lag the\n"
     "trainer's policy by at most N versions; a trainer step consumes a batch of N.\n"
     "With --spec, FILE (- for stdin) is a JSON object of the rl.csv columns\n"
     "(docs/formats.md; rl_id is JOB, submit_s now, team the caller's by default):\n"
     "the daemon submits the RL job's engine jobs JOB-trainer, JOB-rollout and\n"
     "JOB-pool-N (P3 jobs on lent GPUs, drained when reclaimed) and registers it\n"
     "with the spec's max_staleness and batch. Registering again with the same\n"
     "values (or spec) is a no-op; other values are refused.\n"},
    {"push", rl_push,
     "usage: tide rl push JOB --file F [--server URL] [--token T] [--json]\n\n"
     "Push trajectories (F: a JSON object {\"trajectory_id\", \"policy_version\", ...},\n"
     "a {\"trajectories\": [...]} object, a JSON array or JSON lines; - for stdin), in\n"
     "requests of 512. Idempotent: a trajectory acknowledged before is counted once\n"
     "(a duplicate). Refused ones (stale, ahead of the trainer, an id reused with\n"
     "another version) are printed; the exit status is then 7.\n"},
    {"step", rl_step,
     "usage: tide rl step JOB --step K [--wait S --compute S [--rollout-busy F]]\n"
     "                    [--server URL] [--token T] [--json]\n\n"
     "Take trainer step K (the next one): the batch of the oldest fresh queued\n"
     "trajectories is consumed and printed. A retry of a step taken before prints\n"
     "the same batch. Refused (exit 7) while fewer than the batch are queued.\n"
     "--wait and --compute (seconds the step just finished waited for rollouts and\n"
     "computed) and --rollout-busy (0..1, the rollout slots' busy share) size an RL\n"
     "job's lent pool (docs/rl.md, \"The daemon sizes the pool\").\n"},
};

static void rl_usage(FILE *f, const rl_sub_t *s)
{
    if (s)
        fprintf(f, "%s\noptions:\n"
                   "      --file F          (push) the trajectories\n"
                   "      --max-staleness N (register) policy versions a trajectory may lag\n"
                   "      --batch-size N    (register) trajectories per trainer step\n"
                   "      --spec FILE       (register) submit an RL job: its rl.csv columns (JSON)\n"
                   "      --step K          (step) the trainer step to take\n"
                   "      --wait S, --compute S, --rollout-busy F\n"
                   "                        (step) the trainer's measures of the step\n" TIDE_REMOTE_HELP
                       TIDE_REMOTE_EXIT_HELP,
                s->usage);
    else
        fprintf(f, "usage: tide rl status|register|push|step ... (tide rl SUB --help)\n\n"
                   "The RL trajectory ledger of a daemon: runs, trajectories counted exactly\n"
                   "once, trainer steps (docs/api.md, \"RL trajectory ledger\").\n");
}

enum { RL_FILE = 1, RL_STALE, RL_BATCH, RL_STEP, RL_SPEC, RL_WAIT, RL_COMPUTE, RL_BUSY };

static int rl_opt(rl_args_t *a, int opt, const char *arg)
{
    long long *dst[] = {[RL_STALE] = &a->max_staleness, [RL_BATCH] = &a->batch_size,
                        [RL_STEP] = &a->step};
    if (opt == RL_FILE || opt == RL_SPEC) {
        *(opt == RL_FILE ? &a->file : &a->spec) = arg;
        return 0;
    }
    if (opt >= RL_STALE && opt <= RL_STEP && tide_parse_int(arg, dst[opt]) == 0 && *dst[opt] >= 0)
        return 0;
    if (opt >= RL_WAIT && opt <= RL_BUSY && tide_parse_double(arg, &a->meas[opt - RL_WAIT]) == 0 &&
        a->meas[opt - RL_WAIT] >= 0)
        return 0;
    return opt == '?' ? 2
                      : tide_cli_usage_error("rl", "'%s' is not a %s >= 0", arg,
                                             opt >= RL_WAIT ? "number" : "whole number");
}

int tide_cmd_rl(int argc, char **argv)
{
    static const struct option opts[] = {
        {"file", required_argument, NULL, RL_FILE}, {"max-staleness", required_argument, NULL, RL_STALE},
        {"batch-size", required_argument, NULL, RL_BATCH}, {"step", required_argument, NULL, RL_STEP},
        {"spec", required_argument, NULL, RL_SPEC}, {"wait", required_argument, NULL, RL_WAIT},
        {"compute", required_argument, NULL, RL_COMPUTE},
        {"rollout-busy", required_argument, NULL, RL_BUSY}, {"help", no_argument, NULL, 'h'}, TIDE_REMOTE_LONGOPTS, {NULL, 0, NULL, 0}};
    const rl_sub_t *s = NULL;
    for (size_t k = 0; argc > 1 && k < sizeof subs / sizeof subs[0]; k++)
        if (!strcmp(argv[1], subs[k].name))
            s = &subs[k];
    rl_args_t a = {.max_staleness = -1, .batch_size = -1, .step = -1, .meas = {-1, -1, -1}};
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc - (s != NULL), argv + (s != NULL), "h", opts, NULL)) != -1) {
        if (opt == 'h') {
            rl_usage(stdout, s);
            return 0;
        }
        if (!tide_remote_opt(&a.ro, opt, optarg) && rl_opt(&a, opt, optarg) != 0)
            return 2;
    }
    int left = argc - (s != NULL) - optind;
    if (!s)
        return tide_cli_usage_error("rl", "give status, register, push or step");
    if (left > 1 || (left == 0 && s->run != rl_status))
        return tide_cli_usage_error("rl", "%s: give one job id", s->name);
    a.job = left ? argv[1 + optind] : NULL;
    return s->run(&a);
}
