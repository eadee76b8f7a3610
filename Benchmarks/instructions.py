#!/usr/bin/env python3
"""make bench: the 1 Hz comparison with gpxlogger in instructions, which no machine moves.

device.py compares CPU time: workoutd's per recorded second against gpxlogger's per fix, both
attached to one gpsd. On a virtual machine most of either figure is the kernel's: each wake-up
(a timer, a socket read, a disk wait) costs tens of µs before any work is done, and the durable
commit a recorded second (fdatasync, which gpxlogger never calls) more than gpxlogger's whole fix.
This counts the user-space half exactly: valgrind's callgrind counts every instruction each
process executes outside the kernel (all threads, every library), a figure that no host's speed
or load moves, and that says how much work each program does for a fix.

One gpsd (gpsfake replaying device.py's 1 Hz capture, forth and back), and attached to it under
callgrind: gpxlogger (writing its GPX file), the release workoutd (--board linux, its debug info
stripped, which valgrind 3.19 cannot read), and the floor logger (Benchmarks/Floor/
durable-logger.c: one durable SQLite insert a second, set up as workoutd's database, nothing
else), which is what the store's share of a recorded second would be by itself. After
`workoutctl start` and a settling pause, callgrind dumps each process (zeroing its counts), then
again after --recording seconds: the second dump is that window alone. Per recorded second
(workoutd's point rows added in it), per fix (the replay's epochs with a 2D/3D fix in it), per
second (the floor), each split by the object the instructions ran in.

Not counted: the kernel's work (system calls, the commit's block I/O, wake-ups), which
device.py's CPU figures hold and valgrind cannot see. About 1.5 minutes. Needs valgrind.

Usage: Benchmarks/instructions.py --bin DIR [--recording 60] [--save-json FILE]
"""
import argparse
import collections
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

import benchlib
import device


def dump(proc):
    subprocess.run(["callgrind_control", "--dump", str(proc.pid)], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)


def instructions_by_object(path):
    """(total, {object's file name: instructions}) of one callgrind dump (uncompressed names).

    A cost line counts for the current `ob=`, except the line after `calls=`, which is the
    callee's inclusive cost (already counted in the callee's own lines)."""
    total, by_object = 0, collections.Counter()
    current, skip_next = "?", False
    with open(path) as f:
        for line in f:
            if line.startswith("summary:"):
                total = int(line.split()[1])
            elif line.startswith("ob="):
                current = os.path.basename(line[3:].strip()) or "?"
            elif line.startswith("calls="):
                skip_next = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                if skip_next:
                    skip_next = False
                    continue
                parts = line.split()
                if len(parts) >= 2:
                    by_object[current] += int(parts[1])
    return total, by_object


def shares(by_object, total, names):
    """"name 41 %, ..." for the largest objects, the rest together."""
    merged = collections.Counter()
    for ob, n in by_object.items():
        merged[names.get(ob, ob)] += n
    top = [(ob, n) for ob, n in merged.most_common(4) if n >= total / 100]
    rest = total - sum(n for _, n in top)
    text = ", ".join(f"{ob} {n / total * 100:.0f} %" for ob, n in top)
    return text + (f", other {rest / total * 100:.0f} %" if rest >= total / 200 else "")


