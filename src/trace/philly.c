/* Philly importer: philly.csv (timestamp,duration,num_gpus,gpu_time,cluster;
 * the Pollux extraction of the Microsoft Philly trace) -> tide's jobs.csv.
 * Rules (window, priorities, gangs, elasticity, arrival scaling) are in
 * docs/trace.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/csv.h"
#include "formats/workload_io.h"
#include "trace/trace.h"
#include "util/fs.h"
#include "util/util.h"

#define PH_NODE_GPUS 8          /* Philly nodes: assume 8 GPUs */
#define PH_ELASTIC_GPUS 16      /* jobs this large may shrink to half width */
#define PH_P3_GPU_S 600.0       /* under 10 GPU-minutes: an experiment */
#define PH_P3_SINGLE_S 3600.0   /* one GPU for under an hour: an experiment */
#define PH_P1_GPUS 8            /* P1 candidates: jobs of at least 8 GPUs ... */
#define PH_P1_ONE_IN 10         /* ... one in ten of them */
#define PH_JITTER_S 600.0       /* copies from --scale-arrivals: submit + [0, 600) s */
#define PH_MAX_JOBS 20000000L   /* jobs written */

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* A uniform [0, 1) draw for (seed, src, line, copy). */
static double draw(uint64_t seed, int src, int line, int copy)
{
    uint64_t h = splitmix64(seed);
    h = splitmix64(h ^ (uint64_t)(uint32_t)src);
    h = splitmix64(h ^ (uint64_t)(uint32_t)line);
    h = splitmix64(h ^ (uint64_t)(uint32_t)copy);
    return (double)(h >> 11) * 0x1.0p-53;
}

void tide_trace_philly_init(tide_trace_philly_t *p) { memset(p, 0, sizeof *p); }

void tide_trace_philly_free(tide_trace_philly_t *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        free(p->v[i].team);
    free(p->v);
    memset(p, 0, sizeof *p);
}

void tide_trace_philly_opts_default(tide_trace_philly_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->day_b = -1;
    o->scale_arrivals = 1;
}

int tide_trace_philly_priority(int gpus, double duration_s, int src, int line)
{
    double gpu_s = (double)gpus * duration_s;
    if (gpu_s < PH_P3_GPU_S || (gpus == 1 && duration_s < PH_P3_SINGLE_S))
        return TIDE_P3;
    uint64_t h = splitmix64(((uint64_t)(uint32_t)src << 32) | (uint32_t)line);
    if (gpus >= PH_P1_GPUS && h % PH_P1_ONE_IN == 0)
        return TIDE_P1;
    return TIDE_P2;
}

/* Parse the current row into *row (team borrowed from the reader). */
static int parse_row(tide_csv_t *c, const int *col, tide_trace_philly_row_t *row,
                     tide_error_t *err)
{
    const char *name = tide_csv_name(c);
    int line = tide_csv_line(c);
    const char *ts = tide_csv_field(c, col[0]), *du = tide_csv_field(c, col[1]),
               *ng = tide_csv_field(c, col[2]), *cl = tide_csv_field(c, col[3]);
    if (tide_trace_parse_datetime(ts, &row->submit) < 0)
        return tide_trace_row_fail(err, name, line, "timestamp",
                                   "'%s' is not a date-time YYYY-MM-DD HH:MM:SS", ts);
    if (tide_parse_double(du, &row->duration) < 0 || !(row->duration > 0) ||
        row->duration > (double)TIDE_IO_MAX_SECONDS)
        return tide_trace_row_fail(err, name, line, "duration",
                                   "'%s' is not a duration in seconds (> 0, at most %lld)", du,
                                   (long long)TIDE_IO_MAX_SECONDS);
    long long g;
    if (tide_trace_parse_count(ng, 1, TIDE_IO_MAX_COUNT, &g) < 0)
        return tide_trace_row_fail(err, name, line, "num_gpus",
                                   "'%s' is not a whole GPU count in 1..%d", ng,
                                   TIDE_IO_MAX_COUNT);
    row->gpus = (int)g;
    if (!cl || !*cl)
        return tide_trace_row_fail(err, name, line, "cluster", "empty (it names the team)");
    for (const char *q = cl; *q; q++)
        if ((unsigned char)*q < 0x20 || *q == 0x7f)
            return tide_trace_row_fail(err, name, line, "cluster",
                                       "control character (byte 0x%02x) in a name",
                                       (unsigned char)*q);
    row->team = (char *)cl;
    row->line = line;
    return 0;
}

