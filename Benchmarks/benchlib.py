"""Shared by the `make bench` scripts: the machine, the figures table (this build beside the
baseline, with targets), the stored baseline figures, a NOTIFY_SOCKET listener and /proc counters.

Python standard library only.
"""
import json
import os
import platform
import socket
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
# Figures of the baseline binary (commit f426fad), measured by these scripts; `make bench`
# prints them beside this build's when no baseline binary is given to measure live.
BASELINE_JSON = os.path.join(HERE, "baseline-f426fad.json")
# The order the release build links its functions in (the Makefile's ORDER_FILE, which make
# passes on when it is given).
ORDER_FILE = os.environ.get("ORDER_FILE") or os.path.join(ROOT, ".build", "workoutd.order")


# The TOML sections that switch off every device but GPS (the benches' linux board).
OTHER_DEVICES_OFF = """[buttons]
enabled = false
[led]
enabled = false
[buzzer]
enabled = false
[barometer]
enabled = false
"""


def machine():
    """nproc, CPU model, and the file system and disk under the repository (where benches write)."""
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    disk = "?"
    try:
        source, fstype = subprocess.run(["findmnt", "-n", "-o", "SOURCE,FSTYPE", "-T", ROOT],
                                        capture_output=True, text=True).stdout.split()[:2]
        name = os.path.basename(source)
        base = name.rstrip("0123456789") if not name.startswith("nvme") else name.split("p")[0]
        rotational = open(f"/sys/block/{base}/queue/rotational").read().strip() if os.path.exists(
            f"/sys/block/{base}/queue/rotational") else "?"
        disk = f"{fstype} on {source} (rotational={rotational})"
    except (OSError, ValueError):
        pass
    return {"nproc": os.cpu_count(), "cpu": cpu, "disk": disk, "kernel": platform.release()}


def code_layout(binary):
    """Whether `binary` was linked in ORDER_FILE's order (the Makefile's ORDER_FLAGS): its first
    function in .text is the order file's first that it has."""
    order = ORDER_FILE
    try:
        out = subprocess.run(["nm", "-n", "--defined-only", binary], capture_output=True, text=True).stdout
    except OSError:
        return "unknown (no nm)"
    text = [line.split()[2] for line in out.splitlines() if len(line.split()) == 3 and line.split()[1] in "tT"]
    if not text or not os.path.exists(order):
        return "unknown"
    names = set(text)
    with open(order) as f:
        ordered = [name.strip() for name in f if name.strip()]
    first = next((name for name in ordered if name in names), None)
    if first != text[0]:
        return "not ordered (default layout)"
    # A Swift function renamed since the file was made falls outside the ordered block, and its
    # cold neighbours come into the resident set with it: say how stale the file is for this
    # build. (The file also names the C libraries' functions that ran, which the executable
    # does not have: only Swift names, `$s…`, are counted.)
    swift = [name for name in ordered if name.startswith("$s")]
    missing = sum(1 for name in swift if name not in names)
    if missing == 0:
        return f"ordered by {os.path.relpath(order, ROOT)}"
    return (f"ordered by {os.path.relpath(order, ROOT)}, but {missing} of its {len(swift)} Swift functions are"
            " not in this build: `make symbol-order` makes it anew")


