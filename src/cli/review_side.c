/* `tide review`: one side of the review. Its configuration file (tide
 * serve's YAML, src/cli/config_file.h) read into the sim's inputs and
 * config, the workload loaded against its services, and its runs: the
 * configuration as written and the front's grid (docs/review.md). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/review.h"
#include "formats/cluster_file.h"
#include "util/util.h"

enum { K_STR, K_POLICY, K_COUNT, K_SPLIT, K_DUR, K_IGNORED };

/* tide serve's keys: those that change decisions, and the daemon's own
 * (listening, storage, backend), which a replay has no use for. */
static const struct {
    const char *name;
    int kind;
    size_t off;
} KEYS[] = {
    {"cluster", K_STR, offsetof(review_side_t, cluster)},
    {"cluster-file", K_STR, offsetof(review_side_t, cluster_file)},
    {"services", K_STR, offsetof(review_side_t, services)},
    {"policy", K_POLICY, offsetof(review_side_t, policy)},
    {"reserve", K_COUNT, offsetof(review_side_t, reserve)},
    {"split", K_SPLIT, 0},
    {"lead-extra", K_DUR, offsetof(review_side_t, lead_extra)},
    {"lease-max", K_DUR, offsetof(review_side_t, lease_max)},
    {"control-period", K_DUR, offsetof(review_side_t, control_period)},
    {"scale-down-hold", K_DUR, offsetof(review_side_t, hold)},
    {"db", K_IGNORED, 0}, {"listen", K_IGNORED, 0}, {"tokens", K_IGNORED, 0},
    {"backend", K_IGNORED, 0}, {"speed", K_IGNORED, 0}, {"tick", K_IGNORED, 0},
    {"usage-interval", K_IGNORED, 0}, {"check", K_IGNORED, 0},
    {"demand-query", K_IGNORED, 0}, {"demand-history", K_IGNORED, 0},
    {"demand-history-days", K_IGNORED, 0}, {"slurm-conf", K_IGNORED, 0},
    {"slurm-partition", K_IGNORED, 0}, {"slurm-infer-partition", K_IGNORED, 0},
    {"ckpt-signal", K_IGNORED, 0}, {"replica-command", K_IGNORED, 0},
    {"power-cap-cmd", K_IGNORED, 0}, {"power-query", K_IGNORED, 0},
    {"power-interval", K_IGNORED, 0}, {"power-labels", K_IGNORED, 0},
    {"workdir", K_IGNORED, 0}, {"api-url", K_IGNORED, 0}, {"deadline-slack", K_IGNORED, 0},
    {"tls-cert", K_IGNORED, 0}, {"tls-key", K_IGNORED, 0}, {"insecure", K_IGNORED, 0},
    {"max-conns-per-ip", K_IGNORED, 0}, {"audit-keep", K_IGNORED, 0},
    {"audit-max-rows", K_IGNORED, 0},
};

static int key_index(const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "%s", key);
    for (char *p = k; *p; p++)
        if (*p == '_')
            *p = '-';
    for (size_t i = 0; i < sizeof KEYS / sizeof KEYS[0]; i++)
        if (!strcmp(KEYS[i].name, k))
            return (int)i;
    return -1;
}

static int bad_value(const review_side_t *s, const tide_cfg_item_t *it, const char *what,
                     tide_error_t *err)
{
    return tide_errf(err, TIDE_EINVAL, "%s:%d: %s: '%s' is not %s", s->path, it->line, it->key,
                     it->value, what);
}

