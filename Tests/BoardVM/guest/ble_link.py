#!/usr/bin/env python3
"""Holds an LE link from one of btvirt's controllers to another, with nothing on it: an L2CAP LE
socket on the ATT channel (CID 4) bound to FROM, connected to TO, kept until killed.

  ble_link.py FROM TO STATUS_FILE

Why the board VM needs it: btvirt's emulator (BlueZ emulator/btdev.c, conn_link and send_acl,
5.66 to 5.82 and master) gives a new link's two ends each the lowest handle free on that
controller, counted separately, and forwards ACL data with the sender's handle. A link whose
ends got different handles carries nothing: the board's second link (0x002b on the board's
controller, its first being 0x002a) reaches a sensor whose controller has no link yet as
0x002a, so the sensor's kernel drops every ATT request as for an unknown handle. A link held
from that sensor's controller first takes its 0x002a, and the board's second link is then
0x002b at both ends. Real controllers carry each link's handle on their own; this is the
emulator's alone. STATUS_FILE gets "connected" once the link is up.
"""
import ctypes
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


def main():
    source, destination, status = sys.argv[1], sys.argv[2], sys.argv[3]
    link = socket.socket(AF_BLUETOOTH, socket.SOCK_SEQPACKET, BTPROTO_L2CAP)
    if libc.bind(link.fileno(), sockaddr_l2(source), 14) < 0:
        sys.exit(f"ble_link.py: bind {source}: errno {ctypes.get_errno()}")
    # Blocking: the kernel scans for TO's advertising, then connects (up to its 20 s or so).
    if libc.connect(link.fileno(), sockaddr_l2(destination), 14) < 0:
        sys.exit(f"ble_link.py: connect {source} to {destination}: errno {ctypes.get_errno()}")
    with open(status, "a") as f:
        f.write("connected\n")
    while True:
        time.sleep(60)


if __name__ == "__main__":
    main()
