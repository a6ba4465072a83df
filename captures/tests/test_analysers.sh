#!/bin/bash
# captures/tests/test_analysers.sh - offline, deterministic checks of the
# analysers: verdicts on the committed reference captures, and a clear
# one-line error with exit 1 on truncated / garbage / empty inputs.
# usage: captures/tests/test_analysers.sh  (from the repo root; needs build/pcap-analyse,
#        build/strace-analyse; runs build/test-capture-parsers if present)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REF=$ROOT/captures/reference
PA=$ROOT/build/pcap-analyse
SA=$ROOT/build/strace-analyse
pass=0 fail=0
TMP=$(mktemp -d /tmp/fphs-captest.XXXXXX)
trap 'rm -rf -- "$TMP"' EXIT

ok()   { echo "TEST: $1 [ OK ]"; pass=$((pass + 1)); }
bad()  { echo "TEST: $1 [FAIL] $2"; fail=$((fail + 1)); }
# jget FILE EXPR: python-free JSON lookups via the analyser's fixed key layout
jnum() { sed -n "s/.*\"$2\": \([0-9-]*\).*/\1/p" "$1" | head -n1; }
check() { # name actual expected
    if [ "$2" = "$3" ]; then ok "$1"; else bad "$1" "(got '$2', want '$3')"; fi
}

for b in "$PA" "$SA"; do
    [ -x "$b" ] || { echo "missing $b (make ${b#"$ROOT"/})"; exit 1; }
done

# --- verdicts on reference captures -----------------------------------
r=$REF/stock-b3
if [ -f "$r/wire.pcap" ]; then
    "$PA" --json "$r/wire.pcap" >"$TMP/p.json"
    check "stock-b3 responses" "$(jnum "$TMP/p.json" responses)" 5
    check "stock-b3 requests" "$(jnum "$TMP/p.json" requests)" 5
    check "stock-b3 held-until-ack" "$(jnum "$TMP/p.json" held-until-ack)" 4
    check "stock-b3 response 1 not held" \
        "$(grep -c '"conn": 1, "index": 1, "status": 200, "class": "held-until-ack"' "$TMP/p.json")" 0
    "$SA" --json "$r/server.strace" >"$TMP/s.json"
    check "stock-b3 2 sends per response" \
        "$(jnum "$TMP/s.json" sends_per_response_min)/$(jnum "$TMP/s.json" sends_per_response_max)" 2/2
    check "stock-b3 no TCP_NODELAY" "$(jnum "$TMP/s.json" tcp_nodelay_total)" 0
    check "stock-b3 listener SO_REUSEADDR" "$(grep -c '"listener_setsockopt": \["SO_REUSEADDR"\]' "$TMP/s.json")" 1
    "$PA" --ladder 2 "$r/wire.pcap" >"$TMP/l.txt"
    check "stock-b3 ladder shows delayed ACK then body" \
        "$(grep -c -e 'delayed ACK of header' -e 'body, released' "$TMP/l.txt")" 2
else
    bad "stock-b3 reference present" "(no $r/wire.pcap: run captures/make-reference.sh)"
fi

r=$REF/stock-b2
if [ -f "$r/wire.pcap" ]; then
    "$PA" --json "$r/wire.pcap" >"$TMP/p.json"
    check "stock-b2 3 requests on the wire, 1 response" \
        "$(jnum "$TMP/p.json" requests)/$(jnum "$TMP/p.json" responses)" 3/1
    "$SA" --json "$r/server.strace" >"$TMP/s.json"
    n=$(jnum "$TMP/s.json" timed_out_with_buffered_request_total)
    if [ "${n:-0}" -gt 0 ]; then ok "stock-b2 selects timed out with a buffered request ($n)"; else
        bad "stock-b2 selects timed out with a buffered request" "(got '$n')"; fi
    check "stock-b2 requests read / responses" \
        "$(jnum "$TMP/s.json" requests_read_total)/$(jnum "$TMP/s.json" responses_total)" 3/1
else
    bad "stock-b2 reference present" "(no $r/wire.pcap)"
fi

r=$REF/set-tcp-nodelay
if [ -f "$r/wire.pcap" ]; then
    "$PA" --json "$r/wire.pcap" >"$TMP/p.json"
    check "set-tcp-nodelay no held-until-ack" "$(jnum "$TMP/p.json" held-until-ack)" 0
    "$SA" --json "$r/server.strace" >"$TMP/s.json"
    check "set-tcp-nodelay TCP_NODELAY per connection" "$(jnum "$TMP/s.json" tcp_nodelay_total)" 1
    check "set-tcp-nodelay 2 sends per response" "$(jnum "$TMP/s.json" sends_per_response_max)" 2
else
    bad "set-tcp-nodelay reference present" "(no $r/wire.pcap)"
fi

