#!/usr/bin/env python3
"""make bench: what each recorded second costs the real workoutd, on a Pi's terms.

Replays a 1-hour and a 12-hour ride at full speed (`--speed max`: virtual time, each recorded
second committed to SQLite with synchronous=FULL as in a real ride) through the real process on
the simulated board. The long ride is the bundled Edge 500 ride ridden back and forth. For each
ride, from the child's rusage (wait4):

- bytes written to storage per recorded second: ru_oublock x 512 (the kernel's block-I/O
  accounting, = /proc/PID/io write_bytes) / point rows recorded; and per day of riding (x 86,400);
- CPU per recorded second: (ru_utime + ru_stime) / point rows;
- peak RSS: its own ru_maxrss, from GNU time (`/usr/bin/time -f %M`).

Then the 1-hour ride once more under `strace -f -c` counting fsync/fdatasync (strace slows it,
so its CPU is not used): fsyncs per recorded second.

Each measured ride is a board's ride, not its first ever: the database was made by an earlier
start (a two-minute ride, stopped cleanly), as on a board that has recorded before. A database's
first start makes its WAL full size once (about 2 MB of zeros, `WorkoutStore.preallocateWAL`), and
a clean stop keeps it so; that one-time cost is printed apart, as the 1-hour ride on a new
database.

Exports at the session's end are switched off (for a binary that has them): the recording alone.

The state directory is under .build/ (on the repository's disk: a tmpfs /tmp would write nothing).
Targets (printed, never an exit status): <= 8.5 KB written per recorded second on both rides, and
the 12 h figure not above the 1 h one. Exits non-zero only if workoutd fails or if this build's
peak RSS grows with session length.

Usage: Benchmarks/recording.py --bin DIR [--baseline-bin DIR] [--save-json FILE]
"""
import argparse
import os
import sqlite3
import subprocess
import sys
import shutil
import tempfile
import time

import benchlib

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
    out.append("t,kind,lat,lon,alt,speed,hr,cadence,temperature,power\n")
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


def scratch_dir():
    base = os.path.join(benchlib.ROOT, ".build", "bench")
    os.makedirs(base, exist_ok=True)
    return tempfile.TemporaryDirectory(prefix="recording-", dir=base)


SYNC_CALLS = ("fsync", "fdatasync", "sync_file_range", "syncfs", "msync")


def strace_command():
    if not shutil.which("strace"):
        return None
    command = ["strace", "-f", "-c", "-e", "trace=" + ",".join(SYNC_CALLS)]
    # seccomp-bpf stops workoutd only at these calls (much faster); strace < 5.3 lacks it.
    probe = subprocess.run(command + ["--seccomp-bpf", "-o", "/dev/null", "true"], capture_output=True)
    return command + ["--seccomp-bpf"] if probe.returncode == 0 else command


def sync_calls(path):
    """Sums the calls column of strace -c's table for the sync calls."""
    total = 0
    with open(path) as f:
        for line in f:
            fields = line.split()
            if fields and fields[-1] in SYNC_CALLS and len(fields) >= 5:
                total += int(fields[3])
    return total


