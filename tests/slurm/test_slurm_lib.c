/* test_slurm_lib: every operation of the libslurm backend ops
 * (src/backend/slurm_lib.c) against a REAL running local Slurm 22.05 cluster:
 * scripts/slurm-local.sh up (4 nodes gpu1..gpu4 x gpu:h100:8, partitions
 * train (default) and infer). Needs root (as the cluster does) and SLURM_CONF
 * naming that cluster's slurm.conf. Run by tests/e2e/slurm_lib.sh.
 *
 * Real Slurm: job state changes take wall time, so the checks poll with
 * bounded waits (0.2 s steps). Prints "N passed, N failed"; exit 0 only when
 * nothing failed, 1 otherwise, 2 on bad usage. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backend/slurm_api.h"

static int npass, nfail;

/* CHECK(cond, fmt, ...): count it; say what failed. Evaluates to cond. The
 * message's arguments are evaluated after cond (so they show what cond saw). */
#define CHECK(cond, ...) ((cond) ? (npass++, 1) : (fail_(__LINE__, __VA_ARGS__), 0))

static void fail_(int line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_(int line, const char *fmt, ...)
{
    nfail++;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL (line %d): ", line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static const tide_slurm_ops_t *ops;
static char prefix[64];  /* job names of this run */
static char tmpdir[256]; /* the jobs' working directory and marker files */

static double mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void nap(double s)
{
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&t, &t) < 0 && errno == EINTR)
        ;
}

/* The job id of this run as Slurm reports it now; 0 and a message when the
 * call fails or the job is not there. */
static int get_job(void *h, uint32_t id, tide_slurm_job_t *out)
{
    tide_slurm_job_t *v = NULL;
    size_t n = 0;
    tide_error_t err = {0};
    if (ops->jobs(h, prefix, &v, &n, &err) != 0) {
        fprintf(stderr, "  jobs(): %s\n", err.msg);
        return 0;
    }
    int found = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].id == id) {
            *out = v[i];
            found = 1;
        }
    free(v);
    return found;
}

typedef int (*job_pred_t)(const tide_slurm_job_t *j);

static int is_running(const tide_slurm_job_t *j) { return j->state == TIDE_SJOB_RUNNING; }
static int is_held(const tide_slurm_job_t *j)
{
    return j->state == TIDE_SJOB_PENDING && j->held && !j->completing;
}
static int is_cancelled(const tide_slurm_job_t *j)
{
    return j->state == TIDE_SJOB_CANCELLED && !j->completing;
}
static int is_finished(const tide_slurm_job_t *j)
{
    return j->state != TIDE_SJOB_PENDING && j->state != TIDE_SJOB_RUNNING &&
           j->state != TIDE_SJOB_SUSPENDED && !j->completing;
}

static int is_requeued_free(const tide_slurm_job_t *j)
{
    return j->state == TIDE_SJOB_PENDING && !j->held && !j->completing;
}
static int has_bad_constraints(const tide_slurm_job_t *j)
{
    return j->state == TIDE_SJOB_PENDING && strcmp(j->reason, "BadConstraints") == 0;
}

