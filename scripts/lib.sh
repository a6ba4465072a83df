# shellcheck shell=bash
# scripts/lib.sh - the kit's one shell library, sourced by every script.
#
# Conventions (kselftest style):
#   exit 0 = pass, 1 = fail, 4 = skip (a missing optional tool or privilege);
#   one line per check: 'TEST: <name> [ OK ]', '[FAIL] <why>', '[SKIP] <why>'.
# Every process, namespace or folder a script creates is recorded and removed
# by kit_cleanup (install it with: trap kit_cleanup EXIT, before any set-up).

KSFT_PASS=0 KSFT_FAIL=1 KSFT_SKIP=4
KIT_PIDS=()          # PIDs we started, stopped in reverse order
KIT_TMPS=()          # temp folders we created

kit_name=${kit_name:-$(basename "$0" .sh)}

die()  { echo "$kit_name: $*" >&2; exit 1; }

# The Pascal series' commit messages are upstream's form: these DEP-3 fields
# (and the kit's own) stay in the model's quilt patches
# (scripts/fpc-series.sh, repro/fpc/fpcunit/mkpatch.sh,
# scripts/check-fpc-patches.sh).
KIT_DEP3_FIELDS='^(Description|Subject|Origin|Bug|Bug-[A-Za-z]+|Forwarded|Author|From|Reviewed-by|Acked-by|Last-Update|Applied-Upstream|Defect|Needs|Upstream-Routine|Report|Security): '
# An address nobody can commit or credit: the reserved top-level domains
# (RFC 2606/6761: .example, .invalid, .test, .localhost), example.com/.org/
# .net and their subdomains, no-reply hosts and mailboxes
# (users.noreply.github.com), a host without a dot, the kit's old
# fphttpserver-kit@ one.
KIT_PLACEHOLDER_EMAIL='(fphttpserver-kit@|@(.+\.)?example\.(org|com|net)$|\.(example|invalid|test|localhost)$|@localhost$|@[^.]*$|@(.+[.-])?no-?reply[.-]|^no-?reply@)'

note() { echo "$kit_name: $*" >&2; }

