#!/bin/bash
# hil-timeout: 600
# USB sticks hot-plugged into the running board (QEMU's xHCI; the host plugs and pulls them
# through the monitor, host/usb-plug.py): udev's 80-workoutd-usb.rules starts
# workoutd-usb@.service, which mounts the stick, copies the rides it has not had into
# workoutd/, unmounts it and has the service say "safe to remove". The copies are byte for byte
# the exports; a second plug copies nothing twice; a stick pulled mid-copy leaves the database
# whole and the next plug finishes; two sticks at once each get theirs; a read-only and a full
# stick are faults that touch nothing of ours; so are a blank, an NTFS and an unmountable one;
# a disk with a file system mounted is left alone.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
require_workoutd "$name"

problems=()
problem() { problems+=("$*"); note "PROBLEM: $*"; }
exports=/var/lib/workoutd/exports
usb_status() { wkd_field .devices.usbStick; }
exports_sums() { (cd "$exports" && sha256sum -- * 2> /dev/null | sort); }
uptime_us() { awk '{printf "%d", $1 * 1000000}' /proc/uptime; }

ride() { ride_exported "$1" gpx; }

# plug STICK UUID [ro] [slow]: plugs it in, waits for its partition; sets $dev and $unit
plug() {
  local stick=$1 uuid=$2 reply
  shift 2
  plugged_at=$(uptime_us)
  reply=$(usb_request plug "$stick" "$@") || { problem "plug $stick: $reply"; return 1; }
  wait_for 30 test -e "/dev/disk/by-uuid/$uuid" || { problem "no /dev/disk/by-uuid/$uuid after plugging $stick"; return 1; }
  dev=$(basename "$(readlink -f "/dev/disk/by-uuid/$uuid")")
  unit=workoutd-usb@$dev.service
  note "$stick plugged in: $dev ($*)"
}
# The unit udev started for this plug has run to its end (its ExecStopPost included).
unit_finished() {
  local state since
  state=$(systemctl show -p ActiveState --value "$unit")
  since=$(systemctl show -p InactiveEnterTimestampMonotonic --value "$unit")
  [[ $state == inactive || $state == failed ]] && ((since > plugged_at))
}
wait_unit() {
  wait_for "${1:-120}" unit_finished || { problem "$unit did not finish ($(systemctl show -p ActiveState --value "$unit"))"; return 1; }
  note "$unit: $(systemctl show -p Result,ExecMainStatus --value "$unit" | xargs); usbStick: $(usb_status)"
}
pull() { usb_request pull "$1" > /dev/null || problem "pull $1"; wait_for 15 test ! -e "/dev/$dev" || problem "/dev/$dev stayed after pulling $1"; }
# The stick's workoutd/ holds every export of ours byte for byte, and no temporary file.
check_copies() {
  local mnt=/mnt/stick-check missing=0 file
  mkdir -p "$mnt"
  mount -o ro "/dev/$dev" "$mnt" || { problem "cannot mount /dev/$dev to check it"; return 1; }
  for file in "$exports"/*; do
    cmp -s "$file" "$mnt/workoutd/$(basename "$file")" || { missing=$((missing + 1)); note "not on the stick as ours: $file"; }
  done
  ls -la "$mnt/workoutd" | tail -n +2 > /tmp/stick.ls
  grep -q '\.partial' /tmp/stick.ls && problem "a temporary file left on the stick: $(grep '\.partial' /tmp/stick.ls | xargs)"
  umount "$mnt"
  ((missing == 0)) || problem "$missing of our exports not byte for byte on the stick"
  copies_checked=$(find "$exports" -maxdepth 1 -type f ! -name '.*' | wc -l)
}
copies_recorded() { sqlite3 "$WORKOUTD_DB" "SELECT count(*) FROM export WHERE destination = 'usb:$1'"; }

ride 5
ours=$(exports_sums)
usb_request make a vfat 16384 1234-ABCD > /dev/null || problem "make stick a"
usb_request make b vfat 4096 2345-BCDE > /dev/null || problem "make stick b"
usb_request make full ext4 2048 0f5e7c2a-9a51-4b43-8e0c-5d1f3b2a7e66 full > /dev/null || problem "make stick full"

# 1. A new stick takes every export, byte for byte; the service says when it is safe to pull.
plug a 1234-ABCD && wait_unit
[[ $(usb_status) == available:*"usb:1234-ABCD: copied "*"safe to remove" ]] || problem "first plug: usbStick '$(usb_status)'"
check_copies
first="$copies_checked files"
pull a

# 2. Plugged again: nothing copied twice.
recorded=$(copies_recorded 1234-ABCD)
plug a 1234-ABCD && wait_unit
[[ $(usb_status) == *"nothing new to copy; safe to remove" ]] || problem "second plug: usbStick '$(usb_status)'"
[[ $(copies_recorded 1234-ABCD) == "$recorded" ]] || problem "second plug recorded $(copies_recorded 1234-ABCD) copies, was $recorded"
pull a

# 3. A new ride, and the stick pulled mid-copy (its writes slowed to be caught at it).
ride 5
plug a 1234-ABCD slow
copying() { [[ $(usb_status) == *"copying to usb:1234-ABCD"* ]]; }
wait_for 60 copying || problem "never saw the copy under way: usbStick '$(usb_status)'"
sleep 1
pull a
wait_unit 60
[[ $(usb_status) == failing:* ]] || problem "pulled mid-copy: usbStick '$(usb_status)', want failing"
midway=$(usb_status)
[[ $(sqlite3 "$WORKOUTD_DB" 'PRAGMA quick_check') == ok ]] || problem "the database after the pull: $(sqlite3 "$WORKOUTD_DB" 'PRAGMA quick_check' | head -3)"
[[ $(wkd_state) == ended ]] || problem "the service after the pull: state '$(wkd_state)'"
# ... and the next plug finishes the job, after systemd-fsck@ has cleared the dirty FAT the
# pull left (Linux turns a FAT read-only when it meets a broken cluster chain).
plug a 1234-ABCD && wait_unit
[[ $(usb_status) == available:*"safe to remove" ]] || problem "plug after the pull: usbStick '$(usb_status)'"
fsck_said=$(journalctl -b -u "systemd-fsck@dev-$dev.service" --no-pager -o cat | grep -i -m1 'dirty bit')
[[ -n $fsck_said ]] || problem "no fsck of the pulled stick at the next plug: $(journalctl -b -u "systemd-fsck@dev-$dev.service" --no-pager -o cat | tail -5 | xargs)"
check_copies
pull a
ours=$(exports_sums)

# 4. Two sticks at once, one new (exFAT): each takes what it has not had, each is safe to pull.
usb_request make c exfat 8192 3456-CDEF > /dev/null || problem "make stick c"
ride 4
plug a 1234-ABCD
dev_a=$dev unit_a=$unit at=$plugged_at
plug c 3456-CDEF
dev_c=$dev unit_c=$unit plugged_at=$at
unit=$unit_a wait_unit
unit=$unit_c wait_unit
[[ $dev_a != "$dev_c" ]] || problem "two sticks, one partition name: $dev_a"
for stick in usb:1234-ABCD usb:3456-CDEF; do
  journalctl -b -u workoutd --no-pager | grep -q "$stick: copied .*safe to remove" ||
    problem "two at once: no 'safe to remove' for $stick in the service's log"
done
[[ $(usb_status) == available:*"safe to remove" ]] || problem "two at once: usbStick '$(usb_status)'"
dev=$dev_a check_copies
dev=$dev_c check_copies
two="$copies_checked on each"
dev=$dev_a pull a
dev=$dev_c pull c
ours=$(exports_sums)

# 5. A write-protected stick: a fault, nothing of ours touched.
plug b 2345-BCDE ro && wait_unit
[[ $(usb_status) == failing:*usb:2345-BCDE*[Rr]ead-only* ]] || problem "read-only stick: usbStick '$(usb_status)'"
readonly_said=$(usb_status)
[[ $(wkd_field .indicator) == fault ]] || problem "read-only stick: LED '$(wkd_field .indicator)', want fault"
pull b

# 6. A full stick (ext4, its root root's: the copier's one capability): a fault, ours untouched.
plug full 0f5e7c2a-9a51-4b43-8e0c-5d1f3b2a7e66 && wait_unit
[[ $(usb_status) == failing:*"No space left on device"* ]] || problem "full stick: usbStick '$(usb_status)'"
full_said=$(usb_status)
pull full
# 7. Sticks that cannot take the rides are told, each a fault until it is pulled: one never
# formatted (no partition table, no file system), one NTFS (never mounted), one whose ext4 the
# kernel will not mount (an incompatible feature it does not know).
usb_request make blank blank 4096 - > /dev/null || problem "make stick blank"
usb_request make ntfs ntfs 8192 5A1C44D23F0E7B11 > /dev/null || problem "make stick ntfs"
usb_request make broken ext4 4096 6b0c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3 unmountable > /dev/null || problem "make stick broken"
said() { [[ $(usb_status) == failing:*"$1"* ]]; }
unsaid() { [[ $(usb_status) != *"$1"* ]]; }
usb_request plug blank > /dev/null || problem "plug blank"
if wait_for 30 said "no file system found on it"; then
  blank_said=$(usb_status)
  [[ $(wkd_field .indicator) == fault ]] || problem "blank stick: LED '$(wkd_field .indicator)', want fault"
else
  problem "blank stick: usbStick '$(usb_status)', want 'no file system found on it'"
fi
usb_request pull blank > /dev/null || problem "pull blank"
wait_for 30 unsaid "no file system found" || problem "blank stick pulled: usbStick still '$(usb_status)'"
plug ntfs 5A1C44D23F0E7B11
wait_for 30 said "usb:5A1C44D23F0E7B11: holds an NTFS file system" || problem "NTFS stick: usbStick '$(usb_status)'"
ntfs_said=$(usb_status)
systemctl is-active -q "workoutd-usb@$dev.service" && problem "the copier started for the NTFS stick"
findmnt -rn -S "/dev/$dev" > /dev/null && problem "the NTFS stick was mounted: $(findmnt -rn -S "/dev/$dev")"
pull ntfs
wait_for 30 unsaid "usb:5A1C44D23F0E7B11" || problem "NTFS stick pulled: usbStick still '$(usb_status)'"
plug broken 6b0c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3 && wait_unit
[[ $(usb_status) == failing:*"usb:6b0c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3: would not mount"*"journalctl -u workoutd-usb@$dev.service"* ]] ||
  problem "unmountable stick: usbStick '$(usb_status)'"
broken_said=$(usb_status)
pull broken

# 8. A disk with a file system mounted (the board's own, when a Pi boots from USB) is not a
# stick: the copier's ExecCondition leaves it alone, and the rider hears nothing of it.
plug a 1234-ABCD && wait_unit
mkdir -p /mnt/by-hand && mount -o ro "/dev/$dev" /mnt/by-hand || problem "cannot mount /dev/$dev by hand"
before=$(usb_status)
started_at=$(uptime_us)
systemctl start "workoutd-usb@$dev.service"
skipped=$(journalctl -b -u "workoutd-usb@$dev.service" --since "@$(($(date +%s) - 30))" --no-pager -o cat | grep -m1 'not a stick for the rides')
[[ -n $skipped ]] || problem "a mounted disk: the copier did not say it skipped it"
since=$(systemctl show -p ExecMainStartTimestampMonotonic --value "workoutd-usb@$dev.service")
((since < started_at)) || problem "a mounted disk: the copier ran ($(systemctl show -p Result,ExecMainStatus --value "workoutd-usb@$dev.service" | xargs))"
[[ $(usb_status) == "$before" ]] || problem "a mounted disk: usbStick '$(usb_status)', was '$before'"
umount /mnt/by-hand
pull a

[[ $(exports_sums) == "$ours" ]] || problem "our exports changed while the sticks failed"
[[ $(sqlite3 "$WORKOUTD_DB" 'PRAGMA quick_check') == ok ]] || problem "the database at the end is not ok"

journalctl -b -u workoutd --no-pager | grep -i 'usb' | tail -20
journalctl -b -u 'workoutd-usb@*' -u 'workoutd-usb-unusable@*' -u 'systemd-fsck@*' --no-pager | tail -40

if ((${#problems[@]})); then
  result "$name" FAIL "$(IFS=';'; echo "${problems[*]}")"
else
  result "$name" PASS "stick a: $first copied byte for byte, safe to remove; again: nothing twice; pulled mid-copy: '${midway#failing: }', database ok, the next plug finished; two at once (FAT and exFAT): $two; read-only: '${readonly_said#failing: }'; full ext4: '${full_said#failing: }'; fsck after the pull: '$fsck_said'; blank: '${blank_said#failing: }'; NTFS: '${ntfs_said#failing: }'; unmountable ext4: '${broken_said#failing: }'; mounted by hand: '$skipped'"
fi
