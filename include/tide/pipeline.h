/* tide: the model pipeline (registry -> evaluation -> canary -> serving ->
 * rollback). Pure like the engine: no I/O, no clock, no globals. A driver
 * registers versions, reports evaluation metrics and what it observes of a
 * service (its need, the replicas of each version, the canary's SLO), calls
 * tide_pipeline_step with the current time and enacts the actions returned.
 *
 * The rollout bound: while a version rolls out, a service holds at most its
 * need plus one rollout step of replicas, N + S(N), where N is the replicas
 * its own sizing keeps and S(N) = max_i (ceil(w_i N) - ceil(w_{i-1} N)) over
 * the plan's weights w (w_{-1} = 0). New-version replicas of step i are added
 * first; old ones are retired down to N - ceil(w_i N) only once they are
 * ready, and a rollback retires the canary before the old replicas come
 * back. tide_pipeline_check verifies it on the observed counts; the step
 * calls it when check_invariants is set (debug builds). */
#ifndef TIDE_PIPELINE_H
#define TIDE_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "tide/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* States of a version. */
typedef enum tide_ver_state {
    TIDE_VER_REGISTERED = 0, /* waiting for its evaluation */
    TIDE_VER_EVALUATING,     /* evaluation job running, or held (inconclusive) */
    TIDE_VER_REJECTED,       /* a gate rule failed, or the evaluation failed */
    TIDE_VER_CANARY,         /* rolling out */
    TIDE_VER_SERVING,        /* the service's version */
    TIDE_VER_RETIRED,        /* replaced by a newer serving version */
    TIDE_VER_ROLLED_BACK,    /* its canary failed (or was aborted) */
    TIDE_VER_COUNT
} tide_ver_state_t;
const char *tide_ver_state_name(int s); /* "registered", ...; "unknown" out of range */

/* Aliases of a model: version numbers, 0 = none (version 0 stands for the
 * replicas that ran before the model had any version). */
enum { TIDE_ALIAS_SERVING = 0, TIDE_ALIAS_CANDIDATE, TIDE_ALIAS_LAST_GOOD, TIDE_ALIAS_COUNT };
const char *tide_alias_name(int a); /* "serving", "candidate", "last-good" */

/* Gate outcome. */
enum { TIDE_GATE_PASS = 0, TIDE_GATE_FAIL, TIDE_GATE_INCONCLUSIVE, TIDE_GATE_COUNT };
const char *tide_gate_name(int g); /* "pass", "fail", "inconclusive" */

enum { TIDE_GATE_GE = 0, TIDE_GATE_LE };

#define TIDE_METRIC_NAME_MAX 48
#define TIDE_PIPE_MAX_RULES 8
#define TIDE_PIPE_MAX_METRICS 16
#define TIDE_ROLLOUT_MAX_STEPS 16

/* A gate rule: metric >= (GE) or <= (LE) threshold; with vs_serving the
 * threshold is added to the serving version's value of the same metric
 * (GE with threshold -0.01: at most 0.01 worse than what serves). A metric
 * not reported (or, vs_serving, not known for the serving version) makes the
 * rule inconclusive. */
typedef struct tide_gate_rule {
    char metric[TIDE_METRIC_NAME_MAX];
    int op;            /* TIDE_GATE_GE or TIDE_GATE_LE */
    double threshold;
    int vs_serving;
} tide_gate_rule_t;

/* One reported metric. */
typedef struct tide_metric {
    char name[TIDE_METRIC_NAME_MAX];
    double value;
} tide_metric_t;

/* Parse "metric>=0.7", "loss<=2", "accuracy>=serving-0.01" (vs_serving,
 * threshold -0.01) into out. Errors: EINVAL. */
int tide_gate_rule_parse(const char *s, tide_gate_rule_t *out, tide_error_t *err);
/* The inverse, into buf (n bytes). */
const char *tide_gate_rule_format(const tide_gate_rule_t *r, char *buf, size_t n);

/* Outcome of rules over the candidate's metrics and the serving version's
 * (serving may be NULL/0): fail if any rule fails, else inconclusive if any
 * is, else pass (no rules: pass). */
int tide_gate_eval(const tide_gate_rule_t *rules, size_t n_rules, const tide_metric_t *cand,
                   size_t n_cand, const tide_metric_t *serving, size_t n_serving);

