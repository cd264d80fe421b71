/* Private to libtidecore: the engine's state, shared by the core modules
 * (placement, forecast, accounting, leases/reclaim, scheduling, policies).
 * Nothing outside src/core includes this file. */
#ifndef TIDE_CORE_INTERNAL_H
#define TIDE_CORE_INTERNAL_H

#include <math.h>

#include "tide/engine.h"
#include "util/util.h"
#include "util/bitset.h"

/* Zones: which workloads may use a domain. Assigned by the policy's layout. */
enum { Z_RESERVE = 0, Z_INF, Z_TRAIN, Z_SHARED, Z_COUNT };
#define ZBIT(z) (1u << (z))

/* GPU owner kinds. */
enum { OWN_FREE = 0, OWN_JOB = 1, OWN_REPLICA = 2, OWN_FOREIGN = 3 };

/* Claim on a domain: GPUs being emptied for a service's replicas, for a
 * high-priority job, or for the Tier A reserve (reserve.c); no one else may
 * start there meanwhile. */
enum { CLAIM_NONE = 0, CLAIM_SERVICE, CLAIM_JOB, CLAIM_RESERVE, CLAIM_KINDS };

/* A renewable lease in reclaim order (lease.c; kept between passes) and a
 * deadline heap entry (a lease return or checkpoint deadline of job h). */
struct lease_key {
    int prio, shrink;
    double cost;
    int32_t h;
    int32_t lease;   /* not keys: the job's lease and leased GPUs, so that the */
    int n_leased;    /* renewal pass need not read the job (kept by the notes) */
    /* the lease's term_start and latest_return, so that the pass reads the
     * lease only to renew it (kept by renew and the notes; not stored in a
     * snapshot: a restore re-keys every lease) */
    tide_time_t term_start, latest;
    /* the renewal pass's tail skip (lease.c, tail_wake): before `wake` a
     * lease past the forecast's need curve cannot be renewed, while the
     * shortest term is `wake_mt` (set with the key and by renew) */
    tide_time_t wake, wake_mt;
};
struct deadline_ent {
    tide_time_t t;
    int32_t h;
};

/* tide__capacity_empty's memo: gangs per (gang size, GPU types) on the
 * empty cluster */
#define CAP_EMPTY_SLOTS 64
typedef struct cap_empty {
    int valid, gang, cap;
    uint32_t types;
} cap_empty_t;

typedef struct domain {
    int first_node, n_nodes;
    int first_gpu, gpus;   /* nodes of a domain are consecutive, so are their GPUs */
    int type;
    int zone;
    int up_gpus;           /* GPUs on nodes that are up */
    int free;              /* free GPUs on nodes that are up */
    int claim_kind;
    int32_t claim_id;
    int claim_n;           /* replicas (service claim) */
    tide_time_t claim_since;
    int borrowed;          /* a shared domain standing in for failed reserve GPUs */
    int foreign;           /* GPUs foreign jobs hold (OWN_FOREIGN) */
    int free_slot;         /* free count it is indexed under (dom_free_bits) */
    int rack, power;       /* failure domains of its first node */
    int cut_held;          /* GPUs held on its unreachable nodes (not idle, not up) */
} domain_t;

typedef struct node {
    int domain;
    int gpus, first_gpu;
    int up;
    int foreign_want;      /* GPUs foreign jobs hold, as last reported */
    int foreign;           /* ... of which marked OWN_FOREIGN (taken from free GPUs) */
    int cut;               /* unreachable (TIDE_EV_NODE_UNREACHABLE): not up for
                              placement, but what runs there keeps its GPUs */
} node_t;

/* One (domain, count) pair of an allocation. */
typedef struct domcount {
    int domain;
    int n;
} domcount_t;

typedef struct alloc {
    int32_t *gpus;   /* gang-ordered: gang k is gpus[k*g .. k*g+g) */
    int n;
    int cap;         /* int, not size_t: 16 bytes in every job_t */
} alloc_t;

/* What power caps cost one job up to its pw_at (tide_job_info_t), kept for
 * the jobs ever capped only (e->cap_tots, indexed by job_t.cap_tot - 1). */
typedef struct cap_tot {
    double capped_s, delay_s, energy_j;
} cap_tot_t;

/* A training job (one per handle, never freed while the engine lives: 1.6 M
 * of them in a large replay, so the small-range members are int8_t and the
 * members are ordered to leave no padding). */
typedef struct job {
    tide_job_spec_t spec;    /* id in e->job_ids; team is e->teams[team].name
                                (tide__job_team_owned: not yet, mid-restore) */
    int team;
    int dp_max;
    int width;
    int preemptions;
    double progress;         /* as of progress_at */
    tide_time_t progress_at;
    double committed;
    tide_time_t submitted, first_start, finished, run_start, notice_at, deadline;
    double lost_gpu_s;
    alloc_t alloc;
    int32_t lease;
    int n_leased;            /* GPUs of alloc under the lease (tier C) */
    double tr_c, tr_d;       /* training GPU-seconds on lent / unlent GPUs since the
                                last commit (how lost work splits by tier) */
    tide_time_t tr_at;
    tide_time_t exp_end;     /* expected release time (key of e->by_end) */
    /* power (power.c): cap per GPU (0 = none), relative throughput under it,
     * and what caps cost it (tide_job_info_t) */
    double cap_w, speed;
    double pw_w;             /* its draw in the running total (W) */
    tide_time_t pw_at;
    tide_time_t grow_after;  /* lost a rank: grows back from this time on */
    int32_t run_idx;         /* index in e->running or -1 */
    int32_t cap_tot;         /* 1 + its index in e->cap_tots once a cap cost it
                                anything, 0 before (most jobs: never) */
    int8_t cls;              /* TIDE_C_P1..P3 */
    int8_t state, phase;
    int8_t acct_state;       /* state its GPUs are counted in */
    int8_t acct_tier_own;    /* tier of its unleased GPUs */
    int8_t in_lease_order;   /* listed in e->lease_order */
    int8_t reclaim_reason;
    int8_t stop_pending;     /* checkpoint requested to stop (not just shrink) */
    int8_t held;             /* tide_engine_job_hold: not started (out of the queue);
                                noticed and stopped if it runs */
    int lent_counted;        /* its share of e->lent_run (tide__lent_sync) */
} job_t;

enum { REP_WARMING = 0, REP_READY, REP_STOPPED };

typedef struct replica {
    int service;
    int state;
    alloc_t alloc;
    int tier;                /* A if on the reserve, else B */
    tide_time_t started, ready_at;
    tide_time_t notice_at;   /* reclaim notice that freed its GPUs, or -1 */
    tide_time_t credit;      /* warm-up done before the start (staged weights), s */
    int rehearsal;           /* a warm-up rehearsal: not capacity, stops when ready */
    int cut;                 /* on an unreachable node: not counted in ready/warming */
} replica_t;

typedef struct lease {
    int32_t job;
    int gpus;
    tide_time_t start, latest_return;
    tide_time_t term_start;  /* when latest_return was last set (renewal at half) */
    tide_time_t ckpt_cost;
    int8_t can_shrink;       /* flags as bytes: one lease_t per lease ever granted */
    int8_t noticed, returned, late;
} lease_t;

#define ACCT_CELLS (TIDE_C_COUNT * TIDE_S_COUNT * TIDE_T_COUNT)
#define ACCT_CELL_WORDS ((ACCT_CELLS + 63) / 64)

/* Demand forecast per service (forecast.c): a baseline (level, trend, daily
 * and weekly shape, from per-bucket means) and, around it, a learned
 * distribution of bursts (demand / the baseline peak predicted one lead
 * earlier) from which the burst multiplier for the SLO target is chosen. */
#define FC_BINS 640           /* log-spaced bins of the burst ratio */
#define FC_BIN_WORDS ((FC_BINS + 63) / 64)
#define FC_PRED_RING 512      /* recent baseline predictions (one per tick) */
#define ENS_RULES 13          /* sizing rules the ensemble scores (ensemble.c) */
#define ENS_RING 256          /* their recent proposals (one per tick) */
#define ENS_WARM 32           /* ticks of starts a counterfactual remembers as warming
                                 (older starts count as ready) */
