/* The store's files (src/store/files.c): a deleted or replaced database, a
 * deleted WAL and a truncated -shm are detected before the next write is
 * acknowledged, and what the store still holds is rescued; a corrupt page
 * and an unwritable -shm are refused at open with the fix; backup and
 * restore round-trip; restore refuses a database another process has open. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sqlite3.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/store.h"

typedef struct fx {
    char dir[64];
    char path[128];
    char buf[256];
} fx_t;

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/tide-storef-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/t.db", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", f->dir);
    free(f);
    return 0;
}

/* f->path with a suffix (in f->buf). */
static const char *with(fx_t *f, const char *suffix)
{
    snprintf(f->buf, sizeof f->buf, "%s%s", f->path, suffix);
    return f->buf;
}

static tide_store_t *open_ok(const char *path)
{
    tide_error_t err = {0};
    tide_store_t *s = tide_store_open(path, &err);
    if (!s)
        fail_msg("open %s: %s", path, err.msg);
    return s;
}

/* Insert job id in its own transaction. */
static int add_job(tide_store_t *s, const char *id, tide_error_t *err)
{
    tide_store_job_t j = {.spec = {.id = id, .team = "t", .priority = 2, .gpus = 8,
                                   .gang_gpus = 8, .dp_min = 1, .duration_s = 3600},
                          .submitted_s = 1, .updated_s = 1};
    if (tide_store_begin(s, err) < 0)
        return -1;
    if (tide_store_job_insert(s, &j, err) < 0) {
        tide_store_rollback(s);
        return -1;
    }
    return tide_store_commit(s, err);
}

static int has_job(const char *path, const char *id)
{
    tide_store_t *s = open_ok(path);
    tide_store_job_t j;
    int found = tide_store_job_get(s, id, &j, NULL) == 0;
    if (found)
        tide_store_job_free(&j);
    tide_store_close(s);
    return found;
}

/* ------------------------------------------------------------- identity */

static void test_deleted_db(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    tide_store_t *s = open_ok(f->path);
    assert_int_equal(add_job(s, "before", &err), 0);
    assert_int_equal(tide_store_check_identity(s, &err), 0);
    assert_int_equal(unlink(f->path), 0);
    assert_int_equal(add_job(s, "after", &err), -1);
    assert_int_equal(err.code, TIDE_EIO);
    assert_non_null(strstr(err.msg, "was deleted"));
    assert_non_null(strstr(err.msg, ".rescued"));
    assert_int_equal(tide_store_writable(s), 0);
    assert_int_equal(tide_store_ping(s, &err), -1); /* health says so too */
    /* sticky: even the same files again do not make it writable */
    assert_int_equal(tide_store_begin(s, &err), -1);
    tide_store_stats_t st;
    tide_store_stats(s, &st);
    assert_int_equal(st.writable, 0);
    assert_true(st.errors >= 3);
    assert_int_equal(st.commits, 1);
    /* reads still work from the open file */
    tide_store_job_t j;
    assert_int_equal(tide_store_job_get(s, "before", &j, &err), 0);
    tide_store_job_free(&j);
    tide_store_close(s);
    assert_true(has_job(with(f, ".rescued"), "before"));
    assert_int_equal(access(f->path, F_OK), -1); /* nothing recreated it */
}

static void test_replaced_db_at_commit(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    tide_store_t *s = open_ok(f->path);
    assert_int_equal(add_job(s, "j1", &err), 0);
    /* a second, different database moved over the path mid-transaction */
    char other[160];
    snprintf(other, sizeof other, "%s/other.db", f->dir);
    tide_store_close(open_ok(other));
    tide_store_job_t j = {.spec = {.id = "j2", .team = "t", .gpus = 8, .gang_gpus = 8,
                                   .dp_min = 1, .duration_s = 60}};
    assert_int_equal(tide_store_begin(s, &err), 0);
    assert_int_equal(tide_store_job_insert(s, &j, &err), 0);
    assert_int_equal(rename(other, f->path), 0);
    assert_int_equal(tide_store_commit(s, &err), -1);
    assert_non_null(strstr(err.msg, "replaced by another file"));
    assert_int_equal(tide_store_in_tx(s), 0);
    tide_store_stats_t st;
    tide_store_stats(s, &st);
    assert_int_equal(st.commit_errors, 1);
    tide_store_close(s);
    /* the rescued copy has j1 and not the refused j2; the new file has neither */
    assert_true(has_job(with(f, ".rescued"), "j1"));
    assert_false(has_job(with(f, ".rescued"), "j2"));
    assert_false(has_job(f->path, "j1"));
}

