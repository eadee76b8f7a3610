// SQLite's process-wide settings, made before anything opens a database: sqlite3_config must
// run before SQLite initialises, and it is variadic, which Swift cannot call.
#ifndef CSQLITESETUP_H
#define CSQLITESETUP_H

/// What sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) returned when this process started (a
/// constructor runs it before main): SQLITE_OK, or SQLITE_MISUSE had SQLite been initialised
/// before it. With the count on (Debian builds SQLite with SQLite's default,
/// SQLITE_DEFAULT_MEMSTATUS=1) every sqlite3_malloc and sqlite3_free takes a global mutex and
/// updates the counters, 18 % of SQLite's instructions in a recorded second; they serve
/// only sqlite3_memory_used(), sqlite3_status() and the heap limits, which nothing here uses.
int shim_sqlite_memory_count_off(void);

#endif
