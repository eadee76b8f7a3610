#!/bin/bash
# gpsd on the board reads the receiver on /dev/ttyS1 (fed by the host with a
# real capture) and reports 3D fixes at the capture's position over its JSON
# protocol, as workoutd will read them.
set -uo pipefail
# shellcheck source=../lib.sh
source /usr/lib/workoutd-hil/lib.sh
name=$TEST_NAME

if ! systemctl is-active -q gpsd.service; then
  systemctl status --no-pager gpsd.service
  result "$name" FAIL "gpsd.service is $(systemctl is-active gpsd.service)"; exit 0
fi
python3 - "$name" "$GPS_DEVICE" <<'PY'
import json, socket, sys, time
name, device = sys.argv[1], sys.argv[2]
WANT = 10                       # 3D fixes with distinct times
# the capture: B&G Zeus 9 on the IJsselmeer, ~52.85 N 5.31 E, ~430 m path
LAT, LON = (52.84, 52.86), (5.29, 5.33)
t0 = time.monotonic()
s = socket.create_connection(("127.0.0.1", 2947), timeout=5)
s.sendall(b'?WATCH={"enable":true,"json":true}\n')
s.settimeout(2)
devices, fixes, first, problems = [], {}, None, []


def handle(m):
    global devices, first
    if m.get("class") == "DEVICES":
        devices = [d.get("path") for d in m.get("devices", [])]
        print("DEVICES", devices)
    if m.get("class") != "TPV" or m.get("mode", 0) < 3 or "lat" not in m:
        return
    if first is None:
        first = time.monotonic() - t0
        print(f"first 3D fix after {first:.2f} s: {json.dumps(m)[:200]}")
    if not (LAT[0] < m["lat"] < LAT[1] and LON[0] < m["lon"] < LON[1]):
        problems.append(f"fix at {m['lat']:.5f},{m['lon']:.5f} is not the capture's position")
    fixes.setdefault(m.get("time"), m)


pending = b""
while len(fixes) < WANT and time.monotonic() - t0 < 60:
    try:
        chunk = s.recv(65536)
    except socket.timeout:
        continue
    if not chunk:
        problems.append("gpsd closed the connection")
        break
    *complete, pending = (pending + chunk).split(b"\n")
    for raw in complete:
        handle(json.loads(raw))
times = [t for t in fixes if t]
print(f"{len(fixes)} distinct fix times, last TPV: {json.dumps(list(fixes.values())[-1]) if fixes else None}")
if device not in devices:
    problems.append(f"gpsd does not list {device} (devices: {devices})")
if times != sorted(times):
    problems.append("fix times go backwards")
if len(fixes) < WANT:
    problems.append(f"only {len(fixes)} 3D fixes with distinct times in 60 s")
if problems:
    print(f"{name}: FAIL ({'; '.join(problems[:3])})")
else:
    print(f"{name}: PASS ({len(fixes)} 3D fixes from {device}, first after {first:.1f} s, "
          f"{time.monotonic() - t0:.1f} s total)")
PY
