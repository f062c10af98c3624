#!/usr/bin/env python3
"""Checks what ci/guest/init-verbs reported: rdma-core's ibv_rc_pingpong, ibv_srq_pingpong and
ibv_ud_pingpong, and perftest's ib_send_bw, ib_write_bw and ib_read_bw, on bnxt_re against the model.

usage: check-verbs.py CONSOLE_LOG --nics N [--pcap SEGMENT_PCAP --iters N] [--pt-iters N --pt-size N]

bnxt_en, bnxt_re and ib_uverbs loaded; N InfiniBand devices, each with a user-verbs node;
ibv_devinfo listed N devices with an active port; each bnxt_re device has a RoCE v2 GID for its
netdev's IPv4 address; in each pingpong run (ibv_rc_pingpong polled, and with completion events;
ibv_rc_pingpong -m 4096, at path MTU 4096; ibv_srq_pingpong, whose server receives from a shared
receive queue; ibv_ud_pingpong, UD QPs and address handles), server and client both exited
0, found no invalid data (--chk) and printed their "N bytes in S seconds"
line; in each perftest run (send, write, read; the server's QP left in RTR), both sides exited 0 and
printed a result line for the message size and iteration count asked, with a bandwidth above 0;
no kernel warning or bnxt_re complaint. With --pcap (the segment hub's capture): the traffic
really crossed the segment, as RoCE v2 (UDP port 4791) between the two netdevs' addresses, at least
one packet per message each way (5 runs x N iterations). Prints what failed; exit 1 then.
"""
import argparse
import importlib.util
import os
import re
import sys

# The summary parser and the kernel-log patterns of the default guest test (check-summary.py).
_spec = importlib.util.spec_from_file_location(
    'check_summary', os.path.join(os.path.dirname(os.path.abspath(__file__)), 'check-summary.py'))
summary_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(summary_check)

# RoCE v2's UDP destination port (IANA; the InfiniBand Architecture Specification, Annex A17).
ROCEV2_PORT = 4791
# The addresses ci/guest/init-verbs gives the first two netdevs.
ADDRS = ('10.57.0.1', '10.57.0.2')


# Bytes of a RoCE v2 packet besides its payload that a path-MTU-sized packet has at least: UDP
# header, BTH, ICRC.
ROCE_OVERHEAD = 8 + 12 + 4


def rocev2_frames(path):
    """Counts of RoCE v2 frames in the pcap file at path, by (source, destination) IPv4 address,
    and of those whose payload is a whole 4096 bytes or more (path MTU 4096), likewise."""
    import struct
    counts, full = {}, {}
    for frame in summary_check.pcap_frames(path):
        if len(frame) < 14 + 20 + 8 or frame[12:14] != b'\x08\x00':
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0f) * 4
        if ip[9] != 17 or len(ip) < ihl + 8:
            continue
        dport, udp_len = struct.unpack_from('>HH', ip, ihl + 2)
        if dport == ROCEV2_PORT:
            key = ('.'.join(map(str, ip[12:16])), '.'.join(map(str, ip[16:20])))
            counts[key] = counts.get(key, 0) + 1
            if udp_len >= 4096 + ROCE_OVERHEAD:
                full[key] = full.get(key, 0) + 1
    return counts, full


# The pingpong runs ci/guest/init-verbs makes: ibv_rc_pingpong polling the CQs, waiting for
# completion events, and at path MTU 4096; ibv_srq_pingpong; ibv_ud_pingpong (runs of `bnxt.more`,
# uc, are reported only).
MODES = ('poll', 'events', 'mtu4096', 'srq', 'ud')
# The program of each.
PROGRAM = {
    'poll': 'ibv_rc_pingpong',
    'events': 'ibv_rc_pingpong',
    'mtu4096': 'ibv_rc_pingpong -m 4096',
    'srq': 'ibv_srq_pingpong',
    'ud': 'ibv_ud_pingpong',
}


# perftest's bandwidth tests ci/guest/init-verbs runs, each with its server's QP left in RTR.
PERFTESTS = ('send', 'write', 'read')