static void test_deleted_wal(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    tide_store_t *s = open_ok(f->path);
    assert_int_equal(add_job(s, "in-wal", &err), 0); /* not checkpointed yet */
    assert_int_equal(unlink(with(f, "-wal")), 0);
    assert_int_equal(tide_store_begin(s, &err), -1);
    assert_non_null(strstr(err.msg, "write-ahead log"));
    assert_non_null(strstr(err.msg, "deleted"));
    tide_store_close(s);
    /* the job lived only in the deleted WAL: the rescue has it */
    assert_true(has_job(with(f, ".rescued"), "in-wal"));
}

static void test_truncated_shm(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    tide_store_t *s = open_ok(f->path);
    assert_int_equal(add_job(s, "a", &err), 0);
    assert_int_equal(truncate(with(f, "-shm"), 0), 0);
    /* detected (and grown back) before SQLite touches the mapping: no SIGBUS */
    assert_int_equal(tide_store_ping(s, &err), -1);
    assert_non_null(strstr(err.msg, "truncated"));
    tide_store_close(s);
    assert_true(has_job(with(f, ".rescued"), "a"));
}

static void test_memory_db_has_no_files(void **state)
{
    (void)state;
    tide_error_t err = {0};
    tide_store_t *s = open_ok(":memory:");
    assert_int_equal(tide_store_check_identity(s, &err), 0);
    assert_int_equal(add_job(s, "m", &err), 0);
    assert_int_equal(tide_store_writable(s), 1);
    tide_store_close(s);
}

/* ------------------------------------------------------------ integrity */

static void fill(tide_store_t *s, int n)
{
    tide_error_t err = {0};
    char id[32];
    for (int i = 0; i < n; i++) {
        snprintf(id, sizeof id, "job-%05d-with-a-longer-id", i);
        assert_int_equal(add_job(s, id, &err), 0);
    }
}

static void count_line(void *ctx, const char *line)
{
    (void)line;
    ++*(int *)ctx;
}

