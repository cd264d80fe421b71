/* The "slurm" backend: tide's decisions enacted on a real Slurm cluster.
 *
 * Mapping (docs/slurm.md):
 *  - tide node i is the i-th Slurm node with GPUs, in Slurm's order;
 *  - every data-parallel gang of a training job is one Slurm batch job
 *    "tide.job.<id>.g<k>" pinned to the nodes of its GPUs (--nodelist, GRES
 *    gpu per node); every inference replica is one job "tide.rep.<h>.<svc>";
 *  - a lease is the gangs' time limit: it ends deadline_slack_s before the
 *    lease's latest return, so Slurm returns the GPUs even if tide is down;
 *  - a checkpoint notice is a signal to the batch shell and every step; a stop
 *    is a requeue held (the Slurm job waits, held, until tide starts it again);
 *    a cancel or a replica stop is a cancel.
 *
 * Level-triggered: the enact operations only change what tide wants of each
 * Slurm job; reconcile() compares that with what Slurm last showed and makes
 * the calls. A call that fails because Slurm cannot be reached is simply
 * made again at the next poll, so an outage loses nothing. poll() reads every
 * tide job from Slurm, turns changes into engine events (a gang ended, a node
 * went down or drained) and reconciles. */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "util/util.h"

enum { W_RUN = 0, W_HELD, W_GONE };

typedef struct gang {
    int index;               /* TIDE_GANG of its Slurm job */
    uint32_t sid;            /* Slurm job id, 0 = not submitted */
    int want;                /* W_* */
    int32_t *gpus;
    int ngpus;
    char nodelist[256];
    int nnodes, gpn;
    int has_obs;             /* obs is Slurm's view (or our optimistic update) */
    tide_slurm_job_t obs;
    int64_t submitted_at;    /* unix time of our submit (missing-job grace) */
    int64_t want_since;      /* unix time want became RUN (pending timeout) */
    int64_t last_call;       /* unix time of the last requeue/cancel (throttle) */
    int running_seen;        /* RUNNING seen in the current run */
    int end_seen;            /* the end of the current run was handled */
    int signal_pending;
    int failed;              /* submit refused: nothing to do any more */
} gang_t;

typedef struct sjob {
    char *id;
    gang_t *g;
    int ng;
    size_t capg;
    int active;              /* started by the engine and not stopped */
    int phase_sent;
    int end_sent;            /* one end event per run */
    int failures;            /* consecutive failed runs */
    int last_exit;
    int restarts;
    int adopted;             /* found in Slurm at start-up, not yet claimed */
    int64_t deadline_unix;   /* lease latest return (0 = no lease) */
    int noticed;             /* the lease is under a reclaim notice (deadline = checkpoint's) */
    int lift_pending;        /* lease returned: lift the limit only if it keeps running */
    char *command;           /* handed with the start (tide_backend_work_t) */
    char **env;
} sjob_t;

typedef struct srep {
    int present;
    int32_t service;
    int active;
    int adopted;
    int end_sent;
    char **env;       /* the work's environment handed with its start (the model
                         version it must load: TIDE_MODEL_VERSION...), NULL none */
    gang_t g;
} srep_t;

typedef struct slurmbe {
    const tide_engine_t *e;
    const tide_slurm_ops_t *ops;
    tide_slurm_ops_t ro;     /* opts.read_only: ops with every write refused */
    void *h;
    tide_backend_opts_t o;
    char *conf, *partition, *infer_partition, *replica_command, *workdir, *api_url;
    char *power_cap_cmd;
    /* nodes */
    int nnodes;
    char (*node_name)[64];
    int *node_state;         /* last health reported to the engine */
    int *foreign;            /* scratch: GPUs other jobs hold per node (this poll) */
    int64_t *node_bad_since; /* unix time a node was first seen not up (0 = up) */
    int nodes_seen;
    int32_t *gpu_node;
    int ngpus_total;
    /* jobs by engine handle, replicas by handle */
    sjob_t **jobs;
    size_t njobs;
    srep_t *reps;
    size_t nreps;
    /* events waiting for poll */
    tide_event_t *ev;
    size_t nev, capev;
    int64_t last_poll;
    tide_backend_status_t st;
    int first_poll_done;
    /* outage probe (opts.probe_thread) */
    pthread_t probe;
    int probe_started;
    atomic_int probe_ok, probe_stop;
} slurmbe_t;

/* ------------------------------------------------------------- helpers */

static int64_t unix_now(const slurmbe_t *s)
{
    if (s->o.unix_clock)
        return (int64_t)s->o.unix_clock(s->o.unix_clock_ctx);
    return (int64_t)time(NULL);
}

static void blog(const slurmbe_t *s, const char *fmt, ...)
{
    FILE *f = s->o.log ? s->o.log : stderr;
    va_list ap;
    va_start(ap, fmt);
    fputs("tide serve: slurm: ", f);
    vfprintf(f, fmt, ap);
    fputc('\n', f);
    va_end(ap);
    fflush(f);
}

static void push_ev(slurmbe_t *s, int kind, int32_t job, int32_t replica, int32_t service,
                    int32_t node, int phase, double value)
{
    tide_grow((void **)&s->ev, &s->capev, s->nev + 1, sizeof *s->ev);
    tide_event_t *x = &s->ev[s->nev++];
    memset(x, 0, sizeof *x);
    x->kind = kind;
    x->job = job;
    x->replica = replica;
    x->service = service;
    x->node = node;
    x->phase = phase;
    x->value = value;
}

/* A call's outcome: counts it, tracks reachability. Returns rc. */
/* ------------------------------------------------------- read-only (shadow) */

#define RO_MSG "read-only (shadow mode): "
static int ro_refuse(tide_error_t *err, const char *what, uint32_t id)
{
    return tide_errf(err, TIDE_ESTATE, RO_MSG "%s of job %u refused", what, id);
}
static int ro_submit(void *h, const tide_slurm_submit_t *x, uint32_t *id, tide_error_t *err)
{
    (void)h, (void)id;
    return tide_errf(err, TIDE_ESTATE, RO_MSG "submit of %s refused", x->name);
}
static int ro_release(void *h, uint32_t id, tide_error_t *err)
{
    return (void)h, ro_refuse(err, "release", id);
}
static int ro_time_limit(void *h, uint32_t id, uint32_t m, tide_error_t *err)
{
    return (void)h, (void)m, ro_refuse(err, "time limit update", id);
}
static int ro_set_nodes(void *h, uint32_t id, const char *nl, int n, tide_error_t *err)
{
    return (void)h, (void)nl, (void)n, ro_refuse(err, "node list update", id);
}
static int ro_signal(void *h, uint32_t id, int sig, tide_error_t *err)
{
    return (void)h, (void)sig, ro_refuse(err, "signal", id);
}
static int ro_requeue(void *h, uint32_t id, int hold, tide_error_t *err)
{
    return (void)h, (void)hold, ro_refuse(err, "requeue", id);
}
static int ro_cancel(void *h, uint32_t id, tide_error_t *err)
{
    return (void)h, ro_refuse(err, "cancel", id);
}

/* ops with the reads of `ops` and every write refused. */
static void ro_ops(tide_slurm_ops_t *ro, const tide_slurm_ops_t *ops)
{
    *ro = *ops;
    ro->submit = ro_submit;
    ro->release = ro_release;
    ro->set_time_limit = ro_time_limit;
    ro->set_nodes = ro_set_nodes;
    ro->signal = ro_signal;
    ro->requeue = ro_requeue;
    ro->cancel = ro_cancel;
}

static int called(slurmbe_t *s, int rc, const tide_error_t *err)
{
    s->st.calls++;
    if (rc < 0 && s->o.read_only && err && !strncmp(err->msg, RO_MSG, sizeof RO_MSG - 1)) {
        s->st.refused++;
        s->st.calls--; /* never reached Slurm */
        blog(s, "%s", err->msg);
        return -1;
    }
    if (rc == 0) {
        if (!s->st.reachable)
            blog(s, "Slurm answers again; catching up");
        s->st.reachable = 1;
        return 0;
    }
    s->st.errors++;
    if (err && err->code == TIDE_EIO) {
        if (s->st.reachable)
            blog(s, "Slurm unreachable (%s); tide keeps its state and retries every %llds",
                 err->msg, (long long)s->o.poll_s);
        s->st.reachable = 0;
    }
    return rc;
}

static int ended(int state) { return state >= TIDE_SJOB_COMPLETED; }

/* The nodes of partition (NULL = no filter: *filter = 0). */
static int load_partition(const tide_slurm_ops_t *ops, void *h, const char *partition,
                          tide_slurm_nodename_t **part, size_t *np, int *filter, tide_error_t *err)
{
    *part = NULL;
    *np = 0;
    *filter = 0;
    if (!partition || !ops->partition_nodes)
        return 0;
    if (ops->partition_nodes(h, partition, part, np, err) < 0)
        return -1;
    *filter = 1;
    return 0;
}

/* Keep the nodes tide manages, in Slurm's order: with GPUs and, with a
 * filter, in the partition. Compacts nv; returns how many are left. */
static size_t keep_nodes(tide_slurm_node_t *nv, size_t n, const tide_slurm_nodename_t *part,
                         size_t np, int filter)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        int in = nv[i].gpus > 0;
        if (in && filter) {
            in = 0;
            for (size_t k = 0; k < np && !in; k++)
                in = !strcmp(part[k].name, nv[i].name);
        }
        if (in)
            nv[w++] = nv[i];
    }
    return w;
}

/* While Slurm is unreachable: ask it for its nodes every poll_s from a thread
 * until it answers. The main thread makes no Slurm call meanwhile. */
