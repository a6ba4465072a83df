"""upstream_texts.py - the parts of REPORT.md and report/Bn.md that speak
FPC's language, each read from the one file that holds its fact:

  introduced-Bn   repro/bisect/results.json (`make bisect DEFECT=Bn`): where
                  the defect first shows, one sentence (the whole run,
                  verified at the commit and its parent, is in that file)
  reproduce-Bn    repro/fpc/min/bN.lpr: the program and its header's
                  Compile/Run/Command lines (repro/fpc/min/check.sh runs
                  exactly that command)
  test-Bn         repro/fpc/fpcunit/tests.json: the fpcunit test that
                  covers the defect (patches/fpc/tests/)
Used by repro/report/report.py."""
from __future__ import annotations

import json
import sys
import re
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TOP / "repro" / "bisect"))
import symptoms  # noqa: E402  (repro/bisect/symptoms.py: the symptoms of each defect)

BISECT = TOP / "repro" / "bisect" / "results.json"
MIN = TOP / "repro" / "fpc" / "min"
FPCUNIT = TOP / "repro" / "fpc" / "fpcunit" / "tests.json"
TEST_PATCHES = TOP / "patches" / "fpc" / "tests"


# The covers' order (REPORT.md, the filing's cover.md): what a public
# defect does to a user of the server, worst first; the security-relevant
# ones are only counted there.
COVER_CLASS = {
    "hang": ("Hangs and requests never answered",
             ["B2", "B5", "B6", "B7", "B8", "B9", "B15"]),
    "correctness": ("Wrong, missing or misframed answers",
                    ["B1", "B4", "B13", "B14", "B16", "B18", "B19", "B20"]),
    "latency": ("Latency", ["B3", "B10", "B21"]),
}
OTHER_CLASS = "Not yet placed (upstream_texts.COVER_CLASS)"


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _sentence(e: dict) -> str:
    """One bisect entry as a clause: the first commit that shows the
    defect, and whether that is all the history says (the oldest commit
    the reproducer runs on)."""
    fb = e.get("first_bad") or {}
    what = f"{fb.get('upstream', '?')[:10]} ({fb.get('date', '?')[:10]}, \"{fb.get('subject', '?').strip()}\")"
    if e.get("kind") == "introduced":
        par = (e.get("parents") or [{}])[0]
        return f"first shown by {what}, at whose parent {par.get('upstream', '?')[:10]} the reproducer passes"
    return f"shown since {what}, the oldest commit the reproducer builds and runs on"


def introduced_sentence(defect: str) -> str:
    """Where the defect first shows, in one sentence (per symptom where it
    has several): what `git bisect run` found, checked at the commit and
    its parent.  Whether that commit introduced the defect or only exposed
    it is for the text to say (report/Bn.md, **Origin:**)."""
    entries = symptoms.entries(defect, BISECT)
    if not entries:
        return ""
    if len(entries) == 1:
        s = _sentence(entries[0])
        return s[0].upper() + s[1:]
    return "Per symptom: " + "; ".join(f"*{e['symptom'] or '?'}*: {_sentence(e)}" for e in entries)


def introduced(defect: str) -> str:
    """The generated part of report/Bn.md's **Origin:**: one sentence, and
    how to find it again."""
    s = introduced_sentence(defect)
    if not s:
        return f"(no bisect result for {defect} in `repro/bisect/results.json`: `make bisect DEFECT={defect}`)"
    return (f"{s} (`git bisect run` over the history of fcl-web, fcl-net and fcl-base: "
            f"`make bisect DEFECT={defect}`).")


def introduced_short(defect: str) -> str:
    """The commit per symptom, for the cover letter's table."""
    out = []
    for e in symptoms.entries(defect, BISECT):
        st = re.sub(r"^Introduced by ", "", e.get("statement", "not bisected"))
        out.append(f"{e['symptom']}: {st}" if e.get("symptom") else st)
    return "; ".join(out) or "not bisected"


