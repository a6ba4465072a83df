"""B13's measure (DESIGN section 3).

The defect: `DoHandleRequest` compares the whole `Connection` field. Its
measure (its verdict, its figures), found by name through the registry,
repro/defects/__init__.py: MEASURES, its columns. What every measure shares
(servers, rows, verdicts, the probe) is repro/harness/kit.py.
"""
from __future__ import annotations

import socket
from dataclasses import field
from pathlib import Path

import httpwire  # noqa: E402
from kit import _start_first, HORSE, Row, SLOW, Verdict  # noqa: E402


# B13: DoHandleRequest decides keep-alive with whole-string comparisons:
# FKeepAlive from HttpVersion='1.1', then SameText of the whole Connection
# field with 'close' or 'keep-alive'.  Each probe is a GET on a connection
# of its own; after its response a second GET (with Connection: close) is
# sent on the same connection: answered means the connection persisted, an
# EOF or RST that it was closed (a server that decided to close never
# answers it).  Counts decide: reproduced when every probe persisted where
# RFC 9112 9.3 / 9.6 says close and closed where it says persist, fixed
# when every probe does what the RFC says.  Two controls (HTTP/1.1 without
# Connection persists; "Connection: close" closes) must hold on both; a
# server without keep-alive (FPC 3.2.2, trees before KeepConnections) has
# no persistence to decide: n/a.
B13_PROBES = (   # name, version, Connection value (None: no field), the RFC's answer
    ("list-keep-alive-close", "1.1", "keep-alive, close", "closed"),
    ("list-close-first", "1.1", "close, x-kit", "closed"),
    ("http-1.2", "1.2", None, "persisted"),
)
B13_CONTROLS = (
    ("control-1.1", "1.1", None, "persisted"),
    ("control-close", "1.1", "close", "closed"),
)


def b13_probe(address: str, port: int, version: str, connection: str | None) -> dict:
    field = f"Connection: {connection}\r\n" if connection is not None else ""
    first = f"GET /ping HTTP/{version}\r\nHost: kit\r\n{field}\r\n".encode()
    second = b"GET /ping HTTP/1.1\r\nHost: kit\r\nConnection: close\r\n\r\n"
    with socket.create_connection((address, port), timeout=10) as s:
        s.sendall(first)
        buf, end = httpwire.read_responses_end(s, 1, 5.0 * SLOW)
        statuses = [r["status"][:3] for r in httpwire.parse_responses(buf)]
        if end != "enough":
            return {"statuses": statuses, "then": "no response", "end": end}
        try:
            s.sendall(second)
        except OSError:
            return {"statuses": statuses, "then": "closed", "end": "send failed"}
        rest, end, _ = httpwire.read_until_close(s, 5.0 * SLOW)
    again = httpwire.parse_responses(rest)
    return {"statuses": statuses + [r["status"][:3] for r in again],
            "then": "persisted" if again else "closed", "end": end}


def measure_b13(row: Row, outdir: Path) -> Verdict:
    """Is keep-alive decided on the Connection options and the version's
    number, or on whole strings?  Counts of probes decide."""
    srv, flags = _start_first(row, outdir, "b13", (HORSE + row.flags, row.flags))
    try:
        got = {name: b13_probe(srv.address, srv.port, v, c)
               for name, v, c, _ in B13_PROBES + B13_CONTROLS}
    finally:
        srv.stop()
    rfc = {name: want for name, _, _, want in B13_PROBES + B13_CONTROLS}
    fig = "; ".join(f"{n} {p['then']} (RFC: {rfc[n]})" for n, p in got.items())
    data = {"flags": flags, "probes": got}
    if got["control-1.1"]["then"] == "closed" and got["control-close"]["then"] == "closed":
        return Verdict("n/a", "no keep-alive: every response closes the connection; " + fig, data)
    if any(got[n]["then"] != rfc[n] for n, *_ in B13_CONTROLS):
        return Verdict("inconclusive", fig, data)
    right = [n for n, *_ in B13_PROBES if got[n]["then"] == rfc[n]]
    if not right:
        return Verdict("reproduced", fig, data)
    if len(right) == len(B13_PROBES):
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


MEASURES = {"B13": lambda r, o, st: measure_b13(r, o)}
