#!/usr/bin/env bash
# End-to-end: `tide review OLD.yaml NEW.yaml` (docs/review.md).
#  - a reserve cut (160 -> 40 GPUs of 200) on the generated workload with slow
#    checkpoint storage (where the reserve matters: reclaims come late) shows
#    both outcomes and both Pareto fronts, says which metric failed, and exits 1;
#  - the same configuration on both sides exits 0 with every metric "same";
#  - a looser --max-slo-drop lets the same cut through (exit 0);
#  - --json: one document with the six metrics, both fronts and pass=false;
#  - the daemon's own keys (db, listen) are ignored; bad files and options:
#    exit 2 naming the problem (path:line for a bad key), 3 for a missing file;
#  - with the shared traces (TIDE_TRACES), a review of imported Philly jobs and
#    ServeGen demand runs and prints both fronts (skipped with a note without).
# Environment: TIDE_BIN, TIDE_TRACES. Exit 77 = skip (no binary).
set -u
if [ -z "${TIDE_BIN:-}" ] || [ ! -x "$TIDE_BIN" ]; then
    echo "skip: TIDE_BIN is not set or not executable" >&2
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tide-review.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

cat >"$tmp/old.yaml" <<'EOT'
# as deployed
db: /var/lib/tide/tide.db
listen: 127.0.0.1:7070
policy: elastic
reserve: 160
EOT
cat >"$tmp/new.yaml" <<'EOT'
# the change under review: a reserve cut
db: /var/lib/tide/tide.db
policy: elastic
reserve: 40
EOT

# --- the reserve cut fails on the SLO side
"$TIDE_BIN" review "$tmp/old.yaml" "$tmp/new.yaml" --inject storage:0.5 --out "$tmp/r1" \
    >"$tmp/cut.out" 2>"$tmp/cut.err"
rc=$?
[ $rc = 1 ] || fail "reserve cut: exit $rc, expected 1 ($(cat "$tmp/cut.err"))"
grep -Eq '^slo_attainment +inference .*worse: FAIL' "$tmp/cut.out" || fail "no failed SLO verdict"
grep -Eq '^useful_utilization +training .*better' "$tmp/cut.out" || fail "no useful verdict"
for m in tier_a_breach_gpu_h mean_queue_s preemptions gpu_hours_lost; do
    grep -Eq "^$m " "$tmp/cut.out" || fail "no $m row"
done
grep -q '^Pareto fronts .* over margin=0:0.3:0.1' "$tmp/cut.out" || fail "no fronts"
grep -q '^OLD point .* NEW point' "$tmp/cut.out" || fail "no side-by-side front header"
n=$(sed -n '/^OLD point/,/^front:/p' "$tmp/cut.out" | grep -c 'margin=')
[ "$n" -ge 2 ] || fail "fronts: $n points printed"
grep -q '^verdict: FAIL .*slo_attainment' "$tmp/cut.out" || fail "no FAIL verdict"
[ -s "$tmp/r1/old/front/sweep.csv" ] && [ -s "$tmp/r1/new/config/sweep.json" ] ||
    fail "--out: the replays are not kept"

# --- identical configurations pass
"$TIDE_BIN" review "$tmp/old.yaml" "$tmp/old.yaml" --inject storage:0.5 >"$tmp/same.out" 2>&1
rc=$?
[ $rc = 0 ] || fail "identical configs: exit $rc ($(tail -3 "$tmp/same.out"))"
grep -q '^verdict: PASS' "$tmp/same.out" || fail "identical: no PASS"
n=$(grep -Ec '^(slo_attainment|tier_a_breach_gpu_h|useful_utilization|mean_queue_s|preemptions|gpu_hours_lost) .* same$' "$tmp/same.out")
[ "$n" = 6 ] || fail "identical: $n of 6 metrics are 'same'"

# --- a looser limit lets the cut through
"$TIDE_BIN" review "$tmp/old.yaml" "$tmp/new.yaml" --inject storage:0.5 --max-slo-drop 0.01 \
    >/dev/null 2>&1 || fail "--max-slo-drop 0.01: the cut should pass"

