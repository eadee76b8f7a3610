#!/bin/bash
# A BLE heart-rate strap and a power meter, for real through the kernel's Bluetooth stack:
# btvirt's three emulated LE controllers, one the strap and one the power meter (ble_strap.py,
# an ATT server on its L2CAP LE socket, advertising the Heart Rate or the Cycling Power
# service), the third the board's. `workoutctl sensors scan` finds both; `sensors add` with the
# meter's address alone connects it at once, and a ride records its power, crank cadence and
# wheel speed; `sensors remove` disconnects it and it leaves status. Then the strap, named in
# the configuration: workoutd connects over its own L2CAP LE socket, discovers, subscribes, and
# records the heart rate in status and points, each RR interval in its table, the battery level
# in status. Then the meter again beside it: both at once, each on its own link from hci0, heart
# rate and power in the same points. The strap gone mid-ride (no longer advertising, its link
# closed) is a sensorDisconnected event (the ride goes on, the meter's power with it); back, it
# is reconnected (sensorConnected) and the heart rate comes back.
# bluetoothd runs throughout, as on a stock Raspberry Pi OS: it manages the controllers and
# serves its own GATT database on each; the service's L2CAP sockets work beside it, and so does
# the scan (the service's discovery on the kernel's management channel).
# It waits on two sensors in turn, and may start btvirt twice: more than the default 240 s.
# hil-timeout: 480
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
require_workoutd "$name"

config=/etc/workoutd/workoutd.toml
cp "$config" /tmp/workoutd.toml.board
problems=()
strap_status=/tmp/ble-strap.status
btvirt_pid='' strap_pid='' meter_pid='' advertiser_pid='' link_pid=''
restore() {
  [[ -n $advertiser_pid ]] && kill "$advertiser_pid" 2> /dev/null
  [[ -n $link_pid ]] && kill "$link_pid" 2> /dev/null
  cp /tmp/workoutd.toml.board "$config"
  rm -f /var/lib/workoutd/sensors.json
  systemctl restart workoutd
  [[ -n $strap_pid ]] && kill "$strap_pid" 2> /dev/null
  [[ -n $meter_pid ]] && kill "$meter_pid" 2> /dev/null
  [[ -n $btvirt_pid ]] && kill "$btvirt_pid" 2> /dev/null
  wait 2> /dev/null
}
trap restore EXIT

modprobe hci_vhci || { result "$name" FAIL "modprobe hci_vhci failed"; exit 0; }
controllers() { [[ -e /sys/class/bluetooth/hci0 && -e /sys/class/bluetooth/hci1 && -e /sys/class/bluetooth/hci2 ]]; }
no_controllers() { ! compgen -G '/sys/class/bluetooth/hci*' > /dev/null; }
start_btvirt() {
  btvirt -l3 -L >> /tmp/btvirt.log 2>&1 &
  btvirt_pid=$!
  wait_for 20 controllers
}
start_btvirt || { result "$name" FAIL "btvirt gave no three controllers: $(ls /sys/class/bluetooth)"; exit 0; }
# btmgmt (BlueZ's bt_shell) quits at the end of its input before the controller has answered:
# this runner's stdin is /dev/null, so it gets an input that stays open until it is done.
mgmt() { timeout 10 btmgmt "$@" < <(sleep 10) 2>&1; }
# The emulated controllers take a few seconds to be set up and get their addresses.
address_of() {
  mgmt -i "$1" info | sed -n 's/^[[:space:]]*addr \([0-9A-Fa-f:]*\) .*/\1/p' |
    grep -v '^00:00:00:00:00:00$' | head -n 1
}
addressed() { [[ -n $(address_of hci0) && -n $(address_of hci1) && -n $(address_of hci2) ]]; }
# A controller whose set-up failed (the kernel's HCI Reset to btvirt timed out: "Opcode 0x0c03
# failed: -110", seen with the host loaded) never gets its address: btvirt is started once more.
# (Under trixie's kernel the board's controller has taken up to 75 s to be set up.)
if ! wait_for 90 addressed; then
  note "a controller was not set up ($(dmesg | grep -m 1 -o 'hci[0-9]: Opcode.*failed.*')); btvirt started again"
  kill "$btvirt_pid" 2> /dev/null; wait "$btvirt_pid" 2> /dev/null
  wait_for 20 no_controllers
  start_btvirt && wait_for 90 addressed || {
    result "$name" FAIL "no controller addresses: $(mgmt -i hci0 info | head -4 | xargs)"
    exit 0
  }
