/* preempt: one pool (Kueue-style). Inference scales on observed demand with
 * headroom (replicas = ceil(demand x (1 + headroom) / replica_rps), an
 * autoscaler's utilisation target; `--headroom`, default 0.25); when the free
 * GPUs are not enough it stops the cheapest training at once (work since the
 * last checkpoint is lost) and then warms up. */
#include "core/internal.h"

static int layout(tide_engine_t *e, tide_error_t *err)
{
    return tide__layout_split(e, 0, Z_INF, Z_SHARED, err);
}

static unsigned train_zones(const tide_engine_t *e, tide_time_t now)
{
    (void)e, (void)now;
    return ZBIT(Z_SHARED);
}

const tide_policy_t tide_policy_preempt = {
    .name = "preempt",
    .summary = "one pool, reactive preemption of training",
    .layout = layout,
    .train_zones = train_zones,
    .inf_zones = ZBIT(Z_SHARED),
    .reclaim_zones = ZBIT(Z_SHARED),
    .scale_mode = SCALE_REACTIVE,
    .reclaim_mode = RECLAIM_KILL,
    .lease_deadline = tide__lease_deadline_default,
};
