#!/usr/bin/env python3
"""upstream_bundle.py OUT - the texts of the FPC filing that `make upstream`
(scripts/upstream.sh) writes beside the commits it cut.

OUT holds, from scripts/upstream.sh, fpc/NN-topic/*.patch (each public
report's commits, cut to apply alone on the pristine trunk),
fpc-confidential/*.patch and horse/*.patch.  This script writes:

  fpc/cover.md                 the one-page cover (at most 60 lines)
  fpc/NN-topic/report.md       the report as filed in FPC's issue tracker (at
                               most 100 lines), and the reproducers bN.lpr
  fpc-confidential/report.md   the same for the security-relevant defects,
                               addressed to FPC's confidential issue channel
  horse/README.md              what the Horse patches are

Every fact is read from the file that holds it: the defects and their
fixes from repro/harness/patchset.py (Defect:, Report:), a defect's texts
from report/Bn.md (title, Affected, Root cause, Risks; its version line,
generated from the last matrix) and, for a security-relevant one, the
impact from report/confidential/Bn.md; where it came from from
report/Bn.md's **Origin:** sentence, else repro/bisect/results.json; the
reproducer and its command from repro/fpc/min/bN.lpr; the regression
test's name from repro/fpc/fpcunit/tests.json; a commit's subject from the
cut patch itself.  A text is shortened by leaving whole sentences out
(those that speak of the kit or of Horse first, then the last ones), never
cut inside one; a report that cannot be brought within its length is an
error.  KIT_URL (environment): the one link to the kit the texts give.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TOP / "repro" / "harness"))
import patchset  # noqa: E402
sys.path.insert(0, str(TOP / "repro" / "report"))
import upstream_texts  # noqa: E402

TRACKER = TOP / "report"
CONFIDENTIAL = TRACKER / "confidential"
MIN = TOP / "repro" / "fpc" / "min"
FPCUNIT = TOP / "repro" / "fpc" / "fpcunit" / "tests.json"
MAX_REPORT, MAX_COVER = 100, 60
SNAPSHOT = ("trunk 3.3.1 at fpc/FPCSource 1dba64b (2026-08-22; fphttpserver.pp "
            "last changed in 50174fbb3f)")
CHANNEL = ("FPC's confidential issue channel: a new issue at "
           "https://gitlab.com/freepascal.org/fpc/source/-/issues with "
           "\"This issue is confidential\" ticked")
TRACKER_URL = "https://gitlab.com/freepascal.org/fpc/source/-/issues"

# Each report's title and what it asks a reviewer, in a sentence or two.
# A report patchset.py names and this table does not is an error.
REPORTS = {
    "01-forward-connect": (
        "OnAllowConnect is never called",
        "A few lines in DoOnAllowConnect: the user's handler is stored and read "
        "nowhere since the connection cap. Small, self-contained, mergeable alone."),
    "02-small-responses": (
        "small responses on a kept-alive connection wait ~40 ms for the peer's delayed ACK",
        "Nagle holds the body written after the header. Two fixes, either one "
        "suffices: TCP_NODELAY on accepted sockets, or header and body in one write."),
    "03-persistence": (
        "keep-alive and pipelining: requests lost or left unanswered, close not announced",
        "Five defects of the keep-alive path, each with its own commit."),
    "04-request-errors": (
        "request errors and HTTP conformance: unanswered and misframed responses",
        "Five defects where a request the server should refuse or answer "
        "differently gets no answer, a wrong one, or a response framed wrongly."),
    "05-pool-lifecycle": (
        "tmThreadPool and tmPolled: stalls and shutdown",
        "Four defects of the pooled and polled connection handlers: kept-alive "
        "connections wait for a tick, workers wait on a lock, Destroy waits for clients."),
    "06-poll": (
        "fcl-net: a socket whose descriptor is 1024 or above is never read",
        "TSocketHandler.Select uses select() and an fd_set; the fix waits "
        "with poll() on Unix."),
    "confidential": (
        "three security-relevant defects in fphttpserver's request reading",
        "Three defects of the request reader that a client can use against the "
        "server or the proxy in front of it, with a fix each."),
}

# Sentences that speak of the kit, or of Horse, are no part of an FPC text.
KITISH = re.compile(r"Horse|\bkit\b|\bmatrix\b|repro/|tests/|patches/|results/|report/|"
                    r"docs/|`make |server-min|\bsweep\b|evidence", re.I)


def tracker_path(defect: str) -> Path:
    """report/Bn.md, or report/confidential/Bn-tracker.md for a
    security-relevant defect (as repro/report/report.py has it)."""
    if defect in patchset.security():
        return CONFIDENTIAL / f"{defect}-tracker.md"
    return TRACKER / f"{defect}.md"


def fail(msg: str) -> None:
    sys.exit(f"upstream_bundle: {msg}")


def sentences(text: str) -> list[str]:
    text = " ".join(text.split())
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z`(\"*])", text)
    return [p for p in parts if p]


def section(text: str, name: str) -> str:
    """The paragraph(s) after **name:** up to the next **Field:** or heading,
    generated blocks left out."""
    m = re.search(rf"^\*\*{re.escape(name)}:?\*\*:?(.*?)(?=^\*\*[A-Z][^*]*:?\*\*|^#|\Z)", text, re.S | re.M)
    if not m:
        return ""
    body = re.sub(r"<!-- generated:.*?<!-- /generated:[^>]*-->", "", m.group(1), flags=re.S)
    return " ".join(body.split())


def shorten(text: str, n: int) -> str:
    """At most n whole sentences of text, those about the kit or Horse left
    out first."""
    keep = [s for s in sentences(text) if not KITISH.search(s)]
    return " ".join(keep[:n])


def head_field(text: str, field: str) -> str:
    m = re.search(rf"^- {field}: (.*)$", text, re.M)
    return m.group(1).strip() if m else ""


def title_of(text: str, defect: str) -> str:
    m = re.search(rf"^# {defect}\. (.*)$", text, re.M)
    if not m:
        fail(f"{tracker_path(defect).relative_to(TOP)} has no '# {defect}. title' line")
    return m.group(1).strip()


def version_322(text: str) -> str:
    v = head_field(text, "Version")
    m = re.search(r"FPC 3\.2\.2: (.*)$", v)
    return m.group(1) if m else "not measured"


def origin(text: str, defect: str) -> str:
    """Where the defect came from, in one sentence: report/Bn.md's own
    **Origin:** sentence where it has one (introduced or only exposed), else
    where the bisect first saw it (upstream_texts.introduced_sentence)."""
    own = re.sub(r"\s*Bisect:\s*$", "", section(text, "Origin")).strip()
    if own:
        return own[0].upper() + own[1:]
    s = upstream_texts.introduced_sentence(defect)
    return f"{s}." if s else "Not bisected."


def lpr_header(defect: str) -> tuple[str, list[str]]:
    """The reproducer's file and the lines of its header from Command: to
    the end of Actual: (with their continuation lines)."""
    path = MIN / f"{defect.lower()}.lpr"
    if not path.exists():
        fail(f"no {path.relative_to(TOP)}")
    lines = path.read_text().splitlines()
    out, on = [], False
    for ln in lines:
        m = re.match(r"^  ([A-Z][A-Za-z0-9 .]*):\s", ln)
        if m:
            on = m.group(1) in ("Command", "Control", "Expected", "Actual")
        elif not ln.startswith("    "):
            on = False
        if on:
            out.append(ln[2:].rstrip(" }"))
        if ln.rstrip().endswith("}") and "Actual" in "".join(out):
            break
    if not out:
        fail(f"{path.name} has no Command:/Expected:/Actual: header lines")
    return path.name, out


def regression_test(defect: str) -> str:
    try:
        d = json.loads(FPCUNIT.read_text())
    except (OSError, ValueError):
        return ""
    t = d.get("defects", {}).get(defect)
    return f"`{d.get('suite', '?')}.{t['test']}`" if t else ""


def subject_of(patch: Path) -> str:
    head = patch.read_text(errors="replace").split("\n\n", 1)[0]
    m = re.search(r"^Subject: (.*(?:\n .*)*)", head, re.M)
    return re.sub(r"^\[PATCH[^]]*\] ", "", " ".join(m.group(1).split())) if m else patch.name


def trim(hdr: list[str]) -> list[str]:
    """The reproducer's header lines less the Control command and the
    notes in parentheses under a command: what a report too long keeps."""
    out, field, depth = [], "", 0
    for ln in hdr:
        m = re.match(r"^([A-Z][A-Za-z]*):", ln)
        if m:
            field, depth = m.group(1), 0
        elif field in ("Command", "Control") and (depth or ln.strip().startswith("(")):
            depth += ln.count("(") - ln.count(")")
            continue
        if field != "Control":
            out.append(ln)
    return out


def defect_block(defect: str, commits: list[tuple[Path, str]], n_cause: int, n_risk: int,
                 secret: bool, short: bool = False) -> list[str]:
    text = tracker_path(defect).read_text()
    title = title_of(text, defect)
    lpr, hdr = lpr_header(defect)
    out = [f"## {defect}. {title}", "",
           f"- **Versions.** Trunk affected; FPC 3.2.2: {version_322(text)}. {origin(text, defect)}"]
    if secret:
        imp = shorten(section((CONFIDENTIAL / f"{defect}.md").read_text(), "Impact."), 2)
        if imp:
            out.append(f"- **Impact.** {imp}")
    out += [f"- **Reproducer** `{lpr}` (attached):", "", "```"] + (trim(hdr) if short else hdr) + ["```"]
    cause = shorten(section(text, "Root cause"), n_cause)
    if cause:
        out.append(f"- **Cause.** {cause[0].upper()}{cause[1:]}")
    fixes = "; ".join(f"`{p.name}`, \"{s}\"" for p, s in commits)
    t = regression_test(defect)
    test = f" Test: {t} (fpcunit)." if t else ""
    out.append(f"- **Fix.** {fixes}.{test}")
    risk = shorten(section(text, "Risks"), n_risk)
    if risk:
        out.append(f"- **Risks.** {risk[0].upper()}{risk[1:]}")
    out.append("")
    return out


def kit_line() -> str:
    url = os.environ.get("KIT_URL", "").strip()
    return (f"Found and checked with the fphttpserver reproducer kit: {url}" if url else
            "Found and checked with the fphttpserver reproducer kit (`make repro`).")


def report_text(name: str, folder: Path, secret: bool) -> list[str]:
    if name not in REPORTS:
        fail(f"report {name} has no title in REPORTS (repro/report/upstream_bundle.py)")
    title, why = REPORTS[name]
    fixes = patchset.report(name)
    table = patchset.by_name()
    patches = sorted(folder.glob("*.patch"))
    if not patches:
        fail(f"{folder} holds no patch")
    # Which cut commit belongs to which fix: the Pascal patches of each fix,
    # in series order, are the report's commits in order.
    names = [n for f in fixes for n in patchset.pascal(f)]
    order = [n for n in patchset.series("fpc") if n in names]
    if len(order) != len(patches):
        fail(f"{folder}: {len(patches)} patches for {len(order)} Pascal patches of {' '.join(fixes)}")
    of_fix: dict[str, list[tuple[Path, str]]] = {}
    for n, p in zip(order, patches):
        of_fix.setdefault(patchset.fix_of(n), []).append((p, subject_of(p)))
    defects: list[str] = []
    for f in fixes:
        if table[f].defect not in defects:
            defects.append(table[f].defect)
    units = sorted({m for p in patches for m in re.findall(r"^\+\+\+ b/(\S+)", p.read_text(), re.M)})
    # Each bullet is one line: a report too long loses the risks' second
    # sentence, then the Control commands and notes, then the risks.
    for n_cause, n_risk, short in ((3, 2, False), (3, 1, True), (3, 0, True)):
        out = [f"# fphttpserver: {title}", ""]
        if secret:
            out += [f"For {CHANNEL}. Embargoed: please keep this issue confidential until a "
                    "release with the fixes, or a date agreed with the reporter.", ""]
        out += [why, "",
                f"- Component: {', '.join(units)}",
                f"- Version: {SNAPSHOT}; FPC 3.2.2 per defect below.",
                f"- Defects: {', '.join(defects)}.",
                f"- Patches: {len(patches)} commit{'s' * (len(patches) > 1)} in `git format-patch` form, "
                "attached; `git am *.patch` applies them on that trunk, with or without the other reports.",
                "- Reproducers: the attached `bN.lpr`, each a console program using only "
                "`fphttpserver` and the RTL: `fpc bN.lpr`, `./bN 8080`, then the Command line in another terminal.",
                "- Tests: each defect's fpcunit test (named below) fails on trunk and passes with all "
                "the fixes; the test unit, packages/fcl-web/tests/tcfphttpserver.pp with its runner, "
                "follows as a commit of its own.",
                f"- {kit_line()}", ""]
        for d in defects:
            out += defect_block(d, [c for f in fixes if table[f].defect == d for c in of_fix.get(f, [])],
                                n_cause, n_risk, secret, short)
        if len(out) <= MAX_REPORT:
            return out
    fail(f"{name}: report.md takes {len(out)} lines even without Control commands and risks: "
         f"shorten report/B*.md (at most {MAX_REPORT} lines)")
    return []


NUMBER = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}


def cover(public: list[str], out: Path) -> list[str]:
    nsec = len(patchset.security())
    lines = ["# fphttpserver (fcl-web): connection-handling defects, with reproducers and fixes", "",
             f"To the fcl-web maintainers, for FPC's issue tracker ({TRACKER_URL}). Measured on "
             f"{SNAPSHOT}.", "",
             f"{NUMBER.get(nsec, str(nsec)).capitalize()} security-relevant defects were reported "
             "confidentially.", "",
             "The public reports, each a separate issue whose commits `git am` alone on that "
             "trunk (in this order, they also apply one after the other):", "",
             "| report | defects | commits |", "|---|---|---|"]
    for r in public:
        fixes = patchset.report(r)
        ds = []
        for f in fixes:
            d = patchset.by_name()[f].defect
            if d not in ds:
                ds.append(d)
        n = len(list((out / r).glob("*.patch")))
        lines.append(f"| [{r}]({r}/report.md): {REPORTS[r][0]} | {', '.join(ds)} | {n} |")
    report_of = {p.defect: p.report for p in patchset.patches()}
    lines += ["", f"What is broken, worst first (after the {NUMBER.get(nsec, str(nsec))} security-relevant defects):", ""]
    filed = [d for d in report_of if d not in patchset.security()]
    placed = [d for _, ds in upstream_texts.COVER_CLASS.values() for d in ds]
    classes = list(upstream_texts.COVER_CLASS.values())
    classes += [(upstream_texts.OTHER_CLASS, [d for d in filed if d not in placed])]
    for title, ds in classes:
        ds = [d for d in ds if d in filed]
        if ds:
            lines.append(f"- {title}: " + ", ".join(f"{d} ({report_of[d]})" for d in ds) + ".")
    lines += ["",
              "Review first: 01-forward-connect (one small commit, mergeable alone), then "
              "02-small-responses (the latency every keep-alive client sees).", "",
              "Reproduce: each report attaches its reproducers (`bN.lpr`, only `fphttpserver` and the "
              "RTL): `fpc bN.lpr`, `./bN 8080`, and the report's Command line in another terminal.", "",
              f"{kit_line()}", ""]
    return lines


def write(path: Path, lines: list[str], limit: int) -> None:
    if len(lines) > limit:
        fail(f"{path}: {len(lines)} lines (at most {limit})")
    path.write_text("\n".join(lines).rstrip("\n") + "\n")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    reports = patchset.reports()
    public = [r for r in reports if r != "confidential"]
    for r in public:
        folder = out / "fpc" / r
        write(folder / "report.md", report_text(r, folder, False), MAX_REPORT)
    if "confidential" in reports:
        folder = out / "fpc-confidential"
        write(folder / "report.md", report_text("confidential", folder, True), MAX_REPORT)
    for folder, r in [(out / "fpc" / r, r) for r in public] + [(out / "fpc-confidential", "confidential")]:
        for f in patchset.report(r):
            d = patchset.by_name()[f].defect
            src = MIN / f"{d.lower()}.lpr"
            if src.exists():
                shutil.copy(src, folder / src.name)
    write(out / "fpc" / "cover.md", cover(public, out / "fpc"), MAX_COVER)
    horse = out / "horse"
    if horse.is_dir():
        hp = sorted(horse.glob("*.patch"))
        write(horse / "README.md", [
            "# Horse (HashLoad/horse): patches for the FPC provider", "",
            "On top of master ff41415 and the merged PRs #563 and #566; each applies alone "
            "(`git am`) and brings its test under tests/fpc/. For a pull request each:", ""] +
            [f"- `{p.name}`: {subject_of(p)}" for p in hp], MAX_REPORT)
    # No public text names what the confidential report is about.
    for p in sorted((out / "fpc").rglob("*")) + sorted(horse.glob("*") if horse.is_dir() else []):
        if p.is_file() and re.search(r"smuggl", p.read_text(errors="replace"), re.I):
            fail(f"{p} names request smuggling: a public file must not")
    print(f"upstream_bundle: {len(public)} public reports, cover and texts in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
