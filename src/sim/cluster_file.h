/* Load a cluster description from a YAML file (format in docs/formats.md):
 *
 *   groups:
 *     - count: 16          # nodes, required
 *       gpus_per_node: 8   # required
 *       gpu_type: H100     # default "gpu"
 *       domain_nodes: 1    # nodes per high-speed domain (default 1)
 *       rack_nodes: 4      # default 4
 *       power_nodes: 8     # default = rack_nodes
 *
 * Numbers are plain (unquoted) decimal integers. Unknown keys, wrong types,
 * duplicate keys, aliases, more than one document and YAML syntax errors are
 * rejected with "file:line: problem". The top-level keys `teams` and `prices`
 * are reserved and rejected ("not supported yet"). */
#ifndef TIDE_SIM_CLUSTER_FILE_H
#define TIDE_SIM_CLUSTER_FILE_H

#include <stddef.h>

#include "tide/cluster.h"
#include "tide/types.h"

/* Parse YAML from buf[0..len) (need not be NUL-terminated; name, NULL =
 * "<memory>", is used in messages). Returns a new cluster the caller owns
 * (tide_cluster_destroy), or NULL with err: EINVAL for bad content, ERANGE
 * for too many nodes or GPU types. */
tide_cluster_t *tide_cluster_file_load_mem(const char *buf, size_t len, const char *name,
                                           tide_error_t *err);

/* Same from a file. Errors as above, plus ENOENT (no such file) and EIO. */
tide_cluster_t *tide_cluster_file_load(const char *path, tide_error_t *err);

/* The value of a --cluster option: a path ending in ".yaml" or ".yml" is
 * loaded with tide_cluster_file_load, anything else is a compact spec for
 * tide_cluster_parse ("16x8:H100,8x4:A100"). Caller owns the result; NULL
 * with err on failure. */
tide_cluster_t *tide_cluster_file_from_arg(const char *arg, tide_error_t *err);

#endif
