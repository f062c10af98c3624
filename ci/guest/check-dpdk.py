#!/usr/bin/env python3
"""Checks what ci/guest/init-dpdk reported: DPDK's bnxt PMD (dpdk-testpmd) on two model NICs.

usage: check-dpdk.py CONSOLE_LOG --nics 2 --mac MAC --mac MAC --peer-mac MAC --pcap SEGMENT_PCAP
                     [--json OUT]

Both functions bound to vfio-pci; testpmd started, every command it was given came back to its
prompt, and it exited 0 after closing both ports ("Port N is closed", "Bye..."); `show port info`
gave each port its NIC's MAC with the link up. Per phase (testpmd's forward statistics at each
`stop`, in order):
  rxonly   (start tx_first 4) each port sent 4 bursts of 32 and the other received all of them
           (plus at most a few frames the guest's own NIC sent on its own), nothing dropped;
  peer     (rxonly, 5 ARP requests from the virtio-net NIC) each port received at least the 5;
  io, macswap  (start tx_first 1) both ports received and sent more than the first burst, each
           port's sends within a ring's worth of the other's receipts, nothing dropped.
Two testpmd runs (port topology loop: rxonly, peer, macswap; paired: io), each checked as above
for its own start, MACs, link and close; in each, `show port stats all` (the PMD's STAT_CTX_QUERY
sums) counted packets both ways on both ports.
The segment capture holds each port's rxonly burst frames (source = its MAC), the peer's ARP
requests, and at least as many frames from the two ports as testpmd says they sent. No kernel
warning, no crash. Prints what failed; exit 1 then.
"""
import argparse
import importlib.util
import json
import os
import re
import sys

_spec = importlib.util.spec_from_file_location(
    'check_summary', os.path.join(os.path.dirname(os.path.abspath(__file__)), 'check-summary.py'))
summary_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(summary_check)

TP = 'BNXT-TP-%s '
TPERR = 'BNXT-TPERR-%s '
# The phases init-dpdk runs (over its testpmd runs, in order).
PHASES = ('rxonly', 'peer', 'macswap', 'io')
# Frames `start tx_first N` sends per port: N bursts of testpmd's default 32.
BURST = 32
RXONLY_BURSTS = 4
# Frames the guest's virtio-net NIC may send on its own while a phase runs (IPv6 router
# solicitations, MLD reports after its link comes up).
STRAY = 16
# A ring's worth: frames in flight between two ports' counters when forwarding stops (RX and TX
# rings of 256 descriptors, init-dpdk's --rxd/--txd).
IN_FLIGHT = 2 * 256
# The commands init-dpdk gives testpmd, which it echoes after its prompt.
COMMANDS = ('show port info all', 'set fwd rxonly', 'set fwd io', 'set fwd macswap', 'start tx_first 4',
            'start tx_first 1', 'start', 'stop', 'show port stats all', 'port stop all', 'port close all', 'quit')


def testpmd_text(log, prefix):
    """testpmd's output as init-dpdk printed it, the prompts and echoed commands taken out."""
    lines = []
    for raw in log.splitlines():
        at = raw.find(prefix)
        if at >= 0:
            lines.append(raw[at + len(prefix):])
    text = '\n'.join(lines)
    echo = '|'.join(re.escape(c) for c in sorted(COMMANDS, key=len, reverse=True))
    return re.sub(r'testpmd> (?:(?:%s)\n)?' % echo, '', text)


STATS = re.compile(r'Forward statistics for port (\d+)\s+-+\s+RX-packets:\s*(\d+)\s+RX-dropped:\s*(\d+)\s+'
                   r'RX-total:\s*\d+\s+TX-packets:\s*(\d+)\s+TX-dropped:\s*(\d+)')
NIC_STATS = re.compile(r'NIC statistics for port (\d+)\s+#+\s+RX-packets:\s*(\d+)\s+RX-missed:\s*(\d+)\s+'
                       r'RX-bytes:\s*(\d+)\s+RX-errors:\s*(\d+)\s+RX-nombuf:\s*(\d+)\s+TX-packets:\s*(\d+)\s+'
                       r'TX-errors:\s*(\d+)\s+TX-bytes:\s*(\d+)')


