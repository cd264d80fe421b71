/* Power as a budget the engine respects. Every GPU draws by its state
 * (tide/power.h models per GPU type); a power domain's planned draw is the
 * sum over its GPUs. After the scheduling passes of a step the capping pass
 * recomputes the caps from scratch: every running job uncapped, then, for
 * each domain above its budget, jobs are capped in order - P3 before P2
 * before P1, lent (leased) GPUs before own, newer jobs first - each only as
 * far as the domain needs and never below its type's lowest cap; if every
 * job there is at its lowest cap and the domain is still above, jobs are
 * stopped in the same order (requeued, TIDE_R_POWER). Serving is never
 * capped. A cap that can rise is lifted only by a worthwhile step (a
 * hysteresis), a cap that must fall is always applied, so the planned draw
 * never exceeds a budget while training there can still give way. New
 * starts and growth are admitted only if every domain could hold them with
 * all training at its lowest cap (tide__power_admit), so stopping is the
 * last resort (inference growth beyond what caps absorb). Energy is the
 * planned draw integrated over time. Pure. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "tide/power.h"

/* ------------------------------------------------------------- the model */

static const double def_frac[] = {1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3};
static const double def_speed[] = {1.0, 0.985, 0.95, 0.89, 0.80, 0.69, 0.56, 0.42};

void tide_power_model_default(tide_power_model_t *m)
{
    memset(m, 0, sizeof *m);
    m->tdp_w = 700;
    m->idle_w = 90;
    m->serve_idle_w = 200;
    m->serve_full_w = 600;
    m->train_w = 650;
    m->ckpt_w = 300;
    m->min_cap_w = 200;
    m->n_curve = (int)(sizeof def_frac / sizeof def_frac[0]);
    memcpy(m->curve_frac, def_frac, sizeof def_frac);
    memcpy(m->curve_speed, def_speed, sizeof def_speed);
}

static int bad(const char **why, const char *msg)
{
    if (why)
        *why = msg;
    return -1;
}

int tide_power_model_check(const tide_power_model_t *m, const char **why)
{
    const double v[] = {m->tdp_w, m->idle_w, m->serve_idle_w, m->serve_full_w,
                        m->train_w, m->ckpt_w, m->min_cap_w};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (!(v[i] >= 0) || v[i] > 1e6)
            return bad(why, "every draw must be a number of watts in 0..1e6");
    if (!(m->tdp_w > 0))
        return bad(why, "tdp must be > 0");
    if (m->idle_w > m->serve_idle_w || m->serve_idle_w > m->serve_full_w)
        return bad(why, "need idle <= serving_idle <= serving_full");
    if (m->serve_full_w > m->tdp_w || m->train_w > m->tdp_w || m->ckpt_w > m->tdp_w)
        return bad(why, "serving_full, training and checkpoint must be <= tdp");
    if (!(m->min_cap_w > 0) || m->min_cap_w > m->train_w)
        return bad(why, "need 0 < min_cap <= training");
    if (m->n_curve < 1 || m->n_curve > TIDE_POWER_CURVE_MAX)
        return bad(why, "the throughput curve needs 1..8 points");
    for (int i = 0; i < m->n_curve; i++) {
        if (!(m->curve_frac[i] > 0 && m->curve_frac[i] <= 1) ||
            !(m->curve_speed[i] > 0 && m->curve_speed[i] <= 1))
            return bad(why, "curve points must have cap fraction and speed in (0, 1]");
        if (i > 0 && (m->curve_frac[i] >= m->curve_frac[i - 1] ||
                      m->curve_speed[i] > m->curve_speed[i - 1]))
            return bad(why, "curve cap fractions must descend and speeds must not rise");
    }
    return 0;
}

double tide_power_speed(const tide_power_model_t *m, double cap_w)
{
    if (cap_w <= 0 || cap_w >= m->train_w || m->train_w <= 0)
        return 1.0;
    double f = cap_w / m->train_w;
    if (f >= m->curve_frac[0])
        return m->curve_speed[0];
    for (int i = 1; i < m->n_curve; i++)
        if (f >= m->curve_frac[i]) {
            double a = m->curve_frac[i], b = m->curve_frac[i - 1];
            double t = (f - a) / (b - a);
            return m->curve_speed[i] + t * (m->curve_speed[i - 1] - m->curve_speed[i]);
        }
    return m->curve_speed[m->n_curve - 1];
}

