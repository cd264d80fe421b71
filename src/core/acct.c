/* GPU-second accounting by class, state and tier; inference SLO; Tier A
 * breach; the oracle bound. Counters of GPUs per (class, state, tier) change
 * only when an allocation or a phase changes; tide__acct_advance integrates
 * them over time, so the cost per step is constant (the oracle's is
 * logarithmic in the jobs it holds). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

static const int idle_tier[Z_COUNT] = {[Z_RESERVE] = TIDE_T_A, [Z_INF] = TIDE_T_B,
                                       [Z_SHARED] = TIDE_T_B, [Z_TRAIN] = TIDE_T_D};

static int needed_replicas(const service_t *s)
{
    return s->demand > 0 ? tide__ceil_sat(s->demand / s->spec.replica_rps - 1e-9, 0,
                                          tide__replicas_cap(s->spec.gpus_per_replica))
                         : 0;
}

/* ------------------------------------------------------------- the oracle
 * A fluid bound: inference gets exactly its need, the other up GPUs go to the
 * training submitted so far with no gangs, placement, reclaim checkpoints or
 * switching costs, but each job at most at its own width (gpus). Two costs
 * every schedule pays are charged: a job's periodic checkpoints (one of
 * ckpt_s per ckpt_interval_s of training: it occupies its GPUs for them, and
 * they are not training), and the warm-up of inference replicas, with perfect
 * foresight: a replica level that comes back after a gap was either kept
 * through the gap or restarted one warm-up ahead, whichever is cheaper,
 * min(gap, warmup_s) x gpus_per_replica GPU-seconds (a level's first start
 * pays warmup_s; levels up at the first step with `warm_start` pay nothing).
 * That charge is known when the level comes back, and is taken from the
 * spare GPUs from then on (orc_debt). When the jobs present
 * want more than the spare GPUs, every job runs at the same fraction f of its
 * width (processor sharing), so all of them advance by f x dt full-width
 * seconds: one virtual clock V (integral of f) serves them all, and a job
 * submitted at V0 with duration d is done when V reaches V0 + d. A min-heap
 * of those finishing points keeps the cost per step logarithmic. */

static void orc_sift_up(oracle_job_t *h, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h[p].vf <= h[i].vf)
            break;
        oracle_job_t t = h[p];
        h[p] = h[i];
        h[i] = t;
        i = p;
    }
}

static void orc_sift_down(oracle_job_t *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && h[l].vf < h[m].vf)
            m = l;
        if (l + 1 < n && h[l + 1].vf < h[m].vf)
            m = l + 1;
        if (m == i)
            return;
        oracle_job_t t = h[m];
        h[m] = h[i];
        h[i] = t;
        i = m;
    }
}

void tide__oracle_submit(tide_engine_t *e, const tide_job_spec_t *sp)
{
    if (sp->duration_s <= 0 || sp->gpus <= 0)
        return;
    double d = (double)sp->duration_s, occ = d;
    if (sp->ckpt_interval_s > 0) /* checkpoints strictly inside the run */
        occ += (double)((sp->duration_s - 1) / sp->ckpt_interval_s) * (double)sp->ckpt_s;
    oracle_job_t x = {.vf = e->orc_v + occ, .gpus = sp->gpus, .useful = sp->gpus * d / occ};
    TIDE_PUSH(e->orc, e->orc_n, e->orc_cap, x);
    orc_sift_up(e->orc, e->orc_n - 1);
    e->orc_width += sp->gpus;
    e->orc_useful += x.useful;
}

/* Training GPU-seconds the fluid does in dt seconds with `spare` GPUs. */
static double oracle_train(tide_engine_t *e, double spare, double dt)
{
    double work = 0;
    while (dt > 0 && spare > 0 && e->orc_n > 0) {
        double c = (double)e->orc_width;
        double f = spare < c ? spare / c : 1.0;
        double dv = e->orc[0].vf - e->orc_v; /* virtual time to the next finish */
        if (dv > f * dt) {
            e->orc_v += f * dt;
            work += f * e->orc_useful * dt;
            break;
        }
        double t1 = dv > 0 ? dv / f : 0;
        work += f * e->orc_useful * t1;
        dt -= t1;
        e->orc_v = e->orc[0].vf;
        while (e->orc_n > 0 && e->orc[0].vf <= e->orc_v) {
            e->orc_width -= e->orc[0].gpus;
            e->orc_useful -= e->orc[0].useful;
            if (e->orc_n == 1)
                e->orc_useful = 0; /* no rounding residue */
            e->orc[0] = e->orc[--e->orc_n];
            orc_sift_down(e->orc, e->orc_n, 0);
        }
    }
    return work;
}

