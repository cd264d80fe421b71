/* Private to src/daemon: the daemon's state and the functions its files
 * share (libuv's internal.h style). The files, by concern:
 *   daemon.c    open, the loop, close, small helpers
 *   settings.c  the database's settings (cluster, policy, engine timings)
 *   queue.c     accepted events: pending rows, the queues, the group commit
 *   step.c      one step: feed, persist, enact; derived state
 *   recover.c   rebuild from the database (replay, reconcile with the backend)
 *   epoch.c     service changes (a new epoch)
 *   fault.c     store faults: degraded, probe, backoff (the step is undone in step.c)
 *   teams.c     team definitions and reloads
 *   work.c      jobs' commands and environments for the backend
 *   sample.c    usage snapshots (src/formats/usage.h's sampler)
 *   ops.c       what the API does: one function per write, applied in a group commit
 *   api*.c      HTTP handlers by resource (api.c: the routes table, helpers)
 *   metrics.c   /metrics;  demand.c  pulled demand sources
 *   power.c     measured power (--power-query, GET /v1/power)
 *   history.c   demand history fed to every fresh engine */
#ifndef TIDE_DAEMON_INTERNAL_H
#define TIDE_DAEMON_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "backend/backend.h"
#include "daemon/daemon.h"
#include "http/codec.h"
#include "formats/workload_io.h"
#include "http/prom.h"
#include "tide/rl.h"

/* An accepted event not yet fed to the engine. API events are committed as
 * pending rows first (seq > 0); loop events (backend polls, pulled demand,
 * recovery) are persisted with the step that feeds them (seq = 0 here). */
typedef struct dev {
    tide_event_t ev;          /* job_spec points to spec for submits */
    tide_time_t t;            /* engine time accepted; fed at a step >= t */
    int64_t seq;              /* pending row, 0 = not yet persisted */
    char *job_id;             /* owned */
    char *service_name;       /* owned */
    char *payload;            /* owned (team_set: the team as stored) */
    const char *source;       /* static */
    tide_job_spec_t spec;     /* submits: id = job_id, team owned */
    char *team;               /* owned (spec.team, or tspec.name) */
    tide_team_spec_t tspec;   /* team_set: the definition (name = team) */
    int has_tspec;
} dmn_ev_t;

/* What an accepted event carries besides the engine event (borrowed; the
 * queue copies it). */
typedef struct dmn_evx {
    const char *job_id;
    const char *service_name;
    const char *payload;           /* team_set: the team as stored (JSON) */
    const tide_job_spec_t *spec;   /* submits */
    const tide_team_spec_t *team;  /* team_set: the decoded definition */
} dmn_evx_t;

typedef struct devq {
    dmn_ev_t *v;
    size_t n, cap;
} devq_t;

/* One API write waiting for a group commit (queue.c). Its apply runs in the
 * leader's thread inside the batch's transaction with both locks held: it
 * checks the request against the state now (the duplicate id, the job's
 * state), writes its rows and its pending events (dmn_op_event). Returning
 * -1 with a validation error (EEXIST, ESTATE, ENOENT, EINVAL) rejects
 * this write alone and must come before any row is written; any other error
 * (EIO) fails the whole batch. After the commit the leader queues the
 * accepted events for the loop; then every writer is answered. */
/* Read connections a daemon keeps on a file database (one per HTTP I/O
 * thread by default). */
#define DMN_RD_CONNS 4

typedef struct dmn_op dmn_op_t;
struct dmn_op {
    int (*apply)(struct tide_daemon *d, dmn_op_t *op, tide_error_t *err);
    void *arg;                 /* the request (owned by the waiting thread) */
    tide_event_t ev[2];        /* pending events written by apply */
    dmn_evx_t x[2];            /* borrowed from arg: live until answered */
    int64_t seq[2];
    tide_time_t t[2];
    int n_ev;
    int rc;                    /* the answer: 0, or -1 with err */
    tide_error_t err;
    /* the request this write answers (NULL: none): when apply accepts it,
     * its audit row (audit.c) is written in the same transaction, with
     * audit_status (apply may change it) as the answer's status */
    const tide_http_req_t *audit_req;
    int audit_status;
    int audited;               /* that row was committed with the write */
    int done;
    pthread_cond_t cv;         /* its writer waits here (gc_mu): answered, or to lead */
    dmn_op_t *next;
};

/* Replica states derived from the action/event stream. */
enum { REP_NONE = 0, REP_WARM, REP_UP };
typedef struct drep {
    int32_t service;
    uint8_t state;
    uint8_t rehearsal;   /* a warm-up rehearsal (REPLICA_START reason rehearsal) */
} drep_t;

typedef struct dshadow dshadow_t; /* shadow.c */

/* A job's reclaim notice (JOB_CKPT or JOB_RESIZE action). */
typedef struct notice {
    uint64_t id;         /* 0 = none */
    int kind;            /* TIDE_ACT_JOB_CKPT or TIDE_ACT_JOB_RESIZE */
    int reason;
    tide_time_t at, deadline;
    int width, prev_width;
    int active;          /* not yet satisfied (commit, stop or restart clear it) */
    int acked;           /* the job acknowledged it */
} notice_t;

/* A job's command and environment (owned; work points into them). */
typedef struct dwork {
    tide_backend_work_t work;
    char *command;
    char **env;
} dwork_t;

/* Per job handle. */
typedef struct djob {
    int db_state;        /* tide_job_state_t last written to the jobs table */
    int width;           /* width after the last START/RESIZE */
    notice_t notice;
    dwork_t *work;       /* loaded at its first start or resize, NULL before */
    int64_t ckpt_seen;   /* 1 + the step of the last committed checkpoint counted in
                            this run (0 = none): every gang of a job may report the
                            same commit, the others are duplicates */
} djob_t;

