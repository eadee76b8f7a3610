import GRDB

/// The schema, as migrations. A migration that has shipped is never edited: change the schema
/// with a new one appended below, and pin its schema in `FrozenMigrationsTests`.
enum Schema {
  static var migrator: DatabaseMigrator {
    var migrator = DatabaseMigrator()
    migrator.registerMigration("v1: sessions, events, points, laps") { db in
      try db.execute(
        sql: """
          CREATE TABLE session (
            id INTEGER PRIMARY KEY,
            activity TEXT NOT NULL,
            state TEXT NOT NULL,
            opened_wall REAL NOT NULL,
            start_wall REAL,
            end_wall REAL,
            elapsed REAL NOT NULL DEFAULT 0,
            timer REAL NOT NULL DEFAULT 0,
            distance REAL NOT NULL DEFAULT 0,
            points INTEGER NOT NULL DEFAULT 0,
            snapshot TEXT NOT NULL,
            summary TEXT,
            clock_epoch TEXT NOT NULL,
            clock_monotonic REAL NOT NULL,
            clock_wall REAL NOT NULL,
            clock_wall_trusted INTEGER NOT NULL
          );
          CREATE INDEX session_state ON session(state);

          CREATE TABLE event (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id INTEGER REFERENCES session(id) ON DELETE CASCADE,
            wall REAL NOT NULL,
            monotonic REAL NOT NULL,
            clock_epoch TEXT NOT NULL,
            kind TEXT NOT NULL,
            from_state TEXT,
            to_state TEXT,
            cause TEXT,
            detail TEXT,
            value REAL
          );
          CREATE INDEX event_session ON event(session_id, id);

          CREATE TABLE point (
            session_id INTEGER NOT NULL REFERENCES session(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            wall REAL NOT NULL,
            monotonic REAL NOT NULL,
            elapsed REAL NOT NULL,
            timer REAL NOT NULL,
            distance REAL NOT NULL,
            lat REAL,
            lon REAL,
            alt_gps REAL,
            alt_baro REAL,
            speed REAL,
            hr INTEGER,
            cadence REAL,
            power INTEGER,
            temperature REAL,
            fix_dim INTEGER,
            h_error REAL,
            PRIMARY KEY (session_id, seq)
          ) WITHOUT ROWID;

          CREATE TABLE lap (
            session_id INTEGER NOT NULL REFERENCES session(id) ON DELETE CASCADE,
            number INTEGER NOT NULL,
            start_wall REAL NOT NULL,
            end_wall REAL NOT NULL,
            trigger TEXT NOT NULL,
            elapsed REAL NOT NULL,
            timer REAL NOT NULL,
            distance REAL NOT NULL,
            avg_speed REAL,
            max_speed REAL,
            avg_hr REAL,
            max_hr REAL,
            avg_cadence REAL,
            max_cadence REAL,
            avg_power REAL,
            max_power REAL,
            PRIMARY KEY (session_id, number)
          );
          """)
    }
    migrator.registerMigration("v2: ascent and descent of sessions and laps") { db in
      try db.execute(
        sql: """
          ALTER TABLE session ADD COLUMN ascent REAL NOT NULL DEFAULT 0;
          ALTER TABLE session ADD COLUMN descent REAL NOT NULL DEFAULT 0;
          ALTER TABLE lap ADD COLUMN ascent REAL NOT NULL DEFAULT 0;
          ALTER TABLE lap ADD COLUMN descent REAL NOT NULL DEFAULT 0;
          """)
    }
    migrator.registerMigration("v3: barometric pressure and humidity of points") { db in
      try db.execute(
        sql: """
          ALTER TABLE point ADD COLUMN pressure REAL;
          ALTER TABLE point ADD COLUMN humidity REAL;
          """)
    }
    migrator.registerMigration("v4: format of the resume checkpoint") { db in
      // What earlier releases wrote is format 1 (see ResumeCheckpoint).
      try db.execute(sql: "ALTER TABLE session ADD COLUMN snapshot_version INTEGER NOT NULL DEFAULT 1")
    }
    migrator.registerMigration("v5: RR intervals of heart-rate straps") { db in
      // Each beat-to-beat interval a strap sent, in 1/1024 s (Heart Rate Service 1.0), with the
      // point of the second it arrived in: several a second, in the order sent.
      try db.execute(
        sql: """
          CREATE TABLE rr_interval (
            session_id INTEGER NOT NULL REFERENCES session(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            position INTEGER NOT NULL,
            interval INTEGER NOT NULL,
            PRIMARY KEY (session_id, seq, position)
          ) WITHOUT ROWID;
          """)
    }
    migrator.registerMigration("v6: wheel speed of points") { db in
      // Speed from a wheel sensor, m/s, beside GPS's `speed` (both are kept when both exist).
      try db.execute(sql: "ALTER TABLE point ADD COLUMN wheel_speed REAL")
    }
    migrator.registerMigration("v7: session UUIDs and the export ledger") { db in
      // Each session a random UUID (RFC 9562 version 4): its identity beyond this database, in
      // export file names and FIT serials; a rebuilt database numbering from 1 again must not
      // give a stick's files the same names. Sessions of earlier releases get theirs here.
      try db.execute(
        sql: """
          ALTER TABLE session ADD COLUMN uuid TEXT NOT NULL DEFAULT '';
          UPDATE session SET uuid = lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4'
            || substr(lower(hex(randomblob(2))), 2) || '-' || substr('89ab', 1 + abs(random() % 4), 1)
            || substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6)));
          CREATE UNIQUE INDEX session_uuid ON session(uuid);
          """)
      // What was written where: a format of a session into a destination (a directory's path,
      // or a key such as a USB stick's filesystem UUID). "Export what is new" is what has no row.
      try db.execute(
        sql: """
          CREATE TABLE export (
            session_id INTEGER NOT NULL REFERENCES session(id) ON DELETE CASCADE,
            format TEXT NOT NULL,
            destination TEXT NOT NULL,
            name TEXT NOT NULL,
            bytes INTEGER NOT NULL,
            points INTEGER NOT NULL,
            written_wall REAL NOT NULL,
            PRIMARY KEY (session_id, format, destination)
          ) WITHOUT ROWID;
          """)
    }
    migrator.registerMigration("v8: phones paired with the web server") { db in
      // A phone's long-lived token, kept as its SHA-256 only (a copied database opens nothing).
      // A revoked phone's row stays, with when, so `workoutctl pair --list` can say so.
      try db.execute(
        sql: """
          CREATE TABLE web_client (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL,
            token_hash TEXT NOT NULL UNIQUE,
            paired_wall REAL NOT NULL,
            last_seen_wall REAL,
            revoked_wall REAL
          );
          """)
    }
    migrator.registerMigration("v9: what an export was made from") { db in
      // The newest event of the session when its file was made: a file made before a later
      // event (the ride's end after an export mid-ride, an RPE given after the ride) is stale,
      // and "export what is new" makes it again. Rows of earlier releases have none: current.
      try db.execute(sql: "ALTER TABLE export ADD COLUMN source_event_id INTEGER")
    }
    migrator.registerMigration("v10: battery samples of sessions") { db in
      // The board's battery once a `[battery] sample_interval` (a minute) while a session is
      // under way: what `show` reckons the level at start and end, and the drain, from. The
      // monotonic time is the boot's (`clock_epoch`), as events' are: a GPS clock correction
      // moves this boot's walls only.
      try db.execute(
        sql: """
          CREATE TABLE battery_sample (
            session_id INTEGER NOT NULL REFERENCES session(id) ON DELETE CASCADE,
            clock_epoch TEXT NOT NULL,
            monotonic REAL NOT NULL,
            wall REAL NOT NULL,
            level REAL,
            voltage REAL,
            current REAL,
            status TEXT NOT NULL,
            PRIMARY KEY (session_id, clock_epoch, monotonic)
          ) WITHOUT ROWID;
          """)
    }
    migrator.registerMigration("v11: the upload queue") { db in
      // A platform a finished ride is sent to (`UploadTarget`'s name) and the wall time it was
      // first configured: rides that end from then on are sent by themselves; an older one only
      // when asked for by name, so adding a platform does not send the rider's whole history.
      // One job a session and target (`UploadJob`): its state survives a kill or a power cut,
      // and `platform_upload_id` lets a restart ask after a file the platform took rather than
      // send it again. The index finds pending and failed jobs without reading finished ones.
      try db.execute(
        sql: """
          CREATE TABLE upload_target (
            name TEXT NOT NULL PRIMARY KEY,
            since REAL NOT NULL
          ) WITHOUT ROWID;

          CREATE TABLE upload_job (
            session_id INTEGER NOT NULL REFERENCES session(id) ON DELETE CASCADE,
            target TEXT NOT NULL,
            state TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            retry_at REAL,
            platform_upload_id TEXT,
            platform_id TEXT,
            reason TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (session_id, target)
          ) WITHOUT ROWID;
          CREATE INDEX upload_job_state ON upload_job(state, retry_at);
          """)
    }
    migrator.registerMigration("v12: a target's first session, a platform's retry time") { db in
      // The session, not a time, draws a target's line: a session's end is GPS time and the
      // board's clock may be behind it. A target configured before this is given the session its
      // `since` admitted: the oldest not ended, or ended at or after it (else the next one).
      // `retry_from_platform`: the retry time is a platform's Retry-After, kept when the network
      // comes back, where a backoff of the network's own is made due at once.
      // The release of stop 74 made both columns in v11 itself: there they are kept as they are.
      if try !db.columns(in: "upload_target").contains(where: { $0.name == "first_session" }) {
        try db.execute(
          sql: """
            ALTER TABLE upload_target ADD COLUMN first_session INTEGER NOT NULL DEFAULT 0;
            UPDATE upload_target SET first_session = COALESCE(
              (SELECT MIN(id) FROM session WHERE state != 'ended'
                OR (typeof(end_wall) IN ('real', 'integer') AND end_wall >= upload_target.since)),
              (SELECT MAX(id) + 1 FROM session), 1);
            """)
      }
      if try !db.columns(in: "upload_job").contains(where: { $0.name == "retry_from_platform" }) {
        try db.execute(sql: "ALTER TABLE upload_job ADD COLUMN retry_from_platform INTEGER NOT NULL DEFAULT 0")
      }
    }
    migrator.registerMigration("v13: the road's feel of points") { db in
      // The inertial sensor's second (`TrackPoint`): the vibration, RMS m/s² of the
      // acceleration's magnitude about its 1 s mean, and the peak acceleration, m/s² with
      // gravity in it. Points of earlier releases have neither.
      try db.execute(
        sql: """
          ALTER TABLE point ADD COLUMN vibration REAL;
          ALTER TABLE point ADD COLUMN peak_acceleration REAL;
          """)
    }
    return migrator
  }
}
