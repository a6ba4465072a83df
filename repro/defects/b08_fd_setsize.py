"""B8's measure (DESIGN section 3).

The defect: a connection whose descriptor is 1024 or above is never read.
Its measure (its verdict, its figures), found by name through the registry,
repro/defects/__init__.py: MEASURES, its columns; SYMPTOMS, its symptoms
apart; HEAVY, it loads the machine; WINE_NA, why Wine cannot show it. What
every measure shares (servers, rows, verdicts, the probe) is
repro/harness/kit.py.
"""
from __future__ import annotations

from pathlib import Path

from kit import (_server, _start_first, HEAVY_NICE, HORSE, probe, Row, Server, SLOW,
                 Verdict)  # noqa: E402


# B8: more connections than a select() bitmap holds.
B8_CONNECTIONS, B8_SAMPLE = 1100, 10
# How long the sample's requests wait for an answer: every connection has
# been accepted by then (the probe waits for an empty accept queue), so a
# server that reads them answers in milliseconds.
B8_ANSWER_MS = 2000
# The probe waits for the server to accept all 1,100 before the sample for
# as long as the server keeps accepting: it gives up once the server has
# accepted none for B8_ACCEPT_STALL_MS, or at B8_ACCEPT_WAIT_MS in all
# (both x SLOW).  A fixed bound was not enough: a TSan server, niced,
# beside the matrix's own B8 and B7 servers, had not accepted 56-811 of
# them after 60 s (three CI-like runs), and 3 after 300 s (c98, a slow
# 2-core VM), taking them all along at 1-4 a second; alone on that VM it
# took all 1,100 in 7-9 s.
B8_ACCEPT_STALL_MS = 30000
B8_ACCEPT_WAIT_MS = 300000
B8_FLAGS = HORSE + ["--max-live-connection-count", "0", "--queue-size", "2048"]
# RequestReadTimeout for B8's runs: longer than the probe's accept wait and
# answer deadline together (the default, 30000 in server-min and trunk, is
# not: b8_once).
B8_HOLD_MS = (B8_ACCEPT_WAIT_MS + B8_ANSWER_MS) * SLOW + 30000


def b8_probe(srv: Server, outdir: Path, tag: str, *args: str) -> dict:
    """probe fdscale on B8's connections, with B8's waits (see above)."""
    return probe(srv, "fdscale", "--connections", str(B8_CONNECTIONS), "--sample", str(B8_SAMPLE),
                 "--deadline-ms", str(B8_ANSWER_MS * SLOW),
                 "--accept-wait-ms", str(B8_ACCEPT_WAIT_MS * SLOW),
                 "--accept-stall-ms", str(B8_ACCEPT_STALL_MS * SLOW), *args,
                 out=outdir / f"{tag}.probe.json", timeout_s=120 + B8_ACCEPT_WAIT_MS * SLOW / 1000)


def b8_accepted(res: dict) -> str:
    """The figure's words on the probe's wait for the accept queue."""
    left = res.get("accept_queue_left")
    if left == 0:
        return "all accepted by the server before the sample"
    return (f"{left} not yet accepted at the sample (the wait ended: "
            f"{res.get('accept_wait_end')}, after {res.get('accept_wait_ms')} ms)")


def b8_once(row: Row, outdir: Path, tag: str, extra: tuple[str, ...] = ()) -> Verdict:
    """One B8 run on a new server (see measure_b8); extra: flags after
    B8_FLAGS (B8.polled: the thread mode)."""
    # The first connections wait for the sample with no request, and the
    # server's request read time-out must not close them meanwhile: their
    # fds would go to the last ones (under a sanitizer, 35-40 s to accept
    # 1,100 on a loaded machine; f1, a slow 2-core VM, a normal build:
    # "first 10: 0 answered, last 10: 10 answered", twice running).  So it
    # outlasts the probe's own bounds, wherever the tree has one (FPC 3.2.2
    # has none: it is asked without).
    # A sanitizer build runs in a pass niced as a whole (tests/run.sh), and
    # TSan starts each new thread in step with its creator: at nice 19
    # beside a loaded machine the accepting thread took 1-2 connections a
    # second (a slow VM: 162 of 1,100 in 300 s beside 8 busy loops; at
    # nice 10, 1,091).
    flags = B8_FLAGS + list(extra)
    srv, _ = _start_first(row, outdir, tag, (flags + ["--request-read-timeout", str(B8_HOLD_MS)]
                                             + row.flags, flags + row.flags),
                          nice=HEAVY_NICE if SLOW == 1 else 0)
    try:
        res = b8_probe(srv, outdir, tag)
    finally:
        srv.stop()
    lo, hi, k = res.get("answered_low"), res.get("answered_high"), res.get("sample", B8_SAMPLE)
    left = res.get("accept_queue_left")
    data = {"opened": res.get("opened"), "answered_low": lo, "answered_high": hi,
            "sample": k, "accept_queue_left": left, "accept_wait_ms": res.get("accept_wait_ms"),
            "accept_wait_end": res.get("accept_wait_end")}
    fig = (f"{res.get('opened')} connections open, {b8_accepted(res)}; first {k}: {lo} "
           f"answered, last {k} (server fds above 1023): {hi} answered")
    # "Not answered" must mean "held and never read", not "not taken yet":
    # the probe samples only once the server's accept queue is empty.
    if res.get("opened") != B8_CONNECTIONS or lo != k or left != 0:
        return Verdict("inconclusive", fig, data)
    if hi == 0:
        return Verdict("reproduced", fig, data)
    if hi == k:
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


