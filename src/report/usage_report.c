/* `tide usage DIR --report`: the governance questions answered from
 * usage.csv, usage_teams.csv, usage_services.csv, timeline.csv and
 * summary.json (docs/governance.md, "The report"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/csv.h"
#include "formats/json.h"
#include "formats/usage.h"
#include "formats/usage_priv.h"
#include "report/rows.h"
#include "util/util.h"

#define DAY_S 86400

void tide_usage_report_opts_default(tide_usage_report_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->peak_quantile = 0.9;
    o->phase_cv = 0.5;
}

static json_t *hours_cost(double gpu_s, double cost)
{
    json_t *o = json_object();
    tide_json_set(o, "gpu_hours", tide_json_real(gpu_s / 3600.0));
    tide_json_set(o, "cost", tide_json_real(cost));
    return o;
}

/* Per-team accumulators, indexed by strtab id of the team name. */
typedef struct tacc {
    double gpu_s, cost;          /* everything its jobs held in the range */
    double peak_gpu_s;
    double tier_c_gpu_s;
    double lost_gpu_s, lost_cost;
    double above_quota_gpu_s;
    int quota_gpus;              /* last seen, -1 none */
    double *daily;               /* GPU-seconds per full day */
    int seen;
} tacc_t;

typedef struct times {
    tide_time_t *v;
    size_t n, cap;
} times_t;

static int cmp_time(const void *a, const void *b)
{
    tide_time_t x = *(const tide_time_t *)a, y = *(const tide_time_t *)b;
    return x < y ? -1 : x > y;
}

static long find_time(const times_t *t, tide_time_t x)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->n && t->v[lo] == x ? (long)lo : -1;
}

/* Sorted distinct values of v. */
static void uniq(times_t *t)
{
    if (t->n == 0)
        return;
    qsort(t->v, t->n, sizeof *t->v, cmp_time);
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++)
        if (k == 0 || t->v[i] != t->v[k - 1])
            t->v[k++] = t->v[i];
    t->n = k;
}

/* Inference demand per interval of `policy` from timeline.csv: fills the
 * peak set (times whose demand is at or above the quantile). Returns 1 when
 * the timeline was read, 0 when it is missing or has no such policy. */
static int peak_times(const char *dir, const char *policy, tide_time_t from, tide_time_t to,
                      double q, times_t *peak, double *threshold, double *max_rps,
                      double *hours)
{
    tide_csv_t *c = tide_report_rows_open(dir, "timeline.csv");
    if (!c)
        return 0;
    int cp = tide_csv_col(c, "policy"), ct = tide_csv_col(c, "time_s"),
        cd = tide_csv_col(c, "demand_rps");
    if (cp < 0 || ct < 0 || cd < 0) {
        tide_csv_close(c);
        return 0;
    }
    times_t all = {0};
    double *dem = NULL;
    size_t nd = 0, capd = 0;
    while (tide_report_rows_next(c, cp, policy)) {
        long long t;
        double d;
        if (tide_parse_int(tide_csv_field(c, ct), &t) < 0 ||
            tide_parse_double(tide_csv_field(c, cd), &d) < 0 || t < from || t >= to)
            continue;
        TIDE_PUSH(all.v, all.n, all.cap, (tide_time_t)t);
        TIDE_PUSH(dem, nd, capd, d);
    }
    tide_csv_close(c);
    int ok = nd > 0;
    *max_rps = 0;
    for (size_t i = 0; i < nd; i++)
        *max_rps = TIDE_MAX(*max_rps, dem[i]);
    *threshold = ok ? tide_quantile(dem, nd, q) : 0;
    *hours = 0;
    for (size_t i = 0; i < nd; i++)
        if (dem[i] > 0 && dem[i] >= *threshold) {
            TIDE_PUSH(peak->v, peak->n, peak->cap, all.v[i]);
            /* the row holds until the next row of the policy (rows are in time order) */
            tide_time_t end = i + 1 < nd && all.v[i + 1] > all.v[i] ? all.v[i + 1] : to;
            *hours += (double)(end - all.v[i]) / 3600.0;
        }
    uniq(peak);
    free(all.v);
    free(dem);
    return ok;
}

