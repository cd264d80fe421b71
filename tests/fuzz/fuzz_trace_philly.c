/* libFuzzer target: Philly importer (philly.csv -> jobs.csv), strict and
 * skip_bad, with several windows and arrival scalings. Whatever it writes
 * must be read back by tide's own jobs.csv reader. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/workload_io.h"
#include "trace/trace.h"

static void roundtrip(const tide_trace_jobs_t *j)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f || tide_trace_jobs_write(f, j) != 0)
        abort();
    fclose(f);
    tide_error_t err;
    tide_jobs_t *r = tide_jobs_read_mem(buf, len, "jobs.csv", NULL, &err);
    if (!r) {
        fprintf(stderr, "tide cannot read what the importer wrote: %s\n%s\n", err.msg, buf);
        abort();
    }
    if (r->n != j->n)
        abort();
    for (size_t i = 0; i < r->n; i++) {
        const tide_job_spec_t *a = &r->v[i], *b = &j->v[i];
        if (a->submit_s != b->submit_s || a->gpus != b->gpus || a->gang_gpus != b->gang_gpus ||
            a->dp_min != b->dp_min || a->priority != b->priority || strcmp(a->team, b->team) ||
            a->duration_s != b->duration_s)
            abort();
    }
    tide_jobs_free(r);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int skip = 0; skip <= 1; skip++) {
        tide_trace_philly_t p;
        tide_trace_philly_init(&p);
        tide_error_t err;
        if (tide_trace_philly_read_mem(&p, (const char *)data, size, "fuzz.csv", skip, &err) ==
                0 &&
            p.n > 0) {
            tide_trace_philly_opts_t o[3];
            for (int k = 0; k < 3; k++)
                tide_trace_philly_opts_default(&o[k]);
            o[1].day_a = 0;
            o[1].day_b = 1;
            o[1].origin_window = 1;
            o[1].scale_arrivals = 2.5;
            o[1].seed = 3;
            o[2].scale_arrivals = 0.5;
            o[2].day_a = 1;
            o[2].day_b = 3;
            for (int k = 0; k < 3; k++) {
                tide_trace_jobs_t j;
                if (tide_trace_philly_convert(&p, &o[k], &j, &err) == 0) {
                    roundtrip(&j);
                    tide_trace_jobs_free(&j);
                }
            }
        }
        tide_trace_philly_free(&p);
    }
    return 0;
}
