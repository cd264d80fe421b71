/* The daemon: opening (settings, services, recovery, demand sources), the
 * loop, closing; and the small helpers every file of src/daemon uses. The
 * rest, by concern: see internal.h. */
#include "daemon/internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http/get.h"
#include "util/util.h"

/* ------------------------------------------------------------------ small */

static double mono_now(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double wall(tide_daemon_t *d) { return d->clock(d->clock_ctx); }

void dmn_log(tide_daemon_t *d, const char *fmt, ...)
{
    FILE *f = d->log ? d->log : stderr;
    va_list ap;
    va_start(ap, fmt);
    fprintf(f, "tide serve: [t=%lld] ", (long long)d->now);
    vfprintf(f, fmt, ap);
    fputc('\n', f);
    fflush(f);
    va_end(ap);
}

tide_time_t dmn_clock_now(tide_daemon_t *d)
{
    double dt = (wall(d) - d->wall0) * d->speed;
    tide_time_t t = d->t0 + (dt > 0 ? (tide_time_t)floor(dt + 1e-9) : 0);
    if (t < d->last_clock)
        t = d->last_clock;
    if (t < d->now)
        t = d->now;
    d->last_clock = t;
    return t;
}

void dmn_kick(tide_daemon_t *d)
{
    d->kick = 1;
    pthread_cond_signal(&d->loop_cv);
}

djob_t *dmn_job(tide_daemon_t *d, int32_t h)
{
    if ((size_t)h >= d->n_jobs) {
        size_t n = d->n_jobs ? d->n_jobs : 64;
        while (n <= (size_t)h)
            n *= 2;
        d->jobs = tide_xrealloc(d->jobs, n * sizeof *d->jobs);
        for (size_t i = d->n_jobs; i < n; i++)
            d->jobs[i] = (djob_t){.db_state = TIDE_JOB_QUEUED};
        d->n_jobs = n;
    }
    return &d->jobs[h];
}

drep_t *dmn_rep(tide_daemon_t *d, int32_t r)
{
    if ((size_t)r >= d->n_reps) {
        size_t n = d->n_reps ? d->n_reps : 64;
        while (n <= (size_t)r)
            n *= 2;
        d->reps = tide_xrealloc(d->reps, n * sizeof *d->reps);
        for (size_t i = d->n_reps; i < n; i++)
            d->reps[i] = (drep_t){.service = -1, .state = REP_NONE};
        d->n_reps = n;
    }
    return &d->reps[r];
}

tide_event_t dmn_blank_event(int kind)
{
    return (tide_event_t){.kind = kind, .job = -1, .service = -1, .replica = -1, .node = -1};
}

const char *dmn_job_id(const tide_engine_t *e, int32_t h)
{
    tide_job_info_t ji;
    if (h < 0 || tide_engine_job(e, h, &ji) != 0 || !ji.spec)
        return NULL;
    return ji.spec->id;
}

const char *dmn_service_name(const tide_engine_t *e, int32_t s)
{
    const tide_service_spec_t *sp = s >= 0 ? tide_engine_service(e, s) : NULL;
    return sp ? sp->name : NULL;
}

/* ------------------------------------------------------------------ open */

void tide_daemon_opts_default(tide_daemon_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->reserve_gpus = -2;
    o->split_inf = -2;
    o->history_days = 7;
    o->snapshot_steps = -1;
    o->snapshot_secs = -1;
}

static char *dup_opt(const char *s) { return s ? tide_xstrdup(s) : NULL; }

static void backend_opts_copy(tide_daemon_t *d, const tide_backend_opts_t *o)
{
    if (o)
        d->bopts = *o;
    d->bopts.slurm_conf = d->bo_conf = dup_opt(d->bopts.slurm_conf);
    d->bopts.partition = d->bo_part = dup_opt(d->bopts.partition);
    d->bopts.infer_partition = d->bo_ipart = dup_opt(d->bopts.infer_partition);
    d->bopts.replica_command = d->bo_rcmd = dup_opt(d->bopts.replica_command);
    d->bopts.power_cap_cmd = d->bo_pcmd = dup_opt(d->bopts.power_cap_cmd);
    d->bopts.workdir = d->bo_workdir = dup_opt(d->bopts.workdir);
    d->bopts.api_url = d->bo_api = dup_opt(d->bopts.api_url);
    d->bopts.probe_thread = 1; /* never hold the daemon lock through Slurm's timeouts */
    if (!d->bopts.log)
        d->bopts.log = d->log;
}

/* A daemon with the options' copies and no database yet. */
static tide_daemon_t *daemon_alloc(const tide_daemon_opts_t *o)
{
    tide_daemon_t *d = tide_xcalloc(1, sizeof *d);
    pthread_mutex_init(&d->mu, NULL);
    pthread_mutex_init(&d->db_mu, NULL);
    for (int i = 0; i < DMN_RD_CONNS; i++)
        pthread_mutex_init(&d->rdp[i].mu, NULL);
    pthread_mutex_init(&d->gc_mu, NULL);
    pthread_mutex_init(&d->qc_mu, NULL);
    d->gc_tail = &d->gc_head;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->gc_cv, &ca); /* a gathering leader's deadline is monotonic */
    pthread_cond_init(&d->loop_cv, &ca);
    pthread_cond_init(&d->notice_cv, &ca);
    pthread_cond_init(&d->step_cv, &ca);
    pthread_condattr_destroy(&ca);
    tide_actions_init(&d->acts);
    d->db_path = tide_xstrdup(o->db_path);
    d->cluster_file = o->cluster_file ? tide_xstrdup(o->cluster_file) : NULL;
    d->tokens_path = o->tokens_path ? tide_xstrdup(o->tokens_path) : NULL;
    d->auth = o->auth;
    snprintf(d->backend_name, sizeof d->backend_name, "%s", o->backend ? o->backend : "sim");
    d->speed = o->speed > 0 ? o->speed : 1;
    d->tick_s = o->tick_s > 0 ? o->tick_s : 1;
    d->usage_interval_s = o->usage_interval_s > 0 ? o->usage_interval_s : 3600;
    d->audit_keep_s = o->audit_keep_s ? o->audit_keep_s : TIDE_DAEMON_AUDIT_KEEP_S;
    d->audit_max_rows = o->audit_max_rows ? o->audit_max_rows : TIDE_DAEMON_AUDIT_MAX_ROWS;
    d->check = o->check;
    d->shadow = o->shadow;
    d->rehearse_every_s = o->rehearse_every_s > 0 ? o->rehearse_every_s : 0;
    d->snap_steps = o->snapshot_steps < 0 ? 1000 : o->snapshot_steps;
    d->snap_secs = o->snapshot_secs < 0 ? 3600 : o->snapshot_secs;
    d->clock = o->clock ? o->clock : mono_now;
    d->clock_ctx = o->clock_ctx;
    d->log = o->log;
    return d;
}

