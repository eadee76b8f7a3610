#!/bin/bash
# Build gpio-sim.ko out of tree for the guest kernel and print its path.
# Debian's kernels (bookworm's 6.1, trixie's 6.12) ship neither CONFIG_GPIO_SIM
# nor the irq_sim helper it needs, so both are compiled from
# linux-source-$KSERIES into one module against linux-headers-$KVER. The module
# is tied to that exact kernel build, and built with the gcc of the kernel's
# release: on the host for bookworm, inside a minimal chroot of the release
# (debootstrapped once into the cache) otherwise.
set -euo pipefail
# shellcheck source=../lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
kernel_facts

debs=$CACHE_DIR/debs
srcdeb=$(compgen -G "$debs/linux-source-${KSERIES}_${KDEBVER}_all.deb") ||
  die "linux-source-$KSERIES $KDEBVER not downloaded (run fetch-kernel.sh)"
out="$CACHE_DIR/gpio-sim/$KVER-$KDEBVER-$(hash_inputs "$0")"
if [[ -f $out/gpio-sim.ko ]]; then echo "$out/gpio-sim.ko"; exit 0; fi

# The build root: / on the host (bookworm), else a chroot with the release's
# gcc and the kernel's headers and kbuild tools unpacked into it.
kbuild=''
if [[ $SUITE != bookworm ]]; then
  kbuild=$CACHE_DIR/kbuild/$KVER-$KDEBVER
  if [[ ! -f $kbuild/.done ]]; then
    log "debootstrap a $SUITE build root for $KVER's modules"
    rm -rf "$(dirname "$kbuild")"; mkdir -p "$kbuild"
    # gcc-14 and what linux-kbuild's tools link (its Depends, less the kernel image)
    debootstrap --variant=minbase --include=gcc-14,make,libc6-dev,libelf1t64,libssl3t64,zlib1g,pahole \
      "$SUITE" "$kbuild" "$(debian_mirror)" > "$kbuild.debootstrap.log" 2>&1 ||
      { tail -20 "$kbuild.debootstrap.log"; die "debootstrap of the build root failed"; }
    rm -f "$kbuild/var/cache/apt/archives/"*.deb
    for pkg in "linux-headers-$KVER" "linux-headers-${KVER%-amd64}-common" "linux-kbuild-${KVER%-amd64}"; do
      deb=$(compgen -G "$debs/${pkg}_*.deb") || die "$pkg not downloaded (run fetch-kernel.sh)"
      dpkg-deb -x "$deb" "$kbuild"
    done
    touch "$kbuild/.done"
  fi
fi

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
log "building gpio-sim.ko for $KVER"
dpkg-deb --fsys-tarfile "$srcdeb" | tar -xO "./usr/src/linux-source-$KSERIES.tar.xz" |
  tar -xJ -C "$work" --strip-components=1 \
    "linux-source-$KSERIES/drivers/gpio/gpio-sim.c" \
    "linux-source-$KSERIES/drivers/gpio/gpiolib.h" \
    "linux-source-$KSERIES/kernel/irq/irq_sim.c"
mkdir "$work/m"
cp "$work/drivers/gpio/gpio-sim.c" "$work/m/gpio-sim-main.c"   # object name must differ from the module's
cp "$work/drivers/gpio/gpiolib.h" "$work/kernel/irq/irq_sim.c" "$work/m/"
# irq_to_desc() is not exported to modules; generic_handle_irq() reaches the
# same handle_simple_irq() through an exported path.
sed -i 's/handle_simple_irq(irq_to_desc(irqnum));/generic_handle_irq(irqnum);/' "$work/m/irq_sim.c"
grep -q 'generic_handle_irq(irqnum)' "$work/m/irq_sim.c" || die "irq_sim.c changed upstream: patch no longer applies"
printf 'obj-m := gpio-sim.o\ngpio-sim-objs := gpio-sim-main.o irq_sim.o\n' > "$work/m/Makefile"
if [[ -z $kbuild ]]; then
  make -C "/usr/src/linux-headers-$KVER" M="$work/m" modules > "$work/build.log" 2>&1 ||
    { tail -20 "$work/build.log"; die "gpio-sim build failed"; }
else
  mkdir -p "$kbuild/build"
  rm -rf "$kbuild/build/m"; cp -r "$work/m" "$kbuild/build/m"
  chroot "$kbuild" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    make -C "/usr/src/linux-headers-$KVER" M=/build/m modules > "$work/build.log" 2>&1 ||
    { tail -20 "$work/build.log"; die "gpio-sim build failed (in the $SUITE build root $kbuild)"; }
  cp "$kbuild/build/m/gpio-sim.ko" "$work/m/"
fi
modinfo -F vermagic "$work/m/gpio-sim.ko" | grep -q "^$KVER " || die "gpio-sim.ko vermagic does not match $KVER"
mkdir -p "$out"; cp "$work/m/gpio-sim.ko" "$out/"
prune_except "$out"
echo "$out/gpio-sim.ko"
