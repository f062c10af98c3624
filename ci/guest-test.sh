#!/bin/bash
# Linux's own bnxt_en against the model: boots Debian's trixie (6.12) and sid (7.x) kernels under QEMU
# (TCG) with one or two `vfio-user-pci` devices, each served by its own `bnxt-model serve` process,
# and checks what the guest's /init reports: every 14e4:1760 function bound to bnxt_en, a netdev per
# function carrying the model's MAC, no probe error or kernel warning, the link up after
# `ip link set up`, and (with two NICs) frames exchanged between the two netdevs across a virtual
# Ethernet segment (a `bnxt-model segment` hub both model processes join), and between the first
# of them and the guest's own QEMU virtio-net NIC, joined to the same hub through QEMU's stream
# netdev; bnxt_re must register an InfiniBand device per function, with no RoCE command refused and
# no failed step in its probe (ib_mad's QP1, congestion control); bnxt_en must register a temperature
# sensor per function that reads a temperature; no HWRM request bnxt_en sent may be answered
# CMD_NOT_SUPPORTED (but with --driver). Ends with a summary per kernel and exits non-zero if any
# kernel failed.
#
# usage: ci/guest-test.sh [--no-model] [--nics N] [--kernels "trixie sid"] [--no-link] [--no-traffic]
#                         [--no-qemu-nic] [--no-ib] [--out DIR] [--record-fixtures] [--driver] [--verbs]
#                         [--trace] [--hugepages] [--faults] [--dpdk] [--peers] [--pyverbs]
#   --no-model         boot without any device: checks the tooling (bnxt_en loads, finds no function)
#   --nics N           model processes / vfio-user devices per guest (1 or 2, default 2)
#   --kernels LIST     which guest kernels (default: trixie sid)
#   --no-link          do not require the link to come up
#   --no-traffic       with two NICs: no shared segment and no ARP exchange between them
#   --no-qemu-nic      with traffic: no virtio-net NIC of the guest's own on the segment
#   --no-ib            do not require bnxt_re to register an InfiniBand device per function, nor its
#                      probe to pass without a refused RoCE command (only record how far it got)
#   --out DIR          where consoles, model logs and results go (default <repo>/out/guest)
#   --driver           instead of Linux's drivers, our own: the guest gets an emulated Intel IOMMU
#                      (intel_iommu=on), vfio-pci, bnxt-rig and the scenarios; bnxt_en takes the
#                      functions, `bnxt-rig detach` moves them to vfio-pci, `bnxt-rig list --target
#                      vfio` says what runs, `bnxt-rig run --target vfio` runs it (firmware faults at
#                      the driver's seam; `inspect` steps skipped; wire faults, virtual time and
#                      more NICs than two not offered), `bnxt-rig attach` gives them back and bnxt_en
#                      must take them again (ci/guest/init-driver). The whole suite on the kernels of
#                      DRIVER_FULL (default both; at least 110 scenarios must pass, DRIVER_MIN_PASSED),
#                      the scenarios without faults on the others (DRIVER_SMALL_SELECT,
#                      DRIVER_SMALL_MIN; BNXT_SELECT for every kernel: --tag/--skip-tag/--filter
#                      words, commas for spaces); times in docs/qemu-guest.md.
#                      The NICs are functions 0 and 1 of one device (multifunction=on), as a
#                      dual-port card's ports are: `bnxt-rig detach 0` alone is refused, `detach 0 1`
#                      moves both, `attach --device 0` gives both back; `doctor` runs before and
#                      after; regions-10k must pass
#   --verbs            rdma-core's user space on Linux's bnxt_re (two NICs on the segment): the guest
#                      gets sid's ibverbs-utils, libibverbs, libbnxt_re and glibc; ci/guest/init-verbs
#                      addresses both netdevs on one subnet, runs ibv_devinfo, ibv_rc_pingpong,
#                      ibv_srq_pingpong, ibv_ud_pingpong and perftest's ib_send_bw, ib_write_bw and
#                      ib_read_bw (the server's QP left in RTR) between bnxt_re1 (server) and bnxt_re0
#                      (client) over their
#                      RoCE v2 IPv4 GIDs,
#                      and ci/guest/check-verbs.py requires both sides to finish with exit status 0
#                      and the segment's capture to hold their RoCE v2 packets both ways
#   --trace            the default test with the bnxt-qemu-trace TCG plugin loaded (crate qemu-trace,
#                      built with `cargo build --release -p bnxt-qemu-trace`): each guest's transcript
#                      (DIR/guest.transcript) and access log (DIR/guest.accesses) land beside its other
#                      results, and ci/guest/check-trace.py requires the HWRM requests the plugin saw
#                      to be those each model's --hwrm-log served, in order, with the same answers, and
#                      the doorbell stores it saw to match each model's count (docs/qemu-trace.md)
#   --hugepages        guest RAM from a file on hugetlbfs (memory-backend-file, share=on; 512 MiB per
#                      guest unless MEM says otherwise): the script mounts a hugetlbfs of 2 MiB pages
#                      under the output folder and, as root, raises the pool of free 2 MiB pages to
#                      what the guests need, giving both back at the end (out/guest-hugepages by default)
#   --faults           faults into the running guest (ci/guest/init-faults: two NICs on the segment,
#                      bnxt_en, bnxt_re and rdma-core's user space): each model serves with --control
#                      (the second with the firmware's error recovery on); the guest prints
#                      "BNXT-FAULT nicN WORDS" and this script runs `bnxt-model ctl <NIC N's socket>
#                      WORDS` (the link taken away and given back, a PORT_PHY_CFG never answered, a
#                      PORT_PHY_QCFG answered with a wrong seq_id, a firmware reset and a fatal one
#                      followed by ARP and ibv_rc_pingpong, a CREATE_QP never answered under
#                      ibv_rc_pingpong, the card yanked); ci/guest/check-faults.py judges what Linux
#                      did and compares it with fixtures/guest-faults/<kernel suite>.txt (a difference
#                      is shown, not failed, but a kernel warning must be recorded there; docs/faults.md)
#   --dpdk             DPDK's bnxt PMD (sid's dpdk-testpmd and librte-net-bnxt, ci/fetch-vm.sh's
#                      dpdk-root) on both NICs (functions 0 and 1 of one device) bound to vfio-pci
#                      behind an emulated IOMMU, 2 MiB huge pages, on the segment with the guest's
#                      virtio-net NIC; ci/guest/init-dpdk runs testpmd through RSS over two queues,
#                      a virtio-net sender, promiscuous, multicast and VLAN filters (VLAN insert and
#                      strip), link down/up and a forced speed, macswap and io forwarding, port stop
#                      and close; ci/guest/check-dpdk.py checks the counts on both sides against
#                      each other, the NIC's counters and the segment's capture, each packet's RSS
#                      hash and queue, and that the models answered every request SUCCESS
#                      (DPDK_HUGEPAGES, default 256; PHASE_WAIT s per forwarding phase, default 2;
#                      BURST_WAIT s per burst phase, default 1)
#   --peers            other RoCE stacks against the model (ci/guest/init-peers, two NICs and the guest's
#                      virtio-net NIC on the segment): Linux's rdma_rxe on the virtio-net netdev
#                      against bnxt_re (rc, srq and ud pingpongs --chk and perftest's send, write and
#                      read bandwidth, both ways, the server left in RTR), perftest's latency tests
#                      (bnxt_re to bnxt_re, rdma_rxe to bnxt_re), and ci/guest/check-peers.py requires
#                      every run to pass and every RoCE v2 frame of the segment's capture to carry a
#                      right ICRC (recomputed by the checker itself, from the IBA's definition)
#   --pyverbs          rdma-core's own test suite (Debian's python3-pyverbs: pyverbs and its tests) on
#                      bnxt_re0 over the model (ci/guest/init-pyverbs: a Python process per test
#                      module), 2 GiB guests (MEM); ci/guest/check-pyverbs.py compares every test's
#                      outcome with fixtures/pyverbs/<kernel suite>.txt and fails on a test that
#                      passed there and does not now, or one the file does not know
#                      (PYVERBS_RECORD=1 rewrites the file instead)
#   --record-fixtures  copy each kernel's HWRM request logs, the requests answered CMD_NOT_SUPPORTED
#                      and bnxt_re's kernel messages to fixtures/guest/<kernel suite>/ (with --trace:
#                      also the transcript, to fixtures/trace/<kernel suite>.transcript; with --faults:
#                      what Linux did, to fixtures/guest-faults/<kernel suite>.txt)
# Env: BNXT_VM_CACHE (see ci/fetch-vm.sh); BNXT_MODEL (the model binary; default: built with
#      `cargo build --release -p bnxt-model-host` as target/release/bnxt-model, under CARGO_TARGET_DIR when
#      set); BNXT_MODEL_ARGS (more
#      words for every `serve`); TIMEOUT (s per guest, default 300; 3600 with --driver, 600 with --dpdk); VFIO_USER_MSG_TIMEOUT (ms);
#      RE_WAIT (s the guest gives `modprobe bnxt_re`, default 120: bnxt_re's probe of both
#      functions fits even if a RoCE command went unanswered (a 40 s firmware timeout each); the
#      guest's power-off would wait for it
#      anyway); PP_ITERS, PP_WAIT (--verbs: ibv_rc_pingpong's iterations, default 100, and the
#      seconds it may take, default 120); PT_ITERS (--verbs: perftest's iterations, default 500);
#      FAULT_WAIT (--faults: s the guest gives each ctl call, default 3), FAULTS_WORDS (--faults: more
#      kernel words for init-faults);
#      VERBS_DEBUG_BIN (--verbs: host binaries, e.g. /usr/bin/strace,
#      put into the guest's /bin with the host libraries they load, glibc aside); APPEND (more kernel words); SERIAL=1 (run the kernels one after the other).
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