def floor_rows(path):
    """Rows of the floor logger's `point` table: its durable inserts."""
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=5)
    try:
        return db.execute("select count(*) from point").fetchone()[0]
    finally:
        db.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="directory holding this build's workoutd and workoutctl")
    parser.add_argument("--recording", type=float, default=60, help="seconds counted (default 60)")
    parser.add_argument("--dir", default=os.path.join(benchlib.ROOT, ".build", "bench"))
    parser.add_argument("--save-json", help="write the figures (merged by section) to this file")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("instructions.py needs valgrind (apt-get install valgrind)")

    os.makedirs(args.dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="instructions-", dir=args.dir)
    os.makedirs(os.path.join(work, "stripped"))
    binary = os.path.join(work, "stripped", "workoutd")  # work/workoutd is the Daemon's directory
    subprocess.run(["objcopy", "--strip-debug", os.path.join(args.bin, "workoutd"), binary], check=True)
    floor_bin = os.path.join(work, "durable-logger")
    floor_source = os.path.join(benchlib.ROOT, "Benchmarks", "Floor", "durable-logger.c")
    subprocess.run(["cc", "-O2", "-Wall", "-o", floor_bin, floor_source, "-lsqlite3"], check=True)
    replay = os.path.join(work, "replay.log")
    epochs, sentences = device.make_replay(os.path.join(device.FIXTURES, "bundg_zeus_9.log"), replay)
    port = device.free_port()
    print("instructions (valgrind's callgrind, user space only, every thread and library): workoutd,")
    print(f"gpxlogger and the floor logger on one gpsd replaying {epochs} epochs at one a second,"
          f" {args.recording:.0f} s of recording counted", flush=True)

    fake = device.start_gpsfake(replay, epochs / sentences, port, work)
    procs, outs, daemon, watcher = {}, {}, None, None

    def start(name, command):
        """`command` under callgrind, its output and log in the work directory by `name`."""
        outs[name] = os.path.join(work, "callgrind." + name)
        log = open(os.path.join(work, name + ".log"), "w")
        procs[name] = benchlib.callgrind(outs[name], command, stdin=subprocess.DEVNULL, stdout=log, stderr=log)

    try:
        watcher = device.Watcher(port)
        watcher.start()
        start("gpxlogger", ["gpxlogger", "-e", "sockets", "-f", os.path.join(work, "track.gpx"), f"127.0.0.1:{port}"])
        outs["workoutd"] = os.path.join(work, "callgrind.workoutd")
        daemon = device.Daemon("workoutd", args.bin, work, port, launcher=benchlib.callgrind_prefix(outs["workoutd"]),
                               executable=binary)
        procs["workoutd"] = daemon.proc
        if daemon.notify.wait_ready(180, alive=lambda: daemon.proc.poll() is None) is None:
            sys.exit(f"no READY from workoutd under valgrind (log: {daemon.log.name})")
        floor_db = os.path.join(work, "floor.db")
        start("floor", [floor_bin, floor_db, str(int(args.recording + 120))])
        started = daemon.ctl("start", timeout=120)
        if started.returncode != 0:
            sys.exit(f"workoutctl start failed: {started.stdout}{started.stderr}")
        time.sleep(15)  # the session running, the floor's WAL made, everyone's start-up behind
        for proc in procs.values():
            dump(proc)
        t0, p0, f0 = time.monotonic(), daemon.points(), floor_rows(floor_db)
        time.sleep(args.recording)
        for proc in procs.values():
            dump(proc)
        t1, p1, f1 = time.monotonic(), daemon.points(), floor_rows(floor_db)
    finally:
        if daemon is not None:
            daemon.stop(timeout=60)
        for proc in procs.values():
            benchlib.end(proc, 60)
        if watcher is not None:
            watcher.stopped = True
        device.stop_gpsfake(fake)

    tpvs, fixes = watcher.fixes(t0, t1)
    recorded, floor_seconds = p1 - p0, f1 - f0
    if not (recorded and fixes and floor_seconds):
        sys.exit(f"nothing to count: {recorded} points, {fixes} fixes, {floor_seconds} floor rows"
                 f" in {t1 - t0:.0f} s (logs in {work})")
    names = {os.path.basename(binary): "workoutd's code (Swift, its runtime, Foundation, GRDB)",
             "durable-logger": "its code"}
    wd_total, wd_obj = instructions_by_object(outs["workoutd"] + ".2")
    lg_total, lg_obj = instructions_by_object(outs["gpxlogger"] + ".2")
    fl_total, fl_obj = instructions_by_object(outs["floor"] + ".2")
    per_point, per_fix, per_row = wd_total / recorded, lg_total / fixes, fl_total / floor_seconds
    print(f"window {t1 - t0:.0f} s: {recorded} recorded seconds, {fixes} fixes ({tpvs} TPVs),"
          f" {floor_seconds} floor rows\n")
    print(f"workoutd     {per_point:>9,.0f} instructions a recorded second ({shares(wd_obj, wd_total, names)})")
    print(f"gpxlogger    {per_fix:>9,.0f} instructions a fix ({shares(lg_obj, lg_total, names)})")
    print(f"floor logger {per_row:>9,.0f} instructions a durable insert ({shares(fl_obj, fl_total, names)})")
    print(f"ratio workoutd / gpxlogger in instructions: {per_point / per_fix:.2f}"
          f" (the work each does; device.py's CPU figures add the kernel's and the caches' price)")
    print(f"(work directory: {work})")
    if args.save_json:
        benchlib.save_figures(args.save_json, "instructions", {
            "recording.seconds": t1 - t0, "recording.points": recorded, "recording.fixes": fixes,
            "recording.tpvs": tpvs, "workoutd.per_point": per_point, "gpxlogger.per_fix": per_fix,
            "floor.per_insert": per_row, "ratio": per_point / per_fix}, "this build")


if __name__ == "__main__":
    main()
