/* Reading the rows of one policy from a run's CSV files (rows.h). */
#include "report/rows.h"

#include <stdio.h>
#include <string.h>

tide_csv_t *tide_report_rows_open(const char *dir, const char *name)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return NULL;
    return tide_csv_open_file(path, NULL);
}

int tide_report_rows_next(tide_csv_t *c, int pcol, const char *policy)
{
    for (;;) {
        int r = tide_csv_next(c, NULL);
        if (r == 0)
            return 0;
        if (r < 0) {
            if (tide_csv_recoverable(c))
                continue;
            return 0;
        }
        if (!policy || pcol < 0 || strcmp(tide_csv_field(c, pcol), policy) == 0)
            return 1;
    }
}
