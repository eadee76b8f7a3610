#!/bin/bash
# hil-timeout: 360
# The board as a USB drive (USB gadget, configfs mass_storage): with [usb_drive] on, the
# service makes a FAT image of its FIT exports, workoutd-usb-drive.path starts the gadget unit,
# and a USB host sees a read-only drive with workoutd/*.fit. Here the host is the guest itself:
# dummy_hcd is a device controller and a host controller joined by a virtual cable, so the
# gadget appears to the same kernel as a USB disk (usb-storage). The files read back are byte
# for byte the exports; a session ending while the host has the drive mounted leaves what it
# sees whole (the old image stays open, the change waits for the eject), and after the eject
# the new ride is on the drive. The stick copier leaves a workoutd drive alone.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
require_workoutd "$name"

problems=()
problem() { problems+=("$*"); note "PROBLEM: $*"; }
config=/etc/workoutd/workoutd.toml
exports=/var/lib/workoutd/exports
image=/var/lib/workoutd/usb-drive.img
mnt=/mnt/workoutd-drive
cp "$config" /tmp/workoutd.toml.board
restore() {
  umount "$mnt" 2> /dev/null
  cp /tmp/workoutd.toml.board "$config"
  systemctl restart workoutd
  systemctl stop workoutd-usb-drive.service
  modprobe -r dummy_hcd 2> /dev/null
}
trap restore EXIT
drive_status() { wkd_field .devices.usbDrive; }
began_us=$(awk '{printf "%d", $1 * 1000000}' /proc/uptime)

ride() { ride_exported "$1" fit; }
# The block device the gadget is to this kernel's USB host side (its SCSI vendor is ours).
drive_dev() {
  local block
  for block in /sys/block/sd*; do
    [[ $(cat "$block/device/vendor" 2> /dev/null) == workoutd* ]] && { basename "$block"; return 0; }
  done
  return 1
}
# Every FIT export is on the mounted drive, byte for byte; sets $fits.
check_drive() {
  local file missing=0
  fits=0
  for file in "$exports"/*.fit; do
    fits=$((fits + 1))
    cmp -s "$file" "$mnt/workoutd/$(basename "$file")" || { missing=$((missing + 1)); note "not on the drive as ours: $file"; }
  done
  ((missing == 0)) || problem "$1: $missing of $fits FIT exports not byte for byte on the drive"
  compgen -G "$mnt/workoutd/*.gpx" > /dev/null && problem "$1: GPX files on a FIT-only drive"
}

systemctl is-enabled workoutd-usb-drive.path > /dev/null || problem "workoutd-usb-drive.path is not enabled by the package"
modprobe dummy_hcd || problem "no dummy_hcd in this kernel"
wait_for 10 test -n "$(ls /sys/class/udc 2> /dev/null)" || problem "no UDC after modprobe dummy_hcd"
note "UDC: $(ls /sys/class/udc)"

cat >> "$config" << 'TOML'

[usb_drive]
enabled = true
TOML
workoutd --config "$config" --check-config || problem "the [usb_drive] configuration was refused"
systemctl restart workoutd
ride 5

# 1. The image made, the gadget up, the drive seen by the host side, not taken for a stick.
wait_for 30 systemctl is-active --quiet workoutd-usb-drive.service ||
  problem "workoutd-usb-drive.service not active: $(systemctl status workoutd-usb-drive.service --no-pager | tail -5)"
wait_for 30 drive_dev > /dev/null || problem "no USB disk of workoutd appeared ($(ls /sys/block))"
dev=$(drive_dev)
note "the drive: /dev/$dev; usbDrive: $(drive_status); $(workoutctl usb-drive status | xargs)"
current() { [[ $(workoutctl usb-drive status | sed -n 's/^medium: //p') == "$image" && $(drive_status) == available:*"; a computer has it" ]]; }
wait_for 30 current || problem "the drive does not hold the image: $(workoutctl usb-drive status | xargs); usbDrive '$(drive_status)'"
sleep 2
# (An earlier test's sticks may have left units of the same name: only a start since this
# test began counts.)
copier_started=$(systemctl show -p InactiveExitTimestampMonotonic --value "workoutd-usb@$dev.service")
((${copier_started:-0} > began_us)) &&
  problem "the stick copier started for the board's own drive: $(systemctl status "workoutd-usb@$dev.service" --no-pager | head -3 | xargs)"
stat -c '%U' "$(readlink -f /sys/kernel/config/usb_gadget/workoutd/functions/mass_storage.rides/lun.0/file)" | grep -qx workoutd ||
  problem "the medium attribute is not the service's"

mkdir -p "$mnt"
mount -o ro "/dev/$dev" "$mnt" || problem "cannot mount /dev/$dev"
check_drive "first ride"
first=$fits
before=$(cd "$mnt/workoutd" && sha256sum -- * | sort)

# 2. A ride ends while the host has the drive mounted: the host's view stays whole, the
# change waits for the eject.
ride 5
waiting() { [[ $(drive_status) == available:*"sees the new ones once it ejects it" ]]; }
wait_for 30 waiting || problem "ended while mounted: usbDrive '$(drive_status)', want waiting for the eject"
waiting_said=$(drive_status)
echo 3 > /proc/sys/vm/drop_caches
[[ $(cd "$mnt/workoutd" && sha256sum -- * | sort) == "$before" ]] || problem "what the host sees changed under its mount"
[[ -e $mnt/workoutd/$last_export ]] && problem "the new ride is on the drive before the eject"

# 3. Ejected (unmounted): the new image goes in, and the new ride is there.
umount "$mnt"
wait_for 30 current || problem "after the eject: $(workoutctl usb-drive status | xargs); usbDrive '$(drive_status)'"
remounted() { mount -o ro "/dev/$dev" "$mnt" 2> /dev/null; }
wait_for 15 remounted || problem "cannot mount /dev/$dev after the medium change"
check_drive "after the eject"
[[ -e $mnt/workoutd/$last_export ]] || problem "the new ride $last_export is not on the drive after the eject"
second=$fits
umount "$mnt"

# 4. Turned off: the image taken out and removed.
cp /tmp/workoutd.toml.board "$config"
systemctl restart workoutd
wait_for 20 test ! -e "$image" || problem "the image stayed after [usb_drive] was turned off"
[[ $(workoutctl usb-drive status | sed -n 's/^medium: //p') == none ]] || problem "turned off, the drive still holds: $(workoutctl usb-drive status | xargs)"
systemctl stop workoutd-usb-drive.service
[[ -e /sys/kernel/config/usb_gadget/workoutd ]] && problem "the gadget stayed after its unit stopped"

journalctl -b -u workoutd --no-pager | grep -i 'usb drive' | tail -10
journalctl -b -u workoutd-usb-drive --no-pager | tail -10

if ((${#problems[@]})); then
  result "$name" FAIL "$(IFS=';'; echo "${problems[*]}")"
else
  result "$name" PASS "the drive on dummy_hcd: $first FIT files byte for byte; a ride ended while mounted: host's view unchanged, '${waiting_said#available: }'; after the eject $second files incl. the new ride; turned off: image and gadget gone"
fi
