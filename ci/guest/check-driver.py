#!/usr/bin/env python3
"""Checks what ci/guest/init-driver reported: our driver inside the guest, through vfio-pci.

usage: check-driver.py CONSOLE_LOG --nics N [--expect-pass NAME ...]

Every BCM57608 function first bound to bnxt_en, all of them functions of one device; `bnxt-rig
doctor` said something blocks a run before the detach and nothing after it; `bnxt-rig detach 0`
alone was refused naming the other function and its driver; `bnxt-rig detach 0 1 ...` left every
one on vfio-pci; `bnxt-rig run --target vfio` passed at least one scenario and failed none, and
each --expect-pass scenario passed; `bnxt-rig attach --device 0` succeeded and bnxt_en took every
function again. Prints what failed; exit 1 then.
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
    ap.add_argument("--expect-pass", action="append", default=[], metavar="NAME",
                    help="a scenario that must be among those the run passed")
    a = ap.parse_args()
    lines = []
    passed = {}
    with open(a.console, errors="replace") as f:
        for raw in f:
            p = re.match(r"\s*PASS\s+(\S+)\s+(.*)", raw)
            if p:
                passed[p.group(1)] = p.group(2).strip()
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
    # One device: every function at the same domain:bus:slot (their IOMMU groups may differ: a
    # device whose functions are isolated from each other has a group per function).
    slots = {w.get("bdf", "").rsplit(".", 1)[0] for w in functions}
    if a.nics >= 2 and len(slots) != 1:
        bad.append(f"not the functions of one device: slots {sorted(slots)}")
    doctor = {w.get("when"): w for w in of("doctor")}
    if doctor.get("before", {}).get("rc") != "1" or doctor.get("after", {}).get("rc") != "0":
        bad.append(f"bnxt-rig doctor: expected exit 1 before detach (NICs on bnxt_en) and 0 after: {doctor}")
    alone = of("detach-alone")
    if a.nics >= 2 and (len(alone) != 1 or alone[0].get("rc") == "0" or alone[0].get("driver") != "bnxt_en"
                        or alone[0].get("names_other") != "1"):
        bad.append(f"detach of one function while the other is on bnxt_en was not refused naming it: {alone}")
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
    for name in a.expect_pass:
        if name not in passed:
            bad.append(f"scenario {name} did not pass in the guest")
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
        for name in a.expect_pass:
            print(f"     {name}: {passed[name]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
