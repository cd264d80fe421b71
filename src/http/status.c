/* tide error codes <-> HTTP statuses: one table. */
#include "http/status.h"

/* HTTP status of each error code. */
static const int http_status[TIDE_ERRCODE_COUNT] = {
    [TIDE_OK] = 200,     [TIDE_EINVAL] = 400, [TIDE_ENOENT] = 404, [TIDE_EEXIST] = 409,
    [TIDE_ENOMEM] = 503, [TIDE_EIO] = 500,    [TIDE_ESTATE] = 409, [TIDE_ERANGE] = 400,
};

int tide_http_status(int code)
{
    return code >= 0 && code < TIDE_ERRCODE_COUNT ? http_status[code] : 500;
}

int tide_http_status_code(int status)
{
    for (int code = 1; code < TIDE_ERRCODE_COUNT; code++)
        if (http_status[code] == status)
            return code;
    if (status >= 400 && status < 500)
        return TIDE_EINVAL;
    return TIDE_EIO;
}
