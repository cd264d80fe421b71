/* libFuzzer target: ServeGen tier reader (client files separated by NUL
 * bytes), gap filling and fitting. Whatever is written must be read back by
 * tide's services.csv and demand.csv readers, and scaling must hit the peak. */
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
    if (s->n != d->n || dm->n != d->n * d->v[0].n)
        abort();
    tide_demand_free(dm);
    tide_services_free(s);
    free(sb);
    free(db);
}

/* Windows finish would make (as it computes them): long series are left to
 * the unit tests, for fuzzing speed. */
static int64_t windows(const tide_trace_sg_t *sg)
{
    if (sg->n == 0)
        return 0;
    int64_t lo = sg->v[0].t, hi = lo, g = 0;
    for (size_t i = 0; i < sg->n; i++) {
        lo = sg->v[i].t < lo ? sg->v[i].t : lo;
        hi = sg->v[i].t > hi ? sg->v[i].t : hi;
    }
    for (size_t i = 0; i < sg->n; i++) {
        int64_t a = g, b = sg->v[i].t - lo;
        while (b) {
            int64_t t = a % b;
            a = b;
            b = t;
        }
        g = a;
    }
    return g ? (hi - lo) / g + 1 : 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int skip = 0; skip <= 1; skip++) {
        tide_trace_sg_t sg;
        tide_trace_sg_init(&sg);
        tide_error_t err;
        const char *p = (const char *)data, *end = p + size;
        int ok = 1;
        for (int files = 0; ok && p <= end && files < 4; files++) {
            const char *nul = memchr(p, '\0', (size_t)(end - p));
            size_t n = nul ? (size_t)(nul - p) : (size_t)(end - p);
            ok = tide_trace_servegen_add_mem(&sg, p, n, "chunk.csv", skip, &err) == 0;
            if (!nul)
                break;
            p = nul + 1;
        }
        tide_trace_demand_t d;
        tide_trace_demand_init(&d);
        if (ok && windows(&sg) <= 4 * MAX_ROWS &&
            tide_trace_servegen_finish(&sg, "tier", &d, &err) == 0) {
            for (size_t i = 0; i < d.v[0].n; i++)
                if (!(d.v[0].rps[i] > 0))
                    abort(); /* gaps are filled */
            for (int k = 0; k < 2; k++) {
                tide_trace_demand_t c;
                tide_trace_demand_init(&c);
                if (tide_trace_demand_add(&c, "tier", d.v[0].rps, d.v[0].n, d.step_s, 0, &err))
                    abort();
                tide_trace_fit_t fit;
                tide_trace_fit_default(&fit);
                if (k == 1) {
                    fit.peak_gpus = 64;
                    fit.min_replicas = 0;
                    fit.replica_rps = 3.3333;
                    fit.shift_h = 5;
                    fit.stretch = 0.5;
                    fit.duration_s = 86400;
                }
                tide_trace_fit_result_t r;
                if (tide_trace_fit_apply(&c, &fit, &r, &err) == 0) {
                    if (k == 1 && r.peak_need_gpus != 64) {
                        fprintf(stderr, "peak need %g, not 64\n", r.peak_need_gpus);
                        abort();
                    }
                    if (c.v[0].n <= MAX_ROWS)
                        roundtrip(&c, &fit);
                }
                tide_trace_demand_free(&c);
            }
        }
        tide_trace_demand_free(&d);
        tide_trace_sg_free(&sg);
    }
    return 0;
}
