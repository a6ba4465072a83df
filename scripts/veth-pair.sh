#!/usr/bin/env bash
# scripts/veth-pair.sh PREFIX [MTU|max] - a network namespace behind a veth
# pair on a /30 of its own: the one place the kit makes a link (captures,
# Horse's sample, the sweep's veth links).
#
# Prints, one per line, shell assignments the caller evals (Python splits
# them):  ns=  host_if=  ns_if=  host_addr=  ns_addr=  mtu=
# The namespace holds the peer end and its loopback (up); deleting the
# namespace (ip netns delete) removes the pair with it.
#
# Why one allocator: a /30 whose host-side address is already on another
# interface of this host is accepted by the kernel without a word, and its
# route then shadows ours -- a connection to our namespace goes into the
# other one.  The kit's steps run side by side (the sweep's two links, the
# fault step's sweep, Horse's samples, the captures), so the subnet is chosen
# and assigned under one lock, among the /30s of 10.200.0.0/15 that no
# address of this host's namespace is in.
set -u
kit_name=veth-pair
# shellcheck source=scripts/lib.sh
source "$(cd "$(dirname "$0")" && pwd)/lib.sh"

# addr_of N HOST: the address of host HOST (1 or 2) in the Nth /30 of
# 10.200.0.0/15 (N in 0..32767).
addr_of() {
    echo "10.$((200 + $1 / 16384)).$(( ($1 / 64) % 256 )).$(( ($1 % 64) * 4 + $2 ))"
}
# --address N: the host end's address in the Nth /30, and nothing made
# (tests/fault/veth-pair.sh takes that /30 with an interface of its own).
if [[ ${1:-} == --address ]]; then addr_of "${2:?--address N}" 1; exit 0; fi

prefix=${1:?usage: veth-pair.sh PREFIX [MTU|max] | veth-pair.sh --address N}
want_mtu=${2:-}
# Its standard output is the caller's to eval: a skip's line goes to stderr.
{ require_root veth-pair; require_command ip iproute2; require_command flock util-linux; } >&2

# 8 hex digits: link names stay within IFNAMSIZ (15) with a 3-letter stem.
id=$(rand_hex 4)
ns=$prefix-$id host_if=vh$id ns_if=vn$id
ip netns add "$ns" || die "ip netns add $ns failed"
ok=0
# shellcheck disable=SC2317  # runs from the trap
undo() { ((ok)) || ip netns delete "$ns" 2> /dev/null; }
trap undo EXIT
ip -n "$ns" link set lo up || die "lo up in $ns failed"
ip link add "$host_if" type veth peer name "$ns_if" netns "$ns" || die "ip link add $host_if failed"
if [[ $want_mtu == max ]]; then
    want_mtu=$(ip -d link show "$host_if" | grep -o 'maxmtu [0-9]*' | cut -d' ' -f2)
    [[ -n $want_mtu ]] || die "no maxmtu for $host_if"
fi
if [[ -n $want_mtu ]]; then
    { ip link set "$host_if" mtu "$want_mtu" && ip -n "$ns" link set "$ns_if" mtu "$want_mtu"; } ||
        die "mtu $want_mtu on $host_if failed"
fi

# used_30s: the /30 index (addr_of's N) of every IPv4 address in this
# namespace.
used_30s() {
    ip -o -4 addr show | awk '{ split($4, a, "[./]"); if (a[1] == 10 && (a[2] == 200 || a[2] == 201))
                                  print ((a[2] - 200) * 256 + a[3]) * 64 + int(a[4] / 4) }'
}
lock=/run/lock/kit-veth-pair.lock
mkdir -p /run/lock
exec 9> "$lock"
flock -w 30 9 || die "$lock not free within 30 s"
declare -A used=()
for n in $(used_30s); do used[$n]=1; done
# KIT_VETH_FIRST=N: the first /30 tried is N, not a random one (the check
# tests/fault/veth-pair.sh offers it one that is taken).
for ((try = 0; try < 200; try++)); do
    n=$(( 0x$(rand_hex 2) % 32768 ))
    ((try == 0)) && [[ ${KIT_VETH_FIRST:-} =~ ^[0-9]+$ ]] && n=$((KIT_VETH_FIRST % 32768))
    [[ -z ${used[$n]:-} ]] && break
done
[[ -z ${used[$n]:-} ]] || die "no free /30 in 10.200.0.0/15 after 200 tries"
host_addr=$(addr_of "$n" 1) ns_addr=$(addr_of "$n" 2)
ip addr add "$host_addr/30" dev "$host_if" || die "ip addr add $host_addr on $host_if failed"
flock -u 9
ip link set "$host_if" up || die "$host_if up failed"
{ ip -n "$ns" addr add "$ns_addr/30" dev "$ns_if" && ip -n "$ns" link set "$ns_if" up; } ||
    die "address on $ns_if in $ns failed"
mtu=$(cat "/sys/class/net/$host_if/mtu")
ok=1
printf 'ns=%s\nhost_if=%s\nns_if=%s\nhost_addr=%s\nns_addr=%s\nmtu=%s\n' \
    "$ns" "$host_if" "$ns_if" "$host_addr" "$ns_addr" "$mtu"
