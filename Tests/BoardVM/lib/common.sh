# shellcheck shell=bash
# Shared by the host-side board-VM scripts: paths, logging, cache keys.
# Sourced, never executed.

BOARDVM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPO_DIR=$(cd "$BOARDVM_DIR/../.." && pwd)
BOARD_DIR="$REPO_DIR/board/qemu-virt"
# The Debian release of the board image, its kernel and the project's build:
# bookworm (Debian 12, the default) or trixie (Debian 13). BOARD_VM_RELEASE.
SUITE=${BOARD_VM_RELEASE:-bookworm}
case $SUITE in
  bookworm | trixie) ;;
  *) echo "BOARD_VM_RELEASE='$SUITE': bookworm or trixie" >&2; exit 2 ;;
esac
# The board's CPU: amd64 (x86_64, the default) or arm64 (aarch64, a Pi's:
# qemu-system-aarch64 -M virt). BOARD_VM_ARCH. arm64 is trixie only: the
# arm64 package's Swift runtime needs trixie's glibc (see the Makefile).
BOARD_ARCH=${BOARD_VM_ARCH:-amd64}
case $BOARD_ARCH in
  amd64) ;;
  arm64) [[ $SUITE == trixie ]] ||
    { echo "BOARD_VM_ARCH=arm64 needs BOARD_VM_RELEASE=trixie (the arm64 package is built for trixie only)" >&2; exit 2; } ;;
  *) echo "BOARD_VM_ARCH='$BOARD_ARCH': amd64 or arm64" >&2; exit 2 ;;
esac
# Everything expensive lives outside the repo so a clone stays clean and a
# second run is fast; one cache per release. Override with WORKOUTD_BOARD_VM_CACHE.
if [[ $SUITE == bookworm ]]; then
  CACHE_DIR=${WORKOUTD_BOARD_VM_CACHE:-/var/tmp/workoutd-board-vm}
elif [[ $BOARD_ARCH != amd64 ]]; then
  CACHE_DIR=${WORKOUTD_BOARD_VM_CACHE:-/var/tmp/workoutd-board-vm-$SUITE-$BOARD_ARCH}
else
  CACHE_DIR=${WORKOUTD_BOARD_VM_CACHE:-/var/tmp/workoutd-board-vm-$SUITE}
fi

