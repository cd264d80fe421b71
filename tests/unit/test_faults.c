/* Fault injection end to end: each fault of `tide sim --inject` through the
 * real engine, the simulated world and the driver (tide_sim_run) on a small
 * cluster, checked on the outputs (events.csv, timeline.csv, summary.json)
 * and through a step observer; plus the storage model of the world on its
 * own with exact times. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/csv.h"
#include "sim/inject.h"
#include "sim/sim.h"
#include "formats/workload_io.h"
#include "world/world.h"
#include "tide/engine.h"

#define H 3600
#define GPN 8 /* GPUs per node in every cluster here */
#define MAXT(a, b) ((a) > (b) ? (a) : (b))

/* ------------------------------------------------------------ outputs */

typedef struct evrow {
    char policy[16], kind[40], job[32], service[32], reason[16];
    tide_time_t t, deadline; /* deadline -1 = empty */
    int gpus;                /* -1 = empty */
    double value;
    int has_value;
} evrow_t;

typedef struct tlrow {
    char policy[16];
    tide_time_t t;
    double v[32]; /* by column index */
} tlrow_t;

/* A recorded action (observer). */
typedef struct actrec {
    tide_time_t t;
    int kind, reason;
    int32_t job;
    char job_id[32];
    tide_time_t deadline;
    unsigned nodes;          /* bit per node of its GPUs (START / RESIZE) */
    int world_phase;         /* JOB_START: the world's phase right after */
    double world_progress, world_committed;
} actrec_t;

typedef struct obs {
    tide_time_t *steps;
    size_t nsteps, capsteps;
    actrec_t *acts;
    size_t nacts, capacts;
    int tier_a_lent;         /* steps where a job held a Tier A GPU */
    int tier_a_not_serving;  /* steps (after the first) where a Tier A GPU held no replica */
    double p99_ckpt, p99_warm; /* engine samples at the last step */
    size_t n_ckpt, n_warm;
} obs_t;

typedef struct result {
    char dir[64];
    json_t *summary;
    const json_t *pol; /* summary.policies.<policy> (borrowed) */
    evrow_t *ev;
    size_t nev;
    tlrow_t *tl;
    size_t ntl;
    char tlcols[32][32];
    int ntlcols;
    obs_t obs;
} result_t;

static void observe(void *ctx, const tide_sim_step_t *s)
{
    obs_t *o = ctx;
    if (o->nsteps == o->capsteps) {
        o->capsteps = o->capsteps ? 2 * o->capsteps : 256;
        o->steps = realloc(o->steps, o->capsteps * sizeof *o->steps);
    }
    o->steps[o->nsteps++] = s->t;
    for (size_t i = 0; i < s->acts->n; i++) {
        const tide_action_t *a = &s->acts->v[i];
        if (o->nacts == o->capacts) {
            o->capacts = o->capacts ? 2 * o->capacts : 256;
            o->acts = realloc(o->acts, o->capacts * sizeof *o->acts);
        }
        actrec_t *r = &o->acts[o->nacts++];
        memset(r, 0, sizeof *r);
        r->t = s->t;
        r->kind = a->kind;
        r->reason = a->reason;
        r->job = a->job;
        r->deadline = a->deadline;
        tide_job_info_t ji;
        if (a->job >= 0 && tide_engine_job(s->e, a->job, &ji) == 0)
            snprintf(r->job_id, sizeof r->job_id, "%s", ji.spec->id);
        if (a->kind == TIDE_ACT_JOB_START || a->kind == TIDE_ACT_JOB_RESIZE)
            for (int k = 0; k < a->n_gpus; k++)
                r->nodes |= 1u << (s->acts->gpus[a->gpu_off + (size_t)k] / GPN);
        if (a->kind == TIDE_ACT_JOB_START) {
            tide_world_job_t wj;
            assert_int_equal(tide_world_job(s->w, a->job, &wj), 0);
            r->world_phase = wj.phase;
            r->world_progress = wj.progress;
            r->world_committed = wj.committed;
        }
    }
    /* Tier A: never lent to training; once warm, always serving */
    tide_stats_t st;
    tide_engine_stats(s->e, &st);
    int lent = 0, idle_a = 0;
    for (int g = 0; g < st.cluster_gpus; g++) {
        if (tide_engine_gpu_zone(s->e, g) != 'A')
            continue;
        int32_t owner;
        int kind = tide_engine_gpu_owner(s->e, g, &owner);
        lent |= kind == 1;
        idle_a |= kind != 2;
    }
    o->tier_a_lent += lent;
    o->tier_a_not_serving += idle_a && s->t > 0;
    tide_samples_t ck = tide_engine_samples(s->e, TIDE_SAMPLE_CKPT);
    tide_samples_t wu = tide_engine_samples(s->e, TIDE_SAMPLE_WARMUP);
    o->n_ckpt = ck.n;
    o->n_warm = wu.n;
    o->p99_ckpt = tide_quantile(ck.v, ck.n, 0.99);
    o->p99_warm = tide_quantile(wu.v, wu.n, 0.99);
}

static tide_time_t num_or(const char *s, tide_time_t dflt)
{
    return s && *s ? (tide_time_t)strtoll(s, NULL, 10) : dflt;
}

static void copy(char *dst, size_t n, const char *s) { snprintf(dst, n, "%s", s ? s : ""); }

static void load_events(result_t *r)
{
    char path[128];
    snprintf(path, sizeof path, "%s/events.csv", r->dir);
    tide_error_t err;
    tide_csv_t *c = tide_csv_open_file(path, &err);
    assert_non_null(c);
    size_t cap = 0;
    int cp = tide_csv_col(c, "policy"), ct = tide_csv_col(c, "time_s"),
        ck = tide_csv_col(c, "kind"), cj = tide_csv_col(c, "job"),
        cs = tide_csv_col(c, "service"), cg = tide_csv_col(c, "gpus"),
        cr = tide_csv_col(c, "reason"), cd = tide_csv_col(c, "deadline_s"),
        cv = tide_csv_col(c, "value");
    int rc;
    while ((rc = tide_csv_next(c, &err)) > 0) {
        if (r->nev == cap) {
            cap = cap ? 2 * cap : 1024;
            r->ev = realloc(r->ev, cap * sizeof *r->ev);
        }
        evrow_t *e = &r->ev[r->nev++];
        memset(e, 0, sizeof *e);
        copy(e->policy, sizeof e->policy, tide_csv_field(c, cp));
        copy(e->kind, sizeof e->kind, tide_csv_field(c, ck));
        copy(e->job, sizeof e->job, tide_csv_field(c, cj));
        copy(e->service, sizeof e->service, tide_csv_field(c, cs));
        copy(e->reason, sizeof e->reason, tide_csv_field(c, cr));
        e->t = num_or(tide_csv_field(c, ct), -1);
        e->deadline = num_or(tide_csv_field(c, cd), -1);
        e->gpus = (int)num_or(tide_csv_field(c, cg), -1);
        const char *v = tide_csv_field(c, cv);
        e->has_value = v && *v;
        e->value = e->has_value ? strtod(v, NULL) : 0;
    }
    assert_int_equal(rc, 0);
    tide_csv_close(c);
}

