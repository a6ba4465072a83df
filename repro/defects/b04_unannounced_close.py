"""B4's measure (DESIGN section 3).

The defect: the server closes without ever sending `Connection: close`. Its
measure (its verdict, its figures), found by name through the registry,
repro/defects/__init__.py: MEASURES, its columns. What every measure shares
(servers, rows, verdicts, the probe) is repro/harness/kit.py.
"""
from __future__ import annotations

from pathlib import Path

from kit import _server, probe, Row, Verdict  # noqa: E402


def measure_b4(row: Row, outdir: Path) -> Verdict:
    """Default settings (KeepConnections off): is the close announced?"""
    with _server(row, outdir, "b4", row.flags) as srv:
        res = probe(srv, "close", "--deadline-ms", "1000",
                    out=outdir / "b4.probe.json")
        pool = probe(srv, "pool", "--connections", "2", "--rounds", "16",
                     "--max-idle-ms", "60", out=outdir / "b4-pool.probe.json")
    data = {"connection_header": res["connection_header"][0],
            "server_closed": res["server_closed"],
            "announced_close": res["announced_close"],
            "reuse_outcome": res["reuse_outcome"],
            "pool_stale_failures": pool["stale_failures"],
            "pool_rounds": pool["params"].get("rounds")}
    fig = (f"Connection: {data['connection_header']}; server closed: "
           f"{res['server_closed']}; reuse saw {res['reuse_outcome']}; pooled "
           f"client: {pool['stale_failures']} stale-socket failures in "
           f"{data['pool_rounds']} rounds")
    if res["unannounced_close"] and pool["stale_failures"] > 0:
        return Verdict("reproduced", fig, data)
    if res["server_closed"] and res["announced_close"] and pool["stale_failures"] == 0:
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


MEASURES = {"B4": lambda r, o, st: measure_b4(r, o)}
