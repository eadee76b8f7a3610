#!/bin/bash
# kill -9 while recording: systemd restarts the daemon, the same session goes
# on with a "recovered" event, and at most about a second of points is lost
# (the points the last status reported, against the database after restart).
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
require_workoutd "$name"

state_is running || { workoutctl start; wait_for 15 state_is running; }
sleep 3
pid=$(systemctl show -p MainPID --value workoutd.service)
restarts=$(systemctl show -p NRestarts --value workoutd.service)
# the last word from the daemon, then the kill
before=$(wkd_status)
kill -9 "$pid"
t0=$EPOCHREALTIME
note "killed pid $pid; last status: $before"
session=$(jq -r .sessionId <<< "$before")
acked_points=$(jq -r .points <<< "$before")
acked_time=$(jq -r .lastPointTime <<< "$before")

restarted() {
  [[ $(systemctl show -p ActiveState --value workoutd.service) == active &&
     $(systemctl show -p MainPID --value workoutd.service) != "$pid" ]]
}
wait_for 60 restarted || { result "$name" FAIL "not active again 60 s after kill -9"; exit 0; }
restart_s=$(since "$t0")
wait_for 30 state_is running
after=$(wkd_status)
note "restarted after $restart_s s; status: $after"
p_a=$(wkd_field .points); sleep 4; p_b=$(wkd_field .points)
events=$(timeout 10 workoutctl show "$session" --json | jq -c '[.events[]? | select(tostring | test("recovered"; "i"))]')
note "recovered events: $events"
# what survived: points of the session up to the last point acknowledged before the kill
disk=$(runuser -u workoutd -- python3 "$HIL_DIR/wkd.py" points "$WORKOUTD_DB" "$session" "$acked_time" 2>&1)
note "database: $disk"
lost_points=$(jq -r --argjson a "$acked_points" '[$a - .count_upto, 0] | max' <<< "$disk" 2>/dev/null)
lost_seconds=$(jq -r --argjson a "$(python3 "$HIL_DIR/wkd.py" epoch "$acked_time" 2>/dev/null || echo null)" \
  'if .max_upto == null or $a == null then "all" else ([$a - .max_upto, 0] | max * 10 | round / 10) end' <<< "$disk" 2>/dev/null)

problems=()
[[ $(jq -r .sessionId <<< "$after") == "$session" ]] || problems+=("session $(jq -r .sessionId <<< "$after") after restart, was $session")
state_is running || problems+=("state '$(wkd_state)' after restart")
((p_b > p_a)) || problems+=("points did not grow after restart ($p_a -> $p_b)")
[[ $(jq length <<< "$events" 2>/dev/null) -ge 1 ]] || problems+=("no recovered event in the session")
(( $(systemctl show -p NRestarts --value workoutd.service) > restarts )) || problems+=("NRestarts did not grow")
awk -v l="$lost_seconds" -v m="$MAX_LOST_SECONDS" 'BEGIN{exit !(l ~ /^[0-9.]+$/ && l <= m)}' ||
  problems+=("${lost_seconds:-?} s of points lost (max $MAX_LOST_SECONDS s; database: ${disk:0:200})")

if ((${#problems[@]})); then
  journalctl -b -u workoutd --no-pager | tail -20
  result "$name" FAIL "$(IFS=';'; echo "${problems[*]}")"
else
  result "$name" PASS "restarted in $restart_s s, session $session resumed; lost ${lost_seconds} s (${lost_points} points)"
fi
