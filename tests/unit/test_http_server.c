/* The HTTP server (src/http/server.c) over real loopback sockets: blocking
 * handlers (long polls) hold no I/O thread, so a quick request is answered
 * while many block; a request finding every handler thread busy gets a JSON
 * 503, except on a route marked quick (answered on the I/O thread); requests blocked at shutdown get their answers; 413 comes before any
 * 100 Continue; conflicting Content-Length and Content-Length with
 * Transfer-Encoding are refused with JSON; a client silent past the
 * inactivity timeout is dropped; the per-address connection limit; TLS
 * files refused; tokens shorter than 16 characters refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http/auth.h"
#include "http/router.h"
#include "http/server.h"

/* A handler that blocks until released (a long poll). */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int released, blocked;

static void h_block(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    (void)app;
    (void)req;
    pthread_mutex_lock(&mu);
    blocked++;
    pthread_cond_broadcast(&cv);
    while (!released)
        pthread_cond_wait(&cv, &mu);
    blocked--;
    pthread_mutex_unlock(&mu);
    tide_http_reply_text(rep, 200, "application/json", "{\"released\":true}", 17);
}

static void h_quick(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
{
    (void)app;
    char b[32];
    snprintf(b, sizeof b, "{\"len\":%zu}", req->body_len);
    tide_http_reply_text(rep, 200, "application/json", b, strlen(b));
}

static const tide_route_t routes[] = {
    {"GET", "/block", TIDE_ROLE_PUBLIC, h_block, NULL},
    {"GET", "/quick", TIDE_ROLE_PUBLIC, h_quick, NULL},
    {"POST", "/quick", TIDE_ROLE_PUBLIC, h_quick, NULL},
};

typedef struct srv {
    tide_auth_t *auth;
    tide_router_t *rt;
    tide_http_server_t *s;
    int port;
} srv_t;

static void start(srv_t *v, const tide_http_server_opts_t *o)
{
    released = 0;
    v->auth = tide_auth_create();
    v->rt = tide_router_create(routes, sizeof routes / sizeof routes[0], v->auth, NULL);
    tide_error_t err = {0};
    v->s = tide_http_server_start_opts("127.0.0.1:0", v->rt, o, &err);
    if (!v->s)
        fail_msg("server: %s", err.msg);
    v->port = tide_http_server_port(v->s);
}

static void release_all(void)
{
    pthread_mutex_lock(&mu);
    released = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void stop(srv_t *v)
{
    release_all();
    tide_http_server_stop(v->s);
    tide_router_destroy(v->rt);
    tide_auth_destroy(v->auth);
}

static int connect_to(int port, const char *src)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    if (src) {
        inet_pton(AF_INET, src, &a.sin_addr);
        if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
            close(fd);
            return -1;
        }
    }
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int send_all(int fd, const char *s)
{
    return send(fd, s, strlen(s), MSG_NOSIGNAL) == (ssize_t)strlen(s) ? 0 : -1;
}

/* Read what arrives within ms (until EOF or the buffer is full). Returns
 * the length; *eof = the peer closed. */
static size_t read_for(int fd, char *buf, size_t n, int ms, int *eof)
{
    size_t got = 0;
    *eof = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        long left = ms - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
        if (left <= 0 || got + 1 >= n)
            break;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)left) <= 0)
            break;
        ssize_t r = recv(fd, buf + got, n - 1 - got, 0);
        if (r <= 0) {
            *eof = 1;
            break;
        }
        got += (size_t)r;
    }
    buf[got] = '\0';
    return got;
}

static const char *GET_BLOCK = "GET /block HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
static const char *GET_QUICK = "GET /quick HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

