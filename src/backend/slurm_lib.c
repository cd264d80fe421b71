/* The libslurm implementation of tide_slurm_ops_t (src/backend/slurm_api.h):
 * every version-specific Slurm call of tide lives here. Written and verified
 * against Debian 12's Slurm 22.05.8 (libslurm38, libslurm-dev).
 *
 * libslurm is process-global: slurm_init() parses one slurm.conf into a global
 * configuration, slurm_fini() drops it. So handles share that one state: the
 * first open initialises libslurm, the last close finalises it (a reference
 * count under a mutex: the only globals here), and while handles are open only
 * the same slurm.conf can be opened again. open / close / open with another
 * conf works (slurm_fini really resets the configuration).
 *
 * libslurm calls fatal() - exit(1) - on a slurm.conf it cannot parse. So the
 * first open parses the file once in a forked child and refuses it (EINVAL
 * with libslurm's own complaint) when the child dies, instead of letting
 * libslurm end the daemon.
 *
 * Timing (22.05): slurm_ping fails at once when nothing listens (2 s when
 * munged is down); every other RPC retries the connection for MessageTimeout
 * - 1 seconds (9 s with 10) before it fails with "Unable to contact slurm
 * controller".
 *
 * Seen on 22.05.8 (tests/slurm/test_slurm_lib.c checks most of it):
 *  - GPUs: job_desc.tres_per_node = "gres:gpu:N" (what sbatch --gres=gpu:N
 *    sends; squeue %b and scontrol's TresPerNode show the same string);
 *  - a HELD submission is not checked against the nodes: 9 GPUs on an 8-GPU
 *    node is accepted, and after release stays pending, reason BadConstraints,
 *    priority 0 again (held); unheld it is refused at once;
 *  - release = update priority INFINITE (as `scontrol release`);
 *  - slurm_kill_job(..., KILL_FULL_JOB) reaches the batch shell (a bash trap
 *    on USR1 runs); with flags 0 only steps get it (the batch shell does not);
 *  - slurm_requeue refuses a pending job (ESLURM_JOB_PENDING) but DOES requeue
 *    a finished (e.g. cancelled) batch job: it becomes pending again;
 *  - a requeued job waits cred_expire + 1 s before it may start again;
 *  - after `scontrol update State=RESUME` a node is NOT_RESPONDING (DOWN here)
 *    until slurmctld pinged it (~0.3 s). */
#include "backend/slurm_api.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const char *const job_state_names[TIDE_SJOB_STATE_COUNT] = {
    [TIDE_SJOB_PENDING] = "PENDING",     [TIDE_SJOB_RUNNING] = "RUNNING",
    [TIDE_SJOB_SUSPENDED] = "SUSPENDED", [TIDE_SJOB_COMPLETED] = "COMPLETED",
    [TIDE_SJOB_CANCELLED] = "CANCELLED", [TIDE_SJOB_FAILED] = "FAILED",
    [TIDE_SJOB_TIMEOUT] = "TIMEOUT",     [TIDE_SJOB_NODE_FAIL] = "NODE_FAIL",
    [TIDE_SJOB_PREEMPTED] = "PREEMPTED", [TIDE_SJOB_BOOT_FAIL] = "BOOT_FAIL",
    [TIDE_SJOB_DEADLINE] = "DEADLINE",   [TIDE_SJOB_OOM] = "OOM",
};

const char *tide_slurm_job_state_name(int state)
{
    if (state < 0 || state >= TIDE_SJOB_STATE_COUNT || !job_state_names[state])
        return "UNKNOWN";
    return job_state_names[state];
}

/* ------------------------------------------------------------------ GRES */

/* Copy src (NULL: "") into dst of n bytes, truncated, always NUL-terminated (n > 0). */
static void copy_str(char *dst, size_t n, const char *src)
{
    if (!n)
        return;
    size_t l = src ? strnlen(src, n - 1) : 0;
    if (l)
        memcpy(dst, src, l);
    dst[l] = 0;
}

/* Add the GPUs of one GRES entry ("gpu:h100:8", "gpu:8", "gpu", "gpu:h100:8(S:0-1)")
 * to *gpus; the first type seen goes to type. Other GRES are ignored. s is not
 * NUL-terminated: only its len bytes are read. */
static void gres_entry(const char *s, size_t len, int *gpus, char *type, size_t ntype)
{
    char e[256];
    if (len >= sizeof e)
        len = sizeof e - 1;
    memcpy(e, s, len);
    e[len] = 0;
    e[strcspn(e, "(")] = 0; /* drop "(S:0-1)", "(IDX:...)" */
    char *f[3] = {0};
    int nf = 0;
    char *save = NULL;
    for (char *t = strtok_r(e, ":", &save); t && nf < 3; t = strtok_r(NULL, ":", &save))
        f[nf++] = t;
    if (nf == 0 || strcmp(f[0], "gpu") != 0)
        return;
    const char *cnt = NULL, *ty = NULL;
    if (nf == 1) {
        cnt = "1";
    } else if (nf == 2) {
        /* "gpu:8" or "gpu:h100" (one of that type) */
        if (f[1][0] >= '0' && f[1][0] <= '9')
            cnt = f[1];
        else
            ty = f[1], cnt = "1";
    } else {
        ty = f[1];
        cnt = f[2];
    }
    char *end = NULL;
    errno = 0;
    unsigned long long c = strtoull(cnt, &end, 10);
    if (errno || end == cnt)
        return;
    if (c > INT_MAX)
        c = INT_MAX;
    /* suffixes K/M/G are allowed in gres counts */
    if (*end == 'k' || *end == 'K')
        c *= 1024ULL;
    else if (*end == 'm' || *end == 'M')
        c *= 1024ULL * 1024ULL;
    else if (*end == 'g' || *end == 'G')
        c *= 1024ULL * 1024ULL * 1024ULL;
    long long sum = (long long)*gpus + (long long)(c > INT_MAX ? INT_MAX : c);
    *gpus = sum > INT_MAX ? INT_MAX : (int)sum;
    if (ty && !type[0])
        copy_str(type, ntype, ty);
}

