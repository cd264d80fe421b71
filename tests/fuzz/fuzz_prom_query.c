/* libFuzzer target: the daemon's pulled-demand parsers: a Prometheus
 * /api/v1/query response body and a --demand-query URL. An accepted value is
 * finite and not negative (the daemon never feeds garbage or a NaN to the
 * engine). */
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
    char url[512];
    size_t n = size < sizeof url - 1 ? size : sizeof url - 1;
    memcpy(url, data, n);
    url[n] = 0;
    char host[256], port[16], path[512];
    (void)tide_http_url_parse(url, host, sizeof host, port, sizeof port, path, sizeof path, &err);
    return 0;
}
