/* The trace-replay driver: one engine and one simulated world per policy,
 * stepped in virtual time; outputs timeline.csv, events.csv, summary.json and
 * a table. No look-ahead: an input is fed to the engine only at its time. */
#include "sim/pipesim.h"
#include "sim/sim.h"

#include <errno.h>
#include <stddef.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "formats/csv.h"
#include "formats/json.h"
#include "formats/usage.h"
#include "world/latency.h"
#include "world/world.h"
#include "util/fs.h"
#include "util/util.h"

#define DAY_S 86400
#define POP_CHUNK 256
#define MAX_PASSES 100000 /* steps at one instant before we call it a livelock */
/* States in timeline.csv and summary.json: a replay has no foreign jobs
 * (TIDE_S_FOREIGN is for a daemon sharing its nodes with other schedulers). */
#define SIM_STATES (TIDE_S_IDLE + 1)

static const char *const TIMELINE_HEADER_FIXED =
    "policy,time_s,serving,warming,training,checkpointing,restoring,lost,idle,"
    "inference_gpus,p1_gpus,p2_gpus,p3_gpus,demand_rps,ready_rps,queue_jobs,queue_gpus,"
    "running_jobs,leased_gpus,tier_a_gpus,storage_gbps";
static const char *const EVENTS_HEADER =
    "policy,time_s,kind,job,service,replica,lease,gpus,width,reason,deadline_s,value\n";

/* ------------------------------------------------------------ small helpers */

static double now_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static FILE *open_out(const char *dir, const char *name, char *path, size_t pathn,
                      tide_error_t *err)
{
    snprintf(path, pathn, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        tide_errf(err, TIDE_EIO, "cannot write %s: %s", path, strerror(errno));
    return f;
}

/* Close f; a write that failed before (ferror) or now is an error naming
 * path and saved (the errno of an earlier failed write, made on another
 * thread), else errno. */
static int close_out_saved(FILE *f, const char *path, int saved, tide_error_t *err)
{
    if (!f)
        return 0;
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return tide_errf(err, TIDE_EIO, "cannot write %s: %s", path,
                         strerror(saved ? saved : errno));
    return 0;
}

static int close_out(FILE *f, const char *path, tide_error_t *err)
{
    return close_out_saved(f, path, 0, err);
}

/* Stable order of n items by key: idx[] gets 0..n-1 sorted by (key, index). */
typedef struct keyed {
    tide_time_t key;
    size_t i;
} keyed_t;

static int keyed_cmp(const void *a, const void *b)
{
    const keyed_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static size_t *stable_order(size_t n, const void *base, size_t size, size_t key_off)
{
    size_t *idx = tide_xmalloc((n ? n : 1) * sizeof *idx);
    tide_time_t prev = 0;
    size_t sorted = 0; /* already in key order (the readers sort jobs by submit time): 0..n-1 */
    for (; sorted < n; sorted++) {
        tide_time_t key;
        memcpy(&key, (const char *)base + sorted * size + key_off, sizeof key);
        if (sorted && key < prev)
            break;
        prev = key;
        idx[sorted] = sorted;
    }
    if (sorted == n)
        return idx;
    keyed_t *k = tide_xmalloc(n * sizeof *k);
    for (size_t i = 0; i < n; i++) {
        const char *item = (const char *)base + i * size;
        memcpy(&k[i].key, item + key_off, sizeof k[i].key);
        k[i].i = i;
    }
    qsort(k, n, sizeof *k, keyed_cmp);
    for (size_t i = 0; i < n; i++)
        idx[i] = k[i].i;
    free(k);
    return idx;
}

static int policy_known(const char *name)
{
    for (const char *const *p = tide_policy_names(); *p; p++)
        if (!strcmp(*p, name))
            return 1;
    return 0;
}

/* ---------------------------------------------------------- events.csv */

enum { F_GPUS = 1, F_WIDTH = 2, F_DEADLINE = 4, F_VALUE = 8 };

/* Which numeric columns mean something for each action kind. */
static const unsigned act_fields[TIDE_ACT_KIND_COUNT] = {
    [TIDE_ACT_JOB_START] = F_GPUS | F_WIDTH,
    [TIDE_ACT_JOB_CKPT] = F_DEADLINE,
    [TIDE_ACT_JOB_RESIZE] = F_GPUS | F_WIDTH,
    [TIDE_ACT_JOB_STOP] = F_VALUE,
    [TIDE_ACT_REPLICA_START] = F_GPUS,
    [TIDE_ACT_REPLICA_STOP] = 0,
    [TIDE_ACT_LEASE_GRANT] = F_GPUS | F_DEADLINE,
    [TIDE_ACT_LEASE_RENEW] = F_DEADLINE,
    [TIDE_ACT_LEASE_RETURN] = F_GPUS,
    [TIDE_ACT_POWER_CAP] = F_GPUS | F_VALUE,
};

/* One events.csv row, as the simulation hands it to the formatter: its time,
 * names (NULL = empty) and the numbers that are set (has: E_* bits; the
 * others are empty). The value column is value with 2 decimals (E_VALUE) or
 * value_i (E_VALUE_INT: a submission's duration). kind and reason must be
 * static strings (names from tables, literals): the formatter keeps them by
 * address. job and service are read when the row is formatted, possibly on
 * the writer thread and as late as evout_close: they must stay valid and
 * unchanged until then (the engine's job ids and service names, the
 * workload's and the options' strings all do). */
enum { E_REPLICA = 1, E_LEASE = 2, E_GPUS = 4, E_WIDTH = 8, E_DEADLINE = 16, E_VALUE = 32,
       E_VALUE_INT = 64 };
typedef struct evrow {
    const char *kind, *job, *service, *reason;
    tide_time_t t;
    long long deadline;
    union {
        double value;
        long long value_i;
    };
    int32_t replica, lease, gpus, width;
    unsigned has;
} evrow_t;

static const char *job_id(const tide_engine_t *e, int32_t job)
{
    tide_job_info_t info;
    if (job < 0 || tide_engine_job(e, job, &info) != 0 || !info.spec)
        return NULL;
    return info.spec->id;
}

static const char *service_name(const tide_engine_t *e, int32_t s)
{
    const tide_service_spec_t *sp = s >= 0 ? tide_engine_service(e, s) : NULL;
    return sp ? sp->name : NULL;
}

/* The text side of events.csv: rows are formatted straight into one buffer
 * and written with fwrite in blocks of EV_BLOCK bytes (tide_csv_row_* text,
 * byte for byte: fields quoted as tide_csv_row_str quotes, %lld numbers, %.2f
 * values). One thread at a time uses it: the writer thread while one runs
 * (evout_t), else the simulation thread. */
#define EV_BLOCK 65536
typedef struct evfmt {
    FILE *f;
    char *buf;
    size_t len, cap;
    char *pre;               /* "policy,time_s," of the last row's time */
    size_t pre_n, pre_t_at;  /* its length, where time_s starts */
    tide_time_t pre_t;       /* the time in pre (-1: none yet) */
    /* kind and reason names that need no quotes, by address (they are static
     * strings: names from tables and literals), direct-mapped */
    const char *names[32];
    int werr;                /* errno of the first failed write (0: none) */
} evfmt_t;

/* Bytes that end a plain field (tide_csv_row_str quotes a field with any). */
static const unsigned char ev_stop[256] = {[','] = 1, ['"'] = 1, ['\r'] = 1, ['\n'] = 1};

/* Write the buffered text to the file (errors stay in ferror(f); the first
 * one's errno in werr: errno is per thread). */
static void evfmt_flush(evfmt_t *b)
{
    if (b->len && fwrite(b->buf, 1, b->len, b->f) != b->len && !b->werr)
        b->werr = errno ? errno : EIO;
    b->len = 0;
}

/* Room for n more bytes: flush a full block, grow for a long row. */
static inline char *evfmt_room(evfmt_t *b, size_t n)
{
    if (b->len + n > b->cap) {
        evfmt_flush(b);
        if (n > b->cap) {
            b->cap = n;
            b->buf = tide_xrealloc(b->buf, b->cap);
        }
    }
    return b->buf + b->len;
}

/* Append the n bytes of s as one CSV field (quoted as tide_csv_row_str
 * quotes); room for 2n + 2 bytes is there. */
static void evfmt_text(evfmt_t *b, const char *s, size_t n)
{
    char *d = b->buf + b->len;
    unsigned q = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        q |= ev_stop[c];
        d[i] = (char)c;
    }
    if (!q && !(n > 0 && (s[0] == '#' || s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' ||
                          s[n - 1] == '\t'))) {
        b->len += n;
        return;
    }
    size_t k = 0; /* quoted: every '"' doubled */
    d[k++] = '"';
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            d[k++] = '"';
        d[k++] = s[i];
    }
    d[k++] = '"';
    b->len += k;
}

/* Append name (a static string: its address keys the cache, its text never
 * changes; NULL = empty) as one CSV field; room for 2 strlen(name) + 2 bytes
 * is there. */
static inline void evfmt_name(evfmt_t *b, const char *name, size_t n)
{
    if (!name)
        return;
    size_t h = (size_t)((uintptr_t)name >> 3 & 31);
    if (b->names[h] == name) {
        memcpy(b->buf + b->len, name, n);
        b->len += n;
        return;
    }
    size_t at = b->len;
    evfmt_text(b, name, n);
    if (b->len - at == n) /* written as it is: no quotes */
        b->names[h] = name;
}

/* "00" .. "99". */
static const char ev_pairs[201] = "00010203040506070809101112131415161718192021222324252627282930"
                                  "31323334353637383940414243444546474849505152535455565758596061"
                                  "62636465666768697071727374757677787980818283848586878889909192"
                                  "93949596979899";

/* Write v as %lld does at d (room for 21 bytes); returns its length. */
static inline size_t ev_fmt_i64(char *d, long long v)
{
    if (v >= 0 && v < 100) {
        if (v < 10) {
            d[0] = (char)('0' + v);
            return 1;
        }
        d[0] = ev_pairs[2 * v];
        d[1] = ev_pairs[2 * v + 1];
        return 2;
    }
    static const unsigned long long p10[20] = {
        1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
        100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL,
        10000000000000ULL, 100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL,
        100000000000000000ULL, 1000000000000000000ULL, 10000000000000000000ULL};
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    int bits = 64 - __builtin_clzll(u | 1), nd = bits * 1233 >> 12; /* as util.c's dec_digits */
    nd += (u | 1) >= p10[nd];
    size_t n = (size_t)nd + (v < 0);
    if (v < 0)
        d[0] = '-';
    char *p = d + n;
    while (u >= 100) {
        unsigned r = (unsigned)(u % 100);
        u /= 100;
        p -= 2;
        p[0] = ev_pairs[2 * r];
        p[1] = ev_pairs[2 * r + 1];
    }
    if (u >= 10) {
        p[-2] = ev_pairs[2 * u];
        p[-1] = ev_pairs[2 * u + 1];
    } else {
        p[-1] = (char)('0' + u);
    }
    return n;
}

/* Append v as %lld does (room is there). */
static inline void evfmt_i64(evfmt_t *b, long long v) { b->len += ev_fmt_i64(b->buf + b->len, v); }

/* Append x as %.2f does (an integral value without the general path;
 * room for EV_FIXED bytes is there). */
#define EV_FIXED 330 /* as tide_csv_row_fixed: %.*f of the largest doubles */
static void evfmt_fixed2(evfmt_t *b, double x)
{
    if (x >= 0 && x < 1e15 && !signbit(x) && x == (double)(long long)x) {
        evfmt_i64(b, (long long)x);
        memcpy(b->buf + b->len, ".00", 3);
        b->len += 3;
        return;
    }
    int n = tide_fmt_fixed(b->buf + b->len, EV_FIXED, x, 2);
    b->len += n > 0 ? (size_t)n : 0;
}

/* Set up b to write policy's rows to f (pre gets the policy field and ','). */
static void evfmt_open(evfmt_t *b, FILE *f, const char *policy)
{
    memset(b, 0, sizeof *b);
    b->f = f;
    size_t n = strlen(policy);
    b->cap = EV_BLOCK > 2 * n + 2 ? EV_BLOCK : 2 * n + 2;
    b->buf = tide_xmalloc(b->cap);
    evfmt_text(b, policy, n);
    b->buf[b->len++] = ',';
    b->pre_t_at = b->len;
    b->pre = tide_xmalloc(b->len + 32);
    memcpy(b->pre, b->buf, b->len);
    b->pre_n = b->len;
    b->pre_t = -1;
    b->len = 0;
}

/* A number column: ',' and the value if its bit is set, else ',' (room is there). */
static inline void ev_num(evfmt_t *b, const evrow_t *r, unsigned bit, long long v)
{
    b->buf[b->len++] = ',';
    if (r->has & bit)
        evfmt_i64(b, v);
}

/* Format one row (flushing a full block first). */
static void evrow_fmt(evfmt_t *b, const evrow_t *r)
{
    if (r->t != b->pre_t) {
        size_t n = b->pre_t_at;
        n += ev_fmt_i64(b->pre + n, (long long)r->t);
        b->pre[n++] = ',';
        b->pre_n = n;
        b->pre_t = r->t;
    }
    size_t nk = r->kind ? strlen(r->kind) : 0, nj = r->job ? strlen(r->job) : 0;
    size_t ns = r->service ? strlen(r->service) : 0, nr = r->reason ? strlen(r->reason) : 0;
    /* the whole row: prefix, four quoted strings, six numbers, the value,
     * the commas and '\n' */
    evfmt_room(b, b->pre_n + 2 * (nk + nj + ns + nr) + 8 + 6 * 24 + EV_FIXED + 16);
    memcpy(b->buf + b->len, b->pre, b->pre_n);
    b->len += b->pre_n;
    evfmt_name(b, r->kind, nk);
    b->buf[b->len++] = ',';
    evfmt_text(b, r->job ? r->job : "", nj);
    b->buf[b->len++] = ',';
    evfmt_text(b, r->service ? r->service : "", ns);
    ev_num(b, r, E_REPLICA, r->replica);
    ev_num(b, r, E_LEASE, r->lease);
    ev_num(b, r, E_GPUS, r->gpus);
    ev_num(b, r, E_WIDTH, r->width);
    b->buf[b->len++] = ',';
    evfmt_name(b, r->reason, nr);
    ev_num(b, r, E_DEADLINE, r->deadline);
    b->buf[b->len++] = ',';
    if (r->has & E_VALUE_INT)
        evfmt_i64(b, r->value_i);
    else if (r->has & E_VALUE)
        evfmt_fixed2(b, r->value);
    b->buf[b->len++] = '\n';
}

/* Format n rows. */
static void evfmt_rows(evfmt_t *b, const evrow_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        evrow_fmt(b, &v[i]);
}

/* events.csv from the simulation's side. Rows are appended as evrow_t to a
 * chunk of EVQ_ROWS; a full chunk goes to a writer thread through a ring of
 * EVQ_SLOTS chunks (bounded: the simulation waits when the writer is that
 * far behind; chunks are allocated as it falls behind: a ring of 8 could
 * make the simulation wait for the writer's turn on a loaded machine), which
 * formats and writes it (evfmt_t), so the text, the
 * strings' reads and the write calls leave the simulation thread. The thread
 * starts when the first chunk fills: a short run, or one without events.csv,
 * never starts it; without it (and with may_thread 0) the chunks are
 * formatted in place. Rows are written in the order they were added, so the
 * file is the same either way; write errors are in ferror(f) and fmt.werr
 * (read after evout_close). */
#define EVQ_ROWS 2048
#define EVQ_SLOTS 64 /* 10 MiB of rows at most, allocated as the writer falls behind */
typedef struct evout {
    FILE *f;                    /* NULL: events.csv not asked for (--outputs) */
    evfmt_t fmt;                /* the writer thread's while it runs */
    evrow_t *slot[EVQ_SLOTS];   /* chunks (NULL: not needed yet) */
    size_t n_in[EVQ_SLOTS];     /* rows of each handed chunk */
    size_t head, tail;          /* chunks written / handed over (tail - head < EVQ_SLOTS
                                   outside evout_hand); head and the handing under mu */
    size_t ncur;                /* rows in slot[tail % EVQ_SLOTS], being filled */
    int may_thread;             /* 0: never start the thread (the caller writes to f too) */
    int threaded, closing;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t more, room;  /* a chunk handed or closing / a chunk written */
} evout_t;

