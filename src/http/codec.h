/* tide http: JSON request bodies -> validated core specs. Every error is
 * EINVAL with a message that names the field ("gpus: expected a whole
 * number, got a string", "unknown field 'gpu'"). Pure (no I/O): the fuzz
 * target tests/fuzz/fuzz_http_body.c drives these directly. */
#ifndef TIDE_HTTP_CODEC_H
#define TIDE_HTTP_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "tide/cluster.h"
#include "tide/engine.h"
#include "tide/pipeline.h"
#include "tide/types.h"

#define TIDE_JSON_MAX_ID 200     /* job ids and service names, bytes */
#define TIDE_JSON_MAX_TEAM 127   /* team names, bytes */
#define TIDE_JSON_MAX_COMMAND 65536
#define TIDE_JSON_DEFAULT_PRIORITY 2

/* Parse body[0..len) as one JSON object (duplicate keys, NUL in strings and
 * trailing garbage rejected). Returns a new reference or NULL with err. */
json_t *tide_json_parse_object(const char *body, size_t len, tide_error_t *err);

/* Fail with "unknown field 'x' (expected a, b, ...)" when obj has a key not
 * in the NULL-terminated list. */
int tide_json_only(const json_t *obj, const char *const *allowed, tide_error_t *err);

/* A job submission (POST /v1/jobs): the jobs.csv fields plus command and env.
 * spec strings point into the request (id NULL when absent: the daemon makes
 * one; team NULL when absent: the token's team). Defaults as in jobs.csv;
 * priority defaults to 2; submit_s is accepted and ignored. */
typedef struct tide_job_request {
    tide_job_spec_t spec;
    char *id, *team;         /* owned, NULL when absent */
    char *command;           /* owned, NULL when absent */
    char *env;               /* owned compact JSON object text, NULL when absent */
} tide_job_request_t;

/* Parse and validate (types, ranges, gang_gpus divides gpus, dp_min, GPU type
 * names against cluster c - may be NULL: then gpu_types must be absent or
 * "any"). Does not check that the gang fits the cluster (tide_job_spec_fits,
 * include/tide/engine.h).
 * On success the caller frees out with tide_job_request_free. */
int tide_json_job_request(const char *body, size_t len, const tide_cluster_t *c,
                          tide_job_request_t *out, tide_error_t *err);
void tide_job_request_free(tide_job_request_t *r); /* NULL ok; safe twice */

/* A service definition (POST /v1/services): the services.csv fields
 * ("service" or "name" for the name). name points into out (owned). Checks as
 * services.csv plus: the replica fits one high-speed domain of c. */
typedef struct tide_service_request {
    tide_service_spec_t spec;
    char *name;
} tide_service_request_t;
int tide_json_service_request(const char *body, size_t len, const tide_cluster_t *c,
                              tide_service_request_t *out, tide_error_t *err);
void tide_service_request_free(tide_service_request_t *r);

/* PATCH /v1/services/{name}: min_replicas and/or max_replicas (at least one).
 * *has_min / *has_max say which were given. */
int tide_json_service_patch(const char *body, size_t len, int *min_replicas, int *has_min,
                            int *max_replicas, int *has_max, tide_error_t *err);

/* POST /v1/services/{name}/demand: {"rps": x}, x finite and >= 0. */
int tide_json_demand(const char *body, size_t len, double *rps, tide_error_t *err);

/* POST /v1/jobs/{id}/checkpoints: {"step", "bytes", "shards", "committed",
 * "progress_s"}, all optional (committed defaults to false); absent numbers
 * are -1. */
typedef struct tide_ckpt_request {
    int64_t step, bytes, shards;
    int committed;
    double progress_s;
} tide_ckpt_request_t;
int tide_json_ckpt(const char *body, size_t len, tide_ckpt_request_t *out, tide_error_t *err);

/* POST /v1/nodes/{n}/state: {"up": true|false}. */
int tide_json_node_state(const char *body, size_t len, int *up, tide_error_t *err);

/* GPU types mask -> "H100|A100" ("" for any) into buf. */
const char *tide_json_types_str(const tide_cluster_t *c, uint32_t mask, char *buf, size_t n);

/* Team spec <-> JSON (for the daemon's event log): {"name", "weight",
 * "quota": [per type, -1 none], "borrow_limit", "lend_cap"}. from_json fills
 * t with name pointing into *name_out (owned by the caller). */
char *tide_json_team_to_string(const tide_team_spec_t *t, int n_types);
int tide_json_team_from_string(const char *s, tide_team_spec_t *t, char **name_out,
                               tide_error_t *err);

