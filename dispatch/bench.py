#!/usr/bin/python3
"""bench.py - dispatch models side by side, in one run.

    dispatch/bench.py [--out results/bench]          every row (make bench)
    dispatch/bench.py --quick --binary B --out DIR   the three epoll-model
                                                     modes only, shorter (test)
    dispatch/bench.py --smoke --binary B --out DIR   the same without the
                                                     head-of-line phase
    dispatch/bench.py --target HOST PORT [--pid PID] [--name N] [--out DIR]
                                                     any running server

Rows: the clone's four thread modes (build/all/server-min), the real trunk
fphttpserver in the same modes when build/real-trunk/all/fpserver exists,
and the epoll provider model (build/dispatch/dispatch) in its three
--dispatch modes.  Per row: threads idle / under /ping load / under slow
load / peak (/proc/PID/status); a wait-channel census and context switches
per request under /ping load at c=64; /ping throughput and latency at
c=1,16,64,256 (wrk --latency); /ping latency alone and beside 8 clients
looping on /slow?ms=200 (head-of-line); 3 pipelined GETs and POST+GET in one
send (build/probe).  For the bounded pool: what a client sees when the queue
is full, and that SIGTERM drains accepted work.

CPU-bound measurements (wrk) run one row at a time; the phases that mostly
wait (pipelining, head-of-line, bounded-pool checks) run for all rows at once.
Output: DIR/bench.json, DIR/bench.txt (the table), DIR/bench.png (gnuplot).
Verdicts on the expected shapes are made by dispatch/shapes.py.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOP = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(TOP / "repro" / "harness"))
import loadgen  # noqa: E402
import procstat  # noqa: E402
from kit import KitError, Server  # noqa: E402

CONCURRENCY = (1, 16, 64, 256)
CENSUS_AT = 64                 # the /ping load the census is taken under
SLOW_CLIENTS, SLOW_MS = 8, 200
KEEP = ["--keep-connections", "--keep-connection-timeout", "15000"]
CLONE = TOP / "build/all/server-min"         # --clone overrides
TRUNK = TOP / "build/real-trunk/all/fpserver"   # --trunk overrides
MODEL = TOP / "build/dispatch/dispatch"
PROBE = TOP / "build/probe"
# How long a row may take to exit on SIGTERM before it is killed (a
# deadline; whether it exited on SIGTERM is recorded).
STOP_DEADLINE_S = 1.0


class Profile:
    """Durations: full for make bench, short for the test."""

    def __init__(self, quick: bool, smoke: bool = False):
        self.quick = quick or smoke
        self.smoke = smoke          # no head-of-line phase: sanitizer builds
        self.ping_s = 1.0
        self.concurrency = (16,) if smoke else (64,) if quick else CONCURRENCY
        self.alone_s = 1.0 if quick else 1.5
        self.beside_s = 1.0 if quick else 2.0
        self.pipe_deadline_ms = 1500
        self.rounds = 0 if self.quick else 3


T0 = time.monotonic()


def say(msg: str) -> None:
    print(f"[bench {time.monotonic() - T0:5.1f}s] {msg}", flush=True)


# ---- rows ---------------------------------------------------------------

def server_rows(model: Path, clone: Path = CLONE,
                trunk: Path = TRUNK) -> tuple[list[dict], list[str]]:
    """(rows, skip lines).  A row: name, family, mode, argv."""
    rows, skips = [], []
    for family, binary, missing in (
            ("clone", clone, f"[SKIP] clone rows: {clone} not built (run make)"),
            ("trunk", trunk, f"[SKIP] real-trunk rows: {trunk} not built (make "
                             "real-trunk needs the FPC trunk toolchain)")):
        if binary.exists():
            rows += thread_mode_rows(family, binary)
        else:
            skips.append(missing)
    rows += model_rows(model)
    rows += horse_epoll_rows()
    skips += [f"[SKIP] horse-epoll-{v} row: {b} not built (make horse-epoll needs "
              f"its compiler)" for v, b in HORSE_EPOLL.items() if not b.exists()]
    return rows, skips


# Horse's real epoll provider (Horse.Provider.Epoll, -dHORSE_PROVIDER_EPOLL),
# built from Horse's source by repro/horse/build.sh (make horse-epoll, which
# make bench runs first; no row of make repro uses them): the kit's
# Horse program with the kit's routes, beside the model of its design.
HORSE_EPOLL = {"trunk": TOP / "build/horse/trunk/stock/stock/epoll/kithorse",
               "3.2.2": TOP / "build/horse/322/stock/stock/epoll/kithorse"}


def horse_epoll_rows() -> list[dict]:
    return [dict(name=f"horse-epoll-{v}", family="horse-epoll", mode="as built",
                 argv=[str(b), "--port", "0", "--horse"])
            for v, b in HORSE_EPOLL.items() if b.exists()]


def thread_mode_rows(family: str, binary: Path) -> list[dict]:
    """A server with fphttpserver's options (the clone, real trunk): one row
    per ThreadMode, keep-alive on where a mode has it."""
    modes = [("none", []), ("polled", KEEP), ("thread", KEEP), ("pool", KEEP)]
    return [dict(name=f"{family}-{m}", family=family, mode=m,
                 argv=[str(binary), "--port", "0", "--thread-mode", m] + extra)
            for m, extra in modes]


def model_rows(model: Path) -> list[dict]:
    return [dict(name=f"epoll-{m}", family="epoll-model", mode=m,
                 argv=[str(model), "--port", "0", "--dispatch", m])
            for m in ("global-pool", "inline", "bounded-pool")]


class Subject:
    """A server under test: one we start (row) or one we were pointed at."""

    def __init__(self, name: str, family: str, mode: str, host: str,
                 port: int, pid: int | None, server: Server | None = None):
        self.name, self.family, self.mode = name, family, mode
        self.host, self.port, self.pid, self.server = host, port, pid, server
        self.sampler = procstat.Sampler(pid) if pid else None
        self.r: dict = {"name": name, "family": family, "mode": mode,
                        "pid_known": pid is not None}

    def threads(self) -> int | None:
        return procstat.thread_count(self.pid) if self.pid else None


def start_row(row: dict, logdir: Path) -> Subject:
    srv = Server(argv=row["argv"], log_path=logdir / f"{row['name']}.log")
    srv.start()
    s = Subject(row["name"], row["family"], row["mode"], srv.address,
                srv.port, srv.proc.pid, srv)
    s.r["argv"] = [os.path.relpath(a, TOP) if a.startswith(str(TOP)) else a
                   for a in row["argv"]]
    return s


# ---- phases -------------------------------------------------------------

def phase_ping(s: Subject, prof: Profile) -> None:
    """/ping at each concurrency, one row at a time (CPU-bound)."""
    series = {}
    ping_max = 0
    for c in prof.concurrency:
        census = c == CENSUS_AT and s.sampler is not None
        if s.sampler:
            s.sampler.start(0.25 if census else 0.1, census=census)
        cpu0, t0 = (procstat.cpu_seconds(s.pid) if s.pid else None), time.monotonic()
        w = loadgen.wrk(s.host, s.port, "/ping", c, prof.ping_s)
        cpu1, t1 = (procstat.cpu_seconds(s.pid) if s.pid else None), time.monotonic()
        if cpu0 is not None and cpu1 is not None:
            w["cpu_s"] = cpu1 - cpu0
            w["cpu_cores"] = (cpu1 - cpu0) / (t1 - t0)
            w["cpu_us_per_req"] = 1e6 * (cpu1 - cpu0) / max(1, w["requests"])
        if s.sampler:
            ph = s.sampler.stop()
            w["threads_max"] = ph["threads_max"]
            ping_max = max(ping_max, ph["threads_max"])
            if census:
                reqs = max(1, w["requests"])
                s.r["census"] = ph["census"]
                s.r["census_channels"] = dict(sorted(
                    ph["channels"].items(), key=lambda kv: -kv[1])[:8])
                s.r["census_source"] = ph["census_source"]
                s.r["census_rounds"] = ph["rounds"]
                s.r["ctx"] = {"voluntary": ph["ctx_voluntary"],
                              "nonvoluntary": ph["ctx_nonvoluntary"],
                              "requests": w["requests"],
                              "vol_per_req": ph["ctx_voluntary"] / reqs,
                              "nonvol_per_req": ph["ctx_nonvoluntary"] / reqs}
        series[str(c)] = w
        say(f"{s.name}: /ping c={c}: {w['rps']:.0f} req/s, p99 "
            f"{fmt(w.get('p99_ms'))} ms, errors {w['errors']}, non-2xx "
            f"{w['non2xx']}" + (f", threads {w['threads_max']}"
                                if 'threads_max' in w else ""))
    s.r["ping"] = series
    s.r["threads_ping"] = ping_max if s.sampler else None


def phase_pipeline(s: Subject, prof: Profile) -> None:
    out = {}
    for scen, k in (("pipeline", "3"), ("post-pipeline", None)):
        argv = [str(PROBE), "--scenario", scen, "--deadline-ms",
                str(prof.pipe_deadline_ms), "--json"]
        if k:
            argv += ["-k", k]
        p = subprocess.run(argv + [s.host, str(s.port)], capture_output=True,
                           text=True, timeout=30)
        try:
            j = json.loads(p.stdout)
            out[scen] = {"sent": j["requests_sent"], "answered": j["responses"],
                         "status": j["status"], "errors": {
                             k2: v for k2, v in j["errors"].items() if v}}
        except (ValueError, KeyError):
            out[scen] = {"sent": None, "answered": None,
                         "error": (p.stderr or p.stdout).strip()[-200:]}
    s.r["pipelining"] = out


def phase_hol(s: Subject, prof: Profile) -> None:
    """/ping latency alone, then beside 8 clients looping on /slow.  (Alone
    is measured first only: after the slow clients stop, a server may still
    be serving requests they left behind, and nothing outside it can tell
    when it is done.)"""
    alone = loadgen.Pinger(s.host, s.port).run(prof.alone_s)
    base = loadgen.established_to(s.host, s.port)
    if s.sampler:
        s.sampler.start(0.1)
    slow_s = math.ceil(prof.beside_s + 1.0)   # wrk takes whole seconds
    wrk = subprocess.Popen(
        loadgen.wrk_cmd(s.host, s.port, f"/slow?ms={SLOW_MS}", SLOW_CLIENTS,
                        slow_s, timeout_s=5.0),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready = wait_until(lambda: loadgen.established_to(s.host, s.port)
                       >= base + SLOW_CLIENTS, 3.0)
    # A ping that waited for a slow request took at least half of one.
    beside = loadgen.Pinger(s.host, s.port).run(prof.beside_s, held_ms=SLOW_MS / 2)
    try:
        out, err = wrk.communicate(timeout=slow_s + 15)
    except subprocess.TimeoutExpired:
        wrk.kill()   # our own child, stuck against an unresponsive server
        out, err = wrk.communicate()
    if s.sampler:
        s.r["threads_slow"] = s.sampler.stop()["threads_max"]
    slow = loadgen.parse_wrk(out)
    if wrk.returncode != 0:
        say(f"{s.name}: slow clients: wrk failed: {err.strip()[-200:]}")
    a, b = alone, beside
    s.r["hol"] = {"alone": a, "beside": b, "slow_clients_up": ready,
                  "slow": {"requests": slow["requests"], "rps": slow["rps"],
                           "errors": slow["errors"], "wrk_exit": wrk.returncode}}
    s.r["hol"]["ratio"] = {p: (b[f"{p}_ms"] / a[f"{p}_ms"])
                           if a[f"{p}_ms"] and b[f"{p}_ms"] else None
                           for p in ("p50", "p90", "p99")}
    say(f"{s.name}: head-of-line /ping p90 alone {fmt(a['p90_ms'])} ms, "
        f"beside {SLOW_CLIENTS} x /slow?ms={SLOW_MS} {fmt(b['p90_ms'])} ms "
        f"(x{fmt(s.r['hol']['ratio']['p90'])}), beside samples {b['n']}")


def phase_rounds(subjects: list[Subject], prof: Profile) -> None:
    """The throughput shape compares rows measured seconds apart on a shared
    machine: /ping c=64 again in interleaved rounds (A B C A B C ...), so
    outside load falls on every row alike; the median is kept per row."""
    for k in range(prof.rounds):
        for s in subjects:
            cpu0, t0 = procstat.cpu_seconds(s.pid), time.monotonic()
            w = loadgen.wrk(s.host, s.port, "/ping", CENSUS_AT, prof.ping_s)
            cpu1, t1 = procstat.cpu_seconds(s.pid), time.monotonic()
            s.r.setdefault("ping_rounds", []).append(w["rps"])
            if cpu0 is not None and cpu1 is not None:
                s.r.setdefault("rounds_cpu_cores", []).append(
                    (cpu1 - cpu0) / (t1 - t0))
                s.r.setdefault("rounds_cpu_us_per_req", []).append(
                    1e6 * (cpu1 - cpu0) / max(1, w["requests"]))
            s.r.setdefault("rounds_threads", []).append(s.threads())
        say(f"throughput round {k + 1}/{prof.rounds} at c={CENSUS_AT}: " +
            ", ".join(f"{s.name} {s.r['ping_rounds'][-1]:.0f}" for s in subjects))
    for s in subjects:
        for key in ("ping_rounds", "rounds_cpu_cores", "rounds_cpu_us_per_req"):
            v = sorted(s.r.get(key) or [])
            if v:
                s.r[key + "_median"] = v[len(v) // 2]


def wait_until(pred, deadline_s: float, step_s: float = 0.02) -> bool:
    """Poll a condition (readiness), bounded by a deadline."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step_s)
    return pred()