no_model=0 nics=2 kernels="${BNXT_GUEST_SUITES[*]}" link=1 traffic=1 peer=1 ib=1 record=0 driver=0 verbs=0 trace=0 hugepages=0 faults=0 dpdk=0 peers=0 pyverbs=0
out=$BNXT_REPO/out/guest
while [ $# -gt 0 ]; do
  case $1 in
    --no-model) no_model=1 ;;
    --nics) nics=$2; shift ;;
    --kernels) kernels=$2; shift ;;
    --no-link) link=0 ;;
    --no-traffic) traffic=0 ;;
    --no-qemu-nic) peer=0 ;;
    --no-ib) ib=0 ;;
    --out) out=$2; shift ;;
    --record-fixtures) record=1 ;;
    --driver) driver=1 ;;
    --verbs) verbs=1 ;;
    --trace) trace=1 ;;
    --hugepages) hugepages=1 ;;
    --faults) faults=1 ;;
    --dpdk) dpdk=1 ;;
    --peers) peers=1 ;;
    --pyverbs) pyverbs=1 ;;
    *) die "unknown argument $1 (see the comment at the top of $0)" ;;
  esac
  shift
done
case $nics in 1|2) ;; *) die "--nics must be 1 or 2" ;; esac
[ "$nics" = 2 ] && [ $no_model = 0 ] && [ $link = 1 ] || traffic=0
[ $traffic = 1 ] || peer=0
if [ $driver = 1 ]; then
  [ $no_model = 0 ] || die "--driver needs the model"
  # The whole suite through an emulated IOMMU takes tens of minutes under TCG, not 300 s.
  export TIMEOUT=${TIMEOUT:-3600}
  peer=0 record=0
  [ "$out" = "$BNXT_REPO/out/guest" ] && out=$BNXT_REPO/out/guest-driver
