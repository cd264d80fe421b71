/* GET /v1/stream: the event log (the store's feed, the rows of /v1/events)
 * as Server-Sent Events (docs/api.md, docs/ui.md).
 *
 * A hub follows the feed for its clients: one thread, started with the
 * first client, wakes every STREAM_PERIOD_MS (and when kicked), takes the
 * daemon lock, reads each client's rows after its cursor from the store
 * (at most STREAM_ROWS a turn), formats them for the client's role and team
 * and appends them to the client's buffer, bounded by its limit. A client
 * still catching up (a Last-Event-ID far behind) waits for room; a client
 * that had caught up and whose buffer cannot take what is new is dropped:
 * its stream ends, the browser reconnects with its Last-Event-ID and catches
 * up from the store. The daemon's loop never waits for a client: the hub's
 * work per turn is bounded, and the connection side only takes the client's
 * own lock.
 *
 * Locks: the daemon's (db_mu, then d->mu: no commit in flight while the
 * feed is read), then the hub's mu, then a client's mu (never the reverse).
 * A client is shared by the hub and the connection (refs); the wake set by
 * an event-loop server is called with the client's lock held. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/internal.h"
#include "util/util.h"

#define STREAM_PERIOD_MS 200
#define STREAM_ROWS 500                    /* rows per client and turn */
#define STREAM_LIMIT_DEFAULT (256u * 1024) /* bytes buffered per client */

typedef struct sclient {
    pthread_mutex_t mu;
    pthread_cond_t cv;   /* wait(): bytes arrived or the stream ended */
    int refs;            /* the hub's and the connection's */
    char *buf;           /* pending bytes buf[off..len) */
    size_t off, len, cap, limit;
    int64_t cursor;      /* last seq queued */
    int live;            /* caught up once: from now on overflowing drops it */
    int ended, dropped, closed;
    int admin;
    char team[TIDE_AUTH_MAX_TEAM + 1];
    double heartbeat_s, last_out; /* the daemon's clock */
    void (*wake)(void *arg);
    void *wake_arg;
    struct sclient *next;
} sclient_t;

typedef struct dstream {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sclient_t *clients;
    pthread_t th;
    int running, stop, kicked;
    size_t limit;
    int64_t head;          /* highest seq known to exist (a lower bound) */
    unsigned long dropped; /* clients dropped for being slow */
    unsigned long served;  /* clients connected */
} dstream_t;

/* ------------------------------------------------------------- clients */

static void client_unref(sclient_t *c)
{
    pthread_mutex_lock(&c->mu);
    int left = --c->refs;
    pthread_mutex_unlock(&c->mu);
    if (left)
        return;
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c->buf);
    free(c);
}

/* Append bytes for the client and wake its connection (c->mu held). */
static void client_put(sclient_t *c, const char *s, size_t n)
{
    if (c->off == c->len)
        c->off = c->len = 0;
    else if (c->off > c->cap / 2) {
        memmove(c->buf, c->buf + c->off, c->len - c->off);
        c->len -= c->off;
        c->off = 0;
    }
    tide_grow((void **)&c->buf, &c->cap, c->len + n + 1, 1);
    memcpy(c->buf + c->len, s, n);
    c->len += n;
    pthread_cond_broadcast(&c->cv);
    if (c->wake)
        c->wake(c->wake_arg);
}

/* End the client's stream (dropped: what is buffered is thrown away). */
static void client_end(sclient_t *c, int dropped)
{
    pthread_mutex_lock(&c->mu);
    c->ended = 1;
    if (dropped) {
        c->dropped = 1;
        c->off = c->len = 0;
    }
    pthread_cond_broadcast(&c->cv);
    if (c->wake)
        c->wake(c->wake_arg);
    pthread_mutex_unlock(&c->mu);
}

static long s_read(void *ctx, char *buf, size_t max)
{
    sclient_t *c = ctx;
    pthread_mutex_lock(&c->mu);
    long n = 0;
    if (c->len > c->off && !c->dropped) {
        size_t k = TIDE_MIN(max, c->len - c->off);
        memcpy(buf, c->buf + c->off, k);
        c->off += k;
        n = (long)k;
    } else if (c->ended) {
        n = -1;
    }
    pthread_mutex_unlock(&c->mu);
    return n;
}

static void s_wait(void *ctx, int timeout_ms)
{
    sclient_t *c = ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&c->mu);
    if (c->len == c->off && !c->ended)
        pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    pthread_mutex_unlock(&c->mu);
}

static void s_set_wake(void *ctx, void (*wake)(void *arg), void *arg)
{
    sclient_t *c = ctx;
    pthread_mutex_lock(&c->mu);
    c->wake = wake;
    c->wake_arg = arg;
    pthread_mutex_unlock(&c->mu);
}

static void s_close(void *ctx)
{
    sclient_t *c = ctx;
    pthread_mutex_lock(&c->mu);
    c->closed = 1;
    c->wake = NULL;
    pthread_mutex_unlock(&c->mu);
    client_unref(c);
}

static const tide_http_stream_ops_t stream_ops = {s_read, s_wait, s_set_wake, s_close};

