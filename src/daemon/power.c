/* Measured power (`tide serve --power-query`, docs/serve.md "Measured
 * power"): every --power-interval of wall time the daemon pulls the GPUs'
 * measured draw (DCGM_FI_DEV_POWER_USAGE as dcgm-exporter exports it) from a
 * Prometheus instant query, attributes each GPU's watts to the state the
 * engine has that GPU in (free, serving at its service's load, training
 * uncapped, checkpointing / restoring / warming), fits the per-state draws of
 * its GPU type's model (tide_power_fit_apply: means, the serving line, smoothed
 * across pulls) and, when the fitted model moved, records it as a
 * `power_model` event (payload: the measured models as JSON) fed to the
 * engine before the next step, like a team definition. Replay and snapshots
 * therefore give the same model; a restart comes back with it. Failed pulls,
 * empty answers, bad values and unknown hosts are logged and change nothing. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/internal.h"
#include "formats/json.h"
#include "http/get.h"
#include "util/util.h"

#define PW_TIMEOUT_MS 5000
#define PW_MAX_BODY (16u << 20)
#define PW_ALPHA 0.3        /* smoothing of a state already measured */
#define PW_MIN_SAMPLES 1    /* samples of a state in one pull to fit it */
#define PW_MAX_TDP 2.0      /* a sample above this x the type's TDP is refused */
#define PW_MOVE_W 1.0       /* a new model is recorded when a draw moved this much */

/* The recorded (applied) measured state of one GPU type. */
typedef struct dptype {
    unsigned mask;               /* states measured (1 << TIDE_PSTATE_*) */
    long n[TIDE_PSTATE_COUNT];   /* samples behind the last fit, by state */
} dptype_t;

struct dpower {
    char *url;                   /* NULL: no pulls (recorded models still apply) */
    char *host_label, *gpu_label;
    double interval_s, next_pull;
    /* the last pull */
    double pulled_wall;          /* wall clock (d->clock) of the last answer, -1 none */
    tide_time_t pulled_t;        /* engine time of the last pull, -1 none */
    long pulls, failures, samples, used, rejected, unknown;
    int up;
    char last_err[sizeof(((tide_error_t *)0)->msg)];
    char warned[sizeof(((tide_error_t *)0)->msg)]; /* the last warning logged */
    /* recorded */
    char *payload;               /* the model applied last (NULL: declared) */
    tide_time_t applied_t;       /* engine time it was fed (-1 none) */
    long models;                 /* models applied in this process (replay included) */
    dptype_t type[TIDE_MAX_GPU_TYPES];
};

static const char *const field_names[] = {"idle_w", "serve_idle_w", "serve_full_w",
                                          "train_w", "ckpt_w", "min_cap_w"};
#define N_FIELDS (sizeof field_names / sizeof field_names[0])

static double *model_field(tide_power_model_t *m, size_t k)
{
    double *v[N_FIELDS] = {&m->idle_w, &m->serve_idle_w, &m->serve_full_w,
                           &m->train_w, &m->ckpt_w, &m->min_cap_w};
    return v[k];
}

/* ------------------------------------------------------------------ open */

int dmn_power_open(tide_daemon_t *d, const tide_daemon_opts_t *o, tide_error_t *err)
{
    dpower_t *p = tide_xcalloc(1, sizeof *p);
    d->pw = p;
    p->pulled_wall = -1;
    p->pulled_t = -1;
    p->applied_t = -1;
    p->up = 1;
    p->host_label = tide_xstrdup(o->power_host_label ? o->power_host_label : "Hostname");
    p->gpu_label = tide_xstrdup(o->power_gpu_label ? o->power_gpu_label : "gpu");
    p->interval_s = o->power_interval_s > 0 ? o->power_interval_s : 60;
    if (!o->power_query)
        return 0;
    char host[256], port[8], path[4096];
    if (tide_http_url_parse(o->power_query, host, sizeof host, port, sizeof port, path,
                            sizeof path, err) < 0)
        return tide_err_prefix(err, "--power-query: ");
    if (!strcmp(path, "/")) {
        /* a Prometheus base URL: the default query */
        size_t n = strlen(o->power_query) + 64;
        p->url = tide_xmalloc(n);
        snprintf(p->url, n, "%s%sapi/v1/query?query=DCGM_FI_DEV_POWER_USAGE", o->power_query,
                 o->power_query[strlen(o->power_query) - 1] == '/' ? "" : "/");
    } else {
        p->url = tide_xstrdup(o->power_query);
    }
    return 0;
}

