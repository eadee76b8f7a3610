// Small C helpers for Linux calls that Swift's Glibc module does not expose (they need
// _GNU_SOURCE or live in headers the module map leaves out).
#ifndef CLINUXSHIMS_H
#define CLINUXSHIMS_H

#include <sys/types.h>

/// accept4(2) with SOCK_CLOEXEC.
int shim_accept_cloexec(int fd);

/// SO_PEERCRED of a connected AF_UNIX socket; returns 0 or -1 with errno set.
int shim_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/// adjtimex(2) read-only: returns the clock state (TIME_OK … TIME_ERROR) and the status bits.
int shim_clock_sync_state(int *status);

/// clock_settime(CLOCK_REALTIME): sets the wall clock (needs CAP_SYS_TIME).
int shim_set_wall_clock(long long seconds, long nanoseconds);

#endif
