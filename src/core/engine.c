/* The engine: one function moves the world forward. Drivers pass the time and
 * the facts they observed; the engine updates its model, decides, and returns
 * actions plus the next time it wants to be woken. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* ------------------------------------------------------------ job id index */

static void idx_put(tide_engine_t *e, int32_t h);

static void idx_rehash(tide_engine_t *e)
{
    size_t cap = e->idx_cap ? e->idx_cap * 2 : 1024;
    free(e->idx_slots);
    e->idx_slots = tide_xmalloc(cap * sizeof *e->idx_slots);
    for (size_t i = 0; i < cap; i++)
        e->idx_slots[i] = -1;
    e->idx_cap = cap;
    for (size_t h = 0; h < e->n_jobs; h++)
        idx_put(e, (int32_t)h);
}

static void idx_put(tide_engine_t *e, int32_t h)
{
    size_t m = e->idx_cap - 1;
    size_t i = (size_t)tide_hash_str(e->jobs[h]->spec.id) & m;
    while (e->idx_slots[i] >= 0)
        i = (i + 1) & m;
    e->idx_slots[i] = h;
}

int32_t tide_engine_job_find(const tide_engine_t *e, const char *id)
{
    if (!e->idx_cap || !id)
        return -1;
    size_t m = e->idx_cap - 1;
    size_t i = (size_t)tide_hash_str(id) & m;
    while (e->idx_slots[i] >= 0) {
        if (!strcmp(e->jobs[e->idx_slots[i]]->spec.id, id))
            return e->idx_slots[i];
        i = (i + 1) & m;
    }
    return -1;
}

/* ------------------------------------------------------------ create */

tide_engine_t *tide_engine_create(const tide_cluster_t *c, const tide_config_t *cfg,
                                  tide_error_t *err)
{
    tide_config_t def;
    if (!cfg) {
        tide_config_default(&def);
        cfg = &def;
    }
    const tide_policy_t *pol = tide_policy_find(cfg->policy);
    if (!pol) {
        tide_errf(err, TIDE_EINVAL, "unknown policy '%s' (isolated, static, preempt, k8s, elastic, timeshare)",
                  cfg->policy ? cfg->policy : "(null)");
        return NULL;
    }
    if (cfg->tick_s < 1 || cfg->forecast_bucket_s < 1 || cfg->lease_max_s < 1 ||
        cfg->backfill_depth < 1 || cfg->margin_min < 0 || cfg->margin_max < cfg->margin_min ||
        !(cfg->slo_target > 0 && cfg->slo_target < 1) || cfg->slo_window_s < 0 || cfg->slo_period_s < 0 ||
        cfg->night_start_h < 0 ||
        cfg->night_start_h > 23 || cfg->night_end_h < 0 || cfg->night_end_h > 23 ||
        cfg->forecast_days < 1 || cfg->scale_down_hold_s < 0 || cfg->lead_extra_s < 0 ||
        !(cfg->headroom >= 0) || cfg->headroom > 100 || cfg->hpa_window_s < 0 ||
        cfg->sizing_ensemble < 0 || cfg->sizing_ensemble > 1 || cfg->spread_max_skew < 0 ||
        !(cfg->survive_share >= 0 && cfg->survive_share <= 1)) {
        tide_errf(err, TIDE_EINVAL, "invalid engine configuration (a period, margin or hour out of range)");
        return NULL;
    }
    if (!c || tide_cluster_gpus(c) < 1) {
        tide_errf(err, TIDE_EINVAL, "the cluster has no GPUs");
        return NULL;
    }
    tide_engine_t *e = tide_xcalloc(1, sizeof *e);
    e->cluster = tide_cluster_copy(c);
    e->cfg = *cfg;
    e->cfg.policy = pol->name;
    e->pol = pol;
    e->n_nodes = tide_cluster_nodes(c);
    e->n_gpus = tide_cluster_gpus(c);
    e->nodes = tide_xcalloc((size_t)e->n_nodes, sizeof *e->nodes);
    e->n_doms = tide_cluster_domains(c);
    e->doms = tide_xcalloc((size_t)e->n_doms, sizeof *e->doms);
    for (int d = 0; d < e->n_doms; d++)
        e->doms[d].first_node = -1;
    for (int n = 0; n < e->n_nodes; n++) {
        tide_node_info_t ni;
        tide_cluster_node(c, n, &ni);
        e->nodes[n] = (node_t){.domain = ni.domain, .gpus = ni.gpus, .first_gpu = ni.first_gpu, .up = 1};
        domain_t *d = &e->doms[ni.domain];
        if (d->first_node < 0) {
            d->first_node = n;
            d->first_gpu = ni.first_gpu;
            d->type = ni.type;
            d->rack = ni.rack;
            d->power = ni.power;
        }
        d->n_nodes++;
        d->gpus += ni.gpus;
    }
    e->n_racks = tide_cluster_racks(c);
    e->n_power = tide_cluster_power_domains(c);
    e->plan_cost = tide_xcalloc((size_t)e->n_doms + 1, sizeof *e->plan_cost);
    e->plan_ok = tide_xcalloc((size_t)e->n_doms + 1, 1);
    tide__plan_memo_init(e);
    for (int d = 0; d < e->n_doms; d++) {
        e->doms[d].up_gpus = e->doms[d].free = e->doms[d].gpus;
        if (e->doms[d].gpus > e->max_dom_gpus)
            e->max_dom_gpus = e->doms[d].gpus;
    }
    e->dom_words = ((size_t)e->n_doms + 63) / 64 + 1;
    e->dom_free_bits = tide_xcalloc(((size_t)e->max_dom_gpus + 1) * e->dom_words, sizeof *e->dom_free_bits);
    for (int d = 0; d < e->n_doms; d++)
        tide__dom_free_mark(e, d);
    e->vict_cand = tide_xcalloc((size_t)e->max_dom_gpus, sizeof *e->vict_cand);
    e->vict_v = tide_xcalloc((size_t)e->max_dom_gpus, sizeof *e->vict_v);
    e->vict_best = tide_xcalloc((size_t)e->max_dom_gpus, sizeof *e->vict_best);
    e->vict_used = tide_xcalloc((size_t)e->max_dom_gpus, sizeof *e->vict_used);
    e->gpu_dom = tide_xmalloc((size_t)e->n_gpus * sizeof *e->gpu_dom);
    for (int d = 0; d < e->n_doms; d++)
        for (int g = e->doms[d].first_gpu; g < e->doms[d].first_gpu + e->doms[d].gpus; g++)
            e->gpu_dom[g] = d;
    e->own_kind = tide_xcalloc((size_t)e->n_gpus, 1);
    e->own_id = tide_xmalloc((size_t)e->n_gpus * sizeof *e->own_id);
    for (int g = 0; g < e->n_gpus; g++)
        e->own_id[g] = -1;
    e->scratch_a = tide_xcalloc((size_t)e->n_doms + 1, sizeof(int));
    e->scratch_b = tide_xcalloc((size_t)e->n_doms + 1, sizeof(int));
    e->scratch_c = tide_xcalloc((size_t)e->n_doms + 1, sizeof(int));
    e->next_deadline = TIDE_TIME_NEVER;
    e->grow_at = TIDE_TIME_NEVER;
    e->st.cluster_gpus = e->n_gpus;
    e->n_types = tide_cluster_types(c) > 0 ? tide_cluster_types(c) : 1;
    e->foreign_cells = tide_xcalloc((size_t)TIDE_T_COUNT * (size_t)e->n_types,
                                    sizeof *e->foreign_cells);
    tide__power_init(e);
    return e;
}

void tide_engine_swap(tide_engine_t *a, tide_engine_t *b)
{
    /* no member points into its own struct (out is only set during a step) */
    struct tide_engine t = *a;
    *a = *b;
    *b = t;
}