void dmn_power_free(tide_daemon_t *d)
{
    if (!d->pw)
        return;
    free(d->pw->url);
    free(d->pw->host_label);
    free(d->pw->gpu_label);
    free(d->pw->payload);
    free(d->pw);
    d->pw = NULL;
}

/* ----------------------------------------------------------- recorded */

/* The engine back to the declared models, the recorded state cleared
 * (a fresh engine: replay applies the recorded models again). */
void dmn_power_reset(tide_daemon_t *d)
{
    dpower_t *p = d->pw;
    if (!p)
        return;
    free(p->payload);
    p->payload = NULL;
    p->applied_t = -1;
    memset(p->type, 0, sizeof p->type);
}

/* The masks and counts of a payload's types into p->type (the engine is
 * not touched); each type's model into m[t] when m is not NULL (declared
 * values where the payload has none). Returns the types it names, -1 when
 * the payload is not JSON. */
static int payload_read(tide_daemon_t *d, const char *payload, tide_power_model_t *m)
{
    json_t *j = payload ? json_loads(payload, 0, NULL) : NULL;
    if (!j)
        return -1;
    dpower_t *p = d->pw;
    memset(p->type, 0, sizeof p->type);
    int named = 0;
    size_t i;
    json_t *ty;
    json_array_foreach(json_object_get(j, "types"), i, ty)
    {
        int t = tide_cluster_type_find(d->cluster, json_string_value(json_object_get(ty, "type")));
        if (t < 0)
            continue;
        named++;
        for (size_t k = 0; m && k < N_FIELDS; k++) {
            json_t *v = json_object_get(ty, field_names[k]);
            if (json_is_number(v))
                *model_field(&m[t], k) = json_number_value(v);
        }
        json_t *meas = json_object_get(ty, "measured");
        for (int s = 0; s < TIDE_PSTATE_COUNT; s++) {
            json_t *n = json_object_get(meas, tide_power_state_name(s));
            if (json_is_integer(n)) {
                p->type[t].mask |= 1u << s;
                p->type[t].n[s] = (long)json_integer_value(n);
            }
        }
    }
    json_decref(j);
    return named;
}

int dmn_power_apply(tide_daemon_t *d, const char *payload, tide_time_t t)
{
    int nt = tide_cluster_types(d->cluster);
    tide_power_model_t m[TIDE_MAX_GPU_TYPES];
    for (int k = 0; k < nt && k < TIDE_MAX_GPU_TYPES; k++)
        m[k] = *tide_cluster_power_model(d->cluster, k); /* declared */
    if (payload_read(d, payload, m) < 0) {
        dmn_log(d, "power model ignored: the recorded payload is not JSON");
        return -1;
    }
    for (int k = 0; k < nt && k < TIDE_MAX_GPU_TYPES; k++) {
        tide_error_t err = {0};
        if (tide_engine_set_power_model(d->e, k, &m[k], &err) < 0) {
            dmn_log(d, "power model of %s ignored: %s", tide_cluster_type_name(d->cluster, k),
                    err.msg);
            tide_engine_set_power_model(d->e, k, tide_cluster_power_model(d->cluster, k), NULL);
            d->pw->type[k].mask = 0;
        }
    }
    free(d->pw->payload);
    d->pw->payload = tide_xstrdup(payload);
    d->pw->applied_t = t;
    d->pw->models++;
    return 0;
}

