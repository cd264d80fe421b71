/* libFuzzer target: services.csv then demand.csv. The input is split at its
 * first NUL byte: services before it, demand after it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/workload_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t n1 = nul ? (size_t)(nul - data) : size;
    const char *d2 = nul ? (const char *)nul + 1 : "";
    size_t n2 = nul ? size - n1 - 1 : 0;
    tide_error_t err;
    tide_cluster_t *c = tide_cluster_parse("2x8:H100,2x4:L40S", &err);
    if (!c)
        abort();
    for (int skip = 0; skip <= 1; skip++) {
        tide_read_opts_t o = {.cluster = skip ? c : NULL, .skip_bad = skip};
        tide_services_t *s = tide_services_read_mem((const char *)data, n1, "s.csv", &o, &err);
        if (!s)
            continue;
        for (size_t i = 0; i < s->n; i++)
            if (tide_services_find(s, s->v[i].name) != (int)i || s->v[i].gpus_per_replica < 1 ||
                !(s->v[i].replica_rps > 0) || s->v[i].warmup_s < 0)
                abort();
        tide_demand_t *d = tide_demand_read_mem(d2, n2, "d.csv", s, &o, &err);
        if (d) {
            for (size_t i = 0; i < d->n; i++) {
                const tide_demand_point_t *p = &d->v[i];
                if (p->service < 0 || (size_t)p->service >= s->n || !(p->rps >= 0) || p->t < 0)
                    abort();
                if (i && (p->t < d->v[i - 1].t ||
                          (p->t == d->v[i - 1].t && p->service < d->v[i - 1].service)))
                    abort();
            }
            tide_demand_free(d);
        }
        tide_services_free(s);
    }
    tide_cluster_destroy(c);
    return 0;
}
