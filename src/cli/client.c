/* Blocking HTTP/1.1 client for the tide API: one connection per request. */
#include "cli/client.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "util/util.h"

int tide_client_init(tide_client_t *c, const char *server, const char *token, tide_error_t *err)
{
    memset(c, 0, sizeof *c);
    c->timeout_s = 60;
    if (!server || !*server)
        server = getenv("TIDE_SERVER");
    if (!server || !*server)
        server = TIDE_CLIENT_DEFAULT_URL;
    if (!token)
        token = getenv("TIDE_TOKEN");
    snprintf(c->url, sizeof c->url, "%s", server);

    const char *p = server;
    if (!strncasecmp(p, "http://", 7))
        p += 7;
    else if (!strncasecmp(p, "https://", 8))
        return tide_errf(err, TIDE_EINVAL,
                         "server '%s': https is not supported (plain http only; put the daemon "
                         "on loopback or behind a local proxy)", server);
    else if (strstr(p, "://"))
        return tide_errf(err, TIDE_EINVAL, "server '%s': not an http:// URL", server);

    const char *hs = p, *he;
    if (*p == '[') { /* [IPv6]:port */
        he = strchr(p, ']');
        if (!he)
            return tide_errf(err, TIDE_EINVAL, "server '%s': unterminated '[' in host", server);
        hs = p + 1;
        p = he + 1;
    } else {
        he = p + strcspn(p, ":/");
        p = he;
    }
    size_t hl = (size_t)(he - hs);
    if (hl == 0 || hl >= sizeof c->host)
        return tide_errf(err, TIDE_EINVAL, "server '%s': missing or too long host", server);
    memcpy(c->host, hs, hl);
    c->host[hl] = '\0';

    strcpy(c->port, "80");
    if (*p == ':') {
        p++;
        size_t pl = strspn(p, "0123456789");
        long long v;
        char tmp[8];
        if (pl == 0 || pl >= sizeof tmp)
            return tide_errf(err, TIDE_EINVAL, "server '%s': bad port", server);
        memcpy(tmp, p, pl);
        tmp[pl] = '\0';
        if (tide_parse_int(tmp, &v) < 0 || v < 1 || v > 65535)
            return tide_errf(err, TIDE_EINVAL, "server '%s': port out of range", server);
        snprintf(c->port, sizeof c->port, "%lld", v);
        p += pl;
    }
    if (*p && *p != '/')
        return tide_errf(err, TIDE_EINVAL, "server '%s': unexpected '%c' after the host", server,
                         *p);
    size_t pl = strlen(p);
    while (pl > 0 && p[pl - 1] == '/')
        pl--;
    if (pl >= sizeof c->prefix)
        return tide_errf(err, TIDE_EINVAL, "server '%s': path too long", server);
    memcpy(c->prefix, p, pl);
    c->prefix[pl] = '\0';
    if (token && *token) {
        if (strpbrk(token, "\r\n"))
            return tide_errf(err, TIDE_EINVAL, "token: contains a line break");
        c->token = tide_xstrdup(token);
    }
    return 0;
}

void tide_client_fini(tide_client_t *c)
{
    free(c->token);
    c->token = NULL;
}

void tide_http_resp_free(tide_http_resp_t *r)
{
    free(r->body);
    r->body = NULL;
    r->len = 0;
}

/* Connect to c's host:port. Returns the socket or -1 with err. */
static int connect_to(const tide_client_t *c, tide_error_t *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int rc = getaddrinfo(c->host, c->port, &hints, &ai);
    if (rc != 0)
        return tide_errf(err, TIDE_EIO, "cannot connect to %s: %s", c->url, gai_strerror(rc));
    int fd = -1, last = 0;
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
            break;
        last = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd < 0) {
        if (last == ECONNREFUSED)
            return tide_errf(err, TIDE_EIO,
                             "cannot connect to %s: connection refused (is `tide serve` running "
                             "there? set --server or TIDE_SERVER)", c->url);
        return tide_errf(err, TIDE_EIO, "cannot connect to %s: %s", c->url, strerror(last));
    }
    struct timeval tv = {.tv_sec = c->timeout_s > 0 ? c->timeout_s : 60};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
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

/* Decode a chunked body [p, end) into out (owned). Returns 1 when the body is
 * complete, 0 when more bytes are needed, -1 when malformed. */
