#!/usr/bin/env python3
"""A USB ANT stick for the board VM, with an ANT+ heart-rate strap and a power meter in range.

  ant_stick.py usb STATUS_FILE [--udc NAME]   the stick as a USB device (configfs + FunctionFS)
  ant_stick.py --stdio                        the same protocol over stdin/stdout bytes, no USB
  ant_stick.py pull [--udc NAME]              the stick pulled out (its gadget unbound)
  ant_stick.py plug [--udc NAME]              and plugged in again (bound to the UDC)
  ant_stick.py remove                         the gadget taken down (after the stick's process)

As USB: a configfs gadget (the kernel's Documentation/usb/gadget_configfs.rst) identified as
Dynastream's ANTUSB2 (0fcf:1008, "ANT USBStick2"), one FunctionFS function
(Documentation/usb/functionfs.rst) with one vendor-class interface, bulk IN and bulk OUT
(64 bytes full speed, 512 high speed), bound to dummy_hcd's UDC, so the same kernel sees it as a
plugged-in stick. Each line of STATUS_FILE says what happened ("ready", "enabled", "disabled",
"reset", "open CHANNEL ...", "found CHANNEL ...", "closed CHANNEL").

The stick answers the ANT message protocol (ANT Message Protocol and Usage) as an ANTUSB2 does:
Reset System -> Startup (reason 0x20, "command reset"); Request Message 0x54 -> Capabilities
(8 channels, 3 networks, advanced options 0xBA, advanced options 2 0x36: an ANTUSB2's answer,
extended messages supported); every configuration command -> a Channel Response, no error (any
network key is taken); Lib Config remembered: data messages carry the sender's channel ID, RSSI
and timestamp as it asks. Open Channel on ANT+'s 2457 MHz for a device type in range starts its
broadcasts, one per channel period:

  heart-rate strap: device type 120, number 4242, transmission type 1. Page 4 (previous heart
    beat event time: one RR interval from each page) with the page toggle flipped every 4
    messages, and every 16th block of 4 a background page in turn (0, 1, 2, 3: Heart Rate
    profile, 5.2-5.3). About 140 bpm (138-142), beat times consistent with it.
  power meter: device type 11, number 5151, transmission type 5. Page 0x10 (power only) with
    cadence 88-92 rpm, 195-205 W accumulated; every 61st message the battery page 0x52.

A channel whose device type is in range finds its sensor after 0.1 s; one that finds nothing
gets EVENT_RX_SEARCH_TIMEOUT and EVENT_CHANNEL_CLOSED after its search timeout (2.5 s units;
255: never).
"""
import math
import os
import queue
import struct
import sys
import threading
import time

SYNC = 0xA4
NO_ERROR, RX_SEARCH_TIMEOUT, CHANNEL_CLOSED = 0x00, 0x01, 0x07
CHANNEL_IN_WRONG_STATE, INVALID_MESSAGE, INVALID_NETWORK_NUMBER, INVALID_PARAMETER = 0x15, 0x28, 0x29, 0x33
# An ANTUSB2's Capabilities (mvillalba/python-ant#21: A4 06 54 08 03 00 BA 36 00 71).
CAPABILITIES = bytes([8, 3, 0x00, 0xBA, 0x36, 0x00])
CHANNELS, NETWORKS, ANT_PLUS_FREQUENCY = 8, 3, 57
# Commands answered with a Channel Response and otherwise only remembered: 0x46 network key,
# 0x42 assign, 0x41 unassign, 0x51 channel ID, 0x43 period, 0x45 frequency, 0x44 search timeout,
# 0x63 low-priority search timeout, 0x47 / 0x60 transmit power, 0x66 enable extended messages,
# 0x6E Lib Config, 0x75 proximity search.
CONFIGURATION = {0x46, 0x42, 0x41, 0x51, 0x43, 0x45, 0x44, 0x63, 0x47, 0x60, 0x66, 0x6E, 0x75}


def message(msg_id, content):
    """Sync, length, ID, content, checksum (ANT Message Protocol 7.1)."""
    body = bytes([SYNC, len(content), msg_id]) + bytes(content)
    checksum = 0
    for b in body:
        checksum ^= b
    return body + bytes([checksum])