double tide_power_serving(const tide_power_model_t *m, double load)
{
    if (!(load > 0))
        load = 0;
    if (load > 1)
        load = 1;
    return m->serve_idle_w + load * (m->serve_full_w - m->serve_idle_w);
}

/* ------------------------------------------------------------ fitting */

static const char *const pstate_names[TIDE_PSTATE_COUNT] = {"idle", "serving", "training",
                                                             "checkpointing"};

const char *tide_power_state_name(int state)
{
    return state >= 0 && state < TIDE_PSTATE_COUNT ? pstate_names[state] : NULL;
}

int tide_power_fit_add(tide_power_fit_t *f, int state, double load, double watts, double max_w)
{
    if (state < 0 || state >= TIDE_PSTATE_COUNT || !(watts >= 0) || !(watts <= max_w) ||
        (state == TIDE_PSTATE_SERVING && !isfinite(load))) {
        f->rejected++;
        return -1;
    }
    f->n[state]++;
    f->sum_w[state] += watts;
    if (state == TIDE_PSTATE_SERVING) {
        load = load < 0 ? 0 : load > 1 ? 1 : load;
        f->sum_l += load;
        f->sum_ll += load * load;
        f->sum_lw += load * watts;
    }
    return 0;
}

/* The serving line (unloaded, full) through f's samples; the declared
 * line m shifted through the mean when the loads do not spread. */
static void fit_serving(const tide_power_fit_t *f, const tide_power_model_t *m, double *lo,
                        double *hi)
{
    double n = (double)f->n[TIDE_PSTATE_SERVING];
    double ml = f->sum_l / n, mw = f->sum_w[TIDE_PSTATE_SERVING] / n;
    double var = f->sum_ll / n - ml * ml, cov = f->sum_lw / n - ml * mw;
    if (var >= 0.01 && cov >= 0) {
        double b = cov / var;
        *lo = mw - b * ml;
        *hi = *lo + b;
        return;
    }
    double shift = mw - tide_power_serving(m, ml);
    *lo = m->serve_idle_w + shift;
    *hi = m->serve_full_w + shift;
}

static double clamp_w(double v, double tdp) { return v < 0 ? 0 : v > tdp ? tdp : v; }

/* Clamp every draw to [0, tdp] and restore the model's order. */
static void fit_order(tide_power_model_t *m)
{
    double *v[] = {&m->idle_w, &m->serve_idle_w, &m->serve_full_w, &m->train_w, &m->ckpt_w};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        *v[i] = clamp_w(*v[i], m->tdp_w);
    if (m->serve_idle_w < m->idle_w)
        m->serve_idle_w = m->idle_w;
    if (m->serve_full_w < m->serve_idle_w)
        m->serve_full_w = m->serve_idle_w;
    if (m->train_w < 1)
        m->train_w = m->tdp_w < 1 ? m->tdp_w : 1;
    if (m->min_cap_w > m->train_w)
        m->min_cap_w = m->train_w;
}

int tide_power_fit_apply(const tide_power_fit_t *f, int min_n, double alpha,
                         tide_power_model_t *m, unsigned *mask)
{
    if (!(alpha > 0) || alpha > 1)
        alpha = 1;
    if (min_n < 1)
        min_n = 1;
    double *dst[TIDE_PSTATE_COUNT][2] = {{&m->idle_w, NULL},
                                         {&m->serve_idle_w, &m->serve_full_w},
                                         {&m->train_w, NULL},
                                         {&m->ckpt_w, NULL}};
    int fitted = 0;
    for (int s = 0; s < TIDE_PSTATE_COUNT; s++) {
        if (f->n[s] < min_n)
            continue;
        double v[2] = {f->sum_w[s] / (double)f->n[s], 0};
        if (s == TIDE_PSTATE_SERVING)
            fit_serving(f, m, &v[0], &v[1]);
        double a = *mask & (1u << s) ? alpha : 1.0;
        for (int k = 0; k < 2 && dst[s][k]; k++)
            *dst[s][k] += a * (v[k] - *dst[s][k]);
        *mask |= 1u << s;
        fitted++;
    }
    if (fitted)
        fit_order(m);
    return fitted;
}