typedef struct fc_sample {
    int16_t bin;
    float w;
} fc_sample_t;
typedef struct forecast {
    int nb;                  /* buckets per day */
    int days;                /* days of history kept */
    tide_time_t bucket_s;
    double *sum, *dur;       /* ring [(days+1)*nb]: rps x seconds and seconds observed */
    double *mx;              /* ring: highest demand observed in the bucket */
    /* mx_blk[j]: the highest mx of ring slots [64 j, 64 j + 64), kept by
     * every write of mx while mx_blk_ok (0 after init and restore:
     * peak_seen rebuilds it), so the peak is a scan of the blocks */
    double *mx_blk;
    int mx_blk_ok;
    double peak_seen;        /* highest of mx (cached) */
    int peak_dirty;
    int ens_pick;            /* sizing ensemble (below): rule in use (0: the forecast) */
    int64_t last_bucket;     /* absolute bucket index last filled (times may be < 0) */
    int64_t first_bucket;
    int filled;              /* last_bucket and first_bucket are set */
    tide_time_t last_t;      /* demand integrated up to here */
    double cur;              /* demand observed now */
    int have;                /* any observation yet */
    /* which shape forecasts better: mean relative error of each (EWMA, -1 = unscored) */
    double err_day, err_week;
    /* bursts: ring of (bin, weight) and the histogram it sums to */
    double bw[FC_BINS];
    /* bw_nz: bit b set iff bw[b] != 0, kept by add_sample while bw_nz_ok
     * (0 after init and restore: burst_q rebuilds it from bw); burst_q
     * visits only those bins */
    uint64_t bw_nz[FC_BIN_WORDS];
    int bw_nz_ok;
    double *bin_c;           /* [FC_BINS]: each bin's centre ratio (a table) */
    /* shape(k) memo, by ring slot: valid while tag == 2 k + the shape
     * pick (1 week, 0 day, from err_week < err_day) it was computed with. It holds only shapes whose inputs are complete buckets still in
     * memory, which do not change until they leave the ring (shape()
     * checks that) or a gap resets the ring (which clears the tags). */
    double *shape_v;
    int64_t *shape_tag;      /* 2 k + pick */
    /* ver: bumped by every change of what a forecast from now reads (the
     * buckets, the current demand, the shape errors); now_memo: the last
     * fc_now (level, trend, ratio) with the ver and time it was made at */
    uint64_t ver;
    struct fc_now_memo *now_memo;
    fc_sample_t *bs;
    size_t bs_n, bs_cap, bs_pos;
    struct fc_pred { tide_time_t t; double base, q; int rule; } pred[FC_PRED_RING];
    size_t pred_n, pred_pos;
    double q;                /* burst multiplier in use (1 + margin) */
    double margin;           /* q - 1 */
    /* SLO feedback: decayed demanded and unserved requests, log of the
     * error-budget factor */
    double dem_d, miss_d, logk;
    /* the same over the SLO's compliance period (slo_period_s): demanded,
     * unserved requests and seconds */
    double dem_p, miss_p, dur_p;
    double dem_new, miss_new; /* since the last feedback */
    tide_time_t fb_at;
    int fb_on;
    int samples;             /* burst samples seen */
    /* sizing ensemble (ensemble.c): every rule's proposal per tick, and its
     * counterfactual cost and misses against the demand seen (decayed) */
    struct fc_ens_prop { tide_time_t t; double dem; double need[ENS_RULES]; } ens_prop[ENS_RING];
    size_t ens_n, ens_pos;
    double ens_cost[ENS_RULES], ens_miss[ENS_RULES];
    /* each rule's counterfactual engine (ensemble.c): capacity held (ready +
     * warming, rps; -1: not started); the rest in ens_cf[ENS_RULES] (on the
     * heap: a forecast_t inside service_t must keep the service's fields
     * below the 64 KiB a snapshot field table reaches) */
    double ens_last[ENS_RULES];
    struct fc_ens_cf {
        double rdy;             /* of the capacity held, ready */
        double claim;           /* claimed by a reclaim whose GPUs are not free yet */
        tide_time_t claim_t;    /* since */
        double warm[ENS_WARM];  /* started in each of the last ENS_WARM ticks (less
                                   what its scale-down stopped while warming) */
        tide_time_t warm_t[ENS_WARM]; /* those ticks (-1: none) */
        int warm_pos;           /* slot of the newest */
    } *ens_cf;
    double ens_dem, ens_dur;  /* decayed requests and seconds scored */
    double ens_durp;          /* seconds scored, decayed as the misses are */
    tide_time_t ens_at;       /* last scored (-1: never) */
} forecast_t;

/* A lazily integrated GPU counter: acc GPU-seconds up to t, n GPUs since. */
typedef struct lc {
    int n;
    tide_time_t t;
    double acc;
} lc_t;
void tide__lc_add(lc_t *c, tide_time_t now, int delta);
/* Its GPU-seconds at now (inline: the usage sampler reads every cell). */
static inline double tide__lc_value(const lc_t *c, tide_time_t now)
{
    return c->acc + (now > c->t ? (double)c->n * (double)(now - c->t) : 0.0);
}

/* Sample list (all values, for reports) with a P99 over the most recent
 * SAMPLE_WINDOW values, recomputed every few new samples. */
#define SAMPLE_WINDOW 1024
typedef struct samples {
    double *v;
    size_t n, cap;
    double win[SAMPLE_WINDOW];
    size_t win_n, win_pos;
    size_t fresh;     /* samples since the cached quantile */
    double q99;
} samples_t;

/* k-th smallest of v[0..n) (0-based), reordering v in place. */
double tide_select(double *v, size_t n, size_t k);

#define HOLD_RING 256
/* Recent forecast targets (time, replicas) over the scale-down hold. */
typedef struct hold {
    tide_time_t t[HOLD_RING];
    int v[HOLD_RING];
    int first, n;
} hold_t;
#define LATE_RING 64
#define LATE_MIN 3
#define LATE_CAP 3600
typedef struct service {
    tide_service_spec_t spec;  /* name owned */
    forecast_t fc;
    double demand;             /* observed rps now */
    int ready, warming;        /* replica counts */
    tide_time_t down_since;    /* need below capacity since (-1: not) */
    int hold_max;              /* highest need seen since down_since */
    hold_t hold;               /* forecast targets over the hold (SCALE_FORECAST) */
    int react;                 /* replicas added for demand above the forecast */
    tide_time_t react_at;      /* when (-1: never) */
    samples_t warm;            /* measured warm-up times */
    struct hpa_rec { tide_time_t t; int n; } *hpa; /* `k8s`: recommendations in the
                                  stabilisation window, values decreasing */
    size_t hpa_n, hpa_cap;
    /* the oracle's replica levels: level k+1 went off at orc_off[k]
     * (ORC_NEVER: never on), and the need at the last accounting */
    tide_time_t *orc_off;
    size_t orc_off_cap;
    int orc_need;
    /* memos, zero at the start (right as they are: no demand, no need):
     * the need (replicas) at demand acct_dem (acct.c), and the power model
     * its replicas are accounted at (power.c, NULL: not looked up yet) */
    double acct_dem;
    int acct_need;
    const tide_power_model_t *pw_model;
    double slo_target;         /* spec's, or the config default */
    /* learned lead: lateness of capacity after a demand rise */
    tide_time_t short_since;   /* demand above ready capacity since (-1: not) */
    int short_ready;           /* ready replicas when the shortfall began */
    double late[LATE_RING];    /* recent lateness samples (s) */
    int late_n, late_pos;
    tide_time_t late_extra;    /* their P95 (0 with fewer than LATE_MIN samples) */
    lc_t *cells;               /* [state][tier][type] */
    /* warm-up rehearsals (infer.c) */
    int rh_want;               /* asked, not yet placed */
    int32_t rh_rep;            /* the running one, -1 none */
    int rh_done, rh_slow, rh_failed;
    double rh_last, rh_allowed;
    tide_time_t rh_at;
    int surge;                 /* replicas held above the sizing (TIDE_EV_SURGE) */
    int target;                /* the sizing's `up` at the last pass (its need) */
    int claimed;               /* replicas claimed for it in domains (svcidx.c) */
    int32_t *warm_ids;         /* its serving replicas made warming, oldest first;
                                  some may have left warming (svcidx.c) */
    size_t n_warm_ids, cap_warm_ids;
    int32_t *live_ids;         /* its replicas not stopped (and some stopped since),
                                  ascending, while live_ok (infer.c, live_list) */
    size_t n_live_ids, cap_live_ids;
    int live_ok;               /* 0: live_ids to build from the replicas (a new
                                  or restored engine) */
    int *spread;               /* placed replicas per rack, then per power domain
                                  (spread.c; derived from the replicas) */
} service_t;

