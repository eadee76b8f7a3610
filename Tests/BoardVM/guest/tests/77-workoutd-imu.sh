#!/bin/bash
# hil-timeout: 420
# An IMU on the I2C bus: a BMI160 at 0x68 on i2c-stub (its chip id, 100 Hz and ±16 g preloaded;
# the accelerometer reading 1 g on z), bound to the kernel's own bmi160 driver, with [imu]
# configured. udev gives its /dev/iio:deviceN to the service's group and starts
# workoutd-imu@iio:deviceN.service, which sets its buffer up as root (an hrtimer trigger at
# 100 Hz, gyroscope, accelerometer and timestamp, CLOCK_MONOTONIC) and turns it on.
# The board half: the service's user reads records from the node at about 100 a second, stamped
# on the monotonic clock, and a new reading written to the chip is in the records that follow.
# The service half: workoutd reads the sensor; a ride records the road's buzz played into the
# chip; a fall played into it (a 6 g jolt, then lying on its side) sounds the incident alarm
# (event, LED, status), on again after a kill -9 of the service, and a press of lap answers it
# without marking a lap.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
require_workoutd "$name"
problems=()
problem() { problems+=("$*"); note "PROBLEM: $*"; }
modinfo bmi160_i2c > /dev/null 2>&1 || { result "$name" FAIL "this image has no bmi160_i2c module"; exit 0; }
config=/etc/workoutd/workoutd.toml
cp "$config" /tmp/workoutd.toml.before-imu
# [imu] for this sensor (the unit's condition reads it); the service is restarted with it only
# after the board half, as an IIO node has one reader at a time.
toml_sections "$config" imu 'enabled = true
device = "bmi160"
still_seconds = 3
countdown_seconds = 20'
workoutd --config "$config" --check-config > /dev/null || { result "$name" FAIL "[imu] refused: $(workoutd --config "$config" --check-config 2>&1 | head -c 300)"; cp /tmp/workoutd.toml.before-imu "$config"; exit 0; }

# i2c-stub again with the BMI160's address beside the ones it had, the BMP280 preloaded again.
# (The parameter lists all ten of its slots, in decimal, the unused ones 0.)
addresses=$(tr ',' '\n' < /sys/module/i2c_stub/parameters/chip_addr 2> /dev/null |
  awk '$1 != 0 && $1 != 104 { printf "%s0x%02x", sep, $1; sep = "," }')
addresses=${addresses:-0x76}
for _ in $(seq 20); do rmmod i2c_stub 2> /dev/null && break; sleep 0.5; done
if ! modprobe i2c-stub "chip_addr=$addresses,0x68"; then
  modprobe i2c-stub "chip_addr=$addresses" && systemctl restart workoutd-board.service
  result "$name" FAIL "modprobe i2c-stub chip_addr=$addresses,0x68"
  exit 0
fi
systemctl restart workoutd-board.service
bus=$(grep -l -x "SMBus stub driver" /sys/bus/i2c/devices/i2c-*/name | sed 's|.*/i2c-\([0-9]*\)/name|\1|' | head -n 1)
[[ -n $bus ]] || { result "$name" FAIL "no i2c-stub adapter"; exit 0; }
# BMI160 datasheet (BST-BMI160-DS000) §2.11: CHIP_ID 0x00 = 0xD1; ACC_CONF 0x40 = 0x28
# (100 Hz), ACC_RANGE 0x41 = 0x0C (±16 g, 2048 LSB/g: a fall's jolt fits); GYR_CONF 0x42 =
# 0x28, GYR_RANGE 0x43 = 0x00 (±2000 °/s); DATA 0x0C..0x17: gyro x, y, z then accel x, y, z,
# little-endian. (The driver's probe resets the chip and sets its modes, not its ranges.)
i2cset -y "$bus" 0x68 0x00 0xd1 b
i2cset -y "$bus" 0x68 0x40 0x28 0x0c 0x28 0x00 i
i2cset -y "$bus" 0x68 0x0c 0 0 0 0 0 0 0 0 0 0 0x00 0x08 i
modprobe bmi160_i2c || problem "modprobe bmi160_i2c"
echo bmi160 0x68 > "/sys/bus/i2c/devices/i2c-$bus/new_device" || problem "binding bmi160 at 0x68"
find_device() {
  local d
  for d in /sys/bus/iio/devices/iio:device*; do [[ $(cat "$d/name" 2> /dev/null) == bmi160 ]] && { echo "$d"; return 0; }; done
  return 1
}
wait_for 10 find_device > /dev/null || { result "$name" FAIL "no bmi160 IIO device: $(dmesg | grep -i bmi160 | tail -3)"; exit 0; }
dev=$(find_device) kernel=$(basename "$(find_device)")
unit="workoutd-imu@$kernel.service"
set_up() { [[ $(systemctl show -p ActiveState --value "$unit") == active ]]; }
wait_for 20 set_up || problem "$unit is $(systemctl show -p ActiveState,Result --value "$unit" | tr '\n' ' '): $(journalctl -u "$unit" -n 5 --no-pager -o cat | tr '\n' ' '); modules: $(lsmod | awk '/iio|trig/ {print $1}' | tr '\n' ' '); configfs: $(ls /sys/kernel/config/iio/triggers 2>&1 | tr '\n' ' ')"
note "$unit: $(journalctl -u "$unit" --no-pager -o cat | grep -- "$kernel:" | tr '\n' ';')"
node=/dev/$kernel
[[ $(stat -c '%G %a' "$node") == "workoutd 640" ]] || problem "$node is $(stat -c '%U:%G %a' "$node"), not workoutd's group, 640"
[[ $(cat "$dev/buffer/enable") == 1 ]] || problem "the buffer is not on"
[[ $(cat "$dev/trigger/current_trigger") == "workoutd-${kernel/:/-}" ]] || problem "trigger $(cat "$dev/trigger/current_trigger")"
[[ $(cat "$dev/current_timestamp_clock") == monotonic ]] || problem "timestamp clock $(cat "$dev/current_timestamp_clock")"