fi
if [ $verbs = 1 ]; then
  [ $no_model = 0 ] && [ $driver = 0 ] && [ "$nics" = 2 ] || die "--verbs needs the model, two NICs and not --driver"
  traffic=1 peer=0 record=0
  [ "$out" = "$BNXT_REPO/out/guest" ] && out=$BNXT_REPO/out/guest-verbs
fi
if [ $peers = 1 ]; then
  [ $no_model = 0 ] && [ $driver = 0 ] && [ $verbs = 0 ] && [ "$nics" = 2 ] || die "--peers needs the model, two NICs and not --driver or --verbs"
  traffic=1 peer=1 record=0
  # A run that waits out its clients' limits (PP_WAIT each) must still end with its report.
  export TIMEOUT=${TIMEOUT:-900}
  [ "$out" = "$BNXT_REPO/out/guest" ] && out=$BNXT_REPO/out/guest-peers
fi
if [ $pyverbs = 1 ]; then
  [ $no_model = 0 ] && [ $driver = 0 ] && [ $verbs = 0 ] && [ $peers = 0 ] && [ "$nics" = 2 ] \
    || die "--pyverbs needs the model and two NICs, and runs on its own"
  traffic=1 peer=0 record=0
  export MEM=${MEM:-2048} TIMEOUT=${TIMEOUT:-1200}
  [ "$out" = "$BNXT_REPO/out/guest" ] && out=$BNXT_REPO/out/guest-pyverbs
fi
if [ $trace = 1 ]; then
  [ $no_model = 0 ] && [ $driver = 0 ] && [ $verbs = 0 ] || die "--trace needs the model and the default test (not --driver, --verbs)"
  [ "$out" = "$BNXT_REPO/out/guest" ] && out=$BNXT_REPO/out/guest-trace
fi
if [ $hugepages = 1 ]; then
  [ $driver = 0 ] && [ $verbs = 0 ] || die "--hugepages runs the default guest test (not --driver or --verbs)"
  record=0
  [ "$out" = "$BNXT_REPO/out/guest" ] && out=$BNXT_REPO/out/guest-hugepages
fi
if [ $faults = 1 ]; then
  [ $no_model = 0 ] && [ $driver = 0 ] && [ $verbs = 0 ] && [ $trace = 0 ] && [ $hugepages = 0 ] \
    || die "--faults needs the model and runs on its own (not --driver, --verbs, --trace, --hugepages)"
  nics=2 traffic=1 peer=0 ib=0
  # A RoCE command never answered waits out bnxt_re's 40 s firmware timeout, and a yanked card's
  # bnxt_re teardown another; two firmware resets each wait for bnxt_re's registration.
  export TIMEOUT=${TIMEOUT:-900}
  [ "$out" = "$BNXT_REPO/out/guest" ] && out=$BNXT_REPO/out/guest-faults
fi
if [ $dpdk = 1 ]; then
  [ $no_model = 0 ] && [ $driver = 0 ] && [ $verbs = 0 ] && [ $trace = 0 ] && [ $hugepages = 0 ] && [ $faults = 0 ] \
    && [ "$nics" = 2 ] || die "--dpdk needs the model and two NICs, and runs on its own"
  traffic=1 peer=1 record=0 ib=0
  # Two testpmd runs of some ninety commands each: about two minutes, more on a loaded machine.
  export TIMEOUT=${TIMEOUT:-600}
  [ "$out" = "$BNXT_REPO/out/guest" ] && out=$BNXT_REPO/out/guest-dpdk
fi
started=$(date +%s)
mkdir -p "$out"; out=$(cd "$out" && pwd)

# --hugepages: a hugetlbfs of 2 MiB pages under the output folder, and enough free pages in the
# kernel's pool for every guest's RAM (raised as root if short; put back as it was at the end).
HP_SYSFS=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages HP_MOUNT= HP_RESTORE=
hugepages_release() {
  if [ -n "$HP_MOUNT" ] && mountpoint -q "$HP_MOUNT"; then umount "$HP_MOUNT" || true; fi
  if [ -n "$HP_RESTORE" ]; then echo "$HP_RESTORE" > "$HP_SYSFS" || true; HP_RESTORE=; fi
}
if [ $hugepages = 1 ]; then
  export MEM=${MEM:-512}
  n_kernels=$(echo $kernels | wc -w)
  need=$(( n_kernels * MEM / 2 ))
  free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo)
  if [ "$free" -lt "$need" ]; then
    [ -w "$HP_SYSFS" ] || die "--hugepages needs $need free 2 MiB huge pages ($free free) and cannot raise the pool ($HP_SYSFS is not writable: run as root)"
    total=$(cat "$HP_SYSFS"); HP_RESTORE=$total
    echo $(( total + need - free )) > "$HP_SYSFS"
    free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo)
    [ "$free" -ge "$need" ] || { hugepages_release; die "--hugepages: only $free free 2 MiB pages after asking for $need more (memory too fragmented or short)"; }
    echo "guest-test: the huge page pool raised from $total to $(cat "$HP_SYSFS") pages of 2 MiB for the run"
  fi
  HP_MOUNT=$out/hugetlbfs; mkdir -p "$HP_MOUNT"
  mountpoint -q "$HP_MOUNT" || mount -t hugetlbfs -o pagesize=2M,mode=0700 nodev "$HP_MOUNT" \
    || { hugepages_release; die "--hugepages: mounting hugetlbfs at $HP_MOUNT failed (root needed)"; }
  export MEM_PATH=$HP_MOUNT
  trap hugepages_release EXIT
fi

bash "$BNXT_REPO/ci/fetch-vm.sh"

