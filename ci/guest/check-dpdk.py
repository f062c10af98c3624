#!/usr/bin/env python3
"""Checks what ci/guest/init-dpdk reported: DPDK's bnxt PMD (dpdk-testpmd) on two model NICs.

usage: check-dpdk.py CONSOLE_LOG --nics 2 --mac MAC --mac MAC --peer-mac MAC --pcap SEGMENT_PCAP
                     [--hwrm-log LOG]... [--json OUT]

Both functions bound to vfio-pci; testpmd started, every command it was given came back to its
prompt, and it exited 0 after closing both ports ("Port N is closed", "Bye..."); `show port info`
gave each port its NIC's MAC with the link up at 400 Gb/s. Each forwarding phase is one `start`
and `stop`; its counts per port are testpmd's own (the forwarding streams' counters, summed per
port, when a port has more than one queue; the port's forward statistics otherwise), in order:
  rss      (2 queues, start tx_first 2) each port sent 2 bursts of 32 per queue and the other
           received all of them, on both of its queues; every packet testpmd printed carries the
           Toeplitz hash of a UDP 4-tuple the capture holds between the two ports, under the
           receiving port's RSS key (`show port N rss-hash key`, recomputed here), and arrived on
           the queue its redirection table (`show port N rss reta`) gives that hash; the NIC's
           per-queue counters (xstats rx_qN_packets, tx_qN_packets: STAT_CTX_QUERY) and port
           counters (rx_good_frames, tx_good_frames: PORT_QSTATS) agree with testpmd's counts
  peer     each port received at least the 3 ARP requests the virtio-net NIC sent
  promisc-off / promisc-on   port 1 received none / all of port 0's frames to a MAC no NIC has
  mcast-listed / mcast-other / allmulti   port 1 (not promiscuous) received all of port 0's
           frames to the group it listed, none to another group, all of them with allmulti on
  vlan-untagged / vlan-listed / vlan-other   port 1 (not promiscuous, VLAN filtering with VLAN
           100, stripping on) received all of port 0's untagged frames, all tagged 100, each
           printed with "VLAN tci=0x64" and RTE_MBUF_F_RX_VLAN_STRIPPED, and none tagged 100 once
           VLAN 100 was removed (`rx_vlan rm`); in all of these port 0 received port 1's frames
  macswap, io   (start tx_first 1) both ports received and sent more than the first burst, each
           port's sends within a ring's worth of the other's receipts, nothing dropped.
The link phase's `show port summary all` gave port 0 down, up at 400 Gb/s, up at 200 Gb/s
(forced), and port 1 up at 400 Gb/s each time.
Two testpmd runs (loop: rss, peer, promisc, mcast, link, macswap; paired: io, vlan), each checked
for its own start, MACs, link at 400 Gb/s and close; in each, `show port stats all` (the PMD's
STAT_CTX_QUERY sums) counted packets both ways on both ports.
The segment capture holds each port's rss frames (source = its MAC), the peer's ARP requests, the
frames to the unknown MAC and to both groups, the frames tagged 100, and at least as many frames
from the two ports as testpmd says they sent. With --hwrm-log: every request the models
served was answered SUCCESS (DPDK's bring-up, start, run and stop need no refusal). No kernel
warning, no crash. Prints what failed; exit 1 then.
"""
import argparse
import collections
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
# The forwarding phases init-dpdk runs (over its testpmd runs, in order).
PHASES = ('rss', 'peer', 'promisc-off', 'promisc-on', 'mcast-listed', 'mcast-other', 'allmulti', 'macswap',
          'io', 'vlan-untagged', 'vlan-listed', 'vlan-other')
# The phases run with `set verbose 1` (each packet received printed), in order within their run.
VERBOSE = ('rss', 'vlan-listed')
# Frames one `start tx_first` burst sends per queue: testpmd's default 32.
BURST = 32
# What init-dpdk's filter phases send to.
STRANGER = '02:57:60:80:00:99'
GROUP, OTHER_GROUP = '01:00:5e:00:00:01', '01:00:5e:00:00:02'
VLAN = 100
# ARP requests the guest's virtio-net NIC sends in the peer phase.
PEER_ARPS = 3
# Frames the guest's virtio-net NIC may send on its own while a phase runs (IPv6 router
# solicitations, MLD reports after its link comes up).
STRAY = 16
# A ring's worth: frames in flight between two ports' counters when forwarding stops (RX and TX
# rings of 256 descriptors, init-dpdk's --rxd/--txd).
IN_FLIGHT = 2 * 256
# The link phase's `show port summary all`, in order: port 0's (status, speed); port 1 stays up.
LINK_STEPS = (('down', 'None'), ('up', '400 Gbps'), ('up', '200 Gbps'))
PORT_SPEED = '400 Gbps'


