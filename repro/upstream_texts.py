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
        out.append(f"Upstream commit `{fb['upstream']}`; its parent{'s' if len(r.get('parents', [])) > 1 else ''} "
                   f"`{parents}` do{'es' if len(r.get('parents', [])) == 1 else ''} not show the defect.")
    if b:
        reasons: dict[str, int] = {}
        for sk in b.get("skipped", []):
            why = (sk.get("reason", "?") if isinstance(sk, dict) else str(sk)).split(" | ")[0][:160]
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


def min_header(defect: str) -> dict[str, str]:
    """The Compile/Run/Command/Control/Expected/Actual lines of bN.lpr's
    header comment (continuation lines folded)."""
    text = (MIN / f"{defect.lower()}.lpr").read_text()
    start, depth = text.index("{"), 0
    for end, ch in enumerate(text[start:], start):   # FPC nests { } comments: a
        depth += {"{": 1, "}": -1}.get(ch, 0)        # command's %{...} is inside
        if depth == 0:
            break
    head = text[start:end + 1]
    fields, last = {}, None
    for line in head.strip("{}").splitlines():
        m = re.match(r"^\s*(Compile|Run|Command|Control|Expected|Actual):\s*(.*)$", line)
        if m:
            last = m.group(1)
            fields[last] = m.group(2).strip()
        elif last and line.startswith("            "):
            fields[last] += " " + line.strip()
        else:
            last = None
    return fields


def reproduce(defect: str) -> str:
    path = MIN / f"{defect.lower()}.lpr"
    if not path.exists():
        return f"(no `repro/fpc/min/{path.name}`)"
    text = path.read_text().rstrip()
    h = min_header(defect)
    cmd = h.get("Command", "").split(" (")[0]
    lines = [f"`repro/fpc/min/{path.name}` ({len(text.splitlines())} lines):", "",
             "```pascal", text, "```", "",
             "```sh", f"{h.get('Compile', f'fpc {path.name}').split('  ')[0]}",
             f"{h.get('Run', '').split('  ')[0]} &", cmd]
    if h.get("Control"):
        lines.append(h["Control"].split(" (")[0] + "    # the control")
    lines.append("```")
    return "\n".join(lines)


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
    lines = [f"Summary: fphttpserver: {title}",
             "Component: fcl-web (packages/fcl-web/src/base/fphttpserver.pp)",
             f"Version: trunk 3.3.1 (fpc/FPCSource 1dba64b); FPC 3.2.2: {version_322}",
             f"Introduced by: {r.get('statement', 'not bisected')}"]
    if t:
        lines.append(f"Regression test: {_json(FPCUNIT).get('suite', '?')}.{t['test']} "
                     f"(packages/fcl-web/tests/tcfphttpserver.pp)")
    return "\n".join(lines) + "\n"
