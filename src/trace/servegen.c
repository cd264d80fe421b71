/* ServeGen importer: a tier directory of per-client rate files
 * (chunk-<client>-trace.csv, no header: window_start_s, rate, cv, dist, shape,
 * scale) -> one service's demand, the clients summed per window, data gaps
 * filled (docs/trace.md). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/csv.h"
#include "formats/workload_io.h"
#include "trace/trace.h"
#include "util/util.h"

#define SG_DEFAULT_WINDOW 600 /* a tier with a single window start */

void tide_trace_sg_init(tide_trace_sg_t *sg) { memset(sg, 0, sizeof *sg); }

void tide_trace_sg_free(tide_trace_sg_t *sg)
{
    if (!sg)
        return;
    free(sg->v);
    memset(sg, 0, sizeof *sg);
}

static int parse_row(tide_csv_t *c, tide_trace_sg_point_t *pt, tide_error_t *err)
{
    const char *name = tide_csv_name(c);
    int line = tide_csv_line(c);
    if (tide_csv_nfields(c) < 2)
        return tide_trace_row_fail(err, name, line, NULL,
                                   "%d field(s); expected window_start_s,rate,cv,dist,shape,scale",
                                   tide_csv_nfields(c));
    const char *ws = tide_csv_field(c, 0), *ra = tide_csv_field(c, 1);
    double t;
    if (tide_parse_double(ws, &t) < 0 || t < 0 || t > (double)TIDE_IO_MAX_SECONDS ||
        t != floor(t))
        return tide_trace_row_fail(err, name, line, "window_start_s",
                                   "'%s' is not a whole number of seconds in 0..%lld", ws,
                                   (long long)TIDE_IO_MAX_SECONDS);
    if (tide_parse_double(ra, &pt->rate) < 0 || !(pt->rate >= 0) || pt->rate > TIDE_TRACE_MAX_RATE)
        return tide_trace_row_fail(err, name, line, "rate",
                                   "'%s' is not a rate in requests/s (0..%g)", ra,
                                   TIDE_TRACE_MAX_RATE);
    pt->t = (int64_t)t;
    pt->rate += 0.0;
    return 0;
}

int tide_trace_servegen_add_mem(tide_trace_sg_t *sg, const char *buf, size_t len,
                                const char *name, int skip_bad, tide_error_t *err)
{
    tide_csv_t *c = tide_csv_open_mem_ex(buf, len, name, TIDE_CSV_NO_HEADER, err);
    if (!c)
        return -1;
    sg->files++;
    int rc = 0;
    for (;;) {
        tide_error_t e = {0, ""};
        int r = tide_csv_next(c, &e);
        if (r == 0)
            break;
        sg->rows_read++;
        if (r < 0) {
            if (tide_csv_recoverable(c) &&
                tide_trace_skip_row(skip_bad, &sg->rows_skipped, &sg->first_skip, &e) == 0)
                continue;
            if (err)
                *err = e;
            rc = -1;
            break;
        }
        tide_trace_sg_point_t pt;
        if (parse_row(c, &pt, &e) < 0) {
            if (tide_trace_skip_row(skip_bad, &sg->rows_skipped, &sg->first_skip, &e) == 0)
                continue;
            if (err)
                *err = e;
            rc = -1;
            break;
        }
        TIDE_PUSH(sg->v, sg->n, sg->cap, pt);
    }
    tide_csv_close(c);
    return rc;
}

int tide_trace_servegen_add_file(tide_trace_sg_t *sg, const char *path, int skip_bad,
                                 tide_error_t *err)
{
    char *buf;
    size_t len;
    if (tide_trace_read_all(path, &buf, &len, err) < 0)
        return -1;
    int rc = tide_trace_servegen_add_mem(sg, buf, len, path, skip_bad, err);
    free(buf);
    return rc;
}

