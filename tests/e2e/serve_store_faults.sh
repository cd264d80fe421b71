#!/usr/bin/env bash
# End-to-end: store faults degrade `tide serve`, they never destroy
# (docs/serve.md, "When the store fails"). With 6 jobs running:
#  1. another process holds SQLite's write lock for 7 s: /readyz (and
#     /healthz) answer 503 while /livez answers 200, a submit answers 503
#     with Retry-After, and once the lock goes the daemon is ready again by
#     itself; nothing was preempted (preemptions 0, no job_expired event) and
#     every job still runs.
#  2. the disk is full (the database on a 4 MB tmpfs, filled with a file):
#     the same, recovering once the file is removed. Needs a tmpfs mount:
#     as root directly, else in a user+mount namespace (unshare -rm; the
#     daemon and the filler run inside it); skipped with a message when
#     neither works.
#  3. the database's -wal deleted while idle: noticed within a few ticks,
#     /readyz reports the store lost, writes answer 503; no rebuild.
# Bounded: about 40 s. Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip.
set -u
. "$(dirname "$0")/lib/serve.bash"

# ------------------------------------------------------------ shared checks

ARGS=(--cluster 8x8 --speed 30 --tick 250ms)
svc='{"service":"chat","gpus_per_replica":8,"replica_rps":100,"min_replicas":1,"warmup_s":60}'

# six 8-GPU jobs running (a chat replica holds the 7th node)
start_jobs() {
    api POST /v1/services "$svc"
    [ "$API_STATUS" = 201 ] || fail "POST /v1/services: $API_STATUS $API_BODY"
    local i
    for i in 1 2 3 4 5 6; do
        api POST /v1/jobs "{\"job_id\":\"run$i\",\"priority\":2,\"gpus\":8,\"duration_s\":360000}"
        [ "$API_STATUS" = 201 ] || fail "submit run$i: $API_STATUS $API_BODY"
    done
    poll_until 20 all_running || fail "the 6 jobs did not all start: $("$TIDE_BIN" jobs 2>&1)"
}

all_running() {
    [ "$(curl -s "$SERVE_URL/v1/jobs?state=running" | python3 -c \
        'import json,sys; print(len(json.load(sys.stdin)["jobs"]))')" = 6 ]
}

status_of() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$SERVE_URL$1"; }
ready_is() { [ "$(status_of /readyz)" = "$1" ]; }

# a write during the fault: 503 with Retry-After
write_refused() {
    local h
    h=$(curl -s -D - -o "$tmp/w.out" --max-time 10 -X POST -H 'Content-Type: application/json' \
        --data-binary '{"job_id":"during","gpus":8,"duration_s":60}' "$SERVE_URL/v1/jobs")
    grep -q '^HTTP/1.1 503' <<<"$h" || { fail "$1: a submit got $(head -1 <<<"$h") $(cat "$tmp/w.out")"; return; }
    grep -qi '^Retry-After:' <<<"$h" || fail "$1: 503 without Retry-After"
}

# nothing preempted, nothing expired, all 6 still running
nothing_lost() {
    local name=$1
    all_running || fail "$name: not all 6 jobs run after the fault"
    curl -s "$SERVE_URL/v1/jobs?limit=1000" >"$tmp/jobs.json"
    python3 - "$tmp/jobs.json" <<'EOF' || fail "$name: jobs were preempted"
import json, sys
jobs = [j for j in json.load(open(sys.argv[1]))["jobs"] if j["id"].startswith("run")]
bad = [(j["id"], j["preemptions"], j["lost_gpu_s"]) for j in jobs if j["preemptions"] or j["lost_gpu_s"]]
assert len(jobs) == 6 and not bad, bad
EOF
    api GET "/v1/events?limit=5000"
    [ "$(jq_ 'sum(1 for e in d["events"] if e["kind"] in ("job_expired", "replica_failed"))')" = 0 ] ||
        fail "$name: jobs expired or replicas failed during the fault"
    api GET /metrics
    grep -q '^tide_store_degraded_episodes_total [1-9]' <<<"$API_BODY" ||
        fail "$name: no degraded episode counted in /metrics"
    grep -q '^tide_store_degraded 0' <<<"$API_BODY" || fail "$name: still degraded in /metrics"
}

# ------------------------------------------------------------ 2. disk full (inner)

