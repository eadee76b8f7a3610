#!/usr/bin/python3
"""Host side of the board's GPS UART: stream a real NMEA capture into the QEMU
chardev socket that is the guest's /dev/ttyS1.

The capture is sent at its own pace (its RMC/ZDA clock), looped, and its times
are shifted by whole seconds so that the receiver's clock reads the host's UTC
time and never goes backwards, across loops and across VM reboots: the feeder
reconnects whenever a new QEMU listens on the same socket path, so one feeder
serves a whole power-cut series. Positions and everything else stay as captured.

Usage: gps-feed.py SOCKET_PATH CAPTURE.log [--max-seconds N] [--speed X]
Stops after --max-seconds, or when the file SOCKET_PATH.stop appears.
"""
import argparse
import datetime as dt
import os
import socket
import sys
import threading
import time

TIME_FIELD = {"GGA": 1, "GLL": 5, "RMC": 1, "ZDA": 1}   # index of hhmmss(.ss)


def checksum(body):
    c = 0
    for ch in body:
        c ^= ord(ch)
    return "%02X" % c


def parse(line):
    """-> (fields, sentence type) for a checksummed $-sentence, else None."""
    if not line.startswith("$") or "*" not in line:
        return None
    body = line[1:line.rindex("*")]
    fields = body.split(",")
    return fields, fields[0][-3:]


def capture_clock(fields, kind, date):
    """UTC datetime a RMC/ZDA sentence states (they carry the date), else None."""
    try:
        hms = fields[1]
        if kind == "RMC" and fields[9]:
            d = fields[9]
            date = dt.date(2000 + int(d[4:6]), int(d[2:4]), int(d[0:2]))
        elif kind == "ZDA" and fields[4]:
            date = dt.date(int(fields[4]), int(fields[3]), int(fields[2]))
        elif kind not in ("RMC", "ZDA"):
            return None
        if date is None or len(hms) < 6:
            return None
        return dt.datetime(date.year, date.month, date.day, int(hms[0:2]), int(hms[2:4]), int(hms[4:6]),
                           tzinfo=dt.timezone.utc)
    except (ValueError, IndexError):
        return None


def shifted(fields, kind, shift, date):
    """Sentence with its time/date fields moved by `shift` (a timedelta)."""
    i = TIME_FIELD.get(kind)
    if i is None or len(fields) <= i or len(fields[i]) < 6:
        return None
    hms = fields[i]
    try:
        t = dt.datetime(date.year, date.month, date.day, int(hms[0:2]), int(hms[2:4]), int(hms[4:6]),
                        tzinfo=dt.timezone.utc) + shift
    except ValueError:
        return None
    fields = list(fields)
    fields[i] = t.strftime("%H%M%S") + hms[6:]
    if kind == "RMC" and len(fields) > 9 and fields[9]:
        fields[9] = t.strftime("%d%m%y")
    if kind == "ZDA" and len(fields) > 4 and fields[4]:
        fields[2], fields[3], fields[4] = t.strftime("%d"), t.strftime("%m"), t.strftime("%Y")
    body = ",".join(fields)
    return "$%s*%s\r\n" % (body, checksum(body))


def load(path):
    """Capture as [(line, fields, kind, clock)], comments dropped."""
    out, date = [], None
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\r\n")
            if not line or line.startswith("#"):
                continue
            p = parse(line)
            fields, kind = p if p else (None, None)
            clock = capture_clock(fields, kind, date) if p else None
            if clock:
                date = clock.date()
            out.append((line + "\r\n", fields, kind, clock))
    return out


received = 0     # bytes gpsd sent to the "receiver" (probes, configuration)


def drain(sock):
    """Read what the guest writes to the UART, as a receiver would. gpsd sends
    probe strings and waits (tcdrain) until the UART has sent them; unread,
    they stall QEMU's UART transmitter and gpsd with it."""
    global received
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                return
            received += len(data)
    except OSError:
        return


def connect(path, deadline, stop_file):
    while time.monotonic() < deadline and not os.path.exists(stop_file):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            threading.Thread(target=drain, args=(s,), daemon=True).start()
            return s
        except OSError:
            s.close()
            time.sleep(0.2)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("capture")
    ap.add_argument("--max-seconds", type=float, default=3600)
    ap.add_argument("--speed", type=float, default=1.0, help="capture seconds per wall second")
    a = ap.parse_args()
    stop_file = a.socket + ".stop"
    deadline = time.monotonic() + a.max_seconds
    capture = load(a.capture)
    first = next(c for *_, c in capture if c)
    # the capture date in force at each line, for sentences that carry only a time
    date, dates = first.date(), []
    for _, _, _, clock in capture:
        date = clock.date() if clock else date
        dates.append(date)

    # capture time + shift = receiver time (whole seconds); set from the first
    # clock sentence so the GGA that precedes it is shifted too
    shift = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - first
    last_sent = None      # receiver time of the last clock sentence sent
    pace = None           # (wall monotonic, capture clock) pacing anchor
    sent = loops = connects = 0
    sock = None
    i = 0                 # next line; kept across reconnects so the track continues
    while time.monotonic() < deadline and not os.path.exists(stop_file):
        if sock is None:
            sock = connect(a.socket, deadline, stop_file)
            if sock is None:
                break
            connects += 1
            pace = None
        line, fields, kind, clock = capture[i]
        if clock:
            now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
            # Never behind the wall clock (after a loop or a reboot pause), never backwards.
            floor = max(now, last_sent + dt.timedelta(seconds=1)) if last_sent else now
            if clock + shift < floor - dt.timedelta(seconds=1):
                shift = floor - clock
                pace = None
            if pace is None:
                pace = (time.monotonic(), clock)
            due = pace[0] + (clock - pace[1]).total_seconds() / a.speed
            time.sleep(max(0.0, due - time.monotonic()))
            last_sent = max(last_sent, clock + shift) if last_sent else clock + shift
        out = line
        if fields and kind in TIME_FIELD:
            out = shifted(fields, kind, shift, dates[i]) or line
        try:
            sock.sendall(out.encode("ascii", "replace"))
        except OSError:          # QEMU went away (power cut): wait for the next one
            sock.close()
            sock = None
            continue
        sent += 1
        i += 1
        if i == len(capture):
            i, loops = 0, loops + 1
    print(f"gps-feed: {sent} sentences, {loops} full loops, {connects} connections, "
          f"{received} bytes received from the guest", file=sys.stderr)


if __name__ == "__main__":
    main()