# The service's user reads the node: 2 s of records, then a reading written mid-way.
read_log=/tmp/imu-read.txt
runuser -u workoutd -- python3 - "$node" > "$read_log" 2>&1 <<'PY' &
import os, select, struct, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)
end = time.monotonic() + 4
while time.monotonic() < end:
    select.select([fd], [], [], 0.5)
    try:
        data = os.read(fd, 24 * 64)
    except BlockingIOError:
        continue
    for i in range(0, len(data) - 23, 24):
        ax, ay, az = struct.unpack_from("<3h", data, i + 6)
        ts, = struct.unpack_from("<q", data, i + 16)
        print("%.4f %.4f %d %d %d" % (time.monotonic(), ts / 1e9, ax, ay, az))
PY
reader=$!
sleep 2
# 0.5 g on x, 1 g on z: a board tilted.
i2cset -f -y "$bus" 0x68 0x12 0x00 0x04 0x00 0x00 0x00 0x08 i
wait "$reader"
# The first read also drains what the buffer held since the set-up (up to its 256 records):
# the rate is counted from the reader's start.
start=$(head -n 1 "$read_log" | cut -d' ' -f1)
records=$(awk -v s="$start" '$2 >= s' "$read_log" | wc -l)
note "$(wc -l < "$read_log") records read, $records stamped in the 4 s from $start; first: $(head -n 1 "$read_log"); last: $(tail -n 1 "$read_log")"
(( records >= 300 && records <= 450 )) || problem "$records records in 4 s, not about 400: $(head -c 300 "$read_log")"
awk '$5 != 2048 { bad++ } END { exit bad > 0 }' "$read_log" || problem "accel z was not 2048 (1 g) throughout"
grep -q ' 1024 0 2048$' "$read_log" || problem "the tilted reading (x 1024) never came"
# (The backlog is the buffer's first records since the set-up, of any age: a full kfifo keeps
# what it has and drops what comes. The service leaves such records out.)
awk '{ if ($1 - $2 < -0.05) bad++ } END { exit bad > 0 }' "$read_log" ||
  problem "a timestamp after its read: not on CLOCK_MONOTONIC"
awk -v s="$start" '$2 >= s && $1 - $2 > 1 { bad++ } END { exit bad > 0 }' "$read_log" ||
  problem "records read more than 1 s after they were taken (the watermark is 0.25 s)"

