#!/bin/bash
# usage: ci/guest/run-guest.sh SUITE INITRAMFS CONSOLE_LOG [SOCKET ...]
# Boots SUITE's guest kernel (trixie | sid) under TCG with INITRAMFS and one QEMU `vfio-user-pci` device
# per vfio-user SOCKET (a server must already listen there; devices sit at PCI slots 5, 6, ... so the
# first is 0000:00:05.0, or with MULTIFUNCTION=1 at functions 0, 1, ... of slot 5). Guest RAM is a shared memfd (or, with MEM_PATH, a shared file QEMU creates
# there: a hugetlbfs mount gives hugepage-backed memory), so the server receives it with DMA_MAP and
# maps it itself. The serial console and QEMU's own messages go to CONSOLE_LOG. The guest's /init powers off.
# Exit status: QEMU's, or 124 when TIMEOUT ran out (the guest is then killed).
# Env: TIMEOUT (s, default 300), BOOT_TIMEOUT (s /init may take to start, default 300; exit 125
#      when it does not), MEM (MiB, default 1024), SMP (default 2), APPEND (more kernel words),
#      QEMU_EXTRA (more QEMU words), VFIO_USER_MSG_TIMEOUT (ms a vfio-user reply may take; QEMU's
#      default is 5000), INTERACTIVE=1 (console on this terminal instead of CONSOLE_LOG, for use with
#      APPEND=bnxt.shell; no timeout), IOMMU=1 (an emulated Intel IOMMU in front of the devices, with
#      caching mode so QEMU sees every mapping the guest makes; give the guest intel_iommu=on),
#      MEM_PATH (a directory, e.g. a hugetlbfs mount: guest RAM is memory-backend-file there, share=on),
#      MEM_SEAL=off (the memfd unsealed: memory-backend-memfd,seal=off), MULTIFUNCTION=1 (the
#      devices are functions 0, 1, ... of one device at slot 5, `multifunction=on`, as a dual-port
#      card's ports are: 0000:00:05.0, 0000:00:05.1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
[ $# -ge 3 ] || die "usage: $0 SUITE INITRAMFS CONSOLE_LOG [SOCKET ...]"
suite=$1 initrd=$2 log=$3; shift 3
read -r vmlinuz _moddir < <(kernel_paths "$suite")
qemu=$(qemu_cmd)
[ -f "$initrd" ] || die "no initramfs $initrd"

devs=(); slot=5 fn=0
# A vIOMMU must come before the devices behind it on QEMU's command line.
[ -n "${IOMMU:-}" ] && devs+=(-device intel-iommu,caching-mode=on)
for sock in "$@"; do
  [ -S "$sock" ] || die "$sock is not a listening UNIX socket (start the vfio-user server first)"
  props="\"driver\":\"vfio-user-pci\",\"socket\":{\"path\":\"$sock\",\"type\":\"unix\"}"
  if [ -n "${MULTIFUNCTION:-}" ]; then
    # Functions 0, 1, ... of one device at slot 5, as a dual-port card's ports are; function 0
    # says the device has more (the header type's multifunction bit).
    props="$props,\"addr\":\"$(printf '0x%x.%x' $slot $fn)\""
    [ $fn = 0 ] && props="$props,\"multifunction\":true"
    fn=$((fn + 1))
  else
    props="$props,\"addr\":\"$(printf '0x%x' $slot)\""; slot=$((slot + 1))
  fi
  [ -n "${VFIO_USER_MSG_TIMEOUT:-}" ] && props="$props,\"x-msg-timeout\":$VFIO_USER_MSG_TIMEOUT"
  devs+=(-device "{$props}")
done

mem=${MEM:-1024}
backend="memory-backend-memfd,id=mem0,size=${mem}M,share=on"
[ "${MEM_SEAL:-on}" = off ] && backend="$backend,seal=off"
[ -n "${MEM_PATH:-}" ] && backend="memory-backend-file,id=mem0,size=${mem}M,mem-path=$MEM_PATH,share=on"
qemu_args=(-accel tcg -M q35 -cpu max -smp "${SMP:-2}"
  -object "$backend" -m "$mem" -machine memory-backend=mem0
  -display none -no-reboot -nodefaults -serial mon:stdio
  -kernel "$vmlinuz" -initrd "$initrd" -append "console=ttyS0 panic=-1 quiet ${APPEND:-}" "${devs[@]}")
if [ -n "${INTERACTIVE:-}" ]; then
  # shellcheck disable=SC2086  # QEMU_EXTRA is a list of words on purpose
  exec "$qemu" "${qemu_args[@]}" ${QEMU_EXTRA:-}
fi
mkdir -p "$(dirname "$log")"
start=$(date +%s.%N)
# boot_once LIMIT: one boot, its console in $log. A guest whose /init has not printed its first
# line ("BNXT-SUMMARY begin") within LIMIT seconds (BOOT_TIMEOUT, default 300) is stopped (exit 125): under TCG
# a boot very rarely stalls before /init, and waiting out TIMEOUT for it would cost CI an hour
# (ci/guest-test.sh boots again with fresh model processes).
boot_once() {
  # shellcheck disable=SC2086  # QEMU_EXTRA is a list of words on purpose
  timeout --kill-after=10 "${TIMEOUT:-300}" "$qemu" "${qemu_args[@]}" ${QEMU_EXTRA:-} \
    < /dev/null > "$log" 2>&1 &
  local pid=$! waited=0
  while kill -0 "$pid" 2>/dev/null && ! grep -q 'BNXT-SUMMARY begin' "$log" 2>/dev/null; do
    if [ "$waited" -ge "$1" ]; then
      echo "guest $suite: /init did not start within ${1}s; stopping this boot" >&2
      kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
      return 125
    fi
    sleep 1; waited=$((waited + 1))
  done
  wait "$pid"
}
set +e
boot_once "${BOOT_TIMEOUT:-300}"; rc=$?
set -e
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
case $rc in
  0) echo "guest $suite: powered off after ${secs}s, console in $log" ;;
  124|137) echo "guest $suite: timed out after ${TIMEOUT:-300}s (killed), console in $log" >&2; rc=124 ;;
  125) echo "guest $suite: /init never started (stopped after ${BOOT_TIMEOUT:-300}s), console in $log" >&2 ;;
  *) echo "guest $suite: QEMU exited with $rc after ${secs}s, console in $log" >&2 ;;
esac
exit $rc
