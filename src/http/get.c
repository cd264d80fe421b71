/* Plain-socket HTTP GET and Prometheus query responses. */
#include "http/get.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

int tide_http_url_parse(const char *url, char *host, size_t hostn, char *port, size_t portn,
                        char *path, size_t pathn, tide_error_t *err)
{
    if (!url || strncmp(url, "http://", 7))
        return tide_errf(err, TIDE_EINVAL, "'%.200s' is not an http:// URL", url ? url : "");
    const char *h = url + 7, *end = h + strcspn(h, "/?#");
    const char *hs = h, *he, *ps = NULL, *pe = end;
    if (*h == '[') {
        he = memchr(h, ']', (size_t)(end - h));
        if (!he)
            return tide_errf(err, TIDE_EINVAL, "'%.200s': unterminated [IPv6] host", url);
        hs = h + 1;
        if (he + 1 < end && he[1] == ':')
            ps = he + 2;
        else if (he + 1 != end)
            return tide_errf(err, TIDE_EINVAL, "'%.200s': garbage after the host", url);
    } else {
        he = memchr(h, ':', (size_t)(end - h));
        if (he)
            ps = he + 1;
        else
            he = end;
    }
    if (memchr(h, '@', (size_t)(end - h)))
        return tide_errf(err, TIDE_EINVAL, "'%.200s': user info is not supported", url);
    if (he == hs || (size_t)(he - hs) >= hostn)
        return tide_errf(err, TIDE_EINVAL, "'%.200s': bad host", url);
    memcpy(host, hs, (size_t)(he - hs));
    host[he - hs] = '\0';
    if (ps) {
        size_t pl = (size_t)(pe - ps);
        if (pl == 0 || pl >= portn || pl > 5)
            return tide_errf(err, TIDE_EINVAL, "'%.200s': bad port", url);
        for (size_t i = 0; i < pl; i++)
            if (ps[i] < '0' || ps[i] > '9')
                return tide_errf(err, TIDE_EINVAL, "'%.200s': bad port", url);
        memcpy(port, ps, pl);
        port[pl] = '\0';
        if (atoi(port) < 1 || atoi(port) > 65535)
            return tide_errf(err, TIDE_EINVAL, "'%.200s': bad port", url);
    } else {
        snprintf(port, portn, "80");
    }
    const char *rest = end;
    if (*rest == '#')
        rest = "";
    size_t rl = strcspn(rest, "#");
    if (rl + 2 > pathn)
        return tide_errf(err, TIDE_EINVAL, "'%.200s': path too long", url);
    size_t o = 0;
    if (*rest != '/')
        path[o++] = '/';
    memcpy(path + o, rest, rl);
    path[o + rl] = '\0';
    for (char *p = path; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f)
            return tide_errf(err, TIDE_EINVAL, "'%.200s': spaces or control characters in the path",
                             url);
    return 0;
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

static int connect_to(const char *host, const char *port, double deadline, tide_error_t *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int g = getaddrinfo(host, port, &hints, &res);
    if (g != 0)
        return tide_errf(err, TIDE_EIO, "%s: %s", host, gai_strerror(g));
    int fd = -1;
    int last = 0;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
            break;
        if (errno == EINPROGRESS && wait_fd(fd, POLLOUT, deadline) == 0) {
            int e = 0;
            socklen_t l = sizeof e;
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l);
            if (e == 0)
                break;
            last = e;
        } else {
            last = errno == EINPROGRESS ? ETIMEDOUT : errno;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return tide_errf(err, TIDE_EIO, "cannot connect to %s:%s: %s", host, port, strerror(last));
    return fd;
}

/* Decode a chunked body in place. Returns the new length or -1. */
static long dechunk(char *b, size_t n)
{
    size_t i = 0, o = 0;
    for (;;) {
        char *end;
        if (i >= n)
            return -1;
        unsigned long sz = strtoul(b + i, &end, 16);
        if (end == b + i)
            return -1;
        char *nl = memchr(end, '\n', n - (size_t)(end - b));
        if (!nl)
            return -1;
        i = (size_t)(nl - b) + 1;
        if (sz == 0)
            break;
        if (sz > n - i)
            return -1;
        memmove(b + o, b + i, sz);
        o += sz;
        i += sz;
        while (i < n && (b[i] == '\r' || b[i] == '\n'))
            i++;
    }
    b[o] = '\0';
    return (long)o;
}

int tide_http_get(const char *url, int timeout_ms, size_t max, char **body, size_t *len,
                  int *status, tide_error_t *err)
{
    *body = NULL;
    *len = 0;
    *status = 0;
    char host[256], port[8], path[4096];
    if (tide_http_url_parse(url, host, sizeof host, port, sizeof port, path, sizeof path, err) < 0)
        return -1;
    double deadline = mono_ms() + (timeout_ms > 0 ? timeout_ms : 1000);
    int fd = connect_to(host, port, deadline, err);
    if (fd < 0)
        return -1;
    char req[4600];
    int rl = snprintf(req, sizeof req,
                      "GET %s HTTP/1.0\r\nHost: %s:%s\r\nAccept: application/json\r\n"
                      "User-Agent: tide\r\nConnection: close\r\n\r\n",
                      path, host, port);
    size_t sent = 0;
    while (sent < (size_t)rl) {
        if (wait_fd(fd, POLLOUT, deadline) < 0) {
            close(fd);
            return tide_errf(err, TIDE_EIO, "%s: timed out sending", url);
        }
        ssize_t w = send(fd, req + sent, (size_t)rl - sent, MSG_NOSIGNAL);
        if (w < 0 && errno != EINTR && errno != EAGAIN) {
            int e = errno;
            close(fd);
            return tide_errf(err, TIDE_EIO, "%s: %s", url, strerror(e));
        }
        if (w > 0)
            sent += (size_t)w;
    }
    size_t limit = max + 65536; /* headers */
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (wait_fd(fd, POLLIN, deadline) < 0) {
            close(fd);
            free(buf);
            return tide_errf(err, TIDE_EIO, "%s: timed out after %d ms", url, timeout_ms);
        }
        tide_grow((void **)&buf, &cap, n + 16384 + 1, 1);
        ssize_t r = recv(fd, buf + n, 16384, 0);
        if (r == 0)
            break;
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            int e = errno;
            close(fd);
            free(buf);
            return tide_errf(err, TIDE_EIO, "%s: %s", url, strerror(e));
        }
        n += (size_t)r;
        if (n > limit) {
            close(fd);
            free(buf);
            return tide_errf(err, TIDE_ERANGE, "%s: response larger than %zu bytes", url, max);
        }
    }
    close(fd);
    if (!buf) {
        return tide_errf(err, TIDE_EIO, "%s: empty response", url);
    }
    buf[n] = '\0';
    int maj, min, st;
    if (sscanf(buf, "HTTP/%d.%d %d", &maj, &min, &st) != 3) {
        free(buf);
        return tide_errf(err, TIDE_EIO, "%s: not an HTTP response", url);
    }
    char *hend = strstr(buf, "\r\n\r\n");
    size_t skip = 4;
    if (!hend) {
        hend = strstr(buf, "\n\n");
        skip = 2;
    }
    if (!hend) {
        free(buf);
        return tide_errf(err, TIDE_EIO, "%s: truncated response headers", url);
    }
    *hend = '\0';
    int chunked = 0;
    for (char *h = strchr(buf, '\n'); h; h = strchr(h + 1, '\n'))
        if (!strncasecmp(h + 1, "transfer-encoding:", 18) && strstr(h + 19, "chunked"))
            chunked = 1;
    size_t off = (size_t)(hend - buf) + skip;
    size_t bl = n - off;
    memmove(buf, buf + off, bl);
    buf[bl] = '\0';
    if (chunked) {
        long d = dechunk(buf, bl);
        if (d < 0) {
            free(buf);
            return tide_errf(err, TIDE_EIO, "%s: bad chunked body", url);
        }
        bl = (size_t)d;
    }
    if (bl > max) {
        free(buf);
        return tide_errf(err, TIDE_ERANGE, "%s: response larger than %zu bytes", url, max);
    }
    *body = buf;
    *len = bl;
    *status = st;
    return 0;
}