def measure_b8(row: Row, outdir: Path, extra: tuple[str, ...] = ()) -> Verdict:
    """1,100 idle connections held open (thread mode, no connection cap),
    then one request on each of the first and the last ten: the server's fds
    for the last ones are above 1023.  The first ten are the run's control
    (fds below 1024, read by every server): a run in which they were not all
    answered in time (a load spike beside four such servers: 0-7 of 10 in 4
    of 30 rows of one suite run) says nothing (inconclusive), and is made
    once more on a new server by retried(); the second decides."""
    return b8_once(row, outdir, "b8", extra)


def measure_b8_next(row: Row, outdir: Path) -> Verdict:
    """B8's second symptom: the next request on a kept-alive connection.
    As measure_b8, with RequestReadTimeout 0 (where the tree has it) so
    that the first request is read without CanRead, then a second request
    on each sampled connection once all the first ones were answered
    (probe fdscale --sample-requests 2): TFPHTTPConnection.RequestPending
    asks Socket.CanRead (select), which never sees a descriptor above
    1023.  A run in which a first request went unanswered says nothing
    about the next one (inconclusive); the first ten's second requests
    are the control."""
    def once(tag: str) -> Verdict:
        srv = _server(row, outdir, tag, B8_FLAGS + ["--request-read-timeout", "0"] + row.flags)
        srv.nice = HEAVY_NICE
        with srv:
            res = b8_probe(srv, outdir, tag, "--sample-requests", "2")
        k, left = res.get("sample", B8_SAMPLE), res.get("accept_queue_left")
        rounds = res.get("rounds") or []
        first, nxt = (rounds + [{}, {}])[:2]
        data = {"opened": res.get("opened"), "sample": k, "accept_queue_left": left,
                "accept_wait_end": res.get("accept_wait_end"), "rounds": rounds}
        fig = (f"{res.get('opened')} connections open, {b8_accepted(res)}"
               f"; request 1: first {k}: {first.get('answered_low')} answered, last {k}: "
               f"{first.get('answered_high')}; request 2 on the same connections: first {k}: "
               f"{nxt.get('answered_low')} answered, last {k} (server fds above 1023): "
               f"{nxt.get('answered_high')} answered")
        if (res.get("opened") != B8_CONNECTIONS or left != 0 or len(rounds) != 2
                or first.get("answered_low") != k or first.get("answered_high") != k
                or nxt.get("answered_low") != k):
            return Verdict("inconclusive", fig, data)
        if nxt.get("answered_high") == 0:
            return Verdict("reproduced", fig, data)
        if nxt.get("answered_high") == k:
            return Verdict("fixed", fig, data)
        return Verdict("inconclusive", fig, data)
    return once("b8-next")   # an inconclusive run is made once more by retried()


# B8 in thread mode polled (pool mode cannot be measured so: its workers
# are all taken by the idle connections and the accept queue never empties).
B8_POLLED = ("--thread-mode", "polled")
MEASURES = {
    "B8": lambda r, o, st: measure_b8(r, o),
    # B8's symptoms apart (make bisect judges each, SYMPTOMS): the matrix
    # column B8 is the first.
    "B8.first": lambda r, o, st: measure_b8(r, o),
    "B8.next": lambda r, o, st: measure_b8_next(r, o),
    "B8.polled": lambda r, o, st: measure_b8(r, o, B8_POLLED),
}
# B8's symptoms, each with its own history: name, the measure (a MEASURES
# key), what it is.  The first is what the matrix column judges.
SYMPTOMS = (("first", "B8.first", "a connection's first request is not read: with RequestReadTimeout "
             "above 0 the read waits in Socket.CanRead (select), which never sees a descriptor "
             "above 1023"),
            ("next", "B8.next", "on a kept-alive connection the next request is never read: "
             "TFPHTTPConnection.RequestPending asks Socket.CanRead (select)"),
            ("polled", "B8.polled", "in thread mode polled a connection is never read: "
             "TFPPolledConnectionHandler.CheckConnection asks Socket.CanRead(0) (select)"))
# It loads the machine (1,100 threads): the matrix runs it one at a time.
HEAVY = True
# What a run under Wine cannot show (a figure would be Wine's, not Windows').
WINE_NA = ("not measured under Wine: Winsock's select() takes a list of sockets, not a "
           "descriptor bitmap, and under Wine each of 1,100 connections costs a thread "
           "start in the Wine server, so the count would be Wine's, not Windows'")
