/* Replay of a sim output folder for the dashboard (replay.h, docs/ui.md). */
#include "report/replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/csv.h"
#include "formats/json.h"
#include "formats/workload_io.h"
#include "tide/cluster.h"
#include "tide/engine.h"
#include "util/util.h"

enum { K_OTHER = 0, K_SUBMIT, K_START, K_RESIZE, K_NOTICE, K_STOP, K_FINISHED, K_EXPIRED,
       K_REP_START, K_REP_READY, K_REP_STOP, K_GRANT, K_RENEW, K_RETURN, K_NODE_FAIL,
       K_NODE_RECOVER };

static const char *const kind_names[] = {"", "submit", "job_start", "job_resize", "ckpt_notice",
    "job_stop", "job_finished", "job_expired", "replica_start", "replica_ready", "replica_stop",
    "lease_grant", "lease_renew", "lease_return", "fault_node_fail", "fault_node_recover"};

typedef struct row {
    tide_time_t t;
    int kind;
    char *kname;      /* events.csv's kind */
    int job, svc;     /* indexes or -1 */
    int replica, lease, gpus, width;
    char *reason;
    double deadline, value;
} row_t;

typedef struct rjob {
    char *id, *team;
    int prio, gang, dp_min, gpus;
    tide_time_t submitted, duration;
    /* state at the replayed time */
    int state;        /* -1 not submitted, else tide_job_state_t */
    int held, width, lease, noticed, preemptions;
    tide_time_t first_start, run_start, finished;
    double lost_gpu_s;
} rjob_t;

typedef struct rrep {
    int svc, gpus, ready, on;
} rrep_t;

typedef struct rlease {
    int job, gpus, on;
    double until;
} rlease_t;

typedef struct tl {
    tide_time_t t;
    double demand, ready;
} tl_t;

typedef struct urow {
    tide_time_t t;
    int team;         /* index in teams */
    double gpu_s;
    /* usage_teams.csv rows (gpu_s < 0 marks them) */
    int quota, used, borrowed;
    double weight, usage;
} urow_t;

struct tide_replay {
    char *policy;
    json_t *policies;
    tide_time_t end, step;
    int reserve;
    tide_cluster_t *c;
    int n_gpus;
    row_t *rows;
    size_t n_rows;
    rjob_t *jobs;
    size_t n_jobs;
    char **svcs;
    size_t n_svcs;
    int n_reps, n_leases;
    tl_t *tl;
    size_t n_tl;
    char **teams;
    size_t n_teams;
    urow_t *us, *ut; /* usage.csv team rows, usage_teams.csv rows */
    size_t n_us, n_ut;
    /* the replayed state (replay_to) */
    int8_t *okind;   /* per GPU: 0 free, 1 job, 2 replica */
    int *oid;
    uint8_t *down;   /* per node */
    rrep_t *reps;
    rlease_t *leases;
};

/* ---------------------------------------------------------------- loading */

static int intern(char ***v, size_t *n, const char *s)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp((*v)[i], s))
            return (int)i;
    *v = tide_xrealloc(*v, (*n + 1) * sizeof **v);
    (*v)[*n] = tide_xstrdup(s);
    return (int)(*n)++;
}

static int job_index(tide_replay_t *r, const char *id)
{
    for (size_t i = r->n_jobs; i-- > 0;)
        if (!strcmp(r->jobs[i].id, id))
            return (int)i;
    r->jobs = tide_xrealloc(r->jobs, (r->n_jobs + 1) * sizeof *r->jobs);
    rjob_t *j = &r->jobs[r->n_jobs];
    memset(j, 0, sizeof *j);
    j->id = tide_xstrdup(id);
    j->team = tide_xstrdup("?");
    j->prio = 2;
    j->gang = 1;
    j->dp_min = 1;
    j->lease = -1;
    return (int)r->n_jobs++;
}

static const char *fld(const tide_csv_t *c, int col) { return col >= 0 ? tide_csv_field(c, col) : ""; }
static double num(const tide_csv_t *c, int col, double def)
{
    const char *s = fld(c, col);
    return *s ? strtod(s, NULL) : def;
}

static int kind_of(const char *s)
{
    for (int k = 1; k < (int)(sizeof kind_names / sizeof kind_names[0]); k++)
        if (!strcmp(s, kind_names[k]))
            return k;
    return K_OTHER;
}

