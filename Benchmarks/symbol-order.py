#!/usr/bin/env python3
"""Makes the link order of workoutd's functions (`.build/workoutd.order`, the Makefile's
ORDER_FILE), so that the code a ride runs sits together in the executable.

Why: the kernel maps an executable's pages 64 KiB at a time around each page touched
(fault-around), so a function that runs pulls its 15 neighbours into the resident set. In a
92 MB statically linked Swift binary the functions a ride runs are scattered among thousands
that never run; ordered together they need fewer 64 KiB windows, and the service's RSS falls.

How: the release build of this checkout, objcopy'd without its debug info (valgrind 3.19 cannot
read it), runs under valgrind's callgrind, which names every function executed:
  1. the linux board on a real gpsd (gpsfake replaying the bundled 1 Hz capture): start, idle,
     `workoutctl start`, recording, lap, pause, resume, SIGTERM; a second start that resumes the
     session left running, then stop (its exports), status, SIGTERM; and a third start with the
     export table emptied (the exporter's catch-up pass, as after an upgrade);
  2. the simulated board replaying a short ride at full speed to its end;
  3. the simulated board in real time with the phone page on (`[web]`): a phone pairs, loads the
     page, watches the live feed, opens the rides and downloads one.
First the functions of ten seconds of steady recording in run 1 (callgrind dumps that window
apart), by how often they ran: the code a recorded second runs, packed into the fewest pages (at
1 Hz each page is a cold TLB entry and cold cache lines every second); then the rest of run 1 by
how often it ran (what a ride runs once), then what only run 2 needs, then what only the phone
page needs (a block of its own, touched only when `[web]` is on). The order file lists
mangled names; lld places each function's section (`-function-sections`) in that order and the
rest after it.
Names that a later build no longer has are ignored (`--no-warn-symbol-ordering`): a stale file
costs RSS, never correctness.

Usage: `make release` runs it when the file is missing or older than the sources or these
scripts (a release link without the order, this script on it, the link with the order);
`make symbol-order` runs it now. About 2 minutes. Needs valgrind, gpsd, gpsd-clients (make
installs them).
"""
import argparse
import collections
import os
import re
import shutil
import signal
import sqlite3
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402
import device  # noqa: E402
import recording  # noqa: E402
import web  # noqa: E402


def plain(name):
    """A callgrind function name without the `'2` it adds to a recursion's inner calls."""
    return re.sub(r"'\d+$", "", name.strip())


def call_counts(path):
    """Function name → times called, from a callgrind output file (uncompressed names).
    A function that ran but was never called (an entry point) counts once."""
    counts = collections.Counter()
    callee = None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("fn="):
                counts[plain(line[3:])] += 0
            elif line.startswith("cfn="):
                callee = plain(line[4:])
            elif line.startswith("calls=") and callee is not None:
                counts[callee] += int(line[6:].split()[0])
                callee = None
    return {name: max(n, 1) for name, n in counts.items()}


def ctl(bin_dir, state, runtime, *args):
    return subprocess.run([os.path.join(bin_dir, "workoutctl"), *args, "--state-dir", state,
                           "--runtime-dir", runtime], capture_output=True, text=True, timeout=120)


