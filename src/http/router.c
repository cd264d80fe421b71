/* Routes table matching, dispatch and replies. */
#include "http/router.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/status.h"
#include "util/util.h"

/* ------------------------------------------------------------- matching */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

long tide_http_unescape(const char *src, size_t n, char *dst, size_t dstn, int plus_space)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = src[i];
        if (c == '%') {
            if (i + 2 >= n)
                return -1;
            int a = hexval(src[i + 1]), b = hexval(src[i + 2]);
            if (a < 0 || b < 0)
                return -1;
            c = (char)(a * 16 + b);
            if (c == '\0')
                return -1;
            i += 2;
        } else if (c == '+' && plus_space) {
            c = ' ';
        } else if (c == '\0') {
            return -1;
        }
        if (o + 1 >= dstn)
            return -1;
        dst[o++] = c;
    }
    if (o >= dstn)
        return -1;
    dst[o] = '\0';
    return (long)o;
}

/* Next segment of a path starting at *p (which points after a '/'). */
static size_t seg_len(const char *p)
{
    size_t n = 0;
    while (p[n] && p[n] != '/')
        n++;
    return n;
}

/* Does path match pattern? Decodes params into buf. */
static int match_one(const char *pattern, const char *path, char *buf, size_t bufn,
                     const char **params, size_t *np)
{
    *np = 0;
    size_t used = 0;
    const char *a = pattern, *b = path;
    if (*a != '/' || *b != '/')
        return 0;
    for (;;) {
        if (*a == '\0' || *b == '\0')
            return *a == *b;
        if (*a != '/' || *b != '/')
            return 0;
        a++;
        b++;
        size_t la = seg_len(a), lb = seg_len(b);
        if (la >= 2 && a[0] == '{' && a[la - 1] == '}') {
            if (lb == 0 || *np >= TIDE_HTTP_MAX_PARAMS)
                return 0;
            long d = tide_http_unescape(b, lb, buf + used, bufn - used, 0);
            if (d <= 0)
                return 0;
            params[(*np)++] = buf + used;
            used += (size_t)d + 1;
        } else if (la != lb || memcmp(a, b, la) != 0) {
            return 0;
        }
        a += la;
        b += lb;
    }
}

int tide_route_match(const tide_route_t *routes, size_t n, const char *method, const char *path,
                     char *buf, size_t bufn, const char **params, size_t *n_params, int *why,
                     char *allow, size_t allown)
{
    *why = 404;
    *n_params = 0;
    if (allow && allown)
        allow[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t np;
        if (!match_one(routes[i].pattern, path, buf, bufn, params, &np))
            continue;
        if (!strcmp(routes[i].method, method)) {
            *n_params = np;
            return (int)i;
        }
        *why = 405;
        if (allow && allown && !strstr(allow, routes[i].method)) {
            size_t l = strlen(allow);
            snprintf(allow + l, allown - l, "%s%s", l ? ", " : "", routes[i].method);
        }
    }
    return -1;
}

const char *tide_http_query(const tide_http_req_t *req, const char *key, char *buf, size_t n)
{
    for (size_t i = 0; i < req->n_query; i++) {
        const char *k = req->query[2 * i], *v = req->query[2 * i + 1];
        if (!k || strcmp(k, key))
            continue;
        if (!v) {
            if (n)
                buf[0] = '\0';
            return buf;
        }
        if (tide_http_unescape(v, strlen(v), buf, n, 1) < 0 && n) {
            /* undecodable or too long: hand back the raw text, which the
             * caller's validation then rejects (or matches nothing) */
            snprintf(buf, n, "%s", v);
        }
        return buf;
    }
    return NULL;
}

/* --------------------------------------------------------------- replies */

void tide_http_reply_free(tide_http_reply_t *r)
{
    if (!r)
        return;
    if (r->stream && r->stream->close)
        r->stream->close(r->stream_ctx);
    free(r->body);
    memset(r, 0, sizeof *r);
}

