"""B1's measure (DESIGN section 3).

The defect: `OnAllowConnect` is stored and never called. Its measure (its
verdict, its figures), found by name through the registry,
repro/defects/__init__.py: MEASURES, its columns. What every measure shares
(servers, rows, verdicts, the probe) is repro/harness/kit.py.
"""
from __future__ import annotations

from pathlib import Path

from kit import _server, count_lines, HORSE, probe, Row, strace_analysis, Verdict  # noqa: E402


def measure_b1(row: Row, outdir: Path, use_strace: bool) -> Verdict:
    """The user's OnAllowConnect (a TCP_NODELAY hook) per accepted connection."""
    # Under Wine a traced run needs a Wine server of its own (minutes of
    # queueing in a full matrix): B1's verdict is the hook's log, and the
    # Windows build's TCP_NODELAY calls are counted in B3's trace.
    use_strace = use_strace and row.platform != "win64"
    srv = _server(row, outdir, "b1", HORSE + row.flags +
                  ["--on-allow-connect", "nodelay"], strace=use_strace)
    with srv:
        res = probe(srv, "compare", "-n", "3", out=outdir / "b1.probe.json")
    connects = res["keepalive"]["connects"] + res["fresh"]["connects"]
    calls = count_lines(srv.log, "on-allow-connect")
    data = {"connections": connects, "hook_calls": calls}
    fig = f"hook ran {calls}x for {connects} connections"
    if use_strace:
        st = strace_analysis(srv.strace_path)
        data["tcp_nodelay_setsockopt"] = st["tcp_nodelay_total"]
        data["accepts"] = st["accepts"]
        fig += f"; strace: {st['tcp_nodelay_total']} setsockopt(TCP_NODELAY) for {st['accepts']} accepts"
    if connects == 0:
        return Verdict("inconclusive", "no connection made", data)
    # The verdict is the hook's call count.  The strace count is evidence
    # beside it (other mitigations in the row may set TCP_NODELAY too).
    if calls == 0:
        return Verdict("reproduced", fig, data)
    if calls == connects and data.get("tcp_nodelay_setsockopt", calls) >= calls:
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


MEASURES = {"B1": lambda r, o, st: measure_b1(r, o, st)}
