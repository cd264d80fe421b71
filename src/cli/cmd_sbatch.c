/* `tide sbatch SCRIPT [ARGS...]`: an sbatch script's job, submitted to tide
 * (POST /v1/jobs) from its #SBATCH lines, so that an existing script moves
 * with one word. Prints "Submitted batch job ID" as sbatch does. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "formats/cluster_file.h"
#include "formats/governance.h"
#include "formats/sbatch.h"
#include "util/util.h"

#define SCRIPT_MAX (4u << 20) /* sbatch's own limit is 4 MB */

static void sbatch_usage(FILE *f)
{
    fprintf(f,
            "usage: tide sbatch [--team T] [--priority P] [--cluster-file F] [--dry-run]\n"
            "                   [--server URL] [--token T] [--json] SCRIPT [ARGS...]\n"
            "\n"
            "Submit a Slurm batch script to tide (POST /v1/jobs) and print \"Submitted\n"
            "batch job ID\", as sbatch does. The #SBATCH lines at the top of the script\n"
            "(before its first command) give the job:\n"
            "  --gres=gpu[:TYPE]:N, --gpus-per-node   GPUs per node\n"
            "  --nodes / -N N                          nodes (GPUs = N x per node); or\n"
            "  --gpus / -G N                           GPUs of the whole job\n"
            "  --time / -t T                           duration_s (Slurm's formats: 30,\n"
            "                                          4:00:00, 1-12:00:00; required)\n"
            "  --qos / -q Q                            priority, through the qos: section of\n"
            "                                          the cluster file (docs/formats.md)\n"
            "  --account / -A A                        team (unless --team is given)\n"
            "  --job-name / -J, --comment, --ntasks-per-node\n"
            "                                          kept in the job's env (SBATCH_JOB_NAME,\n"
            "                                          SBATCH_COMMENT, SBATCH_NTASKS_PER_NODE)\n"
            "The job is one gang of all its GPUs (the script's own shape: one run on\n"
            "N nodes); the script itself, unchanged, is the job's command (ARGS are set\n"
            "as its positional parameters). Other options (--mem, --partition, ...) are\n"
            "listed on stderr as ignored: tide places the GPUs.\n"
            "\n"
            "options:\n"
            "      --team T          owning team (default: --account, else the token's)\n"
            "  -p, --priority P      1..3 or P1..P3 (overrides --qos)\n"
            "      --cluster-file F  cluster YAML with a qos: section (default\n"
            "                        $TIDE_CLUSTER_FILE); needed for --qos\n"
            "  -n, --dry-run         print the request instead of submitting it\n"
            "connection:\n" TIDE_REMOTE_HELP TIDE_REMOTE_EXIT_HELP);
}

#define BAD(...) tide_cli_usage_error("sbatch", __VA_ARGS__)