def toeplitz(key, data):
    """The Toeplitz hash of data under key (Microsoft, "Verifying the RSS Hash Calculation")."""
    k = int.from_bytes(key, 'big')
    klen = len(key) * 8
    result = 0
    for i, byte in enumerate(data):
        for b in range(8):
            if byte & (0x80 >> b):
                bit = i * 8 + b
                result ^= (k >> (klen - 32 - bit)) & 0xffffffff
    return result


def _toeplitz_selftest():
    key = bytes.fromhex('6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa')
    four = bytes([66, 9, 149, 187, 161, 142, 100, 80]) + (2794).to_bytes(2, 'big') + (1766).to_bytes(2, 'big')
    assert toeplitz(key, four) == 0x51ccc178, 'Toeplitz: the published IPv4/TCP vector'
    assert toeplitz(key, four[:8]) == 0x323e8fc2, 'Toeplitz: the published IPv4 vector'


def testpmd_text(log, prefix, commands):
    """testpmd's output as init-dpdk printed it, the prompts and echoed commands taken out. Its
    prompt and each command's echo are written at once, its other output when its buffer
    flushes, so they may land inside other lines: each is cut out wherever it is."""
    lines = []
    for raw in log.splitlines():
        at = raw.find(prefix)
        if at >= 0:
            lines.append(raw[at + len(prefix):])
    text = '\n'.join(lines)
    echo = '|'.join(re.escape(c) for c in sorted(set(commands) | {'quit'}, key=len, reverse=True))
    text = re.sub(r'(?:testpmd> )?(?:%s)\n' % echo, '', text)
    return text.replace('testpmd> ', '')


STATS = re.compile(r'Forward statistics for port (\d+)\s+-+\s+RX-packets:\s*(\d+)\s+RX-dropped:\s*(\d+)\s+'
                   r'RX-total:\s*\d+\s+TX-packets:\s*(\d+)\s+TX-dropped:\s*(\d+)')
STREAM = re.compile(r'Forward Stats for RX Port=\s*(\d+)/Queue=\s*(\d+) -> TX Port=\s*(\d+)/Queue=\s*(\d+)\s+-+\s+'
                    r'RX-packets:\s*(\d+)\s+TX-packets:\s*(\d+)\s+TX-dropped:\s*(\d+)')
NIC_STATS = re.compile(r'NIC statistics for port (\d+)\s+#+\s+RX-packets:\s*(\d+)\s+RX-missed:\s*(\d+)\s+'
                       r'RX-bytes:\s*(\d+)\s+RX-errors:\s*(\d+)\s+RX-nombuf:\s*(\d+)\s+TX-packets:\s*(\d+)\s+'
                       r'TX-errors:\s*(\d+)\s+TX-bytes:\s*(\d+)')
XSTATS = re.compile(r'NIC extended statistics for port (\d+) *\n((?:\w+: \d+\n)+)')
RSS_KEY = re.compile(r'RSS key:\s*\n([0-9A-Fa-f]+)')
RETA = re.compile(r'RSS RETA configuration: hash index=(\d+), queue=(\d+)')
SUMMARY = re.compile(r'Number of available ports: \d+\s*\nPort .*\n((?:\d+ +[0-9A-Fa-f:]{17} .*\n?)+)')
# A packet `set verbose 1` printed: its line, then its ol_flags line.
PACKET = re.compile(r'src=([0-9A-Fa-f:]{17}) - dst=([0-9A-Fa-f:]{17}) - pool=\S+ - type=0x([0-9a-f]{4}) - '
                    r'length=(\d+)([^\n]*)\n\s*ol_flags: ([^\n]*)')
RSS_OF = re.compile(r' - RSS hash=0x([0-9a-f]+) - RSS queue=0x([0-9a-f]+)')
TCI_OF = re.compile(r' - VLAN tci=0x([0-9a-f]+)')
CMD = re.compile(r'BNXT-SUMMARY cmd run=\S+ rc=\S+ up=\S+ (\S+)')


