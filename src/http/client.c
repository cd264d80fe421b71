/* The blocking HTTP/1.1 client: connect, send, receive, de-chunk. */
#include "http/client.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

#define HEADER_ROOM 65536 /* bytes of headers allowed above the body limit */

void tide_http_resp_free(tide_http_resp_t *r)
{
    free(r->body);
    r->body = NULL;
    r->len = 0;
}

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Wait for fd to be ready for ev until deadline. Returns 0, or -1 (timeout/error). */
static int wait_fd(int fd, short ev, double deadline)
{
    for (;;) {
        int left = (int)(deadline - mono_ms());
        if (left <= 0)
            return -1;
        struct pollfd p = {.fd = fd, .events = ev};
        int rc = poll(&p, 1, left);
        if (rc > 0)
            return 0;
        if (rc < 0 && errno != EINTR)
            return -1;
    }
}

/* "no response within 60 s" / "... 500 ms" */
static int timed_out(const tide_http_call_t *rq, const char *doing, tide_error_t *err)
{
    int ms = rq->timeout_ms > 0 ? rq->timeout_ms : 1000;
    if (ms % 1000 == 0)
        return tide_errf(err, TIDE_EIO, "%s: %s within %d s", rq->what, doing, ms / 1000);
    return tide_errf(err, TIDE_EIO, "%s: %s within %d ms", rq->what, doing, ms);
}

/* One non-blocking connect to a, finished before deadline. Returns the socket
 * or -1 with *last set. */
static int connect_one(const struct addrinfo *a, double deadline, int *last)
{
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
        *last = errno;
        return -1;
    }
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
        return fd;
    if (errno == EINPROGRESS && wait_fd(fd, POLLOUT, deadline) == 0) {
        int e = 0;
        socklen_t l = sizeof e;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l);
        if (e == 0)
            return fd;
        *last = e;
    } else {
        *last = errno == EINPROGRESS ? ETIMEDOUT : errno;
    }
    close(fd);
    return -1;
}

static int connect_to(const tide_http_call_t *rq, double deadline, tide_error_t *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int g = getaddrinfo(rq->host, rq->port, &hints, &res);
    if (g != 0)
        return tide_errf(err, TIDE_EIO, "cannot connect to %s: %s", rq->what, gai_strerror(g));
    int fd = -1, last = 0;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next)
        fd = connect_one(a, deadline, &last);
    freeaddrinfo(res);
    if (fd < 0) {
        if (last == ECONNREFUSED && rq->refused_hint)
            return tide_errf(err, TIDE_EIO, "cannot connect to %s: connection refused %s",
                             rq->what, rq->refused_hint);
        return tide_errf(err, TIDE_EIO, "cannot connect to %s: %s", rq->what, strerror(last));
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Send p[0..n) before deadline. Returns 0 or -1 with err. */
static int send_all(int fd, const char *p, size_t n, const tide_http_call_t *rq, double deadline,
                    tide_error_t *err)
{
    while (n > 0) {
        if (wait_fd(fd, POLLOUT, deadline) < 0)
            return timed_out(rq, "request not sent", err);
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno != EINTR && errno != EAGAIN)
            return tide_errf(err, TIDE_EIO, "%s: sending the request failed: %s", rq->what,
                             strerror(errno));
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        }
    }
    return 0;
}

/* The request line and headers (caller frees). */
static char *request_head(const tide_http_call_t *rq, size_t *len)
{
    char *req = NULL;
    FILE *f = open_memstream(&req, len);
    if (!f)
        return NULL;
    int v6 = strchr(rq->host, ':') != NULL;
    fprintf(f, "%s %s HTTP/1.1\r\nHost: %s%s%s:%s\r\nUser-Agent: tide\r\n"
               "Accept: application/json\r\nConnection: close\r\n",
            rq->method, rq->path, v6 ? "[" : "", rq->host, v6 ? "]" : "", rq->port);
    if (rq->headers)
        fputs(rq->headers, f);
    if (rq->body)
        fprintf(f, "Content-Type: application/json\r\nContent-Length: %zu\r\n", rq->body_len);
    else if (strcmp(rq->method, "GET") && strcmp(rq->method, "HEAD"))
        fputs("Content-Length: 0\r\n", f);
    fputs("\r\n", f);
    fclose(f);
    return req;
}

