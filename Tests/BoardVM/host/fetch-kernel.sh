#!/bin/bash
# Download the release's kernel image and the matching linux-source (and for a
# release other than the host's, the headers to build gpio-sim in its chroot),
# unpack the kernel, and print the directory that holds boot/vmlinuz-$KVER and
# lib/modules/$KVER. Cached by package name + Debian version.
set -euo pipefail
# shellcheck source=../lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
kernel_facts

debs="$CACHE_DIR/debs"
kroot="$CACHE_DIR/kernel/${KPKG}_$KDEBVER"
mkdir -p "$debs"

fetch() {   # apt-get download is idempotent only if we check first
  local pkg=$1   # NAME or NAME:BOARD_ARCH
  compgen -G "$debs/${pkg%:*}_*.deb" >/dev/null ||
    (cd "$debs" && guest_apt apt-get download -q -o APT::Sandbox::User=root "$pkg=$KDEBVER" >/dev/null)
}
fetch "$KPKG"
fetch "linux-source-$KSERIES"   # only gpio-sim.c, gpiolib.h and irq_sim.c are used
if [[ $SUITE != bookworm ]]; then
  # unpacked into the gpio-sim build chroot (their dependency on the kernel image is not wanted there)
  fetch "linux-headers-$KVER"
  fetch "linux-headers-${KVER%-"$BOARD_ARCH"}-common"
  # kbuild's tools (fixdep, modpost) run on this host: amd64's for an arm64 kernel
  fetch "linux-kbuild-${KVER%-"$BOARD_ARCH"}:amd64"
fi

if [[ ! -f $kroot/.done ]]; then
  log "unpacking $KPKG $KDEBVER"
  rm -rf "$kroot"; mkdir -p "$kroot"
  dpkg-deb -x "$debs/${KPKG}_${KDEBVER//:/%3a}_$BOARD_ARCH.deb" "$kroot"
  # trixie's package puts the modules under usr/lib (merged /usr); the host's
  # depmod looks in lib/modules. In the image /lib is /usr/lib either way.
  if [[ -d $kroot/usr/lib/modules && ! -e $kroot/lib/modules ]]; then
    mkdir -p "$kroot/lib"; mv "$kroot/usr/lib/modules" "$kroot/lib/modules"
  fi
  depmod -b "$kroot" "$KVER"
  touch "$kroot/.done"
fi
echo "$kroot"
