#!/usr/bin/env python3
"""report.py - regenerate the generated parts of REPORT.md from a run, or
check that REPORT.md's structural claims still hold.

  repro/report/report.py [--matrix results/latest/matrix.json] [--sweep results/sweep/sweep.json]
                                                          rewrite REPORT.md
  repro/report/report.py --check results/test-matrix/matrix.json compare claims

Generated parts sit between '<!-- generated:NAME -->' and
'<!-- /generated:NAME -->'.  The run's structural claims (verdicts and
counts, no timings) go to REPORT.claims.json beside it; --check compares
those with a fresh run and reports every difference.  Every Fix section's
Pascal is the diff of patches/fpc/<name>.patch (and <name>.<part>.patch), never typed; report/B<n>.md,
one text per defect for FPC's tracker, is cut from the same sections.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
import kit  # noqa: E402
import defects  # noqa: E402  (the registry of measures, repro/defects/)
import patchset  # noqa: E402
import proxies  # noqa: E402
import sweep_report  # noqa: E402
import upstream_texts  # noqa: E402

TOP = kit.TOP
REPORT = TOP / "REPORT.md"
CLAIMS = TOP / "REPORT.claims.json"   # the report's structural claims, per row
TRACKER = TOP / "report"              # one ready-to-file text per defect
APPENDIX = TRACKER / "APPENDIX.md"    # what the cover leaves out: matrix, Horse, model, sweeps
CONFIDENTIAL = TRACKER / "confidential"   # the security-relevant defects' texts


def tracker_path(defect: str) -> Path:
    """A defect's tracker text: report/Bn.md, or, for a security-relevant
    one (Security: field), report/confidential/Bn-tracker.md, which stays
    out of any public copy until FPC has released a fix."""
    if defect in patchset.security():
        return CONFIDENTIAL / f"{defect}-tracker.md"
    return TRACKER / f"{defect}.md"
DOCS = TOP / "docs"
REF = TOP / "captures" / "reference"
DEFECTS = defects.DEFECTS
SHORT = {"reproduced": "REPRO", "fixed": "fixed", "inconclusive": "??", "n/a": "n/a", "failed": "FAIL"}


def is_horse(r: dict) -> bool:
    return r["row"].startswith("horse ")


def ms(us):
    return "-" if us is None else f"{us / 1000:.2f} ms"


def load(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        sys.exit(f"report: {path}: {e}")


def rowmap(doc: dict) -> dict[str, dict]:
    return {r["row"]: r for r in doc["rows"]}


# ---- claims: what the report asserts, without timings -----------------

def claims(doc: dict) -> dict:
    out = {}
    for r in doc["rows"]:
        v = r["verdicts"]
        c = {k: x["state"] for k, x in v.items()}
        c["B1_hook_calls_per_connection"] = (
            v["B1"]["data"]["hook_calls"] / v["B1"]["data"]["connections"]
            if v["B1"]["data"].get("connections") else None)
        c["B2_responses"] = v["B2"]["data"].get("responses")
        c["B5_responses"] = v["B5"]["data"].get("responses")
        c["B6_responses"] = v["B6"]["data"].get("responses")
        c["B3_one_connection"] = (v["B3"]["data"].get("connects") == 1 and
                                  len(v["B3"]["data"].get("server_conn_ids", [])) == 1)
        if "sends_per_response" in v["B3"]["data"]:
            c["sendto_per_response"] = v["B3"]["data"]["sends_per_response"]
            c["tcp_nodelay_per_connection"] = v["B3"]["data"]["tcp_nodelay_per_connection"]
        c["B4_connection_header"] = v["B4"]["data"].get("connection_header")
        c["B4_stale_failures"] = bool(v["B4"]["data"].get("pool_stale_failures"))
        if r.get("platform") != "win64":   # under Wine the launcher ends it (B7's measure_b7)
            c["B7_stops_on_sigterm"] = v["B7"]["data"].get("stopped_by_sigterm")
        c["B8_answered_high"] = v["B8"]["data"].get("answered_high")
        c["criteria_met"] = r["criteria_met"]
        if r.get("counterpart"):
            c["equals_clone"] = not r.get("differs_from_clone")
        out[r["row"]] = c
    return out


def compare_claims(old: dict, new: dict) -> list[str]:
    diffs = []
    for row, c in old.items():
        if row not in new:
            diffs.append(f"row '{row}' missing from the fresh run")
            continue
        for k, v in c.items():
            if k.startswith("wire-") and k not in new[row]:
                continue   # a non-root run has no captures: not a contradiction
            if k in ("sendto_per_response", "tcp_nodelay_per_connection") and k not in new[row]:
                continue   # no strace in the fresh run
            if new[row].get(k) != v:
                diffs.append(f"{row}: {k}: report says {v!r}, run says {new[row].get(k)!r}")
    for row in new:
        if row not in old:
            diffs.append(f"row '{row}' is in the run but not in the report")
    return diffs


# ---- generated blocks ---------------------------------------------------

def block_matrix(doc: dict) -> str:
    wire = [k for k in ("wire-lo", "wire-veth") if k in doc["rows"][0]["verdicts"]]
    sec = patchset.security()
    head = (["row"] + [d + ("*" if d in sec else "") for d in DEFECTS] + wire
            + ["sendto/resp", "NODELAY/conn", "reuse/off", "criteria"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    behind = [r for r in doc["rows"] if proxies.is_proxy_row(r)]
    for r in doc["rows"]:
        if r in behind:   # summed up in one line after the table (proxies.summary)
            continue
        v = r["verdicts"]
        b3 = v["B3"]["data"]
        cells = [f"`{r['row']}`"] + [SHORT[v[d]["state"]] for d in DEFECTS]
        cells += [SHORT[v[w]["state"]] if w in v else "-" for w in wire]
        cells += [",".join(map(str, b3.get("sends_per_response", []))) or "-",
                  ",".join(map(str, b3.get("tcp_nodelay_per_connection", []))) or "-",
                  f"{b3['ratio_p50']:.1f}x" if b3.get("ratio_p50") is not None else "-",
                  ("meets: " if r["criteria_met"] else "FAILS: ") + r["criteria"]]
        lines.append("| " + " | ".join(cells) + " |")
    env = doc["environment"]
    lines.append("")
    if behind:
        lines.append(proxies.summary(behind))
    lines.append(f"Run: commit `{env.get('commit')}`, {env.get('date_utc')}, Linux "
                 f"{env.get('kernel')} ({env.get('machine')}, {env.get('cpus')} CPUs), "
                 f"strace: {'yes' if doc.get('strace') else 'no'}, captures: "
                 f"{', '.join(doc['capture']) if doc.get('capture') else 'skipped (' + str(doc.get('capture_skipped')) + ')'}.")
    if sec:
        lines.append(f"{', '.join(d + '*' for d in sec)}: security-relevant, reported confidentially "
                     f"(their texts are in report/confidential/, out of any public copy until FPC has "
                     f"released a fix).")
    lines.append("The structural claims of this table (verdicts and counts, no timings) "
                 "are in `REPORT.claims.json`; `make test` compares them with a fresh run.")
    return "\n".join(lines)


def block_defect(doc: dict, defect: str, rows: list[str]) -> str:
    rm = rowmap(doc)
    lines = ["| server | verdict | evidence |", "|---|---|---|"]
    for name in rows:
        if name not in rm:
            continue
        v = rm[name]["verdicts"][defect]
        lines.append(f"| `{name}` | {v['state']} | {v['figure']} |")
    return "\n".join(lines)


def block_b3_figures(doc: dict) -> str:
    rm = rowmap(doc)
    lines = ["| server | request 1 | requests 2..30 p50 | keep-alive off p50 | 300 ms gap p50 | ratio | sendto/resp | wire (loopback) |",
             "|---|---|---|---|---|---|---|---|"]
    for name in ["stock", *patchset.fixing("B3"), "stock --socket-handler nodelay",
                 "stock --request-nodelay", "stock --on-allow-connect nodelay",
                 "forward-allow-connect --on-allow-connect nodelay", "all"]:
        if name not in rm:
            continue
        v = rm[name]["verdicts"]
        d = v["B3"]["data"]
        wire = v.get("wire-lo", {}).get("figure", "not captured").replace("lo: ", "")
        lines.append(f"| `{name}` | {ms(d.get('first_us'))} | {ms(d.get('reused_p50_us'))} | "
                     f"{ms(d.get('fresh_p50_us'))} | {ms(d.get('idle_gap_rest_p50_us'))} | "
                     f"{d['ratio_p50']:.1f}x | "
                     f"{','.join(map(str, d.get('sends_per_response', []))) or '-'} | {wire} |")
    return "\n".join(lines)


def first_lower(text: str) -> str:
    return text[:1].lower() + text[1:].rstrip(".")


def block_mitigations(doc: dict) -> str:
    rm = rowmap(doc)
    rows = [("stock", "none (baseline)", "-"),
            ("stock --on-allow-connect nodelay", "assign `OnAllowConnect` with a TCP_NODELAY hook", "no: the hook never runs (B1)"),
            ("stock --socket-handler nodelay", "`OnGetSocketHandler` returns a handler whose `Accept` sets TCP_NODELAY", "yes, every FPC version that has `OnGetSocketHandler`"),
            ("stock --request-nodelay", "set TCP_NODELAY from the request handler (the `DoGetModule` route proposed in Horse issue #562)", "yes; one setsockopt per request"),
            ("forward-allow-connect --on-allow-connect nodelay", "the `OnAllowConnect` hook on a server with the B1 fix", "only once B1 is fixed upstream"),
            *[(f, "upstream fix: " + first_lower(patchset.read_headers(patchset.by_name()[f].path)
               .get("Description", "?").splitlines()[0]),
               "no application change") for f in patchset.fixing("B3")]]
    lines = ["| mitigation | what it does | works on stock? | B3 | reuse/off | sendto/resp | TCP_NODELAY/conn | keep-alive kept (1 connection) |",
             "|---|---|---|---|---|---|---|---|"]
    for name, what, works in rows:
        if name not in rm:
            continue
        v = rm[name]["verdicts"]["B3"]
        d = v["data"]
        lines.append(f"| `{name}` | {what} | {works} | {v['state']} | {d['ratio_p50']:.1f}x | "
                     f"{','.join(map(str, d.get('sends_per_response', []))) or '-'} | "
                     f"{','.join(map(str, d.get('tcp_nodelay_per_connection', []))) or '-'} | "
                     f"{'yes' if d.get('connects') == 1 and len(d.get('server_conn_ids', [])) == 1 else 'NO'} |")
    return "\n".join(lines)


def ladder_excerpt(name: str, response: int) -> str:
    path = REF / name / "ladder.txt"
    if not path.exists():
        return f"(no reference capture {path.relative_to(TOP)})"
    text = path.read_text().split("# response ")
    for part in text:
        if part.startswith(f"{response}:"):
            return "```\n# response " + part.rstrip() + "\n```"
    return f"(response {response} not in {path.relative_to(TOP)})"


def strace_excerpt(name: str, pattern: str, count: int, from_start: bool = False) -> str:
    path = REF / name / "server.strace"
    if not path.exists():
        return f"(no reference strace {path.relative_to(TOP)})"
    lines = [ln for ln in path.read_text().splitlines() if re.search(pattern, ln)]
    # From the second response on (the first rides on a quick ACK).
    start = 0 if from_start or len(lines) <= 2 * count else len(lines) // 3
    def shorten(ln: str) -> str:
        ln = re.sub(r"^\d+ ", "", ln)
        return ln if len(ln) <= 170 else ln[:120] + " ... " + ln[-45:]
    picked = [shorten(ln) for ln in lines[start:start + count]]
    return "```\n" + "\n".join(picked) + "\n```"


def block_versions(doc: dict) -> str:
    rm = rowmap(doc)
    lines = ["| server | " + " | ".join(DEFECTS) + " | notes |",
             "|---|" + "---|" * (len(DEFECTS) + 1)]
    real = [r for r in doc["rows"] if r.get("real") and r["variant"] in ("stock", "fpc-3.2.2")
            and not r["flags"] and not is_horse(r) and not proxies.is_proxy_row(r)]
    for r in real:
        cells = [SHORT.get(r["verdicts"][d]["state"], r["verdicts"][d]["state"]) for d in DEFECTS]
        notes = "; ".join(f"{d}: {r['verdicts'][d]['figure']}" for d in ("B3", "B5", "B6", "B8"))
        label = r['row'] if r['platform'] in r['row'] else f"{r['row']} ({r['platform']})"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {notes} |")
    if "stock" in rm:
        cells = [SHORT.get(rm["stock"]["verdicts"][d]["state"], "?") for d in DEFECTS]
        lines.append("| trunk clone (server-min stock) | " + " | ".join(cells)
                     + " | the model of trunk at 1dba64b |")
    if "real trunk" not in rm:
        lines.append("| real trunk | " + " | ".join("-" for _ in DEFECTS)
                     + " | not in this run: `make repro FPCSRC=/path/to/fpcsource` adds it |")
    return "\n".join(lines)


BENCH = TOP / "results" / "bench" / "b3bench.json"   # make bench's last run
BENCH_DOC = DOCS / "b3bench.json"                     # the run the texts show


def _bench():
    """dispatch/b3bench.py and make bench's last run, or None: the run is
    copied to docs/ so the texts can be regenerated from it."""
    if BENCH.exists():
        shutil.copyfile(BENCH, BENCH_DOC)
    if not BENCH_DOC.exists():
        return None
    sys.path.insert(0, str(TOP / "dispatch"))
    import b3bench  # noqa: E402
    return b3bench, load(BENCH_DOC)


def block_b3_bench() -> str:
    """make bench's throughput table (dispatch/b3bench.py)."""
    if not (bench := _bench()):
        return "(no `make bench` run yet)"
    b3bench, doc = bench
    out = [b3bench.table(doc).rstrip()]
    if doc.get("date_utc"):
        out.append(f"\nRun {doc['date_utc']} on {doc.get('cpus')} cores, load average "
                   f"{doc.get('loadavg_before', 0):.2f} before and {doc.get('loadavg_after', 0):.2f} after.")
    lows = []
    for c in b3bench.CONCURRENCY:
        r = doc["ratios"].get(f"real trunk|all|{c}")
        if r:
            lows.append(f"{min(r):.3f} at -c{c}")
    if lows:
        out.append(f"`all` against `{doc['base']}` on the real trunk, lowest round: " + ", ".join(lows) + ".")
    return "\n".join(out)


