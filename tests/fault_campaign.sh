#!/usr/bin/env bash
# A fault campaign against ONE `tide serve` database (loopback only, bounded):
# rounds of concurrent submissions, each hit by one fault, in turn:
#   kill     SIGKILL during the submissions, then a restart on the same database
#   lock     another process holds SQLite's write lock for 3 s (writes 503, /readyz 503)
#   wal      the database's -wal deleted: the daemon stays degraded ("lost"),
#            is stopped, `tide db restore` puts DB.rescued in place, restart
#   slow     slow clients: 150 idle and 150 slow-loris sockets (tests/e2e/overload.py)
# After every round: /readyz is 200 again, every job answered 201 is there
# exactly once, nothing unsubmitted appeared, and the 6 long jobs started
# first were never preempted by a store fault (only a restart may requeue them:
# the sim backend's jobs live in the daemon).
#
# usage: tests/fault_campaign.sh [--rounds N]   (default 8: every fault twice;
#        the e2e suite runs --rounds 4 through tests/e2e/serve_fault_campaign.sh)
# Environment: TIDE_BIN (the tide binary). Exit 0 ok, 1 a check failed, 77 skip.
# A full disk is left to tests/e2e/serve_store_faults.sh (it needs a tmpfs mount).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/e2e/lib/serve.bash"
rounds=8
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift 2 ;;
    -h | --help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "fault_campaign.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
serve_require
ulimit -n 4096 2>/dev/null || true

DB=$tmp/tide.db
ARGS=(--db "$DB" --speed 30 --tick 250ms)
kills=0
restarts=0 # the sim backend's jobs live in the daemon: a restart requeues them
: >"$tmp/acked.txt"

start() { serve_start "camp$1" "${ARGS[@]}" "${@:2}"; }
ready_is() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$SERVE_URL/readyz")" = "$1" ]; }

# submit NAME N: N submissions in the background (4 at a time), "id code" lines
submit_bg() {
    export SERVE_URL
    seq 1 "$2" | xargs -P 4 -I{} sh -c '
code=$(curl -s -o /dev/null -w "%{http_code}" --max-time 10 -X POST -H "Content-Type: application/json" \
  --data-binary "{\"job_id\":\"$1-{}\",\"priority\":3,\"gpus\":1,\"duration_s\":600}" "$SERVE_URL/v1/jobs")
echo "$1-{} $code" >>"$2"' _ "$1" "$tmp/acked.txt" &
    BG=$!
    EXTRA_PIDS+=("$BG")
}

# every 201 present once, nothing unsubmitted
check_jobs() {
    "$TIDE_BIN" jobs --json --server "$SERVE_URL" >"$tmp/jobs.json" 2>"$tmp/jobs.err" ||
        { fail "round $1: tide jobs: $(cat "$tmp/jobs.err")"; return; }
    python3 - "$tmp/acked.txt" "$tmp/jobs.json" "$restarts" <<'EOF' || fail "round $1: jobs lost, duplicated or preempted"
import collections, json, sys
acked = {l.split()[0] for l in open(sys.argv[1]) if l.split()[1:] == ["201"]}
sent = {l.split()[0] for l in open(sys.argv[1])}
jobs = json.load(open(sys.argv[2]))["jobs"]
count = collections.Counter(j["id"] for j in jobs)
dups = [i for i, n in count.items() if n > 1]
lost = sorted(acked - set(count))
extra = sorted(i for i in set(count) - sent - {"long%d" % i for i in range(1, 7)}
               if not i.startswith("under-load-"))  # overload.py's own submit
assert not dups and not lost and not extra, (dups[:5], lost[:5], extra[:5])
longs = [j for j in jobs if j["id"].startswith("long")]
pre = sum(j["preemptions"] for j in longs)
assert pre <= int(sys.argv[3]) * 6, "long jobs preempted %d times with %s restarts" % (pre, sys.argv[3])
EOF
}

start 0 --cluster 8x8 || exit 1
api POST /v1/services '{"service":"chat","gpus_per_replica":8,"replica_rps":100,"min_replicas":1,"warmup_s":60}'
for i in 1 2 3 4 5 6; do
    api POST /v1/jobs "{\"job_id\":\"long$i\",\"priority\":2,\"gpus\":8,\"duration_s\":3600000}"
done

faults=(kill lock wal slow)
for ((r = 1; r <= rounds; r++)); do
    f=${faults[$(((r - 1) % 4))]}
    echo "round $r: $f" >&2
    submit_bg "r$r" 120
    case $f in
    kill)
        poll_until 20 grep -q " 201$" "$tmp/acked.txt"
        serve_kill9
        kills=$((kills + 1))
        restarts=$((restarts + 1))
        wait "$BG"
        start "$r" || exit 1
        ;;
    lock)
        # the lock is held until the daemon was seen answering 503 (bounded: 20 s),
        # and a write is attempted while it is held, however loaded the machine
        rm -f "$tmp/release"
        python3 - "$DB" "$tmp/release" >"$tmp/holder.out" 2>&1 <<'EOF' &
import os, sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
c.execute("BEGIN IMMEDIATE")
print("held", flush=True)
end = time.monotonic() + 20
while time.monotonic() < end and not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
c.execute("ROLLBACK")
EOF
        holder=$!
        poll_until 10 grep -q held "$tmp/holder.out" || fail "round $r: the lock holder: $(cat "$tmp/holder.out")"
        # (its outcome joins the others: a 201 must be there afterwards, once)
        (code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
            --max-time 30 --data-binary "{\"job_id\":\"lock-$r\",\"priority\":3,\"gpus\":1,\"duration_s\":60}" \
            "$SERVE_URL/v1/jobs")
         echo "lock-$r $code" >>"$tmp/acked.txt") &
        lockw=$!
        poll_until 15 ready_is 503 || fail "round $r: /readyz not 503 under a held lock"
        touch "$tmp/release"
        wait "$holder"
        wait "$lockw"
        wait "$BG"
        ;;
    wal)
        wait "$BG"
        rm -f "$DB-wal"
        poll_until 10 ready_is 503 || fail "round $r: a deleted WAL not noticed"
        serve_stop
        rescued=$(ls -t "$DB".rescued* 2>/dev/null | head -1)
        [ -n "$rescued" ] || { fail "round $r: no rescued copy"; break; }
        "$TIDE_BIN" db restore --db "$DB" "$rescued" >/dev/null || { fail "round $r: restore failed"; break; }
        rm -f "$rescued"
        restarts=$((restarts + 1))
        start "$r" || exit 1
        ;;
    slow)
        python3 "$here/e2e/overload.py" "$SERVE_URL" --idle 150 --loris 150 --per-ip 128 \
            --timeout 10 >"$tmp/overload.out" 2>&1
        rc=$?
        [ "$rc" = 0 ] || [ "$rc" = 77 ] || fail "round $r: overload.py: $(tail -3 "$tmp/overload.out")"
        wait "$BG"
        ;;
    esac
    poll_until 15 ready_is 200 || fail "round $r ($f): /readyz not 200 again"
    check_jobs "$r"
    [ "$fails" = 0 ] || break
done
acked=$(grep -c ' 201$' "$tmp/acked.txt")
echo "fault campaign: $rounds rounds, $kills kills, $acked submissions acknowledged, all present once" >&2
serve_stop
finish fault_campaign
