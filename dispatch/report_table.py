"""report_table.py - the bench table (text) and plot (gnuplot PNG) from a
bench.json result.  Used by bench.py and by the DISPATCH.md generator."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

CENSUS_COLS = (("futex", "futex"), ("epoll_wait", "epoll"),
               ("select/poll", "sel/poll"), ("sleep", "sleep"),
               ("running", "run"))


def num(x, digits: int = 1) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        if x >= 100:
            return f"{x:.0f}"
        return f"{x:.{digits}f}"
    return str(x)


def census_share(row: dict) -> dict[str, float] | None:
    c = row.get("census")
    if not c:
        return None
    total = sum(c.values()) or 1
    return {k: 100.0 * v / total for k, v in c.items()}


def answered(row: dict, scen: str) -> str:
    p = (row.get("pipelining") or {}).get(scen) or {}
    if p.get("answered") is None:
        return "-"
    return f"{p['answered']}/{p['sent']}"


def columns(row: dict) -> list[str]:
    share = census_share(row)
    ctx = row.get("ctx") or {}
    ping = row.get("ping") or {}
    hol = row.get("hol") or {}
    cells = [row["name"], num(row.get("threads_idle")),
             num(row.get("threads_ping")), num(row.get("threads_slow")),
             num(row.get("threads_peak"))]
    cells += [num(share.get(k), 0) if share else "-" for k, _ in CENSUS_COLS]
    cells += [num(ctx.get("vol_per_req"), 2), num(ctx.get("nonvol_per_req"), 2),
              num(((row.get("ping") or {}).get("64") or {}).get("cpu_us_per_req"), 1)]
    for c in ("1", "16", "64", "256"):
        cells.append(num((ping.get(c) or {}).get("rps")) if c in ping else "-")
    p64 = ping.get("64") or {}
    cells.append(num(p64.get("p99_ms"), 2))
    errs = sum((w.get("errors") or 0) + (w.get("non2xx") or 0)
               for w in ping.values())
    cells.append(num(errs))
    a, b = hol.get("alone") or {}, hol.get("beside") or {}
    cells += [num(a.get("p90_ms"), 2), num(b.get("p90_ms"), 2),
              num((hol.get("ratio") or {}).get("p90"), 1),
              f"{a.get('failures', '-')}/{b.get('failures', '-')}"]
    cells += [answered(row, "pipeline"), answered(row, "post-pipeline")]
    return cells


HEADER = (["row", "thr idle", "thr ping", "thr slow", "thr peak"]
          + [f"{label}%" for _, label in CENSUS_COLS]
          + ["vcs/req", "ncs/req", "cpu us/req", "rps c1", "rps c16", "rps c64", "rps c256",
             "p99 c64 ms", "errors", "HOL p90 alone ms", "HOL p90 beside ms",
             "HOL x", "HOL fails", "3 GETs", "POST+GET"])

LEGEND = """\
thr: threads from /proc/PID/status - idle (before any request), max under the
/ping series, max beside 8 clients on /slow?ms=200, peak over the run.
census %: share of task samples (/proc/PID/task/TID/wchan, every 250 ms) under
/ping c=64 in futex, epoll_wait, select/poll, sleep (the /slow handler),
running.  vcs/ncs per req: voluntary / non-voluntary context switches of all
tasks over that run, per request; cpu us/req: the process's utime+stime over
it, per request.  rps cN: wrk /ping req/s at N connections.
errors: wrk socket errors + non-2xx over the series.  HOL: /ping p90 alone and
beside 8 x /slow?ms=200, and their ratio (same run); fails: pings without a
200 (alone/beside).  3 GETs / POST+GET: responses to requests written in one
send.
"""


def text_table(res: dict) -> str:
    rows = [HEADER] + [columns(r) for r in res.get("rows", [])]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    lines = ["  ".join(c.rjust(w) if i else c.ljust(w)
                       for i, (c, w) in enumerate(zip(r, widths)))
             for r in rows]
    out = "\n".join(lines) + "\n\n" + LEGEND
    for key in ("bounded_queue_full", "bounded_drain"):
        if key in res:
            out += f"{key}: {res[key]}\n"
    for s in res.get("skips", []):
        out += s + "\n"
    env = res.get("environment", {})
    out += (f"run: {env.get('date_utc')} UTC, {env.get('cpus')} CPUs, load "
            f"average {env.get('loadavg')}, kernel "
            f"{env.get('kernel')}, cgroup cpu.max {env.get('cgroup_cpu_max')}, "
            f"wall {res.get('wall_s')} s\n")
    return out


def plot(res: dict, png: Path) -> str | None:
    """HOL ratio and peak threads per row, two panels.  Returns why not."""
    if not shutil.which("gnuplot"):
        return "gnuplot missing (Debian package gnuplot-nox)"
    rows = [r for r in res.get("rows", [])]
    with tempfile.TemporaryDirectory() as d:
        dat = Path(d) / "bench.dat"
        with open(dat, "w") as f:
            for i, r in enumerate(rows):
                ratio = (r.get("hol") or {}).get("ratio", {}).get("p90") or 0
                f.write(f"{i} \"{r['name']}\" {ratio:.3f} "
                        f"{r.get('threads_peak') or 0} "
                        f"{r.get('threads_idle') or 0}\n")
        script = f"""
set terminal pngcairo size 1400,560 font ",10"
set output "{png}"
set multiplot layout 1,2
set style fill solid 0.8 border -1
set boxwidth 0.7
set logscale y
set grid ytics
set xtics rotate by -40 left
set bmargin 8
set rmargin 9
set yrange [0.5:*]
set title "head-of-line: /ping p90 beside 8 x /slow?ms=200 / p90 alone"
set ylabel "ratio (same run, log)"
plot "{dat}" using 1:3:xtic(2) with boxes lc rgb "#c0504d" notitle, \\
     1 with lines dt 2 lc rgb "black" notitle
set title "threads: idle and peak"
set ylabel "threads (log)"
set boxwidth 0.35
plot "{dat}" using ($1-0.18):5 with boxes lc rgb "#9bbb59" title "idle", \\
     "{dat}" using ($1+0.18):4:xtic(2) with boxes lc rgb "#4f81bd" title "peak"
unset multiplot
"""
        png.parent.mkdir(parents=True, exist_ok=True)
        p = subprocess.run(["gnuplot"], input=script.encode(),
                           capture_output=True)
        if p.returncode != 0 or not png.exists():
            return p.stderr.decode(errors="replace").strip()[-300:]
    return None
