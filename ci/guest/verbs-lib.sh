# Shell functions the verbs guests' /init scripts share (init-verbs, init-peers, init-pyverbs); sourced from
# /lib/bnxt/verbs-lib.sh in the initramfs. They expect S (a summary line), arg (a kernel command-line
# word) and now (the uptime) from the /init that sources them, and PP_WAIT (seconds a client may take).

# gid_index DEV ADDR: the index of DEV's port-1 RoCE v2 GID for IPv4 address ADDR (::ffff:ADDR),
# or nothing.
gid_index() {
  want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' $(echo "$2" | tr . ' '))
  for g in /sys/class/infiniband/$1/ports/1/gids/*; do
    x=$(basename "$g")
    [ "$(cat "$g" 2>/dev/null)" = "$want" ] || continue
    [ "$(cat /sys/class/infiniband/$1/ports/1/gid_attrs/types/$x 2>/dev/null)" = "RoCE v2" ] && { echo "$x"; return; }
  done
}

# print_gids: every device's non-zero port-1 GIDs with their types, for people reading the console.
print_gids() {
  for d in /sys/class/infiniband/*; do [ -e "$d" ] || continue
    for g in $d/ports/1/gids/*; do x=$(basename $g); v=$(cat $g 2>/dev/null) || continue
      case $v in 0000:0000:0000:0000:0000:0000:0000:0000) continue;; esac
      echo "GUEST: $(basename $d) gid $x $v $(cat $d/ports/1/gid_attrs/types/$x 2>/dev/null)"
    done
  done
}

# run_pair TAG "SERVER WORDS" "CLIENT WORDS": the server in the background (under bnxt.server_prefix),
# a second later the client (bounded by PP_WAIT), then up to 10 s for the server to end; their
# exit statuses in src and crc, their output in /tmp/server.txt and /tmp/client.txt, printed under TAG.
# With PAIR_PORT set, the client starts once the server listens on that TCP port (up to 60 s)
# instead: a loaded guest may take longer than a second to make the server's QP.
run_pair() {
  tag=$1
  $(arg bnxt.server_prefix "" | tr , " ") $2 > /tmp/server.txt 2>&1 & sp=$!
  if [ -n "${PAIR_PORT:-}" ]; then
    n=0
    while ! netstat -ltn 2>/dev/null | grep -q ":$PAIR_PORT " && kill -0 $sp 2>/dev/null && [ $n -lt 600 ]; do
      usleep 100000; n=$((n + 1))
    done
  else
    sleep 1
  fi
  timeout "$PP_WAIT" $3 > /tmp/client.txt 2>&1; crc=$?
  n=0; while kill -0 $sp 2>/dev/null && [ $n -lt 100 ]; do usleep 100000; n=$((n + 1)); done
  if kill -0 $sp 2>/dev/null; then kill $sp; src=timeout; else wait $sp; src=$?; fi
  [ -f /tmp/strace.txt ] && sed "s/^/GUEST: strace: /" /tmp/strace.txt && rm -f /tmp/strace.txt
  sed "s/^/GUEST: $tag server: /" /tmp/server.txt; sed "s/^/GUEST: $tag client: /" /tmp/client.txt
}

# report_pingpong WORDS: after run_pair of a pingpong, a "pingpong WORDS side=... rc=... result=...
# invalid=..." line per side: its exit status, its "N bytes in S seconds" line, and how many
# messages --chk found invalid.
report_pingpong() {
  for side in server client; do
    eval rc=\$$(echo $side | cut -c1)rc
    line=$(grep -m1 'bytes in .* seconds' /tmp/$side.txt | tr -s ' ' | tr ' ' _)
    S "pingpong $* side=$side rc=$rc result=${line:--} invalid=$(grep -c 'invalid data' /tmp/$side.txt)"
  done
}

# report_perftest SECONDS WORDS: after run_pair of a perftest program, a "perftest WORDS side=...
# rc=... seconds=... result=..." line per side: its exit status and its last result line (fields
# joined by '_': for bandwidth #bytes, #iterations, peak and average MB/s, message rate; for latency
# #bytes, #iterations, then the minimum, maximum, typical, average, ... microseconds, which perftest
# prints as inf when it could not measure the CPU's clock, as under TCG).
report_perftest() {
  secs=$1; shift
  for side in server client; do
    eval rc=\$$(echo $side | cut -c1)rc
    line=$(tr '\t' ' ' < /tmp/$side.txt | grep -E '^ *[0-9]+ +[0-9]+ +[-0-9.a-z]+ +[-0-9.a-z]+' | tail -1 | tr -s ' ' | sed 's/^ //; s/ $//' | tr ' ' _)
    S "perftest $* side=$side rc=$rc seconds=$secs result=${line:--}"
  done
}

# config_byte DEV OFFSET: one byte of PCI device DEV's config space (sysfs), in decimal.
config_byte() { od -An -tu1 -j "$2" -N1 "/sys/bus/pci/devices/$1/config" | tr -d ' '; }

# atomic_requester DEV: set the AtomicOp Requester Enable bit (bit 6) of DEV's PCIe Device Control 2
# register (PCIe capability + 0x28), the bit bnxt_re reads to offer atomics (qplib_sp.c
# `bnxt_qplib_is_atomic_cap`, PCI_EXP_DEVCTL2_ATOMIC_REQ). The kernel sets it only when the root
# port routes and completes AtomicOps (`pci_enable_atomic_ops_to_root`), which QEMU's root ports
# do not advertise, so without this bnxt_re offers no atomics in a guest. Must run before bnxt_re
# loads. Prints the register's low byte before and after, or "nocap".
atomic_requester() {
  p=$(config_byte "$1" 52) n=0
  while [ -n "$p" ] && [ "$p" -ne 0 ] && [ $n -lt 48 ]; do
    [ "$(config_byte "$1" "$p")" = 16 ] && break
    p=$(config_byte "$1" $((p + 1))); n=$((n + 1))
  done
  if [ -z "$p" ] || [ "$p" -eq 0 ] || [ $n -ge 48 ]; then echo nocap; return; fi
  o=$((p + 0x28)); b=$(config_byte "$1" $o)
  printf "$(printf '\\%03o' $((b | 64)))" | dd of="/sys/bus/pci/devices/$1/config" bs=1 seek=$o count=1 conv=notrunc 2>/dev/null
  echo "$b:$(config_byte "$1" $o)"
}
