/* An RL job submitted through the daemon (docs/rl.md, "For a driver"):
 * POST /v1/rl/{job} with a "spec" object (the rl.csv columns) submits the
 * job's engine jobs ({job}-trainer, {job}-rollout, {job}-pool-N; tide_rl_jobs
 * in TIDE_RL_LENT mode) one by one through the same durable path as
 * POST /v1/jobs (dmn_job_submit: the group commit). A retry with the same
 * spec submits nothing twice (a job already there with the same shape is
 * kept); one with another shape is a 409. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/internal.h"
#include "formats/workload_io.h"
#include "tide/rl.h"
#include "util/util.h"

/* The spec's keys: rl.csv's columns but rl_id (the path) and submit_s (the
 * daemon's clock), plus "command" (what every job runs; a backend that runs
 * commands needs it). */
static const char *const spec_keys[] = {
    "team", "priority", "duration_s", "trainer_gpus", "step_s", "batch", "rollout_gpus",
    "replica_tps", "max_staleness", "min_replicas", "max_replicas", "trainer_gang_gpus",
    "replica_slots", "len_sigma", "sync_s", "drain_s", "seed", "weights_gb", "command", NULL};

/* A bounded text (the spec's CSV: a header and one row). */
typedef struct sbuf {
    char p[2048];
    size_t len;
    int over;
} sbuf_t;

static void sb_put(sbuf_t *b, const char *s, size_t n)
{
    if (b->over || b->len + n >= sizeof b->p) {
        b->over = 1;
        return;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

/* One CSV field for a JSON value (a number, or a string quoted). */
static int csv_field(sbuf_t *b, const char *key, const json_t *v, tide_error_t *err)
{
    char num[64];
    if (json_is_integer(v) || json_is_real(v)) {
        int n = json_is_integer(v) ? snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v))
                                   : snprintf(num, sizeof num, "%.17g", json_real_value(v));
        sb_put(b, num, (size_t)n);
    } else if (json_is_string(v)) {
        sb_put(b, "\"", 1);
        for (const char *p = json_string_value(v); *p; p++)
            sb_put(b, *p == '"' ? "\"\"" : p, *p == '"' ? 2 : 1);
        sb_put(b, "\"", 1);
    } else
        return tide_errf(err, TIDE_EINVAL, "spec.%s: expected a number or a string", key);
    return 0;
}

/* spec (an object) as one rl.csv row named job, read back by the rl.csv
 * reader (its checks and tide_rl_spec_normalize): *out owned (id, team),
 * *command owned or NULL. */
static int spec_parse(const json_t *spec, const char *job, const char *team,
                      tide_rl_specs_t **out, char **command, tide_error_t *err)
{
    if (!json_is_object(spec))
        return tide_errf(err, TIDE_EINVAL, "spec: expected an object (the rl.csv columns)");
    if (tide_json_only(spec, spec_keys, err) < 0)
        return tide_err_prefix(err, "spec: "), -1;
    sbuf_t hd = {0}, row = {0};
    sb_put(&hd, "rl_id,submit_s", 14);
    json_t *jid = json_string(job);
    int rc = csv_field(&row, "rl_id", jid, err);
    json_decref(jid);
    sb_put(&row, ",0", 2);
    const json_t *cmd = json_object_get(spec, "command");
    if (cmd && !json_is_string(cmd))
        return tide_errf(err, TIDE_EINVAL, "spec.command: expected a string");
    for (size_t i = 0; rc == 0 && spec_keys[i]; i++) {
        const json_t *v = json_object_get(spec, spec_keys[i]);
        if (!strcmp(spec_keys[i], "command") || (!v && strcmp(spec_keys[i], "team") &&
                                                 strcmp(spec_keys[i], "priority")))
            continue;
        json_t *dflt = v ? NULL : !strcmp(spec_keys[i], "team") ? json_string(team) : json_integer(2);
        sb_put(&hd, ",", 1);
        sb_put(&hd, spec_keys[i], strlen(spec_keys[i]));
        sb_put(&row, ",", 1);
        rc = csv_field(&row, spec_keys[i], v ? v : dflt, err);
        json_decref(dflt);
    }
    sb_put(&hd, "\n", 1);
    sb_put(&hd, row.p, row.len);
    sb_put(&hd, "\n", 1);
    if (rc == 0 && (hd.over || row.over))
        rc = tide_errf(err, TIDE_EINVAL, "spec: too long");
    if (rc == 0) {
        *out = tide_rl_specs_read_mem(hd.p, hd.len, "spec", NULL, err);
        rc = *out ? 0 : (tide_err_prefix(err, "spec: "), -1);
    }
    if (rc == 0 && (*out)->n != 1)
        rc = tide_errf(err, TIDE_EINVAL, "spec: not one RL job");
    *command = rc == 0 && cmd ? tide_xstrdup(json_string_value(cmd)) : NULL;
    return rc;
}

/* The same job shape (a retry of the same spec)? */
static int same_shape(const tide_job_spec_t *a, const tide_job_spec_t *b)
{
    return !strcmp(a->team ? a->team : "", b->team ? b->team : "") && a->priority == b->priority &&
           a->gpus == b->gpus && a->gang_gpus == b->gang_gpus && a->duration_s == b->duration_s &&
           a->ckpt_s == b->ckpt_s && a->restore_s == b->restore_s;
}

/* Checks before any job is submitted (no lock): team, every job fits, a
 * command when the backend runs one. 0, or -1 with the answer written. */
