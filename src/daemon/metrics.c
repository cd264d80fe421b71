/* /metrics: the Prometheus exposition of the daemon's state (names in
 * docs/api.md). Built under the daemon lock from the engine and the derived
 * state; request counters come from the router. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/internal.h"
#include "http/prom.h"
#include "util/util.h"

void dmn_gpu_class(tide_daemon_t *d, int g, int *cls, int *state, int *tier)
{
    int32_t who;
    int kind = tide_engine_gpu_owner(d->e, g, &who);
    char zone = tide_engine_gpu_zone(d->e, g);
    if (kind == 2) {
        *cls = TIDE_C_INFERENCE;
        *state = (size_t)who < d->n_reps && d->reps[who].rehearsal ? TIDE_S_REHEARSING
                 : (size_t)who < d->n_reps && d->reps[who].state == REP_UP ? TIDE_S_SERVING
                                                                           : TIDE_S_WARMING;
        *tier = zone == 'A' ? TIDE_T_A : TIDE_T_B;
        return;
    }
    tide_job_info_t ji;
    if (kind == 1 && tide_engine_job(d->e, who, &ji) == 0) {
        int p = ji.spec->priority;
        *cls = p >= 1 && p <= 3 ? TIDE_C_P1 + (p - 1) : TIDE_C_P3;
        *state = ji.phase == TIDE_PHASE_RESTORING       ? TIDE_S_RESTORING
                 : ji.phase == TIDE_PHASE_CHECKPOINTING ? TIDE_S_CHECKPOINTING
                                                        : TIDE_S_TRAINING;
        *tier = ji.lease >= 0 && zone != 'T' ? TIDE_T_C : TIDE_T_D;
        return;
    }
    *cls = TIDE_C_NONE;
    *state = kind == 3 ? TIDE_S_FOREIGN : TIDE_S_IDLE; /* 3: a job tide does not manage */
    *tier = zone == 'A' ? TIDE_T_A : zone == 'T' ? TIDE_T_D : TIDE_T_B;
}

typedef struct combo {
    int cls, state, tier;
} combo_t;

/* The (class, state, tier) combinations the engine produces: always
 * exported, 0 when empty, so that series do not come and go. */
static const combo_t combos[] = {
    {TIDE_C_INFERENCE, TIDE_S_SERVING, TIDE_T_A}, {TIDE_C_INFERENCE, TIDE_S_SERVING, TIDE_T_B},
    {TIDE_C_INFERENCE, TIDE_S_WARMING, TIDE_T_A}, {TIDE_C_INFERENCE, TIDE_S_WARMING, TIDE_T_B},
    {TIDE_C_INFERENCE, TIDE_S_REHEARSING, TIDE_T_A}, {TIDE_C_INFERENCE, TIDE_S_REHEARSING, TIDE_T_B},
    {TIDE_C_P1, TIDE_S_TRAINING, TIDE_T_C},       {TIDE_C_P1, TIDE_S_TRAINING, TIDE_T_D},
    {TIDE_C_P1, TIDE_S_CHECKPOINTING, TIDE_T_C},  {TIDE_C_P1, TIDE_S_CHECKPOINTING, TIDE_T_D},
    {TIDE_C_P1, TIDE_S_RESTORING, TIDE_T_C},      {TIDE_C_P1, TIDE_S_RESTORING, TIDE_T_D},
    {TIDE_C_P2, TIDE_S_TRAINING, TIDE_T_C},       {TIDE_C_P2, TIDE_S_TRAINING, TIDE_T_D},
    {TIDE_C_P2, TIDE_S_CHECKPOINTING, TIDE_T_C},  {TIDE_C_P2, TIDE_S_CHECKPOINTING, TIDE_T_D},
    {TIDE_C_P2, TIDE_S_RESTORING, TIDE_T_C},      {TIDE_C_P2, TIDE_S_RESTORING, TIDE_T_D},
    {TIDE_C_P3, TIDE_S_TRAINING, TIDE_T_C},       {TIDE_C_P3, TIDE_S_TRAINING, TIDE_T_D},
    {TIDE_C_P3, TIDE_S_CHECKPOINTING, TIDE_T_C},  {TIDE_C_P3, TIDE_S_CHECKPOINTING, TIDE_T_D},
    {TIDE_C_P3, TIDE_S_RESTORING, TIDE_T_C},      {TIDE_C_P3, TIDE_S_RESTORING, TIDE_T_D},
    {TIDE_C_NONE, TIDE_S_IDLE, TIDE_T_A},         {TIDE_C_NONE, TIDE_S_IDLE, TIDE_T_B},
    {TIDE_C_NONE, TIDE_S_IDLE, TIDE_T_D},
};