/* The backend by name, and what its capabilities ask of the options. */
static int backend_check(tide_daemon_t *d, tide_error_t *err)
{
    if (!(d->be_ops = tide_backend_find(d->backend_name)))
        return tide_errf(err, TIDE_EINVAL, "--backend: unknown backend '%s' (known: %s)",
                         d->backend_name, tide_backend_known());
    if (d->be_ops->wall_clock && d->speed != 1)
        return tide_errf(err, TIDE_EINVAL,
                         "--speed %g: the %s backend runs real jobs, so engine time is wall time "
                         "(--speed 1)",
                         d->speed, d->backend_name);
    return 0;
}

/* Can the backend run the services of the options? Checked before anything
 * is written (the database's own are checked once loaded, in state_open). */
static int services_check(tide_daemon_t *d, const tide_daemon_opts_t *o, tide_error_t *err)
{
    if (o->services && dmn_services_backend_ok(d, o->services, o->n_services, err) < 0)
        return tide_err_prefix(err, "--services: ");
    return 0;
}

/* The pulled demand sources of the options. */
static int sources_open(tide_daemon_t *d, const tide_daemon_opts_t *o, tide_error_t *err)
{
    for (size_t i = 0; i < o->n_queries; i++) {
        int s = tide_engine_service_find(d->e, o->queries[i].service);
        if (s < 0)
            return tide_errf(err, TIDE_EINVAL, "--demand-query: unknown service '%s'",
                             o->queries[i].service);
        char host[256], port[8], path[4096];
        if (tide_http_url_parse(o->queries[i].url, host, sizeof host, port, sizeof port, path,
                                sizeof path, err) < 0)
            return tide_err_prefix(err, "--demand-query %s: ", o->queries[i].service);
        dsrc_t src = {.service = tide_xstrdup(o->queries[i].service),
                      .url = tide_xstrdup(o->queries[i].url), .svc = s, .up = 0,
                      .fed_t = -1};
        size_t cap = d->n_src;
        TIDE_PUSH(d->src, d->n_src, cap, src);
    }
    return 0;
}