void tide_engine_destroy(tide_engine_t *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->n_jobs; i++) {
        if (tide__job_team_owned(e, e->jobs[i]))
            free((char *)e->jobs[i]->spec.team);
        tide__alloc_free(&e->jobs[i]->alloc);
    }
    for (size_t b = 0; b < e->n_job_blk; b++)
        free(e->job_blk[b]);
    free(e->job_blk);
    free(e->jobs);
    tide_strpool_free(&e->job_ids);
    free(e->idx_slots);
    for (int s = 0; s < e->n_svcs; s++) {
        free((char *)e->svcs[s].spec.name);
        tide__fc_free(&e->svcs[s].fc);
        free(e->svcs[s].cells);
        free(e->svcs[s].warm.v);
        free(e->svcs[s].hpa);
        free(e->svcs[s].orc_off);
        free(e->svcs[s].spread);
        free(e->svcs[s].warm_ids);
        free(e->svcs[s].live_ids);
    }
    free(e->reserve_type);
    free(e->foreign_cells);
    free(e->orc);
    free(e->svcs);
    for (size_t r = 0; r < e->n_reps; r++)
        tide__alloc_free(&e->reps[r].alloc);
    free(e->reps);
    free(e->leases);
    free(e->need_curve);
    free(e->need_vals);
    free(e->lease_order);
    free(e->renew_new);
    free(e->renew_mark);
    free(e->lease_merge);
    free(e->lw_min);
    free(e->need_pmax);
    free(e->dl);
    free(e->dom_free_bits);
    free(e->plan_cost);
    free(e->plan_ok);
    tide__plan_memo_free(e);
    for (int t = 0; t < e->n_teams; t++) {
        free(e->teams[t].name);
        free(e->teams[t].quota);
        free(e->teams[t].used);
        free(e->teams[t].cells);
    }
    free(e->teams);
    for (int p = 0; p < TIDE_NPRIO; p++)
        free(e->q[p]);
    free(e->qk);
    free(e->jdom);
    for (size_t k = 0; k < e->cap_tq; k++) {
        for (size_t t = 0; t < e->tq[k].cap_team; t++)
            free(e->tq[k].team[t].v);
        free(e->tq[k].team);
        tide_bitset_free(&e->tq[k].teams);
    }
    free(e->tq);
    free(e->qshapes);
    for (int p = 0; p < TIDE_NPRIO; p++) {
        free(e->qs_live[p]);
        free(e->q_team_n[p]);
        tide_bitset_free(&e->q_teams[p]);
    }
    free(e->fs_order);
    free(e->fs_rank);
    free(e->fs_score);
    free(e->running);
    tide_bitset_free(&e->grow_slots);
    if (e->by_end) { /* they start by_end_lo entries into their allocations */
        free(e->by_end - e->by_end_lo);
        free(e->by_end_t - e->by_end_lo);
    }
    for (int k = 0; k < TIDE_SAMPLE_COUNT; k++)
        free(e->smp[k].v);
    for (int k = 0; k < TIDE_NPRIO; k++) {
        free(e->resv[k].avail);
        free(e->resv[k].res);
        free(e->resv[k].nz);
    }
    free(e->vict_cand);
    free(e->vict_v);
    free(e->vict_best);
    free(e->vict_used);
    free(e->scratch_a);
    free(e->scratch_b);
    free(e->scratch_c);
    tide__power_free(e);
    free(e->gpu_dom);
    free(e->own_kind);
    free(e->own_id);
    free(e->nodes);
    free(e->doms);
    tide_cluster_destroy(e->cluster);
    free(e);
}

int tide_engine_add_service(tide_engine_t *e, const tide_service_spec_t *s, tide_error_t *err)
{
    if (tide_service_spec_check(s, err) < 0)
        return -1;
    if (tide_engine_service_find(e, s->name) >= 0)
        return tide_errf(err, TIDE_EEXIST, "service %s: already defined", s->name);
    if (s->gpus_per_replica > e->max_dom_gpus)
        return tide_errf(err, TIDE_EINVAL,
                         "service %s: a replica of %d GPUs does not fit in one high-speed domain (%d GPUs)",
                         s->name, s->gpus_per_replica, e->max_dom_gpus);
    if (e->started)
        return tide_errf(err, TIDE_ESTATE, "service %s: services must be added before the first step",
                         s->name);
    tide_grow((void **)&e->svcs, &e->cap_svcs, (size_t)e->n_svcs + 1, sizeof *e->svcs);
    service_t *sv = &e->svcs[e->n_svcs];
    memset(sv, 0, sizeof *sv);
    sv->spec = *s;
    sv->spec.name = tide_xstrdup(s->name);
    sv->down_since = -1;
    sv->short_since = -1;
    sv->react_at = -1;
    sv->rh_rep = -1;
    sv->rh_at = -1;
    sv->slo_target = s->slo_target > 0 ? s->slo_target : e->cfg.slo_target;
    sv->cells = tide_xcalloc((size_t)TIDE_S_COUNT * TIDE_T_COUNT * (size_t)e->n_types, sizeof *sv->cells);
    tide__spread_alloc(e, sv);
    tide__fc_init(&sv->fc, e->cfg.forecast_bucket_s, e->cfg.forecast_days, e->cfg.tick_s,
                  e->cfg.margin_min);
    return e->n_svcs++;
}

int tide_engine_set_team(tide_engine_t *e, const tide_team_spec_t *ts, tide_error_t *err)
{
    if (!ts->name || !*ts->name)
        return tide_errf(err, TIDE_EINVAL, "team: name must not be empty");
    if (!(ts->weight > 0) || !isfinite(ts->weight))
        return tide_errf(err, TIDE_EINVAL, "team %s: weight must be > 0", ts->name);
    if (ts->borrow_limit < -1 || ts->lend_cap < -1)
        return tide_errf(err, TIDE_EINVAL, "team %s: borrow_limit and lend_cap must be >= 0 (or -1: unlimited)",
                         ts->name);
    for (int k = 0; k < TIDE_MAX_GPU_TYPES; k++)
        if (ts->quota[k] < -1)
            return tide_errf(err, TIDE_EINVAL, "team %s: quota must be >= 0", ts->name);
    int i = tide__team_intern(e, ts->name);
    team_t *t = &e->teams[i];
    tide__team_usage_update(e, t);
    t->weight = ts->weight;
    t->borrow_limit = ts->borrow_limit;
    t->lend_cap = ts->lend_cap;
    t->has_quota = 0;
    for (int k = 0; k < e->n_types; k++) {
        t->quota[k] = ts->quota[k];
        if (ts->quota[k] >= 0)
            t->has_quota = 1;
    }
    e->quotas_on = 0;
    for (int k = 0; k < e->n_teams; k++)
        e->quotas_on |= e->teams[k].has_quota;
    e->sched_dirty = 1;
    return i;
}

/* ------------------------------------------------------------ events */

static job_t *job_at(tide_engine_t *e, int32_t h, tide_error_t *err)
{
    if (h < 0 || (size_t)h >= e->n_jobs) {
        tide_errf(err, TIDE_ENOENT, "unknown job handle %d", h);
        return NULL;
    }
    return e->jobs[h];
}

static int ev_submit(tide_engine_t *e, const tide_event_t *ev, tide_error_t *err)
{
    if (!ev->job_spec)
        return tide_errf(err, TIDE_EINVAL, "submit without a job");
    tide_job_spec_t sp = *ev->job_spec;
    if (tide_job_spec_normalize(&sp, err) < 0)
        return tide_err_prefix(err, "job %s: ", sp.id ? sp.id : "?");
    if (tide_engine_job_find(e, sp.id) >= 0)
        return tide_errf(err, TIDE_EEXIST, "job %s: already submitted", sp.id);
    /* could the job ever be placed, on an empty cluster of its GPU types? */
    int g = sp.gang_gpus, cap = tide__capacity_empty(e, g, sp.gpu_types);
    if (cap < sp.dp_min)
        return tide_errf(err, TIDE_EINVAL,
                         "job %s: %d gang(s) of %d GPUs can never be placed on this cluster "
                         "(a gang must fit one high-speed domain of an accepted GPU type, or be "
                         "whole domains)",
                         sp.id, sp.dp_min, g);
    tide_grow((void **)&e->jobs, &e->cap_jobs, e->n_jobs + 1, sizeof *e->jobs);
    int32_t h = (int32_t)e->n_jobs++;
    job_t *j = e->jobs[h] = tide__job_new(e, (size_t)h);
    j->spec = sp;
    j->spec.id = tide_strpool_dup(&e->job_ids, sp.id);
    j->team = tide__team_intern(e, sp.team);
    j->spec.team = e->teams[j->team].name;
    j->cls = TIDE_C_P1 + (sp.priority - TIDE_P1);
    j->dp_max = sp.gpus / sp.gang_gpus;
    j->submitted = e->now;
    j->first_start = -1;
    j->finished = -1;
    j->notice_at = -1;
    j->grow_after = INT64_MIN;
    j->lease = -1;
    j->run_idx = -1;
    tide__power_job_reset(j);
    if (e->n_jobs * 2 > e->idx_cap)
        idx_rehash(e);
    else
        idx_put(e, h);
    tide__queue_insert(e, h);
    e->st.jobs_submitted++;
    e->teams[j->team].jobs++;
    e->teams[j->team].waiting++;
    e->teams[j->team].waiting_submit_sum += (double)j->submitted;
    tide__oracle_submit(e, &sp);
    return 0;
}

