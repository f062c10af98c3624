#!/usr/bin/env python3
"""Judge a `ci/guest-test.sh --faults` guest from its console (ci/guest/init-faults's BNXT-SUMMARY
lines), the log of the host's `bnxt-model ctl` calls, the two model NICs' HWRM logs and the
segment's capture.

usage: check-faults.py CONSOLE --ctl-log FILE --hwrm-log FILE --hwrm-log2 FILE --pcap FILE
                       --mac MAC --mac2 MAC [--json OUT] [--suite NAME] [--record FIXTURE]

What Linux did is written as a short list of facts: the steps' results, the kernel's bnxt_en, bnxt_re
and devlink messages with their numbers masked, and every kernel warning as the phase it came in and
the file and function that warned. --record writes them to FIXTURE; without --record a fixture that
exists (fixtures/guest-faults/<suite>.txt) is compared with them: a difference is printed (a later
kernel behaving otherwise), not failed, except for warnings. A kernel BUG, Oops or hung task fails
the check anywhere; a warning fails it in every phase but those in which Linux is known to warn after
an injected fault (WARNING_PHASES), and there unless the fixture records that same warning.
Exit status 0 when every requirement holds.
"""
import argparse
import difflib
import importlib.util
import json
import os
import re
import sys

# The pcap reader the guest checkers share (check-summary.py).
_spec = importlib.util.spec_from_file_location(
    "check_summary", os.path.join(os.path.dirname(os.path.abspath(__file__)), "check-summary.py"))
summary_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(summary_check)

BUGS = re.compile(r"BUG:|Oops|hung_task|blocked for more than")
# The steps in the order init-faults runs them; the facts follow it.
STEPS = ("probe", "re", "up", "up2", "arp", "link-down", "link-up", "stall-down", "stall-up", "seq") + tuple(
    f"{r}{s}" for r in ("fwreset", "fatal") for s in ("", "-ib", "-downup", "-arp", "-verbs")) + (
    "roce-stall",) + tuple(f"roce-reset{s}" for s in ("", "-ib", "-downup", "-arp", "-verbs")) + (
    "removal-down", "removal-rmmod")
# Keys that vary from run to run, left out of the facts.
VARYING = {"step", "waited", "carrier_changes", "netdev", "netdev2", "seconds"}
# The ctl calls the guest asks for, by NIC, in order.
CALLS = [("nic1", "link down"), ("nic1", "link up"), ("nic1", "fault add PORT_PHY_CFG"),
         ("nic1", "fault add PORT_PHY_QCFG"), ("nic1", "fw reset"), ("nic2", "fw fatal"),
         ("nic1", "fault add CREATE_QP"), ("nic1", "fault clear"), ("nic1", "fw reset"),
         ("nic1", "pcie surprise-removal")]
# The phases in which Linux warns after an injected fault (docs/faults.md, "What Linux did"): once
# bnxt_re has declared the firmware stalled it fails every command, so destroying what a process or
# the device still holds fails, which ib_uverbs and ib_core warn about (roce-stall, roce-reset); a
# yanked card's teardown (removal). Anywhere else a warning fails the check.
WARNING_PHASES = {"roce-stall", "roce-reset", "removal"}


def parse(console):
    """The steps' words by name, and the kernel lines as (phase, line) in order (init-faults prints
    "kernel phase=NAME" before the lines of each phase)."""
    steps, dmesg, phase = {}, [], "boot"
    for raw in open(console, errors="replace"):
        line = raw.rstrip("\r\n")
        i = line.find("BNXT-SUMMARY ")
        if i < 0:
            continue
        rest = line[i + len("BNXT-SUMMARY "):]
        if rest.startswith("dmesg "):
            dmesg.append((phase, rest[len("dmesg "):]))
        elif rest.startswith("kernel phase="):
            phase = rest.split("=", 1)[1].strip()
        elif rest.startswith("step="):
            words = dict(w.split("=", 1) for w in rest.split() if "=" in w)
            steps[words["step"]] = words
    return steps, dmesg


def mask(text):
    """A kernel line without what varies from run to run (timestamps, numbers)."""
    text = re.sub(r"^\[\s*[0-9.]+\]\s*", "", text.strip())
    text = re.sub(r"0x[0-9a-fA-F]+", "0x#", text)
    return re.sub(r"\b\d+\b", "#", text)