/* Poll until pred holds for job id (at most secs): 1 and *out, or 0. */
static int wait_job(void *h, uint32_t id, job_pred_t pred, double secs, tide_slurm_job_t *out)
{
    double end = mono() + secs;
    tide_slurm_job_t j;
    memset(&j, 0, sizeof j);
    for (;;) {
        int have = get_job(h, id, &j);
        if (have && pred(&j)) {
            *out = j;
            return 1;
        }
        if (mono() > end) {
            if (have)
                fprintf(stderr, "  job %u after %.0f s: %s%s%s nodes=%s reason=%s\n", id, secs,
                        tide_slurm_job_state_name(j.state), j.held ? " held" : "",
                        j.completing ? " completing" : "", j.nodes, j.reason);
            else
                fprintf(stderr, "  job %u not listed after %.0f s\n", id, secs);
            *out = j;
            return 0;
        }
        nap(0.2);
    }
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int wait_file(const char *path, double secs)
{
    double end = mono() + secs;
    while (!file_exists(path)) {
        if (mono() > end)
            return 0;
        nap(0.2);
    }
    return 1;
}

/* First line of a file into buf ("" when unreadable). */
static const char *read_line(const char *path, char *buf, size_t n)
{
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return buf;
    if (!fgets(buf, (int)n, f))
        buf[0] = 0;
    buf[strcspn(buf, "\n")] = 0;
    fclose(f);
    return buf;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(p);
    return 0;
}

/* A copy of conf with SlurmctldPort replaced by port (where nothing listens). */
static int write_conf_copy(const char *conf, const char *out, int port)
{
    FILE *in = fopen(conf, "r"), *o = fopen(out, "w");
    if (!in || !o) {
        if (in)
            fclose(in);
        if (o)
            fclose(o);
        return -1;
    }
    char line[2048];
    while (fgets(line, sizeof line, in)) {
        if (strncmp(line, "SlurmctldPort=", 14) == 0)
            fprintf(o, "SlurmctldPort=%d\n", port);
        else
            fputs(line, o);
    }
    fclose(in);
    return fclose(o) == 0 ? 0 : -1;
}

/* The batch script of the long job: reports its GPUs and CPUs, writes a
 * marker per SIGUSR1, and idles until killed. */
static const char *long_script =
    "#!/bin/bash\n"
    "r=${SLURM_RESTART_COUNT:-0}\n"
    "trap 'echo usr1 >>\"$MARK_DIR/usr1.$SLURM_JOB_ID.$r\"' USR1\n"
    "echo \"${CUDA_VISIBLE_DEVICES:-none}\" >\"$MARK_DIR/cvd.$SLURM_JOB_ID.$r\"\n"
    "echo \"${SLURM_CPUS_ON_NODE:-none}\" >\"$MARK_DIR/cpus.$SLURM_JOB_ID.$r\"\n"
    "echo \"$TIDE_TEST_VALUE\" >\"$MARK_DIR/env.$SLURM_JOB_ID.$r\"\n"
    "echo started restart=$r\n"
    "while :; do sleep 0.2 & wait $!; done\n";

static const char *exit3_script = "#!/bin/bash\necho about to fail\nexit 3\n";

static int count_csv(const char *s)
{
    if (!*s || strcmp(s, "none") == 0)
        return 0;
    int n = 1;
    for (; *s; s++)
        n += *s == ',';
    return n;
}

static void test_states(void)
{
    CHECK(strcmp(tide_slurm_job_state_name(TIDE_SJOB_PENDING), "PENDING") == 0, "PENDING name");
    CHECK(strcmp(tide_slurm_job_state_name(TIDE_SJOB_OOM), "OOM") == 0, "OOM name");
    CHECK(strcmp(tide_slurm_job_state_name(TIDE_SJOB_STATE_COUNT), "UNKNOWN") == 0,
          "out of range -> UNKNOWN");
    CHECK(strcmp(tide_slurm_job_state_name(-1), "UNKNOWN") == 0, "-1 -> UNKNOWN");
}

/* open() with a slurm.conf whose slurmctld is not running, a missing one, a
 * broken one, and open/close/open with the real one. */
static void test_open(const char *conf)
{
    tide_error_t err = {0};
    char bad[300], broken[300], missing[300];
    snprintf(bad, sizeof bad, "%s/noctld.conf", tmpdir);
    snprintf(broken, sizeof broken, "%s/broken.conf", tmpdir);
    snprintf(missing, sizeof missing, "%s/missing.conf", tmpdir);

    if (CHECK(write_conf_copy(conf, bad, 1) == 0, "write %s", bad)) {
        double t0 = mono();
        void *h = ops->open(bad, &err);
        CHECK(h == NULL, "open(%s) with no slurmctld succeeded", bad);
        CHECK(err.code == TIDE_EIO, "open(no slurmctld): code %s, want EIO (%s)",
              tide_errcode_name(err.code), err.msg);
        CHECK(strstr(err.msg, bad) && strstr(err.msg, "does not answer") &&
                  strstr(err.msg, ":1 (SLURM_CONF="),
              "open(no slurmctld) message names the conf and port: %s", err.msg);
        CHECK(mono() - t0 < 5, "open(no slurmctld) took %.1f s", mono() - t0);
        printf("  open(no slurmctld): %s\n", err.msg);
        ops->close(h);
    }

    memset(&err, 0, sizeof err);
    void *h = ops->open(missing, &err);
    CHECK(!h && err.code == TIDE_ENOENT && strstr(err.msg, missing),
          "open(missing conf): %s %s", tide_errcode_name(err.code), err.msg);
    ops->close(h);

    FILE *f = fopen(broken, "w");
    if (CHECK(f != NULL, "write %s", broken)) {
        fputs("ClusterName=broken\nNoSuchKey=1\n", f);
        fclose(f);
        memset(&err, 0, sizeof err);
        h = ops->open(broken, &err); /* libslurm itself would exit(1) here */
        CHECK(!h && err.code == TIDE_EINVAL && strstr(err.msg, broken) &&
                  strstr(err.msg, "unrecognized key: NoSuchKey"),
              "open(broken conf): %s %s", tide_errcode_name(err.code), err.msg);
        printf("  open(broken conf): %s\n", err.msg);
        ops->close(h);
    }

    /* open / close / open, and two handles at once */
    memset(&err, 0, sizeof err);
    void *a = ops->open(conf, &err);
    CHECK(a != NULL, "open(%s) after failed opens: %s", conf, err.msg);
    void *b = ops->open(conf, &err);
    CHECK(b != NULL, "second open(%s): %s", conf, err.msg);
    memset(&err, 0, sizeof err);
    void *c = ops->open(bad, &err);
    CHECK(!c && err.code == TIDE_ESTATE, "open(another conf) while open: %s %s",
          tide_errcode_name(err.code), err.msg);
    ops->close(c);
    ops->close(a);
    if (b) {
        tide_slurm_node_t *nv = NULL;
        size_t nn = 0;
        CHECK(ops->nodes(b, &nv, &nn, &err) == 0 && nn > 0,
              "nodes() on the second handle after closing the first: %s", err.msg);
        free(nv);
    }
    ops->close(b);
    ops->close(NULL);

    /* after the last close, a good conf works again, and then a bad one fails */
    a = ops->open(conf, &err);
    CHECK(a != NULL, "open again after close: %s", err.msg);
    ops->close(a);
    memset(&err, 0, sizeof err);
    a = ops->open(bad, &err);
    CHECK(!a && err.code == TIDE_EIO, "open(no slurmctld) after a good open/close: %s %s",
          tide_errcode_name(err.code), err.msg);
    ops->close(a);
}

static void test_nodes(void *h)
{
    tide_slurm_node_t *v = NULL;
    size_t n = 0;
    tide_error_t err = {0};
    if (!CHECK(ops->nodes(h, &v, &n, &err) == 0, "nodes(): %s", err.msg))
        return;
    CHECK(n == 4, "nodes: %zu, want 4", n);
    for (size_t i = 0; i < n; i++) {
        char want[32];
        snprintf(want, sizeof want, "gpu%u", (unsigned)(i + 1) % 1000);
        CHECK(strcmp(v[i].name, want) == 0, "node %zu is %s, want %s (Slurm's order)", i,
              v[i].name, want);
        CHECK(v[i].gpus == 8, "%s: %d gpus, want 8", v[i].name, v[i].gpus);
        CHECK(strcmp(v[i].gpu_type, "h100") == 0, "%s: gpu type '%s', want h100", v[i].name,
              v[i].gpu_type);
        CHECK(v[i].state == TIDE_SNODE_UP, "%s: state %d, want UP (reason %s)", v[i].name,
              v[i].state, v[i].reason);
        CHECK(v[i].reason[0] == 0, "%s: reason '%s' while up", v[i].name, v[i].reason);
    }
    free(v);

    /* drain gpu4 with scontrol: DRAIN with the reason; then resume it */
    if (!CHECK(system("scontrol update NodeName=gpu4 State=DRAIN Reason=tide-drain-test") == 0,
               "scontrol drain gpu4"))
        return;
    v = NULL;
    if (CHECK(ops->nodes(h, &v, &n, &err) == 0 && n == 4, "nodes() after drain: %s", err.msg)) {
        CHECK(v[3].state == TIDE_SNODE_DRAIN, "drained gpu4: state %d, want DRAIN", v[3].state);
        CHECK(strcmp(v[3].reason, "tide-drain-test") == 0, "drained gpu4: reason '%s'",
              v[3].reason);
        CHECK(v[3].gpus == 8 && v[0].state == TIDE_SNODE_UP, "drain changed other fields");
    }
    free(v);
    CHECK(system("scontrol update NodeName=gpu4 State=RESUME") == 0, "scontrol resume gpu4");
    /* Slurm marks a resumed node NOT_RESPONDING (DOWN here) until it pinged it */
    double end = mono() + 10;
    int up = 0, state = -1;
    char reason[sizeof v->reason] = "";
    while (!up && mono() < end) {
        v = NULL;
        if (ops->nodes(h, &v, &n, &err) == 0 && n == 4) {
            state = v[3].state;
            memcpy(reason, v[3].reason, sizeof reason);
            up = state == TIDE_SNODE_UP && !reason[0];
        }
        free(v);
        if (!up)
            nap(0.2);
    }
    CHECK(up, "resumed gpu4 not UP within 10 s: state %d reason '%s'", state, reason);
}

static uint32_t submit(void *h, const char *suffix, const char *script, const char *nodelist,
                       int nodes, int gpus, uint32_t limit, int hold, tide_error_t *err)
{
    char name[128], out[320], markenv[300];
    snprintf(name, sizeof name, "%s%s", prefix, suffix);
    snprintf(out, sizeof out, "%s/%%j.out", tmpdir);
    snprintf(markenv, sizeof markenv, "MARK_DIR=%s", tmpdir);
    const char *env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", markenv,
                         "TIDE_TEST_VALUE=hello world", NULL};
    tide_slurm_submit_t s = {
        .name = name,
        .partition = "train",
        .script = script,
        .env = env,
        .workdir = tmpdir,
        .std_out = out,
        .nodelist = nodelist,
        .nodes = nodes,
        .gpus_per_node = gpus,
        .time_limit_min = limit,
        .hold = hold,
        .requeue = 1,
        .comment = "tide test_slurm_lib",
    };
    uint32_t id = 0;
    if (ops->submit(h, &s, &id, err) != 0)
        return 0;
    return id;
}

