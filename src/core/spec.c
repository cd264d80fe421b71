/* Specs, defaults, names and the action buffer: the engine's vocabulary. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

int tide_job_spec_normalize(tide_job_spec_t *j, tide_error_t *err)
{
    if (!j->id || !*j->id)
        return tide_errf(err, TIDE_EINVAL, "job_id: must not be empty");
    if (strlen(j->id) > 200)
        return tide_errf(err, TIDE_EINVAL, "job_id: longer than 200 characters");
    if (!j->team || !*j->team)
        return tide_errf(err, TIDE_EINVAL, "team: must not be empty");
    if (j->priority < TIDE_P1 || j->priority > TIDE_P3)
        return tide_errf(err, TIDE_EINVAL, "priority: %d is not 1..3 (P0 is inference only)",
                         j->priority);
    if (j->gpus < 1 || j->gpus > 1000000)
        return tide_errf(err, TIDE_EINVAL, "gpus: %d is not 1..1000000", j->gpus);
    if (j->gang_gpus == 0)
        j->gang_gpus = j->gpus < 8 ? j->gpus : 8;
    if (j->gang_gpus < 1 || j->gang_gpus > j->gpus || j->gpus % j->gang_gpus)
        return tide_errf(err, TIDE_EINVAL, "gang_gpus: %d must divide gpus (%d)", j->gang_gpus,
                         j->gpus);
    int dpmax = j->gpus / j->gang_gpus;
    if (j->dp_min == 0)
        j->dp_min = dpmax;
    if (j->dp_min < 1 || j->dp_min > dpmax)
        return tide_errf(err, TIDE_EINVAL, "dp_min: %d is not 1..%d (gpus/gang_gpus)", j->dp_min,
                         dpmax);
    if (j->duration_s < 1)
        return tide_errf(err, TIDE_EINVAL, "duration_s: must be >= 1");
    if (j->ckpt_interval_s == 0)
        j->ckpt_interval_s = 1800;
    if (j->ckpt_s == 0)
        j->ckpt_s = 60;
    if (j->restore_s == 0)
        j->restore_s = 120;
    if (j->ckpt_interval_s < 1 || j->ckpt_s < 1 || j->restore_s < 1)
        return tide_errf(err, TIDE_EINVAL, "ckpt_interval_s, ckpt_s, restore_s: must be >= 1");
    if (j->submit_s < 0)
        return tide_errf(err, TIDE_EINVAL, "submit_s: must be >= 0");
    return 0;
}

int tide_service_spec_check(const tide_service_spec_t *s, tide_error_t *err)
{
    if (!s->name || !*s->name)
        return tide_errf(err, TIDE_EINVAL, "service: name must not be empty");
    if (s->gpus_per_replica < 1 || s->gpus_per_replica > 4096)
        return tide_errf(err, TIDE_EINVAL, "service %s: gpus_per_replica %d is not 1..4096",
                         s->name, s->gpus_per_replica);
    if (!(s->replica_rps > 0) || !(s->replica_rps <= TIDE_MAX_RPS))
        return tide_errf(err, TIDE_EINVAL, "service %s: replica_rps must be > 0 and <= %g",
                         s->name, TIDE_MAX_RPS);
    if (s->min_replicas < 0 || s->max_replicas < 0 ||
        (s->max_replicas && s->max_replicas < s->min_replicas))
        return tide_errf(err, TIDE_EINVAL,
                         "service %s: need 0 <= min_replicas <= max_replicas (0 = unlimited)",
                         s->name);
    if (s->warmup_s < 0)
        return tide_errf(err, TIDE_EINVAL, "service %s: warmup_s must be >= 0", s->name);
    if (s->stage_s < 0 || s->stage_s > s->warmup_s)
        return tide_errf(err, TIDE_EINVAL,
                         "service %s: stage_s must be in 0..warmup_s (%lld), got %lld", s->name,
                         (long long)s->warmup_s, (long long)s->stage_s);
    if (s->fixed_replicas < 0)
        return tide_errf(err, TIDE_EINVAL, "service %s: fixed_replicas must be >= 0", s->name);
    if (!(s->slo_target >= 0 && s->slo_target < 1))
        return tide_errf(err, TIDE_EINVAL, "service %s: slo_target must be in (0, 1) (0 = default)",
                         s->name);
    return 0;
}

void tide_team_spec_default(tide_team_spec_t *t)
{
    memset(t, 0, sizeof *t);
    t->weight = 1.0;
    for (int k = 0; k < TIDE_MAX_GPU_TYPES; k++)
        t->quota[k] = -1;
    t->borrow_limit = -1;
    t->lend_cap = -1;
}

void tide_config_default(tide_config_t *c)
{
    memset(c, 0, sizeof *c);
    c->policy = "elastic";
    c->reserve_gpus = -1;
    c->split_inf = -1;
    c->night_start_h = 22;
    c->night_end_h = 8;
    c->margin_min = 0;
    c->margin_max = 4.0;
    c->slo_target = 0.999;
    c->slo_window_s = 6 * 3600;
    c->slo_period_s = 7 * 86400;
    c->tick_s = 60;
    c->lead_extra_s = 300;
    c->lease_max_s = 6 * 3600;
    c->scale_down_hold_s = 1800;
    c->forecast_bucket_s = 300;
    c->forecast_days = 7;
    c->backfill_depth = 256;
    c->fairshare = 1;
    c->fairshare_half_life_s = 86400;
    c->headroom = 0.25;
    c->hpa_window_s = 300;
    c->spread_max_skew = 0; /* opt-in: spreading costs packing (docs/engine.md) */
