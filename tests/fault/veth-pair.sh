#!/usr/bin/env bash
# tests/fault/veth-pair.sh - scripts/veth-pair.sh never hands out a subnet
# another interface of this host holds (the fault it exists for: a second
# interface on a /30 is accepted without a word, and its route shadows the
# first, so a connection meant for one namespace reaches another).
#
#   - offered a /30 that another interface already holds (KIT_VETH_FIRST),
#     it takes another, and a connection from here to the pair's address
#     reaches a listener in that namespace (which answers with its name);
#   - eight at once: eight different /30s, and eight host routes each to
#     its own interface;
#   - every namespace is gone once deleted, the pair with it.
# Exit: 0 pass, 1 fail, 4 skip (not root, no ip).
set -u
kit_name=veth-pair-check
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"
require_root "veth-pair"
require_command ip iproute2 "veth-pair"
tmp="" dummy="" made=()
# shellcheck disable=SC2317  # runs from the trap
cleanup() {
    local ns
    for ns in "${made[@]}"; do ip netns delete "$ns" 2> /dev/null; done
    [[ -n $dummy ]] && ip link delete "$dummy" 2> /dev/null
    kit_cleanup
}
trap cleanup EXIT
kit_mktemp tmp
fail=0
check() {   # check NAME STATUS WHY
    if [[ $2 == 0 ]]; then test_ok "veth-pair: $1"; else fail=1; test_fail "veth-pair: $1" "$3"; fi
}
field() { sed -n "s/^$1=//p" "$2"; }
slash30() { echo "${1%.*}.$(( ${1##*.} / 4 ))"; }   # an address's /30, as a key

# A /30 taken by another interface (a veth pair of its own, both ends here:
# the dummy driver is not in every kernel), offered first.
n=$(( 0x$(rand_hex 2) % 32768 ))
taken=$("$top/scripts/veth-pair.sh" --address "$n")
dummy=kitvt$(rand_hex 3)
if ! { ip link add "$dummy" type veth peer name "${dummy}p" && ip addr add "$taken/30" dev "$dummy" && ip link set "$dummy" up; }; then
    test_fail "veth-pair: a taken subnet" "could not set up $dummy with $taken/30"; exit 1
fi
KIT_VETH_FIRST=$n "$top/scripts/veth-pair.sh" kitvt > "$tmp/one" 2> "$tmp/one.err"
rc=$?
ns=$(field ns "$tmp/one")
[[ -n $ns ]] && made+=("$ns")
got=$(field host_addr "$tmp/one")
[[ $rc == 0 && -n $got && $(slash30 "$got") != "$(slash30 "$taken")" ]]
check "a /30 another interface holds is not handed out" $? \
    "exit $rc, took $got where $dummy holds $taken/30: $(cat "$tmp/one.err")"
# listener NS ADDR: in NS, a socket on ADDR that answers its first client
# with NS's name; prints the port once it listens.  Only as 'listener ... &':
# exec makes $! the listener itself (ip netns exec execs too).
listener() {
    exec ip netns exec "$1" python3 -c '
import socket, sys
s = socket.socket()
s.bind((sys.argv[2], 0))
s.listen(1)
print(s.getsockname()[1], flush=True)
s.settimeout(10)
c, _ = s.accept()
c.sendall(sys.argv[1].encode())
c.close()' "$1" "$2"
}
if [[ -n $ns && -n $got ]]; then
    nsaddr=$(field ns_addr "$tmp/one")
    listener "$ns" "$nsaddr" > "$tmp/port" 2> "$tmp/listener.err" &
    KIT_PIDS+=($!)
    for _ in $(seq 100); do [[ -s $tmp/port ]] && break; sleep 0.05; done
    answer=$(python3 -c 'import socket, sys
with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5) as c:
    print(c.recv(100).decode())' "$nsaddr" "$(head -1 "$tmp/port")" 2>&1)
    [[ $answer == "$ns" ]]
    check "a connection to $nsaddr reaches its namespace" $? "answered '$answer' ($(cat "$tmp/listener.err"))"
fi

# Eight at once.
for i in 0 1 2 3 4 5 6 7; do
    "$top/scripts/veth-pair.sh" kitvt > "$tmp/p$i" 2> "$tmp/p$i.err" &
done
wait
subnets=() bad=""
for i in 0 1 2 3 4 5 6 7; do
    ns=$(field ns "$tmp/p$i") a=$(field host_addr "$tmp/p$i") dev=$(field host_if "$tmp/p$i")
    [[ -n $ns ]] && made+=("$ns")
    [[ -n $a ]] || { bad+=" run $i: $(cat "$tmp/p$i.err")"; continue; }
    subnets+=("$(slash30 "$a")")
    # The kernel's route to that /30 goes out of this pair's host end.
    ip route get "$(field ns_addr "$tmp/p$i")" | grep -q " dev $dev " || bad+=" $a not routed via $dev"
done
distinct=$(printf '%s\n' "${subnets[@]}" | sort -u | wc -l)
[[ -z $bad && $distinct == 8 ]]
check "eight at once: eight /30s, each routed to its own pair" $? "$distinct distinct;$bad"

# Deleting each namespace removes its pair.
hosts=()
for i in 0 1 2 3 4 5 6 7; do hosts+=("$(field host_if "$tmp/p$i")"); done
hosts+=("$(field host_if "$tmp/one")")
for ns in "${made[@]}"; do ip netns delete "$ns"; done
made=()
left=""
for h in "${hosts[@]}"; do
    [[ -n $h ]] || continue
    for _ in $(seq 50); do [[ -e /sys/class/net/$h ]] || break; sleep 0.1; done
    [[ -e /sys/class/net/$h ]] && left+=" $h"
done
[[ -z $left ]]
check "a deleted namespace takes its pair with it" $? "left:$left"
exit $((fail ? KSFT_FAIL : KSFT_PASS))
