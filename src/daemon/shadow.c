/* Shadow mode (docs/serve.md "Shadow mode"): the backend the daemon enacts
 * through is a shadow of the real one (src/backend/shadow.c); what the
 * engine would have done is measured here from the step stream: GPU-hours
 * it would have lent, its reclaims and their lead against the real rise of
 * demand, the error of its forecast, jobs it would have started on lent
 * GPUs, and the risk it would have taken. Also the switch to enact, and the
 * warm-up rehearsals' schedule and requests. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/internal.h"
#include "util/util.h"

#define RISE_WAIT_S (6 * 3600) /* a reclaim without a rise by then had none */
#define PRED_RING 64           /* pending forecast checks per service */

typedef struct pred {
    tide_time_t t, end;
    double peak, sized, max_obs;
} pred_t;

typedef struct rise {
    tide_time_t t;
    double cap_rps;
} rise_t;

struct dshadow {
    tide_time_t since, until;    /* engine time the shadow began / ended (-1: still) */
    tide_stats_t s0;             /* the engine's totals when it began (shifted at a new epoch) */
    tide_stats_t pre;            /* the old engine's totals at a new epoch */
    tide_backend_status_t b_end; /* the real backend's counters when it ended */
    long would[TIDE_ACT_KIND_COUNT];
    long reclaims, rises, no_rise;
    double lead_sum, lead_min;
    rise_t *wait;
    size_t n_wait, cap_wait;
    long early_starts;
    double short_s;
    tide_time_t last_t;
    /* forecast checks, per service */
    pred_t (*pred)[PRED_RING];
    int *n_pred;
    tide_time_t *last_pred;
    int n_svc;
    double err_sum;
    long scored, under;
};

/* ----------------------------------------------------------- the backend */

tide_backend_t *dmn_backend_create(tide_daemon_t *d, tide_error_t *err)
{
    tide_backend_opts_t o = d->bopts;
    o.read_only = d->shadow;
    tide_backend_t *real = tide_backend_create(d->backend_name, d->e, &o, err);
    if (!real || !d->shadow)
        return real;
    return tide_backend_shadow_create(real, d->e, &o);
}

/* ------------------------------------------------------------ the stats */

static void shadow_begin(tide_daemon_t *d)
{
    dshadow_t *s = tide_xcalloc(1, sizeof *s);
    s->since = d->now;
    s->until = -1;
    s->last_t = d->now;
    s->lead_min = -1;
    tide_engine_stats(d->e, &s->s0);
    d->sh = s;
}

void dmn_shadow_free(tide_daemon_t *d)
{
    if (!d->sh)
        return;
    free(d->sh->wait);
    free(d->sh->pred);
    free(d->sh->n_pred);
    free(d->sh->last_pred);
    free(d->sh);
    d->sh = NULL;
}

static void svc_grow(dshadow_t *s, int n)
{
    if (n <= s->n_svc)
        return;
    s->pred = tide_xrealloc(s->pred, (size_t)n * sizeof *s->pred);
    s->n_pred = tide_xrealloc(s->n_pred, (size_t)n * sizeof *s->n_pred);
    s->last_pred = tide_xrealloc(s->last_pred, (size_t)n * sizeof *s->last_pred);
    for (int i = s->n_svc; i < n; i++) {
        s->n_pred[i] = 0;
        s->last_pred[i] = -1;
    }
    s->n_svc = n;
}

/* Forecast checks: a prediction every forecast bucket of the peak over the
 * next lead; scored against the highest demand observed in that window. */
static void forecast_track(tide_daemon_t *d, dshadow_t *s, tide_time_t t)
{
    int ns = tide_engine_services(d->e);
    svc_grow(s, ns);
    for (int si = 0; si < ns; si++) {
        tide_forecast_info_t fc;
        if (tide_engine_forecast(d->e, si, 3600, &fc) < 0)
            continue;
        pred_t *v = s->pred[si];
        int k = 0;
        for (int i = 0; i < s->n_pred[si]; i++) {
            if (fc.last_observed > v[i].max_obs)
                v[i].max_obs = fc.last_observed;
            if (t < v[i].end) {
                v[k++] = v[i];
                continue;
            }
            double obs = v[i].max_obs;
            s->err_sum += fabs(v[i].peak - obs) / (obs > 1 ? obs : 1);
            s->scored++;
            s->under += obs > v[i].sized;
        }
        s->n_pred[si] = k;
        if (k < PRED_RING && (s->last_pred[si] < 0 || t - s->last_pred[si] >= d->cfg.forecast_bucket_s)) {
            tide_forecast_info_t w;
            tide_engine_forecast(d->e, si, fc.lead_s, &w);
            v[k] = (pred_t){.t = t, .end = t + fc.lead_s, .peak = w.peak,
                            .sized = w.peak_with_margin, .max_obs = fc.last_observed};
            s->n_pred[si] = k + 1;
            s->last_pred[si] = t;
        }
    }
}

