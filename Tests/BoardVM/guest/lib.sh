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

# --- libgpiod's command-line tools: v1 (bookworm, 1.6) or v2 (trixie, 2.x) ----
# The tools' syntax changed in v2 (chips by name/number/path only, not label;
# --chip instead of a positional chip; gpiofind gone; gpioset holds its lines
# until told otherwise; gpiomon's %e is 1/2). The installed version decides.
gpiod_major() { gpiodetect --version 2> /dev/null | sed -n 's/.* v\([0-9]*\)\..*/\1/p' | head -n 1; }
GPIOD_MAJOR=$(gpiod_major)

# the chip's name (gpiochipN) from its label, as gpiodetect lists it in both
gpio_chip_by_label() { gpiodetect | awk -v l="[$1]" '$2 == l {print $1; exit}' | grep .; }
# "CHIP OFFSET" of a named line
gpio_find() {
  if [[ $GPIOD_MAJOR == 1 ]]; then gpiofind "$1"; else gpioinfo --strict "$1" | awk 'NR == 1 {print $1, $2}'; fi
}
# gpioinfo's arguments for one chip
gpio_info_args() { if [[ $GPIOD_MAJOR == 1 ]]; then echo "$1"; else echo "-c $1"; fi; }
# gpio_get CHIP OFFSET [-l]: the line's value, 0 or 1 (-l: active low)
gpio_get() {
  if [[ $GPIOD_MAJOR == 1 ]]; then gpioget ${3:+"$3"} "$1" "$2"; else gpioget --numeric ${3:+"$3"} -c "$1" "$2"; fi
}
# gpio_mon TIMEOUT CHIP OFFSET EVENTS [-l]: wait up to TIMEOUT seconds for
# EVENTS edges; one line each, "EDGE OFFSET SECONDS" with EDGE 1 for rising
# and 0 for falling (v1's %e; v2 prints 2 for falling)
gpio_mon() {
  if [[ $GPIOD_MAJOR == 1 ]]; then
    timeout "$1" gpiomon ${5:+"$5"} --num-events="$4" --format='%e %o %s.%n' "$2" "$3"
  else
    timeout "$1" gpiomon ${5:+"$5"} --num-events="$4" --format='%e %o %S' -c "$2" "$3" |
      awk '{ $1 = ($1 == 2 ? 0 : $1); print; fflush() }'
  fi
}
# gpio_set_for SECONDS CHIP OFFSET VALUE: drive the line for SECONDS, then exit
gpio_set_for() {
  if [[ $GPIOD_MAJOR == 1 ]]; then gpioset --mode=time --sec="$1" "$2" "$3=$4"; else gpioset -p "${1}s" -t 0 -c "$2" "$3=$4"; fi
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
wkd_status() { timeout $((10 * ${HIL_TIME_SCALE:-1})) workoutctl status --json 2>/dev/null; }
# one field of the status (jq path, e.g. .state)
wkd_field() { wkd_status | jq -r "$1 // empty" 2>/dev/null; }
# the session's state (notStarted, prepared, running, paused, stopped, ended)
wkd_state() { wkd_field .state; }
# state_is STATE: whether the session is in STATE now (for wait_for)
state_is() { [[ $(wkd_state) == "$1" ]]; }

# wait_for SECONDS COMMAND...: poll until COMMAND succeeds. SECONDS is what an idle host needs
# with room to spare; it is stretched by HIL_TIME_SCALE (the host's, see run.sh).
wait_for() {
  local deadline=$((SECONDS + $1 * ${HIL_TIME_SCALE:-1})); shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
}

# --- the Debian package (package tests, on the clean image) -----------------

# The packages the image builder put in the clean image, and the board's
# configuration's hash: HIL_DEB, HIL_DEB_VERSION, HIL_DEB_UPGRADE,
# HIL_DEB_UPGRADE_VERSION, HIL_BOARD_CONFIG_SHA256.
HIL_PACKAGES_ENV=/var/cache/workoutd-hil/packages.env
# apt as a board's administrator runs it, offline (the image has the
# dependencies); an existing /etc/workoutd/workoutd.toml is kept (--force-confold).
hil_apt() {
  DEBIAN_FRONTEND=noninteractive apt-get -y -q \
    -o Dpkg::Options::=--force-confold -o Dpkg::Options::=--force-confdef "$@"
}
# the package's dpkg status and version: "install ok installed 0.1.0"
package_status() { dpkg-query -W -f='${Status} ${Version}' workoutd 2> /dev/null; }
require_package_installed() {
  [[ $(package_status) == "install ok installed "* ]] ||
    { result "$1" FAIL "workoutd is not installed ($(package_status || echo 'no status'); did package-install fail?)"; exit 0; }
}
# A copy of the database to look at as root without leaving root-owned -shm or
# -wal files behind for the daemon; prints its path.
db_snapshot() {
  local dir=/run/hil-db-copy
  rm -rf "$dir"; mkdir -p "$dir"
  cp "$WORKOUTD_DB" "$dir/"
  [[ -f $WORKOUTD_DB-wal ]] && cp "$WORKOUTD_DB-wal" "$dir/"
  echo "$dir/$(basename "$WORKOUTD_DB")"
}
# ride_exported SECONDS EXT: a short ride of the service's own, ended, and its EXT export
# written (a test may run alone); sets $last_export (the file's name). Calls problem on failure.
ride_exported() {
  case $(wkd_state) in prepared | running | paused) workoutctl stop > /dev/null; wait_for 15 state_is ended ;; esac
  workoutctl start > /dev/null
  wait_for 30 state_is running || problem "start: state '$(wkd_state)'"
  sleep "$1"
  workoutctl stop > /dev/null
  wait_for 15 state_is ended || problem "stop: state '$(wkd_state)'"
  local session short exports=/var/lib/workoutd/exports
  session=$(wkd_field .sessionId)
  short=$(sqlite3 "$WORKOUTD_DB" "SELECT substr(uuid, 1, 8) FROM session WHERE id = $session")
  wait_for 20 compgen -G "$exports/*-$short.$2" > /dev/null || problem "session $session was not exported"
  last_export=$(basename "$(compgen -G "$exports/*-$short.$2")")
}
config_sha() { sha256sum < /etc/workoutd/workoutd.toml 2> /dev/null | cut -d' ' -f1; }

# --- USB sticks, made, plugged and pulled by the host (host/usb-plug.py, QEMU's monitor) ----
HIL_USB=$HIL_SHARE/usb
# usb_request WORDS...: the host's reply line on stdout; fails on an error reply or none in 60 s
usb_request() {
  local name i reply
  name=r$(date +%s%N)
  mkdir -p "$HIL_USB"
  echo "$*" > "$HIL_USB/.$name.tmp" && mv "$HIL_USB/.$name.tmp" "$HIL_USB/$name.req"
  for ((i = 0; i < 600; i++)); do
    if [[ -f $HIL_USB/$name.rep ]]; then
      reply=$(cat "$HIL_USB/$name.rep")
      rm -f "$HIL_USB/$name.rep"
      echo "$reply"
      [[ $reply == ok* ]]
      return
    fi
    sleep 0.1
  done
  echo "error: no reply from the host's usb-plug.py to '$*'"
  return 1
}

# toml_sections FILE NAME BODY [NAME BODY ...]: each [NAME] section of the TOML file FILE
# replaced by BODY (its lines), or added at the end when FILE has none
toml_sections() {
  python3 - "$@" << 'PY'
import re, sys
path, pairs = sys.argv[1], sys.argv[2:]
text = open(path).read()
for name, body in zip(pairs[0::2], pairs[1::2]):
    section = f"[{name}]\n{body}"
    if re.search(rf"^\[{name}\]", text, flags=re.M):
        text = re.sub(rf"\[{name}\].*?(?=\n\[|\Z)", lambda _: section, text, flags=re.S)
    else:
        text += "\n" + section + "\n"
open(path, "w").write(text)
PY
}

# --- uploads: a fake intervals.icu (Tests/Platforms) the service sends rides to ---------------
# The board's network is a dummy interface, wkdup0: with 198.51.100.1/24 (the address the image's
# test certificate names, install.sh) the fake, listening on every address, is reached; without
# it the board is offline. The address is TEST-NET-2 (RFC 5737), an Internet address to the
# units: the service's own drops packets to it (IPAddressDeny, the private ranges allowed), so
# a ride that reaches the fake went through the sender's unit (workoutd-upload.socket).
UPLOAD_CONFIG=/etc/workoutd/workoutd.toml
UPLOAD_SECRETS=/etc/workoutd/upload-secrets.toml
# upload_network up|down|gone: the board online, offline, or its interface taken away
upload_network() {
  case $1 in
    up)
      modprobe dummy 2> /dev/null
      ip link show wkdup0 > /dev/null 2>&1 || ip link add wkdup0 type dummy || return 1
      ip link set wkdup0 up && ip addr replace 198.51.100.1/24 dev wkdup0
      ;;
    down)
      modprobe dummy 2> /dev/null
      ip link show wkdup0 > /dev/null 2>&1 || ip link add wkdup0 type dummy
      ;;
    gone) ip link del wkdup0 2> /dev/null || true ;;
  esac
}
# fake_intervals_icu STATE ATHLETE API_KEY [PORT]: the fake in the background, its state in
# STATE; sets $fake_pid and $fake_port once it listens (fails after 20 s, its log's tail on
# stdout).
fake_intervals_icu() {
  local state=$1 athlete=$2 key=$3 port=${4:-0}
  mkdir -p "$state"; rm -f "$state/port"
  python3 "$HIL_DIR/platforms/fake_intervals_icu.py" --host 0.0.0.0 --port "$port" \
    --cert "$HIL_DIR/upload-certs/server.pem" --key "$HIL_DIR/upload-certs/server.key" --state "$state" \
    --athlete "$athlete" --api-key "$key" > "$state.log" 2>&1 &
  fake_pid=$!
  wait_for 20 test -s "$state/port" || { tail -n 3 "$state.log" | xargs; return 1; }
  fake_port=$(cat "$state/port")
}
# upload_configure URL ATHLETE API_KEY: the installed service's [upload] and [intervals_icu]
# sections pointing at URL (the image's test CA), the key in UPLOAD_SECRETS, the service's
# user's alone. Fails with the service's words on stdout when it refuses the configuration.
upload_configure() {
  printf 'intervals_icu_api_key = "%s"\n' "$3" > "$UPLOAD_SECRETS"
  chown workoutd: "$UPLOAD_SECRETS"
  chmod 0600 "$UPLOAD_SECRETS"
  toml_sections "$UPLOAD_CONFIG" upload "secrets_file = \"$UPLOAD_SECRETS\"
ca_file = \"$HIL_DIR/upload-certs/ca.pem\"" intervals_icu "athlete_id = \"$2\"
base_url = \"$1\""
  local check
  check=$(workoutd --config "$UPLOAD_CONFIG" --check-config 2>&1) || { head -c 300 <<< "$check"; return 1; }
}
# upload_job SESSION FIELD: the field of SESSION's intervals.icu job (a jq path), as
# `workoutctl uploads` says it
upload_job() {
  timeout 20 workoutctl uploads --session "$1" --json 2> /dev/null |
    jq -r ".[] | select(.target == \"intervals.icu\") | $2 // empty" 2> /dev/null
}
# fake_activities STATE: the fake's activities, "SHA-256 SIZE" a line
fake_activities() { jq -r 'to_entries[] | "\(.key) \(.value.size)"' "$1/activities.json" 2> /dev/null; }
# session_export SESSION EXT: the path of SESSION's EXT export (the exporter's bytes are the
# uploader's: ExportFile)
session_export() {
  local short
  short=$(sqlite3 "$WORKOUTD_DB" "SELECT substr(uuid, 1, 8) FROM session WHERE id = $1")
  compgen -G "/var/lib/workoutd/exports/*-$short.$2" | head -n 1
}
