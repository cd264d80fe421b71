/* tide store: the daemon's durable state in SQLite (WAL mode, synchronous
 * FULL). Schema and numbered migrations: src/store/schema.sql (embedded).
 *
 * What is kept: settings (meta), the services of the current epoch, the jobs
 * as submitted (plus their last known state), every engine step with every
 * event fed to it (events_in) and every action it returned (actions), the
 * checkpoint manifests jobs reported, and cumulative usage snapshots.
 * Replaying the steps of an epoch through a fresh engine rebuilds it.
 *
 * Uses core types only (no HTTP, no daemon). Not thread-safe: the caller
 * serialises access (the daemon holds its mutex). Every function that
 * touches the database returns 0 (or a value >= 0) on success and -1 with
 * err on failure (EIO for SQLite errors, ENOENT for a missing row, EEXIST for
 * a duplicate key); writes inside tide_store_begin .. tide_store_commit are
 * durable only once commit returned 0. */
#ifndef TIDE_STORE_STORE_H
#define TIDE_STORE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "tide/engine.h"
#include "tide/types.h"

typedef struct tide_store tide_store_t;

/* Schema version this build creates and understands. */
int tide_store_schema_latest(void);

/* Open (creating if missing) the database at path and bring its schema up to
 * date (every pending migration, each in its own transaction). ":memory:"
 * works for tests. Caller owns the store (tide_store_close). Open runs
 * PRAGMA quick_check and takes the write lock once, so a corrupt file or an
 * unwritable -wal / -shm is refused here with the fix in the message.
 * Errors: EIO (cannot open, not a database, corrupt, cannot write, a
 * migration failed), ESTATE (the database is newer than this build). */
tide_store_t *tide_store_open(const char *path, tide_error_t *err);

/* Close; an open transaction is rolled back (uncommitted writes vanish, as in
 * a crash). NULL is a no-op. */
void tide_store_close(tide_store_t *s);

/* Schema version of the open database (after migrations). */
int tide_store_version(tide_store_t *s, tide_error_t *err);

/* Fault injection for tests: the n-th store call from now on (n >= 1) fails
 * with EIO "injected fault" without touching the database; 0 disarms. Every
 * public function below except tide_store_rollback counts as one call. */
void tide_store_fail_at(tide_store_t *s, long n);

/* Transactions (not nested). begin takes the write lock (BEGIN IMMEDIATE).
 * commit makes everything since begin durable, or fails and rolls back.
 * rollback discards (no-op without a transaction; never fails). */
int tide_store_begin(tide_store_t *s, tide_error_t *err);
int tide_store_commit(tide_store_t *s, tide_error_t *err);
void tide_store_rollback(tide_store_t *s);
int tide_store_in_tx(const tide_store_t *s);

/* A cheap health query: the files' identity (tide_store_check_identity),
 * then SELECT 1. */
int tide_store_ping(tide_store_t *s, tide_error_t *err);

/* ------------------------------------------------ the files are the files */

/* Is the database still the file that was opened? Compares the identity
 * (st_dev, st_ino) of PATH, PATH-wal and PATH-shm with what open saw (the
 * -wal and -shm from when they first existed; a -shm that shrank counts as
 * replaced). tide_store_begin and tide_store_commit run this check, so a
 * write is never acknowledged into a deleted or replaced file. On the first
 * failure the store stops accepting writes for good (reads still work, from
 * the files it has open), saves what it holds to PATH.rescued (or
 * PATH.rescued.N; named in the message) with the online backup API, and
 * fails with EIO "database PATH was deleted ..." / "... replaced ...".
 * Returns 0 (always for ":memory:"), or -1 with err. */
int tide_store_check_identity(tide_store_t *s, tide_error_t *err);

/* 1 while writes are accepted, 0 once tide_store_check_identity failed. */
int tide_store_writable(const tide_store_t *s);

/* Counters since open, for metrics and readiness. */
typedef struct tide_store_stats {
    uint64_t errors;        /* store calls that failed: SQLite errors, injected faults, lost files */
    uint64_t commits;       /* commits that succeeded */
    uint64_t commit_errors; /* commits that failed (nothing of theirs is durable) */
    int writable;           /* tide_store_writable() */
} tide_store_stats_t;
void tide_store_stats(const tide_store_t *s, tide_store_stats_t *out);

