"""B14's measure (DESIGN section 3).

The defect: `DoSendContent` writes the content whatever the request's
method. Its measure (its verdict, its figures), found by name through the
registry, repro/defects/__init__.py: MEASURES, its columns. What every
measure shares (servers, rows, verdicts, the probe) is repro/harness/kit.py.
"""
from __future__ import annotations

import socket
from pathlib import Path

import httpwire  # noqa: E402
from kit import _start_first, HORSE, Row, SLOW, Verdict  # noqa: E402


# B14: TFPHTTPConnectionResponse.DoSendContent writes Content or
# ContentStream whatever the request's method: a response to HEAD carries
# the content a GET would get (RFC 9110 9.3.2: the server MUST NOT send
# content).  On one connection a HEAD, then, once its head has arrived, a
# GET /ping (Connection: close), read until the server closes.  The HEAD
# response is read as a client reads it (its head ends it, whatever its
# Content-Length says): the bytes from the end of its head to the GET's
# status line are content it should not have sent, and the GET's response
# is read as its own only when its status line comes first (a 200, with
# the content the control's GET /ping gets).  The control, in the same
# run: the same with a GET in place of the HEAD.  The HEAD's
# target is one no server here routes (HEAD /ping is not GET /ping to the
# kit's programs: a 404, or Horse's 405), so that it and the control's
# first GET take the same route: the control's Content-Length is the one
# the HEAD's should equal (9.3.2's SHOULD, a figure), and its content the
# bytes the HEAD's stray ones are.  Counts decide: reproduced when bytes
# follow the HEAD's head and the GET's response is not read as its own,
# fixed when none follow and it is.  Without keep-alive (FPC 3.2.2, trees
# before KeepConnections: the control's GET after its first goes
# unanswered) the bytes after the HEAD's head until the close decide alone.
B14_TARGET = "/b14-no-route"
B14_NEXT = b"GET /ping HTTP/1.1\r\nHost: kit\r\nConnection: close\r\n\r\n"


def b14_probe(address: str, port: int, method: str) -> dict:
    """method B14_TARGET, then B14_NEXT once its response (HEAD: its head)
    is in: what came after the first response until the next one's status
    line, and how the next one was read."""
    first = f"{method} {B14_TARGET} HTTP/1.1\r\nHost: kit\r\n\r\n".encode()
    with socket.create_connection((address, port), timeout=10) as s:
        s.sendall(first)
        if method == "HEAD":
            buf, end = httpwire.read_head_end(s, 5.0 * SLOW)
        else:
            buf, end = httpwire.read_responses_end(s, 1, 5.0 * SLOW)
        head = httpwire.parse_head(buf)
        if head is None or end != "enough":
            return {"status": None, "end": end, "bytes": len(buf)}
        out = {"status": head["status"][:3], "content_length": head["content_length"]}
        used = head["head_len"]
        if method != "HEAD":
            resp = httpwire.parse_responses(buf)[0]
            out["content"] = resp["body"].decode("latin-1")
            used += len(resp["body"])
        try:
            s.sendall(B14_NEXT)
        except OSError:
            pass   # closed: what came before the close is read all the same
        more, out["end"], _ = httpwire.read_until_close(s, 5.0 * SLOW)
    rest = buf[used:] + more
    at = rest.find(b"HTTP/1.")
    nxt = httpwire.parse_responses(rest[at:]) if at >= 0 else []
    out["after_head"] = at if nxt else len(rest)
    out["stray"] = rest[:out["after_head"]].decode("latin-1")
    out["next"] = ("unanswered" if not nxt else
                   "read as its own" if at == 0 and nxt[0]["status"][:3] == "200"
                   else "not read as its own")
    out["next_status"] = nxt[0]["status"][:3] if nxt else None
    out["next_content"] = nxt[0]["body"].decode("latin-1") if nxt else None
    return out


def measure_b14(row: Row, outdir: Path) -> Verdict:
    """Does a response to HEAD carry content, and is the next response on
    the connection read as its own?  Byte counts decide."""
    srv, flags = _start_first(row, outdir, "b14", (HORSE + row.flags, row.flags))
    try:
        head = b14_probe(srv.address, srv.port, "HEAD")
        ctl = b14_probe(srv.address, srv.port, "GET")
    finally:
        srv.stop()
    data = {"flags": flags, "target": B14_TARGET, "head": head, "control": ctl}
    if head["status"] is None or ctl["status"] is None:
        return Verdict("inconclusive", f"no response to the HEAD ({head['end']}) or to the "
                       f"control's GET ({ctl['end']})", data)
    data["content_length_as_get"] = head["content_length"] == ctl["content_length"]
    stray = head["after_head"]
    fig = (f"HEAD {B14_TARGET}: {head['status']}, Content-Length {head['content_length']} "
           f"(a GET's: {ctl['content_length']}), then {stray} B"
           + (" (the GET's content)" if stray and head["stray"] == ctl["content"] else "")
           + f"; the GET after it: {head['next']}"
           + (f" ({head['next_status']} after the {stray} B)" if head["next"] == "not read as its own"
              else "")
           + f"; control, a GET then a GET: {ctl['status']}/{len(ctl['content'])} B, then "
           f"{ctl['after_head']} B, the second GET {ctl['next']}")
    if ctl["after_head"] != 0:
        return Verdict("inconclusive", fig, data)
    if (ctl["next"] == "unanswered" and head["next"] == "unanswered"
            and "timeout" not in (ctl["end"], head["end"])):
        # No keep-alive: every response closes; the bytes up to the close decide.
        fig = "no keep-alive (each connection closed after its first response); " + fig
        return Verdict("reproduced" if stray else "fixed", fig, data)
    if ctl["next"] != "read as its own":
        return Verdict("inconclusive", fig, data)
    if stray and head["next"] == "not read as its own":
        return Verdict("reproduced", fig, data)
    if (not stray and head["next"] == "read as its own"
            and head["next_content"] == ctl["next_content"]):
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


MEASURES = {"B14": lambda r, o, st: measure_b14(r, o)}
