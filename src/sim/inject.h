/* tide simulator: fault injection (`tide sim --inject LIST`, docs/sim.md
 * "Fault injection"). This module parses the fault list and expands it into a
 * time-ordered schedule of firings; the driver (sim.c) enacts them against the
 * engine and the simulated world. Pure: no I/O, no clock, no globals.
 *
 * Grammar (items separated by commas; --inject may be repeated):
 *
 *   burst:[SERVICE:]Fx@T+D     demand of SERVICE (default every service) x F
 *                              from T for D (F > 0, e.g. 2x or 0.5x)
 *   node-fail:N@T[+D]          N nodes (chosen from the seed among the nodes
 *                              that are up) fail at T, recover after D if given
 *   rank-fail:JOB@T            training job JOB loses a rank at T
 *   rank-fail-rate:R/day       Poisson rank failures, R per day (or R/h) over
 *                              the running jobs
 *   rack-fail:R@T[+D]          every node of rack R fails at T (recovers after D);
 *                              R = busiest: the rack holding the most replicas at T
 *   power-fail:P@T[+D]         the same for power domain P (or busiest)
 *   partition:NODES@T+D        NODES (like 3, 4-7 or 1|5|9) are unreachable from
 *                              T for D: what runs there goes on; tide hears nothing
 *   ctl-down@T+D               tide itself is down from T for D
 *   storage:G                  shared checkpoint / weight-load bandwidth, G GB/s
 *                              (an optional unit: 20, 20GBps, 20GB/s)
 *
 * T and D are durations as in --horizon: 90, 90s, 15m, 36h, 1.5d, 2w.
 * SERVICE and JOB are everything between the first ':' and the factor / the
 * last '@'; they cannot contain commas. */
#ifndef TIDE_SIM_INJECT_H
#define TIDE_SIM_INJECT_H

#include <stddef.h>
#include <stdint.h>

#include "tide/engine.h"
#include "tide/types.h"

#define TIDE_INJECT_MAX_ITEMS 4096        /* faults per run */
#define TIDE_INJECT_MAX_RATE_PER_DAY 10000.0
#define TIDE_INJECT_MAX_FACTOR 1000.0
#define TIDE_INJECT_MAX_GBPS 1.0e9

typedef enum tide_fault_kind {
    TIDE_FAULT_BURST = 0,
    TIDE_FAULT_NODE_FAIL,
    TIDE_FAULT_RANK_FAIL,
    TIDE_FAULT_RANK_FAIL_RATE,
    TIDE_FAULT_CTL_DOWN,
    TIDE_FAULT_STORAGE,
    TIDE_FAULT_RACK_FAIL,
    TIDE_FAULT_POWER_FAIL,
    TIDE_FAULT_PARTITION,
    TIDE_FAULT_KIND_COUNT
} tide_fault_kind_t;

/* One parsed item. */
typedef struct tide_fault {
    int kind;         /* tide_fault_kind_t */
    char *text;       /* the item as written (owned), for messages */
    char *target;     /* BURST: service name or NULL (every service);
                         RANK_FAIL: job id (owned) */
    double factor;    /* BURST: demand multiplier */
    int count;        /* NODE_FAIL: nodes */
    int domain;       /* RACK_FAIL, POWER_FAIL: rack / power domain, -1 = busiest */
    int *nodes;       /* PARTITION: node indices (owned), n_nodes of them */
    int n_nodes;
    double per_day;   /* RANK_FAIL_RATE: failures per day */
    double gbps;      /* STORAGE: GB/s */
    tide_time_t at;   /* BURST, NODE_FAIL, RANK_FAIL, CTL_DOWN: start */
    tide_time_t dur;  /* BURST, CTL_DOWN, PARTITION: > 0; NODE_FAIL, RACK_FAIL,
                         POWER_FAIL: 0 = never recovers */
} tide_fault_t;

typedef struct tide_inject {
    tide_fault_t *v;
    size_t n, cap;
} tide_inject_t;

/* An empty list (equivalent to zero-initialising). */
void tide_inject_init(tide_inject_t *inj);
void tide_inject_free(tide_inject_t *inj); /* NULL is a no-op; leaves it empty */

