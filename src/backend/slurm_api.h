/* What the Slurm backend needs from Slurm, in tide's own terms.
 *
 * The backend (src/backend/slurm.c) talks to Slurm only through this table,
 * so every version-specific call lives in one file: slurm_lib.c (libslurm of
 * Debian's Slurm 22.05). The unit tests plug an in-memory fake in its place.
 *
 * Errors: every operation returns 0, or -1 with err: TIDE_EIO when Slurm could
 * not be reached (slurmctld down, munge failing, timeouts: the backend retries
 * later), TIDE_ENOENT for an unknown job, TIDE_EINVAL / TIDE_ESTATE when Slurm
 * refused the request (the message is Slurm's, prefixed with what was asked). */
#ifndef TIDE_BACKEND_SLURM_API_H
#define TIDE_BACKEND_SLURM_API_H

#include <stddef.h>
#include <stdint.h>

#include "tide/types.h"

/* Node health as tide sees it. */
enum {
    TIDE_SNODE_UP = 0, /* idle, mixed, allocated, completing: usable */
    TIDE_SNODE_DOWN,   /* down (fenced: its jobs are gone), future, unknown */
    TIDE_SNODE_DRAIN,  /* drain / draining / drained / fail: no new work */
    TIDE_SNODE_UNREACHABLE, /* not responding, not (yet) down: its jobs may still run */
};

typedef struct tide_slurm_node {
    char name[64];
    int gpus;           /* GPUs from the node's GRES ("gpu[:type]:N"), 0 when none */
    char gpu_type[32];  /* "" when the GRES is untyped */
    int state;          /* TIDE_SNODE_* */
    char reason[128];   /* Slurm's reason when not up, else "" */
} tide_slurm_node_t;

/* Job states (Slurm's base state). */
enum {
    TIDE_SJOB_PENDING = 0,
    TIDE_SJOB_RUNNING,
    TIDE_SJOB_SUSPENDED,
    TIDE_SJOB_COMPLETED, /* exit code 0 */
    TIDE_SJOB_CANCELLED,
    TIDE_SJOB_FAILED,    /* non-zero exit code */
    TIDE_SJOB_TIMEOUT,   /* reached its time limit */
    TIDE_SJOB_NODE_FAIL,
    TIDE_SJOB_PREEMPTED,
    TIDE_SJOB_BOOT_FAIL,
    TIDE_SJOB_DEADLINE,
    TIDE_SJOB_OOM,
    TIDE_SJOB_STATE_COUNT
};

/* Room for tide's Slurm job names: "tide.job." + a job id of up to 200 bytes
 * (TIDE_JSON_MAX_ID) + ".g" + a gang index, or "tide.rep." + a replica
 * handle + "." + a service name of up to 200 bytes. */
#define TIDE_SLURM_NAME_MAX 256

typedef struct tide_slurm_job {
    uint32_t id;
    char name[TIDE_SLURM_NAME_MAX];
    int state;              /* TIDE_SJOB_* */
    int completing;         /* still releasing its nodes (COMPLETING flag) */
    int held;               /* pending and held (priority 0) */
    int requeued;           /* pending because it was requeued (REQUEUED flag / restart) */
    int exit_code;          /* batch script's exit status; 128+N when killed by signal N */
    int restarts;           /* how often Slurm restarted it (restart_cnt) */
    int64_t submit_time;    /* Unix seconds, 0 unknown */
    int64_t start_time;     /* Unix seconds of the current/last start, 0 unknown */
    int64_t end_time;       /* Unix seconds, 0 unknown */
    uint32_t time_limit_min; /* 0 = none (INFINITE) */
    char nodes[256];        /* allocated nodes (Slurm hostlist), "" when none */
    int gpus_per_node;      /* GPUs it holds on each of its nodes (its GRES; the
                               largest per-node count), 0 when none or pending */
    char reason[64];        /* why pending / why it ended, "" when none */
} tide_slurm_job_t;

