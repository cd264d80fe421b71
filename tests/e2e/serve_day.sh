#!/usr/bin/env bash
# End-to-end: one day of diurnal demand through `tide serve` on the sim
# backend at --speed 1800 (a day in 48 s of wall time), one service from a
# services.csv (--services). The demand is pushed
# through the API (POST /v1/services/chat/demand) at the engine times
# /healthz reports, following a day/night curve. Checks:
#  - at night training borrows the shared pool: a lease for the job appears
#    in `tide leases --active`;
#  - when the morning demand rises, the job gets a reclaim notice through the
#    long poll GET /v1/jobs/t1/notice?wait=..; the job acknowledges it and
#    reports a committed checkpoint (POST /v1/jobs/t1/checkpoints);
#  - the job is requeued, its lease returned, and a replica starts on GPUs the
#    job held and becomes ready (/v1/nodes ownership); /v1/events has
#    ckpt_notice, lease_return, replica_start, replica_ready in that order;
#  - in the evening the job borrows again; usage has inference and training
#    GPU-hours; /healthz stays ok.
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip (daemon not built).
set -u
. "$(dirname "$0")/lib/serve.bash"
serve_require
T=$TIDE_BIN
SPEED=1800

cat >"$tmp/services.csv" <<'CSV'
service,gpus_per_replica,replica_rps,min_replicas,warmup_s
chat,8,100,1,300
CSV
serve_start day --db "$tmp/tide.db" --cluster 4x8:H100 --services "$tmp/services.csv" \
    --policy elastic --speed "$SPEED" || exit 1
api GET /v1/services
[ "$(jq_ '[s["name"] for s in d["services"]]')" = '["chat"]' ] || fail "services from services.csv: $API_BODY"
t0=$(now_s)
day0=$((t0 - t0 % 86400)) # midnight of the engine day we start in

# The curve: 40 rps at night, a sine hump from 06:00 to 20:00 peaking at 260 rps at
# 13:00 (3 replicas of 100 rps with the forecast margin; the reserve holds one).
rps_at() { # rps_at ENGINE_SECONDS
    awk -v t="$1" -v d0="$day0" 'BEGIN {
        h = (t - d0) / 3600.0
        r = 40
        if (h >= 6 && h <= 20) r += 220 * sin(3.141592653589793 * (h - 6) / 14)
        printf "%.1f", r }'
}
# the demand pusher: every 0.1 s of wall time (3 engine minutes), the curve at now_s
(
    last=""
    while :; do
        n=$(curl -s --max-time 5 "$SERVE_URL/healthz" | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["now_s"]))' 2>/dev/null) || break
        r=$(rps_at "$n")
        if [ "$r" != "$last" ]; then
            curl -s -o /dev/null --max-time 5 -X POST -H 'Content-Type: application/json' \
                --data-binary "{\"rps\": $r}" "$SERVE_URL/v1/services/chat/demand" || break
            echo "$n $r" >>"$tmp/demand.txt"
            last=$r
        fi
        [ "$n" -ge $((day0 + 86400 + 2 * 3600)) ] && break
        sleep 0.1
    done
) &
EXTRA_PIDS+=($!)
pusher=$!

# --- night: the job borrows the shared pool under a lease
api POST /v1/jobs '{"job_id":"t1","team":"lab","priority":2,"gpus":24,"gang_gpus":8,"dp_min":3,"duration_s":864000,"ckpt_interval_s":7200,"ckpt_s":3600,"restore_s":60}'
[ "$API_STATUS" = 201 ] || fail "submit t1: $API_STATUS $API_BODY"
leased() { "$T" leases --active --json | python3 -c '
import json, sys
assert [l for l in json.load(sys.stdin)["leases"] if l["job"] == "t1"]'; }
poll_until 20 leased || fail "no active lease for t1 in 'tide leases --active'"
"$T" leases --active | grep -q ' t1 ' || fail "tide leases --active has no row for t1"
nodes_of() { # nodes_of OWNER -> GPU ids owned by OWNER, one per line
    curl -s "$SERVE_URL/v1/nodes" | python3 -c '
import json, sys
for n in json.load(sys.stdin)["nodes"]:
    for g in n["gpus"]:
        if g["owner"] == sys.argv[1]:
            print(g["gpu"])' "$1"
}
nodes_of job:t1 >"$tmp/t1_gpus"
[ "$(wc -l <"$tmp/t1_gpus")" = 24 ] || fail "t1 holds $(wc -l <"$tmp/t1_gpus") GPUs, expected 24"

# --- morning: the reclaim notice through the long poll (bounded by the engine day)
got=0
for _ in $(seq 1 8); do
    curl -s --max-time 40 "$SERVE_URL/v1/jobs/t1/notice?wait=30" >"$tmp/notice.json"
    if python3 -c 'import json,sys; n=json.load(open(sys.argv[1]))["notice"]; assert n' "$tmp/notice.json" 2>/dev/null; then
        got=1
        break
    fi
done
[ "$got" = 1 ] || fail "no reclaim notice for t1 by engine time $(now_s): $(cat "$tmp/notice.json")"
python3 - "$tmp/notice.json" <<'EOF' || fail "notice: $(cat "$tmp/notice.json")"
import json, sys
n = json.load(open(sys.argv[1]))["notice"]
assert n["reason"] == "reclaim", n
assert n["action"] == "checkpoint", n   # dp_min = width: it cannot shrink
assert isinstance(n["deadline_s"], int), n
EOF
# ckpt_s is 3600 engine seconds (2 s of wall time): the sim backend would commit by then;
# the job acknowledges and commits first, through the API
api POST /v1/jobs/t1/notice/ack
case "$API_STATUS" in 200 | 201 | 204) ;; *) fail "notice ack: $API_STATUS $API_BODY" ;; esac
api GET /v1/jobs/t1
progress=$(jq_ 'd.get("progress_s") or 0')
# the job writes its checkpoint: a half-written one first (recorded, never used), then the commit
api POST /v1/jobs/t1/checkpoints "{\"step\": 1, \"bytes\": 1000, \"shards\": 64, \"committed\": false, \"progress_s\": $progress}"
case "$API_STATUS" in 200 | 201) ;; *) fail "half-written checkpoint: $API_STATUS $API_BODY" ;; esac
api POST /v1/jobs/t1/checkpoints "{\"step\": 2, \"bytes\": 123456789, \"shards\": 64, \"committed\": true, \"progress_s\": $progress}"
case "$API_STATUS" in
200 | 201) ;;
409)
    # the simulated job may have committed its own checkpoint first (one already
    # in progress at the notice commits within engine seconds = milliseconds of
    # wall time at this speed): then the job is already back in the queue and
    # the events must show that commit between the notice and the release
    "$T" events --json >"$tmp/ev409.json" || fail "events after 409"
    python3 - "$tmp/ev409.json" <<'EOF' || fail "committed checkpoint: $API_STATUS $API_BODY, and no commit by the backend"
