/* Team definitions and reloads. A team definition (weight, quotas, borrow
 * and lend limits from the cluster file) is an event in the log like any
 * other (kind team_set, the team as JSON): accepted when it differs from what
 * the engine has, applied to the engine before the step that feeds it, and
 * replayed in order. The queue carries the decoded definition; only the
 * stored form is JSON. */
#include <stdlib.h>
#include <string.h>

#include "daemon/internal.h"
#include "formats/cluster_file.h"
#include "util/util.h"

static dteam_t *team_slot(tide_daemon_t *d, const char *name)
{
    for (size_t i = 0; i < d->n_teams; i++)
        if (!strcmp(d->teams[i].name, name))
            return &d->teams[i];
    return NULL;
}

void dmn_teams_clear(tide_daemon_t *d)
{
    for (size_t i = 0; i < d->n_teams; i++) {
        free(d->teams[i].name);
        free(d->teams[i].json);
    }
    d->n_teams = 0;
}

int dmn_team_decode(const char *json, tide_team_spec_t *t, char **name, tide_error_t *err)
{
    return tide_json_team_from_string(json, t, name, err);
}

void dmn_team_apply(tide_daemon_t *d, const tide_team_spec_t *t, const char *json)
{
    tide_error_t err = {0};
    if (tide_engine_set_team(d->e, t, &err) < 0) {
        dmn_log(d, "team definition ignored: %s", err.msg);
        return;
    }
    dteam_t *s = team_slot(d, t->name);
    if (!s) {
        dteam_t n = {.name = tide_xstrdup(t->name), .json = NULL};
        TIDE_PUSH(d->teams, d->n_teams, d->cap_teams, n);
        s = &d->teams[d->n_teams - 1];
    }
    free(s->json);
    s->json = tide_xstrdup(json ? json : "");
    s->spec = *t;
    s->spec.name = s->name;
}

/* Is the latest pending definition of a team this one? */
static int pending_same(const tide_daemon_t *d, const char *json)
{
    int same = 0;
    for (size_t k = 0; k < d->pending.n; k++)
        if (d->pending.v[k].ev.kind == TIDE_STORE_KIND_TEAM_SET && d->pending.v[k].payload)
            same = !strcmp(d->pending.v[k].payload, json);
    return same;
}

int dmn_teams_accept(tide_daemon_t *d, const tide_governance_t *gov, int *changed,
                     tide_error_t *err)
{
    *changed = 0;
    int nty = tide_cluster_types(d->cluster);
    for (size_t i = 0; gov && i < gov->n_teams; i++) {
        char *js = tide_json_team_to_string(&gov->teams[i], nty > 0 ? nty : 1);
        const dteam_t *cur = team_slot(d, gov->teams[i].name);
        /* the latest definition may still be pending */
        if ((cur && cur->json && !strcmp(cur->json, js)) || pending_same(d, js)) {
            free(js);
            continue;
        }
        /* the definition as the log keeps it: quotas of the cluster's types */
        tide_team_spec_t t = gov->teams[i];
        for (int k = nty > 0 ? nty : 1; k < TIDE_MAX_GPU_TYPES; k++)
            t.quota[k] = -1;
        tide_event_t ev = dmn_blank_event(TIDE_STORE_KIND_TEAM_SET);
        dmn_evx_t x = {.payload = js, .team = &t};
        int64_t seq = dmn_accept(d, &ev, &x, err);
        free(js);
        if (seq < 0)
            return -1;
        (*changed)++;
    }
    return 0;
}

int dmn_reload(tide_daemon_t *d, int *n_tokens, int *n_teams, int *changed, tide_error_t *err)
{
    *n_tokens = -1;
    *n_teams = -1;
    *changed = 0;
    if (d->tokens_path && d->auth) {
        int n = tide_auth_load(d->auth, d->tokens_path, err);
        if (n < 0)
            return tide_err_prefix(err, "--tokens: ");
        *n_tokens = n;
    }
    if (!d->cluster_file)
        return 0;
    tide_governance_t gov;
    tide_governance_init(&gov, NULL);
    tide_cluster_t *c = tide_cluster_file_load_ex(d->cluster_file, &gov, err);
    if (!c)
        return tide_err_prefix(err, "--cluster-file: ");
    char *a = dmn_cluster_nodes_json(c), *b = dmn_cluster_nodes_json(d->cluster);
    int same = !strcmp(a, b);
    free(a);
    free(b);
    a = dmn_cluster_json(c);
    b = dmn_cluster_json(d->cluster);
    if (same && strcmp(a, b))
        dmn_log(d, "--cluster-file %s: power budgets or models changed: not applied (fixed "
                   "when the database was created)",
                d->cluster_file);
    free(a);
    free(b);
    tide_cluster_destroy(c);
    int rc = 0;
    if (!same)
        rc = tide_errf(err, TIDE_ESTATE,
                       "--cluster-file %s: the node groups changed; that needs a restart with a new "
                       "database (teams, quotas and prices reload live)",
                       d->cluster_file);
    else {
        *n_teams = (int)gov.n_teams;
        rc = dmn_teams_accept(d, &gov, changed, err);
    }
    tide_governance_free(&gov);
    return rc;
}