void tide_http_reply_json(tide_http_reply_t *r, int status, json_t *j)
{
    free(r->body);
    char *s = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12)) : NULL;
    json_decref(j);
    if (!s)
        s = strdup("{}");
    if (!s)
        abort();
    r->status = status;
    r->len = strlen(s);
    /* jansson allocates with malloc (default allocator), so free() is fine */
    r->body = s;
    r->content_type = "application/json";
}

void tide_http_reply_error(tide_http_reply_t *r, int status, const char *code, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *e = json_object();
    json_object_set_new(e, "code", json_string(code));
    /* messages may quote user input: keep only valid UTF-8 */
    json_t *m = json_string(msg);
    if (!m) {
        for (char *p = msg; *p; p++)
            if ((unsigned char)*p >= 0x80)
                *p = '?';
        m = json_string(msg);
    }
    json_object_set_new(e, "message", m ? m : json_string("(unprintable)"));
    json_t *top = json_object();
    json_object_set_new(top, "error", e);
    tide_http_reply_json(r, status, top);
}

void tide_http_reply_err(tide_http_reply_t *r, const tide_error_t *err)
{
    int code = err && err->code ? err->code : TIDE_EIO;
    tide_http_reply_error(r, tide_http_status(code), tide_errcode_name(code), "%s",
                          err && err->msg[0] ? err->msg : "internal error");
}

void tide_http_reply_text(tide_http_reply_t *r, int status, const char *content_type,
                          const char *text, size_t len)
{
    free(r->body);
    r->body = tide_xmalloc(len + 1);
    memcpy(r->body, text, len);
    r->body[len] = '\0';
    r->len = len;
    r->status = status;
    r->content_type = content_type;
}

void tide_http_reply_stream(tide_http_reply_t *r, const char *content_type,
                            const tide_http_stream_ops_t *ops, void *ctx)
{
    free(r->body);
    r->body = NULL;
    r->len = 0;
    r->status = 200;
    r->content_type = content_type;
    r->stream = ops;
    r->stream_ctx = ctx;
}

const char *tide_http_header(const tide_http_req_t *req, const char *name)
{
    return req->header ? req->header(req->header_ctx, name) : NULL;
}

/* ---------------------------------------------------------------- router */

#define MAX_STATUSES 24

typedef struct counter {
    int status[MAX_STATUSES];
    unsigned long n[MAX_STATUSES];
    int used;
} counter_t;

struct tide_router {
    const tide_route_t *routes;
    size_t n;
    tide_auth_t *auth;
    void *app;
    tide_router_audit_fn audit;
    pthread_mutex_t mu;
    counter_t *counts; /* n + 1: the last one is "unmatched" */
    unsigned char *quick; /* n: tide_router_set_quick */
};

tide_router_t *tide_router_create(const tide_route_t *routes, size_t n, tide_auth_t *auth, void *app)
{
    tide_router_t *r = tide_xcalloc(1, sizeof *r);
    r->routes = routes;
    r->n = n;
    r->auth = auth;
    r->app = app;
    pthread_mutex_init(&r->mu, NULL);
    r->counts = tide_xcalloc(n + 1, sizeof *r->counts);
    r->quick = tide_xcalloc(n ? n : 1, 1);
    return r;
}

void tide_router_set_audit(tide_router_t *r, tide_router_audit_fn fn) { r->audit = fn; }

void tide_router_destroy(tide_router_t *r)
{
    if (!r)
        return;
    pthread_mutex_destroy(&r->mu);
    free(r->counts);
    free(r->quick);
    free(r);
}

static void count(tide_router_t *r, int route, int status)
{
    counter_t *c = &r->counts[route < 0 ? r->n : (size_t)route];
    pthread_mutex_lock(&r->mu);
    int i;
    for (i = 0; i < c->used; i++)
        if (c->status[i] == status)
            break;
    if (i == c->used) {
        if (c->used == MAX_STATUSES)
            i = MAX_STATUSES - 1; /* more distinct codes than slots: lump them */
        else
            c->status[c->used++] = status;
    }
    c->n[i]++;
    pthread_mutex_unlock(&r->mu);
}

