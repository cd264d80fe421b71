/* Store faults: a held write lock, a full disk, a lost file. The store
 * refusing a write never destroys anything: the step that could not be
 * persisted is undone (step.c, recover.c: dmn_rewind) and enacts nothing;
 * the daemon turns degraded - writes answer 503 with Retry-After, /readyz
 * fails - and the loop retries with a growing backoff, each attempt first
 * committing a small probe write. One log line when an episode begins and
 * one when it ends. A store that lost its file for good (deleted or
 * replaced under it) stays degraded until tide serve is restarted. */
#include <stdio.h>
#include <string.h>

#include "daemon/internal.h"

#define BUSY_MS 1000          /* a foreign write lock holds the daemon's mutex at most this long */
#define BUSY_DEGRADED_MS 100  /* ... while degraded (attempts fail fast) */
#define BACKOFF_FIRST_S 0.25
#define BACKOFF_MAX_S 5.0

static double wall_now(tide_daemon_t *d) { return d->clock(d->clock_ctx); }

void dmn_store_fault(tide_daemon_t *d, const tide_error_t *why)
{
    const char *msg = why && why->msg[0] ? why->msg : "unknown store error";
    if (!d->lost && !tide_store_writable(d->st)) {
        tide_error_t e = {0};
        tide_store_check_identity(d->st, &e); /* the store's own account of the loss */
        d->lost = 1;
        snprintf(d->degraded_why, sizeof d->degraded_why, "%s", e.msg[0] ? e.msg : msg);
        dmn_log(d, "the store lost its database for good: %s. Nothing is enacted or "
                   "acknowledged from now on (writes answer 503, /readyz fails); the engine and "
                   "the backend stay as they were",
                e.msg[0] ? e.msg : msg);
    }
    if (d->degraded)
        return;
    d->degraded = 1;
    d->degraded_since = wall_now(d);
    d->degraded_episodes++;
    d->store_retries = 0;
    d->retry_s = 0;
    tide_store_busy_timeout(d->st, BUSY_DEGRADED_MS);
    if (!d->lost) {
        snprintf(d->degraded_why, sizeof d->degraded_why, "%s", msg);
        dmn_log(d, "the store cannot write (%s): nothing is enacted or acknowledged until it "
                   "can; writes answer 503, /readyz fails; retrying with backoff",
                msg);
    }
}

int dmn_store_probe(tide_daemon_t *d, tide_error_t *err)
{
    tide_error_t e = {0};
    char v[32];
    snprintf(v, sizeof v, "%lld", (long long)d->now);
    if (tide_store_begin(d->st, &e) < 0 || tide_store_meta_set(d->st, "probe_s", v, &e) < 0 ||
        tide_store_commit(d->st, &e) < 0) {
        tide_store_rollback(d->st);
        dmn_store_fault(d, &e);
        if (err)
            *err = e;
        return -1;
    }
    return 0;
}

void dmn_store_ok(tide_daemon_t *d)
{
    if (!d->degraded || d->lost)
        return;
    d->degraded = 0;
    d->retry_s = 0;
    tide_store_busy_timeout(d->st, BUSY_MS);
    dmn_log(d, "the store writes again after %.1f s (%ld attempts failed): back to normal",
            wall_now(d) - d->degraded_since, d->store_retries);
    d->degraded_why[0] = '\0';
}

int dmn_store_recheck(tide_daemon_t *d)
{
    tide_store_stats_t ss;
    tide_store_stats(d->st, &ss);
    int probed = 0;
    if (ss.errors != d->seen_errors && !d->degraded) {
        /* a store call failed since the last look (an API write, a read):
         * can the store still write? */
        dmn_store_probe(d, NULL);
        tide_store_stats(d->st, &ss);
        probed = 1;
    }
    d->seen_errors = ss.errors;
    return probed;
}

void dmn_store_tick(tide_daemon_t *d)
{
    tide_error_t e = {0};
    if (!d->lost && tide_store_check_identity(d->st, &e) < 0)
        dmn_store_fault(d, &e);
    if (!dmn_store_recheck(d) && !d->degraded) {
        /* idle or not: can we still take the write lock (another process
         * holding it)? No write, no sync: a lock taken and released. */
        if (tide_store_begin(d->st, &e) < 0)
            dmn_store_fault(d, &e);
        else
            tide_store_rollback(d->st);
        dmn_store_recheck(d); /* note the error counted */
    }
}

double dmn_store_backoff(tide_daemon_t *d)
{
    double b = d->retry_s > 0 ? d->retry_s * 2 : BACKOFF_FIRST_S;
    d->retry_s = b > BACKOFF_MAX_S ? BACKOFF_MAX_S : b;
    return d->retry_s;
}

void dmn_store_init(tide_daemon_t *d) { tide_store_busy_timeout(d->st, BUSY_MS); }