# kit_patch_author [PATCH]: the author of the kit's working series
# (patches/fpc, patches/fpc/tests), in kit_author_name and kit_author_email:
# KIT_AUTHOR_NAME and KIT_AUTHOR_EMAIL, else git config user.name and
# user.email of the kit's repository; with PATCH (a --check), that patch's
# own From: (git mailinfo), so that the comparison is with what its author
# would get.  Neither: returns 1 with the reason in kit_author_why.  A
# placeholder is allowed here: the filing (scripts/upstream.sh) re-authors
# every commit and refuses one (kit_filing_author).
kit_patch_author() {
    local top info
    top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    kit_author_name="" kit_author_email="" kit_author_why=""
    if (($#)); then
        info=$(git mailinfo /dev/null /dev/null < "$1" 2>/dev/null)
        kit_author_name=$(sed -n 's/^Author: //p' <<< "$info")
        kit_author_email=$(sed -n 's/^Email: //p' <<< "$info")
    else
        kit_author_name=${KIT_AUTHOR_NAME:-$(git -C "$top" config user.name 2>/dev/null)}
        kit_author_email=${KIT_AUTHOR_EMAIL:-$(git -C "$top" config user.email 2>/dev/null)}
    fi
    if [ -z "$kit_author_name" ] || [ -z "$kit_author_email" ]; then
        kit_author_why="no author: set KIT_AUTHOR_NAME and KIT_AUTHOR_EMAIL, or git config user.name and user.email"
    fi
    [ -z "$kit_author_why" ]
}

# kit_filing_author [IDENTITY]: the author of the commits the kit files
# upstream, from IDENTITY ("Name <address>") or else git config user.name
# and user.email, in kit_author_name and kit_author_email.  Empty, malformed
# or a placeholder address (KIT_PLACEHOLDER_EMAIL): returns 1 with the
# reason in kit_author_why.
kit_filing_author() {
    local top id=${1:-}
    top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    kit_author_name="" kit_author_email="" kit_author_why=""
    if [ -n "$id" ]; then
        if [[ $id =~ ^[[:space:]]*([^<>]*[^<>[:space:]])[[:space:]]*\<([^<>[:space:]]+@[^<>[:space:]]+)\>[[:space:]]*$ ]]; then
            kit_author_name=${BASH_REMATCH[1]} kit_author_email=${BASH_REMATCH[2]}
        else
            kit_author_why="AUTHOR '$id' is not of the form 'Name <address>'"
            return 1
        fi
    else
        kit_author_name=$(git -C "$top" config user.name 2>/dev/null)
        kit_author_email=$(git -C "$top" config user.email 2>/dev/null)
        if [ -z "$kit_author_name" ] || [ -z "$kit_author_email" ]; then
            kit_author_why="no author: give AUTHOR=\"Name <address>\", or set git config user.name and user.email"
            return 1
        fi
    fi
    if grep -Eiq "$KIT_PLACEHOLDER_EMAIL" <<< "$kit_author_email"; then
        kit_author_why="the author's address $kit_author_email is a placeholder (a reserved or example domain, a no-reply host, localhost): FPC cannot commit or credit it; give AUTHOR=\"Name <address>\" with your own address"
    fi
    [ -z "$kit_author_why" ]
}

test_ok()   { echo "TEST: $1 [ OK ]${2:+ $2}"; }
test_fail() { echo "TEST: $1 [FAIL]${2:+ $2}"; }
test_skip() { echo "TEST: $1 [SKIP]${2:+ $2}"; }

# require_command CMD PACKAGE [TESTNAME]: a missing tool is a skip (exit 4)
# naming the Debian package, never a failure and never a silent pass.
require_command() {
    command -v "$1" >/dev/null 2>&1 && return 0
    test_skip "${3:-$kit_name}" "missing command '$1' (Debian package: $2)"
    exit $KSFT_SKIP
}

# require_client CMD PACKAGE MIN USAGE "$@": the start of every
# repro/clients script: CMD and python3 (which turns the client's output
# into JSON) must be there, else a skip; fewer than MIN arguments prints
# "usage: USAGE" and exits 1 (could not run).
require_client() {
    local cmd=$1 pkg=$2 min=$3 usage=$4
    shift 4
    require_command "$cmd" "$pkg"
    require_command /usr/bin/python3 python3
    [ $# -ge "$min" ] && return 0
    echo "usage: $usage" >&2
    exit 1
}

# yaml_python [TESTNAME]: sets $yaml_py to a python3 that imports PyYAML
# (the one on PATH, else Debian's /usr/bin/python3 with python3-yaml: PATH
# may hold another interpreter, pyenv's); none prints a skip naming the
# package and returns 4.
yaml_python() {
    for yaml_py in python3 /usr/bin/python3; do
        "$yaml_py" -c 'import yaml' 2> /dev/null && return 0
    done
    test_skip "${1:-$kit_name}" "no PyYAML (Debian package python3-yaml)"
    return $KSFT_SKIP
}

# require_root [TESTNAME]: the step needs root (tcpdump, ip netns): skip.
require_root() {
    [ "$(id -u)" -eq 0 ] && return 0
    test_skip "${1:-$kit_name}" "needs root (tcpdump, ip netns)"
    exit $KSFT_SKIP
}

# kit_mktemp VAR: make a temp folder, put its path in VAR and record it for
# kit_cleanup.  (Not $(kit_mktemp): the record would stay in the subshell.)
kit_mktemp() {
    local d
    d=$(mktemp -d "${TMPDIR:-/tmp}/kit.XXXXXX") || die "mktemp failed"
    KIT_TMPS+=("$d")
    printf -v "$1" %s "$d"
}

# our_child PID: PID is a process of this shell (or of the subshell asking)
# that has not been reaped.  A reaped PID may since belong to anyone: a
# suite step's exit once sent SIGTERM, by a recorded PID of a variant run it
# had long reaped, to another step's compiler (c40).
our_child() {
    local stat ppid
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    ppid=${stat##*) }; ppid=${ppid#* }; ppid=${ppid%% *}
    [[ $ppid == "$$" || $ppid == "$BASHPID" ]]
}

# stop_pid PID [SIGNAL]: signal one PID we started and wait for it (polled,
# bounded: 5 s, then KILL and say so); nothing if it is no longer our child.
stop_pid() {
    local pid=$1 sig=${2:-TERM} i
    our_child "$pid" || { wait "$pid" 2>/dev/null; return 0; }
    kill -s "$sig" "$pid" 2>/dev/null
    for ((i = 0; i < 100; i++)); do
        our_child "$pid" || break
        sleep 0.05
    done
    if our_child "$pid"; then
        note "PID $pid ignored SIG$sig for 5 s; sending KILL"
        kill -s KILL "$pid" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null
    return 0
}

kit_cleanup() {
    local i
    for ((i = ${#KIT_PIDS[@]} - 1; i >= 0; i--)); do
        stop_pid "${KIT_PIDS[$i]}" TERM
    done
    KIT_PIDS=()
    for i in "${KIT_NETNS[@]}"; do   # network namespaces we added, after their processes
        [ -n "$i" ] && ip netns del "$i" 2>/dev/null
    done
    KIT_NETNS=()
    for i in "${KIT_TMPS[@]}"; do
        [ -n "$i" ] && [ -d "$i" ] && rm -rf -- "$i"
    done
    KIT_TMPS=()
}

rand_hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }

# wait_for_line FILE REGEX PID [TRIES]: poll FILE until a line matches, while
# PID lives (TRIES x 50 ms, default 200).
wait_for_line() {
    local file=$1 re=$2 pid=$3 n=${4:-200} i
    for ((i = 0; i < n; i++)); do
        grep -Eq "$re" "$file" 2>/dev/null && return 0
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}
