#!/bin/bash
# Linux's own bnxt_en against the model: boots Debian's trixie (6.12) and sid (7.x) kernels under QEMU
# (TCG) with one or two `vfio-user-pci` devices, each served by its own `bnxt-model serve` process,
# and checks what the guest's /init reports: every 14e4:1760 function bound to bnxt_en, a netdev per
# function carrying the model's MAC, no probe error or kernel warning, the link up after
# `ip link set up`; how far bnxt_re got is recorded, not required.
#
# usage: ci/guest-test.sh [--no-model] [--nics N] [--kernels "trixie sid"] [--no-link] [--ib]
#                         [--out DIR] [--record-fixtures]
#   --no-model         boot without any device: checks the tooling (bnxt_en loads, finds no function)
#   --nics N           model processes / vfio-user devices per guest (1 or 2, default 2)
#   --kernels LIST     which guest kernels (default: trixie sid)
#   --no-link          do not require the link to come up
#   --ib               require bnxt_re to register an InfiniBand device per function
#   --out DIR          where consoles, model logs and results go (default <repo>/out/guest)
#   --record-fixtures  copy each kernel's HWRM request log to fixtures/guest/<kernel suite>/
# Env: BNXT_VM_CACHE (see ci/fetch-vm.sh); BNXT_MODEL (the model binary; default: built with
#      `cargo build --release -p bnxt-model` as target/release/bnxt-model); BNXT_MODEL_ARGS (more
#      words for every `serve`); TIMEOUT (s per guest, default 300); VFIO_USER_MSG_TIMEOUT (ms).
#
# The model command line this script relies on (crate bnxt-model):
#
#   bnxt-model serve --socket PATH --mac MAC --hwrm-log PATH [--log-level LEVEL]
#     --socket PATH    UNIX socket on which to serve one vfio-user client (QEMU). The socket exists
#                      and listens before anything else happens, so that QEMU can connect as soon
#                      as the file appears; mode 0600.
#     --mac MAC        the function's permanent MAC, xx:xx:xx:xx:xx:xx (FUNC_QCAPS / FUNC_QCFG).
#     --hwrm-log PATH  one text line per HWRM request served, in order: at least its req_type (name
#                      and number) and the error_code answered (CMD_NOT_SUPPORTED = 0xffff shows
#                      which requests the model declined). Kept under fixtures/ per kernel.
#     --log-level L    tracing level of the model's own log (stderr; kept in the output folder).
#   It serves until the client disconnects and then exits 0, or exits on SIGTERM.
set -euo pipefail
. "$(dirname "$0")/guest/lib.sh"
G=$BNXT_REPO/ci/guest

no_model=0 nics=2 kernels="${BNXT_GUEST_SUITES[*]}" link=1 ib=0 record=0 out=$BNXT_REPO/out/guest
while [ $# -gt 0 ]; do
  case $1 in
    --no-model) no_model=1 ;;
    --nics) nics=$2; shift ;;
    --kernels) kernels=$2; shift ;;
    --no-link) link=0 ;;
    --ib) ib=1 ;;
    --out) out=$2; shift ;;
    --record-fixtures) record=1 ;;
    *) die "unknown argument $1 (see the comment at the top of $0)" ;;
  esac
  shift
done
case $nics in 1|2) ;; *) die "--nics must be 1 or 2" ;; esac
mkdir -p "$out"; out=$(cd "$out" && pwd)

bash "$BNXT_REPO/ci/fetch-vm.sh"

model=
if [ $no_model = 0 ]; then
  if [ -n "${BNXT_MODEL:-}" ]; then model=$BNXT_MODEL
  else
    (cd "$BNXT_REPO" && cargo build --release -q -p bnxt-model) || die "building bnxt-model failed"
    model=$BNXT_REPO/target/release/bnxt-model
  fi
  [ -x "$model" ] || die "no model binary at $model"
fi

# MAC of model NIC i (1-based): locally administered, unique per NIC.
mac_of() { printf '02:57:60:80:00:%02x' "$1"; }

pids=()
stop_models() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  pids=()
}
trap stop_models EXIT

# start_models DIR: one `bnxt-model serve` per NIC, sockets DIR/nicI.sock; leaves their paths in SOCKS.
start_models() {
  local dir=$1 i sock
  SOCKS=()
  for i in $(seq "$nics"); do
    sock=$dir/nic$i.sock; rm -f "$sock"
    # shellcheck disable=SC2086  # BNXT_MODEL_ARGS is a list of words on purpose
    "$model" serve --socket "$sock" --mac "$(mac_of "$i")" --hwrm-log "$dir/hwrm-nic$i.log" \
      ${BNXT_MODEL_ARGS:-} > "$dir/model-nic$i.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 300); do [ -S "$sock" ] && break; kill -0 $! 2>/dev/null || break; sleep 0.1; done
    [ -S "$sock" ] || { tail -20 "$dir/model-nic$i.log" >&2; die "bnxt-model serve for nic$i did not create $sock"; }
    SOCKS+=("$sock")
  done
}

status=0
for suite in $kernels; do
  dir=$out/$suite; mkdir -p "$dir"
  bash "$G/mkinitramfs.sh" "$suite" "$dir/initramfs.cpio.gz"
  SOCKS=(); expect=0; macs=()
  if [ $no_model = 0 ]; then
    start_models "$dir"; expect=$nics
    for i in $(seq "$nics"); do macs+=(--mac "$(mac_of "$i")"); done
  fi
  checks=(--functions "$expect" "${macs[@]}" --json "$dir/result.json")
  [ $no_model = 0 ] && [ $link = 1 ] && checks+=(--link)
  [ $ib = 1 ] && checks+=(--ib)
  guest_rc=0
  bash "$G/run-guest.sh" "$suite" "$dir/initramfs.cpio.gz" "$dir/console.log" "${SOCKS[@]}" || guest_rc=$?
  stop_models
  if python3 "$G/check-summary.py" "$dir/console.log" "${checks[@]}" && [ $guest_rc = 0 ]; then
    echo "guest-test $suite: PASS"
  else
    echo "guest-test $suite: FAIL (guest exit $guest_rc; console $dir/console.log), its last lines:"
    tail -15 "$dir/console.log" | sed 's/^/  > /'; status=1
  fi
  if [ $no_model = 0 ] && [ $record = 1 ]; then
    fx=$BNXT_REPO/fixtures/guest/$suite; mkdir -p "$fx"
    for i in $(seq "$nics"); do cp "$dir/hwrm-nic$i.log" "$fx/hwrm-nic$i.log"; done
    basename "$(kernel_paths "$suite" | cut -d' ' -f2)" > "$fx/kernel-version.txt"
    echo "guest-test $suite: HWRM logs recorded in $fx"
  fi
done
exit $status
