/* Helpers every subcommand shares: usage errors and failures in one format. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>

#include "cli/cli.h"
#include "tide/types.h"

int tide_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tide %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see tide %s --help)\n", cmd);
    va_end(ap);
    return 2;
}

/* The exit status of each error code (docs/cli.md). */
static const int exit_status[TIDE_ERRCODE_COUNT] = {
    [TIDE_OK] = 0,     [TIDE_EINVAL] = 2, [TIDE_ENOENT] = 3, [TIDE_EEXIST] = 4,
    [TIDE_ENOMEM] = 5, [TIDE_EIO] = 6,    [TIDE_ESTATE] = 7, [TIDE_ERANGE] = 2,
};

int tide_cli_exit_code(int code)
{
    return code >= 0 && code < TIDE_ERRCODE_COUNT ? exit_status[code] : 1;
}

int tide_cli_fail(const char *cmd, const tide_error_t *err)
{
    fprintf(stderr, "tide %s: %s\n", cmd, err->msg);
    return tide_cli_exit_code(err->code ? err->code : TIDE_EINVAL);
}

int tide_cli_getopt_error(const char *cmd, int o, char **argv)
{
    if (o == ':')
        return tide_cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
    if (optopt)
        return tide_cli_usage_error(cmd, "unknown option '-%c'", optopt);
    return tide_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
}