const tide_http_stream_ops_t *dmn_stream_ops(void) { return &stream_ops; }

/* ------------------------------------------------------------ the feed */

static int probe_cb(void *ctx, const tide_store_feed_row_t *r)
{
    *(int64_t *)ctx = r->seq;
    return 1;
}

/* The first seq after `after`, 0 when none (or on a store error). */
static int64_t next_seq(tide_daemon_t *d, int64_t after)
{
    int64_t seq = 0;
    tide_error_t err = {0};
    if (tide_store_feed(d->st, after, 1, probe_cb, &seq, &err) < 1)
        return 0;
    return seq;
}

/* The highest seq in the feed (lock held): a galloping then binary search
 * with one-row reads from the last known head. */
static int64_t feed_head(tide_daemon_t *d)
{
    int64_t lo = d->stream->head, step = 64, hi;
    int64_t nx = next_seq(d, lo);
    if (!nx)
        return lo;
    lo = nx; /* exists */
    for (;;) {
        if (!next_seq(d, lo + step - 1)) {
            hi = lo + step - 1; /* nothing after hi; lo exists */
            break;
        }
        lo = next_seq(d, lo + step - 1);
        step *= 2;
    }
    while (hi > lo) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        int64_t k = next_seq(d, mid - 1);
        if (k && k <= hi)
            lo = k;
        else
            hi = mid - 1;
    }
    d->stream->head = lo;
    return lo;
}

/* Rows for one client this turn. */
typedef struct fmt_ctx {
    tide_daemon_t *d;
    sclient_t *c;
    char *out;
    size_t n, cap, room;
    int64_t last;
    int overflow, rows;
} fmt_ctx_t;

/* The team of job id (the engine's, else the store's), "" when unknown.
 * Lock held. */
static void job_team(tide_daemon_t *d, const char *id, char *team, size_t n)
{
    team[0] = '\0';
    int32_t h = tide_engine_job_find(d->e, id);
    tide_job_info_t ji;
    if (h >= 0 && tide_engine_job(d->e, h, &ji) == 0 && ji.spec->team) {
        snprintf(team, n, "%s", ji.spec->team);
        return;
    }
    tide_store_job_t row;
    tide_error_t err = {0};
    if (tide_store_job_get(d->st, id, &row, &err) == 0) {
        snprintf(team, n, "%s", row.spec.team ? row.spec.team : "");
        tide_store_job_free(&row);
    }
}

/* One feed row as the client may see it: a row naming a job of another
 * team keeps its team and loses the job's id (viewers see other teams as
 * counts). */
char *dmn_stream_row(tide_daemon_t *d, const tide_store_feed_row_t *r, int admin,
                     const char *team)
{
    json_t *o = api_feed_row(r);
    if (r->job_id) {
        char jt[TIDE_AUTH_MAX_TEAM + 1];
        job_team(d, r->job_id, jt, sizeof jt);
        api_set(o, "team", jt[0] ? json_string(jt) : json_null());
        if (!admin && strcmp(jt, team))
            api_set(o, "job", json_null());
    }
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    json_decref(o);
    return s;
}

static int fmt_one(void *ctx, const tide_store_feed_row_t *r)
{
    fmt_ctx_t *f = ctx;
    char *js = dmn_stream_row(f->d, r, f->c->admin, f->c->team);
    if (!js)
        return 0;
    char head[48];
    int hl = snprintf(head, sizeof head, "id: %lld\ndata: ", (long long)r->seq);
    size_t need = (size_t)hl + strlen(js) + 2;
    if (f->n + need > f->room) {
        free(js);
        f->overflow = 1;
        return 1;
    }
    tide_grow((void **)&f->out, &f->cap, f->n + need + 1, 1);
    memcpy(f->out + f->n, head, (size_t)hl);
    memcpy(f->out + f->n + hl, js, strlen(js));
    memcpy(f->out + f->n + need - 2, "\n\n", 2);
    f->n += need;
    f->last = r->seq;
    f->rows++;
    free(js);
    if (r->seq > f->d->stream->head)
        f->d->stream->head = r->seq;
    return 0;
}

/* Serve one client (d->mu and the hub's mu held). */
static void serve_client(tide_daemon_t *d, sclient_t *c, double now)
{
    pthread_mutex_lock(&c->mu);
    size_t pending = c->len - c->off;
    int64_t cursor = c->cursor;
    int live = c->live, gone = c->ended || c->closed;
    pthread_mutex_unlock(&c->mu);
    if (gone)
        return;
    fmt_ctx_t f = {.d = d, .c = c, .room = c->limit > pending ? c->limit - pending : 0,
                   .last = cursor};
    tide_error_t err = {0};
    int n = tide_store_feed(d->st, cursor, STREAM_ROWS, fmt_one, &f, &err);
    if (n < 0) {
        free(f.out);
        return; /* a store error: try again next turn */
    }
    if (f.overflow && live) {
        free(f.out);
        d->stream->dropped++;
        client_end(c, 1);
        return;
    }
    pthread_mutex_lock(&c->mu);
    if (f.n) {
        client_put(c, f.out, f.n);
        c->cursor = f.last;
        c->last_out = now;
    } else if (now - c->last_out >= c->heartbeat_s) {
        char hb[64];
        int k = snprintf(hb, sizeof hb, ": heartbeat %lld\n\n", (long long)d->now);
        client_put(c, hb, (size_t)k);
        c->last_out = now;
    }
    if (!f.overflow && n < STREAM_ROWS)
        c->live = 1;
    pthread_mutex_unlock(&c->mu);
    free(f.out);
}

