/* JSON request bodies -> validated specs. */
#include "http/codec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

#define MAX_COUNT 1048576LL          /* GPUs, replicas (as jobs.csv) */
#define MAX_SECONDS 100000000000LL   /* times (as jobs.csv) */

json_t *tide_json_parse_object(const char *body, size_t len, tide_error_t *err)
{
    if (!body || len == 0) {
        tide_errf(err, TIDE_EINVAL, "empty body: expected a JSON object");
        return NULL;
    }
    json_error_t je;
    json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        tide_errf(err, TIDE_EINVAL, "malformed JSON at line %d column %d: %s", je.line, je.column,
                  je.text);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        tide_errf(err, TIDE_EINVAL, "expected a JSON object");
        return NULL;
    }
    return j;
}

int tide_json_only(const json_t *obj, const char *const *allowed, tide_error_t *err)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        (void)v;
        int ok = 0;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = !strcmp(*a, key);
        if (!ok) {
            char list[512] = "";
            for (const char *const *a = allowed; *a; a++) {
                strncat(list, *a, sizeof list - strlen(list) - 1);
                if (a[1])
                    strncat(list, ", ", sizeof list - strlen(list) - 1);
            }
            return tide_errf(err, TIDE_EINVAL, "unknown field '%.100s' (expected %s)", key, list);
        }
    }
    return 0;
}

static const char *type_word(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number with a fraction";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* A whole number in [min, max]. Returns 1 present, 0 absent, -1 error. */
static int get_count(const json_t *o, const char *key, long long min, long long max,
                     long long *out, tide_error_t *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_integer(v))
        return tide_errf(err, TIDE_EINVAL, "%s: expected a whole number, got %s", key, type_word(v));
    long long x = json_integer_value(v);
    if (x < min || x > max)
        return tide_errf(err, TIDE_EINVAL, "%s: %lld is out of range (%lld..%lld)", key, x, min, max);
    *out = x;
    return 1;
}

/* A time in seconds: a number (decimals rounded) in [min, MAX_SECONDS]. */
static int get_seconds(const json_t *o, const char *key, long long min, long long *out,
                       tide_error_t *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_number(v))
        return tide_errf(err, TIDE_EINVAL, "%s: expected seconds (a number), got %s", key,
                         type_word(v));
    double d = json_number_value(v);
    if (!isfinite(d) || d < (double)min - 0.5 || d > (double)MAX_SECONDS)
        return tide_errf(err, TIDE_EINVAL, "%s: %g is out of range (%lld..%lld seconds)", key, d,
                         min, MAX_SECONDS);
    long long x = json_is_integer(v) ? json_integer_value(v) : llround(d);
    if (x < min)
        return tide_errf(err, TIDE_EINVAL, "%s: %g is out of range (%lld..%lld seconds)", key, d,
                         min, MAX_SECONDS);
    *out = x;
    return 1;
}

/* A finite number >= min (> min when strict). */
/* A number in [min, max] (> min when strict). */
static int get_number_in(const json_t *o, const char *key, double min, int strict, double max,
                         double *out, tide_error_t *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_number(v))
        return tide_errf(err, TIDE_EINVAL, "%s: expected a number, got %s", key, type_word(v));
    double d = json_number_value(v);
    if (!isfinite(d) || d < min || (strict && d == min) || d > max)
        return tide_errf(err, TIDE_EINVAL, "%s: %g must be %s %g and <= %g", key, d,
                         strict ? ">" : ">=", min, max);
    *out = d;
    return 1;
}

static int get_number(const json_t *o, const char *key, double min, int strict, double *out,
                      tide_error_t *err)
{
    return get_number_in(o, key, min, strict, 1e15, out, err);
}

static int get_bool(const json_t *o, const char *key, int *out, tide_error_t *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return tide_errf(err, TIDE_EINVAL, "%s: expected true or false, got %s", key, type_word(v));
    *out = json_is_true(v);
    return 1;
}