def block_b3_bench_short() -> str:
    """The tracker's one line of make bench: the real trunk's median ratios
    to the base (set-tcp-nodelay) per set and concurrency, same rounds."""
    if not (bench := _bench()):
        return "(no `make bench` run yet)"
    b3bench, doc = bench
    parts = []
    for s in ("coalesce-writes", "all"):
        r = [f"{statistics.median(doc['ratios'][k]):.2f}x at -c{c}" for c in b3bench.CONCURRENCY
             if (k := f"real trunk|{s}|{c}") in doc["ratios"]]
        if r:
            parts.append(f"`{s}` {', '.join(r)}")
    return (f"`make bench` on the real trunk (wrk /ping, builds alternated, {doc['rounds']} rounds; "
            f"requests per second against `{doc['base']}` alone, median): " + "; ".join(parts) + ".")


def block_h2load(results: Path) -> str:
    """PR #554's h2load table, as repro/harness/clients.py wrote it in this run."""
    p = results / "clients" / "h2load.md"
    if not p.exists():
        return "(no h2load results in this run: Debian's nghttp2-client)"
    text = p.read_text()
    start = text.find("| server |")
    return text[start:].strip() if start >= 0 else text.strip()


def block_horse(doc: dict) -> str:
    """The rows that run Horse's own code (repro/horse/rows.py)."""
    rows = [r for r in doc["rows"] if is_horse(r)]
    if not rows:
        return "(no Horse rows in this run: `make horse` needs the trunk toolchain and the Horse snapshot)"
    cols = ["B2", "B3", "B4", "B5", "wire-lo", "wire-veth"]
    lines = ["| row | " + " | ".join(cols) + " | NODELAY/conn | requests 2..30 p50 (reuse/off) | criteria |",
             "|---|" + "---|" * (len(cols) + 3)]
    for r in rows:
        v = r["verdicts"]
        b3 = v["B3"]["data"]
        p50 = (f"{ms(b3.get('reused_p50_us'))} ({b3['ratio_p50']:.1f}x)"
               if b3.get("ratio_p50") is not None else "-")
        cells = [SHORT.get(v[c]["state"], v[c]["state"]) if c in v else "-" for c in cols]
        lines.append(f"| `{r['row']}` | " + " | ".join(cells)
                     + f" | {','.join(map(str, b3.get('tcp_nodelay_per_connection', []))) or '-'} | {p50} | "
                     + ("meets: " if r["criteria_met"] else "FAILS: ") + r["criteria"] + " |")
    return "\n".join(lines)


