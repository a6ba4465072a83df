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

# cap_cleanup: processes and temp folders (kit_cleanup), then our namespace
# (its veth pair goes with it).  Install with: trap cap_cleanup EXIT, before any set-up.
cap_cleanup() {
    kit_cleanup
    if [ -n "$CAP_NETNS" ]; then
        ip netns pids "$CAP_NETNS" 2>/dev/null | while read -r p; do kill "$p" 2>/dev/null; done
        ip netns delete "$CAP_NETNS" 2>/dev/null
        CAP_NETNS=""
    fi
}

# netns_setup: namespace fphs-XXXXXXXX behind a veth pair on a /30 of its
# own (scripts/veth-pair.sh: the kit's one allocator, under a lock, so that
# no other step's subnet shadows ours).
# Sets NS, VETH_HOST, VETH_NS, HOST_ADDR, NS_ADDR.
netns_setup() {
    local pair ns host_if ns_if host_addr ns_addr mtu
    require_command ip iproute2
    pair=$("$(dirname "${BASH_SOURCE[0]}")/../scripts/veth-pair.sh" fphs) || die "no veth pair (scripts/veth-pair.sh)"
    eval "$pair"
    NS=$ns VETH_HOST=$host_if VETH_NS=$ns_if HOST_ADDR=$host_addr NS_ADDR=$ns_addr
    CAP_NETNS=$NS
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
