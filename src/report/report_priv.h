/* Private to report.c and report_teams.c: the Teams part of the HTML report.
 *
 * report.c reads timeline.csv and hands each policy's interval grid to
 * tide_report_teams, which reduces DIR/usage.csv, usage_teams.csv and
 * usage_services.csv (docs/governance.md) to what the page's Teams section
 * draws. The JSON keys: docs/report.md ("Teams"). */
#ifndef TIDE_SIM_REPORT_PRIV_H
#define TIDE_SIM_REPORT_PRIV_H

#include <stddef.h>

#include <jansson.h>

/* One policy's timeline intervals: [t[i], t[i + 1]) and [t[n - 1], end). */
typedef struct tide_report_grid {
    const char *policy; /* borrowed */
    double *t;          /* interval starts, increasing (owned by the caller) */
    size_t n;
    double end;         /* end of the last interval */
} tide_report_grid_t;

/* The Teams data of the run in `dir` for the policies of `order` (a JSON
 * array of names), with team figures of summary.json merged in:
 *   {"available": bool, "error": message (when usage.csv is missing or
 *    unreadable), "max_points", "max_teams", "max_series", "governance": bool,
 *    "policies": {name: {...}}}
 * Never fails: a missing or malformed usage.csv gives available false and
 * the reason in "error" (the rest of the report is still written). The
 * caller owns the result. */
json_t *tide_report_teams(const char *dir, const json_t *summary, const json_t *order,
                          const tide_report_grid_t *grid, size_t ngrid);

#endif
