#!/bin/bash
# A hung daemon (SIGSTOP) stops pinging; systemd's watchdog (WatchdogSec)
# kills and restarts it, and the same session goes on.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
require_workoutd "$name"

state_is running || { workoutctl start; wait_for 15 state_is running; }
show() { systemctl show -p "$1" --value workoutd.service; }
pid=$(show MainPID) restarts=$(show NRestarts) watchdog=$(show WatchdogUSec)
session=$(wkd_field .sessionId)
recovered() { timeout 10 workoutctl show "$session" --json | jq '[.events[]? | select(tostring | test("recovered"; "i"))] | length'; }
recovered_before=$(recovered)
since_stamp=$(date +%s)
kill -STOP "$pid"
t0=$EPOCHREALTIME
note "stopped pid $pid (WatchdogSec $watchdog)"

restarted() { [[ $(show ActiveState) == active && $(show MainPID) != "$pid" && $(show MainPID) != 0 ]]; }
if ! wait_for 120 restarted; then
  kill -CONT "$pid"
  result "$name" FAIL "no restart within 120 s of SIGSTOP ($(show ActiveState)/$(show SubState))"; exit 0
fi
restart_s=$(since "$t0")
journal=$(journalctl -u workoutd --no-pager --since "@$since_stamp")
echo "$journal" | tail -15
wait_for 30 state_is running
p_a=$(wkd_field .points); sleep 4; p_b=$(wkd_field .points)

problems=()
grep -qi 'watchdog timeout' <<< "$journal" || problems+=("journal has no watchdog timeout")
(( $(show NRestarts) > restarts )) || problems+=("NRestarts did not grow")
[[ $(wkd_field .sessionId) == "$session" ]] || problems+=("session $(wkd_field .sessionId) after restart, was $session")
((p_b > p_a)) || problems+=("points did not grow after restart ($p_a -> $p_b)")
(( $(recovered) > recovered_before )) || problems+=("no new recovered event ($recovered_before before)")

if ((${#problems[@]})); then
  result "$name" FAIL "$(IFS=';'; echo "${problems[*]}")"
else
  result "$name" PASS "watchdog ($watchdog) fired, restarted $restart_s s after SIGSTOP, session $session continued"
fi
