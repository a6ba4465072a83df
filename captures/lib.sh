# shellcheck shell=bash
# captures/lib.sh - helpers sourced by capture.sh (bash).
#
# Every process and namespace this file creates is recorded, and cleanup
# removes exactly those (by PID / by name), never anything else.

CAP_PIDS=()          # PIDs we started, stopped in reverse order
CAP_NETNS=""         # namespace we created
CAP_VETH=""          # host-side veth we created
CAP_TMP=""           # temp dir we created

die()  { echo "capture: $*" >&2; exit 1; }
note() { echo "capture: $*" >&2; }

# require_command CMD PACKAGE: say exactly what is missing
require_command() {
    command -v "$1" >/dev/null 2>&1 && return 0
    echo "capture: missing command '$1' (Debian package: $2)" >&2
    exit 3
}

require_root() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "capture needs root (tcpdump/ip netns)" >&2
        exit 4
    fi
}

# stop_pid PID SIGNAL: signal one PID we started and wait for it (bounded).
stop_pid() {
    local pid=$1 sig=${2:-TERM} i
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
    kill -s "$sig" "$pid" 2>/dev/null
    for i in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -s KILL "$pid" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null
    return 0
}

cap_cleanup() {
    local i
    for ((i = ${#CAP_PIDS[@]} - 1; i >= 0; i--)); do
        stop_pid "${CAP_PIDS[$i]}" TERM
    done
    CAP_PIDS=()
    if [ -n "$CAP_NETNS" ]; then
        ip netns pids "$CAP_NETNS" 2>/dev/null | while read -r p; do kill "$p" 2>/dev/null; done
        ip netns delete "$CAP_NETNS" 2>/dev/null
        CAP_NETNS=""
    fi
    if [ -n "$CAP_VETH" ]; then
        ip link delete "$CAP_VETH" 2>/dev/null
        CAP_VETH=""
    fi
    if [ -n "$CAP_TMP" ] && [ -d "$CAP_TMP" ]; then
        rm -rf -- "$CAP_TMP"
        CAP_TMP=""
    fi
}

rand_hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }

# netns_setup: namespace fphs-XXXX, veth pair with random names, a private
# /30 (10.200.X.0/30, random X) that exists only on this pair.
# Sets NS, VETH_HOST, VETH_NS, HOST_ADDR, NS_ADDR.
netns_setup() {
    local tag x
    require_command ip iproute2
    tag=$(rand_hex 2)
    NS="fphs-$tag"
    VETH_HOST="fphh$tag"
    VETH_NS="fphn$tag"
    x=$(( 0x$(rand_hex 1) % 250 + 1 ))
    HOST_ADDR="10.200.$x.1"
    NS_ADDR="10.200.$x.2"
    ip netns add "$NS" || die "ip netns add $NS failed"
    CAP_NETNS=$NS
    ip link add "$VETH_HOST" type veth peer name "$VETH_NS" || die "ip link add veth failed"
    CAP_VETH=$VETH_HOST
    ip link set "$VETH_NS" netns "$NS" || die "moving $VETH_NS into $NS failed"
    ip addr add "$HOST_ADDR/30" dev "$VETH_HOST" || die "ip addr add on $VETH_HOST failed"
    ip link set "$VETH_HOST" up
    ip netns exec "$NS" ip addr add "$NS_ADDR/30" dev "$VETH_NS" || die "ip addr add in $NS failed"
    ip netns exec "$NS" ip link set "$VETH_NS" up
    ip netns exec "$NS" ip link set lo up
    # disable offloads so segments on the wire are what the stack sent
    if command -v ethtool >/dev/null 2>&1; then
        ethtool -K "$VETH_HOST" tso off gso off gro off >/dev/null 2>&1
        ip netns exec "$NS" ethtool -K "$VETH_NS" tso off gso off gro off >/dev/null 2>&1
    fi
    note "netns $NS: $VETH_HOST $HOST_ADDR/30 <-> $VETH_NS $NS_ADDR/30"
}

# wait_for_line FILE REGEX PID: poll FILE until a line matches, while PID lives.
wait_for_line() {
    local file=$1 re=$2 pid=$3 i
    for i in $(seq 200); do
        grep -Eq "$re" "$file" 2>/dev/null && return 0
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

# pcap_has_marker PCAP PORT: true once the capture file holds a UDP datagram
# to PORT (the marker proving tcpdump is capturing).
pcap_has_marker() {
    [ -s "$1" ] || return 1
    tcpdump -nr "$1" "udp port $2" 2>/dev/null | grep -q .
}