static void test_corrupt_page_refused(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    tide_store_t *s = open_ok(f->path);
    fill(s, 400);
    tide_store_close(s); /* checkpoints: everything is in the main file */
    assert_int_equal(tide_store_check_file(f->path, 0, NULL, NULL, &err), 0);
    /* a copy with garbage in the root page of an index on jobs */
    char copy[160];
    snprintf(copy, sizeof copy, "%s/copy.db", f->dir);
    assert_int_equal(tide_store_backup_file(f->path, copy, &err), 0);
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open_v2(copy, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT rootpage FROM sqlite_master WHERE type = "
                                            "'index' AND tbl_name = 'jobs' LIMIT 1",
                                        -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int page = sqlite3_column_int(st, 0), psize = 4096;
    sqlite3_finalize(st);
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA page_size", -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW)
        psize = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    assert_true(page > 1);
    int fd = open(copy, O_WRONLY);
    assert_true(fd >= 0);
    char junk[512];
    memset(junk, 0xA5, sizeof junk);
    assert_int_equal(pwrite(fd, junk, sizeof junk, (off_t)(page - 1) * psize + 16),
                     (ssize_t)sizeof junk);
    close(fd);
    s = tide_store_open(copy, &err);
    assert_null(s);
    assert_int_equal(err.code, TIDE_EIO);
    assert_non_null(strstr(err.msg, "quick_check"));
    assert_non_null(strstr(err.msg, "tide db restore"));
    int lines = 0;
    assert_true(tide_store_check_file(copy, 1, count_line, &lines, &err) != 0);
    /* a file that is no database at all */
    char junkdb[160];
    snprintf(junkdb, sizeof junkdb, "%s/junk.db", f->dir);
    FILE *j = fopen(junkdb, "w");
    assert_non_null(j);
    for (int i = 0; i < 200; i++)
        fputs("this is not a database\n", j);
    fclose(j);
    assert_null(tide_store_open(junkdb, &err));
    assert_non_null(strstr(err.msg, "tide db restore"));
    assert_int_equal(tide_store_check_file(junkdb, 0, NULL, NULL, &err), -1);
    assert_int_equal(tide_store_check_file("/nonexistent/x.db", 0, NULL, NULL, &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
}

static void test_unwritable_shm_refused_at_open(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    tide_store_close(open_ok(f->path));
    /* a -shm SQLite cannot open for writing (a directory fails for root too):
     * without the check open succeeded and every write failed later */
    assert_int_equal(mkdir(with(f, "-shm"), 0755), 0);
    tide_store_t *s = tide_store_open(f->path, &err);
    assert_null(s);
    assert_int_equal(err.code, TIDE_EIO);
    assert_non_null(strstr(err.msg, "write lock"));
    assert_non_null(strstr(err.msg, "-shm"));
}

/* ------------------------------------------------------- backup, restore */

static void test_backup_restore_roundtrip(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    char bak[160], moved[256];
    snprintf(bak, sizeof bak, "%s/backup.db", f->dir);
    tide_store_t *s = open_ok(f->path);
    fill(s, 30);
    assert_int_equal(tide_store_begin(s, &err), 0);
    assert_int_equal(tide_store_backup(s, bak, &err), -1); /* not inside a transaction */
    assert_int_equal(err.code, TIDE_ESTATE);
    tide_store_rollback(s);
    assert_int_equal(tide_store_backup(s, bak, &err), 0);
    assert_int_equal(add_job(s, "after-backup", &err), 0);
    tide_store_close(s);
    assert_int_equal(access(with(f, ".tmp"), F_OK), -1);
    assert_int_equal(tide_store_check_file(bak, 1, NULL, NULL, &err), 0);

    assert_int_equal(tide_store_restore(bak, f->path, moved, sizeof moved, &err), 0);
    assert_string_equal(moved, with(f, ".pre-restore"));
    assert_true(has_job(f->path, "job-00029-with-a-longer-id"));
    assert_false(has_job(f->path, "after-backup"));
    assert_true(has_job(moved, "after-backup")); /* the old one is kept */
    /* again: the next name is free */
    assert_int_equal(tide_store_restore(bak, f->path, moved, sizeof moved, &err), 0);
    assert_string_equal(moved, with(f, ".pre-restore.1"));
    /* restore into a path with no database yet */
    char fresh[160];
    snprintf(fresh, sizeof fresh, "%s/fresh.db", f->dir);
    assert_int_equal(tide_store_restore(bak, fresh, moved, sizeof moved, &err), 0);
    assert_string_equal(moved, "");
    assert_true(has_job(fresh, "job-00000-with-a-longer-id"));
    /* a file copy backup of the same */
    char bak2[160];
    snprintf(bak2, sizeof bak2, "%s/backup2.db", f->dir);
    assert_int_equal(tide_store_backup_file(fresh, bak2, &err), 0);
    assert_true(has_job(bak2, "job-00000-with-a-longer-id"));
}

static void test_restore_refuses(void **state)
{
    fx_t *f = *state;
    tide_error_t err = {0};
    char bak[160], plain[160];
    snprintf(bak, sizeof bak, "%s/backup.db", f->dir);
    snprintf(plain, sizeof plain, "%s/plain.db", f->dir);
    tide_store_t *s = open_ok(f->path);
    fill(s, 3);
    assert_int_equal(tide_store_backup(s, bak, &err), 0);
    tide_store_close(s);
    /* not a tide database */
    char cmd[400];
    snprintf(cmd, sizeof cmd, "sqlite3 '%s' 'CREATE TABLE x(a)' 2>/dev/null", plain);
    if (system(cmd) == 0) {
        assert_int_equal(tide_store_restore(plain, f->path, NULL, 0, &err), -1);
        assert_int_equal(err.code, TIDE_EINVAL);
        assert_non_null(strstr(err.msg, "not a tide database"));
    }
    assert_int_equal(tide_store_restore("/nonexistent.db", f->path, NULL, 0, &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
    /* open in another process: refused, the file untouched */
    int go[2], ready[2];
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        tide_store_t *c = tide_store_open(f->path, NULL);
        char b = c ? 'y' : 'n';
        if (write(ready[1], &b, 1) != 1 || read(go[0], &b, 1) < 0)
            _exit(3);
        tide_store_close(c);
        _exit(0);
    }
    char b = 0;
    assert_int_equal(read(ready[0], &b, 1), 1);
    assert_int_equal(b, 'y');
    assert_int_equal(tide_store_restore(bak, f->path, NULL, 0, &err), -1);
    assert_int_equal(err.code, TIDE_ESTATE);
    assert_non_null(strstr(err.msg, "stop tide serve"));
    assert_int_equal(write(go[1], "x", 1), 1);
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(access(with(f, ".pre-restore"), F_OK), -1);
    /* once it is closed, restore works */
    assert_int_equal(tide_store_restore(bak, f->path, NULL, 0, &err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_deleted_db, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replaced_db_at_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deleted_wal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_shm, setup, teardown),
        cmocka_unit_test(test_memory_db_has_no_files),
        cmocka_unit_test_setup_teardown(test_corrupt_page_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unwritable_shm_refused_at_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backup_restore_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restore_refuses, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