/* ------------------------------------------------------------ topology */

static const tide_power_model_t *model_of(const tide_engine_t *e, int gpu);

/* The cluster's mean idle and training draw per GPU (energy of free and
 * foreign GPUs). */
static void power_means(tide_engine_t *e)
{
    e->pw_idle_mean = e->pw_train_mean = 0;
    for (int g = 0; g < e->n_gpus; g++) {
        e->pw_idle_mean += model_of(e, g)->idle_w / e->n_gpus;
        e->pw_train_mean += model_of(e, g)->train_w / e->n_gpus;
    }
}

void tide__power_init(tide_engine_t *e)
{
    e->n_pdom = tide_cluster_power_domains(e->cluster);
    if (e->n_pdom < 1)
        e->n_pdom = 1;
    e->gpu_pdom = tide_xcalloc((size_t)e->n_gpus, sizeof *e->gpu_pdom);
    for (int n = 0; n < e->n_nodes; n++) {
        tide_node_info_t ni;
        tide_cluster_node(e->cluster, n, &ni);
        for (int g = 0; g < ni.gpus; g++)
            e->gpu_pdom[ni.first_gpu + g] = ni.power;
    }
    e->pw_w = tide_xcalloc((size_t)e->n_pdom, sizeof *e->pw_w);
    e->pw_b = tide_xcalloc((size_t)e->n_pdom, sizeof *e->pw_b);
    e->pw_n = tide_xcalloc((size_t)e->n_pdom, sizeof *e->pw_n);
    power_means(e);
    e->power_on = 0;
    for (int d = 0; d < e->n_pdom; d++) {
        e->pw_b[d] = tide_cluster_power_budget(e->cluster, d);
        if (e->pw_b[d] > 0)
            e->power_on = 1;
    }
}

void tide__power_free(tide_engine_t *e)
{
    free(e->gpu_pdom);
    free(e->pw_w);
    free(e->pw_b);
    free(e->pw_n);
    free(e->cap_tots);
}

void tide__power_job_reset(job_t *j)
{
    j->cap_w = 0;
    j->speed = 1.0;
}

static const tide_power_model_t *model_of(const tide_engine_t *e, int gpu)
{
    return tide_cluster_power_model(e->cluster, e->doms[e->gpu_dom[gpu]].type);
}

/* ------------------------------------------------------------ draws */

static double service_load(const tide_engine_t *e, int s)
{
    const service_t *sv = &e->svcs[s];
    double cap = (double)sv->ready * sv->spec.replica_rps;
    return cap > 0 ? sv->demand / cap : 0;
}

/* What domain_watts assumes: the plan as it is, every job at its lowest
 * cap, or that and every replica at full load (worst case for placement). */
enum { PW_PLAN = 0, PW_FLOOR, PW_WORST };

/* The draw of GPU g (of model m) when no running job holds it (free, a
 * replica, foreign). */
static double other_watts(const tide_engine_t *e, int g, const tide_power_model_t *m, int *cls,
                          int mode)
{
    switch (e->own_kind[g]) {
    case OWN_REPLICA: {
        const replica_t *r = &e->reps[e->own_id[g]];
        *cls = 0;
        if (mode == PW_WORST)
            return m->serve_full_w;
        if (r->state == REP_READY && !r->rehearsal)
            return tide_power_serving(m, service_load(e, r->service));
        return m->ckpt_w;
    }
    case OWN_FOREIGN:
        *cls = 3;
        return m->train_w;
    case OWN_JOB: /* taken for a job that does not hold it yet (placement) */
    default:
        *cls = 2;
        return m->idle_w;
    }
}

/* Per-GPU draw of job j at cap `cap` (0 = none) on a GPU of model m. */
static double job_watts(const job_t *j, const tide_power_model_t *m, double cap)
{
    double base = j->phase == TIDE_PHASE_TRAINING ? m->train_w : m->ckpt_w;
    return cap > 0 && cap < base ? cap : base;
}

