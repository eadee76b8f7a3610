#!/bin/bash
# Rides sent to intervals.icu by the installed service under systemd, through the uploads'
# sender's socket (workoutd-upload.socket; 198.51.100.1 is an Internet address, which the
# service's own unit cannot reach): the fake intervals.icu
# (Tests/Platforms/fake_intervals_icu.py, over HTTPS with a certificate of the image's test CA
# for 198.51.100.1, guest/install.sh) is the platform, and `[intervals_icu] base_url` and `[upload]
# ca_file` point the service at it. The board's network is a dummy interface, wkdup0:
#   1. down for the whole ride and up at home: no address (198.51.100.1 has no route), a ride
#      recorded and ended, its job queued and its attempts failing with the reason in
#      `workoutctl uploads`; at home the interface comes up with 198.51.100.1/24 and the uploader,
#      woken by the kernel's address and route announcements (NetworkWatch, the unit's
#      AF_NETLINK), sends the ride well before its retry time: the fake has the file (the
#      export's bytes), the job is done. (Trixie under TCG: done 2.8 to 4.4 s after the address
#      came; with the unit's families lacking AF_NETLINK the watch cannot open and the ride
#      waits for its retry time, 58 s then, which the retry-time check catches.)
#   2. kill -9 mid-upload: the fake reads the next request's body slowly (the `slow` fault);
#      once it has begun, the service is killed and systemd restarts it; the job, found
#      `sending`, is sent again: the fake holds one complete file (a second request answered
#      409, a duplicate, is the platform's proof that it had it), the job is done.
# Everything changed (configuration, secrets file, interface, the fake) is put back at the end.
# hil-timeout: 420
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
require_workoutd "$name"

problems=()
problem() { problems+=("$*"); note "PROBLEM: $*"; }
state=/tmp/fake-intervals
athlete=i4242
api_key=board-vm-test-key-$RANDOM$RANDOM
cp "$UPLOAD_CONFIG" /tmp/workoutd.toml.upload
fake_pid=''
restore() {
  cp /tmp/workoutd.toml.upload "$UPLOAD_CONFIG"
  rm -f "$UPLOAD_SECRETS"
  systemctl restart workoutd
  [[ -n $fake_pid ]] && kill "$fake_pid" 2> /dev/null
  wait 2> /dev/null
  upload_network gone
  rm -rf "$state"
}
trap restore EXIT

# A ride still going (another test's) ends before the platform is configured: it is not this
# test's to send (a target takes the rides not yet ended when it is first configured).
case $(wkd_state) in prepared | running | paused) workoutctl stop > /dev/null; wait_for 15 state_is ended ;; esac

# The board offline: its interface down, without an address.
upload_network down || { result "$name" FAIL "cannot make the dummy interface"; exit 0; }
rm -rf "$state"
fake_intervals_icu "$state" "$athlete" "$api_key" > /tmp/fake-intervals.why ||
  { result "$name" FAIL "the fake intervals.icu did not start: $(cat /tmp/fake-intervals.why)"; exit 0; }
note "fake intervals.icu on port $fake_port (pid $fake_pid)"
refused=$(upload_configure "https://198.51.100.1:$fake_port" "$athlete" "$api_key") ||
  problem "the [upload] configuration was refused: $refused"
since_restart=$(date '+%Y-%m-%d %H:%M:%S')
systemctl restart workoutd
wait_for 60 wkd_status > /dev/null || problem "workoutd did not come back with [upload] configured"
uploads_condition() { wkd_status | jq -r '.devices.uploads // ""'; }
has_uploads_condition() { [[ -n $(uploads_condition) ]]; }
wait_for 20 has_uploads_condition || true
note "uploads device: $(uploads_condition)"
service_journal() { journalctl -u workoutd --since "$since_restart" --no-pager -o cat; }
service_journal | grep -q "cannot watch the network" &&
  problem "the uploader cannot watch the network under the unit: $(service_journal | grep 'cannot watch the network' | tail -1)"

