/* The store's files: their identity while open (a deleted or replaced
 * database or WAL stops writes), integrity at open (quick_check), and
 * check / backup / restore with SQLite's online backup API. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/internal.h"
#include "store/store.h"
#include "util/util.h"

static const char *const fid_suffix[TIDE__FID_COUNT] = {"", "-wal", "-shm"};
static const char *const fid_what[TIDE__FID_COUNT] = {"the database file", "its write-ahead log",
                                                      "its shared-memory index"};

/* ---------------------------------------------------------------- identity */

void tide__store_fid_record(tide_store_t *s)
{
    if (!s->path)
        return;
    for (int i = 0; i < TIDE__FID_COUNT; i++) {
        char p[PATH_MAX];
        struct stat st;
        if (s->fid[i].have || snprintf(p, sizeof p, "%s%s", s->path, fid_suffix[i]) >= (int)sizeof p ||
            stat(p, &st) < 0)
            continue;
        s->fid[i] = (tide__store_fid_t){.have = 1, .dev = st.st_dev, .ino = st.st_ino,
                                        .size = st.st_size};
    }
}

/* Why the files are not the ones opened ("" when they are; *which = the
 * file). Returns 1 when reading the database is no longer safe (a -shm that
 * stays truncated). */
static int fid_compare(tide_store_t *s, char *why, size_t n, int *which)
{
    int unsafe = 0;
    why[0] = '\0';
    for (int i = 0; i < TIDE__FID_COUNT && !why[0]; i++) {
        *which = i;
        char p[PATH_MAX];
        struct stat st;
        tide__store_fid_t *f = &s->fid[i];
        snprintf(p, sizeof p, "%s%s", s->path, fid_suffix[i]);
        if (!f->have)
            continue; /* recorded below once it exists */
        if (stat(p, &st) < 0)
            snprintf(why, n, "%s %s was %s", fid_what[i], p,
                     errno == ENOENT ? "deleted" : strerror(errno));
        else if (st.st_dev != f->dev || st.st_ino != f->ino)
            snprintf(why, n, "%s %s was replaced by another file", fid_what[i], p);
        else if (i == TIDE__FID_SHM && st.st_size < f->size) {
            /* SQLite maps it: touching a page past the new end is SIGBUS.
             * Grow it back (zeros make SQLite rebuild the index from the
             * WAL) so that the rescue below can read. */
            snprintf(why, n, "%s %s was truncated", fid_what[i], p);
            if (truncate(p, f->size) < 0 && (unsafe = 1))
                snprintf(why, n, "%s %s was truncated (and cannot be grown back: %s)",
                         fid_what[i], p, strerror(errno));
        }
        else
            f->size = st.st_size;
    }
    if (!why[0])
        tide__store_fid_record(s);
    return unsafe;
}

/* Save what the open connection holds to PATH.rescued[.N]. */
static int backup_db(sqlite3 *src, const char *dest, tide_error_t *err);

static int rescue(tide_store_t *s, char *out, size_t n)
{
    for (int k = 0; k < 10; k++) {
        if (k == 0)
            snprintf(out, n, "%s.rescued", s->path);
        else
            snprintf(out, n, "%s.rescued.%d", s->path, k);
        if (access(out, F_OK) == 0)
            continue;
        return backup_db(s->db, out, NULL);
    }
    return -1;
}

/* Rename file i to NAME.lost if it is still the one recorded. */
static void set_aside(tide_store_t *s, int i)
{
    char p[PATH_MAX], q[PATH_MAX + 8];
    struct stat st;
    snprintf(p, sizeof p, "%s%s", s->path, fid_suffix[i]);
    snprintf(q, sizeof q, "%s.lost", p);
    if (s->fid[i].have && stat(p, &st) == 0 && st.st_dev == s->fid[i].dev &&
        st.st_ino == s->fid[i].ino)
        rename(p, q);
}

