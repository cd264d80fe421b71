/* timeshare: a fixed split like `static`, but inside the nightly window
 * (--night A-B) training may borrow the inference part's spare GPUs under
 * leases that end with the window; borrowers get their checkpoint notice one
 * lead time before it closes. */
#include <math.h>

#include "core/internal.h"

static int layout(tide_engine_t *e, tide_error_t *err)
{
    int inf = e->cfg.split_inf >= 0 ? e->cfg.split_inf : tide__layout_peak_gpus(e);
    return tide__layout_split(e, inf, Z_INF, Z_TRAIN, err);
}


static tide_time_t deadline(const tide_engine_t *e, tide_time_t now)
{
    return tide__in_night(e, now) ? tide__night_next_edge(e, now) : now;
}

static tide_time_t notice_lead(const tide_engine_t *e)
{
    return (tide_time_t)ceil(2.0 * e->declared_ckpt_max) + 2 * e->cfg.tick_s;
}

/* Training may start on the inference part only while the window has more
 * than one notice lead left. */
static unsigned train_zones(const tide_engine_t *e, tide_time_t now)
{
    int open = tide__in_night(e, now) && tide__night_next_edge(e, now) - now > notice_lead(e);
    return ZBIT(Z_TRAIN) | (open ? ZBIT(Z_INF) : 0);
}

static void tick(tide_engine_t *e, tide_time_t now)
{
    if (!tide__in_night(e, now)) {
        return;
    }
    tide_time_t end = tide__night_next_edge(e, now);
    if (end - now > notice_lead(e))
        return;
    for (size_t i = 0; i < e->n_running; i++) {
        int32_t h = e->running[i];
        if (e->jobs[h]->state == TIDE_JOB_RUNNING && e->jobs[h]->n_leased)
            tide__job_notice(e, h, TIDE_R_WINDOW, 1);
    }
}

static tide_time_t wake(const tide_engine_t *e, tide_time_t now)
{
    tide_time_t edge = tide__night_next_edge(e, now);
    if (tide__in_night(e, now) && edge - notice_lead(e) > now)
        return edge - notice_lead(e);
    return edge;
}

const tide_policy_t tide_policy_timeshare = {
    .name = "timeshare",
    .summary = "fixed split; training borrows inference GPUs inside a nightly window",
    .layout = layout,
    .train_zones = train_zones,
    .inf_zones = ZBIT(Z_INF),
    .reclaim_zones = ZBIT(Z_INF),
    .lease_zones = ZBIT(Z_INF),
    .scale_mode = SCALE_FORECAST,
    .reclaim_mode = RECLAIM_GRACEFUL,
    .use_lead = 1,
    .lease_deadline = deadline,
    .tick = tick,
    .wake = wake,
};