typedef struct svcmeta {
    int id;                 /* strtab id of the name */
    int gpr, min_rep;
    double gpu_s, cost;
    double *per;            /* GPU-seconds per interval */
} svcmeta_t;

static void read_services(const char *dir, const char *policy, strtab_t *st, svcmeta_t **out,
                          size_t *n, int *available)
{
    tide_csv_t *c = tide_report_rows_open(dir, TIDE_USAGE_SERVICES_CSV);
    *available = 0;
    if (!c)
        return;
    int cp = tide_csv_col(c, "policy"), cs = tide_csv_col(c, "service"),
        cg = tide_csv_col(c, "gpus_per_replica"), cm = tide_csv_col(c, "min_replicas");
    size_t cap = 0;
    if (cp >= 0 && cs >= 0 && cg >= 0 && cm >= 0) {
        *available = 1;
        while (tide_report_rows_next(c, cp, policy)) {
            long long g, m;
            if (tide_parse_int(tide_csv_field(c, cg), &g) < 0 || g < 1 ||
                tide_parse_int(tide_csv_field(c, cm), &m) < 0 || m < 0)
                continue;
            svcmeta_t x = {strtab_intern(st, tide_csv_field(c, cs)), (int)g, (int)m, 0, 0, NULL};
            TIDE_PUSH(*out, *n, cap, x);
        }
    }
    tide_csv_close(c);
}

/* usage_teams.csv: GPU-seconds above quota per team over [from, to), and the
 * last quota seen. Returns 1 if the file was read. */
static int read_team_states(const char *dir, const char *policy, tide_time_t from, tide_time_t to,
                            strtab_t *st, tacc_t **acc, size_t *nacc)
{
    tide_csv_t *c = tide_report_rows_open(dir, TIDE_USAGE_TEAMS_CSV);
    if (!c)
        return 0;
    int cp = tide_csv_col(c, "policy"), ct = tide_csv_col(c, "time_s"),
        cn = tide_csv_col(c, "team"), cb = tide_csv_col(c, "borrowed_gpus"),
        cq = tide_csv_col(c, "quota_gpus");
    if (cp < 0 || ct < 0 || cn < 0 || cb < 0 || cq < 0) {
        tide_csv_close(c);
        return 0;
    }
    /* rows come grouped by sample time; remember each team's last sample */
    typedef struct last {
        tide_time_t t;
        long long borrowed;
    } last_t;
    last_t *lv = NULL;
    size_t nl = 0;
    while (tide_report_rows_next(c, cp, policy)) {
        long long t, b, q;
        if (tide_parse_int(tide_csv_field(c, ct), &t) < 0 ||
            tide_parse_int(tide_csv_field(c, cb), &b) < 0 ||
            tide_parse_int(tide_csv_field(c, cq), &q) < 0)
            continue;
        int id = strtab_intern(st, tide_csv_field(c, cn));
        if ((size_t)id >= *nacc) {
            *acc = tide_xrealloc(*acc, (size_t)(id + 1) * sizeof **acc);
            memset(*acc + *nacc, 0, (size_t)(id + 1 - (int)*nacc) * sizeof **acc);
            for (size_t i = *nacc; i <= (size_t)id; i++)
                (*acc)[i].quota_gpus = -1;
            *nacc = (size_t)id + 1;
        }
        if ((size_t)id >= nl) {
            lv = tide_xrealloc(lv, (size_t)(id + 1) * sizeof *lv);
            for (size_t i = nl; i <= (size_t)id; i++)
                lv[i].t = -1;
            nl = (size_t)id + 1;
        }
        tacc_t *a = &(*acc)[id];
        a->seen = 1;
        a->quota_gpus = (int)q;
        if (lv[id].t >= 0) {
            tide_time_t s = TIDE_MAX(lv[id].t, from), e = TIDE_MIN((tide_time_t)t, to);
            if (e > s)
                a->above_quota_gpu_s += (double)lv[id].borrowed * (double)(e - s);
        }
        lv[id].t = t;
        lv[id].borrowed = b;
    }
    tide_csv_close(c);
    free(lv);
    return 1;
}

