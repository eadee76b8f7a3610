#!/usr/bin/env python3
"""make bench: workoutd on a real gpsd at one fix a second, against gpsd's own gpxlogger.

One gpsd (started by gpsfake, Debian's gpsd-clients) replays a real receiver capture from
Tests/Fixtures/gpsd at the receiver's own pace: bundg_zeus_9.log is a 1 Hz chartplotter
(149 one-second epochs of about 34 sentences), so gpsfake's `-c` (seconds between sentences) is
epochs / sentences, about 0.03 s, and an epoch arrives about once a second. The replay is the
capture forth and then back (the epochs in reverse order, re-timed forwards, checksums redone), so
a run longer than the capture's 2.5 minutes does not see the boat jump, nor time go backwards
within the replay's 5 minutes (gpsfake then starts it again, at its first epoch's time).
Only the capture's GNSS sentences are replayed (GGA GSA GSV RMC VTG GLL ZDA: what a GPS module
sends; about 9 an epoch, 2 TPVs and a SKY from gpsd); --all-sentences keeps the chartplotter's
instrument and autopilot sentences too, which gpsd 3.22 reports as ~17 TPVs an epoch.

Attached to that gpsd at the same time, real time:
- gpxlogger -e sockets, writing a GPX file (gpsd's small honest logger: fflush per point, no fsync);
- the real `workoutd --board linux` (this build, and the baseline when --baseline-bin is given),
  each with a configuration whose [gps] points at this gpsd and no other device;
- a plain JSON client (this script) that timestamps every TPV, to count the fixes of each phase.

After READY=1 (a NOTIFY_SOCKET datagram socket bound here) and a settling pause: an idle phase
(no session, 30 s), then `workoutctl start` (countdown 0, auto-pause off) and a recording phase
(120 s, running). For each phase and each process, deltas of: CPU (all threads,
/proc/PID/task/*/schedstat), wake-ups (voluntary + involuntary context switches over
/proc/PID/task/*/status) and bytes written to storage (/proc/PID/io write_bytes). workoutd's
recorded seconds are its point rows added in the phase; gpxlogger's fixes are the replay's epochs
with a 2D/3D TPV in the phase (its trkpts are printed too).

Targets (printed, never an exit status): workoutd CPU per recorded second <= 2x gpxlogger's CPU
per fix, <= 2 wake-ups/s recording, near 0 (<= 0.5) idle. A wake-up is a context switch, but
while recording the disk waits of the one durable commit a second (fdatasync sleeps while the
disk writes: 2 or 3 switches a commit on an ext4, with or without a journal, measured by this
script on the run's filesystem and printed) are shown and then taken out: they are the disk's,
and the issue asks for that commit. Likewise the CPU per recorded second is shown whole and less
that commit's CPU (the same probe): gpxlogger makes no commit at all. The ratio of each 30 s window of the recording
phase (--window) is printed too: how far one run's own figure moves, with each side's figure in
the window and gpsd's TPVs a fix in it (gpxlogger wakes for them, so its cost a fix follows them;
workoutd reads gpsd once a second whatever their number). About 4 minutes.

The commit's price depends on the filesystem under the run's files (--dir): on an ext4 without a
journal, fdatasync also writes the inode (its times changed) and waits for the disk three times;
on one with a journal, as Raspberry Pi OS's root has, twice. `make bench` runs this a second time
with --journaled-ext4 (a fresh loop-mounted image; root only) to show both.

Usage: Benchmarks/device.py --bin DIR [--baseline-bin DIR] [--idle 30] [--recording 120]
                           [--window 30] [--dir DIR | --journaled-ext4]
"""
import argparse
import json
import os
import random
import shutil
import socket
import sqlite3
import stat
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import benchlib

FIXTURES = os.path.join(benchlib.ROOT, "Tests", "Fixtures", "gpsd")
TIME_FIELD = {"GGA": 1, "RMC": 1, "ZDA": 1, "GNS": 1, "GLL": 5, "GST": 1, "GBS": 1}
# What a GPS module on a bike computer's UART sends. The chartplotter capture also carries its
# instruments' and autopilot's sentences (heading at 10 Hz, depth, wind, route: ~25 a second),
# each of which gpsd 3.22 reports as a TPV of its own (16 TPVs an epoch instead of 2).
GNSS_SENTENCES = {"GGA", "GSA", "GSV", "RMC", "VTG", "GLL", "ZDA", "GNS", "GST", "GBS"}


