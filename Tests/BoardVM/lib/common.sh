# shellcheck shell=bash
# Shared by the host-side board-VM scripts: paths, logging, cache keys.
# Sourced, never executed.

BOARDVM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPO_DIR=$(cd "$BOARDVM_DIR/../.." && pwd)
BOARD_DIR="$REPO_DIR/board/qemu-virt"
# Everything expensive lives outside the repo so a clone stays clean and a
# second run is fast. Override with WORKOUTD_BOARD_VM_CACHE.
CACHE_DIR=${WORKOUTD_BOARD_VM_CACHE:-/var/tmp/workoutd-board-vm}
SUITE=bookworm

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

# The kernel the guest boots: whatever Debian's linux-image-amd64 points at
# today, so headers and source of the same version are always installable.
kernel_facts() {
  KPKG=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  [[ -n $KPKG ]] || die "cannot resolve linux-image-amd64 (apt-get update?)"
  KVER=${KPKG#linux-image-}
  KDEBVER=$(apt-cache policy "$KPKG" | awk '/Candidate:/{print $2; exit}')
  KSERIES=$(cut -d. -f1,2 <<< "$KVER")   # 6.1.0-56-amd64 -> 6.1
  export KPKG KVER KDEBVER KSERIES
}

# Remove the siblings of a cache entry: older builds keyed by old inputs.
prune_except() {
  find "$(dirname "$1")" -mindepth 1 -maxdepth 1 ! -path "$1" ! -path "$1.*" -exec rm -rf {} +
}

elapsed_since() { echo $(( $(date +%s) - $1 )); }
