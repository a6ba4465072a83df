"""B11's measure (DESIGN section 3).

The defect: a request's framing. Its measure (its verdict, its figures),
found by name through the registry, repro/defects/__init__.py: MEASURES, its
columns. What every measure shares (servers, rows, verdicts, the probe) is
repro/harness/kit.py.
"""
from __future__ import annotations

import socket
from pathlib import Path

import httpwire  # noqa: E402
from kit import _start_first, HORSE, Row, SLOW, Verdict  # noqa: E402


# B11: a request whose framing is ambiguous is dispatched (nothing in
# TFPHTTPConnection checks where a request ends).  Each probe is one write:
# the head of a POST whose length a proxy in front could read otherwise
# than the server (RFC 9112 6.3, 11.2), a body, and a GET hidden where the
# server's own reading puts the next request.  After the first response,
# where the connection is still open, a marker GET with "Connection:
# close" makes the server read on and then close, so every probe ends with
# the server's close (a bound on the wait only, never a verdict): on stock
# the hidden GET is answered between the two (B2 holds it in FBuffer until
# the marker makes the socket readable).  Counts decide: a probe is
# "dispatched" when its first response is not 400 or 501, "rejected" when
# it is one of them and the connection then closes with nothing more;
# reproduced when some probe is dispatched and none rejected, fixed when
# all are rejected.  A control, one POST with one Content-Length, must be
# served by both.
B11_HIDDEN = "GET /ping HTTP/1.1\r\nHost: kit\r\n\r\n"
B11_PROBES = (
    ("te-chunked", "Transfer-Encoding: chunked\r\n",
     f"{len(B11_HIDDEN):x}\r\n{B11_HIDDEN}\r\n0\r\n\r\n"),
    ("te-chunked-and-cl", "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n",
     f"{len(B11_HIDDEN):x}\r\n{B11_HIDDEN}\r\n0\r\n\r\n"),
    ("cl-duplicate-differ", f"Content-Length: {len(B11_HIDDEN)}\r\nContent-Length: 0\r\n", B11_HIDDEN),
    ("cl-space-before-colon", f"Content-Length : {len(B11_HIDDEN)}\r\n", B11_HIDDEN),
    ("cl-obs-fold", f"X-A: a\r\n Content-Length: {len(B11_HIDDEN)}\r\n", B11_HIDDEN),
)
B11_MARKER = b"GET /ping HTTP/1.1\r\nHost: kit\r\nConnection: close\r\n\r\n"
B11_REJECT = ("400", "501")


def b11_probe(address: str, port: int, head_fields: str, body: str) -> dict:
    """One probe: the statuses of every response until the server closed
    (or the bound), whether the marker was sent, how the connection ended."""
    req = (f"POST /echo HTTP/1.1\r\nHost: kit\r\n{head_fields}\r\n{body}").encode()
    marker = False
    with socket.create_connection((address, port), timeout=10) as s:
        s.sendall(req)
        buf, end = httpwire.read_responses_end(s, 1, 5.0 * SLOW)
        first = httpwire.parse_responses(buf)
        if end == "enough" and first[0]["status"][:3] not in B11_REJECT:
            try:
                s.sendall(B11_MARKER)
                marker = True
            except OSError:
                pass
        if end == "enough":
            rest, end, _ = httpwire.read_until_close(s, 5.0 * SLOW)
            buf += rest
    statuses = [r["status"][:3] for r in httpwire.parse_responses(buf)]
    return {"statuses": statuses, "marker": marker, "end": end}


def measure_b11(row: Row, outdir: Path) -> Verdict:
    """Is a request whose end is in doubt dispatched, or rejected with 400
    (501 for chunked) and a close?  Counts of probes decide.  Each probe
    (and the control) on a fresh server: what one probe leaves behind must
    not decide the next (FPC 3.2.2's body overrun stops its whole server,
    repro/fpc/FINDINGS-3.2.2.md section 8)."""
    def one(tag: str, head: str, body: str) -> tuple[dict, list[str]]:
        srv, flags = _start_first(row, outdir, f"b11-{tag}", (HORSE + row.flags, row.flags))
        try:
            return b11_probe(srv.address, srv.port, head, body), flags
        finally:
            srv.stop()

    probes = {}
    for name, head, body in B11_PROBES:
        probes[name], flags = one(name, head, body)
    control, _ = one("control", "Content-Length: 5\r\n", "hello")
    n = len(B11_PROBES)
    dispatched = [k for k, p in probes.items() if p["statuses"] and p["statuses"][0] not in B11_REJECT]
    rejected = [k for k, p in probes.items() if len(p["statuses"]) == 1
                and p["statuses"][0] in B11_REJECT and p["end"] in ("EOF", "ECONNRESET")]
    # Responses beyond the probe's own and the marker's: a hidden request answered.
    hidden = [k for k, p in probes.items() if len(p["statuses"]) > 1 + p["marker"]]
    served = bool(control["statuses"]) and control["statuses"][0] not in B11_REJECT
    data = {"flags": flags, "probes": probes, "control": control, "dispatched": dispatched,
            "rejected": rejected, "hidden_answered": hidden}
    fig = (f"of {n} ambiguous requests: {len(dispatched)} dispatched, {len(hidden)} with the "
           f"hidden GET answered as a request of its own, {len(rejected)} rejected (400/501, then "
           f"closed); statuses " + "; ".join(f"{k} {','.join(p['statuses']) or '-'}"
                                             for k, p in probes.items())
           + f"; control (one Content-Length) {','.join(control['statuses']) or '-'}")
    if not served:
        return Verdict("inconclusive", fig, data)
    # One ambiguous request dispatched is the defect; a probe with no
    # answer at all (FPC 3.2.2's te-chunked-and-cl: its body overrun) is
    # neither, and a mix of dispatched and rejected is not decided.
    if dispatched and not rejected:
        return Verdict("reproduced", fig, data)
    if len(rejected) == n:
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


MEASURES = {"B11": lambda r, o, st: measure_b11(r, o)}
