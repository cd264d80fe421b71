/* libFuzzer target: the --inject parser and the fault schedule. The input is
 * one or more lists separated by newlines (a repeated --inject); each must
 * either parse into well-formed items or fail with a message quoting an item
 * and leave the list as it was. The schedule of what parsed must be sorted and
 * inside the horizon. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/inject.h"

#define HORIZON 7200 /* short: rate items may ask for 10000 failures a day */

static void check_item(const tide_fault_t *f)
{
    if (!f->text || f->kind < 0 || f->kind >= TIDE_FAULT_KIND_COUNT || f->at < 0 || f->dur < 0)
        abort();
    switch (f->kind) {
    case TIDE_FAULT_BURST:
        if (!(f->factor > 0 && f->factor <= TIDE_INJECT_MAX_FACTOR) || f->dur <= 0 ||
            (f->target && !f->target[0]))
            abort();
        break;
    case TIDE_FAULT_NODE_FAIL:
        if (f->count < 1)
            abort();
        break;
    case TIDE_FAULT_RANK_FAIL:
        if (!f->target || !f->target[0] || f->dur != 0)
            abort();
        break;
    case TIDE_FAULT_RANK_FAIL_RATE:
        if (!(f->per_day >= 0 && f->per_day <= TIDE_INJECT_MAX_RATE_PER_DAY))
            abort();
        break;
    case TIDE_FAULT_CTL_DOWN:
        if (f->dur <= 0)
            abort();
        break;
    case TIDE_FAULT_STORAGE:
        if (!(f->gbps > 0 && f->gbps <= TIDE_INJECT_MAX_GBPS))
            abort();
        break;
    case TIDE_FAULT_RACK_FAIL:
    case TIDE_FAULT_POWER_FAIL:
        if (f->domain < -1)
            abort();
        break;
    case TIDE_FAULT_PARTITION:
        if (f->n_nodes < 1 || !f->nodes || f->dur <= 0)
            abort();
        for (int k = 0; k < f->n_nodes; k++)
            if (f->nodes[k] < 0)
                abort();
        break;
    }
    for (const char *p = f->text; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == ',')
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = 0;
    tide_inject_t inj;
    tide_inject_init(&inj);
    char *save = s;
    for (;;) {
        char *nl = strchr(save, '\n');
        if (nl)
            *nl = 0;
        size_t before = inj.n;
        tide_error_t err = {0, ""};
        if (tide_inject_parse(&inj, save, &err) != 0) {
            if (inj.n != before || err.code != TIDE_EINVAL || err.msg[0] != '\'')
                abort();
        } else if (inj.n <= before && strlen(save) > 0) {
            abort();
        }
        if (!nl)
            break;
        save = nl + 1;
    }
    int storage = 0;
    for (size_t i = 0; i < inj.n; i++) {
        check_item(&inj.v[i]);
        storage += inj.v[i].kind == TIDE_FAULT_STORAGE;
    }
    if (storage > 1)
        abort();
    tide_schedule_t sc = {0};
    tide_inject_schedule(&inj, HORIZON, (uint64_t)size, &sc);
    for (size_t i = 0; i < sc.n; i++) {
        const tide_fire_t *f = &sc.v[i];
        if (f->t < 0 || f->t > HORIZON || f->fault < 0 || (size_t)f->fault >= inj.n ||
            f->kind < 0 || f->kind >= TIDE_FIRE_KIND_COUNT)
            abort();
        if (i && (sc.v[i - 1].t > f->t ||
                  (sc.v[i - 1].t == f->t && sc.v[i - 1].kind > f->kind)))
            abort();
    }
    tide_service_spec_t svc = {.name = "chat", .gpus_per_replica = 8, .replica_rps = 1};
    tide_job_spec_t job = {.id = "j1", .team = "t", .priority = 2, .gpus = 8};
    tide_error_t err = {0, ""};
    if (tide_inject_check(&inj, &svc, 1, &job, 1, 4, &err) != 0 &&
        strncmp(err.msg, "--inject: '", 11) != 0)
        abort();
    tide_schedule_free(&sc);
    tide_inject_free(&inj);
    free(s);
    return 0;
}
