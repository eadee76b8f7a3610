#!/bin/bash
# A BLE heart-rate strap, for real through the kernel's Bluetooth stack: btvirt's two emulated LE
# controllers, one of them the strap (ble_strap.py: an ATT server on its L2CAP LE socket,
# advertising the Heart Rate service), the other the board's. workoutd, configured with the
# strap's address, connects over its own L2CAP LE socket, discovers, subscribes, and records the
# strap's heart rate in status and points, each RR interval in its table, its battery level in
# status. The strap gone mid-ride (no longer advertising, its link closed) is a
# sensorDisconnected event (the ride goes on); back, it is reconnected (sensorConnected) and
# the heart rate comes back.
# bluetoothd runs throughout, as on a stock Raspberry Pi OS: it manages both controllers and
# serves its own GATT database on each; the service's L2CAP socket works beside it.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
require_workoutd "$name"

config=/etc/workoutd/workoutd.toml
cp "$config" /tmp/workoutd.toml.board
problems=()
strap_status=/tmp/ble-strap.status
btvirt_pid='' strap_pid=''
restore() {
  cp /tmp/workoutd.toml.board "$config"
  systemctl restart workoutd
  [[ -n $strap_pid ]] && kill "$strap_pid" 2> /dev/null
  [[ -n $btvirt_pid ]] && kill "$btvirt_pid" 2> /dev/null
  wait 2> /dev/null
}
trap restore EXIT

modprobe hci_vhci || { result "$name" FAIL "modprobe hci_vhci failed"; exit 0; }
btvirt -l2 -L > /tmp/btvirt.log 2>&1 &
btvirt_pid=$!
two_controllers() { [[ -e /sys/class/bluetooth/hci0 && -e /sys/class/bluetooth/hci1 ]]; }
wait_for 20 two_controllers || { result "$name" FAIL "btvirt gave no two controllers: $(ls /sys/class/bluetooth)"; exit 0; }
# btmgmt (BlueZ's bt_shell) quits at the end of its input before the controller has answered:
# this runner's stdin is /dev/null, so it gets an input that stays open until it is done.
mgmt() { timeout 10 btmgmt "$@" < <(sleep 10) 2>&1; }
# The emulated controllers take a few seconds to be set up and get their addresses.
address_of() {
  mgmt -i "$1" info | sed -n 's/^[[:space:]]*addr \([0-9A-Fa-f:]*\) .*/\1/p' |
    grep -v '^00:00:00:00:00:00$' | head -n 1
}
addressed() { [[ -n $(address_of hci0) && -n $(address_of hci1) ]]; }
wait_for 30 addressed || {
  result "$name" FAIL "no controller addresses: $(mgmt -i hci1 info | head -4 | xargs)"
  exit 0
}
# The controllers appearing start bluetoothd (bluetooth.target).
bluetoothd_active() { systemctl is-active --quiet bluetooth; }
wait_for 30 bluetoothd_active || problems+=("bluetoothd did not start: $(systemctl is-active bluetooth)")
for hci in hci0 hci1; do mgmt -i "$hci" power on >> /tmp/btmgmt.log; done
strap=$(address_of hci1) board=$(address_of hci0)
note "board controller hci0 $board, strap controller hci1 $strap"

# In range: its ATT server listens, then it advertises (connectable, Heart Rate service).
strap_on() {
  python3 "$HIL_DIR/ble_strap.py" "$strap" "$strap_status" 2>> /tmp/ble-strap.err &
  strap_pid=$!
  sleep 1
  mgmt -i hci1 add-adv -c -g -u 180d 1 >> /tmp/btmgmt.log
}
# Out of range: it stops advertising (nothing can connect) and its end of the link goes.
# (Powering btvirt's controller off instead left the other one unable to connect to it again.)
strap_off() {
  mgmt -i hci1 rm-adv 1 >> /tmp/btmgmt.log
  kill "$strap_pid" 2> /dev/null; wait "$strap_pid" 2> /dev/null; strap_pid=''
}
strap_on

python3 - "$config" "$strap" << 'PY'
import re, sys
path, address = sys.argv[1], sys.argv[2]
text = open(path).read()
section = f'[sensors]\nheart_rate = "{address}/public"\n'
if re.search(r"^\[sensors\]", text, flags=re.M):
    text = re.sub(r"\[sensors\].*?(?=\n\[|\Z)", section.rstrip("\n"), text, flags=re.S)
else:
    text += "\n" + section
open(path, "w").write(text)
PY
workoutd --config "$config" --check-config || problems+=("the [sensors] configuration was refused")
systemctl restart workoutd
ready() { [[ -n $(wkd_state) ]]; }
wait_for 60 ready || problems+=("workoutd did not come back with a strap configured")

