/* Shared helpers for the engine tests (test_engine_*.c, test_lookahead.c,
 * test_property.c). Header-only: every helper is static and may go unused.
 *
 * An ef_t wraps one engine on a small cluster and:
 *  - steps it (asserting success and tide_engine_check after every step),
 *  - keeps a log of every action with its time and GPU ids,
 *  - replays the action stream into its own GPU ownership table and checks it
 *    against the engine (no GPU double-booked, no training on Tier A, START
 *    only for jobs that hold nothing, STOP only for jobs that hold GPUs),
 *  - optionally drives a simulated world (src/sim/world.h) with the same loop
 *    as src/sim/sim.c (ef_run).
 * Include <stdarg.h>, <stddef.h>, <setjmp.h>, <stdint.h>, <cmocka.h> first. */
#ifndef TIDE_TEST_ENGINE_FIXTURE_H
#define TIDE_TEST_ENGINE_FIXTURE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "world/world.h"
#include "tide/cluster.h"
#include "tide/engine.h"

#define EF_FN static __attribute__((unused))

/* ------------------------------------------------------------ action log */

typedef struct ef_act {
    tide_time_t t;
    tide_action_t a;   /* a.gpu_off indexes ef_t.lgpus */
} ef_act_t;

/* A timed input for ef_run (a job submit carries its own spec copy). */
typedef struct ef_input {
    tide_time_t t;
    tide_event_t ev;
    tide_job_spec_t spec;
} ef_input_t;

typedef struct ef ef_t;
/* Called by ef_run once per time point after the engine and world settled
 * at t; it may step the engine again at t (ef_step). */
typedef void (*ef_hook_fn)(ef_t *f, tide_time_t t, void *ctx);
/* Fault injection on the world's reports: return 0 to drop the event. */
typedef int (*ef_filter_fn)(ef_t *f, const tide_event_t *ev, void *ctx);

struct ef {
    tide_cluster_t *c;
    tide_engine_t *e;
    tide_world_t *w;
    tide_actions_t acts;
    tide_time_t now;
    int stepped;
    int ngpus;
    /* log */
    ef_act_t *log;
    size_t nlog, caplog;
    int32_t *lgpus;
    size_t nlgpus, caplgpus;
    size_t last;          /* first log index of the last step */
    /* ownership replayed from the action stream */
    uint8_t *okind;       /* 0 free, 1 job, 2 replica */
    int32_t *oid;
    int track;            /* 1: replay + compare with the engine after each step */
    int *gdom;            /* domain of each GPU */
    int *dsize;           /* GPUs of each domain */
    int *notice;          /* per job: reason of the pending checkpoint notice, 0 = none */
    size_t nnotice;
    const char *policy;
    int check;            /* 1: tide_engine_check after each step */
    char viol[512];       /* first tracking violation ("" = none) */
    long steps;
    /* JOB_FINISHED facts fed to the engine, in order */
    int32_t *fin;
    size_t nfin, capfin;
    char tag[160];        /* prefix of failure messages (e.g. "seed 7 policy elastic") */
    /* ef_run state */
    ef_filter_fn filter;  /* applied to the world's events (NULL = none) */
    void *filter_ctx;
    long dropped;
    size_t in_next;
    tide_event_t *ev;
    size_t nev, capev;
    /* Tier A: healthy reserve GPUs integrated over the steps (nodes followed
     * from the NODE_FAILED / NODE_RECOVERED events fed to the engine) */
    unsigned char *node_down;
    int tier_a_now;
    double tier_a_gpu_s;
    /* snapshot check: before step shadow_at (1-based; 0 = off) the engine is
     * snapshotted and restored into shadow, which then takes every step the
     * engine takes with the same inputs: their actions must be identical, and
     * ef_shadow_finish compares their snapshots; with shadow_every > 0 the
     * states are compared and a new shadow restored every shadow_every steps */
    long shadow_at, shadow_every;
    long shadows;          /* shadows restored */
    tide_engine_t *shadow;
    tide_actions_t sacts;
};

EF_FN void ef_grow(void **p, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap)
        return;
    size_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * sz);
    if (!q)
        abort();
    *p = q;
    *cap = n;
}

EF_FN tide_event_t ef_ev(int kind)
{
    tide_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    ev.job = ev.service = ev.replica = ev.node = -1;
    return ev;
}

EF_FN tide_config_t ef_cfg(const char *policy)
{
    tide_config_t cfg;
    tide_config_default(&cfg);
    cfg.policy = policy;
    cfg.check_invariants = 1;
    return cfg;
}