static void load_timeline(result_t *r)
{
    char path[128];
    snprintf(path, sizeof path, "%s/timeline.csv", r->dir);
    tide_error_t err;
    tide_csv_t *c = tide_csv_open_file(path, &err);
    assert_non_null(c);
    r->ntlcols = tide_csv_ncols(c);
    assert_true(r->ntlcols <= 32);
    for (int k = 0; k < r->ntlcols; k++)
        copy(r->tlcols[k], sizeof r->tlcols[k], tide_csv_colname(c, k));
    size_t cap = 0;
    int rc;
    while ((rc = tide_csv_next(c, &err)) > 0) {
        if (r->ntl == cap) {
            cap = cap ? 2 * cap : 1024;
            r->tl = realloc(r->tl, cap * sizeof *r->tl);
        }
        tlrow_t *x = &r->tl[r->ntl++];
        memset(x, 0, sizeof *x);
        copy(x->policy, sizeof x->policy, tide_csv_field(c, 0));
        x->t = num_or(tide_csv_field(c, 1), -1);
        for (int k = 2; k < r->ntlcols; k++)
            x->v[k] = strtod(tide_csv_field(c, k), NULL);
    }
    assert_int_equal(rc, 0);
    tide_csv_close(c);
}

/* Value of a timeline column in row x. */
static double tl(const result_t *r, const tlrow_t *x, const char *col)
{
    for (int k = 0; k < r->ntlcols; k++)
        if (!strcmp(r->tlcols[k], col))
            return x->v[k];
    fail_msg("no timeline column %s", col);
    return 0;
}

/* A simulation case. */
typedef struct simcase {
    const char *cluster;
    const tide_service_spec_t *svcs;
    size_t nsvcs;
    const tide_demand_point_t *dem;
    size_t ndem;
    const tide_job_spec_t *jobs;
    size_t njobs;
    const char *policy;
    const char *inject; /* NULL = none */
    tide_time_t horizon;
    uint64_t seed;
    tide_time_t lease_max_s; /* 0 = default */
    const double *ckpt_gb, *weights_gb;
} simcase_t;

static void run_case(const simcase_t *sc, result_t *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "/tmp/tide-test-faults-XXXXXX");
    assert_non_null(mkdtemp(r->dir));
    tide_error_t err = {0, ""};
    tide_cluster_t *c = tide_cluster_parse(sc->cluster, &err);
    assert_non_null(c);
    tide_inject_t inj;
    tide_inject_init(&inj);
    if (sc->inject && tide_inject_parse(&inj, sc->inject, &err) != 0)
        fail_msg("--inject %s: %s", sc->inject, err.msg);
    tide_sim_opts_t o;
    tide_sim_opts_default(&o);
    o.cluster = c;
    o.services = sc->svcs;
    o.n_services = sc->nsvcs;
    o.demand = sc->dem;
    o.n_demand = sc->ndem;
    o.jobs = sc->jobs;
    o.n_jobs = sc->njobs;
    const char *pols[1] = {sc->policy};
    o.policies = pols;
    o.n_policies = 1;
    o.horizon_s = sc->horizon;
    o.seed = sc->seed;
    o.out_dir = r->dir;
    o.check = 1; /* every invariant (Tier A never lent among them) after every step */
    o.inject = &inj;
    o.job_ckpt_gb = sc->ckpt_gb;
    o.service_weights_gb = sc->weights_gb;
    o.observe = observe;
    o.observe_ctx = &r->obs;
    if (sc->lease_max_s)
        o.cfg.lease_max_s = sc->lease_max_s;
    if (tide_sim_run(&o, &err) != 0)
        fail_msg("tide_sim_run: %s", err.msg);
    tide_inject_free(&inj);
    tide_cluster_destroy(c);
    char path[128];
    snprintf(path, sizeof path, "%s/summary.json", r->dir);
    json_error_t je;
    r->summary = json_load_file(path, 0, &je);
    assert_non_null(r->summary);
    r->pol = json_object_get(json_object_get(r->summary, "policies"), sc->policy);
    assert_non_null(r->pol);
    load_events(r);
    load_timeline(r);
    /* the timeline's GPU columns still add up to the cluster in every row */
    int gpus = (int)json_integer_value(json_object_get(r->summary, "cluster_gpus"));
    static const char *const states[] = {"serving", "warming",  "training", "checkpointing",
                                         "restoring", "lost", "idle"};
    for (size_t i = 0; i < r->ntl; i++) {
        double sum = 0;
        for (size_t k = 0; k < sizeof states / sizeof states[0]; k++)
            sum += tl(r, &r->tl[i], states[k]);
        if (fabs(sum - gpus) > 0.05)
            fail_msg("timeline row t=%lld adds up to %.2f GPUs, not %d", (long long)r->tl[i].t,
                     sum, gpus);
    }
}

static void free_result(result_t *r)
{
    DIR *d = opendir(r->dir); /* every output file (the driver may write more than three) */
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            char path[512];
            snprintf(path, sizeof path, "%s/%s", r->dir, de->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(r->dir);
    json_decref(r->summary);
    free(r->ev);
    free(r->tl);
    free(r->obs.steps);
    free(r->obs.acts);
}

/* summary.json number at a dotted path under the policy. */
static double jnum(const result_t *r, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    const json_t *x = r->pol;
    for (char *save = NULL, *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save))
        x = json_object_get(x, k);
    if (!x || !json_is_number(x))
        fail_msg("summary: no number at %s", path);
    return json_number_value(x);
}

static const evrow_t *find_ev(const result_t *r, const char *kind, const char *job,
                              tide_time_t t_min)
{
    for (size_t i = 0; i < r->nev; i++) {
        const evrow_t *e = &r->ev[i];
        if (!strcmp(e->kind, kind) && (!job || !strcmp(e->job, job)) && e->t >= t_min)
            return e;
    }
    return NULL;
}

static size_t count_ev(const result_t *r, const char *kind, tide_time_t from, tide_time_t to)
{
    size_t n = 0;
    for (size_t i = 0; i < r->nev; i++)
        n += !strcmp(r->ev[i].kind, kind) && r->ev[i].t >= from && r->ev[i].t < to;
    return n;
}

static tide_job_spec_t job8(const char *id, tide_time_t submit, tide_time_t duration)
{
    return (tide_job_spec_t){.id = id, .team = "t", .priority = 2, .gpus = 8, .gang_gpus = 8,
                             .dp_min = 1, .submit_s = submit, .duration_s = duration,
                             .ckpt_interval_s = 1800, .ckpt_s = 60, .restore_s = 120};
}

/* ------------------------------------------------------------------ burst */

