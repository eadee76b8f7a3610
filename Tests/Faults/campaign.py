#!/usr/bin/env python3
"""make faults: a fault campaign against the real workoutd and workoutctl.

Drives the built binaries on the simulated board, each case in its own directory under /tmp,
and breaks things the way the field does: kill -9 at random moments, a resume snapshot that
cannot be read, a database owned by someone else, a database from a newer release, a state
directory the service may not write, a lost or mangled WAL, a full disk, a corrupt database.

Every case prints one line, `PASS name: detail` or `FAIL name: detail` (a failure adds the last
log lines, indented), and the campaign ends with `N passed, M failed`; the exit status is 0 only
if nothing failed. Every wait has a timeout, and every process a case starts is killed in its
`finally`. Cases that need root (another user, a tmpfs) pass as `skipped` when not root.

Usage: Tests/Faults/campaign.py --bin DIR_WITH_WORKOUTD [--seed N] [--kills 100] [--only SUBSTR]
       [--damage-sample N (0: every damaged column)]
"""
import argparse
import errno
import hashlib
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
RIDE = os.path.join(REPO, "board", "sim", "rides", "garmin-edge-500-2011-09-25.csv")
SPEED = "20"
BUDGET = 8 * 60 - 30  # seconds: cases not started by then fail, so the campaign stays under 8 min
EXIT_UNUSABLE_DATABASE = 3


class Fail(Exception):
    """A case's expectation did not hold; the message is its one-line detail."""

    def __init__(self, detail, log=None):
        super().__init__(detail)
        self.detail = detail
        self.log = log


# --------------------------------------------------------------------------------------------
# Processes


LIVE = set()  # every workoutd still running, so that nothing outlives the campaign


