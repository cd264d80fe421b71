/* Fault injection: the --inject parser and the schedule of firings. */
#include "sim/inject.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/util.h"

#define MAX_ITEM_LEN 1024
#define MAX_T_S 100000000000LL /* ~3000 years, as the CSV readers */
#define MAX_NODES 65536

static const char *const kind_names[TIDE_FAULT_KIND_COUNT] = {
    "burst", "node-fail", "rank-fail", "rank-fail-rate", "ctl-down", "storage", "rack-fail",
    "power-fail", "partition"};

const char *tide_fault_kind_name(int kind)
{
    return kind >= 0 && kind < TIDE_FAULT_KIND_COUNT ? kind_names[kind] : "unknown";
}

/* ------------------------------------------------------------------ rng */

uint64_t tide_inject_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double tide_inject_uniform(uint64_t *state)
{
    return (double)(tide_inject_rand(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---------------------------------------------------------------- list */

void tide_inject_init(tide_inject_t *inj) { memset(inj, 0, sizeof *inj); }

static void fault_free(tide_fault_t *f)
{
    free(f->text);
    free(f->target);
    free(f->nodes);
}

void tide_inject_free(tide_inject_t *inj)
{
    if (!inj)
        return;
    for (size_t i = 0; i < inj->n; i++)
        fault_free(&inj->v[i]);
    free(inj->v);
    tide_inject_init(inj);
}

/* --------------------------------------------------------------- parser */

/* Error naming the item: "'ITEM': problem". */
static int item_err(tide_error_t *err, const char *item, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int item_err(tide_error_t *err, const char *item, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t n = strlen(item);
    return tide_errf(err, TIDE_EINVAL, "'%.*s%s': %s", (int)(n > 120 ? 117 : n), item,
                     n > 120 ? "..." : "", msg);
}

static int has_ctl(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 1;
    return 0;
}

/* A time or duration: digits first (no sign, no spaces), then what
 * tide_parse_duration accepts. Returns 0 or -1. */
static int parse_time(const char *s, size_t n, tide_time_t *out)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf || !(isdigit((unsigned char)s[0]) || s[0] == '.'))
        return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    int64_t v;
    if (tide_parse_duration(buf, &v) < 0 || v > MAX_T_S)
        return -1;
    *out = v;
    return 0;
}

/* "T" or "T+D" in s[0..n). need_dur: 1 required, 0 optional, -1 forbidden.
 * *dur = 0 when absent. */
static int parse_when(const char *item, const char *s, size_t n, int need_dur, tide_time_t *at,
                      tide_time_t *dur, tide_error_t *err)
{
    const char *plus = memchr(s, '+', n);
    size_t tn = plus ? (size_t)(plus - s) : n;
    if (parse_time(s, tn, at) < 0)
        return item_err(err, item, "bad time '%.*s' (like 90s, 15m, 36h, 1.5d)",
                        (int)TIDE_MIN(tn, 40), s);
    if (plus && need_dur < 0)
        return item_err(err, item, "takes a time only, no +duration");
    if (!plus && need_dur > 0)
        return item_err(err, item, "needs a duration: @T+D, like @36h+2h");
    *dur = 0;
    if (plus) {
        size_t dn = n - tn - 1;
        if (parse_time(plus + 1, dn, dur) < 0)
            return item_err(err, item, "bad duration '%.*s' (like 90s, 15m, 2h)",
                            (int)TIDE_MIN(dn, 40), plus + 1);
        if (*dur <= 0)
            return item_err(err, item, "the duration must be > 0");
    }
    return 0;
}

static int parse_number(const char *s, size_t n, double *out)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf || !(isdigit((unsigned char)s[0]) || s[0] == '.'))
        return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    return tide_parse_double(buf, out);
}