/* The long job's whole life: held submit, set_nodes, release, limits,
 * signal, requeue+hold, release, cancel. */
static void test_lifecycle(void *h)
{
    tide_error_t err = {0};
    tide_slurm_job_t j;
    char path[512], buf[256];

    uint32_t id = submit(h, "gang0", long_script, "gpu2", 1, 4, 5, 1, &err);
    if (!CHECK(id > 0, "submit held job: %s", err.msg))
        return;
    printf("  submitted job %u (held, gpu2, 4 GPUs, 5 min)\n", id);

    if (CHECK(get_job(h, id, &j), "job %u not listed after submit", id)) {
        CHECK(j.state == TIDE_SJOB_PENDING, "held job state %s",
              tide_slurm_job_state_name(j.state));
        CHECK(j.held, "held job not held");
        CHECK(!j.requeued && j.restarts == 0, "new job requeued=%d restarts=%d", j.requeued,
              j.restarts);
        CHECK(j.time_limit_min == 5, "time limit %u, want 5", j.time_limit_min);
        CHECK(j.nodes[0] == 0, "pending job has nodes '%s'", j.nodes);
        CHECK(j.reason[0] != 0, "held job has no reason");
        CHECK(j.submit_time > time(NULL) - 60 && j.submit_time <= time(NULL) + 1,
              "submit_time %lld", (long long)j.submit_time);
        CHECK(j.start_time == 0 && j.end_time == 0, "pending job has times %lld %lld",
              (long long)j.start_time, (long long)j.end_time);
        char want[128];
        snprintf(want, sizeof want, "%sgang0", prefix);
        CHECK(strcmp(j.name, want) == 0, "name '%s', want '%s'", j.name, want);
        printf("  pending: reason=%s\n", j.reason);
    }
    /* a held job does not start by itself */
    nap(1.0);
    CHECK(get_job(h, id, &j) && j.state == TIDE_SJOB_PENDING && j.held,
          "held job left pending+held on its own: %s", tide_slurm_job_state_name(j.state));

    memset(&err, 0, sizeof err);
    int rc = ops->signal(h, id, SIGUSR1, &err);
    CHECK(rc != 0 && err.code == TIDE_ESTATE, "signal a pending job: rc %d %s %s", rc,
          tide_errcode_name(err.code), err.msg);
    /* requeue of a pending job: it is queued already (Slurm says ESLURM_JOB_PENDING) */
    CHECK(ops->requeue(h, id, 0, &err) == 0, "requeue a pending job: %s", err.msg);
    CHECK(get_job(h, id, &j) && is_held(&j) && j.restarts == 0,
          "pending job after requeue: %s held=%d restarts=%d", tide_slurm_job_state_name(j.state),
          j.held, j.restarts);

    CHECK(ops->set_nodes(h, id, "gpu3", 1, &err) == 0, "set_nodes gpu3: %s", err.msg);
    CHECK(ops->release(h, id, &err) == 0, "release: %s", err.msg);
    double t0 = mono();
    if (!CHECK(wait_job(h, id, is_running, 30, &j), "released job %u did not run within 30 s", id))
        return;
    printf("  running on %s %.1f s after release\n", j.nodes, mono() - t0);
    CHECK(strcmp(j.nodes, "gpu3") == 0, "runs on '%s', want gpu3 (set_nodes)", j.nodes);
    CHECK(!j.held && !j.completing, "running job held=%d completing=%d", j.held, j.completing);
    CHECK(j.start_time > 0 && j.end_time == 0, "running job: start %lld end %lld",
          (long long)j.start_time, (long long)j.end_time);
    CHECK(j.reason[0] == 0, "running job has reason '%s'", j.reason);

    snprintf(path, sizeof path, "%s/cvd.%u.0", tmpdir, id);
    if (CHECK(wait_file(path, 10), "job did not write %s", path)) {
        nap(0.2);
        CHECK(count_csv(read_line(path, buf, sizeof buf)) == 4,
              "CUDA_VISIBLE_DEVICES '%s': want 4 GPUs", buf);
        snprintf(path, sizeof path, "%s/cpus.%u.0", tmpdir, id);
        CHECK(strcmp(read_line(path, buf, sizeof buf), "1") == 0,
              "SLURM_CPUS_ON_NODE '%s', want 1", buf);
        snprintf(path, sizeof path, "%s/env.%u.0", tmpdir, id);
        CHECK(strcmp(read_line(path, buf, sizeof buf), "hello world") == 0,
              "the job's environment: TIDE_TEST_VALUE='%s'", buf);
    }

    CHECK(ops->set_time_limit(h, id, 2, &err) == 0, "set_time_limit 2: %s", err.msg);
    CHECK(get_job(h, id, &j) && j.time_limit_min == 2, "time limit %u after set 2",
          j.time_limit_min);
    CHECK(ops->set_time_limit(h, id, 0, &err) == 0, "set_time_limit 0: %s", err.msg);
    CHECK(get_job(h, id, &j) && j.time_limit_min == 0, "time limit %u after set 0 (INFINITE)",
          j.time_limit_min);
    CHECK(ops->set_time_limit(h, id, 2, &err) == 0, "set_time_limit 2 again: %s", err.msg);
    CHECK(get_job(h, id, &j) && j.time_limit_min == 2, "time limit %u after set 2 again",
          j.time_limit_min);

    snprintf(path, sizeof path, "%s/usr1.%u.0", tmpdir, id);
    CHECK(!file_exists(path), "marker %s before the signal", path);
    CHECK(ops->signal(h, id, SIGUSR1, &err) == 0, "signal SIGUSR1: %s", err.msg);
    CHECK(wait_file(path, 10), "the batch script got no SIGUSR1 within 10 s (%s)", path);
    CHECK(get_job(h, id, &j) && j.state == TIDE_SJOB_RUNNING, "job not running after SIGUSR1: %s",
          tide_slurm_job_state_name(j.state));

    CHECK(ops->requeue(h, id, 1, &err) == 0, "requeue hold: %s", err.msg);
    t0 = mono();
    if (!CHECK(wait_job(h, id, is_held, 30, &j), "requeued job %u not pending+held within 30 s",
               id))
        return;
    printf("  requeued+held %.1f s after requeue: restarts=%d requeued=%d reason=%s\n",
           mono() - t0, j.restarts, j.requeued, j.reason);
    CHECK(j.restarts >= 1, "restarts %d after requeue", j.restarts);
    CHECK(j.requeued, "requeued flag not set after requeue");
    CHECK(j.nodes[0] == 0, "requeued pending job has nodes '%s'", j.nodes);
    nap(1.0);
    CHECK(get_job(h, id, &j) && is_held(&j), "requeued+held job did not stay held");

    CHECK(ops->set_nodes(h, id, "gpu3", 1, &err) == 0, "set_nodes gpu3 again: %s", err.msg);
    CHECK(ops->release(h, id, &err) == 0, "release after requeue: %s", err.msg);
    t0 = mono();
    /* a requeued job may start again only after cred_expire + 1 s (21 s here) */
    if (CHECK(wait_job(h, id, is_running, 60, &j), "job %u did not run again within 60 s", id)) {
        printf("  running again on %s %.1f s after release, restarts=%d\n", j.nodes,
               mono() - t0, j.restarts);
        CHECK(j.restarts >= 1, "restarts %d once restarted", j.restarts);
        CHECK(!j.held, "running again but held");
        snprintf(path, sizeof path, "%s/cvd.%u.%d", tmpdir, id, j.restarts);
        CHECK(wait_file(path, 10), "the restarted script did not write %s", path);
    }

    CHECK(ops->cancel(h, id, &err) == 0, "cancel: %s", err.msg);
    if (CHECK(wait_job(h, id, is_cancelled, 30, &j), "job %u not CANCELLED within 30 s", id)) {
        CHECK(j.end_time >= j.start_time && j.end_time > 0, "cancelled job: start %lld end %lld",
              (long long)j.start_time, (long long)j.end_time);
        printf("  cancelled: exit_code=%d reason=%s nodes=%s\n", j.exit_code, j.reason, j.nodes);
    }
    CHECK(ops->cancel(h, id, &err) == 0, "cancel an already cancelled job: %s", err.msg);
    memset(&err, 0, sizeof err);
    rc = ops->signal(h, id, SIGUSR1, &err);
    CHECK(rc != 0 && err.code == TIDE_ESTATE, "signal a finished job: rc %d %s %s", rc,
          tide_errcode_name(err.code), err.msg);
}