typedef struct http_counts {
    tide_prom_t *p;
} http_counts_t;

static void http_count(void *ctx, const char *route, int status, unsigned long n)
{
    http_counts_t *c = ctx;
    char code[16];
    snprintf(code, sizeof code, "%d", status);
    const char *l[] = {"route", route, "code", code};
    tide_prom_sample(c->p, "tide_http_requests_total", l, 2, (double)n);
}

/* GPUs by state, class and tier. */
static void m_gpus(tide_daemon_t *d, tide_prom_t *p)
{
    int cnt[TIDE_C_COUNT][TIDE_S_COUNT][TIDE_T_COUNT];
    memset(cnt, 0, sizeof cnt);
    for (int g = 0; g < tide_cluster_gpus(d->cluster); g++) {
        int c, s, t;
        dmn_gpu_class(d, g, &c, &s, &t);
        cnt[c][s][t]++;
    }
    tide_prom_family(p, "tide_gpus", "gauge", "GPUs now by state, workload class and tier.");
    for (size_t i = 0; i < sizeof combos / sizeof combos[0]; i++) {
        const combo_t *k = &combos[i];
        const char *l[] = {"state", tide_state_name(k->state), "class", tide_class_name(k->cls),
                           "tier", tide_tier_name(k->tier)};
        tide_prom_sample(p, "tide_gpus", l, 3, cnt[k->cls][k->state][k->tier]);
    }
}

/* Jobs by state, the queue by priority, preemptions. */
static void m_jobs(tide_daemon_t *d, tide_prom_t *p)
{
    const tide_engine_t *e = d->e;
    int by_state[TIDE_JOB_STATE_COUNT] = {0}, queued[TIDE_NPRIO] = {0};
    for (int h = 0; h < tide_engine_jobs(e); h++) {
        tide_job_info_t ji;
        if (tide_engine_job(e, h, &ji) != 0)
            continue;
        if (ji.state >= 0 && ji.state < TIDE_JOB_STATE_COUNT)
            by_state[ji.state]++;
        if (ji.state == TIDE_JOB_QUEUED && ji.spec->priority >= 1 && ji.spec->priority < TIDE_NPRIO)
            queued[ji.spec->priority]++;
    }
    for (size_t i = 0; i < d->pending.n; i++)
        if (d->pending.v[i].ev.kind == TIDE_EV_JOB_SUBMIT) {
            by_state[TIDE_JOB_QUEUED]++;
            int pr = d->pending.v[i].spec.priority;
            if (pr >= 1 && pr < TIDE_NPRIO)
                queued[pr]++;
        }
    tide_prom_family(p, "tide_queue_depth", "gauge", "Training jobs waiting, by priority.");
    for (int pr = TIDE_P1; pr < TIDE_NPRIO; pr++) {
        char pl[8];
        snprintf(pl, sizeof pl, "P%d", pr);
        const char *l[] = {"priority", pl};
        tide_prom_sample(p, "tide_queue_depth", l, 1, queued[pr]);
    }
    tide_prom_family(p, "tide_jobs", "gauge", "Training jobs by state.");
    for (int k = 0; k < TIDE_JOB_STATE_COUNT; k++) {
        const char *l[] = {"state", tide_job_state_name(k)};
        tide_prom_sample(p, "tide_jobs", l, 1, by_state[k]);
    }
    tide_prom_family(p, "tide_preemptions_total", "counter",
                     "Training jobs stopped by someone else (not completion or cancel), by reason.");
    for (int r = 1; r < TIDE_R_COUNT; r++) {
        if (r == TIDE_R_COMPLETE || r == TIDE_R_CANCEL)
            continue;
        const char *l[] = {"reason", tide_reason_name(r)};
        tide_prom_sample(p, "tide_preemptions_total", l, 1, (double)d->preempt[r]);
    }
}

