/* libFuzzer target: arbitrary bytes through the RL trajectory ledger's body
 * parsers (src/http/codec.c): POST /v1/rl/{job}/trajectories, POST
 * /v1/rl/{job} and POST /v1/rl/{job}/step. Properties: a refusal is EINVAL
 * with a message and leaves nothing allocated; an accepted push has 1..max
 * trajectories, each with a valid id and version, and its stored payload
 * (what the trainer is handed back) parses again as one trajectory with the
 * same id and version; accepted numbers are in range. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/codec.h"

static void payload_round_trip(const tide_rl_traj_request_t *t)
{
    tide_rl_push_request_t back;
    tide_error_t err;
    if (tide_json_rl_push(t->payload, strlen(t->payload), &back, &err) != 0)
        abort(); /* a stored trajectory the ledger could not read again */
    if (back.n != 1 || back.batch || strcmp(back.v[0].id, t->id) ||
        back.v[0].policy_version != t->policy_version)
        abort();
    tide_rl_push_request_free(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data;
    tide_error_t err;

    tide_rl_push_request_t pr;
    if (tide_json_rl_push(body, size, &pr, &err) == 0) {
        if (pr.n < 1 || pr.n > TIDE_JSON_MAX_TRAJ_BATCH || (!pr.batch && pr.n != 1))
            abort();
        for (size_t i = 0; i < pr.n; i++) {
            const tide_rl_traj_request_t *t = &pr.v[i];
            size_t n = strlen(t->id);
            if (n < 1 || n > TIDE_JSON_MAX_ID || t->policy_version < 0 || !t->payload)
                abort();
            payload_round_trip(t);
        }
        tide_rl_push_request_free(&pr);
    } else if (err.code != TIDE_EINVAL || !err.msg[0] || pr.v || pr.n) {
        abort();
    }

    int64_t a = -1, b = -1;
    if (tide_json_rl_run(body, size, &a, &b, &err) == 0) {
        if (a < 0 || b < 1)
            abort();
    } else if (err.code != TIDE_EINVAL || !err.msg[0]) {
        abort();
    }
    if (tide_json_rl_step(body, size, &a, &err) == 0) {
        if (a < 1)
            abort();
    } else if (err.code != TIDE_EINVAL || !err.msg[0]) {
        abort();
    }
    /* the step with the trainer's measures: absent ones are -1, given ones
     * finite and in range, wait and compute both or neither */
    tide_rl_step_report_t sr;
    if (tide_json_rl_step_report(body, size, &sr, &err) == 0) {
        if (sr.step < 1 || (sr.wait_s < 0) != (sr.compute_s < 0) ||
            !isfinite(sr.wait_s) || !isfinite(sr.compute_s) ||
            (sr.wait_s < 0 && sr.wait_s != -1) || (sr.compute_s < 0 && sr.compute_s != -1) ||
            (sr.rollout_busy != -1 && !(sr.rollout_busy >= 0 && sr.rollout_busy <= 1)))
            abort();
    } else if (err.code != TIDE_EINVAL || !err.msg[0]) {
        abort();
    }
    return 0;
}