/* Case-insensitive search for header `name` in the header block [h, end);
 * returns a pointer to its value (spaces skipped) or NULL. */
static const char *find_header(const char *h, const char *end, const char *name)
{
    size_t nl = strlen(name);
    for (const char *line = h; line < end;) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol)
            eol = end;
        if ((size_t)(eol - line) > nl && !strncasecmp(line, name, nl) && line[nl] == ':') {
            const char *v = line + nl + 1;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            return v;
        }
        line = eol + 1;
    }
    return NULL;
}

/* Skip the trailers after the last chunk, up to an empty line. Returns the
 * position after it, or NULL when more bytes are needed. */
static const char *skip_trailers(const char *p, const char *end)
{
    for (;;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            return NULL;
        int empty = eol == p || (eol == p + 1 && *p == '\r');
        p = eol + 1;
        if (empty)
            return p;
    }
}

/* Decode a chunked body [p, end) into out (owned). Returns 1 when the body is
 * complete, 0 when more bytes are needed, -1 when malformed or over max. */
static int dechunk(const char *p, const char *end, size_t max, char **out, size_t *outlen)
{
    char *b = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (;;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            break;
        char *x;
        errno = 0;
        unsigned long long sz = strtoull(p, &x, 16);
        if (x == p || errno || sz > max || n + sz > max) {
            rc = -1;
            break;
        }
        p = eol + 1;
        if (sz == 0) {
            if (!skip_trailers(p, end))
                break;
            tide_grow((void **)&b, &cap, n + 1, 1);
            b[n] = '\0';
            *out = b;
            *outlen = n;
            return 1;
        }
        if ((size_t)(end - p) < sz + 2)
            break;
        tide_grow((void **)&b, &cap, n + sz + 1, 1);
        memcpy(b + n, p, sz);
        n += sz;
        p += sz;
        if (*p == '\r')
            p++;
        if (*p != '\n') {
            rc = -1;
            break;
        }
        p++;
    }
    free(b);
    return rc;
}

/* The end of the header block in buf[0..n): *body gets the first body byte.
 * Returns the end of the headers or NULL when incomplete. */
static const char *header_end(const char *buf, size_t n, const char **body)
{
    const char *end = buf + n;
    for (const char *q = buf; q + 1 < end; q++) {
        if (q[0] == '\n' && q[1] == '\n') {
            *body = q + 2;
            return q + 1;
        }
        if (q + 3 < end && q[0] == '\r' && q[1] == '\n' && q[2] == '\r' && q[3] == '\n') {
            *body = q + 4;
            return q + 2;
        }
    }
    return NULL;
}

static void copy_body(tide_http_resp_t *out, const char *p, size_t len)
{
    out->body = tide_xmalloc(len + 1);
    memcpy(out->body, p, len);
    out->body[len] = '\0';
    out->len = len;
}

/* A Content-Length body. Returns 1 / 0 (need more) / -1 like parse_response. */
static int sized_body(const tide_http_call_t *rq, const char *cl, const char *body,
                      const char *end, int eof, tide_http_resp_t *out, tide_error_t *err)
{
    char *x;
    errno = 0;
    unsigned long long len = strtoull(cl, &x, 10);
    if (x == cl || errno)
        return tide_errf(err, TIDE_EIO, "%s: bad Content-Length", rq->what);
    if (len > rq->max)
        return tide_errf(err, TIDE_ERANGE, "%s: response larger than %zu bytes", rq->what,
                         rq->max);
    if ((size_t)(end - body) < len) {
        if (eof)
            return tide_errf(err, TIDE_EIO, "%s: connection closed after %zu of %llu body bytes",
                             rq->what, (size_t)(end - body), len);
        return 0;
    }
    copy_body(out, body, (size_t)len);
    return 1;
}

