// Small C helpers for Linux calls that Swift's Glibc module does not expose (they need
// _GNU_SOURCE or live in headers the module map leaves out).
#ifndef CLINUXSHIMS_H
#define CLINUXSHIMS_H

#include <signal.h>
#include <spawn.h>
#include <stddef.h>
#include <sys/types.h>

/// Names the calling thread (prctl PR_SET_NAME; at most 15 characters are kept).
void shim_name_this_thread(const char *name);

/// malloc_trim(3) with no padding: gives the free memory of every malloc arena back to the
/// kernel (a thread's arena keeps what a burst of work freed). Returns 1 if any was released.
int shim_release_free_heap(void);
/// mallopt(M_ARENA_MAX, 1): every thread allocates from the one malloc arena. Returns 1 if set.
int shim_use_one_malloc_arena(void);
/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34): the child closes every descriptor
/// from `lowest` up before it runs the program, so it holds none of the parent's that are not
/// close-on-exec (Foundation's `Pipe` makes its pipes so). 0 or an errno value.
int shim_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest);
/// syncfs(2): writes out the whole file system `fd` is on (glibc declares it only with
/// _GNU_SOURCE, which Swift's Glibc module does not see).
int shim_syncfs(int fd);

/// eventfd(2), non-blocking and close-on-exec: a descriptor poll(2) can wait on beside others,
/// made readable by `shim_event_signal`. Returns the fd or -1 with errno set.
int shim_event_open(void);

/// A non-blocking NETLINK_ROUTE socket bound to the kernel's announcements of IPv4 and IPv6
/// addresses and routes (rtnetlink(7)); the descriptor, or -1 with errno set.
int shim_netlink_route_watch(void);

/// Adds 1 to the eventfd's counter (makes it readable); returns 0 or -1 with errno set.
int shim_event_signal(int fd);

/// signalfd(2), non-blocking and close-on-exec, for the (blocked) signals in `set`: a pending
/// one makes it readable. Returns the fd or -1 with errno set.
int shim_signal_open(const sigset_t *set);
/// Takes one pending signal from a signalfd: its number, or -1 with errno set (EAGAIN: none).
int shim_signal_take(int fd);

/// A 32-bit word threads wait on (futex(2)), read and changed with sequentially consistent
/// atomics. `shim_word_wait` sleeps while the word holds `expected`, until woken or until
/// `deadline` (CLOCK_MONOTONIC seconds, absolute; infinity or NaN: none). Returns 0 when woken
/// or when the word no longer held `expected`, ETIMEDOUT when the deadline passed first.
int shim_word_wait(unsigned int *word, unsigned int expected, double deadline);
/// Wakes every thread waiting on the word.
void shim_word_wake(unsigned int *word);
unsigned int shim_word_load(unsigned int *word);
/// Adds `value` (wrapping) and returns the new value.
unsigned int shim_word_add(unsigned int *word, unsigned int value);

/// SO_TIMESTAMPNS on a socket: the kernel stamps each packet with its arrival on CLOCK_REALTIME,
/// so a reader that takes its data later still knows when it came. 0 or -1 with errno set.
int shim_socket_stamp_arrivals(int fd);

/// recvmsg(2) with MSG_DONTWAIT of up to `length` bytes. Returns the bytes read, 0 at the end of
/// the stream, or -1 with errno set (EAGAIN: nothing waiting). When the kernel stamped the data
/// (SO_TIMESTAMPNS; for TCP the stamp of the newest packet read), `*arrival` is set to it,
/// CLOCK_REALTIME seconds; otherwise it is left as it was.
ssize_t shim_receive_stamped(int fd, void *buffer, size_t length, double *arrival);

/// accept4(2) with SOCK_CLOEXEC.
int shim_accept_cloexec(int fd);
/// accept4(2) with SOCK_CLOEXEC, writing the peer's address as text ("192.0.2.7", "fe80::1";
/// an IPv4-mapped IPv6 address as the IPv4 one) into `address` (`length` bytes; 46 hold any).
int shim_accept_peer(int fd, char *address, size_t length);

