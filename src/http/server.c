/* libmicrohttpd glue. */
#include "http/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/util.h"

struct tide_http_server {
    struct MHD_Daemon *d;
    tide_router_t *router;
    int port;
    char url[128];
    int evloop; /* streams suspend/resume their connection (event-loop modes) */
};

/* Per-request state (MHD's con_cls). */
typedef struct reqctx {
    char *body;
    size_t n, cap;
    int too_large;
    const char **q;   /* key, value pairs */
    size_t nq, capq;
} reqctx_t;

int tide_http_listen_parse(const char *listen, char *host, size_t hostn, char *port, size_t portn,
                           tide_error_t *err)
{
    if (!listen || !*listen)
        return tide_errf(err, TIDE_EINVAL, "--listen: empty address");
    const char *p = NULL;
    snprintf(host, hostn, "127.0.0.1");
    if (listen[0] == '[') {
        const char *e = strchr(listen, ']');
        if (!e || e[1] != ':' || (size_t)(e - listen - 1) >= hostn || e == listen + 1)
            return tide_errf(err, TIDE_EINVAL, "--listen: '%s' is not [ADDRESS]:PORT", listen);
        memcpy(host, listen + 1, (size_t)(e - listen - 1));
        host[e - listen - 1] = '\0';
        p = e + 2;
    } else {
        const char *c = strrchr(listen, ':');
        if (c) {
            if (c != listen) {
                if ((size_t)(c - listen) >= hostn)
                    return tide_errf(err, TIDE_EINVAL, "--listen: host too long");
                memcpy(host, listen, (size_t)(c - listen));
                host[c - listen] = '\0';
            }
            p = c + 1;
        } else {
            p = listen;
        }
    }
    size_t pl = strlen(p);
    if (pl == 0 || pl > 5 || pl >= portn || strspn(p, "0123456789") != pl || atoi(p) > 65535)
        return tide_errf(err, TIDE_EINVAL, "--listen: '%s': port must be 0..65535", listen);
    snprintf(port, portn, "%s", p);
    return 0;
}

static int bind_socket(const char *host, const char *port, char *url, size_t urln, int *bound,
                       tide_error_t *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
                    *res = NULL;
    int g = getaddrinfo(host, port, &hints, &res);
    if (g != 0)
        return tide_errf(err, TIDE_EINVAL, "--listen %s:%s: %s", host, port, gai_strerror(g));
    int fd = -1, last = 0;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 256) == 0)
            break;
        last = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return tide_errf(err, TIDE_EIO, "cannot listen on %s:%s: %s", host, port, strerror(last));
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char addr[INET6_ADDRSTRLEN] = "?";
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &s6->sin6_addr, addr, sizeof addr);
            *bound = ntohs(s6->sin6_port);
            snprintf(url, urln, "http://[%s]:%d", addr, *bound);
        } else {
            struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &s4->sin_addr, addr, sizeof addr);
            *bound = ntohs(s4->sin_port);
            snprintf(url, urln, "http://%s:%d", addr, *bound);
        }
    }
    return fd;
}

/* Keep the path and query raw: the router decodes segment by segment. */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    return strlen(s);
}

static enum MHD_Result collect_query(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    (void)kind;
    reqctx_t *r = cls;
    TIDE_PUSH(r->q, r->nq, r->capq, key);
    TIDE_PUSH(r->q, r->nq, r->capq, value);
    return MHD_YES;
}

static enum MHD_Result send_reply(struct MHD_Connection *conn, tide_http_reply_t *rep)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(rep->len, rep->body ? rep->body : (char *)"",
                                        MHD_RESPMEM_MUST_COPY);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            rep->content_type ? rep->content_type : "application/json");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (rep->allow[0])
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, rep->allow);
    enum MHD_Result r = MHD_queue_response(conn, (unsigned)rep->status, resp);
    MHD_destroy_response(resp);
    return r;
}

/* ------------------------------------------------- streaming responses */

/* A reply's stream (router.h) sent chunked through a content-reader callback.
 * With a thread per connection the reader waits (bounded) on the stream when
 * it has nothing; in event-loop modes (evloop) it suspends the connection and
 * the stream's wake resumes it, so no thread is held while a client idles. */
typedef struct strm {
    const tide_http_stream_ops_t *ops;
    void *ctx;
    struct MHD_Connection *conn;
    int evloop;
    pthread_mutex_t mu;
    int suspended, woken;
} strm_t;

static void strm_wake(void *arg)
{
    strm_t *t = arg;
    pthread_mutex_lock(&t->mu);
    if (t->suspended) {
        t->suspended = 0;
        MHD_resume_connection(t->conn);
    } else {
        t->woken = 1; /* data came between a read and the suspend */
    }
    pthread_mutex_unlock(&t->mu);
}