static void burst_elastic_keeps_tier_a_serving(void **state)
{
    (void)state;
    tide_service_spec_t svc = {.name = "chat", .gpus_per_replica = 8, .replica_rps = 100,
                               .min_replicas = 1, .warmup_s = 300};
    tide_demand_point_t dem[] = {{0, 0, 150}};
    tide_job_spec_t jobs[5];
    static const char *const ids[] = {"a", "b", "c", "d", "e"};
    for (int i = 0; i < 5; i++)
        jobs[i] = job8(ids[i], 0, 5 * 86400);
    simcase_t sc = {.cluster = "6x8", .svcs = &svc, .nsvcs = 1, .dem = dem, .ndem = 1,
                    .jobs = jobs, .njobs = 5, .policy = "elastic",
                    .inject = "burst:2x@30h+2h", .horizon = 2 * 86400, .seed = 1};
    result_t r;
    run_case(&sc, &r);
    /* the fault rows */
    const evrow_t *b0 = find_ev(&r, "fault_burst_start", NULL, 0);
    const evrow_t *b1 = find_ev(&r, "fault_burst_end", NULL, 0);
    assert_non_null(b0);
    assert_non_null(b1);
    assert_int_equal(b0->t, 30 * H);
    assert_int_equal(b0->deadline, 32 * H);
    assert_float_equal(b0->value, 2.0, 1e-9);
    assert_int_equal(b1->t, 32 * H);
    assert_int_equal((int)jnum(&r, "faults.bursts"), 1);
    /* demand doubles exactly over the burst, unforecast */
    double served = 0, demanded = 0, ready_max = 0;
    for (size_t i = 0; i < r.ntl; i++) {
        const tlrow_t *x = &r.tl[i];
        double d = tl(&r, x, "demand_rps"), ready = tl(&r, x, "ready_rps");
        int in = x->t >= 30 * H && x->t < 32 * H;
        assert_float_equal(d, in ? 300 : 150, 1e-9);
        /* the floor part of the demand is always served: Tier A never lets go */
        assert_true(ready >= fmin(d, 100.0));
        if (in) {
            served += fmin(d, ready);
            demanded += d;
            ready_max = fmax(ready_max, ready);
        }
    }
    /* elastic scaled up during the burst (reclaim, checkpoint, warm-up) and
     * served most of it */
    assert_true(ready_max >= 300);
    assert_true(served / demanded > 0.85);
    assert_true(jnum(&r, "inference.slo_attainment") > 0.99);
    size_t notices = 0, starts = 0;
    for (size_t i = 0; i < r.obs.nacts; i++) {
        const actrec_t *a = &r.obs.acts[i];
        if (a->t < 30 * H || a->t >= 32 * H)
            continue;
        notices += a->kind == TIDE_ACT_JOB_CKPT && a->reason == TIDE_R_RECLAIM;
        starts += a->kind == TIDE_ACT_REPLICA_START;
    }
    assert_true(notices >= 1);
    assert_true(starts >= 1);
    /* Tier A: never lent, always serving */
    assert_int_equal(r.obs.tier_a_lent, 0);
    assert_int_equal(r.obs.tier_a_not_serving, 0);
    free_result(&r);
}

/* -------------------------------------------------------------- node-fail */

static void node_fail_restarts_elsewhere(void **state)
{
    (void)state;
    tide_service_spec_t svc = {.name = "chat", .gpus_per_replica = 8, .replica_rps = 100,
                               .min_replicas = 0, .warmup_s = 60};
    tide_demand_point_t dem[] = {{0, 0, 0}};
    tide_job_spec_t jobs[4];
    static const char *const ids[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++)
        jobs[i] = job8(ids[i], 0, 20000);
    /* 5 nodes, 4 busy: find a seed whose failed node holds a job */
    result_t r;
    const evrow_t *stop = NULL;
    int node = -1;
    for (uint64_t seed = 1; seed <= 20 && !stop; seed++) {
        simcase_t sc = {.cluster = "5x8", .svcs = &svc, .nsvcs = 1, .dem = dem, .ndem = 1,
                        .jobs = jobs, .njobs = 4, .policy = "static",
                        .inject = "node-fail:1@2h+1h", .horizon = 86400, .seed = seed};
        run_case(&sc, &r);
        const evrow_t *f = find_ev(&r, "fault_node_fail", NULL, 0);
        assert_non_null(f);
        assert_int_equal(f->t, 2 * H);
        assert_int_equal(f->gpus, 8);
        node = (int)f->value;
        stop = find_ev(&r, "job_stop", NULL, 0);
        if (!stop) {
            /* the idle node failed: nothing else happened */
            assert_float_equal(jnum(&r, "training.gpu_hours_lost"), 0, 1e-9);
            free_result(&r);
        }
    }
    assert_non_null(stop);
    /* the job on the failed node stopped at once, losing its work since the
     * last commit (commits at 1860 s, 3720 s, 5580 s: 7020 - 5400 = 1620 s) */
    assert_int_equal(stop->t, 2 * H);
    assert_string_equal(stop->reason, "failure");
    assert_float_equal(stop->value, 1620, 1e-6);
    assert_float_equal(jnum(&r, "training.gpu_hours_lost"), 1620.0 * 8 / 3600, 1e-6);
    char victim[32];
    snprintf(victim, sizeof victim, "%s", stop->job);
    /* it restarted at once on the spare node, restoring its last commit */
    const actrec_t *restart = NULL;
    for (size_t i = 0; i < r.obs.nacts && !restart; i++) {
        const actrec_t *a = &r.obs.acts[i];
        if (a->kind == TIDE_ACT_JOB_START && !strcmp(a->job_id, victim) && a->t >= 2 * H)
            restart = a;
    }
    assert_non_null(restart);
    assert_int_equal(restart->t, 2 * H);
    assert_int_equal(restart->nodes & (1u << node), 0);
    assert_int_equal(restart->world_phase, TIDE_PHASE_RESTORING);
    assert_float_equal(restart->world_committed, 5400, 1e-9);
    assert_float_equal(restart->world_progress, 5400, 1e-9);
    /* ... and finished later than the others: 120 s restore, 14600 s of work and
     * 8 checkpoints of 60 s after the restart */
    const evrow_t *fin = find_ev(&r, "job_finished", victim, 0);
    assert_non_null(fin);
    assert_int_equal(fin->t, 2 * H + 120 + 14600 + 8 * 60);
    /* the node came back after an hour */
    const evrow_t *rec = find_ev(&r, "fault_node_recover", NULL, 0);
    assert_non_null(rec);
    assert_int_equal(rec->t, 3 * H);
    assert_float_equal(rec->value, node, 0);
    assert_int_equal((int)jnum(&r, "faults.nodes_failed"), 1);
    assert_int_equal((int)jnum(&r, "faults.nodes_recovered"), 1);
    free_result(&r);
}

/* -------------------------------------------------------------- rank-fail */