class FrameReader:
    """ANT messages from a byte stream however it is split; bad ones skipped a byte at a time."""

    def __init__(self):
        self.buffer = b""

    def feed(self, data):
        self.buffer += data
        out = []
        while True:
            start = self.buffer.find(bytes([SYNC]))
            if start < 0:
                self.buffer = b""
                return out
            self.buffer = self.buffer[start:]
            if len(self.buffer) < 2:
                return out
            length = self.buffer[1]
            if length == 0 or length > 41:
                self.buffer = self.buffer[1:]
                continue
            if len(self.buffer) < length + 4:
                return out
            frame, self.buffer = self.buffer[: length + 4], self.buffer[length + 4 :]
            if message(frame[2], frame[3:-1]) != frame:
                self.buffer = frame[1:] + self.buffer
                continue
            out.append((frame[2], frame[3:-1]))


class HeartRateStrap:
    device_type, number, transmission = 120, 4242, 1

    def __init__(self, start):
        self.start = start
        self.beats = 0
        self.last_beat = start
        self.previous_beat = start
        self.messages = 0

    def bpm(self, at):
        return 140 + 2 * math.sin((at - self.start) / 10)

    def page(self, now):
        while self.last_beat + 60 / self.bpm(self.last_beat) <= now:
            self.previous_beat = self.last_beat
            self.last_beat += 60 / self.bpm(self.last_beat)
            self.beats += 1
        block = self.messages // 4
        toggle = 0x80 if block % 2 else 0
        self.messages += 1

        def ticks(t):
            return round((t - self.start) * 1024) & 0xFFFF

        if block % 16 == 15:
            page = (block // 16) % 4
            middle = {
                0: b"\xff\xff\xff",
                1: struct.pack("<I", int(now - self.start) // 2)[:3],
                2: bytes([1]) + struct.pack("<H", 0),
                3: bytes([1, 1, 1]),
            }[page]
        else:
            page, middle = 4, bytes([0xFF]) + struct.pack("<H", ticks(self.previous_beat))
        rate = round(self.bpm(self.last_beat))
        return bytes([page | toggle]) + middle + struct.pack("<HBB", ticks(self.last_beat), self.beats & 0xFF, rate)


class PowerMeter:
    device_type, number, transmission = 11, 5151, 5

    def __init__(self, start):
        self.start = start
        self.events = 0
        self.accumulated = 0
        self.messages = 0

    def page(self, now):
        self.messages += 1
        t = now - self.start
        if self.messages % 61 == 0:
            # Common page 82, battery: one battery, 2 s operating time units, 3.5 V, good.
            return bytes([0x52, 0xFF, 0xFF]) + struct.pack("<I", int(t) // 2)[:3] + bytes([0x80, 0xA3])
        power = round(200 + 5 * math.sin(t / 7))
        cadence = round(90 + 2 * math.sin(t / 5))
        self.events = (self.events + 1) & 0xFF
        self.accumulated = (self.accumulated + power) & 0xFFFF
        return bytes([0x10, self.events, 0xFF, cadence]) + struct.pack("<HH", self.accumulated, power)


class Stick:
    """The protocol core: `receive(bytes, now)` and `due(now)` give the messages to send."""

    def __init__(self, say=lambda what: None):
        self.say = say
        self.reader = FrameReader()
        self.reset()

    def reset(self):
        self.lib_config = 0
        self.keys = {}
        self.channels = [self.fresh_channel() for _ in range(CHANNELS)]

    @staticmethod
    def fresh_channel():
        return {
            "assigned": False,
            "network": 0,
            "id": (0, 0, 0),
            "period": 8192,
            "frequency": 66,
            "timeout": 10,
            "open": False,
            "sensor": None,
            "next": None,
            "search_ends": None,
        }

    def receive(self, data, now):
        out = []
        for msg_id, content in self.reader.feed(data):
            out += self.command(msg_id, content, now)
        return out

    def response(self, channel, msg_id, code=NO_ERROR):
        return message(0x40, [channel, msg_id, code])

    def command(self, msg_id, c, now):
        if msg_id == 0x4A:
            self.reset()
            self.say("reset")
            return [message(0x6F, [0x20])]
        if msg_id == 0x4D and len(c) >= 2:
            return [self.request(c[0], c[1])]
        if msg_id == 0x4B and len(c) >= 1:
            return [self.open(c[0], now)]
        if msg_id == 0x4C and len(c) >= 1:
            return self.close(c[0])
        if msg_id not in CONFIGURATION or not c:
            return [self.response(c[0] if c else 0, msg_id, INVALID_MESSAGE)]
        if msg_id == 0x46:
            if c[0] >= NETWORKS or len(c) < 9:
                return [self.response(c[0], msg_id, INVALID_NETWORK_NUMBER)]
            self.keys[c[0]] = bytes(c[1:9])
            return [self.response(c[0], msg_id)]
        if msg_id == 0x6E:
            self.lib_config = c[1] if len(c) > 1 else 0
            return [self.response(0, msg_id)]
        if msg_id in (0x66, 0x47):
            return [self.response(0, msg_id)]
        if c[0] >= CHANNELS:
            return [self.response(c[0], msg_id, INVALID_PARAMETER)]
        ch = self.channels[c[0]]
        if msg_id == 0x42:
            if len(c) < 3 or c[2] >= NETWORKS:
                return [self.response(c[0], msg_id, INVALID_NETWORK_NUMBER)]
            if ch["assigned"]:
                return [self.response(c[0], msg_id, CHANNEL_IN_WRONG_STATE)]
            ch.update(assigned=True, network=c[2])
        elif msg_id == 0x41:
            if ch["open"]:
                return [self.response(c[0], msg_id, CHANNEL_IN_WRONG_STATE)]
            self.channels[c[0]] = self.fresh_channel()
        elif msg_id == 0x51 and len(c) >= 5:
            ch["id"] = (c[1] | c[2] << 8, c[3], c[4])
        elif msg_id == 0x43 and len(c) >= 3:
            ch["period"] = (c[1] | c[2] << 8) or 8192
        elif msg_id == 0x45 and len(c) >= 2:
            ch["frequency"] = c[1]
        elif msg_id == 0x44 and len(c) >= 2:
            ch["timeout"] = c[1]
        return [self.response(c[0], msg_id)]

    def request(self, channel, wanted):
        if wanted == 0x54:
            return message(0x54, CAPABILITIES)
        if channel < CHANNELS and wanted == 0x51:
            ch = self.channels[channel]
            number, device_type, transmission = ch["id"]
            if ch["sensor"]:
                s = ch["sensor"]
                number, device_type, transmission = s.number, s.device_type, s.transmission
            return message(0x51, [channel, number & 0xFF, number >> 8, device_type, transmission])
        if channel < CHANNELS and wanted == 0x52:
            ch = self.channels[channel]
            state = 0 if not ch["assigned"] else 1 if not ch["open"] else 3 if ch["sensor"] else 2
            return message(0x52, [channel, state | ch["network"] << 2])
        return self.response(channel, 0x4D, INVALID_MESSAGE)

    def open(self, channel, now):
        if channel >= CHANNELS:
            return self.response(channel, 0x4B, INVALID_PARAMETER)
        ch = self.channels[channel]
        if not ch["assigned"] or ch["open"]:
            return self.response(channel, 0x4B, CHANNEL_IN_WRONG_STATE)
        ch["open"] = True
        number, device_type, transmission = ch["id"]
        self.say(f"open {channel} type {device_type & 0x7F} number {number} frequency {ch['frequency']}")
        ch["sensor"] = None
        ch["next"] = None
        ch["search_ends"] = None if ch["timeout"] == 255 else now + ch["timeout"] * 2.5
        for kind in (HeartRateStrap, PowerMeter):
            if (
                ch["frequency"] == ANT_PLUS_FREQUENCY
                and device_type & 0x7F in (0, kind.device_type)
                and number in (0, kind.number)
                and transmission in (0, kind.transmission)
            ):
                ch["sensor"] = kind(now)
                ch["next"] = now + 0.1
                break
        return self.response(channel, 0x4B)

    def close(self, channel):
        if channel >= CHANNELS or not self.channels[channel]["open"]:
            return [self.response(channel, 0x4C, CHANNEL_IN_WRONG_STATE)]
        ch = self.channels[channel]
        ch.update(open=False, sensor=None, next=None, search_ends=None)
        self.say(f"closed {channel}")
        return [self.response(channel, 0x4C), message(0x40, [channel, 0x01, CHANNEL_CLOSED])]

    def due(self, now):
        out = []
        for n, ch in enumerate(self.channels):
            if not ch["open"]:
                continue
            sensor = ch["sensor"]
            if sensor is None:
                if ch["search_ends"] is not None and now >= ch["search_ends"]:
                    ch.update(open=False, search_ends=None)
                    self.say(f"search timed out {n}")
                    out += [message(0x40, [n, 0x01, RX_SEARCH_TIMEOUT]), message(0x40, [n, 0x01, CHANNEL_CLOSED])]
                continue
            while ch["next"] <= now:
                if sensor.messages == 0:
                    self.say(f"found {n} {sensor.device_type}/{sensor.number}/{sensor.transmission}")
                out.append(self.data(n, sensor, sensor.page(ch["next"]), ch["next"]))
                ch["next"] += ch["period"] / 32768
        return out

    def next_due(self):
        times = [ch["next"] for ch in self.channels if ch["open"] and ch["next"] is not None]
        times += [ch["search_ends"] for ch in self.channels if ch["open"] and ch["search_ends"] is not None]
        times = [t for t in times if t is not None]
        return min(times) if times else None

    def data(self, channel, sensor, page, at):
        """A broadcast data message, with the extended fields Lib Config asked for (7.1.1)."""
        content = bytes([channel]) + page
        flags = self.lib_config & 0xE0
        if flags:
            content += bytes([flags])
            if flags & 0x80:
                content += struct.pack("<HBB", sensor.number, sensor.device_type, sensor.transmission)
            if flags & 0x40:
                content += bytes([0x20, (-60) & 0xFF, (-96) & 0xFF])
            if flags & 0x20:
                content += struct.pack("<H", round(at * 32768) & 0xFFFF)
        return message(0x4E, content)


# --- the transports ----------------------------------------------------------------------------

def run(stick, lock, incoming, send, stop):
    """Feeds `incoming()` (bytes; None at its end) to the stick and sends what it answers and
    broadcasts through `send(list of messages)`, until `stop` is set."""

    def reader():
        while not stop.is_set():
            data = incoming()
            if data is None:
                stop.set()
                return
            with lock:
                answers = stick.receive(data, time.monotonic())
            if answers:
                send(answers)

    threading.Thread(target=reader, daemon=True).start()
    while not stop.is_set():
        with lock:
            due = stick.due(time.monotonic())
            wake = stick.next_due()
        if due:
            send(due)
        stop.wait(min(0.05, max(0.0, wake - time.monotonic())) if wake is not None else 0.05)


def stdio():
    stop = threading.Event()
    out = sys.stdout.buffer

    def incoming():
        data = os.read(sys.stdin.fileno(), 4096)
        return data or None

    def send(messages):
        out.write(b"".join(messages))
        out.flush()

    run(Stick(), threading.Lock(), incoming, send, stop)


GADGET = "/sys/kernel/config/usb_gadget/workoutd-ant"
FFS = "/dev/ffs-workoutd-ant"


def udc_name(args):
    if "--udc" in args:
        return args[args.index("--udc") + 1]
    controllers = sorted(os.listdir("/sys/class/udc"))
    if not controllers:
        sys.exit("ant_stick.py: no UDC (modprobe dummy_hcd)")
    return controllers[0]


def put(path, value):
    with open(path, "w") as f:
        f.write(value)


def make_gadget():
    """configfs: the ANTUSB2's identity, one configuration, one FunctionFS function."""
    for d in ("", "/strings/0x409", "/configs/c.1", "/configs/c.1/strings/0x409", "/functions/ffs.ant"):
        os.makedirs(GADGET + d, exist_ok=True)
    for name, value in (("idVendor", "0x0fcf"), ("idProduct", "0x1008"), ("bcdDevice", "0x0100"), ("bcdUSB", "0x0200")):
        put(f"{GADGET}/{name}", value)
    for name, value in (("manufacturer", "Dynastream Innovations"), ("product", "ANT USBStick2"), ("serialnumber", "123")):
        put(f"{GADGET}/strings/0x409/{name}", value)
    put(f"{GADGET}/configs/c.1/strings/0x409/configuration", "ANT")
    put(f"{GADGET}/configs/c.1/MaxPower", "100")
    if not os.path.islink(f"{GADGET}/configs/c.1/ffs.ant"):
        os.symlink(f"{GADGET}/functions/ffs.ant", f"{GADGET}/configs/c.1/ffs.ant")
    os.makedirs(FFS, exist_ok=True)
    if not os.path.ismount(FFS):
        if os.system(f"mount -t functionfs ant {FFS}") != 0:
            sys.exit("ant_stick.py: cannot mount functionfs (modprobe usb_f_fs)")


def remove_gadget():
    """Unbound, unlinked, the directories removed in the reverse of their making, unmounted."""
    steps = [
        lambda: put(f"{GADGET}/UDC", "\n"),
        lambda: os.unlink(f"{GADGET}/configs/c.1/ffs.ant"),
        lambda: os.rmdir(f"{GADGET}/configs/c.1/strings/0x409"),
        lambda: os.rmdir(f"{GADGET}/configs/c.1"),
        lambda: os.rmdir(f"{GADGET}/functions/ffs.ant"),
        lambda: os.rmdir(f"{GADGET}/strings/0x409"),
        lambda: os.rmdir(GADGET),
        lambda: os.system(f"umount {FFS} 2> /dev/null"),
    ]
    for step in steps:
        try:
            step()
        except OSError:
            pass


def descriptors():
    """FunctionFS v2 descriptors (include/uapi/linux/usb/functionfs.h): full and high speed,
    one vendor interface, bulk IN then bulk OUT (so ep1 is IN, ep2 OUT)."""

    def speed(packet):
        interface = bytes([9, 4, 0, 0, 2, 0xFF, 0x00, 0x00, 1])
        ep_in = bytes([7, 5, 0x81, 0x02]) + struct.pack("<H", packet) + bytes([0])
        ep_out = bytes([7, 5, 0x01, 0x02]) + struct.pack("<H", packet) + bytes([0])
        return interface + ep_in + ep_out

    body = struct.pack("<II", 3, 3) + speed(64) + speed(512)
    # FUNCTIONFS_DESCRIPTORS_MAGIC_V2, length, FUNCTIONFS_HAS_FS_DESC | FUNCTIONFS_HAS_HS_DESC.
    head = struct.pack("<III", 3, 12 + len(body), 1 | 2)
    name = b"ANT USBStick2\0"
    # FUNCTIONFS_STRINGS_MAGIC, length, one string, one language (en-US).
    strings = struct.pack("<IIII", 2, 16 + 2 + len(name), 1, 1) + struct.pack("<H", 0x0409) + name
    return head + body, strings


def usb(status_path, args):
    status = open(status_path, "a", buffering=1)
    say = lambda what: status.write(f"{time.monotonic():.2f} {what}\n")
    remove_gadget()
    make_gadget()
    ep0 = os.open(f"{FFS}/ep0", os.O_RDWR)
    descs, strings = descriptors()
    os.write(ep0, descs)
    os.write(ep0, strings)
    ep_in = os.open(f"{FFS}/ep1", os.O_RDWR)
    ep_out = os.open(f"{FFS}/ep2", os.O_RDWR)
    stick, lock, stop = Stick(say), threading.Lock(), threading.Event()
    outgoing = queue.Queue()

    def events():
        """ep0's events (struct usb_functionfs_event: 8 setup bytes, type, 3 pad)."""
        while True:
            event = os.read(ep0, 12)
            kind = event[8] if len(event) >= 9 else -1
            if kind == 2:
                say("enabled")
            elif kind in (1, 3):
                # Unbound or disabled: pulled out. A stick plugged in again starts afresh.
                with lock:
                    stick.reset()
                while not outgoing.empty():
                    outgoing.get_nowait()
                say("disabled")
            elif kind == 4:
                # A control request for the function: none is expected; stalled (a transfer
                # the other way round, functionfs.rst).
                try:
                    os.read(ep0, 0) if event[0] & 0x80 else os.write(ep0, b"")
                except OSError:
                    pass

    def writer():
        while True:
            data = outgoing.get()
            while not outgoing.empty() and len(data) < 64:
                data += outgoing.get_nowait()
            try:
                os.write(ep_in, data)
            except OSError:
                pass  # ESHUTDOWN: pulled out while it was sent

    def incoming():
        while True:
            try:
                return os.read(ep_out, 512)
            except OSError:
                time.sleep(0.1)  # ESHUTDOWN: not connected; waits for the next enable

    def send(messages):
        # More than a second of broadcasts waiting: the host is not reading (a real stick's
        # queue overflows); the oldest are dropped.
        for m in messages:
            if outgoing.qsize() > 64:
                outgoing.get_nowait()
            outgoing.put(m)

    threading.Thread(target=events, daemon=True).start()
    threading.Thread(target=writer, daemon=True).start()
    put(f"{GADGET}/UDC", udc_name(args))
    say("ready")
    run(stick, lock, incoming, send, stop)


def main(args):
    if args[:1] == ["--stdio"]:
        stdio()
    elif args[:1] == ["usb"] and len(args) >= 2:
        usb(args[1], args[2:])
    elif args[:1] == ["pull"]:
        put(f"{GADGET}/UDC", "\n")
    elif args[:1] == ["plug"]:
        put(f"{GADGET}/UDC", udc_name(args[1:]))
    elif args[:1] == ["remove"]:
        remove_gadget()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
