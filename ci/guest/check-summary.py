#!/usr/bin/env python3
"""Checks the summary that ci/guest/init printed on a guest's console.

usage: check-summary.py CONSOLE_LOG --functions N [--mac MAC ...] [--link] [--traffic] [--peer-mac MAC] [--ib]
                        [--json OUT]

  --functions N   how many 14e4:1760 functions the guest must see (0: a boot with no device, where
                  bnxt_en must still load and bind nothing)
  --mac MAC       the MAC the model was given, one per function in PCI slot order (0000:00:05.0 first);
                  each function's netdev must carry it
  --link          every bnxt_en netdev must come up with carrier (operstate up, carrier 1), then go
                  down, up (with carrier again) and down once more without error
  --traffic       the guest's ARP exchange between its first two netdevs must have got a reply, and
                  both netdevs must count sent and received packets (ring statistics)
  --peer-mac MAC  the guest's QEMU virtio-net NIC, on the model's segment, carries MAC: the ARP from
                  the first bnxt_en netdev to it must be answered from MAC, and it must count sent and
                  received packets (QEMU's stream netdev framing against the model's segment hub)
  --ib            bnxt_re must register an InfiniBand device per function, and its probe must not report
                  a RoCE command the firmware refused or a step it could not take (QP1 for ib_mad,
                  congestion control: BNXT_RE_ERRORS); otherwise only recorded
  --json OUT      also write what was found, and every failure, as JSON

Exit status 0 when every check passed, 1 when one failed, 2 for bad usage or an unreadable log.
"""
import argparse
import json
import re
import sys

PREFIX = 'BNXT-SUMMARY '
# Kernel lines that fail a run whatever else happened.
FATAL = re.compile(r'probe with driver \S+ failed|WARNING:|BUG:|Oops|Call Trace|kernel panic', re.I)
# bnxt_en's own complaints about answers it did not expect from the firmware (bnxt.c, bnxt_hwrm.c):
# a ring or VNIC request refused, a completion-ring wait that timed out, a request that timed out,
# reservations or coalescing refused, a TX ring reset. Requests the firmware may decline
# (CMD_NOT_SUPPORTED, printed as "hwrm req_type ... error 0xffff") are not among them.
DRIVER_ERRORS = re.compile(r'Resp cmpl intr err|hwrm_ring_(alloc|free) type \d+ failed|Error \(timeout|'
                           r'hwrm \w+ (alloc|cfg) failure|HWRM set coalescing failure|Unable to reserve|'
                           r'Not enough rings|failed to update (link|phy)|Invalid Tx completion|'
                           r'RX cons \w+ != expected|Failed to set async event|bnxt_init_nic err|'
                           r'hwrm req_type 0x\w+ seq id 0x\w+ error 0x(?!ffff\b)[0-9a-f]+', re.I)

# bnxt_re's complaints during its probe (qplib_rcfw.c prints every RoCE command the firmware refused as
# "QPLIB: cmdq[cookie]=opcode status N"; ib_verbs.c and main.c name the step that failed: QP1 for
# ib_mad, the port, congestion control). With --ib none of them may appear.
BNXT_RE_ERRORS = re.compile(r"QPLIB: cmdq\[0x[0-9a-f]+\]=0x[0-9a-f]+ status |Couldn't (create ib_mad QP1|open port)|"
                            r'Failed to (setup CC|query CC|create HW QP|modify HW QP)', re.I)


def pcap_frames(path):
    """The bytes of each frame of the classic pcap file at path, in order (either byte order, micro-
    or nanosecond stamps). ValueError when it is not one."""
    import struct
    with open(path, 'rb') as f:
        data = f.read()
    if len(data) < 24:
        raise ValueError(f'{path}: shorter than a pcap header')
    magic = data[:4]
    if magic in (bytes.fromhex('d4c3b2a1'), bytes.fromhex('4d3cb2a1')):
        endian = '<'
    elif magic in (bytes.fromhex('a1b2c3d4'), bytes.fromhex('a1b23c4d')):
        endian = '>'
    else:
        raise ValueError(f'{path}: not a pcap file (magic {magic.hex()})')
    at = 24
    while at + 16 <= len(data):
        incl, = struct.unpack_from(endian + 'I', data, at + 8)
        yield data[at + 16:at + 16 + incl]
        at += 16 + incl


def parse(text):
    """The summary block as a dict: begin/end words, lists of records, dmesg lines."""
    out = {'begin': None, 'end': None, 'records': {}, 'dmesg': [], 'notes': []}
    for raw in text.splitlines():
        at = raw.find(PREFIX)
        if at < 0:
            continue
        kind, _, rest = raw[at + len(PREFIX):].partition(' ')
        if kind == 'dmesg':
            out['dmesg'].append(rest)
        elif kind == 'note':
            out['notes'].append(rest)
        else:
            words = dict(w.split('=', 1) for w in rest.split() if '=' in w)
            if kind in ('begin', 'end'):
                out[kind] = words
            else:
                out['records'].setdefault(kind, []).append(words)
    return out


