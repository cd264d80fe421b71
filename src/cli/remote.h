/* Shared pieces of the CLI's client commands (submit, jobs, job, cancel,
 * services, leases, events, usage, top): the common options --server,
 * --token and --json, error reporting, value formatting and plain tables. */
#ifndef TIDE_CLI_REMOTE_H
#define TIDE_CLI_REMOTE_H

#include <getopt.h>
#include <stdio.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/client.h"

/* Output formats (--output): a table, a wider table, the server's JSON. */
enum { TIDE_OUT_TABLE = 0, TIDE_OUT_JSON, TIDE_OUT_WIDE };

/* The options every client command takes (strings borrowed from argv). */
typedef struct tide_remote_opts {
    const char *server; /* --server URL (NULL: $TIDE_SERVER, then the default) */
    const char *token;  /* --token T (NULL: $TIDE_TOKEN) */
    int json;           /* --json or --output json: print the server's JSON */
    int output;         /* TIDE_OUT_*: --output table|wide|json */
    const char *bad_output; /* an --output value that is none of these */
} tide_remote_opts_t;

enum { TIDE_RO_SERVER = 900, TIDE_RO_TOKEN, TIDE_RO_JSON, TIDE_RO_OUTPUT };

/* Put these in a command's getopt_long table. */
#define TIDE_REMOTE_LONGOPTS                                                                   \
    {"server", required_argument, NULL, TIDE_RO_SERVER},                                      \
        {"token", required_argument, NULL, TIDE_RO_TOKEN},                                    \
        {"json", no_argument, NULL, TIDE_RO_JSON},                                            \
        {"output", required_argument, NULL, TIDE_RO_OUTPUT}

/* Their lines for a usage text. */
#define TIDE_REMOTE_HELP                                                                       \
    "      --server URL   daemon to talk to (default $TIDE_SERVER, else " TIDE_CLIENT_DEFAULT_URL \
    ")\n"                                                                                      \
    "      --token T      bearer token (default $TIDE_TOKEN)\n"                                \
    "      --output F     table (default), wide (more columns) or json (the\n"                 \
    "                     server's JSON)\n"                                                     \
    "      --json         same as --output json\n"                                             \
    "  -h, --help         show this help\n"

#define TIDE_REMOTE_EXIT_HELP                                                                  \
    "\nExit status: 0 ok; 2 bad option or request (HTTP 400/413); 3 unknown id (404);\n"      \
    "4 conflict (409); 6 daemon unreachable or failing (5xx); see docs/cli.md.\n"

/* If opt is one of the common options, record it and return 1; else 0. */
int tide_remote_opt(tide_remote_opts_t *o, int opt, const char *arg);

/* The whole option loop of a command whose only options are the remote ones
 * and --help: fills *ro; -1 to go on (optind at the first operand), else the
 * exit status (0 after --help, printed by usage; 2 for a bad option). */
int tide_remote_args(const char *cmd, int argc, char **argv, tide_remote_opts_t *ro,
                     void (*usage)(FILE *f));
/* The same with one more option, --flag (no argument), that sets *set to 1. */
int tide_remote_args_flag(const char *cmd, int argc, char **argv, tide_remote_opts_t *ro,
                          void (*usage)(FILE *f), const char *flag, int *set);

/* Set up c from o. Returns -1 on success, else the exit status (message
 * printed; 2 for a bad --output). */
int tide_remote_connect(const tide_remote_opts_t *o, tide_client_t *c);

/* Print "tide: <message>" on stderr and return the exit status for err's
 * code (tide_cli_exit_code). */
int tide_remote_fail(const tide_error_t *err);


/* One request: connect with ro, send body (taken; NULL none), print the
 * answer with show (NULL or --json: the JSON). Returns the exit status. */
int tide_remote_call(const tide_remote_opts_t *ro, const char *method, const char *path,
                     json_t *body, void (*show)(const json_t *j));

/* Pretty-print j on stdout followed by a newline. */
void tide_remote_print_json(const json_t *j);

/* obj[key] as display text in buf: strings as-is, integers, reals with up to
 * `prec` decimals (trailing zeros cut), booleans yes/no, null/missing "-",
 * arrays/objects compact JSON. Returns buf. */
const char *tide_remote_val(const json_t *obj, const char *key, int prec, char *buf, size_t n);

/* Same for a value. */
const char *tide_remote_fmt(const json_t *v, int prec, char *buf, size_t n);

/* An engine time in seconds as wall-clock ISO 8601 UTC
 * ("2026-12-01T16:10:05Z") once tide_remote_wall_load found the daemon's
 * mapping, else as engine time "d3 04:05:06" ("-" for null/missing). */
const char *tide_remote_clock(const json_t *obj, const char *key, char *buf, size_t n);

/* Learn the daemon's engine-to-wall mapping (GET /v1/cluster: wall_origin,
 * speed) for tide_remote_clock. Without it (an older daemon, an error) times
 * stay engine times. Returns 1 when found, else 0. */
int tide_remote_wall_load(const tide_client_t *c);

/* Unix seconds of engine time t (NAN before tide_remote_wall_load found the
 * mapping). */
double tide_remote_wall_of(double t);

/* A duration in seconds as "2h05m" ("-" for null/missing). */
const char *tide_remote_dur(const json_t *obj, const char *key, char *buf, size_t n);

/* GET a JSON document: tide_client_call with method GET. */
json_t *tide_remote_get(const tide_client_t *c, const char *path, tide_error_t *err);

/* ------------------------------------------------------------------ tables */

/* A plain text table: left-aligned columns, or right-aligned when the
 * header starts with '>' (the '>' is not printed). Cells are copied. */
typedef struct tide_table {
    size_t ncols;
    char **cells; /* row-major, header first */
    size_t n, cap;
} tide_table_t;

void tide_table_init(tide_table_t *t, size_t ncols, const char *const *headers);
/* Add a row of exactly ncols cells (NULL cells print "-"). */
void tide_table_row(tide_table_t *t, const char *const *cells);
void tide_table_print(const tide_table_t *t, FILE *f);
void tide_table_free(tide_table_t *t);

#endif
