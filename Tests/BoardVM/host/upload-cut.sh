#!/bin/bash
# A power cut mid-upload: boot a private raw copy of the board image in
# workoutd.hil=uploadcut mode (guest powercut/upload.sh), wait until the guest
# says its ride's upload is under way, SIGKILL QEMU a random 1 to 15 s later,
# and boot the same disk again to see the job finish. Prints the guest's
# verdict line on stdout.
# Usage: upload-cut.sh KERNEL INITRD IMAGE RUN_DIR
set -euo pipefail
# shellcheck source=../lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
kernel=$1 initrd=$2 image=$3 dir=$4
here=$BOARDVM_DIR/host
private_board "$dir" "$image" 3600

fail() { echo "upload-powercut: FAIL ($*; see $dir)"; exit 0; }
boot() {   # boot N FINAL
  printf 'HIL_BOOT=%d\nHIL_FINAL=%d\nHIL_PANIC=0\n' "$1" "$2" > "$share/env"
  "$here/boot-vm.sh" "$kernel" "$initrd" "$disk" "$share" --gps-socket "$gps" \
    --append workoutd.hil=uploadcut --console "$dir/console-$1.log" &
  qemu=$!
}
# A guest kernel panic under TCG is not the software under test: such a boot runs again once
# (boot 0 on a fresh copy of the image, for it may have begun the ride).
panicked_again=''
for attempt in 1 2; do
  t0=$(date +%s)
  boot 0 0
  until [[ -f $share/boot-0/state ]]; do
    if ! kill -0 "$qemu" 2>/dev/null; then
      wait "$qemu" 2>/dev/null || true; qemu=
      break
    fi
    (( $(elapsed_since "$t0") < 480 )) || fail "boot 0: the upload had not begun after 480 s"
    sleep 0.5
  done
  if [[ -z $qemu ]] && kernel_panicked "$dir/console-0.log" && [[ $attempt == 1 ]]; then
    log "upload cut, boot 0: the guest kernel panicked ($(panic_summary "$dir/console-0.log")); again"
    mv "$dir/console-0.log" "$dir/console-0-panic.log"; rm -rf "${share:?}"/*
    cp --sparse=always "$image" "$disk"; panicked_again=' (boot 0 again after a guest kernel panic)'
    continue
  fi
  [[ -n $qemu ]] || fail "boot 0: the VM exited before the upload began"
  break
done
[[ $(cat "$share/boot-0/state") == UPLOADING ]] || fail "$(cat "$share/boot-0/result" 2>/dev/null || echo 'boot 0 failed')"
delay=$(awk -v r="$RANDOM" 'BEGIN{printf "%.1f", 1 + 14 * r / 32767}')
echo "$delay" > "$share/cut-delay"
sleep "$delay"
kill -KILL "$qemu"; wait "$qemu" 2>/dev/null || true; qemu=
log "upload cut: the upload began after $(elapsed_since "$t0") s, power cut $delay s later"

for attempt in 1 2; do
  t0=$(date +%s)
  boot 1 1
  timeout 400 tail --pid="$qemu" -f /dev/null || { kill -KILL "$qemu"; fail "boot 1 did not power off in 400 s"; }
  wait "$qemu" || true; qemu=
  if [[ ! -f $share/boot-1/result ]] && kernel_panicked "$dir/console-1.log" && [[ $attempt == 1 ]]; then
    log "upload cut, boot 1: the guest kernel panicked ($(panic_summary "$dir/console-1.log")); again"
    mv "$dir/console-1.log" "$dir/console-1-panic.log"; panicked_again+=' (boot 1 again after a guest kernel panic)'
    continue
  fi
  break
done
log "upload cut: boot 1 checked and powered off after $(elapsed_since "$t0") s"
[[ -f $share/boot-1/result ]] || fail "boot 1 gave no verdict"
echo "$(cat "$share/boot-1/result")$panicked_again"