/* Reclaims waiting for the real rise: demand above the capacity that was
 * ready when the notice went out. */
static void rises_track(dshadow_t *s, tide_time_t t, const tide_stats_t *st)
{
    size_t k = 0;
    for (size_t i = 0; i < s->n_wait; i++) {
        rise_t *w = &s->wait[i];
        if (st->demand_rps > w->cap_rps) {
            double lead = (double)(t - w->t);
            s->rises++;
            s->lead_sum += lead;
            if (s->lead_min < 0 || lead < s->lead_min)
                s->lead_min = lead;
        } else if (t - w->t > RISE_WAIT_S) {
            s->no_rise++;
        } else {
            s->wait[k++] = *w;
        }
    }
    s->n_wait = k;
}

static int is_reclaim(const tide_action_t *a)
{
    return a->reason == TIDE_R_RECLAIM &&
           (a->kind == TIDE_ACT_JOB_CKPT || a->kind == TIDE_ACT_JOB_RESIZE ||
            a->kind == TIDE_ACT_JOB_STOP);
}

/* Did this step grant job j a lease? */
static int granted(const tide_actions_t *acts, int32_t j)
{
    for (size_t i = 0; i < acts->n; i++)
        if (acts->v[i].kind == TIDE_ACT_LEASE_GRANT && acts->v[i].job == j)
            return 1;
    return 0;
}

void dmn_shadow_step(tide_daemon_t *d, tide_time_t t, const tide_actions_t *acts)
{
    if (!d->shadow)
        return;
    if (!d->sh)
        shadow_begin(d);
    dshadow_t *s = d->sh;
    tide_stats_t st;
    tide_engine_stats(d->e, &st);
    if (st.demand_rps > st.ready_rps + 1e-9)
        s->short_s += (double)(t - s->last_t);
    s->last_t = t;
    rises_track(s, t, &st);
    for (size_t i = 0; i < acts->n; i++) {
        const tide_action_t *a = &acts->v[i];
        if (a->kind >= 0 && a->kind < TIDE_ACT_KIND_COUNT)
            s->would[a->kind]++;
        if (is_reclaim(a) && a->kind != TIDE_ACT_JOB_STOP) {
            s->reclaims++;
            rise_t w = {.t = t, .cap_rps = st.ready_rps};
            TIDE_PUSH(s->wait, s->n_wait, s->cap_wait, w);
        }
        if (a->kind == TIDE_ACT_JOB_START && granted(acts, a->job))
            s->early_starts++;
    }
    forecast_track(d, s, t);
}

void dmn_shadow_epoch(tide_daemon_t *d, int built)
{
    dshadow_t *s = d->sh;
    if (!s)
        return;
    if (!built) {
        tide_engine_stats(d->e, &s->pre);
        return;
    }
    tide_stats_t st;
    tide_engine_stats(d->e, &st);
    /* what the old engine counted since the shadow began carries over */
#define SHIFT(f) s->s0.f = st.f - (s->pre.f - s->s0.f)
    SHIFT(borrowed_gpu_s);
    SHIFT(leases_granted);
    SHIFT(requests_demanded);
    SHIFT(requests_served);
    SHIFT(reclaims_late);
    SHIFT(tier_a_breach_gpu_s);
#undef SHIFT
}

/* ------------------------------------------------------------ the report */

static json_t *shadow_forecast(tide_daemon_t *d)
{
    json_t *o = json_object();
    for (int si = 0; si < tide_engine_services(d->e); si++) {
        tide_forecast_info_t fc;
        tide_engine_forecast(d->e, si, 3600, &fc);
        api_set(o, tide_engine_service(d->e, si)->name,
                json_pack("{s:o,s:i,s:I}", "margin", api_num(fc.margin), "samples", fc.samples,
                          "lead_s", (json_int_t)fc.lead_s));
    }
    return o;
}

