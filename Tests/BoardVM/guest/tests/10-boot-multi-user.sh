#!/bin/bash
# systemd (PID 1) boots the board image to multi-user.target with no failed unit.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME

state=$(timeout 180 systemctl is-system-running --wait 2>&1)
multi_user=$(systemctl is-active multi-user.target)
mapfile -t failed_units < <(systemctl list-units --failed --plain --no-legend | awk '{print $1}')
failed=${failed_units[*]}
summary=$(systemd-analyze 2>/dev/null | head -1 | sed 's/ *$//')
note "pid1: $(ps -o comm= -p 1); kernel $(uname -r)"
note "$summary"
systemd-analyze blame 2>/dev/null | head -10
((${#failed_units[@]})) && systemctl status --no-pager "${failed_units[@]}" 2>&1 | head -40

if [[ $state == running && $multi_user == active && $(ps -o comm= -p 1) == systemd ]]; then
  result "$name" PASS "${summary#Startup finished in }"
else
  result "$name" FAIL "system state '$state', multi-user.target $multi_user, failed units: ${failed:-none}"
fi
