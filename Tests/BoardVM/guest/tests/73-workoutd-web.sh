#!/bin/bash
# The phone page of the installed service under systemd ([web] enabled in the board's
# configuration): the page's files found in /usr/share/workoutd/web; the unit's address filter
# lets a phone on the board's own network in and nothing from the internet (the guest has no
# network: a dummy interface gets a private address, 192.168.77.1, and a public one,
# 203.0.113.1 (TEST-NET-3); a connection to either is a peer of that address to the filter);
# pairing with `workoutctl pair`'s code for a token, the status with it, nothing without it; all
# over HTTPS with the certificate the service made at its first start, whose fingerprint is the
# one `workoutctl pair` gives, and plain HTTP sent to https://.
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
[[ $serving == *"0.0.0.0:8080 (HTTPS, certificate SHA-256 "*") from /usr/share/workoutd/web"* ]] ||
  problem "the service does not serve the page over HTTPS from the package's files: '$serving'"
key_mode=$(stat -c '%a %U' /var/lib/workoutd/web-key.pem 2>&1)
[[ $key_mode == "600 workoutd" ]] || problem "the board's TLS key is not the service's alone: '$key_mode'"

modprobe dummy 2> /dev/null
ip link add web0 type dummy && ip addr add 192.168.77.1/24 dev web0 && ip addr add 203.0.113.1/24 dev web0 &&
  ip link set web0 up || problem "cannot make the dummy interface"
address=192.168.77.1
note "reaching the page at $address:8080"
# From the internet: refused by the unit's IPAddressDeny=any (packets dropped: a time-out).
if timeout 5 python3 -c 'import socket; socket.create_connection(("203.0.113.1", 8080), timeout=3)' 2> /dev/null; then
  problem "a peer at a public address (203.0.113.1) reached the page"
fi
pairing=$(timeout 10 workoutctl pair --json)
code=$(jq -r .code <<< "$pairing")
fingerprint=$(jq -r .fingerprint <<< "$pairing")
[[ $code =~ ^[0-9A-Z]{4}-[0-9A-Z]{4}$ ]] || problem "workoutctl pair gave no code: '$code'"

out=$(python3 - "$address" "$code" "$fingerprint" << 'PY'
import hashlib, json, socket, ssl, sys, urllib.request, urllib.error
host, code, fingerprint = sys.argv[1], sys.argv[2], sys.argv[3]
base = f"https://{host}:8080"
# Trusted as a rider trusts it: by the fingerprint workoutctl pair printed, checked first.
context = ssl.create_default_context()
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE
with context.wrap_socket(socket.create_connection((host, 8080), timeout=10)) as tls:
    served = ":".join(f"{b:02X}" for b in hashlib.sha256(tls.getpeercert(binary_form=True)).digest())
    print("fingerprint", served == fingerprint, tls.version())
def call(path, body=None, headers=None, url=None):
    request = urllib.request.Request((url or base) + path, data=body and json.dumps(body).encode(),
                                     headers=headers or {}, method="POST" if body else "GET")
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()
class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args):
        return None
try:
    urllib.request.build_opener(NoRedirect).open(f"http://{host}:8080/", timeout=10)
    print("plain", "served")
except urllib.error.HTTPError as e:
    print("plain", e.code, e.headers.get("Location"))
page = call("/")
print("page", page[0], "Pair this phone" in page[2])
print("status-without-token", call("/api/status")[0])
paired = call("/api/pair", {"code": code}, {"Origin": base, "Content-Type": "application/json"})
cookie = (paired[1].get("Set-Cookie") or "").split(";")[0]
print("pair", paired[0], "HttpOnly" in (paired[1].get("Set-Cookie") or ""), "Secure" in (paired[1].get("Set-Cookie") or ""))
status = call("/api/status", headers={"Cookie": cookie})
print("status-with-token", status[0], json.loads(status[2]).get("board") if status[0] == 200 else status[2][:100])
print("replayed", call("/api/pair", {"code": code}, {"Origin": base, "Content-Type": "application/json"})[0])
PY
)
note "$(tr '\n' ';' <<< "$out")"
grep -q "^fingerprint True TLSv1.[23]$" <<< "$out" || problem "the served certificate is not the one workoutctl pair names ($fingerprint): $out"
grep -qx "plain 301 https://$address:8080/" <<< "$out" || problem "plain HTTP is not sent to https://: $out"
grep -qx "page 200 True" <<< "$out" || problem "the page is not served: $out"
grep -qx "status-without-token 401" <<< "$out" || problem "the status is shown without a token"
grep -qx "pair 200 True True" <<< "$out" || problem "pairing with the code failed (or the cookie is not Secure)"
grep -q "^status-with-token 200 " <<< "$out" || problem "the token does not open the status"
grep -qx "replayed 410" <<< "$out" || problem "a used code was taken again"
hashes=$(sqlite3 -readonly /var/lib/workoutd/workoutd.db "SELECT length(token_hash) FROM web_client" 2>&1)
[[ $hashes == 64 ]] || problem "the database keeps no token hash (or more than one): '$hashes'"
journalctl -u workoutd -b --no-pager -o cat | grep -q "workoutd_token=" && problem "a token is in the journal"

if ((${#problems[@]})); then
  result "$name" FAIL "${problems[*]}"
else
  result "$name" PASS "served over HTTPS (the certificate workoutctl pair names) from the package's files to a private address ($address), not to a public one; plain HTTP sent to https://; paired, status with the token only, a used code refused"
fi