/* How long a write waits for a lock another connection holds before it
 * fails with EIO "database is locked" (ms; open sets 5000). The daemon
 * shortens it so a foreign lock never holds its mutex for long. */
void tide_store_busy_timeout(tide_store_t *s, int ms);

/* -------------------------------------------------- check, backup, restore */

/* Copy the open database (committed state, consistent) to dest with SQLite's
 * online backup API: written to DEST.tmp, synced, checked (quick_check) and
 * renamed over dest. Not inside a transaction (ESTATE). */
int tide_store_backup(tide_store_t *s, const char *dest, tide_error_t *err);

/* The same from a database file, opened read-only (a running `tide serve`
 * may keep writing: the copy is one consistent commit). src must exist
 * (ENOENT). */
int tide_store_backup_file(const char *src, const char *dest, tide_error_t *err);

/* Integrity of a database file, opened read-only: PRAGMA quick_check, or
 * integrity_check when full (also compares every index with its table).
 * fn(ctx, line) gets each problem found (borrowed). Returns the number of
 * problems (0 = ok), or -1 with err (ENOENT, EIO: not a database). */
typedef void (*tide_store_line_fn)(void *ctx, const char *line);
int tide_store_check_file(const char *path, int full, tide_store_line_fn fn, void *ctx,
                          tide_error_t *err);
/* The engine snapshots' checksums in a database file (read-only): the number
 * of bad snapshots (fn gets a line for each; recovery ignores them), or -1. */
int tide_store_check_snapshots_file(const char *path, tide_store_line_fn fn, void *ctx,
                                    tide_error_t *err);

/* Replace the database at path by the backup file: the backup must pass
 * quick_check and be a tide database (EINVAL otherwise); path must not be
 * open in another process (ESTATE: stop tide serve first). An existing
 * database (with its -wal) is kept as PATH.pre-restore[.N] (moved_to gets
 * that name, "" when there was none); the copy is written next to path,
 * synced, and renamed over it. */
int tide_store_restore(const char *backup, const char *path, char *moved_to, size_t moved_n,
                       tide_error_t *err);

/* ------------------------------------------------------------------ meta */

/* Value of key as a new string the caller frees, or NULL with err (ENOENT:
 * no such key; EIO). */
char *tide_store_meta_get(tide_store_t *s, const char *key, tide_error_t *err);
int tide_store_meta_set(tide_store_t *s, const char *key, const char *value, tide_error_t *err);

/* -------------------------------------------------------------- services */

/* Services of the current epoch in index order. On success *out (caller
 * frees with tide_store_services_free) holds *n specs with owned names. */
int tide_store_services_load(tide_store_t *s, tide_service_spec_t **out, size_t *n,
                             tide_error_t *err);
void tide_store_services_free(tide_service_spec_t *v, size_t n);

/* Replace the whole service list (index i = v[i]). Every field of
 * tide_service_spec_t is stored (slo_target and stage_s since migration 6). */
int tide_store_services_replace(tide_store_t *s, const tide_service_spec_t *v, size_t n,
                                tide_error_t *err);

/* ------------------------------------------------------------------ jobs */

/* A job row. On reads every string is owned by the row (tide_store_job_free);
 * on writes they are borrowed. */
typedef struct tide_store_job {
    tide_job_spec_t spec;   /* id, team, priority, sizes, times, gpu_types mask */
    char *command;          /* NULL = none */
    char *env;              /* JSON object text, NULL = none */
    char *state;            /* tide_job_state_name() */
    int64_t seq;            /* submission order (set by insert) */
    tide_time_t submitted_s, updated_s;
} tide_store_job_t;
void tide_store_job_free(tide_store_job_t *j); /* frees the strings; NULL ok */

/* Insert a new job (state from j->state, "queued" when NULL); j->seq is set.
 * Errors: EEXIST when the id is taken. */
int tide_store_job_insert(tide_store_t *s, tide_store_job_t *j, tide_error_t *err);

/* Read one job (ENOENT when unknown). */
int tide_store_job_get(tide_store_t *s, const char *id, tide_store_job_t *out, tide_error_t *err);

/* Update a job's state (ENOENT when unknown). */
int tide_store_job_set_state(tide_store_t *s, const char *id, const char *state, tide_time_t t,
                             tide_error_t *err);

/* Number of jobs ever submitted. */
int64_t tide_store_jobs_count(tide_store_t *s, tide_error_t *err);