fi
# The controllers appearing start bluetoothd (bluetooth.target).
bluetoothd_active() { systemctl is-active --quiet bluetooth; }
wait_for 30 bluetoothd_active || problems+=("bluetoothd did not start: $(systemctl is-active bluetooth)")
for hci in hci0 hci1 hci2; do mgmt -i "$hci" power on >> /tmp/btmgmt.log; done
strap=$(address_of hci1) board=$(address_of hci0) meter=$(address_of hci2)
note "board controller hci0 $board, strap controller hci1 $strap, power meter controller hci2 $meter"

# btvirt's emulated controllers (legacy advertising) send an advertising report only when
# scanning or advertising is switched on, never again, where a real sensor advertises every
# 20 ms to 1 s. So a report the kernel does not take at that moment is never repeated: one that
# comes while a discovery is still starting is dropped (its state is "finding" only once the
# scan-enable command has completed; a CI run's first scan on 6.1 heard nothing, its second
# both), and a connection the kernel makes by scanning for the device (a second sensor while
# one is connected) waits for a report that does not come. The peripherals "in range" therefore advertise again every
# second (advertising switched off and on; `add-adv` of a present instance changes nothing on
# air), as real ones do. A lock keeps that apart from a peripheral going out of range.
advertising_lock=/tmp/ble-advertising.lock
# The service is given as the advertising data itself, an AD structure "Complete List of 16-bit
# Service UUIDs" (length 3, type 0x03, the UUID little-endian: 03030d18 is 0x180D): BlueZ
# 5.82's `btmgmt add-adv -u 180d` puts no UUID list in the data (a scan then sees flags only,
# on trixie), 5.66's does; `-d` is the same on both. The kernel adds the flags (-g).
advertise() { # HCI AD-HEX: in range, advertising the service
  ( flock 9; echo "$2" > "/tmp/advertising-$1"; mgmt -i "$1" add-adv -c -g -d "$2" 1 >> /tmp/btmgmt.log ) 9> "$advertising_lock"
}
stop_advertising() { # HCI: out of range
  ( flock 9; rm -f "/tmp/advertising-$1"; mgmt -i "$1" rm-adv 1 >> /tmp/btmgmt.log ) 9> "$advertising_lock"
}
advertiser() {
  while sleep 1; do
    (
      flock 9
      for flag in /tmp/advertising-hci*; do
        [[ -e $flag ]] || continue
        hci=${flag#/tmp/advertising-}
        mgmt -i "$hci" rm-adv 1; mgmt -i "$hci" add-adv -c -g -d "$(cat "$flag")" 1
      done >> /tmp/btmgmt.log
    ) 9> "$advertising_lock"
  done
}

# In range: its ATT server listens, then it advertises (connectable, Heart Rate service).
strap_on() {
  python3 "$HIL_DIR/ble_strap.py" "$strap" "$strap_status" 2>> /tmp/ble-strap.err &
  strap_pid=$!
  sleep 1
  advertise hci1 03030d18
}
# Out of range: it stops advertising (nothing can connect) and its end of the link goes.
# (Powering btvirt's controller off instead left the other one unable to connect to it again.)
strap_off() {
  stop_advertising hci1
  kill "$strap_pid" 2> /dev/null; wait "$strap_pid" 2> /dev/null; strap_pid=''
}
rm -f /tmp/advertising-hci*
strap_on
# A power meter on the third controller, at the same time (Cycling Power, wheel and crank data).
meter_status=/tmp/ble-meter.status
python3 "$HIL_DIR/ble_strap.py" "$meter" "$meter_status" --power 2>> /tmp/ble-meter.err &
meter_pid=$!
sleep 1
advertise hci2 03031818
advertiser &
advertiser_pid=$!

# Scanning beside bluetoothd: the service (it has CAP_NET_ADMIN) runs an LE discovery on the
# kernel's management channel for `workoutctl sensors scan`; the lowest-numbered powered one is
# hci0, the board's, which hears the strap advertise the Heart Rate service.
# Up to three scans of 5 s, as a rider scans again: btvirt's peripherals are heard only when
# their advertising is switched on again (see `advertiser`), and on a loaded host (CI runs the
# two releases' suites side by side) that loop can go a whole scan without a turn; a CI run of
# 2026-11-25 heard nothing in its first scan on 6.1 and both in the next.
for scans in 1 2 3; do
  scan=$(timeout 30 workoutctl sensors scan --seconds 5 --json 2> /tmp/scan.err)
  found=$(jq -c --arg a "$strap" '[.devices[] | select(.address == $a)][0] // empty' <<< "$scan" 2> /dev/null)
  note "scan $scans: $(jq -r '.controller' <<< "$scan" 2> /dev/null), the strap: ${found:-not found}; all: $(jq -c '[.devices[] | [.address, .sensors, .rssi]]' <<< "$scan" 2> /dev/null)"
  [[ -n $found ]] && jq -e --arg a "$meter" 'any(.devices[]; .address == $a)' <<< "$scan" > /dev/null 2>&1 && break
done
if [[ -z $found ]]; then
  problems+=("sensors scan did not find the strap $strap: $(head -c 300 <<< "$scan") $(head -c 200 /tmp/scan.err)")
else
  [[ $(jq -r '.sensors | join(",")' <<< "$found") == "heart rate" ]] || problems+=("the strap's scan entry: $found")
  # btvirt's emulated controllers report no RSSI (127, "not available"): then there is none,
  # never a made-up number.
  rssi=$(jq -r '.rssi // "none"' <<< "$found")
  [[ $rssi == none || $rssi =~ ^-[0-9]+$ ]] || problems+=("the strap's scan entry has RSSI '$rssi': $found")
fi
meter_found=$(jq -r --arg a "$meter" '[.devices[] | select(.address == $a)][0].sensors // [] | join(",")' <<< "$scan" 2> /dev/null)
[[ $meter_found == "cycling power" ]] || problems+=("sensors scan did not find the power meter $meter as one: '$meter_found'")
[[ $(jq -r '.controller' <<< "$scan" 2> /dev/null) == "hci0 "* ]] || problems+=("the scan did not use hci0: $scan")
for _ in 1 2 3; do
  table=$(timeout 30 workoutctl sensors scan --seconds 5 2>&1)
  grep -q "heart_rate = \"$strap" <<< "$table" && break
done
grep -q "heart_rate = \"$strap" <<< "$table" || problems+=("the scan's table names no [sensors] line for the strap: $(tail -n 3 <<< "$table" | xargs)")
bluetoothd_active || problems+=("bluetoothd stopped during the scan")

# The power meter chosen with workoutctl: `sensors add` with the address alone (what it is comes
# from the scan the service just made); connected at once, and kept in the state directory.
added=$(timeout 30 workoutctl sensors add "$meter" 2>&1) || problems+=("sensors add $meter: $added")
note "sensors add: $added"
[[ $added == "power: $meter (public), connecting" ]] || problems+=("sensors add said: '$added'")
meter_condition() { wkd_status | jq -r '.devices.powerMeter // ""'; }
meter_available() { [[ $(meter_condition) == available* ]]; }
t_meter=$EPOCHREALTIME
[[ $added == *connecting ]] && wait_for 60 meter_available || problems+=("power meter not available after sensors add: '$(meter_condition)'; meter: $(tail -n 3 "$meter_status" 2>&1 | xargs) $(tail -n 2 /tmp/ble-meter.err 2> /dev/null | xargs)")
note "power meter: $(meter_condition) after $(since "$t_meter") s"
# Connected from the board's controller, the one scans use (hci0, the lowest-numbered): bound to
# "any", the kernel would have routed it through the newest controller, here the strap's own.
mgmt -i hci0 con | grep -qi "$meter" || problems+=("the meter is not connected from hci0: $(mgmt -i hci0 con | xargs)")
[[ -s /var/lib/workoutd/sensors.json ]] || problems+=("sensors add kept nothing in /var/lib/workoutd/sensors.json")
listed=$(timeout 10 workoutctl sensors list --json)
[[ $(jq -r '[.[] | "\(.role)=\(.address)/\(.origin)"] | join(" ")' <<< "$listed") == "power=$meter/workoutctl" ]] ||
  problems+=("sensors list: $listed")

# A ride with the power meter: its power and crank cadence in the points.
case $(wkd_state) in
  running) ;;
  paused) workoutctl resume ;;
  *) workoutctl start ;;
