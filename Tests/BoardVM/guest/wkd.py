#!/usr/bin/python3
"""Read-only look at a SQLite database for the tests: integrity, and how many
points of a session are on disk up to a moment.

The daemon's schema is found, not assumed: the point table's session column is
its foreign key to `session` (else a column named session*), its time column
the first of TIME_COLUMNS. Times in the DB and in `workoutctl status --json`
may be epoch seconds or milliseconds, seconds since 2001 (Swift's reference
date) or ISO-8601 text; all are compared as epoch seconds.

  wkd.py integrity DB              prints PRAGMA integrity_check; exit 1 unless ok
  wkd.py points DB SESSION [UPTO]  prints JSON: count/max_t, and count/max up to UPTO
  wkd.py epoch VALUE               prints VALUE as epoch seconds
"""
import datetime as dt
import json
import sqlite3
import sys

TIME_COLUMNS = ("t", "time", "wall", "timestamp", "ts", "fix_time", "gps_time", "recorded_at", "date")
SWIFT_REFERENCE_DATE = 978307200      # 2001-01-01T00:00:00Z


def epoch(value):
    if value is None:
        return None
    if isinstance(value, (int, float)) or (isinstance(value, str) and value.replace(".", "", 1).isdigit()):
        v = float(value)
        if v >= 1e11:
            return v / 1000.0                 # epoch milliseconds
        if v >= 1e9:
            return v                          # epoch seconds
        if v >= 3e8:
            return v + SWIFT_REFERENCE_DATE   # Date.timeIntervalSinceReferenceDate
        raise ValueError(f"time {value!r} is not a plausible timestamp")
    text = str(value).strip().replace(" ", "T")
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    t = dt.datetime.fromisoformat(text)
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)   # SQLite and GRDB store UTC
    return t.timestamp()


def open_ro(path):
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def columns(db, table):
    return [r[1] for r in db.execute(f"PRAGMA table_info({table})")]


def point_schema(db):
    cols = columns(db, "point")
    if not cols:
        raise SystemExit("no table 'point'; tables: " + ", ".join(
            r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")))
    fks = [r[3] for r in db.execute("PRAGMA foreign_key_list(point)") if r[2] == "session"]
    session_col = fks[0] if fks else next((c for c in cols if c.lower().startswith("session")), None)
    time_col = next((c for c in cols if c.lower() in TIME_COLUMNS), None)
    if not session_col or not time_col:
        raise SystemExit(f"cannot find the session/time columns of point({', '.join(cols)})")
    return session_col, time_col


def session_key(db, session_id, session_col):
    """The value point.<session_col> holds for the session the daemon calls session_id."""
    fk = [r for r in db.execute("PRAGMA foreign_key_list(point)") if r[3] == session_col]
    target = fk[0][4] if fk and fk[0][4] else "id"
    if db.execute(f"SELECT 1 FROM session WHERE {target} = ?", (session_id,)).fetchone():
        return session_id
    for col in columns(db, "session"):        # the daemon may report a uuid
        row = db.execute(f"SELECT {target} FROM session WHERE {col} = ?", (str(session_id),)).fetchone()
        if row:
            return row[0]
    return session_id


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "epoch":
        print(epoch(args[0]))
    elif cmd == "integrity":
        rows = [r[0] for r in open_ro(args[0]).execute("PRAGMA integrity_check")]
        print("; ".join(rows)[:300])
        sys.exit(0 if rows == ["ok"] else 1)
    elif cmd == "points":
        db = open_ro(args[0])
        session_col, time_col = point_schema(db)
        key = session_key(db, json.loads(args[1]) if args[1].isdigit() else args[1], session_col)
        times = [epoch(r[0]) for r in db.execute(f"SELECT {time_col} FROM point WHERE {session_col} = ?", (key,))]
        upto = epoch(args[2]) if len(args) > 2 and args[2] else None
        before = [t for t in times if upto is not None and t <= upto + 1e-3]
        print(json.dumps({"session": key, "count": len(times), "max_t": max(times, default=None),
                          "upto": upto, "count_upto": len(before), "max_upto": max(before, default=None),
                          "columns": [session_col, time_col]}))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
