/* Private to libtidecore: the engine's state, shared by the core modules
 * (placement, forecast, accounting, leases/reclaim, scheduling, policies).
 * Nothing outside src/core includes this file. */
#ifndef TIDE_CORE_INTERNAL_H
#define TIDE_CORE_INTERNAL_H

#include "tide/engine.h"
#include "util/util.h"

/* Zones: which workloads may use a domain. Assigned by the policy's layout. */
enum { Z_RESERVE = 0, Z_INF, Z_TRAIN, Z_SHARED, Z_COUNT };
#define ZBIT(z) (1u << (z))

/* GPU owner kinds. */
enum { OWN_FREE = 0, OWN_JOB = 1, OWN_REPLICA = 2 };

/* Claim on a domain: GPUs being emptied for a service's replicas, for a
 * high-priority job, or for the Tier A reserve (reserve.c); no one else may
 * start there meanwhile. */
enum { CLAIM_NONE = 0, CLAIM_SERVICE, CLAIM_JOB, CLAIM_RESERVE };

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
} domain_t;

typedef struct node {
    int domain;
    int gpus, first_gpu;
    int up;
} node_t;

/* One (domain, count) pair of an allocation. */
typedef struct domcount {
    int domain;
    int n;
} domcount_t;

typedef struct alloc {
    int32_t *gpus;   /* gang-ordered: gang k is gpus[k*g .. k*g+g) */
    int n;
    size_t cap;
} alloc_t;

typedef struct job {
    tide_job_spec_t spec;    /* id and team strings owned */
    int team;
    int cls;                 /* TIDE_C_P1..P3 */
    int dp_max;
    int state, phase, width;
    double progress;         /* as of progress_at */
    tide_time_t progress_at;
    double committed;
    tide_time_t submitted, first_start, finished, run_start, notice_at, deadline;
    int preemptions;
    double lost_gpu_s;
    int32_t lease;
    alloc_t alloc;
    int n_leased;            /* GPUs of alloc under the lease (tier C) */
    int acct_state;          /* state its GPUs are counted in */
    int acct_tier_own;       /* tier of its unleased GPUs */
    double tr_c, tr_d;       /* training GPU-seconds on lent / unlent GPUs since the
                                last commit (how lost work splits by tier) */
    tide_time_t tr_at;
    int32_t run_idx;         /* index in e->running or -1 */
    tide_time_t exp_end;     /* expected release time (key of e->by_end) */
    int reclaim_reason;
    int stop_pending;        /* checkpoint requested to stop (not just shrink) */
} job_t;

enum { REP_WARMING = 0, REP_READY, REP_STOPPED };

typedef struct replica {
    int service;
    int state;
    alloc_t alloc;
    int tier;                /* A if on the reserve, else B */
    tide_time_t started, ready_at;
    tide_time_t notice_at;   /* reclaim notice that freed its GPUs, or -1 */
} replica_t;

typedef struct lease {
    int32_t job;
    int gpus;
    tide_time_t start, latest_return;
    tide_time_t ckpt_cost;
    int can_shrink;
    int noticed, returned, late;
} lease_t;

/* Demand forecast per service (forecast.c). */
typedef struct forecast {
    int nb;                  /* buckets per day */
    int days;                /* days of history kept */
    tide_time_t bucket_s;
    float *hist;             /* [days][nb] max demand seen in bucket, <0 = unseen */
    int64_t last_bucket;     /* absolute bucket index last filled, -1 = none */
    double cur;              /* demand observed now */
    int have;                /* any observation yet */
    int64_t first_bucket;
    /* margin learning */
    double margin;
    double *err;             /* ring of relative under-forecast errors */
    size_t err_n, err_cap, err_pos;
    struct { tide_time_t start, end; double pred; } *pend;
    size_t pend_n, pend_cap;
    int64_t pend_last_bucket;
    int samples;
} forecast_t;

/* A lazily integrated GPU counter: acc GPU-seconds up to t, n GPUs since. */
typedef struct lc {
    int n;
    tide_time_t t;
    double acc;
} lc_t;
void tide__lc_add(lc_t *c, tide_time_t now, int delta);
double tide__lc_value(const lc_t *c, tide_time_t now);

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

