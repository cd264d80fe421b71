/* tide daemon: the live control plane. One engine driven with the wall clock
 * (engine time = the last recorded time + (wall - wall at start) x speed),
 * work taken over the HTTP API (src/daemon/api.c), every event fed to the
 * engine and every action it returned persisted in SQLite (src/store/), the
 * actions enacted through a backend (src/backend/).
 *
 * Concurrency: one mutex guards the engine, the store and the backend. API
 * handlers (many threads) take it, validate, commit their write and enqueue
 * the engine event, then answer; the loop (one thread) takes it to step. The
 * loop wakes at min(the engine's next_wake, the backend's next event, the
 * next tick) and at once when an API write arrives.
 *
 * Durability: a job is acknowledged after its row and its submit event are
 * committed. Recovery (tide_daemon_open on an existing database) replays the
 * recorded steps of the current epoch through a fresh engine (deterministic),
 * checks its invariants (fails when they do not hold), then reconciles with
 * the backend: a running job the backend does not know gets JOB_EXPIRED
 * (work since its last commit is lost and counted; it requeues), a replica it
 * does not know gets REPLICA_FAILED. */
#ifndef TIDE_DAEMON_DAEMON_H
#define TIDE_DAEMON_DAEMON_H

#include <stdio.h>

#include "backend/backend.h"
#include "http/auth.h"
#include "http/router.h"
#include "formats/governance.h"
#include "store/store.h"
#include "tide/cluster.h"
#include "tide/engine.h"
#include "tide/types.h"

/* A wall clock in seconds (any origin; only differences matter). */
typedef double (*tide_clock_fn)(void *ctx);

/* A pulled demand source: GET url every tick, a Prometheus query response. */
typedef struct tide_demand_query {
    const char *service;
    const char *url;
} tide_demand_query_t;

/* Options (everything borrowed for the call; the daemon copies what it keeps). */
typedef struct tide_daemon_opts {
    const char *db_path;               /* required (":memory:" for tests) */
    const tide_cluster_t *cluster;     /* NULL: the database's (required when new) */
    const char *cluster_file;          /* YAML the cluster came from (reload), NULL */
    const tide_governance_t *gov;      /* teams from the cluster file, NULL = none */
    const tide_service_spec_t *services; /* --services; NULL = keep the database's */
    size_t n_services;
    const char *policy;                /* NULL: the database's, "elastic" when new */
    int reserve_gpus;                  /* -2 = not given (database's / engine default) */
    int split_inf;                     /* -2 = not given */
    tide_time_t lease_max_s;           /* 0 = not given (database's / engine default) */
    tide_time_t lead_extra_s;          /* 0 = not given */
    tide_time_t control_period_s;      /* engine tick_s; 0 = not given */
    tide_time_t scale_down_hold_s;     /* engine scale_down_hold_s; 0 = not given */
    const char *backend;               /* NULL = "sim" */
    const tide_backend_opts_t *backend_opts; /* NULL = defaults; strings copied */
    double speed;                      /* engine seconds per wall second (> 0; 0 = 1) */
    double tick_s;                     /* wall seconds between ticks (0 = 1) */
    const tide_demand_query_t *queries;
    size_t n_queries;
    const char *demand_history;        /* demand.csv whose latest time is "now"; NULL = none.
                                          Read at the database's first start only */
    const char *power_query;           /* measured GPU power: a Prometheus instant-query
                                          URL, or a base URL for the default query
                                          DCGM_FI_DEV_POWER_USAGE; NULL = no pulls */
    const char *power_host_label;      /* the series' node label (NULL = "Hostname") */
    const char *power_gpu_label;       /* ... and GPU index label (NULL = "gpu") */
    double power_interval_s;           /* wall seconds between power pulls (0 = 60) */
    int history_days;                  /* range query per --demand-query at the first start:
                                          days of engine time (0 = none; default 7) */
    tide_time_t usage_interval_s;      /* engine seconds between usage snapshots (0 = 3600) */
    int check;                         /* tide_engine_check after every step */
    int shadow;                        /* shadow mode: enact nothing (docs/serve.md) */
    tide_time_t rehearse_every_s;      /* engine seconds between scheduled warm-up
                                          rehearsals of every service (0 = off) */
    long snapshot_steps;               /* engine snapshot every N steps (-1 = default 1000,
                                          0 = none written or used) */
    tide_time_t snapshot_secs;         /* ... or every T engine seconds (-1 = default
                                          3600, 0 = by steps only) */
    tide_clock_fn clock;               /* NULL: CLOCK_MONOTONIC */
    void *clock_ctx;
    FILE *log;                         /* NULL: stderr */
    tide_auth_t *auth;                 /* tokens (reloaded by /v1/admin/reload), may be NULL */
    const char *tokens_path;           /* the tokens file, NULL in open mode */
    int64_t audit_keep_s;              /* audit retention: seconds (0 = 90 days, < 0 = no
                                          age limit) */
    int64_t audit_max_rows;            /* audit rows kept at most (0 = 1000000, < 0 = no cap) */
} tide_daemon_opts_t;

