/* The database's settings: the cluster, the policy and the engine's
 * configuration are fixed when a database is created; later starts load them
 * and refuse options that contradict them. */
#include <jansson.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/internal.h"
#include "util/util.h"

/* A GPU type's power model as JSON (keys as in the cluster file's power:). */
static json_t *model_json(const tide_power_model_t *m)
{
    json_t *curve = json_array();
    for (int i = 0; i < m->n_curve && i < TIDE_POWER_CURVE_MAX; i++)
        json_array_append_new(curve, json_pack("[f,f]", m->curve_frac[i], m->curve_speed[i]));
    return json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:o}", "tdp", m->tdp_w, "idle", m->idle_w,
                     "serving_idle", m->serve_idle_w, "serving_full", m->serve_full_w,
                     "training", m->train_w, "checkpoint", m->ckpt_w, "min_cap", m->min_cap_w,
                     "curve", curve);
}

static int model_from_json(json_t *j, tide_power_model_t *m)
{
    json_t *curve = NULL;
    if (json_unpack(j, "{s:F,s:F,s:F,s:F,s:F,s:F,s:F,s:o}", "tdp", &m->tdp_w, "idle", &m->idle_w,
                    "serving_idle", &m->serve_idle_w, "serving_full", &m->serve_full_w,
                    "training", &m->train_w, "checkpoint", &m->ckpt_w, "min_cap", &m->min_cap_w,
                    "curve", &curve) != 0 ||
        !json_is_array(curve) || json_array_size(curve) > TIDE_POWER_CURVE_MAX)
        return -1;
    m->n_curve = (int)json_array_size(curve);
    for (int i = 0; i < m->n_curve; i++)
        if (json_unpack(json_array_get(curve, (size_t)i), "[F,F]", &m->curve_frac[i],
                        &m->curve_speed[i]) != 0)
            return -1;
    return 0;
}

/* Equal models, field by field (no padding compared). */
static int model_same(const tide_power_model_t *a, const tide_power_model_t *b)
{
    if (a->tdp_w != b->tdp_w || a->idle_w != b->idle_w || a->serve_idle_w != b->serve_idle_w ||
        a->serve_full_w != b->serve_full_w || a->train_w != b->train_w ||
        a->ckpt_w != b->ckpt_w || a->min_cap_w != b->min_cap_w || a->n_curve != b->n_curve)
        return 0;
    for (int i = 0; i < a->n_curve && i < TIDE_POWER_CURVE_MAX; i++)
        if (a->curve_frac[i] != b->curve_frac[i] || a->curve_speed[i] != b->curve_speed[i])
            return 0;
    return 1;
}

/* The node groups; with power (1) each group's power budget and its GPU
 * type's power model when they are not the defaults (so that a cluster
 * without either reads as it always did). */