/* Owner tables and topology maps (c, e and ngpus set). */
EF_FN void ef_init_tables(ef_t *f, const char *policy)
{
    f->okind = calloc((size_t)f->ngpus, 1);
    f->oid = malloc((size_t)f->ngpus * sizeof *f->oid);
    f->gdom = malloc((size_t)f->ngpus * sizeof *f->gdom);
    f->dsize = calloc((size_t)tide_cluster_domains(f->c) + 1, sizeof *f->dsize);
    for (int g = 0; g < f->ngpus; g++)
        f->oid[g] = -1;
    for (int n = 0; n < tide_cluster_nodes(f->c); n++) {
        tide_node_info_t ni;
        tide_cluster_node(f->c, n, &ni);
        for (int g = ni.first_gpu; g < ni.first_gpu + ni.gpus; g++)
            f->gdom[g] = ni.domain;
        f->dsize[ni.domain] += ni.gpus;
    }
    f->policy = policy;
    f->track = 1;
    f->check = 1;
    tide_actions_init(&f->acts);
}

/* New fixture on cluster spec `cl` with config cfg (NULL = default elastic). */
EF_FN ef_t *ef_new(const char *cl, const tide_config_t *cfg)
{
    ef_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    tide_error_t err = {0};
    f->c = tide_cluster_parse(cl, &err);
    if (!f->c)
        fail_msg("cluster %s: %s", cl, err.msg);
    tide_config_t def = ef_cfg("elastic");
    f->e = tide_engine_create(f->c, cfg ? cfg : &def, &err);
    if (!f->e)
        fail_msg("engine: %s", err.msg);
    f->ngpus = tide_cluster_gpus(f->c);
    ef_init_tables(f, cfg ? cfg->policy : "elastic");
    return f;
}

EF_FN void ef_free(ef_t *f)
{
    if (!f)
        return;
    tide_world_destroy(f->w);
    tide_actions_free(&f->acts);
    tide_engine_destroy(f->e);
    tide_actions_free(&f->sacts);
    tide_engine_destroy(f->shadow);
    tide_cluster_destroy(f->c);
    free(f->log);
    free(f->lgpus);
    free(f->okind);
    free(f->oid);
    free(f->ev);
    free(f->node_down);
    free(f->fin);
    free(f->gdom);
    free(f->dsize);
    free(f->notice);
    free(f);
}

/* Attach a simulated world (actions are then enacted after each step). */
EF_FN void ef_world(ef_t *f)
{
    if (!f->w)
        f->w = tide_world_create(f->e);
}

EF_FN int ef_service_full(ef_t *f, const tide_service_spec_t *s)
{
    tide_error_t err = {0};
    int idx = tide_engine_add_service(f->e, s, &err);
    if (idx < 0)
        fail_msg("service %s: %s", s->name, err.msg);
    return idx;
}

EF_FN int ef_service(ef_t *f, const char *name, int tp, double rps, int min_rep, tide_time_t warmup)
{
    tide_service_spec_t s = {.name = name, .gpus_per_replica = tp, .replica_rps = rps,
                             .min_replicas = min_rep, .warmup_s = warmup};
    return ef_service_full(f, &s);
}

/* A job spec (team "t", checkpoint every 1800 s, ckpt 60 s, restore 120 s). */
EF_FN tide_job_spec_t ef_job(const char *id, int prio, int gpus, int gang, int dp_min,
                             tide_time_t duration)
{
    tide_job_spec_t j = {.id = id, .team = "t", .priority = prio, .gpus = gpus,
                         .gang_gpus = gang, .dp_min = dp_min, .duration_s = duration,
                         .ckpt_interval_s = 1800, .ckpt_s = 60, .restore_s = 120};
    return j;
}

/* ------------------------------------------------------------ tracking */