json_t *dmn_shadow_json(tide_daemon_t *d)
{
    json_t *o = json_object();
    api_set(o, "mode", json_string(d->shadow ? "shadow" : "enact"));
    api_set(o, "learned", shadow_forecast(d)); /* kept across the switch */
    dshadow_t *s = d->sh;
    if (!s)
        return o;
    tide_stats_t st;
    tide_engine_stats(d->e, &st);
    tide_backend_status_t b;
    if (d->shadow)
        tide_backend_status(d->be, &b);
    else
        b = s->b_end;
    json_t *would = json_object();
    for (int k = 0; k < TIDE_ACT_KIND_COUNT; k++)
        api_set(would, tide_action_name(k), json_integer(s->would[k]));
    api_set(o, "since", api_time(s->since));
    api_set(o, "until", api_time(s->until));
    api_set(o, "would_actions", would);
    api_set(o, "lent_gpu_hours", api_num((st.borrowed_gpu_s - s->s0.borrowed_gpu_s) / 3600));
    api_set(o, "leases_granted", json_integer(st.leases_granted - s->s0.leases_granted));
    api_set(o, "jobs_started_early", json_integer(s->early_starts));
    api_set(o, "reclaims", json_pack("{s:I,s:I,s:I,s:o,s:o}", "notices", (json_int_t)s->reclaims,
                                     "rises", (json_int_t)s->rises, "no_rise",
                                     (json_int_t)s->no_rise, "lead_mean_s",
                                     api_num(s->rises ? s->lead_sum / s->rises : 0), "lead_min_s",
                                     api_num(s->lead_min > 0 ? s->lead_min : 0)));
    api_set(o, "forecast", json_pack("{s:I,s:o,s:I}", "checks", (json_int_t)s->scored,
                                     "mean_abs_error", api_num(s->scored ? s->err_sum / s->scored : 0),
                                     "under", (json_int_t)s->under));
    double dem = st.requests_demanded - s->s0.requests_demanded;
    double srv = st.requests_served - s->s0.requests_served;
    api_set(o, "risk", json_pack("{s:o,s:o,s:I,s:o}", "short_s", api_num(s->short_s),
                                 "unserved_requests", api_num(dem - srv), "late_returns",
                                 (json_int_t)(st.reclaims_late - s->s0.reclaims_late),
                                 "tier_a_breach_gpu_s",
                                 api_num(st.tier_a_breach_gpu_s - s->s0.tier_a_breach_gpu_s)));
    api_set(o, "backend", json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "submits", (json_int_t)b.submits,
                                    "signals", (json_int_t)b.signals, "requeues",
                                    (json_int_t)b.requeues, "cancels", (json_int_t)b.cancels,
                                    "refused", (json_int_t)b.refused, "calls",
                                    (json_int_t)b.calls));
    return o;
}

/* Prometheus: the shadow's figures (0 before any shadow). */
void dmn_shadow_metrics(tide_daemon_t *d, tide_prom_t *p)
{
    dshadow_t *s = d->sh;
    tide_stats_t st;
    tide_engine_stats(d->e, &st);
    const tide_prom_scalar_t m[] = {
        {"tide_shadow_mode", "gauge", "1 while the daemon runs in shadow mode (enacts nothing).", d->shadow},
        {"tide_shadow_lent_gpu_seconds_total", "counter", "GPU-seconds shadow mode would have lent to training.",
         s ? st.borrowed_gpu_s - s->s0.borrowed_gpu_s : 0},
        {"tide_shadow_reclaims_total", "counter", "Reclaim notices shadow mode would have sent.", s ? s->reclaims : 0},
        {"tide_shadow_reclaim_lead_seconds", "gauge",
         "Mean time from a would-be reclaim notice to the real rise of demand above the capacity then ready.",
         s && s->rises ? s->lead_sum / s->rises : 0},
        {"tide_shadow_forecast_error_ratio", "gauge",
         "Mean absolute error of the forecast peak over the lead against the demand observed, relative.",
         s && s->scored ? s->err_sum / s->scored : 0},
        {"tide_shadow_jobs_started_early_total", "counter", "Job starts shadow mode would have made on lent GPUs.",
         s ? s->early_starts : 0},
        {"tide_shadow_short_seconds_total", "counter",
         "Engine seconds the would-be capacity stayed below demand.", s ? s->short_s : 0},
        {"tide_shadow_late_returns_total", "counter", "Lease returns shadow mode would have had late.",
         s ? st.reclaims_late - s->s0.reclaims_late : 0},
    };
    tide_prom_scalars(p, m, sizeof m / sizeof m[0], NULL, 0);
    tide_prom_family(p, "tide_shadow_would_actions_total", "counter",
                     "Actions shadow mode would have enacted, by kind.");
    for (int k = 0; k < TIDE_ACT_KIND_COUNT; k++) {
        const char *l[] = {"kind", tide_action_name(k)};
        tide_prom_sample(p, "tide_shadow_would_actions_total", l, 1, s ? (double)s->would[k] : 0);
    }
}

