#!/bin/bash
# Guest test runner (workoutd-hil.service). The kernel command line picks the
# mode; /mnt/hil/env (written by the host) says what to run.
#   workoutd.hil=suite     run tests/$NAME.sh for each NAME in HIL_TESTS, one
#                          result line each into /mnt/hil/results.txt, power off
#   workoutd.hil=powercut  record until the host pulls the plug (powercut/record.sh)
#   workoutd.hil=uploadcut send a ride while the host pulls the plug (powercut/upload.sh)
set -uo pipefail
# shellcheck source=lib.sh
source /usr/lib/workoutd-hil/lib.sh
# shellcheck source=/dev/null
source "$HIL_SHARE/env"

mode=$(sed -n 's/.*workoutd\.hil=\([a-z]*\).*/\1/p' /proc/cmdline)
case $mode in
  powercut) exec "$HIL_DIR/powercut/record.sh" ;;
  uploadcut) exec "$HIL_DIR/powercut/upload.sh" ;;
  suite) ;;
  *) echo "unknown workoutd.hil mode '$mode'"; exit 1 ;;
esac

# The deadlines (a test's limit, wait_for's) are for a hung test, not a budget: the host says
# how far to stretch them (run-suite.sh: a 2-core host running three TCG guests and a build
# beside them runs a guest at about half the speed of an idle one).
export HIL_TIME_SCALE=${HIL_TIME_SCALE:-1}
mkdir -p "$HIL_SHARE/logs"
results=$HIL_SHARE/results.txt
for test in ${HIL_TESTS:-}; do
  log=$HIL_SHARE/logs/$test.log
  t0=$EPOCHREALTIME
  # A test may ask for more time than the default with a "# hil-timeout: SECONDS" line.
  limit=$(sed -n 's/^# hil-timeout: \([0-9][0-9]*\)$/\1/p' "$HIL_DIR/tests/$test.sh" | head -n 1)
  timeout -k 5 $((${limit:-${HIL_TEST_TIMEOUT:-240}} * HIL_TIME_SCALE)) bash "$HIL_DIR/tests/$test.sh" > "$log" 2>&1
  rc=$?
  echo "test $test: exit $rc after $(since "$t0") s" >> "$log"
  if ! grep -E '^[a-z0-9-]+: (PASS|FAIL|SKIP)' "$log" >> "$results"; then
    echo "${test#[0-9]*-}: FAIL (no result line; exit $rc, see logs/$test.log)" >> "$results"
  fi
done
journalctl -b --no-pager -o short-monotonic > "$HIL_SHARE/logs/journal.txt" 2>&1
echo "HIL-DONE" >> "$results"
sync
systemctl poweroff
