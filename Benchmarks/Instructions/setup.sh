#!/usr/bin/env bash
# What Benchmarks/instructions-arm64.py needs, made once and kept in $WORKOUTD_QEMU_PLUGINS_CACHE
# (default /var/tmp/workoutd-qemu-plugins), then its command line printed:
# - qemu-aarch64 and qemu-x86_64 built with TCG plugins, from Debian trixie's qemu source
#   package: Debian's own qemu-user (bookworm 7.2, trixie 10.0) is static, and a static QEMU
#   cannot load a plugin (meson.build: plugins need the dynamic loader). Only the two user-mode
#   emulators are built (--without-default-features: no system emulators, tools, docs).
#   Keyed by the source package's version (trixie's candidate the first time; the newest build in
#   the cache after, or $QEMU_VERSION).
# - count-plugin.so from Benchmarks/Instructions/count-plugin.c, against that source's
#   qemu-plugin.h (built at every run: a second).
# - trixie's gpsd-clients for arm64 and amd64 (gpxlogger), with the amd64 libraries it needs that
#   build-aux/cross-arm64.sh's sysroot (trixie amd64, arm64 libraries beside) lacks, unpacked.
# Debian's archive is reached with an apt of its own (lists, cache, sources under the cache, the
# archive's signatures checked against the host's debian-archive-keyring), so the host's apt
# configuration and the shared sysroot are never touched; the host gets the build's packages.
# Usage: Benchmarks/Instructions/setup.sh   (root: apt-get install)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cache=${WORKOUTD_QEMU_PLUGINS_CACHE:-/var/tmp/workoutd-qemu-plugins}
die() { echo "qemu-plugins: $*" >&2; exit 1; }

# The host's packages the build needs (meson comes from PyPI: see build_qemu).
needed="ninja-build libglib2.0-dev pkg-config gcc make xz-utils python3-venv python3-pip dpkg-dev"
missing=$(for p in $needed; do dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || echo "$p"; done)
[[ -z $missing ]] || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing > /dev/null

# trixie's main (sources, and binaries for amd64 and arm64) through an apt of our own.
mirror=$(grep -m1 '^URIs:' /etc/apt/sources.list.d/debian.sources 2>/dev/null | awk '{print $2}')
mirror=${mirror:-http://deb.debian.org/debian}
mkdir -p "$cache/apt/lists/partial" "$cache/apt/cache/archives/partial" "$cache/apt/debs"
printf 'deb-src %s trixie main\ndeb [arch=amd64,arm64] %s trixie main\n' "$mirror" "$mirror" > "$cache/apt/sources.list"
apt_options=(-o Dir::Etc::SourceList="$cache/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o Dir::State::Lists="$cache/apt/lists" -o Dir::Cache="$cache/apt/cache" -o Dir::State::status=/dev/null
  -o APT::Architectures::=amd64 -o APT::Architectures::=arm64 -o Acquire::Check-Valid-Until=false)
apt_updated=
ours() {  # apt-get/apt-cache with our configuration; the lists fetched once a run, when needed
  local tool=$1
  shift
  if [[ -z $apt_updated ]]; then
    apt-get "${apt_options[@]}" update -qq > "$cache/apt/update.log" 2>&1 || { cat "$cache/apt/update.log"; die "apt-get update failed"; }
    apt_updated=1
  fi
  "$tool" "${apt_options[@]}" "$@"
}

# The version: asked for, or the newest built, or trixie's now.
version=${QEMU_VERSION:-}
if [[ -z $version ]]; then
  stamp=$(ls -t "$cache"/qemu-*/.built-* 2>/dev/null | head -1 || true)
  version=${stamp##*/.built-}
fi
[[ -n $version ]] || version=$(ours apt-cache showsrc qemu | sed -n 's/^Version: //p' | sort -V | tail -1)
[[ -n $version ]] || die "no qemu source in trixie"
upstream=${version#*:}
upstream=${upstream%%+*}
upstream=${upstream%%-*}
dir=$cache/qemu-$upstream
if [[ ! -e $dir/.built-$version ]]; then
  echo "qemu-plugins: building qemu $version (aarch64 and x86_64 user mode, plugins) in $dir" >&2
  rm -rf "$dir" && mkdir -p "$dir/sources"
  (cd "$dir/sources" && ours apt-get source --download-only -qq "qemu=$version") > "$dir/source.log" 2>&1 ||
    { cat "$dir/source.log"; die "apt-get source qemu=$version failed"; }
  dpkg-source -x "$dir/sources"/qemu_*.dsc "$dir/src" > "$dir/source.log" 2>&1 || { cat "$dir/source.log"; die "dpkg-source -x failed"; }
  # Debian's source (+ds) drops QEMU's bundled wheels (python/wheels), among them meson, which
  # configure installs into its venv from there; bookworm's meson (1.0) is older than the 1.5 it
  # asks for (pythondeps.toml). The same wheel, from PyPI.
  meson=$(sed -n 's/^meson = .*installed = "\([0-9.]*\)".*/\1/p' "$dir/src/pythondeps.toml")
  mkdir -p "$dir/src/python/wheels"
  /usr/bin/python3 -m pip download -q --no-deps "meson==$meson" -d "$dir/src/python/wheels" > /dev/null
  mkdir -p "$dir/build"
  # --disable-install-blobs: the firmware images are not in Debian's source either.
  (cd "$dir/build" && ../src/configure --python=/usr/bin/python3 --target-list=aarch64-linux-user,x86_64-linux-user \
    --enable-plugins --without-default-features --disable-docs --disable-tools --disable-werror \
    --disable-debug-info --disable-download --disable-install-blobs) > "$dir/configure.log" 2>&1 ||
    { tail -30 "$dir/configure.log"; die "configure failed (log: $dir/configure.log)"; }
  ninja -C "$dir/build" qemu-aarch64 qemu-x86_64 > "$dir/build.log" 2>&1 ||
    { tail -30 "$dir/build.log"; die "the build failed (log: $dir/build.log)"; }
  touch "$dir/.built-$version"
fi

# trixie's gpxlogger (arm64, amd64) and for amd64 the libraries it needs beyond the sysroot's.
clients=$cache/gpsd-clients
if [[ ! -e $clients/.ready ]]; then
  rm -rf "$clients" "$cache/apt/debs" && mkdir -p "$clients/arm64" "$clients/amd64" "$cache/apt/debs"
  (cd "$cache/apt/debs" && ours apt-get download -qq gpsd-clients:arm64 gpsd-clients:amd64 libdbus-1-3:amd64) \
    > "$cache/apt/download.log" 2>&1 || { cat "$cache/apt/download.log"; die "downloading gpsd-clients failed"; }
  dpkg-deb -x "$cache"/apt/debs/gpsd-clients_*_arm64.deb "$clients/arm64"
  for deb in "$cache"/apt/debs/*_amd64.deb; do dpkg-deb -x "$deb" "$clients/amd64"; done
  touch "$clients/.ready"
fi

mkdir -p "$here/.build/bench-arm64"
plugin=$here/.build/bench-arm64/count-plugin.so
# shellcheck disable=SC2046 # glib's flags are words
cc -O2 -Wall -Wextra -Wno-unused-parameter -shared -fPIC -I"$dir/src/include/qemu" $(pkg-config --cflags glib-2.0) \
  -o "$plugin" "$here/Benchmarks/Instructions/count-plugin.c"
echo "--qemu $dir/build --plugin $plugin --gpxlogger-arm64 $clients/arm64/usr/bin/gpxlogger --trixie-amd64 $clients/amd64"
