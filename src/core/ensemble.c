/* Sizing ensemble: several sizing rules are scored every tick on what they
 * WOULD have cost and missed, and the one of least cost + price x misses
 * above the SLO's aim sizes the service. The same move the forecast makes when it picks the
 * week-ago shape or the 3-day median by running error, one level up.
 *
 * Rules (a table): the forecast (baseline peak over the lead x the learned
 * burst multiplier, tide__fc_need), observed demand x (1 + h) for a few h (an
 * autoscaler's utilisation targets; which h is learned by the scoring, not
 * set), and the larger of the forecast and observed x 1.25.
 *
 * Counterfactual. Every tick each rule's proposal is recorded with the demand
 * seen. At time t, a rule's capacity is what the engine would hold had it
 * followed that rule, with capacity arriving as late as the engine really
 * brings it on a rise it reacts to (`delay`: the P99 warm-up and a tick; the
 * warm-up lead's safety term lead_extra_s and its measured lateness are the
 * forecast's margins, not how late capacity comes, and counted in they made
 * every observed rule look 2-10x worse than a real run following it): its
 * highest proposal over the scale-down hold ending one delay ago (the hold
 * keeps it) and the highest demand of the lead before that (the engine
 * reacts to the demand it sees, and keeps that for a lead), in whole
 * replicas within min and max as the engine rounds. Cost = that capacity x
 * seconds, plus one lead of every capacity added (warm-up, and the
 * checkpoint and restore of the training stopped for it); misses = demand
 * above it x seconds. Costs decay with half-life a day; misses (and the
 * demand they are a share of) with the SLO period's (`period`): a miss is
 * a rare event, and a quiet day made every rule look safe (on servegen the
 * cheapest, observed + 10%, was picked after one and missed 0.2% of the
 * next day's requests). Only proposals made
 * at least one delay ago are read: no look-ahead.
 *
 * Choice (a Lagrangian: cost and misses priced in one unit). Each rule's
 * score is its cost rate (capacity held, rps, over the day's half-life) plus
 * lambda x the rate of its counterfactual misses above what the SLO's aim
 * allows (rps, over the SLO period; the engine passes tide__fc_aim: a share
 * of 1 - slo_target less what the period overspent, measured, so the
 * allowance shrinks after a cold start or a surge and grows back as it is
 * paid for). lambda = 1 / (1 - slo_target), the price at which one more
 * unit of capacity is worth holding while demand exceeds it more often than
 * the budget (the newsvendor ratio of a miss against capacity); it is not
 * tuned. Misses within the aim cost nothing (an exact penalty of the
 * constraint "misses <= aim"): rules that meet it compete on cost alone,
 * and where none does the one that buys its misses back cheapest wins,
 * which a hard allowance never lets an observed rule do after a surge.
 * The lowest score is used; the rule in use is kept unless another one
 * scores ENS_SWITCH of it or less (hysteresis), and the forecast is used
 * until ENS_MIN_S of demand was scored. */
#include <math.h>

#include "core/internal.h"

#define ENS_HL_S 86400.0   /* half-life of the scores */
#define ENS_MIN_S 62324.0  /* decayed seconds scored before any other rule is used:
                              a day (a day at half-life a day: HL / ln 2 / 2) */
#define ENS_SWITCH 0.97    /* another rule must cost this much of the current one or less */

static const struct ens_rule {
    const char *name;
    int forecast;    /* includes the forecast need */
    double headroom; /* observed x (1 + headroom); < 0: none */
} rules[ENS_RULES] = {
    {"forecast", 1, -1},
    {"observed+5%", 0, 0.05},
    {"observed+10%", 0, 0.10},
    {"observed+15%", 0, 0.15},
    {"observed+20%", 0, 0.20},
    {"observed+25%", 0, 0.25},
    {"observed+30%", 0, 0.30},
    {"observed+40%", 0, 0.40},
    {"observed+50%", 0, 0.50},
    {"observed+75%", 0, 0.75},
    {"observed+100%", 0, 1.00},
    {"max(forecast,observed+10%)", 1, 0.10},
    {"max(forecast,observed+25%)", 1, 0.25},
};

const char *tide__ens_rule_name(int rule)
{
    return rule >= 0 && rule < ENS_RULES ? rules[rule].name : NULL;
}

double tide__ens_need(forecast_t *f, int rule, tide_time_t now, tide_time_t horizon)
{
    if (rule < 0 || rule >= ENS_RULES)
        rule = 0;
    const struct ens_rule *r = &rules[rule];
    double n = r->forecast ? tide__fc_need(f, now, horizon, 0) : 0;
    if (r->headroom >= 0 && f->cur * (1.0 + r->headroom) > n)
        n = f->cur * (1.0 + r->headroom);
    return n;
}

/* Capacity as the engine holds it: whole replicas, within min and max. */
static double ens_round(const tide_ens_win_t *w, double c)
{
    if (w->unit > 0)
        c = c > 0 ? ceil(c / w->unit - 1e-9) * w->unit : 0;
    if (c < w->lo)
        c = w->lo;
    if (w->hi > 0 && c > w->hi)
        c = w->hi;
    return c;
}