static int one_key(review_side_t *s, const tide_cfg_item_t *it, int k, tide_error_t *err)
{
    char *at = (char *)s + KEYS[k].off;
    const char *v = it->value;
    switch (KEYS[k].kind) {
    case K_POLICY: {
        int known = 0;
        for (const char *const *n = tide_policy_names(); *n; n++)
            known |= !strcmp(*n, v);
        if (!known)
            return bad_value(s, it, "a policy (elastic, static, preempt, k8s, isolated, "
                             "timeshare)", err);
    } /* fall through */
    case K_STR: *(const char **)at = v; return 0;
    case K_COUNT:
        if (tide_parse_int(v, (long long *)at) < 0 || *(long long *)at < 0)
            return bad_value(s, it, "a GPU count >= 0", err);
        return 0;
    case K_DUR:
        if (tide_parse_duration(v, (int64_t *)at) < 0 || *(int64_t *)at <= 0 ||
            *(int64_t *)at > 30LL * 86400)
            return bad_value(s, it, "a duration in (0, 30d]", err);
        return 0;
    case K_SPLIT:
        if (sscanf(v, "%lld:%lld", &s->split_i, &s->split_t) != 2 || s->split_i < 0 ||
            s->split_t < 0)
            return bad_value(s, it, "I:T (inference:training GPUs)", err);
        return 0;
    default: return 0; /* the daemon's own */
    }
}

int review_side_read(review_side_t *s, const char *path, tide_error_t *err)
{
    memset(s, 0, sizeof *s);
    s->path = path;
    s->reserve = s->split_i = s->split_t = -1;
    if (tide_cfg_read(path, &s->items, err) < 0)
        return -1;
    for (size_t i = 0; i < s->items.n; i++) {
        const tide_cfg_item_t *it = &s->items.v[i];
        int k = key_index(it->key);
        if (k < 0)
            return tide_errf(err, TIDE_EINVAL, "%s:%d: unknown key '%s' (the keys are tide "
                             "serve's long options)", path, it->line, it->key);
        if (it->seq && KEYS[k].kind != K_IGNORED)
            return tide_errf(err, TIDE_EINVAL, "%s:%d: '%s' takes one value, not a list", path,
                             it->line, it->key);
        if (one_key(s, it, k, err) < 0)
            return -1;
    }
    if (s->cluster && s->cluster_file)
        return tide_errf(err, TIDE_EINVAL, "%s: cluster and cluster-file are both given", path);
    return 0;
}

/* The engine knobs of the file into cfg (checked against the cluster). */
static int apply_knobs(review_side_t *s, tide_config_t *cfg, tide_error_t *err)
{
    int gpus = tide_cluster_gpus(s->cl);
    cfg->policy = s->policy ? s->policy : "elastic";
    if (s->reserve > gpus)
        return tide_errf(err, TIDE_EINVAL, "%s: reserve %lld GPUs but the cluster has %d",
                         s->path, s->reserve, gpus);
    if (s->reserve >= 0)
        cfg->reserve_gpus = (int)s->reserve;
    if (s->split_i >= 0 && s->split_i + s->split_t != gpus)
        return tide_errf(err, TIDE_EINVAL, "%s: split %lld:%lld does not add up to the "
                         "cluster's %d GPUs", s->path, s->split_i, s->split_t, gpus);
    if (s->split_i >= 0)
        cfg->split_inf = (int)s->split_i;
    if (s->lead_extra > 0)
        cfg->lead_extra_s = s->lead_extra;
    if (s->lease_max > 0)
        cfg->lease_max_s = s->lease_max;
    if (s->control_period > 0)
        cfg->tick_s = s->control_period;
    if (s->hold > 0)
        cfg->scale_down_hold_s = s->hold;
    return 0;
}

