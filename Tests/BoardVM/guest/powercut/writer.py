#!/usr/bin/python3
"""Stand-in for workoutd in the power-cut series (a control experiment):
commit one row per second to SQLite in WAL mode and, once COMMIT has returned,
append the row id to a ledger on the host share (a 9p write reaches the host
at once and survives the VM being killed). After a cut, an id in the ledger
but not in the database is a committed row the power cut took away.

Usage: writer.py DB LEDGER full|off     (PRAGMA synchronous=FULL or OFF)
"""
import os
import sqlite3
import sys
import time

db_path, ledger_path, sync = sys.argv[1:4]
os.makedirs(os.path.dirname(db_path), exist_ok=True)
db = sqlite3.connect(db_path, isolation_level=None)   # explicit transactions
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA synchronous=" + ("FULL" if sync == "full" else "OFF"))
db.execute("CREATE TABLE IF NOT EXISTS row(id INTEGER PRIMARY KEY, boot INTEGER, t REAL, payload BLOB)")
boot = int(os.environ.get("HIL_BOOT", "0"))
with open(ledger_path, "a", buffering=1) as ledger:   # line-buffered: one write per row
    tick = time.monotonic()
    while True:
        db.execute("BEGIN")
        # about the size of one recorded point
        row = db.execute("INSERT INTO row(boot, t, payload) VALUES (?, ?, randomblob(96))", (boot, time.time()))
        db.execute("COMMIT")
        ledger.write(f"{row.lastrowid}\n")
        tick += 1.0
        time.sleep(max(0.0, tick - time.monotonic()))
