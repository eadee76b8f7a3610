#!/bin/bash
# The phone page of the installed service under systemd ([web] enabled in the board's
# configuration): the page's files found in /usr/share/workoutd/web; the unit's address filter
# lets a phone on the board's own network in and nothing from the internet (the guest has no
# network: a dummy interface gets a private address, 192.168.77.1, and a public one,
# 203.0.113.1 (TEST-NET-3); a connection to either is a peer of that address to the filter);
# pairing with `workoutctl pair`'s code for a token, the status with it, nothing without it.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME
require_workoutd "$name"

problems=()
problem() { problems+=("$*"); note "PROBLEM: $*"; }
config=/etc/workoutd/workoutd.toml
cp "$config" /tmp/workoutd.toml.web
restore() {
  cp /tmp/workoutd.toml.web "$config"
  systemctl restart workoutd
  ip link del web0 2> /dev/null
}
trap restore EXIT

printf '\n[web]\nenabled = true\nport = 8080\n' >> "$config"
systemctl restart workoutd
wait_for 30 state_is notStarted || wait_for 5 wkd_status > /dev/null || problem "no status after the restart"
serving=$(journalctl -u workoutd -b --no-pager -o cat | grep 'web: serving the phone page' | tail -1)
note "journal: $serving"
[[ $serving == *"0.0.0.0:8080 from /usr/share/workoutd/web"* ]] || problem "the service does not serve the page from the package's files: '$serving'"

modprobe dummy 2> /dev/null
ip link add web0 type dummy && ip addr add 192.168.77.1/24 dev web0 && ip addr add 203.0.113.1/24 dev web0 &&
  ip link set web0 up || problem "cannot make the dummy interface"
address=192.168.77.1
note "reaching the page at $address:8080"
# From the internet: refused by the unit's IPAddressDeny=any (packets dropped: a time-out).
if timeout 5 python3 -c 'import socket; socket.create_connection(("203.0.113.1", 8080), timeout=3)' 2> /dev/null; then
  problem "a peer at a public address (203.0.113.1) reached the page"
fi
code=$(timeout 10 workoutctl pair --json | jq -r .code)
[[ $code =~ ^[0-9A-Z]{4}-[0-9A-Z]{4}$ ]] || problem "workoutctl pair gave no code: '$code'"

out=$(python3 - "$address" "$code" << 'PY'
import json, sys, urllib.request, urllib.error
host, code = sys.argv[1], sys.argv[2]
base = f"http://{host}:8080"
def call(path, body=None, headers=None):
    request = urllib.request.Request(base + path, data=body and json.dumps(body).encode(), headers=headers or {},
                                     method="POST" if body else "GET")
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()
page = call("/")
print("page", page[0], "Pair this phone" in page[2])
print("status-without-token", call("/api/status")[0])
paired = call("/api/pair", {"code": code}, {"Origin": base, "Content-Type": "application/json"})
cookie = (paired[1].get("Set-Cookie") or "").split(";")[0]
print("pair", paired[0], "HttpOnly" in (paired[1].get("Set-Cookie") or ""))
status = call("/api/status", headers={"Cookie": cookie})
print("status-with-token", status[0], json.loads(status[2]).get("board") if status[0] == 200 else status[2][:100])
print("replayed", call("/api/pair", {"code": code}, {"Origin": base, "Content-Type": "application/json"})[0])
PY
)
note "$(tr '\n' ';' <<< "$out")"
grep -qx "page 200 True" <<< "$out" || problem "the page is not served: $out"
grep -qx "status-without-token 401" <<< "$out" || problem "the status is shown without a token"
grep -qx "pair 200 True" <<< "$out" || problem "pairing with the code failed"
grep -q "^status-with-token 200 " <<< "$out" || problem "the token does not open the status"
grep -qx "replayed 410" <<< "$out" || problem "a used code was taken again"
hashes=$(sqlite3 -readonly /var/lib/workoutd/workoutd.db "SELECT length(token_hash) FROM web_client" 2>&1)
[[ $hashes == 64 ]] || problem "the database keeps no token hash (or more than one): '$hashes'"
journalctl -u workoutd -b --no-pager -o cat | grep -q "workoutd_token=" && problem "a token is in the journal"

if ((${#problems[@]})); then
  result "$name" FAIL "${problems[*]}"
else
  result "$name" PASS "served from the package's files to a private address ($address), not to a public one; paired, status with the token only, a used code refused"
fi