/* The database opened, its services as the options want, the engine
 * rebuilt from it; the clock resumes at the last recorded time. */
static int state_open(tide_daemon_t *d, const tide_daemon_opts_t *o, tide_error_t *err)
{
    if (!(d->st = tide_store_open(o->db_path, err)))
        return -1;
    dmn_store_init(d);
    if (dmn_settings(d, o, err) < 0)
        return -1;
    if (tide_store_services_load(d->st, &d->svcs, &d->n_svcs, err) < 0 ||
        dmn_services_open(d, o, err) < 0)
        return -1;
    if (dmn_services_backend_ok(d, d->svcs, d->n_svcs, err) < 0)
        return tide_err_prefix(err, "database %s: ", o->db_path);
    if (dmn_history_open(d, o, err) < 0 || dmn_power_open(d, o, err) < 0)
        return -1;
    d->wall0 = wall(d);
    if (dmn_rebuild(d, err) < 0 || dmn_pipe_open(d, err) < 0)
        return -1;
    d->t0 = d->now;
    d->last_clock = d->now;
    d->wall0 = wall(d);
    /* readers get their own connection (WAL: they see committed rows and
     * never wait for a writer's fsync); an in-memory database cannot be
     * shared, so its readers use st (and writers keep mu through COMMIT) */
    if (!strcmp(o->db_path, ":memory:") || strstr(o->db_path, "mode=memory"))
        return 0;
    for (; d->n_rdp < DMN_RD_CONNS; d->n_rdp++)
        if (!(d->rdp[d->n_rdp].st = tide_store_open(o->db_path, err)))
            return -1;
    d->rd = d->rdp[0].st;
    return 0;
}

tide_daemon_t *tide_daemon_open(const tide_daemon_opts_t *o, tide_error_t *err)
{
    if (!o->db_path || !*o->db_path) {
        tide_errf(err, TIDE_EINVAL, "--db is required");
        return NULL;
    }
    if (o->speed < 0 || !isfinite(o->speed) || o->tick_s < 0 || !isfinite(o->tick_s)) {
        tide_errf(err, TIDE_EINVAL, "--speed and --tick must be > 0");
        return NULL;
    }
    tide_daemon_t *d = daemon_alloc(o);
    tide_error_t e2 = {0};
    if (!err)
        err = &e2;
    if (backend_check(d, err) < 0 || services_check(d, o, err) < 0)
        goto fail;
    backend_opts_copy(d, o->backend_opts);
    if (state_open(d, o, err) < 0)
        goto fail;
    /* teams of the cluster file that the engine does not have yet */
    int changed = 0;
    if (o->gov && dmn_teams_accept(d, o->gov, &changed, err) < 0)
        goto fail;
    if (sources_open(d, o, err) < 0)
        goto fail;
    d->next_usage = 0;
    tide_time_t ut;
    if (tide_store_usage_last(d->st, &ut, err) < 0)
        goto fail;
    if (ut >= 0)
        d->next_usage = ut - ut % d->usage_interval_s + d->usage_interval_s;
    /* the first step: restarts what the backend lost, starts a new engine */
    if (tide_daemon_pump(d, err) < 0)
        goto fail;
    return d;
fail:
    tide_daemon_crash(d);
    return NULL;
}