int review_side_load(review_side_t *s, const review_workload_t *w, tide_error_t *err)
{
    const char *cl = s->cluster ? s->cluster : s->cluster_file ? NULL : w->cluster;
    if (!cl && !s->cluster_file)
        return tide_errf(err, TIDE_EINVAL, "%s: no cluster (give cluster or cluster-file, or "
                         "review a generated workload)", s->path);
    s->cl = cl ? tide_cluster_file_from_arg_ex(cl, &s->gov, err)
               : tide_cluster_file_load_ex(s->cluster_file, &s->gov, err);
    if (!s->cl)
        return tide_err_prefix(err, "%s: ", s->path);
    tide_read_opts_t ro = {.cluster = s->cl};
    const char *svc = s->services ? s->services : w->services;
    if (!svc)
        return tide_errf(err, TIDE_EINVAL, "%s: no services (give services, or traces with a "
                         "services.csv)", s->path);
    if (!(s->svcs = tide_services_read_file(svc, &ro, err)) ||
        !(s->dem = tide_demand_read_file(w->demand, s->svcs, &ro, err)) ||
        !(s->jobs = tide_jobs_read_file(w->jobs, &ro, err)))
        return tide_err_prefix(err, "%s: ", s->path);
    tide_sim_opts_t *o = &s->o;
    tide_sim_opts_default(o);
    if (apply_knobs(s, &o->cfg, err) < 0)
        return -1;
    tide_governance_apply(&s->gov, NULL, &o->cfg, NULL);
    o->cluster = s->cl;
    o->services = s->svcs->v;
    o->n_services = s->svcs->n;
    o->demand = s->dem->v;
    o->n_demand = s->dem->n;
    o->jobs = s->jobs->v;
    o->n_jobs = s->jobs->n;
    o->job_ckpt_gb = s->jobs->ckpt_gb;
    o->service_weights_gb = s->svcs->weights_gb;
    o->service_latency = s->svcs->latency;
    o->governance = &s->gov;
    o->policies = &o->cfg.policy;
    o->n_policies = 1;
    o->horizon_s = w->horizon_s;
    o->inject = w->inject;
    o->seed = w->seed;
    o->outputs = TIDE_SIM_OUT_SUMMARY;
    return 0;
}

/* One sweep of the side into dir/sub (spec: a tide sim --sweep grid). */
static int sweep(review_side_t *s, const char *dir, const char *sub, const char *spec,
                 int threads, tide_sweep_grid_t *g, tide_sweep_result_t *res, tide_error_t *err)
{
    char out[4096];
    snprintf(out, sizeof out, "%s/%s", dir, sub);
    tide_sim_opts_t o = s->o;
    o.out_dir = out;
    int rc = tide_sweep_parse(spec, g, err);
    if (rc == 0)
        rc = tide_sweep_check(g, tide_cluster_gpus(s->cl), &o.cfg, err);
    if (rc == 0)
        rc = tide_sweep_run(&o, g, spec, threads, NULL, res, err);
    if (rc < 0)
        return tide_err_prefix(err, "%s: ", s->path);
    if (res->n_rows == 0 || !res->rows[0].ok)
        return tide_errf(err, TIDE_ESTATE, "%s: the replay failed: %s", s->path,
                         res->n_rows ? res->rows[0].error : "no result");
    return 0;
}

int review_side_run(review_side_t *s, const char *dir, const char *front, int threads,
                    tide_error_t *err)
{
    char spec[64];
    snprintf(spec, sizeof spec, "margin=%.17g", s->o.cfg.margin_min);
    if (sweep(s, dir, "config", spec, threads, &s->head_grid, &s->head, err) < 0 ||
        sweep(s, dir, "front", front, threads, &s->front_grid, &s->front, err) < 0)
        return -1;
    tide_review_outcome_of(&s->head.rows[0], &s->out);
    return 0;
}

void review_side_free(review_side_t *s)
{
    tide_sweep_result_free(&s->head);
    tide_sweep_result_free(&s->front);
    tide_sweep_grid_free(&s->head_grid);
    tide_sweep_grid_free(&s->front_grid);
    tide_jobs_free(s->jobs);
    tide_demand_free(s->dem);
    tide_services_free(s->svcs);
    tide_cluster_destroy(s->cl);
    tide_governance_free(&s->gov);
    tide_cfg_free(&s->items);
    memset(s, 0, sizeof *s);
}
