#!/usr/bin/env python3
"""make bench: how long workoutd takes to be READY on a 1 GB database, and its peak RSS.

The database: the bundled ride recorded once by the real workoutd (`--board sim --speed max
--exit-at-end`), then its session (points, laps, events) copied with SQL `INSERT ... SELECT` into
as many more ended sessions as make the file ~1 GB (about 530 rides of 3.5 h, 7 million points).
It is made once and kept as .build/bench-1g.db (delete it to make it again); each binary measured
works on its own copy of it (.build/bench/), so the kept file is never changed.

READY time: from just before exec to the READY=1 datagram on a NOTIFY_SOCKET (an AF_UNIX
datagram socket bound here, as systemd does), of `workoutd --board linux` with no device
configured (start-up only: open, integrity check, migrations, resuming; nothing recorded). Three
starts, the database in the page cache (just copied): the median. Then one start with the
database evicted from the page cache first (posix_fadvise DONTNEED on the file only): cold, as on
a board whose RAM is smaller than its database. Then once after an unclean stop: the simulated
board recording a ride at full speed into the same database, `kill -9` mid-ride, then the same
timed start on the linux board (WAL recovery, the session resumed: what a board does after a
crash); and once more on the simulated board, which also reads its whole ride file before READY. Peak RSS is each start's
VmHWM of its own address space (/proc/PID/status, half a second after READY, just before SIGTERM).

Targets (printed, never an exit status): READY <= 200 ms; peak RSS <= 16 MiB.

Usage: Benchmarks/ready.py --bin DIR [--baseline-bin DIR] [--size-gb 1.0]
"""
import argparse
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

import benchlib

BUNDLED = os.path.join(benchlib.ROOT, "board", "sim", "rides", "garmin-edge-500-2011-09-25.csv")
CACHE = os.path.join(benchlib.ROOT, ".build", "bench-1g.db")
SCRATCH = os.path.join(benchlib.ROOT, ".build", "bench")

NO_DEVICES = """# Benchmarks/ready.py: the linux board with no device: start-up only.
[service]
board = "linux"
[gps]
enabled = false
""" + benchlib.OTHER_DEVICES_OFF


# The start whose background work is measured is held after READY until the exporter has
# written this many files, at most HOLD seconds: the integrity check of the 1 GB file comes
# first (3 s in the page cache on the build machine, more from the disk), then the catch-up.
EXPORTS = 100
HOLD = 90.0


def columns(db, table):
    return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]