def warning(line):
    """'FILE FUNCTION' of a kernel WARNING line (6.12: "WARNING: CPU: 1 PID: 2 at FILE:LINE FUNC+0x..",
    7.x: "WARNING: FILE:LINE at FUNC+0x.."), or None."""
    m = re.search(r"WARNING: CPU: \d+ PID: \d+ at (\S+?):\d+ ([\w.]+)\+", line) or \
        re.search(r"WARNING: (\S+?):\d+ at ([\w.]+)\+", line)
    return f"{m.group(1)} {m.group(2)}" if m else None


def arp_replies(pcap, src, dst):
    """ARP replies from MAC src to MAC dst in the segment's capture."""
    src, dst = bytes.fromhex(src.replace(":", "")), bytes.fromhex(dst.replace(":", ""))
    n = 0
    for f in summary_check.pcap_frames(pcap):
        if len(f) >= 22 and f[12:14] == b"\x08\x06" and f[20:22] == b"\x00\x02" and f[6:12] == src and f[0:6] == dst:
            n += 1
    return n


def ctl_calls(text):
    """Each ctl call of the log: (nic, words, its reply lines)."""
    calls = []
    for line in text.splitlines():
        m = re.match(r"^\S+ (nic\d) ctl (.*)$", line)
        if m:
            calls.append((m.group(1), m.group(2), []))
        elif calls:
            calls[-1][2].append(line)
    return calls


