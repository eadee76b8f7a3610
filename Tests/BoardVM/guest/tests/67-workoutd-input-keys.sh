#!/bin/bash
# Buttons as Linux input events (the gpio-keys alternative, by config): the service is set to
# [buttons] source = "input" and reads a key device; the same presses drive a session as the
# GPIO buttons do. The board's own configuration is put back afterwards.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
require_workoutd "$name"

config=/etc/workoutd/workoutd.toml
cp "$config" /tmp/workoutd.toml.board
problems=()
restore() {
  cp /tmp/workoutd.toml.board "$config"
  systemctl restart workoutd
  exec {keys}>&- 2> /dev/null
  wait 2> /dev/null
}
trap restore EXIT

# The key device, fed through a pipe from this script.
coproc KEYS { python3 "$HIL_DIR/uinput_keys.py" workoutd-keys KEY_PROG1 KEY_PROG2 KEY_PROG3; }
keys=${KEYS[1]}
read -r -t 10 ready node <&"${KEYS[0]}" || true
note "key device: $ready $node ($(stat -c '%U:%G %a' "$node" 2> /dev/null))"
press() { echo "$1 ${2:-0.3}" >&"$keys"; read -r -t 10 _ <&"${KEYS[0]}" || true; }

python3 - "$config" << 'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
buttons = '[buttons]\nenabled = true\nsource = "input"\ninput_device = "workoutd-keys"\nstart = "KEY_PROG1"\nlap = "KEY_PROG2"\nstop = "KEY_PROG3"\n\n'
text = re.sub(r"\[buttons\].*?(?=\n\[)", buttons.rstrip("\n"), text, flags=re.S)
open(path, "w").write(text)
PY
workoutd --config "$config" --check-config || problems+=("the input-keys configuration was refused")
systemctl restart workoutd
ready() { [[ -n $(wkd_state) ]]; }
wait_for 60 ready || problems+=("workoutd did not come back with the input-keys configuration")
keys_available() { [[ $(wkd_status | jq -r '.devices.buttons // ""') == available* ]]; }
wait_for 30 keys_available || problems+=("buttons not available: $(wkd_status | jq -c .devices.buttons)")

case $(wkd_state) in
  prepared | running | paused) workoutctl stop; wait_for 15 state_is ended ;;
esac
press KEY_PROG1
wait_for 20 state_is running || problems+=("START key did not start a session (state '$(wkd_state)')")
session=$(wkd_field .sessionId)
press KEY_PROG1
wait_for 5 state_is paused || problems+=("START key on a running session: '$(wkd_state)'")
press KEY_PROG1
wait_for 5 state_is running || problems+=("START key on a paused session: '$(wkd_state)'")
press KEY_PROG2
laps() { timeout 10 workoutctl show "$session" --json | jq '[.events[] | select(.kind == "lap")] | length'; }
has_lap() { (( $(laps) >= 1 )); }
wait_for 5 has_lap || problems+=("LAP key: no lap")
press KEY_PROG3 3
wait_for 10 state_is ended || problems+=("STOP key held 3 s: '$(wkd_state)'")
causes=$(timeout 10 workoutctl show "$session" --json |
  jq -r '[.events[] | select(.kind == "transition" and .cause == "button") | .detail] | unique | join(",")')
[[ $causes == inputEvent ]] || problems+=("button transitions came from '$causes', want inputEvent")

if ((${#problems[@]})); then
  result "$name" FAIL "$(IFS=';'; echo "${problems[*]}")"
else
  result "$name" PASS "session $session driven by input-event keys on $node: start, pause, resume, lap, long stop"
fi
