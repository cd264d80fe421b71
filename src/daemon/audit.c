/* The audit trail (docs/api.md, "Audit trail"). Every request to a route
 * with an audit kind (api.c's table) is handed here by the router once it
 * has an answer, before the answer is sent: who (the token's team and role),
 * from where (the client's address), what (method, path, a bounded copy of
 * the body and its SHA-256) and the outcome (status, error code, message).
 *
 * Durability: a write the group commit (queue.c) accepts has its row
 * written in the same transaction (dmn_audit_op, with the status its
 * handler answers on success), so one commit makes both durable: no
 * committed write without its row, and no second fsync before the answer
 * (should the answer's status differ, a second row records the answer).
 * Every other request to an audited route (refused: 401, 403, 400, 409,
 * 503; or a write outside the group commit) gets its row here, through the
 * group commit as a write of its own, before the reply leaves; best effort:
 * when the store cannot write (degraded) the row is lost and the failure
 * counted and logged. Retention prunes rows older
 * than --audit-keep and beyond --audit-max-rows every AUDIT_PRUNE_EVERY rows,
 * in the same transaction. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "daemon/internal.h"
#include "formats/json.h"
#include "util/util.h"

#define AUDIT_PRUNE_EVERY 256

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Append a (and prune every AUDIT_PRUNE_EVERY rows): in a transaction. */
static int audit_row(tide_daemon_t *d, tide_store_audit_t *a, tide_error_t *err)
{
    if (tide_store_audit_append(d->st, a, err) < 0)
        return -1;
    if (a->id % AUDIT_PRUNE_EVERY == 0) {
        double before = d->audit_keep_s > 0 ? a->time - (double)d->audit_keep_s : 0;
        if (tide_store_audit_prune(d->st, before, d->audit_max_rows, err) < 0)
            return -1;
    }
    return 0;
}

static int audit_apply(tide_daemon_t *d, dmn_op_t *op, tide_error_t *err)
{
    return audit_row(d, op->arg, err);
}

/* The row of req answered status (error code and message: NULL or ""). */
static tide_store_audit_t audit_of(const tide_http_req_t *req, int status, const char *code,
                                   const char *msg)
{
    return (tide_store_audit_t){
        .time = wall_now(), .team = req->who.authenticated ? req->who.team : "",
        .role = req->who.authenticated ? tide_role_name(req->who.role) : "none",
        .peer = req->peer, .method = req->method, .path = req->path,
        .kind = req->route ? req->route->audit : "", .request = req->body,
        .bytes = (int64_t)req->body_len, .status = status,
        .error = code && code[0] ? code : NULL, .message = msg && msg[0] ? msg : NULL};
}

int dmn_audit_op(tide_daemon_t *d, const dmn_op_t *op, tide_error_t *err)
{
    tide_store_audit_t a = audit_of(op->audit_req, op->audit_status, NULL, NULL);
    return audit_row(d, &a, err);
}

/* The request whose row its write's transaction carried, on this thread
 * (the router runs the handler and then the hook on one thread). */
static _Thread_local struct {
    const tide_http_req_t *req;
    int status;
} t_done;

void dmn_audit_committed(const dmn_op_t *op)
{
    if (op->audited) {
        t_done.req = op->audit_req;
        t_done.status = op->audit_status;
    }
}

/* The error code and message of an error reply ({"error": {...}}). */
static void reply_error(const tide_http_reply_t *rep, char *code, size_t cn, char *msg, size_t mn)
{
    code[0] = msg[0] = '\0';
    if (rep->status < 400 || !rep->body)
        return;
    json_t *j = json_loadb(rep->body, rep->len, 0, NULL);
    json_t *e = json_object_get(j, "error");
    const char *c = json_string_value(json_object_get(e, "code"));
    const char *m = json_string_value(json_object_get(e, "message"));
    snprintf(code, cn, "%s", c ? c : "");
    snprintf(msg, mn, "%s", m ? m : "");
    json_decref(j);
}

void dmn_audit_hook(void *app, const tide_http_req_t *req, const tide_http_reply_t *rep)
{
    tide_daemon_t *d = app;
    int carried = t_done.req == req && t_done.status == rep->status;
    t_done.req = NULL;
    if (carried) { /* committed with the write, before this answer */
        __atomic_add_fetch(&d->audit_rows, 1, __ATOMIC_RELAXED);
        return;
    }
    char code[32], msg[600];
    reply_error(rep, code, sizeof code, msg, sizeof msg);
    tide_store_audit_t a = audit_of(req, rep->status, code, msg);
    dmn_op_t op = {.apply = audit_apply, .arg = &a};
    if (dmn_commit(d, &op) == 0) {
        __atomic_add_fetch(&d->audit_rows, 1, __ATOMIC_RELAXED);
        return;
    }
    __atomic_add_fetch(&d->audit_failed, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&d->mu);
    dmn_log(d, "audit: %s %s from %s (status %d) not recorded: %s", req->method, req->path,
            req->peer, rep->status, op.err.msg);
    pthread_mutex_unlock(&d->mu);
}

/* ------------------------------------------------------- GET /v1/audit */

static json_t *audit_json(const tide_store_audit_t *a)
{
    json_t *o = json_object();
    api_set(o, "id", json_integer(a->id));
    api_set(o, "time", api_num(a->time));
    api_set(o, "team", api_str(a->team));
    api_set(o, "role", api_str(a->role));
    api_set(o, "peer", api_str(a->peer));
    api_set(o, "method", api_str(a->method));
    api_set(o, "path", api_str(a->path));
    api_set(o, "kind", api_str(a->kind));
    api_set(o, "request", api_str(a->request));
    api_set(o, "bytes", json_integer(a->bytes));
    api_set(o, "sha256", api_str(a->digest));
    api_set(o, "status", json_integer(a->status));
    api_set(o, "error", a->error ? api_str(a->error) : json_null());
    api_set(o, "message", a->message ? api_str(a->message) : json_null());
    return o;
}

static int audit_one(void *ctx, const tide_store_audit_t *a)
{
    json_array_append_new(ctx, audit_json(a));
    return 0;
}

API_HANDLER(api_audit)
{
    tide_daemon_t *d = API_D(app);
    long long since, after, limit;
    if (api_q_int(req, "since", 0, INT64_MAX / 2, 0, &since, rep) < 0 ||
        api_q_int(req, "after", 0, INT64_MAX, 0, &after, rep) < 0 ||
        api_q_int(req, "limit", 1, 5000, 500, &limit, rep) < 0)
        return;
    char team[128], kind[64];
    tide_store_audit_query_t q = {.since = (double)since, .after = after, .limit = (int)limit,
                                  .team = tide_http_query(req, "team", team, sizeof team),
                                  .kind = tide_http_query(req, "kind", kind, sizeof kind)};
    json_t *arr = json_array();
    tide_error_t err = {0};
    dmn_lock_read(d);
    int n = tide_store_audit_list(dmn_rd(d), &q, audit_one, arr, &err);
    dmn_rd_done(d);
    dmn_unlock_read(d);
    if (n < 0) {
        json_decref(arr);
        api_fail(rep, &err);
        return;
    }
    size_t len = json_array_size(arr);
    json_t *last = len ? json_object_get(json_array_get(arr, len - 1), "id") : NULL;
    json_t *o = json_object();
    api_set(o, "audit", arr);
    api_set(o, "next", last ? json_integer(json_integer_value(last)) : json_integer(after));
    tide_http_reply_json(rep, 200, o);
}