static int job_holds(const job_t *j)
{
    return (j->state == TIDE_JOB_RUNNING || j->state == TIDE_JOB_RECLAIMING) && j->alloc.n > 0;
}

/* The job holding GPU g, or NULL (free, a replica, foreign, or taken for a
 * job that does not run yet). */
static const job_t *holder(const tide_engine_t *e, int g)
{
    if (e->own_kind[g] != OWN_JOB || e->own_id[g] < 0)
        return NULL;
    const job_t *j = e->jobs[e->own_id[g]];
    return job_holds(j) ? j : NULL;
}

/* Draw per power domain into w[] as `mode` (PW_*) assumes. */
static void domain_watts(const tide_engine_t *e, double *w, int mode)
{
    memset(w, 0, (size_t)e->n_pdom * sizeof *w);
    const tide_power_model_t *m = NULL;
    for (int g = 0, d = -1; g < e->n_gpus; g++) {
        const job_t *j = holder(e, g);
        if (e->gpu_dom[g] != d) { /* one model per domain: looked up once per run of its GPUs */
            d = e->gpu_dom[g];
            m = model_of(e, g);
        }
        int cls;
        /* at the floor a job draws its lowest cap whatever its phase: a
         * restoring or checkpointing job trains again soon */
        w[e->gpu_pdom[g]] += !j               ? other_watts(e, g, m, &cls, mode)
                             : mode != PW_PLAN ? m->min_cap_w
                                               : job_watts(j, m, j->cap_w);
    }
}

/* ------------------------------------------------------------ energy */

/* What job j's caps cost over dt seconds (its cap, phase and speed constant
 * over them) into *capped, *delay, *energy. */
static void cap_cost(const tide_engine_t *e, const job_t *j, double dt, double *capped,
                     double *delay, double *energy)
{
    if (j->cap_w <= 0 || dt <= 0 || !job_holds(j))
        return;
    const tide_power_model_t *m = model_of(e, j->alloc.gpus[0]);
    double w = job_watts(j, m, j->cap_w), base = job_watts(j, m, 0);
    *capped += dt;
    if (j->phase == TIDE_PHASE_TRAINING) {
        *delay += dt * (1.0 - j->speed) * j->width / j->dp_max;
        base *= j->speed; /* the uncapped draw for the same progress */
    }
    *energy += (w - base) * j->alloc.n * dt;
}

/* A job's draw leaves / joins the running totals (tide__acct_job_set calls
 * these around every change of its GPUs, phase or cap): energy is then the
 * totals integrated at each step, at a cost independent of the jobs. */
void tide__power_job_off(tide_engine_t *e, job_t *j)
{
    double dt = (double)(e->now - j->pw_at);
    if (j->cap_w > 0 && dt > 0 && job_holds(j)) { /* cap_cost adds: the job gets its totals */
        if (!j->cap_tot) {
            TIDE_PUSH(e->cap_tots, e->n_cap_tots, e->cap_cap_tots, ((cap_tot_t){0, 0, 0}));
            j->cap_tot = (int32_t)e->n_cap_tots;
        }
        cap_tot_t *c = &e->cap_tots[j->cap_tot - 1];
        cap_cost(e, j, dt, &c->capped_s, &c->delay_s, &c->energy_j);
    }
    e->pw_train_w -= j->pw_w;
    if (j->cap_w > 0)
        e->pw_capped -= j->alloc.n;
    j->pw_w = 0;
    j->pw_at = e->now;
}

void tide__power_job_on(tide_engine_t *e, job_t *j)
{
    j->pw_at = e->now;
    j->pw_w = 0;
    if (!job_holds(j))
        return;
    j->pw_w = j->alloc.n * job_watts(j, model_of(e, j->alloc.gpus[0]), j->cap_w);
    e->pw_train_w += j->pw_w;
    if (j->cap_w > 0)
        e->pw_capped += j->alloc.n;
}

