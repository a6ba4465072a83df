#!/usr/bin/env python3
"""proxies.py - the real trunk behind the reverse proxies users deploy.

nginx, haproxy and Apache httpd (mod_proxy_http) from Debian's packages,
each started here on loopback (127.0.0.x, a free port) from its config in
repro/proxy/, upstream keep-alive on as its own documentation recommends,
in the foreground under the kit's control, its logs and pid in a
directory of the measure's evidence; stopped by PID (never by name).

Rows (matrix.py registers them: rows()): the real trunk, stock, each fix
that changes what a proxy sees, and all, behind each proxy.  A row
measures through the proxy the defects a proxy can carry:
  B3   requests 2..30 back to back on one client connection through the
       proxy (its reused upstream connection) against requests after a
       300 ms idle gap on the same path (the matrix's idle-gap control);
       the kit's probe as the client; a count of stalled requests decides
  B4   the server's unannounced close (KeepConnections off) with 8
       clients at once, GET and POST in turn: how many requests the proxy
       sent again (its own log) and how many the client lost (502, or
       closed unanswered); beside it, as figures, one client's requests
       around a 100 ms keep-alive time-out
  B10  Expect: 100-continue: the proxy answers it itself, or passes it on
  B12, B17  the proxy buffers the body (the head) before any of it goes
       upstream (absorbed), or passes the server what it gets
  B11  each ambiguous framing of the matrix and of the conformance table,
       then a request from another client on the proxy's pooled upstream
       connection (what it shows is confidential: report/confidential/)
  B14  a HEAD, then another client's request on the pooled connection
  B16  requests the server rejects: the proxy's own 400, the server's
       status relayed, or its unanswered close come back as a 502
  B19  the 503 at MaxLiveConnectionCount: framed by the proxy, or
       delimited by the close as the server sent it
  B2, B5, B13, B18, B20  pipelined GETs, a POST and a GET in one write,
       HTTP/1.0 keep-alive, an empty line before a request, a target in
       absolute form: taken apart or rewritten by the proxy (absorbed),
       or passed on
Absorbed, passed on or not, is decided from what the server (or a
recording stand-in upstream) received, never assumed; the other columns
are n/a with the reason.  A fix row measures the columns of the defects
it fixes; its others are the stock row's.

Usage: repro/harness/proxies.py [--list] [--try PROXY [VARIANT]]
  (--list: the rows and their expectations; --try: one row's columns now)
"""
from __future__ import annotations

import json
import os
from contextlib import ExitStack, contextmanager
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from types import SimpleNamespace
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kit, defects  # noqa: E401,E402  (defects: the registry, repro/defects/)
import httpwire  # noqa: E402
import patchset  # noqa: E402

CONF = kit.TOP / "repro" / "proxy"
R, F, NA = "reproduced", "fixed", "n/a"
B11, B12, B14, B16, B19 = (defects.module(d) for d in ("B11", "B12", "B14", "B16", "B19"))


@dataclass
class Proxy:
    name: str          # in the row names
    package: str       # Debian's
    exe: str
    conf: str          # template in repro/proxy/
    version_argv: list[str]
    version_re: str

    def found(self) -> str | None:
        return shutil.which(self.exe) or next(
            (str(p) for p in (Path("/usr/sbin") / self.exe,) if p.exists()), None)

    def version(self) -> str:
        exe = self.found()
        if not exe:
            return "missing"
        out = subprocess.run([exe, *self.version_argv], capture_output=True, text=True)
        m = re.search(self.version_re, out.stdout + out.stderr)
        return m.group(1) if m else "unknown"

    def argv(self, conf: Path) -> list[str]:
        exe = self.found() or self.exe
        if self.name == "nginx":
            # -e: the error log before the config is read (else the packaged
            # /var/log/nginx/error.log, which a user who is not root cannot open)
            return [exe, "-p", str(conf.parent), "-e", str(conf.parent / "error.log"),
                    "-c", str(conf)]
        if self.name == "haproxy":
            return [exe, "-db", "-f", str(conf)]
        return [exe, "-f", str(conf), "-DFOREGROUND"]


PROXIES = {
    "nginx": Proxy("nginx", "nginx-light", "nginx", "nginx.conf", ["-v"], r"nginx/(\S+)"),
    "haproxy": Proxy("haproxy", "haproxy", "haproxy", "haproxy.cfg", ["-v"],
                     r"HA-?Proxy version (\S+)"),
    "apache": Proxy("apache", "apache2", "apache2", "apache.conf", ["-v"], r"Apache/(\S+)"),
}


def versions() -> dict[str, str]:
    return {n: p.version() for n, p in PROXIES.items()}


def free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


_ADDR_LOCK = threading.Lock()
_ADDR_NEXT = [2]


def loopback_address() -> str:
    """127.0.0.2 .. 127.0.0.250 in turn: each proxy on an address of its
    own, so that a port taken between free_port and the proxy's bind is
    rare; a start that fails to bind is made again on another."""
    with _ADDR_LOCK:
        n = _ADDR_NEXT[0]
        _ADDR_NEXT[0] = 2 + (n - 1) % 249
    return f"127.0.0.{n}"


class ProxyError(kit.KitError):
    pass


class Running:
    """One proxy process in front of one upstream (address, port)."""

    START_TRIES = 3

    def __init__(self, proxy: Proxy, upstream: tuple[str, int], outdir: Path, tag: str):
        self.proxy, self.upstream = proxy, upstream
        self.dir = outdir.resolve() / f"{tag}.{proxy.name}"   # absolute: a proxy reads paths from its own root
        self.proc: subprocess.Popen | None = None
        self.address, self.port = "", 0

    def _write_conf(self) -> Path:
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True)
        os.chmod(self.dir, 0o755)   # nginx's and Apache's children run as another user under root
        text = (CONF / self.proxy.conf).read_text()
        runas = "User www-data\nGroup www-data" if os.geteuid() == 0 else ""
        for k, v in {"DIR": str(self.dir), "LISTEN": f"{self.address}:{self.port}",
                     "UPSTREAM": f"{self.upstream[0]}:{self.upstream[1]}",
                     "RUNAS": runas}.items():
            text = text.replace(f"@{k}@", v)
        conf = self.dir / self.proxy.conf
        conf.write_text(text)
        return conf

    def start(self) -> "Running":
        errors = []
        for _ in range(self.START_TRIES):
            self.address = loopback_address()
            self.port = free_port(self.address)
            conf = self._write_conf()
            out = open(self.dir / "stdout.log", "w")
            try:
                self.proc = subprocess.Popen(self.proxy.argv(conf), stdout=out,
                                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                             start_new_session=True)
            finally:
                out.close()
            if self._ready(30.0):
                kit.started_process(self)   # stopped at exit if a measure raised
                return self
            errors.append(self.stop_text())
        raise ProxyError(f"{self.proxy.name} did not start: " + " | ".join(errors))

    def _ready(self, deadline_s: float) -> bool:
        """Polls: accepting on its port, its process still running."""
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                return False
            try:
                with socket.create_connection((self.address, self.port), timeout=1):
                    return True
            except OSError:
                pass
            time.sleep(0.02)   # a poll's pace, not a synchronisation
        return False

    @contextmanager
    def measuring(self):
        """Every thread of the proxy's processes at the priority the kit
        gives a server while a client measures it (kit.Server.measuring),
        back after: a loaded machine's scheduling out of the latencies."""
        rt = kit.may_measure_rt()
        self._renice(kit.MEASURE_NICE, os.SCHED_FIFO if rt else None)
        try:
            yield self
        finally:
            self._renice(0, os.SCHED_OTHER if rt else None)

    def _renice(self, nice: int, policy: int | None) -> None:
        for pid in kit.tree_pids(self.proc.pid) if self.proc else []:
            kit.renice_threads(pid, nice, policy)

    def stop(self) -> None:
        """SIGTERM to the process we started and its group (its workers);
        KILL after STOP_DEADLINE_S."""
        p = self.proc
        if p is None:
            return
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(kit.STOP_DEADLINE_S)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        self.proc = None
        kit.stopped_process(self)
        # the workers of the group, if any outlived their master
        kit._poll(lambda: not _group_alive(p.pid), kit.STOP_DEADLINE_S)

    def stop_text(self) -> str:
        self.stop()
        return " ".join(self.log("stdout.log").split()[-30:] + self.log("error.log").split()[-30:])

    def log(self, name: str) -> str:
        try:
            return (self.dir / name).read_text(errors="replace")
        except OSError:
            return ""

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


