#!/usr/bin/env bash
# End-to-end: `tide trace import` on the real public traces (Philly, ServeGen,
# Azure LLM 2023, Mooncake; see ../shared/traces/README.md), checks of the
# outputs against the traces' published figures, and a short `tide sim` on
# Philly jobs + ServeGen demand fitted to a 64x8 cluster.
# Environment: TIDE_BIN (the tide binary), TIDE_TRACES (the shared traces
# folder). Exit 77 = skip (no binary, no traces or no python3).
set -u

if [ -z "${TIDE_BIN:-}" ] || [ ! -x "$TIDE_BIN" ]; then
    echo "skip: TIDE_BIN is not set or not executable" >&2
    exit 77
fi
T=${TIDE_TRACES:-}
if [ -z "$T" ] || [ ! -f "$T/philly_pollux/philly.csv" ] || [ ! -d "$T/servegen/language_m-large" ] ||
    [ ! -d "$T/azure_llm_2023" ] || [ ! -f "$T/mooncake_fast25/conversation_trace.jsonl" ]; then
    echo "skip: the shared traces folder (TIDE_TRACES='$T') is absent or incomplete" >&2
    exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "skip: python3 is needed to check the outputs" >&2
    exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

imp() { # imp LOGNAME args... : run an import, keep its stdout in $tmp/LOGNAME
    local log=log.$1
    shift
    if ! "$TIDE_BIN" trace import "$@" >"$tmp/$log" 2>"$tmp/$log.err"; then
        fail "tide trace import $*: $(cat "$tmp/$log.err")"
        return 1
    fi
    grep -q '^tide trace import: ' "$tmp/$log" || fail "$log: no summary line"
    [ "$(wc -l <"$tmp/$log")" -eq 1 ] || fail "$log: summary is not one line"
}

# --- Philly: 14 days from the first Monday of the dense part (2017-09-25)
W=$tmp/w
imp philly --format philly "$T/philly_pollux/philly.csv" --days 21:35 --out "$W"
grep -q '82247 rows read, 0 skipped' "$tmp/log.philly" || fail "philly: rows read: $(cat "$tmp/log.philly")"
grep -q 'window 2017-09-25 00:00:00 .. 2017-10-09 00:00:00' "$tmp/log.philly" || fail "philly window"

# --- ServeGen m-large fitted to a peak of 200 GPUs, aligned with the jobs
imp sg --format servegen "$T/servegen/language_m-large" --peak-gpus 200 \
    --align-with "$W/jobs.csv" --out "$W"
grep -q '162 files, 326592 rows read, 0 skipped, 0 gaps filled' "$tmp/log.sg" || fail "sg: $(cat "$tmp/log.sg")"
grep -q 'peak 250 rps = 200 GPUs' "$tmp/log.sg" || fail "sg peak: $(cat "$tmp/log.sg")"

# --- ServeGen gaps: all-zero windows are filled (m-mid 84, m-small 37 per the README)
imp mid --format servegen "$T/servegen/language_m-mid" "$T/servegen/language_m-small" \
    --service mid --service small --out "$tmp/gaps"
grep -q ', 121 gaps filled' "$tmp/log.mid" || fail "m-mid + m-small gaps: $(cat "$tmp/log.mid")"

# --- Azure LLM 2023: both logs, 60 s windows, repeated over 14 days
imp az --format azure-llm "$T/azure_llm_2023/AzureLLMInferenceTrace_code.csv" \
    "$T/azure_llm_2023/AzureLLMInferenceTrace_conv.csv" --service code --service conv \
    --window 60s --duration 14d --out "$tmp/az"
grep -q '2 files, 28185 rows read, 0 skipped' "$tmp/log.az" || fail "azure rows: $(cat "$tmp/log.az")"

# --- Mooncake: 5-minute windows, 8-GPU replicas of 20k tokens/s
imp mc --format mooncake "$T/mooncake_fast25/conversation_trace.jsonl" --out "$tmp/mc"
grep -q '1 file, 12031 rows read, 0 skipped' "$tmp/log.mc" || fail "mooncake rows: $(cat "$tmp/log.mc")"

python3 - "$W" "$tmp" "$T" <<'EOF' || fail "output checks"
import csv, math, sys, collections
W, tmp, T = sys.argv[1:4]
# jobs.csv: every column, 14 days, priorities per the rule, gangs that divide
jobs = list(csv.DictReader(open(W + "/jobs.csv")))
assert list(jobs[0]) == ["job_id", "submit_s", "team", "priority", "gpus", "duration_s",
                         "gang_gpus", "dp_min", "ckpt_interval_s", "ckpt_s", "restore_s"]
src = [r for r in csv.DictReader(open(T + "/philly_pollux/philly.csv"))
       if "2017-09-25" <= r["timestamp"] < "2017-10-09"]
