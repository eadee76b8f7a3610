#!/usr/bin/env bash
# The arm64 package on an arm64 machine: Debian 13 trixie's arm64 userland and kernel under
# qemu-system-aarch64 (`virt`, Cortex-A72, software emulation), the package installed with apt,
# the service started by systemd at boot, a bundled ride recorded on the simulated board and
# exported. A smoke run ahead of the whole board-VM suite on arm64 (gpio-sim, i2c-stub, BLE,
# USB, power cuts), which Tests/BoardVM does for x86_64 only.
#
# Usage: Tests/BoardVM/arm64-smoke.sh [PACKAGE.deb]   (default: .build/deb-arm64's; needs root)
# The base root (debootstrap --arch=arm64, its second stage under qemu-user; the kernel and
# initramfs-tools) is made once in $WORKOUTD_BOARD_VM_ARM64_CACHE (/var/tmp/workoutd-board-vm-arm64).
# About 9 minutes the first time, 4 after. Prints one line per check, then "N passed, N failed".
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cache=${WORKOUTD_BOARD_VM_ARM64_CACHE:-/var/tmp/workoutd-board-vm-arm64}
base=$cache/base
deb=${1:-$(ls "$here"/.build/deb-arm64/workoutd_*_arm64.deb 2> /dev/null | tail -1)}
[[ $(id -u) == 0 ]] || { echo "arm64-smoke: needs root" >&2; exit 2; }
[[ -f $deb ]] || { echo "arm64-smoke: no arm64 package (make deb-arm64)" >&2; exit 2; }

for p in debootstrap qemu-user-static qemu-system-arm e2fsprogs; do
  dpkg-query -W -f='${Status}\n' "$p" 2> /dev/null | grep -q '^install ok installed' ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      debootstrap qemu-user-static qemu-system-arm ipxe-qemu e2fsprogs > /dev/null
done

mounts=()
cleanup() { for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2> /dev/null || true; done; }
trap cleanup EXIT
in_root() {  # in_root ROOT COMMAND: under qemu-user (binfmt_misc), with /proc
  mountpoint -q "$1/proc" || { mount -t proc proc "$1/proc"; mounts+=("$1/proc"); }
  chroot "$1" env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
    bash -c "$2"
}