/* Warm-up GPU-seconds the fluid pays for service s going from its last
 * need to `need` replicas at e->now (see the oracle above). */
static double orc_levels(tide_engine_t *e, service_t *s, int need)
{
    if ((size_t)need > s->orc_off_cap) {
        size_t old = s->orc_off_cap;
        tide_grow((void **)&s->orc_off, &s->orc_off_cap, (size_t)need, sizeof *s->orc_off);
        for (size_t k = old; k < s->orc_off_cap; k++)
            s->orc_off[k] = ORC_NEVER;
    }
    double w = (double)s->spec.warmup_s, rs = 0;
    for (int k = need; k < s->orc_need; k++)
        s->orc_off[k] = e->now;
    for (int k = s->orc_need; k < need; k++) {
        tide_time_t off = s->orc_off[k];
        if (off != ORC_NEVER)
            rs += (double)(e->now - off) < w ? (double)(e->now - off) : w;
        else if (!(e->cfg.warm_start && e->now == e->start))
            rs += w;
    }
    s->orc_need = need;
    return rs * s->spec.gpus_per_replica;
}

/* Add delta GPUs to counter cell (cls, state, tier), keeping cnt_nz. */
static inline void cnt_add(tide_engine_t *e, int cls, int state, int tier, int delta)
{
    unsigned k = (unsigned)((cls * TIDE_S_COUNT + state) * TIDE_T_COUNT + tier);
    int *c = &e->cnt[0][0][0] + k;
    *c += delta;
    uint64_t bit = 1ull << (k % 64);
    if (*c)
        e->cnt_nz[k / 64] |= bit;
    else
        e->cnt_nz[k / 64] &= ~bit;
}

void tide__acct_advance(tide_engine_t *e, tide_time_t now)
{
    double dt = (double)(now - e->now);
    if (dt <= 0)
        return;
    tide_stats_t *st = &e->st;
    /* the counters as one flat array, without a branch per cell: a zero
     * cell adds +0.0, which leaves its sum (never -0.0) as it was */
    const int *cnt = &e->cnt[0][0][0];
    double *acc = &st->gpu_s[0][0][0];
    int borrowed = 0;
    /* only the non-zero cells (cnt_nz): a zero cell would add +0.0, which
     * leaves its sum (never -0.0) as it was, so skipping it changes no bit */
    for (int w = 0; w < ACCT_CELL_WORDS; w++)
        for (uint64_t m = e->cnt_nz[w]; m; m &= m - 1) {
            int k = w * 64 + __builtin_ctzll(m);
            acc[k] += cnt[k] * dt;
            if (k % TIDE_T_COUNT == TIDE_T_C)
                borrowed += cnt[k];
        }
    st->borrowed_gpu_s += borrowed * dt;
    for (int z = 0; z < Z_COUNT; z++) {
        if (e->zone_free[z])
            st->gpu_s[TIDE_C_NONE][TIDE_S_IDLE][idle_tier[z]] += e->zone_free[z] * dt;
        /* GPUs on nodes that are down are idle, and never part of the reserve */
        int down = e->zone_total[z] - e->zone_gpus[z] - e->zone_cut[z];
        if (down)
            st->gpu_s[TIDE_C_NONE][TIDE_S_IDLE][z == Z_RESERVE ? TIDE_T_B : idle_tier[z]] += down * dt;
    }
    if (e->reserve_short > 0)
        st->tier_a_breach_gpu_s += e->reserve_short * dt;
    /* the teams' GPU-seconds: lazily (tide__team_gpu_s) */

    int need_inf = 0;
    for (int i = 0; i < e->n_svcs; i++) {
        service_t *s = &e->svcs[i];
        if (s->demand != s->acct_dem) {
            s->acct_dem = s->demand;
            s->acct_need = needed_replicas(s);
        }
        int need = s->acct_need;
        int useful = TIDE_MIN(s->ready, need);
        st->useful_serving_gpu_s += (double)useful * s->spec.gpus_per_replica * dt;
        st->requests_demanded += s->demand * dt;
        double cap = s->ready * s->spec.replica_rps;
        double served = (s->demand < cap ? s->demand : cap) * dt;
        st->requests_served += served;
        tide__fc_served(&s->fc, dt, s->demand * dt, served);
        need_inf += need * s->spec.gpus_per_replica;
        /* an unchanged need owes no warm-up: orc_levels would add +0.0 to
         * orc_debt (never -0.0), which leaves it as it was */
        if (need != s->orc_need)
            e->orc_debt += orc_levels(e, s, need);
    }
    int up = 0;
    for (int z = 0; z < Z_COUNT; z++)
        up += e->zone_gpus[z];
    if (need_inf > up)
        need_inf = up;
    /* warm-up owed comes out of the spare GPUs first */
    double spare = (double)(up - need_inf), pay = spare * dt < e->orc_debt ? spare * dt : e->orc_debt;
    e->orc_debt -= pay;
    st->oracle_gpu_s += need_inf * dt + oracle_train(e, spare - pay / dt, dt);

    if (e->queue_gpus > 0) {
        unsigned tz = tide__train_zones_now(e, e->now);
        int idle = 0;
        for (int z = 0; z < Z_COUNT; z++)
            if (tz & ZBIT(z))
                idle += e->zone_free[z];
        st->idle_while_queued_gpu_s += (double)TIDE_MIN(idle, e->queue_gpus) * dt;
    }
}