/* The writer thread: format and write the handed chunks in order until
 * closing and none is left. */
static void *evout_writer(void *arg)
{
    evout_t *b = arg;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (b->head == b->tail && !b->closing)
            pthread_cond_wait(&b->more, &b->mu);
        if (b->head == b->tail)
            break;
        size_t k = b->head % EVQ_SLOTS, n = b->n_in[k];
        pthread_mutex_unlock(&b->mu);
        evfmt_rows(&b->fmt, b->slot[k], n);
        evfmt_flush(&b->fmt); /* a handed chunk is in f once it is counted written */
        pthread_mutex_lock(&b->mu);
        b->head++;
        pthread_cond_signal(&b->room);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

/* Whether a writer thread can help: only with a CPU to spare (the 1-minute
 * load average, which counts this run, at least half a CPU below the CPUs
 * online): on a busy machine the thread only takes from the simulation's
 * own share and adds its hand-overs. TIDE_SIM_WRITER=1 (or 0) in the
 * environment starts it (or not) whatever the load. The bytes written are
 * the same either way. */
static int writer_wanted(void)
{
    const char *v = getenv("TIDE_SIM_WRITER");
    if (v && *v)
        return strcmp(v, "0") != 0;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    double load;
    if (n < 2)
        return 0;
    return getloadavg(&load, 1) != 1 || load + 0.5 <= (double)n;
}

/* Start the writer thread; stays without one if it is not wanted or cannot
 * be started. */
static void evout_start(evout_t *b)
{
    if (!writer_wanted())
        goto none;
    if (pthread_mutex_init(&b->mu, NULL) != 0)
        goto none;
    if (pthread_cond_init(&b->more, NULL) != 0)
        goto no_more;
    if (pthread_cond_init(&b->room, NULL) != 0)
        goto no_room;
    if (pthread_create(&b->th, NULL, evout_writer, b) != 0)
        goto no_thread;
    b->threaded = 1;
    return;
no_thread:
    pthread_cond_destroy(&b->room);
no_room:
    pthread_cond_destroy(&b->more);
no_more:
    pthread_mutex_destroy(&b->mu);
none:
    b->may_thread = 0; /* format in place from now on */
}

/* Hand the rows of the chunk being filled to the writer (under mu). */
static void evout_give(evout_t *b)
{
    if (b->ncur) {
        b->n_in[b->tail % EVQ_SLOTS] = b->ncur;
        b->tail++;
        b->ncur = 0;
        pthread_cond_signal(&b->more);
    }
}

/* The chunk to fill next allocated (it is free: the writer reads only the
 * chunks [head, tail)). */
static void evout_slot(evout_t *b)
{
    size_t k = b->tail % EVQ_SLOTS;
    if (!b->slot[k])
        b->slot[k] = tide_xmalloc(EVQ_ROWS * sizeof *b->slot[k]);
}

/* The chunk being filled is full: format it in place, or hand it to the
 * writer (starting it the first time) and wait for a free chunk. */
static void evout_hand(evout_t *b)
{
    if (!b->threaded && b->may_thread)
        evout_start(b);
    if (!b->threaded) {
        evfmt_rows(&b->fmt, b->slot[0], b->ncur);
        b->ncur = 0;
        return;
    }
    pthread_mutex_lock(&b->mu);
    evout_give(b);
    while (b->tail - b->head >= EVQ_SLOTS)
        pthread_cond_wait(&b->room, &b->mu);
    pthread_mutex_unlock(&b->mu);
    evout_slot(b);
}

/* A new row at time t of kind (a static string), the rest empty: fill it in
 * before the next call. b->f must be set. */
static inline evrow_t *evout_add(evout_t *b, tide_time_t t, const char *kind)
{
    if (b->ncur == EVQ_ROWS)
        evout_hand(b);
    evrow_t *r = &b->slot[b->tail % EVQ_SLOTS][b->ncur++];
    memset(r, 0, sizeof *r);
    r->t = t;
    r->kind = kind;
    return r;
}

/* Every row added so far written to f (for whoever else writes to it: the
 * model pipeline). */
static void evout_flush(evout_t *b)
{
    if (!b->f)
        return;
    if (!b->threaded) {
        evfmt_rows(&b->fmt, b->slot[0], b->ncur);
        b->ncur = 0;
        evfmt_flush(&b->fmt);
        return;
    }
    pthread_mutex_lock(&b->mu);
    evout_give(b);
    while (b->head != b->tail)
        pthread_cond_wait(&b->room, &b->mu);
    pthread_mutex_unlock(&b->mu);
    evout_slot(b);
}

/* Set up b for policy's rows to f (NULL: none; nothing is allocated).
 * may_thread 0: never start a writer thread. */
static void evout_open(evout_t *b, FILE *f, const char *policy, int may_thread)
{
    memset(b, 0, sizeof *b);
    b->f = f;
    if (!f)
        return;
    b->may_thread = may_thread;
    evfmt_open(&b->fmt, f, policy);
    b->slot[0] = tide_xmalloc(EVQ_ROWS * sizeof *b->slot[0]);
}

/* Write every row, stop the writer and free b. Returns the errno of the
 * first failed write (0: none; ferror(f) says it too). */
static int evout_close(evout_t *b)
{
    if (!b->f)
        return 0;
    if (b->threaded) {
        pthread_mutex_lock(&b->mu);
        evout_give(b);
        b->closing = 1;
        pthread_cond_signal(&b->more);
        pthread_mutex_unlock(&b->mu);
        pthread_join(b->th, NULL);
        pthread_cond_destroy(&b->room);
        pthread_cond_destroy(&b->more);
        pthread_mutex_destroy(&b->mu);
        b->threaded = 0;
    } else {
        evfmt_rows(&b->fmt, b->slot[0], b->ncur);
    }
    evfmt_flush(&b->fmt);
    int werr = b->fmt.werr;
    free(b->fmt.buf);
    free(b->fmt.pre);
    for (int k = 0; k < EVQ_SLOTS; k++)
        free(b->slot[k]);
    memset(b, 0, sizeof *b);
    return werr;
}

static void write_action(evout_t *f, tide_time_t t, const tide_engine_t *e,
                         const tide_action_t *a)
{
    if (!f->f) /* events.csv not asked for: no names to look up */
        return;
    evrow_t *r = evout_add(f, t, tide_action_name(a->kind));
    unsigned fl = a->kind >= 0 && a->kind < TIDE_ACT_KIND_COUNT ? act_fields[a->kind] : 0;
    r->job = job_id(e, a->job);
    r->service = service_name(e, a->service);
    r->replica = (int32_t)a->replica;
    r->lease = (int32_t)a->lease;
    r->gpus = a->n_gpus;
    r->width = a->width;
    r->deadline = (long long)a->deadline;
    r->value = a->value;
    r->has = (a->replica >= 0 ? E_REPLICA : 0) | (a->lease >= 0 ? E_LEASE : 0) |
             (fl & F_GPUS ? E_GPUS : 0) | (fl & F_WIDTH ? E_WIDTH : 0) |
             (fl & F_VALUE ? E_VALUE : 0);
    if (a->reason != TIDE_R_NONE)
        r->reason = tide_reason_name(a->reason);
    if ((fl & F_DEADLINE) && a->deadline > 0 && a->deadline != TIDE_TIME_NEVER)
        r->has |= E_DEADLINE;
}

/* Facts worth a row: submits, commits, finishes, ready replicas. Returns 1 if written. */
static int write_fact(evout_t *f, tide_time_t t, const tide_engine_t *e,
                      const tide_event_t *ev)
{
    switch (ev->kind) {
    case TIDE_EV_JOB_SUBMIT:
    case TIDE_EV_CKPT_COMMITTED:
    case TIDE_EV_JOB_FINISHED:
    case TIDE_EV_JOB_EXPIRED:
    case TIDE_EV_REPLICA_READY:
        break;
    default:
        return 0;
    }
    if (!f->f) /* events.csv not asked for: count the row, look nothing up */
        return 1;
    evrow_t *r = evout_add(f, t, tide_event_name(ev->kind));
    switch (ev->kind) {
    case TIDE_EV_JOB_SUBMIT:
        r->job = ev->job_spec->id;
        r->gpus = ev->job_spec->gpus;
        r->value_i = (long long)ev->job_spec->duration_s;
        r->has = E_GPUS | E_VALUE_INT;
        break;
    case TIDE_EV_REPLICA_READY:
        r->service = service_name(e, ev->service);
        r->replica = (int32_t)ev->replica;
        r->has = E_REPLICA;
        break;
    default: /* a commit, a finish, an expiry */
        r->job = job_id(e, ev->job);
        r->value = ev->value;
        r->has = E_VALUE;
        break;
    }
    return 1;
}

/* --------------------------------------------------------------- run state */

/* Snapshot of the stats at a timeline boundary. */
typedef struct snap {
    tide_time_t t;
    double state[TIDE_S_COUNT];
    double cls[TIDE_C_COUNT];
    double tier[TIDE_T_COUNT];
    double demand_rps, ready_rps;
    int queue_jobs, queue_gpus, running_jobs;
    double storage_gb;    /* demanded storage GB so far (world), for storage_gbps */
} snap_t;

static void snap_take(snap_t *s, const tide_stats_t *st, tide_time_t t)
{
    memset(s, 0, sizeof *s);
    s->t = t;
    for (int c = 0; c < TIDE_C_COUNT; c++)
        for (int k = 0; k < TIDE_S_COUNT; k++)
            for (int r = 0; r < TIDE_T_COUNT; r++) {
                double v = st->gpu_s[c][k][r];
                s->state[k] += v;
                s->cls[c] += v;
                s->tier[r] += v;
            }
    s->demand_rps = st->demand_rps;
    s->ready_rps = st->ready_rps;
    s->queue_jobs = st->queue_jobs;
    s->queue_gpus = st->queue_gpus;
    s->running_jobs = st->jobs_running;
}

/* One buffered timeline row [t0, t1). */
typedef struct tlrow {
    tide_time_t t0, t1;
    double state[TIDE_S_COUNT];  /* GPU-seconds in the row */
    double cls[TIDE_C_COUNT];
    double leased, tier_a, storage_gb;
    double demand_rps, ready_rps;
    int queue_jobs, queue_gpus, running_jobs;
} tlrow_t;

/* Work thrown away (GPU-seconds) that the engine booked at `booked`, done at
 * about `rate` GPUs up to the job's death at `end`. */
typedef struct loss {
    tide_time_t booked, end;
    double gpu_s, rate;
} loss_t;

typedef struct death {
    int32_t job;
    tide_time_t t;
} death_t;

/* The serving layer while tide is down: replicas keep serving (and warming
 * ones become ready), demand keeps coming; the engine learns of it later. */
typedef struct down_serve {
    int open;                    /* an outage is being measured */
    tide_time_t t;               /* integrated up to */
    double *dem;                 /* per service: demand now (rps) */
    int *ready;                  /* per service: ready replicas */
    unsigned char *rstate;       /* per replica handle: 0 gone, 1 warming, 2 ready */
    size_t nrep;
    size_t seen;                 /* events of r->ev already applied */
    double demanded, served, useful;        /* true figures since the engine's last step */
    double e_demanded, e_served, e_useful;  /* the engine's totals when it went down */
} down_serve_t;

/* What the table needs per policy. */
typedef struct tabrow {
    const char *policy;
    int ok;
    double util, useful, slo, mean_queue_s, lost_h, p99_lead;
    double ttft_p99, tbt_p99, ttft_slo;  /* latency model (all services together) */
    int jobs_done, preemptions, reclaims, late, expired;
    double breach_h;
    char note[256];              /* printed under the table ("" = none) */
    char io[320];                /* the storage line under the table ("" = none) */
} tabrow_t;

/* Fault counters of one policy (summary.json policies.<name>.faults). */
typedef struct fault_stats {
    int bursts, nodes_failed, nodes_recovered, rank_failures, rank_failures_skipped;
    int ctl_outages, jobs_expired;
    tide_time_t ctl_down_s;
    long events_held;
    int domains_failed, partitions;
    double floor_share_min;   /* least share of its floor a service kept through a
                                 rack-fail / power-fail (-1: none injected) */
    long double_starts;       /* JOB_START of a job still running (must stay 0) */
} fault_stats_t;

/* A node failed by a node-fail item (recovered with it). */
typedef struct failed_node {
    int fault, node;
} failed_node_t;

typedef struct run {
    const tide_sim_opts_t *o;
    const char *policy;
    tide_time_t horizon, interval;
    const size_t *job_order, *dem_order;
    FILE *tl, *evf;
    evout_t eo;                  /* events.csv rows (evf) */
    int *ev_werr;                /* errno of the first failed write to evf (0: none) */
    tide_engine_t *e;
    tide_world_t *w;
    tide_actions_t acts;
    tide_event_t *ev;
    size_t nev, cap_ev;
    size_t ji, di;               /* next job / demand point (in order) */
    long steps, input_events, rows;
    snap_t prev;
    int show_progress;
    double wall0;
    /* faults */
    const tide_schedule_t *sched;
    size_t fi;                   /* next firing */
    double *base_rps;            /* per service: the last demand point's rps (-1 = none) */
    int *burst_on;               /* per item: burst active */
    unsigned char *node_up;      /* per node */
    failed_node_t *failed;
    size_t nfailed, capfailed;
    int down;                    /* tide is down: no steps, events are held */
    tide_time_t obs_wake;        /* the observer wants a step then (TIDE_TIME_NEVER: no) */
    tide_time_t down_at;
    snap_t down_snap;            /* the engine's figures when it went down */
    double down_lost_gpu_s;
    snap_t *pending;             /* timeline boundaries passed while down */
    size_t npending, cappending;
    fault_stats_t fs;
    tide_usage_t *usage;         /* usage.csv writer */
    /* timeline rows of this policy, written when it ends (losses are booked
     * back into the rows where the thrown-away work was done) */
    tlrow_t *rows_v;
    size_t nrows, caprows;
    /* forecast columns of the buffered rows: FC_COLS per service per row, and
     * the values at the start of the row being built (the engine's forecast
     * at the previous boundary) */
    double *fc_rows, *fc_prev;
    size_t capfc;
    loss_t *loss;
    size_t nloss, caploss;
    death_t *deaths;             /* jobs that died while tide was down */
    size_t ndeaths, capdeaths;
    /* serving while tide is down: the serving layer keeps going */
    down_serve_t ds;
    double fix_demanded, fix_served, fix_useful; /* true minus the engine's books */
    tide_pipesim_t *ps;          /* the model pipeline (NULL = none) */
    tide_latency_t *lat;         /* latency as users feel it (world/latency.h) */
    /* power by domain: the highest planned draw of each bucket of pw_step
     * seconds (pw_nb buckets x pw_nd domains) */
    double *pw_max, *pw_now;
    size_t pw_nb, pw_cap;
    int pw_nd;
    int pw_budgeted;             /* some domain has a budget (fixed for the run) */
    tide_time_t pw_step;
} run_t;

static void count_double_starts(run_t *r);

static void push_event(run_t *r, tide_event_t ev) { TIDE_PUSH(r->ev, r->nev, r->cap_ev, ev); }

static tide_event_t blank_event(int kind)
{
    return (tide_event_t){.kind = kind, .job = -1, .service = -1, .replica = -1, .node = -1};
}

/* Demand multiplier of service s from the bursts active now. */
static double burst_factor(const run_t *r, int s)
{
    double f = 1;
    const tide_inject_t *inj = r->o->inject;
    for (size_t i = 0; inj && i < inj->n; i++) {
        const tide_fault_t *b = &inj->v[i];
        if (!r->burst_on[i] || b->kind != TIDE_FAULT_BURST)
            continue;
        if (!b->target || !strcmp(b->target, r->o->services[s].name))
            f *= b->factor;
    }
    return f;
}

/* Append every input due at <= t to r->ev (world events, then demand points,
 * then submissions). */
static void gather(run_t *r, tide_time_t t)
{
    const tide_sim_opts_t *o = r->o;
    for (;;) {
        size_t k = r->nev;
        tide_grow((void **)&r->ev, &r->cap_ev, k + POP_CHUNK, sizeof *r->ev);
        size_t got = tide_world_pop(r->w, t, r->ev + k, POP_CHUNK);
        r->nev += got;
        if (got < POP_CHUNK)
            break;
    }
    for (; r->di < o->n_demand && o->demand[r->dem_order[r->di]].t <= t; r->di++) {
        const tide_demand_point_t *d = &o->demand[r->dem_order[r->di]];
        tide_event_t ev = blank_event(TIDE_EV_DEMAND);
        ev.service = d->service;
        ev.value = d->rps;
        if (r->base_rps) {
            r->base_rps[d->service] = d->rps;
            ev.value = d->rps * burst_factor(r, d->service);
        }
        push_event(r, ev);
    }
    for (; r->ji < o->n_jobs && o->jobs[r->job_order[r->ji]].submit_s <= t; r->ji++) {
        tide_event_t ev = blank_event(TIDE_EV_JOB_SUBMIT);
        ev.job_spec = &o->jobs[r->job_order[r->ji]];
        push_event(r, ev);
    }
    if (r->ps)
        tide_pipesim_events(r->ps, t, &r->ev, &r->nev, &r->cap_ev);
}

/* When job died: at t, or earlier while tide was down. */
static tide_time_t death_time(const run_t *r, int32_t job, tide_time_t t)
{
    for (size_t i = 0; i < r->ndeaths; i++)
        if (r->deaths[i].job == job)
            return r->deaths[i].t;
    return t;
}

static void note_death(run_t *r, int32_t job, tide_time_t t)
{
    if (death_time(r, job, -1) >= 0)
        return; /* the first death counts */
    death_t d = {.job = job, .t = t};
    TIDE_PUSH(r->deaths, r->ndeaths, r->capdeaths, d);
}

/* The losses the engine booked in the step at t (for rebook_losses): each
 * stopped job's work since its commit, at its full width up to its death,
 * scaled to what the engine actually moved to lost. */
static void note_losses(run_t *r, tide_time_t t, double lost_delta)
{
    double sum = 0;
    size_t first = r->nloss;
    for (size_t i = 0; i < r->acts.n; i++) {
        const tide_action_t *a = &r->acts.v[i];
        tide_job_info_t ji;
        if (a->kind != TIDE_ACT_JOB_STOP || !(a->value > 0) ||
            tide_engine_job(r->e, a->job, &ji) != 0 || !ji.spec)
            continue;
        loss_t l = {.booked = t, .end = death_time(r, a->job, t),
                    .gpu_s = a->value * ji.spec->gpus, .rate = ji.spec->gpus};
        sum += l.gpu_s;
        TIDE_PUSH(r->loss, r->nloss, r->caploss, l);
    }
    double f = sum > 0 ? lost_delta / sum : 0;
    for (size_t i = first; i < r->nloss; i++)
        r->loss[i].gpu_s *= f;
    r->ndeaths = 0;
}

/* One engine step at t with the gathered events; log and enact. */
#define PW_POINTS 500 /* buckets of the power series at most */

/* The planned draw of every power domain after a step, into its bucket. */
static void power_sample(run_t *r, tide_time_t t)
{
    if (r->pw_nd <= 0)
        return;
    if (!r->pw_step) {
        r->pw_step = r->horizon / PW_POINTS + 1;
        if (r->pw_step < r->interval)
            r->pw_step = r->interval;
    }
    size_t b = t > 0 ? (size_t)(t / r->pw_step) : 0;
    /* without budgets one sample per bucket (the series is for the chart);
     * with them every step (what the budget is held to) */
    if (b < r->pw_nb && !r->pw_budgeted)
        return;
    if (b >= r->pw_nb) {
        size_t old = r->pw_nb;
        tide_grow((void **)&r->pw_max, &r->pw_cap, (b + 1) * (size_t)r->pw_nd, sizeof *r->pw_max);
        for (size_t k = old * (size_t)r->pw_nd; k < (b + 1) * (size_t)r->pw_nd; k++)
            r->pw_max[k] = -1;
        r->pw_nb = b + 1;
    }
    tide_engine_power_all(r->e, r->pw_now, r->pw_nd);
    double *row = r->pw_max + b * (size_t)r->pw_nd;
    for (int d = 0; d < r->pw_nd; d++)
        if (r->pw_now[d] > row[d])
            row[d] = r->pw_now[d];
}

static int step(run_t *r, tide_time_t t, tide_error_t *err)
{
    double lost_before = tide_engine_lost_gpu_s(r->e);
    if (tide_engine_step(r->e, t, r->ev, r->nev, &r->acts, err) != 0)
        return tide_err_prefix(err, "policy %s: step at t=%lld: ", r->policy, (long long)t);
    double lost_after = tide_engine_lost_gpu_s(r->e);
    if (lost_after > lost_before)
        note_losses(r, t, lost_after - lost_before);
    else
        r->ndeaths = 0;
    r->steps++;
    r->input_events += (long)r->nev;
    power_sample(r, t);
    if (r->o->check && tide_engine_check(r->e, err) != 0) {
        if (err)
            err->code = TIDE_ESTATE;
        return tide_err_prefix(err, "policy %s: invariant violated at t=%lld: ", r->policy,
                               (long long)t);
    }
    for (size_t i = 0; i < r->nev; i++)
        r->rows += write_fact(&r->eo, t, r->e, &r->ev[i]);
    for (size_t i = 0; i < r->acts.n; i++)
        write_action(&r->eo, t, r->e, &r->acts.v[i]);
    r->rows += (long)r->acts.n;
    if (tide_inject_storage_gbps(r->o->inject) > 0) {
        /* checkpoint sizes of the jobs just submitted */
        for (size_t i = 0; i < r->nev; i++) {
            const tide_event_t *ev = &r->ev[i];
            if (ev->kind != TIDE_EV_JOB_SUBMIT)
                continue;
            /* a job of the workload, or one the driver made (an evaluation) */
            uintptr_t a = (uintptr_t)ev->job_spec, lo = (uintptr_t)r->o->jobs;
            int ours = a >= lo && a < lo + r->o->n_jobs * sizeof *r->o->jobs;
            double gb = r->o->job_ckpt_gb && ours
                            ? r->o->job_ckpt_gb[ev->job_spec - r->o->jobs]
                            : TIDE_IO_CKPT_GB_PER_GPU * ev->job_spec->gpus;
            tide_world_set_job_gb(r->w, tide_engine_job_find(r->e, ev->job_spec->id), gb);
        }
    }
    count_double_starts(r);
    tide_world_apply(r->w, t, &r->acts);
    if (r->ps)
        evout_flush(&r->eo); /* the pipeline writes its rows to evf itself */
    if (r->ps && tide_pipesim_after(r->ps, t, &r->acts, r->evf, r->policy, err) < 0)
        return tide_err_prefix(err, "policy %s: model pipeline at t=%lld: ", r->policy,
                               (long long)t);
    if (r->o->observe) {
        tide_time_t wake = TIDE_TIME_NEVER;
        tide_sim_step_t si = {.policy = r->policy, .t = t, .e = r->e, .w = r->w, .world = r->w,
                              .engine = r->e,
                              .events = r->ev, .n_events = r->nev, .acts = &r->acts,
                              .wake = &wake};
        r->o->observe(r->o->observe_ctx, &si);
        r->obs_wake = wake;
    }
    return 0;
}

/* Per service in timeline.csv: forecast baseline peak over the next hour,
 * the size it is scaled to (peak x (1 + margin)), the margin, the lead. */
enum { FC_COLS = 4 };
static const char *const fc_names[FC_COLS] = {"forecast_rps", "sized_rps", "margin", "lead_s"};

/* The engine's forecast of every service now, into v (FC_COLS per service). */
static void fc_take(const run_t *r, double *v)
{
    for (size_t s = 0; s < r->o->n_services; s++) {
        tide_forecast_info_t fc = {0};
        tide_engine_forecast(r->e, (int)s, 3600, &fc);
        double *x = v + s * FC_COLS;
        x[0] = fc.peak;
        x[1] = fc.peak_with_margin;
        x[2] = fc.margin;
        x[3] = (double)fc.lead_s;
    }
}

/* Buffer the forecast columns of the row just pushed and take the next ones. */
static void fc_push(run_t *r)
{
    size_t w = r->o->n_services * FC_COLS;
    if (w == 0)
        return;
    if (!r->fc_prev)
        r->fc_prev = tide_xcalloc(w, sizeof *r->fc_prev);
    if (r->nrows * w > r->capfc) {
        r->capfc = TIDE_MAX(r->capfc * 2, r->nrows * w);
        r->fc_rows = tide_xrealloc(r->fc_rows, r->capfc * sizeof *r->fc_rows);
    }
    memcpy(r->fc_rows + (r->nrows - 1) * w, r->fc_prev, w * sizeof *r->fc_prev);
    fc_take(r, r->fc_prev);
}

/* The timeline header: the fixed columns, the forecast summed over services,
 * then FC_COLS columns per service named COLUMN:SERVICE. */
static void timeline_header(FILE *f, const tide_sim_opts_t *o)
{
    fputs(TIMELINE_HEADER_FIXED, f);
    fputs(",forecast_rps,sized_rps", f);
    char name[512];
    for (size_t s = 0; s < o->n_services; s++)
        for (int k = 0; k < FC_COLS; k++) {
            snprintf(name, sizeof name, "%s:%s", fc_names[k], o->services[s].name);
            fputc(',', f);
            tide_csv_write_field(f, name);
        }
    fputc('\n', f);
}

/* Buffer the timeline row of [prev.t, cur->t) and move prev to cur. */
static void timeline_write(run_t *r, const snap_t *cp)
{
    const snap_t *p = &r->prev;
    if (cp->t > p->t && r->tl) {
        tlrow_t x;
        memset(&x, 0, sizeof x);
        x.t0 = p->t;
        x.t1 = cp->t;
        for (int k = 0; k < TIDE_S_COUNT; k++)
            x.state[k] = cp->state[k] - p->state[k];
        for (int c = 0; c < TIDE_C_COUNT; c++)
            x.cls[c] = cp->cls[c] - p->cls[c];
        x.leased = cp->tier[TIDE_T_C] - p->tier[TIDE_T_C];
        x.tier_a = cp->tier[TIDE_T_A] - p->tier[TIDE_T_A];
        x.storage_gb = cp->storage_gb - p->storage_gb;
        x.demand_rps = p->demand_rps;
        x.ready_rps = p->ready_rps;
        x.queue_jobs = p->queue_jobs;
        x.queue_gpus = p->queue_gpus;
        x.running_jobs = p->running_jobs;
        TIDE_PUSH(r->rows_v, r->nrows, r->caprows, x);
        fc_push(r);
    }
    r->prev = *cp;
}

/* Move up to `want` GPU-seconds of training to lost in row k; returns how much. */
static double rebook_row(tlrow_t *k, double want)
{
    double a = want < k->state[TIDE_S_TRAINING] ? want : k->state[TIDE_S_TRAINING];
    if (a <= 0)
        return 0;
    k->state[TIDE_S_TRAINING] -= a;
    k->state[TIDE_S_LOST] += a;
    return a;
}

/* The engine books thrown-away work when it learns of it: training becomes
 * lost in the row of that step, though the GPU-seconds were spent earlier
 * (a row could show negative training). Book each loss back where it was
 * done: over [end - gpu_s/rate, end] in proportion to the overlap, never more
 * than a row's training, the rest in the rows before; then, whatever a row
 * still lacks comes from the rows just before it. Totals do not change. */
static void rebook_losses(run_t *r)
{
    tlrow_t *v = r->rows_v;
    size_t n = r->nrows;
    for (size_t i = 0; i < r->nloss && n > 0; i++) {
        const loss_t *l = &r->loss[i];
        size_t b = n - 1; /* the row whose end snapshot holds the step: t0 < booked <= t1 */
        while (b > 0 && v[b].t0 >= l->booked)
            b--;
        double span = l->rate > 0 ? l->gpu_s / l->rate : 0;
        double from = (double)l->end - span, moved = 0, left = l->gpu_s;
        for (size_t k = b + 1; k-- > 0 && left > 1e-9;) {
            double lo = (double)v[k].t0, hi = (double)v[k].t1;
            if (lo >= (double)l->end && k != b)
                continue;
            double ov = (hi < (double)l->end ? hi : (double)l->end) - (lo > from ? lo : from);
            double want = ov > 0 && span > 0 ? l->gpu_s * ov / span : 0;
            if (hi <= from)
                want = left; /* before the span: only what is still left */
            if (want > left)
                want = left;
            if (k == b) {
                left -= want; /* already booked here */
                continue;
            }
            double a = rebook_row(&v[k], want);
            moved += a;
            left -= a;
        }
        v[b].state[TIDE_S_TRAINING] += moved;
        v[b].state[TIDE_S_LOST] -= moved;
    }
    for (size_t b = n; b-- > 0;) {
        double need = -v[b].state[TIDE_S_TRAINING];
        for (size_t k = b; k-- > 0 && need > 1e-9;) {
            double a = rebook_row(&v[k], need);
            v[b].state[TIDE_S_TRAINING] += a;
            v[b].state[TIDE_S_LOST] -= a;
            need -= a;
        }
    }
}

/* No "-0.00" from rounding. */
static double nz(double v) { return fabs(v) < 0.005 ? 0.0 : v; }

/* Write the buffered rows of this policy (losses booked back first). */
static void timeline_flush(run_t *r)
{
    FILE *f = r->tl;
    if (!f) { /* timeline.csv not asked for (--outputs) */
        r->nrows = 0;
        return;
    }
    rebook_losses(r);
    size_t ns = r->o->n_services;
    tide_csv_row_t row;
    tide_csv_row_begin(&row);
    for (size_t i = 0; i < r->nrows; i++) {
        const tlrow_t *x = &r->rows_v[i];
        double dt = (double)(x->t1 - x->t0);
        tide_csv_row_str(&row, r->policy);
        tide_csv_row_fixed(&row, (double)x->t0, 0);
        for (int k = 0; k < SIM_STATES; k++)
            tide_csv_row_fixed(&row, nz(x->state[k] / dt), 2);
        for (int c = TIDE_C_INFERENCE; c <= TIDE_C_P3; c++)
            tide_csv_row_fixed(&row, x->cls[c] / dt, 2);
        tide_csv_row_fixed(&row, x->demand_rps, 2);
        tide_csv_row_fixed(&row, x->ready_rps, 2);
        tide_csv_row_fixed(&row, x->queue_jobs, 0);
        tide_csv_row_fixed(&row, x->queue_gpus, 0);
        tide_csv_row_fixed(&row, x->running_jobs, 0);
        tide_csv_row_fixed(&row, x->leased / dt, 2);
        tide_csv_row_fixed(&row, x->tier_a / dt, 2);
        tide_csv_row_fixed(&row, x->storage_gb / dt, 2);
        const double *fc = r->fc_rows ? r->fc_rows + i * ns * FC_COLS : NULL;
        double sum[2] = {0, 0};
        for (size_t sv = 0; fc && sv < ns; sv++) {
            sum[0] += fc[sv * FC_COLS];
            sum[1] += fc[sv * FC_COLS + 1];
        }
        tide_csv_row_fixed(&row, sum[0], 2);
        tide_csv_row_fixed(&row, sum[1], 2);
        for (size_t k = 0; k < ns * FC_COLS; k++)
            tide_csv_row_fixed(&row, fc ? fc[k] : 0.0, k % FC_COLS == 2 ? 4 : 2);
        tide_csv_row_end(&row, f);
    }
    r->nrows = 0;
}

/* The world's demanded storage GB up to t (0 without the storage model). */
static double storage_gb_at(const run_t *r, tide_time_t t)
{
    tide_world_storage_t ws;
    tide_world_storage(r->w, t, &ws);
    return ws.demand_gb;
}

/* Write the timeline row ending at t from the engine's figures now. */
static void timeline_row(run_t *r, tide_time_t t)
{
    tide_stats_t st;
    tide_engine_stats(r->e, &st);
    snap_t cur;
    snap_take(&cur, &st, t);
    cur.storage_gb = storage_gb_at(r, t);
    timeline_write(r, &cur);
}

/* A timeline boundary passes while tide is down: the engine books nothing
 * until it is back, so the row waits for flush_pending. */
static void defer_row(run_t *r, tide_time_t t)
{
    snap_t p;
    memset(&p, 0, sizeof p);
    p.t = t;
    p.storage_gb = storage_gb_at(r, t);
    TIDE_PUSH(r->pending, r->npending, r->cappending, p);
}

/* Tide came back at t2 and stepped: write the rows of the boundaries passed
 * while it was down. The engine booked the outage at the allocation it knew
 * when it went down (constant rates from its last step to t2), plus the work
 * it wrote off at t2 (training -> lost, kept out of the interpolation so it
 * lands in the row of t2 like any other loss); the instantaneous columns are
 * what it knew then. */
static void flush_pending(run_t *r, tide_time_t t2)
{
    tide_stats_t st;
    tide_engine_stats(r->e, &st);
    snap_t after;
    snap_take(&after, &st, t2);
    const snap_t *a = &r->down_snap;
    double lost = st.lost_gpu_s - r->down_lost_gpu_s;
    double span = (double)(t2 - a->t);
    for (size_t i = 0; i < r->npending; i++) {
        snap_t x = *a;
        x.t = r->pending[i].t;
        x.storage_gb = r->pending[i].storage_gb;
        double f = span > 0 ? (double)(x.t - a->t) / span : 0;
        for (int k = 0; k < TIDE_S_COUNT; k++) {
            double d = after.state[k] - a->state[k];
            if (k == TIDE_S_TRAINING)
                d += lost;
            else if (k == TIDE_S_LOST)
                d -= lost;
            x.state[k] = a->state[k] + d * f;
        }
        for (int c = 0; c < TIDE_C_COUNT; c++)
            x.cls[c] = a->cls[c] + (after.cls[c] - a->cls[c]) * f;
        for (int k = 0; k < TIDE_T_COUNT; k++)
            x.tier[k] = a->tier[k] + (after.tier[k] - a->tier[k]) * f;
        timeline_write(r, &x);
    }
    r->npending = 0;
}

/* ---------------------------------------------------- serving while down */

/* Integrate the serving layer's figures up to t. */
static void ds_integrate(run_t *r, tide_time_t t)
{
    down_serve_t *d = &r->ds;
    if (!d->open || t <= d->t)
        return;
    double dt = (double)(t - d->t);
    for (size_t s = 0; s < r->o->n_services; s++) {
        const tide_service_spec_t *sp = &r->o->services[s];
        double dem = d->dem[s], cap = d->ready[s] * sp->replica_rps;
        int need = dem > 0 ? (int)ceil(dem / sp->replica_rps - 1e-9) : 0;
        d->demanded += dem * dt;
        d->served += (dem < cap ? dem : cap) * dt;
        d->useful += (double)TIDE_MIN(d->ready[s], need) * sp->gpus_per_replica * dt;
    }
    d->t = t;
}

/* Apply the held events r->ev[seen..) at the time they happen: demand
 * changes, replicas that finished warming up. */
static void ds_apply(run_t *r)
{
    down_serve_t *d = &r->ds;
    if (!d->open)
        return;
    for (; d->seen < r->nev; d->seen++) {
        const tide_event_t *ev = &r->ev[d->seen];
        if (ev->kind == TIDE_EV_DEMAND && ev->service >= 0 &&
            (size_t)ev->service < r->o->n_services)
            d->dem[ev->service] = ev->value;
        else if (ev->kind == TIDE_EV_REPLICA_READY && ev->replica >= 0 &&
                 (size_t)ev->replica < d->nrep && d->rstate[ev->replica] == 1) {
            d->rstate[ev->replica] = 2;
            d->ready[ev->service]++;
        }
    }
}

/* A replica died with its node while tide is down. */
static void ds_kill(run_t *r, int32_t rep)
{
    down_serve_t *d = &r->ds;
    if (!d->open || rep < 0 || (size_t)rep >= d->nrep)
        return;
    tide_replica_info_t ri;
    if (d->rstate[rep] == 2 && tide_engine_replica(r->e, rep, &ri) == 0)
        d->ready[ri.service]--;
    d->rstate[rep] = 0;
}

/* tide goes down: start from what the engine knew at its last step. */
static void ds_open(run_t *r, const tide_stats_t *st)
{
    down_serve_t *d = &r->ds;
    size_t ns = r->o->n_services ? r->o->n_services : 1;
    d->dem = tide_xcalloc(ns, sizeof *d->dem);
    d->ready = tide_xcalloc(ns, sizeof *d->ready);
    for (size_t s = 0; s < r->o->n_services; s++) {
        tide_forecast_info_t fi;
        if (tide_engine_forecast(r->e, (int)s, 0, &fi) == 0)
            d->dem[s] = fi.last_observed;
    }
    d->nrep = (size_t)tide_engine_replicas(r->e);
    d->rstate = tide_xcalloc(d->nrep ? d->nrep : 1, 1);
    for (size_t i = 0; i < d->nrep; i++) {
        tide_replica_info_t ri;
        if (tide_engine_replica(r->e, (int32_t)i, &ri) != 0 || ri.stopped)
            continue;
        d->rstate[i] = ri.ready ? 2 : 1;
        if (ri.ready)
            d->ready[ri.service]++;
    }
    d->open = 1;
    d->t = st->now;
    d->seen = 0;
    d->demanded = d->served = d->useful = 0;
    d->e_demanded = st->requests_demanded;
    d->e_served = st->requests_served;
    d->e_useful = st->useful_serving_gpu_s;
}

/* The outage is over (or the run ended): the engine booked the window at
 * what it knew when it went down; keep the difference to the truth. `st`
 * is the engine's after its first step back (NULL: it never came back). */
static void ds_close(run_t *r, const tide_stats_t *st)
{
    down_serve_t *d = &r->ds;
    if (!d->open)
        return;
    r->fix_demanded += d->demanded - (st ? st->requests_demanded - d->e_demanded : 0);
    r->fix_served += d->served - (st ? st->requests_served - d->e_served : 0);
    r->fix_useful += d->useful - (st ? st->useful_serving_gpu_s - d->e_useful : 0);
    free(d->dem);
    free(d->ready);
    free(d->rstate);
    memset(d, 0, sizeof *d);
}

/* ------------------------------------------------------------------ faults */

/* One fault row in events.csv. */
static void fault_row(run_t *r, tide_time_t t, const char *kind, const char *job,
                      const char *service, int gpus, tide_time_t deadline, double value,
                      int has_value)
{
    r->rows++;
    if (!r->eo.f) /* events.csv not asked for (--outputs) */
        return;
    evrow_t *row = evout_add(&r->eo, t, kind);
    row->job = job;
    row->service = service;
    row->gpus = gpus;
    row->deadline = (long long)deadline;
    row->value = value;
    row->has = (gpus >= 0 ? E_GPUS : 0) | (deadline >= 0 ? E_DEADLINE : 0) |
               (has_value ? E_VALUE : 0);
}

/* A JOB_START of a job the world still runs, not stopped earlier in the same
 * step: a gang would run twice (faults.double_starts, always 0). */
static void count_double_starts(run_t *r)
{
    for (size_t i = 0; i < r->acts.n; i++) {
        const tide_action_t *a = &r->acts.v[i];
        tide_world_job_t wj;
        if (a->kind != TIDE_ACT_JOB_START || tide_world_job(r->w, a->job, &wj) != 0 || !wj.active)
            continue;
        int stopped = 0;
        for (size_t k = 0; k < i && !stopped; k++)
            stopped = r->acts.v[k].kind == TIDE_ACT_JOB_STOP && r->acts.v[k].job == a->job;
        r->fs.double_starts += !stopped;
    }
}

/* Demand events for the services a burst item touches (at their new level). */
static void burst_demand(run_t *r, const tide_fault_t *b)
{
    for (size_t s = 0; s < r->o->n_services; s++) {
        if (b->target && strcmp(b->target, r->o->services[s].name) != 0)
            continue;
        if (r->base_rps[s] < 0)
            continue; /* no demand point yet: nothing to scale */
        tide_event_t ev = blank_event(TIDE_EV_DEMAND);
        ev.service = (int32_t)s;
        ev.value = r->base_rps[s] * burst_factor(r, (int)s);
        push_event(r, ev);
    }
}

/* The node dies: what ran on it dies in the world at once (the engine learns
 * from EV_NODE_FAILED, at once or when it is back). */
static void node_fail(run_t *r, tide_time_t t, int fault, int n)
{
    tide_node_info_t ni;
    tide_cluster_node(r->o->cluster, n, &ni);
    for (int g = ni.first_gpu; g < ni.first_gpu + ni.gpus; g++) {
        int32_t owner;
        int kind = tide_engine_gpu_owner(r->e, g, &owner);
        int phase;
        double progress;
        if (kind == 1 && tide_world_kill_job(r->w, t, owner, &phase, &progress) == 0 &&
            r->down) {
            note_death(r, owner, t);
            /* the engine will hear of it late: tell it how far the job got */
            tide_event_t ev = blank_event(TIDE_EV_JOB_PHASE);
            ev.job = owner;
            ev.phase = phase;
            ev.value = progress;
            push_event(r, ev);
        } else if (kind == 2) {
            tide_world_kill_replica(r->w, t, owner);
            ds_kill(r, owner);
        }
    }
    r->node_up[n] = 0;
    failed_node_t fn = {.fault = fault, .node = n};
    TIDE_PUSH(r->failed, r->nfailed, r->capfailed, fn);
    tide_event_t ev = blank_event(TIDE_EV_NODE_FAILED);
    ev.node = n;
    push_event(r, ev);
    r->fs.nodes_failed++;
    fault_row(r, t, "fault_node_fail", NULL, NULL, ni.gpus, -1, n, 1);
}

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

static void enact_node_fail(run_t *r, tide_time_t t, const tide_fire_t *f)
{
    const tide_fault_t *nf = &r->o->inject->v[f->fault];
    int nodes = tide_cluster_nodes(r->o->cluster);
    int *up = tide_xmalloc((size_t)(nodes > 0 ? nodes : 1) * sizeof *up);
    int nup = 0;
    for (int n = 0; n < nodes; n++)
        if (r->node_up[n])
            up[nup++] = n;
    /* partial Fisher-Yates from the item's draw: the same nodes for every policy */
    uint64_t st = f->draw;
    int k = TIDE_MIN(nf->count, nup);
    for (int i = 0; i < k; i++) {
        int j = i + (int)(tide_inject_uniform(&st) * (double)(nup - i));
        if (j >= nup)
            j = nup - 1;
        int tmp = up[i];
        up[i] = up[j];
        up[j] = tmp;
    }
    qsort(up, (size_t)k, sizeof *up, int_cmp);
    for (int i = 0; i < k; i++)
        node_fail(r, t, f->fault, up[i]);
    free(up);
}

static void enact_node_recover(run_t *r, tide_time_t t, const tide_fire_t *f)
{
    size_t w = 0;
    for (size_t i = 0; i < r->nfailed; i++) {
        failed_node_t fn = r->failed[i];
        if (fn.fault != f->fault) {
            r->failed[w++] = fn;
            continue;
        }
        tide_node_info_t ni;
        tide_cluster_node(r->o->cluster, fn.node, &ni);
        r->node_up[fn.node] = 1;
        tide_event_t ev = blank_event(TIDE_EV_NODE_RECOVERED);
        ev.node = fn.node;
        push_event(r, ev);
        r->fs.nodes_recovered++;
        fault_row(r, t, "fault_node_recover", NULL, NULL, ni.gpus, -1, fn.node, 1);
    }
    r->nfailed = w;
}

/* The node of the highest GPU job h holds (its last gang's). */
static int job_last_node(const run_t *r, int32_t h)
{
    int nodes = tide_cluster_nodes(r->o->cluster);
    for (int n = nodes; n-- > 0;) {
        tide_node_info_t ni;
        tide_cluster_node(r->o->cluster, n, &ni);
        for (int g = ni.first_gpu; g < ni.first_gpu + ni.gpus; g++) {
            int32_t o;
            if (tide_engine_gpu_owner(r->e, g, &o) == 1 && o == h)
                return n;
        }
    }
    return -1;
}

static void enact_rank_fail(run_t *r, tide_time_t t, const tide_fire_t *f)
{
    const tide_fault_t *rf = &r->o->inject->v[f->fault];
    int32_t job = -1;
    if (f->u < 0) {
        job = tide_engine_job_find(r->e, rf->target);
    } else {
        size_t n = tide_world_running(r->w, NULL, NULL, 0);
        if (n > 0) {
            int32_t *jobs = tide_xmalloc(n * sizeof *jobs);
            int *gpus = tide_xmalloc(n * sizeof *gpus);
            tide_world_running(r->w, jobs, gpus, n);
            double total = 0;
            for (size_t i = 0; i < n; i++)
                total += gpus[i];
            /* a failing rank is a GPU: jobs are hit in proportion to their GPUs */
            double x = f->u * total, acc = 0;
            job = jobs[n - 1];
            for (size_t i = 0; i < n; i++) {
                acc += gpus[i];
                if (x < acc) {
                    job = jobs[i];
                    break;
                }
            }
            free(jobs);
            free(gpus);
        }
    }
    double lost = 0;
    tide_job_info_t ji;
    /* an elastic job above dp_min loses the gang and goes on (the engine shrinks it) */
    int shrink = job >= 0 && tide_engine_job(r->e, job, &ji) == 0 &&
                 ji.state == TIDE_JOB_RUNNING && ji.width >= 2 && ji.width - 1 >= ji.spec->dp_min;
    if (shrink && tide_world_fail_gang(r->w, t, job, job_last_node(r, job)) == 0) {
        r->fs.rank_failures++;
        fault_row(r, t, "fault_rank_fail_shrink", job_id(r->e, job), NULL, -1, -1, 0, 1);
        return;
    }
    if (job < 0 || tide_world_fail_rank(r->w, t, job, &lost) != 0) {
        r->fs.rank_failures_skipped++;
        fault_row(r, t, "fault_rank_fail_skipped", f->u < 0 ? rf->target : NULL, NULL, -1, -1,
                  0, 0);
        return;
    }
    r->fs.rank_failures++;
    if (r->down)
        note_death(r, job, t);
    fault_row(r, t, "fault_rank_fail", job_id(r->e, job), NULL, -1, -1, lost, 1);
}

/* ------------------------------------------------------ failure domains */

/* The rack (power 0) or power domain (1) of node n. */
static int node_domain(const run_t *r, int n, int power)
{
    tide_node_info_t ni;
    tide_cluster_node(r->o->cluster, n, &ni);
    return power ? ni.power : ni.rack;
}

/* Placed replicas per service (all[s]) and of them those on failure domain
 * x (in[s], x >= 0). Returns the domain holding the most replicas. */
static int replicas_by_domain(const run_t *r, int power, int x, int *all, int *in)
{
    int nd = power ? tide_cluster_power_domains(r->o->cluster) : tide_cluster_racks(r->o->cluster);
    int nrep = tide_engine_replicas(r->e), nodes = tide_cluster_nodes(r->o->cluster);
    int *per = tide_xcalloc((size_t)nd + 1, sizeof *per);
    uint8_t *seen = tide_xcalloc((size_t)nrep + 1, 1);
    memset(all, 0, r->o->n_services * sizeof *all);
    memset(in, 0, r->o->n_services * sizeof *in);
    for (int n = 0; n < nodes; n++) {
        tide_node_info_t ni;
        tide_cluster_node(r->o->cluster, n, &ni);
        int d = power ? ni.power : ni.rack;
        for (int g = ni.first_gpu; g < ni.first_gpu + ni.gpus; g++) {
            int32_t rep;
            tide_replica_info_t ri;
            if (tide_engine_gpu_owner(r->e, g, &rep) != 2 || rep >= nrep || seen[rep] ||
                tide_engine_replica(r->e, rep, &ri) != 0)
                continue;
            seen[rep] = 1; /* once per replica, at its first GPU */
            per[d]++;
            all[ri.service]++;
            in[ri.service] += d == x;
        }
    }
    int best = 0;
    for (int k = 1; k < nd; k++)
        if (per[k] > per[best])
            best = k;
    free(per);
    free(seen);
    return best;
}

/* rack-fail / power-fail: every up node of the domain fails (recovered with
 * the item, as node-fail's). Records the least share of its floor a service
 * keeps in replicas outside the domain. */
static void enact_domain_fail(run_t *r, tide_time_t t, const tide_fire_t *f)
{
    const tide_fault_t *df = &r->o->inject->v[f->fault];
    int power = df->kind == TIDE_FAULT_POWER_FAIL;
    size_t ns = r->o->n_services;
    int *all = tide_xcalloc(ns + 1, sizeof *all), *in = tide_xcalloc(ns + 1, sizeof *in);
    int x = df->domain >= 0 ? df->domain : replicas_by_domain(r, power, -1, all, in);
    replicas_by_domain(r, power, x, all, in);
    for (size_t s = 0; s < ns; s++) {
        int fl = r->o->services[s].min_replicas;
        double share = fl > 0 ? (double)(all[s] - in[s]) / fl : 1;
        if (r->fs.floor_share_min < 0 || share < r->fs.floor_share_min)
            r->fs.floor_share_min = share;
    }
    free(all);
    free(in);
    r->fs.domains_failed++;
    fault_row(r, t, power ? "fault_power_fail" : "fault_rack_fail", NULL, NULL, -1, -1, x, 1);
    int nodes = tide_cluster_nodes(r->o->cluster);
    for (int n = 0; n < nodes; n++)
        if (r->node_up[n] && node_domain(r, n, power) == x)
            node_fail(r, t, f->fault, n);
}

/* partition: the nodes become unreachable (start) or reachable (end); what
 * runs there goes on in the world. Nodes down meanwhile are left alone. */
static void enact_partition(run_t *r, tide_time_t t, const tide_fire_t *f)
{
    const tide_fault_t *pf = &r->o->inject->v[f->fault];
    int start = f->kind == TIDE_FIRE_PARTITION_START;
    if (start)
        r->fs.partitions++;
    for (int k = 0; k < pf->n_nodes; k++) {
        int n = pf->nodes[k];
        if (!r->node_up[n])
            continue;
        tide_event_t ev = blank_event(start ? TIDE_EV_NODE_FAILED : TIDE_EV_NODE_RECOVERED);
        ev.node = n;
        ev.value = start; /* 1: unreachable, not down */
        push_event(r, ev);
        fault_row(r, t, start ? "fault_partition" : "fault_partition_end", NULL, NULL, -1, -1, n,
                  1);
    }
}

/* Enact one firing at t. */
static void enact(run_t *r, tide_time_t t, const tide_fire_t *f)
{
    const tide_fault_t *fl = &r->o->inject->v[f->fault];
    switch (f->kind) {
    case TIDE_FIRE_BURST_START:
    case TIDE_FIRE_BURST_END: {
        int start = f->kind == TIDE_FIRE_BURST_START;
        r->burst_on[f->fault] = start;
        if (start)
            r->fs.bursts++;
        fault_row(r, t, start ? "fault_burst_start" : "fault_burst_end", NULL, fl->target, -1,
                  start ? fl->at + fl->dur : -1, fl->factor, 1);
        burst_demand(r, fl);
        break;
    }
    case TIDE_FIRE_NODE_FAIL:
        enact_node_fail(r, t, f);
        break;
    case TIDE_FIRE_NODE_RECOVER:
        enact_node_recover(r, t, f);
        break;
    case TIDE_FIRE_RANK_FAIL:
        enact_rank_fail(r, t, f);
        break;
    case TIDE_FIRE_DOMAIN_FAIL:
        enact_domain_fail(r, t, f);
        break;
    case TIDE_FIRE_DOMAIN_RECOVER:
        enact_node_recover(r, t, f);
        break;
    case TIDE_FIRE_PARTITION_START:
    case TIDE_FIRE_PARTITION_END:
        enact_partition(r, t, f);
        break;
    case TIDE_FIRE_CTL_DOWN: {
        tide_stats_t st;
        tide_engine_stats(r->e, &st);
        snap_take(&r->down_snap, &st, st.now);
        r->down_lost_gpu_s = st.lost_gpu_s;
        ds_open(r, &st);
        ds_integrate(r, t);
        r->down = 1;
        r->down_at = t;
        r->fs.ctl_outages++;
        tide_world_set_ctl_down(r->w, t, 1);
        tide_time_t up = TIDE_MIN(fl->at + fl->dur, r->horizon);
        fault_row(r, t, "fault_ctl_down", NULL, NULL, -1, up, (double)(up - t), 1);
        break;
    }
    case TIDE_FIRE_CTL_UP:
        if (!r->down)
            break;
        ds_apply(r);
        ds_integrate(r, t);
        r->down = 0;
        tide_world_set_ctl_down(r->w, t, 0);
        r->fs.ctl_down_s += t - r->down_at;
        r->fs.events_held += (long)r->nev;
        fault_row(r, t, "fault_ctl_up", NULL, NULL, -1, -1, (double)r->nev, 1);
        break;
    default:
        break;
    }
}

/* Enact the firings due at <= t; with hold_down, stop before a ctl-down (the
 * engine makes its first step before an outage that starts at time 0). */
static void fire_due(run_t *r, tide_time_t t, int hold_down)
{
    const tide_schedule_t *sc = r->sched;
    while (sc && r->fi < sc->n && sc->v[r->fi].t <= t) {
        const tide_fire_t *f = &sc->v[r->fi];
        if (hold_down && f->kind == TIDE_FIRE_CTL_DOWN)
            return;
        r->fi++;
        enact(r, t, f);
    }
}

/* While tide is down: rows for the jobs the backend ended at their lease
 * deadline among the events r->ev[from..). */
static void note_expired(run_t *r, tide_time_t t, size_t from)
{
    for (size_t i = from; i < r->nev; i++) {
        const tide_event_t *ev = &r->ev[i];
        if (ev->kind != TIDE_EV_JOB_EXPIRED)
            continue;
        r->fs.jobs_expired++;
        note_death(r, ev->job, t);
        fault_row(r, t, "fault_lease_expired", job_id(r->e, ev->job), NULL, -1, t, ev->value, 1);
    }
}

static void progress_line(run_t *r, tide_time_t t, int pct)
{
    char d[32];
    double wall = now_wall() - r->wall0;
    fprintf(stderr, "tide sim: %-10s %3d%%  t=%-8s steps=%ld events=%ld  %.0f events/s\n",
            r->policy, pct, tide_fmt_duration(t, d, sizeof d), r->steps, r->input_events,
            wall > 0 ? (double)r->input_events / wall : 0.0);
}

/* The latency model over [t, t2): the demand and ready replicas the serving
 * layer has now (the engine's, or while tide is down the serving layer's own). */
static void lat_advance(run_t *r, tide_time_t t, tide_time_t t2)
{
    if (!r->lat || t2 <= t)
        return;
    for (size_t s = 0; s < r->o->n_services; s++) {
        double dem = 0;
        int ready;
        if (r->ds.open) {
            dem = r->ds.dem[s];
            ready = r->ds.ready[s];
        } else {
            ready = tide_engine_service_ready(r->e, (int)s, &dem);
        }
        tide_latency_advance(r->lat, (int)s, (double)(t2 - t), dem, ready);
    }
}

/* The main loop of one policy. */
static int replay(run_t *r, tide_error_t *err)
{
    const tide_sim_opts_t *o = r->o;
    tide_time_t t = 0, boundary = 0;
    for (;;) {
        if (r->down)
            ds_integrate(r, t); /* the serving layer, up to now */
        if (!r->down)
            r->nev = 0; /* while down, events are held until tide is back */
        fire_due(r, t, r->steps == 0);
        ds_apply(r);
        if (r->down) {
            size_t from = r->nev;
            gather(r, t);
            note_expired(r, t, from);
            ds_apply(r);
        } else {
            for (int pass = 0;; pass++) {
                if (pass > 0)
                    r->nev = 0;
                gather(r, t);
                if (pass > 0 && r->nev == 0)
                    break;
                if (pass >= MAX_PASSES)
                    return tide_errf(err, TIDE_ESTATE, "policy %s: no progress at t=%lld",
                                     r->policy, (long long)t);
                if (step(r, t, err) != 0)
                    return -1;
                if (r->npending)
                    flush_pending(r, t);
                if (r->ds.open) {
                    tide_stats_t st;
                    tide_engine_stats(r->e, &st);
                    ds_close(r, &st);
                }
                if (pass == 0 && r->sched && r->fi < r->sched->n && r->sched->v[r->fi].t <= t) {
                    /* an outage from time 0 starts after the first step */
                    r->nev = 0;
                    fire_due(r, t, 0);
                    ds_apply(r);
                    if (r->down)
                        break;
                }
                if (tide_world_next(r->w) > t && !(r->ps && tide_pipesim_next(r->ps, t) <= t))
                    break;
            }
        }
        if (t == boundary) {
            if (r->down)
                defer_row(r, t);
            else {
                timeline_row(r, t);
                if (r->usage)
                    tide_usage_sample(r->usage, r->policy, t, r->e);
            }
            boundary = TIDE_MIN(t + r->interval, r->horizon);
        }
        if (t >= r->horizon)
            break;
        tide_time_t next = TIDE_MIN(boundary, r->horizon);
        if (r->ji < o->n_jobs)
            next = TIDE_MIN(next, o->jobs[r->job_order[r->ji]].submit_s);
        if (r->di < o->n_demand)
            next = TIDE_MIN(next, o->demand[r->dem_order[r->di]].t);
        next = TIDE_MIN(next, tide_world_next(r->w));
        if (r->sched && r->fi < r->sched->n)
            next = TIDE_MIN(next, r->sched->v[r->fi].t);
        if (!r->down && r->acts.next_wake > t)
            next = TIDE_MIN(next, r->acts.next_wake);
        if (!r->down && r->obs_wake > t)
            next = TIDE_MIN(next, r->obs_wake);
        if (!r->down && r->ps)
            next = TIDE_MIN(next, tide_pipesim_next(r->ps, t));
        if (next <= t)
            next = t + 1; /* cannot happen; never loop in place */
        lat_advance(r, t, TIDE_MIN(next, r->horizon));
        if (r->show_progress) {
            /* a line each time the clock crosses a 10% mark */
            int from = (int)(t * 10 / r->horizon);
            int to = (int)(TIDE_MIN(next, r->horizon) * 10 / r->horizon);
            for (int k = from + 1; k <= to && k < 10; k++)
                progress_line(r, (tide_time_t)k * r->horizon / 10, k * 10);
        }
        t = next;
    }
    if (r->show_progress)
        progress_line(r, r->horizon, 100);
    if (r->ds.open) { /* still down at the horizon: the engine booked none of it */
        ds_integrate(r, r->horizon);
        ds_close(r, NULL);
    }
    return 0;
}

/* ------------------------------------------------------------ summary.json */

static double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

/* Gang-size buckets by total GPUs of the job: [1,2), [2,4), ... [32,64), [64,inf). */
static const char *const gang_labels[] = {"1", "2", "4", "8", "16", "32", "64+"};
#define N_GANG ((int)(sizeof gang_labels / sizeof gang_labels[0]))

static int gang_bucket(int gpus)
{
    int b = 0;
    while (b + 1 < N_GANG && gpus >= (1 << (b + 1)))
        b++;
    return b;
}

typedef struct qacc {
    int jobs;
    double sum;
} qacc_t;

static json_t *qacc_json(const qacc_t *q)
{
    json_t *o = json_object();
    tide_json_set(o, "jobs", json_integer(q->jobs));
    tide_json_set(o, "mean_queue_s", tide_json_real(ratio(q->sum, q->jobs)));
    return o;
}

static int team_cmp(const void *a, const void *b)
{
    const tide_team_stats_t *x = a, *y = b;
    return strcmp(x->team, y->team);
}

static json_t *training_json(const run_t *r, const tide_stats_t *st, tabrow_t *tab)
{
    const tide_engine_t *e = r->e;
    int n = tide_engine_jobs(e);
    double *queue = tide_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *queue);
    size_t nq = 0;
    double jct_sum = 0, q_sum = 0;
    int done = 0;
    qacc_t by_prio[TIDE_NPRIO] = {{0}}, by_gang[N_GANG] = {{0}};
    for (int h = 0; h < n; h++) {
        tide_job_info_t ji;
        if (tide_engine_job(e, h, &ji) != 0 || !ji.spec)
            continue;
        tide_time_t started = ji.first_start >= 0 ? ji.first_start : r->horizon;
        double q = (double)(started - ji.submitted);
        if (q < 0)
            q = 0;
        queue[nq++] = q;
        q_sum += q;
        if (ji.state == TIDE_JOB_DONE && ji.finished >= 0) {
            done++;
            jct_sum += (double)(ji.finished - ji.submitted);
        }
        int p = ji.spec->priority;
        if (p >= TIDE_P1 && p < TIDE_NPRIO) {
            by_prio[p].jobs++;
            by_prio[p].sum += q;
        }
        qacc_t *g = &by_gang[gang_bucket(ji.spec->gpus)];
        g->jobs++;
        g->sum += q;
    }
    json_t *o = json_object();
    tide_json_set(o, "jobs_submitted", json_integer(st->jobs_submitted));
    tide_json_set(o, "jobs_completed", json_integer(st->jobs_completed));
    tide_json_set(o, "mean_jct_s", tide_json_real(ratio(jct_sum, done)));
    tide_json_set(o, "mean_queue_s", tide_json_real(ratio(q_sum, (double)nq)));
    tide_json_set(o, "p95_queue_s", tide_json_real(tide_quantile(queue, nq, 0.95)));
    tide_json_set(o, "preemptions", json_integer(st->preemptions));
    tide_json_set(o, "shrinks", json_integer(st->shrinks));
    tide_json_set(o, "gpu_hours_lost", tide_json_real(st->lost_gpu_s / 3600.0));
    json_t *qp = json_object();
    for (int p = TIDE_P1; p < TIDE_NPRIO; p++) {
        char k[8];
        snprintf(k, sizeof k, "P%d", p);
        tide_json_set(qp, k, qacc_json(&by_prio[p]));
    }
    tide_json_set(o, "queue_by_priority", qp);
    json_t *qg = json_object();
    for (int b = 0; b < N_GANG; b++)
        tide_json_set(qg, gang_labels[b], qacc_json(&by_gang[b]));
    tide_json_set(o, "queue_by_gang_size", qg);
    free(queue);
    tab->mean_queue_s = ratio(q_sum, (double)nq);
    tab->jobs_done = st->jobs_completed;
    tab->preemptions = st->preemptions;
    tab->lost_h = st->lost_gpu_s / 3600.0;
    return o;
}