/* Reclaims and their timing. */
static void m_reclaim(tide_daemon_t *d, tide_prom_t *p, const tide_stats_t *st)
{
    const tide_engine_t *e = d->e;
    tide_prom_family(p, "tide_reclaims_total", "counter", "Reclaims of lent GPUs started.");
    tide_prom_sample(p, "tide_reclaims_total", NULL, 0, st->reclaims);
    tide_prom_family(p, "tide_lease_late_total", "counter",
                     "Reclaims whose GPUs came back after the notice's deadline.");
    tide_prom_sample(p, "tide_lease_late_total", NULL, 0, st->reclaims_late);
    tide_prom_family(p, "tide_lease_expired_total", "counter",
                     "Leases that ran out without a reclaim notice (the job was stopped).");
    tide_prom_sample(p, "tide_lease_expired_total", NULL, 0, st->leases_expired);
    tide_prom_family(p, "tide_tier_a_breach_gpu_seconds_total", "counter",
                     "GPU-seconds the healthy Tier A reserve stayed below its size.");
    tide_prom_sample(p, "tide_tier_a_breach_gpu_seconds_total", NULL, 0, st->tier_a_breach_gpu_s);
    static const double bounds[] = {10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200};
    tide_samples_t sm = tide_engine_samples(e, TIDE_SAMPLE_RECLAIM_RETURN);
    tide_prom_family(p, "tide_reclaim_seconds", "histogram",
                     "Engine seconds from a reclaim notice to the GPUs returned.");
    tide_prom_histogram(p, "tide_reclaim_seconds", NULL, 0, bounds,
                        sizeof bounds / sizeof bounds[0], sm.v, sm.n);
}

/* Inference: SLO attainment, demand, capacity, margins, demand sources. */
static void m_inference(tide_daemon_t *d, tide_prom_t *p, const tide_stats_t *st)
{
    const tide_engine_t *e = d->e;
    tide_prom_family(p, "tide_inference_slo_attainment", "gauge",
                     "Requests served within the SLO over requests demanded, since the start.");
    tide_prom_sample(p, "tide_inference_slo_attainment", NULL, 0,
                     st->requests_demanded > 0 ? st->requests_served / st->requests_demanded : 1.0);
    int ns = tide_engine_services(e);
    static const char *const svc_fam[][2] = {
        {"tide_demand_rps", "Demand observed per service (requests/s)."},
        {"tide_ready_rps", "Capacity of ready replicas per service (requests/s)."},
        {"tide_forecast_margin", "Forecast safety margin per service (fraction)."},
    };
    for (int f = 0; f < 3; f++) {
        tide_prom_family(p, svc_fam[f][0], "gauge", svc_fam[f][1]);
        for (int s = 0; s < ns; s++) {
            const tide_service_spec_t *sp = tide_engine_service(e, s);
            tide_forecast_info_t fc = {0};
            tide_engine_forecast(e, s, 3600, &fc);
            int ready = 0;
            for (size_t r = 0; r < d->n_reps; r++)
                ready += d->reps[r].service == s && d->reps[r].state == REP_UP;
            double v = f == 0 ? fc.last_observed : f == 1 ? ready * sp->replica_rps : fc.margin;
            const char *l[] = {"service", sp->name};
            tide_prom_sample(p, svc_fam[f][0], l, 1, v);
        }
    }
    tide_prom_family(p, "tide_demand_source_up", "gauge",
                     "1 when the pulled demand source of a service gave a fresh value lately.");
    for (size_t i = 0; i < d->n_src; i++) {
        const char *l[] = {"service", d->src[i].service};
        tide_prom_sample(p, "tide_demand_source_up", l, 1, d->src[i].up);
    }
}

/* Snapshots and the last recovery. */
static void m_snapshots(tide_daemon_t *d, tide_prom_t *p)
{
    const tide_prom_scalar_t m[] = {
        {"tide_snapshots_total", "counter", "Engine snapshots written by this process (--snapshot-every).", (double)d->snapshots_written},
        {"tide_snapshot_bytes", "gauge", "Size of the last snapshot written.", (double)d->snap_bytes},
        {"tide_recovery_replayed_steps", "gauge", "Steps the last recovery replayed (after the snapshot it restored, if any).", (double)d->replayed},
    };
    tide_prom_scalars(p, m, sizeof m / sizeof m[0], NULL, 0);
}

