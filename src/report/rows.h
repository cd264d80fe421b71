/* Private to src/report: reading the rows of one policy from a run's CSV
 * files (timeline.csv, events.csv, sweep.csv, the usage files). The analyses
 * treat those files as optional: a missing file is no data, and a short row
 * (tide_csv_recoverable) is passed over. */
#ifndef TIDE_REPORT_ROWS_H
#define TIDE_REPORT_ROWS_H

#include "formats/csv.h"

/* DIR/NAME opened for reading, or NULL when it is missing or unreadable (no
 * message: the callers report the data as not available). The caller owns
 * the result (tide_csv_close). */
tide_csv_t *tide_report_rows_open(const char *dir, const char *name);

/* Moves `c` to its next row whose column `pcol` reads `policy` (any row when
 * `policy` is NULL or `pcol` < 0): 1 when there is one, 0 at the end of the
 * file or at an error that cannot be read past. Short rows are passed over. */
int tide_report_rows_next(tide_csv_t *c, int pcol, const char *policy);

#endif