esac
wait_for 20 state_is running || problems+=("no running session: '$(wkd_state)'")
session=$(wkd_field .sessionId)
powered() {
  local n
  n=$(sqlite3 "$WORKOUTD_DB" "SELECT count(*) FROM point WHERE session_id = $session AND power IS NOT NULL AND cadence IS NOT NULL")
  (( ${n:-0} >= 3 ))
}
meter_available && { wait_for 20 powered || problems+=("no points with power and cadence"); }
power=$(sqlite3 "$WORKOUTD_DB" "SELECT count(*), min(power), max(power), min(cadence), max(cadence) FROM point WHERE session_id = $session AND power IS NOT NULL")
note "points with power: $power"
IFS='|' read -r with_power min_power max_power min_cadence max_cadence <<< "$power"
[[ ${min_power:-0} -ge 200 && ${max_power:-0} -le 239 ]] || problems+=("recorded power $min_power..$max_power W, the meter sends 200..239")
# One crank revolution a second: 60 rpm, from the meter's crank data.
awk -v lo="${min_cadence:-0}" -v hi="${max_cadence:-0}" 'BEGIN { exit !(lo >= 59 && hi <= 61) }' ||
  problems+=("recorded cadence $min_cadence..$max_cadence rpm, the meter's crank turns at 60")
