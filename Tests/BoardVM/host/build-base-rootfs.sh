#!/bin/bash
# debootstrap a root tree of the release (bookworm or trixie) with the
# board's and the tests' packages and print its directory. Cached by suite +
# package lists; never modified after it is built (images are assembled from
# a copy).
set -euo pipefail
# shellcheck source=../lib/common.sh
source "$(dirname "$0")/../lib/common.sh"

lists=("$BOARD_DIR/packages.txt" "$BOARDVM_DIR/guest/packages.txt")
# one package a line; "NAME @RELEASE" only for that release
packages=$(sed -e 's/#.*//' "${lists[@]}" |
  awk -v release="$SUITE" 'NF && (NF == 1 || $2 == "@" release) {print $1}' | xargs | tr ' ' ',')
mirror=$(debian_mirror)

# Keyed by what debootstrap is given, not by this script's text: bump
# recipe_version when a change here must rebuild the (3-minute) tree.
recipe_version=1
out="$CACHE_DIR/base/$(hash_inputs "$SUITE" "$packages" "$mirror" "$recipe_version")"
if [[ -f $out/.done ]]; then echo "$out/root"; exit 0; fi

log "debootstrap $SUITE ($packages) from $mirror"
rm -rf "$out"; mkdir -p "$out"
debootstrap --variant=minbase --include="$packages" "$SUITE" "$out/root" "$mirror" \
  > "$out/debootstrap.log" 2>&1 || { tail -20 "$out/debootstrap.log"; die "debootstrap failed"; }
rm -f "$out/root/var/cache/apt/archives/"*.deb
touch "$out/.done"
prune_except "$out"   # old base trees are ~400 MB each
echo "$out/root"