def perftest_result(line):
    """(bytes, iterations, peak MB/s, average MB/s) of a perftest result line as init-verbs reports
    it (its fields joined by '_'), or None."""
    m = re.match(r'(\d+)_(\d+)_([0-9.]+)_([0-9.]+)(_|$)', line)
    return (int(m[1]), int(m[2]), float(m[3]), float(m[4])) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('console')
    ap.add_argument('--nics', type=int, required=True)
    ap.add_argument('--pcap')
    ap.add_argument('--iters', type=int, default=100)
    ap.add_argument('--pt-iters', type=int, default=500)
    ap.add_argument('--pt-size', type=int, default=65536)
    a = ap.parse_args()
    with open(a.console, errors='replace') as f:
        summary = summary_check.parse(f.read())

    def of(kind):
        return summary['records'].get(kind, [])

    bad = []
    if summary['end'] is None:
        bad.append("the guest did not reach its end (no 'end' line)")
    for mod in ('bnxt_en', 'bnxt_re', 'ib_uverbs'):
        rcs = [w.get('rc') for w in of('modprobe') if w.get('module') == mod]
        if rcs != ['0']:
            bad.append(f'modprobe {mod}: rc {rcs}')
    if len(of('ib')) != a.nics:
        bad.append(f"{len(of('ib'))} InfiniBand devices, expected {a.nics}")
    nodes = (of('uverbs') or [{}])[0].get('nodes', '').split(',')
    if len([n for n in nodes if n.startswith('uverbs')]) != a.nics:
        bad.append(f'user-verbs nodes in /dev/infiniband: {nodes}')
    info = (of('devinfo') or [{}])[0]
    if info.get('rc') != '0' or info.get('devices') != str(a.nics) or info.get('active_ports') != str(a.nics):
        bad.append(f'ibv_devinfo: {info}')
    gids = (of('gids') or [{}])[0]
    for i in range(a.nics):
        if not gids.get(f'bnxt_re{i}', '-').isdigit():
            bad.append(f'bnxt_re{i} has no RoCE v2 GID for its IPv4 address: {gids}')
    if any('skipped' in w for w in of('pingpong')):
        bad.append(f"pingpong skipped: {of('pingpong')}")
    runs = {(w.get('mode'), w.get('side')): w for w in of('pingpong') if 'side' in w}
    for mode in MODES:
        for side in ('server', 'client'):
            w = runs.get((mode, side))
            if w is None:
                bad.append(f'no {mode} pingpong result of the {side}')
            elif (w.get('rc') != '0' or w.get('invalid') != '0'
                  or not re.match(r'\d+_bytes_in_[0-9.]+_seconds', w.get('result', ''))):
                bad.append(f'{PROGRAM[mode]} {mode} {side}: {w}')
    tests = {(w.get('verb'), w.get('side')): w for w in of('perftest')}
    for verb in PERFTESTS:
        for side in ('server', 'client'):
            w = tests.get((verb, side))
            r = perftest_result(w.get('result', '')) if w else None
            if w is None:
                bad.append(f'no ib_{verb}_bw result of the {side}')
            elif w.get('rc') != '0' or r is None or r[:2] != (a.pt_size, a.pt_iters) or r[3] <= 0:
                bad.append(f'ib_{verb}_bw {side} (want {a.pt_size} bytes x {a.pt_iters}): {w}')
    for line in summary['dmesg']:
        if summary_check.FATAL.search(line) or summary_check.BNXT_RE_ERRORS.search(line):
            bad.append(f'kernel log: {line.strip()}')
    if a.pcap:
        try:
            frames, full = rocev2_frames(a.pcap)
        except (OSError, ValueError) as e:
            bad.append(f'segment capture: {e}')
            frames, full = {}, {}
        for src, dst in (ADDRS, ADDRS[::-1]):
            n = frames.get((src, dst), 0)
            if n < len(MODES) * a.iters:
                bad.append(f'segment capture: {n} RoCE v2 frames from {src} to {dst}, '
                           f'expected at least {len(MODES) * a.iters} (a packet per message)')
            # The mtu4096 run: 16 KiB messages, four packets of 4096 bytes each.
            n = full.get((src, dst), 0)
            if n < 4 * a.iters:
                bad.append(f'segment capture: {n} RoCE v2 packets of 4096 payload bytes from {src} to {dst}, '
                           f'expected at least {4 * a.iters} (path MTU 4096)')
    for b in bad:
        print(f'FAIL {a.console}: {b}')
    if not bad:
        done = '; '.join(f"{m} {s} {runs[(m, s)]['result'].replace('_', ' ')}" for m in MODES for s in ('server', 'client'))
        bw = '; '.join(f"ib_{v}_bw {perftest_result(tests[(v, 'client')]['result'])[3]:.2f} MB/s" for v in PERFTESTS)
        print(f'PASS {a.console}: pingpong {done}; perftest {bw}')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
