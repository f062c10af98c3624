#!/usr/bin/env python3
"""Checks what ci/guest/init-driver reported: our driver inside the guest, through vfio-pci.

usage: check-driver.py CONSOLE_LOG --nics N [--min-passed M] [--json FILE] [--expect-pass NAME ...]

Every BCM57608 function first bound to bnxt_en, all of them functions of one device; `bnxt-rig
doctor` said something blocks a run before the detach and nothing after it; `bnxt-rig detach 0`
alone was refused naming the other function and its driver; `bnxt-rig detach 0 1 ...` left every
one on vfio-pci; `bnxt-rig run --target vfio` passed at least M scenarios (default 1) and failed none;
every scenario `bnxt-rig list --target vfio` says runs did run and pass, and every one of them with
firmware faults had them injected at the driver's seam (its report line says how many fired, and
at least one did); each --expect-pass scenario passed; `bnxt-rig attach --device 0` succeeded
and bnxt_en took every function again. Prints
what failed (exit 1 then), the scenarios that do not run on the target with their reason, and each
scenario's wall time.
"""
import argparse
import json
import re
import sys


def words(line):
    return dict(w.split("=", 1) for w in line.split() if "=" in w)


def listing(lines):
    """The scenarios `list --target vfio` names: name -> (runs, reason, has seam faults)."""
    out = {}
    current = None
    for line in lines:
        if line.startswith("NAME ") or not line.strip() or line.startswith("on "):
            continue
        if line.startswith("    "):
            if current and "firmware faults: at the driver's seam" in line:
                out[current]["seam"] = True
            continue
        m = re.match(r"(\S+)\s+(yes|no: .*?)\s+(\S+)$", line)
        if m:
            current = m.group(1)
            out[current] = {"runs": m.group(2) == "yes", "why": m.group(2)[4:], "seam": False}
    return out


def run_report(lines):
    """Each scenario of the run's console report: name -> (verdict, seconds, faults fired at the seam)."""
    out = {}
    current = None
    for line in lines:
        m = re.match(r"(PASS|FAIL|SKIP|TIMEOUT)\s+(\S+)\s+\((.*)\)$", line)
        if m:
            current = m.group(2)
            secs = None
            t = re.search(r", ([0-9.]+)(ms|s)\)?$", m.group(3))
            if t:
                secs = float(t.group(1)) / (1000 if t.group(2) == "ms" else 1)
            out[current] = {"verdict": m.group(1), "secs": secs, "fired": None}
            continue
        m = re.match(r"\s+firmware faults at the driver's seam: (\d+) fired", line)
        if m and current:
            out[current]["fired"] = int(m.group(1))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("console")
    ap.add_argument("--nics", type=int, required=True)
    ap.add_argument("--min-passed", type=int, default=1)
    ap.add_argument("--json", help="write what was found here")
    ap.add_argument("--expect-pass", action="append", default=[], metavar="NAME",
                    help="a scenario that must be among those the run passed")
    a = ap.parse_args()
    lines, listed, ran = [], [], []
    with open(a.console, errors="replace") as f:
        for raw in f:
            raw = raw.rstrip("\r\n")
            m = re.search(r"BNXT-SUMMARY (\S+)(.*)", raw)
            if m:
                lines.append((m.group(1), words(m.group(2))))
            m = re.search(r"BNXT-LIST (.*)", raw)
            if m:
                listed.append(m.group(1))
            m = re.search(r"BNXT-RUN (.*)", raw)
            if m:
                ran.append(m.group(1))
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
    lists = of("list")
    if len(lists) != 1 or lists[0].get("rc") != "0":
        bad.append(f"bnxt-rig list --target vfio: {lists}")
    plan = listing(listed)
    report = run_report(ran)
    runs = of("run")
    if len(runs) != 1:
        bad.append(f"{len(runs)} run lines")
    else:
        r = runs[0]
        passed = int(r["passed"]) if r.get("passed", "").isdigit() else -1
        if r.get("rc") != "0" or r.get("failed") != "0":
            bad.append(f"bnxt-rig run: {r}")
        if passed < a.min_passed:
            bad.append(f"bnxt-rig run passed {passed} scenarios, fewer than the {a.min_passed} required")
    should_run = [n for n, p in plan.items() if p["runs"]]
    if not plan:
        bad.append("no scenario listed")
    for name in should_run:
        got = report.get(name)
        if got is None:
            bad.append(f"{name}: listed as running on vfio, absent from the run")
        elif got["verdict"] != "PASS":
            bad.append(f"{name}: {got['verdict']}")
        elif plan[name]["seam"] and not got["fired"]:
            bad.append(f"{name}: has firmware faults, but none fired at the driver's seam ({got['fired']})")
    seam = [n for n in should_run if plan[n]["seam"]]
    for name in a.expect_pass:
        if report.get(name, {}).get("verdict") != "PASS":
            bad.append(f"scenario {name} did not pass in the guest: {report.get(name)}")
    attached = of("attach")
    if len(attached) != a.nics or any(w.get("rc") != "0" for w in attached):
        bad.append(f"attach: {attached}")
    after = of("after")
    if len(after) != a.nics or any(w.get("driver") != "bnxt_en" for w in after):
        bad.append(f"after attach: {after}")
    not_run = {n: p["why"] for n, p in plan.items() if not p["runs"]}
    times = sorted(((v["secs"] or 0.0, n) for n, v in report.items() if v["verdict"] != "SKIP"), reverse=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"bad": bad, "runs": runs, "not_run": not_run, "seam_scenarios": seam,
                       "times": {n: s for s, n in times}}, f, indent=1)
    for name, why in sorted(not_run.items()):
        print(f"  not on vfio: {name}: {why}")
    if times:
        total = sum(s for s, _ in times)
        print(f"  {len(times)} scenarios ran in {total:.0f} s of their own wall time "
              f"({total / len(times):.1f} s each on average); the longest: "
              + ", ".join(f"{n} {s:.1f} s" for s, n in times[:5]))
    for b in bad:
        print(f"FAIL {a.console}: {b}")
    if not bad:
        r = runs[0]
        print(f"PASS {a.console}: {r.get('passed')} scenarios passed ({len(seam)} of them with firmware faults at "
              f"the driver's seam), {r.get('skipped')} skipped, on {a.nics} NICs through vfio-pci in {r.get('secs')} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