/* A node's GRES list: entries separated by commas outside parentheses. */
int tide_slurm_gres_gpus(const char *gres, int *gpus, char *type, size_t ntype)
{
    if (gpus)
        *gpus = 0;
    if (type && ntype)
        type[0] = 0;
    if (!gpus || !type || !ntype)
        return -1;
    if (!gres)
        return 0;
    int saved = errno; /* strtoull may set it: the caller's is kept */
    const char *start = gres;
    int depth = 0;
    for (const char *p = gres;; p++) {
        if (*p == '(')
            depth++;
        else if (*p == ')' && depth > 0)
            depth--;
        if (*p == 0 || (*p == ',' && depth == 0)) {
            if (p > start)
                gres_entry(start, (size_t)(p - start), gpus, type, ntype);
            if (!*p)
                break;
            start = p + 1;
        }
    }
    errno = saved;
    return 0;
}

/* GPUs of a TRES list: "gres:gpu:2", "gres/gpu:h100:2", "gres/gpu=4", other
 * TRES ignored, the gpu entries added up. */
static int tres_gpus(const char *tres)
{
    int total = 0;
    const char *p = tres;
    while (p && *p) {
        size_t len = strcspn(p, ",;");
        char e[256];
        size_t l = len < sizeof e ? len : sizeof e - 1;
        memcpy(e, p, l);
        e[l] = 0;
        char *x = e;
        if (!strncmp(x, "gres:", 5) || !strncmp(x, "gres/", 5))
            x += 5;
        char *eq = strchr(x, '=');
        if (eq)
            *eq = ':'; /* "gpu=4" (tres_alloc_str) reads as "gpu:4" */
        int g = 0;
        char ty[8];
        tide_slurm_gres_gpus(x, &g, ty, sizeof ty);
        long long sum = (long long)total + g;
        total = sum > INT_MAX ? INT_MAX : (int)sum;
        p += len;
        if (*p)
            p++;
    }
    return total;
}

int tide_slurm_job_gpus_per_node(const char *const *detail, size_t n, const char *tres_per_node,
                                 const char *tres_alloc, int nodes)
{
    int saved = errno, best = 0;
    char ty[8];
    for (size_t i = 0; detail && i < n; i++) {
        int g = 0;
        tide_slurm_gres_gpus(detail[i], &g, ty, sizeof ty);
        if (g > best)
            best = g;
    }
    if (!best)
        best = tres_gpus(tres_per_node);
    if (!best) {
        long long t = tres_gpus(tres_alloc), k = nodes < 1 ? 1 : nodes;
        best = (int)((t + k - 1) / k);
    }
    errno = saved;
    return best;
}

#ifndef TIDE_HAVE_LIBSLURM

const tide_slurm_ops_t *tide_slurm_lib_ops(void) { return NULL; }

#else /* TIDE_HAVE_LIBSLURM */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "util/util.h"

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(22, 5, 0) && \
    SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(22, 6, 0)
#define LIB_VERSION "libslurm 22.05"
#else
#define LIB_VERSION "libslurm (not 22.05: untested)"
#endif

/* Debian's compiled-in default (libslurm's default_slurm_config_file). */
#define DEFAULT_SLURM_CONF "/etc/slurm/slurm.conf"

/* job_reason_string() is exported by libslurm 22.05 as slurm_job_reason_string
 * but declared in no public header: looked up at run time, the number is
 * reported when it is missing. */
typedef char *(*reason_fn_t)(enum job_state_reason);

typedef struct lib_handle {
    reason_fn_t reason;
} lib_handle_t;

/* libslurm's process-global state: how many handles are open, on which conf. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_refs;
static char g_conf[PATH_MAX];

/* ------------------------------------------------------------------ helpers */

/* The Slurm error code of a failed call: libslurm returns SLURM_ERROR and sets
 * errno, or (slurm_ping, some receive paths) returns the code itself. */
static int slurm_code(int rc)
{
    int e = (rc == SLURM_ERROR || rc == 0) ? slurm_get_errno() : rc;
    return e ? e : SLURM_ERROR;
}

static const char *code_str(int e)
{
    const char *s = slurm_strerror(e);
    return s && *s ? s : "unknown Slurm error";
}

