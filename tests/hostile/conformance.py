#!/usr/bin/env python3
"""tests/hostile/conformance.py - the conformance table from one run.

    conformance.py merge DIR   DIR/table.json (build/hostile --conformance
                               --describe) and DIR/<mode>/<variant>/
                               conformance.out (plain = the model,
                               real-trunk; stock, all) -> DIR/conformance.json
                               and DIR/conformance.md; checks that the model
                               and the real trunk gave the same outcome and
                               that every case `all` claims conforms on all
    conformance.py self-test   the merge fails a doctored run (model differs
                               from the real trunk; a claimed case violates)
    conformance.py md JSON     the markdown table of a conformance.json
                               (what repro/report/report.py prints in
                               report/conformance.md; REPORT.md gets
                               summary_md)

Which defects `all` fixes comes from repro/harness/patchset.py (C series for the
model, Pascal series for the real trunk); a case is claimed when its
fixed_by defects are all among them.  Prints one TEST line per check.
"""
from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TOP / "repro" / "harness"))
import patchset  # noqa: E402

COLUMNS = [("plain", "stock", "model stock"), ("real-trunk", "stock", "real stock"),
           ("plain", "all", "model all"), ("real-trunk", "all", "real all")]
LINE = re.compile(r"^(OUTCOME|CONFORM): ([^/]+)/([^/]+)/(\S+) (.*)$")


def read_runs(d: Path) -> tuple[dict, dict, set]:
    """(outcome, verdict) keyed by (mode, variant, case); the runs present."""
    outcome, verdict, ran = {}, {}, set()
    for mode, v, _ in COLUMNS:
        f = d / mode / v / "conformance.out"
        if not f.exists() or "[SKIP]" in f.read_text(errors="replace").split("\n", 1)[0]:
            continue
        ran.add((mode, v))
        for line in f.read_text(errors="replace").splitlines():
            m = LINE.match(line)
            if not m:
                continue
            key = (m.group(2), m.group(3), m.group(4))
            if m.group(1) == "OUTCOME":
                outcome[key] = m.group(5).split(" | ")[0]
            else:
                verdict[key] = m.group(5)
    return outcome, verdict, ran


def claimed(case: dict, kind: str, fixed: dict | None = None) -> bool:
    need = (case.get("fixed_by") or "").split()
    have = (fixed or {}).get(kind) or patchset.fixed_by("all", kind)
    return bool(need) and all(n in have for n in need)


def merge(d: Path, fixed: dict | None = None, quiet: bool = False) -> int:
    try:
        table = json.loads((d / "table.json").read_text())
    except (OSError, ValueError) as e:
        print(f"TEST: conformance table [FAIL] {d / 'table.json'}: {e} (build/hostile --conformance --describe)")
        return 1
    outcome, verdict, ran = read_runs(d)
    rc, rows = 0, []

    def test(name: str, ok: bool, why: str = "") -> None:
        nonlocal rc
        rc |= not ok
        if not quiet:
            print(f"TEST: conformance {name} [{' OK ' if ok else 'FAIL'}]" + (f" {why}" if why and not ok else ""))

    for c in table:
        name, row = c["case"], dict(c)
        row["outcomes"], row["verdicts"] = {}, {}
        for mode, v, col in COLUMNS:
            if (mode, v) not in ran:
                continue
            o, vd = outcome.get((mode, v, name)), verdict.get((mode, v, name))
            row["outcomes"][col], row["verdicts"][col] = o, vd
            if o is None or vd is None:
                test(f"{mode}/{v}/{name} reported", False, "no OUTCOME/CONFORM line (the case failed to run)")
        for v in ("stock", "all"):
            a, b = row["outcomes"].get(f"model {v}"), row["outcomes"].get(f"real {v}")
            if a is not None and b is not None:
                test(f"model = real {v}/{name}", a == b,
                     f"model {a}, real trunk {b}: a fidelity bug of the model (or a deviation to document)")
        row["claimed_by_all"] = {"model": claimed(c, "c", fixed), "real": claimed(c, "fpc", fixed)}
        for kind, col in (("model", "model all"), ("real", "real all")):
            if row["claimed_by_all"][kind] and col in row["verdicts"]:
                test(f"{col.replace(' ', '/')}/{name} claimed by {c['fixed_by']} conforms",
                     row["verdicts"][col] == "conforms", f"{row['verdicts'][col]}: {row['outcomes'][col]}")
        rows.append(row)
    doc = {"cases": rows, "runs": sorted(f"{m}/{v}" for m, v in ran),
           "summary": summary(rows)}
    (d / "conformance.json").write_text(json.dumps(doc, indent=1) + "\n")
    (d / "conformance.md").write_text(markdown(doc) + "\n")
    if not quiet:
        s = doc["summary"]
        print(f"conformance: {len(rows)} cases; real trunk stock: {s['real stock']}; all: {s['real all']}"
              f" -> {d / 'conformance.json'}, {d / 'conformance.md'}")
    return rc


def summary(rows: list[dict]) -> dict:
    out = {}
    for _, _, col in COLUMNS:
        counts: dict[str, int] = {}
        for r in rows:
            vd = r["verdicts"].get(col)
            if vd:
                counts[vd] = counts.get(vd, 0) + 1
        out[col] = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    return out


