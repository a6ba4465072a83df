#!/usr/bin/env python3
"""dripclient.py - B17's client: a request head dripped below the per-read
time-out, and the two hazards of its fix, at once on one server.

Run by measure_b17 (repro/defects/b17_head_read_time.py) as a process of
its own, so that its gaps are not stretched by the threads of the matrix
beside it (one Python process, one GIL).  Three connections at once:
  drip   the request head HEAD, PIECE bytes at a time, each after GAP ms of
         waiting for the server (select: an answer or a close ends the drip);
  body   a POST's head whole, then its BODY dripped the same way (the
         content keeps the per-read rule: it must be answered and echoed);
  kept   (--kept) a GET, IDLE ms of silence on the kept connection (a close
         ends it), then a whole GET, which must be answered.
Prints one JSON object: what was sent of each, the widest gap the client
itself made between two pieces, the statuses, how each read ended.  A
deadline here only bounds a wait; the kit decides.

Usage: dripclient.py HOST PORT --gap-ms MS [--kept --idle-ms MS]
"""
from __future__ import annotations

import argparse
import json
import select
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import httpwire  # noqa: E402

PIECE = 3
HEAD = b"GET /ping HTTP/1.1\r\nHost: kit\r\nX-Drip: " + b"d" * 23 + b"\r\n\r\n"   # 66 bytes
BODY = b"b" * 66
POST = f"POST /echo HTTP/1.1\r\nHost: kit\r\nContent-Length: {len(BODY)}\r\n\r\n".encode()
GET = b"GET /ping HTTP/1.1\r\nHost: kit\r\n\r\n"
READ_LIMIT_S = 10.0


def drip(host: str, port: int, first: bytes, pieces: bytes, gap_s: float) -> dict:
    with socket.create_connection((host, port), timeout=10) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sent, widest, early = 0, 0.0, False
        t0 = time.monotonic()
        try:
            if first:
                s.sendall(first)
            last = time.monotonic()
            for i in range(0, len(pieces), PIECE):
                r, _, _ = select.select([s], [], [], gap_s)
                if r:
                    early = True
                    break
                now = time.monotonic()
                widest = max(widest, now - last)
                last = now
                s.sendall(pieces[i:i + PIECE])
                sent += len(pieces[i:i + PIECE])
        except OSError:
            early = True   # reset while sending: what came before it is read
        buf, end = httpwire.read_responses_end(s, 1, READ_LIMIT_S)
        ms = round((time.monotonic() - t0) * 1000)
    resps = httpwire.parse_responses(buf)
    return {"sent": sent, "of": len(pieces), "stopped_early": early,
            "widest_gap_ms": round(widest * 1000), "ms": ms,
            "statuses": [r["status"][:3] for r in resps], "end": end,
            "echoed": bool(resps) and resps[0]["body"] == pieces}


def kept(host: str, port: int, idle_s: float) -> dict:
    with socket.create_connection((host, port), timeout=10) as s:
        s.sendall(GET)
        buf, _ = httpwire.read_responses_end(s, 1, READ_LIMIT_S)
        first = [r["status"][:3] for r in httpwire.parse_responses(buf)]
        out = {"first": first, "second": [], "closed_while_idle": True}
        r, _, _ = select.select([s], [], [], idle_s)
        if r:
            return out
        try:
            s.sendall(GET)
        except OSError:
            return out
        buf, _ = httpwire.read_responses_end(s, 1, READ_LIMIT_S)
        out.update(second=[r["status"][:3] for r in httpwire.parse_responses(buf)],
                   closed_while_idle=False)
        return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    ap.add_argument("--gap-ms", type=int, required=True)
    ap.add_argument("--kept", action="store_true")
    ap.add_argument("--idle-ms", type=int, default=0)
    a = ap.parse_args()
    gap = a.gap_ms / 1000
    with ThreadPoolExecutor(3) as ex:
        d = ex.submit(drip, a.host, a.port, b"", HEAD, gap)
        b = ex.submit(drip, a.host, a.port, POST, BODY, gap)
        k = ex.submit(kept, a.host, a.port, a.idle_ms / 1000) if a.kept else None
        out = {"piece": PIECE, "gap_ms": a.gap_ms, "drip": d.result(), "body": b.result(),
               "kept": k.result() if k else None}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