H1_ROWS = [("horse trunk", "Linux, ff41415"), ("horse trunk + horse:pr563-simulation", "Linux"),
           ("horse trunk (win64)", "ff41415"), ("horse trunk (win64) + horse:pr563-simulation", ""),
           ("horse trunk (win64) + horse:pr566-simulation", "")]


def block_horse_h1(doc: dict) -> str:
    """report/horse/H1's table: the Windows rows beside Linux's, from the
    same run as REPORT's Horse table."""
    rm = rowmap(doc)
    lines = ["| row | B3 (stall) | wire, loopback / veth | setsockopt(TCP_NODELAY) per connection "
             "| requests 2..30 p50 over a fresh connection |", "| --- | --- | --- | --- | --- |"]
    for name, where in H1_ROWS:
        if name not in rm:
            continue
        v = rm[name]["verdicts"]
        b3 = v["B3"]["data"]
        st = {c: SHORT.get(v[c]["state"], v[c]["state"]) if c in v else "-" for c in ("B3", "wire-lo", "wire-veth")}
        ratio = f"{b3['ratio_p50']:.1f}x" if b3.get("ratio_p50") is not None else "-"
        lines.append(f"| `{name}`{f' ({where})' if where else ''} | {st['B3']} | {st['wire-lo']} / "
                     f"{st['wire-veth']} | {','.join(map(str, b3.get('tcp_nodelay_per_connection', []))) or '-'} "
                     f"| {ratio} |")
    return "\n".join(lines)