log() { printf '[board-vm %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# Short content hash of files, directory trees (path + content) and strings.
# Used to key caches by their inputs.
hash_inputs() {
  local item
  for item in "$@"; do
    if [[ -d $item ]]; then
      (cd "$item" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum)
    elif [[ -f $item ]]; then
      sha256sum < "$item"
    else
      printf '%s\n' "$item"
    fi
  done | sha256sum | cut -c1-16
}

# The Debian mirror this machine's apt already uses (deb822 or classic sources).
debian_mirror() {
  local mirror
  mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  [[ -n $mirror ]] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  echo "${mirror:-http://deb.debian.org/debian}"
}

# apt-get/apt-cache for the guest's release. Bookworm: the host's own apt (the
# host is bookworm). Another release: a private apt configuration in the cache
# (its own sources, lists and archive cache; the host's apt is left alone).
guest_apt() {   # guest_apt apt-get|apt-cache ARGS...
  local tool=$1; shift
  if [[ $SUITE == bookworm ]]; then "$tool" "$@"; return; fi
  local dir=$CACHE_DIR/apt arch=()
  # arm64: the guest's packages are arm64's; amd64's are listed too for the
  # tools that run on this host (linux-kbuild, the cross gcc's build root)
  [[ $BOARD_ARCH == amd64 ]] || arch=(-o APT::Architecture="$BOARD_ARCH" -o APT::Architectures="$BOARD_ARCH,amd64")
  "$tool" "${arch[@]}" -o Dir::Etc::SourceList="$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null \
    -o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache" \
    -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null "$@"
}
guest_apt_update() {   # once per run: the private lists follow the archive
  [[ $SUITE == bookworm ]] && return
  local dir=$CACHE_DIR/apt
  mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $(debian_mirror) $SUITE main" > "$dir/sources.list"
  guest_apt apt-get update -q > "$dir/update.log" 2>&1 || { tail -5 "$dir/update.log" >&2; die "apt-get update ($SUITE) failed"; }
}

# The kernel the guest boots: whatever the release's linux-image-$BOARD_ARCH points
# at today, so headers and source of the same version are always installable.
kernel_facts() {
  KPKG=$(guest_apt apt-cache depends "linux-image-$BOARD_ARCH" | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  [[ -n $KPKG ]] || die "cannot resolve linux-image-$BOARD_ARCH for $SUITE (apt-get update?)"
  KVER=${KPKG#linux-image-}
  KDEBVER=$(guest_apt apt-cache policy "$KPKG" | awk '/Candidate:/{print $2; exit}')
  KSERIES=$(cut -d. -f1,2 <<< "$KVER")   # 6.1.0-56-amd64 -> 6.1, 6.12.117+deb13-amd64 -> 6.12
  export KPKG KVER KDEBVER KSERIES BOARD_ARCH
}

# Remove the siblings of a cache entry: older builds keyed by old inputs.
prune_except() {
  find "$(dirname "$1")" -mindepth 1 -maxdepth 1 ! -path "$1" ! -path "$1.*" -exec rm -rf {} +
}

# Whether a boot's console shows the guest kernel panicking, and when.
# Seen with trixie's 6.12 under QEMU 7.2 multi-threaded TCG, about one boot
# in 30: an "Oops: int3" in early init (a breakpoint from the kernel patching
# its own code, hit by the other vCPU) or, later, a double fault inside the
# slab allocator's cmpxchg16b. Neither is reachable from user space, so such
# a boot may be booted again; the runners say so in their result lines.
# (The stage-1 init prints when it has mounted the disk: the kernel is booted
# quiet.)
kernel_panicked() {
  grep -q 'Kernel panic' "$1" 2>/dev/null
}
early_kernel_panic() {   # before the disk was mounted: nothing of the image ran
  kernel_panicked "$1" && ! grep -q 'stage1: /dev/vda mounted' "$1"
}
panic_summary() {   # "at 38 s, Oops: double fault ... in kmem_cache_alloc_node_noprof"
  local t what rip
  t=$(grep -m1 -E 'Oops|Kernel panic|BUG:' "$1" | sed -E 's/^\[ *([0-9]+)\..*/\1/')
  what=$(grep -m1 -o -E 'Oops: [a-z0-9 ]+|BUG: [A-Za-z0-9 ]+|sysrq: Trigger a crash' "$1" || echo 'Kernel panic')
  rip=$(grep -m1 -o -E 'RIP: 0010:[A-Za-z0-9_.]+' "$1" | sed 's/RIP: 0010:/ in /')
  echo "at ${t:-?} s, $what$rip"
}

# A chroot into an arm64 tree runs its programs under qemu-user (binfmt_misc,
# qemu-user-static). This host's aarch64 entry has no F flag: the kernel opens
# the interpreter by its path inside the chroot, so it is copied there.
QEMU_USER_PATH=usr/libexec/qemu-binfmt/aarch64-binfmt-P
qemu_user_into() { install -D -m 0755 /usr/bin/qemu-aarch64-static "$1/$QEMU_USER_PATH"; }
qemu_user_out() { rm -f "$1/$QEMU_USER_PATH"; rmdir "$1/usr/libexec/qemu-binfmt" 2>/dev/null || true; }

elapsed_since() { echo $(( $(date +%s) - $1 )); }

# private_board DIR IMAGE FEED_SECONDS: for a series of boots cut short (power-cut.sh,
# upload-cut.sh), a private raw copy of IMAGE in DIR (the cached image must stay clean; raw, not
# a qcow2 overlay), its share, and one GPS feeder for every boot, which reconnects to each new
# QEMU and keeps the receiver's clock running forward across cuts. Sets share, disk, gps and
# qemu (the caller sets it to each boot's pid); at exit the QEMU is killed, the feeder stopped
# and the copy removed.
private_board() {
  local dir=$1 image=$2 seconds=$3
  share=$dir/share disk=$dir/cut.img gps=$dir/gps.sock qemu=
  rm -rf "$dir"; mkdir -p "$share"
  cp --sparse=always "$image" "$disk"
  trap private_board_cleanup EXIT
  /usr/bin/python3 "$BOARDVM_DIR/host/gps-feed.py" "$gps" "$BOARDVM_DIR/fixtures/bundg_zeus_9.log" \
    --max-seconds "$seconds" 2> "$dir/gps-feed.log" &
}
private_board_cleanup() {
  [[ -n $qemu ]] && { kill -KILL "$qemu" 2>/dev/null || true; }
  touch "$gps.stop"; wait 2>/dev/null || true
  rm -f "$disk"
}
