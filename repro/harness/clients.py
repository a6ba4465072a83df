#!/usr/bin/env python3
"""clients.py - the defects as real clients meet them (part of `make repro`).

curl reusing one connection across URLs (B3), Node's http.Agent and
urllib3's pool sending back to back on a kept socket (B4), and wrk at c=1
and c=16 (keep-alive throughput); beside them h2load, the benchmark of
Horse PR #554, with keep-alive on, off and with the series (B3, B4), and
undici pipelining (B2), on the model and the real trunk.  Each client is a
script in repro/clients/ that prints one JSON object; this runs them
against several servers and states what each run shows.  Verdicts are
counts and same-run ratios; wrk's and h2load's rates are figures only.

Usage: repro/harness/clients.py [--out DIR]   (writes DIR/clients.json, DIR/h2load.md)
Exit status: 1 if an expected outcome did not hold.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kit  # noqa: E402
import defects  # noqa: E402  (the registry of measures, repro/defects/)
import reuse  # noqa: E402

CLIENTS = kit.TOP / "repro" / "clients"

# (label, binary, flags, curl expectation with --horse: stall | clean | None)
SERVERS = [
    ("stock", kit.binary("stock"), [], None),
    ("announce-close", kit.binary("announce-close"), [], None),
    ("stock --horse", kit.binary("stock"), ["--horse"], "stall"),
    *[(f"{b3} --horse", kit.binary(b3), ["--horse"], "clean") for b3 in kit.patchset.fixing("B3")],
    ("all --horse", kit.binary("all"), ["--horse"], "clean"),
]


def real_servers() -> list[tuple]:
    """The real TFPHttpServer: Debian's 3.2.2 and trunk, stock and all."""
    out = [(f"real FPC {exe.parent.name[4:]}", exe, [], None)
           for exe in sorted(kit.BUILD.glob("fpc-3.*/fpserver"))]
    for label, s, want in (("real trunk", "stock", "stall"), ("real trunk + all", "all", "clean")):
        exe = kit.BUILD / "real-trunk" / s / "fpserver"
        if exe.exists():
            out.append((f"{label} --horse", exe, ["--horse"], want))
    return out


def run_client(argv: list[str], timeout: float = 120) -> dict:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if r.returncode == 4:
        # The reason: the script's own words, or lib.sh's SKIP line.
        skip = re.sub(r"^TEST: \S+ \[SKIP\] ", "", r.stdout.strip())
        return {"skipped": r.stderr.strip() or skip or "tool missing"}
    if r.returncode != 0 or not r.stdout.strip():
        return {"failed": r.returncode, "stderr": r.stderr.strip()[-300:]}
    return json.loads(r.stdout)


# curl's verdict is a same-run ratio of latencies, and `make repro` runs
# the matrix beside it: curl and its server run in the real-time class
# meanwhile (kit.measure_prefix; as root, otherwise as is).
def curl_run(srv: kit.Server) -> dict:
    with srv.measuring():
        return run_client([*kit.measure_prefix(), str(CLIENTS / "curl-reuse.sh"),
                           srv.address, str(srv.port), "10"])


def twice_if(run, unsure) -> dict:
    """run(1), and when unsure(its result) run(2), which decides, with the
    first beside it ('first_run'): a verdict a loaded machine can bend is
    measured once more, and a server that truly shows it (or not) shows it
    the second time as the first."""
    first = run(1)
    return run(2) | {"first_run": first} if unsure(first) else first