void tide_router_counts(tide_router_t *r, tide_router_count_fn fn, void *ctx)
{
    pthread_mutex_lock(&r->mu);
    size_t n = r->n + 1;
    counter_t *snap = tide_xmalloc(n * sizeof *snap);
    memcpy(snap, r->counts, n * sizeof *snap);
    pthread_mutex_unlock(&r->mu);
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < snap[i].used; k++)
            fn(ctx, i < r->n ? r->routes[i].pattern : "unmatched", snap[i].status[k], snap[i].n[k]);
    free(snap);
}

/* The body as handlers get it: a NUL-terminated copy ("" when too large). */
static char *body_copy(const tide_http_input_t *in)
{
    size_t n = in->body_too_large ? 0 : in->body_len;
    char *body = tide_xmalloc(n + 1);
    if (n)
        memcpy(body, in->body, n);
    body[n] = '\0';
    return body;
}

/* Authenticate and run the route's handler: 401/403 from auth, 413 for a
 * body too large (after auth), else the handler's answer. */
static void dispatch_route(tide_router_t *r, const tide_http_input_t *in, tide_http_req_t *req,
                           tide_http_reply_t *out)
{
    const tide_route_t *rt = req->route;
    tide_error_t err = {0};
    int st = tide_auth_check(r->auth, in->authorization, rt->role, &req->who, &err);
    if (st == 401) {
        tide_http_reply_error(out, 401, "EAUTH", "%s", err.msg);
        return;
    }
    if (st == 403) {
        tide_http_reply_error(out, 403, "EPERM", "%s", err.msg);
        return;
    }
    if (in->body_too_large) {
        tide_http_reply_error(out, 413, "E2BIG", "request body larger than %u bytes",
                              TIDE_HTTP_MAX_BODY);
        return;
    }
    rt->fn(r->app, req, out);
    if (out->status == 0)
        tide_http_reply_error(out, 500, "EIO", "handler gave no answer");
}

int tide_router_quick(const tide_router_t *r, const char *method, const char *path)
{
    char buf[512];
    const char *params[TIDE_HTTP_MAX_PARAMS];
    size_t np;
    int why;
    if (!method || !path || strlen(path) + TIDE_HTTP_MAX_PARAMS + 1 > sizeof buf)
        return 0;
    int ri = tide_route_match(r->routes, r->n, method, path, buf, sizeof buf, params, &np, &why,
                              NULL, 0);
    return ri >= 0 && r->quick[ri];
}

int tide_router_set_quick(tide_router_t *r, const char *method, const char *pattern)
{
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->routes[i].method, method) && !strcmp(r->routes[i].pattern, pattern)) {
            r->quick[i] = 1;
            return 0;
        }
    return -1;
}

void tide_router_handle(tide_router_t *r, const tide_http_input_t *in, tide_http_reply_t *out)
{
    memset(out, 0, sizeof *out);
    const char *method = in->method ? in->method : "";
    const char *path = in->path ? in->path : "";
    size_t bufn = strlen(path) + TIDE_HTTP_MAX_PARAMS + 1;
    char *buf = tide_xmalloc(bufn);
    char *body = body_copy(in);
    tide_http_req_t req = {.method = method, .path = path, .query = in->query,
                           .n_query = in->n_query, .header = in->header,
                           .header_ctx = in->header_ctx, .peer = in->peer ? in->peer : "",
                           .body = body, .body_len = in->body_too_large ? 0 : in->body_len};
    int why = 0;
    int ri = tide_route_match(r->routes, r->n, method, path, buf, bufn, req.params, &req.n_params,
                              &why, out->allow, sizeof out->allow);
    if (ri < 0) {
        if (why == 405)
            tide_http_reply_error(out, 405, "EMETHOD", "%s is not allowed on %s (allowed: %s)",
                                  method, path, out->allow);
        else
            tide_http_reply_error(out, 404, "ENOENT", "no route %s %s", method, path);
    } else {
        req.route = &r->routes[ri];
        dispatch_route(r, in, &req, out);
        if (req.route->audit && r->audit)
            r->audit(r->app, &req, out);
    }
    if (!out->content_type)
        out->content_type = "application/json";
    count(r, ri, out->status);
    free(body);
    free(buf);
}