static void wait_blocked(int n)
{
    pthread_mutex_lock(&mu);
    while (blocked < n)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

/* ----------------------------------------------------------------- tests */

static void test_long_polls_hold_no_io_thread(void **state)
{
    (void)state;
    srv_t v;
    tide_http_server_opts_t o = {.io_threads = 1, .max_handlers = 64};
    start(&v, &o);
    enum { N = 40 };
    int fds[N];
    for (int i = 0; i < N; i++) {
        fds[i] = connect_to(v.port, NULL);
        assert_true(fds[i] >= 0);
        assert_int_equal(send_all(fds[i], GET_BLOCK), 0);
    }
    wait_blocked(N); /* 40 handlers blocked, one I/O thread */
    int q = connect_to(v.port, NULL), eof;
    assert_int_equal(send_all(q, GET_QUICK), 0);
    char buf[2048];
    read_for(q, buf, sizeof buf, 2000, &eof);
    close(q);
    assert_non_null(strstr(buf, "HTTP/1.1 200"));
    assert_non_null(strstr(buf, "{\"len\":0}"));
    release_all();
    for (int i = 0; i < N; i++) {
        read_for(fds[i], buf, sizeof buf, 2000, &eof);
        assert_non_null(strstr(buf, "{\"released\":true}"));
        close(fds[i]);
    }
    stop(&v);
}

/* Two blocking requests on connections fd[0], fd[1]: both handler threads
 * of a max_handlers = 2 server busy. */
static void occupy_two(const srv_t *v, int fd[2])
{
    for (int i = 0; i < 2; i++) {
        fd[i] = connect_to(v->port, NULL);
        assert_int_equal(send_all(fd[i], GET_BLOCK), 0);
    }
    wait_blocked(2);
}

/* Release them: each gets its 200. */
static void release_two(int fd[2])
{
    char buf[2048];
    int eof;
    release_all();
    for (int i = 0; i < 2; i++) {
        read_for(fd[i], buf, sizeof buf, 2000, &eof);
        assert_non_null(strstr(buf, "HTTP/1.1 200"));
        close(fd[i]);
    }
}

/* Send req on a new connection; the answer (within 2 s) into buf. */
static void ask(const srv_t *v, const char *req, char *buf, size_t n)
{
    int c = connect_to(v->port, NULL), eof;
    assert_int_equal(send_all(c, req), 0);
    read_for(c, buf, n, 2000, &eof);
    close(c);
}

static void test_busy_is_json_503(void **state)
{
    (void)state;
    srv_t v;
    tide_http_server_opts_t o = {.max_handlers = 2};
    start(&v, &o);
    int fd[2];
    occupy_two(&v, fd);
    char buf[2048];
    ask(&v, GET_QUICK, buf, sizeof buf);
    assert_non_null(strstr(buf, "HTTP/1.1 503"));
    assert_non_null(strstr(buf, "Retry-After: 1"));
    assert_non_null(strstr(buf, "\"code\":\"EBUSY\""));
    release_two(fd);
    stop(&v);
}

/* A route marked quick is answered on the I/O thread: still 200 while every
 * handler thread is busy (another route then gets 503). */
static void test_quick_route_on_io_thread(void **state)
{
    (void)state;
    srv_t v;
    tide_http_server_opts_t o = {.max_handlers = 2};
    start(&v, &o);
    assert_int_equal(tide_router_set_quick(v.rt, "GET", "/quick"), 0);
    assert_int_equal(tide_router_set_quick(v.rt, "GET", "/nowhere"), -1);
    assert_int_equal(tide_router_quick(v.rt, "GET", "/quick"), 1);
    assert_int_equal(tide_router_quick(v.rt, "POST", "/quick"), 0);
    assert_int_equal(tide_router_quick(v.rt, "GET", "/block"), 0);
    int fd[2];
    occupy_two(&v, fd);
    char buf[2048];
    ask(&v, GET_QUICK, buf, sizeof buf);
    assert_non_null(strstr(buf, "HTTP/1.1 200"));
    assert_non_null(strstr(buf, "{\"len\":0}"));
    ask(&v, "POST /quick HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
        buf, sizeof buf);
    assert_non_null(strstr(buf, "HTTP/1.1 503"));
    release_two(fd);
    stop(&v);
}

/* The owner of the handlers releases them, then stops the server (the
 * daemon's order): every blocked client gets its answer. */
typedef struct stopper {
    srv_t *v;
} stopper_t;

static void *stop_thread(void *arg)
{
    stopper_t *s = arg;
    release_all();
    tide_http_server_stop(s->v->s);
    return NULL;
}

static void test_shutdown_answers_long_polls(void **state)
{
    (void)state;
    srv_t v;
    start(&v, NULL);
    enum { N = 5 };
    int fds[N], eof;
    for (int i = 0; i < N; i++) {
        fds[i] = connect_to(v.port, NULL);
        assert_int_equal(send_all(fds[i], GET_BLOCK), 0);
    }
    wait_blocked(N);
    stopper_t st = {&v};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, stop_thread, &st), 0);
    char buf[2048];
    for (int i = 0; i < N; i++) {
        read_for(fds[i], buf, sizeof buf, 5000, &eof);
        assert_non_null(strstr(buf, "HTTP/1.1 200"));
        assert_non_null(strstr(buf, "{\"released\":true}"));
        close(fds[i]);
    }
    pthread_join(t, NULL);
    tide_router_destroy(v.rt);
    tide_auth_destroy(v.auth);
}

