#!/usr/bin/env python3
"""Same ride, same files, either CPU: each bundled ride (board/sim/rides) recorded on the
simulated board by two builds of workoutd (x86_64 natively, aarch64 under qemu-user), then
their databases compared row by row and their exports byte by byte.

What differs between two recordings on one CPU is made equal first, and nothing else:
- the session's UUID (random at the session's start) and the simulated board's clock epoch
  ("sim-virtual-" and a random UUID, in session.clock_epoch and every event's epoch) are
  replaced by placeholders in the rows compared;
- the resume snapshot and summary (JSON: Swift's dictionaries encode in an order its per-process
  hash seed picks) are compared as parsed JSON;
- the events of a device's coming and going (the exporter's directory becoming usable) are
  left out: at --speed max they land at whatever simulated second the host's scheduling gives
  them, on either CPU, or after a short ride's end, outside its session; events are compared
  without their row ids, which those events shift;
- the exports (named by, and in FIT carrying, the UUID) are written again by each build's own
  `workoutctl export` after both databases are given the same UUID, in every format.

Usage: compare.py --x86 DIR --arm64 DIR [--run-arm64 PREFIX] [--ride FILE ...]
Prints one line per ride and per check, then "N passed, N failed"; exit status 1 on a failure.
"""

import argparse
import concurrent.futures
import json
import os
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RIDES = os.path.join(ROOT, "board", "sim", "rides")
TABLES = ["session", "event", "point", "lap", "rr_interval"]
FORMATS = "fit,gpx,tcx,csv"
SAME_UUID = "00000000-0000-4000-8000-000000000000"


def record(prefix, bin_dir, ride, state):
    """Replays RIDE at full speed into STATE; returns the wall time it took."""
    os.makedirs(state)
    command = prefix + [os.path.join(bin_dir, "workoutd"), "--board", "sim", "--speed", "max", "--exit-at-end",
                        "--ride", ride, "--state-dir", state, "--runtime-dir", os.path.join(state, "run")]
    started = time.monotonic()
    with open(os.path.join(state, "workoutd.log"), "w") as log:
        result = subprocess.run(command, stdout=log, stderr=log, timeout=1800)
    if result.returncode != 0:
        raise RuntimeError(f"{shlex.join(command)} exited {result.returncode} (log: {state}/workoutd.log)")
    return time.monotonic() - started


def canonical(value):
    """A JSON text as its parsed value (key order is not content)."""
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return value


def rows(database, table):
    """Every row of TABLE, ordered, with the per-recording identifiers and timings replaced."""
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        cursor = connection.execute(f"SELECT * FROM {table}")
        names = [d[0] for d in cursor.description]
        epochs = {}
        result = []
        for row in cursor.fetchall():
            record = {}
            for name, value in zip(names, row):
                if name == "uuid":
                    value = "<uuid>"
                elif name in ("epoch", "clock_epoch") and isinstance(value, str):
                    value = epochs.setdefault(value, f"<epoch {len(epochs)}>")
                elif name in ("snapshot", "summary"):
                    value = canonical(value)
                record[name] = value
            if table == "event":
                del record["id"]
                if str(record.get("kind", "")).startswith("device"):
                    continue
            result.append(record)
        result.sort(key=lambda r: json.dumps(r, sort_keys=True, default=str))
        return result
    finally:
        connection.close()


def export(prefix, bin_dir, state, out):
    connection = sqlite3.connect(os.path.join(state, "workoutd.db"))
    with connection:
        connection.execute("UPDATE session SET uuid = ?", (SAME_UUID,))
        connection.execute("DELETE FROM export")
    connection.close()
    command = prefix + [os.path.join(bin_dir, "workoutctl"), "export", "--all", "--format", FORMATS, "--out", out,
                        "--state-dir", state, "--runtime-dir", os.path.join(state, "run")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        raise RuntimeError(f"{shlex.join(command)} exited {result.returncode}: {result.stderr.strip()}")
    return {name: open(os.path.join(out, name), "rb").read() for name in sorted(os.listdir(out))}


def first_difference(a, b):
    for index, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return index
    return min(len(a), len(b))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--x86", required=True, help="the x86_64 build's binaries")
    parser.add_argument("--arm64", required=True, help="the aarch64 build's binaries")
    parser.add_argument("--run-arm64", default="", help="a command prefix that runs an aarch64 program")
    parser.add_argument("--ride", action="append", help="a ride to replay (default: all in board/sim/rides)")
    arguments = parser.parse_args()
    rides = arguments.ride or sorted(os.path.join(RIDES, f) for f in os.listdir(RIDES) if f.endswith(".csv"))
    builds = {"x86_64": ([], arguments.x86), "aarch64": (shlex.split(arguments.run_arm64), arguments.arm64)}
    passed = failed = 0

    def check(name, ok, detail):
        nonlocal passed, failed
        print(f"{name}: {'PASS' if ok else 'FAIL'} ({detail})", flush=True)
        passed += ok
        failed += not ok

    with tempfile.TemporaryDirectory(prefix="workoutd-cross-cpu-") as scratch, \
            concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        # Every recording at once, a CPU each: each is one process and the rides are independent.
        def state_of(ride, cpu):
            return os.path.join(scratch, os.path.splitext(os.path.basename(ride))[0], cpu)
        recordings = {(ride, cpu): pool.submit(record, prefix, bin_dir, ride, state_of(ride, cpu))
                      for ride in rides for cpu, (prefix, bin_dir) in builds.items()}
        for ride in rides:
            name = os.path.splitext(os.path.basename(ride))[0]
            states, seconds = {}, {}
            try:
                for cpu in builds:
                    states[cpu] = state_of(ride, cpu)
                    seconds[cpu] = recordings[(ride, cpu)].result()
            except (RuntimeError, subprocess.TimeoutExpired) as error:
                check(f"{name} recorded", False, str(error))
                continue
            databases = {cpu: os.path.join(state, "workoutd.db") for cpu, state in states.items()}
            counts = []
            for table in TABLES:
                x86, arm = (rows(databases[cpu], table) for cpu in builds)
                same = x86 == arm
                detail = f"{len(x86)} rows"
                if not same:
                    index = next((i for i, (a, b) in enumerate(zip(x86, arm)) if a != b), min(len(x86), len(arm)))
                    detail += f" against {len(arm)}; first difference at row {index}:" \
                              f" {x86[index] if index < len(x86) else None} / {arm[index] if index < len(arm) else None}"
                check(f"{name} {table}", same, detail)
                counts.append(f"{len(x86)} {table}")
            files = {cpu: export(prefix, bin_dir, states[cpu], os.path.join(states[cpu], "same-uuid"))
                     for cpu, (prefix, bin_dir) in builds.items()}
            x86, arm = files["x86_64"], files["aarch64"]
            if sorted(x86) != sorted(arm) or not x86:
                check(f"{name} exports", False, f"files {sorted(x86)} against {sorted(arm)}")
            else:
                for file in sorted(x86):
                    same = x86[file] == arm[file]
                    detail = f"{len(x86[file])} bytes" + (
                        "" if same else f" against {len(arm[file])}; first difference at byte "
                                        f"{first_difference(x86[file], arm[file])}")
                    check(f"{name} {file.rsplit('.', 1)[1]} export", same, detail)
            print(f"  {name}: {', '.join(counts)}; recorded in {seconds['x86_64']:.1f} s (x86_64),"
                  f" {seconds['aarch64']:.1f} s (aarch64 under emulation)", flush=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
