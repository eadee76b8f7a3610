#define _GNU_SOURCE
#include "CBluetooth.h"

#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/l2cap.h>
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* The ATT fixed channel of an LE link (Core v5.4, Vol 3, Part A, 2.1, table 2.1). */
enum { att_cid = 4 };

/* Closes `fd` after a failure, keeping the failure's errno; returns -1 for the caller to pass on. */
static int close_failed(int fd) {
  int saved = errno;
  close(fd);
  errno = saved;
  return -1;
}

/* One ioctl of the HCI device registry on a raw HCI socket opened for it alone. */
static int hci_registry_ioctl(unsigned long request, void *argument) {
  int fd = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI);
  if (fd < 0) return -1;
  if (ioctl(fd, request, argument) < 0) return close_failed(fd);
  close(fd);
  return 0;
}

int wkd_att_connect(const unsigned char address[6], int random_address, const unsigned char *local_address) {
  int fd = socket(AF_BLUETOOTH, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, BTPROTO_L2CAP);
  if (fd < 0) return -1;

  /* Bind to the chosen controller (or any), LE, on the ATT CID: what makes the kernel open a
   * fixed channel, not a PSM. */
  struct sockaddr_l2 local;
  memset(&local, 0, sizeof local);
  local.l2_family = AF_BLUETOOTH;
  local.l2_cid = htobs(att_cid);
  local.l2_bdaddr_type = BDADDR_LE_PUBLIC;
  if (local_address)
    for (int i = 0; i < 6; i++) local.l2_bdaddr.b[i] = local_address[5 - i];
  if (bind(fd, (struct sockaddr *)&local, sizeof local) < 0) return close_failed(fd);

  struct sockaddr_l2 peer;
  memset(&peer, 0, sizeof peer);
  peer.l2_family = AF_BLUETOOTH;
  peer.l2_cid = htobs(att_cid);
  peer.l2_bdaddr_type = random_address ? BDADDR_LE_RANDOM : BDADDR_LE_PUBLIC;
  /* bdaddr_t holds the address least significant byte first. */
  for (int i = 0; i < 6; i++) peer.l2_bdaddr.b[i] = address[5 - i];
  if (connect(fd, (struct sockaddr *)&peer, sizeof peer) < 0 && errno != EINPROGRESS) return close_failed(fd);
  return fd;
}

int wkd_socket_error(int fd) {
  int error = 0;
  socklen_t length = sizeof error;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) < 0) return errno;
  return error;
}

int wkd_l2cap_receive_mtu(int fd) {
  uint16_t mtu = 0;
  socklen_t length = sizeof mtu;
  if (getsockopt(fd, SOL_BLUETOOTH, BT_RCVMTU, &mtu, &length) < 0) return -1;
  return mtu;
}

int wkd_mgmt_open(void) {
  int fd = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, BTPROTO_HCI);
  if (fd < 0) return -1;
  struct sockaddr_hci address;
  memset(&address, 0, sizeof address);
  address.hci_family = AF_BLUETOOTH;
  address.hci_dev = HCI_DEV_NONE;
  address.hci_channel = HCI_CHANNEL_CONTROL;
  if (bind(fd, (struct sockaddr *)&address, sizeof address) < 0) return close_failed(fd);
  return fd;
}

int wkd_hci_device(int index, unsigned char address[6]) {
  struct hci_dev_info info;
  memset(&info, 0, sizeof info);
  info.dev_id = (uint16_t)index;
  if (hci_registry_ioctl(HCIGETDEVINFO, &info) < 0) return -1;
  for (int i = 0; i < 6; i++) address[i] = info.bdaddr.b[5 - i];
  return (info.flags & (1u << HCI_UP)) ? 1 : 0;
}

int wkd_hci_devices(int *indexes, int capacity) {
  if (capacity <= 0 || capacity > HCI_MAX_DEV) capacity = HCI_MAX_DEV;
  /* struct hci_dev_list_req ends in a flexible array of hci_dev_req. */
  union {
    struct hci_dev_list_req list;
    unsigned char bytes[sizeof(struct hci_dev_list_req) + HCI_MAX_DEV * sizeof(struct hci_dev_req)];
  } request;
  memset(&request, 0, sizeof request);
  request.list.dev_num = (uint16_t)capacity;
  if (hci_registry_ioctl(HCIGETDEVLIST, &request) < 0) return -1;
  int count = request.list.dev_num < capacity ? request.list.dev_num : capacity;
  for (int i = 0; i < count; i++) indexes[i] = request.list.dev_req[i].dev_id;
  return count;
}
