// The least a durable 1 Hz logger does, for Benchmarks/device.py: once a second, wake on a
// timer and insert one row of a point's 21 columns into SQLite in WAL mode with
// synchronous=FULL (one fdatasync a second: a power cut loses at most that second), with the
// database set up as workoutd sets up its own (2 KiB pages, the WAL made full size with zeros
// first). No gpsd, no parsing, no statistics, nothing else: what it costs is the floor under
// any logger that keeps workoutd's promise, measured beside gpxlogger on the same machine.
//
// Usage: durable-logger DATABASE SECONDS (then prints nothing; device.py reads its CPU).
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void must(int code, sqlite3 *db, const char *what) {
  if (code != SQLITE_OK && code != SQLITE_DONE && code != SQLITE_ROW) {
    fprintf(stderr, "durable-logger: %s: %s\n", what, sqlite3_errmsg(db));
    exit(1);
  }
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: durable-logger DATABASE SECONDS\n");
    return 2;
  }
  const char *path = argv[1];
  int seconds = atoi(argv[2]);
  sqlite3 *db;
  must(sqlite3_open(path, &db), db, "open");
  must(sqlite3_exec(db,
                    "PRAGMA page_size=2048; PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                    "PRAGMA journal_size_limit=8388608;"
                    "CREATE TABLE IF NOT EXISTS point (session_id INTEGER, seq INTEGER, wall REAL,"
                    " monotonic REAL, elapsed REAL, timer REAL, distance REAL, lat REAL, lon REAL,"
                    " alt_gps REAL, alt_baro REAL, speed REAL, hr INTEGER, cadence REAL, power INTEGER,"
                    " temperature REAL, fix_dim INTEGER, h_error REAL, pressure REAL, humidity REAL,"
                    " wheel_speed REAL, PRIMARY KEY (session_id, seq)) WITHOUT ROWID;",
                    0, 0, 0),
       db, "set up");
  // The WAL made full size with written zeros, as workoutd does after READY.
  must(sqlite3_exec(db, "BEGIN IMMEDIATE", 0, 0, 0), db, "begin");
  char wal[4096];
  snprintf(wal, sizeof wal, "%s-wal", path);
  FILE *file = fopen(wal, "r+b");
  if (file == NULL) file = fopen(wal, "wb");
  if (file == NULL) {
    perror(wal);
    return 1;
  }
  fseek(file, 0, SEEK_END);
  long size = ftell(file);
  static char zeros[65536];
  for (long target = 32 + 1024L * (2048 + 24); size < target;) {
    long chunk = target - size < (long)sizeof zeros ? target - size : (long)sizeof zeros;
    fwrite(zeros, 1, (size_t)chunk, file);
    size += chunk;
  }
  fflush(file);
  fdatasync(fileno(file));
  fclose(file);
  must(sqlite3_exec(db, "COMMIT", 0, 0, 0), db, "commit");

  sqlite3_stmt *insert;
  must(sqlite3_prepare_v2(db, "INSERT INTO point VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &insert, 0),
       db, "prepare");
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  for (int second = 0; second < seconds; second++) {
    next.tv_sec += 1;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) != 0) {
    }
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    double now = (double)wall.tv_sec + wall.tv_nsec / 1e9;
    sqlite3_bind_int64(insert, 1, 1);
    sqlite3_bind_int64(insert, 2, second);
    sqlite3_bind_double(insert, 3, now);
    for (int column = 4; column <= 21; column++) {
      if (column == 13 || column == 15 || column == 17) {
        sqlite3_bind_int64(insert, column, 150 + second % 7);
      } else {
        sqlite3_bind_double(insert, column, 46.05 + column + second * 1e-5);
      }
    }
    must(sqlite3_step(insert), db, "insert");
    sqlite3_reset(insert);
  }
  sqlite3_finalize(insert);
  sqlite3_close(db);
  return 0;
}