static int ev_cancel(tide_engine_t *e, const tide_event_t *ev, tide_error_t *err)
{
    job_t *j = job_at(e, ev->job, err);
    if (!j)
        return -1;
    if (j->state == TIDE_JOB_QUEUED) {
        tide__queue_remove(e, ev->job);
        j->state = TIDE_JOB_CANCELLED;
        j->finished = e->now;
        for (int d = 0; e->n_claimed[CLAIM_JOB] && d < e->n_doms; d++)
            if (e->doms[d].claim_kind == CLAIM_JOB && e->doms[d].claim_id == ev->job)
                tide__dom_unclaim(e, &e->doms[d]);
        tide__place_changed(e);
        e->sched_dirty = 1;
        return 0;
    }
    if (j->state == TIDE_JOB_RUNNING || j->state == TIDE_JOB_RECLAIMING) {
        tide__job_stop(e, ev->job, TIDE_R_CANCEL, 0);
        return 0;
    }
    return tide_errf(err, TIDE_ESTATE, "job %s: already %s", j->spec.id,
                     tide_job_state_name(j->state));
}

static int running_job(tide_engine_t *e, int32_t h, tide_error_t *err, job_t **out)
{
    job_t *j = job_at(e, h, err);
    if (!j)
        return -1;
    if (j->state != TIDE_JOB_RUNNING && j->state != TIDE_JOB_RECLAIMING)
        return tide_errf(err, TIDE_ESTATE, "job %s: not running", j->spec.id);
    *out = j;
    return 0;
}

static int ev_phase(tide_engine_t *e, const tide_event_t *ev, tide_error_t *err)
{
    job_t *j = NULL;
    if (running_job(e, ev->job, err, &j) < 0)
        return -1;
    if (ev->phase < 0 || ev->phase >= TIDE_PHASE_COUNT || !isfinite(ev->value) || ev->value < 0)
        return tide_errf(err, TIDE_EINVAL, "job %s: bad phase report (phase %d, progress %g)",
                         j->spec.id, ev->phase, ev->value);
    tide__acct_job_pause(e, j);
    j->progress = ev->value;
    j->progress_at = e->now;
    j->phase = ev->phase;
    tide__acct_job_resume(e, j);
    return 0;
}

static int claimed_by_service(const tide_engine_t *e, const job_t *j)
{
    for (int k = 0; k < j->alloc.n; k++)
        if (e->doms[e->gpu_dom[j->alloc.gpus[k]]].claim_kind == CLAIM_SERVICE ||
            e->doms[e->gpu_dom[j->alloc.gpus[k]]].claim_kind == CLAIM_RESERVE)
            return 1;
    return 0;
}

static int ev_commit(tide_engine_t *e, const tide_event_t *ev, tide_error_t *err)
{
    job_t *j = NULL;
    if (running_job(e, ev->job, err, &j) < 0)
        return -1;
    if (!isfinite(ev->value) || ev->value < 0)
        return tide_errf(err, TIDE_EINVAL, "job %s: bad checkpoint progress", j->spec.id);
    tide__acct_job_pause(e, j);
    double v = ev->value > (double)j->spec.duration_s ? (double)j->spec.duration_s : ev->value;
    if (v > j->committed) {
        /* what was trained up to v can no longer be lost: keep the share of
         * the training GPU-seconds that produced the work after v */
        double now_p = tide__job_progress_now(j, e->now);
        double keep = now_p > j->committed && now_p > v ? (now_p - v) / (now_p - j->committed) : 0;
        j->tr_c *= keep;
        j->tr_d *= keep;
        j->committed = v;
    }
    if (j->phase == TIDE_PHASE_CHECKPOINTING) {
        /* nothing progresses while a checkpoint is written */
        j->progress = j->progress > j->committed ? j->progress : j->committed;
        j->phase = TIDE_PHASE_TRAINING;
    } else if (j->phase == TIDE_PHASE_TRAINING) {
        j->progress = tide__job_progress_now(j, e->now);
    }
    j->progress_at = e->now;
    tide__acct_job_resume(e, j);
    if (j->state != TIDE_JOB_RECLAIMING)
        return 0;
    int32_t h = ev->job;
    tide__samples_add(&e->smp[TIDE_SAMPLE_CKPT], (double)(e->now - j->notice_at));
    int reason = j->reclaim_reason;
    if (reason == TIDE_R_RECLAIM && !claimed_by_service(e, j) && !j->held) {
        /* the need went away while it checkpointed: keep running */
        j->state = TIDE_JOB_RUNNING;
        j->stop_pending = 0;
        tide__lent_sync(e, j);
        tide__end_index_set(e, h, tide__job_expected_end(j, e->now));
        if (j->lease >= 0) {
            lease_t *l = &e->leases[j->lease];
            l->noticed = 0;
            tide__lease_note(e, h);
            l->term_start = e->now;
            l->latest_return = e->pol->lease_deadline(e, e->now);
            tide__deadline_push(e, l->latest_return, h);
            tide_action_t *a = tide__act_push(e, TIDE_ACT_LEASE_RENEW, TIDE_R_NONE);
            a->lease = j->lease;
            a->job = h;
            a->n_gpus = l->gpus;
            a->deadline = l->latest_return;
        }
        return 0;
    }
    tide__job_stop(e, h, reason, 1);
    return 0;
}

static int ev_replica(tide_engine_t *e, const tide_event_t *ev, tide_error_t *err)
{
    if (ev->replica < 0 || (size_t)ev->replica >= e->n_reps)
        return tide_errf(err, TIDE_ENOENT, "unknown replica %d", ev->replica);
    replica_t *r = &e->reps[ev->replica];
    if (r->rehearsal) {
        tide__rehearse_report(e, ev->replica, ev->kind == TIDE_EV_REPLICA_READY);
        return 0;
    }
    if (ev->kind == TIDE_EV_REPLICA_FAILED) {
        if (r->state != REP_STOPPED)
            tide__replica_stop(e, ev->replica, TIDE_R_FAILURE);
        e->infer_dirty = 1;
        return 0;
    }
    if (r->state != REP_WARMING)
        return 0; /* stopped meanwhile: a late report is harmless */
    service_t *s = &e->svcs[r->service];
    tide__acct_rep_set(e, r, 0);
    r->state = REP_READY;
    r->ready_at = e->now;
    tide__acct_rep_set(e, r, 1);
    if (!r->cut) {
        s->warming--;
        s->ready++;
    }
    /* a staged replica's warm-up counts its staging (the credit): samples
     * stay whole warm-ups, comparable with those of unstaged starts */
    double warm = (double)(e->now - r->started + r->credit);
    tide__samples_add(&s->warm, warm);
    tide__samples_add(&e->smp[TIDE_SAMPLE_WARMUP], warm);
    if (r->notice_at >= 0)
        tide__samples_add(&e->smp[TIDE_SAMPLE_RECLAIM_TO_READY], (double)(e->now - r->notice_at));
    return 0;
}

/* Replicas on node n leave (cut 1) or rejoin (cut 0) their service's
 * ready / warming counts: unreachable, they serve no one routed to them. */
static void node_replicas_cut(tide_engine_t *e, int n, int cut)
{
    const node_t *nd = &e->nodes[n];
    for (int g = nd->first_gpu; g < nd->first_gpu + nd->gpus; g++) {
        if (e->own_kind[g] != OWN_REPLICA)
            continue;
        replica_t *r = &e->reps[e->own_id[g]];
        if (r->cut == cut)
            continue; /* counted at another GPU of it */
        r->cut = cut;
        if (r->rehearsal)
            continue;
        service_t *s = &e->svcs[r->service];
        int d = cut ? -1 : 1;
        if (r->state == REP_READY)
            s->ready += d;
        else if (r->state == REP_WARMING)
            s->warming += d;
    }
}

/* Node n becomes unreachable (cut 1: a network partition) or reachable
 * again. Unreachable, it is not up for placement: its free GPUs leave the
 * counts, its replicas stop counting as capacity, but what runs there keeps
 * its GPUs (it may still run: nothing is placed twice) until the node is
 * fenced (NODE_FAILED) or a job's lease runs out (not renewed meanwhile). */
