#!/usr/bin/env python3
"""tests/texts/check.py - every block a text hands out is one the suite runs.

The texts are REPORT.md, report/*.md, report/evidence/Bn.md and
report/horse/*.md (Horse's texts).  Each
fenced block is one of:
  ```pascal  a Pascal reproducer: exactly repro/fpc/min/bN.lpr, which
             repro/fpc/min/check.sh (the `min` step) compiles and runs on
             the snapshot and with each fix;
  ```sh      its commands: every line is a line of that program's header
             (Compile, Run, Command, Control, as upstream_texts reads them,
             the way check.sh reads them), so the `min` step runs exactly
             what is printed (as root in a network namespace per case, on
             8080);
  ```diff    a patch: exactly the diff of patches/fpc/*.patch (the report
             step's Pascal check);
  ``` (none) an excerpt (captures, strace) and nothing to run.
Any other block, a command line the suite does not run, or a block cut
short (an unbalanced quote, brace or parenthesis) fails.  Also: each text
within its length (tracker texts about 100 lines, REPORT.md, the cover, 100).
One 'TEST: texts <file> <what> [ OK ]|[FAIL]' line per check."""
from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TOP / "repro" / "report"))   # report.py adds repro/harness itself
import report  # noqa: E402
import upstream_texts  # noqa: E402

MIN = TOP / "repro" / "fpc" / "min"
LIMITS = {"REPORT.md": 100, "tracker": 110}   # lines (REPORT.md is the one-page cover)
LINE_REF = re.compile(r"\b(fphttpserver|ssockets|fpthreadpool)\.pp:(\d+)")
NAME = re.compile(r"`([A-Za-z_][A-Za-z0-9_.]*)`")
FENCE = re.compile(r"^```([a-z]*)\n(.*?)^```$", re.S | re.M)
PROG = re.compile(r"`repro/fpc/min/(b\d+)\.lpr`")

failures = 0
quiet = False   # the self-test's own checks count, but print nothing


def test(name: str, ok: bool, why: str = "") -> None:
    global failures
    failures += not ok
    if quiet:
        return
    print(f"TEST: texts {name} [{' OK ' if ok else 'FAIL'}]" + (f" {why}" if why and not ok else ""))


def balanced(line: str) -> str:
    """'' when the shell could parse the line whole, else why not."""
    try:
        shlex.split(line, comments=True)
    except ValueError as e:
        return f"does not parse: {e}"
    # outside quotes, ( and ) and { and } pair up
    depth, q, i = {"(": 0, "{": 0}, None, 0
    while i < len(line):
        ch = line[i]
        if q:
            if ch == q:
                q = None
            elif ch == "\\" and q == '"':
                i += 1
        elif ch in "'\"":
            q = ch
        elif ch == "\\":
            i += 1
        elif ch in "({":
            depth[ch] += 1
        elif ch in ")}":
            depth["(" if ch == ")" else "{"] -= 1
        i += 1
    bad = [k for k, v in depth.items() if v]
    return f"unbalanced {' '.join(bad)}" if bad else ""


def comment_only(prog: str) -> bool:
    """What the text leaves out of bN.lpr (upstream_texts.program_text) is
    a comment without a compiler directive in it: the printed program
    compiles exactly as the file the min step compiles."""
    full = (MIN / f"{prog}.lpr").read_text().rstrip()
    printed = upstream_texts.program_text(prog.upper())
    start = full.index("{")
    left_out = full[start:len(full) - (len(printed) - start)]
    return full.endswith(printed[start:]) and left_out.lstrip().startswith("{") and "{$" not in left_out


def check_line_refs(rel: str, text: str) -> None:
    """Every 'unit.pp:N' names a line of the snapshot that holds the
    identifier quoted just before it (the last part of a dotted name)."""
    units = {Path(u).stem: u for u in report.UPSTREAM_UNITS}
    for m in LINE_REF.finditer(text):
        lines = report.upstream_unit(units[m.group(1)])
        names = NAME.findall(text[max(0, m.start() - 160):m.start()])
        if not lines:
            test(f"{rel} {m.group(0)}", False, "no snapshot to check the line against")
            continue
        n = int(m.group(2))
        ident = names[-1].split(".")[-1] if names else None
        line = lines[n - 1] if 0 < n <= len(lines) else ""
        test(f"{rel} {m.group(0)} holds {ident}", bool(ident) and ident.lower() in line.lower(),
             f"line {n} is {line.strip()[:80]!r}" if ident else "no `identifier` quoted before it")


