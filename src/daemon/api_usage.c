/* The usage API: GPU-hours between two times, grouped by team, service,
 * class, state and tier (live figures, or the snapshots of sample.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/internal.h"
#include "util/util.h"

enum { U_TEAM, U_SERVICE, U_CLASS, U_STATE, U_TIER, U_DIMS };
static const char *const udims[U_DIMS] = {"team", "service", "class", "state", "tier"};

typedef struct ucell {
    const char *key[U_DIMS]; /* NULL = not grouped / absent */
    char *store[U_DIMS];     /* owned copies */
    double gpu_s;
} ucell_t;

#define OTHER_TEAMS "(other teams)"

typedef struct uacc {
    const char *team;        /* the caller's team (non-admins), NULL: every team by name */
    int by[U_DIMS];
    ucell_t *v;
    size_t n, cap;
    double sign;
} uacc_t;

static int ukey_eq(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

static int uadd(void *ctx, const tide_store_usage_t *r)
{
    uacc_t *u = ctx;
    const char *k[U_DIMS] = {
        !strcmp(r->owner_kind, "team") ? r->owner : NULL,
        !strcmp(r->owner_kind, "service") ? r->owner : NULL, r->cls, r->state, r->tier};
    if (u->team && k[U_TEAM] && strcmp(k[U_TEAM], u->team))
        k[U_TEAM] = OTHER_TEAMS; /* teams are tenants: others only in sum */
    for (int i = 0; i < U_DIMS; i++)
        if (!u->by[i])
            k[i] = NULL;
    size_t c;
    for (c = 0; c < u->n; c++) {
        int eq = 1;
        for (int i = 0; i < U_DIMS && eq; i++)
            eq = ukey_eq(u->v[c].key[i], k[i]);
        if (eq)
            break;
    }
    if (c == u->n) {
        ucell_t cell = {0};
        for (int i = 0; i < U_DIMS; i++)
            if (k[i]) {
                cell.store[i] = tide_xstrdup(k[i]);
                cell.key[i] = cell.store[i];
            }
        TIDE_PUSH(u->v, u->n, u->cap, cell);
    }
    u->v[c].gpu_s += u->sign * r->gpu_s;
    return 0;
}

/* Cumulative usage at t into u (sign applied): live when t >= now. *at gets
 * the snapshot time used (-1 none). */
static int usage_at(tide_daemon_t *d, tide_time_t t, uacc_t *u, tide_time_t *at, tide_error_t *err)
{
    if (t >= d->now) {
        usage_rows_t rows = {0};
        dmn_usage_now(d, &rows);
        for (size_t i = 0; i < rows.n; i++)
            uadd(u, &rows.v[i]);
        dmn_usage_free(&rows);
        *at = d->now;
        return 0;
    }
    return tide_store_usage_at(d->st, t, at, uadd, u, err);
}

API_HANDLER(api_usage)
{
    tide_daemon_t *d = API_D(app);
    char byb[256];
    const char *by = tide_http_query(req, "by", byb, sizeof byb);
    uacc_t u = {.team = api_is_admin(req) ? NULL : req->who.team};
    if (!by || !*by) {
        u.by[U_TEAM] = u.by[U_CLASS] = u.by[U_STATE] = u.by[U_TIER] = 1;
    } else {
        char tmp[256];
        snprintf(tmp, sizeof tmp, "%s", by);
        char *save = NULL;
        for (char *p = strtok_r(tmp, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
            int k = -1;
            for (int i = 0; i < U_DIMS; i++)
                if (!strcmp(udims[i], p))
                    k = i;
            if (k < 0) {
                api_bad(rep, "by: unknown dimension '%s' (team, service, class, state, tier)", p);
                return;
            }
            u.by[k] = 1;
        }
    }
    long long since, until;
    if (api_q_int(req, "since", 0, INT64_MAX / 2, 0, &since, rep) < 0 ||
        api_q_int(req, "until", 0, INT64_MAX / 2, INT64_MAX / 2, &until, rep) < 0)
        return;
    if (until < since) {
        tide_http_reply_error(rep, 400, "EINVAL", "until: %lld is before since (%lld)", until, since);
        return;
    }
    tide_daemon_lock(d);
    tide_time_t at_u, at_s = -1;
    tide_error_t err = {0};
    u.sign = 1;
    int rc = usage_at(d, until, &u, &at_u, &err);
    if (rc == 0 && since > 0) {
        u.sign = -1;
        rc = usage_at(d, since, &u, &at_s, &err);
    }
    tide_time_t now = d->now;
    tide_daemon_unlock(d);
    if (rc < 0) {
        api_fail(rep, &err);
        goto done;
    }
    json_t *rows = json_array();
    double total = 0;
    for (size_t c = 0; c < u.n; c++) {
        if (fabs(u.v[c].gpu_s) < 1e-9)
            continue;
        json_t *o = json_object();
        for (int i = 0; i < U_DIMS; i++)
            if (u.by[i])
                api_set(o, udims[i], api_str(u.v[c].key[i]));
        api_set(o, "gpu_hours", api_num(u.v[c].gpu_s / 3600.0));
        total += u.v[c].gpu_s;
        json_array_append_new(rows, o);
    }
    json_t *o = json_object();
    api_set(o, "rows", rows);
    api_set(o, "total_gpu_hours", api_num(total / 3600.0));
    api_set(o, "since_s", json_integer(at_s >= 0 ? at_s : 0));
    api_set(o, "until_s", json_integer(until > now ? now : (at_u >= 0 ? at_u : 0)));
    tide_http_reply_json(rep, 200, o);
done:
    for (size_t c = 0; c < u.n; c++)
        for (int i = 0; i < U_DIMS; i++)
            free(u.v[c].store[i]);
    free(u.v);
}
