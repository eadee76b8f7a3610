#!/usr/bin/python3
"""The host's hand on the board VM's USB port: virtual sticks made, plugged in and pulled out
through QEMU's monitor, at the guest test's request.

    usb-plug.py MONITOR_SOCKET SHARE_DIR IMAGE_DIR

The guest writes a request into SHARE_DIR/usb/NAME.req (written elsewhere, then renamed in) and
waits for SHARE_DIR/usb/NAME.rep: "ok ..." or "error ...". Requests, one line each:

    make STICK vfat|exfat|ext4|ntfs|blank SIZE_KIB UUID [full|unmountable]
                                         a stick image: one partition with that file system and
                                         UUID (full: all but a few blocks taken, ext4 only;
                                         unmountable: an ext4 incompat feature no kernel knows);
                                         blank: no partition table, no file system (UUID "-")
    plug STICK [ro] [slow]               attach it to the guest's xHCI controller as usb-storage
                                         (ro: write-protected; slow: writes throttled to 2 a second,
                                         so a copy lasts long enough to be pulled mid-way)
    pull STICK                           detach it (device_del), as a stick yanked out
    stop                                 end this helper

Runs until SHARE_DIR/usb/stop appears or the monitor goes away (QEMU exited).
"""

import os
import socket
import subprocess
import sys
import time


class Monitor:
    """QEMU's human monitor (HMP) over a unix socket: one command, its output up to the prompt."""

    PROMPT = b"(qemu) "

    def __init__(self, path, timeout=120):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.sock.settimeout(30)
        self._read_to_prompt()

    def _read_to_prompt(self):
        data = b""
        while not data.endswith(self.PROMPT):
            chunk = self.sock.recv(4096)
            if not chunk:
                raise EOFError("the monitor closed")
            data += chunk
        return data[: -len(self.PROMPT)].decode(errors="replace")

    def command(self, line):
        self.sock.sendall(line.encode() + b"\n")
        out = self._read_to_prompt()
        # HMP echoes the command (with terminal escapes); keep what follows it.
        lines = [l.strip() for l in out.replace("\r", "\n").split("\n")]
        lines = [l for l in lines if l and not l.endswith(line) and "\x1b" not in l]
        return " ".join(lines)