def make_database(binary_dir, size):
    """Records the bundled ride once, then multiplies its session until the file is `size` bytes."""
    os.makedirs(SCRATCH, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="make-1g-", dir=SCRATCH) as tmp:
        print(f"  making {CACHE}: recording the bundled ride at full speed...", flush=True)
        state = os.path.join(tmp, "state")
        result = subprocess.run(
            [os.path.join(binary_dir, "workoutd"), "--board", "sim", "--speed", "max", "--exit-at-end",
             "--ride", BUNDLED, "--state-dir", state, "--runtime-dir", os.path.join(tmp, "run"),
             "--log-level", "warning"], capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit("workoutd failed recording the bundled ride:\n" + result.stderr)
        path = os.path.join(state, "workoutd.db")
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("PRAGMA journal_mode=DELETE")
        db.execute("PRAGMA synchronous=OFF")
        db.execute("PRAGMA cache_size=-65536")
        (source,) = db.execute("SELECT id FROM session ORDER BY id LIMIT 1").fetchone()
        state_of = db.execute("SELECT state FROM session WHERE id=?", (source,)).fetchone()[0]
        if state_of != "ended":
            sys.exit(f"the recorded session is {state_of}, not ended")
        points = db.execute("SELECT count(*) FROM point WHERE session_id=?", (source,)).fetchone()[0]
        statements = []
        for table, key in (("session", "id"), ("point", "session_id"), ("lap", "session_id"),
                           ("event", "session_id")):
            cols = [c for c in columns(db, table) if not (table == "event" and c == "id")]
            # Each copy is a session of its own: its own id and its own UUID (unique since
            # migration v7; the first 8 hex digits name its export files).
            chosen = [(":new" if c == key else
                       "printf('%08x-0000-4000-8000-%012x', :new, :new)" if (table, c) == ("session", "uuid")
                       else c) for c in cols]
            where = "id" if table == "session" else "session_id"
            statements.append(f"INSERT INTO {table} ({', '.join(cols)}) SELECT {', '.join(chosen)} "
                              f"FROM {table} WHERE {where} = :source")
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        new = db.execute("SELECT max(id) FROM session").fetchone()[0]
        print(f"  copying its session ({points} points) into more sessions up to {size / 1e9:.1f} GB...", flush=True)
        while db.execute("PRAGMA page_count").fetchone()[0] * page_size < size:
            db.execute("BEGIN")
            for _ in range(20):
                new += 1
                for sql in statements:
                    db.execute(sql, {"new": new, "source": source})
            db.execute("COMMIT")
        db.execute("PRAGMA journal_mode=WAL")
        total = db.execute("SELECT count(*) FROM point").fetchone()[0]
        db.close()
        os.replace(path, CACHE)
        print(f"  {CACHE}: {os.path.getsize(CACHE) / 1e9:.2f} GB, {new} sessions, {total} points", flush=True)


def evict(path):
    """Drops this file (only) from the page cache."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def timed_start(binary_dir, work, args, hold=0.5, until=None):
    """Starts workoutd with `args`, stops it `hold` seconds after READY=1 (or, with `until`, once
    until() is true, at most `hold` seconds); returns (seconds from exec to READY=1, peak RSS
    MiB)."""
    notify = benchlib.NotifySocket(work)
    log = open(os.path.join(work, "workoutd.log"), "a")
    start = time.monotonic()
    proc = subprocess.Popen([os.path.join(binary_dir, "workoutd"), *args], stdin=subprocess.DEVNULL,
                            stdout=log, stderr=log, env=dict(os.environ, NOTIFY_SOCKET=notify.path))
    ready = notify.wait_ready(120, alive=lambda: proc.poll() is None)
    notify.close()
    if ready is None:
        proc.kill()
        proc.wait()
        sys.exit(f"workoutd did not report READY=1 (log: {log.name})")
    deadline = time.monotonic() + hold
    while time.monotonic() < deadline and not (until and until()):
        time.sleep(0.1)
    peak, _ = benchlib.peak_memory(proc.pid)  # its own, not ru_maxrss: see benchlib.peak_memory
    proc.send_signal(signal.SIGTERM)
    os.wait4(proc.pid, 0)
    proc.returncode = 0
    log.close()
    return ready - start, peak


def measure(binary_dir, label):
    work = tempfile.mkdtemp(prefix="ready-", dir=SCRATCH)
    try:
        state, runtime = os.path.join(work, "state"), os.path.join(work, "run")
        os.makedirs(state)
        db = os.path.join(state, "workoutd.db")
        print(f"  {label}: copying the database...", flush=True)
        shutil.copyfile(CACHE, db)
        evict(db)  # written back to disk, so no writeback runs during the starts
        config = os.path.join(work, "workoutd.toml")
        with open(config, "w") as f:
            f.write(NO_DEVICES)
        linux = ["--config", config, "--state-dir", state, "--runtime-dir", runtime]
        timed_start(binary_dir, work, linux)  # reads the file back into the page cache (not counted)
        warm = [timed_start(binary_dir, work, linux) for _ in range(3)]
        evict(db)
        cold = timed_start(binary_dir, work, linux)
        # Unclean stop: the simulated board recording at 1000x, kill -9 mid-ride; then the
        # timed start on the linux board (what a board does after a crash: WAL recovery, the
        # session resumed; its figure has the target) and, after a second such kill, on the
        # simulated board (which also reads its whole ride file again before READY).
        # At 1000x, not full speed: the bundled ride lasts 11 s, so the kill 3 s in is mid-ride
        # (at full speed it was over by then, and the start after the kill resumed nothing).
        ride = ["--board", "sim", "--speed", "1000", "--ride", BUNDLED, "--state-dir", state,
                "--runtime-dir", runtime, "--log-level", "warning"]

        wal_sizes = []

        def record_and_kill():
            notify = benchlib.NotifySocket(work)
            log = open(os.path.join(work, "workoutd.log"), "a")
            proc = subprocess.Popen([os.path.join(binary_dir, "workoutd"), *ride], stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=log, env=dict(os.environ, NOTIFY_SOCKET=notify.path))
            if notify.wait_ready(120, alive=lambda: proc.poll() is None) is None:
                sys.exit(f"workoutd (sim) did not report READY=1 (log: {log.name})")
            notify.close()
            time.sleep(3)
            proc.kill()
            proc.wait()
            log.close()
            # Read-only: a writable connection, the last one to close, would checkpoint the WAL
            # into the database and delete it, and the start after the kill would have no WAL
            # to recover.
            wal_sizes.append(os.path.getsize(db + "-wal") if os.path.exists(db + "-wal") else 0)
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                return conn.execute(
                    "SELECT count(*) FROM session WHERE state NOT IN ('ended', 'stopped')").fetchone()[0]
            finally:
                conn.close()

        # What the start leaves running in the background, held long enough to be under way:
        # the integrity check this copied database is due (no record of a check), then the
        # exporter's catch-up of its hundreds of sessions never exported (the first start after
        # an upgrade). The peak of the whole start, not only up to READY.
        def exported():
            with open(os.path.join(work, "workoutd.log")) as f:
                return sum("exported session" in line for line in f)

        settled = timed_start(binary_dir, work, linux, hold=HOLD, until=lambda: exported() >= EXPORTS)
        exported_in_hold = exported()
        running = record_and_kill()
        unclean = timed_start(binary_dir, work, linux)
        record_and_kill()
        unclean_sim = timed_start(binary_dir, work, ride)
        return {
            "ready_ms": statistics.median(t for t, _ in warm) * 1000,
            "ready_ms_runs": [round(t * 1000, 1) for t, _ in warm],
            "ready_cold_ms": cold[0] * 1000, "ready_unclean_ms": unclean[0] * 1000,
            "ready_unclean_sim_ms": unclean_sim[0] * 1000,
            "rss_mib": max(r for _, r in warm), "rss_cold_mib": cold[1], "rss_unclean_mib": unclean[1],
            "unfinished_after_kill": running, "rss_settled_mib": settled[1], "exported_in_hold": exported_in_hold,
            "wal_after_kill_mb": wal_sizes[0] / 1e6,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def quick_check_seconds():
    db = sqlite3.connect(f"file:{CACHE}?mode=ro", uri=True)
    start = time.monotonic()
    db.execute("PRAGMA quick_check").fetchall()
    elapsed = time.monotonic() - start
    db.close()
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    benchlib.add_common_arguments(parser)
    parser.add_argument("--size-gb", type=float, default=1.0, help="size of the database to make")
    args = parser.parse_args()
    print("READY benchmark: workoutd started on a ~1 GB database, exec to READY=1 on NOTIFY_SOCKET\n", flush=True)
    if not os.path.exists(CACHE):
        make_database(args.bin, args.size_gb * 1e9)
    size = os.path.getsize(CACHE)
    new = measure(args.bin, "this build")
    new["db_gb"] = size / 1e9
    new["quick_check_s"] = quick_check_seconds()
    if args.save_json:
        benchlib.save_figures(args.save_json, "ready", new, "this build")
    if args.baseline_bin:
        base, label = measure(args.baseline_bin, "baseline"), "baseline (live)"
        base["db_gb"], base["quick_check_s"] = new["db_gb"], new["quick_check_s"]
        if args.save_baseline_json:
            benchlib.save_figures(args.save_baseline_json, "ready", base, "f426fad")
    else:
        base, label = benchlib.baseline_source(args, "ready")
    print(f"\ndatabase {size / 1e9:.2f} GB; PRAGMA quick_check of it by Python's sqlite3, in the page cache: "
          f"{new['quick_check_s']:.2f} s")
    print(f"this build's three READY times: {new['ready_ms_runs']} ms; "
          f"sessions left unfinished by the kill -9: {new['unfinished_after_kill']}, "
          f"its WAL {new.get('wal_after_kill_mb', 0):.1f} MB")
    if "exported_in_hold" in new:
        print(f"files exported by the start held for its background work (after its integrity check): "
              f"{new['exported_in_hold']}")
    print()
    R = benchlib.Row
    benchlib.table([
        R("ready_ms", "READY ms (median of 3, warm)", "%.0f", ("<= 200", lambda v, f: v <= 200)),
        R("ready_cold_ms", "READY ms (file not in page cache)", "%.0f", ("<= 200", lambda v, f: v <= 200)),
        R("ready_unclean_ms", "READY ms after kill -9 mid-ride", "%.0f", ("<= 200", lambda v, f: v <= 200)),
        R("ready_unclean_sim_ms", "  the same on the simulated board (reads its ride)", "%.0f"),
        R("rss_mib", "peak RSS MiB (warm starts)", "%.1f", ("<= 16", lambda v, f: v <= 16)),
        R("rss_cold_mib", "peak RSS MiB (cold start)", "%.1f", ("<= 16", lambda v, f: v <= 16)),
        R("rss_unclean_mib", "peak RSS MiB (after kill -9)", "%.1f", ("<= 16", lambda v, f: v <= 16)),
        R("rss_settled_mib", "peak RSS MiB, integrity check then exports", "%.1f",
          ("<= 16", lambda v, f: v <= 16)),
    ], new, base, label)


if __name__ == "__main__":
    main()