const char *dmn_power_payload(const tide_daemon_t *d, tide_time_t *t)
{
    *t = d->pw ? d->pw->applied_t : -1;
    return d->pw ? d->pw->payload : NULL;
}

void dmn_power_restored(tide_daemon_t *d, const char *payload, tide_time_t t)
{
    dmn_power_reset(d);
    if (!payload || payload_read(d, payload, NULL) < 0)
        return;
    d->pw->payload = tide_xstrdup(payload);
    d->pw->applied_t = t;
}

/* ---------------------------------------------------------------- pulls */

/* The backend's node names, sorted, to find a series' node in log time. */
typedef struct nname {
    const char *name;
    int node;
} nname_t;

static int nname_cmp(const void *a, const void *b)
{
    return strcmp(((const nname_t *)a)->name, ((const nname_t *)b)->name);
}

/* The names (NULL with *n 0 when the backend has none: the sim backend). */
static nname_t *names_sorted(const tide_daemon_t *d, size_t *n)
{
    int nn = tide_cluster_nodes(d->cluster);
    nname_t *v = tide_xcalloc(nn > 0 ? (size_t)nn : 1, sizeof *v);
    *n = 0;
    for (int k = 0; k < nn; k++)
        if ((v[*n].name = tide_backend_node_name(d->be, k)))
            v[(*n)++].node = k;
    qsort(v, *n, sizeof *v, nname_cmp);
    return v;
}

/* The node `host` names: a backend name, or that name followed by a domain
 * (gpu-01.example.com); without names, "node<N>" or "<N>". -1 unknown. */
static int node_of(const tide_daemon_t *d, const nname_t *names, size_t n, const char *host)
{
    if (n == 0) {
        const char *p = strncmp(host, "node", 4) ? host : host + 4;
        char *end;
        long k = strtol(p, &end, 10);
        return end != p && !*end && *p != '-' && *p != '+' && k < tide_cluster_nodes(d->cluster)
                   ? (int)k
                   : -1;
    }
    char b[256];
    snprintf(b, sizeof b, "%s", host);
    for (int pass = 0; pass < 2; pass++) {
        nname_t key = {.name = b};
        const nname_t *f = bsearch(&key, names, n, sizeof *names, nname_cmp);
        if (f)
            return f->node;
        char *dot = strchr(b, '.');
        if (!dot)
            break;
        *dot = '\0';
    }
    return -1;
}

/* The global index of GPU `gpu` (its index on the node) of `host`, its
 * node into *node; -1 when either is unknown. */
static int gpu_of(const tide_daemon_t *d, const nname_t *names, size_t n, const char *host,
                  const char *gpu, int *node)
{
    if (!host || !gpu)
        return -1;
    char *end;
    long k = strtol(gpu, &end, 10);
    tide_node_info_t ni;
    if (end == gpu || *end || k < 0 || (*node = node_of(d, names, n, host)) < 0 ||
        tide_cluster_node(d->cluster, *node, &ni) != 0 || k >= ni.gpus)
        return -1;
    return ni.first_gpu + (int)k;
}

/* The fit state of each GPU state (tide_state_t); -1: not attributed
 * (lost, foreign, a rehearsal). Serving and training are refined below. */
static const int pstate_of[TIDE_S_COUNT] = {
    [TIDE_S_SERVING] = TIDE_PSTATE_SERVING,  [TIDE_S_WARMING] = TIDE_PSTATE_CKPT,
    [TIDE_S_TRAINING] = TIDE_PSTATE_TRAINING, [TIDE_S_CHECKPOINTING] = TIDE_PSTATE_CKPT,
    [TIDE_S_RESTORING] = TIDE_PSTATE_CKPT,    [TIDE_S_LOST] = -1,
    [TIDE_S_IDLE] = TIDE_PSTATE_IDLE,         [TIDE_S_FOREIGN] = -1,
    [TIDE_S_REHEARSING] = -1};

/* The state GPU g of node n is in for the fit, and a serving GPU's load
 * (its service's demand over its ready capacity); -1 when its draw says
 * nothing about the model (a node down, foreign, a rehearsal, a capped job). */