def fmt(x, digits: int = 2) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}f}" if x < 100 else f"{x:.0f}"
    return str(x)


# ---- bounded pool: queue full, drain ------------------------------------

def bounded_queue_full(model: Path, logdir: Path) -> dict:
    """1 worker, queue capacity 1, one loop; K connections each send a
    /slow?ms=800 at once.  What the clients see, against the server's count."""
    k, workers, cap = 6, 1, 1
    srv = Server(argv=[str(model), "--port", "0", "--dispatch", "bounded-pool",
                       "--workers", str(workers), "--queue-capacity", str(cap),
                       "--loops", "1"], log_path=logdir / "bounded-queue-full.log")
    srv.start()
    payload = b"GET /slow?ms=800 HTTP/1.1\r\nHost: x\r\n\r\n"
    with ThreadPoolExecutor(k) as ex:
        res = list(ex.map(lambda _: loadgen.raw_exchange(
            srv.address, srv.port, payload, 5.0), range(k)))
    log = srv.stop()
    answered = sum(1 for r in res if r["responses"] == 1)
    closed = sum(1 for r in res if r["responses"] == 0 and
                 r["ended"] in ("eof", "reset"))
    return {"connections": k, "workers": workers, "queue_capacity": cap,
            "answered": answered, "closed_without_response": closed,
            "client_endings": sorted(r["ended"] for r in res),
            "server_queue_full": log.count("queue-full conn="),
            "exit_code": srv.exit_code}


