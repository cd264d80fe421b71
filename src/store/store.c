/* The daemon's SQLite store: migrations, prepared statements, and the rows
 * described in store.h. */
#include "store/store.h"
#include "store/internal.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/bytes.h"
#include "store_schema.h" /* generated from schema.sql: tide_store_schema_sql[] */
#include "util/util.h"

/* ------------------------------------------------------------ statements */

#define EV_COLS                                                                                \
    "e.seq, e.step, e.time_s, e.kind, e.job_id, e.job, e.service, e.service_name, e.replica, " \
    "e.node, e.phase, e.value, e.source, e.payload, "                                         \
    "j.team, j.priority, j.gpus, j.gang_gpus, j.dp_min, j.duration_s, j.ckpt_interval_s, "    \
    "j.ckpt_s, j.restore_s, j.gpu_types, j.submitted_s"

#define JOB_COLS                                                                               \
    "id, seq, team, priority, gpus, gang_gpus, dp_min, duration_s, ckpt_interval_s, ckpt_s, "  \
    "restore_s, gpu_types, command, env, state, submitted_s, updated_s"

static const char *const sql_text[Q_COUNT] = {
    [Q_META_GET] = "SELECT value FROM meta WHERE key = ?1",
    [Q_META_SET] = "INSERT INTO meta(key, value) VALUES (?1, ?2) "
                   "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    [Q_SVC_DEL] = "DELETE FROM services",
    [Q_SVC_INS] = "INSERT INTO services(idx, name, gpus_per_replica, replica_rps, min_replicas, "
                  "max_replicas, warmup_s, gpu_types, fixed_replicas, slo_target, stage_s) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    [Q_SVC_ALL] = "SELECT idx, name, gpus_per_replica, replica_rps, min_replicas, max_replicas, "
                  "warmup_s, gpu_types, fixed_replicas, slo_target, stage_s FROM services ORDER BY idx",
    [Q_JOB_INS] = "INSERT INTO jobs(" JOB_COLS ") VALUES "
                  "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
    [Q_JOB_GET] = "SELECT " JOB_COLS " FROM jobs WHERE id = ?1",
    [Q_JOB_STATE] = "UPDATE jobs SET state = ?2, updated_s = ?3 WHERE id = ?1",
    [Q_JOB_COUNT] = "SELECT count(*) FROM jobs",
    [Q_JOB_MAXSEQ] = "SELECT coalesce(max(seq), 0) FROM jobs",
    [Q_JOB_LIST] = "SELECT " JOB_COLS " FROM jobs WHERE seq > ?1 AND (?2 IS NULL OR team = ?2) "
                   "AND (?3 IS NULL OR state = ?3) AND (?4 = 0 OR priority = ?4) "
                   "ORDER BY seq LIMIT ?5",
    [Q_EV_INS] = "INSERT INTO events_in(seq, step, time_s, kind, job_id, job, service, "
                 "service_name, replica, node, phase, value, source, payload) "
                 "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    [Q_EV_CLAIM] = "UPDATE events_in SET step = ?1 WHERE step IS NULL",
    [Q_EV_CLAIM_UPTO] = "UPDATE events_in SET step = ?1 WHERE step IS NULL AND seq <= ?2",
    [Q_STEP_INS] = "INSERT INTO steps(step, time_s, epoch) VALUES (?1, ?2, ?3)",
    [Q_STEP_LAST] = "SELECT step, time_s FROM steps ORDER BY step DESC LIMIT 1",
    [Q_ACT_INS] = "INSERT INTO actions(seq, step, time_s, kind, reason, job_id, job, service, "
                  "service_name, replica, lease, width, gpus, deadline_s, value, gpu_ids) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
    [Q_REPLAY_EV] = "SELECT s.step, s.time_s, " EV_COLS " FROM steps s "
                    "LEFT JOIN events_in e ON e.step = s.step "
                    "LEFT JOIN jobs j ON e.kind = 'submit' AND j.id = e.job_id "
                    "WHERE s.epoch = ?1 AND s.step > ?2 ORDER BY s.step, e.seq",
    [Q_REPLAY_ACT] = "SELECT a.step, a.kind, a.reason, a.job, a.replica, a.lease, a.width, a.gpus "
                     "FROM actions a JOIN steps s ON s.step = a.step WHERE s.epoch = ?1 "
                     "AND s.step > ?2 "
                     "ORDER BY a.step, a.seq",
    [Q_PENDING] = "SELECT 0, 0, " EV_COLS " FROM events_in e "
                  "LEFT JOIN jobs j ON e.kind = 'submit' AND j.id = e.job_id "
                  "WHERE e.step IS NULL ORDER BY e.seq",
    [Q_MAXSEQ] = "SELECT max(coalesce((SELECT max(seq) FROM events_in), 0), "
                 "coalesce((SELECT max(seq) FROM actions), 0))",
    [Q_FEED] = "SELECT seq, step, time_s, 0, kind, NULL, job_id, service_name, source, replica, "
               "NULL, NULL, NULL, NULL, value, node FROM events_in "
               "WHERE seq > ?1 AND kind <> 'tick' "
               "UNION ALL SELECT seq, step, time_s, 1, kind, reason, job_id, service_name, NULL, "
               "replica, lease, width, gpus, deadline_s, value, NULL FROM actions WHERE seq > ?1 "
               "ORDER BY 1 LIMIT ?2",
    [Q_CKPT_INS] = "INSERT INTO checkpoints(job_id, time_s, step, bytes, shards, committed, "
                   "progress_s) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [Q_CKPT_COUNT] = "SELECT count(*) FROM checkpoints WHERE job_id = ?1",
    [Q_USAGE_INS] = "INSERT OR REPLACE INTO usage(time_s, owner_kind, owner, class, state, tier, "
                    "gpu_s) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [Q_USAGE_AT] = "SELECT time_s, owner_kind, owner, class, state, tier, gpu_s FROM usage "
                   "WHERE time_s = (SELECT max(time_s) FROM usage WHERE time_s <= ?1)",
    [Q_USAGE_LAST] = "SELECT max(time_s) FROM usage",
    [Q_PING] = "SELECT 1",
    [Q_SNAP_INS] = "INSERT OR REPLACE INTO snapshots(step, epoch, time_s, version, checksum, state) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [Q_SNAP_PRUNE] = "DELETE FROM snapshots WHERE step NOT IN "
                     "(SELECT step FROM snapshots ORDER BY step DESC LIMIT ?1)",
    [Q_SNAP_LIST] = "SELECT step, epoch, time_s, version, checksum, state FROM snapshots "
                    "WHERE epoch = ?1 ORDER BY step DESC",
};