/// SO_PEERCRED of a connected AF_UNIX socket; returns 0 or -1 with errno set.
int shim_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/// adjtimex(2) read-only: returns the clock state (TIME_OK … TIME_ERROR) and the status bits.
int shim_clock_sync_state(int *status);

/// I2C (i2c-dev): select the peripheral address for later transfers (ioctl I2C_SLAVE).
int shim_i2c_set_address(int fd, int address);

/// SMBus "read byte data": returns the byte (0–255) or -1 with errno set.
int shim_i2c_read_byte_data(int fd, unsigned char command);

/// SMBus "write byte data": returns 0 or -1 with errno set.
int shim_i2c_write_byte_data(int fd, unsigned char command, unsigned char value);

/// SMBus "read I2C block data" of up to 32 bytes from register `command` into `buffer`;
/// returns the number of bytes read or -1 with errno set.
int shim_i2c_read_block(int fd, unsigned char command, unsigned char length, unsigned char *buffer);

/// The adapter's functionality bits (ioctl I2C_FUNCS), or 0 with errno set on failure.
unsigned long shim_i2c_functionality(int fd);

/// Whether `functionality` includes SMBus read/write byte data and I2C block reads.
int shim_i2c_supports_smbus_block(unsigned long functionality);

/// evdev: makes event timestamps CLOCK_MONOTONIC (EVIOCSCLOCKID); 0 or -1 with errno.
int shim_input_use_monotonic_clock(int fd);

/// evdev: reads one `struct input_event` (its layout differs between 32- and 64-bit ABIs,
/// so it is read in C). Returns 1 with the fields filled, 0 when none is waiting (EAGAIN),
/// or -1 with errno set.
int shim_input_read(int fd, unsigned short *type, unsigned short *code, int *value, double *seconds);

/// evdev: whether key `code` is down now (EVIOCGKEY): 1, 0, or -1 with errno set.
int shim_input_key_is_down(int fd, unsigned short code);

/// The code of a key or button name ("KEY_PROG1", "BTN_0", ...) from a small table of the
/// ones gpio-keys overlays use, or -1.
int shim_input_key_code(const char *name);

/// usbfs (usbfs.c): USBDEVFS_DISCONNECT_CLAIM of `interface`, taking it from a kernel driver
/// but not from another usbfs user. 0 or -1 with errno set.
int shim_usb_claim_interface(int fd, unsigned int interface);
/// USBDEVFS_RELEASEINTERFACE. 0 or -1 with errno set.
int shim_usb_release_interface(int fd, unsigned int interface);
/// USBDEVFS_BULK: one synchronous bulk transfer on `endpoint` (bit 7 set: IN), `timeout` ms
/// (0: none). The bytes transferred, or -1 with errno set (ETIMEDOUT, ENODEV, EPIPE: a stall).
int shim_usb_bulk(int fd, unsigned char endpoint, void *data, unsigned int length, unsigned int timeout);
/// The size of a `struct usbdevfs_urb`, for the caller to keep one where it stays put while the
/// kernel holds it (from submit to reap).
size_t shim_usb_urb_size(void);
/// USBDEVFS_SUBMITURB of a bulk URB made in `urb` for `length` bytes of `buffer`. 0 or -1.
int shim_usb_submit_bulk(int fd, void *urb, unsigned char endpoint, void *buffer, int length);
/// USBDEVFS_DISCARDURB. 0 or -1 with errno set (EINVAL: it had already completed).
int shim_usb_discard(int fd, void *urb);
/// USBDEVFS_REAPURBNDELAY: a completed URB's address in `*urb`, its data copied into its
/// buffer. 0, or -1 with errno set (EAGAIN: none has completed; ENODEV: the device is gone).
int shim_usb_reap(int fd, void **urb);
/// A reaped URB's status (0, or a negative errno: -ENODEV, -ESHUTDOWN, -EPIPE, -ENOENT when
/// discarded) and the bytes it transferred.
void shim_usb_urb_result(const void *urb, int *status, int *actual_length);

#endif
