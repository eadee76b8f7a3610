#!/bin/bash
# The optional buzzer (the gpio-sim chip's BUZZER output line) chirps for the session: starting
# gives a short beep, the end of the countdown a long one (0.6 s), and it is silent otherwise.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
require_workoutd "$name"

case $(wkd_state) in
  prepared | running | paused) workoutctl stop; wait_for 15 state_is ended ;;
esac
pin=$(sim_chip_dir)/sim_gpio$(line_offset BUZZER)/value
sleep 2
quiet=$(<"$pin")
# Sample the pin as fast as the shell reads a file (no fork per sample) across start and countdown.
workoutctl start > /dev/null &
samples="" end=$((SECONDS + 7))
while ((SECONDS < end)); do samples+=$(<"$pin"); done
wait
beeps=${samples//0/}
note "${#samples} samples, ${#beeps} lit; quiet before: $quiet, last: ${samples: -1}"
if [[ $quiet != 0 ]]; then
  result "$name" FAIL "the buzzer sounds while idle"
elif ((${#beeps} == 0)); then
  result "$name" FAIL "no beep heard in ${#samples} samples across start and the countdown"
elif [[ ${samples: -1} != 0 ]]; then
  result "$name" FAIL "the buzzer stays on after the countdown"
else
  result "$name" PASS "beeped: ${#beeps} of ${#samples} samples lit across start and the countdown, silent after"
fi