static void ef_violate(ef_t *f, const char *fmt, ...) __attribute__((format(printf, 2, 3), unused));
static void ef_violate(ef_t *f, const char *fmt, ...)
{
    if (f->viol[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->viol, sizeof f->viol, fmt, ap);
    va_end(ap);
}

EF_FN int ef_holds(const ef_t *f, int kind, int32_t id)
{
    int n = 0;
    for (int g = 0; g < f->ngpus; g++)
        if (f->okind[g] == kind && f->oid[g] == id)
            n++;
    return n;
}

EF_FN void ef_release_all(ef_t *f, int kind, int32_t id)
{
    for (int g = 0; g < f->ngpus; g++)
        if (f->okind[g] == kind && f->oid[g] == id) {
            f->okind[g] = 0;
            f->oid[g] = -1;
        }
}

EF_FN void ef_take(ef_t *f, tide_time_t t, int kind, int32_t id, const int32_t *gpus, int n,
                   const char *what)
{
    for (int k = 0; k < n; k++) {
        int g = gpus[k];
        if (g < 0 || g >= f->ngpus) {
            ef_violate(f, "t=%lld %s: GPU id %d out of range", (long long)t, what, g);
            continue;
        }
        if (f->okind[g] != 0 && !(f->okind[g] == kind && f->oid[g] == id))
            ef_violate(f, "t=%lld %s %d: GPU %d already held by %s %d", (long long)t, what, id, g,
                       f->okind[g] == 1 ? "job" : "replica", f->oid[g]);
        if (kind == 1 && tide_engine_gpu_zone(f->e, g) == 'A')
            ef_violate(f, "t=%lld %s %d: training job given Tier A GPU %d", (long long)t, what, id,
                       g);
        f->okind[g] = (uint8_t)kind;
        f->oid[g] = id;
    }
}

/* GPU list of `n` GPUs in gangs of `gang`: no duplicate, each gang inside one
 * domain, or on whole domains when larger than its first domain. */
EF_FN void ef_check_shape(ef_t *f, tide_time_t t, const char *what, int32_t id, const int32_t *gp,
                          int n, int gang)
{
    if (gang < 1 || n % gang) {
        ef_violate(f, "t=%lld %s %d: %d GPUs is not whole gangs of %d", (long long)t, what, id, n,
                   gang);
        return;
    }
    for (int i = 0; i < n; i++)
        for (int k = i + 1; k < n; k++)
            if (gp[i] == gp[k])
                ef_violate(f, "t=%lld %s %d: GPU %d listed twice", (long long)t, what, id, gp[i]);
    for (int k = 0; k < n; k += gang) {
        const int32_t *x = gp + k;
        if (x[0] < 0 || x[0] >= f->ngpus)
            return;
        int d0 = f->gdom[x[0]];
        if (gang <= f->dsize[d0]) {
            for (int i = 1; i < gang; i++)
                if (x[i] < 0 || x[i] >= f->ngpus || f->gdom[x[i]] != d0)
                    ef_violate(f, "t=%lld %s %d: gang split across domains (GPUs %d, %d)",
                               (long long)t, what, id, x[0], x[i]);
        } else {
            for (int i = 0; i < gang; i++) {
                if (x[i] < 0 || x[i] >= f->ngpus)
                    continue;
                int d = f->gdom[x[i]], cnt = 0;
                for (int j = 0; j < gang; j++)
                    cnt += x[j] >= 0 && x[j] < f->ngpus && f->gdom[x[j]] == d;
                if (cnt != f->dsize[d])
                    ef_violate(f, "t=%lld %s %d: large gang takes %d of the %d GPUs of domain %d",
                               (long long)t, what, id, cnt, f->dsize[d], d);
            }
        }
    }
}

EF_FN int *ef_notice_slot(ef_t *f, int32_t job)
{
    if (job < 0)
        return NULL;
    if ((size_t)job >= f->nnotice) {
        size_t n = f->nnotice ? f->nnotice : 16;
        while (n <= (size_t)job)
            n *= 2;
        f->notice = realloc(f->notice, n * sizeof *f->notice);
        memset(f->notice + f->nnotice, 0, (n - f->nnotice) * sizeof *f->notice);
        f->nnotice = n;
    }
    return &f->notice[job];
}

EF_FN int ef_has_event(const tide_event_t *ev, size_t nev, int kind, int32_t job)
{
    for (size_t i = 0; i < nev; i++)
        if (ev[i].kind == kind && (job < 0 || ev[i].job == job))
            return 1;
    return 0;
}

/* The step returns the job's lease at or after its latest return. */
EF_FN int ef_lease_ran_out(const tide_actions_t *a, int32_t job, tide_time_t t)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i].kind == TIDE_ACT_LEASE_RETURN && a->v[i].job == job && a->v[i].deadline <= t)
            return 1;
    return 0;
}

