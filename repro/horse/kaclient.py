#!/usr/bin/env python3
"""kaclient.py - does a Horse server hold response bodies on a kept-alive
connection?  The client half of repro/horse/check.sh, standard library only
(it runs on Horse's CI runners, Linux and Windows, as well as here).

What it does: N sequential GET requests on ONE socket (reuse proven: one
connect, the same local port throughout, every response read whole, none
announcing a close), then a control of 5 more on the same socket each after
a 300 ms idle gap (the client's TCP stack is back in quick-ACK mode then).
For every response it records the time to its first byte and the time from
its first byte to its last ("hold").

The stall of issue #562 is structural: fphttpserver sends the header block
and the body with two send()s, Nagle holds the second until the client's
delayed ACK of the first, so the body arrives one delayed-ACK period after
the headers.  The verdict is a same-request ratio, never a millisecond bound:
the median over requests 2..N of hold / time-to-first-byte.  A held body
makes it tens to hundreds (40 ms on Linux, 200 ms on Windows, against well
under a millisecond to the first byte; 3-4 under Wine, whose own calls
delay the first byte); a response sent whole, or in two back-to-back
segments, makes it about 1 or less.  That ratio falls when the first byte
is slow: under Wine on a loaded machine it took 111 ms, and a 48 ms hold
read 0.5, "clean" (c101).  So a second same-run ratio is asked too, whose
terms the server's speed does not move: the median hold of requests
2..N over the median hold of the idle-gap controls.  After an idle gap
the client ACKs at once, so the kernel sends a held body as soon as that
ACK arrives; a held body waits for a delayed ACK on every request (83-485
times the controls under Wine; a clean server 0.5-1.7).  Medians on both
sides: a client that reads late finds the whole response at once, a hold
of 0 (one of 19 held requests in c102), and one control slowed by the
machine (2.3 and 3.4 ms against a median of 0.4 in c103 and c104) must not
set the scale.  Where most controls came whole (a median hold of 0, as
on Linux), they measured no noise to compare against, and the second ratio
says nothing: a clean server's requests read in two parts 40 us apart
were 40 times a floor of 1 us, "stalled" (c105).  There the first ratio
decides alone, as it did before the second: a held body would read clean
only behind a first byte slower than a delayed ACK, 40 ms, where Linux's
runs here took 0.53 ms at most (c101-c105).  Stalled if either ratio
says so; clean only if each that says something does; between the bounds
the run says nothing, and the check fails (it must prove the absence).

usage: kaclient.py HOST PORT [-n N] [--path /ping] [--json FILE]
       kaclient.py --wait HOST PORT SECONDS   (poll until it accepts)
exit: 0 clean, 1 stalled / inconclusive / reuse not proven, 2 usage
"""
from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import time

# Bounds on the median hold / first-byte ratio.  A server slow to its first
# byte (Windows binaries under Wine: 10-15 ms) brings a 40 ms delayed-ACK
# hold down to 3-4, so the stall bound is twice the clean one, not more.
STALL, CLEAN = 2.0, 1.0
# Bounds on the median hold of requests 2..N over the median hold of the
# gap controls: a held body measured 83-485 times the controls, a clean
# server 0.5-1.7 (its two sends as close on every request: noise around 1,
# and the clean bound leaves room).
GAP_STALL, GAP_CLEAN = 20.0, 5.0
GAPS, GAP_S = 5, 0.3              # the idle-gap control
DEADLINE_S = 5.0                  # how long we wait for one response (a deadline, not a verdict)


def read_response(s: socket.socket, t_sent: float) -> dict:
    """One HTTP/1.1 response with a Content-Length body."""
    buf, first, head = b"", None, None
    s.settimeout(DEADLINE_S)
    while True:
        chunk = s.recv(65536)
        now = time.perf_counter()
        if not chunk:
            return {"error": "eof"}
        if first is None:
            first = now
        buf += chunk
        if head is None and b"\r\n\r\n" in buf:
            head, _, rest = buf.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            fields = {k.strip().lower(): v.strip() for k, _, v in
                      (line.partition(":") for line in lines[1:])}
            length = int(fields.get("content-length", "0"))
            buf = rest
        if head is not None and len(buf) >= length:
            return {"status": lines[0], "connection": fields.get("connection"),
                    "ttfb_us": (first - t_sent) * 1e6, "hold_us": (now - first) * 1e6}


