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
if [[ $BOARD_ARCH == amd64 ]]; then
  out="$CACHE_DIR/base/$(hash_inputs "$SUITE" "$packages" "$mirror" "$recipe_version")"
else
  out="$CACHE_DIR/base/$(hash_inputs "$SUITE" "$packages" "$mirror" "$recipe_version" "$BOARD_ARCH")"
fi
if [[ -f $out/.done ]]; then echo "$out/root"; exit 0; fi

log "debootstrap $SUITE ($packages) from $mirror"
rm -rf "$out"; mkdir -p "$out"
if [[ $BOARD_ARCH == amd64 ]]; then
  debootstrap --variant=minbase --include="$packages" "$SUITE" "$out/root" "$mirror" \
    > "$out/debootstrap.log" 2>&1 || { tail -20 "$out/debootstrap.log"; die "debootstrap failed"; }
else
  # Another CPU's tree: debootstrap runs here (its dependency resolution in
  # this host's perl: in the tree, under emulation, --foreign's second stage
  # took over 20 minutes) and only dpkg and the maintainer scripts in the
  # chroot, under qemu-user. binfmt_misc's entry for it has no F flag, so the
  # interpreter is looked up inside the chroot: it is put there first and
  # taken out again (assemble-image.sh puts it back while it uses the chroot).
  qemu_user_into "$out/root"
  debootstrap --arch="$BOARD_ARCH" --variant=minbase --include="$packages" "$SUITE" "$out/root" "$mirror" \
    > "$out/debootstrap.log" 2>&1 || { tail -20 "$out/debootstrap.log"; die "debootstrap ($BOARD_ARCH, qemu-user) failed"; }
  qemu_user_out "$out/root"
fi
rm -f "$out/root/var/cache/apt/archives/"*.deb
touch "$out/.done"
prune_except "$out"   # old base trees are ~400 MB each
echo "$out/root"