class Helper:
    def __init__(self, monitor, share, images):
        self.monitor = monitor
        self.share = share
        self.images = images
        self.plugged = {}  # stick -> device id
        self.plugs = 0

    def make(self, stick, fstype, size_kib, uuid, *flags):
        """A stick as they are sold: an MBR partition table, one partition from 1 MiB holding
        the file system. full: nearly all of it taken by a file already there (ext4)."""
        path = os.path.join(self.images, stick + ".img")
        if os.path.exists(path):
            os.unlink(path)
        size = int(size_kib)
        with open(path, "wb") as f:
            f.truncate((1024 + size) * 1024)
        if fstype == "blank":
            return "ok %s -" % path
        kind = {"vfat": "c", "exfat": "7", "ext4": "83", "ntfs": "7"}.get(fstype)
        if kind is None:
            return "error: no file system " + fstype
        steps = [(["sfdisk", "-q", path], "start=2048, type=%s\n" % kind)]
        if fstype == "vfat":
            # FAT's volume id is the UUID's 8 hex digits (udev shows it as XXXX-XXXX).
            steps.append((["mkfs.vfat", "--offset=2048", "-n", stick.upper()[:11], "-i", uuid.replace("-", ""),
                           path, str(size)], None))
        elif fstype == "exfat":
            # mkfs.exfat has no partition offset: the file system is made in a file of the
            # partition's size and copied in at 1 MiB (no loop device needed); its volume serial
            # (udev's UUID XXXX-XXXX) is set by tune.exfat.
            steps.append((["sh", "-ec",
                           'part="$1.part"; truncate -s "$2K" "$part"; mkfs.exfat -L "$3" "$part" >/dev/null; '
                           'tune.exfat -I "0x$4" "$part" >/dev/null; '
                           'dd if="$part" of="$1" bs=1M seek=1 conv=notrunc status=none; rm -f "$part"',
                           "mkfs", path, str(size), stick.upper()[:11], uuid.replace("-", "")], None))
        elif fstype == "ntfs":
            # As exFAT: made in a file and copied in; its 64-bit serial (udev's UUID) by ntfslabel.
            steps.append((["sh", "-ec",
                           'part="$1.part"; truncate -s "$2K" "$part"; mkntfs -q -F -Q -p 2048 -L "$3" "$part"; '
                           'ntfslabel -q --new-serial="$4" "$part"; '
                           'dd if="$part" of="$1" bs=1M seek=1 conv=notrunc status=none; rm -f "$part"',
                           "mkfs", path, str(size), stick.upper()[:11], uuid], None))
        else:
            steps.append((["mkfs.ext4", "-q", "-F", "-m", "0", "-U", uuid, "-L", stick[:16],
                           "-E", "offset=%d" % (1024 * 1024), path, "%dk" % size], None))
        for cmd, text in steps:
            done = subprocess.run(cmd, input=text, capture_output=True, text=True)
            if done.returncode != 0:
                return "error: %s: %s" % (" ".join(cmd), done.stderr.strip())
        if "full" in flags and fstype == "ext4":
            error = self.fill(path)
            if error:
                return "error: filling %s: %s" % (stick, error)
        if "unmountable" in flags and fstype == "ext4":
            error = self.unknown_feature(path)
            if error:
                return "error: making %s unmountable: %s" % (stick, error)
        return "ok %s %s" % (path, uuid)

    @staticmethod
    def fill(path):
        """Takes all but a few blocks of the ext4 file system at 1 MiB into `path` with one file
        (written in by debugfs on a copy of the partition, then put back)."""
        part = path + ".part"
        subprocess.run(["dd", "if=" + path, "of=" + part, "bs=1M", "skip=1", "status=none"], check=True)
        info = subprocess.run(["dumpe2fs", "-h", part], capture_output=True, text=True).stdout
        fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
        free = int(fields["Free blocks"].strip())
        block = int(fields["Block size"].strip())
        filler = path + ".filler"
        with open(filler, "wb") as f:
            f.write(b"\xa5" * (max(free - 3, 0) * block))  # not zeros: debugfs would leave holes
        done = subprocess.run(["debugfs", "-w", "-R", "write %s filler" % filler, part],
                              capture_output=True, text=True)
        os.unlink(filler)
        if done.returncode != 0:
            return done.stderr.strip()
        subprocess.run(["dd", "if=" + part, "of=" + path, "bs=1M", "seek=1", "conv=notrunc", "status=none"],
                       check=True)
        os.unlink(part)
        return None

    @staticmethod
    def unknown_feature(path):
        """Sets an incompatible-feature bit no kernel or e2fsck knows (0x40000000) in the ext4
        superblock at 1 MiB (s_feature_incompat, offset 0x60; debugfs rewrites its checksum):
        blkid still finds ext4 and its UUID, e2fsck refuses it, the kernel will not mount it."""
        part = path + ".part"
        subprocess.run(["dd", "if=" + path, "of=" + part, "bs=1M", "skip=1", "status=none"], check=True)

        def incompat():
            with open(part, "rb") as f:
                f.seek(1024 + 0x60)
                return int.from_bytes(f.read(4), "little")

        wanted = incompat() | 0x40000000
        done = subprocess.run(["debugfs", "-w", "-R", "ssv feature_incompat %d" % wanted, part],
                              capture_output=True, text=True)
        if incompat() != wanted:
            os.unlink(part)
            return "debugfs did not set it: " + done.stderr.strip()
        subprocess.run(["dd", "if=" + part, "of=" + path, "bs=1M", "seek=1", "conv=notrunc", "status=none"],
                       check=True)
        os.unlink(part)
        return None

    def plug(self, stick, *flags):
        path = os.path.join(self.images, stick + ".img")
        if not os.path.exists(path):
            return "error: no image for " + stick
        if stick in self.plugged:
            return "error: %s is plugged in already" % stick
        self.plugs += 1
        drive = "d%d%s" % (self.plugs, stick)
        device = "u%d%s" % (self.plugs, stick)
        options = "if=none,id=%s,file=%s,format=raw,cache=writeback" % (drive, path)
        if "ro" in flags:
            options += ",readonly=on"
        if "slow" in flags:
            options += ",throttling.iops-write=2,throttling.bps-write=8192"
        out = self.monitor.command("drive_add 0 " + options)
        if "OK" not in out:
            return "error: drive_add: " + out
        out = self.monitor.command("device_add usb-storage,bus=xhci.0,drive=%s,id=%s,removable=on" % (drive, device))
        if out:
            return "error: device_add: " + out
        self.plugged[stick] = device
        return "ok " + device

    def pull(self, stick):
        device = self.plugged.pop(stick, None)
        if device is None:
            return "error: %s is not plugged in" % stick
        out = self.monitor.command("device_del " + device)
        return "error: device_del: " + out if out else "ok"

    def run(self):
        requests = os.path.join(self.share, "usb")
        os.makedirs(requests, exist_ok=True)
        while not os.path.exists(os.path.join(requests, "stop")):
            names = sorted(n for n in os.listdir(requests) if n.endswith(".req"))
            if not names:
                time.sleep(0.1)
                continue
            for name in names:
                path = os.path.join(requests, name)
                with open(path) as f:
                    words = f.read().split()
                os.unlink(path)
                try:
                    verb, args = words[0], words[1:]
                    reply = {"make": self.make, "plug": self.plug, "pull": self.pull}[verb](*args)
                except (KeyError, IndexError, TypeError) as error:
                    reply = "error: not a request: %s (%s)" % (" ".join(words), error)
                print("usb-plug: %s -> %s" % (" ".join(words), reply), file=sys.stderr, flush=True)
                temporary = os.path.join(requests, "." + name[:-4] + ".rep")
                with open(temporary, "w") as f:
                    f.write(reply + "\n")
                os.rename(temporary, os.path.join(requests, name[:-4] + ".rep"))


def main():
    monitor_path, share, images = sys.argv[1:4]
    os.makedirs(images, exist_ok=True)
    try:
        Helper(Monitor(monitor_path), share, images).run()
    except (EOFError, OSError) as error:
        print("usb-plug: the monitor went away (%s)" % error, file=sys.stderr)


if __name__ == "__main__":
    main()
