#!/usr/bin/env python3
"""introduced.py - the upstream commit that introduced a defect (`make bisect`).

usage: repro/bisect/introduced.py DEFECT [--hist PATH] [--rev REV]
                              [--results FILE] [--expect FILE]
       repro/bisect/introduced.py --check FILE

DEFECT   B1..B8, or one symptom of a defect that has several
         (defects.SYMPTOMS: B2.thread, B2.polled, B2.pool, B8.first,
         B8.next, B8.polled).  A defect with several symptoms
         is bisected once per symptom, each with its own measure.
--hist   an FPCSource history: a clone (a maintainer's own; it is cloned
         --shared, never checked out or bisected in place) or a bundle
         (default: ../shared/upstream/fpcsource-1dba64b-history.bundle).
--rev    the bad end (default: the bundle's main, a clone's HEAD).
--results  add the answer to this JSON file (one entry per defect; a
           defect with several symptoms has one entry per symptom under
           "symptoms", and its own fields are its first symptom's).
--expect   compare the answer with this file's entry (per symptom) and
           fail if it differs.
--check  only check that every entry of FILE is well formed.

How: the tip must show the defect (the kit's verdict).  The good end is the
parent(s) of the oldest testable commit (a binary search over testability
on the first-parent line, oldest_testable), so that git does not skip its
way through the years before the feature.  `git bisect run step.py` then
builds each commit's server (history.py) and judges it; untestable commits
are skipped with the reason.  The answer is checked the way a maintainer would: the
named commit and each of its parents are built and judged again, apart
from the bisect.  Exit: 0 answer found and verified (and equal to
--expect), 1 not, 4 skipped (no trunk toolchain or probe).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import history  # noqa: E402
from history import BAD, GOOD, SKIP, git  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_HIST = history.kit.TOP.parent / "shared" / "upstream" / "fpcsource-1dba64b-history.bundle"
KINDS = ("introduced", "present-since-oldest-testable")


def say(msg: str) -> None:
    print(f"bisect: {msg}", flush=True)


def clone(hist: Path, dest: Path) -> str:
    """A private clone of hist without a work tree; returns the default bad
    revision (a bundle's main, a clone's HEAD)."""
    if hist.is_file():
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(hist), "-b", "main", str(dest)],
                       check=True)
        return "main"
    subprocess.run(["git", "clone", "-q", "--no-checkout", "--shared", str(hist), str(dest)],
                   check=True)
    return "HEAD"


def describe(c: history.Commit) -> dict:
    return {"upstream": c.upstream, "commit": c.sha, "date": c.date, "subject": c.subject}


def judged(repo: Path, sha: str, defect: str, tag: str, fresh: bool = False) -> dict:
    """Build and judge sha apart from the bisect steps (fresh: compiled
    again, not taken from the cache: the maintainer's check)."""
    t0 = time.monotonic()
    o, _ = history.test(repo, sha, defect, tag, fresh)
    return {**describe(history.commit(repo, sha)), "state": o.state, "reason": o.reason,
            "exit": o.code, "seconds": round(time.monotonic() - t0, 1)}


def read_steps(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def testable(o: history.Outcome) -> bool:
    """The commit builds and has the feature (an inconclusive run has it)."""
    return o.state not in ("untestable", "n/a")


def oldest_testable(repo: Path, tip: str, defect: str) -> tuple[str, list[dict]]:
    """The oldest commit on tip's first-parent line whose server builds and
    has the defect's feature, by binary search.  Testability need not
    switch once along the line (a commit that does not compile in the
    middle): SAMPLES older commits, evenly spread, are tried, and a
    testable one restarts the search below it.  Marking the answer's
    parents good bounds the bisect: without it, git would have to skip
    every commit of the years before the feature, one build each."""
    # Only commits that changed the three folders (all of the bundle's; a
    # full clone's others build the same trees), from fphttpserver.pp's
    # first commit on the line, oldest first.
    born = git(repo, "rev-list", "--first-parent", tip, "--", history.SERVER_SOURCE).split()[-1]
    line = git(repo, "rev-list", "--first-parent", tip, "--not",
               *history.commit(repo, born).parents, "--", *history.FOLDERS).split()[::-1]
    probes: list[dict] = []

    def probe(i: int) -> bool:
        o, _ = history.test(repo, line[i], defect, "testable")
        c = history.commit(repo, line[i])
        probes.append({"upstream": c.upstream, "date": c.date, "state": o.state, "reason": o.reason})
        say(f"{defect}: testable? {c.short()} {c.date[:10]}: {o.state}: {o.reason[:120]}")
        return testable(o)

    if probe(0):
        return line[0], probes
    known = {0: False}
    hi = len(line) - 1                  # line[hi] is testable (the tip showed the defect)
    while True:
        lo = max(i for i, t in known.items() if i < hi and not t)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            known[mid] = probe(mid)
            hi, lo = (mid, lo) if known[mid] else (hi, mid)
        older = sorted({(hi * k) // (SAMPLES + 1) for k in range(1, SAMPLES + 1)} - known.keys())
        found = None
        for i in older:                 # evenly spread below hi: untestable too?
            known[i] = probe(i)
            if known[i]:
                found = i
                break
        if found is None:
            return line[hi], probes
        hi = found


SAMPLES = 4


def classify(named: dict, parents: list[dict]) -> tuple[str | None, str]:
    """The kind of answer the verification supports, or None and why not."""
    if named["exit"] != BAD:
        return None, f"the named commit does not show the defect ({named['state']}: {named['reason']})"
    if parents and all(p["exit"] == GOOD for p in parents):
        return "introduced", "defect at the named commit, absent at every parent"
    if any(p["exit"] == BAD for p in parents):
        return None, "a parent shows the defect too"
    if any(p["state"] == "inconclusive" for p in parents):
        return None, "a parent was inconclusive"
    return ("present-since-oldest-testable",
            "defect at the named commit; its parent(s) cannot be tested: "
            + "; ".join(p["reason"] for p in parents) if parents else "root commit")


def statement(kind: str, c: dict) -> str:
    what = f"{c['upstream'][:10]} ({c['date'][:10]}, {c['subject']})"
    return (f"Introduced by {what}" if kind == "introduced"
            else f"Present since the oldest testable commit {what}")


def run_bisect(defect: str, repo: Path, rev: str, work: Path) -> dict:
    steps_path = work / "steps.jsonl"
    tip = history.commit(repo, rev)
    say(f"{defect}: the bad end {tip.short()} ({tip.date[:10]}) must show the defect")
    tip_check = judged(repo, tip.sha, defect, "tip")
    if tip_check["exit"] != BAD:
        raise SystemExit(f"bisect: {defect} is not reproduced at {tip.short()}: "
                         f"{tip_check['state']}: {tip_check['reason']}")
    oldest, probes = oldest_testable(repo, tip.sha, defect)
    goods = history.commit(repo, oldest).parents
    if not goods:
        raise SystemExit(f"bisect: the oldest testable commit {oldest[:10]} is a root commit")
    git(repo, "bisect", "start", "--no-checkout", tip.sha, *goods)
    t0 = time.monotonic()
    run = subprocess.Popen(["git", "-C", str(repo), "bisect", "run", sys.executable,
                            str(HERE / "step.py"), defect, str(steps_path)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = []
    for line in run.stdout:             # each step's verdict as it comes
        out.append(line)
        if line.startswith("bisect "):
            print(line.rstrip("\n"), flush=True)
    rc = run.wait()
    seconds = round(time.monotonic() - t0, 1)
    text = "".join(out)
    log = git(repo, "bisect", "log")
    first_bad = git(repo, "rev-parse", "refs/bisect/bad")
    only_skipped = "only 'skip'ped commits left" in text
    named_bisect = "is the first bad commit" in text
    git(repo, "bisect", "reset")
    if not (named_bisect or only_skipped):
        sys.stdout.write(text[-3000:])
        raise SystemExit(f"bisect: git bisect run ended without an answer (exit {rc})")
    steps = read_steps(steps_path)
    return {"tip": {**describe(tip), "state": tip_check["state"], "reason": tip_check["reason"]},
            "good_end": {"commits": goods, "oldest_testable": describe(history.commit(repo, oldest)),
                         "probes": probes,
                         "why": "parent(s) of the oldest testable commit on the first-parent "
                                "line (untestable: they only bound the search)"},
            "first_bad": first_bad, "git_named_first_bad": named_bisect,
            "seconds": seconds, "steps": steps, "log": log}


def answer(defect: str, hist: Path, rev: str | None) -> dict:
    t_all = time.monotonic()
    history.WORK.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{defect}-", dir=history.WORK))
    try:
        repo = work / "hist"
        default_rev = clone(hist, repo)
        rev = rev or default_rev
        b = run_bisect(defect, repo, rev, work)
        named_c = history.commit(repo, b["first_bad"])
        say(f"{defect}: first bad {named_c.short()}; verifying it and its parent(s) by hand")
        named = judged(repo, named_c.sha, defect, "verify", fresh=True)
        parents = [judged(repo, p, defect, "verify-parent", fresh=True) for p in named_c.parents]
        kind, why = classify(named, parents)
        steps = b.pop("steps")
        skipped = [{"upstream": s["upstream"], "date": s["date"], "reason": s["reason"]}
                   for s in steps if s["exit"] == SKIP]
        tested = [s for s in steps if s["exit"] != SKIP]
        # Each distinct reason whole (a twice-inconclusive one: its first
        # figure) with its count: what a text prints, so it need not cut one.
        reasons: dict[str, int] = {}
        for sk in skipped:
            r = sk["reason"].split(" | ")[0]
            reasons[r] = reasons.get(r, 0) + 1
        entry = {
            "defect": defect, "kind": kind,
            "statement": statement(kind, describe(named_c)) if kind else None,
            "first_bad": describe(named_c),
            "parents": [{k: p[k] for k in ("upstream", "commit", "date", "subject")}
                        for p in parents],
            "verification": {"ok": kind is not None, "why": why,
                             "how": "the named commit and each parent compiled again (not from "
                                    "the bisect's build cache: repro/fpc/build.sh --tree on a "
                                    "fresh git archive of the commit) and judged by defects.measure",
                             "named": {k: named[k] for k in ("state", "reason", "seconds")},
                             "parents": [{k: p[k] for k in ("upstream", "state", "reason", "seconds")}
                                         for p in parents]},
            "bisect": {"seconds": b["seconds"], "tested": len(tested), "skipped": skipped,
                       "skipped_reasons": [{"count": n, "reason": r} for r, n in reasons.items()],
                       # the seconds depend on it: a compile is 1-4 s, a cached build none
                       "builds_from_cache": sum(1 for s in steps if s["build_cached"]),
                       "builds_compiled": sum(1 for s in steps if s["build_cached"] is False),
                       "steps": [{k: s[k] for k in ("upstream", "commit", "date", "state", "reason",
                                                    "seconds", "build_cached")}
                                 for s in steps],
                       "git_named_first_bad": b["git_named_first_bad"],
                       "tip": b["tip"], "good_end": b["good_end"],
                       "history": str(hist), "log": b["log"]},
            "seconds_total": round(time.monotonic() - t_all, 1),
        }
        return entry
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---- results.json ---------------------------------------------------------

ENTRY_KEYS = {"defect", "kind", "statement", "first_bad", "parents", "verification", "bisect"}


def check_entry(d: str, e: dict) -> list[str]:
    """What is wrong with one results.json entry (empty: well formed)."""
    bad = [f"{d}: missing {k}" for k in sorted(ENTRY_KEYS - e.keys())]
    if bad:
        return bad
    fb, v, b = e["first_bad"], e["verification"], e["bisect"]
    if e["defect"] != d:
        bad.append(f"{d}: entry names {e['defect']}")
    if e["kind"] not in KINDS:
        bad.append(f"{d}: kind {e['kind']!r}")
    elif e["statement"] != statement(e["kind"], fb):
        bad.append(f"{d}: statement does not match first_bad")
    if len(fb.get("upstream", "")) != 40 or not fb.get("date") or not fb.get("subject"):
        bad.append(f"{d}: first_bad needs a 40-digit upstream hash, a date and a subject")
    why_ok = (v.get("why") == "defect at the named commit, absent at every parent"
              if e["kind"] == "introduced" else
              str(v.get("why")).startswith(("defect at the named commit; its parent(s) cannot be tested",
                                            "root commit")))
    if not why_ok:
        bad.append(f"{d}: verification why {str(v.get('why'))[:60]!r} does not go with '{e['kind']}'")
    if not v.get("ok") or v.get("named", {}).get("state") != "reproduced":
        bad.append(f"{d}: verification: the named commit must show the defect")
    pstates = [p.get("state") for p in v.get("parents", [])]
    if len(pstates) != len(e["parents"]):
        bad.append(f"{d}: a verdict for every parent")
    want = {"fixed"} if e["kind"] == "introduced" else {"untestable", "n/a"}
    if not set(pstates) <= want:
        bad.append(f"{d}: parents {pstates} do not support '{e['kind']}'")
    if "# first bad commit" not in b.get("log", "") and "# only skipped commits" not in b.get("log", ""):
        bad.append(f"{d}: bisect log has no conclusion")
    if not isinstance(b.get("seconds"), (int, float)) or not isinstance(b.get("tested"), int):
        bad.append(f"{d}: bisect seconds/tested")
    return bad


# Fields of a symptom's entry that its defect's own fields repeat (the
# first symptom's: what the matrix column judges, what older readers read).
MIRRORED = ("kind", "statement", "first_bad", "parents", "verification")


def check_symptoms(d: str, e: dict) -> list[str]:
    """A defect with several symptoms (defects.SYMPTOMS): an entry for each,
    well formed, judged by its own measure; the defect's own fields the
    first symptom's."""
    want = history.defects.symptoms(d)
    syms = e.get("symptoms")
    if len(want) == 1:
        return [f"{d}: symptoms, but defects.SYMPTOMS has none for {d}"] if syms is not None else []
    if not isinstance(syms, dict):
        return [f"{d}: no per-symptom entries (want {', '.join(n for n, _, _ in want)})"]
    bad = [f"{d}: no entry for symptom {n}" for n, _, _ in want if n not in syms]
    bad += [f"{d}: symptom {n} is not in defects.SYMPTOMS" for n in syms if n not in {w[0] for w in want}]
    for n, measure, text in want:
        s = syms.get(n)
        if s is None:
            continue
        bad += [f"{d}.{n}: {p.split(': ', 1)[1]}" for p in check_entry(d, s)]
        if (s.get("symptom"), s.get("measure"), s.get("symptom_text")) != (n, measure, text):
            bad.append(f"{d}.{n}: symptom/measure/symptom_text do not match defects.SYMPTOMS")
    first = syms.get(want[0][0], {})
    if any(e.get(k) != first.get(k) for k in MIRRORED):
        bad.append(f"{d}: its own fields are not those of its first symptom {want[0][0]}")
    return bad


def check_file(path: Path) -> list[str]:
    data = json.loads(path.read_text())
    bad = [f"no entry for {d}" for d in history.defects.DEFECTS if d not in data]
    for d, e in sorted(data.items()):
        bad += check_entry(d, e) + check_symptoms(d, e)
    return bad


def store(data: dict, defect: str, e: dict) -> None:
    """e (one symptom's answer, or a one-symptom defect's) into data."""
    if not e.get("symptom"):
        data[defect] = e
        return
    entry = data.get(defect) or {}
    syms = entry.get("symptoms") if isinstance(entry.get("symptoms"), dict) else {}
    syms[e["symptom"]] = e
    order = [n for n, _, _ in history.defects.symptoms(defect)]
    syms = dict(sorted(syms.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else 99))
    first = syms.get(order[0])
    entry = {**(first if first else entry), "symptoms": syms}
    if first:   # the defect's own fields: its first symptom's, without the symptom's name
        for k in ("symptom", "measure", "symptom_text"):
            entry.pop(k, None)
    data[defect] = entry


def expected(data: dict, defect: str, symptom: str) -> dict:
    e = data.get(defect, {})
    return e.get("symptoms", {}).get(symptom, {}) if symptom else e


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("defect", nargs="?")
    ap.add_argument("--hist", type=Path, default=Path(os.environ.get("FPCHIST") or DEFAULT_HIST))
    ap.add_argument("--rev")
    ap.add_argument("--results", type=Path)
    ap.add_argument("--expect", type=Path)
    ap.add_argument("--check", type=Path)
    a = ap.parse_args()
    if a.check:
        problems = check_file(a.check)
        for p in problems:
            print(f"bisect: {a.check.name}: {p}")
        data = json.loads(a.check.read_text())
        for d in history.defects.DEFECTS:   # a line per symptom of the defects that have several
            for n, measure, _ in (history.defects.symptoms(d) if len(history.defects.symptoms(d)) > 1 else []):
                s = data.get(d, {}).get("symptoms", {}).get(n)
                mine = [p for p in problems if p.startswith(f"{d}.{n}:") or p.startswith(f"{d}: ")]
                print(f"TEST: bisect {a.check.name} {measure} well formed " + (
                    f"[ OK ] {s['statement']}; parents: "
                    + ", ".join(f"{p['upstream'][:10]} {p['state']}" for p in s["verification"]["parents"])
                    if s and not mine else f"[FAIL] {'; '.join(mine) or 'no entry'}"))
        print(f"TEST: bisect {a.check.name} well formed "
              + ("[ OK ]" if not problems else f"[FAIL] {len(problems)} problems"))
        return 1 if problems else 0
    base, _, only = (a.defect or "").partition(".")
    if base not in history.defects.DEFECTS:
        ap.error(f"DEFECT must be one of {', '.join(history.defects.DEFECTS)}")
    targets = [t for t in history.defects.symptoms(base) if not only or t[0] == only]
    if not targets:
        ap.error(f"{base} has no symptom {only!r} (defects.SYMPTOMS: "
                 f"{', '.join(n for n, _, _ in history.defects.symptoms(base)) or 'one symptom'})")
    for need, why in ((history.FPC, "no trunk toolchain (make fpc-trunk)"),
                      (history.kit.PROBE, "no probe (make build/probe)")):
        if not need.exists():
            print(f"TEST: bisect {a.defect} [SKIP] {why}")
            return 4
    if not a.hist.exists():
        print(f"TEST: bisect {a.defect} [SKIP] no FPCSource history at {a.hist} (FPCHIST=...)")
        return 4
    ok = True
    for symptom, measure, text in targets:
        e = answer(measure, a.hist.resolve(), a.rev)
        e["defect"] = base
        if symptom:
            e.update(symptom=symptom, measure=measure, symptom_text=text)
        b = e["bisect"]
        say(f"{measure}: {e['statement'] or 'NO VERIFIED ANSWER'}; bisect {b['seconds']} s, "
            f"{b['tested']} tested, {len(b['skipped'])} skipped; verification: {e['verification']['why']}")
        if a.results:
            data = json.loads(a.results.read_text()) if a.results.exists() else {}
            store(data, base, e)
            a.results.write_text(json.dumps(dict(sorted(data.items(), key=lambda kv: int(kv[0][1:]))),
                                            indent=1) + "\n")
        one = e["kind"] is not None
        if a.expect:
            want = expected(json.loads(a.expect.read_text()), base, symptom)
            same = (want.get("kind"), want.get("first_bad", {}).get("upstream")) == \
                   (e["kind"], e["first_bad"]["upstream"])
            one = one and same
            print(f"TEST: bisect {measure} end to end " + (
                f"[ OK ] {e['statement']} ({e['seconds_total']} s)" if one else
                f"[FAIL] got {e['statement']}, {a.expect.name} says {want.get('statement')}"))
        ok = ok and one
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
