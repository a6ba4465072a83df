"""history.py - the real server as it was at one commit of an FPCSource
history, and the kit's verdict on it.

Shared by step.py (the script `git bisect run` calls) and introduced.py (the
driver, which also checks the answer at the named commit and its parents),
so that a commit is built and judged in one way only.

Build: the three folders the defects live in (FOLDERS), as they were at the
commit, are put in front of the snapshot's own (repro/fpc/build.sh --tree)
and repro/fpc/fpserver.lpr is compiled with the snapshot's toolchain.  The
build is cached by the git tree IDs of those folders (the same content is
the same tree ID in the history bundle and in a full FPCSource clone), with
the program, the build script and the toolchain stamp in the key.  A build
that fails is cached too (its log is the reason a commit is skipped).

Verdict: defects.measure() on that program, exactly as `make repro` runs it.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
import kit  # noqa: E402
import defects  # noqa: E402  (the registry of measures, repro/defects/)

FOLDERS = ("packages/fcl-web/src/base", "packages/fcl-net/src", "packages/fcl-base/src")
SERVER_SOURCE = "packages/fcl-web/src/base/fphttpserver.pp"
BUILD_SH = kit.TOP / "repro" / "fpc" / "build.sh"
PROGRAM = kit.TOP / "repro" / "fpc" / "fpserver.lpr"
FPC = kit.TRUNK_FPC
TOOLCHAIN_STAMP = kit.BUILD / "fpc-trunk" / "stamp"
WORK = Path(os.environ.get("KIT_BISECT_WORK") or kit.BUILD / "bisect")   # a cold run: another folder
BUILDS = WORK / "builds"

# git bisect run's exit codes.
GOOD, BAD, SKIP = 0, 1, 125


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True,
                          capture_output=True, text=True).stdout.strip()


@dataclass
class Commit:
    sha: str            # in the history being bisected
    upstream: str       # FPCSource's hash (the bundle's Upstream-Commit trailer)
    date: str           # author date, ISO 8601
    subject: str
    parents: list[str]

    def short(self) -> str:
        return self.upstream[:10]


def commit(repo: Path, rev: str) -> Commit:
    sha = git(repo, "rev-parse", "--verify", f"{rev}^{{commit}}")
    fmt = "%P%n%aI%n%(trailers:key=Upstream-Commit,valueonly,separator=)%n%s"
    parents, date, upstream, subject = (git(repo, "log", "-1", f"--format={fmt}", sha)
                                        .split("\n", 3) + [""] * 4)[:4]
    return Commit(sha, upstream.strip() or sha, date, subject, parents.split())


def tree_ids(repo: Path, sha: str) -> dict[str, str | None]:
    """The git tree ID of each folder at sha (None: not there yet)."""
    out = {}
    for f in FOLDERS:
        r = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "-q",
                            f"{sha}:{f}"], capture_output=True, text=True)
        out[f] = r.stdout.strip() if r.returncode == 0 else None
    return out


def has_server(repo: Path, sha: str) -> bool:
    return subprocess.run(["git", "-C", str(repo), "cat-file", "-e", f"{sha}:{SERVER_SOURCE}"],
                          capture_output=True).returncode == 0


def _file_id(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()[:16]


def build_key(trees: dict[str, str | None]) -> str:
    """The cache key: the folders' content and what compiles them."""
    ident = json.dumps({"trees": trees, "program": _file_id(PROGRAM),
                        "build": _file_id(BUILD_SH),
                        "toolchain": TOOLCHAIN_STAMP.read_text().strip()}, sort_keys=True)
    return hashlib.sha256(ident.encode()).hexdigest()[:20]


@dataclass
class Build:
    exe: Path | None     # None: it did not compile
    reason: str          # why not (the compiler's first errors), or ""
    cached: bool


def _first_errors(log: str, n: int = 3) -> str:
    lines = [ln.strip() for ln in log.splitlines()
             if " Error: " in ln or " Fatal: " in ln or ln.startswith(("Error:", "fpc-build:"))]
    if lines:
        return "; ".join(lines[:n])
    tail = log.strip().splitlines()
    return tail[-1] if tail else "no output"


