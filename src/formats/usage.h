/* tide usage accounting over time: a writer the simulator calls at every
 * timeline boundary, and the readers behind `tide usage` (docs/governance.md).
 *
 * Files the writer puts in DIR (one row per policy and interval, policies one
 * after the other, like timeline.csv):
 *
 *   usage.csv           policy,time_s,owner,kind,class,state,tier,gpu_type,gpu_s,cost
 *                       GPU-seconds of interval [time_s, next sample) per owner
 *                       (kind team: a team's training jobs; service: a
 *                       service's replicas; idle: owner "-"; foreign: GPUs that
 *                       jobs tide does not manage held, owner "-", class none,
 *                       state foreign, no cost), class, state, tier
 *                       and GPU type; cost = gpu_s / 3600 x the price of its
 *                       category (governance.h). Only non-zero rows. Lost work
 *                       is booked when a job stops (as in timeline.csv), so a
 *                       team's `training` row of that interval may be negative;
 *                       sums over any range of whole intervals are exact.
 *   usage_teams.csv     policy,time_s,team,weight,quota_gpus,used_gpus,
 *                       borrowed_gpus,usage_gpu_s: each team's governance state
 *                       at the sample time (tide_engine_team_info).
 *   usage_services.csv  policy,service,gpus_per_replica,min_replicas,max_replicas
 *                       (once per policy).
 *
 * Idle GPU-seconds: per tier they are the engine's idle cells; per GPU type
 * they are the type's GPUs x elapsed time minus what teams and services held.
 * The split of one tier across types is exact for Tier A (the reserve's GPUs
 * of each type minus the replicas on it) and for single-type clusters; tiers
 * B and D of multi-type clusters (and Tier A when no type's reserve shows
 * idle time) are split in proportion to each type's remaining idle time
 * (both margins stay exact). */
#ifndef TIDE_SIM_USAGE_H
#define TIDE_SIM_USAGE_H

#include <stdio.h>

#include <jansson.h>

#include "formats/governance.h"
#include "tide/engine.h"
#include "tide/types.h"

#define TIDE_USAGE_CSV "usage.csv"
#define TIDE_USAGE_TEAMS_CSV "usage_teams.csv"
#define TIDE_USAGE_SERVICES_CSV "usage_services.csv"
#define TIDE_USAGE_LOST_OWNER "(policy: lost work)"

/* ---------------------------------------------------------------- writer */

typedef struct tide_usage tide_usage_t;

/* Create (truncate) DIR/usage.csv, DIR/usage_teams.csv and
 * DIR/usage_services.csv with their headers. g (may be NULL: no prices, GPU
 * types named "type<k>") is borrowed and must outlive the writer. Returns the
 * writer (caller owns; tide_usage_close) or NULL with err (EIO, EINVAL for a
 * NULL dir). The directory must exist. */
tide_usage_t *tide_usage_open(const char *dir, const tide_governance_t *g, tide_error_t *err);

/* Record engine e at time t (after the steps at t) for `policy`: write the
 * GPU-seconds accumulated since the previous sample of the same policy (the
 * engine's start for the first one) with time_s = that previous sample time,
 * and the teams' state at t. A policy's samples must come from one engine in
 * non-decreasing time; a different engine or an earlier time starts the
 * policy over from zero. Returns 0, or -1 after a write error (remembered:
 * tide_usage_close reports it). */
int tide_usage_sample(tide_usage_t *u, const char *policy, tide_time_t t,
                      const tide_engine_t *e);

/* One cumulative usage figure of an engine: GPU-seconds since its start of
 * one owner, class, state, tier and GPU type (the keys of usage.csv), and
 * their cost. */
typedef struct tide_usage_cell {
    int kind;            /* TIDE_OWNER_TEAM, _SERVICE, _IDLE or _FOREIGN */
    int index;           /* the team's or service's index in the engine, -1 for
                            idle and foreign */
    const char *owner;   /* team or service name, "-" for idle and foreign
                            (borrowed from e) */
    int cls, state, tier, type;
    double gpu_s;
    double cost;         /* gpu_s / 3600 x the price of its category */
} tide_usage_cell_t;
typedef void (*tide_usage_cell_fn)(void *ctx, const tide_usage_cell_t *c);

/* The sampler behind tide_usage_sample and the daemon's usage snapshots:
 * call fn for every cell of engine e, zeros included, in a fixed order
 * (teams by class, state, tier, type; services by state, tier, type; idle
 * by tier, type; foreign by tier, type: the type varies fastest). The cells
 * of one instant add up to the cluster's GPUs x the time since the start. g (may be NULL: no prices) gives
 * the prices. */
void tide_usage_cells(const tide_engine_t *e, const tide_governance_t *g, tide_usage_cell_fn fn,
                      void *ctx);

