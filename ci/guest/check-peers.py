#!/usr/bin/env python3
"""Checks what ci/guest/init-peers reported: Linux's rdma_rxe against bnxt_re on the model, and
perftest's latency tests, with every RoCE v2 frame of the segment's capture checked for its ICRC.

usage: check-peers.py CONSOLE_LOG --pcap SEGMENT_PCAP [--iters N] [--pt-iters N] [--lat-iters N] [--cm]

The modules loaded (bnxt_en, bnxt_re, ib_uverbs, rdma_ucm, virtio_net, rdma_rxe); the rdma_rxe link
was added; bnxt_re0, bnxt_re1 and rxe0 have RoCE v2 GIDs for their netdevs' IPv4 addresses; in each
pingpong (rc, srq, ud; rxe0 serving bnxt_re0 and the other way round) both sides exited 0, found no
invalid data and printed their "N bytes in S seconds" line; in each perftest run (send, write, read
bandwidth both ways between rxe0 and bnxt_re0; send, write, read latency from bnxt_re0 to bnxt_re1
and to rxe0) both sides exited 0 and printed a result line for the size and iterations asked (the
server of ib_read_lat prints none: only its exit status counts); no
kernel warning or bnxt_re complaint. In the capture: RoCE v2 frames both ways between the virtio-net
NIC's address and the first model NIC's, every RoCE v2 frame's ICRC as the checker computes it
(below), and every one sent to the MAC of the netdev that holds its destination address. With
--cm, every run connected through RDMA CM, between the model NICs and between rdma_rxe and the
model each way, exited 0 on both sides. (perftest's figures themselves are not judged:
under TCG it may fail to measure the CPU's clock and print 0 or inf.) Prints what failed; exit 1 then.
"""
import argparse
import importlib.util
import os
import re
import struct
import sys
import zlib

_spec = importlib.util.spec_from_file_location(
    'check_summary', os.path.join(os.path.dirname(os.path.abspath(__file__)), 'check-summary.py'))
summary_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(summary_check)

# RoCE v2's UDP destination port (IANA; the InfiniBand Architecture Specification, Annex A17).
ROCEV2_PORT = 4791
# The addresses ci/guest/init-peers gives the model NICs' netdevs and the virtio-net netdev.
NIC0, NIC1, RXE = '10.57.0.1', '10.57.0.2', '10.57.0.3'
MODULES = ('bnxt_en', 'bnxt_re', 'ib_uverbs', 'rdma_ucm', 'virtio_net', 'rdma_rxe')
PINGPONGS = [(mode, s, c) for mode in ('rc', 'srq', 'ud') for s, c in (('rxe0', 'bnxt_re0'), ('bnxt_re0', 'rxe0'))]
BANDWIDTH = [(f'ib_{v}_bw', s, c) for v in ('send', 'write', 'read') for s, c in (('rxe0', 'bnxt_re0'), ('bnxt_re0', 'rxe0'))]
LATENCY = [(f'ib_{v}_lat', s, 'bnxt_re0') for v in ('send', 'write', 'read') for s in ('bnxt_re1', 'rxe0')]
BW_SIZE, LAT_SIZE = 65536, 64
# The runs connected through RDMA CM (bnxt.cm=1): between the model NICs, then between rdma_rxe
# (in the initial network namespace, where 6.12's rdma_rxe carries RoCE v2) and bnxt_re1 each way.
CM_RUNS = ('rping-bnxt', 'ucmatose-bnxt', 'send_bw-R-bnxt', 'read_bw-R-bnxt', 'rping-rxe-to-bnxt', 'rping-bnxt-to-rxe')