def packets(dump):
    """(src, dst, ethertype, length, RSS hash or None, queue or None, VLAN TCI or None, ol_flags) of
    every packet printed in dump."""
    out = []
    for m in PACKET.finditer(dump):
        rss, tci = RSS_OF.search(m[5]), TCI_OF.search(m[5])
        out.append((m[1].lower(), m[2].lower(), m[3], int(m[4]), rss and int(rss[1], 16), rss and int(rss[2], 16),
                    tci and int(tci[1], 16), m[6]))
    return out


def verbose_dumps(text):
    """The text testpmd printed between each `set verbose 1` and the `set verbose 0` after it."""
    out, at = [], 0
    while True:
        start = text.find('Change verbose level from 0 to 1', at)
        if start < 0:
            return out
        end = text.find('Change verbose level from 1 to 0', start)
        end = len(text) if end < 0 else end
        out.append(text[start:end])
        at = end


class Phase:
    """One `start`/`stop` of a run: what each port received and sent, per port and queue."""

    def __init__(self, block):
        self.ports = {int(m[1]): tuple(int(x) for x in m.groups()[1:]) for m in STATS.finditer(block)}
        self.streams = [tuple(int(x) for x in m.groups()) for m in STREAM.finditer(block)]
        self.rx, self.tx, self.dropped = {}, {}, 0
        if self.streams:
            for rxp, _, txp, _, rx, tx, txd in self.streams:
                self.rx[rxp] = self.rx.get(rxp, 0) + rx
                self.tx[txp] = self.tx.get(txp, 0) + tx
                self.dropped += txd
        else:
            for p, (rx, rxd, tx, txd) in self.ports.items():
                self.rx[p], self.tx[p] = rx, tx
                self.dropped += rxd + txd

    def queue_rx(self, port):
        """{queue: packets received} of port's streams."""
        return {q: rx for rxp, q, _, _, rx, _, _ in self.streams if rxp == port}


def phase_blocks(text):
    """The text of each `stop`'s statistics, in order."""
    return [part.split('Done.')[0] for part in text.split('Telling cores to stop')[1:]]


def frames(path):
    """(source MAC, destination MAC, VLAN id or None, ethertype, payload) of every frame in the pcap
    file at path."""
    out = []
    for f in summary_check.pcap_frames(path):
        if len(f) < 14:
            continue
        vid, at = None, 12
        if f[12:14] == b'\x81\x00' and len(f) >= 18:
            vid, at = int.from_bytes(f[14:16], 'big') & 0xfff, 16
        out.append((f[6:12].hex(':'), f[0:6].hex(':'), vid, f[at:at + 2].hex(), f[at + 2:]))
    return out


def udp_tuple(payload):
    """The IPv4 UDP 4-tuple hash input (addresses, ports) of an IPv4 packet, or None."""
    if len(payload) < 20 or payload[0] >> 4 != 4 or payload[9] != 17:
        return None
    ihl = (payload[0] & 0xf) * 4
    if len(payload) < ihl + 4:
        return None
    return payload[12:20] + payload[ihl:ihl + 4]


def check_run(run, text, errtext, nics, macs):
    """What one testpmd run must show: MACs, link up at the port's speed, packets both ways, ports
    closed."""
    fails = []
    for want in ('Port 0 is closed', 'Port 1 is closed', 'Bye...'):
        if want not in text:
            fails.append(f'{run}: testpmd never said "{want}"')
    for bad in ('Segmentation fault', 'PANIC', 'Cannot init', 'Fail to start port', 'Fail to configure port',
                'failed diag='):
        if bad in text + errtext:
            fails.append(f'{run}: testpmd output has "{bad}"')
    info_macs = re.findall(r'MAC address:\s*([0-9A-Fa-f:]{17})', text)
    if [m.lower() for m in info_macs[:len(macs)]] != [m.lower() for m in macs]:
        fails.append(f'{run}: show port info gave MACs {info_macs}, expected {macs}')
    links = re.findall(r'Link status:\s*(\w+)', text)
    if links[:nics] != ['up'] * nics:
        fails.append(f'{run}: show port info gave link status {links}')
    speeds = re.findall(r'Link speed:\s*([^\n]+)', text)
    if [s.strip() for s in speeds[:nics]] != [PORT_SPEED] * nics:
        fails.append(f'{run}: show port info gave link speeds {speeds}, expected {PORT_SPEED}')
    nic = {int(m[1]): [int(x) for x in m.groups()[1:]] for m in NIC_STATS.finditer(text)}
    for port in range(nics):
        s = nic.get(port)  # rx, missed, rx bytes, rx errors, nombuf, tx, tx errors, tx bytes
        if not s or s[0] == 0 or s[5] == 0 or s[3] or s[6]:
            fails.append(f'{run}: show port stats: port {port}: {s} (packets both ways, no errors expected)')
    return fails, nic


