/* `tide trace`: import public traces into tide's workload files
 * (`tide trace import --format F SRC... --out DIR`; docs/trace.md). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "formats/workload_io.h"
#include "trace/trace.h"
#include "util/util.h"

static void trace_usage(FILE *f)
{
    fprintf(f, "usage: tide trace import --format FORMAT SRC... --out DIR [options]\n"
               "\n"
               "subcommands:\n"
               "  import   convert public traces (Philly, ServeGen, Azure LLM 2023, Mooncake)\n"
               "           into jobs.csv or services.csv + demand.csv for `tide sim`\n"
               "\n"
               "tide trace import --help for the options; docs/trace.md for the rules.\n");
}

static void import_usage(FILE *f)
{
    fprintf(
        f,
        "usage: tide trace import --format FORMAT SRC... --out DIR [options]\n"
        "\n"
        "Convert public traces into tide's workload files (docs/formats.md) and\n"
        "print a one-line summary. Rules and fitting math: docs/trace.md.\n"
        "\n"
        "formats:\n"
        "  philly     philly.csv (timestamp,duration,num_gpus,gpu_time,cluster) -> DIR/jobs.csv\n"
        "  servegen   ServeGen tier directories (chunk-<client>-trace.csv), one service each\n"
        "             -> DIR/services.csv, DIR/demand.csv\n"
        "  azure-llm  Azure LLM 2023 CSVs (TIMESTAMP,ContextTokens,GeneratedTokens), one\n"
        "             service each -> DIR/services.csv, DIR/demand.csv\n"
        "  mooncake   Mooncake JSONL (timestamp ms, input_length, output_length), one\n"
        "             service each -> DIR/services.csv, DIR/demand.csv\n"
        "\n"
        "common:\n"
        "  -f, --format FORMAT          philly, servegen, azure-llm or mooncake (required)\n"
        "  -o, --out DIR                output directory, created if missing (required)\n"
        "      --skip-bad               skip bad rows and count them (default: stop at the\n"
        "                               first, with file:line and the column)\n"
        "  -h, --help                   show this help\n"
        "philly:\n"
        "      --days A:B | N           keep jobs submitted in days [A, B) (N = 0:N) counted\n"
        "                               from the reference day (default: every job)\n"
        "      --start YYYY-MM-DD       reference day (default: the first job's day)\n"
        "      --origin first|window    submit_s 0 = the window's first job (default) or\n"
        "                               the window's start\n"
        "      --scale-arrivals X       expected copies of each job, (0, 100]: < 1 keeps a\n"
        "                               deterministic fraction, > 1 adds jittered copies\n"
        "      --seed S                 seed of --scale-arrivals (default 1)\n"
        "servegen, azure-llm, mooncake:\n"
        "      --service NAME           service name, once per SRC in order (default: the\n"
        "                               SRC's base name)\n"
        "      --gpus-per-replica N     GPUs of one replica (default 8)\n"
        "      --replica-rps X          requests/s of one replica (default: request logs\n"
        "                               tokens/s / mean tokens per request; servegen %g)\n"
        "      --min-replicas N         hot floor of each service (default 1)\n"
        "      --warmup D               replica warm-up: 90s, 5m (default 300s)\n"
        "      --peak-gpus N            scale the demand so its peak needs N GPUs\n"
        "      --shift H                rotate the time of day by H hours (may be < 0)\n"
        "      --stretch X              stretch (> 1) or compress (< 1) time\n"
        "      --duration D             repeat or trim the demand to cover D (14d, 36h)\n"
        "      --align-with JOBS.csv    ... to cover the whole days of a jobs.csv\n"
        "azure-llm, mooncake:\n"
        "      --window D               bin width (default 300s)\n"
        "      --replica-tokens-per-s N token throughput of one replica (default 20000)\n"
        "      --prefill-weight W       cost of an input token in output tokens (default 1)\n"
        "\n"
        "example:\n"
        "  tide trace import --format philly philly.csv --days 21:35 --out w\n"
        "  tide trace import --format servegen servegen/language_m-large \\\n"
        "      --peak-gpus 200 --align-with w/jobs.csv --out w\n",
        TIDE_TRACE_DEFAULT_REPLICA_RPS);
}

/* Print "tide trace import: <message> (see tide trace import --help)"; return 2. */
#define bad(...) tide_cli_usage_error("trace import", __VA_ARGS__)

