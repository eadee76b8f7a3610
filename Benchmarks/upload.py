#!/usr/bin/env python3
"""make bench: what the uploader costs the service (issue 60): its idle cost, one upload's, and
what loading libcurl leaves in the service's memory.

The bundled ride is recorded first (`--board sim --speed max --exit-at-end`). Then the release
workoutd runs on that database twice, on the simulated board with a ride of no press (it waits,
recording nothing), so that only the uploader moves:

  no upload     no platform named: the reference
  idle          [intervals_icu] named, the fake intervals.icu of the tests behind it (HTTPS, a
                CA of this run's own), the ride already sent: the uploader asleep in poll
  one upload    `workoutctl upload 1 --to intervals.icu --again`: the ride's FIT file made and
                sent; then 10 s idle again

Per phase: the service's resident memory (VmRSS at its end, VmHWM) and, for the uploader's
thread, its CPU and wake-ups. The code the uploads add to the binary: the sizes of the release
workoutd's symbols of WorkoutUpload, UploadHTTP and CCurl (nm). Python standard library only.

Usage: upload.py --bin DIR [--seconds 10]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

BUNDLED = os.path.join(benchlib.ROOT, "board", "sim", "rides", "garmin-edge-500-2011-09-25.csv")
PLATFORMS = os.path.join(benchlib.ROOT, "Tests", "Platforms")


def certificates(work):
    """A CA and a certificate for 127.0.0.1 signed by it, as Tests/Support/TestCertificates does."""
    tls = os.path.join(work, "tls")
    os.makedirs(tls)

    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, cwd=tls, capture_output=True)

    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
            "-subj", "/CN=bench CA", "-keyout", "ca.key", "-out", "ca.pem")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", "server.key", "-out", "server.csr")
    with open(os.path.join(tls, "ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days",
            "2", "-extfile", "ext", "-out", "server.pem")
    return tls


def fake_intervals(work, tls):
    state = os.path.join(work, "intervals")
    os.makedirs(state)
    process = subprocess.Popen(
        [sys.executable, os.path.join(PLATFORMS, "fake_intervals_icu.py"), "--port", "0", "--cert",
         os.path.join(tls, "server.pem"), "--key", os.path.join(tls, "server.key"), "--state", state,
         "--athlete", "i42", "--api-key", "k3y"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.exists(os.path.join(state, "port")):
            with open(os.path.join(state, "port")) as f:
                text = f.read().strip()
            if text:
                return process, int(text), state
        time.sleep(0.05)
    process.kill()
    sys.exit("upload.py: the fake intervals.icu did not start")


def received(state):
    try:
        with open(os.path.join(state, "received.jsonl")) as f:
            return f.read().count("\n")
    except FileNotFoundError:
        return 0


def start(args, work, name, upload):
    config = os.path.join(work, name + ".toml")
    idle_ride = os.path.join(work, "idle.csv")
    with open(config, "w") as f:
        f.write(f'[sim]\nride = "{idle_ride}"\n[export]\nenabled = false\n')
        if upload:
            f.write(upload)
    log = open(os.path.join(work, name + ".log"), "w")
    process = subprocess.Popen(
        [os.path.join(args.bin, "workoutd"), "--state-dir", os.path.join(work, "state"), "--runtime-dir",
         os.path.join(work, "run"), "--config", config], stderr=log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if "ready:" in open(log.name).read():
            return process
        time.sleep(0.05)
    process.kill()
    sys.exit(f"upload.py: workoutd ({name}) was not ready: see {log.name}")


def uploader(counters):
    for name, value in counters["threads"].items():
        if name.startswith("uploader/"):
            return value
    return [0, 0]


def code_size(binary):
    """Bytes of the release binary's text in symbols of the upload modules (Swift's mangled
    module names, and CCurl's C functions)."""
    out = subprocess.run(["nm", "--size-sort", "-S", binary], capture_output=True, text=True).stdout
    sizes = {"WorkoutUpload": 0, "UploadHTTP": 0, "CCurl": 0}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 4 or fields[2] not in "tTrR":
            continue
        size, symbol = int(fields[1], 16), fields[3]
        if "13WorkoutUpload" in symbol:
            sizes["WorkoutUpload"] += size
        elif "10UploadHTTP" in symbol:
            sizes["UploadHTTP"] += size
        elif symbol.startswith("ccurl_") or symbol in ("load", "on_header", "on_body", "on_progress"):
            sizes["CCurl"] += size
    return sizes, os.path.getsize(binary)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True)
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="workoutd-upload-bench-")
    fake = None
    try:
        with open(os.path.join(work, "idle.csv"), "w") as f:
            f.write("# start: 2026-12-01T08:00:00Z\nt,kind,lat,lon,alt,speed,hr,cadence,temperature,power\n"
                    "0,rec,,,,,,,,\n")
        subprocess.run([os.path.join(args.bin, "workoutd"), "--board", "sim", "--speed", "max", "--exit-at-end",
                        "--ride", BUNDLED, "--state-dir", os.path.join(work, "state"), "--runtime-dir",
                        os.path.join(work, "run")], check=True, stderr=subprocess.DEVNULL)
        tls = certificates(work)
        fake, port, fake_state = fake_intervals(work, tls)
        secrets = os.path.join(work, "secrets")
        with open(secrets, "w") as f:
            f.write('intervals_icu_api_key = "k3y"\n')
        os.chmod(secrets, 0o600)
        upload = (f'[upload]\nsecrets_file = "{secrets}"\nca_file = "{os.path.join(tls, "ca.pem")}"\n'
                  f'[intervals_icu]\nathlete_id = "i42"\nbase_url = "https://127.0.0.1:{port}"\n')

        rows = []
        service = start(args, work, "reference", None)
        time.sleep(args.seconds)
        rows.append(("no upload", *benchlib.rss(service.pid), None, None))
        benchlib.end(service, 10)

        service = start(args, work, "upload", upload)
        time.sleep(1)
        before = benchlib.proc_counters(service.pid)
        time.sleep(args.seconds)
        after = benchlib.proc_counters(service.pid)
        idle = benchlib.delta(after, before)
        rows.append(("idle", *benchlib.rss(service.pid), uploader(idle)[0] / 1e3 / args.seconds,
                     uploader(idle)[1] / args.seconds))

        before = benchlib.proc_counters(service.pid)
        subprocess.run([os.path.join(args.bin, "workoutctl"), "upload", "1", "--to", "intervals.icu", "--again",
                        "--runtime-dir", os.path.join(work, "run")], check=True, capture_output=True)
        deadline = time.monotonic() + 60
        while received(fake_state) == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        if received(fake_state) == 0:
            sys.exit("upload.py: the ride was not sent within 60 s")
        time.sleep(args.seconds)
        after = benchlib.proc_counters(service.pid)
        sent = uploader(benchlib.delta(after, before))
        rows.append(("one upload", *benchlib.rss(service.pid), sent[0] / 1e3, sent[1]))
        benchlib.end(service, 10)

        print(f"Uploads (Benchmarks/upload.py): the release workoutd idle on the simulated board, {args.seconds:.0f} s "
              "a phase; the uploader's thread (CPU µs/s and wake-ups/s idle; for the upload, its whole "
              "CPU ms and wake-ups: the bundled 3.5-hour ride's FIT file made and sent over HTTPS).")
        print(f"{'phase':12}{'RSS MiB':>10}{'peak MiB':>10}{'uploader':>22}")
        for name, now, peak, cpu, wakes in rows:
            thread = "" if cpu is None else (f"{cpu:8.1f} µs/s {wakes:5.2f}/s" if name == "idle"
                                             else f"{cpu / 1e3:8.1f} ms {wakes:6.0f} wake-ups")
            print(f"{name:12}{now:10.1f}{peak:10.1f}{thread:>22}")
        sizes, total = code_size(os.path.join(args.bin, "workoutd"))
        print("code in the release workoutd (text of their symbols): "
              + ", ".join(f"{name} {size / 1024:.0f} KiB" for name, size in sizes.items())
              + f"; the binary {total / 1024 / 1024:.1f} MiB")
    finally:
        if fake:
            fake.terminate()
            fake.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