def clients_for(srv: kit.Server, want: str | None) -> dict:
    h, p = srv.address, str(srv.port)
    def unsure(curl: dict) -> bool:
        # Between the bounds, or not what the server is expected to show:
        # noise from a loaded machine (a stall is ~100x, a clean server
        # ~1x; c59, beside four steps, had a TCP_NODELAY server's reused
        # URLs at 1.8 ms where the fresh ones' quartile was 0.15 ms, 11.5x,
        # where a stall holds each for the delayed ACK).
        state = curl_state(curl)
        return "num_connects" in curl and (state is None or bool(want and state != want))
    curl = twice_if(lambda n: curl_run(srv), unsure)
    return {
        "curl": curl,
        "node": run_client(["node", str(CLIENTS / "node-agent.js"), h, p, "200", "0"]),
        "urllib3": run_client(["/usr/bin/python3", str(CLIENTS / "urllib3-pool.py"), h, p, "200", "0"]),
        # B14: a HEAD, then a GET on the same connection, by curl, Python's
        # http.client and Node's http.Agent.
        "head": run_client([str(CLIENTS / "head-then-get.sh"), h, p]),
        # B16: requests the server rejects while reading them, by curl.
        "rejected": run_client([str(CLIENTS / "rejected-request.sh"), h, p]),
        # wrk's rates are figures only: 1 s each, niced, so that a load
        # generator at full speed does not slow the matrix running beside it.
        "wrk-c1": run_client(["nice", "-n", "10", str(CLIENTS / "wrk.sh"), h, p, "1", "1"]),
        "wrk-c16": run_client(["nice", "-n", "10", str(CLIENTS / "wrk.sh"), h, p, "16", "1"]),
    }


def curl_figure(c: dict) -> tuple[str, float | None]:
    """The figure, and the ratio that decides: the lower quartile (3rd
    fastest of 9) of URLs 2..10 over that of the same URLs on a fresh
    connection each, same run.  The delayed ACK holds the reused requests
    (~40 ms each) but for one now and then that a quick ACK lets through
    (the real trunk's fastest reused one once took 272 us, its median 45.7
    ms); a loaded machine delays some requests of either kind, which moves
    medians (a clean coalesce-writes server's came out at 71x beside four
    builds) but seldom seven of nine.  URL 1 is no control: it can stall
    itself (10-28 ms seen on the real trunk)."""
    if "num_connects" not in c:
        return f"curl did not run: {c}", None
    conns = sum(c["num_connects"])
    fresh = c.get("p50_fresh_us")
    lo_rest, lo_fresh = c.get("q1_rest_us"), c.get("q1_fresh_us")
    ratio = lo_rest / lo_fresh if lo_rest is not None and lo_fresh else None
    return (f"curl, 10 URLs: {conns} connection(s); URL 1 {c['p50_first_us']} us, "
            f"URLs 2..10 p50 {c['p50_rest_us']} us, lower quartile {lo_rest} us; a fresh "
            f"connection per URL: median {fresh} us, lower quartile {lo_fresh} us"
            + (f" (quartile over quartile {ratio:.1f}x)" if ratio else "")), ratio


def curl_state(c: dict) -> str | None:
    """stall, clean, or None (between the bounds: measured once more)."""
    _, ratio = curl_figure(c)
    # The matrix's rule (B3's b3_against) on the quartiles' ratio: one
    # control, the fresh connections' quartile, as the unit.
    return defects.module("B3").b3_against(ratio, [1.0]) if ratio is not None else None


def pool_figure(name: str, c: dict) -> str:
    if "stale_failures" not in c:
        return f"{name} did not run: {c}"
    hdrs = ", ".join(f"{k}: {v}" for k, v in c.get("connection_headers", {}).items())
    return (f"{name}, 200 back to back: {c['stale_failures']} stale-socket failures, "
            f"{c['reused']} reused sockets, Connection headers [{hdrs}]")


def head_figure(c: dict) -> str:
    """B14 through real clients: per client, HEAD and GET on one connection
    or what went wrong."""
    if "clients" not in c:
        return f"head-then-get did not run: {c}"
    return "HEAD then GET: " + "; ".join(
        f"{n} " + ("both answered on one connection" if r["both_on_one"] else
                   r.get("error") or f"GET {r.get('get_status')} on "
                   + ("the same" if r.get("reused") else "another") + " connection")
        for n, r in c["clients"].items())


