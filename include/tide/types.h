/* tide: basic types shared by every module (ids, time, errors). */
#ifndef TIDE_TYPES_H
#define TIDE_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Time in whole seconds. The core never reads a clock: drivers pass "now". */
typedef int64_t tide_time_t;

#define TIDE_TIME_NEVER INT64_MAX

/* The largest request rate tide takes from outside (a demand, a replica's
 * capacity): a billion requests per second, far beyond any service. The
 * readers (API, CSV, Prometheus) refuse larger demands; the engine takes any
 * finite demand and its sizing saturates (at a service's maximum). */
#define TIDE_MAX_RPS 1e9

/* Error codes. One table (src/util/err.c) maps each to a name, a CLI exit code
 * and an HTTP status. */
typedef enum tide_errcode {
    TIDE_OK = 0,
    TIDE_EINVAL,  /* bad input: malformed value, impossible request */
    TIDE_ENOENT,  /* unknown id or missing file */
    TIDE_EEXIST,  /* id already present */
    TIDE_ENOMEM,  /* allocation failed */
    TIDE_EIO,     /* read/write failure */
    TIDE_ESTATE,  /* operation not valid in the current state */
    TIDE_ERANGE,  /* value out of range */
    TIDE_ERRCODE_COUNT
} tide_errcode_t;

/* A readable error filled by functions that fail (optional: pass NULL). */
typedef struct tide_error {
    int code;       /* tide_errcode_t */
    char msg[512];  /* human-readable, no trailing newline */
} tide_error_t;

/* Fill err (if not NULL) with code and a printf-style message. Always returns -1
 * so callers can write `return tide_errf(err, TIDE_EINVAL, "...")`. */
int tide_errf(tide_error_t *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefix an existing error message with context ("file.csv:12: ..."). Returns -1. */
int tide_err_prefix(tide_error_t *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Name of an error code ("EINVAL"; "EUNKNOWN" out of range). The CLI maps a
 * code to its exit status (tide_cli_exit_code), the HTTP layer to a status
 * (tide_http_status). */
const char *tide_errcode_name(int code);
/* The code named name ("ENOENT"), or -1. */
int tide_errcode_find(const char *name);

#ifdef __cplusplus
}
#endif
#endif
