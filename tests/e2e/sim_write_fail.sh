#!/usr/bin/env bash
# End-to-end: a failed write of events.csv fails the run with a clear message
# (exit 6, "cannot write DIR/events.csv: No space left on device", no
# summary.json), both when the rows are formatted on the simulation thread (a
# short run: fewer rows than one chunk of src/sim/sim.c's EVQ_ROWS, 2048; or a
# long one with TIDE_SIM_WRITER=0) and when a writer thread formats and writes
# them (a run of tens of thousands of rows with TIDE_SIM_WRITER=1: the thread
# whatever the machine's load); events.csv is a link to /dev/full, where every
# write fails with ENOSPC. Also: the long run's events.csv, written to a real
# file, is the same with and without the thread, and with every output as
# with events alone.
# Environment: TIDE_BIN. Exit 77 = skip.
set -u
[ -x "${TIDE_BIN:-}" ] || { echo "skip: TIDE_BIN" >&2; exit 77; }
[ -w /dev/full ] || { echo "skip: no /dev/full" >&2; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tide-wfail.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
cd "$tmp"
"$TIDE_BIN" gen --scenario bench --nodes 16 --jobs 3000 --days 2 --seed 1 --out g >/dev/null 2>&1 ||
    { echo "FAIL: tide gen" >&2; exit 1; }
sim() { "$TIDE_BIN" sim --cluster 16x8:H100 --services g/services.csv --demand g/demand.csv \
        --jobs g/jobs.csv --policy elastic "$@"; }

# the row counts that make one run short and the other threaded
sim --horizon 1h --out short_ok --outputs events >/dev/null 2>&1 || fail "short run"
TIDE_SIM_WRITER=1 sim --horizon 2d --out long_ok --outputs events >/dev/null 2>&1 || fail "long run"
ns=$(($(wc -l <short_ok/events.csv) - 1)); nl=$(($(wc -l <long_ok/events.csv) - 1))
[ "$ns" -gt 0 ] && [ "$ns" -lt 2048 ] || fail "the short run has $ns rows, not 1..2047"
[ "$nl" -gt 8192 ] || fail "the long run has $nl rows, not over 4 chunks"

for run in "short 1h 1" "long 2d 1" "inline 2d 0"; do
    set -- $run
    mkdir "$1"
    ln -s /dev/full "$1/events.csv"
    TIDE_SIM_WRITER=$3 sim --horizon "$2" --out "$1" >out.txt 2>err.txt; rc=$?
    [ "$rc" = 6 ] || fail "$1: exit $rc, not 6 (EIO): $(cat err.txt)"
    grep -q "cannot write $1/events.csv: No space left on device" err.txt ||
        fail "$1: message: $(cat err.txt)"
    [ -e "$1/summary.json" ] && fail "$1: summary.json written after a failed events.csv"
done

TIDE_SIM_WRITER=1 sim --horizon 2d --out long_all >/dev/null 2>&1 || fail "long run, every output"
TIDE_SIM_WRITER=0 sim --horizon 2d --out long_inline >/dev/null 2>&1 || fail "long run, no thread"
cmp -s long_ok/events.csv long_all/events.csv || fail "events.csv differs with every output"
cmp -s long_all/events.csv long_inline/events.csv || fail "events.csv differs without the thread"
[ "$fails" -eq 0 ] || exit 1
echo "sim_write_fail: ok"