model=
if [ $no_model = 0 ]; then
  if [ -n "${BNXT_MODEL:-}" ]; then model=$BNXT_MODEL
  else
    (cd "$BNXT_REPO" && cargo build --release -q -p bnxt-model-host) || die "building bnxt-model failed"
    model=${CARGO_TARGET_DIR:-$BNXT_REPO/target}/release/bnxt-model
  fi
  [ -x "$model" ] || die "no model binary at $model"
fi
plugin=
if [ $trace = 1 ]; then
  (cd "$BNXT_REPO" && cargo build --release -q -p bnxt-qemu-trace) || die "building bnxt-qemu-trace failed"
  plugin=${CARGO_TARGET_DIR:-$BNXT_REPO/target}/release/libbnxt_qemu_trace.so
  [ -f "$plugin" ] || die "no plugin at $plugin"
fi
rig=
if [ $driver = 1 ]; then
  (cd "$BNXT_REPO" && cargo build --release -q -p bnxt-rig) || die "building bnxt-rig failed"
  rig=${CARGO_TARGET_DIR:-$BNXT_REPO/target}/release/bnxt-rig
fi

# driver_files: SRC:DEST pairs for the initramfs of --driver: bnxt-rig with the shared libraries it
# loads (from this machine: the guest has no libc of its own), and the scenarios.
driver_files() {
  local lib
  echo "$rig:bin/bnxt-rig"
  for lib in $(ldd "$rig" | awk '/=> \//{print $3} /^\t\/lib/{print $1}'); do echo "$lib:${lib#/}"; done
  find "$BNXT_REPO/scenarios/nic" "$BNXT_REPO/scenarios/roce" "$BNXT_REPO/scenarios/firmware" -name '*.yaml' \
    | while read -r f; do echo "$f:scenarios/${f#"$BNXT_REPO"/scenarios/}"; done
}

# verbs_files: SRC:DEST pairs for the initramfs of --verbs: ibv_devinfo, ibv_rc_pingpong, libibverbs
# and its libraries, the bnxt_re provider with its driver file, and sid's glibc with its ld.so at the
# path the binaries name; perftest's ib_send_bw, ib_write_bw and ib_read_bw with what they load
# besides (librdmacm, libibumad, libpci with libudev and zlib from perftest-root; libm and the
# mlx5, efa and hns providers they link against from verbs-root). All from the cache ci/fetch-vm.sh
# fills.
verbs_files() {
  local r=$BNXT_VM_CACHE/verbs-root p=$BNXT_VM_CACHE/perftest-root l=usr/lib/x86_64-linux-gnu f
  [ -x "$r/usr/bin/ibv_rc_pingpong" ] || die "no rdma-core user space in $r: run ci/fetch-vm.sh"
  [ -x "$p/usr/bin/ib_send_bw" ] || die "no perftest in $p: run ci/fetch-vm.sh"
  for f in usr/bin/ibv_devinfo usr/bin/ibv_{rc,ud,uc,srq}_pingpong $l/libc.so.6 $l/libm.so.6 $l/libibverbs.so.1 \
    $l/libnl-3.so.200 $l/libnl-route-3.so.200 $l/lib{mlx5,efa,hns}.so.1 $l/libibverbs/libbnxt_re-rdmav*.so \
    etc/libibverbs.d/bnxt_re.driver; do
    for g in $r/$f; do [ -e "$g" ] || die "$g is missing"; echo "$g:${g#"$r"/}"; done
  done
  for f in usr/bin/ib_{send,write,read}_bw $l/librdmacm.so.1 $l/libibumad.so.3 $l/libpci.so.3 $l/libudev.so.1 \
    $l/libz.so.1; do
    [ -e "$p/$f" ] || die "$p/$f is missing"; echo "$p/$f:$f"
  done
  echo "$r/$l/ld-linux-x86-64.so.2:lib64/ld-linux-x86-64.so.2"
  echo "$G/verbs-lib.sh:lib/bnxt/verbs-lib.sh"
}

# peers_files: SRC:DEST pairs for the initramfs of --peers, besides verbs_files': rdma-core's rxe
# provider (libibverbs' user-space half of rdma_rxe) with its driver file, perftest's latency tests,
# iproute2's rdma with libmnl and libcap, rdmacm-utils' rping and ucmatose (ci/fetch-vm.sh fills
# peers-root).
peers_files() {
  local r=$BNXT_VM_CACHE/verbs-root p=$BNXT_VM_CACHE/perftest-root q=$BNXT_VM_CACHE/peers-root l=usr/lib/x86_64-linux-gnu f g
  [ -x "$q/usr/bin/rping" ] || die "no peers-root in $q: run ci/fetch-vm.sh"
  for f in $l/libibverbs/librxe-rdmav*.so etc/libibverbs.d/rxe.driver; do
    for g in $r/$f; do [ -e "$g" ] || die "$g is missing"; echo "$g:${g#"$r"/}"; done
  done
  for f in usr/bin/ib_{send,write,read}_lat; do [ -e "$p/$f" ] || die "$p/$f is missing"; echo "$p/$f:$f"; done
  for f in usr/bin/rdma usr/bin/rping usr/bin/ucmatose $l/libmnl.so.0 $l/libcap.so.2 $l/libgcc_s.so.1; do
    [ -e "$q/$f" ] || die "$q/$f is missing"; echo "$q/$f:$f"
  done
}

