/* libFuzzer target: the --sweep grid parser (src/sim/sweep.h). Every accepted
 * grid must be consistent: distinct keys, values in range and ascending,
 * n_points the product of the axis sizes and within the limit, labels that
 * name every key, and tide_sweep_apply must accept every point on a cluster
 * large enough. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *spec = malloc(size + 1);
    memcpy(spec, data, size);
    spec[size] = '\0';
    tide_sweep_grid_t g;
    tide_error_t err;
    if (tide_sweep_parse(spec, &g, &err) != 0) {
        if (g.n_axes != 0 || g.n_points != 0 || err.code != TIDE_EINVAL || !err.msg[0])
            abort(); /* a refused grid is left empty, with a message */
        tide_sweep_grid_free(&g);
        free(spec);
        return 0;
    }
    size_t points = 1;
    unsigned seen = 0;
    if (g.n_axes == 0 || g.n_axes > TIDE_SWEEP_NKEYS)
        abort();
    for (size_t a = 0; a < g.n_axes; a++) {
        const tide_sweep_axis_t *ax = &g.axis[a];
        if (ax->key < 0 || ax->key >= TIDE_SWEEP_NKEYS || (seen & (1u << ax->key)))
            abort();
        seen |= 1u << ax->key;
        if (ax->n == 0 || ax->n > TIDE_SWEEP_MAX_VALUES)
            abort();
        for (size_t i = 0; i < ax->n; i++) {
            double v = ax->v[i];
            if (!isfinite(v) || v < 0 || (i > 0 && v <= ax->v[i - 1]))
                abort();
            if (ax->key == TIDE_SWEEP_MARGIN && v > 1)
                abort();
            if (ax->key != TIDE_SWEEP_MARGIN && v != floor(v))
                abort();
        }
        points *= ax->n;
    }
    if (points != g.n_points || points > TIDE_SWEEP_MAX_POINTS)
        abort();
    char label[512];
    size_t probe[2] = {0, g.n_points - 1};
    for (int k = 0; k < 2; k++) {
        tide_sweep_label(&g, probe[k], label, sizeof label);
        for (size_t a = 0; a < g.n_axes; a++)
            if (!strstr(label, tide_sweep_key_name(g.axis[a].key)))
                abort();
        tide_config_t cfg;
        tide_config_default(&cfg);
        cfg.margin_max = 1.0;
        if (tide_sweep_apply(&g, probe[k], 100000000, &cfg, &err) != 0)
            abort();
    }
    tide_sweep_grid_free(&g);
    free(spec);
    return 0;
}
