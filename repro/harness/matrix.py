#!/usr/bin/env python3
"""matrix.py - `make repro`: every server against every defect.

Rows: the clone (stock, each fix, the pairs that show an interaction, all,
and the application-side TCP_NODELAY mitigations), the real fphttpserver
built from an FPCSource trunk with the same patch sets (Pascal series), the
real FPC 3.2.2, the win64 builds under Wine when present, and the real
trunk behind nginx, haproxy and Apache (proxies.py).  Columns:
B1..B8, B3 on the wire (loopback, veth), sendto per response, TCP_NODELAY
per connection and the reuse/off ratio.  Which fix targets which defect is
read from the patches (patchset.py).  A row meets the criteria when it fixes
its targets and leaves every other verdict as its stock row has it; a real
row must also equal its clone counterpart, verdict for verdict.

Every measure waits rather than computes, so all of them run concurrently,
in pools by kind (KIT_JOBS light ones at once, default 16; 4 captures;
KIT_WAIT_JOBS of B10 and B15, which mostly wait, default 16; the two heavy
ones: B8's 1,100 connections KIT_HEAVY at once, default 4, and B7's
spinning servers four more; KIT_WINE_PRIVATE traced Windows runs, default
3; KIT_PROXY_JOBS measures of the rows behind nginx, haproxy and Apache,
default 4: proxies.py), the Wine rows first in a wave of their own
(Runner.run), their Wine server ended when the wave is over.
Progress goes to stdout while they run.
Exit status: 0 when every row shows its expected verdicts, 1 otherwise.

Usage: repro/harness/matrix.py [--rows NAME,NAME] [--out DIR] [--no-strace] [--no-capture]
                      [--fault-row SERVER]
A measure that raises is made once more on a fresh server; a second failure
is the verdict "failed" (FAIL in the table, its errors on a FAILED line
after it), which fails the row.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kit  # noqa: E402
import wineprefix  # noqa: E402
import patchset  # noqa: E402
import reuse  # noqa: E402
import proxies  # noqa: E402
from kit import Row  # noqa: E402
import defects  # noqa: E402  (the registry of measures, repro/defects/)
from defects import DEFECTS  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "horse"))
import rows as horse  # noqa: E402  (Horse's own code: repro/horse/rows.py)

R, F, NA = "reproduced", "fixed", "n/a"
# Rows that cannot run here, with the reason (printed as TEST ... [SKIP]).
SKIPPED: list[str] = []


def skip(why: str) -> None:
    if why not in SKIPPED:   # the row makers may be asked more than once
        SKIPPED.append(why)
REAL_TRUNK = kit.BUILD / "real-trunk"
REAL_WIN64 = kit.BUILD / "real-trunk-win64"
TRUNK_FPC = kit.TRUNK_FPC


def expect(fixed: list[str]) -> dict[str, str]:
    return {d: (F if d in fixed else R) for d in DEFECTS}


def clone_rows() -> list[Row]:
    out = [Row("stock", "stock", expect=expect([]),
               note="upstream trunk behaviour, defects included")]
    for p in patchset.patches():
        row = Row(p.name, p.name, expect=expect(patchset.fixed_by(p.name)),
                  target=[p.defect])
        if p.needs:
            row.needs = f"{p.name}+{p.needs}"
            row.note = (f"fixes {p.defect} only together with {p.needs} "
                        f"(row '{row.needs}')")
        out.append(row)
    for pair in kit.PAIRS:
        fixed = patchset.fixed_by(pair)
        out.append(Row(pair, pair, expect=expect(fixed), target=fixed,
                       note="the pair shows the interaction"))
    out.append(Row("all", "all", expect=expect(patchset.fixed_by("all")),
                   target=patchset.fixed_by("all")))
    out += [
        Row("stock --on-allow-connect nodelay", "stock", ["--on-allow-connect", "nodelay"],
            expect=expect([]), note="Horse PR #554's mitigation: the hook is dead, the stall stays"),
        Row("stock --socket-handler nodelay", "stock", ["--socket-handler", "nodelay"],
            expect=expect(["B3"]), target=["B3"],
            note="TCP_NODELAY in the socket handler (Horse 3.3.4), keep-alive unchanged"),
        Row("stock --request-nodelay", "stock", ["--request-nodelay"],
            expect=expect(["B3"]), target=["B3"], note="TCP_NODELAY per request (the DoGetModule route proposed in Horse issue #562)"),
        Row("forward-allow-connect --on-allow-connect nodelay", "forward-allow-connect",
            ["--on-allow-connect", "nodelay"], expect=expect(["B1", "B3"]), target=["B1", "B3"],
            note="the forwarded hook makes the TCP_NODELAY mitigation work"),
    ]
    return out


def real_name(clone: str) -> str:
    return "real trunk" if clone == "stock" else f"real trunk + {clone}"


def fpc_series() -> set[str]:
    """The fixes that have a Pascal patch (one or more: patchset.pascal)."""
    try:
        return {patchset.fix_of(n) for n in patchset.series("fpc")}
    except OSError:
        return set()


def trunk_rows(clones: list[Row]) -> list[Row]:
    """The real server built from trunk with the same patch set as each
    clone row (build/real-trunk/<set>/fpserver).  Once the trunk toolchain
    is there, every set the Pascal series can make gets its row, built or
    not: a build that failed shows as a failing row, never as a missing one.
    A clone fix with no Pascal patch of the same name is a failing row too."""
    if not TRUNK_FPC.exists():
        return []
    pascal = fpc_series()
    out = []
    for c in clones:
        exe = REAL_TRUNK / c.variant / "fpserver"
        if c.flags:
            continue
        missing = [n for n in c.variant.split("+") if n not in ("stock", "all") and n not in pascal]
        if missing:
            out.append(Row(real_name(c.name), c.variant, expect=dict(c.expect),
                           target=list(c.target), path=REAL_TRUNK / "no-pascal-patch" / c.variant,
                           counterpart=c.name, note=f"no Pascal patch {', '.join(missing)} in patches/fpc/series"))
            continue
        out.append(Row(real_name(c.name), c.variant, expect=dict(c.expect),
                       target=list(c.target), path=exe, counterpart=c.name,
                       needs=real_name(c.needs) if c.needs else "",
                       note=f"real TFPHttpServer, trunk, Pascal set '{c.variant}'"))
    return out


def fpc322_rows() -> list[Row]:
    """Debian's FPC 3.2.2 (`make fpc`), as measured in
    repro/fpc/FINDINGS-3.2.2.md: OnAllowConnect works; no keep-alive at all
    (so B3 and the pool mode do not apply); POST + pipelined GET loses both."""
    out = []
    exes = sorted(kit.BUILD.glob("fpc-3.*/fpserver"))
    if not exes and not shutil.which("fpc"):
        skip("real FPC 3.2.2 row [SKIP] no fpc (Debian package fpc)")
    elif not exes:   # fpc is there and its build is not: a failing row, not a missing one
        v = subprocess.run(["fpc", "-iV"], capture_output=True, text=True).stdout.strip()
        exes = [kit.BUILD / f"fpc-{v or 'unknown'}" / "fpserver"]
    for exe in exes:
        version = exe.parent.name[len("fpc-"):]
        # B8: 3.2.2 reads without a select() first, so fds above 1023 are served.
        # B9: no polled or pool mode, so no CheckRequests that SetIdle could stop.
        # B10: 3.2.2's ReadRequestContent does not answer Expect either.
        # B11: 3.2.2 checks no framing either (its te-chunked-and-cl probe
        # gets no answer at all: the body overrun of FINDINGS-3.2.2.md 5).
        # B12: 3.2.2 sizes the body's string from Content-Length as well
        # (address space, its pages left untouched) and dispatches a body
        # cut short.  B13: no keep-alive, so no persistence to decide.
        # B14: 3.2.2's DoSendContent writes a HEAD response's content too
        # (the bytes after its head until the close: no next response there).
        # B15: no keep-alive and no pool or polled mode, so no kept-alive
        # connection for Free to wait on (3.2.2's Free does wait with no
        # bound for a Threaded connection blocked in a read, as it has no
        # read time-out: repro/fpc/freehang/README.md; another trigger).
        # B16: 3.2.2's HandleRequest answers no rejected request either (its
        # request line without a version closes with no response; it has no
        # control-byte check, MaxLineLength or MaxBodySize, so those probes
        # are served and left out).  B17: 3.2.2 has no RequestReadTimeout at
        # all, so nothing bounds a request head: the dripped one is answered
        # (and a client that sends nothing holds its thread as long).
        # B18: 3.2.2's ReadRequestHeaders takes an empty first line for the
        # request line (ParseStartLine leaves an empty one alone) and the
        # request line after it for a header line without a colon;
        # InitRequestVars then raises for the empty method, and HandleRequest
        # answers nothing: the GET after a CRLF is lost as on trunk.
        # B19: no MaxLiveConnectionCount, so no 503 (the program refuses
        # --max-live-connection-count 1).  B20: 3.2.2's ParseStartLine (a
        # plain procedure there) derives PathInfo from the target as trunk's
        # does: cut at '?', a '/' put in front of a first character that is
        # not one, so `GET http://h/ping` is routed as `/http://h/ping` (404).
        # B21: no tmPolled (3.2.2 has only Threaded), and no KeepConnections:
        # the program refuses the measure's flags.
        exp = {"B1": F, "B2": R, "B3": NA, "B4": R, "B5": R, "B6": NA, "B7": NA, "B8": F, "B9": NA,
               "B10": R, "B11": R, "B12": R, "B13": NA, "B14": R, "B15": NA, "B16": R, "B17": R, "B18": R, "B19": NA,
               "B20": R, "B21": NA}
        out.append(Row(f"real FPC {version}", f"fpc-{version}", expect=exp,
                       note="real TFPHttpServer as released", path=exe))
    return out


WINE = kit.TOP / "repro" / "fpc" / "wine-server.sh"


def win64_rows(clones: list[Row], prefix: str | None) -> list[Row]:
    """The trunk built for win64 (build/real-trunk-win64/<set>/fpserver.exe),
    run under Wine by repro/fpc/wine-server.sh, probed from Linux.  Under
    Wine the TCP stack is Linux's: the delayed ACK is Linux's ~40 ms, not
    Windows' 200 ms; the two writes and the missing TCP_NODELAY are the
    Windows build's own.  Expected verdicts are the Linux rows' but for B8
    (Winsock's select takes a list of sockets, not a bitmap of
    descriptors)."""
    if not (REAL_WIN64 / "stock" / "fpserver.exe").exists():
        return []
    if not shutil.which("wine"):
        skip("win64 rows [SKIP] no wine to run the .exe builds (Debian packages wine, wine64)")
        return []
    env = {"WINEPREFIX": prefix} if prefix else {}
    by = {c.name: c for c in clones}

    def row(name: str, s: str, flags: list[str], clone: str, note: str,
            exe_set: str | None = None) -> Row:
        exp = dict(by[clone].expect, **{d: NA for d in defects.WINE_NA})   # defects.WINE_NA says why
        unix = [d for d in kit.patchset.unix_only(clone) if d not in defects.WINE_NA] \
            if clone in kit.patchset.variants() else []
        exp.update({d: R for d in unix})   # Platforms: unix (the patch says why)
        target = [d for d in by[clone].target if d not in defects.WINE_NA and d not in unix]
        return Row(name, s, list(flags), expect=exp, target=target,
                   path=REAL_WIN64 / (exe_set or s) / "fpserver.exe", wrap=[str(WINE)],
                   env=env, platform="win64", note=note)

    out = [row("real trunk (win64)", "stock", [], "stock", "the trunk's own defects on Windows"),
           row("real trunk (win64) --socket-handler nodelay (Unix-only guard)", "stock",
               ["--socket-handler", "nodelay"], "stock",
               "Horse 3.3.4: the mitigation compiled under {$IFDEF UNIX}: keep-alive on, "
               "no TCP_NODELAY, the stall is back", exe_set="unix-guard"),
           row("real trunk (win64) --socket-handler nodelay", "stock",
               ["--socket-handler", "nodelay"], "stock --socket-handler nodelay",
               "the mitigation on every platform")]
    for s in (*kit.patchset.fixing("B3"), "all"):
        if (REAL_WIN64 / s / "fpserver.exe").exists() or s in fpc_series() or s == "all":
            out.append(row(f"real trunk (win64) + {s}", s, [], s, f"Pascal set '{s}' on Windows"))
    return out


def shared_wine_prefix() -> str | None:
    """One prefix for the run's untraced Windows servers: a copy of the
    template (repro/harness/wineprefix.py), removed at exit."""
    if not (REAL_WIN64 / "stock" / "fpserver.exe").exists() or not shutil.which("wine"):
        return None
    try:
        return str(wineprefix.shared_server(wineprefix.temp_copy()))
    except wineprefix.WineError as e:
        print(f"note: no shared Wine prefix ({e}); each Windows run makes its own")
        return None


def proxy_rows() -> list[Row]:
    """The real trunk behind nginx, haproxy and Apache (proxies.py)."""
    if not TRUNK_FPC.exists():
        return []
    out, skipped = proxies.rows()
    for why in skipped:
        skip(why)
    return out


def all_rows(prefix: str | None = None) -> list[Row]:
    clones = clone_rows()
    return (clones + trunk_rows(clones) + fpc322_rows() + win64_rows(clones, prefix)
            + horse.rows(clones, fpc322_rows(), {"WINEPREFIX": prefix} if prefix else {})
            + proxy_rows())


def syscall_expectations(row: Row) -> dict[str, list[int]]:
    """What strace must show in the B3 run (5 requests on one connection):
    sendto per response, setsockopt(TCP_NODELAY) per connection."""
    v = row.variant
    fixes = set(kit.FIXES) if v == "all" else set(v.split("+"))
    # Header block, then content; one write when a B3 fix with a bound
    # (coalesce-writes: Defect-Bound) carries the 4-byte /ping body with the
    # header.  Per connection: once from a B3 fix without a bound
    # (set-tcp-nodelay's SetupSocket), once from each application-side
    # mitigation that runs; per request for --request-nodelay.
    table = kit.patchset.by_name()
    b3 = [table[f] for f in kit.patchset.fixing("B3") if f in fixes]
    sends = [1] if any(p.bound for p in b3) else [2]
    nodelay = 1 if any(p.bound is None for p in b3) else 0
    if "--socket-handler" in row.flags and "unix-guard" not in str(row.binary):
        nodelay += 1   # Horse 3.3.4's mistake: the handler is compiled out on Windows
    if "--on-allow-connect" in row.flags and "forward-allow-connect" in fixes:
        nodelay += 1
    if "--request-nodelay" in row.flags:
        nodelay += 5   # one per request of the 5
    nodelay += getattr(row, "nodelay_extra", 0)   # Horse's own (repro/horse/rows.py)
    nodelay = [nodelay]
    return {"sendto/resp": sends, "nodelay/conn": nodelay}


def criteria(row: Row, got: dict, base: dict | None,
             by_name: dict[str, dict]) -> tuple[bool, str]:
    """Fixes its targets (alone, or with the row it needs), and regresses
    nothing its stock row had right."""
    if not row.target and row.real and not row.counterpart:
        return True, "version row (measured, not a fix)"
    missed = [d for d in row.target if got[d].state != F]
    if missed and row.needs and row.needs in by_name:
        pair = by_name[row.needs]
        if all(pair[d].state == F for d in missed):
            return True, (f"fixes {','.join(missed)} only with the other patch "
                          f"(row '{row.needs}')")
    if missed:
        return False, "does not fix " + ",".join(missed)
    if base:
        worse = [d for d in DEFECTS if base[d].state == F and got[d].state != F]
        if worse:
            return False, "regresses " + ",".join(worse)
    bound = kit.patchset.bound(row.variant, "B3") if "B3" in row.target else None
    if bound is not None:
        return True, (f"fixes {','.join(row.target)}: B3 for bodies up to {bound} bytes "
                      "in one write; beyond, `make sweep` measures the band")
    return True, "fixes " + (",".join(row.target) if row.target else "nothing (baseline)")


def environment() -> dict:
    def run(*a):
        try:
            return subprocess.run(a, capture_output=True, text=True, timeout=10).stdout.strip()
        except OSError:
            return ""
    trunk = REAL_TRUNK.parent / "fpc-trunk" / "stamp"
    return {"kernel": platform.release(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "compiler": (run("cc", "--version").splitlines() or [""])[0],
            "strace": (run("strace", "-V").splitlines() or [None])[0] if kit.have_strace() else None,
            "fpc_trunk": trunk.read_text().strip() if trunk.exists() else None,
            "commit": run("git", "-C", str(kit.TOP), "rev-parse", "--short", "HEAD")}


def short(v: kit.Verdict) -> str:
    return {"reproduced": "REPRO", "fixed": "fixed", "inconclusive": "??", "n/a": "n/a",
            kit.MEASURE_FAILED: "FAIL"}.get(v.state, v.state)


def b3_columns(v: kit.Verdict) -> tuple[str, str, str]:
    d = v.data
    sends = ",".join(map(str, d.get("sends_per_response", []))) or "-"
    nodelay = ",".join(map(str, d.get("tcp_nodelay_per_connection", []))) or "-"
    ratio = f"{d['ratio_p50']:.1f}x" if d.get("ratio_p50") is not None else "-"
    return sends, nodelay, ratio


# ---- running every measure concurrently ---------------------------------

JOBS = int(os.environ.get("KIT_JOBS", "16"))
# B7's servers are niced below everything else (B7_NICE in B7's module,
# repro/defects/b07_pool_hang.py) and spend most of a measure waiting on a
# deadline, so more of them run at once than B8's 1,100-connection ones.
HEAVY_JOBS = {"B7": int(os.environ.get("KIT_HEAVY", "4")) + 4,
              "B8": int(os.environ.get("KIT_HEAVY", "4"))}
WIRE_JOBS = 4
# B10 and B15 mostly wait (curl's 1 s for a 100 that stock never sends, x3;
# B15's 4 s watch for Free to return): in the light pool they held 35 % of
# its slot time while a core stood idle.  They get slots of their own: with
# 16 the matrix took 111 s, with 8 130 s (its last 20 s waiting on them).
# B21 waits on its polled servers' ticks (~2.5 s a row).
WAITING = {"B10", "B15", "B21"}
WAIT_JOBS = int(os.environ.get("KIT_WAIT_JOBS", "16"))
# The rows behind the proxies (proxies.py): a pool of their own, so that
# they run beside the others from the start of their wave rather than
# queue behind them for the light slots (last in the row list, they ended
# 10 s after every other measure of a full run, 133.8 s against 109.8 s
# without them).
PROXY_JOBS = int(os.environ.get("KIT_PROXY_JOBS", "4"))

def rowdir_name(row: str) -> str:
    """The folder of a row's evidence, under the run's --out."""
    return row.replace(" ", "_").replace("+", "_")


class Runner:
    """All (row, column) measures at once, in pools by kind so that no kind
    waits behind another: light measures (KIT_JOBS at once), captures (4),
    and each heavy column (KIT_HEAVY at once: B7 loads the CPU, B8 holds
    1,100 threads).  A progress line every 5 s."""

    def __init__(self, rows: list[Row], out: Path, use_strace: bool, wire: list[str]):
        self.rows, self.out, self.use_strace, self.wire = rows, out, use_strace, wire
        self.pools = {"light": JOBS, "wire": WIRE_JOBS, "waiting": WAIT_JOBS, **HEAVY_JOBS,
                      "proxy": PROXY_JOBS}
        self.lock = threading.Lock()
        self.got: dict[str, dict[str, kit.Verdict]] = {r.name: {} for r in rows}
        self.busy: dict[str, float] = {}
        self.took: dict[str, tuple[float, float]] = {}   # key -> (start, seconds)
        self.t0 = time.monotonic()

    def pool_of(self, row: Row, col: str) -> str:
        # Not the Wine rows': their wave with B10 beside the light pool
        # (25 Windows programs at once, not 16) lost programs mid-run (a
        # server refused connections, two exited before their readiness
        # line; 1 run of 7).
        if getattr(row, "proxy", None):
            return "proxy"
        return (col if col in defects.HEAVY else "wire" if col in self.wire
                else "waiting" if col in WAITING and row.platform != "win64" else "light")

    def rowdir(self, row: Row) -> Path:
        return self.out / rowdir_name(row.name)

    def one(self, row: Row, col: str) -> None:
        key = f"{row.name}:{col}"
        with self.lock:
            self.busy[key] = time.monotonic()
        try:
            if getattr(row, "proxy", None):   # a row behind a proxy (proxies.py)
                v = proxies.measure(col, row, self.rowdir(row))
            elif col in self.wire and row.expect.get("B3") == NA:
                v = kit.Verdict(NA, "no reused connection (one request per connection): "
                                "nothing for the wire to show")
            elif col in self.wire:
                v = kit.retried(lambda d: defects.measure_capture(row, d, defects.CAPTURES[col]),
                                self.rowdir(row), col)
            else:
                v = defects.measure(col, row, self.rowdir(row), self.use_strace)
        except Exception as e:  # a harness bug must show, not kill the run
            v = kit.Verdict(kit.MEASURE_FAILED, "harness error",
                            {"errors": [f"{type(e).__name__}: {e}"]})
        with self.lock:
            start = self.busy.pop(key)
            self.took[key] = (round(start - self.t0, 1), round(time.monotonic() - start, 1))
            self.got[row.name][col] = v
            if len(self.got[row.name]) == len(DEFECTS) + len(self.wire):
                print(f"  [{time.monotonic() - self.t0:5.1f} s] done: {row.name}", flush=True)

    def progress(self, stop: threading.Event) -> None:
        total = len(self.rows) * (len(DEFECTS) + len(self.wire))
        while not stop.wait(5):
            with self.lock:
                done = sum(len(v) for v in self.got.values())
                now = time.monotonic()
                slow = sorted(self.busy.items(), key=lambda kv: kv[1])[:3]
            waits = ", ".join(f"{k} ({now - t:.0f} s)" for k, t in slow)
            print(f"  [{now - self.t0:5.1f} s] {done}/{total} measures; longest running: {waits}",
                  flush=True)

    def run(self) -> dict[str, dict[str, kit.Verdict]]:
        cols = list(DEFECTS) + list(self.wire)
        for r in self.rows:   # no evidence of an earlier run may stay beside this one's
            shutil.rmtree(self.rowdir(r), ignore_errors=True)
        stop = threading.Event()
        t = threading.Thread(target=self.progress, args=(stop,), daemon=True)
        t.start()
        execs = {name: ThreadPoolExecutor(n) for name, n in self.pools.items()}
        try:
            # Two waves: the Wine rows, then the others.  Every Windows
            # program of a run talks to one Wine server (single-threaded),
            # and beside the Linux rows' measures it became the run's
            # bottleneck: in one wave (2 cores, 81 rows) the Wine server
            # took 163 s of CPU and the Wine rows ~130 s; alone, the same
            # nine rows take 31 s and their Wine server 24 s, and the Linux
            # rows after them 119 s.  In each wave the columns with traced
            # runs go first (B3 then B1: Wine's traced runs queue for a
            # private prefix, kit.WINE_PRIVATE).
            def first(rc: tuple) -> int:
                return {"B3": 0, "B1": 1}.get(rc[1], 2)
            # The rows behind the proxies go in the first wave, in their own
            # pool: they use no Wine, and the Wine wave leaves the machine
            # half idle (the full matrix: 108.6 s without them; 119.6 s
            # with them in the second wave, in their pool).
            for wave in (True, False):
                order = sorted(((r, c) for r in self.rows for c in cols
                                if (r.platform == "win64" or bool(getattr(r, "proxy", None)))
                                == wave), key=first)
                futures = [execs[self.pool_of(r, c)].submit(self.one, r, c) for r, c in order]
                for f in futures:
                    f.result()
                if wave:
                    # The Windows programs are done: their Wine server goes
                    # now, not at exit (wineprefix.stop_server says why).
                    for p in {r.env.get("WINEPREFIX") for r in self.rows if r.platform == "win64"} - {None}:
                        wineprefix.stop_server(p)
        finally:
            for ex in execs.values():
                ex.shutdown()
            stop.set()
        return self.got


# ---- the table --------------------------------------------------------

def wine_b3_from_wire(got: dict) -> None:
    """Under Wine a fresh connection costs milliseconds (the Wine server
    accepts and hands the socket over), so the reused/fresh ratio is
    squeezed (stalled builds measured 4-23x, fixed ones 0.04-0.35x, and one
    stalled run 2.3x): the wire decides B3, the ratio stays a figure."""
    w = got.get("wire-lo")
    if w and w.state in (R, F) and got["B3"].state != kit.MEASURE_FAILED:
        b3 = got["B3"]
        got["B3"] = kit.Verdict(w.state, f"wire: {w.figure}; ratio (a figure under Wine): "
                                f"{b3.figure}", b3.data)


def judge(rows: list[Row], measured: dict, wire: list[str]) -> list[dict]:
    by_name = {r.name: r for r in rows}
    results = []
    for row in rows:
        got = measured[row.name]
        if row.platform == "win64":
            wine_b3_from_wire(got)
        base_name = ("real trunk (win64)" if row.platform == "win64" else
                     "real trunk" if row.counterpart else
                     None if row.real else "stock")
        base = measured.get(base_name) if base_name and base_name != row.name else None
        ok, why = criteria(row, got, base, measured)
        exp = dict(row.expect)
        for w in wire:   # the wire must agree with the row's B3
            exp[w] = NA if getattr(row, "proxy", None) else \
                row.expect["B3"] if row.expect["B3"] != NA else NA
        mism = [k for k in exp if got[k].state != exp[k]]
        b3 = got["B3"].data
        if "sends_per_response" in b3 and row.variant != "fpc-3.2.2":
            for k, want in syscall_expectations(row).items():
                have = b3["sends_per_response"] if k == "sendto/resp" \
                    else b3["tcp_nodelay_per_connection"]
                if have != want:
                    mism.append(k)
                    got[k] = kit.Verdict(str(have), f"strace shows {have}, expected {want}")
                    exp[k] = str(want)
        differs = []
        if row.counterpart in by_name:   # clone vs real, verdict for verdict
            clone = measured[row.counterpart]
            differs = [k for k in list(DEFECTS) + wire
                       if k in clone and clone[k].state != got[k].state]
        results.append({"row": row.name, "variant": row.variant, "real": row.real,
                        "platform": row.platform, "counterpart": row.counterpart or None,
                        "binary": os.path.relpath(row.binary, kit.TOP),
                        "flags": row.flags, "note": row.note, "target": row.target,
                        "criteria_met": ok, "criteria": why, "expected": exp,
                        "verdicts": {k: {"state": v.state, "figure": v.figure, "data": v.data}
                                     for k, v in got.items()},
                        "as_expected": not mism, "mismatches": mism,
                        "differs_from_clone": differs})
    return results


def print_table(results: list[dict], wire: list[str]) -> None:
    w = max(len(r["row"]) for r in results) + 1
    sec = patchset.security()
    hdr = (f"{'row':<{w}} " + " ".join(f"{d + ('*' if d in sec else ''):<5}" for d in DEFECTS)
           + " " + " ".join(f"{c:<9}" for c in wire)
           + f" {'send/rsp':<8} {'NODELAY':<7} {'reuse/off':<9} criteria")
    print(hdr)
    print("-" * len(hdr))
    for r in results:
        v = {k: kit.Verdict(x["state"], x["figure"], x["data"]) for k, x in r["verdicts"].items()}
        sends, nodelay, ratio = b3_columns(v["B3"])
        line = (f"{r['row']:<{w}} " + " ".join(f"{short(v[d]):<5}" for d in DEFECTS)
                + " " + " ".join(f"{short(v[c]) if c in v else '-':<9}" for c in wire)
                + f" {sends:<8} {nodelay:<7} {ratio:<9} "
                + f"{'meets' if r['criteria_met'] else 'FAILS'}: {r['criteria']}")
        if r["mismatches"]:
            line += "  UNEXPECTED: " + ", ".join(
                f"{k} {v[k].state} (expected {r['expected'][k]})" for k in r["mismatches"])
        if r["differs_from_clone"]:
            line += "  DIFFERS FROM CLONE: " + ", ".join(r["differs_from_clone"])
        print(line)
    print("\nREPRO = defect reproduced, fixed = not reproduced, ?? = inconclusive, "
          "FAIL = the measure failed twice (its errors follow, as FAILED lines); "
          "send/rsp = sendto per response (strace); NODELAY = setsockopt(TCP_NODELAY) "
          "per connection; reuse/off = median of requests 2..30 on one socket over the "
          "keep-alive-off median, same run")
    for d, why in sec.items():
        print(f"{d}* = security-relevant: {why}")


def print_figures(results: list[dict]) -> None:
    print("\nFigures behind each verdict:")
    for r in results:
        print(f"\n[{r['row']}]" + (f"  ({r['note']})" if r["note"] else ""))
        for k, v in r["verdicts"].items():
            if v["state"] == kit.MEASURE_FAILED:   # errors are failures, never figures
                print(f"  {k:<9} FAILED       {v['figure']}: "
                      + "; then ".join(v["data"].get("errors", [])))
                continue
            print(f"  {k:<9} {v['state']:<12} {v['figure']}")
            if v["data"].get("first_attempt_error"):
                print(f"     (second attempt, on a fresh server: the first failed: "
                      f"{v['data']['first_attempt_error']})")
        b3 = r["verdicts"]["B3"]["data"]
        if b3.get("sends_per_response") is not None:
            print(f"     sendto/response {b3['sends_per_response']}, TCP_NODELAY "
                  f"per connection {b3.get('tcp_nodelay_per_connection')}, "
                  f"select timeouts (ms) {b3.get('select_timeouts_ms')}")
        if b3.get("idle_gap_ratio") is not None:
            print(f"     controls: request 1 {b3['first_us']:.0f} us; 300 ms idle gap "
                  f"{b3['idle_gap_ratio']:.1f}x the keep-alive-off median "
                  f"({b3['fresh_p50_us']:.0f} us); one connection: local port "
                  f"{b3['local_ports']}, server conn ids {b3['server_conn_ids']}")


def show_reused(doc: dict, src: Path, out: Path) -> int:
    """An earlier run with the same inputs that passed (reuse.py): its
    table and figures, said to be reused; its evidence copied to OUT."""
    if src.resolve() != out.resolve():
        for r in doc["rows"]:   # as a measuring run, no older evidence beside it
            shutil.rmtree(out / rowdir_name(r["row"]), ignore_errors=True)
    said = reuse.show(doc, src, out, f"{doc['environment']['date_utc']}, {doc['wall_s']} s",
                      "the kit's files, the programs the rows run, this machine's tools, "
                      "the settings", ignore=("clients",))
    wire = [c for c in defects.CAPTURES if doc.get("capture")]
    print_table(doc["rows"], wire)
    print_figures(doc["rows"])
    print(f"\n{len(doc['rows'])} rows as expected, 0 not: {said}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--rows", default=os.environ.get("KIT_ROWS") or None,
                    help="comma-separated row names (default: $KIT_ROWS, else all)")
    ap.add_argument("--fault-row", metavar="SERVER",
                    help="add a row for SERVER with stock's expectations (tests: a "
                         "deliberately broken server must fail its row and the run)")
    ap.add_argument("--out", default=str(kit.TOP / "results" / "latest"))
    ap.add_argument("--no-strace", action="store_true")
    ap.add_argument("--no-capture", action="store_true")
    ap.add_argument("--list", action="store_true", help="print the row names and exit")
    ap.add_argument("--variants", action="store_true",
                    help="print the model variants the rows (--rows) run, one a line, and exit "
                         "(what a narrowed run must build: tests/fresh)")
    ap.add_argument("--reuse", metavar="DIR", action="append", default=[],
                    help="show DIR's run instead of measuring when it passed with the same "
                         "inputs (repro/harness/reuse.py; KIT_REMEASURE=1 measures again)")
    args = ap.parse_args()
    kit.raise_fd_limit()

    rows = all_rows()   # the shared Wine prefix is made once a run measures
    if args.list:
        print("\n".join(r.name for r in rows))
        return 0
    if args.rows:
        wanted = args.rows.split(",")
        unknown = [w for w in wanted if w not in {r.name for r in rows}]
        if unknown:
            print("unknown rows: " + ", ".join(unknown), file=sys.stderr)
            return 2
        rows = [r for r in rows if r.name in wanted]
    if args.variants:
        print("\n".join(sorted({r.variant for r in rows if not r.real})))
        return 0
    use_strace = kit.have_strace() and not args.no_strace
    if not use_strace:
        print("note: strace evidence skipped: "
              + ("--no-strace given" if args.no_strace else "strace is not installed"))
    no_capture = "--no-capture given" if args.no_capture else defects.can_capture()
    if no_capture:
        print(f"note: wire captures skipped: {no_capture}")
    if not TRUNK_FPC.exists():
        print("TEST: matrix real-trunk rows [SKIP] no trunk toolchain "
              "(make fpc-trunk FPCSRC=/path/to/fpcsource)")
    for why in SKIPPED:
        print(f"TEST: matrix {why}")
    if args.fault_row:
        rows.append(Row(f"fault {Path(args.fault_row).name}", "stock",
                        expect=expect([]), path=Path(args.fault_row).resolve(),
                        note="a deliberately broken server: every measure must fail"))
    missing = sorted({str(r.binary) for r in rows if not r.binary.exists() and not r.real})
    if missing:
        subprocess.run(["make", "-C", str(kit.TOP), "--no-print-directory",
                        *[os.path.relpath(m, kit.TOP) for m in missing]], check=True)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    wire = [] if no_capture else list(defects.CAPTURES)
    inputs = reuse.inputs([r.binary for r in rows] + [kit.PROBE, kit.STRACE_ANALYSE, kit.PCAP_ANALYSE],
                          {"rows": [r.name for r in rows], "strace": use_strace, "wire": wire,
                           "fault_row": args.fault_row,
                           # the proxies' own programs (their configs are kit files)
                           **({"proxies": proxies.versions()}
                              if any(getattr(r, "proxy", None) for r in rows) else {})})
    if args.reuse:
        doc, src, why = reuse.passed_run([Path(d) for d in args.reuse], "matrix.json", inputs)
        if doc:
            return show_reused(doc, src, out)
        print(f"matrix: measuring ({why})")
    prefix = shared_wine_prefix() if any(r.platform == "win64" for r in rows) else None
    for r in rows:
        if prefix and r.platform == "win64":
            r.env = {**r.env, "WINEPREFIX": prefix}
    t0 = time.monotonic()
    print(f"measuring {len(rows)} rows x {len(DEFECTS) + len(wire)} columns "
          f"({JOBS} light, {HEAVY_JOBS['B7']} B7, {HEAVY_JOBS['B8']} B8, {WIRE_JOBS} captures "
          "at once) ...",
          flush=True)
    runner = Runner(rows, out, use_strace, wire)
    measured = runner.run()
    results = judge(rows, measured, wire)
    print()
    print_table(results, wire)
    print_figures(results)
    failures = sum(1 for r in results
                   if not (r["as_expected"] and r["criteria_met"]) or r["differs_from_clone"])
    doc = {"environment": environment(), "inputs": inputs, "passed": failures == 0,
           "strace": use_strace,
           "capture": None if no_capture else ["lo", "veth"],
           "capture_skipped": no_capture, "wall_s": round(time.monotonic() - t0, 1),
           "b3_thresholds": {"stall_ratio": kit.B3_STALL_RATIO,
                             "clean_ratio": kit.B3_CLEAN_RATIO},
           "rows": results,
           "measure_times": {k: {"start_s": a, "took_s": b}
                             for k, (a, b) in sorted(runner.took.items())}}
    (out / "matrix.json").write_text(json.dumps(doc, indent=1))
    print(f"\n{len(results) - failures} rows as expected, {failures} not "
          f"({doc['wall_s']} s); evidence in {os.path.relpath(out, Path.cwd())}/")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