# pyverbs_files DIR: SRC:DEST pairs for the initramfs of --pyverbs, besides verbs_files': sid's Python
# (interpreter, standard library, the libraries it loads), pyverbs, rdma-core's tests, which Debian
# ships partly gzipped as documentation (unpacked into DIR/pyverbs-tests first), and iproute2's
# rdma and ip.
pyverbs_files() {
  local q=$BNXT_VM_CACHE/pyverbs-root l=usr/lib/x86_64-linux-gnu t=$1/pyverbs-tests f
  [ -x "$q/usr/bin/python3.14" ] || die "no pyverbs-root in $q: run ci/fetch-vm.sh"
  rm -rf "$t"; cp -a "$q/usr/share/doc/rdma-core/tests" "$t"
  for f in "$t"/*.gz; do gzip -df "$f"; done
  echo "$q/usr/bin/python3.14:usr/bin/python3"
  echo "$q/usr/lib/python3.14:usr/lib/python3.14"
  echo "$q/usr/lib/python3:usr/lib/python3"
  for f in "$q/$l"/*.so*; do [ -f "$f" ] && echo "$f:${f#"$q"/}"; done
  echo "$t:usr/share/doc/rdma-core/tests"
  # iproute2's rdma and ip (the suite asks them for links and addresses, as JSON) and their libraries.
  q=$BNXT_VM_CACHE/peers-root
  [ -x "$q/usr/bin/rdma" ] || die "no peers-root in $q: run ci/fetch-vm.sh"
  for f in "$q/usr/bin/rdma" "$q/usr/bin/ip" "$q/$l"/*.so.*; do [ -f "$f" ] && echo "$f:${f#"$q"/}"; done
}

# dpdk_files: SRC:DEST pairs for the initramfs of --dpdk: dpdk-testpmd with the libraries it links
# (dpdk-root) and glibc, libibverbs, libmlx5 and libnl from verbs-root, sid's ld.so at the path the
# binary names. All from the cache ci/fetch-vm.sh fills.
dpdk_files() {
  local d=$BNXT_VM_CACHE/dpdk-root r=$BNXT_VM_CACHE/verbs-root l=usr/lib/x86_64-linux-gnu f
  [ -x "$d/usr/bin/dpdk-testpmd" ] || die "no DPDK in $d: run ci/fetch-vm.sh"
  echo "$d/usr/bin/dpdk-testpmd:usr/bin/dpdk-testpmd"
  for f in "$d/$l"/*.so.*; do echo "$f:${f#"$d"/}"; done
  for f in $l/libc.so.6 $l/libm.so.6 $l/libibverbs.so.1 $l/libnl-3.so.200 $l/libnl-route-3.so.200 $l/libmlx5.so.1; do
    [ -e "$r/$f" ] || die "$r/$f is missing"; echo "$r/$f:$f"
  done
  echo "$r/$l/ld-linux-x86-64.so.2:lib64/ld-linux-x86-64.so.2"
}

# MAC of model NIC i (1-based): locally administered, unique per NIC.
mac_of() { printf '02:57:60:80:00:%02x' "$1"; }
# MAC of the guest's own virtio-net NIC on the segment (with traffic).
PEER_MAC=52:54:00:57:60:aa

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
trap 'stop_models; hugepages_release' EXIT

# wait_socket PID SOCK LOG WHAT: wait up to 30 s for SOCK to appear while PID runs.
wait_socket() {
  local pid=$1 sock=$2 log=$3 what=$4
  for _ in $(seq 300); do [ -S "$sock" ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  [ -S "$sock" ] || { tail -20 "$log" >&2; die "$what did not create $sock"; }
}

# start_models DIR: one `bnxt-model serve` per NIC, sockets DIR/nicI.sock (with traffic, all joined
# to a `bnxt-model segment` hub at DIR/segment.sock, recorded in DIR/segment.pcap); leaves the
# sockets' paths in SOCKS.
start_models() {
  local dir=$1 i sock seg=()
  SOCKS=()
  if [ $traffic = 1 ]; then
    rm -f "$dir/segment.sock"
    "$model" segment --socket "$dir/segment.sock" --pcap "$dir/segment.pcap" > "$dir/segment.log" 2>&1 &
    pids+=($!)
    wait_socket $! "$dir/segment.sock" "$dir/segment.log" "bnxt-model segment"
    seg=(--segment "$dir/segment.sock")
  fi
  for i in $(seq "$nics"); do
    sock=$dir/nic$i.sock; rm -f "$sock"
    # shellcheck disable=SC2086  # BNXT_MODEL_ARGS is a list of words on purpose
    local ctl=()
    [ $faults = 1 ] && { rm -f "$dir/ctl-nic$i.sock"; ctl=(--control "$dir/ctl-nic$i.sock"); }
    # --faults: the second NIC's firmware offers error recovery (bnxt_en's health watchdog), for
    # `fw fatal`; the first's runs without it, as in the other guest tests.
    [ $faults = 1 ] && [ "$i" = 2 ] && ctl+=(--firmware '{"error_recovery":true}')
    "$model" serve --socket "$sock" --mac "$(mac_of "$i")" --hwrm-log "$dir/hwrm-nic$i.log" "${seg[@]}" "${ctl[@]}" \
      ${BNXT_MODEL_ARGS:-} > "$dir/model-nic$i.log" 2>&1 &
    pids+=($!)
    wait_socket $! "$sock" "$dir/model-nic$i.log" "bnxt-model serve for nic$i"
    SOCKS+=("$sock")
  done
}

# conduct CONSOLE DIR LOG: while the guest runs, carry out each "BNXT-FAULT nicN WORDS" it prints
# with `bnxt-model ctl DIR/ctl-nicN.sock WORDS` (WORDS of letters, digits, '_' and '-' only),
# logging each call ("<time> nicN ctl WORDS") and its reply to LOG.
conduct() {
  local console=$1 dir=$2 log=$3 seen=0 n line nic
  : > "$log"
  while :; do
    n=$(grep -c 'BNXT-FAULT nic' "$console" 2>/dev/null || true)
    while [ "${n:-0}" -gt "$seen" ]; do
      seen=$((seen + 1))
      line=$(grep 'BNXT-FAULT nic' "$console" | sed -n "${seen}p" | sed 's/.*BNXT-FAULT //; s/\r$//')
      nic=${line%% *} line=${line#* }
      case $nic in nic[1-9]) ;; *) echo "refused: $nic $line" >> "$log"; continue ;; esac
      case $line in *[!A-Za-z0-9_\ -]*) echo "refused: $nic $line" >> "$log"; continue ;; esac
      echo "$(date +%s.%N) $nic ctl $line" >> "$log"
      # shellcheck disable=SC2086  # the guest's words, checked above, are the command's words
      "$model" ctl "$dir/ctl-$nic.sock" $line >> "$log" 2>&1 || echo "ctl exit $?" >> "$log"
    done
    sleep 0.2
  done
}

# record_fixtures SUITE DIR: the HWRM logs, the requests answered CMD_NOT_SUPPORTED (with counts) and
# bnxt_re's kernel messages, into fixtures/guest/SUITE/.
record_fixtures() {
  local suite=$1 dir=$2 fx=$BNXT_REPO/fixtures/guest/$1 i
  mkdir -p "$fx"
  for i in $(seq "$nics"); do cp "$dir/hwrm-nic$i.log" "$fx/hwrm-nic$i.log"; done
  basename "$(kernel_paths "$suite" | cut -d' ' -f2)" > "$fx/kernel-version.txt"
  if [ $trace = 1 ]; then
    mkdir -p "$BNXT_REPO/fixtures/trace"
    cp "$dir/guest.transcript" "$BNXT_REPO/fixtures/trace/$suite.transcript"
  fi
  for i in $(seq "$nics"); do
    awk '$5 == "CMD_NOT_SUPPORTED" { n[$2 " " $3]++ } END { for (k in n) print k, n[k] }' "$dir/hwrm-nic$i.log" \
      | sort | sed "s/^/nic$i /"
  done > "$fx/unsupported.txt"
  grep -E 'BNXT-SUMMARY (dmesg .*(bnxt_re|QPLIB|infiniband)|ib |ib_devices |modprobe module=bnxt_re)' \
    "$dir/console.log" | sed 's/^.*BNXT-SUMMARY //' > "$fx/bnxt_re.txt" || true
  echo "guest-test $suite: logs recorded in $fx"
}

# run_suite SUITE: one guest of SUITE's kernel against fresh model processes; its report goes to
# OUT/SUITE/report.txt and its one-line result to OUT/SUITE/result.txt; exit status 0 on PASS.
run_suite() {
  local suite=$1 dir=$out/$1 expect=0 macs=() checks words guest_rc=0 t0 secs verdict unsupported kver i
  mkdir -p "$dir"
  pids=()
  # Run in this shell (SERIAL=1), the suite also gives the huge pages back if it ends the script.
  if [ "${SERIAL:-0}" = 1 ]; then trap 'stop_models; hugepages_release' EXIT; else trap stop_models EXIT; fi
  trap 'stop_models; exit 143' TERM INT
  local modules="bnxt_en bnxt_re ib_core ib_uverbs" qemu_extra=${QEMU_EXTRA:-} init=$G/init extra=()
  [ $peer = 1 ] && modules="$modules virtio_pci? virtio_net"
  if [ $driver = 1 ]; then
    modules="bnxt_en vfio_pci vfio_iommu_type1"; init=$G/init-driver
    mapfile -t extra < <(driver_files)
  fi
  if [ $faults = 1 ]; then
    init=$G/init-faults
    mapfile -t extra < <(verbs_files)
  fi
  if [ $dpdk = 1 ]; then
    modules="vfio_pci vfio_iommu_type1 virtio_pci? virtio_net"; init=$G/init-dpdk
    mapfile -t extra < <(dpdk_files)
  fi
  if [ $peers = 1 ]; then
    modules="$modules rdma_ucm rdma_rxe crc32_generic?"; init=$G/init-peers
    mapfile -t extra < <(verbs_files; peers_files)
  fi
  if [ $pyverbs = 1 ]; then
    modules="$modules rdma_ucm"; init=$G/init-pyverbs
    mapfile -t extra < <(verbs_files; pyverbs_files "$dir")
  fi
  if [ $verbs = 1 ]; then
    init=$G/init-verbs
    mapfile -t extra < <(verbs_files)
    [ -n "${VERBS_DEBUG_BIN:-}" ] && for b in $VERBS_DEBUG_BIN; do extra+=("$b:bin/$(basename "$b")")
      for lib in $(ldd "$b" | awk '/=> \//{print $3}'); do case $lib in */libc.so.6) ;; *) extra+=("$lib:${lib#/}");; esac; done; done
  fi
  GUEST_INIT=$init GUEST_MODULES=$modules bash "$G/mkinitramfs.sh" "$suite" "$dir/initramfs.cpio.gz" "${extra[@]}"
  SOCKS=()
  if [ $no_model = 0 ]; then
    start_models "$dir"; expect=$nics
    for i in $(seq "$nics"); do macs+=(--mac "$(mac_of "$i")"); done
  fi
  checks=(--functions "$expect" "${macs[@]}" --json "$dir/result.json")
  [ $no_model = 0 ] && [ $link = 1 ] && checks+=(--link)
  [ $traffic = 1 ] && checks+=(--traffic)
  [ $peer = 1 ] && checks+=(--peer-mac "$PEER_MAC")
  [ $no_model = 0 ] && [ $ib = 1 ] && checks+=(--ib)
  words="bnxt.re_wait=${RE_WAIT:-120}"
  [ $traffic = 1 ] && words="$words bnxt.traffic=1"
  if [ $peer = 1 ]; then
    # The guest's own NIC joins the hub as QEMU's stream netdev client (4-byte big-endian length,
    # then the frame), at PCI slot 0x10, without an option ROM (none in the private QEMU prefix).
    words="$words bnxt.peer=virtio"
    qemu_extra="-netdev stream,id=seg0,server=off,addr.type=unix,addr.path=$dir/segment.sock"
    qemu_extra="$qemu_extra -device virtio-net-pci,netdev=seg0,mac=$PEER_MAC,addr=0x10,romfile= ${QEMU_EXTRA:-}"
  fi
  if [ $trace = 1 ]; then
    # The devices sit at slots 5, 6, ... of bus 0 (ci/guest/run-guest.sh); the plugin follows the
    # guest's config-space writes to find their BARs. Values may hold no comma and no space.
    local kver_host p=$plugin,out=$dir/guest.transcript,accesses=$dir/guest.accesses
    kver_host=$(basename "$(kernel_paths "$suite" | cut -d' ' -f2)")
    p="$p,kernel=$kver_host,device=bnxt-model-serve-over-vfio-user"
    for i in $(seq "$nics"); do p="$p,nic=00:$(printf '%02x' $((4 + i))).0"; done
    qemu_extra="$qemu_extra -plugin $p"
  fi
  local iommu= multifunction=
  if [ $driver = 1 ]; then
    # The whole suite (every scenario that runs on the vfio target: at least 110 must pass, every
    # firmware fault among them injected at the driver's seam) on the kernels of DRIVER_FULL
    # (default both); on the others the scenarios without faults (the NIC contract and RoCE,
    # DRIVER_SMALL_SELECT), at least DRIVER_SMALL_MIN of them, for a quicker run by hand
    # (docs/qemu-guest.md has the times). BNXT_SELECT overrides the choice on every kernel.
    local select=${BNXT_SELECT:-} min=${DRIVER_MIN_PASSED:-110}
    if [ -z "${BNXT_SELECT:-}" ] && ! [[ " ${DRIVER_FULL:-trixie sid} " == *" $suite "* ]]; then
      select=${DRIVER_SMALL_SELECT:---skip-tag,faults}; min=${DRIVER_SMALL_MIN:-15}
    fi
    # A pool of 2 MiB huge pages (256 MiB of the guest's 1 GiB): our driver takes DMA memory of
    # whole 2 MiB pages from it, which the vIOMMU maps as 2 MiB pages, so QEMU sends the model one
    # DMA_MAP per 2 MiB instead of one per 4 KiB (about 21,000 per NIC open otherwise).
    words="intel_iommu=on hugepages=${DRIVER_HUGEPAGES:-128} bnxt.run_args=${BNXT_RUN_ARGS:-} bnxt.select=$select"; iommu=1; multifunction=1
    checks=(--nics "$nics" --min-passed "$min" --json "$dir/result.json" --expect-pass regions-10k)
  fi
  if [ $verbs = 1 ]; then
    words="bnxt.iters=${PP_ITERS:-100} bnxt.pp_wait=${PP_WAIT:-120} bnxt.pt_iters=${PT_ITERS:-500}"
    checks=(--nics "$nics" --pcap "$dir/segment.pcap" --iters "${PP_ITERS:-100}" --pt-iters "${PT_ITERS:-500}")
  fi
  if [ $dpdk = 1 ]; then
    # The two NICs are functions of one device behind the vIOMMU, as in --driver; huge pages for
    # DPDK's memory (2 MiB pages, mapped by the vIOMMU as such).
    words="$words intel_iommu=on hugepages=${DPDK_HUGEPAGES:-256} bnxt.phase_wait=${PHASE_WAIT:-2}"
    words="$words bnxt.burst_wait=${BURST_WAIT:-1} bnxt.mac1=$(mac_of 1) bnxt.mac2=$(mac_of 2)"
    iommu=1; multifunction=1
    # Every request DPDK sends must be answered SUCCESS: the checker reads the models' HWRM logs.
    checks=(--nics "$nics" "${macs[@]}" --peer-mac "$PEER_MAC" --pcap "$dir/segment.pcap" --json "$dir/result.json"
      --hwrm-log "$dir/hwrm-nic1.log" --hwrm-log "$dir/hwrm-nic2.log")
  fi
  if [ $peers = 1 ]; then
    words="bnxt.iters=${PP_ITERS:-100} bnxt.pp_wait=${PP_WAIT:-120} bnxt.pt_iters=${PT_ITERS:-200} bnxt.lat_iters=${LAT_ITERS:-200} ${PEERS_WORDS:-}"
    checks=(--pcap "$dir/segment.pcap" --iters "${PP_ITERS:-100}" --pt-iters "${PT_ITERS:-200}" --lat-iters "${LAT_ITERS:-200}")
    [ "${PEERS_CM:-1}" = 1 ] && { words="$words bnxt.cm=1"; checks+=(--cm); }
  fi
  if [ $pyverbs = 1 ]; then
    words="bnxt.module_wait=${MODULE_WAIT:-240} ${PYVERBS_WORDS:-}"
    checks=(--expected "$BNXT_REPO/fixtures/pyverbs/$suite.txt" --json "$dir/result.json")
    [ "${PYVERBS_RECORD:-0}" = 1 ] && checks+=(--record)
  fi
  local conductor=
  if [ $faults = 1 ]; then
    words="bnxt.fault_wait=${FAULT_WAIT:-3} bnxt.re_wait=${RE_WAIT:-120} ${FAULTS_WORDS:-}"
    checks=(--ctl-log "$dir/ctl.log" --hwrm-log "$dir/hwrm-nic1.log" --hwrm-log2 "$dir/hwrm-nic2.log"
      --pcap "$dir/segment.pcap" --mac "$(mac_of 1)" --mac2 "$(mac_of 2)" --json "$dir/result.json" --suite "$suite")
    [ $record = 1 ] && checks+=(--record "$BNXT_REPO/fixtures/guest-faults/$suite.txt")
    : > "$dir/console.log"
    conduct "$dir/console.log" "$dir" "$dir/ctl.log" & conductor=$!; pids+=("$conductor")
  fi
  t0=$(date +%s)
  # A boot that stalls before /init (run-guest.sh stops it after BOOT_TIMEOUT, exit 125; seen
  # very rarely under TCG) is tried again, up to BOOT_TRIES boots (default 2), with fresh model
  # processes (`serve` ends when its client goes); BOOT_RETRY_TIMEOUT is the later boots' limit.
  # Not with --faults, whose conductor follows the first console.
  local boot=1 limit=${BOOT_TIMEOUT:-300}
  while :; do
    guest_rc=0
    BOOT_TIMEOUT=$limit IOMMU=$iommu MULTIFUNCTION=$multifunction QEMU_EXTRA=$qemu_extra APPEND="$words ${APPEND:-}" \
      bash "$G/run-guest.sh" "$suite" "$dir/initramfs.cpio.gz" "$dir/console.log" "${SOCKS[@]}" || guest_rc=$?
    [ "$guest_rc" = 125 ] && [ $boot -lt "${BOOT_TRIES:-2}" ] && [ $no_model = 0 ] && [ $faults = 0 ] || break
    echo "guest-test $suite: boot $boot stalled before /init; booting again with fresh model processes"
    stop_models; mv "$dir/console.log" "$dir/console.log.stalled-$boot"; start_models "$dir"
    boot=$((boot + 1)); limit=${BOOT_RETRY_TIMEOUT:-$limit}
  done
  [ -n "$conductor" ] && { kill "$conductor" 2>/dev/null || true; wait "$conductor" 2>/dev/null || true; }
  stop_models
  secs=$(( $(date +%s) - t0 ))
  local checker=$G/check-summary.py
  [ $driver = 1 ] && checker=$G/check-driver.py
  [ $verbs = 1 ] && checker=$G/check-verbs.py
  [ $faults = 1 ] && checker=$G/check-faults.py
  [ $dpdk = 1 ] && checker=$G/check-dpdk.py
  [ $peers = 1 ] && checker=$G/check-peers.py
  [ $pyverbs = 1 ] && checker=$G/check-pyverbs.py
  local traced=0
  if [ $trace = 1 ]; then
    local tchecks=()
    for i in $(seq "$nics"); do tchecks+=(--nic "$dir/hwrm-nic$i.log" "$dir/model-nic$i.log"); done
    python3 "$G/check-trace.py" "$dir/guest.transcript" "${tchecks[@]}" --json "$dir/trace-check.json" || traced=1
  fi
  if python3 "$checker" "$dir/console.log" "${checks[@]}" && [ $guest_rc = 0 ] && [ $traced = 0 ]; then
    echo "guest-test $suite: PASS"; verdict=PASS
  else
    echo "guest-test $suite: FAIL (guest exit $guest_rc; console $dir/console.log), its last lines:"
    tail -15 "$dir/console.log" | sed 's/^/  > /'; verdict=FAIL
  fi
  unsupported=-
  if [ $no_model = 0 ]; then
    unsupported=$(awk '$5 == "CMD_NOT_SUPPORTED" { print $2 }' "$dir"/hwrm-nic*.log | sort -u | paste -sd, -)
    [ -n "$unsupported" ] || unsupported=none
    # Every request bnxt_en sends must be answered as the firmware does, not CMD_NOT_SUPPORTED.
    if [ "$unsupported" != none ] && [ $driver = 0 ] && [ $verdict = PASS ]; then
      echo "guest-test $suite: FAIL (requests answered CMD_NOT_SUPPORTED: $unsupported)"; verdict=FAIL
    fi
  fi
  kver=$(grep -o 'BNXT-SUMMARY begin kernel=[^ ]*' "$dir/console.log" | head -1 | cut -d= -f2)
  printf '%-7s %-4s %-22s %4ss  CMD_NOT_SUPPORTED: %s\n' "$suite" "$verdict" "${kver:-?}" "$secs" "$unsupported" \
    > "$dir/result.txt"
  [ $no_model = 0 ] && [ $record = 1 ] && [ $faults = 0 ] && record_fixtures "$suite" "$dir"
  [ $verdict = PASS ]
}

