#!/usr/bin/env bash
# End-to-end: RL weight syncs as I/O (docs/rl.md "Weight syncs through the
# storage model"). `tide sim --rl examples/rl/rl.csv` on a day of seed200 with
#  - storage:1000 (bandwidth to spare): every sync takes its declared sync_s;
#  - storage:20: the lent pool's syncs (64 replicas x 32 GB after every
#    trainer step) contend, take longer, the trainer waits longer; no accepted
#    trajectory is older than max_staleness either way;
#  - smaller weights (rl.csv weights_gb 4) sync in sync_s again on storage:20;
#  - without storage no sync figures; a bad weights_gb is refused.
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip.
set -u
[ -x "${TIDE_BIN:-}" ] || { echo "skip: TIDE_BIN" >&2; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "skip: python3" >&2; exit 77; }
src=${TIDE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tide-simrlio.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
"$TIDE_BIN" gen --scenario seed200 --days 1 --out "$tmp/w" >/dev/null || { echo "FAIL: gen" >&2; exit 1; }
run() {
    "$TIDE_BIN" sim --cluster 25x8:H100 --services "$tmp/w/services.csv" \
        --demand "$tmp/w/demand.csv" --horizon 1d "$@"
}
rl=$src/examples/rl/rl.csv
run --rl "$rl" --out "$tmp/none" >"$tmp/none.txt" 2>&1 || fail "no storage: $(tail -3 "$tmp/none.txt")"
run --rl "$rl" --inject storage:1000 --out "$tmp/wide" >"$tmp/wide.txt" 2>&1 ||
    fail "storage:1000: $(tail -3 "$tmp/wide.txt")"
run --rl "$rl" --inject storage:20 --out "$tmp/tight" >"$tmp/tight.txt" 2>&1 ||
    fail "storage:20: $(tail -3 "$tmp/tight.txt")"
# the same job with 4 GB of weights per replica
python3 - "$rl" "$tmp/small.csv" <<'PY'
import sys
head, row = open(sys.argv[1]).read().split("\n")[:2]
open(sys.argv[2], "w").write(head + ",weights_gb\n" + row + ",4\n")
PY
run --rl "$tmp/small.csv" --inject storage:20 --out "$tmp/small" >"$tmp/small.txt" 2>&1 ||
    fail "weights_gb 4: $(tail -3 "$tmp/small.txt")"
grep -q '^weight syncs (storage): lent: [0-9]*, P50 ' "$tmp/tight.txt" || fail "no sync line in the table"
grep -q 'weight syncs' "$tmp/none.txt" && fail "sync line without storage"

python3 - "$tmp" <<'PY' || fail "relations"
import json, sys
d = sys.argv[1]
def load(k):
    return {x["variant"]: x for x in json.load(open("%s/%s/rl.json" % (d, k)))}
none, wide, tight, small = load("none"), load("wide"), load("tight"), load("small")
sync_s = 20  # examples/rl/rl.csv
for v in none.values():
    assert "syncs" not in v and "sync_p99_s" not in v, v
for name, r in (("wide", wide), ("tight", tight), ("small", small)):
    for v in r.values():
        assert v["syncs"] > 0, (name, v["variant"])
        assert 0 <= v["max_accepted_staleness"] <= v["max_staleness"], (name, v)
for v in list(wide.values()) + list(small.values()):
    assert sync_s <= v["sync_p50_s"] and v["sync_p99_s"] <= sync_s + 1, v
lw, lt = wide["lent"], tight["lent"]
assert lt["sync_p50_s"] > 2 * sync_s, lt["sync_p50_s"]
assert lt["trainer_wait_s"] > lw["trainer_wait_s"], (lt["trainer_wait_s"], lw["trainer_wait_s"])
assert lt["steps"] < lw["steps"], (lt["steps"], lw["steps"])
PY

printf '%s\n' "$(head -1 "$rl"),weights_gb" "$(sed -n 2p "$rl"),-3" >"$tmp/bad.csv"
if run --rl "$tmp/bad.csv" --inject storage:20 --out "$tmp/x" >"$tmp/e.txt" 2>&1; then
    fail "weights_gb -3 accepted"
fi
grep -q "weights_gb" "$tmp/e.txt" || fail "bad weights_gb: no message naming it: $(cat "$tmp/e.txt")"

[ "$fails" -eq 0 ] && echo "sim_rl_io: ok"
exit $((fails > 0))