def check_traffic(rec):
    """Failures of the traffic exchange and the netdevs' counters."""
    fails = []
    t = rec.get('traffic', [None])[0]
    if t is None:
        return ['no traffic record (the guest was not asked for traffic, or did not get that far)']
    if 'skipped' in t:
        return [f"traffic skipped: {t['skipped']}"]
    if t.get('replies', '0') in ('0', ''):
        fails.append(f"ARP from {t.get('from')} to {t.get('to')} got no reply (arping rc={t.get('rc')})")
    stats = {s['name']: s for s in rec.get('stats', [])}
    for name in (t.get('from'), t.get('to')):
        s = stats.get(name, {})
        for key in ('rx_packets', 'tx_packets'):
            if not s.get(key, '-').isdigit() or int(s[key]) == 0:
                fails.append(f'{name}: {key}={s.get(key, "-")} after the ARP exchange')
    return fails


def check_jumbo(rec):
    """Failures of the jumbo-frame ping between the first two netdevs (MTU 9000)."""
    t = rec.get('jumbo', [None])[0]
    if t is None:
        return ['no jumbo record (the guest was not asked for traffic, or did not get that far)']
    fails = []
    if t.get('mtu_rc') != '0,0' or t.get('netns_rc') != '0':
        fails.append(f"jumbo set-up failed: MTU 9000 rc={t.get('mtu_rc')}, move into a namespace rc={t.get('netns_rc')}")
    if t.get('replies') != t.get('sent') or t.get('rc') != '0':
        fails.append(f"{t.get('replies')} of {t.get('sent')} {t.get('size')}-byte echoes from {t.get('from')} to "
                     f"{t.get('to')} answered (ping rc={t.get('rc')})")
    return fails


def mac_octets(text):
    """A MAC address as its six octets (arping may print `52:54:0:...` or `52:54:00:...`), or None."""
    parts = (text or '').split(':')
    try:
        octets = tuple(int(p, 16) for p in parts)
    except ValueError:
        return None
    return octets if len(octets) == 6 and all(0 <= o < 256 for o in octets) else None


def check_peer(rec, peer_mac):
    """Failures of the exchange with the guest's virtio-net NIC on the segment."""
    t = rec.get('peer-traffic', [None])[0]
    if t is None:
        return ['no peer-traffic record (the guest has no virtio-net NIC, or did not get that far)']
    if 'skipped' in t:
        return ['peer traffic skipped: ' + ' '.join(f'{k}={v}' for k, v in t.items())]
    fails = []
    peer = [n for n in rec.get('netdev', []) if n.get('name') == t.get('to')]
    if not peer or peer[0].get('driver') != 'virtio_net' or mac_octets(peer[0].get('mac')) != mac_octets(peer_mac):
        fails.append(f"the ARP target {t.get('to')} is not the virtio_net netdev with MAC {peer_mac}: {peer}")
    if t.get('replies', '0') in ('0', ''):
        fails.append(f"ARP from {t.get('from')} to the virtio-net NIC got no reply (arping rc={t.get('rc')})")
    elif mac_octets(t.get('reply_mac')) != mac_octets(peer_mac):
        fails.append(f"the ARP reply came from {t.get('reply_mac')}, not the virtio-net NIC ({peer_mac})")
    stats = {x['name']: x for x in rec.get('stats', [])}
    s = stats.get(t.get('to'), {})
    for key in ('rx_packets', 'tx_packets'):
        if not s.get(key, '-').isdigit() or int(s[key]) == 0:
            fails.append(f'{t.get("to")} (virtio-net): {key}={s.get(key, "-")} after the ARP exchange')
    return fails


