/* `tide review` (cmd_review.c, review_side.c): private to the CLI. */
#ifndef TIDE_CLI_REVIEW_H
#define TIDE_CLI_REVIEW_H

#include "cli/config_file.h"
#include "formats/governance.h"
#include "formats/workload_io.h"
#include "sim/inject.h"
#include "sim/review.h"
#include "sim/sim.h"
#include "sim/sweep.h"

/* The workload both sides replay (paths borrowed). */
typedef struct review_workload {
    const char *cluster;   /* default cluster spec (generated workload), NULL = none */
    const char *services;  /* default services.csv, NULL = none */
    const char *demand, *jobs;
    tide_time_t horizon_s; /* 0 = auto */
    const tide_inject_t *inject;
    uint64_t seed;
} review_workload_t;

/* One configuration file and what it gives the replay. */
typedef struct review_side {
    const char *path;
    tide_cfg_items_t items;            /* the values below point into it */
    const char *cluster, *cluster_file, *services, *policy;
    long long reserve, split_i, split_t; /* -1 = not given */
    int64_t lead_extra, lease_max, control_period, hold; /* 0 = not given */
    tide_cluster_t *cl;
    tide_governance_t gov;
    tide_services_t *svcs;
    tide_demand_t *dem;
    tide_jobs_t *jobs;
    tide_sim_opts_t o;
    tide_sweep_grid_t head_grid, front_grid;
    tide_sweep_result_t head, front;   /* the configuration as written; the front's grid */
    tide_review_outcome_t out;
} review_side_t;

/* Read path (tide serve's keys; the daemon's own are ignored). 0 or -1
 * with err (EINVAL naming path:line, ENOENT). */
int review_side_read(review_side_t *s, const char *path, tide_error_t *err);
/* Load the cluster, services and workload and set up s->o. 0 or -1. */
int review_side_load(review_side_t *s, const review_workload_t *w, tide_error_t *err);
/* Replay the configuration (dir/config) and the front's grid (dir/front). */
int review_side_run(review_side_t *s, const char *dir, const char *front, int threads,
                    tide_error_t *err);
void review_side_free(review_side_t *s);

#endif
