#!/usr/bin/env python3
"""tests/findings/check.py - repro/fpc/FINDINGS-3.2.2.md's command, run as
printed, and the findings it says that command shows.

The text tells a reader to run `repro/fpc/build.sh && repro/fpc/investigate.sh`
to see what FPC 3.2.2's TFPHttpServer does.  This runs that line (taken from
the text, not copied), and checks the summary table's answers on what it
prints: no keep-alive and no Connection header, one response for three
pipelined requests, a POST(5 B)+GET that is never answered and, unthreaded,
stops the whole server while --horse (threaded) still answers; OnAllowConnect
and a socket handler's Accept each run once per connection.  The traces
folder it names is removed.  One 'TEST: findings <what> [ OK ]|[FAIL]' line
per check; exit 0 pass, 1 fail, 4 skip (a tool missing, with the reason).
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
TEXT = TOP / "repro" / "fpc" / "FINDINGS-3.2.2.md"
failures = 0


def test(what: str, ok: bool, why: str = "") -> None:
    global failures
    failures += not ok
    print(f"TEST: findings {what} [{' OK ' if ok else 'FAIL'}]" + (f" {why}" if not ok else ""))


def command() -> str:
    """The text's indented command line that runs investigate.sh, without
    its comment."""
    for line in TEXT.read_text().splitlines():
        if line.startswith("    ") and "repro/fpc/investigate.sh" in line:
            return line.split("#", 1)[0].strip()
    raise SystemExit(f"{TEXT}: no command line runs repro/fpc/investigate.sh")


def sections(out: str) -> dict[str, dict]:
    """Per experiment ('== NAME:' line): the rawhttp objects in order, and
    its '-- NAME: ...' summary lines joined."""
    got: dict[str, dict] = {}
    cur = None
    for line in out.splitlines():
        m = re.match(r"== ([\w-]+): ", line)
        if m:
            cur = got.setdefault(m[1], {"raw": [], "summary": ""})
        elif cur is not None and line.startswith("{"):
            cur["raw"].append(json.loads(line))
        elif cur is not None and (line.startswith("-- ") and "accepted=" in line
                                  or line.startswith("   server log:")):
            cur["summary"] += line + "\n"
    return got


def counts(summary: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"([\w/-]+)(?: lines)?=(\d+)", summary)}


def scenarios(raw: list[dict]) -> list[str]:
    return [r["scenario"] for r in raw]


def main() -> int:
    cmd = command()
    if not shutil.which("fpc"):   # the other tools: investigate.sh says (exit 4)
        print(f"TEST: findings {cmd} [SKIP] no fpc (Debian package fpc) for repro/fpc/build.sh")
        return 4
    r = subprocess.run(["bash", "-c", cmd], cwd=TOP, capture_output=True, text=True, timeout=300)
    folder = re.search(r"; traces in (\S+)$", r.stdout, re.M)   # its first line
    if folder and folder[1].startswith("/tmp/fpc-findings."):
        shutil.rmtree(folder[1], ignore_errors=True)
    if r.returncode == 4:
        print(f"TEST: findings {cmd} [SKIP] {r.stderr.strip()}")
        return 4
    test(f"'{cmd}' exits 0", r.returncode == 0 and "Traceback" not in r.stdout + r.stderr,
         f"exit {r.returncode}: {(r.stderr or r.stdout)[-600:]}")
    if r.returncode != 0:
        return 1
    test("it names its traces folder", folder is not None and f"traces: {folder[1]}" in r.stdout,
         r.stdout[-300:])
    got = sections(r.stdout)
    test("four experiments", sorted(got) == ["default", "horse", "on-allow-connect", "socket-handler"],
         f"{sorted(got)}")
    d, h = got.get("default", {"raw": []})["raw"], got.get("horse", {"raw": []})["raw"]
    want_d = ["single", "reuse", "pipeline3", "postget", "single", "postget"]
    want_h = ["single", "reuse", "pipeline3", "single", "postget"]
    test("rawhttp's runs, in order", scenarios(d) == want_d and scenarios(h) == want_h,
         f"default {scenarios(d)}, horse {scenarios(h)}")
    if failures:
        return 1
    for name, raw in (("default", d), ("horse", h)):
        single, reuse, pipe = raw[0], raw[1], raw[2]
        test(f"{name}: no keep-alive, no Connection header",
             single["responses"] == [{"status": "200 OK", "connection": None}]
             and reuse["reuse"].get("responses") == 0 and reuse["end"] == "EOF",
             f"single {single}, reuse {reuse}")
        test(f"{name}: three pipelined requests, one response", pipe["response_count"] == 1, f"{pipe}")
    test("default: POST(5 B)+GET never answered", d[3]["response_count"] == 0 == d[5]["response_count"],
         f"{d[3]}, held {d[5]}")
    test("default: a GET while it is held is not answered (the whole server stops)",
         d[4]["response_count"] == 0, f"{d[4]}")
    test("--horse: a GET while it is held is answered, the POST+GET not",
         h[3]["response_count"] == 1 and h[4]["response_count"] == 0, f"{h[3]}, {h[4]}")
    for name, hook in (("on-allow-connect", "on-allow-connect"), ("socket-handler", "socket-handler-accept")):
        c = counts(got[name]["summary"])
        test(f"{name}: runs once per connection, TCP_NODELAY on each",
             c.get("accepted") == 3 and c.get("TCP_NODELAY") == 3 and c.get(hook) == 3, f"{c}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