def bounded_drain(model: Path, logdir: Path) -> dict:
    """Accepted work survives SIGTERM: 3 /slow?ms=300 accepted (1 running,
    2 queued), then SIGTERM; all 3 must be answered, a new connection must
    be refused, the server must exit 0."""
    n = 3
    log_path = logdir / "bounded-drain.log"
    srv = Server(argv=[str(model), "--port", "0", "--dispatch", "bounded-pool",
                       "--workers", "1", "--queue-capacity", "4", "--loops",
                       "1", "--verbose"], log_path=log_path)
    srv.start()
    payload = b"GET /slow?ms=300 HTTP/1.1\r\nHost: x\r\n\r\n"
    ex = ThreadPoolExecutor(n)
    futs = [ex.submit(loadgen.raw_exchange, srv.address, srv.port, payload, 5.0)
            for _ in range(n)]
    accepted = wait_until(lambda: log_path.read_text().count("dispatch conn=")
                          >= n, 5.0)
    os.kill(srv.proc.pid, signal.SIGTERM)
    closed = wait_until(lambda: "drain: listeners closed" in log_path.read_text(),
                        5.0)
    refused = loadgen.raw_exchange(srv.address, srv.port,
                                   b"GET /ping HTTP/1.1\r\n\r\n", 1.0)
    res = [f.result() for f in futs]
    ex.shutdown()
    log = srv.stop()
    return {"requests": n, "accepted_before_term": accepted,
            "listeners_closed_logged": closed,
            "answered_after_term": sum(1 for r in res if r["statuses"] == [200]),
            "new_connection_after_term": refused["ended"],
            "exit_code": srv.exit_code, "stopped_by_term": srv.stopped_by_term,
            "drain_logged": "drain: done served=" in log}