assert len(jobs) == len(src), (len(jobs), len(src))
assert int(jobs[0]["submit_s"]) == 0
prio = collections.Counter()
teams = set()
for j in jobs:
    g, gang, dpm, d = int(j["gpus"]), int(j["gang_gpus"]), int(j["dp_min"]), int(j["duration_s"])
    assert 0 <= int(j["submit_s"]) < 14 * 86400
    assert g % gang == 0 and gang <= 8 and d >= 1
    w = g // gang
    assert dpm == ((w + 1) // 2 if g >= 16 else w), j
    p = int(j["priority"])
    if g * d < 600 or (g == 1 and d < 3600):
        assert p == 3, j
    else:
        assert p in (1, 2), j
        if g < 8:
            assert p == 2, j
    prio[p] += 1
    teams.add(j["team"])
assert 0 < prio[1] < 0.01 * len(jobs), prio
assert len(teams) <= 15
assert abs(sum(int(j["gpus"]) * int(j["duration_s"]) for j in jobs) -
           sum(float(r["gpu_time"]) for r in src)) < 0.001 * sum(float(r["gpu_time"]) for r in src)
# ServeGen m-large: 14 days of 600 s windows, the fitted peak needs 200 GPUs,
# the shape is the README's (mean 196 req/s, hourly peak/trough large)
svc = list(csv.DictReader(open(W + "/services.csv")))
assert len(svc) == 1 and svc[0]["service"] == "language_m-large", svc
rr, gpr = float(svc[0]["replica_rps"]), int(svc[0]["gpus_per_replica"])
dem = list(csv.DictReader(open(W + "/demand.csv")))
assert len(dem) == 2016 and dem[-1]["time_s"] == str(14 * 86400 - 600), (len(dem), dem[-1])
rps = [float(r["rps"]) for r in dem]
assert math.ceil(max(rps) / rr) * gpr == 200, max(rps)
raw = [float(r["total_rate_rps"]) for r in
       csv.DictReader(open(T + "/servegen/DERIVED_aggregate_rate_per_10min.csv"))
       if r["category"] == "language_m-large"]
k = max(rps) / max(raw)
assert abs(sum(rps) / len(rps) / k - 196) < 2, sum(rps) / len(rps) / k
for a, b in zip(rps, raw):
    assert abs(a - b * k) < 1e-3 + 1e-6 * b * k, (a, b * k)
# gaps: no window of m-mid / m-small is zero any more
gd = list(csv.DictReader(open(tmp + "/gaps/demand.csv")))
assert len(gd) == 2 * 2016 and min(float(r["rps"]) for r in gd) > 0
# Azure: 20160 one-minute windows per service, rps = requests / 60
ad = list(csv.DictReader(open(tmp + "/az/demand.csv")))
assert len(ad) == 2 * 20160, len(ad)
asv = {r["service"]: r for r in csv.DictReader(open(tmp + "/az/services.csv"))}
assert set(asv) == {"code", "conv"}
for r in ad[:200]:
    assert abs(float(r["rps"]) * 60 - round(float(r["rps"]) * 60)) < 0.01, r
# Mooncake: replica_rps = 20000 / mean(input + output) of the binned requests
import json
reqs = [json.loads(l) for l in open(T + "/mooncake_fast25/conversation_trace.jsonl")]
kept = [q for q in reqs if q["timestamp"] < 11 * 300000]
cost = sum(q["input_length"] + q["output_length"] for q in kept) / len(kept)
msv = list(csv.DictReader(open(tmp + "/mc/services.csv")))
assert abs(float(msv[0]["replica_rps"]) - 20000 / cost) < 1e-4, (msv, 20000 / cost)
md = list(csv.DictReader(open(tmp + "/mc/demand.csv")))
assert len(md) == 11 and abs(sum(float(r["rps"]) for r in md) * 300 - len(kept)) < 1, len(kept)
print("outputs ok")
EOF

# --- a short replay on 64x8: Philly jobs + ServeGen demand
if ! "$TIDE_BIN" sim --cluster 64x8 --services "$W/services.csv" --demand "$W/demand.csv" \
    --jobs "$W/jobs.csv" --policy isolated,static,preempt,elastic,timeshare --horizon 2d \
    --out "$tmp/sim" >"$tmp/sim.out" 2>"$tmp/sim.err"; then
    fail "tide sim on imported traces: $(cat "$tmp/sim.err")"
fi
for p in isolated static preempt elastic timeshare; do
    grep -q "^$p " "$tmp/sim.out" || fail "sim: no table row for $p"
done

# --- bad rows: strict stops at file:line with the column; --skip-bad counts
{
    head -50 "$T/philly_pollux/philly.csv"
    echo "2017-10-02 00:00:00,60.0,many,60.0,11cb48"
    sed -n 51,100p "$T/philly_pollux/philly.csv"
} >"$tmp/bad.csv"
"$TIDE_BIN" trace import --format philly "$tmp/bad.csv" --out "$tmp/bad" >"$tmp/o" 2>"$tmp/e"
[ $? -eq 2 ] || fail "a bad row did not exit 2"
grep -q "bad.csv:51: column 'num_gpus'" "$tmp/e" || fail "bad row message: $(cat "$tmp/e")"
"$TIDE_BIN" trace import --format philly "$tmp/bad.csv" --skip-bad --out "$tmp/bad" >"$tmp/o" 2>"$tmp/e" ||
    fail "--skip-bad failed: $(cat "$tmp/e")"
grep -q '100 rows read, 1 skipped' "$tmp/o" || fail "--skip-bad count: $(cat "$tmp/o")"

# --- usage errors exit 2
expect2() {
    "$TIDE_BIN" trace import "$@" >/dev/null 2>"$tmp/e"
    [ $? -eq 2 ] || fail "'$*' did not exit 2"
}
expect2 --format philly "$T/philly_pollux/philly.csv" --out "$tmp/x" --window 60s
expect2 --format servegen "$T/servegen/language_m-large" --out "$tmp/x" --days 1:2
expect2 --format mooncake "$T/mooncake_fast25/conversation_trace.jsonl" --out "$tmp/x" --window 0
expect2 --format servegen "$T/servegen/language_m-large" --out "$tmp/x" --duration 1d --align-with "$W/jobs.csv"
"$TIDE_BIN" trace import --help | grep -q 'usage: tide trace import' || fail "--help"

if [ "$fails" -ne 0 ]; then
    echo "$fails check(s) failed" >&2
    exit 1
fi
echo "trace_real: ok"
