# Helpers for the end-to-end tests of `tide serve --backend slurm` on a real local Slurm
# (sourced after lib/serve.bash, not run: ctest only runs tests/e2e/*.sh).
#
#   slurm_e2e_up   skip (exit 77) unless root, the Slurm and munge programs and a tide built
#                  with the slurm backend; then serve_require, bring up scripts/slurm-local.sh
#                  (4 slurmd x 8 fake GPUs) in $TIDE_SLURM_DIR (default $tmp/slurm; CTLD_PORT
#                  and NODE_PORT0 pass through), export its SLURM_CONF, and on exit kill the
#                  daemons started, bring Slurm down and clean up. Sets SRC (the source tree).

slurm_down() { bash "$SRC/scripts/slurm-local.sh" down >/dev/null 2>&1 || true; }

slurm_cleanup_all() {
    local p
    for p in "${SERVE_PIDS[@]}"; do _alive "$p" && kill -KILL "$p" 2>/dev/null; done
    slurm_down
    serve_cleanup
}

slurm_e2e_up() {
    local b
    if [ "$(id -u)" != 0 ]; then
        echo "skip: needs root (slurmd runs jobs)" >&2
        exit 77
    fi
    for b in slurmctld slurmd munged sinfo squeue scontrol sbatch scancel; do
        command -v "$b" >/dev/null 2>&1 || { echo "skip: $b missing (apt-get install -y slurmctld slurmd slurm-client munge)" >&2; exit 77; }
    done
    serve_require
    if ! "$TIDE_BIN" serve --help | grep -q -- '--slurm-conf'; then
        echo "skip: this tide has no slurm backend" >&2
        exit 77
    fi
    SRC=${TIDE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
    export TIDE_SLURM_DIR=${TIDE_SLURM_DIR:-$tmp/slurm}
    trap slurm_cleanup_all EXIT
    bash "$SRC/scripts/slurm-local.sh" up || { echo "FAIL: the local Slurm cluster did not come up" >&2; exit 1; }
    eval "$(bash "$SRC/scripts/slurm-local.sh" env)"
}
