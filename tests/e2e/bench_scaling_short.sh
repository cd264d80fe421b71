#!/usr/bin/env bash
# End-to-end: the scaling benchmark's pieces in a CI-sized form.
#  - bench/same_output.sh with the binary against itself: every output file of
#    six scenarios x six policies is byte-identical across two runs
#    (determinism; the same script compares an old and a new binary);
#  - bench/engine_step_bench on a small cluster prints P50/P99 figures;
#  - bench/plot_scaling.py turns a rows file into an SVG with one point per
#    row (and a CPU point per row that has one), and rejects an empty file.
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip (no binary, no python3).
set -u
if [ -z "${TIDE_BIN:-}" ] || [ ! -x "$TIDE_BIN" ]; then
    echo "skip: TIDE_BIN is not set or not executable" >&2
    exit 77
fi
command -v python3 >/dev/null 2>&1 || { echo "skip: python3 is needed" >&2; exit 77; }
SRC=${TIDE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$(bash "$SRC/bench/same_output.sh" "$TIDE_BIN" "$TIDE_BIN" 2>&1) || fail "same_output: $out"
[ "$(grep -c '^same: ' <<<"$out")" = 6 ] || fail "same_output: expected 6 identical cases: $out"

STEP="$(dirname "$TIDE_BIN")/bench/engine_step_bench"
if [ -x "$STEP" ]; then
    s=$("$STEP" --nodes 64 --queued 400 --hours 1) || fail "engine_step_bench failed"
    grep -Eq '^thread CPU  every step:  P50 [0-9.]+ ms  P99 [0-9.]+ ms' <<<"$s" || fail "step bench output: $s"
    grep -Eq 'active leases [0-9]+\.\.[0-9]+' <<<"$s" || fail "step bench leases: $s"
    "$STEP" --nodes 1 >/dev/null 2>&1 && fail "engine_step_bench accepted 1 node"
fi

printf '1024\t100000\t30\t2.5\t90\t1200000\t2.2\n2048\t200000\t30\t5.1\t170\t1100000\t4.4\n131072\t1000000\t7\t60\t3000\t400000\n' > "$tmp/rows.tsv"
python3 "$SRC/bench/plot_scaling.py" "$tmp/rows.tsv" "$tmp/s.svg" || fail "plot_scaling failed"
python3 - "$tmp/s.svg" <<'PY' || fail "svg check"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
circles = root.findall(f".//{ns}circle")
assert len(circles) == 5, len(circles)  # 3 wall points + 2 CPU points
assert any("131,072" in (t.text or "") or "100,000" in (t.text or "") for t in root.findall(f".//{ns}text"))
PY
: > "$tmp/empty.tsv"
python3 "$SRC/bench/plot_scaling.py" "$tmp/empty.tsv" "$tmp/e.svg" 2>/dev/null && fail "empty rows accepted"
echo "ok"