@dataclass
class Front:
    """A server of the row's (real trunk, its flags) behind a fresh proxy."""
    row: kit.Row
    proxy: Proxy
    outdir: Path
    tag: str
    flags: list[str]
    srv: kit.Server | None = None
    run: Running | None = None

    def __enter__(self) -> "Front":
        self.srv = kit._server(self.row, self.outdir, self.tag, self.flags).start()
        try:
            self.run = Running(self.proxy, (self.srv.address, self.srv.port),
                               self.outdir, self.tag).start()
        except BaseException:
            self.srv.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        # The server first: a proxy child still waiting on it (a request
        # the server never answered) is then free, and the proxy stops at
        # once instead of at its stop deadline.
        self.srv.stop()
        self.run.stop()

    @property
    def at(self) -> tuple[str, int]:
        return self.run.address, self.run.port


def _ask(at: tuple[str, int], req: bytes, limit_s: float = 5.0) -> tuple[list[dict], str]:
    """One request on a fresh client connection: its responses until the
    first complete one (or EOF, RST, the bound), and how the read ended."""
    with socket.create_connection(at, timeout=10) as s:
        s.sendall(req)
        buf, end = httpwire.read_responses_end(s, 1, limit_s * kit.SLOW)
    return httpwire.parse_responses(buf), end


def _status(resps: list[dict], end: str) -> str:
    return resps[0]["status"][:3] if resps else end


def served(log: str) -> list[str]:
    """'METHOD PATH STATUS' of every request the server's log says it
    served, in order."""
    return [f"{m.group(1)} {m.group(2)} {m.group(3)}" for m in
            re.finditer(r"\bconn=\d+ req=\d+ .*?method=(\S*) path=(\S*) status=(\d+)", log)]


# ---- B3 ---------------------------------------------------------------

B3_N = 30
# The control (the matrix's idle-gap control, B3's b3_compare): requests
# on the same client connection, through the same proxy and its same
# upstream connection, each after a B3_GAP_MS idle gap, after which the
# proxy's end acknowledges at once (quick ACK): no stall, whatever the
# server.  A fresh direct connection was no control: its first response
# can wait for a delayed ACK too (a loaded run: 9-58 ms, stock behind
# each proxy 0.8-5x).
B3_GAP_MS, B3_GAPS = 300, 7


def measure_b3(row: kit.Row, proxy: Proxy, outdir: Path) -> kit.Verdict:
    """Requests 2..B3_N back to back on one client connection through the
    proxy (which sends them on its pooled upstream connection), then
    B3_GAPS after idle gaps, same proxy, same upstream connection, same
    run; the kit's probe as the client (a process of its own, as a
    measuring client: no thread of the matrix's Python in the latency),
    the server and the proxy at the kit's measuring priority.
    Stall: 3/4 of the back-to-back requests took B3_STALL_RATIO times the
    fastest idle-gap request or more, and their median is above the
    idle-gap median (a stall adds a delayed-ACK period to each, tens of
    times a loopback request).  Clean: their median within
    kit.B3_CLEAN_RATIO of the idle-gap median.  Else the run says nothing
    (kit.retried makes it once more)."""
    with Front(row, proxy, outdir, "b3", kit.HORSE) as fr, ExitStack() as prio:
        prio.enter_context(fr.srv.measuring())
        prio.enter_context(fr.run.measuring())
        at = SimpleNamespace(address=fr.run.address, port=fr.run.port, nice=0)
        seq = kit.probe(at, "seq", "-n", str(B3_N), out=outdir / "b3-seq.probe.json", measure=True)
        gap = kit.probe(at, "idle-gap", "-n", str(B3_GAPS + 1), "--gap-ms", str(B3_GAP_MS),
                        out=outdir / "b3-idle-gap.probe.json", measure=True)
    if seq["responses"] != B3_N or gap["responses"] != B3_GAPS + 1:
        raise kit.KitError(f"through {proxy.name}: {seq['responses']} of {B3_N} and "
                           f"{gap['responses']} of {B3_GAPS + 1} answered")
    conns: dict[int, int] = {}
    for c, n in kit.served_requests(fr.srv.log):
        conns[c] = max(n, conns.get(c, 0))
    upstream_most = max(conns.values(), default=0)
    proxied = [x for x in seq["latency_us"][1:] if x is not None]
    gaps = [x for x in gap["latency_us"][1:] if x is not None]
    p50, g50, gmin = seq["stats_us"]["rest"]["p50"], gap["stats_us"]["rest"]["p50"], min(gaps)
    slow = sum(1 for x in proxied if x >= kit.B3_STALL_RATIO * gmin)
    data = {"proxied_p50_us": round(p50), "idle_gap_p50_us": round(g50),
            "idle_gap_min_us": round(gmin), "ratio_p50": p50 / g50, "stalled": slow,
            "reused_requests": len(proxied),
            "upstream_most_requests_on_one_connection": upstream_most}
    fig = (f"requests 2..{B3_N} through {proxy.name} {p50 / 1000:.2f} ms (median), "
           f"{p50 / g50:.1f}x the {B3_GAP_MS} ms idle-gap median {g50 / 1000:.2f} ms; {slow} of "
           f"{len(proxied)} took {kit.B3_STALL_RATIO:g}x the fastest idle-gap request "
           f"({gmin / 1000:.2f} ms) or more; the server's busiest connection (the proxy's) "
           f"served {upstream_most}")
    if upstream_most < B3_N + B3_GAPS + 1:
        return kit.Verdict("inconclusive", fig + ": upstream reuse not proven", data)
    if 4 * slow >= 3 * len(proxied) and p50 > g50:
        return kit.Verdict(R, fig, data)
    if p50 <= kit.B3_CLEAN_RATIO * g50:
        return kit.Verdict(F, fig, data)
    return kit.Verdict("inconclusive", fig, data)


