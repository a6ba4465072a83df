#!/usr/bin/env python3
"""hazards.py - what a fix may break, beyond "its defect is gone".

A maintainer asks of a connection-handling fix: can busy clients hold every
worker while another client gets nothing?  Does every thread and
descriptor come back when the clients leave?  This runs those checks on the
model and on the real server built from trunk, stock and with the fixes,
in every ThreadMode a fix touches, and on a fixture that must fail them
(the B6 fix that served a kept-alive connection's next requests on the
worker that had it, as shipped before: tests/hazards/unfair-b6.patch on the
model, unfair-b6.fpc.patch on the real trunk; with a KeepConnectionIdleTimeout
longer than the run, FIXTURE_FLAGS), so that the checks are proven able to
fail.

Fairness: K = W + 4 keep-alive clients, each sending requests back to back
for a bounded time, against a pool of W workers: upstream's default
(TThread.ProcessorCount) and, set explicitly (--pool-threads), one worker
and four (and against the other modes, with K for the default W).  A
verdict from counts and same-run ratios, never a time bound:
  fair     every client answered at least FAIR_MIN_ANSWERED requests, and
           the least-served client got at least 1/FAIR_SPREAD of the
           most-served one's count;
  starves  some client fell outside those bounds (its count and its median
           latency are the figure);
The lone client's median (one connection, same server, same run) is a
figure beside it: what the mode costs a request when nobody competes.

Resources: the server's threads and descriptors, counted in /proc after
start and again once the clients have closed, polled until they are back
at the baseline (bounded; what is left is the figure).

Headers: an application's own headers (GET /own-headers: X-App, and the
Connection value it asks for) reach the client as it set them, once, on
kept-alive and on closing connections, stock and with every fix that
writes headers (B4's announced close, B3's coalesced writes); a fixture
that overwrites the application's Connection header
(tests/hazards/announce-close-overrides.patch) must fail.

Order: pipelined and back-to-back requests for /bytes/1../bytes/8 on one
connection: every answer is its own request's (its body length), in
order, once; all arrive where B2 (pipelined) and, in pool mode, B6 are
fixed.

Exclusivity: both servers log "served by two threads at once" when a
thread enters a connection's request handling while another is in it (the
model in connection_handle_request, the real server around
DoHandleRequest); no row may log it.

The mix users send (MIX_*, below): fast requests beside slow routes, for
stock, every upstream report's fixes alone (patchset's report:NAME, built
here: build/report-NAME/server-min, build/real-trunk/report-NAME/fpserver),
the B6 fix alone and all, in tmThread, tmThreadPool (2 workers) and
tmPolled, on the model and the real trunk: a ping client beside a client
looping GET /slow?ms=300 (back to back and 150 ms apart, longer than
KeepConnectionIdleTimeout), beside more slow clients than workers (its
turn, counted in the order of answers), and a paced client's median
against tmThread's in the same run.  The B6 fix as shipped before it
served kept-alive requests on readiness (tests/hazards/tick-bound-b6*.patch)
is a fixture those rows must find held.  Table: results/hazards/mix.md.

Usage: hazards.py [--short] [--json PATH]   (exit 0 only when every check
matches its expectation; TEST lines as the rest of the suite)
       hazards.py --variant V [--real-exe PATH] [--no-model] [--json PATH]
the rows of one variant only (V: stock, all, a fix or fixes joined by '+'),
every mode, no fixture; --real-exe: the real server's program for V (default
build/real-trunk/V/fpserver); --no-model: the real row alone (make check)
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import httpwire  # noqa: E402
import kit  # noqa: E402
import patchset  # noqa: E402

TOP = kit.TOP
OUT = TOP / "results" / "hazards"
FIXTURES = {"unfair-b6": TOP / "tests" / "hazards" / "unfair-b6.patch",
            "announce-close-overrides": TOP / "tests" / "hazards" / "announce-close-overrides.patch",
            "tick-bound-b6": TOP / "tests" / "hazards" / "tick-bound-b6.patch"}
REAL_TRUNK = TOP / "build" / "real-trunk"

# The pool's default size is TThread.ProcessorCount, on the model and the
# real server alike; pool-N sets N workers (--pool-threads).  Each mode
# gets K = its workers + 4 clients: always more than the workers.
WORKERS = os.cpu_count() or 2
POOL_SIZES = [1, 4]
RUN_MS = 1500
FAIR_MIN_ANSWERED, FAIR_SPREAD = 3, 4.0
KEEP = ["--keep-connections", "--keep-connection-timeout", "15000", "--socket-handler", "nodelay"]
# The K clients connect at once: upstream's QueueSize (5) would let the
# kernel drop the SYNs beyond the backlog while the accept thread is
# descheduled (the probe then reports connect_failed, the run no verdict).
# The checks are about workers, not the backlog.
BACKLOG = ["--queue-size", "64"]
MODES = {"pool": ["--thread-mode", "pool"],
         "thread": ["--thread-mode", "thread"],
         "polled": ["--thread-mode", "polled"]}
SIZED = {f"pool-{n}": n for n in POOL_SIZES}   # mode: its workers
FAIR_MODES = {**MODES, **{m: MODES["pool"] + ["--pool-threads", str(n)] for m, n in SIZED.items()}}
# The fixture holds a worker while its client sends again within
# KeepConnectionIdleTimeout (default 50 ms): a probe the machine leaves
# unscheduled for 50 ms lets the workers go, and on a loaded machine the
# real fixture came out fair (c73, CI-like: all 8 clients answered, 1,743
# to 4,394 times, over 4 workers).  It runs with a wait longer than the
# run, so that the hold it is there to show does not rest on the load.
FIXTURE_FLAGS = {"unfair-b6": ["--keep-connection-idle-timeout", str(4 * RUN_MS)]}


def is_pool(mode: str) -> bool:
    return mode == "pool" or mode in SIZED


def workers(mode: str) -> int:
    return SIZED.get(mode, WORKERS)


def clients(mode: str) -> int:
    return workers(mode) + 4
VARIANTS = ["stock", "pool-idle-fallback", "all"]         # every mode, also in --short
EVERY = patchset.variants("c") + patchset.pairs("c")     # every row of the matrix
RESOURCE_DEADLINE_S = 5.0


def build_fixture(tmp: Path, name: str) -> Path:
    """server-min with a fixture patch, built beside the kit's variants."""
    src = tmp / name
    shutil.copytree(TOP / "server-min", src / "server-min")
    subprocess.run(["patch", "-s", "-p1", "-d", str(src), "-i", str(FIXTURES[name])], check=True)
    exe = src / "server-min.bin"
    subprocess.run(["cc", "-std=c11", "-D_GNU_SOURCE", "-O2", "-pthread", "-o", str(exe),
                    *map(str, sorted((src / "server-min").glob("*.c")))], check=True)
    return exe


