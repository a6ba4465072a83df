#!/bin/bash
# Reproduce the evidence behind repro/fpc/FINDINGS-3.2.2.md.
# usage: repro/fpc/investigate.sh [FPSERVER_BINARY]   (default build/fpc-3.2.2/fpserver)
# Needs strace, curl, /usr/bin/python3. Writes the traces to $OUT (printed).
# Each experiment starts the server under strace, waits for its "listening"
# line, runs raw-socket / curl scenarios, then stops the server with SIGTERM.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${1:-$ROOT/build/fpc-3.2.2/fpserver}
RAW=(/usr/bin/python3 "$ROOT/repro/fpc/rawhttp.py")
OUT=${OUT:-$(mktemp -d /tmp/fpc-findings.XXXXXX)}
mkdir -p "$OUT"
for c in strace curl /usr/bin/python3; do
    command -v "$c" >/dev/null 2>&1 || { echo "investigate.sh: missing $c (apt-get install ${c##*/})" >&2; exit 4; }
done
[ -x "$BIN" ] || { echo "investigate.sh: $BIN not built (repro/fpc/build.sh)" >&2; exit 1; }

STRACE_PID=""
SERVER_PID=""
cleanup() {
    # SERVER_PID is strace's child, not ours: strace reaps it.  Signal it only
    # while strace still has it as a child, so that a server that died early
    # (its PID free for reuse) is never the target of a stale SIGTERM.
    if [ -n "$SERVER_PID" ] && pgrep -P "$STRACE_PID" | grep -qx "$SERVER_PID"; then
        kill -TERM "$SERVER_PID" 2>/dev/null
    fi
    [ -n "$STRACE_PID" ] && wait "$STRACE_PID" 2>/dev/null
    STRACE_PID=""; SERVER_PID=""
}
trap cleanup EXIT

# start NAME FLAGS... : server under strace; sets PORT, SERVER_PID
start() {
    local name=$1; shift
    : > "$OUT/$name.stdout"
    strace -f -tt -e trace=network,select,poll,close -o "$OUT/$name.strace" \
        "$BIN" --port 0 "$@" > "$OUT/$name.stdout" 2> "$OUT/$name.stderr" &
    STRACE_PID=$!
    for _ in $(seq 1 500); do
        grep -q '^listening ' "$OUT/$name.stdout" && break
        kill -0 "$STRACE_PID" 2>/dev/null || { echo "server $name died" >&2; cat "$OUT/$name.stderr" >&2; exit 1; }
        sleep 0.01   # polling for the listening line, not synchronisation by time
    done
    PORT=$(sed -n 's/^listening .*:\([0-9]*\)$/\1/p' "$OUT/$name.stdout")
    [ -n "$PORT" ] || { echo "no listening line from $name" >&2; exit 1; }
    SERVER_PID=$(pgrep -P "$STRACE_PID" | head -1)
    echo "== $name: $BIN --port 0 $* -> port $PORT (pid $SERVER_PID)"
}
stop() { cleanup; }

# accepted NAME: the connections the server has accepted so far (its trace)
accepted() { grep -cE '(accept4?\(|accept4? resumed>).*= [0-9]+$' "$OUT/$1.strace"; }

# wait_accepted NAME N: poll until the server has accepted more than N
# connections (5 s at most): the held connection must reach it first.
wait_accepted() {
    for _ in $(seq 1 500); do
        (( $(accepted "$1") > $2 )) && return 0
        sleep 0.01   # polling the trace, not synchronisation by time
    done
    echo "$1: the held connection was not accepted in 5 s" >&2; exit 1
}

# raw ARGS...: rawhttp.py, its failure the script's
raw() { "${RAW[@]}" "$@" || { echo "rawhttp.py $* failed" >&2; exit 1; }; }

