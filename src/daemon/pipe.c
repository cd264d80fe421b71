/* The model pipeline in the daemon (include/tide/pipeline.h drives it):
 * models and versions stored in the database (the `pipeline` table), jobs'
 * publish rules turning committed checkpoints into versions, evaluation
 * jobs submitted as P1 tide jobs, and the rollout enacted on the engine:
 * new-version replicas come from a surge (TIDE_EV_SURGE, placed or
 * reclaimed like any replica), old ones are retired one by one
 * (TIDE_EV_REPLICA_RETIRE). Every replica carries the version it runs (a
 * label set when it starts); routers read the weights from
 * GET /v1/services/{s}/routes. Runs after every live step (lock held). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/internal.h"
#include "formats/json.h"
#include "http/client.h"
#include "http/get.h"
#include "util/util.h"

/* A job's publish rule: every = N (every Nth committed checkpoint), 0 =
 * only the final one (the last commit when the job completes). */
typedef struct dpub {
    char *job, *model;
    int every, commits;
    int final_done;          /* every = 0: the final checkpoint was published */
    int64_t last_step, last_bytes;
    char *last_uri, *last_digest;
} dpub_t;

/* Per model: the canary's pushed SLO, the surge asked, the route. */
typedef struct dpm {
    char *link[TIDE_LINK_COUNT]; /* webhook, canary queries (TIDE_LINK_*), NULL none */
    char pull_err[160];      /* the last failed canary pull ("" = none), logged once */
    int pulled_v;            /* the version whose figures were last pulled (logged once) */
    int have_slo;
    double slo, err, lat;
    int surge_sent;
    double weight;
    int wv, wold;
} dpm_t;

struct dpipe {
    tide_pipeline_t *pl;
    tide_pipe_acts_t acts;
    dpub_t *pub;
    size_t n_pub, cap_pub;
    tide_pipe_labels_t lab;
    int64_t lab_epoch;
    char *secret;            /* $TIDE_WEBHOOK_SECRET at open: the webhooks' HMAC key */
    char rw_env[3][1200];    /* dmn_pipe_replica_work's last answer */
    const char *rw_list[4];
    tide_backend_work_t rw;
    dpm_t *m;
    size_t cap_m;
    uint64_t gen;
};

/* --------------------------------------------------------------- helpers */

static dpm_t *pm(tide_daemon_t *d, int mi)
{
    tide_grow_zeroed((void **)&d->pipe->m, &d->pipe->cap_m, (size_t)mi + 1, sizeof *d->pipe->m);
    return &d->pipe->m[mi];
}

/* The labels of the current engine's replicas (a new epoch: new handles). */
static tide_pipe_labels_t *labels(tide_daemon_t *d)
{
    struct dpipe *p = d->pipe;
    if (p->lab_epoch != d->epoch) {
        tide_pipe_labels_reset(&p->lab);
        p->lab_epoch = d->epoch;
    }
    return &p->lab;
}

static tide_pipe_label_t *lab(tide_daemon_t *d, int32_t r) { return tide_pipe_label(labels(d), r); }

static const char *model_name(tide_daemon_t *d, int mi)
{
    tide_model_info_t m;
    return tide_pipeline_model(d->pipe->pl, mi, &m) == 0 ? m.name : "?";
}

static void put_doc(tide_daemon_t *d, const char *kind, const char *key, json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12));
    tide_error_t err = {0};
    if (!s || tide_store_pipe_put(d->st, kind, key, s, &err) < 0)
        dmn_log(d, "pipeline: cannot store %s %s: %s", kind, key, err.msg);
    free(s);
    json_decref(o);
}

static void save_model(tide_daemon_t *d, int mi)
{
    tide_model_info_t m;
    if (tide_pipeline_model(d->pipe->pl, mi, &m) < 0)
        return;
    json_t *o = tide_json_model(&m);
    for (int k = 0; k < TIDE_LINK_COUNT; k++)
        if (pm(d, mi)->link[k])
            json_object_set_new(o, tide_model_link_names[k], json_string(pm(d, mi)->link[k]));
    put_doc(d, "model", m.name, o);
}

/* The rollout in flight, as tide_pipeline_restore_rollout takes it back
 * ({"active": false} when none). */
static void save_rollout(tide_daemon_t *d, int mi)
{
    tide_rollout_info_t r;
    if (tide_pipeline_rollout(d->pipe->pl, mi, &r) < 0)
        return;
    json_t *o = json_pack("{s:b,s:i,s:i,s:i,s:i,s:b,s:i,s:I,s:I,s:I}", "active", r.active,
                          "version", r.version, "old_version", r.old_version, "step", r.step,
                          "phase", r.phase, "paused", r.paused, "failures", r.failures,
                          "started_s", (json_int_t)r.started_at, "step_s", (json_int_t)r.step_at,
                          "hold_until_s", (json_int_t)r.hold_until);
    put_doc(d, "rollout", model_name(d, mi), o);
}

json_t *dmn_pipe_version_json(const tide_version_info_t *v)
{
    json_t *o = json_object(), *mx = json_object();
    for (size_t i = 0; i < v->n_metrics; i++)
        json_object_set_new(mx, v->metrics[i].name, tide_json_num(v->metrics[i].value));
    api_set(o, "version", json_integer(v->number));
    api_set(o, "state", json_string(tide_ver_state_name(v->state)));
    api_set(o, "source_job", api_str(v->source_job));
    api_set(o, "step", json_integer(v->ckpt_step));
    api_set(o, "manifest_uri", api_str(v->manifest_uri));
    api_set(o, "digest", api_str(v->digest));
    api_set(o, "size_bytes", json_integer(v->size_bytes));
    api_set(o, "registered_s", json_integer(v->registered_at));
    api_set(o, "state_s", json_integer(v->state_at));
    api_set(o, "gate", v->gate >= 0 ? json_string(tide_gate_name(v->gate)) : json_null());
    api_set(o, "metrics", mx);
    return o;
}

