#!/bin/bash
# Build the Debian package of this checkout's HEAD for the board's release,
# and from it the upgrade tests' second package (the same files, version
# VERSION+test1, repacked with dpkg-deb); print the directory holding both.
#   bookworm: `make deb` on the host, in a clean clone of HEAD in the cache
#             (a developer's tree and its .build are never touched);
#   trixie:   `Tests/Trixie/run.sh deb`, which builds a clean clone of HEAD
#             inside the debootstrapped trixie root ($TRIXIE_ROOT).
# Both build HEAD: commit first, uncommitted changes are not in the package.
# An ORDER_FILE given (the Makefile's link order) goes to both builds.
# BOARD_VM_DEB=FILE uses that package instead of building one (for arm64
# the only way: make deb-arm64 cross-builds it).
# Cached by HEAD's tree less Tests/ and .ci/ (the same package inputs are
# built once) or the file's hash.
# The lintian verdict is in lintian.txt beside the packages.
# Exit status: 0 built (directory printed), 1 build failed (log on stderr).
set -euo pipefail
# shellcheck source=../lib/common.sh
source "$(dirname "$0")/../lib/common.sh"

if [[ -n ${BOARD_VM_DEB:-} ]]; then
  [[ -f $BOARD_VM_DEB ]] || die "BOARD_VM_DEB=$BOARD_VM_DEB: no such file"
  if [[ $BOARD_ARCH != amd64 && $(dpkg-deb -f "$BOARD_VM_DEB" Architecture) != "$BOARD_ARCH" ]]; then
    die "BOARD_VM_DEB=$BOARD_VM_DEB is not an $BOARD_ARCH package"
  fi
  key=file-$(hash_inputs "$BOARD_VM_DEB")
elif [[ $BOARD_ARCH != amd64 ]]; then
  # cross-built by the Makefile (build-aux/cross-arm64.sh), not here
  die "BOARD_VM_ARCH=$BOARD_ARCH: give the package with BOARD_VM_DEB=FILE (make deb-$BOARD_ARCH builds it)"
else
  # HEAD's tree less Tests/ and .ci/, which are not in the package: a commit
  # that changes only tests reuses the package built for its parent
  key=$(git -C "$REPO_DIR" ls-tree HEAD | grep -v -P '\t(Tests|\.ci)$' | sha256sum | cut -c1-16)
  git -C "$REPO_DIR" diff --quiet HEAD -- . ':!Tests' ':!.ci' ||
    log "warning: uncommitted changes outside Tests/ are not in the package (it is built from HEAD)"
fi
out=$CACHE_DIR/deb/$key
if compgen -G "$out/workoutd_*+test1_*.deb" > /dev/null; then echo "$out"; exit 0; fi

rm -rf "$out"; mkdir -p "$out"
build_log=$out/build.log
t0=$(date +%s)
if [[ -n ${BOARD_VM_DEB:-} ]]; then
  cp "$BOARD_VM_DEB" "$out/"
  : > "$out/lintian.txt"
elif [[ $SUITE == bookworm ]]; then
  src=$CACHE_DIR/deb-src/workoutd
  log "make deb (bookworm, on the host) of HEAD $(git -C "$REPO_DIR" rev-parse --short HEAD); log: $build_log"
  rm -rf "$src"; mkdir -p "$(dirname "$src")"
  git clone -q "$REPO_DIR" "$src"
  make -C "$src" deb > "$build_log" 2>&1 || { tail -30 "$build_log" >&2; log "make deb failed (log: $build_log)"; exit 1; }
  cp "$src"/.build/deb/workoutd_*.deb "$src/.build/deb/lintian.txt" "$out/"
  rm -rf "$src"
else
  trixie_root=${TRIXIE_ROOT:-/var/tmp/workoutd-trixie}
  log "Tests/Trixie/run.sh deb ($SUITE, in $trixie_root) of HEAD $(git -C "$REPO_DIR" rev-parse --short HEAD); log: $build_log"
  [[ $SUITE == trixie ]] || die "no package build for $SUITE"
  "$REPO_DIR/Tests/Trixie/run.sh" deb > "$build_log" 2>&1 ||
    { tail -30 "$build_log" >&2; log "Tests/Trixie/run.sh deb failed (log: $build_log)"; exit 1; }
  cp "$trixie_root"/src/workoutd/.build/deb/workoutd_*.deb "$trixie_root/src/workoutd/.build/deb/lintian.txt" "$out/"
fi
rm -f "$out"/workoutd-dbgsym_*.deb
debs=("$out"/workoutd_*.deb)
((${#debs[@]} == 1)) || die "expected one workoutd_*.deb, found: ${debs[*]}"
deb=${debs[0]}
version=$(dpkg-deb -f "$deb" Version) arch=$(dpkg-deb -f "$deb" Architecture)
log "package $(basename "$deb") in $(elapsed_since "$t0") s"

# The upgrade's package: the same files under a newer version.
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
dpkg-deb -R "$deb" "$work/pkg"
sed -i "s/^Version: .*/Version: $version+test1/" "$work/pkg/DEBIAN/control"
dpkg-deb -Zgzip -z1 -b "$work/pkg" "$out/workoutd_${version}+test1_$arch.deb" > /dev/null
echo "$out"
