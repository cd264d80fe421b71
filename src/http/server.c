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
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

/* Handlers run on their own threads (a long poll blocks one), never on
 * libmicrohttpd's I/O threads: the connection is suspended meanwhile. */
typedef struct reqctx reqctx_t;

typedef struct workers {
    pthread_mutex_t mu;
    pthread_cond_t work, changed;
    reqctx_t *head, *tail;
    unsigned queued, threads, idle, busy, max;
    unsigned long inflight; /* dispatched requests not yet completed */
    int stop;
} workers_t;

struct tide_http_server {
    struct MHD_Daemon *d;
    tide_router_t *router;
    int port, fd;
    char url[128];
    char *tls_cert, *tls_key; /* PEM text, alive as long as the daemon */
    tide_http_server_opts_t o;
    workers_t w;
    int evloop; /* streams suspend/resume their connection (event-loop modes) */
};

/* Per-request state (MHD's con_cls). */
struct reqctx {
    tide_http_server_t *s;
    struct MHD_Connection *conn;
    char *body;
    size_t n, cap;
    int too_large;
    int replied;      /* a response was queued before the body (413, 400) */
    int dispatched;   /* handed to a worker (counted in inflight) */
    int done;         /* the worker filled rep */
    const char **q;   /* key, value pairs */
    size_t nq, capq;
    tide_http_input_t in;
    tide_http_reply_t rep;
    char peer[INET6_ADDRSTRLEN];
    reqctx_t *next;
};

/* The client's address (numeric, no port) into r->peer. */
static const char *peer_of(reqctx_t *r)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    snprintf(r->peer, sizeof r->peer, "?");
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, r->peer,
                  sizeof r->peer);
    else if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, r->peer, sizeof r->peer);
    return r->peer;
}

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

static int bind_socket(const char *host, const char *port, const char *scheme, char *url,
                       size_t urln, int *bound, tide_error_t *err)
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
        if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 1024) == 0)
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
            snprintf(url, urln, "%s://[%s]:%d", scheme, addr, *bound);
        } else {
            struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &s4->sin_addr, addr, sizeof addr);
            *bound = ntohs(s4->sin_port);
            snprintf(url, urln, "%s://%s:%d", scheme, addr, *bound);
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
    if (rep->status == 503)
        MHD_add_response_header(resp, "Retry-After", "1");
    enum MHD_Result r = MHD_queue_response(conn, (unsigned)rep->status, resp);
    MHD_destroy_response(resp);
    return r;
}

/* Answer now with a JSON error (before or instead of the handler). */
static enum MHD_Result reply_error(reqctx_t *r, int status, const char *code, const char *msg)
{
    tide_http_reply_t rep = {0};
    tide_http_reply_error(&rep, status, code, "%s", msg);
    r->replied = 1;
    enum MHD_Result res = send_reply(r->conn, &rep);
    tide_http_reply_free(&rep);
    return res;
}

/* ---------------------------------------------------------------- workers */

static void *worker_main(void *arg)
{
    tide_http_server_t *s = arg;
    workers_t *w = &s->w;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->head && !w->stop) {
            struct timespec dl;
            clock_gettime(CLOCK_REALTIME, &dl);
            dl.tv_sec += 10; /* an idle worker lingers 10 s, then exits */
            w->idle++;
            int rc = pthread_cond_timedwait(&w->work, &w->mu, &dl);
            w->idle--;
            if (rc == ETIMEDOUT && !w->head)
                goto out;
        }
        if (!w->head)
            break;
        reqctx_t *r = w->head;
        w->head = r->next;
        if (!w->head)
            w->tail = NULL;
        w->queued--;
        w->busy++;
        pthread_mutex_unlock(&w->mu);
        tide_router_handle(s->router, &r->in, &r->rep);
        r->done = 1;
        MHD_resume_connection(r->conn); /* MHD then calls on_request, which answers */
        pthread_mutex_lock(&w->mu);
        w->busy--;
        pthread_cond_broadcast(&w->changed);
    }
