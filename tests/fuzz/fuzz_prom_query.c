/* libFuzzer target: the daemon's pulled-demand parsers: a Prometheus
 * /api/v1/query response body and a --demand-query URL. An accepted value is
 * finite and not negative (the daemon never feeds garbage or a NaN to the
 * engine). The same body as a vector of series (--power-query): on success
 * *n series, each label either NULL or a string; on failure none. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/get.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tide_error_t err;
    double v = 0, ts = 0;
    if (tide_prom_query_value((const char *)data, size, &v, &ts, &err) == 0 &&
        (!isfinite(v) || v < 0))
        abort();
    static const char *const labels[] = {"Hostname", "gpu"};
    tide_prom_series_t *sv = NULL;
    size_t ns = 99;
    if (tide_prom_query_series((const char *)data, size, labels, 2, &sv, &ns, &err) == 0) {
        for (size_t i = 0; i < ns; i++)
            for (size_t k = 0; k < 2; k++)
                if (sv[i].label[k] && strlen(sv[i].label[k]) > size)
                    abort();
        tide_prom_series_free(sv, ns);
    } else if (sv || ns != 0 || !err.msg[0]) {
        abort();
    }
    char url[512];
    size_t n = size < sizeof url - 1 ? size : sizeof url - 1;
    memcpy(url, data, n);
    url[n] = 0;
    char host[256], port[16], path[512];
    (void)tide_http_url_parse(url, host, sizeof host, port, sizeof port, path, sizeof path, &err);
    return 0;
}
