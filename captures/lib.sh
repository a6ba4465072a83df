# shellcheck shell=bash
# captures/lib.sh - the capture-specific helpers (a network namespace behind
# a veth pair, the tcpdump liveness marker) on top of the kit's one shell
# library, scripts/lib.sh (require_command / require_root that skip with
# exit 4, stop_pid, kit_mktemp, kit_cleanup, wait_for_line, die, note).
#
# Every process, namespace and folder created here is recorded; cap_cleanup
# removes exactly those (by PID / by name), never anything else.

kit_name=${kit_name:-capture}
# shellcheck source=../scripts/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/scripts/lib.sh"

CAP_NETNS=""         # namespace we created
CAP_VETH=""          # host-side veth we created

# cap_cleanup: processes and temp folders (kit_cleanup), then our namespace
# and veth.  Install with: trap cap_cleanup EXIT, before any set-up.
cap_cleanup() {
    kit_cleanup
    if [ -n "$CAP_NETNS" ]; then
        ip netns pids "$CAP_NETNS" 2>/dev/null | while read -r p; do kill "$p" 2>/dev/null; done
        ip netns delete "$CAP_NETNS" 2>/dev/null
        CAP_NETNS=""
    fi
    if [ -n "$CAP_VETH" ]; then
        ip link delete "$CAP_VETH" 2>/dev/null
        CAP_VETH=""
    fi
}

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

# pcap_has_marker PCAP PORT: true once the capture file holds a UDP datagram
# to PORT (the marker proving tcpdump is capturing).
pcap_has_marker() {
    [ -s "$1" ] || return 1
    tcpdump -nr "$1" "udp port $2" 2>/dev/null | grep -q .
}