out:
    w->threads--;
    pthread_cond_broadcast(&w->changed);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Queue r for a worker, starting one when none is idle. -1 when every
 * worker is busy and there are already max of them (the caller answers 503). */
static int dispatch(tide_http_server_t *s, reqctx_t *r)
{
    workers_t *w = &s->w;
    pthread_mutex_lock(&w->mu);
    if (w->stop) {
        pthread_mutex_unlock(&w->mu);
        return -1;
    }
    if (w->idle <= w->queued) {
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&at, 256 * 1024);
        int ok = w->threads < w->max && pthread_create(&t, &at, worker_main, s) == 0;
        pthread_attr_destroy(&at);
        if (!ok) {
            pthread_mutex_unlock(&w->mu);
            return -1;
        }
        w->threads++;
    }
    r->next = NULL;
    if (w->tail)
        w->tail->next = r;
    else
        w->head = r;
    w->tail = r;
    w->queued++;
    w->inflight++;
    r->dispatched = 1;
    pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

/* ------------------------------------------------------- request handling */

typedef struct hdrscan {
    int n_cl, cl_conflict, chunked;
    const char *cl;
} hdrscan_t;

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    hdrscan_t *h = cls;
    if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
        if (h->n_cl++ && strcmp(h->cl, value ? value : ""))
            h->cl_conflict = 1;
        h->cl = value ? value : "";
    } else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
        h->chunked = 1;
    }
    return MHD_YES;
}

/* The headers are in: refuse what must not reach a handler. Returns 1 when a
 * response was queued. */
static int first_call(tide_http_server_t *s, reqctx_t *r, const char *url, const char *method,
                      enum MHD_Result *res)
{
    hdrscan_t h = {0};
    MHD_get_connection_values(r->conn, MHD_HEADER_KIND, scan_header, &h);
    if (h.cl_conflict) {
        *res = reply_error(r, 400, "EINVAL", "conflicting Content-Length headers");
        return 1;
    }
    if (h.n_cl && h.chunked) {
        *res = reply_error(r, 400, "EINVAL", "both Content-Length and Transfer-Encoding");
        return 1;
    }
    if (h.cl && strtoull(h.cl, NULL, 10) > TIDE_HTTP_MAX_BODY) {
        /* answered before the body (so before any 100 Continue): the router
         * still authenticates first, and counts it */
        tide_http_input_t in = {.method = method, .path = url, .body_too_large = 1,
                                .peer = peer_of(r),
                                .authorization = MHD_lookup_connection_value(
                                    r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION)};
        tide_http_reply_t rep;
        tide_router_handle(s->router, &in, &rep);
        r->replied = 1;
        *res = send_reply(r->conn, &rep);
        tide_http_reply_free(&rep);
        return 1;
    }
    return 0;
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

/* Send the handler's answer (r->done). */
static enum MHD_Result answer(tide_http_server_t *s, reqctx_t *r)
{
    enum MHD_Result res =
        r->rep.stream ? send_stream(s, r->conn, &r->rep) : send_reply(r->conn, &r->rep);
    tide_http_reply_free(&r->rep);
    return res;
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
        r->s = s;
        r->conn = conn;
        *con_cls = r;
        enum MHD_Result res = MHD_YES;
        first_call(s, r, url, method, &res);
        return res;
    }
    if (r->replied) { /* MHD drops the rest and closes */
        *upload_size = 0;
        return MHD_YES;
    }
    if (r->done)
        return answer(s, r);
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
    if (r->dispatched) /* resumed without an answer: cannot happen */
        return MHD_NO;
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_query, r);
    /* everything borrowed stays valid while the connection is suspended */
    r->in = (tide_http_input_t){
        .method = method,
        .path = url,
        .query = r->q,
        .n_query = r->nq / 2,
        .authorization = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_AUTHORIZATION),
        .peer = peer_of(r),
        .body = r->body,
        .body_len = r->n,
        .body_too_large = r->too_large,
        .header = req_header,
        .header_ctx = conn,
    };
    if (tide_router_quick(s->router, method, url)) { /* here, on the I/O thread */
        tide_router_handle(s->router, &r->in, &r->rep);
        r->done = 1;
        return answer(s, r);
    }
    if (dispatch(s, r) < 0)
        return reply_error(r, 503, "EBUSY", "the server is busy or shutting down: retry");
    MHD_suspend_connection(conn);
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)conn;
    (void)toe;
    tide_http_server_t *s = cls;
    reqctx_t *r = *con_cls;
    if (!r)
        return;
    if (r->dispatched) {
        pthread_mutex_lock(&s->w.mu);
        s->w.inflight--;
        pthread_cond_broadcast(&s->w.changed);
        pthread_mutex_unlock(&s->w.mu);
    }
    tide_http_reply_free(&r->rep);
    free(r->body);
    free(r->q);
    free(r);
    *con_cls = NULL;
}