static int load_events(tide_replay_t *r, const char *path, tide_error_t *err)
{
    tide_csv_t *c = tide_csv_open_file(path, err);
    if (!c)
        return -1;
    int cp = tide_csv_col(c, "policy"), ct = tide_csv_col(c, "time_s"), ck = tide_csv_col(c, "kind");
    int cj = tide_csv_col(c, "job"), cs = tide_csv_col(c, "service"), cr = tide_csv_col(c, "replica");
    int cl = tide_csv_col(c, "lease"), cg = tide_csv_col(c, "gpus"), cw = tide_csv_col(c, "width");
    int crs = tide_csv_col(c, "reason"), cd = tide_csv_col(c, "deadline_s"), cv = tide_csv_col(c, "value");
    if (cp < 0 || ct < 0 || ck < 0) {
        tide_csv_close(c);
        return tide_errf(err, TIDE_EINVAL, "%s: not a tide sim events.csv (policy, time_s, kind)", path);
    }
    size_t cap = 0;
    int rc;
    while ((rc = tide_csv_next(c, err)) > 0) {
        if (strcmp(fld(c, cp), r->policy))
            continue;
        tide_grow((void **)&r->rows, &cap, r->n_rows + 1, sizeof *r->rows);
        row_t *w = &r->rows[r->n_rows++];
        memset(w, 0, sizeof *w);
        w->t = (tide_time_t)num(c, ct, 0);
        w->kname = tide_xstrdup(fld(c, ck));
        w->kind = kind_of(w->kname);
        w->job = *fld(c, cj) ? job_index(r, fld(c, cj)) : -1;
        w->svc = *fld(c, cs) ? intern(&r->svcs, &r->n_svcs, fld(c, cs)) : -1;
        w->replica = (int)num(c, cr, -1);
        w->lease = (int)num(c, cl, -1);
        w->gpus = (int)num(c, cg, -1);
        w->width = (int)num(c, cw, -1);
        w->reason = tide_xstrdup(fld(c, crs));
        w->deadline = num(c, cd, -1);
        w->value = num(c, cv, 0);
        r->n_reps = TIDE_MAX(r->n_reps, w->replica + 1);
        r->n_leases = TIDE_MAX(r->n_leases, w->lease + 1);
        if (w->kind == K_SUBMIT && w->job >= 0) {
            rjob_t *j = &r->jobs[w->job];
            j->submitted = w->t;
            j->gpus = w->gpus;
            j->duration = (tide_time_t)w->value;
            if (j->gang <= 1 && j->gpus > 0)
                j->gang = j->gpus <= 8 ? j->gpus : 8;
        }
    }
    tide_csv_close(c);
    return rc < 0 ? -1 : 0;
}

/* timeline.csv (optional): demand and ready capacity over the run. */
static void load_timeline(tide_replay_t *r, const char *path)
{
    tide_error_t err = {0};
    tide_csv_t *c = tide_csv_open_file(path, &err);
    if (!c)
        return;
    int cp = tide_csv_col(c, "policy"), ct = tide_csv_col(c, "time_s");
    int cd = tide_csv_col(c, "demand_rps"), cr = tide_csv_col(c, "ready_rps");
    size_t cap = 0;
    while (cp >= 0 && ct >= 0 && tide_csv_next(c, &err) > 0) {
        if (strcmp(fld(c, cp), r->policy))
            continue;
        tide_grow((void **)&r->tl, &cap, r->n_tl + 1, sizeof *r->tl);
        r->tl[r->n_tl++] = (tl_t){(tide_time_t)num(c, ct, 0), num(c, cd, 0), num(c, cr, 0)};
    }
    if (r->n_tl > 1)
        r->step = r->tl[1].t - r->tl[0].t;
    tide_csv_close(c);
}

/* usage.csv (team rows: GPU-seconds per interval) and usage_teams.csv
 * (quota state per interval), both optional. */
static void load_usage(tide_replay_t *r, const char *path, int teams_file)
{
    tide_error_t err = {0};
    tide_csv_t *c = tide_csv_open_file(path, &err);
    if (!c)
        return;
    int cp = tide_csv_col(c, "policy"), ct = tide_csv_col(c, "time_s");
    int co = tide_csv_col(c, teams_file ? "team" : "owner"), ck = tide_csv_col(c, "kind");
    int cg = tide_csv_col(c, "gpu_s"), cq = tide_csv_col(c, "quota_gpus");
    int cu = tide_csv_col(c, "used_gpus"), cb = tide_csv_col(c, "borrowed_gpus");
    int cw = tide_csv_col(c, "weight"), cf = tide_csv_col(c, "usage_gpu_s");
    urow_t **v = teams_file ? &r->ut : &r->us;
    size_t *n = teams_file ? &r->n_ut : &r->n_us, cap = 0;
    while (cp >= 0 && ct >= 0 && co >= 0 && tide_csv_next(c, &err) > 0) {
        if (strcmp(fld(c, cp), r->policy) || (!teams_file && strcmp(fld(c, ck), "team")))
            continue;
        tide_grow((void **)v, &cap, *n + 1, sizeof **v);
        urow_t *u = &(*v)[(*n)++];
        u->t = (tide_time_t)num(c, ct, 0);
        u->team = intern(&r->teams, &r->n_teams, fld(c, co));
        u->gpu_s = num(c, cg, 0);
        u->quota = (int)num(c, cq, -1);
        u->used = (int)num(c, cu, 0);
        u->borrowed = (int)num(c, cb, 0);
        u->weight = num(c, cw, 1);
        u->usage = num(c, cf, 0);
    }
    tide_csv_close(c);
}

