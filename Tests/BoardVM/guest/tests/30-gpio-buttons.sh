#!/bin/bash
# The gpio-sim chip "workoutd-buttons" with its named lines is visible to the
# libgpiod 1.6 tools; a simulated press of START is seen as edges and levels;
# the LED output line reaches the pin.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
problems=()

gpiodetect
chip_line=$(gpiodetect | grep -F "[$BUTTON_CHIP_LABEL]") ||
  { result "$name" FAIL "no gpiochip labelled $BUTTON_CHIP_LABEL"; exit 0; }
chip=${chip_line%% *}
gpioinfo "$chip"
i=0
for line in $BUTTON_LINES; do
  found=$(gpiofind "$line")
  [[ $found == "$chip $i" ]] || problems+=("gpiofind $line gave '$found', want '$chip $i'")
  i=$((i + 1))
done
start=$(line_offset START) led=$(line_offset LED)
al=(); [[ $BUTTONS_ACTIVE_LOW == 1 ]] && al=(--active-low)

# Levels: nothing else may hold the line while gpioget reads it.
idle=$(gpioget "${al[@]}" "$chip" "$start")
button_set START pressed; sleep 0.1
held=$(gpioget "${al[@]}" "$chip" "$start")
button_set START released; sleep 0.1
released=$(gpioget "${al[@]}" "$chip" "$start")
[[ $idle/$held/$released == 0/1/0 ]] || problems+=("START reads $idle/$held/$released idle/pressed/released, want 0/1/0")

# Edges: watch START and press it twice, one edge down and one up per press.
t0=$EPOCHREALTIME
timeout 20 gpiomon "${al[@]}" --num-events=4 --format='%e %o %s.%n' "$chip" "$start" > /tmp/gpiomon.out 2>&1 &
monitor=$!
sleep 1
button_press START 0.2
sleep 0.3
button_press START 0.2
wait "$monitor"; rc=$?
note "gpiomon (rc $rc, $(since "$t0") s):"; cat /tmp/gpiomon.out
events=$(grep -c -E '^[01] ' /tmp/gpiomon.out)
[[ $rc == 0 && $events == 4 ]] || problems+=("gpiomon saw $events of 4 edges (rc $rc)")
[[ $(awk '{printf "%s", $1}' /tmp/gpiomon.out) == 1010 ]] || problems+=("edges are not press/release/press/release")

# LED: drive the output line; the simulator shows the level on the pin.
gpioset --mode=time --sec=2 "$chip" "$led=1" &
setter=$!; sleep 0.7
led_value=$(cat "$(sim_chip_dir)/sim_gpio$led/value")
wait "$setter"
[[ $led_value == 1 ]] || problems+=("LED pin reads $led_value while driven high")

if ((${#problems[@]})); then
  result "$name" FAIL "$(IFS=';'; echo "${problems[*]}")"
else
  result "$name" PASS "$chip [$BUTTON_CHIP_LABEL] lines $BUTTON_LINES; 2 presses = 4 edges; LED drives the pin"
fi
