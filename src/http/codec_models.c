/* The model pipeline's JSON: model definitions (POST /v1/models and the
 * daemon's stored form), versions, canary reports. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "http/codec.h"
#include "util/util.h"

static const char *const model_fields[] = {
    "name", "service", "eval_command", "eval_gpus", "eval_limit_s", "gates", "steps", "hold_s",
    "gate_interval_s", "slo_min", "error_max", "latency_max_ms", "failure_limit", "aliases",
    "webhook", "slo_query", "error_query", "latency_query", NULL};

static const char *str_of(const json_t *o, const char *k, tide_error_t *err, int *bad);

const char *const tide_model_link_names[TIDE_LINK_COUNT] = {"webhook", "slo_query", "error_query",
                                                           "latency_query"};

/* The links: http:// URLs or absent. */
static int links_of(const json_t *o, tide_model_request_t *out, tide_error_t *err)
{
    for (int k = 0; k < TIDE_LINK_COUNT; k++) {
        int bad = 0;
        const char *u = str_of(o, tide_model_link_names[k], err, &bad);
        if (bad)
            return -1;
        if (u && *u && (strncmp(u, "http://", 7) || strlen(u) > 1000))
            return tide_errf(err, TIDE_EINVAL, "%s: expected an http:// URL (up to 1000 bytes)",
                             tide_model_link_names[k]);
        out->link[k] = u && *u ? tide_xstrdup(u) : NULL;
    }
    return 0;
}

/* A number field: absent leaves *out; lo <= value <= hi. */
static int num_in(const json_t *o, const char *k, double lo, double hi, double *out,
                  tide_error_t *err)
{
    const json_t *v = json_object_get(o, k);
    if (!v)
        return 0;
    double x = json_number_value(v);
    if (!json_is_number(v) || !isfinite(x) || x < lo || x > hi)
        return tide_errf(err, TIDE_EINVAL, "%s: expected a number in %g..%g", k, lo, hi);
    *out = x;
    return 0;
}

static const char *str_of(const json_t *o, const char *k, tide_error_t *err, int *bad)
{
    const json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v))
        return NULL;
    if (!json_is_string(v)) {
        *bad = 1;
        tide_errf(err, TIDE_EINVAL, "%s: expected a string", k);
        return NULL;
    }
    return json_string_value(v);
}

static int gates_of(const json_t *o, tide_model_request_t *out, tide_error_t *err)
{
    const json_t *g = json_object_get(o, "gates");
    if (!g)
        return 0;
    if (!json_is_array(g) || json_array_size(g) > TIDE_PIPE_MAX_RULES)
        return tide_errf(err, TIDE_EINVAL, "gates: expected a list of up to %d rules like "
                         "\"accuracy>=0.7\"", TIDE_PIPE_MAX_RULES);
    for (size_t i = 0; i < json_array_size(g); i++) {
        const json_t *r = json_array_get(g, i);
        if (!json_is_string(r))
            return tide_errf(err, TIDE_EINVAL, "gates: rule %zu is not a string", i + 1);
        if (tide_gate_rule_parse(json_string_value(r), &out->rules[i], err) < 0)
            return -1;
    }
    out->spec.n_rules = json_array_size(g);
    return 0;
}

static int steps_of(const json_t *o, tide_rollout_plan_t *p, tide_error_t *err)
{
    const json_t *s = json_object_get(o, "steps");
    if (!s)
        return 0;
    if (json_is_string(s))
        return tide_rollout_weights_parse(json_string_value(s), p, err);
    if (!json_is_array(s) || json_array_size(s) < 1 ||
        json_array_size(s) > TIDE_ROLLOUT_MAX_STEPS)
        return tide_errf(err, TIDE_EINVAL, "steps: expected a list of percents like [5,25,50,100]");
    p->n_steps = (int)json_array_size(s);
    for (size_t i = 0; i < json_array_size(s); i++) {
        if (!json_is_number(json_array_get(s, i)))
            return tide_errf(err, TIDE_EINVAL, "steps: %zu is not a number", i + 1);
        p->weights[i] = json_number_value(json_array_get(s, i));
    }
    return 0;
}