typedef struct team {
    char *name;
    /* gpu_s: GPU-seconds held up to gpu_s_at; gpus_now held since then (it
     * changes only after tide__team_usage_update, which brings gpu_s up to
     * now: whole numbers, so the sum is the per-step sum to the bit) */
    double gpu_s, lost_gpu_s;
    tide_time_t gpu_s_at;
    int preemptions, jobs;
    int gpus_now;
    double queue_started_s;  /* sum of first_start - submitted of started jobs */
    int waiting;             /* jobs never started */
    double waiting_submit_sum; /* sum of their submission times */
    /* governance */
    double weight;
    int *quota;              /* per GPU type, -1 = none */
    int has_quota;
    int *used;               /* GPUs held now, per type */
    int borrow_limit, lend_cap;
    double dusage;           /* decayed GPU-seconds as of dusage_at */
    tide_time_t dusage_at;
    lc_t *cells;             /* [class][state][tier][type] */
} team_t;

struct tide_policy;
struct lease_key;

/* A job in the oracle's fluid schedule: done when the virtual clock reaches
 * vf; of its gpus, `useful` GPUs' worth train (the rest is its periodic
 * checkpoints). */
typedef struct oracle_job {
    double vf;
    int gpus;
    double useful;
} oracle_job_t;
#define ORC_NEVER INT64_MIN

/* A queued job as the scheduling pass scans it (e->qk): its queue order
 * key (sub = submitted, then h), what the pass reads of it, and its shape's
 * index in e->qshapes. */
typedef struct qkey {
    int64_t sub;
    int32_t h, gang, dp_min, team;
    uint32_t types;
    int32_t shape;
} qkey_t;

/* A shape of queued jobs: what the pass's skip tests read (gang, dp_min,
 * types). Interned as jobs are queued, never removed. */
typedef struct qshape {
    int32_t gang, dp_min;
    uint32_t types;
} qshape_t;

/* One team's queued jobs of one priority and one shape, in queue order (the
 * order of e->q[p] restricted to them). */
typedef struct tq_ent {
    int64_t sub; /* submitted, then h: the queue order */
    int32_t h;
} tq_ent_t;

typedef struct tqueue {
    tq_ent_t *v;
    size_t n, cap;
} tqueue_t;

/* The queued jobs of one priority and one shape, by team (team[t]; cap_team
 * teams), n in all; at: its place in the priority's list of shapes with
 * queued jobs (e->qs_live), -1 when n is 0. The fair-share pass reads a
 * team's candidates from its shapes' sub-queues, merged in queue order, so
 * it never orders the whole queue, and passes over every job of a shape
 * that cannot start at once. */
typedef struct tq_shape {
    tqueue_t *team;
    size_t cap_team, n;
    int32_t at;
    tide_bitset_t teams; /* the teams whose sub-queue is not empty */
} tq_shape_t;

/* A reservation for the head job of a priority (EASY backfill). */
enum { PLAN_CHANS = 4 }; /* plan memo keys kept at once (reclaim.c) */

typedef struct reservation {
    tide_time_t shadow;   /* when the head job can start */
    int *avail;           /* free GPUs per domain at shadow time */
    int *res;             /* GPUs reserved for the head per domain */
    int *nz;              /* [n_doms + 1]: the domains where avail or res may be
                           * non-zero (0 everywhere else), so that the next
                           * computation clears those, not every domain */
    int n_nz;
} reservation_t;

struct tide_engine {
    tide_cluster_t *cluster;
    tide_config_t cfg;
    const struct tide_policy *pol;
    int laid_out;

    /* topology */
    node_t *nodes;
    int n_nodes;
    domain_t *doms;
    int n_doms;
    int n_gpus;
    int max_dom_gpus;
    int n_racks, n_power;    /* failure domains (spread.c) */
    int32_t *gpu_dom;        /* per GPU: its domain */
    uint8_t *own_kind;       /* per GPU */
    int32_t *own_id;         /* per GPU */
    int zone_gpus[Z_COUNT];  /* up GPUs per zone */
    int zone_free[Z_COUNT];  /* free up GPUs per zone */
    int zone_total[Z_COUNT]; /* all GPUs per zone (up or down) */
    int zone_foreign[Z_COUNT]; /* GPUs foreign jobs hold per zone */
    int zone_cut[Z_COUNT];   /* GPUs held on unreachable nodes per zone (domain_t.cut_held) */

    /* workload */
    job_t **jobs;            /* stable pointers: specs are borrowed by drivers */
    size_t n_jobs, cap_jobs;
    job_t **job_blk;         /* the job_t themselves: handle h is in block
                                h / JOB_BLOCK (tide__job_new; no malloc per job) */
    size_t n_job_blk, cap_job_blk;
    tide_strpool_t job_ids;  /* the jobs' spec.id copies (their spec.team is their
                                team_t's name) */
    int32_t *idx_slots;      /* open-addressing hash of job ids -> handle */
    size_t idx_cap;
    service_t *svcs;
    int n_svcs;
    size_t cap_svcs;
    replica_t *reps;
    size_t n_reps, cap_reps;
    lease_t *leases;
    size_t n_leases, cap_leases;
    team_t *teams;
    int n_teams;
    size_t cap_teams;

    /* queue per priority, sorted by (submitted, handle) */
    int32_t *q[TIDE_NPRIO];
    size_t qn[TIDE_NPRIO], qcap[TIDE_NPRIO];
    /* qk[h]: what the scheduling pass reads of queued job h (h itself
     * included), packed so that its scan does not visit the jobs; set by
     * tide__queue_insert, rebuilt from q after a restore */
    struct qkey *qk;
    size_t qkcap;
    /* tq[shape * TIDE_NPRIO + p]: the queued jobs of priority p and that
     * shape (e->qshapes) by team, each in queue order; qs_live[p]: the
     * shapes with queued jobs of priority p. Kept by tide__queue_insert and
     * _remove, rebuilt after a restore, checked by tide_engine_check. */
    struct qshape *qshapes;
    size_t n_qshapes, cap_qshapes;
    struct tq_shape *tq;
    size_t cap_tq;
    int32_t *qs_live[TIDE_NPRIO];
    size_t n_qs_live[TIDE_NPRIO], cap_qs_live[TIDE_NPRIO];
    /* per priority: queued jobs per team (q_team_n[p][t], cap_q_team_n[p]
     * teams) and the teams with any (q_teams[p]) */
    int32_t *q_team_n[TIDE_NPRIO];
    size_t cap_q_team_n[TIDE_NPRIO];
    tide_bitset_t q_teams[TIDE_NPRIO];
    /* the fair-share team order of the last pass (fs_n teams) and its
     * scratch: the next pass sorts from it (nearly sorted already) */
    int *fs_order, *fs_rank;
    double *fs_score;
    int fs_n;
    size_t cap_fs;
    int queue_gpus;
    int32_t *running;
    size_t n_running, cap_running;
    tide_bitset_t grow_slots; /* slots of e->running whose job is elastic (dp_min <
                                 dp_max): the only ones that may grow (runidx.c) */
    int32_t *by_end;         /* running jobs sorted by (exp_end, handle) */
    size_t n_by_end, cap_by_end;
    tide_time_t *by_end_t;   /* by_end_t[i] == jobs[by_end[i]]->exp_end: the search
                                keys next to each other (derived; rebuilt on restore) */
    size_t by_end_lo;        /* by_end and by_end_t start by_end_lo entries into their
                                allocations (cap_by_end entries each), so a removal
                                or insertion shifts the shorter side (jobs.c) */