static json_t *teams_json(const tide_engine_t *e)
{
    int n = tide_engine_teams(e);
    tide_team_stats_t *t = tide_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *t);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (tide_engine_team(e, i, &t[k]) == 0 && t[k].team)
            k++;
    qsort(t, (size_t)k, sizeof *t, team_cmp);
    json_t *o = json_object();
    for (int i = 0; i < k; i++) {
        json_t *x = json_object();
        tide_json_set(x, "gpu_hours", tide_json_real(t[i].gpu_s / 3600.0));
        tide_json_set(x, "gpu_hours_lost", tide_json_real(t[i].lost_gpu_s / 3600.0));
        tide_json_set(x, "preemptions", json_integer(t[i].preemptions));
        tide_json_set(x, "jobs", json_integer(t[i].jobs));
        tide_json_set(x, "mean_queue_s", tide_json_real(ratio(t[i].queue_s_sum, t[i].jobs)));
        tide_json_set(o, t[i].team, x);
    }
    free(t);
    return o;
}

static double samples_p99(const tide_engine_t *e, int which)
{
    tide_samples_t s = tide_engine_samples(e, which);
    return tide_quantile(s.v, s.n, 0.99);
}

/* summary.json faults.storage: the QoS and the transfers' tail times. */
static void storage_qos_json(const run_t *r, const tide_world_storage_t *ws, json_t *so)
{
    static const char *const keys[TIDE_XFER_KIND_COUNT] = {
        "weight_load", "ckpt_asked", "ckpt_periodic", "ckpt_stagger_delay", "weight_sync"};
    tide_json_set(so, "bulk_qos", tide_json_real(r->o->bulk_qos));
    tide_json_set(so, "peak_rate_gbps", tide_json_real(ws->rate_peak_gbps));
    tide_json_set(so, "peak_ckpt_rate_gbps", tide_json_real(ws->ckpt_rate_peak_gbps));
    tide_json_set(so, "peak_demand_ratio", tide_json_real(ratio(ws->peak_gbps, ws->gbps)));
    tide_json_set(so, "staggered", json_integer(ws->staggered));
    json_t *t = json_object();
    for (int k = 0; k < TIDE_XFER_KIND_COUNT; k++) {
        size_t n;
        double p99 = tide_world_xfer_quantile(r->w, k, 0.99, &n);
        if (k == TIDE_XFER_SYNC && n == 0)
            continue; /* RL weight syncs (docs/rl.md): there with --rl only */
        json_t *x = json_object();
        tide_json_set(x, "n", json_integer((json_int_t)n));
        tide_json_set(x, "p50_s", tide_json_real(tide_world_xfer_quantile(r->w, k, 0.5, NULL)));
        tide_json_set(x, "p99_s", tide_json_real(p99));
        tide_json_set(t, keys[k], x);
    }
    tide_json_set(so, "transfer_times", t);
}

