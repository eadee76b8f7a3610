#ifndef WORKOUTD_CBLUETOOTH_H
#define WORKOUTD_CBLUETOOTH_H

/* The Bluetooth sockets workoutd uses, behind plain C types: the structures and constants come
 * from BlueZ's headers (libbluetooth-dev) in bluetooth.c; no libbluetooth function is called, so
 * nothing is linked. */

/* Opens an L2CAP socket on the LE ATT fixed channel (CID 4, Core v5.4 Vol 3 Part A 2.1),
 * non-blocking and close-on-exec, bound to the local controller whose address is `local` (six
 * bytes, most significant first; NULL: any, which the kernel routes to the newest controller
 * that is up), and starts connecting it to the peer `address` (AA:BB:CC:DD:EE:FF is
 * {0xAA, ..., 0xFF}); `random_address` selects an LE random address, else public. The kernel
 * creates the LE link (or shares the one bluetoothd has). Returns the descriptor, the connect
 * in progress, or -1 with errno. */
int wkd_att_connect(const unsigned char address[6], int random_address, const unsigned char *local);

/* The controller hciN (`index`): its address (six bytes, most significant first) into
 * `address`, and whether it is up. Returns 1 up, 0 down, -1 with errno (ENODEV: no such
 * controller). */
int wkd_hci_device(int index, unsigned char address[6]);

/* The indexes of the controllers the kernel has, at most `capacity`, into `indexes`; returns
 * how many, or -1 with errno. */
int wkd_hci_devices(int *indexes, int capacity);

/* The outcome of a non-blocking connect once the socket polls writable: 0, or the errno. */
int wkd_socket_error(int fd);

/* The L2CAP incoming MTU of a connected socket (BT_RCVMTU), or -1 with errno. */
int wkd_l2cap_receive_mtu(int fd);

/* Opens a socket on the kernel's Bluetooth management channel (HCI_CHANNEL_CONTROL, BlueZ
 * doc/mgmt-api.txt), the channel bluetoothd itself uses: non-blocking and close-on-exec. Any
 * number of such sockets may be open beside bluetoothd; commands that change a controller
 * (Start Discovery) need CAP_NET_ADMIN. Returns the descriptor, or -1 with errno. */
int wkd_mgmt_open(void);

#endif