    /* time */
    tide_time_t start, now;
    int started;
    tide_time_t next_tick;
    int sched_dirty;         /* resources or queue changed: run a training pass */
    int infer_dirty;         /* demand or replicas changed: run an inference pass */
    int hold_dirty;          /* a running job was held: notice it at the next step */

    /* accounting */
    int cnt[TIDE_C_COUNT][TIDE_S_COUNT][TIDE_T_COUNT]; /* GPUs now (idle derived) */
    /* cnt_nz: bit k set iff flat cell k of cnt is non-zero; kept by
     * cnt_add in acct.c (every write of cnt), rebuilt after a restore, so
     * that tide__acct_advance integrates only the cells that hold GPUs */
    uint64_t cnt_nz[ACCT_CELL_WORDS];
    tide_stats_t st;
    oracle_job_t *orc;       /* the oracle's unfinished jobs, a min-heap on vf (acct.c) */
    size_t orc_n, orc_cap;
    double orc_v;            /* its virtual clock: full-width seconds every job advanced */
    long orc_width;          /* sum of the widths (GPUs) of its unfinished jobs */
    double orc_useful;       /* the same, less their periodic checkpoints */
    double orc_debt;         /* warm-up GPU-seconds the fluid still owes */
    samples_t smp[TIDE_SAMPLE_COUNT];
    double declared_ckpt_max;
    int n_types;
    lc_t *foreign_cells;     /* GPUs foreign jobs hold: [tier][type] */
    int quotas_on;           /* some team has a quota */
    tide_time_t next_deadline; /* earliest lease / checkpoint deadline (cached) */
    tide_time_t grow_at;     /* earliest grow_after of a job that lost a rank (a wake) */
    int n_cut;               /* nodes unreachable now (node_t.cut) */
    int reserve_target;      /* Tier A GPUs the layout gave the reserve */
    int *reserve_type;       /* ... per GPU type */
    int reserve_short;       /* healthy reserve GPUs missing now */
    int reserve_dirty;       /* node changed or a drain for the reserve is pending */
    /* forecast inference GPUs per bucket from need_t0 (leases), set each tick */
    int *need_curve;
    int need_n;
    tide_time_t need_t0;
    int need_avail;          /* GPUs inference can use without lent ones */
    int *need_pmax;          /* [need_n] the highest of need_curve[0..i]
                                (tide__lease_need_pmax; derived, not stored) */
    size_t cap_need_pmax;
    int lent_run;            /* lent GPUs of running jobs not stopping (runidx.c) */
    tide_time_t ret_lead;    /* return lead: reclaim lead - notice span */
    tide_time_t min_term;    /* shortest lease term (a notice can be answered) */
    double *need_vals;       /* scratch: one service's baseline curve */
    struct lease_key *lease_order; /* renewable leases in reclaim order, kept
                                      from one renewal pass to the next */
    size_t n_lease_order, cap_lease_order;
    size_t n_lease_dead;     /* keys in lease_order marked dropped (lease -1), not yet
                                compacted (lease.c; not in a snapshot, which has none) */
    int32_t *renew_new;      /* jobs whose lease may have become renewable or not, or
                                changed its reclaim-order key, since the last renewal
                                pass (tide__lease_note; each once) */
    size_t n_renew_new, cap_renew_new;
    uint8_t *renew_mark;     /* [handle] 1 while listed in renew_new (derived) */
    size_t cap_renew_mark;
    int renew_rescan;        /* look at every running job instead (after a restore) */
    /* the renewal tail's block bounds (lease.c, LW_SHIFT): lw_min[b] is at
     * most the wake of every live key in lease_order's block b (keys
     * [64 b, 64 b + 64)), INT64_MIN when unknown; all unknown unless
     * lw_mt is e->min_term. Derived, not in a snapshot (a fresh engine's
     * lw_mt of 0 is no min_term). */
    tide_time_t *lw_min;
    size_t cap_lw;
    tide_time_t lw_mt;
    cap_empty_t cap_empty[CAP_EMPTY_SLOTS]; /* tide__capacity_empty memo */
    double *plan_cost;       /* [n_doms] reclaim_for: each domain's plan cost ... */
    uint8_t *plan_ok;        /* ... while still current */
    /* reclaim.c: graceful plans (tide__reclaim_plan_cost) kept from one pass
     * to the next. plan_clock only grows; dom_ver[d] takes its next value
     * at every change a plan of d reads (tide__dom_touch: d's free count
     * and GPU owners, the state, stop request or width of a job there); an
     * entry is current while computed after both that and its channel's
     * reset (the channel's key: lowest victim priority and GPUs needed). */
    uint64_t plan_clock;
    uint64_t *dom_ver;       /* [n_doms] */
    struct plan_chan {
        int on, min_prio, need;
        uint64_t reset, used;
        uint64_t *at;        /* [n_doms] plan_clock when computed */
        double *cost;        /* [n_doms] */
    } plan_ch[PLAN_CHANS];
    uint64_t *dom_free_bits;  /* domains by free count (tide__dom_free_mark) */
    size_t dom_words;         /* words per bitmap of dom_free_bits */
    struct deadline_ent *dl;  /* min-heap of every lease return / checkpoint
                                 deadline set (stale entries skipped lazily) */
    size_t n_dl, cap_dl;
    struct lease_key *lease_merge; /* scratch of the same size */
    size_t cap_lease_merge;

    /* scratch */
    int *scratch_a, *scratch_b, *scratch_c;
    struct victim *vict_cand, *vict_v, *vict_best; /* max_dom_gpus each */
    int *vict_used;
    reservation_t resv[TIDE_NPRIO];
    int n_resv;
    /* resv_memo[k]: the inputs of the last reservation computed into
     * resv[k] (head, train zones, place_ver); a pass asking the same again
     * with resv[0..k) unchanged reuses resv[k] (sched.c make_reservation).
     * A recompute into slot k drops the memos after k. */
    struct resv_memo {
        uint64_t ver;
        int32_t h;
        unsigned tz;
        int valid;
        tide_time_t shadow;
    } resv_memo[TIDE_NPRIO];
    /* A head whose reservation the pass has not computed yet (sched.c
     * resv_settle): computed when a later candidate first reads the
     * reservations or before the pass changes anything they read; dropped
     * unread when the pass ends. Only set inside tide__sched_pass. */
    struct resv_pending {
        int on;
        int32_t h;
        unsigned tz;
        uint64_t ver; /* place_ver when it was asked (debug check) */
    } resv_pend;
    /* jdom[h] for a running job h: (d << 8) | n when the first GPU of every
     * gang of h is in domain d and n = alloc.n < 256 (a reservation's walk
     * then adds n GPUs to d at once: its per-gang steps summed, a clamp at
     * the domain's size composing), else -1. Set at every change of a
     * running job's GPUs (tide__job_doms_note), rebuilt after a restore (not
     * stored); tide_engine_check compares it with the allocations. */
    int32_t *jdom;
    size_t jdomcap;
    /* Bumped by every change a reservation reads (tide__place_changed):
     * free counts, GPU owners, the end index, domain zones and claims. */
    uint64_t place_ver;
    int n_claimed[CLAIM_KINDS]; /* domains per claim kind (svcidx.c) */
    int memo_bad; /* a debug check found a memo differing from a recompute */
    tide_actions_t *out;     /* actions of the current step */

    /* power (power.c): power domain of every GPU, scratch per domain */
    int n_pdom;
    int power_on;            /* some power domain has a budget */
    int32_t *gpu_pdom;
    double *pw_w, *pw_b;     /* [n_pdom] watts planned, budgets */
    int *pw_n;               /* [n_pdom] scratch GPU counts */
    double pw_idle_mean, pw_train_mean; /* the models' mean idle / training draw */
    double pw_train_w;       /* running jobs' draw now (sum of their pw_w) */
    cap_tot_t *cap_tots;     /* per capped job (job_t.cap_tot), in order of first cost */
    size_t n_cap_tots, cap_cap_tots;
    int pw_capped;           /* their GPUs under a cap now */
};