/* Replay one step: facts that free GPUs without an action, then actions. */
EF_FN void ef_track(ef_t *f, tide_time_t t, const tide_event_t *ev, size_t nev,
                    const tide_actions_t *a)
{
    for (size_t i = 0; i < nev; i++)
        if (ev[i].kind == TIDE_EV_JOB_FINISHED) {
            ef_release_all(f, 1, ev[i].job);
            *ef_notice_slot(f, ev[i].job) = 0;
            ef_grow((void **)&f->fin, &f->capfin, f->nfin + 1, sizeof *f->fin);
            f->fin[f->nfin++] = ev[i].job;
        }
    for (size_t i = 0; i < a->n; i++) {
        const tide_action_t *x = &a->v[i];
        const int32_t *gp = a->gpus + x->gpu_off;
        if (x->kind == TIDE_ACT_JOB_START || x->kind == TIDE_ACT_JOB_RESIZE) {
            tide_job_info_t ji;
            if (tide_engine_job(f->e, x->job, &ji) != 0) {
                ef_violate(f, "t=%lld: %s of unknown job %d", (long long)t,
                           tide_action_name(x->kind), x->job);
            } else {
                ef_check_shape(f, t, tide_action_name(x->kind), x->job, gp, x->n_gpus,
                               ji.spec->gang_gpus);
                if (x->n_gpus != x->width * ji.spec->gang_gpus || x->width < ji.spec->dp_min ||
                    x->width > ji.dp_max)
                    ef_violate(f, "t=%lld: %s job %d: width %d, %d GPUs (gang %d, dp %d..%d)",
                               (long long)t, tide_action_name(x->kind), x->job, x->width,
                               x->n_gpus, ji.spec->gang_gpus, ji.spec->dp_min, ji.dp_max);
            }
        }
        if (x->kind == TIDE_ACT_REPLICA_START) {
            const tide_service_spec_t *sp = tide_engine_service(f->e, x->service);
            if (!sp || x->n_gpus != sp->gpus_per_replica)
                ef_violate(f, "t=%lld: replica %d of service %d with %d GPUs", (long long)t,
                           x->replica, x->service, x->n_gpus);
            else
                ef_check_shape(f, t, "REPLICA_START replica", x->replica, gp, x->n_gpus,
                               x->n_gpus);
        }
        if (x->kind == TIDE_ACT_JOB_CKPT) {
            if (!ef_holds(f, 1, x->job))
                ef_violate(f, "t=%lld: checkpoint notice to job %d that holds nothing",
                           (long long)t, x->job);
            *ef_notice_slot(f, x->job) = x->reason ? x->reason : -1;
        }
        if (x->kind == TIDE_ACT_LEASE_RENEW && x->reason == TIDE_R_NONE)
            *ef_notice_slot(f, x->job) = 0; /* the notice was withdrawn (need gone) */
        if (x->kind == TIDE_ACT_JOB_STOP) {
            /* every stop is justified by the facts of this step */
            int *nr = ef_notice_slot(f, x->job);
            int ok = 1;
            switch (x->reason) {
            case TIDE_R_RECLAIM:
            case TIDE_R_PRIORITY:
            case TIDE_R_WINDOW:
            case TIDE_R_QUOTA:
            case TIDE_R_SCALE: /* graceful: only once the checkpoint is committed
                                  (a scale stop: a job held, tide_engine_job_hold) */
                ok = *nr == x->reason && ef_has_event(ev, nev, TIDE_EV_CKPT_COMMITTED, x->job);
                break;
            case TIDE_R_FAILURE:
                ok = ef_has_event(ev, nev, TIDE_EV_NODE_FAILED, -1) ||
                     ef_has_event(ev, nev, TIDE_EV_RANK_FAILED, x->job);
                break;
            case TIDE_R_CANCEL:
                ok = ef_has_event(ev, nev, TIDE_EV_JOB_CANCEL, x->job);
                break;
            case TIDE_R_POWER: /* caps were not enough for a power budget */
                ok = 1;
                break;
            case TIDE_R_PREEMPT:
                /* the policies that stop training at once for inference */
                ok = f->policy && (!strcmp(f->policy, "preempt") || !strcmp(f->policy, "k8s"));
                break;
            case TIDE_R_DEADLINE: /* a notice went unanswered, the lease ran out, or
                                     the backend expired it */
                ok = *nr != 0 || ef_has_event(ev, nev, TIDE_EV_JOB_EXPIRED, x->job) ||
                     ef_lease_ran_out(a, x->job, t);
                break;
            default:
                ok = 0;
            }
            if (!ok)
                ef_violate(f, "t=%lld: JOB_STOP of job %d with reason %s is not justified by "
                           "this step's facts (pending notice: %s)",
                           (long long)t, x->job, tide_reason_name(x->reason),
                           *nr ? tide_reason_name(*nr) : "none");
            *nr = 0;
        }
        if (x->kind == TIDE_ACT_REPLICA_STOP && x->reason != TIDE_R_SCALE &&
            !(x->reason == TIDE_R_REHEARSAL && ef_has_event(ev, nev, TIDE_EV_REPLICA_READY, -1)) &&
            !(x->reason == TIDE_R_FAILURE && (ef_has_event(ev, nev, TIDE_EV_NODE_FAILED, -1) ||
                                              ef_has_event(ev, nev, TIDE_EV_REPLICA_FAILED, -1))))
            ef_violate(f, "t=%lld: replica %d stopped with reason %s", (long long)t, x->replica,
                       tide_reason_name(x->reason));
        switch (x->kind) {
        case TIDE_ACT_JOB_START:
            if (ef_holds(f, 1, x->job))
                ef_violate(f, "t=%lld: JOB_START of job %d that still holds GPUs", (long long)t,
                           x->job);
            ef_take(f, t, 1, x->job, gp, x->n_gpus, "JOB_START job");
            break;
        case TIDE_ACT_JOB_RESIZE:
            if (!ef_holds(f, 1, x->job))
                ef_violate(f, "t=%lld: JOB_RESIZE of job %d that holds nothing", (long long)t,
                           x->job);
            ef_release_all(f, 1, x->job);
            ef_take(f, t, 1, x->job, gp, x->n_gpus, "JOB_RESIZE job");
            break;
        case TIDE_ACT_JOB_STOP:
            if (!ef_holds(f, 1, x->job))
                ef_violate(f, "t=%lld: JOB_STOP of job %d that holds nothing", (long long)t,
                           x->job);
            ef_release_all(f, 1, x->job);
            break;
        case TIDE_ACT_REPLICA_START:
            if (ef_holds(f, 2, x->replica))
                ef_violate(f, "t=%lld: REPLICA_START of live replica %d", (long long)t,
                           x->replica);
            ef_take(f, t, 2, x->replica, gp, x->n_gpus, "REPLICA_START replica");
            break;
        case TIDE_ACT_REPLICA_STOP:
            ef_release_all(f, 2, x->replica);
            break;
        default:
            break;
        }
    }
    /* the replayed table must agree with the engine's */
    for (int g = 0; g < f->ngpus; g++) {
        int32_t own;
        int k = tide_engine_gpu_owner(f->e, g, &own);
        if (k == 3)
            k = 0; /* a foreign job's (TIDE_EV_FOREIGN): no action gave it out */
        if (k != f->okind[g] || (k && own != f->oid[g])) {
            ef_violate(f, "t=%lld: GPU %d: engine says kind %d owner %d, actions say kind %d owner %d",
                       (long long)t, g, k, own, f->okind[g], f->oid[g]);
            break;
        }
    }
}

