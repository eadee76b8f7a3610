#!/bin/bash
# The gpio-sim chip "workoutd-buttons" with its named lines is visible to
# libgpiod's tools (1.6 on bookworm, 2.x on trixie: the syntax is lib.sh's);
# a simulated press of START is seen as edges and levels; the LED output line
# reaches the pin.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
problems=()

[[ $GPIOD_MAJOR == [12] ]] || { result "$name" FAIL "libgpiod tools of an unknown version: $(gpiodetect --version 2>&1 | head -1)"; exit 0; }
note "libgpiod tools: $(gpiodetect --version | head -1)"
gpiodetect
chip=$(gpio_chip_by_label "$BUTTON_CHIP_LABEL") ||
  { result "$name" FAIL "no gpiochip labelled $BUTTON_CHIP_LABEL"; exit 0; }
# shellcheck disable=SC2046  # the arguments are words
gpioinfo $(gpio_info_args "$chip")
i=0
for line in $BUTTON_LINES; do
  found=$(gpio_find "$line")
  [[ $found == "$chip $i" ]] || problems+=("line $line found at '$found', want '$chip $i'")
  i=$((i + 1))
done
start=$(line_offset START) led=$(line_offset LED)
al=''; [[ $BUTTONS_ACTIVE_LOW == 1 ]] && al=-l

# Levels: nothing else may hold the line while gpioget reads it.
idle=$(gpio_get "$chip" "$start" $al)
button_set START pressed; sleep 0.1
held=$(gpio_get "$chip" "$start" $al)
button_set START released; sleep 0.1
released=$(gpio_get "$chip" "$start" $al)
[[ $idle/$held/$released == 0/1/0 ]] || problems+=("START reads $idle/$held/$released idle/pressed/released, want 0/1/0")

# Edges: watch START and press it twice, one edge down and one up per press.
t0=$EPOCHREALTIME
gpio_mon 20 "$chip" "$start" 4 $al > /tmp/gpiomon.out 2>&1 &
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
gpio_set_for 2 "$chip" "$led" 1 &
setter=$!
# Read while gpioset holds the line (2 s from when it has it): on a loaded host it may take a
# while to start, so the pin is looked at until it is high or gpioset has ended.
led_value=0
while kill -0 "$setter" 2> /dev/null; do
  led_value=$(cat "$(sim_chip_dir)/sim_gpio$led/value")
  [[ $led_value == 1 ]] && break
  sleep 0.05
done
wait "$setter"
[[ $led_value == 1 ]] || problems+=("LED pin reads $led_value while driven high")

if ((${#problems[@]})); then
  result "$name" FAIL "$(IFS=';'; echo "${problems[*]}")"
else
  result "$name" PASS "libgpiod v$GPIOD_MAJOR tools: $chip [$BUTTON_CHIP_LABEL] lines $BUTTON_LINES; 2 presses = 4 edges; LED drives the pin"
fi
