/* Leases: every GPU lent to training carries a lease with a latest return
 * time. The engine renews leases that nobody needs, and enforces the deadline
 * itself: a job still holding lent GPUs at its latest return is stopped (its
 * work since the last committed checkpoint is lost and counted). */
#include <math.h>
#include <string.h>

#include "core/internal.h"

static void lower_deadline(tide_engine_t *e, tide_time_t t)
{
    if (t < e->next_deadline)
        e->next_deadline = t;
}

void tide__lease_grant(tide_engine_t *e, int32_t h)
{
    job_t *j = e->jobs[h];
    tide_grow((void **)&e->leases, &e->cap_leases, e->n_leases + 1, sizeof *e->leases);
    int32_t id = (int32_t)e->n_leases++;
    lease_t *l = &e->leases[id];
    memset(l, 0, sizeof *l);
    l->job = h;
    l->gpus = j->n_leased;
    l->start = e->now;
    l->latest_return = e->pol->lease_deadline(e, e->now);
    l->ckpt_cost = j->spec.ckpt_s;
    l->can_shrink = j->spec.dp_min < j->dp_max;
    j->lease = id;
    lower_deadline(e, l->latest_return);
    e->st.leases_granted++;
    tide_action_t *a = tide__act_push(e, TIDE_ACT_LEASE_GRANT, TIDE_R_NONE);
    a->lease = id;
    a->job = h;
    a->n_gpus = l->gpus;
    a->deadline = l->latest_return;
}

void tide__lease_update(tide_engine_t *e, int32_t h)
{
    job_t *j = e->jobs[h];
    lease_t *l = &e->leases[j->lease];
    if (j->n_leased == 0) {
        tide__lease_return(e, h, TIDE_R_RECLAIM, 0);
        return;
    }
    l->gpus = j->n_leased;
}

void tide__lease_return(tide_engine_t *e, int32_t h, int reason, int late)
{
    job_t *j = e->jobs[h];
    if (j->lease < 0)
        return;
    lease_t *l = &e->leases[j->lease];
    l->returned = 1;
    l->late = late;
    if (late)
        e->st.reclaims_late++;
    if (l->noticed && j->notice_at >= 0)
        tide__samples_add(&e->smp[TIDE_SAMPLE_RECLAIM_RETURN], (double)(e->now - j->notice_at));
    tide_action_t *a = tide__act_push(e, TIDE_ACT_LEASE_RETURN, reason);
    a->lease = j->lease;
    a->job = h;
    a->n_gpus = l->gpus;
    a->deadline = l->latest_return;
    j->lease = -1;
}

tide_time_t tide__reclaim_lead(tide_engine_t *e, int service)
{
    samples_t *ck = &e->smp[TIDE_SAMPLE_CKPT];
    double c = ck->n >= 20 ? tide__samples_q99(ck) : e->declared_ckpt_max;
    if (c < e->declared_ckpt_max && ck->n < 20)
        c = e->declared_ckpt_max;
    service_t *s = &e->svcs[service];
    double w = s->warm.n >= 5 ? tide__samples_q99(&s->warm) : (double)s->spec.warmup_s;
    if (w < (double)s->spec.warmup_s && s->warm.n < 5)
        w = (double)s->spec.warmup_s;
    return (tide_time_t)ceil(c + w) + e->cfg.lead_extra_s + e->cfg.tick_s;
}

void tide__lease_tick(tide_engine_t *e, tide_time_t now)
{
    tide_time_t lead_max = 0;
    for (int s = 0; s < e->n_svcs; s++) {
        tide_time_t l = tide__reclaim_lead(e, s);
        if (l > lead_max)
            lead_max = l;
    }
    e->next_deadline = TIDE_TIME_NEVER;
    /* iterate over a snapshot: tide__job_stop edits e->running */
    for (size_t i = 0; i < e->n_running;) {
        int32_t h = e->running[i];
        job_t *j = e->jobs[h];
        if (j->state == TIDE_JOB_RECLAIMING && now >= j->deadline) {
            tide__job_stop(e, h, TIDE_R_DEADLINE, 1);
            continue; /* slot i now holds another job */
        }
        if (j->lease >= 0) {
            lease_t *l = &e->leases[j->lease];
            if (now >= l->latest_return) {
                if (j->state == TIDE_JOB_RUNNING)
                    e->st.leases_expired++; /* ran out without a notice */
                tide__job_stop(e, h, TIDE_R_DEADLINE, 1);
                continue;
            }
            if (!l->noticed && e->pol->renew_leases &&
                l->latest_return - now < lead_max + 2 * e->cfg.tick_s) {
                l->latest_return = e->pol->lease_deadline(e, now);
                tide_action_t *a = tide__act_push(e, TIDE_ACT_LEASE_RENEW, TIDE_R_NONE);
                a->lease = j->lease;
                a->job = h;
                a->n_gpus = l->gpus;
                a->deadline = l->latest_return;
            }
            lower_deadline(e, l->latest_return);
        }
        if (j->state == TIDE_JOB_RECLAIMING)
            lower_deadline(e, j->deadline);
        i++;
    }
}