void tide__power_job_live(const tide_engine_t *e, const job_t *j, tide_job_info_t *out)
{
    static const cap_tot_t none = {0, 0, 0};
    const cap_tot_t *c = j->cap_tot > 0 ? &e->cap_tots[j->cap_tot - 1] : &none;
    out->capped_s = c->capped_s;
    out->cap_delay_s = c->delay_s;
    out->cap_energy_j = c->energy_j;
    cap_cost(e, j, (double)(e->now - j->pw_at), &out->capped_s, &out->cap_delay_s,
             &out->cap_energy_j);
}

/* The model a service's replicas are accounted at: its first accepted GPU
 * type's (type 0 when it accepts any). */
static const tide_power_model_t *service_model(const tide_engine_t *e, const service_t *sv)
{
    int t = 0;
    while (sv->spec.gpu_types && t < 31 && !(sv->spec.gpu_types & (1u << t)))
        t++;
    const tide_power_model_t *m = tide_cluster_power_model(e->cluster, t);
    return m ? m : tide_cluster_power_model(e->cluster, 0);
}

/* Energy of [e->now, now) at a cost per step of the services (not jobs or
 * GPUs): jobs at their GPU type's draw and cap (running totals), ready replicas at their
 * service's load and warming ones at `checkpoint` (service_model), free and
 * foreign GPUs at the cluster's mean idle and training draw (exact on one GPU
 * type). GPUs on nodes that are down draw nothing. */
void tide__power_advance(tide_engine_t *e, tide_time_t now)
{
    if (!e->started || now <= e->now)
        return;
    double dt = (double)(now - e->now);
    e->st.energy_training_j += dt * e->pw_train_w;
    e->st.capped_gpu_s += dt * e->pw_capped;
    for (int s = 0; s < e->n_svcs; s++) {
        const service_t *sv = &e->svcs[s];
        const tide_power_model_t *m = sv->pw_model;
        if (!m) /* its type's slot in the cluster: a new model is written there */
            m = e->svcs[s].pw_model = service_model(e, sv);
        int g = sv->spec.gpus_per_replica;
        e->st.energy_serving_j += dt * g * (sv->ready * tide_power_serving(m, service_load(e, s)) +
                                            sv->warming * m->ckpt_w);
    }
    int free_gpus = 0, foreign = 0;
    for (int z = 0; z < Z_COUNT; z++) {
        free_gpus += e->zone_free[z];
        foreign += e->zone_foreign[z];
    }
    e->st.energy_idle_j += dt * free_gpus * e->pw_idle_mean;
    e->st.energy_other_j += dt * foreign * e->pw_train_mean;
}

/* ------------------------------------------------------------ capping */

/* Caps are set in steps of CAP_QUANTUM_W and raised only by CAP_RAISE_W or
 * more (or lifted): fewer actions, no flapping with small load changes. */
#define CAP_QUANTUM_W 25.0
#define CAP_RAISE_W 50.0

typedef struct pjob {
    int32_t h;
    int cls, lent;
    double cap, floor_w;      /* planned cap (0 = none), the job type's lowest */
    size_t off, n;            /* its (domain, GPUs) pairs in the pair list */
} pjob_t;

typedef struct ppair {
    int dom, gpus;
    double base;              /* uncapped per-GPU draw there */
} ppair_t;

/* Capping order: P3 before P2 before P1, lent before own, newer first. */
static int pjob_cmp(const void *a, const void *b)
{
    const pjob_t *x = a, *y = b;
    if (x->cls != y->cls)
        return y->cls - x->cls;
    if (x->lent != y->lent)
        return y->lent - x->lent;
    return (x->h < y->h) - (x->h > y->h);
}

