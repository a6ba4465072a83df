#!/usr/bin/python3
"""gendoc.py - write docs/DISPATCH.md (and docs/dispatch.png) from a
`make bench` result.  Every figure in the document comes from the JSON; the
thread's figures are quoted as the thread gives them.

    dispatch/gendoc.py [--bench results/bench] [--out docs]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOP = HERE.parent
sys.path.insert(0, str(HERE))
import report_table  # noqa: E402
import shapes  # noqa: E402

THREAD = "Horse PR #553 (perf(epoll): run the HTTP pipeline inline in the worker instead of hopping through TTask.Run)"


def n(x, d=1):
    return report_table.num(x, d)


def md_table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def row(res, name):
    return shapes._row(res, name) or {}


def threads_table(res: dict) -> str:
    rows = []
    for r in res["rows"]:
        sh = report_table.census_share(r) or {}
        ctx = r.get("ctx") or {}
        rows.append([r["name"], n(r.get("threads_idle")), n(r.get("threads_ping")),
                     n(r.get("threads_slow")), n(r.get("threads_peak"))]
                    + [n(sh.get(k), 0) if sh else "-" for k, _ in report_table.CENSUS_COLS]
                    + [n(ctx.get("vol_per_req"), 2), n(ctx.get("nonvol_per_req"), 2)]
                    + [n(((r.get("ping") or {}).get("64") or {}).get(k), d)
                       for k, d in (("cpu_cores", 2), ("cpu_us_per_req", 1))])
    return md_table(["row", "idle", "/ping load", "slow load", "peak"]
                    + [f"{lab} %" for _, lab in report_table.CENSUS_COLS]
                    + ["vol. cs/req", "non-vol. cs/req", "CPU cores",
                       "CPU us/req"], rows)


def load_table(res: dict) -> str:
    rows = []
    for r in res["rows"]:
        ping = r.get("ping") or {}
        hol = r.get("hol") or {}
        a, b = hol.get("alone") or {}, hol.get("beside") or {}
        errs = sum((w.get("errors") or 0) + (w.get("non2xx") or 0)
                   for w in ping.values())
        rows.append([r["name"]]
                    + [n((ping.get(c) or {}).get("rps")) for c in ("1", "16", "64", "256")]
                    + [n(r.get("ping_rounds_median")),
                       n((ping.get("64") or {}).get("p50_ms"), 2),
                       n((ping.get("64") or {}).get("p99_ms"), 2), n(errs),
                       n(a.get("p90_ms"), 2), n(b.get("p90_ms"), 2),
                       n((hol.get("ratio") or {}).get("p90"), 1),
                       f"{a.get('failures', '-')}/{b.get('failures', '-')}",
                       report_table.answered(r, "pipeline"),
                       report_table.answered(r, "post-pipeline")])
    return md_table(["row", "req/s c=1", "c=16", "c=64", "c=256",
                     "c=64, median of rounds", "p50 c=64 ms",
                     "p99 c=64 ms", "errors", "/ping p90 alone ms",
                     "p90 beside slow ms", "HOL ratio", "failed pings",
                     "3 GETs", "POST+GET"], rows)


def shapes_table(res: dict) -> str:
    g, i, b = (row(res, "epoll-global-pool"), row(res, "epoll-inline"),
               row(res, "epoll-bounded-pool"))
    seed = {
        "threads": "30 idle -> 2,078 under load (global pool) vs 29 stable (inline): ~72x",
        "census": "6,146 samples in futex_do_wait vs 84 in epoll_wait (global pool); inline 100 % epoll_wait",
        "hol-inline": "inline: /ping p90 374.37 ms beside 8 concurrent 200 ms routes (Horse's validation); 90.79 ms beside /lento?ms=200, \"214x\" (the PR author's framework)",
        "hol-bounded": "bounded pool: /ping p90 3.88 ms, max 4.42 ms in the same scenario; a dedicated pool on top of inline: 3.04 ms, \"1.2x\"",
        "throughput": "/ping c=100: 7,327 (global pool) -> 92,024 req/s (inline), 12.6x",
        "wakeups": "~671k non-voluntary context switches in ~20 s (global pool); \"the ceiling was queue + wake-up, not work\"",
        "pipelining": "(not measured in the thread)",
        "queue-full": "\"the saturated connection is closed instead of the task being lost silently\"",
        "drain": "\"stops accepting work, drains the accepted queue, only then frees the contexts\"",
    }
    rows = [[name, seed.get(name, ""), why, verdict]
            for name, verdict, why in shapes.evaluate(res)]
    _ = (g, i, b)
    return md_table(["shape", "the thread (28 / 8 CPUs)", "this run", "verdict"],
                    rows)


def findings(res: dict) -> str:
    """Observations computed from the run, said with their figures."""
    g, i, b = (row(res, "epoll-global-pool"), row(res, "epoll-inline"),
               row(res, "epoll-bounded-pool"))
    out = []
    gp = (g.get("ping") or {})
    peaks = ", ".join(f"c={c}: {w.get('threads_max')}" for c, w in gp.items())
    out.append(f"- Global pool growth follows the offered concurrency: threads "
               f"during each /ping run {peaks}; peak {g.get('threads_peak')}. "
               f"The thread's 2,078 (near the 2,048 cap) is not reached: the "
               f"model adds one worker per queued item that finds no idle "
               f"worker (TThreadPool.GrowPool), so with at most 256 requests in "
               f"flight it stays near that number plus the minimum. Delphi's "
               f"own pool (closed source, with its CPU monitor) grew further "
               f"in the thread; the model does not try to imitate that.")
    ih, ia = (i.get("hol") or {}).get("beside") or {}, (i.get("hol") or {}).get("alone") or {}
    out.append(f"- Inline head-of-line: /ping p90 {n(ia.get('p90_ms'), 2)} ms "
               f"alone, {n(ih.get('p90_ms'), 2)} ms beside the 8 slow clients "
               f"(max {n(ih.get('max_ms'), 0)} ms). The thread saw 374 ms with 8 "
               f"event loops; here {res['environment'].get('cpus')} loops share "
               f"the 8 slow connections, so a loop holds several 200 ms "
               f"requests in a row and the wait is longer.")
    gc, ic, bc = g.get("census") or {}, i.get("census") or {}, b.get("census") or {}
    out.append(f"- Census under /ping c=64: global pool {gc.get('futex', 0)} "
               f"futex / {gc.get('epoll_wait', 0)} epoll_wait samples; inline "
               f"{ic.get('futex', 0)} futex / {ic.get('epoll_wait', 0)} "
               f"epoll_wait / {ic.get('running', 0)} running; bounded pool "
               f"{bc.get('futex', 0)} futex / {bc.get('epoll_wait', 0)} "
               f"epoll_wait. The bounded pool is futex-dominated too: its idle "
               f"workers wait on a condition variable. What it does not do is "
               f"grow (idle {b.get('threads_idle')} = peak "
               f"{b.get('threads_peak')} threads).")
    g64, i64 = (g.get("ping") or {}).get("64") or {}, (i.get("ping") or {}).get("64") or {}
    out.append(f"- Server CPU during /ping c=64 (utime + stime of the process "
               f"over the wrk run): global pool {n(g64.get('cpu_cores'), 2)} "
               f"cores, {n(g64.get('cpu_us_per_req'), 1)} us per request; inline "
               f"{n(i64.get('cpu_cores'), 2)} cores, "
               f"{n(i64.get('cpu_us_per_req'), 1)} us per request; load average "
               f"at the start of the run {res['environment'].get('loadavg')}. "
               f"On 2 CPUs shared with other work, the request rate is bounded "
               f"by the CPU time the server is given, not only by its cost per "
               f"request; that is where a throughput comparison on this machine "
               f"and the thread's 28-core one (\"~2 cores out of 28 used\") part.")
    if g.get("ping_rounds") and i.get("ping_rounds"):
        out.append(
            f"- Throughput two ways: in the series (each row measured in its "
            f"turn) inline vs global pool at c=1/16/64/256: " + ", ".join(
                f"{n((i['ping'].get(c) or {}).get('rps'))}/"
                f"{n((g['ping'].get(c) or {}).get('rps'))}"
                for c in ("1", "16", "64", "256")) +
            f" req/s; in the {len(g['ping_rounds'])} interleaved rounds at "
            f"c=64 at the end (medians) inline "
            f"{n(i.get('ping_rounds_median'))} vs global pool "
            f"{n(g.get('ping_rounds_median'))} req/s, with the server using "
            f"{n(i.get('rounds_cpu_cores_median'), 2)} vs "
            f"{n(g.get('rounds_cpu_cores_median'), 2)} cores at "
            f"{n(i.get('rounds_cpu_us_per_req_median'), 1)} vs "
            f"{n(g.get('rounds_cpu_us_per_req_median'), 1)} us of CPU per "
            f"request; the global pool had "
            f"{(g.get('rounds_threads') or ['-'])[-1]} threads by then (its "
            f"workers retire after 40 s idle).  The shape verdict uses the "
            f"rounds.  Of all the shapes this is the one a shared 2-CPU "
            f"machine decides least well: the request rate follows the CPU "
            f"share the server gets as much as its cost per request, so "
            f"repeat `make bench` before reading much into one run.")
    gx, ix = g.get("ctx") or {}, i.get("ctx") or {}
    out.append(f"- Context switches per request at c=64: global pool "
               f"{n(gx.get('vol_per_req'), 2)} voluntary + "
               f"{n(gx.get('nonvol_per_req'), 2)} non-voluntary, inline "
               f"{n(ix.get('vol_per_req'), 2)} + {n(ix.get('nonvol_per_req'), 2)} "
               f"(the thread: ~671k non-voluntary in ~20 s under the global pool).")
    ok = {name: v for name, v, _ in shapes.evaluate(res)}
    bad = [k for k, v in ok.items() if v != "OK"]
    out.append("- Shapes that did not reproduce in this run: " +
               (", ".join(bad) if bad else "none") + ".")
    for r in res["rows"]:
        hol = r.get("hol") or {}
        parts = []
        for ph in ("alone", "beside"):
            k = (hol.get(ph) or {}).get("failure_kinds") or {}
            if k:
                parts.append(f"{ph}: " + ", ".join(
                    f"{v} x {'HTTP ' + s if s.isdigit() else s}"
                    for s, v in sorted(k.items())))
        if parts:
            out.append(f"- {r['name']}: paced /ping requests without a 200 "
                       f"({'; '.join(parts)}); its head-of-line figures rest "
                       f"on the answered ones.")
    return "\n".join(out) + "\n"


def bounded_section(res: dict) -> str:
    q, d = res.get("bounded_queue_full"), res.get("bounded_drain")
    if not q or not d:
        return "Not measured in this run.\n"
    return (f"- Queue full: 1 worker, queue capacity 1, one loop; "
            f"{q['connections']} connections each send `GET /slow?ms=800` at "
            f"once. {q['answered']} were answered, "
            f"{q['closed_without_response']} were closed without a response "
            f"(client endings: {', '.join(q['client_endings'])}); the server "
            f"logged {q['server_queue_full']} `queue-full` lines. Exit "
            f"{q['exit_code']}.\n"
            f"- Drain: 1 worker, capacity 4; {d['requests']} `GET /slow?ms=300` "
            f"accepted (1 running, 2 queued; the server's `dispatch` log lines "
            f"were polled), then SIGTERM. Answered after SIGTERM: "
            f"{d['answered_after_term']}/{d['requests']}; a new connection "
            f"after the listeners closed: `{d['new_connection_after_term']}`; "
            f"exit {d['exit_code']}.\n")


DOC = """\
# Dispatch models of Horse's epoll provider, side by side