def run(binary_dir, hours, traced=False, fresh=False):
    with scratch_dir() as tmp:
        ride = os.path.join(tmp, "ride.csv")
        state = os.path.join(tmp, "state")
        config = os.path.join(tmp, "no-exports.toml")
        with open(config, "w") as f:
            f.write("[export]\nenabled = false\n")
        exports_off = ["--config", config] if subprocess.run(
            [os.path.join(binary_dir, "workoutd"), "--config", config, "--check-config"],
            capture_output=True).returncode == 0 else []
        if not fresh:
            # A board that has recorded before: its database exists, made by a clean start and stop.
            make_ride(ride, 120)
            warm = [os.path.join(binary_dir, "workoutd"), "--board", "sim", "--speed", "max", "--exit-at-end",
                    "--ride", ride, "--state-dir", state, "--runtime-dir", os.path.join(tmp, "run"),
                    "--log-level", "warning"] + exports_off
            done = subprocess.run(warm, capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit("workoutd failed (%d) on the warm-up ride:\n%s" % (done.returncode, done.stderr))
        make_ride(ride, hours * 3600)
        args = [os.path.join(binary_dir, "workoutd"), "--board", "sim", "--speed", "max", "--exit-at-end",
                "--ride", ride, "--state-dir", state, "--runtime-dir", os.path.join(tmp, "run"),
                "--log-level", "warning"]
        # The recording alone: the files a release since issue 14 exports as the session ends are
        # not the per-second path (Benchmarks/export.py measures them). Older binaries know no
        # [export] section and export nothing.
        args += exports_off
        trace = os.path.join(tmp, "strace.txt")
        if traced:
            args = strace_command() + ["-o", trace] + args
        # Its own peak RSS from GNU time (%M, the ru_maxrss of a child forked by that small
        # program): this script's own ru_maxrss figure would count the Python it was forked
        # from (see benchlib.peak_memory). CPU and blocks written from wait4, as before.
        peak_file = os.path.join(tmp, "peak-rss")
        if not traced:
            args = ["/usr/bin/time", "-f", "%M", "-o", peak_file] + args
        start = time.monotonic()
        proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
        stderr = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        if status != 0:
            sys.exit("workoutd failed (%d) on the %d-hour ride:\n%s" % (status, hours, stderr))
        db = sqlite3.connect(os.path.join(state, "workoutd.db"))
        # The measured ride's session: the last (the warm-up ride's is the first).
        points = db.execute("select count(*) from point where session_id = (select max(id) from session)").fetchone()[0]
        db.close()
        size = os.path.getsize(os.path.join(state, "workoutd.db"))
        if traced:
            return {"fsyncs_per_s": sync_calls(trace) / points}
        written = usage.ru_oublock * 512
        return {
            "points": points, "wall_s": wall, "points_per_s": points / wall,
            "kb_per_s": written / points / 1000, "mb_per_day": written / points * 86400 / 1e6,
            "cpu_us": (usage.ru_utime + usage.ru_stime) / points * 1e6,
            "rss_mib": int(open(peak_file).read().split()[-1]) / 1024, "db_mib": size / 2**20,
            "db_kb_per_s": size / points / 1000,
        }


def measure(binary_dir, label):
    figures = {}
    for hours in (1, 12):
        print("  %s: %d-hour ride..." % (label, hours), flush=True)
        for key, value in run(binary_dir, hours).items():
            figures["%dh.%s" % (hours, key)] = value
    print("  %s: 1-hour ride on a new database..." % label, flush=True)
    figures.update({"new1h." + k: v for k, v in run(binary_dir, 1, fresh=True).items()})
    if strace_command():
        print("  %s: 1-hour ride under strace -c..." % label, flush=True)
        figures.update({"1h." + k: v for k, v in run(binary_dir, 1, traced=True).items()})
    return figures


def kb_target(value, figures):
    return value <= 8.5


def not_above_1h(value, figures):
    # "Not above": 1 % allowed for run-to-run noise.
    return figures.get("1h.kb_per_s") is not None and value <= figures["1h.kb_per_s"] * 1.01


ROWS = [benchlib.Row("1h.points", "1 h ride: points recorded", "%d"),
        benchlib.Row("1h.kb_per_s", "  KB written / recorded s", "%.2f", ("<= 8.5", kb_target)),
        benchlib.Row("1h.mb_per_day", "  MB written / day (86,400 s)", "%.0f"),
        benchlib.Row("1h.db_kb_per_s", "  database KB / recorded s", "%.3f"),
        benchlib.Row("1h.fsyncs_per_s", "  fsyncs / recorded s", "%.2f"),
        benchlib.Row("1h.cpu_us", "  CPU µs / recorded s", "%.0f"),
        benchlib.Row("1h.rss_mib", "  peak RSS MiB", "%.1f"),
        benchlib.Row("1h.points_per_s", "  recorded s / wall s", "%.0f"),
        benchlib.Row("12h.points", "12 h ride: points recorded", "%d"),
        benchlib.Row("12h.kb_per_s", "  KB written / recorded s", "%.2f", ("<= 8.5, <= 1 h", lambda v, f: kb_target(v, f) and not_above_1h(v, f))),
        benchlib.Row("12h.mb_per_day", "  MB written / day (86,400 s)", "%.0f"),
        benchlib.Row("12h.db_kb_per_s", "  database KB / recorded s", "%.3f"),
        benchlib.Row("12h.cpu_us", "  CPU µs / recorded s", "%.0f"),
        benchlib.Row("12h.rss_mib", "  peak RSS MiB", "%.1f"),
        benchlib.Row("12h.points_per_s", "  recorded s / wall s", "%.0f"),
        benchlib.Row("new1h.kb_per_s", "1 h ride on a new database (its WAL made once): KB / recorded s", "%.2f"),
        benchlib.Row("new1h.cpu_us", "  CPU µs / recorded s", "%.0f")]


def main():
    parser = argparse.ArgumentParser()
    benchlib.add_common_arguments(parser)
    options = parser.parse_args()
    print("recording benchmark: the real workoutd, simulated board at full speed (virtual time), one")
    print("SQLite transaction (synchronous=FULL) per recorded second; written = rusage ru_oublock x 512\n")
    new = measure(options.bin, "this build")
    if options.save_json:
        benchlib.save_figures(options.save_json, "recording", new, "this build")
    if options.baseline_bin:
        base, label = measure(options.baseline_bin, "baseline"), "baseline (live)"
        if options.save_baseline_json:
            benchlib.save_figures(options.save_baseline_json, "recording", base, "f426fad")
    else:
        base, label = benchlib.baseline_source(options, "recording")
    print()
    benchlib.table(ROWS, new, base, label)
    growth = new["12h.rss_mib"] - new["1h.rss_mib"]
    print("\npeak RSS, 12 h minus 1 h: %+.1f MiB" % growth)
    # Flat means: twelve times the ride may not cost more than noise (10 % or 4 MiB).
    if growth > max(new["1h.rss_mib"] * 0.10, 4):
        sys.exit("FAIL: peak RSS grows with session length")
    print("OK: memory does not grow with session length")


if __name__ == "__main__":
    main()
