/* libFuzzer target: request-log readers (first byte even: Azure CSV, odd:
 * Mooncake JSONL; second byte: window), binning and fitting. Whatever is
 * written must be read back by tide's services.csv and demand.csv readers. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/workload_io.h"
#include "trace/trace.h"

#define MAX_ROWS 2000 /* write and read back only moderate outputs (speed) */

static void roundtrip(const tide_trace_demand_t *d, const tide_trace_fit_t *fit)
{
    char *sb = NULL, *db = NULL;
    size_t sl = 0, dl = 0;
    tide_trace_out_t out = {d, fit};
    FILE *f = open_memstream(&sb, &sl);
    if (!f || tide_trace_services_write(f, &out) != 0)
        abort();
    fclose(f);
    f = open_memstream(&db, &dl);
    if (!f || tide_trace_demand_write(f, &out) != 0)
        abort();
    fclose(f);
    tide_error_t err;
    tide_services_t *s = tide_services_read_mem(sb, sl, "services.csv", NULL, &err);
    if (!s) {
        fprintf(stderr, "services.csv unreadable: %s\n%s\n", err.msg, sb);
        abort();
    }
    tide_demand_t *dm = tide_demand_read_mem(db, dl, "demand.csv", s, NULL, &err);
    if (!dm) {
        fprintf(stderr, "demand.csv unreadable: %s\n", err.msg);
        abort();
    }
    tide_demand_free(dm);
    tide_services_free(s);
    free(sb);
    free(db);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    int moon = data[0] & 1;
    double window = 1 + data[1] * 7;
    const char *buf = (const char *)data + 2;
    size_t len = size - 2;
    for (int skip = 0; skip <= 1; skip++) {
        tide_trace_reqs_t r;
        tide_trace_reqs_init(&r);
        tide_error_t err;
        int rc = moon ? tide_trace_mooncake_read_mem(&r, buf, len, "fuzz.jsonl", skip, &err)
                      : tide_trace_azure_read_mem(&r, buf, len, "fuzz.csv", skip, &err);
        if (rc == 0 && r.n > 0) {
            double t0 = INFINITY;
            for (size_t i = 0; i < r.n; i++) {
                if (!isfinite(r.v[i].t) || r.v[i].in < 0 || r.v[i].out < 0)
                    abort();
                t0 = fmin(t0, r.v[i].t);
            }
            tide_trace_demand_t d;
            tide_trace_demand_init(&d);
            if (tide_trace_reqs_bin(&r, t0, window, 0.5, "svc", &d, &err) == 0) {
                if (d.v[0].requests < 1 || d.v[0].requests > (long long)r.n)
                    abort();
                tide_trace_fit_t fit;
                tide_trace_fit_default(&fit);
                if (skip) {
                    fit.peak_gpus = 40;
                    fit.duration_s = 3 * 3600;
                    fit.shift_h = -2;
                }
                tide_trace_fit_result_t res;
                if (tide_trace_fit_apply(&d, &fit, &res, &err) == 0) {
                    if (skip && res.peak_need_gpus != 40) {
                        fprintf(stderr, "peak need %g, not 40\n", res.peak_need_gpus);
                        abort();
                    }
                    if (d.v[0].n <= MAX_ROWS)
                        roundtrip(&d, &fit);
                }
            }
            tide_trace_demand_free(&d);
        }
        tide_trace_reqs_free(&r);
    }
    return 0;
}
