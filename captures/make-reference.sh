#!/bin/bash
# captures/make-reference.sh - regenerate the committed reference captures.
#
# usage: captures/make-reference.sh [NAME...]   (default: all five)
#   stock-b3                stock, seq 5 requests: held-until-ack for 2..5, 2 sendto/response
#   stock-b2                stock, pipeline 3: 1 response, selects time out with a buffered request
#   set-tcp-nodelay         set-tcp-nodelay variant, seq 5: sent-before-ack, TCP_NODELAY, 2 sendto/response
#   coalesce-writes         coalesce-writes variant, seq 5: no held-until-ack, no TCP_NODELAY, 1 sendto/response
#   socket-handler-nodelay  stock --socket-handler nodelay, seq 5: TCP_NODELAY per connection
# Each goes to captures/reference/NAME/: wire.pcap, server.strace and the
# analysers' renderings (pcap.txt, pcap.json, ladder.txt, strace.txt, strace.json).
# Needs root (exit 4 otherwise) and the binaries (make).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
REF=$HERE/reference
ALL=(stock-b3 stock-b2 set-tcp-nodelay coalesce-writes socket-handler-nodelay)
[ $# -gt 0 ] && ALL=("$@")
rc=0
for name in "${ALL[@]}"; do
    out=$REF/$name
    case "$name" in
        stock-b3) args=(--scenario seq --probe-args "-n 5" --variant stock) ;;
        stock-b2) args=(--scenario pipeline --probe-args "-k 3 --deadline-ms 1500"
                        --variant stock --server-args "--keep-connection-timeout 1000") ;;
        set-tcp-nodelay) args=(--scenario seq --probe-args "-n 5" --variant set-tcp-nodelay) ;;
        coalesce-writes) args=(--scenario seq --probe-args "-n 5" --variant coalesce-writes) ;;
        socket-handler-nodelay) args=(--scenario seq --probe-args "-n 5" --variant stock
                                      --server-args "--socket-handler nodelay") ;;
        *) echo "make-reference: unknown reference '$name'" >&2; exit 2 ;;
    esac
    rm -rf -- "$out"
    "$HERE/capture.sh" "${args[@]}" --out "$out"
    r=$?
    [ $r -eq 4 ] && exit 4
    [ $r -eq 0 ] || { echo "make-reference: $name failed (exit $r)" >&2; rc=1; continue; }
    # keep only what is committed: the raw evidence and its renderings
    rm -f -- "$out"/probe.err "$out"/server.out "$out"/tcpdump.err
    sed -i "s|$out/||g; s|$HERE/||g" "$out"/pcap.txt "$out"/pcap.json "$out"/strace.txt "$out"/strace.json
done
exit $rc