r=$REF/coalesce-writes
if [ -f "$r/wire.pcap" ]; then
    "$PA" --json "$r/wire.pcap" >"$TMP/p.json"
    check "coalesce-writes no held-until-ack" "$(jnum "$TMP/p.json" held-until-ack)" 0
    "$SA" --json "$r/server.strace" >"$TMP/s.json"
    check "coalesce-writes no TCP_NODELAY" "$(jnum "$TMP/s.json" tcp_nodelay_total)" 0
    check "coalesce-writes 1 send per response" "$(jnum "$TMP/s.json" sends_per_response_max)" 1
else
    bad "coalesce-writes reference present" "(no $r/wire.pcap)"
fi

r=$REF/socket-handler-nodelay
if [ -f "$r/wire.pcap" ]; then
    "$PA" --json "$r/wire.pcap" >"$TMP/p.json"
    check "socket-handler-nodelay no held-until-ack" "$(jnum "$TMP/p.json" held-until-ack)" 0
    "$SA" --json "$r/server.strace" >"$TMP/s.json"
    check "socket-handler-nodelay TCP_NODELAY per connection" "$(jnum "$TMP/s.json" tcp_nodelay_total)" 1
fi

# --- Wine's Winsock on Linux (synthetic: written from strace's formats, not
# captured): wineserver accepts (another process), the program's thread
# receives with recvmsg, answers with 2 sendmsg (then one writev), waits with
# poll/ppoll/epoll_wait, and sets TCP_NODELAY before its first read.
w=$ROOT/captures/tests/fixtures/wine-synthetic.strace
"$SA" --json "$w" >"$TMP/w.json"
check "wine: accepts counted in the wineserver" "$(jnum "$TMP/w.json" accepts)" 1
check "wine: connection found by its traffic" "$(grep -c '"discovered": true' "$TMP/w.json")/$(grep -c '"conn":' "$TMP/w.json")" 1/1
check "wine: sendmsg/writev sends per response" "$(sed -n 's/.*"sends_per_response": \[\([0-9, ]*\)\].*/\1/p' "$TMP/w.json")" "2, 2, 1"
check "wine: TCP_NODELAY before the first read counts" "$(jnum "$TMP/w.json" tcp_nodelay_total)" 1
check "wine: poll/ppoll/epoll waits and timeouts" \
    "$(sed -n 's/.*"selects": {"count": \([0-9]*\), "timeouts": \[\([0-9, ]*\)\], "timed_out": \([0-9]*\).*/\1 [\2] \3/p' "$TMP/w.json")" \
    "4 [30000, 50, 100] 2"

# The shape of repro/fpc/win64-strace.md (a real Wine run, expanded to
# strace's full msghdr format; no clone lines): TCP_NODELAY on a transient
# dup in the accepting thread, data on another fd in the connection thread.
w=$ROOT/captures/tests/fixtures/wine-transient-fds.strace
"$SA" --json "$w" >"$TMP/w2.json"
check "wine transient fds: TCP_NODELAY counted" "$(jnum "$TMP/w2.json" tcp_nodelay_total)" 1
check "wine transient fds: one connection, accept handed over" \
    "$(grep -c '"conn":' "$TMP/w2.json")/$(jnum "$TMP/w2.json" handed_over)" 1/1
check "wine transient fds: 2 sendmsg per response" \
    "$(sed -n 's/.*"sends_per_response": \[\([0-9, ]*\)\].*/\1/p' "$TMP/w2.json")" 2

# The shape of /tmp/hang's horse trunk (win64) run whose sendto per response
# came out [1, 2] (a real Wine trace, cut to the calls that matter; strace
# -y as the kit now traces Windows programs): the program gets a fresh copy
# of the socket's fd for each call, a thread's exit frees a lower number,
# and the body's send goes out on fd 12 while the head went on fd 18.  The
# socket's inode ties them together; fd 18 later names another socket, a
# connection of its own.
w=$ROOT/captures/tests/fixtures/wine-renumbered-fd.strace
"$SA" --json "$w" >"$TMP/w3.json"
check "wine renumbered fd: 2 sends per response on each connection" \
    "$(grep -o '"sends_per_response": \[[0-9, ]*\]' "$TMP/w3.json" | tr '\n' ' ')" \
    '"sends_per_response": [2, 2] "sends_per_response": [2] '

