#!/usr/bin/env bash
# End-to-end: per-domain bandwidth budgets (rack uplinks) in the simulator.
#  - `tide sim --inject storage:G --uplink U` reports every rack's uplink in
#    summary.json (storage.uplinks, storage.busiest_uplink) and a storage line
#    under the table; no rack ever used more than its uplink, and the uplinks
#    lengthen the checkpoint tail against the storage alone;
#  - a cluster file's uplink_gbps gives the same run as --uplink;
#  - without uplinks the storage figures carry no uplink keys;
#  - --uplink without storage:G, or a bad value, is refused (exit 2).
# Environment: TIDE_BIN. Exit 77 = skip.
set -u
[ -x "${TIDE_BIN:-}" ] || { echo "skip: TIDE_BIN" >&2; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "skip: python3" >&2; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tide-simuplink.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
cd "$tmp"
"$TIDE_BIN" gen --scenario seed200 --days 1 --seed 1 --out in >/dev/null || { echo "FAIL: gen" >&2; exit 1; }
sim() { "$TIDE_BIN" sim --services in/services.csv --demand in/demand.csv --jobs in/jobs.csv \
    --policy elastic --horizon 1d --seed 1 --inject storage:5 "$@"; }

sim --cluster 25x8:H100 --out plain >plain.txt 2>&1 || fail "storage only: $(tail -3 plain.txt)"
sim --cluster 25x8:H100 --uplink 1.5 --out up >up.txt 2>&1 || fail "--uplink 1.5: $(tail -3 up.txt)"
grep -q '^storage: elastic: peak .* GB/s of 5.0, .*; 7 uplinks, busiest rack [0-9]*: peak' up.txt ||
    fail "storage line with uplinks: $(grep storage: up.txt)"
grep -q '^storage: elastic: peak' plain.txt || fail "storage line: $(tail -3 plain.txt)"
grep -q 'uplinks' plain.txt && fail "uplinks reported without any"
python3 - plain/summary.json up/summary.json <<'PY' || fail "summary.json uplinks"
import json, sys
plain = json.load(open(sys.argv[1]))["policies"]["elastic"]["faults"]["storage"]
up = json.load(open(sys.argv[2]))["policies"]["elastic"]["faults"]["storage"]
assert "uplinks" not in plain and "busiest_uplink" not in plain, plain.keys()
u = up["uplinks"]
assert [x["rack"] for x in u] == list(range(7)), u
for x in u:
    assert x["gbps"] == 1.5, x
    assert x["peak_rate_gbps"] <= 1.5 + 1e-6, x
b = up["busiest_uplink"]
assert b["saturated_s"] == max(x["saturated_s"] for x in u) > 0, b
assert b["peak_demand_ratio"] > 1, b
# the racks' moved GB add up to what the storage moved
assert abs(sum(x["moved_gb"] for x in u) - up["moved_gb"]) < 1e-6 * up["moved_gb"] + 1e-6
# the uplinks are a tighter constraint: the tail of checkpoints grows
tp, tu = plain["transfer_times"], up["transfer_times"]
assert tu["ckpt_periodic"]["p99_s"] > tp["ckpt_periodic"]["p99_s"], (tp, tu)
PY

# the same uplinks from a cluster file (25 nodes of 8, racks of 4 nodes)
printf 'groups:\n  - {count: 25, gpus_per_node: 8, gpu_type: H100, uplink_gbps: 1.5}\n' >c.yaml
sim --cluster-file c.yaml --out file >file.txt 2>&1 || fail "uplink_gbps in a cluster file: $(tail -3 file.txt)"
python3 - up/summary.json file/summary.json <<'PY' || fail "cluster file uplink_gbps != --uplink"
import json, sys
a = json.load(open(sys.argv[1]))["policies"]["elastic"]["faults"]["storage"]
b = json.load(open(sys.argv[2]))["policies"]["elastic"]["faults"]["storage"]
assert a == b, (a, b)
PY

"$TIDE_BIN" sim --cluster 25x8 --services in/services.csv --demand in/demand.csv --jobs in/jobs.csv \
    --uplink 5 --out x >bad.txt 2>&1
[ $? -eq 2 ] && grep -q -- '--uplink needs --inject storage:G' bad.txt || fail "--uplink without storage: $(cat bad.txt)"
sim --cluster 25x8 --uplink 0 --out x >bad.txt 2>&1
[ $? -eq 2 ] && grep -q -- "--uplink: '0' is not GB/s > 0" bad.txt || fail "--uplink 0: $(cat bad.txt)"
"$TIDE_BIN" sim --help | grep -q -- '--uplink GBPS' || fail "--uplink in --help"

[ $fails -eq 0 ] && echo "sim_uplink: ok"
exit $((fails > 0))