/* The whole of path ("-": stdin) as a NUL-terminated string. NULL with err. */
static char *slurp(const char *path, size_t *len, tide_error_t *err)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        tide_errf(err, errno == ENOENT ? TIDE_ENOENT : TIDE_EIO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 65536, n = 0;
    char *buf = tide_xmalloc(cap + 1);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            if (cap >= SCRIPT_MAX) {
                tide_errf(err, TIDE_ERANGE, "%s: larger than %u bytes", path, SCRIPT_MAX);
                break;
            }
            cap *= 2;
            buf = tide_xrealloc(buf, cap + 1);
        }
    }
    if (f != stdin)
        fclose(f);
    if (n >= SCRIPT_MAX) {
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* A growing string. */
typedef struct strbuf {
    char *s;
    size_t n, cap;
} strbuf_t;

static void buf_init(strbuf_t *b)
{
    b->cap = 256;
    b->n = 0;
    b->s = tide_xmalloc(b->cap);
    b->s[0] = 0;
}

static void buf_putn(strbuf_t *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        while (b->n + n + 1 > b->cap)
            b->cap *= 2;
        b->s = tide_xrealloc(b->s, b->cap);
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

static void buf_puts(strbuf_t *b, const char *s) { buf_putn(b, s, strlen(s)); }
static void buf_putc(strbuf_t *b, char c) { buf_putn(b, &c, 1); }
static char *strbuf_take(strbuf_t *b) { return b->s; }

/* Single-quote s for the shell into the string b. */
static void shell_quote(strbuf_t *b, const char *s)
{
    buf_putc(b, '\'');
    for (; *s; s++) {
        if (*s == '\'')
            buf_puts(b, "'\\''");
        else
            buf_putc(b, *s);
    }
    buf_putc(b, '\'');
}

/* The command: the script, with `set -- ARGS` after its #! line when there
 * are arguments. */
static char *make_command(const char *script, char **args, int nargs)
{
    strbuf_t b;
    buf_init(&b);
    const char *body = script;
    if (script[0] == '#' && script[1] == '!') {
        const char *nl = strchr(script, '\n');
        size_t l = nl ? (size_t)(nl - script + 1) : strlen(script);
        buf_putn(&b, script, l);
        if (!nl)
            buf_putc(&b, '\n');
        body = script + l;
    } else {
        buf_puts(&b, "#!/bin/bash\n");
    }
    if (nargs > 0) {
        buf_puts(&b, "set --");
        for (int i = 0; i < nargs; i++) {
            buf_putc(&b, ' ');
            shell_quote(&b, args[i]);
        }
        buf_puts(&b, " # tide sbatch: the script's arguments\n");
    }
    buf_puts(&b, body);
    return strbuf_take(&b);
}

/* The priority of QOS q through the cluster file's qos: section. 1..3, or
 * the exit status (message printed) as a negative number. */
static int qos_priority(const char *q, const char *cluster_file)
{
    if (!cluster_file || !*cluster_file) {
        BAD("--qos %s: give --cluster-file (or $TIDE_CLUSTER_FILE) with a qos: section, or "
            "--priority", q);
        return -2;
    }
    tide_error_t err = {0};
    tide_governance_t g;
    size_t len;
    char *buf = slurp(cluster_file, &len, &err);
    tide_cluster_t *c = buf ? tide_cluster_file_load_mem_ex(buf, len, cluster_file, &g, &err) : NULL;
    free(buf);
    if (!c)
        return -tide_cli_fail("sbatch", &err);
    tide_cluster_destroy(c);
    int p = tide_governance_qos(&g, q);
    if (p < 0) {
        char known[512] = "";
        for (int i = 0; i < g.n_qos; i++) {
            size_t l = strlen(known);
            snprintf(known + l, sizeof known - l, "%s%s", i ? ", " : "", g.qos_names[i]);
        }
        BAD("--qos: '%s' is not in %s's qos: section (%s)", q, cluster_file,
            known[0] ? known : "it has none");
        p = -2;
    }
    tide_governance_free(&g);
    return p;
}

static void env_set(json_t *env, const char *k, const char *v)
{
    if (v && *v)
        json_object_set_new(env, k, json_string(v));
}

/* The request body for script sb. Returns NULL with the exit status in *rc. */
static json_t *make_body(const tide_sbatch_t *sb, const char *command, const char *team,
                         int prio, int *rc)
{
    long long gpus;
    if (sb->gpus > 0)
        gpus = sb->gpus;
    else if (sb->gpus_per_node > 0)
        gpus = (long long)sb->gpus_per_node * (sb->nodes > 0 ? sb->nodes : 1);
    else {
        *rc = BAD("the script asks for no GPUs (#SBATCH --gres=gpu:N or --gpus=N)");
        return NULL;
    }
    if (sb->time_s <= 0) {
        *rc = BAD("the script has no time limit: tide needs one as the job's duration "
                  "(#SBATCH --time=4:00:00)");
        return NULL;
    }
    json_t *body = json_object(), *env = json_object();
    json_object_set_new(body, "gpus", json_integer(gpus));
    json_object_set_new(body, "gang_gpus", json_integer(gpus));
    json_object_set_new(body, "duration_s", json_integer(sb->time_s));
    if (team && *team)
        json_object_set_new(body, "team", json_string(team));
    if (prio > 0)
        json_object_set_new(body, "priority", json_integer(prio));
    if (sb->gpu_type[0])
        json_object_set_new(body, "gpu_types", json_string(sb->gpu_type));
    json_object_set_new(body, "command", json_string(command));
    env_set(env, "SBATCH_JOB_NAME", sb->job_name);
    env_set(env, "SBATCH_COMMENT", sb->comment);
    env_set(env, "SBATCH_QOS", sb->qos);
    if (sb->ntasks_per_node > 0) {
        char n[16];
        snprintf(n, sizeof n, "%d", sb->ntasks_per_node);
        env_set(env, "SBATCH_NTASKS_PER_NODE", n);
    }
    json_object_set_new(body, "env", env);
    return body;
}

static void report_ignored(const tide_sbatch_t *sb)
{
    if (sb->partition[0])
        fprintf(stderr, "tide sbatch: --partition %s ignored (tide places the job)\n", sb->partition);
    for (int i = 0; i < sb->n_ignored; i++)
        fprintf(stderr, "%s%s", i ? ", " : "tide sbatch: ignored: ", sb->ignored[i]);
    if (sb->n_ignored)
        fputc('\n', stderr);
}

static int submit(const tide_remote_opts_t *ro, json_t *body)
{
    tide_client_t c;
    int rc;
    if ((rc = tide_remote_connect(ro, &c)) >= 0)
        return rc;
    tide_error_t err = {0};
    json_t *res = tide_client_call(&c, "POST", "/v1/jobs", body, NULL, &err);
    tide_client_fini(&c);
    if (!res)
        return tide_remote_fail(&err);
    if (ro->json) {
        tide_remote_print_json(res);
    } else {
        char b[256];
        printf("Submitted batch job %s\n", tide_remote_val(res, "id", 0, b, sizeof b));
    }
    json_decref(res);
    return 0;
}

int tide_cmd_sbatch(int argc, char **argv)
{
    enum { O_TEAM = 256, O_CLUSTER_FILE };
    static const struct option longopts[] = {
        {"team", required_argument, NULL, O_TEAM},
        {"priority", required_argument, NULL, 'p'},
        {"cluster-file", required_argument, NULL, O_CLUSTER_FILE},
        {"dry-run", no_argument, NULL, 'n'},
        TIDE_REMOTE_LONGOPTS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    tide_remote_opts_t ro = {0};
    const char *team = NULL, *cfile = getenv("TIDE_CLUSTER_FILE");
    long long prio = 0;
    int o, dry = 0;
    optind = 0;
    opterr = 0;
    /* "+": options end at SCRIPT; what follows are the script's arguments */
    while ((o = getopt_long(argc, argv, "+:hp:n", longopts, NULL)) != -1) {
        if (tide_remote_opt(&ro, o, optarg))
            continue;
        switch (o) {
        case O_TEAM: team = optarg; break;
        case O_CLUSTER_FILE: cfile = optarg; break;
        case 'n': dry = 1; break;
        case 'p': {
            const char *p = (optarg[0] == 'P' || optarg[0] == 'p') ? optarg + 1 : optarg;
            if (tide_parse_int(p, &prio) < 0 || prio < 1 || prio > 3)
                return BAD("--priority: '%s' is not 1..3 or P1..P3", optarg);
            break;
        }
        case 'h': sbatch_usage(stdout); return 0;
        default: return tide_cli_getopt_error("sbatch", o, argv);
        }
    }
    if (optind >= argc)
        return BAD("a batch script is required ('-' reads standard input)");
    const char *path = argv[optind];
    tide_error_t err = {0};
    size_t len;
    char *script = slurp(path, &len, &err);
    if (!script)
        return tide_cli_fail("sbatch", &err);
    tide_sbatch_t sb;
    if (tide_sbatch_parse(script, len, &sb, &err) < 0) {
        tide_err_prefix(&err, "%s: ", path);
        free(script);
        return tide_cli_fail("sbatch", &err);
    }
    int rc = 0;
    if (!prio && sb.qos[0]) {
        int p = qos_priority(sb.qos, cfile);
        if (p < 0) {
            free(script);
            return -p;
        }
        prio = p;
    }
    char *command = make_command(script, argv + optind + 1, argc - optind - 1);
    free(script);
    json_t *body = make_body(&sb, command, team ? team : sb.account, (int)prio, &rc);
    free(command);
    if (!body)
        return rc;
    report_ignored(&sb);
    if (dry)
        tide_remote_print_json(body);
    else
        rc = submit(&ro, body);
    json_decref(body);
    return rc;
}