def run(host: str, port: int, n: int, path: str) -> dict:
    req = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
    s = socket.create_connection((host, port), timeout=DEADLINE_S)
    local = {s.getsockname()[1]}
    out = {"requests": [], "gap": []}
    try:
        for i in range(n + GAPS):
            if i >= n:
                time.sleep(GAP_S)          # the control's stimulus, not a synchronisation
            t = time.perf_counter()
            s.sendall(req)
            r = read_response(s, t)
            local.add(s.getsockname()[1])
            (out["gap"] if i >= n else out["requests"]).append(r)
            if "error" in r:
                break
    except OSError as e:
        out["error"] = f"{type(e).__name__}: {e}"
    finally:
        s.close()
    out["local_ports"] = sorted(local)
    return out


def judge(res: dict, n: int) -> tuple[str, str]:
    reqs = res["requests"]
    ok = [r for r in reqs if "error" not in r]
    if res.get("error") or len(ok) != n or len(res["local_ports"]) != 1:
        return "not-reused", (f"{len(ok)} of {n} answered on one socket "
                              f"(local ports {res['local_ports']}; {res.get('error') or 'eof'})")
    if any((r["connection"] or "").lower() == "close" for r in ok):
        return "not-reused", "the server announced Connection: close: no kept-alive connection"
    rest = ok[1:]
    ratio = statistics.median(r["hold_us"] / max(r["ttfb_us"], 1.0) for r in rest)
    hold = statistics.median(r["hold_us"] for r in rest)
    ttfb = statistics.median(r["ttfb_us"] for r in rest)
    gap = [r["hold_us"] for r in res["gap"] if "error" not in r]
    gap_hold = statistics.median(gap) if gap else 0.0
    # No control answered, or most came in one read (hold 0): no scale to
    # weigh the holds against, and the second ratio says nothing.
    vs_gap = hold / gap_hold if gap_hold > 0 else None
    fig = (f"{n} requests on one socket (local port {res['local_ports'][0]}); requests 2..{n}: "
           f"body {hold / 1000:.2f} ms after the first byte, first byte {ttfb / 1000:.2f} ms after "
           f"the request (median hold/first-byte {ratio:.1f}, stall >= {STALL:g}, clean <= {CLEAN:g}); "
           f"controls: request 1 hold {ok[0]['hold_us'] / 1000:.2f} ms, after 300 ms gaps "
           f"{gap_hold / 1000 if gap else float('nan'):.2f} ms (median hold / median "
           f"gap hold {'- (most came in one read)' if vs_gap is None else f'{vs_gap:.1f}'}, "
           f"stall >= {GAP_STALL:g}, "
           f"clean <= {GAP_CLEAN:g})")
    if ratio >= STALL or (vs_gap is not None and vs_gap >= GAP_STALL):
        return "stalled", fig
    if ratio <= CLEAN and (vs_gap is None or vs_gap <= GAP_CLEAN):
        return "clean", fig
    return "inconclusive", fig


def wait(host: str, port: int, seconds: float) -> int:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            socket.create_connection((host, port), timeout=1).close()
            return 0
        except OSError:
            time.sleep(0.05)               # polling for readiness
    return 1


def main() -> int:
    if sys.argv[1:2] == ["--wait"] and len(sys.argv) == 5:
        return wait(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    ap.add_argument("-n", type=int, default=20)
    ap.add_argument("--path", default="/ping")
    ap.add_argument("--json")
    a = ap.parse_args()
    res = run(a.host, a.port, a.n, a.path)
    state, fig = judge(res, a.n)
    res.update(verdict=state, figure=fig)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    print(f"{state}: {fig}")
    return 0 if state == "clean" else 1


if __name__ == "__main__":
    sys.exit(main())