typedef struct service {
    tide_service_spec_t spec;  /* name owned */
    forecast_t fc;
    double demand;             /* observed rps now */
    int ready, warming;        /* replica counts */
    tide_time_t down_since;    /* need below capacity since (-1: not) */
    int hold_max;              /* highest need seen since down_since */
    samples_t warm;            /* measured warm-up times */
    struct hpa_rec { tide_time_t t; int n; } *hpa; /* `k8s`: recommendations in the
                                  stabilisation window, values decreasing */
    size_t hpa_n, hpa_cap;
    lc_t *cells;               /* [state][tier][type] */
} service_t;

typedef struct team {
    char *name;
    double gpu_s, lost_gpu_s;
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

/* A job in the oracle's fluid schedule: done when the virtual clock reaches vf. */
typedef struct oracle_job {
    double vf;
    int gpus;
} oracle_job_t;

/* A reservation for the head job of a priority (EASY backfill). */
typedef struct reservation {
    tide_time_t shadow;   /* when the head job can start */
    int *avail;           /* free GPUs per domain at shadow time */
    int *res;             /* GPUs reserved for the head per domain */
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
    int32_t *gpu_dom;        /* per GPU: its domain */
    uint8_t *own_kind;       /* per GPU */
    int32_t *own_id;         /* per GPU */
    int zone_gpus[Z_COUNT];  /* up GPUs per zone */
    int zone_free[Z_COUNT];  /* free up GPUs per zone */
    int zone_total[Z_COUNT]; /* all GPUs per zone (up or down) */

    /* workload */
    job_t **jobs;            /* stable pointers: specs are borrowed by drivers */
    size_t n_jobs, cap_jobs;
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
    int queue_gpus;
    int32_t *running;
    size_t n_running, cap_running;
    int32_t *by_end;         /* running jobs sorted by (exp_end, handle) */
    size_t n_by_end, cap_by_end;

    /* time */
    tide_time_t start, now;
    int started;
    tide_time_t next_tick;
    int sched_dirty;         /* resources or queue changed: run a training pass */
    int infer_dirty;         /* demand or replicas changed: run an inference pass */

    /* accounting */
    int cnt[TIDE_C_COUNT][TIDE_S_COUNT][TIDE_T_COUNT]; /* GPUs now (idle derived) */
    tide_stats_t st;
    oracle_job_t *orc;       /* the oracle's unfinished jobs, a min-heap on vf (acct.c) */
    size_t orc_n, orc_cap;
    double orc_v;            /* its virtual clock: full-width seconds every job advanced */
    long orc_width;          /* sum of the widths (GPUs) of its unfinished jobs */
    samples_t smp[TIDE_SAMPLE_COUNT];
    double declared_ckpt_max;
    int n_types;
    int quotas_on;           /* some team has a quota */
    tide_time_t next_deadline; /* earliest lease / checkpoint deadline (cached) */
    int reserve_target;      /* Tier A GPUs the layout gave the reserve */
    int *reserve_type;       /* ... per GPU type */
    int reserve_short;       /* healthy reserve GPUs missing now */
    int reserve_dirty;       /* node changed or a drain for the reserve is pending */

    /* scratch */
    int *scratch_a, *scratch_b, *scratch_c;
    struct victim *vict_cand, *vict_v, *vict_best; /* max_dom_gpus each */
    int *vict_used;
    reservation_t resv[TIDE_NPRIO];
    int n_resv;
    tide_actions_t *out;     /* actions of the current step */
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
    int renew_leases;          /* renew leases nobody needs before they expire */
    /* latest return for a lease granted now */
    tide_time_t (*lease_deadline)(const tide_engine_t *e, tide_time_t now);
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
int tide__in_night(const tide_engine_t *e, tide_time_t t);
tide_time_t tide__night_next_edge(const tide_engine_t *e, tide_time_t t);

/* ------------------------------------------------------------ modules */

/* place.c */
void tide__dom_take(tide_engine_t *e, int gpu, int kind, int32_t id);
void tide__dom_release(tide_engine_t *e, int gpu);
int tide__place_gangs(tide_engine_t *e, int gang, int want, int min, uint32_t types, unsigned zones,
                int kind, int32_t owner, alloc_t *out, int prefer_zone_order);
int tide__domain_ok(const tide_engine_t *e, const domain_t *d, uint32_t types, unsigned zones, int kind,
              int32_t owner);
int tide__capacity_for(const tide_engine_t *e, const int *avail, int gang, uint32_t types, unsigned zones,
                 int kind, int32_t owner);
/* Gangs of `gang` GPUs that domains doms[0..n_doms) hold when empty, among
 * the accepted types (0 = any): gangs inside one domain when any domain is
 * large enough (as tide__capacity_for places them), else whole domains of
 * one size dividing the gang. The one rule behind tide__capacity_empty and
 * tide_job_spec_fits. */
int tide__gangs_on_empty(const domain_t *doms, int n_doms, int gang, uint32_t types);
int tide__capacity_empty(const tide_engine_t *e, int gang, uint32_t types); /* on an empty cluster */
void tide__alloc_free(alloc_t *a);
void tide__alloc_push(alloc_t *a, int32_t gpu);

/* forecast.c */
void tide__fc_init(forecast_t *f, tide_time_t bucket_s, int days, double margin0);
void tide__fc_free(forecast_t *f);
void tide__fc_observe(forecast_t *f, tide_time_t now, double rps);
void tide__fc_advance(forecast_t *f, tide_time_t now);
double tide__fc_peak(const forecast_t *f, tide_time_t now, tide_time_t from, tide_time_t to);
void tide__fc_learn(forecast_t *f, tide_time_t now, tide_time_t horizon, const tide_config_t *cfg);

/* acct.c */
void tide__acct_advance(tide_engine_t *e, tide_time_t now);
void tide__acct_job_set(tide_engine_t *e, job_t *j, int on);
void tide__acct_rep_set(tide_engine_t *e, replica_t *r, int on);
void tide__acct_lost(tide_engine_t *e, job_t *j, double lost_progress);
void tide__oracle_submit(tide_engine_t *e, tide_time_t duration_s, int gpus);
void tide__samples_add(samples_t *s, double v);
double tide__samples_q99(samples_t *s);

/* jobs.c: lifecycle */
double tide__job_progress_now(const job_t *j, tide_time_t now);
tide_time_t tide__job_expected_end(const job_t *j, tide_time_t now);
void tide__job_start(tide_engine_t *e, int32_t h, alloc_t *a, int width);
void tide__job_stop(tide_engine_t *e, int32_t h, int reason, int requeue);
void tide__job_shrink(tide_engine_t *e, int32_t h, int domain, int gangs);
void tide__job_grow(tide_engine_t *e, int32_t h, alloc_t *extra, int gangs);
void tide__job_notice(tide_engine_t *e, int32_t h, int reason, int stop);
void tide__queue_insert(tide_engine_t *e, int32_t h);
void tide__end_index_set(tide_engine_t *e, int32_t h, tide_time_t end); /* move h to a new key */
void tide__queue_remove(tide_engine_t *e, int32_t h);
int tide__team_intern(tide_engine_t *e, const char *name);
double tide__team_usage(const tide_engine_t *e, const team_t *t, tide_time_t now);
void tide__team_usage_update(tide_engine_t *e, team_t *t);
/* The domain of a GPU (a table lookup). */
static inline int dom_of_gpu(const tide_engine_t *e, int gpu) { return e->gpu_dom[gpu]; }

/* actions */
tide_action_t *tide__act_push(tide_engine_t *e, int kind, int reason);
void tide__act_gpus(tide_engine_t *e, tide_action_t *a, const alloc_t *al);

/* lease.c */
void tide__lease_grant(tide_engine_t *e, int32_t h);
void tide__lease_update(tide_engine_t *e, int32_t h);
void tide__lease_return(tide_engine_t *e, int32_t h, int reason, int late);
void tide__lease_tick(tide_engine_t *e, tide_time_t now);
tide_time_t tide__reclaim_lead(tide_engine_t *e, int service);

/* infer.c */
void tide__infer_pass(tide_engine_t *e, tide_time_t now);
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

/* sched.c */
void tide__sched_pass(tide_engine_t *e, tide_time_t now);
unsigned tide__train_zones_now(const tide_engine_t *e, tide_time_t now);

#endif
