"""B3's measure (DESIGN section 3).

The defect: header block and body are two `send()`s, TCP_NODELAY never set
(and its wire captures). Its measure (its verdict, its figures), found by
name through the registry, repro/defects/__init__.py: MEASURES, its columns;
CAPTURES and measure_capture, its columns on the wire. What every measure
shares (servers, rows, verdicts, the probe) is repro/harness/kit.py.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from kit import (_server, B3_CLEAN_RATIO, B3_STALL_RATIO, BUILD, HORSE, KitError,
                 probe, Row, served_requests, SERVER_BUILD, SLOW, strace_analysis, TOP,
                 Verdict, WINE_PRIVATE)  # noqa: E402


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


MEASURES = {"B3": lambda r, o, st: measure_b3(r, o, st)}
CAPTURES = {"wire-lo": False, "wire-veth": True}   # column -> over veth
