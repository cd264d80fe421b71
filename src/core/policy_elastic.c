/* elastic: a Tier A reserve that only inference uses, and a shared pool lent
 * to training under leases. Inference is sized from the forecast over the
 * reclaim lead time (P99 checkpoint + P99 warm-up + margin); reclaim shrinks
 * elastic jobs or asks for a committed checkpoint before the GPUs move.
 * Leases end before the next forecast rise that needs their GPUs. */
#include "core/internal.h"

static int layout(tide_engine_t *e, tide_error_t *err)
{
    int reserve = e->cfg.reserve_gpus;
    if (reserve < 0) {
        reserve = 0;
        for (int s = 0; s < e->n_svcs; s++) {
            const tide_service_spec_t *sp = &e->svcs[s].spec;
            int per = e->max_dom_gpus / sp->gpus_per_replica;
            if (per < 1)
                per = 1;
            reserve += (sp->min_replicas + per - 1) / per * e->max_dom_gpus;
        }
    }
    return tide__layout_split(e, reserve, Z_RESERVE, Z_SHARED, err);
}

static unsigned train_zones(const tide_engine_t *e, tide_time_t now)
{
    (void)e, (void)now;
    return ZBIT(Z_SHARED);
}

const tide_policy_t tide_policy_elastic = {
    .name = "elastic",
    .summary = "Tier A reserve + forecast-driven leases, reclaim lead time, DP shrink",
    .layout = layout,
    .train_zones = train_zones,
    .inf_zones = ZBIT(Z_RESERVE) | ZBIT(Z_SHARED),
    .reclaim_zones = ZBIT(Z_SHARED),
    .lease_zones = ZBIT(Z_SHARED),
    .scale_mode = SCALE_FORECAST,
    .ensemble = 1,
    .obs_floor = 1,
    .reclaim_mode = RECLAIM_GRACEFUL,
    .use_lead = 1,
    .renew_leases = 1,
    .lease_deadline = tide__lease_deadline_forecast,
    .lease_renew_deadline = tide__lease_deadline_forecast_at,
};