def phases(text):
    """Per `stop`, in order: {port: (rx, rx_dropped, tx, tx_dropped)}."""
    out = []
    for part in text.split('Telling cores to stop')[1:]:
        part = part.split('Done.')[0]
        out.append({int(m[1]): (int(m[2]), int(m[3]), int(m[4]), int(m[5])) for m in STATS.finditer(part)})
    return out


def frames(path):
    """(source MAC, destination MAC, ethertype) of every frame in the pcap file at path."""
    out = []
    for f in summary_check.pcap_frames(path):
        if len(f) >= 14:
            out.append((f[6:12].hex(':'), f[0:6].hex(':'), f[12:14].hex()))
    return out


def check_run(run, text, errtext, nics, macs):
    """What one testpmd run must show: MACs, link up, packets both ways, ports closed."""
    fails = []
    for want in ('Port 0 is closed', 'Port 1 is closed', 'Bye...'):
        if want not in text:
            fails.append(f'{run}: testpmd never said "{want}"')
    for bad in ('Segmentation fault', 'PANIC', 'Cannot init', 'Fail to start port', 'Fail to configure port'):
        if bad in text + errtext:
            fails.append(f'{run}: testpmd output has "{bad}"')
    info_macs = re.findall(r'MAC address:\s*([0-9A-Fa-f:]{17})', text)
    if [m.lower() for m in info_macs[:len(macs)]] != [m.lower() for m in macs]:
        fails.append(f'{run}: show port info gave MACs {info_macs}, expected {macs}')
    links = re.findall(r'Link status:\s*(\w+)', text)
    if links[:nics] != ['up'] * nics:
        fails.append(f'{run}: show port info gave link status {links}')
    nic = {int(m[1]): [int(x) for x in m.groups()[1:]] for m in NIC_STATS.finditer(text)}
    for port in range(nics):
        s = nic.get(port)  # rx, missed, rx bytes, rx errors, nombuf, tx, tx errors, tx bytes
        if not s or s[0] == 0 or s[5] == 0 or s[3] or s[6]:
            fails.append(f'{run}: show port stats: port {port}: {s} (packets both ways, no errors expected)')
    return fails, nic


