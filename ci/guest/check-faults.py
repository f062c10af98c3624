#!/usr/bin/env python3
"""Judge a `ci/guest-test.sh --faults` guest from its console (ci/guest/init-faults's BNXT-SUMMARY
lines), the log of the host's `bnxt-model ctl` calls and the model's HWRM log.

usage: check-faults.py CONSOLE --ctl-log FILE --hwrm-log FILE [--json OUT] [--suite NAME]
                       [--record FIXTURE]

What Linux did is written as a short list of facts (the steps' results and bnxt_en's messages with
their numbers masked); --record writes it to FIXTURE, and without --record a fixture that exists is
compared with it: a difference is printed (a later kernel behaving otherwise), not failed.
Exit status 0 when every requirement holds.
"""
import argparse
import difflib
import json
import os
import re
import sys

BUGS = re.compile(r"WARNING:|BUG:|Oops|Call Trace|RIP:|hung_task|blocked for more than")


def parse(console):
    steps, dmesg = {}, []
    for raw in open(console, errors="replace"):
        line = raw.rstrip("\r\n")
        i = line.find("BNXT-SUMMARY ")
        if i < 0:
            continue
        rest = line[i + len("BNXT-SUMMARY "):]
        if rest.startswith("dmesg "):
            dmesg.append(rest[len("dmesg "):])
        elif rest.startswith("step="):
            words = dict(w.split("=", 1) for w in rest.split() if "=" in w)
            steps[words["step"]] = words
    return steps, dmesg


def mask(text):
    """A kernel line without what varies from run to run (timestamps, numbers)."""
    text = re.sub(r"^\[\s*[0-9.]+\]\s*", "", text.strip())
    text = re.sub(r"0x[0-9a-fA-F]+", "0x#", text)
    return re.sub(r"\b\d+\b", "#", text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("console")
    ap.add_argument("--ctl-log", required=True)
    ap.add_argument("--hwrm-log", required=True)
    ap.add_argument("--json")
    ap.add_argument("--suite", default="?")
    ap.add_argument("--record")
    a = ap.parse_args()
    steps, dmesg = parse(a.console)
    ctl = open(a.ctl_log, errors="replace").read() if os.path.exists(a.ctl_log) else ""
    hwrm = open(a.hwrm_log, errors="replace").read() if os.path.exists(a.hwrm_log) else ""
    problems = []

    def need(cond, what):
        if not cond:
            problems.append(what)

    def step(name):
        s = steps.get(name)
        need(s is not None, f"step {name} did not report")
        return s or {}

    probe = step("probe")
    need(probe.get("modprobe_rc") == "0" and probe.get("netdev", "-") != "-", f"bnxt_en did not probe: {probe}")
    up, down, back = step("up"), step("link-down"), step("link-up")
    need(up.get("carrier") == "1", f"no carrier after ip link set up: {up}")
    need(down.get("carrier") == "0" and down.get("operstate") != "up", f"the carrier did not follow link down: {down}")
    need(back.get("carrier") == "1" and back.get("operstate") == "up", f"the carrier did not follow link up: {back}")
    try:
        c = [int(s["carrier_changes"]) for s in (up, down, back)]
        need(c[0] < c[1] < c[2], f"carrier_changes did not count the link going and coming: {c}")
    except (KeyError, ValueError):
        problems.append("no carrier_changes in the link steps")
    sd, su = step("stall-down"), step("stall-up")
    need(sd.get("rc") == "0" and sd.get("operstate") == "down", f"the netdev did not go down with PORT_PHY_CFG unanswered: {sd}")
    need(any(re.search(r"timeout.*\b0x20\b", l) for l in dmesg), "bnxt_en did not report the PORT_PHY_CFG (0x20) timeout")
    need(su.get("rc") == "0" and su.get("carrier") == "1", f"the netdev did not come back up after the stall: {su}")
    need("PORT_PHY_CFG 0x0020" in hwrm and "NO_RESPONSE (injected fault)" in hwrm, "the HWRM log shows no unanswered PORT_PHY_CFG")
    seq = step("seq")
    need("MALFORMED wrong-seq-id" in hwrm, "the HWRM log shows no PORT_PHY_QCFG answered with a wrong seq_id")
    fr, fdu = step("fwreset"), step("fwreset-downup")
    need(fr.get("carrier") == "1" and fr.get("operstate") == "up" and fr.get("mac_kept") == "yes",
         f"bnxt_en's recovery from the firmware reset did not bring the netdev back with its MAC: {fr}")
    need(fr.get("changes", "0").isdigit() and int(fr.get("changes", "0")) >= 2,
         f"the netdev did not go down and come back around the firmware reset: {fr}")
    need(fdu.get("down_rc") == "0" and fdu.get("up_rc") == "0" and fdu.get("carrier") == "1",
         f"the netdev did not go down and up after the firmware reset: {fdu}")
    # The model's log: the restart, then bnxt_en registering again and told HOT_FW_RESET_DONE.
    after = hwrm[hwrm.find("firmware restarted"):] if "firmware restarted" in hwrm else ""
    need("FUNC_DRV_RGTR" in after and "FUNC_DRV_IF_CHANGE" in after,
         "the HWRM log shows no firmware restart followed by bnxt_en registering and opening again")
    rd, rm = step("removal-down"), step("removal-rmmod")
    need(rd.get("rc") not in (None, "timeout"), f"ip link set down did not end after the surprise removal: {rd}")
    need(rm.get("rc") == "0" and rm.get("netdev_gone") == "yes", f"bnxt_en did not give the device up: {rm}")
    calls = len(re.findall(r"^\S+ ctl ", ctl, re.M))
    need(calls == 6 and ctl.count('"ok":true') == calls, f"the host's ctl calls did not all succeed ({calls} calls): see {a.ctl_log}")
    bugs = [l for l in dmesg if BUGS.search(l)]
    need(not bugs, "kernel bug reports: " + " | ".join(bugs[:5]))

    facts = [f"kernel {a.suite}"]
    for name in ("probe", "up", "link-down", "link-up", "stall-down", "stall-up", "seq", "fwreset", "fwreset-downup",
                 "removal-down", "removal-rmmod"):
        s = {k: v for k, v in steps.get(name, {}).items() if k not in ("step", "waited", "carrier_changes", "netdev")}
        facts.append(f"{name}: " + " ".join(f"{k}={v}" for k, v in sorted(s.items())))
    facts += sorted({"dmesg: " + mask(l) for l in dmesg if "bnxt" in l and "command line" not in l.lower()})
    text = "\n".join(facts) + "\n"
    if a.record:
        os.makedirs(os.path.dirname(a.record), exist_ok=True)
        open(a.record, "w").write(text)
        print(f"check-faults: facts recorded in {a.record}")
    elif a.suite != "?":
        fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures", "guest-faults", f"{a.suite}.txt")
        if os.path.exists(fixture):
            diff = list(difflib.unified_diff(open(fixture).read().splitlines(), text.splitlines(), "recorded", "this run", lineterm=""))
            if diff:
                print("check-faults: Linux did otherwise than recorded in " + fixture + ":")
                print("\n".join("  " + d for d in diff))
    print(f"check-faults: seq step: {seq}")
    if a.json:
        json.dump({"steps": steps, "problems": problems, "facts": facts}, open(a.json, "w"), indent=1)
    for p in problems:
        print(f"check-faults: FAIL {p}")
    print("check-faults: " + ("PASS" if not problems else "FAIL"))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