static void node_cut(tide_engine_t *e, int n, int cut)
{
    node_t *nd = &e->nodes[n];
    if (nd->cut == cut || (cut && !nd->up))
        return;
    domain_t *d = &e->doms[nd->domain];
    int nfree = 0, sign = cut ? -1 : 1;
    for (int g = nd->first_gpu; g < nd->first_gpu + nd->gpus; g++)
        nfree += e->own_kind[g] == OWN_FREE;
    nd->cut = cut;
    nd->up = !cut;
    e->n_cut -= sign;
    d->up_gpus += sign * nd->gpus;
    d->free += sign * nfree;
    e->zone_gpus[d->zone] += sign * nd->gpus;
    e->zone_free[d->zone] += sign * nfree;
    d->cut_held -= sign * (nd->gpus - nfree);
    e->zone_cut[d->zone] -= sign * (nd->gpus - nfree);
    tide__dom_free_mark(e, nd->domain);
    node_replicas_cut(e, n, cut);
    if (!cut)
        tide__foreign_set(e, n, nd->foreign_want);
    e->reserve_dirty = 1;
    e->sched_dirty = e->infer_dirty = 1;
}

static void node_set(tide_engine_t *e, int n, int up)
{
    node_t *nd = &e->nodes[n];
    if (nd->cut)
        node_cut(e, n, 0); /* fenced or back: reachable again first */
    if (nd->up == up)
        return;
    domain_t *d = &e->doms[nd->domain];
    if (!up) {
        /* everything on the node dies first */
        for (int g = nd->first_gpu; g < nd->first_gpu + nd->gpus; g++) {
            if (e->own_kind[g] == OWN_JOB)
                tide__job_stop(e, e->own_id[g], TIDE_R_FAILURE, 1);
            else if (e->own_kind[g] == OWN_REPLICA)
                tide__replica_stop(e, e->own_id[g], TIDE_R_FAILURE);
        }
        tide__foreign_drop(e, n); /* marked again when the node is back */
        nd->up = 0;
        tide__dom_unclaim(e, d); /* what was being emptied there is gone */
        tide__place_changed(e);
        d->up_gpus -= nd->gpus;
        d->free -= nd->gpus;
        e->zone_gpus[d->zone] -= nd->gpus;
        e->zone_free[d->zone] -= nd->gpus;
        tide__dom_free_mark(e, nd->domain);
    } else {
        nd->up = 1;
        d->up_gpus += nd->gpus;
        d->free += nd->gpus;
        e->zone_gpus[d->zone] += nd->gpus;
        e->zone_free[d->zone] += nd->gpus;
        tide__dom_free_mark(e, nd->domain);
        tide__foreign_set(e, n, nd->foreign_want);
    }
    e->reserve_dirty = 1;
    e->sched_dirty = e->infer_dirty = 1;
}

/* A failure or expiry may carry the progress the job had reached when it
 * ended (value > 0): more exact than the engine's extrapolation when the
 * report comes late (e.g. after tide was down). */
static void report_progress(tide_engine_t *e, job_t *j, const tide_event_t *ev)
{
    if (!(ev->value > 0) || !isfinite(ev->value))
        return;
    tide__acct_job_pause(e, j);
    j->progress = ev->value > (double)j->spec.duration_s ? (double)j->spec.duration_s : ev->value;
    if (j->progress < j->committed)
        j->progress = j->committed;
    j->progress_at = e->now;
    tide__acct_job_resume(e, j);
}

static int ev_foreign(tide_engine_t *e, const tide_event_t *ev, tide_error_t *err)
{
    if (ev->node < 0 || ev->node >= e->n_nodes)
        return tide_errf(err, TIDE_ENOENT, "unknown node %d", ev->node);
    node_t *nd = &e->nodes[ev->node];
    if (!isfinite(ev->value) || ev->value < 0 || ev->value > nd->gpus ||
        ev->value != floor(ev->value))
        return tide_errf(err, TIDE_EINVAL, "node %d: foreign GPUs must be a whole number 0..%d",
                         ev->node, nd->gpus);
    int want = (int)ev->value;
    if (want == nd->foreign_want)
        return 0;
    tide__foreign_set(e, ev->node, want);
    e->sched_dirty = e->infer_dirty = e->reserve_dirty = 1;
    return 0;
}

/* A rollout's surge (service) or retirement (replica). */
static int ev_rollout(tide_engine_t *e, const tide_event_t *ev, tide_error_t *err)
{
    if (ev->kind == TIDE_EV_SURGE) {
        if (ev->service < 0 || ev->service >= e->n_svcs)
            return tide_errf(err, TIDE_ENOENT, "unknown service %d", ev->service);
        if (!isfinite(ev->value) || ev->value < 0 || ev->value > 4096 ||
            ev->value != floor(ev->value))
            return tide_errf(err, TIDE_EINVAL, "service %s: surge must be a whole number 0..4096",
                             e->svcs[ev->service].spec.name);
        e->svcs[ev->service].surge = (int)ev->value;
        e->infer_dirty = 1;
        return 0;
    }
    if (ev->replica < 0 || (size_t)ev->replica >= e->n_reps)
        return tide_errf(err, TIDE_ENOENT, "unknown replica %d", ev->replica);
    tide__replica_stop(e, ev->replica, TIDE_R_SCALE); /* a stopped one: no-op */
    e->infer_dirty = 1;
    return 0;
}

static int apply(tide_engine_t *e, const tide_event_t *ev, tide_error_t *err)
{
    job_t *j = NULL;
    switch (ev->kind) {
    case TIDE_EV_TICK:
        return 0;
    case TIDE_EV_JOB_SUBMIT:
        return ev_submit(e, ev, err);
    case TIDE_EV_JOB_CANCEL:
        return ev_cancel(e, ev, err);
    case TIDE_EV_DEMAND:
        if (ev->service < 0 || ev->service >= e->n_svcs)
            return tide_errf(err, TIDE_ENOENT, "unknown service %d", ev->service);
        if (!isfinite(ev->value) || ev->value < 0)
            return tide_errf(err, TIDE_EINVAL, "service %s: demand must be >= 0",
                             e->svcs[ev->service].spec.name);
        e->svcs[ev->service].demand = ev->value;
        tide__fc_observe(&e->svcs[ev->service].fc, e->now, ev->value);
        e->infer_dirty = 1;
        return 0;
    case TIDE_EV_REPLICA_READY:
    case TIDE_EV_REPLICA_FAILED:
        return ev_replica(e, ev, err);
    case TIDE_EV_JOB_PHASE:
        return ev_phase(e, ev, err);
    case TIDE_EV_CKPT_COMMITTED:
        return ev_commit(e, ev, err);
    case TIDE_EV_JOB_FINISHED:
        if (running_job(e, ev->job, err, &j) < 0)
            return -1;
        tide__job_stop(e, ev->job, TIDE_R_COMPLETE, 0);
        return 0;
    case TIDE_EV_RANK_FAILED:
        if (running_job(e, ev->job, err, &j) < 0)
            return -1;
        report_progress(e, j, ev);
        if (!tide__job_rank_lost(e, ev->job, ev->node))
            tide__job_stop(e, ev->job, TIDE_R_FAILURE, 1);
        return 0;
    case TIDE_EV_JOB_EXPIRED:
        if (running_job(e, ev->job, err, &j) < 0)
            return -1;
        report_progress(e, j, ev);
        tide__job_stop(e, ev->job, TIDE_R_DEADLINE, 1); /* counts the expiry */
        return 0;
    case TIDE_EV_NODE_FAILED:
    case TIDE_EV_NODE_RECOVERED:
        if (ev->node < 0 || ev->node >= e->n_nodes)
            return tide_errf(err, TIDE_ENOENT, "unknown node %d", ev->node);
        if (ev->kind == TIDE_EV_NODE_FAILED && ev->value == 1)
            node_cut(e, ev->node, 1);
        else
            node_set(e, ev->node, ev->kind == TIDE_EV_NODE_RECOVERED);
        return 0;
    case TIDE_EV_FOREIGN:
        return ev_foreign(e, ev, err);
    case TIDE_EV_REHEARSE:
        if (ev->service < 0 || ev->service >= e->n_svcs)
            return tide_errf(err, TIDE_ENOENT, "unknown service %d", ev->service);
        if (e->svcs[ev->service].rh_rep < 0)
            e->svcs[ev->service].rh_want = 1;
        e->infer_dirty = 1;
        return 0;
    case TIDE_EV_SURGE:
    case TIDE_EV_REPLICA_RETIRE:
        return ev_rollout(e, ev, err);
    default:
        return tide_errf(err, TIDE_EINVAL, "unknown event kind %d", ev->kind);
    }
}

/* ------------------------------------------------------------ step */