static void rank_fail_loses_work_since_checkpoint(void **state)
{
    (void)state;
    tide_service_spec_t svc = {.name = "chat", .gpus_per_replica = 8, .replica_rps = 100,
                               .min_replicas = 0, .warmup_s = 60};
    tide_demand_point_t dem[] = {{0, 0, 0}};
    tide_job_spec_t jobs[] = {job8("j1", 0, 10000), job8("j2", 5000, 10000)};
    simcase_t sc = {.cluster = "2x8", .svcs = &svc, .nsvcs = 1, .dem = dem, .ndem = 1,
                    .jobs = jobs, .njobs = 2, .policy = "static",
                    .inject = "rank-fail:j1@3000,rank-fail:j2@100", .horizon = 86400};
    result_t r;
    run_case(&sc, &r);
    /* j1 committed 1800 at 1860; at 3000 it had 2940: 1140 s of work lost */
    const evrow_t *f = find_ev(&r, "fault_rank_fail", "j1", 0);
    assert_non_null(f);
    assert_int_equal(f->t, 3000);
    assert_float_equal(f->value, 1140, 1e-6);
    const evrow_t *stop = find_ev(&r, "job_stop", "j1", 0);
    assert_non_null(stop);
    assert_int_equal(stop->t, 3000);
    assert_string_equal(stop->reason, "failure");
    assert_float_equal(stop->value, 1140, 1e-6);
    assert_float_equal(jnum(&r, "training.gpu_hours_lost"), 1140.0 * 8 / 3600, 1e-6);
    /* requeued and restarted at once from its commit */
    const actrec_t *restart = NULL;
    for (size_t i = 0; i < r.obs.nacts && !restart; i++)
        if (r.obs.acts[i].kind == TIDE_ACT_JOB_START && !strcmp(r.obs.acts[i].job_id, "j1") &&
            r.obs.acts[i].t > 0)
            restart = &r.obs.acts[i];
    assert_non_null(restart);
    assert_int_equal(restart->t, 3000);
    assert_int_equal(restart->world_phase, TIDE_PHASE_RESTORING);
    assert_float_equal(restart->world_committed, 1800, 1e-9);
    /* j2 was not running at 100 s (submitted at 5000): skipped, nothing lost */
    const evrow_t *sk = find_ev(&r, "fault_rank_fail_skipped", "j2", 0);
    assert_non_null(sk);
    assert_int_equal(sk->t, 100);
    assert_int_equal((int)jnum(&r, "faults.rank_failures"), 1);
    assert_int_equal((int)jnum(&r, "faults.rank_failures_skipped"), 1);
    assert_null(find_ev(&r, "job_stop", "j2", 0));
    free_result(&r);
}

static void rank_fail_rate_is_seeded(void **state)
{
    (void)state;
    tide_service_spec_t svc = {.name = "chat", .gpus_per_replica = 8, .replica_rps = 100,
                               .min_replicas = 0, .warmup_s = 60};
    tide_demand_point_t dem[] = {{0, 0, 0}};
    tide_job_spec_t jobs[] = {job8("j1", 0, 40000), job8("j2", 0, 60000),
                              job8("j3", 30000, 30000)};
    const char *inject = "rank-fail-rate:48/day";
    simcase_t sc = {.cluster = "3x8", .svcs = &svc, .nsvcs = 1, .dem = dem, .ndem = 1,
                    .jobs = jobs, .njobs = 3, .policy = "static", .inject = inject,
                    .horizon = 86400, .seed = 7};
    result_t a, b, c;
    run_case(&sc, &a);
    run_case(&sc, &b);
    sc.seed = 8;
    run_case(&sc, &c);
    /* as many failures (or skips) as the schedule has arrivals */
    tide_inject_t inj;
    tide_inject_init(&inj);
    tide_error_t err;
    assert_int_equal(tide_inject_parse(&inj, inject, &err), 0);
    tide_schedule_t s = {0};
    tide_inject_schedule(&inj, 86400, 7, &s);
    assert_true(s.n > 20);
    int fails = (int)jnum(&a, "faults.rank_failures");
    assert_int_equal(fails + (int)jnum(&a, "faults.rank_failures_skipped"), (int)s.n);
    assert_true(fails > 0);
    /* one row per arrival, at its time; every failure hit a running job and
     * stopped it at that time with that loss */
    double lost = 0;
    size_t k = 0;
    for (size_t i = 0; i < a.nev; i++) {
        const evrow_t *e = &a.ev[i];
        if (strncmp(e->kind, "fault_rank_fail", 15) != 0)
            continue;
        assert_true(k < s.n);
        assert_int_equal(e->t, s.v[k++].t);
        if (strcmp(e->kind, "fault_rank_fail") != 0)
            continue;
        const evrow_t *stop = find_ev(&a, "job_stop", e->job, e->t);
        assert_non_null(stop);
        assert_int_equal(stop->t, e->t);
        assert_float_equal(stop->value, e->value, 1e-6);
        lost += e->value * 8;
    }
    assert_int_equal(k, s.n);
    assert_float_equal(jnum(&a, "training.gpu_hours_lost"), lost / 3600, 1e-6);
    /* deterministic per seed */
    assert_int_equal(a.nev, b.nev);
    for (size_t i = 0; i < a.nev; i++)
        assert_memory_equal(&a.ev[i], &b.ev[i], sizeof a.ev[i]);
    int same = a.nev == c.nev;
    for (size_t i = 0; same && i < a.nev; i++)
        same = !memcmp(&a.ev[i], &c.ev[i], sizeof a.ev[i]);
    assert_false(same);
    tide_schedule_free(&s);
    tide_inject_free(&inj);
    free_result(&a);
    free_result(&b);
    free_result(&c);
}

/* --------------------------------------------------------------- ctl-down */

