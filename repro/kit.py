"""kit.py - run a server, drive it with the probe, collect evidence.

Shared by `make repro` (repro/matrix.py), the integration tests and the
report generator, so that every verdict is computed in one place.

Rules (DESIGN section 6): verdicts are counts, orderings and same-run ratios.
Deadlines here are only how long we wait; nothing is decided on a duration.
"""
from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
BUILD = TOP / "build"
PROBE = BUILD / "probe"
STRACE_ANALYSE = BUILD / "strace-analyse"
PCAP_ANALYSE = BUILD / "pcap-analyse"

FIXES = ["forward-allow-connect", "buffer-aware-pending", "coalesce-writes",
         "announce-close", "keep-surplus-bytes", "pool-idle-fallback"]
VARIANTS = ["stock"] + FIXES + ["all"]
DEFECTS = ["B1", "B2", "B3", "B4", "B5", "B6"]

# The B3 verdict: requests 2..n on one socket against fresh sockets, medians
# of the same run.  The stall multiplies the median by ~100-400 on Linux
# (40 ms against 0.1-0.4 ms); a fix brings it to ~1.  Between the two bounds
# the run says nothing and the verdict is "inconclusive".
B3_STALL_RATIO = 10.0
B3_CLEAN_RATIO = 3.0

HORSE = ["--horse"]
STRACE_TRACE = "network,select,pselect6,poll,read,write,close"


class KitError(RuntimeError):
    pass


class Unsupported(KitError):
    """The server refused a flag (exit 2): the scenario does not apply."""


# Where the servers come from: build/ (plain), build-asan/ or build-tsan/.
SERVER_BUILD = TOP / os.environ.get("KIT_SERVER_BUILD", "build")


def binary(variant: str) -> Path:
    return SERVER_BUILD / variant / "server-min"


