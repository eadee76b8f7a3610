#!/usr/bin/env python3
"""make bench: exporting a 12-hour 1 Hz session to each format: time and peak RSS.

The session: the bundled ride (3.5 h, auto-paused stops) repeated end to end until 12 hours of
records at 1 Hz (43,200), recorded by the real workoutd (`--board sim --speed max
--exit-at-end`, exports and auto-pause off: every second a point); then the bundled ride itself as a second, 3.5-hour session. Each
format is exported from each session by `workoutctl export` (a page of points at a time), timed
by wall clock, its peak RSS from wait4's rusage (ru_maxrss), three runs, the median. Memory
flat means the 12-hour export's peak is the 3.5-hour one's, give or take a page of points.

Usage: Benchmarks/export.py --bin DIR
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import benchlib

BUNDLED = os.path.join(benchlib.ROOT, "board", "sim", "rides", "garmin-edge-500-2011-09-25.csv")
FORMATS = ["fit", "gpx", "tcx", "csv"]
HOURS = 12


def twelve_hour_ride(path):
    """The bundled ride's records repeated, each copy shifted in time, to 12 hours."""
    records = []
    start = None
    with open(BUNDLED) as f:
        for line in f:
            if line.startswith("# start:"):
                start = line
            if line.startswith("#") or line.startswith("t,"):
                continue
            fields = line.rstrip("\n").split(",")
            if fields[1] == "rec":
                records.append((int(fields[0]), fields[2:]))
    length = records[-1][0] + 1
    with open(path, "w") as out:
        out.write(f"# the bundled ride repeated to {HOURS} hours (Benchmarks/export.py)\n{start}")
        out.write("t,kind,lat,lon,alt,speed,hr,cadence,temperature,power\n0,press,start\n")
        copy = 0
        while True:
            for t, rest in records:
                shifted = t + copy * length
                if shifted > HOURS * 3600:
                    out.write(f"{shifted},press,stop\n")
                    return
                out.write(",".join([str(shifted), "rec"] + rest) + "\n")
            copy += 1


def run_measured(argv):
    """Wall seconds and peak RSS (KiB) of one run of argv."""
    start = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.monotonic() - start
    if status != 0:
        sys.exit(f"export.py: {' '.join(argv)} failed: {process.stderr.read().decode()}")
    return elapsed, usage.ru_maxrss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="workoutd-export-bench-")
    try:
        ride = os.path.join(work, "12h.csv")
        twelve_hour_ride(ride)
        config = os.path.join(work, "workoutd.toml")
        with open(config, "w") as f:
            # Every second a point: no auto-pause at the ride's stops.
            f.write("[export]\nenabled = false\n[auto_pause]\nenabled = false\n")
        state = os.path.join(work, "state")
        for replay in [ride, BUNDLED]:
            subprocess.run([os.path.join(args.bin, "workoutd"), "--board", "sim", "--speed", "max", "--exit-at-end",
                            "--ride", replay, "--state-dir", state, "--runtime-dir", os.path.join(work, "run"),
                            "--config", config], check=True, stderr=subprocess.DEVNULL)
        points = {}
        out = subprocess.run([os.path.join(args.bin, "workoutctl"), "sessions", "--json", "--state-dir", state],
                             check=True, capture_output=True, text=True).stdout
        for row in json.loads(out):
            points[str(row.get("id", row.get("sessionId")))] = row.get("points")
        print(f"Exporting a session to each format (workoutctl export, 3 runs each, the median; peak RSS "
              f"from rusage): a {HOURS}-hour session of {points.get('1')} points and the bundled "
              f"3.5-hour ride of {points.get('2')} points.")
        print(f"{'format':8}{'12 h: s':>10}{'MiB':>8}{'bytes':>12}{'3.5 h: s':>12}{'MiB':>8}{'bytes':>12}")
        for format in FORMATS:
            row = f"{format:8}"
            for session in ["1", "2"]:
                out = os.path.join(work, "out", session)
                times, peaks = [], []
                for _ in range(3):
                    shutil.rmtree(out, ignore_errors=True)
                    elapsed, peak = run_measured([os.path.join(args.bin, "workoutctl"), "export", session, "--format",
                                                  format, "--out", out, "--state-dir", state])
                    times.append(elapsed)
                    peaks.append(peak)
                size = sum(os.path.getsize(os.path.join(out, name)) for name in os.listdir(out))
                row += f"{statistics.median(times):10.2f}{statistics.median(peaks) / 1024:8.1f}{size:12d}"
                if session == "1":
                    row += "  "
            print(row)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
