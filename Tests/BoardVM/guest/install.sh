#!/bin/bash
# Install the test-only payload into a board root tree: the runner, the
# tests, the power-cut helpers, their units and the 9p share mount.
# Usage: install.sh ROOT
set -euo pipefail
root=${1:?usage: install.sh ROOT}
here=$(cd "$(dirname "$0")" && pwd)
dest=$root/usr/lib/workoutd-hil

rm -rf "$dest"; mkdir -p "$dest"
cp -r "$here/lib.sh" "$here/run.sh" "$here/wkd.py" "$here/uinput_keys.py" "$here/ble_strap.py" "$here/ble_link.py" "$here/ant_stick.py" "$here/tests" "$here/powercut" "$dest/"
for unit in "$here"/units/*.service; do
  install -m 0644 "$unit" "$root/etc/systemd/system/"
  ln -sf "/etc/systemd/system/$(basename "$unit")" "$root/etc/systemd/system/multi-user.target.wants/"
done
# The host's per-run directory, shared over virtio-9p (virtiofs is not in bookworm).
mkdir -p "$root/mnt/hil"
echo "hil /mnt/hil 9p trans=virtio,version=9p2000.L,msize=262144,nofail,x-systemd.device-timeout=10s 0 0" \
  > "$root/etc/fstab"
# Nothing in the test VM may wake up on its own and skew a test.
# (and what only costs boot time under emulation: LVM snapshot clean-up, binfmt)
for unit in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer man-db.timer \
            systemd-timesyncd.service e2scrub_reap.service systemd-binfmt.service \
            proc-sys-fs-binfmt_misc.automount; do
  ln -sf /dev/null "$root/etc/systemd/system/$unit"
done