#ifdef TIDE_DEBUG_INVARIANTS
    c->check_invariants = 1;
#endif
}

/* ------------------------------------------------------------- names */

#define NAME_FN(fn, tab, count)                                                   \
    const char *fn(int k) { return k >= 0 && k < (count) ? tab[k] : "unknown"; }

static const char *const action_names[TIDE_ACT_KIND_COUNT] = {
    "job_start", "ckpt_notice", "job_resize", "job_stop", "replica_start", "replica_stop",
    "lease_grant", "lease_renew", "lease_return", "power_cap"};
static const char *const event_names[TIDE_EV_KIND_COUNT] = {
    "tick", "submit", "cancel", "demand", "replica_ready", "replica_failed", "job_phase",
    "ckpt_committed", "job_finished", "rank_failed", "node_failed", "node_recovered", "job_expired",
    "foreign", "rehearse", "surge", "replica_retire"};
static const char *const reason_names[TIDE_R_COUNT] = {
    "", "reclaim", "preempt", "priority", "deadline", "cancel", "failure", "complete", "scale",
    "window", "quota", "rehearsal", "power"};
static const char *const phase_names[TIDE_PHASE_COUNT] = {"restoring", "training",
                                                           "checkpointing"};
static const char *const state_names[TIDE_S_COUNT] = {
    "serving", "warming", "training", "checkpointing", "restoring", "lost", "idle", "foreign", "rehearsing"};
static const char *const class_names[TIDE_C_COUNT] = {"inference", "p1", "p2", "p3", "none"};
static const char *const tier_names[TIDE_T_COUNT] = {"A", "B", "C", "D"};
static const char *const job_state_names[TIDE_JOB_STATE_COUNT] = {
    "queued", "running", "reclaiming", "done", "cancelled"};

NAME_FN(tide_action_name, action_names, TIDE_ACT_KIND_COUNT)
NAME_FN(tide_event_name, event_names, TIDE_EV_KIND_COUNT)
NAME_FN(tide_reason_name, reason_names, TIDE_R_COUNT)
NAME_FN(tide_phase_name, phase_names, TIDE_PHASE_COUNT)
NAME_FN(tide_state_name, state_names, TIDE_S_COUNT)
NAME_FN(tide_class_name, class_names, TIDE_C_COUNT)
NAME_FN(tide_tier_name, tier_names, TIDE_T_COUNT)
NAME_FN(tide_job_state_name, job_state_names, TIDE_JOB_STATE_COUNT)

/* ------------------------------------------------------------- actions */

void tide_actions_init(tide_actions_t *a)
{
    memset(a, 0, sizeof *a);
    a->next_wake = TIDE_TIME_NEVER;
}

void tide_actions_free(tide_actions_t *a)
{
    if (!a)
        return;
    free(a->v);
    free(a->gpus);
    tide_actions_init(a);
}

tide_action_t *tide__act_push(tide_engine_t *e, int kind, int reason)
{
    tide_actions_t *o = e->out;
    tide_grow((void **)&o->v, &o->cap, o->n + 1, sizeof *o->v);
    tide_action_t *a = &o->v[o->n++];
    memset(a, 0, sizeof *a);
    a->kind = kind;
    a->reason = reason;
    a->job = a->service = a->replica = a->lease = -1;
    return a;
}

void tide__act_gpus(tide_engine_t *e, tide_action_t *a, const alloc_t *al)
{
    tide_actions_t *o = e->out;
    tide_grow((void **)&o->gpus, &o->gcap, o->ngpus + (size_t)al->n, sizeof *o->gpus);
    a->gpu_off = o->ngpus;
    a->n_gpus = al->n;
    if (al->n)
        memcpy(o->gpus + o->ngpus, al->gpus, (size_t)al->n * sizeof *al->gpus);
    o->ngpus += (size_t)al->n;
}

/* ------------------------------------------------------------- quantiles */

double tide_select(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                double t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            break;
    }
    return v[k];
}

double tide_quantile(const double *v, size_t n, double q)
{
    if (!n)
        return 0;
    if (q < 0)
        q = 0;
    if (q > 1)
        q = 1;
    double *c = tide_xmalloc(n * sizeof *c);
    memcpy(c, v, n * sizeof *c);
    /* nearest-rank */
    size_t k = (size_t)ceil(q * (double)n);
    double r = tide_select(c, n, k ? k - 1 : 0);
    free(c);
    return r;
}
