#!/bin/bash
# Create the qemu-virt board's devices at boot: what a Pi gets from its device
# tree and real chips. Idempotent (a restart of the unit changes nothing).
#  - gpio-sim chip "workoutd-buttons": START, LAP, STOP buttons (idle high,
#    active low) and an LED output line;
#  - a BMP280 at 0x76 on i2c-stub, preloaded with the datasheet's example
#    calibration and raw readings (T = 25.08 degC, P = 100653.27 Pa).
set -euo pipefail
# shellcheck source=board.env
source /usr/lib/workoutd-board/board.env

setup_buttons() {
  local cfg=/sys/kernel/config/gpio-sim/workoutd-board bank line name i=0 sim
  if [[ -f $cfg/live && $(cat "$cfg/live") == 1 ]]; then return; fi
  mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config
  bank=$cfg/bank0
  mkdir -p "$bank"
  read -ra line_names <<< "$BUTTON_LINES"
  echo "${#line_names[@]}" > "$bank/num_lines"
  echo "$BUTTON_CHIP_LABEL" > "$bank/label"
  for name in "${line_names[@]}"; do
    line=$bank/line$i
    mkdir -p "$line"
    echo "$name" > "$line/name"
    i=$((i + 1))
  done
  echo 1 > "$cfg/live"
  # gpio-sim's sim_gpioN/pull is the level the outside world puts on an input
  # line: pull the buttons up so they read "not pressed".
  sim=/sys/devices/platform/$(cat "$cfg/dev_name")/$(cat "$bank/chip_name")
  local idle=pull-down
  [[ $BUTTONS_ACTIVE_LOW == 1 ]] && idle="pull-up"
  i=0
  for name in "${line_names[@]}"; do
    [[ " $BUTTON_INPUTS " == *" $name "* ]] && echo "$idle" > "$sim/sim_gpio$i/pull"
    i=$((i + 1))
  done
  echo "gpio-sim: $(cat "$bank/chip_name") [$BUTTON_CHIP_LABEL] lines: $BUTTON_LINES"
}

i2c_bus_by_name() {
  local dev
  for dev in /sys/bus/i2c/devices/i2c-*; do
    [[ $(cat "$dev/name") == "$1" ]] && { echo "${dev##*i2c-}"; return 0; }
  done
  return 1
}

# Write bytes to consecutive registers from $3 on, in one SMBus "I2C block"
# write (<= 32 bytes; one i2cset process instead of one per byte).
poke() {
  local bus=$1 addr=$2 reg=$3 byte values=(); shift 3
  for byte in "$@"; do values+=("0x$byte"); done
  i2cset -y "$bus" "$addr" "$reg" "${values[@]}" i
}

setup_barometer() {
  local bus addr=$BMP280_I2C_ADDRESS
  bus=$(i2c_bus_by_name "$BMP280_I2C_ADAPTER_NAME") ||
    { echo "no I2C adapter named '$BMP280_I2C_ADAPTER_NAME' (is i2c-stub loaded?)" >&2; return 1; }
  [[ -e /dev/i2c-$bus ]] || udevadm settle --timeout=5
  # chip id register 0xD0 = 0x58 means BMP280
  poke "$bus" "$addr" 0xD0 58
  # calibration NVM 0x88..0x9F, little-endian dig_T1..dig_P9 (datasheet example)
  poke "$bus" "$addr" 0x88 70 6b 43 67 18 fc 7d 8e 43 d6 d0 0b 27 0b 8c 00 f9 ff 8c 3c f8 c6 70 17
  # raw readings press_msb..temp_xlsb 0xF7..0xFC: adc_P = 415148, adc_T = 519888
  poke "$bus" "$addr" 0xF7 65 5a c0 7e ed 00
  echo "i2c-stub: BMP280 at $addr on i2c-$bus ($BMP280_I2C_ADAPTER_NAME)"
}

setup_buttons
setup_barometer