# ---- B4 ---------------------------------------------------------------

# The server's own B4 setting (KeepConnections off: it closes after every
# response, unannounced), back to back; then keep-alive on with a short
# time-out and the next request sent around it.
B4_ROUNDS = 2
B4_TIMEOUT_MS = 100
B4_GAPS_MS = (98, 99, 99.5, 100, 100.5, 101, 102)
B4_KA = ["--thread-mode", "thread", "--keep-connections",
         "--keep-connection-timeout", str(B4_TIMEOUT_MS)]
POST = b"POST /echo HTTP/1.1\r\nHost: kit\r\nContent-Length: 5\r\n\r\nhello"


def _proxy_retries(proxy: Proxy, run: Running) -> int:
    """Upstream attempts the proxy made again, from its own logs: nginx's
    $upstream_status lists each attempt, haproxy's %rc counts retries,
    Apache logs each failed backend read (AH01102) or send (AH01084)."""
    if proxy.name == "nginx":
        return sum(line.split("upstream=", 1)[1].count(",") for line in run.log("access.log").splitlines()
                   if "upstream=" in line)
    if proxy.name == "haproxy":
        return sum(int(m.group(1)) for m in re.finditer(r"retries=\+?(\d+)", run.log("stdout.log")))
    return len(re.findall(r"AH01102|AH01084|AH00957", run.log("error.log")))


def b4_run(row: kit.Row, proxy: Proxy, outdir: Path, tag: str, flags: list[str],
           gaps: tuple) -> tuple[dict[str, dict[str, int]], int]:
    """A GET, then (after gap ms) a GET or a POST on the same client
    connection, on a fresh client connection each time: the proxy sends
    the second on its pooled upstream connection.  The client's statuses
    by method, and the upstream attempts the proxy made again."""
    counts: dict[str, dict[str, int]] = {"GET": {}, "POST": {}}
    with Front(row, proxy, outdir, tag, flags) as fr:
        for _ in range(B4_ROUNDS):
            for gap in gaps:
                for method, req in (("GET", httpwire.get("/ping")), ("POST", POST)):
                    with socket.create_connection(fr.at, timeout=10) as s:
                        s.sendall(httpwire.get("/ping"))
                        httpwire.read_responses(s, 1, 5.0 * kit.SLOW)
                        if gap:
                            time.sleep(gap / 1000)   # the gap measured around, not a wait for readiness
                        s.sendall(req)
                        buf, end = httpwire.read_responses_end(s, 1, 5.0 * kit.SLOW)
                    st = _status(httpwire.parse_responses(buf), end)
                    counts[method][st] = counts[method].get(st, 0) + 1
    return counts, _proxy_retries(proxy, fr.run)


def _b4_said(counts: dict, retries: int, proxy: Proxy) -> str:
    bad = {m: sum(n for s, n in c.items() if s != "200") for m, c in counts.items()}
    return (f"{sum(counts['GET'].values())} GET, {sum(counts['POST'].values())} POST: "
            f"{proxy.name} retried {retries}, not 200 for the client GET {bad['GET']}, "
            f"POST {bad['POST']}")


B4_CLIENTS, B4_REQUESTS = 8, 60


