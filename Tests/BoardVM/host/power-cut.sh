#!/bin/bash
# Power-cut series: boot a private raw copy of the board image, let the guest
# record (powercut/record.sh), SIGKILL QEMU at a random moment, boot the same
# disk again, CUTS times; each boot's powercut/precheck.sh reports what the
# previous cut took. Prints one result line per series on stdout, the per-cut
# numbers on stderr.
# Usage: power-cut.sh KERNEL INITRD IMAGE CUTS RUN_DIR
set -euo pipefail
# shellcheck source=../lib/common.sh
source "$(dirname "$0")/../lib/common.sh"
kernel=$1 initrd=$2 image=$3 cuts=$4 dir=$5
here=$BOARDVM_DIR/host
private_board "$dir" "$image" 7200

# A boot whose guest kernel panicked (kernel_panicked: TCG, not the software
# under test) is booted again, at most twice a series; the result lines name
# such boots. A panic after the disk was mounted is one more abrupt stop for
# the disk, unmeasured: what that boot had noted is kept aside (boot-N-panic-K,
# ledger/workoutd-panic.jsonl), and the boot run again is measured against the
# last boot that ran to its cut, whose acknowledged data must still be there.
retried=()
retry_after_panic() {   # retry_after_panic BOOT: whether to boot BOOT again
  kernel_panicked "$dir/console-$1.log" && ((${#retried[@]} < 2)) || return 1
  local n=${#retried[@]} why ledger=$share/ledger/workoutd.jsonl
  why=$(panic_summary "$dir/console-$1.log")
  mv "$dir/console-$1.log" "$dir/console-$1-panic-$n.log"
  if [[ -d $share/boot-$1 ]]; then mv "$share/boot-$1" "$share/boot-$1-panic-$n"; fi
  if [[ -f $ledger ]]; then
    grep "^{\"boot\":$1," "$ledger" >> "$share/ledger/workoutd-panic.jsonl" || true
    grep -v "^{\"boot\":$1," "$ledger" > "$ledger.new" || true
    mv "$ledger.new" "$ledger"
  fi
  retried+=("boot $1 $why")
  log "boot $1: the guest kernel panicked ($why; TCG: $dir/console-$1-panic-$n.log); booting it again"
}
for ((boot = 0; boot <= cuts; boot++)); do
  final=$((boot == cuts ? 1 : 0))
  panic=0
  [[ ${BOARD_VM_PANIC_BOOT:-} == "$boot" && ${#retried[@]} == 0 ]] && panic=1
  printf 'HIL_BOOT=%d\nHIL_FINAL=%d\nHIL_PANIC=%d\n' "$boot" "$final" "$panic" > "$share/env"
  t0=$(date +%s)
  "$here/boot-vm.sh" "$kernel" "$initrd" "$disk" "$share" --gps-socket "$gps" \
    --append workoutd.hil=powercut --console "$dir/console-$boot.log" &
  qemu=$!
  if ((final)); then
    timeout 300 tail --pid="$qemu" -f /dev/null || { kill -KILL "$qemu"; die "boot $boot did not power off"; }
    wait "$qemu" || true; qemu=
    if retry_after_panic "$boot"; then boot=$((boot - 1)); continue; fi
    log "boot $boot: checked and powered off after $(elapsed_since "$t0") s"
    break
  fi
  # wait for the guest to record, then pull the plug at a random moment
  until [[ -f $share/boot-$boot/state ]]; do
    if ! kill -0 "$qemu" 2>/dev/null; then
      wait "$qemu" 2>/dev/null || true; qemu=
      if retry_after_panic "$boot"; then boot=$((boot - 1)); continue 2; fi
      die "boot $boot: VM exited before recording (see $dir/console-$boot.log)"
    fi
    (( $(elapsed_since "$t0") < 300 )) || die "boot $boot: not recording after 300 s"
    sleep 0.5
  done
  recording=$(elapsed_since "$t0")
  delay=$(awk -v r="$RANDOM" 'BEGIN{printf "%.1f", 1 + 7 * r / 32767}')
  sleep "$delay"
  kill -KILL "$qemu"; wait "$qemu" 2>/dev/null || true; qemu=
  panicked=''
  kernel_panicked "$dir/console-$boot.log" &&
    panicked=" (the guest kernel had panicked first, $(panic_summary "$dir/console-$boot.log"): the panic was the cut)"
  log "boot $boot: recording after ${recording} s, power cut ${delay} s later$panicked"
done

# --- what each cut cost, as the next boot's precheck/postcheck saw it ----------
value() { sed -n "s/^$2=//p" "$share/boot-$1/$3.txt" 2>/dev/null | tail -n 1; }
control_lost=() unsynced_lost=() workoutd_lost=() control_bad=() workoutd_bad=()
for ((cut = 1; cut <= cuts; cut++)); do
  integrity=$(value "$cut" writer_full_integrity precheck)
  lost=$(value "$cut" writer_full_lost precheck)
  control_lost+=("${lost:-?}")
  unsynced_lost+=("$(value "$cut" writer_off_lost precheck)")
  [[ $integrity == ok && $lost == 0 ]] || control_bad+=("cut $cut: integrity '${integrity:-?}', ${lost:-?} rows lost")
  if [[ -f $share/boot-$cut/precheck.txt ]] && grep -q '^workoutd_' "$share/boot-$cut/precheck.txt"; then
    workoutd_lost+=("$(value "$cut" workoutd_lost_seconds precheck)")
    for key in workoutd_cut_ok:precheck workoutd_resume_ok:postcheck; do
      verdict=$(value "$cut" "${key%:*}" "${key#*:}")
      [[ $verdict == yes* ]] || workoutd_bad+=("cut $cut: ${verdict:-no ${key%:*} reported}")
    done
  fi
  log "cut $cut: $(paste -sd' ' "$share/boot-$cut/precheck.txt" "$share/boot-$cut/postcheck.txt" 2>/dev/null)"
done

retries=''
((${#retried[@]})) && retries="; booted again after a guest kernel panic: ${retried[*]}"
if ((${#control_bad[@]})); then
  echo "powercut-control: FAIL (${control_bad[*]:0:3})"
else
  echo "powercut-control: PASS ($cuts cuts, stand-in writer synchronous=FULL: integrity ok, committed rows lost per cut: ${control_lost[*]}$retries)"
fi
log "unsynced control (synchronous=OFF, not a test): rows lost per cut: ${unsynced_lost[*]}"
if [[ ! -f $(dirname "$image")/has-workoutd ]]; then
  echo "powercut-workoutd: SKIP (no /usr/bin/workoutd in the image)"
elif ((${#workoutd_bad[@]})); then
  echo "powercut-workoutd: FAIL (${workoutd_bad[*]:0:3}; seconds lost per cut: ${workoutd_lost[*]})"
else
  echo "powercut-workoutd: PASS ($cuts cuts: integrity ok, session resumed; seconds of points lost per cut: ${workoutd_lost[*]}$retries)"
fi
