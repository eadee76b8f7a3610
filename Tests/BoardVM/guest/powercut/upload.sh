#!/bin/bash
# A power cut mid-upload (run.sh in workoutd.hil=uploadcut mode; host/upload-cut.sh pulls the
# plug). The fake intervals.icu keeps its state on the host's share, so what the platform holds
# outlives the cut (as a remote platform would) while the fake itself, a guest process, goes down
# with the board: its half-read request is a connection dropped mid-body.
#   boot 0: the service configured for the fake, the board online; a short ride, ended; the fake
#           reads its upload's body slowly (`slow`), and once the read has begun the host is told
#           UPLOADING and cuts the power a random 1 to 15 s later.
#   boot 1: `precheck` (workoutd-hil-precheck.service, before the service) reads the job from a
#           copy of the database as the cut left it; then the fake again, on the same port and
#           state, the board offline until the job has been tried, then online: the job must be
#           done within 60 s, the fake hold exactly one file (the ride's FIT export's bytes) and
#           the database be intact. The verdict line goes to boot-1/result.
# Usage: upload.sh [precheck]
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
# shellcheck source=/dev/null
source "$HIL_SHARE/env"
out=$HIL_SHARE/boot-$HIL_BOOT
state=$HIL_SHARE/fake-intervals
athlete=i4242
mkdir -p "$out"
report() { echo "$1=$2" >> "$out/upload.txt"; note "$1=$2"; }
value() { sed -n "s/^$2=//p" "$HIL_SHARE/boot-$1/upload.txt" 2> /dev/null | tail -n 1; }

if [[ ${1:-} == precheck ]]; then
  session=$(value 0 session)
  [[ -n $session && -f $WORKOUTD_DB ]] || exit 0
  copy=$(db_snapshot)
  report integrity_after_cut "$(python3 "$HIL_DIR/wkd.py" integrity "$copy")"
  report job_after_cut "$(sqlite3 "$copy" \
    "SELECT state || ' ' || attempts FROM upload_job WHERE session_id = $session AND target = 'intervals.icu'")"
  exit 0
fi

timeout 180 systemctl is-system-running --wait > /dev/null
verdict() {
  echo "upload-powercut: $1${2:+ ($2)}" > "$out/result"
  note "upload-powercut: $1 ${2:-}"
}

if ((HIL_BOOT == 0)); then
  fail() { verdict FAIL "boot 0: $*"; echo FAILED > "$out/state"; exit 0; }
  api_key=board-vm-cut-$RANDOM$RANDOM
  echo "$api_key" > "$HIL_SHARE/upload-key"
  rm -rf "$state"
  upload_network up || fail "cannot bring wkdup0 up"
  fake_intervals_icu "$state" "$athlete" "$api_key" > "$out/fake.why" || fail "the fake did not start: $(cat "$out/fake.why")"
  refused=$(upload_configure "https://198.51.100.1:$fake_port" "$athlete" "$api_key") || fail "configuration refused: $refused"
  systemctl restart workoutd
  wait_for 60 wkd_status > /dev/null || fail "workoutd did not come back with [upload] configured"
  # An 8 s ride's upload is about 1,150 bytes with the form: read at 60 B/s it takes about
  # 19 s, inside the client's low-speed limit (64 B/s for 60 s), and the cut comes within it.
  echo "slow 60" > "$state/faults"
  workoutctl start > /dev/null
  wait_for 30 state_is running || fail "start: state '$(wkd_state)'"
  session=$(wkd_field .sessionId)
  sleep 8
  workoutctl stop > /dev/null
  wait_for 15 state_is ended || fail "stop: state '$(wkd_state)'"
  report session "$session"
  began() { grep -q '"began": true' "$state/received.jsonl" 2> /dev/null; }
  wait_for 60 began || fail "the upload did not begin: $(upload_job "$session" .state) $(upload_job "$session" .reason)"
  report job_before_cut "$(upload_job "$session" .state)"
  sha256sum < "$(session_export "$session" fit)" | cut -d' ' -f1 > "$HIL_SHARE/upload-fit.sha256"
  sync
  echo UPLOADING > "$out/state"
  sleep infinity
fi

# --- boot 1: after the cut ------------------------------------------------------------------
session=$(value 0 session)
problems=()
problem() { problems+=("$*"); note "PROBLEM: $*"; }
[[ -n $session ]] || problem "boot 0 noted no session"
after_cut=$(value 1 job_after_cut)
integrity=$(value 1 integrity_after_cut)
[[ $integrity == ok ]] || problem "integrity after the cut: '$integrity'"
[[ $after_cut == sending* || $after_cut == done* ]] ||
  problem "the job after the cut is '$after_cut' (sending, or done had the upload ended first)"
# The platform lives on: the fake again, on its port, with what it held.
rm -f "$state/faults"
fake_intervals_icu "$state" "$athlete" "$(cat "$HIL_SHARE/upload-key")" "$(cat "$state/port")" > "$out/fake.why" ||
  problem "the fake did not start again: $(cat "$out/fake.why")"
wait_for 60 wkd_status > /dev/null || problem "workoutd did not start after the cut"
# Offline first: the service's first attempt after the boot fails, as at a board's boot before
# its Wi-Fi; the network's coming up sends the ride.
tried() { (($(upload_job "$session" .attempts) >= 1)) || [[ $(upload_job "$session" .state) == done ]]; }
wait_for 60 tried || problem "the job was not tried after the boot: '$(upload_job "$session" .state)'"
report job_offline "$(upload_job "$session" .state) $(upload_job "$session" .attempts) $(upload_job "$session" .reason)"
upload_network up || problem "cannot bring wkdup0 up"
t0=$EPOCHREALTIME
finished() { [[ $(upload_job "$session" .state) == done || $(upload_job "$session" .state) == failed ]]; }
wait_for 60 finished
done_s=$(since "$t0")
report job_at_end "$(upload_job "$session" .state) $(upload_job "$session" .platformID) after $done_s s"
[[ $(upload_job "$session" .state) == done ]] ||
  problem "not done $done_s s after the network came up: '$(upload_job "$session" .state)', '$(upload_job "$session" .reason)'"
sha=$(cat "$HIL_SHARE/upload-fit.sha256" 2> /dev/null)
held=$(fake_activities "$state" | xargs)
(($(fake_activities "$state" | wc -l) == 1)) || problem "the fake holds $(fake_activities "$state" | wc -l) activities, one expected: $held"
fake_activities "$state" | grep -q "^$sha " || problem "the fake has no file with the ride's FIT bytes ($sha): $held"
copy=$(db_snapshot)
[[ $(python3 "$HIL_DIR/wkd.py" integrity "$copy") == ok ]] || problem "integrity at the end: $(python3 "$HIL_DIR/wkd.py" integrity "$copy")"
requests=$(jq -c '{status, fault, complete}' "$state/received.jsonl" 2> /dev/null | xargs)
report fake_received "$requests"
if ((${#problems[@]})); then
  journalctl -u workoutd --no-pager -o cat | grep -E "upload" | tail -n 15
  verdict FAIL "$(IFS=';'; echo "${problems[*]}")"
else
  verdict PASS "cut $(cat "$HIL_SHARE/cut-delay" 2> /dev/null || echo '?') s into the upload: job '$after_cut' after it, integrity ok; offline at boot: '$(value 1 job_offline)'; online: done in $done_s s; the fake holds one file, the ride's FIT bytes (requests: $requests)"
fi
kill "$fake_pid" 2> /dev/null
sync
systemctl poweroff