/* The engine and the API. */
static void m_engine(tide_daemon_t *d, tide_prom_t *p)
{
    const tide_prom_scalar_t m[] = {
        {"tide_engine_steps_total", "counter", "Engine steps taken by this process (replayed ones included).", (double)d->steps_total},
        {"tide_engine_time_seconds", "gauge", "Engine clock at the last step.", (double)d->now},
        {"tide_events_rejected_total", "counter", "Steps in which the engine rejected an event (stale or invalid).", (double)d->step_errors},
        {"tide_events_quarantined_total", "counter", "Stored events replay refused to feed (out of range: logged, skipped).", (double)d->quarantined},
        {"tide_replay_mismatches_total", "counter", "Replayed steps whose actions differed from the recorded ones.", (double)d->replay_mismatch},
        {"tide_api_commits_total", "counter", "Group commits of API writes (transactions, each one fsync).", (double)d->gc_batches},
        {"tide_api_writes_total", "counter", "API writes carried by those commits (accepted or refused).", (double)d->gc_writes},
        {"tide_api_commit_gathers_total", "counter", "Group commits whose leader waited (at most one commit's duration) for writers the last batch saw.", (double)__atomic_load_n(&d->gc_gathers, __ATOMIC_RELAXED)},
        {"tide_pending_events", "gauge", "API events accepted but not yet fed.", (double)d->pending.n},
    };
    tide_prom_scalars(p, m, sizeof m / sizeof m[0], NULL, 0);
    tide_prom_family(p, "tide_http_requests_total", "counter", "HTTP requests by route and status.");
    if (d->router) {
        http_counts_t hc = {p};
        tide_router_counts(d->router, http_count, &hc);
    }
}

/* The backend: a table of (name, type, help, value). */
static void m_backend(tide_daemon_t *d, tide_prom_t *p)
{
    if (d->be) {
        tide_backend_status_t bs;
        tide_backend_status(d->be, &bs);
        const tide_prom_scalar_t bf[] = {
            {"tide_backend_up", "gauge", "1 when the backend's cluster engine answered its last call.", bs.reachable},
            {"tide_backend_calls_total", "counter", "Calls the backend made to its cluster engine.", (double)bs.calls},
            {"tide_backend_errors_total", "counter", "Backend calls that failed (retried when the engine was unreachable).", (double)bs.errors},
            {"tide_backend_submits_total", "counter", "Jobs the backend submitted (gangs and replicas).", (double)bs.submits},
            {"tide_backend_requeues_total", "counter", "Jobs the backend requeued (stops).", (double)bs.requeues},
            {"tide_backend_signals_total", "counter", "Checkpoint signals delivered.", (double)bs.signals},
            {"tide_backend_cancels_total", "counter", "Jobs the backend cancelled.", (double)bs.cancels},
            {"tide_backend_pending_ops", "gauge", "Changes waiting for the cluster engine to answer.", (double)bs.pending_ops},
            {"tide_backend_power_cmds_total", "counter", "Per-node power-cap commands run (--power-cap-cmd).", (double)bs.power_cmds},
            {"tide_backend_power_cmd_failures_total", "counter", "Per-node power-cap commands that failed.", (double)bs.power_cmd_failures},
        };
        const char *bl[] = {"backend", d->backend_name};
        tide_prom_scalars(p, bf, sizeof bf / sizeof bf[0], bl, 1);
        tide_prom_family(p, "tide_backend_job_ends_total", "counter",
                         "Runs of jobs the backend saw end, by how they ended.");
        const char *ends[] = {"completed", "failed", "timeout"};
        double ev[] = {(double)bs.exits_ok, (double)bs.exits_failed, (double)bs.timeouts};
        for (int i = 0; i < 3; i++) {
            const char *l[] = {"backend", d->backend_name, "end", ends[i]};
            tide_prom_sample(p, "tide_backend_job_ends_total", l, 2, ev[i]);
        }
    }
}

/* One gauge family with a value per power domain (label domain="K"). */
static void per_domain(tide_prom_t *p, const char *name, const char *help, const double *v, int n)
{
    tide_prom_family(p, name, "gauge", help);
    for (int k = 0; k < n; k++) {
        char dom[16];
        snprintf(dom, sizeof dom, "%d", k);
        const char *l[] = {"domain", dom};
        tide_prom_sample(p, name, l, 1, v[k]);
    }
}

