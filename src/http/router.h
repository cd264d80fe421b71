/* tide http: the routes table, request dispatch (auth, matching, handler),
 * replies, and per-route request counters. Independent of the network: the
 * server (server.h) and the tests feed tide_router_handle directly. */
#ifndef TIDE_HTTP_ROUTER_H
#define TIDE_HTTP_ROUTER_H

#include <stddef.h>

#include <jansson.h>

#include "http/auth.h"
#include "tide/types.h"

#define TIDE_HTTP_MAX_BODY (1u << 20) /* request bodies above this get 413 */
#define TIDE_HTTP_MAX_PARAMS 4

struct tide_route;

/* A request as a handler sees it (everything borrowed for the call). */
typedef struct tide_http_req {
    const char *method;
    const char *path;                          /* raw (still percent-encoded) */
    const char *params[TIDE_HTTP_MAX_PARAMS];  /* decoded {name} segments, in pattern order */
    size_t n_params;
    const char *const *query;                  /* raw key, value, key, value, ... */
    size_t n_query;
    const char *body;                          /* NUL-terminated copy, "" when none */
    size_t body_len;
    tide_principal_t who;
    const char *peer;                          /* the client's address ("" unknown) */
    const struct tide_route *route;
    /* request headers (NULL when the server gives none): see tide_http_header */
    const char *(*header)(void *ctx, const char *name);
    void *header_ctx;
} tide_http_req_t;

/* ------------------------------------------------------ streaming bodies */

/* A body produced over time (Server-Sent Events): instead of body, a reply
 * may carry a stream, which the server sends chunked as it produces bytes.
 * The server owns it once the handler returns; all calls come from the
 * connection's side (any thread, never two at once) except wake. */
typedef struct tide_http_stream_ops {
    /* Copy up to max bytes into buf: > 0 bytes, 0 = nothing now, -1 = the
     * stream ended (the connection is closed). Never blocks. */
    long (*read)(void *ctx, char *buf, size_t max);
    /* Block up to timeout_ms until read may have more (servers that give a
     * thread to each connection). */
    void (*wait)(void *ctx, int timeout_ms);
    /* Event-loop servers: have wake(arg) called, from any thread and with
     * the stream's lock held, whenever read may have more after it answered
     * 0; wake = NULL cancels (no call is in progress once this returns). */
    void (*set_wake)(void *ctx, void (*wake)(void *arg), void *arg);
    /* The connection is gone (or the reply was never sent): release ctx. */
    void (*close)(void *ctx);
} tide_http_stream_ops_t;

/* The request header `name` (case-insensitive), NULL when absent. */
const char *tide_http_header(const tide_http_req_t *req, const char *name);

/* A reply. body is owned (tide_http_reply_free). */
typedef struct tide_http_reply {
    int status;
    char *body;
    size_t len;
    const char *content_type;  /* static string; default application/json */
    char allow[64];            /* Allow header of a 405 ("" = none) */
    const tide_http_stream_ops_t *stream; /* a streaming body (tide_http_reply_stream) */
    void *stream_ctx;
} tide_http_reply_t;

typedef void (*tide_http_handler_fn)(void *app, const tide_http_req_t *req, tide_http_reply_t *rep);

/* One row of a routes table. pattern: '/'-separated literal segments and
 * {name} segments that match one non-empty segment (percent-decoded into
 * req->params). */
typedef struct tide_route {
    const char *method;
    const char *pattern;
    int role;                  /* tide_role_t the caller needs */
    tide_http_handler_fn fn;
    const char *audit;         /* non-NULL: a write; every request to it (answered by
                                  the handler or refused before it) is handed to the
                                  router's audit hook under this kind name */
} tide_route_t;

/* Match method and raw path against routes. Returns the route index, or -1:
 * *why = 404 (no pattern matches the path) or 405 (a pattern matches with
 * another method; allow gets those methods, comma-separated). On a match the
 * params are decoded into buf (NUL-separated, bufn bytes) and params[] point
 * into it; a segment whose decoding is invalid (bad %XX, NUL) does not
 * match. */
int tide_route_match(const tide_route_t *routes, size_t n, const char *method, const char *path,
                     char *buf, size_t bufn, const char **params, size_t *n_params, int *why,
                     char *allow, size_t allown);