static void ctl_down_backend_expires_leases(void **state)
{
    (void)state;
    tide_service_spec_t svc = {.name = "chat", .gpus_per_replica = 8, .replica_rps = 100,
                               .min_replicas = 1, .warmup_s = 120};
    tide_demand_point_t dem[] = {{0, 0, 50}};
    tide_job_spec_t jobs[] = {job8("a", 0, 50000), job8("b", 0, 50000), job8("c", 0, 50000),
                              job8("late", 9000, 3000)};
    simcase_t sc = {.cluster = "4x8", .svcs = &svc, .nsvcs = 1, .dem = dem, .ndem = 1,
                    .jobs = jobs, .njobs = 4, .policy = "elastic",
                    .inject = "ctl-down@2h+2h", .horizon = 86400, .lease_max_s = H};
    result_t r;
    run_case(&sc, &r);
    const tide_time_t down = 2 * H, up = 4 * H;
    /* tide made no step while down: nothing started, nothing was lent */
    for (size_t i = 0; i < r.obs.nsteps; i++)
        if (r.obs.steps[i] >= down && r.obs.steps[i] < up)
            fail_msg("engine step at t=%lld while tide was down", (long long)r.obs.steps[i]);
    static const char *const actions[] = {"job_start", "job_resize", "ckpt_notice",
                                          "job_stop", "replica_start", "replica_stop",
                                          "lease_grant", "lease_renew", "lease_return"};
    for (size_t k = 0; k < sizeof actions / sizeof actions[0]; k++)
        assert_int_equal(count_ev(&r, actions[k], down, up), 0);
    assert_int_equal(r.obs.tier_a_lent, 0);
    assert_int_equal(r.obs.tier_a_not_serving, 0);
    for (size_t i = 0; i < r.ntl; i++)
        if (r.tl[i].t >= down && r.tl[i].t < up) {
            /* the engine's view is frozen: nothing more lent, Tier A as before */
            assert_float_equal(tl(&r, &r.tl[i], "leased_gpus"), 24, 0.005);
            assert_float_equal(tl(&r, &r.tl[i], "tier_a_gpus"), 8, 0.005);
        }
    const evrow_t *d = find_ev(&r, "fault_ctl_down", NULL, 0);
    const evrow_t *u = find_ev(&r, "fault_ctl_up", NULL, 0);
    assert_non_null(d);
    assert_non_null(u);
    assert_int_equal(d->t, down);
    assert_int_equal(d->deadline, up);
    assert_int_equal(u->t, up);
    /* each leased job: the backend ended it at the latest return it last got
     * before the outage (leases of 1 h run out inside a 2 h outage) */
    static const char *const leased[] = {"a", "b", "c"};
    double lost = 0;
    for (size_t k = 0; k < 3; k++) {
        tide_time_t deadline = -1;
        for (size_t i = 0; i < r.nev && r.ev[i].t < down; i++)
            if ((!strcmp(r.ev[i].kind, "lease_grant") || !strcmp(r.ev[i].kind, "lease_renew")) &&
                !strcmp(r.ev[i].job, leased[k]))
                deadline = r.ev[i].deadline;
        assert_true(deadline > down && deadline < up);
        const evrow_t *x = find_ev(&r, "fault_lease_expired", leased[k], 0);
        assert_non_null(x);
        assert_int_equal(x->t, deadline);
        assert_int_equal(x->deadline, deadline);
        assert_true(x->value > 0); /* the progress the job had reached */
        /* reported when tide came back: the engine stops and requeues it (the
         * loss counted), then starts it again */
        const evrow_t *ex = find_ev(&r, "job_expired", leased[k], 0);
        assert_non_null(ex);
        assert_int_equal(ex->t, up);
        assert_float_equal(ex->value, x->value, 1e-6);
        const evrow_t *stop = find_ev(&r, "job_stop", leased[k], down);
        assert_non_null(stop);
        assert_int_equal(stop->t, up);
        assert_string_equal(stop->reason, "deadline");
        /* the engine counts what the world lost: work since the last commit */
        assert_true(stop->value > 0 && stop->value <= 1800 && stop->value <= x->value);
        lost += stop->value * 8;
        const evrow_t *st = find_ev(&r, "job_start", leased[k], down);
        assert_non_null(st);
        assert_int_equal(st->t, up);
    }
    /* the submission made during the outage reached the engine when it came back */
    const evrow_t *sub = find_ev(&r, "submit", "late", 0);
    assert_non_null(sub);
    assert_int_equal(sub->t, up);
    assert_int_equal((int)jnum(&r, "faults.ctl_outages"), 1);
    assert_int_equal((int)jnum(&r, "faults.ctl_down_s"), 2 * H);
    assert_int_equal((int)jnum(&r, "faults.jobs_expired"), 3);
    assert_true(jnum(&r, "faults.events_held") >= 4);
    assert_true(lost > 0);
    assert_float_equal(jnum(&r, "training.gpu_hours_lost"), lost / 3600, 1e-6);
    /* leases that ran out are expiries, not late reclaims (no notice was sent) */
    assert_int_equal((int)jnum(&r, "lease.expired"), 3);
    assert_int_equal((int)jnum(&r, "reclaim.late"), 0);
    /* the loss is booked where the work was done, before the expiries */
    double lost_before = 0;
    for (size_t i = 0; i < r.ntl; i++) {
        assert_true(tl(&r, &r.tl[i], "training") >= 0 && tl(&r, &r.tl[i], "lost") >= 0);
        if (r.tl[i].t < up - 300)
            lost_before += tl(&r, &r.tl[i], "lost") * 300;
    }
    assert_float_equal(lost_before, lost, 0.01 * lost + 10);
    free_result(&r);
}

/* A burst while tide is down reaches the SLO: the serving layer keeps
 * serving what was ready, demand keeps coming. preempt, one replica of 100
 * rps (50 x 1.25 / 100 -> 1) and 50 rps, a 3x burst for 30 minutes inside a
 * 2-hour outage: 50 rps x 1800 s unserved, exactly. */
static void ctl_down_burst_reaches_slo(void **state)
{
    (void)state;
    tide_service_spec_t svc = {.name = "chat", .gpus_per_replica = 8, .replica_rps = 100,
                               .min_replicas = 1, .warmup_s = 120};
    tide_demand_point_t dem[] = {{0, 0, 50}};
    simcase_t sc = {.cluster = "2x8", .svcs = &svc, .nsvcs = 1, .dem = dem, .ndem = 1,
                    .policy = "preempt", .inject = "ctl-down@2h+2h,burst:3x@150m+30m",
                    .horizon = 86400};
    result_t r;
    run_case(&sc, &r);
    assert_float_equal(jnum(&r, "inference.demanded_requests"), 50.0 * 86400 + 100.0 * 1800, 1e-3);
    assert_float_equal(jnum(&r, "inference.unserved_requests"), 50.0 * 1800, 1e-3);
    assert_true(jnum(&r, "inference.slo_attainment") < 1.0);
    free_result(&r);
    /* the same burst with tide up: one more replica warms within the burst */
    sc.inject = "burst:3x@150m+30m";
    run_case(&sc, &r);
    double unserved = jnum(&r, "inference.unserved_requests");
    assert_true(unserved > 0 && unserved < 50.0 * 1800);
    free_result(&r);
}

/* A rank failure throws away up to 30 minutes of 8 GPUs' work: more than a
 * 5-minute row of a 16-GPU cluster trains. The timeline books it back in the
 * rows where it was done (never negative training), the totals unchanged. */
static void loss_booked_where_it_was_done(void **state)
{
    (void)state;
    tide_service_spec_t svc = {.name = "chat", .gpus_per_replica = 8, .replica_rps = 100,
                               .min_replicas = 1, .warmup_s = 120};
    tide_demand_point_t dem[] = {{0, 0, 50}};
    tide_job_spec_t jobs[] = {job8("a", 0, 50000)};
    simcase_t sc = {.cluster = "2x8", .svcs = &svc, .nsvcs = 1, .dem = dem, .ndem = 1,
                    .jobs = jobs, .njobs = 1, .policy = "preempt",
                    .inject = "rank-fail:a@85m", .horizon = 6 * H};
    result_t r;
    run_case(&sc, &r);
    const evrow_t *f = find_ev(&r, "fault_rank_fail", "a", 0);
    assert_non_null(f);
    double lost = jnum(&r, "training.gpu_hours_lost") * 3600;
    assert_true(lost > 8 * 300); /* more than one row could hold */
    double booked = 0, before = 0;
    for (size_t i = 0; i < r.ntl; i++) {
        double tr = tl(&r, &r.tl[i], "training"), lo = tl(&r, &r.tl[i], "lost");
        if (tr < 0 || lo < 0)
            fail_msg("row t=%lld: training %.2f lost %.2f", (long long)r.tl[i].t, tr, lo);
        booked += lo * 300;
        if (r.tl[i].t + 300 <= f->t)
            before += lo * 300;
    }
    assert_float_equal(booked, lost, 1.0);
    assert_true(before > 0.5 * lost); /* mostly in the rows before the fault's */
    free_result(&r);
}

/* ---------------------------------------------------------------- storage */

/* The world on its own: exact commit times under shared storage. */
typedef struct sfix {
    tide_cluster_t *c;
    tide_engine_t *e;
    tide_world_t *w;
    int32_t a, b;
} sfix_t;

/* Two 8-GPU jobs a and b (600 GB checkpoints of 60 s, periodic every iv s)
 * started at 0, a service whose replica loads 3000 GB over a 300 s warm-up,
 * storage of gbps GB/s. */