static int first_step(tide_engine_t *e, tide_time_t now, tide_error_t *err)
{
    if (e->pol->layout(e, err) < 0)
        return -1;
    memset(e->zone_gpus, 0, sizeof e->zone_gpus);
    memset(e->zone_free, 0, sizeof e->zone_free);
    for (int d = 0; d < e->n_doms; d++) {
        e->zone_gpus[e->doms[d].zone] += e->doms[d].up_gpus;
        e->zone_free[e->doms[d].zone] += e->doms[d].free;
        e->zone_total[e->doms[d].zone] += e->doms[d].gpus;
    }
    tide__reserve_init(e);
    e->start = e->now = now;
    e->st.start = now;
    e->started = 1;
    e->next_tick = now;
    e->infer_dirty = e->sched_dirty = 1;
    return 0;
}

int tide_engine_step(tide_engine_t *e, tide_time_t now, const tide_event_t *events, size_t n_events,
                     tide_actions_t *out, tide_error_t *err)
{
    out->n = 0;
    out->ngpus = 0;
    out->next_wake = TIDE_TIME_NEVER;
    if (!e->started) {
        if (first_step(e, now, err) < 0)
            return -1;
    } else if (now < e->now) {
        return tide_errf(err, TIDE_EINVAL, "time went backwards (%lld < %lld)", (long long)now,
                         (long long)e->now);
    }
    tide__power_advance(e, now);
    tide__acct_advance(e, now);
    e->now = now;
    e->st.now = now;
    e->out = out;
    int rc = 0;
    /* the first failing event's error, into `first`; the later ones' into
     * `rest` (dropped). Only code and message start are cleared per event:
     * zeroing the whole message buffer per event cost more than applying
     * most events. */
    tide_error_t first, rest;
    first.code = 0;
    first.msg[0] = '\0';
    for (size_t i = 0; i < n_events; i++) {
        tide_error_t *ev_err = rc == 0 ? &first : &rest;
        ev_err->code = 0;
        ev_err->msg[0] = '\0';
        if (apply(e, &events[i], ev_err) < 0 && rc == 0)
            rc = -1;
    }
    if (e->hold_dirty)
        tide__job_hold_pass(e);
    if (now >= e->next_tick) {
        tide__infer_observe(e, now);
        for (int s = 0; s < e->n_svcs; s++) {
            service_t *sv = &e->svcs[s];
            tide_time_t lead = tide__decision_window(e, s);
            tide__fc_learn(&sv->fc, now, lead, sv->slo_target, tide__capacity_due(e, s, now), &e->cfg);
            if (tide__ensemble_on(e)) {
                tide_ens_win_t w;
                tide__ens_window(e, s, lead, &w);
                tide__ens_learn(&sv->fc, now, &w, tide__fc_aim(&sv->fc, sv->slo_target, &e->cfg));
            }
        }
        tide__lease_plan(e, now);
        tide__lease_tick(e, now);
        if (e->pol->tick)
            e->pol->tick(e, now);
        e->infer_dirty = 1;
        if (e->pol->wake)
            e->sched_dirty = 1;
        e->next_tick = now - now % e->cfg.tick_s + e->cfg.tick_s;
    } else if (now >= e->next_deadline) {
        tide__lease_tick(e, now);
    }
    if (now >= e->grow_at) {
        e->grow_at = TIDE_TIME_NEVER; /* a job that lost a rank may grow back */
        e->sched_dirty = 1;
    }
    if (e->reserve_dirty)
        tide__reserve_update(e, now);
    if (e->infer_dirty) {
        e->infer_dirty = 0;
        tide__infer_pass(e, now);
        tide__rehearse_pass(e, now);
    }
    for (int k = 0; k < 4 && e->sched_dirty; k++) {
        e->sched_dirty = 0;
        tide__sched_pass(e, now);
    }
    tide__power_pass(e);
    tide_time_t wake = e->next_tick;
    if (e->next_deadline < wake)
        wake = e->next_deadline;
    if (e->grow_at < wake)
        wake = e->grow_at;
    if (e->pol->wake) {
        tide_time_t w = e->pol->wake(e, now);
        if (w < wake)
            wake = w;
    }
    out->next_wake = wake > now ? wake : now + 1;
    e->out = NULL;
    if (e->cfg.check_invariants) {
        tide_error_t ce;
        if (tide_engine_check(e, &ce) < 0) {
            if (err)
                *err = ce;
            return -1;
        }
    }
    if (rc < 0 && err)
        *err = first;
    return rc;
}

/* ------------------------------------------------------------ invariants */

static int dom_index(const tide_engine_t *e, int g)
{
    return g >= 0 && g < e->n_gpus ? e->gpu_dom[g] : -1;
}

static int check_gang(const tide_engine_t *e, const int32_t *gpus, int g, tide_error_t *err,
                      const char *who)
{
    int d0 = dom_index(e, gpus[0]);
    if (g <= e->doms[d0].gpus) {
        for (int x = 1; x < g; x++)
            if (dom_index(e, gpus[x]) != d0)
                return tide_errf(err, TIDE_ESTATE, "%s: gang split across domains", who);
        return 0;
    }
    /* whole domains of one size, each taken completely, one after another */
    int n = 0;
    for (int x = 0; x < g; x++)
        if (x == 0 || dom_index(e, gpus[x]) != dom_index(e, gpus[x - 1]))
            n++;
    if (n * e->doms[d0].gpus != g)
        return tide_errf(err, TIDE_ESTATE, "%s: large gang not on whole domains", who);
    return 0;
}

/* Foreign marks (TIDE_EV_FOREIGN): on their own node, as many as counted,
 * never more than reported, none on a down node, and no free GPU while
 * some are still owed. Marks them seen and adds them to *allocated. */
static int check_foreign(const tide_engine_t *e, uint8_t *seen, int *allocated, tide_error_t *err)
{
    for (int n = 0; n < e->n_nodes; n++) {
        const node_t *nd = &e->nodes[n];
        int held = 0, free_up = 0;
        for (int g = nd->first_gpu; g < nd->first_gpu + nd->gpus; g++) {
            if (e->own_kind[g] != OWN_FOREIGN)
                free_up += e->own_kind[g] == OWN_FREE;
            else if (e->own_id[g] != n || seen[g]++)
                return tide_errf(err, TIDE_ESTATE, "GPU %d: foreign mark of another node", g);
            else
                held++;
        }
        if (held != nd->foreign || held > nd->foreign_want || (!nd->up && !nd->cut && held))
            return tide_errf(err, TIDE_ESTATE,
                             "node %d: %d GPUs marked foreign, count %d, reported %d%s", n, held,
                             nd->foreign, nd->foreign_want, nd->up ? "" : " (down)");
        if (nd->up && held < nd->foreign_want && free_up)
            return tide_errf(err, TIDE_ESTATE, "node %d: %d free GPUs while foreign jobs wait for %d",
                             n, free_up, nd->foreign_want - held);
        *allocated += held;
    }
    return 0;
}

/* Every queued job is QUEUED and the queue's GPU counter adds up. */
static int check_queue(const tide_engine_t *e, tide_error_t *err)
{
    int qg = 0;
    for (int p = 0; p < TIDE_NPRIO; p++)
        for (size_t i = 0; i < e->qn[p]; i++) {
            const job_t *j = e->jobs[e->q[p][i]];
            if (j->state != TIDE_JOB_QUEUED)
                return tide_errf(err, TIDE_ESTATE, "job %s in the queue while %s", j->spec.id,
                                 tide_job_state_name(j->state));
            qg += j->spec.gpus;
        }
    if (qg != e->queue_gpus)
        return tide_errf(err, TIDE_ESTATE, "queue holds %d GPUs of demand, counter says %d", qg,
                         e->queue_gpus);
    return 0;
}

/* Each zone's free count is the sum of its domains' (placement bounds its
 * scores by the zones with free GPUs). */
static int check_zone_free(const tide_engine_t *e, tide_error_t *err)
{
    int sum[Z_COUNT] = {0};
    for (int d = 0; d < e->n_doms; d++)
        sum[e->doms[d].zone] += e->doms[d].free;
    for (int z = 0; z < Z_COUNT; z++)
        if (e->started && sum[z] != e->zone_free[z])
            return tide_errf(err, TIDE_ESTATE, "zone %d: free count %d, its domains %d", z,
                             e->zone_free[z], sum[z]);
    return 0;
}

/* The derived indexes against a scan: zone free counts, elastic run slots,
 * the renewal list and order, the deadline heap. */
static int team_cells_check(const tide_engine_t *e); /* below, by its accessor */