static int load_summary(tide_replay_t *r, const char *dir, const char *policy, tide_error_t *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    json_error_t je;
    json_t *s = json_load_file(path, 0, &je);
    if (!s)
        return tide_errf(err, TIDE_ENOENT, "%s: %s (is %s a tide sim output folder?)", path, je.text, dir);
    json_t *pols = json_object_get(s, "policies");
    int rc = 0;
    if (!json_is_object(pols) || !json_object_size(pols)) {
        rc = tide_errf(err, TIDE_EINVAL, "%s: no policies", path);
    } else {
        r->end = (tide_time_t)json_number_value(json_object_get(s, "horizon_s"));
        r->n_gpus = (int)json_integer_value(json_object_get(s, "cluster_gpus"));
        const char *name = policy ? policy : json_object_iter_key(json_object_iter(pols));
        json_t *p = json_object_get(pols, name);
        r->policies = json_array();
        const char *k;
        json_t *v;
        json_object_foreach(pols, k, v) json_array_append_new(r->policies, json_string(k));
        if (!p) {
            rc = tide_errf(err, TIDE_ENOENT, "--policy: '%s' is not in %s (%s)", name, path,
                           json_string_value(json_array_get(r->policies, 0)));
        } else {
            r->policy = tide_xstrdup(name);
            r->reserve = (int)json_integer_value(json_object_get(json_object_get(p, "tier_a"), "reserve_gpus"));
        }
    }
    json_decref(s);
    return rc;
}

static int load_jobs(tide_replay_t *r, const char *jobs_csv, tide_error_t *err)
{
    tide_read_opts_t opts;
    memset(&opts, 0, sizeof opts);
    tide_jobs_t *js = tide_jobs_read_file(jobs_csv, &opts, err);
    if (!js)
        return -1;
    for (size_t i = 0; i < js->n; i++) {
        rjob_t *j = &r->jobs[job_index(r, js->v[i].id)];
        free(j->team);
        j->team = tide_xstrdup(js->v[i].team);
        j->prio = js->v[i].priority;
        j->gang = js->v[i].gang_gpus;
        j->dp_min = js->v[i].dp_min;
        if (!j->gpus)
            j->gpus = js->v[i].gpus;
    }
    tide_jobs_free(js);
    return 0;
}

tide_replay_t *tide_replay_open(const char *dir, const char *policy, const char *jobs_csv,
                                const char *cluster, tide_error_t *err)
{
    tide_replay_t *r = tide_xcalloc(1, sizeof *r);
    char path[4096], spec[64];
    r->step = 300;
    if (load_summary(r, dir, policy, err) < 0)
        goto fail;
    if (r->n_gpus <= 0) {
        tide_errf(err, TIDE_EINVAL, "%s/summary.json: no cluster_gpus", dir);
        goto fail;
    }
    if (!cluster) {
        if (r->n_gpus % 8)
            snprintf(spec, sizeof spec, "%dx1", r->n_gpus);
        else
            snprintf(spec, sizeof spec, "%dx8", r->n_gpus / 8);
        cluster = spec;
    }
    if (!(r->c = tide_cluster_parse(cluster, err)))
        goto fail;
    if (tide_cluster_gpus(r->c) != r->n_gpus) {
        tide_errf(err, TIDE_EINVAL, "--cluster: '%s' has %d GPUs, the run had %d", cluster,
                  tide_cluster_gpus(r->c), r->n_gpus);
        goto fail;
    }
    snprintf(path, sizeof path, "%s/events.csv", dir);
    if (load_events(r, path, err) < 0)
        goto fail;
    if (jobs_csv && load_jobs(r, jobs_csv, err) < 0)
        goto fail;
    snprintf(path, sizeof path, "%s/timeline.csv", dir);
    load_timeline(r, path);
    snprintf(path, sizeof path, "%s/usage.csv", dir);
    load_usage(r, path, 0);
    snprintf(path, sizeof path, "%s/usage_teams.csv", dir);
    load_usage(r, path, 1);
    for (size_t i = 0; i < r->n_jobs; i++)
        intern(&r->teams, &r->n_teams, r->jobs[i].team);
    r->okind = tide_xcalloc((size_t)r->n_gpus, 1);
    r->oid = tide_xcalloc((size_t)r->n_gpus, sizeof *r->oid);
    r->down = tide_xcalloc((size_t)tide_cluster_nodes(r->c) + 1, 1);
    r->reps = tide_xcalloc((size_t)r->n_reps + 1, sizeof *r->reps);
    r->leases = tide_xcalloc((size_t)r->n_leases + 1, sizeof *r->leases);
    return r;
fail:
    tide_replay_free(r);
    return NULL;
}

void tide_replay_free(tide_replay_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_rows; i++) {
        free(r->rows[i].kname);
        free(r->rows[i].reason);
    }
    for (size_t i = 0; i < r->n_jobs; i++) {
        free(r->jobs[i].id);
        free(r->jobs[i].team);
    }
    for (size_t i = 0; i < r->n_svcs; i++)
        free(r->svcs[i]);
    for (size_t i = 0; i < r->n_teams; i++)
        free(r->teams[i]);
    free(r->rows);
    free(r->jobs);
    free(r->svcs);
    free(r->teams);
    free(r->tl);
    free(r->us);
    free(r->ut);
    free(r->okind);
    free(r->oid);
    free(r->down);
    free(r->reps);
    free(r->leases);
    free(r->policy);
    json_decref(r->policies);
    tide_cluster_destroy(r->c);
    free(r);
}

tide_time_t tide_replay_end(const tide_replay_t *r) { return r->end; }
const char *tide_replay_policy(const tide_replay_t *r) { return r->policy; }