def check(summary, functions, macs, want_link, want_ib, want_traffic=False, peer_mac=None):
    """The list of failures (empty when everything expected was seen)."""
    fails = []
    rec = summary['records']
    if summary['begin'] is None or summary['end'] is None:
        return ['no complete summary on the console (the guest crashed, hung or timed out)']
    found = int(rec.get('functions', [{}])[0].get('count', -1))
    if found != functions:
        fails.append(f'the guest saw {found} 14e4:1760 function(s), expected {functions}')
    mods = {r['module']: r for r in rec.get('modprobe', [])}
    if mods.get('bnxt_en', {}).get('rc') != '0':
        fails.append(f"modprobe bnxt_en failed (rc={mods.get('bnxt_en', {}).get('rc')})")
    for line in summary['dmesg']:
        if FATAL.search(line) or DRIVER_ERRORS.search(line):
            fails.append(f'kernel log: {line.strip()}')
    loaded = rec.get('modules', [{}])[0].get('loaded', '').split(',')
    if 'bnxt_en' not in loaded:
        fails.append(f'bnxt_en is not among the loaded modules ({",".join(loaded)})')
    netdevs = [n for n in rec.get('netdev', []) if n.get('driver') == 'bnxt_en']
    if functions == 0:
        if 'no-14e4:1760-function-found' not in summary['notes']:
            fails.append('the guest did not report that it found no 14e4:1760 function')
        if netdevs:
            fails.append(f"bnxt_en netdevs without any function: {[n['name'] for n in netdevs]}")
        return fails
    funcs = sorted(rec.get('function', []), key=lambda f: f['bdf'])
    for i, f in enumerate(funcs):
        if f.get('driver') != 'bnxt_en':
            fails.append(f"{f['bdf']} is bound to {f.get('driver')}, not bnxt_en")
        mine = [n for n in netdevs if n.get('bdf') == f['bdf']]
        if not mine:
            fails.append(f"{f['bdf']} has no bnxt_en netdev")
            continue
        if i < len(macs) and mine[0]['mac'].lower() != macs[i].lower():
            fails.append(f"{f['bdf']} netdev {mine[0]['name']} has MAC {mine[0]['mac']}, expected {macs[i]}")
    # bnxt_en's temperature sensor (TEMP_MONITOR_QUERY answered at probe and at each read).
    sensors = {h.get('bdf'): h for h in rec.get('hwmon', [])}
    for f in funcs:
        h = sensors.get(f['bdf'])
        if h is None:
            fails.append(f"{f['bdf']}: bnxt_en registered no temperature sensor (hwmon)")
        elif not h.get('temp1_input', '-').isdigit() or int(h['temp1_input']) <= 0:
            fails.append(f"{f['bdf']}: temperature sensor reads {h.get('temp1_input')}")
    if want_link:
        links = {l['name']: l for l in rec.get('link', [])}
        for n in netdevs:
            l = links.get(n['name'])
            if l is None:
                fails.append(f"{n['name']}: never brought up")
            elif l.get('up_rc') != '0' or l.get('carrier') != '1' or l.get('operstate') != 'up':
                fails.append(f"{n['name']}: link not up (ip link set up rc={l.get('up_rc')}, "
                             f"operstate={l.get('operstate')}, carrier={l.get('carrier')})")
        cycles = {c['name']: c for c in rec.get('cycle', [])}
        for n in netdevs:
            c = cycles.get(n['name'])
            if c is None:
                fails.append(f"{n['name']}: no down/up/down cycle reported")
            elif (c.get('down_rc'), c.get('up_rc'), c.get('carrier_after_up'), c.get('down2_rc'),
                  c.get('operstate')) != ('0', '0', '1', '0', 'down'):
                fails.append(f"{n['name']}: down/up/down cycle: " + ' '.join(f'{k}={v}' for k, v in c.items()))
    if want_traffic:
        fails.extend(check_traffic(rec))
        fails.extend(check_jumbo(rec))
    if peer_mac:
        fails.extend(check_peer(rec, peer_mac))
    if want_ib:
        count = int(rec.get('ib_devices', [{}])[0].get('count', 0))
        if count < functions:
            fails.append(f'bnxt_re registered {count} InfiniBand device(s), expected {functions}')
        for line in summary['dmesg']:
            if BNXT_RE_ERRORS.search(line):
                fails.append(f'bnxt_re: {line.strip()}')
    return fails


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('log')
    ap.add_argument('--functions', type=int, required=True)
    ap.add_argument('--mac', action='append', default=[])
    ap.add_argument('--link', action='store_true')
    ap.add_argument('--traffic', action='store_true')
    ap.add_argument('--peer-mac')
    ap.add_argument('--ib', action='store_true')
    ap.add_argument('--json')
    a = ap.parse_args()
    try:
        with open(a.log, errors='replace') as f:
            summary = parse(f.read())
    except OSError as e:
        print(f'check-summary: cannot read {a.log}: {e}', file=sys.stderr)
        return 2
    fails = check(summary, a.functions, a.mac, a.link, a.ib, a.traffic, a.peer_mac)
    if a.json:
        with open(a.json, 'w') as f:
            json.dump({'log': a.log, 'summary': summary, 'failures': fails}, f, indent=1)
    kernel = (summary['begin'] or {}).get('kernel', '?')
    for line in summary['dmesg']:
        print(f'  | {line}')
    recs = summary['records']
    for r in (recs.get('netdev', []) + recs.get('link', []) + recs.get('traffic', [])
              + recs.get('peer-traffic', []) + recs.get('stats', [])
              + recs.get('cycle', [])):
        print('  ' + ' '.join(f'{k}={v}' for k, v in r.items()))
    for r in summary['records'].get('modprobe', []) + summary['records'].get('ib_devices', []):
        print('  ' + ' '.join(f'{k}={v}' for k, v in r.items()))
    if fails:
        print(f'FAIL {a.log} (kernel {kernel}):')
        for f in fails:
            print(f'  - {f}')
        return 1
    print(f'PASS {a.log} (kernel {kernel})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
