#!/bin/bash
# workoutd board-VM hardware-in-the-loop suite (issues 5 and 12).
#
# Builds (or reuses from the cache) a Debian board image of BOARD_VM_RELEASE
# (bookworm, the default, or trixie: that release's kernel and userland) with
# systemd, the qemu-virt board's simulated devices and workoutd itself,
# installed from its Debian package (or with `make install`); boots it under
# QEMU (TCG) and runs
#   1. the board tests (guest/tests/[1-4]*): boot, gpsd fixes, buttons, BMP280;
#   2. the package tests (guest/tests/5*) on a clean image: install, upgrade
#      mid-ride, remove and purge;
#   3. the daemon tests (guest/tests/[6-9]*), SKIP while the image has no workoutd;
#      booted beside 1 and 2 (BOARD_VM_SERIAL=1: after them);
#   4. a power-cut series (host/power-cut.sh): POWER_CUTS kills of QEMU;
#   5. a power cut mid-upload (host/upload-cut.sh; UPLOAD_CUT=0 leaves it out).
# Prints "NAME: PASS|FAIL|SKIP (details)" per test, the wall time, and last
# "N passed, N failed"; exits non-zero if anything failed.
#
# Environment: BOARD_VM_RELEASE (bookworm or trixie), POWER_CUTS (default
# 10), WORKOUTD_BOARD_VM_CACHE (default /var/tmp/workoutd-board-vm, and
# /var/tmp/workoutd-board-vm-RELEASE for another release),
# BOARD_VM_BOOT_LIMIT (s a VM boot may take before it is killed, default
# 1800), BOARD_VM_SKIP_IS_FAILURE=1 to count SKIP as failure, BOARD_VM_TESTS to run
# only some guest tests (e.g. "20-gpsd-fixes"), BOARD_VM_INSTALL=deb (the
# default: the package of HEAD, see host/build-deb.sh) or make (make install
# of the working tree, bookworm only), BOARD_VM_DEB=FILE to install that
# package, BOARD_VM_PROJECT_STAGE=DIR to use a tree `make install DESTDIR=DIR`
# made instead of building the project, BOARD_VM_PREPARE_ONLY=1 to make (or check) the
# cached kernel, modules and base root tree and stop, BOARD_VM_ARCH=arm64 (with trixie) for
# an arm64 board (qemu-system-aarch64 -M virt, trixie's arm64 kernel and
# userland; cache /var/tmp/workoutd-board-vm-trixie-arm64; give the arm64
# package with BOARD_VM_DEB: it is not built here).
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "$0")/lib/common.sh"
suite_start=$(date +%s)
power_cuts=${POWER_CUTS:-10}
upload_cut=${UPLOAD_CUT:-1}
# A guard against a hung VM, not a budget: the longest boots (the daemon tests, the package's
# install, upgrade and removal) take about 21 minutes beside each other on an idle 2-core host,
# and over 30 beside a busy one (2 cores building for arm64).
boot_limit=${BOARD_VM_BOOT_LIMIT:-3300}
# How far the guests stretch their tests' deadlines (guest/run.sh): 2, as a guest beside two
# others and a build runs at about half its idle speed; BOARD_VM_TIME_SCALE=1 on an idle host.
time_scale=${BOARD_VM_TIME_SCALE:-2}
host=$BOARDVM_DIR/host
run_dir=$CACHE_DIR/runs/$(date +%Y%m%d-%H%M%S)
mkdir -p "$run_dir"
# keep the last few runs' logs
find "$CACHE_DIR/runs" -mindepth 1 -maxdepth 1 | sort | head -n -3 | xargs -r rm -rf
results=$run_dir/results.txt
: > "$results"
say() { echo "$*" | tee -a "$results"; }
step() { log "$* (+$(elapsed_since "$suite_start") s)"; current_step=$*; }
count() { grep -c -E "^[a-z0-9-]+: $1" "$results" || true; }
# A build step that fails stops the suite; still end with the summary line.
summary_done=0
on_exit() {
  ((summary_done)) && return
  say "board-vm-setup: FAIL (stopped during: ${current_step:-start}; see the log above)"
  echo "$(count PASS) passed, $(count FAIL) failed"
  exit 1
}
trap on_exit EXIT

# --- build (each step cached by its inputs) ------------------------------------
step "host packages ($SUITE board)"
"$host/install-deps.sh"
kernel_facts
step "kernel $KPKG $KDEBVER"
kroot=$("$host/fetch-kernel.sh")
gpio_sim=$("$host/build-gpio-sim.sh")
stage1=$("$host/build-stage1.sh" "$kroot")
step "base root tree"
base=$("$host/build-base-rootfs.sh")
if [[ ${BOARD_VM_PREPARE_ONLY:-0} == 1 ]]; then
  summary_done=1
  echo "board-vm ($SUITE $BOARD_ARCH): kernel, modules and base root tree ready in $CACHE_DIR ($(elapsed_since "$suite_start") s)"
  exit 0