static void save_version(tide_daemon_t *d, int mi, int ver)
{
    tide_model_info_t m;
    tide_version_info_t v;
    if (tide_pipeline_model(d->pipe->pl, mi, &m) < 0 ||
        tide_pipeline_version(d->pipe->pl, mi, ver, &v) < 0)
        return;
    char key[200];
    snprintf(key, sizeof key, "%s/%06d", m.name, ver);
    put_doc(d, "version", key, dmn_pipe_version_json(&v));
}

static void save_label(tide_daemon_t *d, int32_t r)
{
    char key[64];
    snprintf(key, sizeof key, "%lld/%d", (long long)d->epoch, (int)r);
    const tide_pipe_label_t *l = lab(d, r);
    put_doc(d, "replica", key, json_pack("{s:i,s:i}", "model", l->model, "version", l->version));
}

static void save_pub(tide_daemon_t *d, const dpub_t *p)
{
    put_doc(d, "publish", p->job,
            json_pack("{s:s,s:i,s:i,s:b,s:I,s:I,s:o,s:o}", "model", p->model, "every", p->every,
                      "commits", p->commits, "final_done", p->final_done, "last_step", (json_int_t)p->last_step, "last_bytes",
                      (json_int_t)p->last_bytes, "last_uri", api_str(p->last_uri), "last_digest",
                      api_str(p->last_digest)));
}


/* ---------------------------------------------------------------- webhooks */

typedef struct hook {
    char host[256], port[16], path[1024], url[1024];
    char headers[256];
    char *body;
} hook_t;

/* Waits before the retries of a delivery (seconds): five attempts in ~15 s. */
static const double hook_retry_s[] = {1, 2, 4, 8};

/* One attempt: 1 delivered (2xx-4xx but 429), 0 worth retrying. */
static int hook_try(const hook_t *h)
{
    tide_http_call_t rq = {.method = "POST", .host = h->host, .port = h->port, .path = h->path,
                           .headers = h->headers, .body = h->body, .body_len = strlen(h->body),
                           .what = h->url, .timeout_ms = 2000, .max = 65536};
    tide_http_resp_t resp = {0};
    if (tide_http_request(&rq, &resp, NULL) < 0)
        return 0;
    int st = resp.status;
    tide_http_resp_free(&resp);
    return st < 500 && st != 429;
}

/* One delivery, on its own detached thread: an attempt of 2 s, retried after
 * a refused connection, a timeout, a 5xx or a 429 (1, 2, 4, 8 s later). */
static void *hook_send(void *arg)
{
    hook_t *h = arg;
    for (size_t i = 0; !hook_try(h) && i < sizeof hook_retry_s / sizeof *hook_retry_s; i++) {
        struct timespec ts = {.tv_sec = (time_t)hook_retry_s[i]};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
        }
    }
    free(h->body);
    free(h);
    return NULL;
}

/* POST {"model", "version", "event", "detail", "time_s"} to the model's
 * webhook, signed: X-Tide-Signature: sha256=HMAC-SHA256(secret, body). */
static void webhook(tide_daemon_t *d, int mi, int ver, const char *kind, const char *detail)
{
    const char *url = pm(d, mi)->link[TIDE_LINK_WEBHOOK];
    if (!url)
        return;
    hook_t *h = tide_xcalloc(1, sizeof *h);
    if (tide_http_url_parse(url, h->host, sizeof h->host, h->port, sizeof h->port, h->path,
                            sizeof h->path, NULL) < 0) {
        free(h);
        return;
    }
    snprintf(h->url, sizeof h->url, "%s", url);
    json_t *o = json_pack("{s:s,s:i,s:s,s:s,s:I}", "model", model_name(d, mi), "version", ver,
                          "event", kind, "detail", detail, "time_s", (json_int_t)d->now);
    h->body = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    unsigned char mac[32];
    char hex[65] = "";
    const char *key = d->pipe->secret ? d->pipe->secret : "";
    tide_hmac_sha256(key, strlen(key), h->body, strlen(h->body), mac);
    snprintf(h->headers, sizeof h->headers,
             "Content-Type: application/json\r\nX-Tide-Event: %s\r\n%s%s%s", kind,
             d->pipe->secret ? "X-Tide-Signature: sha256=" : "",
             d->pipe->secret ? tide_hex(mac, 32, hex) : "", d->pipe->secret ? "\r\n" : "");
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &at, hook_send, h) != 0) {
        free(h->body);
        free(h);
    }
    pthread_attr_destroy(&at);
}