/* Running jobs with their per-domain GPU counts; w[] gets the uncapped draw. */
static size_t collect(tide_engine_t *e, double *w, pjob_t **pj, ppair_t **pp)
{
    size_t nj = 0, np = 0, cap_p = 0;
    pjob_t *js = tide_xmalloc((e->n_running + 1) * sizeof *js);
    ppair_t *ps = NULL;
    for (size_t i = 0; i < e->n_running; i++) {
        int32_t h = e->running[i];
        job_t *j = e->jobs[h];
        if (!job_holds(j))
            continue;
        const tide_power_model_t *m = model_of(e, j->alloc.gpus[0]);
        pjob_t *p = &js[nj++];
        *p = (pjob_t){.h = h, .cls = j->cls, .lent = j->n_leased > 0, .off = np,
                      .floor_w = m->min_cap_w};
        for (int k = 0; k < j->alloc.n; k++)
            e->pw_n[e->gpu_pdom[j->alloc.gpus[k]]]++;
        for (int k = 0; k < j->alloc.n; k++) {
            int d = e->gpu_pdom[j->alloc.gpus[k]];
            if (!e->pw_n[d])
                continue;
            tide_grow((void **)&ps, &cap_p, np + 1, sizeof *ps);
            ps[np++] = (ppair_t){.dom = d, .gpus = e->pw_n[d], .base = job_watts(j, m, 0)};
            w[d] += e->pw_n[d] * job_watts(j, m, 0);
            e->pw_n[d] = 0;
        }
        p->n = np - p->off;
    }
    qsort(js, nj, sizeof *js, pjob_cmp);
    *pj = js;
    *pp = ps;
    return nj;
}

/* Lower p's cap by what domain pr needs (excess watts there); updates w[]
 * for every domain of p. Returns the watts taken off domain pr. */
static double cap_down(pjob_t *p, const ppair_t *ps, const ppair_t *pr, double excess, double *w)
{
    double cur = p->cap > 0 && p->cap < pr->base ? p->cap : pr->base;
    double lo = p->floor_w < pr->base ? p->floor_w : pr->base;
    if (cur <= lo)
        return 0;
    double want = floor((cur - excess / pr->gpus) / CAP_QUANTUM_W) * CAP_QUANTUM_W;
    if (want < lo)
        want = lo;
    for (size_t k = 0; k < p->n; k++) {
        const ppair_t *q = &ps[p->off + k];
        double qc = p->cap > 0 && p->cap < q->base ? p->cap : q->base;
        double qn = want < q->base ? want : q->base;
        if (qn < qc)
            w[q->dom] -= (qc - qn) * q->gpus;
    }
    p->cap = want;
    return (cur - want) * pr->gpus;
}

/* Stop p (last resort): its GPUs become idle. */
static void shed(tide_engine_t *e, pjob_t *p, const ppair_t *ps, double *w)
{
    job_t *j = e->jobs[p->h];
    for (size_t k = 0; k < p->n; k++) {
        const ppair_t *q = &ps[p->off + k];
        double qc = p->cap > 0 && p->cap < q->base ? p->cap : q->base;
        const tide_power_model_t *m = model_of(e, j->alloc.gpus[0]);
        w[q->dom] -= (qc - m->idle_w) * q->gpus;
    }
    tide__job_stop(e, p->h, TIDE_R_POWER, 1);
    e->st.power_stops++;
    p->n = 0;
    p->h = -1;
}

/* Bring domain d within its budget: caps in order, then stops. */
static void fit_domain(tide_engine_t *e, int d, pjob_t *js, size_t nj, ppair_t *ps, double *w)
{
    for (int pass = 0; pass < 2 && w[d] > e->pw_b[d]; pass++)
        for (size_t i = 0; i < nj && w[d] > e->pw_b[d]; i++) {
            pjob_t *p = &js[i];
            for (size_t k = 0; p->h >= 0 && k < p->n; k++) {
                const ppair_t *pr = &ps[p->off + k];
                if (pr->dom != d)
                    continue;
                if (pass == 0)
                    cap_down(p, ps, pr, w[d] - e->pw_b[d], w);
                else
                    shed(e, p, ps, w);
                break;
            }
        }
}

/* Apply planned cap p->cap to the job: lower always, higher only by a step
 * worth an action (or lifted altogether). */
