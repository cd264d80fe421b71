/* The RL trajectory ledger's rows (migration 5 of schema.sql): runs and
 * their acknowledged trajectories. Every write runs inside the caller's
 * transaction (the daemon's group commit), so an answer is sent only once
 * what it says is durable, and a crash keeps all of a write or none. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "util/util.h"

#define WHAT "rl ledger"

static sqlite3_stmt *prep(tide_store_t *s, const char *sql, tide_error_t *err)
{
    return tide__store_prep(s, sql, WHAT, err);
}

static int finish(tide_store_t *s, sqlite3_stmt *st, int rc, tide_error_t *err)
{
    return tide__store_finish(s, st, rc, WHAT, err);
}

/* A statement with job bound to ?1 and n integers v to ?2.. */
static sqlite3_stmt *prep_job(tide_store_t *s, const char *sql, const char *job,
                              const int64_t *v, int n, tide_error_t *err)
{
    sqlite3_stmt *st = prep(s, sql, err);
    if (!st)
        return NULL;
    sqlite3_bind_text(st, 1, job, -1, SQLITE_TRANSIENT);
    for (int i = 0; i < n; i++)
        sqlite3_bind_int64(st, i + 2, v[i]);
    return st;
}

/* Run it; *changes gets the rows it changed (NULL: not wanted). */
static int exec_job(tide_store_t *s, const char *sql, const char *job, const int64_t *v, int n,
                    int64_t *changes, tide_error_t *err)
{
    sqlite3_stmt *st = prep_job(s, sql, job, v, n, err);
    if (!st)
        return -1;
    int rc = finish(s, st, sqlite3_step(st), err);
    if (rc == 0 && changes)
        *changes = sqlite3_changes(s->db);
    return rc;
}

/* The one integer it selects (no row: 0), or -1 with err. */
static int64_t count_job(tide_store_t *s, const char *sql, const char *job, const int64_t *v,
                         int n, tide_error_t *err)
{
    sqlite3_stmt *st = prep_job(s, sql, job, v, n, err);
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    int64_t x = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    return finish(s, st, rc, err) < 0 ? -1 : x;
}

/* ------------------------------------------------------------------ runs */

#define RUN_COLS                                                                        \
    "max_staleness, batch_size, step, policy_version, accepted, duplicates, "           \
    "stale_rejected, stale_dropped, consumed, created_s, "                              \
    "(SELECT count(*) FROM rl_trajectories t WHERE t.job_id = r.job_id AND "           \
    "t.state = 'queued' AND t.policy_version >= r.policy_version - r.max_staleness)"

static void run_row(sqlite3_stmt *st, int c, tide_store_rl_run_t *r)
{
    int64_t *f[] = {&r->max_staleness, &r->batch_size,     &r->step,
                    &r->policy_version, &r->accepted,      &r->duplicates,
                    &r->stale_rejected, &r->stale_dropped, &r->consumed};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        *f[i] = sqlite3_column_int64(st, c + (int)i);
    r->created_s = sqlite3_column_int64(st, c + 9);
    r->queued = sqlite3_column_int64(st, c + 10);
}

int tide_store_rl_run_get(tide_store_t *s, const char *job, tide_store_rl_run_t *out,
                          tide_error_t *err)
{
    sqlite3_stmt *st =
        prep_job(s, "SELECT " RUN_COLS " FROM rl_runs r WHERE job_id = ?", job, NULL, 0, err);
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        run_row(st, 0, out);
    if (finish(s, st, rc, err) < 0)
        return -1;
    if (rc != SQLITE_ROW)
        return tide_errf(err, TIDE_ENOENT, "job %.200s: no RL run registered", job);
    return 0;
}

int tide_store_rl_runs(tide_store_t *s, tide_store_rl_run_fn fn, void *ctx, tide_error_t *err)
{
    sqlite3_stmt *st = prep(s, "SELECT job_id, " RUN_COLS " FROM rl_runs r ORDER BY job_id", err);
    if (!st)
        return -1;
    int rc, n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        tide_store_rl_run_t r;
        run_row(st, 1, &r);
        n++;
        if (fn(ctx, (const char *)sqlite3_column_text(st, 0), &r))
            break;
    }
    return finish(s, st, rc, err) < 0 ? -1 : n;
}

