#!/usr/bin/env python3
"""make bench-arm64: the 1 Hz comparison with gpxlogger in instructions, on aarch64 and x86_64.

instructions.py counts, with valgrind's callgrind, the user-space instructions of workoutd a
recorded second and of gpxlogger a fix, on this machine's x86_64 only. This counts the same on
aarch64 (the Raspberry Pi's CPU), where valgrind cannot run: each program runs under QEMU's
user-mode emulator with Benchmarks/Instructions/count-plugin.c, which counts the guest
instructions it executes (every thread, every library, by file) and writes the running totals
to a file every 100 ms. The count is of the program's own instruction stream, which emulation
preserves (the emulator's cost is not in it); the kernel's work is not counted, as with
callgrind.

Setups, all attached at the same time to one gpsd (gpsfake replaying device.py's 1 Hz capture,
as instructions.py), each a workoutd (--board linux, device.py's configuration) and a gpxlogger
(-e sockets, writing its GPX file) under the plugin:
- aarch64: the cross-built release workoutd (make release-arm64) and trixie's arm64 gpxlogger,
  on trixie's arm64 libraries (build-aux/cross-arm64.sh's sysroot) under qemu-aarch64, once for
  each of --arm64-cpus (QEMU's CPU models: by default the Pi 4's Cortex-A72 and the Pi 5's A76);
- x86_64 (bookworm): this machine's release workoutd and gpxlogger on its own libraries under
  qemu-x86_64: what instructions.py counts with callgrind, counted by the plugin instead, to
  check the one counter against the other;
- x86_64 (trixie), with --trixie-amd64: the same workoutd and trixie's amd64 gpxlogger on
  trixie's amd64 libraries (the sysroot is a trixie amd64 root): the x86_64 figure beside the
  aarch64 one with the same library and gpsd versions.
After `workoutctl start` and a settling pause, each plugin's totals are read, and again after
--recording seconds: the window is the difference. Per recorded second (workoutd's point rows
added in the window), per fix (the replay's epochs with a 2D/3D fix in it), each split by file.

Usage: Benchmarks/instructions-arm64.py --qemu DIR --plugin SO --x86-bin DIR --arm64-bin DIR
           --sysroot DIR --gpxlogger-arm64 FILE [--trixie-amd64 DIR] [--arm64-cpus A,B] [--recording 60]
"""
import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import time

import benchlib
import device
import instructions

SETTLE = 15  # seconds after `workoutctl start` (instructions.py's pause)


class Counted:
    """A program under qemu-user with the counting plugin, its totals in `out`."""

    def __init__(self, qemu, plugin, out, cpu=None, prefix=None, guest_env=()):
        self.out = out
        self.launcher = [qemu, "-plugin", f"{plugin},out={out}"] + (["-cpu", cpu] if cpu else [])
        if prefix:
            self.launcher += ["-L", prefix]
        for assignment in guest_env:
            self.launcher += ["-E", assignment]

    def sample(self):
        """(instructions, vCPUs, {file: instructions}) as the plugin last wrote them."""
        with open(self.out) as f:
            _, total, vcpus = f.readline().split()
            by_file = collections.Counter()
            for line in f:
                count, name = line.rstrip("\n").split(" ", 1)
                by_file[name] += int(count)
        return int(total), int(vcpus), by_file


