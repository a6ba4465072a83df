"""kit.py - run a server, drive it with the probe, collect evidence.

What every defect's measure shares (servers, rows, verdicts, the probe, the
retry of a measure); the measures themselves are one module per defect in
repro/defects/, found by name by its registry (`import defects`, which this
module puts on the path).  Shared by `make repro` (repro/harness/matrix.py),
the integration tests and the report generator.

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
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
BUILD = TOP / "build"
TRUNK_FPC = BUILD / "fpc-trunk" / "bin" / "fpc"   # scripts/fpc-trunk.sh's wrapper
PROBE = BUILD / "probe"
STRACE_ANALYSE = BUILD / "strace-analyse"
PCAP_ANALYSE = BUILD / "pcap-analyse"

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.append(str(TOP / "repro"))   # `import defects`: the registry of measures
import httpwire  # noqa: E402
import patchset  # noqa: E402
import tcpdiag  # noqa: E402
import wineprefix  # noqa: E402

# Which fixes exist and what each fixes: read from the patches (patchset.py).
FIXES = patchset.fixes()
VARIANTS = patchset.variants()
PAIRS = patchset.pairs()

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


# Processes started and not stopped yet (servers, proxies: anything with a
# stop()), stopped when the kit's process exits: a measure that raises
# between a start and its stop (B7's hung server, which ignores SIGTERM,
# once) must not leave one running.
_RUNNING: dict[int, object] = {}
_RUNNING_LOCK = threading.Lock()


def started_process(obj) -> None:
    """obj runs until its stop(): stopped at exit if nobody did."""
    with _RUNNING_LOCK:
        _RUNNING[id(obj)] = obj


def stopped_process(obj) -> None:
    with _RUNNING_LOCK:
        _RUNNING.pop(id(obj), None)


def _stop_left() -> None:
    with _RUNNING_LOCK:
        left = list(_RUNNING.values())
    for obj in left:
        obj.stop()


atexit.register(_stop_left)


def renice_threads(pid: int, nice: int, policy: int | None = None) -> None:
    """Every thread of process pid to `nice`, and to `policy` if given
    (Linux keeps both per thread); the nice value first, for the threads a
    real-time one starts with a policy of their own."""
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
        started_process(self)
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
        renice_threads(self._server_pid(), nice, policy)

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
        stopped_process(self)
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


POOL = ["--thread-mode", "pool", "--keep-connections", "--keep-connection-timeout", "15000"]
# The B3 stall is taken out of pool-mode latency comparisons (TCP_NODELAY in
# the socket handler), so what is left is how a request is scheduled.
NODELAY = ["--socket-handler", "nodelay"]


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
