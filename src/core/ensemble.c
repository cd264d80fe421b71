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
 * seen, and each rule drives a small model of the engine's replica loop, as
 * if that rule sized the service (ens_engine; infer.c's pass): replicas
 * start up to the need (and the demand seen) on free GPUs at once, else by
 * a reclaim that frees its GPUs one checkpoint later and starts them only
 * if the need still asks for them then; a replica serves one warm-up after
 * its start; capacity above the highest need of the scale-down hold (and
 * the demand reacted to within a lead) is stopped, warming replicas first;
 * whole replicas within min and max. Each interval between ticks is scored
 * with the demand of its start against the capacity each model had ready
 * then. Until session 10 a rule's capacity was its highest proposal over
 * the hold ending one warm-up and a tick ago: right where GPUs are free
 * (servegen), but on minute bursts in a full cluster it counted every
 * one-minute burst as met one warm-up later and held for the whole hold,
 * where the engine, which must reclaim, drops the claim when the burst is
 * gone (diurnal-bursts: 0.01-0.03% of requests missed by observed + 15%
 * against 0.06-0.7% in a run following it). Cost = capacity held (ready and
 * warming) x seconds, plus (lead - warm-up) of every capacity started (the
 * checkpoint and restore of the training stopped for it), decayed with
 * half-life a day; misses = demand above ready capacity x seconds. Misses
 * (and the demand they are a share of) decay with the SLO period's
 * half-life (`period`): a miss is a rare event, and a quiet day made every
 * rule look safe. Only the past is read.
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

/* One tick of rule r's counterfactual engine, as the engine's infer pass
 * runs (infer.c: targets, tide__infer_pass, hold_forecast, reclaim_for):
 * up = the rule's need and at least the demand seen now; replicas start
 * to up on free GPUs at once, the rest are claimed from training and start
 * when the claim's GPUs come free (`wait` after the claim) if the need
 * still asks for them (a claim the need no longer asks for is dropped:
 * the engine does; a one-minute burst is not met by a reclaim that takes a
 * minute); capacity above the highest need of the hold window, the demand
 * reacted to within one lead and up is stopped, warming replicas (the
 * newest) first; a replica serves `delay` after its start (starts are
 * remembered ENS_WARM ticks: a longer warm-up counts as ready then).
 * Returns the capacity started now. */
static double ens_engine(forecast_t *f, int r, tide_time_t now, const tide_ens_win_t *w)
{
    const struct fc_ens_prop *p0 = &f->ens_prop[(f->ens_pos + ENS_RING - 1) % ENS_RING];
    struct fc_ens_cf *c = &f->ens_cf[r];
    double down = ens_round(w, p0->need[r]), dn = ens_round(w, p0->dem);
    double up = dn > down ? dn : down;
    if (f->ens_last[r] < 0) { /* the first tick: as the engine starts, ready */
        f->ens_last[r] = c->rdy = up;
        c->claim = 0;
        return 0;
    }
    double act = f->ens_last[r], started = 0;
    double n = up - act;
    if (n > 0) {
        double ripe = c->claim > 0 && (w->wait <= 0 || now - c->claim_t >= w->wait) ? c->claim : 0;
        double room = w->wait <= 0 ? n : (w->free > 0 ? w->free : 0) + ripe;
        started = n < room ? n : room;
        c->claim -= started < ripe ? started : ripe;
        n -= started;
        act += started;
    }
    if (n < 0)
        n = 0;
    if (c->claim > n)
        c->claim = n; /* dropped: the need no longer asks for it */
    else if (n > c->claim) {
        if (!(c->claim > 0))
            c->claim_t = now;
        c->claim = n;
    }
    /* what the hold keeps: the highest need of the hold window, the demand
     * reacted to (above the need) within one lead, and up */
    double keep = up, warming = 0;
    tide_time_t span = w->hold > w->lead ? w->hold : w->lead;
    if (w->delay > span)
        span = w->delay;
    for (size_t i = 0; i < f->ens_n; i++) {
        struct fc_ens_prop *p = &f->ens_prop[(f->ens_pos + ENS_RING - 1 - i) % ENS_RING];
        tide_time_t age = now - p->t;
        if (i > 0 && age >= span)
            break;
        double d = ens_round(w, p->need[r]), o = ens_round(w, p->dem);
        if ((age < w->hold || i == 0) && d > keep)
            keep = d;
        if ((age < w->lead || i == 0) && o > d && o > keep)
            keep = o;
    }
    c->warm_pos = (c->warm_pos + 1) % ENS_WARM;
    c->warm_t[c->warm_pos] = now;
    c->warm[c->warm_pos] = started;
    double x = act > keep ? act - keep : 0;
    act -= x;
    for (int i = 0; i < ENS_WARM; i++) { /* warming, newest first */
        int k = (c->warm_pos + ENS_WARM - i) % ENS_WARM;
        if (c->warm_t[k] < 0 || now - c->warm_t[k] >= w->delay)
            break;
        double take = x < c->warm[k] ? x : c->warm[k];
        c->warm[k] -= take;
        x -= take;
        warming += c->warm[k];
    }
    f->ens_last[r] = act;
    f->ens_cf[r].rdy = act > warming ? act - warming : 0;
    return started;
}

/* The interval since the last score: the demand of the last proposal
 * against each rule's ready capacity then; cost = capacity held. */
static void ens_score(forecast_t *f, tide_time_t now, const tide_ens_win_t *w)
{
    double dt = f->ens_at >= 0 ? (double)(now - f->ens_at) : 0;
    f->ens_at = now;
    if (!(dt > 0) || !f->ens_n || f->ens_last[0] < 0)
        return;
    double x = f->ens_prop[(f->ens_pos + ENS_RING - 1) % ENS_RING].dem;
    double d = exp(-dt * 0.6931471805599453 / ENS_HL_S);
    double dm = w->period > 0 ? exp(-dt * 0.6931471805599453 / (double)w->period) : d;
    f->ens_dem = f->ens_dem * dm + x * dt;
    f->ens_dur = f->ens_dur * d + dt;
    f->ens_durp = f->ens_durp * dm + dt;
    for (int r = 0; r < ENS_RULES; r++) {
        double c = f->ens_cf[r].rdy;
        f->ens_cost[r] = f->ens_cost[r] * d + f->ens_last[r] * dt;
        f->ens_miss[r] = f->ens_miss[r] * dm + (x > c ? x - c : 0) * dt;
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
    int scored = tide__fc_day_seen(f);
    if (scored)
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

    /* capacity started costs the training stopped for it (checkpoint,
     * restore) beyond its warm-up, which the capacity held counts */
    double extra = w->lead > w->delay ? (double)(w->lead - w->delay) : 0;
    for (int r = 0; r < ENS_RULES; r++) {
        double st = ens_engine(f, r, now, w);
        if (scored)
            f->ens_cost[r] += st * extra;
    }
    f->ens_pick = tide__ens_choose(f, budget, w->slo);
}

int tide__ensemble_on(const tide_engine_t *e)
{
    return e->cfg.sizing_ensemble && e->pol->ensemble && e->pol->scale_mode == SCALE_FORECAST;
}
