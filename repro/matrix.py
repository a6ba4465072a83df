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
    out = [Row("stock", "stock", expect=expect([]),
               note="upstream trunk behaviour, defects included")]
    for fix, defect in zip(kit.FIXES, DEFECTS):
        row = Row(fix, fix, expect=expect([defect]), target=[defect])
        if fix == "keep-surplus-bytes":
            # Interaction: the GET stays in FBuffer, but RequestPending never
            # looks there, so it is served only together with B2's fix.
            row.expect = expect([])
            row.needs = "keep-surplus-bytes+buffer-aware-pending"
            row.note = "keeps the GET in FBuffer; it is served only with buffer-aware-pending"
        out.append(row)
    out.append(Row("keep-surplus-bytes+buffer-aware-pending",
                   "keep-surplus-bytes+buffer-aware-pending",
                   expect=expect(["B2", "B5"]), target=["B2", "B5"],
                   note="the pair fixes B5"))
    out.append(Row("all", "all", expect=expect(DEFECTS), target=list(DEFECTS)))
    out.append(Row("stock --on-allow-connect nodelay", "stock",
                   ["--on-allow-connect", "nodelay"], expect=expect([]),
                   note="the seed's first mitigation: dead hook, the stall stays"))
    out.append(Row("stock --socket-handler nodelay", "stock",
                   ["--socket-handler", "nodelay"], expect=expect(["B3"]),
                   target=["B3"], note="TCP_NODELAY in isolation, keep-alive unchanged"))
    out.append(Row("stock --request-nodelay", "stock", ["--request-nodelay"],
                   expect=expect(["B3"]), target=["B3"],
                   note="Horse's DoGetModule mitigation"))
    out.append(Row("forward-allow-connect --on-allow-connect nodelay",
                   "forward-allow-connect", ["--on-allow-connect", "nodelay"],
                   expect=expect(["B1", "B3"]), target=["B1", "B3"],
                   note="the forwarded hook makes the TCP_NODELAY mitigation work"))
    out += fpc_rows()
    return out


def fpc_rows() -> list[Row]:
    """The real TFPHttpServer, built by `make fpc` (Debian's 3.2.2, or trunk
    with FPC=...).  Expected verdicts are what 3.2.2 was measured to do
    (repro/fpc/FINDINGS-3.2.2.md): OnAllowConnect works; no keep-alive at all
    (one request per connection, closed without Connection: close), so B3
    and the pool mode (B6) do not apply; a POST with a pipelined GET loses
    both (the body read overruns its buffer)."""
    out = []
    for server in sorted(kit.BUILD.glob("fpc-*/fpserver")):
        version = server.parent.name[len("fpc-"):]
        exp = {"B1": F, "B2": R, "B3": "n/a", "B4": R, "B5": R, "B6": "n/a"}
        note = "real TFPHttpServer"
        if not version.startswith("3.2."):
            # Trunk: the clone's model; expect what stock shows.
            exp = expect([])
            note = "real TFPHttpServer (trunk): expected to match the clone's stock row"
        out.append(Row(f"real FPC {version}", f"fpc-{version}", expect=exp,
                       note=note, path=server))
    return out


def syscall_expectations(row: Row) -> dict[str, list[int]]:
    """What strace must show in the B3 run (5 requests on one connection):
    sendto calls per response, and setsockopt(TCP_NODELAY) per connection."""
    fixes = set(kit.FIXES) if row.variant == "all" else set(row.variant.split("+"))
    sends = [1] if "coalesce-writes" in fixes else [2]
    nodelay = [0]
    if "--socket-handler" in row.flags:
        nodelay = [1]
    elif "--request-nodelay" in row.flags:
        nodelay = [5]   # one per request
    elif "--on-allow-connect" in row.flags and "forward-allow-connect" in fixes:
        nodelay = [1]
    return {"sendto/resp": sends, "nodelay/conn": nodelay}


def criteria(row: Row, got: dict, stock: dict | None,
             by_name: dict[str, dict]) -> tuple[bool, str]:
    """Fixes its targets (alone, or with the row it needs), and regresses
    nothing that stock had right."""
    if row.real:
        return True, "version row (measured, not a fix)"
    missed = [d for d in row.target if got[d].state != F]
    if missed and row.needs and row.needs in by_name:
        pair = by_name[row.needs]
        if all(pair[d].state == F for d in missed):
            return True, (f"fixes {','.join(missed)} only with the other patch "
                          f"(row '{row.needs}')")
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