/* ------------------------------------------------------------ start, stop */

void tide_http_server_opts_default(tide_http_server_opts_t *o)
{
    *o = (tide_http_server_opts_t){
        .io_threads = 4,
        .max_connections = 4096,
        .per_ip = 128,
        .timeout_s = 10,
        .max_handlers = 256,
    };
}

/* Raise the soft descriptor limit to the hard one; the connection limit
 * must leave room for the database, the backend and the handlers. */
static unsigned fit_fd_limit(unsigned want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return want;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur == RLIM_INFINITY)
        return want;
    rlim_t room = rl.rlim_cur > 160 ? rl.rlim_cur - 128 : 32;
    return room < want ? (unsigned)room : want;
}

static char *read_pem(const char *path, const char *what, tide_error_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        tide_errf(err, TIDE_EINVAL, "%s %s: %s", what, path, strerror(errno));
        return NULL;
    }
    size_t n = 0, cap = 0;
    char *buf = NULL, chunk[4096];
    size_t k;
    while ((k = fread(chunk, 1, sizeof chunk, f)) > 0 && n < (1u << 20)) {
        tide_grow((void **)&buf, &cap, n + k + 1, 1);
        memcpy(buf + n, chunk, k);
        n += k;
    }
    fclose(f);
    if (!buf || !strstr(buf, "-----BEGIN ")) {
        free(buf);
        tide_errf(err, TIDE_EINVAL, "%s %s: not a PEM file", what, path);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

static int load_tls(tide_http_server_t *s, const tide_http_server_opts_t *o, tide_error_t *err)
{
    if (!o->tls_cert && !o->tls_key)
        return 0;
    if (!o->tls_cert || !o->tls_key)
        return tide_errf(err, TIDE_EINVAL, "TLS needs both a certificate and a key");
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        return tide_errf(err, TIDE_EINVAL, "this libmicrohttpd has no TLS (GnuTLS) support");
    if (!(s->tls_cert = read_pem(o->tls_cert, "--tls-cert", err)) ||
        !(s->tls_key = read_pem(o->tls_key, "--tls-key", err)))
        return -1;
    return 0;
}

static void server_free(tide_http_server_t *s)
{
    pthread_mutex_destroy(&s->w.mu);
    pthread_cond_destroy(&s->w.work);
    pthread_cond_destroy(&s->w.changed);
    free(s->tls_cert);
    free(s->tls_key);
    free(s);
}

tide_http_server_t *tide_http_server_start_opts(const char *listen, tide_router_t *router,
                                                const tide_http_server_opts_t *opts,
                                                tide_error_t *err)
{
    char host[256], port[8];
    tide_http_server_opts_t o;
    tide_http_server_opts_default(&o);
    if (opts) {
        o.tls_cert = opts->tls_cert;
        o.tls_key = opts->tls_key;
#define TAKE(f) if (opts->f) o.f = opts->f
        TAKE(io_threads); TAKE(max_connections); TAKE(per_ip); TAKE(timeout_s); TAKE(max_handlers);
#undef TAKE
    }
    if (tide_http_listen_parse(listen, host, sizeof host, port, sizeof port, err) < 0)
        return NULL;
    tide_http_server_t *s = tide_xcalloc(1, sizeof *s);
    s->router = router;
    pthread_mutex_init(&s->w.mu, NULL);
    pthread_cond_init(&s->w.work, NULL);
    pthread_cond_init(&s->w.changed, NULL);
    s->w.max = o.max_handlers;
    o.max_connections = fit_fd_limit(o.max_connections);
    s->o = o;
    if (load_tls(s, &o, err) < 0) {
        server_free(s);
        return NULL;
    }
    int fd = bind_socket(host, port, s->tls_cert ? "https" : "http", s->url, sizeof s->url,
                         &s->port, err);
    if (fd < 0) {
        server_free(s);
        return NULL;
    }
    s->fd = fd;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
    struct MHD_OptionItem tls[] = {
        {s->tls_cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, s->tls_cert},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls_key},
        {MHD_OPTION_END, 0, NULL},
    };
    if (s->tls_cert)
        flags |= MHD_USE_TLS;
    s->evloop = 1; /* event loop: streams suspend and resume their connection */
    s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, fd,
                            MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, NULL,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                            MHD_OPTION_THREAD_POOL_SIZE, o.io_threads,
                            MHD_OPTION_CONNECTION_TIMEOUT, o.timeout_s,
                            MHD_OPTION_CONNECTION_LIMIT, o.max_connections,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, o.per_ip,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
                            MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
    if (!s->d) {
        close(fd);
        tide_errf(err, TIDE_EIO, "cannot start the HTTP server on %s:%s%s", host, port,
                  s->tls_cert ? " (check that --tls-key matches --tls-cert)" : "");
        server_free(s);
        return NULL;
    }
    return s;
}