/* ------------------------------------------------------------ stepping */

EF_FN void ef_log_step(ef_t *f, tide_time_t t)
{
    f->last = f->nlog;
    for (size_t i = 0; i < f->acts.n; i++) {
        ef_grow((void **)&f->log, &f->caplog, f->nlog + 1, sizeof *f->log);
        ef_act_t *x = &f->log[f->nlog++];
        x->t = t;
        x->a = f->acts.v[i];
        int n = x->a.n_gpus;
        if (x->a.kind == TIDE_ACT_JOB_START || x->a.kind == TIDE_ACT_JOB_RESIZE ||
            x->a.kind == TIDE_ACT_REPLICA_START) {
            ef_grow((void **)&f->lgpus, &f->caplgpus, f->nlgpus + (size_t)n, sizeof *f->lgpus);
            memcpy(f->lgpus + f->nlgpus, f->acts.gpus + x->a.gpu_off, (size_t)n * sizeof(int32_t));
            x->a.gpu_off = f->nlgpus;
            f->nlgpus += (size_t)n;
        } else {
            x->a.gpu_off = (size_t)-1;
        }
    }
}

/* Step without asserting success: returns the engine's rc (err filled). */
/* Follow node failures and count the healthy GPUs in zone A now. */
EF_FN void ef_tier_a_follow(ef_t *f, const tide_event_t *ev, size_t nev)
{
    int nodes = tide_cluster_nodes(f->c);
    if (!f->node_down)
        f->node_down = calloc((size_t)nodes + 1, 1);
    for (size_t i = 0; i < nev; i++)
        if ((ev[i].kind == TIDE_EV_NODE_FAILED || ev[i].kind == TIDE_EV_NODE_RECOVERED) &&
            ev[i].node >= 0 && ev[i].node < nodes)
            f->node_down[ev[i].node] = ev[i].kind == TIDE_EV_NODE_FAILED;
    f->tier_a_now = 0;
    for (int n = 0; n < nodes; n++) {
        tide_node_info_t ni;
        tide_cluster_node(f->c, n, &ni);
        if (!f->node_down[n] && tide_engine_gpu_zone(f->e, ni.first_gpu) == 'A')
            f->tier_a_now += ni.gpus;
    }
}

/* ------------------------------------------------------------ snapshots */

/* Snapshot f->e and restore it into f->shadow (the restored engine's own
 * snapshot must be the same bytes). */
EF_FN void ef_shadow_make(ef_t *f)
{
    size_t n, n2;
    void *b = tide_engine_snapshot(f->e, &n);
    tide_error_t err = {0};
    f->shadow = tide_engine_restore(f->e, b, n, &err);
    if (!f->shadow)
        fail_msg("%s step %ld: restore: %s", f->tag, f->steps + 1, err.msg);
    void *b2 = tide_engine_snapshot(f->shadow, &n2);
    if (n != n2 || memcmp(b, b2, n)) {
        size_t k = 0;
        while (k < n && k < n2 && ((char *)b)[k] == ((char *)b2)[k])
            k++;
        fail_msg("%s step %ld: the restored engine's snapshot differs (%zu and %zu bytes, "
                 "from byte %zu)", f->tag, f->steps + 1, n, n2, k);
    }
    free(b);
    free(b2);
    tide_actions_init(&f->sacts);
    f->shadows++;
}

