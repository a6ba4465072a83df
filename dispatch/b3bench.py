#!/usr/bin/python3
"""b3bench.py - what B3's two fixes cost or buy in throughput (`make bench`).

    dispatch/b3bench.py [--out results/bench] [--rounds 3] [--seconds 2]

Rows: stock, every B3 fix (repro/harness/patchset.py fixing B3: set-tcp-nodelay,
coalesce-writes) and all, for the model (build/<set>/server-min) and the
real trunk (build/real-trunk/<set>/fpserver), every server up for the whole
run on loopback.  Per round, wrk drives /ping at -c1 and -c16 on one server
at a time, the builds alternated (the order rotates each round, so a load
spike beside the bench falls on different builds), for a bounded time.
Figures are requests per second as same-run ratios against set-tcp-nodelay
of the same family, concurrency and round: the median over rounds, with the
spread (min..max); the raw rates are kept in b3bench.json.  No verdict is
made from a rate: on a shared machine only the ratios of one round compare.
Output: DIR/b3bench.json, DIR/b3bench.txt (the table).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOP = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(TOP / "repro" / "harness"))
import loadgen  # noqa: E402
import kit  # noqa: E402
import patchset  # noqa: E402

CONCURRENCY = (1, 16)
BASE = "set-tcp-nodelay"


def sets() -> list[str]:
    return ["stock", *patchset.fixing("B3"), "all"]


def binaries() -> list[tuple[str, str, Path]]:
    out = []
    for s in sets():
        out.append(("model", s, kit.binary(s)))
        out.append(("real trunk", s, kit.BUILD / "real-trunk" / s / "fpserver"))
    return [(f, s, b) for f, s, b in out if b.exists()]


def table(doc: dict) -> str:
    lines = [f"B3 throughput: wrk /ping on loopback, {doc['rounds']} rounds of {doc['seconds']} s "
             "per build and concurrency, builds alternated; requests/s as the ratio to "
             f"{BASE} of the same family, concurrency and round: median (min..max); "
             f"{BASE}'s own median rate for scale", "",
             "| family | set | -c1 | -c16 |", "| --- | --- | --- | --- |"]
    for fam in ("model", "real trunk"):
        for s in sets():
            cells = []
            for c in CONCURRENCY:
                r = doc["ratios"].get(f"{fam}|{s}|{c}")
                if not r:
                    cells.append("-")
                elif s == BASE:
                    rate = statistics.median(doc["rates"][f"{fam}|{s}|{c}"])
                    cells.append(f"1 ({rate:,.0f} req/s)")
                else:
                    cells.append(f"{statistics.median(r):.3f} ({min(r):.3f}..{max(r):.3f})")
            if any(x != "-" for x in cells):
                lines.append(f"| {fam} | {s} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(TOP / "results" / "bench"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=2)
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if not shutil.which("wrk"):
        print("[bench] b3: [SKIP] no wrk (apt-get install wrk)")
        return 0
    rows = binaries()
    load0 = os.getloadavg()[0]   # how quiet the machine was: the ratios only compare within a round
    servers = {}
    try:
        for fam, s, b in rows:
            srv = kit.Server([str(b), "--port", "0", "--address", "127.0.0.1", *kit.HORSE],
                             log_path=out / "b3bench" / f"{fam.replace(' ', '-')}-{s}.log")
            srv.start()
            servers[(fam, s)] = srv
        rates: dict[str, list[float]] = {}
        errors: dict[str, int] = {}
        order = list(servers)
        for rnd in range(a.rounds):
            k = rnd % len(order)
            for c in CONCURRENCY:
                for key in order[k:] + order[:k]:
                    srv = servers[key]
                    w = loadgen.wrk(srv.address, srv.port, "/ping", c, a.seconds)
                    name = f"{key[0]}|{key[1]}|{c}"
                    rates.setdefault(name, []).append(w.get("rps") or 0.0)
                    errors[name] = errors.get(name, 0) + int(w.get("errors") or 0)
            print(f"[bench] b3 round {rnd + 1} of {a.rounds} done", flush=True)
    finally:
        for srv in servers.values():
            srv.stop()
    ratios: dict[str, list[float]] = {}
    for name, rs in rates.items():
        fam, s, c = name.split("|")
        base = rates.get(f"{fam}|{BASE}|{c}")
        if base:
            ratios[name] = [round(x / b, 4) for x, b in zip(rs, base) if b]
    doc = {"rounds": a.rounds, "seconds": a.seconds, "base": BASE,
           "sets": sets(), "rates": rates, "ratios": ratios, "errors": errors,
           "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "cpus": os.cpu_count(), "loadavg_before": load0, "loadavg_after": os.getloadavg()[0]}
    (out / "b3bench.json").write_text(json.dumps(doc, indent=1))
    txt = table(doc)
    (out / "b3bench.txt").write_text(txt)
    print(txt)
    bad = {k: v for k, v in errors.items() if v}
    if bad:
        print(f"[bench] b3: wrk errors {bad}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