def have_strace() -> bool:
    return shutil.which("strace") is not None


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

    def start(self, ready_deadline_s: float = 10.0) -> "Server":
        argv = list(self.argv)
        wrap = os.environ.get("KIT_SERVER_WRAP")   # e.g. valgrind for memcheck runs
        if wrap and not self.strace_path:
            argv = wrap.split() + argv
        if self.strace_path:
            argv = ["strace", "-f", "-tt", "-T", "-s", "65535", "-e",
                    "trace=" + STRACE_TRACE, "-o", str(self.strace_path)] + argv
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._err = open(self.log_path, "w")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                     stderr=self._err, stdin=subprocess.DEVNULL)
        line = self._read_ready_line(ready_deadline_s)
        m = re.fullmatch(r"listening (\S+):(\d+)", line.strip())
        if not m:
            self.stop()
            if self.exit_code == 2:
                raise Unsupported(self.log.strip().splitlines()[-1] if self.log.strip()
                                  else f"{argv[0]} refused its flags")
            raise KitError(f"{argv[0]}: no 'listening ADDR:PORT' line "
                           f"(got {line!r}); log: {self.log_path}")
        self.address, self.port = m.group(1), int(m.group(2))
        return self

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

    def stop(self, deadline_s: float = 15.0) -> str:
        if self.proc and self.proc.poll() is None:
            try:
                os.kill(self._server_pid(), signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(deadline_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.exit_code = self.proc.returncode
            self.proc.stdout.close()
            self._err.close()
        self.log = self.log_path.read_text(errors="replace")
        return self.log

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def probe(server: Server, scenario: str, *args: str, out: Path | None = None,
          timeout_s: float = 120.0) -> dict:
    """Run the probe with --json; returns its object (saved to out)."""
    argv = [str(PROBE), "--json", "--scenario", scenario, *args,
            server.address, str(server.port)]
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

REQUEST_LINE = re.compile(r"^request conn=(\d+) req=(\d+) ")


def served_requests(log: str) -> list[tuple[int, int]]:
    """(connection id, request number) of every served request, in order."""
    out = []
    for line in log.splitlines():
        m = REQUEST_LINE.match(line)
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

    @property
    def binary(self) -> Path:
        return self.path or binary(self.variant)

    @property
    def real(self) -> bool:
        return self.path is not None


@dataclass
class Verdict:
    state: str        # reproduced | fixed | inconclusive | n/a
    figure: str
    data: dict = field(default_factory=dict)


def _server(row: Row, outdir: Path, tag: str, flags: list[str],
            strace: bool = False) -> Server:
    return Server([str(row.binary), "--port", "0", *flags],
                  log_path=outdir / f"{tag}.server.log",
                  strace_path=(outdir / f"{tag}.strace") if strace else None)


def measure_b1(row: Row, outdir: Path, use_strace: bool) -> Verdict:
    """The user's OnAllowConnect (a TCP_NODELAY hook) per accepted connection."""
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


def measure_b2(row: Row, outdir: Path) -> Verdict:
    """Three GETs in one send() on a keep-alive connection."""
    with _server(row, outdir, "b2", HORSE + row.flags) as srv:
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


def measure_b3(row: Row, outdir: Path, use_strace: bool) -> Verdict:
    """n sequential requests on one socket vs a fresh socket per request."""
    srv = _server(row, outdir, "b3", HORSE + row.flags)
    with srv:
        res = probe(srv, "compare", "-n", "30", out=outdir / "b3.probe.json")
        gap = probe(srv, "idle-gap", "-n", "5", "--gap-ms", "300",
                    out=outdir / "b3-idle-gap.probe.json")
    ka, fresh = res["keepalive"], res["fresh"]
    served = served_requests(srv.log)[:ka["requests_sent"]]
    conn_ids = sorted({c for c, _ in served})
    ratio = res.get("ratio_p50")
    gap_rest = gap["stats_us"]["rest"]["p50"]
    data = {
        "ratio_p50": ratio,
        "reused_p50_us": ka["stats_us"]["rest"]["p50"],
        "first_us": ka["stats_us"]["first"],
        "fresh_p50_us": fresh["stats_us"]["all"]["p50"],
        "idle_gap_rest_p50_us": gap_rest,
        "idle_gap_ratio": (gap_rest / fresh["stats_us"]["all"]["p50"])
        if gap_rest and fresh["stats_us"]["all"]["p50"] else None,
        "connects": ka["connects"], "local_ports": ka["local_ports"],
        "server_conn_ids": conn_ids, "responses": ka["responses"],
        "requests": ka["requests_sent"],
    }
    if use_strace:
        st_srv = _server(row, outdir, "b3-strace", HORSE + row.flags, strace=True)
        with st_srv:
            probe(st_srv, "seq", "-n", "5", out=outdir / "b3-strace.probe.json")
        st = strace_analysis(st_srv.strace_path)
        sends = [s for c in st["connections"] for s in c["sends_per_response"]]
        data["sends_per_response"] = sorted(set(sends))
        data["tcp_nodelay_per_connection"] = sorted(
            {c["tcp_nodelay"] for c in st["connections"]})
        data["select_timeouts_ms"] = sorted(
            {t for c in st["connections"] for t in c["selects"]["timeouts"]})
    if ka["responses"] == 1 and ka["outcome"][1] in ("eof", "econnreset", "epipe"):
        return Verdict("n/a", "the server closes after every response: no reused "
                       "connection that could stall", data)
    reuse_ok = (ka["connects"] == 1 and ka["reused"] and len(conn_ids) == 1
                and ka["responses"] == ka["requests_sent"])
    if not reuse_ok or ratio is None:
        return Verdict("inconclusive",
                       f"connection reuse not proven (connects={ka['connects']}, "
                       f"server conn ids={conn_ids}, responses={ka['responses']})", data)
    fig = (f"median of requests 2..{ka['requests_sent']} is {ratio:.1f}x the "
           f"keep-alive-off median")
    if "sends_per_response" in data:
        fig += f"; sendto per response {data['sends_per_response']}"
    if ratio >= B3_STALL_RATIO:
        return Verdict("reproduced", fig, data)
    if ratio <= B3_CLEAN_RATIO:
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


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


def measure_b6(row: Row, outdir: Path) -> Verdict:
    """Pool mode, keep-alive, default AcceptIdleTimeout: request 2."""
    flags = ["--thread-mode", "pool", "--keep-connections",
             "--keep-connection-timeout", "15000"] + row.flags
    with _server(row, outdir, "b6", flags) as srv:
        res = probe(srv, "seq", "-n", "3", "--deadline-ms", "1500",
                    out=outdir / "b6.probe.json")
    n = res["responses"]
    data = {"responses": n, "requests": 3, "outcome": res.get("outcome"),
            "connects": res["connects"]}
    fig = f"{n} of 3 sequential requests on one socket answered"
    if res["connects"] != 1:
        return Verdict("inconclusive", fig, data)
    if n == 3:
        return Verdict("fixed", fig, data)
    if n == 1:
        return Verdict("reproduced", fig, data)
    return Verdict("inconclusive", fig, data)


def can_capture() -> str | None:
    """None when captures can run, else the reason they cannot."""
    if os.geteuid() != 0:
        return "capture needs root (tcpdump, ip netns)"
    for tool in ("tcpdump", "ip"):
        if not shutil.which(tool):
            return f"capture needs {tool}"
    return None


CAPTURE_REQUESTS = 6


def measure_capture(row: Row, outdir: Path, veth: bool) -> Verdict:
    """B3 on the wire: where each body segment left relative to the
    client's ACK of its header segment (captures/capture.sh + pcap-analyse)."""
    where = "veth" if veth else "lo"
    out = outdir / f"capture-{where}"
    argv = [str(TOP / "captures" / "capture.sh"), "--scenario", "seq",
            "--probe-args", f"-n {CAPTURE_REQUESTS}", "--variant", row.variant,
            "--no-strace", "--out", str(out)]
    if row.flags:
        argv += ["--server-args", " ".join(row.flags)]
    if veth:
        argv.insert(1, "--veth")
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    (outdir / f"capture-{where}.log").write_text(r.stdout + r.stderr)
    if r.returncode != 0:
        return Verdict("inconclusive", f"capture failed (exit {r.returncode})",
                       {"log": r.stderr.strip()[-400:]})
    pc = json.loads((out / "pcap.json").read_text())
    cls = pc["classes"]
    later = CAPTURE_REQUESTS - 1   # response 1 rides on a quick ACK
    data = {"classes": cls, "responses": pc["responses"], "requests": pc["requests"],
            "ack_delay_us": pc["ack_delay_us"], "where": where}
    fig = (f"{where}: responses 2..{CAPTURE_REQUESTS}: held-until-ACK "
           f"{cls['held-until-ack']}, coalesced {cls['coalesced']}, "
           f"sent-before-ACK {cls['sent-before-ack']}; header->ACK p50 "
           f"{pc['ack_delay_us']['p50']} us")
    if pc["responses"] != CAPTURE_REQUESTS:
        return Verdict("inconclusive", fig, data)
    if cls["held-until-ack"] >= later:
        return Verdict("reproduced", fig, data)
    if cls["held-until-ack"] == 0 and (cls["coalesced"] >= later or
                                       cls["sent-before-ack"] >= later):
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


def _guarded(fn, *args) -> Verdict:
    try:
        return fn(*args)
    except Unsupported as e:
        return Verdict("n/a", f"not supported by this server: {e}")


def measure_row(row: Row, outdir: Path, use_strace: bool) -> dict[str, Verdict]:
    outdir.mkdir(parents=True, exist_ok=True)
    return {
        "B1": _guarded(measure_b1, row, outdir, use_strace),
        "B2": _guarded(measure_b2, row, outdir),
        "B3": _guarded(measure_b3, row, outdir, use_strace),
        "B4": _guarded(measure_b4, row, outdir),
        "B5": _guarded(measure_b5, row, outdir),
        "B6": _guarded(measure_b6, row, outdir),
    }