static void sfix_init_iv(sfix_t *f, double gbps, tide_time_t iv)
{
    tide_error_t err = {0, ""};
    f->c = tide_cluster_parse("4x8", &err);
    tide_config_t cfg;
    tide_config_default(&cfg);
    cfg.policy = "static";
    f->e = tide_engine_create(f->c, &cfg, &err);
    assert_non_null(f->e);
    tide_service_spec_t s = {.name = "chat", .gpus_per_replica = 8, .replica_rps = 10,
                             .warmup_s = 300};
    assert_int_equal(tide_engine_add_service(f->e, &s, &err), 0);
    tide_job_spec_t specs[2] = {job8("a", 0, 100000), job8("b", 0, 100000)};
    specs[0].ckpt_interval_s = specs[1].ckpt_interval_s = iv;
    tide_event_t ev[2];
    for (int i = 0; i < 2; i++)
        ev[i] = (tide_event_t){.kind = TIDE_EV_JOB_SUBMIT, .job = -1, .service = -1,
                               .replica = -1, .node = -1, .job_spec = &specs[i]};
    tide_actions_t acts;
    tide_actions_init(&acts);
    assert_int_equal(tide_engine_step(f->e, 0, ev, 2, &acts, &err), 0);
    tide_actions_free(&acts);
    f->a = tide_engine_job_find(f->e, "a");
    f->b = tide_engine_job_find(f->e, "b");
    f->w = tide_world_create(f->e);
    tide_world_set_storage(f->w, gbps);
    tide_world_set_job_gb(f->w, f->a, 600); /* 600 GB in 60 s: 10 GB/s */
    tide_world_set_job_gb(f->w, f->b, 600);
    tide_world_set_service_gb(f->w, 0, 3000); /* 3000 GB in 300 s: 10 GB/s */
    tide_action_t st[2] = {
        {.kind = TIDE_ACT_JOB_START, .job = f->a, .service = -1, .replica = -1, .lease = -1,
         .width = 1},
        {.kind = TIDE_ACT_JOB_START, .job = f->b, .service = -1, .replica = -1, .lease = -1,
         .width = 1},
    };
    tide_actions_t sa = {.v = st, .n = 2, .cap = 2, .next_wake = TIDE_TIME_NEVER};
    tide_world_apply(f->w, 0, &sa);
}

static void sfix_init(sfix_t *f, double gbps) { sfix_init_iv(f, gbps, 100000); }

static void sfix_free(sfix_t *f)
{
    tide_world_destroy(f->w);
    tide_engine_destroy(f->e);
    tide_cluster_destroy(f->c);
}

static void sfix_act(sfix_t *f, tide_time_t t, int kind, int32_t job, int32_t rep)
{
    tide_action_t a = {.kind = kind, .job = job, .service = rep >= 0 ? 0 : -1, .replica = rep,
                       .lease = -1};
    tide_actions_t acts = {.v = &a, .n = 1, .cap = 1, .next_wake = TIDE_TIME_NEVER};
    tide_event_t ev[8];
    size_t n = tide_world_pop(f->w, t - 1, ev, 8); /* phase reports at most */
    for (size_t i = 0; i < n; i++)
        assert_int_equal(ev[i].kind, TIDE_EV_JOB_PHASE);
    tide_world_apply(f->w, t, &acts);
}

/* Pop everything up to `until`: when a and b committed and the replica got ready. */
typedef struct seen {
    tide_time_t commit_a, commit_b, ready;
} seen_t;

static seen_t sfix_run(sfix_t *f, tide_time_t until)
{
    seen_t s = {-1, -1, -1};
    tide_event_t ev[16];
    for (tide_time_t t = tide_world_next(f->w); t <= until; t = tide_world_next(f->w)) {
        size_t n = tide_world_pop(f->w, t, ev, 16);
        for (size_t i = 0; i < n; i++) {
            if (ev[i].kind == TIDE_EV_CKPT_COMMITTED && ev[i].job == f->a)
                s.commit_a = t;
            if (ev[i].kind == TIDE_EV_CKPT_COMMITTED && ev[i].job == f->b)
                s.commit_b = t;
            if (ev[i].kind == TIDE_EV_REPLICA_READY)
                s.ready = t;
        }
    }
    return s;
}

static void storage_overlapping_checkpoints_take_longer(void **state)
{
    (void)state;
    sfix_t f;
    tide_world_storage_t ws;
    /* no storage model: 60 s each, overlapping or not */
    sfix_init(&f, 0);
    sfix_act(&f, 500, TIDE_ACT_JOB_CKPT, f.a, -1);
    sfix_act(&f, 500, TIDE_ACT_JOB_CKPT, f.b, -1);
    seen_t s = sfix_run(&f, 10000);
    assert_int_equal(s.commit_a, 560);
    assert_int_equal(s.commit_b, 560);
    tide_world_storage(f.w, 10000, &ws);
    assert_int_equal(ws.transfers, 0);
    assert_float_equal(ws.demand_gb, 0, 0);
    sfix_free(&f);
    /* 10 GB/s, alone: exactly ckpt_s */
    sfix_init(&f, 10);
    sfix_act(&f, 500, TIDE_ACT_JOB_CKPT, f.a, -1);
    s = sfix_run(&f, 10000);
    assert_int_equal(s.commit_a, 560);
    tide_world_storage(f.w, 10000, &ws);
    assert_float_equal(ws.peak_gbps, 10, 1e-9);
    assert_float_equal(ws.saturated_s, 0, 0);
    sfix_free(&f);
    /* together: 5 GB/s each, 120 s */
    sfix_init(&f, 10);
    sfix_act(&f, 500, TIDE_ACT_JOB_CKPT, f.a, -1);
    sfix_act(&f, 500, TIDE_ACT_JOB_CKPT, f.b, -1);
    s = sfix_run(&f, 10000);
    assert_int_equal(s.commit_a, 620);
    assert_int_equal(s.commit_b, 620);
    tide_world_storage(f.w, 10000, &ws);
    assert_float_equal(ws.peak_gbps, 20, 1e-9);
    assert_float_equal(ws.saturated_s, 120, 0);
    assert_float_equal(ws.demand_gb, 20 * 120, 1e-6);
    assert_float_equal(ws.moved_gb, 1200, 1e-6);
    assert_int_equal(ws.transfers, 2);
    assert_int_equal(ws.active, 0);
    sfix_free(&f);
    /* staggered by 30 s: a writes 300 GB alone, then both share (a ends at 590),
     * then b finishes alone at full speed (620) */
    sfix_init(&f, 10);
    sfix_act(&f, 500, TIDE_ACT_JOB_CKPT, f.a, -1);
    sfix_act(&f, 530, TIDE_ACT_JOB_CKPT, f.b, -1);
    s = sfix_run(&f, 10000);
    assert_int_equal(s.commit_a, 590);
    assert_int_equal(s.commit_b, 620);
    tide_world_storage(f.w, 10000, &ws);
    assert_float_equal(ws.saturated_s, 60, 0);
    sfix_free(&f);
    /* a weight load (3000 GB over a 300 s warm-up) alongside a checkpoint: both
     * slow down; a job stopped mid-checkpoint gives its share back at once */
    sfix_init(&f, 10);
    sfix_act(&f, 1000, TIDE_ACT_REPLICA_START, -1, 3);
    sfix_act(&f, 1000, TIDE_ACT_JOB_CKPT, f.a, -1);
    s = sfix_run(&f, 10000);
    assert_int_equal(s.commit_a, 1120);      /* 600 GB at 5 GB/s */
    assert_int_equal(s.ready, 1000 + 360);   /* 600 GB at 5, then 2400 GB at 10 */
    sfix_free(&f);
    sfix_init(&f, 10);
    sfix_act(&f, 1000, TIDE_ACT_REPLICA_START, -1, 3);
    sfix_act(&f, 1000, TIDE_ACT_JOB_CKPT, f.a, -1);
    sfix_act(&f, 1060, TIDE_ACT_JOB_STOP, f.a, -1);
    s = sfix_run(&f, 10000);
    assert_int_equal(s.commit_a, -1);
    assert_int_equal(s.ready, 1000 + 330);   /* 300 GB by 1060, 2700 GB alone */
    tide_world_storage(f.w, 10000, &ws);
    assert_float_equal(ws.moved_gb, 3000, 1e-6);
    sfix_free(&f);
}

