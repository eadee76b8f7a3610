#!/bin/bash
# Boot the board VM once; becomes the QEMU process (exec), so the caller can
# wait for it or SIGKILL it (a power cut).
#   boot-vm.sh KERNEL INITRD IMAGE SHARE_DIR [options]
#     --snapshot          throw the guest's disk writes away at exit
#     --gps-socket PATH   guest /dev/ttyS1 (arm64: ttyS0) = unix socket PATH (host feeds NMEA)
#     --append "ARGS"     extra kernel command line
#     --monitor PATH      QEMU's monitor on unix socket PATH (usb-plug.py plugs sticks
#                         into the guest's xHCI controller through it)
# Console (ttyS0; arm64: ttyAMA0) goes to SHARE_DIR/../console-<image>.log unless --console FILE.
set -euo pipefail
kernel=$1 initrd=$2 image=$3 share=$4; shift 4
snapshot='' gps_socket='' append='' console='' monitor=(-monitor none)
while (($#)); do
  case $1 in
    --snapshot) snapshot=,snapshot=on ;;
    --gps-socket) gps_socket=$2; shift ;;
    --append) append=$2; shift ;;
    --console) console=$2; shift ;;
    --monitor) monitor=(-monitor "unix:$2,server=on,wait=off"); shift ;;
    *) echo "boot-vm.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
console=${console:-$share/../console.log}
# The board's CPU (BOARD_VM_ARCH). amd64: a PC, console on the first 16550
# (ttyS0), the GPS receiver on the second (ttyS1). arm64: QEMU's `virt` board
# with a Cortex-A72 (a Pi 4's core), console on its PL011 (ttyAMA0); virt has
# one UART, so the receiver is a PCI 16550 (pci-serial), the guest's 8250_pci:
# /dev/ttyS0 (the image's board files say so, assemble-image.sh).
gps_chardev=(-chardev "socket,id=gps,path=$gps_socket,server=on,wait=off")
if [[ ${BOARD_VM_ARCH:-amd64} == arm64 ]]; then
  machine=(qemu-system-aarch64 -M virt -cpu cortex-a72) tty=ttyAMA0
  gps=()
  [[ -n $gps_socket ]] && gps=("${gps_chardev[@]}" -device pci-serial,chardev=gps)
else
  machine=(qemu-system-x86_64 -cpu max) tty=ttyS0
  gps=(-serial null)
  [[ -n $gps_socket ]] && gps=("${gps_chardev[@]}" -serial chardev:gps)
fi

# TCG: this machine's /dev/kvm does not boot stock kernels.
# cache=writeback: QEMU honours the guest's flushes, so an fsync in the guest
# means what it means on a real disk; writes it had not submitted are lost
# when QEMU is killed, like a pulled battery. (No qcow2 overlay for the cut
# image: its metadata lives in QEMU's memory and a kill would test QEMU.)
exec "${machine[@]}" \
  -accel tcg,thread=multi -smp 2 -m 1024 \
  -display none "${monitor[@]}" -no-reboot -nic none \
  -device qemu-xhci,id=xhci \
  -kernel "$kernel" -initrd "$initrd" \
  -append "console=$tty quiet panic=-1 systemd.show_status=0 $append" \
  -drive "file=$image,format=raw,if=virtio,cache=writeback$snapshot" \
  -virtfs "local,path=$share,mount_tag=hil,security_model=none,id=hil" \
  -serial "file:$console" "${gps[@]}" \
  < /dev/null