def check_text(path: Path, text: str | None = None) -> None:
    rel = str(path.relative_to(TOP))
    text = path.read_text() if text is None else text
    n = len(text.splitlines())
    limit = LIMITS["REPORT.md"] if path.name == "REPORT.md" else LIMITS["tracker"] \
        if path.parent.name == "report" and re.match(r"B\d+\.md$", path.name) else None
    if limit:
        test(f"{rel} length", n <= limit, f"{n} lines, at most {limit}")
    check_line_refs(rel, FENCE.sub("", text))
    prog = None
    for m in FENCE.finditer(text):
        lang, body = m.group(1), m.group(2)
        before = text[:m.start()]
        named = PROG.findall(before)
        prog = named[-1] if named else None
        at = f"{rel}:{before.count(chr(10)) + 1}"
        if lang == "pascal":
            want = upstream_texts.program_text(prog.upper()) + "\n" if prog else None
            test(f"{at} pascal is repro/fpc/min/{prog}.lpr less its header comment",
                 want is not None and body == want and comment_only(prog),
                 "differs from the program check.sh compiles and runs (make report)" if prog
                 else "no program named above it")
        elif lang in ("sh", "bash", "shell", "console"):
            if not prog:
                test(f"{at} {lang}", False, "a command block with no reproducer above it: nothing runs it")
                continue
            runs = set(upstream_texts.min_commands(prog.upper()).values())
            for line in body.splitlines():
                if not line.strip():
                    continue
                for note in (upstream_texts.RUN_NOTE, upstream_texts.CONTROL_NOTE):
                    line = line[:-len(note)] if line.endswith(note) else line
                why = balanced(line)
                test(f"{at} {prog} runs {line[:60]!r}", not why and line in runs,
                     why or f"not a line of repro/fpc/min/{prog}.lpr's header, which the min step runs")
        elif lang in ("", "diff", "text"):
            continue
        else:
            test(f"{at} {lang}", False, f"a ```{lang} block: nothing in the suite compiles or runs it")
    test(f"{rel} fences", text.count("```") % 2 == 0, "an odd number of ``` fences")


# What the checks must catch, each made from a real text by one edit.
BREAKS = {
    "a command cut at its first brace": lambda t: t.replace("'%{num_connects} %{time_total}\\n' 'http", "'%{num_connects", 1),
    "a command the min step does not run": lambda t: t.replace("```sh\n", "```sh\ncurl http://127.0.0.1:8080/\n", 1),
    "a program other than the one compiled": lambda t: t.replace("program b3;", "program b3x;", 1),
    "a line reference to the wrong line": lambda t: t.replace("fphttpserver.pp:1125", "fphttpserver.pp:1126", 1),
    "a block nothing runs": lambda t: t + "\n```python\nprint(1)\n```\n",
}


def self_test() -> None:
    """Each break of report/B3.md fails the checks; the real text passes."""
    global failures, quiet
    path = TOP / "report" / "B3.md"
    real = path.read_text()
    for what, brk in BREAKS.items():
        broken = brk(real)
        before, quiet = failures, True
        check_text(path, broken)
        caught, failures, quiet = failures > before, before, False
        test(f"self-test: {what} fails the check", broken != real and caught,
             "the edit did not apply (the text changed?)" if broken == real else "not caught")


def main() -> int:
    texts = [TOP / "REPORT.md"] + sorted((TOP / "report").glob("*.md")) + \
        sorted((TOP / "report" / "evidence").glob("B*.md")) + sorted((TOP / "report" / "horse").glob("*.md")) + \
        sorted((TOP / "report" / "confidential").glob("*.md"))
    for p in texts:
        check_text(p)
    self_test()
    # the header lines themselves: whole, and what check.sh reads
    for lpr in sorted(MIN.glob("b*.lpr")):
        d = lpr.stem.upper()
        for k, v in upstream_texts.min_commands(d).items():
            why = balanced(v)
            test(f"repro/fpc/min/{lpr.name} {k} parses", not why, why)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
