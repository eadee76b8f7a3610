#!/bin/bash
# hil-timeout: 480
# USB sticks hot-plugged into the running board (QEMU's xHCI; the host plugs and pulls them
# through the monitor, host/usb-plug.py): udev's 80-workoutd-usb.rules starts
# workoutd-usb@.service, which mounts the stick, copies the rides it has not had into
# workoutd/, unmounts it and has the service say "safe to remove". The copies are byte for byte
# the exports; a second plug copies nothing twice; a stick pulled mid-copy leaves the database
# whole and the next plug finishes; two sticks at once each get theirs; a read-only and a full
# stick are faults that touch nothing of ours.
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
# ... and the next plug finishes the job.
plug a 1234-ABCD && wait_unit
[[ $(usb_status) == available:*"safe to remove" ]] || problem "plug after the pull: usbStick '$(usb_status)'"
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
[[ $(exports_sums) == "$ours" ]] || problem "our exports changed while the sticks failed"
[[ $(sqlite3 "$WORKOUTD_DB" 'PRAGMA quick_check') == ok ]] || problem "the database at the end is not ok"

journalctl -b -u workoutd --no-pager | grep -i 'usb' | tail -20
journalctl -b -u 'workoutd-usb@*' --no-pager | tail -30

if ((${#problems[@]})); then
  result "$name" FAIL "$(IFS=';'; echo "${problems[*]}")"
else
  result "$name" PASS "stick a: $first copied byte for byte, safe to remove; again: nothing twice; pulled mid-copy: '${midway#failing: }', database ok, the next plug finished; two at once (FAT and exFAT): $two; read-only: '${readonly_said#failing: }'; full ext4: '${full_said#failing: }'"
fi