/* List jobs in submission order with seq > after_seq, optionally filtered
 * (NULL / 0 = any), at most limit rows. fn gets each row (borrowed for the
 * call) and may stop the walk by returning non-zero. Returns the number of
 * rows visited or -1. */
typedef struct tide_store_job_filter {
    const char *team, *state;
    int priority;
    int64_t after_seq;
    int limit;
} tide_store_job_filter_t;
typedef int (*tide_store_job_fn)(void *ctx, const tide_store_job_t *j);
int tide_store_jobs_list(tide_store_t *s, const tide_store_job_filter_t *f, tide_store_job_fn fn,
                         void *ctx, tide_error_t *err);

/* ---------------------------------------------------------------- events */

/* Pseudo-event kind stored in events_in for a team definition applied to the
 * engine before the step it belongs to (payload = team spec JSON). */
#define TIDE_STORE_KIND_TEAM_SET TIDE_EV_KIND_COUNT
/* ... and for a power model fitted from measured draws, applied the same way
 * (payload = the measured models by GPU type as JSON; tide serve
 * --power-query, docs/serve.md). */
#define TIDE_STORE_KIND_POWER_MODEL (TIDE_EV_KIND_COUNT + 1)
/* ... and for an RL job's pool decision: which of its pool jobs are held
 * (tide_engine_job_hold) and its controller's state (payload = JSON;
 * docs/rl.md, "The daemon sizes the pool"). */
#define TIDE_STORE_KIND_RL_POOL (TIDE_EV_KIND_COUNT + 2)
#define TIDE_STORE_KIND_LAST TIDE_STORE_KIND_RL_POOL
/* What a stored kind this build does not know reads back as (never fed). */
#define TIDE_STORE_KIND_UNKNOWN (TIDE_EV_KIND_COUNT + 3)

/* An event row. On writes strings are borrowed; in replay callbacks they are
 * borrowed for the call. For JOB_SUBMIT rows read back, spec is filled from
 * the jobs table (strings borrowed likewise) and ev.job_spec points to it. */
typedef struct tide_store_event {
    int64_t seq;            /* set by append */
    int64_t step;           /* 0 = pending (not yet fed) */
    tide_time_t time_s;     /* when it was accepted / fed */
    tide_event_t ev;        /* kind (or TIDE_STORE_KIND_*), handles, value */
    const char *job_id;     /* events about a job: its id (authoritative over ev.job) */
    const char *service_name;
    const char *source;     /* "api", "backend", "demand", "recovery", "daemon" */
    const char *payload;    /* JSON text or NULL */
    tide_job_spec_t spec;   /* replay of JOB_SUBMIT */
} tide_store_event_t;

/* Name stored for an event kind (tide_event_name, "team_set",
 * "power_model" or "rl_pool"), and back
 * (-1 when unknown). */
const char *tide_store_event_kind_name(int kind);
int tide_store_event_kind_find(const char *name);

/* Append an event (step 0 = pending); sets e->seq. */
int tide_store_event_append(tide_store_t *s, tide_store_event_t *e, tide_error_t *err);

/* Attach every pending event to step (they were fed in it). Returns how many. */
int tide_store_events_claim(tide_store_t *s, int64_t step, tide_error_t *err);

/* Attach the pending events with seq <= upto to step. Returns how many. */
int tide_store_events_claim_upto(tide_store_t *s, int64_t step, int64_t upto, tide_error_t *err);

/* Record a step. */
int tide_store_step_append(tide_store_t *s, int64_t step, tide_time_t t, int64_t epoch,
                           tide_error_t *err);

/* Last step (0 and time 0 when none) and its time. */
int tide_store_last_step(tide_store_t *s, int64_t *step, tide_time_t *t, tide_error_t *err);

/* Record an action of step (gpus = the action's GPU ids, NULL when none). */
int tide_store_action_append(tide_store_t *s, int64_t step, tide_time_t t, const tide_action_t *a,
                             const int32_t *gpus, const char *job_id, const char *service_name,
                             tide_error_t *err);

/* Summary of a recorded action (replay verification). */
typedef struct tide_store_action_rec {
    int kind, reason;
    int32_t job, replica, lease;
    int width, n_gpus;
} tide_store_action_rec_t;

