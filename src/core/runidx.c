/* Indexes over the running jobs' slots (e->running). grow_slots: the slots
 * of the elastic jobs (dp_min < dp_max), the only ones that can ever grow,
 * so that the pass growing shrunken jobs visits them, in slot order (the
 * order a scan of e->running visits them), not every running job.
 * lent_run: the lent GPUs of the running jobs not stopping under a notice
 * (the lease plan reads it every tick instead of scanning them).
 * tide__lent_sync also touches the job's domains for the reclaim plan memo
 * (reclaim.c): it is called at every change a plan reads of a job. */
#include "core/internal.h"

static int elastic(const job_t *j) { return j->spec.dp_min < j->dp_max; }

void tide__grow_slot_set(tide_engine_t *e, size_t i)
{
    int on = i < e->n_running && elastic(e->jobs[e->running[i]]);
    tide_bitset_put(&e->grow_slots, i, on);
}

void tide__grow_slots_rebuild(tide_engine_t *e)
{
    tide_bitset_clear(&e->grow_slots);
    for (size_t i = 0; i < e->n_running; i++)
        tide__grow_slot_set(e, i);
}

long tide__grow_slots_check(const tide_engine_t *e)
{
    for (size_t i = 0; i < e->n_running; i++)
        if (tide_bitset_has(&e->grow_slots, i) != elastic(e->jobs[e->running[i]]))
            return (long)i;
    long extra = tide_bitset_next(&e->grow_slots, e->n_running, (size_t)-1);
    return extra;
}

/* A job's share of e->lent_run: its lent GPUs while it runs and is not
 * stopping under a notice. */
static int lent_share(const job_t *j)
{
    if (j->run_idx < 0 || (j->state == TIDE_JOB_RECLAIMING && j->stop_pending))
        return 0;
    return j->n_leased;
}

void tide__lent_sync(tide_engine_t *e, job_t *j)
{
    /* called at every change of a job's state, stop request or width: the
     * reclaim plans of its domains read those */
    tide__dom_touch_job(e, j);
    int now = lent_share(j);
    e->lent_run += now - j->lent_counted;
    j->lent_counted = now;
}

void tide__lent_rebuild(tide_engine_t *e)
{
    e->lent_run = 0;
    for (size_t h = 0; h < e->n_jobs; h++) {
        e->jobs[h]->lent_counted = 0;
        tide__lent_sync(e, e->jobs[h]);
    }
}

int tide__lent_scan(const tide_engine_t *e)
{
    int n = 0;
    for (size_t i = 0; i < e->n_running; i++)
        n += lent_share(e->jobs[e->running[i]]);
    return n;
}
