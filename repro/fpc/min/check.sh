#!/usr/bin/env bash
# repro/fpc/min/check.sh [bN...] - prove the minimal Pascal reproducers.
#
# Each bN.lpr here shows defect BN with fphttpserver and one stock command,
# written in its header ("Command:", and for B3 a "Control:").  For each
# program (default: every defect the kit measures, defects.DEFECTS):
#   - build it with the trunk toolchain (build/fpc-trunk/bin/fpc) on the
#     stock snapshot and with each patch whose Defect: is BN
#     (repro/harness/patchset.py; a patch's Needs: is added, and a patch that has a
#     Needs: is also run without it, where the defect must stay);
#   - build it with Debian's FPC 3.2.2 where the kit's 3.2.2 row
#     (repro/harness/matrix.py) expects the defect, or expects it absent (then the
#     program must show it absent: "not affected");
#   - run each build with the header's command and judge (as root in a
#     network namespace per case, on 8080, the command exactly as printed;
#     otherwise on a free port substituted for 8080)
#     by counts in that command's output (responses, hook lines, headers),
#     for B3 by the same-run ratio of reused to fresh-connection lower quartiles
#     with the kit's bounds (repro/harness/kit.py).  An inconclusive run is made
#     once more on a new server, and the second decides;
#   - a command that runs nc or curl is run once per variant of that tool
#     found here (nc: OpenBSD netcat, ncat, traditional netcat; curl: the
#     one on PATH and each binary in MIN_CURLS, e.g. a curl 8 beside
#     Debian 12's curl 7), the variant first on PATH under the name the
#     command uses: the answer must not depend on the client's habits
#     (ncat half-closes at the end of its input, OpenBSD nc does not);
#   - the command in the tracker text (repro/report/upstream_texts.py reproduce())
#     must be the header's, whole: what is run is what is printed.
# Builds are cached in build/min/<toolchain>/<set>/ (key: the toolchain's
# identity, the set's patches, the program, repro/fpc/build.sh); the last
# run's raw outputs are in results/min/.
# Output: 'TEST: min bN <toolchain> <set> ... [ OK ]' lines; exit 0 pass,
# 1 a failure, 4 skip (no trunk toolchain or a missing client tool).
set -uo pipefail
kit_name=min
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"
trap kit_cleanup EXIT
trap 'exit 143' TERM INT

require_command bash bash min
require_command ss iproute2 min
require_command timeout coreutils min
TRUNK=$top/build/fpc-trunk/bin/fpc
if [[ ! -x $TRUNK ]]; then
    test_skip min "no trunk toolchain $TRUNK (make fpc-trunk)"
    exit "$KSFT_SKIP"
fi
FPC322=/usr/bin/fpc
T322=""
[[ -x $FPC322 ]] && T322=fpc-$("$FPC322" -iV)
RESULTS=$top/results/min
WATCHDOG_S=60          # a command still running then has hung: a failure
JOBS=${MIN_JOBS:-8}    # cases run at once (most of their time is waiting)
FD_LIMIT=4096          # B8 holds 1,101 connections
cd "$top" || exit 1
read -r STALL CLEAN < <(python3 -c 'import sys; sys.path.insert(0, "repro/harness"); import kit
print(kit.B3_STALL_RATIO, kit.B3_CLEAN_RATIO)') || die "cannot read the B3 bounds from repro/harness/kit.py"

# header_line PROG FIELD: the one-line value of "  FIELD:  ..." in PROG's header.
header_line() { sed -n "s/^  $2:  //p" "$here/$1.lpr" | head -1; }

# tool_of PROG: the client tool PROG's command and control run (nc or
# curl), or nothing (bash and coreutils only).
tool_of() {
    local c
    c=" $(header_line "$1" Command) $(header_line "$1" Control) "
    if [[ $c =~ [^[:alnum:]_./-]nc[[:space:]] ]]; then echo nc
    elif [[ $c =~ [^[:alnum:]_./-]curl[[:space:]] ]]; then echo curl; fi
}

# The variants of a tool, 'TOOL NAME BINARY' lines; each gets a shim folder
# (clients/NAME/TOOL -> BINARY) that run_cmd puts first on PATH.
client_variants() {
    local b v
    for b in nc.openbsd ncat nc.traditional; do
        b=$(command -v "$b") || continue
        case $b in *openbsd) v=nc-openbsd ;; *ncat) v="ncat-$(ncat --version 2>&1 | awk '{print $3; exit}')" ;; *) v=nc-traditional ;; esac
        echo "nc $v $b"
    done
    for b in $(command -v curl) ${MIN_CURLS:-}; do
        [[ -x $b ]] || { note "MIN_CURLS: $b is not executable"; continue; }
        echo "curl curl-$("$b" --version | awk '{print $2; exit}') $b"
    done
}

fpc_of() { if [[ $1 == trunk ]]; then echo "$TRUNK"; else echo "$FPC322"; fi; }

