/* Readers for tide's three workload inputs: services.csv, demand.csv and
 * jobs.csv (formats in docs/formats.md). Each has a from-memory variant (used
 * by the fuzz targets and tests) and a file variant.
 *
 * Common rules: a header row names the columns (any order, ASCII
 * case-insensitive); columns the reader does not know are ignored; an empty
 * field in an optional column takes the default; times and durations are
 * plain seconds (integers or decimals, rounded to whole seconds). Errors read
 * "file:line: column 'x': problem". By default the first bad row fails the
 * read; with opts->skip_bad such rows are skipped and counted instead (errors
 * in the CSV structure itself, a missing column or an unreadable file still
 * fail). */
#ifndef TIDE_SIM_WORKLOAD_IO_H
#define TIDE_SIM_WORKLOAD_IO_H

#include <stddef.h>

#include "tide/cluster.h"
#include "tide/engine.h"
#include "tide/rl.h"
#include "tide/types.h"
#include "util/util.h"

#define TIDE_IO_MAX_SECONDS 100000000000LL /* ~3000 years: larger times are rejected */
#define TIDE_IO_MAX_COUNT 1048576          /* GPUs, replicas: larger counts are rejected */
#define TIDE_IO_MAX_GB 1.0e9               /* checkpoint / weight sizes: larger are rejected */

/* Defaults of the optional size columns (used only by the simulator's shared
 * storage model, `--inject storage:G`): 16 GB per GPU. A checkpoint holds the
 * bf16 weights, fp32 master weights and Adam moments (~16 bytes per
 * parameter), about 16 GB for every GPU's share of a model; a serving
 * replica's bf16 weights are about 16 GB per GPU too (an 8B model on 1 GPU, a
 * 70B model on 8). */
#define TIDE_IO_CKPT_GB_PER_GPU 16.0
#define TIDE_IO_WEIGHTS_GB_PER_GPU 16.0

/* Options shared by the readers (NULL = all defaults). */
typedef struct tide_read_opts {
    const tide_cluster_t *cluster; /* resolves gpu_types ("H100|A100") into a
                                      mask; NULL: any names are accepted and the
                                      mask is 0 (any type) */
    int skip_bad;                  /* 1: skip invalid rows (counted) instead of failing */
} tide_read_opts_t;

/* struct tide_name_index is private to workload_io.c (name -> index lookup). */
struct tide_name_index;

/* ------------------------------------------------------------ services.csv */

/* Latency declarations of a service (optional services.csv columns of the
 * same names; 0 = the simulator's default, docs/formats.md and
 * world/latency.h): targets, mean request shape, per-replica service curves
 * (prefill tokens/s; decode tokens/s at saturation and the concurrency at
 * half of it) and the queue bound in seconds of ready capacity. */
typedef struct tide_io_latency {
    double ttft_target_s, tbt_target_s, prompt_tokens, output_tokens, prefill_tps, decode_tps,
        decode_knee, queue_max_s;
} tide_io_latency_t;

/* Inference services in file order. The name strings belong to the container. */
typedef struct tide_services {
    tide_service_spec_t *v;
    double *weights_gb;          /* parallel to v: weights loaded per replica (GB) */
    tide_io_latency_t *latency;  /* parallel to v: latency declarations (0 = default) */
    size_t n;
    size_t skipped;              /* rows skipped (skip_bad) */
    tide_error_t first_skip;     /* why the first skipped row was skipped */
    struct tide_name_index *idx; /* private */
} tide_services_t;

/* Read services.csv. Columns: service, gpus_per_replica, replica_rps,
 * min_replicas, warmup_s (required); max_replicas (0 = unlimited),
 * fixed_replicas (0), gpu_types ("" = any), weights_gb (GB of weights a
 * replica loads, TIDE_IO_WEIGHTS_GB_PER_GPU x gpus_per_replica), slo_target
 * (fraction of requests to serve, in (0, 1); "" = the engine's default), stage_s
 * (seconds of warmup_s that need no GPU, 0..warmup_s; "" = 0), and the
 * latency columns of tide_io_latency_t (numbers >= 0, "" = 0 = default) optional. Checks
 * gpus_per_replica >= 1, replica_rps > 0, min_replicas >= 0, warmup_s >= 0,
 * max_replicas 0 or >= min_replicas, unique non-empty names.
 * Returns a container the caller owns (free with tide_services_free; it may
 * hold 0 services), or NULL with err (EINVAL for bad content, ENOENT for an
 * unknown GPU type or a missing file, EIO for a read error). */
tide_services_t *tide_services_read_mem(const char *buf, size_t len, const char *name,
                                        const tide_read_opts_t *opts, tide_error_t *err);
tide_services_t *tide_services_read_file(const char *path, const tide_read_opts_t *opts,
                                         tide_error_t *err);
void tide_services_free(tide_services_t *s); /* NULL is a no-op */

/* Index of the service called name, or -1. */
int tide_services_find(const tide_services_t *s, const char *name);

/* A container holding copies of the n services v (names copied, weights the
 * default), to read demand files against services that came from elsewhere
 * than a services.csv (the daemon's database). Duplicate names: the first
 * wins in tide_services_find. Caller frees with tide_services_free. */
