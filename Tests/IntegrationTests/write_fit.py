#!/usr/bin/env python3
"""Writes a small FIT activity for the replay tool's tests (ReplayToolTests.swift): a ride east at
8 m/s, one record a second, with the timer events asked for, whatever maker and trigger.

Usage: write_fit.py OUT.fit MANUFACTURER RECORDS [EVENT ...]
  MANUFACTURER  the FIT profile's number (294 COROS, 6 SRM, 255 development)
  RECORDS       seconds from the start with a record, as ranges: 0-99,130-239
  EVENT         SECONDS:EVENT_TYPE:TRIGGER, a timer event (event_type start, stop, stop_all,
                stop_disable_all; timer_trigger manual, auto, fitness_equipment)

Written from the FIT protocol (file header, definition and data messages, CRC-16) and profile
(file_id, event, record), with nothing but Python; then read back with fitdecode, its CRCs
checked, and with Garmin's own decoder's integrity check, so a file that either refuses fails
here, not in the tool under test.
"""
import struct
import sys

# 2026-05-01T07:30:00Z as FIT time: seconds since 1989-12-31T00:00:00Z.
FIT_EPOCH = 631065600
START = 1777620600 - FIT_EPOCH
EVENT_TYPES = {"start": 0, "stop": 1, "stop_all": 4, "stop_disable": 8, "stop_disable_all": 9}
TRIGGERS = {"manual": 0, "auto": 1, "fitness_equipment": 2}
DEG = 2**31 / 180.0  # semicircles a degree

# The FIT protocol's CRC-16, four bits at a time.
CRC_TABLE = [0x0000, 0xCC01, 0xD801, 0x1400, 0xF001, 0x3C00, 0x2800, 0xE401,
             0xA001, 0x6C00, 0x7800, 0xB401, 0x5000, 0x9C01, 0x8801, 0x4400]


def crc16(data, crc=0):
    for byte in data:
        for nibble in (byte & 0xF, byte >> 4):
            tmp = CRC_TABLE[crc & 0xF]
            crc = (crc >> 4) & 0x0FFF
            crc = crc ^ tmp ^ CRC_TABLE[nibble]
    return crc


# Messages: (global number, [(field number, struct format, base type)]), little-endian.
FILE_ID = (0, [(0, "B", 0x00), (1, "H", 0x84), (2, "H", 0x84), (3, "I", 0x8C), (4, "I", 0x86)])
EVENT = (21, [(253, "I", 0x86), (0, "B", 0x00), (1, "B", 0x00), (3, "I", 0x86), (4, "B", 0x02)])
RECORD = (20, [(253, "I", 0x86), (0, "i", 0x85), (1, "i", 0x85), (2, "H", 0x84), (3, "B", 0x02),
               (4, "B", 0x02), (6, "H", 0x84), (7, "H", 0x84), (13, "b", 0x01)])


def definition(local, message):
    number, fields = message
    out = struct.pack("<BBBHB", 0x40 | local, 0, 0, number, len(fields))
    for field, fmt, base in fields:
        out += struct.pack("<BBB", field, struct.calcsize(fmt), base)
    return out


def data(local, message, *values):
    return bytes([local]) + struct.pack("<" + "".join(f for _, f, _ in message[1]), *values)


def main(out, manufacturer, ranges, events):
    seconds = []
    for part in ranges.split(","):
        first, last = part.split("-")
        seconds += range(int(first), int(last) + 1)
    body = definition(0, FILE_ID) + data(0, FILE_ID, 4, int(manufacturer), 1, 12345, START)
    body += definition(1, EVENT) + definition(2, RECORD)
    timer = sorted((int(t), kind, trigger) for t, kind, trigger in (e.split(":") for e in events))
    moved = 0
    for second in range(max(seconds + [t for t, _, _ in timer]) + 1):
        for t, kind, trigger in timer:
            if t == second:
                # event 0 is timer; its data field is then the timer_trigger; event_group 0
                body += data(1, EVENT, START + t, 0, EVENT_TYPES[kind], TRIGGERS[trigger], 0)
        if second in seconds:
            # Only recorded seconds move the rider: a gap is a standstill (an auto-pause).
            latitude, longitude = 45.5, 7.25 + moved * 8 / (111_320 * 0.7009)
            moved += 1
            body += data(2, RECORD, START + second, round(latitude * DEG), round(longitude * DEG),
                         round((300 + 500) * 5), 140, 85, 8000, 200, 18)
    header = struct.pack("<BBHI4s", 14, 0x20, 2132, len(body), b".FIT")
    header += struct.pack("<H", crc16(header))
    content = header + body
    with open(out, "wb") as f:
        f.write(content + struct.pack("<H", crc16(content)))

    import fitdecode
    from garmin_fit_sdk import Decoder, Stream
    with fitdecode.FitReader(out, check_crc=fitdecode.CrcCheck.RAISE) as reader:
        records = sum(1 for frame in reader if isinstance(frame, fitdecode.FitDataMessage) and frame.name == "record")
    decoder = Decoder(Stream.from_file(out))
    if not decoder.check_integrity() or records != len(seconds):
        sys.exit(f"write_fit.py: {out} does not read back ({records} records of {len(seconds)})")
    _, errors = Decoder(Stream.from_file(out)).read()
    if errors:
        sys.exit(f"write_fit.py: {out}: Garmin's decoder: {errors}")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit("usage: " + __doc__.split("Usage: ", 1)[1].split("\n")[0])
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])