int tide_store_rl_run_create(tide_store_t *s, const char *job, int64_t max_staleness,
                             int64_t batch_size, tide_time_t now, tide_error_t *err)
{
    if (max_staleness < 0 || batch_size < 1)
        return tide_errf(err, TIDE_EINVAL, "max_staleness must be >= 0 and batch_size >= 1");
    tide_store_rl_run_t r;
    tide_error_t e2 = {0};
    if (tide_store_rl_run_get(s, job, &r, &e2) == 0) {
        if (r.max_staleness == max_staleness && r.batch_size == batch_size)
            return 0;
        return tide_errf(err, TIDE_EEXIST,
                         "job %.200s: an RL run is registered with max_staleness %lld and "
                         "batch_size %lld",
                         job, (long long)r.max_staleness, (long long)r.batch_size);
    }
    if (e2.code != TIDE_ENOENT) {
        if (err)
            *err = e2;
        return -1;
    }
    int64_t has = count_job(s, "SELECT count(*) FROM jobs WHERE id = ?1 OR id = ?1 || '-trainer'",
                            job, NULL, 0, err);
    if (has < 0)
        return -1;
    if (!has)
        return tide_errf(err, TIDE_ENOENT, "job %.200s: not submitted", job);
    const int64_t v[] = {max_staleness, batch_size, now};
    if (exec_job(s, "INSERT INTO rl_runs(job_id, max_staleness, batch_size, created_s) "
                    "VALUES (?1, ?2, ?3, ?4)",
                 job, v, 3, NULL, err) < 0)
        return -1;
    return 1;
}

/* ---------------------------------------------------------- trajectories */

static const char *const outcome_names[TIDE_RL_OUTCOMES] = {
    [TIDE_RL_ACCEPTED] = "accepted", [TIDE_RL_DUPLICATE] = "duplicate",
    [TIDE_RL_CONFLICT] = "conflict", [TIDE_RL_STALE] = "stale",
    [TIDE_RL_AHEAD] = "ahead",
};

const char *tide_rl_outcome_name(tide_rl_outcome_t o)
{
    return (unsigned)o < TIDE_RL_OUTCOMES ? outcome_names[o] : "?";
}

/* The version trajectory id of job was acknowledged with: 1 found, 0 not,
 * -1 error. */
static int traj_version(tide_store_t *s, const char *job, const char *id, int64_t *version,
                        tide_error_t *err)
{
    sqlite3_stmt *st = prep(s, "SELECT policy_version FROM rl_trajectories WHERE job_id = ? "
                               "AND traj_id = ?",
                            err);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, job, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, id, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *version = sqlite3_column_int64(st, 0);
    if (finish(s, st, rc, err) < 0)
        return -1;
    return rc == SQLITE_ROW;
}

static int traj_insert(tide_store_t *s, const char *job, const tide_store_rl_traj_t *t,
                       int64_t step, tide_error_t *err)
{
    sqlite3_stmt *st = prep(s,
                            "INSERT INTO rl_trajectories(job_id, traj_id, policy_version, "
                            "accepted_step, payload) VALUES (?, ?, ?, ?, ?)",
                            err);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, job, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, t->id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, t->policy_version);
    sqlite3_bind_int64(st, 4, step);
    if (t->payload)
        sqlite3_bind_text(st, 5, t->payload, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 5);
    return finish(s, st, sqlite3_step(st), err);
}

/* Bump one counter column of job's run (col is one of ours, never input). */
static int run_count(tide_store_t *s, const char *job, const char *col, tide_error_t *err)
{
    char sql[128];
    snprintf(sql, sizeof sql, "UPDATE rl_runs SET %s = %s + 1 WHERE job_id = ?1", col, col);
    return exec_job(s, sql, job, NULL, 0, NULL, err);
}

int tide_store_rl_push(tide_store_t *s, const char *job, const tide_store_rl_traj_t *t,
                       tide_rl_outcome_t *outcome, int64_t *stored_version,
                       int64_t *trainer_version, tide_error_t *err)
{
    tide_store_rl_run_t r;
    if (tide_store_rl_run_get(s, job, &r, err) < 0)
        return -1;
    *trainer_version = r.policy_version;
    *stored_version = t->policy_version;
    int found = traj_version(s, job, t->id, stored_version, err);
    if (found < 0)
        return -1;
    if (found) {
        *outcome = *stored_version == t->policy_version ? TIDE_RL_DUPLICATE : TIDE_RL_CONFLICT;
        return *outcome == TIDE_RL_DUPLICATE ? run_count(s, job, "duplicates", err) : 0;
    }
    if (t->policy_version > r.policy_version) {
        *outcome = TIDE_RL_AHEAD;
        return 0;
    }
    if (r.policy_version - t->policy_version > r.max_staleness) {
        *outcome = TIDE_RL_STALE;
        return run_count(s, job, "stale_rejected", err);
    }
    *outcome = TIDE_RL_ACCEPTED;
    if (traj_insert(s, job, t, r.step, err) < 0)
        return -1;
    return run_count(s, job, "accepted", err);
}

