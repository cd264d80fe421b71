/* Snapshots of the daemon's state: the engine (tide_engine_snapshot) and
 * what the daemon derives from the step stream (replicas, notices, widths,
 * nodes, demand, teams, the measured power model), written into the store
 * in a step's transaction every snap_steps steps or snap_secs of engine
 * time. The row stores the state
 * after the previous step (taken before the new step changes anything), so
 * it exists only when that step is committed. Recovery restores the newest
 * intact snapshot of the epoch and replays only the steps after it; a
 * snapshot that is corrupt, of another version or another engine shape is
 * skipped with a log line (an older one, or the full replay, is used). */
#include <stdlib.h>
#include <string.h>

#include "daemon/internal.h"
#include "util/bytes.h"
#include "util/util.h"

#define F TIDE_FIELD
#define NF TIDE_NFIELDS

static const char dsnap_magic[8] = {'T', 'I', 'D', 'E', 'D', 'M', 'N', 0};

static const tide_field_t rep_f[] = {F(drep_t, service), F(drep_t, state)};
static const tide_field_t job_f[] = {
    F(djob_t, width), F(djob_t, notice.id), F(djob_t, notice.kind), F(djob_t, notice.reason),
    F(djob_t, notice.at), F(djob_t, notice.deadline), F(djob_t, notice.width),
    F(djob_t, notice.prev_width), F(djob_t, notice.active), F(djob_t, notice.acked)};
static const tide_field_t top_f[] = {F(tide_daemon_t, now), F(tide_daemon_t, next_wake),
                                     F(tide_daemon_t, started), F(tide_daemon_t, notice_seq),
                                     F(tide_daemon_t, preempt)};

/* ------------------------------------------------------------------ write */

static void w_derived(tide_wbuf_t *b, tide_daemon_t *d)
{
    tide_w_struct(b, d, top_f, NF(top_f));
    size_t nr = (size_t)tide_engine_replicas(d->e), nj = (size_t)tide_engine_jobs(d->e);
    tide_w_u64(b, nr);
    for (size_t r = 0; r < nr; r++)
        tide_w_struct(b, dmn_rep(d, (int32_t)r), rep_f, NF(rep_f));
    tide_w_u64(b, nj);
    for (size_t h = 0; h < nj; h++)
        tide_w_struct(b, dmn_job(d, (int32_t)h), job_f, NF(job_f));
    tide_w_arr(b, d->node_up, (size_t)tide_cluster_nodes(d->cluster), 1);
    tide_w_arr(b, d->last_demand, d->n_svcs, sizeof *d->last_demand);
    tide_w_u64(b, d->n_teams);
    for (size_t i = 0; i < d->n_teams; i++) {
        tide_w_str(b, d->teams[i].name);
        tide_w_str(b, d->teams[i].json);
    }
    tide_time_t pt;
    const char *power = dmn_power_payload(d, &pt); /* the engine's snapshot has the models */
    tide_w_str(b, power);
    tide_w_u64(b, (uint64_t)pt);
    char *rl = dmn_rl_pool_save(d); /* the RL pool controllers (the holds: the engine's) */
    tide_w_str(b, rl);
    free(rl);
}

int dmn_snapshot_due(const tide_daemon_t *d)
{
    if (!d->started || d->step <= d->snap_step || d->snap_steps <= 0)
        return 0;
    return d->step - d->snap_step >= d->snap_steps ||
           (d->snap_secs > 0 && d->now - d->snap_t >= d->snap_secs);
}