static void set_cap(tide_engine_t *e, const pjob_t *p)
{
    job_t *j = e->jobs[p->h];
    const tide_power_model_t *m = model_of(e, j->alloc.gpus[0]);
    double want = p->cap > 0 && p->cap < m->train_w ? p->cap : 0;
    if (want == j->cap_w)
        return;
    if (want == 0 && j->phase != TIDE_PHASE_TRAINING && j->cap_w >= m->ckpt_w)
        return; /* harmless while it checkpoints or restores: keep it for the training after */
    if (j->cap_w > 0 && want > j->cap_w && (want > 0 ? want : m->train_w) - j->cap_w < CAP_RAISE_W)
        return;
    j->progress = tide__job_progress_now(j, e->now);
    j->progress_at = e->now;
    tide__acct_job_pause(e, j);
    j->cap_w = want;
    j->speed = tide_power_speed(m, want);
    tide__acct_job_resume(e, j);
    tide__end_index_set(e, p->h, tide__job_expected_end(j, e->now));
    tide_action_t *a = tide__act_push(e, TIDE_ACT_POWER_CAP, TIDE_R_POWER);
    a->job = p->h;
    a->width = j->width;
    tide__act_gpus(e, a, &j->alloc);
    a->value = want;
    e->st.power_caps++;
}

void tide__power_pass(tide_engine_t *e)
{
    if (!e->power_on)
        return;
    double *w = e->pw_w;
    domain_watts(e, w, PW_PLAN);
    /* take the running jobs out, put them back uncapped */
    for (size_t i = 0; i < e->n_running; i++) {
        const job_t *j = e->jobs[e->running[i]];
        for (int k = 0; job_holds(j) && k < j->alloc.n; k++) {
            int g = j->alloc.gpus[k];
            w[e->gpu_pdom[g]] -= job_watts(j, model_of(e, g), j->cap_w);
        }
    }
    pjob_t *js;
    ppair_t *ps;
    size_t nj = collect(e, w, &js, &ps);
    for (int d = 0; d < e->n_pdom; d++)
        if (e->pw_b[d] > 0 && w[d] > e->pw_b[d])
            fit_domain(e, d, js, nj, ps, w);
    int capped = 0;
    for (size_t i = 0; i < nj; i++)
        if (js[i].h >= 0) {
            set_cap(e, &js[i]);
            if (e->jobs[js[i].h]->cap_w > 0)
                capped += e->jobs[js[i].h]->alloc.n;
        }
    free(js);
    free(ps);
    e->st.power_capped_gpus = capped;
    domain_watts(e, w, PW_PLAN);
    for (int d = 0; d < e->n_pdom; d++)
        if (e->pw_b[d] > 0 && w[d] > e->pw_b[d] + 1e-6) {
            e->st.power_breaches++;
            if (w[d] - e->pw_b[d] > e->st.power_excess_w)
                e->st.power_excess_w = w[d] - e->pw_b[d];
        }
}

int tide__power_admit(tide_engine_t *e, const alloc_t *a)
{
    if (!e->power_on || a->n == 0)
        return 1;
    double *w = e->pw_w;
    domain_watts(e, w, PW_FLOOR);
    /* GPUs taken for a job that does not run yet count as idle in w */
    for (int k = 0; k < a->n; k++) {
        if (holder(e, a->gpus[k]))
            continue; /* growth: already counted at the job's lowest cap */
        const tide_power_model_t *m = model_of(e, a->gpus[k]);
        double lo = m->min_cap_w; /* it will train: at best at its lowest cap */
        w[e->gpu_pdom[a->gpus[k]]] += lo - m->idle_w;
    }
    for (int d = 0; d < e->n_pdom; d++)
        if (e->pw_b[d] > 0 && w[d] > e->pw_b[d]) {
            e->st.power_held++;
            return 0;
        }
    return 1;
}

int tide__power_check(const tide_engine_t *e, tide_error_t *err)
{
    if (!e->power_on)
        return 0;
    double *w = tide_xcalloc((size_t)e->n_pdom, sizeof *w);
    domain_watts(e, w, PW_PLAN);
    int rc = 0;
    for (int d = 0; d < e->n_pdom && rc == 0; d++) {
        if (!(e->pw_b[d] > 0) || w[d] <= e->pw_b[d] + 1e-6)
            continue;
        int training = 0;
        for (size_t i = 0; i < e->n_running && !training; i++) {
            const job_t *j = e->jobs[e->running[i]];
            for (int k = 0; job_holds(j) && k < j->alloc.n && !training; k++)
                training = e->gpu_pdom[j->alloc.gpus[k]] == d;
        }
        if (training)
            rc = tide_errf(err, TIDE_EINVAL,
                           "power domain %d plans %.0f W over its budget of %.0f W while training "
                           "there could still give way",
                           d, w[d], e->pw_b[d]);
    }
    free(w);
    return rc;
}

