#!/usr/bin/env bash
# End-to-end: what `make install` ships.
#  - tide --version prints the CMake project version;
#  - tide.1 and the bash completion are the build's, generated from --help:
#    every command of `tide --help` has a section in the man page and a case
#    in the completion, every long option of `tide serve --help` completes,
#    and the page renders with man without warnings;
#  - cmake --install with DESTDIR and a prefix puts binary, man page,
#    completion, unit, docs and examples where they belong;
#  - examples/systemd/tide.service passes `systemd-analyze verify` (with the
#    installed binary and man page);
#  - tide serve --config: --check-config accepts examples/tide.yaml (paths
#    overridden), refuses an unknown key with its line, and flags override it.
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip.
set -u
[ -x "${TIDE_BIN:-}" ] || { echo "skip: TIDE_BIN" >&2; exit 77; }
build=$(dirname "$TIDE_BIN")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tide-pkg.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

want=$(sed -n 's/^project(tide VERSION \([0-9.]*\).*/\1/p' "$TIDE_SRC/CMakeLists.txt")
v=$("$TIDE_BIN" --version)
case $v in "tide $want"*) ;; *) fail "tide --version: '$v', want tide $want" ;; esac

cmds=$("$TIDE_BIN" --help | awk '/^commands:/ {on = 1; next} on && NF {print $1}')
[ "$(echo "$cmds" | wc -l)" -ge 15 ] || fail "tide --help lists too few commands: $cmds"
"$TIDE_BIN" help --man >"$tmp/tide.1" || fail "tide help --man"
cmp -s "$tmp/tide.1" "$build/tide.1" || fail "build/tide.1 is not what tide help --man prints"
"$TIDE_BIN" completion bash >"$tmp/comp" || fail "tide completion bash"
cmp -s "$tmp/comp" "$build/tide.bash-completion" || fail "the build's completion is stale"
for c in $cmds; do
    up=$(echo "$c" | tr a-z A-Z)
    grep -q "^\.SH \"TIDE $up\"" "$tmp/tide.1" || fail "the man page has no section for $c"
    grep -q "^        $c) opts=" "$tmp/comp" || fail "the completion has no case for $c"
done
# the completion completes what --help documents
compl() { bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _tide; printf "%s\n" "${COMPREPLY[@]}"' _ "$tmp/comp" "$@"; }
compl tide ser | grep -qx serve || fail "tide ser<TAB> does not complete serve"
compl tide serve --check- | grep -qx -- --check-config || fail "tide serve --check-<TAB>: $(compl tide serve --check-)"
compl tide sim --policy el | grep -qx elastic || fail "tide sim --policy el<TAB>"
for o in $("$TIDE_BIN" serve --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
    compl tide serve "${o%?}" | grep -qx -- "$o" || fail "tide serve ${o%?}<TAB> does not offer $o"
done
if command -v man >/dev/null 2>&1; then
    MANWIDTH=100 man --warnings -l "$tmp/tide.1" >"$tmp/man.txt" 2>"$tmp/man.err" || fail "man -l tide.1: $(cat "$tmp/man.err")"
    [ -s "$tmp/man.err" ] && fail "man warnings: $(head -5 "$tmp/man.err")"
    grep -q -- '--check-config' "$tmp/man.txt" || fail "the rendered page lacks serve's --check-config"
fi

# make install's layout (DESTDIR + prefix)
DESTDIR="$tmp/stage" cmake --install "$build" --prefix /opt/tide >"$tmp/install.out" 2>&1 || fail "cmake --install: $(tail -5 "$tmp/install.out")"
for f in bin/tide share/man/man1/tide.1 share/bash-completion/completions/tide share/doc/tide/LICENSE \
    share/doc/tide/README.md share/doc/tide/docs/serve.md share/doc/tide/examples/tide.yaml \
    share/doc/tide/examples/services.csv share/doc/tide/examples/prometheus/tide-rules.yml \
    lib/systemd/system/tide.service; do
    [ -e "$tmp/stage/opt/tide/$f" ] || fail "make install did not install $f"
done
"$tmp/stage/opt/tide/bin/tide" --version >/dev/null || fail "the installed binary does not run"

# the systemd unit
if command -v systemd-analyze >/dev/null 2>&1; then
    mkdir -p "$tmp/man/man1"
    cp "$tmp/tide.1" "$tmp/man/man1/"
    sed "s#/usr/bin/tide#$tmp/stage/opt/tide/bin/tide#g" "$TIDE_SRC/examples/systemd/tide.service" >"$tmp/tide.service"
    if ! MANPATH=$tmp/man systemd-analyze verify "$tmp/tide.service" >"$tmp/sa.out" 2>&1; then
        if grep -qiE 'Failed to (connect|initialize)|not been booted with systemd|Operation not permitted' "$tmp/sa.out"; then
            echo "note: systemd-analyze cannot run here: $(head -2 "$tmp/sa.out")" >&2
        else
            fail "systemd-analyze verify: $(cat "$tmp/sa.out")"
        fi
    fi
    # and it catches mistakes
    sed 's/^ExecStart=/ExecStart=relative-path /' "$tmp/tide.service" >"$tmp/bad.service"
    MANPATH=$tmp/man systemd-analyze verify "$tmp/bad.service" >/dev/null 2>&1 && fail "systemd-analyze accepted a relative ExecStart"
else
    echo "note: systemd-analyze missing: the unit is not verified (apt-get install systemd)" >&2
fi

# tide serve --config
cd "$tmp"
cp "$TIDE_SRC/examples/services.csv" .
sed -e "s#^db: .*#db: $tmp/cfg.db#" -e "s#^services: .*#services: $tmp/services.csv#" \
    "$TIDE_SRC/examples/tide.yaml" >tide.yaml
out=$("$TIDE_BIN" serve --config tide.yaml --check-config 2>&1) || fail "--check-config refused examples/tide.yaml: $out"
echo "$out" | grep -q "services .*(2)" || fail "--check-config did not load the 2 services: $out"
[ -e "$tmp/cfg.db" ] && fail "--check-config created the database"
out=$("$TIDE_BIN" serve --config tide.yaml --check-config --cluster 8x8 2>&1)
echo "$out" | grep -q "8 nodes, 64 GPUs" || fail "--cluster did not override the file: $out"
printf 'db: x.db\ncluster: 4x8\nreplicas: 3\n' >bad.yaml
out=$("$TIDE_BIN" serve --config bad.yaml --check-config 2>&1); rc=$?
[ "$rc" = 2 ] || fail "an unknown key: exit $rc, want 2"
echo "$out" | grep -q "bad.yaml:3: unknown key 'replicas'" || fail "unknown key message: $out"
printf 'db: x.db\ncluster: 4x8\nreserve: lots\n' >bad.yaml
out=$("$TIDE_BIN" serve --config bad.yaml --check-config 2>&1); rc=$?
[ "$rc" = 2 ] && echo "$out" | grep -q "line 3, key 'reserve'" || fail "a bad value: exit $rc: $out"
printf 'db: x.db\ncluster: 4x8\ncheck: maybe\n' >bad.yaml
"$TIDE_BIN" serve --config bad.yaml --check-config >/dev/null 2>&1 && fail "a switch set to 'maybe' was accepted"
"$TIDE_BIN" serve --config missing.yaml --check-config >/dev/null 2>&1; rc=$?
[ "$rc" = 3 ] || fail "a missing config file: exit $rc, want 3"

[ "$fails" -eq 0 ] || exit 1
echo "packaging: ok (tide $want)"