/* ---------------------------------------------------------------- helpers */

int tide__store_db_err(tide_store_t *s, tide_error_t *err, const char *what)
{
    s->stats.errors++;
    return tide_errf(err, TIDE_EIO, "database: %s: %s", what, sqlite3_errmsg(s->db));
}

#define db_err tide__store_db_err

sqlite3_stmt *tide__store_prep(tide_store_t *s, const char *sql, const char *what,
                               tide_error_t *err)
{
    sqlite3_stmt *st = NULL;
    if (s->lost) {
        tide_errf(err, TIDE_EIO, "database: %s", s->lost_msg);
        return NULL;
    }
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        db_err(s, err, what);
        return NULL;
    }
    return st;
}

int tide__store_finish(tide_store_t *s, sqlite3_stmt *st, int rc, const char *what,
                       tide_error_t *err)
{
    if (rc == SQLITE_DONE || rc == SQLITE_ROW) {
        sqlite3_finalize(st);
        return 0;
    }
    tide__store_db_err(s, err, what); /* before finalize: its message */
    sqlite3_finalize(st);
    return -1;
}

/* Count one call; fail it when the fault countdown reaches it. */
static int fault(tide_store_t *s, tide_error_t *err)
{
    if (s->fail_at > 0 && --s->fail_at == 0) {
        s->stats.errors++;
        return tide_errf(err, TIDE_EIO, "database: injected fault");
    }
    return 0;
}

static sqlite3_stmt *q(tide_store_t *s, int which, tide_error_t *err)
{
    if (!s->st[which]) {
        if (sqlite3_prepare_v3(s->db, sql_text[which], -1, SQLITE_PREPARE_PERSISTENT,
                               &s->st[which], NULL) != SQLITE_OK) {
            db_err(s, err, "prepare");
            s->st[which] = NULL;
            return NULL;
        }
    }
    sqlite3_stmt *st = s->st[which];
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return st;
}

static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

/* Bind an integer, or NULL when it is < 0 (absent handles). */
static void bind_opt(sqlite3_stmt *st, int i, int64_t v)
{
    if (v >= 0)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

/* Run a statement that returns no rows. */
static int run(tide_store_t *s, sqlite3_stmt *st, tide_error_t *err, const char *what)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc == SQLITE_DONE || rc == SQLITE_ROW)
        return 0;
    if (rc == SQLITE_CONSTRAINT)
        return tide_errf(err, TIDE_EEXIST, "database: %s: %s", what, sqlite3_errmsg(s->db));
    return db_err(s, err, what);
}

static int exec(tide_store_t *s, const char *sql, tide_error_t *err)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        s->stats.errors++;
        tide_errf(err, TIDE_EIO, "database: %s", msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

static int64_t one_int(tide_store_t *s, int which, tide_error_t *err, const char *what)
{
    sqlite3_stmt *st = q(s, which, err);
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    int64_t v = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_reset(st);
    if (rc != SQLITE_ROW)
        return db_err(s, err, what);
    return v;
}

static char *col_dup(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? tide_xstrdup((const char *)t) : NULL;
}

static const char *col_str(sqlite3_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(st, i);
}

static int64_t col_opt(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}

/* ------------------------------------------------------------ migrations */

/* The text of migration n within the schema (pointer and length), or NULL. */
static const char *migration(int n, size_t *len)
{
    char tag[48];
    *len = 0;
    snprintf(tag, sizeof tag, "-- migration %d:", n);
    const char *p = strstr(tide_store_schema_sql, tag);
    if (!p)
        return NULL;
    char next[48];
    snprintf(next, sizeof next, "-- migration %d:", n + 1);
    const char *e = strstr(p, next);
    *len = e ? (size_t)(e - p) : strlen(p);
    return p;
}

int tide_store_schema_latest(void)
{
    int n = 0;
    size_t len;
    while (migration(n + 1, &len))
        n++;
    return n;
}

static int current_version(tide_store_t *s, tide_error_t *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT coalesce(max(version), 0) FROM schema_version", -1, &st,
                           NULL) != SQLITE_OK)
        return db_err(s, err, "schema_version");
    int rc = sqlite3_step(st);
    int v = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    if (v < 0)
        return db_err(s, err, "schema_version");
    return v;
}

