#!/usr/bin/env bash
# End-to-end: `tide sim --rl` (docs/rl.md) on a seed200 cluster (2 days of its
# inference demand) with the example RL job: the command `make bench-rl` runs.
# Checks relations, not numbers: the lent pool's trainer step is not slower
# than the fixed pool at the same dedicated GPUs (lent-all: every pool job
# released; lent: sized from the trainer's wait), no accepted trajectory is
# older than max_staleness, inference stays at its SLO target, the lent pool
# was reclaimed by drain and lent more by night (seed200's demand is by day),
# the engine's invariants hold (--check: Tier A never
# lent), and a second run gives the same rl.json; bad inputs fail cleanly.
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip.
set -u

if [ -z "${TIDE_BIN:-}" ] || [ ! -x "$TIDE_BIN" ]; then
    echo "skip: TIDE_BIN is not set or not executable" >&2
    exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "skip: python3 is needed to read rl.json" >&2
    exit 77
fi
src=${TIDE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

"$TIDE_BIN" gen --scenario seed200 --days 2 --out "$tmp/w" >/dev/null || { echo "FAIL: gen" >&2; exit 1; }
"$TIDE_BIN" gen --scenario seed200 --days 7 --seed 2 --out "$tmp/h" >/dev/null || { echo "FAIL: gen" >&2; exit 1; }
run() {
    "$TIDE_BIN" sim --cluster 25x8:H100 --services "$tmp/w/services.csv" \
        --demand "$tmp/w/demand.csv" --demand-history "$tmp/h/demand.csv" \
        --rl "$src/examples/rl/rl.csv" --horizon 2d "$@"
}
run --check --out "$tmp/a" >"$tmp/a.txt" 2>&1 || { cat "$tmp/a.txt" >&2; fail "sim --rl --check failed"; }
grep -q '^lent ' "$tmp/a.txt" || fail "no table row for lent"
[ -s "$tmp/a/rl.csv" ] || fail "no rl.csv"
for v in fixed-min fixed-max lent-all lent; do
    [ -s "$tmp/a/$v/summary.json" ] || fail "no $v/summary.json"
done

python3 - "$tmp/a/rl.json" "$tmp/a/lent/summary.json" <<'EOF' || fail "relations"
import json, sys
r = {x["variant"]: x for x in json.load(open(sys.argv[1]))}
slo = 0.999  # the engine's default SLO target
fm, fx, la, le = r["fixed-min"], r["fixed-max"], r["lent-all"], r["lent"]
bad = []
def need(ok, msg):
    if not ok:
        bad.append(msg)
need(le["dedicated_gpus"] == fm["dedicated_gpus"] < fx["dedicated_gpus"], "dedicated GPUs")
need(le["step_mean_s"] <= fm["step_mean_s"], "lent mean step %s > fixed-min %s" % (le["step_mean_s"], fm["step_mean_s"]))
need(le["steps"] >= fm["steps"], "lent did fewer steps than fixed-min")
need(le["step_p50_s"] <= fm["step_p50_s"], "lent P50 step slower than fixed-min")
for x in r.values():
    need(0 <= x["max_accepted_staleness"] <= x["max_staleness"], "%s: staleness %d > bound %d" % (x["variant"], x["max_accepted_staleness"], x["max_staleness"]))
    need(sum(x["staleness_hist"]) == x["accepted"], "%s: staleness histogram does not add up" % x["variant"])
    need(x["inference_served"] >= slo, "%s: inference %s below the SLO target" % (x["variant"], x["inference_served"]))
    need(x["steps"] > 0 and x["accepted"] >= x["steps"], "%s: no progress" % x["variant"])
need(fm["lent_rollout_gpu_h"] == 0 and fx["lent_rollout_gpu_h"] == 0, "fixed pools lent something")
need(le["lent_rollout_gpu_h"] > 0, "nothing lent")
need(le["drains"] > 0, "the lent pool was never drained")
h = le["lent_gpus_by_hour"]
need(sum(h[0:6]) / 6 > sum(h[10:17]) / 7, "lent no more by night than by day: %s" % h)
need(le["drains_clean"] <= le["drains"], "drains_clean > drains")
# the pool sized from the trainer's wait: within the spec's range, a dedicated floor like
# lent-all's, and not slower than the fixed pool at the same dedicated GPUs
need(0 <= le["pool_want"] <= 64 - 8, "pool_want %s out of 0..56" % le["pool_want"])
need(la["dedicated_gpus"] == le["dedicated_gpus"], "lent-all dedicated GPUs")
need(la["lent_rollout_gpu_h"] > 0 and la["step_mean_s"] <= fm["step_mean_s"], "lent-all")
need(la["pool_grows"] == 0 and la["pool_shrinks"] == 0, "lent-all has a controller")
s = json.load(open(sys.argv[2]))["policies"]["elastic"]
need(s["reclaim"]["late"] == 0, "late reclaims")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
EOF

# deterministic: the same command gives the same figures
run --out "$tmp/b" >/dev/null 2>&1 || fail "second run failed"
cmp -s "$tmp/a/rl.json" "$tmp/b/rl.json" || fail "rl.json differs between two runs"

# bad inputs: clear errors, no crash
if run --out "$tmp/c" --rl "$tmp/none.csv" >"$tmp/e.txt" 2>&1; then fail "missing rl.csv accepted"; fi
grep -qi "none.csv" "$tmp/e.txt" || fail "missing rl.csv: no message naming it"
sed 's/,8,64,1$/,8,4,1/' "$src/examples/rl/rl.csv" >"$tmp/bad.csv"
if run --out "$tmp/c" --rl "$tmp/bad.csv" >"$tmp/e.txt" 2>&1; then fail "max < min accepted"; fi
grep -q "max_replicas" "$tmp/e.txt" || fail "max < min: no message naming max_replicas"
if run --out "$tmp/c" --rl-pool target_wait=2 >"$tmp/e.txt" 2>&1; then fail "--rl-pool target_wait=2 accepted"; fi
grep -q "target_wait" "$tmp/e.txt" || fail "--rl-pool: no message naming target_wait"
if run --out "$tmp/c" --sweep reserve=40 >"$tmp/e.txt" 2>&1; then fail "--rl with --sweep accepted"; fi
"$TIDE_BIN" sim --help | grep -q -- "--rl" || fail "--rl not in tide sim --help"

[ "$fails" -eq 0 ] && echo "sim_rl: ok"
exit $((fails > 0))
