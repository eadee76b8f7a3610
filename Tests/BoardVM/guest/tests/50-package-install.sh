#!/bin/bash
# hil-timeout: 480
# (apt unpacks and fsyncs two 60 MB binaries: 3 to 4 minutes under TCG beside a busy host)
# On a clean board image (no workoutd; the board's configuration already in
# /etc, as the board's image recipe put it), `apt install ./workoutd_…deb`
# installs the package offline, creates the workoutd system user and the state
# directory, enables the service and starts it: active as soon as apt returns
# (Type=notify: active only after READY=1), running as workoutd, answering
# `workoutctl status`; dpkg kept the board's configuration.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
# shellcheck source=/dev/null
source "$HIL_PACKAGES_ENV" 2> /dev/null || { result "$name" FAIL "no $HIL_PACKAGES_ENV in the image"; exit 0; }

problems=()
# a clean image: nothing of workoutd yet
[[ -z $(package_status) && ! -e /usr/bin/workoutd ]] || { result "$name" FAIL "the image is not clean: $(package_status) $(ls /usr/bin/workoutd 2>&1)"; exit 0; }
getent passwd workoutd && problems+=("a workoutd user exists before the package is installed")
timeout 180 systemctl is-system-running --wait > /dev/null

t0=$EPOCHREALTIME
hil_apt install "$HIL_DEB" > /tmp/apt-install.log 2>&1; rc=$?
install_s=$(since "$t0")
# no waiting: the postinst's start returns once the unit is active
active=$(systemctl is-active workoutd.service)
cat /tmp/apt-install.log
note "apt install: exit $rc after $install_s s; workoutd.service $active"
show() { systemctl show -p "$1" --value workoutd.service; }
systemctl show -p ActiveState,SubState,Type,MainPID,UnitFileState,ActiveEnterTimestampMonotonic,StatusText workoutd.service
pid=$(show MainPID)
user=$(ps -o user= -p "$pid" 2> /dev/null | xargs)
IFS=: read -r _ _ uid gid _ home shell < <(getent passwd workoutd)
note "user workoutd: uid ${uid:-?} gid ${gid:-?} home ${home:-?} shell ${shell:-?}; $(stat -c '%U:%G %a' /var/lib/workoutd 2>&1)"
status=$(wkd_status)
note "status: $status"

((rc == 0)) || problems+=("apt install exited $rc")
[[ $(package_status) == "install ok installed $HIL_DEB_VERSION" ]] || problems+=("dpkg: '$(package_status)'")
[[ $active == active ]] || problems+=("workoutd.service '$active' right after apt install, want active")
[[ $(show Type) == notify ]] || problems+=("Type=$(show Type), want notify")
[[ $(show UnitFileState) == enabled ]] || problems+=("unit $(show UnitFileState), want enabled")
[[ -n ${uid:-} ]] || problems+=("no workoutd user")
[[ -n ${uid:-} ]] && ((uid < 1000)) || problems+=("workoutd is not a system user (uid ${uid:-none})")
[[ ${shell:-} == */nologin || ${shell:-} == /bin/false ]] || problems+=("workoutd's shell is '${shell:-}'")
[[ $user == workoutd ]] || problems+=("the service runs as '$user', want workoutd")
[[ $(stat -c %U /var/lib/workoutd 2>/dev/null) == workoutd ]] || problems+=("/var/lib/workoutd is not workoutd's")
[[ $(jq -r '.state // empty' <<< "$status" 2> /dev/null) =~ ^(notStarted|ended)$ ]] || problems+=("status gave state '$(jq -r .state <<< "$status" 2>/dev/null)'")
[[ $(config_sha) == "$HIL_BOARD_CONFIG_SHA256" ]] || problems+=("/etc/workoutd/workoutd.toml is no longer the board's")

if ((${#problems[@]})); then
  journalctl -b -u workoutd --no-pager | tail -20
  result "$name" FAIL "$(IFS=';'; echo "${problems[*]}")"
else
  result "$name" PASS "$(basename "$HIL_DEB") installed in $install_s s: active (READY) when apt returned, pid $pid as system user workoutd (uid $uid), unit enabled, board config kept"
fi
