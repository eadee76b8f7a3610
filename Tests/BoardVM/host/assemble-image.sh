#!/bin/bash
# Assemble the board image and print its path: the debootstrapped base, the
# kernel's modules plus gpio-sim.ko, the board files (board/qemu-virt), the
# project as `make install` put it (optional) and the test payload, written
# into an ext4 image with mkfs.ext4 -d (no loop device, no mount).
# Cached by all of those inputs.
# Usage: assemble-image.sh KERNEL_ROOT GPIO_SIM_KO BASE_ROOT [PROJECT_STAGE]
set -euo pipefail
# shellcheck source=../lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
kernel_facts
kroot=$1 gpio_sim=$2 base=$3 stage=${4:-}

key=$(hash_inputs "$kroot" "$gpio_sim" "$base" "$0" "$BOARD_DIR" "$BOARDVM_DIR/guest" ${stage:+"$stage"})
dir=$CACHE_DIR/image/$key
if [[ -f $dir/root.img ]]; then echo "$dir/root.img"; exit 0; fi

rm -rf "$dir"; mkdir -p "$dir"
tree=$dir/tree
trap 'rm -rf "$tree"' EXIT
log "assembling image $key"
cp -a "$base" "$tree"

# Kernel modules, minus the big trees a headless VM never loads.
moddir=lib/modules/$KVER
mkdir -p "$tree/$moddir"
tar -C "$kroot/$moddir" -cf - \
    --exclude=kernel/sound --exclude=kernel/drivers/gpu --exclude=kernel/drivers/media \
    --exclude=kernel/drivers/infiniband --exclude=kernel/drivers/net/wireless \
    --exclude=kernel/drivers/net/ethernet --exclude=kernel/drivers/staging \
    --exclude=kernel/drivers/scsi --exclude=kernel/drivers/iio . | tar -C "$tree/$moddir" -xf -
install -D -m 0644 "$gpio_sim" "$tree/$moddir/extra/gpio-sim.ko"
depmod -b "$tree" "$KVER"

# the project as `make install` put it, then the board's files over it (its
# workoutd.toml replaces the generic default config)
# (tar keeps the tree's merged-/usr symlinks: make install may write to /lib)
[[ -n $stage ]] && tar -C "$stage" -cf - . | tar -C "$tree" -xf - --keep-directory-symlink
"$BOARD_DIR/install.sh" "$tree"

if [[ -n $stage ]]; then
  # what the package's postinst would do: users, enable the service
  chroot "$tree" systemd-sysusers
  chroot "$tree" systemctl enable workoutd.service
  # the board's configuration must be one the daemon accepts (exit 2: rejected)
  rc=0
  check=$("$tree/usr/bin/workoutd" --config "$tree/etc/workoutd/workoutd.toml" --check-config 2>&1) || rc=$?
  ((rc != 2)) || die "board/qemu-virt/workoutd.toml is rejected: $check"
  ((rc == 0)) || log "warning: workoutd --check-config exited $rc: $check"
  # every shared library the programs need must be in the board image
  for prog in workoutd workoutctl; do
    missing=$(chroot "$tree" ldd "/usr/bin/$prog" | grep 'not found' || true)
    [[ -z $missing ]] || die "$prog needs libraries the board image lacks: $missing (add them to board/qemu-virt/packages.txt)"
  done
fi

"$BOARDVM_DIR/guest/install.sh" "$tree"

# room for the databases the tests write
size_mb=$(( $(du -sm "$tree" | cut -f1) + 512 ))
truncate -s "${size_mb}M" "$dir/root.img.tmp"
mkfs.ext4 -q -F -L workoutd-root -d "$tree" "$dir/root.img.tmp"
mv "$dir/root.img.tmp" "$dir/root.img"
[[ -x $tree/usr/bin/workoutd ]] && touch "$dir/has-workoutd"
prune_except "$dir"
echo "$dir/root.img"
