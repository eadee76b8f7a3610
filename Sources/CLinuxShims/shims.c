#define _GNU_SOURCE
#include "CLinuxShims.h"

#include <sys/socket.h>
#include <sys/timex.h>
#include <time.h>

int shim_accept_cloexec(int fd) { return accept4(fd, NULL, NULL, SOCK_CLOEXEC); }

int shim_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid) {
  struct ucred credentials;
  socklen_t length = sizeof credentials;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
  *pid = credentials.pid;
  *uid = credentials.uid;
  *gid = credentials.gid;
  return 0;
}

int shim_clock_sync_state(int *status) {
  struct timex info = {0};
  int state = adjtimex(&info);
  *status = info.status;
  return state;
}

int shim_set_wall_clock(long long seconds, long nanoseconds) {
  struct timespec spec = {.tv_sec = (time_t)seconds, .tv_nsec = nanoseconds};
  return clock_settime(CLOCK_REALTIME, &spec);
}