static int plan_of(const json_t *o, tide_rollout_plan_t *p, tide_error_t *err)
{
    double hold = (double)p->hold_s, gi = (double)p->gate_interval_s, fl = p->failure_limit;
    if (steps_of(o, p, err) < 0 || num_in(o, "hold_s", 0, 1e9, &hold, err) < 0 ||
        num_in(o, "gate_interval_s", 1, 1e9, &gi, err) < 0 ||
        num_in(o, "slo_min", 0, 1, &p->slo_min, err) < 0 ||
        num_in(o, "error_max", 0, 1, &p->error_max, err) < 0 ||
        num_in(o, "latency_max_ms", 0, 1e9, &p->latency_max_ms, err) < 0 ||
        num_in(o, "failure_limit", 0, 1000, &fl, err) < 0)
        return -1;
    p->hold_s = (tide_time_t)llround(hold);
    p->gate_interval_s = (tide_time_t)llround(gi);
    p->failure_limit = (int)fl;
    return tide_rollout_plan_check(p, err);
}

static int aliases_of(const json_t *o, tide_model_request_t *out, tide_error_t *err)
{
    const json_t *a = json_object_get(o, "aliases");
    if (!a)
        return 0;
    for (int k = 0; k < TIDE_ALIAS_COUNT; k++) {
        double v = 0;
        if (num_in(a, tide_alias_name(k), 0, 1e9, &v, err) < 0)
            return -1;
        out->alias[k] = (int)v;
    }
    return 0;
}

int tide_json_model_request(const char *body, size_t len, tide_model_request_t *out,
                            tide_error_t *err)
{
    memset(out, 0, sizeof *out);
    tide_rollout_plan_default(&out->spec.plan);
    out->spec.rules = out->rules;
    json_t *o = tide_json_parse_object(body, len, err);
    if (!o)
        return -1;
    int bad = 0, rc = tide_json_only(o, model_fields, err);
    const char *name = rc ? NULL : str_of(o, "name", err, &bad);
    const char *svc = rc || bad ? NULL : str_of(o, "service", err, &bad);
    const char *cmd = rc || bad ? NULL : str_of(o, "eval_command", err, &bad);
    if (rc == 0 && !bad && links_of(o, out, err) < 0)
        rc = -1;
    double gpus = 1, limit = 3600;
    if (rc == 0 && !bad &&
        (num_in(o, "eval_gpus", 1, 4096, &gpus, err) < 0 ||
         num_in(o, "eval_limit_s", 1, 1e9, &limit, err) < 0 || gates_of(o, out, err) < 0 ||
         plan_of(o, &out->spec.plan, err) < 0 || aliases_of(o, out, err) < 0))
        rc = -1;
    if (bad)
        rc = -1;
    if (rc == 0) {
        out->name = tide_xstrdup(name ? name : "");
        out->service = tide_xstrdup(svc ? svc : "");
        out->eval_command = cmd ? tide_xstrdup(cmd) : NULL;
        out->spec.name = out->name;
        out->spec.service = out->service;
        out->spec.eval_command = out->eval_command;
        out->spec.eval_gpus = (int)gpus;
        out->spec.eval_limit_s = (tide_time_t)llround(limit);
    }
    json_decref(o);
    if (rc < 0)
        tide_model_request_free(out);
    return rc;
}

void tide_model_request_free(tide_model_request_t *r)
{
    if (!r)
        return;
    free(r->name);
    free(r->service);
    free(r->eval_command);
    for (int k = 0; k < TIDE_LINK_COUNT; k++) {
        free(r->link[k]);
        r->link[k] = NULL;
    }
    r->name = r->service = r->eval_command = NULL;
}