/* ------------------------------------------------------------------ hub */

int dmn_stream_pump(tide_daemon_t *d)
{
    dstream_t *h = d->stream;
    if (!h)
        return 0;
    double now = d->clock(d->clock_ctx);
    int served = 0;
    pthread_mutex_lock(&h->mu);
    for (sclient_t **pp = &h->clients; *pp;) {
        sclient_t *c = *pp;
        pthread_mutex_lock(&c->mu);
        int closed = c->closed;
        pthread_mutex_unlock(&c->mu);
        if (closed) {
            *pp = c->next;
            client_unref(c);
            continue;
        }
        serve_client(d, c, now);
        served++;
        pp = &c->next;
    }
    pthread_mutex_unlock(&h->mu);
    return served;
}

static void *hub_main(void *arg)
{
    tide_daemon_t *d = arg;
    dstream_t *h = d->stream;
    pthread_mutex_lock(&h->mu);
    while (!h->stop) {
        if (!h->kicked) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_nsec += STREAM_PERIOD_MS * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&h->cv, &h->mu, &ts);
        }
        h->kicked = 0;
        if (h->stop)
            break;
        pthread_mutex_unlock(&h->mu);
        /* both locks: the feed is read on the write connection, so no
         * group commit may be in flight (its rows are not committed yet) */
        tide_daemon_lock(d);
        if (!d->stop)
            dmn_stream_pump(d);
        tide_daemon_unlock(d);
        pthread_mutex_lock(&h->mu);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

static dstream_t *hub(tide_daemon_t *d)
{
    if (!d->stream) {
        dstream_t *h = tide_xcalloc(1, sizeof *h);
        pthread_mutex_init(&h->mu, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&h->cv, &ca);
        pthread_condattr_destroy(&ca);
        h->limit = STREAM_LIMIT_DEFAULT;
        d->stream = h;
    }
    return d->stream;
}

void dmn_stream_set_limit(tide_daemon_t *d, size_t bytes) { hub(d)->limit = bytes; }

void *dmn_stream_open(tide_daemon_t *d, const tide_principal_t *who, int64_t after, int backlog,
                      double heartbeat_s)
{
    dstream_t *h = hub(d);
    sclient_t *c = tide_xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    c->refs = 2;
    c->admin = who->role == TIDE_ROLE_ADMIN;
    snprintf(c->team, sizeof c->team, "%s", who->team);
    c->heartbeat_s = heartbeat_s;
    c->last_out = d->clock(d->clock_ctx);
    c->limit = h->limit;
    if (after >= 0) {
        c->cursor = after;
    } else {
        int64_t head = feed_head(d);
        c->cursor = head > backlog ? head - backlog : 0;
    }
    /* a first message: the retry delay and where the stream starts */
    char hello[160];
    int k = snprintf(hello, sizeof hello,
                     "retry: 2000\nevent: hello\ndata: {\"after\":%lld,\"now_s\":%lld}\n\n",
                     (long long)c->cursor, (long long)d->now);
    client_put(c, hello, (size_t)k);
    pthread_mutex_lock(&h->mu);
    c->next = h->clients;
    h->clients = c;
    h->served++;
    h->kicked = 1;
    pthread_cond_signal(&h->cv);
    if (!h->running && pthread_create(&h->th, NULL, hub_main, d) == 0)
        h->running = 1;
    pthread_mutex_unlock(&h->mu);
    return c;
}

void dmn_stream_stop(tide_daemon_t *d)
{
    dstream_t *h = d->stream;
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    h->stop = 1;
    pthread_cond_signal(&h->cv);
    for (sclient_t *c = h->clients; c; c = c->next)
        client_end(c, 0);
    pthread_mutex_unlock(&h->mu);
}

void dmn_stream_free(tide_daemon_t *d)
{
    dstream_t *h = d->stream;
    if (!h)
        return;
    dmn_stream_stop(d);
    if (h->running)
        pthread_join(h->th, NULL);
    while (h->clients) {
        sclient_t *c = h->clients;
        h->clients = c->next;
        client_unref(c);
    }
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    free(h);
    d->stream = NULL;
}

void dmn_stream_counts(tide_daemon_t *d, int *clients, unsigned long *served,
                       unsigned long *dropped)
{
    *clients = 0;
    *served = *dropped = 0;
    dstream_t *h = d->stream;
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    for (sclient_t *c = h->clients; c; c = c->next)
        (*clients)++;
    *served = h->served;
    *dropped = h->dropped;
    pthread_mutex_unlock(&h->mu);
}
