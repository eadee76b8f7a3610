#!/bin/bash
# hil-timeout: 240
# A Smart Battery on i2c-stub (0x0b), driven by the kernel's own sbs-battery driver, is the
# service's battery: its power_supply's capacity reaches the service. The board half: the
# driver binds, sysfs gives the level, the service's gauge reads it, and the poweroff chain
# (the flag in /run/workoutd, workoutd-poweroff.path, its oneshot removing the flag and calling
# systemctl poweroff; poweroff.target masked so the VM survives) works for the service's user.
# The engine half (issue 58's BatteryWatch): the level lowered through the stub gives the
# low-battery event, then critical ends the session with cause lowBattery, exported, and the
# service itself asks for the poweroff; every recorded point is still there.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
require_workoutd "$name"
problems=()
problem() { problems+=("$*"); }
engine=()
engine_problem() { engine+=("$*"); }

modinfo sbs-battery > /dev/null 2>&1 || { result "$name" SKIP "this kernel has no sbs-battery module"; exit 0; }

# i2c-stub again with the Smart Battery's address beside the BMP280's, the BMP280 preloaded again.
for _ in $(seq 20); do rmmod i2c_stub 2> /dev/null && break; sleep 0.5; done
modprobe i2c-stub chip_addr=0x76,0x0b || { result "$name" FAIL "modprobe i2c-stub chip_addr=0x76,0x0b"; exit 0; }
systemctl restart workoutd-board.service
bus=$(for d in /sys/bus/i2c/devices/i2c-*; do
  [[ $(cat "$d/name") == "SMBus stub driver" ]] && echo "${d##*/i2c-}"
done | head -n 1)
[[ -n $bus ]] || { result "$name" FAIL "no i2c-stub adapter"; exit 0; }
# Smart Battery Data Specification 1.1 registers, words: SpecificationInfo (1.1, no PEC),
# BatteryMode (capacities in mA), Voltage (mV), Current (mA, signed), RelativeStateOfCharge (%),
# AverageTimeToEmpty (min), BatteryStatus (INITIALIZED | DISCHARGING).
sbs() { i2cset -f -y "$bus" 0x0b "$1" "$2" w; }
sbs 0x1a 0x0021
sbs 0x03 0x0000
sbs 0x09 11100
sbs 0x0a 0xfa24 # -1500 mA
sbs 0x0d 80
sbs 0x12 300
sbs 0x16 0x00c0
modprobe sbs-battery
echo sbs-battery 0x0b > "/sys/bus/i2c/devices/i2c-$bus/new_device"
supply=/sys/class/power_supply/sbs-$bus-000b
wait_for 10 test -e "$supply/capacity" || problem "no $supply after binding sbs-battery: $(dmesg | grep -i sbs | tail -3)"
capacity=$(cat "$supply/capacity" 2> /dev/null)
[[ $capacity == 80 ]] || problem "$supply/capacity reads '$capacity', the stub says 80"
note "sysfs: capacity $capacity %, status $(cat "$supply/status" 2> /dev/null), voltage_now $(cat "$supply/voltage_now" 2> /dev/null) uV"

# The service's gauge finds it (auto: the first Battery).
found() { [[ $(wkd_status | jq -r '.devices.battery // ""') == *"sbs-$bus-000b"* ]]; }
wait_for 20 found || problem "the service's battery device: $(wkd_status | jq -c '.devices.battery')"
journalctl -u workoutd -b --no-pager | grep -q "battery sbs-$bus-000b" ||
  problem "no log line of the battery sbs-$bus-000b"