static int migrate(tide_store_t *s, tide_error_t *err)
{
    if (exec(s, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, "
                "applied_at TEXT NOT NULL)",
             err) < 0)
        return -1;
    int have = current_version(s, err);
    if (have < 0)
        return -1;
    int latest = tide_store_schema_latest();
    if (have > latest)
        return tide_errf(err, TIDE_ESTATE,
                         "database schema version %d is newer than this tide (%d): upgrade tide",
                         have, latest);
    for (int v = have + 1; v <= latest; v++) {
        size_t len = 0;
        const char *text = migration(v, &len);
        if (!text)
            return tide_errf(err, TIDE_ESTATE, "migration %d: missing from the schema", v);
        char *sql = tide_xmalloc(len + 128);
        memcpy(sql, text, len);
        snprintf(sql + len, 128,
                 "\nINSERT INTO schema_version(version, applied_at) VALUES (%d, datetime('now'));",
                 v);
        int rc = exec(s, "BEGIN IMMEDIATE", err);
        if (rc == 0 && (rc = exec(s, sql, err)) == 0)
            rc = exec(s, "COMMIT", err);
        if (rc < 0) {
            sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
            tide_err_prefix(err, "migration %d: ", v);
        }
        free(sql);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ open */

tide_store_t *tide_store_open(const char *path, tide_error_t *err)
{
    tide_store_t *s = tide_xcalloc(1, sizeof *s);
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        tide_errf(err, TIDE_EIO, "database %s: %s", path,
                  s->db ? sqlite3_errmsg(s->db) : "cannot open");
        sqlite3_close(s->db);
        free(s);
        return NULL;
    }
    if (path[0] && strcmp(path, ":memory:") && strncmp(path, "file:", 5))
        s->path = tide_xstrdup(path);
    sqlite3_busy_timeout(s->db, 5000);
    sqlite3_extended_result_codes(s->db, 0);
    /* WAL: readers never block the writer; FULL: a COMMIT is on disk when it returns */
    if (tide__store_open_checks(s, path, err) < 0 || exec(s, "PRAGMA journal_mode = WAL", err) < 0 ||
        exec(s, "PRAGMA synchronous = FULL", err) < 0 || exec(s, "PRAGMA foreign_keys = ON", err) < 0 ||
        migrate(s, err) < 0) {
        tide_err_prefix(err, "database %s: ", path);
        tide_store_close(s);
        return NULL;
    }
    int64_t m = one_int(s, Q_MAXSEQ, err, "sequence");
    int64_t j = m < 0 ? -1 : one_int(s, Q_JOB_MAXSEQ, err, "sequence");
    if (m < 0 || j < 0) {
        tide_store_close(s);
        return NULL;
    }
    s->next_seq = m + 1;
    s->next_job_seq = j + 1;
    /* the write lock once (an unwritable -shm or -wal fails here, not at the
     * first acknowledged write); then the files are the ones to keep */
    if (exec(s, "BEGIN IMMEDIATE", err) < 0) {
        tide_err_prefix(err, "database %s: cannot take the write lock: ", path);
        if (s->path) {
            size_t l = strlen(err->msg);
            snprintf(err->msg + l, sizeof err->msg - l,
                     " (check that %s, %s-wal and %s-shm are writable by this user, or remove "
                     "a stale %s-shm while nothing has the database open)",
                     path, path, path, path);
        }
        tide_store_close(s);
        return NULL;
    }
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    tide__store_fid_record(s);
    return s;
}

void tide_store_close(tide_store_t *s)
{
    if (!s)
        return;
    if (s->in_tx)
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    for (int i = 0; i < Q_COUNT; i++)
        sqlite3_finalize(s->st[i]);
    sqlite3_finalize(s->audit_ins);
    sqlite3_close(s->db);
    free(s->path);
    free(s);
}

int tide_store_version(tide_store_t *s, tide_error_t *err)
{
    if (fault(s, err))
        return -1;
    return current_version(s, err);
}

void tide_store_fail_at(tide_store_t *s, long n) { s->fail_at = n > 0 ? n : 0; }

/* ---------------------------------------------------------- transactions */

int tide_store_begin(tide_store_t *s, tide_error_t *err)
{
    if (fault(s, err))
        return -1;
    if (s->in_tx)
        return tide_errf(err, TIDE_ESTATE, "database: transaction already open");
    if (tide_store_check_identity(s, err) < 0)
        return -1;
    if (exec(s, "BEGIN IMMEDIATE", err) < 0)
        return -1;
    s->in_tx = 1;
    return 0;
}

int tide_store_commit(tide_store_t *s, tide_error_t *err)
{
    /* a commit into a deleted or replaced file would be acknowledged and lost */
    if (fault(s, err) || tide_store_check_identity(s, err) < 0 || exec(s, "COMMIT", err) < 0) {
        tide_store_rollback(s);
        s->stats.commit_errors++;
        return -1;
    }
    s->in_tx = 0;
    s->stats.commits++;
    return 0;
}

void tide_store_rollback(tide_store_t *s)
{
    if (!s->in_tx)
        return;
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    s->in_tx = 0;
    /* the in-memory sequences may now run ahead of the table: gaps are fine */
}

int tide_store_in_tx(const tide_store_t *s) { return s->in_tx; }

int tide_store_ping(tide_store_t *s, tide_error_t *err)
{
    if (fault(s, err) || tide_store_check_identity(s, err) < 0)
        return -1;
    return one_int(s, Q_PING, err, "ping") == 1 ? 0 : -1;
}

/* ------------------------------------------------------------------ meta */

char *tide_store_meta_get(tide_store_t *s, const char *key, tide_error_t *err)
{
    if (fault(s, err))
        return NULL;
    sqlite3_stmt *st = q(s, Q_META_GET, err);
    if (!st)
        return NULL;
    bind_text(st, 1, key);
    int rc = sqlite3_step(st);
    char *v = rc == SQLITE_ROW ? col_dup(st, 0) : NULL;
    sqlite3_reset(st);
    if (rc == SQLITE_DONE)
        tide_errf(err, TIDE_ENOENT, "database: no setting '%s'", key);
    else if (rc != SQLITE_ROW)
        db_err(s, err, "meta");
    return v;
}

int tide_store_meta_set(tide_store_t *s, const char *key, const char *value, tide_error_t *err)
{
    if (fault(s, err))
        return -1;
    sqlite3_stmt *st = q(s, Q_META_SET, err);
    if (!st)
        return -1;
    bind_text(st, 1, key);
    bind_text(st, 2, value);
    return run(s, st, err, "meta");
}

/* -------------------------------------------------------------- services */

int tide_store_services_load(tide_store_t *s, tide_service_spec_t **out, size_t *n,
                             tide_error_t *err)
{
    *out = NULL;
    *n = 0;
    if (fault(s, err))
        return -1;
    sqlite3_stmt *st = q(s, Q_SVC_ALL, err);
    if (!st)
        return -1;
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        tide_service_spec_t v = {
            .name = col_dup(st, 1),
            .gpus_per_replica = sqlite3_column_int(st, 2),
            .replica_rps = sqlite3_column_double(st, 3),
            .min_replicas = sqlite3_column_int(st, 4),
            .max_replicas = sqlite3_column_int(st, 5),
            .warmup_s = sqlite3_column_int64(st, 6),
            .gpu_types = (uint32_t)sqlite3_column_int64(st, 7),
            .fixed_replicas = sqlite3_column_int(st, 8),
            .slo_target = sqlite3_column_double(st, 9),
            .stage_s = sqlite3_column_int64(st, 10),
        };
        if (!v.name)
            v.name = tide_xstrdup("");
        TIDE_PUSH(*out, *n, cap, v);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        tide_store_services_free(*out, *n);
        *out = NULL;
        *n = 0;
        return db_err(s, err, "services");
    }
    return 0;
}

