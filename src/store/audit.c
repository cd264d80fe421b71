/* The audit trail's rows (schema.sql, migration 2): append, list, prune. */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"
#include "util/util.h"

static void bind_str(sqlite3_stmt *st, int i, const char *v, int n)
{
    sqlite3_bind_text(st, i, v ? v : "", v ? n : 0, SQLITE_TRANSIENT);
}

/* Bytes of s to keep: at most max, cut before a UTF-8 continuation. */
static int cut_utf8(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return (int)len;
    size_t n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return (int)n;
}

static int prep(tide_store_t *s, const char *sql, sqlite3_stmt **st, tide_error_t *err)
{
    if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK)
        return tide__store_db_err(s, err, "audit");
    return 0;
}

int tide_store_audit_append(tide_store_t *s, tide_store_audit_t *a, tide_error_t *err)
{
    /* one row per write: prepared once, kept with the connection */
    if (!s->audit_ins &&
        sqlite3_prepare_v3(s->db,
                           "INSERT INTO audit(time, team, role, peer, method, path, kind, request, "
                           "bytes, digest, status, error, message) "
                           "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, SQLITE_PREPARE_PERSISTENT, &s->audit_ins, NULL) != SQLITE_OK) {
        s->audit_ins = NULL;
        return tide__store_db_err(s, err, "audit");
    }
    sqlite3_stmt *st = s->audit_ins;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    const char *body = a->request ? a->request : "";
    size_t len = a->bytes >= 0 ? (size_t)a->bytes : strlen(body);
    char digest[65];
    tide_sha256_hex(body, len, digest);
    sqlite3_bind_double(st, 1, a->time);
    bind_str(st, 2, a->team, -1);
    bind_str(st, 3, a->role, -1);
    bind_str(st, 4, a->peer, -1);
    bind_str(st, 5, a->method, -1);
    bind_str(st, 6, a->path, -1);
    bind_str(st, 7, a->kind, -1);
    bind_str(st, 8, body, cut_utf8(body, len, TIDE_STORE_AUDIT_BODY));
    sqlite3_bind_int64(st, 9, (sqlite3_int64)len);
    bind_str(st, 10, digest, -1);
    sqlite3_bind_int(st, 11, a->status);
    if (a->error)
        bind_str(st, 12, a->error, -1);
    if (a->message)
        bind_str(st, 13, a->message, -1);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return tide__store_db_err(s, err, "audit");
    a->id = sqlite3_last_insert_rowid(s->db);
    return 0;
}

static const char *col(sqlite3_stmt *st, int i)
{
    const char *v = (const char *)sqlite3_column_text(st, i);
    return v ? v : "";
}

int tide_store_audit_list(tide_store_t *s, const tide_store_audit_query_t *q,
                          tide_store_audit_fn fn, void *ctx, tide_error_t *err)
{
    sqlite3_stmt *st;
    if (prep(s, "SELECT id, time, team, role, peer, method, path, kind, request, bytes, digest, "
                "status, error, message FROM audit WHERE time >= ?1 AND id > ?2 "
                "AND (?3 IS NULL OR team = ?3) AND (?4 IS NULL OR kind = ?4) "
                "ORDER BY id LIMIT ?5",
             &st, err) < 0)
        return -1;
    sqlite3_bind_double(st, 1, q->since);
    sqlite3_bind_int64(st, 2, q->after);
    if (q->team)
        bind_str(st, 3, q->team, -1);
    if (q->kind)
        bind_str(st, 4, q->kind, -1);
    sqlite3_bind_int(st, 5, q->limit > 0 ? q->limit : -1);
    int n = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        tide_store_audit_t a = {
            .id = sqlite3_column_int64(st, 0), .time = sqlite3_column_double(st, 1),
            .team = col(st, 2), .role = col(st, 3), .peer = col(st, 4), .method = col(st, 5),
            .path = col(st, 6), .kind = col(st, 7), .request = col(st, 8),
            .bytes = sqlite3_column_int64(st, 9), .digest = col(st, 10),
            .status = sqlite3_column_int(st, 11),
            .error = (const char *)sqlite3_column_text(st, 12),
            .message = (const char *)sqlite3_column_text(st, 13)};
        n++;
        if (fn && fn(ctx, &a)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return tide__store_db_err(s, err, "audit");
    return n;
}

int64_t tide_store_audit_prune(tide_store_t *s, double before, int64_t keep_rows,
                               tide_error_t *err)
{
    sqlite3_stmt *st;
    if (prep(s, "DELETE FROM audit WHERE (?1 > 0 AND time < ?1) OR (?2 > 0 AND id <= "
                "(SELECT max(id) FROM audit) - ?2)",
             &st, err) < 0)
        return -1;
    sqlite3_bind_double(st, 1, before);
    sqlite3_bind_int64(st, 2, keep_rows);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return tide__store_db_err(s, err, "audit");
    return sqlite3_changes(s->db);
}