# --- any fd, any number: 70,000 accepts (fds up to 70,003) and 20-digit
# values must count exactly, without undefined behaviour.
awk 'BEGIN {
    print "1 00:00:00.000001 socket(AF_INET, SOCK_STREAM, IPPROTO_IP) = 3 <0.000005>"
    print "1 00:00:00.000002 listen(3, 4096) = 0 <0.000005>"
    for (i = 0; i < 70000; i++)
        printf "1 00:00:01.%06d accept4(3, NULL, NULL, SOCK_CLOEXEC) = %d <0.000010>\n", i, 4 + i
    print "1 00:00:02.000000 read(99999999999999999999, \"x\", 1) = 99999999999999999999 <99999999999999999999.000001>"
    print "1 00:00:02.000001 setsockopt(70003, SOL_TCP, TCP_NODELAY, [1], 4) = 0 <0.000004>"
}' >"$TMP/70k.strace"
"$SA" --json "$TMP/70k.strace" >"$TMP/70k.json"
check "70,000 accepts counted" "$(jnum "$TMP/70k.json" accepts)" 70000
check "70,000 connections listed" "$(grep -c '"conn":' "$TMP/70k.json")" 70000
check "setsockopt on fd 70003 counted" "$(jnum "$TMP/70k.json" tcp_nodelay_total)" 1

# --- malformed inputs: exit 1 and exactly one line on stderr --------------
expect_err() { # name binary file
    local rc lines
    "$2" "$3" >/dev/null 2>"$TMP/err"
    rc=$?
    lines=$(wc -l <"$TMP/err")
    if [ "$rc" = 1 ] && [ "$lines" = 1 ]; then ok "$1 -> exit 1: $(cat "$TMP/err")"; else
        bad "$1" "(exit $rc, $lines stderr lines: $(head -c 200 "$TMP/err"))"; fi
}
: >"$TMP/empty"
printf 'this is not a capture\n' >"$TMP/garbage"
head -c 4096 /dev/urandom >"$TMP/random"
if [ -f "$REF/stock-b3/wire.pcap" ]; then
    head -c 300 "$REF/stock-b3/wire.pcap" >"$TMP/trunc.pcap"
    head -c 24 "$REF/stock-b3/wire.pcap" >"$TMP/hdronly.pcap"
    expect_err "pcap truncated" "$PA" "$TMP/trunc.pcap"
    expect_err "pcap no TCP (header only)" "$PA" "$TMP/hdronly.pcap"
    s=$(stat -c %s "$REF/stock-b3/server.strace")
    head -c $((s / 2)) "$REF/stock-b3/server.strace" >"$TMP/trunc.strace"
    expect_err "strace truncated" "$SA" "$TMP/trunc.strace"
fi
expect_err "pcap empty" "$PA" "$TMP/empty"
expect_err "pcap garbage" "$PA" "$TMP/garbage"
expect_err "pcap random bytes" "$PA" "$TMP/random"
expect_err "pcap missing file" "$PA" "$TMP/nonexistent"
expect_err "strace empty" "$SA" "$TMP/empty"
expect_err "strace garbage" "$SA" "$TMP/garbage"
expect_err "strace random bytes" "$SA" "$TMP/random"
"$PA" >/dev/null 2>&1; check "pcap usage error exit 2" $? 2
"$SA" >/dev/null 2>&1; check "strace usage error exit 2" $? 2

# --- capture.sh: --help, and argument errors reported once before anything
# starts (no output folder, no server, no tcpdump) -------------------------
CAP=$ROOT/captures/capture.sh
"$CAP" --help >"$TMP/help" 2>&1; check "capture.sh --help exits 0" "$?/$(grep -c '^usage: capture.sh' "$TMP/help")" 0/1
cap_usage() { # name expected-message args...
    local name=$1 want=$2 rc
    shift 2
    "$CAP" "$@" --out "$TMP/cap-out" >"$TMP/cap.out" 2>"$TMP/cap.err"
    rc=$?
    if [ "$rc" = 2 ] && [ "$(grep -c "$want" "$TMP/cap.err")" = 1 ] && [ ! -e "$TMP/cap-out" ] &&
        [ ! -s "$TMP/cap.out" ]; then ok "capture.sh $name -> exit 2: $(head -n1 "$TMP/cap.err")"; else
        bad "capture.sh $name" "(exit $rc, stderr: $(tr '\n' ' ' <"$TMP/cap.err" | head -c 200), out dir $([ -e "$TMP/cap-out" ] && echo created || echo absent))"; fi
}
cap_usage "--scenario bogus" "unknown scenario 'bogus'" --scenario bogus --variant stock
cap_usage "bad probe args" "invalid value 'x' for -n" --scenario seq --probe-args "-n x" --variant stock
cap_usage "unknown option" "unknown argument '--bogus'" --bogus --scenario seq --variant stock
cap_usage "no server" "need --variant NAME or --server CMD" --scenario seq

# --- unit tests of the pure parsers (CUnit) -------------------------------
if [ -x "$ROOT/build/test-capture-parsers" ]; then
    if "$ROOT/build/test-capture-parsers" >"$TMP/cu.txt" 2>&1; then ok "CUnit parser suites"; else
        bad "CUnit parser suites" "($(grep -c FAILED "$TMP/cu.txt") failed; see build/test-capture-parsers)"; fi
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
