/* Finite JSON numbers; a JSON file read whole. */
#include "formats/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/util.h"

json_t *tide_json_real(double v) { return json_real(isfinite(v) ? v : 0.0); }

json_t *tide_json_num(double v)
{
    if (!isfinite(v))
        return json_null();
    if (v == floor(v) && fabs(v) < 1e15)
        return json_integer((json_int_t)v);
    return json_real(v);
}

json_t *tide_json_round(double v, int decimals)
{
    static const double scale[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
    if (decimals < 0)
        decimals = 0;
    if (decimals > 9)
        decimals = 9;
    double s = scale[decimals];
    return tide_json_num(isfinite(v) ? round(v * s) / s : v);
}

void tide_json_set(json_t *o, const char *k, json_t *v) { json_object_set_new(o, k, v); }

json_t *tide_json_load_file(const char *dir, const char *name, tide_error_t *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        tide_errf(err, errno == ENOENT ? TIDE_ENOENT : TIDE_EIO, "%s: cannot open: %s", path,
                  strerror(errno));
        return NULL;
    }
    json_error_t je;
    json_t *j = json_loadf(f, 0, &je);
    fclose(f);
    if (!j)
        tide_errf(err, TIDE_EINVAL, "%s:%d: invalid JSON: %s", path, je.line, je.text);
    return j;
}