int tide_trace_philly_read_mem(tide_trace_philly_t *p, const char *buf, size_t len,
                               const char *name, int skip_bad, tide_error_t *err)
{
    tide_csv_t *c = tide_csv_open_mem(buf, len, name, err);
    if (!c)
        return -1;
    static const char *const need[] = {"timestamp", "duration", "num_gpus", "cluster"};
    int col[4];
    for (int i = 0; i < 4; i++) {
        col[i] = tide_csv_col(c, need[i]);
        if (col[i] < 0) {
            char hdr[256] = "";
            for (int k = 0; k < tide_csv_ncols(c); k++) {
                if (k)
                    strncat(hdr, ",", sizeof hdr - strlen(hdr) - 1);
                strncat(hdr, tide_csv_colname(c, k), sizeof hdr - strlen(hdr) - 1);
            }
            tide_errf(err, TIDE_EINVAL,
                      "%s:%d: missing required column '%s' (the header is: %s; expected "
                      "timestamp,duration,num_gpus,gpu_time,cluster)",
                      tide_csv_name(c), tide_csv_line(c), need[i], hdr);
            tide_csv_close(c);
            return -1;
        }
    }
    int src = p->sources++;
    int rc = 0;
    for (;;) {
        tide_error_t e = {0, ""};
        int r = tide_csv_next(c, &e);
        if (r == 0)
            break;
        if (r < 0) {
            p->rows_read++;
            if (tide_csv_recoverable(c) &&
                tide_trace_skip_row(skip_bad, &p->rows_skipped, &p->first_skip, &e) == 0)
                continue;
            if (err)
                *err = e;
            rc = -1;
            break;
        }
        p->rows_read++;
        tide_trace_philly_row_t row = {0};
        if (parse_row(c, col, &row, &e) < 0) {
            if (tide_trace_skip_row(skip_bad, &p->rows_skipped, &p->first_skip, &e) == 0)
                continue;
            if (err)
                *err = e;
            rc = -1;
            break;
        }
        row.team = tide_xstrdup(row.team);
        row.src = src;
        TIDE_PUSH(p->v, p->n, p->cap, row);
    }
    tide_csv_close(c);
    return rc;
}

int tide_trace_philly_read_file(tide_trace_philly_t *p, const char *path, int skip_bad,
                                tide_error_t *err)
{
    char *buf;
    size_t len;
    if (tide_trace_read_all(path, &buf, &len, err) < 0)
        return -1;
    int rc = tide_trace_philly_read_mem(p, buf, len, path, skip_bad, err);
    free(buf);
    return rc;
}

/* ---------------------------------------------------------------- convert */

void tide_trace_jobs_free(tide_trace_jobs_t *j)
{
    if (!j)
        return;
    for (size_t i = 0; i < j->n; i++) {
        free((char *)j->v[i].id);
        free((char *)j->v[i].team);
    }
    free(j->v);
    memset(j, 0, sizeof *j);
}

