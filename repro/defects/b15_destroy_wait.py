"""B15's measure (DESIGN section 3).

The defect: `TFPCustomHttpServer.Destroy` waits with no bound. Its measure
(its verdict, its figures), found by name through the registry,
repro/defects/__init__.py: MEASURES, its columns; WINE_NA, why Wine cannot
show it. What every measure shares (servers, rows, verdicts, the probe) is
repro/harness/kit.py.
"""
from __future__ import annotations

import os
import select
import signal
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpwire  # noqa: E402
from kit import _poll, _start_first, Row, SLOW, Unsupported, Verdict  # noqa: E402


# B15: TFPCustomHttpServer.Destroy (what Free runs after Active:=False)
# waits for the open connections (WaitForRequests), closes their sockets
# (CloseSockets), then waits with no bound until each is removed by its own
# thread or task.  A kept-alive pooled or polled connection has neither once
# the accept loop has ended: Free never returns.  In thread mode Free
# returns when the connection thread's own wait ends (close() does not wake
# it): with the time-outs at 600 s, not within the watch either; that figure
# is data.  Each mode's server runs with --stop free (the program frees the
# server as an application does and logs B15_RETURNED when Free returns)
# and every time-out the tree has at 600 s.  A client gets one answer and
# stays connected; then SIGTERM.  The control is a server of the same mode
# with no client: its Free must return.  Counts of runs decide: reproduced
# when Free returned in no judged mode with a kept-alive client while every
# control returned, fixed when it returned in every judged mode.  The watch
# is how long we look (a deadline, not a verdict): a fixed server returns
# after WaitForRequests' ten unchanged 100 ms looks.  A server that returns
# no such line has no stop path to follow (n/a); one without keep-alive
# (FPC 3.2.2, trees before KeepConnections) refuses the flags: n/a.
B15_TIMEOUT_MS = "600000"
B15_JUDGED = ("pool", "polled")
B15_DATA = ("thread",)
B15_RETURNED = "stop: Free returned"
# 4 s: the fixed server's Free returned after 1.00-1.18 s in every row of a
# make repro beside three agents' builds (2026-12-03); 6 s before.
B15_WATCH_S = 4.0
B15_GONE_S = 2.0


def b15_flag_sets(mode: str, row: Row) -> tuple[list[str], ...]:
    """Every time-out at 600 s, then without those an older tree lacks
    (RequestReadTimeout, then KeepConnectionIdleTimeout came after
    KeepConnections: make bisect)."""
    t = B15_TIMEOUT_MS
    base = ["--thread-mode", mode, "--keep-connections", "--keep-connection-timeout", t,
            "--stop", "free"]
    idle = ["--keep-connection-idle-timeout", t]
    read = ["--request-read-timeout", t]
    return (base + idle + read + row.flags, base + idle + row.flags, base + row.flags)


def _b15_eof_now(s: socket.socket) -> bool:
    """Whether the server has ended the connection: a zero-timeout look
    finds the socket readable (EOF, a reset, or bytes nobody asked for)."""
    r, _, _ = select.select([s], [], [], 0)
    return bool(r)