/* ------------------------------------------------------------ placement */

void tide__power_spread(const tide_engine_t *e, int *order)
{
    int n = 0;
    if (!e->power_on) {
        for (int d = 0; d < e->n_doms; d++)
            order[d] = d;
        return;
    }
    /* rank of each domain inside its power domain, then by (rank, index) */
    int *rank = tide_xcalloc((size_t)e->n_doms + 1, sizeof *rank);
    int *seen = tide_xcalloc((size_t)e->n_pdom + 1, sizeof *seen);
    int max_rank = 0;
    for (int d = 0; d < e->n_doms; d++) {
        rank[d] = seen[e->gpu_pdom[e->doms[d].first_gpu]]++;
        if (rank[d] > max_rank)
            max_rank = rank[d];
    }
    for (int r = 0; r <= max_rank; r++)
        for (int d = 0; d < e->n_doms; d++)
            if (rank[d] == r)
                order[n++] = d;
    free(rank);
    free(seen);
}

void tide__power_room_init(tide_engine_t *e)
{
    if (!e->power_on)
        return;
    domain_watts(e, e->pw_w, PW_WORST);
    for (int d = 0; d < e->n_pdom; d++)
        e->pw_w[d] = e->pw_b[d] > 0 ? e->pw_b[d] - e->pw_w[d] : INFINITY;
}

int tide__power_room(tide_engine_t *e, int d, int n, int take)
{
    if (!e->power_on)
        return 1;
    int g = e->doms[d].first_gpu, p = e->gpu_pdom[g];
    const tide_power_model_t *m = model_of(e, g);
    double need = n * (m->serve_full_w - m->idle_w);
    if (take)
        e->pw_w[p] -= need;
    return e->pw_w[p] >= need;
}

/* ------------------------------------------------------------ public */

int tide_engine_power(const tide_engine_t *e, int domain, tide_power_info_t *out)
{
    if (!e || !out || domain < 0 || domain >= e->n_pdom)
        return -1;
    double *w = tide_xcalloc((size_t)e->n_pdom, sizeof *w);
    domain_watts(e, w, PW_PLAN);
    memset(out, 0, sizeof *out);
    out->watts = w[domain];
    out->budget_w = e->pw_b[domain];
    out->nameplate_w = tide_cluster_power_nameplate(e->cluster, domain);
    for (size_t i = 0; i < e->n_running; i++) {
        const job_t *j = e->jobs[e->running[i]];
        for (int k = 0; job_holds(j) && j->cap_w > 0 && k < j->alloc.n; k++)
            out->capped_gpus += e->gpu_pdom[j->alloc.gpus[k]] == domain;
    }
    free(w);
    return 0;
}

int tide_engine_power_all(const tide_engine_t *e, double *watts, int n)
{
    if (!e)
        return 0;
    double *w = tide_xcalloc((size_t)e->n_pdom, sizeof *w);
    domain_watts(e, w, PW_PLAN);
    for (int d = 0; d < n && d < e->n_pdom; d++)
        watts[d] = w[d];
    free(w);
    return e->n_pdom;
}

int tide__power_model_restore(tide_engine_t *e, int t, const tide_power_model_t *m)
{
    if (tide_cluster_set_power_model(e->cluster, t, m, NULL) < 0)
        return -1;
    power_means(e);
    return 0;
}

int tide_engine_set_power_model(tide_engine_t *e, int type, const tide_power_model_t *m,
                                tide_error_t *err)
{
    if (!e)
        return tide_errf(err, TIDE_EINVAL, "no engine");
    if (tide_cluster_set_power_model(e->cluster, type, m, err) < 0)
        return -1;
    power_means(e);
    /* running jobs' draws in the running totals follow the new model */
    for (size_t i = 0; i < e->n_running; i++) {
        job_t *j = e->jobs[e->running[i]];
        if (!job_holds(j))
            continue;
        tide__power_job_off(e, j);
        tide__power_job_on(e, j);
    }
    return 0;
}
