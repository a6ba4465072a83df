"""kit.py - run a server, drive it with the probe, collect evidence.

Shared by `make repro` (repro/harness/matrix.py), the integration tests and the
report generator, so that every verdict is computed in one place.

Rules (DESIGN section 6): verdicts are counts, orderings and same-run ratios.
Deadlines here are only how long we wait; nothing is decided on a duration.
"""
from __future__ import annotations

import atexit
import functools
import json
import os
import re
import resource
import select
import socket
import statistics
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
BUILD = TOP / "build"
TRUNK_FPC = BUILD / "fpc-trunk" / "bin" / "fpc"   # scripts/fpc-trunk.sh's wrapper
PROBE = BUILD / "probe"
STRACE_ANALYSE = BUILD / "strace-analyse"
PCAP_ANALYSE = BUILD / "pcap-analyse"

sys.path.insert(0, str(Path(__file__).resolve().parent))
import httpwire  # noqa: E402
import patchset  # noqa: E402
import tcpdiag  # noqa: E402
import wineprefix  # noqa: E402

# Which fixes exist and what each fixes: read from the patches (patchset.py).
FIXES = patchset.fixes()
VARIANTS = patchset.variants()
PAIRS = patchset.pairs()
# B21 is a column whether or not the series has its fix yet (without it every row reproduces it).
DEFECTS = sorted(set(patchset.defects()) | {f"B{i}" for i in range(1, 9)} | {"B21"},
                 key=lambda d: int(d[1:]))

# The B3 verdict: requests 2..n on one socket against fresh sockets, medians
# of the same run.  The stall multiplies the median by ~100-400 on Linux
# (40 ms against 0.1-0.4 ms); a fix brings it to ~1.  Between the two bounds
# the run says nothing and the verdict is "inconclusive".
B3_STALL_RATIO = 10.0
B3_CLEAN_RATIO = 3.0

HORSE = ["--horse"]
# Wine's Winsock turns into sendmsg/poll/epoll on Linux: trace those too.
STRACE_TRACE = ("network,select,pselect6,poll,ppoll,epoll_wait,epoll_pwait,"
                "read,write,writev,close")
# Measures that load the machine (B7's spinning servers, B8's 1,100 threads,
# Wine) run niced, so that the timing-based ones beside them (B3's medians)
# get the CPU first: a verdict must not depend on what runs next to it.
HEAVY_NICE = 10


def niced(argv: list[str], nice: int) -> list[str]:
    """argv run at a lower priority, by nice(1) (it execs: same PID).  Not a
    preexec_fn: with one, Python forks this process (threads, ~150 MB) for
    every child instead of vfork-ing it, and copying its page tables took a
    quarter of the matrix's CPU (perf: copy_page_range, unmap_page_range)."""
    return ["nice", "-n", str(nice), *argv] if nice else argv


# A latency verdict (B3 through real clients) sets a kernel timer (the
# delayed ACK, >= 40 ms) beside the cost of serving a request, and a busy
# machine's scheduler delays only the latter: by a time slice a wake-up,
# whatever the nice value (EEVDF lets the running task end its slice).
# The model's h2load control (a thread per connection), 0.4 ms alone, took
# 3.7-6.9 ms at nice -20 beside ten busy loops, and 0.4 ms at SCHED_FIFO.
# So, as root, a measuring client and its server run in the real-time class
# (FIFO, MEASURE_RT_PRIORITY) meanwhile, and at MEASURE_NICE: a thread the
# server starts inherits both, unless it asks for its own policy (FPC's
# TThread does: PTHREAD_EXPLICIT_SCHED, so it keeps only the nice value).
# Elsewhere at the usual priority (measure_prefix, Server.measuring).
MEASURE_RT_PRIORITY = 5
MEASURE_NICE = -20


def measure_prefix() -> list[str]:
    """argv prefix for a measuring client: chrt(1) into the real-time class
    where we may, else nice(1) where we may (both exec: same PID)."""
    if may_measure_rt():
        return ["chrt", "-f", str(MEASURE_RT_PRIORITY)]
    return ["nice", "-n", str(MEASURE_NICE)] if os.geteuid() == 0 else []