def checksum(body):
    value = 0
    for ch in body.encode("ascii", "replace"):
        value ^= ch
    return "%02X" % value


def epochs_of(path, gnss_only):
    """The capture's comment header and its sentences grouped in epochs: a new epoch begins at
    each sentence whose UTC time differs from the previous timed sentence's."""
    header, epochs, current, stamp = [], [], [], None
    for line in open(path, encoding="ascii", errors="replace"):
        if not line.startswith(("$", "!")):
            if not epochs and not current:
                header.append(line)
            continue
        kind = line[3:6]
        if gnss_only and kind not in GNSS_SENTENCES:
            continue
        fields = line.split("*")[0].split(",")
        if kind in TIME_FIELD and len(fields) > TIME_FIELD[kind] and fields[TIME_FIELD[kind]]:
            t = fields[TIME_FIELD[kind]][:6]
            if stamp is not None and t != stamp and current:
                epochs.append(current)
                current = []
            stamp = t
        current.append(line.rstrip("\r\n"))
    if current:
        epochs.append(current)
    return header, epochs


def retime(line, seconds):
    """`line` with its UTC time field set to `seconds` after midnight (fraction kept)."""
    if "*" not in line:
        return line
    body = line[1:].split("*")[0]
    fields = body.split(",")
    index = TIME_FIELD.get(fields[0][2:5])
    if index is None or len(fields) <= index or not fields[index]:
        return line
    fraction = fields[index][6:]
    fields[index] = "%02d%02d%02d%s" % (seconds // 3600 % 24, seconds // 60 % 60, seconds % 60, fraction)
    body = ",".join(fields)
    return "%s%s*%s" % (line[0], body, checksum(body))


def make_replay(capture, path, gnss_only=True):
    """The capture forth, then back (epochs reversed, times going on forwards). Returns
    (epochs, sentences) of the result."""
    header, epochs = epochs_of(capture, gnss_only)
    last = None
    for epoch in epochs:
        for line in epoch:
            fields = line.split("*")[0].split(",")
            index = TIME_FIELD.get(fields[0][3:6])
            if index is not None and len(fields) > index and fields[index][:6].isdigit():
                t = fields[index]
                last = int(t[0:2]) * 3600 + int(t[2:4]) * 60 + int(t[4:6])
    out = list(header) + ["# replayed forth, then back re-timed by Benchmarks/device.py\n"]
    out += [line + "\r\n" for epoch in epochs for line in epoch]
    for n, epoch in enumerate(reversed(epochs)):
        out += [retime(line, last + 1 + n) + "\r\n" for line in epoch]
    with open(path, "w", newline="") as f:
        f.writelines(out)
    return 2 * len(epochs), sum(1 for line in out if line.startswith(("$", "!")))


def commit_probe(directory, commits=40):
    """What one durable commit costs on this filesystem by itself: an 8 KiB pwrite +
    fdatasync (what a WAL commit of two pages is), done `commits` times by this script in
    `directory`, one every 50 ms. Returns (context switches, CPU µs) per commit: the thread
    sleeps while the disk writes (those switches are the disk's), and the CPU is nearly all
    the kernel's (block layer, the virtio doorbell here). Every fdatasync costs this, whoever
    calls it; gpxlogger never calls one."""
    path = os.path.join(directory, "commit-probe")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.pwrite(fd, b"\0" * 8192 * 4, 0)
        os.fsync(fd)

        def voluntary():
            with open("/proc/thread-self/status") as f:
                return next(int(line.split()[1]) for line in f if line.startswith("voluntary_ctxt_switches"))

        pages = [os.urandom(8192) for _ in range(4)]
        switches, cpu = 0, 0.0
        for i in range(commits):
            time.sleep(0.05)  # caches as cold as a commit a second leaves them, near enough
            before, started = voluntary(), time.thread_time()
            os.pwrite(fd, pages[i % 4], (i % 4) * 8192)
            os.fdatasync(fd)
            cpu += time.thread_time() - started
            switches += voluntary() - before
        return switches / commits, cpu / commits * 1e6
    finally:
        os.close(fd)
        os.unlink(path)


def wake_probe(work, seconds=20):
    """The price of one wake-up here (Benchmarks/Floor/wake-probe.c: a thread woken by a timer
    once a second, doing nothing): CPU µs a wake-up, or None when it cannot be built. Each of
    workoutd's wake-ups (the tick, the commit's disk waits) and gpxlogger's (gpsd's reports)
    costs about this much before any work is done."""
    source = os.path.join(benchlib.ROOT, "Benchmarks", "Floor", "wake-probe.c")
    binary = os.path.join(work, "wake-probe")
    built = subprocess.run(["cc", "-O2", "-Wall", "-o", binary, source], capture_output=True, text=True)
    if built.returncode != 0:
        print(f"wake probe skipped: cannot build {source}: {built.stderr.strip()}")
        return None
    out = subprocess.run([binary, str(seconds)], capture_output=True, text=True, timeout=seconds + 30)
    try:
        return float(out.stdout.split()[0])
    except (IndexError, ValueError):
        print(f"wake probe failed: {out.stdout}{out.stderr}")
        return None


def floor_phase(work, seconds, logger, gpx, watcher):
    """The floor: what one durable commit a second costs by itself on this machine, with the
    database set up as workoutd's (Benchmarks/Floor/durable-logger.c: a timer, one row of a
    point's columns inserted in WAL mode with synchronous=FULL, nothing else), run after the
    recording phase with workoutd stopped, gpxlogger still on the same gpsd. Returns its CPU
    per second and gpxlogger's per fix in the same phase: whatever workoutd does beyond a
    durable commit a second is above this line, on any machine."""
    source = os.path.join(benchlib.ROOT, "Benchmarks", "Floor", "durable-logger.c")
    binary = os.path.join(work, "durable-logger")
    built = subprocess.run(["cc", "-O2", "-Wall", "-o", binary, source, "-lsqlite3"], capture_output=True, text=True)
    if built.returncode != 0:
        print(f"floor phase skipped: cannot build {source}: {built.stderr.strip()}")
        return None
    os.makedirs(os.path.join(work, "floor"), exist_ok=True)
    proc = subprocess.Popen([binary, os.path.join(work, "floor", "floor.db"), str(int(seconds + 10))],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(3)  # its WAL made full size, its first commits in
        a = {"time": time.monotonic(), "floor": benchlib.proc_counters(proc.pid),
             "logger": benchlib.proc_counters(logger.pid)}
        time.sleep(seconds)
        b = {"time": time.monotonic(), "floor": benchlib.proc_counters(proc.pid),
             "logger": benchlib.proc_counters(logger.pid)}
    finally:
        proc.kill()
        proc.wait()
    elapsed = b["time"] - a["time"]
    _, fixes = watcher.fixes(a["time"], b["time"])
    fl, lg = benchlib.delta(b["floor"], a["floor"]), benchlib.delta(b["logger"], a["logger"])
    figures = {"floor.seconds": elapsed, "floor.logger.cpu_us_per_s": fl["cpu"] / elapsed * 1e6,
               "floor.logger.wakeups_per_s": fl["switches"] / elapsed,
               "floor.gpxlogger.cpu_us_per_fix": lg["cpu"] / fixes * 1e6 if fixes else None}
    if figures["floor.gpxlogger.cpu_us_per_fix"]:
        figures["floor.ratio"] = figures["floor.logger.cpu_us_per_s"] / figures["floor.gpxlogger.cpu_us_per_fix"]
    return figures


def free_port():
    """A free loopback port below the ephemeral range (see Tests/Support/GPSFake.swift: a port in
    that range can be taken by a client's own retrying connection)."""
    try:
        low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    except (OSError, ValueError):
        low = 32768
    for _ in range(200):
        port = random.randrange(10000, max(low, 10001))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    sys.exit("no free port")


def listening(port):
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


class Watcher(threading.Thread):
    """A plain JSON client of gpsd: every TPV with its arrival time (monotonic)."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.tpvs, self.stopped = port, [], False

    def run(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            s.sendall(b'?WATCH={"enable":true,"json":true}\n')
            s.settimeout(1)
            buffer = b""
            while not self.stopped:
                try:
                    data = s.recv(65536)
                except socket.timeout:
                    continue
                if not data:
                    return
                buffer += data
                *lines, buffer = buffer.split(b"\n")
                now = time.monotonic()
                for line in lines:
                    if line.startswith(b'{"class":"TPV"'):
                        try:
                            report = json.loads(line)
                        except ValueError:
                            continue
                        self.tpvs.append((now, report.get("mode", 0), report.get("time")))

    def fixes(self, start, end):
        """(TPVs with mode >= 2, epochs with a fix) that arrived in [start, end). An epoch is a run
        of TPVs with the same fix time: the count goes up where the time changes, so a run longer
        than the replay, which gpsfake starts again from its first epoch (the same times again),
        counts every epoch it saw and not only the distinct times."""
        inside = [t for t in self.tpvs if start <= t[0] < end and t[1] >= 2]
        return len(inside), sum(1 for n, t in enumerate(inside) if n == 0 or t[2] != inside[n - 1][2])


CONFIG = """# Benchmarks/device.py: gpsd only, no other device.
[service]
board = "linux"
log_level = "info"
[session]
countdown_seconds = 0
[auto_pause]
enabled = false
[gps]
host = "127.0.0.1"
port = {port}
""" + benchlib.OTHER_DEVICES_OFF


class Daemon:
    """One real workoutd on the linux board, with its own state, runtime and notify socket;
    `launcher` runs it (instructions.py: under callgrind, `executable` a copy it can read)."""

    def __init__(self, label, binary_dir, work, port, launcher=(), executable=None):
        self.label, self.bin = label, binary_dir
        self.dir = os.path.join(work, label.replace(" ", "-"))
        os.makedirs(self.dir)
        self.config = os.path.join(self.dir, "workoutd.toml")
        with open(self.config, "w") as f:
            f.write(CONFIG.replace("{port}", str(port)))
        self.state, self.runtime = os.path.join(self.dir, "state"), os.path.join(self.dir, "run")
        self.notify = benchlib.NotifySocket(self.dir)
        self.log = open(os.path.join(self.dir, "workoutd.log"), "w")
        self.proc = subprocess.Popen(
            [*launcher, executable or os.path.join(binary_dir, "workoutd"), "--config", self.config,
             "--state-dir", self.state, "--runtime-dir", self.runtime],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
            env=dict(os.environ, NOTIFY_SOCKET=self.notify.path))

    def ctl(self, *args, timeout=20):
        return subprocess.run([os.path.join(self.bin, "workoutctl"), *args, "--state-dir", self.state,
                               "--runtime-dir", self.runtime], capture_output=True, text=True, timeout=timeout)

    def points(self):
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(self.state, "workoutd.db"), uri=True, timeout=5)
        try:
            return db.execute("select count(*) from point").fetchone()[0]
        finally:
            db.close()

    def stop(self, timeout=15):
        benchlib.end(self.proc, timeout)
        self.notify.close()
        self.log.close()


def stop_gpsfake(fake):
    if fake.poll() is None:
        gpsd = benchlib.gpsfake_children(fake.pid)
        fake.terminate()
        try:
            fake.wait(timeout=10)
        except subprocess.TimeoutExpired:
            for pid in gpsd:
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
            fake.kill()
            fake.wait()
    shutil.rmtree(fake.sockets, ignore_errors=True)


def filesystem(path):
    """The filesystem under `path`, and for ext4 whether it has a journal: without one (as this
    machine's root may be), an overwrite's fdatasync also writes the inode, its timestamps
    changed, and waits for the disk once more than with one (Raspberry Pi OS's root)."""
    found = subprocess.run(["findmnt", "-n", "-o", "FSTYPE,SOURCE", "-T", path], capture_output=True, text=True)
    fields = found.stdout.split()
    if len(fields) != 2:
        return "an unknown filesystem"
    kind, source = fields
    if kind == "ext4" and os.path.isdir("/proc/fs/jbd2"):
        # A journal has its jbd2 entry, "<device>-<journal inode>" (no need to read the device).
        device = os.path.basename(source)
        journaled = any(entry.startswith(device + "-") for entry in os.listdir("/proc/fs/jbd2"))
        kind += " with a journal" if journaled else " without a journal"
    return f"{kind} ({source})"


def start_gpsfake(replay, cycle, port, work):
    """gpsfake, tried again when it loses gpsfake's own start-up race (see GPSFake.swift), and its
    pty added to gpsd again in case gpsfake's own add was lost (benchlib.gpsfake_add_receiver).

    Its TMPDIR is a fresh short directory (a socket path has at most 107 bytes), so gpsd's control
    socket is never a stale file of an earlier run (which lets gpsfake add its pty before gpsd
    listens, losing it)."""
    for attempt in range(3):
        sockets = tempfile.mkdtemp(prefix="gpsfake-")
        err = open(os.path.join(work, "gpsfake.err"), "w")
        fake = subprocess.Popen(["gpsfake", "-q", "-c", "%.5f" % cycle, "-P", str(port), replay],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                env=dict(os.environ, TMPDIR=sockets))
        fake.sockets = sockets
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and fake.poll() is None and not listening(port):
            time.sleep(0.02)
        if listening(port):
            benchlib.gpsfake_add_receiver(fake)
            return fake
        stop_gpsfake(fake)
    sys.exit("gpsd did not start: " + open(os.path.join(work, "gpsfake.err")).read())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    benchlib.add_common_arguments(parser)
    parser.add_argument("--capture", default="bundg_zeus_9.log")
    parser.add_argument("--all-sentences", action="store_true",
                        help="keep the capture's non-GNSS sentences (instruments, autopilot)")
    parser.add_argument("--idle", type=float, default=30)
    parser.add_argument("--recording", type=float, default=120)
    parser.add_argument("--dir", default=os.path.join(benchlib.ROOT, ".build", "bench"),
                        help="where the run's files go (the databases, the GPX file, the probes): the "
                        "filesystem whose durable commit is measured")
    parser.add_argument("--journaled-ext4", action="store_true",
                        help="put the run's files on a fresh ext4 with a journal (a loop-mounted image "
                        "in --dir; needs root), the filesystem of Raspberry Pi OS's root")
    parser.add_argument("--window", type=float, default=30,
                        help="seconds of each window of the recording phase whose ratio is printed too")
    parser.add_argument("--floor", type=float, default=60,
                        help="seconds of the floor phase (Benchmarks/Floor/durable-logger.c); 0 skips it")
    args = parser.parse_args()
    for program in ("/usr/bin/gpsfake", "/usr/bin/gpxlogger", "/usr/sbin/gpsd"):
        if not os.access(program, os.X_OK):
            sys.exit(f"missing {program} (apt-get install gpsd gpsd-clients)")
    if not args.journaled_ext4:
        measure(args)
        return
    parent = args.dir
    mounted = mount_journaled_ext4(parent)
    if mounted is None:
        return
    work = None
    try:
        args.dir = mounted
        work = measure(args)
    finally:
        if work is not None:
            # The run's files (its logs, database, GPX file) outlive the image, as another run's do.
            kept = os.path.join(parent, os.path.basename(work))
            shutil.copytree(work, kept, symlinks=True, ignore=regular_files_only)
            print(f"(its files copied out of the image to {kept})")
        unmount_journaled_ext4(mounted)


def regular_files_only(directory, names):
    """shutil.copytree's ignore: what is not a directory, a regular file or a link (a socket left)."""
    left_out = []
    for name in names:
        mode = os.lstat(os.path.join(directory, name)).st_mode
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            left_out.append(name)
    return left_out


def mount_journaled_ext4(parent):
    """A fresh 256 MiB ext4 with a journal (mkfs.ext4's defaults, mounted noatime as Raspberry Pi
    OS mounts its root), loop-mounted on a directory in `parent`; None, said why, when this
    machine cannot (not root, no loop device)."""
    if os.geteuid() != 0:
        print("device benchmark on a journaled ext4: skipped (mounting a loop image needs root)")
        return None
    os.makedirs(parent, exist_ok=True)
    mountpoint = tempfile.mkdtemp(prefix="journaled-ext4-", dir=parent)
    image = mountpoint + ".img"
    with open(image, "wb") as f:
        f.truncate(256 << 20)
    for command in (["mkfs.ext4", "-q", "-F", image], ["mount", "-o", "loop,noatime", image, mountpoint]):
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"device benchmark on a journaled ext4: skipped ({' '.join(command[:2])}: "
                  f"{(done.stderr or done.stdout).strip()})")
            os.unlink(image)
            os.rmdir(mountpoint)
            return None
    return mountpoint


def unmount_journaled_ext4(mountpoint):
    """Unmounts and removes the image (lazily if something still holds a file there)."""
    if subprocess.run(["umount", mountpoint], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", mountpoint], capture_output=True)
    for remove in (lambda: os.rmdir(mountpoint), lambda: os.unlink(mountpoint + ".img")):
        try:
            remove()
        except OSError as error:
            print(f"(journaled ext4: {error})")


def measure(args):
    os.makedirs(args.dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="device-", dir=args.dir)
    replay = os.path.join(work, "replay.log")
    epochs, sentences = make_replay(os.path.join(FIXTURES, args.capture), replay, not args.all_sentences)
    cycle = epochs / sentences / 1.0  # seconds between sentences: one epoch a second
    port = free_port()
    kept = "every sentence" if args.all_sentences else "its GNSS sentences (" + " ".join(sorted(GNSS_SENTENCES)) + ")"
    print(f"device benchmark: {args.capture}, {kept}, forth and back")
    print(f"(workoutd's code layout: {benchlib.code_layout(os.path.join(args.bin, 'workoutd'))})")
    print(f"({epochs} epochs, {sentences} sentences) through gpsd")
    print(f"(gpsfake -c {cycle:.4f}: one epoch a second), gpxlogger and workoutd --board linux attached, real time;")
    print(f"the run's files on {filesystem(work)}")
    print(f"idle {args.idle:.0f} s, then recording {args.recording:.0f} s\n", flush=True)

    fake = start_gpsfake(replay, cycle, port, work)
    daemons, logger, watcher = [], None, None
    try:
        watcher = Watcher(port)
        watcher.start()
        gpx = os.path.join(work, "track.gpx")
        logger = subprocess.Popen(["gpxlogger", "-e", "sockets", "-f", gpx, f"127.0.0.1:{port}"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        binaries = [("this build", args.bin)] + ([("baseline", args.baseline_bin)] if args.baseline_bin else [])
        started = time.monotonic()
        daemons = [Daemon(label, path, work, port) for label, path in binaries]
        for d in daemons:
            ready = d.notify.wait_ready(30, alive=lambda: d.proc.poll() is None)
            if ready is None:
                sys.exit(f"{d.label}: no READY=1 (log: {d.log.name})")
            print(f"{d.label}: READY after {ready - started:.2f} s", flush=True)
        time.sleep(3)  # connections settle, first fixes in

        def snapshot():
            return {"time": time.monotonic(), "logger": benchlib.proc_counters(logger.pid),
                    "trkpts": open(gpx).read().count("<trkpt") if os.path.exists(gpx) else 0,
                    **{d.label: dict(benchlib.proc_counters(d.proc.pid), points=d.points()) for d in daemons}}

        idle0 = snapshot()
        time.sleep(args.idle)
        idle1 = snapshot()
        for d in daemons:
            result = d.ctl("start")
            if result.returncode != 0:
                sys.exit(f"{d.label}: workoutctl start failed: {result.stdout}{result.stderr}")
        time.sleep(2)  # the session is running, its first points are in
        # The phase in windows of --window seconds: one figure for the phase, and the ratio of
        # each window beside it, so that one run shows how far its own ratio moves.
        marks = [snapshot()]
        end = marks[0]["time"] + args.recording
        while (left := end - time.monotonic()) > 0:
            time.sleep(min(args.window, left))
            marks.append(snapshot())
        rec0, rec1 = marks[0], marks[-1]
        memory = {"logger": benchlib.peak_memory(logger.pid),
                  **{d.label: benchlib.peak_memory(d.proc.pid) for d in daemons}}
        states = {d.label: d.ctl("status", "--json").stdout for d in daemons}
        for d in daemons:
            d.stop()
        floor = floor_phase(work, args.floor, logger, gpx, watcher) if args.floor > 0 else None
    finally:
        for d in daemons:
            d.stop()
        if logger is not None:
            benchlib.end(logger, 10)
        if watcher is not None:
            watcher.stopped = True
        stop_gpsfake(fake)

    probe_switches, probe_cpu = commit_probe(work)
    wake_cpu = wake_probe(work)
    figures = {"disk_waits_per_commit": probe_switches, "commit_cpu_us": probe_cpu, "wake_cpu_us": wake_cpu,
               "recording.gpxlogger.peak_rss_mib": memory["logger"][0]}
    for d in daemons:
        figures[f"recording.{d.label}.peak_rss_mib"], figures[f"recording.{d.label}.anon_rss_mib"] = memory[d.label]
    for label, (a, b) in (("idle", (idle0, idle1)), ("recording", (rec0, rec1))):
        seconds = b["time"] - a["time"]
        tpvs, fixes = watcher.fixes(a["time"], b["time"])
        lg = benchlib.delta(b["logger"], a["logger"])
        figures.update({
            f"{label}.seconds": seconds, f"{label}.tpvs": tpvs, f"{label}.fixes": fixes,
            f"{label}.trkpts": b["trkpts"] - a["trkpts"],
            f"{label}.gpxlogger.cpu_us_per_s": lg["cpu"] / seconds * 1e6,
            f"{label}.gpxlogger.cpu_us_per_fix": lg["cpu"] / fixes * 1e6 if fixes else None,
            f"{label}.gpxlogger.cpu_us_per_tpv": lg["cpu"] / tpvs * 1e6 if tpvs else None,
            f"{label}.gpxlogger.wakeups_per_s": lg["switches"] / seconds,
            f"{label}.gpxlogger.bytes_per_s": lg["written"] / seconds,
        })
        for d in daemons:
            w = benchlib.delta(b[d.label], a[d.label])
            key = f"{label}.{d.label}"
            figures.update({
                f"{key}.points": w["points"], f"{key}.cpu_us_per_s": w["cpu"] / seconds * 1e6,
                f"{key}.cpu_us_per_point": w["cpu"] / w["points"] * 1e6 if w["points"] else None,
                f"{key}.wakeups_per_s": w["switches"] / seconds, f"{key}.bytes_per_s": w["written"] / seconds,
                # Its own wake-ups: one durable commit a recorded second, whose disk waits
                # are not counted against it.
                f"{key}.own_wakeups_per_s":
                    (w["switches"] - w["points"] * figures["disk_waits_per_commit"]) / seconds,
                f"{key}.own_cpu_us_per_point":
                    w["cpu"] / w["points"] * 1e6 - figures["commit_cpu_us"] if w["points"] else None,
            })

    if floor is not None:
        figures.update(floor)
    window_ratios, window_parts = [], []
    for a, b in zip(marks, marks[1:]):
        tpvs, fixes = watcher.fixes(a["time"], b["time"])
        w, lg = benchlib.delta(b["this build"], a["this build"]), benchlib.delta(b["logger"], a["logger"])
        if w["points"] and fixes and lg["cpu"]:
            window_ratios.append((w["cpu"] / w["points"]) / (lg["cpu"] / fixes))
            # Each side's own figure, and gpsd's TPVs a fix (gpxlogger reads them as they come).
            window_parts.append(f"{w['cpu'] / w['points'] * 1e6:.0f} / {lg['cpu'] / fixes * 1e6:.0f} µs, "
                                f"{tpvs / fixes:.2f} TPVs a fix")

    def part(owner):
        """This binary's figures, named as in the table (and in the stored baseline)."""
        out = {k.replace(f".{owner}.", ".workoutd."): v for k, v in figures.items() if f".{owner}." in k}
        out.update({k: v for k, v in figures.items() if ".gpxlogger." in k or k.count(".") == 1})
        out.update({k: v for k, v in figures.items() if k.startswith("floor.")})
        # The machine's prices, measured in the same run: a durable commit, a wake-up.
        out.update({k: figures[k] for k in ("disk_waits_per_commit", "commit_cpu_us", "wake_cpu_us")
                    if figures.get(k) is not None})
        fix = out.get("recording.gpxlogger.cpu_us_per_fix")
        if fix and out.get("recording.workoutd.cpu_us_per_point") is not None:
            out["recording.ratio"] = out["recording.workoutd.cpu_us_per_point"] / fix
            out["recording.own_ratio"] = out["recording.workoutd.own_cpu_us_per_point"] / fix
            if out.get("floor.logger.cpu_us_per_s") is not None:
                out["recording.workoutd.above_floor_us"] = (
                    out["recording.workoutd.cpu_us_per_point"] - out["floor.logger.cpu_us_per_s"])
        return out

    new = part("this build")
    if args.save_json:
        benchlib.save_figures(args.save_json, "device", new, "this build")
    if args.baseline_bin:
        base, label = part("baseline"), "baseline (live)"
        if args.save_baseline_json:
            benchlib.save_figures(args.save_baseline_json, "device", base, "f426fad")
    else:
        base, label = benchlib.baseline_source(args, "device")

    print(f"\none durable commit (8 KiB pwrite + fdatasync), measured here: waits for the disk "
          f"{figures['disk_waits_per_commit']:.1f} times and costs {figures['commit_cpu_us']:.0f} µs of CPU")
    if wake_cpu is not None:
        fixes_per_s = figures["recording.fixes"] / figures["recording.seconds"]
        print(f"one wake-up (a timer, nothing done), measured here: {wake_cpu:.0f} µs of CPU; a recorded second "
              f"wakes workoutd {figures['recording.this build.wakeups_per_s']:.1f} times, a fix wakes gpxlogger "
              f"{figures['recording.gpxlogger.wakeups_per_s'] / fixes_per_s:.1f} times" if fixes_per_s else "")
    print(f"idle {figures['idle.seconds']:.0f} s: {figures['idle.fixes']} fixes ({figures['idle.tpvs']} TPVs, "
          f"{figures['idle.trkpts']} GPX points); recording {figures['recording.seconds']:.0f} s: "
          f"{figures['recording.fixes']} fixes ({figures['recording.tpvs']} TPVs, {figures['recording.trkpts']} GPX points)")
    for d in daemons:
        try:
            state = json.loads(states[d.label]).get("state", "?")
        except (ValueError, AttributeError):
            state = "?"
        print(f"{d.label}: session {state} at the end of the recording phase "
              f"({figures[f'recording.{d.label}.points']} points recorded in it)")
    if window_ratios:
        print(f"the ratio workoutd / gpxlogger over each {args.window:.0f} s of the recording phase: "
              + ", ".join(f"{r:.2f}" for r in window_ratios)
              + f" (median {statistics.median(window_ratios):.2f}, {sum(r <= 2 for r in window_ratios)} of {len(window_ratios)} at or under 2)")
        print("  (each: workoutd µs a recorded second / gpxlogger µs a fix: " + "; ".join(window_parts) + ")")
    print()
    R = benchlib.Row
    benchlib.table([
        R("recording.workoutd.cpu_us_per_point", "workoutd CPU µs / recorded s", "%.0f"),
        R("recording.gpxlogger.cpu_us_per_fix", "gpxlogger CPU µs / fix", "%.0f"),
        R("recording.gpxlogger.cpu_us_per_tpv", "  (gpxlogger CPU µs / TPV)", "%.0f"),
        R("recording.ratio", "ratio workoutd / gpxlogger", "%.1f", ("<= 2x", lambda v, f: v <= 2)),
        R("floor.logger.cpu_us_per_s", "floor: one durable SQLite insert a second (C), CPU µs/s", "%.0f"),
        R("floor.gpxlogger.cpu_us_per_fix", "  gpxlogger CPU µs / fix beside it", "%.0f"),
        R("floor.ratio", "  ratio floor / gpxlogger", "%.1f"),
        R("recording.workoutd.above_floor_us", "  workoutd's CPU above the floor, µs / recorded s", "%.0f"),
        R("recording.workoutd.own_cpu_us_per_point", "  workoutd less the commit's kernel CPU", "%.0f"),
        R("recording.own_ratio", "  ratio, less the commit", "%.1f", ("<= 2x", lambda v, f: v <= 2)),
        R("recording.workoutd.wakeups_per_s", "workoutd context switches/s recording", "%.1f"),
        R("recording.workoutd.own_wakeups_per_s", "  less the commit's disk waits", "%.1f",
          ("<= 2", lambda v, f: v <= 2)),
        R("idle.workoutd.wakeups_per_s", "workoutd wake-ups/s idle", "%.1f", ("~0 (<= 0.5)", lambda v, f: v <= 0.5)),
        R("recording.gpxlogger.wakeups_per_s", "gpxlogger wake-ups/s recording", "%.1f"),
        R("idle.gpxlogger.wakeups_per_s", "gpxlogger wake-ups/s idle", "%.1f"),
        R("idle.workoutd.cpu_us_per_s", "workoutd CPU µs/s idle", "%.0f"),
        R("idle.gpxlogger.cpu_us_per_s", "gpxlogger CPU µs/s idle", "%.0f"),
        R("recording.workoutd.bytes_per_s", "workoutd bytes written/s recording", "%.0f"),
        R("idle.workoutd.bytes_per_s", "workoutd bytes written/s idle", "%.0f"),
        R("recording.gpxlogger.bytes_per_s", "gpxlogger bytes written/s", "%.0f"),
        R("recording.workoutd.peak_rss_mib", "workoutd peak RSS MiB (end of recording)", "%.1f",
          ("<= 16", lambda v, f: v <= 16)),
        R("recording.workoutd.anon_rss_mib", "  of it anonymous (heap, stacks, written pages)", "%.1f"),
        R("recording.gpxlogger.peak_rss_mib", "gpxlogger peak RSS MiB", "%.1f"),
    ], new, base, label)
    print("\nper thread (this build):")
    for label, (a, b) in (("idle", (idle0, idle1)), ("recording", (rec0, rec1))):
        print(f"  {label}:")
        for line in benchlib.thread_lines(benchlib.delta(b["this build"], a["this build"]), b["time"] - a["time"]):
            print(line)
    print(f"\n(work directory: {work})")
    return work


if __name__ == "__main__":
    main()