/* Record what happened (the pipeline's event log) and say it. */
static void note(tide_daemon_t *d, int mi, int ver, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void note(tide_daemon_t *d, int mi, int ver, const char *kind, const char *fmt, ...)
{
    char detail[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    tide_error_t err = {0};
    if (tide_store_pipe_event_add(d->st, d->now, model_name(d, mi), ver, kind, detail, &err) < 0)
        dmn_log(d, "pipeline: %s", err.msg);
    dmn_log(d, "model %s v%d %s: %s", model_name(d, mi), ver, kind, detail);
    webhook(d, mi, ver, kind, detail);
}

/* -------------------------------------------------------------- registry */

static void set_links(tide_daemon_t *d, int mi, char *const *link)
{
    for (int k = 0; k < TIDE_LINK_COUNT; k++) {
        free(pm(d, mi)->link[k]);
        pm(d, mi)->link[k] = link[k] && *link[k] ? tide_xstrdup(link[k]) : NULL;
    }
    pm(d, mi)->pull_err[0] = 0;
}

const char *dmn_pipe_link(tide_daemon_t *d, int mi, int k) { return pm(d, mi)->link[k]; }

int dmn_pipe_model_define(tide_daemon_t *d, const tide_model_request_t *mr, tide_error_t *err)
{
    const tide_model_spec_t *m = &mr->spec;
    int mi = tide_pipeline_add_model(d->pipe->pl, m, err);
    if (mi < 0)
        return -1;
    pm(d, mi)->surge_sent = -1;
    set_links(d, mi, mr->link);
    save_model(d, mi);
    note(d, mi, 0, "defined", "service %s", m->service);
    return mi;
}

int dmn_pipe_register(tide_daemon_t *d, int mi, const tide_version_spec_t *v, tide_error_t *err)
{
    int ver = tide_pipeline_register(d->pipe->pl, mi, v, dmn_clock_now(d), err);
    if (ver < 0)
        return -1;
    save_version(d, mi, ver);
    note(d, mi, ver, "registered", "job %s step %lld %s", v->source_job ? v->source_job : "-",
         (long long)v->ckpt_step, v->manifest_uri);
    dmn_kick(d);
    return ver;
}

int dmn_pipe_metric(tide_daemon_t *d, int mi, int ver, const char *name, double value,
                    tide_error_t *err)
{
    if (tide_pipeline_metric(d->pipe->pl, mi, ver, name, value, err) < 0)
        return -1;
    save_version(d, mi, ver);
    return 0;
}

static void canary_set(tide_daemon_t *d, int mi, double slo, double error_rate, double latency_ms)
{
    dpm_t *x = pm(d, mi);
    x->have_slo = 1;
    x->slo = slo;
    x->err = error_rate;
    x->lat = latency_ms;
}

int dmn_pipe_canary(tide_daemon_t *d, int mi, double slo, double error_rate, double latency_ms,
                    tide_error_t *err)
{
    if (mi < 0 || mi >= tide_pipeline_models(d->pipe->pl))
        return tide_errf(err, TIDE_ENOENT, "unknown model");
    canary_set(d, mi, slo, error_rate, latency_ms);
    dmn_log(d, "model %s: canary reports slo %g, errors %g, latency %g ms at t=%lld",
            model_name(d, mi), slo, error_rate, latency_ms, (long long)dmn_clock_now(d));
    dmn_kick(d);
    return 0;
}

/* ------------------------------------------------------------ canary pulls */

/* tmpl with "{version}" and "{model}" (percent-encoded) replaced; 0, or -1
 * when the result does not fit. */
static int expand(const char *tmpl, const char *model, int ver, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *c = tmpl; *c; c++) {
        char piece[512] = "";
        if (!strncmp(c, "{version}", 9)) {
            snprintf(piece, sizeof piece, "%d", ver);
            c += 8;
        } else if (!strncmp(c, "{model}", 7)) {
            for (const unsigned char *m = (const unsigned char *)model; *m && strlen(piece) < 500; m++)
                snprintf(piece + strlen(piece), sizeof piece - strlen(piece),
                         isalnum(*m) || strchr("-_.~", *m) ? "%c" : "%%%02X", *m);
            c += 6;
        } else {
            piece[0] = *c;
            piece[1] = 0;
        }
        size_t k = strlen(piece);
        if (n + k + 1 > cap)
            return -1;
        memcpy(out + n, piece, k + 1);
        n += k;
    }
    return 0;
}

size_t dmn_pipe_pulls(tide_daemon_t *d, dpull_t **v, size_t *cap)
{
    size_t n = 0;
    int models = d->pipe ? tide_pipeline_models(d->pipe->pl) : 0;
    for (int mi = 0; mi < models; mi++) {
        tide_rollout_info_t ro;
        if (tide_pipeline_rollout(d->pipe->pl, mi, &ro) < 0 || !ro.active || ro.paused ||
            !(ro.weight > 0))
            continue;
        for (int k = TIDE_LINK_SLO_QUERY; k < TIDE_LINK_COUNT; k++) {
            const char *tmpl = pm(d, mi)->link[k];
            if (!tmpl)
                continue;
            tide_grow((void **)v, cap, n + 1, sizeof **v);
            dpull_t *p = &(*v)[n];
            memset(p, 0, sizeof *p);
            *p = (dpull_t){.model = mi, .version = ro.version, .link = k};
            if (expand(tmpl, model_name(d, mi), ro.version, p->url, sizeof p->url) == 0) {
                n++;
            } else if (strcmp(pm(d, mi)->pull_err, "URL too long")) {
                snprintf(pm(d, mi)->pull_err, sizeof pm(d, mi)->pull_err, "URL too long");
                dmn_log(d, "model %s: %s is too long once expanded; the step holds",
                        model_name(d, mi), tide_model_link_names[k]);
            }
        }
    }
    return n;
}

void dmn_pipe_pull_fetch(dpull_t *v, size_t n, int timeout_ms)
{
    for (size_t i = 0; i < n; i++) {
        dsrc_t src = {.url = v[i].url};
        dmn_demand_fetch(&src, 1, &v[i].got, timeout_ms);
    }
}

/* Range of each pulled figure (the gates' own). */
static int pulled_ok(const dpull_t *p)
{
    double x = p->got.value;
    return p->got.ok && (p->link == TIDE_LINK_LATENCY_QUERY ? x >= 0 : x >= 0 && x <= 1);
}

void dmn_pipe_pull_apply(tide_daemon_t *d, const dpull_t *v, size_t n)
{
    for (size_t i = 0; i < n;) {
        int mi = v[i].model;
        double fig[TIDE_LINK_COUNT] = {0, 1, 0, 0}; /* unset: SLO 1, no errors, no latency */
        const dpull_t *bad = NULL;
        size_t j = i;
        for (; j < n && v[j].model == mi; j++) {
            if (!pulled_ok(&v[j]) && !bad)
                bad = &v[j];
            fig[v[j].link] = v[j].got.value;
        }
        tide_rollout_info_t ro;
        dpm_t *x = pm(d, mi);
        if (tide_pipeline_rollout(d->pipe->pl, mi, &ro) < 0 || !ro.active ||
            ro.version != v[i].version) {
            /* the rollout moved on while fetching: nothing to apply */
        } else if (bad) {
            char why[160];
            snprintf(why, sizeof why, "%s: %.120s", tide_model_link_names[bad->link],
                     bad->got.ok ? "value out of range" : bad->got.err);
            if (strcmp(why, x->pull_err))
                dmn_log(d, "model %s v%d: canary pull failed (%s); the step holds until figures come", model_name(d, mi),
                        bad->version, why);
            snprintf(x->pull_err, sizeof x->pull_err, "%s", why);
        } else {
            if (x->pull_err[0] || x->pulled_v != v[i].version)
                dmn_log(d, "model %s v%d: canary pulled: slo %g, errors %g, latency %g ms",
                        model_name(d, mi), v[i].version, fig[TIDE_LINK_SLO_QUERY],
                        fig[TIDE_LINK_ERROR_QUERY], fig[TIDE_LINK_LATENCY_QUERY]);
            x->pull_err[0] = 0;
            x->pulled_v = v[i].version;
            canary_set(d, mi, fig[TIDE_LINK_SLO_QUERY], fig[TIDE_LINK_ERROR_QUERY],
                       fig[TIDE_LINK_LATENCY_QUERY]);
        }
        i = j;
    }
}

int dmn_pipe_control(tide_daemon_t *d, int mi, int cmd, int ver, tide_error_t *err)
{
    static const char *const names[] = {"pause", "resume", "promote", "abort"};
    if (tide_pipeline_control(d->pipe->pl, mi, cmd, ver, err) < 0)
        return -1;
    save_rollout(d, mi);
    note(d, mi, ver, names[cmd], "by an operator");
    dmn_kick(d);
    return 0;
}

const tide_backend_work_t *dmn_pipe_replica_work(tide_daemon_t *d, int32_t r)
{
    struct dpipe *p = d->pipe;
    int mi, ver;
    tide_version_info_t v;
    if (!p || dmn_pipe_label(d, r, &mi, &ver) < 0 || ver < 1 ||
        tide_pipeline_version(p->pl, mi, ver, &v) < 0)
        return NULL;
    snprintf(p->rw_env[0], sizeof p->rw_env[0], "TIDE_MODEL=%s", model_name(d, mi));
    snprintf(p->rw_env[1], sizeof p->rw_env[1], "TIDE_MODEL_VERSION=%d", ver);
    snprintf(p->rw_env[2], sizeof p->rw_env[2], "TIDE_MODEL_MANIFEST=%s", v.manifest_uri);
    for (int k = 0; k < 3; k++)
        p->rw_list[k] = p->rw_env[k];
    p->rw_list[3] = NULL;
    p->rw = (tide_backend_work_t){.env = p->rw_list};
    return &p->rw;
}

tide_pipeline_t *dmn_pipe_pl(tide_daemon_t *d) { return d->pipe->pl; }
uint64_t dmn_pipe_gen(tide_daemon_t *d) { return d->pipe->gen; }

int dmn_pipe_label(tide_daemon_t *d, int32_t r, int *model, int *version)
{
    const tide_pipe_label_t *l = lab(d, r);
    *model = l->model;
    *version = l->version;
    return l->model;
}

void dmn_pipe_route(tide_daemon_t *d, int mi, double *weight, int *version, int *old)
{
    const dpm_t *x = pm(d, mi);
    *weight = x->weight;
    *version = x->wv;
    *old = x->wold;
}

/* --------------------------------------------------------------- publish */

int dmn_pipe_publish_parse(const char *body, size_t len, char **model, int *every,
                           tide_error_t *err)
{
    *model = NULL;
    *every = -1;
    json_error_t je;
    json_t *o = json_loadb(body, len, 0, &je);
    const json_t *m = o ? json_object_get(o, "model") : NULL, *p = o ? json_object_get(o, "publish") : NULL;
    int rc = 0;
    if (m && !json_is_string(m))
        rc = tide_errf(err, TIDE_EINVAL, "model: expected a model name");
    else if (p && !m)
        rc = tide_errf(err, TIDE_EINVAL, "publish: needs the model the job trains (model)");
    else if (p && json_is_string(p) && !strcmp(json_string_value(p), "final"))
        *every = 0;
    else if (p && json_is_string(p) && !strcmp(json_string_value(p), "every"))
        *every = 1;
    else if (p && json_is_integer(p) && json_integer_value(p) >= 1 && json_integer_value(p) <= 1000000)
        *every = (int)json_integer_value(p);
    else if (p)
        rc = tide_errf(err, TIDE_EINVAL,
                       "publish: expected \"every\" (each committed checkpoint), a whole number N "
                       "(every Nth) or \"final\"");
    else if (m)
        *every = 1;
    if (rc == 0 && m)
        *model = tide_xstrdup(json_string_value(m));
    json_decref(o);
    return rc;
}

static dpub_t *pub_find(tide_daemon_t *d, const char *job)
{
    for (size_t i = 0; i < d->pipe->n_pub; i++)
        if (!strcmp(d->pipe->pub[i].job, job))
            return &d->pipe->pub[i];
    return NULL;
}

static dpub_t *pub_add(tide_daemon_t *d, const char *job, const char *model, int every)
{
    struct dpipe *p = d->pipe;
    tide_grow((void **)&p->pub, &p->cap_pub, p->n_pub + 1, sizeof *p->pub);
    dpub_t *x = &p->pub[p->n_pub++];
    *x = (dpub_t){.job = tide_xstrdup(job), .model = tide_xstrdup(model), .every = every,
                  .last_step = -1};
    return x;
}

void dmn_pipe_publish_set(tide_daemon_t *d, const char *job, const char *model, int every)
{
    if (!model || every < 0 || pub_find(d, job))
        return;
    save_pub(d, pub_add(d, job, model, every));
}

static void publish(tide_daemon_t *d, dpub_t *p)
{
    int mi = tide_pipeline_model_find(d->pipe->pl, p->model);
    char uri[512];
    if (mi < 0) {
        dmn_log(d, "job %s publishes to model %s, which is not defined: skipped", p->job, p->model);
        return;
    }
    if (!p->last_uri)
        snprintf(uri, sizeof uri, "tide://jobs/%s/checkpoints/%lld", p->job, (long long)p->last_step);
    tide_version_spec_t v = {.source_job = p->job, .ckpt_step = p->last_step,
                             .manifest_uri = p->last_uri ? p->last_uri : uri,
                             .digest = p->last_digest, .size_bytes = p->last_bytes > 0 ? p->last_bytes : 0};
    tide_error_t err = {0};
    if (dmn_pipe_register(d, mi, &v, &err) < 0)
        dmn_log(d, "job %s: checkpoint %lld not registered: %s", p->job, (long long)p->last_step,
                err.msg);
}

void dmn_pipe_ckpt(tide_daemon_t *d, const char *job, int64_t step, int64_t bytes,
                   const char *manifest, const char *digest)
{
    dpub_t *p = pub_find(d, job);
    if (!p)
        return;
    p->commits++;
    p->last_step = step >= 0 ? step : p->commits;
    p->last_bytes = bytes;
    free(p->last_uri);
    free(p->last_digest);
    p->last_uri = manifest && *manifest ? tide_xstrdup(manifest) : NULL;
    p->last_digest = digest && *digest ? tide_xstrdup(digest) : NULL;
    save_pub(d, p);
    if (p->every > 0 && p->commits % p->every == 0)
        publish(d, p);
}

/* ------------------------------------------------------------ evaluation */

static void eval_id(tide_daemon_t *d, int mi, int ver, char *buf, size_t n)
{
    snprintf(buf, n, "eval-%s-v%d", model_name(d, mi), ver);
}

/* Submit the evaluation job of a version (a P1 tide job) in its own
 * transaction, as the API's submit would. An id already taken is the
 * evaluation submitted before a restart: its outcome is awaited. */
static int eval_submit(tide_daemon_t *d, int mi, int ver, int gpus, tide_time_t limit,
                       tide_error_t *err)
{
    tide_model_info_t m;
    tide_version_info_t v;
    tide_pipeline_model(d->pipe->pl, mi, &m);
    tide_pipeline_version(d->pipe->pl, mi, ver, &v);
    char id[200], vs[32];
    eval_id(d, mi, ver, id, sizeof id);
    tide_store_job_t old;
    if (tide_store_job_get(d->st, id, &old, NULL) == 0) {
        tide_store_job_free(&old);
        return 0;
    }
    tide_job_spec_t sp = {.id = id, .team = "pipeline", .priority = TIDE_P1, .gpus = gpus,
                          .duration_s = limit};
    if (tide_job_spec_normalize(&sp, err) < 0 || tide_job_spec_fits(&sp, d->cluster, err) < 0)
        return -1;
    snprintf(vs, sizeof vs, "%d", ver);
    json_t *env = json_pack("{s:s,s:s,s:s}", "TIDE_MODEL", m.name, "TIDE_MODEL_VERSION", vs,
                            "TIDE_MODEL_MANIFEST", v.manifest_uri);
    char *envs = json_dumps(env, JSON_COMPACT);
    json_decref(env);
    tide_time_t now = dmn_clock_now(d);
    sp.submit_s = now;
    tide_store_job_t row = {.spec = sp, .command = (char *)m.eval_command, .env = envs,
                            .state = (char *)"queued", .submitted_s = now, .updated_s = now};
    tide_event_t ev = dmn_blank_event(TIDE_EV_JOB_SUBMIT);
    dmn_evx_t x = {.job_id = id, .spec = &sp};
    int64_t seq;
    tide_time_t t;
    int rc = tide_store_begin(d->st, err);
    if (rc == 0 && (tide_store_job_insert(d->st, &row, err) < 0 ||
                    dmn_pending_append(d, &ev, &x, &seq, &t, err) < 0)) {
        tide_store_rollback(d->st);
        rc = -1;
    }
    if (rc == 0 && (rc = dmn_store_commit(d, err)) == 0)
        dmn_queue(d, &ev, &x, seq, t);
    free(envs);
    return rc;
}

/* Evaluation jobs that ended report to the pipeline. */
static void eval_poll(tide_daemon_t *d, int mi)
{
    tide_model_info_t m;
    tide_pipeline_model(d->pipe->pl, mi, &m);
    for (int ver = 1; ver <= m.versions && m.eval_command; ver++) {
        tide_version_info_t v;
        tide_pipeline_version(d->pipe->pl, mi, ver, &v);
        if (v.state != TIDE_VER_EVALUATING || v.gate >= 0)
            continue;
        char id[200];
        eval_id(d, mi, ver, id, sizeof id);
        tide_job_info_t ji;
        int32_t h = tide_engine_job_find(d->e, id);
        if (h < 0 || tide_engine_job(d->e, h, &ji) < 0 ||
            (ji.state != TIDE_JOB_DONE && ji.state != TIDE_JOB_CANCELLED))
            continue;
        if (tide_pipeline_eval_done(d->pipe->pl, mi, ver, ji.state == TIDE_JOB_DONE, NULL) == 0)
            note(d, mi, ver, "evaluated", "job %s %s", id, tide_job_state_name(ji.state));
    }
}

/* ---------------------------------------------------------------- rollout */

/* Label the replicas the step started (and store the labels). */
void dmn_pipe_label_starts(tide_daemon_t *d)
{
    if (!d->pipe || !tide_pipeline_models(d->pipe->pl))
        return;
    for (size_t i = 0; i < d->acts.n; i++)
        if (d->acts.v[i].kind == TIDE_ACT_REPLICA_START || d->acts.v[i].kind == TIDE_ACT_REPLICA_STOP)
            d->pipe->gen++;
    int32_t got[256];
    size_t n = tide_pipeline_label_starts(d->pipe->pl, d->e, &d->acts, labels(d), got, 256);
    for (size_t i = 0; i < n && i < 256; i++)
        save_label(d, got[i]);
}

/* Make the engine hold what the rollout asks: the surge, retirements (fed
 * at the next step, persisted with it like any loop event). */
static void sync_engine(tide_daemon_t *d, int mi)
{
    tide_event_t ev[64];
    size_t n = tide_pipeline_engine_events(d->pipe->pl, mi, d->e, labels(d), &pm(d, mi)->surge_sent,
                                           ev, 64);
    for (size_t i = 0; i < n; i++)
        dmn_devq_push(&d->extra, &ev[i], d->now, 0, NULL, "pipeline");
}

static void observe(tide_daemon_t *d, int mi)
{
    tide_pipe_count_t c;
    if (tide_pipeline_count(d->pipe->pl, mi, d->e, labels(d), &c) < 0)
        return;
    dpm_t *x = pm(d, mi);
    tide_pipe_obs_t o = {.need = c.need, .gpus_per_replica = c.gpus_per_replica,
                         .held_old = c.held_old, .held_new = c.held_new,
                         .ready_new = c.ready_new, .have_slo = x->have_slo, .slo = x->slo,
                         .error_rate = x->err, .latency_ms = x->lat,
                         .slo_expected = x->link[TIDE_LINK_SLO_QUERY] ||
                                         x->link[TIDE_LINK_ERROR_QUERY] ||
                                         x->link[TIDE_LINK_LATENCY_QUERY]};
    tide_error_t err = {0};
    if (tide_pipeline_observe(d->pipe->pl, mi, &o, &err) < 0)
        dmn_log(d, "pipeline: %s", err.msg);
    x->have_slo = 0;
}

static int steps_of(tide_daemon_t *d, int mi)
{
    tide_model_info_t m;
    return tide_pipeline_model(d->pipe->pl, mi, &m) == 0 ? m.plan->n_steps : 0;
}

static void enact_one(tide_daemon_t *d, const tide_pipe_act_t *a)
{
    dpm_t *x = pm(d, a->model);
    tide_error_t err = {0};
    switch (a->kind) {
    case TIDE_PA_EVAL_START:
        if (eval_submit(d, a->model, a->version, a->n, a->deadline, &err) < 0) {
            note(d, a->model, a->version, "eval-failed", "%s", err.msg);
            tide_pipeline_eval_done(d->pipe->pl, a->model, a->version, 0, NULL);
        }
        return;
    case TIDE_PA_STATE:
        save_version(d, a->model, a->version);
        note(d, a->model, a->version, "state", "%s", tide_ver_state_name(a->state));
        return;
    case TIDE_PA_ROUTE:
        x->weight = a->weight;
        x->wv = a->version;
        x->wold = a->old_version;
        d->pipe->gen++;
        return;
    case TIDE_PA_STEP:
        note(d, a->model, a->version, "step", "%d of %d: %g%% of requests", a->step + 1,
             steps_of(d, a->model), a->weight);
        return;
    case TIDE_PA_ROLLBACK:
        note(d, a->model, a->version, "rollback", "to version %d at step %d (%s)", a->old_version,
             a->step + 1, a->gate >= 0 ? "gate failed" : "aborted");
        return;
    case TIDE_PA_PROMOTED:
        note(d, a->model, a->version, "promoted", "serving 100%%; version %d retired",
             a->old_version);
        return;
    default:
        return;
    }
}

/* Jobs publishing their final checkpoint that completed. */
static void publish_finals(tide_daemon_t *d)
{
    for (size_t i = 0; i < d->pipe->n_pub; i++) {
        dpub_t *p = &d->pipe->pub[i];
        tide_job_info_t ji;
        int32_t h = p->every == 0 && !p->final_done ? tide_engine_job_find(d->e, p->job) : -1;
        if (h < 0 || tide_engine_job(d->e, h, &ji) < 0 || ji.state != TIDE_JOB_DONE)
            continue;
        p->final_done = 1;
        save_pub(d, p);
        if (p->commits > 0)
            publish(d, p);
    }
}

void dmn_pipe_step(tide_daemon_t *d, tide_time_t t)
{
    struct dpipe *p = d->pipe;
    if (!p || !tide_pipeline_models(p->pl))
        return;
    publish_finals(d);
    int n = tide_pipeline_models(p->pl);
    for (int mi = 0; mi < n; mi++) {
        eval_poll(d, mi);
        observe(d, mi);
    }
    tide_error_t err = {0};
    if (tide_pipeline_step(p->pl, t, &p->acts, &err) < 0) {
        dmn_log(d, "pipeline: %s", err.msg);
        if (d->check)
            d->failed = 1; /* an invariant broke: stop, as the engine's do */
    }
    int dirty[64] = {0};
    for (size_t i = 0; i < p->acts.n; i++) {
        enact_one(d, &p->acts.v[i]);
        if (p->acts.v[i].model < 64)
            dirty[p->acts.v[i].model] = 1;
    }
    for (int mi = 0; mi < n; mi++) {
        if (mi >= 64 || dirty[mi]) {
            save_model(d, mi);
            save_rollout(d, mi);
        }
        sync_engine(d, mi);
    }
    if (p->acts.next_wake < d->next_wake)
        d->next_wake = p->acts.next_wake;
}

/* ------------------------------------------------------------ open, free */

/* A stored row that does not load is skipped with a log line, never a
 * daemon that cannot start (the row stays in the database for a person). */
static int skip_row(tide_daemon_t *d, const char *kind, const char *key, const char *why)
{
    dmn_log(d, "pipeline: stored %s %s skipped: %s", kind, key, why && *why ? why : "not valid");
    return 0;
}

static int load_model(void *ctx, const char *key, const char *value)
{
    tide_daemon_t *d = ctx;
    tide_model_request_t mr;
    tide_error_t err = {0};
    if (tide_json_model_request(value, strlen(value), &mr, &err) < 0)
        return skip_row(d, "model", key, err.msg);
    int mi = tide_pipeline_add_model(d->pipe->pl, &mr.spec, &err);
    if (mi >= 0) {
        pm(d, mi)->surge_sent = -1;
        set_links(d, mi, mr.link);
    }
    tide_model_request_free(&mr);
    return mi < 0 ? skip_row(d, "model", key, err.msg) : 0;
}

static int load_version(void *ctx, const char *key, const char *value)
{
    tide_daemon_t *d = ctx;
    char name[160];
    const char *slash = strrchr(key, '/');
    if (!slash || (size_t)(slash - key) >= sizeof name)
        return skip_row(d, "version", key, "bad key");
    memcpy(name, key, (size_t)(slash - key));
    name[slash - key] = 0;
    int mi = tide_pipeline_model_find(d->pipe->pl, name);
    json_t *o = json_loads(value, 0, NULL);
    const char *state = json_string_value(json_object_get(o, "state"));
    tide_version_spec_t v = {
        .source_job = json_string_value(json_object_get(o, "source_job")),
        .ckpt_step = json_integer_value(json_object_get(o, "step")),
        .manifest_uri = json_string_value(json_object_get(o, "manifest_uri")),
        .digest = json_string_value(json_object_get(o, "digest")),
        .size_bytes = json_integer_value(json_object_get(o, "size_bytes"))};
    int ver = mi >= 0 ? tide_pipeline_register(d->pipe->pl, mi, &v,
                                               json_integer_value(json_object_get(o, "registered_s")),
                                               NULL)
                      : -1;
    const char *k;
    json_t *x;
    json_object_foreach(json_object_get(o, "metrics"), k, x)
        tide_pipeline_metric(d->pipe->pl, mi, ver, k, json_number_value(x), NULL);
    for (int s = 0; ver > 0 && state && s < TIDE_VER_COUNT; s++)
        if (!strcmp(state, tide_ver_state_name(s)))
            tide_pipeline_restore_version(d->pipe->pl, mi, ver, s,
                                          json_integer_value(json_object_get(o, "state_s")), NULL);
    json_decref(o);
    return ver > 0 ? 0 : skip_row(d, "version", key, "unknown model or bad row");
}

static int load_pub(void *ctx, const char *key, const char *value)
{
    tide_daemon_t *d = ctx;
    json_t *o = json_loads(value, 0, NULL);
    const char *model = json_string_value(json_object_get(o, "model"));
    if (model) {
        dpub_t *p = pub_add(d, key, model, (int)json_integer_value(json_object_get(o, "every")));
        p->commits = (int)json_integer_value(json_object_get(o, "commits"));
        p->final_done = json_is_true(json_object_get(o, "final_done"));
        p->last_step = json_integer_value(json_object_get(o, "last_step"));
        p->last_bytes = json_integer_value(json_object_get(o, "last_bytes"));
        const char *u = json_string_value(json_object_get(o, "last_uri"));
        const char *g = json_string_value(json_object_get(o, "last_digest"));
        p->last_uri = u ? tide_xstrdup(u) : NULL;
        p->last_digest = g ? tide_xstrdup(g) : NULL;
    }
    json_decref(o);
    return model ? 0 : skip_row(d, "publish rule", key, "no model");
}

static int load_label(void *ctx, const char *key, const char *value)
{
    tide_daemon_t *d = ctx;
    long long epoch;
    int r;
    if (sscanf(key, "%lld/%d", &epoch, &r) != 2 || r < 0 || r > 1 << 24)
        return skip_row(d, "replica label", key, "bad key");
    if (epoch != d->epoch)
        return 0;
    json_t *o = json_loads(value, 0, NULL);
    *lab(d, r) = (tide_pipe_label_t){.model = (int)json_integer_value(json_object_get(o, "model")),
                          .version = (int)json_integer_value(json_object_get(o, "version"))};
    json_decref(o);
    return 0;
}

/* Aliases, once the versions are back (the candidate: by its rollout, below). */
static int load_aliases(void *ctx, const char *key, const char *value)
{
    tide_daemon_t *d = ctx;
    int mi = tide_pipeline_model_find(d->pipe->pl, key);
    tide_model_request_t mr;
    if (mi < 0 || tide_json_model_request(value, strlen(value), &mr, NULL) < 0)
        return 0; /* skipped (and logged) by load_model */
    for (int k = 0; k < TIDE_ALIAS_COUNT; k++)
        tide_pipeline_restore_alias(d->pipe->pl, mi, k, k == TIDE_ALIAS_CANDIDATE ? 0 : mr.alias[k],
                                    NULL);
    tide_model_request_free(&mr);
    return 0;
}

/* A rollout in flight at the stop goes on where it was (after the aliases). */
static int load_rollout(void *ctx, const char *key, const char *value)
{
    tide_daemon_t *d = ctx;
    int mi = tide_pipeline_model_find(d->pipe->pl, key);
    json_t *o = json_loads(value, 0, NULL);
    if (mi < 0 || !json_is_true(json_object_get(o, "active"))) {
        json_decref(o);
        return 0;
    }
    tide_rollout_info_t r = {
        .active = 1,
        .version = (int)json_integer_value(json_object_get(o, "version")),
        .old_version = (int)json_integer_value(json_object_get(o, "old_version")),
        .step = (int)json_integer_value(json_object_get(o, "step")),
        .phase = (int)json_integer_value(json_object_get(o, "phase")),
        .paused = json_is_true(json_object_get(o, "paused")),
        .failures = (int)json_integer_value(json_object_get(o, "failures")),
        .started_at = json_integer_value(json_object_get(o, "started_s")),
        .step_at = json_integer_value(json_object_get(o, "step_s")),
        .hold_until = json_integer_value(json_object_get(o, "hold_until_s"))};
    json_decref(o);
    tide_error_t err = {0};
    if (tide_pipeline_restore_rollout(d->pipe->pl, mi, &r, &err) < 0)
        return skip_row(d, "rollout", key, err.msg);
    dpm_t *x = pm(d, mi);
    tide_pipeline_rollout(d->pipe->pl, mi, &r);
    x->weight = r.weight;
    x->wv = r.version;
    x->wold = r.old_version;
    dmn_log(d, "model %s: the rollout of version %d goes on at step %d of %d", key, r.version,
            r.step + 1, steps_of(d, mi));
    return 0;
}

int dmn_pipe_open(tide_daemon_t *d, tide_error_t *err)
{
    d->pipe = tide_xcalloc(1, sizeof *d->pipe);
    d->pipe->pl = tide_pipeline_create(d->check || d->cfg.check_invariants);
    d->pipe->lab_epoch = d->epoch;
    const char *secret = getenv("TIDE_WEBHOOK_SECRET");
    d->pipe->secret = secret && *secret ? tide_xstrdup(secret) : NULL;
    tide_pipe_labels_init(&d->pipe->lab);
    tide_pipe_acts_init(&d->pipe->acts);
    if (tide_store_pipe_list(d->st, "model", load_model, d, err) < 0 ||
        tide_store_pipe_list(d->st, "version", load_version, d, err) < 0 ||
        tide_store_pipe_list(d->st, "model", load_aliases, d, err) < 0 ||
        tide_store_pipe_list(d->st, "rollout", load_rollout, d, err) < 0 ||
        tide_store_pipe_list(d->st, "publish", load_pub, d, err) < 0 ||
        tide_store_pipe_list(d->st, "replica", load_label, d, err) < 0)
        return -1;
    return 0;
}

void dmn_pipe_free(tide_daemon_t *d)
{
    struct dpipe *p = d->pipe;
    if (!p)
        return;
    tide_pipeline_destroy(p->pl);
    tide_pipe_acts_free(&p->acts);
    for (size_t i = 0; i < p->n_pub; i++) {
        free(p->pub[i].job);
        free(p->pub[i].model);
        free(p->pub[i].last_uri);
        free(p->pub[i].last_digest);
    }
    free(p->pub);
    tide_pipe_labels_free(&p->lab);
    for (size_t i = 0; i < p->cap_m; i++)
        for (int k = 0; k < TIDE_LINK_COUNT; k++)
            free(p->m[i].link[k]);
    free(p->m);
    free(p->secret);
    free(p);
    d->pipe = NULL;
}