def icrc(ip_and_rest):
    """The invariant CRC of a RoCE v2 packet over IPv4, given its IPv4 header onwards up to (not
    including) the ICRC: IBA Vol 1 Annex A17.3.3 (RoCE v2's ICRC) with 7.8.1's rule for the fields
    that change in flight. The CRC-32 of the Ethernet FCS (zlib's) runs over 64 bits of ones standing
    for the absent LRH, then the IPv4 header with its type of service, time to live and header
    checksum set to ones, the UDP header with its checksum set to ones, the BTH with its reserved
    byte (resv8a) set to ones, and everything after the BTH unchanged. Carried least significant byte
    first."""
    b = bytearray(ip_and_rest)
    ihl = (b[0] & 0x0f) * 4
    b[1] = 0xff                    # type of service (DSCP, ECN)
    b[8] = 0xff                    # time to live
    b[10:12] = b'\xff\xff'         # header checksum
    b[ihl + 6:ihl + 8] = b'\xff\xff'  # UDP checksum
    b[ihl + 8 + 4] = 0xff          # BTH resv8a
    return zlib.crc32(b'\xff' * 8 + bytes(b))


def rocev2_frames(path, macs=None):
    """(counts by (source, destination) IPv4 address, [frames whose ICRC is wrong, or, with macs
    ({IPv4 address: MAC}), sent to another MAC than its destination address's], frames checked) of
    the pcap file at path."""
    counts, bad, checked, index = {}, [], 0, 0
    for frame in summary_check.pcap_frames(path):
        index += 1
        if len(frame) < 14 + 20 + 8 or frame[12:14] != b'\x08\x00':
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0f) * 4
        if ip[9] != 17 or len(ip) < ihl + 8:
            continue
        total, = struct.unpack_from('>H', ip, 2)
        dport, = struct.unpack_from('>H', ip, ihl + 2)
        if dport != ROCEV2_PORT:
            continue
        key = ('.'.join(map(str, ip[12:16])), '.'.join(map(str, ip[16:20])))
        counts[key] = counts.get(key, 0) + 1
        checked += 1
        dst_mac = ':'.join(f'{x:02x}' for x in frame[:6])
        if macs and key[1] in macs and macs[key[1]] != dst_mac:
            bad.append(f'frame {index} ({key[0]} -> {key[1]}): sent to MAC {dst_mac}, which is not {key[1]}\'s ({macs[key[1]]})')
        packet = ip[:total]
        if total < ihl + 8 + 12 + 4 or len(packet) < total:
            bad.append(f'frame {index} ({key[0]} -> {key[1]}): {len(packet)} of {total} IP bytes captured')
            continue
        want = icrc(packet[:-4])
        got, = struct.unpack('<I', packet[-4:])
        if got != want:
            bad.append(f'frame {index} ({key[0]} -> {key[1]}, opcode {packet[ihl + 8]:#04x}): '
                       f'ICRC {got:#010x}, computed {want:#010x}')
    return counts, bad, checked