void tide_store_services_free(tide_service_spec_t *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free((char *)v[i].name);
    free(v);
}

int tide_store_services_replace(tide_store_t *s, const tide_service_spec_t *v, size_t n,
                                tide_error_t *err)
{
    if (fault(s, err))
        return -1;
    sqlite3_stmt *st = q(s, Q_SVC_DEL, err);
    if (!st || run(s, st, err, "services") < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!(st = q(s, Q_SVC_INS, err)))
            return -1;
        sqlite3_bind_int64(st, 1, (int64_t)i);
        bind_text(st, 2, v[i].name);
        sqlite3_bind_int(st, 3, v[i].gpus_per_replica);
        sqlite3_bind_double(st, 4, v[i].replica_rps);
        sqlite3_bind_int(st, 5, v[i].min_replicas);
        sqlite3_bind_int(st, 6, v[i].max_replicas);
        sqlite3_bind_int64(st, 7, v[i].warmup_s);
        sqlite3_bind_int64(st, 8, v[i].gpu_types);
        sqlite3_bind_int(st, 9, v[i].fixed_replicas);
        sqlite3_bind_double(st, 10, v[i].slo_target);
        sqlite3_bind_int64(st, 11, v[i].stage_s);
        if (run(s, st, err, "services") < 0)
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ jobs */

void tide_store_job_free(tide_store_job_t *j)
{
    if (!j)
        return;
    free((char *)j->spec.id);
    free((char *)j->spec.team);
    free(j->command);
    free(j->env);
    free(j->state);
    memset(j, 0, sizeof *j);
}

int tide_store_job_insert(tide_store_t *s, tide_store_job_t *j, tide_error_t *err)
{
    if (fault(s, err))
        return -1;
    sqlite3_stmt *st = q(s, Q_JOB_INS, err);
    if (!st)
        return -1;
    const tide_job_spec_t *p = &j->spec;
    int64_t seq = s->next_job_seq;
    bind_text(st, 1, p->id);
    sqlite3_bind_int64(st, 2, seq);
    bind_text(st, 3, p->team);
    sqlite3_bind_int(st, 4, p->priority);
    sqlite3_bind_int(st, 5, p->gpus);
    sqlite3_bind_int(st, 6, p->gang_gpus);
    sqlite3_bind_int(st, 7, p->dp_min);
    sqlite3_bind_int64(st, 8, p->duration_s);
    sqlite3_bind_int64(st, 9, p->ckpt_interval_s);
    sqlite3_bind_int64(st, 10, p->ckpt_s);
    sqlite3_bind_int64(st, 11, p->restore_s);
    sqlite3_bind_int64(st, 12, p->gpu_types);
    bind_text(st, 13, j->command);
    bind_text(st, 14, j->env);
    bind_text(st, 15, j->state ? j->state : "queued");
    sqlite3_bind_int64(st, 16, j->submitted_s);
    sqlite3_bind_int64(st, 17, j->updated_s);
    if (run(s, st, err, "insert job") < 0) {
        if (err && err->code == TIDE_EEXIST)
            tide_errf(err, TIDE_EEXIST, "job %s: already submitted", p->id);
        return -1;
    }
    s->next_job_seq++;
    j->seq = seq;
    return 0;
}

/* Fill a job row from the current result row of a JOB_COLS query. */
static void job_from_row(sqlite3_stmt *st, tide_store_job_t *j)
{
    memset(j, 0, sizeof *j);
    j->spec.id = col_dup(st, 0);
    j->seq = sqlite3_column_int64(st, 1);
    j->spec.team = col_dup(st, 2);
    j->spec.priority = sqlite3_column_int(st, 3);
    j->spec.gpus = sqlite3_column_int(st, 4);
    j->spec.gang_gpus = sqlite3_column_int(st, 5);
    j->spec.dp_min = sqlite3_column_int(st, 6);
    j->spec.duration_s = sqlite3_column_int64(st, 7);
    j->spec.ckpt_interval_s = sqlite3_column_int64(st, 8);
    j->spec.ckpt_s = sqlite3_column_int64(st, 9);
    j->spec.restore_s = sqlite3_column_int64(st, 10);
    j->spec.gpu_types = (uint32_t)sqlite3_column_int64(st, 11);
    j->command = col_dup(st, 12);
    j->env = col_dup(st, 13);
    j->state = col_dup(st, 14);
    j->submitted_s = sqlite3_column_int64(st, 15);
    j->spec.submit_s = j->submitted_s;
    j->updated_s = sqlite3_column_int64(st, 16);
    if (!j->spec.id)
        j->spec.id = tide_xstrdup("");
    if (!j->spec.team)
        j->spec.team = tide_xstrdup("");
    if (!j->state)
        j->state = tide_xstrdup("queued");
}

int tide_store_job_get(tide_store_t *s, const char *id, tide_store_job_t *out, tide_error_t *err)
{
    memset(out, 0, sizeof *out);
    if (fault(s, err))
        return -1;
    sqlite3_stmt *st = q(s, Q_JOB_GET, err);
    if (!st)
        return -1;
    bind_text(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        job_from_row(st, out);
    sqlite3_reset(st);
    if (rc == SQLITE_DONE)
        return tide_errf(err, TIDE_ENOENT, "unknown job '%s'", id);
    if (rc != SQLITE_ROW)
        return db_err(s, err, "job");
    return 0;
}

int tide_store_job_set_state(tide_store_t *s, const char *id, const char *state, tide_time_t t,
                             tide_error_t *err)
{
    if (fault(s, err))
        return -1;
    sqlite3_stmt *st = q(s, Q_JOB_STATE, err);
    if (!st)
        return -1;
    bind_text(st, 1, id);
    bind_text(st, 2, state);
    sqlite3_bind_int64(st, 3, t);
    if (run(s, st, err, "job state") < 0)
        return -1;
    if (sqlite3_changes(s->db) == 0)
        return tide_errf(err, TIDE_ENOENT, "unknown job '%s'", id);
    return 0;
}

int64_t tide_store_jobs_count(tide_store_t *s, tide_error_t *err)
{
    if (fault(s, err))
        return -1;
    return one_int(s, Q_JOB_COUNT, err, "jobs");
}

int tide_store_jobs_list(tide_store_t *s, const tide_store_job_filter_t *f, tide_store_job_fn fn,
                         void *ctx, tide_error_t *err)
{
    if (fault(s, err))
        return -1;
    sqlite3_stmt *st = q(s, Q_JOB_LIST, err);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, f->after_seq);
    bind_text(st, 2, f->team);
    bind_text(st, 3, f->state);
    sqlite3_bind_int(st, 4, f->priority);
    sqlite3_bind_int(st, 5, f->limit > 0 ? f->limit : -1);
    int rc, n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        tide_store_job_t j;
        job_from_row(st, &j);
        n++;
        int stop = fn(ctx, &j);
        tide_store_job_free(&j);
        if (stop) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return db_err(s, err, "jobs");
    return n;
}

/* ---------------------------------------------------------------- events */

const char *tide_store_event_kind_name(int kind)
{
    if (kind == TIDE_STORE_KIND_TEAM_SET)
        return "team_set";
    if (kind == TIDE_STORE_KIND_POWER_MODEL)
        return "power_model";
    if (kind == TIDE_STORE_KIND_RL_POOL)
        return "rl_pool";
    return tide_event_name(kind);
}

int tide_store_event_kind_find(const char *name)
{
    if (!name)
        return -1;
    for (int k = 0; k <= TIDE_STORE_KIND_LAST; k++)
        if (!strcmp(tide_store_event_kind_name(k), name))
            return k;
    return -1;
}

int tide_store_event_append(tide_store_t *s, tide_store_event_t *e, tide_error_t *err)
{
    if (fault(s, err))
        return -1;
    sqlite3_stmt *st = q(s, Q_EV_INS, err);
    if (!st)
        return -1;
    int64_t seq = s->next_seq;
    const tide_event_t *v = &e->ev;
    sqlite3_bind_int64(st, 1, seq);
    bind_opt(st, 2, e->step > 0 ? e->step : -1);
    sqlite3_bind_int64(st, 3, e->time_s);
    bind_text(st, 4, tide_store_event_kind_name(v->kind));
    bind_text(st, 5, e->job_id);
    bind_opt(st, 6, v->job);
    bind_opt(st, 7, v->service);
    bind_text(st, 8, e->service_name);
    bind_opt(st, 9, v->replica);
    bind_opt(st, 10, v->node);
    if (v->kind == TIDE_EV_JOB_PHASE)
        sqlite3_bind_int(st, 11, v->phase);
    else
        sqlite3_bind_null(st, 11);
    static const unsigned char has_value[TIDE_EV_KIND_COUNT] = {
        [TIDE_EV_DEMAND] = 1,        [TIDE_EV_JOB_PHASE] = 1,   [TIDE_EV_CKPT_COMMITTED] = 1,
        [TIDE_EV_JOB_FINISHED] = 1,  [TIDE_EV_RANK_FAILED] = 1, [TIDE_EV_JOB_EXPIRED] = 1,
        [TIDE_EV_FOREIGN] = 1,       [TIDE_EV_SURGE] = 1,       [TIDE_EV_NODE_FAILED] = 1};
    if (v->kind >= 0 && v->kind < TIDE_EV_KIND_COUNT && has_value[v->kind] && isfinite(v->value))
        sqlite3_bind_double(st, 12, v->value);
    else
        sqlite3_bind_null(st, 12);
    bind_text(st, 13, e->source);
    bind_text(st, 14, e->payload);
    if (run(s, st, err, "append event") < 0)
        return -1;
    s->next_seq++;
    e->seq = seq;
    return 0;
}

int tide_store_events_claim(tide_store_t *s, int64_t step, tide_error_t *err)
{
    if (fault(s, err))
        return -1;
    sqlite3_stmt *st = q(s, Q_EV_CLAIM, err);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, step);
    if (run(s, st, err, "claim events") < 0)
        return -1;
    return sqlite3_changes(s->db);
}