/* Formats an option applies to (bits: 1 << index in tide_trace_format_names). */
enum { F_PHILLY = 1, F_SERVEGEN = 2, F_AZURE = 4, F_MOONCAKE = 8 };
#define F_ALL (F_PHILLY | F_SERVEGEN | F_AZURE | F_MOONCAKE)
#define F_DEMAND (F_SERVEGEN | F_AZURE | F_MOONCAKE)
#define F_REQLOG (F_AZURE | F_MOONCAKE)

enum {
    O_FORMAT = 'f', O_OUT = 'o', O_HELP = 'h',
    O_SKIP = 256, O_DAYS, O_START, O_ORIGIN, O_SCALE, O_SEED, O_SERVICE, O_GPR, O_RRPS,
    O_MINREP, O_WARMUP, O_PEAK, O_SHIFT, O_STRETCH, O_DURATION, O_ALIGN, O_WINDOW, O_TOKENS,
    O_PREFILL, O_LAST
};

/* Every option: getopt entry and the formats it applies to. */
static const struct opt {
    struct option o;
    int formats;
} opts[] = {
    {{"format", required_argument, NULL, O_FORMAT}, F_ALL},
    {{"out", required_argument, NULL, O_OUT}, F_ALL},
    {{"help", no_argument, NULL, O_HELP}, F_ALL},
    {{"skip-bad", no_argument, NULL, O_SKIP}, F_ALL},
    {{"days", required_argument, NULL, O_DAYS}, F_PHILLY},
    {{"start", required_argument, NULL, O_START}, F_PHILLY},
    {{"origin", required_argument, NULL, O_ORIGIN}, F_PHILLY},
    {{"scale-arrivals", required_argument, NULL, O_SCALE}, F_PHILLY},
    {{"seed", required_argument, NULL, O_SEED}, F_PHILLY},
    {{"service", required_argument, NULL, O_SERVICE}, F_DEMAND},
    {{"gpus-per-replica", required_argument, NULL, O_GPR}, F_DEMAND},
    {{"replica-rps", required_argument, NULL, O_RRPS}, F_DEMAND},
    {{"min-replicas", required_argument, NULL, O_MINREP}, F_DEMAND},
    {{"warmup", required_argument, NULL, O_WARMUP}, F_DEMAND},
    {{"peak-gpus", required_argument, NULL, O_PEAK}, F_DEMAND},
    {{"shift", required_argument, NULL, O_SHIFT}, F_DEMAND},
    {{"stretch", required_argument, NULL, O_STRETCH}, F_DEMAND},
    {{"duration", required_argument, NULL, O_DURATION}, F_DEMAND},
    {{"align-with", required_argument, NULL, O_ALIGN}, F_DEMAND},
    {{"window", required_argument, NULL, O_WINDOW}, F_REQLOG},
    {{"replica-tokens-per-s", required_argument, NULL, O_TOKENS}, F_REQLOG},
    {{"prefill-weight", required_argument, NULL, O_PREFILL}, F_REQLOG},
};
#define NOPTS (sizeof opts / sizeof opts[0])

static const struct opt *opt_find(int id)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (opts[i].o.val == id)
            return &opts[i];
    return NULL;
}

/* Parsed command line. */
typedef struct cmdline {
    const char *format, *out;
    tide_trace_opts_t t;
    const char **services;
    size_t n_services, cap_services;
    char given[O_LAST];
} cmdline_t;

static int parse_days(tide_trace_philly_opts_t *p, const char *s)
{
    const char *colon = strchr(s, ':');
    long long a = 0, b;
    if (colon) {
        char head[32];
        size_t l = (size_t)(colon - s);
        if (l == 0 || l >= sizeof head)
            return -1;
        memcpy(head, s, l);
        head[l] = '\0';
        if (tide_parse_int(head, &a) < 0 || tide_parse_int(colon + 1, &b) < 0)
            return -1;
    } else if (tide_parse_int(s, &b) < 0) {
        return -1;
    }
    if (a < 0 || b <= a || b > 100000)
        return -1;
    p->day_a = (double)a;
    p->day_b = (double)b;
    return 0;
}

#define parse_seed tide_parse_u64

/* Hours: a number ("5", "-3.5") or a duration with a unit ("90m"). */
static int parse_hours(const char *s, double *h)
{
    int64_t sec;
    if (tide_parse_double(s, h) == 0)
        return fabs(*h) <= 1e6 ? 0 : -1;
    int neg = *s == '-';
    if (tide_parse_duration(s + neg, &sec) < 0)
        return -1;
    *h = (neg ? -1.0 : 1.0) * (double)sec / 3600.0;
    return 0;
}