# Runs with DIR a fresh tmpfs (inside the namespace when not root).
disk_full_inner() {
    local dir=$1
    serve_start diskfull --db "$dir/tide.db" "${ARGS[@]}" || exit 1
    start_jobs
    # fill the disk while the WAL is still growing
    dd if=/dev/zero of="$dir/fill" bs=64k 2>/dev/null
    poll_until 20 ready_is 503 || fail "disk full: /readyz never answered 503"
    [ "$(status_of /livez)" = 200 ] || fail "disk full: /livez is not 200"
    write_refused "disk full"
    rm -f "$dir/fill"
    poll_until 20 ready_is 200 || fail "disk full: /readyz not 200 again after the disk was freed"
    nothing_lost "disk full"
    grep -q 'the store cannot write' "$SERVE_LOG" || fail "disk full: no log line"
    [ "$(grep -c 'the store cannot write' "$SERVE_LOG")" -le 3 ] ||
        fail "disk full: logged more than once per episode: $(grep -c 'the store cannot write' "$SERVE_LOG")"
    serve_stop
    [ "$fails" = 0 ] || { tail -20 "$SERVE_LOG" >&2; exit 1; }
    exit 0
}

if [ "${1:-}" = --disk-full-inner ]; then
    serve_require
    mount -t tmpfs -o size=4m tmpfs "$2" || exit 77
    disk_full_inner "$2"
fi

serve_require

# ------------------------------------------------------------ 1. a held write lock

serve_start lock --db "$tmp/tide.db" "${ARGS[@]}" || exit 1
start_jobs
python3 - "$tmp/tide.db" >"$tmp/holder.out" 2>&1 <<'EOF' &
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
c.execute("BEGIN IMMEDIATE")
print("held", flush=True)
time.sleep(7)
c.execute("ROLLBACK")
EOF
holder=$!
EXTRA_PIDS+=("$holder")
poll_until 10 grep -q held "$tmp/holder.out" || fail "the lock holder did not start: $(cat "$tmp/holder.out")"
poll_until 6 ready_is 503 || fail "held lock: /readyz never answered 503"
[ "$(status_of /healthz)" = 503 ] || fail "held lock: /healthz is not 503"
[ "$(status_of /livez)" = 200 ] || fail "held lock: /livez is not 200"
write_refused "held lock"
wait "$holder"
poll_until 15 ready_is 200 || fail "held lock: /readyz not 200 again after the lock went"
nothing_lost "held lock"
api POST /v1/jobs '{"job_id":"after","gpus":8,"duration_s":60}'
[ "$API_STATUS" = 201 ] || fail "held lock: a submit after the fault: $API_STATUS $API_BODY"
[ "$(grep -c 'the store cannot write' "$SERVE_LOG")" = 1 ] ||
    fail "held lock: one log line per episode expected, got $(grep -c 'the store cannot write' "$SERVE_LOG")"
grep -q 'the store writes again' "$SERVE_LOG" || fail "held lock: no recovery log line"
serve_stop

# ------------------------------------------------------------ 2. a full disk

mkdir -p "$tmp/fs"
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=4m tmpfs "$tmp/fs" 2>/dev/null; then
    ( disk_full_inner "$tmp/fs" )
    rc=$?
    umount "$tmp/fs" 2>/dev/null
elif command -v unshare >/dev/null && unshare -rm true 2>/dev/null; then
    unshare -rm bash "$0" --disk-full-inner "$tmp/fs"
    rc=$?
else
    rc=77
fi
case $rc in
0) ;;
77) echo "disk full: skipped (no tmpfs mount possible here: not root, no user namespaces)" >&2 ;;
*) fail "disk full: failed (exit $rc)" ;;
esac

# ------------------------------------------------------------ 3. a deleted WAL

serve_start wal --db "$tmp/wal.db" "${ARGS[@]}" || exit 1
api POST /v1/jobs '{"job_id":"w1","gpus":8,"duration_s":360000}'
[ "$API_STATUS" = 201 ] || fail "submit w1: $API_STATUS"
poll_until 10 test -e "$tmp/wal.db-wal" || fail "no -wal file"
rm -f "$tmp/wal.db-wal"
poll_until 10 ready_is 503 || fail "deleted WAL: /readyz never answered 503"
api GET /readyz
[ "$(jq_ 'd["store"]')" = lost ] || fail "deleted WAL: /readyz does not say lost: $API_BODY"
write_refused "deleted WAL"
grep -q 'lost its database for good' "$SERVE_LOG" || fail "deleted WAL: no log line"
serve_stop
finish serve_store_faults
