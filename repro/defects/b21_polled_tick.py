"""B21's measure (DESIGN section 3).

The defect: `tmPolled` reads a connection only from the accept-idle
callback. Its measure (its verdict, its figures), found by name through the
registry, repro/defects/__init__.py: MEASURES, its columns. What every
measure shares (servers, rows, verdicts, the probe) is repro/harness/kit.py.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

from kit import _server, NODELAY, probe, Row, SLOW, Verdict  # noqa: E402


# B21: in thread mode polled a kept-alive connection's next request is read
# only on the next accept-idle tick: TFPPolledConnectionHandler checks its
# connections from CheckRequests, which only TFPCustomHttpServer.DoAcceptIdle
# calls (TSocketServer.RunIdleLoop, when no connection came within
# AcceptIdleTimeout), and CreateServerSocket gives tmPolled a tick of
# DefaultPolledAcceptIdleTimeout (100 ms) when AcceptIdleTimeout is 0.
# Three servers of the same build side by side, keep-alive, the B3 stall
# taken out (NODELAY), each sent B21_REQUESTS sequential GETs on one
# connection (probe seq): thread mode polled with the default
# AcceptIdleTimeout (its fallback tick), polled with AcceptIdleTimeout
# B21_LONG_TICK_MS, and thread mode Threaded (the control).  As B6: how
# much of the longer tick shows in the requests 2..n median, a ratio of
# the server's own latencies (what a loaded machine or Wine adds slows
# every run alike).  A request read on the tick waits nearly all of it
# (the client sends it as the previous response arrives, just after the
# tick that served it): ~1; one read when it arrives, none of it: ~0.
# The polled/Threaded ratio is a figure (the fix aims at 5x or less).  A
# tree without tmPolled (FPC 3.2.2, the bisect's oldest) refuses the flag:
# n/a.
B21_REQUESTS = 5
B21_LONG_TICK_MS = 500
B21_FALLBACK_MS = 100   # DefaultPolledAcceptIdleTimeout
B21_TICK_BOUND, B21_TICK_FREE = 0.5, 0.05
B21_KEEP = ["--keep-connections", "--keep-connection-timeout", "15000"] + NODELAY
B21_RUNS = {"polled": ["--thread-mode", "polled"],
            "polled-tick": ["--thread-mode", "polled", "--accept-idle-timeout", str(B21_LONG_TICK_MS)],
            "thread": ["--thread-mode", "thread"]}


def measure_b21(row: Row, outdir: Path) -> Verdict:
    """Thread mode polled: is a kept-alive request read when it arrives, or
    on the next accept-idle tick?  Two ticks and thread mode, same build,
    same run."""
    servers = {k: _server(row, outdir, f"b21-{k}", f + B21_KEEP + row.flags)
               for k, f in B21_RUNS.items()}
    with ExitStack() as running, ThreadPoolExecutor(len(servers)) as ex:
        for srv in servers.values():
            running.enter_context(srv)
        deadline = str((B21_LONG_TICK_MS + 2000) * SLOW)   # a whole tick per request
        runs = {k: ex.submit(probe, srv, "seq", "-n", str(B21_REQUESTS), "--deadline-ms",
                             deadline, out=outdir / f"b21-{k}.probe.json")
                for k, srv in servers.items()}
        got = {k: f.result() for k, f in runs.items()}
    med = {k: r["stats_us"]["rest"]["p50"]
           if r["responses"] == B21_REQUESTS and r["connects"] == 1 else None
           for k, r in got.items()}
    data = {f"{k}_p50_us": med[k] for k in B21_RUNS}
    fig = "; ".join(f"{k}: {got[k]['responses']} of {B21_REQUESTS} answered"
                    + (f", requests 2..{B21_REQUESTS} p50 {med[k] / 1000:.2f} ms" if med[k] else "")
                    for k in B21_RUNS).replace("polled-tick", f"polled, AcceptIdleTimeout {B21_LONG_TICK_MS}")
    if not all(med.values()):
        return Verdict("inconclusive", fig, data)
    share = (med["polled-tick"] - med["polled"]) / ((B21_LONG_TICK_MS - B21_FALLBACK_MS) * 1000)
    data.update(tick_share=share, polled_thread_ratio=med["polled"] / med["thread"])
    fig += (f": polled/thread {data['polled_thread_ratio']:.1f}x; {share:.2f} of the longer "
            f"tick shows in the latency")
    if share >= B21_TICK_BOUND:
        return Verdict("reproduced", fig, data)
    if share <= B21_TICK_FREE:
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


MEASURES = {"B21": lambda r, o, st: measure_b21(r, o)}
