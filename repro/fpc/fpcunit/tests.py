#!/usr/bin/env python3
"""tests.py - what the fpcunit program's tests are, from tests.json (the one
place that says which test covers which defect, which hazard test needs
which defect fixed, and what each asserts).

    tests.py judge XML PLATFORM SET ORDER [EXIT [FIXED [ONLY]]]
        TEST lines for one run of fpcunithttpserver --format=xml (XML: a
        file, or a folder of them, one per test run alone; ORDER names the
        run in the lines: declared, reverse, alone): the tests of the
        defects SET fixes (FIXED, e.g. "B2 B5", from repro/harness/patchset.py
        fixed, which counts Also-Fixes; default: none for stock, every
        defect otherwise), and the hazard tests whose "needs" defect it
        fixes, must pass; every other test must fail with a message naming
        what went wrong (tests.json "stock_says"); a test ignored where
        tests.json says it does not apply ("not_on") is a SKIP with the
        program's reason.  Exit 1 if a line is FAIL.  A test that run.sh
        made again by itself (XML.again/NAME.xml) is judged by that run.
        ONLY (test names, space-separated): judge those tests alone
        (run.sh --tests).
    tests.py unmeasured XML
        the tests of a result that failed saying they measured nothing
        (their own validity check: run.sh makes each again by itself)
    tests.py noresult XML
        what gave no readable XML result (a folder's tests, or '*' for a
        whole file): run.sh makes each once more
    tests.py selftest     those checks and the judging of a second run, on
                          small results
    tests.py fixture XML PLATFORM FIXTURE SET [EXIT]
        the hazard tests FIXTURE (a patch under tests/hazards/) must fail,
        in SET with the fixture for the patch it replaces, naming what went
        wrong: the proof that they can fail on a fix that has the hazard
    tests.py fixtures     FIXTURE PATCH REPLACES TEST SET... lines, for run.sh
    tests.py doc          TESTS.md, the table the report cites
    tests.py description  the tests, as the body of the upstream commit
    tests.py names        the published tests of tcfphttpserver.pp, in
                          declaration order, one a line
    tests.py names-for Bn...  those of the defects named and the hazard
                          tests that need one of them (run.sh --tests)
"""
from __future__ import annotations

import json
import re
import sys
import tempfile
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPEC = json.loads((HERE / "tests.json").read_text())
DEFECTS = SPEC["defects"]
HAZARDS = SPEC.get("hazards", {})
# Tests of what a patch adds or must not break: "patch" names the patch a
# set must carry for the test to pass ("" = every set, stock included).
PATCH_TESTS = SPEC.get("patches", {})
# (what the test is for: "B6" or "hazard fairness", the defect that must be
# fixed, or "patch NAME" the patch that must be carried, for it to pass, or
# "" for none; its tests.json entry), in tests.json order
ENTRIES = [(bn, bn, d) for bn, d in DEFECTS.items()] + \
    [(f"hazard {hn}", d["needs"], d) for hn, d in HAZARDS.items()] + \
    [(f"{pn}", f"patch {d['patch']}" if d["patch"] else "", d) for pn, d in PATCH_TESTS.items()]
BY_TEST = {d["test"]: (what, d) for what, _, d in ENTRIES}


def names() -> list[str]:
    """The published tests of the test case, in declaration order."""
    src = (HERE / "tcfphttpserver.pp").read_text()
    m = re.search(r"^\s*published\s*$(.*?)^\s*end;", src, re.M | re.S)
    return re.findall(r"^\s*procedure\s+(\w+)\s*;", m.group(1), re.M) if m else []


def names_for(defects: list[str]) -> list[str]:
    """The tests of these defects and the hazard tests that need one of
    them, in declaration order."""
    want = {d["test"] for _, needs, d in ENTRIES if needs in defects}
    return [n for n in names() if n in want]


def results(xml_path: str) -> dict[str, tuple[str, str]]:
    """Test name -> (Result, message without the 'Suite.Test: ' prefix), from
    one XML file or every *.xml of a folder."""
    path = Path(xml_path)
    files = sorted(path.glob("*.xml")) if path.is_dir() else [path]
    if not files:
        raise OSError(f"no *.xml in {xml_path}")
    out = {}
    for t in (t for f in files for t in ET.parse(f).getroot().iter("Test")):
        msg = (t.findtext("Message") or "").strip()
        name = t.get("Name", "")
        prefix = f"{SPEC['suite']}.{name}: "
        out[name] = (t.get("Result", ""), msg[len(prefix):] if msg.startswith(prefix) else msg)
    return out


# What a test's own validity check fails with when the run could not
# measure (TestRequestHeadHasADeadline: its client stalled half the read
# time-out between two pieces in each try): run.sh makes such a test again.
UNMEASURED = "measured nothing"


def unmeasured(xml_path: str) -> list[str]:
    """The tests of a result that failed saying they measured nothing (none
    when there is no readable result: judge reports that)."""
    try:
        got = results(xml_path)
    except (OSError, ET.ParseError):
        return []
    return [n for n, (result, msg) in got.items() if result == "Failed" and UNMEASURED in msg]


