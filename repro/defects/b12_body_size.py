"""B12's measure (DESIGN section 3).

The defect: a request body's size. Its measure (its verdict, its figures),
found by name through the registry, repro/defects/__init__.py: MEASURES, its
columns. What every measure shares (servers, rows, verdicts, the probe) is
repro/harness/kit.py.
"""
from __future__ import annotations

import socket
from contextlib import ExitStack
from pathlib import Path

import httpwire  # noqa: E402
from kit import (_all_read, _poll, _start_first, HORSE, Row, Server, SLOW,
                 tree_accessible_kib, tree_kib, tree_settled, Verdict)  # noqa: E402


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


MEASURES = {"B12": lambda r, o, st: measure_b12(r, o)}