/* Parse a comma-separated LIST and append its items to inj (call again for a
 * repeated --inject). Checks every item on its own and against the items
 * already held: storage given twice, overlapping ctl-down windows.
 * Returns 0, or -1 with err (EINVAL) whose message names the item:
 * "'burst:2@x': bad time 'x' (like 90s, 15m, 36h)". On error inj is left as
 * it was before the call. */
int tide_inject_parse(tide_inject_t *inj, const char *list, tide_error_t *err);

/* Check the items against the workload: burst services and rank-fail jobs
 * must exist, node-fail counts must not exceed the cluster's nodes. Any
 * argument may be NULL / 0 when there is nothing to check against. Returns 0
 * or -1 with err (EINVAL): "--inject: 'rank-fail:x@1h': unknown job 'x'". */
int tide_inject_check(const tide_inject_t *inj, const tide_service_spec_t *svcs, size_t n_svcs,
                      const tide_job_spec_t *jobs, size_t n_jobs, int n_nodes,
                      tide_error_t *err);

/* Check failure-domain items against the cluster: rack, power domain and
 * node indices in range. Returns 0 or -1 with err (EINVAL) naming the item. */
int tide_inject_check_domains(const tide_inject_t *inj, int n_racks, int n_power, int n_nodes,
                              tide_error_t *err);

/* Shared storage bandwidth in GB/s, 0 when no storage item was given. */
double tide_inject_storage_gbps(const tide_inject_t *inj);

/* Total rank-failure rate of the rank-fail-rate items, per day. */
double tide_inject_rank_rate(const tide_inject_t *inj);

/* ------------------------------------------------------------- schedule */

/* What happens at one instant. At equal times the order is the enum order
 * (ends before starts), then item order. */
typedef enum tide_fire_kind {
    TIDE_FIRE_BURST_END = 0,
    TIDE_FIRE_NODE_RECOVER,
    TIDE_FIRE_DOMAIN_RECOVER,  /* rack-fail / power-fail end */
    TIDE_FIRE_PARTITION_END,
    TIDE_FIRE_CTL_UP,
    TIDE_FIRE_CTL_DOWN,
    TIDE_FIRE_BURST_START,
    TIDE_FIRE_NODE_FAIL,
    TIDE_FIRE_DOMAIN_FAIL,
    TIDE_FIRE_PARTITION_START,
    TIDE_FIRE_RANK_FAIL,
    TIDE_FIRE_KIND_COUNT
} tide_fire_kind_t;

typedef struct tide_fire {
    tide_time_t t;
    int kind;        /* tide_fire_kind_t */
    int fault;       /* index into inj->v */
    double u;        /* RANK_FAIL from a rate: uniform [0,1) draw choosing the
                        victim; -1 for an explicit rank-fail:JOB */
    uint64_t draw;   /* NODE_FAIL: seed for choosing the nodes */
} tide_fire_t;

typedef struct tide_schedule {
    tide_fire_t *v;
    size_t n, cap;
} tide_schedule_t;

/* Expand inj into firings at times in [0, horizon] (rank-fail-rate arrivals in
 * [0, horizon), ends after the horizon are dropped), sorted by (time, kind,
 * item, arrival). Deterministic: a function of (inj, horizon, seed) only.
 * Rate arrivals are whole seconds (a Poisson process with exponential gaps,
 * floored). out (zeroed, or a schedule from an earlier call) is overwritten;
 * free it with tide_schedule_free. */
void tide_inject_schedule(const tide_inject_t *inj, tide_time_t horizon, uint64_t seed,
                          tide_schedule_t *out);
void tide_schedule_free(tide_schedule_t *s); /* NULL is a no-op */

/* Names for events.csv and summary.json (static strings). */
const char *tide_fault_kind_name(int kind);

/* Deterministic random numbers (splitmix64): next 64-bit value of *state, and
 * a uniform double in [0, 1). */
uint64_t tide_inject_rand(uint64_t *state);
double tide_inject_uniform(uint64_t *state);

#endif
