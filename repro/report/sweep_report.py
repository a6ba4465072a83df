"""sweep_report.py - REPORT.md's blocks from a `make sweep` run
(results/sweep/sweep.json): B3's size tables and figure, B2's depth and B5's
body-size tables.  Used by repro/report/report.py."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import patchset

MARK = {"reproduced": "STALL", "fixed": "ok", "inconclusive": "??"}


def _by(run: dict, *keys: str) -> dict:
    return {tuple(p[k] for k in keys): p for p in run["points"]}


def _columns(doc: dict, link: str) -> list[dict]:
    """The runs of one link a reader compares: stock (model, real, win64),
    the real trunk with each B3 fix, and all (real, model, win64)."""
    want = [("model", "stock"), ("real", "stock"), ("win64", "stock"),
            *[("real", f) for f in patchset.fixing("B3")],
            ("real", "all"), ("model", "all"), ("win64", "all")]
    runs = {(r["kind"], r["set"]): r for r in doc["b3"] if r["link"] == link}
    return [runs[k] for k in want if k in runs]


def _cell(p: dict | None, band: bool) -> str:
    if not p:
        return "-"
    cell = f"{MARK.get(p['state'], p['state'])} {p.get('ratio', '-')}x"
    if band and "stalled" in p:
        cell += f" ({p['stalled']}/{p['requests'] // 2 - 1})"
    return cell


def block_b3(doc: dict | None) -> str:
    """Per link, per body size: Content · ContentStream, each the verdict
    and the reused/fresh median ratio; on stock beyond the new connection's
    segment size, (k/n) requests that stalled one by one."""
    if not doc:
        return "(no sweep run: `make sweep` writes results/sweep/sweep.json)"
    out = []
    for ln in doc["links"]:
        runs = _columns(doc, ln["name"])
        if not runs:
            continue
        sizes = sorted({p["size"] for r in runs for p in r["points"]})
        out += [f"**{ln['name']}** (MTU {ln['mtu']}; the server's segment size is "
                f"{ln['mss']} on a new connection, {ln['mss_full']} once the client's "
                "window has grown). Each cell: Content · ContentStream.", "",
                "| body bytes | " + " | ".join(f"`{r['subject']}`" for r in runs) + " |",
                "|" + "---|" * (len(runs) + 1)]
        for sz in sizes:
            cells = []
            for r in runs:
                bp = _by(r, "size", "body")
                bound = patchset.bound(r["set"], "B3")
                band = (r["set"] == "stock" and sz >= r["mss"]) or (bound is not None and sz > bound)
                cells.append(" · ".join(_cell(bp.get((sz, b)), band) for b in ("content", "stream")))
            out.append(f"| {sz} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out).rstrip()


def block_band(doc: dict | None) -> str:
    """Beyond a bounded fix's bound (to compare: the unbounded fixes beyond
    the same size, and stock beyond its largest segment size, where its
    stall of every request ends), per run: the points whose median stalled, and the single reused
    requests that did ((k/n) of each point added up), Content and stream."""
    if not doc:
        return "(no sweep run)"
    lines = ["| run | link | beyond | points stalled (median) | single requests stalled, Content | "
             "single requests stalled, stream |", "|---|---|---|---|---|---|"]
    table = patchset.by_name()
    cap = max((table[f].bound for f in patchset.fixing("B3") if table[f].bound), default=None)
    for r in doc["b3"]:
        bound = patchset.bound(r["set"], "B3")
        if r["kind"] == "model":
            continue
        if r["set"] == "stock":
            edge = max(r["mss"], r["mss_full"] or 0) + 1
        elif "B3" in patchset.fixed_by(r["set"]) and (bound or cap):
            # A fix without a bound, beyond the same size: the noise a
            # single request shows where no tail can wait.
            edge = bound or cap
        else:
            continue
        pts = [p for p in r["points"] if p["size"] > edge]
        if not pts:
            continue
        med = [f"{p['size']}/{p['body']}" for p in pts if p["state"] == "reproduced"]

        def single(body: str) -> str:
            mine = [p for p in pts if p["body"] == body]
            k = sum(p.get("stalled", 0) for p in mine)
            n = sum(p["requests"] // 2 - 1 for p in mine)
            where = [f"{p['size']}: {p['stalled']}" for p in mine if p.get("stalled")]
            return f"{k} of {n}" + (f" ({', '.join(where)})" if where else "")
        lines.append(f"| `{r['subject']}` | {r['link']} | {edge} bytes | "
                     f"{len(med)} of {len(pts)}{' ' + ', '.join(med) if med else ''} | "
                     f"{single('content')} | {single('stream')} |")
    return "\n".join(lines)


def block_cost(doc: dict | None) -> str:
    if not doc:
        return "(no sweep run)"
    lines = ["| server | TCP_NODELAY per connection | sendto per response, 4 B | 64 KiB | 1 MiB (Content / stream) | "
             "peak RSS growth, 10 MiB stream | 100 MiB stream | sendto for the 100 MiB stream |",
             "|---|---|---|---|---|---|---|---|"]
    mem = {r["subject"]: r for r in doc["memory"]}
    for r in doc["sendto"]:
        bp = _by(r, "size", "body")

        def st(size: int, body: str) -> str:
            p = bp.get((size, body))
            return ",".join(map(str, p["sendto"])) if p else "-"
        m = mem.get(r["subject"])
        nd = sorted({p["nodelay"] for p in r["points"]})
        big = 1048576
        lines.append(f"| `{r['subject']}` | {','.join(map(str, nd))} | {st(4, 'content')} | "
                     f"{st(65536, 'content')} | {st(big, 'content')} / {st(big, 'stream')} | "
                     + (f"{m['growth_kib'][0]} KiB | {m['growth_kib'][1]} KiB | "
                        f"{','.join(map(str, m['sendto'][1])) if len(m['sendto']) > 1 else '-'} |"
                        if m else "- | - | - |"))
    return "\n".join(lines)


def block_counts(doc: dict | None, defect: str) -> str:
    if not doc:
        return "(no sweep run)"
    runs = doc[defect.lower()]
    if not runs:
        return "(not measured)"
    keys = ("depth",) if defect == "B2" else ("posts", "size")
    label = "requests in one send()" if defect == "B2" else "POSTs x body bytes (+ one GET)"
    pts = sorted({tuple(p[k] for k in keys) for r in runs for p in r["points"]})
    lines = ["| " + label + " | " + " | ".join(f"`{r['subject']}`" for r in runs) + " |",
             "|" + "---|" * (len(runs) + 1)]
    for k in pts:
        cells = []
        for r in runs:
            p = _by(r, *keys).get(k)
            cells.append(f"{p['answered']}/{p.get('requests', p.get('sent'))}" if p else "-")
        lines.append(f"| {' x '.join(map(str, k))} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def make_plot(doc: dict | None, docs: Path) -> str:
    """Median latency of requests 2..n on one socket against the body size,
    per Pascal set of the real trunk, Content and ContentStream, one panel
    per link (gnuplot PNG)."""
    if not doc:
        return "(no sweep run: plot not regenerated)"
    if not shutil.which("gnuplot"):
        return "(gnuplot not available: plot not regenerated)"
    docs.mkdir(exist_ok=True)
    data = docs / "b3-sweep.dat"
    series = []   # (link index, title, block index)
    with data.open("w") as f:
        for li, ln in enumerate(doc["links"]):
            for r in _columns(doc, ln["name"]):
                if r["kind"] != "real":
                    continue
                for body in ("content", "stream"):
                    pts = sorted((p["size"], p["reused_us"]) for p in r["points"]
                                 if p["body"] == body and p["size"] > 0 and p.get("reused_us"))
                    if not pts:
                        continue
                    f.write(f"# {ln['name']} {r['set']} {body}\n")
                    f.writelines(f"{s} {us / 1000:.4f}\n" for s, us in pts)
                    f.write("\n\n")
                    series.append((li, f"{r['set']} ({'Content' if body == 'content' else 'stream'})",
                                   len(series)))
    if not series:
        return "(no real-trunk rows in the sweep: plot not regenerated)"
    panels = []
    for li, ln in enumerate(doc["links"]):
        mine = [(t, b) for i, t, b in series if i == li]
        if not mine:
            continue
        plots = ", ".join(f"'{data}' index {b} using 1:2 with linespoints title '{t}'" for t, b in mine)
        panels.append(f"set title '{ln['name']} (MTU {ln['mtu']}, segment {ln['mss']}..{ln['mss_full']})'\n"
                      f"plot {plots}")
    script = f"""
set terminal pngcairo size 1500,520 noenhanced
set output '{docs / "b3-sweep.png"}'
set multiplot layout 1,{len(panels)}
set logscale xy
set xlabel 'response body (bytes, log scale)'
set ylabel 'median of requests 2..n on one socket (ms, log)'
set grid
set key top left font ',8'
{chr(10).join(panels)}
unset multiplot
"""
    r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    if r.returncode != 0:
        return f"(gnuplot failed: {r.stderr.strip()[:200]})"
    return "![B3 latency against body size](docs/b3-sweep.png)"