static ssize_t strm_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    strm_t *t = cls;
    for (int tries = 0;; tries++) {
        long n = t->ops->read(t->ctx, buf, max);
        if (n > 0)
            return (ssize_t)n;
        if (n < 0)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (!t->evloop) {
            if (tries)
                return 0; /* MHD calls again (and checks for shutdown meanwhile) */
            t->ops->wait(t->ctx, 1000);
            continue;
        }
        pthread_mutex_lock(&t->mu);
        if (t->woken) {
            t->woken = 0;
            pthread_mutex_unlock(&t->mu);
            continue;
        }
        t->suspended = 1;
        MHD_suspend_connection(t->conn);
        pthread_mutex_unlock(&t->mu);
        return 0;
    }
}

static void strm_free(void *cls)
{
    strm_t *t = cls;
    if (t->ops->set_wake)
        t->ops->set_wake(t->ctx, NULL, NULL);
    t->ops->close(t->ctx);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

/* Queue rep's stream (the server takes it from rep). */
static enum MHD_Result send_stream(tide_http_server_t *s, struct MHD_Connection *conn,
                                   tide_http_reply_t *rep)
{
    strm_t *t = tide_xcalloc(1, sizeof *t);
    t->ops = rep->stream;
    t->ctx = rep->stream_ctx;
    t->conn = conn;
    t->evloop = s->evloop;
    pthread_mutex_init(&t->mu, NULL);
    rep->stream = NULL; /* ours now: strm_free closes it */
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, strm_read, t, strm_free);
    if (!resp) {
        strm_free(t);
        return MHD_NO;
    }
    if (t->evloop && t->ops->set_wake)
        t->ops->set_wake(t->ctx, strm_wake, t);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, rep->content_type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    enum MHD_Result r = MHD_queue_response(conn, (unsigned)rep->status, resp);
    MHD_destroy_response(resp);
    return r;
}

static const char *req_header(void *ctx, const char *name)
{
    return MHD_lookup_connection_value(ctx, MHD_HEADER_KIND, name);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    (void)version;
    tide_http_server_t *s = cls;
    reqctx_t *r = *con_cls;
    if (!r) {
        r = tide_xcalloc(1, sizeof *r);
        *con_cls = r;
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > TIDE_HTTP_MAX_BODY)
            r->too_large = 1; /* answered at the end; the body is discarded meanwhile */
        return MHD_YES;
    }
    if (*upload_size) {
        if (!r->too_large) {
            if (r->n + *upload_size > TIDE_HTTP_MAX_BODY) {
                r->too_large = 1;
                free(r->body);
                r->body = NULL;
                r->n = r->cap = 0;
            } else {
                tide_grow((void **)&r->body, &r->cap, r->n + *upload_size + 1, 1);
                memcpy(r->body + r->n, upload, *upload_size);
                r->n += *upload_size;
            }
        }
        *upload_size = 0;
        return MHD_YES;
    }
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_query, r);
    tide_http_input_t in = {
        .method = method,
        .path = url,
        .query = r->q,
        .n_query = r->nq / 2,
        .authorization = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_AUTHORIZATION),
        .body = r->body,
        .body_len = r->n,
        .body_too_large = r->too_large,
        .header = req_header,
        .header_ctx = conn,
    };
    tide_http_reply_t rep;
    tide_router_handle(s->router, &in, &rep);
    enum MHD_Result res = rep.stream ? send_stream(s, conn, &rep) : send_reply(conn, &rep);
    tide_http_reply_free(&rep);
    return res;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    reqctx_t *r = *con_cls;
    if (!r)
        return;
    free(r->body);
    free(r->q);
    free(r);
    *con_cls = NULL;
}

tide_http_server_t *tide_http_server_start(const char *listen, tide_router_t *router,
                                           tide_error_t *err)
{
    char host[256], port[8];
    if (tide_http_listen_parse(listen, host, sizeof host, port, sizeof port, err) < 0)
        return NULL;
    tide_http_server_t *s = tide_xcalloc(1, sizeof *s);
    s->router = router;
    int fd = bind_socket(host, port, s->url, sizeof s->url, &s->port, err);
    if (fd < 0) {
        free(s);
        return NULL;
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
    /* event-loop modes need MHD_ALLOW_SUSPEND_RESUME for streams */
    s->evloop = !(flags & MHD_USE_THREAD_PER_CONNECTION);
    s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, fd,
                            MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, NULL,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)1024,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
                            MHD_OPTION_END);
    if (!s->d) {
        close(fd);
        free(s);
        tide_errf(err, TIDE_EIO, "cannot start the HTTP server on %s:%s", host, port);
        return NULL;
    }
    return s;
}

int tide_http_server_port(const tide_http_server_t *s) { return s->port; }
const char *tide_http_server_url(const tide_http_server_t *s) { return s->url; }

void tide_http_server_stop(tide_http_server_t *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->d); /* closes the listening socket and joins the threads */
    free(s);
}
