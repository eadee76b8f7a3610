#!/bin/bash
# Assemble the board image and print its path: the debootstrapped base, the
# kernel's modules plus gpio-sim.ko, the board files (board/qemu-virt), the
# project and the test payload, written into an ext4 image with mkfs.ext4 -d
# (no loop device, no mount). Cached by all of those inputs.
# Usage: assemble-image.sh KERNEL_ROOT GPIO_SIM_KO BASE_ROOT [PROJECT]
#   PROJECT  stage:DIR  a tree `make install DESTDIR=DIR` made, copied in
#            deb:DIR    the packages build-deb.sh made: installed with dpkg in
#                       the image (root.img), and first a clean.img beside it
#                       without the package installed, where the package tests
#                       install it themselves (both hold the packages in
#                       /var/cache/workoutd-hil/, named in packages.env)
set -euo pipefail
# shellcheck source=../lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
kernel_facts
kroot=$1 gpio_sim=$2 base=$3 project=${4:-}
kind=${project%%:*} from=${project#*:}
[[ -z $project || $kind == stage || $kind == deb ]] || die "PROJECT must be stage:DIR or deb:DIR, not '$project'"

key=$(hash_inputs "$kroot" "$gpio_sim" "$base" "$0" "$BOARD_DIR" "$BOARDVM_DIR/guest" "$REPO_DIR/Tests/Platforms" "$kind" ${project:+"$from"})
dir=$CACHE_DIR/image/$key
if [[ -f $dir/root.img ]]; then echo "$dir/root.img"; exit 0; fi

rm -rf "$dir"; mkdir -p "$dir"
tree=$dir/tree
mounts=()
cleanup() {
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" || true; done
  mounts=()
  [[ -d $tree ]] && rm -rf --one-file-system "$tree"
}
trap cleanup EXIT
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
# ... but SCSI's core and disks, which a USB stick is (usb-storage; the stick tests).
mkdir -p "$tree/$moddir/kernel/drivers/scsi"
find "$kroot/$moddir/kernel/drivers/scsi" -maxdepth 1 -regextype egrep -regex '.*/(scsi_mod|scsi_common|sd_mod)\.ko(\.xz)?' \
  -exec cp {} "$tree/$moddir/kernel/drivers/scsi/" \;
# ... and IIO's core, its buffers and software triggers, and the BMI160's driver (the IMU on
# i2c-stub, guest/tests/77-workoutd-imu.sh).
(cd "$kroot/$moddir" && tar --ignore-failed-read -cf - kernel/drivers/iio/industrialio.ko* kernel/drivers/iio/industrialio-configfs.ko* \
  kernel/drivers/iio/industrialio-sw-trigger.ko* kernel/drivers/iio/buffer kernel/drivers/iio/trigger \
  kernel/drivers/iio/imu/bmi160) | tar -C "$tree/$moddir" -xf -
install -D -m 0644 "$gpio_sim" "$tree/$moddir/extra/gpio-sim.ko"
# arm64: the modules its kernel lacks, built beside gpio-sim (build-gpio-sim.sh)
if [[ $BOARD_ARCH != amd64 ]]; then
  for ko in "$(dirname "$gpio_sim")"/*.ko; do
    install -D -m 0644 "$ko" "$tree/$moddir/extra/$(basename "$ko")"
  done
fi
depmod -b "$tree" "$KVER"

# ext4 image of the tree, with room for the databases the tests write
make_image() {
  local size_mb
  size_mb=$(( $(du -sm "$tree" | cut -f1) + 512 ))
  truncate -s "${size_mb}M" "$1.tmp"
  mkfs.ext4 -q -F -L workoutd-root -d "$tree" "$1.tmp"
  mv "$1.tmp" "$1"
}

# the project as `make install` put it, then the board's files over it (its
# workoutd.toml replaces the generic default config)
# (tar keeps the tree's merged-/usr symlinks: make install may write to /lib)
[[ $kind == stage ]] && tar -C "$from" -cf - . | tar -C "$tree" -xf - --keep-directory-symlink
# The board's files (its workoutd.toml is the board's configuration: with the
# package, dpkg finds it there and keeps it, see below) and the test payload.
"$BOARD_DIR/install.sh" "$tree"
# arm64's virt board has one UART (the console): the GPS receiver is on a PCI
# 16550, the guest's first 8250 port (host/boot-vm.sh)
if [[ $BOARD_ARCH == arm64 ]]; then
  sed -i 's|ttyS1|ttyS0|' "$tree/usr/lib/workoutd-board/board.env" "$tree/etc/default/gpsd"
  grep -q '^GPS_DEVICE=/dev/ttyS0$' "$tree/usr/lib/workoutd-board/board.env" || die "board.env: no GPS_DEVICE=/dev/ttyS1 to move"
  grep -q '^DEVICES="/dev/ttyS0"$' "$tree/etc/default/gpsd" || die "gpsd.default: no DEVICES=\"/dev/ttyS1\" to move"
fi
"$BOARDVM_DIR/guest/install.sh" "$tree"

if [[ $kind == deb ]]; then
  debs=$tree/var/cache/workoutd-hil
  mkdir -p "$debs"
  base_deb=$(compgen -G "$from/workoutd_*.deb" | grep -v '+test1_' | head -1) || die "no package in $from"
  upgrade_deb=$(compgen -G "$from/workoutd_*+test1_*.deb" | head -1) || die "no upgrade package in $from"
  cp "$base_deb" "$upgrade_deb" "$debs/"
  cat > "$debs/packages.env" <<ENV
HIL_DEB=/var/cache/workoutd-hil/$(basename "$base_deb")
HIL_DEB_VERSION=$(dpkg-deb -f "$base_deb" Version)
HIL_DEB_UPGRADE=/var/cache/workoutd-hil/$(basename "$upgrade_deb")
HIL_DEB_UPGRADE_VERSION=$(dpkg-deb -f "$upgrade_deb" Version)
HIL_BOARD_CONFIG_SHA256=$(sha256sum < "$tree/etc/workoutd/workoutd.toml" | cut -d' ' -f1)
ENV
  log "clean image (package not installed)"
  make_image "$dir/clean.img"
fi

# What follows runs in the image (chroot): its maintainer scripts, its
# libraries; the Swift runtime needs /proc.
if [[ -n $project ]]; then
  # arm64: the chroot runs the image's programs under qemu-user (common.sh);
  # the interpreter leaves the tree again before the image is made
  [[ $BOARD_ARCH == amd64 ]] || qemu_user_into "$tree"
  mount -t proc proc "$tree/proc"; mounts+=("$tree/proc")
  mount --bind /dev "$tree/dev"; mounts+=("$tree/dev")
  mount --bind /dev/pts "$tree/dev/pts"; mounts+=("$tree/dev/pts")
fi
if [[ $kind == deb ]]; then
  # Installed as a board's image recipe would, with the board's configuration
  # already in /etc: dpkg does not know that file, so it would ask whether to
  # keep it; --force-confold keeps it (the package's default is not wanted
  # on this board). Maintainer scripts run in the chroot: the user and the
  # state directory are made, the unit enabled; nothing is started (no systemd
  # running here). (The image has no package lists: apt finds the package's
  # dependencies installed or fails; it has nothing to download them from.)
  chroot "$tree" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 \
    apt-get install -y -q -o Dpkg::Options::=--force-confold -o Dpkg::Options::=--force-confdef \
    "/var/cache/workoutd-hil/$(basename "$base_deb")" > "$dir/apt-install.log" 2>&1 ||
    { tail -20 "$dir/apt-install.log" >&2; die "apt-get install of the package in the image failed (log: $dir/apt-install.log)"; }
  cmp -s <(sha256sum < "$tree/etc/workoutd/workoutd.toml" | cut -d' ' -f1) <(sed -n 's/^HIL_BOARD_CONFIG_SHA256=//p' "$debs/packages.env") ||
    die "installing the package replaced the board's /etc/workoutd/workoutd.toml"
  grep -q '^workoutd:' "$tree/etc/passwd" || die "the package's postinst made no workoutd user"
elif [[ $kind == stage ]]; then
  # what the package's postinst would do: users, enable the service
  chroot "$tree" systemd-sysusers
  chroot "$tree" systemctl enable workoutd.service
fi

if [[ -n $project ]]; then
  # the board's configuration must be one the daemon accepts (exit 2: rejected),
  # checked in the image (its libraries, its users)
  rc=0
  check=$(timeout 60 chroot "$tree" /usr/bin/workoutd --config /etc/workoutd/workoutd.toml --check-config 2>&1) || rc=$?
  ((rc != 2)) || die "board/qemu-virt/workoutd.toml is rejected: $check"
  ((rc == 0)) || log "warning: workoutd --check-config exited $rc: $check"
  # (without /proc the Swift runtime has no arguments: the check would run the
  # service as root and leave a root-owned database in the image)
  [[ ! -e $tree/var/lib/workoutd/workoutd.db ]] || die "workoutd --check-config wrote a database into the image"
  # every shared library the programs need must be in the board image
  for prog in workoutd workoutctl; do
    missing=$(chroot "$tree" ldd "/usr/bin/$prog" | grep 'not found' || true)
    [[ -z $missing ]] || die "$prog needs libraries the board image lacks: $missing (add them to board/qemu-virt/packages.txt)"
  done
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount "${mounts[i]}"; done
  mounts=()
  rm -rf "${tree:?}/run/"* "${tree:?}/tmp/"*   # what the maintainer scripts and the checks left there
  [[ $BOARD_ARCH == amd64 ]] || qemu_user_out "$tree"
fi

make_image "$dir/root.img"
[[ -x $tree/usr/bin/workoutd ]] && touch "$dir/has-workoutd"
[[ -f $dir/clean.img ]] && touch "$dir/has-packages"
prune_except "$dir"
echo "$dir/root.img"