/* One [ts, "value"] pair. */
static int sample(const json_t *pair, double *v, double *ts, tide_error_t *err)
{
    if (!json_is_array(pair) || json_array_size(pair) != 2 || !json_is_number(json_array_get(pair, 0)) ||
        !json_is_string(json_array_get(pair, 1)))
        return tide_errf(err, TIDE_EINVAL, "query result: expected [time, \"value\"]");
    *ts = json_number_value(json_array_get(pair, 0));
    const char *s = json_string_value(json_array_get(pair, 1));
    char *end;
    *v = strtod(s, &end);
    if (end == s || *end || !isfinite(*v) || *v < 0)
        return tide_errf(err, TIDE_EINVAL, "query result: value '%.40s' is not a finite number >= 0",
                         s);
    return 0;
}

int tide_prom_query_value(const char *body, size_t len, double *value, double *ts, tide_error_t *err)
{
    json_error_t je;
    json_t *j = json_loadb(body, len, 0, &je);
    if (!j)
        return tide_errf(err, TIDE_EINVAL, "query response is not JSON: %s", je.text);
    int rc = 0;
    const char *st = json_string_value(json_object_get(j, "status"));
    const json_t *data = json_object_get(j, "data");
    const char *rt = json_string_value(json_object_get(data, "resultType"));
    const json_t *res = json_object_get(data, "result");
    if (!st || strcmp(st, "success")) {
        const char *m = json_string_value(json_object_get(j, "error"));
        rc = tide_errf(err, TIDE_EIO, "query failed: %.300s", m ? m : "status is not success");
    } else if (rt && !strcmp(rt, "scalar")) {
        rc = sample(res, value, ts, err);
    } else if (rt && !strcmp(rt, "vector") && json_is_array(res)) {
        if (json_array_size(res) == 0)
            rc = tide_errf(err, TIDE_ENOENT, "query returned no series");
        double sum = 0, last = -INFINITY;
        for (size_t i = 0; rc == 0 && i < json_array_size(res); i++) {
            double v, t;
            rc = sample(json_object_get(json_array_get(res, i), "value"), &v, &t, err);
            if (rc == 0) {
                sum += v;
                if (t > last)
                    last = t;
            }
        }
        if (rc == 0) {
            *value = sum;
            *ts = last;
        }
    } else {
        rc = tide_errf(err, TIDE_EINVAL, "query result type '%.40s' (want vector or scalar)",
                       rt ? rt : "?");
    }
    json_decref(j);
    return rc;
}