/* A name: non-empty, at most max bytes, no control characters. */
static int get_name(const json_t *o, const char *key, size_t max, char **out, tide_error_t *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_string(v))
        return tide_errf(err, TIDE_EINVAL, "%s: expected a string, got %s", key, type_word(v));
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n == 0)
        return tide_errf(err, TIDE_EINVAL, "%s: must not be empty", key);
    if (n > max)
        return tide_errf(err, TIDE_EINVAL, "%s: longer than %zu bytes", key, max);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return tide_errf(err, TIDE_EINVAL, "%s: control character at byte %zu", key, i);
    *out = tide_xstrdup(s);
    return 1;
}

/* gpu_types: "H100|A100", "" or "any" (any). */
static int get_types(const json_t *o, const tide_cluster_t *c, uint32_t *mask, tide_error_t *err)
{
    const json_t *v = json_object_get(o, "gpu_types");
    *mask = 0;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return tide_errf(err, TIDE_EINVAL, "gpu_types: expected a string like \"H100|A100\", got %s",
                         type_word(v));
    const char *s = json_string_value(v);
    if (!*s || !strcmp(s, "any"))
        return 0;
    if (strlen(s) > 4096)
        return tide_errf(err, TIDE_EINVAL, "gpu_types: too long");
    if (!c)
        return tide_errf(err, TIDE_EINVAL, "gpu_types: no cluster to resolve '%.64s'", s);
    tide_error_t e2 = {0};
    if (tide_cluster_type_mask(c, s, mask, &e2) < 0)
        return tide_errf(err, TIDE_EINVAL, "gpu_types: %s", e2.msg);
    return 1;
}