/* The figures of a bandwidth budget (the storage, a rack's uplink) into x. */
static void bandwidth_json(const run_t *r, const tide_world_storage_t *b, json_t *x)
{
    tide_json_set(x, "gbps", tide_json_real(b->gbps));
    tide_json_set(x, "peak_demand_gbps", tide_json_real(b->peak_gbps));
    tide_json_set(x, "mean_demand_gbps", tide_json_real(ratio(b->demand_gb, (double)r->horizon)));
    tide_json_set(x, "saturated_s", tide_json_real(b->saturated_s));
    tide_json_set(x, "transfers", json_integer(b->transfers));
    tide_json_set(x, "moved_gb", tide_json_real(b->moved_gb));
}

/* summary.json faults.storage.uplinks: one object per rack with an uplink
 * (none: the key is left out), and the busiest rack's figures. */
static void uplinks_json(const run_t *r, json_t *so)
{
    json_t *arr = json_array();
    tide_world_storage_t u, top = {0};
    int busiest = -1;
    for (int k = 0, nr = tide_cluster_racks(r->o->cluster); k < nr; k++) {
        if (tide_world_uplink(r->w, r->horizon, k, &u) != 0 || u.gbps <= 0)
            continue;
        json_t *x = json_object();
        tide_json_set(x, "rack", json_integer(k));
        bandwidth_json(r, &u, x);
        tide_json_set(x, "peak_rate_gbps", tide_json_real(u.rate_peak_gbps));
        tide_json_set(x, "peak_ckpt_rate_gbps", tide_json_real(u.ckpt_rate_peak_gbps));
        json_array_append_new(arr, x);
        if (busiest < 0 || u.saturated_s > top.saturated_s ||
            (u.saturated_s == top.saturated_s && u.peak_gbps > top.peak_gbps)) {
            busiest = k;
            top = u;
        }
    }
    if (busiest < 0) {
        json_decref(arr);
        return;
    }
    tide_json_set(so, "uplinks", arr);
    json_t *b = json_object();
    tide_json_set(b, "rack", json_integer(busiest));
    tide_json_set(b, "peak_demand_ratio", tide_json_real(ratio(top.peak_gbps, top.gbps)));
    tide_json_set(b, "saturated_s", tide_json_real(top.saturated_s));
    tide_json_set(so, "busiest_uplink", b);
}