tide_services_t *tide_services_from_specs(const tide_service_spec_t *v, size_t n);

/* -------------------------------------------------------------- demand.csv */

/* From time t on, service `service` (index into the services container)
 * receives rps requests per second, until that service's next point. */
typedef struct tide_demand_point {
    tide_time_t t;
    int service;
    double rps;
} tide_demand_point_t;

typedef struct tide_demand {
    tide_demand_point_t *v; /* sorted by (t, service), stable */
    size_t n;
    size_t skipped;
    tide_error_t first_skip;
} tide_demand_t;

/* Read demand.csv (time_s, service, rps), resolving service names against
 * svcs (required). Checks: time_s >= 0 and non-decreasing per service, a known
 * service, rps >= 0 and finite. Returns a container the caller owns (free with
 * tide_demand_free), or NULL with err (EINVAL; ENOENT for an unknown service
 * or a missing file; EIO). */
tide_demand_t *tide_demand_read_mem(const char *buf, size_t len, const char *name,
                                    const tide_services_t *svcs, const tide_read_opts_t *opts,
                                    tide_error_t *err);
tide_demand_t *tide_demand_read_file(const char *path, const tide_services_t *svcs,
                                     const tide_read_opts_t *opts, tide_error_t *err);
void tide_demand_free(tide_demand_t *d); /* NULL is a no-op */

/* Demand history (docs/formats.md): a demand.csv whose latest time_s is
 * "now". Shift every point of d so that its latest time becomes `end` (the
 * engine time the run starts at); order is kept. Returns 0, or -1 with
 * EINVAL when d has no points. */
int tide_demand_history_align(tide_demand_t *d, tide_time_t end, tide_error_t *err);

/* ---------------------------------------------------------------- jobs.csv */

/* Training jobs sorted by submit_s (stable: file order among equal times).
 * The id and team strings belong to the container. Every optional field is
 * filled in (no zeros left for tide_job_spec_normalize to default, except
 * ckpt_s/restore_s written as 0 in the file). */
typedef struct tide_jobs {
    tide_job_spec_t *v;
    double *ckpt_gb;         /* parallel to v: GB written per checkpoint */
    size_t n;
    size_t skipped;
    tide_error_t first_skip;
    tide_strpool_t strs;     /* the ids and (one copy per team) team names of v */
} tide_jobs_t;

/* Read jobs.csv. Required: job_id, submit_s, team, priority (1..3 or P1..P3),
 * gpus, duration_s. Optional (default): gang_gpus (gpus if gpus <= 8, else
 * gcd(gpus, 8)), dp_min (gpus / gang_gpus: not elastic), ckpt_interval_s
 * (1800), ckpt_s (60), restore_s (120), gpu_types (any), ckpt_gb
 * (TIDE_IO_CKPT_GB_PER_GPU x gpus; >= 0, into ->ckpt_gb). Checks: gpus >= 1,
 * gang_gpus >= 1 divides gpus, 1 <= dp_min <= gpus / gang_gpus,
 * duration_s >= 1, ckpt_interval_s >= 1, times >= 0, unique non-empty job ids,
 * non-empty team. Returns a container the caller owns (free with
 * tide_jobs_free), or NULL with err (EINVAL; ENOENT for an unknown GPU type or
 * a missing file; EIO). */
tide_jobs_t *tide_jobs_read_mem(const char *buf, size_t len, const char *name,
                                const tide_read_opts_t *opts, tide_error_t *err);
tide_jobs_t *tide_jobs_read_file(const char *path, const tide_read_opts_t *opts,
                                 tide_error_t *err);
void tide_jobs_free(tide_jobs_t *j); /* NULL is a no-op */

/* ------------------------------------------------------------------ rl.csv */

/* Agentic RL jobs (docs/formats.md, docs/rl.md) in file order, normalized
 * (tide_rl_spec_normalize). The id and team strings belong to the container. */
typedef struct tide_rl_specs {
    tide_rl_spec_t *v;
    size_t n;
    size_t skipped;
    tide_error_t first_skip;
} tide_rl_specs_t;

/* Read rl.csv. Required: rl_id, submit_s, team, priority, duration_s,
 * trainer_gpus, step_s, batch, rollout_gpus, replica_tps, max_staleness,
 * min_replicas, max_replicas. Optional (default): trainer_gang_gpus
 * (min(trainer_gpus, 8)), replica_slots (16), len_sigma (0), sync_s (30),
 * drain_s (120), seed (1), weights_gb (16 x rollout_gpus). Checks as
 * tide_rl_spec_normalize, unique ids.
 * Returns a container the caller owns (free with tide_rl_specs_free), or
 * NULL with err (EINVAL, EEXIST for a duplicate id, ENOENT, EIO). */
tide_rl_specs_t *tide_rl_specs_read_mem(const char *buf, size_t len, const char *name,
                                        const tide_read_opts_t *opts, tide_error_t *err);
tide_rl_specs_t *tide_rl_specs_read_file(const char *path, const tide_read_opts_t *opts,
                                         tide_error_t *err);
void tide_rl_specs_free(tide_rl_specs_t *r); /* NULL is a no-op */

#endif
