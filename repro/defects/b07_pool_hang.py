"""B7's measure (DESIGN section 3).

The defect: `pool` mode hangs under concurrent keep-alive load. Its measure
(its verdict, its figures), found by name through the registry,
repro/defects/__init__.py: MEASURES, its columns; HEAVY, it loads the
machine. What every measure shares (servers, rows, verdicts, the probe) is
repro/harness/kit.py.
"""
from __future__ import annotations

from pathlib import Path

from kit import (_server, KitError, NODELAY, POOL, probe, Row, Server, SLOW,
                 STOP_DEADLINE_S, Verdict)  # noqa: E402


# B7: pool mode under concurrent keep-alive load with an accept-idle tick.
# The hang comes when several pooled connections close together: at the
# next tick the accepting thread holds the list lock while it waits for a
# worker, and the workers wait for that lock to remove their closed
# connections.  So: a short load, then bursts of connections that close
# at once, each followed by a liveness check (3 requests on a fresh
# connection).  The bursts' own answers are not counted (a pooled server
# is slow to accept while its workers are busy); only their closes matter,
# so a burst lasts B7_BURST_MS and its connections then close together.
B7_FLAGS = POOL + ["--accept-idle-timeout", "100"] + NODELAY
# The race does not fire at every burst (on a loaded machine a stock build
# answered 3 bursts in a row in 1 of 8 runs, under Wine in 2 of 10): up to
# 8 before "fixed".  A hung server ends the run at its first.  Its chances
# are the connections a burst makes: a pool whose accepting thread waits in
# AddTask lets its listen queue fill, and a slow VM's bursts made 6-9 of
# their 16 (poll-can-read, stock in all else, answered all 8 once in 4
# matrix runs).  So "fixed" takes B7_BURSTS full bursts' worth of
# connections, in at most B7_MAX_BURSTS bursts.
B7_CONNECTIONS, B7_LOAD_MS, B7_BURST_MS, B7_BURSTS = 16, 500, 400, 8
B7_MAX_BURSTS = 3 * B7_BURSTS
B7_CHECK_MS = 1500
# Every B7 server spins in DoAddTask while its workers are busy (fixed or
# not): below the Wine servers' HEAVY_NICE, so that it does not starve
# them.  One proven hung spins until it is killed: lowest of all.
B7_NICE, HUNG_NICE = 15, 19
# How long a server proven hung (its last check answered 0) is watched
# after SIGTERM: its verdict is decided, the stop is a figure.  A server
# that answered every check gets the full STOP_DEADLINE_S.
B7_HUNG_STOP_S = 1.0


def b7_probe(srv: Server, out: Path, *args: str) -> dict:
    """A probe run against a server that may be hung: one that stops
    accepting once its listen queue is full makes the connect fail, which
    is part of the figure ({"connect_error": ...}, kept beside out), not an
    error of the kit."""
    try:
        return probe(srv, *args, out=out, timeout_s=60)
    except KitError as e:
        if "connect" not in str(e):
            raise
        out.with_suffix(".refused.txt").write_text(str(e) + "\n")
        return {"connect_error": str(e)}


def liveness(srv: Server, outdir: Path, tag: str, wait: int = 1) -> int:
    """3 requests on a fresh connection: how many were answered (a refused
    or timed-out connect is 0 answered).  wait scales the bound on the
    wait: a hung server answers 0 however long it is given."""
    return b7_probe(srv, outdir / f"b7-{tag}.probe.json", "seq", "-n", "3",
                    "--deadline-ms", str(B7_CHECK_MS * SLOW * wait)).get("responses", 0)


def b7_load(srv: Server, outdir: Path, name: str, n: int, ms: int) -> dict:
    """C connections with n requests each for ms."""
    return b7_probe(srv, outdir / f"b7-{name}.probe.json", "load", "-c", str(B7_CONNECTIONS),
                    "-n", str(n), "--deadline-ms", str(ms * SLOW))


# Under Wine every call goes through the one wineserver the matrix's other
# Windows rows share: a live server can be slower to answer than a Linux one.
B7_WINE_WAIT = 4


# A check answered 0 is a hang only when the server wrote nothing to its
# log meanwhile: a hung pool serves and closes no connection (its workers
# wait for the list lock), while a starved one still serves the burst's,
# a line each.  r9 (a clean clone's make repro on a 2-core VM): the
# pool-idle-fallback model, 2 workers at nice 15 beside 7 more B7 servers,
# was still serving burst 3's connections one by one through both checks,
# and read "hung".  So a check answered 0 while the log grew is followed by
# another, up to B7_CONFIRMS in all.
B7_CONFIRMS = 6


