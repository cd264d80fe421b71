/* Errors: one table maps each code to a name, a CLI exit status and an HTTP status. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tide/types.h"

static const struct {
    const char *name;
    int exit_code;
    int http;
} errtab[TIDE_ERRCODE_COUNT] = {
    [TIDE_OK] = {"OK", 0, 200},
    [TIDE_EINVAL] = {"EINVAL", 2, 400},
    [TIDE_ENOENT] = {"ENOENT", 3, 404},
    [TIDE_EEXIST] = {"EEXIST", 4, 409},
    [TIDE_ENOMEM] = {"ENOMEM", 5, 503},
    [TIDE_EIO] = {"EIO", 6, 500},
    [TIDE_ESTATE] = {"ESTATE", 7, 409},
    [TIDE_ERANGE] = {"ERANGE", 2, 400},
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

const char *tide_errcode_name(int code) { return valid(code) ? errtab[code].name : "EUNKNOWN"; }
int tide_errcode_exit(int code) { return valid(code) ? errtab[code].exit_code : 1; }
int tide_errcode_http(int code) { return valid(code) ? errtab[code].http : 500; }