int dmn_snapshot_write(tide_daemon_t *d, tide_error_t *err)
{
    tide_wbuf_t b = {0};
    size_t en;
    void *eng = tide_engine_snapshot(d->e, &en);
    tide_w_raw(&b, dsnap_magic, sizeof dsnap_magic);
    tide_w_arr(&b, eng, en, 1);
    free(eng);
    w_derived(&b, d);
    tide_store_snapshot_t s = {.step = d->step, .epoch = d->epoch, .version = DMN_SNAP_VERSION,
                               .time_s = d->now, .state = b.p, .n = b.n};
    /* serialized under mu (readers fill the engine's caches); the blob's
     * write, most of a large snapshot's cost (8.5 MB at 16,384 GPUs and
     * 20,000 jobs), lets readers in */
    dmn_readers_in(d);
    int rc = tide_store_snapshot_put(d->st, &s, DMN_SNAP_KEEP, err);
    dmn_readers_out(d);
    free(b.p);
    if (rc < 0)
        return tide_err_prefix(err, "snapshot: ");
    d->snap_step = d->step;
    d->snap_t = d->now;
    d->snap_bytes = s.n;
    d->snapshots_written++;
    return 0;
}

/* ------------------------------------------------------------------- read */

/* The derived state of a snapshot, parsed before anything is changed. */
typedef struct dsnap {
    tide_daemon_t top;         /* top_f fields only */
    drep_t *reps;
    size_t n_reps;
    djob_t *jobs;
    size_t n_jobs;
    uint8_t *node_up;
    double *demand;
    char **names, **jsons;
    size_t n_teams;
    char *power;               /* the measured power model's payload (NULL none) */
    tide_time_t power_t;
    char *rlpools;             /* the RL pool controllers (NULL none) */
} dsnap_t;

static void dsnap_free(dsnap_t *s)
{
    free(s->reps);
    free(s->jobs);
    free(s->node_up);
    free(s->demand);
    for (size_t i = 0; i < s->n_teams; i++) {
        free(s->names[i]);
        free(s->jsons[i]);
    }
    free(s->names);
    free(s->jsons);
    free(s->power);
    free(s->rlpools);
}

static int r_derived(tide_rbuf_t *r, const tide_daemon_t *d, const tide_engine_t *e, dsnap_t *s)
{
    tide_r_struct(r, &s->top, top_f, NF(top_f));
    s->n_reps = tide_r_count(r, tide_fields_size(rep_f, NF(rep_f)), INT32_MAX);
    s->reps = tide_xcalloc(s->n_reps + 1, sizeof *s->reps);
    for (size_t i = 0; i < s->n_reps; i++)
        tide_r_struct(r, &s->reps[i], rep_f, NF(rep_f));
    s->n_jobs = tide_r_count(r, tide_fields_size(job_f, NF(job_f)), INT32_MAX);
    s->jobs = tide_xcalloc(s->n_jobs + 1, sizeof *s->jobs);
    for (size_t i = 0; i < s->n_jobs; i++)
        tide_r_struct(r, &s->jobs[i], job_f, NF(job_f));
    size_t nn, nd;
    s->node_up = tide_r_arr(r, 1, &nn);
    s->demand = tide_r_arr(r, sizeof *s->demand, &nd);
    s->n_teams = tide_r_count(r, 2 * sizeof(uint64_t), INT32_MAX);
    s->names = tide_xcalloc(s->n_teams + 1, sizeof *s->names);
    s->jsons = tide_xcalloc(s->n_teams + 1, sizeof *s->jsons);
    for (size_t i = 0; i < s->n_teams; i++) {
        s->names[i] = tide_r_str(r);
        s->jsons[i] = tide_r_str(r);
        if (!s->names[i])
            r->bad = 1;
    }
    s->power = tide_r_str(r);
    s->power_t = (tide_time_t)tide_r_u64(r);
    s->rlpools = tide_r_str(r);
    return r->bad || r->pos != r->n || nn != (size_t)tide_cluster_nodes(d->cluster) ||
                   nd != d->n_svcs || s->n_reps != (size_t)tide_engine_replicas(e) ||
                   s->n_jobs != (size_t)tide_engine_jobs(e)
               ? -1
               : 0;
}

