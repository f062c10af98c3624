#!/usr/bin/env python3
"""Checks what ci/guest/init-pyverbs reported: rdma-core's own test suite on bnxt_re over the model,
each test's outcome compared with the kernel's expected results.

usage: check-pyverbs.py CONSOLE_LOG --expected FILE [--record] [--json OUT]

The modules loaded, bnxt_re0 has a RoCE v2 GID, Python imported pyverbs, every test module ran
(its lines "BNXT-PYVERBS MODULE| ..." are unittest's verbose output; "pyverbs module=M rc=R" its
exit status). Each test ends ok, skip (with unittest's reason), fail (FAIL or ERROR, or an
unexpected success) or lost (its process crashed or ran out of time before unittest reported it); a
module that crashed or ran out of time is an entry of its own, tests.MODULE, with status lost. After
such a module, init-pyverbs ran the test it died in alone ("pyverbs module=M alone=TEST ...") and
the tests it never reached in a process of their own ("pyverbs module=M rest=N ..."), their lines
among the module's: a test that began in a run that died has the outcome of its run alone.

FILE holds a line per test: `TEST-ID STATUS [WHY]`, STATUS one of ok, skip, fail, lost, or flaky:A|B
for a test whose outcome changes from run to run between the outcomes A, B, ... (it draws its
attributes at random); for skip, WHY is the reason unittest printed; for fail, lost and flaky, WHY
says what causes it (libbnxt_re, libibverbs, the guest, the test itself; where the model is the
cause, it starts with "model:" and says what the model lacks) and may not be empty or UNEXPLAINED;
a flaky line's WHY may name its failure, 'fails with "TEXT"': a run in which the test fails must
report TEXT in the last line of its failure (the exception's message).
The check fails when a test the file has as ok (or as flaky with ok among its outcomes) ends
otherwise now (beyond its flaky outcomes), when a test not ok now is missing from the file, when
the file's WHY is missing for a fail, lost or flaky test, or when a module did not run;
every other difference (a test now passing, a test gone) is shown and does not fail. With
--record, FILE is written from this run instead (the WHY of tests failing before and now are kept;
new ones get UNEXPLAINED, which the check then refuses until someone writes their cause), but not
from a run that did not get through the suite (the guest did not reach its end, bnxt_re0 had no GID,
pyverbs did not import, no module ran): the file is kept as it is then.
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

STATUSES = ('ok', 'skip', 'fail', 'lost')
NEED_CAUSE = ('fail', 'lost')


def outcomes_of(status):
    """The outcomes an expected-results STATUS allows: itself, or for flaky:A|B, A and B; None when
    it is neither."""
    if status in STATUSES:
        return {status}
    kind, _, alts = status.partition(':')
    allowed = set(alts.split('|'))
    return allowed if kind == 'flaky' and len(allowed) > 1 and allowed <= set(STATUSES) else None
# A test's header line in unittest's verbose output: "name (module.Class.name)", maybe followed on
# the same line by " ... outcome".
HEADER = re.compile(r'^(\w+) \(([\w.]+)\)')
OUTCOME = re.compile(r" \.\.\. (ok|skipped (['\"])(.*)\2|FAIL|ERROR|expected failure|unexpected success)\s*$")
# The outcome on a line of its own: the test printed something of its own after the header's " ... "
# (the rdmacm tests' "Player passive got: ..."), and unittest's word follows on the next line.
OUTCOME_ALONE = re.compile(r"^(ok|skipped (['\"])(.*)\2|FAIL|ERROR|expected failure|unexpected success)\s*$")


def module_outputs(text):
    """{module: [lines]} of the BNXT-PYVERBS lines, in order."""
    out = {}
    for raw in text.splitlines():
        at = raw.find('BNXT-PYVERBS ')
        if at < 0:
            continue
        rest = raw[at + len('BNXT-PYVERBS '):].rstrip('\r')
        module, sep, line = rest.partition('| ')
        if not sep:
            module, line = rest.rstrip('|'), ''
        out.setdefault(module, []).append(line)
    return out


def outcomes(lines):
    """{test id: (status, why)} from one module's verbose unittest output; a test whose header came
    and no outcome after it (its module crashed or ran out of time in it) is lost."""
    res, current, started = {}, None, []
    for line in lines:
        m = HEADER.match(line)
        if m:
            current = m[2]
            started.append(current)
        o = OUTCOME.search(line) or (OUTCOME_ALONE.match(line) if current and not m else None)
        if o and current and current not in res:
            word = o[1]
            if word == 'ok' or word == 'expected failure':
                res[current] = ('ok', '')
            elif word.startswith('skipped'):
                res[current] = ('skip', o[3])
            else:
                res[current] = ('fail', '')
            current = None
    for t in started:
        res.setdefault(t, ('lost', ''))
    return res


def ended(record):
    """Why a runner process with a summary record's exit status ended, in words."""
    rc = record.get('rc', '')
    if rc == '124':
        return 'out of time'
    return 'crashed' if rc.isdigit() and int(rc) > 128 else 'could not run'


