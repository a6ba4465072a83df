#!/usr/bin/env bash
# repro/horse/sample-server.sh PROGRAM [--port 0|9000] [--address A] [--horse]
# - run Horse's own samples/lazarus/console (unchanged: THorse.Listen(9000)
# on 0.0.0.0, and it prints nothing) so that, to the kit, it behaves like a
# kit server.
#
#   where   without --address (the kit's own measures): in a network
#           namespace of its own, reached over a veth pair from this
#           namespace (scripts/veth-pair.sh: a /30 nobody else here holds),
#           so that any number of them run side by side; 'listening <ns address>:9000'.
#           With --address A (captures/capture.sh, which captures this
#           namespace's interfaces): in this namespace, one at a time per
#           namespace (a lock), never when something else answers on 9000;
#           'listening A:9000'.
#   stdout  the 'listening' line, once a connect() to the sample succeeds
#   stderr  'sample: conn=<client port> req=<n>' per request seen arriving
#           at port 9000 (tcpdump on the sample's side; the sample logs
#           nothing itself): the server side's view of which connection
#           carried each request
#   flags   any other flag is a setting the sample does not have: exit 2,
#           'unsupported: ...'; without --horse the kit asks for
#           fphttpserver's defaults, which Horse's FPC provider (FPC >= 3.3.1)
#           never runs with
#   SIGTERM stops the sample and the capture, removes the namespace; exit 0
set -uo pipefail
kit_name=sample-server
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"
SAMPLE_PORT=9000

[ $# -ge 1 ] || die "usage: sample-server.sh PROGRAM [--port 0|9000] [--address A] [--horse]"
exe=$1; shift
[ -x "$exe" ] || die "no such program: $exe"
address="" horse=0
unsupported() { echo "unsupported: $*" >&2; exit 2; }
while (($#)); do
    case $1 in
    --port) [[ $2 == 0 || $2 == "$SAMPLE_PORT" ]] || unsupported "--port $2: the sample listens on $SAMPLE_PORT"; shift 2 ;;
    --address) address=$2; shift 2 ;;
    --horse) horse=1; shift ;;
    *) unsupported "$1: Horse's sample has no such setting" ;;
    esac
done
((horse)) || unsupported "fphttpserver's defaults (KeepConnections off): Horse's FPC provider turns keep-alive on"
require_root sample-server
require_command tcpdump tcpdump
require_command ip iproute2
require_command flock util-linux

ns="" pid="" tcpdump_pid="" counter_pid=""
# shellcheck disable=SC2317  # runs from the trap
on_exit() {
    # The sample, then the capture (the counter drains what it wrote), then
    # the namespace (its veth pair goes with it).  Not cut short by another
    # TERM: the kit sends a second one when the first has not ended us in
    # its deadline, and under strace on a loaded machine this cleanup takes
    # longer (f1: the second TERM ended it after the sample, tcpdump was
    # left running and the namespace in place).
    trap '' TERM INT
    [[ -n $pid ]] && stop_pid "$pid"
    [[ -n $tcpdump_pid ]] && stop_pid "$tcpdump_pid"
    [[ -n $counter_pid ]] && wait "$counter_pid"
    [[ -n $ns ]] && ip netns del "$ns" 2> /dev/null
    kit_cleanup
}
trap on_exit EXIT
trap 'exit 0' TERM INT

# Only ever run as 'exec_in_ns CMD &': the background subshell becomes CMD,
# so $! is CMD's own PID (ip netns exec execs it too).
exec_in_ns() { if [[ -n $ns ]]; then exec ip netns exec "$ns" "$@"; else exec "$@"; fi; }

if [[ -z $address ]]; then
    # A namespace behind a veth pair on a /30 of its own (the kit's one
    # allocator: no other step's subnet may shadow ours).
    pair=$("$top/scripts/veth-pair.sh" kithorse) || die "no veth pair (scripts/veth-pair.sh)"
    eval "$pair"   # ns=, ns_addr= and the rest
    address=${ns_addr:?}
else
    # One sample per namespace at a time (the lock is per namespace).
    mkdir -p "$top/build/horse"
    netid=$(readlink /proc/self/ns/net | tr -dc 0-9)
    exec 9> "$top/build/horse/port$SAMPLE_PORT-$netid.lock"
    flock -w 120 9 || die "port $SAMPLE_PORT lock not free within 120 s"
fi
answers() { (exec 3<> "/dev/tcp/$address/$SAMPLE_PORT") 2> /dev/null; }
answers && die "something else answers on $address:$SAMPLE_PORT; not starting the sample"

kit_mktemp tmp
# One line per request seen: conn=<client port> req=<n on that connection>.
count_requests() {
    local line src
    declare -A n=()
    while read -r line; do
        [[ $line =~ \.([0-9]+)\ \>\ [^\ ]+\.$SAMPLE_PORT: ]] || continue
        src=${BASH_REMATCH[1]}
        n[$src]=$((${n[$src]:-0} + 1))
        echo "sample: conn=$src req=${n[$src]}" >&2
    done
}
mkfifo "$tmp/requests"
count_requests < "$tmp/requests" &
counter_pid=$!
# Requests as they arrive: the first 4 payload bytes are "GET " or "POST".
filter="tcp dst port $SAMPLE_PORT and (tcp[((tcp[12:1] & 0xf0) >> 2):4] = 0x47455420 \
or tcp[((tcp[12:1] & 0xf0) >> 2):4] = 0x504f5354)"
exec_in_ns tcpdump -i any --immediate-mode -l -n -q "$filter" > "$tmp/requests" 2> "$tmp/tcpdump.err" &
tcpdump_pid=$!
wait_for_line "$tmp/tcpdump.err" "listening on" "$tcpdump_pid" ||
    die "tcpdump did not start: $(cat "$tmp/tcpdump.err")"

exec_in_ns "$exe" > "$tmp/sample.out" 2>&1 &
pid=$!
for ((i = 0; i < 600; i++)); do      # 30 s, polled: the sample says nothing
    answers && break
    kill -0 "$pid" 2> /dev/null || die "the sample exited: $(cat "$tmp/sample.out")"
    sleep 0.05
done
answers || die "the sample did not listen on $address:$SAMPLE_PORT within 30 s"
echo "listening $address:$SAMPLE_PORT"
wait "$pid"
