/* Private to src/daemon: the daemon's state, shared by daemon.c (loop,
 * steps, recovery), api.c (HTTP handlers), metrics.c and demand.c. */
#ifndef TIDE_DAEMON_INTERNAL_H
#define TIDE_DAEMON_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "backend/backend.h"
#include "daemon/daemon.h"

/* An accepted event not yet fed to the engine. API events are committed as
 * pending rows first (seq > 0); loop events (backend polls, pulled demand,
 * recovery) are persisted with the step that feeds them (seq = 0 here). */
typedef struct dev {
    tide_event_t ev;          /* job_spec points to spec for submits */
    tide_time_t t;            /* engine time accepted; fed at a step >= t */
    int64_t seq;              /* pending row, 0 = not yet persisted */
    char *job_id;             /* owned */
    char *service_name;       /* owned */
    char *payload;            /* owned (team_set) */
    const char *source;       /* static */
    tide_job_spec_t spec;     /* submits: id = job_id, team owned */
    char *team;               /* owned (spec.team) */
} dmn_ev_t;

typedef struct devq {
    dmn_ev_t *v;
    size_t n, cap;
} devq_t;

/* Replica states derived from the action/event stream. */
enum { REP_NONE = 0, REP_WARM, REP_UP };
typedef struct drep {
    int32_t service;
    uint8_t state;
} drep_t;

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

/* Per job handle. */
typedef struct djob {
    int db_state;        /* tide_job_state_t last written to the jobs table */
    int width;           /* width after the last START/RESIZE */
    notice_t notice;
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
    char *json;
} dteam_t;

struct tide_daemon {
    pthread_mutex_t mu;
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
    tide_backend_opts_t bopts;  /* strings owned (bo_*) */
    char *bo_conf, *bo_part, *bo_ipart, *bo_rcmd, *bo_workdir, *bo_api;
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

    /* derived from the action/event stream (rebuilt by replay) */
    drep_t *reps;
    size_t n_reps;
    djob_t *jobs;
    size_t n_jobs;
    uint8_t *node_up;
    double *last_demand;       /* per service, -1 unknown */
    uint64_t notice_seq;
    unsigned long preempt[TIDE_R_COUNT];
    long steps_total;          /* engine steps taken in this process (replay included) */
    long replay_mismatch;
    long step_errors;          /* events the engine rejected */

    /* demand sources */
    dsrc_t *src;
    size_t n_src;
};

/* ---- daemon.c */
tide_time_t dmn_clock_now(tide_daemon_t *d);          /* engine time now (lock held) */
void dmn_log(tide_daemon_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dmn_kick(tide_daemon_t *d);                       /* wake the loop (lock held) */

/* Accept an API event: append it as a pending row. Without an open
 * transaction it commits the row on its own and queues the event; inside the
 * caller's transaction it only appends, and the caller calls dmn_queue after
 * its commit. spec (for submits) is copied. Returns the row's seq or -1. */
int64_t dmn_accept(tide_daemon_t *d, const tide_event_t *ev, const tide_job_spec_t *spec,
                   const char *job_id, const char *service_name, const char *payload,
                   tide_error_t *err);

/* Queue an event whose pending row the caller committed (dmn_accept called
 * inside the caller's transaction returned seq). Lock held. */
void dmn_queue(tide_daemon_t *d, const tide_event_t *ev, const tide_job_spec_t *spec, int64_t seq,
               const char *job_id, const char *service_name, const char *payload);

/* Wait (lock held, wall time bounded) until the pending event seq was fed,
 * when the loop runs. Returns 1 when fed. */
int dmn_wait_fed(tide_daemon_t *d, int64_t seq, double timeout_s);

/* Replace the service list (only while no job was ever submitted): a new
 * epoch with a fresh engine and backend. Lock held. */
int dmn_services_set(tide_daemon_t *d, const tide_service_spec_t *v, size_t n, tide_error_t *err);

/* Re-read the tokens file and the cluster file's teams (lock held). */
int dmn_reload(tide_daemon_t *d, int *n_tokens, int *n_teams, int *changed, tide_error_t *err);

/* Per-handle views, grown on demand (never NULL for handle >= 0). */
djob_t *dmn_job(tide_daemon_t *d, int32_t h);
drep_t *dmn_rep(tide_daemon_t *d, int32_t r);

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

/* ---- usage (daemon.c) */
/* Current cumulative usage rows (owned strings in *names pool); lock held. */
typedef struct usage_rows {
    tide_store_usage_t *v;
    size_t n, cap;
} usage_rows_t;
void dmn_usage_now(tide_daemon_t *d, usage_rows_t *out);
void dmn_usage_free(usage_rows_t *r);

#endif
