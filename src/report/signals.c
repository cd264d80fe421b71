/* Capacity signals: rules over summary.json, timeline.csv, events.csv and
 * sweep.csv (signals.h). */
#include "report/signals.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "formats/csv.h"
#include "formats/json.h"
#include "report/rows.h"
#include "util/util.h"

#define DAY_S 86400.0

void tide_signals_opts_default(tide_signals_opts_t *o)
{
    o->preempt_per_day_per_100 = 5.0;
    o->queue_p95_h = 24.0;
    o->queue_gpus_frac = 0.25;
    o->util_low = 0.60;
    o->idle_high = 0.30;
    o->slo_target = 0.999;
}

static double num(const json_t *o, const char *k)
{
    const json_t *v = o ? json_object_get(o, k) : NULL;
    return json_is_number(v) ? json_number_value(v) : 0.0;
}

static void finding(json_t *arr, const char *signal, const char *level, double value,
                    double threshold, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static void finding(json_t *arr, const char *signal, const char *level, double value,
                    double threshold, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *x = json_object();
    tide_json_set(x, "signal", json_string(signal));
    tide_json_set(x, "level", json_string(level));
    tide_json_set(x, "value", tide_json_real(value));
    tide_json_set(x, "threshold", tide_json_real(threshold));
    tide_json_set(x, "message", json_string(msg));
    json_array_append_new(arr, x);
}

/* Timeline means for one policy. */
typedef struct tlstat {
    int rows;
    double queue_gpus, queue_jobs, idle;
    double max_queue_gpus;
} tlstat_t;

static void timeline_stats(const char *dir, const char *policy, tlstat_t *s)
{
    memset(s, 0, sizeof *s);
    tide_csv_t *c = tide_report_rows_open(dir, "timeline.csv");
    if (!c)
        return;
    int cp = tide_csv_col(c, "policy"), cq = tide_csv_col(c, "queue_gpus"),
        cj = tide_csv_col(c, "queue_jobs"), ci = tide_csv_col(c, "idle");
    while (cp >= 0 && cq >= 0 && tide_report_rows_next(c, cp, policy)) {
        double q = 0, j = 0, i = 0;
        tide_parse_double(tide_csv_field(c, cq), &q);
        if (cj >= 0)
            tide_parse_double(tide_csv_field(c, cj), &j);
        if (ci >= 0)
            tide_parse_double(tide_csv_field(c, ci), &i);
        s->rows++;
        s->queue_gpus += q;
        s->queue_jobs += j;
        s->idle += i;
        s->max_queue_gpus = TIDE_MAX(s->max_queue_gpus, q);
    }
    tide_csv_close(c);
    if (s->rows) {
        s->queue_gpus /= s->rows;
        s->queue_jobs /= s->rows;
        s->idle /= s->rows;
    }
}

/* Job stops by cause from events.csv. Returns 1 when the file was read. */
typedef struct stops {
    int inference, contention, failure;
} stops_t;

static int event_stops(const char *dir, const char *policy, stops_t *s)
{
    memset(s, 0, sizeof *s);
    tide_csv_t *c = tide_report_rows_open(dir, "events.csv");
    if (!c)
        return 0;
    int cp = tide_csv_col(c, "policy"), ck = tide_csv_col(c, "kind"),
        cr = tide_csv_col(c, "reason");
    if (cp < 0 || ck < 0 || cr < 0) {
        tide_csv_close(c);
        return 0;
    }
    while (tide_report_rows_next(c, cp, policy)) {
        if (strcmp(tide_csv_field(c, ck), "job_stop") != 0)
            continue;
        const char *why = tide_csv_field(c, cr);
        if (!strcmp(why, "reclaim") || !strcmp(why, "preempt") || !strcmp(why, "deadline") ||
            !strcmp(why, "window"))
            s->inference++;
        else if (!strcmp(why, "priority") || !strcmp(why, "quota"))
            s->contention++;
        else if (!strcmp(why, "failure"))
            s->failure++;
    }
    tide_csv_close(c);
    return 1;
}

/* What DIR/sweep.csv says about raising the reserve of `policy` (rows with
 * the smallest and the largest reserve): the advice of the preemption
 * finding, so that it never contradicts the sweep. 0 without such a sweep. */
static int sweep_reserve_advice(const char *dir, const char *policy, char *buf, size_t n)
{
    tide_csv_t *c = tide_report_rows_open(dir, "sweep.csv");
    if (!c)
        return 0;
    int cres = tide_csv_col(c, "reserve"), cpol = tide_csv_col(c, "policy"),
        cpre = tide_csv_col(c, "preemptions"), ceff = tide_csv_col(c, "reserve_effective_gpus");
    double lo = INFINITY, hi = -INFINITY, plo = NAN, phi = NAN, elo = NAN, ehi = NAN;
    while (cres >= 0 && cpol >= 0 && cpre >= 0 && tide_report_rows_next(c, cpol, policy)) {
        double res, pre, eff = NAN;
        if (tide_parse_double(tide_csv_field(c, cres), &res) < 0 ||
            tide_parse_double(tide_csv_field(c, cpre), &pre) < 0)
            continue;
        if (ceff >= 0 && tide_parse_double(tide_csv_field(c, ceff), &eff) < 0)
            eff = NAN;
        if (res < lo)
            lo = res, plo = pre, elo = eff;
        if (res > hi)
            hi = res, phi = pre, ehi = eff;
    }
    tide_csv_close(c);
    if (!(hi > lo))
        return 0;
    if (phi < plo)
        snprintf(buf, n, "raise --reserve: in the sweep, reserve %.0f -> %.0f cut them from %.0f "
                 "to %.0f", lo, hi, plo, phi);
    else if (isfinite(elo) && elo == ehi)
        snprintf(buf, n, "reserves %.0f..%.0f all act as the services' floors (%.0f GPUs), so "
                 "the sweep shows no change: try reserves above %.0f, or lower the services' "
                 "min_replicas", lo, hi, elo, elo);
    else
        snprintf(buf, n, "the sweep shows raising --reserve from %.0f to %.0f does not reduce "
                 "them (%.0f -> %.0f): they need a larger cluster or fewer floor replicas",
                 lo, hi, plo, phi);
    return 1;
}

static json_t *policy_signals(const char *dir, const char *name, const json_t *p, double gpus,
                              double horizon, const tide_signals_opts_t *o)
{
    json_t *out = json_object(), *m = json_object(), *fs = json_array();
    const json_t *tr = json_object_get(p, "training");
    const json_t *gh = json_object_get(p, "gpu_hours");
    double days = horizon / DAY_S, total_h = gpus * horizon / 3600.0;
    stops_t st;
    int have_ev = event_stops(dir, name, &st);
    double preempt = have_ev ? st.inference : num(tr, "preemptions");
    double rate = days > 0 && gpus > 0 ? preempt / days / (gpus / 100.0) : 0;
    tlstat_t tl;
    timeline_stats(dir, name, &tl);
    double util = num(p, "utilization"), idle_h = num(gh, "idle");
    double idle_frac = total_h > 0 ? idle_h / total_h : 0;
    double p95_h = num(tr, "p95_queue_s") / 3600.0;
    double qfrac = gpus > 0 ? tl.queue_gpus / gpus : 0;
    double slo = num(json_object_get(p, "inference"), "slo_attainment");

    tide_json_set(m, "preemptions", json_integer((json_int_t)num(tr, "preemptions")));
    if (have_ev) {
        tide_json_set(m, "stops_by_inference", json_integer(st.inference));
        tide_json_set(m, "stops_by_contention", json_integer(st.contention));
        tide_json_set(m, "stops_by_failure", json_integer(st.failure));
    }
    tide_json_set(m, "preemptions_per_day_per_100_gpus", tide_json_real(rate));
    tide_json_set(m, "p95_queue_h", tide_json_real(p95_h));
    tide_json_set(m, "mean_queue_h", tide_json_real(num(tr, "mean_queue_s") / 3600.0));
    tide_json_set(m, "mean_queue_gpus", tide_json_real(tl.queue_gpus));
    tide_json_set(m, "mean_queue_jobs", tide_json_real(tl.queue_jobs));
    tide_json_set(m, "utilization", tide_json_real(util));
    tide_json_set(m, "useful_utilization", tide_json_real(num(p, "useful_utilization")));
    tide_json_set(m, "idle_fraction", tide_json_real(idle_frac));
    tide_json_set(m, "idle_gpu_hours", tide_json_real(idle_h));
    tide_json_set(m, "idle_while_queued_gpu_hours",
                  tide_json_real(num(p, "idle_while_queued_gpu_hours")));
    tide_json_set(m, "slo_attainment", tide_json_real(slo));
    tide_json_set(m, "gpu_hours_lost", tide_json_real(num(tr, "gpu_hours_lost")));

    int warned = 0;
    if (rate > o->preempt_per_day_per_100) {
        char advice[400];
        if (!sweep_reserve_advice(dir, name, advice, sizeof advice))
            snprintf(advice, sizeof advice, "the inference floor (Tier A reserve) is too small - "
                     "raise --reserve or the services' min_replicas (tide sim --sweep "
                     "reserve=LO:HI:STEP shows what each step buys)");
        finding(fs, "preemptions", "warn", rate, o->preempt_per_day_per_100,
                "preemptions too frequent: %.1f per day per 100 GPUs (%.0f %s in %.1f days, "
                "threshold %.1f), %.1f GPU-hours lost: %s",
                rate, preempt, have_ev ? "stops by inference" : "preemptions", days,
                o->preempt_per_day_per_100, num(tr, "gpu_hours_lost"), advice);
        warned++;
    }
    if (have_ev && st.contention > 0)
        finding(fs, "contention", "info", st.contention, 0,
                "%d job stops came from training itself (priority or quota reclaims), not "
                "from inference",
                st.contention);
    int q_p95 = p95_h > o->queue_p95_h, q_mean = qfrac > o->queue_gpus_frac;
    if (q_p95 || q_mean) {
        finding(fs, "queue", "warn", q_p95 ? p95_h : qfrac,
                q_p95 ? o->queue_p95_h : o->queue_gpus_frac,
                "deep training queue: p95 queue time %.1f h (threshold %.0f h), queued jobs "
                "asking for %.0f GPUs on average = %.0f%% of the cluster (threshold %.0f%%): "
                "training is undersized",
                p95_h, o->queue_p95_h, tl.queue_gpus, 100 * qfrac, 100 * o->queue_gpus_frac);
        warned++;
    }
    if (util < o->util_low || idle_frac > o->idle_high) {
        finding(fs, "waste", "warn", util < o->util_low ? util : idle_frac,
                util < o->util_low ? o->util_low : o->idle_high,
                "low watermark: utilization %.1f%% (threshold %.0f%%), %.0f GPU-hours idle = "
                "%.1f%% of the total (threshold %.0f%%), %.0f of them while jobs waited: "
                "capacity is wasted - shrink the cluster or the reserve, or admit more work",
                100 * util, 100 * o->util_low, idle_h, 100 * idle_frac, 100 * o->idle_high,
                num(p, "idle_while_queued_gpu_hours"));
        warned++;
    }
    if (!warned)
        finding(fs, "ok", "ok", 0, 0,
                "no capacity signal: %.1f preemptions per day per 100 GPUs, p95 queue %.1f h, "
                "utilization %.1f%%, SLO attainment %.4f",
                rate, p95_h, 100 * util, slo);
    tide_json_set(out, "metrics", m);
    tide_json_set(out, "findings", fs);
    return out;
}

/* ------------------------------------------------------------------ sweep */

/* Columns that are results, not parameters, of a sweep row. */
static int is_metric(const char *name)
{
    static const char *const words[] = {"util", "slo", "hour", "gpuh", "queue", "preempt",
                                        "jobs", "reclaim", "lost", "wall", "cost", "lead",
                                        "error", "status", "dir", "out", "jct", "rps",
                                        "events", "steps", "shrink", "lease", "late", "served",
                                        "oracle", "seed_"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strstr(name, words[i]))
            return 1;
    /* bookkeeping columns of tide's own sweep.csv (docs/report.md): one value
     * per row, not a parameter */
    static const char *const rows[] = {"point", "label", "on_front", "reserve_effective_gpus"};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (!strcmp(name, rows[i]))
            return 1;
    return 0;
}

typedef struct srow {
    char key[512];      /* policy + other parameters */
    char policy[64];
    double reserve, slo, train_h, lost_h, useful;
    double eff;         /* the reserve as it acted (reserve_effective_gpus) */
    int has_slo, has_train, has_lost, has_useful, has_eff;
} srow_t;

static int srow_cmp(const void *a, const void *b)
{
    const srow_t *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    return x->reserve < y->reserve ? -1 : x->reserve > y->reserve;
}

/* The step from row a to the next row b of its group: what the larger
 * reserve buys and costs. NULL when the reserve does not grow. */
static json_t *reserve_step(const srow_t *a, const srow_t *b, double gpus, double horizon)
{
    double dres = b->reserve - a->reserve;
    if (dres <= 0)
        return NULL;
    double dtrain = a->has_train && b->has_train ? a->train_h - b->train_h : NAN;
    double duse = a->has_useful && b->has_useful && gpus > 0 && horizon > 0
                      ? (a->useful - b->useful) * gpus * horizon / 3600.0
                      : NAN;
    char cost[256];
    if (isfinite(dtrain))
        snprintf(cost, sizeof cost, "cost %.1f training GPU-hours", dtrain);
    else if (isfinite(duse))
        snprintf(cost, sizeof cost,
                 "cost %.1f useful GPU-hours (no training GPU-hours column)", duse);
    else
        snprintf(cost, sizeof cost, "at a training cost sweep.csv does not show");
    char msg[768];
    int same = a->has_eff && b->has_eff && a->eff == b->eff;
    if (same) /* both below the services' floors: the same run */
        snprintf(msg, sizeof msg, "%s%sreserve %.0f -> %.0f changes nothing: both are below the "
                 "services' floors, whose replicas hold %.0f GPUs either way (SLO attainment "
                 "%.4f)", a->policy, a->policy[0] ? ": " : "", a->reserve, b->reserve, a->eff,
                 b->slo);
    else if (fabs(b->slo - a->slo) < 5e-5)
        snprintf(msg, sizeof msg, "%s%s%.0f more Tier A GPUs (reserve %.0f -> %.0f) leave SLO "
                 "attainment at %.4f and %s", a->policy, a->policy[0] ? ": " : "", dres,
                 a->reserve, b->reserve, b->slo, cost);
    else
        snprintf(msg, sizeof msg, "%s%s%.0f more Tier A GPUs (reserve %.0f -> %.0f) %s SLO "
                 "attainment from %.4f to %.4f and %s",
                 a->policy, a->policy[0] ? ": " : "", dres, a->reserve, b->reserve,
                 b->slo > a->slo ? "raise" : "lower", a->slo, b->slo, cost);
    json_t *x = json_object();
    tide_json_set(x, "same_effective_reserve", json_boolean(same));
    tide_json_set(x, "policy", json_string(a->policy));
    tide_json_set(x, "group", json_string(a->key));
    tide_json_set(x, "reserve_from", tide_json_real(a->reserve));
    tide_json_set(x, "reserve_to", tide_json_real(b->reserve));
    tide_json_set(x, "slo_from", tide_json_real(a->slo));
    tide_json_set(x, "slo_to", tide_json_real(b->slo));
    tide_json_set(x, "training_gpu_hours_cost",
                  isfinite(dtrain) ? tide_json_real(dtrain) : json_null());
    tide_json_set(x, "useful_gpu_hours_cost",
                  isfinite(duse) ? tide_json_real(duse) : json_null());
    if (a->has_lost && b->has_lost)
        tide_json_set(x, "gpu_hours_lost_delta", tide_json_real(b->lost_h - a->lost_h));
    tide_json_set(x, "message", json_string(msg));
    return x;
}

/* The recommendation of the group starting at rows[i]: the smallest reserve
 * reaching the SLO target. */
static json_t *group_recommendation(const srow_t *rows, size_t i, size_t n,
                                    const tide_signals_opts_t *o)
{
    size_t j = i;
    const srow_t *hit = NULL;
    for (; j < n && !strcmp(rows[j].key, rows[i].key); j++)
        if (!hit && rows[j].slo >= o->slo_target)
            hit = &rows[j];
    const srow_t *best = &rows[j - 1];
    char msg[512];
    if (hit && hit->has_eff && hit->eff > hit->reserve)
        snprintf(msg, sizeof msg, "%s%sthe smallest reserve reaching SLO %.4f is %.0f "
                 "(SLO %.4f), which acts as %.0f: the services' floors",
                 rows[i].policy, rows[i].policy[0] ? ": " : "", o->slo_target,
                 hit->reserve, hit->slo, hit->eff);
    else if (hit)
        snprintf(msg, sizeof msg, "%s%sthe smallest reserve reaching SLO %.4f is %.0f "
                 "(SLO %.4f)",
                 rows[i].policy, rows[i].policy[0] ? ": " : "", o->slo_target,
                 hit->reserve, hit->slo);
    else
        snprintf(msg, sizeof msg, "%s%sno reserve in the sweep reaches SLO %.4f (best "
                 "%.4f at reserve %.0f)",
                 rows[i].policy, rows[i].policy[0] ? ": " : "", o->slo_target, best->slo,
                 best->reserve);
    json_t *x = json_object();
    tide_json_set(x, "group", json_string(rows[i].key));
    tide_json_set(x, "reserve", hit ? tide_json_real(hit->reserve) : json_null());
    tide_json_set(x, "message", json_string(msg));
    return x;
}

static json_t *sweep_signals(const char *dir, const char *policy, double gpus, double horizon,
                             const tide_signals_opts_t *o)
{
    json_t *out = json_object();
    tide_csv_t *c = tide_report_rows_open(dir, "sweep.csv");
    tide_json_set(out, "available", json_false());
    if (!c)
        return out;
    int cres = tide_csv_col(c, "reserve");
    if (cres < 0)
        cres = tide_csv_col(c, "reserve_gpus");
    int cpol = tide_csv_col(c, "policy"), cslo = tide_csv_col(c, "slo_attainment");
    if (cslo < 0)
        cslo = tide_csv_col(c, "slo");
    int ctrain = -1, clost = tide_csv_col(c, "gpu_hours_lost"),
        cuse = tide_csv_col(c, "useful_utilization"), ceff = tide_csv_col(c, "reserve_effective_gpus");
    for (int i = 0; i < tide_csv_ncols(c); i++) {
        const char *n = tide_csv_colname(c, i);
        if (ctrain < 0 && strstr(n, "train") && (strstr(n, "hour") || strstr(n, "gpuh")))
            ctrain = i;
    }
    char train_col[128] = "";
    if (ctrain >= 0)
        snprintf(train_col, sizeof train_col, "%s", tide_csv_colname(c, ctrain));
    if (cres < 0 || cslo < 0) {
        tide_csv_close(c);
        tide_json_set(out, "note",
                      json_string("sweep.csv has no reserve or slo_attainment column"));
        return out;
    }
    srow_t *rows = NULL;
    size_t n = 0, cap = 0;
    while (tide_report_rows_next(c, cpol, policy)) {
        srow_t x;
        memset(&x, 0, sizeof x);
        const char *pol = cpol >= 0 ? tide_csv_field(c, cpol) : "";
        snprintf(x.policy, sizeof x.policy, "%s", pol);
        if (tide_parse_double(tide_csv_field(c, cres), &x.reserve) < 0)
            continue;
        x.has_slo = tide_parse_double(tide_csv_field(c, cslo), &x.slo) == 0;
        x.has_train = ctrain >= 0 && tide_parse_double(tide_csv_field(c, ctrain), &x.train_h) == 0;
        x.has_lost = clost >= 0 && tide_parse_double(tide_csv_field(c, clost), &x.lost_h) == 0;
        x.has_useful = cuse >= 0 && tide_parse_double(tide_csv_field(c, cuse), &x.useful) == 0;
        x.has_eff = ceff >= 0 && tide_parse_double(tide_csv_field(c, ceff), &x.eff) == 0;
        size_t len = (size_t)snprintf(x.key, sizeof x.key, "%s", pol);
        for (int i = 0; i < tide_csv_ncols(c) && len < sizeof x.key; i++) {
            const char *cn = tide_csv_colname(c, i);
            if (i == cres || i == cpol || is_metric(cn))
                continue;
            len += (size_t)snprintf(x.key + len, sizeof x.key - len, "|%s=%s", cn,
                                    tide_csv_field(c, i));
        }
        if (x.has_slo)
            TIDE_PUSH(rows, n, cap, x);
    }
    tide_csv_close(c);
    if (n)
        qsort(rows, n, sizeof *rows, srow_cmp);
    json_t *steps = json_array(), *rec = json_array();
    tide_json_set(out, "available", json_true());
    tide_json_set(out, "source", json_string("sweep.csv"));
    tide_json_set(out, "training_column", train_col[0] ? json_string(train_col) : json_null());
    for (size_t i = 0; i < n; i++) {
        int last_of_group = i + 1 == n || strcmp(rows[i].key, rows[i + 1].key) != 0;
        if (!last_of_group) {
            json_t *step = reserve_step(&rows[i], &rows[i + 1], gpus, horizon);
            if (!step)
                continue; /* a repeated reserve: no step, and (as ever) no recommendation */
            json_array_append_new(steps, step);
        }
        if (i == 0 || strcmp(rows[i].key, rows[i - 1].key) != 0)
            json_array_append_new(rec, group_recommendation(rows, i, n, o));
    }
    free(rows);
    tide_json_set(out, "steps", steps);
    tide_json_set(out, "recommend", rec);
    return out;
}

json_t *tide_signals_compute(const char *dir, const char *policy, const tide_signals_opts_t *o,
                             tide_error_t *err)
{
    tide_signals_opts_t def;
    tide_signals_opts_default(&def);
    if (!o)
        o = &def;
    if (!(o->preempt_per_day_per_100 >= 0) || !(o->queue_p95_h >= 0) ||
        !(o->queue_gpus_frac >= 0) || !(o->util_low >= 0 && o->util_low <= 1) ||
        !(o->idle_high >= 0 && o->idle_high <= 1) || !(o->slo_target >= 0 && o->slo_target <= 1)) {
        tide_errf(err, TIDE_EINVAL, "capacity thresholds out of range");
        return NULL;
    }
    if (!dir) {
        tide_errf(err, TIDE_EINVAL, "no directory given");
        return NULL;
    }
    json_t *sum = tide_json_load_file(dir, "summary.json", err);
    if (!sum)
        return NULL;
    json_t *pols = json_object_get(sum, "policies");
    if (!json_is_object(pols)) {
        tide_errf(err, TIDE_EINVAL, "%s/summary.json: no 'policies' object", dir);
        json_decref(sum);
        return NULL;
    }
    if (policy && !json_object_get(pols, policy)) {
        tide_errf(err, TIDE_EINVAL, "policy '%s' is not in %s/summary.json", policy, dir);
        json_decref(sum);
        return NULL;
    }
    double gpus = num(sum, "cluster_gpus"), horizon = num(sum, "horizon_s");
    json_t *out = json_object(), *th = json_object(), *po = json_object();
    tide_json_set(th, "preempt_per_day_per_100_gpus", tide_json_real(o->preempt_per_day_per_100));
    tide_json_set(th, "queue_p95_h", tide_json_real(o->queue_p95_h));
    tide_json_set(th, "queue_gpus_fraction", tide_json_real(o->queue_gpus_frac));
    tide_json_set(th, "utilization_low", tide_json_real(o->util_low));
    tide_json_set(th, "idle_high", tide_json_real(o->idle_high));
    tide_json_set(th, "slo_target", tide_json_real(o->slo_target));
    tide_json_set(out, "thresholds", th);
    const char *name;
    json_t *p;
    json_object_foreach(pols, name, p)
    {
        if (policy && strcmp(name, policy) != 0)
            continue;
        if (json_object_get(p, "error")) {
            json_t *x = json_object(), *fs = json_array();
            finding(fs, "error", "info", 0, 0, "the policy failed: %s",
                    json_string_value(json_object_get(p, "error")));
            tide_json_set(x, "findings", fs);
            tide_json_set(po, name, x);
            continue;
        }
        tide_json_set(po, name, policy_signals(dir, name, p, gpus, horizon, o));
    }
    tide_json_set(out, "policies", po);
    tide_json_set(out, "sweep", sweep_signals(dir, policy, gpus, horizon, o));
    json_decref(sum);
    return out;
}

int tide_signals_print(FILE *f, const json_t *sig)
{
    const char *name;
    json_t *p;
    json_object_foreach(json_object_get(sig, "policies"), name, p)
    {
        fprintf(f, "%s:\n", name);
        size_t i;
        json_t *x;
        json_array_foreach(json_object_get(p, "findings"), i, x)
            fprintf(f, "  [%s] %s: %s\n", json_string_value(json_object_get(x, "level")),
                    json_string_value(json_object_get(x, "signal")),
                    json_string_value(json_object_get(x, "message")));
    }
    json_t *sw = json_object_get(sig, "sweep");
    if (json_is_true(json_object_get(sw, "available"))) {
        fprintf(f, "sweep (sweep.csv):\n");
        size_t i;
        json_t *x;
        json_array_foreach(json_object_get(sw, "steps"), i, x)
            fprintf(f, "  %s\n", json_string_value(json_object_get(x, "message")));
        json_array_foreach(json_object_get(sw, "recommend"), i, x)
            fprintf(f, "  => %s\n", json_string_value(json_object_get(x, "message")));
    }
    return ferror(f) ? -1 : 0;
}