def head_judge(variant: str, c: dict) -> list[str]:
    """On a kept connection: with B14 fixed every client gets the HEAD's
    and the GET's answers on one connection; with it, Node's http.Agent
    never does (its parser meets the stray content, or drops the socket).
    curl and http.client are figures only there: each drops stray bytes
    that come in the same read as the head (curl: "Excess found") and fails
    only on those that come after it, which the server's two writes make
    a matter of timing."""
    if "clients" not in c:
        return [f"head-then-get did not run: {c}"]
    ok = {n for n, r in c["clients"].items() if r["both_on_one"]}
    if "B14" in kit.patchset.fixed_by(variant):
        return [f"B14 fixed, yet HEAD then GET failed for {', '.join(sorted(set(c['clients']) - ok))}"
                ] if ok != set(c["clients"]) else []
    return ["B14 not fixed, yet node got HEAD and GET on one connection"] if "node" in ok else []


def rejected_figure(c: dict) -> str:
    """B16 through curl: the status each rejected request got, or curl's
    error (without the fix: exit 52, "Empty reply from server")."""
    if "clients" not in c:
        return f"rejected-request did not run: {c}"
    return "rejected requests: " + "; ".join(
        f"{n} " + (str(r["status"]) if r["status"] else r.get("error", "no status"))
        for n, r in c["clients"].items())


B16_WANT = {"invalid-request-line": 400, "header-too-long": 431}


def rejected_judge(variant: str, c: dict) -> list[str]:
    """With B16 fixed curl gets each rejection's status; without it the
    request line every tree rejects gets none (curl exit 52).  The long
    header is a figure there (a tree without MaxLineLength serves it)."""
    if "clients" not in c:
        return [f"rejected-request did not run: {c}"]
    got = {n: r["status"] for n, r in c["clients"].items()}
    if "B16" in kit.patchset.fixed_by(variant):
        return [] if got == B16_WANT else [f"B16 fixed, yet curl got {got} (want {B16_WANT})"]
    line = c["clients"]["invalid-request-line"]
    return [] if line["status"] is None and line["curl_exit"] == 52 else [
        f"B16 not fixed, yet curl's invalid request line got {line}"]


def wrk_figure(name: str, c: dict) -> str:
    if "rps" not in c:
        return f"{name} did not run: {c}"
    return (f"{name}: {c['rps']:.0f} req/s, p50 {c['latency_p50_us']} us, "
            f"read errors {c['errors']['read']}")


# ---- h2load (PR #554's benchmark) and undici (a client that pipelines) --

# PR #554 ran `h2load -n 50000 -c 1`; bounded here to N requests (h2load.sh:
# a stalled server costs N x ~44 ms, one that answers nothing 5 s).
H2LOAD_N = 100
H2LOAD_SEED_N = 50000
# keep-alive on = Horse 3.3.4 (--horse); off = Horse with PR #554 (its
# thread mode, KeepConnections left False); raw = TFPHttpServer's defaults.
H2LOAD_MODES = {"on": kit.HORSE, "off": ["--thread-mode", "thread"], "raw": []}
# PR #554's table (p50, req/s), printed beside ours.
H2LOAD_SEED = {"on": "44 ms, 0 (bench timeout)", "off": "0.48 ms, 1 459",
               "raw": "0.41 ms, 1 531 (no Horse)"}
# The sets and the modes each is measured in: the series needs on and off
# for its ratio.
H2LOAD_SETS = {"stock": ("on", "off", "raw"), "all": ("on", "off")}
# Latencies each mode's p50 pools, and the seconds after which no further
# h2load run starts (h2load.sh): spread over several runs, so that a burst
# of load beside them (the matrix) does not make a p50.  Without keep-alive
# one run may hold one latency (B4): off, the ratio's base, and raw pool
# runs of ~0.1 s; with it a fast server's run of N takes milliseconds
# (five of them), a stalled one's takes N x ~44 ms (one).
H2LOAD_SAMPLES = {"on": (5 * H2LOAD_N, 1), "off": (25, 0), "raw": (9, 0)}


def load_trees() -> list[tuple[str, object]]:
    """(tree, set -> server binary or None): the model and the real trunk."""
    def real(s: str):
        exe = kit.BUILD / "real-trunk" / s / "fpserver"
        return exe if exe.exists() else None
    return [("model", kit.binary), ("real trunk", real)]