/* A job whose script exits 3: FAILED with exit_code 3. */
static void test_exit3(void *h)
{
    tide_error_t err = {0};
    tide_slurm_job_t j;
    uint32_t id = submit(h, "exit3", exit3_script, "gpu4", 1, 0, 0, 0, &err);
    if (!CHECK(id > 0, "submit exit-3 job: %s", err.msg))
        return;
    if (!CHECK(wait_job(h, id, is_finished, 30, &j), "exit-3 job %u did not end within 30 s", id))
        return;
    CHECK(j.state == TIDE_SJOB_FAILED, "exit-3 job ended %s, want FAILED",
          tide_slurm_job_state_name(j.state));
    CHECK(j.exit_code == 3, "exit-3 job exit_code %d", j.exit_code);
    CHECK(j.time_limit_min == 0, "no limit submitted, got %u", j.time_limit_min);
    CHECK(strcmp(j.nodes, "gpu4") == 0, "finished job nodes '%s', want gpu4", j.nodes);
    CHECK(j.start_time > 0 && j.end_time >= j.start_time, "finished job: start %lld end %lld",
          (long long)j.start_time, (long long)j.end_time);
    printf("  exit 3: %s exit_code=%d reason=%s\n", tide_slurm_job_state_name(j.state),
           j.exit_code, j.reason);
    char path[512], buf[256];
    snprintf(path, sizeof path, "%s/%u.out", tmpdir, id);
    CHECK(strcmp(read_line(path, buf, sizeof buf), "about to fail") == 0,
          "std_out %s: '%s'", path, buf);
}

