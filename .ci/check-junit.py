#!/usr/bin/env python3
"""Check the JUnit report of `cargo nextest run --profile ci`: it parses, it holds exactly the
tests nextest lists as run (the ignored ones aside), none failed, and every scenario of the
suite that runs on the model is a test case of it.

Usage: check-junit.py JUNIT_XML NEXTEST_LIST_JSON SCENARIO_LIST
  NEXTEST_LIST_JSON: `cargo nextest list --profile ci --message-format json` output
  SCENARIO_LIST: `bnxt-rig list scenarios/` output
"""
import json
import sys
import xml.etree.ElementTree as ET


def main(junit_path, list_path, scenarios_path):
    root = ET.parse(junit_path).getroot()
    cases = root.findall(".//testcase")
    names = {(c.get("classname"), c.get("name")) for c in cases}
    failed = [c for c in cases if c.find("failure") is not None or c.find("error") is not None]

    listing = json.load(open(list_path))
    expected = set()
    for binary_id, suite in listing["rust-suites"].items():
        for name, case in suite["testcases"].items():
            if case.get("ignored") or not case["filter-match"]["status"] == "matches":
                continue
            expected.add((binary_id, name))

    problems = []
    if int(root.get("tests")) != len(cases):
        problems.append(f"the report says {root.get('tests')} tests but holds {len(cases)}")
    if names != expected:
        missing, extra = sorted(expected - names), sorted(names - expected)
        problems.append(f"{len(missing)} listed tests missing from the report {missing[:5]}, {len(extra)} not listed {extra[:5]}")
    if failed or int(root.get("failures")) or int(root.get("errors")):
        problems.append(f"{len(failed)} test cases failed: {[c.get('name') for c in failed][:5]}")

    scenarios = [line.split()[0] for line in open(scenarios_path).read().splitlines()[1:] if line.strip()]
    suite_cases = {n for (cls, n) in names if cls == "bnxt-rig::suite"}
    ignored = {name for (b, s) in listing["rust-suites"].items() if b == "bnxt-rig::suite"
               for name, case in s["testcases"].items() if case.get("ignored")}
    absent = [s for s in scenarios if f"model::{s}" not in suite_cases and f"model::{s}" not in ignored]
    if absent:
        problems.append(f"scenarios that are not test cases: {absent}")

    if problems:
        for p in problems:
            print(f"junit: {p}", file=sys.stderr)
        return 1
    print(f"junit: {len(cases)} test cases as listed, {len(suite_cases)} of them scenarios on the model "
          f"({len(ignored)} scenarios ignored there), none failed")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
