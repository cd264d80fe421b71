/* tide http: the HTTP status of each tide error code (the server's error
 * replies) and back (the client's reading of them). */
#ifndef TIDE_HTTP_STATUS_H
#define TIDE_HTTP_STATUS_H

#include "tide/types.h"

/* The HTTP status of a tide error code (EINVAL and ERANGE 400, ENOENT 404,
 * EEXIST and ESTATE 409, ENOMEM 503, EIO 500; unknown codes 500). */
int tide_http_status(int code);

/* The other way: the first code whose status is `status`; else 4xx ->
 * EINVAL, others -> EIO. */
int tide_http_status_code(int status);

#endif