strap_condition() { wkd_status | jq -r '.devices.heartRateStrap // ""'; }
available() { [[ $(strap_condition) == available* ]]; }
t0=$EPOCHREALTIME
wait_for 60 available || problems+=("strap not available: '$(strap_condition)'; strap: $(tail -n 3 "$strap_status" 2>&1 | xargs)")
connected_after=$(since "$t0")
note "strap: $(strap_condition) after $connected_after s"
[[ $(strap_condition) == *"battery 77 %"* ]] || problems+=("no battery level in the strap's status: '$(strap_condition)'")

case $(wkd_state) in
  running) ;;
  paused) workoutctl resume ;;
  *) workoutctl start ;;
esac
wait_for 20 state_is running || problems+=("no running session: '$(wkd_state)'")
session=$(wkd_field .sessionId)
heart_rate() { wkd_field .heartRate; }
has_heart_rate() { [[ $(heart_rate) =~ ^1[23][0-9]$ ]]; }
wait_for 15 has_heart_rate || problems+=("no strap heart rate in status: '$(heart_rate)'")
sleep 3
recorded=$(sqlite3 "$WORKOUTD_DB" "SELECT count(*), min(hr), max(hr) FROM point WHERE session_id = $session AND hr IS NOT NULL")
note "points with heart rate: $recorded"
IFS='|' read -r with_hr min_hr max_hr <<< "$recorded"
(( ${with_hr:-0} >= 3 )) || problems+=("recorded points with heart rate: '$recorded'")
[[ ${min_hr:-0} -ge 120 && ${max_hr:-0} -le 139 ]] || problems+=("recorded heart rates $min_hr..$max_hr, the strap sends 120..139")
rr=$(sqlite3 "$WORKOUTD_DB" "SELECT count(*), min(interval), max(interval) FROM rr_interval WHERE session_id = $session")
note "RR intervals: $rr"
IFS='|' read -r rr_count rr_min rr_max <<< "$rr"
# 60/bpm s in 1/1024 s for 120..139 bpm: 442..512.
(( ${rr_count:-0} >= 3 && ${rr_min:-0} >= 442 && ${rr_max:-0} <= 512 )) || problems+=("RR intervals recorded: '$rr'")

# Out of range. Lost, an event, and the ride goes on.
strap_off
lost() { [[ $(strap_condition) == lost* ]]; }
wait_for 30 lost || problems+=("strap not reported lost: '$(strap_condition)'")
points=$(wkd_field .points)
more_points() { (( $(wkd_field .points) >= points + 3 )); }
wait_for 15 more_points || problems+=("the ride stopped recording without the strap")
events=$(timeout 10 workoutctl show "$session" --json | jq -c '[.events[] | select(.kind == "sensorDisconnected")] | map(.detail)')
[[ $events == *heartRateStrap* ]] || problems+=("no sensorDisconnected event for the strap: $events")

# Back in range: reconnected after its backoff, and the heart rate comes back.
strap_on
t1=$EPOCHREALTIME
wait_for 90 available || problems+=("strap not reconnected: '$(strap_condition)'")
reconnected_after=$(since "$t1")
wait_for 15 has_heart_rate || problems+=("no heart rate after the reconnect: '$(heart_rate)'")
note "reconnected after $reconnected_after s; strap log: $(grep -c connected "$strap_status") connections"
connected_events=$(timeout 10 workoutctl show "$session" --json | jq '[.events[] | select(.kind == "sensorConnected")] | length')
(( ${connected_events:-0} >= 1 )) || problems+=("no sensorConnected event in the session after the strap came back")

bluetoothd_active || problems+=("bluetoothd is not running at the end: $(systemctl is-active bluetooth)")
bluetoothd=$(systemctl show -p MainPID --value bluetooth)

if ((${#problems[@]})); then
  note "btvirt: $(tail -n 5 /tmp/btvirt.log | xargs); btmgmt: $(tail -n 6 /tmp/btmgmt.log | xargs)"; note "strap: $(tail -n 8 "$strap_status" | xargs) $(tail -n 3 /tmp/ble-strap.err 2> /dev/null | xargs)"
  journalctl -u workoutd --no-pager -n 30 | grep -i -E "heartRate|BLE|strap" | tail -n 10
  result "$name" FAIL "$(IFS=';'; echo "${problems[*]}")"
else
  result "$name" PASS "strap $strap connected in $connected_after s; $with_hr points with $min_hr..$max_hr bpm, $rr_count RR intervals; gone: sensorDisconnected, ride went on; back: sensorConnected in $reconnected_after s; bluetoothd running (pid $bluetoothd)"
fi
