/* GET /v1/stream: the event feed as Server-Sent Events (stream.c). */
#include <stdio.h>
#include <string.h>

#include "daemon/internal.h"
#include "util/util.h"

API_HANDLER(api_stream)
{
    tide_daemon_t *d = API_D(app);
    long long since, backlog, heartbeat;
    if (api_q_int(req, "since", 0, INT64_MAX, -1, &since, rep) < 0 ||
        api_q_int(req, "backlog", 0, 10000, 0, &backlog, rep) < 0 ||
        api_q_int(req, "heartbeat", 1, 300, 15, &heartbeat, rep) < 0)
        return;
    /* EventSource sends the id of the last event it received when it
     * reconnects: resume after it (it wins over ?since=) */
    const char *last = tide_http_header(req, "Last-Event-ID");
    if (last && *last) {
        long long x;
        if (tide_parse_int(last, &x) < 0 || x < 0) {
            api_bad(rep, "Last-Event-ID: '%s' is not an event id", last);
            return;
        }
        since = x;
    }
    tide_daemon_lock(d);
    if (api_stopping(d, rep)) {
        tide_daemon_unlock(d);
        return;
    }
    void *c = dmn_stream_open(d, &req->who, since, (int)backlog, (double)heartbeat);
    tide_daemon_unlock(d);
    tide_http_reply_stream(rep, "text/event-stream", dmn_stream_ops(), c);
}