# ride SECONDS: a ride recorded and ended; sets $session
ride() {
  workoutctl start > /dev/null
  wait_for 30 state_is running || problem "start: state '$(wkd_state)'"
  session=$(wkd_field .sessionId)
  sleep "$1"
  workoutctl stop > /dev/null
  wait_for 15 state_is ended || problem "stop: state '$(wkd_state)'"
}
# job FIELD: the field of $session's intervals.icu job (jq path)
job() { upload_job "$session" "$1"; }
done_or_failed() { [[ $(job .state) == done || $(job .state) == failed ]]; }
export_of() { session_export "$session" "$1"; }
activities() { fake_activities "$state"; }

# --- 1. offline for the whole ride, up at home -------------------------------------------
ride 8
ride1=$session
note "ride 1: session $ride1"
has_job() { [[ -n $(job .state) ]]; }
wait_for 30 has_job || problem "no intervals.icu job for session $ride1: $(timeout 20 workoutctl uploads 2>&1 | tail -n 3)"
# Two failed attempts: the next retry is 60 s away (UploadBackoff: 30 s, then doubled), which
# the network's coming up must beat.
failed_twice() { (( $(job .attempts) >= 2 )) && [[ $(job .state) == queued ]]; }
wait_for 60 failed_twice || problem "the job did not fail twice offline: state '$(job .state)', $(job .attempts) attempts, '$(job .reason)'"
offline_reason=$(job .reason)
retry_at=$(job .retryAt)
note "offline: $(timeout 20 workoutctl uploads --session "$ride1" | tail -n 1)"
[[ -n $offline_reason ]] || problem "workoutctl uploads gives no reason for the failed attempts"
[[ -s $state/received.jsonl ]] && problem "the fake received something while the board was offline: $(head -c 300 "$state/received.jsonl")"

upload_network up || problem "cannot bring wkdup0 up with 198.51.100.1/24"
up_at=$(date +%s.%N)
t0=$EPOCHREALTIME
wait_for 60 done_or_failed
online_s=$(since "$t0")
note "online: $(timeout 20 workoutctl uploads --session "$ride1" | tail -n 1) after $online_s s"
[[ $(job .state) == done ]] || problem "ride 1 not done $online_s s after the network came up: '$(job .state)', '$(job .reason)'"
awk -v s="$online_s" 'BEGIN { exit !(s <= 60) }' || problem "ride 1 took $online_s s after the network came up (60 s at most)"
# Sent because the network came up, not because its retry time came.
sent_at=$(job .updatedAt)
awk -v sent="${sent_at:-0}" -v retry="${retry_at:-0}" 'BEGIN { exit !(sent < retry) }' ||
  problem "ride 1 went at its retry time ($retry_at), not when the network came up ($up_at): sent $sent_at"
service_journal | grep -q "uploads: the network changed" || problem "the journal has no 'the network changed'"
fit1=$(export_of fit)
[[ -f $fit1 ]] || problem "ride 1 has no FIT export"
sha1=$(sha256sum < "${fit1:-/dev/null}" | cut -d' ' -f1)
activities | grep -q "^$sha1 " || problem "the fake has no file with ride 1's FIT bytes ($fit1, $sha1): $(activities | xargs)"
fit_size=$(stat -c %s "${fit1:-/dev/null}")
# 198.51.100.1 is an Internet address to the units: the service's own drops packets to it, so
# the ride went through the sender's socket, an instance of workoutd-upload@.service a request.
sender_runs=$(journalctl --since "$since_restart" --no-pager -o cat -u 'workoutd-upload@*' | grep -c '^Started ')
deny=$(systemctl show -p IPAddressDeny --value workoutd.service)
note "the sender's instances since the restart: $sender_runs; workoutd.service IPAddressDeny=$deny"
((sender_runs >= 1)) || problem "no workoutd-upload@ instance ran: the ride did not go through the sender's socket"
[[ -n $deny ]] || problem "workoutd.service has no IPAddressDeny"

