#!/usr/bin/env bash
# Build a Debian package of tide from a configured and built CMake build dir
# (make deb): `cmake --install` into a staging root with prefix /usr, the
# example configuration as conffiles under /etc/tide, a control file whose
# Depends lists the package of every shared library the binary loads (found
# with ldd and dpkg -S, at the installed version or later), then dpkg-deb.
# No debhelper needed.
#   scripts/mkdeb.sh BUILD_DIR OUT_DIR      -> OUT_DIR/tide_VERSION_ARCH.deb (path on stdout)
set -euo pipefail
build=${1:?usage: mkdeb.sh BUILD_DIR OUT_DIR}
out=${2:?usage: mkdeb.sh BUILD_DIR OUT_DIR}
src=$(cd "$(dirname "$0")/.." && pwd)
for b in dpkg-deb dpkg-query ldd cmake; do
    command -v "$b" >/dev/null || { echo "mkdeb: $b is needed" >&2; exit 3; }
done
[ -x "$build/tide" ] || { echo "mkdeb: $build/tide is not built (make build)" >&2; exit 3; }
version=$("$build/tide" --version | awk '{print $2}')
arch=$(dpkg --print-architecture)
stage=$(mktemp -d "${TMPDIR:-/tmp}/tide-deb.XXXXXX")
trap 'rm -rf "$stage"' EXIT
cmake --build "$build" --target tide_docs >/dev/null
DESTDIR="$stage/root" cmake --install "$build" --prefix /usr >/dev/null
root=$stage/root
install -d "$root/etc/tide" "$root/DEBIAN"
install -m 644 "$src/examples/tide.yaml" "$root/etc/tide/tide.yaml"
install -m 644 "$src/examples/services.csv" "$root/etc/tide/services.csv"
printf '/etc/tide/tide.yaml\n/etc/tide/services.csv\n' >"$root/DEBIAN/conffiles"

# Depends: the package owning each library the binary loads
deps=()
while read -r lib; do
    real=$(readlink -f "$lib")
    pkg=$(dpkg -S "$lib" 2>/dev/null | head -1 | cut -d: -f1) || true
    [ -n "$pkg" ] || pkg=$(dpkg -S "$real" 2>/dev/null | head -1 | cut -d: -f1) || true
    if [ -z "$pkg" ]; then
        echo "mkdeb: no package owns $lib" >&2
        exit 1
    fi
    ver=$(dpkg-query -W -f='${Version}' "$pkg" | sed 's/-[^-]*$//')
    deps+=("$pkg (>= $ver)")
done < <(ldd "$root/usr/bin/tide" | awk '$3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u)
depends=$(printf '%s\n' "${deps[@]}" | sort -u | paste -sd, | sed 's/,/, /g')
size=$(du -sk "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<CTL
Package: tide
Version: $version
Architecture: $arch
Maintainer: tide authors <tide@localhost>
Installed-Size: $size
Depends: $depends
Section: admin
Priority: optional
Homepage: https://github.com/tide/tide
Description: one GPU cluster for LLM training and online inference
 tide keeps a reserve for inference, lends idle GPUs to training under
 leases, reclaims ahead of the forecast with checkpoint lead time and
 accounts for every GPU-second. One binary: the simulator (tide sim), the
 daemon (tide serve, systemd unit tide.service, configuration in
 /etc/tide/tide.yaml) and its client commands.
CTL
mkdir -p "$out"
deb="$out/tide_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