static tacc_t *team_acc(tacc_t **acc, size_t *n, int id)
{
    if ((size_t)id >= *n) {
        *acc = tide_xrealloc(*acc, (size_t)(id + 1) * sizeof **acc);
        memset(*acc + *n, 0, (size_t)(id + 1 - (int)*n) * sizeof **acc);
        for (size_t i = *n; i <= (size_t)id; i++)
            (*acc)[i].quota_gpus = -1;
        *n = (size_t)id + 1;
    }
    return &(*acc)[id];
}

typedef struct order {
    int id;
    double key;
} order_t;

static int cmp_order(const void *a, const void *b)
{
    const order_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    return x->id - y->id;
}

/* Team ids sorted by key (descending); only teams with seen. */
static order_t *sorted_teams(const tacc_t *acc, size_t n, int which, size_t *out_n)
{
    order_t *o = tide_xmalloc((n ? n : 1) * sizeof *o);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!acc[i].seen)
            continue;
        double key = which == 0 ? acc[i].gpu_s : which == 1 ? acc[i].peak_gpu_s
                                                            : acc[i].tier_c_gpu_s;
        o[k++] = (order_t){(int)i, key};
    }
    qsort(o, k, sizeof *o, cmp_order);
    *out_n = k;
    return o;
}

/* One policy's report in the making: the range, the records summed. */
typedef struct polrep {
    const char *dir, *policy;
    udata_t *d;
    int pid;
    const tide_usage_report_opts_t *o;
    tide_time_t from, to;
    times_t iv;                   /* the intervals: distinct sample times in range */
    double cls_s[TIDE_C_COUNT], cls_c[TIDE_C_COUNT], tot_s, tot_c, lost_s, lost_c;
    tacc_t *acc;                  /* per team, indexed by strtab id */
    size_t nacc;
    times_t peak;                 /* the peak intervals */
    double thr, max_rps, peak_hours, peak_total;
    int have_tl;
    tide_time_t d0, d1;           /* full days in range, for the phase rule */
    int ndays;
    svcmeta_t *svc;
    size_t nsvc;
    int have_svc;
} polrep_t;

/* The range, the intervals, the peak and the services of policy pid. */
static void polrep_init(polrep_t *p, const char *dir, udata_t *d, int pid,
                        const tide_usage_report_opts_t *o)
{
    memset(p, 0, sizeof *p);
    p->dir = dir;
    p->d = d;
    p->pid = pid;
    p->o = o;
    p->policy = d->str.v[pid];
    p->to = d->end;
    p->from = o->since_s > 0 && p->to > o->since_s ? p->to - o->since_s : 0;
    for (size_t i = 0; i < d->n; i++)
        if (d->v[i].policy == pid && d->v[i].t >= p->from && d->v[i].t < p->to)
            TIDE_PUSH(p->iv.v, p->iv.n, p->iv.cap, d->v[i].t);
    uniq(&p->iv);
    p->have_tl = peak_times(dir, p->policy, p->from, p->to, o->peak_quantile, &p->peak, &p->thr,
                            &p->max_rps, &p->peak_hours);
    p->d0 = (p->from + DAY_S - 1) / DAY_S;
    p->d1 = p->to / DAY_S;
    p->ndays = p->d1 > p->d0 ? (int)(p->d1 - p->d0) : 0;
    read_services(dir, p->policy, &d->str, &p->svc, &p->nsvc, &p->have_svc);
    for (size_t s = 0; s < p->nsvc; s++)
        p->svc[s].per = tide_xcalloc(p->iv.n ? p->iv.n : 1, sizeof *p->svc[s].per);
}

static void polrep_free(polrep_t *p)
{
    for (size_t i = 0; i < p->nacc; i++)
        free(p->acc[i].daily);
    free(p->acc);
    for (size_t s = 0; s < p->nsvc; s++)
        free(p->svc[s].per);
    free(p->svc);
    free(p->iv.v);
    free(p->peak.v);
}