def _log_size(srv: Server) -> int:
    try:
        return srv.log_path.stat().st_size
    except OSError:
        return 0


def b7_checks(srv: Server, outdir: Path, wait: int = 1) -> tuple[list[list[int]], int]:
    """Bursts, each followed by a liveness check, until the bursts have
    made B7_BURSTS * B7_CONNECTIONS connections (at most B7_MAX_BURSTS
    bursts).  A check not fully answered is followed by one more on a new
    connection (the hang may have come in the middle of the first, or a
    starved server may have been slow to accept): a hung server answers it
    0 and the run ends there; a slow one answers it, and the bursts go on.
    One that answers 0 but logged meanwhile is looked at again (see
    B7_CONFIRMS).  One list per burst, and the connections the bursts made."""
    checks: list[list[int]] = []
    made = 0
    while made < B7_BURSTS * B7_CONNECTIONS and len(checks) < B7_MAX_BURSTS:
        i = len(checks)
        made += b7_load(srv, outdir, f"burst{i}", 1, B7_BURST_MS).get("connects", 0)
        seen = _log_size(srv)
        checks.append([liveness(srv, outdir, f"after{i}", wait)])
        while checks[-1][-1] < 3 and len(checks[-1]) <= B7_CONFIRMS:
            if len(checks[-1]) > 1:
                now = _log_size(srv)
                if checks[-1][-1] > 0 or now == seen:
                    break
                seen = now
            k = len(checks[-1])
            checks[-1].append(liveness(srv, outdir, f"confirm{i}" + (f".{k}" if k > 1 else ""), wait))
        if checks[-1][-1] == 0:
            break
    return checks, made


def measure_b7(row: Row, outdir: Path) -> Verdict:
    """Counts only: requests answered under load, liveness checks answered
    after each burst of closes, and whether SIGTERM stops the server (not
    under Wine: its launcher ends the program on SIGTERM whatever the
    program does)."""
    srv = _server(row, outdir, "b7", B7_FLAGS + row.flags)
    if row.platform != "win64":   # a Windows server keeps _server's nice: its
        srv.nice = B7_NICE        # launcher and Wine's calls need the CPU too
    checks: list[list[int]] = []
    made = 0
    srv.start()
    try:
        load = b7_load(srv, outdir, "load", 100000, B7_LOAD_MS)
        checks, made = b7_checks(srv, outdir, B7_WINE_WAIT if row.platform == "win64" else 1)
    finally:
        hung = bool(checks) and checks[-1][-1] == 0
        if hung:
            srv.renice(HUNG_NICE)   # its spin must not slow the measures beside it
        srv.stop(B7_HUNG_STOP_S if hung else STOP_DEADLINE_S)
    shown = ", ".join("->".join(map(str, c)) for c in checks)
    data = {"load_answered": load.get("answered_total"), "load_stalled": load.get("stalled"),
            "checks_answered": checks, "burst_connections": made,
            "stopped_by_sigterm": srv.stopped_by_term}
    fig = (f"{data['load_answered']} answered under load ({B7_CONNECTIONS} connections, "
           f"{B7_LOAD_MS} ms); after each burst of {B7_CONNECTIONS} closing connections "
           f"({made} made in {len(checks)} bursts), answered of 3: [{shown}]; SIGTERM "
           + ("honoured" if srv.stopped_by_term else
              f"IGNORED for {B7_HUNG_STOP_S if hung else STOP_DEADLINE_S:g} s "
              "(a second signal or KILL ended it)"))
    # The load's count is a figure (in pool mode the accepting thread
    # spins while workers are busy, so even connecting is slow); the
    # verdict is the liveness checks and, off Wine, the stop.
    judge_stop = row.platform != "win64"
    if hung or (judge_stop and srv.stopped_by_term is False):
        return Verdict("reproduced", fig, data)
    if made >= B7_BURSTS * B7_CONNECTIONS and (srv.stopped_by_term or not judge_stop):
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


MEASURES = {"B7": lambda r, o, st: measure_b7(r, o)}
# It loads the machine (a CPU-bound load): the matrix runs it one at a time.
HEAVY = True
