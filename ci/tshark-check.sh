#!/usr/bin/env bash
# Check the model's wire output with an independent decoder: run fault-free RoCE scenarios with
# --pcap, then have tshark (Wireshark's dissectors) decode every frame. Each must decode as
# InfiniBand (RoCE v2) and none may be malformed.
#
# Wireshark's RPC-over-RDMA heuristic flags some short SEND Only messages as malformed whatever
# built them (a scapy-built frame gets the same), so that one dissector is turned off.
#
# Installs tshark from Debian's packages when it is missing (needs root and the package mirror).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v tshark >/dev/null; then
    echo "== installing tshark"
    export DEBIAN_FRONTEND=noninteractive
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true
    apt-get update -qq >/dev/null
    apt-get install -y -qq tshark >/dev/null
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
scenarios=(scenarios/roce/sizes.yaml scenarios/roce/reads.yaml scenarios/roce/full-ring.yaml scenarios/roce/receive-after-send.yaml)
cargo run --release -q -- run "${scenarios[@]}" --pcap "$out" >/dev/null

status=0
count=0
all=0
for f in "$out"/*.pcap; do
    count=$((count + 1))
    frames=$(tshark -r "$f" --disable-protocol rpcordma -T fields -e frame.protocols 2>/dev/null)
    total=$(printf '%s\n' "$frames" | grep -c . || true)
    not_ib=$(printf '%s\n' "$frames" | grep . | grep -c -v 'infiniband' || true)
    malformed=$(tshark -r "$f" --disable-protocol rpcordma -Y '_ws.malformed' 2>/dev/null | grep -c . || true)
    printf '%-40s %6d frames, %d not InfiniBand, %d malformed\n' "$(basename "$f")" "$total" "$not_ib" "$malformed"
    all=$((all + total))
    # A read between queue pairs of one NIC never leaves it: its pcap is empty, and that is fine.
    if [ "$not_ib" -ne 0 ] || [ "$malformed" -ne 0 ]; then
        status=1
    fi
done
if [ "$count" -eq 0 ] || [ "$all" -eq 0 ]; then
    echo "no frames captured" >&2
    exit 1
fi
if [ "$status" -eq 0 ]; then
    echo "tshark: all $all frames decoded as InfiniBand, none malformed"
else
    echo "tshark check FAILED" >&2
fi
exit "$status"