/* Power per power domain as the engine plans it, budgets, capped GPUs, energy. */
static void m_power(tide_daemon_t *d, tide_prom_t *p, const tide_stats_t *st)
{
    const tide_cluster_t *c = tide_engine_cluster(d->e);
    int n = tide_cluster_power_domains(c);
    double *w = tide_xcalloc(2 * (size_t)n + 1, sizeof *w), *b = w + n;
    tide_engine_power_all(d->e, w, n);
    for (int k = 0; k < n; k++)
        b[k] = tide_cluster_power_budget(c, k);
    per_domain(p, "tide_power_watts", "Planned draw of each power domain (modelled, with caps).", w, n);
    per_domain(p, "tide_power_budget_watts", "Budget of each power domain (0 = none).", b, n);
    free(w);
    const tide_prom_scalar_t m[] = {
        {"tide_power_capped_gpus", "gauge", "GPUs of training jobs under a power cap now.", (double)st->power_capped_gpus},
        {"tide_power_caps_total", "counter", "Power caps set, raised or lifted (power_cap actions).", (double)st->power_caps},
        {"tide_power_stops_total", "counter", "Jobs stopped because caps could not hold a budget.", (double)st->power_stops},
        {"tide_energy_joules_total", "counter", "Modelled energy of all GPUs since the engine started.",
         st->energy_serving_j + st->energy_training_j + st->energy_idle_j + st->energy_other_j},
    };
    tide_prom_scalars(p, m, sizeof m / sizeof m[0], NULL, 0);
}

/* The store: its counters (tide_store_stats) and the degraded state. */
static void m_store(tide_daemon_t *d, tide_prom_t *p)
{
    tide_store_stats_t ss;
    tide_store_stats(d->st, &ss);
    const tide_prom_scalar_t sf[] = {
        {"tide_store_errors_total", "counter", "Store calls that failed (SQLite errors, a held lock, a full disk, lost files).", (double)ss.errors},
        {"tide_store_commits_total", "counter", "Transactions the store committed.", (double)ss.commits},
        {"tide_store_commit_errors_total", "counter", "Commits that failed (nothing of theirs is durable or enacted).", (double)ss.commit_errors},
        {"tide_store_writable", "gauge", "0 once the database file was deleted or replaced under the daemon (until a restart).", ss.writable},
        {"tide_store_degraded", "gauge", "1 while the store cannot write: writes answer 503 and /readyz fails.", d->degraded},
        {"tide_store_degraded_episodes_total", "counter", "Times the store stopped writing.", (double)d->degraded_episodes},
        {"tide_audit_rows_total", "counter", "Requests to write routes recorded in the audit trail.", (double)__atomic_load_n(&d->audit_rows, __ATOMIC_RELAXED)},
        {"tide_audit_failures_total", "counter", "Requests to write routes whose audit row could not be written (logged).", (double)__atomic_load_n(&d->audit_failed, __ATOMIC_RELAXED)},
    };
    tide_prom_scalars(p, sf, sizeof sf / sizeof sf[0], NULL, 0);
}

/* Teams: GPUs held, quotas, borrowing. */
static void m_teams(tide_daemon_t *d, tide_prom_t *p)
{
    const tide_engine_t *e = d->e;
    static const char *const team_fam[][2] = {
        {"tide_team_gpus", "GPUs a team's training jobs hold now."},
        {"tide_team_quota_gpus", "A team's guaranteed training GPUs (teams with a quota)."},
        {"tide_team_borrowed_gpus", "GPUs a team holds beyond its quota."},
    };
    for (int f = 0; f < 3; f++) {
        tide_prom_family(p, team_fam[f][0], "gauge", team_fam[f][1]);
        for (int t = 0; t < tide_engine_teams(e); t++) {
            tide_team_info_t ti;
            if (tide_engine_team_info(e, t, &ti) != 0 || !ti.team)
                continue;
            if (f == 1 && ti.quota_gpus < 0)
                continue;
            double v = f == 0 ? ti.used_gpus : f == 1 ? ti.quota_gpus : ti.borrowed_gpus;
            const char *l[] = {"team", ti.team};
            tide_prom_sample(p, team_fam[f][0], l, 1, v);
        }
    }
}

/* ------------------------------------------- forecast and alertable series */

