#!/bin/bash
# Power-cut series, rest of a boot (run.sh in workoutd.hil=powercut mode):
# start the stand-in writers; make sure workoutd records (start a session on
# the first boot, expect it to resume by itself after a cut) and note how it
# resumed in boot-N/postcheck.txt; then tell the host "RECORDING" and log
# every status the daemon gives to the ledger until the host pulls the plug.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
# shellcheck source=/dev/null
source "$HIL_SHARE/env"
out=$HIL_SHARE/boot-$HIL_BOOT
ledgers=$HIL_SHARE/ledger
mkdir -p "$out" "$ledgers"
report() { echo "$1=$2" >> "$out/postcheck.txt"; note "$1=$2"; }

timeout 180 systemctl is-system-running --wait > /dev/null
lines() { if [[ -f $1 ]]; then wc -l < "$1"; else echo 0; fi; }
declare -A writer_rows
for sync in full off; do
  writer_rows[$sync]=$(lines "$ledgers/writer-$sync.txt")
  HIL_BOOT=$HIL_BOOT python3 "$HIL_DIR/powercut/writer.py" \
    "/var/lib/hil-writer/$sync.db" "$ledgers/writer-$sync.txt" "$sync" &
done

if [[ -x /usr/bin/workoutd ]]; then
  ledger=$ledgers/workoutd.jsonl
  before=$(jq -R -r 'fromjson? | .status.sessionId // empty' "$ledger" 2>/dev/null | tail -n 1)
  wait_for 60 wkd_status > /dev/null || report workoutd_answers no
  if [[ -z $before ]]; then
    workoutctl start
  fi
  wait_for 60 state_is running
  session=$(wkd_field .sessionId)
  points_a=$(wkd_field .points); sleep 4; points_b=$(wkd_field .points)
  recovered=$(timeout 10 workoutctl show "$session" --json 2>/dev/null |
              jq '[.events[]? | select(tostring | test("recovered"; "i"))] | length')
  state=$(wkd_state)
  report workoutd_session_before "${before:-none}"
  report workoutd_session_after "${session:-none}"
  report workoutd_state "$state"
  report workoutd_points_4s "${points_a:-?}..${points_b:-?}"
  report workoutd_recovered_events "${recovered:-?}"
  report workoutd_nrestarts "$(systemctl show -p NRestarts --value workoutd.service)"
  # each cut so far must have left a "recovered" event in the session
  if [[ $state != running ]]; then
    report workoutd_resume_ok "no (state '$state' after boot, want running)"
  elif [[ -n $before && $session != "$before" ]]; then
    report workoutd_resume_ok "no (session $session after the cut, was $before)"
  elif ! ((${points_b:-0} > ${points_a:-0})); then
    report workoutd_resume_ok "no (points did not grow: ${points_a:-?}..${points_b:-?} in 4 s)"
  elif ! (( ${recovered:-0} >= HIL_BOOT )); then
    report workoutd_resume_ok "no (${recovered:-?} recovered events after $HIL_BOOT cuts)"
  else
    report workoutd_resume_ok "yes (session $session, ${recovered:-0} recovered events)"
  fi
fi

if [[ ${HIL_FINAL:-0} == 1 ]]; then
  sleep 2; sync
  systemctl poweroff; exit 0
fi

# Ledger lines: {"boot": N, "status": <workoutctl status --json>}.
log_status() {
  local status
  status=$(wkd_status) && [[ -n $status ]] || return 1
  jq -c --argjson boot "$HIL_BOOT" '{boot: $boot, status: .}' <<< "$status" >> "$ledger"
}
# Say RECORDING only once this boot has acknowledged something, so that every
# cut is measured against what was recorded in the boot it ended.
committed_this_boot() {
  local sync
  for sync in full off; do
    (( $(lines "$ledgers/writer-$sync.txt") > ${writer_rows[$sync]} )) || return 1
  done
}
wait_for 60 committed_this_boot || note "a stand-in writer has not committed in 60 s"
if [[ -x /usr/bin/workoutd ]]; then
  wait_for 60 log_status || note "workoutctl status gave nothing in 60 s"
fi
# The harness's own check of its panic handling (BOARD_VM_PANIC_BOOT): a real
# guest kernel panic in this boot, after its first status reached the ledger.
if [[ ${HIL_PANIC:-0} == 1 ]]; then
  note "HIL_PANIC: crashing the kernel (sysrq c)"
  sync; echo c > /proc/sysrq-trigger
fi
echo RECORDING > "$out/state"
if [[ -x /usr/bin/workoutd ]]; then
  while :; do
    log_status
    sleep 0.25
  done
fi
wait
