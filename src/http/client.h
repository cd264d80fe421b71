/* tide http: the one blocking HTTP/1.1 client (plain http only; libmicrohttpd
 * has no client side). One connection per request ("Connection: close");
 * Content-Length, chunked and read-to-close response bodies; an overall
 * deadline covers connect, send and receive. Used by the daemon's demand pull
 * (tide_http_get) and the CLI's client commands (src/cli/client.c). */
#ifndef TIDE_HTTP_CLIENT_H
#define TIDE_HTTP_CLIENT_H

#include <stddef.h>

#include "tide/types.h"

/* One request. host without brackets; path starts with '/' (query included,
 * already URL-encoded). */
typedef struct tide_http_call {
    const char *method;       /* "GET", "POST", ... */
    const char *host;
    const char *port;         /* decimal */
    const char *path;
    const char *headers;      /* extra header lines, each ending "\r\n", or NULL */
    const char *body;         /* NULL = no body */
    size_t body_len;
    const char *what;         /* the URL, for messages */
    const char *refused_hint; /* appended to "connection refused" (NULL = none) */
    int timeout_ms;           /* the whole request (<= 0: 1000) */
    size_t max;               /* largest body accepted */
} tide_http_call_t;

/* One response. body is owned, NUL-terminated (len excludes the NUL). */
typedef struct tide_http_resp {
    int status;
    char *body;
    size_t len;
} tide_http_resp_t;

/* Send rq and read the whole response into out (free with
 * tide_http_resp_free). Any HTTP status is a success here. Errors: EIO
 * connect/send/receive failure, timeout or a malformed response, ERANGE a
 * body over rq->max; messages name rq->what. */
int tide_http_request(const tide_http_call_t *rq, tide_http_resp_t *out, tide_error_t *err);

/* Free r's body; safe twice. */
void tide_http_resp_free(tide_http_resp_t *r);

#endif