/* ------------------------------------------------------------ the switch */

int dmn_mode_enact(tide_daemon_t *d, tide_error_t *err)
{
    if (!d->shadow)
        return tide_errf(err, TIDE_ESTATE, "already in enact mode");
    if (d->sh) {
        tide_backend_status(d->be, &d->sh->b_end);
        d->sh->until = d->now;
    }
    d->shadow = 0;
    tide_backend_t *be = tide_backend_create(d->backend_name, d->e, &d->bopts, err);
    if (!be) {
        d->shadow = 1;
        if (d->sh)
            d->sh->until = -1;
        return tide_err_prefix(err, "switching to enact: ");
    }
    tide_backend_destroy(d->be);
    d->be = be;
    /* what the twin ran the real backend does not: it starts for real */
    int lost_jobs, lost_reps;
    dmn_reconcile(d, &lost_jobs, &lost_reps);
    dmn_log(d, "mode: enact (the learned forecast is kept; %d jobs and %d replicas the shadow "
               "ran start for real)", lost_jobs, lost_reps);
    dmn_kick(d);
    return 0;
}

/* ------------------------------------------------------------ rehearsals */

int dmn_rehearse(tide_daemon_t *d, const char *svc, tide_error_t *err)
{
    int s = tide_engine_service_find(d->e, svc);
    if (s < 0)
        return tide_errf(err, TIDE_ENOENT, "unknown service '%s'", svc);
    tide_event_t ev = dmn_blank_event(TIDE_EV_REHEARSE);
    ev.service = s;
    dmn_evx_t x = {.service_name = svc};
    return dmn_accept(d, &ev, &x, err) < 0 ? -1 : 0;
}

void dmn_rehearse_due(tide_daemon_t *d, tide_time_t now)
{
    if (d->rehearse_every_s <= 0)
        return;
    if (d->next_rehearse <= 0)
        d->next_rehearse = d->now + d->rehearse_every_s;
    if (now < d->next_rehearse)
        return;
    for (int s = 0; s < tide_engine_services(d->e); s++) {
        tide_event_t ev = dmn_blank_event(TIDE_EV_REHEARSE);
        ev.service = s;
        dmn_evx_t x = {.service_name = dmn_service_name(d->e, s)};
        dmn_devq_push(&d->extra, &ev, d->next_rehearse, 0, &x, "schedule");
    }
    while (d->next_rehearse <= now)
        d->next_rehearse += d->rehearse_every_s;
}

json_t *dmn_rehearsal_json(const tide_daemon_t *d, int s)
{
    tide_rehearsal_info_t ri;
    if (tide_engine_rehearsal(d->e, s, &ri) < 0)
        return json_null();
    static const char *const run[] = {"idle", "warming", "waiting"};
    return json_pack("{s:i,s:i,s:i,s:s,s:o,s:o,s:o,s:o}", "done", ri.done, "slow", ri.slow,
                     "failed", ri.failed, "state", run[ri.running], "last_warmup_s",
                     api_num(ri.last_warmup_s), "allowed_s", api_num(ri.allowed_s), "last_at",
                     api_time(ri.last_at), "gpu_s", api_num(ri.gpu_s));
}

void dmn_rehearsal_metrics(tide_daemon_t *d, tide_prom_t *p)
{
    static const char *const fam[][3] = {
        {"tide_rehearsals_total", "counter", "Warm-up rehearsals completed per service."},
        {"tide_rehearsals_slow_total", "counter",
         "Warm-up rehearsals slower than the reclaim lead allowed, per service."},
        {"tide_rehearsals_failed_total", "counter", "Warm-up rehearsals that failed, per service."},
        {"tide_rehearsal_warmup_seconds", "gauge", "Warm-up the latest rehearsal measured, per service."},
        {"tide_rehearsal_allowed_seconds", "gauge",
         "Warm-up the lead allowed the latest rehearsal, per service."},
        {"tide_rehearsal_gpu_seconds_total", "counter", "GPU-seconds rehearsals held, per service."},
    };
    int ns = tide_engine_services(d->e);
    for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++) {
        tide_prom_family(p, fam[f][0], fam[f][1], fam[f][2]);
        for (int s = 0; s < ns; s++) {
            tide_rehearsal_info_t ri;
            tide_engine_rehearsal(d->e, s, &ri);
            double v[] = {ri.done, ri.slow, ri.failed, ri.last_warmup_s, ri.allowed_s, ri.gpu_s};
            const char *l[] = {"service", tide_engine_service(d->e, s)->name};
            tide_prom_sample(p, fam[f][0], l, 1, v[f]);
        }
    }
}