static int is_chunk(const char *n)
{
    size_t l = strlen(n);
    static const char pre[] = "chunk-", suf[] = "-trace.csv";
    return l > sizeof pre - 1 + sizeof suf - 1 && !strncmp(n, pre, sizeof pre - 1) &&
           !strcmp(n + l - (sizeof suf - 1), suf);
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int tide_trace_servegen_add_path(tide_trace_sg_t *sg, const char *path, int skip_bad,
                                 tide_error_t *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return tide_errf(err, errno == ENOENT ? TIDE_ENOENT : TIDE_EIO, "cannot open '%s': %s",
                         path, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return tide_trace_servegen_add_file(sg, path, skip_bad, err);
    DIR *dir = opendir(path);
    if (!dir)
        return tide_errf(err, TIDE_EIO, "cannot open directory '%s': %s", path, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL)
        if (is_chunk(de->d_name)) {
            char *s = tide_xstrdup(de->d_name);
            TIDE_PUSH(names, n, cap, s);
        }
    closedir(dir);
    int rc = 0;
    if (n == 0)
        rc = tide_errf(err, TIDE_ENOENT,
                       "no chunk-<client>-trace.csv file in '%s' (give a ServeGen tier directory "
                       "such as servegen/language_m-large)",
                       path);
    if (n)
        qsort(names, n, sizeof *names, str_cmp);
    for (size_t i = 0; i < n; i++) {
        if (rc == 0) {
            size_t l = strlen(path) + strlen(names[i]) + 2;
            char *full = tide_xmalloc(l);
            snprintf(full, l, "%s/%s", path, names[i]);
            rc = tide_trace_servegen_add_file(sg, full, skip_bad, err);
            free(full);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

int tide_trace_servegen_finish(tide_trace_sg_t *sg, const char *service, tide_trace_demand_t *d,
                               tide_error_t *err)
{
    if (sg->n == 0)
        return tide_errf(err, TIDE_EINVAL, "service '%s': no data row in %lld file(s)",
                         service ? service : "", sg->files);
    int64_t tmin = sg->v[0].t, tmax = sg->v[0].t, g = 0;
    for (size_t i = 0; i < sg->n; i++) {
        tmin = TIDE_MIN(tmin, sg->v[i].t);
        tmax = TIDE_MAX(tmax, sg->v[i].t);
    }
    for (size_t i = 0; i < sg->n; i++)
        g = gcd64(g, sg->v[i].t - tmin);
    if (g == 0)
        g = SG_DEFAULT_WINDOW;
    int64_t nw = (tmax - tmin) / g + 1;
    if (nw > TIDE_TRACE_MAX_WINDOWS)
        return tide_errf(err, TIDE_EINVAL,
                         "service '%s': window starts %lld..%lld in steps of %llds make %lld "
                         "windows (at most %d)",
                         service ? service : "", (long long)tmin, (long long)tmax, (long long)g,
                         (long long)nw, TIDE_TRACE_MAX_WINDOWS);
    size_t n = (size_t)nw;
    double *sum = tide_xcalloc(n, sizeof *sum);
    char *seen = tide_xcalloc(n, 1);
    for (size_t i = 0; i < sg->n; i++) {
        size_t w = (size_t)((sg->v[i].t - tmin) / g);
        sum[w] += sg->v[i].rate;
        seen[w] = 1;
    }
    /* gaps: no row at all, or every client at 0 */
    long long gaps = 0;
    size_t prev = SIZE_MAX;
    for (size_t i = 0; i <= n; i++) {
        int gap = i < n && (!seen[i] || !(sum[i] > 0));
        if (gap) {
            gaps++;
            continue;
        }
        size_t a = prev == SIZE_MAX ? 0 : prev + 1; /* first gap of the run */
        if (a < i) {
            for (size_t k = a; k < i; k++) {
                if (prev == SIZE_MAX && i == n)
                    sum[k] = 0; /* no data at all: reported below */
                else if (prev == SIZE_MAX)
                    sum[k] = sum[i];
                else if (i == n)
                    sum[k] = sum[prev];
                else
                    sum[k] = sum[prev] + (sum[i] - sum[prev]) * (double)(k - prev) /
                                             (double)(i - prev);
            }
        }
        prev = i;
    }
    int rc;
    if ((size_t)gaps == n)
        rc = tide_errf(err, TIDE_EINVAL,
                       "service '%s': every window is a gap (no client has a positive rate)",
                       service ? service : "");
    else
        rc = tide_trace_demand_add(d, service, sum, n, (double)g, 0, err);
    free(sum);
    free(seen);
    if (rc < 0)
        return -1;
    d->v[d->n - 1].gaps_filled = gaps;
    if (d->rows_skipped == 0 && sg->rows_skipped)
        d->first_skip = sg->first_skip;
    d->files += sg->files;
    d->rows_read += sg->rows_read;
    d->rows_skipped += sg->rows_skipped;
    d->gaps_filled += gaps;
    return 0;
}

int tide_trace_servegen_load(const char *const *srcs, size_t n, const tide_trace_opts_t *o,
                             tide_trace_demand_t *d, tide_error_t *err)
{
    for (size_t i = 0; i < n; i++) {
        tide_trace_sg_t sg;
        tide_trace_sg_init(&sg);
        char *name = tide_trace_service_name(o, i, srcs[i], ".csv");
        int rc = tide_trace_servegen_add_path(&sg, srcs[i], o->skip_bad, err);
        if (rc == 0)
            rc = tide_trace_servegen_finish(&sg, name, d, err);
        free(name);
        tide_trace_sg_free(&sg);
        if (rc < 0)
            return -1;
    }
    return 0;
}