def b4_clients(at: tuple[str, int]) -> dict[str, dict[str, int]]:
    """B4_CLIENTS clients at once, each B4_REQUESTS requests back to back,
    GET and POST in turn, on one client connection (a new one after the
    proxy closed it).  Their statuses by method ('EOF': the proxy closed
    the client connection with no answer).  Run in a process of its own
    (b4_concurrent): in the matrix's, its threads wait on the other
    measures' for the interpreter, and a proxy then sees each close
    before the next request comes (0 lost behind haproxy and Apache in
    one matrix run, 4-37 of 160 alone)."""
    counts: dict[str, dict[str, int]] = {"GET": {}, "POST": {}}
    lock = threading.Lock()
    errors: list[str] = []

    def client() -> None:
        s = None
        try:
            for i in range(B4_REQUESTS):
                method = "GET" if i % 2 == 0 else "POST"
                if s is None:
                    s = socket.create_connection(at, timeout=10)
                s.sendall(httpwire.get("/ping") if method == "GET" else POST)
                buf, end = httpwire.read_responses_end(s, 1, 5.0 * kit.SLOW)
                st = _status(httpwire.parse_responses(buf), end)
                with lock:
                    counts[method][st] = counts[method].get(st, 0) + 1
                if end != "enough":
                    s.close()
                    s = None
        except OSError as e:
            errors.append(f"{type(e).__name__}: {e}")
        finally:
            if s is not None:
                s.close()

    threads = [threading.Thread(target=client) for _ in range(B4_CLIENTS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise kit.KitError("B4 clients: " + "; ".join(errors))
    return counts


def b4_concurrent(row: kit.Row, proxy: Proxy, outdir: Path) -> tuple[dict, int]:
    """The server's B4 setting (KeepConnections off: every response is
    followed by an unannounced close) behind the proxy, b4_clients against
    it: a pooled upstream connection is taken for the next request as soon
    as its response is read, before the server's close has arrived.  The
    clients' statuses, and the upstream attempts the proxy made again."""
    with Front(row, proxy, outdir, "b4", []) as fr:
        r = subprocess.run([*kit.measure_prefix(), sys.executable, __file__, "--b4-clients",
                            fr.run.address, str(fr.run.port)],
                           capture_output=True, text=True, timeout=120 * kit.SLOW)
    if r.returncode != 0:
        raise kit.KitError(f"B4 clients exited {r.returncode}: {r.stderr.strip()[-300:]}")
    (outdir / "b4-clients.json").write_text(r.stdout)
    return json.loads(r.stdout), _proxy_retries(proxy, fr.run)


B4_ROUNDS = 3   # stock behind Apache once lost none of 480 in a round


def measure_b4(row: kit.Row, proxy: Proxy, outdir: Path) -> kit.Verdict:
    """The verdict: b4_concurrent's counts (a request lost, answered 502
    or not at all, or one the proxy had to send again, is the defect).
    Beside it, figures only: keep-alive on with a B4_TIMEOUT_MS time-out
    and one client's next request sent around it (a race between the
    proxy's send and the server's close that no header can announce)."""
    for rounds in range(1, B4_ROUNDS + 1):   # a round that lost nothing may have missed the race
        off, off_retries = b4_concurrent(row, proxy, outdir)
        failed = sum(n for c in off.values() for s, n in c.items() if s != "200")
        if failed or off_retries:
            break
    ka, ka_retries = b4_run(row, proxy, outdir, "b4-timeout", B4_KA, B4_GAPS_MS)
    data = {"statuses": off, "proxy_retries": off_retries, "clients": B4_CLIENTS, "rounds": rounds,
            "around_timeout": {"statuses": ka, "proxy_retries": ka_retries,
                               "timeout_ms": B4_TIMEOUT_MS, "gaps_ms": list(B4_GAPS_MS)}}
    fig = (f"KeepConnections off, {B4_CLIENTS} clients at once, round {rounds} of at most {B4_ROUNDS}: "
           f"{_b4_said(off, off_retries, proxy)} "
           f"({off}); around a {B4_TIMEOUT_MS} ms keep-alive time-out ({B4_GAPS_MS[0]}-"
           f"{B4_GAPS_MS[-1]} ms gaps, one client): {_b4_said(ka, ka_retries, proxy)}")
    return kit.Verdict(R if failed or off_retries else F, fig, data)


# ---- B10, B12, B17: does the proxy pass it on? --------------------------

class Recorder:
    """A stand-in upstream that answers nothing and records, per
    connection, the bytes the proxy sent it: what reaches a server."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.address, self.port = self.sock.getsockname()
        self.got: list[bytearray] = []
        self.lock = threading.Lock()
        self.stop_r, self.stop_w = os.pipe()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        import select
        conns: dict[socket.socket, bytearray] = {}
        try:
            while True:
                r, _, _ = select.select([self.sock, self.stop_r, *conns], [], [])
                if self.stop_r in r:
                    return
                for s in r:
                    if s is self.sock:
                        c, _ = self.sock.accept()
                        buf = bytearray()
                        with self.lock:
                            self.got.append(buf)
                        conns[c] = buf
                        continue
                    try:
                        chunk = s.recv(65536)
                    except OSError:
                        chunk = b""
                    if not chunk:
                        s.close()
                        del conns[s]
                        continue
                    with self.lock:
                        conns[s].extend(chunk)
        finally:
            for c in conns:
                c.close()

    def received(self) -> bytes:
        with self.lock:
            return b"".join(bytes(b) for b in self.got)

    def close(self) -> None:
        if self.sock.fileno() < 0:
            return   # closed already
        os.write(self.stop_w, b"x")
        self.thread.join()
        self.sock.close()
        os.close(self.stop_r)
        os.close(self.stop_w)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# How long the stand-in waits for what a proxy that passes a request on
# sends at once: a bound on a wait (nginx and Apache start their upstream
# request within a millisecond of the head), never a verdict on speed.
PASS_BOUND_S = 1.0


def _recorded(proxy: Proxy, outdir: Path, tag: str, client) -> tuple[bytes, object]:
    """client(at) against the proxy in front of a Recorder: what the
    upstream received while client ran, and client's result.  The
    stand-in closes its connections before the proxy is stopped (a proxy
    child waiting on it would hold the stop to its deadline)."""
    with Recorder() as rec:
        with Running(proxy, (rec.address, rec.port), outdir, tag) as run:
            try:
                res = client((run.address, run.port), rec)
            finally:
                got = rec.received()
                rec.close()
        return got, res


def _wait_upstream(rec: Recorder, needle: bytes, bound_s: float) -> bool:
    return kit._poll(lambda: needle in rec.received(), bound_s * kit.SLOW)


def measure_b10(row: kit.Row, proxy: Proxy, outdir: Path) -> kit.Verdict:
    """A POST with Expect: 100-continue and its body held back.  In front
    of the stand-in (which never sends 100): a 100 the client gets is the
    proxy's own (absorbed).  Else the server behind decides: the real
    server's 100 within curl's 1 s wait, or none."""
    head = (b"POST /echo HTTP/1.1\r\nHost: kit\r\nContent-Length: 5\r\n"
            b"Expect: 100-continue\r\n\r\n")

    def client(at, rec):
        with socket.create_connection(at, timeout=10) as s:
            s.sendall(head)
            buf, end, _ = httpwire._read(s, PASS_BOUND_S * kit.SLOW,
                                         lambda b: b"\r\n\r\n" in b)
            upstream = _wait_upstream(rec, b"\r\n\r\n", 0.2) if rec else None
            return buf, end, upstream

    got, (buf, end, _) = _recorded(proxy, outdir, "b10-standin", client)
    expect_passed = b"expect:" in got.lower()
    own_100 = buf.startswith(b"HTTP/1.1 100")
    data = {"proxy_sends_100": own_100, "upstream_got_expect": expect_passed,
            "upstream_got_head": b"\r\n\r\n" in got}
    if own_100:
        return kit.Verdict(NA, f"absorbed: {proxy.name} answers Expect: 100-continue itself "
                           f"(100 to the client before the body, from no upstream); the "
                           f"server got {'the' if expect_passed else 'no'} Expect field", data)
    with Front(row, proxy, outdir, "b10", kit.HORSE) as fr:
        buf, end, _ = client(fr.at, None)
    data["server_100"] = buf.startswith(b"HTTP/1.1 100")
    fig = (f"{proxy.name} passes Expect: 100-continue on to the server (the stand-in got it: "
           f"{expect_passed}), and " + ("the server's 100 came through it" if data["server_100"]
                                        else f"no 100 came through it in {PASS_BOUND_S:g} s"))
    return kit.Verdict(F if data["server_100"] else R, fig, data)


def measure_b12(row: kit.Row, proxy: Proxy, outdir: Path) -> kit.Verdict:
    """A head announcing B12.B12_ANNOUNCED bytes and 10 of them: does the
    proxy send the head on before the body is all in (passes the
    allocation to the server) or buffer the body first (absorbed)?
    Passed: the real server behind the proxy, its accessible address
    space before and after (kit.tree_accessible_kib)."""
    head = (f"POST /echo HTTP/1.1\r\nHost: kit\r\nContent-Length: {B12.B12_ANNOUNCED}\r\n\r\n"
            ).encode() + B12.B12_SENT

    def client(at, rec):
        with socket.create_connection(at, timeout=10) as s:
            s.sendall(head)
            return _wait_upstream(rec, b"\r\n\r\n", PASS_BOUND_S)

    got, passed = _recorded(proxy, outdir, "b12-standin", client)
    data = {"upstream_got_head_before_body": passed}
    if not passed:
        return kit.Verdict(NA, f"absorbed: {proxy.name} buffers the body: nothing reached the "
                           f"upstream in {PASS_BOUND_S:g} s after a head announcing "
                           f"{B12.B12_ANNOUNCED >> 20} MiB and {len(B12.B12_SENT)} bytes of it", data)
    with Front(row, proxy, outdir, "b12", kit.HORSE) as fr:
        pid = fr.srv._server_pid()
        with socket.create_connection(fr.at, timeout=10) as s:
            # the proxy's upstream connection and its thread first, then the baseline
            s.sendall(httpwire.get("/ping"))
            httpwire.read_responses(s, 1, 5.0 * kit.SLOW)
            kit._poll(lambda: kit.tree_settled(pid), 2.0 * kit.SLOW)
            before = kit.tree_accessible_kib(pid)
            s.sendall(head)
            kit._poll(lambda: kit.tree_accessible_kib(pid) - before >= (B12.B12_ANNOUNCED >> 10),
                      PASS_BOUND_S * 2 * kit.SLOW)
            grew = kit.tree_accessible_kib(pid) - before
    data["server_grew_kib"] = grew
    share = grew / (B12.B12_ANNOUNCED >> 10)
    fig = (f"{proxy.name} sends the head on before the body: the server's address space grew "
           f"{grew >> 10} MiB for {B12.B12_ANNOUNCED >> 20} MiB announced, "
           f"{len(B12.B12_SENT)} bytes sent ({share:.2f})")
    return kit.Verdict(R if share >= 1 else F if share <= 1 / 16 else "inconclusive", fig, data)


B17_DRIP = b"GET /ping HTTP/1.1\r\nHost: kit\r\nX-Drip: 0123456789\r\n\r\n"
B17_CUT = len(B17_DRIP) - 4   # all but the head's last CRLF CRLF


def measure_b17(row: kit.Row, proxy: Proxy, outdir: Path) -> kit.Verdict:
    """A request head sent all but its end, then held: does any of it
    reach the upstream before the head is complete?  A proxy that parses
    the head before it connects absorbs the drip (its own time-outs bound
    it); one that streams it passes the server what it gets."""
    def client(at, rec):
        with socket.create_connection(at, timeout=10) as s:
            s.sendall(B17_DRIP[:B17_CUT])
            early = _wait_upstream(rec, b"GET", PASS_BOUND_S)
            s.sendall(B17_DRIP[B17_CUT:])
            complete = _wait_upstream(rec, b"\r\n\r\n", 5.0)
            return early, complete

    got, (early, complete) = _recorded(proxy, outdir, "b17-standin", client)
    data = {"upstream_got_part_of_head": early, "upstream_got_head_once_complete": complete}
    if not complete:
        raise kit.KitError(f"{proxy.name} sent the complete head on to no upstream")
    if not early:
        return kit.Verdict(NA, f"absorbed: {proxy.name} reads the whole head before it sends "
                           f"the request on: nothing of {B17_CUT} of {len(B17_DRIP)} bytes "
                           f"reached the upstream in {PASS_BOUND_S:g} s, the head at once "
                           f"when complete", data)
    return kit.Verdict("inconclusive", f"{proxy.name} streams a head it has not parsed: "
                       "measure the server directly (the matrix's B17)", data)


# ---- B11 ----------------------------------------------------------------

# The matrix's ambiguous framings (B11.B11_PROBES, a GET hidden in the body)
# and the conformance table's other framing cases (tests/hostile/conformance.c,
# RFC 9112 6.1, 6.3, 5.1, 5.2): name, request line's version, head fields, body.
B11_FRAMINGS = tuple((n, "1.1", h, b) for n, h, b in B11.B11_PROBES) + (
    ("te-not-final-chunked", "1.1", "Transfer-Encoding: gzip\r\n", "hello"),
    ("te-in-http10", "1.0", "Connection: keep-alive\r\nTransfer-Encoding: chunked\r\n"
     "Content-Length: 3\r\n", "5\r\nhello\r\n0\r\n\r\n"),
    ("cl-list-same", "1.1", "Content-Length: 5, 5\r\n", "hello"),
    ("cl-invalid", "1.1", "Content-Length: abc\r\n", ""),
    ("cl-negative", "1.1", "Content-Length: -5\r\n", ""),
    ("cl-plus-sign", "1.1", "Content-Length: +5\r\n", "hello"),
    ("cl-obs-fold-value", "1.1", "Content-Length:\r\n 5\r\n", "hello"),
)
# The next client's request, on the proxy's pooled upstream connection:
# a POST whose echo is its own, so that an answer to another request
# (the hidden GET's pong) is not taken for it.
B11_NEXT_BODY = b"next-client"
B11_NEXT = (b"POST /echo HTTP/1.1\r\nHost: kit\r\nContent-Length: %d\r\n\r\n"
            % len(B11_NEXT_BODY) + B11_NEXT_BODY)


def proxy_requests(proxy: Proxy, run: Running) -> list[str]:
    """'METHOD PATH' of every request the proxy's own request log has."""
    text = run.log("stdout.log" if proxy.name == "haproxy" else "access.log")
    return [" ".join(line.split()[:2]) for line in text.splitlines()
            if re.match(r"[A-Z]+ /", line)]


def b11_one(row: kit.Row, proxy: Proxy, outdir: Path, name: str, version: str,
            fields: str, body: str) -> dict:
    req = f"POST /echo HTTP/{version}\r\nHost: kit\r\n{fields}\r\n{body}".encode()
    with Front(row, proxy, outdir, f"b11-{name}", kit.HORSE) as fr:
        with socket.create_connection(fr.at, timeout=10) as s:
            s.sendall(req)
            buf, end = httpwire.read_responses_end(s, 1, 3.0 * kit.SLOW)
        answer = _status(httpwire.parse_responses(buf), end)
        nxt, nend = _ask(fr.at, B11_NEXT)
    got = served(fr.srv.log)
    asked = proxy_requests(proxy, fr.run)
    next_ok = bool(nxt) and nxt[0]["status"][:3] == "200" and nxt[0]["body"] == B11_NEXT_BODY
    return {"proxy_answer": answer, "server_received": got,
            "next_client": _status(nxt, nend) + ("" if next_ok or not nxt else " (not its answer)"),
            "next_ok": next_ok,
            "proxy_forwarded": asked,
            # the hidden GET served by the server, and not as a request the
            # proxy itself read (its log has it then: both agree where the
            # POST ended, as with a pipelined GET)
            "hidden_served": (sum(1 for g in got if g.startswith("GET "))
                              > sum(1 for a in asked if a.startswith("GET "))),
            "server_rejected": [g for g in got if g.startswith("POST ") and g.split()[-1] in B11.B11_REJECT]}


def measure_b11(row: kit.Row, proxy: Proxy, outdir: Path) -> kit.Verdict:
    """Each framing on a fresh server behind a fresh proxy, then another
    client's request, which the proxy sends on the pooled upstream
    connection: out of step (not its 200 pong) or a hidden request
    served is the defect; a framing the proxy rejects, or rewrites into one
    unambiguous framing, is absorbed."""
    probes = {n: b11_one(row, proxy, outdir, n, v, h, b) for n, v, h, b in B11_FRAMINGS}
    desync = [n for n, p in probes.items() if not p["next_ok"]]
    hidden = [n for n, p in probes.items() if p["hidden_served"]]
    # passed on: the server got the probe (more than the next client's POST)
    forwarded = [n for n, p in probes.items() if len(p["server_received"]) > 1]
    fig = (f"{len(B11_FRAMINGS)} framings through {proxy.name}: next client out of step after "
           f"{len(desync)} ({', '.join(desync) or 'none'}), hidden request served "
           f"{len(hidden)}; " + "; ".join(
               f"{n}: {proxy.name} {p['proxy_answer']}, server got "
               f"[{', '.join(p['server_received']) or '-'}], next {p['next_client']}"
               for n, p in probes.items()))
    data = {"probes": probes, "desync": desync, "hidden": hidden, "forwarded": forwarded}
    if desync or hidden:
        return kit.Verdict(R, fig, data)
    if "B11" in patchset.fixed_by(row.variant):
        return kit.Verdict(F, fig, data)
    return kit.Verdict(NA, f"absorbed: {proxy.name} rejects each framing or rewrites it into "
                       f"one framing the server reads alike; {fig}", data)


# ---- B14 ----------------------------------------------------------------

B14_TRIES = 8   # which pooled upstream connection a proxy picks is its own race


def measure_b14(row: kit.Row, proxy: Proxy, outdir: Path) -> kit.Verdict:
    """HEAD, then another client's request, B14_TRIES times: a response to
    HEAD that carries content (the defect) leaves those bytes where the
    proxy reads the next response, but only where it sends the next
    request on the HEAD's upstream connection (haproxy does in some tries,
    not all).  Any next client that does not get its own echo shows it;
    else tries on the HEAD's connection that all came right are a fix (or
    the proxy absorbing it), and none on it says the proxy never reused."""
    tries = []
    with Front(row, proxy, outdir, "b14", kit.HORSE) as fr:
        for _ in range(B14_TRIES):
            with socket.create_connection(fr.at, timeout=10) as s:
                s.sendall(f"HEAD {B14.B14_TARGET} HTTP/1.1\r\nHost: kit\r\n\r\n".encode())
                buf, end = httpwire.read_head_end(s, 5.0 * kit.SLOW)
            head = httpwire.parse_head(buf)
            nxt, nend = _ask(fr.at, B11_NEXT)
            ok = bool(nxt) and nxt[0]["status"][:3] == "200" and nxt[0]["body"] == B11_NEXT_BODY
            tries.append({"head": head["status"][:3] if head else end, "ok": ok,
                          "next": _status(nxt, nend) + ("" if ok or not nxt else " (not its answer)")})
        asked = proxy_requests(proxy, fr.run)
    got = served(fr.srv.log)
    conns = [c for c, _ in kit.served_requests(fr.srv.log)]
    paired = len(conns) == 2 * len(tries) and all(g.startswith(("HEAD", "POST")[i % 2]) for i, g in enumerate(got))
    for i, t in enumerate(tries):
        t["same"] = paired and conns[2 * i] == conns[2 * i + 1]
    same = [t for t in tries if t["same"]]
    data = {"tries": tries, "server_received": got, "proxy_forwarded": asked}
    fig = (f"{len(tries)} times HEAD {B14.B14_TARGET} through {proxy.name}, then another client's "
           f"POST: answered {sum(t['ok'] for t in tries)} of {len(tries)} "
           f"([{', '.join(t['next'] for t in tries)}]), {len(same)} on the HEAD's upstream connection")
    if not all(t["ok"] for t in tries):
        return kit.Verdict(R, fig, data)
    if not paired:
        return kit.Verdict("inconclusive", f"the server's log does not pair each HEAD with its POST; {fig}", data)
    if "B14" in patchset.fixed_by(row.variant):
        return kit.Verdict(F, fig, data)
    how = ("reuses the HEAD's upstream connection, and the next client gets its own answer"
           if same else "never sends the next request on the HEAD's upstream connection")
    return kit.Verdict(NA, f"absorbed: {proxy.name} {how}; {fig}", data)


# ---- B2, B5, B18, B20: what a proxy makes of the request -----------------

# What the client sends in one write, how many answers it waits for (the
# last a GET /ping's pong), and what it is.  B2: three GETs pipelined; B5:
# a POST with a body and a GET after it; B18: an empty line before a GET
# (after a POST on the same client connection, as a client that ends a
# body with an extra CRLF sends it); B20: the absolute form of the target.
PING = b"GET /ping HTTP/1.1\r\nHost: kit\r\n\r\n"
REWRITES = {
    "B2": (PING * 3, 3, "three GETs pipelined in one write"),
    "B5": (B11_NEXT + PING, 2, "a POST with its body and a GET after it in one write"),
    "B13": (b"GET /ping HTTP/1.0\r\nHost: kit\r\nConnection: keep-alive\r\n\r\n" * 2, 2,
            "two HTTP/1.0 GETs with Connection: keep-alive on one connection"),
    "B18": (B11_NEXT + b"\r\n" + PING, 2,
            "an empty line before a GET (after a POST on the same client connection)"),
    "B20": (b"GET http://kit/ping HTTP/1.1\r\nHost: kit\r\n\r\n", 1,
            "a GET with the absolute form of its target (http://kit/ping)"),
}


def measure_rewrite(defect: str, row: kit.Row, proxy: Proxy, outdir: Path) -> kit.Verdict:
    """What the server receives when the client sends REWRITES[defect]
    through the proxy: each request, one at a time, answered (the proxy
    took the requests apart or rewrote them: absorbed), or not (passed
    on: the defect)."""
    req, n, what = REWRITES[defect]
    with Front(row, proxy, outdir, defect.lower(), kit.HORSE) as fr:
        with socket.create_connection(fr.at, timeout=10) as s:
            s.sendall(req)
            buf, end = httpwire.read_responses_end(s, n, 5.0 * kit.SLOW)
    got = served(fr.srv.log)
    resp = httpwire.parse_responses(buf)
    last = resp[-1] if len(resp) == n else None
    ok = (bool(last) and all(r["status"][:3] == "200" for r in resp)
          and last["body"] == b"pong" and "GET /ping 200" in got)
    http = re.findall(r"\bconn=\d+ req=\d+ .*?\bhttp=(\S+)", fr.srv.log)
    data = {"client_got": [r["status"][:3] for r in resp], "end": end, "server_received": got,
            "server_http": http}
    fig = (f"{what} through {proxy.name}: the client got [{', '.join(data['client_got']) or end}], "
           f"the server served [{', '.join(got) or '-'}] (HTTP/{', '.join(http) or '-'})")
    if not ok:
        return kit.Verdict(R, fig, data)
    if defect in patchset.fixed_by(row.variant):
        return kit.Verdict(F, fig, data)
    said = {"B13": "answers each request on its client's connection, whatever the server "
                   "does with the HTTP/1.0 it gets" if "1.0" in http else
                   "speaks HTTP/1.1 to the server",
            "B18": "drops the empty line",
            "B20": "sends the server the origin form"}.get(defect, "sends the server one request "
                                                             "at a time")
    return kit.Verdict(NA, f"absorbed: {proxy.name} {said}; {fig}", data)


# ---- B16 ----------------------------------------------------------------

def measure_b16(row: kit.Row, proxy: Proxy, outdir: Path) -> kit.Verdict:
    """The matrix's rejected requests (B16.B16_PROBES) and a body over
    MaxBodySize, sent in full (a proxy that buffers the body then passes
    it on), through the proxy, each on a fresh client connection: a
    request the proxy passes on and the server rejects with no answer
    comes back as the proxy's 502 or a close (lost); one the proxy
    rejects itself, or the server's own status relayed, is not."""
    body = 4 * B16.B16_MAX_BODY
    probes = [(n, req) for n, req, _ in B16.B16_PROBES] + [
        ("body-too-large", f"POST /echo HTTP/1.1\r\nHost: kit\r\nContent-Length: {body}\r\n\r\n"
         .encode() + b"x" * body)]
    got = {}
    with Front(row, proxy, outdir, "b16", kit.HORSE + ["--max-body-size", str(B16.B16_MAX_BODY)]) as fr:
        for name, req in probes:
            with socket.create_connection(fr.at, timeout=10) as s:
                buf, end = kit.send_then_read_to_close(s, req)
            got[name] = _status(httpwire.parse_responses(buf), end)
    lost = [n for n, st in got.items() if st in ("502", "503", "504", "EOF", "ECONNRESET", "timeout")]
    data = {"statuses": got, "lost": lost, "server_received": served(fr.srv.log)}
    fig = (f"{len(probes)} requests the server rejects, through {proxy.name}: "
           + ", ".join(f"{n} {st}" for n, st in got.items())
           + f"; lost (the proxy's 502, or no answer): {len(lost)}")
    if lost:
        return kit.Verdict(R, fig, data)
    if "B16" in patchset.fixed_by(row.variant):
        return kit.Verdict(F, fig, data)
    return kit.Verdict(NA, f"absorbed: {proxy.name} rejects them itself or relays the "
                       f"server's answer; {fig}", data)


# ---- B19 ----------------------------------------------------------------

def framing_seen(buf: bytes, end: str) -> str:
    """How the response in buf (read to the close) was delimited for the
    client: 'length' (Content-Length, its body whole), 'chunked' (to its
    last chunk), 'close' (no length: the close ends it), 'truncated' (a
    length or chunks the close cut short), or 'none'."""
    head = httpwire.parse_head(buf)
    if not head:
        return "none"
    fields = {n.lower(): v.lower() for n, v in head["headers"]}
    body = buf[head["head_len"]:]
    if "chunked" in fields.get("transfer-encoding", ""):
        return "chunked" if body.endswith(b"0\r\n\r\n") else "truncated"
    if head["content_length"] is not None:
        return "length" if len(body) >= head["content_length"] else "truncated"
    return "close" if end in ("EOF", "ECONNRESET") else "truncated"


B19_TRIES = 3


def measure_b19(row: kit.Row, proxy: Proxy, outdir: Path) -> kit.Verdict:
    """The 503 at MaxLiveConnectionCount (B19.B19_FLAGS), delimited by the
    close on stock: B19_TRIES clients of the proxy's, one after another,
    while a direct client holds the one slot, each read to the close.
    The verdict: a 503 delimited by the close reached the client (passed
    on), or each came with a length or whole chunks (the proxy framed it:
    absorbed; the fix's Content-Length).  A 503 cut short (the server's
    close with the request unread resets the connection, and a proxy
    that frames the 503 itself may lose its end: a race, 3 of 10 behind
    nginx and Apache on stock) is counted in the figure, not judged."""
    seen: list[str] = []
    with Front(row, proxy, outdir, "b19", kit.HORSE + B19.B19_FLAGS) as fr:
        with socket.create_connection((fr.srv.address, fr.srv.port), timeout=10) as hold:
            held = httpwire.exchange(hold, "/ping", 5.0 * kit.SLOW)
            if not held or held[0]["status"][:3] != "200":
                raise kit.KitError(f"the slot holder's GET: {held!r}")
            for _ in range(B19_TRIES):
                with socket.create_connection(fr.at, timeout=10) as s:
                    s.sendall(PING)
                    # to its length or last chunk, else to the close
                    buf, end, _ = httpwire._read(s, 5.0 * kit.SLOW, lambda b: framing_seen(
                        b, "") in ("length", "chunked"))
                head = httpwire.parse_head(buf)
                st = head["status"][:3] if head else end
                if st != "503":
                    return kit.Verdict("inconclusive", f"a client of {proxy.name}'s while the "
                                       f"server's one slot is held: {st}", {"statuses": st})
                seen.append(framing_seen(buf, end))
    counts = {k: seen.count(k) for k in dict.fromkeys(seen)}
    data = {"delimited": counts}
    names = dict(length="its Content-Length", chunked="whole chunks", close="the close",
                 truncated="nothing (cut short)", none="-")
    fig = (f"{B19_TRIES} clients of {proxy.name}'s while the server's one slot is held, each "
           f"503, delimited by " + ", ".join(f"{names[k]} {n}x" for k, n in counts.items()))
    if "close" in counts:
        return kit.Verdict(R, fig, data)
    if "B19" in patchset.fixed_by(row.variant):
        return kit.Verdict(F, fig, data)
    cut = counts.get("truncated", 0)
    return kit.Verdict(NA, f"absorbed: {proxy.name} frames the 503 itself, no close-delimited "
                       f"response reaches its client" + (
                           f" (yet {cut} of {B19_TRIES} came cut short: the server's reset "
                           f"races the proxy's read)" if cut else "") + f"; {fig}", data)


# ---- rows -------------------------------------------------------------

MEASURES = {"B3": measure_b3, "B4": measure_b4, "B10": measure_b10, "B11": measure_b11,
            "B12": measure_b12, "B14": measure_b14, "B17": measure_b17,
            "B2": lambda r, p, o: measure_rewrite("B2", r, p, o),
            "B5": lambda r, p, o: measure_rewrite("B5", r, p, o),
            "B13": lambda r, p, o: measure_rewrite("B13", r, p, o),
            "B16": measure_b16,
            "B19": measure_b19,
            "B18": lambda r, p, o: measure_rewrite("B18", r, p, o),
            "B20": lambda r, p, o: measure_rewrite("B20", r, p, o)}
# Why the other columns are not measured through a proxy.
NOT_HERE = {
    "B1": "server-side: the OnAllowConnect hook is the server's, the same behind a proxy "
          "(the direct rows decide it)",
    "B6": "the server's thread mode, not what the proxy sends (the direct rows decide it)",
    "B7": "the server's thread pool under load, not what the proxy sends (the direct rows)",
    "B8": "descriptors above 1023 in the server, not what the proxy sends (the direct rows)",
    "B9": "the server's polled and pool modes, not what the proxy sends (the direct rows)",
    "B15": "the server's stop, not what the proxy sends (the direct rows decide it)",
}
REAL_TRUNK = kit.BUILD / "real-trunk"
# What each proxy was measured to absorb (the expectations; the measures
# decide from counts, these say what the run must show).
ABSORBS = {"nginx": {"B2", "B5", "B10", "B13", "B11", "B12", "B17", "B18", "B19", "B20"},
           "haproxy": {"B2", "B5", "B13", "B17", "B18"},
           "apache": {"B2", "B5", "B11", "B13", "B12", "B17", "B18", "B19", "B20"}}
# The measures that say "fixed" on a row whose fix targets the defect when
# the proxy absorbs it too (nothing out of step: the figure says which).
FIX_SHOWS = {"B2", "B5", "B13", "B11", "B14", "B16", "B18", "B19", "B20"}


def fixes() -> list[str]:
    """The fixes that change what a proxy can see: those of the columns
    measured through it, but where every proxy absorbs the defect (then
    the stock row behind each says so, and the fix changes nothing there)."""
    everywhere = set.intersection(*ABSORBS.values())
    return [f for d in MEASURES if d not in everywhere for f in patchset.fixing(d)]


def row_name(variant: str, proxy: str) -> str:
    return f"real trunk behind {proxy}" if variant == "stock" else \
        f"real trunk + {variant} behind {proxy}"


def measured_in(variant: str) -> list[str]:
    """The columns a row measures: all of them on stock and all, a fix's
    own defect elsewhere (the others are the stock row's)."""
    if variant in ("stock", "all"):
        return list(MEASURES)
    return [d for d in MEASURES if d in patchset.fixed_by(variant)]


def rows() -> tuple[list[kit.Row], list[str]]:
    """The proxy rows, and why any cannot run here (a missing package)."""
    out, skipped = [], []
    for name, p in PROXIES.items():
        if not p.found():
            skipped.append(f"rows behind {name} [SKIP] no {p.exe} (Debian package {p.package}: "
                           "scripts/require-packages.sh installs it)")
            continue
        for v in ["stock", *fixes(), "all"]:
            fixed = patchset.fixed_by(v) if v != "stock" else []
            exp = {}
            for d in defects.DEFECTS:
                if d not in MEASURES or d not in measured_in(v):
                    exp[d] = NA
                elif d in ABSORBS[name] and not (d in FIX_SHOWS and d in fixed):
                    exp[d] = NA
                else:
                    exp[d] = F if d in fixed else R
            target = [d for d in measured_in(v) if exp[d] == F]
            row = kit.Row(row_name(v, name), v, expect=exp, target=target,
                          path=REAL_TRUNK / v / "fpserver",
                          note=f"real TFPHttpServer, Pascal set '{v}', behind {name} "
                               f"{p.version()} (repro/proxy/{p.conf})")
            row.proxy = name
            out.append(row)
    return out, skipped


def measure(col: str, row: kit.Row, outdir: Path) -> kit.Verdict:
    """A proxy row's column: measured through its proxy (retried as the
    kit retries), or n/a with the reason."""
    proxy = PROXIES[row.proxy]
    if col not in MEASURES:
        why = NOT_HERE.get(col.split(".")[0], "the wire of the direct rows (no capture through "
                           "a proxy)")
        return kit.Verdict(NA, why)
    if col not in measured_in(row.variant):
        return kit.Verdict(NA, f"not measured in this row (its fix targets "
                           f"{', '.join(patchset.fixed_by(row.variant))}): the stock row behind "
                           f"{proxy.name} has it")
    return kit.retried(lambda d: MEASURES[col](row, proxy, d), outdir / f"{col}", col)


def main() -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", action="store_true", help="the rows, with their expectations")
    ap.add_argument("--b4-clients", nargs=2, metavar=("ADDRESS", "PORT"),
                    help="(for b4_concurrent) run B4's clients against ADDRESS PORT, print JSON")
    ap.add_argument("--try", nargs="+", metavar=("PROXY", "VARIANT"), dest="try_",
                    help="measure one proxy row's columns now (VARIANT: default stock)")
    args = ap.parse_args()
    if args.b4_clients:
        print(json.dumps(b4_clients((args.b4_clients[0], int(args.b4_clients[1])))))
        return 0
    if args.try_:
        v = args.try_[1] if len(args.try_) > 1 else "stock"
        row = next(r for r in rows()[0] if r.name == row_name(v, args.try_[0]))
        out = Path(tempfile.mkdtemp(prefix="proxies."))
        for col in measured_in(v):
            got = measure(col, row, out)
            print(f"{row.name}: {col} {got.state} (expected {row.expect[col]}): {got.figure}")
        print(f"evidence in {out}")
        return 0
    rs, skipped = rows()
    for r in rs:
        print(r.name, {d: s for d, s in r.expect.items() if d in MEASURES})
    for s in skipped:
        print("TEST: matrix", s)
    return 0


if __name__ == "__main__":
    sys.exit(main())


# ---- the texts ---------------------------------------------------------

def is_proxy_row(r: dict) -> bool:
    """A matrix.json row of this module's."""
    return any(r["row"].endswith(f" behind {name}") for name in PROXIES)


def summary(rows: list[dict]) -> str:
    """REPORT.md's one line for the rows behind the proxies (their table is
    the run's output; what they show, per defect, each tracker text's
    'Impact behind a reverse proxy' line)."""
    ok = sum(1 for r in rows if r["as_expected"] and r["criteria_met"])
    return (f"Behind nginx, haproxy and Apache (`repro/harness/proxies.py`, configs in "
            f"`repro/proxy/`): {len(rows)} rows, {ok} as expected; what each proxy passes on "
            f"or absorbs is in each tracker text's \"Impact behind a reverse proxy\" line.")


def impact_line(doc: dict, defect: str) -> str:
    """report/Bn.md's 'Impact behind a reverse proxy' line, from a run's
    rows behind the proxies (their stock rows)."""
    rows = {r["row"]: r for r in doc.get("rows", [])}
    parts, vers = [], []
    for name in PROXIES:
        r = rows.get(row_name("stock", name))
        if not r:
            continue
        vers.append(r["note"].split(f"behind {name} ", 1)[-1].split(" (", 1)[0])
        v = r["verdicts"][defect]
        if defect not in MEASURES:
            continue
        said = {"reproduced": {"B3": "the stall reaches the client",
                               "B4": "requests lost",
                               "B16": "an unanswered rejection comes back as the proxy's 502",
                               "B19": "the 503 reaches the client delimited by the close"
                               }.get(defect, "passed on to the server"),
                "n/a": "absorbed", "fixed": "not seen"}.get(v["state"], v["state"])
        if defect == "B3" and v["data"].get("ratio_p50"):
            said += (f" ({v['data']['proxied_p50_us'] / 1000:.1f} ms a reused request, "
                     f"{v['data']['ratio_p50']:.0f}x one after an idle gap)")
        elif defect == "B4" and v["data"].get("statuses"):
            st = v["data"]["statuses"]
            sent = sum(n for c in st.values() for n in c.values())
            lost = sum(n for c in st.values() for s, n in c.items() if s != "200")
            said += (f" ({v['data'].get('clients')} clients at once, KeepConnections off: {lost} of {sent} "
                     f"requests answered 502 or closed unanswered, "
                     f"{v['data']['proxy_retries']} sent again by the proxy)")
        elif v["state"] == "reproduced":
            said += " (" + v["figure"].split("; ", 1)[0] + ")"
        elif v["state"] == "n/a":
            said += " (" + v["figure"].split(": ", 1)[1].split("; ", 1)[0] + ")"
        parts.append(f"{name}: {said}")
    if not vers:
        return "- Impact behind a reverse proxy: not measured in this run (no rows behind a proxy)"
    fronts = ", ".join(f"{n} {v}" for n, v in zip(PROXIES, vers))
    if defect not in MEASURES:
        why = NOT_HERE.get(defect, "the direct rows decide it")
        return (f"- Impact behind a reverse proxy ({fronts}, upstream keep-alive on): "
                + (why if why.startswith("not measured") else f"not measured through a proxy: {why}"))
    return (f"- Impact behind a reverse proxy ({fronts}, upstream keep-alive on; `make repro`'s "
            f"rows behind them): " + "; ".join(parts))
