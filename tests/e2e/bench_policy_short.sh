#!/usr/bin/env bash
# End-to-end: bench/policy_quality.sh in its short mode (2 simulated days) on the
# real public traces: the six workloads are built, every policy the binary lists
# runs on each, and the markdown table has one row per workload x policy whose
# utilizations, SLO attainment and bound are numbers in [0, 1]; the commands that
# made the rows are recorded; a missing traces folder is "skipped", exit 0.
# Environment: TIDE_BIN (the tide binary), TIDE_SRC (the source tree),
# TIDE_TRACES (the shared traces folder). Exit 77 = skip (no binary, no traces,
# no python3).
set -u

if [ -z "${TIDE_BIN:-}" ] || [ ! -x "$TIDE_BIN" ]; then
    echo "skip: TIDE_BIN is not set or not executable" >&2
    exit 77
fi
SRC=${TIDE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
T=${TIDE_TRACES:-}
if [ -z "$T" ] || [ ! -f "$T/philly_pollux/philly.csv" ] || [ ! -d "$T/servegen/language_m-large" ] ||
    [ ! -f "$T/azure_llm_2023/AzureLLMInferenceTrace_conv.csv" ] ||
    [ ! -f "$T/azure_llm_2023/AzureLLMInferenceTrace_code.csv" ] ||
    [ ! -f "$T/mooncake_fast25/conversation_trace.jsonl" ]; then
    echo "skip: the shared traces folder (TIDE_TRACES='$T') is absent or incomplete" >&2
    exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "skip: python3 is needed" >&2
    exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# --- the short campaign; results outside the source tree
if ! TIDE_TRACES=$T RESULTS=$tmp/res.md bash "$SRC/bench/policy_quality.sh" "$TIDE_BIN" --short \
    >"$tmp/out" 2>"$tmp/err"; then
    fail "policy_quality.sh --short failed: $(tail -5 "$tmp/err")"
fi
[ -s "$tmp/res.md" ] || fail "no results file"
cmp -s "$tmp/out" "$tmp/res.md" || fail "stdout and the results file differ"
# progress: one line per step on stderr (8 workload steps + 6 replays + 6 sweeps)
n=$(grep -c '^policy_quality: \[' "$tmp/err")
[ "$n" -eq 20 ] || fail "expected 20 progress lines, got $n: $(cat "$tmp/err")"

python3 - "$tmp/res.md" "$TIDE_BIN" <<'EOF' || fail "table checks"
import re, sys
md = open(sys.argv[1]).read()
pol = re.search(r"^Policies: ([a-z0-9_,-]+)\.$", md, re.M)
assert pol, "no Policies line"
pols = pol.group(1).split(",")
assert pols[:3] == ["static", "preempt", "elastic"], pols
assert len(set(pols)) == len(pols), pols
wls = ["azure-conv", "azure-code", "diurnal-bursts", "servegen", "mooncake", "flat"]
lines = [l for l in md.split("headroom picked in hindsight")[0].splitlines() if l.startswith("| ")]
hdr = [c.strip() for c in lines[0].strip("|").split("|")]
for col in ("workload", "policy", "useful", "allocated", "SLO", "preemptions", "jobs done",
            "jobs waiting", "bound", "useful / bound"):
    assert col in hdr, (col, hdr)
rows = [dict(zip(hdr, (c.strip() for c in l.strip("|").split("|")))) for l in lines[1:]]
got = [(r["workload"], r["policy"]) for r in rows]
assert got == [(w, p) for w in wls for p in pols], got
for r in rows:
    for col in ("useful", "allocated", "SLO", "jobs waiting", "bound"):
        v = float(r[col])
        assert 0 <= v <= 1, (r, col)
    assert float(r["useful"]) <= float(r["allocated"]) + 1e-9, r
    assert 0 <= float(r["useful / bound"]) <= 1.5, r
    assert int(r["preemptions"]) >= 0 and int(r["jobs done"]) >= 1, r
    if "Tier A breach GPU-h" in r and r["Tier A breach GPU-h"] != "-":
        assert float(r["Tier A breach GPU-h"]) >= 0, r
# the recorded commands: every workload built and replayed over 2 days
assert "--days 21:23" in md
for w in wls:
    assert re.search(r"^\S*tide sim --cluster 64x8 --services \$W/%s/services\.csv .*--horizon 2d" % w,
                     md, re.M), w
assert "policy_quality.sh --combine" in md and "policy_quality.sh --flatten" in md
assert re.search(r"^Machine: .*Commit: \S+", md, re.M)
# the hindsight sweep of preempt's headroom: one row per workload, the pick met the
# target or says none did, elastic's figures equal the main table's
hs = [0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.40, 0.50, 0.75, 1.00]
sec = md.split("headroom picked in hindsight", 1)
assert len(sec) == 2, "no sweep table"
slines = [l for l in sec[1].splitlines() if l.startswith("| ")]
shdr = [c.strip() for c in slines[0].strip("|").split("|")]
srows = [dict(zip(shdr, (c.strip() for c in l.strip("|").split("|")))) for l in slines[1:]]
assert [r["workload"] for r in srows] == wls, srows
main = {(r["workload"], r["policy"]): r for r in rows}
for r in srows:
    h = r["headroom picked in hindsight"]
    if h.startswith("none meets"):
        assert r["elastic - preempt"] == "-", r
    else:
        assert float(h) in hs, r
        assert float(r["preempt SLO"]) >= 0.999, r
        d = float(r["elastic useful"]) - float(r["preempt useful"])
        assert abs(d - float(r["elastic - preempt"])) <= 0.0015, r
    assert r["elastic useful"] == main[(r["workload"], "elastic")]["useful"], r
    assert r["elastic SLO"] == main[(r["workload"], "elastic")]["SLO"], r
for w in wls:
    for h in ("0.05", "0.25", "1.00"):
        assert re.search(r"^\S*tide sim .*\$W/%s/services\.csv .*--policy preempt --headroom %s .*--outputs summary" % (w, h),
                         md, re.M), (w, h)
print("table ok: %d rows, sweep %d rows" % (len(rows), len(srows)))
EOF

# --- absent traces: a clear message, exit 0
out=$(TIDE_TRACES=$tmp/none RESULTS=$tmp/none.md bash "$SRC/bench/policy_quality.sh" "$TIDE_BIN" --short 2>&1)
rc=$?
[ "$rc" -eq 0 ] || fail "absent traces: exit $rc"
echo "$out" | grep -q 'skipped' || fail "absent traces: no 'skipped' message: $out"
[ ! -e "$tmp/none.md" ] || fail "absent traces: a results file was written"

# --- bad settings are refused
DAYS=0 TIDE_TRACES=$T RESULTS=$tmp/x.md bash "$SRC/bench/policy_quality.sh" "$TIDE_BIN" >/dev/null 2>&1
[ $? -eq 2 ] || fail "DAYS=0 was not refused with exit 2"
POLICIES='static;rm' TIDE_TRACES=$T RESULTS=$tmp/x.md bash "$SRC/bench/policy_quality.sh" "$TIDE_BIN" >/dev/null 2>&1
[ $? -eq 2 ] || fail "a malformed POLICIES was not refused with exit 2"
HEADROOMS='0.1;rm' TIDE_TRACES=$T RESULTS=$tmp/x.md bash "$SRC/bench/policy_quality.sh" "$TIDE_BIN" >/dev/null 2>&1
[ $? -eq 2 ] || fail "a malformed HEADROOMS was not refused with exit 2"
SLO_TARGET=2 TIDE_TRACES=$T RESULTS=$tmp/x.md bash "$SRC/bench/policy_quality.sh" "$TIDE_BIN" >/dev/null 2>&1
[ $? -eq 2 ] || fail "SLO_TARGET=2 was not refused with exit 2"

if [ "$fails" -ne 0 ]; then
    echo "$fails check(s) failed" >&2
    exit 1
fi
echo "bench_policy_short: ok"