/* ---------------------------------------------------------------- replaying */

/* Give holder (kind, id) n more GPUs: replicas from the first GPU up, jobs
 * from the last down, on nodes that are up. */
static void take(tide_replay_t *r, int kind, int id, int n)
{
    for (int k = 0; k < r->n_gpus && n > 0; k++) {
        int g = kind == 2 ? k : r->n_gpus - 1 - k;
        if (r->okind[g])
            continue;
        r->okind[g] = (int8_t)kind;
        r->oid[g] = id;
        n--;
    }
}

/* Free n of its GPUs (n < 0: all), the last taken first. */
static void release(tide_replay_t *r, int kind, int id, int n)
{
    for (int k = 0; k < r->n_gpus && n != 0; k++) {
        int g = kind == 2 ? r->n_gpus - 1 - k : k;
        if (r->okind[g] == kind && r->oid[g] == id) {
            r->okind[g] = 0;
            n--;
        }
    }
}

static int preempting(const char *reason)
{
    static const char *const by_others[] = {"reclaim", "preempt", "priority", "quota", "window"};
    for (size_t i = 0; i < sizeof by_others / sizeof by_others[0]; i++)
        if (!strcmp(reason, by_others[i]))
            return 1;
    return 0;
}

static void apply_job(tide_replay_t *r, const row_t *w)
{
    rjob_t *j = &r->jobs[w->job];
    int gpus = w->gpus >= 0 ? w->gpus : w->width * j->gang;
    switch (w->kind) {
    case K_SUBMIT:
        j->state = TIDE_JOB_QUEUED;
        break;
    case K_START:
        release(r, 1, w->job, -1);
        take(r, 1, w->job, gpus);
        j->held = gpus;
        j->width = w->width;
        j->state = TIDE_JOB_RUNNING;
        j->noticed = 0;
        j->run_start = w->t;
        if (j->first_start < 0)
            j->first_start = w->t;
        break;
    case K_RESIZE:
        if (gpus < j->held)
            release(r, 1, w->job, j->held - gpus);
        else
            take(r, 1, w->job, gpus - j->held);
        j->held = gpus;
        j->width = w->width;
        j->state = TIDE_JOB_RUNNING;
        j->noticed = 0;
        break;
    case K_NOTICE:
        j->noticed = 1;
        j->state = TIDE_JOB_RECLAIMING;
        break;
    case K_STOP:
    case K_EXPIRED:
        release(r, 1, w->job, -1);
        j->held = j->width = j->noticed = 0;
        j->state = !strcmp(w->reason, "cancel") ? TIDE_JOB_CANCELLED : TIDE_JOB_QUEUED;
        j->preemptions += w->kind == K_STOP && preempting(w->reason);
        j->lost_gpu_s += w->value * (j->gpus > 0 ? j->gpus : 1);
        break;
    case K_FINISHED:
        release(r, 1, w->job, -1);
        j->held = j->width = j->noticed = 0;
        j->state = TIDE_JOB_DONE;
        j->finished = w->t;
        break;
    default:
        break;
    }
}

static void apply(tide_replay_t *r, const row_t *w)
{
    if (w->job >= 0 && w->kind >= K_SUBMIT && w->kind <= K_EXPIRED) {
        apply_job(r, w);
        return;
    }
    int rp = w->replica, ls = w->lease;
    switch (w->kind) {
    case K_REP_START:
        if (rp < 0)
            break;
        r->reps[rp] = (rrep_t){w->svc, w->gpus > 0 ? w->gpus : 1, 0, 1};
        take(r, 2, rp, r->reps[rp].gpus);
        break;
    case K_REP_READY:
        if (rp >= 0)
            r->reps[rp].ready = 1;
        break;
    case K_REP_STOP:
        if (rp >= 0) {
            release(r, 2, rp, -1);
            r->reps[rp].on = 0;
        }
        break;
    case K_GRANT:
        if (ls >= 0 && w->job >= 0) {
            r->leases[ls] = (rlease_t){w->job, w->gpus, 1, w->deadline};
            r->jobs[w->job].lease = ls;
        }
        break;
    case K_RENEW:
        if (ls >= 0 && w->deadline >= 0)
            r->leases[ls].until = w->deadline;
        break;
    case K_RETURN:
        if (ls >= 0) {
            r->leases[ls].on = 0;
            int jb = r->leases[ls].job;
            if (jb >= 0 && r->jobs[jb].lease == ls) {
                r->jobs[jb].lease = -1;
                if (r->jobs[jb].state == TIDE_JOB_RECLAIMING && r->jobs[jb].held) {
                    r->jobs[jb].state = TIDE_JOB_RUNNING;
                    r->jobs[jb].noticed = 0;
                }
            }
        }
        break;
    case K_NODE_FAIL:
    case K_NODE_RECOVER:
        if (w->value >= 0 && w->value < tide_cluster_nodes(r->c))
            r->down[(int)w->value] = w->kind == K_NODE_FAIL;
        break;
    default:
        break;
    }
}

/* Rebuild the state after every row at or before t; returns the index of
 * the first row after t. */