/* A rollout plan. Weights are percents, strictly increasing, in (0, 100],
 * the last one 100. Each step is held hold_s once its replicas are ready;
 * every gate_interval_s the canary's observed SLO attainment, error rate
 * and latency are gated (a limit <= 0 is off); a check without data is
 * inconclusive and counts nothing; more than failure_limit failed checks in
 * one rollout roll it back. */
typedef struct tide_rollout_plan {
    int n_steps;
    double weights[TIDE_ROLLOUT_MAX_STEPS];
    tide_time_t hold_s;
    tide_time_t gate_interval_s;
    double slo_min;        /* attainment, in (0, 1]; 0 = off */
    double error_max;      /* error fraction; 0 = off */
    double latency_max_ms; /* 0 = off */
    int failure_limit;     /* >= 0 */
} tide_rollout_plan_t;

/* Defaults: 5, 25, 50, 100 %; hold 600 s; gates every 60 s; SLO 0.99;
 * errors 0.01; latency off; failure limit 0. */
void tide_rollout_plan_default(tide_rollout_plan_t *p);

/* Validate a plan. Errors: EINVAL naming the field. */
int tide_rollout_plan_check(const tide_rollout_plan_t *p, tide_error_t *err);

/* Parse "5,25,50,100" into p->weights. Errors: EINVAL. */
int tide_rollout_weights_parse(const char *s, tide_rollout_plan_t *p, tide_error_t *err);

/* S(N): the most replicas one step of p adds on top of a need of n. */
int tide_rollout_step_replicas(const tide_rollout_plan_t *p, int n);

/* A model: what serves it, how a version is evaluated and rolled out.
 * Strings and arrays are copied. */
typedef struct tide_model_spec {
    const char *name;
    const char *service;       /* the service it is released to */
    const char *eval_command;  /* NULL/empty: no evaluation job (gates on what was reported) */
    int eval_gpus;             /* >= 1 with a command */
    tide_time_t eval_limit_s;  /* time limit of the evaluation job (> 0 with a command) */
    const tide_gate_rule_t *rules;
    size_t n_rules;            /* <= TIDE_PIPE_MAX_RULES */
    tide_rollout_plan_t plan;
} tide_model_spec_t;

/* A version as registered. Strings are copied. */
typedef struct tide_version_spec {
    const char *source_job;    /* may be NULL (registered by hand) */
    int64_t ckpt_step;         /* checkpoint step (or progress seconds) */
    const char *manifest_uri;  /* required */
    const char *digest;        /* may be NULL */
    int64_t size_bytes;        /* >= 0 */
} tide_version_spec_t;

/* What the driver observes of a model's service (tide_pipeline_observe). */
typedef struct tide_pipe_obs {
    int need;          /* replicas the service's own sizing keeps */
    int gpus_per_replica;
    int held_old;      /* replicas of the old (serving) version, warming or ready */
    int held_new;      /* replicas of the rolling-out version, warming or ready */
    int ready_new;     /* of which ready */
    int have_slo;      /* the three below are fresh (pushed since the last call) */
    double slo;        /* canary's SLO attainment, in [0, 1] */
    double error_rate; /* canary's error fraction */
    double latency_ms; /* canary's latency (P99) */
    int slo_expected;  /* the figures are pulled: a step holds until one of its SLO
                          gates passed on fresh figures (else no figures = no check) */
} tide_pipe_obs_t;

/* Actions. */
typedef enum tide_pipe_act_kind {
    TIDE_PA_EVAL_START = 0, /* model, version, gpus, deadline = time limit (s) */
    TIDE_PA_STATE,          /* model, version, state: record / notify */
    TIDE_PA_REPLICAS,       /* model, version, n: the service should hold n
                               replicas of version (add or retire to reach it);
                               retirements come before additions in one step */
    TIDE_PA_ROUTE,          /* model, version (new), old_version, weight: percent of
                               requests to version, the rest to old_version */
    TIDE_PA_STEP,           /* model, version, step (0-based), weight: a rollout step began */
    TIDE_PA_ROLLBACK,       /* model, version (failed), old_version (restored), gate */
    TIDE_PA_PROMOTED,       /* model, version now serves (100%), old_version retired */
    TIDE_PA_KIND_COUNT
} tide_pipe_act_kind_t;
const char *tide_pipe_act_name(int kind);

typedef struct tide_pipe_act {
    int kind;
    int model;
    int version;
    int old_version;
    int state;         /* tide_ver_state_t (STATE) */
    int n;             /* replicas (REPLICAS), GPUs (EVAL_START) */
    int step;
    double weight;
    tide_time_t deadline;
    int gate;          /* TIDE_GATE_* of the check behind the action */
} tide_pipe_act_t;