<!-- Generated by dispatch/gendoc.py from results/bench/bench.json (a
`make bench` run on {date} UTC, {cpus} CPUs, kernel {kernel}).  Do not edit:
change the generator or rerun `make bench && make dispatch-doc`. -->

{thread} moved the Delphi/Linux epoll provider of Horse off
`TTask.Run`, i.e. off `TThreadPool.Default`, which the provider had set to
Min = CPUs x 8 and Max = 2048.  Measured there on 28 cores: threads 30 idle
-> 2,078 under load in under 6 s, a wait-channel census of 6,146 samples in
`futex_do_wait` against 84 in `epoll_wait`, ~671k non-voluntary context
switches in ~20 s, /ping at c=100 7,327 req/s.  Running the handler inline
in the event loop gave 92,024 req/s with 29 threads, but a slow handler then
blocks every connection of its loop: /ping p90 374.37 ms beside 8 clients on
a 200 ms route.  The accepted design keeps inline as an option and makes a
bounded pool the default: fixed workers and queue capacity (settings), a full
queue closes the connection instead of losing the task, and shutdown stops
accepting and drains the accepted work; /ping p90 3.88 ms in the same
scenario, and 8 loops + 64 workers + main = 73 threads on 8 CPUs.

`dispatch/` is a C model of that provider, to measure the three dispatch
models next to each other and next to fphttpserver's thread modes on the
same machine, in the same run.

