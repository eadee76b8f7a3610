#!/bin/bash
# The gpio-sim buttons drive a whole session of the installed service, as a rider would:
# START starts it (countdown, then running), pauses and resumes it; LAP marks a lap; a short
# STOP does nothing (a knock never ends a ride); STOP held 2 s ends it.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
require_workoutd "$name"

problems=()
# From no live session: end the one an earlier test left recording.
case $(wkd_state) in
  prepared | running | paused) workoutctl stop; wait_for 15 state_is ended ;;
esac
before=$(wkd_field .sessionId)

button_press START
wait_for 20 state_is running || problems+=("START did not start a session (state '$(wkd_state)')")
session=$(wkd_field .sessionId)
[[ $session != "$before" ]] || problems+=("START did not open a new session (still $before)")
button_press START
wait_for 5 state_is paused || problems+=("START on a running session: state '$(wkd_state)', want paused")
button_press START
wait_for 5 state_is running || problems+=("START on a paused session: state '$(wkd_state)', want running")
laps() { timeout 10 workoutctl show "$session" --json | jq '[.events[] | select(.kind == "lap")] | length'; }
laps_before=$(laps)
button_press LAP
more_laps() { (( $(laps) > laps_before )); }
wait_for 5 more_laps || problems+=("LAP: lap events stayed at $laps_before")
button_press STOP 0.3
sleep 3
state_is running || problems+=("a short STOP changed the state to '$(wkd_state)'")
button_press STOP 3
wait_for 10 state_is ended || problems+=("STOP held 3 s: state '$(wkd_state)', want ended")

# The ended session's files, written by the installed service under its sandbox: FIT and GPX in
# the state directory's exports/, the service's own, readable by its group and no one else.
short=$(sqlite3 "$WORKOUTD_DB" "SELECT substr(uuid, 1, 8) FROM session WHERE id = $session")
exports=/var/lib/workoutd/exports
exported() { compgen -G "$exports/*-$short.fit" > /dev/null && compgen -G "$exports/*-$short.gpx" > /dev/null; }
if wait_for 15 exported; then
  for file in "$exports"/*-"$short".fit "$exports"/*-"$short".gpx "$exports"; do
    stat -c '%n %U:%G %a' "$file"
  done > /tmp/exports.stat
  note "exports: $(xargs < /tmp/exports.stat)"
  [[ $(awk '{print $2, $3}' /tmp/exports.stat | sort | uniq | xargs) == "workoutd:workoutd 640 workoutd:workoutd 750" ]] ||
    problems+=("the exports' owners and modes: $(xargs < /tmp/exports.stat)")
else
  problems+=("no FIT and GPX of session $session ($short) in $exports: $(ls -la "$exports" 2>&1 | xargs)")
fi

causes=$(timeout 10 workoutctl show "$session" --json |
  jq -r '[.events[] | select(.kind == "transition" and .cause == "button") | .detail] | unique | join(",")')
[[ $causes == gpio ]] || problems+=("button transitions came from '$causes', want gpio")
note "session $session events:"
timeout 10 workoutctl show "$session" | sed -n '/^events:/,$p'
journalctl -b -u workoutd --no-pager | grep -i -E 'buttons|press|lap' | tail -8

if ((${#problems[@]})); then
  result "$name" FAIL "$(IFS=';'; echo "${problems[*]}")"
else
  result "$name" PASS "session $session: START started, paused, resumed; LAP lapped; short STOP ignored; long STOP ended it; its FIT and GPX in exports/ (workoutd, 0640)"
fi