@functools.cache
def may_measure_rt() -> bool:
    """Whether this machine lets us run a process SCHED_FIFO (root, and a
    cgroup with real-time time to give); asked once, of a child."""
    try:
        r = subprocess.run(["chrt", "-f", str(MEASURE_RT_PRIORITY), "true"],
                           capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def raise_fd_limit() -> None:
    """Soft RLIMIT_NOFILE up to the hard limit: the B8 trigger holds 1,100
    connections open (raised in the kit before it starts a server: the
    server inherits it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class KitError(RuntimeError):
    pass


class Unsupported(KitError):
    """The server refused a flag (exit 2): the scenario does not apply."""


# Where the servers come from: build/ (plain), build-asan/ or build-tsan/.
SERVER_BUILD = TOP / os.environ.get("KIT_SERVER_BUILD", "build")


# Sanitizer builds and servers under valgrind (KIT_SERVER_WRAP) run several
# times slower (TSan and valgrind most): deadlines, never verdicts, stretch
# by this factor.
SLOW = 1 if SERVER_BUILD.name == "build" and not os.environ.get("KIT_SERVER_WRAP") else 5
# A server that has not exited this long after SIGTERM ignores it (a
# deadline: how long we wait, never a verdict on speed).  It stretches by
# SLOW: valgrind's leak check at exit took longer than 3 s + 1 s, and the
# server was KILLed ("server exited -9").
STOP_DEADLINE_S = 3.0 * SLOW


def binary(variant: str) -> Path:
    return SERVER_BUILD / variant / "server-min"


def have_strace() -> bool:
    return shutil.which("strace") is not None


# Servers started and not stopped yet, stopped when the kit's process
# exits: a measure that raises between a start and its stop (B7's hung
# server, which ignores SIGTERM, once) must not leave a server running.
_RUNNING: dict[int, "Server"] = {}
_RUNNING_LOCK = threading.Lock()


def _stop_left_servers() -> None:
    with _RUNNING_LOCK:
        left = list(_RUNNING.values())
    for srv in left:
        srv.stop()


atexit.register(_stop_left_servers)


@dataclass
class Server:
    """A server process we started; stopped by PID (never by name)."""
    argv: list[str]
    log_path: Path
    strace_path: Path | None = None
    proc: subprocess.Popen | None = None
    port: int = 0
    address: str = "127.0.0.1"
    log: str = ""
    exit_code: int | None = None
    stopped_by_term: bool | None = None   # None: it had already exited
    env: dict | None = None
    strace_trace: str = STRACE_TRACE
    strace_extra: list[str] = field(default_factory=list)
    # A hang guard, never a verdict on speed: a start that is slow but
    # moving must not reach it.  It was 10 s; on a fresh 2-core VM whose
    # page faults cost ~50x (f1: 4 GiB zeroed in 17-19 s), Horse's sample
    # script (a namespace, a veth pair, tcpdump, then the sample), traced
    # with strace -f beside B8's 4,400 connections, had not printed its
    # line after 10 s twice running, its processes still working (mkdir,
    # ip, awk), and failed its row.  SLOW: valgrind's start, niced.
    ready_deadline_s: float = 60.0 * SLOW
    prefix_pool: wineprefix.Pool | None = None   # a private Wine prefix, start to stop
    _prefix: Path | None = field(default=None, repr=False)   # the one taken from it
    nice: int = 0                         # see HEAVY_NICE
    # A launcher script that cleans up after its program (Horse's sample:
    # its capture, its namespace) may take this long more, past stop's
    # deadline, before a second signal cuts its cleanup short (Row).
    cleanup_s: float = 0.0

    def start(self, ready_deadline_s: float | None = None) -> "Server":
        if self.prefix_pool:
            self._prefix = self.prefix_pool.take()
            self.env = dict(self.env or {}, WINEPREFIX=str(self._prefix))
        argv = list(self.argv)
        wrap = os.environ.get("KIT_SERVER_WRAP")   # e.g. valgrind for memcheck runs
        if wrap and not self.strace_path:
            argv = wrap.split() + argv
        if self.strace_path:
            argv = ["strace", "-f", *self.strace_extra, "-tt", "-T", "-s", "65535", "-e",
                    "trace=" + self.strace_trace, "-o", str(self.strace_path)] + argv
        argv = niced(argv, self.nice)
        raise_fd_limit()   # the child inherits it
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._err = open(self.log_path, "w")
        env = dict(os.environ, **self.env) if self.env else None
        try:
            self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                         stderr=self._err, stdin=subprocess.DEVNULL,
                                         env=env)
        except OSError as e:
            self._err.close()
            self._give_prefix()
            raise KitError(f"cannot start {self.argv[0]}: {e}") from e
        with _RUNNING_LOCK:
            _RUNNING[id(self)] = self
        deadline = ready_deadline_s or self.ready_deadline_s
        t0 = time.monotonic()
        line = self._read_ready_line(deadline)
        m = re.fullmatch(r"listening (\S+):(\d+)", line.strip())
        if not m:
            # Hung (no line by the deadline, still running): what its
            # processes wait on goes to its log, and for a Windows program
            # its Wine server's state; for one that ended without a line
            # (c72: 9 at once, exit 0, nothing written), the Wine server's
            # state after it.  Not for a server that refused its flags:
            # its own last line is its reason (Unsupported).
            hung = time.monotonic() - t0 >= deadline and self.proc.poll() is None
            wine = (self.env or {}).get("WINEPREFIX")
            if hung:
                self._note(f"no readiness line in {deadline:g} s; its processes, then stopped:",
                           process_tree(self.proc.pid))
                if wine:
                    self._note("its prefix's Wine server:", wineprefix.server_state(wine))
            self.stop()
            if self.exit_code == 2:
                raise Unsupported(self.log.strip().splitlines()[-1] if self.log.strip()
                                  else f"{self.argv[0]} refused its flags")
            if wine and not hung:
                self._note(f"ended without a readiness line (exit {self.exit_code}); "
                           "its prefix's Wine server:", wineprefix.server_state(wine))
            raise KitError(f"{self.argv[0]}: no 'listening ADDR:PORT' line "
                           f"(got {line!r}, exit {self.exit_code}); log: {self.log_path}")
        self.address, self.port = m.group(1), int(m.group(2))
        return self

    def _note(self, head: str, lines: list[str]) -> None:
        """The kit's own lines at the end of the server's log."""
        with open(self.log_path, "a") as log:
            log.write(f"kit: {head}\n")
            log.writelines(f"kit:   {t}\n" for t in lines)

    def _read_ready_line(self, deadline_s: float) -> str:
        """Poll the server's stdout for its readiness line."""
        end = time.monotonic() + deadline_s
        buf = b""
        fd = self.proc.stdout.fileno()
        while b"\n" not in buf:
            left = end - time.monotonic()
            if left <= 0:
                return buf.decode(errors="replace")
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            buf += chunk
        return buf.decode(errors="replace").split("\n")[0]

    def _give_prefix(self) -> None:
        if self.prefix_pool and self._prefix:
            self.prefix_pool.give(self._prefix)
            self._prefix = None

    @contextmanager
    def measuring(self):
        """Every thread of the server at MEASURE_NICE and in the real-time
        class while a client measures it (where this machine lets us:
        may_measure_rt, root), back to the usual priority after."""
        rt = may_measure_rt()
        self.renice(MEASURE_NICE, os.SCHED_FIFO if rt else None)
        try:
            yield self
        finally:
            self.renice(0, os.SCHED_OTHER if rt else None)

    def renice(self, nice: int, policy: int | None = None) -> None:
        """Every thread of the server to `nice`, and to `policy` if given
        (Linux keeps both per thread); the nice value first, for the
        threads a real-time one starts with a policy of their own."""
        pid = self._server_pid()
        try:
            tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            return
        prio = MEASURE_RT_PRIORITY if policy == os.SCHED_FIFO else 0
        for tid in tids:
            try:
                os.setpriority(os.PRIO_PROCESS, tid, nice)
                if policy is not None:
                    os.sched_setscheduler(tid, policy, os.sched_param(prio))
            except OSError:
                pass   # the thread has gone, or the priority is not ours to set

    def _server_pid(self) -> int:
        """The server itself: under strace it is strace's child."""
        if not self.strace_path:
            return self.proc.pid
        kids = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        try:
            pids = kids.read_text().split()
        except OSError:
            pids = []
        return int(pids[0]) if pids else self.proc.pid

    def stop(self, deadline_s: float = STOP_DEADLINE_S) -> str:
        """SIGTERM to the server (the PID we started, or strace's child);
        records whether it exited on it.  One that ignores SIGTERM for
        deadline_s (and cleanup_s) is killed: the kit must not hang (that
        is B7's signature, recorded in stopped_by_term)."""
        if self.proc and self.proc.poll() is None:
            pid = self._server_pid()
            _signal(pid, signal.SIGTERM)
            self.stopped_by_term = self._exits_within(deadline_s)
            if not self.stopped_by_term and not self._exits_within(self.cleanup_s):
                self._escalate(pid, deadline_s + self.cleanup_s)
        if self.proc:
            self.exit_code = self.proc.returncode
            self.proc.stdout.close()
            self._err.close()
            self.proc = None
            self._give_prefix()
        with _RUNNING_LOCK:
            _RUNNING.pop(id(self), None)
        self.log = self.log_path.read_text(errors="replace")
        return self.log

    def _exits_within(self, seconds: float) -> bool:
        try:
            self.proc.wait(seconds)
            return True
        except subprocess.TimeoutExpired:
            return False

    def _escalate(self, pid: int, waited_s: float) -> None:
        """Ignored: B7's signature.  A second SIGTERM makes server-min exit
        at once (status 3); the real server needs KILL, and so does every
        process it started: killed alone, a launcher leaves its children to
        init, and strace waits for its tracees for ever (f1: Horse's sample
        script killed mid-cleanup, its tcpdump left running, the measure
        hung).  So its tree is killed whole, and under strace every process
        our strace traces (a child orphaned by its parent's death still is)."""
        _signal(pid, signal.SIGTERM)
        if self._exits_within(1.0):
            return
        self._note(f"still running {waited_s + 1:g} s after SIGTERM; killed, with every "
                   "process it started:", process_tree(pid))
        ours = tree_pids(pid) + (traced_by(self.proc.pid) if self.strace_path else [])
        starts = {p: start_time(p) for p in ours}
        killed = {p: start for p, start in starts.items()
                  if start is not None and alive(p, start)}   # not a PID reused since
        for p in killed:
            _signal(p, signal.SIGKILL)
        if not self._exits_within(STOP_DEADLINE_S):
            self.proc.kill()   # strace, whose tracees are gone now
            self.proc.wait()
        # A KILL is delivered, not yet done, when kill() returns: an orphan
        # may still run a moment after its launcher was reaped.
        _poll(lambda: not any(alive(p, start) for p, start in killed.items()), STOP_DEADLINE_S)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _stat(pid: int) -> list[str]:
    """/proc/PID/stat's fields from the state on ([] once it has gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def start_time(pid: int) -> int | None:
    """When PID started (clock ticks since boot): a PID and its start time
    name one process, never a later one that reused the number."""
    st = _stat(pid)
    return int(st[19]) if len(st) > 19 else None


def alive(pid: int, born: int) -> bool:
    """PID is still the process that started at born, and not a zombie (a
    killed orphan waits for init to reap it)."""
    st = _stat(pid)
    return len(st) > 19 and st[0] not in "ZX" and int(st[19]) == born


def traced_by(tracer: int) -> list[int]:
    """Every process that TRACER (our strace) traces."""
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                status = Path(f"/proc/{d}/status").read_text()
            except OSError:
                continue
            if re.search(rf"^TracerPid:\s+{tracer}$", status, re.M):
                pids.append(int(d))
    return pids


def tree_pids(pid: int) -> list[int]:
    """PID and its descendants, parents first (taken before a KILL: a child
    whose parent has gone belongs to init, no longer to the tree)."""
    pids, todo = [], [pid]
    while todo:
        p = todo.pop(0)
        pids.append(p)
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in Path(f"/proc/{p}/task/{t}/children").read_text().split()]
        except (OSError, ValueError):
            continue   # it has gone
    return pids


def process_tree(pid: int) -> list[str]:
    """PID and its descendants, a line each: pid, name, and each thread's
    state and kernel wait channel, counted (what a server that never said
    it was ready was doing: a Wine program under a stalled Wine server
    waits in its own way, a deadlock in another)."""
    lines = []
    for p in tree_pids(pid):
        try:
            name = Path(f"/proc/{p}/comm").read_text().strip()
            waits: dict[str, int] = {}
            for t in sorted(os.listdir(f"/proc/{p}/task")):
                task = f"/proc/{p}/task/{t}"
                try:
                    st = Path(f"{task}/stat").read_text().rsplit(")", 1)[1].split()[0]
                    wc = Path(f"{task}/wchan").read_text().strip() or "-"
                except OSError:
                    continue   # the thread has gone
                waits[f"{st}:{wc}"] = waits.get(f"{st}:{wc}", 0) + 1
        except (OSError, ValueError):
            continue
        lines.append(f"{p} {name}: " + ", ".join(f"{n}x {w}" for w, n in sorted(waits.items())))
    return lines


def probe(server: Server, scenario: str, *args: str, out: Path | None = None,
          timeout_s: float = 120.0, measure: bool = False) -> dict:
    """Run the probe with --json; returns its object (saved to out).
    measure: the probe as a measuring client (measure_prefix), for a
    latency taken inside server.measuring()."""
    argv = [str(PROBE), "--json", "--scenario", scenario, *args,
            server.address, str(server.port)]
    argv = [*measure_prefix(), *argv] if measure else niced(argv, server.nice)
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    if r.returncode != 0:
        raise KitError(f"probe {scenario} exited {r.returncode}: {r.stderr.strip()}")
    obj = json.loads(r.stdout)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(obj, indent=1))
    return obj


def strace_analysis(path: Path) -> dict:
    r = subprocess.run([str(STRACE_ANALYSE), "--json", str(path)],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise KitError(f"strace-analyse {path}: {r.stderr.strip()}")
    return json.loads(r.stdout)


# ---- the server log ---------------------------------------------------

# server-min writes "request conn=1 req=2 ...", fpserver "fpserver: conn=1
# req=2 ...": the contract is the two fields, wherever the line has them.
REQUEST_LINE = re.compile(r"\bconn=(\d+) req=(\d+)\b")


def served_requests(log: str) -> list[tuple[int, int]]:
    """(connection id, request number) of every served request, in order."""
    out = []
    for line in log.splitlines():
        m = REQUEST_LINE.search(line)
        if m:
            out.append((int(m.group(1)), int(m.group(2))))
    return out


def count_lines(log: str, needle: str) -> int:
    return sum(1 for line in log.splitlines() if needle in line)


# ---- one row of the matrix --------------------------------------------

@dataclass
class Row:
    name: str
    variant: str
    flags: list[str] = field(default_factory=list)   # added to every run
    expect: dict[str, str] = field(default_factory=dict)
    target: list[str] = field(default_factory=list)  # defects it should fix
    note: str = ""
    needs: str = ""   # a row that must be fixed with it (an interaction)
    path: Path | None = None   # a server outside build/<variant> (real FPC)
    wrap: list[str] = field(default_factory=list)  # e.g. the Wine launcher
    cleanup_s: float = 0.0   # Server.cleanup_s: how long wrap may take to clean up
    env: dict = field(default_factory=dict)
    counterpart: str = ""   # the clone row whose verdicts it must equal
    platform: str = "linux"

    @property
    def binary(self) -> Path:
        return self.path or binary(self.variant)

    @property
    def real(self) -> bool:
        return self.path is not None

    def argv(self, flags: list[str]) -> list[str]:
        return [*self.wrap, str(self.binary), "--port", "0", *flags]


@dataclass
class Verdict:
    state: str        # reproduced | fixed | inconclusive | n/a | failed (MEASURE_FAILED)
    figure: str
    data: dict = field(default_factory=dict)


# Under Wine the accept() runs in the Wine server, which a trace sees only
# if it started under that trace: traced win64 runs (and veth captures,
# whose Wine server must start inside the namespace) each get a private
# prefix of their own for the run, so each starts its own Wine server;
# WINE_PRIVATE of them run side by side.  Wine's start-up under strace is
# slow: seccomp-bpf filtering and network calls only
# (repro/fpc/win64-strace.md).
WINE_PRIVATE = wineprefix.Pool(int(os.environ.get("KIT_WINE_PRIVATE", "3")))
# A traced Windows program gets a fresh copy of a socket's fd from its Wine
# server for a call, and the number can change within one response; -y
# names the socket behind each fd, and strace-analyse ties the copies
# together by it (captures/strace_analyse.c, arg_inode).
WINE_STRACE_EXTRA = ["-y"]


def _server(row: Row, outdir: Path, tag: str, flags: list[str],
            strace: bool = False) -> Server:
    srv = Server(row.argv(flags), log_path=outdir / f"{tag}.server.log",
                 strace_path=(outdir / f"{tag}.strace") if strace else None,
                 env=row.env or None, cleanup_s=row.cleanup_s)
    if row.platform == "win64":
        srv.nice = HEAVY_NICE
        srv.ready_deadline_s = 90.0
        if strace:
            srv.strace_trace, srv.strace_extra = "network", ["--seccomp-bpf", *WINE_STRACE_EXTRA]
            srv.prefix_pool = WINE_PRIVATE
    return srv


def _start_first(row: Row, outdir: Path, tag: str, flag_sets: tuple[list[str], ...],
                 nice: int | None = None) -> tuple[Server, list[str]]:
    """Start the row's server with the first of flag_sets it accepts (the
    last is the row's own flags): an fcl-web tree older than
    KeepConnections refuses --horse (make bisect), and is measured with
    fphttpserver's defaults, or the Threaded a probe needs.  nice: the
    server's, in place of _server's."""
    for flags in flag_sets:
        try:
            srv = _server(row, outdir, tag, flags)
            if nice is not None:
                srv.nice = nice
            return srv.start(), flags
        except Unsupported:
            if flags is flag_sets[-1]:
                raise
    raise AssertionError("no flag set")


def measure_b1(row: Row, outdir: Path, use_strace: bool) -> Verdict:
    """The user's OnAllowConnect (a TCP_NODELAY hook) per accepted connection."""
    # Under Wine a traced run needs a Wine server of its own (minutes of
    # queueing in a full matrix): B1's verdict is the hook's log, and the
    # Windows build's TCP_NODELAY calls are counted in B3's trace.
    use_strace = use_strace and row.platform != "win64"
    srv = _server(row, outdir, "b1", HORSE + row.flags +
                  ["--on-allow-connect", "nodelay"], strace=use_strace)
    with srv:
        res = probe(srv, "compare", "-n", "3", out=outdir / "b1.probe.json")
    connects = res["keepalive"]["connects"] + res["fresh"]["connects"]
    calls = count_lines(srv.log, "on-allow-connect")
    data = {"connections": connects, "hook_calls": calls}
    fig = f"hook ran {calls}x for {connects} connections"
    if use_strace:
        st = strace_analysis(srv.strace_path)
        data["tcp_nodelay_setsockopt"] = st["tcp_nodelay_total"]
        data["accepts"] = st["accepts"]
        fig += f"; strace: {st['tcp_nodelay_total']} setsockopt(TCP_NODELAY) for {st['accepts']} accepts"
    if connects == 0:
        return Verdict("inconclusive", "no connection made", data)
    # The verdict is the hook's call count.  The strace count is evidence
    # beside it (other mitigations in the row may set TCP_NODELAY too).
    if calls == 0:
        return Verdict("reproduced", fig, data)
    if calls == connects and data.get("tcp_nodelay_setsockopt", calls) >= calls:
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


def measure_b2(row: Row, outdir: Path, extra: tuple[str, ...] = ()) -> Verdict:
    """Three GETs in one send() on a keep-alive connection (extra: flags
    after Horse's, e.g. another thread mode: B2.polled, B2.pool)."""
    with _server(row, outdir, "b2", HORSE + list(extra) + row.flags) as srv:
        res = probe(srv, "pipeline", "-k", "3", "--deadline-ms", "1500",
                    out=outdir / "b2.probe.json")
    n, k = res["responses"], res["params"].get("k", 3)
    fig = f"{n} of {k} pipelined requests answered (one send)"
    data = {"responses": n, "pipelined": k, "writes": res.get("writes")}
    if res.get("writes") != 1:
        return Verdict("inconclusive", fig + f"; {res.get('writes')} writes", data)
    if n == k:
        return Verdict("fixed", fig, data)
    if n == 1:
        return Verdict("reproduced", fig, data)
    return Verdict("inconclusive", fig, data)


def nodelay_per_connection(st: dict, row: Row) -> list[int]:
    """setsockopt(TCP_NODELAY) per connection that served a request, from
    strace-analyse.  A connection that carried none is no client's: the
    Horse program's readiness check connects and closes at once, and
    whether its thread set the option before it saw the close is a race
    (it came out [0, 1] once for horse trunk + set-tcp-nodelay).  Under
    Wine the option is set on a short-lived duplicate of the socket in
    another thread than the one carrying the data, so it cannot be tied to
    its connection: there the figure is the total over the connections
    that served requests (repro/fpc/win64-strace.md)."""
    served = [c for c in st["connections"] if c.get("responses")]
    if row.platform != "win64":
        return sorted({c["tcp_nodelay"] for c in served})
    if not served:
        return []
    total = st["tcp_nodelay_total"]
    return [total // len(served)] if total % len(served) == 0 else [total, len(served)]


def b3_compare(row: Row, outdir: Path, tag: str) -> dict:
    """One server: n requests on one socket, n on fresh sockets, then 5
    after 300 ms idle gaps on one socket; the medians and the proof that
    the keep-alive phase used one connection."""
    srv = _server(row, outdir, tag, HORSE + row.flags)
    with srv:
        res = probe(srv, "compare", "-n", "30", out=outdir / f"{tag}.probe.json")
        gap = probe(srv, "idle-gap", "-n", "5", "--gap-ms", "300",
                    out=outdir / f"{tag}-idle-gap.probe.json")
    ka, fresh = res["keepalive"], res["fresh"]
    # The connection that served every request of the keep-alive phase (the
    # fresh-socket phase's serve one each, the idle-gap run's 5; a log line
    # may come after the client moved on, so log order proves nothing).
    most: dict[int, int] = {}
    for c, n in served_requests(srv.log):
        most[c] = max(n, most.get(c, 0))
    conn_ids = sorted(c for c, n in most.items() if n == ka["requests_sent"])
    gap_rest = gap["stats_us"]["rest"]["p50"]
    fresh_p50 = fresh["stats_us"]["all"]["p50"]
    return {
        "ka": ka,
        "ratio_p50": res.get("ratio_p50"),
        "reused_p50_us": ka["stats_us"]["rest"]["p50"],
        "reused_q1_us": lower_quartile(ka["latency_us"][1:]),
        "first_us": ka["stats_us"]["first"],
        "fresh_p50_us": fresh_p50,
        "idle_gap_rest_p50_us": gap_rest,
        "idle_gap_ratio": (gap_rest / fresh_p50) if gap_rest and fresh_p50 else None,
        "connects": ka["connects"], "local_ports": ka["local_ports"],
        "server_conn_ids": conn_ids, "responses": ka["responses"],
        "requests": ka["requests_sent"],
    }


def lower_quartile(xs: list[float]) -> float | None:
    """The lower quartile of xs (the value a quarter of the way up), as
    h2load.sh reports it; None for no values."""
    xs = sorted(x for x in xs if x is not None)
    return xs[(len(xs) - 1) // 4] if xs else None


def b3_judge(c: dict) -> tuple[str, str]:
    """The verdict of one b3_compare, and its figure."""
    ka = c["ka"]
    if ka["responses"] == 1 and ka["outcome"][1] in ("eof", "econnreset", "epipe"):
        return "n/a", ("the server closes after every response: no reused "
                       "connection that could stall")
    reuse_ok = (ka["connects"] == 1 and ka["reused"] and len(c["server_conn_ids"]) == 1
                and ka["responses"] == ka["requests_sent"])
    if not reuse_ok or c["ratio_p50"] is None:
        return "inconclusive", (f"connection reuse not proven (connects={ka['connects']}, "
                                f"server conn ids={c['server_conn_ids']}, "
                                f"responses={ka['responses']})")
    # Two controls of the same server in the same run: a fresh connection
    # per request, and the same connection after a 300 ms gap (quick ACK).
    # A stall is judged against the faster control (a fresh connection's
    # thread start inflates the other: ~30 ms under TSan, milliseconds on
    # a loaded machine), and the reused requests must also be the slowest
    # of all: a stall adds a delayed-ACK period that no fresh connection
    # pays, so a reused median at or below a control's is no stall, however
    # far it is above the other (a quiet 40 us idle-gap median beside a
    # loaded 0.5 ms reused one).  Clean is judged against the slower.
    gap_rest, reused = c["idle_gap_rest_p50_us"], c["reused_p50_us"]
    controls = [x for x in (c["fresh_p50_us"], gap_rest) if x]
    fig = (f"median of requests 2..{ka['requests_sent']} is {c['ratio_p50']:.1f}x the "
           f"keep-alive-off median")
    if gap_rest:
        fig += f", {reused / gap_rest:.1f}x the 300 ms idle-gap median"
    state = b3_against(reused, controls)
    return {"stall": "reproduced", "clean": "fixed"}.get(state, "inconclusive"), fig


def b3_against(reused: float, controls: list[float]) -> str | None:
    """B3 from the reused connection's median and its controls' (same
    server, same run): "stall" at B3_STALL_RATIO times the faster control
    and above the slower, "clean" within B3_CLEAN_RATIO of the slower, else
    None (the run says nothing)."""
    if reused >= B3_STALL_RATIO * min(controls) and reused > max(controls):
        return "stall"
    return "clean" if reused <= B3_CLEAN_RATIO * max(controls) else None


def measure_b3(row: Row, outdir: Path, use_strace: bool) -> Verdict:
    """n sequential requests on one socket vs a fresh socket per request.
    A run whose ratio falls between the bounds (a stall is ~100x, a clean
    server ~1x; between them is noise from a loaded machine) is made once
    more on a new server, and the second decides; the figure says so."""
    c = b3_compare(row, outdir, "b3")
    state, fig = b3_judge(c)
    if state == "inconclusive" and c["ratio_p50"] is not None:
        first = fig
        c = b3_compare(row, outdir, "b3-again")
        state, fig = b3_judge(c)
        fig += f" (second run; the first: {first})"
        c["first_run"] = first
    data = {k: v for k, v in c.items() if k != "ka"}
    if use_strace:
        st_srv = _server(row, outdir, "b3-strace", HORSE + row.flags, strace=True)
        with st_srv:
            probe(st_srv, "seq", "-n", "5", out=outdir / "b3-strace.probe.json")
        st = strace_analysis(st_srv.strace_path)
        conns = st["connections"]
        data["sends_per_response"] = sorted({n for x in conns for n in x["sends_per_response"]})
        data["tcp_nodelay_per_connection"] = nodelay_per_connection(st, row)
        data["select_timeouts_ms"] = sorted({t for x in conns for t in x["selects"]["timeouts"]})
        if state != "n/a":
            fig += f"; sendto per response {data['sends_per_response']}"
        if SLOW > 1 and state != "n/a":
            state, fig = b3_from_strace(data, state, fig)
        elif row.platform != "win64" and (state == "reproduced" and not b3_can_stall(data) or
                                          state == "fixed" and b3_must_stall(data)):
            state, fig = b3_confirm(row, outdir, data, fig, state)
    return Verdict(state, fig, data)


def b3_can_stall(data: dict) -> bool:
    """Whether the traced server can meet the stall at all: Nagle on for
    some connection (no TCP_NODELAY) and a response in several writes.
    With TCP_NODELAY on every connection, or one write per response, a
    reused connection has no second write for Nagle to hold; no responses
    traced proves nothing (True)."""
    sends, nodelay = data["sends_per_response"], data["tcp_nodelay_per_connection"]
    if not sends or not nodelay:
        return True
    return min(nodelay) == 0 and max(sends) >= 2


def b3_must_stall(data: dict) -> bool:
    """Whether the traced server meets the stall on every reused request:
    Nagle on for every connection and every response in several writes,
    so the second write waits for the probe's delayed ACK."""
    sends, nodelay = data["sends_per_response"], data["tcp_nodelay_per_connection"]
    return bool(sends and nodelay) and max(nodelay) == 0 and min(sends) >= 2


def b3_confirm(row: Row, outdir: Path, data: dict, fig: str, first: str) -> tuple[str, str]:
    """The medians and strace disagree.  Stalled where a stall cannot
    happen: the slow reused requests were the machine's (c40's six suite
    steps at once: 16.1x with TCP_NODELAY set and one sendto per
    response).  Clean where every reused response must wait for an ACK:
    a fresh connection cost as much as the stall (f1, a slow 2-core VM at
    load 120: a Horse row 0.9x the keep-alive-off median, yet 131x the
    idle-gap one).  One more run on a new server decides; the first
    verdict again is "inconclusive", the two sources left disagreeing,
    never a verdict strace contradicts."""
    why = (f"strace: {data['sends_per_response']} sendto per response, TCP_NODELAY "
           f"{data['tcp_nodelay_per_connection']} per connection, so "
           + ("no stall" if first == "reproduced" else "a stall on every reused request"))
    c = b3_compare(row, outdir, "b3-confirm")
    state, again = b3_judge(c)
    data.update({k: v for k, v in c.items() if k != "ka"}, first_run=fig)
    if state == first:
        return "inconclusive", f"{again} (second run), yet {why}; the first: {fig}"
    return state, f"{again} (second run: the first, {fig}, disagreed with {why})"


def b3_from_strace(data: dict, state: str, fig: str) -> tuple[str, str]:
    """Under a sanitizer (or valgrind) a request costs milliseconds (TSan: a fresh
    connection's thread start ~30 ms, a reused request ~10 ms on a loaded
    machine), the order of the 40 ms stall itself, so the ratio can call a
    stalled build clean: there the strace counts decide, as the wire does
    under Wine (matrix.wine_b3_from_wire), and the ratio stays a figure.
    The stall needs several writes per response with Nagle on."""
    sends, nodelay = data["sends_per_response"], data["tcp_nodelay_per_connection"]
    if not sends or not nodelay:
        return "inconclusive", f"strace (slow build): no responses traced; ratio: {fig}"
    why = f"strace (slow build): {sends} sendto per response, TCP_NODELAY {nodelay} per connection"
    if min(nodelay) >= 1:
        return "fixed", f"{why}; ratio (a figure here): {fig}"
    if max(nodelay) == 0 and min(sends) >= 2:
        return "reproduced", f"{why}; ratio (a figure here): {fig}"
    return "inconclusive", f"{why}; ratio (a figure here): {fig}"


def measure_b4(row: Row, outdir: Path) -> Verdict:
    """Default settings (KeepConnections off): is the close announced?"""
    with _server(row, outdir, "b4", row.flags) as srv:
        res = probe(srv, "close", "--deadline-ms", "1000",
                    out=outdir / "b4.probe.json")
        pool = probe(srv, "pool", "--connections", "2", "--rounds", "16",
                     "--max-idle-ms", "60", out=outdir / "b4-pool.probe.json")
    data = {"connection_header": res["connection_header"][0],
            "server_closed": res["server_closed"],
            "announced_close": res["announced_close"],
            "reuse_outcome": res["reuse_outcome"],
            "pool_stale_failures": pool["stale_failures"],
            "pool_rounds": pool["params"].get("rounds")}
    fig = (f"Connection: {data['connection_header']}; server closed: "
           f"{res['server_closed']}; reuse saw {res['reuse_outcome']}; pooled "
           f"client: {pool['stale_failures']} stale-socket failures in "
           f"{data['pool_rounds']} rounds")
    if res["unannounced_close"] and pool["stale_failures"] > 0:
        return Verdict("reproduced", fig, data)
    if res["server_closed"] and res["announced_close"] and pool["stale_failures"] == 0:
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


def measure_b5(row: Row, outdir: Path) -> Verdict:
    """POST with a body and a GET in one send()."""
    with _server(row, outdir, "b5", HORSE + row.flags) as srv:
        res = probe(srv, "post-pipeline", "--deadline-ms", "1500",
                    out=outdir / "b5.probe.json")
    n = res["responses"]
    data = {"responses": n, "echo_ok": res.get("echo_ok")}
    fig = f"{n} of 2 responses (POST echo ok: {res.get('echo_ok')})"
    if n == 2 and res.get("echo_ok"):
        return Verdict("fixed", fig, data)
    if n < 2:
        return Verdict("reproduced", fig, data)
    return Verdict("inconclusive", fig, data)


POOL = ["--thread-mode", "pool", "--keep-connections", "--keep-connection-timeout", "15000"]
# The B3 stall is taken out of pool-mode latency comparisons (TCP_NODELAY in
# the socket handler), so what is left is how a request is scheduled.
NODELAY = ["--socket-handler", "nodelay"]


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
    if same == 0:
        return Verdict("reproduced", fig, data)
    if same == B9_TRIES and new == B9_TRIES and hook:
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


# B10: Expect: 100-continue is never answered (TFPHTTPConnection.
# ReadRequestContent).  A raw client sends the head of a POST with
# "Expect: 100-continue" and holds the body back, as a client that asks
# does, waiting up to B10_WAIT_S for an interim answer (a bound on the
# wait, ended by the answer); then sends the body and reads the final
# response.  Beside it a real client in the same run: curl POSTs
# B10_CURL_BYTES, above the 1 MiB from which curl asks for 100-continue by
# itself, with its own Expect and with it suppressed (-H 'Expect:'), its
# verbose lines counted ("Done waiting for 100-continue" is curl saying it
# stalled) and its medians compared.  The verdict is the counts; the ratio
# is a figure: alone on a quiet machine it is ~100 on stock and ~1 fixed,
# but under a full matrix's load (or Wine) the POST without Expect itself
# took 0.14-2.4 s, and a ratio bound would judge the load, not the server.
# Thread mode, keep-alive (--horse), as Horse runs it, so that every row,
# Horse's included, is asked the same; fphttpserver's defaults where a tree
# has no KeepConnections yet (the bisect's oldest).
B10_BODY = 1000
B10_WAIT_S = 2.0
B10_CURL_BYTES = 2 * 1024 * 1024
B10_CURL_RUNS = 3


def b10_raw(address: str, port: int, version: str = "1.1") -> dict:
    """The withheld-body exchange: interim responses before the body was
    sent, interim responses after it, the final status, its echo."""
    body = b"e" * B10_BODY
    head = (f"POST /echo HTTP/{version}\r\nHost: kit\r\nContent-Type: application/octet-stream\r\n"
            f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n").encode()
    with socket.create_connection((address, port), timeout=10) as s:
        s.sendall(head)
        early = httpwire.read_responses(s, 1, B10_WAIT_S * SLOW)
        before = httpwire.parse_responses(early)
        s.sendall(body)
        rest = httpwire.read_final(s, 10.0 * SLOW)
    after = httpwire.parse_responses(early + rest)[len(before):]
    final = [r for r in after if not httpwire.is_interim(r)]
    return {"interim_before_body": sum(map(httpwire.is_interim, before)),
            "final_before_body": sum(not httpwire.is_interim(r) for r in before),
            "interim_after_body": sum(map(httpwire.is_interim, after)),
            "final_status": final[0]["status"] if final else None,
            "echoed": bool(final) and final[0]["body"] == body}


def b10_curl(address: str, port: int, body: Path, expect: bool) -> dict:
    """One curl POST of the file: its time, its status, and its own verbose
    lines on the 100 (sent the Expect, got a 100, gave up waiting)."""
    argv = ["curl", "-sS", "-v", "-o", "/dev/null", "-w", "%{http_code} %{time_total}",
            "--data-binary", f"@{body}", "-H", "Content-Type: application/octet-stream",
            f"http://{address}:{port}/echo"]
    if not expect:
        argv[1:1] = ["-H", "Expect:"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60 * SLOW)
    code, _, secs = r.stdout.strip().partition(" ")
    err = r.stderr.splitlines()
    return {"code": code, "s": float(secs or "nan"),
            "asked": sum(1 for ln in err if ln.lower().startswith("> expect: 100-continue")),
            "got_100": sum(1 for ln in err if ln.startswith("< HTTP/1.1 100")),
            "gave_up": sum(1 for ln in err if "Done waiting for 100-continue" in ln)}


def measure_b10(row: Row, outdir: Path) -> Verdict:
    """Is Expect: 100-continue answered before the body is read?  Counts
    decide: the raw client's interim answers before the body (0 on stock,
    1 with the fix) and after it (never), and curl's own, which must agree
    (got the 100 on every run, or gave up waiting on every run); the
    with/without ratio of curl's medians is a figure.  Without curl (a
    machine that lacks the optional package) the raw client decides alone,
    and the figure says so."""
    have_curl = shutil.which("curl") is not None
    data_file = outdir / "b10-body.bin"
    if have_curl:
        data_file.write_bytes(b"c" * B10_CURL_BYTES)
    try:
        # fphttpserver's defaults on a tree without KeepConnections: the
        # body is read the same way.
        srv, flags = _start_first(row, outdir, "b10", (HORSE + row.flags, row.flags))
        try:
            raw = b10_raw(srv.address, srv.port)
            runs = {"expect": [], "no_expect": []}
            for _ in range(B10_CURL_RUNS if have_curl else 0):   # alternated, so load falls on both alike
                runs["expect"].append(b10_curl(srv.address, srv.port, data_file, True))
                runs["no_expect"].append(b10_curl(srv.address, srv.port, data_file, False))
        finally:
            srv.stop()
    finally:
        data_file.unlink(missing_ok=True)
    med = {k: statistics.median(r["s"] for r in v) if v else float("nan") for k, v in runs.items()}
    ratio = med["expect"] / med["no_expect"] if med["no_expect"] > 0 else float("inf")
    cnt = {k: sum(r[k] for r in runs["expect"]) for k in ("asked", "got_100", "gave_up")}
    codes = sorted({r["code"] for v in runs.values() for r in v})
    data = {"flags": flags, "raw": raw, "curl": runs, "curl_median_s": med, "ratio": round(ratio, 2),
            "curl_expect_counts": cnt, "curl_codes": codes}
    fig = (f"raw client: {raw['interim_before_body']} interim 100 before the body was sent "
           f"(waited up to {B10_WAIT_S * SLOW:g} s), {raw['interim_after_body']} after it, final "
           f"{raw['final_status'] or 'none'}{', body echoed' if raw['echoed'] else ''}; "
           + (f"curl POST of {B10_CURL_BYTES >> 20} MiB x{B10_CURL_RUNS}: asked {cnt['asked']}, "
              f"got 100 {cnt['got_100']}, gave up waiting {cnt['gave_up']}; median "
              f"{med['expect'] * 1000:.1f} ms with Expect, {med['no_expect'] * 1000:.1f} ms without "
              f"(ratio {ratio:.1f})" if have_curl else
              "curl not installed: the raw client decides alone"))
    n = B10_CURL_RUNS if have_curl else 0
    if "000" in codes:
        # A curl run that got no response at all (the server stopped
        # answering: seen once under Wine on a loaded machine) measured
        # nothing: the measure is made again on a fresh server (retried).
        raise RuntimeError("a curl POST got no response (curl code 000): " + fig)
    # Any final status will do (Horse's own sample has no /echo: 404), the
    # same for both clients: the body is read before the request is
    # dispatched, whatever its route.  Where /echo answers, it must echo
    # the body whole.
    code = (raw["final_status"] or "").split(" ")[0]
    if (not code or raw["final_before_body"] or (have_curl and codes != [code]) or cnt["asked"] != n
            or (code == "200" and not raw["echoed"])):
        return Verdict("inconclusive", fig, data)
    if (raw["interim_before_body"] == 0 and raw["interim_after_body"] == 0
            and cnt["got_100"] == 0 and cnt["gave_up"] == n):
        return Verdict("reproduced", fig, data)
    if (raw["interim_before_body"] == 1 and raw["interim_after_body"] == 0
            and cnt["got_100"] == n and cnt["gave_up"] == 0):
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


# B11: a request whose framing is ambiguous is dispatched (nothing in
# TFPHTTPConnection checks where a request ends).  Each probe is one write:
# the head of a POST whose length a proxy in front could read otherwise
# than the server (RFC 9112 6.3, 11.2), a body, and a GET hidden where the
# server's own reading puts the next request.  After the first response,
# where the connection is still open, a marker GET with "Connection:
# close" makes the server read on and then close, so every probe ends with
# the server's close (a bound on the wait only, never a verdict): on stock
# the hidden GET is answered between the two (B2 holds it in FBuffer until
# the marker makes the socket readable).  Counts decide: a probe is
# "dispatched" when its first response is not 400 or 501, "rejected" when
# it is one of them and the connection then closes with nothing more;
# reproduced when some probe is dispatched and none rejected, fixed when
# all are rejected.  A control, one POST with one Content-Length, must be
# served by both.
B11_HIDDEN = "GET /ping HTTP/1.1\r\nHost: kit\r\n\r\n"
B11_PROBES = (
    ("te-chunked", "Transfer-Encoding: chunked\r\n",
     f"{len(B11_HIDDEN):x}\r\n{B11_HIDDEN}\r\n0\r\n\r\n"),
    ("te-chunked-and-cl", "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n",
     f"{len(B11_HIDDEN):x}\r\n{B11_HIDDEN}\r\n0\r\n\r\n"),
    ("cl-duplicate-differ", f"Content-Length: {len(B11_HIDDEN)}\r\nContent-Length: 0\r\n", B11_HIDDEN),
    ("cl-space-before-colon", f"Content-Length : {len(B11_HIDDEN)}\r\n", B11_HIDDEN),
    ("cl-obs-fold", f"X-A: a\r\n Content-Length: {len(B11_HIDDEN)}\r\n", B11_HIDDEN),
)
B11_MARKER = b"GET /ping HTTP/1.1\r\nHost: kit\r\nConnection: close\r\n\r\n"
B11_REJECT = ("400", "501")


def b11_probe(address: str, port: int, head_fields: str, body: str) -> dict:
    """One probe: the statuses of every response until the server closed
    (or the bound), whether the marker was sent, how the connection ended."""
    req = (f"POST /echo HTTP/1.1\r\nHost: kit\r\n{head_fields}\r\n{body}").encode()
    marker = False
    with socket.create_connection((address, port), timeout=10) as s:
        s.sendall(req)
        buf, end = httpwire.read_responses_end(s, 1, 5.0 * SLOW)
        first = httpwire.parse_responses(buf)
        if end == "enough" and first[0]["status"][:3] not in B11_REJECT:
            try:
                s.sendall(B11_MARKER)
                marker = True
            except OSError:
                pass
        if end == "enough":
            rest, end, _ = httpwire.read_until_close(s, 5.0 * SLOW)
            buf += rest
    statuses = [r["status"][:3] for r in httpwire.parse_responses(buf)]
    return {"statuses": statuses, "marker": marker, "end": end}


def measure_b11(row: Row, outdir: Path) -> Verdict:
    """Is a request whose end is in doubt dispatched, or rejected with 400
    (501 for chunked) and a close?  Counts of probes decide.  Each probe
    (and the control) on a fresh server: what one probe leaves behind must
    not decide the next (FPC 3.2.2's body overrun stops its whole server,
    repro/fpc/FINDINGS-3.2.2.md section 8)."""
    def one(tag: str, head: str, body: str) -> tuple[dict, list[str]]:
        srv, flags = _start_first(row, outdir, f"b11-{tag}", (HORSE + row.flags, row.flags))
        try:
            return b11_probe(srv.address, srv.port, head, body), flags
        finally:
            srv.stop()

    probes = {}
    for name, head, body in B11_PROBES:
        probes[name], flags = one(name, head, body)
    control, _ = one("control", "Content-Length: 5\r\n", "hello")
    n = len(B11_PROBES)
    dispatched = [k for k, p in probes.items() if p["statuses"] and p["statuses"][0] not in B11_REJECT]
    rejected = [k for k, p in probes.items() if len(p["statuses"]) == 1
                and p["statuses"][0] in B11_REJECT and p["end"] in ("EOF", "ECONNRESET")]
    # Responses beyond the probe's own and the marker's: a hidden request answered.
    hidden = [k for k, p in probes.items() if len(p["statuses"]) > 1 + p["marker"]]
    served = bool(control["statuses"]) and control["statuses"][0] not in B11_REJECT
    data = {"flags": flags, "probes": probes, "control": control, "dispatched": dispatched,
            "rejected": rejected, "hidden_answered": hidden}
    fig = (f"of {n} ambiguous requests: {len(dispatched)} dispatched, {len(hidden)} with the "
           f"hidden GET answered as a request of its own, {len(rejected)} rejected (400/501, then "
           f"closed); statuses " + "; ".join(f"{k} {','.join(p['statuses']) or '-'}"
                                             for k, p in probes.items())
           + f"; control (one Content-Length) {','.join(control['statuses']) or '-'}")
    if not served:
        return Verdict("inconclusive", fig, data)
    # One ambiguous request dispatched is the defect; a probe with no
    # answer at all (FPC 3.2.2's te-chunked-and-cl: its body overrun) is
    # neither, and a mix of dispatched and rejected is not decided.
    if dispatched and not rejected:
        return Verdict("reproduced", fig, data)
    if len(rejected) == n:
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


# B12: ReadRequestContent sizes the body from Content-Length before a byte
# of it has come, and dispatches a body cut short by the end of stream with
# the rest as zeros (trunk) or whatever the heap held (3.2.2).  Two probes,
# each on a fresh server.  Memory: B12_CLIENTS connections each send the
# first line of a POST and stay, so that every connection's thread and
# buffers are there; then each sends the rest of a head announcing
# B12_ANNOUNCED bytes and 10 of them.  After each step, once the server has
# read every byte (its sockets' receive queues are empty) and none of its
# threads is runnable, the server's process tree is read: its accessible
# address space (what was allocated: tree_accessible_kib) and its resident
# memory (VmRSS: what was touched; neither trunk's byte array nor 3.2.2's
# string is written before the body comes, so it stays near 0 on both).  Incomplete: 10 of 100 announced bytes, then a
# half-close; dispatched when any response comes before the close.  Both
# symptoms, or neither, decide; the count is the share of the announced
# bytes the second step allocated (all of it: allocated up front; at most
# 1/16: the body grows with what arrives).
B12_CLIENTS = 8
B12_ANNOUNCED = 32 << 20
B12_SENT = b"0123456789"


def _tree_pids(pid: int) -> list[int]:
    """pid and every descendant (wine-server.sh's program is its child)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in Path(f"/proc/{p}/task/{t}/children").read_text().split()]
        except OSError:
            pass
    return out


def tree_kib(pid: int, field: str) -> int:
    """A /proc/PID/status size (VmSize, VmRSS) summed over a process tree, KiB."""
    total = 0
    for p in _tree_pids(pid):
        try:
            m = re.search(rf"^{field}:\s+(\d+) kB", Path(f"/proc/{p}/status").read_text(), re.M)
        except OSError:
            continue
        total += int(m.group(1)) if m else 0
    return total


def tree_accessible_kib(pid: int) -> int:
    """Address space a process tree can use, KiB: every mapping of
    /proc/PID/maps not mapped PROT_NONE.  An allocation is a new accessible
    mapping (a glibc or FPC heap's mmap), or a reserved one made accessible
    (Wine reserves address space at start and commits a Windows
    VirtualAlloc with mprotect, so VmSize does not move under Wine)."""
    total = 0
    for p in _tree_pids(pid):
        try:
            lines = Path(f"/proc/{p}/maps").read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            span, perms = line.split()[:2]
            if perms.startswith("---"):
                continue
            lo, hi = (int(x, 16) for x in span.split("-"))
            total += (hi - lo) >> 10
    return total


def tree_settled(pid: int) -> bool:
    """No thread of the tree is runnable: it has done all it can with what
    it got (the bytes a client sent wake the reader before send returns)."""
    for p in _tree_pids(pid):
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tids:
            try:
                stat = Path(f"/proc/{p}/task/{t}/stat").read_text()
            except OSError:
                continue
            if stat[stat.rindex(")") + 2] == "R":
                return False
    return True


def server_unread(pid: int, server: tuple[str, int],
                  clients: list[tuple[str, int]]) -> dict[int, int]:
    """Bytes the kernel holds for the server on each connection from
    clients ('address, port' pairs), not yet read by it, by client port; a
    connection not found is left out.  In this process's own network
    namespace the kernel is asked about each connection (tcpdiag): its
    /proc/net/tcp lists thousands of sockets beside B8's measures.  A
    server in a namespace of its own (a Horse sample, below its launcher)
    is looked up in /proc/P/net/tcp[6] of a process P of its tree, a small
    table there: rx_queue, one read for all the ports."""
    want, found, seen = {c[1] for c in clients}, {}, set()
    own_ns = os.readlink("/proc/self/ns/net")
    for p in _tree_pids(pid):
        try:
            ns = os.readlink(f"/proc/{p}/ns/net")
        except OSError:
            continue
        if ns in seen:
            continue
        seen.add(ns)
        if ns == own_ns:
            try:
                found.update(tcpdiag.unread(server, clients))
            except OSError:
                pass
            else:
                if len(found) == len(want):
                    return found
                continue
        for name in ("tcp", "tcp6"):
            try:
                lines = Path(f"/proc/{p}/net/{name}").read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                f = line.split()
                client = int(f[2].rsplit(":", 1)[1], 16)
                if (client in want and client not in found
                        and int(f[1].rsplit(":", 1)[1], 16) == server[1]):
                    found[client] = int(f[4].split(":")[1], 16)
            if len(found) == len(want):
                return found
    return found


def _all_read(pid: int, server: tuple[str, int], clients: list[tuple[str, int]]) -> bool:
    """Every connection from clients found, with nothing left unread."""
    unread = server_unread(pid, server, clients)
    return len(unread) == len({c[1] for c in clients}) and not any(unread.values())


POLL_PACE_MAX_S = 0.1


def _poll(cond, limit_s: float, pace_s: float = 0.01) -> bool:
    """Whether cond() came true within limit_s.  The pace grows by half
    after each look, up to POLL_PACE_MAX_S: a condition met at once is seen
    at once, and one that never is (a stock B15 server, watched for 6 s)
    costs tens of looks, not hundreds.  Dozens of measures poll at once,
    and at a fixed 10 ms their wake-ups were a third of the matrix
    harness's own CPU."""
    end = time.monotonic() + limit_s
    while not cond():
        if time.monotonic() >= end:
            return False
        time.sleep(pace_s)   # polling pace; the condition decides
        pace_s = min(pace_s * 1.5, max(pace_s, POLL_PACE_MAX_S))
    return True


def b12_memory(srv: Server) -> dict:
    pid = srv._server_pid()
    out = {"announced": B12_CLIENTS * B12_ANNOUNCED, "ready": True}
    first = b"POST /echo HTTP/1.1\r\nHost: kit\r\n"
    rest = f"Content-Length: {B12_ANNOUNCED}\r\n\r\n".encode() + B12_SENT
    with ExitStack() as stack:
        socks = [stack.enter_context(socket.create_connection((srv.address, srv.port), timeout=10))
                 for _ in range(B12_CLIENTS)]
        clients = [s.getsockname()[:2] for s in socks]
        for step, data in (("before", first), ("after", rest)):
            for s in socks:
                s.sendall(data)
            read = _poll(lambda: _all_read(pid, (srv.address, srv.port), clients),
                         10.0 * SLOW, 0.05)
            settled = _poll(lambda: tree_settled(pid), 10.0 * SLOW)
            out[f"{step}_read"], out[f"{step}_settled"] = read, settled
            out["ready"] &= read and settled
            out[step] = {"accessible": tree_accessible_kib(pid), "VmRSS": tree_kib(pid, "VmRSS")}
    out["allocated"] = (out["after"]["accessible"] - out["before"]["accessible"]) * 1024
    out["touched"] = (out["after"]["VmRSS"] - out["before"]["VmRSS"]) * 1024
    out["sent"] = B12_CLIENTS * (len(first) + len(rest))
    return out


def b12_incomplete(srv: Server) -> dict:
    with socket.create_connection((srv.address, srv.port), timeout=10) as s:
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: kit\r\nContent-Length: 100\r\n\r\n" + B12_SENT)
        s.shutdown(socket.SHUT_WR)
        buf, end, _ = httpwire.read_until_close(s, 5.0 * SLOW)
    statuses = [r["status"][:3] for r in httpwire.parse_responses(buf)]
    return {"statuses": statuses, "end": end, "bytes": len(buf)}


def measure_b12(row: Row, outdir: Path) -> Verdict:
    """Is an announced body allocated before it arrives, and a body cut
    short dispatched?  Byte counts and responses decide."""
    def on_fresh(tag: str, probe_fn) -> tuple[dict, list[str]]:
        # Without KeepConnections, Threaded (--thread-mode thread) still
        # gives each client a thread, which the 8 waiting clients need.
        srv, flags = _start_first(row, outdir, f"b12-{tag}",
                                  (HORSE + row.flags, ["--thread-mode", "thread"] + row.flags,
                                   row.flags))
        try:
            return probe_fn(srv), flags
        finally:
            srv.stop()

    mem, flags = on_fresh("memory", b12_memory)
    short, _ = on_fresh("incomplete", b12_incomplete)
    share = mem["allocated"] / mem["announced"]
    # A lone 400 is the cut-short body rejected, not dispatched: B16's fix
    # answers the error read-body-as-it-arrives raises (400) instead of
    # closing in silence.
    rejected = short["statuses"] == ["400"]
    dispatched = bool(short["statuses"]) and not rejected
    data = {"flags": flags, "memory": mem, "incomplete": short, "share": round(share, 4)}
    fig = (f"{B12_CLIENTS} clients x {B12_ANNOUNCED >> 20} MiB announced, {mem['sent']} B sent: "
           f"+{mem['allocated'] >> 20} MiB allocated ({share:.2f} of the announced), "
           f"+{mem['touched'] >> 20} MiB resident; 10 of 100 body bytes then EOF: "
           + (f"dispatched ({','.join(short['statuses'])})" if dispatched
              else f"rejected (400), then {short['end']}" if rejected
              else f"no response, {short['end']}"))
    if not mem["ready"]:
        return Verdict("inconclusive", fig + " (the server had not read every head)", data)
    if share >= 0.5 and dispatched:
        return Verdict("reproduced", fig, data)
    if share <= 1 / 16 and not dispatched and short["end"] in ("EOF", "ECONNRESET"):
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


# B13: DoHandleRequest decides keep-alive with whole-string comparisons:
# FKeepAlive from HttpVersion='1.1', then SameText of the whole Connection
# field with 'close' or 'keep-alive'.  Each probe is a GET on a connection
# of its own; after its response a second GET (with Connection: close) is
# sent on the same connection: answered means the connection persisted, an
# EOF or RST that it was closed (a server that decided to close never
# answers it).  Counts decide: reproduced when every probe persisted where
# RFC 9112 9.3 / 9.6 says close and closed where it says persist, fixed
# when every probe does what the RFC says.  Two controls (HTTP/1.1 without
# Connection persists; "Connection: close" closes) must hold on both; a
# server without keep-alive (FPC 3.2.2, trees before KeepConnections) has
# no persistence to decide: n/a.
B13_PROBES = (   # name, version, Connection value (None: no field), the RFC's answer
    ("list-keep-alive-close", "1.1", "keep-alive, close", "closed"),
    ("list-close-first", "1.1", "close, x-kit", "closed"),
    ("http-1.2", "1.2", None, "persisted"),
)
B13_CONTROLS = (
    ("control-1.1", "1.1", None, "persisted"),
    ("control-close", "1.1", "close", "closed"),
)


def b13_probe(address: str, port: int, version: str, connection: str | None) -> dict:
    field = f"Connection: {connection}\r\n" if connection is not None else ""
    first = f"GET /ping HTTP/{version}\r\nHost: kit\r\n{field}\r\n".encode()
    second = b"GET /ping HTTP/1.1\r\nHost: kit\r\nConnection: close\r\n\r\n"
    with socket.create_connection((address, port), timeout=10) as s:
        s.sendall(first)
        buf, end = httpwire.read_responses_end(s, 1, 5.0 * SLOW)
        statuses = [r["status"][:3] for r in httpwire.parse_responses(buf)]
        if end != "enough":
            return {"statuses": statuses, "then": "no response", "end": end}
        try:
            s.sendall(second)
        except OSError:
            return {"statuses": statuses, "then": "closed", "end": "send failed"}
        rest, end, _ = httpwire.read_until_close(s, 5.0 * SLOW)
    again = httpwire.parse_responses(rest)
    return {"statuses": statuses + [r["status"][:3] for r in again],
            "then": "persisted" if again else "closed", "end": end}


def measure_b13(row: Row, outdir: Path) -> Verdict:
    """Is keep-alive decided on the Connection options and the version's
    number, or on whole strings?  Counts of probes decide."""
    srv, flags = _start_first(row, outdir, "b13", (HORSE + row.flags, row.flags))
    try:
        got = {name: b13_probe(srv.address, srv.port, v, c)
               for name, v, c, _ in B13_PROBES + B13_CONTROLS}
    finally:
        srv.stop()
    rfc = {name: want for name, _, _, want in B13_PROBES + B13_CONTROLS}
    fig = "; ".join(f"{n} {p['then']} (RFC: {rfc[n]})" for n, p in got.items())
    data = {"flags": flags, "probes": got}
    if got["control-1.1"]["then"] == "closed" and got["control-close"]["then"] == "closed":
        return Verdict("n/a", "no keep-alive: every response closes the connection; " + fig, data)
    if any(got[n]["then"] != rfc[n] for n, *_ in B13_CONTROLS):
        return Verdict("inconclusive", fig, data)
    right = [n for n, *_ in B13_PROBES if got[n]["then"] == rfc[n]]
    if not right:
        return Verdict("reproduced", fig, data)
    if len(right) == len(B13_PROBES):
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


# B14: TFPHTTPConnectionResponse.DoSendContent writes Content or
# ContentStream whatever the request's method: a response to HEAD carries
# the content a GET would get (RFC 9110 9.3.2: the server MUST NOT send
# content).  On one connection a HEAD, then, once its head has arrived, a
# GET /ping (Connection: close), read until the server closes.  The HEAD
# response is read as a client reads it (its head ends it, whatever its
# Content-Length says): the bytes from the end of its head to the GET's
# status line are content it should not have sent, and the GET's response
# is read as its own only when its status line comes first (a 200, with
# the content the control's GET /ping gets).  The control, in the same
# run: the same with a GET in place of the HEAD.  The HEAD's
# target is one no server here routes (HEAD /ping is not GET /ping to the
# kit's programs: a 404, or Horse's 405), so that it and the control's
# first GET take the same route: the control's Content-Length is the one
# the HEAD's should equal (9.3.2's SHOULD, a figure), and its content the
# bytes the HEAD's stray ones are.  Counts decide: reproduced when bytes
# follow the HEAD's head and the GET's response is not read as its own,
# fixed when none follow and it is.  Without keep-alive (FPC 3.2.2, trees
# before KeepConnections: the control's GET after its first goes
# unanswered) the bytes after the HEAD's head until the close decide alone.
B14_TARGET = "/b14-no-route"
B14_NEXT = b"GET /ping HTTP/1.1\r\nHost: kit\r\nConnection: close\r\n\r\n"


def b14_probe(address: str, port: int, method: str) -> dict:
    """method B14_TARGET, then B14_NEXT once its response (HEAD: its head)
    is in: what came after the first response until the next one's status
    line, and how the next one was read."""
    first = f"{method} {B14_TARGET} HTTP/1.1\r\nHost: kit\r\n\r\n".encode()
    with socket.create_connection((address, port), timeout=10) as s:
        s.sendall(first)
        if method == "HEAD":
            buf, end = httpwire.read_head_end(s, 5.0 * SLOW)
        else:
            buf, end = httpwire.read_responses_end(s, 1, 5.0 * SLOW)
        head = httpwire.parse_head(buf)
        if head is None or end != "enough":
            return {"status": None, "end": end, "bytes": len(buf)}
        out = {"status": head["status"][:3], "content_length": head["content_length"]}
        used = head["head_len"]
        if method != "HEAD":
            resp = httpwire.parse_responses(buf)[0]
            out["content"] = resp["body"].decode("latin-1")
            used += len(resp["body"])
        try:
            s.sendall(B14_NEXT)
        except OSError:
            pass   # closed: what came before the close is read all the same
        more, out["end"], _ = httpwire.read_until_close(s, 5.0 * SLOW)
    rest = buf[used:] + more
    at = rest.find(b"HTTP/1.")
    nxt = httpwire.parse_responses(rest[at:]) if at >= 0 else []
    out["after_head"] = at if nxt else len(rest)
    out["stray"] = rest[:out["after_head"]].decode("latin-1")
    out["next"] = ("unanswered" if not nxt else
                   "read as its own" if at == 0 and nxt[0]["status"][:3] == "200"
                   else "not read as its own")
    out["next_status"] = nxt[0]["status"][:3] if nxt else None
    out["next_content"] = nxt[0]["body"].decode("latin-1") if nxt else None
    return out


def measure_b14(row: Row, outdir: Path) -> Verdict:
    """Does a response to HEAD carry content, and is the next response on
    the connection read as its own?  Byte counts decide."""
    srv, flags = _start_first(row, outdir, "b14", (HORSE + row.flags, row.flags))
    try:
        head = b14_probe(srv.address, srv.port, "HEAD")
        ctl = b14_probe(srv.address, srv.port, "GET")
    finally:
        srv.stop()
    data = {"flags": flags, "target": B14_TARGET, "head": head, "control": ctl}
    if head["status"] is None or ctl["status"] is None:
        return Verdict("inconclusive", f"no response to the HEAD ({head['end']}) or to the "
                       f"control's GET ({ctl['end']})", data)
    data["content_length_as_get"] = head["content_length"] == ctl["content_length"]
    stray = head["after_head"]
    fig = (f"HEAD {B14_TARGET}: {head['status']}, Content-Length {head['content_length']} "
           f"(a GET's: {ctl['content_length']}), then {stray} B"
           + (" (the GET's content)" if stray and head["stray"] == ctl["content"] else "")
           + f"; the GET after it: {head['next']}"
           + (f" ({head['next_status']} after the {stray} B)" if head["next"] == "not read as its own"
              else "")
           + f"; control, a GET then a GET: {ctl['status']}/{len(ctl['content'])} B, then "
           f"{ctl['after_head']} B, the second GET {ctl['next']}")
    if ctl["after_head"] != 0:
        return Verdict("inconclusive", fig, data)
    if (ctl["next"] == "unanswered" and head["next"] == "unanswered"
            and "timeout" not in (ctl["end"], head["end"])):
        # No keep-alive: every response closes; the bytes up to the close decide.
        fig = "no keep-alive (each connection closed after its first response); " + fig
        return Verdict("reproduced" if stray else "fixed", fig, data)
    if ctl["next"] != "read as its own":
        return Verdict("inconclusive", fig, data)
    if stray and head["next"] == "not read as its own":
        return Verdict("reproduced", fig, data)
    if (not stray and head["next"] == "read as its own"
            and head["next_content"] == ctl["next_content"]):
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


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


# B16: TFPHTTPConnection.HandleRequest's except turns keep-alive off and
# calls HandleRequestError (a log line, or OnRequestError): a request the
# reader rejects (ParseStartLine, ReadString, ReadRequestContent raise
# EHTTPServer/EHTTP with StatusCode 400, 431, 413) is never answered, and
# the client sees the close with no status (curl: "Empty reply from
# server").  Each probe is one request on a connection of its own, read
# until the server closes (a bound on the wait only, never a verdict);
# none is about framing (B11's fix answers its own rejections).  The
# request line without an HTTP version every tree of make bisect rejects
# (ParseStartLine's missing protocol); a control byte, a header line
# longer than the default MaxLineLength (8*ReadBufLen) and a body above
# MaxBodySize (--max-body-size, where the program has it; the head alone
# is sent, so that nothing the server leaves unread turns its close into
# a reset) only where the tree rejects them: a tree that serves one (a
# response with another status) leaves it out, as data.  Counts decide:
# reproduced when every rejected probe's connection closed with no
# response, fixed when each got its status and then the close; the
# control, a valid GET, must be answered on both.
B16_MAX_BODY = 1024
B16_LONG = 8 * 4096 + 1
B16_PROBES = (   # name, request, the status the rejection carries
    ("missing-protocol", b"GET /ping XTTP/1.1\r\nHost: kit\r\n\r\n", "400"),
    ("control-byte", b"G\x01T /ping HTTP/1.1\r\nHost: kit\r\n\r\n", "400"),
    ("line-too-long", b"GET /ping HTTP/1.1\r\nHost: kit\r\nX-Long: "
     + b"a" * (B16_LONG - len("X-Long: ")) + b"\r\n\r\n", "431"),
)
B16_BODY_PROBE = ("body-too-large", f"POST /echo HTTP/1.1\r\nHost: kit\r\nContent-Length: "
                  f"{4 * B16_MAX_BODY}\r\n\r\n".encode(), "413")
B16_ALWAYS = "missing-protocol"
B16_CONTROL = b"GET /ping HTTP/1.1\r\nHost: kit\r\n\r\n"


def send_then_read_to_close(s: socket.socket, data: bytes) -> tuple[bytes, str]:
    """Send DATA, read one response, then on until the server closes (each
    wait bounded); the bytes and how the read ended.  A server that closes
    while DATA is sent is read all the same: what came before the close."""
    try:
        s.sendall(data)
    except OSError:
        pass
    buf, end = httpwire.read_responses_end(s, 1, 5.0 * SLOW)
    if end == "enough":
        rest, end, _ = httpwire.read_until_close(s, 5.0 * SLOW)
        buf += rest
    return buf, end


def b16_probe(address: str, port: int, req: bytes, want: str) -> dict:
    """One request: its response (if any) and how the connection ended."""
    with socket.create_connection((address, port), timeout=10) as s:
        buf, end = send_then_read_to_close(s, req)
    resps = httpwire.parse_responses(buf)
    out = {"responses": len(resps), "statuses": [r["status"][:3] for r in resps],
           "end": end, "bytes": len(buf)}
    if resps:
        out["connection"] = resps[0]["connection"]
    out["outcome"] = ("timeout" if end == "timeout" and not resps else
                      "unanswered" if not resps and not buf else
                      "answered" if (out["statuses"] == [want] and end != "timeout")
                      else "served" if resps and resps[0]["status"][:3] != want
                      else "other")
    return out


def b16_control(address: str, port: int) -> dict:
    """The valid GET: its status is all the verdict reads (answered with
    any status), so one response ends the read; the connection is kept
    alive, and a read on to the close would wait out its bound."""
    with socket.create_connection((address, port), timeout=10) as s:
        s.sendall(B16_CONTROL)
        buf, end = httpwire.read_responses_end(s, 1, 5.0 * SLOW)
    return {"statuses": [r["status"][:3] for r in httpwire.parse_responses(buf)], "end": end}


def _b16_said(p: dict, want: str) -> str:
    if p["outcome"] == "unanswered":
        return f"0 responses, {p['end']}"
    if p["outcome"] == "answered":
        return (f"{want} (Connection: {p.get('connection') or 'absent'}), then {p['end']}")
    if p["outcome"] == "served":
        return f"served {','.join(p['statuses'])} (not rejected here)"
    return f"{p['responses']} responses ({','.join(p['statuses'])}), {p['bytes']} B, {p['end']}"


def measure_b16(row: Row, outdir: Path) -> Verdict:
    """Is a request the reader rejects answered with its status?  Counts
    of probes decide."""
    body = ["--max-body-size", str(B16_MAX_BODY)]
    srv, flags = _start_first(row, outdir, "b16", (HORSE + row.flags + body, HORSE + row.flags,
                                                   row.flags + body, row.flags))
    probes = B16_PROBES + ((B16_BODY_PROBE,) if "--max-body-size" in flags else ())
    try:
        got = {name: b16_probe(srv.address, srv.port, req, want) for name, req, want in probes}
        ctl = b16_control(srv.address, srv.port)
    finally:
        srv.stop()
    want = {name: w for name, _, w in probes}
    fig = "; ".join(f"{n} {_b16_said(p, want[n])}" for n, p in got.items())
    fig += f"; control GET {','.join(ctl['statuses']) or 'unanswered'}"
    data = {"flags": flags, "probes": got, "control": ctl,
            "statuses": {n: p["statuses"] for n, p in got.items()},
            "connection_close": {n: (p.get("connection") or "").lower() == "close"
                                 for n, p in got.items() if p["responses"]}}
    judged = [n for n, p in got.items() if p["outcome"] in ("unanswered", "answered")]
    data["judged"] = judged
    if not ctl["statuses"] or B16_ALWAYS not in judged or any(
            p["outcome"] in ("timeout", "other") for p in got.values()):
        return Verdict("inconclusive", fig, data)
    if all(got[n]["outcome"] == "unanswered" for n in judged):
        return Verdict("reproduced", fig, data)
    if all(got[n]["outcome"] == "answered" and got[n]["end"] in ("EOF", "ECONNRESET")
           for n in judged):
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)



# B17: TFPHTTPConnection.ReadString's FillBuffer waits
# FSocket.CanRead(RequestReadTimeout) before each fill: the time-out bounds
# one wait, not the request head, so a head that comes a few bytes at a
# time, each gap below the time-out, is read for as long as its sender
# likes (slowloris: in tmNone and tmPolled the whole server, a worker in
# tmThreadPool, every MaxLiveConnectionCount slot with 128 such clients;
# tests/hostile has those).  repro/harness/dripclient.py, a process of its
# own, opens three connections at once on one server with
# RequestReadTimeout 1000 ms: the drip (a 66-byte head, 3 bytes every
# 100 ms: 2.2 s, each gap a tenth of the time-out), read between pieces so
# that it stops at the server's answer or close; and the fix's two
# hazards, which every row must serve: a 66-byte body dripped the same way
# after a whole head (the content keeps the per-read rule), and a kept
# connection idle twice the time-out (below Horse's KeepConnectionTimeout
# of 15 s) whose next head comes whole.  Counts decide: reproduced when
# the drip's 66 bytes were all sent and it was answered (200; an old
# tree's 404 is an answer too); fixed when the
# server answered 408 or closed before the head was complete.  A gap of
# the client's own of half the time-out or more (a stalled client) leaves
# nothing decided: the measure raises and is made once more on a fresh
# server.  A tree with no RequestReadTimeout at all (FPC 3.2.2, old
# trunks) is measured with none: nothing bounds its head, the drip is
# answered.
B17_TIMEOUT_MS = 1000
B17_GAP_MS = 100
DRIPCLIENT = Path(__file__).resolve().parent / "dripclient.py"


def measure_b17(row: Row, outdir: Path) -> Verdict:
    """Is a request head dripped below the per-read time-out cut at
    RequestReadTimeout?  Bytes of the head sent before the answer or
    close decide; a slow body and an idle kept connection must be served."""
    timeout = ["--request-read-timeout", str(B17_TIMEOUT_MS)]
    bounded = True
    try:
        srv, flags = _start_first(row, outdir, "b17", (HORSE + row.flags + timeout, row.flags + timeout))
    except Unsupported as e:
        if "no RequestReadTimeout" not in str(e):
            raise   # a program that cannot set it (Horse's API): n/a
        bounded = False
        srv, flags = _start_first(row, outdir, "b17", (HORSE + row.flags,
                                                       ["--thread-mode", "thread"] + row.flags, row.flags))
    # The idle kept connection where the tree keeps connections: a tree
    # without RequestReadTimeout has no fix to break it (FPC 3.2.2 has no
    # keep-alive at all: its --horse is Threaded only).
    keepalive = bounded and ("--keep-connections" in flags or "--horse" in flags)
    argv = [sys.executable, str(DRIPCLIENT), srv.address, str(srv.port), "--gap-ms", str(B17_GAP_MS)]
    if keepalive:
        argv += ["--kept", "--idle-ms", str(2 * B17_TIMEOUT_MS)]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60 * SLOW)
    finally:
        srv.stop()
    if r.returncode != 0:
        raise KitError(f"dripclient exited {r.returncode}: {r.stderr.strip()}")
    got = json.loads(r.stdout)
    (outdir / "b17.dripclient.json").write_text(json.dumps(got, indent=1))
    d, b, k = got["drip"], got["body"], got["kept"]
    widest = max(d["widest_gap_ms"], b["widest_gap_ms"])
    if bounded and widest * 2 >= B17_TIMEOUT_MS:
        raise KitError(f"the client's own gap was {widest} ms, half the time-out or more: measured nothing")
    fig = (f"drip ({d['of']}-byte head, {got['piece']} B every {B17_GAP_MS} ms, "
           + (f"RequestReadTimeout {B17_TIMEOUT_MS} ms" if bounded else "no RequestReadTimeout in this tree")
           + f"): {','.join(d['statuses']) or 'no response'} after {d['sent']} of {d['of']} bytes, "
           f"{d['end']} at {d['ms']} ms")
    fig += (f"; slow body ({b['of']} B, {got['piece']} B every {B17_GAP_MS} ms): "
            + (",".join(b["statuses"]) or "no response") + (" echoed" if b["echoed"] else ""))
    if k is not None:
        fig += (f"; kept connection idle {2 * B17_TIMEOUT_MS} ms: next GET "
                + ("closed while idle" if k["closed_while_idle"] else ",".join(k["second"]) or "unanswered"))
    data = {"flags": flags, "bounded": bounded, "timeout_ms": B17_TIMEOUT_MS if bounded else None,
            "widest_gap_ms": widest, **got}
    # The hazards are the fix's: judged where a fix can be (a tree with the
    # time-out); an older tree's routes may answer 404, which is an answer.
    hazards_ok = not bounded or (b["statuses"] == ["200"] and b["echoed"] and (
        k is None or (k["first"] == ["200"] and k["second"] == ["200"])))
    data["hazards_ok"] = hazards_ok
    if not hazards_ok:
        return Verdict("inconclusive", fig, data)
    if d["sent"] == d["of"] and len(d["statuses"]) == 1 and d["statuses"] != ["408"]:
        return Verdict("reproduced", fig, data)
    if d["sent"] < d["of"] and d["statuses"] in ([], ["408"]) and d["end"] in ("EOF", "ECONNRESET", "enough"):
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


# B19: at MaxLiveConnectionCount TFPCustomHttpServer.DoOnAllowConnect
# writes a fixed 503 (fpSend) and refuses, and the refused socket is closed
# at once.  The 503 has no Content-Length: its text ends where the
# connection ends (RFC 9112 6.3, rule 8), and the client's request, there
# by then as a rule, is never read, so the close is a reset, not a FIN: a
# client cannot tell the whole 503 from one cut short, and one that meets
# the reset before the end it waits for fails (curl: exit 56).  With
# --max-live-connection-count 1 a kept-alive connection takes the slot
# (its GET answered), then B19_PROBES connections each send a GET in one
# write at once and read until the server ends the connection (a bound on
# the wait only).  Structure decides: reproduced when no probe's 503 has a
# Content-Length, fixed when every one has the length of its text; the
# text, Retry-After and Connection: close must be there in both (the fix
# changes nothing else), and the resets are counted, as a figure (the fix
# leaves the close as it is).  What the fix may break, in the same run:
# once the slot holder has closed, a new connection is served again
# (polled: the server must see the close first).  A program without
# MaxLiveConnectionCount (FPC 3.2.2, Horse's API) refuses the flag: n/a.
B19_PROBES = 20
B19_TEXT = b"Server is temporarily overloaded. Please try again shortly."
B19_FLAGS = ["--max-live-connection-count", "1"]


def b19_probe(address: str, port: int) -> dict:
    """One connection beyond the cap: a GET at once, then everything until
    the server ends the connection."""
    with socket.create_connection((address, port), timeout=10) as s:
        buf, end = send_then_read_to_close(s, httpwire.get("/ping"))
    out = {"end": end, "bytes": len(buf), "status": None}
    head = httpwire.parse_head(buf)
    if head:
        fields = {n.lower(): v for n, v in head["headers"]}
        out.update(status=head["status"][:3], content_length=fields.get("content-length"),
                   text=buf[head["head_len"]:] == B19_TEXT, retry_after=fields.get("retry-after"),
                   connection=(fields.get("connection") or "").lower())
    return out


def _b19_served_again(srv: Server) -> str:
    """A GET on a new connection once the slot holder has closed: its
    status, polled until it is not the 503 (the server sees the close in its
    own time; 5 s bound)."""
    got = ""

    def served() -> bool:
        nonlocal got
        with socket.create_connection((srv.address, srv.port), timeout=10) as s:
            try:
                got = ",".join(r["status"][:3] for r in httpwire.exchange(s, "/ping", 5.0 * SLOW))
            except OSError:
                got = "reset"
        return got not in ("503", "reset", "")
    _poll(served, 5.0 * SLOW)
    return got or "unanswered"


def measure_b19(row: Row, outdir: Path) -> Verdict:
    """Does the 503 sent at MaxLiveConnectionCount say its length?  The
    503s' fields decide; the resets are counted."""
    srv = _server(row, outdir, "b19", HORSE + row.flags + B19_FLAGS).start()
    try:
        with socket.create_connection((srv.address, srv.port), timeout=10) as hold:
            held = ",".join(r["status"][:3] for r in httpwire.exchange(hold, "/ping", 5.0 * SLOW))
            probes = [b19_probe(srv.address, srv.port) for _ in range(B19_PROBES)] if held == "200" else []
        after = _b19_served_again(srv) if held == "200" else "not tried"
    finally:
        srv.stop()
    n503 = [p for p in probes if p["status"] == "503"]
    lengths = sorted({p["content_length"] or "none" for p in n503})
    resets = sum(p["end"] == "ECONNRESET" for p in probes)
    fig = (f"slot held by a kept-alive GET ({held or 'unanswered'}); {len(n503)} of {len(probes)} "
           f"connections beyond MaxLiveConnectionCount 1 got the 503, Content-Length "
           f"{'/'.join(lengths) or '-'}, its {len(B19_TEXT)}-byte text whole in "
           f"{sum(bool(p.get('text')) for p in n503)}; ended by a reset {resets}, by EOF "
           f"{sum(p['end'] == 'EOF' for p in probes)}; after the holder closed: GET {after}")
    data = {"held": held, "probes": probes, "after": after, "resets": resets,
            "content_lengths": lengths}
    whole = all(p.get("text") and p.get("retry_after") == "30" and p.get("connection") == "close"
                and p["end"] in ("EOF", "ECONNRESET") for p in n503)
    if held != "200" or not probes or len(n503) != len(probes) or not whole or after != "200":
        return Verdict("inconclusive", fig, data)
    if lengths == ["none"]:
        return Verdict("reproduced", fig, data)
    if lengths == [str(len(B19_TEXT))]:
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


# B18: TFPHTTPConnection.ReadRequestHeaders takes an empty first line for
# "no request": it returns Nil, DoHandleRequest turns keep-alive off and
# sets FEmptyDetected, and the connection is closed without an answer,
# where RFC 9112 2.2 says a server SHOULD ignore at least one empty line
# (CRLF) before the request line.  Three probes, each on a connection of
# its own, each read until the server closes (a bound on the wait only,
# never a verdict): a CRLF and a GET (Connection: close) in one write as
# the connection's first bytes; 100 CRLFs and the GET (hostile
# start-crlf-100); and on a kept connection a POST /echo, its answer read,
# then a CRLF and the GET in one write (a client that ends a body with
# CRLF, RFC 2616 4.1).  The POST is answered first, so nothing of B2 or B5
# (bytes left in FBuffer) is involved: the CRLF is the first byte the
# server reads for the next request.  Where the POST's answer ends the
# connection (no keep-alive: FPC 3.2.2, trees before KeepConnections) the
# kept probe does not apply (the control's GET after the POST says so).
# Controls, in the same run: the GET alone, and the POST then the GET with
# no CRLF on one connection.  Counts
# decide: reproduced when every applicable probe's GET went unanswered
# (the close after zero responses), fixed when each got the control's
# answer (200; a tree of make bisect may answer /ping 404), then the close.
B18_GET = b"GET /ping HTTP/1.1\r\nHost: kit\r\nConnection: close\r\n\r\n"
B18_POST = b"POST /echo HTTP/1.1\r\nHost: kit\r\nContent-Length: 5\r\n\r\nhello"
B18_PROBES = (   # name, what goes before the GET, after a POST on the connection
    ("crlf", b"\r\n", False),
    ("crlf-100", b"\r\n" * 100, False),
    ("crlf-after-post", b"\r\n", True),
)
B18_CONTROLS = (("control", b"", False), ("control-after-post", b"", True))


def b18_probe(address: str, port: int, before: bytes, after_post: bool) -> dict:
    """before + B18_GET in one write (after a POST answered first, when
    after_post) on a new connection, read until the server closes: the
    GET's answer, if any, and how the connection ended."""
    with socket.create_connection((address, port), timeout=10) as s:
        out: dict = {}
        if after_post:
            s.sendall(B18_POST)
            buf, end = httpwire.read_responses_end(s, 1, 5.0 * SLOW)
            post = httpwire.parse_responses(buf)
            out["post"] = post[0]["status"][:3] if post else None
            if end != "enough":
                out.update(outcome="unanswered post", end=end)
                return out
            if (post[0]["connection"] or "").lower() == "close":
                out.update(outcome="not kept", end="closed after the POST")
                return out
        buf, end = send_then_read_to_close(s, before + B18_GET)
    if after_post and end == "timeout" and not buf:
        # The server kept the connection and never read again (no keep-alive
        # answer, a pool that does not re-check it: B6): nothing to judge.
        out.update(outcome="timeout", end=end)
        return out
    resps = httpwire.parse_responses(buf)
    out.update(responses=len(resps), statuses=[r["status"][:3] for r in resps], end=end,
               bytes=len(buf))
    out["outcome"] = ("timeout" if end == "timeout" else
                      "unanswered" if not buf else
                      "answered" if len(resps) == 1 else "other")
    return out


def _b18_said(p: dict) -> str:
    if p["outcome"] in ("answered", "unanswered", "other"):
        post = f"POST {p['post']}, then " if "post" in p else ""
        return f"{post}{','.join(p['statuses']) or '0 responses'}, {p['end']}"
    return f"{p['outcome']} ({p.get('post') or '-'}, {p['end']})"


def measure_b18(row: Row, outdir: Path) -> Verdict:
    """Is an empty line before the request line ignored, or taken for the
    end of the connection?  Counts of probes decide."""
    srv, flags = _start_first(row, outdir, "b18", (HORSE + row.flags, row.flags))
    try:
        got = {name: b18_probe(srv.address, srv.port, before, kept)
               for name, before, kept in B18_PROBES + B18_CONTROLS}
    finally:
        srv.stop()
    fig = "; ".join(f"{n} {_b18_said(p)}" for n, p in got.items())
    data = {"flags": flags, "probes": got}
    # The control's GET after the POST says whether the connection is kept
    # at all: closed after the POST (no keep-alive, or its Connection:
    # close), the kept probe does not apply.
    kept = got["control-after-post"]["outcome"]
    if got["control"]["outcome"] != "answered" or kept not in ("answered", "unanswered", "not kept"):
        return Verdict("inconclusive", fig, data)
    judged = [n for n, _, after_post in B18_PROBES if not after_post or kept == "answered"]
    data["judged"] = judged
    if all(got[n]["outcome"] == "unanswered" for n in judged):
        return Verdict("reproduced", fig, data)
    # Answered: as the control's GET is (its status: a tree of make bisect
    # may route /ping otherwise), then the close it asked for.
    if all(got[n]["outcome"] == "answered" and got[n]["statuses"] == got["control"]["statuses"]
           and got[n]["end"] in ("EOF", "ECONNRESET") for n in judged):
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


# B20: TFPHTTPConnection.ParseStartLine takes the request-target as it
# comes: an absolute-form target (RFC 9112 3.2.2: "A server MUST accept the
# absolute-form in requests") is cut at '?' and gets a '/' in front, so
# `GET http://h:p/ping` reaches the application with PathInfo
# `/http://h:p/ping`, a path no route has (404).  Probes, each on a
# connection of its own (Connection: close), read until the server closes
# (a bound on the wait only, never a verdict): the absolute-form GET of
# /ping, and of /ping?x=1 (the query is cut off the path as in origin-form);
# their controls in the same run: the origin-form GET /ping and /ping?x=1.
# The statuses and body lengths of the same run decide, over the pairs
# whose control is answered 200 (the /ping pair must be; a tree of make
# bisect whose PathInfo keeps the query routes /ping?x=1 to 404, so that
# pair says nothing there): reproduced when each judged absolute-form
# probe's answer is not its control's (stock: 404, "not found"), fixed
# when each is answered exactly as its control (status and body length).
B20_PATHS = ("/ping", "/ping?x=1")


def b20_request(target: str, host: str) -> bytes:
    return f"GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()


def b20_probe(address: str, port: int, target: str) -> dict:
    """One GET with this request-target on a new connection, read until the
    server closes: its answer (status, body length) and how it ended."""
    with socket.create_connection((address, port), timeout=10) as s:
        buf, end = send_then_read_to_close(s, b20_request(target, f"{address}:{port}"))
    resps = httpwire.parse_responses(buf)
    out = {"target": target, "responses": len(resps), "end": end, "bytes": len(buf)}
    if len(resps) == 1:
        out.update(status=resps[0]["status"][:3], body=len(resps[0]["body"]))
    return out


def _b20_said(p: dict) -> str:
    if p["responses"] != 1:
        return f"{p['responses']} responses, {p['bytes']} B, {p['end']}"
    return f"{p['status']}/{p['body']}B"


def measure_b20(row: Row, outdir: Path) -> Verdict:
    """Is an absolute-form request-target routed as its path?  The answers
    to the absolute-form GETs against the origin-form ones of the same run
    decide."""
    srv, flags = _start_first(row, outdir, "b20", (HORSE + row.flags, row.flags))
    try:
        base = f"http://{srv.address}:{srv.port}"
        got = {path: (b20_probe(srv.address, srv.port, path),
                      b20_probe(srv.address, srv.port, base + path)) for path in B20_PATHS}
    finally:
        srv.stop()
    fig = "; ".join(f"GET {path} {_b20_said(ctl)}, GET http://host:port{path} {_b20_said(ab)}"
                    for path, (ctl, ab) in got.items())
    data = {"flags": flags, "probes": {path: {"origin-form": ctl, "absolute-form": ab}
                                       for path, (ctl, ab) in got.items()}}
    pairs = [(ctl, ab) for ctl, ab in got.values()
             if ctl["responses"] == 1 and ctl["status"] == "200"]
    data["judged"] = [ctl["target"] for ctl, _ in pairs]
    if B20_PATHS[0] not in data["judged"] or any(ab["responses"] != 1 for _, ab in pairs):
        return Verdict("inconclusive", fig, data)
    same = [(ab["status"], ab["body"]) == (ctl["status"], ctl["body"]) for ctl, ab in pairs]
    if not any(same):
        return Verdict("reproduced", fig, data)
    if all(same):
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


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


def can_capture() -> str | None:
    """None when captures can run, else the reason they cannot."""
    if os.geteuid() != 0:
        return "capture needs root (tcpdump, ip netns)"
    for tool in ("tcpdump", "ip"):
        if not shutil.which(tool):
            return f"capture needs {tool}"
    return None


# Responses per capture, and how many of them must be decided (not ACKed at
# once) for a verdict: response 1 usually rides on a quick ACK.
CAPTURE_REQUESTS, CAPTURE_DECIDED = 8, 5


def run_capture(row: Row, out: Path, veth: bool) -> subprocess.CompletedProcess:
    """One captures/capture.sh run of the seq scenario into out."""
    argv = [str(TOP / "captures" / "capture.sh"), "--scenario", "seq",
            "--probe-args", f"-n {CAPTURE_REQUESTS}", "--no-strace", "--out", str(out)]
    if row.real or SERVER_BUILD != BUILD:
        # capture.sh's --variant is build/<variant>: a clone row of another
        # build (KIT_SERVER_BUILD) names its binary, as a real row does.
        # Port 0: the server reports the port it bound (a port picked ahead
        # can be taken meanwhile by a client's ephemeral port: B8 opens
        # thousands of them beside this run).
        cmd = " ".join([*row.wrap, str(row.binary), "--port", "{port}",
                        "--address", "{address}", *HORSE, *row.flags])
        argv += ["--server", cmd, "--port", "0"]
    else:
        argv += ["--variant", row.variant]
        if row.flags:
            argv += ["--server-args", " ".join(row.flags)]
    if veth:
        argv.insert(1, "--veth")
    env = dict(os.environ, **(row.env or {}))
    if row.platform == "win64":
        env["CAP_READY_TRIES"] = "1800"   # Wine's start-up: up to 90 s on a loaded machine
    if row.platform == "win64" and veth:
        # The Wine server makes the sockets: it must start inside the
        # namespace, so this run gets a private prefix.
        with WINE_PRIVATE.lease() as p:
            env["WINEPREFIX"] = str(p)
            return subprocess.run(argv, capture_output=True, text=True, timeout=240, env=env)
    return subprocess.run(argv, capture_output=True, text=True, timeout=180, env=env)


def wire_missed(out: Path) -> str | None:
    """Why the capture in out is incomplete (the wire shows fewer responses
    than the probe received: the kernel dropped packets before tcpdump read
    them), or None."""
    try:
        got = json.loads((out / "probe.json").read_text())["responses"]
        seen = json.loads((out / "pcap.json").read_text())["responses"]
    except (OSError, ValueError, KeyError):
        return None
    return f"the wire showed {seen} of the {got} responses the probe received" if seen < got else None


def one_capture(row: Row, out: Path, veth: bool) -> tuple[dict | None, str | None, str]:
    """One capture into out, made once more if it lost packets (the first
    is kept beside it): (pcap.json, what the first one missed, the log);
    None for a skipped capture."""
    r = run_capture(row, out, veth)
    missed = r.returncode == 0 and wire_missed(out)
    if missed:
        shutil.rmtree(out.with_name(out.name + "-incomplete"), ignore_errors=True)
        out.rename(out.with_name(out.name + "-incomplete"))
        r = run_capture(row, out, veth)
    log = r.stdout + r.stderr
    if r.returncode == 4:
        return None, None, log
    if r.returncode != 0:   # the tool failed: an error (retried), not a figure
        raise KitError(f"captures/capture.sh exited {r.returncode}: "
                       f"{(r.stderr.strip() or r.stdout.strip())[-300:]}")
    return json.loads((out / "pcap.json").read_text()), missed or None, log


# A capture decides too few responses when most were ACKed at once (a
# loaded machine descheduled the server between its two writes, so the
# client's quick ACK came first), and it is mixed when a server with Nagle
# off was descheduled between them for a whole delayed-ACK period: its body
# then leaves just after that ACK, as if held.  The converse cannot happen
# (with Nagle on, a small body never leaves before the ACK of the header
# segment), so a mixed capture says nothing either way.  Such captures are
# made again, up to this many of the same server: the unmixed ones are
# pooled, response by response, until CAPTURE_DECIDED are decided.
CAPTURE_TRIES = 3


CAPTURE_CLASSES = ("held-until-ack", "coalesced", "sent-before-ack")   # the decided ones


def capture_mixed(cls: dict) -> bool:
    return 0 < cls["held-until-ack"] < sum(cls[k] for k in CAPTURE_CLASSES)


def measure_capture(row: Row, outdir: Path, veth: bool) -> Verdict:
    """B3 on the wire: where each body segment left relative to the
    client's ACK of its header segment (captures/capture.sh + pcap-analyse).
    A capture that lost packets says nothing about the server: it is made
    once more (the first one is kept beside it) and the figure says so.
    One that decides too few responses, or is mixed, is followed by more
    (CAPTURE_TRIES), and the figure says what each one showed."""
    where = "veth" if veth else "lo"
    cls = {k: 0 for k in CAPTURE_CLASSES}
    pcs, missed_all, logs, shown = [], [], [], []
    complete = True
    while len(pcs) < CAPTURE_TRIES:
        n = len(pcs)
        out = outdir / (f"capture-{where}" + (f"-{n + 1}" if n else ""))
        pc, missed, log = one_capture(row, out, veth)
        logs.append(log)
        (outdir / f"capture-{where}.log").write_text("\n".join(logs))
        if pc is None:
            return Verdict("n/a", f"capture skipped: {log.strip()[-200:]}")
        pcs.append(pc)
        if missed:
            missed_all.append(f"capture {n + 1}: {missed}")
        c = pc["classes"]
        # A response the client ACKed at once (quick-ACK mode at the start
        # of a connection, or a descheduled server whose second write came
        # late) cannot show a wait for the delayed ACK either way: it is
        # undecided.  The rest must agree, and there must be enough of them.
        shown.append(f"held {c['held-until-ack']}, coalesced {c['coalesced']}, "
                     f"sent-before-ACK {c['sent-before-ack']}"
                     + (" (mixed: set aside)" if capture_mixed(c) else ""))
        complete = complete and pc["responses"] == CAPTURE_REQUESTS
        if not complete:
            break
        if not capture_mixed(c):
            for k in cls:
                cls[k] += c[k]
        if sum(cls.values()) >= CAPTURE_DECIDED or capture_mixed(cls):
            break
    decided = sum(cls.values())
    responses = sum(p["responses"] for p in pcs)
    data = {"classes": cls, "responses": responses, "requests": sum(p["requests"] for p in pcs),
            "ack_delay_us": pcs[0]["ack_delay_us"], "where": where, "decided": decided,
            "captures": len(pcs)}
    fig = (f"{where}: of {responses} responses, held-until-ACK "
           f"{cls['held-until-ack']}, coalesced {cls['coalesced']}, "
           f"sent-before-ACK {cls['sent-before-ack']}, undecided or set aside "
           f"{responses - decided}; header->ACK p50 {pcs[0]['ack_delay_us']['p50']} us")
    if len(pcs) > 1:
        data["per_capture"] = shown
        fig += (f" ({len(pcs)} captures of {CAPTURE_REQUESTS}, too few decided or mixed: "
                + "; ".join(shown) + ")")
    if missed_all:
        data["first_capture_incomplete"] = "; ".join(missed_all)
        fig += f" (captured again: in the first, {'; '.join(missed_all)})"
    if not complete:
        fig += (f" (capture {len(pcs)}: {pcs[-1]['responses']} of {CAPTURE_REQUESTS} "
                f"responses on the wire: {shown[-1]})")
    if not complete or decided < CAPTURE_DECIDED:
        return Verdict("inconclusive", fig, data)
    if cls["held-until-ack"] == decided:
        return Verdict("reproduced", fig, data)
    if cls["held-until-ack"] == 0:
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


# Every measure, by column.  HEAVY ones load the machine (1,100 threads, a
# CPU-bound load): the matrix runs them one at a time.
MEASURES = {
    "B1": lambda r, o, st: measure_b1(r, o, st),
    "B2": lambda r, o, st: measure_b2(r, o),
    "B3": lambda r, o, st: measure_b3(r, o, st),
    "B4": lambda r, o, st: measure_b4(r, o),
    "B5": lambda r, o, st: measure_b5(r, o),
    "B6": lambda r, o, st: measure_b6(r, o),
    "B7": lambda r, o, st: measure_b7(r, o),
    "B8": lambda r, o, st: measure_b8(r, o),
    "B9": lambda r, o, st: measure_b9(r, o),
    "B9.polled": lambda r, o, st: measure_b9(r, o),
    "B9.pool": lambda r, o, st: measure_b9(r, o, B9_POOL),
    "B10": lambda r, o, st: measure_b10(r, o),
    "B11": lambda r, o, st: measure_b11(r, o),
    "B12": lambda r, o, st: measure_b12(r, o),
    "B13": lambda r, o, st: measure_b13(r, o),
    "B14": lambda r, o, st: measure_b14(r, o),
    "B15": lambda r, o, st: measure_b15(r, o),
    "B16": lambda r, o, st: measure_b16(r, o),
    "B17": lambda r, o, st: measure_b17(r, o),
    "B18": lambda r, o, st: measure_b18(r, o),
    "B19": lambda r, o, st: measure_b19(r, o),
    "B20": lambda r, o, st: measure_b20(r, o),
    "B21": lambda r, o, st: measure_b21(r, o),
    # B8's symptoms apart (make bisect judges each, SYMPTOMS): the matrix
    # column B8 is the first.
    "B8.first": lambda r, o, st: measure_b8(r, o),
    "B8.next": lambda r, o, st: measure_b8_next(r, o),
    "B8.polled": lambda r, o, st: measure_b8(r, o, B8_POLLED),
    "B2.thread": lambda r, o, st: measure_b2(r, o),
    "B2.polled": lambda r, o, st: measure_b2(r, o, ("--thread-mode", "polled")),
    # AcceptIdleTimeout 100: pool mode re-checks a connection only from the
    # accept-idle callback, which is never called with the default 0 (B6).
    "B2.pool": lambda r, o, st: measure_b2(r, o, ("--thread-mode", "pool", "--accept-idle-timeout", "100")),
}
# B8 in thread mode polled (pool mode cannot be measured so: its workers
# are all taken by the idle connections and the accept queue never empties).
B8_POLLED = ("--thread-mode", "polled")
# Defects with more than one symptom, each with its own history: name, the
# measure (a MEASURES key), what it is.  The first is what the matrix
# column judges.  A defect not here has one symptom, its own column.
SYMPTOMS = {
    "B2": (("thread", "B2.thread", "thread mode: TFPHTTPConnection.RequestPending asks the socket "
            "(Socket.CanRead), never FBuffer"),
           ("polled", "B2.polled", "thread mode polled: TFPPolledConnectionHandler.CheckConnection "
            "asks the socket (Socket.CanRead(0)), never FBuffer"),
           ("pool", "B2.pool", "thread mode pool: TFPPooledConnectionHandler.CheckRequest asks the "
            "socket (Socket.CanRead(0)), never FBuffer")),
    "B8": (("first", "B8.first", "a connection's first request is not read: with RequestReadTimeout "
            "above 0 the read waits in Socket.CanRead (select), which never sees a descriptor "
            "above 1023"),
           ("next", "B8.next", "on a kept-alive connection the next request is never read: "
            "TFPHTTPConnection.RequestPending asks Socket.CanRead (select)"),
           ("polled", "B8.polled", "in thread mode polled a connection is never read: "
            "TFPPolledConnectionHandler.CheckConnection asks Socket.CanRead(0) (select)")),
    "B9": (("polled", "B9.polled", "thread mode polled: once SetIdle replaced DoAcceptIdle, no "
            "request after a connection's first is read (TFPPolledConnectionHandler's checks run "
            "from CheckRequests)"),
           ("pool", "B9.pool", "thread mode pool with an accept-idle tick: once SetIdle replaced "
            "DoAcceptIdle, no kept-alive connection is scheduled again "
            "(TFPPooledConnectionHandler.CheckRequests)")),
}


def symptoms(defect: str) -> list[tuple[str, str, str]]:
    """(symptom, measure, text) for each of defect's symptoms; one
    ("", defect, "") for a defect with a single symptom."""
    return list(SYMPTOMS.get(defect, (("", defect, ""),)))
HEAVY = {"B7", "B8"}
CAPTURES = {"wire-lo": False, "wire-veth": True}   # column -> over veth


# What a run under Wine cannot show (a figure would be Wine's, not Windows').
WINE_NA = {
    "B8": "not measured under Wine: Winsock's select() takes a list of sockets, not a "
          "descriptor bitmap, and under Wine each of 1,100 connections costs a thread "
          "start in the Wine server, so the count would be Wine's, not Windows'",
    "B15": "not measured under Wine: the measure's stop is SIGTERM, and under Wine it ends "
           "the Windows program without running any of its code (no 'stop:' line: Free is "
           "never reached; repro/fpc/wine-server.sh then bounds the stop at 1.5 s anyway); "
           "Windows has no SIGTERM, and the win64 build installs no console control handler",
}


# A measure that raised (a server that never said where it listens, a tool
# that failed, output that would not parse) measured nothing: it is made
# once more on a fresh server, and a second failure is its verdict, which
# no expected verdict equals.  Its errors go in data["errors"], never in a
# figure.  A measure that ran and could not decide (inconclusive: a control
# unanswered, a first request not answered in time on a loaded machine,
# seen under Wine beside every build) is made once more on a fresh server
# too, the rule of repro/fpc/min/check.sh: the second decides, and its
# figure says what the first gave.  A verdict is never retried.
MEASURE_FAILED = "failed"


def retried(run, outdir: Path, tag: str) -> Verdict:
    """run(outdir); if it raised or was inconclusive, run(outdir/retry-TAG)
    (the first attempt's evidence stays); two failures -> MEASURE_FAILED."""
    errors, first = [], None
    for d in (outdir, outdir / f"retry-{tag}"):
        d.mkdir(parents=True, exist_ok=True)
        try:
            v = run(d)
        except Unsupported as e:
            return Verdict("n/a", f"not supported by this server: {e}")
        except Exception as e:  # noqa: BLE001 - any error is a failed attempt
            errors.append(f"{type(e).__name__}: " + " ".join(str(e).split()))
            continue
        if v.state == "inconclusive" and first is None and not errors:
            first = v
            continue
        if errors:
            v.data["first_attempt_error"] = errors[0]
        if first is not None:
            v.figure += f" (second run; the first: inconclusive, {first.figure})"
            v.data["first_run"] = first.figure
        return v
    if first is not None:   # inconclusive, then a failure: the inconclusive stands
        first.data["retry_error"] = errors[0]
        return first
    return Verdict(MEASURE_FAILED, "the measure failed twice", {"errors": errors})


def measure(name: str, row: Row, outdir: Path, use_strace: bool) -> Verdict:
    outdir.mkdir(parents=True, exist_ok=True)
    if row.platform == "win64" and name.split(".")[0] in WINE_NA:
        return Verdict("n/a", WINE_NA[name.split(".")[0]])
    return retried(lambda d: MEASURES[name](row, d, use_strace), outdir, name)


# A row's measures side by side, as the matrix runs them: under TSan the
# stock row took 136 s one after another, nearly all of it waiting (B15's
# watch, B7's, B9's and B10's deadlines, each x SLOW).  The heavy ones
# (HEAVY) one at a time, beside the others.
ROW_JOBS = int(os.environ.get("KIT_ROW_JOBS", "6"))


def measure_row(row: Row, outdir: Path, use_strace: bool) -> dict[str, Verdict]:
    with ThreadPoolExecutor(1) as heavy, ThreadPoolExecutor(ROW_JOBS) as light:
        futs = {d: (heavy if d in HEAVY else light).submit(measure, d, row, outdir, use_strace)
                for d in DEFECTS}
        return {d: futs[d].result() for d in DEFECTS}
