"""B19's measure (DESIGN section 3).

The defect: the 503 at `MaxLiveConnectionCount` is delimited by the close.
Its measure (its verdict, its figures), found by name through the registry,
repro/defects/__init__.py: MEASURES, its columns. What every measure shares
(servers, rows, verdicts, the probe) is repro/harness/kit.py.
"""
from __future__ import annotations

import socket
from pathlib import Path

import httpwire  # noqa: E402
from kit import (_poll, _server, HORSE, Row, send_then_read_to_close, Server, SLOW,
                 Verdict)  # noqa: E402


# B19: at MaxLiveConnectionCount TFPCustomHttpServer.DoOnAllowConnect
# writes a fixed 503 (fpSend) and refuses, and the refused socket is closed
# at once.  The 503 has no Content-Length: its text ends where the
# connection ends (RFC 9112 6.3, rule 8), and the client's request, there
# by then as a rule, is never read, so the close is a reset, not a FIN: a
# client cannot tell the whole 503 from one cut short, and one that meets
# the reset before the end it waits for fails (curl: exit 56).  With
# --max-live-connection-count 1 a kept-alive connection takes the slot
# (its GET answered), then B19_PROBES connections each send a GET in one
# write at once and read until the server ends the connection (a bound on
# the wait only).  Structure decides: reproduced when no probe's 503 has a
# Content-Length, fixed when every one has the length of its text; the
# text, Retry-After and Connection: close must be there in both (the fix
# changes nothing else), and the resets are counted, as a figure (the fix
# leaves the close as it is).  What the fix may break, in the same run:
# once the slot holder has closed, a new connection is served again
# (polled: the server must see the close first).  A program without
# MaxLiveConnectionCount (FPC 3.2.2, Horse's API) refuses the flag: n/a.
B19_PROBES = 20
B19_TEXT = b"Server is temporarily overloaded. Please try again shortly."
B19_FLAGS = ["--max-live-connection-count", "1"]


def b19_probe(address: str, port: int) -> dict:
    """One connection beyond the cap: a GET at once, then everything until
    the server ends the connection."""
    with socket.create_connection((address, port), timeout=10) as s:
        buf, end = send_then_read_to_close(s, httpwire.get("/ping"))
    out = {"end": end, "bytes": len(buf), "status": None}
    head = httpwire.parse_head(buf)
    if head:
        fields = {n.lower(): v for n, v in head["headers"]}
        out.update(status=head["status"][:3], content_length=fields.get("content-length"),
                   text=buf[head["head_len"]:] == B19_TEXT, retry_after=fields.get("retry-after"),
                   connection=(fields.get("connection") or "").lower())
    return out


def _b19_served_again(srv: Server) -> str:
    """A GET on a new connection once the slot holder has closed: its
    status, polled until it is not the 503 (the server sees the close in its
    own time; 5 s bound)."""
    got = ""

    def served() -> bool:
        nonlocal got
        with socket.create_connection((srv.address, srv.port), timeout=10) as s:
            try:
                got = ",".join(r["status"][:3] for r in httpwire.exchange(s, "/ping", 5.0 * SLOW))
            except OSError:
                got = "reset"
        return got not in ("503", "reset", "")
    _poll(served, 5.0 * SLOW)
    return got or "unanswered"


def measure_b19(row: Row, outdir: Path) -> Verdict:
    """Does the 503 sent at MaxLiveConnectionCount say its length?  The
    503s' fields decide; the resets are counted."""
    srv = _server(row, outdir, "b19", HORSE + row.flags + B19_FLAGS).start()
    try:
        with socket.create_connection((srv.address, srv.port), timeout=10) as hold:
            held = ",".join(r["status"][:3] for r in httpwire.exchange(hold, "/ping", 5.0 * SLOW))
            probes = [b19_probe(srv.address, srv.port) for _ in range(B19_PROBES)] if held == "200" else []
        after = _b19_served_again(srv) if held == "200" else "not tried"
    finally:
        srv.stop()
    n503 = [p for p in probes if p["status"] == "503"]
    lengths = sorted({p["content_length"] or "none" for p in n503})
    resets = sum(p["end"] == "ECONNRESET" for p in probes)
    fig = (f"slot held by a kept-alive GET ({held or 'unanswered'}); {len(n503)} of {len(probes)} "
           f"connections beyond MaxLiveConnectionCount 1 got the 503, Content-Length "
           f"{'/'.join(lengths) or '-'}, its {len(B19_TEXT)}-byte text whole in "
           f"{sum(bool(p.get('text')) for p in n503)}; ended by a reset {resets}, by EOF "
           f"{sum(p['end'] == 'EOF' for p in probes)}; after the holder closed: GET {after}")
    data = {"held": held, "probes": probes, "after": after, "resets": resets,
            "content_lengths": lengths}
    whole = all(p.get("text") and p.get("retry_after") == "30" and p.get("connection") == "close"
                and p["end"] in ("EOF", "ECONNRESET") for p in n503)
    if held != "200" or not probes or len(n503) != len(probes) or not whole or after != "200":
        return Verdict("inconclusive", fig, data)
    if lengths == ["none"]:
        return Verdict("reproduced", fig, data)
    if lengths == [str(len(B19_TEXT))]:
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


MEASURES = {"B19": lambda r, o, st: measure_b19(r, o)}