# --- JSON
"$TIDE_BIN" review "$tmp/old.yaml" "$tmp/new.yaml" --inject storage:0.5 --json >"$tmp/cut.json"
[ $? = 1 ] || fail "--json: exit status"
python3 - "$tmp/cut.json" <<'PY' || fail "--json document"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["pass"] is False and d["fails"] >= 1, d
ms = {m["metric"]: m for m in d["metrics"]}
assert len(ms) == 6, ms
assert ms["slo_attainment"]["fails"] and ms["slo_attainment"]["delta"] < 0
assert ms["useful_utilization"]["verdict"] == "better"
assert d["fronts"]["old"] and d["fronts"]["new"], d["fronts"]
for p in d["fronts"]["old"] + d["fronts"]["new"]:
    assert p["point"].startswith("margin="), p
    assert 0 <= p["slo_attainment"] <= 1 and 0 <= p["useful_utilization"] <= 1, p
PY

# --- bad input
printf 'policy: elastic\nreserv: 40\n' >"$tmp/typo.yaml"
"$TIDE_BIN" review "$tmp/old.yaml" "$tmp/typo.yaml" >/dev/null 2>"$tmp/e"
[ $? = 2 ] || fail "unknown key: exit status"
grep -q "typo.yaml:2: unknown key 'reserv'" "$tmp/e" || fail "unknown key: $(cat "$tmp/e")"
printf 'reserve: 999\n' >"$tmp/big.yaml"
"$TIDE_BIN" review "$tmp/old.yaml" "$tmp/big.yaml" >/dev/null 2>"$tmp/e"
[ $? = 2 ] || fail "reserve above the cluster: exit status ($(cat "$tmp/e"))"
"$TIDE_BIN" review "$tmp/old.yaml" "$tmp/none.yaml" >/dev/null 2>&1
[ $? = 3 ] || fail "missing file: exit status"
"$TIDE_BIN" review "$tmp/old.yaml" "$tmp/new.yaml" --traces "$tmp/nowhere" >/dev/null 2>&1
[ $? = 3 ] || fail "missing traces: exit status"
"$TIDE_BIN" review "$tmp/old.yaml" >/dev/null 2>&1
[ $? = 2 ] || fail "one file: exit status"
"$TIDE_BIN" review "$tmp/old.yaml" "$tmp/new.yaml" --max-slo-drop -1 >/dev/null 2>&1
[ $? = 2 ] || fail "negative limit: exit status"
"$TIDE_BIN" review --help | grep -q 'usage: tide review OLD.yaml NEW.yaml' || fail "--help"

# --- real traces (when the shared folder is there)
T=${TIDE_TRACES:-}
if [ -n "$T" ] && [ -f "$T/philly_pollux/philly.csv" ] && [ -d "$T/servegen/language_m-large" ]; then
    "$TIDE_BIN" trace import --format philly "$T/philly_pollux/philly.csv" --days 21:23 \
        --out "$tmp/jobs" >/dev/null &&
        "$TIDE_BIN" trace import --format servegen "$T/servegen/language_m-large" --peak-gpus 64 \
            --align-with "$tmp/jobs/jobs.csv" --out "$tmp/tr" >/dev/null &&
        cp "$tmp/jobs/jobs.csv" "$tmp/tr/" || fail "importing the traces"
    printf 'cluster: 16x8:H100\nreserve: 64\n' >"$tmp/o2.yaml"
    printf 'cluster: 16x8:H100\nreserve: 16\n' >"$tmp/n2.yaml"
    "$TIDE_BIN" review "$tmp/o2.yaml" "$tmp/n2.yaml" --traces "$tmp/tr" >"$tmp/tr.out" 2>&1
    rc=$?
    { [ $rc = 0 ] || [ $rc = 1 ]; } || fail "traces: exit $rc ($(tail -3 "$tmp/tr.out"))"
    grep -q '^OLD point' "$tmp/tr.out" && grep -q '^verdict: ' "$tmp/tr.out" ||
        fail "traces: no fronts or verdict"
else
    echo "note: the shared traces (TIDE_TRACES='$T') are absent: the traces part is skipped" >&2
fi

if [ $fails -ne 0 ]; then
    echo "$fails check(s) failed" >&2
    exit 1
fi
echo "review: ok"