/* What the forecast acts on, per service: the baseline peak over the next
 * hour, the size it is scaled to (peak x (1 + margin)), the margin, and the
 * lead time capacity needs (reclaim or warm-up). */
static void m_forecast(tide_daemon_t *d, tide_prom_t *p)
{
    static const char *const fam[][2] = {
        {"tide_forecast_rps", "Forecast baseline peak demand over the next hour per service (requests/s)."},
        {"tide_forecast_sized_rps", "Demand a service is sized for: forecast peak x (1 + margin) (requests/s)."},
        {"tide_margin", "Learned burst margin per service (fraction added to the forecast peak)."},
        {"tide_lead_seconds", "Lead time new capacity of a service needs now (reclaim or warm-up), seconds."},
    };
    int ns = tide_engine_services(d->e);
    for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++) {
        tide_prom_family(p, fam[f][0], "gauge", fam[f][1]);
        for (int s = 0; s < ns; s++) {
            tide_forecast_info_t fc = {0};
            tide_engine_forecast(d->e, s, 3600, &fc);
            double v = f == 0 ? fc.peak : f == 1 ? fc.peak_with_margin
                       : f == 2 ? fc.margin : (double)fc.lead_s;
            const char *l[] = {"service", tide_engine_service(d->e, s)->name};
            tide_prom_sample(p, fam[f][0], l, 1, v);
        }
    }
}

/* Counters an SLO burn-rate alert can take rate() of, and lost work. */
static void m_slo_counters(tide_prom_t *p, const tide_stats_t *st)
{
    const tide_prom_scalar_t c[] = {
        {"tide_requests_demanded_total", "counter", "Inference requests demanded, summed over services.", st->requests_demanded},
        {"tide_requests_served_total", "counter", "Inference requests served within the SLO, summed over services.", st->requests_served},
        {"tide_lost_gpu_seconds_total", "counter", "GPU-seconds of training progress lost (work since the last checkpoint of stopped jobs).", st->lost_gpu_s},
    };
    tide_prom_scalars(p, c, sizeof c / sizeof c[0], NULL, 0);
}

/* Queue wait of started jobs (submitted -> first start), by priority. */
static void m_queue_wait(tide_daemon_t *d, tide_prom_t *p)
{
    static const double bounds[] = {10, 60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400};
    size_t nj = (size_t)tide_engine_jobs(d->e);
    double *obs = tide_xmalloc((nj ? nj : 1) * sizeof *obs);
    tide_prom_family(p, "tide_queue_wait_seconds", "histogram",
                     "Engine seconds training jobs waited from submission to first start, by priority.");
    for (int pr = TIDE_P1; pr < TIDE_NPRIO; pr++) {
        size_t n = 0;
        for (size_t h = 0; h < nj; h++) {
            tide_job_info_t ji;
            if (tide_engine_job(d->e, (int32_t)h, &ji) == 0 && ji.spec->priority == pr &&
                ji.first_start >= 0 && ji.first_start != TIDE_TIME_NEVER)
                obs[n++] = (double)(ji.first_start - ji.submitted);
        }
        char pl[8];
        snprintf(pl, sizeof pl, "P%d", pr);
        const char *l[] = {"priority", pl};
        tide_prom_histogram(p, "tide_queue_wait_seconds", l, 1, bounds,
                            sizeof bounds / sizeof bounds[0], obs, n);
    }
    free(obs);
}

char *dmn_metrics(tide_daemon_t *d, size_t *len)
{
    tide_prom_t p;
    tide_prom_init(&p);
    tide_stats_t st;
    tide_engine_stats(d->e, &st);
    m_gpus(d, &p);
    m_jobs(d, &p);
    m_reclaim(d, &p, &st);
    m_inference(d, &p, &st);
    m_engine(d, &p);
    m_snapshots(d, &p);
    m_backend(d, &p);
    m_power(d, &p, &st);
    dmn_power_metrics(d, &p);
    m_teams(d, &p);
    m_store(d, &p);
    m_forecast(d, &p);
    m_slo_counters(&p, &st);
    m_queue_wait(d, &p);
    dmn_shadow_metrics(d, &p);
    dmn_rehearsal_metrics(d, &p);
    dmn_rl_metrics(d, &p);
    *len = p.n;
    char *out = p.buf ? p.buf : tide_xstrdup("");
    return out;
}
