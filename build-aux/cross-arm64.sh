#!/usr/bin/env bash
# Builds workoutd for arm64 (aarch64: every Raspberry Pi that runs Raspberry Pi OS today) on
# this x86_64 machine, with Debian's own Swift, and runs what it built under qemu-user.
#
# Two roots, made once and kept in $WORKOUTD_ARM64_CACHE (default /var/tmp/workoutd-arm64),
# each keyed by what it holds:
# - compiler/: Debian unstable (amd64) with `swiftlang` $SWIFTLANG_VERSION, Debian's Swift
#   compiler. It is the only Debian release with a Swift >= 6.2 (trixie has 6.0.3, too old for
#   GRDB's and swift-log's tools versions), and the compiler needs unstable's glibc to run.
# - sysroot/: Debian 13 trixie (amd64) with trixie's arm64 C libraries installed beside it
#   through dpkg's multiarch (libc6-dev:arm64, libsqlite3-dev:arm64, libgpiod-dev:arm64, ...),
#   and Swift's arm64 standard library, runtime and static libraries of the same version as
#   the compiler (`libswiftlang` and `swiftlang` for arm64, unpacked). What is built against it
#   runs on trixie's arm64 userland, which is today's Raspberry Pi OS; its dpkg database gives
#   the package's Depends (dpkg-shlibdeps) and it runs lintian.
# The build runs in compiler/ with the sysroot, this checkout and the Swift package mirror
# mounted at their own paths, through a Swift SDK (swift-sdk.json: target aarch64, the sysroot,
# the arm64 Swift resources, lld). The host's apt is never touched but for qemu-user-static
# and debootstrap.
#
# Usage: build-aux/cross-arm64.sh setup            make (or check) both roots
#        build-aux/cross-arm64.sh swift ARGS...    `swift ARGS` for aarch64 in compiler/
#        build-aux/cross-arm64.sh sysroot CMD...   CMD in sysroot/ (packaging, lintian)
#        build-aux/cross-arm64.sh run PROGRAM...   an aarch64 program here, under qemu-aarch64
#        build-aux/cross-arm64.sh host-packages    this machine's packages setup needs (apt)
# Needs root (debootstrap, chroot, mounts).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cache=${WORKOUTD_ARM64_CACHE:-/var/tmp/workoutd-arm64}
# Debian's swiftlang, pinned: the compiler (amd64) and the arm64 runtime must be this same
# version. `SWIFTLANG_VERSION=... setup` takes another (the roots are made again).
SWIFTLANG_VERSION=${SWIFTLANG_VERSION:-6.2.3-1+b1}
compiler=$cache/compiler
sysroot=$cache/sysroot
sdks=$cache/sdks
triple=aarch64-unknown-linux-gnu
# trixie's arm64 libraries the project links or its tests load, and what packaging needs.
sysroot_packages="libc6-dev:arm64 libgcc-14-dev:arm64 libstdc++-14-dev:arm64 libsqlite3-dev:arm64 \
  libgps-dev:arm64 libgpiod-dev:arm64 libbluetooth-dev:arm64 libqrencode-dev:arm64 libssl-dev:arm64 libcurl4-openssl-dev:arm64 \
  dpkg-dev debhelper fakeroot lintian pkg-config systemd-dev udev file binutils-aarch64-linux-gnu"