def block_clients(clients: dict | None) -> str:
    if not clients:
        return "(no client results in this run: see `repro/clients/`)"
    lines = ["| client | server | figures |", "|---|---|---|"]
    for c in clients.get("runs", []):
        lines.append(f"| {c['client']} | `{c['server']}` | {c['figure']} |")
    return "\n".join(lines)


def make_plot(doc: dict, results: Path) -> str:
    """Latency of every request on one socket, per row (gnuplot PNG)."""
    DOCS.mkdir(exist_ok=True)
    data = DOCS / "latency.dat"
    names = []
    with data.open("w") as f:
        for i, r in enumerate(doc["rows"]):
            p = results / r["row"].replace(" ", "_") / "b3.probe.json"
            if not p.exists():
                continue
            d = json.loads(p.read_text())
            names.append(r["row"])
            for n, us in enumerate(d["keepalive"]["latency_us"], 1):
                if us is not None:
                    f.write(f"{len(names) - 1} {us / 1000:.4f} {1 if n == 1 else 2}\n")
            for us in d["fresh"]["latency_us"]:
                if us is not None:
                    f.write(f"{len(names) - 1} {us / 1000:.4f} 3\n")
    if not shutil.which("gnuplot") or not names:
        return "(gnuplot not available: plot not regenerated)"
    tics = ", ".join(f'"{n}" {i}' for i, n in enumerate(names))
    script = f"""
set terminal pngcairo size 1400,700 noenhanced
set output '{DOCS / "latency.png"}'
set logscale y
set ylabel 'latency per request (ms, log scale)'
set xtics ({tics}) rotate by 30 right
set xrange [-0.5:{len(names) - 0.5}]
set grid ytics
set key below horizontal
set title 'One socket, 30 sequential GET /ping (request 1 and 2..30) vs a fresh socket per request'
plot '{data}' using ($1-0.15):($3==1?$2:1/0) with points pt 7 ps 1.2 title 'request 1', \\
     '' using ($1):($3==2?$2:1/0) with points pt 1 ps 1 title 'requests 2..30, same socket', \\
     '' using ($1+0.15):($3==3?$2:1/0) with points pt 6 ps 0.8 title 'fresh socket per request'
"""
    r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    if r.returncode != 0:
        return f"(gnuplot failed: {r.stderr.strip()[:200]})"
    return "![latency per request](docs/latency.png)"



# ---- the Pascal series and the real-trunk evidence ----------------------