# Four wheel revolutions a second on the default 2105 mm wheel: 8.42 m/s, beside GPS's speed.
wheel=$(sqlite3 "$WORKOUTD_DB" "SELECT count(*), min(wheel_speed), max(wheel_speed) FROM point WHERE session_id = $session AND wheel_speed IS NOT NULL")
note "points with wheel speed: $wheel"
IFS='|' read -r with_wheel min_wheel max_wheel <<< "$wheel"
(( ${with_wheel:-0} >= 3 )) && awk -v lo="${min_wheel:-0}" -v hi="${max_wheel:-0}" 'BEGIN { exit !(lo >= 8.41 && hi <= 8.43) }' ||
  problems+=("recorded wheel speed: '$wheel', the meter's wheel turns at 8.42 m/s")

# Removed with workoutctl: disconnected, and gone from status (no fault left on the LED).
closed_before=$(grep -c closed "$meter_status")
removed=$(timeout 10 workoutctl sensors remove "$meter" 2>&1) || problems+=("sensors remove $meter: $removed")
meter_gone() { [[ -z $(meter_condition) ]]; }
wait_for 15 meter_gone || problems+=("the removed power meter is still in status: '$(meter_condition)'")
meter_closed() { (( $(grep -c closed "$meter_status") > closed_before )); }
wait_for 15 meter_closed || problems+=("the removed power meter's link was not closed: $(tail -n 2 "$meter_status" | xargs)")

# The strap, named in the configuration file; the service restarted, the ride goes on.
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
# The removed meter stays removed across the restart (sensors.json), the strap is configured.
listed=$(timeout 10 workoutctl sensors list --json)
[[ $(jq -r '[.[] | "\(.role)=\(.address)/\(.origin)"] | join(" ")' <<< "$listed") == "heart_rate=$strap/configuration" ]] ||
  problems+=("sensors list after the restart: $listed")

wait_for 20 state_is running || problems+=("the ride is not running after the restart: '$(wkd_state)'")
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