/* Capacity each rule would hold now (cap[]); 0 when no proposal is one
 * delay old yet. */
static int ens_capacity(const forecast_t *f, tide_time_t now, const tide_ens_win_t *w, double *cap)
{
    tide_time_t lead = w->lead, hold = w->hold, delay = w->delay;
    int any = 0;
    double dem = 0;
    tide_time_t top = -1; /* age of the newest proposal at least one lead old */
    for (int r = 0; r < ENS_RULES; r++)
        cap[r] = 0;
    for (size_t i = 0; i < f->ens_n; i++) {
        const struct fc_ens_prop *p = &f->ens_prop[(f->ens_pos + ENS_RING - 1 - i) % ENS_RING];
        tide_time_t age = now - p->t;
        if (age < delay)
            continue;
        if (any && age >= delay + hold && age >= delay + lead)
            break;
        if (!any)
            top = age;
        any = 1;
        if ((age < delay + lead || age == top) && p->dem > dem)
            dem = p->dem;
        if (age < delay + hold || age == top)
            for (int r = 0; r < ENS_RULES; r++)
                if (p->need[r] > cap[r])
                    cap[r] = p->need[r];
    }
    for (int r = 0; r < ENS_RULES; r++)
        cap[r] = ens_round(w, dem > cap[r] ? dem : cap[r]);
    return any;
}

static void ens_score(forecast_t *f, tide_time_t now, const tide_ens_win_t *w)
{
    double dt = f->ens_at >= 0 ? (double)(now - f->ens_at) : 0;
    f->ens_at = now;
    double cap[ENS_RULES];
    if (!(dt > 0) || !ens_capacity(f, now, w, cap))
        return;
    double d = exp(-dt * 0.6931471805599453 / ENS_HL_S), x = f->cur;
    double dm = w->period > 0 ? exp(-dt * 0.6931471805599453 / (double)w->period) : d;
    f->ens_dem = f->ens_dem * dm + x * dt;
    f->ens_dur = f->ens_dur * d + dt;
    f->ens_durp = f->ens_durp * dm + dt;
    for (int r = 0; r < ENS_RULES; r++) {
        /* capacity added costs one lead of it (warm-up, and the training
         * stopped for it loses its checkpoint and restore) */
        double add = f->ens_last[r] >= 0 && cap[r] > f->ens_last[r] ? cap[r] - f->ens_last[r] : 0;
        f->ens_last[r] = cap[r];
        f->ens_cost[r] = f->ens_cost[r] * d + cap[r] * dt + add * (double)w->lead;
        f->ens_miss[r] = f->ens_miss[r] * dm + (x > cap[r] ? x - cap[r] : 0) * dt;
    }
}

int tide__ens_choose(const forecast_t *f, double aim, double slo_target)
{
    if (f->ens_dur < ENS_MIN_S || !(f->ens_dem > 0) || !(f->ens_durp > 0))
        return 0;
    double b = 1.0 - slo_target;
    double lambda = 1.0 / (b < 1e-6 ? 1e-6 : b);
    double allow = aim * f->ens_dem / f->ens_durp; /* misses (rps) the aim allows */
    double sc[ENS_RULES];
    int best = 0;
    for (int r = 0; r < ENS_RULES; r++) {
        double over = f->ens_miss[r] / f->ens_durp - allow;
        sc[r] = f->ens_cost[r] / f->ens_dur + lambda * (over > 0 ? over : 0);
        if (sc[r] < sc[best])
            best = r;
    }
    int cur = f->ens_pick;
    if (cur != best && sc[best] > ENS_SWITCH * sc[cur])
        return cur;
    return best;
}

void tide__ens_learn(forecast_t *f, tide_time_t now, const tide_ens_win_t *w, double budget)
{
    if (!f->have)
        return;
    if (f->ens_n && f->ens_prop[(f->ens_pos + ENS_RING - 1) % ENS_RING].t >= now)
        return; /* once per time */
    /* the forecast's cold start (no day of history yet) says nothing of
     * how it forecasts now: scoring starts once it has a day */
    if (tide__fc_day_seen(f))
        ens_score(f, now, w);
    else
        f->ens_at = now;
    struct fc_ens_prop *p = &f->ens_prop[f->ens_pos];
    p->t = now;
    p->dem = f->cur;
    for (int r = 0; r < ENS_RULES; r++)
        p->need[r] = tide__ens_need(f, r, now, w->lead);
    f->ens_pos = (f->ens_pos + 1) % ENS_RING;
    if (f->ens_n < ENS_RING)
        f->ens_n++;
    f->ens_pick = tide__ens_choose(f, budget, w->slo);
}

int tide__ensemble_on(const tide_engine_t *e)
{
    return e->cfg.sizing_ensemble && e->pol->ensemble && e->pol->scale_mode == SCALE_FORECAST;
}