/* The table's storage line: demand against the storage, the tail times,
 * the busiest uplink (with uplinks). Empty without the storage model. */
static void storage_line(const run_t *r, tabrow_t *tab)
{
    if (!r->o->inject || !(tide_inject_storage_gbps(r->o->inject) > 0))
        return;
    tide_world_storage_t ws, u, top = {0};
    tide_world_storage(r->w, r->horizon, &ws);
    int len = snprintf(tab->io, sizeof tab->io,
                       "peak %.1f GB/s of %.1f, saturated %.0f s; P99 weight load %.0f s, "
                       "checkpoint %.0f s (asked) / %.0f s (periodic)",
                       ws.peak_gbps, ws.gbps, ws.saturated_s,
                       tide_world_xfer_quantile(r->w, TIDE_XFER_LOAD, 0.99, NULL),
                       tide_world_xfer_quantile(r->w, TIDE_XFER_CKPT_ASKED, 0.99, NULL),
                       tide_world_xfer_quantile(r->w, TIDE_XFER_CKPT_PERIODIC, 0.99, NULL));
    int busiest = -1, racks = 0;
    for (int k = 0, nr = tide_cluster_racks(r->o->cluster); k < nr; k++) {
        if (tide_world_uplink(r->w, r->horizon, k, &u) != 0 || u.gbps <= 0)
            continue;
        racks++;
        if (busiest < 0 || u.saturated_s > top.saturated_s) {
            busiest = k;
            top = u;
        }
    }
    if (busiest >= 0 && len > 0 && (size_t)len < sizeof tab->io)
        snprintf(tab->io + len, sizeof tab->io - (size_t)len,
                 "; %d uplinks, busiest rack %d: peak %.1f GB/s of %.1f, saturated %.0f s", racks,
                 busiest, top.peak_gbps, top.gbps, top.saturated_s);
}