def pascal_diff(name: str) -> str:
    """The diff of patches/fpc/NAME.patch (git format-patch form), without
    the mail header and the trailing signature."""
    path = TOP / "patches" / "fpc" / f"{name}.patch"
    if not path.exists():
        return f"(no Pascal patch `patches/fpc/{name}.patch` yet)"
    text = path.read_text()
    start = text.find("diff --git ")
    if start < 0:
        return f"(`patches/fpc/{name}.patch` has no diff)"
    body = re.split(r"\n-- \n\d", text[start:])[0].rstrip()
    return "```diff\n" + body + "\n```"


def block_fix(name: str) -> str:
    """The fix's Pascal patches (one or more, patchset.pascal) and their
    diffs."""
    p = patchset.by_name().get(name)
    parts = patchset.pascal(name) or [name]
    files = " and ".join(f"`patches/fpc/{n}.patch`" for n in parts)
    where = (f"{files} (`git am` form against fpc/FPCSource, cut on the "
             f"patches before {'them' if len(parts) > 1 else 'it'} in `patches/fpc/series`; "
             f"alone on the snapshot, `patch -p1` takes {'them' if len(parts) > 1 else 'it'}); "
             f"the same change in the C model: `patches/{name}.patch`")
    routine = f" Routine: `{p.routine}`." if p and p.routine else ""
    return where + "." + routine + "\n\n" + "\n\n".join(pascal_diff(n) for n in parts)


def real_of(clone: str) -> str:
    return "real trunk" if clone == "stock" else f"real trunk + {clone}"


def block_verified(doc: dict, defect: str) -> str:
    """The defect's column on the real trunk, stock against each set that
    should fix it, with the clone's verdict beside it."""
    rm = rowmap(doc)
    sets = ["stock"] + [p.name for p in patchset.patches() if p.defect == defect]
    sets += [pr for pr in kit.PAIRS if defect in patchset.fixed_by(pr)] + ["all"]
    lines = ["| patch set | real trunk | clone | evidence (real trunk) |", "|---|---|---|---|"]
    for s in dict.fromkeys(sets):
        real, clone = rm.get(real_of(s)), rm.get(s)
        if not real:
            lines.append(f"| `{s}` | not built in this run | "
                         f"{clone['verdicts'][defect]['state'] if clone else '-'} | - |")
            continue
        v = real["verdicts"][defect]
        lines.append(f"| `{s}` | {v['state']} | "
                     f"{clone['verdicts'][defect]['state'] if clone else '-'} | {v['figure']} |")
    return "\n".join(lines)


def block_fidelity(doc: dict) -> str:
    """Clone against real trunk, every scenario of every row that has both."""
    rm = rowmap(doc)
    pairs = [(r, rm[r["counterpart"]]) for r in doc["rows"]
             if r.get("counterpart") and r["counterpart"] in rm]
    if not pairs:
        return "(no real-trunk rows in this run: `make real-trunk` needs an FPCSource tree)"
    cols = [c for c in DEFECTS + ["wire-lo", "wire-veth"] if c in pairs[0][0]["verdicts"]]
    lines = ["| patch set | " + " | ".join(cols) + " | clone = real |",
             "|---|" + "---|" * (len(cols) + 1)]
    for real, clone in pairs:
        cells = []
        for c in cols:
            a, b = clone["verdicts"][c]["state"], real["verdicts"][c]["state"]
            cells.append(SHORT.get(a, a) if a == b else f"**{SHORT.get(a, a)} / {SHORT.get(b, b)}**")
        lines.append(f"| `{clone['row']}` | " + " | ".join(cells) + " | "
                     + ("yes" if not real.get("differs_from_clone") else
                        "NO: " + ", ".join(real["differs_from_clone"])) + " |")
    lines.append("")
    lines.append("A cell reads `clone / real` where the two differ.")
    return "\n".join(lines)


