/* tide http: Prometheus text exposition format (version 0.0.4). A builder
 * that writes # HELP / # TYPE once per family, escapes label values (\\, \",
 * \n) and help text (\\, \n), and writes histograms with cumulative le
 * buckets, +Inf, _sum and _count. */
#ifndef TIDE_HTTP_PROM_H
#define TIDE_HTTP_PROM_H

#include <stddef.h>

#define TIDE_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

typedef struct tide_prom {
    char *buf;
    size_t n, cap;
} tide_prom_t;

void tide_prom_init(tide_prom_t *p);
void tide_prom_free(tide_prom_t *p);

/* Start a metric family: type is "gauge", "counter" or "histogram". Call
 * once per family, before its samples. */
void tide_prom_family(tide_prom_t *p, const char *name, const char *type, const char *help);

/* One sample: name{k1="v1",...} value. labels holds n_labels (key, value)
 * pairs (keys must be valid label names; values any UTF-8). NaN and
 * infinities are written as NaN, +Inf, -Inf. */
void tide_prom_sample(tide_prom_t *p, const char *name, const char *const *labels,
                      size_t n_labels, double value);

/* A table of scalar metrics: a family and one sample each. */
typedef struct tide_prom_scalar {
    const char *name, *type, *help;
    double v;
} tide_prom_scalar_t;
/* For each of the n_rows rows, its family and one sample with labels (n
 * name/value pairs, as tide_prom_sample). */
void tide_prom_scalars(tide_prom_t *p, const tide_prom_scalar_t *rows, size_t n_rows,
                       const char *const *labels, size_t n);

/* A whole histogram series from raw observations: buckets le = bounds[i]
 * (ascending) and +Inf, then _sum and _count, with the given labels. */
void tide_prom_histogram(tide_prom_t *p, const char *name, const char *const *labels,
                         size_t n_labels, const double *bounds, size_t n_bounds,
                         const double *obs, size_t n_obs);

/* Escape a label value into buf (always NUL-terminated). */
const char *tide_prom_escape(const char *s, char *buf, size_t n);

#endif