static int gpu_pstate(tide_daemon_t *d, int g, int n, double *load)
{
    int cls, st, tier;
    if (d->node_up[n] != 1)
        return -1;
    dmn_gpu_class(d, g, &cls, &st, &tier);
    int ps = st >= 0 && st < TIDE_S_COUNT ? pstate_of[st] : -1;
    int32_t who = -1;
    tide_engine_gpu_owner(d->e, g, &who);
    if (ps == TIDE_PSTATE_SERVING) {
        int s = (size_t)who < d->n_reps ? d->reps[who].service : -1;
        const tide_service_spec_t *sp = s >= 0 ? tide_engine_service(d->e, s) : NULL;
        double demand = 0;
        int ready = sp ? tide_engine_service_ready(d->e, s, &demand) : 0;
        double cap = ready * (sp ? sp->replica_rps : 0);
        *load = cap > 0 && demand > 0 ? demand / cap : 0;
    } else if (ps == TIDE_PSTATE_TRAINING) {
        tide_job_info_t ji;
        if (tide_engine_job(d->e, who, &ji) != 0 || ji.cap_w > 0)
            return -1; /* a capped draw is not the uncapped training draw */
    }
    return ps;
}

/* Log msg once until another one comes (a warning repeated every pull is
 * noise). */
static void pw_warn(tide_daemon_t *d, const char *msg)
{
    if (!strcmp(d->pw->warned, msg))
        return;
    snprintf(d->pw->warned, sizeof d->pw->warned, "%s", msg);
    dmn_log(d, "power pull: %s; keeping the power model", msg);
}

/* The series into per-type fits (f has one per GPU type). */
static void pw_attribute(tide_daemon_t *d, const tide_prom_series_t *v, size_t n,
                         tide_power_fit_t *f)
{
    dpower_t *p = d->pw;
    p->samples = (long)n;
    p->used = p->rejected = p->unknown = 0;
    size_t nn;
    nname_t *names = names_sorted(d, &nn);
    for (size_t i = 0; i < n; i++) {
        int node = -1, g = gpu_of(d, names, nn, v[i].label[0], v[i].label[1], &node);
        if (g < 0) {
            p->unknown++;
            continue;
        }
        tide_node_info_t ni;
        tide_cluster_node(d->cluster, node, &ni);
        double load = 0, tdp = tide_cluster_power_model(d->cluster, ni.type)->tdp_w;
        if (!(v[i].value >= 0 && v[i].value <= PW_MAX_TDP * tdp)) {
            p->rejected++; /* a bad value is refused whatever state its GPU is in */
            continue;
        }
        int ps = gpu_pstate(d, g, node, &load);
        if (ps < 0)
            continue;
        if (tide_power_fit_add(&f[ni.type], ps, load, v[i].value, PW_MAX_TDP * tdp) < 0)
            p->rejected++;
        else
            p->used++;
    }
    free(names);
}

/* A model in the payload's JSON form (values to 0.01 W). */
static json_t *type_json(const tide_daemon_t *d, int t, const tide_power_model_t *m,
                         const dptype_t *pt)
{
    json_t *o = json_object();
    tide_json_set(o, "type", json_string(tide_cluster_type_name(d->cluster, t)));
    for (size_t k = 0; k < N_FIELDS; k++)
        tide_json_set(o, field_names[k],
                      json_real(round(*model_field((tide_power_model_t *)m, k) * 100) / 100));
    json_t *meas = json_object();
    for (int s = 0; s < TIDE_PSTATE_COUNT; s++)
        if (pt->mask & (1u << s))
            tide_json_set(meas, tide_power_state_name(s), json_integer(pt->n[s]));
    tide_json_set(o, "measured", meas);
    return o;
}

