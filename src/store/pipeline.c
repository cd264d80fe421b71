/* The model pipeline's rows (migration 3 of schema.sql): JSON documents by
 * kind and key, and the pipeline's event log. */
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "util/util.h"

static sqlite3_stmt *prep(tide_store_t *s, const char *sql, tide_error_t *err)
{
    return tide__store_prep(s, sql, "pipeline", err);
}

static int finish(tide_store_t *s, sqlite3_stmt *st, int rc, tide_error_t *err)
{
    return tide__store_finish(s, st, rc, "pipeline", err);
}

int tide_store_pipe_put(tide_store_t *s, const char *kind, const char *key, const char *value,
                        tide_error_t *err)
{
    sqlite3_stmt *st = prep(s, "INSERT OR REPLACE INTO pipeline(kind, key, value) VALUES (?, ?, ?)",
                            err);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, kind, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, value, -1, SQLITE_TRANSIENT);
    return finish(s, st, sqlite3_step(st), err);
}

int tide_store_pipe_list(tide_store_t *s, const char *kind, tide_store_pipe_fn fn, void *ctx,
                         tide_error_t *err)
{
    sqlite3_stmt *st = prep(s, "SELECT key, value FROM pipeline WHERE kind = ? ORDER BY key", err);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, kind, -1, SQLITE_TRANSIENT);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (fn(ctx, (const char *)sqlite3_column_text(st, 0),
               (const char *)sqlite3_column_text(st, 1)) < 0) {
            sqlite3_finalize(st);
            return tide_errf(err, TIDE_EINVAL, "pipeline: a stored %s row is not valid", kind);
        }
    return finish(s, st, rc, err);
}

int tide_store_pipe_event_add(tide_store_t *s, tide_time_t t, const char *model, int version,
                              const char *kind, const char *detail, tide_error_t *err)
{
    sqlite3_stmt *st = prep(s,
                            "INSERT INTO pipeline_events(time_s, model, version, kind, detail) "
                            "VALUES (?, ?, ?, ?, ?)",
                            err);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, t);
    sqlite3_bind_text(st, 2, model, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 3, version);
    sqlite3_bind_text(st, 4, kind, -1, SQLITE_TRANSIENT);
    if (detail)
        sqlite3_bind_text(st, 5, detail, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 5);
    return finish(s, st, sqlite3_step(st), err);
}

int tide_store_pipe_events(tide_store_t *s, const char *model, int limit,
                           tide_store_pipe_event_fn fn, void *ctx, tide_error_t *err)
{
    sqlite3_stmt *st = prep(s,
                            "SELECT time_s, version, kind, detail FROM (SELECT * FROM "
                            "pipeline_events WHERE model = ? ORDER BY id DESC LIMIT ?) ORDER BY id",
                            err);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, model, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, limit);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        fn(ctx, sqlite3_column_int64(st, 0), sqlite3_column_int(st, 1),
           (const char *)sqlite3_column_text(st, 2), (const char *)sqlite3_column_text(st, 3));
    return finish(s, st, rc, err);
}