/* fn for every trajectory step consumed, in batch order. */
static int step_list(tide_store_t *s, const char *job, int64_t step, tide_store_rl_traj_fn fn,
                     void *ctx, tide_error_t *err)
{
    sqlite3_stmt *st = prep_job(s,
                                "SELECT traj_id, policy_version, payload FROM rl_trajectories "
                                "WHERE job_id = ?1 AND step = ?2 AND state = 'consumed' "
                                "ORDER BY policy_version, seq",
                                job, &step, 1, err);
    if (!st)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (fn)
            fn(ctx, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1),
               (const char *)sqlite3_column_text(st, 2));
    return finish(s, st, rc, err);
}

/* The step's writes (checked before: enough fresh trajectories queued). */
static int step_take(tide_store_t *s, const char *job, const tide_store_rl_run_t *r,
                     int64_t step, tide_error_t *err)
{
    const int64_t drop[] = {step, r->policy_version - r->max_staleness};
    int64_t dropped = 0, taken = 0;
    if (exec_job(s, "UPDATE rl_trajectories SET state = 'dropped-stale', step = ?2 "
                    "WHERE job_id = ?1 AND state = 'queued' AND policy_version < ?3",
                 job, drop, 2, &dropped, err) < 0)
        return -1;
    const int64_t take[] = {step, r->batch_size};
    if (exec_job(s, "UPDATE rl_trajectories SET state = 'consumed', step = ?2 WHERE seq IN "
                    "(SELECT seq FROM rl_trajectories WHERE job_id = ?1 AND state = 'queued' "
                    "ORDER BY policy_version, seq LIMIT ?3)",
                 job, take, 2, &taken, err) < 0)
        return -1;
    const int64_t upd[] = {step, taken, dropped};
    return exec_job(s, "UPDATE rl_runs SET step = ?2, policy_version = ?2, consumed = consumed + "
                       "?3, stale_dropped = stale_dropped + ?4 WHERE job_id = ?1",
                    job, upd, 3, NULL, err);
}

int tide_store_rl_step(tide_store_t *s, const char *job, int64_t step,
                       tide_store_rl_traj_fn fn, void *ctx, int *dup, int64_t *queued,
                       tide_error_t *err)
{
    *dup = 0;
    *queued = 0;
    if (step < 1)
        return tide_errf(err, TIDE_EINVAL, "step: %lld is not a step number (1, 2, ...)",
                         (long long)step);
    tide_store_rl_run_t r;
    if (tide_store_rl_run_get(s, job, &r, err) < 0)
        return -1;
    if (step <= r.step) {
        *dup = 1;
        return step_list(s, job, step, fn, ctx, err);
    }
    if (step > r.step + 1)
        return tide_errf(err, TIDE_ESTATE, "step %lld: the trainer is at step %lld (next: %lld)",
                         (long long)step, (long long)r.step, (long long)r.step + 1);
    const int64_t lo[] = {r.policy_version - r.max_staleness};
    *queued = count_job(s,
                        "SELECT count(*) FROM rl_trajectories WHERE job_id = ?1 AND "
                        "state = 'queued' AND policy_version >= ?2",
                        job, lo, 1, err);
    if (*queued < 0)
        return -1;
    if (*queued < r.batch_size)
        return tide_errf(err, TIDE_ESTATE,
                         "step %lld: %lld fresh trajectories queued, the batch is %lld",
                         (long long)step, (long long)*queued, (long long)r.batch_size);
    if (step_take(s, job, &r, step, err) < 0)
        return -1;
    return step_list(s, job, step, fn, ctx, err);
}

int tide_store_rl_ages(tide_store_t *s, const char *job, tide_store_rl_age_fn fn, void *ctx,
                       tide_error_t *err)
{
    sqlite3_stmt *st = prep_job(
        s,
        "SELECT 1, t.step - 1 - t.policy_version AS age, count(*) FROM rl_trajectories t "
        "WHERE t.job_id = ?1 AND t.state = 'consumed' GROUP BY age "
        "UNION ALL SELECT 0, r.policy_version - t.policy_version AS age, count(*) "
        "FROM rl_trajectories t JOIN rl_runs r ON r.job_id = t.job_id "
        "WHERE t.job_id = ?1 AND t.state = 'queued' GROUP BY age ORDER BY 1 DESC, 2",
        job, NULL, 0, err);
    if (!st)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        fn(ctx, sqlite3_column_int(st, 0), sqlite3_column_int64(st, 1),
           sqlite3_column_int64(st, 2));
    return finish(s, st, rc, err);
}