def block_windows(doc: dict) -> str:
    rows = [r for r in doc["rows"] if r.get("platform") == "win64" and not is_horse(r)]
    if not rows:
        return "(no win64 rows in this run: `make real-trunk-win64` needs the trunk toolchain and Wine)"
    head = ["build (under Wine)"] + DEFECTS + ["wire-lo", "sendto/resp", "NODELAY/conn", "reuse/off"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        v = r["verdicts"]
        b3 = v["B3"]["data"]
        ratio = f"{b3['ratio_p50']:.1f}x" if b3.get("ratio_p50") is not None else "-"
        wire = SHORT.get(v["wire-lo"]["state"], "-") if "wire-lo" in v else "-"
        lines.append(f"| `{r['row']}` | "
                     + " | ".join(SHORT.get(v[d]["state"], v[d]["state"]) for d in DEFECTS)
                     + f" | {wire} | {','.join(map(str, b3.get('sends_per_response', []))) or '-'}"
                     + f" | {','.join(map(str, b3.get('tcp_nodelay_per_connection', []))) or '-'}"
                     + f" | {ratio} |")
    return "\n".join(lines)


# ---- the texts: REPORT.md (the cover letter), report/Bn.md (one text per
# defect for FPC's tracker), report/evidence/Bn.md (the kit's evidence) ----

def texts() -> list[Path]:
    """Every text with generated blocks, REPORT.md first."""
    return ([REPORT, APPENDIX] + sorted(TRACKER.glob("B*.md")) + sorted((TRACKER / "evidence").glob("B*.md"))
            + sorted(CONFIDENTIAL.glob("B*-tracker.md")) + sorted(CONFIDENTIAL.glob("B*-evidence.md"))
            + sorted((TRACKER / "horse").glob("H*.md")) + [TRACKER / "conformance.md"])


def title_of(defect: str) -> str:
    text = tracker_path(defect).read_text()
    m = re.search(rf"^# {defect}\. (.*)$", text, re.M)
    return m.group(1) if m else "?"


# Why a defect cannot arise on FPC 3.2.2, where the reason is not the
# missing keep-alive.
NA_322 = {"B19": "cannot arise (no MaxLiveConnectionCount, so no 503)",
          "B21": "cannot arise (no tmPolled)"}
# Where 3.2.2's reproducer fails by another defect's symptom, not this one's.
OTHER_322 = {"B2": "not affected as such: it has no keep-alive loop and closes after the first "
                   "response (B4's symptom), so the pipelined requests after it go unanswered there too"}


def version_322(doc: dict, defect: str) -> str:
    """What the matrix measured on Debian's FPC 3.2.2 for this defect."""
    row = next((r for r in doc["rows"] if r["row"].startswith("real FPC 3.2")), None)
    if not row:
        return "not measured in this run"
    if row["verdicts"][defect]["state"] == "n/a" and defect in NA_322:
        return NA_322[defect]
    if row["verdicts"][defect]["state"] == "reproduced" and defect in OTHER_322:
        return OTHER_322[defect]
    return {"reproduced": "affected", "fixed": "not affected",
            "n/a": "cannot arise (no keep-alive)"}.get(row["verdicts"][defect]["state"],
                                                      row["verdicts"][defect]["state"])


def block_head(doc: dict, defect: str) -> str:
    env = doc["environment"]
    return (upstream_texts.tracker_head(defect, title_of(defect), version_322(doc, defect),
                                        patchset.security().get(defect, "")) +
            f"- Evidence: the fphttpserver reproducer kit, `make repro` "
            f"(run {env.get('date_utc')}, kit commit {env.get('commit')})"
            # behind nginx, haproxy, Apache (proxies.py); never for a security-relevant defect
            + ("" if defect in patchset.security() else "\n" + proxies.impact_line(doc, defect)))


# Where an upstream routine starts in the snapshot the kit follows.
UPSTREAM_TAR = TOP.parent / "shared" / "upstream" / "fpcsource-1dba64b-min.tar.xz"
UPSTREAM_UNITS = ("packages/fcl-web/src/base/fphttpserver.pp", "packages/fcl-net/src/ssockets.pp",
                  "packages/fcl-base/src/fpthreadpool.pp", "packages/fcl-web/src/base/httpdefs.pp")
_units: dict[str, list[str]] = {}


def upstream_unit(path: str) -> list[str]:
    if path not in _units:
        copy = TOP / "build" / "fpc-trunk" / "src" / path
        try:
            text = copy.read_text(errors="replace") if copy.exists() else subprocess.run(
                ["tar", "-xJOf", str(UPSTREAM_TAR), "./" + path], capture_output=True,
                check=True).stdout.decode(errors="replace")
        except (OSError, subprocess.CalledProcessError):
            text = ""
        _units[path] = text.splitlines()
    return _units[path]


def routine_line(routine: str) -> str:
    pat = re.compile(rf"^\s*(procedure|function|constructor|destructor)\s+{re.escape(routine)}\b", re.I)
    for path in UPSTREAM_UNITS:
        for i, line in enumerate(upstream_unit(path), 1):
            if pat.match(line):
                return f"`{routine}` ({Path(path).name}:{i})"
    return f"`{routine}`"


def block_patch(name: str) -> str:
    """The fix's Pascal patch files, subject, size and the routines it
    changes with their lines in the snapshot; the diff itself is in the
    evidence text and in the file."""
    p = patchset.by_name().get(name)
    out = []
    for n in patchset.pascal(name) or [name]:
        path = TOP / "patches" / "fpc" / f"{n}.patch"
        if not path.exists():
            out.append(f"(no `patches/fpc/{n}.patch`)")
            continue
        text = path.read_text()
        m = re.search(r"^Subject: (?:\[PATCH[^]]*\] )?(.*(?:\n .*)*)", text, re.M)
        subj = re.sub(r"\s*\n\s*", " ", m.group(1)) if m else "?"
        stat = re.search(r"^ \d+ files? changed.*$", text, re.M)
        out.append(f"`patches/fpc/{n}.patch` (`git am`), \"{subj}\"" +
                   (f": {stat.group(0).strip()}" if stat else ""))
    routines = [r.strip() for r in (p.routine if p else "").split(",") if r.strip()]
    where = ("; changes " + ", ".join(routine_line(r) for r in routines) +
             " at fpc/FPCSource 1dba64b") if routines else ""
    return " and ".join(out) + where + "."


def block_defects() -> str:
    """The cover letter's list: one line per defect, its texts and fix."""
    rows = ["| defect | introduced | fix (`patches/fpc/`) | tracker text | evidence |", "|---|---|---|---|---|"]
    for d in DEFECTS:
        if d in patchset.security():
            rows.append(f"| {d}. security-relevant: reported confidentially | | | | |")
            continue
        fixes = [p.name for p in patchset.patches() if p.defect == d]
        st = upstream_texts.introduced_short(d)
        rows.append(f"| {d}. {title_of(d)} | {st} | {', '.join(f'`{f}`' for f in fixes)} "
                    f"| [report/{d}.md](report/{d}.md) | [report/evidence/{d}.md](report/evidence/{d}.md) |")
    return "\n".join(rows)


COVER_CLASS = upstream_texts.COVER_CLASS


def block_cover(doc: dict) -> str:
    """REPORT.md's list: the public defects in the cover's order, each with
    its report (Report:), its text and FPC 3.2.2's state in this run."""
    sec = patchset.security()
    public = [d for d in DEFECTS if d not in sec]
    listed = [d for _, ds in COVER_CLASS.values() for d in ds]
    missing = [d for d in public if d not in listed]   # a new defect: listed last until placed
    classes = list(COVER_CLASS.values()) + ([(upstream_texts.OTHER_CLASS, missing)] if missing else [])
    report_of = {p.defect: p.report for p in patchset.patches()}
    lines = [f"Security: {len(sec)} security-relevant defects were reported confidentially."
             if len(sec) != 3 else "Security: three security-relevant defects were reported confidentially.", ""]
    for title, ds in classes:
        lines += [f"{title}:", "", "| defect | FPC 3.2.2 | report |", "|---|---|---|"]
        for d in ds:
            if d in sec or d not in public:
                continue
            lines.append(f"| [{d}](report/{d}.md). {title_of(d)} | {version_322(doc, d).split(':')[0]} "
                         f"| {report_of.get(d, 'no fix yet')} |")
        lines.append("")
    return "\n".join(lines).rstrip()


def block_conformance(results: Path, short: bool = False) -> str:
    """The RFC 9110 / 9112 conformance table of the last `make conformance`
    (results/conformance/conformance.json): whole in report/conformance.md,
    its verdict counts in REPORT.md (short)."""
    f = results.parent / "conformance" / "conformance.json"
    if not f.exists():
        return "*(no conformance run: `make conformance` writes results/conformance/conformance.json)*"
    sys.path.insert(0, str(TOP / "tests" / "hostile"))
    import conformance  # noqa: E402  (tests/hostile/conformance.py)
    return (conformance.summary_md if short else conformance.markdown)(load(f))


def replace_block(text: str, name: str, body: str) -> str:
    pat = re.compile(rf"(<!-- generated:{re.escape(name)} -->\n).*?(<!-- /generated:{re.escape(name)} -->)",
                     re.S)
    return pat.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)


