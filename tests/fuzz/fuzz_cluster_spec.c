/* libFuzzer target: the compact cluster spec and GPU type masks. The input is
 * "SPEC\nTYPES": the spec, then a type list resolved against the result. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tide/cluster.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = 0;
    char *types = strchr(s, '\n');
    if (types)
        *types++ = 0;
    tide_error_t err;
    tide_cluster_t *c = tide_cluster_parse(s, &err);
    if (c) {
        int gpus = 0, dom = -1;
        for (int i = 0; i < tide_cluster_nodes(c); i++) {
            tide_node_info_t n;
            if (tide_cluster_node(c, i, &n) < 0 || n.first_gpu != gpus || n.domain < dom ||
                n.domain > dom + 1 || n.type < 0 || n.type >= tide_cluster_types(c))
                abort();
            gpus += n.gpus;
            dom = n.domain;
        }
        if (gpus != tide_cluster_gpus(c) || dom + 1 != tide_cluster_domains(c))
            abort();
        /* the formatted spec parses back to the same cluster */
        int need = tide_cluster_format(c, NULL, 0);
        char *f = malloc((size_t)need + 1);
        tide_cluster_format(c, f, (size_t)need + 1);
        tide_cluster_t *d = tide_cluster_parse(f, &err);
        if (!d || tide_cluster_gpus(d) != gpus || tide_cluster_domains(d) != tide_cluster_domains(c))
            abort();
        tide_cluster_destroy(d);
        free(f);
        uint32_t m;
        if (tide_cluster_type_mask(c, types, &m, &err) == 0 && tide_cluster_types(c) < 32 &&
            (m >> tide_cluster_types(c)) != 0)
            abort();
        tide_cluster_destroy(c);
    }
    free(s);
    return 0;
}