/* Two 2-GPU jobs on one node run at once (each takes 1 CPU, not the node);
 * set_nodes grows a held job to two nodes and shrinks another to one. */
static void test_packing(void *h)
{
    tide_error_t err = {0};
    tide_slurm_job_t j;
    uint32_t a = submit(h, "pack-a", long_script, "gpu1", 1, 2, 5, 0, &err);
    CHECK(a > 0, "submit pack-a: %s", err.msg);
    uint32_t b = submit(h, "pack-b", long_script, "gpu1", 1, 2, 5, 0, &err);
    CHECK(b > 0, "submit pack-b: %s", err.msg);
    /* set_nodes grows a held job to two nodes, and shrinks another to one */
    uint32_t c = submit(h, "pair", long_script, "gpu4", 1, 8, 5, 1, &err);
    if (CHECK(c > 0, "submit held 1-node job: %s", err.msg)) {
        CHECK(ops->set_nodes(h, c, "gpu[2-3]", 2, &err) == 0, "set_nodes gpu[2-3]: %s", err.msg);
        CHECK(ops->release(h, c, &err) == 0, "release the pair: %s", err.msg);
    }
    uint32_t d = submit(h, "shrunk", long_script, "gpu[3-4]", 2, 1, 5, 1, &err);
    if (CHECK(d > 0, "submit held 2-node job: %s", err.msg)) {
        CHECK(ops->set_nodes(h, d, "gpu4", 1, &err) == 0, "set_nodes gpu4: %s", err.msg);
        CHECK(ops->release(h, d, &err) == 0, "release the shrunk job: %s", err.msg);
    }
    if (a)
        CHECK(wait_job(h, a, is_running, 30, &j) && strcmp(j.nodes, "gpu1") == 0,
              "pack-a not running on gpu1: %s", j.nodes);
    if (b)
        CHECK(wait_job(h, b, is_running, 30, &j) && strcmp(j.nodes, "gpu1") == 0,
              "pack-b not running on gpu1 beside pack-a: %s", j.nodes);
    if (c)
        CHECK(wait_job(h, c, is_running, 30, &j) && strcmp(j.nodes, "gpu[2-3]") == 0,
              "job grown to 2 nodes not running on gpu[2-3]: %s", j.nodes);
    if (d)
        CHECK(wait_job(h, d, is_running, 30, &j) && strcmp(j.nodes, "gpu4") == 0,
              "job shrunk to 1 node not running on gpu4: %s (%s)", j.nodes, j.reason);

    /* jobs(prefix) lists exactly this run's jobs; jobs(NULL) lists them too */
    tide_slurm_job_t *v = NULL;
    size_t n = 0, mine = 0;
    if (CHECK(ops->jobs(h, prefix, &v, &n, &err) == 0, "jobs(prefix): %s", err.msg)) {
        for (size_t i = 0; i < n; i++)
            CHECK(strncmp(v[i].name, prefix, strlen(prefix)) == 0, "jobs(prefix) listed %s",
                  v[i].name);
        mine = n;
    }
    free(v);
    v = NULL;
    if (CHECK(ops->jobs(h, NULL, &v, &n, &err) == 0, "jobs(NULL): %s", err.msg))
        CHECK(n >= mine && mine >= 4, "jobs(NULL) %zu < jobs(prefix) %zu", n, mine);
    free(v);
    v = NULL;
    if (CHECK(ops->jobs(h, "no-such-prefix-at-all/", &v, &n, &err) == 0, "jobs(none): %s",
              err.msg))
        CHECK(n == 0 && v == NULL, "jobs(no match) gave %zu", n);
    free(v);

    /* requeue without hold: pending again, not held, counted as a restart */
    if (a) {
        CHECK(ops->requeue(h, a, 0, &err) == 0, "requeue pack-a: %s", err.msg);
        if (CHECK(wait_job(h, a, is_requeued_free, 30, &j),
                  "pack-a not pending (not held) after requeue"))
            CHECK(j.restarts == 1 && j.requeued, "requeued pack-a: restarts %d requeued %d",
                  j.restarts, j.requeued);
        printf("  requeued (no hold): %s reason=%s\n", tide_slurm_job_state_name(j.state),
               j.reason);
        /* requeue+hold of that pending job holds it */
        CHECK(ops->requeue(h, a, 1, &err) == 0, "requeue+hold a pending job: %s", err.msg);
        CHECK(get_job(h, a, &j) && is_held(&j), "pending pack-a after requeue+hold: %s held=%d",
              tide_slurm_job_state_name(j.state), j.held);
    }

    uint32_t ids[4] = {a, b, c, d};
    for (int i = 0; i < 4; i++)
        if (ids[i]) {
            CHECK(ops->cancel(h, ids[i], &err) == 0, "cancel %u: %s", ids[i], err.msg);
            CHECK(wait_job(h, ids[i], is_cancelled, 30, &j), "job %u not cancelled", ids[i]);
        }
}

