#!/usr/bin/env python3
"""Checks what ci/guest/init-verbs reported: rdma-core's ibv_rc_pingpong on bnxt_re against the model.

usage: check-verbs.py CONSOLE_LOG --nics N

bnxt_en, bnxt_re and ib_uverbs loaded; N InfiniBand devices, each with a user-verbs node;
ibv_devinfo listed N devices with an active port; each bnxt_re device has a RoCE v2 GID for its
netdev's IPv4 address; in each pingpong run (polled, and with completion events), ibv_rc_pingpong's
server and client both exited 0, found no invalid data (--chk) and printed their "N bytes in S seconds"
line; no kernel warning or bnxt_re complaint. Prints what failed; exit 1 then.
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

# The pingpong runs ci/guest/init-verbs makes: polling the CQs, and waiting for completion events.
MODES = ('poll', 'events')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('console')
    ap.add_argument('--nics', type=int, required=True)
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
                bad.append(f'ibv_rc_pingpong {mode} {side}: {w}')
    for line in summary['dmesg']:
        if summary_check.FATAL.search(line) or summary_check.BNXT_RE_ERRORS.search(line):
            bad.append(f'kernel log: {line.strip()}')
    for b in bad:
        print(f'FAIL {a.console}: {b}')
    if not bad:
        done = '; '.join(f"{m} {s} {runs[(m, s)]['result'].replace('_', ' ')}" for m in MODES for s in ('server', 'client'))
        print(f'PASS {a.console}: ibv_rc_pingpong {done}')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