/* Flush and close the files, free u. Returns 0 or -1 with err (EIO) if any
 * write failed. NULL is a no-op (0). */
int tide_usage_close(tide_usage_t *u, tide_error_t *err);

/* ------------------------------------------------------------ aggregation */

/* Grouping keys of `tide usage --by`. */
enum {
    TIDE_UK_POLICY = 0,
    TIDE_UK_OWNER,     /* alias: team */
    TIDE_UK_KIND,
    TIDE_UK_CLASS,
    TIDE_UK_STATE,
    TIDE_UK_TIER,
    TIDE_UK_GPU_TYPE,  /* alias: type */
    TIDE_UK_CATEGORY,  /* cost category (reserved, serving, ...) */
    TIDE_UK_COUNT
};
const char *tide_usage_key_name(int k);

/* Parse a comma-separated key list ("team,class") into keys[] (at most
 * TIDE_UK_COUNT, no repeats). Returns the number of keys or -1 with err
 * (EINVAL naming the unknown or repeated key). */
int tide_usage_parse_by(const char *list, int *keys, tide_error_t *err);

/* What to aggregate. */
typedef struct tide_usage_query {
    const char *policy;     /* NULL = every policy */
    tide_time_t since_s;    /* > 0: only intervals starting in the last since_s
                               of the run; 0 = the whole run */
    int keys[TIDE_UK_COUNT];
    int n_keys;             /* 0 = one total row */
} tide_usage_query_t;

typedef struct tide_usage_row {
    const char *key[TIDE_UK_COUNT]; /* borrowed from the table; NULL if not grouped */
    double gpu_s, cost;
} tide_usage_row_t;

typedef struct tide_usage_table {
    int keys[TIDE_UK_COUNT];
    int n_keys;
    tide_usage_row_t *rows;   /* sorted by GPU-seconds (descending), then keys */
    size_t n;
    double gpu_s, cost;       /* totals */
    tide_time_t from_s, to_s; /* range: intervals starting in [from_s, to_s) */
    long long rows_read;      /* usage.csv rows inside the range */
    void *priv;               /* strings */
} tide_usage_table_t;

/* Sum DIR/usage.csv over the query. The run's end is summary.json's
 * horizon_s (when the file exists), else the last time_s plus the last
 * interval. Rows of state `lost` are grouped under owner
 * TIDE_USAGE_LOST_OWNER: lost work is charged to the policy, not the team.
 * Returns 0 or -1 with err (ENOENT: no usage.csv; EINVAL: a malformed row,
 * "usage.csv:12: column 'gpu_s': ...", or a --policy not in the file). */
int tide_usage_aggregate(const char *dir, const tide_usage_query_t *q, tide_usage_table_t *out,
                         tide_error_t *err);
void tide_usage_table_free(tide_usage_table_t *t); /* NULL ok */

/* Output formats. */
enum { TIDE_UFMT_TABLE = 0, TIDE_UFMT_CSV, TIDE_UFMT_JSON };
int tide_usage_format_find(const char *name); /* -1 if unknown */

/* Print t as an aligned table with a totals line, as CSV (key columns,
 * gpu_hours, cost; no totals) or as JSON ({from_s, to_s, keys, rows, total}).
 * Returns 0 or -1 (write error). */
int tide_usage_table_print(FILE *f, const tide_usage_table_t *t, int format);
json_t *tide_usage_table_json(const tide_usage_table_t *t);

/* ----------------------------------------------------------------- report */

typedef struct tide_usage_report_opts {
    tide_time_t since_s;     /* as in the query (0 = whole run) */
    double peak_quantile;    /* intervals with demand >= this quantile are the
                                peak (0.9: the top 10%) */
    double phase_cv;         /* daily GPU-hours CV above this = phase-like (0.5) */
} tide_usage_report_opts_t;

void tide_usage_report_opts_default(tide_usage_report_opts_t *o);

/* The governance report of one policy (NULL = each policy in the file, in
 * order) over the range: GPU-hours and cost by class; the team that consumed
 * most while inference demand was at its peak (timeline.csv); services'
 * replica-hours, floor and cost; phase-like training demand per team;
 * preemptions and lost work per team (summary.json and usage.csv); borrowing
 * per team (tier C GPU-hours, GPU-hours above quota from usage_teams.csv).
 * Returns {"policies": {name: {...}}} (caller owns) or NULL with err (as
 * tide_usage_aggregate; timeline.csv and summary.json are optional: the
 * sections that need them say "unavailable"). The keys: docs/governance.md. */
json_t *tide_usage_report(const char *dir, const char *policy,
                          const tide_usage_report_opts_t *o, tide_error_t *err);

/* Print a report from tide_usage_report as readable text. Returns 0 or -1. */
int tide_usage_report_print(FILE *f, const json_t *report);

#endif
