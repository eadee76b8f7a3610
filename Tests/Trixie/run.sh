#!/usr/bin/env bash
# `make test` inside a Debian 13 "trixie" root filesystem (today's Raspberry Pi OS), from this
# bookworm machine: debootstrap trixie from the configured Debian mirror (once; the root is
# kept under /var/tmp and reused), bind the Swift toolchain and its package mirror in, clone
# this checkout into it, and run `make test` there with chroot. The chroot shares the host's
# kernel: kernel-side behaviour (gpio-sim, i2c-stub) is the board VM's to test.
#
# Usage: Tests/Trixie/run.sh [make targets...]   (default: test). Needs root.
# ORDER_FILE=FILE (the Makefile's link order) is copied in and given to make there.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
root=${TRIXIE_ROOT:-/var/tmp/workoutd-trixie}
targets=("${@:-test}")
# What the Swift toolchain needs to run there (the trixie recipe in ../shared/trixie), and git
# and make; `make test` installs the project's own packages itself, as on bookworm.
toolchain_packages="ca-certificates pkg-config gcc libc6-dev libstdc++-14-dev binutils git make \
  libcurl4t64 libxml2 libedit2 tzdata python3 libncurses6 libz3-4 libpython3.13"

[[ $(id -u) == 0 ]] || { echo "Tests/Trixie/run.sh: needs root (debootstrap, chroot, mounts)" >&2; exit 2; }
command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap

# Mounts a killed run left behind, unmounted before anything else (never rm -rf across them).
{ grep -o " $root/[^ ]*" /proc/mounts || true; } | sort -r | while read -r stale; do umount -l "$stale" || true; done

if [[ ! -e $root/.workoutd-debootstrapped ]]; then
  mirror=$(grep -m1 '^URIs:' /etc/apt/sources.list.d/debian.sources 2>/dev/null | awk '{print $2}')
  mirror=${mirror:-http://deb.debian.org/debian}
  rm -rf --one-file-system "$root"
  echo "trixie: debootstrap from $mirror into $root"
  debootstrap --variant=minbase --include=ca-certificates trixie "$root" "$mirror" > "$root.debootstrap.log" 2>&1 \
    || { tail -20 "$root.debootstrap.log"; exit 1; }
  touch "$root/.workoutd-debootstrapped"
fi

mounts=()
cleanup() {
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
bind() {  # bind SOURCE TARGET-IN-ROOT
  mkdir -p "$root$2"
  mountpoint -q "$root$2" || { mount --bind "$1" "$root$2"; mounts+=("$root$2"); }
}
mountpoint -q "$root/proc" || { mount -t proc proc "$root/proc"; mounts+=("$root/proc"); }
bind /dev /dev
bind /dev/pts /dev/pts
bind /sys /sys
bind /opt/swift /opt/swift
bind /opt/swift-packages /opt/swift-packages
printf '[url "/opt/swift-packages/"]\n\tinsteadOf = https://github.com/\n' > "$root/etc/gitconfig"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
# The host's CA bundle, for pip (make test's reference decoders come from PyPI): it holds the
# public CAs and any this machine's network adds.
mkdir -p "$root/etc/ssl/certs"
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/workoutd-host-ca.crt" 2>/dev/null || true

in_root() { chroot "$root" env -i HOME=/root PATH=/opt/swift/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  LANG=C.UTF-8 CI="${CI:-}" PIP_CERT=/etc/ssl/workoutd-host-ca.crt PIP_DISABLE_PIP_VERSION_CHECK=1 bash -c "$1"; }

if [[ ! -e $root/.workoutd-ready ]]; then
  in_root "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $toolchain_packages" \
    > "$root.apt.log" 2>&1 || { tail -20 "$root.apt.log"; exit 1; }
  touch "$root/.workoutd-ready"
fi

# A fresh clone of this checkout's HEAD (what CI tests), not the working tree.
rm -rf --one-file-system "$root/src/workoutd"
mkdir -p "$root/src"
git clone -q "$here" "$root/src/workoutd"
rm -f "$root/src/workoutd.order"
order=
if [[ -n ${ORDER_FILE:-} ]]; then
  cp "$ORDER_FILE" "$root/src/workoutd.order"
  order=ORDER_FILE=/src/workoutd.order
fi
echo "trixie: $(in_root '. /etc/os-release; echo $PRETTY_NAME'), $(in_root 'swift --version 2>&1 | head -1')"
in_root "cd /src/workoutd && make ${targets[*]} $order"