class Service:
    """One workoutd process on the simulated board, its stderr in a file of the case directory."""

    count = 0

    def __init__(self, env, d, speed=SPEED, extra=(), user=None, ride=None):
        Service.count += 1
        self.d = d
        self.log_path = os.path.join(d, "workoutd-%d.log" % Service.count)
        args = [os.path.join(env.bin, "workoutd"), "--board", "sim", "--speed", speed,
                "--ride", ride or env.ride, "--state-dir", os.path.join(d, "state"),
                "--runtime-dir", os.path.join(d, "run")] + list(extra)
        if user:
            args = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] + args
        environment = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "JOURNAL_STREAM")}
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                                         env=environment, start_new_session=True)
        LIVE.add(self)

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def tail(self, n=10):
        return self.log().splitlines()[-n:]

    def running(self):
        return self.proc.poll() is None

    def wait_ready(self, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "ready:" in self.log():
                return
            if not self.running():
                raise Fail("workoutd exited with %d before it was ready" % self.proc.returncode, self.tail())
            time.sleep(0.05)
        raise Fail("workoutd not ready after %g s" % timeout, self.tail())

    def wait_exit(self, timeout):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill9(self):
        if self.running():
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        LIVE.discard(self)

    def terminate(self, timeout=15):
        """SIGTERM, then SIGKILL if it has not exited in `timeout`; returns the exit status."""
        if self.running():
            os.kill(self.proc.pid, signal.SIGTERM)
        code = self.wait_exit(timeout)
        if code is None:
            self.kill9()
            raise Fail("workoutd did not exit within %g s of SIGTERM" % timeout, self.tail())
        LIVE.discard(self)
        return code

    def cleanup(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        LIVE.discard(self)


def ctl(env, d, *args, timeout=10):
    """Runs workoutctl against the case's service; returns (exit status, output)."""
    cmd = [os.path.join(env.bin, "workoutctl")] + list(args) + [
        "--state-dir", os.path.join(d, "state"), "--runtime-dir", os.path.join(d, "run")]
    try:
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "workoutctl %s timed out after %g s" % (" ".join(args), timeout)
    return done.returncode, (done.stdout + done.stderr).strip()


def status(env, d):
    """The service's `workoutctl status --json`, or None if it does not answer."""
    code, out = ctl(env, d, "status", "--json")
    if code != 0:
        return None
    try:
        return json.loads(out)
    except ValueError:
        return None


def button(env, d, name):
    code, out = ctl(env, d, name)
    if code != 0:
        raise Fail("workoutctl %s failed (%s): %s" % (name, code, out))


def wait_until(what, timeout, condition, service=None, interval=0.1):
    """Polls `condition` until it returns something true (which is returned) or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if service is not None and not service.running():
            raise Fail("workoutd exited with %s while waiting for %s" % (service.proc.returncode, what), service.tail())
        if time.monotonic() >= deadline:
            raise Fail("timed out after %g s waiting for %s" % (timeout, what), service.tail() if service else None)
        time.sleep(interval)


def wait_points(env, d, service, more_than, timeout=30):
    """Waits until the status reports more than `more_than` points; returns that status."""
    def check():
        s = status(env, d)
        return s if s and s.get("sessionId") is not None and s.get("points", 0) > more_than else None
    return wait_until("more than %d points" % more_than, timeout, check, service)


# --------------------------------------------------------------------------------------------
# The database, read from outside


def connect(d, readonly=True):
    path = os.path.join(d, "state", "workoutd.db")
    if readonly:
        return sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=5)
    return sqlite3.connect(path, timeout=5)


def db_query(d, sql, args=()):
    db = connect(d)
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


def check_integrity(d):
    result = db_query(d, "PRAGMA integrity_check")
    if result != [("ok",)]:
        raise Fail("integrity_check: %s" % "; ".join(str(r[0]) for r in result[:3]))


def point_seqs(d, session_id):
    """(count, max seq, whether the seqs are exactly 0..count-1)."""
    count, low, high = db_query(d, "SELECT count(*), min(seq), max(seq) FROM point WHERE session_id = ?",
                                (session_id,))[0]
    contiguous = count == 0 or (low == 0 and high == count - 1)
    return count, high, contiguous


def last_point(d, session_id):
    rows = db_query(d, "SELECT seq, distance, timer FROM point WHERE session_id = ? ORDER BY seq DESC LIMIT 1",
                    (session_id,))
    return rows[0] if rows else None


def row_counts(d):
    db = connect(d)
    try:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: db.execute('SELECT count(*) FROM "%s"' % t).fetchone()[0] for t in sorted(tables)}
    finally:
        db.close()


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def state_files(d):
    return sorted(os.listdir(os.path.join(d, "state")))


# --------------------------------------------------------------------------------------------
# Starting points


def mid_ride(env, d, points=40):
    """A state directory left by a kill -9 mid-ride (running): returns the last status."""
    service = Service(env, d)
    try:
        service.wait_ready()
        last = wait_points(env, d, service, points)
        if last.get("state") != "running":
            raise Fail("mid-ride state is %s, not running" % last.get("state"), service.tail())
        last = status(env, d) or last
        service.kill9()
        return last
    finally:
        service.cleanup()


def stopped_cleanly(env, d, points=20):
    """A state directory whose service stopped on SIGTERM, its WAL checkpointed away."""
    service = Service(env, d)
    try:
        service.wait_ready()
        wait_points(env, d, service, points)
        code = service.terminate()
        if code != 0:
            raise Fail("workoutd exited %d on SIGTERM" % code, service.tail())
    finally:
        service.cleanup()
    db = connect(d, readonly=False)
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    for suffix in ("-wal", "-shm"):
        path = os.path.join(d, "state", "workoutd.db" + suffix)
        if os.path.exists(path) and os.path.getsize(path) == 0:
            os.remove(path)


def error_lines(text):
    return [line for line in text.splitlines() if " error" in line or "error:" in line]


def expect_refusal(service, names, words, timeout=10):
    """The service must exit 3 within `timeout`, never say ready, and name `names` with `words`
    (and `fix:`) in one error line. Returns that line."""
    code = service.wait_exit(timeout)
    log = service.log()
    if code is None:
        ready = "ready:" in log
        service.kill9()
        raise Fail("still running after %g s (%s)" % (timeout, "said ready" if ready else "never said ready"),
                   service.tail())
    if code != EXIT_UNUSABLE_DATABASE:
        raise Fail("exit status %d, expected %d" % (code, EXIT_UNUSABLE_DATABASE), service.tail())
    if "ready:" in log:
        raise Fail("said ready before exiting", service.tail())
    wanted = list(names) + list(words) + ["fix:"]
    for line in log.splitlines():
        if all(w in line for w in wanted):
            return line
    raise Fail("no log line with %s" % ", ".join(repr(w) for w in wanted), service.tail())


def ready_keeping(service, d, digest, what):
    """Waits until ready, and for the moved-aside files, one of which must have `digest`."""
    service.wait_ready()
    _, kept = moved_aside(service, d)
    state = os.path.join(d, "state")
    if not any(sha256(os.path.join(state, n)) == digest for n in kept):
        raise Fail("no moved-aside file has %s bytes: %s" % (what, ", ".join(kept)), service.tail())
    return kept


def moved_aside(service, d):
    """The `moved aside` log line and the workoutd.db.corrupt-* files it names (which exist)."""
    line = next((l for l in service.log().splitlines() if re.search(r"moved (it )?aside", l)), None)
    if line is None:
        raise Fail("no 'moved aside' log line", service.tail())
    kept = [n for n in state_files(d) if n.startswith("workoutd.db.corrupt-")]
    if not kept:
        raise Fail("no workoutd.db.corrupt-* file in the state directory: %s" % state_files(d), service.tail())
    unnamed = [n for n in kept if n not in line]
    if unnamed:
        raise Fail("the moved-aside line does not name %s: %s" % (", ".join(unnamed), line.strip()))
    return line, kept


# --------------------------------------------------------------------------------------------
# Cases


def case_kill9(env, report):
    """SIGKILL at random moments in one ride, about 30 % of them while paused by the user; after
    each kill the database must hold every point the last status reported, and the restarted
    service must resume the same session in the same state."""
    rng = random.Random(env.seed)
    d = env.case_dir("kill9")
    service = None
    total_lost, worst, pauses, kills, started = 0, 0, 0, 0, time.monotonic()
    previous = 0
    resume = False
    try:
        for i in range(1, env.kills + 1):
            if env.out_of_time():
                report("kill9-%03d" % i, False, "campaign time budget exhausted; %d kills not run" % (env.kills - i + 1))
                break
            label = "kill9-%03d" % i
            try:
                if service is None or not service.running():
                    service = Service(env, d)
                    service.wait_ready()
                if resume:
                    button(env, d, "resume")
                    resume = False
                wait_points(env, d, service, previous)
                time.sleep(rng.uniform(0.1, 1.5))
                pause = rng.random() < 0.3
                if pause:
                    now = status(env, d)
                    if now is None or now.get("state") != "running":
                        pause = False  # paused by the system (auto-pause): a button would be refused
                    else:
                        code, out = ctl(env, d, "pause")
                        if code == 0:
                            pauses += 1
                        elif "already paused" in out:
                            pause = False  # auto-pause came between the status and the press
                        else:
                            raise Fail("workoutctl pause failed (%s): %s" % (code, out))
                last = status(env, d)
                if last is None:
                    raise Fail("no status before the kill", service.tail())
                service.kill9()
                kills += 1
                state, session_id = last.get("state"), last.get("sessionId")
                label = "kill9-%s-%03d" % (state, i)
                user_paused = state == "paused" and not last.get("pausedBySystem")
                reported = last.get("points", 0) - last.get("storage", {}).get("pendingWrites", 0)
                held = db_query(d, "SELECT count(*) FROM point WHERE session_id = ? AND seq < ?",
                                (session_id, reported))[0][0]
                lost = reported - held
                total_lost += lost
                worst = max(worst, lost)
                detail = "session %s, status said %d points, lost %d" % (session_id, reported, lost)
                if lost > 0:
                    raise Fail(detail)
                if state not in ("running", "paused"):
                    raise Fail("%s; session %s before the kill" % (detail, state))
                # Restart: the same session, in the same state, a sound database.
                service = Service(env, d)
                service.wait_ready()
                s = wait_until("status after restart", 10, lambda: status(env, d), service)
                if s.get("sessionId") != session_id:
                    raise Fail("%s; resumed session %s" % (detail, s.get("sessionId")), service.tail())
                now_user_paused = s.get("state") == "paused" and not s.get("pausedBySystem")
                if s.get("state") not in ("running", "paused") or now_user_paused != user_paused:
                    raise Fail("%s; resumed %s (pausedBySystem %s), expected %s" % (
                        detail, s.get("state"), s.get("pausedBySystem"), "paused" if user_paused else "running"),
                        service.tail())
                check_integrity(d)
                count, high, contiguous = point_seqs(d, session_id)
                if not contiguous:
                    raise Fail("%s; seqs not contiguous after restart: %d points, max seq %s" % (detail, count, high))
                resume = user_paused
                previous = reported
                report(label, True, detail)
            except Fail as failure:
                report(label, False, failure.detail, failure.log)
                if service is not None:
                    service.cleanup()
                service, resume, previous = None, False, 0
    finally:
        if service is not None:
            service.cleanup()
    print("kill9: seed %d, %d kills (%d while paused), %d reported points lost in total (worst %d), %.0f s" % (
        env.seed, kills, pauses, total_lost, worst, time.monotonic() - started), flush=True)


def corrupt_snapshot(name, mutate, needs_column=None):
    """Case 2: a mid-ride database whose live session's resume snapshot is made unreadable."""

    def case(env, d):
        mid_ride(env, d)
        session_id, state = db_query(d, "SELECT id, state FROM session WHERE end_wall IS NULL ORDER BY id DESC LIMIT 1")[0]
        columns = [r[1] for r in db_query(d, "PRAGMA table_info(session)")]
        if needs_column is not None and needs_column not in columns:
            return "skipped: no session.%s column in this schema" % needs_column
        seq, distance, timer = last_point(d, session_id)
        db = connect(d, readonly=False)
        try:
            snapshot = db.execute("SELECT snapshot FROM session WHERE id = ?", (session_id,)).fetchone()[0]
            mutate(db, session_id, snapshot)
            db.commit()
        finally:
            db.close()
        service = Service(env, d)
        try:
            service.wait_ready()
            s = wait_until("status", 10, lambda: status(env, d), service)
            if s.get("sessionId") != session_id:
                raise Fail("resumed session %s, expected %s" % (s.get("sessionId"), session_id), service.tail())
            if s.get("state") != state:
                raise Fail("resumed %s, expected %s" % (s.get("state"), state), service.tail())
            after = wait_points(env, d, service, s.get("points", 0), timeout=10)
            if after.get("distance", 0) < distance * 0.99 or after.get("timer", 0) < timer * 0.99:
                raise Fail("after resume distance %.1f m, timer %.0f s; the last point before had %.1f m, %.0f s" % (
                    after.get("distance", 0), after.get("timer", 0), distance, timer), service.tail())
            said = [l for l in service.log().splitlines()
                    if re.search(r"\bsession %d\b" % session_id, l)
                    and re.search(r"unreadable|cannot be read|could not be read|not readable|corrupt|invalid", l)]
            if not said:
                raise Fail("no log line says session %d's resume state was unreadable" % session_id, service.tail())
            return "session %d resumed %s, %d points, %.0f m, %.0f s (last point before: %.0f m, %.0f s)" % (
                session_id, state, after["points"], after["distance"], after["timer"], distance, timer)
        finally:
            service.cleanup()

    return name, case


def set_snapshot(value):
    def mutate(db, session_id, snapshot):
        db.execute("UPDATE session SET snapshot = ? WHERE id = ?", (value, session_id))
    return mutate


def edit_snapshot(edit):
    def mutate(db, session_id, snapshot):
        document = json.loads(snapshot)
        edit(document)
        db.execute("UPDATE session SET snapshot = ? WHERE id = ?", (json.dumps(document), session_id))
    return mutate


def set_version(db, session_id, snapshot):
    db.execute("UPDATE session SET snapshot_version = 999 WHERE id = ?", (session_id,))


def damage(d, *statements):
    """Runs `statements` ((sql, args) pairs) on the case's database, as damage from outside."""
    db = connect(d, readonly=False)
    try:
        for sql, args in statements:
            db.execute(sql, args)
        db.commit()
    finally:
        db.close()


def resume_running(env, d, session_id, speed=SPEED):
    """Starts the service again; it must resume `session_id`, running. Returns it and its status."""
    service = Service(env, d, speed=speed)
    service.wait_ready()
    s = wait_until("status", 10, lambda: status(env, d), service)
    if s.get("sessionId") != session_id or s.get("state") != "running":
        raise Fail("resumed session %s %s, expected %s running" % (s.get("sessionId"), s.get("state"), session_id),
                   service.tail())
    return service, s


def case_multisport_activity_unreadable(env, d):
    """Case 2 for a multisport workout: killed in its second activity, its snapshot unreadable
    and the activity event's number infinite (a damaged record: once a trap at every start)."""
    service = Service(env, d)
    try:
        service.wait_ready()
        first = wait_points(env, d, service, 15)
        following = "running" if first.get("activity") != "running" else "cycling"
        code, out = ctl(env, d, "activity", "next", following)
        if code != 0:
            raise Fail("workoutctl activity next %s failed (%s): %s" % (following, code, out), service.tail())
        before = wait_points(env, d, service, first["points"] + 15)
        if (before.get("activity"), before.get("activityNumber")) != (following, 2):
            raise Fail("before the kill: activity %s number %s" % (before.get("activity"), before.get("activityNumber")),
                       service.tail())
        service.kill9()
    finally:
        service.cleanup()
    session_id = before["sessionId"]
    damage(d, ("UPDATE session SET snapshot = 'garbage' WHERE id = ?", (session_id,)),
           ("UPDATE event SET value = ? WHERE session_id = ? AND kind = 'activity'", (float("inf"), session_id)))
    service, s = resume_running(env, d, session_id)
    try:
        if (s.get("activity"), s.get("activityNumber")) != (following, 2):
            raise Fail("resumed in activity %s number %s, expected %s number 2" % (
                s.get("activity"), s.get("activityNumber"), following), service.tail())
        after = wait_points(env, d, service, s.get("points", 0), timeout=10)
        return "session %d resumed in activity 2 (%s), %d points, its activity's own %.0f m" % (
            session_id, following, after["points"], after.get("activityDistance", 0))
    finally:
        service.cleanup()


def case_clock_reading_damaged(env, d):
    """Case 2 for the clock: the last committed second's monotonic reading damaged (-1e300, as
    no clock reads). The gap cannot be measured: the session resumes with it unknown, its timer
    its own (the last build added 1e300 s, or trapped writing them)."""
    before = mid_ride(env, d)
    session_id = before["sessionId"]
    damage(d, ("UPDATE session SET clock_monotonic = -1e300 WHERE id = ?", (session_id,)),
           ("UPDATE point SET monotonic = -1e300 WHERE session_id = ? AND seq = "
            "(SELECT MAX(seq) FROM point WHERE session_id = ?)", (session_id, session_id)))
    service, s = resume_running(env, d, session_id)
    try:
        after = wait_points(env, d, service, s.get("points", 0), timeout=10)
        if not 0 < after.get("timer", 0) < before.get("timer", 0) + 600:
            raise Fail("timer %s s after resume, %s s before" % (after.get("timer"), before.get("timer")), service.tail())
        if not any("time away unknown" in line for line in service.log().splitlines()):
            raise Fail("no log line says the time away is unknown", service.tail())
        return "session %d resumed, time away unknown, timer %.0f s (%.0f s before)" % (
            session_id, after["timer"], before["timer"])
    finally:
        service.cleanup()


def case_damaged_values(env, d):
    """Values a flipped bit makes of a REAL (SQLite checks a page's structure, not its values):
    a point's time infinite, its position and power beyond any, a heart rate that is text. The
    session resumes, stops, and is exported (the last builds trapped exporting it)."""
    before = mid_ride(env, d)
    session_id = before["sessionId"]
    damage(d, ("UPDATE point SET wall = ? WHERE session_id = ? AND seq = 5", (float("inf"), session_id)),
           ("UPDATE point SET lat = -1e300, power = ? WHERE session_id = ? AND seq = 6", (float("inf"), session_id)),
           ("UPDATE point SET hr = 'zz' WHERE session_id = ? AND seq = 7", (session_id,)),
           ("UPDATE session SET snapshot = 'garbage' WHERE id = ?", (session_id,)))
    service, s = resume_running(env, d, session_id)
    try:
        wait_points(env, d, service, s.get("points", 0), timeout=10)
        button(env, d, "stop")
        exports = os.path.join(d, "state", "exports")

        def exported():
            names = os.listdir(exports) if os.path.isdir(exports) else []
            return sorted(n.rsplit(".", 1)[-1] for n in names if not n.startswith("."))
        # FIT and GPX, the formats exported unless configured otherwise.
        formats = wait_until("the exports", 20, lambda: exported() if {"fit", "gpx"} <= set(exported()) else None,
                             service)
        if not service.running():
            raise Fail("workoutd exited %s after the stop" % service.proc.returncode, service.tail())
        code, out = ctl(env, d, "show", str(session_id))
        if code != 0:
            raise Fail("workoutctl show exited %s: %s" % (code, out[-300:]), service.tail())
        return "session %d resumed, stopped and exported (%s); show reads it" % (session_id, ", ".join(formats))
    finally:
        service.cleanup()


def allow_null(d, table, columns):
    """Lets NULL into `columns` of `table`, where the schema says NOT NULL, as a flipped type
    byte does (an UPDATE cannot): the schema text is edited in place."""
    db = connect(d, readonly=False)
    try:
        sql = db.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
        for column in columns:
            sql, n = re.subn(r"(\b%s [A-Z]+) NOT NULL" % column, r"\1", sql, count=1)
            if n != 1:
                raise Fail("%s.%s is not NOT NULL in the schema" % (table, column))
        db.execute("PRAGMA writable_schema = ON")
        db.execute("UPDATE sqlite_master SET sql = ? WHERE name = ?", (sql, table))
        db.execute("PRAGMA writable_schema = OFF")
        db.commit()
    finally:
        db.close()


def case_damaged_rows(env, d):
    """NULLs where the schema says NOT NULL (a flipped type byte): the session row's state and
    clock reading, a point's time, the last point's distance, its checkpoint unreadable. The
    service started with nothing to resume, leaving the session neither resumed nor closed, and
    failed to export it at every pass. Now it resumes, running, without the two seconds it
    cannot place, says so (a log line, an event in the ride's record, the LED's fault pattern),
    records on after them without writing over either, and exports and shows the rest."""
    before = mid_ride(env, d)
    session_id = before["sessionId"]
    allow_null(d, "session", ["state", "clock_monotonic"])
    allow_null(d, "point", ["wall", "distance"])
    damage(d, ("UPDATE session SET state = NULL, clock_monotonic = NULL, snapshot = 'garbage' WHERE id = ?",
               (session_id,)),
           ("UPDATE point SET wall = NULL WHERE session_id = ? AND seq = 5", (session_id,)),
           ("UPDATE point SET distance = NULL WHERE session_id = ? AND seq = "
            "(SELECT MAX(seq) FROM point WHERE session_id = ?)", (session_id, session_id)))
    # At the board's own pace, so the LED's minute of fault pattern is still on when status is read.
    service, s = resume_running(env, d, session_id, speed="1")
    try:
        if not any("left out of its figures: 2 points" in line for line in service.log().splitlines()):
            raise Fail("no log line says 2 points are left out", service.tail())
        if s.get("indicator") != "fault":
            raise Fail("the LED shows %s, not the fault pattern, after the resume" % s.get("indicator"), service.tail())
        if (s.get("unreadable") or {}).get("points") != 2:
            raise Fail("status does not show 2 unreadable points: %s" % s.get("unreadable"), service.tail())
        code, out = ctl(env, d, "status")
        if code != 0 or "DAMAGED RECORD: 2 points unreadable at resume" not in out:
            raise Fail("workoutctl status exited %s: %s" % (code, out[-300:]), service.tail())
        wait_points(env, d, service, s.get("points", 0), timeout=10)
        button(env, d, "stop")
        wait_until("the exports' log lines", 20,
                   lambda: sum("left out as unreadable: 2 points" in line for line in service.log().splitlines()) >= 2,
                   service)
        code, out = ctl(env, d, "show", str(session_id))
        if code != 0 or "left out as unreadable (a damaged record): 2 points" not in out:
            raise Fail("workoutctl show exited %s: %s" % (code, out[-300:]), service.tail())
        if "damagedRecord (recovery: 2 points)" not in out:
            raise Fail("no damagedRecord event in show: %s" % out[-600:], service.tail())
        return "session %d resumed running without 2 unreadable seconds, stopped, exported; show says 2 left out" % (
            session_id)
    finally:
        service.cleanup()


# Values no build writes, as a damaged card leaves them in a column (SQLite checks a page's
# structure, not its values): each is tried in each column of the session's rows.
DAMAGE_VALUES = {"inf": float("inf"), "-1e300": -1e300, "1e300": 1e300, "text": "zz", "null": None,
                 "2^62": 2 ** 62}
# Columns a row is found by, or that the checkpoint cases already cover.
DAMAGE_KEYS = {"id", "session_id", "snapshot", "snapshot_version", "summary"}


def damage_combinations(d):
    """Every (mode, table, column, value) of the damage sweep over the database in `d`; mode
    "checkpoint" keeps the resume checkpoint, "rebuild" makes it unreadable too."""
    db = connect(d)
    try:
        # Not the primary key's columns either: one value in all of a session's rows would be
        # a duplicate key, which no damage to one row makes.
        columns = [(table, row[1]) for table in ("session", "event", "point", "lap")
                   for row in db.execute("PRAGMA table_info(%s)" % table)
                   if row[1] not in DAMAGE_KEYS and not row[5]]
    finally:
        db.close()
    return [(mode, table, column, value) for mode in ("checkpoint", "rebuild") for table, column in columns
            for value in sorted(DAMAGE_VALUES)]


def damaged_column_run(env, base, session_id, combination):
    """Starts the service on a copy of `base` with one column of the session's rows damaged:
    it must come up, resume the session or close it with a word, answer `status`, stop it and
    export it, and `workoutctl show` must read it. Returns what went wrong, or None."""
    mode, table, column, value_name = combination
    value = DAMAGE_VALUES[value_name]
    d = env.case_dir("damaged-column")
    shutil.rmtree(os.path.join(d, "state"))
    shutil.copytree(os.path.join(base, "state"), os.path.join(d, "state"))
    db = connect(d)
    try:
        notnull = any(row[1] == column and row[3] for row in db.execute("PRAGMA table_info(%s)" % table))
    finally:
        db.close()
    if value is None and notnull:
        allow_null(d, table, [column])
    statements = [("UPDATE %s SET %s = ? WHERE %s = ?" % (table, column, "id" if table == "session" else "session_id"),
                   (value, session_id))]
    if mode == "rebuild":
        statements.append(("UPDATE session SET snapshot = 'garbage' WHERE id = ?", (session_id,)))
    damage(d, *statements)
    service = Service(env, d)
    try:
        service.wait_ready(timeout=15)
        s = wait_until("status", 10, lambda: status(env, d), service)
        if s.get("sessionId") != session_id and "cannot be resumed" not in service.log():
            return "neither resumed nor closed (state %s)" % s.get("state")
        code, out = ctl(env, d, "show", str(session_id))
        if code != 0:
            return "workoutctl show exited %s: %s" % (code, out.strip().splitlines()[-1:])
        if s.get("sessionId") == session_id:
            code, out = ctl(env, d, "stop")
            wait_until("the exports", 15, lambda: any(
                "exported session %d" % session_id in line or "cannot export" in line
                for line in service.log().splitlines()) or None, service)
        if not service.running():
            return "workoutd exited %s" % service.proc.returncode
        bad = [line for line in service.log().splitlines()
               if "Fatal error" in line or "cannot read" in line or "cannot export" in line]
        return "log: %s" % bad[0][-200:] if bad else None
    except Fail as failure:
        return failure.detail
    finally:
        service.cleanup()
        shutil.rmtree(d, ignore_errors=True)


def case_damaged_columns(env, d):
    """A sample of the damage sweep (all with --damage-sample 0): one column of a mid-ride
    session's rows (session, events, points, laps) set to a value no build writes, its
    checkpoint kept or unreadable. The sample is drawn from the campaign's seed."""
    service = Service(env, d)
    try:
        service.wait_ready()
        wait_points(env, d, service, 15)
        code, out = ctl(env, d, "lap")
        if code != 0:
            raise Fail("workoutctl lap failed (%s): %s" % (code, out), service.tail())
        before = wait_points(env, d, service, 30)
        service.kill9()
    finally:
        service.cleanup()
    combinations = damage_combinations(d)
    sample = env.damage_sample
    chosen = combinations if sample <= 0 or sample >= len(combinations) else \
        random.Random(env.seed).sample(combinations, sample)
    problems = []
    for combination in chosen:
        problem = damaged_column_run(env, d, before["sessionId"], combination)
        if problem:
            problems.append("%s %s.%s=%s: %s" % (combination + (problem,)))
    if problems:
        raise Fail("%d of %d damaged columns: %s" % (len(problems), len(chosen), "; ".join(problems[:3])), problems)
    return "%d of the %d damaged columns (seed %d; %s ...): each resumed or closed, stopped, exported, shown" % (
        len(chosen), len(combinations), env.seed,
        ", ".join("%s %s.%s=%s" % c for c in chosen[:3]))


def case_readonly_database(env, d):
    """Case 3: the database belongs to root (0644), the service runs as nobody."""
    if os.geteuid() != 0:
        return "skipped: needs root"
    stopped_cleanly(env, d)
    state = os.path.join(d, "state")
    for name in os.listdir(state):
        os.chown(os.path.join(state, name), 65534, 65534)
    os.chown(state, 65534, 65534)
    database = os.path.join(state, "workoutd.db")
    for name in ("workoutd.db", "workoutd.db-wal", "workoutd.db-shm"):
        path = os.path.join(state, name)
        if os.path.exists(path):
            os.chown(path, 0, 0)
            os.chmod(path, 0o644)
    before = sha256(database)
    service = Service(env, d, user="nobody")
    try:
        line = expect_refusal(service, [database], [])
    finally:
        service.cleanup()
    if sha256(database) != before:
        raise Fail("the database's bytes changed")
    return "exit 3: %s" % line.split(": ", 1)[-1][:140]


def case_newer_schema(env, d):
    """Case 4: a database migrated by a newer release."""
    stopped_cleanly(env, d)
    db = connect(d, readonly=False)
    try:
        db.execute("INSERT INTO grdb_migrations(identifier) VALUES ('v99: from a newer release')")
        db.commit()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    database = os.path.join(d, "state", "workoutd.db")
    before, rows = sha256(database), row_counts(d)
    service = Service(env, d)
    try:
        line = expect_refusal(service, [database], ["newer"])
    finally:
        service.cleanup()
    if sha256(database) != before:
        raise Fail("the database's bytes changed")
    if row_counts(d) != rows:
        raise Fail("rows changed: %s before, %s after" % (rows, row_counts(d)))
    return "exit 3: %s" % line.split(": ", 1)[-1][:140]


def case_unwritable_state_dir(env, d):
    """Case 5: the state directory is root's (0755), no database yet, the service runs as nobody."""
    if os.geteuid() != 0:
        return "skipped: needs root"
    state = os.path.join(d, "state")
    os.makedirs(state, exist_ok=True)
    os.chmod(state, 0o755)
    service = Service(env, d, user="nobody")
    try:
        line = expect_refusal(service, [state], [])
    finally:
        service.cleanup()
    if os.listdir(state):
        raise Fail("files appeared in the state directory: %s" % os.listdir(state))
    return "exit 3: %s" % line.split(": ", 1)[-1][:140]


def lost_wal(name, damage):
    """Case 6: a mid-ride state whose database or WAL is damaged; the WAL must be kept."""

    def case(env, d):
        mid_ride(env, d)
        state = os.path.join(d, "state")
        wal = os.path.join(state, "workoutd.db-wal")
        if not os.path.exists(wal) or os.path.getsize(wal) == 0:
            raise Fail("no WAL after the kill -9: %s" % state_files(d))
        damage(state)
        wal_hash = sha256(wal)
        service = Service(env, d)
        try:
            kept = ready_keeping(service, d, wal_hash, "the WAL's")
            check_integrity(d)
            return "ready on a fresh database; kept %s" % ", ".join(kept)
        finally:
            service.cleanup()

    return name, case


def truncate_database(state):
    os.truncate(os.path.join(state, "workoutd.db"), 0)


def scramble_wal(state):
    wal = os.path.join(state, "workoutd.db-wal")
    size = os.path.getsize(wal)
    with open(wal, "wb") as f:
        f.write(random.Random(size).randbytes(size))


def case_full_disk(env, d):
    """Case 7: the state directory is a 3 MiB tmpfs, filled until ENOSPC, then freed."""
    if os.geteuid() != 0:
        return "skipped: needs root"
    state = os.path.join(d, "state")
    os.makedirs(state, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", state], capture_output=True, text=True,
                          timeout=20)
    if done.returncode != 0:
        raise Fail("cannot mount a tmpfs: %s" % done.stderr.strip())
    service = None
    try:
        service = Service(env, d)
        service.wait_ready()
        wait_points(env, d, service, 10)
        filler = os.path.join(state, "filler")
        # Unbuffered: a buffered file's close would write its tail again and raise ENOSPC anew.
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            block = b"\0" * 65536
            for _ in range(4096):
                os.write(fd, block)
        except OSError as error:
            if error.errno != errno.ENOSPC:
                raise
        finally:
            os.close(fd)
        failing = wait_until("storage.failing", 30, lambda: (lambda s: s if s and s["storage"].get("failing")
                                                               else None)(status(env, d)), service)
        if not failing["storage"].get("lastError"):
            raise Fail("storage failing without a lastError", service.tail())
        seen = failing
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            s = status(env, d)
            if s and s["storage"].get("failing"):
                seen = s
            time.sleep(0.25)
        os.remove(filler)
        wait_until("storage.failing false", 30, lambda: (lambda s: s if s and not s["storage"].get("failing")
                                                         else None)(status(env, d)), service)
        session_id = seen.get("sessionId")
        button(env, d, "stop")
        code = service.terminate()
        if code != 0:
            raise Fail("exit status %d on SIGTERM" % code, service.tail())
        check_integrity(d)
        count, high, contiguous = point_seqs(d, session_id)
        if not contiguous:
            raise Fail("point seqs not contiguous: %d points, max %s" % (count, high))
        if count < seen["points"]:
            raise Fail("%d points in the database, status said %d while failing" % (count, seen["points"]))
        return "failed with %r, %d writes pending; recovered, %d points contiguous (>= %d)" % (
            seen["storage"]["lastError"][:60], seen["storage"].get("pendingWrites", 0), count, seen["points"])
    finally:
        if service is not None:
            service.cleanup()
        subprocess.run(["umount", "-l", state], capture_output=True, timeout=20)


def case_corrupt_database(env, d):
    """Case 8: 4096 bytes of garbage over the start of a stopped database."""
    stopped_cleanly(env, d)
    state = os.path.join(d, "state")
    for suffix in ("-wal", "-shm"):
        path = os.path.join(state, "workoutd.db" + suffix)
        if os.path.exists(path):
            os.remove(path)
    database = os.path.join(state, "workoutd.db")
    with open(database, "r+b") as f:
        f.write(random.Random(4096).randbytes(4096))
    corrupt_hash = sha256(database)
    service = Service(env, d)
    try:
        kept = ready_keeping(service, d, corrupt_hash, "the corrupt database's")
        check_integrity(d)
        return "ready on a fresh database; kept %s" % ", ".join(kept)
    finally:
        service.cleanup()


CASES = [
    corrupt_snapshot("resume-garbage-snapshot", set_snapshot("this is not JSON {{{")),
    corrupt_snapshot("resume-snapshot-key-deleted", edit_snapshot(lambda doc: doc.pop("builder"))),
    corrupt_snapshot("resume-snapshot-type-changed", edit_snapshot(lambda doc: doc.update(builder=42))),
    corrupt_snapshot("resume-empty-snapshot", set_snapshot("")),
    corrupt_snapshot("resume-snapshot-version-999", set_version, needs_column="snapshot_version"),
    ("resume-multisport-activity-number-unreadable", case_multisport_activity_unreadable),
    ("resume-clock-reading-damaged", case_clock_reading_damaged),
    ("damaged-values-exported", case_damaged_values),
    ("damaged-rows-resumed-and-exported", case_damaged_rows),
    ("damaged-columns-sample", case_damaged_columns),
    ("readonly-database", case_readonly_database),
    ("newer-schema", case_newer_schema),
    ("unwritable-state-dir", case_unwritable_state_dir),
    lost_wal("lost-wal-database-truncated", truncate_database),
    lost_wal("lost-wal-wal-scrambled", scramble_wal),
    ("full-disk", case_full_disk),
    ("corrupt-database", case_corrupt_database),
]


# --------------------------------------------------------------------------------------------


class Campaign:
    def __init__(self, options):
        self.started = time.monotonic()
        self.seed = options.seed
        self.kills = options.kills
        self.damage_sample = options.damage_sample
        self.root = tempfile.mkdtemp(prefix="wdf-", dir="/tmp")
        os.chmod(self.root, 0o755)
        self.passed = self.failed = 0
        self.cases = 0
        # Copies of the binaries and the ride that any user can run and read (cases as nobody).
        shared = os.path.join(self.root, "bin")
        os.mkdir(shared)
        for name in ("workoutd", "workoutctl"):
            shutil.copy(os.path.join(options.bin, name), os.path.join(shared, name))
            os.chmod(os.path.join(shared, name), 0o755)
        self.bin = shared
        self.ride = os.path.join(shared, "ride.csv")
        shutil.copy(RIDE, self.ride)
        os.chmod(self.ride, 0o644)

    def out_of_time(self):
        return time.monotonic() - self.started > BUDGET

    def case_dir(self, name):
        self.cases += 1
        d = os.path.join(self.root, "c%02d" % self.cases)
        os.makedirs(os.path.join(d, "state"))
        os.makedirs(os.path.join(d, "run"))
        os.chmod(d, 0o755)
        if os.geteuid() == 0:
            os.chown(os.path.join(d, "run"), 65534, 65534)  # for the cases run as nobody
        return d

    def report(self, name, ok, detail, log=None):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print("%s %s: %s" % ("PASS" if ok else "FAIL", name, detail), flush=True)
        if not ok and log:
            for line in log[-10:]:
                print("    | " + line, flush=True)

    def run(self, name, case):
        if self.out_of_time():
            self.report(name, False, "campaign time budget exhausted; not run")
            return
        d = self.case_dir(name)
        try:
            detail = case(self, d)
            self.report(name, True, detail)
        except Fail as failure:
            self.report(name, False, failure.detail, failure.log)
        except Exception as error:  # the harness itself failed: that case fails, the campaign goes on
            frame = traceback.extract_tb(error.__traceback__)[-1]
            self.report(name, False, "harness error %s: %s (line %d)" % (type(error).__name__, error, frame.lineno))
        finally:
            for service in list(LIVE):
                service.cleanup()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True, help="the directory with workoutd and workoutctl")
    parser.add_argument("--seed", type=int, default=None, help="the kill -9 moments' seed (default: random)")
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--only", default=None, help="run only cases whose name contains this (kill9 for case 1)")
    parser.add_argument("--keep", action="store_true", help="keep the case directories")
    parser.add_argument("--damage-sample", type=int, default=8,
                        help="damaged columns tried by damaged-columns-sample (0: all of them, about 10 min)")
    options = parser.parse_args()
    if options.seed is None:
        options.seed = random.SystemRandom().randrange(1, 1 << 31)
    for name in ("workoutd", "workoutctl"):
        if not os.access(os.path.join(options.bin, name), os.X_OK):
            sys.exit("no %s in %s (run swift build)" % (name, options.bin))

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    campaign = Campaign(options)
    print("fault campaign: %s, seed %d, directories under %s" % (options.bin, options.seed, campaign.root), flush=True)
    try:
        if options.only is None or options.only in "kill9":
            try:
                case_kill9(campaign, campaign.report)
            except Exception as error:
                frame = traceback.extract_tb(error.__traceback__)[-1]
                campaign.report("kill9", False, "harness error %s: %s (line %d)" % (
                    type(error).__name__, error, frame.lineno))
            finally:
                for service in list(LIVE):
                    service.cleanup()
        for name, case in CASES:
            if options.only is None or options.only in name:
                campaign.run(name, case)
    finally:
        for service in list(LIVE):
            service.cleanup()
        if not options.keep:
            shutil.rmtree(campaign.root, ignore_errors=True)
    print("campaign wall time %.0f s" % (time.monotonic() - campaign.started), flush=True)
    print("%d passed, %d failed" % (campaign.passed, campaign.failed), flush=True)
    sys.exit(0 if campaign.failed == 0 else 1)


if __name__ == "__main__":
    main()