static int check_indexes(const tide_engine_t *e, tide_error_t *err)
{
    if (check_zone_free(e, err))
        return -1;
    if (tide__end_index_check(e) != -1)
        return tide_errf(err, TIDE_ESTATE, "the end index is not the running jobs sorted by expected end");
    long slot = tide__grow_slots_check(e);
    if (slot >= 0)
        return tide_errf(err, TIDE_ESTATE, "running slot %ld: the elastic-slot index disagrees", slot);
    int32_t unseen = tide__renew_check(e);
    if (unseen >= 0)
        return tide_errf(err, TIDE_ESTATE, "job %s: a lease the renewal pass would miss or misorder",
                         e->jobs[unseen]->spec.id);
    int32_t lost = tide__deadline_check(e);
    if (lost >= 0)
        return tide_errf(err, TIDE_ESTATE, "job %s: a deadline missing from the deadline heap",
                         e->jobs[lost]->spec.id);
    int bad_svc = tide__svc_index_check(e);
    if (bad_svc != -1)
        return tide_errf(err, TIDE_ESTATE, "service index %d: claims or warming replicas disagree with a scan",
                         bad_svc);
    int32_t stale = tide__queue_keys_check(e);
    if (stale >= 0)
        return tide_errf(err, TIDE_ESTATE, "job %s: its queue key disagrees with the job",
                         e->jobs[stale]->spec.id);
    stale = tide__job_doms_check(e);
    if (stale >= 0)
        return tide_errf(err, TIDE_ESTATE, "job %s: its reservation domain entry disagrees with its GPUs",
                         e->jobs[stale]->spec.id);
    /* The forecast memos against their recomputation, every 12th forecast
     * bucket boundary (an hour at the default 300 s buckets): it recomputes
     * every memoised shape within a day, far more than a step costs (checked
     * at every step it tripled the property tests' time), and the memos live
     * across steps, so a wrong one is still found at a later boundary;
     * test_engine_fcmemo checks them at every use. */
    tide_time_t fc_every = 12 * e->cfg.forecast_bucket_s;
    int fc_due = fc_every <= 0 || e->now % fc_every == 0;
    for (int s = 0; fc_due && s < e->n_svcs; s++)
        if (tide__fc_memo_bad(&e->svcs[s].fc))
            return tide_errf(err, TIDE_ESTATE, "service %d: a memoised forecast differs from its recomputation", s);
    if (e->memo_bad)
        return tide_errf(err, TIDE_ESTATE, "a memoised result differs from its recomputation");
    if (tide__acct_cnt_bad(e))
        return tide_errf(err, TIDE_ESTATE, "the non-zero GPU counter cells disagree with the counters");
    int bad_live = tide__live_check(e);
    if (bad_live >= 0)
        return tide_errf(err, TIDE_ESTATE, "service %d: the list of its live replicas disagrees with a scan",
                         bad_live);
    int zt = team_cells_check(e);
    if (zt >= 0)
        return tide_errf(err, TIDE_ESTATE, "team %s: GPU-seconds in a cell no job is accounted in",
                         e->teams[zt].name);
    if (tide__lease_need_pmax_bad(e))
        return tide_errf(err, TIDE_ESTATE, "the need curve's running maxima disagree with the curve");
    if (e->lent_run != tide__lent_scan(e))
        return tide_errf(err, TIDE_ESTATE, "lent GPUs of running jobs: %d counted, %d by a scan",
                         e->lent_run, tide__lent_scan(e));
    return 0;
}

int tide_engine_check(const tide_engine_t *e, tide_error_t *err)
{
    uint8_t *seen = tide_xcalloc((size_t)e->n_gpus, 1);
    int rc = 0, allocated = 0;
    char who[300];
    for (size_t h = 0; h < e->n_jobs && !rc; h++) {
        const job_t *j = e->jobs[h];
        snprintf(who, sizeof who, "job %s", j->spec.id);
        int active = j->state == TIDE_JOB_RUNNING || j->state == TIDE_JOB_RECLAIMING;
        if (!active && j->alloc.n) {
            rc = tide_errf(err, TIDE_ESTATE, "%s: holds %d GPUs while %s", who, j->alloc.n,
                           tide_job_state_name(j->state));
            break;
        }
        if (!active)
            continue;
        if (j->width < 1 || j->width > j->dp_max || j->alloc.n != j->width * j->spec.gang_gpus) {
            rc = tide_errf(err, TIDE_ESTATE, "%s: holds %d GPUs at width %d (gang %d): partial gang",
                           who, j->alloc.n, j->width, j->spec.gang_gpus);
            break;
        }
        if (j->width < j->spec.dp_min) {
            rc = tide_errf(err, TIDE_ESTATE, "%s: width %d below dp_min %d", who, j->width,
                           j->spec.dp_min);
            break;
        }
        for (int k = 0; k < j->alloc.n && !rc; k++) {
            int g = j->alloc.gpus[k];
            if (seen[g]++)
                rc = tide_errf(err, TIDE_ESTATE, "GPU %d allocated twice (%s)", g, who);
            else if (e->own_kind[g] != OWN_JOB || e->own_id[g] != (int32_t)h)
                rc = tide_errf(err, TIDE_ESTATE, "GPU %d owner table disagrees with %s", g, who);
            else if (e->doms[dom_index(e, g)].zone == Z_RESERVE)
                rc = tide_errf(err, TIDE_ESTATE, "Tier A GPU %d lent to %s", g, who);
        }
        for (int k = 0; k < j->width && !rc; k++)
            rc = check_gang(e, &j->alloc.gpus[k * j->spec.gang_gpus], j->spec.gang_gpus, err, who);
        allocated += j->alloc.n;
    }
    for (size_t r = 0; r < e->n_reps && !rc; r++) {
        const replica_t *rp = &e->reps[r];
        if (rp->state == REP_STOPPED)
            continue;
        snprintf(who, sizeof who, "replica %zu", r);
        if (rp->alloc.n != e->svcs[rp->service].spec.gpus_per_replica) {
            rc = tide_errf(err, TIDE_ESTATE, "%s: holds %d GPUs, needs %d", who, rp->alloc.n,
                           e->svcs[rp->service].spec.gpus_per_replica);
            break;
        }
        for (int k = 0; k < rp->alloc.n && !rc; k++) {
            int g = rp->alloc.gpus[k];
            if (seen[g]++)
                rc = tide_errf(err, TIDE_ESTATE, "GPU %d allocated twice (%s)", g, who);
            else if (e->own_kind[g] != OWN_REPLICA || e->own_id[g] != (int32_t)r)
                rc = tide_errf(err, TIDE_ESTATE, "GPU %d owner table disagrees with %s", g, who);
        }
        if (!rc)
            rc = check_gang(e, rp->alloc.gpus, rp->alloc.n, err, who);
        allocated += rp->alloc.n;
    }
    if (!rc)
        rc = check_foreign(e, seen, &allocated, err);
    for (int d = 0; d < e->n_doms && !rc; d++) {
        const domain_t *dm = &e->doms[d];
        int free_up = 0;
        for (int n = dm->first_node; n < dm->first_node + dm->n_nodes; n++)
            for (int g = e->nodes[n].first_gpu; g < e->nodes[n].first_gpu + e->nodes[n].gpus; g++) {
                if (e->own_kind[g] != OWN_FREE && !seen[g])
                    rc = tide_errf(err, TIDE_ESTATE, "GPU %d has an owner that does not hold it", g);
                if (e->own_kind[g] == OWN_FREE && e->nodes[n].up)
                    free_up++;
            }
        if (!rc && free_up != dm->free)
            rc = tide_errf(err, TIDE_ESTATE, "domain %d: free count %d, actual %d", d, dm->free,
                           free_up);
        if (!rc && (dm->free_slot != TIDE_MAX(dm->free, 0) ||
                    (dm->free > 0 && tide__dom_next_free(e, dm->free, d) != d)))
            rc = tide_errf(err, TIDE_ESTATE, "domain %d: free index disagrees with %d free", d,
                           dm->free);
    }
    if (!rc)
        rc = check_indexes(e, err);
    free(seen);
    if (rc)
        return rc;
    int counted = 0;
    for (int c = 0; c < TIDE_C_COUNT; c++)
        for (int s = 0; s < TIDE_S_COUNT; s++)
            for (int t = 0; t < TIDE_T_COUNT; t++) {
                if (e->cnt[c][s][t] < 0)
                    return tide_errf(err, TIDE_ESTATE, "negative GPU count for %s/%s/%s",
                                     tide_class_name(c), tide_state_name(s), tide_tier_name(t));
                counted += e->cnt[c][s][t];
            }
    if (counted != allocated)
        return tide_errf(err, TIDE_ESTATE, "accounting counts %d GPUs, %d are allocated", counted,
                         allocated);
    if (e->cnt[TIDE_C_P1][TIDE_S_TRAINING][TIDE_T_A] || e->cnt[TIDE_C_P2][TIDE_S_TRAINING][TIDE_T_A] ||
        e->cnt[TIDE_C_P3][TIDE_S_TRAINING][TIDE_T_A])
        return tide_errf(err, TIDE_ESTATE, "training counted on Tier A");
    double sum = 0;
    for (int c = 0; c < TIDE_C_COUNT; c++)
        for (int s = 0; s < TIDE_S_COUNT; s++)
            for (int t = 0; t < TIDE_T_COUNT; t++)
                sum += e->st.gpu_s[c][s][t];
    double want = (double)e->n_gpus * (double)(e->now - e->start);
    if (fabs(sum - want) > 1e-6 * (want + 1) + 1e-3)
        return tide_errf(err, TIDE_ESTATE, "GPU-seconds do not add up: %.3f counted, %.3f elapsed",
                         sum, want);
    if (check_queue(e, err) < 0 || tide__power_check(e, err) < 0)
        return -1;
    return tide__spread_check(e, err);
}

