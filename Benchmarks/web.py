#!/usr/bin/env python3
"""What the phone page costs the board (issue 17): the service recording the bundled ride in
real time on the simulated board (a point a second, as on a ride), measured over equal phases:

  web off      [web] disabled: the reference
  no phone     [web] enabled, nobody connected (the server blocks in accept: no wake-ups)
  1 phone      one phone watching the live feed (server-sent events, one a second)
  10 phones    ten at once

The web server's phases run twice, with HTTPS (`tls = true`, the default: the board's own
certificate, TLS 1.3 through the system's OpenSSL) and with plain HTTP (`tls = false`), so the
table shows what TLS costs.

The web server's phases are taken in three rounds (none, one, ten, none, one, ten, ...) and
each figure is the median of its three: on a shared virtual disk one commit's kernel cost alone
swings by 250 µs from second to second (`git show bc8057a:BENCHMARKS.md`), so one phase each would mostly measure
the disk. Per phase: the service's CPU (µs per second, all threads, /proc/PID/task/*/schedstat), its
wake-ups per second (voluntary + involuntary context switches), its resident memory (VmRSS at
the phase's end) and the peak so far (VmHWM); the live events each phone got per second; and
the per-thread lines of the busiest threads. The phones are threads of this script (their cost
is not the board's). Python standard library only.

Usage: web.py --bin DIR [--seconds 15] [--rounds 3]
"""
import argparse
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def connect(port, tls, timeout=None, source="127.0.0.1"):
    """A connection to the page from `source` (each phone its own loopback address, as each
    phone has its own on the Wi-Fi: the server allows a few connections per address), over TLS
    (trusting any certificate: the cost is measured, not the trust) or plain."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0))
    if not tls:
        return sock
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context.wrap_socket(sock)


def start(binary, work, web, tls=False):
    state, runtime = os.path.join(work, "state"), os.path.join(work, "run")
    config = os.path.join(work, "workoutd.toml")
    with open(config, "w") as f:
        f.write("[sim]\nspeed = 1\n")
        if web:
            f.write(f'[web]\nenabled = true\naddress = "127.0.0.1"\nport = 0\ntls = {"true" if tls else "false"}\n')
    log = open(os.path.join(work, "workoutd.log"), "w")
    process = subprocess.Popen([os.path.join(binary, "workoutd"), "--state-dir", state, "--runtime-dir", runtime,
                                "--config", config], stderr=log)
    deadline = time.monotonic() + 30
    port = None
    while time.monotonic() < deadline:
        text = open(log.name).read()
        if "ready:" in text and ("session 1: prepared → running" in text):
            if web:
                port = int(text.split("serving the phone page on 127.0.0.1:")[1].split()[0])
            return process, port, state, runtime
        time.sleep(0.1)
    raise SystemExit(f"workoutd did not start recording: {open(log.name).read()[-2000:]}")


def pair(binary, state, runtime, port, tls=False, tries=1):
    """A phone paired: a code from `workoutctl pair`, then the page's /api/pair; returns the
    token. Under callgrind a server thread may not run within its request deadline (the control
    socket's is 2 s), so the whole pairing is tried up to `tries` times, each failure said."""
    scheme = "https" if tls else "http"
    failure = None
    for attempt in range(1, tries + 1):
        if attempt > 1:
            print(f"  pairing (try {attempt - 1} of {tries}): {failure}; again", flush=True)
            time.sleep(2)
        run = subprocess.run([os.path.join(binary, "workoutctl"), "pair", "--json", "--state-dir", state,
                              "--runtime-dir", runtime], capture_output=True, text=True)
        if run.returncode != 0:
            failure = f"workoutctl pair: {run.stderr.strip()[-500:]}"
            continue
        body = json.dumps({"code": json.loads(run.stdout)["code"]})
        reply = b""
        try:
            with connect(port, tls, timeout=60) as s:
                s.sendall((f"POST /api/pair HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                           f"Origin: {scheme}://127.0.0.1:{port}\r\n"
                           f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                           "Connection: close\r\n\r\n" + body).encode())
                while chunk := s.recv(4096):
                    reply += chunk
        except (OSError, ssl.SSLError) as error:
            failure = f"POST /api/pair: {error}"
            continue
        head = reply.decode(errors="replace")
        if "workoutd_token=" not in head:
            failure = f"POST /api/pair: {head[:200]!r}"
            continue
        return head.split("workoutd_token=")[1].split(";")[0]
    raise SystemExit(f"pairing failed {tries} times; the last: {failure}")


class Phone(threading.Thread):
    """A phone on the live feed: counts the status events it gets."""

    def __init__(self, port, token, tls=False, number=0):
        super().__init__(daemon=True)
        self.port, self.token, self.events, self.stopping = port, token, 0, False
        self.sock = connect(port, tls, source=f"127.0.0.{2 + number}")
        self.sock.sendall((f"GET /api/live HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                           f"Cookie: workoutd_token={token}\r\n\r\n").encode())

    def run(self):
        buffered = b""
        while not self.stopping:
            try:
                chunk = self.sock.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            buffered += chunk
            while b"\n\n" in buffered:
                event, buffered = buffered.split(b"\n\n", 1)
                if b"event: status" in event:
                    self.events += 1

    def stop(self):
        self.stopping = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def phase(pid, seconds, phones=()):
    before = benchlib.proc_counters(pid)
    events_before = [p.events for p in phones]
    time.sleep(seconds)
    after = benchlib.proc_counters(pid)
    now, peak = benchlib.rss(pid)
    d = benchlib.delta(after, before)
    events = [(p.events - e) / seconds for p, e in zip(phones, events_before)]
    return {"cpu_us": d["cpu"] * 1e6 / seconds, "wakeups": d["switches"] / seconds, "rss": now, "peak": peak,
            "events": (min(events), max(events)) if events else None, "threads": benchlib.thread_lines(d, seconds)[:6]}


def served(args, work, tls):
    """The web server's phases, in rounds, with HTTPS or plain HTTP: [(name, median figures)]."""
    kind = "https" if tls else "http"
    os.makedirs(f"{work}/{kind}")
    process, port, state, runtime = start(args.bin, f"{work}/{kind}", True, tls)
    phones = []
    rounds = {f"{kind} none": [], f"{kind} 1": [], f"{kind} 10": []}
    names = list(rounds)
    try:
        time.sleep(2)
        token = pair(args.bin, state, runtime, port, tls)
        for _ in range(args.rounds):
            rounds[names[0]].append(phase(process.pid, args.seconds))
            phones = [Phone(port, token, tls)]
            phones[0].start()
            time.sleep(2)
            rounds[names[1]].append(phase(process.pid, args.seconds, phones))
            for number in range(1, 10):
                phone = Phone(port, token, tls, number)
                phone.start()
                phones.append(phone)
            time.sleep(2)
            rounds[names[2]].append(phase(process.pid, args.seconds, phones))
            for phone in phones:
                phone.stop()
            phones = []
            time.sleep(2)
    finally:
        for phone in phones:
            phone.stop()
        process.terminate()
        process.wait(timeout=20)
    results = []
    for name, runs in rounds.items():
        middle = sorted(runs, key=lambda r: r["cpu_us"])[len(runs) // 2]
        middle = dict(middle, wakeups=sorted(r["wakeups"] for r in runs)[len(runs) // 2],
                      rss=max(r["rss"] for r in runs), peak=max(r["peak"] for r in runs))
        results.append((name, middle))
    return results


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="wbench-") as work:
        os.makedirs(work + "/off")
        process, _, _, _ = start(args.bin, work + "/off", False)
        try:
            time.sleep(2)
            results.append(("web off", phase(process.pid, args.seconds)))
        finally:
            process.terminate()
            process.wait(timeout=20)
        for tls in (True, False):
            results += served(args, work, tls)
    print(f"The phone page's cost, recording the bundled ride in real time, {args.seconds:.0f} s a phase"
          f" (the web server's: medians of {args.rounds}):")
    print(f"  {'phase':<10} {'CPU µs/s':>9} {'wake-ups/s':>11} {'RSS MiB':>8} {'peak MiB':>9} {'events/s a phone':>17}")
    for name, r in results:
        events = "" if r["events"] is None else f"{r['events'][0]:.2f}-{r['events'][1]:.2f}"
        print(f"  {name:<10} {r['cpu_us']:9.0f} {r['wakeups']:11.2f} {r['rss']:8.1f} {r['peak']:9.1f} {events:>17}")
    figures = dict(results)
    print("  busiest threads with ten phones over HTTPS (the median phase):")
    for line in figures["https 10"]["threads"]:
        print("  " + line)
    base = figures["web off"]["cpu_us"]
    for kind in ("https", "http"):
        one, ten, idle = (figures[f"{kind} {n}"] for n in ("1", "10", "none"))
        print(f"  {kind}: a phone costs {one['cpu_us'] - base:.0f} µs/s of CPU ({(ten['cpu_us'] - base) / 10:.0f} µs/s"
              f" each of ten); the idle server {idle['cpu_us'] - base:+.0f} µs/s,"
              f" {idle['wakeups'] - figures['web off']['wakeups']:+.2f} wake-ups/s; peak RSS with ten {ten['peak']:.1f} MiB")
    ok = all(r[1]["events"] is None or r[1]["events"][0] >= 0.8 for r in results)
    if not ok:
        print("FAIL: a phone got fewer than 0.8 live events a second")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