static void *probe_main(void *arg)
{
    slurmbe_t *s = arg;
    while (!atomic_load(&s->probe_stop)) {
        tide_slurm_node_t *nv = NULL;
        size_t n = 0;
        if (s->ops->nodes(s->h, &nv, &n, NULL) == 0) {
            free(nv);
            atomic_store(&s->probe_ok, 1);
            return NULL;
        }
        for (tide_time_t t = 0; t < s->o.poll_s * 10 && !atomic_load(&s->probe_stop); t++)
            nanosleep(&(struct timespec){0, 100000000L}, NULL);
    }
    return NULL;
}

static void probe_join(slurmbe_t *s)
{
    if (!s->probe_started)
        return;
    atomic_store(&s->probe_stop, 1);
    pthread_join(s->probe, NULL);
    s->probe_started = 0;
}

/* May the main thread call Slurm now? Inline mode: always (each poll retries). */
static int may_call(slurmbe_t *s)
{
    if (s->st.reachable || !s->o.probe_thread)
        return 1;
    if (!s->probe_started) {
        atomic_store(&s->probe_ok, 0);
        atomic_store(&s->probe_stop, 0);
        s->probe_started = pthread_create(&s->probe, NULL, probe_main, s) == 0;
        if (!s->probe_started)
            return 1; /* no thread: retry inline */
        return 0;
    }
    if (!atomic_load(&s->probe_ok))
        return 0;
    probe_join(s);
    return 1;
}

static void gang_free(gang_t *g)
{
    free(g->gpus);
    memset(g, 0, sizeof *g);
}

static sjob_t *job_get(slurmbe_t *s, int32_t h, int create)
{
    if (h < 0)
        return NULL;
    if ((size_t)h >= s->njobs) {
        if (!create)
            return NULL;
        tide_grow_zeroed((void **)&s->jobs, &s->njobs, (size_t)h + 1, sizeof *s->jobs);
    }
    if (!s->jobs[h] && create) {
        tide_job_info_t ji;
        if (tide_engine_job(s->e, h, &ji) != 0)
            return NULL;
        sjob_t *j = tide_xcalloc(1, sizeof *j);
        j->id = tide_xstrdup(ji.spec->id);
        j->last_exit = -1;
        s->jobs[h] = j;
    }
    return s->jobs[h];
}

static srep_t *rep_get(slurmbe_t *s, int32_t r, int create)
{
    if (r < 0)
        return NULL;
    if ((size_t)r >= s->nreps) {
        if (!create)
            return NULL;
        tide_grow_zeroed((void **)&s->reps, &s->nreps, (size_t)r + 1, sizeof *s->reps);
    }
    srep_t *p = &s->reps[r];
    if (!p->present && !create)
        return NULL;
    p->present = 1;
    return p;
}

static gang_t *gang_add(sjob_t *j, int index)
{
    tide_grow((void **)&j->g, &j->capg, (size_t)j->ng + 1, sizeof *j->g);
    gang_t *g = &j->g[j->ng++];
    memset(g, 0, sizeof *g);
    g->index = index;
    return g;
}

/* Fill a gang's nodes from its GPU ids. Errors: EINVAL when the GPUs are
 * unevenly spread over several nodes (one Slurm job has one GRES count per node). */
static int gang_place(slurmbe_t *s, gang_t *g, const int32_t *gpus, int n, tide_error_t *err)
{
    int *per = tide_xcalloc((size_t)s->nnodes, sizeof *per);
    for (int i = 0; i < n; i++) {
        if (gpus[i] < 0 || gpus[i] >= s->ngpus_total) {
            free(per);
            return tide_errf(err, TIDE_EINVAL, "GPU %d is not in the cluster", gpus[i]);
        }
        per[s->gpu_node[gpus[i]]]++;
    }
    int nn = 0, gpn = 0, uneven = 0;
    size_t off = 0;
    g->nodelist[0] = '\0';
    for (int k = 0; k < s->nnodes; k++) {
        if (!per[k])
            continue;
        if (gpn && per[k] != gpn)
            uneven = 1;
        gpn = per[k];
        int w = snprintf(g->nodelist + off, sizeof g->nodelist - off, "%s%s", nn ? "," : "",
                         s->node_name[k]);
        if (w < 0 || (size_t)w >= sizeof g->nodelist - off) {
            free(per);
            return tide_errf(err, TIDE_ERANGE, "node list too long");
        }
        off += (size_t)w;
        nn++;
    }
    free(per);
    if (uneven)
        return tide_errf(err, TIDE_EINVAL,
                         "a gang of %d GPUs spread unevenly over the nodes %s: Slurm gives one "
                         "GPU count per node",
                         n, g->nodelist);
    free(g->gpus);
    g->gpus = tide_xmalloc((size_t)(n ? n : 1) * sizeof *g->gpus);
    memcpy(g->gpus, gpus, (size_t)n * sizeof *gpus);
    g->ngpus = n;
    g->nnodes = nn;
    g->gpn = gpn;
    return 0;
}

static int same_gpus(const gang_t *g, const int32_t *gpus, int n)
{
    if (g->ngpus != n)
        return 0;
    for (int i = 0; i < n; i++) {
        int found = 0;
        for (int k = 0; k < n && !found; k++)
            found = g->gpus[k] == gpus[i];
        if (!found)
            return 0;
    }
    return 1;
}

/* ------------------------------------------------------------- signals */

static const struct {
    const char *name;
    int sig;
} sigs[] = {
    {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM}, {"INT", SIGINT},
    {"HUP", SIGHUP},   {"QUIT", SIGQUIT}, {"CONT", SIGCONT}, {"URG", SIGURG},
    {"ALRM", SIGALRM}, {"WINCH", SIGWINCH},
};

int tide_signal_parse(const char *s)
{
    if (!s || !*s)
        return -1;
    long long v;
    if (tide_parse_int(s, &v) == 0) {
        /* a number only when it is one of the names (TIDE_CKPT_SIGNAL names it) */
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
            if (sigs[i].sig == v)
                return sigs[i].sig;
        return -1;
    }
    if (!strncasecmp(s, "SIG", 3))
        s += 3;
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        if (!strcasecmp(s, sigs[i].name))
            return sigs[i].sig;
    return -1;
}

const char *tide_signal_name(int sig)
{
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        if (sigs[i].sig == sig)
            return sigs[i].name;
    return "USR1";
}

/* ----------------------------------------------------------- submitting */

static char *make_script(const char *command)
{
    if (!strncmp(command, "#!", 2))
        return tide_xstrdup(command);
    size_t n = strlen(command) + 64;
    char *sc = tide_xmalloc(n);
    snprintf(sc, n, "#!/bin/bash\nexec %s\n", command);
    return sc;
}

typedef struct envb {
    char **v;
    size_t n, cap;
} envb_t;

static void env_add(envb_t *b, const char *k, const char *fmt, ...)
{
    char val[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(val, sizeof val, fmt, ap);
    va_end(ap);
    size_t n = strlen(k) + strlen(val) + 2;
    char *x = tide_xmalloc(n);
    snprintf(x, n, "%s=%s", k, val);
    tide_grow((void **)&b->v, &b->cap, b->n + 2, sizeof *b->v);
    b->v[b->n++] = x;
    b->v[b->n] = NULL;
}

static void env_raw(envb_t *b, const char *kv)
{
    tide_grow((void **)&b->v, &b->cap, b->n + 2, sizeof *b->v);
    b->v[b->n++] = tide_xstrdup(kv);
    b->v[b->n] = NULL;
}

static void env_free(envb_t *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->v[i]);
    free(b->v);
}