/* Replay: for each step of `epoch` in order, fn(ctx, step, time, events in
 * seq order, recorded actions in seq order). A non-zero return from fn stops
 * the walk and is returned. Returns 0, or -1 with err. */
typedef int (*tide_store_step_fn)(void *ctx, int64_t step, tide_time_t t,
                                  const tide_store_event_t *ev, size_t n,
                                  const tide_store_action_rec_t *acts, size_t n_acts);
int tide_store_replay(tide_store_t *s, int64_t epoch, tide_store_step_fn fn, void *ctx,
                      tide_error_t *err);
/* The same for the steps after step `after` only (after a snapshot). */
int tide_store_replay_after(tide_store_t *s, int64_t epoch, int64_t after, tide_store_step_fn fn,
                            void *ctx, tide_error_t *err);

/* Pending events (step NULL) in seq order, as one batch (step = 0, time = 0
 * passed to fn; no actions). Not called when there are none. */
int tide_store_pending(tide_store_t *s, tide_store_step_fn fn, void *ctx, tide_error_t *err);

/* ------------------------------------------------------------ event feed */

/* One row of the merged feed of events_in and actions (TICK rows left out).
 * NULL strings / has_* = 0 for absent fields. Borrowed for the callback. */
typedef struct tide_store_feed_row {
    int64_t seq;
    int64_t step;          /* 0 = pending */
    tide_time_t time_s;
    int is_action;
    const char *kind, *reason, *job_id, *service_name, *source;
    int has_replica, has_lease, has_width, has_gpus, has_deadline, has_value, has_node;
    int64_t replica, lease, width, gpus, deadline_s, node;
    double value;
} tide_store_feed_row_t;
typedef int (*tide_store_feed_fn)(void *ctx, const tide_store_feed_row_t *r);

/* Rows with seq > after, in seq order, at most limit. Returns the number of
 * rows or -1. */
int tide_store_feed(tide_store_t *s, int64_t after, int limit, tide_store_feed_fn fn, void *ctx,
                    tide_error_t *err);

/* ----------------------------------------------------------- checkpoints */

/* Record a checkpoint manifest. step/bytes/shards < 0 and progress_s < 0 are
 * stored as NULL. */
int tide_store_checkpoint_add(tide_store_t *s, const char *job_id, tide_time_t t, int64_t step,
                              int64_t bytes, int64_t shards, int committed, double progress_s,
                              tide_error_t *err);

/* Number of checkpoint manifests recorded for a job. */
int64_t tide_store_checkpoints_count(tide_store_t *s, const char *job_id, tide_error_t *err);

/* ----------------------------------------------------------------- usage */

/* One cumulative GPU-seconds figure. Strings borrowed. */
typedef struct tide_store_usage {
    const char *owner_kind; /* "team", "service", "idle" */
    const char *owner;      /* team or service name, "" for idle */
    const char *cls, *state, *tier;
    double gpu_s;
} tide_store_usage_t;

/* Store a snapshot taken at t (rows with gpu_s == 0 may be left out). */
int tide_store_usage_put(tide_store_t *s, tide_time_t t, const tide_store_usage_t *rows, size_t n,
                         tide_error_t *err);

/* Walk the latest snapshot taken at or before t. *at gets its time (-1 when
 * there is none; fn is then not called). */
typedef int (*tide_store_usage_fn)(void *ctx, const tide_store_usage_t *r);
int tide_store_usage_at(tide_store_t *s, tide_time_t t, tide_time_t *at, tide_store_usage_fn fn,
                        void *ctx, tide_error_t *err);

/* Time of the latest snapshot (-1 when none). */
int tide_store_usage_last(tide_store_t *s, tide_time_t *at, tide_error_t *err);

/* ----------------------------------------------------------- audit trail */

#define TIDE_STORE_AUDIT_BODY 1024 /* request bytes kept per row (the digest covers all) */

/* One audit row (src/store/audit.c). Strings borrowed; NULL is stored as ""
 * (error, message: NULL). */
typedef struct tide_store_audit {
    int64_t id;            /* set by append and list */
    double time;           /* wall clock, Unix seconds */
    const char *team, *role, *peer, *method, *path, *kind;
    const char *request;   /* the body: at most TIDE_STORE_AUDIT_BODY bytes are kept */
    int64_t bytes;         /* the body's whole length (append: strlen(request) when < 0) */
    const char *digest;    /* list: SHA-256 hex of the whole body (append computes it) */
    int status;
    const char *error, *message;
} tide_store_audit_t;

