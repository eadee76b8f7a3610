#!/bin/bash
# The status LED (the gpio-sim chip's LED output line) follows the session: dark when idle with
# a fix, blinking evenly (1 Hz) when paused, a short flash every 3 s while recording.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
require_workoutd "$name"

led_value() { cat "$(sim_chip_dir)/sim_gpio$(line_offset LED)/value"; }
# sample COUNT PERIOD: the LED's values, one character each
sample() {
  local out="" i
  for ((i = 0; i < $1; i++)); do out+=$(led_value); sleep "$2"; done
  echo "$out"
}
ones() { local s=${1//0/}; echo "${#s}"; }
problems=()

case $(wkd_state) in
  prepared | running | paused) workoutctl stop; wait_for 15 state_is ended ;;
esac
has_fix() { [[ $(wkd_field .gps) == fix ]]; }
wait_for 30 has_fix || problems+=("no GPS fix (gps '$(wkd_field .gps)')")
idle=$(sample 20 0.1)
note "idle ($(wkd_field .indicator)): $idle"
[[ $(ones "$idle") == 0 ]] || problems+=("idle with a fix: the LED should be dark, saw $idle")

workoutctl start
wait_for 20 state_is running || problems+=("did not start")
running=$(sample 40 0.1)
note "running ($(wkd_field .indicator)): $running"
(( $(ones "$running") <= 8 )) || problems+=("recording: mostly dark with short flashes expected, saw $running")

workoutctl pause
wait_for 5 state_is paused || problems+=("did not pause")
paused=$(sample 40 0.1)
note "paused ($(wkd_field .indicator)): $paused"
lit=$(ones "$paused")
(( lit >= 8 && lit <= 32 )) || problems+=("paused: even blinking expected, saw $paused")
[[ $(wkd_field .indicator) == paused ]] || problems+=("status says the LED shows '$(wkd_field .indicator)'")
workoutctl resume

if ((${#problems[@]})); then
  result "$name" FAIL "$(IFS=';'; echo "${problems[*]}")"
else
  result "$name" PASS "idle dark; recording $(ones "$running")/40 lit; paused $lit/40 lit"
fi