/* ------------------------------------------------------------ inspection */

const tide_cluster_t *tide_engine_cluster(const tide_engine_t *e) { return e->cluster; }

int tide_engine_jobs(const tide_engine_t *e) { return (int)e->n_jobs; }

int tide_engine_job(const tide_engine_t *e, int32_t h, tide_job_info_t *out)
{
    if (h < 0 || (size_t)h >= e->n_jobs)
        return -1;
    const job_t *j = e->jobs[h];
    out->spec = &j->spec;
    out->state = j->state;
    out->phase = j->phase;
    out->width = j->width;
    out->dp_max = j->dp_max;
    out->progress = tide__job_progress_now(j, e->now);
    out->committed = j->committed;
    out->submitted = j->submitted;
    out->first_start = j->first_start;
    out->finished = j->finished;
    out->preemptions = j->preemptions;
    out->lost_gpu_s = j->lost_gpu_s;
    out->lease = j->lease;
    out->cap_w = j->cap_w;
    out->speed = j->speed;
    out->held = j->held;
    tide__power_job_live(e, j, out);
    return 0;
}

int tide_engine_services(const tide_engine_t *e) { return e->n_svcs; }

const tide_service_spec_t *tide_engine_service(const tide_engine_t *e, int s)
{
    return s >= 0 && s < e->n_svcs ? &e->svcs[s].spec : NULL;
}

int tide_engine_service_target(const tide_engine_t *e, int s, int *surge)
{
    if (s < 0 || s >= e->n_svcs)
        return -1;
    if (surge)
        *surge = e->svcs[s].surge;
    return e->svcs[s].target;
}

int tide_engine_service_ready(const tide_engine_t *e, int s, double *demand)
{
    if (s < 0 || s >= e->n_svcs)
        return -1;
    if (demand)
        *demand = e->svcs[s].demand;
    return e->svcs[s].ready;
}

int tide_engine_service_find(const tide_engine_t *e, const char *name)
{
    for (int s = 0; s < e->n_svcs; s++)
        if (name && !strcmp(e->svcs[s].spec.name, name))
            return s;
    return -1;
}

int tide_engine_leases(const tide_engine_t *e) { return (int)e->n_leases; }

int tide_engine_lease(const tide_engine_t *e, int32_t id, tide_lease_info_t *out)
{
    if (id < 0 || (size_t)id >= e->n_leases)
        return -1;
    const lease_t *l = &e->leases[id];
    out->job = l->job;
    out->gpus = l->gpus;
    out->start = l->start;
    out->latest_return = l->latest_return;
    out->ckpt_cost_s = l->ckpt_cost;
    out->can_shrink = l->can_shrink;
    out->noticed = l->noticed;
    out->returned = l->returned;
    out->late = l->late;
    return 0;
}

int tide_engine_replicas(const tide_engine_t *e) { return (int)e->n_reps; }

int tide_engine_replica(const tide_engine_t *e, int32_t r, tide_replica_info_t *out)
{
    if (r < 0 || (size_t)r >= e->n_reps)
        return -1;
    const replica_t *rp = &e->reps[r];
    out->service = rp->service;
    out->ready = rp->state == REP_READY;
    out->stopped = rp->state == REP_STOPPED;
    out->gpus = rp->alloc.n;
    out->tier = rp->tier;
    return 0;
}

int tide_engine_gpu_owner(const tide_engine_t *e, int gpu, int32_t *owner)
{
    if (gpu < 0 || gpu >= e->n_gpus) {
        *owner = -1;
        return 0;
    }
    *owner = e->own_id[gpu];
    return e->own_kind[gpu];
}

int tide_engine_node_foreign(const tide_engine_t *e, int node, int *want)
{
    if (node < 0 || node >= e->n_nodes) {
        if (want)
            *want = 0;
        return -1;
    }
    if (want)
        *want = e->nodes[node].foreign_want;
    return e->nodes[node].foreign;
}

char tide_engine_gpu_zone(const tide_engine_t *e, int gpu)
{
    static const char z[Z_COUNT] = {[Z_RESERVE] = 'A', [Z_INF] = 'I', [Z_TRAIN] = 'T', [Z_SHARED] = 'S'};
    int d = dom_index(e, gpu);
    return d < 0 ? '?' : z[e->doms[d].zone];
}

int tide_engine_forecast(const tide_engine_t *e, int s, tide_time_t horizon, tide_forecast_info_t *out)
{
    if (s < 0 || s >= e->n_svcs)
        return -1;
    service_t *sv = &((tide_engine_t *)e)->svcs[s];
    out->margin = sv->fc.margin;
    out->peak = tide__fc_peak(&sv->fc, e->now, e->now, e->now + horizon);
    out->peak_with_margin = out->peak * (1 + sv->fc.margin);
    out->last_observed = sv->demand;
    out->samples = sv->fc.samples;
    /* the lead caches quantiles of measured samples: not a visible change */
    out->lead_s = tide__decision_window((tide_engine_t *)e, s);
    out->late_s = sv->late_extra;
    out->rule = tide__ens_rule_name(tide__ensemble_on(e) ? sv->fc.ens_pick : 0);
    return 0;
}

int tide_engine_rehearsal(const tide_engine_t *e, int s, tide_rehearsal_info_t *out)
{
    if (s < 0 || s >= e->n_svcs)
        return -1;
    const service_t *sv = &e->svcs[s];
    memset(out, 0, sizeof *out);
    out->done = sv->rh_done;
    out->slow = sv->rh_slow;
    out->failed = sv->rh_failed;
    out->running = sv->rh_rep >= 0 ? 1 : sv->rh_want ? 2 : 0;
    out->last_warmup_s = sv->rh_last;
    out->allowed_s = sv->rh_allowed;
    out->last_at = sv->rh_at;
    for (int t = 0; t < TIDE_T_COUNT; t++)
        for (int k = 0; k < e->n_types; k++)
            out->gpu_s += tide_engine_service_gpu_s(e, s, TIDE_S_REHEARSING, t, k);
    return 0;
}

int tide_engine_demand_history(tide_engine_t *e, int s, tide_time_t t, double rps, tide_error_t *err)
{
    if (s < 0 || s >= e->n_svcs)
        return tide_errf(err, TIDE_ENOENT, "unknown service %d", s);
    service_t *sv = &e->svcs[s];
    if (!isfinite(rps) || rps < 0)
        return tide_errf(err, TIDE_EINVAL, "service %s: history demand must be >= 0", sv->spec.name);
    if (sv->fc.have && t < sv->fc.last_t)
        return tide_errf(err, TIDE_EINVAL, "service %s: history point at %lld comes before %lld",
                         sv->spec.name, (long long)t, (long long)sv->fc.last_t);
    if (e->started && t > e->now)
        return tide_errf(err, TIDE_EINVAL, "service %s: history point at %lld is in the future (now %lld)",
                         sv->spec.name, (long long)t, (long long)e->now);
    tide__fc_observe(&sv->fc, t, rps);
    return 0;
}

