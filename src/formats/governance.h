/* tide governance: teams (fair-share weight, quota, borrowing and lending
 * limits), prices per GPU type and cost category, and fair-share settings, as
 * read from the governance section of a cluster YAML file
 * (tide_cluster_file_load_ex, docs/governance.md), and applied to an engine.
 *
 * Cost model: every GPU-second the engine accounts falls in exactly one cost
 * category (tide_cost_category):
 *
 *   reserved  idle GPUs of the Tier A reserve
 *   serving   inference replicas, serving or warming (any tier)
 *   training  training GPUs not on a lease (tier D: training, checkpointing,
 *             restoring)
 *   lent      training GPUs held under a lease (tier C), same states
 *   lost      training GPU-seconds thrown away (preemption, failure): charged
 *             to the policy, not to the victim team
 *   idle      every other idle GPU (tiers B and D)
 *
 * Prices are $ per GPU-hour per (GPU type, category); 0 where none is given. */
#ifndef TIDE_SIM_GOVERNANCE_H
#define TIDE_SIM_GOVERNANCE_H

#include <stddef.h>

#include "tide/cluster.h"
#include "tide/engine.h"
#include "tide/types.h"

#define TIDE_GOV_MAX_TEAMS 4096 /* teams in one file */

/* Cost categories. */
enum {
    TIDE_COST_RESERVED = 0,
    TIDE_COST_SERVING,
    TIDE_COST_TRAINING,
    TIDE_COST_LENT,
    TIDE_COST_LOST,
    TIDE_COST_IDLE,
    TIDE_COST_COUNT
};

/* Who holds GPU-seconds: a team's training jobs, a service's replicas, or
 * nobody (idle). */
/* (foreign: GPUs that jobs tide does not manage hold; no price) */
enum { TIDE_OWNER_TEAM = 0, TIDE_OWNER_SERVICE, TIDE_OWNER_IDLE, TIDE_OWNER_FOREIGN, TIDE_OWNER_COUNT };

/* "reserved", "serving", ... ("unknown" out of range); index of a name or -1. */
const char *tide_cost_name(int cat);
int tide_cost_find(const char *name);

/* "team", "service", "idle"; index of a name or -1. */
const char *tide_owner_kind_name(int kind);
int tide_owner_kind_find(const char *name);

/* Category of GPU-seconds held by `kind` in tide_state_t `state` on tier
 * `tier` (see the table above). Returns -1 for a combination the engine never
 * produces (e.g. an idle owner in state training). */
int tide_cost_category(int kind, int state, int tier);

#define TIDE_GOV_MAX_QOS 32 /* entries of a cluster file's qos: section */

typedef struct tide_governance {
    /* teams, in file order; names owned (free with tide_governance_free).
     * quota[] is indexed by the cluster's GPU type index (-1 = no quota of
     * that type); borrow_limit / lend_cap -1 = unlimited. */
    tide_team_spec_t *teams;
    int *team_lines;                 /* line of each team in the file (0 = unknown) */
    size_t n_teams;
    /* the cluster's GPU types, by index (names as in the cluster) */
    int n_types;
    char type_names[TIDE_MAX_GPU_TYPES][TIDE_MAX_TYPE_NAME + 1];
    /* $ per GPU-hour by [type][category] (0 = free / not given) */
    int has_prices;                  /* a prices section was given */
    double price[TIDE_MAX_GPU_TYPES][TIDE_COST_COUNT];
    /* fair share: -1 = not given (keep the config's), 0 = off (FIFO), 1 = on */
    int fairshare;
    tide_time_t fairshare_half_life_s; /* 0 = not given */
    /* Slurm QOS names and the priority (1..3) each maps to (`tide sbatch --qos`) */
    int n_qos;
    char qos_names[TIDE_GOV_MAX_QOS][64];
    int qos_prio[TIDE_GOV_MAX_QOS];
} tide_governance_t;

/* The priority (1..3) the qos: section maps QOS name to, or -1. */
int tide_governance_qos(const tide_governance_t *g, const char *name);

/* An empty governance for cluster c (NULL: no GPU types): no teams, no
 * prices, fair share not given. Never fails. */
void tide_governance_init(tide_governance_t *g, const tide_cluster_t *c);

/* Free what g owns and leave it empty (as tide_governance_init(g, NULL)).
 * NULL is a no-op. */
void tide_governance_free(tide_governance_t *g);

/* Add a team (name and spec copied). Checks: a non-empty name not given
 * before, weight > 0 and finite, quota >= -1, limits >= -1. Returns the team's
 * index or -1 with err (EINVAL naming the team; ERANGE beyond
 * TIDE_GOV_MAX_TEAMS). `line` is remembered for messages (0 = unknown). */
int tide_governance_add_team(tide_governance_t *g, const tide_team_spec_t *t, int line,
                             tide_error_t *err);

/* Index of a team by name, or -1. */
int tide_governance_team_find(const tide_governance_t *g, const char *name);

/* Apply g. With cfg (may be NULL): the fair-share settings that were given
 * (cfg->fairshare, cfg->fairshare_half_life_s) - call this before
 * tide_engine_create. With e (may be NULL): tide_engine_set_team for every
 * team, in file order - call this after tide_engine_create, before the first
 * step. g NULL is a no-op. Returns 0, or -1 with err (the engine's EINVAL,
 * prefixed with the team's line when known). */
int tide_governance_apply(const tide_governance_t *g, tide_engine_t *e, tide_config_t *cfg,
                          tide_error_t *err);

/* $ per GPU-hour of category cat on GPU type `type` (0 when g is NULL, out of
 * range, or no price was given). */
double tide_governance_price(const tide_governance_t *g, int type, int cat);

/* Name of GPU type `type` ("type<k>" when g is NULL or does not know it);
 * buf holds at least TIDE_MAX_TYPE_NAME + 1 bytes. Returns the name. */
const char *tide_governance_type_name(const tide_governance_t *g, int type, char *buf,
                                      size_t n);

#endif