def check_rss(ph, text, dump, macs, fr):
    """The rss phase: both queues used, each packet's hash recomputed from the capture under the
    port's key, its queue the redirection table's, the NIC's counters agreeing."""
    fails = []
    keys = [bytes.fromhex(k) for k in RSS_KEY.findall(text)]
    retas, reta = [], {}
    for m in RETA.finditer(text):
        if int(m[1]) == 0 and reta:
            retas.append(reta)
            reta = {}
        reta[int(m[1])] = int(m[2])
    if reta:
        retas.append(reta)
    if len(keys) < 2 or len(retas) < 2 or any(len(r) != 64 for r in retas[:2]):
        return [f'rss: {len(keys)} RSS keys and redirection tables of {[len(r) for r in retas]} entries '
                f'printed, 2 keys and 2 tables of 64 expected']
    tuples = {}
    for src, dst, vid, ty, payload in fr:
        t = udp_tuple(payload) if ty == '0800' and vid is None else None
        if t is not None:
            tuples.setdefault(dst, set()).add(t)
    printed = packets(dump)
    for port, mac in enumerate(macs):
        other = macs[1 - port].lower()
        qrx = ph.queue_rx(port)
        want = {toeplitz(keys[port], t) for t in tuples.get(mac.lower(), ())}
        got = [(p[4], p[5]) for p in printed
               if p[0] == other and p[1] == mac.lower() and p[2] == '0800' and p[4] is not None]
        # Each queue must hold what the redirection table gives the packets' hashes: both queues
        # when the hashes spread, one when they do not (the PMD draws its RSS key at random, and
        # txonly's flows differ only in a few bits of the source port's high byte, so a few keys
        # in a hundred send every flow of a port to one queue). Beside them, up to STRAY frames
        # the guest's virtio-net NIC sent on its own (printed without a hash, so on a queue this
        # cannot tell).
        by_table = collections.Counter(retas[port][h % 64] for h, _ in got)
        extra = {q: qrx.get(q, 0) - by_table.get(q, 0) for q in (0, 1)}
        if len(qrx) != 2 or any(n < 0 for n in extra.values()) or sum(extra.values()) > STRAY:
            fails.append(f'rss: port {port} received {qrx} per queue; the redirection table puts the '
                         f'packets it printed on {dict(by_table)} (and at most {STRAY} strays beside them)')
        if len(got) != ph.tx.get(1 - port):
            fails.append(f'rss: port {port}: {len(got)} packets from port {1 - port} printed with a hash, '
                         f'{ph.tx.get(1 - port)} sent')
        wrong_hash = [h for h, _ in got if h not in want]
        if wrong_hash or not want:
            fails.append(f'rss: port {port}: hashes {sorted(set(wrong_hash))[:4]} match no UDP 4-tuple of the capture '
                         f'under the port\'s key ({len(want)} 4-tuples)')
        wrong_queue = [(h, q) for h, q in got if retas[port][h % 64] != q]
        if wrong_queue:
            fails.append(f'rss: port {port}: packets on queues other than the redirection table\'s: {wrong_queue[:4]}')
    xstats = {int(m[1]): dict(re.findall(r'(\w+):\s*(\d+)', m[2])) for m in XSTATS.finditer(text)}
    for port in range(len(macs)):
        x = {k: int(v) for k, v in xstats.get(port, {}).items()}
        for q, rx in ph.queue_rx(port).items():
            hw = x.get(f'rx_q{q}_packets', 0)
            if not rx <= hw <= rx + STRAY:
                fails.append(f'rss: port {port} queue {q}: xstats rx_q{q}_packets {hw}, testpmd received {rx}')
        hw_tx = sum(x.get(f'tx_q{q}_packets', 0) for q in range(2))
        if hw_tx != ph.tx.get(port) or x.get('tx_good_frames') != ph.tx.get(port):
            fails.append(f'rss: port {port}: xstats tx_q0/1_packets {hw_tx}, tx_good_frames {x.get("tx_good_frames")}; '
                         f'testpmd sent {ph.tx.get(port)}')
        if not ph.rx.get(port, 0) <= x.get('rx_good_frames', 0) <= ph.rx.get(port, 0) + STRAY:
            fails.append(f'rss: port {port}: xstats rx_good_frames {x.get("rx_good_frames")}, '
                         f'testpmd received {ph.rx.get(port)}')
    return fails