/* A pulled demand source. */
typedef struct dsrc {
    char *service;
    char *url;
    int svc;             /* engine index, -1 unknown */
    double last_ts;      /* sample time of the last fresh value */
    double last_value;
    int have;
    int misses;          /* ticks without a fresh value */
    int up;              /* tide_demand_source_up */
    int down_reported;   /* the outage was logged */
    double fed_value;    /* last value fed to the engine */
    tide_time_t fed_t;   /* when (-1 never) */
    char last_err[sizeof(((tide_error_t *)0)->msg)];
} dsrc_t;

/* A fetched value handed from the fetch (no lock) to the loop (lock). */
typedef struct dfetch {
    int ok;
    int empty;           /* the query answered without a value (stale) */
    double value, ts;
    char err[sizeof(((tide_error_t *)0)->msg)];
} dfetch_t;

/* A team as last applied to the engine (to log only changes). */
typedef struct dteam {
    char *name;
    char *json;              /* as stored */
    tide_team_spec_t spec;   /* name = name */
} dteam_t;

struct tide_daemon {
    /* Locks, in the order they are taken: db_mu, then mu, then a reader's.
     * db_mu: the write connection st, from BEGIN to COMMIT (the loop for a
     * step, a group commit's leader, the admin handlers through
     * tide_daemon_lock). mu: everything else (engine, queues, derived
     * state); a writer lets it go during its COMMIT (the fsync) when
     * readers have their own connection, so reads never wait for a disk.
     * rdp[i].mu: read connection i. gc_mu: the group-commit queue only. */
    pthread_mutex_t db_mu;
    pthread_mutex_t mu;
    tide_store_t *rd;          /* readers' first connection (committed rows only); NULL: use st */
    /* readers' connections (rdp[0].st is rd): a reader takes a free one, so
     * reads on different I/O threads do not queue behind each other */
    struct dmn_rdconn {
        pthread_mutex_t mu;
        tide_store_t *st;
    } rdp[DMN_RD_CONNS];
    int n_rdp;
    unsigned rd_next;          /* the next to wait for when all are busy (atomic) */
    pthread_mutex_t gc_mu;
    pthread_cond_t gc_cv;      /* a write was queued (for observers: writers wait on their op's) */
    dmn_op_t *gc_head, **gc_tail;
    int gc_busy;               /* a leader is committing */
    long gc_queued;            /* writes waiting for the next batch */
    const dmn_op_t *gc_applying; /* the batch being applied (mu held) */
    long gc_batches, gc_writes; /* group commits done, writes they carried */
    /* gathering (queue.c gc_gather): writers seen around the last batch
     * (its own and those queued meanwhile: closed-loop clients come back),
     * a batch's duration (moving average, s), leaders that waited */
    long gc_expect;
    double gc_batch_s;
    long gc_gathers;
    /* tests: called inside the step's readers window (dmn_readers_in) */
    void (*on_persist)(tide_daemon_t *d, void *ctx);
    void *on_persist_ctx;
    int64_t audit_keep_s;      /* audit rows older than this are pruned (<= 0: no age cap) */
    int64_t audit_max_rows;    /* rows kept at most (<= 0: no cap) */
    unsigned long audit_rows, audit_failed; /* rows recorded / lost (atomic) */
    pthread_cond_t loop_cv;    /* loop: an API write arrived / stop */
    pthread_cond_t notice_cv;  /* long polls: a notice was emitted / stop */
    pthread_cond_t step_cv;    /* handlers waiting for their event to be fed */

    /* configuration (owned copies) */
    char *db_path;
    tide_cluster_t *cluster;
    char *cluster_file;
    tide_config_t cfg;
    char policy[32];
    char backend_name[32];
    const tide_backend_ops_t *be_ops; /* the backend's table: its capabilities */
    tide_backend_opts_t bopts;  /* strings owned (bo_*) */
    char *bo_conf, *bo_part, *bo_ipart, *bo_rcmd, *bo_workdir, *bo_api;
    char *bo_pcmd;           /* --power-cap-cmd */
    double speed, tick_s;
    tide_time_t usage_interval_s;
    int check;
    tide_clock_fn clock;
    void *clock_ctx;
    FILE *log;
    tide_auth_t *auth;
    char *tokens_path;
    tide_router_t *router;
    tide_service_spec_t *svcs; /* current epoch, owned names */
    size_t n_svcs;
    dteam_t *teams;
    size_t n_teams, cap_teams;

    /* state */
    tide_store_t *st;
    tide_engine_t *e;
    tide_backend_t *be;
    tide_actions_t acts;
    int64_t epoch;
    int64_t step;              /* last step number written */
    tide_time_t now;           /* engine time of the last step */
    tide_time_t next_wake;     /* engine's next_wake after the last step */
    tide_time_t t0;            /* engine time at wall0 */
    double wall0;
    tide_time_t last_clock;    /* highest engine time handed out (monotonic) */
    tide_time_t next_usage;
    int started;               /* the engine has taken its first step */
    int stop, loop_running, kick;
    int failed;                /* a fatal error stopped the loop */
    int64_t fed_seq;           /* highest pending seq fed to the engine */
    devq_t pending;            /* API events (persisted, not fed) */
    devq_t extra;              /* loop events (not persisted yet) */
    tide_event_t *evbuf;       /* scratch for a step */
    size_t n_evbuf, cap_evbuf;
    const tide_backend_work_t **workv; /* scratch: the work of each action */
    size_t cap_workv;