static int parse_count(const char *s, long long lo, long long hi, long long *v)
{
    return tide_parse_int(s, v) == 0 && *v >= lo && *v <= hi ? 0 : -1;
}

/* One option. Returns -1 to go on, else the exit status. */
static int parse_opt(cmdline_t *c, int id, const char *arg)
{
    tide_trace_opts_t *t = &c->t;
    long long v;
    double x;
    int64_t d;
    char buf[48];
    switch (id) {
    case O_FORMAT:
        if (tide_trace_format_kind(arg) < 0)
            return bad("--format: unknown format '%s' (philly, servegen, azure-llm, mooncake)",
                       arg);
        c->format = arg;
        break;
    case O_OUT: c->out = arg; break;
    case O_SKIP: t->skip_bad = 1; break;
    case O_DAYS:
        if (parse_days(&t->philly, arg) < 0)
            return bad("--days: '%s' is not A:B (whole days, 0 <= A < B) or N", arg);
        break;
    case O_START:
        snprintf(buf, sizeof buf, "%s 00:00:00", arg);
        if (strlen(arg) != 10 || tide_trace_parse_datetime(buf, &x) < 0)
            return bad("--start: '%s' is not a date YYYY-MM-DD", arg);
        t->philly.has_start = 1;
        t->philly.start_s = (int64_t)x;
        break;
    case O_ORIGIN:
        if (strcmp(arg, "first") && strcmp(arg, "window"))
            return bad("--origin: '%s' is not 'first' or 'window'", arg);
        t->philly.origin_window = !strcmp(arg, "window");
        break;
    case O_SCALE:
        if (tide_parse_double(arg, &x) < 0 || !(x > 0) || x > 100)
            return bad("--scale-arrivals: '%s' is not a number in (0, 100]", arg);
        t->philly.scale_arrivals = x;
        break;
    case O_SEED:
        if (parse_seed(arg, &t->philly.seed) < 0)
            return bad("--seed: '%s' is not an unsigned 64-bit integer", arg);
        break;
    case O_SERVICE:
        TIDE_PUSH(c->services, c->n_services, c->cap_services, arg);
        break;
    case O_GPR:
        if (parse_count(arg, 1, TIDE_IO_MAX_COUNT, &v) < 0)
            return bad("--gpus-per-replica: '%s' is not a GPU count in 1..%d", arg,
                       TIDE_IO_MAX_COUNT);
        t->fit.gpus_per_replica = (int)v;
        break;
    case O_RRPS:
        if (tide_parse_double(arg, &x) < 0 || !(x >= 1e-4) || x > TIDE_TRACE_MAX_RATE)
            return bad("--replica-rps: '%s' is not a rate in 0.0001..%g", arg,
                       TIDE_TRACE_MAX_RATE);
        t->fit.replica_rps = x;
        break;
    case O_MINREP:
        if (parse_count(arg, 0, TIDE_IO_MAX_COUNT, &v) < 0)
            return bad("--min-replicas: '%s' is not a count in 0..%d", arg, TIDE_IO_MAX_COUNT);
        t->fit.min_replicas = (int)v;
        break;
    case O_WARMUP:
        if (tide_parse_duration(arg, &d) < 0 || d > TIDE_IO_MAX_SECONDS)
            return bad("--warmup: '%s' is not a duration (90s, 5m)", arg);
        t->fit.warmup_s = d;
        break;
    case O_PEAK:
        if (parse_count(arg, 1, TIDE_IO_MAX_COUNT, &v) < 0)
            return bad("--peak-gpus: '%s' is not a GPU count in 1..%d", arg, TIDE_IO_MAX_COUNT);
        t->fit.peak_gpus = (double)v;
        break;
    case O_SHIFT:
        if (parse_hours(arg, &t->fit.shift_h) < 0)
            return bad("--shift: '%s' is not a number of hours (5, -3.5, 90m)", arg);
        break;
    case O_STRETCH:
        if (tide_parse_double(arg, &x) < 0 || !(x > 0) || x > 1e6)
            return bad("--stretch: '%s' is not a factor in (0, 1e6]", arg);
        t->fit.stretch = x;
        break;
    case O_DURATION:
        if (tide_parse_duration(arg, &d) < 0 || d <= 0 || d > TIDE_IO_MAX_SECONDS)
            return bad("--duration: '%s' is not a positive duration (36h, 14d)", arg);
        t->fit.duration_s = d;
        break;
    case O_ALIGN: t->align_with = arg; break;
    case O_WINDOW:
        if (tide_parse_duration(arg, &d) < 0 || d < 1 || d > TIDE_IO_MAX_SECONDS)
            return bad("--window: '%s' is not a duration of at least 1s (60s, 5m)", arg);
        t->window_s = (double)d;
        break;
    case O_TOKENS:
        if (tide_parse_double(arg, &x) < 0 || !(x > 0) || x > 1e12)
            return bad("--replica-tokens-per-s: '%s' is not a positive number", arg);
        t->fit.replica_tokens_per_s = x;
        break;
    case O_PREFILL:
        if (tide_parse_double(arg, &x) < 0 || !(x >= 0) || x > 1e6)
            return bad("--prefill-weight: '%s' is not a number in 0..1e6", arg);
        t->prefill_weight = x;
        break;
    default: return bad("unknown option");
    }
    return -1;
}

