#define _GNU_SOURCE
#include "CLinuxShims.h"

#include <spawn.h>

#include <sys/eventfd.h>
#include <sys/signalfd.h>

#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/timex.h>
#include <time.h>
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <linux/i2c.h>
#include <linux/i2c-dev.h>
#include <linux/input.h>
#include <unistd.h>
#include <malloc.h>
#include <math.h>
#include <limits.h>
#include <stdint.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

int shim_socket_stamp_arrivals(int fd) {
  int on = 1;
  return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
}

ssize_t shim_receive_stamped(int fd, void *buffer, size_t length, double *arrival) {
  struct iovec vector = {.iov_base = buffer, .iov_len = length};
  union {
    char bytes[CMSG_SPACE(sizeof(struct timespec))];
    struct cmsghdr align;
  } control;
  struct msghdr message = {
      .msg_iov = &vector, .msg_iovlen = 1, .msg_control = control.bytes, .msg_controllen = sizeof control.bytes};
  ssize_t got = recvmsg(fd, &message, MSG_DONTWAIT);
  if (got <= 0) return got;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&message); c != NULL; c = CMSG_NXTHDR(&message, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
      struct timespec stamp;
      memcpy(&stamp, CMSG_DATA(c), sizeof stamp);
      *arrival = (double)stamp.tv_sec + (double)stamp.tv_nsec / 1e9;
    }
  }
  return got;
}

int shim_accept_cloexec(int fd) { return accept4(fd, NULL, NULL, SOCK_CLOEXEC); }

int shim_accept_peer(int fd, char *address, size_t length) {
  struct sockaddr_storage peer;
  socklen_t size = sizeof peer;
  int client = accept4(fd, (struct sockaddr *)&peer, &size, SOCK_CLOEXEC);
  if (client < 0) return -1;
  address[0] = 0;
  if (peer.ss_family == AF_INET) {
    inet_ntop(AF_INET, &((struct sockaddr_in *)&peer)->sin_addr, address, length);
  } else if (peer.ss_family == AF_INET6) {
    const struct in6_addr *in6 = &((struct sockaddr_in6 *)&peer)->sin6_addr;
    // An IPv4 peer of a dual-stack socket is the same host as when it comes over IPv4.
    if (IN6_IS_ADDR_V4MAPPED(in6)) {
      inet_ntop(AF_INET, &in6->s6_addr[12], address, length);
    } else {
      inet_ntop(AF_INET6, in6, address, length);
    }
  }
  return client;
}

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


int shim_i2c_set_address(int fd, int address) { return ioctl(fd, I2C_SLAVE, address); }

// One SMBus transfer through ioctl(I2C_SMBUS) (Documentation/i2c/dev-interface.rst): what
// libi2c's i2c_smbus_access does, without linking it.
static int smbus_access(int fd, char read_write, unsigned char command, int size, union i2c_smbus_data *data) {
  struct i2c_smbus_ioctl_data args = {.read_write = read_write, .command = command, .size = size, .data = data};
  return ioctl(fd, I2C_SMBUS, &args);
}

int shim_i2c_read_byte_data(int fd, unsigned char command) {
  union i2c_smbus_data data;
  if (smbus_access(fd, I2C_SMBUS_READ, command, I2C_SMBUS_BYTE_DATA, &data) < 0) return -1;
  return data.byte;
}

int shim_i2c_write_byte_data(int fd, unsigned char command, unsigned char value) {
  union i2c_smbus_data data = {.byte = value};
  return smbus_access(fd, I2C_SMBUS_WRITE, command, I2C_SMBUS_BYTE_DATA, &data);
}

int shim_i2c_read_block(int fd, unsigned char command, unsigned char length, unsigned char *buffer) {
  union i2c_smbus_data data;
  if (length > I2C_SMBUS_BLOCK_MAX) length = I2C_SMBUS_BLOCK_MAX;
  data.block[0] = length;
  if (smbus_access(fd, I2C_SMBUS_READ, command, I2C_SMBUS_I2C_BLOCK_DATA, &data) < 0) return -1;
  unsigned char got = data.block[0] < length ? data.block[0] : length;
  memcpy(buffer, &data.block[1], got);
  return got;
}

unsigned long shim_i2c_functionality(int fd) {
  unsigned long functionality = 0;
  if (ioctl(fd, I2C_FUNCS, &functionality) < 0) return 0;
  return functionality;
}

int shim_i2c_supports_smbus_block(unsigned long functionality) {
  unsigned long needed = I2C_FUNC_SMBUS_READ_BYTE_DATA | I2C_FUNC_SMBUS_WRITE_BYTE_DATA | I2C_FUNC_SMBUS_READ_I2C_BLOCK;
  return (functionality & needed) == needed;
}

void shim_name_this_thread(const char *name) { prctl(PR_SET_NAME, name, 0, 0, 0); }

int shim_release_free_heap(void) { return malloc_trim(0); }

