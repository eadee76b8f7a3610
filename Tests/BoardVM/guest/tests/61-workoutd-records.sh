#!/bin/bash
# After `workoutctl start` the daemon records the fixes gpsd gets from the
# (host-fed) receiver: the live session's points grow, about one per second.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
require_workoutd "$name"

note "before: $(wkd_status)"
t0=$EPOCHREALTIME
workoutctl start
wait_for 15 state_is running || { result "$name" FAIL "state '$(wkd_state)' after workoutctl start"; exit 0; }
note "running after $(since "$t0") s"
has_points() { (( $(wkd_field .points) > 0 )); }
wait_for 30 has_points
first=$(wkd_status); t1=$EPOCHREALTIME
sleep 8
last=$(wkd_status)
elapsed=$(since "$t1")
note "status: $first"
note "status: $last"
session=$(jq -r .sessionId <<< "$last")
p0=$(jq -r '.points // 0' <<< "$first") p1=$(jq -r '.points // 0' <<< "$last")
rate=$(awk -v a="$p0" -v b="$p1" -v t="$elapsed" 'BEGIN{printf "%.2f", (b - a) / t}')
sessions=$(timeout 10 workoutctl sessions --json 2>&1)
note "sessions: ${sessions:0:400}"

if ! ((p1 > p0)); then
  result "$name" FAIL "points did not grow while running: $p0 -> $p1 in $elapsed s"
elif [[ $(jq -r .lastPointTime <<< "$first") == "$(jq -r .lastPointTime <<< "$last")" ]]; then
  result "$name" FAIL "lastPointTime did not advance"
elif ! grep -q -- "$session" <<< "$sessions"; then
  result "$name" FAIL "workoutctl sessions --json does not list session $session"
else
  result "$name" PASS "session $session: $p0 -> $p1 points in $elapsed s ($rate/s)"
fi
