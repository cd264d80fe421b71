#!/usr/bin/env bash
# End-to-end: the libslurm backend ops (src/backend/slurm_lib.c) against a real
# local Slurm 22.05: scripts/slurm-local.sh brings up munged, slurmctld and 4
# slurmd (gpu1..gpu4 x 8 fake GPUs) in a fresh state folder, then
# tests/slurm/test_slurm_lib.c (built as <build>/tests/test_slurm_lib) runs every
# operation: nodes, submit held, set_nodes, release, time limits, SIGUSR1 to
# the batch script, requeue+hold, release, cancel, exit codes, errors.
# The cluster is always stopped on exit.
# Environment: TIDE_BIN, TIDE_SRC (CTLD_PORT / NODE_PORT0 pass through to
# slurm-local.sh; default ports otherwise). Exit 77 = skip (not root, Slurm or
# munge not installed, or tide built without libslurm). Takes ~35-40 s.
set -u

say() { echo "slurm_lib.sh: $*" >&2; }

[ "$(id -u)" = 0 ] || { say "skip: needs root (slurmd runs the jobs)"; exit 77; }
for b in slurmctld slurmd munged munge sinfo scontrol; do
    command -v "$b" >/dev/null 2>&1 || { say "skip: $b not installed"; exit 77; }
done
: "${TIDE_BIN:?TIDE_BIN not set}" "${TIDE_SRC:?TIDE_SRC not set}"
PROG=$(dirname "$TIDE_BIN")/tests/test_slurm_lib
[ -x "$PROG" ] || { say "skip: $PROG not built (tide built without libslurm?)"; exit 77; }

TIDE_SLURM_DIR=$(mktemp -d /tmp/tide-slurm-e2e.XXXXXX) || exit 1
export TIDE_SLURM_DIR
LOCAL="$TIDE_SRC/scripts/slurm-local.sh"

finish() {
    local rc=$?
    if [ "$rc" != 0 ] && [ -f "$TIDE_SLURM_DIR/log/slurmctld.log" ]; then
        say "slurmctld.log (last 30 lines):"
        tail -30 "$TIDE_SLURM_DIR/log/slurmctld.log" >&2
    fi
    bash "$LOCAL" down >/dev/null 2>&1 || say "slurm-local.sh down failed"
    rm -rf "$TIDE_SLURM_DIR"
    exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

bash "$LOCAL" up || { say "the local Slurm did not come up"; exit 1; }
eval "$(bash "$LOCAL" env)" || exit 1

# libslurm leaks on refused submissions (see the file): ASan builds only
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$TIDE_SRC/tests/slurm/lsan.supp"
timeout 600 "$PROG"
rc=$?
[ "$rc" = 124 ] && say "test_slurm_lib timed out after 600 s"
exit "$rc"