/* Unknown ids, bad requests. */
static void test_errors(void *h)
{
    tide_error_t err;
    const uint32_t unknown = 60000000; /* below Slurm's MaxJobId, never reached here */
    char idstr[32];
    snprintf(idstr, sizeof idstr, "%u", unknown);

    memset(&err, 0, sizeof err);
    CHECK(ops->signal(h, unknown, SIGUSR1, &err) != 0 && err.code == TIDE_ENOENT,
          "signal unknown job: %s %s", tide_errcode_name(err.code), err.msg);
    CHECK(strstr(err.msg, idstr) && strstr(err.msg, "SIGUSR1"),
          "signal unknown: message '%s' names job and signal", err.msg);
    printf("  signal unknown: %s\n", err.msg);
    memset(&err, 0, sizeof err);
    CHECK(ops->release(h, unknown, &err) != 0 && err.code == TIDE_ENOENT,
          "release unknown job: %s %s", tide_errcode_name(err.code), err.msg);
    memset(&err, 0, sizeof err);
    CHECK(ops->requeue(h, unknown, 0, &err) != 0 && err.code == TIDE_ENOENT,
          "requeue unknown job: %s %s", tide_errcode_name(err.code), err.msg);
    memset(&err, 0, sizeof err);
    CHECK(ops->set_time_limit(h, unknown, 3, &err) != 0 && err.code == TIDE_ENOENT,
          "set_time_limit unknown job: %s %s", tide_errcode_name(err.code), err.msg);
    memset(&err, 0, sizeof err);
    CHECK(ops->set_nodes(h, unknown, "gpu1", 1, &err) != 0 && err.code == TIDE_ENOENT,
          "set_nodes unknown job: %s %s", tide_errcode_name(err.code), err.msg);
    memset(&err, 0, sizeof err);
    CHECK(ops->cancel(h, unknown, &err) == 0, "cancel unknown job: %s", err.msg);

    /* refused submissions: EINVAL with Slurm's reason */
    memset(&err, 0, sizeof err);
    CHECK(submit(h, "badnode", exit3_script, "gpu99", 1, 1, 1, 1, &err) == 0 &&
              err.code == TIDE_EINVAL,
          "submit on gpu99: %s %s", tide_errcode_name(err.code), err.msg);
    printf("  submit on gpu99: %s\n", err.msg);
    memset(&err, 0, sizeof err);
    CHECK(submit(h, "toomany", exit3_script, "gpu1", 1, 9, 1, 0, &err) == 0 &&
              err.code == TIDE_EINVAL &&
              strstr(err.msg, "Requested node configuration is not available"),
          "submit 9 GPUs on an 8-GPU node: %s %s", tide_errcode_name(err.code), err.msg);
    printf("  submit 9 GPUs: %s\n", err.msg);
    /* Slurm 22.05 does not check a HELD submission: it is accepted, and once
     * released it stays pending with reason BadConstraints, and Slurm holds it
     * again (priority 0) */
    memset(&err, 0, sizeof err);
    uint32_t held9 = submit(h, "toomany-held", exit3_script, "gpu1", 1, 9, 1, 1, &err);
    if (CHECK(held9 > 0, "held 9-GPU submission refused: %s", err.msg)) {
        CHECK(ops->release(h, held9, &err) == 0, "release 9-GPU job: %s", err.msg);
        tide_slurm_job_t j;
        if (CHECK(wait_job(h, held9, has_bad_constraints, 20, &j),
                  "released 9-GPU job %u: no BadConstraints within 20 s", held9))
            CHECK(j.held, "9-GPU job with BadConstraints: Slurm did not hold it (priority 0)");
        CHECK(ops->cancel(h, held9, &err) == 0, "cancel 9-GPU job: %s", err.msg);
    }
    memset(&err, 0, sizeof err);
    CHECK(submit(h, "noscript", "echo no shebang\n", "gpu1", 1, 1, 1, 1, &err) == 0 &&
              err.code == TIDE_EINVAL,
          "submit without #!: %s %s", tide_errcode_name(err.code), err.msg);
    memset(&err, 0, sizeof err);
    CHECK(submit(h, "zero", exit3_script, "gpu1", 0, 1, 1, 1, &err) == 0 &&
              err.code == TIDE_EINVAL,
          "submit 0 nodes: %s %s", tide_errcode_name(err.code), err.msg);
    memset(&err, 0, sizeof err);
    CHECK(ops->signal(h, unknown, 0, &err) != 0 && err.code == TIDE_EINVAL,
          "signal 0: %s %s", tide_errcode_name(err.code), err.msg);
    memset(&err, 0, sizeof err);
    CHECK(ops->set_nodes(h, unknown, NULL, 1, &err) != 0 && err.code == TIDE_EINVAL,
          "set_nodes NULL: %s %s", tide_errcode_name(err.code), err.msg);
    tide_slurm_submit_t empty = {0};
    uint32_t id = 1;
    memset(&err, 0, sizeof err);
    CHECK(ops->submit(h, &empty, &id, &err) != 0 && err.code == TIDE_EINVAL && id == 0,
          "submit of an empty request: %s %s", tide_errcode_name(err.code), err.msg);
}