static char *dup_n(const char *s, size_t n)
{
    char *p = tide_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* burst:[SERVICE:]Fx@T+D */
static int parse_burst(const char *item, const char *body, tide_fault_t *f, tide_error_t *err)
{
    const char *at = strrchr(body, '@');
    if (!at)
        return item_err(err, item, "expected burst:[SERVICE:]Fx@T+D, like burst:2x@36h+2h");
    const char *colon = NULL;
    for (const char *p = body; p < at; p++)
        if (*p == ':')
            colon = p;
    const char *fs = colon ? colon + 1 : body;
    size_t fn = (size_t)(at - fs);
    if (colon) {
        size_t sn = (size_t)(colon - body);
        if (sn == 0)
            return item_err(err, item, "empty service name");
        f->target = dup_n(body, sn);
    }
    if (fn == 0)
        return item_err(err, item, "missing factor: expected burst:[SERVICE:]Fx@T+D");
    if (fs[fn - 1] != 'x' && fs[fn - 1] != 'X')
        return item_err(err, item, "factor '%.*s' must end in x, like 2x", (int)TIDE_MIN(fn, 40),
                        fs);
    if (parse_number(fs, fn - 1, &f->factor) < 0 || !(f->factor > 0) ||
        f->factor > TIDE_INJECT_MAX_FACTOR)
        return item_err(err, item, "factor '%.*s' is not a number in (0, %g], like 2x",
                        (int)TIDE_MIN(fn, 40), fs, TIDE_INJECT_MAX_FACTOR);
    return parse_when(item, at + 1, strlen(at + 1), 1, &f->at, &f->dur, err);
}

/* node-fail:N@T[+D] */
static int parse_node_fail(const char *item, const char *body, tide_fault_t *f,
                           tide_error_t *err)
{
    const char *at = strchr(body, '@');
    if (!at)
        return item_err(err, item, "expected node-fail:N@T[+D], like node-fail:3@50h+4h");
    size_t nn = (size_t)(at - body);
    char buf[16];
    long long v = 0;
    int ok = nn > 0 && nn < sizeof buf;
    for (size_t i = 0; ok && i < nn; i++)
        ok = isdigit((unsigned char)body[i]) != 0;
    if (ok) {
        memcpy(buf, body, nn);
        buf[nn] = 0;
        ok = tide_parse_int(buf, &v) == 0 && v >= 1 && v <= MAX_NODES;
    }
    if (!ok)
        return item_err(err, item, "node count '%.*s' is not a whole number 1..%d",
                        (int)TIDE_MIN(nn, 40), body, MAX_NODES);
    f->count = (int)v;
    return parse_when(item, at + 1, strlen(at + 1), 0, &f->at, &f->dur, err);
}

/* A whole number 0..MAX_NODES in s[0..n), or -1. */
static int small_uint(const char *s, size_t n)
{
    if (n == 0 || n > 6)
        return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v <= MAX_NODES ? v : -1;
}

/* rack-fail:R@T[+D], power-fail:P@T[+D] (R, P: an index or `busiest`) */
static int parse_domain_fail(const char *item, const char *body, tide_fault_t *f,
                             tide_error_t *err)
{
    const char *at = strchr(body, '@');
    const char *what = f->kind == TIDE_FAULT_RACK_FAIL ? "rack" : "power domain";
    if (!at)
        return item_err(err, item, "expected %s@T[+D], like %s:busiest@30h+2h",
                        f->kind == TIDE_FAULT_RACK_FAIL ? "rack-fail:R" : "power-fail:P",
                        f->kind == TIDE_FAULT_RACK_FAIL ? "rack-fail" : "power-fail");
    size_t n = (size_t)(at - body);
    if (n == 7 && !strncmp(body, "busiest", 7))
        f->domain = -1;
    else if ((f->domain = small_uint(body, n)) < 0)
        return item_err(err, item, "%s '%.*s' is not an index (0, 1, ...) or 'busiest'", what,
                        (int)TIDE_MIN(n, 40), body);
    return parse_when(item, at + 1, strlen(at + 1), 0, &f->at, &f->dur, err);
}

/* partition:NODES@T+D, NODES = N | A-B joined by '|' */
static int parse_partition(const char *item, const char *body, tide_fault_t *f,
                           tide_error_t *err)
{
    const char *at = strchr(body, '@');
    if (!at || at == body)
        return item_err(err, item, "expected partition:NODES@T+D, like partition:4-7@30h+1h");
    const char *p = body;
    size_t cap = 0;
    while (p < at) {
        const char *e = p;
        while (e < at && *e != '|')
            e++;
        const char *dash = memchr(p, '-', (size_t)(e - p));
        int a = small_uint(p, (size_t)((dash ? dash : e) - p));
        int b = dash ? small_uint(dash + 1, (size_t)(e - dash - 1)) : a;
        if (a < 0 || b < a || (size_t)(b - a) + (size_t)f->n_nodes > MAX_NODES)
            return item_err(err, item, "nodes '%.*s': expected N, A-B (A <= B) or N|M|...",
                            (int)TIDE_MIN((size_t)(e - p), 40), p);
        for (int x = a; x <= b; x++)
            TIDE_PUSH(f->nodes, f->n_nodes, cap, x);
        p = e < at ? e + 1 : e;
        if (e < at && p == at)
            return item_err(err, item, "nodes: a trailing '|'");
    }
    return parse_when(item, at + 1, strlen(at + 1), 1, &f->at, &f->dur, err);
}

/* rank-fail:JOB@T */
static int parse_rank_fail(const char *item, const char *body, tide_fault_t *f,
                           tide_error_t *err)
{
    const char *at = strrchr(body, '@');
    if (!at)
        return item_err(err, item, "expected rank-fail:JOB@T, like rank-fail:pretrain-7b@30h");
    if (at == body)
        return item_err(err, item, "empty job id");
    f->target = dup_n(body, (size_t)(at - body));
    return parse_when(item, at + 1, strlen(at + 1), -1, &f->at, &f->dur, err);
}

/* rank-fail-rate:R/day (or /d, /h, /hour) */
static int parse_rank_rate(const char *item, const char *body, tide_fault_t *f,
                           tide_error_t *err)
{
    const char *slash = strchr(body, '/');
    if (!slash)
        return item_err(err, item, "expected rank-fail-rate:R/day, like rank-fail-rate:2/day");
    double mul;
    const char *u = slash + 1;
    if (!strcmp(u, "day") || !strcmp(u, "d"))
        mul = 1;
    else if (!strcmp(u, "h") || !strcmp(u, "hour"))
        mul = 24;
    else
        return item_err(err, item, "unknown rate unit '/%.20s' (use /day or /h)", u);
    double r;
    if (parse_number(body, (size_t)(slash - body), &r) < 0 || r < 0 ||
        r * mul > TIDE_INJECT_MAX_RATE_PER_DAY)
        return item_err(err, item, "rate '%.*s' is not a number in 0..%g per day",
                        (int)TIDE_MIN((size_t)(slash - body), 40), body,
                        TIDE_INJECT_MAX_RATE_PER_DAY);
    f->per_day = r * mul;
    return 0;
}

/* storage:G[GBps|GB/s] */
static int parse_storage(const char *item, const char *body, tide_fault_t *f, tide_error_t *err)
{
    size_t n = strlen(body);
    static const char *const units[] = {"gbps", "gb/s"};
    for (size_t k = 0; k < sizeof units / sizeof units[0]; k++) {
        size_t un = strlen(units[k]);
        if (n > un && !strncasecmp(body + n - un, units[k], un)) {
            n -= un;
            break;
        }
    }
    if (parse_number(body, n, &f->gbps) < 0 || !(f->gbps > 0) || f->gbps > TIDE_INJECT_MAX_GBPS)
        return item_err(err, item, "bandwidth '%.*s' is not a number of GB/s > 0, like storage:20",
                        (int)TIDE_MIN(strlen(body), 40), body);
    return 0;
}

/* One trimmed item. */
static int parse_item(const char *item, tide_fault_t *f, tide_error_t *err)
{
    memset(f, 0, sizeof *f);
    f->factor = 1;
    int rc;
    if (starts(item, "burst:")) {
        f->kind = TIDE_FAULT_BURST;
        rc = parse_burst(item, item + 6, f, err);
    } else if (starts(item, "node-fail:")) {
        f->kind = TIDE_FAULT_NODE_FAIL;
        rc = parse_node_fail(item, item + 10, f, err);
    } else if (starts(item, "rank-fail-rate:")) {
        f->kind = TIDE_FAULT_RANK_FAIL_RATE;
        rc = parse_rank_rate(item, item + 15, f, err);
    } else if (starts(item, "rank-fail:")) {
        f->kind = TIDE_FAULT_RANK_FAIL;
        rc = parse_rank_fail(item, item + 10, f, err);
    } else if (starts(item, "rack-fail:") || starts(item, "power-fail:")) {
        f->kind = item[0] == 'r' ? TIDE_FAULT_RACK_FAIL : TIDE_FAULT_POWER_FAIL;
        rc = parse_domain_fail(item, strchr(item, ':') + 1, f, err);
    } else if (starts(item, "partition:")) {
        f->kind = TIDE_FAULT_PARTITION;
        rc = parse_partition(item, item + 10, f, err);
    } else if (starts(item, "ctl-down@")) {
        f->kind = TIDE_FAULT_CTL_DOWN;
        rc = parse_when(item, item + 9, strlen(item + 9), 1, &f->at, &f->dur, err);
    } else if (starts(item, "storage:")) {
        f->kind = TIDE_FAULT_STORAGE;
        rc = parse_storage(item, item + 8, f, err);
    } else {
        size_t k = strcspn(item, ":@");
        rc = item_err(err, item,
                      "unknown fault '%.*s' (known: burst, node-fail, rank-fail, "
                      "rank-fail-rate, rack-fail, power-fail, partition, ctl-down, storage)",
                      (int)TIDE_MIN(k, 40), item);
    }
    if (rc == 0 && f->at + f->dur > MAX_T_S)
        rc = item_err(err, item, "ends too late (beyond %lld s)", (long long)MAX_T_S);
    if (rc == 0)
        f->text = tide_xstrdup(item);
    else
        fault_free(f);
    return rc;
}

/* Checks of item i against the items before it (in held then new). */
static int cross_check(const tide_fault_t *all, size_t n, const tide_fault_t *f,
                       tide_error_t *err)
{
    for (size_t i = 0; i < n; i++) {
        const tide_fault_t *g = &all[i];
        if (f->kind == TIDE_FAULT_STORAGE && g->kind == TIDE_FAULT_STORAGE)
            return item_err(err, f->text, "storage given twice (first '%.100s')", g->text);
        if (f->kind == TIDE_FAULT_CTL_DOWN && g->kind == TIDE_FAULT_CTL_DOWN &&
            f->at < g->at + g->dur && g->at < f->at + f->dur)
            return item_err(err, f->text, "overlaps '%.100s' (tide cannot go down twice)",
                            g->text);
    }
    return 0;
}

int tide_inject_parse(tide_inject_t *inj, const char *list, tide_error_t *err)
{
    if (!list)
        return tide_errf(err, TIDE_EINVAL, "no fault list");
    size_t n0 = inj->n;
    const char *p = list;
    int rc = 0;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *s = p;
        while (len && (*s == ' ' || *s == '\t')) {
            s++;
            len--;
        }
        while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
            len--;
        if (len == 0) {
            rc = tide_errf(err, TIDE_EINVAL, "'%.120s': empty item (a stray comma?)", list);
            break;
        }
        if (len > MAX_ITEM_LEN) {
            char head[48];
            snprintf(head, sizeof head, "%.*s", 40, s);
            rc = tide_errf(err, TIDE_EINVAL, "'%s...': item too long (at most %d characters)",
                           head, MAX_ITEM_LEN);
            break;
        }
        if (has_ctl(s, len)) {
            char *item = dup_n(s, len);
            for (char *q = item; *q; q++)
                if ((unsigned char)*q < 0x20 || *q == 0x7f)
                    *q = '?';
            rc = item_err(err, item, "control character in the item");
            free(item);
            break;
        }
        if (inj->n >= TIDE_INJECT_MAX_ITEMS) {
            rc = tide_errf(err, TIDE_EINVAL, "too many faults (at most %d)",
                           TIDE_INJECT_MAX_ITEMS);
            break;
        }
        char *item = dup_n(s, len);
        tide_fault_t f;
        rc = parse_item(item, &f, err);
        free(item);
        if (rc == 0 && (rc = cross_check(inj->v, inj->n, &f, err)) != 0)
            fault_free(&f);
        if (rc != 0)
            break;
        TIDE_PUSH(inj->v, inj->n, inj->cap, f);
        if (!comma)
            break;
        p = comma + 1;
    }
    if (rc != 0) {
        for (size_t i = n0; i < inj->n; i++)
            fault_free(&inj->v[i]);
        inj->n = n0;
    }
    return rc;
}