/* A team's record: its totals, peak share and daily GPU-seconds. */
static void add_team_record(polrep_t *p, const urec_t *r)
{
    tacc_t *a = team_acc(&p->acc, &p->nacc, r->owner);
    a->seen = 1;
    a->gpu_s += r->gpu_s;
    a->cost += r->state == TIDE_S_LOST ? 0 : r->cost;
    if (r->tier == TIDE_T_C)
        a->tier_c_gpu_s += r->gpu_s;
    if (r->state == TIDE_S_LOST) {
        a->lost_gpu_s += r->gpu_s;
        a->lost_cost += r->cost;
    }
    if (find_time(&p->peak, r->t) >= 0) {
        a->peak_gpu_s += r->gpu_s;
        p->peak_total += r->gpu_s;
    }
    tide_time_t day = r->t / DAY_S;
    if (p->ndays > 0 && day >= p->d0 && day < p->d1) {
        if (!a->daily)
            a->daily = tide_xcalloc((size_t)p->ndays, sizeof *a->daily);
        a->daily[day - p->d0] += r->gpu_s;
    }
}

/* Sum the policy's records in range by class, team and service. */
static void polrep_sum(polrep_t *p)
{
    for (size_t i = 0; i < p->d->n; i++) {
        const urec_t *r = &p->d->v[i];
        if (r->policy != p->pid || r->t < p->from || r->t >= p->to)
            continue;
        p->cls_s[r->cls] += r->gpu_s;
        p->cls_c[r->cls] += r->cost;
        p->tot_s += r->gpu_s;
        p->tot_c += r->cost;
        if (r->state == TIDE_S_LOST) {
            p->lost_s += r->gpu_s;
            p->lost_c += r->cost;
        }
        if (r->kind == TIDE_OWNER_TEAM) {
            add_team_record(p, r);
        } else if (r->kind == TIDE_OWNER_SERVICE) {
            for (size_t s = 0; s < p->nsvc; s++)
                if (p->svc[s].id == r->owner) {
                    p->svc[s].gpu_s += r->gpu_s;
                    p->svc[s].cost += r->cost;
                    long k = find_time(&p->iv, r->t);
                    if (k >= 0)
                        p->svc[s].per[k] += r->gpu_s;
                }
        }
    }
}

/* 1. GPU-hours by task type */
static void section_classes(const polrep_t *p, json_t *rep)
{
    json_t *bc = json_object();
    for (int c = 0; c < TIDE_C_COUNT; c++)
        tide_json_set(bc, c == TIDE_C_NONE ? "idle" : tide_class_name(c),
                      hours_cost(p->cls_s[c], p->cls_c[c]));
    tide_json_set(rep, "by_class", bc);
    tide_json_set(rep, "lost", hours_cost(p->lost_s, p->lost_c));
    tide_json_set(rep, "total", hours_cost(p->tot_s, p->tot_c));
}

/* 2. peak */
static json_t *section_peak(const polrep_t *p)
{
    json_t *pk = json_object();
    tide_json_set(pk, "available", json_boolean(p->have_tl));
    tide_json_set(pk, "quantile", tide_json_real(p->o->peak_quantile));
    tide_json_set(pk, "threshold_rps", tide_json_real(p->thr));
    tide_json_set(pk, "max_rps", tide_json_real(p->max_rps));
    tide_json_set(pk, "intervals", json_integer((json_int_t)p->peak.n));
    tide_json_set(pk, "hours", tide_json_real(p->peak_hours));
    json_t *pt = json_array();
    size_t no;
    order_t *ord = sorted_teams(p->acc, p->nacc, 1, &no);
    for (size_t i = 0; i < no; i++) {
        const tacc_t *a = &p->acc[ord[i].id];
        json_t *x = json_object();
        tide_json_set(x, "team", json_string(p->d->str.v[ord[i].id]));
        tide_json_set(x, "gpu_hours", tide_json_real(a->peak_gpu_s / 3600.0));
        tide_json_set(x, "share",
                      tide_json_real(p->peak_total > 0 ? a->peak_gpu_s / p->peak_total : 0));
        json_array_append_new(pt, x);
    }
    tide_json_set(pk, "top_team", no > 0 && p->acc[ord[0].id].peak_gpu_s > 0
                                      ? json_string(p->d->str.v[ord[0].id])
                                      : json_null());
    free(ord);
    tide_json_set(pk, "teams", pt);
    return pk;
}

