/* libFuzzer target: the CSV reader (header mode and headerless mode). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int flags = (size > 0 && (data[0] & 1)) ? TIDE_CSV_NO_HEADER : 0;
    tide_error_t err;
    tide_csv_t *c = tide_csv_open_mem_ex((const char *)data, size, "fuzz.csv", flags, &err);
    if (!c)
        return 0;
    for (int i = 0; i < tide_csv_ncols(c); i++)
        if (tide_csv_col(c, tide_csv_colname(c, i)) < 0)
            abort(); /* every header name must be found */
    size_t total = 0;
    for (;;) {
        int r = tide_csv_next(c, &err);
        if (r == 0)
            break;
        if (r < 0) {
            if (!tide_csv_recoverable(c))
                break;
            continue;
        }
        int n = tide_csv_nfields(c);
        if (!flags && n != tide_csv_ncols(c))
            abort();
        for (int i = 0; i < n; i++)
            total += strlen(tide_csv_field(c, i));
        if (tide_csv_field(c, n) != NULL || tide_csv_line(c) < 1)
            abort();
        tide_csv_fail(c, &err, 0, TIDE_EINVAL, "x");
    }
    if (total > size)
        abort(); /* fields never hold more bytes than the input */
    tide_csv_close(c);
    return 0;
}