/* ------------------------------------------------------------ policies */

enum { SCALE_FORECAST = 0, SCALE_REACTIVE, SCALE_FIXED, SCALE_HPA };
enum { RECLAIM_NONE = 0, RECLAIM_GRACEFUL, RECLAIM_KILL };

typedef struct tide_policy {
    const char *name;
    const char *summary;
    int (*layout)(tide_engine_t *e, tide_error_t *err);
    unsigned (*train_zones)(const tide_engine_t *e, tide_time_t now);
    unsigned inf_zones;
    unsigned reclaim_zones;    /* training here may be reclaimed for inference */
    unsigned lease_zones;      /* training here holds a lease */
    int scale_mode;
    int reclaim_mode;
    int use_lead;              /* forecast window includes checkpoint lead */
    int ensemble;              /* with cfg.sizing_ensemble: the sizing ensemble
                                  picks the rule (SCALE_FORECAST only) */
    int obs_floor;             /* with cfg.obs_window_s: the observed floor under
                                  the forecast baseline (SCALE_FORECAST only) */
    int renew_leases;          /* renew leases nobody needs before they expire */
    /* latest return for a lease granted now */
    tide_time_t (*lease_deadline)(const tide_engine_t *e, tide_time_t now);
    /* latest return for a lease renewed now, reclaimed after `gpus_before`
     * lent GPUs (NULL: lease_deadline). Called with non-decreasing
     * gpus_before in one pass, sharing *cursor (0 at the start of the pass),
     * so that a pass costs O(leases + curve), not O(leases x curve) */
    tide_time_t (*lease_renew_deadline)(const tide_engine_t *e, tide_time_t now, int gpus_before,
                                        int *cursor);
    /* policy-specific periodic work and wake-ups (may be NULL) */
    void (*tick)(tide_engine_t *e, tide_time_t now);
    tide_time_t (*wake)(const tide_engine_t *e, tide_time_t now);
} tide_policy_t;

const tide_policy_t *tide_policy_find(const char *name);
extern const tide_policy_t tide_policy_isolated, tide_policy_static, tide_policy_preempt,
    tide_policy_k8s, tide_policy_elastic, tide_policy_timeshare;

/* layout helpers (policy.c) */
int tide__layout_split(tide_engine_t *e, int inf_gpus, int inf_zone, int rest_zone, tide_error_t *err);
int tide__layout_peak_gpus(const tide_engine_t *e); /* GPUs for every service's fixed/peak replicas */
tide_time_t tide__lease_deadline_default(const tide_engine_t *e, tide_time_t now);
/* Forecast-aware: the earlier of now + lease_max and the next forecast rise
 * that needs these GPUs minus the return lead (lease.c). */
tide_time_t tide__lease_deadline_forecast(const tide_engine_t *e, tide_time_t now);
/* Job h's lease may have become renewable (a lease granted, a notice
 * withdrawn) or stopped being so (returned, noticed, the job stopped), or its
 * reclaim-order key changed (width): the next renewal pass looks at it; it
 * keeps every other listed lease's place and key (lease.c). */
void tide__lease_note(tide_engine_t *e, int32_t h);
/* A running renewable job the renewal pass would miss, or a listed lease
 * that changed without a note, or -1. O(running + listed). */
int32_t tide__renew_check(const tide_engine_t *e);
/* Record that job h has a deadline (lease latest return or checkpoint) at t. */
void tide__deadline_push(tide_engine_t *e, tide_time_t t, int32_t h);
/* A running job with a lease return or checkpoint deadline that has no heap
 * entry (the heap is out of step), or -1. O(heap + jobs): for checks. */
int32_t tide__deadline_check(const tide_engine_t *e);
tide_time_t tide__lease_deadline_forecast_at(const tide_engine_t *e, tide_time_t now, int gpus_before,
                                             int *cursor);
int tide__in_night(const tide_engine_t *e, tide_time_t t);
tide_time_t tide__night_next_edge(const tide_engine_t *e, tide_time_t t);

/* ------------------------------------------------------------ modules */

/* place.c */
void tide__dom_take(tide_engine_t *e, int gpu, int kind, int32_t id);
void tide__dom_release(tide_engine_t *e, int gpu);
/* Release gpus[0..n), taken since place_ver was v0 by a placement not kept
 * and nothing else changed since: back to the free state they were in, so
 * place_ver goes back to v0 (unless a release went elsewhere: to a foreign
 * job, or a cut node). */
void tide__place_undo(tide_engine_t *e, const int32_t *gpus, int n, uint64_t v0);
/* Foreign jobs (TIDE_EV_FOREIGN): set node n's reported count and mark that
 * many of its free GPUs OWN_FOREIGN (more as tide's GPUs there are released,
 * tide__dom_release); tide__foreign_drop unmarks them all (node going down). */
void tide__foreign_set(tide_engine_t *e, int n, int want);
void tide__foreign_drop(tide_engine_t *e, int n);
int tide__place_gangs(tide_engine_t *e, int gang, int want, int min, uint32_t types, unsigned zones,
                int kind, int32_t owner, alloc_t *out, int prefer_zone_order);
/* May owner (kind OWN_JOB / OWN_REPLICA) use domain d: an accepted GPU
 * type, an allowed zone, and unclaimed or claimed for it? (inline: every
 * placement and plan asks it per domain) */
static inline int tide__domain_ok(const tide_engine_t *e, const domain_t *d, uint32_t types,
                                  unsigned zones, int kind, int32_t owner)
{
    (void)e;
    if (types && !(types & (1u << d->type)))
        return 0;
    if (!(zones & ZBIT(d->zone)))
        return 0;
    if (d->claim_kind != CLAIM_NONE) {
        if (kind == OWN_JOB && d->claim_kind == CLAIM_JOB && d->claim_id == owner)
            return 1;
        if (kind == OWN_REPLICA && d->claim_kind == CLAIM_SERVICE && d->claim_id == owner)
            return 1;
        return 0;
    }
    return 1;
}
int tide__capacity_for(const tide_engine_t *e, const int *avail, int gang, uint32_t types, unsigned zones,
                 int kind, int32_t owner);
/* Gangs of `gang` GPUs that domains doms[0..n_doms) hold when empty, among
 * the accepted types (0 = any): gangs inside one domain when any domain is
 * large enough (as tide__capacity_for places them), else whole domains of
 * one size dividing the gang. The one rule behind tide__capacity_empty and
 * tide_job_spec_fits. */
int tide__gangs_on_empty(const domain_t *doms, int n_doms, int gang, uint32_t types);
int tide__capacity_empty(tide_engine_t *e, int gang, uint32_t types); /* on an empty cluster (memoised) */
void tide__alloc_free(alloc_t *a);
void tide__alloc_push(alloc_t *a, int32_t gpu);

/* spread.c: failure domains */
/* Count replica r (placed, not a rehearsal) into its service's rack and power
 * domain counts (delta +1 / -1). */
void tide__spread_add(tide_engine_t *e, const replica_t *r, int delta);
/* infer.c: -1 if every service's live_ids (when live_ok) lists each of its
 * replicas not stopped, ascending, and only replicas of the service; else
 * the first service that differs. */
int tide__live_check(const tide_engine_t *e);
/* Recount every service's counts from the replicas (after a restore). */
void tide__spread_rebuild(tide_engine_t *e);
void tide__spread_alloc(tide_engine_t *e, service_t *s);
/* Placement penalty of domain d for one more replica of service si: how far
 * its rack's and power domain's counts would exceed the least loaded
 * candidate's (min_rack, min_power) by more than spread_max_skew. */
long tide__spread_excess(const tide_engine_t *e, int si, const domain_t *d, int min_rack,
                         int min_power);
/* Domains in the order a spread layout fills a zone: round robin over power
 * domains and racks (into order[0..n_doms)). */
