#!/usr/bin/env bash
# End-to-end: the model pipeline in a replay (`tide sim --publish-every`).
#  - seed32, 3 days, every policy, a version every 12 h, every 2nd regressing,
#    --check (the engine's invariants and the rollout bound every step);
#  - summary.json: every policy has "pipeline" figures that hold together
#    (versions published, served + rolled back <= published, regressions rolled
#    back, the canary's extra GPU-hours below a 2x blue/green release's, the
#    worst step at most blue/green's; `isolated`, whose pool has no room for a
#    canary, releases nothing);
#  - events.csv has the version rows in time order; the report carries the lane;
#  - bad options are refused with a usage error.
# Environment: TIDE_BIN.
set -u
T=${TIDE_BIN:?TIDE_BIN}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

"$T" gen --scenario seed32 --days 3 --seed 1 --out "$tmp/g" >/dev/null || { echo "FAIL: tide gen" >&2; exit 1; }
svc=$(sed -n 2p "$tmp/g/services.csv" | cut -d, -f1)
sim() { "$T" sim --cluster 4x8:H100 --services "$tmp/g/services.csv" --demand "$tmp/g/demand.csv" \
    --jobs "$tmp/g/jobs.csv" --horizon 3d "$@"; }
sim --check --publish-every 12h --publish-service "$svc" --regress-every 2 --out "$tmp/o" \
    --report "$tmp/o/report.html" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; fail "tide sim --publish-every"; }
python3 - "$tmp/o/summary.json" "$svc" <<'PY' || fail "summary.json pipeline figures"
import json, sys
s = json.load(open(sys.argv[1]))
bad = []
for name, p in s["policies"].items():
    f = p.get("pipeline")
    if not f:
        bad.append("%s: no pipeline" % name)
        continue
    if f["model"] != sys.argv[2] + "-model":
        bad.append("%s: model %s" % (name, f["model"]))
    if f["versions"] < 5:  # 06:00, 18:00, ... over 3 days
        bad.append("%s: %d versions published" % (name, f["versions"]))
    if name == "isolated":
        # its pool is sized at the peak and always hot: no GPU for a canary's
        # surge, so a release waits (docs/pipeline.md); nothing else to check
        if f["served"] or f["extra_gpu_hours"]:
            bad.append("isolated: a release went through with no room: %s" % f)
        continue
    if f["served"] + f["rolled_back"] > f["versions"] or f["served"] < 1:
        bad.append("%s: served %d rolled back %d of %d" % (name, f["served"], f["rolled_back"], f["versions"]))
    if f["rolled_back"] < 1:
        bad.append("%s: no regression rolled back" % name)
    bg = f["blue_green_2x"]
    if not f["extra_gpu_hours"] < bg["extra_gpu_hours"]:
        bad.append("%s: canary extra %.1f GPU-h not below blue/green's %.1f" % (name, f["extra_gpu_hours"], bg["extra_gpu_hours"]))
    if f["worst_extra_gpus"] > bg["worst_extra_gpus"]:
        bad.append("%s: worst step %g above blue/green's %g" % (name, f["worst_extra_gpus"], bg["worst_extra_gpus"]))
    if not (0 < f["ckpt_to_serving_mean_h"] <= f["ckpt_to_serving_max_h"]):
        bad.append("%s: checkpoint -> serving %s" % (name, f))
    if not (0 <= f["slo_during_rollouts"] <= 1) or f["eval_gpu_hours"] <= 0:
        bad.append("%s: %s" % (name, f))
sys.exit("; ".join(bad) if bad else 0)
PY
python3 - "$tmp/o/events.csv" <<'PY' || fail "events.csv version rows"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["kind"] == "version"]
if not rows:
    sys.exit("no version rows")
for pol in {r["policy"] for r in rows}:
    t = [int(r["time_s"]) for r in rows if r["policy"] == pol]
    if t != sorted(t):
        sys.exit("%s: version rows out of order" % pol)
what = {r["reason"] for r in rows}
need = {"registered", "evaluating", "canary", "step", "serving", "rolled-back", "retired"}
sys.exit(0 if need <= what else "missing %s" % sorted(need - what))
PY
grep -q '"pipeline":{"isolated":{"rows":\[\[' "$tmp/o/report.html" || fail "the report carries no pipeline lane"
grep -q 'id="chart-pipeline"' "$tmp/o/report.html" || fail "no pipeline chart in the report"

# weight loads through a storage limit: new-version replicas load like any
# (the evaluation jobs' checkpoints are sized too); the release still goes through
sim --policy elastic --publish-every 12h --inject storage:1 --out "$tmp/s" >/dev/null 2>"$tmp/e" ||
    fail "tide sim --publish-every --inject storage: $(cat "$tmp/e")"
python3 -c 'import json, sys; f = json.load(open(sys.argv[1]))["policies"]["elastic"]["pipeline"]; sys.exit(0 if f["served"] >= 1 else f)' \
    "$tmp/s/summary.json" || fail "no release went through under a storage limit"

# the same run without the options has no pipeline
sim --policy elastic --out "$tmp/n" >/dev/null 2>&1 || fail "tide sim without the pipeline"
grep -q '"pipeline"' "$tmp/n/summary.json" && fail "a run without --publish-every has pipeline figures"

# bad options: usage errors (exit 2) naming the option
expect_usage() { # expect_usage WORD args...
    local w=$1
    shift
    sim --policy elastic --out "$tmp/b" "$@" >/dev/null 2>"$tmp/e"
    local rc=$?
    [ $rc = 2 ] && grep -q -- "$w" "$tmp/e" || fail "$* : exit $rc, $(cat "$tmp/e")"
}
expect_usage --publish-every --publish-every 0
expect_usage --publish-every --publish-every soon
expect_usage --regress-every --publish-every 1d --regress-every -1
expect_usage --publish-every --regress-every 2
sim --policy elastic --out "$tmp/b" --publish-every 1d --publish-service nope >/dev/null 2>"$tmp/e"
rc=$?
[ $rc != 0 ] && grep -q "no service 'nope'" "$tmp/e" || fail "an unknown --publish-service: exit $rc, $(cat "$tmp/e")"
"$T" sim --help | grep -q -- '--publish-every' || fail "--help does not document --publish-every"

[ $fails = 0 ] || { echo "sim_pipeline: $fails check(s) failed" >&2; exit 1; }
echo "sim_pipeline: ok"
