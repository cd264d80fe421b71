#!/usr/bin/env bash
# Layers (docs/architecture.md): each folder of src/ includes only the
# folders below it. Reads the #include lines of every file under src/ and
# fails on an edge not in the table; then checks with nm that the daemon's
# library (libtideserve.a) defines nothing of the report, the sweep or the
# generator, and that the core exports only tide_ names (internal ones tide__).
# Environment: TIDE_BIN (the tide binary; the .a files are beside it),
# TIDE_SRC (source dir). Exit 77 = skip.
set -u

src=${TIDE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}/src
if [ ! -d "$src" ]; then
    echo "skip: no source tree at $src" >&2
    exit 77
fi
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# folder -> the folders it may include besides itself ("tide" is include/tide,
# the public headers of the core). The same table as docs/architecture.md.
declare -A allowed=(
    [util]="tide"
    [core]="tide util"
    [formats]="tide util"
    [world]="tide util"
    [trace]="tide util formats"
    [report]="tide util formats"
    [sim]="tide util formats world"
    [store]="tide util"
    [http]="tide util formats"
    [backend]="tide util formats world"
    [ui]=""  # the dashboard's assets (HTML, CSS, script), embedded by the daemon; no C
    [daemon]="tide util formats world store http backend"
    [cli]="tide util formats world trace report sim store http backend daemon"
)

# 1. every folder of src/ is in the table
for dir in "$src"/*/; do
    layer=$(basename "$dir")
    [ -n "${allowed[$layer]+x}" ] || fail "src/$layer is not in the layer table (tests/e2e/layers.sh, docs/architecture.md)"
done

# 2. every #include "folder/..." is an allowed edge
edges=0
while IFS=: read -r file _ line; do
    layer=${file#"$src"/}
    layer=${layer%%/*}
    target=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_]*\)\/.*/\1/p' <<<"$line")
    [ -n "$target" ] || continue
    edges=$((edges + 1))
    [ "$target" = "$layer" ] && continue
    ok=0
    for a in ${allowed[$layer]:-}; do
        [ "$a" = "$target" ] && ok=1
    done
    [ "$ok" = 1 ] || fail "${file#"$src"/}: includes $target/ (src/$layer may include: ${allowed[$layer]:-nothing})"
done < <(grep -rn --include='*.c' --include='*.h' '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$src")
[ "$edges" -gt 50 ] || fail "read only $edges include lines under $src"

# 3. what the libraries define
if [ -z "${TIDE_BIN:-}" ] || ! command -v nm >/dev/null 2>&1; then
    echo "layers: includes checked ($edges); no TIDE_BIN or nm, libraries not checked" >&2
else
    lib=$(dirname "$TIDE_BIN")
    for a in libtideserve.a libtidecore.a; do
        [ -f "$lib/$a" ] || fail "$lib/$a is missing"
    done
    if [ -f "$lib/libtideserve.a" ]; then
        bad=$(nm -g --defined-only "$lib/libtideserve.a" 2>/dev/null |
            awk 'NF == 3 && $3 ~ /^(tide_report_|tide_sweep_|tide_gen_|tide_usage_report|tide_signals_|tide_sim_|tide_trace_)/ {print $3}')
        [ -z "$bad" ] || fail "libtideserve.a defines report, sweep, generator, simulator or trace code: $(echo $bad)"
        n=$(nm -g --defined-only "$lib/libtideserve.a" 2>/dev/null | awk 'NF == 3' | wc -l)
        [ "$n" -gt 20 ] || fail "libtideserve.a defines only $n symbols (is nm reading it?)"
    fi
    if [ -f "$lib/libtidecore.a" ]; then
        bad=$(nm -g --defined-only "$lib/libtidecore.a" 2>/dev/null | awk 'NF == 3 && $3 !~ /^tide_/ && $3 !~ /^__(odr_asan|asan|ubsan|sancov)/ {print $3}')
        [ -z "$bad" ] || fail "libtidecore.a exports names without the tide_ prefix: $(echo $bad | head -c 400)"
    fi
fi

if [ "$fails" -gt 0 ]; then
    echo "layers: $fails failure(s)" >&2
    exit 1
fi
echo "layers: ok ($edges include lines)"