EF_FN int ef_same_action(const tide_actions_t *x, size_t i, const tide_actions_t *y)
{
    const tide_action_t *a = &x->v[i], *b = &y->v[i];
    if (a->kind != b->kind || a->reason != b->reason || a->job != b->job ||
        a->service != b->service || a->replica != b->replica || a->lease != b->lease ||
        a->width != b->width || a->n_gpus != b->n_gpus || a->deadline != b->deadline ||
        a->credit != b->credit || memcmp(&a->value, &b->value, sizeof a->value))
        return 0;
    /* GPU ids where the action lists them (START, RESIZE, REPLICA_START) */
    int la = a->n_gpus > 0 && a->gpu_off + (size_t)a->n_gpus <= x->ngpus;
    int lb = b->n_gpus > 0 && b->gpu_off + (size_t)b->n_gpus <= y->ngpus;
    return la == lb && (!la || !memcmp(x->gpus + a->gpu_off, y->gpus + b->gpu_off,
                                       (size_t)a->n_gpus * sizeof *x->gpus));
}

/* The shadow takes the step the engine took; same return, same actions. */
EF_FN void ef_shadow_step(ef_t *f, int rc, tide_time_t t, const tide_event_t *ev, size_t nev)
{
    tide_error_t err = {0};
    int src = tide_engine_step(f->shadow, t, ev, nev, &f->sacts, &err);
    if (src != rc)
        fail_msg("%s t=%lld: the restored engine's step returned %d, the engine's %d", f->tag,
                 (long long)t, src, rc);
    int same = f->sacts.n == f->acts.n && f->sacts.next_wake == f->acts.next_wake;
    for (size_t i = 0; same && i < f->acts.n; i++)
        same = ef_same_action(&f->acts, i, &f->sacts);
    if (!same)
        fail_msg("%s t=%lld (snapshot before step %ld): the restored engine decided otherwise "
                 "(%zu actions, the engine %zu)",
                 f->tag, (long long)t, f->shadow_at, f->sacts.n, f->acts.n);
}

/* At the end of a run: the shadow's state is the engine's, byte for byte.
 * Returns 1 when a shadow ran. */
EF_FN int ef_shadow_finish(ef_t *f)
{
    if (!f->shadow)
        return 0;
    size_t n, n2;
    void *a = tide_engine_snapshot(f->e, &n), *b = tide_engine_snapshot(f->shadow, &n2);
    if (n != n2 || memcmp(a, b, n))
        fail_msg("%s: after %ld steps the restored engine's state differs from the engine's",
                 f->tag, f->steps);
    free(a);
    free(b);
    return 1;
}

EF_FN int ef_step_rc(ef_t *f, tide_time_t t, const tide_event_t *ev, size_t nev, tide_error_t *err)
{
    long next = f->steps + 1;
    if (f->shadow && f->shadow_every > 0 && next > f->shadow_at &&
        (next - f->shadow_at) % f->shadow_every == 0) {
        ef_shadow_finish(f); /* same state so far; restore a new one here */
        tide_engine_destroy(f->shadow);
        tide_actions_free(&f->sacts);
        f->shadow = NULL;
    }
    if (f->shadow_at && next >= f->shadow_at && !f->shadow)
        ef_shadow_make(f);
    tide_error_t local = {0};
    if (!err)
        err = &local;
    if (f->stepped && t > f->now)
        f->tier_a_gpu_s += (double)f->tier_a_now * (double)(t - f->now);
    int rc = tide_engine_step(f->e, t, ev, nev, &f->acts, err);
    if (f->shadow)
        ef_shadow_step(f, rc, t, ev, nev);
    ef_tier_a_follow(f, ev, nev);
    f->now = t;
    f->stepped = 1;
    f->steps++;
    ef_log_step(f, t);
    if (f->track)
        ef_track(f, t, ev, nev, &f->acts);
    if (f->check) {
        tide_error_t ce = {0};
        if (tide_engine_check(f->e, &ce) != 0)
            fail_msg("%s t=%lld: tide_engine_check: %s", f->tag, (long long)t, ce.msg);
    }
    if (f->w)
        tide_world_apply(f->w, t, &f->acts);
    return rc;
}

/* Step and assert success and no tracking violation. */
EF_FN void ef_step(ef_t *f, tide_time_t t, const tide_event_t *ev, size_t nev)
{
    tide_error_t err = {0};
    if (ef_step_rc(f, t, ev, nev, &err) != 0)
        fail_msg("%s t=%lld: step failed: %s", f->tag, (long long)t, err.msg);
    if (f->viol[0])
        fail_msg("%s %s", f->tag, f->viol);
}

EF_FN void ef_tick(ef_t *f, tide_time_t t) { ef_step(f, t, NULL, 0); }

/* Step every `dt` seconds from the current time (exclusive) up to `until`
 * (inclusive), with no events. */
EF_FN void ef_ticks(ef_t *f, tide_time_t until, tide_time_t dt)
{
    tide_time_t t = f->stepped ? f->now + dt : 0;
    for (; t <= until; t += dt)
        ef_tick(f, t);
}