static size_t replay_to(tide_replay_t *r, tide_time_t t)
{
    memset(r->okind, 0, (size_t)r->n_gpus);
    memset(r->down, 0, (size_t)tide_cluster_nodes(r->c));
    memset(r->reps, 0, ((size_t)r->n_reps + 1) * sizeof *r->reps);
    memset(r->leases, 0, ((size_t)r->n_leases + 1) * sizeof *r->leases);
    for (size_t i = 0; i < r->n_jobs; i++) {
        rjob_t *j = &r->jobs[i];
        j->state = -1;
        j->held = j->width = j->noticed = j->preemptions = 0;
        j->lease = -1;
        j->first_start = j->run_start = j->finished = -1;
        j->lost_gpu_s = 0;
    }
    size_t i = 0;
    for (; i < r->n_rows && r->rows[i].t <= t; i++)
        apply(r, &r->rows[i]);
    return i;
}

/* The first row from `from` on of one of two kinds for job jb: its time or -1. */
static tide_time_t next_of(const tide_replay_t *r, size_t from, int jb, int k1, int k2, int k3)
{
    for (size_t i = from; i < r->n_rows; i++) {
        const row_t *w = &r->rows[i];
        if (w->job == jb && (w->kind == k1 || w->kind == k2 || w->kind == k3))
            return w->t;
    }
    return -1;
}

/* ---------------------------------------------------------------- views */

static json_t *time_or_null(tide_time_t t) { return t >= 0 ? json_integer(t) : json_null(); }

static const char *gpu_state(const tide_replay_t *r, int g, int node, int *lent_left)
{
    if (r->down[node])
        return "down";
    if (r->okind[g] == 2)
        return r->reps[r->oid[g]].ready ? "serving" : "warming";
    if (r->okind[g] != 1)
        return "idle";
    const rjob_t *j = &r->jobs[r->oid[g]];
    if (j->lease >= 0 && lent_left[r->oid[g]] > 0) {
        lent_left[r->oid[g]]--;
        return j->noticed ? "reclaiming" : "lent";
    }
    return j->noticed ? "reclaiming" : "training";
}

static json_t *gpu_json(const tide_replay_t *r, int g, int node, int *lent_left)
{
    json_t *o = json_object();
    char buf[300];
    tide_json_set(o, "gpu", json_integer(g));
    tide_json_set(o, "state", json_string(gpu_state(r, g, node, lent_left)));
    if (r->okind[g] == 1) {
        const rjob_t *j = &r->jobs[r->oid[g]];
        snprintf(buf, sizeof buf, "job:%s", j->id);
        tide_json_set(o, "owner", json_string(buf));
        tide_json_set(o, "team", json_string(j->team));
        tide_json_set(o, "priority", json_integer(j->prio));
        if (j->lease >= 0) {
            tide_json_set(o, "lease", json_integer(j->lease));
            tide_json_set(o, "latest_return_s", tide_json_num(r->leases[j->lease].until));
        }
    } else if (r->okind[g] == 2) {
        const rrep_t *p = &r->reps[r->oid[g]];
        snprintf(buf, sizeof buf, "replica:%d", r->oid[g]);
        tide_json_set(o, "owner", json_string(buf));
        if (p->svc >= 0)
            tide_json_set(o, "service", json_string(r->svcs[p->svc]));
    } else {
        tide_json_set(o, "owner", json_null());
    }
    if (g < r->reserve)
        tide_json_set(o, "tier_a", json_true());
    return o;
}

static json_t *v_nodes(tide_replay_t *r, const char *arg, tide_time_t t)
{
    (void)arg;
    replay_to(r, t);
    int *lent_left = tide_xcalloc(r->n_jobs + 1, sizeof *lent_left);
    for (size_t i = 0; i < r->n_jobs; i++)
        if (r->jobs[i].lease >= 0)
            lent_left[i] = r->leases[r->jobs[i].lease].gpus;
    json_t *arr = json_array();
    for (int n = 0; n < tide_cluster_nodes(r->c); n++) {
        tide_node_info_t ni;
        if (tide_cluster_node(r->c, n, &ni) != 0)
            continue;
        json_t *o = json_object(), *gs = json_array();
        tide_json_set(o, "node", json_integer(n));
        tide_json_set(o, "type", json_string(tide_cluster_type_name(r->c, ni.type)));
        tide_json_set(o, "domain", json_integer(ni.domain));
        tide_json_set(o, "up", json_boolean(!r->down[n]));
        for (int g = ni.first_gpu; g < ni.first_gpu + ni.gpus; g++)
            json_array_append_new(gs, gpu_json(r, g, n, lent_left));
        tide_json_set(o, "gpus", gs);
        json_array_append_new(arr, o);
    }
    free(lent_left);
    return json_pack("{s:o}", "nodes", arr);
}

static const tl_t *tl_at(const tide_replay_t *r, tide_time_t t)
{
    const tl_t *p = NULL;
    for (size_t i = 0; i < r->n_tl && r->tl[i].t <= t; i++)
        p = &r->tl[i];
    return p;
}

