"""B16's measure (DESIGN section 3).

The defect: a rejected request gets no response. Its measure (its verdict,
its figures), found by name through the registry, repro/defects/__init__.py:
MEASURES, its columns. What every measure shares (servers, rows, verdicts,
the probe) is repro/harness/kit.py.
"""
from __future__ import annotations

import socket
from pathlib import Path

import httpwire  # noqa: E402
from kit import _start_first, HORSE, Row, send_then_read_to_close, SLOW, Verdict  # noqa: E402


# B16: TFPHTTPConnection.HandleRequest's except turns keep-alive off and
# calls HandleRequestError (a log line, or OnRequestError): a request the
# reader rejects (ParseStartLine, ReadString, ReadRequestContent raise
# EHTTPServer/EHTTP with StatusCode 400, 431, 413) is never answered, and
# the client sees the close with no status (curl: "Empty reply from
# server").  Each probe is one request on a connection of its own, read
# until the server closes (a bound on the wait only, never a verdict);
# none is about framing (B11's fix answers its own rejections).  The
# request line without an HTTP version every tree of make bisect rejects
# (ParseStartLine's missing protocol); a control byte, a header line
# longer than the default MaxLineLength (8*ReadBufLen) and a body above
# MaxBodySize (--max-body-size, where the program has it; the head alone
# is sent, so that nothing the server leaves unread turns its close into
# a reset) only where the tree rejects them: a tree that serves one (a
# response with another status) leaves it out, as data.  Counts decide:
# reproduced when every rejected probe's connection closed with no
# response, fixed when each got its status and then the close; the
# control, a valid GET, must be answered on both.
B16_MAX_BODY = 1024
B16_LONG = 8 * 4096 + 1
B16_PROBES = (   # name, request, the status the rejection carries
    ("missing-protocol", b"GET /ping XTTP/1.1\r\nHost: kit\r\n\r\n", "400"),
    ("control-byte", b"G\x01T /ping HTTP/1.1\r\nHost: kit\r\n\r\n", "400"),
    ("line-too-long", b"GET /ping HTTP/1.1\r\nHost: kit\r\nX-Long: "
     + b"a" * (B16_LONG - len("X-Long: ")) + b"\r\n\r\n", "431"),
)
B16_BODY_PROBE = ("body-too-large", f"POST /echo HTTP/1.1\r\nHost: kit\r\nContent-Length: "
                  f"{4 * B16_MAX_BODY}\r\n\r\n".encode(), "413")
B16_ALWAYS = "missing-protocol"
B16_CONTROL = b"GET /ping HTTP/1.1\r\nHost: kit\r\n\r\n"


def b16_probe(address: str, port: int, req: bytes, want: str) -> dict:
    """One request: its response (if any) and how the connection ended."""
    with socket.create_connection((address, port), timeout=10) as s:
        buf, end = send_then_read_to_close(s, req)
    resps = httpwire.parse_responses(buf)
    out = {"responses": len(resps), "statuses": [r["status"][:3] for r in resps],
           "end": end, "bytes": len(buf)}
    if resps:
        out["connection"] = resps[0]["connection"]
    out["outcome"] = ("timeout" if end == "timeout" and not resps else
                      "unanswered" if not resps and not buf else
                      "answered" if (out["statuses"] == [want] and end != "timeout")
                      else "served" if resps and resps[0]["status"][:3] != want
                      else "other")
    return out


def b16_control(address: str, port: int) -> dict:
    """The valid GET: its status is all the verdict reads (answered with
    any status), so one response ends the read; the connection is kept
    alive, and a read on to the close would wait out its bound."""
    with socket.create_connection((address, port), timeout=10) as s:
        s.sendall(B16_CONTROL)
        buf, end = httpwire.read_responses_end(s, 1, 5.0 * SLOW)
    return {"statuses": [r["status"][:3] for r in httpwire.parse_responses(buf)], "end": end}


def _b16_said(p: dict, want: str) -> str:
    if p["outcome"] == "unanswered":
        return f"0 responses, {p['end']}"
    if p["outcome"] == "answered":
        return (f"{want} (Connection: {p.get('connection') or 'absent'}), then {p['end']}")
    if p["outcome"] == "served":
        return f"served {','.join(p['statuses'])} (not rejected here)"
    return f"{p['responses']} responses ({','.join(p['statuses'])}), {p['bytes']} B, {p['end']}"


def measure_b16(row: Row, outdir: Path) -> Verdict:
    """Is a request the reader rejects answered with its status?  Counts
    of probes decide."""
    body = ["--max-body-size", str(B16_MAX_BODY)]
    srv, flags = _start_first(row, outdir, "b16", (HORSE + row.flags + body, HORSE + row.flags,
                                                   row.flags + body, row.flags))
    probes = B16_PROBES + ((B16_BODY_PROBE,) if "--max-body-size" in flags else ())
    try:
        got = {name: b16_probe(srv.address, srv.port, req, want) for name, req, want in probes}
        ctl = b16_control(srv.address, srv.port)
    finally:
        srv.stop()
    want = {name: w for name, _, w in probes}
    fig = "; ".join(f"{n} {_b16_said(p, want[n])}" for n, p in got.items())
    fig += f"; control GET {','.join(ctl['statuses']) or 'unanswered'}"
    data = {"flags": flags, "probes": got, "control": ctl,
            "statuses": {n: p["statuses"] for n, p in got.items()},
            "connection_close": {n: (p.get("connection") or "").lower() == "close"
                                 for n, p in got.items() if p["responses"]}}
    judged = [n for n, p in got.items() if p["outcome"] in ("unanswered", "answered")]
    data["judged"] = judged
    if not ctl["statuses"] or B16_ALWAYS not in judged or any(
            p["outcome"] in ("timeout", "other") for p in got.values()):
        return Verdict("inconclusive", fig, data)
    if all(got[n]["outcome"] == "unanswered" for n in judged):
        return Verdict("reproduced", fig, data)
    if all(got[n]["outcome"] == "answered" and got[n]["end"] in ("EOF", "ECONNRESET")
           for n in judged):
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


MEASURES = {"B16": lambda r, o, st: measure_b16(r, o)}
