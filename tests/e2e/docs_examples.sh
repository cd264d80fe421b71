#!/usr/bin/env bash
# Docs that run: every fenced block opened with "```sh runnable" in README.md
# and docs/*.md is extracted and run with `bash -euo pipefail` (CONTRIBUTING.md):
#   - in a fresh temporary directory holding a link `examples` to the repo's
#     examples/ (so `--services examples/services.csv` works as written);
#   - with the built tide first on PATH (`tide ...` runs the build's binary);
#   - port 7070 in the block replaced by a free loopback port, and
#     TIDE_SERVER pointing there (client commands' default server);
#   - in its own process group, killed when the block ends (background
#     daemons), and within 180 s.
# A block fails the test if any command in it fails. README.md and
# docs/serve.md must keep at least one runnable block each (the quick starts).
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip.
set -u
[ -x "${TIDE_BIN:-}" ] || { echo "skip: TIDE_BIN" >&2; exit 77; }
for b in curl python3 setsid timeout; do
    command -v "$b" >/dev/null 2>&1 || { echo "skip: $b missing" >&2; exit 77; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tide-docs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# extract: one file per block, blocks/NNN.sh, and blocks/NNN.where (file:line)
mkdir -p "$tmp/blocks"
(cd "$TIDE_SRC" && python3 - "$tmp/blocks" README.md docs/*.md) <<'PY'
import sys
out, files = sys.argv[1], sys.argv[2:]
n = 0
for f in files:
    lines = open(f).read().split('\n')
    i = 0
    while i < len(lines):
        if lines[i].strip() == '```sh runnable':
            start, body = i + 1, []
            i += 1
            while i < len(lines) and lines[i].strip() != '```':
                body.append(lines[i]); i += 1
            if i == len(lines):
                sys.exit('%s:%d: runnable block never closed' % (f, start))
            n += 1
            open('%s/%03d.sh' % (out, n), 'w').write('\n'.join(body) + '\n')
            open('%s/%03d.where' % (out, n), 'w').write('%s:%d' % (f, start))
        i += 1
print("%d runnable blocks" % n, file=sys.stderr)
PY
[ $? -eq 0 ] || { echo "FAIL: extracting the blocks" >&2; exit 1; }
for f in README.md docs/serve.md; do
    grep -qx '```sh runnable' "$TIDE_SRC/$f" || fail "$f has no runnable block (its quick start must stay tested)"
done

bindir=$(cd "$(dirname "$TIDE_BIN")" && pwd)
ran=0
for blk in "$tmp"/blocks/*.sh; do
    [ -e "$blk" ] || continue
    where=$(cat "${blk%.sh}.where")
    port=$(free_port)
    dir=$tmp/run.$(basename "$blk" .sh)
    mkdir -p "$dir"
    ln -s "$TIDE_SRC/examples" "$dir/examples"
    sed "s/7070/$port/g" "$blk" >"$dir/block.sh"
    # the block's shell leads its own session and process group (id in sid)
    (cd "$dir" && PATH="$bindir:$PATH" TIDE_SERVER="http://127.0.0.1:$port" \
        timeout -k 5 180 setsid bash -c 'echo $$ >sid; exec bash -euo pipefail block.sh' \
        >"$dir/out" 2>&1)
    rc=$?
    # whatever the block left running (its process group) goes, by its id
    sid=$(cat "$dir/sid" 2>/dev/null)
    [ -n "$sid" ] && kill -KILL -- "-$sid" 2>/dev/null
    ran=$((ran + 1))
    if [ "$rc" -ne 0 ]; then
        fail "$where: the block exited $rc; its output (last 30 lines):"
        tail -30 "$dir/out" >&2
    else
        echo "ok: $where"
    fi
done
[ "$ran" -gt 0 ] || fail "no runnable blocks found"
[ "$fails" -eq 0 ] || exit 1
echo "docs_examples: ok ($ran blocks)"
