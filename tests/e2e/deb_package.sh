#!/usr/bin/env bash
# End-to-end: `make deb` (scripts/mkdeb.sh) builds a .deb that installs and
# runs on a clean root. The package is unpacked (dpkg -x) into an empty
# directory together with the files of exactly the packages its Depends
# names (dpkg -L) and nothing else, then `tide --version`, `tide gen` and
# `tide sim` run inside it with chroot (root only; without root the binary
# runs from the unpacked tree against the host's libraries). Also checks the
# control file, the conffiles, the man page and the completion it installs.
# Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip.
set -u
for b in dpkg-deb dpkg ldd; do
    command -v "$b" >/dev/null 2>&1 || { echo "skip: $b missing (not a Debian system)" >&2; exit 77; }
done
build=$(dirname "$TIDE_BIN")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tide-deb-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

deb=$(bash "$TIDE_SRC/scripts/mkdeb.sh" "$build" "$tmp/out") || { echo "FAIL: mkdeb.sh" >&2; exit 1; }
[ -f "$deb" ] || { echo "FAIL: no .deb at '$deb'" >&2; exit 1; }
want=$("$TIDE_BIN" --version | awk '{print $2}')
[ "$(dpkg-deb -f "$deb" Package)" = tide ] || fail "Package is not tide"
[ "$(dpkg-deb -f "$deb" Version)" = "$want" ] || fail "Version $(dpkg-deb -f "$deb" Version) is not $want"
depends=$(dpkg-deb -f "$deb" Depends)
[ -n "$depends" ] || fail "no Depends"
dpkg-deb -c "$deb" >"$tmp/list"
for f in ./usr/bin/tide ./usr/share/man/man1/tide.1 ./usr/share/bash-completion/completions/tide \
    ./usr/lib/systemd/system/tide.service ./etc/tide/tide.yaml ./usr/share/doc/tide/LICENSE; do
    grep -q " $f\$" "$tmp/list" || fail "the package has no $f"
done
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles | grep -qx /etc/tide/tide.yaml || fail "tide.yaml is not a conffile"

# a clean root: the package and the packages it depends on, nothing else
root=$tmp/root
mkdir -p "$root"
dpkg -x "$deb" "$root"
for dep in $(printf '%s' "$depends" | tr ',' '\n' | sed 's/(.*//; s/ //g'); do
    dpkg -L "$dep" >"$tmp/files" 2>/dev/null || { fail "Depends names $dep, which is not installed here"; continue; }
    while read -r f; do
        [ -f "$f" ] && cp -L --parents "$f" "$root" 2>/dev/null
    done <"$tmp/files"
done
mkdir -p "$root/tmp"
# a sanitizer build's runtime reads its options from /proc, which the root
# has not: such a binary runs unpacked, with the host's libraries
sanitized=0
ldd "$TIDE_BIN" 2>/dev/null | grep -q 'lib[al]san' && sanitized=1
if [ "$(id -u)" = 0 ] && command -v chroot >/dev/null 2>&1 && [ "$sanitized" = 0 ]; then
    run() { chroot "$root" "$@"; }
    where="chroot of the package and its Depends"
else
    run() { local b=$1; shift; "$root$b" "$@"; }
    where="unpacked tree (not root, or a sanitizer build: host libraries)"
fi
v=$(run /usr/bin/tide --version 2>"$tmp/err") || fail "tide --version in the $where: $(cat "$tmp/err")"
[ "${v#tide $want}" != "$v" ] || fail "tide --version printed '$v'"
run /usr/bin/tide gen --scenario seed32 --days 1 --seed 1 --out /tmp/w >/dev/null 2>"$tmp/err" ||
    fail "tide gen in the $where: $(cat "$tmp/err")"
if [ -d "$root/tmp/w" ] || [ "$where" != "${where#unpacked}" ]; then
    w=/tmp/w
    [ "$where" != "${where#unpacked}" ] && w=$tmp/w && run /usr/bin/tide gen --scenario seed32 --days 1 --seed 1 --out "$w" >/dev/null
    run /usr/bin/tide sim --cluster 4x8 --services $w/services.csv --demand $w/demand.csv \
        --jobs $w/jobs.csv --policy elastic --horizon 1d --out $w/sim >"$tmp/sim.out" 2>"$tmp/err" ||
        fail "tide sim in the $where: $(cat "$tmp/err")"
    grep -q '^elastic ' "$tmp/sim.out" || fail "tide sim printed no elastic row: $(cat "$tmp/sim.out")"
fi
[ "$fails" -eq 0 ] || exit 1
echo "deb_package: ok ($(basename "$deb"), $(du -k "$deb" | cut -f1) kB; ran in the $where)"
