"""B6's measure (DESIGN section 3).

The defect: `pool` mode re-checks waiting connections only from the accept-
idle callback. Its measure (its verdict, its figures), found by name through
the registry, repro/defects/__init__.py: MEASURES, its columns. What every
measure shares (servers, rows, verdicts, the probe) is repro/harness/kit.py.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

from kit import _server, NODELAY, POOL, probe, Row, Verdict  # noqa: E402


def measure_b6(row: Row, outdir: Path) -> Verdict:
    """Pool mode, keep-alive, default AcceptIdleTimeout: is request 2 ever
    answered, and is it answered without waiting for an idle tick?"""
    with _server(row, outdir, "b6", POOL + row.flags) as srv:
        res = probe(srv, "seq", "-n", "3", "--deadline-ms", "1500",
                    out=outdir / "b6.probe.json")
    n = res["responses"]
    data = {"responses": n, "requests": 3, "outcome": res.get("outcome"),
            "connects": res["connects"]}
    fig = f"{n} of 3 sequential requests on one socket answered"
    if res["connects"] != 1:
        return Verdict("inconclusive", fig, data)
    if n == 1:
        return Verdict("reproduced", fig, data)
    if n != 3:
        return Verdict("inconclusive", fig, data)
    # Does a request wait for the idle tick?  Pool mode with two explicit
    # ticks, 50 and 2,000 ms, same variant, same run: a server that schedules
    # requests on the tick is ~40x slower with the longer one, one that
    # serves them at once is as fast with either.  A ratio of the server's
    # own latencies, so Wine's or a loaded machine's overheads cancel out.
    # The two run side by side, so that a loaded machine (or Wine) slows
    # both alike.
    servers = {tick: _server(row, outdir, f"b6-tick{tick}",
                             POOL + NODELAY + ["--accept-idle-timeout", str(tick)] + row.flags)
               for tick in B6_TICKS_MS}
    with ExitStack() as running, ThreadPoolExecutor(len(servers)) as ex:
        for srv in servers.values():
            running.enter_context(srv)
        # Long enough for a server that waits a whole tick per request.
        deadline = str(B6_TICK_REQUESTS * B6_TICKS_MS[1] + 4000)
        runs = {tick: ex.submit(probe, srv, "seq", "-n", str(B6_TICK_REQUESTS), "--deadline-ms",
                                deadline, out=outdir / f"b6-tick{tick}.probe.json")
                for tick, srv in servers.items()}
        got = {tick: f.result() for tick, f in runs.items()}
    med = {t: r["stats_us"]["rest"]["p50"] if r["responses"] == B6_TICK_REQUESTS else None
           for t, r in got.items()}
    short_t, long_t = B6_TICKS_MS
    data.update({f"pool_p50_us_tick{t}": med[t] for t in B6_TICKS_MS})
    if not med[short_t] or not med[long_t]:
        return Verdict("inconclusive", fig + f"; tick runs incomplete {med}", data)
    # How much of the longer tick shows up in the latency: a request that
    # waits for the tick waits half of it on average (~0.5); one that does
    # not, none of it (~0).  Sub-millisecond noise cannot move it.
    share = (med[long_t] - med[short_t]) / ((long_t - short_t) * 1000)
    data["tick_share"] = share
    fig += (f"; requests 2..{B6_TICK_REQUESTS} p50 {med[short_t] / 1000:.2f} ms with a "
            f"{short_t} ms tick, {med[long_t] / 1000:.2f} ms with a {long_t} ms tick: "
            f"{share:.2f} of the longer tick shows in the latency")
    if share >= B6_TICK_BOUND:
        return Verdict("reproduced", fig + ": every request waits for the idle tick", data)
    if share <= B6_TICK_FREE:
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


# A request that waits for the tick waits ~half of it; one that does not,
# none of it.  Between the bounds the run says nothing.
# The longer tick is long against what a loaded machine or Wine adds to a
# request (tens of ms), so that noise cannot reach the bounds.
B6_TICKS_MS = (50, 2000)
B6_TICK_REQUESTS = 12
B6_TICK_BOUND, B6_TICK_FREE = 0.2, 0.05


MEASURES = {"B6": lambda r, o, st: measure_b6(r, o)}