/* Did a draw move by PW_MOVE_W or more, or a state gain a measurement? */
static int model_moved(const tide_power_model_t *a, const tide_power_model_t *b, unsigned ma,
                       unsigned mb)
{
    if (ma != mb)
        return 1;
    for (size_t k = 0; k < N_FIELDS; k++)
        if (fabs(*model_field((tide_power_model_t *)a, k) -
                 *model_field((tide_power_model_t *)b, k)) >= PW_MOVE_W)
            return 1;
    return 0;
}

/* The fits moved into the engine's models: a power_model event queued for
 * the next step when some type's model moved. */
static void pw_fit(tide_daemon_t *d, const tide_power_fit_t *f, tide_time_t now)
{
    int nt = tide_cluster_types(d->cluster), moved = 0;
    json_t *types = json_array();
    for (int t = 0; t < nt && t < TIDE_MAX_GPU_TYPES; t++) {
        const tide_power_model_t *cur = tide_cluster_power_model(tide_engine_cluster(d->e), t);
        tide_power_model_t m = *cur;
        dptype_t pt = d->pw->type[t];
        if (tide_power_fit_apply(&f[t], PW_MIN_SAMPLES, PW_ALPHA, &m, &pt.mask) > 0) {
            for (int s = 0; s < TIDE_PSTATE_COUNT; s++)
                if (f[t].n[s] >= PW_MIN_SAMPLES)
                    pt.n[s] = f[t].n[s];
            moved |= model_moved(&m, cur, pt.mask, d->pw->type[t].mask);
        }
        if (pt.mask)
            json_array_append_new(types, type_json(d, t, &m, &pt));
    }
    json_t *o = json_object();
    tide_json_set(o, "types", types);
    char *js = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(12));
    json_decref(o);
    if (moved && js) {
        tide_grow((void **)&d->extra.v, &d->extra.cap, d->extra.n + 1, sizeof *d->extra.v);
        dmn_ev_t *x = &d->extra.v[d->extra.n++];
        memset(x, 0, sizeof *x);
        x->ev = dmn_blank_event(TIDE_STORE_KIND_POWER_MODEL);
        x->t = now;
        x->source = "power";
        x->payload = js;
        dmn_log(d, "power pull: %ld GPUs measured: a new power model is recorded", d->pw->used);
        dmn_kick(d);
        return;
    }
    free(js);
}

/* Fetch (no lock held) and parse one pull: 0 with the series, or -1 with err. */
static int pw_fetch(const char *url, const char *const *labels, tide_prom_series_t **v,
                    size_t *n, tide_error_t *err)
{
    char *body = NULL;
    size_t len = 0;
    int status = 0, rc = -1;
    if (tide_http_get(url, PW_TIMEOUT_MS, PW_MAX_BODY, &body, &len, &status, err) < 0)
        rc = -1;
    else if (status != 200)
        rc = tide_errf(err, TIDE_EIO, "HTTP %d", status);
    else
        rc = tide_prom_query_series(body, len, labels, 2, v, n, err);
    free(body);
    return rc;
}

/* A pull's answer (lock held). */
static void pw_answer(tide_daemon_t *d, int rc, const tide_error_t *err,
                      const tide_prom_series_t *v, size_t n, double w)
{
    dpower_t *p = d->pw;
    tide_time_t now = dmn_clock_now(d);
    p->pulls++;
    p->pulled_t = now;
    if (rc < 0 || n == 0) {
        p->failures++;
        p->up = 0;
        snprintf(p->last_err, sizeof p->last_err, "%s",
                 rc < 0 ? err->msg : "the query returned no series");
        pw_warn(d, p->last_err);
        return;
    }
    p->pulled_wall = w;
    p->up = 1;
    p->last_err[0] = '\0';
    tide_power_fit_t f[TIDE_MAX_GPU_TYPES];
    memset(f, 0, sizeof f);
    pw_attribute(d, v, n, f);
    char msg[sizeof p->warned];
    snprintf(msg, sizeof msg,
             "%ld of %zu series used, %ld refused (not a number, negative or above %.0f x TDP), "
             "%ld of unknown hosts or GPUs",
             p->used, n, p->rejected, PW_MAX_TDP, p->unknown);
    if (p->rejected || p->unknown)
        pw_warn(d, msg);
    else
        p->warned[0] = '\0';
    pw_fit(d, f, now);
}

