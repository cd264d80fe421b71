#!/usr/bin/env bash
# A/B of durable submissions from closed-loop clients: two builds of tide
# (e.g. before and after a change) measured alternately, ROUNDS rounds, each a
# fresh `tide serve` (sim backend, 16x8 GPUs, a new database) under
# build/bench/api_bench --op submit --threads THREADS for SECS s. Alternating
# spreads a shared machine's load over both; compare the medians.
#
#   bash bench/serve_ab.sh BUILD_A BUILD_B      (ROUNDS=5 SECS=6 THREADS=4)
#
# Prints one line per run: round, build, submits/s, p50 ms, p99 ms, writes per
# commit, load average; then each build's median submits/s.
set -uo pipefail
[ $# = 2 ] || { echo "usage: bash bench/serve_ab.sh BUILD_A BUILD_B" >&2; exit 2; }
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-6}
THREADS=${THREADS:-4}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
for b in "$1" "$2"; do
    [ -x "$b/tide" ] && [ -x "$b/bench/api_bench" ] || { echo "serve_ab: $b/tide or $b/bench/api_bench is not built" >&2; exit 1; }
done
# shellcheck source=../tests/e2e/lib/serve.bash
. "$ROOT/tests/e2e/lib/serve.bash"
tmp=$(mktemp -d /tmp/tide-serve-ab.XXXXXX)
SERVE_PIDS=()
EXTRA_PIDS=()
trap serve_cleanup EXIT
one() { # BUILD NAME ROUND
    local b=$1 out w c
    TIDE_BIN=$(cd "$b" && pwd)/tide serve_start "ab$3$2" --db "$tmp/$2.$3.db" --cluster 16x8:H100 \
        --policy elastic --speed 1 || { echo "serve_ab: tide serve ($b) did not start" >&2; exit 1; }
    out=$("$b/bench/api_bench" --url "$SERVE_URL" --op submit --threads "$THREADS" --secs "$SECS" \
        --prefix "ab$3") || { echo "serve_ab: api_bench ($b) produced no result" >&2; exit 1; }
    curl -s "$SERVE_URL/metrics" >"$tmp/metrics"
    serve_stop
    w=$(awk '$1 == "tide_api_writes_total" {print $2}' "$tmp/metrics")
    c=$(awk '$1 == "tide_api_commits_total" {print $2}' "$tmp/metrics")
    echo "$out" | awk -v r="$3" -v n="$2" -v w="$w" -v c="$c" -v l="$(cut -d' ' -f1 /proc/loadavg)" \
        '{printf "%s %s %s/s p50 %s p99 %s writes/commit %.2f load %s\n", r, n, $7, $8, $9, (c > 0 ? w / c : 0), l}'
}
for r in $(seq "$ROUNDS"); do
    one "$1" A "$r"
    one "$2" B "$r"
done | tee "$tmp/runs"
for n in A B; do
    awk -v n="$n" '$2 == n {sub("/s", "", $3); print $3}' "$tmp/runs" | sort -n |
        awk -v n="$n" '{v[NR] = $1} END {printf "%s median %s/s over %d runs\n", n, (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), NR}'
done
