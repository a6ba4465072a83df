#!/usr/bin/env python3
"""sweep.py - each fix across the shapes applications send (`make sweep`).

The matrix decides every defect at one point (a 4-byte /ping, a 5-byte
POST, three pipelined GETs).  Where a defect's mechanism depends on a size,
a depth or a link, this sweeps it and shows the boundary:

  B3  response body 0 B .. 1 MiB (dense at the links' MSS, CopyFrom's
      128 KiB piece, 16 KiB, the socket buffer), as Content and as
      ContentStream, on loopback and on veth pairs with MTU 1500 and the
      largest MTU veth takes: the median of requests 2..n on one socket
      against the median on fresh sockets, same server, same run, and, when
      that does not settle it (under Wine always), against the same socket
      after 300 ms idle gaps; sendto per response (strace); peak memory for
      a 10 and a 100 MiB ContentStream;
  B2  pipeline depth 2..256 (crossing the 4 KiB read buffer): answers;
  B5  POST body size around the read buffer, and several POSTs pipelined
      in one send(): answers.

Rows: the model and the real trunk (and win64 under Wine for B3, loopback
only: Wine's server would have to start inside the namespace; not with
--short, where the suite's load swamps the stall under Wine), each as
stock, the defect's fix (repro/harness/patchset.py) and all.  Checks (TEST lines):
every fixed row is clean at every point; stock shows the defect wherever
its mechanism says it must (B3: every body from 1 byte to below the link's
MSS, which is measured, not assumed); the model and the real server agree
at every point.  Verdicts are counts and same-run ratios (kit.py's bounds).

usage: sweep.py [--short] [--out DIR] [--links lo,veth-1500,veth-max]
                [--no-win64] [--no-real]
Exit status 0 when every check passed.
"""
from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import httpwire  # noqa: E402
import kit  # noqa: E402
import patchset  # noqa: E402
import wineprefix  # noqa: E402

REAL_TRUNK = kit.BUILD / "real-trunk"
REAL_WIN64 = kit.BUILD / "real-trunk-win64"
WINE = kit.TOP / "repro" / "fpc" / "wine-server.sh"
READ_BUF = 4096          # ReadBufLen: FBuffer's size (server-min/httpserver.h)
STREAM_PIECE = 0x20000   # TStream.CopyFrom's buffer (server-min/stream.h)

# Body sizes every link gets; each link adds MSS-1, MSS, MSS+1 of its own.
B3_SIZES = [0, 1, 4, 100, 1000, 1400, 2000, 2896, 4096, 8192, 16383, 16384,
            16385, 20000, 32768, 50000, 65000, 65536, 70000, 100000, 131071,
            131072, 131073, 200000, 262144, 300000, 524288, 1048576]
B3_SHORT = [0, 4, 16385, 20000, 65000, 70000, 300000, 1048576]
B3_WINE = [4, 20000, 65000, 300000, 1048576]
B2_DEPTHS = [2, 3, 4, 8, 16, 32, 64, 80, 96, 128, 192, 256]
B2_SHORT = [2, 64, 128, 256]
B5_BODIES = [1, 5, 100, 1000, 3500, 4000, 4096, 4097, 5000, 8192, 16384, 65536]
B5_SHORT = [5, 4000, 5000, 65536]
B5_POSTS = [2, 4, 8]
MEM_STREAMS = [10 << 20, 100 << 20]


# ---- links --------------------------------------------------------------

@dataclass
class Link:
    name: str
    address: str = "127.0.0.1"
    wrap: list[str] = field(default_factory=list)   # run the server inside the netns
    mtu: int = 65536
    mss: int = 0        # TCP_MAXSEG of a new connection (bounded by half the window)
    mss_full: int = 0   # TCP_MAXSEG once a 1 MiB response has opened the window


NETNS: list[str] = []


def _cleanup_netns() -> None:
    for ns in NETNS:
        subprocess.run(["ip", "netns", "delete", ns], capture_output=True)


def veth_link(name: str, mtu: int | None) -> Link:
    """A fresh namespace behind a veth pair on a /30 of its own
    (scripts/veth-pair.sh, the kit's one allocator: a subnet another step
    holds would shadow ours); mtu None takes the largest the driver
    accepts (its maxmtu)."""
    r = subprocess.run([str(kit.TOP / "scripts" / "veth-pair.sh"), "fphs-sw",
                        "max" if mtu is None else str(mtu)], capture_output=True, text=True)
    if r.returncode != 0:
        raise kit.KitError(f"veth link {name}: scripts/veth-pair.sh exit {r.returncode}: "
                           f"{r.stderr.strip()}")
    pair = dict(line.split("=", 1) for line in r.stdout.split())
    NETNS.append(pair["ns"])
    return Link(name, pair["ns_addr"], ["ip", "netns", "exec", pair["ns"]], int(pair["mtu"]))


