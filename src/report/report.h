/* tide simulator: the HTML report (`tide report DIR`, `tide sim --report F`).
 *
 * Reads a `tide sim` output directory (summary.json, timeline.csv, events.csv
 * and, when present, sweep.json and usage.csv; docs/sim.md, docs/governance.md)
 * and writes ONE self-contained HTML file: inline CSS, an inline script that
 * draws SVG charts, and the data embedded as JSON in <script
 * type="application/json" id="tide-data">. The page loads nothing from the
 * network (no external scripts, fonts, images). The output is a pure function
 * of the input files (no timestamps).
 *
 * What the page holds and how each figure is derived: docs/report.md. */
#ifndef TIDE_SIM_REPORT_H
#define TIDE_SIM_REPORT_H

#include "tide/types.h"

/* Points per policy and timeline series on the page at most: the timeline is
 * downsampled by a whole factor (bucket means; columns beyond the documented
 * ones, such as storage_gbps, take the bucket maximum so spikes survive). */
#define TIDE_REPORT_MAX_POINTS 2000
/* Leases drawn per policy at most (every reclaimed lease first, then the
 * others in grant order). */
#define TIDE_REPORT_MAX_LEASES 3000
/* Fault / unknown-kind event rows kept per policy. */
#define TIDE_REPORT_MAX_FAULTS 500
/* Most model-pipeline rows kept per policy (the lane). */
#define TIDE_REPORT_MAX_VERSION_ROWS 5000
/* Burst windows taken from events.csv per policy. */
#define TIDE_REPORT_MAX_BURSTS 32
/* SLO-miss intervals kept per policy (merged, full timeline resolution). */
#define TIDE_REPORT_MAX_MISSES 4000
/* Teams (usage.csv): points per team series at most (the timeline's intervals
 * merged in whole buckets), teams listed per policy (largest first; the rest
 * are summed on one line), teams with time series per policy, services listed
 * per policy. */
#define TIDE_REPORT_MAX_TEAM_POINTS 500
#define TIDE_REPORT_MAX_TEAMS 200
#define TIDE_REPORT_MAX_TEAM_SERIES 32
#define TIDE_REPORT_MAX_SERVICES 200

/* Write the report of the run in `dir` to `out_html` (NULL = DIR/report.html).
 * summary.json and timeline.csv are required; events.csv is optional (no
 * lease timeline without it); DIR/sweep.json is added when present and not
 * older than summary.json. usage.csv (with usage_teams.csv and
 * usage_services.csv) gives the Teams section; when it is missing or cannot
 * be read that section says so and the rest is written. The capacity signals
 * (report/signals.h, default thresholds) are computed for every policy. Columns of timeline.csv and keys of summary.json
 * beyond the documented ones are carried along (storage_gbps, faults).
 * Returns 0, or -1 with err: ENOENT when dir or a required file is missing,
 * EINVAL for a malformed input (the message names file and line), EIO when
 * the output cannot be written. */
int tide_report_write(const char *dir, const char *out_html, tide_error_t *err);

#endif