static json_t *faults_json(const run_t *r)
{
    const fault_stats_t *f = &r->fs;
    json_t *o = json_object();
    tide_json_set(o, "bursts", json_integer(f->bursts));
    tide_json_set(o, "nodes_failed", json_integer(f->nodes_failed));
    tide_json_set(o, "nodes_recovered", json_integer(f->nodes_recovered));
    tide_json_set(o, "rank_failures", json_integer(f->rank_failures));
    tide_json_set(o, "rank_failures_skipped", json_integer(f->rank_failures_skipped));
    tide_json_set(o, "ctl_outages", json_integer(f->ctl_outages));
    tide_json_set(o, "ctl_down_s", json_integer(f->ctl_down_s));
    tide_json_set(o, "events_held", json_integer(f->events_held));
    tide_json_set(o, "jobs_expired", json_integer(f->jobs_expired));
    tide_json_set(o, "domains_failed", json_integer(f->domains_failed));
    tide_json_set(o, "partitions", json_integer(f->partitions));
    tide_json_set(o, "double_starts", json_integer(f->double_starts));
    if (f->floor_share_min >= 0)
        tide_json_set(o, "floor_share_min", tide_json_real(f->floor_share_min));
    if (tide_inject_storage_gbps(r->o->inject) > 0) {
        tide_world_storage_t ws;
        tide_world_storage(r->w, r->horizon, &ws);
        json_t *so = json_object();
        bandwidth_json(r, &ws, so);
        tide_json_set(so, "p99_ckpt_s", tide_json_real(samples_p99(r->e, TIDE_SAMPLE_CKPT)));
        tide_json_set(so, "p99_warmup_s", tide_json_real(samples_p99(r->e, TIDE_SAMPLE_WARMUP)));
        storage_qos_json(r, &ws, so);
        uplinks_json(r, so);
        tide_json_set(o, "storage", so);
    }
    return o;
}

/* A reserve (--reserve) below the services' floors is not what runs: the
 * floor replicas hold their GPUs anyway, so smaller reserves behave alike.
 * Say so (summary.json tier_a, and a note under the table); the same when
 * whole domains rounded it up. */
static void reserve_json(const run_t *r, const tide_stats_t *st, json_t *ta, tabrow_t *tab)
{
    int req = r->o->cfg.reserve_gpus, floors = 0;
    for (size_t i = 0; i < r->o->n_services; i++)
        floors += r->o->services[i].min_replicas * r->o->services[i].gpus_per_replica;
    tide_json_set(ta, "floor_gpus", json_integer(floors));
    if (req < 0 || strcmp(r->policy, "elastic") != 0)
        return;
    int eff = TIDE_MAX(st->tier_a_target_gpus, floors);
    tide_json_set(ta, "reserve_requested_gpus", json_integer(req));
    tide_json_set(ta, "reserve_effective_gpus", json_integer(eff));
    tide_json_set(ta, "reserve_raised", json_boolean(eff > req));
    if (req < floors)
        snprintf(tab->note, sizeof tab->note, "--reserve %d is below the services' floors (%d "
                 "GPUs): their floor replicas hold %d GPUs anyway, so it acts as %d", req, floors,
                 floors, eff);
    else if (st->tier_a_target_gpus > req)
        snprintf(tab->note, sizeof tab->note, "--reserve %d was rounded up to whole domains: %d "
                 "GPUs", req, st->tier_a_target_gpus);
}

static json_t *latency_json(const run_t *r, tabrow_t *tab);

/* Energy in kWh. */
static json_t *kwh(double joules) { return tide_json_real(joules / 3.6e6); }

static int capped_cmp(const void *a, const void *b)
{
    const tide_job_info_t *x = a, *y = b;
    return (x->capped_s < y->capped_s) - (x->capped_s > y->capped_s);
}

/* Jobs that ran under a power cap (the most capped first, at most 100) and
 * their totals into o. */
static void capped_jobs_json(const run_t *r, json_t *o)
{
    int n = tide_engine_jobs(r->e);
    size_t k = 0, cap = 0;
    tide_job_info_t *v = NULL, ji; /* the capped ones only (not one per job) */
    double delay = 0, energy = 0;
    for (int h = 0; h < n; h++)
        if (tide_engine_job(r->e, h, &ji) == 0 && ji.capped_s > 0) {
            delay += ji.cap_delay_s;
            energy += ji.cap_energy_j;
            TIDE_PUSH(v, k, cap, ji);
        }
    if (k > 1)
        qsort(v, k, sizeof *v, capped_cmp);
    json_t *a = json_array();
    for (size_t i = 0; i < k && i < 100; i++) {
        json_t *x = json_object();
        tide_json_set(x, "job", json_string(v[i].spec->id));
        tide_json_set(x, "priority", json_integer(v[i].spec->priority));
        tide_json_set(x, "gpus", json_integer(v[i].spec->gpus));
        tide_json_set(x, "capped_h", tide_json_real(v[i].capped_s / 3600.0));
        tide_json_set(x, "delay_h", tide_json_real(v[i].cap_delay_s / 3600.0));
        tide_json_set(x, "energy_kwh", kwh(v[i].cap_energy_j));
        json_array_append_new(a, x);
    }
    tide_json_set(o, "capped_jobs", json_integer((json_int_t)k));
    tide_json_set(o, "cap_delay_h", tide_json_real(delay / 3600.0));
    tide_json_set(o, "cap_energy_kwh", kwh(energy));
    tide_json_set(o, "jobs", a);
    free(v);
}

/* The power series: per domain its budget and the highest planned draw of
 * every pw_step bucket (null where no step fell). */
static json_t *power_series_json(const run_t *r)
{
    const tide_cluster_t *c = tide_engine_cluster(r->e);
    json_t *o = json_object(), *dom = json_array();
    tide_json_set(o, "step_s", json_integer(r->pw_step));
    for (int d = 0; d < r->pw_nd; d++) {
        json_t *x = json_object(), *w = json_array();
        tide_json_set(x, "budget_w", tide_json_real(tide_cluster_power_budget(c, d)));
        tide_json_set(x, "nameplate_w", tide_json_real(tide_cluster_power_nameplate(c, d)));
        for (size_t b = 0; b < r->pw_nb; b++) {
            double v = r->pw_max[b * (size_t)r->pw_nd + (size_t)d];
            json_array_append_new(w, v < 0 ? json_null() : tide_json_round(v, 0));
        }
        tide_json_set(x, "max_w", w);
        json_array_append_new(dom, x);
    }
    tide_json_set(o, "domains", dom);
    return o;
}

/* summary.json policies.<name>.power (docs/sim.md). */
static json_t *power_json(const run_t *r, const tide_stats_t *st)
{
    const tide_cluster_t *c = tide_engine_cluster(r->e);
    json_t *o = json_object(), *en = json_object();
    double total = st->energy_serving_j + st->energy_training_j + st->energy_idle_j +
                   st->energy_other_j;
    double budget = 0;
    for (int d = 0; d < tide_cluster_power_domains(c); d++)
        budget += tide_cluster_power_budget(c, d);
    tide_json_set(o, "budgeted", json_boolean(tide_cluster_power_budgeted(c)));
    tide_json_set(o, "budget_w", tide_json_real(budget));
    tide_json_set(o, "nameplate_w", tide_json_real(tide_cluster_power_nameplate(c, -1)));
    tide_json_set(en, "serving", kwh(st->energy_serving_j));
    tide_json_set(en, "training", kwh(st->energy_training_j));
    tide_json_set(en, "idle", kwh(st->energy_idle_j));
    tide_json_set(en, "other", kwh(st->energy_other_j));
    tide_json_set(en, "total", kwh(total));
    tide_json_set(o, "energy_kwh", en);
    double train_s = 0;
    for (int cl = TIDE_C_P1; cl <= TIDE_C_P3; cl++)
        for (int t = 0; t < TIDE_T_COUNT; t++)
            train_s += st->gpu_s[cl][TIDE_S_TRAINING][t];
    tide_json_set(o, "energy_per_request_j",
                  tide_json_real(ratio(st->energy_serving_j, st->requests_served)));
    tide_json_set(o, "energy_per_useful_training_gpu_hour_kwh",
                  tide_json_real(ratio(st->energy_training_j / 3.6e6, train_s / 3600.0)));
    tide_json_set(o, "caps", json_integer(st->power_caps));
    tide_json_set(o, "stops", json_integer(st->power_stops));
    tide_json_set(o, "starts_held", json_integer(st->power_held));
    tide_json_set(o, "breaches", json_integer(st->power_breaches));
    tide_json_set(o, "max_excess_w", tide_json_real(st->power_excess_w));
    tide_json_set(o, "capped_gpu_hours", tide_json_real(st->capped_gpu_s / 3600.0));
    capped_jobs_json(r, o);
    tide_json_set(o, "series", power_series_json(r));
    return o;
}

