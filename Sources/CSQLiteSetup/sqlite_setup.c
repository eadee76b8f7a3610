#include "CSQLiteSetup.h"

#include <sqlite3.h>

static int memory_count_off = -1;

// Before main, so before any open: sqlite3_config is only allowed before sqlite3_initialize
// (https://sqlite.org/c3ref/config.html).
__attribute__((constructor)) static void stop_counting_memory(void) {
  memory_count_off = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

int shim_sqlite_memory_count_off(void) { return memory_count_off; }