int tide_store_events_claim_upto(tide_store_t *s, int64_t step, int64_t upto, tide_error_t *err)
{
    if (fault(s, err))
        return -1;
    sqlite3_stmt *st = q(s, Q_EV_CLAIM_UPTO, err);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, step);
    sqlite3_bind_int64(st, 2, upto);
    if (run(s, st, err, "claim events") < 0)
        return -1;
    return sqlite3_changes(s->db);
}

int tide_store_step_append(tide_store_t *s, int64_t step, tide_time_t t, int64_t epoch,
                           tide_error_t *err)
{
    if (fault(s, err))
        return -1;
    sqlite3_stmt *st = q(s, Q_STEP_INS, err);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, step);
    sqlite3_bind_int64(st, 2, t);
    sqlite3_bind_int64(st, 3, epoch);
    return run(s, st, err, "append step");
}

int tide_store_last_step(tide_store_t *s, int64_t *step, tide_time_t *t, tide_error_t *err)
{
    *step = 0;
    *t = 0;
    if (fault(s, err))
        return -1;
    sqlite3_stmt *st = q(s, Q_STEP_LAST, err);
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *step = sqlite3_column_int64(st, 0);
        *t = sqlite3_column_int64(st, 1);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return db_err(s, err, "steps");
    return 0;
}

