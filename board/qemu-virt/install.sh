#!/bin/bash
# Install the qemu-virt board files into a root tree (what a board's image
# recipe does). Usage: install.sh ROOT
# The gpio-sim kernel module itself is built and installed by the image
# builder (Tests/BoardVM/host/), since it is tied to the kernel build.
set -euo pipefail
root=${1:?usage: install.sh ROOT}
here=$(cd "$(dirname "$0")" && pwd)

install -D -m 0755 "$here/setup.sh" "$root/usr/lib/workoutd-board/setup.sh"
install -D -m 0644 "$here/board.env" "$root/usr/lib/workoutd-board/board.env"
install -D -m 0644 "$here/README.md" "$root/usr/lib/workoutd-board/README.md"
install -D -m 0644 "$here/workoutd-board.service" "$root/usr/lib/systemd/system/workoutd-board.service"
install -D -m 0644 "$here/modules-load.d/workoutd-board.conf" "$root/etc/modules-load.d/workoutd-board.conf"
install -D -m 0644 "$here/modprobe.d/workoutd-board.conf" "$root/etc/modprobe.d/workoutd-board.conf"
install -D -m 0644 "$here/gpsd.default" "$root/etc/default/gpsd"
install -D -m 0644 "$here/61-workoutd-qemu-virt.rules" "$root/etc/udev/rules.d/61-workoutd-qemu-virt.rules"
# The board's daemon config replaces the generic default from `make install`.
install -D -m 0644 "$here/workoutd.toml" "$root/etc/workoutd/workoutd.toml"
echo workoutd-qemu-virt > "$root/etc/hostname"

# enable units offline, as a package's postinst would
mkdir -p "$root/etc/systemd/system/multi-user.target.wants" "$root/etc/systemd/system/sockets.target.wants"
ln -sf /usr/lib/systemd/system/workoutd-board.service "$root/etc/systemd/system/multi-user.target.wants/"
ln -sf /lib/systemd/system/gpsd.service "$root/etc/systemd/system/multi-user.target.wants/"
ln -sf /lib/systemd/system/gpsd.socket "$root/etc/systemd/system/sockets.target.wants/"
