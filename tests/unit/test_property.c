/* Property test: hundreds of random workloads (deterministic PRNG, seeds
 * 1..N) on random small clusters, through every policy, engine + simulated
 * world, with node failures/recoveries, rank and replica failures and cancels
 * injected as events. Every step must succeed with cfg.check_invariants = 1
 * and pass tide_engine_check; the action stream, replayed into our own GPU
 * ownership table, must never double-book a GPU nor give a training job a
 * Tier A GPU, and must agree with tide_engine_gpu_owner after every step
 * (engine_fixture.h). At the end: job states agree with the facts fed in,
 * counters agree with the states, only running jobs hold GPUs, the world
 * agrees on who runs, and GPU-seconds add up (no negative cell).
 * Also: the same inputs give the same actions (determinism).
 *
 * TIDE_PROPERTY_SEEDS=N overrides the number of seeds (default 300, 120 under
 * AddressSanitizer). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "engine_fixture.h"

/* ------------------------------------------------------------ PRNG */

typedef struct rng {
    uint64_t s;
} rng_t;

static uint64_t rnext(rng_t *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static double runit(rng_t *r) { return (double)(rnext(r) >> 11) / 9007199254740992.0; }
static int rint_(rng_t *r, int lo, int hi) { return lo + (int)(rnext(r) % (uint64_t)(hi - lo + 1)); }
static int rchance(rng_t *r, double p) { return runit(r) < p; }

/* ------------------------------------------------------------ workload */

#define MAXJ 32
#define MAXINJ 20
#define MAXDOM 16

enum { INJ_NODE_FAIL, INJ_NODE_BACK, INJ_RANK, INJ_CANCEL, INJ_REPLICA, INJ_EXPIRE };

typedef struct inj {
    tide_time_t t;
    int kind;
    int node;
} inj_t;

typedef struct workload {
    uint64_t seed;
    char cluster[96];
    tide_cluster_t *c;
    int n_gpus, n_nodes, n_types;
    int n_dom, dom_gpus[MAXDOM], dom_type[MAXDOM], max_dom;
    int n_svc;
    char svc_names[2][16];
    tide_service_spec_t svc[2];
    int n_jobs;
    char ids[MAXJ][32];
    char teams[3][8];
    tide_job_spec_t jobs[MAXJ];
    ef_input_t *in;
    size_t n_in, cap_in;
    inj_t inj[MAXINJ];
    int n_inj;
    tide_time_t horizon;
    double hang;         /* chance that a requested checkpoint never commits */
    int use_teams;       /* team specs (weights, quotas, borrow/lend limits) are set */
    tide_team_spec_t team_spec[3];
} workload_t;

static int type_ok(uint32_t mask, int type) { return !mask || (mask & (1u << type)); }

/* Gangs that fit the empty cluster on accepted GPU types: inside one domain,
 * or (larger than every domain) on whole domains of one size. */
static int cap_empty(const workload_t *w, int gang, uint32_t types)
{
    int cap = 0;
    if (gang <= w->max_dom) {
        for (int d = 0; d < w->n_dom; d++)
            if (type_ok(types, w->dom_type[d]) && gang <= w->dom_gpus[d])
                cap += w->dom_gpus[d] / gang;
        return cap;
    }
    for (int size = 1; size <= w->max_dom; size++) {
        if (gang % size)
            continue;
        int n = 0;
        for (int d = 0; d < w->n_dom; d++)
            n += type_ok(types, w->dom_type[d]) && w->dom_gpus[d] == size;
        cap += n / (gang / size);
    }
    return cap;
}

/* The submit contract: a job is accepted when dp_min of its gangs could be
 * placed on the empty cluster (engine.c ev_submit). */
static int gang_ok(const workload_t *w, int gang, int dp_min, uint32_t types)
{
    return cap_empty(w, gang, types) >= dp_min;
}

static void make_cluster(workload_t *w, rng_t *r)
{
    int nodes = rint_(r, 1, 6);
    int two = nodes >= 2 && rchance(r, 0.35);
    if (!two) {
        int g = rchance(r, 0.5) ? 4 : 8;
        int dom = nodes % 2 == 0 && rchance(r, 0.2) ? 2 : 1;
        if (dom > 1)
            snprintf(w->cluster, sizeof w->cluster, "%dx%d:H100/%d", nodes, g, dom);
        else
            snprintf(w->cluster, sizeof w->cluster, "%dx%d:H100", nodes, g);
    } else {
        int a = rint_(r, 1, nodes - 1), b = nodes - a;
        snprintf(w->cluster, sizeof w->cluster, "%dx%d:H100,%dx%d:A100", a,
                 rchance(r, 0.5) ? 4 : 8, b, rchance(r, 0.5) ? 4 : 8);
    }
    tide_error_t err = {0};
    w->c = tide_cluster_parse(w->cluster, &err);
    if (!w->c)
        fail_msg("seed %llu: cluster %s: %s", (unsigned long long)w->seed, w->cluster, err.msg);
    w->n_gpus = tide_cluster_gpus(w->c);
    w->n_nodes = tide_cluster_nodes(w->c);
    w->n_types = tide_cluster_types(w->c);
    w->n_dom = tide_cluster_domains(w->c);
    assert_true(w->n_dom <= MAXDOM);
    memset(w->dom_gpus, 0, sizeof w->dom_gpus);
    for (int n = 0; n < w->n_nodes; n++) {
        tide_node_info_t ni;
        tide_cluster_node(w->c, n, &ni);
        w->dom_gpus[ni.domain] += ni.gpus;
        w->dom_type[ni.domain] = ni.type;
    }
    w->max_dom = tide_cluster_max_domain_gpus(w->c);
}

/* GPUs a policy's layout gives inference for these floors/fixed counts (as
 * the engine computes them: whole largest domains). */
static int layout_gpus(const workload_t *w, int use_fixed)
{
    int total = 0;
    for (int s = 0; s < w->n_svc; s++) {
        const tide_service_spec_t *sp = &w->svc[s];
        int n = sp->min_replicas;
        if (use_fixed && sp->fixed_replicas > n)
            n = sp->fixed_replicas;
        int per = w->max_dom / sp->gpus_per_replica;
        if (per < 1)
            per = 1;
        total += (n + per - 1) / per * w->max_dom;
    }
    return total;
}

static void make_services(workload_t *w, rng_t *r)
{
    for (int tries = 0;; tries++) {
        w->n_svc = rchance(r, 0.15) ? 0 : rint_(r, 1, 2);
        for (int s = 0; s < w->n_svc; s++) {
            snprintf(w->svc_names[s], sizeof w->svc_names[s], "svc%d", s);
            static const int tps[] = {1, 2, 4, 8};
            int tp;
            do
                tp = tps[rint_(r, 0, 3)];
            while (tp > w->max_dom);
            tide_service_spec_t sp = {.name = w->svc_names[s], .gpus_per_replica = tp,
                                      .replica_rps = 5 + 35 * runit(r),
                                      .min_replicas = rint_(r, 0, 2),
                                      .warmup_s = rint_(r, 30, 600),
                                      .fixed_replicas = rint_(r, 0, 3)};
            if (rchance(r, 0.3))
                sp.max_replicas = sp.min_replicas + rint_(r, 1, 6);
            /* the first service stages part of its warm-up (no draw: the
             * workloads stay those of the other seeds' history) */
            sp.stage_s = s == 0 ? sp.warmup_s / 2 : 0;
            w->svc[s] = sp;
        }
        /* floors and fixed replicas must leave room for training */
        if (layout_gpus(w, 1) <= w->n_gpus / 2 || tries > 50) {
            if (layout_gpus(w, 1) > w->n_gpus / 2)
                w->n_svc = 0;
            return;
        }
    }
}

static void make_demand(workload_t *w, rng_t *r)
{
    for (int s = 0; s < w->n_svc; s++) {
        const tide_service_spec_t *sp = &w->svc[s];
        /* enough for up to about half the cluster at the peak */
        double cap = (double)w->n_gpus / sp->gpus_per_replica * sp->replica_rps;
        double base = cap * (0.05 + 0.25 * runit(r));
        double amp = 0.7 * runit(r);
        double phase = 86400 * runit(r);
        int nb = rint_(r, 0, 4);
        tide_time_t bs[4], be[4];
        double bx[4];
        for (int k = 0; k < nb; k++) {
            bs[k] = (tide_time_t)(runit(r) * (double)w->horizon);
            be[k] = bs[k] + rint_(r, 600, 3600);
            bx[k] = 1.5 + 2.5 * runit(r);
        }
        tide_time_t step = rchance(r, 0.5) ? 300 : 600;
        for (tide_time_t t = 0; t <= w->horizon; t += step) {
            double v = base * (1 + amp * sin(2 * M_PI * ((double)t - phase) / 86400.0));
            for (int k = 0; k < nb; k++)
                if (t >= bs[k] && t < be[k])
                    v *= bx[k];
            v *= 0.9 + 0.2 * runit(r);
            if (rchance(r, 0.01))
                v = 0;
            ef_in_push(&w->in, &w->n_in, &w->cap_in, ef_in_demand(t, s, v < 0 ? 0 : v));
        }
    }
}

static void make_jobs(workload_t *w, rng_t *r)
{
    w->n_jobs = rint_(r, 3, MAXJ);
    /* pressure: long P2/P3 jobs fill the cluster early, P1 jobs come later */
    int pressure = rchance(r, 0.4);
    for (int t = 0; t < 3; t++)
        snprintf(w->teams[t], sizeof w->teams[t], "team%d", t);
    for (int i = 0; i < w->n_jobs; i++) {
        snprintf(w->ids[i], sizeof w->ids[i], "s%llu-j%d", (unsigned long long)w->seed, i);
        tide_job_spec_t j;
        for (int tries = 0;; tries++) {
            static const int gangs[] = {1, 2, 4, 8, 16};
            int gang = gangs[rint_(r, 0, 4)];
            int dp = rint_(r, 1, 4);
            int dp_min = rchance(r, 0.5) ? dp : rint_(r, 1, dp);
            uint32_t types = 0;
            if (w->n_types > 1 && rchance(r, 0.25))
                types = 1u << rint_(r, 0, w->n_types - 1);
            if (tries > 100) {
                gang = 1;
                dp = dp_min = 1;
                types = 0;
            }
            if (!gang_ok(w, gang, dp_min, types))
                continue;
            int early = pressure && i < w->n_jobs / 2;
            int prio = early ? rint_(r, 2, 3) : pressure ? rint_(r, 1, 2) : rint_(r, 1, 3);
            j = ef_job(w->ids[i], prio, gang * dp, gang, dp_min,
                       early ? rint_(r, 20000, 80000) : rint_(r, 300, 30000));
            j.team = w->teams[rint_(r, 0, 2)];
            j.gpu_types = types;
            j.ckpt_interval_s = rint_(r, 300, 3600);
            j.ckpt_s = rint_(r, 5, 300);
            j.restore_s = rint_(r, 5, 300);
            break;
        }
        w->jobs[i] = j;
        tide_time_t at = (tide_time_t)(runit(r) * 0.8 * (double)w->horizon);
        if (pressure)
            at = i < w->n_jobs / 2 ? (tide_time_t)(runit(r) * 0.1 * (double)w->horizon)
                                   : (tide_time_t)((0.2 + 0.6 * runit(r)) * (double)w->horizon);
        if (i > 0 && rchance(r, 0.15))
            at = w->in[w->n_in - 1].t; /* several submits at the same instant */
        ef_in_push(&w->in, &w->n_in, &w->cap_in, ef_in_submit(at, &w->jobs[i]));
    }
}

static void make_injections(workload_t *w, rng_t *r)
{
    w->n_inj = 0;
    int nf = rint_(r, 0, 3);
    for (int k = 0; k < nf && w->n_inj + 2 <= MAXINJ; k++) {
        int node = rint_(r, 0, w->n_nodes - 1);
        tide_time_t t = (tide_time_t)(runit(r) * (double)w->horizon);
        w->inj[w->n_inj++] = (inj_t){t, INJ_NODE_FAIL, node};
        if (!rchance(r, 0.1))
            w->inj[w->n_inj++] = (inj_t){t + rint_(r, 300, 7200), INJ_NODE_BACK, node};
    }
    int nk = rint_(r, 0, 10);
    for (int k = 0; k < nk && w->n_inj < MAXINJ; k++) {
        static const int kinds[] = {INJ_RANK, INJ_RANK, INJ_CANCEL, INJ_REPLICA, INJ_EXPIRE};
        w->inj[w->n_inj++] = (inj_t){(tide_time_t)(runit(r) * (double)w->horizon),
                                     kinds[rint_(r, 0, 4)], -1};
    }
    /* by time (stable) */
    for (int i = 1; i < w->n_inj; i++)
        for (int k = i; k > 0 && w->inj[k - 1].t > w->inj[k].t; k--) {
            inj_t x = w->inj[k];
            w->inj[k] = w->inj[k - 1];
            w->inj[k - 1] = x;
        }
}

static void make_teams(workload_t *w, rng_t *r)
{
    w->use_teams = rchance(r, 0.35);
    for (int t = 0; t < 3; t++) {
        tide_team_spec_t *ts = &w->team_spec[t];
        tide_team_spec_default(ts);
        ts->name = w->teams[t];
        ts->weight = 0.5 + 2.5 * runit(r);
        if (rchance(r, 0.6))
            for (int k = 0; k < w->n_types; k++) {
                int type_gpus = 0;
                for (int d = 0; d < w->n_dom; d++)
                    type_gpus += w->dom_type[d] == k ? w->dom_gpus[d] : 0;
                ts->quota[k] = rint_(r, 0, type_gpus / 2);
            }
        ts->borrow_limit = rchance(r, 0.5) ? -1 : rint_(r, 0, w->n_gpus / 2);
        ts->lend_cap = rchance(r, 0.5) ? -1 : rint_(r, 0, 8);
    }
}

static void make_workload(workload_t *w, uint64_t seed)
{
    memset(w, 0, sizeof *w);
    w->seed = seed;
    rng_t r = {seed * 0x2545f4914f6cdd1dULL + 17};
    w->horizon = (tide_time_t)rint_(&r, 8, 30) * 3600;
    make_cluster(w, &r);
    make_services(w, &r);
    make_demand(w, &r);
    make_jobs(w, &r);
    make_injections(w, &r);
    make_teams(w, &r);
    w->hang = rchance(&r, 0.4) ? 0.5 : 0;
    ef_in_sort(w->in, w->n_in);
}

static void free_workload(workload_t *w)
{
    tide_cluster_destroy(w->c);
    free(w->in);
}

/* ------------------------------------------------------------ injections */

typedef struct run_ctx {
    const workload_t *w;
    rng_t r;
    int next_inj;
    uint8_t cancelled[MAXJ + 1];
    int injected;
    size_t scan;                        /* log entries already looked at */
    tide_time_t ckpt_deadline[MAXJ + 1]; /* per job handle: last notice's deadline, -1 none */
    long live_checks;
} run_ctx_t;

/* Zone whose GPUs are lent under leases by this policy (0 = none). */
static char lease_zone(const char *policy)
{
    if (!strcmp(policy, "elastic"))
        return 'S';
    if (!strcmp(policy, "timeshare"))
        return 'I';
    return 0;
}

/* After the engine settled at t: deadlines are enforced, leases match the
 * GPUs lent. */
static void live_checks(ef_t *f, tide_time_t t, run_ctx_t *ctx)
{
    for (; ctx->scan < f->nlog; ctx->scan++) {
        const ef_act_t *x = &f->log[ctx->scan];
        if (x->a.job < 0 || x->a.job > MAXJ)
            continue;
        if (x->a.kind == TIDE_ACT_JOB_CKPT)
            ctx->ckpt_deadline[x->a.job] = x->a.deadline;
        else if (x->a.kind == TIDE_ACT_JOB_STOP || x->a.kind == TIDE_ACT_JOB_START)
            ctx->ckpt_deadline[x->a.job] = -1;
    }
    char lz = lease_zone(f->policy);
    int n_jobs = tide_engine_jobs(f->e);
    for (int32_t h = 0; h < n_jobs; h++) {
        tide_job_info_t ji;
        tide_engine_job(f->e, h, &ji);
        if (ji.state == TIDE_JOB_RECLAIMING) {
            tide_time_t dl = h <= MAXJ ? ctx->ckpt_deadline[h] : -1;
            if (dl < 0)
                fail_msg("%s t=%lld: job %s reclaiming without a notice", f->tag, (long long)t,
                         ji.spec->id);
            if (t >= dl)
                fail_msg("%s t=%lld: job %s still reclaiming past its checkpoint deadline %lld",
                         f->tag, (long long)t, ji.spec->id, (long long)dl);
        }
        int running = ji.state == TIDE_JOB_RUNNING || ji.state == TIDE_JOB_RECLAIMING;
        int lent = 0;
        if (running && lz)
            for (int g = 0; g < f->ngpus; g++) {
                int32_t own;
                if (tide_engine_gpu_owner(f->e, g, &own) == 1 && own == h &&
                    tide_engine_gpu_zone(f->e, g) == lz)
                    lent++;
            }
        if (!running && ji.lease >= 0)
            fail_msg("%s t=%lld: job %s holds lease %d while %s", f->tag, (long long)t,
                     ji.spec->id, ji.lease, tide_job_state_name(ji.state));
        if (lent && ji.lease < 0)
            fail_msg("%s t=%lld: job %s holds %d lent GPUs without a lease", f->tag, (long long)t,
                     ji.spec->id, lent);
        if (ji.lease >= 0) {
            tide_lease_info_t li;
            assert_int_equal(tide_engine_lease(f->e, ji.lease, &li), 0);
            if (li.job != h || li.returned || li.gpus != lent)
                fail_msg("%s t=%lld: job %s lease %d: job %d, returned %d, %d GPUs (lent: %d)",
                         f->tag, (long long)t, ji.spec->id, ji.lease, li.job, li.returned,
                         li.gpus, lent);
            if (li.latest_return <= t)
                fail_msg("%s t=%lld: job %s still holds lease %d past its latest return %lld",
                         f->tag, (long long)t, ji.spec->id, ji.lease, (long long)li.latest_return);
        }
    }
    /* teams: GPUs used are what their jobs hold; borrowing within limits */
    for (int k = 0; k < tide_engine_teams(f->e); k++) {
        tide_team_info_t ti;
        assert_int_equal(tide_engine_team_info(f->e, k, &ti), 0);
        int held = 0;
        for (int g = 0; g < f->ngpus; g++) {
            int32_t own;
            tide_job_info_t ji;
            if (tide_engine_gpu_owner(f->e, g, &own) == 1 && tide_engine_job(f->e, own, &ji) == 0 &&
                !strcmp(ji.spec->team, ti.team))
                held++;
        }
        if (ti.used_gpus != held)
            fail_msg("%s t=%lld: team %s uses %d GPUs, its jobs hold %d", f->tag, (long long)t,
                     ti.team, ti.used_gpus, held);
        if (ti.quota_gpus >= 0 && ti.borrow_limit >= 0 && ti.borrowed_gpus > ti.borrow_limit)
            fail_msg("%s t=%lld: team %s borrows %d GPUs beyond its quota %d, limit %d", f->tag,
                     (long long)t, ti.team, ti.borrowed_gpus, ti.quota_gpus, ti.borrow_limit);
    }
    if (!lz && tide_engine_leases(f->e) != 0)
        fail_msg("%s: %d leases under a policy that lends nothing", f->tag,
                 tide_engine_leases(f->e));
    ctx->live_checks++;
}

static int job_index(const workload_t *w, int32_t h, const ef_t *f)
{
    tide_job_info_t ji;
    if (tide_engine_job(f->e, h, &ji) != 0)
        return -1;
    for (int i = 0; i < w->n_jobs; i++)
        if (!strcmp(w->jobs[i].id, ji.spec->id))
            return i;
    return -1;
}

static void inject_hook(ef_t *f, tide_time_t t, void *vctx)
{
    run_ctx_t *ctx = vctx;
    const workload_t *w = ctx->w;
    live_checks(f, t, ctx);
    while (ctx->next_inj < w->n_inj && w->inj[ctx->next_inj].t <= t) {
        const inj_t *x = &w->inj[ctx->next_inj++];
        tide_event_t ev;
        int n_jobs = tide_engine_jobs(f->e);
        switch (x->kind) {
        case INJ_NODE_FAIL:
        case INJ_NODE_BACK:
            ev = ef_ev(x->kind == INJ_NODE_FAIL ? TIDE_EV_NODE_FAILED : TIDE_EV_NODE_RECOVERED);
            ev.node = x->node;
            break;
        case INJ_RANK:
        case INJ_EXPIRE:
        case INJ_CANCEL: {
            int32_t cand[MAXJ];
            int nc = 0;
            for (int32_t h = 0; h < n_jobs; h++) {
                tide_job_info_t ji;
                tide_engine_job(f->e, h, &ji);
                int running = ji.state == TIDE_JOB_RUNNING || ji.state == TIDE_JOB_RECLAIMING;
                if (running || (x->kind == INJ_CANCEL && ji.state == TIDE_JOB_QUEUED))
                    cand[nc++] = h;
            }
            if (!nc)
                continue;
            ev = ef_ev(x->kind == INJ_RANK     ? TIDE_EV_RANK_FAILED
                       : x->kind == INJ_EXPIRE ? TIDE_EV_JOB_EXPIRED
                                               : TIDE_EV_JOB_CANCEL);
            ev.job = cand[rint_(&ctx->r, 0, nc - 1)];
            if (x->kind == INJ_CANCEL) {
                int i = job_index(w, ev.job, f);
                assert_true(i >= 0);
                ctx->cancelled[i] = 1;
            }
            break;
        }
        default: { /* a live replica dies */
            int32_t cand[256];
            int nc = 0;
            for (int g = 0; g < f->ngpus && nc < 256; g++)
                if (f->okind[g] == 2) {
                    int dup = 0;
                    for (int k = 0; k < nc; k++)
                        dup |= cand[k] == f->oid[g];
                    if (!dup)
                        cand[nc++] = f->oid[g];
                }
            if (!nc)
                continue;
            ev = ef_ev(TIDE_EV_REPLICA_FAILED);
            ev.replica = cand[rint_(&ctx->r, 0, nc - 1)];
            break;
        }
        }
        ctx->injected++;
        ef_step(f, t, &ev, 1);
    }
}

/* A checkpoint the engine asked for (the job is reclaiming) sometimes never
 * commits: the world's report is swallowed, the deadline must act. */
static int hang_filter(ef_t *f, const tide_event_t *ev, void *vctx)
{
    run_ctx_t *ctx = vctx;
    if (ev->kind != TIDE_EV_CKPT_COMMITTED || ctx->w->hang <= 0)
        return 1;
    tide_job_info_t ji;
    if (tide_engine_job(f->e, ev->job, &ji) != 0 || ji.state != TIDE_JOB_RECLAIMING)
        return 1;
    return !rchance(&ctx->r, ctx->w->hang);
}

/* ------------------------------------------------------------ one run */

static uint64_t log_hash(const ef_t *f)
{
    uint64_t h = 1469598103934665603ULL;
#define MIX(x)                                                                   \
    do {                                                                         \
        h ^= (uint64_t)(x);                                                      \
        h *= 1099511628211ULL;                                                   \
    } while (0)
    for (size_t i = 0; i < f->nlog; i++) {
        const ef_act_t *x = &f->log[i];
        MIX(x->t);
        MIX(x->a.kind);
        MIX(x->a.reason);
        MIX(x->a.job);
        MIX(x->a.service);
        MIX(x->a.replica);
        MIX(x->a.lease);
        MIX(x->a.width);
        MIX(x->a.n_gpus);
        MIX(x->a.deadline);
        uint64_t v;
        memcpy(&v, &x->a.value, sizeof v);
        MIX(v);
        if (x->a.gpu_off != (size_t)-1)
            for (int k = 0; k < x->a.n_gpus; k++)
                MIX(ef_gpus(f, x)[k]);
    }
#undef MIX
    return h;
}

static void end_checks(ef_t *f, const workload_t *w, const run_ctx_t *ctx)
{
    const char *tag = f->tag;
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    /* facts: each job finished at most once */
    for (size_t i = 0; i < f->nfin; i++)
        for (size_t k = i + 1; k < f->nfin; k++)
            if (f->fin[i] == f->fin[k])
                fail_msg("%s: job %d reported finished twice", tag, f->fin[i]);
    int n_done = 0, n_queued = 0, n_running = 0, n_submitted = 0;
    for (int i = 0; i < w->n_jobs; i++) {
        int32_t h = tide_engine_job_find(f->e, w->jobs[i].id);
        int due = 0;
        for (size_t k = 0; k < w->n_in; k++)
            due |= w->in[k].ev.kind == TIDE_EV_JOB_SUBMIT && w->in[k].spec.id == w->jobs[i].id;
        if (!due)
            continue;
        if (h < 0)
            fail_msg("%s: job %s was submitted but is unknown", tag, w->jobs[i].id);
        n_submitted++;
        tide_job_info_t ji = ef_info(f, h);
        int fin = 0;
        for (size_t k = 0; k < f->nfin; k++)
            fin |= f->fin[k] == h;
        int32_t gpus[512];
        int held = ef_job_gpus(f, h, gpus);
        const char *sn = tide_job_state_name(ji.state);
        if (ctx->cancelled[i]) {
            if (ji.state != TIDE_JOB_CANCELLED)
                fail_msg("%s: job %s cancelled but %s", tag, ji.spec->id, sn);
        } else if (fin) {
            if (ji.state != TIDE_JOB_DONE)
                fail_msg("%s: job %s finished but %s", tag, ji.spec->id, sn);
            if (fabs(ji.progress - (double)ji.spec->duration_s) > 1e-6)
                fail_msg("%s: job %s done at progress %.3f of %lld", tag, ji.spec->id,
                         ji.progress, (long long)ji.spec->duration_s);
        } else if (ji.state != TIDE_JOB_QUEUED && ji.state != TIDE_JOB_RUNNING &&
                   ji.state != TIDE_JOB_RECLAIMING) {
            fail_msg("%s: job %s is %s without a finish or cancel", tag, ji.spec->id, sn);
        }
        int running = ji.state == TIDE_JOB_RUNNING || ji.state == TIDE_JOB_RECLAIMING;
        if (running) {
            n_running++;
            if (ji.width < ji.spec->dp_min || ji.width > ji.dp_max ||
                held != ji.width * ji.spec->gang_gpus)
                fail_msg("%s: running job %s holds %d GPUs at width %d (gang %d)", tag,
                         ji.spec->id, held, ji.width, ji.spec->gang_gpus);
        } else if (held) {
            fail_msg("%s: job %s holds %d GPUs while %s", tag, ji.spec->id, held, sn);
        }
        if (ji.state == TIDE_JOB_QUEUED)
            n_queued++;
        if (ji.state == TIDE_JOB_DONE)
            n_done++;
        if ((ji.state == TIDE_JOB_DONE || ji.state == TIDE_JOB_CANCELLED) &&
            (ji.finished < ji.submitted || ji.finished > st.now))
            fail_msg("%s: job %s finished at %lld", tag, ji.spec->id, (long long)ji.finished);
        if (ji.progress > (double)ji.spec->duration_s + 1e-6 || ji.committed > ji.progress + 1e-6)
            fail_msg("%s: job %s progress %.3f committed %.3f duration %lld", tag, ji.spec->id,
                     ji.progress, ji.committed, (long long)ji.spec->duration_s);
        if (ji.lost_gpu_s < 0)
            fail_msg("%s: job %s lost %.3f GPU-s", tag, ji.spec->id, ji.lost_gpu_s);
        /* the world agrees on who runs */
        tide_world_job_t wj;
        int active = tide_world_job(f->w, h, &wj) == 0 && wj.active;
        if (active != running)
            fail_msg("%s: job %s: engine says %s, world says %s", tag, ji.spec->id, sn,
                     active ? "active" : "inactive");
        if (running && wj.width != ji.width)
            fail_msg("%s: job %s: engine width %d, world width %d", tag, ji.spec->id, ji.width,
                     wj.width);
    }
    if (st.jobs_submitted != n_submitted || st.jobs_completed != n_done ||
        st.jobs_queued != n_queued || st.jobs_running != n_running)
        fail_msg("%s: counters submitted/completed/queued/running %d/%d/%d/%d, states say "
                 "%d/%d/%d/%d",
                 tag, st.jobs_submitted, st.jobs_completed, st.jobs_queued, st.jobs_running,
                 n_submitted, n_done, n_queued, n_running);
    /* every GPU owned by a job belongs to a running job */
    for (int g = 0; g < f->ngpus; g++) {
        int32_t own;
        if (tide_engine_gpu_owner(f->e, g, &own) == 1) {
            tide_job_info_t ji = ef_info(f, own);
            if (ji.state != TIDE_JOB_RUNNING && ji.state != TIDE_JOB_RECLAIMING)
                fail_msg("%s: GPU %d held by job %s while %s", tag, g, ji.spec->id,
                         tide_job_state_name(ji.state));
        }
    }
    /* GPU-seconds */
    double sum, want;
    ef_gpu_seconds(f, &sum, &want);
    if (fabs(sum - want) > 1e-6 * (want + 1) + 1e-3)
        fail_msg("%s: GPU-seconds %.3f, GPUs x elapsed %.3f", tag, sum, want);
    for (int c = 0; c < TIDE_C_COUNT; c++)
        for (int s = 0; s < TIDE_S_COUNT; s++)
            for (int k = 0; k < TIDE_T_COUNT; k++)
                if (st.gpu_s[c][s][k] < -1e-6 * (want + 1))
                    fail_msg("%s: negative GPU-seconds %.3f in %s/%s/%s", tag, st.gpu_s[c][s][k],
                             tide_class_name(c), tide_state_name(s), tide_tier_name(k));
    /* tiers: C is exactly what training held under leases, A exactly the
     * healthy GPUs of the reserve over time (it follows node failures) */
    double tier_c = 0, tier_a = 0;
    for (int c = 0; c < TIDE_C_COUNT; c++)
        for (int s = 0; s < TIDE_S_COUNT; s++) {
            tier_c += st.gpu_s[c][s][TIDE_T_C];
            tier_a += st.gpu_s[c][s][TIDE_T_A];
        }
    double tol = 1e-6 * (want + 1) + 1e-3;
    if (fabs(tier_c - st.borrowed_gpu_s) > tol)
        fail_msg("%s: Tier C cells hold %.3f GPU-s, training borrowed %.3f under leases", tag,
                 tier_c, st.borrowed_gpu_s);
    if (fabs(tier_a - f->tier_a_gpu_s) > tol)
        fail_msg("%s: Tier A cells hold %.3f GPU-s, the healthy reserve %.3f", tag, tier_a,
                 f->tier_a_gpu_s);
    if (st.tier_a_short_gpus < 0 || st.tier_a_breach_gpu_s < 0 ||
        (st.tier_a_target_gpus == 0 && st.tier_a_breach_gpu_s > 0))
        fail_msg("%s: Tier A breach %.3f GPU-s (short %d of %d)", tag, st.tier_a_breach_gpu_s,
                 st.tier_a_short_gpus, st.tier_a_target_gpus);
    if (st.now != w->horizon)
        fail_msg("%s: ended at %lld, horizon %lld", tag, (long long)st.now, (long long)w->horizon);
}

typedef struct totals {
    long runs, steps, actions, injected, starts, stops, ckpts, done;
    long prio_notices, quota_notices, deadline_stops, dropped, live;
    long shadows;
} totals_t;

/* One run; with shadow_at > 0 the engine is snapshotted before that step and
 * a restored copy follows it (engine_fixture.h: identical actions, identical
 * state at the end). */
static uint64_t run_one(const workload_t *w, const char *policy, totals_t *tot, long shadow_at,
                        long shadow_every)
{
    tide_config_t cfg = ef_cfg(policy);
    cfg.check_invariants = 1;
    tide_error_t err = {0};
    ef_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->c = tide_cluster_copy(w->c);
    f->e = tide_engine_create(w->c, &cfg, &err);
    if (!f->e)
        fail_msg("seed %llu policy %s: %s", (unsigned long long)w->seed, policy, err.msg);
    f->ngpus = w->n_gpus;
    ef_init_tables(f, policy);
    snprintf(f->tag, sizeof f->tag, "seed %llu policy %s cluster %s:", (unsigned long long)w->seed,
             policy, w->cluster);
    for (int s = 0; s < w->n_svc; s++)
        if (tide_engine_add_service(f->e, &w->svc[s], &err) < 0)
            fail_msg("%s service: %s", f->tag, err.msg);
    for (int t = 0; w->use_teams && t < 3; t++)
        if (tide_engine_set_team(f->e, &w->team_spec[t], &err) < 0)
            fail_msg("%s team: %s", f->tag, err.msg);
    run_ctx_t ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.w = w;
    ctx.r.s = w->seed ^ 0xabcdef;
    for (int k = 0; k <= MAXJ; k++)
        ctx.ckpt_deadline[k] = -1;
    f->filter = hang_filter;
    f->filter_ctx = &ctx;
    f->shadow_at = shadow_at;
    f->shadow_every = shadow_every;
    ef_run(f, w->in, w->n_in, w->horizon, inject_hook, &ctx);
    end_checks(f, w, &ctx);
    if (shadow_at > 0 && shadow_at <= f->steps && !ef_shadow_finish(f))
        fail_msg("%s: no snapshot was taken before step %ld", f->tag, shadow_at);
    if (tot)
        tot->shadows += f->shadows;
    uint64_t h = log_hash(f);
    if (tot) {
        tot->runs++;
        tot->steps += f->steps;
        tot->actions += (long)f->nlog;
        tot->injected += ctx.injected;
        tot->starts += (long)ef_count(f, 0, TIDE_ACT_JOB_START, -1, -1);
        tot->stops += (long)ef_count(f, 0, TIDE_ACT_JOB_STOP, -1, -1);
        tot->ckpts += (long)ef_count(f, 0, TIDE_ACT_JOB_CKPT, -1, -1);
        tot->prio_notices += (long)ef_count(f, 0, TIDE_ACT_JOB_CKPT, TIDE_R_PRIORITY, -1);
        tot->quota_notices += (long)ef_count(f, 0, TIDE_ACT_JOB_CKPT, TIDE_R_QUOTA, -1);
        tot->deadline_stops += (long)ef_count(f, 0, TIDE_ACT_JOB_STOP, TIDE_R_DEADLINE, -1);
        tot->dropped += f->dropped;
        tot->live += ctx.live_checks;
        tide_stats_t st;
        tide_engine_stats(f->e, &st);
        tot->done += st.jobs_completed;
    }
    ef_free(f);
    return h;
}

/* Fewer seeds under AddressSanitizer (about 8x slower), same coverage kinds. */
#if defined(__SANITIZE_ADDRESS__)
#define DEFAULT_SEEDS 120
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DEFAULT_SEEDS 120
#endif
#endif
#ifndef DEFAULT_SEEDS
#define DEFAULT_SEEDS 300
#endif

static int n_seeds(void)
{
    const char *s = getenv("TIDE_PROPERTY_SEEDS");
    int n = s ? atoi(s) : 0;
    return n > 0 ? n : DEFAULT_SEEDS;
}

static void test_random_workloads(void **state)
{
    (void)state;
    totals_t tot = {0};
    int n = n_seeds();
    for (int seed = 1; seed <= n; seed++) {
        workload_t *w = malloc(sizeof *w);
        make_workload(w, (uint64_t)seed);
        for (const char *const *p = tide_policy_names(); *p; p++)
            run_one(w, *p, &tot, 0, 0);
        free_workload(w);
        free(w);
    }
    printf("property: %ld runs, %ld steps, %ld actions (%ld starts, %ld stops, %ld notices "
           "of which %ld priority, %ld quota; %ld deadline stops), %ld injected events, %ld commits "
           "swallowed, %ld jobs done, %ld live checks\n",
           tot.runs, tot.steps, tot.actions, tot.starts, tot.stops, tot.ckpts, tot.prio_notices,
           tot.quota_notices, tot.deadline_stops, tot.injected, tot.dropped, tot.done, tot.live);
    /* the workloads exercise every path checked */
    assert_true(tot.starts > tot.runs);
    assert_true(tot.stops > 0 && tot.ckpts > 0 && tot.injected > 0 && tot.done > 0);
    if (n >= 100)
        assert_true(tot.prio_notices > 0 && tot.deadline_stops > 0 && tot.dropped > 0);
}

/* Snapshot and restore: for random workloads under every policy, an engine
 * snapshotted at a random step and restored takes every later step exactly
 * as the original (same actions, same next wake) and ends in the same state
 * (equal snapshot bytes); the original's own actions are unchanged. A second
 * run does the same every few steps (a state that matters only briefly, as
 * a pending notice, is caught while it lasts). */
static void test_snapshot_restore(void **state)
{
    (void)state;
    int n = n_seeds() / 5 > 8 ? n_seeds() / 5 : 8;
    long shadows = 0;
    rng_t r = {.s = 0x5eed};
    for (int seed = 1; seed <= n; seed++) {
        workload_t *w = malloc(sizeof *w);
        make_workload(w, (uint64_t)seed);
        for (const char *const *p = tide_policy_names(); *p; p++) {
            totals_t t0 = {0};
            uint64_t a = run_one(w, *p, &t0, 0, 0);
            long at = 1 + (long)(rnext(&r) % (uint64_t)(t0.steps > 0 ? t0.steps : 1));
            totals_t t1 = {0};
            if (run_one(w, *p, &t1, at, 0) != a)
                fail_msg("seed %d policy %s: taking a snapshot changed the actions", seed, *p);
            /* and again every few steps all along the run */
            long every = 10 + (long)(rnext(&r) % 90);
            if (run_one(w, *p, &t1, 1 + (long)(rnext(&r) % (uint64_t)every), every) != a)
                fail_msg("seed %d policy %s: taking snapshots changed the actions", seed, *p);
            shadows += t1.shadows;
        }
        free_workload(w);
        free(w);
    }
    printf("snapshot: %ld engines restored from a snapshot at a random step and run on\n",
           shadows);
    assert_true(shadows > 0);
}

static void test_determinism(void **state)
{
    (void)state;
    for (int seed = 1; seed <= 12; seed++) {
        workload_t *w = malloc(sizeof *w);
        make_workload(w, (uint64_t)seed);
        for (const char *const *p = tide_policy_names(); *p; p++) {
            uint64_t a = run_one(w, *p, NULL, 0, 0);
            uint64_t b = run_one(w, *p, NULL, 0, 0);
            if (a != b)
                fail_msg("seed %d policy %s: identical inputs gave different actions", seed, *p);
        }
        free_workload(w);
        free(w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_workloads),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_snapshot_restore),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
