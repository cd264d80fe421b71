/* Shared parts of the trace importers: date-times, files, the demand
 * container, fitting (stretch, shift, repeat/trim, scale to a peak), the
 * services.csv/demand.csv writers, and the table of formats behind
 * tide_trace_import. The fitting math is in docs/trace.md. */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/csv.h"
#include "formats/workload_io.h"
#include "trace/trace.h"
#include "util/fs.h"
#include "util/util.h"

/* --------------------------------------------------------------- date-times */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static int leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

/* n decimal digits at *p (exactly), advancing *p. */
static int digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

int tide_trace_parse_datetime(const char *s, double *out)
{
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (!s)
        return -1;
    const char *p = s;
    int y, mo, d, h, mi, se;
    if (digits(&p, 4, &y) < 0 || *p++ != '-' || digits(&p, 2, &mo) < 0 || *p++ != '-' ||
        digits(&p, 2, &d) < 0 || (*p != ' ' && *p != 'T'))
        return -1;
    p++;
    if (digits(&p, 2, &h) < 0 || *p++ != ':' || digits(&p, 2, &mi) < 0 || *p++ != ':' ||
        digits(&p, 2, &se) < 0)
        return -1;
    double frac = 0, unit = 0.1;
    if (*p == '.') {
        p++;
        int nd = 0;
        for (; *p >= '0' && *p <= '9'; p++, nd++) {
            if (nd < 12) {
                frac += (*p - '0') * unit;
                unit /= 10;
            }
        }
        if (nd == 0)
            return -1;
    }
    if (*p)
        return -1;
    if (y < 1 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || se > 59)
        return -1;
    int dim = mdays[mo - 1] + (mo == 2 && leap(y));
    if (d > dim)
        return -1;
    *out = (double)(days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se) + frac;
    return 0;
}

const char *tide_trace_fmt_datetime(double t, char *buf, size_t n)
{
    if (!isfinite(t) || fabs(t) > 1e14) {
        snprintf(buf, n, "?");
        return buf;
    }
    int64_t s = (int64_t)floor(t);
    int64_t days = s >= 0 ? s / 86400 : -((-s + 86399) / 86400);
    int64_t rem = s - days * 86400;
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    snprintf(buf, n, "%04lld-%02d-%02d %02d:%02d:%02d", (long long)y, m, d, (int)(rem / 3600),
             (int)(rem % 3600 / 60), (int)(rem % 60));
    return buf;
}

/* -------------------------------------------------------------------- files */