static int row_cmp(const void *a, const void *b)
{
    const tide_trace_philly_row_t *x = *(const tide_trace_philly_row_t *const *)a;
    const tide_trace_philly_row_t *y = *(const tide_trace_philly_row_t *const *)b;
    if (x->submit != y->submit)
        return x->submit < y->submit ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

/* A job being built, with its order key. */
typedef struct pending {
    tide_job_spec_t spec;
    size_t seq;
} pending_t;

static int pending_cmp(const void *a, const void *b)
{
    const pending_t *x = a, *y = b;
    if (x->spec.submit_s != y->spec.submit_s)
        return x->spec.submit_s < y->spec.submit_s ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int gcd(int a, int b)
{
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Fill the spec of a copy of row r. */
static void make_spec(const tide_trace_philly_row_t *r, int multi_src, int copy, int64_t submit,
                      tide_job_spec_t *s)
{
    char id[64];
    int k = multi_src ? snprintf(id, sizeof id, "philly%d-%d", r->src, r->line)
                      : snprintf(id, sizeof id, "philly-%d", r->line);
    if (copy)
        snprintf(id + k, sizeof id - (size_t)k, "-c%d", copy);
    memset(s, 0, sizeof *s);
    s->id = tide_xstrdup(id);
    s->team = tide_xstrdup(r->team);
    s->gpus = r->gpus;
    s->gang_gpus = r->gpus <= PH_NODE_GPUS ? r->gpus : gcd(r->gpus, PH_NODE_GPUS);
    int width = s->gpus / s->gang_gpus;
    s->dp_min = r->gpus >= PH_ELASTIC_GPUS ? (width + 1) / 2 : width;
    s->priority = tide_trace_philly_priority(r->gpus, r->duration, r->src, r->line);
    s->submit_s = submit;
    int64_t d = llround(r->duration);
    s->duration_s = d < 1 ? 1 : d;
    s->ckpt_interval_s = 1800;
    s->ckpt_s = 60;
    s->restore_s = 120;
}

int tide_trace_philly_convert(const tide_trace_philly_t *p, const tide_trace_philly_opts_t *o,
                              tide_trace_jobs_t *out, tide_error_t *err)
{
    memset(out, 0, sizeof *out);
    if (!(o->day_a >= 0) || o->day_a > 1e6 || (o->day_b >= 0 && !(o->day_b > o->day_a)) ||
        !isfinite(o->day_b) || o->day_b > 1e6)
        return tide_errf(err, TIDE_EINVAL, "bad day window %g:%g (need 0 <= A < B)", o->day_a,
                         o->day_b);
    if (!(o->scale_arrivals > 0) || o->scale_arrivals > 100)
        return tide_errf(err, TIDE_EINVAL, "scale-arrivals must be in (0, 100], not %g",
                         o->scale_arrivals);
    if (p->n == 0)
        return tide_errf(err, TIDE_EINVAL, "no job in the trace");
    const tide_trace_philly_row_t **rows = tide_xmalloc(p->n * sizeof *rows);
    for (size_t i = 0; i < p->n; i++)
        rows[i] = &p->v[i];
    qsort(rows, p->n, sizeof *rows, row_cmp);
    double ref = o->has_start ? (double)o->start_s : floor(rows[0]->submit / 86400.0) * 86400.0;
    out->window_start = ref + o->day_a * 86400.0;
    out->window_end = o->day_b < 0 ? INFINITY : ref + o->day_b * 86400.0;
    size_t lo = 0, hi;
    while (lo < p->n && rows[lo]->submit < out->window_start)
        lo++;
    for (hi = lo; hi < p->n && rows[hi]->submit < out->window_end; hi++)
        ;
    char b1[32], b2[32], b3[32], b4[32];
    if (lo == hi) {
        tide_errf(err, TIDE_EINVAL,
                  "no job submitted in the window %s .. %s (the trace runs from %s to %s)",
                  tide_trace_fmt_datetime(out->window_start, b1, sizeof b1),
                  o->day_b < 0 ? "the end"
                               : tide_trace_fmt_datetime(out->window_end, b2, sizeof b2),
                  tide_trace_fmt_datetime(rows[0]->submit, b3, sizeof b3),
                  tide_trace_fmt_datetime(rows[p->n - 1]->submit, b4, sizeof b4));
        free(rows);
        return -1;
    }
    out->in_window = (long long)(hi - lo);
    out->origin = o->origin_window ? out->window_start : rows[lo]->submit;
    double whole = floor(o->scale_arrivals), frac = o->scale_arrivals - whole;
    if ((double)(hi - lo) * ceil(o->scale_arrivals) > PH_MAX_JOBS) {
        free(rows);
        return tide_errf(err, TIDE_EINVAL, "scaling %zu jobs x%g exceeds %ld jobs", hi - lo,
                         o->scale_arrivals, PH_MAX_JOBS);
    }
    int multi = p->sources > 1;
    pending_t *v = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (size_t i = lo; i < hi; i++) {
        const tide_trace_philly_row_t *r = rows[i];
        double rel = r->submit - out->origin;
        if (rel > (double)TIDE_IO_MAX_SECONDS - PH_JITTER_S) {
            rc = tide_errf(err, TIDE_EINVAL,
                           "job of line %d is submitted more than %llds after the origin "
                           "(narrow the window with --days)",
                           r->line, (long long)TIDE_IO_MAX_SECONDS);
            break;
        }
        int copies = (int)whole + (draw(o->seed, r->src, r->line, 0) < frac);
        for (int k = 0; k < copies; k++) {
            int64_t submit = llround(rel);
            if (k)
                submit += (int64_t)floor(draw(o->seed, r->src, r->line, k) * PH_JITTER_S);
            pending_t pj = {.seq = n};
            make_spec(r, multi, k, submit, &pj.spec);
            TIDE_PUSH(v, n, cap, pj);
        }
    }
    free(rows);
    if (n)
        qsort(v, n, sizeof *v, pending_cmp);
    out->v = tide_xmalloc((n ? n : 1) * sizeof *out->v);
    for (size_t i = 0; i < n; i++)
        out->v[i] = v[i].spec;
    out->n = out->cap = n;
    free(v);
    if (rc < 0)
        tide_trace_jobs_free(out);
    return rc;
}

int tide_trace_jobs_write(FILE *f, const void *ctx)
{
    const tide_trace_jobs_t *j = ctx;
    if (fputs("job_id,submit_s,team,priority,gpus,duration_s,gang_gpus,dp_min,ckpt_interval_s,"
              "ckpt_s,restore_s\n",
              f) < 0)
        return -1;
    for (size_t i = 0; i < j->n; i++) {
        const tide_job_spec_t *s = &j->v[i];
        if (tide_csv_write_field(f, s->id) < 0 ||
            fprintf(f, ",%lld,", (long long)s->submit_s) < 0 ||
            tide_csv_write_field(f, s->team) < 0 ||
            fprintf(f, ",%d,%d,%lld,%d,%d,%lld,%lld,%lld\n", s->priority, s->gpus,
                    (long long)s->duration_s, s->gang_gpus, s->dp_min,
                    (long long)s->ckpt_interval_s, (long long)s->ckpt_s,
                    (long long)s->restore_s) < 0)
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ import */

int tide_trace_philly_import(const char *const *srcs, size_t n, const tide_trace_opts_t *o,
                             const char *outdir, tide_trace_summary_t *sum, tide_error_t *err)
{
    tide_trace_philly_t p;
    tide_trace_jobs_t j = {0};
    tide_trace_philly_init(&p);
    int rc = -1;
    for (size_t i = 0; i < n; i++)
        if (tide_trace_philly_read_file(&p, srcs[i], o->skip_bad, err) < 0)
            goto out;
    if (tide_trace_philly_convert(&p, &o->philly, &j, err) < 0)
        goto out;
    if (tide_mkdir_p(outdir, err) < 0 ||
        tide_fs_write_atomic(outdir, "jobs.csv", tide_trace_jobs_write, &j, err) < 0)
        goto out;
    sum->sources = (long long)n;
    sum->rows_read = p.rows_read;
    sum->rows_skipped = p.rows_skipped;
    sum->first_skip = p.first_skip;
    sum->jobs = (long long)j.n;
    sum->in_window = j.in_window;
    int64_t last = j.n ? j.v[j.n - 1].submit_s : 0;
    size_t ndays = (size_t)(last / 86400) + 1;
    long long *per_day = tide_xcalloc(ndays, sizeof *per_day);
    int gmin = 0, gmax = 0;
    for (size_t i = 0; i < j.n; i++) {
        const tide_job_spec_t *s = &j.v[i];
        sum->by_prio[s->priority]++;
        sum->gpu_hours += (double)s->gpus * (double)s->duration_s / 3600.0;
        per_day[s->submit_s / 86400]++;
        gmin = i == 0 || s->gpus < gmin ? s->gpus : gmin;
        gmax = s->gpus > gmax ? s->gpus : gmax;
    }
    long long dmax = 0, dmin = -1;
    for (size_t d = 0; d < ndays; d++) {
        dmax = TIDE_MAX(dmax, per_day[d]);
        dmin = dmin < 0 || per_day[d] < dmin ? per_day[d] : dmin;
    }
    free(per_day);
    char b1[32], b2[32], b3[32];
    snprintf(sum->line, sizeof sum->line,
             "philly: %zu file%s, %lld rows read, %lld skipped; window %s .. %s, origin %s; "
             "%lld jobs in window -> %lld jobs written (P1 %lld, P2 %lld, P3 %lld; %d..%d GPUs; "
             "%.0f GPU-hours); jobs/day peak %lld, trough %lld -> %s/jobs.csv",
             n, n == 1 ? "" : "s", p.rows_read, p.rows_skipped,
             tide_trace_fmt_datetime(j.window_start, b1, sizeof b1),
             isinf(j.window_end) ? "end" : tide_trace_fmt_datetime(j.window_end, b2, sizeof b2),
             tide_trace_fmt_datetime(j.origin, b3, sizeof b3), j.in_window, (long long)j.n,
             sum->by_prio[1], sum->by_prio[2], sum->by_prio[3], gmin, gmax, sum->gpu_hours, dmax,
             dmin, outdir);
    rc = 0;
out:
    tide_trace_jobs_free(&j);
    tide_trace_philly_free(&p);
    return rc;
}
