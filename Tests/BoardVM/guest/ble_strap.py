#!/usr/bin/env python3
"""A heart-rate strap (or, with --power, a power meter) for the board VM: an ATT server on a raw
L2CAP LE socket (fixed channel CID 4) bound to one of btvirt's controllers, the other end of
what workoutd connects to.

  ble_strap.py ADDRESS STATUS_FILE [--power]

--power serves Cycling Power instead (0x1818: 0x2A63 notify + CCCD, 0x2A65 feature "wheel and
crank revolution data supported", 0x2A5D sensor location "left crank"); once subscribed it
notifies once a second: flags 0x0030 (wheel and crank revolution data), 200..239 W, four more
wheel revolutions with their event time 1 s later (2048/2048 s: 8.42 m/s on a 2105 mm wheel),
then one more crank revolution with its event time 1 s later (1024/1024 s: 60 rpm).

Serves GAP (device name), Heart Rate (0x2A37 notify + CCCD, 0x2A38 body sensor location) and
Battery (0x2A19 read/notify + CCCD), answering the ATT requests a GATT client makes (Core v5.4
Vol 3 Part F 3.4). Once the client has written the heart-rate CCCD it notifies once a second:
flags 0x16 (uint8, contact detected, RR present), 120..139 bpm, one RR interval of 60/bpm s in
1/1024 s. Takes one connection after another; each line of STATUS_FILE says what happened
("listening", "connected", "subscribed", "notified N", "closed").
"""
import ctypes
import os
import select
import socket
import struct
import sys
import time

AF_BLUETOOTH, BTPROTO_L2CAP, ATT_CID, BDADDR_LE_PUBLIC = 31, 0, 4, 1
libc = ctypes.CDLL(None, use_errno=True)


def sockaddr_l2(address):
    """struct sockaddr_l2 (BlueZ lib/l2cap.h): family, psm, bdaddr (LSB first), cid, type."""
    bdaddr = bytes(int(x, 16) for x in reversed(address.split(":")))
    return struct.pack("<HH6sHBx", AF_BLUETOOTH, 0, bdaddr, ATT_CID, BDADDR_LE_PUBLIC)


def u16(v):
    return struct.pack("<H", v)


# handle -> (attribute type, value); the layout of Vol 3 Part G 3.
DATABASE = {
    0x01: (0x2800, u16(0x1800)),
    0x02: (0x2803, bytes([0x02]) + u16(0x03) + u16(0x2A00)),
    0x03: (0x2A00, b"workoutd-hil-strap"),
    0x10: (0x2800, u16(0x180D)),
    0x11: (0x2803, bytes([0x10]) + u16(0x12) + u16(0x2A37)),
    0x12: (0x2A37, b""),
    0x13: (0x2902, b"\x00\x00"),
    0x14: (0x2803, bytes([0x02]) + u16(0x15) + u16(0x2A38)),
    0x15: (0x2A38, b"\x01"),
    0x20: (0x2800, u16(0x180F)),
    0x21: (0x2803, bytes([0x12]) + u16(0x22) + u16(0x2A19)),
    0x22: (0x2A19, bytes([77])),
    0x23: (0x2902, b"\x00\x00"),
}
GROUP_END = {0x01: 0x03, 0x10: 0x15, 0x20: 0x23}
# The power meter: the same handles for the measurement and its CCCD (0x12, 0x13).
POWER_DATABASE = {
    0x01: (0x2800, u16(0x1800)),
    0x02: (0x2803, bytes([0x02]) + u16(0x03) + u16(0x2A00)),
    0x03: (0x2A00, b"workoutd-hil-power"),
    0x10: (0x2800, u16(0x1818)),
    0x11: (0x2803, bytes([0x10]) + u16(0x12) + u16(0x2A63)),
    0x12: (0x2A63, b""),
    0x13: (0x2902, b"\x00\x00"),
    0x14: (0x2803, bytes([0x02]) + u16(0x15) + u16(0x2A65)),
    0x15: (0x2A65, struct.pack("<I", 0x0C)),
    0x16: (0x2803, bytes([0x02]) + u16(0x17) + u16(0x2A5D)),
    0x17: (0x2A5D, bytes([0x05])),
}
POWER_GROUP_END = {0x01: 0x03, 0x10: 0x17}
MTU = 23


def error(op, handle, code):
    return bytes([0x01, op]) + u16(handle) + bytes([code])