typedef struct tide_pipe_acts {
    tide_pipe_act_t *v;
    size_t n, cap;
    tide_time_t next_wake; /* step again at this time even if nothing happens */
} tide_pipe_acts_t;
void tide_pipe_acts_init(tide_pipe_acts_t *a);
void tide_pipe_acts_free(tide_pipe_acts_t *a);

typedef struct tide_pipeline tide_pipeline_t;

/* Create an empty pipeline; check_invariants: verify the rollout bound
 * after every step (debug builds pass 1). */
tide_pipeline_t *tide_pipeline_create(int check_invariants);
void tide_pipeline_destroy(tide_pipeline_t *p); /* NULL is a no-op */

/* Define a model (or replace the spec of an existing one of the same name,
 * keeping its versions). Returns its index or -1 (EINVAL naming the field). */
int tide_pipeline_add_model(tide_pipeline_t *p, const tide_model_spec_t *m, tide_error_t *err);
int tide_pipeline_model_find(const tide_pipeline_t *p, const char *name); /* -1 unknown */
int tide_pipeline_models(const tide_pipeline_t *p);

/* Register a version at time now; returns its number (1, 2, ...) or -1
 * (ENOENT model, EINVAL spec, EEXIST same source job and step). */
int tide_pipeline_register(tide_pipeline_t *p, int model, const tide_version_spec_t *v,
                           tide_time_t now, tide_error_t *err);

/* Report a metric of a version (evaluation results; the latest value of a
 * name wins). Errors: ENOENT, EINVAL (bad name or value), ERANGE (too many). */
int tide_pipeline_metric(tide_pipeline_t *p, int model, int version, const char *name,
                         double value, tide_error_t *err);

/* The evaluation job of a version ended: ok = it completed (the gates then
 * decide at the next step), 0 = it failed (the version is rejected).
 * Errors: ENOENT, ESTATE (not evaluating). */
int tide_pipeline_eval_done(tide_pipeline_t *p, int model, int version, int ok, tide_error_t *err);

/* Observations of a model's service, used by the next step. Errors: ENOENT,
 * EINVAL (negative counts, ready > held, values out of range). */
int tide_pipeline_observe(tide_pipeline_t *p, int model, const tide_pipe_obs_t *o,
                          tide_error_t *err);

/* Operator controls of a model's rollout (PROMOTE also releases a version
 * held inconclusive: the one named, or the candidate when version is 0).
 * Errors: ENOENT, ESTATE (nothing to act on). */
enum { TIDE_ROLLOUT_PAUSE = 0, TIDE_ROLLOUT_RESUME, TIDE_ROLLOUT_PROMOTE, TIDE_ROLLOUT_ABORT };
int tide_pipeline_control(tide_pipeline_t *p, int model, int cmd, int version, tide_error_t *err);

/* Move to `now` (non-decreasing), decide, fill out (cleared first).
 * Returns 0, or -1 with err (EINVAL time went backwards; ESTATE an
 * invariant broke, when checking). */
int tide_pipeline_step(tide_pipeline_t *p, tide_time_t now, tide_pipe_acts_t *out,
                       tide_error_t *err);

/* Check the rollout bound on the last observations of every model.
 * Returns 0 or -1 (ESTATE) naming the model and the counts. */
int tide_pipeline_check(const tide_pipeline_t *p, tide_error_t *err);

/* ------------------------------------------------------------ inspection */

typedef struct tide_model_info {
    const char *name, *service, *eval_command; /* borrowed */
    int eval_gpus;
    tide_time_t eval_limit_s;
    int versions;                  /* count; numbers are 1..versions */
    int alias[TIDE_ALIAS_COUNT];
    const tide_rollout_plan_t *plan;
    const tide_gate_rule_t *rules;
    size_t n_rules;
} tide_model_info_t;
int tide_pipeline_model(const tide_pipeline_t *p, int model, tide_model_info_t *out);

typedef struct tide_version_info {
    int number;
    int state;
    const char *source_job, *manifest_uri, *digest; /* borrowed; NULL when absent */
    int64_t ckpt_step, size_bytes;
    tide_time_t registered_at, state_at; /* state_at: last state change */
    int gate;                            /* last evaluation gate (-1 none) */
    const tide_metric_t *metrics;
    size_t n_metrics;
} tide_version_info_t;
int tide_pipeline_version(const tide_pipeline_t *p, int model, int version,
                          tide_version_info_t *out);