def server_mss(link: Link, port: int, client_port: int) -> int:
    """The server socket's send segment size (`ss -ti`'s mss), in the
    server's namespace."""
    r = subprocess.run([*link.wrap, "ss", "-tinH", "state", "established",
                        f"( sport = :{port} and dport = :{client_port} )"],
                       capture_output=True, text=True, timeout=10)
    for word in r.stdout.split():
        if word.startswith("mss:"):
            return int(word[4:])
    raise kit.KitError(f"ss shows no mss for :{port} <- :{client_port}: {r.stdout!r} {r.stderr!r}")


def measure_mss(link: Link, srv: kit.Server) -> tuple[int, int]:
    """The server's segment size towards a client: on a new connection
    (Linux bounds it by half the largest window the client has shown, so on
    loopback it starts at half the initial window) and once a 1 MiB
    response has grown the client's window (the link's MSS)."""
    with socket.create_connection((srv.address, srv.port), timeout=5) as s:
        cport = s.getsockname()[1]
        s.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n")
        httpwire.read_responses(s, 1)
        first = server_mss(link, srv.port, cport)
        s.sendall(b"GET /bytes/1048576 HTTP/1.1\r\nHost: x\r\n\r\n")
        if len(httpwire.parse_responses(httpwire.read_responses(s, 1))) != 1:
            raise kit.KitError(f"no answer to /bytes/1048576 from {srv.address}:{srv.port}")
        return first, server_mss(link, srv.port, cport)


# ---- servers ------------------------------------------------------------

@dataclass
class Subject:
    label: str       # "model all", "real trunk stock", ...
    kind: str        # model | real | win64
    set: str         # stock, a fix (FIX or FIX+NEEDED), all
    binary: Path
    env: dict = field(default_factory=dict)

    def server(self, link: Link, out: Path, tag: str, strace: bool = False) -> kit.Server:
        wrap = [str(WINE)] if self.kind == "win64" else []
        srv = kit.Server([*link.wrap, *wrap, str(self.binary), "--port", "0",
                          "--address", link.address, *kit.HORSE],
                         log_path=out / f"{tag}.server.log",
                         strace_path=(out / f"{tag}.strace") if strace else None,
                         env=self.env or None)
        if self.kind == "win64":
            srv.ready_deadline_s = 90.0
            srv.strace_extra = list(kit.WINE_STRACE_EXTRA)
        return srv


def fix_set(defect: str) -> list[str]:
    """The variant(s) that fix `defect`: each patch, with what it Needs."""
    return [f"{p.name}+{p.needs}" if p.needs else p.name
            for p in patchset.patches() if p.defect == defect]


def subjects(defect: str, real: bool, win64: bool, wine_env: dict) -> list[Subject]:
    sets = ["stock", *fix_set(defect), "all"]
    out = [Subject(f"model {s}", "model", s, kit.binary(s)) for s in sets]
    if real:
        out += [Subject(f"real trunk {s}", "real", s, REAL_TRUNK / s / "fpserver")
                for s in sets if (REAL_TRUNK / s / "fpserver").exists()]
    if win64 and defect == "B3":
        out += [Subject(f"win64 {s}", "win64", s, REAL_WIN64 / s / "fpserver.exe", wine_env)
                for s in sets if (REAL_WIN64 / s / "fpserver.exe").exists()]
    return out


def fixes(subject: Subject, defect: str) -> bool:
    return defect in patchset.fixed_by(subject.set)


# ---- B3 -----------------------------------------------------------------

def b3_point(srv: kit.Server, path: str, size: int, n: int, gap: bool) -> dict:
    """Requests 2..n on one socket against the same run's controls: a fresh
    socket per request and, with gap, the same socket after 300 ms idle
    gaps (quick-ACK again: what a request costs without the stall).
    Probe and server measure in the real-time class where we may
    (kit.Server.measuring): the sweep runs beside other steps of make
    test, whose load slowed the fresh-socket control (a new connection and,
    on the real trunk, a new thread) to 16-21 ms beside a stall of 49-51 ms
    (c95), within 3x: a stall judged clean."""
    with srv.measuring():
        return b3_measure(srv, path, size, n, gap)


