/* libFuzzer target: the cluster YAML loader. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "formats/cluster_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tide_error_t err;
    tide_cluster_t *c = tide_cluster_file_load_mem((const char *)data, size, "fuzz.yaml", &err);
    if (!c)
        return 0;
    int gpus = 0;
    for (int i = 0; i < tide_cluster_nodes(c); i++) {
        tide_node_info_t n;
        if (tide_cluster_node(c, i, &n) < 0 || n.first_gpu != gpus)
            abort();
        gpus += n.gpus;
    }
    if (gpus != tide_cluster_gpus(c) || tide_cluster_nodes(c) < 1)
        abort();
    char buf[64];
    tide_cluster_format(c, buf, sizeof buf);
    tide_cluster_destroy(c);
    return 0;
}