def generate(matrix: Path, sweep: Path) -> int:
    doc = load(matrix)
    sw = load(sweep) if sweep.exists() else None
    if sw and sw.get("short"):
        sys.exit(f"report: {sweep} is a --short sweep; the report takes a full `make sweep` run")
    results = matrix.parent
    cl_path = results / "clients" / "clients.json"
    clients = load(cl_path) if cl_path.exists() else None
    blocks = {
        "defects": block_defects(),
        "cover": block_cover(doc),
        "matrix": block_matrix(doc),
        "b1": block_defect(doc, "B1", ["stock", "stock --on-allow-connect nodelay",
                                       "forward-allow-connect", "forward-allow-connect --on-allow-connect nodelay", "all"]),
        "b2": block_defect(doc, "B2", ["stock", "buffer-aware-pending", "all"]),
        "b3": block_b3_figures(doc),
        "b4": block_defect(doc, "B4", ["stock", "announce-close", "all"]),
        "b5": block_defect(doc, "B5", ["stock", "keep-surplus-bytes", "buffer-aware-pending",
                                       "keep-surplus-bytes+buffer-aware-pending", "all"]),
        "b6": block_defect(doc, "B6", ["stock", "buffer-aware-pending", "pool-idle-fallback", "all"]),
        "ladder-stock": ladder_excerpt("stock-b3", 2),
        "ladder-fix": ladder_excerpt("set-tcp-nodelay", 2),
        "ladder-nodelay": ladder_excerpt("socket-handler-nodelay", 2),
        "strace-b3": strace_excerpt("stock-b3", r"sendto|select\(", 6),
        "strace-b2": strace_excerpt("stock-b2", r"select\(.*= 0|recvfrom|sendto", 6, True),
        "mitigations": block_mitigations(doc),
        "versions": block_versions(doc),
        "b7": block_defect(doc, "B7", ["stock", "pool-idle-fallback", "pool-schedule-unlocked", "all"]),
        "b8": block_defect(doc, "B8", ["stock", "poll-can-read", "all"]),
        "b9": block_defect(doc, "B9", ["stock", "pool-idle-fallback", "set-idle-keeps-check", "all"]),
        "b10": block_defect(doc, "B10", ["stock", "expect-continue", "all"]),
        "b11": block_defect(doc, "B11", ["stock", "buffer-aware-pending", "reject-ambiguous-framing", "all"]),
        "b12": block_defect(doc, "B12", ["stock", "read-body-as-it-arrives", "all"]),
        "b13": block_defect(doc, "B13", ["stock", "read-connection-options", "all"]),
        "b14": block_defect(doc, "B14", ["stock", "head-without-content", "all"]),
        "b15": block_defect(doc, "B15", ["stock", "stop-frees-connections", "all"]),
        "b16": block_defect(doc, "B16", ["stock", "answer-request-errors", "all"]),
        "b17": block_defect(doc, "B17", ["stock", "request-head-deadline", "all"]),
        "b18": block_defect(doc, "B18", ["stock", "skip-leading-empty-lines", "all"]),
        "b19": block_defect(doc, "B19", ["stock", "delimit-503", "all"]),
        "b20": block_defect(doc, "B20", ["stock", "accept-absolute-form", "all"]),
        "b21": block_defect(doc, "B21", ["stock", "pool-idle-fallback", "polled-wait-for-requests", "all"]),
        "fidelity": block_fidelity(doc),
        "windows": block_windows(doc),
        "clients": block_clients(clients),
        "horse": block_horse(doc),
        "horse-h1": block_horse_h1(doc),
        "h2load": block_h2load(results),
        "conformance": block_conformance(results),
        "conformance-summary": block_conformance(results, short=True),
        "b3-bench": block_b3_bench(),
        "b3-bench-short": block_b3_bench_short(),
        "plot": make_plot(doc, results),
        "b3-sweep": sweep_report.block_b3(sw),
        "b3-cost": sweep_report.block_cost(sw),
        "b3-band": sweep_report.block_band(sw),
        "b2-sweep": sweep_report.block_counts(sw, "B2"),
        "b5-sweep": sweep_report.block_counts(sw, "B5"),
        "sweep-plot": sweep_report.make_plot(sw, DOCS),
    }
    for p in patchset.patches():
        blocks[f"fix-{p.name}"] = block_fix(p.name)
    for d in DEFECTS:
        blocks[f"verified-{d}"] = block_verified(doc, d)
        blocks[f"introduced-{d}"] = upstream_texts.introduced(d)
        blocks[f"reproduce-{d}"] = upstream_texts.reproduce(d)
        blocks[f"test-{d}"] = upstream_texts.regression_test(d)
    for p in patchset.patches():
        blocks[f"patch-{p.name}"] = block_patch(p.name)
    # B21's texts name its fix before the fix is in the series: until then
    # its blocks say so.
    if "polled-wait-for-requests" not in patchset.fixes():
        blocks["patch-polled-wait-for-requests"] = blocks["fix-polled-wait-for-requests"] = \
            "(no `patches/fpc/polled-wait-for-requests.patch` in the series yet)"
    for d in DEFECTS:
        blocks[f"head-{d}"] = block_head(doc, d)
    unknown = []
    for path in texts():
        text = path.read_text()
        up = "../" * (len(path.relative_to(TOP).parts) - 1)   # links are from the top
        for name in re.findall(r"<!-- generated:([^ >]+) -->", text):
            if name not in blocks:
                unknown.append(f"{path.relative_to(TOP)}: {name}")
            else:
                text = replace_block(text, name, blocks[name].replace("](docs/", f"]({up}docs/")
                                     .replace("](report/", f"]({up}report/"))
        path.write_text(text)
    if unknown:
        sys.exit("report: no generator for the block(s) " + ", ".join(unknown))
    CLAIMS.write_text(json.dumps(claims(doc), indent=1, sort_keys=True) + "\n")
    print(f"report: {len(texts())} texts (REPORT.md, report/, report/evidence/) and "
          f"{CLAIMS.name} regenerated from {matrix}")
    return 0


