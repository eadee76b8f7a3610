#!/usr/bin/env bash
# How the upgrade fixtures here were made, so that they can be made again from any release.
#
#   Tests/Fixtures/upgrade/make-fixtures.sh BIN_DIR
#
# BIN_DIR holds the workoutd and workoutctl of the release that writes the fixtures. The
# committed ones were written by the binaries of commit f426fad (schema v3, the resume snapshot
# the synthesized JSON of ActiveSession), built with `swift build` on Debian 12, 2026-11-23.
#
# Each fixture is the database of a ride on the simulated board (the bundled Edge 500 ride at
# 20x), killed with SIGKILL in the middle: `running-v3.db` while running, `paused-v3.db` after
# `workoutctl pause`. The WAL the kill left behind is checkpointed into the file by the sqlite3
# shell (which changes no row), so that each fixture is one file. `*.expected` holds what the
# session row said at the kill: state, points, distance, timer, elapsed.
set -euo pipefail
bin=${1:?usage: make-fixtures.sh BIN_DIR}
here=$(cd "$(dirname "$0")" && pwd)
ride="$here/../../../board/sim/rides/garmin-edge-500-2011-09-25.csv"

make_one() { # name, pause-first
  local name=$1 pause=$2 tmp
  tmp=$(mktemp -d /tmp/wkfix-XXXXXX)
  "$bin/workoutd" --board sim --speed 20 --ride "$ride" --state-dir "$tmp/state" --runtime-dir "$tmp/run" \
    2>"$tmp/log" &
  local pid=$!
  # Let about ten minutes of the ride be recorded (30 s at 20x).
  sleep 30
  if [ "$pause" = yes ]; then
    "$bin/workoutctl" pause --state-dir "$tmp/state" --runtime-dir "$tmp/run"
    sleep 2
  fi
  kill -9 $pid
  wait $pid 2>/dev/null || true
  sqlite3 "$tmp/state/workoutd.db" "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
  cp "$tmp/state/workoutd.db" "$here/$name.db"
  sqlite3 -separator ' ' "$here/$name.db" \
    "SELECT state, points, distance, timer, elapsed FROM session WHERE id = 1" >"$here/$name.expected"
  rm -rf "$tmp"
  echo "$name: $(cat "$here/$name.expected")"
}

make_one running-v3 no
make_one paused-v3 yes
