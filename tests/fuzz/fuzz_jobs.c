/* libFuzzer target: jobs.csv reader (strict and skip_bad), against a cluster
 * with two GPU types. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "formats/workload_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tide_error_t err;
    tide_cluster_t *c = tide_cluster_parse("4x8:H100,2x8:A100", &err);
    if (!c)
        abort();
    for (int skip = 0; skip <= 1; skip++) {
        tide_read_opts_t o = {.cluster = skip ? c : NULL, .skip_bad = skip};
        tide_jobs_t *j = tide_jobs_read_mem((const char *)data, size, "fuzz.csv", &o, &err);
        if (!j)
            continue;
        for (size_t i = 0; i < j->n; i++) {
            const tide_job_spec_t *s = &j->v[i];
            if (s->gpus < 1 || s->gang_gpus < 1 || s->gpus % s->gang_gpus || s->dp_min < 1 ||
                s->dp_min > s->gpus / s->gang_gpus || s->priority < 1 || s->priority > 3 ||
                s->duration_s < 1 || s->submit_s < 0 || !s->id[0] || !s->team[0] ||
                (i && s->submit_s < j->v[i - 1].submit_s))
                abort();
        }
        tide_jobs_free(j);
    }
    tide_cluster_destroy(c);
    return 0;
}
