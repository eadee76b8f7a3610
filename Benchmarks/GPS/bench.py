#!/usr/bin/env python3
"""GPS per-fix CPU cost: workoutd's gpsd client against gpsd's own gpxlogger, same replay.

Starts a real gpsd with gpsfake (Debian's gpsd-clients) on a free loopback port, replaying a
real capture from Tests/Fixtures/gpsd (default: bundg_zeus_9, a moving boat, ~2,500 fixes
through gpsd 3.22). Two clients watch the same gpsd at the same time:

- gpxlogger -e sockets (gpsd's small honest client: reads every report, writes a GPX point per
  new fix and fflushes it);
- gps-bench (Benchmarks/GPS/main.swift): what GPSDSource does per report: copy the TPV out of
  gps_data_t, map it, judge it, Kalman-filter and accumulate distance for accepted fixes.

Each process's CPU time (user + system) comes from its rusage: wait4's for gpxlogger,
gps-bench's own getrusage at the end of the replay (before it times its own code again). Per-fix figures divide by the
fixes gpsd reported (TPVs with mode 2/3, from gpsfake's own JSON client in the same run).
gps-bench also reports the CPU of our own code alone (mapping, acceptance, Kalman, distance),
timed by re-running this replay's reports through it after the replay.

Usage: Benchmarks/GPS/bench.py --bin DIR_WITH_gps-bench [--capture NAME.log] [--cycle S]
(`swift build -c release --product gps-bench`; DIR is `swift build -c release --show-bin-path`.)
"""
import argparse
import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import benchlib  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "Tests", "Fixtures", "gpsd")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port):
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def wait_rusage(proc, timeout):
    """Waits for a child (bounded) and returns (status, cpu seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            proc.returncode = status
            return status, usage.ru_utime + usage.ru_stime
        time.sleep(0.02)
    proc.kill()
    pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = status
    return None, usage.ru_utime + usage.ru_stime


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="directory holding gps-bench")
    parser.add_argument("--capture", default="bundg_zeus_9.log")
    parser.add_argument("--cycle", default="0.005", help="gpsfake -c: seconds between sentences")
    parser.add_argument("--repeat", type=int, default=20,
                        help="full-rate pass: how many times gpsd's reports of the replay are sent")
    args = parser.parse_args()

    bench = os.path.join(args.bin, "gps-bench")
    for program in (bench, "/usr/bin/gpsfake", "/usr/bin/gpxlogger"):
        if not os.access(program, os.X_OK):
            sys.exit(f"missing {program} (apt-get install gpsd gpsd-clients; swift build -c release --product gps-bench)")

    port = free_port()
    work = tempfile.mkdtemp(prefix="gps-bench-")
    atexit.register(shutil.rmtree, work, True)  # its replay's reports and GPX files, 1.6 MB
    reference = open(os.path.join(work, "reports.json"), "w")
    gpx = os.path.join(work, "track.gpx")
    capture = os.path.join(FIXTURES, args.capture)

    # Our client first: it retries until gpsd listens. gpsfake's pipe mode waits 1.4 s after its
    # own client connects before feeding, which leaves time for gpxlogger to connect too.
    ours = subprocess.Popen([bench, "127.0.0.1", str(port)], stdout=subprocess.PIPE, text=True)
    fake = subprocess.Popen(
        ["gpsfake", "-1", "-q", "-p", "-r", '?WATCH={"json":true}', "-c", args.cycle, "-P", str(port), capture],
        stdout=reference, stderr=subprocess.DEVNULL,
        # gpsd's control socket in this run's directory, never a stale one (see GPSFake.swift).
        env=dict(os.environ, TMPDIR=work))
    deadline = time.monotonic() + 10
    while not listening(port):
        if time.monotonic() > deadline:
            sys.exit("gpsd did not start")
        time.sleep(0.02)
    benchlib.gpsfake_add_receiver(fake)
    logger = subprocess.Popen(["gpxlogger", "-e", "sockets", "-f", gpx, f"127.0.0.1:{port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    fake.wait(timeout=600)
    reference.close()
    _, logger_cpu = wait_rusage(logger, 30)
    ours_output = ours.stdout.read()
    _, ours_cpu = wait_rusage(ours, 30)

    fixes = 0
    with open(os.path.join(work, "reports.json")) as f:
        for line in f:
            if line.startswith('{"class":"TPV"'):
                try:
                    if json.loads(line).get("mode", 0) >= 2:
                        fixes += 1
                except ValueError:
                    pass
    points = open(gpx).read().count("<trkpt") if os.path.exists(gpx) else 0
    fields = dict(item.split("=", 1) for item in ours_output.split())
    if not fixes or "pure_us_per_fix" not in fields:
        sys.exit(f"replay failed: {fixes} fixes, gps-bench said {ours_output!r}")
    # gps-bench's own getrusage, taken before it re-runs the reports to time its own code.
    ours_cpu = float(fields["process_cpu_s"])
    ours_connected = float(fields["connected_cpu_s"])
    pure = float(fields["pure_us_per_fix"])

    def us(seconds, count):
        return f"{seconds / count * 1e6:7.1f} µs" if count else "    n/a"

    print(f"replay: {args.capture} through gpsd 3.22 (gpsfake -c {args.cycle}): {fixes} fixes reported")
    print(f"gpxlogger:            {logger_cpu:6.3f} s CPU  {us(logger_cpu, fixes)}/fix  ({points} GPX points written)")
    print(f"workoutd gps client:  {ours_cpu:6.3f} s CPU  {us(ours_cpu, fixes)}/fix  "
          f"({ours_connected:.3f} s once connected; {fields['accepted']} of {fields['position_reports']} fixes "
          f"accepted at 20 m, {float(fields['distance_m']):.0f} m)")
    print(f"  of which our own code (mapping + acceptance + Kalman + distance): {pure:6.2f} µs/fix")
    print(f"  the rest is reading and decoding gpsd's JSON (recv, GPSDJSON) and the process, as libgps is for gpxlogger")

    # Full rate: the same JSON gpsd sent, replayed by a bare TCP server as fast as each client
    # reads it, to each client alone: the cost per report without gpsd's pacing and scheduling.
    stream = open(os.path.join(work, "reports.json"), "rb").read() * args.repeat
    tpvs = stream.count(b'"class":"TPV"')
    logger_full = serve(stream, ["gpxlogger", "-e", "sockets", "-f", os.path.join(work, "full.gpx"), "127.0.0.1:PORT"])[0]
    _, output = serve(stream, [bench, "127.0.0.1", "PORT"])
    ours_full = float(dict(item.split("=", 1) for item in output.split())["process_cpu_s"])
    print(f"full rate, {tpvs} TPVs ({args.repeat}x gpsd's reports of this replay), one client at a time:")
    print(f"gpxlogger:            {logger_full:6.3f} s CPU  {us(logger_full, tpvs)}/TPV")
    print(f"workoutd gps client:  {ours_full:6.3f} s CPU  {us(ours_full, tpvs)}/TPV")


def serve(stream, command):
    """Serves `stream` to one client (`PORT` in its command line), returns (CPU s, stdout)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        proc = subprocess.Popen([a.replace("PORT", str(port)) for a in command],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        server.settimeout(15)
        client, _ = server.accept()
        client.recv(4096)  # its ?WATCH
        client.sendall(stream)
        client.close()
    output = proc.stdout.read()
    _, cpu = wait_rusage(proc, 60)
    return cpu, output

if __name__ == "__main__":
    main()
