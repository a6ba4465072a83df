#!/bin/bash
# h2load.sh HOST PORT [N] [SAMPLES] [BUDGET_S]
# The benchmark of Horse PR #554 (`h2load -n 50000 -c 1`), bounded: h2load
# --h1 -n N (default 100) -c 1 on /ping, one request at a time on one
# client; again until the runs hold SAMPLES latencies (default 1: one run),
# at most SAMPLES runs, none started after BUDGET_S seconds (default 0: no
# such limit; a fast server's runs then spread its samples over a while, a
# stalled one's single run has spent it).  h2load reconnects only after a response that says
# "Connection: close"; a server that closes without it (B4) leaves the rest
# of the N requests failed, so such a run has one latency: SAMPLES pools
# several runs' for the p50.  Bounds: -N 5 (a connection idle for 5 s
# is given up: a server that stopped answering) and a guard per run
# (`timeout`); a stalled keep-alive server (B3, ~44 ms a request) ends
# after N of them.  Latencies come from h2load's per-request log
# (--log-file: microseconds until the end of each response).
# JSON: per run ("runs") the h2load "requests:" counters (total, started,
# done, succeeded, failed, errored, timeout), finished_s, h2load's rps
# (succeeded over the run's time), completed (2xx rows in its log) and
# guard (true when the guard ended h2load: its counters are then missing
# and the log is the evidence); "completed" (one count per run) and
# p50, quartiles (q1, q3), min and max us over every run's latencies.
# Exit: 0 scenario ran, 1 could not run, 4 tool missing.
set -u
kit_name=${0##*/} kit_name=${kit_name%.sh}
# shellcheck source=scripts/lib.sh
source "${0%/*}/../../scripts/lib.sh"
require_client h2load nghttp2-client 2 "h2load.sh HOST PORT [N] [SAMPLES] [BUDGET_S]" "$@"
HOST=$1 PORT=$2 N=${3:-100} SAMPLES=${4:-1} BUDGET_MS=$((${5:-0} * 1000))
trap kit_cleanup EXIT
kit_mktemp TMP
# The guard only stops a client that hangs in spite of -N: N stalled
# requests of ~44 ms plus start-up fit well inside it.
GUARD=$((10 + N / 10))
RUNS=0 HELD=0 T0=$(date +%s%3N)
while ((RUNS < SAMPLES && HELD < SAMPLES)) &&
      ((BUDGET_MS == 0 || $(date +%s%3N) - T0 < BUDGET_MS)); do
    timeout "$GUARD" h2load --h1 -n "$N" -c 1 -t 1 -m 1 -N 5 \
        --log-file "$TMP/log.$RUNS" "http://$HOST:$PORT/ping" > "$TMP/out.$RUNS" 2>&1
    echo $? > "$TMP/rc.$RUNS"
    GOT=$(wc -l < "$TMP/log.$RUNS" 2>/dev/null || echo 0)
    RUNS=$((RUNS + 1))
    ((GOT > 0)) || break   # a server that answers nothing: once is enough
    HELD=$((HELD + GOT))
done
/usr/bin/python3 -c '
import json, re, sys
n, runs, tmp = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
COUNTERS = ("total", "started", "done", "succeeded", "failed", "errored", "timeout")
def one(i):
    text = open(f"{tmp}/out.{i}", errors="replace").read()
    rc = int(open(f"{tmp}/rc.{i}").read())
    run = {"h2load_exit": rc, "guard": rc == 124}
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                  r"(\d+) failed, (\d+) errored, (\d+) timeout", text)
    if m:
        run.update(zip(COUNTERS, map(int, m.groups())))
    m = re.search(r"finished in ([\d.]+)(us|ms|s), ([\d.]+) req/s", text)
    if m:
        run["finished_s"] = float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1}[m.group(2)]
        run["rps"] = float(m.group(3))
    lat = []
    try:
        for line in open(f"{tmp}/log.{i}"):
            f = line.split()
            if len(f) >= 3 and f[1].startswith("2"):
                lat.append(int(f[2]))
    except OSError:
        pass
    run["completed"] = len(lat)
    if "total" not in run and not lat:
        run["output"] = text[-300:]
    return run, lat
res = {"client": "h2load", "requests": n, "runs": []}
lat = []
for i in range(runs):  # the runs made
    run, l = one(i)
    res["runs"].append(run)
    lat += l
res["completed"] = [r["completed"] for r in res["runs"]]
lat.sort()
res["samples"] = len(lat)
res["p50_us"] = lat[(len(lat) - 1) // 2] if lat else None
res["q1_us"] = lat[(len(lat) - 1) // 4] if lat else None
res["q3_us"] = lat[3 * (len(lat) - 1) // 4] if lat else None
res["min_us"] = lat[0] if lat else None
res["max_us"] = lat[-1] if lat else None
if all("output" in r for r in res["runs"]):
    print(json.dumps(dict(res, error="no h2load result")))
    print("h2load.sh: h2load produced no result: " + res["runs"][0]["output"].strip()[-200:],
          file=sys.stderr)
    sys.exit(1)
if not lat and not any(r.get("started") for r in res["runs"]):
    print(json.dumps(dict(res, error="no request started")))
    print("h2load.sh: h2load started no request (could not connect?)", file=sys.stderr)
    sys.exit(1)
print(json.dumps(res))
print("h2load: completed %s of %d per run, %s failed, p50 %s us over %d, req/s %s%s" % (
      res["completed"], n, [r.get("failed", "?") for r in res["runs"]], res["p50_us"], len(lat),
      [r.get("rps", "?") for r in res["runs"]],
      " (a guard ended h2load)" if any(r["guard"] for r in res["runs"]) else ""), file=sys.stderr)
' "$N" "$RUNS" "$TMP"
