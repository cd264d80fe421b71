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
 *   teams:                 # optional governance section (docs/governance.md)
 *     - name: research
 *       weight: 2            # fair-share weight, > 0 (default 1)
 *       quota: 32            # guaranteed training GPUs: a count (single-type
 *                            # cluster) or a map {H100: 32, A100: 8}
 *       borrow_limit: 64     # GPUs beyond the quota it may borrow (default unlimited)
 *       lend_cap: 16         # GPUs of its unused quota others may borrow (default unlimited)
 *   prices:                  # $ per GPU-hour per GPU type name or `default`
 *     H100: {reserved: 2.0, serving: 2.5, training: 2.0, lent: 1.2, lost: 2.0, idle: 0.5}
 *   fairshare:
 *     enabled: true
 *     half_life: 24h         # tide_parse_duration syntax
 *
 * Counts are plain (unquoted) decimal integers; weights and prices plain
 * decimal numbers (no hex) up to TIDE_CF_MAX_REAL. Unknown keys, wrong types,
 * duplicate keys, aliases, more than one document and YAML syntax errors are
 * rejected with "file:line: problem"; so are governance mistakes (weight <= 0,
 * a negative limit, a quota or price for a GPU type the cluster lacks, quotas
 * of a type adding up to more GPUs than the cluster has, a negative price).
 * The functions without _ex validate the governance section and discard it. */
#ifndef TIDE_SIM_CLUSTER_FILE_H
#define TIDE_SIM_CLUSTER_FILE_H

#include <stddef.h>

#include "formats/governance.h"
#include "tide/cluster.h"
#include "tide/types.h"

/* The largest weight or price a cluster file may give (larger: refused). */
#define TIDE_CF_MAX_REAL 1e6

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

/* The same three with the governance section: on success *gov (may be NULL)
 * is filled (tide_governance_init'ed for the cluster, then teams with quotas
 * resolved to GPU type indices, prices per type and category - a `default`
 * entry supplies the categories a type's own entry leaves out -, fair-share
 * settings) and the caller frees it with tide_governance_free; on failure
 * *gov is untouched. A compact spec in from_arg_ex gives an empty governance
 * for its cluster. */
tide_cluster_t *tide_cluster_file_load_mem_ex(const char *buf, size_t len, const char *name,
                                              tide_governance_t *gov, tide_error_t *err);
tide_cluster_t *tide_cluster_file_load_ex(const char *path, tide_governance_t *gov,
                                          tide_error_t *err);
tide_cluster_t *tide_cluster_file_from_arg_ex(const char *arg, tide_governance_t *gov,
                                              tide_error_t *err);

#endif