import json, sys
ev = json.load(open(sys.argv[1]))["events"]
kinds = [e["kind"] for e in ev if e.get("job") == "t1"]
a = kinds.index("ckpt_notice")
assert "ckpt_committed" in kinds[a:], kinds[a:]
c = a + kinds[a:].index("ckpt_committed")
assert "lease_return" in kinds[c:], kinds[c:]
EOF
    ;;
*) fail "committed checkpoint: $API_STATUS $API_BODY" ;;
esac

# --- the GPUs move: lease returned, a replica starts on them and becomes ready
order_ok() {
    "$T" events --json >"$tmp/events.json" || return 1
    python3 - "$tmp/events.json" <<'EOF'
import json, sys
ev = json.load(open(sys.argv[1]))["events"]
def find(pred, after):
    for i in range(after + 1, len(ev)):
        if pred(ev[i]):
            return i
    raise SystemExit("not yet")
a = find(lambda e: e["kind"] == "ckpt_notice" and e.get("job") == "t1", -1)
b = find(lambda e: e["kind"] == "lease_return" and e.get("job") == "t1", a)
c = find(lambda e: e["kind"] == "replica_start" and e.get("service") == "chat", b)
rep = ev[c].get("replica")
d = find(lambda e: e["kind"] == "replica_ready" and (rep is None or e.get("replica") == rep), c)
print(ev[a]["time_s"], ev[b]["time_s"], ev[c]["time_s"], ev[d]["time_s"], rep)
EOF
}
poll_until 40 order_ok || fail "events: no ckpt_notice -> lease_return -> replica_start -> replica_ready for t1 ($(order_ok 2>&1 | tail -1))"
order_ok >"$tmp/order.txt" 2>/dev/null
read -r ta tb tc td rep <"$tmp/order.txt"
echo "notice at $ta, lease back at $tb, replica $rep started at $tc, ready at $td (engine s)" >&2
# a replica runs on GPUs t1 held
moved() {
    curl -s "$SERVE_URL/v1/nodes" | python3 -c '
import json, sys
mine = {int(x) for x in open(sys.argv[1])}
owners = {g["gpu"]: g["owner"] for n in json.load(sys.stdin)["nodes"] for g in n["gpus"]}
assert any((owners[g] or "").startswith("replica:") for g in mine)' "$tmp/t1_gpus"
}
poll_until 10 moved || fail "no replica on the GPUs t1 held"
api GET /v1/jobs/t1
case "$(jq_ 'd["state"]')" in queued | running) ;; *) fail "t1 after the reclaim: $API_BODY" ;; esac
[ "$(jq_ 'd.get("preemptions", 0)')" -ge 1 ] || fail "t1's preemption not counted: $API_BODY"
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["committed_s"] >= float(sys.argv[2]) - 1e-6, d' \
    "$API_BODY" "$progress" || fail "t1's committed progress is not the checkpoint's: $API_BODY"
"$T" events --json | python3 -c '
import json, sys
ev = json.load(sys.stdin)["events"]
stops = [e for e in ev if e["kind"] == "job_stop" and e.get("job") == "t1"]
assert stops and stops[0].get("reason") == "reclaim", stops' || fail "no job_stop (reclaim) event for t1"

# --- evening: demand falls, the job borrows again (bounded by the end of the day)
poll_until 60 sh -c "[ \$(curl -s $SERVE_URL/healthz | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"now_s\"])') -ge $((day0 + 21 * 3600)) ]" ||
    fail "the engine clock did not reach 21:00"
poll_until 30 leased || fail "t1 did not borrow again in the evening"
api GET /v1/jobs/t1
[ "$(jq_ 'd["state"]')" = running ] || fail "t1 not running in the evening: $API_BODY"

# --- accounting over the day
"$T" usage --by class --json >"$tmp/usage.json" || fail "tide usage failed"
python3 - "$tmp/usage.json" <<'EOF' || fail "usage: $(cat "$tmp/usage.json")"
import json, sys
u = json.load(open(sys.argv[1]))
by = {}
for r in u["rows"]:
    by[r["class"]] = by.get(r["class"], 0) + r["gpu_hours"]
assert by.get("inference", 0) > 0, by
assert by.get("p2", 0) > 0, by
assert abs(sum(by.values()) - u["total_gpu_hours"]) < 1e-6 * max(1, u["total_gpu_hours"]) + 0.01, (by, u)
EOF
api GET /healthz
[ "$(jq_ 'd["ok"]')" = True ] || fail "healthz: $API_BODY"
kill "$pusher" 2>/dev/null
serve_stop
finish serve_day
