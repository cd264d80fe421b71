/* tide CLI: one table of subcommands (main.c), one file per subcommand. */
#ifndef TIDE_CLI_H
#define TIDE_CLI_H

/* Each subcommand gets argv with argv[0] = its own name. Returns the process
 * exit status (0 ok, 2 usage / bad input, see tide_cli_exit_code). Every
 * subcommand answers --help / -h with its usage on stdout and status 0. */
typedef int (*tide_cmd_fn)(int argc, char **argv);

#include <stdio.h>

/* A row of the commands table (main.c). */
typedef struct tide_cli_cmd {
    const char *name;
    tide_cmd_fn fn;
    const char *summary;
} tide_cli_cmd_t;
/* The commands table (n rows; static storage). */
const tide_cli_cmd_t *tide_cli_commands(size_t *n);
/* `tide --help`: the commands and their summaries. */
void tide_cli_usage_print(FILE *f);
/* What `tide CMD --help` prints (run in a child process, its stdout
 * captured); malloc'd, NULL when it fails. */
char *tide_cli_help_text(const tide_cli_cmd_t *c);
/* tide help [COMMAND | --man] (version: what --version prints), and tide
 * completion bash (cmd_help.c). */
int tide_cmd_help(int argc, char **argv, const char *version);
int tide_cmd_completion(int argc, char **argv);

struct tide_error;
/* Print "tide CMD: <message> (see tide CMD --help)" on stderr; returns 2. */
int tide_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The exit status of a tide error code: EINVAL and ERANGE 2, ENOENT 3,
 * EEXIST 4, ENOMEM 5, EIO 6, ESTATE 7 (0 for OK, 1 unknown). One table. */
int tide_cli_exit_code(int code);
/* Print "tide CMD: <err->msg>" on stderr; returns the exit status of err's code. */
int tide_cli_fail(const char *cmd, const struct tide_error *err);
/* getopt_long returned ':' (missing value) or '?' (unknown option): print the
 * usage error for it and return 2. */
int tide_cli_getopt_error(const char *cmd, int o, char **argv);
/* A --since value as Unix seconds: an ISO 8601 UTC time
 * ("2026-12-01T16:00:00Z", seconds and Z optional) or a duration ago
 * ("1h", "7d"). Returns 0, or -1 (neither). */
int tide_cli_parse_since(const char *arg, double *unix_out);

int tide_cmd_sim(int argc, char **argv);
int tide_cmd_gen(int argc, char **argv);
int tide_cmd_report(int argc, char **argv);

/* `tide sim --sweep SPEC --report FILE` (cmd_report.c). o is the base run's
 * options (o->out_dir = DIR).
 * tide_cli_sim_check_sweep: the grid parses and fits the cluster (before the
 * run). Returns -1 to go on, else the exit status (message printed).
 * tide_cli_sim_finish: after the base run, run the sweep (spec not NULL:
 * DIR/sweep.csv, DIR/sweep.json, the front on stdout) then write the report
 * (report not NULL). Returns the exit status (0 ok, message printed). */
struct tide_sim_opts;
int tide_cli_sim_check_sweep(const char *spec, const struct tide_sim_opts *o);
int tide_cli_sim_finish(const char *spec, const char *report, const struct tide_sim_opts *o);
int tide_cmd_trace(int argc, char **argv); /* tide trace import (docs/trace.md) */
int tide_cmd_serve(int argc, char **argv); /* the daemon (docs/serve.md) */
int tide_cmd_db(int argc, char **argv);    /* tide db check|backup|restore (docs/cli.md) */
/* Client commands talking to `tide serve` over HTTP (docs/cli.md). */
int tide_cmd_submit(int argc, char **argv);
int tide_cmd_jobs(int argc, char **argv);
int tide_cmd_job(int argc, char **argv);
int tide_cmd_cancel(int argc, char **argv);
int tide_cmd_services(int argc, char **argv);
int tide_cmd_models(int argc, char **argv);  /* cmd_models.c */
int tide_cmd_model(int argc, char **argv);
int tide_cmd_rollout(int argc, char **argv);
int tide_cmd_rl(int argc, char **argv);      /* cmd_rl.c */
int tide_cmd_leases(int argc, char **argv);
int tide_cmd_events(int argc, char **argv);
int tide_cmd_audit(int argc, char **argv);
int tide_cmd_review(int argc, char **argv); /* policy-change review (docs/review.md) */  /* GET /v1/audit (admins) */
int tide_cmd_usage(int argc, char **argv);
int tide_cmd_usage_dir(int argc, char **argv);
int tide_cmd_capacity(int argc, char **argv);
int tide_cmd_top(int argc, char **argv);
int tide_cmd_ui(int argc, char **argv);  /* the dashboard over a sim folder (docs/ui.md) */
int tide_cmd_nodes(int argc, char **argv);  /* GET /v1/nodes, like sinfo */
int tide_cmd_drain(int argc, char **argv);  /* drain NODE --reason R */
int tide_cmd_resume(int argc, char **argv); /* resume NODE */
int tide_cmd_rehearse(int argc, char **argv); /* rehearse SERVICE */
int tide_cmd_shadow(int argc, char **argv);   /* shadow [--enact] */
int tide_cmd_demand(int argc, char **argv); /* demand SERVICE RPS */
int tide_cmd_sbatch(int argc, char **argv); /* sbatch SCRIPT: #SBATCH lines -> POST /v1/jobs */

#endif