/* Replicas a service held in every interval (whole replicas). */
static double always_on(const polrep_t *p, const svcmeta_t *s)
{
    double always = p->iv.n ? INFINITY : 0;
    for (size_t k = 0; k < p->iv.n; k++) {
        tide_time_t end = k + 1 < p->iv.n ? p->iv.v[k + 1] : p->to;
        double dt = (double)(end - p->iv.v[k]);
        if (dt > 0)
            always = TIDE_MIN(always, s->per[k] / dt / s->gpr);
    }
    if (!isfinite(always))
        always = 0;
    return floor(always + 1e-6);
}

/* 3. long-lived inference replicas */
static json_t *section_services(const polrep_t *p)
{
    double range_h = (double)(p->to - p->from) / 3600.0;
    json_t *sv = json_object();
    tide_json_set(sv, "available", json_boolean(p->have_svc));
    json_t *sa = json_array();
    order_t *so = tide_xmalloc((p->nsvc ? p->nsvc : 1) * sizeof *so);
    for (size_t s = 0; s < p->nsvc; s++)
        so[s] = (order_t){(int)s, p->svc[s].gpu_s / p->svc[s].gpr};
    qsort(so, p->nsvc, sizeof *so, cmp_order);
    for (size_t i = 0; i < p->nsvc; i++) {
        const svcmeta_t *s = &p->svc[so[i].id];
        double always = always_on(p, s);
        double per_gpu_h = s->gpu_s > 0 ? s->cost / (s->gpu_s / 3600.0) : 0;
        json_t *x = json_object();
        tide_json_set(x, "service", json_string(p->d->str.v[s->id]));
        tide_json_set(x, "gpus_per_replica", json_integer(s->gpr));
        tide_json_set(x, "min_replicas", json_integer(s->min_rep));
        tide_json_set(x, "gpu_hours", tide_json_real(s->gpu_s / 3600.0));
        tide_json_set(x, "replica_hours", tide_json_real(s->gpu_s / 3600.0 / s->gpr));
        tide_json_set(x, "mean_replicas",
                      tide_json_real(range_h > 0 ? s->gpu_s / 3600.0 / s->gpr / range_h : 0));
        tide_json_set(x, "always_on_replicas", tide_json_real(always));
        tide_json_set(x, "floor_gpu_hours", tide_json_real((double)s->min_rep * s->gpr * range_h));
        tide_json_set(x, "cost", tide_json_real(s->cost));
        tide_json_set(x, "always_on_cost", tide_json_real(always * s->gpr * range_h * per_gpu_h));
        json_array_append_new(sa, x);
    }
    free(so);
    tide_json_set(sv, "services", sa);
    return sv;
}

/* 4. phase-like training demand */
static json_t *section_phases(const polrep_t *p)
{
    json_t *ph = json_object();
    tide_json_set(ph, "rule",
                  json_string("a team is phase-like when its daily training GPU-hours over "
                              "the full days of the range have a coefficient of variation "
                              "(population std / mean) above cv_threshold"));
    tide_json_set(ph, "cv_threshold", tide_json_real(p->o->phase_cv));
    tide_json_set(ph, "days", json_integer(p->ndays));
    json_t *pa = json_array();
    size_t no;
    order_t *ord = sorted_teams(p->acc, p->nacc, 0, &no);
    int nd = p->ndays;
    for (size_t i = 0; i < no && nd >= 2; i++) {
        const tacc_t *a = &p->acc[ord[i].id];
        double mean = 0, var = 0;
        for (int k = 0; k < nd; k++)
            mean += (a->daily ? a->daily[k] : 0) / 3600.0;
        mean /= nd;
        for (int k = 0; k < nd; k++) {
            double x = (a->daily ? a->daily[k] : 0) / 3600.0 - mean;
            var += x * x;
        }
        var /= nd;
        double cv = mean > 0 ? sqrt(var) / mean : 0;
        json_t *x = json_object();
        tide_json_set(x, "team", json_string(p->d->str.v[ord[i].id]));
        tide_json_set(x, "mean_daily_gpu_hours", tide_json_real(mean));
        tide_json_set(x, "cv", tide_json_real(cv));
        tide_json_set(x, "phase_like", json_boolean(mean > 0 && cv > p->o->phase_cv));
        json_array_append_new(pa, x);
    }
    free(ord);
    tide_json_set(ph, "teams", pa);
    return ph;
}