## The model

`build/dispatch/dispatch --dispatch global-pool|inline|bounded-pool`: one
event loop per CPU (`--loops`), each with its own `SO_REUSEPORT` listener and
epoll set (THorseEpollWorker); a connection stays on the loop that accepted
it; requests are framed in the loop (pipelined bytes stay in the buffer), and
then:

| mode | what runs the handler | threads |
| --- | --- | --- |
| `global-pool` | an unbounded pool modelled on TThreadPool.Default (`--pool-min` CPUs x 8, `--pool-max` 2048, `--pool-retire-ms` 40000): created lazily, filled to the minimum by the first item, one more worker for every queued item that finds no idle worker, idle workers retire above the minimum | grows with the load |
| `inline` | the loop thread itself | loops + main |
| `bounded-pool` (default) | `--workers` (CPUs x 8) threads started up front, a queue of `--queue-capacity` (1024); a full queue closes the connection (counted, logged `queue-full`) | loops + workers + main |

SIGTERM/SIGINT drain in every mode: the listeners close, requests not yet
accepted are refused (their connection closes), every accepted task runs to
its response, then the process exits 0.  Routes, readiness line and
`--port 0` are those of `server-min` (GET /ping, GET /slow?ms=N, POST /echo,
404; `listening <addr>:<port>`).  The growth rules of the global pool come
from the open re-implementation of System.Threading in FPC trunk
(TThreadPool.WorkQueued / GrowPool / GetWorkItemForThread), which follows
Delphi's; Delphi's own source is not public and its CPU-usage monitor
(growth beyond the maximum when workers block) is not modelled.

