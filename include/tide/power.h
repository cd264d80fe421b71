/* tide: GPU power models, the throughput-vs-cap curve and power budgets
 * (docs/formats.md "Power"). Pure. */
#ifndef TIDE_POWER_H
#define TIDE_POWER_H

#ifdef __cplusplus
extern "C" {
#endif

#define TIDE_POWER_CURVE_MAX 8

/* Draw of one GPU by state, in watts, and how training slows under a cap.
 * Defaults (tide_power_model_default) describe an H100-class SXM GPU:
 * TDP 700 W, idle 90 W, serving 200 W unloaded to 600 W at full load,
 * training 650 W, checkpointing / restoring / warming 300 W, lowest cap
 * 200 W. Measured values replace them per GPU type (cluster YAML `power:`,
 * or the daemon's --power-query). */
typedef struct tide_power_model {
    double tdp_w;         /* nameplate draw (budgets as a fraction of it) */
    double idle_w;        /* free GPU */
    double serve_idle_w;  /* ready replica with no load */
    double serve_full_w;  /* ready replica at its rated load (replica_rps) */
    double train_w;       /* training, uncapped */
    double ckpt_w;        /* checkpointing, restoring, warming up (I/O bound) */
    double min_cap_w;     /* lowest cap the GPU accepts */
    /* throughput-vs-cap curve: points (cap / train_w, relative throughput),
     * cap fraction descending from 1; linear in between, flat below the
     * last point */
    int n_curve;
    double curve_frac[TIDE_POWER_CURVE_MAX];
    double curve_speed[TIDE_POWER_CURVE_MAX];
} tide_power_model_t;

/* Fill m with the H100-class defaults above and the default curve
 * (Perseus/Zeus-like: 1.0 -> 1.0, 0.9 -> 0.985, 0.8 -> 0.95, 0.7 -> 0.89,
 * 0.6 -> 0.80, 0.5 -> 0.69, 0.4 -> 0.56, 0.3 -> 0.42). */
void tide_power_model_default(tide_power_model_t *m);

/* 0 if m is consistent (all draws >= 0, idle <= serve_idle <= serve_full
 * <= tdp, train and ckpt <= tdp, 0 < min_cap <= train, curve fractions
 * descending in (0, 1] and speeds in (0, 1] not increasing); else -1 and a
 * static message in *why (when not NULL). */
int tide_power_model_check(const tide_power_model_t *m, const char **why);

/* Relative training throughput in (0, 1] at a per-GPU cap of cap_w watts
 * (cap_w <= 0 or >= train_w: 1). */
double tide_power_speed(const tide_power_model_t *m, double cap_w);

/* Draw of a ready serving GPU at load (fraction of rated capacity, clamped
 * to [0, 1]). */
double tide_power_serving(const tide_power_model_t *m, double load);

/* ------------------------------------------------ fitting measured draws */

/* The states a measured draw is attributed to (a GPU's state in the engine):
 * free, a ready replica (with its service's load), an uncapped training
 * job, a checkpointing / restoring job or a warming replica. */
enum {
    TIDE_PSTATE_IDLE = 0,
    TIDE_PSTATE_SERVING,
    TIDE_PSTATE_TRAINING,
    TIDE_PSTATE_CKPT,
    TIDE_PSTATE_COUNT
};
/* "idle", "serving", "training", "checkpointing"; NULL out of range. */
const char *tide_power_state_name(int state);

/* One pull's samples of one GPU type, by state (zero it to start). */
typedef struct tide_power_fit {
    long n[TIDE_PSTATE_COUNT];
    double sum_w[TIDE_PSTATE_COUNT];
    double sum_l, sum_ll, sum_lw;  /* serving: load, load^2, load x watts */
    long rejected;                 /* samples refused by tide_power_fit_add */
} tide_power_fit_t;

/* Add one GPU's measured draw `watts` in `state` (serving: at `load`, the
 * fraction of its service's rated capacity, clamped to [0, 1]). A sample
 * that is not a number, negative, above max_w or of an unknown state is
 * refused: -1 and f->rejected counted; else 0. */
int tide_power_fit_add(tide_power_fit_t *f, int state, double load, double watts, double max_w);

/* Move model m towards the samples of f. For each state with at least
 * min_n samples: the mean draw; serving a line watts = a + b x load by
 * least squares when the loads spread (variance >= 0.01, slope >= 0),
 * else the declared line shifted so that it passes through the mean at
 * the mean load. A state not yet in *mask takes the fitted value; one
 * already measured moves by alpha (0 < alpha <= 1) of the difference
 * (exponential smoothing across pulls). Then every draw is clamped to
 * [0, tdp], the order idle <= serving unloaded <= serving full restored by
 * raising the upper value, and min_cap lowered to training when above it
 * (tdp and the throughput curve stay as declared). *mask gains bit
 * (1 << state) for each state fitted. Returns the number of states fitted
 * (m unchanged when 0). Pure. */
int tide_power_fit_apply(const tide_power_fit_t *f, int min_n, double alpha,
                         tide_power_model_t *m, unsigned *mask);

#ifdef __cplusplus
}
#endif
#endif
