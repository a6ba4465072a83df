"""upstream_texts.py - the parts of REPORT.md and report/Bn.md that speak
FPC's language, each read from the one file that holds its fact:

  introduced-Bn   repro/bisect/results.json (`make bisect DEFECT=Bn`)
  reproduce-Bn    repro/fpc/min/bN.lpr: the program and its header's
                  Compile/Run/Command lines (repro/fpc/min/check.sh runs
                  exactly that command)
  test-Bn         repro/fpc/fpcunit/tests.json: the fpcunit test that
                  covers the defect (patches/fpc/tests/)
Used by repro/report.py."""
from __future__ import annotations

import json
import re
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
BISECT = TOP / "repro" / "bisect" / "results.json"
MIN = TOP / "repro" / "fpc" / "min"
FPCUNIT = TOP / "repro" / "fpc" / "fpcunit" / "tests.json"
TEST_PATCHES = TOP / "patches" / "fpc" / "tests"


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def clause(text: str, limit: int = 240) -> str:
    """text whole when short, else cut after its last whole clause within
    limit, saying so: never mid-word."""
    if len(text) <= limit:
        return text
    cut = max(text.rfind("; ", 0, limit), text.rfind(", ", 0, limit), text.rfind(": ", 0, limit))
    return (text[:cut] if cut > 0 else text[:text.rfind(" ", 0, limit)]) + " (cut here)"


def introduced(defect: str) -> str:
    r = _json(BISECT).get(defect)
    if not r:
        return f"(no bisect result for {defect} in `repro/bisect/results.json`: `make bisect DEFECT={defect}`)"
    b = r.get("bisect", {})
    v = r.get("verification", {})
    out = [r["statement"] + "."]
    if r.get("kind") == "introduced" and r.get("first_bad"):
        fb = r["first_bad"]
        parents = ", ".join(p["upstream"][:10] for p in r.get("parents", []))
        out.append(f"Upstream commit `{fb['upstream']}` (parent{'s' if len(r.get('parents', [])) > 1 else ''} "
                   f"`{parents}`).")
    if b:
        reasons: dict[str, int] = {}
        for sk in b.get("skipped", []):
            why = clause((sk.get("reason", "?") if isinstance(sk, dict) else str(sk)).split(" | ")[0])
            reasons[why] = reasons.get(why, 0) + 1
        skipped = "; ".join(f"{n}x {why}" for why, n in reasons.items()) or "none"
        out.append(f"Found by `git bisect run` over the upstream history of fcl-web, fcl-net and "
                   f"fcl-base (`make bisect DEFECT={defect}`, or `FPCHIST=<your clone>`): "
                   f"{b.get('tested', '?')} commits built and judged by the kit's own {defect} verdict "
                   f"in {b.get('seconds', '?')} s; skipped: {skipped}.")
    if v:
        named = v.get("named", {})
        par = "; ".join(f"{p['upstream'][:10]}: {p['state']} ({p['reason']})" for p in v.get("parents", []))
        out.append(f"Checked apart from the bisect: at the named commit {named.get('state')} "
                   f"({named.get('reason')}); at its parent {par}.")
    return " ".join(out)


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


def tracker_head(defect: str, title: str, version_322: str) -> str:
    """The fields FPC's tracker asks for first."""
    r = _json(BISECT).get(defect, {})
    t = _json(FPCUNIT).get("defects", {}).get(defect, {})
    lines = [f"- Summary: fphttpserver: {title}",
             "- Component: fcl-web (packages/fcl-web/src/base/fphttpserver.pp)",
             f"- Version: trunk 3.3.1 (fpc/FPCSource 1dba64b); FPC 3.2.2: {version_322}"]
    if t:
        lines.append(f"- Regression test: {_json(FPCUNIT).get('suite', '?')}.{t['test']} "
                     f"(packages/fcl-web/tests/tcfphttpserver.pp)")
    return "\n".join(lines) + "\n"