static json_t *policy_json(const run_t *r, double wall, tabrow_t *tab)
{
    tide_stats_t st;
    tide_engine_stats(r->e, &st);
    snap_t tot;
    snap_take(&tot, &st, r->horizon);
    double total = (double)st.cluster_gpus * (double)r->horizon;
    double training = tot.state[TIDE_S_TRAINING];
    json_t *o = json_object();
    /* the serving layer's figures while tide was down replace the engine's */
    st.requests_demanded += r->fix_demanded;
    st.requests_served += r->fix_served;
    st.useful_serving_gpu_s += r->fix_useful;
    tab->util = 1.0 - ratio(tot.state[TIDE_S_IDLE], total);
    tab->useful = ratio(st.useful_serving_gpu_s + training, total);
    tide_json_set(o, "utilization", tide_json_real(tab->util));
    tide_json_set(o, "productive_utilization",
         tide_json_real(ratio(tot.state[TIDE_S_SERVING] + training, total)));
    tide_json_set(o, "useful_utilization", tide_json_real(tab->useful));

    static const char *const state_keys[SIM_STATES] = {
        "serving", "warming", "training", "checkpointing", "restoring", "lost", "idle"};
    json_t *gh = json_object();
    for (int k = 0; k < SIM_STATES; k++)
        tide_json_set(gh, state_keys[k], tide_json_real(tot.state[k] / 3600.0));
    tide_json_set(o, "gpu_hours", gh);
    static const char *const cls_keys[] = {"inference", "p1", "p2", "p3"};
    json_t *gc = json_object();
    for (int c = TIDE_C_INFERENCE; c <= TIDE_C_P3; c++)
        tide_json_set(gc, cls_keys[c], tide_json_real(tot.cls[c] / 3600.0));
    tide_json_set(o, "gpu_hours_by_class", gc);
    static const char *const tier_keys[TIDE_T_COUNT] = {"A", "B", "C", "D"};
    json_t *gt = json_object();
    for (int k = 0; k < TIDE_T_COUNT; k++)
        tide_json_set(gt, tier_keys[k], tide_json_real(tot.tier[k] / 3600.0));
    tide_json_set(o, "gpu_hours_by_tier", gt);

    json_t *inf = json_object();
    tab->slo = st.requests_demanded > 0 ? st.requests_served / st.requests_demanded : 1.0;
    tide_json_set(inf, "slo_attainment", tide_json_real(tab->slo));
    /* the same figure under its own name: capacity coverage, not latency */
    tide_json_set(inf, "capacity_slo_attainment", tide_json_real(tab->slo));
    tide_json_set(inf, "unserved_requests",
                  tide_json_real(TIDE_MAX(st.requests_demanded - st.requests_served, 0.0)));
    tide_json_set(inf, "demanded_requests", tide_json_real(st.requests_demanded));
    tide_json_set(inf, "latency", latency_json(r, tab));
    tide_json_set(o, "inference", inf);

    tide_json_set(o, "training", training_json(r, &st, tab));

    json_t *rc = json_object();
    tab->reclaims = st.reclaims;
    tab->late = st.reclaims_late;
    tab->p99_lead = samples_p99(r->e, TIDE_SAMPLE_RECLAIM_RETURN);
    tide_json_set(rc, "count", json_integer(st.reclaims));
    tide_json_set(rc, "late", json_integer(st.reclaims_late));
    tide_json_set(rc, "p99_lead_s", tide_json_real(tab->p99_lead));
    tide_json_set(rc, "p99_notice_to_ready_s",
                  tide_json_real(samples_p99(r->e, TIDE_SAMPLE_RECLAIM_TO_READY)));
    tide_json_set(rc, "leases_granted", json_integer(st.leases_granted));
    tide_json_set(rc, "borrowed_gpu_hours", tide_json_real(st.borrowed_gpu_s / 3600.0));
    tide_json_set(o, "reclaim", rc);

    json_t *le = json_object();
    tab->expired = st.leases_expired;
    tide_json_set(le, "granted", json_integer(st.leases_granted));
    tide_json_set(le, "expired", json_integer(st.leases_expired));
    tide_json_set(o, "lease", le);

    json_t *ta = json_object();
    tab->breach_h = st.tier_a_breach_gpu_s / 3600.0;
    tide_json_set(ta, "reserve_gpus", json_integer(st.tier_a_target_gpus));
    reserve_json(r, &st, ta, tab);
    tide_json_set(ta, "breach_gpu_s", tide_json_real(st.tier_a_breach_gpu_s));
    tide_json_set(o, "tier_a", ta);

    tide_json_set(o, "idle_while_queued_gpu_hours", tide_json_real(st.idle_while_queued_gpu_s / 3600.0));
    if (r->o->inject && r->o->inject->n > 0)
        tide_json_set(o, "faults", faults_json(r));
    storage_line(r, tab);
    tide_json_set(o, "teams", teams_json(r->e));
    tide_json_set(o, "power", power_json(r, &st));
    tide_json_set(o, "events", json_integer(r->rows));
    tide_json_set(o, "steps", json_integer(r->steps));
    tide_json_set(o, "input_events", json_integer(r->input_events));
    tide_json_set(o, "wall_s", tide_json_real(wall));
    tab->ok = 1;
    return o;
}

/* ------------------------------------------------------------ one policy */

/* Policies whose fixed inference partition is sized from the services'
 * fixed_replicas: the simulator gives them the peak of demand.csv (a planner
 * sizing a static partition knows the peak it is sized for). `isolated` keeps
 * those replicas hot; `static` and `timeshare` size their automatic split
 * (--split not given) from it and still autoscale inside it. */
static const char *const peak_sized[] = {"isolated", "static", "timeshare"};

static int knows_peak(const char *policy)
{
    for (size_t i = 0; i < sizeof peak_sized / sizeof peak_sized[0]; i++)
        if (!strcmp(peak_sized[i], policy))
            return 1;
    return 0;
}

static int add_services(run_t *r, tide_error_t *err)
{
    const tide_sim_opts_t *o = r->o;
    int isolated = knows_peak(r->policy);
    double *peak = tide_xcalloc(o->n_services ? o->n_services : 1, sizeof *peak);
    for (size_t i = 0; i < o->n_demand; i++) {
        int s = o->demand[i].service;
        if (s >= 0 && (size_t)s < o->n_services && o->demand[i].rps > peak[s])
            peak[s] = o->demand[i].rps;
    }
    int rc = 0;
    for (size_t i = 0; i < o->n_services && rc == 0; i++) {
        tide_service_spec_t s = o->services[i];
        if (isolated && s.fixed_replicas <= 0) {
            double need = s.replica_rps > 0 ? ceil(peak[i] / s.replica_rps - 1e-9) : 0;
            int fixed = TIDE_MAX(s.min_replicas, (int)need);
            if (s.max_replicas > 0 && fixed > s.max_replicas)
                fixed = s.max_replicas;
            s.fixed_replicas = fixed;
        }
        int idx = tide_engine_add_service(r->e, &s, err);
        if (idx < 0)
            rc = tide_err_prefix(err, "policy %s: service %s: ", r->policy, s.name);
        else if ((size_t)idx != i)
            rc = tide_errf(err, TIDE_ESTATE, "policy %s: service %s got index %d, expected %zu",
                           r->policy, s.name, idx, i);
    }
    free(peak);
    return rc;
}

/* Past demand into the forecast, before the first step. */
static int preload_history(run_t *r, tide_error_t *err)
{
    const tide_sim_opts_t *o = r->o;
    for (size_t i = 0; i < o->n_history; i++)
        if (tide_engine_demand_history(r->e, o->history[i].service, o->history[i].t,
                                       o->history[i].rps, err) < 0)
            return tide_err_prefix(err, "policy %s: demand history: ", r->policy);
    return 0;
}

/* The latency model of the services (their declarations, defaults for the
 * rest). A service whose declarations are invalid keeps the defaults (the
 * reader has checked them). */
static tide_latency_t *latency_create(const tide_sim_opts_t *o)
{
    size_t n = o->n_services;
    tide_latency_spec_t *sp = tide_xcalloc(n ? n : 1, sizeof *sp);
    for (size_t i = 0; i < n; i++) {
        sp[i].replica_rps = o->services[i].replica_rps;
        if (o->service_latency) {
            const tide_io_latency_t *l = &o->service_latency[i];
            sp[i] = (tide_latency_spec_t){
                .replica_rps = o->services[i].replica_rps, .ttft_target_s = l->ttft_target_s,
                .tbt_target_s = l->tbt_target_s, .prompt_tokens = l->prompt_tokens,
                .output_tokens = l->output_tokens, .prefill_tps = l->prefill_tps,
                .decode_tps = l->decode_tps, .decode_knee = l->decode_knee,
                .queue_max_s = l->queue_max_s};
        }
        tide_latency_spec_t probe = sp[i];
        if (tide_latency_spec_default(&probe) != 0)
            sp[i] = (tide_latency_spec_t){.replica_rps = o->services[i].replica_rps};
    }
    tide_latency_t *m = tide_latency_create(sp, n);
    free(sp);
    return m;
}

/* summary.json inference.latency: all services together, then per service. */
static json_t *latency_json(const run_t *r, tabrow_t *tab)
{
    json_t *o = json_object();
    for (int s = -1; s < (int)r->o->n_services; s++) {
        tide_latency_stats_t ls;
        if (!r->lat || tide_latency_stats(r->lat, s, &ls) != 0)
            break;
        json_t *x = json_object();
        tide_json_set(x, "ttft_p50_s", tide_json_real(ls.ttft_p50_s));
        tide_json_set(x, "ttft_p99_s", tide_json_real(ls.ttft_p99_s));
        tide_json_set(x, "tbt_p50_s", tide_json_real(ls.tbt_p50_s));
        tide_json_set(x, "tbt_p99_s", tide_json_real(ls.tbt_p99_s));
        tide_json_set(x, "ttft_slo_attainment", tide_json_real(ls.ttft_attain));
        tide_json_set(x, "tbt_slo_attainment", tide_json_real(ls.tbt_attain));
        tide_json_set(x, "arrived", tide_json_real(ls.arrived));
        tide_json_set(x, "served", tide_json_real(ls.served));
        tide_json_set(x, "queued", tide_json_real(ls.queued));
        tide_json_set(x, "rejected", tide_json_real(ls.rejected));
        tide_json_set(x, "max_queue", tide_json_real(ls.max_queue));
        if (s < 0) {
            tab->ttft_p99 = ls.ttft_p99_s;
            tab->tbt_p99 = ls.tbt_p99_s;
            tab->ttft_slo = ls.ttft_attain;
            tide_json_set(o, "all", x);
            json_t *sv = json_object();
            tide_json_set(o, "services", sv);
            continue;
        }
        const tide_latency_spec_t *sp = tide_latency_spec(r->lat, s);
        tide_json_set(x, "ttft_target_s", tide_json_real(sp->ttft_target_s));
        tide_json_set(x, "tbt_target_s", tide_json_real(sp->tbt_target_s));
        tide_json_set(json_object_get(o, "services"), r->o->services[s].name, x);
    }
    return o;
}

static json_t *run_policy(run_t *r, tabrow_t *tab, double *oracle, tide_error_t *err)
{
    const tide_sim_opts_t *o = r->o;
    tide_config_t cfg = o->cfg;
    cfg.policy = r->policy;
    cfg.check_invariants = o->check ? 1 : 0;
    cfg.warm_start = 1; /* a replay starts from a running cluster */
    r->wall0 = now_wall();
    r->fs.floor_share_min = -1;
    r->obs_wake = TIDE_TIME_NEVER;
    r->e = tide_engine_create(o->cluster, &cfg, err);
    if (!r->e) {
        tide_err_prefix(err, "policy %s: ", r->policy);
        return NULL;
    }
    tide_actions_init(&r->acts);
    r->pw_nd = tide_cluster_power_domains(o->cluster);
    r->pw_budgeted = tide_cluster_power_budgeted(o->cluster);
    r->pw_now = tide_xcalloc((size_t)r->pw_nd + 1, sizeof *r->pw_now);
    r->w = tide_world_create(r->e);
    r->lat = latency_create(o);
    /* with the model pipeline, which writes to evf itself after every step,
     * the rows are formatted in place; so they are when asked (a sweep) */
    evout_open(&r->eo, r->evf, r->policy, !o->pipeline && !o->inline_outputs);
    if (o->inject && o->inject->n > 0) {
        double gbps = tide_inject_storage_gbps(o->inject);
        if (gbps > 0) {
            tide_world_set_storage(r->w, gbps);
            tide_world_set_qos(r->w, o->bulk_qos);
            for (int k = 0, nr = tide_cluster_racks(o->cluster); k < nr; k++)
                tide_world_set_uplink(r->w, k,
                                      o->uplink_gbps > 0 ? o->uplink_gbps
                                                         : tide_cluster_rack_uplink(o->cluster, k));
            for (size_t i = 0; i < o->n_services; i++)
                tide_world_set_service_gb(
                    r->w, (int)i,
                    o->service_weights_gb
                        ? o->service_weights_gb[i]
                        : TIDE_IO_WEIGHTS_GB_PER_GPU * o->services[i].gpus_per_replica);
        }
        r->base_rps = tide_xmalloc((o->n_services ? o->n_services : 1) * sizeof *r->base_rps);
        for (size_t i = 0; i < o->n_services; i++)
            r->base_rps[i] = -1;
        r->burst_on = tide_xcalloc(o->inject->n, sizeof *r->burst_on);
        int nodes = tide_cluster_nodes(o->cluster);
        r->node_up = tide_xmalloc((size_t)(nodes > 0 ? nodes : 1));
        memset(r->node_up, 1, (size_t)(nodes > 0 ? nodes : 1));
    }
    json_t *res = NULL;
    if (tide_governance_apply(o->governance, r->e, NULL, err) == 0 && add_services(r, err) == 0 &&
        (!o->pipeline || (r->ps = tide_pipesim_create(o->pipeline, r->e, err))) &&
        preload_history(r, err) == 0 && replay(r, err) == 0) {
        tide_stats_t st;
        tide_engine_stats(r->e, &st);
        if (*oracle < 0)
            *oracle = st.oracle_gpu_s;
        res = policy_json(r, now_wall() - r->wall0, tab);
        if (r->ps)
            json_object_set_new(res, "pipeline", tide_pipesim_json(r->ps, r->horizon));
    }
    /* every row written before the strings they point to go (the pipeline's
     * and the engine's) */
    int werr = evout_close(&r->eo);
    if (werr && r->ev_werr && !*r->ev_werr)
        *r->ev_werr = werr;
    tide_pipesim_destroy(r->ps);
    r->ps = NULL;
    timeline_flush(r);
    ds_close(r, NULL);
    free(r->rows_v);
    free(r->pw_max);
    free(r->pw_now);
    free(r->fc_rows);
    free(r->fc_prev);
    r->fc_rows = r->fc_prev = NULL;
    r->capfc = 0;
    free(r->loss);
    free(r->deaths);
    r->rows_v = NULL;
    r->loss = NULL;
    r->deaths = NULL;
    tide_world_destroy(r->w);
    tide_latency_destroy(r->lat);
    r->lat = NULL;
    tide_actions_free(&r->acts);
    tide_engine_destroy(r->e);
    free(r->ev);
    r->ev = NULL;
    r->nev = r->cap_ev = 0;
    free(r->base_rps);
    free(r->burst_on);
    free(r->node_up);
    free(r->failed);
    free(r->pending);
    r->base_rps = NULL;
    r->burst_on = NULL;
    r->node_up = NULL;
    r->failed = NULL;
    r->pending = NULL;
    return res;
}

/* ----------------------------------------------------------------- table */

/* P99 TTFT of the `isolated` row (the baseline), or -1 when it did not run. */
static double isolated_ttft(const tabrow_t *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (t[i].ok && !strcmp(t[i].policy, "isolated"))
            return t[i].ttft_p99;
    return -1;
}

static void print_table(FILE *f, const tabrow_t *t, size_t n)
{
    fprintf(f, "%-10s %7s %7s %8s %6s %8s %8s %9s %14s %10s %8s %10s %9s %9s %9s %8s\n", "policy",
            "util%", "useful%", "cap_SLO", "jobs", "queue_h", "preempt", "lost_gpuh",
            "reclaims(late)", "p99lead_s", "expired", "A_breach_h", "ttft_SLO", "p99TTFT_s",
            "p99TBT_ms", "TTFT_x");
    double base = isolated_ttft(t, n);
    for (size_t i = 0; i < n; i++) {
        if (!t[i].ok) {
            fprintf(f, "%-10s failed\n", t[i].policy);
            continue;
        }
        char rl[32], x[32] = "-";
        snprintf(rl, sizeof rl, "%d(%d)", t[i].reclaims, t[i].late);
        if (base > 0)
            snprintf(x, sizeof x, "%.3g", t[i].ttft_p99 / base);
        fprintf(f, "%-10s %7.2f %7.2f %8.4f %6d %8.2f %8d %9.1f %14s %10.0f %8d %10.1f %9.4f "
                   "%9.3f %9.1f %8s\n",
                t[i].policy, 100 * t[i].util, 100 * t[i].useful, t[i].slo, t[i].jobs_done,
                t[i].mean_queue_s / 3600.0, t[i].preemptions, t[i].lost_h, rl, t[i].p99_lead,
                t[i].expired, t[i].breach_h, t[i].ttft_slo, t[i].ttft_p99, 1000 * t[i].tbt_p99,
                x);
    }
    for (size_t i = 0; i < n; i++)
        if (t[i].ok && t[i].note[0])
            fprintf(f, "note: %s: %s\n", t[i].policy, t[i].note);
    for (size_t i = 0; i < n; i++)
        if (t[i].ok && t[i].io[0])
            fprintf(f, "storage: %s: %s\n", t[i].policy, t[i].io);
}