def build_real_fixture(tmp: Path, name: str) -> Path | None:
    """The real trunk with a fixture's Pascal patch (tests/hazards/
    NAME.fpc.patch, against the pristine file) in place of the series:
    repro/fpc/build.sh reads a one-patch series from another folder.  None
    where the trunk toolchain is not built."""
    fpc = kit.TRUNK_FPC
    src = TOP / "tests" / "hazards" / f"{name}.fpc.patch"
    if not (fpc.exists() and src.exists()):
        return None
    pdir, out = tmp / f"{name}-fpc", tmp / f"{name}-real"
    pdir.mkdir()
    shutil.copy(src, pdir / f"{name}.patch")
    (pdir / "series").write_text(f"{name}.patch\n")
    r = subprocess.run([str(TOP / "repro" / "fpc" / "build.sh"), "--fpc", str(fpc), "--set", "all",
                        "--out", str(out)], capture_output=True, text=True,
                       env={**os.environ, "KIT_FPC_PATCHES": str(pdir)})
    if r.returncode != 0:
        raise kit.KitError(f"the real fixture {name} does not build: {r.stderr.strip()[-2000:]}")
    return out / "fpserver"


def started(name: str, exe: Path, variant: str, outdir: Path, what: str, flags: list[str]) -> kit.Server:
    """The row's server, started with flags; its log is named for the row
    and what is measured."""
    tag = f"{name.replace(' ', '_').replace('/', '_')}-{what}"
    srv = kit._server(kit.Row(name, variant, path=exe), outdir, tag, flags)
    srv.start()
    return srv


def proc_counts(pid: int) -> tuple[int, int]:
    return (len(os.listdir(f"/proc/{pid}/task")), len(os.listdir(f"/proc/{pid}/fd")))