/* ------------------------------------------------------------------ loop */

/* Shortest wall time between two steps fed by API writes alone. */
#define API_FEED_GAP_S 0.005

static void deadline_in(struct timespec *ts, double s)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    if (s < 0)
        s = 0;
    if (s > 3600)
        s = 3600;
    double end = (double)ts->tv_sec + ts->tv_nsec * 1e-9 + s;
    ts->tv_sec = (time_t)end;
    ts->tv_nsec = (long)((end - (double)ts->tv_sec) * 1e9);
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Wall time at which the engine clock reaches t. */
static double wall_of(const tide_daemon_t *d, tide_time_t t)
{
    if (t == TIDE_TIME_NEVER)
        return INFINITY;
    return d->wall0 + (double)(t - d->t0) / d->speed + 1e-6;
}

/* Wait on the loop's condition until wall time `until` (or a kick/stop). */
static void loop_wait(tide_daemon_t *d, double until)
{
    struct timespec ts;
    deadline_in(&ts, until - wall(d));
    pthread_cond_timedwait(&d->loop_cv, &d->mu, &ts);
}

/* With d->mu held, take the write connection's lock too, in the lock order
 * (db_mu before mu): the caller releases db_mu when done. */
static void relock_with_db(tide_daemon_t *d)
{
    pthread_mutex_unlock(&d->mu);
    pthread_mutex_lock(&d->db_mu);
    pthread_mutex_lock(&d->mu);
}

/* Once per tick: pulled demand and canary figures (fetched without the
 * lock), the store's files and errors. */
typedef struct pulls {
    dpull_t *v;
    size_t cap;
} pulls_t;

static void loop_tick(tide_daemon_t *d, dfetch_t *fetched, dsrc_t *copy, pulls_t *pulls)
{
    if (d->n_src) {
        memcpy(copy, d->src, d->n_src * sizeof *copy); /* strings stay owned by d */
        size_t n = d->n_src;
        int tmo = (int)(TIDE_MIN(d->tick_s, 2.0) * 1000);
        pthread_mutex_unlock(&d->mu);
        dmn_demand_fetch(copy, n, fetched, tmo < 100 ? 100 : tmo);
        pthread_mutex_lock(&d->mu);
        dmn_demand_apply(d, fetched, dmn_clock_now(d));
    }
    size_t np = dmn_pipe_pulls(d, &pulls->v, &pulls->cap);
    if (np) {
        pthread_mutex_unlock(&d->mu);
        dmn_pipe_pull_fetch(pulls->v, np, 2000);
        pthread_mutex_lock(&d->mu);
        dmn_pipe_pull_apply(d, pulls->v, np);
    }
    dmn_power_tick(d); /* measured power: pulled when due (the lock let go meanwhile) */
    /* the store's checks use the write connection */
    relock_with_db(d);
    dmn_store_tick(d);
    pthread_mutex_unlock(&d->db_mu);
}