EF_FN int32_t ef_submit(ef_t *f, tide_time_t t, const tide_job_spec_t *spec)
{
    tide_event_t ev = ef_ev(TIDE_EV_JOB_SUBMIT);
    ev.job_spec = spec;
    ef_step(f, t, &ev, 1);
    int32_t h = tide_engine_job_find(f->e, spec->id);
    assert_true(h >= 0);
    return h;
}

EF_FN void ef_demand(ef_t *f, tide_time_t t, int service, double rps)
{
    tide_event_t ev = ef_ev(TIDE_EV_DEMAND);
    ev.service = service;
    ev.value = rps;
    ef_step(f, t, &ev, 1);
}

EF_FN void ef_commit(ef_t *f, tide_time_t t, int32_t job, double progress)
{
    tide_event_t ev = ef_ev(TIDE_EV_CKPT_COMMITTED);
    ev.job = job;
    ev.value = progress;
    ef_step(f, t, &ev, 1);
}

EF_FN tide_job_info_t ef_info(const ef_t *f, int32_t job)
{
    tide_job_info_t ji;
    memset(&ji, 0, sizeof ji);
    assert_int_equal(tide_engine_job(f->e, job, &ji), 0);
    return ji;
}

/* ------------------------------------------------------------ log queries */

EF_FN const int32_t *ef_gpus(const ef_t *f, const ef_act_t *x) { return f->lgpus + x->a.gpu_off; }

/* Matches: kind, and reason/job/service when >= 0 (reason -1 = any). */
EF_FN int ef_match(const ef_act_t *x, int kind, int reason, int32_t job)
{
    return x->a.kind == kind && (reason < 0 || x->a.reason == reason) &&
           (job < 0 || x->a.job == job);
}

EF_FN size_t ef_count(const ef_t *f, size_t from, int kind, int reason, int32_t job)
{
    size_t n = 0;
    for (size_t i = from; i < f->nlog; i++)
        n += ef_match(&f->log[i], kind, reason, job);
    return n;
}

/* First matching action at index >= from, or NULL. */
EF_FN const ef_act_t *ef_find(const ef_t *f, size_t from, int kind, int reason, int32_t job)
{
    for (size_t i = from; i < f->nlog; i++)
        if (ef_match(&f->log[i], kind, reason, job))
            return &f->log[i];
    return NULL;
}

/* Last matching action, or NULL. */
EF_FN const ef_act_t *ef_find_last(const ef_t *f, int kind, int reason, int32_t job)
{
    for (size_t i = f->nlog; i-- > 0;)
        if (ef_match(&f->log[i], kind, reason, job))
            return &f->log[i];
    return NULL;
}

/* GPUs the engine says job h holds now (sorted ascending into out). */
EF_FN int ef_job_gpus(const ef_t *f, int32_t h, int32_t *out)
{
    int n = 0;
    for (int g = 0; g < f->ngpus; g++) {
        int32_t own;
        if (tide_engine_gpu_owner(f->e, g, &own) == 1 && own == h)
            out[n++] = g;
    }
    return n;
}

EF_FN int ef_node_of(const ef_t *f, int gpu)
{
    int nn = tide_cluster_nodes(f->c);
    for (int n = 0; n < nn; n++) {
        tide_node_info_t ni;
        tide_cluster_node(f->c, n, &ni);
        if (gpu >= ni.first_gpu && gpu < ni.first_gpu + ni.gpus)
            return n;
    }
    return -1;
}

/* Sum of every GPU-second cell, and the value it must equal. */
EF_FN void ef_gpu_seconds(const ef_t *f, double *sum, double *want)
{
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    double s = 0;
    for (int c = 0; c < TIDE_C_COUNT; c++)
        for (int k = 0; k < TIDE_S_COUNT; k++)
            for (int t = 0; t < TIDE_T_COUNT; t++)
                s += st.gpu_s[c][k][t];
    *sum = s;
    *want = (double)st.cluster_gpus * (double)(st.now - st.start);
}

EF_FN void ef_assert_gpu_seconds(const ef_t *f)
{
    double s, w;
    ef_gpu_seconds(f, &s, &w);
    if (fabs(s - w) > 1e-6 * (w + 1) + 1e-3)
        fail_msg("GPU-seconds do not add up: %.3f counted, %.3f = GPUs x elapsed", s, w);
}

/* ------------------------------------------------------------ driver loop */

/* Gather the world's events due at t and the inputs due; step while there is
 * something (the first pass steps even with nothing when `always`); repeat
 * while the world has events due at t. */