void tide_engine_stats(const tide_engine_t *e, tide_stats_t *out)
{
    *out = e->st;
    out->start = e->start;
    out->now = e->now;
    out->cluster_gpus = e->n_gpus;
    memset(out->gpus_now, 0, sizeof out->gpus_now);
    for (int c = 0; c < TIDE_C_COUNT; c++)
        for (int s = 0; s < TIDE_S_COUNT; s++)
            for (int t = 0; t < TIDE_T_COUNT; t++)
                out->gpus_now[c][s] += e->cnt[c][s][t];
    int idle = e->n_gpus;
    for (int c = 0; c < TIDE_C_COUNT; c++)
        for (int s = 0; s < TIDE_S_COUNT; s++)
            idle -= out->gpus_now[c][s];
    out->gpus_now[TIDE_C_NONE][TIDE_S_IDLE] = idle;
    out->tier_a_target_gpus = e->reserve_target;
    out->tier_a_short_gpus = e->reserve_short;
    out->queue_jobs = 0;
    for (int p = 0; p < TIDE_NPRIO; p++)
        out->queue_jobs += (int)e->qn[p];
    out->jobs_queued = out->queue_jobs;
    out->queue_gpus = e->queue_gpus;
    out->demand_rps = out->ready_rps = 0;
    out->replicas_ready = out->replicas_warming = 0;
    for (int s = 0; s < e->n_svcs; s++) {
        out->demand_rps += e->svcs[s].demand;
        out->ready_rps += e->svcs[s].ready * e->svcs[s].spec.replica_rps;
        out->replicas_ready += e->svcs[s].ready;
        out->replicas_warming += e->svcs[s].warming;
    }
}

int tide_engine_teams(const tide_engine_t *e) { return e->n_teams; }

int tide_engine_team(const tide_engine_t *e, int t, tide_team_stats_t *out)
{
    if (t < 0 || t >= e->n_teams)
        return -1;
    const team_t *tm = &e->teams[t];
    out->team = tm->name;
    out->gpu_s = tide__team_gpu_s(e, tm);
    out->lost_gpu_s = tm->lost_gpu_s;
    out->preemptions = tm->preemptions;
    out->jobs = tm->jobs;
    out->queue_s_sum = tm->queue_started_s + (double)tm->waiting * (double)e->now - tm->waiting_submit_sum;
    return 0;
}

int tide_engine_team_info(const tide_engine_t *e, int ti, tide_team_info_t *out)
{
    if (ti < 0 || ti >= e->n_teams)
        return -1;
    const team_t *t = &e->teams[ti];
    memset(out, 0, sizeof *out);
    out->team = t->name;
    out->weight = t->weight;
    out->usage = tide__team_usage(e, t, e->now);
    out->quota_gpus = t->has_quota ? 0 : -1;
    for (int k = 0; k < e->n_types; k++) {
        int q = t->quota[k] > 0 ? t->quota[k] : 0;
        if (t->has_quota)
            out->quota_gpus += q;
        out->used_gpus += t->used[k];
        if (t->has_quota && t->used[k] > q)
            out->borrowed_gpus += t->used[k] - q;
    }
    out->borrow_limit = t->borrow_limit;
    out->lend_cap = t->lend_cap;
    return 0;
}

double tide_engine_team_gpu_s(const tide_engine_t *e, int ti, int cls, int state, int tier, int type)
{
    if (ti < 0 || ti >= e->n_teams || cls < 0 || cls >= TIDE_C_COUNT || state < 0 ||
        state >= TIDE_S_COUNT || tier < 0 || tier >= TIDE_T_COUNT || type < 0 || type >= e->n_types)
        return 0;
    const team_t *t = &e->teams[ti];
    return tide__lc_value(&t->cells[((cls * TIDE_S_COUNT + state) * TIDE_T_COUNT + tier) * e->n_types + type],
                    e->now);
}

double tide_engine_service_gpu_s(const tide_engine_t *e, int s, int state, int tier, int type)
{
    if (s < 0 || s >= e->n_svcs || state < 0 || state >= TIDE_S_COUNT || tier < 0 ||
        tier >= TIDE_T_COUNT || type < 0 || type >= e->n_types)
        return 0;
    return tide__lc_value(&e->svcs[s].cells[(state * TIDE_T_COUNT + tier) * e->n_types + type], e->now);
}

double tide_engine_foreign_gpu_s(const tide_engine_t *e, int tier, int type)
{
    if (tier < 0 || tier >= TIDE_T_COUNT || type < 0 || type >= e->n_types)
        return 0;
    return tide__lc_value(&e->foreign_cells[tier * e->n_types + type], e->now);
}

/* n lazy counters' values now into out (the same arithmetic as one by one:
 * a counter with no GPUs adds 0 x dt = +0.0, or +0.0 when dt is 0, so its
 * value is acc + 0.0 either way, without the conversions). */
static void lc_values(const lc_t *c, size_t n, tide_time_t now, double *out)
{
    for (size_t k = 0; k < n; k++)
        out[k] = c[k].n == 0 ? c[k].acc + 0.0 : tide__lc_value(&c[k], now);
}

/* A team's cells that can hold GPU-seconds: its jobs' classes (P1..P3,
 * spec.c rejects others) by the states a job is accounted in (acct.c:
 * training, checkpointing, restoring, and lost by the lost-work moves),
 * which are adjacent, so each class's rows are one run of cells. Every other
 * team cell stays zero (team_cells_check). */
#define TEAM_CLS_LO TIDE_C_P1
#define TEAM_CLS_HI TIDE_C_P3
#define TEAM_ST_LO TIDE_S_TRAINING
#define TEAM_ST_HI TIDE_S_LOST
_Static_assert(TIDE_S_CHECKPOINTING == TEAM_ST_LO + 1 && TIDE_S_RESTORING == TEAM_ST_LO + 2 &&
                   TEAM_ST_HI == TEAM_ST_LO + 3,
               "a job's accounting states are adjacent");

int tide_engine_team_cell_live(int cls, int state)
{
    return cls >= TEAM_CLS_LO && cls <= TEAM_CLS_HI && state >= TEAM_ST_LO && state <= TEAM_ST_HI;
}

/* Is team cell k (of a layout with nt GPU types) one that can be non-zero? */
static int team_cell_live(size_t k, int nt)
{
    size_t row = k / ((size_t)TIDE_T_COUNT * (size_t)nt); /* cls x TIDE_S_COUNT + state */
    return tide_engine_team_cell_live((int)(row / TIDE_S_COUNT), (int)(row % TIDE_S_COUNT));
}

/* Every team cell outside the live rows is zero (no GPUs, no GPU-seconds):
 * what lets tide_engine_team_gpu_s_all write zeros there unread. Returns
 * the first team that breaks it, or -1. */
static int team_cells_check(const tide_engine_t *e)
{
    size_t cells = (size_t)TIDE_C_COUNT * TIDE_S_COUNT * TIDE_T_COUNT * (size_t)e->n_types;
    for (int t = 0; t < e->n_teams; t++)
        for (size_t k = 0; k < cells; k++)
            if (!team_cell_live(k, e->n_types) &&
                (e->teams[t].cells[k].n != 0 || e->teams[t].cells[k].acc != 0))
                return t;
    return -1;
}

int tide_engine_team_gpu_s_all(const tide_engine_t *e, int ti, double *out, size_t n)
{
    size_t per = (size_t)TIDE_T_COUNT * (size_t)e->n_types; /* cells of one (cls, state) row */
    size_t cells = (size_t)TIDE_C_COUNT * TIDE_S_COUNT * per;
    if (ti < 0 || ti >= e->n_teams || n < cells)
        return -1;
    /* only the rows that can be non-zero are read (3 x 4 of 5 x 9): the
     * others are zero, and a zero cell's value is +0.0 */
    memset(out, 0, cells * sizeof *out);
    size_t run = (size_t)(TEAM_ST_HI - TEAM_ST_LO + 1) * per;
    for (int cls = TEAM_CLS_LO; cls <= TEAM_CLS_HI; cls++) {
        size_t at = ((size_t)cls * TIDE_S_COUNT + TEAM_ST_LO) * per;
        lc_values(e->teams[ti].cells + at, run, e->now, out + at);
    }
    return (int)cells;
}

int tide_engine_service_gpu_s_all(const tide_engine_t *e, int s, double *out, size_t n)
{
    size_t cells = (size_t)TIDE_S_COUNT * TIDE_T_COUNT * (size_t)e->n_types;
    if (s < 0 || s >= e->n_svcs || n < cells)
        return -1;
    lc_values(e->svcs[s].cells, cells, e->now, out);
    return (int)cells;
}

int tide_engine_type_gpus(const tide_engine_t *e, int type, int *reserve_gpus)
{
    int n = 0, r = 0;
    for (int d = 0; d < e->n_doms; d++)
        if (e->doms[d].type == type) {
            n += e->doms[d].gpus;
            if (e->doms[d].zone == Z_RESERVE)
                r += e->doms[d].gpus;
        }
    if (reserve_gpus)
        *reserve_gpus = r;
    return n;
}

tide_samples_t tide_engine_samples(const tide_engine_t *e, int which)
{
    tide_samples_t s = {0};
    if (which >= 0 && which < TIDE_SAMPLE_COUNT) {
        s.v = e->smp[which].v;
        s.n = e->smp[which].n;
    }
    return s;
}
