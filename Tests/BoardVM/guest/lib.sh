# shellcheck shell=bash disable=SC2034  # variables are for the scripts that source this
# Helpers for the guest-side tests (sourced). Installed in the test image at
# /usr/lib/workoutd-hil/lib.sh.

HIL_DIR=/usr/lib/workoutd-hil
HIL_SHARE=/mnt/hil          # 9p share with the host: results, logs, ledgers
# shellcheck source=../../../board/qemu-virt/board.env
source /usr/lib/workoutd-board/board.env
# A kill or power cut may lose what the daemon had not committed yet; it
# commits once per second, so about one second of points.
MAX_LOST_SECONDS=1.5
WORKOUTD_DB=/var/lib/workoutd/workoutd.db
# A test's name is its file name without the order prefix: 20-gpsd-fixes.sh -> gpsd-fixes
TEST_NAME=$(basename "$0" .sh)
TEST_NAME=${TEST_NAME#[0-9]*-}

# "[uptime] message" on stdout (the test's log)
note() { echo "[$(cut -d' ' -f1 /proc/uptime)] $*"; }
# The one line the runner collects: NAME: PASS|FAIL|SKIP (details)
result() { echo "$1: $2${3:+ ($3)}"; }
# seconds since a $EPOCHREALTIME stamp, 2 decimals
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.2f", b - a}'; }

# Skip daemon tests while the image has no daemon (phase 1 development).
require_workoutd() {
  [[ -x /usr/bin/workoutd ]] || { result "$1" SKIP "no /usr/bin/workoutd in the image"; exit 0; }
}

# --- buttons on the gpio-sim chip -------------------------------------------

# sysfs directory of the simulated chip labelled $BUTTON_CHIP_LABEL
# (/sys/devices/platform/gpio-sim.N/gpiochipM), found via its configfs entry.
sim_chip_dir() {
  local label dev
  for label in /sys/kernel/config/gpio-sim/*/bank*/label; do
    [[ $(cat "$label") == "$BUTTON_CHIP_LABEL" ]] || continue
    dev=$(cat "${label%/bank*}/dev_name")
    echo "/sys/devices/platform/$dev/$(cat "${label%/label}/chip_name")"
    return 0
  done
  return 1
}

# offset of a named line on the button chip
line_offset() {
  local i=0 name
  for name in $BUTTON_LINES; do
    [[ $name == "$1" ]] && { echo "$i"; return 0; }
    i=$((i + 1))
  done
  return 1
}

# The sysfs "pull" attribute of a button line: what the outside world does to the pin.
button_pull_file() { echo "$(sim_chip_dir)/sim_gpio$(line_offset "$1")/pull"; }

# The pull that makes a line read pressed or released (active-low buttons: pressed is low).
pull_for() {
  local level=0
  [[ $1 == pressed ]] && level=1
  [[ $BUTTONS_ACTIVE_LOW == 1 ]] && level=$((1 - level))
  if [[ $level == 1 ]]; then echo pull-up; else echo pull-down; fi
}

# button_set NAME pressed|released
button_set() { pull_for "$2" > "$(button_pull_file "$1")"; }

# button_press NAME [HOLD_SECONDS]: press and release, held for HOLD_SECONDS (0.3 by default:
# past any software debounce, well short of a long press). The pin is found first, so that the
# press and the release are two quick writes even under emulation.
button_press() {
  local file pressed released
  file=$(button_pull_file "$1") pressed=$(pull_for pressed) released=$(pull_for released)
  echo "$pressed" > "$file"
  sleep "${2:-0.3}"
  echo "$released" > "$file"
}

# --- the daemon ----------------------------------------------------------------

# workoutctl status --json, or nothing if the daemon does not answer
wkd_status() { timeout 10 workoutctl status --json 2>/dev/null; }
# one field of the status (jq path, e.g. .state)
wkd_field() { wkd_status | jq -r "$1 // empty" 2>/dev/null; }
# the session's state (notStarted, prepared, running, paused, stopped, ended)
wkd_state() { wkd_field .state; }
# state_is STATE: whether the session is in STATE now (for wait_for)
state_is() { [[ $(wkd_state) == "$1" ]]; }

# wait_for SECONDS COMMAND...: poll until COMMAND succeeds
wait_for() {
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
}
