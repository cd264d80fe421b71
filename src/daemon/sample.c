/* Usage snapshots: the engine's cumulative GPU-seconds, taken with the
 * simulator's sampler (tide_usage_cells, src/formats/usage.h) so that both
 * count the same cells. The snapshots keep the keys /v1/usage groups by
 * (owner kind, owner, class, state, tier): GPU types are summed. */
#include <stdlib.h>
#include <string.h>

#include "daemon/internal.h"
#include "formats/usage.h"
#include "util/util.h"

static const char *const owner_kinds[TIDE_OWNER_COUNT] = {
    [TIDE_OWNER_TEAM] = "team", [TIDE_OWNER_SERVICE] = "service", [TIDE_OWNER_IDLE] = "idle",
    [TIDE_OWNER_FOREIGN] = "foreign"};

typedef struct sample {
    usage_rows_t *out;
    tide_usage_cell_t key; /* the row being summed (its gpu_s: the sum) */
    int have;
} sample_t;

static int same_row(const tide_usage_cell_t *a, const tide_usage_cell_t *b)
{
    return a->kind == b->kind && a->index == b->index && a->cls == b->cls &&
           a->state == b->state && a->tier == b->tier;
}

/* The summed row, unless it is zero. */
static void flush(sample_t *s)
{
    const tide_usage_cell_t *k = &s->key;
    if (!s->have || k->gpu_s == 0)
        return;
    tide_store_usage_t u = {owner_kinds[k->kind], k->index < 0 ? "" : k->owner,
                            tide_class_name(k->cls), tide_state_name(k->state),
                            tide_tier_name(k->tier), k->gpu_s};
    TIDE_PUSH(s->out->v, s->out->n, s->out->cap, u);
}

/* Cells come with the type varying fastest: sum consecutive ones. */
static void add_cell(void *ctx, const tide_usage_cell_t *c)
{
    sample_t *s = ctx;
    if (s->have && same_row(&s->key, c)) {
        s->key.gpu_s += c->gpu_s;
        return;
    }
    flush(s);
    s->key = *c;
    s->have = 1;
}

void dmn_usage_now(tide_daemon_t *d, usage_rows_t *out)
{
    out->n = 0;
    sample_t s = {.out = out};
    tide_usage_cells(d->e, NULL, add_cell, &s);
    flush(&s);
}

void dmn_usage_free(usage_rows_t *r)
{
    free(r->v);
    memset(r, 0, sizeof *r);
}
