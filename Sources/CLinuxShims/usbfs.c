// usbfs (/dev/bus/usb/BBB/DDD) through its ioctls (<linux/usbdevice_fs.h>; the kernel's
// drivers/usb/core/devio.c): the request numbers are function-like macros and the URB has a
// flexible array member, which Swift cannot import.
#define _GNU_SOURCE
#include "CLinuxShims.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/usbdevice_fs.h>

int shim_usb_claim_interface(int fd, unsigned int interface) {
  // Takes the interface from the kernel driver bound to it (usb-serial-simple binds the ANT
  // sticks as ttyUSB), never from another usbfs user: EBUSY then.
  struct usbdevfs_disconnect_claim claim = {
      .interface = interface, .flags = USBDEVFS_DISCONNECT_CLAIM_EXCEPT_DRIVER};
  strcpy(claim.driver, "usbfs");
  return ioctl(fd, USBDEVFS_DISCONNECT_CLAIM, &claim);
}

int shim_usb_release_interface(int fd, unsigned int interface) {
  return ioctl(fd, USBDEVFS_RELEASEINTERFACE, &interface);
}

int shim_usb_bulk(int fd, unsigned char endpoint, void *data, unsigned int length, unsigned int timeout) {
  struct usbdevfs_bulktransfer transfer = {.ep = endpoint, .len = length, .timeout = timeout, .data = data};
  return ioctl(fd, USBDEVFS_BULK, &transfer);
}

size_t shim_usb_urb_size(void) { return sizeof(struct usbdevfs_urb); }

int shim_usb_submit_bulk(int fd, void *urb, unsigned char endpoint, void *buffer, int length) {
  struct usbdevfs_urb *u = urb;
  memset(u, 0, sizeof *u);
  u->type = USBDEVFS_URB_TYPE_BULK;
  u->endpoint = endpoint;
  u->buffer = buffer;
  u->buffer_length = length;
  return ioctl(fd, USBDEVFS_SUBMITURB, u);
}

int shim_usb_discard(int fd, void *urb) { return ioctl(fd, USBDEVFS_DISCARDURB, urb); }

int shim_usb_reap(int fd, void **urb) { return ioctl(fd, USBDEVFS_REAPURBNDELAY, urb); }

void shim_usb_urb_result(const void *urb, int *status, int *actual_length) {
  const struct usbdevfs_urb *u = urb;
  *status = u->status;
  *actual_length = u->actual_length;
}
