#!/usr/bin/env bash
# repro/fpc/wine-server.sh EXE [ARGS...] - run a Windows server .exe under
# Wine so that, to the kit, it behaves like a Linux server binary.
# repro/fpc/wine-server.sh --init - only initialise $WINEPREFIX (once; the
# matrix calls it before its rows, so no row pays the ~10 s wineboot).
#
#   stdout  the program's own stdout: its readiness line
#           'listening <addr>:<port>' reaches the caller unchanged (no pipe,
#           no relay process in between)
#   stderr  the program's log (Wine's own messages off: WINEDEBUG=-all),
#           plus one 'wine-server:' line on how the prefix was set up
#   SIGTERM / SIGINT  stop the program, then the Wine server of this prefix
#           (bounded: within 3 s), remove what this run created; exit 0
#           (a program that ends by itself: its Wine server gets up to
#           WINESERVER_GONE_S to go)
#   exit    otherwise the program's exit status (2 = unsupported flag, as the
#           Linux build); 4 when Wine is missing (with a TEST: ... [SKIP])
#
# Prefix: WINEPREFIX from the environment when the caller gives one (the
# matrix shares one across rows; it is initialised with 'wineboot -i' once,
# under a lock, when it is new), else a new prefix in a temp folder, removed
# on exit.  The user's ~/.wine is never used.  Runs sharing a prefix hold a
# shared lock on it; only the last one to leave shuts its Wine server down
# (wineserver -k), so parallel runs never kill each other's server, and it
# holds the lock exclusively until that server has gone, so that no run
# reaches a server that is going away (see stop_all).
#
# Under 'strace -f' everything Wine does is traced too (the wineserver it
# forks, services started in a new prefix): key on the process that calls
# accept().
set -uo pipefail
kit_name=wine-server
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib.sh
source "$top/scripts/lib.sh"

# After SIGTERM: the program gets 1.5 s, the Wine server's shutdown 2 x 0.7 s
# (all well within 3 s; measured ~1 s).  After a program that ended by
# itself nobody waits on a deadline, and the next run in the prefix may
# start at once: its Wine server gets up to 10 s to go.
PROGRAM_STOP_TENTHS=15
WINESERVER_STOP=0.7
WINESERVER_GONE_S=10

[ $# -ge 1 ] || die "usage: wine-server.sh EXE [ARGS...] | --init"
exe=$1
shift
if [ "$exe" = --init ]; then
    [ -n "${WINEPREFIX:-}" ] || die "--init needs WINEPREFIX (the prefix to share)"
else
    [ -f "$exe" ] || die "no such program: $exe"
fi
require_command wine wine64 wine-server
require_command wineserver wine64 wine-server
require_command flock util-linux wine-server

server_pid=""
own_prefix=""
stopped=""                                 # set by SIGTERM / SIGINT
# shellcheck disable=SC2317  # stop_all and on_exit run from the traps
# stop_all: the program first (SIGTERM, Wine turns it into process exit),
# then this prefix's Wine server if no other run still uses the prefix.
stop_all() {
    local i
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null
        for ((i = 0; i < PROGRAM_STOP_TENTHS; i++)); do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$server_pid" 2>/dev/null && { note "program ignored SIGTERM; KILL"; kill -KILL "$server_pid" 2>/dev/null; }
        wait "$server_pid" 2>/dev/null
    fi
    server_pid=""
    [ -n "${WINEPREFIX:-}" ] || return 0
    # The last to leave: our shared hold on the prefix becomes exclusive
    # (refused while another run holds it) and is kept until the Wine
    # server has gone.  A run that starts meanwhile waits at its flock -s;
    # one that reached the server while it went away failed with 'wine
    # client error:0: recvmsg: Connection reset by peer' (c79, an fpcunit
    # program after the one before it had left).
    { true >&8; } 2>/dev/null || exec 8>"$WINEPREFIX/.kit-lock"
    if [ -n "$own_prefix" ] || flock -n -x 8 2>/dev/null; then
        # -k kills the prefix's processes; -w waits until the Wine server
        # has saved the registry and gone (a temp prefix is removed next).
        local gone=$WINESERVER_GONE_S
        [ -n "$stopped" ] && gone=$WINESERVER_STOP
        timeout "$WINESERVER_STOP" wineserver -k 8>&- 2>/dev/null
        timeout "$gone" wineserver -w 8>&- 2>/dev/null
    fi
    exec 8>&-
}
# shellcheck disable=SC2317
on_exit() {
    local rc=$?
    stop_all
    kit_cleanup
    exit "$rc"
}
trap on_exit EXIT
trap 'stopped=1; exit 0' TERM INT

t0=$(date +%s%N)
if [ -n "${WINEPREFIX:-}" ]; then
    case $WINEPREFIX in /*) ;; *) die "WINEPREFIX must be an absolute path ($WINEPREFIX)" ;; esac
    [ "$WINEPREFIX" = "$HOME/.wine" ] && die "refusing the user's own prefix ~/.wine; give a kit prefix"
    how=reused
else
    # Not $(kit_mktemp): its record of the folder would stay in the subshell.
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/kit.XXXXXX") || die "mktemp failed"
    KIT_TMPS+=("$tmp")
    own_prefix=$tmp/prefix
    WINEPREFIX=$own_prefix
    how=new
fi
mkdir -p "$WINEPREFIX" || die "cannot create WINEPREFIX $WINEPREFIX"
export WINEPREFIX WINEDEBUG=-all WINEARCH=win64
# Wine's temp folder is the prefix: Debian's Wine makes its server's folder
# with mkdtemp in TMPDIR (wine-XXXXXX, named in $WINEPREFIX/wineserver),
# and in /tmp every prefix the kit removed left one behind.  Every kit
# process that runs Wine sets the same (repro/harness/wineprefix.py,
# wine_env), or it would look for the prefix's Wine server elsewhere.
export TMPDIR=$WINEPREFIX
# No Mono or Gecko install prompts (no display, no network): a server needs
# neither.
export WINEDLLOVERRIDES="mscoree=;mshtml=${WINEDLLOVERRIDES:+;$WINEDLLOVERRIDES}"
unset DISPLAY WAYLAND_DISPLAY

# Initialise a new prefix once: the exclusive lock makes a second run that
# shares it wait, then find it ready.
{
    flock -x 9
    if [ ! -f "$WINEPREFIX/.kit-ready" ]; then
        [ $how = reused ] && how="new (shared)"
        # In the background, so that SIGTERM is not deferred until it ends.
        wine wineboot -i >/dev/null 2>&1 < /dev/null 9>&- &
        server_pid=$!
        wait "$server_pid" || die "wineboot -i failed in $WINEPREFIX"
        server_pid=""
        # The registry files appear only when the Wine server saves them;
        # our own mark says wineboot finished.
        touch "$WINEPREFIX/.kit-ready"
    fi
} 9>"$WINEPREFIX/.kit-init-lock"
# Held (shared) while the program runs; see stop_all.
exec 8>"$WINEPREFIX/.kit-lock"
flock -s 8
t1=$(date +%s%N)
note "prefix $how ($WINEPREFIX), ready in $(( (t1 - t0) / 1000000 )) ms"
[ "$exe" = --init ] && exit 0

wine "$exe" "$@" < /dev/null 8>&- &
server_pid=$!
wait "$server_pid"
rc=$?
server_pid=""
exit $rc