static void cnt_bits(const tide_engine_t *e, uint64_t *nz)
{
    const int *cnt = &e->cnt[0][0][0];
    memset(nz, 0, ACCT_CELL_WORDS * sizeof *nz);
    for (int k = 0; k < ACCT_CELLS; k++)
        if (cnt[k])
            nz[k / 64] |= 1ull << (k % 64);
}

void tide__acct_cnt_rebuild(tide_engine_t *e) { cnt_bits(e, e->cnt_nz); }

int tide__acct_cnt_bad(const tide_engine_t *e)
{
    uint64_t nz[ACCT_CELL_WORDS];
    cnt_bits(e, nz);
    return memcmp(nz, e->cnt_nz, sizeof nz) != 0;
}

static int job_state_of(const job_t *j)
{
    switch (j->phase) {
    case TIDE_PHASE_RESTORING: return TIDE_S_RESTORING;
    case TIDE_PHASE_CHECKPOINTING: return TIDE_S_CHECKPOINTING;
    default: return TIDE_S_TRAINING;
    }
}

void tide__lc_add(lc_t *c, tide_time_t now, int delta)
{
    if (now > c->t)
        c->acc += (double)c->n * (double)(now - c->t);
    c->t = now;
    c->n += delta;
}

static lc_t *team_cell(const tide_engine_t *e, const team_t *t, int cls, int st, int tier, int type)
{
    return &t->cells[((cls * TIDE_S_COUNT + st) * TIDE_T_COUNT + tier) * e->n_types + type];
}

void tide__acct_foreign(tide_engine_t *e, const domain_t *d, int delta)
{
    int tier = idle_tier[d->zone];
    int type = d->type >= 0 && d->type < e->n_types ? d->type : 0;
    cnt_add(e, TIDE_C_NONE, TIDE_S_FOREIGN, tier, delta);
    tide__lc_add(&e->foreign_cells[tier * e->n_types + type], e->now, delta);
}

/* A training job's GPU-seconds since tr_at, lent and not, into tr_c and
 * tr_d (what leaving the accounting banks). */
static void bank_training(const tide_engine_t *e, job_t *j)
{
    if (j->acct_state == TIDE_S_TRAINING && e->now > j->tr_at) {
        double dt = (double)(e->now - j->tr_at);
        j->tr_c += dt * j->n_leased;
        j->tr_d += dt * (j->alloc.n - j->n_leased);
        j->tr_at = e->now;
    }
}

