#define _GNU_SOURCE
/* api_bench: a small HTTP/1.1 keep-alive load client for `tide serve`, used by
 * bench/serve_bench.sh (make bench-serve) and bench/serve_latency.sh.
 *
 *   api_bench --url http://127.0.0.1:PORT --op submit|get|list [--threads N]
 *             [--secs S] [--rate R] [--prefix P] [--ids N] [--get-prefix P]
 *             [--plain] [--list-query Q] [--conns K]
 *   api_bench --unix SOCKET --op rsubmit|rget ...   (Slurm's slurmrestd)
 *
 * Each thread has one connection and sends requests back to back (or R per
 * second per thread with --rate, to measure latency at a given load rather
 * than at saturation). With --conns K a thread drives K connections at once
 * through poll(2), one request in flight on each: an asynchronous client
 * thread, which an HTTP API allows and a blocking RPC library does not. submit: POST /v1/jobs with a unique job_id per
 * request (PREFIX-THREAD-COUNTER) and a realistic body (a command and an
 * environment of a few variables; --plain: the minimal 1-GPU job). get: GET
 * /v1/jobs/GETPREFIX-K, K cycling over 1..N. list: GET /v1/jobs?limit=50.
 * rsubmit / rget: the same against slurmrestd (OpenAPI v0.0.38) on a Unix
 * socket (rest_auth/local): POST /slurm/v0.0.38/job/submit of a held job with
 * the same command and environment; GET /slurm/v0.0.38/job/ID for ID in
 * GETPREFIX..GETPREFIX+N-1 (numeric).
 * Prints one line: op threads n ok bad secs rps p50_ms p99_ms max_ms.
 * Exit 1 when no request succeeded (the reason on stderr). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

typedef struct opts {
    char host[256], port[16], unix_path[108];
    const char *op, *prefix, *get_prefix, *list_query;
    int threads, ids, plain, conns;
    double secs, rate;
} opts_t;

typedef struct worker {
    const opts_t *o;
    int id;
    double *lat; /* seconds per completed request */
    size_t n, cap;
    long ok, bad;
    char err[600];
} worker_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int dial_unix(const opts_t *o, char *err, size_t n)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, o->unix_path, sizeof a.sun_path - 1);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        snprintf(err, n, "connect %.107s: %.200s", o->unix_path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static int dial(const opts_t *o, char *err, size_t n)
{
    if (o->unix_path[0])
        return dial_unix(o, err, n);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    int rc = getaddrinfo(o->host, o->port, &hints, &ai);
    if (rc) {
        snprintf(err, n, "%.255s:%.15s: %.200s", o->host, o->port, gai_strerror(rc));
        return -1;
    }
    int fd = socket(ai->ai_family, ai->ai_socktype, 0);
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        snprintf(err, n, "connect %.255s:%.15s: %.200s", o->host, o->port, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Read one response (Content-Length framed); returns the status or -1. */
static int read_reply(int fd, char *buf, size_t cap)
{
    size_t have = 0;
    char *eoh = NULL;
    while (!eoh) {
        if (have + 1 >= cap)
            return -1;
        ssize_t r = recv(fd, buf + have, cap - 1 - have, 0);
        if (r <= 0)
            return -1;
        have += (size_t)r;
        buf[have] = 0;
        eoh = strstr(buf, "\r\n\r\n");
    }
    int status = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
        return -1;
    const char *cl = strcasestr(buf, "\r\ncontent-length:");
    if (!cl || cl > eoh)
        return -1; /* chunked answers are not expected from tide */
    size_t len = strtoul(cl + 17, NULL, 10);
    size_t want = (size_t)(eoh + 4 - buf) + len;
    while (have < want) {
        char tmp[65536];
        size_t room = want - have < sizeof tmp ? want - have : sizeof tmp;
        ssize_t r = recv(fd, tmp, room, 0);
        if (r <= 0)
            return -1;
        have += (size_t)r;
    }
    return status;
}

/* A complete response in buf[0..have)? Returns its length (and the status
 * in *status), 0 when more bytes are needed, -1 when it cannot be framed. */
static long reply_complete(const char *buf, size_t have, int *status)
{
    const char *eoh = memmem(buf, have, "\r\n\r\n", 4);
    if (!eoh)
        return 0;
    if (sscanf(buf, "HTTP/1.%*d %d", status) != 1)
        return -1;
    const char *cl = memmem(buf, (size_t)(eoh - buf) + 2, "\r\nContent-Length:", 17);
    if (!cl)
        cl = memmem(buf, (size_t)(eoh - buf) + 2, "\r\ncontent-length:", 17);
    if (!cl)
        return -1;
    size_t want = (size_t)(eoh + 4 - buf) + strtoul(cl + 17, NULL, 10);
    return have >= want ? (long)want : 0;
}

static void record(worker_t *w, int st, double secs)
{
    if (st >= 200 && st < 300)
        w->ok++;
    else {
        w->bad++;
        snprintf(w->err, sizeof w->err, "HTTP %d", st);
    }
    if (w->n == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 4096;
        w->lat = realloc(w->lat, w->cap * sizeof *w->lat);
        if (!w->lat)
            abort();
    }
    w->lat[w->n++] = secs;
}

#define TRAIN_CMD "torchrun --nproc_per_node=8 train.py --config configs/llama-8b.yaml --resume latest"

static int post(const opts_t *o, const char *path, const char *body, char *req, size_t n)
{
    return snprintf(req, n,
                    "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                    "Content-Length: %zu\r\n\r\n%s",
                    path, o->host, strlen(body), body);
}

/* slurmrestd: a held job with the same command and environment as submit */
static int make_rest_request(const worker_t *w, long k, char *req, size_t n)
{
    const opts_t *o = w->o;
    if (!strcmp(o->op, "rget"))
        return snprintf(req, n, "GET /slurm/v0.0.38/job/%ld HTTP/1.1\r\nHost: %s\r\n\r\n",
                        atol(o->get_prefix) + (k * 7919 + w->id * 104729) % o->ids, o->host);
    char body[1024];
    snprintf(body, sizeof body,
             "{\"script\":\"#!/bin/sh\\n" TRAIN_CMD "\\n\",\"job\":{\"name\":\"%s-%d-%ld\","
             "\"hold\":true,\"current_working_directory\":\"/tmp\",\"standard_output\":"
             "\"/dev/null\",\"time_limit\":%ld,\"environment\":{\"PATH\":\"/usr/bin:/bin\","
             "\"WANDB_PROJECT\":\"llm-pretrain\",\"NCCL_DEBUG\":\"WARN\",\"DATA_DIR\":"
             "\"/datasets/fineweb/shard-%ld\",\"CKPT_DIR\":\"/ckpt/%s-%d-%ld\",\"SEED\":\"%ld\"}}}",
             o->prefix, w->id, k, (600 + (k * 7919 + w->id * 104729) % 6600) / 60 + 1, k % 512,
             o->prefix, w->id, k, k);
    return post(o, "/slurm/v0.0.38/job/submit", body, req, n);
}

static int make_request(const worker_t *w, long k, char *req, size_t n)
{
    const opts_t *o = w->o;
    if (o->op[0] == 'r' && strcmp(o->op, "list"))
        return make_rest_request(w, k, req, n);
    if (!strcmp(o->op, "get"))
        return snprintf(req, n, "GET /v1/jobs/%s-%ld HTTP/1.1\r\nHost: %s\r\n\r\n", o->get_prefix,
                        (k * 7919 + w->id * 104729) % o->ids + 1, o->host);
    if (!strcmp(o->op, "list"))
        return snprintf(req, n, "GET /v1/jobs?%s HTTP/1.1\r\nHost: %s\r\n\r\n", o->list_query,
                        o->host);
    char body[1024];
    if (o->plain)
        snprintf(body, sizeof body,
                 "{\"job_id\":\"%s-%d-%ld\",\"team\":\"bench\",\"priority\":3,\"gpus\":1,"
                 "\"duration_s\":3600}",
                 o->prefix, w->id, k);
    else
        snprintf(body, sizeof body,
                 "{\"job_id\":\"%s-%d-%ld\",\"team\":\"bench\",\"priority\":2,\"gpus\":8,"
                 "\"gang_gpus\":8,\"duration_s\":%ld,\"ckpt_interval_s\":1800,\"ckpt_s\":60,"
                 "\"restore_s\":120,\"command\":\"" TRAIN_CMD "\",\"env\":{\"WANDB_PROJECT\":"
                 "\"llm-pretrain\",\"NCCL_DEBUG\":\"WARN\",\"DATA_DIR\":\"/datasets/fineweb/"
                 "shard-%ld\",\"CKPT_DIR\":\"/ckpt/%s-%d-%ld\",\"SEED\":\"%ld\"}}",
                 o->prefix, w->id, k, 600 + (k * 7919 + w->id * 104729) % 6600, k % 512, o->prefix, w->id, k, k);
    return post(o, "/v1/jobs", body, req, n);
}

static void *work(void *arg)
{
    worker_t *w = arg;
    const opts_t *o = w->o;
    static __thread char buf[1 << 20];
    char req[2048];
    int fd = dial(o, w->err, sizeof w->err);
    if (fd < 0)
        return NULL;
    double t0 = now_s(), end = t0 + o->secs;
    for (long k = 1;; k++) {
        double due = o->rate > 0 ? t0 + (double)(k - 1) / o->rate : 0;
        double t = now_s();
        if (t >= end || due >= end)
            break;
        if (due > t) {
            struct timespec ts = {(time_t)(due - t), (long)((due - t - (time_t)(due - t)) * 1e9)};
            nanosleep(&ts, NULL);
        }
        int len = make_request(w, k, req, sizeof req);
        double s = now_s();
        int st = send_all(fd, req, (size_t)len) < 0 ? -1 : read_reply(fd, buf, sizeof buf);
        double e = now_s();
        if (st < 0) {
            snprintf(w->err, sizeof w->err, "connection lost");
            w->bad++;
            close(fd);
            if ((fd = dial(o, w->err, sizeof w->err)) < 0)
                return NULL;
            continue;
        }
        record(w, st, e - s);
    }
    close(fd);
    return NULL;
}

typedef struct conn {
    int fd;
    size_t have;
    double sent;
    char buf[16384];
} conn_t;

static int conn_send(worker_t *w, conn_t *c, long k)
{
    char req[2048];
    int len = make_request(w, k, req, sizeof req);
    c->have = 0;
    c->sent = now_s();
    return send_all(c->fd, req, (size_t)len);
}

/* --conns K: K connections, one request in flight on each, driven by poll. */
static void *work_async(void *arg)
{
    worker_t *w = arg;
    const opts_t *o = w->o;
    int k = o->conns;
    conn_t *c = calloc((size_t)k, sizeof *c);
    struct pollfd *p = calloc((size_t)k, sizeof *p);
    long next = 1;
    for (int i = 0; i < k; i++) {
        if ((c[i].fd = dial(o, w->err, sizeof w->err)) < 0 || conn_send(w, &c[i], next++) < 0)
            goto out;
        p[i] = (struct pollfd){.fd = c[i].fd, .events = POLLIN};
    }
    for (double end = now_s() + o->secs; now_s() < end;) {
        if (poll(p, (nfds_t)k, 1000) < 0)
            break;
        for (int i = 0; i < k; i++) {
            if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            conn_t *x = &c[i];
            ssize_t r = recv(x->fd, x->buf + x->have, sizeof x->buf - 1 - x->have, 0);
            int st = 0;
            long n = r > 0 ? reply_complete(x->buf, x->have += (size_t)r, &st) : -1;
            if (n < 0 || (n == 0 && x->have >= sizeof x->buf - 1)) {
                snprintf(w->err, sizeof w->err, "connection lost or reply unframed");
                w->bad++;
                goto out;
            }
            if (n > 0) {
                record(w, st, now_s() - x->sent);
                if (conn_send(w, x, next++) < 0)
                    goto out;
            }
        }
    }
out:
    for (int i = 0; i < k; i++)
        if (c[i].fd > 0)
            close(c[i].fd);
    free(c);
    free(p);
    return NULL;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int usage(int rc)
{
    fprintf(rc ? stderr : stdout,
            "usage: api_bench --url http://HOST:PORT --op submit|get|list [--threads N] [--secs S]\n"
            "                 [--rate R] [--prefix P] [--ids N] [--get-prefix P] [--plain]\n"
            "                 [--list-query Q] [--conns K]\n"
            "       api_bench --unix SOCKET --op rsubmit|rget [--threads N] [--secs S] [--conns K]\n"
            "                 [--get-prefix FIRST_JOB_ID] [--ids N]   (slurmrestd, rest_auth/local)\n");
    return rc;
}

static int parse(int argc, char **argv, opts_t *o)
{
    *o = (opts_t){.op = "get", .prefix = "b", .get_prefix = "r", .list_query = "limit=50",
                  .threads = 4, .ids = 1000, .secs = 10};
    const char *url = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            exit(usage(0));
        if (!strcmp(a, "--plain")) {
            o->plain = 1;
            continue;
        }
        if (!v)
            return -1;
        i++;
        if (!strcmp(a, "--url")) url = v;
        else if (!strcmp(a, "--op")) o->op = v;
        else if (!strcmp(a, "--threads")) o->threads = atoi(v);
        else if (!strcmp(a, "--secs")) o->secs = atof(v);
        else if (!strcmp(a, "--rate")) o->rate = atof(v);
        else if (!strcmp(a, "--prefix")) o->prefix = v;
        else if (!strcmp(a, "--ids")) o->ids = atoi(v);
        else if (!strcmp(a, "--get-prefix")) o->get_prefix = v;
        else if (!strcmp(a, "--list-query")) o->list_query = v;
        else if (!strcmp(a, "--conns")) o->conns = atoi(v);
        else if (!strcmp(a, "--unix")) snprintf(o->unix_path, sizeof o->unix_path, "%s", v);
        else return -1;
    }
    if (o->unix_path[0] && !url)
        snprintf(o->host, sizeof o->host, "localhost");
    else if (!url || sscanf(url, "http://%255[^:/]:%15[0-9]", o->host, o->port) != 2)
        return -1;
    if (o->threads < 1 || o->threads > 256 || o->secs <= 0 || o->ids < 1 || o->conns < 0 ||
        o->conns > 1024 || (o->conns > 1 && o->rate > 0) ||
        (strcmp(o->op, "submit") && strcmp(o->op, "get") && strcmp(o->op, "list") &&
         strcmp(o->op, "rsubmit") && strcmp(o->op, "rget")))
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    opts_t o;
    if (parse(argc, argv, &o) < 0)
        return usage(2);
    worker_t *w = calloc((size_t)o.threads, sizeof *w);
    pthread_t *th = calloc((size_t)o.threads, sizeof *th);
    double t0 = now_s();
    for (int i = 0; i < o.threads; i++) {
        w[i] = (worker_t){.o = &o, .id = i + 1};
        pthread_create(&th[i], NULL, o.conns > 1 ? work_async : work, &w[i]);
    }
    size_t n = 0;
    long ok = 0, bad = 0;
    for (int i = 0; i < o.threads; i++) {
        pthread_join(th[i], NULL);
        n += w[i].n;
        ok += w[i].ok;
        bad += w[i].bad;
    }
    double secs = now_s() - t0;
    double *all = malloc((n ? n : 1) * sizeof *all);
    size_t k = 0;
    for (int i = 0; i < o.threads; i++) {
        memcpy(all + k, w[i].lat, w[i].n * sizeof *all);
        k += w[i].n;
        if (w[i].err[0] && (!ok || w[i].bad))
            fprintf(stderr, "api_bench: thread %d: %s\n", w[i].id, w[i].err);
        free(w[i].lat);
    }
    qsort(all, n, sizeof *all, cmp_d);
    double p50 = n ? all[n / 2] : 0, p99 = n ? all[(size_t)((double)(n - 1) * 0.99)] : 0;
    double mx = n ? all[n - 1] : 0;
    printf("%s %d %zu %ld %ld %.2f %.1f %.3f %.3f %.3f\n", o.op, o.threads, n, ok, bad, secs,
           (double)ok / secs, p50 * 1e3, p99 * 1e3, mx * 1e3);
    free(all);
    free(w);
    free(th);
    if (!ok) {
        fprintf(stderr, "api_bench: no request succeeded\n");
        return 1;
    }
    return 0;
}