# Both at once: the meter added again while the strap is connected, each on its own link from
# hci0, and points with heart rate and power together. First a link held from the meter's
# controller to the strap's, so that the board's second link gets the same handle at both ends
# under btvirt (its emulator numbers each end on its own and forwards data with the sender's
# handle: see ble_link.py); dropped once the meter is connected.
link_status=/tmp/ble-link.status
stop_advertising hci2
python3 "$HIL_DIR/ble_link.py" "$meter" "$strap" "$link_status" 2>> /tmp/ble-link.err &
link_pid=$!
linked() { grep -q connected "$link_status" 2> /dev/null; }
wait_for 40 linked || problems+=("no link from the meter's controller to the strap's: $(tail -n 2 /tmp/ble-link.err 2> /dev/null | xargs)")
advertise hci2 03031818
# With its role: the restarted service has made no scan yet to know what the meter is.
added=$(timeout 30 workoutctl sensors add "$meter" --role power 2>&1) || problems+=("sensors add $meter beside the strap: $added")
t_both=$EPOCHREALTIME
wait_for 60 meter_available || problems+=("power meter not available beside the strap: '$(meter_condition)'; meter: $(tail -n 3 "$meter_status" 2>&1 | xargs)")
note "power meter beside the strap: $(meter_condition) after $(since "$t_both") s"
kill "$link_pid" 2> /dev/null; wait "$link_pid" 2> /dev/null
connections=$(mgmt -i hci0 con)
grep -qi "$meter" <<< "$connections" && grep -qi "$strap" <<< "$connections" ||
  problems+=("hci0 is not connected to both the strap and the meter: $(xargs <<< "$connections")")
both_since=$(sqlite3 "$WORKOUTD_DB" "SELECT coalesce(max(seq), -1) FROM point WHERE session_id = $session")
both() {
  local n
  n=$(sqlite3 "$WORKOUTD_DB" "SELECT count(*) FROM point WHERE session_id = $session AND seq > $both_since AND hr IS NOT NULL AND power IS NOT NULL")
  (( ${n:-0} >= 5 ))
}
wait_for 30 both || problems+=("no points with heart rate and power together: $(sqlite3 "$WORKOUTD_DB" "SELECT count(hr), count(power) FROM point WHERE session_id = $session AND seq > $both_since")")
note "both at once: $(sqlite3 "$WORKOUTD_DB" "SELECT count(*), min(hr), max(hr), min(power), max(power) FROM point WHERE session_id = $session AND seq > $both_since AND hr IS NOT NULL AND power IS NOT NULL") (points, hr, power)"

# Out of range. Lost, an event, and the ride goes on.
strap_off
lost() { [[ $(strap_condition) == lost* ]]; }
wait_for 30 lost || problems+=("strap not reported lost: '$(strap_condition)'")
points=$(wkd_field .points)
more_points() { (( $(wkd_field .points) >= points + 3 )); }
wait_for 15 more_points || problems+=("the ride stopped recording without the strap")
# The meter, on its own link, goes on: power in the points while the strap is gone.
lost_since=$(sqlite3 "$WORKOUTD_DB" "SELECT max(seq) FROM point WHERE session_id = $session")
power_without_strap() {
  local n
  n=$(sqlite3 "$WORKOUTD_DB" "SELECT count(*) FROM point WHERE session_id = $session AND seq > $lost_since AND power IS NOT NULL AND hr IS NULL")
  (( ${n:-0} >= 3 ))
}
wait_for 15 power_without_strap || problems+=("the meter stopped with the strap: $(sqlite3 "$WORKOUTD_DB" "SELECT count(power), count(hr) FROM point WHERE session_id = $session AND seq > $lost_since")")
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
  note "meter: $(tail -n 6 "$meter_status" 2> /dev/null | xargs) $(tail -n 3 /tmp/ble-meter.err 2> /dev/null | xargs)"
  journalctl -u workoutd --no-pager -n 40 | grep -i -E "heartRate|power|BLE|strap|sensor" | tail -n 14
  result "$name" FAIL "$(IFS=';'; echo "${problems[*]}")"
else
  result "$name" PASS "scan found strap and meter (in $scans scan(s) of 5 s); meter added with workoutctl: $with_power points with $min_power..$max_power W at $min_cadence..$max_cadence rpm and wheel $min_wheel..$max_wheel m/s, then removed; strap $strap connected in $connected_after s; $with_hr points with $min_hr..$max_hr bpm, $rr_count RR intervals; both at once: $(sqlite3 "$WORKOUTD_DB" "SELECT count(*) FROM point WHERE session_id = $session AND seq > $both_since AND hr IS NOT NULL AND power IS NOT NULL") points with heart rate and power; strap gone: sensorDisconnected, ride and power went on; back: sensorConnected in $reconnected_after s; bluetoothd running (pid $bluetoothd)"
fi