def b3_measure(srv: kit.Server, path: str, size: int, n: int, gap: bool) -> dict:
    res = kit.probe(srv, "compare", "-n", str(n), "--path", path, measure=True)
    ka, fresh = res["keepalive"], res["fresh"]
    p = {"reused_us": ka["stats_us"]["rest"]["p50"], "fresh_us": fresh["stats_us"]["all"]["p50"],
         "reuse_proven": ka["connects"] == 1 and ka["reused"] and ka["responses"] == n,
         "answered": ka["responses"] + fresh["responses"], "requests": 2 * n,
         "bodies_ok": all(b == size for b in ka["body_len"] + fresh["body_len"])}
    controls = [p["fresh_us"]]
    if gap:
        g = kit.probe(srv, "idle-gap", "-n", "3", "--gap-ms", "300", "--path", path, measure=True)
        p["gap_us"] = g["stats_us"]["rest"]["p50"]
        controls.append(p["gap_us"])
    p["controls_us"] = [c for c in controls if c]
    p["reused_each_us"] = ka["latency_us"][1:]
    p["fresh_each_us"] = fresh["latency_us"]
    return p


def b3_state(p: dict) -> str:
    """B3's b3_judge's bounds on the same run's controls (a fresh socket per
    request; after the first measure also the same socket after idle gaps):
    clean is at most 3x the slower control; a stall is 10x the faster one
    and beyond the clean bound of the slower (a large body on a warm socket
    after an idle gap can be far faster than back to back on a loaded
    machine, which is no stall), with the shape of a stall: it adds a
    delayed-ACK period to every reused request, so all of them but at most
    one must be 10x the faster control, not only their median.

    Where the two controls disagree (a stall's size against the faster,
    within the clean bound of the slower), the order decides for a stall:
    all reused requests but at most one slower than every fresh one.  A
    fresh socket's cost spreads on a loaded machine (real trunk: a new
    connection and a new thread; 1 to 20 ms at 20000 bytes on a slow VM,
    median up to 16 ms, beside a stall of 44-48 ms and an idle-gap control
    of 0.6 ms), a stall is on every reused request.  A clean server's
    reused requests, which skip the connect, are not all slower than every
    fresh one."""
    c = p["controls_us"]
    if not p["reuse_proven"] or p["answered"] != p["requests"] or not p["bodies_ok"] or not c:
        return "inconclusive"
    reused, each = p["reused_us"], p.pop("reused_each_us", [])
    slowest_fresh = max((x for x in p.pop("fresh_each_us", []) if x), default=None)
    p["ratio"] = round(reused / p["fresh_us"], 2) if p["fresh_us"] else None
    p["stalled"] = sum(1 for x in each if x and x >= kit.B3_STALL_RATIO * min(c))
    if reused >= kit.B3_STALL_RATIO * min(c) and p["stalled"] >= len(each) - 1:
        if reused > kit.B3_CLEAN_RATIO * max(c):
            return "reproduced"
        p["above_fresh"] = sum(1 for x in each if x and slowest_fresh and x > slowest_fresh)
        if slowest_fresh and p["above_fresh"] >= len(each) - 1:
            return "reproduced"
    return "fixed" if reused <= kit.B3_CLEAN_RATIO * max(c) else "inconclusive"


def decide(measure, wine: bool) -> dict:
    """A point that is not clean at once is measured again with the idle-gap
    control added, until two measures agree (the first two) or one state
    has three of at most five: the majority decides.  A loaded machine adds
    latency to single runs both ways; a stall adds a delayed-ACK period to
    every request, every time.  All runs are kept in `runs`."""
    runs = [measure(wine)]
    runs[0]["state"] = b3_state(runs[0])
    # A clean first measure stands alone only where its reused median is
    # no slower than its fresh one: between 1x and 3x a stall can sit
    # beside a fresh connection that load slowed (f1, a slow 2-core VM:
    # real trunk, 20000 bytes, 45.9 ms reused, 17.3 ms fresh, 2.66x), and
    # the idle-gap control (the same socket after a pause) tells them
    # apart.  Under Wine it is not taken alone at all: Wine's own latency
    # can inflate both controls past a stall's 40 ms.
    def alone(p: dict) -> bool:
        return p["state"] == "fixed" and not wine and (p["ratio"] or 0) <= 1
    while not alone(runs[0]) and len(runs) < 5:
        runs.append(measure(True))
        runs[-1]["state"] = b3_state(runs[-1])
        states = [p["state"] for p in runs]
        if ((len(runs) == 2 and states[0] == states[1] != "inconclusive")
                or max(states.count(x) for x in ("reproduced", "fixed")) >= 3):
            break
    states = [p["state"] for p in runs]
    best = max(set(states), key=states.count)
    if states.count(best) * 2 <= len(states):
        best = "inconclusive"
    last = dict(runs[-1], state=best)
    if len(runs) > 1:
        last["runs"] = [{k: p.get(k) for k in ("state", "ratio", "reused_us", "controls_us", "stalled",
                                                 "above_fresh")}
                        for p in runs]
    return last


