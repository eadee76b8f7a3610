#!/usr/bin/env python3
"""make bench: how fast the real workoutd records, and whether its memory stays flat.

Replays a 1-hour and a 12-hour ride at full speed (`--speed max`: virtual time, each recorded
second committed to SQLite with synchronous=FULL as in a real ride) through the real process on
the simulated board, and prints points per second and peak RSS for each. The long ride is the
bundled Edge 500 ride ridden back and forth. Fails if peak RSS grows with session length.

Usage: Benchmarks/recording.py --bin DIR_WITH_WORKOUTD
"""
import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUNDLED = os.path.join(HERE, "..", "board", "sim", "rides", "garmin-edge-500-2011-09-25.csv")


def load_records(path):
    header, records = [], []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                if line.startswith("# start:"):
                    header.append(line)
                continue
            if line.startswith("t,kind"):
                continue
            fields = line.rstrip("\n").split(",")
            if fields[1] == "rec":
                records.append((float(fields[0]), fields[2:]))
    return header, records


def make_ride(path, seconds):
    """Writes a ride of `seconds`: the recording forth, back, forth... with a lap per leg."""
    header, records = load_records(BUNDLED)
    span = records[-1][0]
    out = ["# benchmark ride made by Benchmarks/recording.py from the bundled ride\n"] + header
    out.append("t,kind,lat,lon,alt,speed,hr,cadence,temperature\n")
    out.append("0,press,start\n")
    offset, leg, t = 1.0, 0, 0.0
    while True:
        legs = records if leg % 2 == 0 else [(span - r[0], r[1]) for r in reversed(records)]
        for rt, fields in legs:
            t = offset + rt
            if t > seconds:
                break
            out.append("%d,rec,%s\n" % (t, ",".join(fields)))
        if t > seconds:
            break
        offset += span + 1
        leg += 1
        out.append("%d,press,lap\n" % offset)
    out.append("%d,press,stop\n" % (seconds + 1))
    with open(path, "w") as f:
        f.writelines(out)


def run(binary_dir, hours):
    with tempfile.TemporaryDirectory(prefix="workoutd-bench-") as tmp:
        ride = os.path.join(tmp, "ride.csv")
        make_ride(ride, hours * 3600)
        state = os.path.join(tmp, "state")
        args = [os.path.join(binary_dir, "workoutd"), "--board", "sim", "--speed", "max", "--exit-at-end",
                "--ride", ride, "--state-dir", state, "--runtime-dir", os.path.join(tmp, "run"),
                "--log-level", "warning"]
        start = time.monotonic()
        proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        stderr = proc.stderr.read()
        if status != 0:
            sys.exit("workoutd failed (%d) on the %d-hour ride:\n%s" % (status, hours, stderr))
        db = sqlite3.connect(os.path.join(state, "workoutd.db"))
        points = db.execute("select count(*) from point").fetchone()[0]
        size = os.path.getsize(os.path.join(state, "workoutd.db"))
        return points, wall, usage.ru_maxrss, usage.ru_utime + usage.ru_stime, size


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    options = parser.parse_args()
    print("recording benchmark: the real workoutd, simulated board at full speed, one SQLite")
    print("transaction (synchronous=FULL) per recorded second\n")
    print("%-8s %8s %9s %12s %14s %13s %10s" % ("ride", "points", "wall s", "points/s", "CPU µs/point", "peak RSS MiB", "db MiB"))
    results = {}
    for hours in (1, 12):
        points, wall, rss_kib, cpu, size = run(options.bin, hours)
        results[hours] = rss_kib
        print("%-8s %8d %9.1f %12.0f %14.0f %13.1f %10.1f" % (
            "%d hour" % hours, points, wall, points / wall, cpu / points * 1e6, rss_kib / 1024, size / 2**20))
    growth = results[12] - results[1]
    print("\npeak RSS, 12 h minus 1 h: %+.1f MiB" % (growth / 1024))
    # Flat means: twelve times the ride may not cost more than noise (10 % or 4 MiB).
    if growth > max(results[1] * 0.10, 4096):
        sys.exit("FAIL: peak RSS grows with session length")
    print("OK: memory does not grow with session length")


if __name__ == "__main__":
    main()
