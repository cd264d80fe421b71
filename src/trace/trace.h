/* tide trace importers: turn public cluster and serving traces into tide's own
 * workload files (docs/formats.md), for `tide trace import` (docs/trace.md).
 *
 *   philly     Microsoft Philly jobs (philly.csv)        -> jobs.csv
 *   servegen   Alibaba ServeGen per-client rates (tiers) -> services.csv + demand.csv
 *   azure-llm  Azure LLM inference 2023 request log      -> services.csv + demand.csv
 *   mooncake   Mooncake/Kimi JSONL request log           -> services.csv + demand.csv
 *
 * Every parser has a from-memory entry point (used by the fuzz targets and the
 * unit tests). Bad rows fail with "file:line: column 'x': problem" unless
 * skip_bad is set, in which case they are counted and the first reason kept.
 * Nothing here keeps global state; outputs are a pure function of the inputs
 * and the options (own PRNG, no clock). */
#ifndef TIDE_TRACE_H
#define TIDE_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tide/engine.h"
#include "tide/types.h"

#define TIDE_TRACE_MAX_WINDOWS (1 << 20)    /* windows per service, in and out */
#define TIDE_TRACE_MAX_RATE 1e9             /* req/s of one input row */
#define TIDE_TRACE_MAX_TOKENS 100000000LL   /* tokens of one request */
#define TIDE_TRACE_MAX_FILE (1LL << 31)     /* bytes of one input file */
#define TIDE_TRACE_DEFAULT_REPLICA_RPS 10.0 /* when neither --replica-rps nor tokens */

/* ------------------------------------------------------------------ shared */

/* Parse "YYYY-MM-DD HH:MM:SS[.fraction]" (a 'T' may replace the space; no time
 * zone: the trace's own clock) into seconds since 1970-01-01 00:00:00 of that
 * clock. Checks the calendar (month, day of month, hour, minute, second).
 * Returns 0 or -1 (not such a date-time). */
int tide_trace_parse_datetime(const char *s, double *out);

/* Format seconds since 1970 as "YYYY-MM-DD HH:MM:SS" into buf. Returns buf. */
const char *tide_trace_fmt_datetime(double t, char *buf, size_t n);

/* Read a whole file into a NUL-terminated buffer the caller frees. Returns 0,
 * or -1 with err (ENOENT missing, EIO unreadable or over TIDE_TRACE_MAX_FILE). */
int tide_trace_read_all(const char *path, char **buf, size_t *len, tide_error_t *err);


/* The last path component without trailing slashes and, if it ends with one
 * of the '|'-separated suffixes (e.g. ".csv|.jsonl"), without that suffix.
 * Returns a string the caller frees (never NULL; "" for "/"). */
char *tide_trace_basename(const char *path, const char *strip_suffixes);

/* Fill err with "name:line: column 'col': <message>" (EINVAL; no column part
 * when col is NULL). Returns -1. */
