/* libFuzzer target: arbitrary bytes as request bodies through the API's
 * validation (src/http/codec.c), not the network: POST /v1/jobs (plus the
 * gang-fit check), POST /v1/services, PATCH /v1/services/{name}, demand
 * pushes, checkpoint manifests, node states and the team records of the
 * event log. What is accepted must satisfy the documented constraints. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/codec.h"

static tide_cluster_t *cluster(void)
{
    static tide_cluster_t *c;
    if (!c) {
        tide_error_t err;
        c = tide_cluster_parse("4x8:H100,2x8:A100,18x4:GB200/18", &err);
        if (!c)
            abort();
    }
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data;
    tide_error_t err;
    tide_cluster_t *c = cluster();

    tide_job_request_t j;
    if (tide_json_job_request(body, size, c, &j, &err) == 0) {
        const tide_job_spec_t *s = &j.spec;
        if (s->gpus < 1 || s->gang_gpus < 1 || s->gpus % s->gang_gpus || s->dp_min < 1 ||
            s->dp_min > s->gpus / s->gang_gpus || s->priority < 1 || s->priority > 3 ||
            s->duration_s < 1 || s->ckpt_interval_s < 1 || s->ckpt_s < 0 || s->restore_s < 0 ||
            (j.id && !j.id[0]) || (j.team && !j.team[0]) || s->id != j.id || s->team != j.team)
            abort();
        (void)tide_job_spec_fits(s, c, &err);
        tide_job_request_free(&j);
        tide_job_request_free(&j); /* safe twice */
    } else if (err.code != TIDE_EINVAL || !err.msg[0]) {
        abort();
    }

    tide_service_request_t sv;
    if (tide_json_service_request(body, size, c, &sv, &err) == 0) {
        const tide_service_spec_t *s = &sv.spec;
        if (!s->name || !s->name[0] || s->gpus_per_replica < 1 || !(s->replica_rps > 0) ||
            s->min_replicas < 0 || s->warmup_s < 0 ||
            (s->max_replicas && s->max_replicas < s->min_replicas))
            abort();
        tide_service_request_free(&sv);
    } else if (err.code != TIDE_EINVAL) {
        abort();
    }

    int mn, hmn, mx, hmx, up;
    if (tide_json_service_patch(body, size, &mn, &hmn, &mx, &hmx, &err) == 0 &&
        ((!hmn && !hmx) || (hmn && mn < 0) || (hmx && mx < 0)))
        abort();
    double rps;
    if (tide_json_demand(body, size, &rps, &err) == 0 && (!isfinite(rps) || rps < 0))
        abort();
    tide_ckpt_request_t ck;
    if (tide_json_ckpt(body, size, &ck, &err) == 0 &&
        (ck.step < -1 || ck.bytes < -1 || ck.shards < -1 || (ck.progress_s < 0 && ck.progress_s != -1)))
        abort();
    (void)tide_json_node_state(body, size, &up, &err);

    /* team records (the event log's team_set payloads) */
    if (size < 4096) {
        char *s = malloc(size + 1);
        memcpy(s, data, size);
        s[size] = '\0';
        tide_team_spec_t t;
        char *name = NULL;
        if (tide_json_team_from_string(s, &t, &name, &err) == 0) {
            char *back = tide_json_team_to_string(&t, tide_cluster_types(c));
            free(back);
        }
        free(name);
        free(s);
    }
    return 0;
}
