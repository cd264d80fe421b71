/* libFuzzer target: tide_slurm_gres_gpus, the GPUs of a Slurm node's GRES
 * string. The input is "GRES" or "GRES\nGRES\n...": the whole input, then each
 * line, is parsed from an exactly-sized NUL-terminated heap copy (ASan catches
 * a read past it) into type buffers of 1..40 bytes (13 sizes) between canary
 * bytes. Invariants: it returns 0, 0 <= gpus, the type is NUL-terminated
 * within ntype and is a prefix of the type a large buffer gets, the count does
 * not depend on ntype, nothing past ntype is written; NULL outputs give -1. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/slurm_api.h"

#define CANARY 0x5a
#define PAD 16

static void check(const char *s, size_t n)
{
    char *g = malloc(n + 1);
    if (!g)
        return;
    memcpy(g, s, n);
    g[n] = 0;
    char big[256];
    int gpus = -1;
    if (tide_slurm_gres_gpus(g, &gpus, big, sizeof big) != 0 || gpus < 0 ||
        !memchr(big, 0, sizeof big))
        abort();
    size_t bl = strlen(big);
    static const size_t sizes[] = {1, 2, 3, 4, 5, 8, 15, 16, 17, 31, 32, 33, 40};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t nt = sizes[si];
        unsigned char buf[PAD + 40 + PAD];
        memset(buf, CANARY, sizeof buf);
        char *type = (char *)buf + PAD;
        int k = -1;
        if (tide_slurm_gres_gpus(g, &k, type, nt) != 0 || k != gpus)
            abort();
        const char *z = memchr(type, 0, nt);
        if (!z)
            abort(); /* not NUL-terminated within ntype */
        size_t l = (size_t)(z - type);
        if (l != (bl < nt - 1 ? bl : nt - 1) || memcmp(type, big, l) != 0)
            abort();
        for (size_t i = 0; i < sizeof buf; i++)
            if ((i < PAD || i >= PAD + nt) && buf[i] != CANARY)
                abort(); /* written outside type[0..ntype) */
    }
    int k = 0;
    char t[4];
    if (tide_slurm_gres_gpus(g, NULL, t, sizeof t) != -1 || t[0] ||
        tide_slurm_gres_gpus(g, &k, NULL, 4) != -1 || k != 0 ||
        tide_slurm_gres_gpus(g, &k, t, 0) != -1)
        abort();
    free(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    check(s, size);
    /* each line alone (an embedded NUL ends the string: the rest is not read) */
    if (!memchr(s, '\n', size))
        return 0;
    size_t start = 0;
    for (size_t i = 0; i <= size; i++) {
        if (i == size || s[i] == '\n') {
            check(s + start, i - start);
            start = i + 1;
        }
    }
    return 0;
}