static char *cluster_json(const tide_cluster_t *c, int power)
{
    tide_power_model_t def;
    tide_power_model_default(&def);
    json_t *a = json_array();
    for (int i = 0; i < tide_cluster_groups(c); i++) {
        tide_node_group_t g;
        if (tide_cluster_group(c, i, &g) != 0)
            continue;
        json_t *o = json_pack("{s:i,s:i,s:s,s:i,s:i,s:i}", "count", g.count, "gpus_per_node",
                              g.gpus_per_node, "gpu_type", g.gpu_type ? g.gpu_type : "gpu",
                              "domain_nodes", g.domain_nodes, "rack_nodes", g.rack_nodes,
                              "power_nodes", g.power_nodes);
        const tide_power_model_t *m =
            tide_cluster_power_model(c, tide_cluster_type_find(c, g.gpu_type ? g.gpu_type : "gpu"));
        if (power && g.power_budget_w > 0)
            json_object_set_new(o, "power_budget_w", json_real(g.power_budget_w));
        if (power && m && !model_same(m, &def))
            json_object_set_new(o, "power", model_json(m));
        json_array_append_new(a, o);
    }
    char *s = json_dumps(a, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(a);
    char *r = tide_xstrdup(s ? s : "[]");
    free(s);
    return r;
}

char *dmn_cluster_json(const tide_cluster_t *c) { return cluster_json(c, 1); }

char *dmn_cluster_nodes_json(const tide_cluster_t *c) { return cluster_json(c, 0); }

/* One stored group into c (its budget and its type's model when given). */
static int group_from_json(tide_cluster_t *c, json_t *x, tide_error_t *err)
{
    tide_node_group_t g = {0};
    const char *type = NULL;
    json_t *pm = NULL;
    if (json_unpack(x, "{s:i,s:i,s:s,s:i,s:i,s:i,s?F,s?o}", "count", &g.count, "gpus_per_node",
                    &g.gpus_per_node, "gpu_type", &type, "domain_nodes", &g.domain_nodes,
                    "rack_nodes", &g.rack_nodes, "power_nodes", &g.power_nodes,
                    "power_budget_w", &g.power_budget_w, "power", &pm) != 0)
        return -1;
    g.gpu_type = type;
    if (tide_cluster_add_group(c, &g, err) != 0)
        return -1;
    tide_power_model_t m;
    tide_power_model_default(&m);
    if (pm && (model_from_json(pm, &m) < 0 ||
               tide_cluster_set_power_model(c, tide_cluster_type_find(c, type), &m, err) < 0))
        return -1;
    return 0;
}

static tide_cluster_t *cluster_from_json(const char *s, tide_error_t *err)
{
    json_error_t je;
    json_t *a = json_loads(s, 0, &je);
    if (!json_is_array(a)) {
        json_decref(a);
        tide_errf(err, TIDE_EIO, "database: the stored cluster is unreadable");
        return NULL;
    }
    tide_cluster_t *c = tide_cluster_create();
    size_t i;
    json_t *x;
    json_array_foreach(a, i, x) {
        if (group_from_json(c, x, err) < 0) {
            if (err && !err->msg[0])
                tide_errf(err, TIDE_EIO, "database: the stored cluster is unreadable");
            tide_cluster_destroy(c);
            json_decref(a);
            return NULL;
        }
    }
    json_decref(a);
    return c;
}

int dmn_probe(const tide_cluster_t *c, const tide_config_t *cfg, const tide_service_spec_t *v,
              size_t n, tide_error_t *err)
{
    tide_engine_t *e = tide_engine_create(c, cfg, err);
    if (!e)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        if (tide_engine_add_service(e, &v[i], err) < 0)
            rc = -1;
    if (rc == 0) {
        tide_actions_t a;
        tide_actions_init(&a);
        if (tide_engine_step(e, 0, NULL, 0, &a, err) < 0)
            rc = -1;
        tide_actions_free(&a);
    }
    tide_engine_destroy(e);
    return rc;
}

static int meta_int(tide_store_t *st, const char *key, long long *v, tide_error_t *err)
{
    tide_error_t e2 = {0};
    char *s = tide_store_meta_get(st, key, &e2);
    if (!s) {
        if (e2.code == TIDE_ENOENT)
            return 0;
        if (err)
            *err = e2;
        return -1;
    }
    int rc = tide_parse_int(s, v) == 0 ? 1 : tide_errf(err, TIDE_EIO, "database: bad %s", key);
    free(s);
    return rc;
}

static int meta_put_int(tide_store_t *st, const char *key, long long v, tide_error_t *err)
{
    char b[32];
    snprintf(b, sizeof b, "%lld", v);
    return tide_store_meta_set(st, key, b, err);
}

/* A new database: the options (and the cluster file's governance) become
 * its settings, written once the engine they make was checked. */
static int settings_create(tide_daemon_t *d, const tide_daemon_opts_t *o, tide_error_t *err)
{
    if (!o->cluster)
        return tide_errf(err, TIDE_EINVAL, "a new database needs --cluster or --cluster-file");
    d->cluster = tide_cluster_copy(o->cluster);
    const char *pol = o->policy ? o->policy : "elastic";
    snprintf(d->policy, sizeof d->policy, "%s", pol);
    d->cfg.policy = d->policy;
    if (o->reserve_gpus >= -1)
        d->cfg.reserve_gpus = o->reserve_gpus;
    if (o->split_inf >= -1)
        d->cfg.split_inf = o->split_inf;
    if (o->lease_max_s > 0)
        d->cfg.lease_max_s = o->lease_max_s;
    if (o->lead_extra_s > 0)
        d->cfg.lead_extra_s = o->lead_extra_s;
    if (o->control_period_s > 0)
        d->cfg.tick_s = o->control_period_s;
    if (o->scale_down_hold_s > 0)
        d->cfg.scale_down_hold_s = o->scale_down_hold_s;
    if (o->gov && tide_governance_apply(o->gov, NULL, &d->cfg, err) < 0)
        return -1;
    /* validate by building an engine before writing anything */
    if (dmn_probe(d->cluster, &d->cfg, o->services, o->services ? o->n_services : 0, err) < 0)
        return tide_err_prefix(err, "cannot start the engine: ");
    char *cs = dmn_cluster_json(d->cluster);
    int ok = tide_store_begin(d->st, err) == 0 &&
             tide_store_meta_set(d->st, "cluster", cs, err) == 0 &&
             tide_store_meta_set(d->st, "policy", d->policy, err) == 0 &&
             meta_put_int(d->st, "reserve_gpus", d->cfg.reserve_gpus, err) == 0 &&
             meta_put_int(d->st, "split_inf", d->cfg.split_inf, err) == 0 &&
             meta_put_int(d->st, "fairshare", d->cfg.fairshare, err) == 0 &&
             meta_put_int(d->st, "fairshare_half_life_s", d->cfg.fairshare_half_life_s, err) == 0 &&
             meta_put_int(d->st, "lease_max_s", d->cfg.lease_max_s, err) == 0 &&
             meta_put_int(d->st, "lead_extra_s", d->cfg.lead_extra_s, err) == 0 &&
             meta_put_int(d->st, "control_period_s", d->cfg.tick_s, err) == 0 &&
             meta_put_int(d->st, "scale_down_hold_s", d->cfg.scale_down_hold_s, err) == 0 &&
             meta_put_int(d->st, "epoch", 1, err) == 0 &&
             tide_store_meta_set(d->st, "created_by", "tide serve", err) == 0 &&
             tide_store_commit(d->st, err) == 0;
    free(cs);
    if (!ok) {
        tide_store_rollback(d->st);
        return -1;
    }
    d->epoch = 1;
    return 0;
}

/* Engine timings fixed at creation (older databases: the defaults); an
 * option given must match. */
static int settings_timings(tide_daemon_t *d, const tide_daemon_opts_t *o, tide_error_t *err)
{
    long long v;
    int rc;
    static const struct {
        const char *key, *flag;
        size_t off;
    } timings[] = {
        {"lease_max_s", "--lease-max", offsetof(tide_config_t, lease_max_s)},
        {"lead_extra_s", "--lead-extra", offsetof(tide_config_t, lead_extra_s)},
        {"control_period_s", "--control-period", offsetof(tide_config_t, tick_s)},
        {"scale_down_hold_s", "--scale-down-hold", offsetof(tide_config_t, scale_down_hold_s)},
    };
    const tide_time_t given[] = {o->lease_max_s, o->lead_extra_s, o->control_period_s,
                                 o->scale_down_hold_s};
    for (size_t i = 0; i < sizeof timings / sizeof timings[0]; i++) {
        tide_time_t *field = (tide_time_t *)((char *)&d->cfg + timings[i].off);
        if ((rc = meta_int(d->st, timings[i].key, &v, err)) < 0)
            return -1;
        if (rc)
            *field = v;
        if (given[i] > 0 && given[i] != *field)
            return tide_errf(err, TIDE_EINVAL, "%s runs with %s %llds, not %llds (use another --db)",
                             o->db_path, timings[i].flag, (long long)*field, (long long)given[i]);
    }
    return 0;
}

/* The power budgets and models of an existing database (cj: its stored
 * cluster) against the given cluster's: the database's are kept (fixed at
 * creation); a database written before they were stored takes the given
 * ones (and stores them). */
static int settings_power(tide_daemon_t *d, const tide_daemon_opts_t *o, const char *cj,
                          tide_error_t *err)
{
    char *given = dmn_cluster_json(o->cluster);
    int rc = 0;
    if (strcmp(given, cj)) {
        char *plain = cluster_json(d->cluster, 0);
        if (!strcmp(plain, cj)) { /* nothing stored: take the given ones */
            tide_cluster_destroy(d->cluster);
            d->cluster = tide_cluster_copy(o->cluster);
            rc = tide_store_meta_set(d->st, "cluster", given, err);
        } else {
            fprintf(d->log ? d->log : stderr,
                    "tide serve: the cluster's power budgets or models differ from the "
                    "database's: the database's are kept (fixed at creation; use another --db)\n");
        }
        free(plain);
    }
    free(given);
    return rc;
}

/* An existing database: load its settings (cj: its cluster) and check the
 * options against them. */
static int settings_load(tide_daemon_t *d, const tide_daemon_opts_t *o, char *cj,
                         tide_error_t *err)
{
    d->cluster = cluster_from_json(cj, err);
    if (!d->cluster) {
        free(cj);
        return -1;
    }
    if (o->cluster) {
        char *given = cluster_json(o->cluster, 0), *mine = cluster_json(d->cluster, 0);
        int same = !strcmp(given, mine);
        free(given);
        free(mine);
        if (same && settings_power(d, o, cj, err) < 0) {
            free(cj);
            return -1;
        }
        if (!same) {
            char a[256], b[256];
            tide_cluster_format(d->cluster, a, sizeof a);
            tide_cluster_format(o->cluster, b, sizeof b);
            free(cj);
            return tide_errf(err, TIDE_EINVAL,
                             "%s was created for cluster %s, not %s (use another --db)",
                             o->db_path, a, b);
        }
    }
    free(cj);
    char *pol = tide_store_meta_get(d->st, "policy", err);
    if (!pol)
        return -1;
    snprintf(d->policy, sizeof d->policy, "%s", pol);
    free(pol);
    d->cfg.policy = d->policy;
    if (o->policy && strcmp(o->policy, d->policy))
        return tide_errf(err, TIDE_EINVAL, "%s runs policy %s, not %s (use another --db)",
                         o->db_path, d->policy, o->policy);
    long long v;
    int rc;
    if ((rc = meta_int(d->st, "reserve_gpus", &v, err)) < 0)
        return -1;
    if (rc)
        d->cfg.reserve_gpus = (int)v;
    if (o->reserve_gpus >= -1 && o->reserve_gpus != d->cfg.reserve_gpus)
        return tide_errf(err, TIDE_EINVAL, "%s runs with --reserve %d, not %d (use another --db)",
                         o->db_path, d->cfg.reserve_gpus, o->reserve_gpus);
    if ((rc = meta_int(d->st, "split_inf", &v, err)) < 0)
        return -1;
    if (rc)
        d->cfg.split_inf = (int)v;
    if (o->split_inf >= -1 && o->split_inf != d->cfg.split_inf)
        return tide_errf(err, TIDE_EINVAL, "%s runs with an inference split of %d GPUs, not %d",
                         o->db_path, d->cfg.split_inf, o->split_inf);
    if ((rc = meta_int(d->st, "fairshare", &v, err)) < 0)
        return -1;
    if (rc)
        d->cfg.fairshare = (int)v;
    if ((rc = meta_int(d->st, "fairshare_half_life_s", &v, err)) < 0)
        return -1;
    if (rc)
        d->cfg.fairshare_half_life_s = v;
    if (settings_timings(d, o, err) < 0)
        return -1;
    if ((rc = meta_int(d->st, "epoch", &v, err)) < 0)
        return -1;
    d->epoch = rc ? v : 1;
    return 0;
}

int dmn_settings(tide_daemon_t *d, const tide_daemon_opts_t *o, tide_error_t *err)
{
    tide_error_t e2 = {0};
    char *cj = tide_store_meta_get(d->st, "cluster", &e2);
    if (!cj && e2.code != TIDE_ENOENT) {
        if (err)
            *err = e2;
        return -1;
    }
    tide_config_default(&d->cfg);
    if (!cj)
        return settings_create(d, o, err);
    return settings_load(d, o, cj, err);
}
