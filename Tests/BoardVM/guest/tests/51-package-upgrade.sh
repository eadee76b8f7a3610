#!/bin/bash
# hil-timeout: 480
# (apt unpacks and fsyncs two 60 MB binaries: 3 to 4 minutes under TCG beside a busy host)
# An upgrade mid-ride keeps the session: with a ride recording, `apt install`
# of a newer package (the same files, version VERSION+test1) restarts the
# service (the postinst's restart), and the same session goes on running with a
# `recovered` event, its points and distance growing; at most about a second
# of points is lost, measured against the last status the old process gave.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
# shellcheck source=/dev/null
source "$HIL_PACKAGES_ENV" 2> /dev/null || { result "$name" FAIL "no $HIL_PACKAGES_ENV in the image"; exit 0; }
require_package_installed "$name"
show() { systemctl show -p "$1" --value workoutd.service; }
recovered_events() {
  timeout 10 workoutctl show "$1" --json 2> /dev/null | jq '[.events[]? | select(tostring | test("recovered"; "i"))] | length'
}

state_is running || { workoutctl start; wait_for 20 state_is running; }
has_points() { (( $(wkd_field .points) >= 5 )); }
wait_for 60 has_points || { result "$name" FAIL "no points recorded before the upgrade: $(wkd_status)"; exit 0; }
session=$(wkd_field .sessionId)
pid=$(show MainPID) invocation=$(show InvocationID)
recovered_before=$(recovered_events "$session")

# Every 0.25 s the status and the MainPID around it, until apt is done: the
# last status from the old process is what it had acknowledged.
ledger=/run/hil-upgrade-ledger.txt; : > "$ledger"
(
  while [[ ! -e /run/hil-upgrade-done ]]; do
    a=$(show MainPID); s=$(wkd_status | jq -c . 2> /dev/null); b=$(show MainPID)
    [[ -n $s && $a == "$b" ]] && echo "$a $s" >> "$ledger"
    sleep 0.25
  done
) &
logger=$!
sleep 2
t0=$EPOCHREALTIME
hil_apt install "$HIL_DEB_UPGRADE" > /tmp/apt-upgrade.log 2>&1; rc=$?
upgrade_s=$(since "$t0")
touch /run/hil-upgrade-done; wait "$logger"
cat /tmp/apt-upgrade.log
note "apt install (upgrade): exit $rc after $upgrade_s s"

before=$(awk -v p="$pid" '$1 == p {sub(/^[0-9]+ /, ""); line = $0} END {print line}' "$ledger")
note "last status of pid $pid: $before"
acked_points=$(jq -r .points <<< "$before") acked_time=$(jq -r '.lastPointTime // empty' <<< "$before")
acked_distance=$(jq -r '.distance // 0' <<< "$before")
restarted() { [[ $(show ActiveState) == active && $(show MainPID) != "$pid" ]]; }
wait_for 60 restarted
wait_for 30 state_is running
after=$(wkd_status)
p_a=$(wkd_field .points); sleep 4; p_b=$(wkd_field .points)
distance=$(wkd_field .distance)
recovered_after=$(recovered_events "$session")
note "after: $after; points $p_a -> $p_b in 4 s; distance $acked_distance -> $distance m; recovered events $recovered_before -> $recovered_after"
disk=$(runuser -u workoutd -- python3 "$HIL_DIR/wkd.py" points "$WORKOUTD_DB" "$session" "$acked_time" 2>&1)
note "database: $disk"
lost_points=$(jq -r --argjson a "${acked_points:-null}" '[$a - .count_upto, 0] | max' <<< "$disk" 2> /dev/null)
lost_seconds=$(jq -r --argjson a "$(python3 "$HIL_DIR/wkd.py" epoch "$acked_time" 2> /dev/null || echo null)" \
  'if .max_upto == null or $a == null then "all" else ([$a - .max_upto, 0] | max * 10 | round / 10) end' <<< "$disk" 2> /dev/null)

problems=()
((rc == 0)) || problems+=("apt install exited $rc")
[[ $(package_status) == "install ok installed $HIL_DEB_UPGRADE_VERSION" ]] || problems+=("dpkg: '$(package_status)', want $HIL_DEB_UPGRADE_VERSION")
[[ -n $before ]] || problems+=("no status from the old process (pid $pid) in the ledger")
[[ $(show MainPID) != "$pid" && $(show InvocationID) != "$invocation" ]] || problems+=("the service was not restarted (pid $(show MainPID))")
[[ $(show ActiveState) == active ]] || problems+=("workoutd.service $(show ActiveState) after the upgrade")
[[ $(jq -r .sessionId <<< "$after") == "$session" ]] || problems+=("session $(jq -r .sessionId <<< "$after") after the upgrade, was $session")
state_is running || problems+=("state '$(wkd_state)' after the upgrade, want running")
((${p_b:-0} > ${p_a:-0})) || problems+=("points did not grow after the upgrade (${p_a:-?} -> ${p_b:-?})")
((${p_a:-0} >= ${acked_points:-0})) || problems+=("points went back: ${acked_points:-?} before, ${p_a:-?} after")
awk -v a="${acked_distance:-0}" -v b="${distance:-0}" 'BEGIN { exit !(b > a) }' || problems+=("distance did not grow: $acked_distance -> $distance m")
((${recovered_after:-0} > ${recovered_before:-0})) || problems+=("no new recovered event (${recovered_before:-?} -> ${recovered_after:-?})")
awk -v l="$lost_seconds" -v m="$MAX_LOST_SECONDS" 'BEGIN{exit !(l ~ /^[0-9.]+$/ && l <= m)}' ||
  problems+=("${lost_seconds:-?} s of points lost (max $MAX_LOST_SECONDS s; database: ${disk:0:200})")
[[ $(config_sha) == "$HIL_BOARD_CONFIG_SHA256" ]] || problems+=("the upgrade changed /etc/workoutd/workoutd.toml")

if ((${#problems[@]})); then
  journalctl -b -u workoutd --no-pager | tail -25
  result "$name" FAIL "$(IFS=';'; echo "${problems[*]}")"
else
  result "$name" PASS "$HIL_DEB_VERSION -> $HIL_DEB_UPGRADE_VERSION mid-ride in $upgrade_s s: restarted, session $session running on with a recovered event; points $acked_points -> $p_b, distance $acked_distance -> $distance m; lost $lost_seconds s ($lost_points points)"
fi
