/* tide http: the network side (libmicrohttpd, one thread per connection so
 * that long polls only hold their own connection). Collects the request
 * (path, query, Authorization, body up to TIDE_HTTP_MAX_BODY) and hands it to
 * a router. */
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

/* Bind `listen` and serve router (borrowed; must outlive the server) from
 * internal threads. Returns the server or NULL with err (EINVAL bad address,
 * EIO cannot bind / start). */
tide_http_server_t *tide_http_server_start(const char *listen, tide_router_t *router,
                                           tide_error_t *err);

/* The bound port, and the base URL "http://127.0.0.1:PORT" (borrowed). */
int tide_http_server_port(const tide_http_server_t *s);
const char *tide_http_server_url(const tide_http_server_t *s);

/* Stop accepting, wait for the connection threads, free. NULL is a no-op.
 * Handlers blocked in long polls must be released first (the daemon's
 * shutdown does that). */
void tide_http_server_stop(tide_http_server_t *s);

#endif
