/* tide simulator: latency as users feel it. A fluid queueing model per
 * service: requests arrive at the demand rate; the ready replicas serve at
 * most replicas x replica_rps; what exceeds that waits in a bounded FIFO
 * queue (beyond the bound it is rejected) instead of vanishing. Each served
 * request gets a time to first token (queue wait + prefill time from the
 * replica's prefill curve) and a time between tokens (from the replica's
 * decode curve at the concurrency its load implies); both go into fixed
 * log-spaced histograms, so the cost of a tick is independent of the number
 * of requests. Deterministic and pure (no I/O, no clock). docs/sim.md,
 * "Latency model". */
#ifndef TIDE_WORLD_LATENCY_H
#define TIDE_WORLD_LATENCY_H

#include <stddef.h>

/* Declared per-replica service curves and targets of one service. A field
 * left 0 takes its default from tide_latency_spec_default. */
typedef struct tide_latency_spec {
    double replica_rps;   /* requests/s one replica serves (the service's), > 0 */
    double ttft_target_s; /* time-to-first-token target (default 2 s) */
    double tbt_target_s;  /* time-between-tokens target (default 0.1 s) */
    double prompt_tokens; /* mean prompt length (default 1024) */
    double output_tokens; /* mean output length (default 256) */
    double prefill_tps;   /* prefill tokens/s of one replica (default 8 x replica_rps x
                             prompt_tokens: prefill takes 1/8 of a replica at full load) */
    double decode_tps;    /* decode tokens/s of one replica at saturation (default
                             2 x replica_rps x output_tokens) */
    double decode_knee;   /* concurrency at which decode reaches half of decode_tps
                             (default 32): decode tokens/s at concurrency c is
                             decode_tps x c / (c + knee), so TBT = (c + knee) / decode_tps */
    double queue_max_s;   /* queue bound in seconds of ready capacity: at most
                             queue_max_s x ready x replica_rps requests wait (default 30) */
} tide_latency_spec_t;

/* Fill the 0 fields of s with the defaults above (replica_rps must be set).
 * Returns 0, or -1 when a field is negative or not finite, or replica_rps <= 0. */
int tide_latency_spec_default(tide_latency_spec_t *s);

typedef struct tide_latency tide_latency_t;

/* A model of n services with the given specs (copied; defaults applied).
 * Returns NULL when a spec is invalid (tide_latency_spec_default fails). */
tide_latency_t *tide_latency_create(const tide_latency_spec_t *specs, size_t n);
void tide_latency_destroy(tide_latency_t *m); /* NULL is a no-op */

/* Advance service s by dt seconds at a constant demand of demand_rps with
 * `ready` replicas serving. Out-of-range s, dt <= 0 or bad values: no-op.
 * The interval is split into a fixed number of sub-steps. */
void tide_latency_advance(tide_latency_t *m, int s, double dt, double demand_rps, int ready);

/* 1: compute every sub-step in full, 0 (default): once a sub-step leaves the
 * queue where it found it, the remaining ones (identical) only add its
 * increments. Both give the same figures to the last bit; for tests. */
void tide_latency_set_full(tide_latency_t *m, int full);

/* Figures of one service (s >= 0) or of all services together (s = -1):
 * request counts (served + queued + rejected = arrived), the P50/P99 of
 * TTFT and TBT over the served requests (0 when none was served), the
 * fraction of finished requests (served + rejected) served within the TTFT
 * target (a rejected one counts as a miss; 1 when none finished) and the
 * same for TBT, and the longest queue seen (requests). Returns 0, or -1 for
 * an unknown service. */
typedef struct tide_latency_stats {
    double arrived, served, queued, rejected;
    double ttft_p50_s, ttft_p99_s, tbt_p50_s, tbt_p99_s;
    double ttft_attain, tbt_attain;
    double max_queue;
} tide_latency_stats_t;
int tide_latency_stats(const tide_latency_t *m, int s, tide_latency_stats_t *out);

/* The spec of service s after defaults, or NULL. */
const tide_latency_spec_t *tide_latency_spec(const tide_latency_t *m, int s);

#endif