# The service half: workoutd restarted with [imu] reads the sensor.
board_problems=${#problems[@]}
motion() { python3 "$HIL_DIR/imu_motion.py" "$bus" 0x68 2048 "$@"; }
motion 0.1:0,0,1
systemctl restart workoutd.service
imu_up() { [[ $(wkd_status | jq -r '.devices.imu // ""') == *bmi160* ]]; }
wait_for 30 imu_up || problem "the service's imu device: $(wkd_status | jq -c '.devices.imu'); $(journalctl -u workoutd -b --no-pager -o cat | grep -i 'imu\|inertial' | tail -3 | xargs)"
state_is running || { workoutctl start > /dev/null; wait_for 30 state_is running; }
session=$(wkd_field .sessionId)
# The road: 0.3 g alternating on z at 25 Hz for 6 s; the points keep its vibration.
motion 6:buzz:0.3 &
buzzing=$!
sleep 4
live=$(wkd_status | jq -r '.lastPoint.vibration // empty')
wait "$buzzing"
motion 0.1:0,0,1
awk -v v="${live:-0}" 'BEGIN { exit !(v > 1 && v < 4) }' || problem "the live point's vibration ${live:-none} m/s², want about 2.9"
vibration=$(sqlite3 "$WORKOUTD_DB" "SELECT round(max(vibration), 2) FROM point WHERE session_id = $session")
note "session $session: the road's vibration up to ${vibration:-none} m/s², last point $(wkd_status | jq -c '.lastPoint | {vibration, peakAcceleration}')"
awk -v v="${vibration:-0}" 'BEGIN { exit !(v > 1 && v < 4) }' || problem "recorded vibration ${vibration:-none} m/s², want about 2.9 (0.3 g RMS)"
# The fall, with the GPS stopped: riding is the session running with no speed to say it is
# still (the test board's GPS is a boat drifting at 0-3 m/s, too slow to count as riding).
systemctl stop gpsd.socket gpsd.service 2> /dev/null
sleep 4
laps=$(sqlite3 "$WORKOUTD_DB" "SELECT count(*) FROM lap WHERE session_id = $session")
motion 0.1:3.6,0,4.8:4000,0,0 0.3:0.7,0,0.7:2000,0,0 5:1,0,0
suspected() { [[ $(wkd_field .incident.phase) == suspected ]]; }
wait_for 20 suspected || problem "no incident alarm after the fall: $(wkd_status | jq -c '{incident, indicator, devices: .devices.imu}')"
[[ $(wkd_field .indicator) == incident ]] || problem "the LED shows $(wkd_field .indicator), not incident"
note "alarm: $(wkd_status | jq -c '.incident')"
events() { timeout 10 workoutctl show "$session" --json 2> /dev/null | jq -c '[.events[] | select(.kind | test("incident")) | {kind, cause, detail}]'; }
[[ $(events) == *incidentSuspected* ]] || problem "no incidentSuspected event: $(events)"
# A crash while the alarm sounds (kill -9; systemd starts the service again): it sounds again.
crashed=$(systemctl show -p MainPID --value workoutd.service)
kill -9 "$crashed"
alarm_back() {
  local pid
  pid=$(systemctl show -p MainPID --value workoutd.service)
  [[ $pid != "$crashed" && $pid != 0 ]] && suspected
}
wait_for 30 alarm_back || problem "after kill -9 the alarm is not on again: $(wkd_status | jq -c '{state, incident, indicator}')"
journalctl -u workoutd -b --no-pager -o cat | grep -q "the incident alarm was on when the service stopped" ||
  problem "the restarted service did not say it carried the alarm on"
[[ $(wkd_field .indicator) == incident ]] || problem "after the restart the LED shows $(wkd_field .indicator), not incident"
note "after kill -9: $(wkd_status | jq -c '.incident')"
button_press LAP
answered() { [[ -z $(wkd_field .incident.phase) ]]; }
wait_for 10 answered || problem "lap pressed, the alarm still on: $(wkd_status | jq -c '.incident')"
[[ $(events) == *'"kind":"incidentCancelled","cause":"gpio"'* ]] || problem "no incidentCancelled by the button: $(events)"
after=$(sqlite3 "$WORKOUTD_DB" "SELECT count(*) FROM lap WHERE session_id = $session")
[[ $after == "$laps" ]] || problem "the press that answered the alarm marked a lap ($laps laps, then $after)"
state_is running || problem "the session is $(wkd_state) after the alarm, not running"
workoutctl stop > /dev/null
wait_for 30 state_is ended || problem "the session did not end: $(wkd_state)"
systemctl start gpsd.socket gpsd.service 2> /dev/null

# Put back: the configuration, the buffer off, the chip unbound, the trigger removed, i2c-stub
# as it was, and the service without [imu].
cp /tmp/workoutd.toml.before-imu "$config"
systemctl stop workoutd.service
echo 0 > "$dev/buffer/enable"
echo 0x68 > "/sys/bus/i2c/devices/i2c-$bus/delete_device"
rmdir "/sys/kernel/config/iio/triggers/hrtimer/workoutd-${kernel/:/-}" 2> /dev/null
for _ in $(seq 20); do rmmod i2c_stub 2> /dev/null && break; sleep 0.5; done
modprobe i2c-stub "chip_addr=$addresses" && systemctl restart workoutd-board.service
systemctl start workoutd.service

if ((${#problems[@]})); then
  result "$name" FAIL "$( ((board_problems)) || echo "board half passed; ")$(IFS='; '; echo "${problems[*]}")"
else
  result "$name" PASS "bmi160 on i2c-stub set up by $unit; $records records in 4 s read by the workoutd user, on CLOCK_MONOTONIC; the tilt seen; the service recorded vibration $vibration m/s², a fall sounded the alarm, on again after kill -9, lap answered it"
fi