def served(binary: Path, flags: list[str], log: Path, client: list[str],
           tail: list[str] = (), measure: bool = False) -> dict:
    """client HOST PORT *tail against a fresh server (both in the real-time
    class when they `measure` a latency, kit.measure_prefix); the
    connections that served requests (from the server's log) added.  A
    server that would not start is a failed run, never a missing one."""
    try:
        with kit.Server([str(binary), "--port", "0", *flags], log_path=log) as srv, \
             (srv.measuring() if measure else nullcontext()):
            res = run_client([*(kit.measure_prefix() if measure else []), *client,
                              srv.address, str(srv.port), *tail])
    except (kit.KitError, subprocess.TimeoutExpired, ValueError) as e:
        return {"failed": f"{type(e).__name__}: {e}"}
    res["served_connections"] = len({c for c, _ in kit.served_requests(srv.log)})
    return res


def h2load_ratio(r: dict, base: str = "off") -> float | None:
    """p50 on over p50 of mode `base` (off, or raw where the set runs it)."""
    on, other = r.get("on", {}).get("p50_us"), r.get(base, {}).get("p50_us")
    return on / other if on and other else None


def h2load_apart(r: dict) -> bool:
    """Three quarters of the kept connection's requests slower than three
    quarters of the fresh connections' (on's lower quartile above off's
    upper one)."""
    on, off = r.get("on", {}).get("q1_us"), r.get("off", {}).get("q3_us")
    return bool(on and off and on > off)


def h2load_controls(r: dict) -> list[int]:
    """The fresh-connection p50s measured beside on: off (a thread each,
    Horse with PR #554) and raw (TFPHttpServer's defaults: no thread)."""
    return [r[m]["p50_us"] for m in ("off", "raw") if r.get(m, {}).get("p50_us")]


def h2load_state(r: dict) -> str | None:
    """stall, clean, or None (the run says nothing: measured once more):
    on's p50 against its controls' as the matrix judges B3
    (B3's b3_against: a stall against the faster, clean against the
    slower).  A busy machine slows the fresh connections, off's new
    thread most (woken a time slice late: c90, off's p50 5.4 ms, 8.1x
    twice), and not the delayed ACK that holds the kept one's; so where
    the ratios say nothing the order decides for a stall: apart from off
    (h2load_apart).  A clean server's kept requests skip the connect and
    the thread, and are not."""
    on, controls = r.get("on", {}).get("p50_us"), h2load_controls(r)
    if not on or not controls:
        return None
    state = defects.module("B3").b3_against(on, controls)
    if state is None and on > kit.B3_CLEAN_RATIO * min(controls) and h2load_apart(r):
        return "stall"
    return state


def h2load_set(binary: Path, s: str, out: Path, tag: str) -> dict:
    """h2load against the set in each of its modes; a set h2load_state
    leaves undecided (a loaded machine) is measured once more, and the
    second run decides."""
    # The ratio is of latencies, measured beside the matrix: in the
    # real-time class, as curl's.
    def run(mode: str, n: int) -> dict:
        return served(binary, H2LOAD_MODES[mode], out / f"h2load_{tag}_{mode}_{n}.server.log",
                      [str(CLIENTS / "h2load.sh")],
                      [str(H2LOAD_N), *map(str, H2LOAD_SAMPLES[mode])],
                      measure=True)
    def between(r: dict) -> bool:
        return h2load_ratio(r) is not None and h2load_state(r) is None
    return twice_if(lambda n: {m: run(m, n) for m in H2LOAD_SETS[s]}, between)


def undici_sets() -> list[str]:
    """The sets undici runs against (B2: pipelining)."""
    return ["stock", *kit.patchset.fixing("B2"), "all"]


def model_variants() -> set[str]:
    """Every model variant some client runs (--variants)."""
    return {Path(b).parent.name for _, b, _, _ in SERVERS} | set(H2LOAD_SETS) | set(undici_sets())


