"""B9's measure (DESIGN section 3).

The defect: `SetIdle` makes the application's handler the listener's
`OnIdle` in place of `DoAcceptIdle`. Its measure (its verdict, its figures),
found by name through the registry, repro/defects/__init__.py: MEASURES, its
columns; SYMPTOMS, its symptoms apart. What every measure shares (servers,
rows, verdicts, the probe) is repro/harness/kit.py.
"""
from __future__ import annotations

import socket
from pathlib import Path

import httpwire  # noqa: E402
from kit import _server, Row, SLOW, Verdict  # noqa: E402


# B9: an application assigns OnAcceptIdle while the server runs
# (GET /set-accept-idle of both servers).  Polled mode, where every read
# after a connection's first waits for a check on the idle tick.
B9_FLAGS = ["--thread-mode", "polled", "--keep-connections", "--keep-connection-timeout", "15000"]
B9_POOL = ["--thread-mode", "pool", "--keep-connections", "--keep-connection-timeout", "15000",
           "--accept-idle-timeout", "100"]   # a tick without the B6 fix's
B9_TRIES = 3
B9_WAIT_S = 1.5   # a bound on each wait; a served request takes one tick (100 ms)


def _b9_sequential(sock: socket.socket, path: str, n: int) -> int:
    """n requests one after the other on sock: how many were answered
    before the first that was not."""
    for i in range(n):
        if not httpwire.exchange(sock, path, B9_WAIT_S * SLOW):
            return i
    return n


def measure_b9(row: Row, outdir: Path, flags: list[str] = B9_FLAGS) -> Verdict:
    """Does the server still check its connections once the application
    has set OnAcceptIdle (TFPCustomHttpServer.SetIdle), and does the
    application's handler run?  One kept-alive connection: B9_TRIES
    requests, GET /set-accept-idle, B9_TRIES more; then a new connection."""
    with _server(row, outdir, "b9", flags + row.flags) as srv:
        with socket.create_connection((srv.address, srv.port), timeout=10) as a:
            before = _b9_sequential(a, "/ping", B9_TRIES)
            setting = _b9_sequential(a, "/set-accept-idle", 1) if before == B9_TRIES else 0
            same = _b9_sequential(a, "/ping", B9_TRIES) if setting else 0
        with socket.create_connection((srv.address, srv.port), timeout=10) as b:
            new = _b9_sequential(b, "/ping", B9_TRIES) if setting else 0
    hook = srv.log_path.read_text(errors="replace").count("on-accept-idle")
    data = {"before": before, "set": setting, "same_after": same, "new_after": new, "hook_lines": hook}
    fig = (f"{before} of {B9_TRIES} answered before OnAcceptIdle was set; after it, {same} of "
           f"{B9_TRIES} on that connection, {new} of {B9_TRIES} on a new one; the application's "
           f"handler {'ran' if hook else 'never ran'}")
    if before != B9_TRIES or not setting:
        return Verdict("inconclusive", fig, data)
    # Stopped checking: none answered after it, or one, which a wait for
    # requests already under way when the handler was swapped serves (the
    # polled and pool fixes wait in CheckRequests itself).
    if same <= 1 and new < B9_TRIES:
        return Verdict("reproduced", fig, data)
    if same == B9_TRIES and new == B9_TRIES and hook:
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


MEASURES = {
    "B9": lambda r, o, st: measure_b9(r, o),
    "B9.polled": lambda r, o, st: measure_b9(r, o),
    "B9.pool": lambda r, o, st: measure_b9(r, o, B9_POOL),
}
# B9's symptoms, each with its own history: name, the measure (a MEASURES
# key), what it is.  The first is what the matrix column judges.
SYMPTOMS = (("polled", "B9.polled", "thread mode polled: once SetIdle replaced DoAcceptIdle, no "
             "request after a connection's first is read (TFPPolledConnectionHandler's checks run "
             "from CheckRequests)"),
            ("pool", "B9.pool", "thread mode pool with an accept-idle tick: once SetIdle replaced "
             "DoAcceptIdle, no kept-alive connection is scheduled again "
             "(TFPPooledConnectionHandler.CheckRequests)"))