# summary NAME : syscall counts that matter for the verdicts, counted from
# the first accept() on (start-up closes from the loader are skipped) and
# without the listen-watcher thread (the one that calls getsockname).
summary() {
    local f="$OUT/$1.strace" w
    w=$(awk '/getsockname\(/ {print $1; exit}' "$f")
    awk -v w="$w" -v name="$1" '
        $1 == w { next }
        / accept\(|accept resumed/ && /= [0-9]+$/ { started = 1; acc++ }
        !started { next }
        / sendto\(/ { snd++; if ($0 ~ /= -1/) sndfail++ }
        / close\(/ { cls++ }
        / shutdown\(/ { shut++ }
        / setsockopt\(/ { sso++ }
        /TCP_NODELAY/ { nd++ }
        / (select|pselect6|poll)\(/ { sel++ }
        END { printf "-- %s: accepted=%d sendto=%d (failed %d) close=%d shutdown=%d setsockopt-on-connections=%d TCP_NODELAY=%d select/poll=%d\n",
              name, acc, snd, sndfail, cls, shut, sso, nd, sel }' "$f"
    echo "   server log: request lines=$(grep -c 'conn=.*req=' "$OUT/$1.stderr")" \
         "on-allow-connect lines=$(grep -c 'on-allow-connect' "$OUT/$1.stderr")" \
         "socket-handler-accept lines=$(grep -c 'socket-handler-accept' "$OUT/$1.stderr")"
}

echo "fpserver: $BIN ; traces in $OUT"

# 1. default flags (Threaded=False)
start default
for s in single reuse pipeline3; do raw 127.0.0.1 "$PORT" $s 1; done
echo "-- curl, two URLs on one command line (curl tries to reuse):"
curl -sv "http://127.0.0.1:$PORT/ping" "http://127.0.0.1:$PORT/ping" -o /dev/null -o /dev/null 2>&1 \
    | grep -E 'Connected to|Connection #|Re-using|left intact|Closing|^< ' | sed 's/^/   /'
echo "-- POST(5 B)+GET in one send (client waits 1 s, then closes):"
raw 127.0.0.1 "$PORT" postget 1
echo "-- a GET /ping sent while that POST+GET connection is still open (1.5 s budget):"
n=$(accepted default)
raw 127.0.0.1 "$PORT" postget 3 > "$OUT/postget-hold.json" & HOLD=$!
wait_accepted default "$n"
timeout 5 "${RAW[@]}" 127.0.0.1 "$PORT" single 1.5
wait "$HOLD" || { echo "the held POST+GET client failed" >&2; exit 1; }
echo "-- the held POST+GET connection (client gave up after 3 s):"; cat "$OUT/postget-hold.json"
stop
summary default
echo "-- strace excerpt (response 1):"
grep -E '(accept|recvfrom|sendto|close|setsockopt|shutdown)\(|accept resumed' "$OUT/default.strace" | grep -v 'close([35])' | sed -n '2,7p' | sed 's/^/   /'
echo "-- strace excerpt (POST+GET):"
grep -E 'recvfrom\(.*(POST|18446744)|SIGSEGV|EPIPE' "$OUT/default.strace" | sed 's/^/   /'

# 2. OnAllowConnect assigned (handler sets TCP_NODELAY and logs)
start on-allow-connect --on-allow-connect nodelay
for _ in 1 2 3; do raw 127.0.0.1 "$PORT" single 1 > /dev/null; done
stop
summary on-allow-connect
grep -m2 'TCP_NODELAY' "$OUT/on-allow-connect.strace" | sed 's/^/   /'

# 3. OnGetSocketHandler with a handler whose Accept sets TCP_NODELAY
start socket-handler --socket-handler nodelay
for _ in 1 2 3; do raw 127.0.0.1 "$PORT" single 1 > /dev/null; done
stop
summary socket-handler

# 4. --horse (Threaded=True, QueueSize 15: what Horse sets on FPC < 3.3.1)
start horse --horse
for s in single reuse pipeline3; do raw 127.0.0.1 "$PORT" $s 1; done
n=$(accepted horse)
raw 127.0.0.1 "$PORT" postget 2 > "$OUT/horse-postget.json" & HOLD=$!
wait_accepted horse "$n"
echo "-- a GET /ping while a POST+GET connection is held open:"
timeout 5 "${RAW[@]}" 127.0.0.1 "$PORT" single 1.5
wait "$HOLD" || { echo "the held POST+GET client failed" >&2; exit 1; }
echo "-- POST+GET under --horse:"; cat "$OUT/horse-postget.json"
stop
summary horse

echo "traces: $OUT"