fi
install_kind=${BOARD_VM_INSTALL:-deb}
[[ -n ${BOARD_VM_PROJECT_STAGE:-} ]] && install_kind=stage
[[ -n ${BOARD_VM_DEB:-} ]] && install_kind=deb
step "project build ($install_kind)"
project='' rc=0
case $install_kind in
  stage) project=stage:$BOARD_VM_PROJECT_STAGE; rc=4 ;;
  make)
    [[ $SUITE == bookworm ]] || die "BOARD_VM_INSTALL=make builds on the host: bookworm only"
    stage=$("$host/build-project.sh") || rc=$?
    [[ $rc == 0 ]] && project=stage:$stage ;;
  deb)
    debs=$("$host/build-deb.sh") || rc=$?
    [[ $rc == 0 ]] && project=deb:$debs ;;
  *) die "BOARD_VM_INSTALL=$install_kind: deb or make" ;;
esac
case $install_kind:$rc in
  make:0) say "project-install: PASS (swift build --static-swift-stdlib + make install DESTDIR)" ;;
  stage:4) log "using the installed tree ${project#stage:} (BOARD_VM_PROJECT_STAGE)" ;;
  make:3) say "project-install: SKIP (no install target in the Makefile yet)" ;;
  make:*) say "project-install: FAIL (build or make install failed, see $CACHE_DIR/project-build.log)" ;;
  deb:0)
    deb=$(compgen -G "$debs/workoutd_*.deb" | grep -v '+test1_' | head -1)
    lintian_e=$(grep -c '^E: ' "$debs/lintian.txt" || true) lintian_w=$(grep -c '^W: ' "$debs/lintian.txt" || true)
    lintian_i=$(grep -c -E '^[IXP]: ' "$debs/lintian.txt" || true)
    origin="built on $SUITE from HEAD"; [[ -n ${BOARD_VM_DEB:-} ]] && origin="given (BOARD_VM_DEB)"
    verdict=PASS; ((lintian_e == 0)) || verdict=FAIL
    say "project-package: $verdict ($(basename "$deb") $origin, Depends: $(dpkg-deb -f "$deb" Depends | grep -o -E 'lib(gpiod|gps)[a-z0-9]*' | xargs | tr ' ' ','); lintian: $lintian_e errors, $lintian_w warnings, $lintian_i infos)"
    [[ $verdict == PASS ]] || cat "$debs/lintian.txt" >&2 ;;
  deb:*) say "project-package: FAIL (the package build failed, see $CACHE_DIR/deb/*/build.log)" ;;
esac
step "image"
image=$("$host/assemble-image.sh" "$kroot" "$gpio_sim" "$base" ${project:+"$project"})
has_workoutd=0; [[ -f $(dirname "$image")/has-workoutd ]] && has_workoutd=1
clean_image=''; [[ -f $(dirname "$image")/has-packages ]] && clean_image=$(dirname "$image")/clean.img
kernel=$kroot/boot/vmlinuz-$KVER

# --- guest test boots ------------------------------------------------------------
# boot_suite LABEL IMAGE APPEND TEST...: one VM boot (disk snapshot) running the tests
boot_suite() {
  local label=$1 image=$2 append=$3; shift 3
  local dir=$run_dir/$label feed rc=0 t0 attempt
  mkdir -p "$dir/share"
  printf 'HIL_TESTS="%s"\nHIL_TIME_SCALE=%s\n' "$*" "$time_scale" > "$dir/share/env"
  for attempt in 1 2; do
    rm -f "$dir/gps.sock.stop"
    /usr/bin/python3 "$host/gps-feed.py" "$dir/gps.sock" "$BOARDVM_DIR/fixtures/bundg_zeus_9.log" \
      --max-seconds "$boot_limit" 2>> "$dir/gps-feed.log" &
    feed=$!
    # The host's hand on the USB port: sticks plugged and pulled at the guest's request.
    rm -rf "$dir/share/usb" "$dir/monitor.sock"
    /usr/bin/python3 "$host/usb-plug.py" "$dir/monitor.sock" "$dir/share" "$dir/usb-images" \
      2>> "$dir/usb-plug.log" &
    plugger=$!
    t0=$(date +%s) rc=0
    timeout -s KILL "$boot_limit" "$host/boot-vm.sh" "$kernel" "$stage1" "$image" "$dir/share" --snapshot \
      --gps-socket "$dir/gps.sock" --monitor "$dir/monitor.sock" --append "workoutd.hil=suite $append" \
      --console "$dir/console.log" || rc=$?
    touch "$dir/gps.sock.stop"; wait "$feed" || true
    mkdir -p "$dir/share/usb"; touch "$dir/share/usb/stop"; wait "$plugger" || true
    rm -rf "$dir/usb-images"
    step "$label boot: QEMU exited ($rc) after $(elapsed_since "$t0") s"
    # A guest kernel panic (TCG, see kernel_panicked) is not a test result:
    # boot once more on the same snapshot; the tests that had run are kept
    # aside with the console log, and the output says so.
    if ((attempt == 1)) && kernel_panicked "$dir/console.log"; then
      local why
      why=$(panic_summary "$dir/console.log")
      mv "$dir/console.log" "$dir/console-panic.log"
      if [[ -f $dir/share/results.txt ]]; then
        mv "$dir/share/results.txt" "$dir/results-before-panic.txt"
        [[ -d $dir/share/logs ]] && mv "$dir/share/logs" "$dir/logs-before-panic"
      fi
      say "note: the $label boot's guest kernel panicked ($why; TCG; $dir/console-panic.log); booted again"
      continue
    fi
    break
  done
  grep -E '^[a-z0-9-]+: (PASS|FAIL|SKIP)' "$dir/share/results.txt" 2>/dev/null | tee -a "$results" || true
  grep -qx HIL-DONE "$dir/share/results.txt" 2>/dev/null ||
    say "$label-vm: FAIL (the guest runner did not finish, QEMU exit $rc; see $dir/console.log)"
  # a failed test's log, for whoever reads the CI output
  local test
  for test in "$@"; do
    if grep -q "^${test#[0-9]*-}: FAIL" "$dir/share/results.txt" 2>/dev/null; then
      log "--- $dir/share/logs/$test.log (tail)"; tail -n 25 "$dir/share/logs/$test.log" >&2 || true
    fi
  done
}

