#!/bin/bash
# hil-timeout: 480
# (apt removes, then purges, a 128 MB package with fsyncs: minutes under TCG beside a busy host)
# `apt remove workoutd` stops the service and removes the programs, keeping the
# configuration (a conffile), the workoutd user and /var/lib/workoutd with the
# database and every point it had recorded; `apt purge` removes the
# configuration and the unit's enablement and still keeps /var/lib/workoutd
# (debhelper's postrm never touches it; nothing asks) and the user. Installed
# again, the service finds the rides there.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
# shellcheck source=/dev/null
source "$HIL_PACKAGES_ENV" 2> /dev/null || { result "$name" FAIL "no $HIL_PACKAGES_ENV in the image"; exit 0; }
require_package_installed "$name"
problems=()

state_is running || { workoutctl start; wait_for 20 state_is running; }
sleep 3
session=$(wkd_field .sessionId)
sessions_before=$(timeout 10 workoutctl sessions --json | jq length)
last=$(wkd_status)
acked_points=$(jq -r .points <<< "$last")
note "before: $sessions_before sessions; session $session at $acked_points points"

# The rides as the database holds them (a copy, integrity and counts).
db_facts() {
  local copy
  [[ -f $WORKOUTD_DB ]] || { echo "absent"; return; }
  copy=$(db_snapshot)
  echo "integrity=$(python3 "$HIL_DIR/wkd.py" integrity "$copy") sessions=$(sqlite3 "$copy" 'SELECT count(*) FROM session')" \
       "points=$(sqlite3 "$copy" "SELECT count(*) FROM point WHERE session_id = $session")" \
       "owner=$(stat -c %U "$WORKOUTD_DB")"
}

hil_apt remove workoutd > /tmp/apt-remove.log 2>&1; rc=$?
cat /tmp/apt-remove.log
after_remove=$(db_facts)
note "after remove: dpkg '$(package_status)'; unit $(systemctl is-active workoutd.service); database: $after_remove"
((rc == 0)) || problems+=("apt remove exited $rc")
[[ $(package_status) == "deinstall ok config-files "* ]] || problems+=("dpkg after remove: '$(package_status)'")
[[ $(systemctl is-active workoutd.service) != active ]] || problems+=("workoutd.service still active after remove")
pgrep -x workoutd > /dev/null && problems+=("a workoutd process is still running after remove")
[[ ! -e /usr/bin/workoutd ]] || problems+=("/usr/bin/workoutd is still there after remove")
[[ -f /etc/workoutd/workoutd.toml ]] || problems+=("remove took the configuration away")
getent passwd workoutd > /dev/null || problems+=("remove took the workoutd user away")
kept() {   # kept WHEN FACTS: the database is there, intact, with the session's points
  local integrity sessions points
  integrity=$(sed -n 's/.*integrity=\([^ ]*\).*/\1/p' <<< "$2")
  sessions=$(sed -n 's/.*sessions=\([0-9]*\).*/\1/p' <<< "$2")
  points=$(sed -n 's/.*points=\([0-9]*\).*/\1/p' <<< "$2")
  [[ $integrity == ok ]] || { problems+=("after $1: database ${2:0:80}"); return; }
  ((${sessions:-0} >= sessions_before)) || problems+=("after $1: $sessions sessions, were $sessions_before")
  ((${points:-0} >= acked_points)) || problems+=("after $1: session $session has $points points, had $acked_points")
}
kept remove "$after_remove"

hil_apt purge workoutd > /tmp/apt-purge.log 2>&1; rc=$?
cat /tmp/apt-purge.log
after_purge=$(db_facts)
note "after purge: dpkg '$(package_status)'; /etc/workoutd: $(ls -A /etc/workoutd 2>&1 | tr '\n' ' '); /var/lib/workoutd: $(ls -A /var/lib/workoutd 2>&1 | tr '\n' ' '); database: $after_purge"
((rc == 0)) || problems+=("apt purge exited $rc")
[[ -z $(package_status) || $(package_status) == "unknown ok not-installed"* ]] || problems+=("dpkg after purge: '$(package_status)'")
[[ ! -e /etc/workoutd/workoutd.toml ]] || problems+=("purge left /etc/workoutd/workoutd.toml")
[[ ! -e /etc/systemd/system/multi-user.target.wants/workoutd.service ]] || problems+=("purge left the unit enabled")
kept purge "$after_purge"
getent passwd workoutd > /dev/null && user_after_purge=kept || user_after_purge=removed

# Installed again (with the package's own configuration now): the rides are there.
hil_apt install "$HIL_DEB" > /tmp/apt-reinstall.log 2>&1; rc=$?
active=$(systemctl is-active workoutd.service)
listed=$(timeout 10 workoutctl sessions --json 2> /dev/null | jq --argjson s "$session" '[.[] | select(.id == $s)] | length')
note "installed again: exit $rc, workoutd.service $active, session $session listed: ${listed:-?}"
((rc == 0)) || problems+=("apt install after purge exited $rc")
[[ $active == active ]] || problems+=("workoutd.service '$active' when installed again after purge")
((${listed:-0} >= 1)) || problems+=("session $session not listed by workoutctl sessions after purge and install")

if ((${#problems[@]})); then
  journalctl -b -u workoutd --no-pager | tail -15
  result "$name" FAIL "$(IFS=';'; echo "${problems[*]}")"
else
  result "$name" PASS "remove: stopped, config and user kept, /var/lib/workoutd kept ($after_remove); purge: config gone, /var/lib/workoutd kept ($after_purge), user $user_after_purge; installed again: active, session $session listed"
fi