# The 3.2.2 verdicts the kit expects (repro/harness/matrix.py's 3.2.2 row), one
# 'Bn state' a line.  The row is made for every built fpc-3.* server; a
# stand-in folder makes it without one.
expect_322() {
    python3 - "${T322#fpc-}" <<'PY'
import pathlib, sys, tempfile
sys.path.insert(0, "repro/harness")
import kit, matrix
with tempfile.TemporaryDirectory() as d:
    exe = pathlib.Path(d) / f"fpc-{sys.argv[1]}" / "fpserver"
    exe.parent.mkdir()
    exe.touch()
    kit.BUILD = pathlib.Path(d)
    rows = matrix.fpc322_rows()
for defect, state in rows[0].expect.items():
    print(defect, state)
PY
}

# build PROG TOOL SET: the program built (cached), its path on stdout.
build() {
    local prog=$1 tool=$2 set=$3 fpc out key n
    fpc=$(fpc_of "$tool")
    out=$top/build/min/$tool/$set
    key=$({ "$fpc" -iW; cat "$(dirname "$(dirname "$fpc")")/stamp" 2>/dev/null; echo "$set"
            for n in ${set//+/ }; do [[ $n == stock ]] || cat "patches/fpc/$n.patch" "patches/fpc/$n".*.patch 2>/dev/null; done
            cat "$here/$prog.lpr" repro/fpc/build.sh; } | sha256sum | cut -c1-16)
    if [[ -x $out/$prog && $(cat "$out/$prog.key" 2>/dev/null) == "$key" ]]; then
        echo "$out/$prog"
        return 0
    fi
    mkdir -p "$out"
    rm -f "$out/$prog.key" "$out/$prog"
    nice -n 5 repro/fpc/build.sh --fpc "$fpc" --program "$here/$prog.lpr" --set "$set" \
        --out "$out" > "$out/$prog.build.log" 2>&1 || return 1
    echo "$key" > "$out/$prog.key"
    echo "$out/$prog"
}

free_port() {   # a port nothing uses, below the ephemeral range
    local p
    while :; do
        p=$((20000 + RANDOM % 12000))
        ss -Htan "sport = :$p" | grep -q . || { echo "$p"; return; }
    done
}

forget_pid() {
    local i
    for i in "${!KIT_PIDS[@]}"; do [[ ${KIT_PIDS[$i]} == "$1" ]] && unset 'KIT_PIDS[i]'; done
    KIT_PIDS=("${KIT_PIDS[@]}")
}
stop_server() { stop_pid "$1" TERM; forget_pid "$1"; }

# A case runs in a network namespace of its own where it can (root): the
# program listens on 8080 and the header's command runs exactly as the
# text prints it.  Elsewhere the port is a free one, substituted for 8080.
NETNS_OK=0
if ((EUID == 0)) && ip netns add "kitmin-$$-probe" 2>/dev/null; then
    ip netns del "kitmin-$$-probe"
    NETNS_OK=1
fi
IN=()   # the prefix that runs a command in the case's namespace, if any

# case_netns N: a namespace for case N with its loopback up; sets IN.
case_netns() {
    local ns=kitmin-$$-$1
    IN=()
    ((NETNS_OK)) || return 0
    ip netns add "$ns" && KIT_NETNS+=("$ns") && ip -n "$ns" link set lo up || return 1
    IN=(ip netns exec "$ns")
}

# start_server EXE LOG: sets SRV_PID and SRV_PORT once the program has
# printed its port and its socket listens (polled; another port if the
# bind failed).
start_server() {
    local exe=$1 log=$2 port i _
    for _ in 1 2 3 4 5; do
        if ((${#IN[@]})); then port=8080; else port=$(free_port); fi
        ( ulimit -n $FD_LIMIT 2>/dev/null; exec "${IN[@]}" "$exe" "$port" ) > "$log" 2>&1 &
        SRV_PID=$!
        KIT_PIDS+=("$SRV_PID")
        if wait_for_line "$log" "listening on 127\.0\.0\.1:$port\$" "$SRV_PID"; then
            for ((i = 0; i < 200; i++)); do
                kill -0 "$SRV_PID" 2>/dev/null || break
                if "${IN[@]}" ss -Hltnp "sport = :$port" | grep -q "pid=$SRV_PID,"; then
                    SRV_PORT=$port
                    return 0
                fi
                sleep 0.05
            done
        fi
        stop_server "$SRV_PID"
    done
    return 1
}

# run_cmd CMD OUT: CMD in bash, stdout to OUT, stderr to OUT.err; 1 if the
# watchdog had to end it.
run_cmd() {
    local pid rc
    PATH=${SHIM:+$SHIM:}$PATH timeout "$WATCHDOG_S" "${IN[@]}" bash -c "$1" > "$2" 2> "$2.err" &
    pid=$!
    KIT_PIDS+=("$pid")
    wait "$pid"
    rc=$?
    forget_pid "$pid"
    ((rc != 124 && rc != 137))
}

# judge_bN OUT LOG: 'defect|fixed|inconclusive <figure>' from the command's
# output OUT (and OUT.ctl, the control's) and the server's output LOG.
judge_b1() {
    local hooks reqs
    hooks=$(grep -c '^OnAllowConnect' "$2") reqs=$(grep -c '^request' "$2")
    local fig="$reqs requests, $hooks OnAllowConnect lines"
    if ((reqs != 3)); then echo "inconclusive $fig"
    elif ((hooks == 0)); then echo "defect $fig"
    elif ((hooks == reqs)); then echo "fixed $fig"
    else echo "inconclusive $fig"; fi
}
judge_count() {   # judge_count OUT ALL WHAT MIN MAX: a grep -c output; the defect: MIN..MAX
    local n
    n=$(head -1 "$1")
    local fig="$n of $2 $3 answered"
    if [[ $n == "$2" ]]; then echo "fixed $fig"
    elif [[ $n =~ ^[0-9]+$ ]] && ((n >= $4 && n <= $5)); then echo "defect $fig"
    else echo "inconclusive $fig"; fi
}
# The kit's rules (repro/harness/kit.py measure_b2, measure_b5): B2 is 1 answer of
# 3; B5 fewer than 2 (FPC 3.2.2 answers neither).
judge_b2() { judge_count "$1" 3 "pipelined requests" 1 1; }
judge_b5() { judge_count "$1" 2 "requests (POST+GET in one send)" 0 1; }
# B3 is decided on the lower quartile (the 5th fastest of 19) of each
# kind, as the kit's curl client is (repro/harness/clients.py curl_figure):
# a stall holds every reused request for the delayed-ACK period (but for
# one now and then that a quick ACK lets through), while a loaded machine
# delays some requests of either kind.  Medians moved under the suite's
# load: fresh medians of 1-4 ms beside a sanitizer build, 0.4 ms quiet.
judge_b3() {
    awk -v stall="$STALL" -v clean="$CLEAN" '
        function sort(a, n,   i, j, t) {
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        }
        function median(a, n) { return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
        function quartile(a, n) { return a[int((n + 3) / 4)] }
        FNR == 1 { file++ }
        file == 1 && FNR == 1 { first = $1 }
        file == 1 && FNR > 1 { r[++nr] = $2; if ($1 != 0) bad++ }
        file == 2 { if ($1 != 1) bad++; if (FNR > 1) f[++nf] = $2 }
        END {
            if (first != 1 || nr < 2 || nf != nr || bad) {
                printf "inconclusive reuse not proven (num_connects: first %s, %d reused, %d fresh, %d wrong)\n", first, nr, nf, bad
                exit
            }
            sort(r, nr); sort(f, nf)
            qr = quartile(r, nr); qf = quartile(f, nf); q = qr / qf
            fig = sprintf("requests 2..%d on one connection: lower quartile %.3f ms (median %.3f), %.1fx the fresh-connection lower quartile %.3f ms (median %.3f)",
                          nr + 1, qr * 1000, median(r, nr) * 1000, q, qf * 1000, median(f, nf) * 1000)
            print (q >= stall ? "defect" : q <= clean ? "fixed" : "inconclusive"), fig
        }' "$1" "$1.ctl"
}
judge_b4() {   # the response heads (curl -D -) and each transfer's num_connects
    local ok closes conns
    ok=$(grep -c '^HTTP/1.1 200' "$1") closes=$(grep -ic '^Connection: close' "$1")
    conns=$(awk '$1 == "num_connects" { n += $2 } END { print n + 0 }' "$1")
    local fig="$ok responses on $conns connections, $closes with 'Connection: close'"
    if ((ok != 2 || conns != 2)); then echo "inconclusive $fig (want 2 responses, the server closing after each)"
    elif ((closes == 0)); then echo "defect $fig"
    elif ((closes == 2)); then echo "fixed $fig"
    else echo "inconclusive $fig"; fi
}
judge_b6() {
    local got
    got=$(paste -sd, "$1")
    if [[ $got == "200 1,200 0" ]]; then echo "fixed http_code num_connects: $got"
    elif [[ $got == "200 1,000 0" ]]; then echo "defect http_code num_connects: $got (request 2 unanswered)"
    else echo "inconclusive http_code num_connects: $got"; fi
}
judge_b9() {   # the 3 requests' 'code num_connects' lines; the program's OnAcceptIdle line
    local got hook
    got=$(paste -sd, "$1") hook=$(grep -c '^OnAcceptIdle' "$2")
    local fig="http_code num_connects: $got; the application's OnAcceptIdle ran: $((hook > 0))"
    if [[ $got == "200 1,200 0,200 0" ]] && ((hook > 0)); then echo "fixed $fig"
    elif [[ $got == "200 1,200 0,000 0" ]]; then echo "defect $fig (request 3 unanswered)"
    else echo "inconclusive $fig"; fi
}
judge_b7() {   # 'N code' lines of the burst, then the 3 requests' codes
    local burst ok last got
    burst=$(awk '$2 == 200 { n = $1 } END { print n + 0 }' "$1")
    got=$(awk 'NF == 1' "$1" | paste -sd' ') ok=$(grep -c '^200$' "$1") last=$(tail -1 "$1")
    local fig="$burst of 32 answered at once; then, after they closed together: $got"
    if ((burst == 0)) && [[ $got != 200* ]]; then echo "inconclusive $fig (nothing answered)"
    elif ((ok == 3)); then echo "fixed $fig"
    elif [[ $last == 000 ]]; then echo "defect $fig (hung)"
    else echo "inconclusive $fig"; fi
}
judge_b8() {
    local first last
    first=$(sed -n 1p "$1") last=$(sed -n 2p "$1")
    local fig="first: '${first%$'\r'}', last: '${last%$'\r'}'"
    if [[ $first != *'HTTP/1.1 200'* ]]; then echo "inconclusive $fig (control unanswered)"
    elif [[ $last == *'HTTP/1.1 200'* ]]; then echo "fixed $fig"
    else echo "defect $fig"; fi
}

judge_b10() {   # curl -D -: every response's head (an interim 100 included), then time_total
    local c100 ok len secs
    c100=$(grep -c '^HTTP/1.1 100' "$1") ok=$(grep -c '^HTTP/1.1 200' "$1")
    len=$(tr -d '\r' < "$1" | awk -F': ' 'tolower($1) == "content-length" { print $2 }' | paste -sd,)
    secs=$(awk '$1 == "time_total" { print $2 }' "$1")
    local fig="$c100 interim 'HTTP/1.1 100 Continue', $ok 'HTTP/1.1 200' (Content-Length $len), time_total $secs s"
    if ((ok != 1)); then echo "inconclusive $fig (want one 200)"
    elif ((c100 == 0)); then echo "defect $fig"
    elif ((c100 == 1)); then echo "fixed $fig"
    else echo "inconclusive $fig"; fi
}

judge_b11() {   # the status lines of every response on the connection, until it closed
    local lines first
    lines=$(grep -c '^HTTP/1.1 ' "$1") first=$(sed -n 1p "$1")
    local fig="$lines response(s), the first '${first%$'\r'}'"
    if [[ $first == 'HTTP/1.1 200' ]]; then echo "defect $fig (the ambiguous POST dispatched)"
    elif [[ $first == 'HTTP/1.1 400' ]] && ((lines == 1)); then echo "fixed $fig"
    else echo "inconclusive $fig"; fi
}

judge_b12() {   # the status line and body of any response; the program's 'request:' lines
    local lines body reqs
    lines=$(grep -c '^HTTP/1.1 ' "$1") body=$(grep -a -m1 -E '^[0-9]+ bytes' "$1") reqs=$(grep -c '^request:' "$2")
    local fig="$lines response(s)${body:+ ('$body')}, $reqs dispatched"
    if grep -q '^HTTP/1.1 200' "$1" && ((reqs == 1)); then echo "defect $fig (10 of 100 bytes, then the end of the stream)"
    elif ((lines == 0 && reqs == 0)) && [[ ! -s $1 ]]; then echo "fixed $fig"
    else echo "inconclusive $fig"; fi
}

judge_b13() {   # grep -c: the answers on one connection, to a GET with "Connection: keep-alive, close" and one after it
    local n
    n=$(head -1 "$1")
    local fig="$n of 2 GETs answered on one connection (the first with 'Connection: keep-alive, close')"
    if [[ $n == 2 ]]; then echo "defect $fig (it stayed open)"
    elif [[ $n == 1 ]]; then echo "fixed $fig (closed after the first)"
    else echo "inconclusive $fig"; fi
}

judge_b14() {   # awk's lines: the HEAD response's Content-Length, the bytes that came after its head
    local cl after
    cl=$(awk '$1 == "Content-Length:" { print $2; exit }' "$1") after=$(awk '/^bytes after the head:/ { print $NF }' "$1")
    local fig="the response to HEAD: Content-Length ${cl:-none}, ${after:-no count of the} bytes after its head"
    if [[ ! $cl =~ ^[0-9]+$ ]] || ((cl == 0)) || [[ ! $after =~ ^[0-9]+$ ]]; then
        echo "inconclusive $fig (want the Content-Length a GET gets, and a count)"
    elif ((after == 0)); then echo "fixed $fig"
    elif ((after == cl)); then echo "defect $fig (the content a GET gets)"
    else echo "inconclusive $fig"; fi
}

# settle_bN LOG PID (if defined): what the program does on its own after the
# command, waited for before it is stopped.  B15: the program frees its
# server once the command has stopped the accept loop; FREE_WAIT_S bounds
# the wait for its "Free returned" line (the fix: about 1 s).
FREE_WAIT_S=10
settle_b15() { wait_for_line "$1" '^b15: Free returned' "$2" $((FREE_WAIT_S * 20)) || true; }

judge_b15() {   # the command's two status lines and its kept-alive connection's end; the program's lines
    local ok closed freeing returned
    ok=$(grep -c 'HTTP/1.1 200' "$1") closed=$(grep -c '^kept-alive connection closed by the server' "$1")
    freeing=$(grep -c '^b15: freeing the server' "$2") returned=$(grep -c '^b15: Free returned' "$2")
    local fig="$ok of 2 GETs answered, kept-alive connection closed: $closed; the program: 'freeing the server' $freeing, 'Free returned' $returned within $FREE_WAIT_S s"
    if ((ok != 2 || freeing != 1)); then echo "inconclusive $fig (want both answered and the accept loop stopped)"
    elif ((returned == 1 && closed == 1)); then echo "fixed $fig"
    elif ((returned == 0)); then echo "defect $fig (Free never returned)"
    else echo "inconclusive $fig"; fi
}

judge_b17() {   # "[sent N of M bytes, longest gap G ms]" of a head dripped 3 bytes every 100 ms (RequestReadTimeout 1000), what came back, cat's exit
    local sent of gap lines first ex
    read -r sent of gap < <(sed -n 's/^\[sent \([0-9]*\) of \([0-9]*\) bytes, longest gap \([0-9]*\) ms\]$/\1 \2 \3/p' "$1")
    lines=$(grep -ac '^HTTP/1.1 ' "$1") first=$(grep -a -m1 '^HTTP/1.1 ' "$1") ex=$(sed -n 's/^\[cat exit \([0-9]*\)\]$/\1/p' "$1")
    local fig="sent ${sent:-?} of ${of:-?} bytes of the head, longest gap ${gap:-?} ms, $lines response(s)${first:+, the first '${first%$'\r'}'}, cat exit ${ex:-none}"
    # Counts: the whole head sent and its 200 is the defect; the server's
    # answer (408) or close before the head was whole is the fix.  Each gap
    # is a tenth of the time-out, so only a deadline on the head cuts it;
    # a client that stalled half the time-out itself measured nothing.
    if [[ -z $sent || -z $of || -z $gap || ( $ex != 0 && $ex != 1 ) ]]; then
        echo "inconclusive $fig (want the sent count, the longest gap and the end of the stream)"
    elif ((gap >= 500)); then
        echo "inconclusive $fig (the client itself stalled: half the 1000 ms time-out)"
    elif ((sent == of && lines == 1)) && [[ $first == 'HTTP/1.1 200'* ]]; then echo "defect $fig (the whole dripped head was read)"
    elif ((sent < of)) && { ((lines == 0)) || [[ $lines == 1 && $first == 'HTTP/1.1 408'* ]]; }; then
        echo "fixed $fig (cut before the head was complete)"
    else echo "inconclusive $fig"; fi
}

judge_b16() {   # what the server sent for a request line with FTP/1.0 until it closed; cat's exit
    local lines first close ex
    lines=$(grep -c '^HTTP/1.1 ' "$1") first=$(grep -a -m1 '^HTTP/1.1 ' "$1") ex=$(sed -n 's/^\[cat exit \([0-9]*\)\]$/\1/p' "$1")
    close=$(tr -d '\r' < "$1" | grep -ci '^connection: close$')
    local fig="$lines response(s)${first:+, the first '${first%$'\r'}'}, Connection: close $close, cat exit ${ex:-none}"
    # The claim is the status (or none) before the end of the stream, which
    # may come as a reset (cat's read fails, exit 1) as well as a close: the
    # server may close before it has read the whole request (the command
    # ignores SIGPIPE, so its write fails instead of killing it); a time-out
    # (124) or no "[cat exit" line at all decides nothing.
    if ((lines == 1 && close == 1)) && [[ $first == 'HTTP/1.1 400'* ]] && [[ $ex == 0 || $ex == 1 ]]; then
        echo "fixed $fig"
    elif [[ $ex != 0 && $ex != 1 ]]; then echo "inconclusive $fig (want the end of the stream: exit 0, or 1 for a reset)"
    elif ((lines == 0)) && [[ $(grep -avc '^\[cat exit' "$1") == 0 ]]; then echo "defect $fig (closed without a byte)"
    else echo "inconclusive $fig"; fi
}

judge_b18() {   # what the server sent for a CRLF and a GET in one write until it closed; cat's exit; the program's 'request:' lines
    local lines first ex reqs
    lines=$(grep -ac '^HTTP/1.1 ' "$1") first=$(grep -a -m1 '^HTTP/1.1 ' "$1") reqs=$(grep -c '^request:' "$2")
    ex=$(sed -n 's/.*\[cat exit \([0-9]*\)\]$/\1/p' "$1")
    local fig="$lines response(s)${first:+, the first '${first%$'\r'}'}, $reqs dispatched, cat exit ${ex:-none}"
    # Counts before the end of the stream (a close, or a reset: the server
    # may close with the GET unread; the command ignores SIGPIPE): the GET
    # answered 200 and dispatched once is the fix, nothing sent and nothing
    # dispatched the defect; a time-out (124) or no "[cat exit" line decides
    # nothing.
    if [[ $ex != 0 && $ex != 1 ]]; then echo "inconclusive $fig (want the end of the stream: exit 0, or 1 for a reset)"
    elif ((lines == 1 && reqs == 1)) && [[ $first == 'HTTP/1.1 200'* ]]; then echo "fixed $fig"
    elif ((lines == 0 && reqs == 0)) && [[ $(grep -avc '\[cat exit' "$1") == 0 ]]; then echo "defect $fig (closed without a byte)"
    else echo "inconclusive $fig"; fi
}

judge_b19() {   # the slot holder's status line, one 503's head (curl -D -), then 'N CODE exit E' lines of 100 GETs
    local held n503 cl total ok failed other
    held=$(grep -ac '^HTTP/1.1 200' "$1") n503=$(grep -ac '^HTTP/1.1 503' "$1")
    cl=$(tr -d '\r' < "$1" | awk 'tolower($1) == "content-length:" { print $2; exit }')
    read -r total ok failed other < <(awk '$3 == "exit" && $1 ~ /^[0-9]+$/ { t += $1
        if ($2 == 503 && $4 == 0) o += $1; else if ($2 == 503) f += $1; else x += $1 }
        END { print t + 0, o + 0, f + 0, x + 0 }' "$1")
    local fig="slot held: $held x 200; the 503's head: Content-Length ${cl:-none}; of $total GETs: $ok '503 exit 0', $failed 503 with the transfer failed, $other other"
    # Structure and counts: the 503 says its length or not, and how many of
    # the 100 transfers of it failed (curl exit 56: the reset came before
    # the end it waited for).  Every GET must have met the 503 (the slot
    # held), else the run says nothing.
    if ((held != 1 || n503 != 1 || total != 100 || other != 0)); then
        echo "inconclusive $fig (want the slot held and every GET answered 503)"
    elif [[ $cl == 59 ]] && ((failed == 0)); then echo "fixed $fig"
    elif [[ -z $cl ]] && ((failed > 0)); then echo "defect $fig (close-delimited, cut by the reset)"
    else echo "inconclusive $fig"; fi
}

judge_b20() {   # what the server sent for an absolute-form GET (Host: x) until it closed; cat's exit; the program's 'request:' line
    local first body ex port reqs url path host
    first=$(grep -a -m1 '^HTTP/1.1 ' "$1") ex=$(sed -n 's/.*\[cat exit \([0-9]*\)\]$/\1/p' "$1")
    body=$(tr -d '\r' < "$1" | sed -e '1,/^$/d' -e 's/\[cat exit [0-9]*\]$//')
    port=$(sed -n 's/^b20: listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$2")
    reqs=$(grep -c '^request:' "$2")
    read -r url path host < <(sed -n 's/^request: URL \(.*\) PathInfo \(.*\) Host \(.*\)$/\1 \2 \3/p' "$2")
    local fig="${first:+'${first%$'\r'}', }body '$body', $reqs dispatched (URL ${url:-?}, PathInfo ${path:-?}, Host ${host:-?}), cat exit ${ex:-none}"
    # The answer and what the application was given, one request: the
    # route's 200 with PathInfo /ping, the URL as sent and the Host the
    # target's is the fix; a 404 for a PathInfo /http://... the defect.
    if [[ $ex != 0 && $ex != 1 ]] || [[ -z $port ]] || ((reqs != 1)); then
        echo "inconclusive $fig (want one request dispatched and the end of the stream)"
    elif [[ $first == 'HTTP/1.1 200'* && $body == pong && $path == /ping &&
            $url == "http://127.0.0.1:$port/ping" && $host == "127.0.0.1:$port" ]]; then echo "fixed $fig"
    elif [[ $first == 'HTTP/1.1 404'* && $path == "/http://127.0.0.1:$port/ping" ]]; then
        echo "defect $fig (the absolute-form target routed as a path)"
    else echo "inconclusive $fig"; fi
}

judge_b21() {   # the 2 requests' 'code num_connects' lines (the second with -m 2; the program's tick is 5 s)
    local got
    got=$(paste -sd, "$1")
    local fig="http_code num_connects: $got"
    # A count: the kept-alive request answered within its 2 s or not (the
    # tick that reads it comes 5 s after the first was served).  The first
    # has 7 s, a tick and more: not answered, the run says nothing.
    if [[ $got == "200 1,200 0" ]]; then echo "fixed $fig"
    elif [[ $got == "200 1,000 0" ]]; then echo "defect $fig (the kept-alive request waits for the tick)"
    else echo "inconclusive $fig"; fi
}

# one_run PROG EXE TAG: start, the command(s), what the program does after
# them (settle_PROG, if any), stop, judge; sets VERDICT.
# (Not in a $(...): the servers and clients it starts must stay this
# shell's, for its cleanup.)
one_run() {
    local prog=$1 exe=$2 cmd ctl base=$RESULTS/$3
    VERDICT="inconclusive the server did not start (see $base.server.log)"
    start_server "$exe" "$base.server.log" || return
    cmd=$(header_line "$prog" Command) ctl=$(header_line "$prog" Control)
    if ! run_cmd "${cmd//8080/$SRV_PORT}" "$base.out" ||   # in a namespace, SRV_PORT is 8080
       { [[ -n $ctl ]] && ! run_cmd "${ctl//8080/$SRV_PORT}" "$base.out.ctl"; }; then
        stop_server "$SRV_PID"
        VERDICT="hung the command still ran after ${WATCHDOG_S} s"
        return
    fi
    if declare -F "settle_$prog" > /dev/null; then "settle_$prog" "$base.server.log" "$SRV_PID"; fi
    stop_server "$SRV_PID"
    VERDICT=$("judge_$prog" "$base.out" "$base.server.log")
}

# case PROG TOOL SET WANT CLIENT NAME: one TEST line.  WANT: defect or
# fixed; CLIENT: the client variant (- for none).
run_case() {
    local prog=$1 tool=$2 set=$3 want=$4 client=$5 name=$6 exe state fig first="" SHIM=""
    [[ $client != - ]] && SHIM=$tmp/clients/$client
    if [[ $prog == b8 ]] && [[ $(ulimit -Hn) != unlimited ]] && (($(ulimit -Hn) < FD_LIMIT)); then
        test_skip "$name" "hard descriptor limit $(ulimit -Hn) below $FD_LIMIT"
        return
    fi
    exe=$top/build/min/$tool/$set/$prog
    if [[ ! -x $exe ]]; then
        test_fail "$name" "no build ($(tail -1 "$top/build/min/$tool/$set/$prog.build.log" 2>/dev/null))"
        return
    fi
    local base=$prog-$tool-$set${SHIM:+-$client}
    one_run "$prog" "$exe" "$base"
    if [[ $VERDICT == inconclusive* ]]; then
        first=" (second run; the first: ${VERDICT#* })"
        one_run "$prog" "$exe" "$base-again"
    fi
    state=${VERDICT%% *} fig=${VERDICT#* }$first
    if [[ $state == "$want" ]]; then test_ok "$name" "$fig"; else test_fail "$name" "$state: $fig"; fi
}

# The cases: 'PROG TOOL SET WANT CLIENT NAME' lines, for each client
# variant of the tool PROG's command runs (CLIENT -: it runs none).
cases() {
    local d p pd needs prog exp322="" ctool clients c
    [[ -n $T322 ]] && exp322=$(expect_322)
    for d in ${DEFECTS}; do
        prog=b${d#B}
        [[ -f $here/$prog.lpr ]] || continue
        ctool=$(tool_of "$prog")
        if [[ -z $ctool ]]; then clients=-
        else clients=$(awk -v t="$ctool" '$1 == t { print $2 }' <<< "$VARIANTS"); fi
        [[ -n $clients ]] || continue   # reported as a skip below
        for c in $clients; do
            local via=""
            [[ $c != - ]] && via=" via $c"
            {
                echo "$prog trunk stock defect min $prog trunk stock shows defect"
                while read -r p pd needs; do
                    [[ $pd == "$d" ]] || continue
                    if [[ -n $needs ]]; then
                        echo "$prog trunk $p+$needs fixed min $prog trunk $p+$needs fixed"
                        echo "$prog trunk $p defect min $prog trunk $p without $needs shows defect"
                    else
                        echo "$prog trunk $p fixed min $prog trunk $p fixed"
                    fi
                done <<< "$PATCHES"
                if [[ -n $T322 ]]; then
                    case $(awk -v d="$d" '$1 == d { print $2 }' <<< "$exp322") in
                    reproduced) echo "$prog $T322 stock defect min $prog $T322 shows defect" ;;
                    fixed) echo "$prog $T322 stock fixed min $prog $T322 not affected" ;;
                    esac
                fi
            } | awk -v c="$c" -v via="$via" '{ $5 = c " " $5; print $0 via }'
        done
    done
}

# printed_check PROG...: a TEST line each: the tracker text's command block
# (upstream_texts.reproduce) holds the header's Command and Control whole.
printed_check() {
    python3 - "$@" <<'PY'
import subprocess, sys
sys.path.insert(0, "repro/report")
import upstream_texts as u
for prog in sys.argv[1:]:
    d = "B" + prog[1:]
    cmd, ctl = (subprocess.run(["sed", "-n", f"s/^  {f}:  //p", f"repro/fpc/min/{prog}.lpr"],
                               capture_output=True, text=True).stdout.split("\n")[0]
                for f in ("Command", "Control"))
    text = u.reproduce(d)
    block = text.split("```sh\n", 1)[1].split("\n```", 1)[0].splitlines() if "```sh\n" in text else []
    missing = [w for w, line in (("Command", cmd), ("Control", ctl and ctl + u.CONTROL_NOTE))
               if line and line not in block]
    name = f"min {prog} printed command is the one run"
    print(f"TEST: {name} [ OK ]" if not missing else
          f"TEST: {name} [FAIL] the text's block lacks the header's {' and '.join(missing)} "
          f"whole: {' | '.join(block[2:]) or 'no block'}")
PY
}

# 'NAME DEFECT [NEEDS]' per patch, in series order (repro/harness/patchset.py).
PATCHES=$(python3 -c 'import sys; sys.path.insert(0, "repro/harness"); import patchset
for p in patchset.patches(): print(p.name, p.defect, p.needs or "")') || die "repro/harness/patchset.py failed"
# Default: every defect the kit measures (defects.DEFECTS: a defect may be filed
# before its fix is in the series; its program must show it on stock).
if (($#)); then DEFECTS=$(printf 'B%s ' "${@#b}")
else DEFECTS=$(python3 -c 'import sys; sys.path.insert(0, "repro/harness"); import kit, defects; print(*defects.DEFECTS)') ||
    die "repro/defects (the registry) failed"; fi
tmp=""
kit_mktemp tmp
rm -rf "$RESULTS" && mkdir -p "$RESULTS"
[[ -n $T322 ]] || note "no $FPC322: FPC 3.2.2 cases not run"
t0=$SECONDS
VARIANTS=$(client_variants)
while read -r t v b; do
    [[ -n $t ]] || continue
    mkdir -p "$tmp/clients/$v" && ln -s "$b" "$tmp/clients/$v/$t"
    note "client variant $v: $b"
done <<< "$VARIANTS"
mapfile -t list < <(cases)
missing=0 progs=()
for d in $DEFECTS; do
    prog=b${d#B}
    [[ -f $here/$prog.lpr ]] || { test_fail "min $prog" "no program $here/$prog.lpr"; missing=1; continue; }
    progs+=("$prog")
    ctool=$(tool_of "$prog")
    if [[ -n $ctool ]] && ! grep -q "^$ctool " <<< "$VARIANTS"; then
        test_skip "min $prog" "its command runs $ctool, and there is none here (Debian packages: ${ctool/nc/netcat-openbsd or ncat})"
    elif [[ $ctool == nc ]] && (($(grep -c '^nc ' <<< "$VARIANTS") < 2)); then
        note "$prog: its command runs nc, and only one nc variant is here: install netcat-openbsd and ncat"
    fi
done
((${#progs[@]})) && printed_check "${progs[@]}" > "$tmp/printed"

# Builds, one at a time (they share the units folder of their set).
for c in "${list[@]}"; do
    read -r prog tool set _ <<< "$c"
    [[ -f $here/$prog.lpr ]] || continue
    build "$prog" "$tool" "$set" > /dev/null || note "build of $prog ($tool, $set) failed: build/min/$tool/$set/$prog.build.log"
done
note "builds ready after $((SECONDS - t0)) s"
if ((NETNS_OK)); then note "each case in a network namespace of its own: the program on 8080, the commands as printed"
else note "not root: each case on a free port, substituted for 8080 in the commands"; fi

# Runs: B3's first and alone (its verdict is a latency ratio; niced -10
# as root), then the
# rest, JOBS at once, each case's line printed in list order.
i=0 pids=()
for pass in b3 rest; do
    for c in "${list[@]}"; do
        read -r prog tool set want client name <<< "$c"
        [[ -f $here/$prog.lpr ]] || continue
        { [[ $pass == b3 && $prog != b3 ]] || [[ $pass == rest && $prog == b3 ]]; } && continue
        n=$(printf "%03d" "$i"); i=$((i + 1))
        # shellcheck disable=SC2030,SC2031  # the case's own servers, its own cleanup
        ( KIT_PIDS=() KIT_TMPS=() KIT_NETNS=(); trap kit_cleanup EXIT
          # B3's server and curl ahead of the suite's CPU-bound steps (as
          # root): under a tmThread server each fresh connection is a new
          # thread, which on 2 busy cores waited ~4 ms for a CPU, a tenth of
          # the stall it is the control for.
          [[ $pass == b3 ]] && ((EUID == 0)) && renice -n -10 -p "$BASHPID" > /dev/null
          { if case_netns "$n"; then run_case "$prog" "$tool" "$set" "$want" "$client" "$name"
            else test_fail "$name" "cannot add a network namespace"; fi; } > "$tmp/$n" ) &
        pids+=($!)
        # shellcheck disable=SC2031
        KIT_PIDS+=($!)
        [[ $pass == b3 ]] && wait "${pids[-1]}"
        while (($(jobs -rp | wc -l) >= JOBS)); do wait -n; done
    done
done
for p in "${pids[@]}"; do wait "$p"; forget_pid "$p"; done
cat "$tmp/printed" "$tmp"/[0-9]* 2>/dev/null
note "done in $((SECONDS - t0)) s"
! cat "$tmp/printed" "$tmp"/[0-9]* 2>/dev/null | grep -q '\[FAIL\]' && ((missing == 0))
