/* tide http: the network side. libmicrohttpd reads requests on a few
 * event-driven (epoll) I/O threads; a complete request is handed to the
 * router on a handler thread while its connection is suspended, so a long
 * poll holds one handler thread and no I/O thread, and idle or slow clients
 * hold only a socket. Limits per client address, an inactivity deadline
 * for reading headers and bodies, JSON bodies for the errors it answers
 * itself (413 before any 100 Continue, 400 for conflicting lengths, 503 when
 * every handler thread is busy), optional TLS. Collects the request (path,
 * query, Authorization, body up to TIDE_HTTP_MAX_BODY) and hands it to a
 * router. */
#ifndef TIDE_HTTP_SERVER_H
#define TIDE_HTTP_SERVER_H

#include "http/router.h"
#include "tide/types.h"

typedef struct tide_http_server tide_http_server_t;

/* Parse a --listen value: "HOST:PORT", "[V6]:PORT", ":PORT" or "PORT"
 * (host defaults to 127.0.0.1; port 0 picks a free port). Returns 0 or -1
 * with EINVAL. */
int tide_http_listen_parse(const char *listen, char *host, size_t hostn, char *port, size_t portn,
                           tide_error_t *err);

/* Server limits (0 = the default in brackets). */
typedef struct tide_http_server_opts {
    unsigned io_threads;      /* libmicrohttpd's epoll threads [4] */
    unsigned max_connections; /* open connections in all [4096; lowered to fit the fd limit,
                               * whose soft value is raised to the hard one] */
    unsigned per_ip;          /* open connections per client address [128]; more are closed
                               * as soon as they are accepted */
    unsigned timeout_s;       /* a connection silent this long is closed [10]: a client
                               * sending its headers or body slower than one packet per
                               * timeout_s, or idle between requests (suspended long polls
                               * are exempt) */
    unsigned max_handlers;    /* handler threads [256]; a request finding all busy gets 503 */
    const char *tls_cert;     /* PEM files: serve HTTPS (both or neither) */
    const char *tls_key;
} tide_http_server_opts_t;

/* Fill o with the defaults above. */
void tide_http_server_opts_default(tide_http_server_opts_t *o);

/* Bind `listen` and serve router (borrowed; must outlive the server) from
 * internal threads. opts may be NULL (defaults). Returns the server or NULL
 * with err (EINVAL bad address, TLS files unreadable or not PEM, no TLS in
 * libmicrohttpd; EIO cannot bind / start, e.g. a key that does not match). */
tide_http_server_t *tide_http_server_start_opts(const char *listen, tide_router_t *router,
                                                const tide_http_server_opts_t *opts,
                                                tide_error_t *err);
/* The same with the defaults. */
tide_http_server_t *tide_http_server_start(const char *listen, tide_router_t *router,
                                           tide_error_t *err);

/* The bound port, and the base URL "http://127.0.0.1:PORT" ("https://..."
 * with TLS) (borrowed). */
int tide_http_server_port(const tide_http_server_t *s);
const char *tide_http_server_url(const tide_http_server_t *s);

/* Stop accepting; let requests already handed to handlers send their
 * answers (up to 10 s); wait for every handler to return; close the
 * connections; free. NULL is a no-op. Handlers blocked in long polls must be
 * released first (the daemon's shutdown does that). */
void tide_http_server_stop(tide_http_server_t *s);

#endif