def answer(db, request, group_end=GROUP_END):
    op = request[0]
    if op == 0x02:  # Exchange MTU: we keep the minimum
        return bytes([0x03]) + u16(MTU)
    if op in (0x04, 0x08, 0x10) and len(request) >= 5:
        start, end = struct.unpack_from("<HH", request, 1)
        if start == 0 or start > end:
            return error(op, start, 0x01)
        handles = [h for h in sorted(db) if start <= h <= end]
        entries = []
        if op == 0x10:  # Read By Group Type (primary services)
            kind = struct.unpack_from("<H", request, 5)[0]
            for h in handles:
                if db[h][0] == kind == 0x2800 and 2 + (len(entries) + 1) * 6 <= MTU:
                    entries.append(u16(h) + u16(group_end[h]) + db[h][1])
            return bytes([0x11, 6]) + b"".join(entries) if entries else error(op, start, 0x0A)
        if op == 0x08:  # Read By Type
            kind = struct.unpack_from("<H", request, 5)[0]
            for h in handles:
                if db[h][0] == kind:
                    entry = u16(h) + db[h][1]
                    if entries and len(entry) != len(entries[0]) or 2 + sum(map(len, entries)) + len(entry) > MTU:
                        break
                    entries.append(entry)
            return bytes([0x09, len(entries[0])]) + b"".join(entries) if entries else error(op, start, 0x0A)
        for h in handles:  # Find Information, 16-bit UUIDs
            if 2 + (len(entries) + 1) * 4 <= MTU:
                entries.append(u16(h) + u16(db[h][0]))
        return bytes([0x05, 0x01]) + b"".join(entries) if entries else error(op, start, 0x0A)
    if op == 0x0A and len(request) == 3:  # Read
        h = struct.unpack_from("<H", request, 1)[0]
        if h not in db:
            return error(op, h, 0x01)
        if db[h][0] in (0x2A37, 0x2A63):  # notify only: Read Not Permitted
            return error(op, h, 0x02)
        return bytes([0x0B]) + db[h][1][: MTU - 1]
    if op == 0x12 and len(request) >= 3:  # Write (CCCDs only)
        h = struct.unpack_from("<H", request, 1)[0]
        if h not in db:
            return error(op, h, 0x01)
        if db[h][0] != 0x2902:
            return error(op, h, 0x03)
        if len(request) != 5:
            return error(op, h, 0x0D)
        db[h] = (0x2902, request[3:5])
        return bytes([0x13])
    if op in (0x1E, 0x52):  # confirmation, write command: no answer
        return None
    return error(op, 0, 0x06)


def main():
    address, status_path = sys.argv[1], sys.argv[2]
    power = "--power" in sys.argv[3:]
    database, group_end = (POWER_DATABASE, POWER_GROUP_END) if power else (DATABASE, GROUP_END)
    status = open(status_path, "a", buffering=1)
    say = lambda what: status.write(f"{time.monotonic():.2f} {what}\n")
    server = socket.socket(AF_BLUETOOTH, socket.SOCK_SEQPACKET, BTPROTO_L2CAP)
    local = ctypes.create_string_buffer(sockaddr_l2(address), 14)
    if libc.bind(server.fileno(), local, 14) < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"bind to {address} ATT: {os.strerror(err)}")
    server.listen(1)
    say("listening")
    while True:
        connection, _ = server.accept()
        say("connected")
        db = dict(database)
        sent, due = 0, 0.0
        try:
            while True:
                if select.select([connection], [], [], 0.05)[0]:
                    request = connection.recv(512)
                    if not request:
                        break
                    reply = answer(db, request, group_end)
                    if reply:
                        connection.send(reply)
                    if request[0] == 0x12 and request[1:3] == u16(0x13) and request[3:5] == b"\x01\x00":
                        say("subscribed")
                if db[0x13][1] == b"\x01\x00" and time.monotonic() >= due:
                    if power:
                        watts, revolutions, event = 200 + sent % 40, sent + 1, ((sent + 1) * 1024) % 65536
                        wheel, wheel_event = 4 * (sent + 1), ((sent + 1) * 2048) % 65536
                        value = (u16(0x0030) + struct.pack("<h", watts) + struct.pack("<I", wheel)
                                 + u16(wheel_event) + u16(revolutions % 65536) + u16(event))
                    else:
                        bpm = 120 + sent % 20
                        value = bytes([0x16, bpm]) + u16(round(60 / bpm * 1024))
                    connection.send(bytes([0x1B]) + u16(0x12) + value)
                    sent += 1
                    due = time.monotonic() + 1
                    say(f"notified {sent}")
        except OSError as e:
            say(f"link error {e}")
        connection.close()
        say("closed")


if __name__ == "__main__":
    main()
