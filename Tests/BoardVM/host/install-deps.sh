#!/bin/bash
# Install what the host needs to build and boot the board VM (Debian 12).
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
kernel_facts

# linux-headers-$KVER: gpio-sim is built out of tree against it.
# /usr/bin/python3: the GPS feeder (system python, not whatever is first on PATH).
wanted=(qemu-system-x86 busybox-static debootstrap cpio kmod e2fsprogs xz-utils
        gcc make "linux-headers-$KVER" python3)
missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
done
if ((${#missing[@]})); then
  log "apt-get install ${missing[*]}"
  apt-get install -y -q --no-install-recommends "${missing[@]}" > "$CACHE_DIR/apt-install.log" 2>&1 ||
    { tail -20 "$CACHE_DIR/apt-install.log"; die "apt-get install failed"; }
fi