/* Which actions carry GPU ids, a width, a deadline, a value. */
enum { AF_GPUS = 1, AF_WIDTH = 2, AF_DEADLINE = 4, AF_VALUE = 8 };
static const unsigned act_fields[TIDE_ACT_KIND_COUNT] = {
    [TIDE_ACT_JOB_START] = AF_GPUS | AF_WIDTH,
    [TIDE_ACT_JOB_CKPT] = AF_DEADLINE,
    [TIDE_ACT_JOB_RESIZE] = AF_GPUS | AF_WIDTH,
    [TIDE_ACT_JOB_STOP] = AF_VALUE,
    [TIDE_ACT_REPLICA_START] = AF_GPUS,
    [TIDE_ACT_REPLICA_STOP] = 0,
    [TIDE_ACT_LEASE_GRANT] = AF_DEADLINE,
    [TIDE_ACT_LEASE_RENEW] = AF_DEADLINE,
    [TIDE_ACT_LEASE_RETURN] = 0,
    [TIDE_ACT_POWER_CAP] = AF_GPUS | AF_VALUE,
};

int tide_store_action_append(tide_store_t *s, int64_t step, tide_time_t t, const tide_action_t *a,
                             const int32_t *gpus, const char *job_id, const char *service_name,
                             tide_error_t *err)
{
    if (fault(s, err))
        return -1;
    sqlite3_stmt *st = q(s, Q_ACT_INS, err);
    if (!st)
        return -1;
    unsigned fl = a->kind >= 0 && a->kind < TIDE_ACT_KIND_COUNT ? act_fields[a->kind] : 0;
    int64_t seq = s->next_seq;
    sqlite3_bind_int64(st, 1, seq);
    sqlite3_bind_int64(st, 2, step);
    sqlite3_bind_int64(st, 3, t);
    bind_text(st, 4, tide_action_name(a->kind));
    bind_text(st, 5, a->reason != TIDE_R_NONE ? tide_reason_name(a->reason) : NULL);
    bind_text(st, 6, job_id);
    bind_opt(st, 7, a->job);
    bind_opt(st, 8, a->service);
    bind_text(st, 9, service_name);
    bind_opt(st, 10, a->replica);
    bind_opt(st, 11, a->lease);
    bind_opt(st, 12, (fl & AF_WIDTH) ? a->width : -1);
    sqlite3_bind_int(st, 13, a->n_gpus);
    bind_opt(st, 14, (fl & AF_DEADLINE) && a->deadline != TIDE_TIME_NEVER ? a->deadline : -1);
    if ((fl & AF_VALUE) && isfinite(a->value))
        sqlite3_bind_double(st, 15, a->value);
    else
        sqlite3_bind_null(st, 15);
    char *ids = NULL;
    if ((fl & AF_GPUS) && gpus && a->n_gpus > 0) {
        size_t cap = (size_t)a->n_gpus * 12 + 1, len = 0;
        ids = tide_xmalloc(cap);
        ids[0] = '\0';
        for (int k = 0; k < a->n_gpus; k++)
            len += (size_t)snprintf(ids + len, cap - len, k ? ",%d" : "%d", (int)gpus[k]);
    }
    bind_text(st, 16, ids);
    free(ids);
    if (run(s, st, err, "append action") < 0)
        return -1;
    s->next_seq++;
    return 0;
}

/* -------------------------------------------------------------- replay */

/* Strings of one batch of events, freed after the callback. */
typedef struct batch {
    tide_store_event_t *v;
    size_t n, cap;
    char **strs;
    size_t ns, caps;
    tide_store_action_rec_t *a;
    size_t na, capa;
} batch_t;

static const char *keep(batch_t *b, sqlite3_stmt *st, int i)
{
    const char *t = col_str(st, i);
    if (!t)
        return NULL;
    char *c = tide_xstrdup(t);
    TIDE_PUSH(b->strs, b->ns, b->caps, c);
    return c;
}

static void batch_clear(batch_t *b)
{
    for (size_t i = 0; i < b->ns; i++)
        free(b->strs[i]);
    b->ns = 0;
    b->n = 0;
    b->na = 0;
}

static void batch_free(batch_t *b)
{
    batch_clear(b);
    free(b->v);
    free(b->strs);
    free(b->a);
}

/* Read the event columns (EV_COLS starting at column 2) of the current row. */
static void event_from_row(batch_t *b, sqlite3_stmt *st)
{
    tide_store_event_t e;
    memset(&e, 0, sizeof e);
    e.seq = sqlite3_column_int64(st, 2);
    e.step = col_opt(st, 3) > 0 ? col_opt(st, 3) : 0;
    e.time_s = sqlite3_column_int64(st, 4);
    int kind = tide_store_event_kind_find(col_str(st, 5));
    e.ev.kind = kind < 0 ? TIDE_STORE_KIND_UNKNOWN : kind; /* never fed */
    e.job_id = keep(b, st, 6);
    e.ev.job = (int32_t)col_opt(st, 7);
    e.ev.service = (int32_t)col_opt(st, 8);
    e.service_name = keep(b, st, 9);
    e.ev.replica = (int32_t)col_opt(st, 10);
    e.ev.node = (int32_t)col_opt(st, 11);
    e.ev.phase = (int)(col_opt(st, 12) >= 0 ? col_opt(st, 12) : 0);
    e.ev.value = sqlite3_column_type(st, 13) == SQLITE_NULL ? 0 : sqlite3_column_double(st, 13);
    e.source = keep(b, st, 14);
    e.payload = keep(b, st, 15);
    if (e.ev.kind == TIDE_EV_JOB_SUBMIT && sqlite3_column_type(st, 16) != SQLITE_NULL) {
        e.spec.id = e.job_id;
        e.spec.team = keep(b, st, 16);
        e.spec.priority = sqlite3_column_int(st, 17);
        e.spec.gpus = sqlite3_column_int(st, 18);
        e.spec.gang_gpus = sqlite3_column_int(st, 19);
        e.spec.dp_min = sqlite3_column_int(st, 20);
        e.spec.duration_s = sqlite3_column_int64(st, 21);
        e.spec.ckpt_interval_s = sqlite3_column_int64(st, 22);
        e.spec.ckpt_s = sqlite3_column_int64(st, 23);
        e.spec.restore_s = sqlite3_column_int64(st, 24);
        e.spec.gpu_types = (uint32_t)sqlite3_column_int64(st, 25);
        e.spec.submit_s = sqlite3_column_int64(st, 26);
    }
    TIDE_PUSH(b->v, b->n, b->cap, e);
}