def b3_run(subject: Subject, link: Link, sizes: list[int], n: int, out: Path) -> dict:
    """One server: every size, Content and ContentStream; a point between
    the bounds is measured once more and the second decides."""
    wine = subject.kind == "win64"
    points = []
    with subject.server(link, out, f"b3-{link.name}") as srv:
        kit.probe(srv, "compare", "-n", "3")   # warm-up, not measured (Wine's first requests)
        for size in sizes_for(link, sizes):
            for body in ("content", "stream"):
                path = f"/bytes/{size}" + ("?body=stream" if body == "stream" else "")
                p = decide(lambda gap: b3_point(srv, path, size, n, gap), wine)
                points.append({"size": size, "body": body, **p})
    return {"subject": subject.label, "kind": subject.kind, "set": subject.set,
            "link": link.name, "mss": link.mss, "mss_full": link.mss_full, "points": points}


def sizes_for(link: Link, sizes: list[int]) -> list[int]:
    """The sizes, and each side of the link's two segment sizes."""
    extra = [m + d for m in (link.mss, link.mss_full) if m for d in (-1, 0, 1)]
    return sorted(set(sizes) | set(extra))


def b3_sendto(subject: Subject, sizes: list[int], out: Path) -> dict:
    """sendto per response at each size (loopback, traced): one connection
    per point, two requests each, in order."""
    lo = Link("lo")
    order = [(s, b) for s in sizes for b in ("content", "stream")]
    srv = subject.server(lo, out, "b3-sendto", strace=True)
    with srv:
        for size, body in order:
            path = f"/bytes/{size}" + ("?body=stream" if body == "stream" else "")
            r = kit.probe(srv, "seq", "-n", "2", "--path", path, "--deadline-ms", "30000")
            if r["responses"] != 2:
                raise kit.KitError(f"{subject.label}: {r['responses']} of 2 answered for {path}")
    conns = [c for c in kit.strace_analysis(srv.strace_path)["connections"] if c.get("responses")]
    if len(conns) != len(order):
        raise kit.KitError(f"{subject.label}: {len(conns)} traced connections for {len(order)} points")
    return {"subject": subject.label, "set": subject.set,
            "points": [{"size": s, "body": b, "sendto": sorted(set(c["sends_per_response"])),
                        "nodelay": c["tcp_nodelay"]} for (s, b), c in zip(order, conns)]}


def vm_hwm_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise kit.KitError(f"no VmHWM for pid {pid}")