static long long gcd(long long a, long long b)
{
    while (b) {
        long long t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* GPUs and GPU type of each high-speed domain of c (arrays owned by the
 * caller). Returns 0, or -1 when c has no domains. */
static int domains(const tide_cluster_t *c, int *nd, int **dgpus, int **dtype)
{
    *nd = tide_cluster_domains(c);
    int nn = tide_cluster_nodes(c);
    *dgpus = tide_xcalloc((size_t)(*nd > 0 ? *nd : 1), sizeof **dgpus);
    *dtype = tide_xcalloc((size_t)(*nd > 0 ? *nd : 1), sizeof **dtype);
    for (int n = 0; n < nn; n++) {
        tide_node_info_t ni;
        if (tide_cluster_node(c, n, &ni) == 0 && ni.domain >= 0 && ni.domain < *nd) {
            (*dgpus)[ni.domain] += ni.gpus;
            (*dtype)[ni.domain] = ni.type;
        }
    }
    if (*nd <= 0) {
        free(*dgpus);
        free(*dtype);
        *dgpus = *dtype = NULL;
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------- jobs */

static const char *const job_fields[] = {
    "job_id", "team", "priority", "gpus", "duration_s", "gang_gpus", "dp_min", "ckpt_interval_s",
    "ckpt_s", "restore_s", "gpu_types", "submit_s", "command", "env",
    "model", "publish", NULL}; /* model, publish: the model pipeline's (src/daemon/pipe.c) */

void tide_job_request_free(tide_job_request_t *r)
{
    if (!r)
        return;
    free(r->id);
    free(r->team);
    free(r->command);
    free(r->env);
    memset(r, 0, sizeof *r);
}

static int get_priority(const json_t *o, int *out, tide_error_t *err)
{
    const json_t *v = json_object_get(o, "priority");
    *out = TIDE_JSON_DEFAULT_PRIORITY;
    if (!v)
        return 0;
    long long p = -1;
    if (json_is_integer(v)) {
        p = json_integer_value(v);
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if ((s[0] == 'P' || s[0] == 'p') && s[1] >= '0' && s[1] <= '9' && !s[2])
            p = s[1] - '0';
        else if (s[0] >= '0' && s[0] <= '9' && !s[1])
            p = s[0] - '0';
        else
            return tide_errf(err, TIDE_EINVAL, "priority: '%.32s' is not 1..3 or P1..P3", s);
    } else {
        return tide_errf(err, TIDE_EINVAL, "priority: expected 1..3 or \"P1\"..\"P3\", got %s",
                         type_word(v));
    }
    if (p == 0)
        return tide_errf(err, TIDE_EINVAL, "priority: P0 is inference only (training uses 1..3)");
    if (p < 1 || p > 3)
        return tide_errf(err, TIDE_EINVAL, "priority: %lld is not 1..3", p);
    *out = (int)p;
    return 1;
}

static int get_env(const json_t *o, char **out, tide_error_t *err)
{
    const json_t *v = json_object_get(o, "env");
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return tide_errf(err, TIDE_EINVAL, "env: expected an object of strings, got %s", type_word(v));
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x) {
        if (!*k || strchr(k, '='))
            return tide_errf(err, TIDE_EINVAL, "env: bad variable name '%.64s'", k);
        if (!json_is_string(x))
            return tide_errf(err, TIDE_EINVAL, "env.%.64s: expected a string, got %s", k, type_word(x));
    }
    char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
    if (!s)
        return tide_errf(err, TIDE_EINVAL, "env: cannot encode");
    if (strlen(s) > TIDE_JSON_MAX_COMMAND) {
        free(s);
        return tide_errf(err, TIDE_EINVAL, "env: larger than %d bytes", TIDE_JSON_MAX_COMMAND);
    }
    *out = tide_xstrdup(s);
    free(s);
    return 1;
}

static int job_body(const json_t *o, const tide_cluster_t *c, tide_job_request_t *r,
                    tide_error_t *err)
{
    if (tide_json_only(o, job_fields, err) < 0)
        return -1;
    tide_job_spec_t *s = &r->spec;
    long long gpus = 0, dur = 0, gang = 0, dpmin = 0, cint = 1800, ck = 60, rs = 120, sub = 0;
    if (get_name(o, "job_id", TIDE_JSON_MAX_ID, &r->id, err) < 0 ||
        get_name(o, "team", TIDE_JSON_MAX_TEAM, &r->team, err) < 0 ||
        get_priority(o, &s->priority, err) < 0)
        return -1;
    int has;
    if ((has = get_count(o, "gpus", 1, MAX_COUNT, &gpus, err)) < 0)
        return -1;
    if (!has)
        return tide_errf(err, TIDE_EINVAL, "gpus: required (GPUs at full width)");
    if ((has = get_seconds(o, "duration_s", 1, &dur, err)) < 0)
        return -1;
    if (!has)
        return tide_errf(err, TIDE_EINVAL, "duration_s: required (run time at full width)");
    if ((has = get_count(o, "gang_gpus", 1, MAX_COUNT, &gang, err)) < 0)
        return -1;
    if (!has)
        gang = gpus <= 8 ? gpus : gcd(gpus, 8);
    if (gang > gpus || gpus % gang)
        return tide_errf(err, TIDE_EINVAL, "gang_gpus: %lld must divide gpus (%lld)", gang, gpus);
    if ((has = get_count(o, "dp_min", 1, MAX_COUNT, &dpmin, err)) < 0)
        return -1;
    if (!has)
        dpmin = gpus / gang;
    if (dpmin > gpus / gang)
        return tide_errf(err, TIDE_EINVAL, "dp_min: %lld is more than gpus / gang_gpus (%lld)",
                         dpmin, gpus / gang);
    if (get_seconds(o, "ckpt_interval_s", 1, &cint, err) < 0 ||
        get_seconds(o, "ckpt_s", 0, &ck, err) < 0 || get_seconds(o, "restore_s", 0, &rs, err) < 0 ||
        get_seconds(o, "submit_s", 0, &sub, err) < 0 || get_types(o, c, &s->gpu_types, err) < 0)
        return -1;
    const json_t *cmd = json_object_get(o, "command");
    if (cmd && !json_is_null(cmd)) {
        if (!json_is_string(cmd))
            return tide_errf(err, TIDE_EINVAL, "command: expected a string, got %s", type_word(cmd));
        if (json_string_length(cmd) > TIDE_JSON_MAX_COMMAND)
            return tide_errf(err, TIDE_EINVAL, "command: longer than %d bytes", TIDE_JSON_MAX_COMMAND);
        r->command = tide_xstrdup(json_string_value(cmd));
    }
    if (get_env(o, &r->env, err) < 0)
        return -1;
    s->id = r->id;
    s->team = r->team;
    s->gpus = (int)gpus;
    s->gang_gpus = (int)gang;
    s->dp_min = (int)dpmin;
    s->duration_s = dur;
    s->ckpt_interval_s = cint;
    s->ckpt_s = ck;
    s->restore_s = rs;
    s->submit_s = 0; /* ignored: the daemon's clock decides */
    /* the engine's own check, on a copy with placeholder names */
    tide_job_spec_t cp = *s;
    cp.id = r->id ? r->id : "x";
    cp.team = r->team ? r->team : "x";
    tide_error_t e2 = {0};
    if (tide_job_spec_normalize(&cp, &e2) < 0)
        return tide_errf(err, TIDE_EINVAL, "%s", e2.msg);
    return 0;
}

int tide_json_job_request(const char *body, size_t len, const tide_cluster_t *c,
                          tide_job_request_t *out, tide_error_t *err)
{
    memset(out, 0, sizeof *out);
    json_t *o = tide_json_parse_object(body, len, err);
    if (!o)
        return -1;
    int rc = job_body(o, c, out, err);
    json_decref(o);
    if (rc < 0)
        tide_job_request_free(out);
    return rc;
}

/* ---------------------------------------------------------------- services */

static const char *const svc_fields[] = {"service", "name", "gpus_per_replica", "replica_rps",
                                         "min_replicas", "warmup_s", "max_replicas",
                                         "fixed_replicas", "gpu_types", "stage_s", "slo_target",
                                         NULL};

void tide_service_request_free(tide_service_request_t *r)
{
    if (!r)
        return;
    free(r->name);
    memset(r, 0, sizeof *r);
}

static int svc_body(const json_t *o, const tide_cluster_t *c, tide_service_request_t *r,
                    tide_error_t *err)
{
    if (tide_json_only(o, svc_fields, err) < 0)
        return -1;
    if (json_object_get(o, "service") && json_object_get(o, "name"))
        return tide_errf(err, TIDE_EINVAL, "name: give either \"service\" or \"name\", not both");
    const char *nk = json_object_get(o, "service") ? "service" : "name";
    int has = get_name(o, nk, TIDE_JSON_MAX_ID, &r->name, err);
    if (has < 0)
        return -1;
    if (!has)
        return tide_errf(err, TIDE_EINVAL, "service: required (the service's name)");
    tide_service_spec_t *s = &r->spec;
    long long gpr = 0, minr = 0, maxr = 0, fixed = 0, warm = 0, stage = 0;
    double rps = 0;
    if ((has = get_count(o, "gpus_per_replica", 1, TIDE_MAX_GPUS_PER_NODE * 1024LL, &gpr, err)) < 0)
        return -1;
    if (!has)
        return tide_errf(err, TIDE_EINVAL, "gpus_per_replica: required");
    if ((has = get_number_in(o, "replica_rps", 0, 1, TIDE_MAX_RPS, &rps, err)) < 0)
        return -1;
    if (!has)
        return tide_errf(err, TIDE_EINVAL, "replica_rps: required");
    if ((has = get_count(o, "min_replicas", 0, MAX_COUNT, &minr, err)) < 0)
        return -1;
    if (!has)
        return tide_errf(err, TIDE_EINVAL, "min_replicas: required");
    if ((has = get_seconds(o, "warmup_s", 0, &warm, err)) < 0)
        return -1;
    if (!has)
        return tide_errf(err, TIDE_EINVAL, "warmup_s: required");
    if (get_count(o, "max_replicas", 0, MAX_COUNT, &maxr, err) < 0 ||
        get_count(o, "fixed_replicas", 0, MAX_COUNT, &fixed, err) < 0 ||
        get_types(o, c, &s->gpu_types, err) < 0)
        return -1;
    if (maxr > 0 && maxr < minr)
        return tide_errf(err, TIDE_EINVAL, "max_replicas: %lld is below min_replicas (%lld)", maxr,
                         minr);
    if (get_seconds(o, "stage_s", 0, &stage, err) < 0)
        return -1;
    if (stage > warm)
        return tide_errf(err, TIDE_EINVAL, "stage_s: %lld is above warmup_s (%lld)", stage, warm);
    /* 0 (or absent) = the daemon's slo_target */
    if (get_number_in(o, "slo_target", 0, 0, 1, &s->slo_target, err) < 0)
        return -1;
    if (s->slo_target >= 1)
        return tide_errf(err, TIDE_EINVAL,
                         "slo_target: must be in (0, 1), e.g. 0.999 (0 = the daemon's), got %g",
                         s->slo_target);
    s->name = r->name;
    s->gpus_per_replica = (int)gpr;
    s->replica_rps = rps;
    s->min_replicas = (int)minr;
    s->max_replicas = (int)maxr;
    s->warmup_s = warm;
    s->stage_s = stage;
    s->fixed_replicas = (int)fixed;
    if (c) {
        int nd = 0, *dgpus = NULL, *dtype = NULL, fits = 0;
        domains(c, &nd, &dgpus, &dtype);
        for (int d = 0; d < nd && !fits; d++)
            fits = (!s->gpu_types || (s->gpu_types & (1u << dtype[d]))) && gpr <= dgpus[d];
        free(dgpus);
        free(dtype);
        if (!fits)
            return tide_errf(err, TIDE_EINVAL,
                             "gpus_per_replica: a replica of %lld GPUs does not fit one high-speed "
                             "domain of the accepted types",
                             gpr);
    }
    tide_error_t e2 = {0};
    if (tide_service_spec_check(s, &e2) < 0)
        return tide_errf(err, TIDE_EINVAL, "%s", e2.msg);
    return 0;
}

int tide_json_service_request(const char *body, size_t len, const tide_cluster_t *c,
                              tide_service_request_t *out, tide_error_t *err)
{
    memset(out, 0, sizeof *out);
    json_t *o = tide_json_parse_object(body, len, err);
    if (!o)
        return -1;
    int rc = svc_body(o, c, out, err);
    json_decref(o);
    if (rc < 0)
        tide_service_request_free(out);
    return rc;
}

int tide_json_service_patch(const char *body, size_t len, int *min_replicas, int *has_min,
                            int *max_replicas, int *has_max, tide_error_t *err)
{
    static const char *const fields[] = {"min_replicas", "max_replicas", NULL};
    *has_min = *has_max = 0;
    json_t *o = tide_json_parse_object(body, len, err);
    if (!o)
        return -1;
    long long mn = 0, mx = 0;
    int rc = tide_json_only(o, fields, err);
    int a = rc < 0 ? -1 : get_count(o, "min_replicas", 0, MAX_COUNT, &mn, err);
    int b = a < 0 ? -1 : get_count(o, "max_replicas", 0, MAX_COUNT, &mx, err);
    json_decref(o);
    if (rc < 0 || a < 0 || b < 0)
        return -1;
    if (!a && !b)
        return tide_errf(err, TIDE_EINVAL, "min_replicas: give min_replicas and/or max_replicas");
    *has_min = a;
    *has_max = b;
    *min_replicas = (int)mn;
    *max_replicas = (int)mx;
    return 0;
}

int tide_json_demand(const char *body, size_t len, double *rps, tide_error_t *err)
{
    static const char *const fields[] = {"rps", NULL};
    json_t *o = tide_json_parse_object(body, len, err);
    if (!o)
        return -1;
    int rc = tide_json_only(o, fields, err);
    int has = rc < 0 ? -1 : get_number_in(o, "rps", 0, 0, TIDE_MAX_RPS, rps, err);
    json_decref(o);
    if (has < 0)
        return -1;
    if (!has)
        return tide_errf(err, TIDE_EINVAL, "rps: required (requests per second, >= 0)");
    return 0;
}

int tide_json_ckpt(const char *body, size_t len, tide_ckpt_request_t *out, tide_error_t *err)
{
    static const char *const fields[] = {"step", "bytes", "shards", "committed", "progress_s",
                                         "manifest", "digest", NULL};
    memset(out, 0, sizeof *out);
    out->step = out->bytes = out->shards = -1;
    out->progress_s = -1;
    json_t *o = tide_json_parse_object(body, len, err);
    if (!o)
        return -1;
    long long step = -1, bytes = -1, shards = -1;
    int rc = tide_json_only(o, fields, err);
    if (rc == 0 && (get_count(o, "step", 0, INT64_MAX / 2, &step, err) < 0 ||
                    get_count(o, "bytes", 0, INT64_MAX / 2, &bytes, err) < 0 ||
                    get_count(o, "shards", 0, MAX_COUNT, &shards, err) < 0 ||
                    get_bool(o, "committed", &out->committed, err) < 0 ||
                    get_number(o, "progress_s", 0, 0, &out->progress_s, err) < 0))
        rc = -1;
    const json_t *m = json_object_get(o, "manifest");
    if (rc == 0 && m && !json_is_string(m) && !json_is_object(m) && !json_is_null(m))
        rc = tide_errf(err, TIDE_EINVAL, "manifest: expected a string or an object, got %s",
                       type_word(m));
    json_decref(o);
    if (rc < 0)
        return -1;
    out->step = step;
    out->bytes = bytes;
    out->shards = shards;
    return 0;
}

int tide_json_node_state(const char *body, size_t len, int *up, tide_error_t *err)
{
    static const char *const fields[] = {"up", "reason", NULL}; /* reason: the API's */
    json_t *o = tide_json_parse_object(body, len, err);
    if (!o)
        return -1;
    int rc = tide_json_only(o, fields, err);
    int has = rc < 0 ? -1 : get_bool(o, "up", up, err);
    json_decref(o);
    if (has < 0)
        return -1;
    if (!has)
        return tide_errf(err, TIDE_EINVAL, "up: required (true or false)");
    return 0;
}

const char *tide_json_types_str(const tide_cluster_t *c, uint32_t mask, char *buf, size_t n)
{
    if (!n)
        return buf;
    buf[0] = '\0';
    for (int t = 0; c && t < tide_cluster_types(c) && t < 32; t++) {
        if (!(mask & (1u << t)))
            continue;
        size_t l = strlen(buf);
        snprintf(buf + l, n - l, "%s%s", l ? "|" : "", tide_cluster_type_name(c, t));
    }
    return buf;
}

/* ------------------------------------------------------------------ teams */

char *tide_json_team_to_string(const tide_team_spec_t *t, int n_types)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(t->name ? t->name : ""));
    json_object_set_new(o, "weight", json_real(t->weight));
    json_t *q = json_array();
    for (int k = 0; k < n_types && k < TIDE_MAX_GPU_TYPES; k++)
        json_array_append_new(q, json_integer(t->quota[k]));
    json_object_set_new(o, "quota", q);
    json_object_set_new(o, "borrow_limit", json_integer(t->borrow_limit));
    json_object_set_new(o, "lend_cap", json_integer(t->lend_cap));
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(o);
    char *r = tide_xstrdup(s ? s : "{}");
    free(s);
    return r;
}

int tide_json_team_from_string(const char *s, tide_team_spec_t *t, char **name_out,
                               tide_error_t *err)
{
    *name_out = NULL;
    tide_team_spec_default(t);
    json_t *o = tide_json_parse_object(s, s ? strlen(s) : 0, err);
    if (!o)
        return -1;
    const json_t *n = json_object_get(o, "name"), *w = json_object_get(o, "weight"),
                 *q = json_object_get(o, "quota"), *b = json_object_get(o, "borrow_limit"),
                 *l = json_object_get(o, "lend_cap");
    int rc = 0;
    if (!json_is_string(n) || !json_is_number(w) || !json_is_array(q) || !json_is_integer(b) ||
        !json_is_integer(l) || json_array_size(q) > TIDE_MAX_GPU_TYPES)
        rc = tide_errf(err, TIDE_EINVAL, "team: malformed team record");
    for (size_t k = 0; rc == 0 && k < json_array_size(q); k++) {
        const json_t *x = json_array_get(q, k);
        if (!json_is_integer(x))
            rc = tide_errf(err, TIDE_EINVAL, "team: malformed quota");
        else
            t->quota[k] = (int)json_integer_value(x);
    }
    if (rc == 0) {
        *name_out = tide_xstrdup(json_string_value(n));
        t->name = *name_out;
        t->weight = json_number_value(w);
        t->borrow_limit = (int)json_integer_value(b);
        t->lend_cap = (int)json_integer_value(l);
    }
    json_decref(o);
    return rc;
}

/* ------------------------------------------------ RL trajectory ledger */

#define MAX_VERSION (1LL << 53)  /* policy versions and steps (exact in JSON numbers) */

/* A body of required whole numbers only: fields[i] in [lo[i], MAX_VERSION]. */
static int whole_fields(const char *body, size_t len, const char *const *fields,
                        const long long *lo, int64_t **out, tide_error_t *err)
{
    json_t *o = tide_json_parse_object(body, len, err);
    if (!o)
        return -1;
    int rc = tide_json_only(o, fields, err);
    for (size_t i = 0; rc == 0 && fields[i]; i++) {
        long long x = 0;
        int has = get_count(o, fields[i], lo[i], MAX_VERSION, &x, err);
        if (has == 0)
            has = tide_errf(err, TIDE_EINVAL, "%s: required (a whole number >= %lld)", fields[i],
                            lo[i]);
        rc = has < 0 ? -1 : 0;
        *out[i] = x;
    }
    json_decref(o);
    return rc;
}

int tide_json_rl_run(const char *body, size_t len, int64_t *max_staleness, int64_t *batch_size,
                     tide_error_t *err)
{
    static const char *const fields[] = {"max_staleness", "batch_size", NULL};
    static const long long lo[] = {0, 1};
    int64_t *out[] = {max_staleness, batch_size};
    return whole_fields(body, len, fields, lo, out, err);
}

int tide_json_rl_step(const char *body, size_t len, int64_t *step, tide_error_t *err)
{
    static const char *const fields[] = {"step", NULL};
    static const long long lo[] = {1};
    int64_t *out[] = {step};
    return whole_fields(body, len, fields, lo, out, err);
}

/* Optional number field k of o in [lo, hi] into *v (-1 when absent). */
static int opt_num(const json_t *o, const char *k, double lo, double hi, double *v,
                   tide_error_t *err)
{
    const json_t *j = json_object_get(o, k);
    *v = -1;
    if (!j)
        return 0;
    if (!json_is_number(j) || json_number_value(j) < lo || json_number_value(j) > hi)
        return tide_errf(err, TIDE_EINVAL, "%s: expected a number in [%g, %g]", k, lo, hi);
    *v = json_number_value(j);
    return 1;
}

int tide_json_rl_step_report(const char *body, size_t len, tide_rl_step_report_t *r,
                             tide_error_t *err)
{
    static const char *const keys[] = {"step", "wait_s", "compute_s", "rollout_busy", NULL};
    json_t *o = tide_json_parse_object(body, len, err);
    if (!o)
        return -1;
    int rc = tide_json_only(o, keys, err);
    const json_t *s = json_object_get(o, "step");
    if (rc == 0 && (!json_is_integer(s) || json_integer_value(s) < 1))
        rc = tide_errf(err, TIDE_EINVAL, "step: %s", s ? "expected an integer >= 1" : "required");
    r->step = rc == 0 ? (int64_t)json_integer_value(s) : 0;
    int hw = rc == 0 ? opt_num(o, "wait_s", 0, 1e9, &r->wait_s, err) : -1;
    int hc = hw < 0 ? -1 : opt_num(o, "compute_s", 0, 1e9, &r->compute_s, err);
    int hb = hc < 0 ? -1 : opt_num(o, "rollout_busy", 0, 1, &r->rollout_busy, err);
    if (hb >= 0 && hw != hc)
        hb = tide_errf(err, TIDE_EINVAL, "%s: required with %s", hw ? "compute_s" : "wait_s",
                       hw ? "wait_s" : "compute_s");
    json_decref(o);
    return rc < 0 || hb < 0 ? -1 : 0;
}

void tide_rl_push_request_free(tide_rl_push_request_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].id);
        free(r->v[i].payload);
    }
    free(r->v);
    memset(r, 0, sizeof *r);
}