static int cmd_import(int argc, char **argv)
{
    struct option longopts[NOPTS + 1];
    for (size_t i = 0; i < NOPTS; i++)
        longopts[i] = opts[i].o;
    memset(&longopts[NOPTS], 0, sizeof longopts[NOPTS]);
    cmdline_t c = {0};
    tide_trace_opts_default(&c.t);
    c.t.philly.seed = 1;
    int o, rc = -1;
    optind = 0; /* full reset: the CLI may be called more than once (tests) */
    opterr = 0;
    while (rc < 0 && (o = getopt_long(argc, argv, ":f:o:h", longopts, NULL)) != -1) {
        if (o == O_HELP) {
            import_usage(stdout);
            rc = 0;
        } else if (o == ':') {
            rc = bad("option '%s' needs a value", argv[optind - 1]);
        } else if (o == '?') {
            rc = optopt ? bad("unknown option '-%c'", optopt)
                        : bad("unknown option '%s'", argv[optind - 1]);
        } else {
            if (o > 0 && o < O_LAST)
                c.given[o] = 1;
            rc = parse_opt(&c, o, optarg);
        }
    }
    if (rc >= 0)
        goto out;
    if (!c.format) {
        rc = bad("--format is required (philly, servegen, azure-llm, mooncake)");
        goto out;
    }
    int fbit = 0;
    const char *const *names = tide_trace_format_names();
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], c.format))
            fbit = 1 << i;
    for (int id = 1; id < O_LAST; id++) {
        const struct opt *op = c.given[id] ? opt_find(id) : NULL;
        if (op && !(op->formats & fbit)) {
            rc = bad("--%s does not apply to --format %s", op->o.name, c.format);
            goto out;
        }
    }
    if (!c.out) {
        rc = bad("--out DIR is required");
        goto out;
    }
    if (optind >= argc) {
        rc = bad("no SRC given (the trace files or directories to import)");
        goto out;
    }
    if (c.given[O_DURATION] && c.given[O_ALIGN]) {
        rc = bad("give either --duration or --align-with, not both");
        goto out;
    }
    if (c.n_services && c.n_services != (size_t)(argc - optind)) {
        rc = bad("%zu --service names for %d sources (give one per SRC)", c.n_services,
                 argc - optind);
        goto out;
    }
    c.t.services = c.services;
    c.t.n_services = c.n_services;
    tide_trace_summary_t sum;
    tide_error_t err = {0, ""};
    if (tide_trace_import(c.format, (const char *const *)argv + optind, (size_t)(argc - optind),
                          &c.t, c.out, &sum, &err) < 0) {
        fprintf(stderr, "tide trace import: %s\n", err.msg);
        rc = tide_cli_exit_code(err.code ? err.code : TIDE_EINVAL);
        goto out;
    }
    printf("tide trace import: %s\n", sum.line);
    if (sum.rows_skipped)
        fprintf(stderr, "tide trace import: skipped %lld bad row(s); the first: %s\n",
                sum.rows_skipped, sum.first_skip.msg);
    rc = 0;
out:
    free(c.services);
    return rc;
}

/* Subcommands of `tide trace`. */
static const struct {
    const char *name;
    tide_cmd_fn fn;
} subcommands[] = {
    {"import", cmd_import},
};

int tide_cmd_trace(int argc, char **argv)
{
    if (argc < 2) {
        trace_usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        trace_usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (!strcmp(argv[1], subcommands[i].name))
            return subcommands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "tide trace: unknown subcommand '%s'\n", argv[1]);
    trace_usage(stderr);
    return 2;
}