# ---- the run --------------------------------------------------------------

def run_rows(rows: list[dict], prof: Profile, outdir: Path,
             model: Path | None) -> dict:
    logdir = outdir / "logs"
    logdir.mkdir(parents=True, exist_ok=True)
    subjects = []
    for row in rows:
        try:
            s = start_row(row, logdir)
        except KitError as e:
            say(f"[SKIP] {row['name']}: {e}")
            continue
        s.r["threads_idle"] = s.threads()
        subjects.append(s)
        say(f"{s.name}: listening on {s.port}, pid {s.pid}, "
            f"{s.r['threads_idle']} threads idle")
    try:
        return measure(subjects, prof, logdir, model)
    finally:
        for s in subjects:
            stop_subject(s)


def measure(subjects: list[Subject], prof: Profile, logdir: Path,
            model: Path | None) -> dict:
    """Pipelining (and the bounded-pool checks) for every row at once: they
    mostly wait.  Then each row alone: the /ping series and head-of-line
    (CPU and latency would be distorted by a neighbour), and the row is
    stopped before the next one starts, so a server that keeps spinning
    (fphttpserver's B7) cannot steal the CPU from the rows after it."""
    extra: dict = {}
    say("pipelining and the bounded-pool checks, every row at once")
    with ThreadPoolExecutor(len(subjects) + 2) as ex:
        futs = [ex.submit(phase_pipeline, s, prof) for s in subjects]
        if model is not None:
            qf = ex.submit(bounded_queue_full, model, logdir)
            dr = ex.submit(bounded_drain, model, logdir)
        for f in futs:
            f.result()
        if model is not None:
            extra["bounded_queue_full"] = qf.result()
            extra["bounded_drain"] = dr.result()
            say(f"bounded pool, queue full: {extra['bounded_queue_full']}")
            say(f"bounded pool, drain: {extra['bounded_drain']}")
    total = len(subjects)
    for i, s in enumerate(subjects, 1):
        say(f"({i}/{total}) {s.name}: /ping load, then head-of-line")
        first = loadgen.raw_exchange(s.host, s.port, b"GET /ping HTTP/1.1\r\n"
                                     b"Host: x\r\nConnection: close\r\n\r\n", 3.0)
        if first["statuses"] != [200]:
            s.r["not_answering"] = first["ended"]
            say(f"[SKIP] {s.name}: no 200 to a first GET /ping within 3 s "
                f"({first['ended']}): load phases skipped")
            stop_subject(s)
            continue
        phase_ping(s, prof)
        if not prof.smoke:
            phase_hol(s, prof)
        if s.sampler:
            s.sampler.sample_now()
            s.r["threads_peak"] = s.sampler.peak
        if s.family != "epoll-model" or not prof.rounds:
            stop_subject(s)   # the model does not spin when idle: kept
    model_rows_up = [s for s in subjects if s.family == "epoll-model"]
    if prof.rounds and model_rows_up:
        phase_rounds(model_rows_up, prof)
    return {"rows": [s.r for s in subjects], **extra}