void tide__acct_job_set(tide_engine_t *e, job_t *j, int on)
{
    int sign = on ? 1 : -1;
    (on ? tide__power_job_on : tide__power_job_off)(e, j);
    if (on) {
        j->acct_state = job_state_of(j);
        j->acct_tier_own = TIDE_T_D;
        j->tr_at = e->now;
    } else {
        bank_training(e, j);
    }
    cnt_add(e, j->cls, j->acct_state, TIDE_T_C, sign * j->n_leased);
    cnt_add(e, j->cls, j->acct_state, j->acct_tier_own, sign * (j->alloc.n - j->n_leased));
    team_t *t = &e->teams[j->team];
    tide__team_usage_update(e, t);
    t->gpus_now += sign * j->alloc.n;
    unsigned lz = j->n_leased ? e->pol->lease_zones : 0;
    /* One cell update per run of GPUs in the same domain (an allocation
     * lists a domain's GPUs together). Adding the run's count at once gives
     * the same bits as one call per GPU: all calls share e->now, so only
     * the first integrates (n * dt); the later ones see dt = 0 and add
     * nothing to acc, and integer counts sum exactly. */
    const int32_t *g = j->alloc.gpus;
    int n = j->alloc.n, di = n ? dom_of_gpu(e, g[0]) : 0;
    for (int k = 0, next; k < n; k = next) {
        int nd = di; /* the domain of g[next], read once */
        for (next = k + 1; next < n && (nd = dom_of_gpu(e, g[next])) == di;)
            next++;
        const domain_t *d = &e->doms[di];
        int tier = (lz & ZBIT(d->zone)) ? TIDE_T_C : j->acct_tier_own;
        int delta = on ? next - k : k - next;
        t->used[d->type] += delta;
        tide__lc_add(team_cell(e, t, j->cls, j->acct_state, tier, d->type), e->now, delta);
        di = nd;
    }
}

/* The first half of tide__acct_job_set(e, j, 0) on a job that will keep its
 * GPUs, leased count, team and class: its draw leaves the power totals and
 * its training GPU-seconds since tr_at are banked; its counters and cells
 * stay where they are until tide__acct_job_resume moves them. */
void tide__acct_job_pause(tide_engine_t *e, job_t *j)
{
    tide__power_job_off(e, j);
    bank_training(e, j);
}

/* Ends tide__acct_job_pause: the same sums to the bit as the pair
 * tide__acct_job_set(e, j, 0) ... (e, j, 1) when only the job's phase,
 * progress or cap changed in between, with one walk of its domain runs
 * and no change of the team's GPU count. Each cell is integrated to now by
 * its first touch (with the count it had before, as in the pair: the
 * cells of the old and the new state are apart unless they are the same
 * cell, which then goes -d, +d); counts are integers, so the order of the
 * moves changes no bit. The team's usage is brought to now once (the
 * pair's second update is a no-op at the same time). */
void tide__acct_job_resume(tide_engine_t *e, job_t *j)
{
    tide__power_job_on(e, j);
    int old_st = j->acct_state, old_own = j->acct_tier_own;
    int new_st = job_state_of(j), new_own = TIDE_T_D;
    j->acct_state = (int8_t)new_st;
    j->acct_tier_own = (int8_t)new_own;
    j->tr_at = e->now;
    int nl = j->n_leased, nu = j->alloc.n - j->n_leased;
    /* a move of 0 leaves a counter and its bit as they are */
    if ((old_st != new_st || old_own != new_own) && nu) {
        cnt_add(e, j->cls, old_st, old_own, -nu);
        cnt_add(e, j->cls, new_st, new_own, nu);
    }
    if (old_st != new_st && nl) {
        cnt_add(e, j->cls, old_st, TIDE_T_C, -nl);
        cnt_add(e, j->cls, new_st, TIDE_T_C, nl);
    }
    team_t *t = &e->teams[j->team];
    tide__team_usage_update(e, t);
    unsigned lz = j->n_leased ? e->pol->lease_zones : 0;
    const int32_t *g = j->alloc.gpus;
    int n = j->alloc.n, di = n ? dom_of_gpu(e, g[0]) : 0;
    for (int k = 0, next; k < n; k = next) {
        int nd = di;
        for (next = k + 1; next < n && (nd = dom_of_gpu(e, g[next])) == di;)
            next++;
        const domain_t *d = &e->doms[di];
        int leased = (lz & ZBIT(d->zone)) != 0;
        int delta = next - k;
        lc_t *from = team_cell(e, t, j->cls, old_st, leased ? TIDE_T_C : old_own, d->type);
        lc_t *to = team_cell(e, t, j->cls, new_st, leased ? TIDE_T_C : new_own, d->type);
        tide__lc_add(from, e->now, -delta);
        tide__lc_add(to, e->now, delta);
        di = nd;
    }
}