/* Try to parse a complete response from buf[0..n). eof: the peer closed.
 * Returns 1 (out filled), 0 (need more), -1 (malformed, err filled). */
static int parse_response(const tide_http_call_t *rq, const char *buf, size_t n, int eof,
                          tide_http_resp_t *out, tide_error_t *err)
{
    const char *end = buf + n, *body = NULL;
    const char *hend = header_end(buf, n, &body);
    if (!hend) {
        if (eof)
            return tide_errf(err, TIDE_EIO, "%s: connection closed before a complete response",
                             rq->what);
        return 0;
    }
    int major, minor, status;
    if (sscanf(buf, "HTTP/%d.%d %d", &major, &minor, &status) != 3 || status < 100 ||
        status > 999)
        return tide_errf(err, TIDE_EIO, "%s: not an HTTP response", rq->what);
    out->status = status;
    if (!strcmp(rq->method, "HEAD") || status == 204 || status == 304 || status < 200) {
        copy_body(out, "", 0);
        return 1;
    }
    const char *te = find_header(buf, hend, "Transfer-Encoding");
    const char *cl = find_header(buf, hend, "Content-Length");
    if (te && !strncasecmp(te, "chunked", 7)) {
        int r = dechunk(body, end, rq->max, &out->body, &out->len);
        if (r < 0)
            return tide_errf(err, TIDE_EIO, "%s: bad chunked response", rq->what);
        if (r == 0 && eof)
            return tide_errf(err, TIDE_EIO, "%s: connection closed inside a chunked response",
                             rq->what);
        return r;
    }
    if (cl)
        return sized_body(rq, cl, body, end, eof, out, err);
    if (!eof)
        return 0; /* body delimited by the end of the connection */
    if ((size_t)(end - body) > rq->max)
        return tide_errf(err, TIDE_ERANGE, "%s: response larger than %zu bytes", rq->what,
                         rq->max);
    copy_body(out, body, (size_t)(end - body));
    return 1;
}

/* Receive until parse_response has a whole response. Returns 0 or -1. */
static int receive(int fd, const tide_http_call_t *rq, double deadline, tide_http_resp_t *out,
                   tide_error_t *err)
{
    char *buf = NULL;
    size_t n = 0, cap = 0;
    int p = 0;
    while (p == 0) {
        if (wait_fd(fd, POLLIN, deadline) < 0) {
            p = timed_out(rq, "no response", err);
            break;
        }
        tide_grow((void **)&buf, &cap, n + 16384 + 1, 1);
        ssize_t r = recv(fd, buf + n, cap - n - 1, 0);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r < 0) {
            p = tide_errf(err, TIDE_EIO, "%s: reading the response failed: %s", rq->what,
                          strerror(errno));
            break;
        }
        n += (size_t)r;
        buf[n] = '\0';
        if (n > rq->max + HEADER_ROOM) {
            p = tide_errf(err, TIDE_ERANGE, "%s: response larger than %zu bytes", rq->what,
                          rq->max);
            break;
        }
        p = parse_response(rq, buf, n, r == 0, out, err);
    }
    free(buf);
    return p > 0 ? 0 : -1;
}

int tide_http_request(const tide_http_call_t *rq, tide_http_resp_t *out, tide_error_t *err)
{
    memset(out, 0, sizeof *out);
    double deadline = mono_ms() + (rq->timeout_ms > 0 ? rq->timeout_ms : 1000);
    int fd = connect_to(rq, deadline, err);
    if (fd < 0)
        return -1;
    size_t hn = 0;
    char *head = request_head(rq, &hn);
    if (!head) {
        close(fd);
        return tide_errf(err, TIDE_ENOMEM, "out of memory");
    }
    int rc = send_all(fd, head, hn, rq, deadline, err);
    free(head);
    if (rc == 0 && rq->body && rq->body_len)
        rc = send_all(fd, rq->body, rq->body_len, rq, deadline, err);
    if (rc == 0)
        rc = receive(fd, rq, deadline, out, err);
    close(fd);
    if (rc < 0)
        tide_http_resp_free(out);
    return rc;
}