static void env_base(const slurmbe_t *s, envb_t *b)
{
    env_add(b, "PATH", "%s", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    const char *home = getenv("HOME");
    env_add(b, "HOME", "%s", home ? home : "/");
    if (s->api_url)
        env_add(b, "TIDE_API", "%s", s->api_url);
    env_add(b, "TIDE_WORKDIR", "%s", s->workdir);
    env_add(b, "TIDE_CKPT_SIGNAL", "%s", tide_signal_name(s->o.ckpt_signal));
}

static uint32_t limit_minutes(const slurmbe_t *s, int64_t deadline_unix, int noticed,
                              const gang_t *g)
{
    if (!deadline_unix)
        return 0;
    int64_t start = unix_now(s);
    if (g->has_obs && g->obs.state == TIDE_SJOB_RUNNING && g->obs.start_time > 0)
        start = g->obs.start_time;
    int64_t now = unix_now(s), m;
    if (!noticed || deadline_unix - s->o.deadline_slack_s >= now + 60) {
        /* end deadline_slack_s early: Slurm's 30 s limit check and KillWait
         * still return the GPUs by the lease's latest return */
        m = (deadline_unix - s->o.deadline_slack_s - start) / 60;
    } else {
        /* a reclaim notice brought the latest return to the checkpoint's
         * deadline: tide, which is up, enforces it itself, and a limit ending
         * before it would kill the checkpoint being written. The limit only
         * backs tide up: the first whole minute at or after the deadline */
        m = (deadline_unix - start + 59) / 60;
    }
    return m < 1 ? 1 : (uint32_t)m;
}

static void job_work_free(sjob_t *j)
{
    free(j->command);
    for (char **e = j->env; e && *e; e++)
        free(*e);
    free(j->env);
    j->command = NULL;
    j->env = NULL;
}

/* Keep the job's command and environment handed with its start (or a
 * resize: an adopted job's first action may be one). NULL keeps what j has. */
static void job_work_set(sjob_t *j, const tide_backend_work_t *w)
{
    if (!w)
        return;
    job_work_free(j);
    j->command = w->command ? tide_xstrdup(w->command) : NULL;
    size_t n = 0;
    while (w->env && w->env[n])
        n++;
    if (w->env) {
        j->env = tide_xcalloc(n + 1, sizeof *j->env);
        for (size_t i = 0; i < n; i++)
            j->env[i] = tide_xstrdup(w->env[i]);
    }
}

/* Submit gang g as Slurm job `name` running `command` with environment b
 * (freed here), not held; on success g has its Slurm id and an optimistic
 * PENDING view. 0, or -1 with err. */
static int submit(slurmbe_t *s, gang_t *g, const char *name, const char *partition,
                  const char *command, envb_t *b, uint32_t limit_min, int training,
                  tide_error_t *err)
{
    char out[1024];
    snprintf(out, sizeof out, "%s/slurm-%%j.out", s->workdir);
    char *script = make_script(command);
    tide_slurm_submit_t sub = {
        .name = name,
        .partition = partition,
        .script = script,
        .env = (const char *const *)b->v,
        .workdir = s->workdir,
        .std_out = out,
        .nodelist = g->nodelist,
        .nodes = g->nnodes,
        .gpus_per_node = g->gpn,
        .time_limit_min = limit_min,
        .hold = 0,
        .requeue = training,
        .comment = training ? "tide training gang" : "tide inference replica",
    };
    uint32_t id = 0;
    int rc = called(s, s->ops->submit(s->h, &sub, &id, err), err);
    free(script);
    env_free(b);
    if (rc < 0)
        return -1;
    s->st.submits++;
    g->sid = id;
    g->submitted_at = unix_now(s);
    memset(&g->obs, 0, sizeof g->obs);
    g->has_obs = 1;
    g->obs.id = id;
    g->obs.state = TIDE_SJOB_PENDING;
    g->obs.time_limit_min = limit_min;
    return 0;
}

/* Submit gang g of job j. 0, or -1 with err. */
static int submit_gang(slurmbe_t *s, int32_t h, sjob_t *j, gang_t *g, tide_error_t *err)
{
    if (!j->command || !*j->command)
        return tide_errf(err, TIDE_EINVAL, "job %s has no command to run", j->id);
    tide_job_info_t ji;
    if (tide_engine_job(s->e, h, &ji) != 0)
        return tide_errf(err, TIDE_ENOENT, "job %s unknown to the engine", j->id);
    envb_t b = {0};
    env_base(s, &b);
    env_add(&b, "TIDE_JOB_ID", "%s", j->id);
    env_add(&b, "TIDE_GANG", "%d", g->index);
    env_add(&b, "TIDE_GANGS", "%d", ji.width);
    env_add(&b, "TIDE_GANG_GPUS", "%d", g->ngpus);
    env_add(&b, "TIDE_TEAM", "%s", ji.spec->team ? ji.spec->team : "default");
    for (char **e = j->env; e && *e; e++)
        env_raw(&b, *e);
    char name[TIDE_SLURM_NAME_MAX];
    int w = snprintf(name, sizeof name, "tide.job.%s.g%d", j->id, g->index);
    if (w < 0 || (size_t)w >= sizeof name) /* never truncated: it must parse back */
        return tide_errf(err, TIDE_EINVAL, "job %.40s...: id too long for a Slurm job name", j->id);
    return submit(s, g, name, s->partition, j->command, &b,
                  limit_minutes(s, j->deadline_unix, j->noticed, g), 1, err);
}

/* Submit replica r. 0, or -1 with err. */
static int submit_replica(slurmbe_t *s, int32_t r, srep_t *p, tide_error_t *err)
{
    const tide_service_spec_t *sv = tide_engine_service(s->e, p->service);
    if (!sv)
        return tide_errf(err, TIDE_ENOENT, "replica %d: unknown service %d", r, p->service);
    if (!s->replica_command)
        return tide_errf(err, TIDE_EINVAL,
                         "service %s: no --replica-command to start its replicas with", sv->name);
    envb_t b = {0};
    env_base(s, &b);
    env_add(&b, "TIDE_REPLICA", "%d", r);
    env_add(&b, "TIDE_SERVICE", "%s", sv->name);
    env_add(&b, "TIDE_WARMUP_S", "%lld", (long long)sv->warmup_s);
    env_add(&b, "TIDE_GANG_GPUS", "%d", p->g.ngpus);
    for (char **e = p->env; e && *e; e++)
        env_raw(&b, *e);
    char name[TIDE_SLURM_NAME_MAX];
    int w = snprintf(name, sizeof name, "tide.rep.%d.%s", r, sv->name);
    if (w < 0 || (size_t)w >= sizeof name)
        return tide_errf(err, TIDE_EINVAL, "service %.40s...: name too long for a Slurm job name",
                         sv->name);
    return submit(s, &p->g, name, s->infer_partition, s->replica_command, &b, 0, 0, err);
}

/* ------------------------------------------------------------ reconcile */

/* Make Slurm match what tide wants of one gang. Returns 1 when the change
 * must wait (Slurm unreachable or busy), 0 when done, -1 when Slurm refused
 * it for good (err says why). */
static int reconcile_gang(slurmbe_t *s, gang_t *g, int32_t h, sjob_t *j, srep_t *rp,
                          int64_t deadline_unix, tide_error_t *err)
{
    int64_t now = unix_now(s);
    tide_error_t e1 = {0};
    if (g->failed)
        return 0;
    if (!s->st.reachable && s->o.probe_thread)
        return 1; /* Slurm is down: the next refresh after it answers does it */
    if (g->want == W_RUN) {
        if (!g->sid) {
            int rc = j ? submit_gang(s, h, j, g, &e1) : submit_replica(s, h, rp, &e1);
            if (rc < 0) {
                if (e1.code == TIDE_EIO)
                    return 1;
                g->failed = 1;
                if (err)
                    *err = e1;
                return -1;
            }
            g->want_since = now;
            return 0;
        }
        if (!g->has_obs)
            return 0;
        uint32_t want_min = limit_minutes(s, deadline_unix, j ? j->noticed : 0, g);
        if (g->obs.state == TIDE_SJOB_PENDING && g->obs.held) {
            /* a requeued gang tide starts again: its new nodes, its limit, go */
            if (called(s, s->ops->set_nodes(s->h, g->sid, g->nodelist, g->nnodes, &e1), &e1) < 0 ||
                called(s, s->ops->set_time_limit(s->h, g->sid, want_min, &e1), &e1) < 0 ||
                called(s, s->ops->release(s->h, g->sid, &e1), &e1) < 0) {
                if (e1.code == TIDE_EIO || e1.code == TIDE_ESTATE)
                    return 1;
                g->failed = 1;
                if (err)
                    *err = e1;
                return -1;
            }
            g->obs.held = 0;
            g->obs.time_limit_min = want_min;
            g->want_since = now;
            return 0;
        }
        if (!ended(g->obs.state) && g->obs.time_limit_min != want_min) {
            if (called(s, s->ops->set_time_limit(s->h, g->sid, want_min, &e1), &e1) < 0)
                return 1;
            g->obs.time_limit_min = want_min;
        }
        if (g->signal_pending) {
            if (g->obs.state == TIDE_SJOB_PENDING && !g->obs.held)
                return 1; /* not started yet (as far as we saw): deliver once it runs */
            if (g->obs.state == TIDE_SJOB_RUNNING) {
                if (called(s, s->ops->signal(s->h, g->sid, s->o.ckpt_signal, &e1), &e1) < 0) {
                    if (e1.code == TIDE_EIO)
                        return 1;
                    blog(s, "signal to Slurm job %u: %s", g->sid, e1.msg);
                } else {
                    s->st.signals++;
                }
            }
            g->signal_pending = 0;
        }
        return 0;
    }
    g->signal_pending = 0;
    if (!g->sid || !g->has_obs || ended(g->obs.state))
        return 0;
    if (g->want == W_HELD) {
        if (g->obs.state == TIDE_SJOB_PENDING && g->obs.held)
            return 0;
        if (now - g->last_call < 5 && g->last_call)
            return 1;
        g->last_call = now;
        if (called(s, s->ops->requeue(s->h, g->sid, 1, &e1), &e1) < 0)
            return 1; /* completing or unreachable: again later */
        s->st.requeues++;
        g->obs.state = TIDE_SJOB_PENDING;
        g->obs.held = 1;
        return 0;
    }
    /* W_GONE */
    if (now - g->last_call < 5 && g->last_call)
        return 1;
    g->last_call = now;
    if (called(s, s->ops->cancel(s->h, g->sid, &e1), &e1) < 0)
        return e1.code == TIDE_ENOENT ? 0 : 1;
    s->st.cancels++;
    return 0;
}

/* The tide node holding GPU g (-1: none). */
static int gpu_node(const slurmbe_t *s, int32_t g)
{
    const tide_cluster_t *c = tide_engine_cluster(s->e);
    for (int n = 0; n < tide_cluster_nodes(c); n++) {
        tide_node_info_t ni;
        if (tide_cluster_node(c, n, &ni) == 0 && g >= ni.first_gpu && g < ni.first_gpu + ni.gpus)
            return n;
    }
    return -1;
}

/* A run of job j failed (once per run): RANK_FAILED (node: where, when one
 * gang failed; an elastic job then only loses that gang, see be_resize), or
 * JOB_CANCEL after max_failures runs in a row. */
static void job_failed_at(slurmbe_t *s, int32_t h, sjob_t *j, int node)
{
    if (!j->active || j->end_sent)
        return;
    j->end_sent = 1;
    j->failures++;
    int give_up = j->failures >= s->o.max_failures;
    if (give_up)
        blog(s, "job %s failed %d times in a row (last exit code %d): cancelling it", j->id,
             j->failures, j->last_exit);
    push_ev(s, give_up ? TIDE_EV_JOB_CANCEL : TIDE_EV_RANK_FAILED, h, -1, -1, node, 0, 0);
}

static void job_failed(slurmbe_t *s, int32_t h, sjob_t *j) { job_failed_at(s, h, j, -1); }

static void reconcile_job(slurmbe_t *s, int32_t h, sjob_t *j)
{
    for (int k = 0; k < j->ng; k++) {
        gang_t *g = &j->g[k];
        tide_error_t e1 = {0};
        if (reconcile_gang(s, g, h, j, NULL, j->deadline_unix, &e1) < 0 && j->active && !j->end_sent) {
            blog(s, "job %s gang %d: %s", j->id, g->index, e1.msg);
            job_failed(s, h, j);
        }
    }
    /* forget gangs that are gone and ended */
    int w = 0;
    for (int k = 0; k < j->ng; k++) {
        gang_t *g = &j->g[k];
        int drop = g->want == W_GONE &&
                   (!g->sid || g->failed || (g->has_obs && ended(g->obs.state)));
        if (drop)
            gang_free(g);
        else
            j->g[w++] = *g;
    }
    j->ng = w;
}

static void reconcile_rep(slurmbe_t *s, int32_t r, srep_t *p)
{
    tide_error_t e1 = {0};
    if (reconcile_gang(s, &p->g, r, NULL, p, 0, &e1) < 0 && p->active && !p->end_sent) {
        blog(s, "replica %d: %s", r, e1.msg);
        p->end_sent = 1;
        push_ev(s, TIDE_EV_REPLICA_FAILED, -1, r, p->service, -1, 0, 0);
    }
}

/* The engine's view of a job's lease into j: its latest return in Unix time
 * (0 = no lease) and whether a reclaim notice set it. */
static void job_deadline(slurmbe_t *s, int32_t h, sjob_t *j, tide_time_t now)
{
    tide_job_info_t ji;
    tide_lease_info_t li;
    j->deadline_unix = 0;
    j->noticed = 0;
    if (tide_engine_job(s->e, h, &ji) != 0 || ji.lease < 0 ||
        tide_engine_lease(s->e, ji.lease, &li) != 0 || li.returned)
        return;
    j->deadline_unix = unix_now(s) + (li.latest_return - now);
    j->noticed = li.noticed;
}

/* ------------------------------------------------------------ enacting */

/* Gangs of a GPU list: consecutive runs of gang_gpus. */
static int job_gang_gpus(const tide_engine_t *e, int32_t h)
{
    tide_job_info_t ji;
    if (tide_engine_job(e, h, &ji) != 0)
        return 0;
    return ji.spec->gang_gpus > 0 ? ji.spec->gang_gpus : ji.spec->gpus;
}

/* The lowest gang index no live gang of j uses: a job of width W keeps its
 * gangs numbered 0..W-1 (TIDE_GANG; gang 0 is the one that reports). */
static int next_index(const sjob_t *j)
{
    for (int m = 0;; m++) {
        int used = 0;
        for (int k = 0; k < j->ng && !used; k++)
            used = j->g[k].want != W_GONE && j->g[k].index == m;
        if (!used)
            return m;
    }
}

/* Gang g of job j is to run on these n GPUs: placed and wanted running, or,
 * when they cannot be expressed in Slurm, logged and gone (a gang never
 * submitted is dropped at once; a held Slurm job is cancelled). -1 then. */
static int gang_run(slurmbe_t *s, const sjob_t *j, gang_t *g, const int32_t *gpus, int n)
{
    tide_error_t e1 = {0};
    if (gang_place(s, g, gpus, n, &e1) < 0) {
        blog(s, "job %s: %s", j->id, e1.msg);
        g->want = W_GONE;
        g->failed = !g->sid;
        return -1;
    }
    g->want = W_RUN;
    g->running_seen = g->end_seen = 0;
    return 0;
}

static int be_start(void *ctx, const tide_backend_act_t *x, tide_error_t *err)
{
    tide_time_t now = x->now;
    const tide_action_t *a = x->a;
    const int32_t *gpus = x->gpus;
    slurmbe_t *s = ctx;
    sjob_t *j = job_get(s, a->job, 1);
    int gg = job_gang_gpus(s->e, a->job);
    if (!j || !gpus || gg <= 0 || a->n_gpus % gg)
        return tide_errf(err, TIDE_EINVAL, "start of job %d: bad action", a->job);
    job_work_set(j, x->work);
    j->active = 1;
    j->adopted = 0;
    j->phase_sent = 0;
    j->end_sent = 0;
    j->lift_pending = 0;
    job_deadline(s, a->job, j, now);
    int want = a->n_gpus / gg;
    /* reuse the held gangs (a requeued Slurm job keeps its id and counts restarts) */
    int used = 0, unplaced = 0;
    for (int k = 0; k < j->ng && used < want; k++) {
        gang_t *g = &j->g[k];
        if (g->want == W_GONE || g->failed || !g->sid || !g->has_obs || ended(g->obs.state))
            continue;
        unplaced += gang_run(s, j, g, gpus + (size_t)used * (size_t)gg, gg) < 0;
        used++;
    }
    for (int k = 0; k < j->ng; k++)
        if (j->g[k].want != W_RUN)
            j->g[k].want = W_GONE;
    while (used < want) {
        gang_t *g = gang_add(j, next_index(j));
        unplaced += gang_run(s, j, g, gpus + (size_t)used * (size_t)gg, gg) < 0;
        used++;
    }
    if (unplaced)
        job_failed(s, a->job, j);
    reconcile_job(s, a->job, j);
    return 0;
}

static int be_ckpt(void *ctx, const tide_backend_act_t *x, tide_error_t *err)
{
    const tide_action_t *a = x->a;
    slurmbe_t *s = ctx;
    (void)err;
    sjob_t *j = job_get(s, a->job, 0);
    if (!j)
        return 0;
    for (int k = 0; k < j->ng; k++)
        if (j->g[k].want == W_RUN)
            j->g[k].signal_pending = 1;
    reconcile_job(s, a->job, j);
    return 0;
}

static int be_resize(void *ctx, const tide_backend_act_t *x, tide_error_t *err)
{
    tide_time_t now = x->now;
    const tide_action_t *a = x->a;
    const int32_t *gpus = x->gpus;
    slurmbe_t *s = ctx;
    sjob_t *j = job_get(s, a->job, 1);
    int gg = job_gang_gpus(s->e, a->job);
    if (!j || gg <= 0 || a->n_gpus % gg || (a->n_gpus && !gpus))
        return tide_errf(err, TIDE_EINVAL, "resize of job %d: bad action", a->job);
    job_work_set(j, x->work);
    job_deadline(s, a->job, j, now);
    if (a->reason == TIDE_R_FAILURE)
        j->end_sent = 0; /* an elastic job went on without its failed gang */
    int want = a->n_gpus / gg;
    uint8_t *kept = tide_xcalloc((size_t)(want ? want : 1), 1);
    /* gangs whose GPUs stay keep running; the others leave */
    for (int k = 0; k < j->ng; k++) {
        gang_t *g = &j->g[k];
        if (g->want != W_RUN)
            continue;
        int match = -1;
        for (int i = 0; i < want && match < 0; i++)
            if (!kept[i] && same_gpus(g, gpus + (size_t)i * (size_t)gg, gg))
                match = i;
        if (match >= 0)
            kept[match] = 1;
        else
            g->want = W_GONE;
    }
    for (int i = 0; i < want; i++) {
        if (kept[i])
            continue;
        gang_t *g = gang_add(j, next_index(j));
        if (gang_run(s, j, g, gpus + (size_t)i * (size_t)gg, gg) < 0)
            job_failed(s, a->job, j);
    }
    free(kept);
    reconcile_job(s, a->job, j);
    return 0;
}

static int be_stop(void *ctx, const tide_backend_act_t *x, tide_error_t *err)
{
    const tide_action_t *a = x->a;
    slurmbe_t *s = ctx;
    (void)err;
    sjob_t *j = job_get(s, a->job, 0);
    if (!j)
        return 0;
    j->active = 0;
    j->lift_pending = 0;
    int done = a->reason == TIDE_R_CANCEL || a->reason == TIDE_R_COMPLETE;
    for (int k = 0; k < j->ng; k++)
        j->g[k].want = done ? W_GONE : W_HELD;
    reconcile_job(s, a->job, j);
    return 0;
}

static int be_lease(void *ctx, const tide_backend_act_t *x, tide_error_t *err)
{
    tide_time_t now = x->now;
    const tide_action_t *a = x->a;
    slurmbe_t *s = ctx;
    (void)err;
    sjob_t *j = job_get(s, a->job, 0);
    if (!j || !j->active)
        return 0;
    if (a->kind == TIDE_ACT_LEASE_RETURN) {
        /* a return is mostly followed by a stop in the same step: keep the
         * limit (if the requeue fails, or tide dies now, Slurm still returns
         * the GPUs); lift it at the next poll if the job still runs */
        j->lift_pending = 1;
        return 0;
    }
    j->lift_pending = 0;
    job_deadline(s, a->job, j, now);
    reconcile_job(s, a->job, j);
    return 0;
}

/* A power cap (value W per GPU, 0 = lifted: the GPU type's tdp) on every node
 * of the action's GPUs (the job's), through the --power-cap-cmd command. */
static int be_power(void *ctx, const tide_backend_act_t *x, tide_error_t *err)
{
    slurmbe_t *s = ctx;
    const tide_action_t *a = x->a;
    sjob_t *j = job_get(s, a->job, 0);
    if (!s->power_cap_cmd || !j || !j->active || !x->gpus)
        return 0;
    if (s->o.read_only) {
        s->st.refused++;
        return 0;
    }
    const tide_cluster_t *c = tide_engine_cluster(s->e);
    uint8_t *seen = tide_xcalloc((size_t)s->nnodes + 1, 1);
    int rc = 0;
    for (int i = 0; i < a->n_gpus; i++) {
        int g = x->gpus[i];
        int n = g >= 0 && g < s->ngpus_total ? s->gpu_node[g] : -1;
        if (n < 0 || n >= s->nnodes || seen[n])
            continue;
        seen[n] = 1;
        tide_node_info_t ni;
        tide_cluster_node(c, n, &ni);
        double w = a->value > 0 ? a->value : tide_cluster_power_model(c, ni.type)->tdp_w;
        tide_error_t ce = {0};
        s->st.power_cmds++;
        if (tide_power_cmd_run(s->power_cap_cmd, s->node_name[n], (long)w, &ce) < 0) {
            s->st.power_cmd_failures++;
            blog(s, "job %s: %s", j->id, ce.msg);
            if (rc == 0)
                rc = tide_errf(err, ce.code, "%s", ce.msg);
        }
    }
    free(seen);
    return rc;
}

static void rep_env_set(srep_t *p, const tide_backend_work_t *w)
{
    for (char **e = p->env; e && *e; e++)
        free(*e);
    free(p->env);
    p->env = NULL;
    size_t n = 0;
    while (w && w->env && w->env[n])
        n++;
    if (!n)
        return;
    p->env = tide_xcalloc(n + 1, sizeof *p->env);
    for (size_t i = 0; i < n; i++)
        p->env[i] = tide_xstrdup(w->env[i]);
}

static int be_rstart(void *ctx, const tide_backend_act_t *x, tide_error_t *err)
{
    const tide_action_t *a = x->a;
    const int32_t *gpus = x->gpus;
    slurmbe_t *s = ctx;
    srep_t *p = rep_get(s, a->replica, 1);
    if (!p || !gpus)
        return tide_errf(err, TIDE_EINVAL, "start of replica %d: bad action", a->replica);
    if (p->g.sid && !ended(p->g.obs.state)) {
        /* a handle is never reused: a job still under it is stale */
        tide_error_t e1 = {0};
        if (called(s, s->ops->cancel(s->h, p->g.sid, &e1), &e1) == 0)
            s->st.cancels++;
    }
    gang_free(&p->g);
    rep_env_set(p, x->work);
    p->service = a->service;
    p->active = 1;
    p->adopted = 0;
    p->end_sent = 0;
    tide_error_t e1 = {0};
    if (gang_place(s, &p->g, gpus, a->n_gpus, &e1) < 0) {
        blog(s, "replica %d: %s", a->replica, e1.msg);
        p->g.want = W_GONE;
        p->g.failed = 1;
        p->active = 0;
        p->end_sent = 1;
        push_ev(s, TIDE_EV_REPLICA_FAILED, -1, a->replica, a->service, -1, 0, 0);
        return 0;
    }
    p->g.want = W_RUN;
    reconcile_rep(s, a->replica, p);
    return 0;
}

static int be_rstop(void *ctx, const tide_backend_act_t *x, tide_error_t *err)
{
    const tide_action_t *a = x->a;
    slurmbe_t *s = ctx;
    (void)err;
    srep_t *p = rep_get(s, a->replica, 0);
    if (!p)
        return 0;
    p->active = 0;
    p->g.want = W_GONE;
    reconcile_rep(s, a->replica, p);
    return 0;
}

/* -------------------------------------------------------------- polling */

enum { NAME_OTHER = 0, NAME_GANG, NAME_REPLICA };

/* What a Slurm job name of tide's names: NAME_GANG "tide.job.<id>.g<k>"
 * (*h the engine's job handle, -1 when unknown; *index k), NAME_REPLICA
 * "tide.rep.<h>.<svc>" (*h the replica handle; *index the service, -1 when
 * unknown), or NAME_OTHER. */
static int parse_name(const slurmbe_t *s, const char *name, int32_t *h, int *index)
{
    *h = *index = -1;
    if (!strncmp(name, "tide.job.", 9)) {
        const char *id = name + 9;
        const char *dot = strrchr(id, '.');
        char buf[TIDE_SLURM_NAME_MAX];
        size_t n = dot ? (size_t)(dot - id) : 0;
        if (!dot || dot[1] != 'g' || n >= sizeof buf)
            return NAME_OTHER;
        memcpy(buf, id, n);
        buf[n] = '\0';
        *h = tide_engine_job_find(s->e, buf);
        *index = atoi(dot + 2);
        return NAME_GANG;
    }
    if (!strncmp(name, "tide.rep.", 9)) {
        long r = strtol(name + 9, NULL, 10);
        if (r < 0 || r >= INT32_MAX)
            return NAME_OTHER;
        *h = (int32_t)r;
        const char *dot = strchr(name + 9, '.');
        *index = dot ? tide_engine_service_find(s->e, dot + 1) : -1;
        return NAME_REPLICA;
    }
    return NAME_OTHER;
}

/* The gang (or replica) tide tracks as Slurm job sid named name, or NULL. */
static gang_t *find_gang(slurmbe_t *s, const char *name, uint32_t sid)
{
    int32_t h;
    int index;
    int kind = parse_name(s, name, &h, &index);
    if (kind == NAME_GANG) {
        sjob_t *j = h >= 0 ? job_get(s, h, 0) : NULL;
        for (int k = 0; j && k < j->ng; k++)
            if (j->g[k].sid == sid)
                return &j->g[k];
    } else if (kind == NAME_REPLICA) {
        srep_t *p = rep_get(s, h, 0);
        return p && p->g.sid == sid ? &p->g : NULL;
    }
    return NULL;
}

/* Adopt a tide job found in Slurm (start-up): training gangs keep their
 * index; replicas their handle. Only live or held jobs matter. */
static void adopt(slurmbe_t *s, const tide_slurm_job_t *x)
{
    if (ended(x->state))
        return;
    int32_t h;
    int index;
    int kind = parse_name(s, x->name, &h, &index);
    if (kind == NAME_GANG) {
        sjob_t *j = h >= 0 ? job_get(s, h, 1) : NULL;
        if (!j) {
            /* a job of another database or epoch: not ours to keep */
            tide_error_t e1 = {0};
            blog(s, "Slurm job %u (%s) is unknown to this database: cancelling it", x->id, x->name);
            called(s, s->ops->cancel(s->h, x->id, &e1), &e1);
            return;
        }
        gang_t *g = gang_add(j, index);
        g->sid = x->id;
        g->has_obs = 1;
        g->obs = *x;
        g->want = x->held ? W_HELD : W_RUN;
        g->submitted_at = unix_now(s);
        g->running_seen = x->state == TIDE_SJOB_RUNNING;
        j->adopted = 1;
        j->restarts = x->restarts > j->restarts ? x->restarts : j->restarts;
    } else if (kind == NAME_REPLICA) {
        srep_t *p = rep_get(s, h, 1);
        p->g.sid = x->id;
        p->g.has_obs = 1;
        p->g.obs = *x;
        p->g.want = W_RUN;
        p->adopted = 1;
        p->service = index;
    }
}

/* The engine's GPUs of a job, in order (for an adopted job). */
static int32_t *owned_gpus(const slurmbe_t *s, int kind, int32_t h, int *n)
{
    int32_t *v = tide_xmalloc((size_t)(s->ngpus_total ? s->ngpus_total : 1) * sizeof *v);
    *n = 0;
    for (int g = 0; g < s->ngpus_total; g++) {
        int32_t owner;
        if (tide_engine_gpu_owner(s->e, g, &owner) == kind && owner == h)
            v[(*n)++] = g;
    }
    return v;
}

/* What the engine was told of node k (s->node_state[k]) against what Slurm
 * shows: a node not responding is only unreachable (NODE_FAILED, value 1: its
 * gangs may still run, nothing is placed again) until Slurm marks it down or
 * drained (NODE_FAILED, value 0: fenced, its jobs are gone). */
static void node_tell(slurmbe_t *s, int k, const tide_slurm_node_t *nd, int failed, int bad)
{
    int told = s->node_state[k];
    int want = !bad ? TIDE_SNODE_UP : failed ? nd->state : told;
    int told_cut = told == TIDE_SNODE_UNREACHABLE, want_cut = want == TIDE_SNODE_UNREACHABLE;
    if ((told == TIDE_SNODE_UP) == (want == TIDE_SNODE_UP) && (told_cut == want_cut || !told_cut))
        return; /* as told (a down or drained node not responding changes nothing) */
    static const char *const what[] = {"back", "down", "drained", "unreachable"};
    blog(s, "node %s is %s%s%s", nd->name, what[want], want != TIDE_SNODE_UP && nd->reason[0] ? ": " : "",
         want != TIDE_SNODE_UP ? nd->reason : "");
    push_ev(s, want == TIDE_SNODE_UP ? TIDE_EV_NODE_RECOVERED : TIDE_EV_NODE_FAILED, -1, -1, -1, k,
            0, want_cut);
    s->node_state[k] = want;
}

static void observe_nodes(slurmbe_t *s)
{
    tide_slurm_node_t *nv = NULL;
    size_t n = 0;
    tide_error_t e1 = {0};
    if (called(s, s->ops->nodes(s->h, &nv, &n, &e1), &e1) < 0)
        return;
    int64_t now = unix_now(s);
    int next = 0; /* Slurm keeps its order: the next managed node is the usual match */
    for (size_t i = 0; i < n; i++) {
        int k = -1;
        if (next < s->nnodes && !strcmp(s->node_name[next], nv[i].name))
            k = next;
        for (int x = 0; x < s->nnodes && k < 0; x++)
            if (!strcmp(s->node_name[x], nv[i].name))
                k = x;
        if (k < 0)
            continue; /* not a node tide manages (another partition, no GPUs, added later) */
        next = k + 1;
        /* a drain is the admin's word: at once. Down / not responding / not
         * registered (slurmctld just restarted, a slurmd restarting) only
         * once it lasted node_grace_s: a blip must not stop the cluster */
        int bad = nv[i].state != TIDE_SNODE_UP;
        if (!bad)
            s->node_bad_since[k] = 0;
        else if (!s->node_bad_since[k])
            s->node_bad_since[k] = now;
        int failed = nv[i].state == TIDE_SNODE_DRAIN ||
                     (bad && now - s->node_bad_since[k] >= s->o.node_grace_s);
        node_tell(s, k, &nv[i], failed, bad);
    }
    free(nv);
}

static void job_observe(slurmbe_t *s, int32_t h, sjob_t *j, int64_t now)
{
    if (!j->active || j->end_sent)
        return;
    int running = 0, live = 0, ok_end = 0, bad_end = 0, timeout = 0, exit_code = -1;
    int bad_node = -1; /* a node of the (first) gang that failed */
    for (int k = 0; k < j->ng; k++) {
        gang_t *g = &j->g[k];
        if (g->want != W_RUN || !g->sid || !g->has_obs)
            continue;
        live++;
        if (g->obs.state == TIDE_SJOB_RUNNING) {
            running++;
            g->running_seen = 1;
        }
        if (g->obs.restarts > j->restarts)
            j->restarts = g->obs.restarts;
        if (ended(g->obs.state)) {
            exit_code = g->obs.exit_code;
            if (g->obs.state == TIDE_SJOB_COMPLETED)
                ok_end++;
            else if (g->obs.state == TIDE_SJOB_TIMEOUT || g->obs.state == TIDE_SJOB_DEADLINE)
                timeout++;
            else if (bad_end++ == 0 && g->ngpus > 0)
                bad_node = gpu_node(s, g->gpus[0]);
            if (!g->end_seen) {
                g->end_seen = 1;
                blog(s, "job %s gang %d (Slurm job %u) ended %s, exit code %d", j->id, g->index,
                     g->sid, tide_slurm_job_state_name(g->obs.state), g->obs.exit_code);
                if (g->obs.state == TIDE_SJOB_COMPLETED)
                    s->st.exits_ok++;
                else if (g->obs.state == TIDE_SJOB_TIMEOUT || g->obs.state == TIDE_SJOB_DEADLINE)
                    s->st.timeouts++;
                else
                    s->st.exits_failed++;
            }
        } else if (g->obs.state == TIDE_SJOB_PENDING && !g->obs.held && g->want_since &&
                   now - g->want_since > s->o.pending_timeout_s) {
            blog(s, "job %s gang %d (Slurm job %u) still pending after %llds (%s): giving up on this start",
                 j->id, g->index, g->sid, (long long)(now - g->want_since), g->obs.reason);
            bad_end++;
        }
    }
    if (!live)
        return;
    if (running == live && j->failures) {
        /* a run that lasted a while is not a crash loop */
        int64_t started = 0;
        for (int k = 0; k < j->ng; k++)
            if (j->g[k].want == W_RUN && j->g[k].obs.start_time > started)
                started = j->g[k].obs.start_time;
        if (started && now - started >= 120)
            j->failures = 0;
    }
    if (running == live && !j->phase_sent) {
        j->phase_sent = 1;
        /* the job runs from now: its progress counts from here, not from the
         * engine's start decision (Slurm's scheduling and launch took time) */
        tide_job_info_t ji;
        if (tide_engine_job(s->e, h, &ji) == 0 &&
            (ji.state == TIDE_JOB_RUNNING || ji.state == TIDE_JOB_RECLAIMING))
            push_ev(s, TIDE_EV_JOB_PHASE, h, -1, -1, -1, TIDE_PHASE_TRAINING, ji.committed);
    }
    if (exit_code >= 0)
        j->last_exit = exit_code;
    if (timeout) {
        j->end_sent = 1;
        blog(s, "job %s reached its Slurm time limit (the lease deadline): work since its last checkpoint is lost", j->id);
        push_ev(s, TIDE_EV_JOB_EXPIRED, h, -1, -1, -1, 0, 0);
    } else if (bad_end) {
        job_failed_at(s, h, j, bad_node);
    } else if (ok_end == live) {
        j->end_sent = 1;
        j->failures = 0;
        push_ev(s, TIDE_EV_JOB_FINISHED, h, -1, -1, -1, 0, 0);
    }
}

static void rep_observe(slurmbe_t *s, int32_t r, srep_t *p, int64_t now)
{
    if (!p->active || p->end_sent || !p->g.sid || !p->g.has_obs)
        return;
    const char *why = NULL;
    if (ended(p->g.obs.state))
        why = tide_slurm_job_state_name(p->g.obs.state);
    else if (p->g.obs.state == TIDE_SJOB_PENDING && p->g.want_since &&
             now - p->g.want_since > s->o.pending_timeout_s)
        why = "still pending";
    if (!why)
        return;
    blog(s, "replica %d (Slurm job %u) %s, exit code %d", r, p->g.sid, why, p->g.obs.exit_code);
    p->end_sent = 1;
    p->active = 0;
    p->g.want = W_GONE;
    push_ev(s, TIDE_EV_REPLICA_FAILED, -1, r, p->service, -1, 0, 0);
}

/* After a snapshot: a gang it showed is marked seen again; one it did not
 * show, submitted more than 30 s ago and not known to have ended, has ended
 * (Slurm forgot it, or it never got there). */
static void unseen_check(gang_t *g, int64_t now)
{
    if (g->has_obs == 2) {
        g->has_obs = 1;
    } else if (g->sid && now - g->submitted_at > 30 && !ended(g->obs.state)) {
        g->obs.state = TIDE_SJOB_CANCELLED;
        g->obs.exit_code = -1;
        snprintf(g->obs.reason, sizeof g->obs.reason, "unknown to Slurm");
    }
}

static int hostlist_has(const char *hl, const char *node);

/* Coexistence: the GPUs that jobs tide does not manage (any job whose name is
 * not one of tide's) hold on tide's nodes, from their GRES; a count that
 * differs from what the engine has becomes a TIDE_EV_FOREIGN for the node.
 * Running, suspended and completing jobs hold their GPUs. */
static void observe_foreign(slurmbe_t *s, const tide_slurm_job_t *v, size_t n)
{
    memset(s->foreign, 0, (size_t)(s->nnodes ? s->nnodes : 1) * sizeof *s->foreign);
    for (size_t i = 0; i < n; i++) {
        const tide_slurm_job_t *x = &v[i];
        int32_t h;
        int index;
        if (parse_name(s, x->name, &h, &index) != NAME_OTHER || x->gpus_per_node <= 0 || !x->nodes[0])
            continue;
        if (x->state != TIDE_SJOB_RUNNING && x->state != TIDE_SJOB_SUSPENDED && !x->completing)
            continue;
        for (int k = 0; k < s->nnodes; k++)
            if (hostlist_has(x->nodes, s->node_name[k]))
                s->foreign[k] += x->gpus_per_node;
    }
    const tide_cluster_t *c = tide_engine_cluster(s->e);
    for (int k = 0; k < s->nnodes; k++) {
        tide_node_info_t ni;
        int want = 0;
        if (tide_cluster_node(c, k, &ni) < 0 || tide_engine_node_foreign(s->e, k, &want) < 0)
            continue;
        int now = s->foreign[k] < ni.gpus ? s->foreign[k] : ni.gpus;
        if (now == want)
            continue;
        blog(s, "node %s: %d of its %d GPUs held by jobs tide does not manage (was %d)",
             s->node_name[k], now, ni.gpus, want);
        push_ev(s, TIDE_EV_FOREIGN, -1, -1, -1, k, 0, now);
    }
}

/* Read Slurm, turn what changed into events, reconcile. */
static void refresh(slurmbe_t *s)
{
    int64_t now = unix_now(s);
    s->last_poll = now;
    if (!may_call(s))
        return;
    observe_nodes(s);
    if (!s->st.reachable)
        return;
    tide_slurm_job_t *v = NULL;
    size_t n = 0;
    tide_error_t e1 = {0};
    if (called(s, s->ops->jobs(s->h, NULL, &v, &n, &e1), &e1) < 0)
        return;
    observe_foreign(s, v, n);
    /* mark what Slurm shows */
    for (size_t i = 0; i < n; i++) {
        gang_t *g = find_gang(s, v[i].name, v[i].id);
        if (!g)
            continue;
        /* keep our optimistic view until Slurm catches up with a requeue */
        int keep_held = g->want == W_HELD && g->obs.held && v[i].state == TIDE_SJOB_RUNNING &&
                        now - g->last_call < 5;
        if (!keep_held)
            g->obs = v[i];
        g->has_obs = 2; /* seen in this snapshot */
    }
    free(v);
    /* gangs Slurm no longer knows: ended long ago, or never got there */
    for (size_t h = 0; h < s->njobs; h++)
        for (int k = 0; s->jobs[h] && k < s->jobs[h]->ng; k++)
            unseen_check(&s->jobs[h]->g[k], now);
    for (size_t r = 0; r < s->nreps; r++)
        if (s->reps[r].present)
            unseen_check(&s->reps[r].g, now);
    /* start-up: what tide does not claim is not tide's any more */
    if (!s->first_poll_done) {
        s->first_poll_done = 1;
        for (size_t h = 0; h < s->njobs; h++) {
            sjob_t *j = s->jobs[h];
            if (!j || !j->adopted)
                continue;
            j->adopted = 0;
            tide_job_info_t ji;
            int queued = tide_engine_job(s->e, (int32_t)h, &ji) == 0 && ji.state == TIDE_JOB_QUEUED;
            for (int k = 0; k < j->ng; k++)
                j->g[k].want = queued ? W_HELD : W_GONE;
        }
        for (size_t r = 0; r < s->nreps; r++)
            if (s->reps[r].present && s->reps[r].adopted) {
                s->reps[r].adopted = 0;
                s->reps[r].active = 0;
                s->reps[r].g.want = W_GONE;
            }
    }
    for (size_t h = 0; h < s->njobs; h++)
        if (s->jobs[h] && s->jobs[h]->lift_pending) {
            sjob_t *j = s->jobs[h];
            j->lift_pending = 0;
            if (j->active) {
                tide_stats_t stt;
                tide_engine_stats(s->e, &stt);
                job_deadline(s, (int32_t)h, j, stt.now);
            }
        }
    for (size_t h = 0; h < s->njobs; h++)
        if (s->jobs[h]) {
            job_observe(s, (int32_t)h, s->jobs[h], now);
            reconcile_job(s, (int32_t)h, s->jobs[h]);
        }
    for (size_t r = 0; r < s->nreps; r++)
        if (s->reps[r].present) {
            rep_observe(s, (int32_t)r, &s->reps[r], now);
            reconcile_rep(s, (int32_t)r, &s->reps[r]);
        }
}

/* Changes still waiting on Slurm: submits not made, signals not delivered. */
static long pending_ops(const slurmbe_t *s)
{
    long pend = 0;
    for (size_t h = 0; h < s->njobs; h++)
        for (int k = 0; s->jobs[h] && k < s->jobs[h]->ng; k++) {
            const gang_t *g = &s->jobs[h]->g[k];
            pend += (g->want == W_RUN && !g->sid && !g->failed) || g->signal_pending;
        }
    for (size_t r = 0; r < s->nreps; r++) {
        const gang_t *g = &s->reps[r].g;
        pend += s->reps[r].present && g->want == W_RUN && !g->sid && !g->failed;
    }
    return pend;
}

static size_t be_poll(void *ctx, tide_time_t now, tide_event_t *out, size_t max)
{
    slurmbe_t *s = ctx;
    (void)now;
    if (!s->nev && unix_now(s) - s->last_poll >= s->o.poll_s)
        refresh(s);
    size_t k = s->nev < max ? s->nev : max;
    if (!k)
        return 0;
    memcpy(out, s->ev, k * sizeof *out);
    memmove(s->ev, s->ev + k, (s->nev - k) * sizeof *s->ev);
    s->nev -= k;
    return k;
}

/* Is node in Slurm hostlist hl ("gpu3", "gpu1,gpu3", "gpu[1-2,4]")? */
static int hostlist_has(const char *hl, const char *node)
{
    size_t nl = strlen(node);
    const char *p = hl;
    while (p && *p) {
        const char *br = strpbrk(p, ",[");
        if (!br || *br == ',') {
            size_t len = br ? (size_t)(br - p) : strlen(p);
            if (len == nl && !strncmp(p, node, nl))
                return 1;
            p = br ? br + 1 : NULL;
            continue;
        }
        /* prefix[ranges] */
        size_t pl = (size_t)(br - p);
        const char *end = strchr(br, ']');
        if (!end)
            return 0;
        if (nl > pl && !strncmp(p, node, pl)) {
            char *rest;
            long v = strtol(node + pl, &rest, 10);
            if (!*rest && rest != node + pl) {
                const char *q = br + 1;
                while (q < end) {
                    char *e1;
                    long a = strtol(q, &e1, 10), b = a;
                    if (e1 == q)
                        break;
                    if (*e1 == '-')
                        b = strtol(e1 + 1, &e1, 10);
                    if (v >= a && v <= b)
                        return 1;
                    q = *e1 == ',' ? e1 + 1 : end;
                }
            }
        }
        p = end[1] == ',' ? end + 2 : NULL;
    }
    return 0;
}

static int be_job_alive(void *ctx, int32_t h)
{
    slurmbe_t *s = ctx;
    sjob_t *j = job_get(s, h, 0);
    if (!j)
        return 0;
    int live = 0;
    for (int k = 0; k < j->ng; k++)
        live += j->g[k].want == W_RUN && j->g[k].sid && !ended(j->g[k].obs.state);
    if (!live)
        return 0;
    /* claim it: give each gang the engine's GPUs on the nodes Slurm runs it on
     * (then, for what that leaves, the remaining GPUs in order) */
    int n = 0, gg = job_gang_gpus(s->e, h);
    int32_t *gpus = owned_gpus(s, 1, h, &n);
    uint8_t *taken = tide_xcalloc((size_t)(n ? n : 1), 1);
    int32_t *pick = tide_xmalloc((size_t)(gg > 0 ? gg : 1) * sizeof *pick);
    for (int pass = 0; pass < 2 && gg > 0; pass++) {
        for (int k = 0; k < j->ng; k++) {
            gang_t *g = &j->g[k];
            if (g->want != W_RUN || g->ngpus == gg)
                continue;
            int np = 0;
            for (int i = 0; i < n && np < gg; i++) {
                if (taken[i])
                    continue;
                const char *node = s->node_name[s->gpu_node[gpus[i]]];
                if (pass == 0 && !hostlist_has(g->obs.nodes, node))
                    continue;
                pick[np++] = gpus[i];
            }
            if (np < gg || gang_place(s, g, pick, gg, NULL) < 0)
                continue;
            for (int i = 0, q = 0; i < n && q < gg; i++)
                for (int x = 0; x < gg; x++)
                    if (gpus[i] == pick[x] && !taken[i]) {
                        taken[i] = 1;
                        q++;
                    }
        }
    }
    free(pick);
    free(taken);
    free(gpus);
    j->adopted = 0;
    j->active = 1;
    j->phase_sent = 0;
    /* engine time resumes where it stopped: the lease's remaining time counts from now */
    tide_stats_t stt;
    tide_engine_stats(s->e, &stt);
    job_deadline(s, h, j, stt.now);
    return 1;
}

static int be_rep_alive(void *ctx, int32_t r)
{
    slurmbe_t *s = ctx;
    srep_t *p = rep_get(s, r, 0);
    if (!p || !p->g.sid || ended(p->g.obs.state) || p->g.want != W_RUN)
        return 0;
    int n = 0;
    int32_t *gpus = owned_gpus(s, 2, r, &n);
    if (n > 0)
        gang_place(s, &p->g, gpus, n, NULL);
    free(gpus);
    p->adopted = 0;
    p->active = 1;
    return 1;
}

static int be_job_info(void *ctx, int32_t h, tide_backend_job_info_t *out)
{
    slurmbe_t *s = ctx;
    sjob_t *j = job_get(s, h, 0);
    if (!j || !j->ng)
        return -1;
    size_t oi = 0, os = 0, on = 0;
    for (int k = 0; k < j->ng; k++) {
        const gang_t *g = &j->g[k];
        if (!g->sid)
            continue;
        char st[48];
        snprintf(st, sizeof st, "%s%s", tide_slurm_job_state_name(g->obs.state),
                 g->obs.state == TIDE_SJOB_PENDING && g->obs.held ? "(held)" : "");
        int w = snprintf(out->ids + oi, sizeof out->ids - oi, "%s%u", oi ? "," : "", g->sid);
        if (w > 0 && (size_t)w < sizeof out->ids - oi)
            oi += (size_t)w;
        w = snprintf(out->state + os, sizeof out->state - os, "%s%s", os ? "," : "", st);
        if (w > 0 && (size_t)w < sizeof out->state - os)
            os += (size_t)w;
        if (g->obs.nodes[0]) {
            w = snprintf(out->nodes + on, sizeof out->nodes - on, "%s%s", on ? "," : "", g->obs.nodes);
            if (w > 0 && (size_t)w < sizeof out->nodes - on)
                on += (size_t)w;
        }
    }
    out->exit_code = j->last_exit;
    out->restarts = j->restarts;
    return 0;
}

static void be_status(void *ctx, tide_backend_status_t *out)
{
    slurmbe_t *s = ctx;
    *out = s->st;
    out->pending_ops = pending_ops(s);
}

static const char *be_node_name(void *ctx, int node)
{
    slurmbe_t *s = ctx;
    return node >= 0 && node < s->nnodes ? s->node_name[node] : NULL;
}

static void be_destroy(void *ctx)
{
    slurmbe_t *s = ctx;
    probe_join(s);
    for (size_t h = 0; h < s->njobs; h++) {
        sjob_t *j = s->jobs[h];
        if (!j)
            continue;
        for (int k = 0; k < j->ng; k++)
            gang_free(&j->g[k]);
        free(j->g);
        free(j->id);
        job_work_free(j);
        free(j);
    }
    free(s->jobs);
    for (size_t r = 0; r < s->nreps; r++) {
        gang_free(&s->reps[r].g);
        rep_env_set(&s->reps[r], NULL);
    }
    free(s->reps);
    free(s->ev);
    free(s->node_name);
    free(s->node_state);
    free(s->foreign);
    free(s->node_bad_since);
    free(s->gpu_node);
    s->ops->close(s->h);
    free(s->conf);
    free(s->partition);
    free(s->infer_partition);
    free(s->replica_command);
    free(s->power_cap_cmd);
    free(s->workdir);
    free(s->api_url);
    free(s);
}

const tide_backend_ops_t tide_backend_slurm_ops = {
    .name = "slurm",
    .needs_command = 1,    /* every gang is a batch script running the job's command */
    .wall_clock = 1,       /* real jobs, Slurm's clock */
    .reports_progress = 1, /* the job knows its progress better than the engine's estimate */
    .can_stage = 0,        /* no weight prefetch: a replica job loads everything once it runs */
    .act = {[TIDE_ACT_JOB_START] = be_start, [TIDE_ACT_JOB_CKPT] = be_ckpt,
            [TIDE_ACT_JOB_RESIZE] = be_resize, [TIDE_ACT_JOB_STOP] = be_stop,
            [TIDE_ACT_REPLICA_START] = be_rstart, [TIDE_ACT_REPLICA_STOP] = be_rstop,
            [TIDE_ACT_LEASE_GRANT] = be_lease, [TIDE_ACT_LEASE_RENEW] = be_lease,
            [TIDE_ACT_LEASE_RETURN] = be_lease, [TIDE_ACT_POWER_CAP] = be_power},
    .poll = be_poll,
    .next_event = NULL,
    .job_alive = be_job_alive,
    .replica_alive = be_rep_alive,
    .job_info = be_job_info,
    .status = be_status,
    .node_name = be_node_name,
    .destroy = be_destroy,
};

/* The cluster: Slurm's GPU nodes (of the training partition; the inference
 * partition must exist too) must be the engine's nodes, in order. Fills the
 * node names and the GPU-to-node map. 0, or -1 with err. */
static int nodes_match(slurmbe_t *s, const tide_engine_t *e, tide_error_t *err)
{
    const tide_cluster_t *c = tide_engine_cluster(e);
    s->nnodes = tide_cluster_nodes(c);
    s->ngpus_total = tide_cluster_gpus(c);
    s->node_name = tide_xcalloc((size_t)(s->nnodes ? s->nnodes : 1), sizeof *s->node_name);
    s->node_state = tide_xcalloc((size_t)(s->nnodes ? s->nnodes : 1), sizeof *s->node_state);
    s->foreign = tide_xcalloc((size_t)(s->nnodes ? s->nnodes : 1), sizeof *s->foreign);
    s->node_bad_since = tide_xcalloc((size_t)(s->nnodes ? s->nnodes : 1), sizeof *s->node_bad_since);
    s->gpu_node = tide_xcalloc((size_t)(s->ngpus_total ? s->ngpus_total : 1), sizeof *s->gpu_node);
    tide_slurm_node_t *nv = NULL;
    size_t n = 0;
    /* the training partition's nodes (its GPU nodes are tide's); the
     * inference partition must exist too */
    tide_slurm_nodename_t *part = NULL, *ip = NULL;
    size_t npart = 0, nip = 0;
    int pf = 0, ipf = 0;
    if (load_partition(s->ops, s->h, s->partition, &part, &npart, &pf, err) < 0 ||
        (s->infer_partition && s->partition && strcmp(s->infer_partition, s->partition) &&
         load_partition(s->ops, s->h, s->infer_partition, &ip, &nip, &ipf, err) < 0)) {
        tide_err_prefix(err, "--slurm-%spartition: ", pf ? "infer-" : "");
        free(part);
        return -1;
    }
    free(ip);
    if (called(s, s->ops->nodes(s->h, &nv, &n, err), err) < 0) {
        free(part);
        return -1;
    }
    n = keep_nodes(nv, n, part, npart, pf);
    free(part);
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k < s->nnodes) {
            tide_node_info_t ni;
            tide_cluster_node(c, k, &ni);
            if (nv[i].gpus < ni.gpus) {
                tide_errf(err, TIDE_EINVAL,
                          "Slurm node %s has %d GPUs, the cluster in the database %d at node %d",
                          nv[i].name, nv[i].gpus, ni.gpus, k);
                free(nv);
                return -1;
            }
            snprintf(s->node_name[k], sizeof s->node_name[k], "%s", nv[i].name);
            for (int g = 0; g < ni.gpus; g++)
                s->gpu_node[ni.first_gpu + g] = k;
        }
        k++;
    }
    free(nv);
    if (k != s->nnodes) {
        tide_errf(err, TIDE_EINVAL,
                  "Slurm has %d nodes with GPUs%s%s, the cluster in the database %d: they must "
                  "match (omit --cluster on a new database to take Slurm's)",
                  k, pf ? " in partition " : "", pf ? s->partition : "",
                  s->nnodes);
        return -1;
    }
    return 0;
}