json_t *tide_json_model(const tide_model_info_t *m)
{
    json_t *o = json_object(), *gates = json_array(), *steps = json_array(), *al = json_object();
    char buf[128];
    for (size_t i = 0; i < m->n_rules; i++)
        json_array_append_new(gates, json_string(tide_gate_rule_format(&m->rules[i], buf, sizeof buf)));
    for (int i = 0; i < m->plan->n_steps; i++)
        json_array_append_new(steps, tide_json_num(m->plan->weights[i]));
    for (int k = 0; k < TIDE_ALIAS_COUNT; k++)
        json_object_set_new(al, tide_alias_name(k), json_integer(m->alias[k]));
    json_object_set_new(o, "name", json_string(m->name));
    json_object_set_new(o, "service", json_string(m->service));
    json_object_set_new(o, "eval_command", m->eval_command ? json_string(m->eval_command) : json_null());
    if (m->eval_command) { /* without an evaluation there are no eval GPUs (0): not stored */
        json_object_set_new(o, "eval_gpus", json_integer(m->eval_gpus));
        json_object_set_new(o, "eval_limit_s", json_integer(m->eval_limit_s));
    }
    json_object_set_new(o, "gates", gates);
    json_object_set_new(o, "steps", steps);
    json_object_set_new(o, "hold_s", json_integer(m->plan->hold_s));
    json_object_set_new(o, "gate_interval_s", json_integer(m->plan->gate_interval_s));
    json_object_set_new(o, "slo_min", tide_json_num(m->plan->slo_min));
    json_object_set_new(o, "error_max", tide_json_num(m->plan->error_max));
    json_object_set_new(o, "latency_max_ms", tide_json_num(m->plan->latency_max_ms));
    json_object_set_new(o, "failure_limit", json_integer(m->plan->failure_limit));
    json_object_set_new(o, "aliases", al);
    return o;
}

static const char *const version_fields[] = {"source_job", "step", "manifest_uri", "digest",
                                             "size_bytes", NULL};

int tide_json_version_request(const char *body, size_t len, tide_version_request_t *out,
                              tide_error_t *err)
{
    memset(out, 0, sizeof *out);
    json_t *o = tide_json_parse_object(body, len, err);
    if (!o)
        return -1;
    int bad = 0, rc = tide_json_only(o, version_fields, err);
    const char *job = rc ? NULL : str_of(o, "source_job", err, &bad);
    const char *uri = rc || bad ? NULL : str_of(o, "manifest_uri", err, &bad);
    const char *dig = rc || bad ? NULL : str_of(o, "digest", err, &bad);
    double step = 0, size = 0;
    if (rc == 0 && !bad &&
        (num_in(o, "step", 0, 9e15, &step, err) < 0 || num_in(o, "size_bytes", 0, 9e15, &size, err) < 0))
        rc = -1;
    if (rc == 0 && !bad && (!uri || !*uri))
        rc = tide_errf(err, TIDE_EINVAL, "manifest_uri: required");
    if (bad)
        rc = -1;
    if (rc == 0) {
        out->source_job = job ? tide_xstrdup(job) : NULL;
        out->manifest_uri = tide_xstrdup(uri);
        out->digest = dig ? tide_xstrdup(dig) : NULL;
        out->spec = (tide_version_spec_t){.source_job = out->source_job, .ckpt_step = (int64_t)step,
                                          .manifest_uri = out->manifest_uri,
                                          .digest = out->digest, .size_bytes = (int64_t)size};
    }
    json_decref(o);
    return rc;
}

void tide_version_request_free(tide_version_request_t *r)
{
    if (!r)
        return;
    free(r->source_job);
    free(r->manifest_uri);
    free(r->digest);
    r->source_job = r->manifest_uri = r->digest = NULL;
}

int tide_json_canary(const char *body, size_t len, double *slo, double *error_rate,
                     double *latency_ms, tide_error_t *err)
{
    static const char *const fields[] = {"slo", "error_rate", "latency_ms", NULL};
    json_t *o = tide_json_parse_object(body, len, err);
    if (!o)
        return -1;
    *slo = 1;
    *error_rate = *latency_ms = 0;
    int rc = tide_json_only(o, fields, err);
    if (rc == 0 && (num_in(o, "slo", 0, 1, slo, err) < 0 ||
                    num_in(o, "error_rate", 0, 1, error_rate, err) < 0 ||
                    num_in(o, "latency_ms", 0, 1e9, latency_ms, err) < 0))
        rc = -1;
    if (rc == 0 && !json_object_get(o, "slo") && !json_object_get(o, "error_rate") &&
        !json_object_get(o, "latency_ms"))
        rc = tide_errf(err, TIDE_EINVAL, "expected slo, error_rate and/or latency_ms");
    json_decref(o);
    return rc;
}