/* Point each submit's ev.job_spec at its spec (after the array stopped moving). */
static void batch_link(batch_t *b)
{
    for (size_t i = 0; i < b->n; i++)
        b->v[i].ev.job_spec = b->v[i].ev.kind == TIDE_EV_JOB_SUBMIT && b->v[i].spec.id
                                  ? &b->v[i].spec
                                  : NULL;
}

int tide_store_replay(tide_store_t *s, int64_t epoch, tide_store_step_fn fn, void *ctx,
                      tide_error_t *err)
{
    return tide_store_replay_after(s, epoch, -1, fn, ctx, err);
}

int tide_store_replay_after(tide_store_t *s, int64_t epoch, int64_t after, tide_store_step_fn fn,
                            void *ctx, tide_error_t *err)
{
    if (fault(s, err))
        return -1;
    sqlite3_stmt *se = q(s, Q_REPLAY_EV, err);
    if (!se)
        return -1;
    sqlite3_bind_int64(se, 1, epoch);
    sqlite3_bind_int64(se, 2, after);
    /* the action cursor needs its own statement: the cache holds one per query */
    sqlite3_stmt *sa = NULL;
    if (sqlite3_prepare_v2(s->db, sql_text[Q_REPLAY_ACT], -1, &sa, NULL) != SQLITE_OK) {
        sqlite3_reset(se);
        return db_err(s, err, "replay");
    }
    sqlite3_bind_int64(sa, 1, epoch);
    sqlite3_bind_int64(sa, 2, after);
    batch_t b = {0};
    int rc = sqlite3_step(se), arc = sqlite3_step(sa), ret = 0;
    while (rc == SQLITE_ROW) {
        int64_t step = sqlite3_column_int64(se, 0);
        tide_time_t t = sqlite3_column_int64(se, 1);
        batch_clear(&b);
        while (rc == SQLITE_ROW && sqlite3_column_int64(se, 0) == step) {
            if (sqlite3_column_type(se, 2) != SQLITE_NULL)
                event_from_row(&b, se);
            rc = sqlite3_step(se);
        }
        /* actions of earlier steps cannot exist (same ordering); skip defensively */
        while (arc == SQLITE_ROW && sqlite3_column_int64(sa, 0) < step)
            arc = sqlite3_step(sa);
        while (arc == SQLITE_ROW && sqlite3_column_int64(sa, 0) == step) {
            const char *k = col_str(sa, 1), *r = col_str(sa, 2);
            tide_store_action_rec_t a = {.kind = -1, .reason = TIDE_R_NONE};
            for (int i = 0; k && i < TIDE_ACT_KIND_COUNT; i++)
                if (!strcmp(tide_action_name(i), k))
                    a.kind = i;
            for (int i = 1; r && i < TIDE_R_COUNT; i++)
                if (!strcmp(tide_reason_name(i), r))
                    a.reason = i;
            a.job = (int32_t)col_opt(sa, 3);
            a.replica = (int32_t)col_opt(sa, 4);
            a.lease = (int32_t)col_opt(sa, 5);
            a.width = (int)col_opt(sa, 6);
            a.n_gpus = sqlite3_column_int(sa, 7);
            TIDE_PUSH(b.a, b.na, b.capa, a);
            arc = sqlite3_step(sa);
        }
        batch_link(&b);
        if ((ret = fn(ctx, step, t, b.v, b.n, b.a, b.na)) != 0)
            break;
    }
    if (!ret && (rc != SQLITE_DONE || (arc != SQLITE_DONE && arc != SQLITE_ROW)))
        ret = db_err(s, err, "replay");
    sqlite3_reset(se);
    sqlite3_finalize(sa);
    batch_free(&b);
    return ret;
}

int tide_store_pending(tide_store_t *s, tide_store_step_fn fn, void *ctx, tide_error_t *err)
{
    if (fault(s, err))
        return -1;
    sqlite3_stmt *st = q(s, Q_PENDING, err);
    if (!st)
        return -1;
    batch_t b = {0};
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        event_from_row(&b, st);
    sqlite3_reset(st);
    int ret = 0;
    if (rc != SQLITE_DONE)
        ret = db_err(s, err, "pending events");
    else if (b.n) {
        batch_link(&b);
        ret = fn(ctx, 0, 0, b.v, b.n, NULL, 0);
    }
    batch_free(&b);
    return ret;
}

/* ------------------------------------------------------------------ feed */

int tide_store_feed(tide_store_t *s, int64_t after, int limit, tide_store_feed_fn fn, void *ctx,
                    tide_error_t *err)
{
    if (fault(s, err))
        return -1;
    sqlite3_stmt *st = q(s, Q_FEED, err);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, after);
    sqlite3_bind_int(st, 2, limit > 0 ? limit : -1);
    int rc, n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        tide_store_feed_row_t r;
        memset(&r, 0, sizeof r);
        r.seq = sqlite3_column_int64(st, 0);
        r.step = col_opt(st, 1) > 0 ? col_opt(st, 1) : 0;
        r.time_s = sqlite3_column_int64(st, 2);
        r.is_action = sqlite3_column_int(st, 3);
        r.kind = col_str(st, 4);
        r.reason = col_str(st, 5);
        r.job_id = col_str(st, 6);
        r.service_name = col_str(st, 7);
        r.source = col_str(st, 8);
#define OPT(col, has, field)                                                                    \
    if (sqlite3_column_type(st, col) != SQLITE_NULL) {                                          \
        r.has = 1;                                                                              \
        r.field = sqlite3_column_int64(st, col);                                                \
    }
        OPT(9, has_replica, replica)
        OPT(10, has_lease, lease)
        OPT(11, has_width, width)
        OPT(12, has_gpus, gpus)
        OPT(13, has_deadline, deadline_s)
        OPT(15, has_node, node)