if [[ ! -e $base/.ready ]]; then
  { grep -o " $base/[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount -l "$m" || true; done
  rm -rf --one-file-system "$base" && mkdir -p "$cache"
  mirror=$(grep -m1 '^URIs:' /etc/apt/sources.list.d/debian.sources 2> /dev/null | awk '{print $2}')
  echo "arm64-smoke: debootstrap trixie (arm64) into $base"
  debootstrap --arch=arm64 --foreign --variant=minbase trixie "$base" "${mirror:-http://deb.debian.org/debian}" \
    > "$cache/debootstrap.log" 2>&1 || { tail -20 "$cache/debootstrap.log"; exit 1; }
  # binfmt_misc's aarch64 entry is registered without F: its interpreter is looked up in the root.
  mkdir -p "$base/usr/libexec/qemu-binfmt"
  cp /usr/bin/qemu-aarch64-static "$base/usr/libexec/qemu-binfmt/aarch64-binfmt-P"
  chroot "$base" /debootstrap/debootstrap --second-stage >> "$cache/debootstrap.log" 2>&1 ||
    { tail -20 "$cache/debootstrap.log"; exit 1; }
  cp /etc/resolv.conf "$base/etc/resolv.conf"
  echo 'Acquire::Check-Valid-Until "false";' > "$base/etc/apt/apt.conf.d/99workoutd-snapshot"
  in_root "$base" "apt-get update -qq && apt-get install -y -qq --no-install-recommends initramfs-tools \
    systemd-sysv udev linux-image-arm64" > "$cache/apt.log" 2>&1 || { tail -20 "$cache/apt.log"; exit 1; }
  echo arm64-smoke > "$base/etc/hostname"
  echo "/dev/vda / ext4 defaults 0 1" > "$base/etc/fstab"
  cleanup && mounts=()
  touch "$base/.ready"
fi

# This run's root: the base, the package installed with apt (its Depends from trixie's arm64
# archive; the service is not started in the chroot), the simulated board replaying a bundled
# ride at 10x, and a unit that writes what it finds to /root/report.txt a minute after boot.
run=$cache/run
rm -rf --one-file-system "$run" && cp -a "$base" "$run"
cp "$deb" "$run/tmp/workoutd.deb"
printf '#!/bin/sh\nexit 101\n' > "$run/usr/sbin/policy-rc.d" && chmod +x "$run/usr/sbin/policy-rc.d"
in_root "$run" "apt-get install -y -qq --no-install-recommends /tmp/workoutd.deb" > "$cache/install.log" 2>&1 ||
  { tail -20 "$cache/install.log"; exit 1; }
cleanup && mounts=()
rm -f "$run/usr/sbin/policy-rc.d" "$run/tmp/workoutd.deb"
config=$run/etc/workoutd/workoutd.toml
sed -i 's/^board = "linux"/board = "sim"/; s|^# ride = .*|ride = "/usr/share/workoutd/rides/garmin-fenix-5-2017-06-12.csv"|; s|^# speed = 1 .*|speed = 10|' "$config"
cat > "$run/etc/systemd/system/smoke-report.service" << 'EOF'
[Unit]
Description=What workoutd did, for the arm64 smoke run; then power off
After=workoutd.service
[Service]
Type=oneshot
ExecStart=/bin/sh -c '{ sleep 60; uname -m; systemctl show -p ActiveState -p SubState -p Type workoutd; workoutctl sessions --state-dir /var/lib/workoutd; ls /var/lib/workoutd/exports; journalctl -u workoutd --no-pager; } > /root/report.txt 2>&1; sync; systemctl poweroff'
[Install]
WantedBy=multi-user.target
EOF
ln -sf /etc/systemd/system/smoke-report.service "$run/etc/systemd/system/multi-user.target.wants/smoke-report.service"
image=$cache/root.img
rm -f "$image" && truncate -s 2G "$image" && mkfs.ext4 -q -F -d "$run" "$image"
kernel=$(ls "$run"/boot/vmlinuz-* | tail -1)
initrd=$(ls "$run"/boot/initrd.img-* | tail -1)
echo "arm64-smoke: booting $(basename "$kernel") with $(basename "$deb")"
started=$(date +%s)
timeout 600 qemu-system-aarch64 -M virt -cpu cortex-a72 -smp 2 -m 1024 -nographic -no-reboot \
  -kernel "$kernel" -initrd "$initrd" -append "root=/dev/vda rw console=ttyAMA0 quiet" \
  -drive "file=$image,format=raw,if=virtio,cache=unsafe" -netdev user,id=n0,restrict=on \
  -device virtio-net-pci,netdev=n0 > "$cache/console.log" 2>&1 || true
report=$(debugfs -R "cat /root/report.txt" "$image" 2> /dev/null || true)
echo "$report" > "$cache/report.txt"

passed=0 failed=0
check() {  # check NAME DETAIL COMMAND...
  local name=$1 detail=$2
  shift 2
  if "$@"; then echo "$name: PASS ($detail)"; passed=$((passed + 1)); else echo "$name: FAIL ($detail)"; failed=$((failed + 1)); fi
}
has() { grep -q -- "$1" <<< "$report"; }
check boot "guest up and powered off in $(($(date +%s) - started)) s; $(sed -n 1p <<< "$report")" has '^aarch64$'
check service-active "$(grep -E '^(ActiveState|SubState|Type)=' <<< "$report" | tr '\n' ' ')" has 'ActiveState=active'
# Type=notify: systemd says Started only once the service has sent READY=1.
check systemd-ready "$(grep -m1 'Started workoutd' <<< "$report" | cut -c1-110)" has 'Started workoutd.service'
check session-ended "$(grep -m1 '^ *1 ended' <<< "$report" | tr -s ' ')" has '^ *1 ended'
check exported "$(grep -c '^2017.*\.\(fit\|gpx\)$' <<< "$report") files" has '^20170612-.*\.fit$'
echo "arm64-smoke: report in $cache/report.txt, console in $cache/console.log"
echo "$passed passed, $failed failed"
((failed == 0))
