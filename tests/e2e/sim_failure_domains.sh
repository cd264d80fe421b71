#!/usr/bin/env bash
# End-to-end: failure domains, partitions and rank loss in `tide sim`.
#  - rack-fail on the rack holding the most replicas leaves the service at
#    least the stated share (--survive) of its floor with spreading (and the
#    invariant holds under --check); without spreading (--spread 0) it does not;
#  - a partition never starts a gang twice (double_starts 0, --check holds);
#  - rank loss on a 4-gang elastic job continues at 3 gangs and grows back;
#  - bad fault items fail cleanly.
# Environment: TIDE_BIN (the tide binary). Exit 77 = skip.
set -u

if [ -z "${TIDE_BIN:-}" ] || [ ! -x "$TIDE_BIN" ]; then
    echo "skip: TIDE_BIN is not set or not executable" >&2
    exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "skip: python3 is needed to read summary.json" >&2
    exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# 16 nodes x 8 GPUs: racks of 4 nodes (the spec's default), 4 racks
cat >"$tmp/services.csv" <<'EOF'
service,gpus_per_replica,replica_rps,min_replicas,warmup_s
chat,8,100,4,300
EOF
{
    echo "time_s,service,rps"
    for h in $(seq 0 23); do
        if [ "$h" -ge 8 ] && [ "$h" -lt 20 ]; then rps=500; else rps=200; fi
        echo "$((h * 3600)),chat,$rps"
    done
} >"$tmp/demand.csv"
cat >"$tmp/jobs.csv" <<'EOF'
job_id,submit_s,team,priority,gpus,duration_s,gang_gpus,dp_min,ckpt_interval_s,ckpt_s,restore_s
big,0,lang,2,32,60000,8,2,1800,60,120
b,0,lang,3,16,30000,8,1,1800,60,120
c,3600,vision,2,8,20000,8,1,1800,60,120
EOF

run() { # run OUTDIR [extra options...]
    local out=$1
    shift
    "$TIDE_BIN" sim --cluster 16x8 --services "$tmp/services.csv" --demand "$tmp/demand.csv" \
        --jobs "$tmp/jobs.csv" --policy elastic --seed 3 --out "$out" "$@" \
        >"$out.stdout" 2>"$out.stderr"
}

fault() { # fault OUTDIR KEY: policies.elastic.faults.KEY
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["policies"]["elastic"]["faults"][sys.argv[2]])' \
        "$1/summary.json" "$2"
}

# --- spreading on: the busiest rack fails, 3 of the floor of 4 survive
if ! run "$tmp/spread" --spread 1 --check --survive 0.75 --inject rack-fail:busiest@6h+2h,power-fail:1@14h+1h; then
    cat "$tmp/spread.stderr" >&2
    fail "spread run failed"
else
    share=$(fault "$tmp/spread" floor_share_min)
    python3 -c "import sys; sys.exit(0 if float('$share') >= 0.75 else 1)" ||
        fail "with spreading the floor kept only $share through the rack failure"
    [ "$(fault "$tmp/spread" domains_failed)" = 2 ] || fail "domains_failed != 2"
    grep -q ',fault_rack_fail,' "$tmp/spread/events.csv" || fail "no fault_rack_fail row"
    grep -q ',fault_power_fail,' "$tmp/spread/events.csv" || fail "no fault_power_fail row"
fi

# --- spreading off: the floor sits in one rack and the same failure takes it
if ! run "$tmp/packed" --spread 0 --inject rack-fail:busiest@6h+2h; then
    cat "$tmp/packed.stderr" >&2
    fail "packed run failed"
else
    share=$(fault "$tmp/packed" floor_share_min)
    python3 -c "import sys; sys.exit(0 if float('$share') < 0.75 else 1)" ||
        fail "without spreading the floor kept $share (expected < 0.75)"
fi
# ... and the invariant says so under --check
if run "$tmp/packed_check" --spread 0 --survive 0.75 --check; then
    fail "--check accepted a packed floor with --survive 0.75"
fi

# --- partition: nodes 12-13 unreachable for 2 h; nothing runs twice
if ! run "$tmp/part" --check --inject 'partition:12-13@10h+2h,partition:0|5@15h+30m'; then
    cat "$tmp/part.stderr" >&2
    fail "partition run failed"
else
    [ "$(fault "$tmp/part" partitions)" = 2 ] || fail "partitions != 2"
    [ "$(fault "$tmp/part" double_starts)" = 0 ] || fail "a gang was started twice"
    [ "$(grep -c ',fault_partition,' "$tmp/part/events.csv")" = 4 ] || fail "partition rows"
fi

# --- rank loss: the 4-gang elastic job goes on at 3 gangs, then 4 again
if ! run "$tmp/rank" --check --inject rank-fail:big@3h; then
    cat "$tmp/rank.stderr" >&2
    fail "rank-loss run failed"
else
    python3 - "$tmp/rank/events.csv" <<'EOF' || fail "rank loss did not shrink to 3 and grow back"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["job"] == "big"]
after = [r for r in rows if int(r["time_s"]) >= 10800]
shrink = [r for r in after if r["kind"] == "job_resize" and r["reason"] == "failure"]
assert shrink and shrink[0]["width"] == "3", shrink
t0 = int(shrink[0]["time_s"])
stops = [r for r in after if r["kind"] == "job_stop" and int(r["time_s"]) == t0]
assert not stops, stops
grow = [r for r in after if r["kind"] == "job_resize" and int(r["time_s"]) > t0 and r["width"] == "4"]
assert grow, "no grow back"
EOF
fi

# --- bad items
for bad in 'rack-fail:9@1h' 'rack-fail:x@1h' 'power-fail:busiest' 'partition:4-@1h+1h' \
    'partition:3@1h' 'partition:99@1h+1h'; do
    if run "$tmp/bad" --inject "$bad"; then
        fail "--inject '$bad' was accepted"
    elif ! grep -q -- "--inject" "$tmp/bad.stderr"; then
        fail "--inject '$bad': no message naming the option"
    fi
done

[ "$fails" -eq 0 ] || exit 1
echo "ok"