def wait_for(path, timeout, alive):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive():
        if os.path.exists(path):
            return True
        time.sleep(0.1)
    return os.path.exists(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--qemu", required=True, help="directory holding qemu-aarch64 and qemu-x86_64 built with plugins")
    parser.add_argument("--plugin", required=True, help="count-plugin.so")
    parser.add_argument("--x86-bin", required=True, help="this machine's release build (workoutd, workoutctl)")
    parser.add_argument("--arm64-bin", required=True, help="the aarch64 release build (workoutd)")
    parser.add_argument("--sysroot", required=True, help="trixie root with its arm64 libraries (cross-arm64.sh)")
    parser.add_argument("--gpxlogger-arm64", required=True, help="trixie's arm64 gpxlogger")
    parser.add_argument("--trixie-amd64", help="trixie's amd64 gpsd-clients and libdbus unpacked (usr/bin/gpxlogger)")
    parser.add_argument("--arm64-cpus", default="cortex-a72,cortex-a76",
                        help="QEMU's aarch64 CPU models to count on (default: the Pi 4's and the Pi 5's)")
    parser.add_argument("--recording", type=float, default=60, help="seconds counted (default 60)")
    parser.add_argument("--dir", default=os.path.join(benchlib.ROOT, ".build", "bench"))
    args = parser.parse_args()

    os.makedirs(args.dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="instructions-arm64-", dir=args.dir)
    qemu = {cpu: os.path.join(args.qemu, "qemu-" + cpu) for cpu in ("aarch64", "x86_64")}
    host_gpxlogger = shutil.which("gpxlogger") or sys.exit("no gpxlogger (gpsd-clients)")
    # (label, emulator, its CPU model, workoutd, gpxlogger, library root, the guest's environment).
    # The CPU model matters: glibc picks its string functions by the CPU's features (ifunc), and
    # QEMU's default aarch64 CPU has them all (SVE, and FEAT_MOPS: a memcpy of any length in three
    # instructions), which no Pi has. x86_64's default ("max": AVX2, no AVX-512) is, as for
    # callgrind (valgrind hides AVX-512 from the program), what glibc's x86_64 variants see.
    setups = [(f"aarch64 {cpu}", "aarch64", cpu, os.path.join(args.arm64_bin, "workoutd"), args.gpxlogger_arm64,
               args.sysroot, ()) for cpu in args.arm64_cpus.split(",")]
    setups.append(("x86_64 bookworm", "x86_64", None, os.path.join(args.x86_bin, "workoutd"), host_gpxlogger,
                   None, ()))
    if args.trixie_amd64:
        # The sysroot is trixie amd64 with arm64 beside it, without the libdbus gpxlogger links.
        libdbus = os.path.join(args.trixie_amd64, "usr", "lib", "x86_64-linux-gnu")
        setups.append(("x86_64 trixie", "x86_64", None, os.path.join(args.x86_bin, "workoutd"),
                       os.path.join(args.trixie_amd64, "usr", "bin", "gpxlogger"), args.sysroot,
                       ("LD_LIBRARY_PATH=" + libdbus,)))

    replay = os.path.join(work, "replay.log")
    epochs, sentences = device.make_replay(os.path.join(device.FIXTURES, "bundg_zeus_9.log"), replay)
    port = device.free_port()
    print("instructions (QEMU's TCG plugin Benchmarks/Instructions/count-plugin.c: guest user space, every")
    print(f"thread and library): workoutd and gpxlogger per CPU on one gpsd replaying {epochs} epochs at one")
    print(f"a second, {args.recording:.0f} s of recording counted", flush=True)

    fake = device.start_gpsfake(replay, epochs / sentences, port, work)
    watcher, daemons, loggers, logs = None, {}, {}, []
    try:
        watcher = device.Watcher(port)
        watcher.start()
        counted = {}
        for label, emulator, cpu, workoutd, gpxlogger, prefix, env in setups:
            name = label.replace(" ", "-")
            lg = Counted(qemu[emulator], args.plugin, os.path.join(work, f"count.gpxlogger.{name}"), cpu, prefix, env)
            log = open(os.path.join(work, f"gpxlogger.{name}.log"), "w")
            logs.append(log)
            loggers[label] = subprocess.Popen(
                [*lg.launcher, gpxlogger, "-e", "sockets", "-f", os.path.join(work, f"track.{name}.gpx"),
                 f"127.0.0.1:{port}"], stdin=subprocess.DEVNULL, stdout=log, stderr=log)
            wd = Counted(qemu[emulator], args.plugin, os.path.join(work, f"count.workoutd.{name}"), cpu, prefix, env)
            # workoutctl is this machine's: the control socket's protocol is the same.
            daemon = device.Daemon("workoutd " + name, args.x86_bin, work, port, launcher=wd.launcher,
                                   executable=workoutd)
            daemons[label] = daemon
            counted[label] = (wd, lg)
            if daemon.notify.wait_ready(180, alive=lambda: daemon.proc.poll() is None) is None:
                sys.exit(f"no READY from workoutd ({label}) under qemu (log: {daemon.log.name})")
            started = daemon.ctl("start", timeout=120)
            if started.returncode != 0:
                sys.exit(f"workoutctl start failed ({label}): {started.stdout}{started.stderr}")
            for proc, c in ((daemon.proc, wd), (loggers[label], lg)):
                if not wait_for(c.out, 30, lambda: proc.poll() is None):
                    sys.exit(f"no counts from {c.out} ({label}): see the logs in {work}")
        time.sleep(SETTLE)  # every session running, everyone's start-up behind
        t0 = time.monotonic()
        before = {label: (daemons[label].points(), wd.sample(), lg.sample())
                  for label, (wd, lg) in counted.items()}
        time.sleep(args.recording)
        after = {label: (daemons[label].points(), wd.sample(), lg.sample())
                 for label, (wd, lg) in counted.items()}
        t1 = time.monotonic()
        dead = [label for label, d in daemons.items() if d.proc.poll() is not None] + \
               [label + "'s gpxlogger" for label, p in loggers.items() if p.poll() is not None]
    finally:
        for daemon in daemons.values():
            daemon.stop(timeout=60)
        for proc in loggers.values():
            benchlib.end(proc, 60)
        for log in logs:
            log.close()
        if watcher is not None:
            watcher.stopped = True
        device.stop_gpsfake(fake)

    if dead:
        sys.exit(f"ended before the window did: {', '.join(dead)} (logs in {work})")
    tpvs, fixes = watcher.fixes(t0, t1)
    print(f"window {t1 - t0:.0f} s: {fixes} fixes ({tpvs} TPVs)\n")
    failed = False
    for label, _, _, workoutd, _, _, _ in setups:
        (p0, w0, g0), (p1, w1, g1) = before[label], after[label]
        recorded = p1 - p0
        if w0[1] != w1[1] or g0[1] != g1[1]:
            # The plugin's slots are reallocated when a vCPU (a thread) beyond the 16th appears.
            print(f"{label}: a thread beyond the 16th started in the window; its counts are not read")
            failed = True
            continue
        if not (recorded and fixes):
            print(f"{label}: nothing to count: {recorded} points, {fixes} fixes (logs in {work})")
            failed = True
            continue
        names = {os.path.basename(workoutd): "workoutd's code (Swift, its runtime, Foundation, GRDB)"}
        wd_total, lg_total = w1[0] - w0[0], g1[0] - g0[0]
        per_point, per_fix = wd_total / recorded, lg_total / fixes
        print(f"{label}: {recorded} recorded seconds")
        print(f"  workoutd  {per_point:>9,.0f} instructions a recorded second"
              f" ({instructions.shares(w1[2] - w0[2], wd_total, names)})")
        print(f"  gpxlogger {per_fix:>9,.0f} instructions a fix ({instructions.shares(g1[2] - g0[2], lg_total, {})})")
        print(f"  ratio workoutd / gpxlogger: {per_point / per_fix:.2f}")
    print(f"(work directory: {work})")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