/* QoS: a weight load (a reclaim's replica) takes the bandwidth before a
 * checkpoint, so the warm-up takes its declared time exactly. */
static void qos_weight_load_first(void **state)
{
    (void)state;
    sfix_t f;
    seen_t s;
    sfix_init(&f, 10);
    tide_world_set_qos(f.w, 0.5);
    sfix_act(&f, 1000, TIDE_ACT_REPLICA_START, -1, 3);
    sfix_act(&f, 1000, TIDE_ACT_JOB_CKPT, f.a, -1);
    s = sfix_run(&f, 10000);
    assert_int_equal(s.ready, 1000 + 300);      /* 3000 GB alone at 10 GB/s: as declared */
    assert_int_equal(s.commit_a, 1300 + 60);    /* then alone: an asked one is not capped */
    tide_world_storage_t ws;
    tide_world_storage(f.w, 10000, &ws);
    assert_true(ws.rate_peak_gbps <= 10 + 1e-9);
    size_t n;
    assert_float_equal(tide_world_xfer_quantile(f.w, TIDE_XFER_LOAD, 0.99, &n), 300, 1e-9);
    assert_int_equal(n, 1);
    assert_float_equal(tide_world_xfer_quantile(f.w, TIDE_XFER_CKPT_ASKED, 0.5, &n), 360, 1e-9);
    sfix_free(&f);
    /* without QoS the two share and the warm-up is late (see above) */
    sfix_init(&f, 10);
    sfix_act(&f, 1000, TIDE_ACT_REPLICA_START, -1, 3);
    sfix_act(&f, 1000, TIDE_ACT_JOB_CKPT, f.a, -1);
    s = sfix_run(&f, 10000);
    assert_true(s.ready > 1300);
    sfix_free(&f);
}

/* QoS: periodic checkpoints are staggered so that together they stay within
 * the bulk cap; without QoS they overlap and demand twice as much. */
static void qos_stagger_keeps_cap(void **state)
{
    (void)state;
    sfix_t f;
    seen_t s;
    tide_world_storage_t ws;
    sfix_init_iv(&f, 20, 1000);
    s = sfix_run(&f, 1500);
    assert_int_equal(s.commit_a, 1060);
    assert_int_equal(s.commit_b, 1060);
    tide_world_storage(f.w, 1500, &ws);
    assert_float_equal(ws.peak_gbps, 20, 1e-9);
    assert_int_equal(ws.staggered, 0);
    sfix_free(&f);

    sfix_init_iv(&f, 20, 1000);
    tide_world_set_qos(f.w, 0.5); /* checkpoints: at most 10 GB/s together */
    s = sfix_run(&f, 1500);
    assert_int_equal(s.commit_a, 1060);
    assert_int_equal(s.commit_b, 1120); /* waited for a, then alone */
    tide_world_storage(f.w, 1500, &ws);
    assert_true(ws.peak_gbps <= 10 + 1e-9);
    assert_true(ws.ckpt_rate_peak_gbps <= 10 + 1e-9);
    assert_int_equal(ws.staggered, 1);
    size_t n;
    assert_float_equal(tide_world_xfer_quantile(f.w, TIDE_XFER_STAGGER, 1, &n), 60, 1e-9);
    assert_int_equal(n, 1);
    assert_float_equal(tide_world_xfer_quantile(f.w, TIDE_XFER_CKPT_PERIODIC, 1, &n), 60, 1e-9);
    assert_int_equal(n, 2);
    sfix_free(&f);
}

/* QoS: a checkpoint the engine asked for (a reclaim) goes before a periodic
 * one that is already writing. */
static void qos_asked_checkpoint_first(void **state)
{
    (void)state;
    sfix_t f;
    sfix_init_iv(&f, 10, 1000);
    tide_world_set_qos(f.w, 1);
    /* at 1000 a's periodic checkpoint writes at 10 GB/s, b's waits */
    sfix_act(&f, 1030, TIDE_ACT_JOB_CKPT, f.b, -1);
    seen_t s = sfix_run(&f, 1500);
    assert_int_equal(s.commit_b, 1030 + 60); /* the whole bandwidth at once */
    assert_int_equal(s.commit_a, 1120);      /* 300 GB before, 300 GB after b */
    tide_world_storage_t ws;
    tide_world_storage(f.w, 1500, &ws);
    assert_int_equal(ws.staggered, 1);
    sfix_free(&f);
    /* a reclaim asking for a periodic checkpoint already writing promotes it */
    sfix_init_iv(&f, 10, 1000);
    tide_world_set_qos(f.w, 0.5); /* the periodic one writes at 5 GB/s */
    sfix_act(&f, 1030, TIDE_ACT_JOB_CKPT, f.a, -1);
    s = sfix_run(&f, 1100);
    assert_int_equal(s.commit_a, 1030 + 45); /* 450 GB left at the full 10 GB/s */
    sfix_free(&f);
}

