#!/usr/bin/python3
"""Raw-socket HTTP helper for repro/fpc/investigate.sh (stdlib only).

usage: rawhttp.py HOST PORT SCENARIO [WAIT_S]

Scenarios (each writes its requests with ONE send() where stated):
  single     one GET /ping; report headers, then whether the server closed
  reuse      GET /ping, wait 50 ms, GET /ping again on the same socket
  pipeline3  three GET /ping in one send()
  postget    POST /echo (5-byte body) + GET /ping in one send()

Prints one JSON object: responses counted (status lines), the Connection
header of each, whether and when EOF/RST arrived, and what a reuse saw.
WAIT_S (default 2) is only how long it waits for more bytes.
"""
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from httpwire import parse_responses as parse, read_until_close  # noqa: E402

PING = b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n"
POST = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"


def statuses(buf):
    """The complete responses in buf: status line and Connection header."""
    return [{"status": r["status"], "connection": r["connection"]} for r in parse(buf)]


def read_all(sock, deadline):
    """Read until EOF/RST or deadline. Returns (bytes, end, t_end_ms)."""
    return read_until_close(sock, max(0.0, deadline - time.monotonic()))


def main():
    host, port, scen = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    wait = float(sys.argv[4]) if len(sys.argv) > 4 else 2.0
    s = socket.create_connection((host, port), timeout=5)
    res = {"scenario": scen, "local_port": s.getsockname()[1]}
    if scen in ("single", "reuse"):
        s.sendall(PING)
        buf, end, t = read_all(s, time.monotonic() + wait)
        res.update(responses=statuses(buf), end=end, end_ms=t)
        if scen == "reuse":
            time.sleep(0.05)
            try:
                s.sendall(PING)
                buf2, end2, _ = read_all(s, time.monotonic() + wait)
                res["reuse"] = {"send": "ok", "responses": len(parse(buf2)), "end": end2}
            except OSError as e:
                res["reuse"] = {"send": type(e).__name__, "errno": e.errno}
    elif scen == "pipeline3":
        s.sendall(PING * 3)
        buf, end, t = read_all(s, time.monotonic() + wait)
        res.update(requests_sent=3, responses=statuses(buf), end=end, end_ms=t)
    elif scen == "postget":
        s.sendall(POST + PING)
        buf, end, t = read_all(s, time.monotonic() + wait)
        res.update(requests_sent=2, responses=statuses(buf), end=end, end_ms=t)
    else:
        print("unknown scenario", file=sys.stderr)
        return 1
    res["response_count"] = len(res.get("responses", []))
    s.close()
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
