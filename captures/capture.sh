#!/bin/bash
# captures/capture.sh - one scripted, repeatable capture of a server under a probe.
#
# usage: capture.sh [--veth] --scenario S [--probe-args "..."]
#                   (--variant NAME [--server-args "..."] | --server "CMD with {port}" --port P)
#                   [--no-strace] --out DIR
#
#   --scenario S     a probe scenario (build/probe --help lists them); it and
#                    --probe-args are checked by the probe before anything starts
#   --variant NAME   server is build/NAME/server-min --port 0 --horse [server-args];
#                    the port is read from its "listening ADDR:PORT" line
#   --server CMD     any server (e.g. a real FPC build, a win64 one under wine);
#                    {port} and {address} in CMD are replaced; --port P is its port
#                    (--port 0: the server picks one and prints a "listening
#                    ADDR:PORT" line, as the kit's servers do: no port is
#                    chosen ahead, so none can be taken in between)
#   --veth           server inside a fresh network namespace behind a veth pair
#                    (private /30 on that pair only), probe and tcpdump on the host side
#   --no-strace      do not run the server under strace
#   -h, --help       this text
#
# Writes DIR/wire.pcap, DIR/server.strace, DIR/probe.json, DIR/server.out|err,
# DIR/pcap.json, DIR/pcap.txt, DIR/ladder.txt, DIR/strace.json, DIR/strace.txt.
# Exit: 0 ok, 1 failure, 2 usage (reported once, before anything starts),
# 4 skipped (not root, or a missing tool: tcpdump, strace, ip).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

help() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }
usage_err() { echo "capture: $*" >&2; echo "try '$0 --help'" >&2; exit 2; }

# needs_value OPT "$#": an option's value must be there.
needs_value() { [ "$2" -ge 2 ] || usage_err "option '$1' needs a value"; }

VETH=0 SCENARIO="" PROBE_ARGS="" VARIANT="" SERVER_CMD="" SERVER_ARGS="" PORT="" OUT="" USE_STRACE=1
while [ $# -gt 0 ]; do
    case "$1" in
        --veth) VETH=1 ;;
        --no-strace) USE_STRACE=0 ;;
        -h|--help) help ;;
        --scenario|--probe-args|--variant|--server-args|--server|--port|--out)
            needs_value "$1" $#
            case "$1" in
                --scenario) SCENARIO=$2 ;;
                --probe-args) PROBE_ARGS=$2 ;;
                --variant) VARIANT=$2 ;;
                --server-args) SERVER_ARGS=$2 ;;
                --server) SERVER_CMD=$2 ;;
                --port) PORT=$2 ;;
                --out) OUT=$2 ;;
            esac
            shift ;;
        *) usage_err "unknown argument '$1'" ;;
    esac
    shift
done
[ -n "$SCENARIO" ] || usage_err "--scenario S is required"
[ -n "$OUT" ] || usage_err "--out DIR is required"
if [ -n "$VARIANT" ] && [ -n "$SERVER_CMD" ]; then usage_err "--variant and --server exclude each other"; fi
[ -n "$VARIANT" ] || [ -n "$SERVER_CMD" ] || usage_err "need --variant NAME or --server CMD"
if [ -n "$SERVER_CMD" ]; then
    case "$PORT" in ''|*[!0-9]*) usage_err "--server needs --port P" ;; esac
fi

PROBE=$ROOT/build/probe
PCAPA=$ROOT/build/pcap-analyse
STRACEA=$ROOT/build/strace-analyse
for b in "$PROBE" "$PCAPA" "$STRACEA"; do
    [ -x "$b" ] || die "missing $b (run: make ${b#"$ROOT"/})"
done
if [ -n "$VARIANT" ]; then
    SERVER_BIN=$ROOT/build/$VARIANT/server-min
    [ -x "$SERVER_BIN" ] || die "missing $SERVER_BIN (run: make build/$VARIANT/server-min)"