/* The rollout of a model (active = 0 when none). */
enum { TIDE_RO_ADDING = 0, TIDE_RO_HOLDING, TIDE_RO_PHASE_COUNT };
typedef struct tide_rollout_info {
    int active;
    int version, old_version;
    int step;                 /* 0-based */
    double weight;            /* percent routed to version now */
    int phase;                /* TIDE_RO_* */
    int paused;
    int failures;
    tide_time_t started_at, step_at, hold_until;
    int target_new, target_old; /* replicas asked for */
    int bound;                  /* N + S(N) replicas */
} tide_rollout_info_t;
int tide_pipeline_rollout(const tide_pipeline_t *p, int model, tide_rollout_info_t *out);

/* Restore a version's state and a model's aliases (a driver reloading its
 * database): set_state may move a version to any state, without actions. */
int tide_pipeline_restore_version(tide_pipeline_t *p, int model, int version, int state,
                                  tide_time_t state_at, tide_error_t *err);
int tide_pipeline_restore_alias(tide_pipeline_t *p, int model, int alias, int version,
                                tide_error_t *err);
/* Restore a rollout in flight (a driver reloading its database) from what
 * tide_pipeline_rollout gave: version, old_version, step, phase, paused,
 * failures, started_at, step_at, hold_until (the rest is ignored). The
 * version goes back to canary and is the candidate; gates resume at the next
 * multiple of the gate interval after step_at; the step's targets are sent
 * again at the next step. Errors: ENOENT, EINVAL (a version, step or phase
 * out of range). */
int tide_pipeline_restore_rollout(tide_pipeline_t *p, int model, const tide_rollout_info_t *ri,
                                  tide_error_t *err);

struct tide_engine;
struct tide_actions;
struct tide_event;

/* ------------------------------------------------- driving an engine
 * (src/core/pipeline_engine.c; a driver holding a tide_engine_t) */

/* The version each replica runs, indexed by replica handle (model -1: not
 * labeled, i.e. what served before the rollout that started it). */
typedef struct tide_pipe_label {
    int model, version, retiring;
} tide_pipe_label_t;
typedef struct tide_pipe_labels {
    tide_pipe_label_t *v;
    size_t cap;
} tide_pipe_labels_t;
void tide_pipe_labels_init(tide_pipe_labels_t *l);
void tide_pipe_labels_free(tide_pipe_labels_t *l);
void tide_pipe_labels_reset(tide_pipe_labels_t *l); /* a new engine: new handles */
/* Replica r's label (grown on demand; never NULL). */
tide_pipe_label_t *tide_pipe_label(tide_pipe_labels_t *l, int32_t r);

/* After an engine step: label the replicas acts started for a model's
 * service: the rollout's new version while it has fewer replicas than it
 * asked for, else the serving version. The first cap handles go to labeled
 * (may be NULL); returns how many were labeled. */
size_t tide_pipeline_label_starts(const tide_pipeline_t *p, const struct tide_engine *e,
                                  const struct tide_actions *acts, tide_pipe_labels_t *l,
                                  int32_t *labeled, size_t cap);

/* A model's service as the engine holds it. need: what its own sizing keeps
 * (the larger of its target and its replicas less the surge). */
typedef struct tide_pipe_count {
    int service, need, surge, gpus_per_replica;
    int old_version, held_old, held_new, ready_new;
} tide_pipe_count_t;
int tide_pipeline_count(const tide_pipeline_t *p, int model, const struct tide_engine *e,
                        tide_pipe_labels_t *l, tide_pipe_count_t *out); /* -1: no service */

/* Engine events that make the engine hold what model's rollout asks:
 * REPLICA_RETIRE for replicas beyond a version's target (marked retiring),
 * outside a rollout for replicas of any version but the serving one, and a
 * SURGE when the surge wanted changed (*surge_sent: the last one sent, -1
 * none; the driver keeps it per model). At most cap into out; returns the
 * count. Feed them to the engine's next step. */
size_t tide_pipeline_engine_events(const tide_pipeline_t *p, int model, const struct tide_engine *e,
                                   tide_pipe_labels_t *l, int *surge_sent, struct tide_event *out,
                                   size_t cap);

#ifdef __cplusplus
}
#endif
#endif
