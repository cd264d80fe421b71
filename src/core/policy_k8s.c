/* k8s: what a Kubernetes shop runs. One pool. Inference is a Deployment
 * scaled by an HPA on observed demand: replicas = ceil(demand x (1 +
 * headroom) / replica_rps) (headroom 0.25 is HPA's 80% utilisation target);
 * scaling up is immediate, scaling down follows HPA's stabilisation window
 * (the highest recommendation of the last hpa_window_s, 5 min by default).
 * Training is admitted by Kueue; when inference pods need GPUs, Kueue-style
 * priority preemption stops the cheapest lower-priority training at once
 * (work since its last checkpoint is lost). P0 pods are never preempted. */
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

const tide_policy_t tide_policy_k8s = {
    .name = "k8s",
    .summary = "one pool, HPA on observed demand (headroom, 5-min scale-down window), Kueue preemption",
    .layout = layout,
    .train_zones = train_zones,
    .inf_zones = ZBIT(Z_SHARED),
    .reclaim_zones = ZBIT(Z_SHARED),
    .scale_mode = SCALE_HPA,
    .reclaim_mode = RECLAIM_KILL,
    .lease_deadline = tide__lease_deadline_default,
};