# --- 2. kill -9 mid-upload ------------------------------------------------------------
# The next body read over about 20 s (its size about ride 1's: the file plus the form's ~300
# bytes), well inside the client's low-speed limit (64 B/s for 60 s).
rate=$(( (fit_size + 300) / 20 + 1 ))
echo "slow $rate" > "$state/faults"
ride 8
ride2=$session
note "ride 2: session $ride2 (the fake reads $rate B/s)"
began() { grep -q '"began": true' "$state/received.jsonl" 2> /dev/null; }
wait_for 60 began || problem "no upload of ride 2 began: $(tail -n 2 "$state/received.jsonl" 2> /dev/null)"
sending_state=$(job .state)
pid=$(systemctl show -p MainPID --value workoutd.service)
restarts=$(systemctl show -p NRestarts --value workoutd.service)
kill -9 "$pid"
t1=$EPOCHREALTIME
note "killed pid $pid with the job '$sending_state'"
restarted() {
  [[ $(systemctl show -p ActiveState --value workoutd.service) == active &&
     $(systemctl show -p MainPID --value workoutd.service) != "$pid" ]]
}
wait_for 60 restarted || problem "not active again 60 s after kill -9"
wait_for 90 done_or_failed
after_kill_s=$(since "$t1")
note "after the kill: $(timeout 20 workoutctl uploads --session "$ride2" | tail -n 1) after $after_kill_s s"
note "the fake received: $(jq -c '{status, fault, began, duplicate, complete}' "$state/received.jsonl" | xargs)"
[[ $(job .state) == done ]] || problem "ride 2 not done after the restart: '$(job .state)', '$(job .reason)'"
[[ $sending_state == sending ]] || problem "ride 2's job was '$sending_state' while the fake read it, not sending"
(( $(systemctl show -p NRestarts --value workoutd.service) > restarts )) || problem "NRestarts did not grow"
# Let the killed request's slow read finish (answered, or recorded cut short), then count what
# the platform holds: two ride-2 requests are over after the "began" line.
ride2_requests_over() {
  awk '/"began": true/ { after = 1; next } after && (/"status"/ || /"complete": false/) { n++ } END { exit !(n >= 2) }' \
    "$state/received.jsonl"
}
wait_for 40 ride2_requests_over || note "the killed request's read had not ended: $(tail -n 2 "$state/received.jsonl" | xargs)"
fit2=$(export_of fit)
[[ -f $fit2 ]] || problem "ride 2 has no FIT export"
sha2=$(sha256sum < "${fit2:-/dev/null}" | cut -d' ' -f1)
held=$(activities | grep -c "^$sha2 ")
[[ $held == 1 ]] || problem "the fake holds $held files of ride 2 ($sha2), one expected: $(activities | xargs)"
(( $(activities | wc -l) == 2 )) || problem "the fake holds $(activities | wc -l) activities, two rides sent: $(activities | xargs)"
grep -q '"complete": false' "$state/received.jsonl" && note "a body was cut short (the killed client's): not an activity"
answers=$(jq -r 'select(.status) | .status' "$state/received.jsonl" | sort | uniq -c | xargs)
journalctl -u workoutd --no-pager -o cat | grep -q "$api_key" && problem "the API key is in the journal"
wkd_status | grep -q "$api_key" && problem "the API key is in the status"

if ((${#problems[@]})); then
  journalctl -u workoutd --no-pager -n 60 | grep -i -E "upload|network|curl|started|killed" | tail -n 20
  result "$name" FAIL "$(IFS=';'; echo "${problems[*]}")"
else
  result "$name" PASS "offline: 2 attempts failed ('$offline_reason'); network up: ride 1 on the fake in $online_s s (before its retry time); kill -9 mid-upload: restarted, ride 2 done $after_kill_s s after the kill, one file held (answers: $answers)"
fi