tide_backend_t *tide_backend_slurm_create(const tide_engine_t *e, const tide_backend_opts_t *o,
                                          tide_error_t *err)
{
    tide_backend_opts_t def = {0};
    if (!o)
        o = &def;
    const tide_slurm_ops_t *ops = o->slurm ? o->slurm : tide_slurm_lib_ops();
    if (!ops) {
        tide_errf(err, TIDE_EINVAL,
                  "this tide was built without libslurm (install libslurm-dev and rebuild)");
        return NULL;
    }
    void *h = ops->open(o->slurm_conf, err);
    if (!h)
        return NULL;
    slurmbe_t *s = tide_xcalloc(1, sizeof *s);
    s->e = e;
    s->ops = ops;
    if (o->read_only) {
        ro_ops(&s->ro, ops);
        s->ops = ops = &s->ro;
    }
    s->h = h;
    s->o = *o;
    s->st.reachable = 1;
    if (s->o.ckpt_signal <= 0)
        s->o.ckpt_signal = SIGUSR1;
    if (s->o.deadline_slack_s <= 0)
        s->o.deadline_slack_s = 60;
    if (s->o.poll_s <= 0)
        s->o.poll_s = 2;
    if (s->o.pending_timeout_s <= 0)
        s->o.pending_timeout_s = 180;
    if (s->o.max_failures <= 0)
        s->o.max_failures = 3;
    if (s->o.node_grace_s <= 0)
        s->o.node_grace_s = 30;
    s->partition = tide_xstrdup_nonempty(o->partition);
    s->infer_partition = tide_xstrdup_nonempty(o->infer_partition ? o->infer_partition : o->partition);
    s->replica_command = tide_xstrdup_nonempty(o->replica_command);
    s->power_cap_cmd = tide_xstrdup_nonempty(o->power_cap_cmd);
    s->o.power_cap_cmd = NULL;
    s->api_url = tide_xstrdup_nonempty(o->api_url);
    if (o->workdir && *o->workdir) {
        s->workdir = tide_xstrdup(o->workdir);
    } else {
        char cwd[4096];
        s->workdir = tide_xstrdup(getcwd(cwd, sizeof cwd) ? cwd : "/tmp");
    }
    s->o.partition = s->o.infer_partition = s->o.replica_command = s->o.workdir = s->o.api_url = NULL;
    s->o.slurm_conf = NULL;

    tide_backend_t *b = tide_xcalloc(1, sizeof *b);
    b->ops = &tide_backend_slurm_ops;
    b->ctx = s;

    if (nodes_match(s, e, err) < 0) {
        tide_backend_destroy(b);
        return NULL;
    }
    /* the jobs tide left in Slurm (a restart): adopt them */
    tide_slurm_job_t *jv = NULL;
    size_t nj = 0;
    if (called(s, ops->jobs(h, "tide.", &jv, &nj, err), err) < 0) {
        tide_backend_destroy(b);
        return NULL;
    }
    for (size_t i = 0; i < nj; i++)
        adopt(s, &jv[i]);
    free(jv);
    s->last_poll = unix_now(s);
    return b;
}