/* 5. preemptions and lost work (counts from the run's summary.json) */
static json_t *section_preemptions(const polrep_t *p, json_t *summary)
{
    json_t *pr = json_object();
    json_t *pol = json_object_get(json_object_get(summary, "policies"), p->policy);
    json_t *pteams = summary ? json_object_get(pol, "teams") : NULL;
    json_t *hz = summary ? json_object_get(summary, "horizon_s") : NULL;
    double days = hz && json_is_integer(hz) ? (double)json_integer_value(hz) / DAY_S : 0;
    tide_json_set(pr, "available", json_boolean(json_is_object(pteams)));
    tide_json_set(pr, "run_days", tide_json_real(days));
    json_t *pra = json_array();
    size_t no;
    order_t *ord = sorted_teams(p->acc, p->nacc, 0, &no);
    for (size_t i = 0; i < no; i++) {
        const tacc_t *a = &p->acc[ord[i].id];
        const char *name = p->d->str.v[ord[i].id];
        json_t *st = json_is_object(pteams) ? json_object_get(pteams, name) : NULL;
        json_int_t np = st ? json_integer_value(json_object_get(st, "preemptions")) : 0;
        json_t *x = json_object();
        tide_json_set(x, "team", json_string(name));
        tide_json_set(x, "preemptions", json_integer(np));
        tide_json_set(x, "per_day", tide_json_real(days > 0 ? (double)np / days : 0));
        tide_json_set(x, "gpu_hours_lost", tide_json_real(a->lost_gpu_s / 3600.0));
        tide_json_set(x, "lost_cost", tide_json_real(a->lost_cost));
        if (st && json_object_get(st, "mean_queue_s"))
            tide_json_set(x, "mean_queue_s", json_incref(json_object_get(st, "mean_queue_s")));
        json_array_append_new(pra, x);
    }
    free(ord);
    tide_json_set(pr, "teams", pra);
    tide_json_set(pr, "charged_to", json_string(TIDE_USAGE_LOST_OWNER));
    tide_json_set(pr, "policy_lost_gpu_hours", tide_json_real(p->lost_s / 3600.0));
    tide_json_set(pr, "policy_lost_cost", tide_json_real(p->lost_c));
    return pr;
}

/* 6. borrowing (quota and above-quota hours from team_states.csv) */
static json_t *section_borrowing(polrep_t *p)
{
    int have_states =
        read_team_states(p->dir, p->policy, p->from, p->to, &p->d->str, &p->acc, &p->nacc);
    json_t *bo = json_object();
    tide_json_set(bo, "above_quota_available", json_boolean(have_states));
    json_t *ba = json_array();
    size_t no;
    order_t *ord = sorted_teams(p->acc, p->nacc, 0, &no);
    for (size_t i = 0; i < no; i++) {
        const tacc_t *a = &p->acc[ord[i].id];
        json_t *x = json_object();
        tide_json_set(x, "team", json_string(p->d->str.v[ord[i].id]));
        tide_json_set(x, "quota_gpus", json_integer(a->quota_gpus));
        tide_json_set(x, "gpu_hours", tide_json_real(a->gpu_s / 3600.0));
        tide_json_set(x, "cost", tide_json_real(a->cost));
        tide_json_set(x, "tier_c_gpu_hours", tide_json_real(a->tier_c_gpu_s / 3600.0));
        tide_json_set(x, "above_quota_gpu_hours", tide_json_real(a->above_quota_gpu_s / 3600.0));
        json_array_append_new(ba, x);
    }
    free(ord);
    tide_json_set(bo, "teams", ba);
    return bo;
}