def check_vlan_dump(dump, macs):
    """The packets port 1 printed in vlan-listed: each with its stripped tag."""
    got = [p for p in packets(dump) if p[0] == macs[0].lower() and p[1] == macs[1].lower()]
    if not got:
        return ['vlan-listed: port 1 printed no packet from port 0']
    for p in got:
        if p[6] is None or p[6] & 0xfff != VLAN or 'RTE_MBUF_F_RX_VLAN_STRIPPED' not in p[7]:
            return [f'vlan-listed: {len(got)} packets from port 0 printed, one without its stripped tag {VLAN}: '
                    f'tci={p[6]} ol_flags={p[7].strip()}']
    return []


def check_phases(phases, texts, macs, fr):
    """Every forwarding phase's counts; phases are (run, name, Phase)."""
    fails = []
    for _, name, ph in phases:
        if sorted(ph.rx) != [0, 1] or sorted(ph.tx) != [0, 1]:
            fails.append(f'{name}: statistics for ports {sorted(ph.rx)}/{sorted(ph.tx)}')
            continue
        (rx0, rx1), (tx0, tx1) = (ph.rx[0], ph.rx[1]), (ph.tx[0], ph.tx[1])
        if ph.dropped:
            fails.append(f'{name}: {ph.dropped} dropped')
        queues = max(1, len(ph.streams) // 2)
        between = lambda rx, sent: sent <= rx <= sent + STRAY  # noqa: E731
        if name == 'rss':
            want = 2 * BURST * queues
            if (tx0, tx1) != (want, want):
                fails.append(f'rss: ports sent {tx0}/{tx1}, expected {want} each')
            for port, rx, tx_other in ((0, rx0, tx1), (1, rx1, tx0)):
                if not between(rx, tx_other):
                    fails.append(f'rss: port {port} received {rx} of the {tx_other} the other sent')
        elif name == 'peer':
            if rx0 < PEER_ARPS or rx1 < PEER_ARPS or tx0 or tx1:
                fails.append(f'peer: ports received {rx0}/{rx1} ({PEER_ARPS} ARP requests sent) and sent {tx0}/{tx1}')
        elif name in ('macswap', 'io'):
            for port, rx, tx, rx_other in ((0, rx0, tx0, rx1), (1, rx1, tx1, rx0)):
                if rx <= BURST or tx <= BURST:
                    fails.append(f'{name}: port {port} received {rx}, sent {tx} (more than {BURST} each expected)')
                if not rx_other <= tx + BURST + STRAY or tx > rx_other + IN_FLIGHT:
                    fails.append(f'{name}: port {port} sent {tx}, the other port received {rx_other}')
        else:
            # Filter phases: port 0 sends to what the phase tests, port 1 to port 0.
            want = BURST * queues
            if (tx0, tx1) != (want, want):
                fails.append(f'{name}: ports sent {tx0}/{tx1}, expected {want} each')
            if not between(rx0, tx1):
                fails.append(f'{name}: port 0 received {rx0} of the {tx1} port 1 sent')
            accepted = name in ('promisc-on', 'mcast-listed', 'allmulti', 'vlan-listed', 'vlan-untagged')
            if accepted and not between(rx1, tx0):
                fails.append(f'{name}: port 1 received {rx1} of the {tx0} port 0 sent (all expected)')
            if not accepted and rx1 > STRAY:
                fails.append(f'{name}: port 1 received {rx1} of the {tx0} port 0 sent (none expected)')
    # The packets printed in each verbose phase: its run's dumps, in order.
    dumps = {}
    for run in texts:
        names = [n for r, n, _ in phases if r == run and n in VERBOSE]
        dumps.update(zip(names, verbose_dumps(texts[run])))
    for run, name, ph in phases:
        if name == 'rss':
            fails += check_rss(ph, texts[run], dumps.get(name, ''), macs, fr)
        elif name == 'vlan-listed':
            fails += check_vlan_dump(dumps.get(name, ''), macs)
    return fails


def check_link(text):
    """The link phase's port summaries."""
    blocks = [m[1] for m in SUMMARY.finditer(text)]
    got = []
    for b in blocks:
        rows = {}
        for line in b.strip().splitlines():
            w = line.split()
            if len(w) >= 5:
                rows[int(w[0])] = (w[4], ' '.join(w[5:]))
        got.append(rows)
    want = [{0: step, 1: ('up', PORT_SPEED)} for step in LINK_STEPS]
    if got != want:
        return [f'link: show port summary gave {got}, expected {want}']
    return []


def check_capture(fr, macs, peer_mac, sent):
    """The segment capture against what testpmd says was sent."""
    fails = []
    by_src = {}
    for src, *_ in fr:
        by_src[src] = by_src.get(src, 0) + 1
    for port, mac in enumerate(macs):
        if by_src.get(mac.lower(), 0) < 4 * BURST:
            fails.append(f'segment capture: {by_src.get(mac.lower(), 0)} frames from port {port} ({mac})')
    arps = sum(1 for src, _, _, ty, _ in fr if src == peer_mac.lower() and ty == '0806')
    if arps < PEER_ARPS:
        fails.append(f'segment capture: {arps} ARP frames from the peer {peer_mac}, {PEER_ARPS} expected')
    m0 = macs[0].lower()
    count = lambda pred: sum(1 for f in fr if f[0] == m0 and pred(f))  # noqa: E731
    for what, n, want in (('to the unknown MAC', count(lambda f: f[1] == STRANGER), 2 * BURST),
                          (f'to {GROUP}', count(lambda f: f[1] == GROUP), 2 * BURST),
                          (f'to {OTHER_GROUP}', count(lambda f: f[1] == OTHER_GROUP), 4 * BURST),
                          (f'tagged {VLAN}', count(lambda f: f[2] == VLAN), 4 * BURST)):
        if n < want:
            fails.append(f'segment capture: {n} frames from port 0 {what}, {want} sent')
    # Every frame a port sent crossed the segment once (io sends the peer's frames on too, with
    # its address: the capture's total is compared, less the peer's own ARP requests). Frames
    # still in a TX ring when a phase stops may never be sent: a ring's worth per port and phase.
    total, phases_n = sent
    if len(fr) - arps < total - 256 * len(macs) * phases_n:
        fails.append(f'segment capture: {len(fr) - arps} frames besides the peer\'s ARP requests, testpmd sent {total}')
    return fails


def check_hwrm(logs):
    """Every request answered SUCCESS."""
    fails = []
    for path in logs:
        try:
            with open(path, errors='replace') as f:
                bad = [line.strip() for line in f if len(line.split()) > 4 and line.split()[4] != 'SUCCESS']
        except OSError as e:
            fails.append(f'HWRM log {path}: {e}')
            continue
        for line in bad[:5]:
            fails.append(f'{os.path.basename(path)}: request not answered SUCCESS: {line}')
        if len(bad) > 5:
            fails.append(f'{os.path.basename(path)}: {len(bad) - 5} more requests not answered SUCCESS')
    return fails


def check(summary, log, a):
    nics, macs = a.nics, a.mac
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
    for r in recs.get('stuck', []):
        how = 'within 120 s' if r.get('alive') == '1' else 'before it exited'
        fails.append(f'{r.get("run")}: testpmd gave no prompt after `{r.get("after", "").replace("+", " ")}` {how} '
                     f'({r.get("prompts")} prompts in its output); the run\'s later commands were not sent')
    # The commands init-dpdk gave testpmd (its records' last word, '+' for spaces).
    commands = {c.replace('+', ' ') for c in CMD.findall(log)}
    phases, texts, nics_stats = [], {}, {}
    for run in runs:
        text = testpmd_text(log, TP % run, commands)
        errtext = testpmd_text(log, TPERR % run, commands)
        texts[run] = text
        f, nics_stats[run] = check_run(run, text, errtext, nics, macs)
        fails += f
        names = [r.get('name') for r in recs.get('phase', []) if r.get('run') == run]
        blocks = phase_blocks(text)
        if len(blocks) != len(names):
            fails.append(f'{run}: phases {names} reported {len(blocks)} statistics')
        phases += [(run, n, Phase(b)) for n, b in zip(names, blocks)]
        if any(r.get('run') == run for r in recs.get('link', [])):
            fails += check_link(text)
    if not recs.get('link'):
        fails.append('the link phase never ran')
    if tuple(n for _, n, _ in phases) != PHASES:
        fails.append(f'phases {[n for _, n, _ in phases]}, expected {list(PHASES)}')
    fr = []
    if a.pcap:
        try:
            fr = frames(a.pcap)
        except (OSError, ValueError) as e:
            fails.append(f'segment capture: {e}')
    fails += check_phases(phases, texts, macs, fr)
    if a.pcap:
        sent = sum(ph.tx.get(p, 0) for _, _, ph in phases for p in ph.tx)
        fails += check_capture(fr, macs, a.peer_mac, (sent, len(phases)))
    fails += check_hwrm(a.hwrm_log)
    for line in summary['dmesg']:
        if summary_check.FATAL.search(line):
            fails.append(f'kernel: {line}')
    if summary['end'] is None:
        fails.append('the guest never reported its end')
    return fails, phases, nics_stats


def notes(phases):
    """What testpmd reported that is DPDK's own doing, not the model's: a port's forward statistics
    (the NIC's counters) below what its forwarding streams handled, which no NIC can count."""
    out = []
    for _, name, ph in phases:
        if not ph.streams:
            continue
        for p, (rx, _, tx, _) in ph.ports.items():
            if rx < ph.rx.get(p, 0) or tx < ph.tx.get(p, 0) or max(rx, tx) >= 1 << 63:
                out.append(f'{name}: port {p}\'s forward statistics ({rx}/{tx}) differ from its streams\' '
                           f'({ph.rx.get(p)}/{ph.tx.get(p)}): after `port stop`/`port start` the PMD answers '
                           f'its new statistics contexts\' zeros with the counts it cached before '
                           f'(drivers/net/bnxt/bnxt_hwrm.c bnxt_update_prev_stat; the cache is freed only at close)')
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('log')
    ap.add_argument('--nics', type=int, required=True)
    ap.add_argument('--mac', action='append', default=[])
    ap.add_argument('--peer-mac', required=True)
    ap.add_argument('--pcap')
    ap.add_argument('--hwrm-log', action='append', default=[])
    ap.add_argument('--json')
    a = ap.parse_args()
    _toeplitz_selftest()
    try:
        with open(a.log, errors='replace') as f:
            log = f.read()
    except OSError as e:
        print(f'check-dpdk: cannot read {a.log}: {e}', file=sys.stderr)
        return 2
    summary = summary_check.parse(log)
    fails, phases, nics_stats = check(summary, log, a)
    for _, name, ph in phases:
        queues = ' '.join(f'port{p}q{q}={rx}' for p in (0, 1) for q, rx in sorted(ph.queue_rx(p).items()))
        print(f'  {name}: ' + ' '.join(f'port{p} rx={ph.rx.get(p)} tx={ph.tx.get(p)}' for p in (0, 1))
              + (f' ({queues})' if ph.streams else ''))
    for run, nic in nics_stats.items():
        for p, s in sorted(nic.items()):
            print(f'  {run}: port stats {p}: rx={s[0]} rx_bytes={s[2]} tx={s[5]} tx_bytes={s[7]}')
    for r in summary['records'].get('testpmd', []):
        print(f'  testpmd run={r.get("run")} secs={r.get("secs")}')
    found = notes(phases)
    for n in found:
        print(f'  note: {n}')
    if a.json:
        with open(a.json, 'w') as f:
            got = [(r, n, {'rx': ph.rx, 'tx': ph.tx, 'streams': ph.streams}) for r, n, ph in phases]
            json.dump({'log': a.log, 'summary': summary, 'phases': got, 'notes': found, 'failures': fails}, f, indent=1)
    for msg in fails:
        print(f'check-dpdk: {msg}')
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