static void test_protocol_errors_json(void **state)
{
    (void)state;
    srv_t v;
    start(&v, NULL);
    char buf[4096], head[512];
    int eof;
    /* an oversized body announced with Expect: 100-continue: 413 at once,
     * never "100 Continue" */
    snprintf(head, sizeof head,
             "POST /quick HTTP/1.1\r\nHost: x\r\nContent-Length: %u\r\nExpect: 100-continue\r\n\r\n",
             20u << 20);
    int fd = connect_to(v.port, NULL);
    assert_int_equal(send_all(fd, head), 0);
    read_for(fd, buf, sizeof buf, 2000, &eof);
    close(fd);
    assert_null(strstr(buf, "100 Continue"));
    assert_non_null(strstr(buf, "HTTP/1.1 413"));
    assert_non_null(strstr(buf, "\"code\":\"E2BIG\""));
    /* a small body with Expect still goes through */
    fd = connect_to(v.port, NULL);
    assert_int_equal(send_all(fd, "POST /quick HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                                  "Expect: 100-continue\r\nConnection: close\r\n\r\n"),
                     0);
    read_for(fd, buf, sizeof buf, 2000, &eof);
    assert_non_null(strstr(buf, "100 Continue"));
    assert_int_equal(send_all(fd, "hello"), 0);
    read_for(fd, buf, sizeof buf, 2000, &eof);
    close(fd);
    assert_non_null(strstr(buf, "{\"len\":5}"));
    /* two different lengths; a length with chunked */
    static const char *const bad[] = {
        "POST /quick HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\nhello",
        "POST /quick HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n"
        "\r\n5\r\nhello\r\n0\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fd = connect_to(v.port, NULL);
        assert_int_equal(send_all(fd, bad[i]), 0);
        read_for(fd, buf, sizeof buf, 2000, &eof);
        close(fd);
        assert_non_null(strstr(buf, "HTTP/1.1 400"));
        assert_non_null(strstr(buf, "Content-Type: application/json"));
        assert_non_null(strstr(buf, "\"code\":\"EINVAL\""));
    }
    /* the same length twice is one length */
    fd = connect_to(v.port, NULL);
    assert_int_equal(send_all(fd, "POST /quick HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                                  "Content-Length: 5\r\nConnection: close\r\n\r\nhello"),
                     0);
    read_for(fd, buf, sizeof buf, 2000, &eof);
    close(fd);
    assert_non_null(strstr(buf, "{\"len\":5}"));
    stop(&v);
}

static void test_silent_client_dropped(void **state)
{
    (void)state;
    srv_t v;
    tide_http_server_opts_t o = {.timeout_s = 1};
    start(&v, &o);
    int fd = connect_to(v.port, NULL), eof;
    assert_int_equal(send_all(fd, "GET /quick HTTP/1.1\r\nHost: x\r\nX-slow: a"), 0);
    char buf[256];
    read_for(fd, buf, sizeof buf, 4000, &eof); /* the timeout is 1 s */
    close(fd);
    assert_true(eof);
    /* a suspended long poll is not "silent" */
    fd = connect_to(v.port, NULL);
    assert_int_equal(send_all(fd, GET_BLOCK), 0);
    wait_blocked(1);
    size_t n = read_for(fd, buf, sizeof buf, 2500, &eof);
    assert_int_equal(n, 0);
    assert_false(eof);
    release_all();
    read_for(fd, buf, sizeof buf, 2000, &eof);
    close(fd);
    assert_non_null(strstr(buf, "{\"released\":true}"));
    stop(&v);
}

static void test_per_address_limit(void **state)
{
    (void)state;
    srv_t v;
    tide_http_server_opts_t o = {.per_ip = 3};
    start(&v, &o);
    int fds[5], eof;
    for (int i = 0; i < 5; i++)
        fds[i] = connect_to(v.port, "127.0.0.7");
    char buf[512];
    int open_ok = 0;
    for (int i = 0; i < 5; i++) {
        if (fds[i] < 0)
            continue;
        read_for(fds[i], buf, sizeof buf, 300, &eof);
        open_ok += !eof;
    }
    assert_int_equal(open_ok, 3);
    /* another address is not affected */
    int q = connect_to(v.port, "127.0.0.8");
    assert_true(q >= 0);
    assert_int_equal(send_all(q, GET_QUICK), 0);
    read_for(q, buf, sizeof buf, 2000, &eof);
    close(q);
    assert_non_null(strstr(buf, "HTTP/1.1 200"));
    for (int i = 0; i < 5; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    stop(&v);
}

static void test_tls_refusals(void **state)
{
    (void)state;
    tide_auth_t *a = tide_auth_create();
    tide_router_t *rt = tide_router_create(routes, 1, a, NULL);
    tide_error_t err = {0};
    tide_http_server_opts_t o = {.tls_cert = "/nonexistent/cert.pem"};
    assert_null(tide_http_server_start_opts("127.0.0.1:0", rt, &o, &err));
    assert_int_equal(err.code, TIDE_EINVAL);
    o.tls_key = "/nonexistent/key.pem";
    assert_null(tide_http_server_start_opts("127.0.0.1:0", rt, &o, &err));
    assert_non_null(strstr(err.msg, "--tls-cert"));
    tide_router_destroy(rt);
    tide_auth_destroy(a);
}

static void test_short_tokens_refused(void **state)
{
    (void)state;
    tide_auth_t *a = tide_auth_create();
    tide_error_t err = {0};
    const char *shortf = "abcdefghijklmno ops admin\n"; /* 15 characters */
    assert_int_equal(tide_auth_load_mem(a, shortf, strlen(shortf), "t", &err), -1);
    assert_non_null(strstr(err.msg, "shorter than 16"));
    assert_true(tide_auth_is_open(a));
    const char *okf = "abcdefghijklmnop ops admin\n";
    assert_int_equal(tide_auth_load_mem(a, okf, strlen(okf), "t", &err), 1);
    tide_auth_destroy(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_long_polls_hold_no_io_thread),
        cmocka_unit_test(test_busy_is_json_503),
        cmocka_unit_test(test_quick_route_on_io_thread),
        cmocka_unit_test(test_shutdown_answers_long_polls),
        cmocka_unit_test(test_protocol_errors_json),
        cmocka_unit_test(test_silent_client_dropped),
        cmocka_unit_test(test_per_address_limit),
        cmocka_unit_test(test_tls_refusals),
        cmocka_unit_test(test_short_tokens_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