int tide_trace_row_fail(tide_error_t *err, const char *name, int line, const char *col,
                        const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* After a bad row (reason in *err): with skip_bad, count it in *skipped, keep
 * the first reason in *first and return 0 (go on); else return -1. */
int tide_trace_skip_row(int skip_bad, long long *skipped, tide_error_t *first,
                        const tide_error_t *err);

/* A number of tokens or GPUs: a whole number written as an integer or a
 * decimal with no fraction ("8", "8.0"), in lo..hi. Returns 0 or -1. */
int tide_trace_parse_count(const char *s, long long lo, long long hi, long long *out);

/* ------------------------------------------------------------ demand series */

/* One service's demand: rps[i] holds over [i*step, (i+1)*step) of the
 * container's step (seconds from the start of the trace). */
typedef struct tide_trace_svc {
    char *name;              /* owned */
    double *rps;             /* owned, n values >= 0 */
    size_t n;
    double req_cost;         /* mean weighted tokens per request, 0 = unknown */
    double replica_rps;      /* filled by tide_trace_fit_apply */
    int min_replicas;        /* filled by tide_trace_fit_apply */
    long long requests;      /* request logs: requests binned */
    long long gaps_filled;   /* servegen: windows filled */
} tide_trace_svc_t;

/* Services sharing one window length, plus the input counters. */
typedef struct tide_trace_demand {
    tide_trace_svc_t *v;
    size_t n, cap;
    double step_s;           /* window length in seconds (0 until a service is added) */
    long long files, rows_read, rows_skipped, gaps_filled, requests;
    tide_error_t first_skip; /* why the first skipped row was skipped */
} tide_trace_demand_t;

void tide_trace_demand_init(tide_trace_demand_t *d);
void tide_trace_demand_free(tide_trace_demand_t *d); /* frees the services; NULL ok */

/* Add a service (name copied, rps copied, n >= 1) with window step_s (> 0, the
 * same for every service of d). Returns 0 or -1 with err (EINVAL: empty name
 * or control characters in it, a duplicate name, a different step, n out of
 * 1..TIDE_TRACE_MAX_WINDOWS). */
int tide_trace_demand_add(tide_trace_demand_t *d, const char *name, const double *rps, size_t n,
                          double step_s, double req_cost, tide_error_t *err);

/* Fitting options (docs/trace.md, "Fitting"). */
typedef struct tide_trace_fit {
    double stretch;           /* time x stretch (> 0; 1 = unchanged) */
    double shift_h;           /* rotate the time of day by this many hours */
    int64_t duration_s;       /* repeat/trim to cover [0, duration) (0 = native span) */
    double peak_gpus;         /* scale so the peak fluid need is this (0 = no scaling) */
    int gpus_per_replica;     /* >= 1 (8) */
    double replica_rps;       /* > 0: forced for every service; 0 = derive */
    double replica_tokens_per_s; /* derives replica_rps for services with req_cost (20000) */
    int min_replicas;         /* >= 0 (1) */
    int64_t warmup_s;         /* >= 0 (300) */
} tide_trace_fit_t;

void tide_trace_fit_default(tide_trace_fit_t *f);

/* What the fit did and what the demand looks like afterwards. Need at a window
 * = sum over services of max(min_replicas, ceil(rps / replica_rps)) *
 * gpus_per_replica (the simulator's rule); fluid need = sum of rps /
 * replica_rps * gpus_per_replica. */
typedef struct tide_trace_fit_result {
    double scale;             /* factor applied to every rps (1 without peak_gpus) */
    size_t windows;           /* per service */
    double step_s;
    int64_t span_s;           /* windows x step */
    double peak_rps, trough_rps;         /* of the total over services */
    int64_t peak_t, trough_t;            /* window start of each */
    double peak_need_gpus, trough_need_gpus; /* max / min over windows of the need */
    double peak_fluid_gpus;
} tide_trace_fit_result_t;

/* Apply the fit to d in place: every service is repeated cyclically to the
 * longest one's length, then time is stretched, rotated by shift_h (cyclically
 * over the span, in whole windows) and repeated or trimmed to duration_s;
 * replica_rps is set per service (forced, or replica_tokens_per_s / req_cost,
 * or TIDE_TRACE_DEFAULT_REPLICA_RPS) and rounded to 4 decimals; rps values are
 * scaled to peak_gpus if set and rounded to 4 decimals (when scaling, never up
 * across a whole replica: a single service's peak needs exactly
 * ceil(peak_gpus / gpus_per_replica) replicas). Fills r (may be NULL).
 * Returns 0 or -1 with err (EINVAL: bad options, no services, an all-zero
 * demand to scale, too many windows). */
int tide_trace_fit_apply(tide_trace_demand_t *d, const tide_trace_fit_t *f,
                         tide_trace_fit_result_t *r, tide_error_t *err);

/* Write services.csv (service,gpus_per_replica,replica_rps,min_replicas,
 * warmup_s) or demand.csv (time_s,service,rps; time of window i =
 * llround(i * step_s)) for a fitted d. Return 0 or -1 (write error). The
 * ctx-taking forms suit tide_fs_write_atomic (ctx = tide_trace_out_t). */
typedef struct tide_trace_out {
    const tide_trace_demand_t *d;
    const tide_trace_fit_t *fit;
} tide_trace_out_t;
int tide_trace_services_write(FILE *f, const void *out);
int tide_trace_demand_write(FILE *f, const void *out);

/* Span of a jobs.csv for --align-with: the whole days covering every
 * submission, (floor(max submit_s / 86400) + 1) * 86400. Returns 0 or -1 with
 * the reader's err. */
int tide_trace_jobs_span(const char *jobs_csv, int64_t *span_s, tide_error_t *err);

/* ------------------------------------------------------------------ philly */

/* One row of philly.csv (timestamp,duration,num_gpus,gpu_time,cluster). */
typedef struct tide_trace_philly_row {
    double submit;           /* seconds since 1970 on the trace's clock */
    double duration;         /* seconds, > 0 */
    int gpus;
    char *team;              /* owned: the virtual cluster */
    int src;                 /* index of the source (order of reading) */
    int line;                /* line in that source */
} tide_trace_philly_row_t;

typedef struct tide_trace_philly {
    tide_trace_philly_row_t *v;
    size_t n, cap;
    int sources;
    long long rows_read, rows_skipped;
    tide_error_t first_skip;
} tide_trace_philly_t;

void tide_trace_philly_init(tide_trace_philly_t *p);
void tide_trace_philly_free(tide_trace_philly_t *p); /* NULL ok */

/* Append the rows of one philly.csv held in buf[0..len) (name for messages).
 * Required columns: timestamp, duration, num_gpus, cluster (gpu_time is
 * ignored). Checks: a date-time, 0 < duration <= 10^11, 1 <= num_gpus <=
 * 1048576 (whole), a non-empty cluster without control characters. Returns 0
 * or -1 with err (EINVAL "name:line: column 'x': ..."); with skip_bad bad rows
 * are counted in p->rows_skipped instead. */
int tide_trace_philly_read_mem(tide_trace_philly_t *p, const char *buf, size_t len,
                               const char *name, int skip_bad, tide_error_t *err);
int tide_trace_philly_read_file(tide_trace_philly_t *p, const char *path, int skip_bad,
                                tide_error_t *err);

/* The priority rule (docs/trace.md): P3 for experiments (under 10 GPU-minutes,
 * or one GPU for under an hour), P1 for one in ten of the other jobs of >= 8
 * GPUs chosen by a hash of (source, line), P2 otherwise. */
int tide_trace_philly_priority(int gpus, double duration_s, int src, int line);

/* Window and arrival options. */
typedef struct tide_trace_philly_opts {
    int has_start;           /* 1: days count from start_s, else from the first job's day */
    int64_t start_s;         /* seconds since 1970 of the reference day (a midnight) */
    double day_a, day_b;     /* window [day_a, day_b) in days; day_b < 0 = to the end */
    int origin_window;       /* 1: submit_s from the window start; 0: from its first job */
    double scale_arrivals;   /* (0, 100]: expected copies of each job (1) */
    uint64_t seed;           /* for scale_arrivals */
} tide_trace_philly_opts_t;

void tide_trace_philly_opts_default(tide_trace_philly_opts_t *o);

/* Converted jobs (id and team strings owned), sorted by submit_s then id
 * order of the trace. */
typedef struct tide_trace_jobs {
    tide_job_spec_t *v;
    size_t n, cap;
    double window_start, window_end, origin; /* seconds since 1970 */
    long long in_window;     /* trace rows in the window, before scaling */
} tide_trace_jobs_t;

void tide_trace_jobs_free(tide_trace_jobs_t *j); /* NULL ok */

/* Select the window, apply the priority rule, gang = min(gpus, 8) (gcd(gpus, 8)
 * above 8 so that it divides), dp_min = ceil(width / 2) for jobs of >= 16 GPUs
 * (not elastic below), checkpoint defaults 1800/60/120, and scale arrivals.
 * Returns 0 or -1 with err (EINVAL: bad options, no job in the window). */
int tide_trace_philly_convert(const tide_trace_philly_t *p, const tide_trace_philly_opts_t *o,
                              tide_trace_jobs_t *out, tide_error_t *err);

/* Write jobs.csv (every column, docs/formats.md). ctx is a tide_trace_jobs_t.
 * Returns 0 or -1 on a write error. */
int tide_trace_jobs_write(FILE *f, const void *jobs);

/* ---------------------------------------------------------------- servegen */

/* One tier being read: (window start, rate) points of all its client files. */
typedef struct tide_trace_sg_point {
    int64_t t;
    double rate;
} tide_trace_sg_point_t;

typedef struct tide_trace_sg {
    tide_trace_sg_point_t *v;
    size_t n, cap;
    long long files, rows_read, rows_skipped;
    tide_error_t first_skip;
} tide_trace_sg_t;

void tide_trace_sg_init(tide_trace_sg_t *sg);
void tide_trace_sg_free(tide_trace_sg_t *sg); /* NULL ok */

/* Add one client file (no header: window_start_s, rate, cv, dist, shape,
 * scale; only the first two are used) held in buf[0..len). Checks: at least 2
 * fields, window_start_s a whole number in 0..10^11, 0 <= rate <=
 * TIDE_TRACE_MAX_RATE. Returns 0 or -1 with err (as the philly reader). */
int tide_trace_servegen_add_mem(tide_trace_sg_t *sg, const char *buf, size_t len,
                                const char *name, int skip_bad, tide_error_t *err);
int tide_trace_servegen_add_file(tide_trace_sg_t *sg, const char *path, int skip_bad,
                                 tide_error_t *err);

/* Add every chunk-*-trace.csv of a tier directory (sorted by name), or the
 * file itself when path is a file. Errors: ENOENT (missing, or a directory
 * without chunk files), else as add_file. */
int tide_trace_servegen_add_path(tide_trace_sg_t *sg, const char *path, int skip_bad,
                                 tide_error_t *err);

/* Sum the clients per window (window = gcd of the window starts, series from
 * the first start), fill data gaps (no row, or every client at 0) by linear
 * interpolation between the nearest non-gap windows (the nearest value at
 * either end) and add the result to d as service `service`, moving the
 * counters. Returns 0 or -1 with err (EINVAL: no data row, only gaps, too
 * many windows, or as tide_trace_demand_add). */
int tide_trace_servegen_finish(tide_trace_sg_t *sg, const char *service, tide_trace_demand_t *d,
                               tide_error_t *err);

/* ------------------------------------------------------------ request logs */

/* Requests of one log: arrival (seconds; absolute for Azure, from 0 for
 * Mooncake), input and output tokens. */
typedef struct tide_trace_req {
    double t;
    double in, out;
} tide_trace_req_t;

typedef struct tide_trace_reqs {
    tide_trace_req_t *v;
    size_t n, cap;
    long long rows_read, rows_skipped;
    tide_error_t first_skip;
} tide_trace_reqs_t;

void tide_trace_reqs_init(tide_trace_reqs_t *r);
void tide_trace_reqs_free(tide_trace_reqs_t *r); /* NULL ok */

/* Azure LLM 2023 CSV: TIMESTAMP (date-time), ContextTokens, GeneratedTokens
 * (whole, 0..TIDE_TRACE_MAX_TOKENS). Returns 0 or -1 with err. */
int tide_trace_azure_read_mem(tide_trace_reqs_t *r, const char *buf, size_t len,
                              const char *name, int skip_bad, tide_error_t *err);
/* Mooncake JSONL: one object per line with timestamp (ms, >= 0), input_length,
 * output_length (whole, 0..TIDE_TRACE_MAX_TOKENS); other keys ignored, blank
 * lines skipped. Errors "name:line: field 'x': ..." or "invalid JSON". */
int tide_trace_mooncake_read_mem(tide_trace_reqs_t *r, const char *buf, size_t len,
                                 const char *name, int skip_bad, tide_error_t *err);

/* Bin r into windows of window_s seconds from t0 (<= every arrival): rps =
 * requests / window_s. Only whole windows of [t0, last arrival] are kept (the
 * partial tail is dropped) unless the log spans less than one window (then one
 * window). A request costs prefill_weight * in + out tokens; the service's
 * req_cost is the mean over binned requests. Adds service `service` to d.
 * Returns 0 or -1 with err (EINVAL: no request, bad window, too many windows). */
int tide_trace_reqs_bin(const tide_trace_reqs_t *r, double t0, double window_s,
                        double prefill_weight, const char *service, tide_trace_demand_t *d,
                        tide_error_t *err);

/* ------------------------------------------------------------------ import */

enum { TIDE_TRACE_KIND_JOBS = 0, TIDE_TRACE_KIND_DEMAND = 1 };

/* Every option of `tide trace import` (docs/trace.md). */
typedef struct tide_trace_opts {
    int skip_bad;
    tide_trace_philly_opts_t philly;
    const char *const *services; /* service names, one per source (NULL = derived) */
    size_t n_services;
    double window_s;             /* request logs: bin width (300) */
    double prefill_weight;       /* request logs: weight of an input token (1) */
    tide_trace_fit_t fit;
    const char *align_with;      /* jobs.csv whose span sets fit.duration_s */
} tide_trace_opts_t;

void tide_trace_opts_default(tide_trace_opts_t *o);

/* What an import did; line is the one-line summary the CLI prints. */
typedef struct tide_trace_summary {
    long long sources, rows_read, rows_skipped;
    tide_error_t first_skip;
    long long jobs, in_window, by_prio[4];
    double gpu_hours;
    int services;
    long long demand_rows, gaps_filled, requests;
    tide_trace_fit_result_t fit;
    char line[1024];
} tide_trace_summary_t;

/* Name of service i of an import: o->services[i] when names were given,
 * else the base name of src without the '|'-separated suffixes. Returns a
 * string the caller frees. */
char *tide_trace_service_name(const tide_trace_opts_t *o, size_t i, const char *src,
                              const char *strip_suffixes);

/* Kind of a format name (TIDE_TRACE_KIND_*), or -1 if unknown. */
int tide_trace_format_kind(const char *format);

/* Format names, NULL-terminated (static storage). */
const char *const *tide_trace_format_names(void);

/* Import srcs[0..n) of `format` into outdir (created): jobs.csv for philly,
 * services.csv + demand.csv otherwise. Fills *sum (may be NULL). Returns 0 or
 * -1 with err (EINVAL bad input or options, ENOENT missing source, EIO). */
int tide_trace_import(const char *format, const char *const *srcs, size_t n,
                      const tide_trace_opts_t *o, const char *outdir, tide_trace_summary_t *sum,
                      tide_error_t *err);

/* Per-format steps used by tide_trace_import (exposed for tests). */
int tide_trace_philly_import(const char *const *srcs, size_t n, const tide_trace_opts_t *o,
                             const char *outdir, tide_trace_summary_t *sum, tide_error_t *err);
int tide_trace_servegen_load(const char *const *srcs, size_t n, const tide_trace_opts_t *o,
                             tide_trace_demand_t *d, tide_error_t *err);
int tide_trace_azure_load(const char *const *srcs, size_t n, const tide_trace_opts_t *o,
                          tide_trace_demand_t *d, tide_error_t *err);
int tide_trace_mooncake_load(const char *const *srcs, size_t n, const tide_trace_opts_t *o,
                             tide_trace_demand_t *d, tide_error_t *err);

#endif
