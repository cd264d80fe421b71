/* Replay of a `tide sim` output folder for the dashboard (`tide ui DIR`,
 * docs/ui.md): the state of one policy's run at any time, rebuilt from
 * events.csv (and summary.json, timeline.csv, usage*.csv when present), in
 * the shapes of the daemon's GET routes so that the live page draws it
 * unchanged. The folder records counts, not GPU ids: the replay places
 * replicas from the first GPU up and jobs from the last GPU down, keeping a
 * holder's GPUs while it holds them. */
#ifndef TIDE_REPORT_REPLAY_H
#define TIDE_REPORT_REPLAY_H

#include <jansson.h>

#include "tide/types.h"

typedef struct tide_replay tide_replay_t;

/* Open the run in dir for `policy` (NULL: the first in summary.json).
 * jobs_csv (may be NULL) is the workload's jobs.csv: the team, priority and
 * gang of each job (without it teams show as "?" and priorities as 2).
 * cluster (may be NULL) is the cluster spec of the run (docs/sim.md
 * --cluster; default: summary.json's cluster_gpus in nodes of 8). Errors:
 * ENOENT (no summary.json / events.csv, unknown policy), EINVAL (malformed
 * files, a cluster spec of another size). */
tide_replay_t *tide_replay_open(const char *dir, const char *policy, const char *jobs_csv,
                                const char *cluster, tide_error_t *err);
void tide_replay_free(tide_replay_t *r); /* NULL is a no-op */

/* The run's end (summary.json horizon_s) and the policy replayed (borrowed). */
tide_time_t tide_replay_end(const tide_replay_t *r);
const char *tide_replay_policy(const tide_replay_t *r);

/* One view at time t (clamped to [0, end]), a new JSON value:
 *  "cluster"  like GET /v1/cluster, plus "replay": {start_s, end_s, step_s, policy, policies}
 *  "nodes"    like GET /v1/nodes (per-GPU state, team, service, Tier A, lease deadline)
 *  "services" like GET /v1/services; first an aggregate "all services" row with
 *             demand and ready capacity from timeline.csv (the folder has no
 *             per-service demand), then one row per service with its replicas
 *  "leases"   like GET /v1/leases?active=1
 *  "jobs"     like GET /v1/jobs?state=S (arg: queued, running, reclaiming, or NULL
 *             for all) with reason, position and expected_start_s (when the run
 *             did start it) for queued jobs and expected_end_s (when the run
 *             ended this stint) for running ones
 *  "job"      like GET /v1/jobs/{id} (arg: the id); NULL when unknown
 *  "usage"    like GET /v1/usage?by=team (GPU-hours so far)
 *  "events"   {"events": [...]}: the last 300 rows up to t, newest first, as
 *             /v1/stream gives them
 *  "timeline" {"t": [...], "demand": [...], "ready": [...]} for the whole run
 * NULL for an unknown view. */
json_t *tide_replay_view(tide_replay_t *r, const char *view, const char *arg, tide_time_t t);

#endif