def noresult(xml_path: str) -> list[str]:
    """What gave no readable XML result, for run.sh to make once more: in
    a folder (the alone order, a file a test), the tests whose file holds
    none; a single file holding none, '*' (the whole run).  A Windows
    program that Wine did not start writes nothing (e3: one test of win64
    all alone, exit 1, an empty file); a second run that gives none fails
    as the first would have."""
    path = Path(xml_path)
    files = sorted(path.glob("*.xml")) if path.is_dir() else [path]
    bad = []
    for f in files:
        try:
            ET.parse(f)
        except (OSError, ET.ParseError):
            bad.append(f.stem if path.is_dir() else "*")
    return bad


def remade(xml_path: str, got: dict[str, tuple[str, str]]) -> dict[str, str]:
    """The results of XML_PATH.again/ (run.sh's second runs) in place of the
    first ones in got; the first runs' messages, by test name."""
    again = Path(str(xml_path).rstrip("/") + ".again")
    first = {}
    if again.is_dir():
        for name, res in results(str(again)).items():
            first[name] = got.get(name, ("", "did not run"))[1]
            got[name] = res
    return first


def selftest() -> int:
    """unmeasured and remade on two small results: a first run whose test
    measured nothing, a second run by itself that passed; noresult on an
    empty file in a folder, an empty file, and a readable one."""
    def xml(result: str, msg: str) -> str:
        body = f"<Message>{SPEC['suite']}.T: {msg}</Message>" if msg else ""
        return (f'<?xml version="1.0"?><TestResults><TestListing><Test Name="T" Result="{result}">'
                f"{body}</Test><Test Name=\"U\" Result=\"OK\"/></TestListing></TestResults>")
    with tempfile.TemporaryDirectory() as d:
        first = Path(d, "r.xml")
        first.write_text(xml("Failed", f"stalled 553 ms: the drip {UNMEASURED}"))
        found = unmeasured(str(first))
        Path(d, "r.xml.again").mkdir()
        Path(d, "r.xml.again", "T.xml").write_text(xml("OK", ""))
        got = results(str(first))
        firsts = remade(str(first), got)
        # No XML result: an empty file of the alone order, then a whole run's.
        Path(d, "alone").mkdir()
        Path(d, "alone", "T.xml").write_text("")
        Path(d, "alone", "U.xml").write_text(xml("OK", ""))
        empty_in_folder = noresult(str(Path(d, "alone")))
        Path(d, "whole.xml").write_text("")
        empty_file, good_file = noresult(str(Path(d, "whole.xml"))), noresult(str(first))
    ok = (found == ["T"] and got["T"] == ("OK", "") and got["U"][0] == "OK"
          and UNMEASURED in firsts.get("T", ""))
    print(f"TEST: fpcunit a test that measured nothing is judged by its second run "
          f"[{' OK ' if ok else 'FAIL'}]" + ("" if ok else f" unmeasured {found}, judged {got}, first {firsts}"))
    ok2 = empty_in_folder == ["T"] and empty_file == ["*"] and good_file == []
    print(f"TEST: fpcunit a run that gave no XML result is named for a second run "
          f"[{' OK ' if ok2 else 'FAIL'}]"
          + ("" if ok2 else f" folder {empty_in_folder}, empty file {empty_file}, good file {good_file}"))
    return 0 if ok and ok2 else 1


def judge(xml_path: str, platform: str, variant: str, order: str, exit_code: str = "?",
          fixed: str | None = None, only: str | None = None) -> int:
    label = f"fpcunit {platform} {variant} {order}"
    if fixed is None:
        fixed = "" if variant == "stock" else " ".join(DEFECTS)
    fixed_set = set(fixed.split())
    sys.path.insert(0, str(HERE.parent.parent / "harness"))
    import patchset  # noqa: E402  (repro/harness: the patches a set carries)
    fixed_set |= {f"patch {p}" for p in patchset.members(variant)} | {""}
    try:
        got = results(xml_path)
        first = remade(xml_path, got)
    except (OSError, ET.ParseError) as e:
        print(f"TEST: {label} [FAIL] no XML result (program exit {exit_code}): {e}")
        return 1
    failed = 0
    for name in sorted(set(got) - set(BY_TEST)):
        print(f"TEST: {label} {name} [FAIL] not in tests.json")
        failed = 1
    for bn, needs, d in ENTRIES:
        name = d["test"]
        if only is not None and name not in only.split():
            continue
        line = f"TEST: {label} {name}"
        if name in first:
            print(f"# {label} {name}: made again by itself; the first run: {first[name]}")
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
        elif needs not in fixed_set:
            what_needs = needs[len("patch "):] if needs.startswith("patch ") else needs
            if result == "Failed" and msg and d["stock_says"] in msg:
                print(f"{line} [ OK ] {bn} failed as expected: {msg}")
            elif result == "OK":
                print(f"{line} [FAIL] {bn}: passed without {what_needs}, so it cannot see what it tests")
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