int tide_trace_read_all(const char *path, char **buf, size_t *len, tide_error_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return tide_errf(err, errno == ENOENT ? TIDE_ENOENT : TIDE_EIO, "cannot open '%s': %s",
                         path, strerror(errno));
    size_t n = 0, cap = 1 << 16;
    char *b = tide_xmalloc(cap + 1);
    for (;;) {
        if (n == cap) {
            if ((long long)cap >= TIDE_TRACE_MAX_FILE) {
                fclose(f);
                free(b);
                return tide_errf(err, TIDE_EIO, "'%s' is larger than %lld bytes", path,
                                 (long long)TIDE_TRACE_MAX_FILE);
            }
            cap *= 2;
            b = tide_xrealloc(b, cap + 1);
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    int e = errno;
    fclose(f);
    if (bad) {
        free(b);
        return tide_errf(err, TIDE_EIO, "cannot read '%s': %s", path, strerror(e));
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}

char *tide_trace_basename(const char *path, const char *strip_suffixes)
{
    size_t n = strlen(path);
    while (n > 0 && path[n - 1] == '/')
        n--;
    size_t b = n;
    while (b > 0 && path[b - 1] != '/')
        b--;
    size_t len = n - b;
    for (const char *s = strip_suffixes; s && *s;) {
        const char *bar = strchr(s, '|');
        size_t sl = bar ? (size_t)(bar - s) : strlen(s);
        if (sl > 0 && sl < len && !memcmp(path + b + len - sl, s, sl)) {
            len -= sl;
            break;
        }
        s += sl + (bar ? 1 : 0);
    }
    char *out = tide_xmalloc(len + 1);
    memcpy(out, path + b, len);
    out[len] = '\0';
    return out;
}

/* ------------------------------------------------------------------- demand */

void tide_trace_demand_init(tide_trace_demand_t *d) { memset(d, 0, sizeof *d); }

void tide_trace_demand_free(tide_trace_demand_t *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++) {
        free(d->v[i].name);
        free(d->v[i].rps);
    }
    free(d->v);
    memset(d, 0, sizeof *d);
}

/* 0 if name is non-empty and free of control characters, else -1 with err. */
static int check_name(const char *name, const char *what, tide_error_t *err)
{
    if (!name || !*name)
        return tide_errf(err, TIDE_EINVAL, "empty %s name", what);
    for (const char *p = name; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return tide_errf(err, TIDE_EINVAL, "control character (byte 0x%02x) in %s name",
                             (unsigned char)*p, what);
    if (name[0] == ' ' || name[0] == '\t' || name[strlen(name) - 1] == ' ')
        return tide_errf(err, TIDE_EINVAL, "%s name '%s' starts or ends with a space", what,
                         name);
    return 0;
}

int tide_trace_demand_add(tide_trace_demand_t *d, const char *name, const double *rps, size_t n,
                          double step_s, double req_cost, tide_error_t *err)
{
    if (check_name(name, "service", err) < 0)
        return -1;
    if (n < 1 || n > TIDE_TRACE_MAX_WINDOWS)
        return tide_errf(err, TIDE_EINVAL, "service '%s': %zu windows (must be 1..%d)", name, n,
                         TIDE_TRACE_MAX_WINDOWS);
    if (!(step_s > 0) || !isfinite(step_s))
        return tide_errf(err, TIDE_EINVAL, "service '%s': bad window length %g", name, step_s);
    if (d->n && d->step_s != step_s)
        return tide_errf(err, TIDE_EINVAL,
                         "service '%s' has windows of %gs but '%s' has %gs (give sources with "
                         "the same window length)",
                         name, step_s, d->v[0].name, d->step_s);
    for (size_t i = 0; i < d->n; i++)
        if (!strcmp(d->v[i].name, name))
            return tide_errf(err, TIDE_EINVAL,
                             "two sources give service name '%s' (name them with --service)",
                             name);
    tide_trace_svc_t s = {0};
    s.name = tide_xstrdup(name);
    s.rps = tide_xmalloc(n * sizeof *s.rps);
    memcpy(s.rps, rps, n * sizeof *s.rps);
    s.n = n;
    s.req_cost = req_cost;
    TIDE_PUSH(d->v, d->n, d->cap, s);
    d->step_s = step_s;
    return 0;
}

/* --------------------------------------------------------------------- fit */

void tide_trace_fit_default(tide_trace_fit_t *f)
{
    memset(f, 0, sizeof *f);
    f->stretch = 1;
    f->gpus_per_replica = 8;
    f->replica_tokens_per_s = 20000;
    f->min_replicas = 1;
    f->warmup_s = 300;
}

static int check_fit(const tide_trace_fit_t *f, tide_error_t *err)
{
    if (!(f->stretch > 0) || !isfinite(f->stretch) || f->stretch > 1e6)
        return tide_errf(err, TIDE_EINVAL, "stretch must be in (0, 1e6], not %g", f->stretch);
    if (!isfinite(f->shift_h) || fabs(f->shift_h) > 1e6)
        return tide_errf(err, TIDE_EINVAL, "shift must be a number of hours within 1e6");
    if (f->duration_s < 0 || f->duration_s > TIDE_IO_MAX_SECONDS)
        return tide_errf(err, TIDE_EINVAL, "duration must be 0..%llds",
                         (long long)TIDE_IO_MAX_SECONDS);
    if (!(f->peak_gpus >= 0) || f->peak_gpus > TIDE_IO_MAX_COUNT)
        return tide_errf(err, TIDE_EINVAL, "peak GPUs must be 0..%d, not %g", TIDE_IO_MAX_COUNT,
                         f->peak_gpus);
    if (f->gpus_per_replica < 1 || f->gpus_per_replica > TIDE_IO_MAX_COUNT)
        return tide_errf(err, TIDE_EINVAL, "gpus per replica must be 1..%d", TIDE_IO_MAX_COUNT);
    if (!(f->replica_rps >= 0) || f->replica_rps > TIDE_TRACE_MAX_RATE)
        return tide_errf(err, TIDE_EINVAL, "replica rps must be 0..%g", TIDE_TRACE_MAX_RATE);
    if (!(f->replica_tokens_per_s > 0) || f->replica_tokens_per_s > 1e12)
        return tide_errf(err, TIDE_EINVAL, "replica tokens/s must be in (0, 1e12]");
    if (f->min_replicas < 0 || f->min_replicas > TIDE_IO_MAX_COUNT)
        return tide_errf(err, TIDE_EINVAL, "min replicas must be 0..%d", TIDE_IO_MAX_COUNT);
    if (f->warmup_s < 0 || f->warmup_s > TIDE_IO_MAX_SECONDS)
        return tide_errf(err, TIDE_EINVAL, "warm-up must be 0..%llds",
                         (long long)TIDE_IO_MAX_SECONDS);
    return 0;
}

/* Replace s's series by n values out[i] = old[(i + off) mod old_n]. */
static void cycle(tide_trace_svc_t *s, size_t n, size_t off)
{
    double *v = tide_xmalloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = s->rps[(i + off) % s->n];
    free(s->rps);
    s->rps = v;
    s->n = n;
}

/* Round x >= 0 to 4 decimals; never -0. */
static double quant(double x)
{
    double q = round(x * 1e4) / 1e4;
    return q + 0.0;
}

static double need_of(const tide_trace_svc_t *s, double rps, int gpr)
{
    double r = ceil(rps / s->replica_rps);
    if (r < s->min_replicas)
        r = s->min_replicas;
    return r * gpr;
}

int tide_trace_fit_apply(tide_trace_demand_t *d, const tide_trace_fit_t *f,
                         tide_trace_fit_result_t *r, tide_error_t *err)
{
    if (check_fit(f, err) < 0)
        return -1;
    if (d->n == 0)
        return tide_errf(err, TIDE_EINVAL, "no service to fit");
    size_t n = 0;
    for (size_t s = 0; s < d->n; s++)
        n = TIDE_MAX(n, d->v[s].n);
    /* 1. equal lengths */
    for (size_t s = 0; s < d->n; s++)
        if (d->v[s].n != n)
            cycle(&d->v[s], n, 0);
    /* 2. stretch */
    double step = d->step_s * f->stretch;
    if (step < 1)
        return tide_errf(err, TIDE_EINVAL,
                         "windows of %gs stretched x%g are shorter than a second", d->step_s,
                         f->stretch);
    /* 3. shift: rotate by whole windows */
    if (f->shift_h != 0) {
        double w = fmod(f->shift_h * 3600.0 / step, (double)n);
        long long rot = llround(w) % (long long)n;
        if (rot < 0)
            rot += (long long)n;
        if (rot)
            for (size_t s = 0; s < d->n; s++)
                cycle(&d->v[s], n, n - (size_t)rot);
    }
    /* 4. repeat / trim */
    if (f->duration_s > 0) {
        double want = ceil((double)f->duration_s / step);
        if (want > TIDE_TRACE_MAX_WINDOWS)
            return tide_errf(err, TIDE_EINVAL,
                             "duration %llds needs %.0f windows of %gs (at most %d)",
                             (long long)f->duration_s, want, step, TIDE_TRACE_MAX_WINDOWS);
        size_t m = want < 1 ? 1 : (size_t)want;
        for (size_t s = 0; s < d->n; s++)
            cycle(&d->v[s], m, 0);
        n = m;
    }
    if ((double)(n - 1) * step > (double)TIDE_IO_MAX_SECONDS)
        return tide_errf(err, TIDE_EINVAL, "%zu windows of %gs span more than %llds", n, step,
                         (long long)TIDE_IO_MAX_SECONDS);
    d->step_s = step;
    /* 5. replica throughput */
    for (size_t s = 0; s < d->n; s++) {
        tide_trace_svc_t *v = &d->v[s];
        double rr = f->replica_rps > 0   ? f->replica_rps
                    : v->req_cost > 0     ? f->replica_tokens_per_s / v->req_cost
                                          : TIDE_TRACE_DEFAULT_REPLICA_RPS;
        v->replica_rps = quant(rr);
        if (v->replica_rps < 1e-4)
            return tide_errf(err, TIDE_EINVAL,
                             "service '%s': replica_rps %g rounds to 0 (%.0f tokens per request; "
                             "raise --replica-tokens-per-s or give --replica-rps)",
                             v->name, rr, v->req_cost);
        v->min_replicas = f->min_replicas;
    }
    /* 6. scale to the peak, then round */
    double scale = 1;
    if (f->peak_gpus > 0) {
        double fmax = 0;
        for (size_t i = 0; i < n; i++) {
            double fl = 0;
            for (size_t s = 0; s < d->n; s++)
                fl += d->v[s].rps[i] / d->v[s].replica_rps * f->gpus_per_replica;
            fmax = TIDE_MAX(fmax, fl);
        }
        if (!(fmax > 0))
            return tide_errf(err, TIDE_EINVAL, "the demand is zero everywhere: cannot scale it "
                                               "to a peak");
        scale = f->peak_gpus / fmax;
        if (!isfinite(scale) || scale * fmax > 1e13)
            return tide_errf(err, TIDE_EINVAL, "scaling to %g GPUs overflows", f->peak_gpus);
    }
    for (size_t s = 0; s < d->n; s++) {
        double rr = d->v[s].replica_rps;
        for (size_t i = 0; i < n; i++) {
            double x = d->v[s].rps[i] * scale, q = quant(x);
            /* rounding must not push a value over a whole replica */
            if (f->peak_gpus > 0 && q > 0 && ceil(q / rr) > ceil(x / rr - 1e-9))
                q = TIDE_MAX(0.0, quant(q - 1e-4));
            d->v[s].rps[i] = q;
        }
    }
    /* 7. figures */
    if (r) {
        memset(r, 0, sizeof *r);
        r->scale = scale;
        r->windows = n;
        r->step_s = step;
        r->span_s = llround((double)n * step);
        for (size_t i = 0; i < n; i++) {
            double tot = 0, need = 0, fl = 0;
            for (size_t s = 0; s < d->n; s++) {
                const tide_trace_svc_t *v = &d->v[s];
                tot += v->rps[i];
                need += need_of(v, v->rps[i], f->gpus_per_replica);
                fl += v->rps[i] / v->replica_rps * f->gpus_per_replica;
            }
            int64_t t = llround((double)i * step);
            if (i == 0 || tot > r->peak_rps) {
                r->peak_rps = tot;
                r->peak_t = t;
            }
            if (i == 0 || tot < r->trough_rps) {
                r->trough_rps = tot;
                r->trough_t = t;
            }
            if (i == 0 || need > r->peak_need_gpus)
                r->peak_need_gpus = need;
            if (i == 0 || need < r->trough_need_gpus)
                r->trough_need_gpus = need;
            r->peak_fluid_gpus = TIDE_MAX(r->peak_fluid_gpus, fl);
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ writers */

/* x with at most 4 decimals, trailing zeros removed. */
static const char *fmt_num(double x, char *buf, size_t n)
{
    snprintf(buf, n, "%.4f", x);
    char *dot = strchr(buf, '.');
    if (dot) {
        char *e = buf + strlen(buf);
        while (e > dot + 1 && e[-1] == '0')
            *--e = '\0';
        if (e == dot + 1)
            *dot = '\0';
    }
    return buf;
}

int tide_trace_services_write(FILE *f, const void *ctx)
{
    const tide_trace_out_t *o = ctx;
    char b[64];
    if (fputs("service,gpus_per_replica,replica_rps,min_replicas,warmup_s\n", f) < 0)
        return -1;
    for (size_t s = 0; s < o->d->n; s++) {
        const tide_trace_svc_t *v = &o->d->v[s];
        if (tide_csv_write_field(f, v->name) < 0 ||
            fprintf(f, ",%d,%s,%d,%lld\n", o->fit->gpus_per_replica,
                    fmt_num(v->replica_rps, b, sizeof b), v->min_replicas,
                    (long long)o->fit->warmup_s) < 0)
            return -1;
    }
    return 0;
}

int tide_trace_demand_write(FILE *f, const void *ctx)
{
    const tide_trace_out_t *o = ctx;
    const tide_trace_demand_t *d = o->d;
    char b[64];
    if (fputs("time_s,service,rps\n", f) < 0)
        return -1;
    size_t n = d->n ? d->v[0].n : 0;
    for (size_t i = 0; i < n; i++)
        for (size_t s = 0; s < d->n; s++) {
            if (fprintf(f, "%lld,", (long long)llround((double)i * d->step_s)) < 0 ||
                tide_csv_write_field(f, d->v[s].name) < 0 ||
                fprintf(f, ",%s\n", fmt_num(d->v[s].rps[i], b, sizeof b)) < 0)
                return -1;
        }
    return 0;
}

int tide_trace_jobs_span(const char *jobs_csv, int64_t *span_s, tide_error_t *err)
{
    tide_jobs_t *j = tide_jobs_read_file(jobs_csv, NULL, err);
    if (!j)
        return -1;
    if (j->n == 0) {
        tide_jobs_free(j);
        return tide_errf(err, TIDE_EINVAL, "%s: no jobs to align with", jobs_csv);
    }
    int64_t last = 0;
    for (size_t i = 0; i < j->n; i++)
        last = TIDE_MAX(last, j->v[i].submit_s);
    tide_jobs_free(j);
    *span_s = (last / 86400 + 1) * 86400;
    return 0;
}

/* ------------------------------------------------------------------- import */

void tide_trace_opts_default(tide_trace_opts_t *o)
{
    memset(o, 0, sizeof *o);
    tide_trace_philly_opts_default(&o->philly);
    o->window_s = 300;
    o->prefill_weight = 1;
    tide_trace_fit_default(&o->fit);
}

char *tide_trace_service_name(const tide_trace_opts_t *o, size_t i, const char *src,
                              const char *strip_suffixes)
{
    if (o && o->n_services > i && o->services && o->services[i])
        return tide_xstrdup(o->services[i]);
    return tide_trace_basename(src, strip_suffixes);
}

typedef int (*load_fn)(const char *const *srcs, size_t n, const tide_trace_opts_t *o,
                       tide_trace_demand_t *d, tide_error_t *err);
typedef int (*jobs_fn)(const char *const *srcs, size_t n, const tide_trace_opts_t *o,
                       const char *outdir, tide_trace_summary_t *sum, tide_error_t *err);

/* The formats: a jobs importer, or a demand loader whose result is fitted and
 * written by import_demand. */
static const struct format {
    const char *name;
    int kind;
    jobs_fn jobs;
    load_fn load;
    int gaps;     /* report gaps filled */
    int requests; /* report requests binned */
} formats[] = {
    {"philly", TIDE_TRACE_KIND_JOBS, tide_trace_philly_import, NULL, 0, 0},
    {"servegen", TIDE_TRACE_KIND_DEMAND, NULL, tide_trace_servegen_load, 1, 0},
    {"azure-llm", TIDE_TRACE_KIND_DEMAND, NULL, tide_trace_azure_load, 0, 1},
    {"mooncake", TIDE_TRACE_KIND_DEMAND, NULL, tide_trace_mooncake_load, 0, 1},
};
#define NFORMATS (sizeof formats / sizeof formats[0])

static const struct format *format_find(const char *name)
{
    for (size_t i = 0; name && i < NFORMATS; i++)
        if (!strcmp(formats[i].name, name))
            return &formats[i];
    return NULL;
}

int tide_trace_format_kind(const char *format)
{
    const struct format *f = format_find(format);
    return f ? f->kind : -1;
}

const char *const *tide_trace_format_names(void)
{
    static const char *const names[NFORMATS + 1] = {"philly", "servegen", "azure-llm",
                                                    "mooncake", NULL};
    return names;
}

static int import_demand(const struct format *F, const char *const *srcs, size_t n,
                         const tide_trace_opts_t *o, const char *outdir,
                         tide_trace_summary_t *sum, tide_error_t *err)
{
    tide_trace_demand_t d;
    tide_trace_demand_init(&d);
    tide_trace_fit_t fit = o->fit;
    tide_trace_fit_result_t res;
    int rc = -1;
    if (o->n_services && o->n_services != n) {
        tide_errf(err, TIDE_EINVAL, "%zu service names for %zu sources (give one per source)",
                  o->n_services, n);
        goto out;
    }
    if (F->load(srcs, n, o, &d, err) < 0)
        goto out;
    if (o->align_with && tide_trace_jobs_span(o->align_with, &fit.duration_s, err) < 0) {
        tide_err_prefix(err, "--align-with: ");
        goto out;
    }
    if (tide_trace_fit_apply(&d, &fit, &res, err) < 0)
        goto out;
    if (tide_mkdir_p(outdir, err) < 0)
        goto out;
    tide_trace_out_t out = {&d, &fit};
    if (tide_fs_write_atomic(outdir, "services.csv", tide_trace_services_write, &out, err) < 0 ||
        tide_fs_write_atomic(outdir, "demand.csv", tide_trace_demand_write, &out, err) < 0)
        goto out;
    sum->sources = d.files;
    sum->rows_read = d.rows_read;
    sum->rows_skipped = d.rows_skipped;
    sum->first_skip = d.first_skip;
    sum->services = (int)d.n;
    sum->demand_rows = (long long)(d.n * res.windows);
    sum->gaps_filled = d.gaps_filled;
    sum->requests = d.requests;
    sum->fit = res;
    char extra[128] = "", rr[128] = "", b1[32], b2[32], b3[32];
    if (F->gaps)
        snprintf(extra, sizeof extra, ", %lld gaps filled", d.gaps_filled);
    if (F->requests)
        snprintf(extra, sizeof extra, ", %lld requests binned", d.requests);
    if (d.n == 1)
        snprintf(rr, sizeof rr, "replica_rps %g%s", d.v[0].replica_rps,
                 d.v[0].req_cost > 0 && !(fit.replica_rps > 0) ? " (from tokens)" : "");
    else
        snprintf(rr, sizeof rr, "%zu services", d.n);
    snprintf(sum->line, sizeof sum->line,
             "%s: %lld file%s, %lld rows read, %lld skipped%s; %s, %zu windows of %gs (%s), "
             "scale x%.4g; peak %.4g rps = %.0f GPUs at %s, trough %.4g rps = %.0f GPUs at %s "
             "-> %s/services.csv, %s/demand.csv",
             F->name, d.files, d.files == 1 ? "" : "s", d.rows_read, d.rows_skipped, extra, rr,
             res.windows, res.step_s, tide_fmt_duration(res.span_s, b1, sizeof b1), res.scale,
             res.peak_rps, res.peak_need_gpus, tide_fmt_duration(res.peak_t, b2, sizeof b2),
             res.trough_rps, res.trough_need_gpus,
             tide_fmt_duration(res.trough_t, b3, sizeof b3), outdir, outdir);
    rc = 0;
out:
    tide_trace_demand_free(&d);
    return rc;
}

int tide_trace_import(const char *format, const char *const *srcs, size_t n,
                      const tide_trace_opts_t *o, const char *outdir, tide_trace_summary_t *sum,
                      tide_error_t *err)
{
    tide_trace_summary_t local;
    if (!sum)
        sum = &local;
    memset(sum, 0, sizeof *sum);
    const struct format *F = format_find(format);
    if (!F)
        return tide_errf(err, TIDE_EINVAL, "unknown format '%s' (philly, servegen, azure-llm, "
                                           "mooncake)",
                         format ? format : "");
    if (n == 0)
        return tide_errf(err, TIDE_EINVAL, "no source given");
    if (!outdir || !*outdir)
        return tide_errf(err, TIDE_EINVAL, "no output directory given");
    tide_trace_opts_t def;
    if (!o) {
        tide_trace_opts_default(&def);
        o = &def;
    }
    if (F->kind == TIDE_TRACE_KIND_JOBS)
        return F->jobs(srcs, n, o, outdir, sum, err);
    return import_demand(F, srcs, n, o, outdir, sum, err);
}

/* ------------------------------------------------------------------ parsing */

int tide_trace_row_fail(tide_error_t *err, const char *name, int line, const char *col,
                        const char *fmt, ...)
{
    if (!err)
        return -1;
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (col)
        return tide_errf(err, TIDE_EINVAL, "%s:%d: column '%s': %s", name, line, col, msg);
    return tide_errf(err, TIDE_EINVAL, "%s:%d: %s", name, line, msg);
}

int tide_trace_skip_row(int skip_bad, long long *skipped, tide_error_t *first,
                        const tide_error_t *err)
{
    if (!skip_bad)
        return -1;
    if (*skipped == 0 && err && first)
        *first = *err;
    (*skipped)++;
    return 0;
}

int tide_trace_parse_count(const char *s, long long lo, long long hi, long long *out)
{
    long long v;
    double x;
    if (tide_parse_int(s, &v) < 0) {
        if (tide_parse_double(s, &x) < 0 || x != floor(x) || fabs(x) > 9e15)
            return -1;
        v = (long long)x;
    }
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}
