"""B18's measure (DESIGN section 3).

The defect: an empty line before a request line ends the connection. Its
measure (its verdict, its figures), found by name through the registry,
repro/defects/__init__.py: MEASURES, its columns. What every measure shares
(servers, rows, verdicts, the probe) is repro/harness/kit.py.
"""
from __future__ import annotations

import socket
from pathlib import Path

import httpwire  # noqa: E402
from kit import _start_first, HORSE, Row, send_then_read_to_close, SLOW, Verdict  # noqa: E402


# B18: TFPHTTPConnection.ReadRequestHeaders takes an empty first line for
# "no request": it returns Nil, DoHandleRequest turns keep-alive off and
# sets FEmptyDetected, and the connection is closed without an answer,
# where RFC 9112 2.2 says a server SHOULD ignore at least one empty line
# (CRLF) before the request line.  Three probes, each on a connection of
# its own, each read until the server closes (a bound on the wait only,
# never a verdict): a CRLF and a GET (Connection: close) in one write as
# the connection's first bytes; 100 CRLFs and the GET (hostile
# start-crlf-100); and on a kept connection a POST /echo, its answer read,
# then a CRLF and the GET in one write (a client that ends a body with
# CRLF, RFC 2616 4.1).  The POST is answered first, so nothing of B2 or B5
# (bytes left in FBuffer) is involved: the CRLF is the first byte the
# server reads for the next request.  Where the POST's answer ends the
# connection (no keep-alive: FPC 3.2.2, trees before KeepConnections) the
# kept probe does not apply (the control's GET after the POST says so).
# Controls, in the same run: the GET alone, and the POST then the GET with
# no CRLF on one connection.  Counts
# decide: reproduced when every applicable probe's GET went unanswered
# (the close after zero responses), fixed when each got the control's
# answer (200; a tree of make bisect may answer /ping 404), then the close.
B18_GET = b"GET /ping HTTP/1.1\r\nHost: kit\r\nConnection: close\r\n\r\n"
B18_POST = b"POST /echo HTTP/1.1\r\nHost: kit\r\nContent-Length: 5\r\n\r\nhello"
B18_PROBES = (   # name, what goes before the GET, after a POST on the connection
    ("crlf", b"\r\n", False),
    ("crlf-100", b"\r\n" * 100, False),
    ("crlf-after-post", b"\r\n", True),
)
B18_CONTROLS = (("control", b"", False), ("control-after-post", b"", True))


def b18_probe(address: str, port: int, before: bytes, after_post: bool) -> dict:
    """before + B18_GET in one write (after a POST answered first, when
    after_post) on a new connection, read until the server closes: the
    GET's answer, if any, and how the connection ended."""
    with socket.create_connection((address, port), timeout=10) as s:
        out: dict = {}
        if after_post:
            s.sendall(B18_POST)
            buf, end = httpwire.read_responses_end(s, 1, 5.0 * SLOW)
            post = httpwire.parse_responses(buf)
            out["post"] = post[0]["status"][:3] if post else None
            if end != "enough":
                out.update(outcome="unanswered post", end=end)
                return out
            if (post[0]["connection"] or "").lower() == "close":
                out.update(outcome="not kept", end="closed after the POST")
                return out
        buf, end = send_then_read_to_close(s, before + B18_GET)
    if after_post and end == "timeout" and not buf:
        # The server kept the connection and never read again (no keep-alive
        # answer, a pool that does not re-check it: B6): nothing to judge.
        out.update(outcome="timeout", end=end)
        return out
    resps = httpwire.parse_responses(buf)
    out.update(responses=len(resps), statuses=[r["status"][:3] for r in resps], end=end,
               bytes=len(buf))
    out["outcome"] = ("timeout" if end == "timeout" else
                      "unanswered" if not buf else
                      "answered" if len(resps) == 1 else "other")
    return out


def _b18_said(p: dict) -> str:
    if p["outcome"] in ("answered", "unanswered", "other"):
        post = f"POST {p['post']}, then " if "post" in p else ""
        return f"{post}{','.join(p['statuses']) or '0 responses'}, {p['end']}"
    return f"{p['outcome']} ({p.get('post') or '-'}, {p['end']})"


def measure_b18(row: Row, outdir: Path) -> Verdict:
    """Is an empty line before the request line ignored, or taken for the
    end of the connection?  Counts of probes decide."""
    srv, flags = _start_first(row, outdir, "b18", (HORSE + row.flags, row.flags))
    try:
        got = {name: b18_probe(srv.address, srv.port, before, kept)
               for name, before, kept in B18_PROBES + B18_CONTROLS}
    finally:
        srv.stop()
    fig = "; ".join(f"{n} {_b18_said(p)}" for n, p in got.items())
    data = {"flags": flags, "probes": got}
    # The control's GET after the POST says whether the connection is kept
    # at all: closed after the POST (no keep-alive, or its Connection:
    # close), the kept probe does not apply.
    kept = got["control-after-post"]["outcome"]
    if got["control"]["outcome"] != "answered" or kept not in ("answered", "unanswered", "not kept"):
        return Verdict("inconclusive", fig, data)
    judged = [n for n, _, after_post in B18_PROBES if not after_post or kept == "answered"]
    data["judged"] = judged
    if all(got[n]["outcome"] == "unanswered" for n in judged):
        return Verdict("reproduced", fig, data)
    # Answered: as the control's GET is (its status: a tree of make bisect
    # may route /ping otherwise), then the close it asked for.
    if all(got[n]["outcome"] == "answered" and got[n]["statuses"] == got["control"]["statuses"]
           and got[n]["end"] in ("EOF", "ECONNRESET") for n in judged):
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


MEASURES = {"B18": lambda r, o, st: measure_b18(r, o)}
