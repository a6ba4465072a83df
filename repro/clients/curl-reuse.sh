#!/bin/bash
# curl-reuse.sh HOST PORT [N]
# N (default 10) URLs http://HOST:PORT/ping on ONE curl command line, so curl
# reuses its connection when the server lets it. Per URL curl reports
# time_total, num_connects (1 = opened a new connection, 0 = reused) and the
# local port. The same N URLs again with "Connection: close" (a fresh
# connection per URL) give the same-run baseline, p50_fresh_us.
# Prints one JSON object on stdout, a summary line on stderr.
# Exit: 0 scenario ran (misbehaviour is data), 1 could not run, 4 tool missing.
set -u
kit_name=${0##*/} kit_name=${kit_name%.sh}
# shellcheck source=scripts/lib.sh
source "${0%/*}/../../scripts/lib.sh"
require_client curl curl 2 "curl-reuse.sh HOST PORT [N]" "$@"
HOST=$1 PORT=$2 N=${3:-10}
URLS=()
for _ in $(seq 1 "$N"); do URLS+=(-o /dev/null "http://$HOST:$PORT/ping"); done
RAW=$(curl -s --max-time $((5 + N)) -w '%{time_total} %{num_connects} %{local_port} %{http_code}\n' "${URLS[@]}")
RC=$?
FRESH=$(curl -s --max-time $((5 + N)) -H 'Connection: close' -w '%{time_total}\n' "${URLS[@]}" | tr '\n' ' ')
if [ -z "$RAW" ]; then
    echo "curl-reuse.sh: curl produced no result (rc $RC) against $HOST:$PORT" >&2
    exit 1
fi
printf '%s\n' "$RAW" | /usr/bin/python3 -c '
import json, sys
rc, n = int(sys.argv[1]), int(sys.argv[2])
rows = [l.split() for l in sys.stdin.read().splitlines() if l.strip()]
t = [round(float(r[0]) * 1e6) for r in rows]
def p50(v):
    v = sorted(v)
    return None if not v else (v[len(v)//2] if len(v) % 2 else (v[len(v)//2-1] + v[len(v)//2]) / 2)
def q1(v):   # the lower quartile: the 3rd fastest of 9
    v = sorted(v)
    return v[len(v) // 4] if v else None
fresh = [round(float(x) * 1e6) for x in sys.argv[3].split()]
nc = [int(r[1]) for r in rows]
codes = [int(r[3]) for r in rows]
res = {
    "client": "curl", "urls": n, "completed": len(rows), "curl_exit": rc,
    "time_total_us": t, "num_connects": nc, "local_ports": [int(r[2]) for r in rows],
    "http_codes": codes, "answered": sum(1 for c in codes if c),
    "connections_opened": sum(nc),
    "reused": sum(1 for x, c in zip(nc[1:], codes[1:]) if x == 0 and c),
    "p50_first_us": t[0] if t else None, "p50_rest_us": p50(t[1:]),
    "q1_rest_us": q1(t[1:]),
    "p50_fresh_us": p50(fresh), "min_fresh_us": min(fresh, default=None), "q1_fresh_us": q1(fresh),
}
print(json.dumps(res))
print("curl-reuse: %d/%d URLs, %d connection(s) opened, %d reused; first %s us, p50(2..N) %s us"
      % (res["answered"], n, res["connections_opened"], res["reused"], res["p50_first_us"], res["p50_rest_us"]), file=sys.stderr)
sys.exit(0 if res["answered"] else 1)
' "$RC" "$N" "$FRESH"
