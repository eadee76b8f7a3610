#!/usr/bin/env python3
"""Host-side checks of ant_stick.py's protocol core and its --stdio mode (no USB, no root):

  python3 Tests/BoardVM/guest/ant_stick_test.py

The messages the service's ANT link sends are built here byte for byte as ANTCommand makes
them (Sources/SensorProtocols/ANT/ANTCommand.swift).
"""
import os
import struct
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ant_stick  # noqa: E402
from ant_stick import message  # noqa: E402


def responses(out):
    return [m for m in ant_stick.FrameReader().feed(b"".join(out))]


def set_up(stick, channel, device_type, period, number=0, lib_config=0x80, frequency=57, timeout=12):
    """Reset, key, Lib Config, then assign, ID, period, frequency, search timeout and open."""
    sent = [
        message(0x46, [0] + [1, 2, 3, 4, 5, 6, 7, 8]),
        message(0x6E, [0, lib_config]),
        message(0x42, [channel, 0x00, 0]),
        message(0x51, [channel, number & 0xFF, number >> 8, device_type, 0]),
        message(0x43, [channel, period & 0xFF, period >> 8]),
        message(0x45, [channel, frequency]),
        message(0x44, [channel, timeout]),
        message(0x4B, [channel]),
    ]
    return responses(stick.receive(b"".join(sent), 100.0))


class ProtocolTests(unittest.TestCase):
    def test_reset_and_capabilities_as_an_antusb2_answers(self):
        stick = ant_stick.Stick()
        self.assertEqual(stick.receive(message(0x4A, [0]), 0), [bytes.fromhex("a4016f20ea")])
        self.assertEqual(stick.receive(message(0x4D, [0, 0x54]), 0), [bytes.fromhex("a40654080300ba360071")])

    def test_every_configuration_command_is_answered_with_no_error(self):
        stick = ant_stick.Stick()
        answers = set_up(stick, 0, 120, 8070)
        self.assertEqual(
            answers, [(0x40, bytes([ch, msg_id, 0])) for ch, msg_id in
                      [(0, 0x46), (0, 0x6E), (0, 0x42), (0, 0x51), (0, 0x43), (0, 0x45), (0, 0x44), (0, 0x4B)]])
        self.assertEqual(stick.lib_config, 0x80)

    def test_split_frames_noise_and_bad_checksums(self):
        stick = ant_stick.Stick()
        request = message(0x4D, [0, 0x54])
        broken = bytearray(message(0x4A, [0]))
        broken[-1] ^= 0xFF
        self.assertEqual(stick.receive(b"\x00\x13" + bytes(broken) + request[:3], 0), [])
        self.assertEqual(responses(stick.receive(request[3:], 0)), [(0x54, ant_stick.CAPABILITIES)])

    def test_the_heart_rate_strap_paired_by_wildcard(self):
        stick = ant_stick.Stick()
        set_up(stick, 0, 120, 8070)
        pages = responses(stick.due(100.0 + 0.1 + 70 * 8070 / 32768))
        self.assertEqual(len(pages), 71)
        for msg_id, content in pages:
            self.assertEqual(msg_id, 0x4E)
            self.assertEqual(content[0], 0)
            # Flagged extended data: the channel ID the wildcard search found.
            self.assertEqual(content[9], 0x80)
            self.assertEqual(struct.unpack("<HBB", content[10:14]), (4242, 120, 1))
        payloads = [content[1:9] for _, content in pages]
        toggles = [p[0] >> 7 for p in payloads]
        self.assertEqual(toggles[:12], [0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0])
        self.assertEqual({p[0] & 0x7F for p in payloads[60:64]}, {0}, "block 15: background page 0")
        rr = []
        for p in payloads:
            self.assertTrue(138 <= p[7] <= 142, p[7])
            if p[0] & 0x7F == 4:
                previous, last = struct.unpack("<H", p[2:4])[0], struct.unpack("<H", p[4:6])[0]
                if previous != last:
                    rr.append((last - previous) & 0xFFFF)
        self.assertGreater(len(rr), 30)
        # 60/142..60/138 s in 1/1024 s.
        self.assertTrue(all(432 <= r <= 446 for r in rr), rr)
        self.assertEqual(responses([stick.request(0, 0x51)]), [(0x51, bytes([0, 0x92, 0x10, 120, 1]))])

    def test_the_power_meter(self):
        stick = ant_stick.Stick()
        set_up(stick, 1, 11, 8182, lib_config=0xE0)
        pages = [c for _, c in responses(stick.due(100.0 + 0.1 + 121 * 8182 / 32768))]
        self.assertEqual(len(pages), 122)
        self.assertEqual(pages[0][9], 0xE0)
        self.assertEqual(len(pages[0]), 1 + 8 + 1 + 4 + 3 + 2)
        power_pages = [p[1:9] for p in pages if p[1] == 0x10]
        battery = [p[1:9] for p in pages if p[1] == 0x52]
        self.assertEqual(len(battery), 2)
        self.assertEqual(battery[0][7], 0xA3)
        for a, b in zip(power_pages, power_pages[1:]):
            events = (b[1] - a[1]) & 0xFF
            watts = ((struct.unpack("<H", b[4:6])[0] - struct.unpack("<H", a[4:6])[0]) & 0xFFFF) / events
            self.assertTrue(195 <= watts <= 205, watts)
            self.assertTrue(88 <= b[3] <= 92, b[3])

    def test_nothing_in_range_times_out_and_closes(self):
        stick = ant_stick.Stick()
        set_up(stick, 2, 121, 8086, timeout=2)
        self.assertEqual(stick.due(104.9), [])
        self.assertEqual(
            responses(stick.due(105.0)), [(0x40, bytes([2, 1, 0x01])), (0x40, bytes([2, 1, 0x07]))])
        self.assertEqual(stick.due(200.0), [])

    def test_not_on_ant_plus_frequency_finds_nothing(self):
        stick = ant_stick.Stick()
        set_up(stick, 0, 120, 8070, frequency=66, timeout=255)
        self.assertEqual(stick.due(1000.0), [])

    def test_close_and_wrong_states(self):
        stick = ant_stick.Stick()
        set_up(stick, 0, 120, 8070)
        self.assertEqual(responses(stick.receive(message(0x4B, [0]), 101)), [(0x40, bytes([0, 0x4B, 0x15]))])
        self.assertEqual(
            responses(stick.receive(message(0x4C, [0]), 101)),
            [(0x40, bytes([0, 0x4C, 0])), (0x40, bytes([0, 0x01, 0x07]))])
        self.assertEqual(stick.due(200.0), [])
        self.assertEqual(responses(stick.receive(message(0x4B, [5]), 101)), [(0x40, bytes([5, 0x4B, 0x15]))])
        self.assertEqual(responses(stick.receive(message(0x46, [3] + [0] * 8), 101)), [(0x40, bytes([3, 0x46, 0x29]))])


class StdioTests(unittest.TestCase):
    def test_the_protocol_over_stdin_and_stdout(self):
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ant_stick.py")
        sent = message(0x4A, [0]) + message(0x4D, [0, 0x54])
        done = subprocess.run([sys.executable, script, "--stdio"], input=sent, capture_output=True, timeout=20)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout, bytes.fromhex("a4016f20ea") + bytes.fromhex("a40654080300ba360071"))


if __name__ == "__main__":
    unittest.main()
