/* Governance: teams, prices, fair share; applying them to an engine. */
#include "formats/governance.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

static const char *const cost_names[TIDE_COST_COUNT] = {"reserved", "serving", "training",
                                                        "lent",     "lost",    "idle"};
static const char *const owner_names[TIDE_OWNER_COUNT] = {"team", "service", "idle", "foreign"};

const char *tide_cost_name(int cat)
{
    return cat >= 0 && cat < TIDE_COST_COUNT ? cost_names[cat] : "unknown";
}

int tide_cost_find(const char *name)
{
    for (int i = 0; name && i < TIDE_COST_COUNT; i++)
        if (!strcmp(cost_names[i], name))
            return i;
    return -1;
}

const char *tide_owner_kind_name(int kind)
{
    return kind >= 0 && kind < TIDE_OWNER_COUNT ? owner_names[kind] : "unknown";
}

int tide_owner_kind_find(const char *name)
{
    for (int i = 0; name && i < TIDE_OWNER_COUNT; i++)
        if (!strcmp(owner_names[i], name))
            return i;
    return -1;
}

int tide_cost_category(int kind, int state, int tier)
{
    if (tier < 0 || tier >= TIDE_T_COUNT)
        return -1;
    switch (kind) {
    case TIDE_OWNER_TEAM:
        if (state == TIDE_S_LOST)
            return TIDE_COST_LOST;
        if (state != TIDE_S_TRAINING && state != TIDE_S_CHECKPOINTING &&
            state != TIDE_S_RESTORING)
            return -1;
        return tier == TIDE_T_C ? TIDE_COST_LENT : TIDE_COST_TRAINING;
    case TIDE_OWNER_SERVICE:
        return state == TIDE_S_SERVING || state == TIDE_S_WARMING ? TIDE_COST_SERVING : -1;
    case TIDE_OWNER_IDLE:
        if (state != TIDE_S_IDLE)
            return -1;
        return tier == TIDE_T_A ? TIDE_COST_RESERVED : TIDE_COST_IDLE;
    default:
        return -1;
    }
}

void tide_governance_init(tide_governance_t *g, const tide_cluster_t *c)
{
    memset(g, 0, sizeof *g);
    g->fairshare = -1;
    if (!c)
        return;
    int n = tide_cluster_types(c);
    if (n > TIDE_MAX_GPU_TYPES)
        n = TIDE_MAX_GPU_TYPES;
    for (int k = 0; k < n; k++) {
        const char *name = tide_cluster_type_name(c, k);
        snprintf(g->type_names[k], sizeof g->type_names[k], "%s", name ? name : "gpu");
    }
    g->n_types = n;
}

void tide_governance_free(tide_governance_t *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n_teams; i++)
        free((char *)g->teams[i].name);
    free(g->teams);
    free(g->team_lines);
    tide_governance_init(g, NULL);
}

int tide_governance_qos(const tide_governance_t *g, const char *name)
{
    for (int i = 0; g && name && i < g->n_qos; i++)
        if (!strcmp(g->qos_names[i], name))
            return g->qos_prio[i];
    return -1;
}

int tide_governance_team_find(const tide_governance_t *g, const char *name)
{
    for (size_t i = 0; g && name && i < g->n_teams; i++)
        if (!strcmp(g->teams[i].name, name))
            return (int)i;
    return -1;
}

int tide_governance_add_team(tide_governance_t *g, const tide_team_spec_t *t, int line,
                             tide_error_t *err)
{
    if (!t->name || !*t->name)
        return tide_errf(err, TIDE_EINVAL, "team: 'name' must not be empty");
    if (tide_governance_team_find(g, t->name) >= 0)
        return tide_errf(err, TIDE_EINVAL, "team '%s' is defined twice", t->name);
    if (!(t->weight > 0) || !isfinite(t->weight))
        return tide_errf(err, TIDE_EINVAL, "team '%s': 'weight' must be > 0", t->name);
    if (t->borrow_limit < -1 || t->lend_cap < -1)
        return tide_errf(err, TIDE_EINVAL,
                         "team '%s': 'borrow_limit' and 'lend_cap' must be >= 0", t->name);
    for (int k = 0; k < TIDE_MAX_GPU_TYPES; k++)
        if (t->quota[k] < -1)
            return tide_errf(err, TIDE_EINVAL, "team '%s': 'quota' must be >= 0", t->name);
    if (g->n_teams >= TIDE_GOV_MAX_TEAMS)
        return tide_errf(err, TIDE_ERANGE, "too many teams (at most %d)", TIDE_GOV_MAX_TEAMS);
    g->teams = tide_xrealloc(g->teams, (g->n_teams + 1) * sizeof *g->teams);
    g->team_lines = tide_xrealloc(g->team_lines, (g->n_teams + 1) * sizeof *g->team_lines);
    g->teams[g->n_teams] = *t;
    g->teams[g->n_teams].name = tide_xstrdup(t->name);
    g->team_lines[g->n_teams] = line;
    return (int)g->n_teams++;
}

int tide_governance_apply(const tide_governance_t *g, tide_engine_t *e, tide_config_t *cfg,
                          tide_error_t *err)
{
    if (!g)
        return 0;
    if (cfg) {
        if (g->fairshare >= 0)
            cfg->fairshare = g->fairshare;
        if (g->fairshare_half_life_s > 0)
            cfg->fairshare_half_life_s = g->fairshare_half_life_s;
    }
    if (!e)
        return 0;
    for (size_t i = 0; i < g->n_teams; i++) {
        if (tide_engine_set_team(e, &g->teams[i], err) < 0) {
            if (g->team_lines && g->team_lines[i] > 0)
                return tide_err_prefix(err, "line %d: ", g->team_lines[i]);
            return -1;
        }
    }
    return 0;
}

double tide_governance_price(const tide_governance_t *g, int type, int cat)
{
    if (!g || !g->has_prices || type < 0 || type >= TIDE_MAX_GPU_TYPES || cat < 0 ||
        cat >= TIDE_COST_COUNT)
        return 0.0;
    return g->price[type][cat];
}

const char *tide_governance_type_name(const tide_governance_t *g, int type, char *buf, size_t n)
{
    if (g && type >= 0 && type < g->n_types && g->type_names[type][0])
        snprintf(buf, n, "%s", g->type_names[type]);
    else
        snprintf(buf, n, "type%d", type);
    return buf;
}
