# Shared settings for the QEMU guest tests; sourced by ci/fetch-vm.sh and the scripts in ci/guest/.
#
# BNXT_VM_CACHE  where QEMU, the guest kernels and busybox live (default: <repo>/.cache/vm).
#                Nothing is installed outside it.

# The repository root: two levels above this file.
BNXT_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BNXT_VM_CACHE=${BNXT_VM_CACHE:-$BNXT_REPO/.cache/vm}
# The guest kernels the tests boot, by Debian suite: trixie ships 6.12, sid ships 7.x.
BNXT_GUEST_SUITES=(trixie sid)

die() { echo "error: $*" >&2; exit 1; }

# qemu_cmd: the private QEMU runner written by fetch-vm.sh (it carries its own ld.so and glibc).
qemu_cmd() {
  [ -x "$BNXT_VM_CACHE/qemu.sh" ] || die "no QEMU in $BNXT_VM_CACHE: run ci/fetch-vm.sh first"
  echo "$BNXT_VM_CACHE/qemu.sh"
}

# kernel_paths SUITE: prints "VMLINUZ MODDIR" of that suite's guest kernel.
kernel_paths() {
  local d=$BNXT_VM_CACHE/kernels/$1 mod k
  [ -d "$d" ] || die "no $1 kernel in $BNXT_VM_CACHE: run ci/fetch-vm.sh first"
  mod=$(ls -d "$d"/usr/lib/modules/*/ 2>/dev/null | head -1); mod=${mod%/}
  [ -n "$mod" ] || die "no module folder under $d"
  for k in "$d/boot/vmlinuz-$(basename "$mod")" "$mod/vmlinuz"; do
    [ -f "$k" ] && { echo "$k $mod"; return 0; }
  done
  die "no vmlinuz for $1 under $d"
}