def _compile(repo: Path, sha: str, trees: dict, dest: Path) -> None:
    """Compile fpserver for sha into dest (fpserver, build.log, result.json)."""
    tree = dest / "tree"
    tree.mkdir(parents=True)
    present = [f for f, t in trees.items() if t]
    arch = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", sha, *present],
                          check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=arch, check=True)
    r = subprocess.run(["nice", "-n", "5", str(BUILD_SH), "--fpc", str(FPC), "--tree", str(tree),
                        "--out", str(dest / "out")], capture_output=True, text=True)
    (dest / "build.log").write_text(r.stdout + r.stderr)
    ok = r.returncode == 0 and (dest / "out" / "fpserver").exists()
    if ok:
        shutil.move(str(dest / "out" / "fpserver"), str(dest / "fpserver"))
    result = {"exe": "fpserver" if ok else None,
              "reason": "" if ok else f"does not compile: {_first_errors(r.stderr)}",
              "trees": trees, "built_from": sha}
    shutil.rmtree(tree)
    shutil.rmtree(dest / "out", ignore_errors=True)
    (dest / "result.json").write_text(json.dumps(result, indent=1) + "\n")


def _load(out: Path, cached: bool) -> Build:
    r = json.loads((out / "result.json").read_text())
    return Build(out / r["exe"] if r["exe"] else None, r["reason"], cached)


def build(repo: Path, sha: str, fresh: bool = False) -> Build:
    """fpserver as it was at sha, from the cache or compiled now.  fresh:
    compiled now whatever the cache holds, into build/bisect/fresh/ (the
    verification of an answer must not lean on the bisect's builds)."""
    trees = tree_ids(repo, sha)
    key = build_key(trees)
    if fresh:
        out = WORK / "fresh" / key
        shutil.rmtree(out, ignore_errors=True)
        _compile(repo, sha, trees, out)
        return _load(out, False)
    out = BUILDS / key
    if (out / "result.json").exists():
        return _load(out, True)
    BUILDS.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="build-", dir=BUILDS))
    try:
        _compile(repo, sha, trees, tmp / "b")
        try:
            os.rename(tmp / "b", out)   # atomic: a concurrent run may have won
        except OSError:
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return _load(out, False) if (out / "result.json").exists() else Build(None, "build vanished", False)


@dataclass
class Outcome:
    code: int            # GOOD, BAD or SKIP
    state: str           # the kit's verdict, or "untestable"
    reason: str          # the kit's figure, or why it could not be judged
    measures: int = 0    # how many times the kit measured


def judge(defect: str, exe: Path, outdir: Path) -> Outcome:
    """The kit's verdict for defect on exe.  defects.measure makes a run
    without a verdict (inconclusive, or failed) once more on a fresh server
    (kit.retried); no verdict then is a skip with both figures."""
    row = kit.Row(f"bisect {exe.parent.name}", "bisect", path=exe)
    shutil.rmtree(outdir / "try1", ignore_errors=True)
    v = defects.measure(defect, row, outdir / "try1", use_strace=False)
    attempts = 2 if {"first_run", "first_attempt_error", "errors"} & v.data.keys() else 1
    if v.state == "reproduced":
        return Outcome(BAD, v.state, v.figure, attempts)
    if v.state == "fixed":
        return Outcome(GOOD, v.state, v.figure, attempts)
    if v.state == "n/a":   # the server refused the defect's flags: no such feature yet
        return Outcome(SKIP, v.state, f"predates the feature: {v.figure}", attempts)
    return Outcome(SKIP, "inconclusive", f"no verdict twice: {v.state}: {v.figure}", 2)


def test(repo: Path, sha: str, defect: str, tag: str = "bisect",
         fresh: bool = False) -> tuple[Outcome, Build | None]:
    """Build and judge one commit (its evidence in build/bisect/runs/)."""
    if not has_server(repo, sha):
        return Outcome(SKIP, "untestable", f"no {SERVER_SOURCE} at this commit"), None
    b = build(repo, sha, fresh)
    if not b.exe:
        return Outcome(SKIP, "untestable", b.reason), b
    c = commit(repo, sha)
    return judge(defect, b.exe, WORK / "runs" / defect / f"{c.short()}-{tag}"), b
