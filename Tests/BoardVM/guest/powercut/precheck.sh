#!/bin/bash
# Power-cut series, start of a boot (before workoutd and the stand-in writers
# open their databases again): is each database intact, and how much of what
# its writer had acknowledged before the cut is on disk? Acknowledged = the
# ledgers on the host share. Writes key=value lines to boot-N/precheck.txt.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
# shellcheck source=/dev/null
source "$HIL_SHARE/env"
grep -qw 'workoutd.hil=uploadcut' /proc/cmdline && exec "$HIL_DIR/powercut/upload.sh" precheck
out=$HIL_SHARE/boot-$HIL_BOOT
ledgers=$HIL_SHARE/ledger
mkdir -p "$out"
report() { echo "$1=$2" >> "$out/precheck.txt"; note "$1=$2"; }

# Look at a copy, so the check itself leaves no -shm/-wal owned by root
# behind for the daemon to trip over. The -wal is what a crash leaves to replay.
snapshot() {
  local db=$1 dir
  dir=/run/hil-precheck/$(basename "$db" .db)
  rm -rf "$dir"; mkdir -p "$dir"
  cp "$db" "$dir/"
  [[ -f $db-wal ]] && cp "$db-wal" "$dir/"
  echo "$dir/$(basename "$db")"
}

for sync in full off; do
  db=/var/lib/hil-writer/$sync.db
  [[ -f $db ]] || { report "writer_${sync}_db" absent; continue; }
  copy=$(snapshot "$db")
  report "writer_${sync}_integrity" "$(python3 "$HIL_DIR/wkd.py" integrity "$copy")"
  acked=$(tail -n 1 "$ledgers/writer-$sync.txt" 2>/dev/null || echo 0)
  on_disk=$(sqlite3 "$copy" 'SELECT coalesce(max(id), 0) FROM row')
  report "writer_${sync}_acked" "$acked"
  report "writer_${sync}_on_disk" "$on_disk"
  report "writer_${sync}_lost" $(( acked > on_disk ? acked - on_disk : 0 ))
done

# verdict for the daemon's side of this cut: "yes (...)" or "no (reason)"
verdict() { report workoutd_cut_ok "$1"; }

if [[ -x /usr/bin/workoutd && $HIL_BOOT -gt 0 ]]; then
  # the last status the daemon gave before the cut, which must be from the boot it ended
  entry=$(jq -R -c 'fromjson? | select(.status.sessionId != null and .status.points != null)' \
            "$ledgers/workoutd.jsonl" 2>/dev/null | tail -n 1)
  last=$(jq -c '.status // empty' <<< "$entry")
  if [[ ! -f $WORKOUTD_DB ]]; then
    report workoutd_db absent; verdict "no (database missing after the cut)"
  elif [[ -z $last || $(jq .boot <<< "$entry") != $((HIL_BOOT - 1)) ]]; then
    report workoutd_acked none; verdict "no (the daemon reported no recording session in boot $((HIL_BOOT - 1)))"
  else
    copy=$(snapshot "$WORKOUTD_DB")
    integrity=$(python3 "$HIL_DIR/wkd.py" integrity "$copy")
    report workoutd_integrity "$integrity"
    session=$(jq -r .sessionId <<< "$last")
    acked_points=$(jq -r .points <<< "$last")
    acked_time=$(jq -r '.lastPointTime // empty' <<< "$last")
    report workoutd_session "$session"
    report workoutd_acked_points "$acked_points"
    report workoutd_acked_time "$acked_time"
    if ! disk=$(python3 "$HIL_DIR/wkd.py" points "$copy" "$session" "$acked_time" 2>&1); then
      verdict "no (cannot count points: ${disk//$'\n'/ })"
    else
      note "on disk: $disk"
      lost_points=$(jq -r --argjson a "$acked_points" '[$a - .count, 0] | max' <<< "$disk")
      report workoutd_on_disk_points "$(jq -r .count <<< "$disk")"
      report workoutd_lost_points "$lost_points"
      if [[ -n $acked_time ]]; then
        lost_seconds=$(jq -r --argjson a "$(python3 "$HIL_DIR/wkd.py" epoch "$acked_time")" \
          'if .max_t == null then "all" else ([$a - .max_t, 0] | max * 10 | round / 10) end' <<< "$disk")
      else
        lost_seconds=unknown
      fi
      report workoutd_lost_seconds "$lost_seconds"
      if [[ $integrity != ok ]]; then
        verdict "no (integrity_check: $integrity)"
      elif ! awk -v l="$lost_seconds" -v m="$MAX_LOST_SECONDS" 'BEGIN{exit !(l ~ /^[0-9.]+$/ && l <= m)}'; then
        verdict "no ($lost_seconds s of points lost, more than $MAX_LOST_SECONDS s)"
      else
        verdict "yes ($lost_seconds s, $lost_points points lost)"
      fi
    fi
  fi
fi
exit 0
