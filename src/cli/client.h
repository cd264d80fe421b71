/* The client of the tide API (docs/api.md) used by the CLI's client
 * commands: the server URL and token, JSON requests and error mapping. Plain
 * http only (the daemon listens on loopback or behind a proxy); the transport
 * is the one HTTP client in http/client.h. */
#ifndef TIDE_CLI_CLIENT_H
#define TIDE_CLI_CLIENT_H

#include <stddef.h>

#include <jansson.h>

#include "http/client.h"
#include "tide/types.h"

#define TIDE_CLIENT_DEFAULT_URL "http://127.0.0.1:7070"
#define TIDE_CLIENT_MAX_RESPONSE (256u << 20) /* bodies above this are refused */

/* Where the daemon is and who we are. Fill with tide_client_init. */
typedef struct tide_client {
    char host[256];   /* host name or address, without brackets */
    char port[8];     /* decimal */
    char prefix[256]; /* path prefix from the URL ("" or "/x"), no trailing '/' */
    char url[600];    /* the URL as given, for messages */
    char *token;      /* owned; NULL = send no Authorization header */
    int timeout_s;    /* whole-request timeout (default 60) */
} tide_client_t;

/* Parse server ("http://host[:port][/prefix]", NULL = $TIDE_SERVER or the
 * default) and take token (NULL = $TIDE_TOKEN or none; "" = none).
 * Errors: EINVAL naming the bad URL (https is refused: http only). */
int tide_client_init(tide_client_t *c, const char *server, const char *token, tide_error_t *err);
void tide_client_fini(tide_client_t *c); /* frees the token; safe twice */

/* Send one request (path starts with '/', already URL-encoded; body may be
 * NULL) and read the whole response into out (caller frees it with
 * tide_http_resp_free). Any HTTP status is a success here.
 * Errors: EIO for transport failures (ERANGE a body over
 * TIDE_CLIENT_MAX_RESPONSE), the message naming the URL
 * ("cannot connect to http://127.0.0.1:7070: Connection refused"). */
int tide_client_http(const tide_client_t *c, const char *method, const char *path,
                     const char *body, size_t body_len, tide_http_resp_t *out,
                     tide_error_t *err);

/* Send a request with a JSON body (NULL = none) and return the parsed JSON
 * response (caller owns it; an empty 2xx body gives an empty object). A
 * status >= 400 fails with the server's error message and a code mapped from
 * its "code" name (EINVAL, ENOENT...) or, failing that, from the status
 * (tide_http_status_code). *status (optional) gets the HTTP status, 0 when
 * no response came. Errors: EIO transport or a non-JSON 2xx body. */
json_t *tide_client_call(const tide_client_t *c, const char *method, const char *path,
                         const json_t *body, int *status, tide_error_t *err);

/* Append s URL-encoded (RFC 3986 unreserved kept) to buf of size n; returns
 * buf. Truncates safely. */
char *tide_client_urlenc(char *buf, size_t n, const char *s);

#endif