int tide_inject_check(const tide_inject_t *inj, const tide_service_spec_t *svcs, size_t n_svcs,
                      const tide_job_spec_t *jobs, size_t n_jobs, int n_nodes,
                      tide_error_t *err)
{
    for (size_t i = 0; inj && i < inj->n; i++) {
        const tide_fault_t *f = &inj->v[i];
        if (f->kind == TIDE_FAULT_BURST && f->target && svcs) {
            size_t k;
            for (k = 0; k < n_svcs; k++)
                if (svcs[k].name && !strcmp(svcs[k].name, f->target))
                    break;
            if (k == n_svcs) {
                item_err(err, f->text, "unknown service '%.100s'", f->target);
                return tide_err_prefix(err, "--inject: ");
            }
        } else if (f->kind == TIDE_FAULT_RANK_FAIL && jobs) {
            size_t k;
            for (k = 0; k < n_jobs; k++)
                if (jobs[k].id && !strcmp(jobs[k].id, f->target))
                    break;
            if (k == n_jobs) {
                item_err(err, f->text, "unknown job '%.100s'", f->target);
                return tide_err_prefix(err, "--inject: ");
            }
        } else if (f->kind == TIDE_FAULT_NODE_FAIL && n_nodes > 0 && f->count > n_nodes) {
            item_err(err, f->text, "%d nodes but the cluster has %d", f->count, n_nodes);
            return tide_err_prefix(err, "--inject: ");
        }
    }
    return 0;
}