def b3_memory(subject: Subject, out: Path) -> dict:
    """Peak RSS after a /ping, then after a 10 MiB and a 100 MiB
    ContentStream, and sendto for each (strace): the send path must not
    copy a stream into one buffer."""
    lo = Link("lo")
    srv = subject.server(lo, out, "b3-memory", strace=True)
    with srv:
        kit.probe(srv, "seq", "-n", "1")
        pid = srv._server_pid()
        hwm = [vm_hwm_kib(pid)]
        for size in MEM_STREAMS:
            r = kit.probe(srv, "seq", "-n", "1", "--path", f"/bytes/{size}?body=stream",
                          "--deadline-ms", "60000")
            if r["responses"] != 1:
                raise kit.KitError(f"{subject.label}: {size}-byte stream not answered")
            hwm.append(vm_hwm_kib(pid))
    conns = [c for c in kit.strace_analysis(srv.strace_path)["connections"] if c.get("responses")]
    grow = [(hwm[i + 1] - hwm[0]) for i in range(len(MEM_STREAMS))]
    return {"subject": subject.label, "set": subject.set, "hwm_kib": hwm, "growth_kib": grow,
            "sendto": [c["sends_per_response"] for c in conns[1:]],
            # grows with the body: the 90 MiB more cost more than a tenth of itself
            "grows_with_body": (grow[1] - grow[0]) * 1024 > (MEM_STREAMS[1] - MEM_STREAMS[0]) // 10}


# ---- B2, B5 -------------------------------------------------------------

def b2_run(subject: Subject, depths: list[int], out: Path) -> dict:
    pts = []
    with subject.server(Link("lo"), out, "b2") as srv:
        for k in depths:
            r = kit.probe(srv, "pipeline", "-k", str(k), "--deadline-ms", "1000")
            pts.append({"depth": k, "sent": r["requests_sent"], "answered": r["responses"]})
    return {"subject": subject.label, "kind": subject.kind, "set": subject.set, "points": pts}


def post_batch(host: str, port: int, posts: int, size: int) -> tuple[bytes, list[bytes]]:
    bodies = [bytes([ord("a") + (i + j) % 26 for j in range(size)]) for i in range(posts)]
    req = b"".join(b"POST /echo HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/octet-stream\r\n"
                   b"Content-Length: %d\r\n\r\n%s" % (host.encode(), port, len(b), b) for b in bodies)
    return req + b"GET /ping HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host.encode(), port), bodies


def b5_point(srv: kit.Server, posts: int, size: int) -> dict:
    """posts POST /echo and a GET /ping in one send(): complete answers, and
    whether each echo is its own body."""
    batch, bodies = post_batch(srv.address, srv.port, posts, size)
    with socket.create_connection((srv.address, srv.port), timeout=5) as s:
        s.sendall(batch)
        buf = httpwire.read_responses(s, posts + 1, limit_s=1.0)
    rs = httpwire.parse_responses(buf)
    echoes = [r.get("body") for r in rs[:posts]]
    return {"posts": posts, "size": size, "answered": len(rs), "requests": posts + 1,
            "echo_ok": echoes == bodies[:len(echoes)]}


def b5_run(subject: Subject, sizes: list[int], posts: list[int], out: Path) -> dict:
    pts = []
    with subject.server(Link("lo"), out, "b5") as srv:
        for size in sizes:
            pts.append(b5_point(srv, 1, size))
        for n in posts:
            pts.append(b5_point(srv, n, 100))
    return {"subject": subject.label, "kind": subject.kind, "set": subject.set, "points": pts}


# ---- checks -------------------------------------------------------------

class Checks:
    def __init__(self) -> None:
        self.failed = 0
        self.lines: list[str] = []

    def __call__(self, name: str, ok: bool, why: str = "") -> None:
        self.failed += not ok
        line = f"TEST: sweep {name} [{' OK ' if ok else 'FAIL'}]" + ("" if ok else f" {why}")
        self.lines.append(line)
        print(line, flush=True)


def by_point(run: dict, keys: tuple[str, ...]) -> dict:
    return {tuple(p[k] for k in keys): p for p in run["points"]}


def counterparts(runs: list[dict]) -> list[tuple[dict, dict]]:
    """(model run, real or win64 run) of the same set (and link)."""
    model = {(r["set"], r.get("link")): r for r in runs if r["kind"] == "model"}
    return [(model[(r["set"], r.get("link"))], r) for r in runs
            if r["kind"] != "model" and (r["set"], r.get("link")) in model]


def determined(run: dict, p: dict) -> bool:
    """Whether the mechanism alone decides this point: every point of a
    fixed row (Nagle is off), and on stock a body smaller than the segment
    size a new connection starts with (one small segment behind the header
    segment).  Beyond it, stock's outcome depends on how far the client's
    receive window has grown by then (autotuning: from half the initial
    window to the MSS) and how a stream's pieces fall on segments, and
    varies from run to run on the model and the real server alike."""
    b = patchset.bound(run["set"], "B3")
    if b is not None:
        return p["size"] <= b
    return "B3" in patchset.fixed_by(run["set"]) or p["size"] < run["mss"]


def in_band(run: dict, p: dict) -> bool:
    """A point beyond a bounded B3 fix's bound (coalesce-writes alone): the
    header block and the first bound's worth leave in one write, the rest
    after it, whose small tail can wait behind a segment in flight for the
    client's delayed ACK, as on stock beyond its segment size: shown with
    its (k/n), not required clean, not compared."""
    b = patchset.bound(run["set"], "B3")
    return b is not None and p["size"] > b


def check_b3(runs: list[dict], check: Checks) -> None:
    """Fixed rows: no point a stall.  A point between the bounds after five
    measures is no stall by the rule (that needs every reused request but
    one 10x the faster control) and is named in the line, not hidden.
    Stock: a stall at every point the mechanism decides.  Clone and real:
    the same decided verdict wherever the mechanism decides."""
    for r in runs:
        name = f"B3 {r['subject']} {r['link']}"
        if "B3" in patchset.fixed_by(r["set"]):
            bound = patchset.bound(r["set"], "B3")
            pts = [p for p in r["points"] if not in_band(r, p)]
            bad = [f"{p['size']}/{p['body']} {p.get('ratio')}x" for p in pts
                   if p["state"] == "reproduced"]
            odd = [f"{p['size']}/{p['body']}" for p in pts if p["state"] == "inconclusive"]
            where = "at any size" if bound is None else f"up to its bound ({bound} bytes)"
            check(f"{name} no stall {where}" + (f" ({len(odd)} between the bounds: {odd})" if odd else ""),
                  bool(pts) and not bad, f"stalls at {bad}")
            if bound is not None:
                band = [p for p in r["points"] if in_band(r, p)]
                stalled = [f"{p['size']}/{p['body']}" for p in band if p["state"] == "reproduced"]
                check(f"{name} band beyond {bound} bytes (the tail after the coalesced write, "
                      f"as stock beyond its segment size): {len(stalled)} of {len(band)} points stalled"
                      + (f" {stalled}" if stalled else ""), True)
        else:
            must = [p for p in r["points"] if 0 < p["size"] < r["mss"]]
            bad = [f"{p['size']}/{p['body']} {p['state']}" for p in must if p["state"] != "reproduced"]
            check(f"{name} stalls at every body below the segment size ({r['mss']})",
                  bool(must) and not bad, f"no stall at {bad}")
    for m, x in counterparts(runs):
        mp, xp = by_point(m, ("size", "body")), by_point(x, ("size", "body"))
        both = [k for k in sorted(mp) if k in xp and determined(m, mp[k])]
        undecided = [k for k in both if "inconclusive" in (mp[k]["state"], xp[k]["state"])]
        diff = [f"{k[0]}/{k[1]} model {mp[k]['state']} vs {xp[k]['state']}"
                for k in both if k not in undecided and mp[k]["state"] != xp[k]["state"]]
        check(f"B3 clone-vs-{x['kind']} {x['set']} {x['link']} same verdict at every size the "
              f"mechanism decides ({len(both) - len(undecided)} compared"
              + (f", {len(undecided)} undecided" if undecided else "") + ")",
              not diff, "; ".join(diff))


def check_cost(sendto: list[dict], memory: list[dict], check: Checks) -> None:
    stocks = {r["subject"].rsplit(" ", 1)[0]: r for r in sendto if r["set"] == "stock"}
    for r in sendto:
        stock = stocks.get(r["subject"].rsplit(" ", 1)[0])   # model stock, real trunk stock
        table = patchset.by_name()
        b3 = [table[f] for f in patchset.fixing("B3") if f in patchset.members(r["set"])]
        nodelay = any(p.bound is None for p in b3)
        bounds = [p.bound for p in b3 if p.bound]
        nd = sorted({p["nodelay"] for p in r["points"]})
        check(f"B3 {r['subject']} TCP_NODELAY per connection {nd}", nd == ([1] if nodelay else [0]),
              "expected 1 with set-tcp-nodelay, 0 without")
        if bounds:
            # coalesce-writes: a body that fits the bound leaves with the header.
            fit = [p for p in r["points"] if 0 < p["size"] <= max(bounds)]
            off = [f"{p['size']}/{p['body']} {p['sendto']}" for p in fit if p["sendto"] != [1]]
            check(f"B3 {r['subject']} one sendto per response up to {max(bounds)} bytes "
                  f"({len(fit)} points)", bool(fit) and not off, "; ".join(off))
        if stock and r is not stock:
            sp = by_point(stock, ("size", "body"))
            more = [f"{p['size']}/{p['body']} {p['sendto']} vs {sp[(p['size'], p['body'])]['sendto']}"
                    for p in r["points"]
                    if max(p["sendto"], default=0) > max(sp[(p["size"], p["body"])]["sendto"], default=0)]
            check(f"B3 {r['subject']} no more sendto per response than stock", not more, "; ".join(more))
    for r in memory:
        check(f"B3 {r['subject']} stream memory does not grow with the body "
              f"(+{r['growth_kib'][0]} KiB for 10 MiB, +{r['growth_kib'][1]} KiB for 100 MiB)",
              not r["grows_with_body"])


def check_counts(defect: str, runs: list[dict], keys: tuple[str, ...], check: Checks,
                 must_lose) -> None:
    for r in runs:
        name = f"{defect} {r['subject']}"
        total = lambda p: p.get("requests", p.get("sent"))  # noqa: E731
        if defect in patchset.fixed_by(r["set"]):
            bad = [p for p in r["points"] if p["answered"] != total(p) or not p.get("echo_ok", True)]
            check(f"{name} answers every request at every point", not bad,
                  f"{[(tuple(p[k] for k in keys), p['answered'], total(p)) for p in bad]}")
        else:
            must = [p for p in r["points"] if must_lose(p)]
            bad = [p for p in must if p["answered"] >= total(p)]
            check(f"{name} loses requests wherever they wait in the read buffer",
                  bool(must) and not bad, f"all answered at {[tuple(p[k] for k in keys) for p in bad]}")
    for m, x in counterparts(runs):
        mp, xp = by_point(m, keys), by_point(x, keys)
        diff = [f"{k}: model {mp[k]['answered']} vs {xp[k]['answered']}"
                for k in sorted(mp) if k in xp and mp[k]["answered"] != xp[k]["answered"]]
        check(f"{defect} clone-vs-real {x['set']} same answers at every point", not diff, "; ".join(diff))


# ---- tables -------------------------------------------------------------

def b3_table(runs: list[dict], link: str, body: str) -> str:
    cols = [r for r in runs if r["link"] == link]
    if not cols:
        return ""
    sizes = sorted({p["size"] for r in cols for p in r["points"]})
    mark = {"reproduced": "STALL", "fixed": "ok", "inconclusive": "??"}
    head = "| body bytes | " + " | ".join(r["subject"] for r in cols) + " |"
    lines = [f"B3, {body}, {link} (segment size {cols[0]['mss']} at connect, {cols[0]['mss_full']} "
             "once the window has grown): median of requests 2..n on one socket over the "
             "fresh-socket median, same server and run; (k/n): requests that stalled one by "
             "one, where the receive window decides", "",
             head, "|" + " --- |" * (len(cols) + 1)]
    for s in sizes:
        cells = []
        for r in cols:
            p = by_point(r, ("size", "body")).get((s, body))
            if not p:
                cells.append("-")
                continue
            cell = f"{mark[p['state']]} {p.get('ratio', '-')}x"
            if not determined(r, p):
                cell += f" ({p.get('stalled', '?')}/{(p['requests'] // 2) - 1})"
            cells.append(cell)
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def count_table(defect: str, runs: list[dict], keys: tuple[str, ...]) -> str:
    if not runs:
        return ""
    pts = sorted({tuple(p[k] for k in keys) for r in runs for p in r["points"]})
    head = f"| {' x '.join(keys)} | " + " | ".join(r["subject"] for r in runs) + " |"
    lines = [f"{defect}: answered / sent", "", head, "|" + " --- |" * (len(runs) + 1)]
    for k in pts:
        cells = []
        for r in runs:
            p = by_point(r, keys).get(k)
            cells.append(f"{p['answered']}/{p.get('requests', p.get('sent'))}" if p else "-")
        lines.append(f"| {' x '.join(map(str, k))} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# ---- running ------------------------------------------------------------

def run_all(jobs: list[tuple[str, callable]], width: int) -> dict[str, object]:
    """Every job at once (they mostly wait on delayed ACKs and deadlines),
    with a progress line every 5 s; a job that raised is a failed job."""
    out: dict[str, object] = {}
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=width) as ex:
        futs = {ex.submit(fn): name for name, fn in jobs}
        pending = set(futs)
        last = t0
        while pending:
            done = {f for f in pending if f.done()}
            for f in done:
                name = futs[f]
                try:
                    out[name] = f.result()
                except Exception as e:   # noqa: BLE001 - reported as a failure below
                    out[name] = e
            pending -= done
            if pending and time.monotonic() - last >= 5:
                last = time.monotonic()
                print(f"   ... sweep {time.monotonic() - t0:.0f} s: {len(pending)} of "
                      f"{len(jobs)} measures running", flush=True)
            time.sleep(0.1)
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--short", action="store_true", help="boundary points only (make test)")
    ap.add_argument("--out", default=str(kit.TOP / "results" / "sweep"))
    ap.add_argument("--links", default="lo,veth-1500,veth-max")
    ap.add_argument("--no-win64", action="store_true")
    ap.add_argument("--no-real", action="store_true")
    ap.add_argument("--defects", default="B2,B3,B5",
                    help="which defects to sweep (tests/fault: B3 alone, on a broken fix)")
    a = ap.parse_args(argv)
    defects = a.defects.split(",")
    out = Path(a.out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    kit.raise_fd_limit()
    check = Checks()
    links = [Link("lo")]
    wanted = a.links.split(",")
    veth = [w for w in wanted if w.startswith("veth")]
    if veth and (os.geteuid() != 0 or not shutil.which("ip")):
        print("TEST: sweep veth links [SKIP] needs root and iproute2 (ip netns)")
    elif veth:
        atexit.register(_cleanup_netns)
        for w in veth:
            links.append(veth_link(w, 1500 if w == "veth-1500" else None))
    links = [ln for ln in links if ln.name in wanted]
    wine_env = {}
    # Wine under the suite's load swamps a 40 ms stall with its own latency:
    # the short sweep leaves the win64 rows to the matrix, which decides B3
    # on the wire there; `make sweep` runs them.
    win64 = not a.no_win64 and not a.short and (REAL_WIN64 / "stock" / "fpserver.exe").exists() and shutil.which("wine")
    if win64:
        try:
            wine_env = {"WINEPREFIX": str(wineprefix.shared_server(wineprefix.temp_copy()))}
        except wineprefix.WineError as e:
            print(f"TEST: sweep win64 rows [SKIP] no Wine prefix ({e})")
            win64 = False
    sizes = B3_SHORT if a.short else B3_SIZES
    n = 8 if a.short else 12
    jobs = []
    b3s = subjects("B3", not a.no_real, bool(win64), wine_env) if "B3" in defects else []
    for s in b3s:
        for ln in (links if s.kind != "win64" else links[:1]):
            d = out / "b3" / s.label.replace(" ", "_") / ln.name
            sz = B3_WINE if s.kind == "win64" else sizes
            jobs.append((f"b3|{s.label}|{ln.name}", lambda s=s, ln=ln, d=d, sz=sz: b3_run(s, ln, sz, n, d)))
        if s.kind != "win64":
            d = out / "cost" / s.label.replace(" ", "_")
            jobs.append((f"sendto|{s.label}", lambda s=s, d=d: b3_sendto(s, sizes, d)))
            jobs.append((f"memory|{s.label}", lambda s=s, d=d: b3_memory(s, d)))
    for s in subjects("B2", not a.no_real, False, {}) if "B2" in defects else []:
        jobs.append((f"b2|{s.label}", lambda s=s: b2_run(s, B2_SHORT if a.short else B2_DEPTHS,
                                                         out / "b2" / s.label.replace(" ", "_"))))
    for s in subjects("B5", not a.no_real, False, {}) if "B5" in defects else []:
        jobs.append((f"b5|{s.label}", lambda s=s: b5_run(s, B5_SHORT if a.short else B5_BODIES,
                                                         B5_POSTS, out / "b5" / s.label.replace(" ", "_"))))
    # The MSS of each link first (a loopback server tells it), so that every
    # run's sizes include MSS-1, MSS and MSS+1 of its link.
    for ln in links:
        with subjects("B3", False, False, {})[0].server(ln, out, f"mss-{ln.name}") as probe_srv:
            ln.mss, ln.mss_full = measure_mss(ln, probe_srv)
    print(f"sweep: {len(jobs)} measures, links " +
          ", ".join(f"{ln.name} (MTU {ln.mtu}, MSS {ln.mss} at connect, {ln.mss_full} once the "
                    "window has grown)" for ln in links), flush=True)
    t0 = time.monotonic()
    # The traced cost runs (strace, 100 MiB streams) burn CPU and decide
    # nothing by time: they run first, on their own, so that the timed runs
    # after them share the machine only with each other.
    cost = [j for j in jobs if j[0].split("|")[0] in ("sendto", "memory")]
    # Wine's measures last, two at a time: beside the 15 other timed runs
    # a win64 server's fresh-connection control rose to 25 ms (alone 2-4
    # ms: Wine's own calls per connection want a core), past half the stall
    # it is the control for, and its first point read as clean.
    wine = [j for j in jobs if j not in cost and j[0].startswith("b3|win64 ")]
    timed = [j for j in jobs if j not in cost and j not in wine]
    res = run_all(cost, width=4)
    res.update(run_all(timed, width=int(os.environ.get("KIT_SWEEP_JOBS", "16"))))
    if wine:
        print(f"sweep: the {len(wine)} win64 measures, two at a time", flush=True)
        res.update(run_all(wine, width=2))
    errors = {k: v for k, v in res.items() if isinstance(v, Exception)}
    for k, e in errors.items():
        check(f"measure {k}", False, f"{type(e).__name__}: {e}")
    ok = {k: v for k, v in res.items() if not isinstance(v, Exception)}
    order = {name: i for i, (name, _) in enumerate(jobs)}
    pick = lambda tag: [ok[k] for k in sorted(ok, key=order.get) if k.split("|")[0] == tag]  # noqa: E731
    doc = {"short": a.short, "links": [vars(ln) for ln in links], "seconds": round(time.monotonic() - t0, 1),
           "b3": pick("b3"), "sendto": pick("sendto"), "memory": pick("memory"),
           "b2": pick("b2"), "b5": pick("b5")}
    check_b3(doc["b3"], check)
    check_cost(doc["sendto"], doc["memory"], check)
    check_counts("B2", doc["b2"], ("depth",), check, lambda p: p["depth"] >= 2)
    # B5's mechanism: the requests behind the body are lost when they were
    # in FBuffer as the body was read, i.e. when the whole batch fits in it.
    check_counts("B5", doc["b5"], ("posts", "size"), check,
                 lambda p: len(post_batch("127.0.0.1", 65535, p["posts"], p["size"])[0]) <= READ_BUF)
    doc["checks"] = check.lines
    (out / "sweep.json").write_text(json.dumps(doc, indent=1))
    md = [b3_table(doc["b3"], ln.name, body) for ln in links for body in ("content", "stream")]
    md += [count_table("B2", doc["b2"], ("depth",)), count_table("B5", doc["b5"], ("posts", "size"))]
    (out / "sweep.md").write_text("\n".join(x for x in md if x))
    passed = len(check.lines) - check.failed
    print(f"sweep: {doc['seconds']} s; tables in {out / 'sweep.md'}")
    print(f"{passed} passed, {check.failed} failed")
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