static json_t *svc_json(const char *name, int ready, int warming, int gpr, double demand, double rps)
{
    json_t *o = json_object();
    tide_json_set(o, "name", json_string(name));
    tide_json_set(o, "ready", json_integer(ready));
    tide_json_set(o, "warming", json_integer(warming));
    tide_json_set(o, "gpus_per_replica", gpr > 0 ? json_integer(gpr) : json_null());
    tide_json_set(o, "demand_rps", demand >= 0 ? tide_json_num(demand) : json_null());
    tide_json_set(o, "ready_rps", rps >= 0 ? tide_json_num(rps) : json_null());
    tide_json_set(o, "replica_rps", json_null());
    tide_json_set(o, "margin", json_null());
    tide_json_set(o, "forecast_peak_rps", json_null());
    tide_json_set(o, "forecast_peak_margin_rps", json_null());
    return o;
}

static json_t *v_services(tide_replay_t *r, const char *arg, tide_time_t t)
{
    (void)arg;
    replay_to(r, t);
    int ready = 0, warming = 0;
    json_t *arr = json_array();
    const tl_t *p = tl_at(r, t);
    for (int k = 0; k < r->n_reps; k++)
        if (r->reps[k].on)
            r->reps[k].ready ? ready++ : warming++;
    json_t *all = svc_json("all services", ready, warming, 0, p ? p->demand : -1, p ? p->ready : -1);
    tide_json_set(all, "aggregate", json_true());
    json_array_append_new(arr, all);
    for (size_t s = 0; s < r->n_svcs; s++) {
        int rd = 0, wm = 0, gpr = 0;
        for (int k = 0; k < r->n_reps; k++)
            if (r->reps[k].on && r->reps[k].svc == (int)s) {
                r->reps[k].ready ? rd++ : wm++;
                gpr = r->reps[k].gpus;
            }
        json_array_append_new(arr, svc_json(r->svcs[s], rd, wm, gpr, -1, -1));
    }
    return json_pack("{s:o}", "services", arr);
}

static json_t *v_leases(tide_replay_t *r, const char *arg, tide_time_t t)
{
    (void)arg;
    replay_to(r, t);
    json_t *arr = json_array();
    for (int l = 0; l < r->n_leases; l++) {
        const rlease_t *x = &r->leases[l];
        if (!x->on || x->job < 0)
            continue;
        const rjob_t *j = &r->jobs[x->job];
        json_array_append_new(arr, json_pack("{s:i,s:s,s:s,s:i,s:o,s:b}", "id", l, "job", j->id, "team",
                                             j->team, "gpus", x->gpus, "latest_return_s",
                                             tide_json_num(x->until), "noticed", j->noticed));
    }
    return json_pack("{s:o}", "leases", arr);
}

static const char *const state_names[] = {"queued", "running", "reclaiming", "done", "cancelled"};

static json_t *job_json(const tide_replay_t *r, const rjob_t *j, size_t next)
{
    json_t *o = json_object();
    int jb = (int)(j - r->jobs);
    int active = j->state == TIDE_JOB_RUNNING || j->state == TIDE_JOB_RECLAIMING;
    tide_json_set(o, "id", json_string(j->id));
    tide_json_set(o, "team", json_string(j->team));
    tide_json_set(o, "state", json_string(state_names[j->state]));
    tide_json_set(o, "priority", json_integer(j->prio));
    tide_json_set(o, "gpus", json_integer(j->gpus));
    tide_json_set(o, "gang_gpus", json_integer(j->gang));
    tide_json_set(o, "dp_min", json_integer(j->dp_min));
    tide_json_set(o, "dp_max", json_integer(j->gang > 0 ? j->gpus / j->gang : 0));
    tide_json_set(o, "duration_s", json_integer(j->duration));
    tide_json_set(o, "width", json_integer(active ? j->width : 0));
    tide_json_set(o, "held_gpus", json_integer(j->held));
    tide_json_set(o, "submitted_s", json_integer(j->submitted));
    tide_json_set(o, "started_s", time_or_null(j->first_start));
    tide_json_set(o, "run_started_s", time_or_null(active ? j->run_start : -1));
    tide_json_set(o, "expected_end_s",
                  time_or_null(active ? next_of(r, next, jb, K_STOP, K_FINISHED, K_EXPIRED) : -1));
    tide_json_set(o, "finished_s", time_or_null(j->finished));
    tide_json_set(o, "preemptions", json_integer(j->preemptions));
    tide_json_set(o, "lost_gpu_s", tide_json_num(j->lost_gpu_s));
    tide_json_set(o, "lease", j->lease >= 0 ? json_integer(j->lease) : json_null());
    tide_json_set(o, "reason", json_null());
    tide_json_set(o, "expected_start_s", json_null());
    tide_json_set(o, "position", json_null());
    return o;
}