int tide_inject_check_domains(const tide_inject_t *inj, int n_racks, int n_power, int n_nodes,
                              tide_error_t *err)
{
    for (size_t i = 0; inj && i < inj->n; i++) {
        const tide_fault_t *f = &inj->v[i];
        int lim = f->kind == TIDE_FAULT_RACK_FAIL ? n_racks : n_power;
        if ((f->kind == TIDE_FAULT_RACK_FAIL || f->kind == TIDE_FAULT_POWER_FAIL) &&
            f->domain >= lim) {
            item_err(err, f->text, "%s %d but the cluster has %d",
                     f->kind == TIDE_FAULT_RACK_FAIL ? "rack" : "power domain", f->domain, lim);
            return tide_err_prefix(err, "--inject: ");
        }
        for (int k = 0; f->kind == TIDE_FAULT_PARTITION && k < f->n_nodes; k++)
            if (f->nodes[k] >= n_nodes) {
                item_err(err, f->text, "node %d but the cluster has %d", f->nodes[k], n_nodes);
                return tide_err_prefix(err, "--inject: ");
            }
    }
    return 0;
}

double tide_inject_storage_gbps(const tide_inject_t *inj)
{
    for (size_t i = 0; inj && i < inj->n; i++)
        if (inj->v[i].kind == TIDE_FAULT_STORAGE)
            return inj->v[i].gbps;
    return 0;
}

