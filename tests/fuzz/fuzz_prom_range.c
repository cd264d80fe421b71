/* libFuzzer target: the parser of a Prometheus /api/v1/query_range response
 * (the daemon's history at start) and the range URL made from an instant
 * query URL. An accepted matrix has at least one point, times strictly
 * increasing and every value finite and not negative (the engine never gets
 * garbage as history); an accepted URL is NUL-terminated inside its buffer. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/get.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tide_error_t err;
    double *ts = NULL, *v = NULL;
    size_t n = 0;
    if (tide_prom_range_values((const char *)data, size, &ts, &v, &n, &err) == 0) {
        if (n == 0)
            abort();
        for (size_t i = 0; i < n; i++)
            if (!isfinite(v[i]) || v[i] < 0 || !isfinite(ts[i]) || (i > 0 && ts[i] <= ts[i - 1]))
                abort();
    } else if (ts || v) {
        abort();
    }
    free(ts);
    free(v);
    char url[512], out[600];
    size_t k = size < sizeof url - 1 ? size : sizeof url - 1;
    memcpy(url, data, k);
    url[k] = 0;
    if (tide_prom_range_url(url, 0, 3600, 60, out, sizeof out, &err) == 0 &&
        !memchr(out, 0, sizeof out))
        abort();
    return 0;
}