int tide_daemon_run(tide_daemon_t *d, tide_error_t *err)
{
    pthread_mutex_lock(&d->mu);
    d->loop_running = 1;
    double next_tick = wall(d), retry_at = 0;
    dfetch_t *fetched = tide_xcalloc(d->n_src ? d->n_src : 1, sizeof *fetched);
    dsrc_t *copy = tide_xcalloc(d->n_src ? d->n_src : 1, sizeof *copy);
    pulls_t pulls = {0};
    int rc = 0;
    while (!d->stop) {
        double w = wall(d);
        if (w >= next_tick) {
            loop_tick(d, fetched, copy, &pulls);
            while (next_tick <= w)
                next_tick += d->tick_s;
        }
        if ((d->degraded || d->rewind) && w < retry_at) {
            /* the store failed: wait out the backoff (API writes are refused) */
            d->kick = 0;
            loop_wait(d, TIDE_MIN(retry_at, next_tick));
            continue;
        }
        tide_error_t perr = {0};
        relock_with_db(d); /* a step writes */
        int prc = d->stop ? 0 : dmn_pump(d, &perr);
        pthread_mutex_unlock(&d->db_mu);
        double pumped = mono_now(NULL);
        if (prc < 0) {
            if (d->failed || perr.code == TIDE_ESTATE) {
                dmn_log(d, "stopping: %s", perr.msg);
                d->failed = 1;
                if (err)
                    *err = perr;
                rc = -1;
                break;
            }
            /* nothing was enacted; the store is degraded: try again later */
            retry_at = wall(d) + dmn_store_backoff(d);
            continue;
        }
        if (d->stop)
            break;
        double until = next_tick;
        if (d->started)
            until = TIDE_MIN(until, wall_of(d, d->next_wake));
        until = TIDE_MIN(until, wall_of(d, tide_backend_next_event(d->be)));
        if (!d->kick)
            loop_wait(d, until);
        /* API writes arriving back to back are fed together: their rows are
         * committed already, only their feeding waits, at most API_FEED_GAP_S
         * after the last step (a step is a transaction, one fsync) */
        while (d->kick && !d->stop && mono_now(NULL) < pumped + API_FEED_GAP_S &&
               wall(d) < until) {
            struct timespec ts;
            deadline_in(&ts, pumped + API_FEED_GAP_S - mono_now(NULL));
            pthread_cond_timedwait(&d->loop_cv, &d->mu, &ts);
        }
        d->kick = 0;
    }
    d->loop_running = 0;
    pthread_cond_broadcast(&d->step_cv);
    pthread_cond_broadcast(&d->notice_cv);
    pthread_mutex_unlock(&d->mu);
    free(fetched);
    free(copy);
    free(pulls.v);
    return rc;
}

void tide_daemon_stop(tide_daemon_t *d)
{
    pthread_mutex_lock(&d->mu);
    d->stop = 1;
    dmn_stream_stop(d); /* end the event streams (their connections close) */
    pthread_cond_broadcast(&d->loop_cv);
    pthread_cond_broadcast(&d->notice_cv);
    pthread_cond_broadcast(&d->step_cv);
    pthread_mutex_unlock(&d->mu);
}

static void daemon_free(tide_daemon_t *d)
{
    if (!d)
        return;
    dmn_stream_free(d);
    dmn_pipe_free(d);
    tide_backend_destroy(d->be);
    dmn_shadow_free(d);
    tide_engine_destroy(d->e);
    tide_store_close(d->st);
    for (int i = 0; i < d->n_rdp; i++)
        tide_store_close(d->rdp[i].st);
    tide_actions_free(&d->acts);
    dmn_devq_clear(&d->pending);
    dmn_devq_clear(&d->extra);
    free(d->pending.v);
    free(d->extra.v);
    free(d->evbuf);
    free(d->workv);
    free(d->reps);
    for (size_t i = 0; i < d->n_jobs; i++)
        dmn_work_free(d->jobs[i].work);
    free(d->jobs);
    free(d->node_up);
    free(d->node_reason);
    free(d->last_demand);
    dmn_teams_clear(d);
    free(d->teams);
    for (size_t i = 0; i < d->n_src; i++) {
        free(d->src[i].service);
        free(d->src[i].url);
    }
    free(d->src);
    dmn_history_free(d);
    dmn_power_free(d);
    dmn_rl_pool_free(d);
    dmn_svcs_free(d->svcs, d->n_svcs);
    tide_cluster_destroy(d->cluster);
    free(d->db_path);
    free(d->cluster_file);
    free(d->tokens_path);
    free(d->bo_conf);
    free(d->bo_part);
    free(d->bo_ipart);
    free(d->bo_rcmd);
    free(d->bo_pcmd);
    free(d->bo_workdir);
    free(d->bo_api);
    pthread_cond_destroy(&d->loop_cv);
    pthread_cond_destroy(&d->notice_cv);
    pthread_cond_destroy(&d->step_cv);
    pthread_mutex_destroy(&d->mu);
    pthread_mutex_destroy(&d->db_mu);
    for (int i = 0; i < DMN_RD_CONNS; i++)
        pthread_mutex_destroy(&d->rdp[i].mu);
    pthread_mutex_destroy(&d->gc_mu);
    pthread_mutex_destroy(&d->qc_mu);
    free(d->qc.q);
    free(d->qc.at);
    pthread_cond_destroy(&d->gc_cv);
    free(d);
}