static json_t *report_policy(const char *dir, udata_t *d, int pid, json_t *summary,
                             const tide_usage_report_opts_t *o)
{
    polrep_t p;
    polrep_init(&p, dir, d, pid, o);
    polrep_sum(&p);
    json_t *rep = json_object();
    tide_json_set(rep, "from_s", json_integer(p.from));
    tide_json_set(rep, "to_s", json_integer(p.to));
    section_classes(&p, rep);
    tide_json_set(rep, "peak", section_peak(&p));
    tide_json_set(rep, "services", section_services(&p));
    tide_json_set(rep, "phases", section_phases(&p));
    tide_json_set(rep, "preemptions", section_preemptions(&p, summary));
    tide_json_set(rep, "borrowing", section_borrowing(&p));
    polrep_free(&p);
    return rep;
}

json_t *tide_usage_report(const char *dir, const char *policy, const tide_usage_report_opts_t *o,
                          tide_error_t *err)
{
    tide_usage_report_opts_t def;
    tide_usage_report_opts_default(&def);
    if (!o)
        o = &def;
    if (!(o->peak_quantile >= 0 && o->peak_quantile <= 1)) {
        tide_errf(err, TIDE_EINVAL, "peak quantile must be in 0..1");
        return NULL;
    }
    udata_t d;
    if (udata_load(dir, policy, &d, err) < 0)
        return NULL;
    json_t *summary = tide_json_load_file(dir, "summary.json", NULL);
    json_t *top = json_object();
    json_t *pols = json_object();
    for (int i = 0; i < d.n_policies; i++)
        tide_json_set(pols, d.str.v[d.policies[i]],
                      report_policy(dir, &d, d.policies[i], summary, o));
    tide_json_set(top, "policies", pols);
    json_decref(summary);
    udata_free(&d);
    return top;
}

/* ------------------------------------------------------------ printing */

static double num(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : 0.0;
}

static const char *str(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : "";
}

