/* libFuzzer target: arbitrary bytes through the model pipeline's parsers
 * (src/http/codec_models.c, src/core/pipeline.c): POST /v1/models, POST
 * /v1/models/{m}/versions, canary reports, and one gate rule. Properties: a
 * refusal is EINVAL with a message; an accepted model is accepted by the
 * registry and written back as JSON that parses again to the same rules and
 * plan (the stored row round-trips: a restart reads it); an accepted gate
 * rule formats to text that parses to the same rule. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "http/codec.h"

static void model_round_trip(const tide_model_request_t *mr)
{
    tide_error_t err;
    tide_pipeline_t *p = tide_pipeline_create(1);
    int mi = tide_pipeline_add_model(p, &mr->spec, &err);
    if (mi >= 0) {
        tide_model_info_t info;
        if (tide_pipeline_model(p, mi, &info) != 0)
            abort();
        json_t *o = tide_json_model(&info);
        char *s = json_dumps(o, JSON_COMPACT);
        tide_model_request_t back;
        if (!s || tide_json_model_request(s, strlen(s), &back, &err) != 0)
            abort(); /* a stored model that a restart could not read */
        if (back.spec.n_rules != mr->spec.n_rules ||
            back.spec.plan.n_steps != mr->spec.plan.n_steps)
            abort();
        tide_model_request_free(&back);
        free(s);
        json_decref(o);
    } else if (err.code != TIDE_EINVAL || !err.msg[0]) {
        abort();
    }
    tide_pipeline_destroy(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data;
    tide_error_t err;

    tide_model_request_t mr;
    if (tide_json_model_request(body, size, &mr, &err) == 0) {
        model_round_trip(&mr);
        tide_model_request_free(&mr);
    } else if (err.code != TIDE_EINVAL || !err.msg[0]) {
        abort();
    }

    tide_version_request_t vr;
    if (tide_json_version_request(body, size, &vr, &err) == 0) {
        tide_version_request_free(&vr);
    } else if (err.code != TIDE_EINVAL || !err.msg[0]) {
        abort();
    }

    double slo, er, lat;
    if (tide_json_canary(body, size, &slo, &er, &lat, &err) == 0 &&
        (!isfinite(slo) || !isfinite(er) || !isfinite(lat)))
        abort();

    if (size < 256) {
        char s[257], buf[256];
        memcpy(s, data, size);
        s[size] = '\0';
        tide_gate_rule_t r, r2;
        if (tide_gate_rule_parse(s, &r, &err) == 0) {
            if (tide_gate_rule_parse(tide_gate_rule_format(&r, buf, sizeof buf), &r2, &err) != 0 ||
                r2.op != r.op || r2.vs_serving != r.vs_serving || strcmp(r2.metric, r.metric))
                abort();
        }
    }
    return 0;
}
