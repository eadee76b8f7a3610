#!/bin/bash
# A BME280 in the BMP280's place: the i2c-stub chip is given the BME280's id (0x60), humidity
# trimming and a raw humidity reading. After a restart the service finds a BME280, and the
# relative humidity that trimming and reading stand for is in the status and in the recorded
# points, beside the same pressure. The stub is a BMP280 again afterwards.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
require_workoutd "$name"

addr=$BMP280_I2C_ADDRESS
bus=""
for dev in /sys/bus/i2c/devices/i2c-*; do
  [[ $(cat "$dev/name") == "$BMP280_I2C_ADAPTER_NAME" ]] && bus=${dev##*i2c-}
done
[[ -n $bus ]] || { result "$name" FAIL "no I2C adapter named '$BMP280_I2C_ADAPTER_NAME'"; exit 0; }
# Bytes to consecutive registers from $1 on, in one SMBus I2C-block write.
poke() {
  local reg=$1 byte values=(); shift
  for byte in "$@"; do values+=("0x$byte"); done
  i2cset -y "$bus" "$addr" "$reg" "${values[@]}" i
}

barometer_is() { [[ $(wkd_status | jq -r '.devices.barometer // ""') == "available"*"$1"* ]]; }
restart_service() {
  systemctl restart workoutd.service
  wait_for 60 state_is running
}
problems=()
state_is running || { workoutctl start; wait_for 20 state_is running; }

# BST-BME280-DS002 §5.4.1 chip id 0x60; §4.2.2 dig_H1 at 0xA1 and dig_H2..dig_H6 at 0xE1..0xE7:
# H1 75, H2 362, H3 0, H4 313, H5 50, H6 30 (the calibration of the unit tests' independent
# vectors); humidity data 0xFD..0xFE: adc_H 30000. With the datasheet's BMP280 example for
# temperature (t_fine 128422), bme280_compensate_H_int32 gives 56317/1024 = 54.997 %RH.
poke 0xD0 60
poke 0xA1 4b
poke 0xE1 6a 01 00 13 29 03 1e
poke 0xFD 75 30
expected=54.997
restart_service || problems+=("not running again after the restart: $(wkd_state)")
wait_for 60 barometer_is BME280 || problems+=("no BME280 found: $(wkd_status | jq -c .devices.barometer)")
has_humidity() { [[ -n $(wkd_field .humidity) ]]; }
wait_for 30 has_humidity || problems+=("no humidity in status")
humidity=$(wkd_field .humidity)
session=$(wkd_field .sessionId)
sleep 3
IFS='|' read -r recorded_humidity recorded_pressure < <(sqlite3 "$WORKOUTD_DB" \
  "SELECT humidity, pressure FROM point WHERE session_id = $session AND humidity IS NOT NULL ORDER BY seq DESC LIMIT 1")
note "status: $humidity %RH; recorded point: $recorded_humidity %RH, $recorded_pressure Pa"
close_to() { awk -v a="${1:-nan}" -v b="$2" -v d="$3" 'BEGIN { exit !(a == a && a - b < d && b - a < d) }'; }
close_to "$humidity" "$expected" 0.01 || problems+=("status humidity '$humidity' %RH, expected $expected")
close_to "$recorded_humidity" "$expected" 0.01 || problems+=("recorded humidity '$recorded_humidity' %RH, expected $expected")
close_to "$recorded_pressure" 100653.27 0.5 || problems+=("recorded pressure '$recorded_pressure' Pa, expected 100653.27")

# A BMP280 again (humidity registers left as they are: a BMP280 has none to read).
poke 0xD0 58
restart_service || problems+=("not running after going back to the BMP280")
wait_for 60 barometer_is BMP280 || problems+=("BMP280 not found again: $(wkd_status | jq -c .devices.barometer)")
has_no_humidity() { [[ -z $(wkd_field .humidity) ]]; }
wait_for 15 has_no_humidity || problems+=("a BMP280 still reports humidity $(wkd_field .humidity)")

if ((${#problems[@]})); then
  result "$name" FAIL "$(IFS=';'; echo "${problems[*]}")"
else
  result "$name" PASS "BME280 found: $humidity %RH in status, $recorded_humidity %RH and $recorded_pressure Pa recorded; BMP280 again after"
fi