def stop_subject(s: Subject) -> None:
    if s.server and s.server.proc and s.r.get("exit_code") is None:
        s.server.stop(deadline_s=STOP_DEADLINE_S)
        s.r["exit_code"] = s.server.exit_code
        s.r["stopped_by_term"] = s.server.stopped_by_term


def run_target(host: str, port: int, pid: int | None, name: str,
               prof: Profile) -> dict:
    s = Subject(name, "target", "-", host, port, pid)
    s.r["threads_idle"] = s.threads()
    if pid is None:
        say("no --pid: thread counts, census and context switches are skipped")
    phase_ping(s, prof)
    phase_pipeline(s, prof)
    phase_hol(s, prof)
    if s.sampler:
        s.r["threads_peak"] = s.sampler.peak
    return {"rows": [s.r]}


def environment() -> dict:
    cpu_max = None
    try:
        cpu_max = Path("/sys/fs/cgroup/cpu.max").read_text().strip()
    except OSError:
        pass
    try:
        loadavg = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        loadavg = None
    try:
        head = subprocess.run(["git", "-C", str(TOP), "rev-parse", "--short",
                               "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        head = None
    return {"cpus": os.cpu_count(), "kernel": platform.release(),
            "loadavg": loadavg, "git_head": head,
            "cgroup_cpu_max": cpu_max,
            "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(TOP / "results/bench"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--smoke", action="store_true",
                    help="model rows, /ping c=16, pipelining, queue full, "
                         "drain; no head-of-line (for sanitizer builds)")
    ap.add_argument("--binary", default=str(MODEL),
                    help="the epoll model binary (default build/dispatch/dispatch)")
    ap.add_argument("--clone", default=str(CLONE),
                    help="server-min binary for the clone rows")
    ap.add_argument("--clone-note", default=None,
                    help="how the --clone binary was built (recorded)")
    ap.add_argument("--trunk", default=str(TRUNK),
                    help="fpserver binary for the real-trunk rows")
    ap.add_argument("--target", nargs=2, metavar=("HOST", "PORT"))
    ap.add_argument("--pid", type=int)
    ap.add_argument("--name", default="target")
    a = ap.parse_args()
    if not PROBE.exists():
        print(f"bench: {PROBE.relative_to(TOP)} missing (run make)", file=sys.stderr)
        return 1
    prof = Profile(a.quick, a.smoke)
    outdir = Path(a.out)
    outdir.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    res: dict = {"environment": environment(), "quick": prof.quick,
                 "smoke": prof.smoke}
    if a.target:
        res.update(run_target(a.target[0], int(a.target[1]), a.pid, a.name, prof))
        res["skips"] = []
    else:
        model = Path(a.binary)
        if prof.quick:
            rows, skips = model_rows(model), []
        else:
            rows, skips = server_rows(model, Path(a.clone), Path(a.trunk))
        for line in skips:
            say(line)
        res["skips"] = skips
        res["binaries"] = {k: os.path.relpath(v, TOP) if v.startswith(str(TOP))
                           else v for k, v in (("clone", a.clone),
                                               ("trunk", a.trunk),
                                               ("model", a.binary))}
        if a.clone_note:
            res["binaries"]["clone_note"] = a.clone_note
        res.update(run_rows(rows, prof, outdir, model))
    res["wall_s"] = round(time.monotonic() - t0, 1)
    (outdir / "bench.json").write_text(json.dumps(res, indent=1) + "\n")
    import report_table  # noqa: E402 (the table and the plot)
    text = report_table.text_table(res)
    (outdir / "bench.txt").write_text(text)
    print(text, end="")
    if not prof.quick:
        report_table.plot(res, outdir / "bench.png")
    say(f"wall time {res['wall_s']} s; results in {outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