# The poweroff chain as the service's user would start it, the real poweroff masked.
systemctl mask --runtime poweroff.target > /dev/null
systemctl is-enabled workoutd-poweroff.path > /dev/null || problem "workoutd-poweroff.path is not enabled by the package"
runs() { journalctl -u workoutd-poweroff.service -b --no-pager -o cat | grep -c "Starting\|Started\|Finished\|Failed\|Deactivated"; }
before=$(runs)
runuser -u workoutd -- sh -c 'echo test > /run/workoutd/poweroff' || problem "the service's user cannot write /run/workoutd/poweroff"
ran() { (($(runs) > before)) && [[ ! -e /run/workoutd/poweroff ]]; }
wait_for 20 ran || problem "workoutd-poweroff.service did not run and remove the flag: $(systemctl status workoutd-poweroff.service --no-pager 2>&1 | tail -5 | xargs)"
journalctl -u workoutd-poweroff.service -b --no-pager -o cat | grep -qi "masked\|poweroff" ||
  problem "no sign that systemctl poweroff was called: $(journalctl -u workoutd-poweroff.service -b --no-pager -o cat | tail -3 | xargs)"
systemctl is-active -q workoutd.service || problem "workoutd is not running after the refused poweroff"

# The engine half: a ride, the level lowered to low, then to critical.
state_is running || { workoutctl start > /dev/null; wait_for 30 state_is running; }
session=$(wkd_field .sessionId)
sleep 4
sbs 0x0d 12
events() { timeout 10 workoutctl show "$session" --json 2> /dev/null | jq -c '[.events[] | select(.kind | test("attery"))]'; }
low() { [[ $(events) == *[Ll]ow* ]]; }
wait_for 20 low || engine_problem "no low-battery event at 12 %: $(events)"
points=$(wkd_field .points)
before=$(runs)
sbs 0x0d 4
wait_for 60 state_is ended || engine_problem "critical 4 %: state '$(wkd_state)', want ended"
timeout 10 workoutctl show "$session" --json 2> /dev/null | grep -q lowBattery ||
  engine_problem "session $session not ended with cause lowBattery"
short=$(sqlite3 "$WORKOUTD_DB" "SELECT substr(uuid, 1, 8) FROM session WHERE id = $session")
wait_for 30 compgen -G "/var/lib/workoutd/exports/*-$short.fit" > /dev/null ||
  engine_problem "session $session was not exported"
journalctl -u workoutd -b --no-pager -o cat | grep -q "battery: powering off" ||
  engine_problem "the service did not ask for the poweroff"
wait_for 20 ran || engine_problem "workoutd-poweroff.service was not started by the service's flag"
stored=$(sqlite3 "$WORKOUTD_DB" "SELECT count(*) FROM point WHERE session_id = $session")
((${stored:-0} >= ${points:-0})) || engine_problem "$stored points stored, status had reported $points"

# Leave the board as it was: the charger back on the level, the driver gone, the poweroff back.
sbs 0x0d 80
echo 0x0b > "/sys/bus/i2c/devices/i2c-$bus/delete_device"
# The refused poweroffs must leave nothing behind that goes through once poweroff.target is
# unmasked (a queued job, or a shutdown logind scheduled): the tests after this one need the VM.
note "before unmasking: jobs '$(systemctl list-jobs --no-legend 2> /dev/null | xargs)'; logind scheduled '$(busctl get-property org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager ScheduledShutdown 2> /dev/null)'"
journalctl -b --no-pager -o cat -u systemd-logind -u workoutd-poweroff.service | tail -n 8 | sed 's/^/  /'
systemctl list-jobs --no-legend 2> /dev/null | awk '$2 ~ /poweroff|shutdown|final/ { print $1 }' | xargs -r systemctl cancel
shutdown -c 2> /dev/null || true
systemctl unmask --runtime poweroff.target > /dev/null

if ((${#problems[@]})); then
  result "$name" FAIL "board: $(IFS=';'; echo "${problems[*]}")${engine:+; engine: $(IFS=';'; echo "${engine[*]}")}"
elif ((${#engine[@]})); then
  result "$name" FAIL "board half passed; engine: $(IFS=';'; echo "${engine[*]}")"
else
  result "$name" PASS "sbs-battery on i2c-stub read by the service; low event, lowBattery end, exported, poweroff asked and run (masked)"
fi
