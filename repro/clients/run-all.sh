#!/bin/bash
# run-all.sh LABEL SERVER_BINARY [SERVER_FLAGS...]
# Starts SERVER_BINARY --port 0 [flags] (a server-min or fpserver: prints
# "listening ADDR:PORT"), runs every client script in this directory against
# it, prints one JSON object per client on stdout, each with "server": LABEL
# added, and stops the server. Exit 0 when the server ran, 1 otherwise.
# Client rows that exit 4 (tool missing) are reported as {"skipped": ...}.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { echo "usage: run-all.sh LABEL SERVER_BINARY [FLAGS...]" >&2; exit 1; }
LABEL=$1; shift
BIN=$1; shift
ROUNDS=${ROUNDS:-30}
TMP=$(mktemp -d /tmp/run-all.XXXXXX)
SPID=""
cleanup() {
    if [ -n "$SPID" ]; then kill -TERM "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; fi
    rm -rf "$TMP"
}
trap cleanup EXIT
"$BIN" --port 0 "$@" > "$TMP/out" 2> "$TMP/err" &
SPID=$!
for _ in $(seq 1 500); do
    grep -q '^listening ' "$TMP/out" && break
    kill -0 "$SPID" 2>/dev/null || { echo "run-all.sh: server exited: $(cat "$TMP/err")" >&2; SPID=""; exit 1; }
    sleep 0.01   # polling for the listening line
done
ADDR=$(sed -n 's/^listening \(.*\):\([0-9]*\)$/\1 \2/p' "$TMP/out")
[ -n "$ADDR" ] || { echo "run-all.sh: no listening line from $BIN" >&2; exit 1; }
set -- $ADDR
HOST=$1 PORT=$2
[ "$HOST" = "0.0.0.0" ] && HOST=127.0.0.1
row() {
    local name=$1; shift
    local json rc
    json=$("$@" 2>>"$TMP/client.err"); rc=$?
    if [ $rc -eq 4 ]; then json="{\"client\": \"$name\", \"skipped\": \"tool missing\"}"; fi
    [ -n "$json" ] || json="{\"client\": \"$name\", \"failed\": $rc}"
    printf '%s\n' "$json" | /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); d["server"]=sys.argv[1]; d.pop("gaps_ms",None); print(json.dumps(d))' "$LABEL"
}
row curl "$HERE/curl-reuse.sh" "$HOST" "$PORT" 10
row node "$HERE/node-agent.js" "$HOST" "$PORT" "$ROUNDS"
row node-b2b "$HERE/node-agent.js" "$HOST" "$PORT" 200 0
row urllib3 /usr/bin/python3 "$HERE/urllib3-pool.py" "$HOST" "$PORT" "$ROUNDS"
row urllib3-b2b /usr/bin/python3 "$HERE/urllib3-pool.py" "$HOST" "$PORT" 200 0
row wrk "$HERE/wrk.sh" "$HOST" "$PORT" 1 2
row h2load "$HERE/h2load.sh" "$HOST" "$PORT" 100
row undici node "$HERE/undici-pipeline.js" "$HOST" "$PORT"
cat "$TMP/client.err" >&2
echo "run-all: $LABEL served $(grep -c 'conn=.*req=' "$TMP/err") logged requests" >&2