static int jobs_check(tide_daemon_t *d, const tide_http_req_t *req, const tide_rl_spec_t *s,
                      const tide_rl_jobs_t *j, const char *command, tide_http_reply_t *rep)
{
    tide_error_t err = {0};
    if (!api_is_admin(req) && strcmp(s->team, req->who.team)) {
        tide_http_reply_error(rep, 403, "EPERM", "spec.team: a %s of team %s cannot submit for team %s",
                              tide_role_name(req->who.role), req->who.team, s->team);
        return -1;
    }
    for (int k = 0; k < j->n; k++)
        if (tide_job_spec_fits(&j->v[k], d->cluster, &err) < 0) {
            tide_err_prefix(&err, "spec: job %s: ", j->id[k]);
            api_fail(rep, &err);
            return -1;
        }
    if (d->be_ops->needs_command && (!command || !*command)) {
        tide_http_reply_error(rep, 400, "EINVAL",
                              "spec.command: required with the %s backend", d->backend_name);
        return -1;
    }
    return 0;
}

/* Submit job k (or find it submitted with the same shape): 1 submitted,
 * 0 there already, -1 with the answer written. */
static int submit_one(tide_daemon_t *d, const tide_rl_jobs_t *j, int k, const char *command,
                      tide_http_reply_t *rep)
{
    tide_error_t err = {0};
    tide_job_request_t jr = {.spec = j->v[k], .id = tide_xstrdup(j->id[k]),
                             .team = tide_xstrdup(j->v[k].team),
                             .command = command ? tide_xstrdup(command) : NULL};
    jr.spec.id = jr.id;
    jr.spec.team = jr.team;
    char old[32];
    /* NULL: no audit row per job; the hook writes the request's one row */
    int rc = dmn_job_submit(d, NULL, &jr, old, sizeof old, &err) == 0 ? 1 : -1;
    if (rc < 0 && err.code == TIDE_EEXIST) {
        tide_store_job_t row;
        dmn_lock_read(d);
        int got = tide_store_job_get(dmn_rd(d), j->id[k], &row, &err);
        dmn_rd_done(d);
        dmn_unlock_read(d);
        if (got == 0 && same_shape(&row.spec, &j->v[k]))
            rc = 0;
        else if (got == 0)
            tide_errf(&err, TIDE_EEXIST, "job %s: already submitted with another spec", j->id[k]);
        if (got == 0)
            tide_store_job_free(&row);
    }
    if (rc < 0)
        api_write_failed(d, rep, &err);
    tide_job_request_free(&jr);
    return rc;
}

int dmn_rl_spec_read(const json_t *spec, const char *job, tide_rl_specs_t **out,
                     tide_error_t *err)
{
    char *command = NULL;
    int rc = spec_parse(spec, job, "team", out, &command, err);
    free(command);
    return rc;
}

int dmn_rl_spec_values(const json_t *spec, const char *job, int64_t *max_staleness,
                       int64_t *batch, tide_error_t *err)
{
    tide_rl_specs_t *ss = NULL;
    char *command = NULL;
    if (spec_parse(spec, job, "team", &ss, &command, err) < 0)
        return -1;
    *max_staleness = ss->v[0].max_staleness;
    *batch = ss->v[0].batch;
    free(command);
    tide_rl_specs_free(ss);
    return 0;
}

int dmn_rl_submit(tide_daemon_t *d, const tide_http_req_t *req, const char *job,
                  const json_t *spec, int *created, tide_http_reply_t *rep)
{
    tide_error_t err = {0};
    tide_rl_specs_t *ss = NULL;
    char *command = NULL;
    if (spec_parse(spec, job, req->who.team, &ss, &command, &err) < 0) {
        api_fail(rep, &err);
        return -1;
    }
    tide_rl_spec_t *s = &ss->v[0];
    tide_rl_jobs_t j;
    int rc = tide_rl_jobs(s, TIDE_RL_LENT, 0, &j, &err);
    if (rc < 0)
        api_fail(rep, &err);
    if (rc == 0) {
        rc = jobs_check(d, req, s, &j, command, rep);
        *created = 0;
        for (int k = 0; rc == 0 && k < j.n; k++) {
            int one = submit_one(d, &j, k, command, rep);
            rc = one < 0 ? -1 : 0;
            *created += one > 0;
        }
        tide_rl_jobs_free(&j);
    }
    free(command);
    tide_rl_specs_free(ss);
    return rc;
}

json_t *dmn_rl_jobs_json(tide_daemon_t *d, const char *job)
{
    static const char *const fixed[] = {"trainer", "rollout"};
    json_t *arr = json_array();
    char id[TIDE_RL_ID_MAX + 32], role[32];
    for (int k = 0;; k++) {
        if (k < 2)
            snprintf(role, sizeof role, "%s", fixed[k]);
        else
            snprintf(role, sizeof role, "pool-%d", k - 1);
        snprintf(id, sizeof id, "%.200s-%s", job, role);
        json_t *o = api_job_view(d, id);
        if (!o && k >= 2)
            break;
        if (!o)
            continue;
        api_set(o, "role", json_string(k < 2 ? role : "pool"));
        tide_job_info_t ji;
        int32_t h = tide_engine_job_find(d->e, id);
        if (k >= 2) /* held by the pool controller (rl_pool.c) */
            api_set(o, "held", json_boolean(h >= 0 && tide_engine_job(d->e, h, &ji) == 0 && ji.held));
        json_array_append_new(arr, o);
    }
    return arr;
}
