/* Errors: tide_errf and the name of each code. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tide/types.h"

/* The name of each code (the JSON "code" of an API error). Its exit status
 * lives with the CLI (src/cli/cli_util.c), its HTTP status with the HTTP
 * layer (src/http/router.c). */
static const char *const errnames[TIDE_ERRCODE_COUNT] = {
    [TIDE_OK] = "OK",         [TIDE_EINVAL] = "EINVAL", [TIDE_ENOENT] = "ENOENT",
    [TIDE_EEXIST] = "EEXIST", [TIDE_ENOMEM] = "ENOMEM", [TIDE_EIO] = "EIO",
    [TIDE_ESTATE] = "ESTATE", [TIDE_ERANGE] = "ERANGE",
};

int tide_errf(tide_error_t *err, int code, const char *fmt, ...)
{
    if (!err)
        return -1;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int tide_err_prefix(tide_error_t *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    char pre[256], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    size_t np = strnlen(pre, sizeof pre), no = strnlen(old, sizeof old - 1);
    if (np > sizeof err->msg - 1)
        np = sizeof err->msg - 1;
    if (no > sizeof err->msg - 1 - np)
        no = sizeof err->msg - 1 - np;
    memcpy(err->msg, pre, np);
    memcpy(err->msg + np, old, no);
    err->msg[np + no] = 0;
    return -1;
}

static int valid(int code) { return code >= 0 && code < TIDE_ERRCODE_COUNT; }

const char *tide_errcode_name(int code) { return valid(code) ? errnames[code] : "EUNKNOWN"; }

int tide_errcode_find(const char *name)
{
    for (int code = 0; name && code < TIDE_ERRCODE_COUNT; code++)
        if (!strcmp(errnames[code], name))
            return code;
    return -1;
}
