#!/usr/bin/env bash
# End-to-end: a service's stage_s (services.csv) under `tide sim`. stage_s = 0
# replays exactly as without the column; with staging, elastic's reclaimed
# replicas are ready sooner after the notice (the victims' checkpoint and the
# weight fetch overlap) and preempt does not change; stage_s above warmup_s
# is refused with a clear error.
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

# --- 4 nodes x 8 GPUs, one service rising every morning over a full shared pool
svc() { # svc FILE [stage_s]: services.csv, with a stage_s column when given
    if [ $# -gt 1 ]; then
        printf 'service,gpus_per_replica,replica_rps,min_replicas,warmup_s,stage_s\nchat,8,100,1,300,%s\n' "$2" >"$1"
    else
        printf 'service,gpus_per_replica,replica_rps,min_replicas,warmup_s\nchat,8,100,1,300\n' >"$1"
    fi
}
svc "$tmp/plain.csv"
svc "$tmp/s0.csv" 0
svc "$tmp/s120.csv" 120
svc "$tmp/bad.csv" 301
{
    echo "time_s,service,rps"
    for d in 0 1 2; do
        for h in $(seq 0 23); do
            if [ "$h" -ge 8 ] && [ "$h" -lt 20 ]; then rps=250; else rps=60; fi
            echo "$(((d * 24 + h) * 3600)),chat,$rps"
        done
    done
} >"$tmp/demand.csv"
{
    echo "job_id,submit_s,team,priority,gpus,duration_s,gang_gpus,dp_min,ckpt_interval_s,ckpt_s,restore_s"
    for i in $(seq 1 12); do echo "j$i,0,t,3,8,200000,8,1,1800,90,120"; done
} >"$tmp/jobs.csv"

run() { # run SERVICES OUTDIR POLICIES
    "$TIDE_BIN" sim --cluster 4x8 --services "$1" --demand "$tmp/demand.csv" \
        --jobs "$tmp/jobs.csv" --policy "$3" --horizon 3d --out "$2" --outputs summary,timeline
}
field() { # field SUMMARY POLICY: p99 notice-to-ready seconds
    python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["policies"][sys.argv[2]]; print(int(p["reclaim"]["p99_notice_to_ready_s"]))' "$1" "$2"
}

for s in plain s0 s120; do
    run "$tmp/$s.csv" "$tmp/$s" elastic,preempt >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; fail "sim $s failed"; }
done
# stage_s = 0 is the old behaviour, byte for byte
cmp -s "$tmp/plain/timeline.csv" "$tmp/s0/timeline.csv" || fail "stage_s 0 changed timeline.csv"
# staged: reclaimed replicas ready sooner after the notice (90 s checkpoint + 300 s warm-up
# -> the warm-up alone); preempt (victims killed, nothing to overlap) unchanged
un=$(field "$tmp/s0/summary.json" elastic)
st=$(field "$tmp/s120/summary.json" elastic)
[ "$un" -gt 0 ] || fail "no reclaim in the unstaged run (p99 notice-to-ready $un)"
[ "$st" -lt "$un" ] || fail "staging did not shorten notice-to-ready ($st >= $un)"
[ "$st" -ge 300 ] || fail "a staged replica was ready before its unstaged part of the warm-up ($st < 300)"
python3 - "$tmp/s0/summary.json" "$tmp/s120/summary.json" <<'PY' || fail "preempt changed with stage_s"
import json, sys
a, b = (json.load(open(f))["policies"]["preempt"] for f in sys.argv[1:3])
for p in (a, b):
    p.pop("wall_s", None)
    p.pop("perf", None)
sys.exit(0 if a == b else 1)
PY
# bad input: a clear error naming the column, no crash
if run "$tmp/bad.csv" "$tmp/bad" elastic >/dev/null 2>"$tmp/err"; then
    fail "stage_s above warmup_s accepted"
fi
grep -q 'stage_s' "$tmp/err" || fail "error does not name stage_s: $(cat "$tmp/err")"
grep -q 'warmup_s (300)' "$tmp/err" || fail "error does not give the bound: $(cat "$tmp/err")"

if [ "$fails" -gt 0 ]; then
    echo "$fails failure(s)" >&2
    exit 1
fi
echo "ok"