def b3_columns(v: kit.Verdict) -> tuple[str, str, str]:
    d = v.data
    sends = ",".join(map(str, d.get("sends_per_response", []))) or "-"
    nodelay = ",".join(map(str, d.get("tcp_nodelay_per_connection", []))) or "-"
    ratio = f"{d['ratio_p50']:.1f}x" if d.get("ratio_p50") is not None else "-"
    return sends, nodelay, ratio


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--rows", help="comma-separated row names (default: all)")
    ap.add_argument("--out", default=str(kit.TOP / "results" / "latest"))
    ap.add_argument("--no-strace", action="store_true")
    ap.add_argument("--no-capture", action="store_true")
    args = ap.parse_args()

    use_strace = kit.have_strace() and not args.no_strace
    if not use_strace:
        print("note: strace evidence skipped: "
              + ("--no-strace given" if args.no_strace else "strace is not installed"))
    no_capture = "--no-capture given" if args.no_capture else kit.can_capture()
    if no_capture:
        print(f"note: wire captures skipped: {no_capture}")
    all_rows = rows()
    if args.rows:
        wanted = args.rows.split(",")
        unknown = [w for w in wanted if w not in {r.name for r in all_rows}]
        if unknown:
            print("unknown rows: " + ", ".join(unknown), file=sys.stderr)
            return 2
        all_rows = [r for r in all_rows if r.name in wanted]
    missing = sorted({str(r.binary) for r in all_rows if not r.binary.exists() and not r.real})
    if missing:
        subprocess.run(["make", "-C", str(kit.TOP), "--no-print-directory",
                        *[os.path.relpath(m, kit.TOP) for m in missing]], check=True)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    measured: dict[str, dict] = {}
    for row in all_rows:
        rowdir = out / row.name.replace(" ", "_")
        print(f"measuring {row.name} ...", flush=True)
        got = kit.measure_row(row, rowdir, use_strace)
        if not no_capture and not row.real:
            got["wire-lo"] = kit.measure_capture(row, rowdir, veth=False)
            got["wire-veth"] = kit.measure_capture(row, rowdir, veth=True)
        measured[row.name] = got

    stock = measured.get("stock")
    results, failures = [], 0
    wire = [] if no_capture else ["wire-lo", "wire-veth"]
    print()
    hdr = (f"{'row':<49} " + " ".join(f"{d:<5}" for d in DEFECTS)
           + " " + " ".join(f"{w:<9}" for w in wire)
           + f" {'send/rsp':<8} {'NODELAY':<7} {'reuse/off':<9} criteria")
    print(hdr)
    print("-" * len(hdr))
    for row in all_rows:
        got = measured[row.name]
        ok, why = criteria(row, got, stock, measured)
        # Wire verdicts must agree with the B3 verdict of the same row.
        exp = dict(row.expect)
        for w in wire:
            if w in got:
                exp[w] = row.expect["B3"]
        mism = [k for k in exp if got[k].state != exp[k]]
        b3 = got["B3"].data
        if "sends_per_response" in b3:
            for k, want in syscall_expectations(row).items():
                have = b3["sends_per_response"] if k == "sendto/resp" \
                    else b3["tcp_nodelay_per_connection"]
                if have != want:
                    mism.append(k)
                    got[k] = kit.Verdict(str(have), f"strace shows {have}, expected {want}")
                    exp[k] = str(want)
        if mism or not ok:
            failures += 1
        sends, nodelay, ratio = b3_columns(got["B3"])
        line = (f"{row.name:<49} " + " ".join(f"{short(got[d]):<5}" for d in DEFECTS)
                + " " + " ".join(f"{short(got[w]) if w in got else '-':<9}" for w in wire)
                + f" {sends:<8} {nodelay:<7} {ratio:<9} {'meets' if ok else 'FAILS'}: {why}")
        if mism:
            line += "  UNEXPECTED: " + ", ".join(
                f"{k} {got[k].state} (expected {exp[k]})" for k in mism)
        print(line)
        results.append({"row": row.name, "variant": row.variant, "real": row.real,
                        "binary": str(row.binary.relative_to(kit.TOP)),
                        "flags": row.flags, "note": row.note, "target": row.target,
                        "criteria_met": ok, "criteria": why, "expected": exp,
                        "verdicts": {k: {"state": v.state, "figure": v.figure, "data": v.data}
                                     for k, v in got.items()},
                        "as_expected": not mism})
    print("\nREPRO = defect reproduced, fixed = not reproduced, ?? = inconclusive; "
          "send/rsp = sendto per response (strace); NODELAY = setsockopt(TCP_NODELAY) "
          "per connection; reuse/off = median of requests 2..30 on one socket over the "
          "keep-alive-off median, same run")

    print()
    print("Figures behind each verdict:")
    for r in results:
        print(f"\n[{r['row']}]" + (f"  ({r['note']})" if r["note"] else ""))
        for k, v in r["verdicts"].items():
            print(f"  {k:<9} {v['state']:<12} {v['figure']}")
        b3 = r["verdicts"]["B3"]["data"]
        if b3.get("sends_per_response") is not None:
            print(f"     sendto/response {b3['sends_per_response']}, TCP_NODELAY "
                  f"per connection {b3.get('tcp_nodelay_per_connection')}, "
                  f"select timeouts (ms) {b3.get('select_timeouts_ms')}")
        if b3.get("idle_gap_ratio") is not None:
            print(f"     controls: request 1 {b3['first_us']:.0f} us; 300 ms idle gap "
                  f"{b3['idle_gap_ratio']:.1f}x the keep-alive-off median "
                  f"({b3['fresh_p50_us']:.0f} us); one connection: local port "
                  f"{b3['local_ports']}, server conn ids {b3['server_conn_ids']}")

    doc = {"environment": environment(), "strace": use_strace,
           "capture": None if no_capture else ["lo", "veth"],
           "capture_skipped": no_capture,
           "b3_thresholds": {"stall_ratio": kit.B3_STALL_RATIO,
                             "clean_ratio": kit.B3_CLEAN_RATIO},
           "rows": results}
    (out / "matrix.json").write_text(json.dumps(doc, indent=1))
    print(f"\n{len(results) - failures} rows as expected, {failures} not; "
          f"evidence in {os.path.relpath(out, Path.cwd())}/")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