# A header field as repro/fpc/min/check.sh reads it (its header_line):
# the rest of the first line "  FIELD:  ...".  One reading for both, so
# the text prints exactly the command the suite runs.
HEADER_LINE = re.compile(r"^  (Compile|Run|Command|Control|Expected|Actual):  (.*)$", re.M)
NOTE = re.compile(r"\s{2,}\(.*$")   # "fpc b3.lpr      (FPC 3.3.1, ...)": the note


def min_header(defect: str) -> dict[str, str]:
    """The first line of each header field of bN.lpr, as check.sh reads it."""
    fields: dict[str, str] = {}
    for m in HEADER_LINE.finditer((MIN / f"{defect.lower()}.lpr").read_text()):
        fields.setdefault(m.group(1), m.group(2).strip())
    return fields


def min_commands(defect: str) -> dict[str, str]:
    """What the text prints and the suite runs: compile, run (without the
    header's note), command, control."""
    h = min_header(defect)
    prog = f"{defect.lower()}.lpr"
    out = {"compile": NOTE.sub("", h.get("Compile", f"fpc {prog}")),
           "run": NOTE.sub("", h.get("Run", f"./{defect.lower()} 8080"))}
    for k in ("Command", "Control"):
        if h.get(k):
            out[k.lower()] = h[k]
    return out


def program_text(defect: str) -> str:
    """bN.lpr without its header comment (the text around it says what the
    header does: the commands, expected and actual).  FPC's { } comments
    nest in the default and objfpc modes, as they are counted here."""
    text = (MIN / f"{defect.lower()}.lpr").read_text()
    start = text.index("{")
    depth, i = 0, start
    while True:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
        if depth == 0:
            break
    return (text[:start] + text[i:].lstrip("\n")).rstrip()


def reproduce(defect: str) -> str:
    path = MIN / f"{defect.lower()}.lpr"
    if not path.exists():
        return f"(no `repro/fpc/min/{path.name}`)"
    text = program_text(defect)
    c = min_commands(defect)
    lines = [f"`repro/fpc/min/{path.name}` (its header comment, which holds the commands below, left out):", "",
             "```pascal", text, "```", "",
             "```sh", c["compile"], f"{c['run']}{RUN_NOTE}", c["command"]]
    if c.get("control"):
        lines.append(f"{c['control']}{CONTROL_NOTE}")
    lines.append("```")
    return "\n".join(lines)


# The comments the text adds to the header's lines (tests/texts/check.py
# strips exactly these before comparing a line with the header).
RUN_NOTE = "    # it prints the address it listens on; then, in another terminal:"
CONTROL_NOTE = "    # the control: the same requests, a fresh connection each"


def regression_test(defect: str) -> str:
    d = _json(FPCUNIT)
    t = d.get("defects", {}).get(defect)
    if not t:
        return f"(no fpcunit test for {defect} in `repro/fpc/fpcunit/tests.json`)"
    patches = sorted(p.name for p in TEST_PATCHES.glob("*.patch"))
    where = f"`patches/fpc/tests/{patches[0]}`" if patches else "`patches/fpc/tests/`"
    out = (f"`{d.get('suite', '?')}.{t['test']}` in `{d.get('unit', '?')}` (runner "
           f"`{d.get('runner', '?')}`; {where}, `git am` form): {t['asserts']}")
    for plat, why in t.get("not_on", {}).items():
        out += f" Ignored on {plat}: {why}."
    return out


def tracker_head(defect: str, title: str, version_322: str, security: str = "") -> str:
    """The fields FPC's tracker asks for first (and, for a security-relevant
    defect, why it is one: the caller reads it from the fix's Security:)."""
    r = _json(BISECT).get(defect, {})
    t = _json(FPCUNIT).get("defects", {}).get(defect, {})
    lines = [f"- Summary: fphttpserver: {title}",
             "- Component: fcl-web (packages/fcl-web/src/base/fphttpserver.pp)",
             f"- Version: trunk 3.3.1 (fpc/FPCSource 1dba64b); FPC 3.2.2: {version_322}"]
    if security:
        lines.append(f"- Security: {security}")
    if t:
        lines.append(f"- Regression test: {_json(FPCUNIT).get('suite', '?')}.{t['test']} "
                     f"(packages/fcl-web/tests/tcfphttpserver.pp)")
    return "\n".join(lines) + "\n"