/* Append a row (inside the caller's transaction if one is open). The copy
 * of the request is cut at TIDE_STORE_AUDIT_BODY bytes (at a UTF-8
 * boundary); the digest covers the whole of it. a->id is set. 0 or -1. */
int tide_store_audit_append(tide_store_t *s, tide_store_audit_t *a, tide_error_t *err);

/* A filter of the audit rows: time >= since, team and kind equal when not
 * NULL, id > after (a cursor: the last id seen); at most limit rows (<= 0:
 * all), the oldest first. */
typedef struct tide_store_audit_query {
    double since;
    const char *team, *kind;
    int64_t after;
    int limit;
} tide_store_audit_query_t;
typedef int (*tide_store_audit_fn)(void *ctx, const tide_store_audit_t *a);

/* The matching rows in id order: fn per row
 * (non-zero stops). Returns the number of rows, or -1 with err. */
int tide_store_audit_list(tide_store_t *s, const tide_store_audit_query_t *q,
                          tide_store_audit_fn fn, void *ctx, tide_error_t *err);

/* Retention: delete rows older than `before` (Unix seconds; <= 0 none) and
 * the oldest beyond `keep_rows` (<= 0 no cap). Returns rows deleted or -1. */
int64_t tide_store_audit_prune(tide_store_t *s, double before, int64_t keep_rows,
                               tide_error_t *err);
/* ---- the model pipeline (src/store/pipeline.c) */
/* Put (insert or replace) the JSON document value of kind and key. */
int tide_store_pipe_put(tide_store_t *s, const char *kind, const char *key, const char *value,
                        tide_error_t *err);
/* Call fn for every document of kind, in key order; fn returning -1 stops
 * the listing with EINVAL. */
typedef int (*tide_store_pipe_fn)(void *ctx, const char *key, const char *value);
int tide_store_pipe_list(tide_store_t *s, const char *kind, tide_store_pipe_fn fn, void *ctx,
                         tide_error_t *err);
/* Append to the pipeline's event log; list the latest `limit` of a model,
 * oldest first. */
int tide_store_pipe_event_add(tide_store_t *s, tide_time_t t, const char *model, int version,
                              const char *kind, const char *detail, tide_error_t *err);
typedef void (*tide_store_pipe_event_fn)(void *ctx, tide_time_t t, int version, const char *kind,
                                         const char *detail);
int tide_store_pipe_events(tide_store_t *s, const char *model, int limit,
                           tide_store_pipe_event_fn fn, void *ctx, tide_error_t *err);

/* ---------------------------------------------------------- snapshots */

/* A snapshot of the state after a step (opaque bytes; the daemon's format,
 * whose version the row keeps). On reads state is borrowed for the call and
 * intact says whether its checksum (FNV-1a 64) matches. */
typedef struct tide_store_snapshot {
    int64_t step, epoch, version;
    tide_time_t time_s;
    const void *state;
    size_t n;
    int intact;
} tide_store_snapshot_t;

/* Write a snapshot (inside the step's transaction: it exists only if the
 * step does) and delete all but the newest `keep`. */
int tide_store_snapshot_put(tide_store_t *s, const tide_store_snapshot_t *snap, int keep,
                            tide_error_t *err);

/* Walk the snapshots of an epoch, newest first; fn returns non-zero to stop
 * (that value is returned). Returns 0, the stop value, or -1 with err. */
typedef int (*tide_store_snapshot_fn)(void *ctx, const tide_store_snapshot_t *snap);
int tide_store_snapshots(tide_store_t *s, int64_t epoch, tide_store_snapshot_fn fn, void *ctx,
                         tide_error_t *err);

/* The checksum a snapshot row keeps: 16 hex digits. */
void tide_store_snapshot_checksum(const void *p, size_t n, char out[17]);

/* ------------------------------------------- RL trajectory ledger (rl.c) */

/* An RL run (migration 5): its settings, where its trainer is, and its
 * cumulative counters; queued is the fresh trajectories waiting now (those
 * gone stale wait to be dropped by the next step). */
typedef struct tide_store_rl_run {
    int64_t max_staleness, batch_size;
    int64_t step, policy_version;
    int64_t accepted, duplicates, stale_rejected, stale_dropped, consumed, queued;
    tide_time_t created_s;
} tide_store_rl_run_t;