/* Cancel whatever this run left behind. */
static void cleanup_jobs(void *h)
{
    tide_slurm_job_t *v = NULL;
    size_t n = 0;
    tide_error_t err = {0};
    if (ops->jobs(h, prefix, &v, &n, &err) != 0)
        return;
    for (size_t i = 0; i < n; i++)
        if (v[i].state == TIDE_SJOB_PENDING || v[i].state == TIDE_SJOB_RUNNING)
            ops->cancel(h, v[i].id, &err);
    free(v);
}

int main(void)
{
    const char *conf = getenv("SLURM_CONF");
    if (!conf || !*conf) {
        fprintf(stderr, "usage: SLURM_CONF=<slurm.conf of a running scripts/slurm-local.sh "
                        "cluster> test_slurm_lib\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    double t0 = mono();
    snprintf(prefix, sizeof prefix, "tidelibtest-%ld-", (long)getpid());
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tide-slurm-lib-test-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    chmod(tmpdir, 0755);

    test_states();
    ops = tide_slurm_lib_ops();
    if (!CHECK(ops != NULL, "tide_slurm_lib_ops() is NULL: built without libslurm?"))
        goto out;
    CHECK(ops->version && strstr(ops->version, "22.05"), "version '%s'",
          ops->version ? ops->version : "(null)");
    printf("%s, SLURM_CONF=%s, jobs %s*, files in %s\n", ops->version, conf, prefix, tmpdir);

    printf("open/close:\n");
    test_open(conf);

    tide_error_t err = {0};
    void *h = ops->open(conf, &err);
    if (!CHECK(h != NULL, "open(%s): %s", conf, err.msg))
        goto out;
    printf("nodes:\n");
    test_nodes(h);
    printf("errors:\n");
    test_errors(h);
    printf("lifecycle:\n");
    test_lifecycle(h);
    printf("exit code:\n");
    test_exit3(h);
    printf("packing:\n");
    test_packing(h);
    cleanup_jobs(h);
    ops->close(h);

out:
    nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    printf("%d passed, %d failed (%.1f s)\n", npass, nfail, mono() - t0);
    return nfail ? 1 : 0;
}