/* Slurm error code -> TIDE_E* (see slurm_api.h). */
static int classify(int e)
{
    switch (e) {
    /* slurmctld or munge could not be reached, or the conversation broke */
    case SLURM_COMMUNICATIONS_CONNECTION_ERROR:
    case SLURM_COMMUNICATIONS_SEND_ERROR:
    case SLURM_COMMUNICATIONS_RECEIVE_ERROR:
    case SLURM_COMMUNICATIONS_SHUTDOWN_ERROR:
    case SLURM_COMMUNICATIONS_MISSING_SOCKET_ERROR:
    case SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR:
    case SLURMCTLD_COMMUNICATIONS_SEND_ERROR:
    case SLURMCTLD_COMMUNICATIONS_RECEIVE_ERROR:
    case SLURMCTLD_COMMUNICATIONS_SHUTDOWN_ERROR:
    case SLURM_PROTOCOL_VERSION_ERROR:
    case SLURM_PROTOCOL_IO_STREAM_VERSION_ERROR:
    case SLURM_PROTOCOL_AUTHENTICATION_ERROR:
    case SLURM_PROTOCOL_INSANE_MSG_LENGTH:
    case SLURM_UNEXPECTED_MSG_ERROR:
    case SLURM_PROTOCOL_SOCKET_IMPL_ZERO_RECV_LENGTH:
    case SLURM_PROTOCOL_SOCKET_IMPL_NEGATIVE_RECV_LENGTH:
    case SLURM_PROTOCOL_SOCKET_IMPL_NOT_ALL_DATA_SENT:
    case ESLURM_PROTOCOL_INCOMPLETE_PACKET:
    case SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT:
    case SLURM_PROTOCOL_SOCKET_ZERO_BYTES_SENT:
    case ESLURM_IN_STANDBY_MODE:
    case ESLURM_IN_STANDBY_USE_BACKUP:
    case ESLURM_AUTH_CRED_INVALID:
    case ESLURM_AUTH_FOPEN_ERROR:
    case ESLURM_AUTH_NET_ERROR:
    case ESLURM_AUTH_UNABLE_TO_SIGN:
    case ESLURM_AUTH_BADARG:
    case ESLURM_AUTH_MEMORY:
    case ESLURM_AUTH_INVALID:
    case ESLURM_AUTH_UNPACK:
    case ESLURM_AUTH_SKIP:
    case ESLURM_DB_CONNECTION:
    case ESLURM_DB_CONNECTION_INVALID:
    /* plain errno values that libslurm passes through from its sockets */
    case ECONNREFUSED:
    case ECONNRESET:
    case ECONNABORTED:
    case ETIMEDOUT:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case ENETDOWN:
    case EPIPE:
    case EAGAIN:
    case EINTR:
    case EIO:
        return TIDE_EIO;

    case ESLURM_INVALID_JOB_ID:
        return TIDE_ENOENT;

    /* the job exists but is in the wrong state for the request */
    case ESLURM_TRANSITION_STATE_NO_UPDATE:
    case ESLURM_ALREADY_DONE:
    case ESLURM_JOB_PENDING:
    case ESLURM_JOB_HELD:
    case ESLURM_JOB_NOT_PENDING:
    case ESLURM_JOB_SUSPENDED:
    case ESLURM_JOB_STARTED:
    case ESLURM_JOB_FINISHED:
    case ESLURM_JOB_NOT_RUNNING:
    case ESLURM_JOB_NOT_PENDING_NOR_RUNNING:
    case ESLURM_JOB_NOT_SUSPENDED:
    case ESLURM_JOB_NOT_FINISHED:
    case ESLURM_BATCH_ONLY:
    case ESLURM_DISABLED:
    case ESLURM_PROLOG_RUNNING:
    case ESLURM_NODES_BUSY:
    case ESLURM_REBOOT_IN_PROGRESS:
    case ESLURM_DEFER:
    case ESLURMD_KILL_JOB_ALREADY_COMPLETE:
    case ESLURMD_JOB_NOTRUNNING:
        return TIDE_ESTATE;

    default:
        return TIDE_EINVAL;
    }
}

/* Fill err from the failed call's return code rc: "<what>: <Slurm's text>". */
static int fail(tide_error_t *err, int rc, const char *what)
{
    int e = slurm_code(rc);
    return tide_errf(err, classify(e), "%s: %s", what, code_str(e));
}