# The header of a failed test's report at the end of unittest's output, and the rules around it.
REPORT = re.compile(r'^(?:ERROR|FAIL): \w+ \(([\w.]+)\)')
RULE = re.compile(r'^(=|-){20,}$')
# In a flaky line's WHY: what its failures must say ('fails with "TEXT"').
FAILS_WITH = re.compile(r'fails with "([^"]+)"')


def errors(lines):
    """{test id: the last line of its failure report} from one module's unittest output (the
    exception's message, for a test that ended ERROR or FAIL). A report is its header, the test's
    docstring if it has one, a rule of dashes, the traceback, and then the next rule."""
    res, current, body, ruled = {}, None, [], False
    for line in lines + ['=' * 70]:
        m = REPORT.match(line)
        if current and (m or (RULE.match(line) and ruled)):
            said = [b.strip() for b in body if b.strip()]
            res[current] = said[-1] if said else ''
            current = None
        if m:
            current, body, ruled = m[1], [], False
        elif current and RULE.match(line):
            ruled = True
        elif current and ruled:
            body.append(line)
    return res


def read_expected(path):
    """{test id: (status, why)} and a list of problems of the expected-results file."""
    exp, problems = {}, []
    if not os.path.exists(path):
        return exp, [f'{path}: no expected-results file (PYVERBS_RECORD=1 writes one)']
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith('#'):
                continue
            parts = line.split(None, 2)
            if len(parts) < 2 or outcomes_of(parts[1]) is None:
                problems.append(f'{path}:{n}: want "TEST-ID STATUS [WHY]" with STATUS one of {", ".join(STATUSES)} '
                                f'or flaky:A|B (two or more of them): {line}')
                continue
                continue
            why = parts[2] if len(parts) > 2 else ''
            if (parts[1] in NEED_CAUSE or parts[1].startswith('flaky:')) and (not why or why == 'UNEXPLAINED'):
                problems.append(f'{path}:{n}: {parts[0]} is expected to {parts[1]} without a cause: write what causes it ("model: ..." if the model)')
            exp[parts[0]] = (parts[1], why)
    return exp, problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('console')
    ap.add_argument('--expected', required=True)
    ap.add_argument('--record', action='store_true')
    ap.add_argument('--json')
    a = ap.parse_args()
    with open(a.console, errors='replace') as f:
        text = f.read()
    summary = summary_check.parse(text)

    def of(kind):
        return summary['records'].get(kind, [])

    bad, notes = [], []
    if summary['end'] is None:
        bad.append("the guest did not reach its end (no 'end' line)")
    for mod in ('bnxt_en', 'bnxt_re', 'ib_uverbs', 'rdma_ucm'):
        rcs = [w.get('rc') for w in of('modprobe') if w.get('module') == mod]
        if rcs != ['0']:
            bad.append(f'modprobe {mod}: rc {rcs}')
    if not (of('gids') or [{}])[0].get('bnxt_re0', '-').isdigit():
        bad.append(f"bnxt_re0 has no RoCE v2 GID: {of('gids')}")
    if (of('python') or [{}])[0].get('rc') != '0':
        bad.append(f"python could not import pyverbs: {of('python')}")
    outputs = module_outputs(text)
    now, modules, reruns = {}, {}, []
    for w in of('pyverbs'):
        if 'module' not in w:
            bad.append(f'pyverbs: {w}')
            continue
        m = w['module']
        if 'alone' in w or 'rest' in w:
            # After the module's process died: the test it died in alone, or the tests it never reached.
            reruns.append(w)
            if w.get('rc') not in ('0', '1'):
                what = f"{w['alone']} run alone" if 'alone' in w else f"the {w['rest']} tests of {m} left"
                notes.append(f"{what} ended with exit status {w.get('rc')} after {w.get('seconds')} s ({ended(w)})")
            continue
        modules[m] = w
        if w.get('rc') not in ('0', '1'):
            # The module itself, as an entry of its own: its end is part of what the file expects.
            now[f'tests.{m}'] = ('lost', '')
            notes.append(f"module {m} ended with exit status {w.get('rc')} after {w.get('seconds')} s ({ended(w)})")
    said = {}
    for m in modules:
        # The module's lines hold its own run and the runs after its crash, in order: a test that began
        # in a run that died and ran again later has the later run's outcome.
        now.update(outcomes(outputs.get(m, [])))
        said.update(errors(outputs.get(m, [])))
    if not modules:
        bad.append('no test module ran')
    exp, problems = read_expected(a.expected)
    # Tests the file knows in a module that ran but that this run did not report were lost with it.
    for t, (status, why) in exp.items():
        mod = t.split('.')[1] if t.count('.') >= 2 else ''
        if t not in now and mod in modules:
            now[t] = ('lost', '')
    # A run that did not get through the suite (a guest that stopped early, a module that never ran)
    # would record a fixture without the tests it never reached: keep the file as it is then.
    if a.record and bad:
        print(f'not recording {a.expected}: this run is incomplete')
    elif a.record:
        lines = ['# rdma-core tests (python3-pyverbs) on bnxt_re over the model: what each test does on this',
                 '# kernel. TEST-ID STATUS [WHY]; see ci/guest/check-pyverbs.py. Written with PYVERBS_RECORD=1,',
                 '# then each fail/lost line given its cause by hand; flaky:A|B marks a test whose outcome varies.']
        for t in sorted(now):
            status, why = now[t]
            old = exp.get(t)
            if old and old[0].startswith('flaky:') and status in outcomes_of(old[0]):
                status, why = old  # a flaky test stays one, whichever way it went this time
            elif status in ('fail', 'lost'):
                why = old[1] if old and old[0] in NEED_CAUSE and old[1] else 'UNEXPLAINED'
            lines.append(f'{t} {status} {why}'.rstrip())
        os.makedirs(os.path.dirname(os.path.abspath(a.expected)), exist_ok=True)
        with open(a.expected, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        print(f'recorded {len(now)} tests in {a.expected}')
        exp, problems = read_expected(a.expected)
    bad += problems
    for t in sorted(set(now) | set(exp)):
        got, want = now.get(t), exp.get(t)
        passes = 'ok' in outcomes_of(want[0]) if want else False
        if got is None:
            (bad if passes else notes).append(f'{t}: expected {want[0]}, not run now')
        elif want is None:
            if got[0] != 'ok':
                bad.append(f'{t}: {got[0]} {got[1]} and not in {a.expected}'.rstrip())
            else:
                notes.append(f'{t}: ok (new)')
        elif got[0] not in outcomes_of(want[0]):
            (bad if passes else notes).append(f'{t}: {got[0]} {got[1]}, expected {want[0]} {want[1]}'.rstrip())
        elif got[0] == 'fail' and want[0].startswith('flaky:') and FAILS_WITH.search(want[1]):
            # A flaky test's failure is the one its line names, not another hiding behind it.
            text = FAILS_WITH.search(want[1])[1]
            if text not in said.get(t, ''):
                bad.append(f'{t}: failed with "{said.get(t, "")}", but its line says it fails with "{text}"')
    for line in summary['dmesg']:
        if summary_check.FATAL.search(line):
            bad.append(f'kernel log: {line.strip()}')
    counts = {s: sum(1 for v in now.values() if v[0] == s) for s in STATUSES}
    flaky = [t for t, (status, _) in exp.items() if status.startswith('flaky:') and t in now]
    flaky_ok = sum(1 for t in flaky if now[t][0] == 'ok')
    if a.json:
        with open(a.json, 'w') as f:
            json.dump({'tests': {t: list(v) for t, v in sorted(now.items())}, 'counts': counts,
                       'flaky': {t: now[t][0] for t in sorted(flaky)}, 'errors': said,
                       'modules': modules, 'reruns': reruns, 'failures': bad, 'notes': notes}, f, indent=1)
    for n in notes:
        print(f'note {a.console}: {n}')
    for b in bad:
        print(f'FAIL {a.console}: {b}')
    if not bad:
        print(f'PASS {a.console}: {len(modules)} modules, ' + ', '.join(f'{counts[s]} {s}' for s in STATUSES)
              + f' ({len(flaky)} of them flaky, {flaky_ok} of those ok this time), as {a.expected} expects')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
