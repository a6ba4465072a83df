#!/usr/bin/python3
"""urllib3-pool.py HOST PORT [ROUNDS] [MAX_GAP_MS]   (run with /usr/bin/python3)

urllib3.HTTPConnectionPool(maxsize=1, retries=False): ROUNDS (default 30)
sequential GET /ping with a random idle gap (seeded PRNG, 0..MAX_GAP_MS ms,
default 300; 0 = back to back) before each. No retry. A failure on a
connection that had served a request before (ProtocolError,
RemoteDisconnected, ConnectionResetError, BrokenPipeError) is a stale-socket
failure. Prints one JSON object on stdout, a summary line on stderr.
Exit: 0 scenario ran, 1 could not run, 4 urllib3 missing.
"""
import http.client
import json
import random
import sys
import time

try:
    import urllib3
    from urllib3.exceptions import ProtocolError, NewConnectionError, MaxRetryError
except ImportError:
    print("urllib3-pool.py: urllib3 not importable by %s (Debian: apt-get install python3-urllib3; "
          "run with /usr/bin/python3)" % sys.executable, file=sys.stderr)
    sys.exit(4)

STALE_TYPES = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
               ConnectionAbortedError)


def root_cause(e):
    """Unwrap urllib3's ProtocolError / MaxRetryError to the socket-level error."""
    for _ in range(5):
        if isinstance(e, MaxRetryError) and e.reason is not None:
            e = e.reason
        elif isinstance(e, ProtocolError):
            inner = e.args[1] if len(e.args) > 1 and isinstance(e.args[1], BaseException) else None
            inner = inner or e.__cause__ or e.__context__
            if inner is None:
                break
            e = inner
        else:
            break
    return e


def main():
    if len(sys.argv) < 3:
        print("usage: urllib3-pool.py HOST PORT [ROUNDS] [MAX_GAP_MS]", file=sys.stderr)
        return 1
    host, port = sys.argv[1], int(sys.argv[2])
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    max_gap = int(sys.argv[4]) if len(sys.argv) > 4 else 300
    rng = random.Random(0x5EED1234)
    pool = urllib3.HTTPConnectionPool(host, port, maxsize=1, block=True, retries=False,
                                      timeout=urllib3.Timeout(connect=5, read=5))
    out = {"client": "urllib3-pool", "urllib3": urllib3.__version__, "requests": 0, "ok": 0,
           "stale_failures": 0, "errors": {}, "reused": 0, "connection_headers": {}, "gaps_ms": []}
    deadline = time.monotonic() + rounds * 0.3 + 30
    served = {}   # id(connection object) -> requests it completed
    for _ in range(rounds):
        if time.monotonic() > deadline:
            out["aborted"] = "run time limit"
            break
        gap = rng.randint(0, max_gap)
        out["gaps_ms"].append(gap)
        time.sleep(gap / 1000.0)   # the idle gap is the scenario, not synchronisation
        # the connection the pool will hand out (maxsize=1): reused if it served before
        conn = pool._get_conn()
        reused = served.get(id(conn), 0) > 0 and conn.sock is not None
        pool._put_conn(conn)
        out["requests"] += 1
        if reused:
            out["reused"] += 1
        try:
            r = pool.request("GET", "/ping", preload_content=True)
            if r.status == 200:
                out["ok"] += 1
                served[id(conn)] = served.get(id(conn), 0) + 1
                k = r.headers.get("Connection", "(none)")
                out["connection_headers"][k] = out["connection_headers"].get(k, 0) + 1
            else:
                key = "HTTP %d" % r.status
                out["errors"][key] = out["errors"].get(key, 0) + 1
        except Exception as e:  # noqa: BLE001 - every failure is data
            cause = root_cause(e)
            key = type(cause).__name__
            out["errors"][key] = out["errors"].get(key, 0) + 1
            if reused and (isinstance(cause, STALE_TYPES) or isinstance(e, ProtocolError)):
                out["stale_failures"] += 1
            if isinstance(cause, (NewConnectionError, ConnectionRefusedError)) and out["ok"] == 0:
                print(json.dumps(out))
                print("urllib3-pool: cannot connect to %s:%d" % (host, port), file=sys.stderr)
                return 1
    pool.close()
    print(json.dumps(out))
    print("urllib3-pool: %d/%d ok, %d stale-socket failures, %d on reused connections, errors %s"
          % (out["ok"], out["requests"], out["stale_failures"], out["reused"], json.dumps(out["errors"])),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