    /* derived from the action/event stream (rebuilt by replay) */
    drep_t *reps;
    size_t n_reps;
    djob_t *jobs;
    size_t n_jobs;
    uint8_t *node_up;           /* per node: 1 up, 0 down, 2 unreachable (NODE_FAILED value 1) */
    char (*node_reason)[128];  /* why a node was drained through the API ("" none;
                                  NULL until the first drain; not kept by a restart) */
    double *last_demand;       /* per service, -1 unknown */
    uint64_t notice_seq;
    unsigned long preempt[TIDE_R_COUNT];
    long steps_total;          /* engine steps taken in this process (replay included) */
    /* GET /v1/jobs/{id}'s and the job list's queue fields: the whole queue
     * inspection, kept while the engine is the one it was taken from
     * (api_jobs.c). qc_mu is taken with mu held, before a read connection. */
    pthread_mutex_t qc_mu;
    struct dqcache {
        tide_queue_info_t *q;
        int32_t *at;               /* per handle: index in q + 1, 0 not queued */
        int n_handles;
        long steps;
        int64_t epoch;
        const tide_engine_t *e;
    } qc;
    long replay_mismatch;
    long step_errors;          /* events the engine rejected */
    long quarantined;          /* stored events replay refused (dmn_event_check) */

    /* store faults (fault.c) */
    int degraded;              /* the store cannot write: writes answer 503, not ready */
    int lost;                  /* the store lost its file for good: degraded until restart */
    int rewind;                /* the engine is ahead of the store: rebuild before stepping */
    double degraded_since;     /* wall time the episode began */
    double retry_s;            /* current backoff */
    long degraded_episodes;
    long store_retries;        /* attempts that failed while degraded */
    uint64_t seen_errors;      /* the store's error count at the last look */
    char degraded_why[sizeof(((tide_error_t *)0)->msg)];

    /* snapshots (snapshot.c) */
    int64_t snap_steps;        /* steps between snapshots (0 = none written or used) */
    tide_time_t snap_secs;     /* engine seconds between snapshots (0 = by steps only) */
    int64_t snap_step;         /* step of the last snapshot written or restored (0 = none) */
    tide_time_t snap_t;        /* its engine time */
    size_t snap_bytes;         /* size of the last one written */
    long snapshots_written;
    long replayed;             /* steps the last recovery replayed */
    int64_t snap_restored;     /* step of the snapshot it restored (-1 = none) */

    /* demand sources */
    dsrc_t *src;
    size_t n_src;

    struct dstream *stream;    /* GET /v1/stream's hub (stream.c), NULL before a client */
    /* shadow mode and rehearsals (shadow.c) */
    int shadow;                /* enact nothing: the backend is a shadow */
    dshadow_t *sh;             /* what the shadow measured, NULL before any */
    tide_time_t rehearse_every_s; /* scheduled rehearsals (0 = off) */
    tide_time_t next_rehearse; /* engine time of the next one (0 = not set) */
    struct dpipe *pipe;        /* the model pipeline (pipe.c) */
    void *hist;                /* history.c: the stored demand history (NULL = none) */
    struct dpower *pw;         /* power.c: measured power (--power-query) */
    struct drlpools *rlp;      /* rl_pool.c: RL pool controllers (NULL: none yet) */
};

/* ---- snapshot.c */
#define DMN_SNAP_VERSION 3     /* the daemon's snapshot format (the engine's has its own) */
#define DMN_SNAP_KEEP 2        /* snapshots kept in the store */
/* Is a snapshot of the state after the last step due? */
int dmn_snapshot_due(const tide_daemon_t *d);
/* Write it (inside the next step's transaction). 0 or -1 with err. */
int dmn_snapshot_write(tide_daemon_t *d, tide_error_t *err);
/* On a freshly built engine (dmn_engine_build): restore the newest usable
 * snapshot of the epoch. Returns its step (the replay starts after it), -1
 * when none is usable or snapshots are off, -2 on a store error (err). */
int64_t dmn_snapshot_restore(tide_daemon_t *d, tide_error_t *err);