def load_figures(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def save_figures(path, section, figures, label):
    """Merges `figures` into `path` under `section` (one file holds every script's figures)."""
    data = load_figures(path)
    data["binary"] = label
    data["machine"] = machine()
    data[section] = figures
    data.setdefault("measured", {})[section] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with open(path, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")


class Row:
    """One figure: its key in the figures dict, a label, a format, and optionally a target:
    (text, predicate(value, figures) -> bool)."""

    def __init__(self, key, label, fmt="%.1f", target=None):
        self.key, self.label, self.fmt, self.target = key, label, fmt, target


def table(rows, new, base, base_label):
    """Prints rows as: figure | baseline | this build | target | verdict (this build; baseline)."""
    width = max(len(r.label) for r in rows) + 2
    print("%-*s %14s %14s   %s" % (width, "", base_label[:14], "this build", "target"))

    def cell(row, figures):
        value = figures.get(row.key) if figures else None
        return "-" if value is None else row.fmt % value

    for row in rows:
        line = "%-*s %14s %14s" % (width, row.label, cell(row, base), cell(row, new))
        if row.target:
            text, ok = row.target
            verdicts = []
            for figures in (new, base):
                value = figures.get(row.key) if figures else None
                verdicts.append("-" if value is None else ("PASS" if ok(value, figures) else "FAIL"))
            line += "   %-14s %s (baseline %s)" % (text, verdicts[0], verdicts[1])
        print(line)


def baseline_source(args, section):
    """The baseline figures for `section`: measured live (args.baseline_bin) by the caller, or the
    stored ones. Returns (figures or None, label)."""
    stored = load_figures(args.baseline_json).get(section)
    if stored:
        return stored, "f426fad stored"
    return None, "baseline"


def add_common_arguments(parser):
    parser.add_argument("--bin", required=True, help="directory holding this build's workoutd")
    parser.add_argument("--baseline-bin", help="directory holding the baseline workoutd, measured live too")
    parser.add_argument("--baseline-json", default=BASELINE_JSON,
                        help="stored baseline figures, shown when no --baseline-bin is given")
    parser.add_argument("--save-json", help="write this build's figures (merged by section) to this file")
    parser.add_argument("--save-baseline-json", help="write the live baseline's figures to this file")


class NotifySocket:
    """An AF_UNIX datagram socket bound as systemd's NOTIFY_SOCKET would be."""

    def __init__(self, directory):
        self.path = os.path.join(directory, "notify.sock")
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)

    def wait_ready(self, timeout, alive=lambda: True):
        """Waits for a datagram with READY=1; returns time.monotonic() at its arrival, or None."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and alive():
            self.sock.settimeout(min(0.2, max(0.001, deadline - time.monotonic())))
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            if b"READY=1" in data.split(b"\n"):
                return time.monotonic()
        return None

    def close(self):
        self.sock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass


def peak_memory(pid):
    """(peak RSS, anonymous RSS now) in MiB, from /proc/PID/status (VmHWM, RssAnon).

    Not rusage's ru_maxrss: for a process this script forked, that counts the script's own RSS
    too (at exec the kernel keeps the larger of the old address space's peak, a copy of this
    Python with its ride in memory, and the new one's), which made the peak RSS of a short
    start read 88 MiB and that of a long ride grow with the ride made for it."""
    values = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "RssAnon"):
                values[key] = int(value.split()[0]) / 1024
    return values.get("VmHWM"), values.get("RssAnon")


def rss(pid):
    """(RSS now, peak RSS) in MiB, from /proc/PID/status (VmRSS, VmHWM)."""
    values = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(value.split()[0]) / 1024
    return values["VmRSS"], values["VmHWM"]


def proc_counters(pid):
    """CPU seconds of all live threads (/proc/PID/task/*/schedstat: nanoseconds on a CPU; the
    clock-tick utime + stime of /proc/PID/stat is the fallback, too coarse for gpxlogger's
    milliseconds), context switches (voluntary + involuntary, summed over
    /proc/PID/task/*/status: each is a wake-up), and bytes written to storage
    (/proc/PID/io write_bytes). Threads that ended are lost from both sums (workoutd's threads
    live as long as it does)."""
    cpu_ns, switches, have_schedstat = 0, 0, True
    threads = {}  # "name/tid": [cpu ns, switches], to see which thread wakes
    for task in os.listdir(f"/proc/{pid}/task"):
        entry = [0, 0]
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as f:
                name = f.read().strip() + "/" + task
            threads[name] = entry
        except OSError:
            pass
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                entry[0] = int(f.read().split()[0])
                cpu_ns += entry[0]
        except OSError:
            have_schedstat = False
        try:
            with open(f"/proc/{pid}/task/{task}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        entry[1] += int(line.split()[1])
                        switches += int(line.split()[1])
        except OSError:
            pass
    cpu = cpu_ns / 1e9
    if not have_schedstat:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    written = 0
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("write_bytes:"):
                written = int(line.split()[1])
    return {"cpu": cpu, "switches": switches, "written": written, "threads": threads}


def delta(after, before):
    out = {key: after[key] - before[key] for key in after if key != "threads"}
    if "threads" in after:
        out["threads"] = {name: [a - b for a, b in zip(value, before.get("threads", {}).get(name, [0, 0]))]
                          for name, value in after["threads"].items()}
    return out


def thread_lines(counters, seconds):
    """Per thread: CPU µs/s and wake-ups/s, the busiest first."""
    rows = sorted(counters.get("threads", {}).items(), key=lambda item: -item[1][1])
    return [f"    {name:<22} {cpu / 1e3 / seconds:8.0f} µs/s {switches / seconds:6.2f} wake-ups/s"
            for name, (cpu, switches) in rows if cpu or switches]


def callgrind_prefix(out, fair_sched=False):
    """The command line that runs what follows it under valgrind's callgrind, its counts to `out`
    (names uncompressed and not demangled, as the scripts that read them expect); dumped apart
    with `callgrind_control`. Valgrind runs one thread at a time; `fair_sched` hands the turn
    round in order (--fair-sched=yes), so that a server's client thread is not starved past
    its request's deadline by a busy one."""
    return ["valgrind", "--tool=callgrind", "--demangle=no", "--compress-strings=no", "--compress-pos=no",
            *(["--fair-sched=yes"] if fair_sched else []), "--callgrind-out-file=" + out]


def callgrind(out, command, fair_sched=False, **popen):
    """`command` started under callgrind (callgrind_prefix)."""
    return subprocess.Popen(callgrind_prefix(out, fair_sched) + command, **popen)


def end(proc, timeout):
    """Asks `proc` to stop (SIGTERM), and kills it if it has not within `timeout` seconds."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def gpsfake_add_receiver(fake, timeout=10):
    """Adds gpsfake's pty to its gpsd (`fake` a Popen of gpsfake) in case gpsfake's own add was
    lost: "added" when it was (the pty is added now), "already there" when gpsd had it, None when
    the pty or gpsd's control socket was not found or reached.

    gpsfake adds its pty as soon as the control socket's file exists, and drops a refused
    connect without a word; gpsd binds that file a moment before it listens on it, and an add
    in that moment leaves gpsd with no receiver for the whole run (see GPSFake.addReceiver in
    Tests/Support/GPSFake.swift). Adding it again is harmless ("already active")."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and fake.poll() is None:
        pty, control = _gpsfake_receiver(fake.pid), _gpsd_control_socket(fake.pid)
        if pty and control:
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                    client.settimeout(5)
                    client.connect(control)
                    client.sendall(b"+" + pty.encode() + b"\r\n\0")  # as gpsfake and gpsdctl send it
                    # "OK" or "ERROR" up to gpsd 3.22; {"class":"ACK"} or {"class":"ERROR"} since 3.23.
                    answer = client.recv(64).decode(errors="replace")
                    if "ERROR" in answer:
                        return "already there"
                    return "added" if "OK" in answer or "ACK" in answer else None
            except OSError:
                pass  # refused: gpsd is between bind() and listen(); try again
        time.sleep(0.02)
    return None


def _gpsfake_receiver(pid):
    """The pty gpsfake feeds (its slave side): of the two it holds (a probe it opens first, then
    the receiver's), the one whose slave it made rw-rw-rw- for gpsd (gps/fake.py: FakePTY)."""
    try:
        fds = sorted((int(fd) for fd in os.listdir(f"/proc/{pid}/fd")), reverse=True)
    except OSError:
        return None
    for fd in fds:
        try:
            path = os.readlink(f"/proc/{pid}/fd/{fd}")
            if path.startswith("/dev/pts/") and os.stat(path).st_mode & 0o777 == 0o666:
                return path
        except OSError:
            continue
    return None


def gpsfake_children(pid):
    """The processes gpsfake `pid` started (its gpsd), as pids."""
    try:
        return [int(child) for child in open(f"/proc/{pid}/task/{pid}/children").read().split()]
    except OSError:
        return []


def _gpsd_control_socket(pid):
    """The control socket (`-F`) of the gpsd that gpsfake `pid` started."""
    for child in gpsfake_children(pid):
        try:
            if not open(f"/proc/{child}/comm").read().startswith("gpsd"):
                continue
            arguments = open(f"/proc/{child}/cmdline").read().split("\0")
        except OSError:
            continue
        if "-F" in arguments and arguments.index("-F") + 1 < len(arguments):
            return arguments[arguments.index("-F") + 1]
    return None