tests_matching() {   # guest test names whose file name matches a glob
  local f
  for f in "$BOARDVM_DIR"/guest/tests/$1.sh; do
    [[ -f $f ]] || continue
    [[ " ${BOARD_VM_EXCLUDE:-} " == *" $(basename "$f" .sh) "* ]] && continue
    [[ -z ${BOARD_VM_TESTS:-} || " $BOARD_VM_TESTS " == *" $(basename "$f" .sh) "* ]] && basename "$f" .sh
  done
}

mapfile -t board_tests < <(tests_matching '[1-4]*')
mapfile -t package_tests < <(tests_matching '5*')
mapfile -t daemon_tests < <(tests_matching '[6-9]*')
# The board and package boots run beside the daemon boot (BOARD_VM_SERIAL=1: one after the
# other): their guests are independent snapshots, and the daemon tests mostly wait on rides
# replayed in real time. Their output is held and printed after the daemon boot's.
board_and_package_boots() {
  if ((${#board_tests[@]})); then
    step "board tests: ${board_tests[*]}"
    # the daemon would hold the button lines the board tests drive
    boot_suite board "$image" "systemd.mask=workoutd.service" "${board_tests[@]}"
  fi
  if ((${#package_tests[@]})); then
    if [[ -n $clean_image ]]; then
      step "package tests: ${package_tests[*]}"
      boot_suite package "$clean_image" "" "${package_tests[@]}"
    else
      for test in "${package_tests[@]}"; do say "${test#[0-9]*-}: SKIP (the project is not installed from its package: BOARD_VM_INSTALL=$install_kind)"; done
    fi
  fi
}
side=''
if [[ ${BOARD_VM_SERIAL:-0} == 1 || ${#daemon_tests[@]} == 0 || $has_workoutd == 0 ]]; then
  board_and_package_boots
else
  board_and_package_boots > "$run_dir/board-and-package.out" 2>&1 &
  side=$!
fi
if ((${#daemon_tests[@]})); then
  if ((has_workoutd)); then
    step "daemon tests: ${daemon_tests[*]}"
    boot_suite daemon "$image" "" "${daemon_tests[@]}"
  else
    for test in "${daemon_tests[@]}"; do say "${test#[0-9]*-}: SKIP (no /usr/bin/workoutd in the image)"; done
  fi
fi
if [[ -n $side ]]; then
  wait "$side" || say "board-and-package-boots: FAIL (stopped early; see $run_dir/board-and-package.out)"
  cat "$run_dir/board-and-package.out"
fi

# --- power cuts -------------------------------------------------------------------
if ((power_cuts > 0)); then
  step "power-cut series: $power_cuts cuts"
  "$host/power-cut.sh" "$kernel" "$stage1" "$image" "$power_cuts" "$run_dir/powercut" | tee -a "$results" ||
    say "powercut-harness: FAIL (see $run_dir/powercut)"
fi

# --- a power cut mid-upload ------------------------------------------------------------
if ((upload_cut > 0 && has_workoutd)); then
  step "power cut mid-upload"
  "$host/upload-cut.sh" "$kernel" "$stage1" "$image" "$run_dir/uploadcut" | tee -a "$results" ||
    say "upload-powercut: FAIL (the harness stopped; see $run_dir/uploadcut)"
fi

# --- summary ----------------------------------------------------------------------
passed=$(count PASS) failed=$(count FAIL) skipped=$(count SKIP)
summary_done=1
if [[ ${BOARD_VM_SKIP_IS_FAILURE:-0} == 1 ]]; then failed=$((failed + skipped)); skipped=0; fi
board=$SUITE; [[ $BOARD_ARCH == amd64 ]] || board="$SUITE $BOARD_ARCH"
echo "board-vm ($board): logs in $run_dir; $skipped skipped; wall time $(elapsed_since "$suite_start") s"
echo "$passed passed, $failed failed"
((failed == 0))
