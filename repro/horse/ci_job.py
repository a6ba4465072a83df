#!/usr/bin/env python3
"""ci_job.py - run a GitHub Actions job of Horse's workflow locally.

usage: ci_job.py TREE JOB [--cache DIR [--cache-after FILE]] [--keep-going]
                 [--source NAME=PATH]... [--only REGEX] [--path DIR]
                 [--timeout-scale X]

TREE is a Horse tree (a copy of the snapshot with the job's files, as
repro/horse/ci-job.sh makes it); JOB a job of TREE/.github/workflows/tests.yml.
The job's own `run:` steps run with bash, in TREE, with the workflow's, the
job's and the step's env, exactly as written.  What the runner provides
instead of the job is emulated, and said so on the step's line:
  actions/checkout   TREE is the checkout
  actions/cache      restored from / saved to DIR/<key> (saved at the end
                     when the job passed, as the action's post step does);
                     --cache-after FILE: the restore waits until FILE
                     exists (another job's end: this one then restores what
                     that one saved, as a later run on GitHub does)
  sudo apt-get ...   not run (no network, no root changes): passes when every
                     package it installs is installed (or, for a metapackage
                     such as fpc, its command is on PATH), else the job is
                     skipped (exit 4)
  --source NAME=PATH the env variable NAME (a network source of the job, such
                     as FPC_SOURCE_URL) is PATH instead
  --only REGEX       only the steps whose name matches run (the steps a
                     patch adds to one of Horse's jobs); the job's other
                     steps are listed as not run here
  --path DIR         DIR first on PATH, standing for what the job's skipped
                     steps put there (GITHUB_PATH: a compiler they built)
  if: ${{ !cancelled() }}  true (nothing cancels a local run); a step's
                     timeout-minutes bounds it, times X (--timeout-scale:
                     a slower stand-in, such as a compiler that builds its
                     package units from source where the job's has them
                     installed)
Any other `uses:` or `if:` form fails the step: a step that needs something
this kit does not know fails here first.  GitHub stops at the first failed
step; --keep-going runs the later ones too (to show which steps fail).
Prints one line per step; exit 0 the job passed, 1 it failed, 4 skipped.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml


def main(argv: list[str]) -> int:
    args = argv[1:]
    cache = keep = after = only = path_first = None
    scale = 1.0
    sources: dict[str, str] = {}
    rest = []
    while args:
        a = args.pop(0)
        if a == "--cache":
            cache = Path(args.pop(0))
        elif a == "--cache-after":
            after = Path(args.pop(0))
        elif a == "--keep-going":
            keep = True
        elif a == "--only":
            only = re.compile(args.pop(0))
        elif a == "--path":
            path_first = args.pop(0)
        elif a == "--timeout-scale":
            scale = float(args.pop(0))
        elif a == "--source":
            k, _, v = args.pop(0).partition("=")
            sources[k] = v
        else:
            rest.append(a)
    if len(rest) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    tree, job_name = Path(rest[0]).resolve(), rest[1]
    wf = yaml.safe_load((tree / ".github" / "workflows" / "tests.yml").read_text())
    job = wf["jobs"].get(job_name)
    if job is None:
        print(f"FAIL job {job_name}: not in tests.yml (jobs: {', '.join(wf['jobs'])})")
        return 1
    if job.get("runs-on") != "ubuntu-latest":
        print(f"SKIP job {job_name}: runs on {job.get('runs-on')}, not Linux")
        return 4
    temp = tree / ".runner-temp"
    temp.mkdir(exist_ok=True)
    env = dict(os.environ, RUNNER_TEMP=str(temp), RUNNER_OS="Linux", GITHUB_WORKSPACE=str(tree), CI="true")
    for scope in (wf.get("env") or {}, job.get("env") or {}):
        env.update({k: str(v) for k, v in scope.items()})
    env.update(sources)
    if path_first:
        env["PATH"] = f"{path_first}:{env.get('PATH', '')}"
    outputs: dict[str, dict[str, str]] = {}
    saves: list[tuple[Path, Path]] = []

    def expr(text: str) -> str:
        def one(m: re.Match) -> str:
            e = m.group(1).strip()
            if e.startswith("env."):
                return env.get(e[4:], "")
            if e == "runner.os":
                return "Linux"
            if e == "github.workspace":
                return str(tree)
            h = re.fullmatch(r"hashFiles\('([^']+)'\)", e)
            if h:
                return hashlib.sha256(b"".join(p.read_bytes() for p in sorted(tree.glob(h.group(1))))).hexdigest()
            raise ValueError(f"expression not emulated: {e}")
        return re.sub(r"\$\{\{(.*?)\}\}", one, text)

    failed = False
    for i, step in enumerate(job["steps"], 1):
        name = step.get("name") or step.get("uses") or f"step {i}"
        cond = step.get("if")
        if only is not None and not only.search(name):
            print(f"--   step {i} {name}: not run here (not a step of this check)")
            continue
        if cond is not None and re.fullmatch(r"\$\{\{\s*!cancelled\(\)\s*\}\}", str(cond).strip()):
            cond = None   # nothing cancels a local run
        if cond is not None:
            m = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+) != 'true'", cond.strip())
            if not m:
                print(f"FAIL step {i} {name}: if: not emulated: {cond}")
                failed = True
                break
            if outputs.get(m.group(1), {}).get(m.group(2)) == "true":
                print(f"ok   step {i} {name}: skipped, as on GitHub ({cond})")
                continue
        if failed and not keep:
            break
        uses = step.get("uses")
        if uses:
            if uses.startswith("actions/checkout@"):
                print(f"ok   step {i} {name}: emulated (the tree is the checkout)")
            elif uses.startswith("actions/cache@"):
                w = step.get("with") or {}
                key = expr(str(w["key"]))
                path = tree / expr(str(w["path"]))
                if after is not None:
                    while not after.exists():
                        time.sleep(0.5)
                if cache is None:
                    hit = False
                else:
                    saved = cache / key
                    hit = saved.is_dir()
                    if hit:
                        shutil.rmtree(path, ignore_errors=True)
                        shutil.copytree(saved, path, symlinks=True)
                    else:
                        saves.append((path, saved))
                outputs[step.get("id", "")] = {"cache-hit": "true" if hit else "false"}
                print(f"ok   step {i} {name}: emulated, {'hit' if hit else 'miss'} ({key[:60]})")
            else:
                print(f"FAIL step {i} {name}: uses {uses}: not emulated")
                failed = True
            continue
        script = expr(str(step["run"]))
        senv = dict(env)
        senv.update({k: expr(str(v)) for k, v in (step.get("env") or {}).items()})
        apt = re.findall(r"sudo apt-get install -y ([^\n]+)", script)
        if apt:
            pkgs = apt[0].split()
            missing = [p for p in pkgs if shutil.which(p) is None and subprocess.run(
                ["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True).stdout
                != "install ok installed"]
            if missing:
                print(f"SKIP step {i} {name}: packages not installed here: {' '.join(missing)}")
                return 4
            print(f"ok   step {i} {name}: emulated (installed here: {' '.join(pkgs)})")
            continue
        print(f"--   step {i} {name}", flush=True)
        t0 = time.monotonic()
        limit = step.get("timeout-minutes")
        try:
            r = subprocess.run(["bash", "-eo", "pipefail", "-c", script], cwd=tree, env=senv,
                               timeout=None if limit is None else float(limit) * 60 * scale)
            rc = r.returncode
        except subprocess.TimeoutExpired:
            rc = f"timed out after timeout-minutes: {limit}"
        took = f"({time.monotonic() - t0:.0f} s)"   # as GitHub shows each step's time
        if rc == 0:
            print(f"ok   step {i} {name} {took}")
        else:
            print(f"FAIL step {i} {name}: exit {rc} {took}")
            failed = True
    if not failed:
        for path, saved in saves:
            if path.is_dir():
                shutil.rmtree(saved, ignore_errors=True)
                saved.parent.mkdir(parents=True, exist_ok=True)
                shutil.copytree(path, saved, symlinks=True)
                print(f"ok   post: cache saved ({saved.name[:60]})")
    print(f"{'FAIL' if failed else 'ok  '} job {job_name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