int shim_use_one_malloc_arena(void) { return mallopt(M_ARENA_MAX, 1); }

int shim_input_use_monotonic_clock(int fd) {
  int clock = CLOCK_MONOTONIC;
  return ioctl(fd, EVIOCSCLOCKID, &clock);
}

int shim_input_read(int fd, unsigned short *type, unsigned short *code, int *value, double *seconds) {
  struct input_event event;
  ssize_t got = read(fd, &event, sizeof event);
  if (got < 0) return errno == EAGAIN ? 0 : -1;
  if (got != (ssize_t)sizeof event) {
    errno = EIO;
    return -1;
  }
  *type = event.type;
  *code = event.code;
  *value = event.value;
  *seconds = (double)event.input_event_sec + (double)event.input_event_usec / 1e6;
  return 1;
}

int shim_input_key_is_down(int fd, unsigned short code) {
  unsigned char keys[KEY_MAX / 8 + 1];
  memset(keys, 0, sizeof keys);
  if (ioctl(fd, EVIOCGKEY(sizeof keys), keys) < 0) return -1;
  return (keys[code / 8] >> (code % 8)) & 1;
}

int shim_input_key_code(const char *name) {
  static const struct { const char *name; int code; } table[] = {
      {"KEY_PROG1", KEY_PROG1}, {"KEY_PROG2", KEY_PROG2}, {"KEY_PROG3", KEY_PROG3}, {"KEY_PROG4", KEY_PROG4},
      {"KEY_PLAYPAUSE", KEY_PLAYPAUSE}, {"KEY_STOP", KEY_STOP}, {"KEY_RECORD", KEY_RECORD},
      {"KEY_ENTER", KEY_ENTER}, {"KEY_SPACE", KEY_SPACE}, {"KEY_POWER", KEY_POWER},
      {"KEY_A", KEY_A}, {"KEY_B", KEY_B}, {"KEY_C", KEY_C}, {"KEY_F1", KEY_F1}, {"KEY_F2", KEY_F2},
      {"KEY_F3", KEY_F3}, {"BTN_0", BTN_0}, {"BTN_1", BTN_1}, {"BTN_2", BTN_2}, {"BTN_3", BTN_3},
      {"BTN_TRIGGER_HAPPY1", BTN_TRIGGER_HAPPY1}, {"BTN_TRIGGER_HAPPY2", BTN_TRIGGER_HAPPY2},
      {"BTN_TRIGGER_HAPPY3", BTN_TRIGGER_HAPPY3},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    if (strcmp(table[i].name, name) == 0) return table[i].code;
  }
  return -1;
}

int shim_netlink_route_watch(void) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
  if (fd < 0) return -1;
  struct sockaddr_nl address = {
      .nl_family = AF_NETLINK,
      .nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_IFADDR | RTMGRP_IPV6_ROUTE,
  };
  if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

int shim_event_open(void) {
  return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

int shim_event_signal(int fd) {
  uint64_t one = 1;
  return write(fd, &one, sizeof one) == (ssize_t)sizeof one ? 0 : -1;
}

int shim_signal_open(const sigset_t *set) {
  return signalfd(-1, set, SFD_CLOEXEC | SFD_NONBLOCK);
}

int shim_signal_take(int fd) {
  struct signalfd_siginfo info;
  ssize_t got = read(fd, &info, sizeof info);
  if (got != (ssize_t)sizeof info) {
    if (got >= 0) errno = EIO;
    return -1;
  }
  return (int)info.ssi_signo;
}


int shim_syncfs(int fd) { return syncfs(fd); }

int shim_word_wait(unsigned int *word, unsigned int expected, double deadline) {
  struct timespec at;
  struct timespec *until = NULL;
  if (isfinite(deadline)) {
    if (deadline < 0) deadline = 0;
    at.tv_sec = (time_t)deadline;
    at.tv_nsec = (long)((deadline - (double)at.tv_sec) * 1e9);
    if (at.tv_nsec >= 1000000000L) at.tv_nsec = 999999999L;
    until = &at;
  }
  for (;;) {
    // FUTEX_WAIT_BITSET takes an absolute time on CLOCK_MONOTONIC (no FUTEX_CLOCK_REALTIME).
    long result = syscall(SYS_futex, word, FUTEX_WAIT_BITSET_PRIVATE, expected, until, NULL,
                          FUTEX_BITSET_MATCH_ANY);
    if (result == 0) return 0;
    if (errno == EAGAIN) return 0;  // the word changed before the wait began
    if (errno == EINTR) continue;
    return errno;
  }
}

void shim_word_wake(unsigned int *word) {
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

unsigned int shim_word_load(unsigned int *word) { return __atomic_load_n(word, __ATOMIC_SEQ_CST); }

unsigned int shim_word_add(unsigned int *word, unsigned int value) {
  return __atomic_add_fetch(word, value, __ATOMIC_SEQ_CST);
}

int shim_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest) {
  return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
}
