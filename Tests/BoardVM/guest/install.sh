#!/bin/bash
# Install the test-only payload into a board root tree: the runner, the
# tests, the power-cut helpers, their units and the 9p share mount.
# Usage: install.sh ROOT
set -euo pipefail
root=${1:?usage: install.sh ROOT}
here=$(cd "$(dirname "$0")" && pwd)
dest=$root/usr/lib/workoutd-hil

rm -rf "$dest"; mkdir -p "$dest"
cp -r "$here/lib.sh" "$here/run.sh" "$here/wkd.py" "$here/uinput_keys.py" "$here/ble_strap.py" "$here/ble_link.py" "$here/ant_stick.py" "$here/imu_motion.py" "$here/tests" "$here/powercut" "$dest/"
# The fake platforms the upload test sends rides to (Tests/Platforms), and what they serve:
# a test CA and a certificate it signed for the address the upload test gives a dummy
# interface, made here (the guest has no openssl command) as Tests/Support/TestCertificates
# makes them; the CA is what the service's [upload] ca_file names in that test.
mkdir -p "$dest/platforms" "$dest/upload-certs"
cp "$here/../../Platforms/fake_platform_base.py" "$here/../../Platforms/fake_intervals_icu.py" "$dest/platforms/"
certs=$dest/upload-certs
key=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
printf 'subjectAltName=IP:198.51.100.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > "$certs/server.ext"
openssl req -x509 "${key[@]}" -keyout "$certs/ca.key" -out "$certs/ca.pem" -days 3650 -subj "/CN=workoutd board VM test CA" 2> /dev/null
openssl req "${key[@]}" -keyout "$certs/server.key" -out "$certs/server.csr" -subj "/CN=198.51.100.1" 2> /dev/null
openssl x509 -req -in "$certs/server.csr" -CA "$certs/ca.pem" -CAkey "$certs/ca.key" -CAcreateserial \
  -out "$certs/server.pem" -days 3650 -extfile "$certs/server.ext" 2> /dev/null
rm -f "$certs/ca.key" "$certs/server.csr" "$certs/ca.srl"
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