int tide_usage_report_print(FILE *f, const json_t *report)
{
    const char *pname;
    json_t *p;
    json_object_foreach(json_object_get(report, "policies"), pname, p)
    {
        char a[32], b[32];
        fprintf(f, "== policy %s: %s .. %s\n", pname,
                tide_fmt_duration((int64_t)num(p, "from_s"), a, sizeof a),
                tide_fmt_duration((int64_t)num(p, "to_s"), b, sizeof b));

        fprintf(f, "\nGPU-hours by task type\n  %-12s %12s %12s\n", "class", "gpu_hours", "cost");
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(p, "by_class"), k, v)
            fprintf(f, "  %-12s %12.2f %12.2f\n", k, num(v, "gpu_hours"), num(v, "cost"));
        json_t *lost = json_object_get(p, "lost"), *tot = json_object_get(p, "total");
        fprintf(f, "  %-12s %12.2f %12.2f   (of the training classes; charged to %s)\n",
                "lost", num(lost, "gpu_hours"), num(lost, "cost"), TIDE_USAGE_LOST_OWNER);
        fprintf(f, "  %-12s %12.2f %12.2f\n", "total", num(tot, "gpu_hours"), num(tot, "cost"));

        json_t *pk = json_object_get(p, "peak");
        fprintf(f, "\nAt peak inference demand (intervals at or above the %.0fth percentile)\n",
                100 * num(pk, "quantile"));
        if (!json_is_true(json_object_get(pk, "available")))
            fprintf(f, "  unavailable (no timeline.csv rows for this policy)\n");
        else if (json_is_null(json_object_get(pk, "top_team")))
            fprintf(f, "  %d intervals (%.1f h) from %.1f rps: no team used GPUs then\n",
                    (int)num(pk, "intervals"), num(pk, "hours"), num(pk, "threshold_rps"));
        else {
            fprintf(f, "  %d intervals (%.1f h) with demand >= %.1f rps (max %.1f): top team %s\n",
                    (int)num(pk, "intervals"), num(pk, "hours"), num(pk, "threshold_rps"),
                    num(pk, "max_rps"), str(pk, "top_team"));
            size_t i;
            json_array_foreach(json_object_get(pk, "teams"), i, v)
            {
                if (i >= 10)
                    break;
                fprintf(f, "  %-20s %10.2f GPU-h %6.1f%%\n", str(v, "team"), num(v, "gpu_hours"),
                        100 * num(v, "share"));
            }
        }

        json_t *sv = json_object_get(p, "services");
        fprintf(f, "\nLong-lived inference replicas\n");
        if (!json_is_true(json_object_get(sv, "available")))
            fprintf(f, "  unavailable (no usage_services.csv)\n");
        else {
            fprintf(f, "  %-20s %5s %5s %12s %10s %9s %10s %12s\n", "service", "gpus", "floor",
                    "replica_h", "mean_rep", "always_on", "cost", "always_cost");
            size_t i;
            json_array_foreach(json_object_get(sv, "services"), i, v)
                fprintf(f, "  %-20s %5d %5d %12.2f %10.2f %9.0f %10.2f %12.2f\n",
                        str(v, "service"), (int)num(v, "gpus_per_replica"),
                        (int)num(v, "min_replicas"), num(v, "replica_hours"),
                        num(v, "mean_replicas"), num(v, "always_on_replicas"), num(v, "cost"),
                        num(v, "always_on_cost"));
        }

        json_t *ph = json_object_get(p, "phases");
        fprintf(f, "\nPhase-like training demand (daily GPU-hours CV > %.2f over %d full days)\n",
                num(ph, "cv_threshold"), (int)num(ph, "days"));
        if (num(ph, "days") < 2)
            fprintf(f, "  needs at least two full days in the range\n");
        size_t i;
        json_array_foreach(json_object_get(ph, "teams"), i, v)
            fprintf(f, "  %-20s mean %10.2f GPU-h/day  cv %5.2f  %s\n", str(v, "team"),
                    num(v, "mean_daily_gpu_hours"), num(v, "cv"),
                    json_is_true(json_object_get(v, "phase_like")) ? "phase-like" : "steady");

        json_t *pr = json_object_get(p, "preemptions");
        fprintf(f, "\nPreemptions and lost work (lost work is charged to %s)\n",
                TIDE_USAGE_LOST_OWNER);
        if (!json_is_true(json_object_get(pr, "available")))
            fprintf(f, "  preemption counts unavailable (no summary.json teams)\n");
        fprintf(f, "  %-20s %8s %8s %10s %10s\n", "team", "preempt", "per_day", "lost_gpuh",
                "lost_cost");
        json_array_foreach(json_object_get(pr, "teams"), i, v)
            fprintf(f, "  %-20s %8d %8.2f %10.2f %10.2f\n", str(v, "team"),
                    (int)num(v, "preemptions"), num(v, "per_day"), num(v, "gpu_hours_lost"),
                    num(v, "lost_cost"));
        fprintf(f, "  %-20s %8s %8s %10.2f %10.2f\n", TIDE_USAGE_LOST_OWNER, "", "",
                num(pr, "policy_lost_gpu_hours"), num(pr, "policy_lost_cost"));

        json_t *bo = json_object_get(p, "borrowing");
        fprintf(f, "\nBorrowing per team\n  %-20s %6s %10s %10s %10s %12s\n", "team", "quota",
                "gpu_hours", "cost", "tierC_gpuh",
                json_is_true(json_object_get(bo, "above_quota_available")) ? "above_quota"
                                                                           : "above_quota?");
        json_array_foreach(json_object_get(bo, "teams"), i, v)
        {
            char q[16];
            if (num(v, "quota_gpus") < 0)
                snprintf(q, sizeof q, "-");
            else
                snprintf(q, sizeof q, "%d", (int)num(v, "quota_gpus"));
            fprintf(f, "  %-20s %6s %10.2f %10.2f %10.2f %12.2f\n", str(v, "team"), q,
                    num(v, "gpu_hours"), num(v, "cost"), num(v, "tier_c_gpu_hours"),
                    num(v, "above_quota_gpu_hours"));
        }
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}