double tide_inject_rank_rate(const tide_inject_t *inj)
{
    double r = 0;
    for (size_t i = 0; inj && i < inj->n; i++)
        if (inj->v[i].kind == TIDE_FAULT_RANK_FAIL_RATE)
            r += inj->v[i].per_day;
    return r;
}

/* ------------------------------------------------------------- schedule */

typedef struct fire_key {
    tide_fire_t f;
    size_t seq;
} fire_key_t;

static int fire_cmp(const void *a, const void *b)
{
    const fire_key_t *x = a, *y = b;
    if (x->f.t != y->f.t)
        return x->f.t < y->f.t ? -1 : 1;
    if (x->f.kind != y->f.kind)
        return x->f.kind < y->f.kind ? -1 : 1;
    if (x->f.fault != y->f.fault)
        return x->f.fault < y->f.fault ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void add(fire_key_t **v, size_t *n, size_t *cap, tide_time_t t, int kind, int fault,
                double u, uint64_t draw)
{
    fire_key_t k = {.f = {.t = t, .kind = kind, .fault = fault, .u = u, .draw = draw},
                    .seq = *n};
    TIDE_PUSH(*v, *n, *cap, k);
}

void tide_inject_schedule(const tide_inject_t *inj, tide_time_t horizon, uint64_t seed,
                          tide_schedule_t *out)
{
    fire_key_t *v = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; inj && i < inj->n; i++) {
        const tide_fault_t *f = &inj->v[i];
        int fi = (int)i;
        /* one random stream per item, from the seed and the item's position */
        uint64_t st = seed ^ (0xa0761d6478bd642fULL * (uint64_t)(i + 1));
        switch (f->kind) {
        case TIDE_FAULT_BURST:
            if (f->at <= horizon) {
                add(&v, &n, &cap, f->at, TIDE_FIRE_BURST_START, fi, -1, 0);
                if (f->at + f->dur <= horizon)
                    add(&v, &n, &cap, f->at + f->dur, TIDE_FIRE_BURST_END, fi, -1, 0);
            }
            break;
        case TIDE_FAULT_NODE_FAIL:
            if (f->at <= horizon) {
                add(&v, &n, &cap, f->at, TIDE_FIRE_NODE_FAIL, fi, -1, tide_inject_rand(&st));
                if (f->dur > 0 && f->at + f->dur <= horizon)
                    add(&v, &n, &cap, f->at + f->dur, TIDE_FIRE_NODE_RECOVER, fi, -1, 0);
            }
            break;
        case TIDE_FAULT_RANK_FAIL:
            if (f->at <= horizon)
                add(&v, &n, &cap, f->at, TIDE_FIRE_RANK_FAIL, fi, -1, 0);
            break;
        case TIDE_FAULT_RACK_FAIL:
        case TIDE_FAULT_POWER_FAIL:
        case TIDE_FAULT_PARTITION: {
            int part = f->kind == TIDE_FAULT_PARTITION;
            if (f->at <= horizon) {
                add(&v, &n, &cap, f->at, part ? TIDE_FIRE_PARTITION_START : TIDE_FIRE_DOMAIN_FAIL,
                    fi, -1, 0);
                if (f->dur > 0 && f->at + f->dur <= horizon)
                    add(&v, &n, &cap, f->at + f->dur,
                        part ? TIDE_FIRE_PARTITION_END : TIDE_FIRE_DOMAIN_RECOVER, fi, -1, 0);
            }
            break;
        }
        case TIDE_FAULT_RANK_FAIL_RATE: {
            if (!(f->per_day > 0))
                break;
            double rate = f->per_day / 86400.0, t = 0;
            for (;;) {
                double u = tide_inject_uniform(&st);
                t += -log1p(-u) / rate;
                if (!(t < (double)horizon))
                    break;
                add(&v, &n, &cap, (tide_time_t)floor(t), TIDE_FIRE_RANK_FAIL, fi,
                    tide_inject_uniform(&st), 0);
            }
            break;
        }
        case TIDE_FAULT_CTL_DOWN:
            /* an outage past the horizon ends there, so the run can be accounted */
            if (f->at < horizon) {
                add(&v, &n, &cap, f->at, TIDE_FIRE_CTL_DOWN, fi, -1, 0);
                add(&v, &n, &cap, TIDE_MIN(f->at + f->dur, horizon), TIDE_FIRE_CTL_UP, fi, -1,
                    0);
            }
            break;
        default:
            break;
        }
    }
    if (n > 1)
        qsort(v, n, sizeof *v, fire_cmp);
    out->n = 0;
    for (size_t i = 0; i < n; i++)
        TIDE_PUSH(out->v, out->n, out->cap, v[i].f);
    free(v);
}

void tide_schedule_free(tide_schedule_t *s)
{
    if (!s)
        return;
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}