void dmn_power_tick(tide_daemon_t *d)
{
    dpower_t *p = d->pw;
    double w = d->clock(d->clock_ctx);
    if (!p || !p->url || w < p->next_pull)
        return;
    p->next_pull = w + p->interval_s;
    char *url = tide_xstrdup(p->url);
    const char *labels[2] = {p->host_label, p->gpu_label}; /* owned by p: kept while d lives */
    tide_prom_series_t *v = NULL;
    size_t n = 0;
    tide_error_t err = {0};
    pthread_mutex_unlock(&d->mu);
    int rc = pw_fetch(url, labels, &v, &n, &err);
    pthread_mutex_lock(&d->mu);
    free(url);
    pw_answer(d, rc, &err, v, n, w);
    tide_prom_series_free(v, n);
}

/* ------------------------------------------------------------ surfaces */

/* The rows shown per GPU type: a draw of the model and the state whose
 * measurements fit it. */
static const struct prow {
    const char *name;
    size_t field;
    int state;
} prows[] = {{"idle", 0, TIDE_PSTATE_IDLE},           {"serving_unloaded", 1, TIDE_PSTATE_SERVING},
             {"serving_full", 2, TIDE_PSTATE_SERVING}, {"training", 3, TIDE_PSTATE_TRAINING},
             {"checkpointing", 4, TIDE_PSTATE_CKPT}};
#define N_PROWS (sizeof prows / sizeof prows[0])

static json_t *type_view(const tide_daemon_t *d, int t)
{
    tide_power_model_t dec = *tide_cluster_power_model(d->cluster, t);
    tide_power_model_t now = *tide_cluster_power_model(tide_engine_cluster(d->e), t);
    const dptype_t *pt = &d->pw->type[t];
    json_t *o = json_object(), *rows = json_object();
    tide_json_set(o, "type", json_string(tide_cluster_type_name(d->cluster, t)));
    tide_json_set(o, "tdp_w", api_num(dec.tdp_w));
    for (size_t i = 0; i < N_PROWS; i++) {
        int meas = (pt->mask >> prows[i].state) & 1;
        json_t *r = json_object();
        tide_json_set(r, "declared_w", api_num(*model_field(&dec, prows[i].field)));
        tide_json_set(r, "measured_w",
                      meas ? api_num(*model_field(&now, prows[i].field)) : json_null());
        tide_json_set(r, "used_w", api_num(*model_field(&now, prows[i].field)));
        tide_json_set(r, "source", json_string(meas ? "measured" : "declared"));
        tide_json_set(r, "samples", json_integer(meas ? pt->n[prows[i].state] : 0));
        tide_json_set(rows, prows[i].name, r);
    }
    tide_json_set(o, "states", rows);
    tide_json_set(o, "min_cap_w", api_num(now.min_cap_w));
    return o;
}

