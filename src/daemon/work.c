/* Jobs' work for the backend: the command and environment a job was
 * submitted with, handed to the backend with each JOB_START and JOB_RESIZE
 * (backends that run real processes start them). Read from the jobs table at
 * a job's first start in this process and kept until it ends. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/internal.h"
#include "util/util.h"

void dmn_work_free(dwork_t *w)
{
    if (!w)
        return;
    free(w->command);
    for (char **e = w->env; e && *e; e++)
        free(*e);
    free(w->env);
    free(w);
}

/* The stored environment (a JSON object) as "KEY=VALUE" strings; numbers
 * are written in full. NULL when it is not an object. */
static char **env_list(const char *json)
{
    json_t *o = json_loads(json, 0, NULL);
    char **v = NULL;
    if (json_is_object(o)) {
        size_t n = json_object_size(o), k = 0;
        v = tide_xcalloc(n + 1, sizeof *v);
        const char *key;
        json_t *val;
        json_object_foreach(o, key, val)
        {
            const char *sv = json_is_string(val) ? json_string_value(val) : NULL;
            char num[64];
            if (!sv && json_is_number(val)) {
                snprintf(num, sizeof num, "%.17g", json_number_value(val));
                sv = num;
            }
            if (!sv)
                continue;
            size_t len = strlen(key) + strlen(sv) + 2;
            v[k] = tide_xmalloc(len);
            snprintf(v[k], len, "%s=%s", key, sv);
            k++;
        }
    }
    json_decref(o);
    return v;
}

/* Job h's work, loaded once (NULL when its row cannot be read). */
static const tide_backend_work_t *job_work(tide_daemon_t *d, int32_t h)
{
    djob_t *j = dmn_job(d, h);
    if (j->work)
        return &j->work->work;
    const char *id = dmn_job_id(d->e, h);
    tide_store_job_t row;
    if (!id || tide_store_job_get(d->st, id, &row, NULL) < 0)
        return NULL;
    dwork_t *w = tide_xcalloc(1, sizeof *w);
    w->command = row.command ? tide_xstrdup(row.command) : NULL;
    w->env = row.env ? env_list(row.env) : NULL;
    w->work.command = w->command;
    w->work.env = (const char *const *)w->env;
    tide_store_job_free(&row);
    j->work = w;
    return &w->work;
}

const tide_backend_work_t *const *dmn_work(tide_daemon_t *d, const tide_actions_t *acts)
{
    if (!d->be_ops || !d->be_ops->needs_command)
        return NULL; /* the backend runs nothing */
    tide_grow((void **)&d->workv, &d->cap_workv, acts->n ? acts->n : 1, sizeof *d->workv);
    for (size_t i = 0; i < acts->n; i++) {
        const tide_action_t *a = &acts->v[i];
        int starts = a->kind == TIDE_ACT_JOB_START || a->kind == TIDE_ACT_JOB_RESIZE;
        d->workv[i] = starts && a->job >= 0 ? job_work(d, a->job) : NULL;
        if (a->kind == TIDE_ACT_REPLICA_START && a->replica >= 0)
            d->workv[i] = dmn_pipe_replica_work(d, a->replica);
    }
    return d->workv;
}

void dmn_work_release(tide_daemon_t *d, const tide_actions_t *acts)
{
    for (size_t i = 0; i < acts->n; i++) {
        const tide_action_t *a = &acts->v[i];
        if (a->kind != TIDE_ACT_JOB_STOP || a->job < 0 || (size_t)a->job >= d->n_jobs ||
            (a->reason != TIDE_R_COMPLETE && a->reason != TIDE_R_CANCEL))
            continue;
        dmn_work_free(d->jobs[a->job].work); /* it never starts again */
        d->jobs[a->job].work = NULL;
    }
}