def fairness(srv: kit.Server, outdir: Path, tag: str, k: int) -> dict:
    """k clients back to back and, beside them, nothing: first the lone
    client alone, then the k together (same server, same run)."""
    lone = kit.probe(srv, "load", "-c", "1", "-n", "1000000", "--deadline-ms", str(RUN_MS // 3),
                     out=outdir / f"{tag}-lone.json")
    many = kit.probe(srv, "load", "-c", str(k), "-n", "1000000", "--deadline-ms", str(RUN_MS),
                     out=outdir / f"{tag}-many.json")
    ans = many["answered"]
    p50 = [p for p in many["p50_us"] if p is not None]
    lone_p50 = lone["p50_us"][0]
    # Counts decide; the medians are figures (with more threads than cores
    # the OS scheduler spreads them, whatever the server does).
    fair = min(ans) >= FAIR_MIN_ANSWERED and min(ans) * FAIR_SPREAD >= max(ans)
    # A client the probe could not run is no evidence of starving.
    errs = {e: n for e, n in many.get("errors", {}).items() if n}
    broken = errs.get("connect_failed")
    verdict = "fair" if fair else (f"no verdict ({broken} connects failed)" if broken else "starves")
    return {"verdict": verdict, "errors": errs, "answered": ans, "p50_us": many["p50_us"],
            "lone_p50_us": lone_p50,
            "median_p50_over_lone": (sorted(p50)[len(p50) // 2] / lone_p50) if p50 and lone_p50 else None}


def resources(srv: kit.Server, base: tuple[int, int], spare_threads: int) -> dict:
    """Threads and descriptors back at the baseline once the clients left:
    polled (the server reaps closed keep-alive connections on its own
    schedule), bounded by RESOURCE_DEADLINE_S.  A pool keeps its workers
    (up to MaxThreads): spare_threads of them may stay."""
    end = time.monotonic() + RESOURCE_DEADLINE_S

    def back(now: tuple[int, int]) -> bool:
        return now[0] <= base[0] + spare_threads and now[1] <= base[1]
    now = proc_counts(srv.proc.pid)
    while not back(now) and time.monotonic() < end:
        time.sleep(0.05)   # polling /proc, not waiting for an event
        now = proc_counts(srv.proc.pid)
    back = back(now)
    return {"verdict": "returned" if back else "leaked", "baseline": list(base), "after": list(now)}


def measure(name: str, exe: Path, variant: str, mode: str, outdir: Path) -> dict:
    srv = started(name, exe, variant, outdir, mode,
                  KEEP + BACKLOG + FAIR_MODES[mode] + FIXTURE_FLAGS.get(variant, []))
    tag = srv.log_path.name[:-len(".server.log")]
    try:
        base = proc_counts(srv.proc.pid)
        fair = fairness(srv, outdir, tag, clients(mode))
        # Where clients starve as expected they may be held still: no verdict
        # on resources there, and no bounded wait for them.
        res = (resources(srv, base, workers(mode) if is_pool(mode) else 0)
               if fair["verdict"] == "fair" or expected_fair(variant, mode) else None)
    finally:
        srv.stop()
    overlaps = srv.log_path.read_text(errors="replace").count("served by two threads at once")
    return {"row": name, "variant": variant, "mode": mode, "fairness": fair, "resources": res,
            "overlaps": overlaps, "stopped_by_term": srv.stopped_by_term}


# The application's own headers (GET /own-headers): what a fix that adds a
# Connection header (B4) or rewrites how headers are written (B3's
# coalesced writes) must leave as the application set them.  Kept-alive
# connections (tmThread) and closing ones (tmNone), one connection per
# mode: the second and third requests reuse it where the server keeps it.
HEADER_VARIANTS = ["stock", "announce-close", "coalesce-writes", "all"]
HEADER_MODES = {"keep-alive": KEEP + ["--thread-mode", "thread"], "closing": ["--thread-mode", "none"]}
HEADER_ASKS = ["", "keep-alive", "close"]   # the application's Connection value ("" = none)


def own_headers(srv: kit.Server, fresh_each: bool) -> list[dict]:
    """One GET /own-headers per HEADER_ASKS entry, on one connection while
    the server keeps it (a new one after a Connection: close), or on a
    fresh connection each (fresh_each: a server that closes after every
    response, announced or not, B4): per request the X-App and Connection
    header lines the response carried."""
    out, sock = [], None
    try:
        for ask in HEADER_ASKS:
            if sock is None:
                sock = httpwire.socket.create_connection((srv.address, srv.port), timeout=5)
            q = f"?connection={ask}" if ask else ""
            got = httpwire.exchange(sock, f"/own-headers{q}")
            h = got[0]["headers"] if got else []
            out.append({"ask": ask, "answered": bool(got),
                        "x_app": [v for n, v in h if n.lower() == "x-app"],
                        "connection": [v for n, v in h if n.lower() == "connection"]})
            if fresh_each or not got or any(v.lower() == "close" for v in out[-1]["connection"]):
                sock.close()
                sock = None
    finally:
        if sock is not None:
            sock.close()
    return out


def headers_kept(answers: list[dict]) -> tuple[bool, str]:
    """Each response carries X-App once, and the application's Connection
    value as its only Connection header (none asked: at most one)."""
    bad = []
    for a in answers:
        want = [a["ask"]] if a["ask"] else None
        if not a["answered"]:
            bad.append(f"'{a['ask']}' unanswered")
        elif a["x_app"] != ["own"]:
            bad.append(f"'{a['ask']}': X-App {a['x_app']}")
        elif want is not None and a["connection"] != want:
            bad.append(f"'{a['ask']}': Connection {a['connection']}")
        elif want is None and len(a["connection"]) > 1:
            bad.append(f"none asked: Connection {a['connection']}")
    fig = "; ".join(f"asked {a['ask'] or 'none'} -> Connection {a['connection']}, X-App {a['x_app']}"
                    for a in answers)
    return not bad, ("; ".join(bad) + " | " if bad else "") + fig


def measure_headers(name: str, exe: Path, variant: str, mode: str, outdir: Path) -> dict:
    srv = started(name, exe, variant, outdir, f"headers-{mode}", HEADER_MODES[mode])
    try:
        answers = own_headers(srv, fresh_each=mode == "closing")
    finally:
        srv.stop()
    ok, fig = headers_kept(answers)
    return {"row": name, "variant": variant, "mode": mode, "kept": ok, "figure": fig, "answers": answers}


# Order and completeness: ORDER_K requests on one connection, for
# /bytes/1 .. /bytes/ORDER_K, so that each response's body length names the
# request it answers.  Pipelined (all in one write) and back to back (the
# next once the last was answered).  Every response must answer its own
# request, in order, once (the answers are a prefix 1..m); all ORDER_K
# arrive where the row fixes what stands in the way (B2 for the pipelined
# ones, B6 in pool mode).  The read bound only ends a wait.
ORDER_K = 8
ORDER_WAIT_S = 2.0


def ordered_answers(srv: kit.Server, pipelined: bool) -> dict:
    paths = [f"/bytes/{i}" for i in range(1, ORDER_K + 1)]
    lengths: list[int] = []
    with httpwire.socket.create_connection((srv.address, srv.port), timeout=5) as sock:
        if pipelined:
            sock.sendall(b"".join(map(httpwire.get, paths)))
            got = httpwire.parse_responses(httpwire.read_responses(sock, ORDER_K, ORDER_WAIT_S))
            lengths = [len(r["body"]) for r in got]
        else:
            for path in paths:
                got = httpwire.exchange(sock, path, ORDER_WAIT_S)
                if not got:
                    break
                lengths += [len(r["body"]) for r in got]
    ordered = lengths == list(range(1, len(lengths) + 1))
    return {"lengths": lengths, "ordered": ordered, "complete": ordered and len(lengths) == ORDER_K}


def expected_complete(variant: str, mode: str, pipelined: bool) -> bool:
    """Every answer arrives: in pool mode where B6 is fixed (its fix looks
    at FBuffer itself when it picks a connection whose request is there,
    so pipelined requests need no other fix); elsewhere back to back
    always, pipelined where B2 is fixed."""
    fixed = set(patchset.fixed_by(variant))
    if is_pool(mode):
        return "B6" in fixed
    return not pipelined or "B2" in fixed


def measure_order(name: str, exe: Path, variant: str, mode: str, outdir: Path) -> dict:
    srv = started(name, exe, variant, outdir, f"order-{mode}", KEEP + MODES[mode])
    try:
        runs = {"pipelined": ordered_answers(srv, True), "back to back": ordered_answers(srv, False)}
    finally:
        srv.stop()
    return {"row": name, "variant": variant, "mode": mode, "runs": runs}



# ---- the mix users send: fast requests beside slow routes ---------------
#
# Every upstream report's fixes alone (patchset's report:NAME), stock, the
# B6 fix alone and all, in tmThread, tmThreadPool (MIX_WORKERS workers) and
# tmPolled, on the model and the real trunk (the servers' defaults but
# keep-alive on and TCP_NODELAY set by the application's socket handler,
# KEEP: B3's delayed ACKs are not what is measured here).  Clients are
# Python threads, each on its own kept-alive connection (its first request
# not counted); a latency runs from the request's send to its response's
# last byte (time.monotonic()).  A client's pause is its load, never a
# wait for an event; MIX_WAIT_S only bounds a wait for an answer.
#   beside slow  a ping client (MIX_PINGS back to back, MIX_PACED_PINGS
#                MIX_GAP_MS apart: longer than KeepConnectionIdleTimeout,
#                50 ms, and half a 100 ms accept-idle tick away from it, so
#                that a tick-bound server answers it ~50 ms late whatever
#                the load does to the tick) alone, then beside a client
#                looping GET /slow?ms=MIX_SLOW_MS.  "delayed" when the slow
#                route adds to the ping's median more than MIX_TRACK of the
#                route's own median (it tracks the slow route; same run),
#                "not delayed" otherwise (the ratio beside/alone is a
#                figure: for sub-millisecond medians it is noise),
#                "unanswered" when the ping client alone is not answered.
#                Where a worker is idle: tmThread, tmThreadPool.
#   busy         more slow clients than workers (MIX_WORKERS + 1; tmPolled
#                2; tmThread 2) loop GET /slow?ms=MIX_BUSY_MS beside a
#                ping client sending MIX_BUSY_PINGS paced requests: in the
#                order of answers, the slow answers that came between a
#                ping's send and its answer are, for the median ping, at
#                most its turn
#                (mix_turn: two answers each, the round under way and the
#                next), and every ping is answered: "in turn",
#                "out of turn", "starved".
#   paced/thread the paced client's median alone in tmThreadPool and
#                tmPolled against tmThread's in the same run: "tick-bound"
#                beyond MIX_PACED_MAX times it and by more than MIX_TRACK
#                of the pause, "as tmThread" otherwise.
# What a row expects comes from patchset (expected_mix): tmThread holds
# everywhere; tmThreadPool answers a kept-alive connection's next request
# only where B6 is fixed (stock never does); tmPolled reads it on its
# accept-idle tick until B21 is fixed, and serves its connections in turn;
# a variant carrying a fix in TICK_BOUND (the B6 fix as shipped before
# readiness: the task that let a connection go leaves it to the accept-idle
# tick, and no task starts while one runs) is held for a paced client.  Its
# fixture, tests/hazards/tick-bound-b6*.patch, is expected held always: the
# proof that the rows can fail once TICK_BOUND is empty.
MIX_WORKERS = 2
MIX_MODES = {"thread": ["--thread-mode", "thread"],
             "pool": ["--thread-mode", "pool", "--pool-threads", str(MIX_WORKERS)],
             "polled": ["--thread-mode", "polled"]}
MIX_SLOW_MS, MIX_BUSY_MS = 300, 20
MIX_GAP_MS = 150
MIX_PINGS, MIX_PACED_PINGS, MIX_BUSY_PINGS = 20, 8, 5
MIX_TRACK, MIX_PACED_MAX = 0.1, 5.0
MIX_WAIT_S = 3.0
MIX_SIDE = 4
# Fixes whose pool rows are expected "held" for a paced client: none since
# the B6 fix serves a kept-alive request when it arrives; the fixture
# tick-bound-b6 (the fix as shipped before, on the accept-idle tick) keeps
# the proof that the check can fail.
TICK_BOUND: set[str] = set()
MIX_VARIANTS = ["stock"] + [f"report:{r}" for r in patchset.reports()] + ["pool-idle-fallback", "all"]


class Kept:
    """One kept-alive connection: GET and read one response at a time."""

    def __init__(self, srv: kit.Server):
        self.sock = httpwire.socket.create_connection((srv.address, srv.port), timeout=5)

    def get(self, path: str) -> tuple[float, float] | None:
        """(send time, answer time) of one GET, None when no complete
        answer came within MIX_WAIT_S (EOF, RST, or the bound)."""
        t0 = time.monotonic()
        try:
            self.sock.sendall(httpwire.get(path))
            buf, end = httpwire.read_responses_end(self.sock, 1, MIX_WAIT_S)
        except OSError:
            return None
        return (t0, time.monotonic()) if end == "enough" else None

    def close(self) -> None:
        self.sock.close()


def slow_loop(srv: kit.Server, ms: int, stop: threading.Event, answers: list) -> None:
    """GET /slow?ms=ms again and again on one kept-alive connection until
    stop; each answer's (send, answer) times in answers."""
    c = Kept(srv)
    try:
        while not stop.is_set():
            got = c.get(f"/slow?ms={ms}")
            if got is None:
                break
            answers.append(got)
    finally:
        c.close()


def pings(srv: kit.Server, n: int, gap_ms: int) -> list[tuple[float, float]]:
    """n GET /ping on one kept-alive connection, gap_ms between an answer
    and the next request (the client's own pacing); ends at the first one
    unanswered.  The connection's first request (its accept) is not
    counted: n more follow it."""
    c = Kept(srv)
    out = []
    try:
        if c.get("/ping") is None:
            return out
        for _ in range(n):
            if gap_ms:
                time.sleep(gap_ms / 1000)   # the client's pause: the load, not a wait for an event
            got = c.get("/ping")
            if got is None:
                break
            out.append(got)
    finally:
        c.close()
    return out


def median_ms(got: list[tuple[float, float]]) -> float | None:
    if not got:
        return None
    d = sorted(b - a for a, b in got)
    return round(d[len(d) // 2] * 1000, 3)


def beside(srv: kit.Server, slow: int, ms: int, run) -> tuple[object, list[float]]:
    """run() while `slow` clients loop GET /slow?ms=ms (started together
    with it: the figures are medians over the whole run), and the slow
    clients' (send, answer) times."""
    stop, answers = threading.Event(), []
    ts = [threading.Thread(target=slow_loop, args=(srv, ms, stop, answers), daemon=True) for _ in range(slow)]
    for t in ts:
        t.start()
    try:
        got = run()
    finally:
        stop.set()
        for t in ts:
            t.join(ms / 1000 + MIX_WAIT_S + 1)
    return got, answers


def pings_beside(srv: kit.Server, n: int, gap_ms: int) -> dict:
    alone = pings(srv, n, gap_ms)
    if len(alone) < n:   # the client alone is not served: nothing to set beside it
        return {"verdict": "unanswered", "alone_ms": median_ms(alone), "beside_ms": None,
                "answered": [len(alone)], "ratio": None, "slow_ms": None, "slow_answers": 0}
    near, slow = beside(srv, 1, MIX_SLOW_MS, lambda: pings(srv, n, gap_ms))
    a, b = median_ms(alone), median_ms(near)
    s = median_ms(slow)
    if len(alone) < n or len(near) < n:
        verdict = "unanswered"
    else:
        # It tracks the slow route: the route adds to the client's median
        # more than MIX_TRACK of the route's own median (same run).
        verdict = "delayed" if s is None or b - a > MIX_TRACK * s else "not delayed"
    return {"verdict": verdict, "alone_ms": a, "beside_ms": b, "answered": [len(alone), len(near)],
            "ratio": round(b / a, 2) if a and b else None, "slow_ms": s, "slow_answers": len(slow)}


def busy_turns(srv: kit.Server, slow: int, turn: int) -> dict:
    """MIX_BUSY_PINGS paced pings beside `slow` clients looping the slow
    route: how many slow answers came while each ping waited; at most
    `turn` is its turn."""
    got, answers = beside(srv, slow, MIX_BUSY_MS, lambda: pings(srv, MIX_BUSY_PINGS, MIX_GAP_MS))
    waits = [sum(1 for _, t in answers if a < t < b) for a, b in got]
    starved = len(got) < MIX_BUSY_PINGS
    # The median ping's wait, as the other checks' medians: a machine
    # that leaves a thread unscheduled for 100 ms (load 100 on two cores)
    # put two of five pings in tmThread 10 answers late.
    verdict = "starved" if starved else ("in turn" if sorted(waits)[len(waits) // 2] <= turn else "out of turn")
    return {"verdict": verdict, "answered": len(got), "slow_between": waits, "slow_clients": slow,
            "turn": turn, "median_ms": median_ms(got), "slow_answers": len(answers)}


def mix_workers(mode: str) -> int:
    """The workers serving requests: tmPolled's one thread, the pool's
    MIX_WORKERS, tmThread's one per connection (none shared)."""
    return {"polled": 1, "pool": MIX_WORKERS}.get(mode, 0)


def mix_slow_clients(mode: str) -> int:
    return max(mix_workers(mode), 1) + 1


def mix_turn(mode: str) -> int:
    """A ping's turn, in slow answers while it waits: served round robin
    (tmPolled's one thread and the pool's tasks scan the connections in
    turn), each slow client gets at most the rest of the round under way
    when the ping came, and the next round up to the ping: two answers.
    A FIFO of the pool's workers gives at most workers + slow clients."""
    return 2 * mix_slow_clients(mode)


def measure_mix(name: str, exe: Path, variant: str, mode: str, outdir: Path) -> dict:
    srv = started(name, exe, variant, outdir, f"mix-{mode}", KEEP + BACKLOG + MIX_MODES[mode])
    try:
        out = {"row": name, "variant": variant, "mode": mode}
        if mode != "polled":
            out["back to back"] = pings_beside(srv, MIX_PINGS, 0)
            out["paced"] = pings_beside(srv, MIX_PACED_PINGS, MIX_GAP_MS)
        else:
            alone = pings(srv, MIX_PACED_PINGS, MIX_GAP_MS)
            out["paced"] = {"alone_ms": median_ms(alone), "answered": [len(alone)]}
        out["busy"] = busy_turns(srv, mix_slow_clients(mode), mix_turn(mode))
    finally:
        srv.stop()
    out["overlaps"] = srv.log_path.read_text(errors="replace").count("served by two threads at once")
    return out



def report_dir(variant: str) -> str:
    """build/<this>/ for a variant: report:NAME -> report-NAME."""
    return variant.replace("report:", "report-")


def build_report_model(variant: str) -> Path:
    """The model with exactly a report's fixes (report:NAME), patched in
    series order by scripts/build-variant.sh, compiled as the Makefile
    compiles a variant: build/report-NAME/server-min."""
    out = kit.SERVER_BUILD / report_dir(variant)
    subprocess.run([str(TOP / "scripts" / "build-variant.sh"), "+".join(patchset.members(variant)), str(out)],
                   check=True)
    src = out / "src" / "server-min"
    subprocess.run([sys.executable, str(TOP / "scripts" / "cc-objects.py"), "--map", f"{out / 'src'}/=",
                    "cc", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-O2", "-g", "-pthread",
                    "-o", str(out / "server-min"), *map(str, sorted(src.glob("*.c")))], check=True, cwd=TOP)
    return out / "server-min"


def build_report_real(variant: str) -> Path | None:
    """The real trunk with a report's Pascal patches (repro/fpc/build.sh
    --set FIX+FIX..., build.sh compiles only the units they change):
    build/real-trunk/report-NAME/fpserver.  None where the trunk toolchain
    is not built."""
    if not kit.TRUNK_FPC.exists():
        return None
    fixes = [f for f in patchset.members(variant) if patchset.pascal(f)]
    out = REAL_TRUNK / report_dir(variant)
    r = subprocess.run([str(TOP / "repro" / "fpc" / "build.sh"), "--fpc", str(kit.TRUNK_FPC),
                        "--set", "+".join(fixes), "--out", str(out)], capture_output=True, text=True)
    if r.returncode != 0:
        raise kit.KitError(f"the real trunk with {variant} does not build: {r.stderr.strip()[-2000:]}")
    return out / "fpserver"


def mix_rows(variants: list[str] = MIX_VARIANTS) -> list[tuple[str, Path, str]]:
    """(row name, server, variant) for the mix: a report's servers built
    here, the others the kit's."""
    out = []
    for v in variants:
        model = build_report_model(v) if v.startswith("report:") else kit.binary(v)
        real = build_report_real(v) if v.startswith("report:") else REAL_TRUNK / v / "fpserver"
        out.append((f"model {v}", model, v))
        if real is not None and real.exists():
            out.append((f"real trunk + {v}" if v != "stock" else "real trunk", real, v))
    return out


def mix_fixed(variant: str) -> set[str]:
    return {"B6", "B7"} if variant == "tick-bound-b6" else set(patchset.fixed_by(variant))


def tick_bound(variant: str) -> bool:
    """The variant carries a fix in TICK_BOUND (or is its fixture)."""
    return variant == "tick-bound-b6" or bool(TICK_BOUND & set(patchset.members(variant)))


def expected_mix(variant: str, mode: str, check: str) -> str | None:
    """What a row's check comes out as, from patchset (None: no verdict
    expected, the figure only).  check: back to back, paced, busy, or
    paced/thread."""
    fixed = mix_fixed(variant)
    if mode == "thread":
        return {"busy": "in turn"}.get(check, "not delayed")
    if mode == "polled":   # one thread: its busy turn, and its tick until B21 is fixed
        if check == "busy":
            return "in turn"
        return "as tmThread" if "B21" in fixed else "tick-bound"
    if "B6" not in fixed:   # stock pool: a kept-alive connection's next request is never served
        return "starved" if check == "busy" else "unanswered"
    if tick_bound(variant):
        # Served on the tick once its task let go, and by no new task
        # while one runs: deterministic for a paced client; back to back
        # only when its task let go at the start (a race: the figure).
        return {"paced": "delayed", "paced/thread": "tick-bound", "busy": "in turn"}.get(check)
    return {"busy": "in turn", "paced/thread": "as tmThread"}.get(check, "not delayed")


def paced_over_thread(mine: dict, thread: dict) -> tuple[str, str]:
    """The paced client's median alone in a mode against tmThread's in the
    same run: "tick-bound" beyond MIX_PACED_MAX times it and by more than
    MIX_TRACK of the client's own pause (both same-run ratios)."""
    a, t = mine["paced"].get("alone_ms"), thread["paced"].get("alone_ms")
    answered = mine["paced"]["answered"][0]
    if answered < MIX_PACED_PINGS or a is None:
        return "unanswered", f"{answered} of {MIX_PACED_PINGS} paced pings answered"
    if t is None:
        return "no verdict", "tmThread's paced client unanswered"
    over = a > MIX_PACED_MAX * t and a - t > MIX_TRACK * MIX_GAP_MS
    return ("tick-bound" if over else "as tmThread"), f"median {a} ms, tmThread {t} ms ({a / t:.1f}x)"


def mix_tests(results: list[dict]) -> int:
    """TEST lines for the mix rows; the number that failed."""
    failures = 0
    thread = {r["row"]: r for r in results if r["mode"] == "thread"}
    for r in results:
        name, v, m = f"hazards mix {r['row']} {r['mode']}", r["variant"], r["mode"]
        got: dict[str, tuple[str, str]] = {}
        for how in ("back to back", "paced"):
            if how in r and m != "polled":
                x = r[how]
                got[how] = (x["verdict"], f"ping median {x['alone_ms']} ms alone, {x['beside_ms']} ms beside "
                            f"GET /slow?ms={MIX_SLOW_MS} (its median {x['slow_ms']} ms); answered {x['answered']}")
        b = r["busy"]
        got["busy"] = (b["verdict"], f"{b['slow_clients']} slow clients, {mix_workers(m) or '-'} workers: slow answers "
                       f"while each ping waited {b['slow_between']} (turn {b['turn']}), {b['answered']} of "
                       f"{MIX_BUSY_PINGS} answered, median {b['median_ms']} ms")
        if m != "thread" and r["row"] in thread:
            got["paced/thread"] = paced_over_thread(r, thread[r["row"]])
        label = {"back to back": "fast beside slow, back to back", "paced": f"fast beside slow, {MIX_GAP_MS} ms apart",
                 "busy": "every worker busy, its turn", "paced/thread": f"{MIX_GAP_MS} ms apart, against tmThread"}
        for check, (verdict, fig) in got.items():
            want = expected_mix(v, m, check)
            if want is None:
                print(f"TEST: {name} {label[check]}: {verdict} [SKIP]  no verdict expected "
                      f"(the shipped B6 fix: held when its task let go at the start, a race); {fig}", flush=True)
                continue
            failures += kit_test(verdict == want, f"{name} {label[check]}: {verdict}"
                                 + (" as expected" if verdict == want else f", expected {want}"), fig)
        failures += kit_test(r["overlaps"] == 0, f"{name} no connection served by two threads at once",
                             f"{r['overlaps']} times")
    return failures


def mix_table(results: list[dict]) -> str:
    """results/hazards/mix.md: a row per server and thread mode, each
    check's verdict and its figure (ms: the ping's median alone / beside)."""
    thread = {r["row"]: r for r in results if r["mode"] == "thread"}

    def beside(x: dict | None) -> str:
        if not x:
            return "-"
        if x["verdict"] == "unanswered":
            return f"unanswered ({x['answered'][0]} answered alone)"
        return f"{x['verdict']} ({x['alone_ms']} / {x['beside_ms']} ms)"
    lines = ["# The mix users send: fast beside slow (repro/harness/hazards.py)", "",
             f"Ping median alone / beside a client looping GET /slow?ms={MIX_SLOW_MS}; busy: "
             "slow answers while the median ping waited (and the most), against its turn; paced: median over tmThread's.", "",
             "| server | mode | back to back | paced | every worker busy | paced against tmThread |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in results:
        m, b = r["mode"], r["busy"]
        w = sorted(b["slow_between"])
        busy = f"{b['verdict']} ({w[len(w) // 2]}, most {w[-1]}, of {b['turn']})" if w else b["verdict"]
        pt = paced_over_thread(r, thread[r["row"]]) if m != "thread" and r["row"] in thread else ("-", "")
        pt_s = pt[0] + (f" ({pt[1].split('(')[-1]}" if "(" in pt[1] else "")
        lines.append(f"| {r['row']} | {m} | {beside(r.get('back to back'))} | "
                     f"{beside(r['paced']) if m != 'polled' else str(r['paced']['alone_ms']) + ' ms alone'} | "
                     f"{busy} | {pt_s} |")
    return "\n".join(lines) + "\n"

def expected_fair(variant: str, mode: str) -> bool:
    """Pool mode is fair only once B6 is fixed (stock never answers request
    2, the fixture starves); the other modes are fair on every row."""
    if not is_pool(mode):
        return True
    if variant == "unfair-b6":
        return False
    return "B6" in patchset.fixed_by(variant)


def expected_returned(variant: str, mode: str) -> bool:
    """In pool mode clients that close together hang the server until B7 is
    fixed (the accept thread waits for a worker with the list locked, the
    workers wait for the lock to remove their connections): their
    connections are never released."""
    if not is_pool(mode) or variant == "unfair-b6":
        return True
    return {"B6", "B7"} <= set(patchset.fixed_by(variant))


def rows(variants: list[str] = VARIANTS) -> list[tuple[str, Path, str]]:
    out = [(f"model {v}", kit.binary(v), v) for v in variants]
    trunk = [(f"real trunk + {v}" if v != "stock" else "real trunk", REAL_TRUNK / v / "fpserver", v)
             for v in variants]
    out += [r for r in trunk if r[1].exists()]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", action="store_true",
                    help="every row in pool mode; the other modes for stock, the B6 fix and all on the model")
    ap.add_argument("--json", type=Path, default=OUT / "hazards.json")
    ap.add_argument("--variant", help="the rows of this variant only, no fixture")
    ap.add_argument("--real-exe", type=Path, help="with --variant: the real server's program")
    ap.add_argument("--no-model", action="store_true", help="with --variant: no model row")
    a = ap.parse_args()
    if a.variant:
        return one_variant(a.variant, a.real_exe, not a.no_model, a.json)
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kit-hazards.") as tmp:
        # Every row in pool mode, where B6 and B7 live; the other modes for
        # every row (--short: for VARIANTS on the model only).
        def wanted(n: str, v: str, m: str) -> bool:
            if m in SIZED:   # explicit pool sizes: the rows B6's fix concerns
                return not a.short or v in VARIANTS or v == "unfair-b6"
            return m == "pool" or not a.short or (v in VARIANTS and not n.startswith("real"))
        todo = rows(EVERY)
        todo.append(("model fixture unfair-b6", build_fixture(Path(tmp), "unfair-b6"), "unfair-b6"))
        real_fixture = build_real_fixture(Path(tmp), "unfair-b6") if REAL_TRUNK.exists() else None
        if real_fixture:
            todo.append(("real trunk fixture unfair-b6", real_fixture, "unfair-b6"))
        jobs = [(n, e, v, m) for (n, e, v) in todo for m in FAIR_MODES if wanted(n, v, m)]
        htodo = rows(HEADER_VARIANTS)
        htodo.append(("model fixture announce-close-overrides",
                      build_fixture(Path(tmp), "announce-close-overrides"), "announce-close-overrides"))
        hjobs = [(n, e, v, m) for (n, e, v) in htodo for m in HEADER_MODES]
        ojobs = [(n, e, v, m) for (n, e, v) in rows(EVERY) for m in MODES if wanted(n, v, m)]
        mtodo = mix_rows()
        mtodo.append(("model fixture tick-bound-b6", build_fixture(Path(tmp), "tick-bound-b6"), "tick-bound-b6"))
        real_tick = build_real_fixture(Path(tmp), "tick-bound-b6") if REAL_TRUNK.exists() else None
        if real_tick:
            mtodo.append(("real trunk fixture tick-bound-b6", real_tick, "tick-bound-b6"))
        mjobs = [(n, e, v, m) for (n, e, v) in mtodo for m in MIX_MODES]
        # Fairness loads the CPUs: two servers at a time.  The header and
        # order checks mostly wait on a bound: four at a time.  The mix
        # rows mostly sleep (their clients' pauses, the slow route) and
        # judge by margins no load reaches (MIX_TRACK of a 300 ms route,
        # MIX_PACED_MAX and MIX_TRACK of the pause): MIX_SIDE at a time,
        # beside the others from the start.
        with ThreadPoolExecutor(MIX_SIDE) as mex:
            mfut = [mex.submit(measure_mix, *j, OUT) for j in mjobs]
            with ThreadPoolExecutor(2) as ex:
                results = list(ex.map(lambda j: measure(*j, OUT), jobs))
            with ThreadPoolExecutor(4) as ex:
                hresults = list(ex.map(lambda j: measure_headers(*j, OUT), hjobs))
                oresults = list(ex.map(lambda j: measure_order(*j, OUT), ojobs))
            mresults = [f.result() for f in mfut]
    return report(results, hresults, oresults, a.json, mresults)


def report(results: list[dict], hresults: list[dict], oresults: list[dict], out_json: Path,
           mresults: list[dict] | None = None) -> int:
    """The TEST lines of every row measured (the mix rows where given), and
    the JSON; 1 if one failed."""
    failures = 0
    for r in results:
        f, res = r["fairness"], r["resources"]
        want = "fair" if expected_fair(r["variant"], r["mode"]) else "starves"
        name = f"hazards {r['row']} {r['mode']}"
        fig = (f"{clients(r['mode'])} clients x {workers(r['mode']) if is_pool(r['mode']) else '-'} workers: answered "
               f"{f['answered']}, p50 us {f['p50_us']}; lone p50 {f['lone_p50_us']} us")
        failures += kit_test(f["verdict"] == want, f"{name} fairness: {f['verdict']}"
                             + (" as expected" if f["verdict"] == want else f", expected {want}"), fig)
        # A server that starved its clients may hold them still: resources
        # are a verdict where the clients were served.
        if res is not None:
            back = expected_returned(r["variant"], r["mode"])
            failures += kit_test((res["verdict"] == "returned") == back, f"{name} threads and descriptors "
                     + ("back at baseline" if back else "held (B7: the server hangs as the clients close)"),
                     f"baseline {res['baseline']}, after {res['after']} (threads, fds)")
        if want == "fair":
            ok = r["stopped_by_term"] is not False
            failures += kit_test(ok, f"{name} stops on SIGTERM once the clients left",
                     "honoured" if ok else "ignored (a second signal or KILL ended it)")
        failures += kit_test(r["overlaps"] == 0, f"{name} no connection served by two threads at once",
                             f"{r['overlaps']} times")
    pairs = {}
    for r in results:
        pairs.setdefault((r["variant"], r["mode"]), {})[r["row"].startswith("real")] = r["fairness"]["verdict"]
    for (v, m), both in sorted(pairs.items()):
        if len(both) == 2:
            failures += kit_test(both[False] == both[True], f"hazards model = real: {v} {m} fairness",
                                 f"model {both[False]}, real {both[True]}")
    for r in hresults:
        want = r["variant"] != "announce-close-overrides"
        failures += kit_test(r["kept"] == want, f"hazards {r['row']} {r['mode']} the application's own "
                             f"headers " + ("kept" if want else "overwritten (the fixture must fail)"),
                             r["figure"])
    for r in oresults:
        for how, run in r["runs"].items():
            name = f"hazards {r['row']} {r['mode']} {how}"
            fig = f"body lengths of the answers, in order: {run['lengths']}"
            failures += kit_test(run["ordered"], f"{name}: every answer its own request's, in order, once", fig)
            want = expected_complete(r["variant"], r["mode"], how == "pipelined")
            failures += kit_test(run["complete"] == want, f"{name}: {ORDER_K} of {ORDER_K} answered"
                                 if want else f"{name}: fewer than {ORDER_K} answered (B2/B6 not fixed here)", fig)
    doc = {"fairness": results, "headers": hresults, "order": oresults}
    if mresults is not None:
        failures += mix_tests(mresults)
        (OUT / "mix.md").write_text(mix_table(mresults))
        doc["mix"] = mresults
    out_json.write_text(json.dumps(doc, indent=1))
    return 1 if failures else 0


def one_variant(v: str, real_exe: Path | None, model: bool, out_json: Path) -> int:
    """The fairness, resource, exclusivity and order rows of variant v,
    every mode, and its header rows where it writes headers (make check)."""
    patchset.fixed_by(v)   # an unknown name raises here
    todo = rows([v]) if model else []
    todo = [r for r in todo if not r[0].startswith("real")]
    exe = real_exe or REAL_TRUNK / v / "fpserver"
    if exe.exists():
        todo.append(("real trunk" if v == "stock" else f"real trunk + {v}", exe, v))
    if not todo:
        print(f"TEST: hazards {v} [SKIP] no server built for it")
        return 4
    members = set(patchset.members(v))
    heads = [r for r in todo if v in HEADER_VARIANTS or members & set(HEADER_VARIANTS)]
    out_json.parent.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(2) as ex:
        results = list(ex.map(lambda j: measure(*j, out_json.parent),
                              [(n, e, r, m) for (n, e, r) in todo for m in FAIR_MODES]))
    with ThreadPoolExecutor(4) as ex:
        hresults = list(ex.map(lambda j: measure_headers(*j, out_json.parent),
                               [(n, e, r, m) for (n, e, r) in heads for m in HEADER_MODES]))
        oresults = list(ex.map(lambda j: measure_order(*j, out_json.parent),
                               [(n, e, r, m) for (n, e, r) in todo for m in MODES]))
    return report(results, hresults, oresults, out_json)


def kit_test(ok: bool, name: str, detail: str = "") -> int:
    """A TEST line; 1 when it failed, for the count."""
    print(f"TEST: {name} [{' OK ' if ok else 'FAIL'}]" + (f"  {detail}" if detail else ""), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