/* ---- the model pipeline (codec_models.c) */
/* POST /v1/models: {"name", "service", "eval_command", "eval_gpus",
 * "eval_limit_s", "gates": ["accuracy>=0.7", ...], "steps": [5,25,50,100]
 * or "5,25,50,100", "hold_s", "gate_interval_s", "slo_min", "error_max",
 * "latency_max_ms", "failure_limit", "webhook", "slo_query", "error_query",
 * "latency_query"} (the stored form adds "aliases").
 * Defaults: tide_rollout_plan_default, one GPU, one hour. spec points into
 * out; free with tide_model_request_free. */
/* A model's links, the driver's business (http:// URLs, NULL none): its
 * signed webhook, and Prometheus instant-query URLs the canary's SLO
 * attainment, error rate and latency are pulled from ("{version}" and
 * "{model}" in them are replaced by the canary's). */
enum {
    TIDE_LINK_WEBHOOK = 0,
    TIDE_LINK_SLO_QUERY,
    TIDE_LINK_ERROR_QUERY,
    TIDE_LINK_LATENCY_QUERY,
    TIDE_LINK_COUNT
};
/* The links' JSON names, indexed by TIDE_LINK_*. */
extern const char *const tide_model_link_names[TIDE_LINK_COUNT];
typedef struct tide_model_request {
    tide_model_spec_t spec;
    tide_gate_rule_t rules[TIDE_PIPE_MAX_RULES];
    char *name, *service, *eval_command;
    char *link[TIDE_LINK_COUNT]; /* TIDE_LINK_*, NULL none */
    int alias[TIDE_ALIAS_COUNT];
} tide_model_request_t;
int tide_json_model_request(const char *body, size_t len, tide_model_request_t *out,
                            tide_error_t *err);
void tide_model_request_free(tide_model_request_t *r);
/* A model as JSON (the request's fields plus "aliases"); caller decrefs. */
json_t *tide_json_model(const tide_model_info_t *m);

/* POST /v1/models/{m}/versions: {"manifest_uri" (required), "source_job",
 * "step", "digest", "size_bytes"}. */
typedef struct tide_version_request {
    tide_version_spec_t spec;
    char *source_job, *manifest_uri, *digest;
} tide_version_request_t;
int tide_json_version_request(const char *body, size_t len, tide_version_request_t *out,
                              tide_error_t *err);
void tide_version_request_free(tide_version_request_t *r);

/* POST /v1/models/{m}/canary: {"slo", "error_rate", "latency_ms"} (at least
 * one; absent: 1, 0, 0). */
int tide_json_canary(const char *body, size_t len, double *slo, double *error_rate,
                     double *latency_ms, tide_error_t *err);

/* ---- the RL trajectory ledger (POST /v1/rl/...) */
#define TIDE_JSON_MAX_TRAJ_BATCH 4096 /* trajectories in one push */

/* POST /v1/rl/{job}: {"max_staleness": n >= 0, "batch_size": n >= 1}, both
 * required. */
int tide_json_rl_run(const char *body, size_t len, int64_t *max_staleness, int64_t *batch_size,
                     tide_error_t *err);
/* POST /v1/rl/{job}/step: {"step": k >= 1}. */
int tide_json_rl_step(const char *body, size_t len, int64_t *step, tide_error_t *err);
/* The same with the trainer's measures (docs/api.md): "wait_s" and
 * "compute_s" (seconds >= 0 of the step just finished; both or neither) and
 * "rollout_busy" (0..1, optional: the busy share of the rollout slots).
 * Absent measures read back as -1. */
typedef struct tide_rl_step_report {
    int64_t step;
    double wait_s, compute_s, rollout_busy;
} tide_rl_step_report_t;
int tide_json_rl_step_report(const char *body, size_t len, tide_rl_step_report_t *r,
                             tide_error_t *err);

/* One pushed trajectory: id and version; payload: the whole object as
 * compact JSON (its other fields are the caller's, kept as given). */
typedef struct tide_rl_traj_request {
    char *id;
    int64_t policy_version;
    char *payload;
} tide_rl_traj_request_t;
typedef struct tide_rl_push_request {
    tide_rl_traj_request_t *v; /* owned */
    size_t n;
    int batch;                 /* the {"trajectories": [...]} form */
} tide_rl_push_request_t;
/* POST /v1/rl/{job}/trajectories: one trajectory object
 * {"trajectory_id": non-empty string of at most TIDE_JSON_MAX_ID bytes
 * without control characters, "policy_version": n >= 0, anything else}, or
 * {"trajectories": [1..TIDE_JSON_MAX_TRAJ_BATCH such objects]}. Free out
 * with tide_rl_push_request_free (also after a failure: safe). */
int tide_json_rl_push(const char *body, size_t len, tide_rl_push_request_t *out,
                      tide_error_t *err);
void tide_rl_push_request_free(tide_rl_push_request_t *r); /* NULL ok; safe twice */

#endif
