#!/bin/bash
# Build the stage-1 initramfs and print its path: a static busybox whose /init
# loads the modules Debian's kernel needs to reach the root disk (virtio-blk,
# ext4 and its crc32c), mounts /dev/vda and switch_roots into systemd.
# Cached by kernel version + this script.
set -euo pipefail
# shellcheck source=../lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
kernel_facts
kroot=${1:?usage: build-stage1.sh KERNEL_ROOT}

out="$CACHE_DIR/stage1/$KVER-$KDEBVER-$(hash_inputs "$0").cpio.gz"
if [[ -f $out ]]; then echo "$out"; exit 0; fi

modules=(virtio_pci virtio_blk crc32c_generic ext4)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
tree=$work/tree moddir=lib/modules/$KVER
mkdir -p "$tree"/{bin,proc,sys,dev,newroot,"$moddir"}
if [[ $BOARD_ARCH == amd64 ]]; then
  cp /bin/busybox "$tree/bin/busybox"
else
  # the guest CPU's static busybox, from the release's busybox-static
  debs=$CACHE_DIR/debs
  compgen -G "$debs/busybox-static_*_$BOARD_ARCH.deb" > /dev/null ||
    (cd "$debs" && guest_apt apt-get download -q -o APT::Sandbox::User=root "busybox-static:$BOARD_ARCH" > /dev/null)
  bbdeb=$(compgen -G "$debs/busybox-static_*_$BOARD_ARCH.deb" | tail -1) || die "busybox-static:$BOARD_ARCH not downloaded"
  dpkg-deb -x "$bbdeb" "$work/busybox"
  cp "$work/busybox/usr/bin/busybox" "$tree/bin/busybox"
fi
for applet in sh mount umount switch_root modprobe sleep cat echo poweroff; do
  ln -s busybox "$tree/bin/$applet"
done
# each module plus everything modules.dep says it needs; one built into the
# kernel (trixie's virtio_pci) is not loaded. Compressed modules (trixie's
# .ko.xz) are unpacked: busybox's modprobe loads plain .ko files.
load=()
for mod in "${modules[@]}"; do
  if grep -qE "/${mod//_/[-_]}\.ko$" "$kroot/$moddir/modules.builtin"; then continue; fi
  dep=$(grep -E "/${mod//_/[-_]}\.ko(\.[a-z]+)?:" "$kroot/$moddir/modules.dep") || die "module $mod not in $KVER"
  load+=("$mod")
  for file in ${dep%%:*} ${dep#*:}; do
    install -D -m 0644 "$kroot/$moddir/$file" "$tree/$moddir/$file"
    if [[ $file == *.xz ]]; then xz -d "$tree/$moddir/$file"; fi
  done
done
cp "$kroot/$moddir"/modules.{order,builtin,builtin.modinfo} "$tree/$moddir/"
sed -i 's/\.ko\.xz$/.ko/' "$tree/$moddir/modules.order"
depmod -b "$tree" "$KVER"

cat > "$tree/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
for m in @MODULES@; do modprobe $m; done
n=0; while [ ! -b /dev/vda ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
# After a power cut ext4 replays its journal here, as on a real board.
mount -t ext4 -o rw /dev/vda /newroot || { echo "stage1: cannot mount /dev/vda"; poweroff -f; }
echo "stage1: /dev/vda mounted"   # the runner's sign that the kernel got this far
umount /proc /sys; mount --move /dev /newroot/dev
exec switch_root /newroot /sbin/init
INIT
sed -i "s/@MODULES@/${load[*]}/" "$tree/init"
chmod 0755 "$tree/init"
mkdir -p "$(dirname "$out")"
(cd "$tree" && find . | cpio -o -H newc --quiet | gzip -1) > "$out.tmp"
mv "$out.tmp" "$out"
prune_except "$out"
echo "$out"
