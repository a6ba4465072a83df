"""B5's measure (DESIGN section 3).

The defect: reading a body empties `FBuffer`. Its measure (its verdict, its
figures), found by name through the registry, repro/defects/__init__.py:
MEASURES, its columns. What every measure shares (servers, rows, verdicts,
the probe) is repro/harness/kit.py.
"""
from __future__ import annotations

from pathlib import Path

from kit import _server, HORSE, probe, Row, Verdict  # noqa: E402


def measure_b5(row: Row, outdir: Path) -> Verdict:
    """POST with a body and a GET in one send()."""
    with _server(row, outdir, "b5", HORSE + row.flags) as srv:
        res = probe(srv, "post-pipeline", "--deadline-ms", "1500",
                    out=outdir / "b5.probe.json")
    n = res["responses"]
    data = {"responses": n, "echo_ok": res.get("echo_ok")}
    fig = f"{n} of 2 responses (POST echo ok: {res.get('echo_ok')})"
    if n == 2 and res.get("echo_ok"):
        return Verdict("fixed", fig, data)
    if n < 2:
        return Verdict("reproduced", fig, data)
    return Verdict("inconclusive", fig, data)


MEASURES = {"B5": lambda r, o, st: measure_b5(r, o)}