def check(matrix: Path) -> int:
    try:
        old = json.loads(CLAIMS.read_text())
    except (OSError, ValueError) as e:
        print(f"TEST: report claims [FAIL] {CLAIMS.name}: {e}")
        return 1
    new = claims(load(matrix))
    rc = check_pascal()
    diffs = compare_claims(old, new)
    for row in old:
        bad = [d for d in diffs if d.startswith(row + ":") or f"'{row}'" in d]
        print(f"TEST: report {row} [{'FAIL' if bad else ' OK '}]" + (" " + "; ".join(bad) if bad else ""))
    extra = [d for d in diffs if "not in the report" in d]
    for d in extra:
        print(f"TEST: report coverage [FAIL] {d}")
    return 1 if diffs or rc else 0


def check_pascal() -> int:
    """Every Fix section's Pascal is exactly its patch's diff."""
    text, rc = "\n".join(t.read_text() for t in texts()), 0
    for p in patchset.patches():
        m = re.search(rf"<!-- generated:fix-{re.escape(p.name)} -->\n(.*?)\n<!-- /generated:", text, re.S)
        ok = bool(m) and m.group(1) == block_fix(p.name)
        print(f"TEST: report Pascal of {p.name} equals {' + '.join(f'patches/fpc/{n}.patch' for n in patchset.pascal(p.name) or [p.name])} "
              f"[{' OK ' if ok else 'FAIL'}]" + ("" if ok else " (run make report)"))
        rc |= not ok
    return rc


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--matrix", default=str(TOP / "results" / "latest" / "matrix.json"))
    ap.add_argument("--sweep", default=str(TOP / "results" / "sweep" / "sweep.json"))
    ap.add_argument("--check", metavar="MATRIX_JSON")
    a = ap.parse_args()
    if a.check:
        return check(Path(a.check))
    return generate(Path(a.matrix), Path(a.sweep))


if __name__ == "__main__":
    sys.exit(main())
