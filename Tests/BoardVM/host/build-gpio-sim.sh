#!/bin/bash
# Build gpio-sim.ko out of tree for the guest kernel and print its path.
# Debian's kernels (bookworm's 6.1, trixie's 6.12) ship neither CONFIG_GPIO_SIM
# nor the irq_sim helper it needs, so both are compiled from
# linux-source-$KSERIES into one module against linux-headers-$KVER. The module
# is tied to that exact kernel build, and built with the gcc of the kernel's
# release: on the host for bookworm, inside a minimal chroot of the release
# (debootstrapped once into the cache) otherwise. For arm64 (BOARD_VM_ARCH)
# cross-compiled there with the kernel's aarch64-linux-gnu-gcc-14, and with
# i2c-stub.ko and hci_vhci.ko beside it (see below).
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
    compilers=gcc-14
    # arm64: the kernel's own cross compiler (its headers' .kernelvariables set
    # BOARD_ARCH=arm64 and CC=aarch64-linux-gnu-gcc-14); kbuild's tools are amd64's
    [[ $BOARD_ARCH == amd64 ]] || compilers=gcc-14,gcc-14-aarch64-linux-gnu
    debootstrap --variant=minbase --include=$compilers,make,libc6-dev,libelf1t64,libssl3t64,zlib1g,pahole \
      "$SUITE" "$kbuild" "$(debian_mirror)" > "$kbuild.debootstrap.log" 2>&1 ||
      { tail -20 "$kbuild.debootstrap.log"; die "debootstrap of the build root failed"; }
    rm -f "$kbuild/var/cache/apt/archives/"*.deb
    for pkg in "linux-headers-$KVER" "linux-headers-${KVER%-"$BOARD_ARCH"}-common" "linux-kbuild-${KVER%-"$BOARD_ARCH"}"; do
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
# Debian's arm64 kernel lacks two more of the board's simulated devices that
# amd64's has as modules: i2c-stub (the BMP280) and hci_vhci (the BLE tests'
# controller). Each is one file; built beside gpio-sim, installed with it.
extra=()
if [[ $BOARD_ARCH != amd64 ]]; then
  extra=(drivers/i2c/i2c-stub.c drivers/bluetooth/hci_vhci.c)
  dpkg-deb --fsys-tarfile "$srcdeb" | tar -xO "./usr/src/linux-source-$KSERIES.tar.xz" |
    tar -xJ -C "$work" --strip-components=1 "${extra[@]/#/linux-source-$KSERIES/}"
  for src in "${extra[@]}"; do
    cp "$work/$src" "$work/m/"
    printf 'obj-m += %s.o\n' "$(basename "$src" .c)" >> "$work/m/Makefile"
  done
fi
if [[ -z $kbuild ]]; then
  make -C "/usr/src/linux-headers-$KVER" M="$work/m" modules > "$work/build.log" 2>&1 ||
    { tail -20 "$work/build.log"; die "gpio-sim build failed"; }
else
  mkdir -p "$kbuild/build"
  rm -rf "$kbuild/build/m"; cp -r "$work/m" "$kbuild/build/m"
  chroot "$kbuild" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    make -C "/usr/src/linux-headers-$KVER" M=/build/m modules > "$work/build.log" 2>&1 ||
    { tail -20 "$work/build.log"; die "gpio-sim build failed (in the $SUITE build root $kbuild)"; }
  cp "$kbuild/build/m/"*.ko "$work/m/"
fi
modules=(gpio-sim)
for src in "${extra[@]}"; do modules+=("$(basename "$src" .c)"); done
for mod in "${modules[@]}"; do
  modinfo -F vermagic "$work/m/$mod.ko" | grep -q "^$KVER " || die "$mod.ko vermagic does not match $KVER"
done
mkdir -p "$out"; for mod in "${modules[@]}"; do cp "$work/m/$mod.ko" "$out/"; done
prune_except "$out"
echo "$out/gpio-sim.ko"