def verdict_text(r: dict) -> str:
    """The case's verdict: stock's (real trunk, else the model), then what all does."""
    st = r["verdicts"].get("real stock") or r["verdicts"].get("model stock") or "not run"
    al = r["verdicts"].get("real all") or r["verdicts"].get("model all")
    if st == "conforms":
        return "conforms" + ("" if al in (None, "conforms") else f"; all: {al}")
    if r.get("fixed_by") and al == "conforms":
        return f"{st}; conforms on all (fixed by {r['fixed_by']})"
    if r.get("at_merge"):
        return f"{st}; no patch claims it yet ({r['at_merge']} at merge)"
    return f"{st}; no patch claims it" + (f" (candidate: {r['candidate']})" if r.get("candidate") else "")


def cell(s: str | None) -> str:
    return "–" if s is None else "`" + s.replace("|", "\\|") + "`"


def markdown(doc: dict) -> str:
    head = ["case", "RFC section", "requirement", "model stock", "real stock", "model all",
            "real all", "verdict"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in doc["cases"]:
        o = r["outcomes"]
        lines.append("| " + " | ".join([f"`{r['case']}`", r["section"], f"{r['requirement']} ({r['level']})",
                                        cell(o.get("model stock")), cell(o.get("real stock")),
                                        cell(o.get("model all")), cell(o.get("real all")),
                                        verdict_text(r)]) + " |")
    lines += ["", "The request bytes of each case (CR and LF written as \\\\r and \\\\n; the server flags in parentheses):", ""]
    for r in doc["cases"]:
        req = r["request"].encode("unicode_escape").decode("ascii")
        lines.append(f"- `{r['case']}`: `{req}`" + (f" (`{r['flags']}`)" if r.get("flags") else ""))
    s = doc["summary"]
    lines.append("")
    lines.append(f"{len(doc['cases'])} cases. Real trunk stock: {s['real stock'] or 'not run'}; "
                 f"all: {s['real all'] or 'not run'}. Model stock: {s['model stock']}; all: {s['model all']}.")
    return "\n".join(lines)


def summary_md(doc: dict) -> str:
    """REPORT.md's short form: verdict counts per column, what the series
    makes conform, and model = real."""
    kinds = ["conforms", "violates (MUST)", "violates (SHOULD)"]
    lines = ["| server | " + " | ".join(kinds) + " |", "|---|" + "---|" * len(kinds)]
    for _, _, col in COLUMNS:
        n = [sum(1 for r in doc["cases"] if r["verdicts"].get(col) == k) for k in kinds]
        if any(n):
            lines.append(f"| {col} | " + " | ".join(str(x) for x in n) + " |")
    fixed = [f"`{r['case']}` ({r['fixed_by']})" for r in doc["cases"]
             if r.get("fixed_by") and r["verdicts"].get("real all", r["verdicts"].get("model all")) == "conforms"
             and r["verdicts"].get("real stock", r["verdicts"].get("model stock")) != "conforms"]
    pairs = [(r["outcomes"].get(f"model {v}"), r["outcomes"].get(f"real {v}"))
             for r in doc["cases"] for v in ("stock", "all")]
    pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
    lines += ["", f"{len(doc['cases'])} cases. The series makes {len(fixed)} conform: " + ", ".join(fixed) + ". "
              f"The model gave the real trunk's outcome in {sum(a == b for a, b in pairs)} of {len(pairs)} pairs."]
    return "\n".join(lines)


def self_test() -> int:
    """Doctored runs the merge must fail, and the clean one it must pass."""
    table = [{"case": "a-claimed", "section": "RFC 9112 9.6", "level": "SHOULD", "requirement": "r",
              "conforms": "x", "fixed_by": "B4", "at_merge": None, "candidate": None, "flags": "",
              "expected": "", "request": ""},
             {"case": "b-plain", "section": "RFC 9112 9.3", "level": "MUST", "requirement": "r",
              "conforms": "x", "fixed_by": None, "at_merge": None, "candidate": None, "flags": "",
              "expected": "", "request": ""}]
    good = {("plain", "stock"): {"a-claimed": ("o1", "violates (SHOULD)"), "b-plain": ("o2", "conforms")},
            ("plain", "all"): {"a-claimed": ("o3", "conforms"), "b-plain": ("o2", "conforms")}}
    good[("real-trunk", "stock")] = good[("plain", "stock")]
    good[("real-trunk", "all")] = good[("plain", "all")]
    bent_fidelity = dict(good)
    bent_fidelity[("plain", "stock")] = {"a-claimed": ("o1", "violates (SHOULD)"), "b-plain": ("oX", "conforms")}
    bent_claim = dict(good)
    bent_claim[("real-trunk", "all")] = {"a-claimed": ("o1", "violates (SHOULD)"), "b-plain": ("o2", "conforms")}
    fixed = {"c": ["B4"], "fpc": ["B4"]}
    rc = 0
    for name, runs, want in (("clean run passes", good, 0), ("model differing from the real trunk fails", bent_fidelity, 1),
                             ("a claimed case violating on all fails", bent_claim, 1)):
        with tempfile.TemporaryDirectory() as t:
            d = Path(t)
            (d / "table.json").write_text(json.dumps(table))
            for (mode, v), cases in runs.items():
                (d / mode / v).mkdir(parents=True)
                (d / mode / v / "conformance.out").write_text("".join(
                    f"OUTCOME: {mode}/{v}/{c} {o} | figures [1 ms]\nCONFORM: {mode}/{v}/{c} {vd}\n"
                    for c, (o, vd) in cases.items()))
            got = merge(d, fixed, quiet=True)
        ok = got == want
        rc |= not ok
        print(f"TEST: conformance self-test: merge, {name} [{' OK ' if ok else 'FAIL'}]")
    return rc


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "merge":
        return merge(Path(argv[1]))
    if argv == ["self-test"]:
        return self_test()
    if len(argv) == 2 and argv[0] == "md":
        print(markdown(json.loads(Path(argv[1]).read_text())))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
