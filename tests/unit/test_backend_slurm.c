/* The "slurm" backend (src/backend/slurm.c) against an in-memory fake Slurm
 * (every op of tide_slurm_ops_t), driven by a real engine (elastic, 4x8:h100,
 * one 8-GPU service "chat") with the daemon's loop - poll, step, enact - and
 * a manual unix clock (unix = BASE + engine time), never sleeping; and the
 * daemon on it refusing what the backend cannot do (staged weights).
 *
 * The regression_* tests pin bugs found in review (their comments say what
 * went wrong before the fix). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "daemon/daemon.h"
#include "http/auth.h"
#include "http/router.h"
#include "tide/cluster.h"
#include "tide/engine.h"

#define BASE 1700000000.0

/* ------------------------------------------------------------ fake Slurm */

enum { C_SUBMIT = 0, C_RELEASE, C_SETTL, C_SETNODES, C_SIGNAL, C_REQUEUE, C_CANCEL, C_NOPS };

typedef struct fjob {
    tide_slurm_job_t j;
    char nodelist[256], script[512], env[2048], partition[64]; /* env: "\nK=V\nK=V\n" */
    int nnodes, gpn, hold, requeue;
} fjob_t;

typedef struct fcall {
    int op;
    uint32_t id;
    long arg;      /* minutes, signal, hold, nodes */
    char str[256]; /* submit: name; set_nodes: nodelist */
} fcall_t;

typedef struct fake {
    tide_slurm_node_t node[8];
    int nnodes;
    fjob_t job[128]; /* Slurm id = index + 1 */
    int njobs;
    fcall_t call[1024]; /* the calls that changed something, in order */
    int ncalls;
    int down;            /* every op fails with EIO */
    int fail_op[C_NOPS]; /* this op fails with EIO */
    double now;          /* the unix clock (the backend's too) */
} fake_t;

static fake_t *FK; /* the ops have no context but the handle open() returns */

static int fk_io(tide_error_t *err)
{
    return tide_errf(err, TIDE_EIO, "slurmctld: connection refused");
}
static fjob_t *fk_get(uint32_t id)
{
    return id >= 1 && (int)id <= FK->njobs ? &FK->job[id - 1] : NULL;
}
static int fk_ended(const fjob_t *x) { return x->j.state >= TIDE_SJOB_COMPLETED; }

static void fk_rec(int op, uint32_t id, long arg, const char *s)
{
    assert_true(FK->ncalls < 1024);
    fcall_t *c = &FK->call[FK->ncalls++];
    *c = (fcall_t){.op = op, .id = id, .arg = arg};
    snprintf(c->str, sizeof c->str, "%s", s ? s : "");
}

static void *fk_open(const char *conf, tide_error_t *err)
{
    (void)conf;
    if (FK->down)
        fk_io(err);
    return FK->down ? NULL : FK;
}
static void fk_close(void *h) { (void)h; }

static int fk_nodes(void *h, tide_slurm_node_t **out, size_t *n, tide_error_t *err)
{
    (void)h;
    if (FK->down)
        return fk_io(err);
    *out = malloc(sizeof **out * (size_t)(FK->nnodes ? FK->nnodes : 1));
    memcpy(*out, FK->node, sizeof **out * (size_t)FK->nnodes);
    *n = (size_t)FK->nnodes;
    return 0;
}

static int fk_jobs(void *h, const char *prefix, tide_slurm_job_t **out, size_t *n,
                   tide_error_t *err)
{
    (void)h;
    if (FK->down)
        return fk_io(err);
    *out = malloc(sizeof **out * (size_t)(FK->njobs ? FK->njobs : 1));
    *n = 0;
    for (int i = 0; i < FK->njobs; i++)
        if (!prefix || !strncmp(FK->job[i].j.name, prefix, strlen(prefix)))
            (*out)[(*n)++] = FK->job[i].j;
    return 0;
}

static int fk_submit(void *h, const tide_slurm_submit_t *s, uint32_t *id, tide_error_t *err)
{
    (void)h;
    if (FK->down || FK->fail_op[C_SUBMIT])
        return fk_io(err);
    assert_true(FK->njobs < 128);
    fjob_t *x = &FK->job[FK->njobs++];
    memset(x, 0, sizeof *x);
    x->j.id = (uint32_t)FK->njobs;
    snprintf(x->j.name, sizeof x->j.name, "%s", s->name);
    x->j.held = x->hold = s->hold;
    x->j.submit_time = (int64_t)FK->now;
    x->j.time_limit_min = s->time_limit_min;
    snprintf(x->nodelist, sizeof x->nodelist, "%s", s->nodelist);
    snprintf(x->script, sizeof x->script, "%s", s->script);
    snprintf(x->partition, sizeof x->partition, "%s", s->partition ? s->partition : "");
    size_t off = 1;
    x->env[0] = '\n';
    for (const char *const *e = s->env; e && *e; e++)
        off += (size_t)snprintf(x->env + off, sizeof x->env - off, "%s\n", *e);
    x->nnodes = s->nodes;
    x->gpn = s->gpus_per_node;
    x->requeue = s->requeue;
    *id = x->j.id;
    fk_rec(C_SUBMIT, x->j.id, s->time_limit_min, s->name);
    return 0;
}

/* Every other changing op: check as Slurm would, apply, record. */
static int fk_change(int op, uint32_t id, long arg, const char *str, tide_error_t *err)
{
    if (FK->down || FK->fail_op[op])
        return fk_io(err);
    fjob_t *x = fk_get(id);
    if (op == C_CANCEL) { /* unknown or finished: fine */
        if (x && !fk_ended(x)) {
            x->j.state = TIDE_SJOB_CANCELLED;
            x->j.end_time = (int64_t)FK->now;
        }
        fk_rec(op, id, 0, NULL);
        return 0;
    }
    if (!x)
        return tide_errf(err, TIDE_ENOENT, "job %u: invalid job id", id);
    int st = x->j.state;
    int bad = op == C_RELEASE || op == C_SETNODES ? st != TIDE_SJOB_PENDING
              : op == C_SIGNAL                      ? st != TIDE_SJOB_RUNNING
                                                    : fk_ended(x);
    if (bad)
        return tide_errf(err, TIDE_ESTATE, "job %u is %s", id, tide_slurm_job_state_name(st));
    if (op == C_RELEASE)
        x->j.held = 0;
    if (op == C_SETTL)
        x->j.time_limit_min = (uint32_t)arg;
    if (op == C_SETNODES) {
        snprintf(x->nodelist, sizeof x->nodelist, "%s", str);
        x->nnodes = (int)arg;
    }
    if (op == C_REQUEUE) {
        if (st != TIDE_SJOB_PENDING) {
            x->j.restarts++;
            x->j.requeued = 1;
            x->j.nodes[0] = '\0';
        }
        x->j.state = TIDE_SJOB_PENDING;
        x->j.held = (int)arg;
    }
    fk_rec(op, id, arg, str);
    return 0;
}

static int fk_release(void *h, uint32_t id, tide_error_t *err)
{
    return (void)h, fk_change(C_RELEASE, id, 0, NULL, err);
}
static int fk_settl(void *h, uint32_t id, uint32_t m, tide_error_t *err)
{
    return (void)h, fk_change(C_SETTL, id, m, NULL, err);
}
static int fk_setnodes(void *h, uint32_t id, const char *nl, int nodes, tide_error_t *err)
{
    return (void)h, fk_change(C_SETNODES, id, nodes, nl, err);
}
static int fk_signal(void *h, uint32_t id, int sig, tide_error_t *err)
{
    return (void)h, fk_change(C_SIGNAL, id, sig, NULL, err);
}
static int fk_requeue(void *h, uint32_t id, int hold, tide_error_t *err)
{
    return (void)h, fk_change(C_REQUEUE, id, hold, NULL, err);
}
static int fk_cancel(void *h, uint32_t id, tide_error_t *err)
{
    return (void)h, fk_change(C_CANCEL, id, 0, NULL, err);
}

static const tide_slurm_ops_t fk_ops = {
    .version = "fake", .open = fk_open, .close = fk_close, .nodes = fk_nodes, .jobs = fk_jobs,
    .submit = fk_submit, .release = fk_release, .set_time_limit = fk_settl,
    .set_nodes = fk_setnodes, .signal = fk_signal, .requeue = fk_requeue, .cancel = fk_cancel,
};

/* The same fake with partitions: "half" = gpu3, cpu1, gpu4; "all" = every node. */
static int fk_partition(void *h, const char *name, tide_slurm_nodename_t **out, size_t *n,
                        tide_error_t *err)
{
    (void)h;
    static const char *half[] = {"gpu3", "cpu1", "gpu4"};
    static const char *all[] = {"gpu1", "gpu2", "cpu1", "gpu3", "gpu4"};
    const char **v = !strcmp(name, "half") ? half : !strcmp(name, "all") ? all : NULL;
    size_t k = v == half ? 3 : 5;
    if (!v)
        return tide_errf(err, TIDE_ENOENT, "no Slurm partition '%s' (there are: half, all)", name);
    *out = calloc(k, sizeof **out);
    for (size_t i = 0; i < k; i++)
        snprintf((*out)[i].name, sizeof (*out)[i].name, "%s", v[i]);
    *n = k;
    return 0;
}

static const tide_slurm_ops_t fk_ops_part = {
    .version = "fake", .open = fk_open, .close = fk_close, .nodes = fk_nodes, .jobs = fk_jobs,
    .submit = fk_submit, .release = fk_release, .set_time_limit = fk_settl,
    .set_nodes = fk_setnodes, .signal = fk_signal, .requeue = fk_requeue, .cancel = fk_cancel,
    .partition_nodes = fk_partition,
};

/* gpu1, gpu2, a CPU-only node, gpu3, gpu4: tide nodes 0..3 (Slurm index 3 = tide node 2). */
static void fk_default(fake_t *k)
{
    static const char *names[] = {"gpu1", "gpu2", "cpu1", "gpu3", "gpu4"};
    memset(k, 0, sizeof *k);
    k->now = BASE;
    for (int i = 0; i < 5; i++) {
        snprintf(k->node[i].name, sizeof k->node[i].name, "%s", names[i]);
        k->node[i].gpus = i == 2 ? 0 : 8;
        snprintf(k->node[i].gpu_type, sizeof k->node[i].gpu_type, "%s", i == 2 ? "" : "h100");
    }
    k->nnodes = 5;
    FK = k;
}

static fjob_t *fk_named(const char *name)
{
    for (int i = FK->njobs - 1; i >= 0; i--)
        if (!strcmp(FK->job[i].j.name, name))
            return &FK->job[i];
    return NULL;
}

static uint32_t fk_add(const char *name, int state) /* a job this backend did not submit */
{
    fjob_t *x = &FK->job[FK->njobs++];
    memset(x, 0, sizeof *x);
    x->j.id = (uint32_t)FK->njobs;
    snprintf(x->j.name, sizeof x->j.name, "%s", name);
    x->j.state = state;
    return x->j.id;
}

/* Slurm starts every pending job that is not held, now. */
static void fk_run_pending(void)
{
    for (int i = 0; i < FK->njobs; i++) {
        fjob_t *x = &FK->job[i];
        if (x->j.state == TIDE_SJOB_PENDING && !x->j.held) {
            x->j.state = TIDE_SJOB_RUNNING;
            x->j.start_time = (int64_t)FK->now;
            memcpy(x->j.nodes, x->nodelist, sizeof x->j.nodes);
        }
    }
}

static void fk_end(uint32_t id, int state, int code)
{
    fjob_t *x = fk_get(id);
    assert_non_null(x);
    x->j.state = state;
    x->j.exit_code = code;
    x->j.end_time = (int64_t)FK->now;
}

static int fk_count(int op, uint32_t id, long arg) /* id 0 / arg -1: any */
{
    int n = 0;
    for (int i = 0; i < FK->ncalls; i++)
        n += FK->call[i].op == op && (!id || FK->call[i].id == id) &&
             (arg < 0 || FK->call[i].arg == arg);
    return n;
}

static int fk_submits(const char *prefix)
{
    int n = 0;
    for (int i = 0; i < FK->ncalls; i++)
        n += FK->call[i].op == C_SUBMIT && !strncmp(FK->call[i].str, prefix, strlen(prefix));
    return n;
}

/* Every "KEY=VALUE" given (NULL-terminated) is in x's environment. */
static void assert_env(const fjob_t *x, ...)
{
    va_list ap;
    va_start(ap, x);
    for (const char *kv; (kv = va_arg(ap, const char *));) {
        char pat[256];
        snprintf(pat, sizeof pat, "\n%s\n", kv);
        if (!strstr(x->env, pat))
            fail_msg("%s: no %s in its environment:%s", x->j.name, kv, x->env);
    }
    va_end(ap);
}

/* ------------------------------------------------------------ fixture */

/* Every job's work as submitted (the daemon hands it with each start). */
static const char *const job_env[] = {"WANDB_PROJECT=tide", "NCCL_DEBUG=INFO", NULL};
static const tide_backend_work_t job_work = {.command = "python train.py", .env = job_env};

/* Enact acts as the daemon does: every action carries its job's work. */
static int fx_enact(tide_backend_t *b, tide_time_t now, const tide_actions_t *acts,
                    tide_error_t *err)
{
    const tide_backend_work_t **work = calloc(acts->n ? acts->n : 1, sizeof *work);
    for (size_t i = 0; i < acts->n; i++)
        work[i] = &job_work;
    int refused = tide_backend_enact(b, now, acts, work, err);
    free(work);
    return refused;
}

static double clock_fn(void *ctx) { return ((fake_t *)ctx)->now; }