def fixtures() -> list[tuple[str, str, str, list[str], str]]:
    """(fixture, patch, the patch it replaces, sets, hazard test) of every hazard test."""
    return [(fx, f["patch"], f["replaces"], f["sets"], d["test"])
            for d in HAZARDS.values() for fx, f in d.get("fixture", {}).items()]


def judge_fixture(xml_path: str, platform: str, fixture: str, variant: str,
                  exit_code: str = "?") -> int:
    """The hazard tests of FIXTURE must fail, naming what went wrong."""
    label = f"fpcunit {platform} {variant} with fixture {fixture}"
    try:
        got = results(xml_path)
    except (OSError, ET.ParseError) as e:
        print(f"TEST: {label} [FAIL] no XML result (program exit {exit_code}): {e}")
        return 1
    failed = 0
    for fx, _, _, _, name in fixtures():
        if fx != fixture:
            continue
        d = BY_TEST[name][1]
        result, msg = got.get(name, ("did not run", ""))
        line = f"TEST: {label} {name}"
        if result == "Failed" and d["stock_says"] in msg:
            print(f"{line} [ OK ] failed as it must ({d['fixture'][fx]['why']}): {msg}")
        else:
            print(f"{line} [FAIL] {result}, where it must fail naming '{d['stock_says']}' "
                  f"({d['fixture'][fx]['why']}): {msg}")
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
a win64 `.exe` under Wine; each fix alone makes the tests of the defects it
fixes pass (`repro/harness/patchset.py fixed`, which counts a patch's `Also-Fixes:`:
B6's fix also removes B7's hang), and the hazard tests of what a fix of the
pool must not break pass once B6 is fixed (before, request 2 is never
answered).  Every test stands alone: the result is the same run alone, in
declaration order and in reverse order (`run.sh` runs all three), and
TearDown gives back what a test took (the server, its threads, the
descriptors, a raised `RLIMIT_NOFILE`), also when the defect stuck the
server.

| for | test | asserts |
| --- | --- | --- |
"""

DOC_TAIL = """
{fixtures}
Run it: `repro/fpc/fpcunit/run.sh` (or `tests/run.sh fpcunit`): builds
stock and all for Linux and win64 with the kit's trunk toolchain (cached,
keyed on the toolchain stamp, the Pascal series, the fixture and these
sources) and runs each in the three orders; `run.sh linux` or `run.sh win64`
runs one platform, `run.sh --each` every single fix and pair on Linux.
A maintainer, in an FPCSource tree with the patch applied: build the
packages (or just fcl-web, fcl-net and fcl-fpcunit) from that tree, then
`cd packages/fcl-web/tests && fpc fpcunithttpserver.lpr &&
./fpcunithttpserver --format=plain`; it tests the `fphttpserver.pp` and
`ssockets.pp` it was built with, with or without the fixes.
"""


def doc() -> str:
    def label(what: str, needs: str) -> str:
        if what == needs:
            return what
        if needs.startswith("patch "):
            return f"{what} (needs {needs[len('patch '):]})"
        return f"{what} (every set)" if not needs else f"{what} (needs {needs})"
    rows = "".join(f"| {label(what, needs)} | `{d['test']}` | {d['asserts']} |\n"
                   for what, needs, d in ENTRIES)
    m = re.search(r"^\s*WatchdogMs\s*=\s*(\d+);", (HERE / "tcfphttpserver.pp").read_text(), re.M)
    fx = "".join(f"\n`{name}` must fail with `{patch}` in place of `{repl}` "
                 f"({', '.join('alone' if s == repl else s for s in sets)}): "
                 f"{BY_TEST[name][1]['fixture'][f]['why']}; `run.sh` builds and runs it on Linux.\n"
                 for f, patch, repl, sets, name in fixtures())
    return (DOC_HEAD.format(watchdog_s=int(m.group(1)) / 1000, **SPEC) + rows
            + DOC_TAIL.format(fixtures=fx))


def description() -> str:
    """One wrapped list item per test, the commit message's plain text."""
    out = []
    for _, _, d in ENTRIES:
        out += textwrap.wrap(f"- {d['test']}: {d['asserts']}", width=72,
                             subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) >= 5 and argv[0] == "judge":
        return judge(*argv[1:8])
    if len(argv) >= 5 and argv[0] == "fixture":
        return judge_fixture(*argv[1:6])
    if argv == ["selftest"]:
        return selftest()
    if len(argv) == 2 and argv[0] == "unmeasured":
        print("\n".join(unmeasured(argv[1])))
        return 0
    if len(argv) == 2 and argv[0] == "noresult":
        for name in noresult(argv[1]):
            print(name)
        return 0
    if argv == ["fixtures"]:
        for f, patch, repl, sets, name in fixtures():
            print(f, patch, repl, name, *sets)
        return 0
    if argv == ["doc"]:
        sys.stdout.write(doc())
        return 0
    if argv == ["description"]:
        sys.stdout.write(description())
        return 0
    if len(argv) >= 2 and argv[0] == "names-for":
        print("\n".join(names_for(argv[1:])))
        return 0
    if argv == ["names"]:
        print("\n".join(names()))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