fi
# The probe checks the scenario and its arguments itself (one list, in one
# place): options are parsed in order, so a trailing --help exits 0 only
# when everything before it is valid.
# shellcheck disable=SC2206
PA=($PROBE_ARGS)
if ! perr=$("$PROBE" --scenario "$SCENARIO" "${PA[@]}" --help 2>&1 >/dev/null); then
    usage_err "${perr%%$'\n'*}"
fi

trap cap_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

require_root capture
require_command tcpdump tcpdump capture
[ "$USE_STRACE" = 1 ] && require_command strace strace capture
[ "$VETH" = 1 ] && require_command ip iproute2 capture

mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/wire.pcap "$OUT"/server.strace "$OUT"/probe.json "$OUT"/server.out "$OUT"/server.err
CAP_TMP=$(mktemp -d "${TMPDIR:-/tmp}/kit.XXXXXX") || die "mktemp failed"
KIT_TMPS+=("$CAP_TMP") # kit_mktemp in $(...) would record it in a subshell only

# --- network: loopback or a fresh namespace --------------------------
if [ "$VETH" = 1 ]; then
    netns_setup
    IFACE=$VETH_HOST
    SRV_ADDR=$NS_ADDR
    RUN_IN=(ip netns exec "$NS")
else
    IFACE=lo
    SRV_ADDR=127.0.0.1
    RUN_IN=()
fi

# --- server ----------------------------------------------------------
if [ -n "$VARIANT" ]; then
    # shellcheck disable=SC2206
    SRV=("$SERVER_BIN" --port 0 --address "$SRV_ADDR" --horse $SERVER_ARGS)
else
    c=${SERVER_CMD//\{port\}/$PORT}
    c=${c//\{address\}/$SRV_ADDR}
    # shellcheck disable=SC2206
    SRV=($c)
fi
STRACE=()
if [ "$USE_STRACE" = 1 ]; then
    # shellcheck disable=SC2054
    # network: socket, accept4, setsockopt, sendto/sendmsg/recvmsg...; the
    # waits native and Wine servers use; the process calls that tell whose
    # fd table a thread uses (strace-analyse follows fds across processes).
    STRACE=(strace -f -tt -T -s 65535
            -e trace=network,select,pselect6,poll,ppoll,epoll_wait,epoll_pwait,epoll_ctl,read,write,readv,writev,close,clone,clone3,fork,vfork
            -o "$OUT/server.strace" --)
fi
"${RUN_IN[@]}" "${STRACE[@]}" "${SRV[@]}" >"$OUT/server.out" 2>"$OUT/server.err" &
SRV_PID=$!
KIT_PIDS+=("$SRV_PID")
if [ -n "$VARIANT" ] || [ "$PORT" = 0 ]; then
    wait_for_line "$OUT/server.out" '^listening ' "$SRV_PID" "${CAP_READY_TRIES:-200}" \
        || die "server did not print 'listening ADDR:PORT' (see $OUT/server.err)"
    PORT=$(sed -n 's/^listening .*:\([0-9][0-9]*\)$/\1/p' "$OUT/server.out" | head -n1)
    [ -n "$PORT" ] || die "cannot parse port from $OUT/server.out"
else
    # a foreign server: wait until the port accepts a connection (bash /dev/tcp, no traffic before tcpdump matters)
    ok=0
    for _ in $(seq "${CAP_READY_TRIES:-200}"); do   # x 50 ms; Wine needs more
        if (exec 3<>"/dev/tcp/$SRV_ADDR/$PORT") 2>/dev/null; then ok=1; break; fi
        kill -0 "$SRV_PID" 2>/dev/null || break
        sleep 0.05
    done
    [ "$ok" = 1 ] || die "server never accepted on $SRV_ADDR:$PORT (see $OUT/server.err)"
fi

# --- tcpdump, proven live by a UDP marker -----------------------------
MARK=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000 ))
[ "$MARK" = "$PORT" ] && MARK=$((MARK + 1))
# -B: a 16 MiB kernel buffer, so that a starved tcpdump (a loaded machine,
# captures side by side) falls behind without the kernel dropping packets.
tcpdump -i "$IFACE" -s 0 -B 16384 -U --immediate-mode -Z root -w "$OUT/wire.pcap" "tcp port $PORT or udp port $MARK" \
    2>"$CAP_TMP/tcpdump.err" &