/* ---- daemon.c */
tide_time_t dmn_clock_now(tide_daemon_t *d);          /* engine time now (lock held) */
void dmn_log(tide_daemon_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dmn_kick(tide_daemon_t *d);                       /* wake the loop (lock held) */
/* Per-handle views, grown on demand (never NULL for handle >= 0). */
djob_t *dmn_job(tide_daemon_t *d, int32_t h);
drep_t *dmn_rep(tide_daemon_t *d, int32_t r);
/* An event of this kind naming nothing (-1 handles). */
tide_event_t dmn_blank_event(int kind);
/* The engine's id of job h / name of service s, NULL when none. */
const char *dmn_job_id(const tide_engine_t *e, int32_t h);
const char *dmn_service_name(const tide_engine_t *e, int32_t s);

/* ---- settings.c */
/* Create the settings in a new database, or load them and check the
 * options against them (fills d->cluster, d->cfg, d->policy, d->epoch). */
int dmn_settings(tide_daemon_t *d, const tide_daemon_opts_t *o, tide_error_t *err);
/* The node groups as JSON (caller frees), with their power budgets and GPU
 * types' power models when not the defaults: equal strings = equal clusters. */
char *dmn_cluster_json(const tide_cluster_t *c);
/* ... the node groups alone (no power): equal strings = the same nodes. */
char *dmn_cluster_nodes_json(const tide_cluster_t *c);
/* Would an engine with this configuration and these services start? (Some
 * problems, like a reserve the services do not fit, only show at the first
 * step.) 0 or -1 with err. */
int dmn_probe(const tide_cluster_t *c, const tide_config_t *cfg, const tide_service_spec_t *v,
              size_t n, tide_error_t *err);

/* ---- queue.c */
void dmn_devq_clear(devq_t *q);
void dmn_devq_drop_front(devq_t *q, size_t k); /* drop (free) the first k */
/* Append a copy of ev (with x) to q. */
dmn_ev_t *dmn_devq_push(devq_t *q, const tide_event_t *ev, tide_time_t t, int64_t seq,
                        const dmn_evx_t *x, const char *source);
void dmn_dev_free(dmn_ev_t *v);

/* The one way an API event enters: dmn_pending_append writes its pending
 * row inside the caller's open transaction (seq and time into *seq, *t);
 * after the commit dmn_queue queues it for the loop. dmn_accept does all
 * three (begin, append, commit, queue) for a lone event. Lock held. */
int dmn_pending_append(tide_daemon_t *d, const tide_event_t *ev, const dmn_evx_t *x,
                       int64_t *seq, tide_time_t *t, tide_error_t *err);
void dmn_queue(tide_daemon_t *d, const tide_event_t *ev, const dmn_evx_t *x, int64_t seq,
               tide_time_t t);
int64_t dmn_accept(tide_daemon_t *d, const tide_event_t *ev, const dmn_evx_t *x,
                   tide_error_t *err);

/* Group commit. dmn_commit (no lock held) queues op and returns once the
 * transaction carrying it committed (or failed): the first writer to find
 * no commit in flight leads, taking every write queued so far into one
 * transaction; the others wait and are answered together. Returns op->rc.
 * dmn_op_event (inside apply) writes a pending event row for op and keeps
 * it to queue after the commit. */
int dmn_commit(tide_daemon_t *d, dmn_op_t *op);
int dmn_op_event(tide_daemon_t *d, dmn_op_t *op, const tide_event_t *ev, const dmn_evx_t *x,
                 tide_error_t *err);
/* COMMIT the write connection; mu is let go meanwhile when readers have
 * their own connection (db_mu and mu held on entry and on return). */
int dmn_store_commit(tide_daemon_t *d, tide_error_t *err);
/* The step's store writes let readers in: with db_mu and mu held, open
 * (mu let go when readers have their own connection) and close (mu taken
 * again) a window in which the caller only reads the engine and the daemon
 * and writes the store. Every writer takes db_mu first, so nothing the
 * caller reads moves; readers that fill caches under mu (the lead's
 * quantiles, the queue view) must not be read by the caller meanwhile. */
void dmn_readers_in(tide_daemon_t *d);
void dmn_readers_out(tide_daemon_t *d);
/* Readers: a connection to read committed rows from (mu may be held; a free
 * read connection is taken, or the next one waited for, when there are read
 * connections) and its release by the same thread. No nesting. */
tide_store_t *dmn_rd(tide_daemon_t *d);
void dmn_rd_done(tide_daemon_t *d);
/* mu alone: for handlers that only read (or wait for the loop). */
void dmn_lock_read(tide_daemon_t *d);
void dmn_unlock_read(tide_daemon_t *d);

/* Wait (lock held, wall time bounded) until the pending event seq was fed,
 * when the loop runs. Returns 1 when fed. */
int dmn_wait_fed(tide_daemon_t *d, int64_t seq, double timeout_s);

/* ---- step.c */
/* Update what the daemon derives from the stream (live and replay alike). */
void dmn_derive(tide_daemon_t *d, tide_time_t t, const tide_event_t *ev, size_t n,
                const tide_actions_t *acts);
/* Resolve an event's job handle from its id (live and replay alike). */
void dmn_resolve(const tide_daemon_t *d, tide_event_t *ev, const char *job_id);
/* Are an event's handles and value in range for the engine now (job,
 * replica, service, node known or -1; a finite value, a demand within
 * 0..TIDE_MAX_RPS)? Replay quarantines a stored event that is not (a log
 * line, never a crash loop). 0 or -1 with err. */
int dmn_event_check(const tide_daemon_t *d, const tide_event_t *ev, tide_error_t *err);
/* Step through everything due up to the engine time now (lock held). */
int dmn_pump(tide_daemon_t *d, tide_error_t *err);

/* ---- recover.c */
/* A fresh engine for the current services; derived state reset. */
int dmn_engine_build(tide_daemon_t *d, tide_error_t *err);
/* Rebuild the engine from the database: replay the epoch, load pending
 * events, check invariants, create the backend and reconcile with it. */
int dmn_rebuild(tide_daemon_t *d, tide_error_t *err);
/* A step could not be persisted (it enacted nothing): rebuild the engine
 * from what was committed and swap it into the live engine, which the
 * backend keeps borrowing; the backend, the queued events and the pending
 * ones stay as they are. Clears d->rewind. 0 or -1 with err (the live
 * engine is then unchanged and d->rewind stays set). */
int dmn_rewind(tide_daemon_t *d, tide_error_t *err);

/* ---- fault.c: the store cannot write (held lock, full disk, lost file) */
/* A store call failed: enter (or stay in) the degraded state; logged once
 * per episode. Notes a lost file (tide_store_writable() == 0) for good. */
void dmn_store_fault(tide_daemon_t *d, const tide_error_t *why);
/* Before stepping while degraded: can the store write again? A small write
 * (a meta row) committed. 0 yes (the episode may end), -1 with err. */
int dmn_store_probe(tide_daemon_t *d, tide_error_t *err);
/* A pump went through: the episode (if any) ends, logged. */
void dmn_store_ok(tide_daemon_t *d);
/* Did a store call fail since the last look (an API write, a read)? Then
 * probe with a write (degraded when it fails). Every write handler and
 * /readyz ask first (lock held), so one failed write is enough to turn the
 * others away at once. Returns 1 when it probed. */
int dmn_store_recheck(tide_daemon_t *d);
/* Once per tick (lock held): is the database still the file we opened?
 * And did a store call fail since the last look (an API write)? Then probe
 * the write lock. */
void dmn_store_tick(tide_daemon_t *d);
/* Wall seconds to wait before the next attempt (the backoff grows while
 * attempts fail). */
double dmn_store_backoff(tide_daemon_t *d);
/* After open: the daemon's lock wait (short: see fault.c). */
void dmn_store_init(tide_daemon_t *d);

/* ---- epoch.c */
tide_service_spec_t *dmn_svcs_copy(const tide_service_spec_t *v, size_t n);
void dmn_svcs_free(tide_service_spec_t *v, size_t n);
/* Replace the service list (only while no job was ever submitted): a new
 * epoch with a fresh engine and backend. Lock held. */
int dmn_services_set(tide_daemon_t *d, const tide_service_spec_t *v, size_t n, tide_error_t *err);
/* At open: --services that differ from the database's (before the rebuild). */
int dmn_services_open(tide_daemon_t *d, const tide_daemon_opts_t *o, tide_error_t *err);
/* Can the backend run services v as specified? A service with stage_s > 0
 * needs a backend that can stage weights (ops->can_stage). 0, or -1 with
 * EINVAL naming the service and the backend. */
int dmn_services_backend_ok(const tide_daemon_t *d, const tide_service_spec_t *v, size_t n,
                            tide_error_t *err);

/* ---- teams.c */
/* Apply a team definition to the engine (before a step); json is the
 * stored form, kept to log only changes. */
void dmn_team_apply(tide_daemon_t *d, const tide_team_spec_t *t, const char *json);
/* Decode a stored team definition (name owned by *name). 0 or -1 with err. */
int dmn_team_decode(const char *json, tide_team_spec_t *t, char **name, tide_error_t *err);
void dmn_teams_clear(tide_daemon_t *d);
/* Log a team_set for each team of gov that differs from what the engine has. */
int dmn_teams_accept(tide_daemon_t *d, const tide_governance_t *gov, int *changed,
                     tide_error_t *err);
/* Re-read the tokens file and the cluster file's teams (lock held). */
int dmn_reload(tide_daemon_t *d, int *n_tokens, int *n_teams, int *changed, tide_error_t *err);

/* ---- work.c */
/* The work of each action of acts (d->workv, acts->n entries; JOB_START and
 * JOB_RESIZE get their job's command and environment, loaded from the
 * jobs table once per job). */
const tide_backend_work_t *const *dmn_work(tide_daemon_t *d, const tide_actions_t *acts);
void dmn_work_free(dwork_t *w); /* NULL ok */
/* Forget the work of jobs that completed or were cancelled in acts. */
void dmn_work_release(tide_daemon_t *d, const tide_actions_t *acts);

/* ---- ops.c: the API's writes, through the group commit (dmn_commit): called
 * with NO lock held; each checks the request against the state inside the
 * batch and is answered after the commit */
/* req (NULL: none) is the HTTP request each answers: an accepted write's
 * audit row is committed with it (the router's audit hook then skips it). */
/* Submit jr (an id is made when it has none; jr->id then owned by jr).
 * EEXIST: the id is taken (*old_state gets that job's state). */
int dmn_job_submit(tide_daemon_t *d, const tide_http_req_t *req, tide_job_request_t *jr,
                   char *old_state, size_t n, tide_error_t *err);
/* Cancel job id. *state: its state after (or "cancelling"): the loop is
 * waited for (up to 5 s) to feed the cancel. ESTATE: already done or
 * cancelled. */
int dmn_job_cancel(tide_daemon_t *d, const tide_http_req_t *req, const char *id,
                   const char **state, tide_error_t *err);
/* Record a checkpoint manifest; a committed one feeds CKPT_COMMITTED (and
 * a progress resync for backends whose jobs report it). *value: the
 * progress used. A committed report whose step is not above the last one
 * counted in this run (another gang's report of the same commit) changes
 * nothing: *dup = 1 and *value the job's committed progress. ESTATE:
 * committed while the job does not run. */
int dmn_job_checkpoint(tide_daemon_t *d, const tide_http_req_t *req, const char *id,
                       const tide_ckpt_request_t *ck, double *value, int *dup,
                       tide_error_t *err);
/* Demand of the service named svc (ENOENT: unknown). */
int dmn_demand_set(tide_daemon_t *d, const tide_http_req_t *req, const char *svc, double rps,
                   tide_error_t *err);
/* Replica r reports ready: *ready 1 when it already was. ENOENT: not running.
 * service (n bytes): its service's name. */
int dmn_replica_ready(tide_daemon_t *d, const tide_http_req_t *req, int32_t r, char *service,
                      size_t n, int *ready, tide_error_t *err);
/* The lock held (tide_daemon_lock, or mu alone for the ack). */
/* Acknowledge job h's notice (*id: its id). ESTATE: none to acknowledge. */
int dmn_notice_ack(tide_daemon_t *d, const char *id, int32_t h, uint64_t *notice_id,
                   tide_error_t *err);
/* Mark node up or down (a drain): an event accepted and durable; returns its
 * sequence number (dmn_wait_fed tells when the engine has it), -1 on error. */
int64_t dmn_node_set(tide_daemon_t *d, int node, int up, tide_error_t *err);
/* Add a service / change one's replica bounds (a new epoch). */
int dmn_service_add(tide_daemon_t *d, const tide_service_spec_t *sp, tide_error_t *err);
int dmn_service_bounds(tide_daemon_t *d, int s, int min_r, int has_min, int max_r, int has_max,
                       tide_error_t *err);

/* ---- audit.c */
/* The router's audit hook (tide_router_set_audit): one row per request to
 * an audited route, committed before the reply is sent (no lock held);
 * skipped when the write's own transaction carried it (dmn_audit_op). */
void dmn_audit_hook(void *app, const tide_http_req_t *req, const tide_http_reply_t *rep);
/* In a batch (mu held, the transaction open): the audit row of op, a write
 * its apply accepted, for op->audit_req answered op->audit_status. */
int dmn_audit_op(tide_daemon_t *d, const dmn_op_t *op, tide_error_t *err);
/* On the answering thread, after the commit: op's row is on disk (when
 * op->audited), so the hook about to run for op->audit_req skips it. */
void dmn_audit_committed(const dmn_op_t *op);

/* ---- shadow.c: shadow mode and warm-up rehearsals */
/* The backend to enact through: the real one, or its shadow (d->shadow). */
tide_backend_t *dmn_backend_create(tide_daemon_t *d, tide_error_t *err);
/* After each step (live): what the shadow would have done. */
void dmn_shadow_step(tide_daemon_t *d, tide_time_t t, const tide_actions_t *acts);
json_t *dmn_shadow_json(tide_daemon_t *d);             /* GET /v1/shadow (lock held) */
void dmn_shadow_metrics(tide_daemon_t *d, tide_prom_t *p);
void dmn_shadow_free(tide_daemon_t *d);
/* A new epoch (epoch.c): before the engine is replaced (built 0) and after
 * (built 1): the report's totals carry over to the fresh engine. */
void dmn_shadow_epoch(tide_daemon_t *d, int built);
/* Leave shadow mode (lock held): a real backend, reconciled (what the twin
 * ran starts for real); the engine, and so its forecast, is kept. ESTATE
 * when not in shadow mode. */
int dmn_mode_enact(tide_daemon_t *d, tide_error_t *err);
/* Ask for a rehearsal of service svc (lock held). ENOENT unknown. */
int dmn_rehearse(tide_daemon_t *d, const char *svc, tide_error_t *err);
/* Queue the scheduled rehearsals due by now (lock held). */
void dmn_rehearse_due(tide_daemon_t *d, tide_time_t now);
json_t *dmn_rehearsal_json(const tide_daemon_t *d, int s);
void dmn_rehearsal_metrics(tide_daemon_t *d, tide_prom_t *p);

/* ---- recover.c (also) */
/* Loop events for what the engine believes runs and the backend does not
 * know: jobs expire, replicas fail. */
void dmn_reconcile(tide_daemon_t *d, int *lost_jobs, int *lost_reps);

/* ---- metrics.c */
char *dmn_metrics(tide_daemon_t *d, size_t *len); /* lock held; caller frees */

/* Classify GPU g: class, state, tier (tide_*_t) as the daemon sees it now. */
void dmn_gpu_class(tide_daemon_t *d, int g, int *cls, int *state, int *tier);

/* ---- demand.c */
/* Fetch every source (no lock held: network). out has n_src entries. */
void dmn_demand_fetch(const dsrc_t *src, size_t n, dfetch_t *out, int timeout_ms);
/* Apply fetched values (lock held): fresh values become DEMAND events,
 * stale/failed sources are reported. */
void dmn_demand_apply(tide_daemon_t *d, const dfetch_t *f, tide_time_t now);

/* ---- power.c: measured power (--power-query) */
typedef struct dpower dpower_t;
/* At open: the pull's URL (a Prometheus base URL gets the default query),
 * labels and interval from o. 0 or -1 with err (a bad URL). */
int dmn_power_open(tide_daemon_t *d, const tide_daemon_opts_t *o, tide_error_t *err);
void dmn_power_free(tide_daemon_t *d);
/* A fresh engine (declared models): the recorded state cleared. */
void dmn_power_reset(tide_daemon_t *d);
/* Apply a recorded power_model payload fed at engine time t (live and
 * replay alike, before the step's events): each named type's model is
 * its declared one with the payload's draws, the others declared. 0, or
 * -1 (logged) when the payload is not JSON. */
int dmn_power_apply(tide_daemon_t *d, const char *payload, tide_time_t t);
/* The payload applied last (NULL: none) and its time, for snapshots; and
 * back (the restored engine already has the models). */
const char *dmn_power_payload(const tide_daemon_t *d, tide_time_t *t);
void dmn_power_restored(tide_daemon_t *d, const char *payload, tide_time_t t);
/* Once per tick (mu held; let go during the fetch): pull when due, fit,
 * and queue a power_model event when the model moved. */
void dmn_power_tick(tide_daemon_t *d);
json_t *dmn_power_json(tide_daemon_t *d);           /* GET /v1/power (lock held) */
void dmn_power_metrics(tide_daemon_t *d, tide_prom_t *p);

/* ---- history.c */
/* At open, before the rebuild: the demand history. On a database's first
 * start (no step yet) it is gathered from o (the --demand-history file, the
 * range queries) and stored; later starts load the stored one (and say when
 * the file changed). 0 or -1 with err (a bad file, a database error). */
int dmn_history_open(tide_daemon_t *d, const tide_daemon_opts_t *o, tide_error_t *err);
/* Feed the history to the fresh engine d->e (services matched by name). */
void dmn_history_apply(tide_daemon_t *d);
void dmn_history_free(tide_daemon_t *d);

/* ---- sample.c */
/* Current cumulative usage rows (strings borrowed from the engine); lock held. */
typedef struct usage_rows {
    tide_store_usage_t *v;
    size_t n, cap;
} usage_rows_t;
void dmn_usage_now(tide_daemon_t *d, usage_rows_t *out);
void dmn_usage_free(usage_rows_t *r);

/* ---- stream.c: GET /v1/stream (the feed as Server-Sent Events) */
/* A client of the stream hub (lock held): rows after `after` (-1: after the
 * feed's head less `backlog` rows), heartbeats every heartbeat_s of the
 * daemon's clock. Starts the hub's thread. Returns the ctx of
 * dmn_stream_ops() (a tide_http_reply_stream body). */
void *dmn_stream_open(tide_daemon_t *d, const tide_principal_t *who, int64_t after, int backlog,
                      double heartbeat_s);
const tide_http_stream_ops_t *dmn_stream_ops(void);
/* One turn of the hub (lock held): feed every client. Returns the clients served. */
int dmn_stream_pump(tide_daemon_t *d);
/* A feed row as a client with this role and team sees it (JSON, caller frees). */
char *dmn_stream_row(tide_daemon_t *d, const tide_store_feed_row_t *r, int admin,
                     const char *team);
void dmn_stream_set_limit(tide_daemon_t *d, size_t bytes); /* per-client buffer (tests) */
void dmn_stream_stop(tide_daemon_t *d);  /* end every stream (lock held ok) */
void dmn_stream_free(tide_daemon_t *d);  /* join the hub's thread, free (no lock held) */
void dmn_stream_counts(tide_daemon_t *d, int *clients, unsigned long *served,
                       unsigned long *dropped);

/* ---- pipe.c: the model pipeline (lock held everywhere) */
int dmn_pipe_open(tide_daemon_t *d, tide_error_t *err); /* after the rebuild */
void dmn_pipe_free(tide_daemon_t *d);
/* After every live step, before its actions are enacted: the model version
 * of each replica the step started. */
void dmn_pipe_label_starts(tide_daemon_t *d);
/* The work of a replica the step starts: its model version's environment
 * (TIDE_MODEL, TIDE_MODEL_VERSION, TIDE_MODEL_MANIFEST), NULL without one;
 * valid until the next step. */
const tide_backend_work_t *dmn_pipe_replica_work(tide_daemon_t *d, int32_t r);
/* After every live step: evaluations, the pipeline's step, enacted. */
void dmn_pipe_step(tide_daemon_t *d, tide_time_t t);
/* Define a model with its links (mr->link: the webhook notified, signed with
 * $TIDE_WEBHOOK_SECRET, of every pipeline event of the model; the canary's
 * Prometheus queries). Returns the model's index or -1 with err. */
int dmn_pipe_model_define(tide_daemon_t *d, const tide_model_request_t *mr, tide_error_t *err);
const char *dmn_pipe_link(tide_daemon_t *d, int model, int link); /* TIDE_LINK_*; NULL none */
/* Canary pulls: one GET per query of each model whose rollout routes
 * requests to a new version. dmn_pipe_pulls lists them (lock held; *v grown,
 * owned by the caller, free it), dmn_pipe_pull_fetch runs them (no lock),
 * dmn_pipe_pull_apply feeds what came back to the rollout's gates (lock
 * held): a model's figures count when all its queries answered. */
typedef struct dpull {
    int model, version, link;
    char url[1200];
    dfetch_t got;
} dpull_t;
size_t dmn_pipe_pulls(tide_daemon_t *d, dpull_t **v, size_t *cap);
void dmn_pipe_pull_fetch(dpull_t *v, size_t n, int timeout_ms);
void dmn_pipe_pull_apply(tide_daemon_t *d, const dpull_t *v, size_t n);
int dmn_pipe_register(tide_daemon_t *d, int model, const tide_version_spec_t *v,
                      tide_error_t *err);
int dmn_pipe_metric(tide_daemon_t *d, int model, int ver, const char *name, double value,
                    tide_error_t *err);
int dmn_pipe_canary(tide_daemon_t *d, int model, double slo, double error_rate,
                    double latency_ms, tide_error_t *err);
int dmn_pipe_control(tide_daemon_t *d, int model, int cmd, int ver, tide_error_t *err);
/* A job request's "model" and "publish" (no lock): *model owned (NULL: none),
 * *every: N >= 1 every Nth commit, 0 final only, -1 none. */
int dmn_pipe_publish_parse(const char *body, size_t len, char **model, int *every,
                           tide_error_t *err);
void dmn_pipe_publish_set(tide_daemon_t *d, const char *job, const char *model, int every);
/* A committed checkpoint of job (a publish rule may register it). */
void dmn_pipe_ckpt(tide_daemon_t *d, const char *job, int64_t step, int64_t bytes,
                   const char *manifest, const char *digest);
tide_pipeline_t *dmn_pipe_pl(tide_daemon_t *d);
uint64_t dmn_pipe_gen(tide_daemon_t *d);  /* routes generation (changes with them) */
int dmn_pipe_label(tide_daemon_t *d, int32_t r, int *model, int *version);
void dmn_pipe_route(tide_daemon_t *d, int model, double *weight, int *version, int *old);
json_t *dmn_pipe_version_json(const tide_version_info_t *v);

/* ---- api.c: helpers the handlers share */
/* Mark the quick routes of the table on r (tide_router_set_quick). */
void dmn_api_set_quick(tide_router_t *r);
#define API_D(app) ((tide_daemon_t *)(app))
json_t *api_num(double v);            /* finite or 0 */
json_t *api_time(tide_time_t t);      /* null when < 0 or never */
json_t *api_str(const char *s);       /* null when NULL or not UTF-8 */
void api_set(json_t *o, const char *k, json_t *v);
void api_fail(tide_http_reply_t *rep, const tide_error_t *err);
void api_bad(tide_http_reply_t *rep, const char *fmt, const char *arg);
int api_is_admin(const tide_http_req_t *req);
/* May the caller see jobs of `team` (admins: every team)? */
int api_sees_team(const tide_http_req_t *req, const char *team);
/* ... the job named id (NULL: names no job; lock held)? Other teams' jobs
 * show in reads only as counts. */
int api_sees_job(tide_daemon_t *d, const tide_http_req_t *req, const char *id);
/* May the caller see / act on a job of `team`? Else a 403 is written. */
int api_team_ok(const tide_http_req_t *req, const char *team, const char *id,
                tide_http_reply_t *rep);
/* Whole number query argument in [min, max] (def when absent). 0 ok, -1 400 written. */
int api_q_int(const tide_http_req_t *req, const char *key, long long min, long long max,
              long long def, long long *out, tide_http_reply_t *rep);
/* 1 with a 503 written when the daemon is stopping or the store cannot
 * write (degraded): every write handler asks before acting. */
int api_stopping(tide_daemon_t *d, tide_http_reply_t *rep);
/* The job named in the path (params[0]) exists, the caller may act on it
 * and the daemon takes writes: 0 with its id (*id owned), else -1 with the
 * answer written (404, 403, 503). Takes and releases mu (api_jobs.c). */
int api_job_owned(tide_daemon_t *d, const tide_http_req_t *req, char **id,
                  tide_http_reply_t *rep);
/* ... the same for the job named `job` (*id: a copy of its id). */
int api_job_owned_as(tide_daemon_t *d, const tide_http_req_t *req, const char *job, char **id,
                     tide_http_reply_t *rep);
/* The job named id as GET /v1/jobs/{id} shows it, or NULL when no row has
 * that id (mu held). */
json_t *api_job_view(tide_daemon_t *d, const char *id);

/* ---- rl_jobs.c: RL jobs submitted with a spec (POST /v1/rl/{job}) */
/* Parse and validate spec (the rl.csv columns) alone: 0 with its
 * max_staleness and batch, or -1 with err (EINVAL naming the field). */
int dmn_rl_spec_values(const json_t *spec, const char *job, int64_t *max_staleness,
                       int64_t *batch, tide_error_t *err);
/* Parse spec, check it (team, fits, command) and submit the RL job's engine
 * jobs (TIDE_RL_LENT) through the group commit, each kept when already there
 * with the same shape. 0 with *created (jobs submitted now), or -1 with the
 * answer written (400, 403, 409, 503). Takes and releases mu. */
int dmn_rl_submit(tide_daemon_t *d, const tide_http_req_t *req, const char *job,
                  const json_t *spec, int *created, tide_http_reply_t *rep);
/* The jobs of RL job `job` ({job}-trainer, -rollout, -pool-N that exist) as
 * GET /v1/jobs/{id} shows them, with a "role" (mu held). */
json_t *dmn_rl_jobs_json(tide_daemon_t *d, const char *job);
/* spec (an object) read as one RL job named job (*out owned). 0 or -1. */
int dmn_rl_spec_read(const json_t *spec, const char *job, tide_rl_specs_t **out,
                     tide_error_t *err);

/* ---- rl_pool.c: the lent pool sized from the trainer's wait (docs/rl.md,
 * "The daemon sizes the pool"). Every decision is a recorded rl_pool event
 * (its payload: the pool jobs held and the controller's state), fed like an
 * API input, so replay and recovery hold the same jobs. */
/* At registration with a spec (inside a group-commit apply): start job's
 * controller and record its first decision (once; a retry records none).
 * keep[0..1] (NULL on entry) get the event's strings: the caller frees them
 * once answered. */
int dmn_rl_pool_register(tide_daemon_t *d, dmn_op_t *op, const char *job, const json_t *spec,
                         char **keep, tide_error_t *err);
/* A trainer step with measures (wait_s < 0: none; busy < 0: derived from
 * the queue): feed job's controller and record its decision. No controller
 * (a plain run, or none restored): nothing. Inside a group-commit apply. */
int dmn_rl_pool_step(tide_daemon_t *d, dmn_op_t *op, const char *job, int64_t step,
                     double wait_s, double compute_s, double busy, int64_t queued,
                     int64_t batch, char **keep, tide_error_t *err);
/* An rl_pool payload: hold / release its jobs in the engine (feed, replay). */
void dmn_rl_pool_hold(tide_daemon_t *d, const char *payload);
/* ... and restore the controller it records (recovery). */
void dmn_rl_pool_restore(tide_daemon_t *d, const char *payload);
/* Every controller as text (daemon snapshots; NULL: none; caller frees),
 * and back. */
char *dmn_rl_pool_save(tide_daemon_t *d);
void dmn_rl_pool_load(tide_daemon_t *d, const char *saved);
/* The controller of job as JSON (NULL: none); mu held. */
json_t *dmn_rl_pool_json(tide_daemon_t *d, const char *job);
void dmn_rl_pool_free(tide_daemon_t *d);
/* A write the group commit refused: ESTATE while stopping is a 503, the
 * rest as api_fail. */
void api_write_failed(tide_daemon_t *d, tide_http_reply_t *rep, const tide_error_t *err);
/* A row of the event feed as /v1/events shows it (api_admin.c). */
json_t *api_feed_row(const tide_store_feed_row_t *r);

/* Handlers by resource (api_jobs.c, api_services.c, api_nodes.c, api_usage.c,
 * api_admin.c). */
#define API_HANDLER(name) void name(void *app, const tide_http_req_t *req, tide_http_reply_t *rep)
API_HANDLER(api_healthz); /* /healthz and /readyz: ready (the store writes) */
API_HANDLER(api_livez);
API_HANDLER(api_metrics);
API_HANDLER(api_openapi); /* api_openapi.c */
API_HANDLER(api_reload);
API_HANDLER(api_audit);   /* audit.c */
API_HANDLER(api_events);
API_HANDLER(api_cluster);
API_HANDLER(api_nodes);
API_HANDLER(api_node_state);
API_HANDLER(api_leases);
API_HANDLER(api_services);
API_HANDLER(api_service_get);
API_HANDLER(api_service_create);
API_HANDLER(api_service_patch);
API_HANDLER(api_demand);
API_HANDLER(api_replica_ready);
API_HANDLER(api_job_submit);
API_HANDLER(api_jobs_list);
API_HANDLER(api_job_get);
API_HANDLER(api_job_cancel);
API_HANDLER(api_job_ckpt);
API_HANDLER(api_notice);
API_HANDLER(api_notice_ack);
API_HANDLER(api_usage);
API_HANDLER(api_stream);
API_HANDLER(api_ui_page);
/* api_models.c: the model pipeline */
API_HANDLER(api_models);
API_HANDLER(api_model_create);
API_HANDLER(api_model_get);
API_HANDLER(api_model_version_add);
API_HANDLER(api_model_version_get);
API_HANDLER(api_model_metrics);
API_HANDLER(api_model_canary);
API_HANDLER(api_model_rollout);
API_HANDLER(api_service_routes);
API_HANDLER(api_ui_asset);
API_HANDLER(api_shadow);   /* api_shadow.c */
/* api_rl.c: the RL trajectory ledger (its writes through the group commit) */
API_HANDLER(api_rl_runs);
API_HANDLER(api_rl_register);
API_HANDLER(api_rl_get);
API_HANDLER(api_rl_push);
API_HANDLER(api_rl_step);
/* The ledger's series for /metrics (lock held). */
void dmn_rl_metrics(tide_daemon_t *d, tide_prom_t *p);
API_HANDLER(api_mode);
API_HANDLER(api_rehearse);
API_HANDLER(api_power);    /* power.c */

#endif