/* One trajectory object (i: its place in a batch, -1 alone). */
static int traj_item(const json_t *o, long i, tide_rl_traj_request_t *t, tide_error_t *err)
{
    if (!json_is_object(o))
        return tide_errf(err, TIDE_EINVAL, "trajectories[%ld]: expected an object, got %s", i,
                         type_word(o));
    long long v = 0;
    int has_id = get_name(o, "trajectory_id", TIDE_JSON_MAX_ID, &t->id, err);
    int has_v = has_id < 0 ? -1 : get_count(o, "policy_version", 0, MAX_VERSION, &v, err);
    if (has_id == 0 || has_v == 0)
        tide_errf(err, TIDE_EINVAL, "%s: required", has_id == 0 ? "trajectory_id" : "policy_version");
    if (has_id <= 0 || has_v <= 0) {
        if (i >= 0)
            tide_err_prefix(err, "trajectories[%ld]: ", i);
        return -1;
    }
    t->policy_version = v;
    t->payload = json_dumps(o, JSON_COMPACT);
    if (!t->payload)
        return tide_errf(err, TIDE_EINVAL, "trajectory %s: cannot be written back", t->id);
    return 0;
}

int tide_json_rl_push(const char *body, size_t len, tide_rl_push_request_t *out,
                      tide_error_t *err)
{
    static const char *const batch_fields[] = {"trajectories", NULL};
    memset(out, 0, sizeof *out);
    json_t *o = tide_json_parse_object(body, len, err);
    if (!o)
        return -1;
    const json_t *arr = json_object_get(o, "trajectories");
    int rc = 0;
    size_t n = 1;
    if (arr) {
        out->batch = 1;
        n = json_is_array(arr) ? json_array_size(arr) : 0;
        if (tide_json_only(o, batch_fields, err) < 0)
            rc = -1;
        else if (!json_is_array(arr) || n == 0 || n > TIDE_JSON_MAX_TRAJ_BATCH)
            rc = tide_errf(err, TIDE_EINVAL,
                           "trajectories: expected a list of 1..%d trajectory objects",
                           TIDE_JSON_MAX_TRAJ_BATCH);
    }
    if (rc == 0)
        out->v = tide_xcalloc(n, sizeof *out->v);
    for (size_t i = 0; rc == 0 && i < n; i++, out->n++)
        rc = traj_item(arr ? json_array_get(arr, i) : o, arr ? (long)i : -1, &out->v[i], err);
    json_decref(o);
    if (rc < 0)
        tide_rl_push_request_free(out);
    return rc;
}
