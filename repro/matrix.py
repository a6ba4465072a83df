#!/usr/bin/env python3
"""matrix.py - `make repro`: every server variant against every defect.

Rows: stock, each fix, all, the application-side TCP_NODELAY mitigations on
stock and where they apply, and pairs that show an interaction.  Columns:
B1..B6 verdicts with the figure behind each.  A row meets the maintainers'
criteria when it fixes its target defects and leaves every other verdict
as stock has it (no regression).  Exit status: 0 when every row shows its
expected verdicts, 1 otherwise.

Usage: repro/matrix.py [--rows NAME,NAME] [--out DIR] [--no-strace]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kit  # noqa: E402
from kit import DEFECTS, Row  # noqa: E402

R, F = "reproduced", "fixed"


def expect(fixed: list[str]) -> dict[str, str]:
    return {d: (F if d in fixed else R) for d in DEFECTS}


def rows() -> list[Row]:
    b = kit.binary
    out = [Row("stock", b("stock"), expect=expect([]),
               note="upstream trunk behaviour, defects included")]
    for fix, defect in zip(kit.FIXES, DEFECTS):
        note = ""
        fixed = [defect]
        if fix == "keep-surplus-bytes":
            # Interaction: the GET stays in FBuffer, but RequestPending never
            # looks there, so it is served only together with B2's fix.
            fixed = []
            note = "keeps the GET in FBuffer; served only with buffer-aware-pending"
        out.append(Row(fix, b(fix), expect=expect(fixed), target=[defect], note=note))
    out.append(Row("keep-surplus-bytes+buffer-aware-pending",
                   b("keep-surplus-bytes+buffer-aware-pending"),
                   expect=expect(["B2", "B5"]), target=["B2", "B5"],
                   note="the pair fixes B5"))
    out.append(Row("all", b("all"), expect=expect(DEFECTS), target=list(DEFECTS)))
    out.append(Row("stock --on-allow-connect nodelay", b("stock"),
                   ["--on-allow-connect", "nodelay"], expect=expect([]),
                   note="the seed's first mitigation: dead hook, stall stays"))
    out.append(Row("stock --socket-handler nodelay", b("stock"),
                   ["--socket-handler", "nodelay"], expect=expect(["B3"]),
                   target=["B3"], note="TCP_NODELAY in isolation, keep-alive unchanged"))
    out.append(Row("stock --request-nodelay", b("stock"), ["--request-nodelay"],
                   expect=expect(["B3"]), target=["B3"],
                   note="Horse's DoGetModule mitigation"))
    out.append(Row("forward-allow-connect --on-allow-connect nodelay",
                   b("forward-allow-connect"), ["--on-allow-connect", "nodelay"],
                   expect=expect(["B1", "B3"]), target=["B1", "B3"],
                   note="the forwarded hook makes the TCP_NODELAY mitigation work"))
    return out


def criteria(row: Row, got: dict, stock: dict | None) -> tuple[bool, str]:
    """Fixes its targets, and regresses nothing stock had right."""
    missed = [d for d in row.target if got[d].state != F]
    if missed:
        return False, "does not fix " + ",".join(missed)
    if stock:
        worse = [d for d in DEFECTS if stock[d].state == F and got[d].state != F]
        if worse:
            return False, "regresses " + ",".join(worse)
    return True, "fixes " + (",".join(row.target) if row.target else "nothing (baseline)")


def environment() -> dict:
    def run(*a):
        try:
            return subprocess.run(a, capture_output=True, text=True, timeout=10).stdout.strip()
        except OSError:
            return ""
    return {"kernel": platform.release(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "compiler": run("cc", "--version").splitlines()[0] if run("cc", "--version") else "",
            "strace": run("strace", "-V").splitlines()[0] if kit.have_strace() else None,
            "commit": run("git", "-C", str(kit.TOP), "rev-parse", "--short", "HEAD")}


def short(v: kit.Verdict) -> str:
    return {"reproduced": "REPRO", "fixed": "fixed", "inconclusive": "??", "n/a": "n/a"}[v.state]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--rows", help="comma-separated row names (default: all)")
    ap.add_argument("--out", default=str(kit.TOP / "results" / "latest"))
    ap.add_argument("--no-strace", action="store_true")
    args = ap.parse_args()

    use_strace = kit.have_strace() and not args.no_strace
    if not use_strace:
        print("note: strace evidence skipped: "
              + ("--no-strace given" if args.no_strace else "strace is not installed"))
    all_rows = rows()
    if args.rows:
        wanted = args.rows.split(",")
        unknown = [w for w in wanted if w not in {r.name for r in all_rows}]
        if unknown:
            print("unknown rows: " + ", ".join(unknown), file=sys.stderr)
            return 2
        all_rows = [r for r in all_rows if r.name in wanted]
    missing = [str(r.binary) for r in all_rows if not r.binary.exists()]
    if missing:
        subprocess.run(["make", "-C", str(kit.TOP), "--no-print-directory",
                        *[os.path.relpath(m, kit.TOP) for m in missing]], check=True)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results, stock = [], None
    failures = 0
    hdr = f"{'row':<50} " + " ".join(f"{d:<6}" for d in DEFECTS) + " criteria"
    print(hdr)
    print("-" * len(hdr))
    for row in all_rows:
        got = kit.measure_row(row, out / row.name.replace(" ", "_"), use_strace)
        if row.name == "stock":
            stock = got
        ok, why = criteria(row, got, stock)
        mism = [d for d in DEFECTS if got[d].state != row.expect[d]]
        if mism:
            failures += 1
        line = f"{row.name:<50} " + " ".join(f"{short(got[d]):<6}" for d in DEFECTS)
        line += f" {'meets' if ok else 'FAILS'}: {why}"
        if mism:
            line += "  UNEXPECTED: " + ", ".join(
                f"{d} {got[d].state} (expected {row.expect[d]})" for d in mism)
        print(line, flush=True)
        results.append({"row": row.name, "binary": str(row.binary.relative_to(kit.TOP)),
                        "flags": row.flags, "note": row.note, "target": row.target,
                        "criteria_met": ok, "criteria": why,
                        "expected": row.expect,
                        "verdicts": {d: {"state": v.state, "figure": v.figure, "data": v.data}
                                     for d, v in got.items()},
                        "as_expected": not mism})

    print()
    print("Figures behind each verdict:")
    for r in results:
        print(f"\n[{r['row']}]" + (f"  ({r['note']})" if r["note"] else ""))
        for d in DEFECTS:
            v = r["verdicts"][d]
            print(f"  {d} {v['state']:<12} {v['figure']}")
        b3 = r["verdicts"]["B3"]["data"]
        if b3.get("sends_per_response") is not None:
            print(f"     sendto/response {b3['sends_per_response']}, TCP_NODELAY "
                  f"per connection {b3.get('tcp_nodelay_per_connection')}, "
                  f"select timeouts (ms) {b3.get('select_timeouts_ms')}")
        if b3.get("idle_gap_ratio") is not None:
            print(f"     controls: request 1 {b3['first_us']:.0f} us; 300 ms idle gap "
                  f"{b3['idle_gap_ratio']:.1f}x the keep-alive-off median "
                  f"({b3['fresh_p50_us']:.0f} us)")

    doc = {"environment": environment(), "strace": use_strace,
           "b3_thresholds": {"stall_ratio": kit.B3_STALL_RATIO,
                             "clean_ratio": kit.B3_CLEAN_RATIO},
           "rows": results}
    (out / "matrix.json").write_text(json.dumps(doc, indent=1))
    print(f"\n{len(results) - failures} rows as expected, {failures} not; "
          f"evidence in {os.path.relpath(out, Path.cwd())}/")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
