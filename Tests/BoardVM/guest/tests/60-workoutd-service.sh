#!/bin/bash
# workoutd.service starts at boot, reaches READY (Type=notify: "active" only
# after READY=1), runs as user workoutd with the watchdog armed, and answers
# `workoutctl status --json`; its user can open the board's devices (udev).
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
require_workoutd "$name"

active() { [[ $(systemctl show -p ActiveState --value workoutd.service) == active ]]; }
wait_for 60 active
systemctl show -p ActiveState,SubState,MainPID,Type,WatchdogUSec,NRestarts,Result,ActiveEnterTimestampMonotonic workoutd.service
systemctl status --no-pager workoutd.service | head -15
show() { systemctl show -p "$1" --value workoutd.service; }
pid=$(show MainPID)
user=$(ps -o user= -p "$pid" 2>/dev/null | xargs)
status=$(wkd_status)
note "status: $status"
state=$(jq -r '.state // empty' <<< "$status" 2>/dev/null)
ready_s=$(awk -v us="$(show ActiveEnterTimestampMonotonic)" 'BEGIN{printf "%.1f", us / 1e6}')

problems=()
[[ $(show ActiveState)/$(show SubState) == active/running ]] || problems+=("$(show ActiveState)/$(show SubState), want active/running")
[[ $pid -gt 0 ]] || problems+=("no MainPID")
[[ $user == workoutd ]] || problems+=("runs as '$user', want workoutd")
[[ $(show Type) == notify ]] || problems+=("Type=$(show Type), want notify")
[[ $(show WatchdogUSec) != 0 && $(show WatchdogUSec) != infinity ]] || problems+=("no WatchdogSec")
[[ $(show NRestarts) == 0 ]] || problems+=("restarted $(show NRestarts) times since boot")
[[ $state =~ ^(notStarted|prepared|running|paused|stopped|ended)$ ]] || problems+=("workoutctl status --json gave state '${state}'")
# the devices the daemon opens, as its own user
ls -l /dev/gpiochip* /dev/i2c-* /dev/workoutd-i2c 2>&1
chip=$(gpio_chip_by_label "$BUTTON_CHIP_LABEL")
# shellcheck disable=SC2046  # the arguments are words
runuser -u workoutd -- gpioinfo $(gpio_info_args "${chip:-none}") > /dev/null ||
  problems+=("user workoutd cannot open the gpiochip labelled $BUTTON_CHIP_LABEL (udev rule?)")
bus=$(grep -l -x "$BMP280_I2C_ADAPTER_NAME" /sys/bus/i2c/devices/i2c-*/name | sed 's|.*/i2c-\([0-9]*\)/name|\1|')
runuser -u workoutd -- i2cget -y "$bus" "$BMP280_I2C_ADDRESS" 0xD0 b > /dev/null ||
  problems+=("user workoutd cannot read the BMP280 on /dev/i2c-$bus (udev rule?)")

# At READY the service lets go of its start-up code's pages (madvise, under the unit's
# system call filter and ProtectProc=), and says how many KiB.
released() { journalctl -b -u workoutd --no-pager -o cat | sed -n "s/.*let go of \([0-9]*\) KiB of start-up code's pages.*/\1/p" | tail -1; }
has_released() { [[ -n $(released) ]]; }
wait_for 10 has_released
note "$(journalctl -b -u workoutd --no-pager -o cat | grep -m1 "start-up code"); now $(grep VmRSS "/proc/$pid/status" | xargs)"
[[ $(released) -gt 0 ]] 2>/dev/null || problems+=("no start-up code's pages let go of at READY: $(journalctl -b -u workoutd --no-pager -o cat | grep -m1 "start-up code")")

if ((${#problems[@]})); then
  journalctl -b -u workoutd --no-pager | tail -30
  result "$name" FAIL "$(IFS=';'; echo "${problems[*]}")"
else
  result "$name" PASS "READY at ${ready_s} s after boot, pid $pid as workoutd, watchdog $(show WatchdogUSec), state $state"
fi