## How it is measured

`make bench` (about two minutes on 2 cores) runs `dispatch/bench.py` over:
the clone's four thread modes (`build/all/server-min --thread-mode
none|polled|thread|pool`, with `--keep-connections --keep-connection-timeout
15000` for the last three), the real trunk fphttpserver in the same modes
when `build/real-trunk/all/fpserver` is built (both are the `all` variant:
every fix of the kit applied), and the model's three modes.  Per row:

- threads idle, under the /ping series, beside the slow clients, peak
  (`/proc/PID/status`, sampled);
- under /ping at c=64: a census of every task's wait channel
  (`/proc/PID/task/TID/wchan` every 250 ms) and the voluntary /
  non-voluntary context switches of all tasks per request;
- /ping throughput and latency at c=1, 16, 64, 256 (`wrk --latency`, 1 s
  each);
- head-of-line: /ping latency alone, then beside 8 clients looping on
  `/slow?ms=200` (wrk), as a same-run ratio; the pings are paced (one every
  10 ms) and each uses a fresh connection, so every event loop is sampled;
- 3 pipelined GETs and a POST + GET in one `send()` (`build/probe`).

The rows run one after the other (a neighbour's load would distort
latency), each stopped before the next; the pipelining checks and the
bounded-pool checks, which mostly wait, run for all rows at once.  Any
server: `dispatch/bench.py --target HOST PORT [--pid PID]` (thread counts
and census need the PID).  The short version for `make test` is
`dispatch/test.sh` ({test_note}).

## Results

{plot}

Threads, where they wait, and what a request costs (census, context
switches and CPU under /ping at c=64):

{threads}
Load, head-of-line and pipelining:

{load}
## The thread's shapes, reproduced as same-run ratios

Absolute figures are far below the thread's 28-core ones; what is compared
is the shape.  Verdicts: `dispatch/shapes.py`.

{shapes}
Findings of this run:

{findings}
## Bounded pool: a full queue and a drain

{bounded}
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default=str(TOP / "results/bench"))
    ap.add_argument("--out", default=str(TOP / "docs"))
    a = ap.parse_args()
    res = json.loads((Path(a.bench) / "bench.json").read_text())
    out = Path(a.out)
    png = out / "dispatch.png"
    why = report_table.plot(res, png)
    env = res["environment"]
    doc = DOC.format(
        date=env["date_utc"], cpus=env["cpus"], kernel=env["kernel"],
        thread=THREAD,
        test_note="the model's three modes only, shorter runs, the verdicts "
                  "below by count and ratio except throughput, CUnit tests of "
                  "the pools, and TSan and ASan+UBSan builds of the model",
        plot=(f"![HOL ratio and threads per row](dispatch.png)\n" if why is None
              else f"(no plot: {why})\n"),
        threads=threads_table(res), load=load_table(res),
        shapes=shapes_table(res), findings=findings(res),
        bounded=bounded_section(res))
    b = res.get("binaries") or {}
    note = b.get("clone_note")
    doc += ("\nBinaries of this run (kit commit " + str(env.get("git_head")) +
            "): " + ", ".join(f"{k} `{v}`" for k, v in b.items()
                              if k != "clone_note") +
            (f" (clone: {note})" if note else "") + ".\n")
    skips = res.get("skips") or []
    if skips:
        doc += "\nRows not in this run:\n\n" + "".join(f"- {s}\n" for s in skips)
    doc += (f"\nWall time of the run: {res.get('wall_s')} s.\n")
    # Horse's own epoll provider, measured by its rows of dispatch/bench.py
    # (repro/horse/DISPATCH-section.md says when and how): kept whole here
    # until the bench run that regenerates this document carries those rows.
    horse = TOP / "repro" / "horse" / "DISPATCH-section.md"
    if horse.exists():
        doc += "\n" + horse.read_text()
    (out / "DISPATCH.md").write_text(doc)
    print(f"wrote {out / 'DISPATCH.md'} and {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
