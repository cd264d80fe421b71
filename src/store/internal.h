/* Store-internal: the store's state shared by store.c (rows, transactions)
 * and files.c (the files' identity, integrity, backup and restore). */
#ifndef TIDE_STORE_INTERNAL_H
#define TIDE_STORE_INTERNAL_H

#include <sqlite3.h>
#include <sys/types.h>

#include "store/store.h"

enum {
    Q_META_GET, Q_META_SET,
    Q_SVC_DEL, Q_SVC_INS, Q_SVC_ALL,
    Q_JOB_INS, Q_JOB_GET, Q_JOB_STATE, Q_JOB_COUNT, Q_JOB_MAXSEQ, Q_JOB_LIST,
    Q_EV_INS, Q_EV_CLAIM, Q_EV_CLAIM_UPTO, Q_STEP_INS, Q_STEP_LAST, Q_ACT_INS,
    Q_REPLAY_EV, Q_REPLAY_ACT, Q_PENDING, Q_MAXSEQ,
    Q_FEED, Q_CKPT_INS, Q_CKPT_COUNT,
    Q_USAGE_INS, Q_USAGE_AT, Q_USAGE_LAST,
    Q_PING,
    Q_SNAP_INS, Q_SNAP_PRUNE, Q_SNAP_LIST,
    Q_COUNT
};

/* The identity of one of the database's files when first seen. */
typedef struct tide__store_fid {
    int have;
    dev_t dev;
    ino_t ino;
    off_t size; /* -shm only: it never shrinks while a connection maps it */
} tide__store_fid_t;

enum { TIDE__FID_DB, TIDE__FID_WAL, TIDE__FID_SHM, TIDE__FID_COUNT };

struct tide_store {
    sqlite3 *db;
    sqlite3_stmt *st[Q_COUNT];
    sqlite3_stmt *audit_ins; /* audit.c's INSERT, prepared once */
    int in_tx;
    long fail_at;       /* countdown of the fault injection (0 = off) */
    int64_t next_seq;   /* shared sequence of events_in and actions */
    int64_t next_job_seq;
    char *path;         /* NULL for an in-memory database */
    tide__store_fid_t fid[TIDE__FID_COUNT];
    int lost;           /* the files are no longer ours: writes refused */
    char lost_msg[512];
    tide_store_stats_t stats;
};

/* "database: WHAT: sqlite's message" as EIO; counts an error. */
int tide__store_db_err(tide_store_t *s, tide_error_t *err, const char *what);

/* A one-off statement (prepared per call; NULL with err, also when the
 * files are lost) and its end: finalized, 0 when rc is SQLITE_DONE or
 * SQLITE_ROW, else -1 with err "database: WHAT: ...". */
sqlite3_stmt *tide__store_prep(tide_store_t *s, const char *sql, const char *what,
                               tide_error_t *err);
int tide__store_finish(tide_store_t *s, sqlite3_stmt *st, int rc, const char *what,
                       tide_error_t *err);

/* Record the identity of the database's files (those that exist). */
void tide__store_fid_record(tide_store_t *s);

/* Open-time checks: PRAGMA quick_check (a corrupt file refused with the
 * fix), and that the write lock can be taken (an unwritable -shm or -wal is
 * refused here rather than failing every later write). */
int tide__store_open_checks(tide_store_t *s, const char *path, tide_error_t *err);

#endif
