/* GET /openapi.json: the OpenAPI 3 description of this API (docs/openapi.json,
 * compiled in by cmake/embed.cmake). Public, like /healthz. A unit test
 * checks that every route of the routes table (api.c) is in it, and make
 * test validates it with a real OpenAPI validator (tests/openapi). */
#include <string.h>

#include "daemon/internal.h"
#include "openapi_spec.h" /* generated: tide_openapi_json[] */

const char *tide_daemon_openapi(void) { return tide_openapi_json; }

API_HANDLER(api_openapi)
{
    (void)app;
    (void)req;
    tide_http_reply_text(rep, 200, "application/json", tide_openapi_json,
                         strlen(tide_openapi_json));
}
