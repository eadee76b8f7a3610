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
# Recording is a 50 ms flash every 3 s (IndicatorPattern.running): too short for the 0.1 s
# samples above, which saw 0 of 40 lit as often as 1. Polled every 5 ms for 7.5 s instead:
# 2 or 3 flashes, none lit longer than 0.3 s (TCG's timing), dark nearly all the time.
read -r flashes lit polls longest < <(python3 - "$(sim_chip_dir)/sim_gpio$(line_offset LED)/value" <<'PY'
import sys, time
value = open(sys.argv[1], "rb", buffering=0)
end = time.monotonic() + 7.5
previous, flashes, lit, polls, since, longest = b"0", 0, 0, 0, None, 0.0
while time.monotonic() < end:
    value.seek(0)
    now, current = time.monotonic(), value.read(1)
    polls += 1
    if current == b"1":
        lit += 1
        if previous != b"1":
            flashes, since = flashes + 1, now
    elif previous == b"1" and since is not None:
        longest = max(longest, now - since)
    previous = current
    time.sleep(0.005)
print(flashes, lit, polls, round(longest * 1000))
PY
)
running="$flashes flashes in 7.5 s, $lit of $polls polls lit, longest ${longest} ms"
note "running ($(wkd_field .indicator)): $running"
if ! [[ $flashes =~ ^[0-9]+$ && $longest =~ ^[0-9]+$ ]] || (( flashes < 2 || flashes > 3 )) \
  || (( lit * 10 > polls || longest > 300 )); then
  problems+=("recording: a short flash every 3 s expected, saw $running")
fi

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
  result "$name" PASS "idle dark; recording $running; paused $lit/40 lit"
fi
