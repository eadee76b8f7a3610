#!/bin/bash
# The BMP280 on i2c-stub (the datasheet's example registers: 25.08 degC, 100653.27 Pa) gives that
# pressure, in the status and in the recorded points, with the altitude it stands for. Removing the stub mid-ride is a
# lost barometer (an event), the ride goes on; the stub back, the barometer is found again.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
require_workoutd "$name"

state_is running || { workoutctl start; wait_for 20 state_is running; }
session=$(wkd_field .sessionId)
problems=()
has_pressure() { [[ -n $(wkd_field .pressure) ]]; }
wait_for 30 has_pressure || problems+=("no barometer reading in status: $(wkd_status | jq -c .devices)")
pressure=$(wkd_field .pressure) p0=$(wkd_field .seaLevelPressure) source=$(wkd_field .seaLevelSource)
note "pressure $pressure Pa, sea level $p0 Pa ($source)"
awk -v p="$pressure" 'BEGIN { exit !(p > 100652.77 && p < 100653.77) }' ||
  problems+=("pressure $pressure Pa, the datasheet example is 100653.27 Pa")

# The altitude that pressure stands for (ISA: T0/L * (1 - (p/p0)^(R*L/(g*M)))).
expected=$(awk -v p="$pressure" -v p0="$p0" 'BEGIN {
  e = 8.31432 * 0.0065 / (9.80665 * 0.0289644); printf "%.3f", 288.15 / 0.0065 * (1 - (p / p0) ^ e) }')
sleep 3
IFS='|' read -r recorded_pressure recorded < <(sqlite3 "$WORKOUTD_DB" \
  "SELECT pressure, alt_baro FROM point WHERE session_id = $session AND alt_baro IS NOT NULL ORDER BY seq DESC LIMIT 1")
note "recorded point: $recorded_pressure Pa, altitude $recorded m (expected $expected m)"
awk -v p="${recorded_pressure:-nan}" 'BEGIN { exit !(p > 100652.77 && p < 100653.77) }' ||
  problems+=("recorded pressure '$recorded_pressure' Pa, the datasheet example is 100653.27 Pa")
awk -v a="${recorded:-nan}" -v b="$expected" 'BEGIN { d = a - b; exit !(a == a && d < 0.2 && d > -0.2) }' ||
  problems+=("recorded barometric altitude '$recorded' m, expected $expected m")

# Pull the barometer out: the stub module goes (the service does not hold the bus open).
pulled=no
for _ in $(seq 20); do
  if rmmod i2c_stub 2> /dev/null; then pulled=yes; break; fi
  sleep 0.5
done
[[ $pulled == yes ]] || problems+=("could not remove i2c-stub: $(lsmod | grep i2c_stub)")
lost() { [[ $(wkd_status | jq -r '.devices.barometer // ""') == lost* ]]; }
wait_for 15 lost || problems+=("barometer not reported lost: $(wkd_status | jq -c .devices.barometer)")
points=$(wkd_field .points)
more_points() { (( $(wkd_field .points) >= points + 3 )); }
wait_for 15 more_points || problems+=("the ride stopped recording without the barometer")
state_is running || problems+=("state '$(wkd_state)' after the barometer went")
events=$(timeout 10 workoutctl show "$session" --json | jq -c '[.events[] | select(.kind == "deviceLost")] | map(.detail)')
[[ $events == *barometer* ]] || problems+=("no deviceLost event for the barometer: $events")

# Plug it back: found again after its retry backoff.
modprobe i2c-stub chip_addr=0x76 && systemctl restart workoutd-board.service
available() { [[ $(wkd_status | jq -r '.devices.barometer // ""') == available* ]]; }
wait_for 60 available || problems+=("barometer not found again: $(wkd_status | jq -c .devices.barometer)")

if ((${#problems[@]})); then
  result "$name" FAIL "$(IFS=';'; echo "${problems[*]}")"
else
  result "$name" PASS "$recorded_pressure Pa and $recorded m recorded; pulled out: lost event, ride went on; found again"
fi
