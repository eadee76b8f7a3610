#!/bin/bash
# Install what the host (Debian 12) needs to build and boot the board VM, and
# for another guest release refresh its private package lists (guest_apt).
# Idempotent and quiet when everything is already there.
set -euo pipefail
# shellcheck source=../lib/common.sh
source "$(dirname "$0")/../lib/common.sh"

export DEBIAN_FRONTEND=noninteractive
mkdir -p "$CACHE_DIR"
# apt-cache needs package lists; a fresh container has none.
if ! apt-cache show linux-image-amd64 >/dev/null 2>&1; then
  log "apt-get update"
  apt-get update -q >/dev/null
fi
guest_apt_update
kernel_facts

# /usr/bin/python3: the GPS feeder (system python, not whatever is first on PATH).
# dpkg-dev: dpkg-deb builds the upgrade test's second package. dosfstools, exfatprogs, fdisk, ntfs-3g: the sticks
# usb-plug.py makes. openssl: the upload test's CA and certificate (guest/install.sh).
wanted=(qemu-system-x86 busybox-static debootstrap cpio kmod e2fsprogs xz-utils python3 dpkg-dev dosfstools exfatprogs fdisk ntfs-3g openssl)
# gpio-sim is built out of tree against linux-headers-$KVER: on the host for
# bookworm's kernel; for another release inside a chroot of that release
# (build-gpio-sim.sh), since its kernel is built with that release's gcc.
[[ $SUITE == bookworm ]] && wanted+=(gcc make "linux-headers-$KVER")
# arm64: its system emulator, and qemu-user (binfmt_misc) for the chroots into
# the arm64 tree (debootstrap's second stage, the package's installation)
[[ $BOARD_ARCH == arm64 ]] && wanted+=(qemu-system-arm qemu-user-static binfmt-support)
missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
done
if ((${#missing[@]})); then
  log "apt-get install ${missing[*]}"
  apt-get install -y -q --no-install-recommends "${missing[@]}" > "$CACHE_DIR/apt-install.log" 2>&1 ||
    { tail -20 "$CACHE_DIR/apt-install.log"; die "apt-get install failed"; }
fi
