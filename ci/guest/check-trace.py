#!/usr/bin/env python3
"""Cross-checks a guest's bnxt-qemu-trace transcript against what the model processes served.

usage: check-trace.py TRANSCRIPT --nic HWRM_LOG MODEL_LOG [--nic HWRM_LOG MODEL_LOG ...] [--json OUT]

  TRANSCRIPT           the plugin's transcript (ci/guest-test.sh --trace: DIR/guest.transcript); its
                       drv0 is the first --nic, drv1 the second, ...
  --nic HWRM MODEL     one function: the model's --hwrm-log and its own log (stderr of `bnxt-model
                       serve`, whose last line carries doorbell_stores=N)
  --json OUT           also write the counts and every failure as JSON

For each function, the HWRM requests the plugin saw triggered, each with the answer the driver read
(name, seq_id, error code), must be the requests the model's --hwrm-log lists, in the same order,
with the same codes; and the stores the plugin saw into the doorbell BAR must be as many as the model
counted from its client. A request the model never answered (NO_RESPONSE, RESPONSE_NOT_WRITTEN) must
have no answer in the transcript.

Exit status 0 when every check held, 1 when one did not, 2 for bad usage or an unreadable file.
"""
import argparse
import json
import re
import sys

LINE = re.compile(r'^\s*\d+\.\d{9}\s+drv(\d+)\s+(\S+)\s*(.*)$')
REQUEST = re.compile(r'^(\S+) seq=(\S+)')
ANSWER = re.compile(r'^(\S+) seq=(\d+) (ok|refused (\S+))')
HWRM_LOG = re.compile(r'^\S+ (\S+) 0x[0-9a-f]{4} seq=(\S+) (\S+)')
STORES = re.compile(r'^# drv(\d+) doorbell stores: (\d+)$')
MODEL_STORES = re.compile(r'doorbell_stores=(\d+)')


def plugin_view(text):
    """Per function: the (name, seq, code) of each request as the plugin saw it, and its doorbell
    stores. A request without an answer gets code None."""
    nics, stores = {}, {}
    for raw in text.splitlines():
        m = STORES.match(raw)
        if m:
            stores[int(m.group(1))] = int(m.group(2))
            continue
        m = LINE.match(raw)
        if not m:
            continue
        nic, event, rest = int(m.group(1)), m.group(2), m.group(3)
        reqs = nics.setdefault(nic, [])
        if event == 'hwrm-request':
            r = REQUEST.match(rest)
            if r:
                reqs.append([r.group(1), r.group(2), None])
        elif event == 'hwrm-answer':
            a = ANSWER.match(rest)
            if not a:
                continue
            name, seq = a.group(1), a.group(2)
            code = 'SUCCESS' if a.group(3) == 'ok' else a.group(4)
            # The answer belongs to the latest request with that name and seq that has none.
            for r in reversed(reqs):
                if r[0] == name and r[1] == seq and r[2] is None:
                    r[2] = code
                    break
            else:
                reqs.append([name, seq, 'ANSWER-WITHOUT-REQUEST ' + code])
    return nics, stores


def model_view(log_text):
    out = []
    for raw in log_text.splitlines():
        m = HWRM_LOG.match(raw)
        if m:
            code = m.group(3)
            out.append([m.group(1), m.group(2), None if code in ('NO_RESPONSE', 'RESPONSE_NOT_WRITTEN') else code])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('transcript')
    ap.add_argument('--nic', nargs=2, action='append', metavar=('HWRM_LOG', 'MODEL_LOG'), required=True)
    ap.add_argument('--json')
    args = ap.parse_args()
    try:
        with open(args.transcript) as f:
            nics, stores = plugin_view(f.read())
        served, counted = [], []
        for hwrm, model in args.nic:
            with open(hwrm) as f:
                served.append(model_view(f.read()))
            with open(model) as f:
                m = MODEL_STORES.findall(f.read())
            counted.append(int(m[-1]) if m else None)
    except OSError as e:
        print(f'check-trace: {e}', file=sys.stderr)
        return 2
    failures, report = [], []
    for i, (want, dbs) in enumerate(zip(served, counted)):
        got = nics.get(i, [])
        if got != want:
            at = next((k for k, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
            g = ' '.join(map(str, got[at])) if at < len(got) else '(nothing)'
            w = ' '.join(map(str, want[at])) if at < len(want) else '(nothing)'
            failures.append(f'drv{i}: request {at + 1}: the plugin saw {g}, the model served {w} '
                            f'({len(got)} requests seen, {len(want)} served)')
        seen = stores.get(i)
        if dbs is None:
            failures.append(f'drv{i}: the model log has no doorbell_stores= line (did the model exit cleanly?)')
        elif seen != dbs:
            failures.append(f'drv{i}: the plugin saw {seen} doorbell stores, the model counted {dbs}')
        report.append({'nic': i, 'requests_seen': len(got), 'requests_served': len(want),
                       'doorbell_stores_seen': seen, 'doorbell_stores_counted': dbs})
        print(f'check-trace: drv{i}: {len(got)} HWRM requests seen, {len(want)} served; '
              f'doorbell stores {seen} seen, {dbs} counted')
    for f in failures:
        print(f'check-trace: FAIL {f}')
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'nics': report, 'failures': failures}, f, indent=1)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