def perftest_result(line):
    """(bytes, iterations, third field, fourth field) of a perftest result line as init-peers reports
    it (its fields joined by '_'), or None."""
    m = re.match(r'(\d+)_(\d+)_(-?[0-9.]+|-?inf|-?nan)_(-?[0-9.]+|-?inf|-?nan)(_|$)', line)
    return (int(m[1]), int(m[2]), float(m[3]), float(m[4])) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('console')
    ap.add_argument('--pcap', required=True)
    ap.add_argument('--iters', type=int, default=100)
    ap.add_argument('--pt-iters', type=int, default=200)
    ap.add_argument('--lat-iters', type=int, default=200)
    ap.add_argument('--cm', action='store_true', help='the RDMA CM runs (bnxt.cm=1), between the model NICs and between rdma_rxe and the model, must pass too')
    a = ap.parse_args()
    with open(a.console, errors='replace') as f:
        summary = summary_check.parse(f.read())

    def of(kind):
        return summary['records'].get(kind, [])

    bad = []
    if summary['end'] is None:
        bad.append("the guest did not reach its end (no 'end' line)")
    for mod in MODULES:
        rcs = [w.get('rc') for w in of('modprobe') if w.get('module') == mod]
        if rcs != ['0']:
            bad.append(f'modprobe {mod}: rc {rcs}')
    rxe = (of('rxe') or [{}])[0]
    if rxe.get('rc') != '0':
        bad.append(f'rdma link add rxe0: {rxe}')
    gids = (of('gids') or [{}])[0]
    for dev in ('bnxt_re0', 'bnxt_re1', 'rxe0'):
        if not gids.get(dev, '-').isdigit():
            bad.append(f'{dev} has no RoCE v2 GID for its IPv4 address: {gids}')
    if of('peers'):
        bad.append(f"runs skipped: {of('peers')}")
    runs = {(w.get('mode'), w.get('server'), w.get('client'), w.get('side')): w for w in of('pingpong')}
    for mode, s, c in PINGPONGS:
        for side in ('server', 'client'):
            w = runs.get((mode, s, c, side))
            if w is None:
                bad.append(f'no ibv_{mode}_pingpong result of the {side} ({s} serving {c})')
            elif (w.get('rc') != '0' or w.get('invalid') != '0'
                  or not re.match(r'\d+_bytes_in_[0-9.]+_seconds', w.get('result', ''))):
                bad.append(f'ibv_{mode}_pingpong {side} ({s} serving {c}): {w}')
    tests = {(w.get('prog'), w.get('server'), w.get('client'), w.get('side')): w for w in of('perftest')}
    for runs_, size, iters in ((BANDWIDTH, BW_SIZE, a.pt_iters), (LATENCY, LAT_SIZE, a.lat_iters)):
        for prog, s, c in runs_:
            for side in ('server', 'client'):
                w = tests.get((prog, s, c, side))
                r = perftest_result(w.get('result', '')) if w else None
                if w is None:
                    bad.append(f'no {prog} result of the {side} ({s} serving {c})')
                elif prog == 'ib_read_lat' and side == 'server' and w.get('rc') == '0':
                    pass  # the client alone measures a read's latency: the server prints no result
                elif w.get('rc') != '0' or r is None or r[:2] != (size, iters):
                    bad.append(f'{prog} {side} ({s} serving {c}; want {size} bytes x {iters}): {w}')
    if a.cm:
        setup = (of('cm_setup') or [{}])[0]
        if setup.get('netns_z') != '0' or setup.get('netns_a') != '0' or \
                not all(setup.get(d, '-').isdigit() for d in ('bnxt_re0', 'bnxt_re1', 'rxe0')):
            bad.append(f'RDMA CM set-up (the model NICs\' netdevs in namespaces of their own, every RoCE v2 GID back): {setup}')
        cms = {(w.get('run'), w.get('side')): w for w in of('cm')}
        for run in CM_RUNS:
            for side in ('server', 'client'):
                w = cms.get((run, side))
                if w is None or w.get('rc') != '0':
                    bad.append(f'RDMA CM run {run} {side}: {w}')
    for line in summary['dmesg']:
        if summary_check.FATAL.search(line) or summary_check.BNXT_RE_ERRORS.search(line):
            bad.append(f'kernel log: {line.strip()}')
    try:
        macs = {w.get('addr'): w.get('mac', '').lower() for w in of('netdev') if w.get('addr')}
        frames, icrc_bad, checked = rocev2_frames(a.pcap, macs)
    except (OSError, ValueError) as e:
        bad.append(f'segment capture: {e}')
        frames, icrc_bad, checked = {}, [], 0
    for src, dst in ((RXE, NIC0), (NIC0, RXE)):
        n = frames.get((src, dst), 0)
        want = 2 * 3 * a.iters  # each pingpong both ways: a packet per message at least
        if n < want:
            bad.append(f'segment capture: {n} RoCE v2 frames from {src} to {dst}, expected at least {want}')
    bad += [f'segment capture: {b}' for b in icrc_bad[:20]]
    if len(icrc_bad) > 20:
        bad.append(f'segment capture: {len(icrc_bad) - 20} more frames with a wrong ICRC')
    for b in bad:
        print(f'FAIL {a.console}: {b}')
    if not bad:
        lat = '; '.join(f"{p} {s}: {perftest_result(tests[(p, s, c, 'client')]['result'])[3]:.1f} us max"
                        for p, s, c in LATENCY)
        bw = '; '.join(f"{p} {s}->{c} {perftest_result(tests[(p, s, c, 'client')]['result'])[3]:.2f} MB/s"
                       for p, s, c in BANDWIDTH)
        print(f'PASS {a.console}: {len(PINGPONGS)} pingpongs; {bw}; {lat}; '
              f'{checked} RoCE v2 frames, every ICRC right, each to its destination\'s MAC')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
