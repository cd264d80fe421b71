/* static: one cluster, a fixed split (--split INF:TRAIN). Inference autoscales
 * from its forecast inside its part; training uses the other. Nothing crosses. */
#include "core/internal.h"

static int layout(tide_engine_t *e, tide_error_t *err)
{
    int inf = e->cfg.split_inf >= 0 ? e->cfg.split_inf : tide__layout_peak_gpus(e);
    return tide__layout_split(e, inf, Z_INF, Z_TRAIN, err);
}

static unsigned train_zones(const tide_engine_t *e, tide_time_t now)
{
    (void)e, (void)now;
    return ZBIT(Z_TRAIN);
}

const tide_policy_t tide_policy_static = {
    .name = "static",
    .summary = "fixed split, inference autoscales inside its part",
    .layout = layout,
    .train_zones = train_zones,
    .inf_zones = ZBIT(Z_INF),
    .scale_mode = SCALE_FORECAST,
    .reclaim_mode = RECLAIM_NONE,
    .lease_deadline = tide__lease_deadline_default,
};