void tide__spread_order(const tide_engine_t *e, int *order);
/* The survival invariant (cfg.survive_share). 0 or -1 with err. */
int tide__spread_check(const tide_engine_t *e, tide_error_t *err);
/* Would losing service si's most loaded rack or power domain leave less
 * than survive_share of its floor (it has its floor, none warming)? Then the
 * inference pass adds a replica (placed on the least loaded one); scale-down
 * later takes one from the most loaded. */
int tide__spread_short(const tide_engine_t *e, int si);
/* Load of replica r's rack and power domain (for scale-down: most loaded first). */
int tide__spread_load(const tide_engine_t *e, const replica_t *r);

/* forecast.c */
void tide__fc_init(forecast_t *f, tide_time_t bucket_s, int days, tide_time_t tick_s, double margin0);
void tide__fc_free(forecast_t *f);
/* Demand rps from now on (times never go back). */
void tide__fc_observe(forecast_t *f, tide_time_t now, double rps);
void tide__fc_advance(forecast_t *f, tide_time_t now);
/* Baseline (no bursts) peak over [from, to], seen from now. */
double tide__fc_peak(const forecast_t *f, tide_time_t now, tide_time_t from, tide_time_t to);
/* Highest 5-minute (bucket) mean demand observed over [now - window, now];
 * 0 when nothing was observed there. */
double tide__fc_recent_max(const forecast_t *f, tide_time_t now, tide_time_t window);
/* Demand to size for over [now, now + horizon]: baseline peak (at least the
 * highest bucket mean of the last `obs_window`, when > 0) x burst multiplier,
 * capped at the highest demand seen (unless the baseline is higher). */
double tide__fc_need(forecast_t *f, tide_time_t now, tide_time_t horizon, tide_time_t obs_window);
/* The forecast memory holds a whole day. */
int tide__fc_day_seen(const forecast_t *f);
/* Does a forecast memo (fc_now, the shapes, the burst bins), were it reused
 * now, differ from a recomputation? (debug check) */
int tide__fc_memo_bad(const forecast_t *f);
/* Forget every memo (fc_now, the shapes, the burst bins' bitmap): the next
 * forecast computes from scratch (tests compare the two). */
void tide__fc_memo_reset(forecast_t *f);
/* The error budget in use: 1 - slo_target scaled by the SLO feedback. */
double tide__fc_budget(const forecast_t *f, double slo_target);
/* The miss rate to aim at (fraction of requests): a share of 1 - slo_target,
 * less what the SLO period overspent (measured misses), to pay back within a
 * day. Not scaled by the forecast's own feedback factor. */
double tide__fc_aim(const forecast_t *f, double slo_target, const tide_config_t *cfg);
/* Sizing ensemble (ensemble.c). Need (rps) of rule `rule` at now for a
 * decision window `horizon` (rule 0 is tide__fc_need). */
double tide__ens_need(forecast_t *f, int rule, tide_time_t now, tide_time_t horizon);
/* Windows of the counterfactual engine each rule is scored on: the decision
 * window (lead: the engine keeps a reaction to observed demand that long),
 * how long a started replica warms up (delay: the P99 warm-up), the
 * scale-down hold; the capacity granule (unit: one replica's rps, 0:
 * continuous) with its floor and cap (min/max replicas x unit; cap 0:
 * none), as the engine rounds; the memory of the misses (misses are rare:
 * they are judged over the SLO's compliance period, as the budget is spent;
 * costs over a day); and how capacity can be started now: `free` (rps)
 * on free GPUs at once, the rest by a reclaim whose GPUs come free `wait`
 * later (the victims' checkpoint; 0: at once, as when victims are killed)
 * and only if the need still stands then (the engine drops a claim the
 * need no longer asks for). */
typedef struct tide_ens_win {
    tide_time_t lead, delay, hold;
    double unit, lo, hi;
    tide_time_t period; /* half-life of the misses (the SLO period); 0: a day */
    double slo;         /* the service's slo_target (prices a miss) */
    tide_time_t wait;   /* reclaim: notice to GPUs free; 0: at once */
    double free;        /* capacity (rps) free GPUs take now */
} tide_ens_win_t;
/* The counterfactual's windows for service si as the engine runs it now
 * (infer.c): lead = the decision window given. */
void tide__ens_window(tide_engine_t *e, int si, tide_time_t lead, tide_ens_win_t *w);
/* Score every rule's counterfactual engine over the interval since the last
 * call (the demand then against the capacity its engine had ready), step
 * each engine with this tick's proposal (start to its need and the demand
 * seen, on free GPUs or by a reclaim; warm up; scale down after the hold),
 * record the proposals, pick the rule (tide__ens_choose, with `budget` the
 * SLO's aim: the engine passes tide__fc_aim). Past only. */
void tide__ens_learn(forecast_t *f, tide_time_t now, const tide_ens_win_t *w, double budget);
/* The rule the scores pick: the lowest cost rate + lambda x the rate of
 * counterfactual misses above `aim` (a miss rate) of the requests, lambda =
 * 1 / (1 - slo_target); the rule in use unless another scores ENS_SWITCH of
 * it or less; the forecast (0) until a day was scored. Reads only f's scores. */
int tide__ens_choose(const forecast_t *f, double aim, double slo_target);
/* The warm-up lead of a service: P99 warm-up + lead_extra_s + measured
 * lateness + one tick (the decision window of policies without reclaim). */
tide_time_t tide__warmup_lead(tide_engine_t *e, int si);
/* The policy sizes with the ensemble (cfg.sizing_ensemble and a policy
 * that allows it). */
int tide__ensemble_on(const tide_engine_t *e);
/* Name of a rule, NULL out of range. */
const char *tide__ens_rule_name(int rule);
/* Baseline of n buckets from absolute bucket k0 into out[]. */
void tide__fc_curve(const forecast_t *f, tide_time_t now, int64_t k0, int n, double *out);
/* Once per tick: a burst sample (demand now over the capacity due now, see
 * tide__capacity_due, that the prediction made one horizon ago turned into,
 * per unit of multiplier),
 * record this tick's prediction, update the error budget and the multiplier. */
void tide__fc_learn(forecast_t *f, tide_time_t now, tide_time_t horizon, double slo_target,
                    double capacity, const tide_config_t *cfg);
/* Requests demanded and served during dt (SLO feedback). */
void tide__fc_served(forecast_t *f, double dt, double demanded, double served);

/* acct.c */
void tide__acct_advance(tide_engine_t *e, tide_time_t now);
/* Rebuild cnt_nz from cnt (after a restore). */
void tide__acct_cnt_rebuild(tide_engine_t *e);
/* 1 if cnt_nz disagrees with cnt (tide_engine_check), else 0. */
int tide__acct_cnt_bad(const tide_engine_t *e);
void tide__acct_job_set(tide_engine_t *e, job_t *j, int on);
/* tide__acct_job_set(e, j, 0) then (e, j, 1) for a job whose GPUs, leased
 * count, team, class and the policy's lease zones stay the same between
 * the two calls (a change of phase, progress or cap): the same sums to the
 * bit, with one walk of its domains. */
void tide__acct_job_pause(tide_engine_t *e, job_t *j);
void tide__acct_job_resume(tide_engine_t *e, job_t *j);
void tide__acct_rep_set(tide_engine_t *e, replica_t *r, int on);
void tide__acct_lost(tide_engine_t *e, job_t *j, double lost_progress);
/* delta GPUs of domain d held by foreign jobs (class none, state foreign;
 * the tier of d's zone, d's GPU type). */
void tide__acct_foreign(tide_engine_t *e, const domain_t *d, int delta);
void tide__oracle_submit(tide_engine_t *e, const tide_job_spec_t *sp);
void tide__samples_add(samples_t *s, double v);
double tide__samples_q99(samples_t *s);

/* jobs.c: lifecycle */
double tide__job_progress_now(const job_t *j, tide_time_t now);
tide_time_t tide__job_expected_end(const job_t *j, tide_time_t now);
void tide__job_start(tide_engine_t *e, int32_t h, alloc_t *a, int width);
void tide__job_stop(tide_engine_t *e, int32_t h, int reason, int requeue);
void tide__job_shrink(tide_engine_t *e, int32_t h, int domain, int gangs);
/* Job h lost a rank on node `node`: an elastic job running above dp_min
 * drops the gang holding GPUs there and goes on (RESIZE, reason failure; it
 * grows back from the next tick on). Returns 1, or 0 when the job cannot
 * shrink or the node holds none of its gangs (-1: unknown) (the caller stops
 * it: it restarts from its committed checkpoint). */