typedef struct fx {
    fake_t fk;
    tide_cluster_t *c;
    tide_engine_t *e;
    tide_backend_t *b;
    tide_backend_opts_t o;
    tide_actions_t acts; /* the last step's */
    tide_time_t now;
    tide_event_t *ev;    /* what the last poll returned */
    size_t nev, capev;
    int refused;
    char *logbuf;        /* the backend's log */
    size_t loglen;
    FILE *log;
    int32_t job;         /* j1 */
    tide_job_spec_t spec;
} fx_t;

static fx_t *CUR; /* the test's fixture: freed by fx_cleanup when an assertion fails */

static tide_backend_t *fx_backend(fx_t *f, tide_error_t *err)
{
    return tide_backend_slurm_create(f->e, &f->o, err);
}

static tide_time_t fx_lease_max = 600; /* the engine's lease_max_s for the next fixture */
static double fx_power_factor;         /* > 0: power budgets of the next fixture (x nameplate) */
static const char *fx_power_cmd;       /* its --power-cap-cmd */

static fx_t *fx_new_svcs(int services)
{
    fx_t *f = calloc(1, sizeof *f);
    fk_default(&f->fk);
    tide_error_t err = {0};
    f->c = tide_cluster_parse("4x8:h100", &err);
    if (fx_power_factor > 0)
        assert_int_equal(tide_cluster_scale_power_budgets(f->c, fx_power_factor, &err), 0);
    tide_config_t cfg;
    tide_config_default(&cfg);
    cfg.policy = "elastic";
    cfg.lease_max_s = fx_lease_max;
    cfg.tick_s = 10;
    cfg.margin_min = cfg.margin_max = 0.05;
    cfg.scale_down_hold_s = 60;
    cfg.check_invariants = 1;
    f->e = tide_engine_create(f->c, &cfg, &err);
    assert_non_null(f->e);
    static const char *names[] = {"chat", "embed"};
    for (int i = 0; i < services; i++) {
        tide_service_spec_t sv = {.name = names[i], .gpus_per_replica = 8, .replica_rps = 100,
                                  .min_replicas = 1, .warmup_s = 10};
        assert_int_equal(tide_engine_add_service(f->e, &sv, &err), i);
    }
    tide_actions_init(&f->acts);
    f->log = open_memstream(&f->logbuf, &f->loglen);
    fflush(f->log); /* logbuf is a string from now on */
    f->o = (tide_backend_opts_t){.slurm = &fk_ops, .unix_clock = clock_fn,
                                 .unix_clock_ctx = &f->fk, .log = f->log,
                                 .replica_command = "serve --port 8000", .workdir = "/srv/tide",
                                 .api_url = "http://ctl:7070", .partition = "gpu",
                                 .power_cap_cmd = fx_power_cmd};
    f->b = fx_backend(f, &err);
    if (!f->b)
        fail_msg("backend: %s", err.msg);
    f->spec = (tide_job_spec_t){.id = "j1", .team = "ml", .priority = 3, .gpus = 16,
                                .gang_gpus = 8, .duration_s = 100000, .ckpt_interval_s = 1800,
                                .ckpt_s = 60, .restore_s = 120};
    f->job = -1;
    CUR = f;
    return f;
}
static fx_t *fx_new(void) { return fx_new_svcs(1); }

static void fx_free(fx_t *f)
{
    CUR = NULL;
    tide_backend_destroy(f->b);
    tide_actions_free(&f->acts);
    tide_engine_destroy(f->e);
    tide_cluster_destroy(f->c);
    fclose(f->log);
    free(f->logbuf);
    free(f->ev);
    free(f);
}

static tide_event_t ev_of(int kind, int32_t job, double value)
{
    tide_event_t ev = {.kind = kind, .job = job, .service = -1, .replica = -1, .node = -1,
                       .value = value};
    if (kind == TIDE_EV_DEMAND)
        ev.service = 0;
    return ev;
}

static tide_event_t ev_submit(const tide_job_spec_t *spec)
{
    tide_event_t ev = ev_of(TIDE_EV_JOB_SUBMIT, -1, 0);
    ev.job_spec = spec;
    return ev;
}

/* Poll the backend alone at engine time t (unix BASE + t) into f->ev. */
static size_t fx_poll(fx_t *f, tide_time_t t)
{
    f->fk.now = BASE + (double)t;
    f->nev = 0;
    return tide_backend_poll_all(f->b, t, &f->ev, &f->nev, &f->capev);
}

/* One turn of the daemon's loop at t: poll, step with the backend's events
 * and `extra`, enact the actions. */
static void fx_step(fx_t *f, tide_time_t t, const tide_event_t *extra, size_t nx)
{
    f->now = t;
    fx_poll(f, t);
    size_t n = f->nev + nx;
    tide_event_t *all = calloc(n ? n : 1, sizeof *all);
    if (f->nev)
        memcpy(all, f->ev, f->nev * sizeof *all);
    if (nx)
        memcpy(all + f->nev, extra, nx * sizeof *all);
    tide_error_t err = {0};
    if (tide_engine_step(f->e, t, all, n, &f->acts, &err) < 0)
        fail_msg("t=%lld: engine step: %s", (long long)t, err.msg);
    free(all);
    f->refused = fx_enact(f->b, t, &f->acts, &err);
}
static void fx_tick(fx_t *f, tide_time_t t) { fx_step(f, t, NULL, 0); }
static void fx_ev1(fx_t *f, tide_time_t t, tide_event_t ev) { fx_step(f, t, &ev, 1); }

/* Enact one hand-made action (gpus: its GPU ids). Returns the refusals. */
static int enact1(fx_t *f, tide_action_t a, const int32_t *gpus, tide_error_t *err)
{
    a.gpu_off = 0;
    tide_actions_t x = {.v = &a, .n = 1, .cap = 1, .gpus = (int32_t *)gpus,
                        .ngpus = gpus ? (size_t)a.n_gpus : 0};
    return fx_enact(f->b, f->now, &x, err);
}

static const tide_action_t *fx_act(const fx_t *f, int kind, int32_t job)
{
    for (size_t i = 0; i < f->acts.n; i++)
        if (f->acts.v[i].kind == kind && (job < 0 || f->acts.v[i].job == job))
            return &f->acts.v[i];
    return NULL;
}

static int polled(const fx_t *f, int kind, int32_t job)
{
    int n = 0;
    for (size_t i = 0; i < f->nev; i++)
        n += f->ev[i].kind == kind && (job < 0 || f->ev[i].job == job);
    return n;
}

static void assert_no_events(const fx_t *f)
{
    if (f->nev)
        fail_msg("t=%lld: unexpected %s (job %d, replica %d, node %d) and %zu more",
                 (long long)f->now, tide_event_name(f->ev[0].kind), f->ev[0].job,
                 f->ev[0].replica, f->ev[0].node, f->nev - 1);
}

static const tide_event_t *polled_ev(const fx_t *f, int kind)
{
    for (size_t i = 0; i < f->nev; i++)
        if (f->ev[i].kind == kind)
            return &f->ev[i];
    fail_msg("no %s event polled", tide_event_name(kind));
    return NULL;
}

/* t=0: demand 50 -> replica 0 (Slurm id 1); t=10: it is ready, j1 (2 gangs of
 * 8) submitted and started -> Slurm ids 2 (g0), 3 (g1); all running from t=10. */
static void fx_training(fx_t *f)
{
    fx_ev1(f, 0, ev_of(TIDE_EV_DEMAND, -1, 50));
    assert_non_null(fx_act(f, TIDE_ACT_REPLICA_START, -1));
    fk_run_pending();
    tide_event_t ev[2] = {ev_of(TIDE_EV_REPLICA_READY, -1, 0), ev_submit(&f->spec)};
    ev[0].replica = ev[0].service = 0;
    fx_step(f, 10, ev, 2);
    f->job = tide_engine_job_find(f->e, "j1");
    assert_non_null(fx_act(f, TIDE_ACT_JOB_START, f->job));
    assert_int_equal(f->fk.njobs, 3);
    fk_run_pending();
}

static int engine_state(const fx_t *f, int32_t h)
{
    tide_job_info_t ji;
    assert_int_equal(tide_engine_job(f->e, h, &ji), 0);
    return ji.state;
}

static tide_time_t lease_deadline(const fx_t *f, int32_t h)
{
    tide_job_info_t ji;
    tide_lease_info_t li;
    assert_int_equal(tide_engine_job(f->e, h, &ji), 0);
    assert_int_equal(tide_engine_lease(f->e, ji.lease, &li), 0);
    return li.latest_return;
}

/* minutes = floor((deadline - 60 - start) / 60), at least 1 (engine times) */
static long want_minutes(tide_time_t deadline, tide_time_t start)
{
    long m = (long)((deadline - 60 - start) / 60);
    return m < 1 ? 1 : m;
}

/* Slurm name of the node of gang k's GPUs in action x. */
static void node_of(const fx_t *f, const tide_action_t *x, int k, char buf[16])
{
    snprintf(buf, 16, "gpu%d", f->acts.gpus[x->gpu_off + (size_t)k * 8] / 8 + 1);
}

static tide_backend_status_t status(const fx_t *f)
{
    tide_backend_status_t s;
    tide_backend_status(f->b, &s);
    return s;
}

/* ------------------------------------------------------------ 1. create */

