/* tide: the cluster model (nodes, GPU types, high-speed domains, racks, power). */
#ifndef TIDE_CLUSTER_H
#define TIDE_CLUSTER_H

#include "tide/power.h"
#include "tide/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TIDE_MAX_GPU_TYPES 32      /* GPU types are a bitmask in specs */
#define TIDE_MAX_GPUS_PER_NODE 64
#define TIDE_MAX_NODES 65536       /* whole cluster */
#define TIDE_MAX_TYPE_NAME 31      /* longest GPU type name (bytes) */

typedef struct tide_cluster tide_cluster_t;

/* A group of identical nodes. `domain_nodes` consecutive nodes form one
 * high-speed domain (1 = one node is one domain), `rack_nodes` form a rack,
 * `power_nodes` a power domain (0 = same as rack). */
typedef struct tide_node_group {
    int count;          /* nodes in the group, >= 1 */
    int gpus_per_node;  /* 1..TIDE_MAX_GPUS_PER_NODE */
    const char *gpu_type; /* e.g. "H100"; NULL or "" = "gpu" */
    int domain_nodes;   /* >= 1, must divide count */
    int rack_nodes;     /* >= 1 (0 = 4) */
    int power_nodes;    /* >= 1 (0 = rack_nodes) */
    double power_budget_w; /* budget of each of its power domains in watts (0 = none) */
    double uplink_gbps;    /* network uplink of each of its racks in GB/s (0 = none;
                              the simulator's storage model, docs/sim.md) */
} tide_node_group_t;

/* Create an empty cluster. Caller owns it; free with tide_cluster_destroy. */
tide_cluster_t *tide_cluster_create(void);
void tide_cluster_destroy(tide_cluster_t *c); /* NULL is a no-op */

/* Append a node group. Errors: EINVAL for bad counts, ERANGE for too many types. */
int tide_cluster_add_group(tide_cluster_t *c, const tide_node_group_t *g, tide_error_t *err);

/* Parse a compact spec "25x8", "25x8:H100", "16x8:H100,8x8:A100" (groups
 * separated by commas). Returns a new cluster (caller owns) or NULL with err.
 *
 * Grammar (spaces around a group are ignored):
 *   spec   := group ( ',' group )*
 *   group  := COUNT ('x'|'X') GPUS [ ':' TYPE ] [ '/' DOMAIN ]
 *   COUNT, GPUS, DOMAIN := decimal digits (no sign), >= 1
 *   TYPE   := 1..31 of [A-Za-z0-9._-]   (default "gpu")
 * COUNT nodes of GPUS GPUs each; DOMAIN consecutive nodes form one high-speed
 * domain (default 1, must divide COUNT). Racks are 4 nodes, power domains one
 * rack. Example: "16x8:H100,18x4:GB200/18".
 * Errors: EINVAL naming the group and the problem (garbage, zero count,
 * GPUS > TIDE_MAX_GPUS_PER_NODE, DOMAIN not dividing COUNT, ...), ERANGE for
 * more than TIDE_MAX_GPU_TYPES types or TIDE_MAX_NODES nodes. */
tide_cluster_t *tide_cluster_parse(const char *spec, tide_error_t *err);

/* Deep copy (caller owns) or NULL on ENOMEM. */
tide_cluster_t *tide_cluster_copy(const tide_cluster_t *c);

int tide_cluster_nodes(const tide_cluster_t *c);
int tide_cluster_gpus(const tide_cluster_t *c);
int tide_cluster_domains(const tide_cluster_t *c);
int tide_cluster_types(const tide_cluster_t *c);
const char *tide_cluster_type_name(const tide_cluster_t *c, int type);

/* Index of a GPU type by name, or -1. */
int tide_cluster_type_find(const tide_cluster_t *c, const char *name);

/* Turn "H100|A100" (names separated by '|' or ';') into a bitmask of known
 * types. "" or NULL means any type (returns 0 = any). Errors: ENOENT for an
 * unknown type name (message names it). */
int tide_cluster_type_mask(const tide_cluster_t *c, const char *names, uint32_t *mask,
                           tide_error_t *err);

/* Per-node facts (borrowed pointers stay valid while c lives). */
typedef struct tide_node_info {
    int gpus;
    int type;
    int domain;
    int rack;
    int power;
    int first_gpu; /* global index of the node's GPU 0 */
} tide_node_info_t;
int tide_cluster_node(const tide_cluster_t *c, int node, tide_node_info_t *out);

/* Largest number of GPUs in one high-speed domain (over all domains). */
int tide_cluster_max_domain_gpus(const tide_cluster_t *c);

/* Number of racks and of power domains (global, consecutive ids like domains). */
int tide_cluster_racks(const tide_cluster_t *c);
int tide_cluster_power_domains(const tide_cluster_t *c);

/* Uplink of a rack in GB/s, from its group's uplink_gbps (0 = none, or a bad
 * rack). Used by the simulator's bandwidth model only. */
double tide_cluster_rack_uplink(const tide_cluster_t *c, int rack);

/* Power. Every GPU type has a model (tide_power_model_default until set);
 * every power domain a budget in watts (0 = unlimited; from its group's
 * power_budget_w). set_power_model: EINVAL for a bad type or an inconsistent
 * model (message says why). set_power_budget: EINVAL for a bad domain or a
 * negative or non-finite budget. power_model returns a borrowed pointer (NULL
 * for a bad type). power_budget: the budget (0 for none or a bad domain).
 * power_nameplate: the sum of the TDPs of the domain's GPUs (-1 for all
 * domains together). scale_power_budgets: every domain's budget becomes
 * factor x its nameplate (factor > 0; EINVAL otherwise). */
int tide_cluster_set_power_model(tide_cluster_t *c, int type, const tide_power_model_t *m,
                                 tide_error_t *err);
const tide_power_model_t *tide_cluster_power_model(const tide_cluster_t *c, int type);
int tide_cluster_set_power_budget(tide_cluster_t *c, int domain, double watts, tide_error_t *err);
double tide_cluster_power_budget(const tide_cluster_t *c, int domain);
double tide_cluster_power_nameplate(const tide_cluster_t *c, int domain);
int tide_cluster_scale_power_budgets(tide_cluster_t *c, double factor, tide_error_t *err);
/* 1 if any power domain has a budget. */
int tide_cluster_power_budgeted(const tide_cluster_t *c);

/* Node groups as added (defaults filled in: domain_nodes, rack_nodes and
 * power_nodes >= 1, gpu_type never NULL). out->gpu_type is borrowed from c.
 * Returns 0, or -1 if i is out of range. */
int tide_cluster_groups(const tide_cluster_t *c);
int tide_cluster_group(const tide_cluster_t *c, int i, tide_node_group_t *out);

/* Write the compact spec of c ("16x8:H100,18x4:GB200/18") into buf (always
 * NUL-terminated when n > 0). Rack and power sizes are not part of the spec.
 * Returns the length the full spec needs (like snprintf). */
int tide_cluster_format(const tide_cluster_t *c, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