static const char *sig_name(int sig, char *buf, size_t n)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {{SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"},
                 {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"},
                 {SIGTERM, "SIGTERM"}, {SIGCONT, "SIGCONT"}, {SIGSTOP, "SIGSTOP"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].sig == sig) {
            snprintf(buf, n, "%s", names[i].name);
            return buf;
        }
    snprintf(buf, n, "signal %d", sig);
    return buf;
}

/* ----------------------------------------------------------- open / close */

/* Where slurmctld is, from slurm.conf (for messages): "host(addr):port" of the
 * first SlurmctldHost/ControlMachine and SlurmctldPort lines; returns how many
 * controllers (SlurmctldHost lines, at least 1) it names. */
static int ctld_where(const char *conf, char *out, size_t n)
{
    char host[256] = "", port[32] = "6817", line[1024];
    int count = 0;
    FILE *f = fopen(conf, "r");
    if (f) {
        while (fgets(line, sizeof line, f)) {
            char *p = line + strspn(line, " \t");
            char *eq = strchr(p, '=');
            if (*p == '#' || !eq)
                continue;
            size_t kl = (size_t)(eq - p);
            char *v = eq + 1;
            v[strcspn(v, " \t\r\n#")] = 0;
            if ((kl == 13 && !strncasecmp(p, "SlurmctldHost", kl)) ||
                (kl == 14 && !strncasecmp(p, "ControlMachine", kl)) ||
                (kl == 16 && !strncasecmp(p, "BackupController", kl))) {
                if (!host[0])
                    copy_str(host, sizeof host, v);
                count++;
            } else if (kl == 13 && !strncasecmp(p, "SlurmctldPort", kl))
                copy_str(port, sizeof port, v);
        }
        fclose(f);
    }
    snprintf(out, n, "%s:%s", host[0] ? host : "?", port);
    return count > 0 ? count : 1;
}

/* In the child: libslurm's fatal() calls exit(1); this handler, registered
 * last, runs first and ends the child before the parent's atexit handlers. */
static void child_exit_now(void) { _exit(1); }

/* Parse conf in a forked child (libslurm exits on a bad slurm.conf). 0 when
 * the child parsed it; else -1 with libslurm's first complaint in why. */
static int conf_parses(const char *conf, char *why, size_t nwhy)
{
    int fds[2];
    why[0] = 0;
    if (pipe(fds) < 0)
        return 0; /* cannot check: let libslurm try */
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return 0;
    }
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDERR_FILENO);
        int nul = open("/dev/null", O_WRONLY);
        if (nul >= 0)
            dup2(nul, STDOUT_FILENO);
        atexit(child_exit_now);
        slurm_init(conf);
        _exit(0);
    }
    close(fds[1]);
    /* keep the first line that says error/fatal (the cause; later ones follow
     * from it), without that prefix */
    char buf[4096], line[512];
    size_t ll = 0;
    int fatal = 0;
    ssize_t r;
    while ((r = read(fds[0], buf, sizeof buf)) != 0) {
        if (r < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (ssize_t i = 0; i < r; i++) {
            if (buf[i] != '\n') {
                if (ll < sizeof line - 1)
                    line[ll++] = buf[i];
                continue;
            }
            line[ll] = 0;
            const char *m = strstr(line, "error: ");
            if (!m && (m = strstr(line, "fatal: ")))
                fatal = 1;
            if (m && !why[0])
                copy_str(why, nwhy, m + 7);
            ll = 0;
        }
    }
    close(fds[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    /* (with SIGCHLD ignored waitpid finds no child: then "fatal:" decides) */
    if (!fatal && WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (!why[0])
        snprintf(why, nwhy, "libslurm could not read it (exit status %d)",
                 WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    return -1;
}

static void *lib_open(const char *conf, tide_error_t *err)
{
    const char *path = conf;
    if (!path || !*path)
        path = getenv("SLURM_CONF");
    if (!path || !*path)
        path = DEFAULT_SLURM_CONF;
    char want[PATH_MAX];
    if (!realpath(path, want)) {
        /* libslurm would retry a missing file for a minute, then exit */
        int e = errno;
        tide_errf(err, e == ENOENT ? TIDE_ENOENT : TIDE_EIO, "slurm.conf %s: %s", path,
                  strerror(e));
        return NULL;
    }

    pthread_mutex_lock(&g_lock);
    if (g_refs > 0) {
        if (strcmp(want, g_conf) != 0) {
            char cur[PATH_MAX];
            copy_str(cur, sizeof cur, g_conf);
            pthread_mutex_unlock(&g_lock);
            tide_errf(err, TIDE_ESTATE,
                      "slurm.conf %s: libslurm is process-global and already uses %s", want, cur);
            return NULL;
        }
    } else {
        char why[400];
        if (access(want, R_OK) != 0) {
            int e = errno;
            pthread_mutex_unlock(&g_lock);
            tide_errf(err, TIDE_EIO, "slurm.conf %s: %s", want, strerror(e));
            return NULL;
        }
        if (conf_parses(want, why, sizeof why) != 0) {
            pthread_mutex_unlock(&g_lock);
            tide_errf(err, TIDE_EINVAL, "slurm.conf %s is not usable: %s", want, why);
            return NULL;
        }
        /* libslurm reads $SLURM_CONF in places besides slurm_init (plugins) */
        setenv("SLURM_CONF", want, 1);
        slurm_init(want);
        /* the primary slurmctld, else a backup one (pinging a controller the
         * conf does not name makes libslurm complain on stderr) */
        char where[300];
        int nctld = ctld_where(want, where, sizeof where);
        int rc = slurm_ping(0);
        int e = rc != SLURM_SUCCESS ? slurm_code(rc) : 0;
        for (int dest = 1; rc != SLURM_SUCCESS && dest < nctld && dest < 8; dest++)
            rc = slurm_ping(dest);
        if (rc != SLURM_SUCCESS) {
            slurm_fini();
            pthread_mutex_unlock(&g_lock);
            /* whatever the code (connect failure, munge, version): unreachable */
            tide_errf(err, TIDE_EIO, "slurmctld at %s (SLURM_CONF=%s) does not answer: %s",
                      where, want, code_str(e));
            return NULL;
        }
        copy_str(g_conf, sizeof g_conf, want);
    }
    g_refs++;
    pthread_mutex_unlock(&g_lock);

    lib_handle_t *h = tide_xcalloc(1, sizeof *h);
    /* the global scope (the program and libslurm): POSIX, no RTLD_DEFAULT */
    void *self = dlopen(NULL, RTLD_LAZY);
    if (self) {
        void *sym = dlsym(self, "slurm_job_reason_string");
        memcpy(&h->reason, &sym, sizeof h->reason);
        dlclose(self);
    }
    return h;
}

static void lib_close(void *hv)
{
    if (!hv)
        return;
    free(hv);
    pthread_mutex_lock(&g_lock);
    if (g_refs > 0 && --g_refs == 0) {
        slurm_fini();
        g_conf[0] = 0;
    }
    pthread_mutex_unlock(&g_lock);
}

/* ------------------------------------------------------------------ nodes */

static int node_health(uint32_t st)
{
    uint32_t base = st & NODE_STATE_BASE;
    if (base == NODE_STATE_DOWN || base == NODE_STATE_FUTURE || base == NODE_STATE_UNKNOWN ||
        base == NODE_STATE_ERROR || base >= NODE_STATE_END)
        return TIDE_SNODE_DOWN;
    if (st & NODE_STATE_NO_RESPOND)
        return TIDE_SNODE_UNREACHABLE;
    if (st & (NODE_STATE_POWERED_DOWN | NODE_STATE_POWERING_DOWN |
              NODE_STATE_POWERING_UP | NODE_STATE_REBOOT_ISSUED | NODE_STATE_INVALID_REG))
        return TIDE_SNODE_DOWN;
    if (st & (NODE_STATE_DRAIN | NODE_STATE_FAIL | NODE_STATE_MAINT |
              NODE_STATE_REBOOT_REQUESTED | NODE_STATE_POWER_DRAIN))
        return TIDE_SNODE_DRAIN;
    return TIDE_SNODE_UP;
}

/* Why a node is not up when Slurm gives no reason (e.g. not responding). */
static const char *node_why(uint32_t st)
{
    uint32_t base = st & NODE_STATE_BASE;
    if (st & NODE_STATE_NO_RESPOND)
        return "not responding";
    if (base == NODE_STATE_DOWN)
        return "down";
    if (base == NODE_STATE_FUTURE)
        return "future";
    if (base == NODE_STATE_UNKNOWN)
        return "state unknown (not registered)";
    if (st & (NODE_STATE_POWERED_DOWN | NODE_STATE_POWERING_DOWN | NODE_STATE_POWERING_UP))
        return "powered down or powering";
    if (st & (NODE_STATE_REBOOT_REQUESTED | NODE_STATE_REBOOT_ISSUED))
        return "rebooting";
    if (st & NODE_STATE_INVALID_REG)
        return "invalid registration";
    if (st & NODE_STATE_FAIL)
        return "failing";
    if (st & NODE_STATE_MAINT)
        return "maintenance";
    if (st & (NODE_STATE_DRAIN | NODE_STATE_POWER_DRAIN))
        return "drained";
    return "not usable";
}

static int lib_nodes(void *hv, tide_slurm_node_t **out, size_t *n, tide_error_t *err)
{
    *out = NULL;
    *n = 0;
    if (!hv)
        return tide_errf(err, TIDE_EINVAL, "load nodes: Slurm backend not open");
    node_info_msg_t *msg = NULL;
    int rc = slurm_load_node((time_t)0, &msg, SHOW_ALL);
    if (rc != SLURM_SUCCESS || !msg)
        return fail(err, rc, "load nodes");
    tide_slurm_node_t *v = msg->record_count ? tide_xcalloc(msg->record_count, sizeof *v) : NULL;
    size_t k = 0;
    for (uint32_t i = 0; i < msg->record_count; i++) {
        const node_info_t *ni = &msg->node_array[i];
        if (!ni->name || !ni->name[0])
            continue; /* an unused slot of the node table, not a node */
        tide_slurm_node_t *o = &v[k++];
        copy_str(o->name, sizeof o->name, ni->name);
        tide_slurm_gres_gpus(ni->gres, &o->gpus, o->gpu_type, sizeof o->gpu_type);
        o->state = node_health(ni->node_state);
        if (o->state != TIDE_SNODE_UP)
            copy_str(o->reason, sizeof o->reason,
                     ni->reason && ni->reason[0] ? ni->reason : node_why(ni->node_state));
    }
    slurm_free_node_info_msg(msg);
    if (!k) {
        free(v);
        v = NULL;
    }
    *out = v;
    *n = k;
    return 0;
}

/* ------------------------------------------------------------------- jobs */

static int job_state(uint32_t st)
{
    switch (st & JOB_STATE_BASE) {
    case JOB_PENDING: return TIDE_SJOB_PENDING;
    case JOB_RUNNING: return TIDE_SJOB_RUNNING;
    case JOB_SUSPENDED: return TIDE_SJOB_SUSPENDED;
    case JOB_COMPLETE: return TIDE_SJOB_COMPLETED;
    case JOB_CANCELLED: return TIDE_SJOB_CANCELLED;
    case JOB_FAILED: return TIDE_SJOB_FAILED;
    case JOB_TIMEOUT: return TIDE_SJOB_TIMEOUT;
    case JOB_NODE_FAIL: return TIDE_SJOB_NODE_FAIL;
    case JOB_PREEMPTED: return TIDE_SJOB_PREEMPTED;
    case JOB_BOOT_FAIL: return TIDE_SJOB_BOOT_FAIL;
    case JOB_DEADLINE: return TIDE_SJOB_DEADLINE;
    case JOB_OOM: return TIDE_SJOB_OOM;
    default: return TIDE_SJOB_FAILED; /* a state newer than this code */
    }
}

/* The batch script's status from a wait() status: N, or 128+N for signal N. */
static int exit_status(uint32_t ws)
{
    int w = (int)ws;
    if (ws == NO_VAL || ws == INFINITE)
        return 0;
    if (WIFSIGNALED(w))
        return 128 + WTERMSIG(w);
    if (WIFEXITED(w))
        return WEXITSTATUS(w);
    return 0;
}

static void fill_job(const lib_handle_t *h, const slurm_job_info_t *j, tide_slurm_job_t *o)
{
    o->id = j->job_id;
    copy_str(o->name, sizeof o->name, j->name);
    o->state = job_state(j->job_state);
    int pending = o->state == TIDE_SJOB_PENDING;
    o->completing = (j->job_state & JOB_COMPLETING) != 0;
    o->held = pending && j->priority == 0;
    o->requeued = (j->job_state & (JOB_REQUEUE | JOB_REQUEUE_HOLD | JOB_SPECIAL_EXIT |
                                   JOB_REQUEUE_FED)) != 0 ||
                  (pending && j->restart_cnt > 0);
    o->exit_code = exit_status(j->exit_code);
    o->restarts = j->restart_cnt;
    o->submit_time = j->submit_time > 0 ? (int64_t)j->submit_time : 0;
    /* Slurm fills start/end of a pending job with estimates and the end of a
     * running job with start + limit: only real times are reported. */
    o->start_time = !pending && j->start_time > 0 ? (int64_t)j->start_time : 0;
    int ended = !pending && o->state != TIDE_SJOB_RUNNING && o->state != TIDE_SJOB_SUSPENDED;
    o->end_time = ended && j->end_time > 0 ? (int64_t)j->end_time : 0;
    o->time_limit_min =
        (j->time_limit == INFINITE || j->time_limit == NO_VAL) ? 0 : j->time_limit;
    copy_str(o->nodes, sizeof o->nodes, pending ? NULL : j->nodes);
    if (!pending)
        o->gpus_per_node = tide_slurm_job_gpus_per_node(
            (const char *const *)j->gres_detail_str, j->gres_detail_cnt, j->tres_per_node,
            j->tres_alloc_str, (int)j->num_nodes);
    if (j->state_reason == WAIT_NO_REASON) {
        o->reason[0] = 0;
    } else {
        const char *r = h->reason ? h->reason((enum job_state_reason)j->state_reason) : NULL;
        if (r && *r)
            copy_str(o->reason, sizeof o->reason, r);
        else
            snprintf(o->reason, sizeof o->reason, "reason %u", (unsigned)j->state_reason);
    }
}

static int lib_jobs(void *hv, const char *prefix, tide_slurm_job_t **out, size_t *n,
                    tide_error_t *err)
{
    *out = NULL;
    *n = 0;
    if (!hv)
        return tide_errf(err, TIDE_EINVAL, "load jobs: Slurm backend not open");
    const lib_handle_t *h = hv;
    job_info_msg_t *msg = NULL;
    int rc = slurm_load_jobs((time_t)0, &msg, SHOW_ALL | SHOW_DETAIL); /* GRES per node */
    if (rc != SLURM_SUCCESS || !msg)
        return fail(err, rc, "load jobs");
    size_t pl = prefix ? strlen(prefix) : 0;
    tide_slurm_job_t *v = NULL;
    size_t k = 0;
    if (msg->record_count)
        v = tide_xcalloc(msg->record_count, sizeof *v);
    for (uint32_t i = 0; i < msg->record_count; i++) {
        const slurm_job_info_t *j = &msg->job_array[i];
        if (pl && (!j->name || strncmp(j->name, prefix, pl) != 0))
            continue;
        fill_job(h, j, &v[k++]);
    }
    slurm_free_job_info_msg(msg);
    if (!k) {
        free(v);
        v = NULL;
    }
    *out = v;
    *n = k;
    return 0;
}

/* ----------------------------------------------------------------- submit */

static int lib_submit(void *hv, const tide_slurm_submit_t *s, uint32_t *id, tide_error_t *err)
{
    if (id)
        *id = 0;
    if (!hv)
        return tide_errf(err, TIDE_EINVAL, "submit: Slurm backend not open");
    if (!s || !s->name || !s->name[0])
        return tide_errf(err, TIDE_EINVAL, "submit: a job name is required");
    const char *what = s->name;
    if (!s->script || strncmp(s->script, "#!", 2) != 0)
        return tide_errf(err, TIDE_EINVAL, "submit %s: the script must start with \"#!\"", what);
    if (!s->workdir || s->workdir[0] != '/')
        return tide_errf(err, TIDE_EINVAL, "submit %s: an absolute working directory is required",
                         what);
    if (!s->nodelist || !s->nodelist[0])
        return tide_errf(err, TIDE_EINVAL, "submit %s: a node list is required", what);
    if (s->nodes < 1 || s->gpus_per_node < 0 || s->gpus_per_node > 1000000)
        return tide_errf(err, TIDE_EINVAL, "submit %s: bad size (%d nodes, %d GPUs per node)",
                         what, s->nodes, s->gpus_per_node);

    /* Slurm rejects a batch job without environment: NULL gets a bare PATH
     * (never the daemon's own environment) */
    static const char *const bare_env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", NULL};
    const char *const *env = s->env && s->env[0] ? s->env : bare_env;
    uint32_t nenv = 0;
    while (env[nenv])
        nenv++;

    char tres[64] = "";
    if (s->gpus_per_node > 0)
        snprintf(tres, sizeof tres, "gres:gpu:%d", s->gpus_per_node);

    /* libslurm only reads the strings (it packs them into the RPC) */
    job_desc_msg_t d;
    slurm_init_job_desc_msg(&d);
    d.name = (char *)s->name;
    d.partition = s->partition && s->partition[0] ? (char *)s->partition : NULL;
    d.script = (char *)s->script;
    d.environment = (char **)env;
    d.env_size = nenv;
    d.work_dir = (char *)s->workdir;
    if (s->std_out && s->std_out[0]) {
        d.std_out = (char *)s->std_out;
        d.std_err = (char *)s->std_out;
    }
    d.req_nodes = (char *)s->nodelist;
    d.min_nodes = d.max_nodes = (uint32_t)s->nodes;
    /* one task of one CPU per node: a node's other CPUs stay free for other jobs */
    d.num_tasks = (uint32_t)s->nodes;
    d.ntasks_per_node = 1;
    d.cpus_per_task = 1;
    d.min_cpus = (uint32_t)s->nodes;
    if (tres[0])
        d.tres_per_node = tres;
    d.time_limit = s->time_limit_min ? s->time_limit_min : INFINITE;
    if (s->hold)
        d.priority = 0;
    d.requeue = s->requeue ? 1 : 0;
    d.comment = s->comment && s->comment[0] ? (char *)s->comment : NULL;
    d.user_id = getuid();
    d.group_id = getgid();

    submit_response_msg_t *resp = NULL;
    int rc = slurm_submit_batch_job(&d, &resp);
    if (rc != SLURM_SUCCESS || !resp) {
        char w[200];
        snprintf(w, sizeof w, "submit %s on %s", what, s->nodelist);
        if (resp)
            slurm_free_submit_response_response_msg(resp);
        return fail(err, rc, w);
    }
    if (id)
        *id = resp->job_id;
    slurm_free_submit_response_response_msg(resp);
    return 0;
}

/* ---------------------------------------------------------------- updates */

static int update(job_desc_msg_t *d, const char *what, tide_error_t *err)
{
    int rc = slurm_update_job(d);
    if (rc != SLURM_SUCCESS)
        return fail(err, rc, what);
    return 0;
}

static int lib_release(void *hv, uint32_t id, tide_error_t *err)
{
    char what[64];
    snprintf(what, sizeof what, "release job %u", id);
    if (!hv)
        return tide_errf(err, TIDE_EINVAL, "%s: Slurm backend not open", what);
    /* what `scontrol release` sends: priority INFINITE = recompute it */
    job_desc_msg_t d;
    slurm_init_job_desc_msg(&d);
    d.job_id = id;
    d.priority = INFINITE;
    return update(&d, what, err);
}

static int lib_set_time_limit(void *hv, uint32_t id, uint32_t minutes, tide_error_t *err)
{
    char what[96];
    snprintf(what, sizeof what, "set time limit of job %u to %u min", id, minutes);
    if (!hv)
        return tide_errf(err, TIDE_EINVAL, "%s: Slurm backend not open", what);
    if (minutes >= NO_VAL - 1)
        return tide_errf(err, TIDE_EINVAL, "%s: out of range", what);
    job_desc_msg_t d;
    slurm_init_job_desc_msg(&d);
    d.job_id = id;
    d.time_limit = minutes ? minutes : INFINITE;
    return update(&d, what, err);
}

static int lib_set_nodes(void *hv, uint32_t id, const char *nodelist, int nodes,
                         tide_error_t *err)
{
    char what[320];
    snprintf(what, sizeof what, "set nodes of job %u to %s", id, nodelist ? nodelist : "(none)");
    if (!hv)
        return tide_errf(err, TIDE_EINVAL, "%s: Slurm backend not open", what);
    if (!nodelist || !nodelist[0] || nodes < 1)
        return tide_errf(err, TIDE_EINVAL, "%s: a node list and a count >= 1 are required", what);
    job_desc_msg_t d;
    slurm_init_job_desc_msg(&d);
    d.job_id = id;
    d.req_nodes = (char *)nodelist;
    d.min_nodes = d.max_nodes = (uint32_t)nodes;
    /* keep submit's one task (one CPU) per node: a job shrunk to fewer nodes
     * with its old task count never starts (BadConstraints) */
    d.num_tasks = (uint32_t)nodes;
    d.min_cpus = (uint32_t)nodes;
    return update(&d, what, err);
}

/* -------------------------------------------------------- signal / requeue */

static int lib_signal(void *hv, uint32_t id, int sig, tide_error_t *err)
{
    char what[96], sn[32];
    snprintf(what, sizeof what, "signal job %u with %s", id, sig_name(sig, sn, sizeof sn));
    if (!hv)
        return tide_errf(err, TIDE_EINVAL, "%s: Slurm backend not open", what);
    if (sig <= 0 || sig >= 65)
        return tide_errf(err, TIDE_EINVAL, "%s: not a signal", what);
    /* KILL_FULL_JOB: the batch shell and every step (plain 0 = steps only) */
    int rc = slurm_kill_job(id, (uint16_t)sig, KILL_FULL_JOB);
    if (rc != SLURM_SUCCESS)
        return fail(err, rc, what);
    return 0;
}

static int lib_requeue(void *hv, uint32_t id, int hold, tide_error_t *err)
{
    char what[64];
    snprintf(what, sizeof what, "requeue%s job %u", hold ? " and hold" : "", id);
    if (!hv)
        return tide_errf(err, TIDE_EINVAL, "%s: Slurm backend not open", what);
    int rc = slurm_requeue(id, hold ? JOB_REQUEUE_HOLD : 0);
    if (rc == SLURM_SUCCESS)
        return 0;
    if (slurm_code(rc) != ESLURM_JOB_PENDING)
        return fail(err, rc, what);
    /* Slurm refuses to requeue a pending job ("Job is pending execution"):
     * it is queued already; hold it when asked (what `scontrol hold` sends).
     * NB: Slurm 22.05 does requeue a FINISHED batch job (it runs again). */
    if (!hold)
        return 0;
    job_desc_msg_t d;
    slurm_init_job_desc_msg(&d);
    d.job_id = id;
    d.priority = 0;
    return update(&d, what, err);
}

static int lib_cancel(void *hv, uint32_t id, tide_error_t *err)
{
    char what[64];
    snprintf(what, sizeof what, "cancel job %u", id);
    if (!hv)
        return tide_errf(err, TIDE_EINVAL, "%s: Slurm backend not open", what);
    int rc = slurm_kill_job(id, SIGKILL, 0);
    if (rc == SLURM_SUCCESS)
        return 0;
    int e = slurm_code(rc);
    if (e == ESLURM_ALREADY_DONE || e == ESLURM_INVALID_JOB_ID)
        return 0; /* finished, or gone from slurmctld's memory */
    return tide_errf(err, classify(e), "%s: %s", what, code_str(e));
}

static int lib_partition_nodes(void *hv, const char *name, tide_slurm_nodename_t **out,
                               size_t *n, tide_error_t *err)
{
    *out = NULL;
    *n = 0;
    if (!hv)
        return tide_errf(err, TIDE_EINVAL, "load partitions: Slurm backend not open");
    partition_info_msg_t *msg = NULL;
    int rc = slurm_load_partitions((time_t)0, &msg, SHOW_ALL);
    if (rc != SLURM_SUCCESS || !msg)
        return fail(err, rc, "load partitions");
    const partition_info_t *pi = NULL;
    char known[512] = "";
    size_t off = 0;
    for (uint32_t i = 0; i < msg->record_count; i++) {
        const partition_info_t *p = &msg->partition_array[i];
        if (!p->name)
            continue;
        if (!strcmp(p->name, name))
            pi = p;
        int w = snprintf(known + off, sizeof known - off, "%s%s", off ? ", " : "", p->name);
        if (w > 0 && (size_t)w < sizeof known - off)
            off += (size_t)w;
    }
    if (!pi) {
        tide_errf(err, TIDE_ENOENT, "no Slurm partition '%s' (there are: %s)", name,
                  known[0] ? known : "none");
        slurm_free_partition_info_msg(msg);
        return -1;
    }
    size_t cap = 0, k = 0;
    tide_slurm_nodename_t *v = NULL;
    hostlist_t hl = pi->nodes && pi->nodes[0] ? slurm_hostlist_create(pi->nodes) : NULL;
    char *host;
    while (hl && (host = slurm_hostlist_shift(hl))) {
        tide_grow((void **)&v, &cap, k + 1, sizeof *v);
        copy_str(v[k++].name, sizeof v->name, host);
        free(host);
    }
    if (hl)
        slurm_hostlist_destroy(hl);
    slurm_free_partition_info_msg(msg);
    *out = v;
    *n = k;
    return 0;
}

static const tide_slurm_ops_t lib_ops = {
    .version = LIB_VERSION,
    .open = lib_open,
    .close = lib_close,
    .nodes = lib_nodes,
    .jobs = lib_jobs,
    .submit = lib_submit,
    .release = lib_release,
    .set_time_limit = lib_set_time_limit,
    .set_nodes = lib_set_nodes,
    .signal = lib_signal,
    .requeue = lib_requeue,
    .cancel = lib_cancel,
    .partition_nodes = lib_partition_nodes,
};

const tide_slurm_ops_t *tide_slurm_lib_ops(void) { return &lib_ops; }

#endif /* TIDE_HAVE_LIBSLURM */