#undef OPT
        if (sqlite3_column_type(st, 14) != SQLITE_NULL) {
            r.has_value = 1;
            r.value = sqlite3_column_double(st, 14);
        }
        n++;
        if (fn(ctx, &r)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return db_err(s, err, "events");
    return n;
}

/* ----------------------------------------------------------- checkpoints */

int tide_store_checkpoint_add(tide_store_t *s, const char *job_id, tide_time_t t, int64_t step,
                              int64_t bytes, int64_t shards, int committed, double progress_s,
                              tide_error_t *err)
{
    if (fault(s, err))
        return -1;
    sqlite3_stmt *st = q(s, Q_CKPT_INS, err);
    if (!st)
        return -1;
    bind_text(st, 1, job_id);
    sqlite3_bind_int64(st, 2, t);
    bind_opt(st, 3, step);
    bind_opt(st, 4, bytes);
    bind_opt(st, 5, shards);
    sqlite3_bind_int(st, 6, committed ? 1 : 0);
    if (progress_s >= 0 && isfinite(progress_s))
        sqlite3_bind_double(st, 7, progress_s);
    else
        sqlite3_bind_null(st, 7);
    return run(s, st, err, "checkpoint");
}

int64_t tide_store_checkpoints_count(tide_store_t *s, const char *job_id, tide_error_t *err)
{
    if (fault(s, err))
        return -1;
    sqlite3_stmt *st = q(s, Q_CKPT_COUNT, err);
    if (!st)
        return -1;
    bind_text(st, 1, job_id);
    int rc = sqlite3_step(st);
    int64_t v = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_reset(st);
    if (rc != SQLITE_ROW)
        return db_err(s, err, "checkpoints");
    return v;
}

/* ----------------------------------------------------------------- usage */

int tide_store_usage_put(tide_store_t *s, tide_time_t t, const tide_store_usage_t *rows, size_t n,
                         tide_error_t *err)
{
    if (fault(s, err))
        return -1;
    for (size_t i = 0; i < n; i++) {
        sqlite3_stmt *st = q(s, Q_USAGE_INS, err);
        if (!st)
            return -1;
        sqlite3_bind_int64(st, 1, t);
        bind_text(st, 2, rows[i].owner_kind);
        bind_text(st, 3, rows[i].owner ? rows[i].owner : "");
        bind_text(st, 4, rows[i].cls);
        bind_text(st, 5, rows[i].state);
        bind_text(st, 6, rows[i].tier);
        sqlite3_bind_double(st, 7, rows[i].gpu_s);
        if (run(s, st, err, "usage") < 0)
            return -1;
    }
    return 0;
}

int tide_store_usage_at(tide_store_t *s, tide_time_t t, tide_time_t *at, tide_store_usage_fn fn,
                        void *ctx, tide_error_t *err)
{
    *at = -1;
    if (fault(s, err))
        return -1;
    sqlite3_stmt *st = q(s, Q_USAGE_AT, err);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, t);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        *at = sqlite3_column_int64(st, 0);
        tide_store_usage_t r = {.owner_kind = col_str(st, 1), .owner = col_str(st, 2),
                                .cls = col_str(st, 3), .state = col_str(st, 4),
                                .tier = col_str(st, 5), .gpu_s = sqlite3_column_double(st, 6)};
        if (fn(ctx, &r)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return db_err(s, err, "usage");
    return 0;
}

int tide_store_usage_last(tide_store_t *s, tide_time_t *at, tide_error_t *err)
{
    *at = -1;
    if (fault(s, err))
        return -1;
    sqlite3_stmt *st = q(s, Q_USAGE_LAST, err);
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        *at = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW)
        return db_err(s, err, "usage");
    return 0;
}

/* -------------------------------------------------------------- snapshots */

void tide_store_snapshot_checksum(const void *p, size_t n, char out[17])
{
    snprintf(out, 17, "%016llx", (unsigned long long)tide_hash_bytes(TIDE_FNV_INIT, p, n));
}

int tide_store_snapshot_put(tide_store_t *s, const tide_store_snapshot_t *snap, int keep,
                            tide_error_t *err)
{
    if (fault(s, err))
        return -1;
    char sum[17];
    tide_store_snapshot_checksum(snap->state, snap->n, sum);
    sqlite3_stmt *st = q(s, Q_SNAP_INS, err);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, snap->step);
    sqlite3_bind_int64(st, 2, snap->epoch);
    sqlite3_bind_int64(st, 3, snap->time_s);
    sqlite3_bind_int64(st, 4, snap->version);
    sqlite3_bind_text(st, 5, sum, -1, SQLITE_TRANSIENT);
    sqlite3_bind_blob64(st, 6, snap->state, (sqlite3_uint64)snap->n, SQLITE_STATIC);
    if (run(s, st, err, "snapshot") < 0)
        return -1;
    if (!(st = q(s, Q_SNAP_PRUNE, err)))
        return -1;
    sqlite3_bind_int64(st, 1, keep > 0 ? keep : 1);
    return run(s, st, err, "snapshot prune");
}

int tide_store_snapshots(tide_store_t *s, int64_t epoch, tide_store_snapshot_fn fn, void *ctx,
                         tide_error_t *err)
{
    if (fault(s, err))
        return -1;
    sqlite3_stmt *st = q(s, Q_SNAP_LIST, err);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, epoch);
    int rc, ret = 0;
    while (!ret && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        tide_store_snapshot_t snap = {
            .step = sqlite3_column_int64(st, 0), .epoch = sqlite3_column_int64(st, 1),
            .time_s = sqlite3_column_int64(st, 2), .version = sqlite3_column_int64(st, 3),
            .state = sqlite3_column_blob(st, 5), .n = (size_t)sqlite3_column_bytes(st, 5)};
        char sum[17];
        tide_store_snapshot_checksum(snap.state, snap.n, sum);
        const char *want = col_str(st, 4);
        snap.intact = want && !strcmp(want, sum);
        ret = fn(ctx, &snap);
    }
    if (!ret && rc != SQLITE_DONE)
        ret = db_err(s, err, "snapshots");
    sqlite3_reset(st);
    return ret;
}
