"""B17's measure (DESIGN section 3).

The defect: a request head's read time. Its measure (its verdict, its
figures), found by name through the registry, repro/defects/__init__.py:
MEASURES, its columns. What every measure shares (servers, rows, verdicts,
the probe) is repro/harness/kit.py.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kit import _start_first, HORSE, KitError, Row, SLOW, TOP, Unsupported, Verdict  # noqa: E402


# B17: TFPHTTPConnection.ReadString's FillBuffer waits
# FSocket.CanRead(RequestReadTimeout) before each fill: the time-out bounds
# one wait, not the request head, so a head that comes a few bytes at a
# time, each gap below the time-out, is read for as long as its sender
# likes (slowloris: in tmNone and tmPolled the whole server, a worker in
# tmThreadPool, every MaxLiveConnectionCount slot with 128 such clients;
# tests/hostile has those).  repro/harness/dripclient.py, a process of its
# own, opens three connections at once on one server with
# RequestReadTimeout 1000 ms: the drip (a 66-byte head, 3 bytes every
# 100 ms: 2.2 s, each gap a tenth of the time-out), read between pieces so
# that it stops at the server's answer or close; and the fix's two
# hazards, which every row must serve: a 66-byte body dripped the same way
# after a whole head (the content keeps the per-read rule), and a kept
# connection idle twice the time-out (below Horse's KeepConnectionTimeout
# of 15 s) whose next head comes whole.  Counts decide: reproduced when
# the drip's 66 bytes were all sent and it was answered (200; an old
# tree's 404 is an answer too); fixed when the
# server answered 408 or closed before the head was complete.  A gap of
# the client's own of half the time-out or more (a stalled client) leaves
# nothing decided: the measure raises and is made once more on a fresh
# server.  A tree with no RequestReadTimeout at all (FPC 3.2.2, old
# trunks) is measured with none: nothing bounds its head, the drip is
# answered.
B17_TIMEOUT_MS = 1000
B17_GAP_MS = 100
DRIPCLIENT = TOP / "repro" / "harness" / "dripclient.py"


def measure_b17(row: Row, outdir: Path) -> Verdict:
    """Is a request head dripped below the per-read time-out cut at
    RequestReadTimeout?  Bytes of the head sent before the answer or
    close decide; a slow body and an idle kept connection must be served."""
    timeout = ["--request-read-timeout", str(B17_TIMEOUT_MS)]
    bounded = True
    try:
        srv, flags = _start_first(row, outdir, "b17", (HORSE + row.flags + timeout, row.flags + timeout))
    except Unsupported as e:
        if "no RequestReadTimeout" not in str(e):
            raise   # a program that cannot set it (Horse's API): n/a
        bounded = False
        srv, flags = _start_first(row, outdir, "b17", (HORSE + row.flags,
                                                       ["--thread-mode", "thread"] + row.flags, row.flags))
    # The idle kept connection where the tree keeps connections: a tree
    # without RequestReadTimeout has no fix to break it (FPC 3.2.2 has no
    # keep-alive at all: its --horse is Threaded only).
    keepalive = bounded and ("--keep-connections" in flags or "--horse" in flags)
    argv = [sys.executable, str(DRIPCLIENT), srv.address, str(srv.port), "--gap-ms", str(B17_GAP_MS)]
    if keepalive:
        argv += ["--kept", "--idle-ms", str(2 * B17_TIMEOUT_MS)]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60 * SLOW)
    finally:
        srv.stop()
    if r.returncode != 0:
        raise KitError(f"dripclient exited {r.returncode}: {r.stderr.strip()}")
    got = json.loads(r.stdout)
    (outdir / "b17.dripclient.json").write_text(json.dumps(got, indent=1))
    d, b, k = got["drip"], got["body"], got["kept"]
    widest = max(d["widest_gap_ms"], b["widest_gap_ms"])
    if bounded and widest * 2 >= B17_TIMEOUT_MS:
        raise KitError(f"the client's own gap was {widest} ms, half the time-out or more: measured nothing")
    fig = (f"drip ({d['of']}-byte head, {got['piece']} B every {B17_GAP_MS} ms, "
           + (f"RequestReadTimeout {B17_TIMEOUT_MS} ms" if bounded else "no RequestReadTimeout in this tree")
           + f"): {','.join(d['statuses']) or 'no response'} after {d['sent']} of {d['of']} bytes, "
           f"{d['end']} at {d['ms']} ms")
    fig += (f"; slow body ({b['of']} B, {got['piece']} B every {B17_GAP_MS} ms): "
            + (",".join(b["statuses"]) or "no response") + (" echoed" if b["echoed"] else ""))
    if k is not None:
        fig += (f"; kept connection idle {2 * B17_TIMEOUT_MS} ms: next GET "
                + ("closed while idle" if k["closed_while_idle"] else ",".join(k["second"]) or "unanswered"))
    data = {"flags": flags, "bounded": bounded, "timeout_ms": B17_TIMEOUT_MS if bounded else None,
            "widest_gap_ms": widest, **got}
    # The hazards are the fix's: judged where a fix can be (a tree with the
    # time-out); an older tree's routes may answer 404, which is an answer.
    hazards_ok = not bounded or (b["statuses"] == ["200"] and b["echoed"] and (
        k is None or (k["first"] == ["200"] and k["second"] == ["200"])))
    data["hazards_ok"] = hazards_ok
    if not hazards_ok:
        return Verdict("inconclusive", fig, data)
    if d["sent"] == d["of"] and len(d["statuses"]) == 1 and d["statuses"] != ["408"]:
        return Verdict("reproduced", fig, data)
    if d["sent"] < d["of"] and d["statuses"] in ([], ["408"]) and d["end"] in ("EOF", "ECONNRESET", "enough"):
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


MEASURES = {"B17": lambda r, o, st: measure_b17(r, o)}