def check(summary, log, nics, macs, peer_mac, pcap):
    fails = []
    recs = summary['records']
    funcs = recs.get('function', [])
    if len(funcs) != nics or any(r.get('driver') != 'vfio-pci' for r in funcs):
        fails.append(f'expected {nics} functions on vfio-pci, got {funcs}')
    runs = [r.get('run') for r in recs.get('testpmd-start', [])]
    if not runs:
        fails.append('testpmd never started')
    for r in recs.get('testpmd-start', []) + recs.get('testpmd-exit', []) + recs.get('cmd', []):
        if r.get('rc') != '0':
            fails.append(f'testpmd did not start, run a command to its prompt or exit 0: {r}')
    got, names, nics_stats = [], [], {}
    for run in runs:
        text, errtext = testpmd_text(log, TP % run), testpmd_text(log, TPERR % run)
        f, nics_stats[run] = check_run(run, text, errtext, nics, macs)
        fails += f
        got += phases(text)
        names += [r.get('name') for r in recs.get('phase', []) if r.get('run') == run]
    if tuple(names) != PHASES or len(got) != len(PHASES):
        fails.append(f'phases {names} reported {len(got)} statistics, expected {list(PHASES)}')
    for name, st in zip(names, got):
        if sorted(st) != [0, 1]:
            fails.append(f'{name}: forward statistics for ports {sorted(st)}')
            continue
        (rx0, rxd0, tx0, txd0), (rx1, rxd1, tx1, txd1) = st[0], st[1]
        if rxd0 or rxd1 or txd0 or txd1:
            fails.append(f'{name}: dropped RX {rxd0}/{rxd1} TX {txd0}/{txd1}')
        if name == 'rxonly':
            want = RXONLY_BURSTS * BURST
            if (tx0, tx1) != (want, want):
                fails.append(f'rxonly: ports sent {tx0}/{tx1}, expected {want} each')
            for port, rx, tx_other in ((0, rx0, tx1), (1, rx1, tx0)):
                if not tx_other <= rx <= tx_other + STRAY:
                    fails.append(f'rxonly: port {port} received {rx} of the {tx_other} the other sent')
        elif name == 'peer':
            if rx0 < 5 or rx1 < 5 or tx0 or tx1:
                fails.append(f'peer: ports received {rx0}/{rx1} (5 ARP requests sent) and sent {tx0}/{tx1}')
        elif name in ('io', 'macswap'):
            for port, rx, tx, rx_other in ((0, rx0, tx0, rx1), (1, rx1, tx1, rx0)):
                if rx <= BURST or tx <= BURST:
                    fails.append(f'{name}: port {port} received {rx}, sent {tx} (more than {BURST} each expected)')
                if not rx_other <= tx + BURST + STRAY or tx > rx_other + IN_FLIGHT:
                    fails.append(f'{name}: port {port} sent {tx}, the other port received {rx_other}')
    if pcap:
        try:
            fr = frames(pcap)
        except (OSError, ValueError) as e:
            fails.append(f'segment capture: {e}')
            fr = []
        by_src = {}
        for src, _, _ in fr:
            by_src[src] = by_src.get(src, 0) + 1
        for port, mac in enumerate(macs):
            if by_src.get(mac.lower(), 0) < RXONLY_BURSTS * BURST:
                fails.append(f'segment capture: {by_src.get(mac.lower(), 0)} frames from port {port} ({mac})')
        arps = sum(1 for src, dst, ty in fr if src == peer_mac.lower() and ty == '0806')
        if arps < 5:
            fails.append(f'segment capture: {arps} ARP frames from the peer {peer_mac}, 5 expected')
        # Every frame a port sent crossed the segment once (io sends the peer's frames on too,
        # with its address: the capture's total is compared, less the peer's own ARP requests).
        # Frames still in a TX ring when a phase stops may never be sent: a ring's worth per port
        # and phase.
        sent = sum(st[p][2] for st in got for p in st)
        if len(fr) - arps < sent - 256 * nics * len(got):
            fails.append(f'segment capture: {len(fr) - arps} frames besides the peer\'s ARP requests, testpmd sent {sent}')
    for line in summary['dmesg']:
        if summary_check.FATAL.search(line):
            fails.append(f'kernel: {line}')
    if summary['end'] is None:
        fails.append('the guest never reported its end')
    return fails, list(zip(names, got)), nics_stats


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('log')
    ap.add_argument('--nics', type=int, required=True)
    ap.add_argument('--mac', action='append', default=[])
    ap.add_argument('--peer-mac', required=True)
    ap.add_argument('--pcap')
    ap.add_argument('--json')
    a = ap.parse_args()
    try:
        with open(a.log, errors='replace') as f:
            log = f.read()
    except OSError as e:
        print(f'check-dpdk: cannot read {a.log}: {e}', file=sys.stderr)
        return 2
    summary = summary_check.parse(log)
    fails, got, nics_stats = check(summary, log, a.nics, a.mac, a.peer_mac, a.pcap)
    for name, st in got:
        print(f'  {name}: ' + ' '.join(f'port{p} rx={v[0]} tx={v[2]}' for p, v in sorted(st.items())))
    for run, nic in nics_stats.items():
        for p, s in sorted(nic.items()):
            print(f'  {run}: port stats {p}: rx={s[0]} rx_bytes={s[2]} tx={s[5]} tx_bytes={s[7]}')
    for r in summary['records'].get('testpmd', []):
        print(f'  testpmd run={r.get("run")} secs={r.get("secs")}')
    if a.json:
        with open(a.json, 'w') as f:
            json.dump({'log': a.log, 'summary': summary, 'phases': got, 'failures': fails}, f, indent=1)
    for msg in fails:
        print(f'check-dpdk: {msg}')
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
