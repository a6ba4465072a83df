"""loadgen.py - the clients of the dispatch benchmark: wrk runs, a paced
/ping prober for head-of-line latency, and a readiness check on client
sockets.  Stdlib only; wrk (Debian package wrk) does the heavy load.

Deadlines here are how long a client waits, never a verdict.
"""
from __future__ import annotations

import math
import re
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

REQUEST_DEADLINE_S = 3.0


def percentile(values: list[float], p: float) -> float | None:
    """Nearest-rank percentile; None for no values."""
    if not values:
        return None
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(round(p / 100.0 * len(v) + 0.5)) - 1))
    return v[k]


_UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}


def _ms(text: str) -> float | None:
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text.strip())
    return float(m.group(1)) * _UNIT_MS[m.group(2)] if m else None


def parse_wrk(out: str) -> dict:
    """Requests, req/s, latency percentiles (ms) and errors from
    `wrk --latency` output."""
    r: dict = {"requests": 0, "rps": 0.0, "errors": 0, "non2xx": 0}
    m = re.search(r"(\d+) requests in ([\d.]+)(\w+)", out)
    if m:
        r["requests"] = int(m.group(1))
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if m:
        r["rps"] = float(m.group(1))
    for pct in (50, 90, 99):
        m = re.search(rf"^\s+{pct}%\s+(\S+)", out, re.M)
        r[f"p{pct}_ms"] = _ms(m.group(1)) if m else None
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), "
                  r"timeout (\d+)", out)
    if m:
        r["socket_errors"] = {k: int(v) for k, v in
                              zip(("connect", "read", "write", "timeout"),
                                  m.groups())}
        r["errors"] = sum(r["socket_errors"].values())
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        r["non2xx"] = int(m.group(1))
    return r


def wrk_cmd(host: str, port: int, path: str, conns: int, seconds: float,
            timeout_s: float = 2.0) -> list[str]:
    threads = max(1, min(conns, 2))
    if seconds != int(seconds):
        raise ValueError(f"wrk takes whole seconds, not {seconds}")
    return ["wrk", "--latency", f"-t{threads}", f"-c{conns}",
            f"-d{int(seconds)}s", "--timeout", f"{int(math.ceil(timeout_s))}s",
            f"http://{host}:{port}{path}"]