/* Replace the daemon's derived state by the parsed one. */
static void derived_apply(tide_daemon_t *d, dsnap_t *s)
{
    d->now = s->top.now;
    d->next_wake = s->top.next_wake;
    d->started = s->top.started;
    d->notice_seq = s->top.notice_seq;
    memcpy(d->preempt, s->top.preempt, sizeof d->preempt);
    for (size_t i = 0; i < s->n_reps; i++)
        *dmn_rep(d, (int32_t)i) = s->reps[i];
    for (size_t i = 0; i < s->n_jobs; i++) {
        djob_t *j = dmn_job(d, (int32_t)i);
        j->width = s->jobs[i].width;
        j->notice = s->jobs[i].notice;
    }
    memcpy(d->node_up, s->node_up, (size_t)tide_cluster_nodes(d->cluster));
    if (d->n_svcs)
        memcpy(d->last_demand, s->demand, d->n_svcs * sizeof *d->last_demand);
    for (size_t i = 0; i < s->n_teams; i++) {
        dteam_t n = {.name = tide_xstrdup(s->names[i]),
                     .json = tide_xstrdup(s->jsons[i] ? s->jsons[i] : "")};
        char *name = NULL;
        tide_error_t err = {0};
        if (dmn_team_decode(n.json, &n.spec, &name, &err) < 0)
            memset(&n.spec, 0, sizeof n.spec); /* the engine has the team: only logs use it */
        n.spec.name = n.name;
        free(name);
        TIDE_PUSH(d->teams, d->n_teams, d->cap_teams, n);
    }
    dmn_power_restored(d, s->power, s->power_t);
    dmn_rl_pool_load(d, s->rlpools);
}

typedef struct restore_ctx {
    tide_daemon_t *d;
    int64_t step;      /* restored, -1 none */
    int skipped;
} restore_ctx_t;

/* One snapshot: 1 restored, 0 skipped (logged). */
static int restore_one(void *ctx, const tide_store_snapshot_t *snap)
{
    restore_ctx_t *c = ctx;
    tide_daemon_t *d = c->d;
    tide_error_t err = {0};
    tide_rbuf_t r;
    tide_r_init(&r, snap->state, snap->n);
    char magic[sizeof dsnap_magic];
    tide_r_raw(&r, magic, sizeof magic);
    size_t en = tide_r_count(&r, 1, SIZE_MAX);
    const uint8_t *eng = r.bad ? NULL : r.p + r.pos;
    r.pos += r.bad ? 0 : en;
    tide_engine_t *e = NULL;
    dsnap_t s = {0};
    if (!snap->intact)
        tide_errf(&err, TIDE_EINVAL, "checksum mismatch");
    else if (snap->version != DMN_SNAP_VERSION)
        tide_errf(&err, TIDE_EINVAL, "format version %lld, this build reads %d",
                  (long long)snap->version, DMN_SNAP_VERSION);
    else if (r.bad || memcmp(magic, dsnap_magic, sizeof magic))
        tide_errf(&err, TIDE_EINVAL, "not a tide daemon snapshot");
    else if ((e = tide_engine_restore(d->e, eng, en, &err)) &&
             r_derived(&r, d, e, &s) < 0)
        tide_errf(&err, TIDE_EINVAL, "daemon state truncated or malformed");
    if (err.msg[0]) {
        tide_engine_destroy(e);
        dsnap_free(&s);
        c->skipped++;
        dmn_log(d, "recovery: snapshot after step %lld ignored (%s)", (long long)snap->step,
                err.msg);
        return 0;
    }
    tide_engine_swap(d->e, e);
    tide_engine_destroy(e);
    derived_apply(d, &s);
    dsnap_free(&s);
    d->step = snap->step;
    c->step = snap->step;
    return 1;
}

int64_t dmn_snapshot_restore(tide_daemon_t *d, tide_error_t *err)
{
    restore_ctx_t c = {.d = d, .step = -1};
    if (d->snap_steps <= 0)
        return -1; /* snapshots off: the whole epoch is replayed */
    if (tide_store_snapshots(d->st, d->epoch, restore_one, &c, err) < 0)
        return -2;
    if (c.step >= 0) {
        d->snap_step = c.step;
        d->snap_t = d->now;
    }
    return c.step;
}