json_t *dmn_power_json(tide_daemon_t *d)
{
    dpower_t *p = d->pw;
    json_t *o = json_object();
    tide_json_set(o, "query", p->url ? json_string(p->url) : json_null());
    tide_json_set(o, "interval_s", api_num(p->interval_s));
    tide_json_set(o, "labels", json_pack("{s:s,s:s}", "host", p->host_label, "gpu", p->gpu_label));
    tide_json_set(o, "up", json_boolean(p->url && p->up));
    tide_json_set(o, "last_error", p->last_err[0] ? json_string(p->last_err) : json_null());
    tide_json_set(o, "pulled_at_s", api_time(p->pulled_t));
    double w = d->clock(d->clock_ctx);
    tide_json_set(o, "last_success_ago_s",
                  p->pulled_wall >= 0 ? api_num(w - p->pulled_wall) : json_null());
    tide_json_set(o, "pulls", json_integer(p->pulls));
    tide_json_set(o, "failures", json_integer(p->failures));
    tide_json_set(o, "series", json_pack("{s:I,s:I,s:I,s:I}", "total", (json_int_t)p->samples,
                                         "used", (json_int_t)p->used, "refused",
                                         (json_int_t)p->rejected, "unknown",
                                         (json_int_t)p->unknown));
    tide_json_set(o, "model_at_s", api_time(p->applied_t));
    json_t *types = json_array();
    for (int t = 0; t < tide_cluster_types(d->cluster) && t < TIDE_MAX_GPU_TYPES; t++)
        json_array_append_new(types, type_view(d, t));
    tide_json_set(o, "types", types);
    json_t *doms = json_array();
    for (int k = 0; k < tide_cluster_power_domains(d->cluster); k++) {
        tide_power_info_t pi;
        if (tide_engine_power(d->e, k, &pi) == 0)
            json_array_append_new(doms, json_pack("{s:i,s:o,s:o,s:o,s:i}", "domain", k, "watts",
                                                  api_num(pi.watts), "budget_w",
                                                  api_num(pi.budget_w), "nameplate_w",
                                                  api_num(pi.nameplate_w), "capped_gpus",
                                                  pi.capped_gpus));
    }
    tide_json_set(o, "domains", doms);
    return o;
}

void dmn_power_metrics(tide_daemon_t *d, tide_prom_t *p)
{
    dpower_t *pw = d->pw;
    tide_prom_family(p, "tide_power_model_watts", "gauge",
                     "Power model per GPU type and state: declared, and measured where "
                     "--power-query fitted it (the engine plans with measured when present).");
    for (int t = 0; t < tide_cluster_types(d->cluster) && t < TIDE_MAX_GPU_TYPES; t++) {
        tide_power_model_t dec = *tide_cluster_power_model(d->cluster, t);
        tide_power_model_t now = *tide_cluster_power_model(tide_engine_cluster(d->e), t);
        for (size_t i = 0; i < N_PROWS; i++) {
            const char *l[] = {"type", tide_cluster_type_name(d->cluster, t), "state",
                               prows[i].name, "source", "declared"};
            tide_prom_sample(p, "tide_power_model_watts", l, 3,
                             *model_field(&dec, prows[i].field));
            if (!((pw->type[t].mask >> prows[i].state) & 1))
                continue;
            l[5] = "measured";
            tide_prom_sample(p, "tide_power_model_watts", l, 3,
                             *model_field(&now, prows[i].field));
        }
    }
    double w = d->clock(d->clock_ctx);
    const tide_prom_scalar_t rows[] = {
        {"tide_power_pulls_total", "counter", "Pulls of measured GPU power (--power-query).",
         (double)pw->pulls},
        {"tide_power_pull_failures_total", "counter",
         "Power pulls that failed or returned no series (the model was kept).",
         (double)pw->failures},
        {"tide_power_pull_up", "gauge", "1 when the last power pull answered with series.",
         pw->url && pw->up ? 1 : 0},
        {"tide_power_pull_age_seconds", "gauge",
         "Wall seconds since the last power pull that answered (-1 never).",
         pw->pulled_wall >= 0 ? w - pw->pulled_wall : -1},
        {"tide_power_pull_refused", "gauge",
         "Series of the last pull refused (not a number, negative, above 2 x TDP).",
         (double)pw->rejected},
        {"tide_power_pull_unknown", "gauge",
         "Series of the last pull naming a host or GPU the cluster does not have.",
         (double)pw->unknown},
        {"tide_power_models_total", "counter",
         "Measured power models applied to the engine (replay included).", (double)pw->models}};
    tide_prom_scalars(p, rows, sizeof rows / sizeof rows[0], NULL, 0);
}

API_HANDLER(api_power)
{
    (void)req;
    tide_daemon_t *d = API_D(app);
    dmn_lock_read(d);
    json_t *o = dmn_power_json(d);
    dmn_unlock_read(d);
    tide_http_reply_json(rep, 200, o);
}
