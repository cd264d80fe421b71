/* Prometheus text exposition. */
#include "http/prom.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

void tide_prom_init(tide_prom_t *p) { memset(p, 0, sizeof *p); }

void tide_prom_free(tide_prom_t *p)
{
    free(p->buf);
    memset(p, 0, sizeof *p);
}

static void put(tide_prom_t *p, const char *s, size_t n)
{
    tide_grow((void **)&p->buf, &p->cap, p->n + n + 1, 1);
    memcpy(p->buf + p->n, s, n);
    p->n += n;
    p->buf[p->n] = '\0';
}

static void puts_(tide_prom_t *p, const char *s) { put(p, s, strlen(s)); }

static void putf(tide_prom_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(tide_prom_t *p, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    put(p, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Escape: label values escape \ " and newline; help escapes \ and newline. */
static void put_escaped(tide_prom_t *p, const char *s, int quote)
{
    for (; s && *s; s++) {
        if (*s == '\\')
            puts_(p, "\\\\");
        else if (*s == '\n')
            puts_(p, "\\n");
        else if (*s == '"' && quote)
            puts_(p, "\\\"");
        else
            put(p, s, 1);
    }
}

const char *tide_prom_escape(const char *s, char *buf, size_t n)
{
    tide_prom_t p;
    tide_prom_init(&p);
    put_escaped(&p, s, 1);
    snprintf(buf, n, "%s", p.buf ? p.buf : "");
    tide_prom_free(&p);
    return buf;
}

void tide_prom_family(tide_prom_t *p, const char *name, const char *type, const char *help)
{
    puts_(p, "# HELP ");
    puts_(p, name);
    puts_(p, " ");
    put_escaped(p, help, 0);
    puts_(p, "\n# TYPE ");
    puts_(p, name);
    puts_(p, " ");
    puts_(p, type);
    puts_(p, "\n");
}

static void put_value(tide_prom_t *p, double v)
{
    if (isnan(v))
        puts_(p, "NaN");
    else if (isinf(v))
        puts_(p, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 1e15)
        putf(p, "%.0f", v);
    else
        putf(p, "%.17g", v);
}

static void put_labels(tide_prom_t *p, const char *const *labels, size_t n, const char *xk,
                       const char *xv)
{
    if (n == 0 && !xk)
        return;
    puts_(p, "{");
    for (size_t i = 0; i < n; i++) {
        if (i)
            puts_(p, ",");
        puts_(p, labels[2 * i]);
        puts_(p, "=\"");
        put_escaped(p, labels[2 * i + 1], 1);
        puts_(p, "\"");
    }
    if (xk) {
        if (n)
            puts_(p, ",");
        puts_(p, xk);
        puts_(p, "=\"");
        puts_(p, xv);
        puts_(p, "\"");
    }
    puts_(p, "}");
}

void tide_prom_sample(tide_prom_t *p, const char *name, const char *const *labels, size_t n,
                      double value)
{
    puts_(p, name);
    put_labels(p, labels, n, NULL, NULL);
    puts_(p, " ");
    put_value(p, value);
    puts_(p, "\n");
}

void tide_prom_scalars(tide_prom_t *p, const tide_prom_scalar_t *rows, size_t n_rows,
                       const char *const *labels, size_t n)
{
    for (size_t i = 0; i < n_rows; i++) {
        tide_prom_family(p, rows[i].name, rows[i].type, rows[i].help);
        tide_prom_sample(p, rows[i].name, labels, n, rows[i].v);
    }
}

void tide_prom_histogram(tide_prom_t *p, const char *name, const char *const *labels, size_t n,
                         const double *bounds, size_t nb, const double *obs, size_t no)
{
    char bname[200], le[64];
    double sum = 0;
    for (size_t i = 0; i < no; i++)
        sum += obs[i];
    snprintf(bname, sizeof bname, "%s_bucket", name);
    for (size_t b = 0; b < nb; b++) {
        size_t c = 0;
        for (size_t i = 0; i < no; i++)
            c += obs[i] <= bounds[b];
        tide_prom_t tmp;
        tide_prom_init(&tmp);
        put_value(&tmp, bounds[b]);
        snprintf(le, sizeof le, "%s", tmp.buf);
        tide_prom_free(&tmp);
        puts_(p, bname);
        put_labels(p, labels, n, "le", le);
        putf(p, " %zu\n", c);
    }
    puts_(p, bname);
    put_labels(p, labels, n, "le", "+Inf");
    putf(p, " %zu\n", no);
    snprintf(bname, sizeof bname, "%s_sum", name);
    tide_prom_sample(p, bname, labels, n, sum);
    snprintf(bname, sizeof bname, "%s_count", name);
    tide_prom_sample(p, bname, labels, n, (double)no);
}
