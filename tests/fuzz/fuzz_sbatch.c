/* libFuzzer target: #SBATCH lines of a batch script (formats/sbatch.c). Any
 * input parses or fails with a message; what parses is in range. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/sbatch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tide_sbatch_t sb;
    tide_error_t err;
    if (tide_sbatch_parse((const char *)data, size, &sb, &err) == 0) {
        if (sb.nodes == 0 || sb.gpus == 0 || sb.gpus_per_node == 0 || sb.ntasks_per_node == 0 ||
            sb.time_s < -1 || sb.n_ignored < 0 || sb.n_ignored > TIDE_SBATCH_MAX_IGNORED ||
            !memchr(sb.job_name, 0, sizeof sb.job_name) || !memchr(sb.qos, 0, sizeof sb.qos) ||
            !memchr(sb.comment, 0, sizeof sb.comment) || !memchr(sb.gpu_type, 0, sizeof sb.gpu_type))
            abort();
    } else if (!err.msg[0]) {
        abort();
    }
    /* the time parser alone, on the input as a string */
    char buf[64];
    size_t n = size < sizeof buf - 1 ? size : sizeof buf - 1;
    memcpy(buf, data, n);
    buf[n] = 0;
    int64_t t;
    if (tide_sbatch_time(buf, &t) == 0 && t < -1)
        abort();
    return 0;
}