/* -2 markers for "not given". */
void tide_daemon_opts_default(tide_daemon_opts_t *o);

#define TIDE_DAEMON_AUDIT_KEEP_S (90 * 86400) /* audit retention by default */
#define TIDE_DAEMON_AUDIT_MAX_ROWS 1000000

typedef struct tide_daemon tide_daemon_t;

/* Open (create or recover) the database, build the engine, reconcile with a
 * fresh backend, and take the first step. Caller owns the daemon.
 * Errors: EINVAL bad options or options that contradict the database (another
 * cluster or policy), EIO database, ESTATE an invariant does not hold after
 * recovery (the message names it) or services cannot change any more. */
tide_daemon_t *tide_daemon_open(const tide_daemon_opts_t *o, tide_error_t *err);

/* Step the engine through everything due up to the current engine time (no
 * waiting). Thread-safe. Returns the number of steps taken, or -1 with err
 * (ESTATE: an invariant failed with opts.check). */
int tide_daemon_pump(tide_daemon_t *d, tide_error_t *err);

/* The loop: pump, poll demand sources each tick, sleep until the next due
 * time or an API write; until tide_daemon_stop. Returns 0, or -1 with err. */
int tide_daemon_run(tide_daemon_t *d, tide_error_t *err);

/* Ask the loop to return and release long polls (thread-safe; callable from a
 * signal-waiting thread). */
void tide_daemon_stop(tide_daemon_t *d);

/* Clean shutdown: everything acknowledged is already committed; free. */
void tide_daemon_close(tide_daemon_t *d);

/* Tests: free without any further writes, as if the process died (an open
 * transaction is rolled back). */
void tide_daemon_crash(tide_daemon_t *d);

/* The API routes table (src/daemon/api.c); handlers take the daemon as app. */
const tide_route_t *tide_daemon_routes(size_t *n);
/* The OpenAPI 3 description of those routes (docs/openapi.json, compiled in;
 * served at GET /openapi.json). */
const char *tide_daemon_openapi(void);

/* The router serving this daemon (created by the caller) for request
 * counters in /metrics and the audit trail (its audit hook is set to the
 * daemon's: every audited route's request becomes an audit row); may be
 * NULL. */
void tide_daemon_set_router(tide_daemon_t *d, tide_router_t *r);

/* Inspection for tests and the CLI (take the lock around engine access).
 * The lock is exclusive: no step, no group commit and no other writer
 * runs while it is held (readers of the API may). */
void tide_daemon_lock(tide_daemon_t *d);
void tide_daemon_unlock(tide_daemon_t *d);
const tide_engine_t *tide_daemon_engine(const tide_daemon_t *d);
tide_store_t *tide_daemon_store(const tide_daemon_t *d);
tide_time_t tide_daemon_now(const tide_daemon_t *d);  /* engine time of the last step */
int64_t tide_daemon_steps(const tide_daemon_t *d);    /* steps recorded (all epochs) */
long tide_daemon_replay_mismatches(const tide_daemon_t *d);
/* Steps the last recovery replayed (after the snapshot it restored, if any),
 * and the step of that snapshot (-1 = none: the whole epoch was replayed). */
long tide_daemon_replayed_steps(const tide_daemon_t *d);
int64_t tide_daemon_snapshot_step(const tide_daemon_t *d);

/* The dashboard's files compiled into the binary (src/ui, docs/ui.md): name
 * "" for the page, else "ui.css", "ui.js", "hook.js" or "chart.js"; their
 * content type in *type. NULL for another name. `tide ui DIR` serves the
 * same files over a replay. */
const char *tide_daemon_ui_asset(const char *name, const char **type);

#endif
