"""B2's measure (DESIGN section 3).

The defect: the pending-request tests look at the socket only, never at
`FBuffer`. Its measure (its verdict, its figures), found by name through the
registry, repro/defects/__init__.py: MEASURES, its columns; SYMPTOMS, its
symptoms apart. What every measure shares (servers, rows, verdicts, the
probe) is repro/harness/kit.py.
"""
from __future__ import annotations

from pathlib import Path

from kit import _server, HORSE, probe, Row, Verdict  # noqa: E402


def measure_b2(row: Row, outdir: Path, extra: tuple[str, ...] = ()) -> Verdict:
    """Three GETs in one send() on a keep-alive connection (extra: flags
    after Horse's, e.g. another thread mode: B2.polled, B2.pool)."""
    with _server(row, outdir, "b2", HORSE + list(extra) + row.flags) as srv:
        res = probe(srv, "pipeline", "-k", "3", "--deadline-ms", "1500",
                    out=outdir / "b2.probe.json")
    n, k = res["responses"], res["params"].get("k", 3)
    fig = f"{n} of {k} pipelined requests answered (one send)"
    data = {"responses": n, "pipelined": k, "writes": res.get("writes")}
    if res.get("writes") != 1:
        return Verdict("inconclusive", fig + f"; {res.get('writes')} writes", data)
    if n == k:
        return Verdict("fixed", fig, data)
    if n == 1:
        return Verdict("reproduced", fig, data)
    return Verdict("inconclusive", fig, data)


MEASURES = {
    "B2": lambda r, o, st: measure_b2(r, o),
    "B2.thread": lambda r, o, st: measure_b2(r, o),
    "B2.polled": lambda r, o, st: measure_b2(r, o, ("--thread-mode", "polled")),
    # AcceptIdleTimeout 100: pool mode re-checks a connection only from the
    # accept-idle callback, which is never called with the default 0 (B6).
    "B2.pool": lambda r, o, st: measure_b2(r, o, ("--thread-mode", "pool", "--accept-idle-timeout", "100")),
}
# B2's symptoms, each with its own history (make bisect judges each): name,
# the measure (a MEASURES key), what it is.  The first is what the matrix
# column judges.
SYMPTOMS = (("thread", "B2.thread", "thread mode: TFPHTTPConnection.RequestPending asks the socket "
             "(Socket.CanRead), never FBuffer"),
            ("polled", "B2.polled", "thread mode polled: TFPPolledConnectionHandler.CheckConnection "
             "asks the socket (Socket.CanRead(0)), never FBuffer"),
            ("pool", "B2.pool", "thread mode pool: TFPPooledConnectionHandler.CheckRequest asks the "
             "socket (Socket.CanRead(0)), never FBuffer"))
