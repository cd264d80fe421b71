#!/usr/bin/env bash
# End-to-end: power budgets in the simulator.
#  - `tide sim --power-budget 0.85 --check` on two days of seed200 under
#    elastic: no power domain planned above its budget at any step (the
#    engine's invariant check runs after every step, and summary.json's
#    power.breaches is 0), training was capped (power_cap actions in
#    events.csv, capped jobs with their delay and energy in summary.json),
#    the SLO target is met, energy figures are there and add up;
#  - without a budget nothing is capped but energy is reported;
#  - the HTML report has the power chart and the capped-jobs table;
#  - a cluster file's power_budget_w and power models are used;
#  - a bad --power-budget is refused (exit 2).
# Environment: TIDE_BIN. Exit 77 = skip.
set -u
[ -x "${TIDE_BIN:-}" ] || { echo "skip: TIDE_BIN" >&2; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "skip: python3" >&2; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tide-simpower.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
cd "$tmp"
"$TIDE_BIN" gen --scenario seed200 --days 2 --seed 1 --out in >/dev/null || { echo "FAIL: gen" >&2; exit 1; }
sim() { "$TIDE_BIN" sim --services in/services.csv --demand in/demand.csv --jobs in/jobs.csv \
    --policy elastic --reserve 40 --horizon 2d --seed 1 "$@"; }

sim --cluster 25x8:H100 --power-budget 0.85 --check --out p85 --report p85/report.html >out.txt 2>&1 ||
    fail "tide sim --power-budget 0.85 --check: $(tail -3 out.txt)"
python3 - p85/summary.json <<'PY' || fail "summary.json power (budget 0.85)"
import json, sys
s = json.load(open(sys.argv[1]))
p = s["policies"]["elastic"]
w = p["power"]
assert w["budgeted"] is True
assert abs(w["budget_w"] - 0.85 * w["nameplate_w"]) < 1e-6 * w["nameplate_w"], w
assert w["breaches"] == 0 and w["max_excess_w"] == 0, (w["breaches"], w["max_excess_w"])
assert w["caps"] > 0 and w["capped_jobs"] > 0 and w["capped_gpu_hours"] > 0, w
assert w["cap_delay_h"] > 0 and w["cap_energy_kwh"] < 0, w
assert w["jobs"] and all(j["capped_h"] > 0 for j in w["jobs"]), w["jobs"][:3]
e = w["energy_kwh"]
assert abs(e["serving"] + e["training"] + e["idle"] + e["other"] - e["total"]) < 1e-3 * e["total"], e
assert w["energy_per_request_j"] > 0 and w["energy_per_useful_training_gpu_hour_kwh"] > 0, w
assert p["inference"]["slo_attainment"] >= 0.999, p["inference"]
# the series: per domain, never above the budget
for d in w["series"]["domains"]:
    assert all(x is None or x <= d["budget_w"] + 1e-6 for x in d["max_w"]), d["budget_w"]
PY
grep -q ',power_cap,' p85/events.csv || fail "no power_cap action in events.csv"
grep -q 'id="chart-power"' p85/report.html || fail "no power chart in the report"
python3 - p85/report.html <<'PY' || fail "the report's data: power_cap counted as a fault"
import json, re, sys
html = open(sys.argv[1]).read()
m = re.search(r'<script type="application/json" id="tide-data">(.*?)</script>', html, re.S)
d = json.loads(m.group(1))
faults = json.dumps(d.get("faults", {}))
assert "power_cap" not in faults, faults[:300]
PY

sim --cluster 25x8:H100 --out p100 --outputs summary >/dev/null 2>&1 || fail "tide sim without budget"
python3 - p100/summary.json <<'PY' || fail "summary.json power (no budget)"
import json, sys
w = json.load(open(sys.argv[1]))["policies"]["elastic"]["power"]
assert w["budgeted"] is False and w["caps"] == 0 and w["capped_jobs"] == 0, w
assert w["energy_kwh"]["total"] > 0
PY

# a cluster file: budgets per group, a measured training draw
cat >c.yaml <<'Y'
groups:
  - {count: 25, gpus_per_node: 8, gpu_type: H100, power_nodes: 5, power_budget_w: 22000}
power:
  H100: {training: 640, serving_full: 560}
Y
sim --cluster-file c.yaml --check --out cf --outputs summary >out.txt 2>&1 || fail "tide sim --cluster-file: $(tail -3 out.txt)"
python3 - cf/summary.json <<'PY' || fail "summary.json power (cluster file)"
import json, sys
w = json.load(open(sys.argv[1]))["policies"]["elastic"]["power"]
assert w["budget_w"] == 5 * 22000, w["budget_w"]
assert w["nameplate_w"] == 200 * 700, w["nameplate_w"]
assert w["breaches"] == 0 and w["caps"] > 0, w
PY

for bad in 0 -1 x 101; do
    sim --cluster 25x8:H100 --power-budget "$bad" --out bad >out.txt 2>&1
    rc=$?
    [ "$rc" = 2 ] || fail "--power-budget $bad: exit $rc, expected 2"
    grep -q -- '--power-budget' out.txt || fail "--power-budget $bad: message $(cat out.txt)"
done
"$TIDE_BIN" sim --help | grep -q -- '--power-budget F' || fail "--power-budget not in --help"

[ "$fails" = 0 ] || exit 1
echo "sim_power: ok"
