#!/usr/bin/env bash
# tide benchmark: API latency while the engine works (make bench-latency).
#
#   bash bench/serve_latency.sh [BUILD]
#
# A fresh `tide serve --backend sim` with a 16,384-GPU cluster (2048x8,
# --speed 60) is filled with 12,048 8-GPU jobs (2,048 run, 10,000 wait),
# durations 10 min to 2 h of engine time, so jobs finish and start every
# second while the API is measured. Then, for $SECS s, three paced clients run
# at once (build/bench/api_bench, one connection each): submit (50/s, the
# realistic body), get one job (200/s) and list 50 jobs (50/s); P50, P99 and
# the worst latency of each, and the engine steps taken meanwhile, are
# appended to bench/serve_results.md (section "Latency while the engine
# works"). Fails (exit 1, the reason) when a client produces no result.
set -uo pipefail
BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
TIDE_BIN=$(cd "$(dirname "$BUILD/tide")" 2>/dev/null && pwd)/tide
API_BENCH=$(dirname "$TIDE_BIN")/bench/api_bench
SECS=${SECS:-20}
RES=${RES:-$ROOT/bench/serve_results.md}
die() { echo "bench-latency: $*" >&2; exit 1; }
[ -x "$TIDE_BIN" ] || die "$BUILD/tide is not built (make build)"
[ -x "$API_BENCH" ] || die "$API_BENCH is not built (make build)"
. "$ROOT/tests/e2e/lib/serve.bash"
tmp=$(mktemp -d /tmp/tide-bench-latency.XXXXXX)
SERVE_PIDS=()
EXTRA_PIDS=()
trap serve_cleanup EXIT

serve_start lat --db "$tmp/tide.db" --cluster 2048x8:H100 --policy elastic --speed 60 ||
    die "tide serve did not start: $(tail -5 "$tmp/lat.log" 2>/dev/null)"
stat() { curl -s "$SERVE_URL/v1/cluster" | python3 -c "import json,sys; print(json.load(sys.stdin)['stats']['$1'])"; }
echo "bench-latency: filling 2048x8 with 12,048 jobs" >&2
k=0
while [ "$(stat queue_jobs)" -lt 10000 ]; do
    k=$((k + 1))
    [ "$k" -le 20 ] || die "the queue did not reach 10,000 jobs"
    "$API_BENCH" --url "$SERVE_URL" --op submit --threads 8 --secs 3 --prefix "fill$k" >/dev/null ||
        die "filling: api_bench failed"
done
queued=$(stat queue_jobs)
running=$(stat jobs_running)
steps0=$(curl -s "$SERVE_URL/metrics" | awk '$1 == "tide_engine_steps_total" {print $2}')
echo "bench-latency: $running running, $queued queued; measuring for ${SECS}s" >&2
"$API_BENCH" --url "$SERVE_URL" --op submit --threads 1 --rate 50 --secs "$SECS" --prefix lat >"$tmp/sub" 2>"$tmp/sub.err" &
p1=$!
"$API_BENCH" --url "$SERVE_URL" --op get --threads 1 --rate 200 --secs "$SECS" --get-prefix fill1-1 --ids 300 >"$tmp/get" 2>"$tmp/get.err" &
p2=$!
"$API_BENCH" --url "$SERVE_URL" --op list --threads 1 --rate 50 --secs "$SECS" >"$tmp/list" 2>"$tmp/list.err" &
p3=$!
wait "$p1" || die "submit: no result ($(cat "$tmp/sub.err"))"
wait "$p2" || die "get: no result ($(cat "$tmp/get.err"))"
wait "$p3" || die "list: no result ($(cat "$tmp/list.err"))"
steps1=$(curl -s "$SERVE_URL/metrics" | awk '$1 == "tide_engine_steps_total" {print $2}')
done_jobs=$(stat jobs_completed)
serve_stop
row() { awk -v n="$1" '{printf "| %s | %d | %d | %s | %s | %s |\n", n, $4, $5, $8, $9, $10}' "$2"; }
{
    echo
    echo "## Latency while the engine works (\`make bench-latency\`)"
    echo
    echo "Machine: $(nproc) cores, $(date -u +%Y-%m-%d). Command: \`make bench-latency\` (SECS=$SECS)."
    echo "\`tide serve --backend sim --cluster 2048x8:H100 --speed 60\` (16,384 GPUs) with $running jobs running and"
    echo "$queued queued; during the ${SECS} s the engine took $((steps1 - steps0)) steps ($done_jobs jobs completed by the end)."
    echo "Three clients at once, one connection each, paced: submit 50/s, get 200/s, list 50/s."
    echo
    echo "| operation | ok | failed | p50 ms | p99 ms | worst ms |"
    echo "|---|---:|---:|---:|---:|---:|"
    row "submit (POST /v1/jobs, durable)" "$tmp/sub"
    row "get (GET /v1/jobs/ID)" "$tmp/get"
    row "list (GET /v1/jobs?limit=50)" "$tmp/list"
} | tee -a "$RES"
