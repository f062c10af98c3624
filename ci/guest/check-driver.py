#!/usr/bin/env python3
"""Checks what ci/guest/init-driver reported: our driver inside the guest, through vfio-pci.

usage: check-driver.py CONSOLE_LOG --nics N

Every BCM57608 function first bound to bnxt_en; each `bnxt-rig detach` succeeded and left it on
vfio-pci; `bnxt-rig run --target vfio` passed at least one scenario and failed none; each
`bnxt-rig attach` succeeded and bnxt_en took the function again. Prints what failed; exit 1 then.
"""
import argparse
import re
import sys


def words(line):
    return dict(w.split("=", 1) for w in line.split() if "=" in w)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("console")
    ap.add_argument("--nics", type=int, required=True)
    a = ap.parse_args()
    lines = []
    with open(a.console, errors="replace") as f:
        for raw in f:
            m = re.search(r"BNXT-SUMMARY (\S+)(.*)", raw)
            if m:
                lines.append((m.group(1), words(m.group(2))))
    bad = []

    def of(kind):
        return [w for k, w in lines if k == kind]

    if not of("end"):
        bad.append("the guest did not reach its end (no 'end' line)")
    for mod in ("vfio_pci", "bnxt_en"):
        rcs = [w.get("rc") for w in of("modprobe") if w.get("module") == mod]
        if rcs != ["0"]:
            bad.append(f"modprobe {mod}: rc {rcs}")
    functions = of("function")
    if len(functions) != a.nics:
        bad.append(f"{len(functions)} functions, expected {a.nics}")
    for w in functions:
        if w.get("driver") != "bnxt_en":
            bad.append(f"{w.get('bdf')}: bound to {w.get('driver')} before detach, expected bnxt_en")
    detached = of("detach")
    if len(detached) != a.nics or any(w.get("rc") != "0" or w.get("driver") != "vfio-pci" for w in detached):
        bad.append(f"detach: {detached}")
    runs = of("run")
    if len(runs) != 1:
        bad.append(f"{len(runs)} run lines")
    else:
        r = runs[0]
        if r.get("rc") != "0" or r.get("failed") != "0" or not r.get("passed", "0").isdigit() or int(r["passed"]) < 1:
            bad.append(f"bnxt-rig run: {r}")
    attached = of("attach")
    if len(attached) != a.nics or any(w.get("rc") != "0" for w in attached):
        bad.append(f"attach: {attached}")
    after = of("after")
    if len(after) != a.nics or any(w.get("driver") != "bnxt_en" for w in after):
        bad.append(f"after attach: {after}")
    for b in bad:
        print(f"FAIL {a.console}: {b}")
    if not bad:
        r = runs[0]
        print(f"PASS {a.console}: {r.get('passed')} scenarios passed, {r.get('skipped')} skipped, on {a.nics} NICs through vfio-pci")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
