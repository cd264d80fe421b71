/* tide http: GET of a URL for pulling demand from a Prometheus query URL
 * (plain http only; the transport is http/client.h), and the parser of a
 * Prometheus instant-query response. */
#ifndef TIDE_HTTP_GET_H
#define TIDE_HTTP_GET_H

#include <stddef.h>

#include "tide/types.h"

/* Split "http://host[:port]/path?query" (no user info, http only). host
 * without brackets; path includes the query ("/" when empty). Returns 0 or
 * -1 with EINVAL. */
int tide_http_url_parse(const char *url, char *host, size_t hostn, char *port, size_t portn,
                        char *path, size_t pathn, tide_error_t *err);

/* GET url with an overall timeout (connect + send + receive) in ms; at most
 * max body bytes. On success *body (caller frees, NUL-terminated) and *len
 * hold the body and *status the HTTP status. Errors: EINVAL bad URL, EIO
 * network failure or timeout, ERANGE body too large. */
int tide_http_get(const char *url, int timeout_ms, size_t max, char **body, size_t *len,
                  int *status, tide_error_t *err);

/* Parse a Prometheus /api/v1/query response: status "success" with a vector
 * (values of all series summed; *ts = their latest sample time) or a scalar.
 * Errors: EINVAL malformed or a NaN/negative value, ENOENT an empty vector
 * (no fresh value), EIO status "error" (message from the server). */
int tide_prom_query_value(const char *body, size_t len, double *value, double *ts,
                          tide_error_t *err);

/* Parse a Prometheus /api/v1/query_range response (a matrix): the samples
 * of all series summed at each time, in time order. *ts and *values (caller
 * frees both) hold *n >= 1 points. "NaN" samples (a ratio without a value)
 * are skipped. Errors: EINVAL malformed, not a matrix, or a negative or
 * infinite value; ENOENT no samples; EIO status "error". */
int tide_prom_range_values(const char *body, size_t len, double **ts, double **values, size_t *n,
                           tide_error_t *err);

/* The range query URL of an instant query URL (".../api/v1/query?query=Q"
 * -> ".../api/v1/query_range?query=Q&start=S&end=E&step=D", times in Unix
 * seconds; time/start/end/step arguments of the URL are dropped) into out
 * (n bytes). Errors: EINVAL not an instant query URL or a bad range, ERANGE
 * out too small. */
int tide_prom_range_url(const char *url, double start, double end, double step, char *out,
                        size_t n, tide_error_t *err);

/* One series of an instant-query vector: the values of the labels asked
 * for (owned, NULL when the series lacks one) and its sample as given
 * (any number, NaN and infinities included: the caller judges it). */
#define TIDE_PROM_SERIES_LABELS 4
typedef struct tide_prom_series {
    char *label[TIDE_PROM_SERIES_LABELS];
    double value, ts;
} tide_prom_series_t;

/* Parse a Prometheus /api/v1/query response holding a vector: each series
 * with the labels named in labels[0 .. n_labels) (n_labels <= 4). *out
 * (free with tide_prom_series_free) holds *n >= 0 series; an empty vector
 * is 0 series, not an error. Errors: EINVAL malformed or not a vector, EIO
 * status "error". */
int tide_prom_query_series(const char *body, size_t len, const char *const *labels,
                           size_t n_labels, tide_prom_series_t **out, size_t *n,
                           tide_error_t *err);
void tide_prom_series_free(tide_prom_series_t *v, size_t n);

#endif
