#!/usr/bin/env bash
# tide benchmark: restart (recovery) time of `tide serve` with and without
# engine snapshots, on a long log.
#
#   bash bench/recovery_bench.sh [BUILD]      (STEPS=100000 CLUSTER=16x8:H100 JOBS=300 MAX_SECS=900)
#
# A fresh daemon (sim backend) on CLUSTER with one inference service and JOBS
# training jobs (1-16 GPUs, 1-24 h) submitted at --speed 1; then restarted at
# --speed 1000000 (steps as fast as the disk commits them) until the log
# holds STEPS steps (or MAX_SECS pass) and killed (SIGKILL). Then it is started twice on that
# database: with --snapshot-every 0 (the whole log is replayed) and with the
# default snapshots (--snapshot-every 1000: the newest snapshot is restored and
# the steps after it replayed). Each start is killed once it listens. The
# figures are the daemon's own "recovered ... in X s: replayed N steps" lines
# (wall time of the rebuild: replay, pending events, backend reconcile).
# Results go to bench/recovery_results.md and stdout.
set -uo pipefail
BUILD=${1:-build}
TIDE=$(cd "$(dirname "$BUILD/tide")" && pwd)/tide
HERE=$(cd "$(dirname "$0")" && pwd)
STEPS=${STEPS:-100000}
CLUSTER=${CLUSTER:-16x8:H100}
JOBS=${JOBS:-300}
OUT=${OUT:-$HERE/recovery_results.md}
dir=$(mktemp -d /tmp/tide-recovery.XXXXXX)
pid=
cleanup() {
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
[ -x "$TIDE" ] || { echo "no $TIDE (make build)" >&2; exit 1; }

# start NAME ARGS...: a daemon on the bench database; sets pid, URL
start() {
    local name=$1
    shift
    "$TIDE" serve --listen 127.0.0.1:0 --db "$dir/tide.db" --cluster "$CLUSTER" \
        "$@" >"$dir/$name.out" 2>"$dir/$name.log" &
    pid=$!
    for _ in $(seq 1 6000); do
        URL=$(sed -n 's/^listening on \(http:\/\/[^ ]*\).*$/\1/p' "$dir/$name.out" | head -1)
        [ -n "$URL" ] && return 0
        kill -0 "$pid" 2>/dev/null || { cat "$dir/$name.log" >&2; return 1; }
        sleep 0.1
    done
    echo "$name: not listening after 600 s" >&2
    return 1
}
kill9() { kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=; }
# steps in the log (read from the database: a daemon at this speed rarely
# lets the API take its lock)
steps() { python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from steps").fetchone()[0])' "$dir/tide.db" 2>/dev/null; }
MAX_SECS=${MAX_SECS:-900}

start setup --speed 1 || exit 1
curl -s -o /dev/null -X POST -H 'Content-Type: application/json' "$URL/v1/services" \
    --data-binary '{"service":"chat","gpus_per_replica":8,"replica_rps":100,"min_replicas":1,"max_replicas":6,"warmup_s":300}'
curl -s -o /dev/null -X POST -H 'Content-Type: application/json' "$URL/v1/services/chat/demand" \
    --data-binary '{"rps": 250}'
export URL
seq 1 "$JOBS" | xargs -P 8 -I{} sh -c '
i=$1; g=$(( (i % 5 == 0) ? 16 : (i % 3 == 0) ? 8 : (i % 2) + 1 )); d=$(( 3600 * (1 + i % 24) ))
curl -s -o /dev/null -X POST -H "Content-Type: application/json" "$URL/v1/jobs" --data-binary \
  "{\"job_id\":\"b$i\",\"team\":\"t$((i % 4))\",\"priority\":$((1 + i % 3)),\"gpus\":$g,\"duration_s\":$d,\"ckpt_interval_s\":1800,\"ckpt_s\":60}"' _ {}
kill9
start build --speed 1000000 || exit 1
t0=$(date +%s)
while :; do
    s=$(steps)
    [ -n "$s" ] && [ "$s" -ge "$STEPS" ] && break
    [ $(($(date +%s) - t0)) -ge "$MAX_SECS" ] && break
    sleep 2
done
built_s=$(($(date +%s) - t0))
kill9
STEPS=$(steps)
db_mb=$(du -sm "$dir" | cut -f1)
snap=$(python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print("%d snapshots, newest after step %d, %d bytes" % c.execute("select count(*), max(step), max(length(state)) from snapshots").fetchone())' "$dir/tide.db")

recovered() { grep -o 'recovered epoch .*' "$dir/$1.log" | head -1; }
start full --snapshot-every 0 || exit 1
kill9
start snap || exit 1
kill9
full=$(recovered full)
withsnap=$(recovered snap)
secs() { echo "$1" | sed -n 's/.* in \([0-9.]*\) s:.*/\1/p'; }
{
    echo "# Recovery time with and without engine snapshots"
    echo
    echo "\`bash bench/recovery_bench.sh\` (STEPS=$STEPS in the log, CLUSTER=$CLUSTER JOBS=$JOBS), $(date -u +%Y-%m-%d),"
    echo "$(nproc) cores, database on $(df -P "$dir" | tail -1 | awk '{print $1}'): the log was built in ${built_s} s"
    echo "(${db_mb} MB with its WAL; $snap)."
    echo
    echo "| restart | recovery (s) | daemon's line |"
    echo "|---|---|---|"
    echo "| \`--snapshot-every 0\` (whole log) | $(secs "$full") | $full |"
    echo "| default (\`--snapshot-every 1000\`) | $(secs "$withsnap") | $withsnap |"
} | tee "$OUT"