tide_http_server_t *tide_http_server_start(const char *listen, tide_router_t *router,
                                           tide_error_t *err)
{
    return tide_http_server_start_opts(listen, router, NULL, err);
}

int tide_http_server_port(const tide_http_server_t *s) { return s->port; }
const char *tide_http_server_url(const tide_http_server_t *s) { return s->url; }

/* Wait on the workers' condition until pred holds or the deadline passes. */
static void wait_until(workers_t *w, int (*pred)(const workers_t *), double secs)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += (time_t)secs;
    pthread_mutex_lock(&w->mu);
    while (!pred(w))
        if (secs >= 0 ? pthread_cond_timedwait(&w->changed, &w->mu, &dl) == ETIMEDOUT
                      : pthread_cond_wait(&w->changed, &w->mu) != 0)
            break;
    pthread_mutex_unlock(&w->mu);
}

static int none_inflight(const workers_t *w) { return w->inflight == 0; }
static int none_busy(const workers_t *w) { return w->busy == 0 && w->queued == 0; }
static int none_left(const workers_t *w) { return w->threads == 0; }

void tide_http_server_stop(tide_http_server_t *s)
{
    if (!s)
        return;
    /* no new connections; requests already handed to handlers get their
     * answers out (long polls were released by the caller), bounded */
    MHD_socket lfd = MHD_quiesce_daemon(s->d);
    wait_until(&s->w, none_inflight, 10);
    /* a handler still running would resume a connection of a stopped daemon */
    wait_until(&s->w, none_busy, -1);
    MHD_stop_daemon(s->d);
    if (lfd != MHD_INVALID_SOCKET)
        close(lfd); /* quiesced: ours to close */
    pthread_mutex_lock(&s->w.mu);
    s->w.stop = 1;
    pthread_cond_broadcast(&s->w.work);
    pthread_mutex_unlock(&s->w.mu);
    wait_until(&s->w, none_left, -1);
    server_free(s);
}
