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

int tide_cli_fail(const char *cmd, const tide_error_t *err)
{
    fprintf(stderr, "tide %s: %s\n", cmd, err->msg);
    return tide_errcode_exit(err->code ? err->code : TIDE_EINVAL);
}

int tide_cli_getopt_error(const char *cmd, int o, char **argv)
{
    if (o == ':')
        return tide_cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
    if (optopt)
        return tide_cli_usage_error(cmd, "unknown option '-%c'", optopt);
    return tide_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
}