int tide_slurm_cluster_spec(const tide_slurm_ops_t *ops, const char *conf, const char *partition,
                            char *buf, size_t n, tide_error_t *err)
{
    if (!ops)
        ops = tide_slurm_lib_ops();
    if (!ops)
        return tide_errf(err, TIDE_EINVAL,
                         "this tide was built without libslurm (install libslurm-dev and rebuild)");
    void *h = ops->open(conf, err);
    if (!h)
        return -1;
    tide_slurm_node_t *nv = NULL;
    size_t nn = 0;
    tide_slurm_nodename_t *part = NULL;
    size_t np = 0;
    int filter = 0;
    int rc = load_partition(ops, h, partition, &part, &np, &filter, err);
    if (rc < 0)
        tide_err_prefix(err, "--slurm-partition: ");
    else
        rc = ops->nodes(h, &nv, &nn, err);
    ops->close(h);
    if (rc < 0) {
        free(part);
        return -1;
    }
    nn = keep_nodes(nv, nn, part, np, filter);
    free(part);
    size_t off = 0;
    int groups = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < nn;) {
        if (nv[i].gpus <= 0) {
            i++;
            continue;
        }
        size_t k = i + 1;
        int cnt = 1;
        for (; k < nn; k++) {
            if (nv[k].gpus <= 0)
                continue;
            if (nv[k].gpus != nv[i].gpus || strcmp(nv[k].gpu_type, nv[i].gpu_type))
                break;
            cnt++;
        }
        int w = snprintf(buf + off, n - off, "%s%dx%d%s%s", groups ? "," : "", cnt, nv[i].gpus,
                         nv[i].gpu_type[0] ? ":" : "", nv[i].gpu_type);
        if (w < 0 || (size_t)w >= n - off) {
            free(nv);
            return tide_errf(err, TIDE_EINVAL, "cluster spec too long");
        }
        off += (size_t)w;
        groups++;
        i = k;
    }
    free(nv);
    if (!groups)
        return tide_errf(err, TIDE_EINVAL, "Slurm has no node with GPUs (Gres=gpu:N)%s%s",
                         partition ? " in partition " : "", partition ? partition : "");
    return 0;
}
