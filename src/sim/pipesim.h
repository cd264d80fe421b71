/* The model pipeline in a replay (`tide sim --publish-every D`): a version
 * of one service's model published at a fixed period, evaluated by a P1 job,
 * released through the gated canary of include/tide/pipeline.h (the core the
 * daemon drives), every Kth version regressing at its canary. The driver
 * (sim.c) feeds the events it asks for to the engine's next step and calls it
 * after every step; the figures go to summary.json, the version rows to
 * events.csv (kind "version"). */
#ifndef TIDE_SIM_PIPESIM_H
#define TIDE_SIM_PIPESIM_H

#include <jansson.h>
#include <stdio.h>

#include "tide/engine.h"
#include "tide/types.h"

typedef struct tide_pipesim_opts {
    tide_time_t every_s;   /* a version every every_s of replay time (> 0) */
    tide_time_t first_s;   /* the first one (default: 6 h) */
    const char *service;   /* the service released to (NULL = the first one) */
    int regress;           /* every Kth version's canary misses its SLO (0 = none) */
    int eval_gpus;         /* the evaluation job's GPUs (0 = the service's per replica) */
    tide_time_t eval_s;    /* its run time (0 = 1 h) */
    tide_time_t hold_s;    /* each canary step's hold (0 = 30 min) */
    tide_time_t gate_s;    /* the SLO gates' interval (0 = 5 min) */
} tide_pipesim_opts_t;

typedef struct tide_pipesim tide_pipesim_t;

/* A pipeline for engine e (its services added), or NULL with err: EINVAL
 * (no such service, every_s <= 0). Free with tide_pipesim_destroy. */
tide_pipesim_t *tide_pipesim_create(const tide_pipesim_opts_t *o, tide_engine_t *e,
                                    tide_error_t *err);
void tide_pipesim_destroy(tide_pipesim_t *ps);

/* Events for the engine's step at t (a publication due, evaluation jobs, the
 * rollout's surge and retirements): appended to *v (grown; *n, *cap). */
void tide_pipesim_events(tide_pipesim_t *ps, tide_time_t t, tide_event_t **v, size_t *n,
                         size_t *cap);

/* After the engine's step at t with actions acts: labels, evaluations, the
 * canary's figures, the pipeline's step. Version rows go to evf (may be NULL)
 * as events.csv rows of policy. Returns 0, or -1 with err (ESTATE: the
 * rollout bound broke, when checking). */
int tide_pipesim_after(tide_pipesim_t *ps, tide_time_t t, const tide_actions_t *acts, FILE *evf,
                       const char *policy, tide_error_t *err);

/* When it next needs a step (TIDE_TIME_NEVER: nothing due); t when events wait. */
tide_time_t tide_pipesim_next(const tide_pipesim_t *ps, tide_time_t t);

/* summary.json's policies.<name>.pipeline (caller decrefs). */
json_t *tide_pipesim_json(const tide_pipesim_t *ps, tide_time_t end);

#endif