int tide_store_check_identity(tide_store_t *s, tide_error_t *err)
{
    if (!s->path)
        return 0;
    if (s->lost) {
        s->stats.errors++;
        return tide_errf(err, TIDE_EIO, "%s", s->lost_msg);
    }
    char why[PATH_MAX + 96];
    int which = 0;
    int unsafe = fid_compare(s, why, sizeof why, &which);
    if (!why[0])
        return 0;
    s->lost = 1;
    s->stats.errors++;
    if (s->in_tx) {
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        s->in_tx = 0;
    }
    char saved[PATH_MAX + 64] = "", rp[PATH_MAX];
    if (!unsafe && rescue(s, rp, sizeof rp) == 0)
        snprintf(saved, sizeof saved, "; everything committed was saved to %s", rp);
    if (which == TIDE__FID_DB) {
        /* our -wal and -shm belong to the old file: SQLite would apply that
         * log to whatever database now has the name (it keeps both open:
         * renaming them does not disturb this connection) */
        set_aside(s, TIDE__FID_WAL);
        set_aside(s, TIDE__FID_SHM);
    }
    int w = snprintf(s->lost_msg, sizeof s->lost_msg,
             "database %s: %s since it was opened: writes are refused (nothing more is "
             "acknowledged)%s%s; stop tide serve, put a good copy in place (tide db restore) and "
             "restart",
             s->path, why, saved,
             which == TIDE__FID_DB ? "; its -wal and -shm were renamed *.lost" : "");
    if (w < 0)
        snprintf(s->lost_msg, sizeof s->lost_msg, "database %s: files lost", s->path);
    return tide_errf(err, TIDE_EIO, "%s", s->lost_msg);
}

int tide_store_writable(const tide_store_t *s) { return !s->lost; }

void tide_store_busy_timeout(tide_store_t *s, int ms)
{
    sqlite3_busy_timeout(s->db, ms > 0 ? ms : 0);
}

void tide_store_stats(const tide_store_t *s, tide_store_stats_t *out)
{
    *out = s->stats;
    out->writable = !s->lost;
}

/* -------------------------------------------------------------- integrity */

/* Run quick_check / integrity_check on db; fn gets each problem. Returns the
 * number of problems or -1 (the check could not run; err). */
static int run_check(sqlite3 *db, int full, tide_store_line_fn fn, void *ctx, tide_error_t *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, full ? "PRAGMA integrity_check" : "PRAGMA quick_check", -1, &st,
                           NULL) != SQLITE_OK)
        return tide_errf(err, TIDE_EIO, "%s", sqlite3_errmsg(db));
    int n = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        if (t && !strcmp(t, "ok"))
            continue;
        n++;
        if (fn)
            fn(ctx, t ? t : "(null)");
    }
    if (rc != SQLITE_DONE) {
        tide_errf(err, TIDE_EIO, "%s", sqlite3_errmsg(db));
        n = -1;
    }
    sqlite3_finalize(st);
    return n;
}

/* Every snapshot's checksum (a database older than the table has none).
 * Returns the number of bad snapshots; fn gets a line for each. */
static int snapshots_check(sqlite3 *db, tide_store_line_fn fn, void *ctx)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT step, checksum, state FROM snapshots ORDER BY step", -1, &st,
                           NULL) != SQLITE_OK)
        return 0; /* no snapshots table */
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        char sum[17], line[200];
        tide_store_snapshot_checksum(sqlite3_column_blob(st, 2), (size_t)sqlite3_column_bytes(st, 2),
                                     sum);
        const char *want = (const char *)sqlite3_column_text(st, 1);
        if (want && !strcmp(want, sum))
            continue;
        n++;
        snprintf(line, sizeof line,
                 "snapshot after step %lld: checksum mismatch (recovery ignores it and replays "
                 "the log instead)",
                 (long long)sqlite3_column_int64(st, 0));
        if (fn)
            fn(ctx, line);
    }
    sqlite3_finalize(st);
    return n;
}

typedef struct first_lines {
    char text[300];
    int n;
} first_lines_t;

static void keep_first(void *ctx, const char *line)
{
    first_lines_t *f = ctx;
    if (f->n++ < 2) {
        size_t l = strlen(f->text);
        snprintf(f->text + l, sizeof f->text - l, "%s%s", l ? "; " : "", line);
    }
}

int tide__store_open_checks(tide_store_t *s, const char *path, tide_error_t *err)
{
    first_lines_t fl = {.text = "", .n = 0};
    tide_error_t e = {0};
    int n = run_check(s->db, 0, keep_first, &fl, &e);
    if (n == 0)
        return 0;
    s->stats.errors++;
    return tide_errf(err, TIDE_EIO,
                     "%s (PRAGMA quick_check): refused so that nothing is written into it; stop "
                     "tide, then restore a backup (tide db restore --db %s BACKUP) or move %s and "
                     "its -wal aside to start empty; tide db check --db %s --full lists every "
                     "problem",
                     n < 0 ? e.msg : fl.text[0] ? fl.text : "corrupt", path, path, path);
}