void tide_daemon_close(tide_daemon_t *d)
{
    if (!d)
        return;
    if (d->st && d->lost)
        dmn_log(d, "stopped after step %lld: the database was lost (%s)", (long long)d->step,
                d->degraded_why);
    else if (d->st)
        dmn_log(d, "stopped after step %lld (everything acknowledged is in %s)", (long long)d->step,
                d->db_path);
    daemon_free(d);
}

void tide_daemon_crash(tide_daemon_t *d) { daemon_free(d); }

/* ------------------------------------------------------------ accessors */

void tide_daemon_set_router(tide_daemon_t *d, tide_router_t *r)
{
    d->router = r;
    if (r) {
        tide_router_set_audit(r, dmn_audit_hook);
        dmn_api_set_quick(r);
    }
}
void tide_daemon_lock(tide_daemon_t *d)
{
    pthread_mutex_lock(&d->db_mu);
    pthread_mutex_lock(&d->mu);
}

void tide_daemon_unlock(tide_daemon_t *d)
{
    pthread_mutex_unlock(&d->mu);
    pthread_mutex_unlock(&d->db_mu);
}

void dmn_lock_read(tide_daemon_t *d) { pthread_mutex_lock(&d->mu); }
void dmn_unlock_read(tide_daemon_t *d) { pthread_mutex_unlock(&d->mu); }

static _Thread_local int rd_held = -1; /* the read connection this thread holds */

tide_store_t *dmn_rd(tide_daemon_t *d)
{
    if (!d->rd)
        return d->st;
    int i = 0;
    while (i < d->n_rdp && pthread_mutex_trylock(&d->rdp[i].mu) != 0)
        i++;
    if (i == d->n_rdp) { /* all busy: wait for one, spread over them */
        i = (int)(__atomic_fetch_add(&d->rd_next, 1u, __ATOMIC_RELAXED) % (unsigned)d->n_rdp);
        pthread_mutex_lock(&d->rdp[i].mu);
    }
    rd_held = i;
    return d->rdp[i].st;
}

void dmn_rd_done(tide_daemon_t *d)
{
    if (!d->rd || rd_held < 0)
        return;
    pthread_mutex_unlock(&d->rdp[rd_held].mu);
    rd_held = -1;
}
const tide_engine_t *tide_daemon_engine(const tide_daemon_t *d) { return d->e; }
tide_store_t *tide_daemon_store(const tide_daemon_t *d) { return d->st; }
tide_time_t tide_daemon_now(const tide_daemon_t *d) { return d->now; }
int64_t tide_daemon_steps(const tide_daemon_t *d) { return d->step; }
long tide_daemon_replay_mismatches(const tide_daemon_t *d) { return d->replay_mismatch; }
long tide_daemon_replayed_steps(const tide_daemon_t *d) { return d->replayed; }
int64_t tide_daemon_snapshot_step(const tide_daemon_t *d) { return d->snap_restored; }