/* A node name (partition_nodes). */
typedef struct tide_slurm_nodename {
    char name[64];
} tide_slurm_nodename_t;

/* A batch job to submit. Everything borrowed for the call. */
typedef struct tide_slurm_submit {
    const char *name;        /* job name (required) */
    const char *partition;   /* NULL: Slurm's default partition */
    const char *script;      /* the whole batch script, starting with "#!" (required) */
    const char *const *env;  /* NULL-terminated "KEY=VALUE" list: the job's whole environment */
    const char *workdir;     /* working directory (required, absolute) */
    const char *std_out;     /* stdout+stderr file ("%j" = job id); NULL: Slurm's default */
    const char *nodelist;    /* exact nodes, e.g. "gpu1" or "gpu[1-2]" (required) */
    int nodes;               /* number of nodes in nodelist (>= 1) */
    int gpus_per_node;       /* GRES gpu per node (>= 0) */
    uint32_t time_limit_min; /* 0 = none (INFINITE) */
    int hold;                /* submit held (priority 0): nothing starts until release */
    int requeue;             /* Slurm may requeue it (1 for training) */
    const char *comment;     /* free text shown by squeue, NULL = none */
} tide_slurm_submit_t;

typedef struct tide_slurm_ops {
    const char *version; /* e.g. "libslurm 22.05" */

    /* Connect using slurm.conf at conf (NULL: $SLURM_CONF, then the
     * default). Returns a handle (caller closes) or NULL with err (EIO when
     * slurmctld does not answer, naming it and the conf). */
    void *(*open)(const char *conf, tide_error_t *err);
    void (*close)(void *h); /* NULL is a no-op */

    /* Every node with its GRES and health, in Slurm's order. *out is a new
     * array the caller frees (free()); *n its length. */
    int (*nodes)(void *h, tide_slurm_node_t **out, size_t *n, tide_error_t *err);

    /* Every job Slurm still knows whose name starts with prefix (all when
     * prefix is NULL or ""), including finished jobs still in its memory
     * (MinJobAge). *out is a new array the caller frees (free()). */
    int (*jobs)(void *h, const char *prefix, tide_slurm_job_t **out, size_t *n,
                tide_error_t *err);

    /* Submit; *id gets the Slurm job id. */
    int (*submit)(void *h, const tide_slurm_submit_t *s, uint32_t *id, tide_error_t *err);

    /* Release a held job (pending, priority 0). */
    int (*release)(void *h, uint32_t id, tide_error_t *err);

    /* Set a job's time limit in minutes from its start (0 = INFINITE);
     * works for pending and running jobs (root may raise it too). */
    int (*set_time_limit)(void *h, uint32_t id, uint32_t minutes, tide_error_t *err);

    /* Set the exact nodes of a pending job (before release). */
    int (*set_nodes)(void *h, uint32_t id, const char *nodelist, int nodes, tide_error_t *err);

    /* Send signal sig to the batch shell and every step of a running job. */
    int (*signal)(void *h, uint32_t id, int sig, tide_error_t *err);

    /* Requeue a running (or pending) job; hold = 1 keeps it held until
     * release. Slurm kills its processes (SIGTERM, SIGKILL after KillWait). */
    int (*requeue)(void *h, uint32_t id, int hold, tide_error_t *err);

    /* Cancel a job (pending or running). Unknown or finished: 0. */
    int (*cancel)(void *h, uint32_t id, tide_error_t *err);

    /* The nodes of partition `name` (its hostlist expanded), as a new array
     * the caller frees (free()). Errors: ENOENT no such partition (the
     * message lists the partitions). May be NULL: no partition checks. */
    int (*partition_nodes)(void *h, const char *name, tide_slurm_nodename_t **out, size_t *n,
                           tide_error_t *err);
} tide_slurm_ops_t;