static int dechunk(const char *p, const char *end, char **out, size_t *outlen)
{
    char *b = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) {
            free(b);
            return 0;
        }
        char *x;
        errno = 0;
        unsigned long long sz = strtoull(p, &x, 16);
        if (x == p || errno || sz > TIDE_CLIENT_MAX_RESPONSE) {
            free(b);
            return -1;
        }
        p = eol + 1;
        if (sz == 0) { /* trailers until an empty line */
            for (;;) {
                const char *e2 = memchr(p, '\n', (size_t)(end - p));
                if (!e2) {
                    free(b);
                    return 0;
                }
                int empty = e2 == p || (e2 == p + 1 && *p == '\r');
                p = e2 + 1;
                if (empty)
                    break;
            }
            tide_grow((void **)&b, &cap, n + 1, 1);
            b[n] = '\0';
            *out = b;
            *outlen = n;
            return 1;
        }
        if ((size_t)(end - p) < sz + 2) {
            free(b);
            return 0;
        }
        tide_grow((void **)&b, &cap, n + sz + 1, 1);
        memcpy(b + n, p, sz);
        n += sz;
        p += sz;
        if (*p == '\r')
            p++;
        if (*p != '\n') {
            free(b);
            return -1;
        }
        p++;
    }
}

/* Try to parse a complete response from buf[0..n). eof: the peer closed.
 * Returns 1 (out filled), 0 (need more), -1 (malformed, err filled). */
static int parse_response(const tide_client_t *c, const char *method, const char *buf, size_t n,
                          int eof, tide_http_resp_t *out, tide_error_t *err)
{
    const char *end = buf + n;
    const char *hend = NULL;
    size_t sep = 0;
    for (const char *q = buf; q + 1 < end; q++) {
        if (q[0] == '\n' && q[1] == '\n') {
            hend = q + 1;
            sep = 1;
            break;
        }
        if (q + 3 < end && q[0] == '\r' && q[1] == '\n' && q[2] == '\r' && q[3] == '\n') {
            hend = q + 2;
            sep = 2;
            break;
        }
    }
    if (!hend) {
        if (eof)
            return tide_errf(err, TIDE_EIO, "%s: connection closed before a complete response",
                             c->url);
        return 0;
    }
    int major, minor, status;
    if (sscanf(buf, "HTTP/%d.%d %d", &major, &minor, &status) != 3 || status < 100 ||
        status > 999)
        return tide_errf(err, TIDE_EIO, "%s: not an HTTP response", c->url);
    const char *body = hend + sep;
    const char *te = find_header(buf, hend, "Transfer-Encoding");
    const char *cl = find_header(buf, hend, "Content-Length");
    int no_body = !strcmp(method, "HEAD") || status == 204 || status == 304 || status < 200;
    out->status = status;
    if (no_body) {
        out->body = tide_xstrdup("");
        out->len = 0;
        return 1;
    }
    if (te && !strncasecmp(te, "chunked", 7)) {
        int r = dechunk(body, end, &out->body, &out->len);
        if (r < 0)
            return tide_errf(err, TIDE_EIO, "%s: malformed chunked response", c->url);
        if (r == 0 && eof)
            return tide_errf(err, TIDE_EIO, "%s: connection closed inside a chunked response",
                             c->url);
        return r;
    }
    if (cl) {
        char *x;
        errno = 0;
        unsigned long long len = strtoull(cl, &x, 10);
        if (x == cl || errno || len > TIDE_CLIENT_MAX_RESPONSE)
            return tide_errf(err, TIDE_EIO, "%s: bad Content-Length", c->url);
        if ((size_t)(end - body) < len) {
            if (eof)
                return tide_errf(err, TIDE_EIO,
                                 "%s: connection closed after %zu of %llu body bytes", c->url,
                                 (size_t)(end - body), len);
            return 0;
        }
        out->body = tide_xmalloc(len + 1);
        memcpy(out->body, body, len);
        out->body[len] = '\0';
        out->len = len;
        return 1;
    }
    if (!eof)
        return 0; /* body delimited by the end of the connection */
    out->len = (size_t)(end - body);
    out->body = tide_xmalloc(out->len + 1);
    memcpy(out->body, body, out->len);
    out->body[out->len] = '\0';
    return 1;
}

