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
# A loaded host stretches the countdown: once it has ended (the session running), the long beep
# must fall silent within its 0.6 s and stay so; sample on for at most 10 s more to see that.
wait_for 20 state_is running || note "the countdown did not end: state $(wkd_state)"
end=$((SECONDS + 10)) quiet_run=0
while ((SECONDS < end && quiet_run < 200)); do
  sample=$(<"$pin") samples+=$sample
  if [[ $sample == 0 ]]; then quiet_run=$((quiet_run + 1)); else quiet_run=0; fi
done
beeps=${samples//0/}
note "${#samples} samples, ${#beeps} lit; quiet before: $quiet, last: ${samples: -1}, quiet at the end: $quiet_run"
if [[ $quiet != 0 ]]; then
  result "$name" FAIL "the buzzer sounds while idle"
elif ((${#beeps} == 0)); then
  result "$name" FAIL "no beep heard in ${#samples} samples across start and the countdown"
elif [[ ${samples: -1} != 0 ]]; then
  result "$name" FAIL "the buzzer stays on after the countdown"
else
  result "$name" PASS "beeped: ${#beeps} of ${#samples} samples lit across start and the countdown, silent after"
fi