/* The libslurm implementation, or NULL when tide was built without libslurm
 * (the "slurm" backend then refuses to start, saying so). Static storage. */
const tide_slurm_ops_t *tide_slurm_lib_ops(void);

/* Name of a TIDE_SJOB_* state ("PENDING", ...), static. */
const char *tide_slurm_job_state_name(int state);

/* The GPUs of a Slurm node's GRES string (node_info_t.gres, as `scontrol show
 * node` prints Gres=): *gpus gets their count, type the first GPU type seen
 * (truncated to ntype - 1 bytes, always NUL-terminated; "" when untyped).
 * Pure: no libslurm, no allocation, errno kept; reads gres only up to its NUL
 * and writes at most ntype bytes of type.
 *
 * Returns 0. Returns -1 only when gpus or type is NULL or ntype is 0 (then the
 * outputs that exist are still set to 0 / ""). A NULL gres is 0 GPUs, type "".
 *
 * Entries are separated by commas outside parentheses; only entries named
 * exactly "gpu" (case-sensitive) count, every other GRES ("mps:100", "shard:4",
 * "nic:2") is ignored, and the counts of all gpu entries add up:
 *   "gpu:h100:8" 8 "h100"    "gpu:8" 8 ""          "gpu" 1 ""     "gpu:h100" 1 "h100"
 *   "gpu:h100:8(S:0-1)" 8 "h100" (text from the first '(' of an entry is dropped)
 *   "gpu:h100:4(S:0),gpu:h100:4(S:1)" 8 "h100"
 *   "gpu:a100:4,gpu:h100:4" 8 "a100" (mixed types: the total, the first type)
 *   "mps:100,gpu:2" 2 ""     "" 0 ""    "(null)" 0 ""  (Slurm's "no GRES")
 * An entry is split on ':' with empty fields skipped ("gpu::8" is "gpu:8");
 * fields after the third are ignored ("gpu:h100:8:no_consume" is 8 "h100").
 * Of two fields, a second one that starts with a digit is a count, anything
 * else a type of one GPU: "gpu:" 1 "", "gpu:-3" 1 "-3".
 * The count is read as strtoull does (base 10: leading blanks and a sign are
 * accepted, text after the digits ignored), then an immediate K/M/G suffix
 * (either case) multiplies it by 1024, 1024^2, 1024^3 ("gpu:8k" 8192,
 * "gpu:8x" 8). A count that is no number ("gpu:x:y") or does not fit an
 * unsigned long long ("gpu:99999999999999999999") makes the entry count
 * nothing and leaves the type alone. Counts above INT_MAX, and negative ones,
 * which strtoull wraps ("gpu:h100:-3"), are INT_MAX; the total saturates at
 * INT_MAX, so *gpus is always 0..INT_MAX. A count of 0 ("gpu:a100:0") adds
 * nothing but still sets the type.
 * Only the first 255 bytes of an entry are read: a longer one is cut there
 * first, so "gpu:<300-character type>:8" is 1 GPU of that type (cut). */
int tide_slurm_gres_gpus(const char *gres, int *gpus, char *type, size_t ntype);

/* GPUs a job holds on each node, from its GRES in libslurm's job record:
 * the largest count among the per-node allocation details (gres_detail_str,
 * n entries: "gpu:h100:2(IDX:0-1)", "gpu:2"); else its per-node request
 * (tres_per_node: "gres:gpu:2", "gres/gpu:h100:2", "gres:gpu:2,gres:nic:1");
 * else its allocated total (tres_alloc: "cpu=2,mem=1G,gres/gpu=4,node=2")
 * divided by nodes, rounded up. Counts are read as tide_slurm_gres_gpus
 * does. NULL or empty inputs count nothing; nodes < 1 is 1. Pure; always
 * 0..INT_MAX. */
int tide_slurm_job_gpus_per_node(const char *const *detail, size_t n, const char *tres_per_node,
                                 const char *tres_alloc, int nodes);

#endif