TD_PID=$!
KIT_PIDS+=("$TD_PID")
seen=0
for _ in $(seq 100); do
    kill -0 "$TD_PID" 2>/dev/null || die "tcpdump exited: $(tr '\n' ' ' <"$CAP_TMP/tcpdump.err")"
    echo marker >"/dev/udp/$SRV_ADDR/$MARK" 2>/dev/null
    if pcap_has_marker "$OUT/wire.pcap" "$MARK"; then seen=1; break; fi
    sleep 0.05
done
[ "$seen" = 1 ] || die "tcpdump never captured the marker on $IFACE"

# --- probe -------------------------------------------------------------
"$PROBE" --json --scenario "$SCENARIO" "${PA[@]}" "$SRV_ADDR" "$PORT" >"$OUT/probe.json" 2>"$OUT/probe.err"
PROBE_RC=$?

# --- flush barrier: a second marker, sent after the probe's last packet;
# once tcpdump has written it, it has written everything before it (one
# interface, one queue), so stopping it now loses nothing.
before=$(tcpdump -nr "$OUT/wire.pcap" "udp port $MARK" 2>/dev/null | wc -l)
flushed=0
for _ in $(seq 100); do
    echo marker >"/dev/udp/$SRV_ADDR/$MARK" 2>/dev/null
    now=$(tcpdump -nr "$OUT/wire.pcap" "udp port $MARK" 2>/dev/null | wc -l)
    if [ "$now" -gt "$before" ]; then flushed=1; break; fi
    sleep 0.05
done
[ "$flushed" = 1 ] || note "warning: tcpdump did not write the end marker; the capture may miss its last packets"

# --- stop: tcpdump by PID (SIGINT flushes), then the server by PID ------
stop_pid "$TD_PID" INT
# tcpdump's own count of what the kernel dropped (its last lines on SIGINT).
cp "$CAP_TMP/tcpdump.err" "$OUT/tcpdump.err" 2>/dev/null
dropped=$(sed -n 's/^\([0-9]*\) packets\{0,1\} dropped by kernel$/\1/p' "$OUT/tcpdump.err" 2>/dev/null)
[ "${dropped:-0}" -gt 0 ] && note "warning: the kernel dropped $dropped packets before tcpdump read them"
if [ "$USE_STRACE" = 1 ]; then
    # SRV_PID is strace; signal the traced server (its child), strace then exits
    child=$(pgrep -P "$SRV_PID" | head -n1)
    [ -n "$child" ] && stop_pid_child=$child && kill -TERM "$stop_pid_child" 2>/dev/null
fi
stop_pid "$SRV_PID" TERM
KIT_PIDS=()

# --- analysis -----------------------------------------------------------
rc=0
"$PCAPA" --port "$PORT" --json "$OUT/wire.pcap" >"$OUT/pcap.json" || rc=1
"$PCAPA" --port "$PORT" "$OUT/wire.pcap" >"$OUT/pcap.txt" || rc=1
: >"$OUT/ladder.txt"
nresp=$(sed -n 's/^  "responses": \([0-9]*\),$/\1/p' "$OUT/pcap.json")
for ((i = 1; i <= ${nresp:-0} && i <= 6; i++)); do
    "$PCAPA" --port "$PORT" --ladder "$i" "$OUT/wire.pcap" >>"$OUT/ladder.txt"
done
if [ "$USE_STRACE" = 1 ]; then
    "$STRACEA" --json "$OUT/server.strace" >"$OUT/strace.json" || rc=1
    "$STRACEA" "$OUT/server.strace" >"$OUT/strace.txt" || rc=1
fi
note "server $SRV_ADDR:$PORT on $IFACE, probe exit $PROBE_RC, outputs in $OUT"
sed -n '2,5p' "$OUT/pcap.txt" >&2
[ "$PROBE_RC" -le 0 ] || { note "probe failed (exit $PROBE_RC): $(head -c 300 "$OUT/probe.err")"; rc=1; }
exit $rc