# The kernels' guests run side by side (most of a guest's time is spent waiting on its model and
# bnxt_re), each in its own subshell with its own model processes; SERIAL=1 runs them one by one.
status=0 jobs_=()
for suite in $kernels; do
  mkdir -p "$out/$suite"; rm -f "$out/$suite/result.txt"
  if [ "${SERIAL:-0}" = 1 ]; then
    run_suite "$suite" > "$out/$suite/report.txt" 2>&1 || status=1
    cat "$out/$suite/report.txt"
  else
    run_suite "$suite" > "$out/$suite/report.txt" 2>&1 &
    jobs_+=("$suite:$!")
  fi
done
trap 'for j in "${jobs_[@]}"; do kill -TERM "${j#*:}" 2>/dev/null || true; done; hugepages_release' EXIT
for j in "${jobs_[@]}"; do
  wait "${j#*:}" || status=1
  cat "$out/${j%%:*}/report.txt"
done
trap - EXIT
hugepages_release
echo "== guest-test summary ($(( $(date +%s) - started )) s in all; details in $out)"
for suite in $kernels; do
  if [ -f "$out/$suite/result.txt" ]; then sed 's/^/  /' "$out/$suite/result.txt"
  else echo "  $suite: no result (the run stopped early; see $out/$suite/report.txt)"; status=1; fi
done
[ $status = 0 ] && echo "guest-test: PASS" || echo "guest-test: FAIL"
exit $status