int tide__job_rank_lost(tide_engine_t *e, int32_t h, int node);
/* Does job j hold a GPU on an unreachable node (it cannot hear of a renewal)? */
int tide__job_cut(const tide_engine_t *e, const job_t *j);
void tide__job_grow(tide_engine_t *e, int32_t h, alloc_t *extra, int gangs);
void tide__job_notice(tide_engine_t *e, int32_t h, int reason, int stop);
/* Notice the running jobs held since the last step (tide_engine_job_hold). */
void tide__job_hold_pass(tide_engine_t *e);
void tide__queue_insert(tide_engine_t *e, int32_t h);
qkey_t tide__qkey_of(const tide_engine_t *e, int32_t h);
void tide__queue_keys_rebuild(tide_engine_t *e);
/* A queued job whose e->qk entry disagrees with it, or whose team
 * sub-queue (e->tq) does not hold it in queue order, or -1 (debug check). */
int32_t tide__queue_keys_check(const tide_engine_t *e);
/* Team t's queued jobs of priority p and shape s (NULL: none ever). */
static inline const tqueue_t *tide__tq(const tide_engine_t *e, int32_t s, int p, int t)
{
    const tq_shape_t *x = &e->tq[(size_t)s * TIDE_NPRIO + (size_t)p];
    return (size_t)t < x->cap_team ? &x->team[t] : NULL;
}
/* First index of sub-queue l whose entry is not below (sub, h) in queue
 * order (submit time, then handle). */
static inline size_t tide__tq_pos(const tqueue_t *l, int64_t sub, int32_t h)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const tq_ent_t *x = &l->v[mid];
        if (x->sub < sub || (x->sub == sub && x->h < h))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
void tide__end_index_set(tide_engine_t *e, int32_t h, tide_time_t end); /* move h to a new key */
/* runidx.c: e->grow_slots follows e->running. Slot i changed job (or i >=
 * n_running was vacated): set its bit from the job there. */
void tide__grow_slot_set(tide_engine_t *e, size_t i);
/* Rebuild e->grow_slots from e->running (after a restore). */
void tide__grow_slots_rebuild(tide_engine_t *e);
/* A slot whose bit disagrees with its job, or -1. O(running): for checks. */
long tide__grow_slots_check(const tide_engine_t *e);
/* The end index against a scan: -2 if it is not exactly the running jobs
 * sorted by (exp_end, handle) with matching keys, else -1 (fine). */
int tide__end_index_check(const tide_engine_t *e);
/* sched.c: e->jdom (see there). _note after every change of running job
 * h's GPUs (start, shrink, grow); _rebuild for every running job after a
 * restore; _check returns a running job whose entry disagrees, or -1. */
void tide__job_doms_note(tide_engine_t *e, int32_t h);
void tide__job_doms_rebuild(tide_engine_t *e);
int32_t tide__job_doms_check(const tide_engine_t *e);
/* Rebuild e->by_end_t from e->by_end and the jobs' exp_end (after a restore). */
void tide__end_index_rekey(tide_engine_t *e);
/* runidx.c: e->lent_run, the lent GPUs (n_leased) of the running jobs less
 * those stopping under a notice (their GPUs come back anyway): what the
 * lease plan takes off the GPUs inference can use. Each job's share is in
 * j->lent_counted; tide__lent_sync after any change of a job's n_leased,
 * state, stop_pending or running slot brings both up to date. */
void tide__lent_sync(tide_engine_t *e, job_t *j);
/* Recount e->lent_run and every share from the jobs (after a restore). */
void tide__lent_rebuild(tide_engine_t *e);
/* The sum by a scan of the running jobs. O(running): for checks. */
int tide__lent_scan(const tide_engine_t *e);
void tide__queue_remove(tide_engine_t *e, int32_t h);
int tide__team_intern(tide_engine_t *e, const char *name);
/* A zeroed job_t for handle h = e->n_jobs (the next one), from e->job_blk;
 * freed with the engine. */
#define JOB_BLOCK 1024
job_t *tide__job_new(tide_engine_t *e, size_t h);
/* Does j own its spec.team string (a restore that has not yet pointed it
 * at its team's name), rather than borrow e->teams[j->team].name? */
int tide__job_team_owned(const tide_engine_t *e, const job_t *j);
double tide__team_usage(const tide_engine_t *e, const team_t *t, tide_time_t now);
void tide__team_usage_update(tide_engine_t *e, team_t *t);
/* Team t's GPU-seconds held up to e->now (gpu_s integrated from gpu_s_at). */
static inline double tide__team_gpu_s(const tide_engine_t *e, const team_t *t)
{
    return t->gpu_s + (double)t->gpus_now * (double)(e->now - t->gpu_s_at);
}
/* svcidx.c: per-service claim totals, domains per claim kind, warming
 * replicas per service. Every write of a domain's claim goes through
 * tide__dom_claim (tide__dom_unclaim: kind CLAIM_NONE, id and n kept). */
void tide__dom_claim(tide_engine_t *e, domain_t *d, int kind, int32_t id, int n);
void tide__dom_unclaim(tide_engine_t *e, domain_t *d);
/* A serving replica was made warming: list it under its service. */
void tide__warm_note(tide_engine_t *e, int32_t rep);
/* Warming serving replicas of si started at least w before now. */
int tide__warm_due(tide_engine_t *e, int si, tide_time_t now, tide_time_t w);
/* Recomputes the claim totals and warming lists from the domains and
 * replicas (after a snapshot restore). */
void tide__svc_index_rebuild(tide_engine_t *e);
/* -1 if the indexes agree with a scan; else a service index, or -2 (kinds). */
int tide__svc_index_check(const tide_engine_t *e);
/* The domain of a GPU (a table lookup). */
static inline int dom_of_gpu(const tide_engine_t *e, int gpu) { return e->gpu_dom[gpu]; }

/* e->dom_free_bits: one bitmap of e->dom_words words per free count
 * 1..max_dom_gpus; domain d is in the bitmap of its free count (none at 0).
 * tide__dom_free_mark after every change of d's free count keeps it so. */
static inline uint64_t *tide__free_map(const tide_engine_t *e, int f)
{
    return e->dom_free_bits + (size_t)f * e->dom_words;
}

/* Something a reservation reads changed (see place_ver). */
static inline void tide__place_changed(tide_engine_t *e) { e->place_ver++; }

static inline void tide__dom_touch(tide_engine_t *e, int d);
static inline void tide__dom_free_mark(tide_engine_t *e, int d)
{
    domain_t *dm = &e->doms[d];
    tide__place_changed(e);
    tide__dom_touch(e, d); /* its free count changed (reclaim plans read it) */
    int f = dm->free > 0 ? dm->free : 0;
    if (f == dm->free_slot)
        return;
    uint64_t bit = (uint64_t)1 << (d & 63);
    if (dm->free_slot > 0)
        tide__free_map(e, dm->free_slot)[d >> 6] &= ~bit;
    if (f > 0)
        tide__free_map(e, f)[d >> 6] |= bit;
    dm->free_slot = f;
}

/* The first domain >= d with exactly f free GPUs (f >= 1), or -1: iterating
 * with it visits them in index order, in time proportional to them (and
 * n_doms / 64), not to the cluster. */
static inline int tide__dom_next_free(const tide_engine_t *e, int f, int d)
{
    if (d >= e->n_doms || f < 1 || f > e->max_dom_gpus)
        return -1;
    const uint64_t *m = tide__free_map(e, f);
    int w = d >> 6;
    uint64_t x = m[w] & (~(uint64_t)0 << (d & 63));
    int nw = (e->n_doms + 63) >> 6;
    while (!x) {
        if (++w >= nw)
            return -1;
        x = m[w];
    }
    return (w << 6) + __builtin_ctzll(x);
}

