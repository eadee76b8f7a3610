#!/bin/bash
# Download Debian's kernel image and the matching linux-source, unpack the
# kernel, and print the directory that holds boot/vmlinuz-$KVER and
# lib/modules/$KVER. Cached by package name + Debian version.
set -euo pipefail
# shellcheck source=../lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
kernel_facts

debs="$CACHE_DIR/debs"
kroot="$CACHE_DIR/kernel/${KPKG}_$KDEBVER"
mkdir -p "$debs"

fetch() {   # apt-get download is idempotent only if we check first
  local pkg=$1
  compgen -G "$debs/${pkg}_*.deb" >/dev/null || (cd "$debs" && apt-get download -q -o APT::Sandbox::User=root "$pkg=$KDEBVER" >/dev/null)
}
fetch "$KPKG"
fetch "linux-source-$KSERIES"   # only gpio-sim.c, gpiolib.h and irq_sim.c are used

if [[ ! -f $kroot/.done ]]; then
  log "unpacking $KPKG $KDEBVER"
  rm -rf "$kroot"; mkdir -p "$kroot"
  dpkg-deb -x "$debs/${KPKG}_${KDEBVER//:/%3a}_amd64.deb" "$kroot"
  depmod -b "$kroot" "$KVER"
  touch "$kroot/.done"
fi
echo "$kroot"
