#!/usr/bin/env bash
# End-to-end: `tide sim` on a tiny workload with every policy. Checks that the
# outputs exist and parse, GPU-hours add up to GPUs x horizon, two runs give
# the same summary.json (wall_s aside), and bad options fail cleanly.
# Environment: TIDE_BIN (the tide binary), TIDE_SRC (source dir). Exit 77 = skip.
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

# --- inputs: 4 nodes x 8 GPUs, one service with a day/night curve, 6 jobs
cat >"$tmp/services.csv" <<'EOF'
service,gpus_per_replica,replica_rps,min_replicas,warmup_s
chat,8,100,1,300
EOF
{
    echo "time_s,service,rps"
    for h in $(seq 0 23); do
        if [ "$h" -ge 8 ] && [ "$h" -lt 20 ]; then rps=250; else rps=60; fi
        echo "$((h * 3600)),chat,$rps"
    done
} >"$tmp/demand.csv"
cat >"$tmp/jobs.csv" <<'EOF'
job_id,submit_s,team,priority,gpus,duration_s,gang_gpus,dp_min,ckpt_interval_s,ckpt_s,restore_s
a,0,vision,2,8,20000,8,1,1800,60,120
b,0,lang,3,16,30000,8,1,1800,60,120
c,3600,lang,1,8,7200,8,1,1800,60,120
d,7200,vision,2,1,5000,1,1,1800,30,60
e,40000,lang,2,16,20000,8,1,1800,60,120
f,50000,vision,3,4,10000,4,1,1800,60,120
EOF

run() { # run OUTDIR [extra options...]
    local out=$1
    shift
    "$TIDE_BIN" sim --cluster 4x8 --services "$tmp/services.csv" --demand "$tmp/demand.csv" \
        --jobs "$tmp/jobs.csv" --policy isolated,static,preempt,k8s,elastic,timeshare \
        --seed 7 --out "$out" "$@"
}

# --- a full run
if ! run "$tmp/out1" --check >"$tmp/stdout1" 2>"$tmp/stderr1"; then
    cat "$tmp/stderr1" >&2
    fail "tide sim failed"
fi
for f in summary.json timeline.csv events.csv; do
    [ -s "$tmp/out1/$f" ] || fail "missing $f"
done
for p in isolated static preempt k8s elastic timeshare; do
    grep -q "^$p " "$tmp/stdout1" || fail "no table row for $p"
done
head -1 "$tmp/out1/timeline.csv" | grep -Eq '^policy,time_s,serving,warming,training,checkpointing,restoring,lost,idle,inference_gpus,p1_gpus,p2_gpus,p3_gpus,demand_rps,ready_rps,queue_jobs,queue_gpus,running_jobs,leased_gpus,tier_a_gpus,storage_gbps,forecast_rps,sized_rps(,[^,]*:[^,]*)*$' ||
    fail "timeline.csv header"
head -1 "$tmp/out1/events.csv" | grep -q '^policy,time_s,kind,job,service,replica,lease,gpus,width,reason,deadline_s,value$' ||
    fail "events.csv header"

python3 - "$tmp/out1" <<'EOF' || fail "summary.json checks"
import csv, json, sys
d = sys.argv[1]
s = json.load(open(d + "/summary.json"))
assert s["horizon_s"] == 86400, s["horizon_s"]
assert s["cluster_gpus"] == 32
assert 0 < s["oracle"]["max_utilization"] <= 1.0 + 1e-9
total = 32 * 86400 / 3600.0
rows = list(csv.DictReader(open(d + "/timeline.csv")))
events = list(csv.DictReader(open(d + "/events.csv")))
names = ["isolated", "static", "preempt", "k8s", "elastic", "timeshare"]
assert list(s["policies"]) == names, list(s["policies"])
for p in names:
    r = s["policies"][p]
    assert "error" not in r, (p, r.get("error"))
    gh = sum(r["gpu_hours"].values())
    assert abs(gh - total) <= 0.001 * total, (p, gh, total)
    assert abs(sum(r["gpu_hours_by_tier"].values()) - total) <= 0.001 * total, p
    assert 0 <= r["utilization"] <= 1 + 1e-9, (p, r["utilization"])
    assert 0 <= r["useful_utilization"] <= r["utilization"] + 1e-9, p
    assert 0 <= r["inference"]["slo_attainment"] <= 1 + 1e-9, p
    # no faults: the reserve (elastic only) is never short, no lease runs out
    assert r["tier_a"]["breach_gpu_s"] == 0, (p, r["tier_a"])
    assert (r["tier_a"]["reserve_gpus"] > 0) == (p == "elastic"), (p, r["tier_a"])
    assert r["lease"]["expired"] == 0 and r["reclaim"]["late"] <= r["reclaim"]["count"], p
    t = r["training"]
    assert t["jobs_submitted"] == 6, (p, t["jobs_submitted"])
    assert 0 <= t["jobs_completed"] <= 6
    assert sorted(r["teams"]) == ["lang", "vision"], (p, list(r["teams"]))
    assert list(t["queue_by_gang_size"]) == ["1", "2", "4", "8", "16", "32", "64+"]
    assert sum(v["jobs"] for v in t["queue_by_gang_size"].values()) == 6
    assert sum(v["jobs"] for v in t["queue_by_priority"].values()) == 6
    mine = [e for e in events if e["policy"] == p]
    assert r["events"] == len(mine), (p, r["events"], len(mine))
    tl = [x for x in rows if x["policy"] == p]
    assert len(tl) == 86400 // 300, (p, len(tl))
    assert tl[0]["time_s"] == "0" and tl[-1]["time_s"] == str(86400 - 300)
    for x in tl:
        g = sum(float(x[k]) for k in ["serving", "warming", "training", "checkpointing",
                                      "restoring", "lost", "idle"])
        assert abs(g - 32) < 0.05, (p, x["time_s"], g)
