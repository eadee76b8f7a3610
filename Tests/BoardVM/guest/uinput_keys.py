#!/usr/bin/python3
"""A key device made with /dev/uinput, named like the board's gpio-keys stand-in, that presses
keys as told on stdin: lines "KEY_PROG1 0.3" (press, hold seconds, release). It exists until
stdin closes. Prints "ready /dev/input/eventN" once the device node is there.

  uinput_keys.py NAME KEY_NAME...
"""
import fcntl
import glob
import os
import struct
import sys
import time

UI_SET_EVBIT, UI_SET_KEYBIT, UI_DEV_SETUP, UI_DEV_CREATE, UI_DEV_DESTROY = 0x40045564, 0x40045565, 0x405C5503, 0x5501, 0x5502
EV_SYN, EV_KEY, SYN_REPORT = 0, 1, 0
CODES = {"KEY_PROG1": 148, "KEY_PROG2": 149, "KEY_PROG3": 202}

name, keys = sys.argv[1], sys.argv[2:]
fd = os.open("/dev/uinput", os.O_WRONLY | os.O_NONBLOCK)
fcntl.ioctl(fd, UI_SET_EVBIT, EV_KEY)
for key in keys:
    fcntl.ioctl(fd, UI_SET_KEYBIT, CODES[key])
# struct uinput_setup: input_id {bustype, vendor, product, version}, name[80], ff_effects_max
fcntl.ioctl(fd, UI_DEV_SETUP, struct.pack("<HHHH80sI", 0x06, 0x1209, 0x0001, 1, name.encode(), 0))
fcntl.ioctl(fd, UI_DEV_CREATE)
node = None
for _ in range(100):
    for entry in glob.glob("/sys/class/input/event*"):
        with open(entry + "/device/name") as f:
            if f.read().strip() == name:
                node = "/dev/input/" + os.path.basename(entry)
    if node and os.path.exists(node):
        break
    time.sleep(0.05)
print("ready", node, flush=True)


def emit(kind, code, value):
    # struct input_event: the kernel stamps it; time fields are ignored on write.
    os.write(fd, struct.pack("llHHi", 0, 0, kind, code, value))


for line in sys.stdin:
    parts = line.split()
    if len(parts) != 2:
        continue
    code, hold = CODES[parts[0]], float(parts[1])
    emit(EV_KEY, code, 1)
    emit(EV_SYN, SYN_REPORT, 0)
    time.sleep(hold)
    emit(EV_KEY, code, 0)
    emit(EV_SYN, SYN_REPORT, 0)
    print("pressed", parts[0], hold, flush=True)
fcntl.ioctl(fd, UI_DEV_DESTROY)