/* Sizing saturates at this many GPUs per service (far beyond any cluster),
 * so that replica counts times GPUs per replica, summed over services, stay
 * inside an int whatever demand was pushed. */
#define TIDE__SIZING_MAX_GPUS (1 << 24)

/* ceil(x) as an int clamped to [lo, hi]; NaN gives lo. Every conversion
 * of a computed count (replicas from a demand) goes through it: (int) of a
 * double out of range is undefined. */
static inline int tide__ceil_sat(double x, int lo, int hi)
{
    if (x != x)
        return lo;
    if (x > -1e15 && x < 1e15) {
        /* the same integer without ceil's bit work: x truncated is exact
         * here, and one more when it was below x */
        long long t = (long long)x;
        t += (double)t < x;
        return t <= lo ? lo : t >= hi ? hi : (int)t;
    }
    double c = ceil(x);
    if (c <= (double)lo)
        return lo;
    if (c >= (double)hi)
        return hi;
    return (int)c;
}

/* Replicas of gpus_per_replica GPUs that stay under TIDE__SIZING_MAX_GPUS. */
static inline int tide__replicas_cap(int gpus_per_replica)
{
    return gpus_per_replica > 0 ? TIDE__SIZING_MAX_GPUS / gpus_per_replica : TIDE__SIZING_MAX_GPUS;
}

/* actions */
tide_action_t *tide__act_push(tide_engine_t *e, int kind, int reason);
void tide__act_gpus(tide_engine_t *e, tide_action_t *a, const alloc_t *al);

/* lease.c */
void tide__lease_grant(tide_engine_t *e, int32_t h);
void tide__lease_update(tide_engine_t *e, int32_t h);
void tide__lease_return(tide_engine_t *e, int32_t h, int reason, int late);
void tide__lease_tick(tide_engine_t *e, tide_time_t now);
tide_time_t tide__reclaim_lead(tide_engine_t *e, int service);
void tide__lease_need_pmax(tide_engine_t *e);          /* sets need_pmax from the curve */
int tide__lease_need_pmax_bad(const tide_engine_t *e);  /* need_pmax against the curve */
/* Per tick: the forecast need curve and the terms leases are granted for. */
void tide__lease_plan(tide_engine_t *e, tide_time_t now);

/* infer.c */
void tide__infer_pass(tide_engine_t *e, tide_time_t now);
/* Capacity (rps) that should be ready by now: ready replicas and those warming
 * for longer than the P99 warm-up (infer.c). */
double tide__capacity_due(tide_engine_t *e, int si, tide_time_t now);
/* Warm-up rehearsals (infer.c): place asked ones (infer pass), and a
 * rehearsal replica's report (ready: sample, then stop; failed: counted). */
void tide__rehearse_pass(tide_engine_t *e, tide_time_t now);
void tide__rehearse_report(tide_engine_t *e, int32_t id, int ready);
/* The warm-up term of the lead: w (P99 or declared) raised to the latest
 * rehearsal's warm-up. */
double tide__warmup_floor(const service_t *s, double w);

/* Window a sizing decision taken now must cover (reclaim lead or warm-up lead). */
tide_time_t tide__decision_window(tide_engine_t *e, int si);
/* Per tick: measure how late capacity came after demand rose above it. */
void tide__infer_observe(tide_engine_t *e, tide_time_t now);
/* Replicas a service is sized for from rps (baseline x burst multiplier). */
int tide__replicas_for(const service_t *s, double rps, double margin);
void tide__replica_stop(tide_engine_t *e, int32_t r, int reason);

/* reserve.c: Tier A follows healthy GPUs */
void tide__reserve_init(tide_engine_t *e);                  /* after the layout */
void tide__reserve_update(tide_engine_t *e, tide_time_t now); /* move, drain, give back */

/* reclaim.c */
typedef struct victim {
    int32_t job;
    int gpus;      /* GPUs it gives back on this domain */
    int shrink;    /* gangs to shrink (0 = stop the whole job) */
    double cost;
} victim_t;
/* Cheapest set of victims (those `ok` accepts) that frees `need` GPUs on
 * domain di. Returns the cost (0 when pending releases suffice, -1 when
 * impossible) and fills v[0..*nv). */
typedef int (*victim_ok_fn)(const tide_engine_t *e, const job_t *j, const void *ctx);
double tide__reclaim_plan_domain(tide_engine_t *e, int di, int need, int kill, victim_ok_fn ok,
                           const void *ctx, victim_t *v, int *nv);
int tide__victim_min_prio(const tide_engine_t *e, const job_t *j, const void *ctx); /* ctx: int* */
/* The memo channel of key (min_prio, need): found, or the least recently
 * used one reset to it. Valid until the next call with another key. */
struct plan_chan *tide__plan_chan(tide_engine_t *e, int min_prio, int need);
/* tide__reclaim_plan_domain(e, di, ch->need, 0, tide__victim_min_prio,
 * &ch->min_prio, ...)'s cost, memoised per domain until
 * tide__dom_touch(e, di) (the same bits as planning again: with
 * check_invariants every reuse is planned again, a difference sets
 * e->memo_bad, which tide_engine_check reports). */
double tide__reclaim_plan_cost(tide_engine_t *e, struct plan_chan *ch, int di);
/* Mark everything a plan of domain d reads as changed (see dom_ver). */
static inline void tide__dom_touch(tide_engine_t *e, int d) { e->dom_ver[d] = ++e->plan_clock; }
/* The domains of job j's GPUs touched (its state, stop request or width
 * changed), once per run of GPUs in one domain. */
void tide__dom_touch_job(tide_engine_t *e, const job_t *j);
/* Memo storage for n_doms domains (engine creation); tide__plan_memo_free. */
void tide__plan_memo_init(tide_engine_t *e);
void tide__plan_memo_free(tide_engine_t *e);

/* snap.c: does every byte of each snapshotted struct belong to a member that
 * a field table writes or a list of members deliberately left out names?
 * 0 yes, -1 no (err names the struct and byte), 1 cannot tell (needs GCC's
 * __builtin_clear_padding). For tests. */
int tide__snapshot_layout_check(tide_error_t *err);

/* sched.c */
void tide__sched_pass(tide_engine_t *e, tide_time_t now);

/* power.c: topology (at create), energy up to now (before the step's
 * events), the capping pass (after the scheduling passes), admission of a
 * start or growth on GPUs a (taken for job h, not yet its own): 1 if every
 * power domain can hold it with all training at its lowest cap; the
 * invariant (a budget exceeded while training there could still be shed) */
void tide__power_init(tide_engine_t *e);
/* Restore: type t's model as a snapshot holds it (no running total moves;
 * the restored jobs carry theirs). 0 or -1 (an inconsistent model). */
int tide__power_model_restore(tide_engine_t *e, int t, const tide_power_model_t *m);
void tide__power_free(tide_engine_t *e);
void tide__power_advance(tide_engine_t *e, tide_time_t now);
void tide__power_pass(tide_engine_t *e);
int tide__power_admit(tide_engine_t *e, const alloc_t *a);
int tide__power_check(const tide_engine_t *e, tide_error_t *err);
void tide__power_job_reset(job_t *j);
void tide__power_job_off(tide_engine_t *e, job_t *j);
void tide__power_job_on(tide_engine_t *e, job_t *j);
void tide__power_job_live(const tide_engine_t *e, const job_t *j, tide_job_info_t *out);
/* The domains in the order a partition for inference should take them:
 * with power budgets, round-robin over power domains (the first domain of
 * every power domain, then the second, ...) so that no power domain is all
 * serving; without, 0..n_doms-1. */
void tide__power_spread(const tide_engine_t *e, int *order);
/* Replica placement: per power domain the worst-case headroom (budget minus
 * the draw with training at its lowest caps and serving at full load) into
 * e->pw_w (0 when power is off); tide__power_room then says whether a gang
 * of n GPUs of domain d would fit there at full load, and takes it. */
void tide__power_room_init(tide_engine_t *e);
int tide__power_room(tide_engine_t *e, int d, int n, int take);
unsigned tide__train_zones_now(const tide_engine_t *e, tide_time_t now);

#endif