def b15_run(row: Row, outdir: Path, mode: str, client: bool) -> dict:
    tag = f"b15-{mode}-{'client' if client else 'control'}"
    try:
        srv, flags = _start_first(row, outdir, tag, b15_flag_sets(mode, row))
    except Unsupported as e:
        return {"mode": mode, "client": client, "unsupported": str(e)}
    out: dict = {"mode": mode, "client": client, "flags": flags}
    s = None

    def returned() -> bool:
        return B15_RETURNED in srv.log_path.read_text(errors="replace")

    try:
        if client:
            s = socket.create_connection((srv.address, srv.port), timeout=10)
            s.sendall(b"GET /ping HTTP/1.1\r\nHost: kit\r\n\r\n")
            buf, end = httpwire.read_responses_end(s, 1, 5.0 * SLOW)
            resps = httpwire.parse_responses(buf)
            out["answered"] = [r["status"][:3] for r in resps]
            out["kept_alive"] = (len(resps) == 1 and (resps[0]["connection"] or "").lower() != "close"
                                 and not _b15_eof_now(s))
        t0 = time.monotonic()
        os.kill(srv._server_pid(), signal.SIGTERM)
        out["returned"] = _poll(returned, B15_WATCH_S * SLOW)
        if out["returned"]:
            out["after_s"] = round(time.monotonic() - t0, 2)
        if client:
            out["client_saw_close"] = _b15_eof_now(s)
            if not out["returned"]:
                s.close()
                s = None
                out["returned_after_client_went"] = _poll(returned, B15_GONE_S * SLOW)
    finally:
        if s:
            s.close()
        srv.stop()
    out["exit"] = srv.exit_code
    return out


def _b15_said(r: dict) -> str:
    if "unsupported" in r:
        return "unsupported"
    if r["returned"]:
        return f"returned ({r['after_s']} s)"
    if r.get("returned_after_client_went"):
        return "not returned, then returned once the client went"
    return "not returned" + (", nor once the client went" if r["client"] else "")


def measure_b15(row: Row, outdir: Path) -> Verdict:
    """Does Free return while a kept-alive client is connected?  Runs of
    the same measure decide: with a client against without one."""
    modes = B15_JUDGED + B15_DATA
    with ThreadPoolExecutor(2 * len(modes)) as ex:
        futs = {(m, c): ex.submit(b15_run, row, outdir, m, c) for m in modes for c in (True, False)}
        runs = {k: f.result() for k, f in futs.items()}
    data = {"watch_s": B15_WATCH_S * SLOW,
            "runs": {f"{m}-{'client' if c else 'control'}": r for (m, c), r in runs.items()}}
    fig = "SIGTERM with a client kept alive (time-outs 600 s where the tree has them): " + "; ".join(
        f"{m}{' (data)' if m in B15_DATA else ''} {_b15_said(runs[(m, True)])}" for m in modes)
    fig += "; no client: " + ", ".join(f"{m} {_b15_said(runs[(m, False)])}" for m in modes)
    judged = [m for m in B15_JUDGED if "unsupported" not in runs[(m, True)]
              and "unsupported" not in runs[(m, False)]]
    if not judged:
        why = next((runs[(m, c)]["unsupported"] for m in modes for c in (True, False)
                    if "unsupported" in runs[(m, c)]), "no pool or polled mode")
        return Verdict("n/a", f"no kept-alive pooled or polled connection: {why}", data)
    if not all(runs[(m, True)]["kept_alive"] for m in judged):
        if not any(runs[(m, True)]["kept_alive"] for m in judged):
            return Verdict("n/a", "no keep-alive: the server closed after its answer; " + fig, data)
        return Verdict("inconclusive", fig, data)
    if not all(runs[(m, False)]["returned"] for m in judged):
        if not any(runs[(m, False)]["returned"] for m in judged):
            return Verdict("n/a", f"no '{B15_RETURNED}' even without a client: the server "
                           "has no stop path that frees it; " + fig, data)
        return Verdict("inconclusive", fig + " (a control did not return)", data)
    back = [m for m in judged if runs[(m, True)]["returned"]]
    if not back:
        return Verdict("reproduced", fig, data)
    if len(back) == len(judged):
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


MEASURES = {"B15": lambda r, o, st: measure_b15(r, o)}
# What a run under Wine cannot show (a figure would be Wine's, not Windows').
WINE_NA = ("not measured under Wine: the measure's stop is SIGTERM, and under Wine it ends "
           "the Windows program without running any of its code (no 'stop:' line: Free is "
           "never reached; repro/fpc/wine-server.sh then bounds the stop at 1.5 s anyway); "
           "Windows has no SIGTERM, and the win64 build installs no console control handler")