EF_FN void ef_settle(ef_t *f, const ef_input_t *in, size_t n_in, tide_time_t t, int always)
{
    for (int pass = 0;; pass++) {
        f->nev = 0;
        for (;;) {
            ef_grow((void **)&f->ev, &f->capev, f->nev + 64, sizeof *f->ev);
            size_t got = tide_world_pop(f->w, t, f->ev + f->nev, 64);
            size_t keep = f->nev;
            for (size_t i = f->nev; i < f->nev + got; i++) {
                if (f->filter && !f->filter(f, &f->ev[i], f->filter_ctx)) {
                    f->dropped++;
                    continue;
                }
                f->ev[keep++] = f->ev[i];
            }
            f->nev = keep;
            if (got < 64)
                break;
        }
        for (; f->in_next < n_in && in[f->in_next].t <= t; f->in_next++) {
            ef_grow((void **)&f->ev, &f->capev, f->nev + 1, sizeof *f->ev);
            f->ev[f->nev] = in[f->in_next].ev;
            if (f->ev[f->nev].kind == TIDE_EV_JOB_SUBMIT)
                f->ev[f->nev].job_spec = &in[f->in_next].spec;
            f->nev++;
        }
        if ((pass > 0 || !always) && f->nev == 0)
            break;
        if (pass >= 1000)
            fail_msg("%s no progress at t=%lld", f->tag, (long long)t);
        ef_step(f, t, f->ev, f->nev);
        if (tide_world_next(f->w) > t)
            break;
    }
}

/* The loop of src/sim/sim.c: at each time point gather the world's events and
 * the inputs due, step, enact; repeat while the world has events due now;
 * then move to the earliest of: next input, world event, engine wake, until.
 * Inputs must be sorted by time. Runs from time 0 (or from the next due time
 * after the fixture's last step) to `until` inclusive. The hook, if any, runs
 * once per time point after the engine settled; when it steps, the world's
 * answers at t are gathered again. */
EF_FN void ef_run(ef_t *f, const ef_input_t *in, size_t n_in, tide_time_t until, ef_hook_fn hook,
                  void *ctx)
{
    ef_world(f);
    tide_time_t t = 0;
    int resume = f->stepped;
    if (resume)
        t = f->now;
    for (;;) {
        ef_settle(f, in, n_in, t, !resume);
        resume = 0;
        if (hook) {
            long before = f->steps;
            hook(f, t, ctx);
            if (f->steps != before)
                ef_settle(f, in, n_in, t, 0);
        }
        if (t >= until)
            break;
        tide_time_t next = until;
        if (f->in_next < n_in && in[f->in_next].t < next)
            next = in[f->in_next].t;
        if (tide_world_next(f->w) < next)
            next = tide_world_next(f->w);
        if (f->acts.next_wake > t && f->acts.next_wake < next)
            next = f->acts.next_wake;
        if (next <= t)
            next = t + 1;
        t = next;
    }
}

/* Seeded test randomness (splitmix64): the next value, and a uniform
 * double in (0, 1). */
EF_FN uint64_t ef_rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

EF_FN double ef_rng_unit(uint64_t *s)
{
    return ((double)(ef_rng_next(s) >> 11) + 0.5) / 9007199254740992.0;
}

/* Build inputs. */
EF_FN void ef_in_push(ef_input_t **v, size_t *n, size_t *cap, ef_input_t x)
{
    ef_grow((void **)v, cap, *n + 1, sizeof **v);
    (*v)[(*n)++] = x;
}

EF_FN ef_input_t ef_in_demand(tide_time_t t, int service, double rps)
{
    ef_input_t x;
    memset(&x, 0, sizeof x);
    x.t = t;
    x.ev = ef_ev(TIDE_EV_DEMAND);
    x.ev.service = service;
    x.ev.value = rps;
    return x;
}

EF_FN ef_input_t ef_in_submit(tide_time_t t, const tide_job_spec_t *spec)
{
    ef_input_t x;
    memset(&x, 0, sizeof x);
    x.t = t;
    x.ev = ef_ev(TIDE_EV_JOB_SUBMIT);
    x.spec = *spec;
    return x;
}

EF_FN int ef_in_cmp(const void *a, const void *b)
{
    const ef_input_t *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return 0;
}

/* Stable sort by time (insertion sort: inputs are small and mostly sorted). */
EF_FN void ef_in_sort(ef_input_t *v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        ef_input_t x = v[i];
        size_t j = i;
        while (j > 0 && ef_in_cmp(&v[j - 1], &x) > 0) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

/* elastic on 4x8 with one 8-GPU service "chat" (10 rps a replica, floor 1:
 * node 0 is Tier A, 300 s warm-up) at 5 rps, the margin frozen at 5% so
 * that replica counts are easy to predict: 5 rps -> 1 replica, 15 -> 2,
 * 25 -> 3, 35 -> 4. The caller frees it (ef_free). */
EF_FN ef_t *ef_elastic4(void)
{
    tide_config_t cfg = ef_cfg("elastic");
    cfg.margin_min = cfg.margin_max = 0.05;
    ef_t *f = ef_new("4x8", &cfg);
    ef_service(f, "chat", 8, 10, 1, 300);
    ef_demand(f, 0, 0, 5);
    return f;
}

#endif