def undici_run(binary: Path, out: Path, tag: str, s: str) -> dict:
    """undici-pipeline.js against Horse's settings (pipelining needs a
    kept connection).  Once more when set S does not show what it is
    expected to (undici_judge): B2 needs the two pings in one read while
    /slow runs, and on a loaded machine the client can send them apart
    (c66f, the fresh step beside five others: all 6 of the real trunk's
    stock answered); twice_if."""
    def run(n: int) -> dict:
        return served(binary, kit.HORSE, out / f"undici_{tag}{'.again' * (n - 1)}.server.log",
                      ["node", str(CLIENTS / "undici-pipeline.js")])
    return twice_if(run, lambda c: "completed" in c and bool(undici_judge(s, c)))


def undici_install() -> str | None:
    """None when undici is there (cached in build/npm), else why not."""
    try:
        r = subprocess.run([str(CLIENTS / "undici-install.sh")], capture_output=True,
                           text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "undici-install.sh did not finish in 300 s"
    if r.returncode == 0:
        return None
    why = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
    return ("skip: " if r.returncode == 4 else "") + why


def load_clients(out: Path) -> dict:
    """Every h2load and undici run, side by side (two at a time)."""
    t0 = time.monotonic()
    sets = undici_sets()
    jobs = {}
    with ThreadPoolExecutor(2) as ex:
        for tree, exe in load_trees():
            for s in H2LOAD_SETS:
                if exe(s):
                    jobs[("h2load", tree, s)] = ex.submit(h2load_set, exe(s), s, out,
                                                          f"{tree}_{s}".replace(" ", "_"))
        why = undici_install()
        for tree, exe in load_trees():
            for s in sets:
                if exe(s) and not why:
                    jobs[("undici", tree, s)] = ex.submit(undici_run, exe(s), out,
                                                          f"{tree}_{s}".replace(" ", "_"), s)
    res = {"h2load": {}, "undici": {}, "undici_install": why,
           "elapsed_s": round(time.monotonic() - t0, 1)}
    for (client, tree, s), f in jobs.items():
        res[client][f"{tree} {s}"] = f.result()
    for tree, exe in load_trees():
        for client, c_sets in (("h2load", H2LOAD_SETS), ("undici", sets)):
            for s in c_sets:
                if not exe(s):
                    res[client][f"{tree} {s}"] = {"skipped": f"no server for {s} (make real-trunk)"}
                elif client == "undici" and why:
                    res[client][f"{tree} {s}"] = {"skipped": why.removeprefix("skip: ")}
    return res


def load_skip(r: dict) -> str | None:
    """Why a run (or one of a set's h2load modes) was skipped, if it was."""
    for c in (r, *(v for v in r.values() if isinstance(v, dict))):
        if "skipped" in c:
            return c["skipped"]
    return None


def h2load_counts(c: dict) -> str:
    """'100 of 100' for one run, '1 of 100 in each of 5 runs' or the list."""
    done, n = c["completed"], c["requests"]
    if len(done) == 1:
        return f"{done[0]} of {n}"
    return f"{done[0]} of {n} in each of {len(done)} runs" if len(set(done)) == 1 else f"{done} of {n}"


def h2load_rps(c: dict) -> str:
    """h2load's req/s, of the median run."""
    rps = sorted(r["rps"] for r in c["runs"] if "rps" in r)
    return f"{rps[(len(rps) - 1) // 2]:.0f}" if rps else "?"


def h2load_quartiles(r: dict) -> str:
    """', on / raw R x, lower quartile on Q1 us, upper quartile off Q3 us'
    where known: what h2load_state weighs beside on / off."""
    on, off = r.get("on", {}).get("q1_us"), r.get("off", {}).get("q3_us")
    raw = h2load_ratio(r, "raw")
    return ((f", on / raw {raw:.1f}x" if raw else "")
            + (f", lower quartile on {on} us, upper quartile off {off} us" if on and off else ""))


def h2load_figure(mode: str, c: dict) -> str:
    if "completed" not in c:
        return f"keep-alive {mode}: h2load did not run: {c}"
    failed = sum(r.get("failed", 0) for r in c["runs"])
    return (f"keep-alive {mode}: {h2load_counts(c)} completed ({failed} failed), p50 "
            f"{c['p50_us']} us over {c['samples']}, {h2load_rps(c)} req/s, "
            f"{c['served_connections']} connection(s)")


def h2load_judge(s: str, r: dict) -> list[str]:
    """What must hold, from the defects the set fixes (patchset.py): all N
    answered on one kept connection per run; on against its controls
    stalled (h2load_state) unless B3 is fixed, clean if it is; with
    keep-alive off h2load gets 1 response when the server closes without
    "Connection: close" (B4: h2load does not reconnect then), all N when
    it announces the close."""
    fixed, bad = kit.patchset.fixed_by(s), []
    if any("completed" not in r[m] for m in H2LOAD_SETS[s]):
        return [f"h2load did not run: {r}"]
    on = r["on"]
    if set(on["completed"]) != {H2LOAD_N} or on.get("served_connections") != len(on["completed"]):
        bad.append(f"keep-alive on: {h2load_counts(on)} on "
                   f"{on.get('served_connections')} connection(s)")
    ratio, state = h2load_ratio(r), h2load_state(r)
    if ratio is None:
        bad.append("no p50 for on and off")
    elif "B3" in fixed and state != "clean":
        bad.append(f"p50 on/off {ratio:.1f}x: still stalls")
    elif "B3" not in fixed and state != "stall":
        bad.append(f"p50 on/off {ratio:.1f}x{h2load_quartiles(r)}: no stall")
    want = H2LOAD_N if "B4" in fixed else 1
    for mode in H2LOAD_SETS[s][1:]:
        if set(r[mode]["completed"]) != {want}:
            bad.append(f"keep-alive {mode}: {h2load_counts(r[mode])} completed, "
                       f"expected {want} per run")
    return bad


def undici_figure(c: dict) -> str:
    if "completed" not in c:
        return f"undici did not run: {c}"
    first = c.get("first_run")
    return (f"undici {c['undici']}, pipelining {c['pipelining']}, {c['rounds']} x (/slow + 2 /ping): "
            f"{c['completed']} of {c['requests']} completed, {c['timed_out']} timed out "
            f"({c['timeout_ms']} ms), {c['connections']} connection(s), max {c['max_in_flight']} "
            f"in flight, errors {c['errors']}"
            + (f" (second run; the first: {first.get('completed')} of {first.get('requests')} "
               f"completed, {first.get('timed_out')} timed out)" if first else ""))


def undici_judge(s: str, c: dict) -> list[str]:
    """B2 through undici: with the defect a pipelined request the server
    has read waits until the client gives up; fixed, every one is answered.
    The client must have pipelined (>= 2 in flight), or the run proves nothing."""
    if "completed" not in c:
        return [f"undici did not run: {c}"]
    bad = []
    if c["max_in_flight"] < 2:
        bad.append(f"undici never had 2 requests in flight ({c['max_in_flight']})")
    if "B2" in kit.patchset.fixed_by(s):
        if c["completed"] != c["requests"] or c["timed_out"]:
            bad.append(f"{c['completed']} of {c['requests']} completed, {c['timed_out']} timed out")
    elif not c["timed_out"] or c["completed"] == c["requests"]:
        bad.append(f"no pipelined request went unanswered ({c['completed']} of {c['requests']})")
    return bad


def h2load_table(load: dict) -> str:
    """PR #554's table beside this run's (markdown: out/h2load.md)."""
    lines = [f"| server | keep-alive | PR #554 (`-n {H2LOAD_SEED_N}`): p50, req/s | this run "
             f"(`h2load --h1 -n {H2LOAD_N} -c 1`): completed, p50, req/s | at this p50, "
             f"{H2LOAD_SEED_N} requests |", "| --- | --- | --- | --- | --- |"]
    for key, r in load["h2load"].items():
        for mode in [m for m in H2LOAD_MODES if m in r]:
            c = r[mode]
            if "completed" not in c:
                continue
            seed = H2LOAD_SEED[mode] if key.endswith(" stock") else "-"
            t = H2LOAD_SEED_N * c["p50_us"] / 1e6
            proj = ((f"{t / 60:.0f} min" if t >= 60 else f"{t:.0f} s")
                    if set(c["completed"]) == {H2LOAD_N}
                    else f"{max(c['completed'])} answered, then h2load gives up")
            lines.append(f"| {key} | {mode} | {seed} | {h2load_counts(c)}, "
                         f"{c['p50_us']} us, {h2load_rps(c)} | {proj} |")
        ratio, raw = h2load_ratio(r), h2load_ratio(r, "raw")
        if ratio:
            seed = "44 / 0.48 = 92x" if key.endswith(" stock") else "-"
            lines.append(f"| {key} | on/off p50 | {seed} | {ratio:.1f}x | |")
        if raw:
            seed = "44 / 0.41 = 107x" if key.endswith(" stock") else "-"
            lines.append(f"| {key} | on/raw p50 | {seed} | {raw:.1f}x | |")
    return "\n".join(lines) + "\n"


def load_verdicts(load: dict, runs: list, failures: list) -> list[tuple[str, str, str]]:
    """The h2load and undici figures (added to runs) and verdicts (failures
    added); returns (TEST name, state, why) per set."""
    tests = []
    for client, judge in (("h2load", h2load_judge), ("undici", undici_judge)):
        for key, r in load[client].items():
            s, name = key.split()[-1], f"clients {client} {key}"
            why = load_skip(r)
            if why:
                tests.append((name, "SKIP", why))
                continue
            if client == "h2load":
                for mode in H2LOAD_SETS[s]:
                    runs.append({"client": "h2load", "server": f"{key} ({mode})",
                                 "figure": h2load_figure(mode, r[mode])})
                ratio = h2load_ratio(r)
                first = h2load_ratio(r.get("first_run", {}))
                runs.append({"client": "h2load", "server": key, "figure":
                             (f"p50 keep-alive on / off: {ratio:.1f}x" if ratio else "no ratio")
                             + h2load_quartiles(r)
                             + (f" (second run; the first: {first:.1f}x)" if first else "")})
            else:
                runs.append({"client": "undici", "server": f"{key} --horse", "figure": undici_figure(r)})
            bad = judge(s, r)
            failures += [f"{name}: {b}" for b in bad]
            tests.append((name, "FAIL" if bad else " OK ", "; ".join(bad)))
    return tests


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(kit.TOP / "results" / "latest" / "clients"))
    ap.add_argument("--reuse", metavar="DIR", action="append", default=[],
                    help="show DIR's run instead of running the clients when it passed with "
                         "the same inputs (reuse.py; KIT_REMEASURE=1 runs them again)")
    ap.add_argument("--variants", action="store_true",
                    help="print the model variants the clients run, one a line, and exit")
    a = ap.parse_args()
    if a.variants:
        print("\n".join(sorted(model_variants())))
        return 0
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    missing = [t for t in ("curl", "node", "wrk") if not shutil.which(t)]
    if missing:
        for label, *_ in SERVERS:
            print(f"TEST: clients {label} [SKIP] missing {' '.join(missing)}")
        return 4
    servers = SERVERS + real_servers()
    # undici's version is pinned in repro/clients/undici-install.sh (a kit file).
    programs = [Path(b) for _, b, _, _ in servers] + list(kit.BUILD.glob("real-trunk/*/fpserver"))
    inputs = reuse.inputs(programs, {"servers": [s[0] for s in servers]})
    if a.reuse:
        doc, src, why = reuse.passed_run([Path(d) for d in a.reuse], "clients.json", inputs)
        if doc:
            said = reuse.show(doc, src, out, doc["date_utc"],
                              "the kit's files, the servers and clients, this machine's tools")
            print("\n".join(doc["printed"]))
            print(f"clients: {said}")
            return 0
        print(f"clients: running ({why})")

    def one(entry):
        label, binary, flags, want = entry
        srv = kit.Server([str(binary), "--port", "0", *flags],
                         log_path=out / (label.replace(" ", "_") + ".server.log"))
        with srv:
            return label, clients_for(srv, want)

    # Each server waits on its own clients: run them side by side (wrk's
    # rates are figures only; the verdicts are counts and same-run ratios).
    # h2load and undici start their own servers, beside the others.
    with ThreadPoolExecutor(1) as lx:
        load_job = lx.submit(load_clients, out)
        with ThreadPoolExecutor(3) as ex:
            results = dict(ex.map(one, servers))
        load = load_job.result()
    runs, failures = [], []
    for label, binary, flags, want in servers:
        res = results[label]
        fig = curl_figure(res["curl"])[0]
        if "first_run" in res["curl"]:
            fig += f" (second run; the first: {curl_figure(res['curl']['first_run'])[0]})"
        runs.append({"client": "curl", "server": label, "figure": fig})
        runs.append({"client": "Node http.Agent", "server": label,
                     "figure": pool_figure("node", res["node"])})
        runs.append({"client": "urllib3", "server": label,
                     "figure": pool_figure("urllib3", res["urllib3"])})
        runs.append({"client": "HEAD then GET", "server": label, "figure": head_figure(res["head"])})
        runs.append({"client": "curl rejected", "server": label,
                     "figure": rejected_figure(res["rejected"])})
        runs.append({"client": "wrk", "server": label,
                     "figure": wrk_figure("c=1", res["wrk-c1"]) + "; "
                     + wrk_figure("c=16", res["wrk-c16"])})
        # What must hold (counts and same-run ratios only):
        curl = res["curl"]
        if want and "num_connects" in curl:
            if sum(curl["num_connects"]) != 1:
                failures.append(f"{label}: curl opened {sum(curl['num_connects'])} connections")
            if want == "stall" and curl_state(curl) != "stall":
                failures.append(f"{label}: curl shows no stall ({fig})")
            if want == "clean" and curl_state(curl) != "clean":
                failures.append(f"{label}: curl still stalls ({fig})")
        if want:   # the keep-alive servers (--horse): B14 on a kept connection
            failures += [f"{label}: {b}" for b in head_judge(Path(binary).parent.name, res["head"])]
        if not Path(binary).parent.name.startswith("fpc-"):   # released FPC: a figure
            failures += [f"{label}: {b}" for b in rejected_judge(Path(binary).parent.name,
                                                                 res["rejected"])]
        if label == "announce-close":
            for name in ("node", "urllib3"):
                c = res[name]
                if c.get("stale_failures") != 0 or c.get("reused") != 0:
                    failures.append(f"{label}: {name} reused an announced-closed socket: {c}")
                if set(c.get("connection_headers", {})) != {"close"}:
                    failures.append(f"{label}: {name} saw Connection {c.get('connection_headers')}")

    load_tests = load_verdicts(load, runs, failures)
    ran = any("completed" in c for r in load["h2load"].values() for c in r.values()
              if isinstance(c, dict))
    if ran:
        (out / "h2load.md").write_text(h2load_table(load))

    printed = ["Real clients:"]
    printed += [f"  {r['server']:<26} {r['client']:<16} {r['figure']}" for r in runs]
    if ran:
        printed.append(f"h2load against PR #554's table (same run; {out}/h2load.md):")
        printed.append(h2load_table(load).rstrip("\n"))
    printed.append(f"h2load and undici: {load['elapsed_s']} s, beside the other clients")
    for label, *_ in servers:
        bad = [f for f in failures if f.startswith(label + ":")]
        printed.append(f"TEST: clients {label} [{'FAIL' if bad else ' OK '}]"
                       + (" " + "; ".join(bad) if bad else ""))
    printed += [f"TEST: {name} [{state}]" + (f" {why}" if why else "")
                for name, state, why in load_tests]
    failed = failures or any(state == "FAIL" for _, state, _ in load_tests)
    doc = {"runs": runs, "results": results, "load": load, "failures": failures,
           "printed": printed, "inputs": inputs, "passed": not failed,
           "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (out / "clients.json").write_text(json.dumps(doc, indent=1))
    print("\n".join(printed))
    print(f"clients: {len(failures)} unexpected outcome(s); evidence in {out}/")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