void tide__acct_rep_set(tide_engine_t *e, replica_t *r, int on)
{
    int sign = on ? 1 : -1;
    int st = r->rehearsal ? TIDE_S_REHEARSING
             : r->state == REP_READY ? TIDE_S_SERVING : TIDE_S_WARMING;
    cnt_add(e, TIDE_C_INFERENCE, st, r->tier, sign * r->alloc.n);
    if (r->alloc.n) {
        int type = e->doms[dom_of_gpu(e, r->alloc.gpus[0])].type;
        service_t *s = &e->svcs[r->service];
        tide__lc_add(&s->cells[(st * TIDE_T_COUNT + r->tier) * e->n_types + type], e->now,
               sign * r->alloc.n);
    }
}

/* Work thrown away moves from training to lost, in each tier in proportion
 * to the training GPU-seconds the job spent there since its last commit (a
 * job may hold lent and unlent GPUs, and change width meanwhile). */
void tide__acct_lost(tide_engine_t *e, job_t *j, double lost_progress)
{
    if (lost_progress <= 0)
        return;
    double x = lost_progress * j->spec.gpus;
    double part[TIDE_T_COUNT] = {0};
    double tr = j->tr_c + j->tr_d;
    if (tr > 0)
        part[TIDE_T_C] = x * j->tr_c / tr;
    else if (j->alloc.n > 0)
        part[TIDE_T_C] = x * j->n_leased / j->alloc.n;
    part[TIDE_T_D] = x - part[TIDE_T_C];
    /* never more than the training the books hold: the work thrown away was
     * counted as training first (reports that arrive late, e.g. after tide
     * was down, can claim more than the engine saw) */
    x = 0;
    for (int tier = 0; tier < TIDE_T_COUNT; tier++) {
        double have = e->st.gpu_s[j->cls][TIDE_S_TRAINING][tier];
        if (part[tier] > have)
            part[tier] = have > 0 ? have : 0;
        x += part[tier];
    }
    if (x <= 0)
        return;
    int type = j->alloc.n ? e->doms[dom_of_gpu(e, j->alloc.gpus[0])].type : 0;
    team_t *t = &e->teams[j->team];
    for (int tier = 0; tier < TIDE_T_COUNT; tier++) {
        if (part[tier] == 0)
            continue;
        e->st.gpu_s[j->cls][TIDE_S_TRAINING][tier] -= part[tier];
        e->st.gpu_s[j->cls][TIDE_S_LOST][tier] += part[tier];
        team_cell(e, t, j->cls, TIDE_S_TRAINING, tier, type)->acc -= part[tier];
        team_cell(e, t, j->cls, TIDE_S_LOST, tier, type)->acc += part[tier];
    }
    j->lost_gpu_s += x;
    t->lost_gpu_s += x;
    e->st.lost_gpu_s += x;
}

void tide__samples_add(samples_t *s, double v)
{
    TIDE_PUSH(s->v, s->n, s->cap, v);
    s->win[s->win_pos] = v;
    s->win_pos = (s->win_pos + 1) % SAMPLE_WINDOW;
    if (s->win_n < SAMPLE_WINDOW)
        s->win_n++;
    s->fresh++;
}

double tide__samples_q99(samples_t *s)
{
    if (!s->win_n)
        return 0;
    if (s->fresh) {
        if (s->fresh < 16 && s->win_n > 64)
            return s->q99;
        double tmp[SAMPLE_WINDOW];
        memcpy(tmp, s->win, s->win_n * sizeof *tmp);
        size_t k = (size_t)ceil(0.99 * (double)s->win_n);
        s->q99 = tide_select(tmp, s->win_n, k ? k - 1 : 0);
        s->fresh = 0;
    }
    return s->q99;
}

double tide_engine_lost_gpu_s(const tide_engine_t *e) { return e->st.lost_gpu_s; }
