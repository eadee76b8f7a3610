#!/bin/bash
# Build workoutd for the board and `make install` it into a staging tree;
# print the tree's path. The guest has no Swift runtime, so the binaries are
# built with --static-swift-stdlib (the Makefile's RELEASE_FLAGS), in a
# scratch path of our own so a developer's .build is never touched.
# Exit status: 0 built (path printed), 3 nothing to build (no `install`
# target in the Makefile yet), 1 build or install failed (log path on stderr).
set -euo pipefail
# shellcheck source=../lib/common.sh
source "$(dirname "$0")/../lib/common.sh"

grep -qE '^install:' "$REPO_DIR/Makefile" 2>/dev/null || { log "no install target in $REPO_DIR/Makefile"; exit 3; }
command -v swift >/dev/null || die "swift is not on PATH"

stage=$CACHE_DIR/project-stage
build_log=$CACHE_DIR/project-build.log
release_flags="-c release --static-swift-stdlib --scratch-path $CACHE_DIR/swift-build"
log "make install (swift build $release_flags; log: $build_log)"
t0=$(date +%s)
rm -rf "$stage"; mkdir -p "$stage"
# RELEASE_FLAGS on the command line overrides the Makefile's, adding our
# scratch path; install then copies the binaries from there.
make -C "$REPO_DIR" install DESTDIR="$stage" PREFIX=/usr RELEASE_FLAGS="$release_flags" \
  > "$build_log" 2>&1 || { tail -30 "$build_log" >&2; log "make install failed (log: $build_log)"; exit 1; }
log "built and installed in $(elapsed_since "$t0") s"
for prog in workoutd workoutctl; do
  [[ -x $stage/usr/bin/$prog ]] || die "make install did not install /usr/bin/$prog"
  if readelf -d "$stage/usr/bin/$prog" | grep -q 'NEEDED.*libswift'; then
    die "$prog links the Swift runtime dynamically; the board has none (build with --static-swift-stdlib)"
  fi
done
echo "$stage"