def restarts(hwrm):
    """The HWRM log after each firmware restart, up to the next reset."""
    parts = hwrm.split("EVENT firmware restarted")[1:]
    return [p.split("EVENT firmware ")[0] for p in parts]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("console")
    ap.add_argument("--ctl-log", required=True)
    ap.add_argument("--hwrm-log", required=True)
    ap.add_argument("--hwrm-log2", required=True)
    ap.add_argument("--pcap", required=True)
    ap.add_argument("--mac", required=True)
    ap.add_argument("--mac2", required=True)
    ap.add_argument("--json")
    ap.add_argument("--suite", default="?")
    ap.add_argument("--record")
    a = ap.parse_args()
    steps, dmesg = parse(a.console)
    lines = [l for _, l in dmesg]

    def read(path):
        return open(path, errors="replace").read() if os.path.exists(path) else ""

    ctl, hwrm, hwrm2 = read(a.ctl_log), read(a.hwrm_log), read(a.hwrm_log2)
    problems = []

    def need(cond, what):
        if not cond:
            problems.append(what)

    def step(name):
        s = steps.get(name)
        need(s is not None, f"step {name} did not report")
        return s or {}

    def num(s, key):
        v = s.get(key, "")
        return int(v) if v.isdigit() else -1

    # Bring-up: a netdev and an InfiniBand device per function, and an ARP across the segment.
    probe, re_ = step("probe"), step("re")
    need(probe.get("modprobe_rc") == "0" and probe.get("netdev", "-") != "-" and probe.get("netdev2", "-") != "-",
         f"bnxt_en did not probe both functions: {probe}")
    need(re_.get("modprobe_rc") == "0" and re_.get("ib1") and re_.get("ib2"),
         f"bnxt_re did not register a device per function: {re_}")
    up, up2, arp = step("up"), step("up2"), step("arp")
    need(up.get("carrier") == "1" and up2.get("carrier") == "1", f"no carrier after ip link set up: {up} {up2}")
    need(num(arp, "replies") > 0 and arp.get("from_n2") == "yes",
         f"no ARP reply from the second NIC across the segment: {arp}")

    # Test 3: the cable pulled and given back.
    down, back = step("link-down"), step("link-up")
    need(down.get("carrier") == "0" and down.get("operstate") != "up", f"the carrier did not follow link down: {down}")
    need(back.get("carrier") == "1" and back.get("operstate") == "up", f"the carrier did not follow link up: {back}")
    try:
        c = [int(s["carrier_changes"]) for s in (up, down, back)]
        need(c[0] < c[1] < c[2], f"carrier_changes did not count the link going and coming: {c}")
    except (KeyError, ValueError):
        problems.append("no carrier_changes in the link steps")

    # Test 1: a request never answered at a user action.
    sd, su = step("stall-down"), step("stall-up")
    need(sd.get("rc") == "0" and sd.get("operstate") == "down",
         f"the netdev did not go down with PORT_PHY_CFG unanswered: {sd}")
    need(any(re.search(r"timeout.*\b0x20\b", l) for l in lines), "bnxt_en did not report the PORT_PHY_CFG (0x20) timeout")
    need(su.get("rc") == "0" and su.get("carrier") == "1", f"the netdev did not come back up after the stall: {su}")
    need("PORT_PHY_CFG 0x0020" in hwrm and "NO_RESPONSE (injected fault)" in hwrm,
         "the HWRM log shows no unanswered PORT_PHY_CFG")
    seq = step("seq")
    need("MALFORMED wrong-seq-id" in hwrm, "the HWRM log shows no PORT_PHY_QCFG answered with a wrong seq_id")

    # Test 2, `fw fatal`, and the reset after the RoCE stall: the recovery, the netdev back with its
    # MAC, bnxt_re's device registered again, an ARP across the segment, a pingpong between the two
    # devices; in the model's log the restart, then bnxt_en registering and opening the function.
    after = {"fwreset": (restarts(hwrm) + [""])[0], "roce-reset": (restarts(hwrm) + ["", ""])[1],
             "fatal": (restarts(hwrm2) + [""])[0]}
    bdfs = {"fwreset": probe.get("bdf", "-"), "roce-reset": probe.get("bdf", "-"), "fatal": probe.get("bdf2", "-")}
    for name in ("fwreset", "fatal", "roce-reset"):
        r, ib, du, ar, vb = (step(name + s) for s in ("", "-ib", "-downup", "-arp", "-verbs"))
        need(r.get("carrier") == "1" and r.get("operstate") == "up" and r.get("mac_kept") == "yes",
             f"{name}: bnxt_en's recovery did not bring the netdev back with its MAC: {r}")
        need(num(r, "changes") >= 2, f"{name}: the netdev did not go down and come back around the reset: {r}")
        need(ib.get("device", "-") != "-" and ib.get("gid", "-") != "-",
             f"{name}: bnxt_re did not register the device again (with its RoCE v2 GID): {ib}")
        # The kernel's log of the phase: bnxt_en's notice of the reset, then the device registered.
        own = [l for p, l in dmesg if p == name]
        notice = next((i for i, l in enumerate(own) if bdfs[name] in l and "firmware reset event" in l), None)
        need(notice is not None, f"{name}: bnxt_en reported no firmware reset event for {bdfs[name]}")
        need(notice is not None and any(f"{ib.get('device')}: Device registered" in l for l in own[notice:]),
             f"{name}: the kernel's log shows no registration of {ib.get('device')} after the reset")
        need(du.get("down_rc") == "0" and du.get("up_rc") == "0" and du.get("carrier") == "1",
             f"{name}: the netdev did not go down and up after the reset: {du}")
        need(num(ar, "replies") > 0 and ar.get("from_n2") == "yes",
             f"{name}: no ARP reply across the segment after the reset: {ar}")
        need(vb.get("server_rc") == "0" and vb.get("client_rc") == "0" and vb.get("client_result") == "1",
             f"{name}: ibv_rc_pingpong between the devices failed after the reset: {vb}")
        need("FUNC_DRV_RGTR" in after[name] and "FUNC_DRV_IF_CHANGE" in after[name],
             f"{name}: the HWRM log shows no firmware restart followed by bnxt_en registering and opening again")
    need("EVENT firmware fatal exception (RESET_NOTIFY sent)" in hwrm2 and "ERROR_RECOVERY_QCFG" in after["fatal"],
         "fatal: the second NIC's HWRM log shows no fatal exception, or no ERROR_RECOVERY_QCFG after its restart")
    replies = sum(num(steps.get(n, {}), "replies") for n in ("arp", "fwreset-arp", "fatal-arp", "roce-reset-arp"))
    try:
        seen = arp_replies(a.pcap, a.mac2, a.mac)
        need(seen >= replies,
             f"the segment's capture holds {seen} ARP replies from {a.mac2} to {a.mac}, the guest saw {replies}")
    except (OSError, ValueError) as e:
        problems.append(f"the segment's capture: {e}")

    # Test 4: a RoCE command never answered while ibv_rc_pingpong makes its QP.
    rs = step("roce-stall")
    need(rs.get("rc") not in (None, "0", "124"), f"ibv_rc_pingpong did not fail with an error of its own: {rs}")
    need(re.search(r"roce fault on CREATE_QP #\d+: no-response \(injected fault\)", hwrm) is not None,
         "the model's log shows no CREATE_QP taken by the fault")
    need(any(re.search(r"(?i)stall|timed ?out|timeout", l) for p, l in dmesg if p == "roce-stall"),
         "bnxt_re did not report the CREATE_QP timeout")

    # Test 5: the card yanked.
    rd, rm = step("removal-down"), step("removal-rmmod")
    need(rd.get("rc") not in (None, "timeout"), f"ip link set down did not end after the surprise removal: {rd}")
    need(rm.get("re_rc") == "0" and rm.get("rc") == "0" and rm.get("netdev_gone") == "yes",
         f"bnxt_re and bnxt_en did not give the devices up: {rm}")

    calls = ctl_calls(ctl)
    asked = [(n, w) for n, w, _ in calls]
    need(len(calls) == len(CALLS) and all(n == cn and w.startswith(cw) for (n, w), (cn, cw) in zip(asked, CALLS)),
         f"the host's ctl calls were not the ones asked for: {asked}")
    need(all(any('"ok":true' in r for r in replies_) for _, _, replies_ in calls),
         f"not every ctl call succeeded: see {a.ctl_log}")
    need("refused:" not in ctl, f"the host refused a request of the guest: see {a.ctl_log}")
    need(re.search(r"BNXT-SUMMARY end ", read(a.console)) is not None, "the guest did not reach its end")

    facts = [f"kernel {a.suite}"]
    for name in STEPS:
        s = {k: v for k, v in steps.get(name, {}).items() if k not in VARYING}
        if name == "roce-stall" and steps.get(name, {}).get("seconds", "").isdigit():
            # How long bnxt_re waited, to ten seconds (its firmware timeout, not the machine's load).
            s["waited_about"] = str(round(int(steps[name]["seconds"]) / 10) * 10)
        facts.append(f"{name}: " + " ".join(f"{k}={v}" for k, v in sorted(s.items())))
    # The drivers' own messages by phase, each once (not the lines of a warning's dump, which the
    # console has whole).
    phases = list(dict.fromkeys(p for p, _ in dmesg))
    for phase in phases:
        facts += sorted({f"dmesg {phase}: " + mask(l) for p, l in dmesg
                         if p == phase and re.search(r"bnxt|QPLIB|infiniband|devlink", l)
                         and not re.match(r"^\[\s*[0-9.]+\]\s\s", l)
                         and not re.search(r"WARNING:|Modules linked in|Workqueue:|RIP:|command line", l, re.I)})
    warnings = sorted({f"warning {p}: {w}" for p, l in dmesg if (w := warning(l))})
    facts += warnings
    text = "\n".join(facts) + "\n"

    # Kernel bugs fail anywhere; warnings outside WARNING_PHASES fail, and inside them unless the
    # fixture records the same one for this kernel.
    bugs = [l for _, l in dmesg if BUGS.search(l)]
    need(not bugs, "kernel bug reports: " + " | ".join(bugs[:5]))
    fixture = a.record or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures",
                                       "guest-faults", f"{a.suite}.txt")
    recorded = set(read(fixture).splitlines()) if not a.record else set(warnings)
    for w in warnings:
        phase = w.split(":")[0].split(" ", 1)[1]
        if phase not in WARNING_PHASES:
            problems.append(f"a kernel warning where none may be ({w}); the console has its dump")
        elif w not in recorded:
            problems.append(f"a kernel warning not recorded for this kernel in {fixture} ({w}); read its dump in the "
                            "console, then record it with ci/guest-test.sh --faults --record-fixtures")

    if a.record:
        os.makedirs(os.path.dirname(os.path.abspath(a.record)), exist_ok=True)
        open(a.record, "w").write(text)
        print(f"check-faults: facts recorded in {a.record}")
    elif a.suite != "?" and os.path.exists(fixture):
        diff = list(difflib.unified_diff(read(fixture).splitlines(), text.splitlines(), "recorded", "this run",
                                         lineterm=""))
        if diff:
            print("check-faults: Linux did otherwise than recorded in " + fixture + ":")
            print("\n".join("  " + d for d in diff))
    for name in ("seq", "roce-stall", "fwreset-ib", "fatal-ib", "roce-reset-ib", "removal-rmmod"):
        print(f"check-faults: {name}: {steps.get(name)}")
    for w in warnings:
        print(f"check-faults: {w}")
    if a.json:
        json.dump({"steps": steps, "problems": problems, "facts": facts}, open(a.json, "w"), indent=1)
    for p in problems:
        print(f"check-faults: FAIL {p}")
    print("check-faults: " + ("PASS" if not problems else "FAIL"))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