/* Register job's run (the job, or an RL job's trainer job-trainer, must be in the
 * jobs table: ENOENT when not).
 * Returns 1 created, 0 when the same run exists already (a retry), -1 with
 * err: EEXIST when it exists with other settings, EINVAL when
 * max_staleness < 0 or batch_size < 1. */
int tide_store_rl_run_create(tide_store_t *s, const char *job, int64_t max_staleness,
                             int64_t batch_size, tide_time_t now, tide_error_t *err);

/* The run of job (queued counted). 0, or -1 with err (ENOENT: none). */
int tide_store_rl_run_get(tide_store_t *s, const char *job, tide_store_rl_run_t *out,
                          tide_error_t *err);

/* Every run in job id order: fn per run (non-zero stops). Returns the
 * number of runs or -1 with err. */
typedef int (*tide_store_rl_run_fn)(void *ctx, const char *job, const tide_store_rl_run_t *r);
int tide_store_rl_runs(tide_store_t *s, tide_store_rl_run_fn fn, void *ctx, tide_error_t *err);

/* What a pushed trajectory got (tide_store_rl_push). */
typedef enum {
    TIDE_RL_ACCEPTED = 0, /* new: queued */
    TIDE_RL_DUPLICATE,    /* its id was acknowledged before, same version: nothing written */
    TIDE_RL_CONFLICT,     /* its id was acknowledged with another policy version */
    TIDE_RL_STALE,        /* older than max_staleness versions: refused (counted) */
    TIDE_RL_AHEAD,        /* a policy version the trainer has not made yet: refused */
    TIDE_RL_OUTCOMES
} tide_rl_outcome_t;

/* The outcome's name: accepted, duplicate, conflict, stale, ahead. */
const char *tide_rl_outcome_name(tide_rl_outcome_t o);

/* A trajectory as pushed. payload: its JSON text (NULL none). */
typedef struct tide_store_rl_traj {
    const char *id;
    int64_t policy_version;
    const char *payload;
} tide_store_rl_traj_t;

/* One pushed trajectory of job's run (inside the caller's transaction):
 * queued when new and fresh (its policy version within max_staleness of
 * the trainer's and not ahead of it), else answered by *outcome. A
 * duplicate or a stale refusal is counted in the run. *stored_version: the
 * version acknowledged before (duplicates and conflicts), else the pushed
 * one; *trainer_version: the trainer's. 0, or -1 with err (ENOENT: no run;
 * EIO). */
int tide_store_rl_push(tide_store_t *s, const char *job, const tide_store_rl_traj_t *t,
                       tide_rl_outcome_t *outcome, int64_t *stored_version,
                       int64_t *trainer_version, tide_error_t *err);

/* A trajectory a trainer step consumed (strings borrowed for the call). */
typedef void (*tide_store_rl_traj_fn)(void *ctx, const char *id, int64_t policy_version,
                                      const char *payload);

/* Trainer step `step` of job's run (inside the caller's transaction).
 * step = the run's step + 1: queued trajectories older than max_staleness
 * versions are dropped, the batch_size oldest fresh ones (lowest policy
 * version, then arrival) are consumed, the step and policy version become
 * `step`; *dup = 0. step <= the run's step (a retry): nothing changes, the
 * batch that step consumed is listed again; *dup = 1. fn gets each
 * trajectory of the batch. Errors (nothing written): ENOENT no run,
 * ESTATE fewer than batch_size fresh trajectories queued (*queued gets
 * how many are) or a step beyond the next, EINVAL step < 1. */
int tide_store_rl_step(tide_store_t *s, const char *job, int64_t step,
                       tide_store_rl_traj_fn fn, void *ctx, int *dup, int64_t *queued,
                       tide_error_t *err);

/* Staleness histogram of job's run: fn(ctx, consumed, age, count) per age,
 * ages ascending, first the consumed trajectories (age = versions behind
 * the policy that consumed them), then the queued ones (behind the
 * trainer's policy now). 0 or -1 with err. */
typedef void (*tide_store_rl_age_fn)(void *ctx, int consumed, int64_t age, int64_t count);
int tide_store_rl_ages(tide_store_t *s, const char *job, tide_store_rl_age_fn fn, void *ctx,
                       tide_error_t *err);

#endif