/* P99 TTFT and TBT of figures x over those of base (isolated's), as an object. */
static json_t *ratio_p99(json_t *x, json_t *base)
{
    json_t *v = json_object();
    static const char *const keys[2][2] = {{"ttft_p99_s", "ttft_p99_x"},
                                           {"tbt_p99_s", "tbt_p99_x"}};
    for (int k = 0; k < 2; k++)
        tide_json_set(v, keys[k][1],
                      tide_json_real(ratio(json_number_value(json_object_get(x, keys[k][0])),
                                           json_number_value(json_object_get(base, keys[k][0])))));
    return v;
}

/* summary.json policies.P.inference.latency.vs_isolated (and the same in
 * each service's figures): P99 TTFT and TBT of every policy over those of
 * `isolated`, when it ran. */
static void add_vs_isolated(json_t *pols)
{
    json_t *il = json_object_get(json_object_get(json_object_get(pols, "isolated"), "inference"),
                                 "latency");
    if (!json_object_get(il, "all"))
        return;
    const char *name, *sname;
    json_t *pj, *sv;
    json_object_foreach(pols, name, pj) {
        json_t *lat = json_object_get(json_object_get(pj, "inference"), "latency");
        if (!json_object_get(lat, "all"))
            continue;
        tide_json_set(lat, "vs_isolated",
                      ratio_p99(json_object_get(lat, "all"), json_object_get(il, "all")));
        json_object_foreach(json_object_get(lat, "services"), sname, sv) {
            json_t *base = json_object_get(json_object_get(il, "services"), sname);
            if (base)
                tide_json_set(sv, "vs_isolated", ratio_p99(sv, base));
        }
    }
}

/* ------------------------------------------------------------------- API */

void tide_sim_opts_default(tide_sim_opts_t *o)
{
    memset(o, 0, sizeof *o);
    tide_config_default(&o->cfg);
    o->interval_s = TIDE_SIM_DEFAULT_INTERVAL;
}

tide_time_t tide_sim_auto_horizon(const tide_sim_opts_t *o)
{
    tide_time_t last = 0;
    for (size_t i = 0; i < o->n_demand; i++)
        last = TIDE_MAX(last, o->demand[i].t);
    for (size_t i = 0; i < o->n_jobs; i++)
        last = TIDE_MAX(last, o->jobs[i].submit_s);
    tide_time_t days = (last + DAY_S - 1) / DAY_S;
    return TIDE_MAX(days, 1) * DAY_S;
}

static int check_opts(const tide_sim_opts_t *o, tide_error_t *err)
{
    if (!o->cluster)
        return tide_errf(err, TIDE_EINVAL, "no cluster given");
    if (!o->out_dir || !*o->out_dir)
        return tide_errf(err, TIDE_EINVAL, "no output directory given");
    if (o->n_policies > TIDE_SIM_MAX_POLICIES)
        return tide_errf(err, TIDE_EINVAL, "too many policies (at most %d)",
                         TIDE_SIM_MAX_POLICIES);
    for (size_t i = 0; i < o->n_policies; i++)
        if (!o->policies[i] || !policy_known(o->policies[i]))
            return tide_errf(err, TIDE_EINVAL, "unknown policy '%s'",
                             o->policies[i] ? o->policies[i] : "(null)");
    if (o->horizon_s < 0)
        return tide_errf(err, TIDE_EINVAL, "negative horizon");
    if (o->interval_s < 0)
        return tide_errf(err, TIDE_EINVAL, "negative timeline interval");
    for (size_t i = 0; i < o->n_demand; i++)
        if (o->demand[i].service < 0 || (size_t)o->demand[i].service >= o->n_services)
            return tide_errf(err, TIDE_EINVAL, "demand point %zu names service %d of %zu", i,
                             o->demand[i].service, o->n_services);
    for (size_t i = 0; i < o->n_history; i++)
        if (o->history[i].service < 0 || (size_t)o->history[i].service >= o->n_services ||
            o->history[i].t > 0 || (i > 0 && o->history[i].t < o->history[i - 1].t))
            return tide_errf(err, TIDE_EINVAL,
                             "history point %zu (service %d, t %lld): history is sorted by time, "
                             "at times <= 0, for known services",
                             i, o->history[i].service, (long long)o->history[i].t);
    if (tide_inject_check(o->inject, o->services, o->n_services, o->jobs, o->n_jobs,
                          tide_cluster_nodes(o->cluster), err) != 0 ||
        tide_inject_check_domains(o->inject, tide_cluster_racks(o->cluster),
                                  tide_cluster_power_domains(o->cluster),
                                  tide_cluster_nodes(o->cluster), err) != 0)
        return -1;
    return 0;
}

/* Everything one call of tide_sim_run owns. */
typedef struct outputs {
    char tl_path[4096], ev_path[4096], sum_path[4096];
    FILE *tl, *ev;
    int ev_werr; /* errno of the first failed write to ev by the rows' writer */
} outputs_t;

static json_t *options_json(const tide_sim_opts_t *o, tide_time_t horizon, tide_time_t interval);

static int write_summary(const tide_sim_opts_t *o, outputs_t *out, tide_time_t horizon,
                         tide_time_t interval, double oracle, json_t *pols, tide_error_t *err)
{
    int gpus = tide_cluster_gpus(o->cluster);
    json_t *top = json_object();
    tide_json_set(top, "horizon_s", json_integer(horizon));
    tide_json_set(top, "cluster_gpus", json_integer(gpus));
    if (o->seed <= (uint64_t)INT64_MAX)
        tide_json_set(top, "seed", json_integer((json_int_t)o->seed));
    else /* beyond JSON's safe integers anyway: keep every digit */
        tide_json_set(top, "seed", json_sprintf("%llu", (unsigned long long)o->seed));
    json_t *orc = json_object();
    tide_json_set(orc, "max_utilization",
         tide_json_real(ratio(oracle > 0 ? oracle : 0, (double)gpus * (double)horizon)));
    tide_json_set(top, "oracle", orc);
    tide_json_set(top, "policies", json_incref(pols));
    tide_json_set(top, "options", options_json(o, horizon, interval));
    FILE *f = open_out(o->out_dir, "summary.json", out->sum_path, sizeof out->sum_path, err);
    int rc = -1;
    if (f) {
        rc = json_dumpf(top, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
        fputc('\n', f);
        if (rc != 0)
            tide_errf(err, TIDE_EIO, "cannot write %s", out->sum_path);
        if (close_out(f, out->sum_path, err) != 0)
            rc = -1;
    }
    json_decref(top);
    return rc;
}

/* ------------------------------------------------------------- outputs */

static const struct {
    const char *name;
    unsigned bit;
    const char *const files[4];
} out_files[] = {
    {"summary", TIDE_SIM_OUT_SUMMARY, {"summary.json"}},
    {"timeline", TIDE_SIM_OUT_TIMELINE, {"timeline.csv"}},
    {"events", TIDE_SIM_OUT_EVENTS, {"events.csv"}},
    {"usage", TIDE_SIM_OUT_USAGE, {"usage.csv", "usage_teams.csv", "usage_services.csv"}},
};
#define N_OUT_FILES (sizeof out_files / sizeof out_files[0])

int tide_sim_outputs_parse(const char *list, unsigned *mask, tide_error_t *err)
{
    *mask = 0;
    const char *p = list ? list : "";
    while (*p) {
        size_t n = strcspn(p, ",");
        int found = n == 3 && !strncmp(p, "all", 3);
        if (found)
            *mask |= TIDE_SIM_OUT_ALL;
        for (size_t i = 0; i < N_OUT_FILES && !found; i++)
            if (strlen(out_files[i].name) == n && !strncmp(p, out_files[i].name, n)) {
                *mask |= out_files[i].bit;
                found = 1;
            }
        if (!found)
            return tide_errf(err, TIDE_EINVAL, "unknown output '%.*s' (known: summary, timeline, "
                             "events, usage, all)", (int)n, p);
        p += n + (p[n] == ',');
    }
    if (!*mask)
        return tide_errf(err, TIDE_EINVAL, "no output named");
    return 0;
}

static unsigned outputs_of(const tide_sim_opts_t *o) { return o->outputs ? o->outputs : TIDE_SIM_OUT_ALL; }

/* Open the outputs asked for and remove the others' stale files (a report
 * must not read a previous run's timeline beside this run's summary). */
static int open_outputs(const tide_sim_opts_t *o, outputs_t *out, tide_usage_t **usage,
                        tide_error_t *err)
{
    unsigned m = outputs_of(o);
    for (size_t i = 0; i < N_OUT_FILES; i++)
        for (int k = 0; !(m & out_files[i].bit) && k < 4 && out_files[i].files[k]; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", o->out_dir, out_files[i].files[k]);
            if (unlink(path) != 0 && errno != ENOENT)
                return tide_errf(err, TIDE_EIO, "cannot remove the stale %s: %s", path,
                                 strerror(errno));
        }
    if ((m & TIDE_SIM_OUT_TIMELINE) &&
        !(out->tl = open_out(o->out_dir, "timeline.csv", out->tl_path, sizeof out->tl_path, err)))
        return -1;
    if ((m & TIDE_SIM_OUT_EVENTS) &&
        !(out->ev = open_out(o->out_dir, "events.csv", out->ev_path, sizeof out->ev_path, err))) {
        if (out->tl)
            fclose(out->tl);
        return -1;
    }
    if ((m & TIDE_SIM_OUT_USAGE) && !(*usage = tide_usage_open(o->out_dir, o->governance, err))) {
        if (out->tl)
            fclose(out->tl);
        if (out->ev)
            fclose(out->ev);
        return -1;
    }
    if (out->tl)
        timeline_header(out->tl, o);
    if (out->ev)
        fputs(EVENTS_HEADER, out->ev);
    return 0;
}

/* summary.json's "options": what made this run (policies, knobs, outputs,
 * the command line). */
static json_t *options_json(const tide_sim_opts_t *o, tide_time_t horizon, tide_time_t interval)
{
    json_t *x = json_object();
    json_t *pol = json_array();
    for (size_t i = 0; i < o->n_policies; i++)
        json_array_append_new(pol, json_string(o->policies[i]));
    if (!o->n_policies)
        for (const char *const *n = tide_policy_names(); *n; n++)
            json_array_append_new(pol, json_string(*n));
    tide_json_set(x, "policies", pol);
    tide_json_set(x, "horizon_s", json_integer(horizon));
    tide_json_set(x, "interval_s", json_integer(interval));
    tide_json_set(x, "reserve_gpus", o->cfg.reserve_gpus >= 0 ? json_integer(o->cfg.reserve_gpus)
                                                               : json_null());
    tide_json_set(x, "split_inference_gpus",
                  o->cfg.split_inf >= 0 ? json_integer(o->cfg.split_inf) : json_null());
    tide_json_set(x, "night_hours", json_pack("[ii]", o->cfg.night_start_h, o->cfg.night_end_h));
    tide_json_set(x, "margin_min", tide_json_real(o->cfg.margin_min));
    tide_json_set(x, "headroom", tide_json_real(o->cfg.headroom));
    tide_json_set(x, "spread_max_skew", json_integer(o->cfg.spread_max_skew));
    tide_json_set(x, "survive_share", tide_json_real(o->cfg.survive_share));
    tide_json_set(x, "hpa_window_s", json_integer(o->cfg.hpa_window_s));
    tide_json_set(x, "obs_window_s", json_integer(o->cfg.obs_window_s));
    tide_json_set(x, "sizing", json_string(o->cfg.sizing_ensemble ? "ensemble" : "forecast"));
    tide_json_set(x, "fairshare", json_boolean(o->cfg.fairshare));
    tide_json_set(x, "lead_extra_s", json_integer(o->cfg.lead_extra_s));
    tide_json_set(x, "scale_down_hold_s", json_integer(o->cfg.scale_down_hold_s));
    tide_json_set(x, "check", json_boolean(o->check));
    tide_json_set(x, "faults", json_integer(o->inject ? (json_int_t)o->inject->n : 0));
    json_t *outs = json_array();
    for (size_t i = 0; i < N_OUT_FILES; i++)
        if (outputs_of(o) & out_files[i].bit)
            json_array_append_new(outs, json_string(out_files[i].name));
    tide_json_set(x, "outputs", outs);
    json_t *cmd = json_array();
    for (int i = 0; o->argv && i < o->argc; i++)
    {
        json_t *a = json_string(o->argv[i]); /* NULL for invalid UTF-8 */
        json_array_append_new(cmd, a ? a : json_null());
    }
    tide_json_set(x, "command", cmd);
    return x;
}

int tide_sim_run(const tide_sim_opts_t *o, tide_error_t *err)
{
    if (check_opts(o, err) != 0 || tide_mkdir_p(o->out_dir, err) != 0)
        return -1;
    const char *const *names = o->policies;
    size_t np = o->n_policies;
    if (np == 0) {
        names = tide_policy_names();
        while (names[np])
            np++;
    }
    tide_time_t horizon = o->horizon_s > 0 ? o->horizon_s : tide_sim_auto_horizon(o);
    tide_time_t interval = o->interval_s > 0 ? o->interval_s : TIDE_SIM_DEFAULT_INTERVAL;

    outputs_t out = {0};
    tide_usage_t *usage = NULL;
    if (open_outputs(o, &out, &usage, err) != 0)
        return -1;

    size_t *job_order = stable_order(o->n_jobs, o->jobs, sizeof *o->jobs,
                                     offsetof(tide_job_spec_t, submit_s));
    size_t *dem_order = stable_order(o->n_demand, o->demand, sizeof *o->demand,
                                     offsetof(tide_demand_point_t, t));
    tide_schedule_t sched = {0};
    if (o->inject && o->inject->n > 0)
        tide_inject_schedule(o->inject, horizon, o->seed, &sched);
    tabrow_t *tab = tide_xcalloc(np, sizeof *tab);
    json_t *pols = json_object();
    double oracle = -1;
    int show = o->progress || isatty(STDERR_FILENO);
    tide_error_t first = {0};
    int failed = 0; /* policies that failed */
    for (size_t i = 0; i < np; i++) {
        run_t r = {.o = o, .policy = names[i], .horizon = horizon, .interval = interval,
                   .job_order = job_order, .dem_order = dem_order, .tl = out.tl,
                   .evf = out.ev, .ev_werr = &out.ev_werr, .show_progress = show,
                   .sched = o->inject && o->inject->n > 0 ? &sched : NULL, .usage = usage};
        tab[i].policy = names[i];
        tide_error_t perr = {0};
        json_t *pj = run_policy(&r, &tab[i], &oracle, &perr);
        if (!pj) {
            if (!failed)
                first = perr;
            failed++;
            pj = json_object();
            tide_json_set(pj, "error", json_string(perr.msg));
        }
        tide_json_set(pols, names[i], pj);
    }
    add_vs_isolated(pols);
    int rc = 0;
    if (out.tl && close_out(out.tl, out.tl_path, err) != 0)
        rc = -1;
    if (out.ev && close_out_saved(out.ev, out.ev_path, out.ev_werr, rc ? NULL : err) != 0)
        rc = -1;
    if (usage && tide_usage_close(usage, rc ? NULL : err) != 0)
        rc = -1;
    if (rc == 0 && (outputs_of(o) & TIDE_SIM_OUT_SUMMARY) &&
        write_summary(o, &out, horizon, interval, oracle, pols, err) != 0)
        rc = -1;
    if (rc == 0 && o->table)
        print_table(o->table, tab, np);
    json_decref(pols);
    free(tab);
    free(job_order);
    free(dem_order);
    tide_schedule_free(&sched);
    if (rc == 0 && failed) {
        if (err) {
            *err = first;
            if (failed > 1)
                tide_err_prefix(err, "%d policies failed (see summary.json), the first: ", failed);
        }
        rc = -1;
    }
    return rc;
}
