/* GET /ui/: the live dashboard (src/ui, docs/ui.md), served from assets
 * compiled into the binary (cmake/embed.cmake); the charts are the report's
 * (src/report/chart.js). Public: the page holds no data, it asks the API
 * with the token the user enters. */
#include <string.h>

#include "daemon/internal.h"
#include "ui_assets.h" /* generated: tide_ui_html[], tide_ui_css[], tide_ui_js[], ... */

typedef struct asset {
    const char *name;
    const char *type;
    const char *data;
} asset_t;

static const asset_t assets[] = {
    {"ui.css", "text/css; charset=utf-8", tide_ui_css},
    {"ui.js", "text/javascript; charset=utf-8", tide_ui_js},
    {"hook.js", "text/javascript; charset=utf-8", tide_ui_hook_js},
    {"chart.js", "text/javascript; charset=utf-8", tide_ui_chart_js},
};

const char *tide_daemon_ui_asset(const char *name, const char **type)
{
    if (!*name) {
        *type = "text/html; charset=utf-8";
        return tide_ui_html;
    }
    for (size_t i = 0; i < sizeof assets / sizeof assets[0]; i++)
        if (!strcmp(name, assets[i].name)) {
            *type = assets[i].type;
            return assets[i].data;
        }
    return NULL;
}

API_HANDLER(api_ui_page)
{
    (void)app;
    (void)req;
    tide_http_reply_text(rep, 200, "text/html; charset=utf-8", tide_ui_html, strlen(tide_ui_html));
}

API_HANDLER(api_ui_asset)
{
    (void)app;
    const char *type, *data = tide_daemon_ui_asset(req->params[0], &type);
    if (data)
        tide_http_reply_text(rep, 200, type, data, strlen(data));
    else
        tide_http_reply_error(rep, 404, "ENOENT", "no dashboard file '%s'", req->params[0]);
}
