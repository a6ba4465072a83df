#!/usr/bin/env python3
"""tests.py - what the fpcunit program's tests are, from tests.json (the one
place that says which test covers which defect and what it asserts).

    tests.py judge XML PLATFORM SET [EXIT [FIXED]]
        TEST lines for one run of fpcunithttpserver --format=xml: the tests
        of the defects SET fixes (FIXED, e.g. "B2 B5"; default: none for
        stock, every defect otherwise) must pass, every other defect's test
        must fail with a message naming what went wrong (tests.json
        "stock_says"); a test ignored where tests.json says it does not
        apply ("not_on") is a SKIP with the program's reason.  Exit 1 if a
        line is FAIL.
    tests.py doc          TESTS.md, the table the report cites
    tests.py description  the DEP-3 Description of the upstream patch
    tests.py names        the test names, one a line
"""
from __future__ import annotations

import json
import re
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPEC = json.loads((HERE / "tests.json").read_text())
DEFECTS = SPEC["defects"]
BY_TEST = {d["test"]: (bn, d) for bn, d in DEFECTS.items()}


def results(xml_path: str) -> dict[str, tuple[str, str]]:
    """Test name -> (Result, message without the 'Suite.Test: ' prefix)."""
    root = ET.parse(xml_path).getroot()
    out = {}
    for t in root.iter("Test"):
        msg = (t.findtext("Message") or "").strip()
        name = t.get("Name", "")
        prefix = f"{SPEC['suite']}.{name}: "
        out[name] = (t.get("Result", ""), msg[len(prefix):] if msg.startswith(prefix) else msg)
    return out


def judge(xml_path: str, platform: str, variant: str, exit_code: str = "?",
          fixed: str | None = None) -> int:
    label = f"fpcunit {platform} {variant}"
    if fixed is None:
        fixed = "" if variant == "stock" else " ".join(DEFECTS)
    fixed_set = set(fixed.split())
    try:
        got = results(xml_path)
    except (OSError, ET.ParseError) as e:
        print(f"TEST: {label} [FAIL] no XML result (program exit {exit_code}): {e}")
        return 1
    failed = 0
    for name in sorted(set(got) - set(BY_TEST)):
        print(f"TEST: {label} {name} [FAIL] not in tests.json")
        failed = 1
    for bn, d in DEFECTS.items():
        name = d["test"]
        line = f"TEST: {label} {name}"
        if name not in got:
            print(f"{line} [FAIL] {bn}: did not run (program exit {exit_code})")
            failed = 1
            continue
        result, msg = got[name]
        not_here = d.get("not_on", {}).get(platform)
        if result == "Ignored":
            # A skip says why; where the defect cannot exist it must be this skip.
            print(f"{line} [SKIP] {bn}: {msg}")
            if not_here is None and not msg:
                failed = 1
            continue
        if not_here is not None:
            print(f"{line} [FAIL] {bn}: ran ({result}) where it does not apply: {not_here}")
            failed = 1
        elif bn not in fixed_set:
            if result == "Failed" and msg and d["stock_says"] in msg:
                print(f"{line} [ OK ] {bn} failed as expected: {msg}")
            elif result == "OK":
                print(f"{line} [FAIL] {bn}: passed without its fix, so it cannot see the defect")
                failed = 1
            else:
                print(f"{line} [FAIL] {bn}: {result} without naming '{d['stock_says']}': {msg}")
                failed = 1
        elif result == "OK":
            print(f"{line} [ OK ] {bn}")
        else:
            print(f"{line} [FAIL] {bn}: {result}: {msg}")
            failed = 1
    return failed


DOC_HEAD = """\
# fpcunit tests for the HTTP/1.1 connection path of TFPHttpServer

Generated from `tests.json` by `tests.py doc` (checked by `run.sh`).

`tcfphttpserver.pp` (test case `{suite}`) and its
console runner `fpcunithttpserver.lpr` go into FPCSource as
`{unit}` and `{runner}`
with the patch in `patches/fpc/tests/` (written by `mkpatch.sh` from this
folder, the only copy; not part of the fix series).  Each test runs a real
`TFPHttpServer` on 127.0.0.1 in a thread and talks to it over raw TCP
sockets; verdicts are counts and orderings, every wait is bounded by the
watchdog (`WatchdogMs`, {watchdog_s:g} s), which only a request the server never answers
meets.  On the stock snapshot every test fails with a message saying what
went wrong; with the whole series (`all`) every test passes, on Linux and as
a win64 `.exe` under Wine.

| defect | test | asserts |
| --- | --- | --- |
"""

DOC_TAIL = """
Run it: `repro/fpc/fpcunit/run.sh` (or `tests/run.sh fpcunit`): builds
stock and all for Linux and win64 with the kit's trunk toolchain (cached,
keyed on the toolchain stamp, the Pascal series and these sources) and runs
the four side by side; `run.sh linux` or `run.sh win64` runs one platform.
A maintainer, in an FPCSource tree with the patch applied: build the
packages (or just fcl-web, fcl-net and fcl-fpcunit) from that tree, then
`cd packages/fcl-web/tests && fpc fpcunithttpserver.lpr &&
./fpcunithttpserver --format=plain`; it tests the `fphttpserver.pp` and
`ssockets.pp` it was built with, with or without the fixes.
"""


def doc() -> str:
    rows = "".join(f"| {bn} | `{d['test']}` | {d['asserts']} |\n" for bn, d in DEFECTS.items())
    m = re.search(r"^\s*WatchdogMs\s*=\s*(\d+);", (HERE / "tcfphttpserver.pp").read_text(), re.M)
    return DOC_HEAD.format(watchdog_s=int(m.group(1)) / 1000, **SPEC) + rows + DOC_TAIL


def description() -> str:
    """One wrapped paragraph per test, in DEP-3 continuation form."""
    out = []
    for bn, d in DEFECTS.items():
        out += textwrap.wrap(f"{d['test']} ({bn}): {d['asserts']}", width=72,
                             initial_indent=" ", subsequent_indent="   ",
                             break_long_words=False, break_on_hyphens=False)
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) >= 4 and argv[0] == "judge":
        return judge(*argv[1:6])
    if argv == ["doc"]:
        sys.stdout.write(doc())
        return 0
    if argv == ["description"]:
        sys.stdout.write(description())
        return 0
    if argv == ["names"]:
        print("\n".join(d["test"] for d in DEFECTS.values()))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
