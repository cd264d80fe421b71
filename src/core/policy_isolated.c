/* isolated: two clusters. Inference keeps its peak replicas hot on its own
 * pool (sized for the demand peak); training runs on the rest. Nothing crosses. */
#include "core/internal.h"

static int layout(tide_engine_t *e, tide_error_t *err)
{
    return tide__layout_split(e, tide__layout_peak_gpus(e), Z_INF, Z_TRAIN, err);
}

static unsigned train_zones(const tide_engine_t *e, tide_time_t now)
{
    (void)e, (void)now;
    return ZBIT(Z_TRAIN);
}

const tide_policy_t tide_policy_isolated = {
    .name = "isolated",
    .summary = "separate pools; inference sized for its peak",
    .layout = layout,
    .train_zones = train_zones,
    .inf_zones = ZBIT(Z_INF),
    .scale_mode = SCALE_FIXED,
    .reclaim_mode = RECLAIM_NONE,
    .lease_deadline = tide__lease_deadline_default,
};