static void storage_lead_grows(void **state)
{
    (void)state;
    /* inference swings between 1 and 5 replicas every 2 hours; every rise
     * reclaims 4 nodes of training at once, so 4 checkpoints overlap */
    tide_service_spec_t svc = {.name = "chat", .gpus_per_replica = 8, .replica_rps = 100,
                               .min_replicas = 1, .warmup_s = 120};
    tide_demand_point_t dem[48];
    for (int i = 0; i < 48; i++)
        dem[i] = (tide_demand_point_t){(tide_time_t)i * 2 * H, 0, i % 2 ? 450 : 80};
    tide_job_spec_t jobs[7];
    static const char *const ids[] = {"j1", "j2", "j3", "j4", "j5", "j6", "j7"};
    double ckpt_gb[7];
    for (int i = 0; i < 7; i++) {
        jobs[i] = job8(ids[i], 0, 30 * 86400);
        ckpt_gb[i] = 480; /* 8 GB/s to write it in 60 s */
    }
    double weights_gb[1] = {60};
    simcase_t sc = {.cluster = "8x8", .svcs = &svc, .nsvcs = 1, .dem = dem, .ndem = 48,
                    .jobs = jobs, .njobs = 7, .policy = "elastic", .horizon = 4 * 86400,
                    .ckpt_gb = ckpt_gb, .weights_gb = weights_gb};
    result_t base, slow;
    run_case(&sc, &base);
    sc.inject = "storage:12";
    run_case(&sc, &slow);
    /* the engine measured longer checkpoints (notice -> commit) ... */
    assert_true(base.obs.n_ckpt >= 20 && slow.obs.n_ckpt >= 20);
    print_message("p99 checkpoint: %.0f s without, %.0f s with storage:12\n", base.obs.p99_ckpt,
                  slow.obs.p99_ckpt);
    assert_true(base.obs.p99_ckpt <= 61);
    assert_true(slow.obs.p99_ckpt > 2 * base.obs.p99_ckpt);
    assert_true(slow.obs.p99_warm >= base.obs.p99_warm);
    /* ... so its checkpoint deadlines and reclaim lead grew */
    tide_time_t lead_base = 0, lead_slow = 0;
    for (size_t i = 0; i < base.obs.nacts; i++)
        if (base.obs.acts[i].kind == TIDE_ACT_JOB_CKPT)
            lead_base = MAXT(lead_base, base.obs.acts[i].deadline - base.obs.acts[i].t);
    for (size_t i = 0; i < slow.obs.nacts; i++)
        if (slow.obs.acts[i].kind == TIDE_ACT_JOB_CKPT)
            lead_slow = MAXT(lead_slow, slow.obs.acts[i].deadline - slow.obs.acts[i].t);
    print_message("notice lead: %lld s without, %lld s with storage:12\n", (long long)lead_base,
                  (long long)lead_slow);
    assert_true(lead_slow > lead_base);
    assert_true(jnum(&slow, "reclaim.p99_lead_s") > jnum(&base, "reclaim.p99_lead_s"));
    assert_float_equal(jnum(&slow, "faults.storage.gbps"), 12, 0);
    assert_true(jnum(&slow, "faults.storage.saturated_s") > 0);
    assert_true(jnum(&slow, "faults.storage.peak_demand_gbps") >= 4 * 8);
    assert_float_equal(jnum(&slow, "faults.storage.p99_ckpt_s"), slow.obs.p99_ckpt, 1e-9);
    /* storage_gbps: 0 without the model, the demand with it */
    double sb = 0, ss = 0;
    for (size_t i = 0; i < base.ntl; i++)
        sb += tl(&base, &base.tl[i], "storage_gbps");
    for (size_t i = 0; i < slow.ntl; i++)
        ss += tl(&slow, &slow.tl[i], "storage_gbps");
    assert_float_equal(sb, 0, 0);
    assert_true(ss > 0);
    assert_null(json_object_get(base.pol, "faults"));
    free_result(&base);
    free_result(&slow);
}

/* No fault list: the storage column is 0 and nothing else changes. */
static void no_faults_no_change(void **state)
{
    (void)state;
    tide_service_spec_t svc = {.name = "chat", .gpus_per_replica = 8, .replica_rps = 100,
                               .min_replicas = 1, .warmup_s = 120};
    tide_demand_point_t dem[] = {{0, 0, 80}, {6 * H, 0, 250}, {12 * H, 0, 80}};
    tide_job_spec_t jobs[] = {job8("a", 0, 20000), job8("b", 0, 30000), job8("c", 100, 9000)};
    simcase_t sc = {.cluster = "4x8", .svcs = &svc, .nsvcs = 1, .dem = dem, .ndem = 3,
                    .jobs = jobs, .njobs = 3, .policy = "elastic", .horizon = 86400};
    result_t a, b;
    run_case(&sc, &a);
    sc.inject = "burst:1x@1h+1h"; /* a fault that changes nothing */
    run_case(&sc, &b);
    size_t na = 0, nb = 0;
    for (size_t i = 0; i < a.nev; i++)
        na += strncmp(a.ev[i].kind, "fault_", 6) != 0;
    for (size_t i = 0; i < b.nev; i++)
        nb += strncmp(b.ev[i].kind, "fault_", 6) != 0;
    assert_int_equal(na, nb);
    assert_int_equal(a.ntl, b.ntl);
    for (size_t i = 0; i < a.ntl; i++)
        assert_memory_equal(a.tl[i].v, b.tl[i].v, sizeof a.tl[i].v);
    free_result(&a);
    free_result(&b);
}

/* The optional size columns of jobs.csv and services.csv. */
static void size_columns(void **state)
{
    (void)state;
    tide_error_t err = {0, ""};
    const char *jobs = "job_id,submit_s,team,priority,gpus,duration_s,ckpt_gb\n"
                       "late,500,t,2,8,100,\n"
                       "early,0,t,2,4,100,33.5\n"
                       "zero,0,t,2,2,100,0\n";
    tide_jobs_t *j = tide_jobs_read_mem(jobs, strlen(jobs), "jobs.csv", NULL, &err);
    assert_non_null(j);
    assert_int_equal(j->n, 3);
    /* sorted by submit time, sizes along */
    assert_string_equal(j->v[0].id, "early");
    assert_float_equal(j->ckpt_gb[0], 33.5, 0);
    assert_string_equal(j->v[1].id, "zero");
    assert_float_equal(j->ckpt_gb[1], 0, 0);
    assert_string_equal(j->v[2].id, "late");
    assert_float_equal(j->ckpt_gb[2], TIDE_IO_CKPT_GB_PER_GPU * 8, 0);
    tide_jobs_free(j);
    /* old files: the default */
    const char *old = "job_id,submit_s,team,priority,gpus,duration_s\nj,0,t,1,2,10\n";
    j = tide_jobs_read_mem(old, strlen(old), "jobs.csv", NULL, &err);
    assert_non_null(j);
    assert_float_equal(j->ckpt_gb[0], TIDE_IO_CKPT_GB_PER_GPU * 2, 0);
    tide_jobs_free(j);
    const char *bad = "job_id,submit_s,team,priority,gpus,duration_s,ckpt_gb\nj,0,t,1,2,10,-1\n";
    assert_null(tide_jobs_read_mem(bad, strlen(bad), "jobs.csv", NULL, &err));
    assert_non_null(strstr(err.msg, "jobs.csv:2: column 'ckpt_gb'"));
    const char *svcs = "service,gpus_per_replica,replica_rps,min_replicas,warmup_s,weights_gb\n"
                       "a,8,10,1,60,\nb,2,10,1,60,140\n";
    tide_services_t *sv = tide_services_read_mem(svcs, strlen(svcs), "s.csv", NULL, &err);
    assert_non_null(sv);
    assert_float_equal(sv->weights_gb[0], TIDE_IO_WEIGHTS_GB_PER_GPU * 8, 0);
    assert_float_equal(sv->weights_gb[1], 140, 0);
    tide_services_free(sv);
    const char *bads = "service,gpus_per_replica,replica_rps,min_replicas,warmup_s,weights_gb\n"
                       "a,8,10,1,60,lots\n";
    assert_null(tide_services_read_mem(bads, strlen(bads), "s.csv", NULL, &err));
    assert_non_null(strstr(err.msg, "s.csv:2: column 'weights_gb'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(burst_elastic_keeps_tier_a_serving),
        cmocka_unit_test(node_fail_restarts_elsewhere),
        cmocka_unit_test(rank_fail_loses_work_since_checkpoint),
        cmocka_unit_test(rank_fail_rate_is_seeded),
        cmocka_unit_test(ctl_down_backend_expires_leases),
        cmocka_unit_test(ctl_down_burst_reaches_slo),
        cmocka_unit_test(loss_booked_where_it_was_done),
        cmocka_unit_test(storage_overlapping_checkpoints_take_longer),
        cmocka_unit_test(qos_weight_load_first),
        cmocka_unit_test(qos_stagger_keeps_cap),
        cmocka_unit_test(qos_asked_checkpoint_first),
        cmocka_unit_test(storage_lead_grows),
        cmocka_unit_test(no_faults_no_change),
        cmocka_unit_test(size_columns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