print("summary ok")
EOF

# --- determinism: a second run gives the same summary.json, wall_s aside
run "$tmp/out2" --check >/dev/null 2>&1 || fail "second run failed" # the same options: summary.json records them
strip() { python3 -c '
import json, sys
s = json.load(open(sys.argv[1]), object_pairs_hook=lambda kv: dict(kv))
for p in s["policies"].values():
    p.pop("wall_s", None)
print(json.dumps(s, indent=2))' "$1"; }
if ! cmp -s <(strip "$tmp/out1/summary.json") <(strip "$tmp/out2/summary.json"); then
    fail "summary.json differs between two runs"
fi
grep -v wall_s "$tmp/out1/summary.json" >"$tmp/s1"
grep -v wall_s "$tmp/out2/summary.json" >"$tmp/s2"
cmp -s "$tmp/s1" "$tmp/s2" || fail "summary.json (minus wall_s lines) not byte-identical"
cmp -s "$tmp/out1/timeline.csv" "$tmp/out2/timeline.csv" || fail "timeline.csv differs"
cmp -s "$tmp/out1/events.csv" "$tmp/out2/events.csv" || fail "events.csv differs"

# --- bad options: status and a message naming the problem
expect() { # expect STATUS PATTERN command...
    local want=$1 pat=$2
    shift 2
    "$@" >"$tmp/o" 2>"$tmp/e"
    local got=$?
    [ "$got" -eq "$want" ] || fail "'$*' exited $got, expected $want"
    grep -q -- "$pat" "$tmp/e" || fail "'$*': no '$pat' in: $(cat "$tmp/e")"
}
expect 2 "--services" "$TIDE_BIN" sim --cluster 4x8 --demand "$tmp/demand.csv" \
    --jobs "$tmp/jobs.csv" --out "$tmp/x"
expect 2 "--split" run "$tmp/x" --split 10:10
expect 2 "--split" run "$tmp/x" --split abc
expect 2 "--policy" run "$tmp/x" --policy elastic,nonesuch
expect 2 "--horizon" run "$tmp/x" --horizon soon
expect 2 "--night" run "$tmp/x" --night 25-3
expect 2 "--margin" run "$tmp/x" --margin -1
expect 2 "--sizing: 'soon'" run "$tmp/x" --sizing soon
expect 2 "--obs-window: 'long'" run "$tmp/x" --obs-window long
expect 2 "--bogus" run "$tmp/x" --bogus
expect 2 "--cluster" "$TIDE_BIN" sim --cluster 4y8 --services "$tmp/services.csv" \
    --demand "$tmp/demand.csv" --jobs "$tmp/jobs.csv" --out "$tmp/x"
# a missing file: the reader's message naming it, the ENOENT status (3)
expect 3 "nonexistent.csv" "$TIDE_BIN" sim --cluster 4x8 --services "$tmp/nonexistent.csv" \
    --demand "$tmp/demand.csv" --jobs "$tmp/jobs.csv" --out "$tmp/x"
# a malformed file: file:line message, EINVAL status (2)
printf 'service,gpus_per_replica,replica_rps,min_replicas,warmup_s\nchat,zero,100,1,300\n' \
    >"$tmp/bad.csv"
expect 2 "bad.csv:2" "$TIDE_BIN" sim --cluster 4x8 --services "$tmp/bad.csv" \
    --demand "$tmp/demand.csv" --jobs "$tmp/jobs.csv" --out "$tmp/x"
# a demand out of range (1e12 rps: once a wrapped int and a negative useful%) is refused
printf 'time_s,service,rps\n0,chat,1e12\n' >"$tmp/huge.csv"
expect 2 "huge.csv:2: column 'rps': must be at most" "$TIDE_BIN" sim --cluster 4x8 \
    --services "$tmp/services.csv" --demand "$tmp/huge.csv" --jobs "$tmp/jobs.csv" --out "$tmp/x"

# --inject: a bad item is named (status 2); faults are deterministic too
expect 2 "--inject: 'burst:2@x'" run "$tmp/x" --inject burst:2@x
expect 2 "unknown job 'zz'" run "$tmp/x" --inject rank-fail:zz@1h
inj=burst:2x@9h+2h,node-fail:1@5h+2h,rank-fail-rate:4/day,ctl-down@14h+1h,storage:5
run "$tmp/f1" --inject "$inj" >/dev/null 2>&1 || fail "run with --inject failed"
run "$tmp/f2" --inject "$inj" >/dev/null 2>&1 || fail "second run with --inject failed"
cmp -s <(strip "$tmp/f1/summary.json") <(strip "$tmp/f2/summary.json") ||
    fail "summary.json with --inject differs between two runs"
cmp -s "$tmp/f1/events.csv" "$tmp/f2/events.csv" || fail "events.csv with --inject differs"
grep -q '^elastic,18000,fault_node_fail,' "$tmp/f1/events.csv" || fail "no fault_node_fail row"
python3 -c '
import json, sys
f = json.load(open(sys.argv[1]))["policies"]["elastic"]["faults"]
assert f["nodes_failed"] == 1 and f["ctl_outages"] == 1 and f["storage"]["gbps"] == 5, f
' "$tmp/f1/summary.json" || fail "summary.json faults"

# --sizing ensemble: deterministic, recorded in the options, elastic only (the
# other policies' rows are the default run's)
run "$tmp/sz1" --sizing ensemble --check >/dev/null 2>&1 || fail "run with --sizing ensemble failed"
run "$tmp/sz2" --sizing ensemble --check >/dev/null 2>&1 || fail "second run with --sizing ensemble failed"
cmp -s <(strip "$tmp/sz1/summary.json") <(strip "$tmp/sz2/summary.json") ||
    fail "summary.json with --sizing ensemble differs between two runs"
python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["options"]["sizing"] == "ensemble" and b["options"]["sizing"] == "forecast", (a["options"], b["options"])
for p in ("isolated", "static", "preempt", "k8s", "timeshare"):
    a["policies"][p].pop("wall_s", None)
    b["policies"][p].pop("wall_s", None)
    assert a["policies"][p] == b["policies"][p], p
' "$tmp/sz1/summary.json" "$tmp/out1/summary.json" || fail "--sizing ensemble: options or other policies' rows"

# --obs-window: deterministic, recorded in the options, elastic only
run "$tmp/ow1" --obs-window 30m --check >/dev/null 2>&1 || fail "run with --obs-window failed"
run "$tmp/ow2" --obs-window 30m --check >/dev/null 2>&1 || fail "second run with --obs-window failed"
cmp -s <(strip "$tmp/ow1/summary.json") <(strip "$tmp/ow2/summary.json") ||
    fail "summary.json with --obs-window differs between two runs"
python3 -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["options"]["obs_window_s"] == 1800 and b["options"]["obs_window_s"] == 0, (a["options"], b["options"])
for p in ("isolated", "static", "preempt", "k8s", "timeshare"):
    a["policies"][p].pop("wall_s", None)
    b["policies"][p].pop("wall_s", None)
    assert a["policies"][p] == b["policies"][p], p
' "$tmp/ow1/summary.json" "$tmp/out1/summary.json" || fail "--obs-window: options or other policies' rows"

"$TIDE_BIN" sim --help >"$tmp/o" 2>&1 || fail "--help did not exit 0"
grep -q "usage: tide sim" "$tmp/o" || fail "--help printed no usage"

if [ "$fails" -ne 0 ]; then
    echo "$fails check(s) failed" >&2
    exit 1
fi
echo "sim_basic: ok"
