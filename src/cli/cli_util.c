/* Helpers every subcommand shares: usage errors and failures in one format. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "tide/types.h"
#include "util/util.h"

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

/* --since: ISO 8601 UTC ("2026-12-01T16:00:00Z", seconds and Z optional)
 * or a duration ago, as Unix seconds. Returns 0, or -1. */
int tide_cli_parse_since(const char *arg, double *unix_out)
{
    int64_t d;
    if (tide_parse_duration(arg, &d) == 0 && d >= 0) {
        *unix_out = (double)time(NULL) - (double)d;
        return 0;
    }
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int n = 0, sec_n = 0;
    if (sscanf(arg, "%4d-%2d-%2dT%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &n) != 5 || n != 16)
        return -1;
    const char *end = arg + n;
    if (*end == ':') {
        if (sscanf(end, ":%2d%n", &tm.tm_sec, &sec_n) != 1 || sec_n != 3)
            return -1;
        end += sec_n;
    }
    if (*end == 'Z')
        end++;
    if (*end || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
        tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60 || tm.tm_year < 1970)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    *unix_out = (double)timegm(&tm);
    return 0;
}