def wrk(host: str, port: int, path: str, conns: int, seconds: float,
        timeout_s: float = 2.0) -> dict:
    p = subprocess.Popen(wrk_cmd(host, port, path, conns, seconds, timeout_s),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    hung = False
    try:
        out, err = p.communicate(timeout=seconds + timeout_s + 3)
    except subprocess.TimeoutExpired:
        # wrk itself stuck (seen against a server that accepts and never
        # answers): stop our child, keep whatever it printed.
        hung = True
        p.kill()
        out, err = p.communicate()
    r = parse_wrk(out)
    r.update(conns=conns, seconds=seconds, exit=p.returncode)
    if hung:
        r["hung"] = True
        r["errors"] = max(1, r["errors"])
    if p.returncode != 0:
        r["stderr"] = (err or "").strip()[-300:]
    return r


def established_to(host: str, port: int) -> int:
    """Client sockets of this network namespace ESTABLISHED to host:port
    (from /proc/net/tcp): how we know a load's connections are up."""
    try:
        packed = socket.inet_aton(socket.gethostbyname(host))
    except OSError:
        return 0
    want = "%08X:%04X" % (int.from_bytes(packed, "little"), port)
    n = 0
    try:
        with open("/proc/net/tcp") as f:
            next(f)
            for line in f:
                parts = line.split()
                if parts[2] == want and parts[3] == "01":
                    n += 1
    except OSError:
        return 0
    return n


class _Client:
    """One keep-alive HTTP/1.1 client socket, reconnecting after a close."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.sock: socket.socket | None = None
        self.connects = 0

    def get(self, path: str) -> int | None:
        """Status of one GET, or None (reset, EOF, deadline).  A reused
        socket the server had closed silently (no Connection: close, as
        fphttpserver does) is retried once on a fresh one, as a pooled
        client would."""
        reused = self.sock is not None
        status = self._get(path)
        if status is None and reused:
            status = self._get(path)
        return status

    def _get(self, path: str) -> int | None:
        try:
            if self.sock is None:
                self.sock = socket.create_connection(
                    (self.host, self.port), timeout=REQUEST_DEADLINE_S)
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.connects += 1
            self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {self.host}:"
                              f"{self.port}\r\n\r\n".encode())
            status, close = self._read_response()
        except OSError:
            status, close = None, True
        if close:
            self.close()
        return status

    def _read_response(self) -> tuple[int | None, bool]:
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                return None, True
            buf += chunk
        head, _, body = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        try:
            status = int(lines[0].split()[1])
        except (IndexError, ValueError):
            return None, True
        hdr = {k.strip().lower(): v.strip() for k, _, v in
               (ln.partition(":") for ln in lines[1:])}
        close = hdr.get("connection", "").lower() == "close"
        if "content-length" in hdr:
            need = int(hdr["content-length"])
            while len(body) < need:
                chunk = self.sock.recv(4096)
                if not chunk:
                    return status, True
                body += chunk
        else:   # close-delimited body
            while self.sock.recv(4096):
                pass
            close = True
        return status, close

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


class Pinger:
    """Open-loop GET /ping: one request every `pace_s`, each on a fresh
    connection, whatever the earlier ones are doing.  A fresh connection
    per ping samples every event loop the kernel may pick (SO_REUSEPORT
    spreads connections by hash), and a blocked ping does not thin out the
    samples, so the percentiles say what share of pings waited."""

    def __init__(self, host: str, port: int, pace_s: float = 0.01,
                 max_in_flight: int = 64):
        self.host, self.port, self.pace = host, port, pace_s
        self.max_in_flight = max_in_flight

    def _one(self) -> tuple[float, int | None]:
        c = _Client(self.host, self.port)
        t0 = time.monotonic()
        status = c._get("/ping")
        dt = (time.monotonic() - t0) * 1000.0
        c.close()
        return dt, status

    def run(self, seconds: float, held_ms: float | None = None) -> dict:
        """held_ms: also count the answered pings that took at least that
        long (held behind something, not slowed by a busy CPU)."""
        n = max(1, int(round(seconds / self.pace)))
        t0 = time.monotonic()
        with ThreadPoolExecutor(self.max_in_flight) as ex:
            futs = []
            for k in range(n):
                # The schedule is the stimulus (a steady trickle), not a sync.
                delay = t0 + k * self.pace - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                futs.append(ex.submit(self._one))
            res = [f.result() for f in futs]
        lat = [dt for dt, st in res if st == 200]
        kinds: dict[str, int] = {}
        for _, st in res:
            if st != 200:
                k = str(st) if st is not None else "no response"
                kinds[k] = kinds.get(k, 0) + 1
        out = summary(lat, len(res) - len(lat))
        out["failure_kinds"] = kinds
        if held_ms is not None:
            out["held"] = sum(1 for dt in lat if dt >= held_ms)
            out["held_ms"] = held_ms
        return out


def summary(lat: list[float], failures: int) -> dict:
    return {"n": len(lat), "failures": failures,
            "p50_ms": percentile(lat, 50), "p90_ms": percentile(lat, 90),
            "p99_ms": percentile(lat, 99),
            "max_ms": max(lat) if lat else None}


def raw_exchange(host: str, port: int, payload: bytes,
                 deadline_s: float) -> dict:
    """Send payload on a fresh socket; read until the server closes or the
    deadline.  Counts the complete responses and says how it ended."""
    out = {"responses": 0, "statuses": [], "ended": "deadline"}
    try:
        s = socket.create_connection((host, port), timeout=deadline_s)
    except OSError as e:
        out["ended"] = f"connect: {e.strerror or e}"
        return out
    buf = b""
    end = time.monotonic() + deadline_s
    try:
        s.sendall(payload)
        while time.monotonic() < end:
            s.settimeout(max(0.01, end - time.monotonic()))
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                out["ended"] = "eof"
                break
            buf += chunk
            statuses = _statuses(buf)
            if len(statuses) >= payload.count(b"HTTP/1.1\r\n"):
                out["ended"] = "all answered"
                break
    except ConnectionResetError:
        out["ended"] = "reset"
    except OSError as e:
        out["ended"] = f"error: {e.strerror or e}"
    finally:
        s.close()
    out["statuses"] = _statuses(buf)
    out["responses"] = len(out["statuses"])
    return out


def _statuses(buf: bytes) -> list[int]:
    """Statuses of the complete responses (Content-Length framed) in buf."""
    res, pos = [], 0
    while True:
        hend = buf.find(b"\r\n\r\n", pos)
        if hend < 0:
            return res
        head = buf[pos:hend].decode("latin-1").split("\r\n")
        try:
            status = int(head[0].split()[1])
        except (IndexError, ValueError):
            return res
        clen = 0
        for ln in head[1:]:
            k, _, v = ln.partition(":")
            if k.strip().lower() == "content-length":
                clen = int(v.strip() or 0)
        if len(buf) < hend + 4 + clen:
            return res
        res.append(status)
        pos = hend + 4 + clen
