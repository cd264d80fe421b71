/* Shadow mode and rehearsals over HTTP: GET /v1/shadow (what the shadow
 * would have done), POST /v1/mode (leave shadow mode: {"mode":"enact"}),
 * POST /v1/services/{name}/rehearse (a warm-up rehearsal now). */
#include <string.h>

#include "daemon/internal.h"

API_HANDLER(api_shadow)
{
    (void)req;
    tide_daemon_t *d = API_D(app);
    tide_daemon_lock(d);
    json_t *o = dmn_shadow_json(d);
    tide_daemon_unlock(d);
    tide_http_reply_json(rep, 200, o);
}

API_HANDLER(api_mode)
{
    tide_daemon_t *d = API_D(app);
    json_t *body = json_loadb(req->body ? req->body : "", req->body_len, 0, NULL);
    const char *m = json_string_value(json_object_get(body, "mode"));
    if (!m || (strcmp(m, "enact") && strcmp(m, "shadow"))) {
        json_decref(body);
        tide_http_reply_error(rep, 400, "EINVAL", "mode: must be \"enact\" or \"shadow\"");
        return;
    }
    int want_shadow = !strcmp(m, "shadow");
    json_decref(body);
    tide_daemon_lock(d);
    if (api_stopping(d, rep)) {
        tide_daemon_unlock(d);
        return;
    }
    tide_error_t err = {0};
    int rc = 0;
    if (want_shadow && !d->shadow)
        rc = tide_errf(&err, TIDE_ESTATE, "enact -> shadow needs a restart with --mode shadow "
                                          "(what runs in the cluster stays tide's)");
    else if (!want_shadow && d->shadow)
        rc = dmn_mode_enact(d, &err);
    int shadow = d->shadow;
    tide_daemon_unlock(d);
    if (rc < 0) {
        tide_http_reply_error(rep, err.code == TIDE_ESTATE ? 409 : 500,
                              err.code == TIDE_ESTATE ? "ESTATE" : "EIO", "%s", err.msg);
        return;
    }
    tide_http_reply_json(rep, 200, json_pack("{s:s}", "mode", shadow ? "shadow" : "enact"));
}

API_HANDLER(api_rehearse)
{
    tide_daemon_t *d = API_D(app);
    tide_daemon_lock(d);
    if (api_stopping(d, rep)) {
        tide_daemon_unlock(d);
        return;
    }
    tide_error_t err = {0};
    int rc = dmn_rehearse(d, req->params[0], &err);
    tide_daemon_unlock(d);
    if (rc < 0) {
        api_fail(rep, &err);
        return;
    }
    tide_http_reply_json(rep, 202, json_pack("{s:s,s:s}", "service", req->params[0], "rehearsal",
                                             "requested"));
}