die() { echo "cross-arm64: $*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || die "needs root (debootstrap, chroot, mounts)"

mirror() {
  local m
  m=$(grep -m1 '^URIs:' /etc/apt/sources.list.d/debian.sources 2>/dev/null | awk '{print $2}')
  echo "${m:-http://deb.debian.org/debian}"
}

# Mounts a killed run left behind, unmounted first (never rm -rf across them).
unmount_stale() {
  { grep -o " $1/[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount -l "$m" || true; done
}

# debootstrap RELEASE into DIR (minbase), once.
bootstrap() {
  local release=$1 dir=$2
  [[ -e $dir/.debootstrapped ]] && return
  unmount_stale "$dir"
  rm -rf --one-file-system "$dir"
  mkdir -p "$cache"
  echo "cross-arm64: debootstrap $release into $dir"
  debootstrap --variant=minbase --include=ca-certificates "$release" "$dir" "$(mirror)" > "$dir.debootstrap.log" 2>&1 ||
    { tail -20 "$dir.debootstrap.log"; die "debootstrap $release failed (log: $dir.debootstrap.log)"; }
  cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
  # unstable's Release files carry a Valid-Until; a mirror that is a dated snapshot is past it.
  echo 'Acquire::Check-Valid-Until "false";' > "$dir/etc/apt/apt.conf.d/99workoutd-snapshot"
  touch "$dir/.debootstrapped"
}

mounts=()
cleanup() { for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done; }
trap cleanup EXIT
bind() {  # bind ROOT SOURCE [TARGET-IN-ROOT]
  local target=$1${3:-$2}
  mkdir -p "$target"
  # A mount that a killed run left behind may hold a directory since replaced (setup makes the
  # SDK's anew): not the source's inode, so it is dropped and bound again.
  if mountpoint -q "$target" && [[ $(stat -c %d:%i "$2") != "$(stat -c %d:%i "$target")" ]]; then
    umount -l "$target"
  fi
  mountpoint -q "$target" || { mount --bind "$2" "$target"; mounts+=("$target"); }
}
proc() { mountpoint -q "$1/proc" || { mount -t proc proc "$1/proc"; mounts+=("$1/proc"); }; }
in_root() {  # in_root ROOT COMMAND
  chroot "$1" env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    DEBIAN_FRONTEND=noninteractive bash -c "$2"
}

setup_compiler() {
  local stamp=$compiler/.swiftlang-$SWIFTLANG_VERSION
  [[ -e $stamp ]] && return
  bootstrap sid "$compiler"
  proc "$compiler"
  in_root "$compiler" "apt-get update -qq" || die "apt-get update in $compiler failed"
  in_root "$compiler" "apt-cache show swiftlang=$SWIFTLANG_VERSION >/dev/null 2>&1" ||
    die "Debian unstable has no swiftlang $SWIFTLANG_VERSION now (it has $(in_root "$compiler" \
      "apt-cache policy swiftlang | sed -n 's/ *Candidate: //p'")): SWIFTLANG_VERSION=THAT $0 setup"
  echo "cross-arm64: swiftlang $SWIFTLANG_VERSION (amd64) into $compiler"
  in_root "$compiler" "apt-get install -y -qq --no-install-recommends swiftlang=$SWIFTLANG_VERSION \
    libswiftlang=$SWIFTLANG_VERSION libc6-dev g++ git make pkg-config" > "$compiler.apt.log" 2>&1 ||
    { tail -20 "$compiler.apt.log"; die "installing swiftlang failed (log: $compiler.apt.log)"; }
  printf '[url "/opt/swift-packages/"]\n\tinsteadOf = https://github.com/\n' > "$compiler/etc/gitconfig"
  rm -f "$compiler"/.swiftlang-*
  touch "$stamp"
}

setup_sysroot() {
  local key stamp
  key=$(echo "$SWIFTLANG_VERSION $sysroot_packages" | md5sum | cut -c1-8)
  stamp=$sysroot/.ready-$key
  [[ -e $stamp ]] && return
  bootstrap trixie "$sysroot"
  proc "$sysroot"
  echo "cross-arm64: trixie's arm64 libraries into $sysroot"
  in_root "$sysroot" "dpkg --add-architecture arm64 && apt-get update -qq && \
    apt-get install -y -qq --no-install-recommends $sysroot_packages" > "$sysroot.apt.log" 2>&1 ||
    { tail -20 "$sysroot.apt.log"; die "installing the arm64 libraries failed (log: $sysroot.apt.log)"; }
  # Swift's arm64 runtime and libraries, of the compiler's version, from unstable: fetched with
  # the compiler root's apt (arm64 added to its lists for this only) and unpacked, not installed.
  echo "cross-arm64: Swift $SWIFTLANG_VERSION's arm64 libraries into $sysroot"
  local debs=$compiler/var/cache/workoutd-arm64
  mkdir -p "$debs"
  proc "$compiler"
  in_root "$compiler" "cd /var/cache/workoutd-arm64 && dpkg --add-architecture arm64 && apt-get update -qq && \
    apt-get download -qq swiftlang:arm64=$SWIFTLANG_VERSION libswiftlang:arm64=$SWIFTLANG_VERSION" \
    > "$sysroot.swift.log" 2>&1 || { tail -20 "$sysroot.swift.log"; die "downloading Swift for arm64 failed"; }
  rm -rf "$sysroot/usr/libexec/swift"
  dpkg-deb -x "$debs"/libswiftlang_*_arm64.deb "$sysroot"
  dpkg-deb --fsys-tarfile "$debs"/swiftlang_*_arm64.deb |
    tar -x -C "$sysroot" --exclude=./usr/libexec/swift/lib/swift/host --exclude=./usr/libexec/swift/lib/swift/pm \
      ./usr/libexec/swift/lib/swift ./usr/libexec/swift/lib/clang ./usr/libexec/swift/lib/swift_static
  rm -f "$debs"/*.deb
  # Debian's swiftlang ships the Testing+Foundation cross-import overlay's module but not its
  # library (lib_Testing_Foundation.so): without the declaration, Testing is imported alone.
  rm -rf "$sysroot/usr/libexec/swift/lib/swift/linux/Testing.swiftcrossimport"
  # Where the driver looks for swiftrt.o and the runtime when it links (the SDK's usr/lib).
  ln -sfn ../libexec/swift/lib/swift "$sysroot/usr/lib/swift"
  ln -sfn ../libexec/swift/lib/swift_static "$sysroot/usr/lib/swift_static"
  write_sdk
  rm -f "$sysroot"/.ready-*
  touch "$stamp"
}

# The Swift SDK (SE-0387) for SwiftPM's --swift-sdk: the sysroot, the arm64 Swift resources,
# and lld (the compiler root's binutils link x86_64 only).
write_sdk() {
  local bundle=$sdks/workoutd-arm64.artifactbundle
  rm -rf "$bundle" && mkdir -p "$bundle/sdk"
  cat > "$bundle/info.json" << EOF
{"schemaVersion": "1.0", "artifacts": {"workoutd-arm64": {"type": "swiftSDK", "version": "$SWIFTLANG_VERSION",
  "variants": [{"path": "sdk", "supportedTriples": ["x86_64-pc-linux-gnu", "x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"]}]}}}
EOF
  cat > "$bundle/sdk/swift-sdk.json" << EOF
{"schemaVersion": "4.0", "targetTriples": {"$triple": {
  "sdkRootPath": "$sysroot",
  "swiftResourcesPath": "$sysroot/usr/libexec/swift/lib/swift",
  "swiftStaticResourcesPath": "$sysroot/usr/libexec/swift/lib/swift_static",
  "toolsetPaths": ["toolset.json"]}}}
EOF
  cat > "$bundle/sdk/toolset.json" << EOF
{"schemaVersion": "1.0", "swiftCompiler": {"extraCLIOptions": ["-use-ld=lld"]}}
EOF
}

# This machine's own: debootstrap, and qemu-user-static with binfmt-support, which register it with
# binfmt_misc so that aarch64 programs run here.
host_packages() {
  local needed=debootstrap p
  # binfmt-support is only recommended by qemu-user-static, and --no-install-recommends
  # leaves it out: without it nothing registers the handler (update-binfmts).
  [[ $(uname -m) == aarch64 ]] || needed+=" qemu-user-static binfmt-support"
  for p in $needed; do
    dpkg-query -W -f='${Status}\n' "$p" 2> /dev/null | grep -q '^install ok installed' ||
      { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $needed > /dev/null; break; }
  done
}

# aarch64 programs, and the programs they start (the tests start the daemon), run here through
# binfmt_misc and qemu-user-static's handler. A machine whose init never mounted binfmt_misc (a
# container, a minimal VM) gets it mounted and the handler enabled; without it they fail with
# "Exec format error".
binfmt_aarch64() {
  local fs=/proc/sys/fs/binfmt_misc
  [[ $(uname -m) == aarch64 ]] && return
  [[ -e $fs/register ]] || mount -t binfmt_misc binfmt_misc "$fs" ||
    die "binfmt_misc is not mounted on $fs and cannot be: aarch64 programs cannot run here"
  [[ -e $fs/qemu-aarch64 ]] || update-binfmts --enable qemu-aarch64 ||
    die "cannot register qemu-aarch64 with binfmt_misc (update-binfmts --enable qemu-aarch64)"
  grep -qx enabled "$fs/qemu-aarch64" || die "the qemu-aarch64 handler in $fs is disabled"
}

case ${1:-} in
  host-packages) host_packages; binfmt_aarch64 ;;
  setup)
    host_packages
    binfmt_aarch64
    setup_compiler
    setup_sysroot
    proc "$compiler"
    echo "cross-arm64: $(in_root "$compiler" 'swift --version 2>/dev/null | head -1') for $triple," \
      "against trixie's arm64 glibc $(in_root "$sysroot" "dpkg-query -W -f='\${Version}' libc6:arm64")"
    ;;
  swift)
    shift
    [[ -e $compiler/.swiftlang-$SWIFTLANG_VERSION ]] || die "no compiler root: run $0 setup"
    proc "$compiler"
    bind "$compiler" "$sysroot"
    bind "$compiler" "$sdks"
    bind "$compiler" "$here"
    bind "$compiler" /opt/swift-packages
    bind "$compiler" /dev
    quoted=$(printf ' %q' "$@")
    chroot "$compiler" env -i HOME=/root PATH=/usr/bin:/bin LANG=C.UTF-8 \
      PKG_CONFIG_SYSROOT_DIR="$sysroot" \
      PKG_CONFIG_PATH="$sysroot/usr/lib/aarch64-linux-gnu/pkgconfig:$sysroot/usr/share/pkgconfig" \
      bash -c "cd $(printf %q "$here") && swift$quoted --swift-sdks-path $sdks --swift-sdk $triple"
    ;;
  sysroot)
    shift
    proc "$sysroot"
    bind "$sysroot" "$here"
    in_root "$sysroot" "$*"
    ;;
  run)
    shift
    [[ -e $sysroot/usr/lib/ld-linux-aarch64.so.1 ]] || die "no sysroot: run $0 setup"
    binfmt_aarch64
    export QEMU_LD_PREFIX=$sysroot
    exec "$@"
    ;;
  *) sed -n '21,26p' "$0" >&2; exit 2 ;;
esac
