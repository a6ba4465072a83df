"""reuse.py - a run's inputs as one digest, and the reuse of a passed run.

A run of the matrix or of the real clients measures programs the kit built,
with the kit's own scripts, on this machine's tools.  When none of that has
changed since a run that passed, a new run would measure the same things
again (`make test` right after `make repro` did so for 4 minutes): the
passed run is shown instead, said to be reused, with its date, as `go test`
shows "(cached)".  KIT_REMEASURE=1 measures again; a run that failed is
never reused, nor one whose inputs differ in a single byte:

  kit       every file of the kit git sees (tracked, or new and not
            ignored), as it is in the work tree (texts aside: *.md files,
            which no measure reads)
  programs  every program the run starts (each server binary, the probe,
            the analysers, the Wine launcher's .exe), by content
  machine   kernel, CPU count, and each outside tool the measures run
            (path, size and time of its file: a package upgrade changes it)
  settings  the run's arguments and the KIT_* variables (but NOT_SETTINGS)
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
# KIT_ variables that change how a run is shown or driven, not what it
# measures: the progress lines' phase (scripts/phase.sh), the suite's
# parallel steps, and this switch.
NOT_SETTINGS = ("KIT_PHASE_", "KIT_STEPS", "KIT_REMEASURE")
# The outside tools the matrix and the clients run.  Not nc: no measure
# runs it, and `make test` installs it (the min step's), so that with it in
# the digest the suite's matrix and clients measured again after `make
# repro` (the matrix 104 s, 124 s of CPU) with nothing of theirs changed.
TOOLS = ("strace", "tcpdump", "wine", "wine64", "wineserver", "curl", "node", "wrk", "h2load",
         "ip", "python3", "cc", "fpc", "ppcx64")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_sha(path: Path) -> str:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError as e:
        return f"unreadable: {e.strerror}"
    return h.hexdigest()


def kit_files() -> str:
    try:
        r = subprocess.run(["git", "-C", str(TOP), "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], capture_output=True)
    except OSError:   # no git on this machine (the main job does not need it)
        r = None
    if r and r.returncode == 0:
        names = r.stdout.decode().split("\0")
    else:   # no git, or not a work tree (an unpacked tarball): every file but the outputs
        names = []
        for d, dirs, files in os.walk(TOP):
            dirs[:] = [x for x in dirs if x not in (".git", "build", "build-asan", "build-tsan",
                                                    "results")]
            names += [os.path.relpath(os.path.join(d, f), TOP) for f in files]
    lines = [f"{p} {_file_sha(TOP / p)}" for p in sorted(names) if p and not p.endswith(".md")]
    return _sha("\n".join(lines).encode())


def machine() -> dict:
    tools = {}
    for t in TOOLS:
        p = shutil.which(t)
        if p:
            st = Path(p).resolve().stat()
            tools[t] = f"{Path(p).resolve()} {st.st_size} {int(st.st_mtime)}"
    return {"kernel": platform.release(), "cpus": os.cpu_count(), "tools": tools}


def inputs(programs: list[Path], settings: dict) -> dict:
    """The digest of a run's inputs, and its parts (so that a miss says why)."""
    parts = {
        "kit": kit_files(),
        "programs": _sha("\n".join(f"{os.path.relpath(p, TOP)} {_file_sha(p)}"
                                   for p in sorted(set(programs))).encode()),
        "machine": _sha(json.dumps(machine(), sort_keys=True).encode()),
        "settings": _sha(json.dumps(
            {**settings, **{k: v for k, v in os.environ.items() if k.startswith("KIT_")
                            and not k.startswith(NOT_SETTINGS)}}, sort_keys=True).encode()),
    }
    return {"sha256": _sha(json.dumps(parts, sort_keys=True).encode()), "parts": parts}


def passed_run(candidates: list[Path], name: str,
               want: dict) -> tuple[dict | None, Path | None, str]:
    """The first of CANDIDATES/NAME that passed with inputs WANT, and its
    folder; else why none did (which part of the inputs differed)."""
    if os.environ.get("KIT_REMEASURE"):
        return None, None, "KIT_REMEASURE is set"
    why = "no earlier run"
    for d in candidates:
        try:
            doc = json.loads((d / name).read_text())
        except (OSError, ValueError):
            continue
        had = doc.get("inputs") or {}
        if not doc.get("passed"):
            why = f"the run in {os.path.relpath(d, TOP)} did not pass"
        elif had.get("sha256") != want["sha256"]:
            diff = [k for k in want["parts"] if (had.get("parts") or {}).get(k) != want["parts"][k]]
            why = f"since the run in {os.path.relpath(d, TOP)}, changed: {', '.join(diff) or 'all'}"
        else:
            return doc, d, ""
    return None, None, why


def show(doc: dict, src: Path, out: Path, when: str, what: str,
         ignore: tuple[str, ...] = ()) -> str:
    """A passed run SRC reused for OUT: its evidence copied there (not
    IGNORE, the folders of another run kept beside it), and the line that
    says so, with its date WHEN and WHAT its inputs are."""
    if src.resolve() != out.resolve():
        shutil.copytree(src, out, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*ignore))
    return (f"REUSED, not measured again: the run of {when} (in "
            f"{os.path.relpath(src, Path.cwd())}/) passed with these same inputs (sha256 "
            f"{doc['inputs']['sha256'][:16]}: {what}); KIT_REMEASURE=1 measures again")
