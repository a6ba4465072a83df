#!/bin/bash
# wrk.sh HOST PORT CONNS DURATION_S
# wrk -t1 -c CONNS -d DURATION_S --latency on /ping (keep-alive client: it
# reuses each connection and reconnects when the server closes). Prints one
# JSON object on stdout: requests, rps, latency p50/p99 (us), socket errors
# (connect/read/write/timeout) and non-2xx responses; a summary on stderr.
# Exit: 0 scenario ran, 1 could not run, 4 tool missing.
set -u
kit_name=${0##*/} kit_name=${kit_name%.sh}
# shellcheck source=scripts/lib.sh
source "${0%/*}/../../scripts/lib.sh"
require_client wrk wrk 4 "wrk.sh HOST PORT CONNS DURATION_S" "$@"
HOST=$1 PORT=$2 CONNS=$3 DUR=$4
OUT=$(timeout $((DUR + 10)) wrk -t1 -c "$CONNS" -d "${DUR}s" --timeout 2s --latency "http://$HOST:$PORT/ping" 2>&1)
RC=$?
printf '%s\n' "$OUT" | /usr/bin/python3 -c '
import json, re, sys
rc, conns, dur = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
text = sys.stdin.read()
def us(v, unit):
    return round(float(v) * {"us": 1, "ms": 1e3, "s": 1e6, "m": 6e7}[unit], 1)
res = {"client": "wrk", "connections": conns, "duration_s": dur, "wrk_exit": rc}
m = re.search(r"(\d+) requests in ([\d.]+)(\w+)", text)
if not m:
    print(json.dumps(dict(res, error="no wrk result", output=text[-400:])))
    print("wrk.sh: wrk produced no result: " + text.strip()[-200:], file=sys.stderr)
    sys.exit(1)
res["requests"] = int(m.group(1))
m = re.search(r"Requests/sec:\s+([\d.]+)", text)
res["rps"] = float(m.group(1)) if m else None
for p in ("50", "99"):
    m = re.search(r"^\s+%s(?:\.000)?%%\s+([\d.]+)(us|ms|s|m)\s*$" % p, text, re.M)
    res["latency_p%s_us" % p] = us(*m.groups()) if m else None
m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
res["errors"] = dict(zip(("connect", "read", "write", "timeout"), map(int, m.groups()))) if m else \
    {"connect": 0, "read": 0, "write": 0, "timeout": 0}
m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
res["errors"]["non_2xx"] = int(m.group(1)) if m else 0
print(json.dumps(res))
print("wrk: %d requests, %.0f rps, p50 %s us, p99 %s us, errors %s" % (res["requests"], res["rps"] or 0,
      res["latency_p50_us"], res["latency_p99_us"], json.dumps(res["errors"])), file=sys.stderr)
' "$RC" "$CONNS" "$DUR"