/* Percent-decode src[0..n) into dst (size dstn); '+' is a space when
 * plus_space. Returns the length, or -1 for a bad escape, an encoded NUL or
 * no room. */
long tide_http_unescape(const char *src, size_t n, char *dst, size_t dstn, int plus_space);

/* Value of query argument key, decoded into buf (NULL when absent). A key
 * given without '=' yields ""; a value that cannot be decoded (bad %XX,
 * encoded NUL, longer than buf) is returned raw (truncated) so that the
 * caller's validation rejects it rather than ignoring it. */
const char *tide_http_query(const tide_http_req_t *req, const char *key, char *buf, size_t n);

/* ---------------------------------------------------------------- replies */

void tide_http_reply_free(tide_http_reply_t *r);

/* Set status and a JSON body (j is stolen; compact dump). */
void tide_http_reply_json(tide_http_reply_t *r, int status, json_t *j);

/* A JSON error {"error": {"code": code, "message": ...}}. */
void tide_http_reply_error(tide_http_reply_t *r, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The error of a failed call: HTTP status (tide_http_status) and code name
 * (tide_errcode_name). */
void tide_http_reply_err(tide_http_reply_t *r, const tide_error_t *err);

/* Plain body with a content type (text copied). */
void tide_http_reply_text(tide_http_reply_t *r, int status, const char *content_type,
                          const char *text, size_t len);

/* A 200 whose body is the stream (ops, ctx), with a content type; the reply
 * owns ctx (tide_http_reply_free closes it unless the server took it). */
void tide_http_reply_stream(tide_http_reply_t *r, const char *content_type,
                            const tide_http_stream_ops_t *ops, void *ctx);

/* ----------------------------------------------------------------- router */

typedef struct tide_router tide_router_t;

/* A router over a routes table (borrowed; must outlive the router), an
 * authenticator (borrowed) and the handlers' app pointer. Thread-safe. */
tide_router_t *tide_router_create(const tide_route_t *routes, size_t n, tide_auth_t *auth,
                                  void *app);
void tide_router_destroy(tide_router_t *r); /* NULL is a no-op */

/* A request as the network delivered it. */
typedef struct tide_http_input {
    const char *method;
    const char *path;            /* raw path without the query */
    const char *const *query;    /* raw key/value pairs (value NULL = no '=') */
    size_t n_query;
    const char *authorization;   /* header or NULL */
    const char *peer;            /* the client's address, e.g. 127.0.0.1 (NULL unknown) */
    const char *body;            /* may be NULL when body_len = 0 */
    size_t body_len;
    int body_too_large;          /* the body passed TIDE_HTTP_MAX_BODY (it was dropped) */
    const char *(*header)(void *ctx, const char *name); /* other headers, may be NULL */
    void *header_ctx;
} tide_http_input_t;

/* Dispatch: 413 for a body too large, 404/405 when no route matches, 401/403
 * from auth, else the handler (a handler that sets no status answers 500).
 * Counts the request under its route pattern and status. out must be zeroed
 * or freed before; the caller frees it. */
void tide_router_handle(tide_router_t *r, const tide_http_input_t *in, tide_http_reply_t *out);

/* Mark the route method pattern (as in the table) quick: it answers at once
 * (a short read: no long poll, no commit, no stream), so the server runs it
 * on its I/O thread instead of handing it to a handler thread. -1 when the
 * table has no such route. */
int tide_router_set_quick(tide_router_t *r, const char *method, const char *pattern);
/* 1 when method and raw path match a route marked quick, else 0. */
int tide_router_quick(const tide_router_t *r, const char *method, const char *path);

/* The audit hook: called (in the request's thread, before the reply is
 * sent) for every request that matched a route whose audit kind is set,
 * with the request as the handler saw it (or would have: who is the
 * caller as far as known, team "" when no valid token) and the reply.
 * req->body is "" when the body was too large. NULL removes it. */
typedef void (*tide_router_audit_fn)(void *app, const tide_http_req_t *req,
                                     const tide_http_reply_t *rep);
void tide_router_set_audit(tide_router_t *r, tide_router_audit_fn fn);

/* Request counts so far: fn(ctx, route pattern or "unmatched", status, count). */
typedef void (*tide_router_count_fn)(void *ctx, const char *route, int status, unsigned long n);
void tide_router_counts(tide_router_t *r, tide_router_count_fn fn, void *ctx);

#endif