def wait_points(state, at_least, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            db = sqlite3.connect("file:%s?mode=ro" % os.path.join(state, "workoutd.db"), uri=True, timeout=5)
            try:
                if db.execute("select count(*) from point").fetchone()[0] >= at_least:
                    return True
            finally:
                db.close()
        except sqlite3.Error:
            pass
        time.sleep(1)
    return False


def linux_board_run(binary, bin_dir, work):
    replay = os.path.join(work, "replay.log")
    epochs, sentences = device.make_replay(os.path.join(device.FIXTURES, "bundg_zeus_9.log"), replay)
    port = device.free_port()
    fake = device.start_gpsfake(replay, epochs / sentences, port, work)
    config = os.path.join(work, "workoutd.toml")
    with open(config, "w") as f:
        f.write(device.CONFIG.replace("{port}", str(port)))
    state, runtime = os.path.join(work, "state"), os.path.join(work, "run")
    outputs, steady = [], None  # every part of every run; the steady window of the first
    try:
        for attempt in ("first", "resumed", "catch-up"):
            if attempt == "catch-up":
                # A start with ended sessions never exported (the first start after an upgrade,
                # or an exports directory emptied): the exporter's catch-up pass, whose peak
                # memory is READY's (make bench's ready.py).
                shutil.rmtree(os.path.join(state, "exports"), ignore_errors=True)
                db = sqlite3.connect(os.path.join(state, "workoutd.db"))
                db.execute("DELETE FROM export")
                db.commit()
                db.close()
            out = os.path.join(work, f"callgrind.linux.{attempt}")
            notify = benchlib.NotifySocket(work)
            log = open(os.path.join(work, f"workoutd.{attempt}.log"), "w")
            proc = benchlib.callgrind(out, [binary, "--config", config, "--state-dir", state, "--runtime-dir", runtime],
                                      stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                      env=dict(os.environ, NOTIFY_SOCKET=notify.path))
            if notify.wait_ready(180, alive=lambda: proc.poll() is None) is None:
                sys.exit(f"no READY from workoutd under valgrind (log: {log.name})")
            print(f"  linux board ({attempt}): ready", flush=True)
            time.sleep(5)
            if attempt == "first":
                for step in (("start",), ("status", "--json")):
                    ctl(bin_dir, state, runtime, *step)
                # The per-second path alone: callgrind dumps what ran before (out.1) and what
                # ran in 10 s of steady recording (out.2), the rest goes to `out` at exit.
                wait_points(state, 8, 120)
                subprocess.run(["callgrind_control", "--dump", str(proc.pid)], stdout=subprocess.DEVNULL, check=True)
                wait_points(state, 18, 120)
                subprocess.run(["callgrind_control", "--dump", str(proc.pid)], stdout=subprocess.DEVNULL, check=True)
                steady = out + ".2"
                outputs += [out + ".1"]
                wait_points(state, 20, 120)
                ctl(bin_dir, state, runtime, "lap")
                ctl(bin_dir, state, runtime, "pause")
                time.sleep(4)
                ctl(bin_dir, state, runtime, "resume")
                wait_points(state, 30, 120)
                # Left running: the second start resumes it, as after a crash or an upgrade.
                proc.send_signal(signal.SIGTERM)
            elif attempt == "catch-up":
                time.sleep(10)
                proc.send_signal(signal.SIGTERM)
            else:
                wait_points(state, 40, 120)
                ctl(bin_dir, state, runtime, "stop")
                time.sleep(3)
                ctl(bin_dir, state, runtime, "status")
                proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
            notify.close()
            log.close()
            outputs.append(out)
    finally:
        device.stop_gpsfake(fake)
    return outputs, steady


def simulated_board_run(binary, work):
    ride = os.path.join(work, "ride.csv")
    recording.make_ride(ride, 600)
    out = os.path.join(work, "callgrind.sim")
    proc = benchlib.callgrind(out, [binary, "--board", "sim", "--speed", "max", "--exit-at-end", "--ride", ride,
                                    "--state-dir", os.path.join(work, "sim-state"),
                                    "--runtime-dir", os.path.join(work, "sim-run"), "--log-level", "warning"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, err = proc.communicate(timeout=900)
    if proc.returncode != 0:
        sys.exit("simulated board run failed:\n" + err.decode(errors="replace")[-2000:])
    print("  simulated board: done", flush=True)
    return out


def web_run(binary, bin_dir, work):
    """The simulated board with the phone page on (`[web]`, off by default): a phone pairs, loads
    the page, watches the live feed, opens the rides and downloads one. Its code (the HTTP
    server, the feed) is ordered after the rest, in a block of its own: scattered among code that
    never runs, it took ~0.8 MiB of the executable's pages into the resident set at the server's
    start alone."""
    state, runtime = os.path.join(work, "web-state"), os.path.join(work, "web-run")
    config = os.path.join(work, "web.toml")
    with open(config, "w") as f:
        f.write('[sim]\nspeed = 1\n[web]\nenabled = true\naddress = "127.0.0.1"\nport = 0\ntls = true\n')
    out = os.path.join(work, "callgrind.web")
    notify = benchlib.NotifySocket(work)
    log = open(os.path.join(work, "workoutd.web.log"), "w")
    proc = benchlib.callgrind(out, [binary, "--board", "sim", "--config", config, "--state-dir", state,
                                    "--runtime-dir", runtime], fair_sched=True,
                              stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=dict(os.environ, NOTIFY_SOCKET=notify.path))
    try:
        if notify.wait_ready(180, alive=lambda: proc.poll() is None) is None:
            sys.exit(f"no READY from workoutd under valgrind (log: {log.name})")
        text = open(log.name).read()
        port = int(text.split("serving the phone page on 127.0.0.1:")[1].split()[0])
        wait_points(state, 3, 120)
        token = web.pair(bin_dir, state, runtime, port, tls=True, tries=5)

        def get(path):
            # Under callgrind the service runs some 50 times slower, on one core at a time: a
            # connection it drops (a deadline passed) is tried again, and said.
            for attempt in range(3):
                try:
                    with web.connect(port, tls=True, timeout=60) as s:
                        s.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                                   f"Cookie: workoutd_token={token}\r\nConnection: close\r\n\r\n").encode())
                        reply = b""
                        while chunk := s.recv(65536):
                            reply += chunk
                    break
                except (OSError, ssl.SSLError) as error:
                    print(f"  GET {path}: {error}; again", flush=True)
                    time.sleep(2)
            else:
                sys.exit(f"GET {path}: no answer in 3 tries (log: {log.name})")
            if not reply.startswith(b"HTTP/1.1 200"):
                sys.exit(f"GET {path}: {reply[:200]!r}")

        for path in ("/", "/app.js", "/app.css", "/icon.svg", "/api/status"):
            get(path)
        phone = web.Phone(port, token, tls=True)
        phone.start()
        time.sleep(10)
        phone.stop()
        for path in ("/api/sessions", "/api/sessions/1", "/api/sessions/1/file.gpx"):
            get(path)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        notify.close()
        log.close()
    print("  simulated board with the phone page: done", flush=True)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="directory of the release build (workoutd, workoutctl)")
    parser.add_argument("--out", default=benchlib.ORDER_FILE)
    args = parser.parse_args()
    if not shutil.which("valgrind"):
        sys.exit("valgrind is needed (apt-get install valgrind)")
    os.makedirs(os.path.join(benchlib.ROOT, ".build", "bench"), exist_ok=True)
    work = tempfile.mkdtemp(prefix="symbol-order-", dir=os.path.join(benchlib.ROOT, ".build", "bench"))
    binary = os.path.join(work, "workoutd")
    subprocess.run(["objcopy", "--strip-debug", os.path.join(args.bin, "workoutd"), binary], check=True)
    print("symbol order: workoutd under callgrind on the linux board and the simulated board", flush=True)
    outputs, steady_out = linux_board_run(binary, args.bin, work)
    steady = call_counts(steady_out)
    linux = collections.Counter(steady)
    for out in outputs:
        linux.update(call_counts(out))
    sim = call_counts(simulated_board_run(binary, work))
    phone_page = call_counts(web_run(binary, args.bin, work))
    # Valgrind's own names for code it could not name ("0x…") and the PLT are not symbols.
    keep = re.compile(r"^[A-Za-z_$.][^\s]*$")
    # What runs every recorded second first, packed (the fewest pages a second touches), then the
    # rest of the linux board's run.
    ordered = [name for name, _ in sorted(steady.items(), key=lambda item: (-item[1], item[0])) if keep.match(name)]
    seen = set(ordered)
    ordered += [name for name, _ in sorted(linux.items(), key=lambda item: (-item[1], item[0]))
                if keep.match(name) and name not in seen]
    seen = set(ordered)
    on_linux = len(ordered)
    ordered += [name for name, _ in sorted(sim.items(), key=lambda item: (-item[1], item[0]))
                if keep.match(name) and name not in seen]
    on_sim = len(ordered)
    seen = set(ordered)
    ordered += [name for name, _ in sorted(phone_page.items(), key=lambda item: (-item[1], item[0]))
                if keep.match(name) and name not in seen]
    # Whole or not at all: make takes a file newer than the sources for done.
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out + ".tmp", "w") as f:
        f.write("".join(name + "\n" for name in ordered))
    os.replace(args.out + ".tmp", args.out)
    print(f"{len(ordered)} functions ({on_linux} run on the linux board, {on_sim - on_linux} more on the "
          f"simulated board, {len(ordered) - on_sim} more with the phone page) -> {os.path.relpath(args.out, benchlib.ROOT)}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