/* ----------------------------------------------------------------- backup */

static int fsync_path(const char *p, int dir)
{
    int fd = open(p, (dir ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

static void dir_of(const char *p, char *out, size_t n)
{
    const char *sl = strrchr(p, '/');
    if (!sl)
        snprintf(out, n, ".");
    else if (sl == p)
        snprintf(out, n, "/");
    else
        snprintf(out, n, "%.*s", (int)(sl - p), p);
}

/* Copy src's main database into DEST.tmp, check it, sync, rename to dest. */
static int backup_db(sqlite3 *src, const char *dest, tide_error_t *err)
{
    char tmp[PATH_MAX], dir[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", dest) >= (int)sizeof tmp)
        return tide_errf(err, TIDE_EINVAL, "%s: path too long", dest);
    unlink(tmp);
    sqlite3 *d = NULL;
    if (sqlite3_open_v2(tmp, &d, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        tide_errf(err, TIDE_EIO, "%s: %s", tmp, d ? sqlite3_errmsg(d) : "cannot create");
        sqlite3_close(d);
        return -1;
    }
    sqlite3_backup *b = sqlite3_backup_init(d, "main", src, "main");
    int rc = b ? SQLITE_OK : sqlite3_errcode(d);
    for (int busy = 0; b && busy < 1000;) {
        rc = sqlite3_backup_step(b, 256);
        if (rc == SQLITE_DONE)
            break;
        if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
            busy++;
            sqlite3_sleep(10);
        } else if (rc != SQLITE_OK) {
            break;
        }
    }
    if (b)
        sqlite3_backup_finish(b);
    int problems = 0;
    /* a backup is one self-contained file (tide_store_open turns WAL back on) */
    if (rc == SQLITE_DONE)
        sqlite3_exec(d, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL);
    if (rc != SQLITE_DONE)
        tide_errf(err, TIDE_EIO, "backup to %s: %s", dest,
                  rc == SQLITE_BUSY ? "the database stayed busy" : sqlite3_errstr(rc));
    else if ((problems = run_check(d, 0, NULL, NULL, err)) != 0)
        tide_errf(err, TIDE_EIO, "backup to %s: the copy fails its integrity check", dest);
    sqlite3_close(d);
    if (rc != SQLITE_DONE || problems != 0) {
        unlink(tmp);
        return -1;
    }
    dir_of(dest, dir, sizeof dir);
    if (fsync_path(tmp, 0) < 0 || rename(tmp, dest) < 0 || fsync_path(dir, 1) < 0) {
        tide_errf(err, TIDE_EIO, "backup to %s: %s", dest, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int tide_store_backup(tide_store_t *s, const char *dest, tide_error_t *err)
{
    if (s->in_tx)
        return tide_errf(err, TIDE_ESTATE, "database: backup inside a transaction");
    if (backup_db(s->db, dest, err) < 0) {
        s->stats.errors++;
        return -1;
    }
    return 0;
}

/* Open an existing database file read-only. */
static sqlite3 *open_ro(const char *path, tide_error_t *err)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        tide_errf(err, errno == ENOENT ? TIDE_ENOENT : TIDE_EIO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        tide_errf(err, TIDE_EINVAL, "%s: not a regular file", path);
        return NULL;
    }
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        tide_errf(err, TIDE_EIO, "%s: %s", path, db ? sqlite3_errmsg(db) : "cannot open");
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, 5000);
    return db;
}

int tide_store_backup_file(const char *src, const char *dest, tide_error_t *err)
{
    sqlite3 *db = open_ro(src, err);
    if (!db)
        return -1;
    int rc = backup_db(db, dest, err);
    sqlite3_close(db);
    return rc;
}

int tide_store_check_file(const char *path, int full, tide_store_line_fn fn, void *ctx,
                          tide_error_t *err)
{
    sqlite3 *db = open_ro(path, err);
    if (!db)
        return -1;
    int n = run_check(db, full, fn, ctx, err);
    if (n < 0)
        tide_err_prefix(err, "%s: ", path);
    sqlite3_close(db);
    return n;
}

int tide_store_check_snapshots_file(const char *path, tide_store_line_fn fn, void *ctx,
                                    tide_error_t *err)
{
    sqlite3 *db = open_ro(path, err);
    if (!db)
        return -1;
    int n = snapshots_check(db, fn, ctx);
    sqlite3_close(db);
    return n;
}

/* ---------------------------------------------------------------- restore */

/* Does another process hold a lock on path (SQLite locks the database and
 * its -shm while a connection is open)? The locker's pid or 0. */
static long locked_by(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    long pid = fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK ? (long)fl.l_pid : 0;
    close(fd);
    return pid > 0 ? pid : pid < 0 ? 1 : 0;
}

/* The backup must be a sound tide database this build understands. */
static int restore_source_ok(const char *backup, tide_error_t *err)
{
    first_lines_t fl = {.text = "", .n = 0};
    int n = tide_store_check_file(backup, 0, keep_first, &fl, err);
    if (n < 0)
        return -1;
    if (n > 0)
        return tide_errf(err, TIDE_EINVAL, "%s fails its integrity check (%s): not restored",
                         backup, fl.text);
    sqlite3 *db = open_ro(backup, err);
    if (!db)
        return -1;
    sqlite3_stmt *st = NULL;
    int v = -1;
    if (sqlite3_prepare_v2(db, "SELECT max(version) FROM schema_version", -1, &st, NULL) ==
            SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (v <= 0)
        return tide_errf(err, TIDE_EINVAL, "%s is not a tide database (no schema_version)",
                         backup);
    if (v > tide_store_schema_latest())
        return tide_errf(err, TIDE_ESTATE,
                         "%s has schema version %d, newer than this tide (%d): upgrade tide",
                         backup, v, tide_store_schema_latest());
    return 0;
}

/* Move path and its -wal to PATH.pre-restore[.N] (-wal alongside, so SQLite
 * still finds it); drop the -shm. */
static int move_aside(const char *path, char *moved, size_t n, tide_error_t *err)
{
    char p[PATH_MAX], q[PATH_MAX];
    for (int k = 0; k < 100; k++) {
        if (k == 0)
            snprintf(moved, n, "%s.pre-restore", path);
        else
            snprintf(moved, n, "%s.pre-restore.%d", path, k);
        snprintf(q, sizeof q, "%s-wal", moved);
        if (access(moved, F_OK) == 0 || access(q, F_OK) == 0)
            continue;
        if (rename(path, moved) < 0)
            return tide_errf(err, TIDE_EIO, "moving %s to %s: %s", path, moved, strerror(errno));
        snprintf(p, sizeof p, "%s-wal", path);
        if (access(p, F_OK) == 0 && rename(p, q) < 0)
            return tide_errf(err, TIDE_EIO, "moving %s to %s: %s", p, q, strerror(errno));
        snprintf(p, sizeof p, "%s-shm", path);
        unlink(p);
        return 0;
    }
    return tide_errf(err, TIDE_EEXIST, "%s.pre-restore .. .99 all exist: remove some", path);
}

int tide_store_restore(const char *backup, const char *path, char *moved_to, size_t moved_n,
                       tide_error_t *err)
{
    char shm[PATH_MAX], moved[PATH_MAX] = "";
    if (moved_to && moved_n)
        moved_to[0] = '\0';
    if (restore_source_ok(backup, err) < 0)
        return -1;
    snprintf(shm, sizeof shm, "%s-shm", path);
    long pid = locked_by(path);
    if (!pid)
        pid = locked_by(shm);
    if (pid)
        return tide_errf(err, TIDE_ESTATE,
                         "%s is open in another process (pid %ld): stop tide serve first", path,
                         pid);
    if (access(path, F_OK) == 0 && move_aside(path, moved, sizeof moved, err) < 0)
        return -1;
    if (tide_store_backup_file(backup, path, err) < 0) {
        if (moved[0] && rename(moved, path) == 0) {
            char a[PATH_MAX + 8], b[PATH_MAX];
            snprintf(a, sizeof a, "%s-wal", moved);
            snprintf(b, sizeof b, "%s-wal", path);
            if (access(a, F_OK) == 0 && rename(a, b) < 0)
                tide_err_prefix(err, "(%s could not be moved back) ", a);
        }
        return -1;
    }
    if (moved_to && moved_n)
        snprintf(moved_to, moved_n, "%s", moved);
    return 0;
}