int tide_client_http(const tide_client_t *c, const char *method, const char *path,
                     const char *body, size_t body_len, tide_http_resp_t *out,
                     tide_error_t *err)
{
    memset(out, 0, sizeof *out);
    int fd = connect_to(c, err);
    if (fd < 0)
        return -1;
    char *req = NULL;
    size_t rn = 0;
    FILE *f = open_memstream(&req, &rn);
    if (!f) {
        close(fd);
        return tide_errf(err, TIDE_ENOMEM, "out of memory");
    }
    int v6 = strchr(c->host, ':') != NULL;
    fprintf(f, "%s %s%s HTTP/1.1\r\nHost: %s%s%s:%s\r\nUser-Agent: tide-cli\r\n"
               "Accept: application/json\r\nConnection: close\r\n",
            method, c->prefix, path, v6 ? "[" : "", c->host, v6 ? "]" : "", c->port);
    if (c->token)
        fprintf(f, "Authorization: Bearer %s\r\n", c->token);
    if (body)
        fprintf(f, "Content-Type: application/json\r\nContent-Length: %zu\r\n", body_len);
    else if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        fprintf(f, "Content-Length: 0\r\n");
    fputs("\r\n", f);
    fclose(f);
    int rc = send_all(fd, req, rn);
    free(req);
    if (rc == 0 && body && body_len)
        rc = send_all(fd, body, body_len);
    if (rc < 0) {
        int e = errno;
        close(fd);
        return tide_errf(err, TIDE_EIO, "%s: sending the request failed: %s", c->url,
                         strerror(e));
    }

    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        tide_grow((void **)&buf, &cap, n + 65536, 1);
        ssize_t r = recv(fd, buf + n, cap - n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            if (e == EAGAIN || e == EWOULDBLOCK)
                return tide_errf(err, TIDE_EIO, "%s: no response within %d s", c->url,
                                 c->timeout_s);
            return tide_errf(err, TIDE_EIO, "%s: reading the response failed: %s", c->url,
                             strerror(e));
        }
        n += (size_t)r;
        if (n > TIDE_CLIENT_MAX_RESPONSE + 65536) {
            free(buf);
            close(fd);
            return tide_errf(err, TIDE_EIO, "%s: response larger than %u bytes", c->url,
                             TIDE_CLIENT_MAX_RESPONSE);
        }
        int p = parse_response(c, method, buf, n, r == 0, out, err);
        if (p != 0) {
            free(buf);
            close(fd);
            return p > 0 ? 0 : -1;
        }
    }
}

int tide_client_status_code(int status)
{
    for (int code = 1; code < TIDE_ERRCODE_COUNT; code++)
        if (tide_errcode_http(code) == status)
            return code;
    if (status >= 400 && status < 500)
        return TIDE_EINVAL;
    return TIDE_EIO;
}

/* The error code named by s ("ENOENT"), or -1. */
static int code_by_name(const char *s)
{
    for (int code = 1; code < TIDE_ERRCODE_COUNT; code++)
        if (!strcmp(tide_errcode_name(code), s))
            return code;
    return -1;
}

json_t *tide_client_call(const tide_client_t *c, const char *method, const char *path,
                         const json_t *body, int *status, tide_error_t *err)
{
    char *text = NULL;
    if (status)
        *status = 0;
    if (body && !(text = json_dumps(body, JSON_COMPACT))) {
        tide_errf(err, TIDE_EINVAL, "cannot encode the request body");
        return NULL;
    }
    tide_http_resp_t r;
    int rc = tide_client_http(c, method, path, text, text ? strlen(text) : 0, &r, err);
    free(text);
    if (rc < 0)
        return NULL;
    if (status)
        *status = r.status;
    json_error_t je;
    json_t *j = r.len ? json_loadb(r.body, r.len, JSON_DECODE_ANY, &je) : NULL;
    if (r.status >= 400) {
        const json_t *e = json_object_get(j, "error");
        const char *msg = json_string_value(json_object_get(e, "message"));
        const char *name = json_string_value(json_object_get(e, "code"));
        int code = name ? code_by_name(name) : -1;
        if (code < 0)
            code = tide_client_status_code(r.status);
        if (msg)
            tide_errf(err, code, "%s", msg);
        else {
            size_t l = strcspn(r.body, "\r\n");
            tide_errf(err, code, "HTTP %d from %s%s%.*s", r.status, c->url, l ? ": " : "",
                      (int)TIDE_MIN(l, 200), r.body);
        }
        json_decref(j);
        tide_http_resp_free(&r);
        return NULL;
    }
    if (!r.len) {
        tide_http_resp_free(&r);
        return json_object();
    }
    if (!j)
        tide_errf(err, TIDE_EIO, "%s %s: HTTP %d with a body that is not JSON (%s)", method, path,
                  r.status, je.text);
    tide_http_resp_free(&r);
    return j;
}

char *tide_client_urlenc(char *buf, size_t n, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t l = strnlen(buf, n);
    for (; *s && l + 1 < n; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '_' || ch == '.' || ch == '~') {
            buf[l++] = (char)ch;
        } else {
            if (l + 4 > n)
                break;
            buf[l++] = '%';
            buf[l++] = hex[ch >> 4];
            buf[l++] = hex[ch & 15];
        }
    }
    if (l < n)
        buf[l] = '\0';
    return buf;
}