static void create_checks_cluster(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    tide_error_t err = {0};
    f->fk.nnodes = 4; /* 3 GPU nodes (gpu4 gone) vs the engine's 4 */
    assert_null(fx_backend(f, &err));
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_non_null(strstr(err.msg, "Slurm has 3 nodes with GPUs, the cluster in the database 4"));
    f->fk.nnodes = 6; /* 5 GPU nodes */
    f->fk.node[5] = f->fk.node[4];
    assert_null(fx_backend(f, &err));
    assert_non_null(strstr(err.msg, "Slurm has 5 nodes with GPUs, the cluster in the database 4"));
    f->fk.nnodes = 5;
    f->fk.node[3].gpus = 4; /* gpu3 smaller than tide's node 2 */
    assert_null(fx_backend(f, &err));
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_non_null(strstr(err.msg, "gpu3 has 4 GPUs"));
    f->fk.node[3].gpus = 8;
    f->fk.down = 1;
    assert_null(fx_backend(f, &err));
    assert_int_equal(err.code, TIDE_EIO);
    char buf[128];
    err.code = 0;
    assert_int_equal(tide_slurm_cluster_spec(&fk_ops, NULL, NULL, buf, sizeof buf, &err), -1);
    assert_int_equal(err.code, TIDE_EIO);
    f->fk.down = 0;
    assert_int_equal(tide_slurm_cluster_spec(&fk_ops, NULL, NULL, buf, sizeof buf, &err), 0);
    assert_string_equal(buf, "4x8:h100"); /* the CPU node skipped */
    /* a partition: only its GPU nodes, in Slurm's order; an unknown one named */
    assert_int_equal(tide_slurm_cluster_spec(&fk_ops_part, NULL, "half", buf, sizeof buf, &err), 0);
    assert_string_equal(buf, "2x8:h100");
    assert_int_equal(tide_slurm_cluster_spec(&fk_ops_part, NULL, "all", buf, sizeof buf, &err), 0);
    assert_string_equal(buf, "4x8:h100");
    err.code = 0;
    assert_int_equal(tide_slurm_cluster_spec(&fk_ops_part, NULL, "nope", buf, sizeof buf, &err), -1);
    assert_int_equal(err.code, TIDE_ENOENT);
    assert_non_null(strstr(err.msg, "--slurm-partition: no Slurm partition 'nope'"));
    assert_int_equal(tide_slurm_cluster_spec(&fk_ops, NULL, NULL, buf, 5, &err), -1);
    snprintf(f->fk.node[3].gpu_type, 32, "a100");
    snprintf(f->fk.node[4].gpu_type, 32, "a100");
    assert_int_equal(tide_slurm_cluster_spec(&fk_ops, NULL, NULL, buf, sizeof buf, &err), 0);
    assert_string_equal(buf, "2x8:h100,2x8:a100");
    f->fk.node[3].gpus = f->fk.node[4].gpus = 4;
    assert_int_equal(tide_slurm_cluster_spec(&fk_ops, NULL, NULL, buf, sizeof buf, &err), 0);
    assert_string_equal(buf, "2x8:h100,2x4:a100");
    snprintf(f->fk.node[4].gpu_type, 32, "h100");
    snprintf(f->fk.node[3].gpu_type, 32, "h100");
    assert_int_equal(tide_slurm_cluster_spec(&fk_ops, NULL, NULL, buf, sizeof buf, &err), 0);
    assert_string_equal(buf, "2x8:h100,2x4:h100");
    f->fk.nnodes = 3;
    f->fk.node[0].gpus = f->fk.node[1].gpus = 0;
    err.code = 0;
    assert_int_equal(tide_slurm_cluster_spec(&fk_ops, NULL, NULL, buf, sizeof buf, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_int_equal(f->fk.ncalls, 0);
    fx_free(f);
}

/* ------------------------------------------------------------ 2. replica */

static void replica_floor_submits(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    fx_ev1(f, 0, ev_of(TIDE_EV_DEMAND, -1, 50));
    const tide_action_t *a = fx_act(f, TIDE_ACT_REPLICA_START, -1);
    assert_int_equal(a ? a->replica : -1, 0);
    assert_int_equal(f->refused, 0);
    assert_int_equal(fk_count(C_SUBMIT, 0, -1), 1);
    fjob_t *x = fk_get(1);
    assert_string_equal(x->j.name, "tide.rep.0.chat");
    char want[16];
    node_of(f, a, 0, want);
    assert_string_equal(x->nodelist, want);
    assert_true(x->nnodes == 1 && x->gpn == 8 && x->hold == 0 && x->requeue == 0);
    assert_int_equal(x->j.time_limit_min, 0);
    assert_string_equal(x->partition, "gpu");
    assert_string_equal(x->script, "#!/bin/bash\nexec serve --port 8000\n");
    assert_env(x, "TIDE_REPLICA=0", "TIDE_SERVICE=chat", "TIDE_API=http://ctl:7070",
               "TIDE_WORKDIR=/srv/tide", "TIDE_WARMUP_S=10", NULL);
    assert_int_equal(status(f).submits, 1);
    fk_run_pending();
    fx_tick(f, 10);
    assert_no_events(f);
    assert_int_equal(tide_backend_replica_alive(f->b, 0), 1);
    assert_int_equal(tide_backend_replica_alive(f->b, 1), 0);
    tide_action_t stop = {.kind = TIDE_ACT_REPLICA_STOP, .job = -1, .service = 0, .replica = 0};
    assert_int_equal(enact1(f, stop, NULL, NULL), 0);
    assert_int_equal(fk_count(C_CANCEL, 1, -1), 1);
    assert_int_equal(x->j.state, TIDE_SJOB_CANCELLED);
    fx_free(f);
}

/* ------------------------------------------------------------ 3. training */

static void training_start_and_renew(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    fx_training(f);
    int32_t h = f->job;
    assert_int_equal(lease_deadline(f, h), 10 + 600);
    const tide_action_t *st = fx_act(f, TIDE_ACT_JOB_START, h);
    char used[2][16];
    for (int k = 0; k < 2; k++) {
        char name[64], g[32];
        snprintf(name, sizeof name, "tide.job.j1.g%d", k);
        fjob_t *x = fk_named(name);
        assert_int_equal(x ? x->j.id : 0, 2 + k);
        node_of(f, st, k, used[k]);
        assert_string_equal(x->nodelist, used[k]);
        assert_true(x->nnodes == 1 && x->gpn == 8 && x->requeue == 1 && x->hold == 0);
        assert_string_equal(x->script, "#!/bin/bash\nexec python train.py\n");
        snprintf(g, sizeof g, "TIDE_GANG=%d", k);
        assert_env(x, "TIDE_JOB_ID=j1", g, "TIDE_GANGS=2", "TIDE_TEAM=ml",
                   "TIDE_CKPT_SIGNAL=USR1", "WANDB_PROJECT=tide", "NCCL_DEBUG=INFO", NULL);
        assert_int_equal(x->j.time_limit_min, 9); /* (610 - 60 - 10) / 60 */
    }
    assert_string_not_equal(used[0], used[1]);
    assert_true(strcmp(used[0], "gpu1") && strcmp(used[1], "gpu1")); /* Tier A: the replica's */
    tide_time_t t = 10, renew_t = -1;
    while (renew_t < 0 && t < 600) {
        fx_tick(f, t += 10);
        if (t == 20) { /* first seen running: training from now on, reported once */
            assert_int_equal(f->nev, 1);
            assert_int_equal(polled(f, TIDE_EV_JOB_PHASE, h), 1);
            assert_int_equal(f->ev[0].phase, TIDE_PHASE_TRAINING);
            assert_true(f->ev[0].value == 0);
        } else {
            assert_no_events(f);
        }
        if (fx_act(f, TIDE_ACT_LEASE_RENEW, h))
            renew_t = t;
        else
            assert_int_equal(fk_count(C_SETTL, 0, -1), 0); /* unchanged: no call */
    }
    assert_true(renew_t > 10);
    tide_time_t dl = lease_deadline(f, h);
    assert_int_equal(dl, renew_t + 600);
    long m = want_minutes(dl, 10); /* from the gangs' start at unix BASE+10 */
    assert_true(m > 9);
    assert_int_equal(fk_count(C_SETTL, 0, -1), 2);
    assert_int_equal(fk_count(C_SETTL, 2, m), 1);
    assert_int_equal(fk_count(C_SETTL, 3, m), 1);
    assert_int_equal(fk_get(3)->j.time_limit_min, m);
    /* the same renewal again, and more polls: the limit is the same, no call */
    assert_int_equal(enact1(f, *fx_act(f, TIDE_ACT_LEASE_RENEW, h), NULL, NULL), 0);
    fx_tick(f, renew_t + 10);
    fx_tick(f, renew_t + 20);
    assert_int_equal(fk_count(C_SETTL, 0, -1), 2);
    fx_free(f);
}

/* ------------------------------------------------------------ 4. reclaim */

/* j1 running; demand 250 -> 3 replicas: one on the free node, j1 noticed. */
static void fx_notice(fx_t *f)
{
    fx_training(f);
    for (tide_time_t t = 20; t <= 90; t += 10)
        fx_tick(f, t);
    fx_ev1(f, 100, ev_of(TIDE_EV_DEMAND, -1, 250));
    const tide_action_t *ck = fx_act(f, TIDE_ACT_JOB_CKPT, f->job);
    assert_int_equal(ck ? ck->reason : -1, TIDE_R_RECLAIM);
    fk_run_pending(); /* the new replica */
}

static void fx_commit(fx_t *f, tide_time_t t)
{
    fx_ev1(f, t, ev_of(TIDE_EV_CKPT_COMMITTED, f->job, 100));
    assert_non_null(fx_act(f, TIDE_ACT_JOB_STOP, f->job));
}

static void reclaim_signal_requeue_release(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    fx_notice(f);
    int32_t h = f->job;
    assert_int_equal(fk_count(C_SIGNAL, 0, -1), 2);
    assert_int_equal(fk_count(C_SIGNAL, 2, SIGUSR1), 1);
    assert_int_equal(fk_count(C_SIGNAL, 3, SIGUSR1), 1);
    tide_time_t dl = lease_deadline(f, h); /* now the checkpoint deadline: so are the limits */
    assert_true(dl < 100 + 600);
    assert_int_equal(fk_get(2)->j.time_limit_min, want_minutes(dl, 10));
    assert_int_equal(fk_get(3)->j.time_limit_min, want_minutes(dl, 10));
    assert_int_equal(fk_count(C_SUBMIT, 0, -1), 4); /* 2 replicas, 2 gangs */
    fx_commit(f, 150);
    assert_int_equal(engine_state(f, h), TIDE_JOB_QUEUED);
    assert_int_equal(fk_count(C_REQUEUE, 2, 1), 1);
    assert_int_equal(fk_count(C_REQUEUE, 3, 1), 1);
    assert_int_equal(fk_count(C_REQUEUE, 0, 0), 0);
    for (uint32_t id = 2; id <= 3; id++)
        assert_true(fk_get(id)->j.state == TIDE_SJOB_PENDING && fk_get(id)->j.held);
    tide_backend_job_info_t ji;
    assert_int_equal(tide_backend_job_info(f->b, h, &ji), 0);
    assert_string_equal(ji.ids, "2,3");
    assert_string_equal(ji.state, "PENDING(held),PENDING(held)");
    assert_int_equal(tide_backend_job_alive(f->b, h), 0);
    assert_int_equal(status(f).requeues, 2);
    assert_int_equal(status(f).signals, 2);
    /* the need goes: replicas go, j1 starts again on the same Slurm jobs */
    fk_run_pending();
    tide_time_t t = 160;
    fx_ev1(f, t, ev_of(TIDE_EV_DEMAND, -1, 50));
    while (!fx_act(f, TIDE_ACT_JOB_START, h) && t < 3000)
        fx_tick(f, t += 10);
    const tide_action_t *st = fx_act(f, TIDE_ACT_JOB_START, h);
    assert_non_null(st);
    assert_true(fk_count(C_CANCEL, 0, -1) >= 1); /* a replica went */
    assert_int_equal(fk_submits("tide.job.j1."), 2); /* no new Slurm job */
    dl = lease_deadline(f, h);
    for (uint32_t id = 2; id <= 3; id++) {
        char want[16];
        node_of(f, st, (int)id - 2, want);
        assert_int_equal(fk_count(C_SETNODES, id, -1), 1);
        assert_int_equal(fk_count(C_RELEASE, id, -1), 1);
        assert_string_equal(fk_get(id)->nodelist, want);
        assert_int_equal(fk_get(id)->j.held, 0);
        assert_int_equal(fk_get(id)->j.time_limit_min, want_minutes(dl, t));
        int sn = -1, tl = -1, rl = -1; /* the last of each: nodes, limit, then release */
        for (int i = 0; i < f->fk.ncalls; i++) {
            int op = f->fk.call[i].id == id ? f->fk.call[i].op : -1;
            sn = op == C_SETNODES ? i : sn;
            tl = op == C_SETTL ? i : tl;
            rl = op == C_RELEASE ? i : rl;
        }
        assert_true(sn >= 0 && sn < tl && tl < rl);
    }
    /* running again: restoring -> training, reported once both gangs run */
    fk_run_pending();
    fx_tick(f, t + 10);
    assert_int_equal(polled(f, TIDE_EV_JOB_PHASE, h), 1);
    assert_int_equal(polled_ev(f, TIDE_EV_JOB_PHASE)->phase, TIDE_PHASE_TRAINING);
    assert_true(polled_ev(f, TIDE_EV_JOB_PHASE)->value == 100);
    assert_int_equal(tide_backend_job_info(f->b, h, &ji), 0);
    assert_string_equal(ji.state, "RUNNING,RUNNING");
    assert_int_equal(ji.restarts, 1);
    assert_int_equal(ji.exit_code, -1);
    fx_free(f);
}

/* While Slurm has not started the gangs their limits count from now, a notice
 * close to the deadline covers the deadline, never 0 (= INFINITE); gangs still
 * pending after pending_timeout_s (180) fail the run. */
static void pending_gang_limits(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    fx_training(f);
    for (uint32_t id = 2; id <= 3; id++)
        fk_get(id)->j.state = TIDE_SJOB_PENDING; /* Slurm has not started them after all */
    for (tide_time_t t = 20; t <= 90; t += 10) {
        fx_tick(f, t);
        assert_no_events(f);
        assert_int_equal(fk_get(2)->j.time_limit_min, want_minutes(610, t));
    }
    assert_int_equal(fk_get(3)->j.time_limit_min, 7); /* (610 - 60 - 90) / 60 */
    fx_ev1(f, 100, ev_of(TIDE_EV_DEMAND, -1, 250));
    assert_non_null(fx_act(f, TIDE_ACT_JOB_CKPT, f->job));
    assert_int_equal(lease_deadline(f, f->job), 230);
    for (tide_time_t t = 110; t <= 190; t += 10) {
        fx_tick(f, t);
        assert_no_events(f);
        /* a pending gang's limit counts from now; once the deadline is under
         * slack + 60 s away the limit covers the deadline itself (a notice:
         * never kill the checkpoint being written), never 0 */
        uint32_t want = 230 - 60 >= t + 60 ? (uint32_t)((230 - 60 - t) / 60)
                                           : (uint32_t)((230 - t + 59) / 60);
        assert_int_equal(fk_get(2)->j.time_limit_min, want < 1 ? 1 : want);
    }
    assert_int_equal(fk_count(C_SETTL, 0, 0), 0);
    assert_int_equal(fk_get(2)->j.time_limit_min, 1); /* (230 - 190 + 59) / 60 */
    fx_tick(f, 200); /* pending since 10 */
    assert_int_equal(polled(f, TIDE_EV_RANK_FAILED, f->job), 1);
    assert_non_null(strstr(f->logbuf, "still pending after 190s"));
    fx_free(f);
}

/* Was a bug (be_lease): the engine emits LEASE_RETURN before
 * JOB_STOP (src/core/jobs.c:270-276, job_stop). be_lease gets it while
 * j->active is still 1; job_deadline() returns 0 for the returned lease,
 * limit_minutes() 0, and reconcile_gang (slurm.c:547-551) sets every running
 * gang's time limit to 0 = INFINITE just before be_stop requeues it (same on
 * RANK_FAILED / EXPIRED stops, for the surviving gangs). If that requeue does
 * not go through (slurmctld busy or unreachable - it is only retried at later
 * polls - or tide dies meanwhile), the gang keeps the reclaimed GPUs with no
 * limit: "Slurm returns the GPUs even if tide is down" no longer holds. */
static void regression_lease_return_keeps_time_limit(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    fx_notice(f);
    f->fk.fail_op[C_REQUEUE] = 1; /* the requeue does not go through */
    fx_commit(f, 150);
    assert_int_equal(fk_get(2)->j.state, TIDE_SJOB_RUNNING); /* still on the GPUs */
    assert_true(fk_get(2)->j.time_limit_min != 0);
    assert_true(fk_get(3)->j.time_limit_min != 0);
    assert_int_equal(fk_count(C_SETTL, 0, 0), 0);
    fx_free(f);
}

/* ------------------------------------------------------------ 5. polling */

static void poll_job_finished(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    fx_training(f);
    int32_t h = f->job;
    fk_end(2, TIDE_SJOB_COMPLETED, 0);
    fx_tick(f, 20);
    assert_no_events(f); /* one gang of two */
    fk_end(3, TIDE_SJOB_COMPLETED, 0);
    fx_tick(f, 30);
    assert_int_equal(f->nev, 1);
    assert_int_equal(polled(f, TIDE_EV_JOB_FINISHED, h), 1);
    assert_int_equal(engine_state(f, h), TIDE_JOB_DONE);
    fx_tick(f, 40);
    assert_no_events(f); /* once */
    assert_int_equal(status(f).exits_ok, 2);
    assert_int_equal(status(f).exits_failed, 0);
    tide_backend_job_info_t ji;
    assert_int_equal(tide_backend_job_info(f->b, h, &ji), 0);
    assert_int_equal(ji.exit_code, 0);
    assert_string_equal(ji.state, "COMPLETED,COMPLETED");
    assert_int_equal(fk_count(C_CANCEL, 0, -1) + fk_count(C_REQUEUE, 0, -1), 0);
    fx_free(f);
}

static void poll_failures_then_cancel(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    fx_training(f);
    int32_t h = f->job;
    tide_time_t t = 10;
    for (int run = 1; run <= 3; run++) {
        uint32_t id = 0; /* the newest running gang */
        for (int i = 0; i < f->fk.njobs; i++)
            if (!strncmp(f->fk.job[i].j.name, "tide.job.j1.", 12) &&
                f->fk.job[i].j.state == TIDE_SJOB_RUNNING)
                id = f->fk.job[i].j.id;
        fk_end(id, TIDE_SJOB_FAILED, 3);
        fx_tick(f, t += 10);
        assert_int_equal(f->nev, 1);
        assert_int_equal(polled(f, run < 3 ? TIDE_EV_RANK_FAILED : TIDE_EV_JOB_CANCEL, h), 1);
        tide_backend_job_info_t ji;
        assert_int_equal(tide_backend_job_info(f->b, h, &ji), 0);
        assert_int_equal(ji.exit_code, 3);
        if (run == 3)
            break;
        while (!fx_act(f, TIDE_ACT_JOB_START, h) && t < 2000) /* requeued: restarted */
            fx_tick(f, t += 10);
        assert_non_null(fx_act(f, TIDE_ACT_JOB_START, h));
        fk_run_pending();
    }
    assert_int_equal(engine_state(f, h), TIDE_JOB_CANCELLED);
    /* each failed gang was replaced by a new Slurm job under the same gang
     * index (a job of width 2 keeps gangs 0 and 1), the survivor reused */
    assert_int_equal(fk_submits("tide.job.j1."), 4);
    assert_null(fk_named("tide.job.j1.g2"));
    assert_null(fk_named("tide.job.j1.g3"));
    for (int i = 0; i < f->fk.njobs; i++) /* nothing of j1 left */
        assert_true(strncmp(f->fk.job[i].j.name, "tide.job.j1.", 12) || fk_ended(&f->fk.job[i]));
    assert_int_equal(status(f).exits_failed, 3);
    fx_free(f);
}

static void poll_timeout_and_replica_end(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    fx_training(f);
    int32_t h = f->job;
    fk_end(3, TIDE_SJOB_TIMEOUT, 0);
    fx_tick(f, 20);
    assert_int_equal(polled(f, TIDE_EV_JOB_EXPIRED, h), 1);
    assert_int_equal(polled(f, TIDE_EV_RANK_FAILED, -1), 0);
    assert_int_equal(status(f).timeouts, 1);
    fk_end(1, TIDE_SJOB_FAILED, 1); /* the replica's Slurm job */
    fx_tick(f, 30);
    assert_int_equal(polled(f, TIDE_EV_REPLICA_FAILED, -1), 1);
    assert_int_equal(polled_ev(f, TIDE_EV_REPLICA_FAILED)->replica, 0);
    assert_int_equal(polled_ev(f, TIDE_EV_REPLICA_FAILED)->service, 0);
    assert_int_equal(tide_backend_replica_alive(f->b, 0), 0);
    const tide_action_t *rs = fx_act(f, TIDE_ACT_REPLICA_START, -1); /* replaced */
    assert_true(rs && rs->replica > 0);
    char name[64];
    snprintf(name, sizeof name, "tide.rep.%d.chat", rs->replica);
    assert_non_null(fk_named(name));
    fx_tick(f, 40);
    assert_int_equal(polled(f, TIDE_EV_REPLICA_FAILED, -1), 0); /* once */
    fx_free(f);
}

/* A gang Slurm no longer lists (purged, or lost): after 30 s it counts as ended. */
static void poll_job_missing(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    fx_training(f);
    snprintf(fk_get(3)->j.name, 128, "purged"); /* out of the "tide." listing */
    fx_tick(f, 20);
    fx_tick(f, 40); /* submitted at 10: 30 s of grace */
    assert_no_events(f);
    fx_tick(f, 42);
    assert_int_equal(f->nev, 1);
    assert_int_equal(polled(f, TIDE_EV_RANK_FAILED, f->job), 1);
    assert_non_null(strstr(f->logbuf, "ended CANCELLED, exit code -1"));
    fx_free(f);
}

static void poll_nodes(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    fx_ev1(f, 0, ev_of(TIDE_EV_DEMAND, -1, 50));
    fk_run_pending();
    fx_tick(f, 10);
    f->fk.node[3].state = TIDE_SNODE_DRAIN; /* gpu3 = tide node 2 */
    snprintf(f->fk.node[3].reason, 128, "xid 79");
    assert_int_equal(fx_poll(f, 11), 0); /* within poll_s (2 s): Slurm not read */
    assert_int_equal(fx_poll(f, 12), 1);
    assert_int_equal(f->ev[0].kind, TIDE_EV_NODE_FAILED);
    assert_int_equal(f->ev[0].node, 2);
    assert_non_null(strstr(f->logbuf, "node gpu3 is drained: xid 79"));
    f->fk.node[3].state = TIDE_SNODE_DOWN; /* still bad: nothing new */
    assert_int_equal(fx_poll(f, 14), 0);
    f->fk.node[3].state = TIDE_SNODE_UP;
    assert_int_equal(fx_poll(f, 15), 0);
    assert_int_equal(fx_poll(f, 16), 1);
    assert_int_equal(f->ev[0].kind, TIDE_EV_NODE_RECOVERED);
    assert_int_equal(f->ev[0].node, 2);
    /* down (not responding, not registered after a slurmctld restart): a
     * failure only once it lasted node_grace_s (30 s); a blip is nothing */
    f->fk.node[4].state = TIDE_SNODE_DOWN;
    fx_tick(f, 20);
    assert_int_equal(f->nev, 0);
    f->fk.node[4].state = TIDE_SNODE_UP;
    fx_tick(f, 23);
    assert_int_equal(f->nev, 0);
    f->fk.node[4].state = TIDE_SNODE_DOWN; /* through the engine */
    fx_tick(f, 26);
    assert_int_equal(f->nev, 0);
    fx_tick(f, 50);
    assert_int_equal(f->nev, 0); /* 24 s */
    fx_tick(f, 57);
    assert_int_equal(f->nev, 1); /* 31 s */
    assert_int_equal(polled_ev(f, TIDE_EV_NODE_FAILED)->node, 3);
    f->fk.node[4].state = TIDE_SNODE_UP;
    fx_tick(f, 60);
    assert_int_equal(f->nev, 1);
    assert_int_equal(polled_ev(f, TIDE_EV_NODE_RECOVERED)->node, 3);
    fx_free(f);
}

/* Coexistence: jobs tide does not manage (plain sbatch jobs) on its nodes.
 * Their GPUs (GRES per node) become TIDE_EV_FOREIGN per node; tide places
 * nothing there and starts when they end. Pending, ended and GPU-less jobs
 * hold nothing; a completing one still does. */
static uint32_t fk_user(const char *name, int state, const char *nodes, int gpn)
{
    uint32_t id = fk_add(name, state);
    fjob_t *x = fk_get(id);
    assert_non_null(x);
    snprintf(x->j.nodes, sizeof x->j.nodes, "%s", nodes);
    x->j.gpus_per_node = gpn;
    return id;
}

static void foreign_jobs_coexist(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    fx_ev1(f, 0, ev_of(TIDE_EV_DEMAND, -1, 50));
    fk_run_pending(); /* the replica: tide node 0 (gpu1) */
    uint32_t u1 = fk_user("user-train", TIDE_SJOB_RUNNING, "gpu[3-4]", 8);
    fk_user("user-small", TIDE_SJOB_RUNNING, "gpu2", 2);
    fk_user("user-pending", TIDE_SJOB_PENDING, "", 8); /* no nodes yet */
    fk_user("user-cpu", TIDE_SJOB_RUNNING, "gpu2,cpu1", 0);
    fk_user("user-done", TIDE_SJOB_COMPLETED, "gpu2", 8);
    tide_event_t ready = ev_of(TIDE_EV_REPLICA_READY, -1, 0);
    ready.replica = ready.service = 0;
    fx_ev1(f, 10, ready);
    assert_int_equal(polled(f, TIDE_EV_FOREIGN, -1), 3);
    int want[4] = {0, 2, 8, 8};
    for (int k = 0; k < 4; k++) {
        int w = -1;
        assert_int_equal(tide_engine_node_foreign(f->e, k, &w), want[k]);
        assert_int_equal(w, want[k]);
    }
    assert_non_null(strstr(f->logbuf, "node gpu3: 8 of its 8 GPUs held by jobs tide does not manage"));
    /* j1 (two gangs of 8) cannot start: gpu2 has 6 GPUs left */
    fx_ev1(f, 12, ev_submit(&f->spec));
    f->job = tide_engine_job_find(f->e, "j1");
    for (tide_time_t t = 14; t <= 30; t += 2)
        fx_tick(f, t);
    assert_int_equal(engine_state(f, f->job), TIDE_JOB_QUEUED);
    assert_int_equal(fk_submits("tide.job."), 0);
    /* the big user job is completing: still holds its GPUs */
    fk_end(u1, TIDE_SJOB_COMPLETED, 0);
    fjob_t *x1 = fk_get(u1);
    assert_non_null(x1);
    x1->j.completing = 1;
    fx_tick(f, 32);
    assert_int_equal(polled(f, TIDE_EV_FOREIGN, -1), 0);
    x1->j.completing = 0;
    fx_tick(f, 34);
    assert_int_equal(polled(f, TIDE_EV_FOREIGN, -1), 2);
    assert_int_equal(engine_state(f, f->job), TIDE_JOB_RUNNING);
    assert_int_equal(fk_submits("tide.job.j1."), 2);
    for (int i = 0; i < f->fk.njobs; i++)
        if (!strncmp(f->fk.job[i].j.name, "tide.job.", 9))
            assert_true(!strcmp(f->fk.job[i].nodelist, "gpu3") ||
                        !strcmp(f->fk.job[i].nodelist, "gpu4"));
    tide_stats_t st;
    tide_engine_stats(f->e, &st);
    assert_int_equal(st.gpus_now[TIDE_C_NONE][TIDE_S_FOREIGN], 2);
    assert_float_equal(st.lost_gpu_s, 0, 1e-9);
    fx_free(f);
}

/* ------------------------------------------------------------ 6. outage */

static void outage_retries(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    fx_ev1(f, 0, ev_of(TIDE_EV_DEMAND, -1, 50));
    fk_run_pending();
    f->fk.down = 1;
    fx_ev1(f, 10, ev_submit(&f->spec));
    int32_t h = tide_engine_job_find(f->e, "j1");
    assert_non_null(fx_act(f, TIDE_ACT_JOB_START, h));
    assert_int_equal(f->refused, 0); /* accepted: enacted when Slurm answers */
    assert_int_equal(f->fk.njobs, 1);
    tide_backend_status_t bs = status(f);
    assert_int_equal(bs.reachable, 0);
    assert_true(bs.errors > 0);
    assert_int_equal(bs.submits, 1);
    assert_non_null(strstr(f->logbuf, "Slurm unreachable (slurmctld: connection refused)"));
    fx_tick(f, 20);
    assert_no_events(f);
    assert_int_equal(f->fk.njobs, 1);
    bs = status(f);
    assert_true(bs.reachable == 0 && bs.errors >= 2);
    f->fk.down = 0;
    fx_tick(f, 30);
    assert_no_events(f);
    assert_int_equal(f->fk.njobs, 3);
    assert_non_null(fk_named("tide.job.j1.g1"));
    /* submitted at 30 for a lease ending at 610: (610 - 60 - 30) / 60 = 8 */
    assert_int_equal(fk_named("tide.job.j1.g0")->j.time_limit_min, 8);
    tide_backend_status_t now = status(f);
    assert_int_equal(now.reachable, 1);
    assert_int_equal(now.errors, bs.errors);
    assert_int_equal(now.submits, 3);
    assert_int_equal(now.pending_ops, 0);
    assert_non_null(strstr(f->logbuf, "Slurm answers again"));
    /* a checkpoint notice during an outage is delivered once Slurm answers */
    fk_run_pending();
    fx_poll(f, 32); /* sees the gangs run */
    f->fk.down = 1;
    tide_action_t ck = {.kind = TIDE_ACT_JOB_CKPT, .reason = TIDE_R_RECLAIM, .job = h,
                        .service = -1, .replica = -1, .lease = -1};
    assert_int_equal(enact1(f, ck, NULL, NULL), 0);
    fx_poll(f, 40);
    assert_int_equal(fk_count(C_SIGNAL, 0, -1), 0);
    f->fk.down = 0;
    assert_int_equal(fx_poll(f, 50), 0);
    assert_int_equal(fk_count(C_SIGNAL, 2, SIGUSR1), 1);
    assert_int_equal(fk_count(C_SIGNAL, 3, SIGUSR1), 1);
    fx_free(f);
}

/* Was a bug (refresh): pending_ops ("changes waiting
 * because the cluster engine did not answer") is only recomputed at the end of
 * a refresh that could list the jobs. During an outage refresh returns early,
 * so /metrics shows the last value (here 0) exactly while changes wait.
 * (Replicas waiting for their submit are never counted either: 1140-1143.) */
static void regression_pending_ops_during_outage(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    fx_ev1(f, 0, ev_of(TIDE_EV_DEMAND, -1, 50));
    f->fk.down = 1;
    fx_ev1(f, 10, ev_submit(&f->spec));
    assert_non_null(fx_act(f, TIDE_ACT_JOB_START, -1));
    fx_tick(f, 20);
    fx_tick(f, 30);
    assert_int_equal(status(f).reachable, 0);
    assert_int_equal(f->fk.njobs, 1);
    assert_int_equal(status(f).pending_ops, 2);
    fx_free(f);
}

/* ------------------------------------------------------------ 7. adoption */

static void restart_adopts(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    fx_training(f);
    int32_t h = f->job;
    fx_tick(f, 20);
    tide_backend_destroy(f->b);
    /* also in Slurm: a job of another database, a replica nobody claims, an old end */
    uint32_t ghost = fk_add("tide.job.ghost.g0", TIDE_SJOB_RUNNING);
    uint32_t orphan = fk_add("tide.rep.7.chat", TIDE_SJOB_RUNNING);
    uint32_t old = fk_add("tide.job.j1.g9", TIDE_SJOB_COMPLETED);
    uint32_t other = fk_add("someone.else", TIDE_SJOB_RUNNING);
    int calls = f->fk.ncalls;
    f->fk.now = BASE + 25;
    f->b = fx_backend(f, NULL);
    assert_non_null(f->b);
    assert_int_equal(fk_count(C_CANCEL, ghost, -1), 1);
    assert_int_equal(f->fk.ncalls, calls + 1);
    assert_non_null(strstr(f->logbuf, "tide.job.ghost.g0) is unknown to this database"));
    assert_int_equal(tide_backend_job_alive(f->b, h), 1);
    assert_int_equal(tide_backend_replica_alive(f->b, 0), 1);
    assert_int_equal(tide_backend_job_alive(f->b, h + 1), 0);
    assert_int_equal(tide_backend_replica_alive(f->b, 3), 0);
    tide_backend_job_info_t ji;
    assert_int_equal(tide_backend_job_info(f->b, h, &ji), 0);
    assert_string_equal(ji.ids, "2,3");
    assert_string_equal(ji.state, "RUNNING,RUNNING");
    fk_end(2, TIDE_SJOB_COMPLETED, 0); /* j1 is followed as before: it ends */
    fk_end(3, TIDE_SJOB_COMPLETED, 0);
    fx_tick(f, 30);
    assert_int_equal(f->nev, 1);
    assert_int_equal(polled(f, TIDE_EV_JOB_FINISHED, h), 1);
    /* the unclaimed replica goes; the claimed jobs are left alone */
    assert_int_equal(fk_count(C_CANCEL, orphan, -1), 1);
    assert_int_equal(fk_get(orphan)->j.state, TIDE_SJOB_CANCELLED);
    assert_int_equal(fk_get(1)->j.state, TIDE_SJOB_RUNNING);
    assert_int_equal(fk_count(C_CANCEL, old, -1) + fk_count(C_CANCEL, other, -1), 0);
    assert_int_equal(f->fk.ncalls, calls + 2); /* no submit, requeue, limit change, cancel */
    fx_free(f);
}

static void restart_unclaimed_cancelled(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    fx_training(f);
    tide_backend_destroy(f->b);
    f->b = fx_backend(f, NULL);
    assert_non_null(f->b);
    f->fk.node[4].state = TIDE_SNODE_DRAIN; /* nodes still watched */
    assert_int_equal(fx_poll(f, 20), 1);     /* the daemon claimed nothing */
    assert_int_equal(f->ev[0].kind, TIDE_EV_NODE_FAILED);
    assert_int_equal(f->ev[0].node, 3);
    for (uint32_t id = 1; id <= 3; id++)
        assert_int_equal(fk_count(C_CANCEL, id, -1), 1);
    assert_int_equal(tide_backend_job_alive(f->b, f->job), 0);
    fx_free(f);
}

/* Was a bug (adopt) and 1203-1217 (be_rep_alive): an adopted
 * replica never gets its service back (p->service stays 0; the "<svc>" of
 * "tide.rep.<h>.<svc>" is not read), so its REPLICA_FAILED after a restart
 * names service 0 (rep_observe, slurm.c:1055), and the daemon stores the event
 * under the wrong service (daemon.c persist_step: service_name_of(ev.service)). */
static void regression_adopted_replica_keeps_service(void **state)
{
    (void)state;
    fx_t *f = fx_new_svcs(2);
    fx_ev1(f, 0, ev_of(TIDE_EV_DEMAND, -1, 50));
    int32_t r = -1;
    for (size_t i = 0; i < f->acts.n; i++)
        if (f->acts.v[i].kind == TIDE_ACT_REPLICA_START && f->acts.v[i].service == 1)
            r = f->acts.v[i].replica;
    char name[64];
    snprintf(name, sizeof name, "tide.rep.%d.embed", r);
    assert_non_null(fk_named(name));
    fk_run_pending();
    tide_backend_destroy(f->b);
    f->b = fx_backend(f, NULL);
    assert_int_equal(tide_backend_replica_alive(f->b, r), 1);
    fk_end(fk_named(name)->j.id, TIDE_SJOB_FAILED, 1);
    assert_int_equal(fx_poll(f, 10), 1);
    assert_int_equal(f->ev[0].kind, TIDE_EV_REPLICA_FAILED);
    assert_int_equal(f->ev[0].replica, r);
    assert_int_equal(f->ev[0].service, 1);
    fx_free(f);
}

/* ------------------------------------------------------------ 8. job_info */

/* Shadow mode: the backend is read-only (every write refused before Slurm and
 * counted) and wrapped in a shadow (src/backend/shadow.c): the engine's
 * actions play out on the twin (a replica becomes ready there), Slurm's
 * observations of the cluster itself (foreign jobs, nodes) still come
 * through, and Slurm sees no submit, signal, update or cancel. */
static void shadow_reads_only(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    tide_backend_destroy(f->b);
    uint32_t ghost = fk_add("tide.job.ghost.g0", TIDE_SJOB_RUNNING); /* another database's */
    f->o.read_only = 1;
    tide_error_t err = {0};
    tide_backend_t *real = fx_backend(f, &err);
    assert_non_null(real);
    assert_int_equal(fk_count(C_CANCEL, ghost, -1), 0); /* adopt's cancel was refused */
    f->b = tide_backend_shadow_create(real, f->e, &f->o);
    assert_true(tide_backend_is_shadow(f->b));
    assert_int_equal(status(f).refused, 1);
    assert_non_null(strstr(f->logbuf, "read-only (shadow mode): cancel of job"));
    fk_user("user-train", TIDE_SJOB_RUNNING, "gpu4", 8);
    fx_ev1(f, 0, ev_of(TIDE_EV_DEMAND, -1, 50));
    assert_non_null(fx_act(f, TIDE_ACT_REPLICA_START, -1));
    assert_int_equal(f->refused, 0); /* the twin took it */
    fx_ev1(f, 2, ev_submit(&f->spec));
    for (tide_time_t t = 4; t <= 30; t += 2)
        fx_tick(f, t);
    tide_replica_info_t ri;
    assert_int_equal(tide_engine_replica(f->e, 0, &ri), 0);
    assert_true(ri.ready); /* the twin's REPLICA_READY after warmup_s */
    int w = -1;
    assert_int_equal(tide_engine_node_foreign(f->e, 3, &w), 8); /* Slurm's observation */
    f->job = tide_engine_job_find(f->e, "j1");
    assert_int_equal(engine_state(f, f->job), TIDE_JOB_RUNNING);
    assert_true(tide_backend_job_alive(f->b, f->job)); /* on the twin */
    /* Slurm saw reads only */
    for (int op = 0; op < C_NOPS; op++)
        assert_int_equal(fk_count(op, 0, -1), 0);
    tide_backend_status_t st = status(f);
    assert_int_equal(st.submits + st.signals + st.cancels + st.requeues, 0);
    assert_true(st.calls > 0);
    /* leaving shadow mode gives the real backend back */
    f->b = tide_backend_shadow_release(f->b);
    assert_true(f->b == real);
    assert_false(tide_backend_is_shadow(f->b));
    assert_true(tide_backend_shadow_release(f->b) == real);
    fx_free(f);
}

static void job_info_fields(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    tide_backend_job_info_t ji;
    assert_int_equal(tide_backend_job_info(f->b, 0, &ji), -1);
    fx_training(f);
    int32_t h = f->job;
    assert_int_equal(tide_backend_job_info(f->b, h, &ji), 0);
    assert_string_equal(ji.ids, "2,3");
    assert_string_equal(ji.state, "PENDING,PENDING"); /* not polled since the submit */
    assert_string_equal(ji.nodes, "");
    fx_tick(f, 20);
    assert_int_equal(tide_backend_job_info(f->b, h, &ji), 0);
    assert_string_equal(ji.state, "RUNNING,RUNNING");
    char want[600];
    snprintf(want, sizeof want, "%s,%s", fk_get(2)->nodelist, fk_get(3)->nodelist);
    assert_string_equal(ji.nodes, want);
    assert_int_equal(ji.restarts, 0);
    assert_int_equal(ji.exit_code, -1);
    assert_int_equal(tide_backend_job_info(f->b, h + 1, &ji), -1);
    assert_int_equal(tide_backend_job_info(f->b, -1, &ji), -1);
    fx_free(f);
}

/* ------------------------------------------------------------ 9. bad input */

/* j2 (24 GPUs) waits behind j1: hand-made actions name it. */
static int32_t fx_queued_j2(fx_t *f)
{
    fx_training(f);
    tide_job_spec_t s2 = f->spec;
    s2.id = "j2";
    s2.gpus = 24;
    fx_ev1(f, 20, ev_submit(&s2));
    int32_t h2 = tide_engine_job_find(f->e, "j2");
    assert_int_equal(engine_state(f, h2), TIDE_JOB_QUEUED);
    return h2;
}

/* A short lease (110 s, renewed every control period) keeps its slack: the
 * latest return is always less than slack + 60 s away, yet the limit must
 * never cover it (only a reclaim notice may: the fresh CI run caught a limit
 * that ended after the latest return). */
static void short_lease_keeps_slack(void **state)
{
    (void)state;
    fx_lease_max = 110;
    fx_t *f = fx_new();
    fx_lease_max = 600;
    fx_training(f);
    int checked = 0;
    for (tide_time_t t = 20; t <= 300; t += 10) {
        fx_tick(f, t);
        tide_time_t dl = lease_deadline(f, f->job);
        assert_true(dl <= t + 110);
        for (uint32_t id = 2; id <= 3; id++) {
            assert_int_equal(fk_get(id)->j.state, TIDE_SJOB_RUNNING);
            uint32_t m = fk_get(id)->j.time_limit_min;
            assert_int_equal(m, want_minutes(dl, 10));
            /* Slurm ends it by start + limit + 30 s check + KillWait 5 s */
            assert_true(10 + (tide_time_t)m * 60 + 35 <= dl || m == 1);
            checked++;
        }
    }
    assert_int_equal(checked, 58);
    fx_free(f);
}

/* --ckpt-signal: names with or without SIG, any case, or their numbers; a
 * job is told the signal by name, so only named signals are accepted. */
static void signal_names(void **state)
{
    (void)state;
    assert_int_equal(tide_signal_parse("USR1"), SIGUSR1);
    assert_int_equal(tide_signal_parse("SIGUSR2"), SIGUSR2);
    assert_int_equal(tide_signal_parse("sigurg"), SIGURG);
    assert_int_equal(tide_signal_parse("term"), SIGTERM);
    char num[16];
    snprintf(num, sizeof num, "%d", SIGUSR2);
    assert_int_equal(tide_signal_parse(num), SIGUSR2);
    assert_int_equal(tide_signal_parse("35"), -1);
    assert_int_equal(tide_signal_parse("KILL"), -1);
    assert_int_equal(tide_signal_parse("SIG"), -1);
    assert_int_equal(tide_signal_parse(""), -1);
    assert_int_equal(tide_signal_parse(NULL), -1);
    assert_int_equal(tide_signal_parse("-10"), -1);
    assert_string_equal(tide_signal_name(SIGUSR2), "USR2");
    assert_string_equal(tide_signal_name(SIGURG), "URG");
}

static void bad_input_refused(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    int32_t h2 = fx_queued_j2(f);
    int njobs = f->fk.njobs;
    int32_t g[8] = {0, 1, 2, 3, 4, 5, 6, 8}; /* 7 on gpu1, 1 on gpu2 */
    tide_action_t a = {.kind = TIDE_ACT_JOB_START, .job = h2, .service = -1, .replica = -1,
                       .lease = -1, .width = 1, .n_gpus = 8};
    tide_error_t err = {0};
    assert_int_equal(enact1(f, a, g, &err), 0);
    assert_non_null(strstr(f->logbuf, "job j2: a gang of 8 GPUs spread unevenly over the nodes "
                                      "gpu1,gpu2: Slurm gives one GPU count per node"));
    g[7] = 999;
    assert_int_equal(enact1(f, a, g, &err), 0);
    assert_non_null(strstr(f->logbuf, "job j2: GPU 999 is not in the cluster"));
    g[7] = -5;
    assert_int_equal(enact1(f, a, g, &err), 0);
    assert_non_null(strstr(f->logbuf, "job j2: GPU -5 is not in the cluster"));
    /* not whole gangs, no GPUs, unknown jobs: refused with EINVAL */
    a.n_gpus = 7;
    assert_int_equal(enact1(f, a, g, &err), 1);
    assert_int_equal(err.code, TIDE_EINVAL);
    a.kind = TIDE_ACT_JOB_RESIZE;
    assert_int_equal(enact1(f, a, g, &err), 1);
    a.kind = TIDE_ACT_JOB_START;
    a.n_gpus = 8;
    assert_int_equal(enact1(f, a, NULL, &err), 1);
    a.job = 4242;
    assert_int_equal(enact1(f, a, g, &err), 1);
    a.job = -3;
    assert_int_equal(enact1(f, a, g, &err), 1);
    /* stop, notice, lease, replica stop of what the backend does not know: no-ops */
    int kinds[] = {TIDE_ACT_JOB_STOP, TIDE_ACT_JOB_CKPT, TIDE_ACT_LEASE_RENEW,
                   TIDE_ACT_REPLICA_STOP};
    int32_t ids[2] = {-1, 4242};
    for (int i = 0; i < 8; i++) {
        tide_action_t b = {.kind = kinds[i / 2], .job = ids[i % 2], .replica = ids[i % 2]};
        assert_int_equal(enact1(f, b, NULL, &err), 0);
    }
    assert_int_equal(f->fk.njobs, njobs);
    /* a replica spread unevenly: refused, reported failed */
    int32_t rg[8] = {16, 17, 18, 19, 20, 21, 22, 24};
    tide_action_t r = {.kind = TIDE_ACT_REPLICA_START, .job = -1, .service = 0, .replica = 9,
                       .lease = -1, .n_gpus = 8};
    assert_int_equal(enact1(f, r, rg, &err), 0);
    assert_non_null(strstr(f->logbuf, "replica 9: a gang of 8 GPUs spread unevenly over the "
                                      "nodes gpu3,gpu4"));
    /* every refused start of j2 was a failed run (three: the last one gives up) */
    assert_int_equal(fx_poll(f, 30), 4);
    assert_int_equal(polled(f, TIDE_EV_RANK_FAILED, h2), 2);
    assert_int_equal(polled(f, TIDE_EV_JOB_CANCEL, h2), 1);
    assert_int_equal(polled(f, TIDE_EV_REPLICA_FAILED, -1), 1);
    assert_int_equal(f->ev[3].kind, TIDE_EV_REPLICA_FAILED);
    assert_int_equal(f->ev[3].replica, 9);
    assert_int_equal(f->fk.njobs, njobs);
    assert_int_equal(fk_get(2)->j.state, TIDE_SJOB_RUNNING); /* j1 untouched */
    fx_free(f);
}

/* Was a bug (be_start): a gang that cannot be placed (gang_place
 * refuses: GPUs spread unevenly, or not in the cluster) is only logged and
 * marked W_GONE + failed. Nothing ever reaches the engine: reconcile_gang
 * returns 0 for failed gangs (slurm.c:511) and job_observe skips gangs that
 * are not W_RUN (slurm.c:972), so the engine believes the job runs, keeps its
 * GPUs idle and renews its lease forever. The same refusal for a replica is
 * reported (REPLICA_FAILED, slurm.c:816-820), and a submit Slurm refuses
 * becomes RANK_FAILED / JOB_CANCEL (slurm.c:597-602): this should too. */
static void regression_unplaceable_gang_reported(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    int32_t h2 = fx_queued_j2(f);
    int32_t g[8] = {0, 1, 2, 3, 4, 5, 6, 8};
    tide_action_t a = {.kind = TIDE_ACT_JOB_START, .job = h2, .service = -1, .replica = -1,
                       .lease = -1, .width = 1, .n_gpus = 8};
    assert_int_equal(enact1(f, a, g, NULL), 0);
    int reported = 0;
    for (tide_time_t t = 30; t <= 80; t += 10) {
        fx_poll(f, t);
        reported += polled(f, TIDE_EV_RANK_FAILED, h2) + polled(f, TIDE_EV_JOB_CANCEL, h2);
    }
    assert_int_equal(reported, 1);
    fx_free(f);
}

/* Was a bug (be_rstart): when gang_place refuses a replica's GPUs,
 * be_rstart reports REPLICA_FAILED and returns, but p->g.want is left at 0 ==
 * W_RUN (gang_free zeroed the gang, slurm.c:810) with no sid and failed 0. The
 * next refresh's reconcile_rep -> reconcile_gang (slurm.c:513-525) submits the
 * refused replica anyway, on the partial node list gang_place left
 * ("gpu3,gpu4"), nodes 0, 0 GPUs per node: a Slurm job nobody follows
 * (end_sent is 1), for a replica the engine already counts as failed. */
static void regression_refused_replica_never_submitted(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    fx_ev1(f, 0, ev_of(TIDE_EV_DEMAND, -1, 50));
    int njobs = f->fk.njobs;
    int32_t rg[8] = {16, 17, 18, 19, 20, 21, 22, 24};
    tide_action_t r = {.kind = TIDE_ACT_REPLICA_START, .job = -1, .service = 0, .replica = 9,
                       .lease = -1, .n_gpus = 8};
    assert_int_equal(enact1(f, r, rg, NULL), 0);
    assert_int_equal(fx_poll(f, 10), 1); /* REPLICA_FAILED */
    assert_int_equal(fx_poll(f, 20), 0);
    assert_null(fk_named("tide.rep.9.chat"));
    assert_int_equal(f->fk.njobs, njobs);
    fx_free(f);
}

/* A fresh backend polled before any event was ever queued: be_poll must not
 * memcpy from its NULL event buffer (undefined behaviour; UBSan in `make asan`
 * ended the whole process here before slurm.c:1155-1156 returned early). */
static void first_poll_without_events(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    tide_backend_destroy(f->b);
    f->b = fx_backend(f, NULL); /* fresh: no event buffer yet */
    assert_int_equal(fx_poll(f, 0), 0);
    fx_free(f);
}

/* ------------------------------------------------------------ 10. resize */

/* j1's Slurm jobs not ended, oldest first: their ids into ids[], the count returned. */
static int fk_live_j1(uint32_t ids[8])
{
    int n = 0;
    for (int i = 0; i < FK->njobs && n < 8; i++)
        if (!strncmp(FK->job[i].j.name, "tide.job.j1.", 12) && !fk_ended(&FK->job[i]))
            ids[n++] = FK->job[i].j.id;
    return n;
}

/* Calls made to Slurm job id since call number from. */
static int fk_calls_since(int from, uint32_t id)
{
    int n = 0;
    for (int i = from; i < FK->ncalls; i++)
        n += FK->call[i].id == id;
    return n;
}

static tide_action_t resize_act(int32_t h, int width, int reason)
{
    return (tide_action_t){.kind = TIDE_ACT_JOB_RESIZE, .reason = reason, .job = h,
                           .service = -1, .replica = -1, .lease = -1, .width = width,
                           .n_gpus = width * 8};
}

/* The k-th gang's GPUs of action x (8 per gang) into out[0..8). */
static void gang_gpus(const fx_t *f, const tide_action_t *x, int k, int32_t out[8])
{
    assert_true(x->n_gpus >= (k + 1) * 8);
    memcpy(out, f->acts.gpus + x->gpu_off + (size_t)k * 8, 8 * sizeof *out);
}

/* A resize straight to the backend (as the engine's elastic policy emits it):
 * shrink cancels the gang whose GPUs leave and leaves the other alone; grow
 * submits a new gang with the next index, pinned to the new GPUs' node. */
static void resize_shrink_then_grow(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    fx_training(f);
    int32_t h = f->job;
    int32_t g0[8], g1[8], both[16];
    const tide_action_t *st = fx_act(f, TIDE_ACT_JOB_START, h);
    gang_gpus(f, st, 0, g0); /* Slurm job 2, tide.job.j1.g0 */
    gang_gpus(f, st, 1, g1); /* Slurm job 3, tide.job.j1.g1 */
    char node1[16];
    node_of(f, st, 1, node1);
    fx_tick(f, 20); /* both run: phase reported */
    assert_int_equal(polled(f, TIDE_EV_JOB_PHASE, h), 1);
    tide_time_t dl = lease_deadline(f, h);

    /* shrink to g0's GPUs: g1 cancelled, g0 keeps its Slurm job and gets no call */
    int calls = f->fk.ncalls;
    tide_error_t err = {0};
    assert_int_equal(enact1(f, resize_act(h, 1, TIDE_R_RECLAIM), g0, &err), 0);
    assert_int_equal(f->fk.ncalls, calls + 1);
    assert_int_equal(fk_count(C_CANCEL, 3, -1), 1);
    assert_int_equal(fk_get(3)->j.state, TIDE_SJOB_CANCELLED);
    assert_int_equal(fk_get(2)->j.state, TIDE_SJOB_RUNNING);
    assert_int_equal(fk_calls_since(calls, 2), 0);
    assert_int_equal(status(f).cancels, 1);

    /* grow back at once (g1's end not yet seen): the lowest free index, 1
     * again, as a new Slurm job on g1's old node */
    memcpy(both, g0, sizeof g0);
    memcpy(both + 8, g1, sizeof g1);
    calls = f->fk.ncalls;
    assert_int_equal(enact1(f, resize_act(h, 2, TIDE_R_SCALE), both, &err), 0);
    assert_int_equal(f->fk.ncalls, calls + 1);
    assert_int_equal(fk_submits("tide.job.j1.g1"), 2);
    fjob_t *x = fk_get(4);
    assert_non_null(x);
    assert_int_equal(x->j.id, 4);
    assert_string_equal(x->nodelist, node1);
    assert_true(x->nnodes == 1 && x->gpn == 8 && x->requeue == 1 && x->hold == 0);
    assert_string_equal(x->partition, "gpu");
    assert_string_equal(x->script, "#!/bin/bash\nexec python train.py\n");
    assert_string_equal(x->j.name, "tide.job.j1.g1");
    assert_env(x, "TIDE_JOB_ID=j1", "TIDE_GANG=1", "TIDE_GANGS=2", "TIDE_GANG_GPUS=8",
               "TIDE_TEAM=ml", "WANDB_PROJECT=tide", NULL);
    assert_int_equal(x->j.time_limit_min, want_minutes(dl, 20)); /* the lease, from now */
    assert_int_equal(fk_calls_since(calls, 2), 0);
    assert_int_equal(fk_get(3)->j.state, TIDE_SJOB_CANCELLED); /* not revived */

    /* the same two gangs again, listed the other way round: nothing to do */
    memcpy(both, g1, sizeof g1);
    memcpy(both + 8, g0, sizeof g0);
    calls = f->fk.ncalls;
    assert_int_equal(enact1(f, resize_act(h, 2, TIDE_R_SCALE), both, &err), 0);
    assert_int_equal(f->fk.ncalls, calls);

    /* Slurm runs g2 and shows g1 cancelled: no event (g1 left on purpose) */
    fk_run_pending();
    assert_int_equal(fx_poll(f, 30), 0);
    tide_backend_job_info_t ji;
    assert_int_equal(tide_backend_job_info(f->b, h, &ji), 0);
    assert_string_equal(ji.ids, "2,4");
    assert_string_equal(ji.state, "RUNNING,RUNNING");
    assert_int_equal(ji.restarts, 0);

    /* shrink off that gang, Slurm shows it ended (forgotten), grow again: the
     * new gang is tide.job.j1.g1 again (a third Slurm job of that name, id 5) */
    f->now = 30;
    assert_int_equal(enact1(f, resize_act(h, 1, TIDE_R_RECLAIM), g0, &err), 0);
    assert_int_equal(fk_count(C_CANCEL, 4, -1), 1);
    fx_poll(f, 40);
    assert_no_events(f);
    assert_int_equal(tide_backend_job_info(f->b, h, &ji), 0);
    assert_string_equal(ji.ids, "2");
    f->now = 40;
    memcpy(both, g0, sizeof g0);
    memcpy(both + 8, g1, sizeof g1);
    assert_int_equal(enact1(f, resize_act(h, 2, TIDE_R_SCALE), both, &err), 0);
    assert_int_equal(f->fk.njobs, 5);
    assert_string_equal(fk_get(5)->j.name, "tide.job.j1.g1");
    assert_env(fk_get(5), "TIDE_GANG=1", "TIDE_GANGS=2", NULL);
    assert_string_equal(fk_get(5)->nodelist, node1);
    assert_int_equal(fk_count(C_SUBMIT, 0, -1), 5);
    assert_int_equal(fk_count(C_CANCEL, 0, -1), 2);
    assert_int_equal(fk_calls_since(0, 2), 1); /* g0: only its submit, all along */
    fk_run_pending();
    assert_int_equal(fx_poll(f, 50), 0);
    assert_int_equal(tide_backend_job_info(f->b, h, &ji), 0);
    assert_string_equal(ji.ids, "2,5");
    /* the job still ends as a whole: both live gangs complete */
    fk_end(2, TIDE_SJOB_COMPLETED, 0);
    fk_end(5, TIDE_SJOB_COMPLETED, 0);
    assert_int_equal(fx_poll(f, 60), 1);
    assert_int_equal(polled(f, TIDE_EV_JOB_FINISHED, h), 1);
    fx_free(f);
}

/* A resize to GPUs that are not whole gangs, or without GPUs: refused
 * (EINVAL) before anything changes. A gang spread unevenly: the gangs whose
 * GPUs leave go, the new one is refused and the run reported failed. A
 * resize to 0 GPUs cancels every gang. */
static void resize_bad_input(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    fx_training(f);
    int32_t h = f->job;
    int32_t g0[8], both[16];
    const tide_action_t *st = fx_act(f, TIDE_ACT_JOB_START, h);
    gang_gpus(f, st, 0, g0);
    gang_gpus(f, st, 0, both);
    gang_gpus(f, st, 1, both + 8);
    fx_tick(f, 20);
    int calls = f->fk.ncalls;
    tide_error_t err = {0};
    tide_action_t a = resize_act(h, 1, TIDE_R_RECLAIM);
    for (int n = 1; n < 24; n++) {
        if (n % 8 == 0)
            continue;
        a.n_gpus = n; /* 1..7, 9..15, 17..23: not whole gangs of 8 */
        err.code = 0;
        assert_int_equal(enact1(f, a, both, &err), 1);
        assert_int_equal(err.code, TIDE_EINVAL);
    }
    char want[64];
    snprintf(want, sizeof want, "resize of job %d: bad action", h);
    assert_string_equal(err.msg, want);
    a.n_gpus = 8; /* whole, but no GPU list */
    assert_int_equal(enact1(f, a, NULL, &err), 1);
    assert_int_equal(err.code, TIDE_EINVAL);
    a.job = 4242; /* unknown to the engine */
    assert_int_equal(enact1(f, a, g0, &err), 1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_int_equal(f->fk.ncalls, calls); /* nothing happened */
    assert_int_equal(fx_poll(f, 30), 0);
    tide_backend_job_info_t ji;
    assert_int_equal(tide_backend_job_info(f->b, h, &ji), 0);
    assert_string_equal(ji.ids, "2,3");

    /* g0 kept, the second gang 7 GPUs on gpu4 + 1 on gpu3: g1 goes, the new
     * gang is refused (logged), the run failed */
    int32_t bad[16];
    memcpy(bad, g0, sizeof g0);
    for (int i = 0; i < 7; i++)
        bad[8 + i] = 24 + i;
    bad[15] = 16;
    a = resize_act(h, 2, TIDE_R_SCALE);
    assert_int_equal(enact1(f, a, bad, &err), 0);
    assert_non_null(strstr(f->logbuf, "GPUs spread unevenly over the nodes"));
    assert_int_equal(fk_count(C_CANCEL, 3, -1), 1);
    assert_int_equal(fk_count(C_SUBMIT, 0, -1), 3);
    assert_int_equal(fx_poll(f, 40), 1);
    assert_int_equal(polled(f, TIDE_EV_RANK_FAILED, h), 1);

    /* to 0 GPUs: every gang cancelled */
    a = resize_act(h, 0, TIDE_R_RECLAIM);
    assert_int_equal(enact1(f, a, NULL, &err), 0);
    assert_int_equal(fk_count(C_CANCEL, 2, -1), 1);
    uint32_t live[8];
    assert_int_equal(fk_live_j1(live), 0);
    fx_free(f);
}

/* j1 elastic (dp_min 1, 16 GPUs in 2 gangs on lent GPUs). Demand 250 at
 * t=100 needs two more replicas: one on the free node, and the elastic policy
 * shrinks j1 off one node instead of a checkpoint notice (its cheapest
 * victim). kept: the GPUs j1 keeps; gone_node: the node it left. */
static void fx_elastic_shrink(fx_t *f, int32_t kept[8], char gone_node[16])
{
    f->spec.dp_min = 1;
    fx_training(f);
    int32_t h = f->job;
    const tide_action_t *st = fx_act(f, TIDE_ACT_JOB_START, h);
    char n0[16], n1[16];
    node_of(f, st, 0, n0);
    node_of(f, st, 1, n1);
    for (tide_time_t t = 20; t <= 90; t += 10)
        fx_tick(f, t);
    int calls = f->fk.ncalls;
    fx_ev1(f, 100, ev_of(TIDE_EV_DEMAND, -1, 250));
    assert_null(fx_act(f, TIDE_ACT_JOB_CKPT, h)); /* no notice: a shrink */
    assert_null(fx_act(f, TIDE_ACT_JOB_STOP, h));
    const tide_action_t *rs = fx_act(f, TIDE_ACT_JOB_RESIZE, h);
    assert_non_null(rs);
    assert_int_equal(rs->reason, TIDE_R_RECLAIM);
    assert_int_equal(rs->width, 1);
    assert_int_equal(rs->n_gpus, 8);
    assert_int_equal(f->refused, 0);
    gang_gpus(f, rs, 0, kept);
    char kn[16];
    node_of(f, rs, 0, kn);
    assert_true(!strcmp(kn, n0) || !strcmp(kn, n1));
    uint32_t keep_id = !strcmp(kn, n0) ? 2 : 3, gone_id = 5 - keep_id;
    snprintf(gone_node, 16, "%s", keep_id == 2 ? n1 : n0);
    tide_job_info_t ji;
    assert_int_equal(tide_engine_job(f->e, h, &ji), 0);
    assert_int_equal(ji.width, 1);
    assert_int_equal(ji.state, TIDE_JOB_RUNNING);
    /* the fake matches: the leaving gang cancelled, the kept one untouched */
    assert_int_equal(fk_count(C_CANCEL, gone_id, -1), 1);
    assert_int_equal(fk_get(gone_id)->j.state, TIDE_SJOB_CANCELLED);
    assert_int_equal(fk_get(keep_id)->j.state, TIDE_SJOB_RUNNING);
    assert_int_equal(fk_calls_since(calls, keep_id), 0);
    assert_string_equal(fk_get(keep_id)->nodelist, kn);
    /* the replicas: one on the node j1 left */
    int on_gone = 0;
    for (size_t i = 0; i < f->acts.n; i++)
        if (f->acts.v[i].kind == TIDE_ACT_REPLICA_START) {
            char rn[16], name[64];
            node_of(f, &f->acts.v[i], 0, rn);
            snprintf(name, sizeof name, "tide.rep.%d.chat", f->acts.v[i].replica);
            assert_non_null(fk_named(name));
            assert_string_equal(fk_named(name)->nodelist, rn);
            on_gone += !strcmp(rn, gone_node);
        }
    assert_int_equal(on_gone, 1);
    uint32_t live[8];
    assert_int_equal(fk_live_j1(live), 1);
    assert_int_equal(live[0], keep_id);
}

/* After fx_elastic_shrink: demand back to 50 at t=210, the replicas go and j1
 * grows back; ticks until it does. Returns the grow (*t: its time). */
static const tide_action_t *fx_elastic_grow(fx_t *f, tide_time_t *t)
{
    fk_run_pending();
    for (*t = 110; *t <= 200; *t += 10) {
        fx_tick(f, *t);
        assert_int_equal(polled(f, TIDE_EV_RANK_FAILED, -1) + polled(f, TIDE_EV_JOB_EXPIRED, -1),
                         0); /* the cancelled gang is no failure */
    }
    fx_ev1(f, *t = 210, ev_of(TIDE_EV_DEMAND, -1, 50));
    while (!fx_act(f, TIDE_ACT_JOB_RESIZE, f->job) && *t < 3000)
        fx_tick(f, *t += 10);
    return fx_act(f, TIDE_ACT_JOB_RESIZE, f->job);
}

static void elastic_shrink_through_engine(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    int32_t h, kept[8];
    char gone[16];
    fx_elastic_shrink(f, kept, gone);
    h = f->job;
    uint32_t keep_id = fk_get(2)->j.state == TIDE_SJOB_RUNNING ? 2 : 3;
    tide_backend_job_info_t ji;
    assert_int_equal(fx_poll(f, 102), 0);
    assert_int_equal(tide_backend_job_info(f->b, h, &ji), 0);
    char ids[16];
    snprintf(ids, sizeof ids, "%u", keep_id);
    assert_string_equal(ji.ids, ids);
    tide_time_t t;
    const tide_action_t *gr = fx_elastic_grow(f, &t);
    assert_non_null(gr);
    assert_int_equal(gr->reason, TIDE_R_SCALE);
    assert_int_equal(gr->width, 2);
    assert_int_equal(gr->n_gpus, 16);
    assert_int_equal(engine_state(f, h), TIDE_JOB_RUNNING);
    /* the kept gang still first, the new one on a free node */
    int32_t a0[8], a1[8];
    gang_gpus(f, gr, 0, a0);
    gang_gpus(f, gr, 1, a1);
    assert_memory_equal(a0, kept, sizeof a0);
    char nn[16];
    node_of(f, gr, 1, nn);
    /* the fake: one new Slurm job, on the new node (its index: today g2, see
     * regression_grown_gang_indices_in_range) */
    assert_int_equal(fk_submits("tide.job.j1."), 3);
    fjob_t *x = &f->fk.job[f->fk.njobs - 1];
    assert_int_equal(f->fk.call[f->fk.ncalls - 1].op, C_SUBMIT);
    assert_int_equal(f->fk.call[f->fk.ncalls - 1].id, x->j.id);
    int k = -1;
    char gk[32];
    assert_int_equal(sscanf(x->j.name, "tide.job.j1.g%d", &k), 1);
    snprintf(gk, sizeof gk, "TIDE_GANG=%d", k);
    assert_true(strcmp(x->j.name, fk_get(keep_id)->j.name) != 0);
    assert_string_equal(x->nodelist, nn);
    assert_true(x->nnodes == 1 && x->gpn == 8 && x->requeue == 1 && x->hold == 0);
    assert_env(x, gk, "TIDE_GANGS=2", "TIDE_JOB_ID=j1", NULL);
    assert_int_equal(x->j.time_limit_min, want_minutes(lease_deadline(f, h), t));
    assert_int_equal(fk_get(keep_id)->j.state, TIDE_SJOB_RUNNING);
    assert_int_equal(fk_count(C_CANCEL, keep_id, -1) + fk_count(C_REQUEUE, keep_id, -1), 0);
    uint32_t live[8];
    assert_int_equal(fk_live_j1(live), 2);
    /* Slurm starts it: both run, no event; the replicas it replaced went */
    fk_run_pending();
    fx_tick(f, t + 10);
    assert_no_events(f);
    assert_int_equal(tide_backend_job_info(f->b, h, &ji), 0);
    assert_string_equal(ji.state, "RUNNING,RUNNING");
    for (int i = 0; i < f->fk.njobs; i++)
        if (!strncmp(f->fk.job[i].j.name, "tide.rep.", 9) && !fk_ended(&f->fk.job[i]))
            assert_string_not_equal(f->fk.job[i].nodelist, nn);
    fx_free(f);
}

/* Was a bug (be_job_alive): after a restart the adopted gangs got the
 * engine's GPUs in GPU-id order, cut into runs of gang_gpus and handed to the
 * gangs in the order Slurm listed them, never looking at the nodes each Slurm
 * job runs on (obs.nodes); now each gang gets the GPUs of its own nodes. After the
 * elastic shrink + grow below, j1's older gang (g1, Slurm job 3) runs on gpu3
 * and the newer (g2, Slurm job 6) on gpu2, so each is recorded with the
 * other's GPUs. The next resize (same_gpus in be_resize, slurm.c:820) keeps
 * the wrong Slurm job: asked to keep gpu2's GPUs it cancels job 6 - the gang
 * on gpu2 - and keeps job 3 on gpu3, the GPUs the engine just took back for
 * a replica. */
static void regression_adopted_gangs_resize_right_gang(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    int32_t kept[8];
    char gone[16];
    fx_elastic_shrink(f, kept, gone);
    int32_t h = f->job;
    tide_time_t t;
    const tide_action_t *gr = fx_elastic_grow(f, &t);
    assert_non_null(gr);
    int32_t a0[8], a1[8];
    gang_gpus(f, gr, 0, a0);
    gang_gpus(f, gr, 1, a1);
    fk_run_pending();
    fx_tick(f, t += 10);
    /* tide restarts: the same engine, a new backend adopting Slurm's jobs */
    tide_backend_destroy(f->b);
    f->b = fx_backend(f, NULL);
    assert_non_null(f->b);
    assert_int_equal(tide_backend_job_alive(f->b, h), 1);
    for (size_t r = 0; r < 8; r++)
        tide_backend_replica_alive(f->b, (int32_t)r);
    uint32_t live[8];
    assert_int_equal(fk_live_j1(live), 2);
    /* which Slurm job runs on which of the two gangs' nodes */
    char na[16];
    snprintf(na, sizeof na, "gpu%d", a1[0] / 8 + 1);
    uint32_t on_a1 = !strcmp(fk_get(live[0])->nodelist, na) ? live[0] : live[1];
    uint32_t on_a0 = on_a1 == live[0] ? live[1] : live[0];
    /* the engine keeps the grown gang's GPUs (a1), drops the others (a0) */
    f->now = t;
    tide_error_t err = {0};
    assert_int_equal(enact1(f, resize_act(h, 1, TIDE_R_RECLAIM), a1, &err), 0);
    if (fk_count(C_CANCEL, on_a0, -1) != 1 || fk_count(C_CANCEL, on_a1, -1) != 0)
        fail_msg("kept %s's GPUs: cancelled Slurm job %u (%s on %s) %d time(s) and Slurm job %u "
                 "(%s on %s) %d time(s)",
                 na, on_a0, fk_get(on_a0)->j.name, fk_get(on_a0)->nodelist,
                 fk_count(C_CANCEL, on_a0, -1), on_a1, fk_get(on_a1)->j.name,
                 fk_get(on_a1)->nodelist, fk_count(C_CANCEL, on_a1, -1));
    assert_int_equal(fk_get(on_a1)->j.state, TIDE_SJOB_RUNNING);
    fx_free(f);
}

/* Was a bug (be_resize / next_index): a gang's TIDE_GANG is its index, and a
 * new gang got max(index) + 1 over the gangs still listed, never a free lower
 * one (now: the lowest free index). The
 * engine's elastic shrink drops one of j1's gangs (in this fixture g0) and
 * the grow adds tide.job.j1.g2: j1 runs on with TIDE_GANG 1 and 2 while
 * TIDE_GANGS is 2. docs/slurm.md has gang 0 alone post the checkpoints
 * ("What a job sees", 2.; examples/slurm/train.sh: "0-based data-parallel
 * gang index ... only gang 0 reports"), and a rendezvous takes TIDE_GANG as a
 * rank in 0..TIDE_GANGS-1: once gang 0 was dropped no gang of j1 reports a
 * checkpoint again, even back at full width, and rank 2 of 2 is out of range.
 * (be_start did the same: a failed gang was replaced by g2, g3, ...) */
static void regression_grown_gang_indices_in_range(void **state)
{
    (void)state;
    fx_t *f = fx_new();
    int32_t kept[8];
    char gone[16];
    fx_elastic_shrink(f, kept, gone);
    tide_time_t t;
    assert_non_null(fx_elastic_grow(f, &t));
    uint32_t live[8];
    assert_int_equal(fk_live_j1(live), 2);
    int seen[2] = {0, 0};
    for (int i = 0; i < 2; i++) {
        const fjob_t *x = &FK->job[live[i] - 1];
        const char *e = strstr(x->env, "\nTIDE_GANG=");
        assert_non_null(e);
        int k = atoi(e + 11);
        if (k < 0 || k > 1)
            fail_msg("%s runs with TIDE_GANG=%d, TIDE_GANGS=2", x->j.name, k);
        seen[k]++;
    }
    assert_int_equal(seen[0], 1);
    assert_int_equal(seen[1], 1);
    fx_free(f);
}

static int fx_cleanup(void **state)
{
    (void)state;
    if (CUR)
        fx_free(CUR);
    return 0;
}

/* Job names round-trip for every valid id length (1..200 bytes, dots
 * inside): the gang is submitted under its full name and the job's state
 * comes back to its handle (a name cut at 128 or 192 bytes did not). */
static void names_round_trip(void **state)
{
    (void)state;
    static const int lens[] = {1, 2, 9, 100, 117, 118, 127, 128, 150, 181, 182, 191, 192, 199, 200};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        char id[201];
        for (int k = 0; k < lens[i]; k++)
            id[k] = k % 7 == 3 ? '.' : (char)('a' + k % 26);
        id[lens[i]] = '\0';
        fx_t *f = fx_new();
        f->spec.id = id;
        fx_ev1(f, 0, ev_of(TIDE_EV_DEMAND, -1, 50));
        fk_run_pending();
        tide_event_t ev[2] = {ev_of(TIDE_EV_REPLICA_READY, -1, 0), ev_submit(&f->spec)};
        ev[0].replica = ev[0].service = 0;
        fx_step(f, 10, ev, 2);
        int32_t h = tide_engine_job_find(f->e, id);
        assert_non_null(fx_act(f, TIDE_ACT_JOB_START, h));
        fk_run_pending();
        char name[TIDE_SLURM_NAME_MAX];
        snprintf(name, sizeof name, "tide.job.%s.g0", id);
        if (!fk_named(name))
            fail_msg("id of %d bytes: no Slurm job named %s", lens[i], name);
        fx_tick(f, 20); /* seen running: the phase event names the job's handle */
        assert_int_equal(polled(f, TIDE_EV_JOB_PHASE, h), 1);
        assert_int_equal(tide_backend_job_alive(f->b, h), 1);
        fx_free(f);
        CUR = NULL;
    }
}

/* Power caps are enacted per node through the command: {node} and {watts}
 * for every node of the job's GPUs; a lift writes the GPU type's TDP; a
 * failing command is counted and logged. */
static void power_cap_command(void **state)
{
    (void)state;
    char dir[] = "/tmp/tide-pcap.XXXXXX", path[300], cmd[700];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/calls", dir);
    snprintf(cmd, sizeof cmd, "echo {node} {watts} >> %s", path);
    fx_power_factor = 0.5;
    fx_power_cmd = cmd;
    fx_t *f = fx_new();
    fx_power_factor = 0;
    fx_power_cmd = NULL;
    fx_training(f);
    const tide_action_t *cap = fx_act(f, TIDE_ACT_POWER_CAP, f->job);
    assert_non_null(cap);
    assert_true(cap->value > 200 && cap->value < 650);
    const tide_action_t *st = fx_act(f, TIDE_ACT_JOB_START, f->job);
    char used[2][16], want[2][64], line[128];
    for (int k = 0; k < 2; k++) {
        node_of(f, st, k, used[k]);
        snprintf(want[k], sizeof want[k], "%s %ld\n", used[k], (long)cap->value);
    }
    FILE *in = fopen(path, "r");
    assert_non_null(in);
    int n = 0, hit[2] = {0, 0};
    while (fgets(line, sizeof line, in)) {
        n++;
        for (int k = 0; k < 2; k++)
            hit[k] += !strcmp(line, want[k]);
    }
    fclose(in);
    assert_int_equal(n, 2);
    assert_true(hit[0] == 1 && hit[1] == 1);
    tide_backend_status_t bs;
    tide_backend_status(f->b, &bs);
    assert_int_equal(bs.power_cmds, 2);
    assert_int_equal(bs.power_cmd_failures, 0);
    /* a lift: the TDP (700 W by default) on the same nodes */
    tide_action_t lift = *cap;
    lift.value = 0;
    tide_actions_t one;
    tide_actions_init(&one);
    one.v = &lift;
    one.n = 1;
    one.gpus = f->acts.gpus;
    one.ngpus = f->acts.ngpus;
    tide_error_t err = {0};
    assert_int_equal(tide_backend_enact(f->b, f->now, &one, NULL, &err), 0);
    in = fopen(path, "r");
    n = 0;
    while (fgets(line, sizeof line, in))
        n += strstr(line, " 700\n") != NULL;
    fclose(in);
    assert_int_equal(n, 2);
    /* a node name a shell would read: refused, nothing run */
    assert_int_equal(tide_power_cmd_run(cmd, "n1;rm -rf /", 300, &err), -1);
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_int_equal(tide_power_cmd_run("exit 3", "n1", 300, &err), -1);
    assert_int_equal(err.code, TIDE_EIO);
    char buf[16];
    assert_int_equal(tide_power_cmd_expand("{node}:{watts}:{node}", "n1", 450, buf, sizeof buf, &err), 0);
    assert_string_equal(buf, "n1:450:n1");
    assert_int_equal(tide_power_cmd_expand("{node}{node}{node}{node}{node}", "node1", 1, buf,
                                           sizeof buf, &err), -1);
    unlink(path);
    rmdir(dir);
    fx_free(f);
}

/* ------------------------------------------------- the daemon on Slurm */

/* A daemon on database db with backend be (the fake Slurm behind "slurm"),
 * cluster c (NULL: the database's) and services v (NULL: the database's). */
typedef struct dslurm {
    char dir[64], db[128];
    double clock;
    fake_t fk;
    tide_cluster_t *c;
    tide_backend_opts_t bo;
    tide_daemon_t *d;
    tide_router_t *rt;
    tide_auth_t *auth; /* open mode: every caller is admin */
    FILE *log;
} dslurm_t;

static double dclock(void *ctx) { return *(double *)ctx; }

static tide_daemon_t *ds_open(dslurm_t *x, const char *be, const tide_service_spec_t *v,
                              tide_error_t *err)
{
    tide_daemon_opts_t o;
    tide_daemon_opts_default(&o);
    o.db_path = x->db;
    o.cluster = x->c;
    o.services = v;
    o.n_services = v ? 1 : 0;
    o.backend = be;
    o.backend_opts = &x->bo;
    o.speed = 1;
    o.clock = dclock;
    o.clock_ctx = &x->clock;
    o.log = x->log;
    o.auth = x->auth;
    x->d = tide_daemon_open(&o, err);
    if (x->d) {
        size_t n;
        const tide_route_t *r = tide_daemon_routes(&n);
        x->rt = tide_router_create(r, n, x->auth, x->d);
        tide_daemon_set_router(x->d, x->rt);
    }
    return x->d;
}

static void ds_close(dslurm_t *x)
{
    tide_router_destroy(x->rt);
    tide_daemon_close(x->d);
    x->rt = NULL;
    x->d = NULL;
}

/* POST /v1/services with stage_s: the status, the error message into msg. */
static int ds_post_service(dslurm_t *x, const char *name, int stage_s, char *msg, size_t n)
{
    char body[256];
    snprintf(body, sizeof body,
             "{\"name\": \"%s\", \"gpus_per_replica\": 8, \"replica_rps\": 10, "
             "\"min_replicas\": 0, \"warmup_s\": 120, \"stage_s\": %d}",
             name, stage_s);
    tide_http_input_t in = {.method = "POST", .path = "/v1/services", .body = body,
                            .body_len = strlen(body)};
    tide_http_reply_t rep;
    tide_router_handle(x->rt, &in, &rep);
    snprintf(msg, n, "%s", rep.body ? rep.body : "");
    int st = rep.status;
    tide_http_reply_free(&rep);
    return st;
}

/* The Slurm backend cannot stage weights (can_stage 0): a service with
 * stage_s > 0 is refused by the daemon at startup (--services, before
 * anything is written; or the database's own services) and by POST
 * /v1/services (400), while stage_s 0 works; the sim backend stages. */
static void daemon_refuses_stage_on_slurm(void **state)
{
    (void)state;
    assert_int_equal(tide_backend_find("slurm")->can_stage, 0);
    assert_int_equal(tide_backend_find("sim")->can_stage, 1);
    dslurm_t *x = calloc(1, sizeof *x);
    snprintf(x->dir, sizeof x->dir, "/tmp/tide-dslurm-XXXXXX");
    assert_non_null(mkdtemp(x->dir));
    snprintf(x->db, sizeof x->db, "%s/tide.db", x->dir);
    x->clock = 1000;
    x->auth = tide_auth_create();
    fk_default(&x->fk);
    tide_error_t err = {0};
    x->c = tide_cluster_parse("4x8:h100", &err);
    x->log = getenv("TIDE_TEST_VERBOSE") ? stderr : fopen("/dev/null", "w");
    x->bo = (tide_backend_opts_t){.slurm = &fk_ops, .unix_clock = clock_fn,
                                  .unix_clock_ctx = &x->fk, .log = x->log,
                                  .replica_command = "serve --port 8000"};
    tide_service_spec_t chat = {.name = "chat", .gpus_per_replica = 8, .replica_rps = 10,
                                .min_replicas = 1, .warmup_s = 120, .stage_s = 30};
    /* --services with stage_s: refused, no database written */
    assert_null(ds_open(x, "slurm", &chat, &err));
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_non_null(strstr(err.msg, "--services: service chat: stage_s 30"));
    assert_non_null(strstr(err.msg, "slurm backend cannot stage"));
    assert_int_equal(access(x->db, F_OK), -1);
    /* stage_s 0 runs; the API refuses a staged service and takes an unstaged one */
    chat.stage_s = 0;
    if (!ds_open(x, "slurm", &chat, &err))
        fail_msg("open: %s", err.msg);
    char msg[1024];
    assert_int_equal(ds_post_service(x, "embed", 10, msg, sizeof msg), 400);
    assert_non_null(strstr(msg, "EINVAL"));
    assert_non_null(strstr(msg, "service embed: stage_s 10: the slurm backend cannot stage"));
    assert_int_equal(tide_engine_services(tide_daemon_engine(x->d)), 1);
    assert_int_equal(ds_post_service(x, "embed", 0, msg, sizeof msg), 201);
    assert_int_equal(tide_engine_services(tide_daemon_engine(x->d)), 2);
    ds_close(x);
    /* a database whose services stage (written by a sim daemon): slurm refuses to start */
    chat.stage_s = 30;
    tide_cluster_destroy(x->c);
    x->c = NULL; /* the database's */
    if (!ds_open(x, "sim", &chat, &err))
        fail_msg("open sim: %s", err.msg);
    ds_close(x);
    assert_null(ds_open(x, "slurm", NULL, &err));
    assert_int_equal(err.code, TIDE_EINVAL);
    assert_non_null(strstr(err.msg, "database"));
    assert_non_null(strstr(err.msg, "service chat: stage_s 30"));
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", x->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", x->dir);
    if (x->log != stderr)
        fclose(x->log);
    tide_auth_destroy(x->auth);
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(create_checks_cluster, fx_cleanup),
        cmocka_unit_test_teardown(replica_floor_submits, fx_cleanup),
        cmocka_unit_test_teardown(training_start_and_renew, fx_cleanup),
        cmocka_unit_test_teardown(names_round_trip, fx_cleanup),
        cmocka_unit_test_teardown(reclaim_signal_requeue_release, fx_cleanup),
        cmocka_unit_test_teardown(pending_gang_limits, fx_cleanup),
        cmocka_unit_test_teardown(regression_lease_return_keeps_time_limit, fx_cleanup),
        cmocka_unit_test_teardown(poll_job_finished, fx_cleanup),
        cmocka_unit_test_teardown(poll_failures_then_cancel, fx_cleanup),
        cmocka_unit_test_teardown(poll_timeout_and_replica_end, fx_cleanup),
        cmocka_unit_test_teardown(poll_job_missing, fx_cleanup),
        cmocka_unit_test_teardown(poll_nodes, fx_cleanup),
        cmocka_unit_test_teardown(foreign_jobs_coexist, fx_cleanup),
        cmocka_unit_test_teardown(outage_retries, fx_cleanup),
        cmocka_unit_test_teardown(regression_pending_ops_during_outage, fx_cleanup),
        cmocka_unit_test_teardown(restart_adopts, fx_cleanup),
        cmocka_unit_test_teardown(restart_unclaimed_cancelled, fx_cleanup),
        cmocka_unit_test_teardown(regression_adopted_replica_keeps_service, fx_cleanup),
        cmocka_unit_test_teardown(job_info_fields, fx_cleanup),
        cmocka_unit_test_teardown(bad_input_refused, fx_cleanup),
        cmocka_unit_test(signal_names),
        cmocka_unit_test_teardown(short_lease_keeps_slack, fx_cleanup),
        cmocka_unit_test_teardown(regression_unplaceable_gang_reported, fx_cleanup),
        cmocka_unit_test_teardown(regression_refused_replica_never_submitted, fx_cleanup),
        cmocka_unit_test_teardown(first_poll_without_events, fx_cleanup),
        cmocka_unit_test_teardown(resize_shrink_then_grow, fx_cleanup),
        cmocka_unit_test_teardown(resize_bad_input, fx_cleanup),
        cmocka_unit_test_teardown(elastic_shrink_through_engine, fx_cleanup),
        cmocka_unit_test_teardown(regression_adopted_gangs_resize_right_gang, fx_cleanup),
        cmocka_unit_test_teardown(regression_grown_gang_indices_in_range, fx_cleanup),
        cmocka_unit_test_teardown(shadow_reads_only, fx_cleanup),
        cmocka_unit_test_teardown(power_cap_command, fx_cleanup),
        cmocka_unit_test(daemon_refuses_stage_on_slurm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
