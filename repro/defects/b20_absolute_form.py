"""B20's measure (DESIGN section 3).

The defect: a request target in absolute-form misses every route. Its
measure (its verdict, its figures), found by name through the registry,
repro/defects/__init__.py: MEASURES, its columns. What every measure shares
(servers, rows, verdicts, the probe) is repro/harness/kit.py.
"""
from __future__ import annotations

import socket
from pathlib import Path

import httpwire  # noqa: E402
from kit import _start_first, HORSE, Row, send_then_read_to_close, Verdict  # noqa: E402


# B20: TFPHTTPConnection.ParseStartLine takes the request-target as it
# comes: an absolute-form target (RFC 9112 3.2.2: "A server MUST accept the
# absolute-form in requests") is cut at '?' and gets a '/' in front, so
# `GET http://h:p/ping` reaches the application with PathInfo
# `/http://h:p/ping`, a path no route has (404).  Probes, each on a
# connection of its own (Connection: close), read until the server closes
# (a bound on the wait only, never a verdict): the absolute-form GET of
# /ping, and of /ping?x=1 (the query is cut off the path as in origin-form);
# their controls in the same run: the origin-form GET /ping and /ping?x=1.
# The statuses and body lengths of the same run decide, over the pairs
# whose control is answered 200 (the /ping pair must be; a tree of make
# bisect whose PathInfo keeps the query routes /ping?x=1 to 404, so that
# pair says nothing there): reproduced when each judged absolute-form
# probe's answer is not its control's (stock: 404, "not found"), fixed
# when each is answered exactly as its control (status and body length).
B20_PATHS = ("/ping", "/ping?x=1")


def b20_request(target: str, host: str) -> bytes:
    return f"GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()


def b20_probe(address: str, port: int, target: str) -> dict:
    """One GET with this request-target on a new connection, read until the
    server closes: its answer (status, body length) and how it ended."""
    with socket.create_connection((address, port), timeout=10) as s:
        buf, end = send_then_read_to_close(s, b20_request(target, f"{address}:{port}"))
    resps = httpwire.parse_responses(buf)
    out = {"target": target, "responses": len(resps), "end": end, "bytes": len(buf)}
    if len(resps) == 1:
        out.update(status=resps[0]["status"][:3], body=len(resps[0]["body"]))
    return out


def _b20_said(p: dict) -> str:
    if p["responses"] != 1:
        return f"{p['responses']} responses, {p['bytes']} B, {p['end']}"
    return f"{p['status']}/{p['body']}B"


def measure_b20(row: Row, outdir: Path) -> Verdict:
    """Is an absolute-form request-target routed as its path?  The answers
    to the absolute-form GETs against the origin-form ones of the same run
    decide."""
    srv, flags = _start_first(row, outdir, "b20", (HORSE + row.flags, row.flags))
    try:
        base = f"http://{srv.address}:{srv.port}"
        got = {path: (b20_probe(srv.address, srv.port, path),
                      b20_probe(srv.address, srv.port, base + path)) for path in B20_PATHS}
    finally:
        srv.stop()
    fig = "; ".join(f"GET {path} {_b20_said(ctl)}, GET http://host:port{path} {_b20_said(ab)}"
                    for path, (ctl, ab) in got.items())
    data = {"flags": flags, "probes": {path: {"origin-form": ctl, "absolute-form": ab}
                                       for path, (ctl, ab) in got.items()}}
    pairs = [(ctl, ab) for ctl, ab in got.values()
             if ctl["responses"] == 1 and ctl["status"] == "200"]
    data["judged"] = [ctl["target"] for ctl, _ in pairs]
    if B20_PATHS[0] not in data["judged"] or any(ab["responses"] != 1 for _, ab in pairs):
        return Verdict("inconclusive", fig, data)
    same = [(ab["status"], ab["body"]) == (ctl["status"], ctl["body"]) for ctl, ab in pairs]
    if not any(same):
        return Verdict("reproduced", fig, data)
    if all(same):
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


MEASURES = {"B20": lambda r, o, st: measure_b20(r, o)}