static int cmp_queue(const void *a, const void *b)
{
    const rjob_t *x = *(const rjob_t *const *)a, *y = *(const rjob_t *const *)b;
    if (x->prio != y->prio)
        return x->prio < y->prio ? -1 : 1;
    if (x->submitted != y->submitted)
        return x->submitted < y->submitted ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Queued jobs in the scheduler's order with the reasons the engine's
 * inspection gives (tide_engine_queue), derived from counts: the head of a
 * priority waits for Resources (or is Ready), the others on Priority, or on
 * Reservation when they would fit the idle GPUs; GangTooLarge above the
 * GPUs up. Their expected start is when the run did start them. */
static void queue_json(const tide_replay_t *r, size_t next, json_t *arr)
{
    const rjob_t **q = tide_xmalloc((r->n_jobs + 1) * sizeof *q);
    size_t n = 0;
    int idle = 0, up = 0;
    for (int n2 = 0; n2 < tide_cluster_nodes(r->c); n2++) {
        tide_node_info_t ni;
        if (tide_cluster_node(r->c, n2, &ni) != 0 || r->down[n2])
            continue;
        up += ni.gpus;
        for (int g = ni.first_gpu; g < ni.first_gpu + ni.gpus; g++)
            idle += !r->okind[g];
    }
    for (size_t i = 0; i < r->n_jobs; i++)
        if (r->jobs[i].state == TIDE_JOB_QUEUED)
            q[n++] = &r->jobs[i];
    qsort(q, n, sizeof *q, cmp_queue);
    int head_prio = 0;
    for (size_t i = 0; i < n; i++) {
        const rjob_t *j = q[i];
        int need = j->gang * j->dp_min, reason;
        if (need > up)
            reason = TIDE_WAIT_GANG_TOO_LARGE;
        else if (head_prio != j->prio) {
            head_prio = j->prio;
            reason = need <= idle ? TIDE_WAIT_READY : TIDE_WAIT_RESOURCES;
        } else
            reason = need <= idle ? TIDE_WAIT_RESERVATION : TIDE_WAIT_PRIORITY;
        json_t *o = job_json(r, j, next);
        tide_json_set(o, "reason", json_string(tide_wait_name(reason)));
        tide_json_set(o, "expected_start_s", time_or_null(next_of(r, next, (int)(j - r->jobs), K_START,
                                                                  K_START, K_START)));
        tide_json_set(o, "position", json_integer((json_int_t)i + 1));
        json_array_append_new(arr, o);
    }
    free(q);
}

static json_t *v_jobs(tide_replay_t *r, const char *arg, tide_time_t t)
{
    size_t next = replay_to(r, t);
    json_t *arr = json_array();
    if (!arg || !strcmp(arg, "queued"))
        queue_json(r, next, arr);
    for (size_t i = 0; i < r->n_jobs; i++) {
        const rjob_t *j = &r->jobs[i];
        if (j->state < 0 || j->state == TIDE_JOB_QUEUED || (arg && strcmp(arg, state_names[j->state])))
            continue;
        json_array_append_new(arr, job_json(r, j, next));
    }
    return json_pack("{s:o,s:n}", "jobs", arr, "next");
}

static json_t *v_job(tide_replay_t *r, const char *arg, tide_time_t t)
{
    size_t next = replay_to(r, t);
    for (size_t i = 0; arg && i < r->n_jobs; i++)
        if (!strcmp(r->jobs[i].id, arg) && r->jobs[i].state >= 0) {
            if (r->jobs[i].state != TIDE_JOB_QUEUED)
                return job_json(r, &r->jobs[i], next);
            json_t *arr = json_array(), *o = NULL;
            queue_json(r, next, arr);
            for (size_t k = 0; k < json_array_size(arr); k++)
                if (!strcmp(json_string_value(json_object_get(json_array_get(arr, k), "id")), arg))
                    o = json_incref(json_array_get(arr, k));
            json_decref(arr);
            return o;
        }
    return NULL;
}

/* GPU-hours of team k up to t from usage.csv (intervals counted pro rata). */
static double team_hours(const tide_replay_t *r, int k, tide_time_t t)
{
    double s = 0;
    for (size_t i = 0; i < r->n_us; i++) {
        const urow_t *u = &r->us[i];
        if (u->team != k || u->t >= t)
            continue;
        double f = r->step > 0 ? (double)(t - u->t) / (double)r->step : 1;
        s += u->gpu_s * (f < 1 ? f : 1);
    }
    return s / 3600.0;
}

static json_t *v_usage(tide_replay_t *r, const char *arg, tide_time_t t)
{
    (void)arg;
    json_t *rows = json_array();
    for (size_t k = 0; k < r->n_teams; k++)
        json_array_append_new(rows, json_pack("{s:s,s:o}", "team", r->teams[k], "gpu_hours",
                                              tide_json_round(team_hours(r, (int)k, t), 3)));
    return json_pack("{s:s,s:o}", "by", "team", "rows", rows);
}

/* Teams as /v1/cluster gives them, from usage_teams.csv and the replay. */
static json_t *teams_json(tide_replay_t *r, tide_time_t t)
{
    json_t *arr = json_array();
    for (size_t k = 0; k < r->n_teams; k++) {
        const urow_t *u = NULL;
        for (size_t i = 0; i < r->n_ut; i++)
            if (r->ut[i].team == (int)k && r->ut[i].t <= t)
                u = &r->ut[i];
        int pre = 0, used = 0;
        double lost = 0;
        for (size_t i = 0; i < r->n_jobs; i++)
            if (!strcmp(r->jobs[i].team, r->teams[k])) {
                pre += r->jobs[i].preemptions;
                lost += r->jobs[i].lost_gpu_s;
                used += r->jobs[i].held;
            }
        json_t *o = json_object();
        tide_json_set(o, "team", json_string(r->teams[k]));
        tide_json_set(o, "weight", tide_json_num(u ? u->weight : 1));
        tide_json_set(o, "usage_gpu_s", tide_json_num(u ? u->usage : 0));
        tide_json_set(o, "quota_gpus", u && u->quota >= 0 ? json_integer(u->quota) : json_null());
        tide_json_set(o, "used_gpus", json_integer(used));
        tide_json_set(o, "borrowed_gpus", json_integer(u ? u->borrowed : 0));
        tide_json_set(o, "borrow_limit", json_null());
        tide_json_set(o, "lend_cap", json_null());
        tide_json_set(o, "preemptions", json_integer(pre));
        tide_json_set(o, "lost_gpu_hours", tide_json_round(lost / 3600.0, 3));
        tide_json_set(o, "gpu_hours", tide_json_round(team_hours(r, (int)k, t), 3));
        json_array_append_new(arr, o);
    }
    return arr;
}

static json_t *v_cluster(tide_replay_t *r, const char *arg, tide_time_t t)
{
    (void)arg;
    replay_to(r, t);
    char spec[512];
    tide_cluster_format(r->c, spec, sizeof spec);
    json_t *o = json_object();
    tide_json_set(o, "policy", json_string(r->policy));
    tide_json_set(o, "now_s", json_integer(t));
    tide_json_set(o, "gpus", json_integer(r->n_gpus));
    tide_json_set(o, "nodes", json_integer(tide_cluster_nodes(r->c)));
    tide_json_set(o, "domains", json_integer(tide_cluster_domains(r->c)));
    tide_json_set(o, "spec", json_string(spec));
    tide_json_set(o, "backend", json_string("replay"));
    tide_json_set(o, "speed", json_integer(1));
    tide_json_set(o, "teams", teams_json(r, t));
    tide_json_set(o, "replay", json_pack("{s:i,s:I,s:I,s:s,s:O}", "start_s", 0, "end_s", (json_int_t)r->end,
                                         "step_s", (json_int_t)r->step, "policy", r->policy, "policies",
                                         r->policies));
    return o;
}

static int is_action(int kind)
{
    return kind == K_START || kind == K_RESIZE || kind == K_NOTICE || kind == K_STOP ||
           kind == K_REP_START || kind == K_REP_STOP || kind == K_GRANT || kind == K_RENEW ||
           kind == K_RETURN;
}

static json_t *v_events(tide_replay_t *r, const char *arg, tide_time_t t)
{
    (void)arg;
    json_t *arr = json_array();
    size_t end = 0;
    while (end < r->n_rows && r->rows[end].t <= t)
        end++;
    for (size_t i = end; i-- > 0 && json_array_size(arr) < 300;) {
        const row_t *w = &r->rows[i];
        json_t *o = json_object();
        tide_json_set(o, "seq", json_integer((json_int_t)i + 1));
        tide_json_set(o, "time_s", json_integer(w->t));
        tide_json_set(o, "type", json_string(is_action(w->kind) ? "action" : "event"));
        tide_json_set(o, "kind", json_string(w->kname));
        if (w->job >= 0) {
            tide_json_set(o, "job", json_string(r->jobs[w->job].id));
            tide_json_set(o, "team", json_string(r->jobs[w->job].team));
        }
        if (w->svc >= 0)
            tide_json_set(o, "service", json_string(r->svcs[w->svc]));
        if (w->gpus >= 0)
            tide_json_set(o, "gpus", json_integer(w->gpus));
        if (w->width >= 0)
            tide_json_set(o, "width", json_integer(w->width));
        if (*w->reason)
            tide_json_set(o, "reason", json_string(w->reason));
        json_array_append_new(arr, o);
    }
    return json_pack("{s:o}", "events", arr);
}

static json_t *v_timeline(tide_replay_t *r, const char *arg, tide_time_t t)
{
    (void)arg;
    (void)t;
    json_t *ts = json_array(), *d = json_array(), *rd = json_array();
    for (size_t i = 0; i < r->n_tl; i++) {
        json_array_append_new(ts, json_integer(r->tl[i].t));
        json_array_append_new(d, tide_json_num(r->tl[i].demand));
        json_array_append_new(rd, tide_json_num(r->tl[i].ready));
    }
    return json_pack("{s:o,s:o,s:o}", "t", ts, "demand", d, "ready", rd);
}

typedef json_t *(*view_fn)(tide_replay_t *r, const char *arg, tide_time_t t);
static const struct {
    const char *name;
    view_fn fn;
} views[] = {
    {"cluster", v_cluster}, {"nodes", v_nodes}, {"services", v_services}, {"leases", v_leases},
    {"jobs", v_jobs}, {"job", v_job}, {"usage", v_usage}, {"events", v_events}, {"timeline", v_timeline},
};

json_t *tide_replay_view(tide_replay_t *r, const char *view, const char *arg, tide_time_t t)
{
    if (t < 0)
        t = 0;
    if (t > r->end)
        t = r->end;
    for (size_t i = 0; i < sizeof views / sizeof views[0]; i++)
        if (!strcmp(view, views[i].name))
            return views[i].fn(r, arg, t);
    return NULL;
}
