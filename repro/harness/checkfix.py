#!/usr/bin/env python3
"""checkfix.py - `make check FIX=NAME [FPCSRC=TREE]`: does a fix still fix
its defects on a tree, and break none of its hazard rows or tests?

NAME is a fix (patches/series), an upstream report (patchset.py reports:
its fixes together) or `all` (the whole series).  A fix whose defect shows
only with another (Needs:) is checked with it.  The real TFPHttpServer is
built from TREE (default: the snapshot in ../shared/upstream; a checkout or a
tarball, as `make repro FPCSRC=` takes it) twice, stock and with the fix;
then, for the defects the fix removes (patchset.py fixed VARIANT fpc):
  verdicts  the matrix's measures (repro/defects/) on both: each
            defect must be REPRO on stock and fixed with the fix;
  hazards   the fix's hazard rows on the real server, every thread mode
            (repro/harness/hazards.py --variant);
  fpcunit   the tests of those defects (and the hazard tests that need
            them), stock and fix, in three orders (repro/fpc/fpcunit/run.sh
            --set ... --tests ...).
One line per defect ('B2   stock REPRO  fix fixed'), one for the hazard rows
and one for the tests, then 'check NAME: PASS' (exit 0) or FAIL (exit 1).
An unknown NAME is refused before anything is built, with the valid names
(exit 2); no trunk toolchain possible (no fpc to bootstrap): exit 4.

A TREE that already carries the fix (you changed fphttpserver.pp yourself)
is told apart by the kit's Pascal patches, applied in a scratch copy of the
files they touch as repro/fpc/build.sh applies them:
  they apply       the tree is stock; the fix is the tree with the patches;
  they reverse     the tree carries exactly the kit's fix: the fix is the
                   tree as it is, stock is the tree with them reversed;
  neither          the tree carries a fix of its own: it is measured as it is
                   as the fix, and the stock column is '-' (nothing to
                   compare: check a tree without your change for it).
The whole set is decided at once (NAME all on a tree carrying some of the
fixes is 'neither').

The trunk toolchain is build/fpc-trunk, shared with `make repro`.  A TREE
folder whose compiler and RTL sources are those the toolchain was built
from, and whose package sources differ from them only in files both have,
is built without building the toolchain again: those files of TREE, as a
patch in front of the fix's ('tree'), over the toolchain's copy (what
changed when you edit fphttpserver.pp; files neither Pascal nor make
sources, such as the prebuilt tools in a tarball, are not compared).  Any
other TREE (a tarball, another compiler or RTL, a new or removed source
file) builds the toolchain from it first, as make repro FPCSRC= does.
Builds go to build/check/NAME/, evidence and logs to results/check/NAME/.

Usage: repro/harness/checkfix.py [--fpcsrc TREE] [--keep-toolchain] [--no-hazards]
                                 [--no-fpcunit] NAME
--keep-toolchain: a TREE the toolchain would have to be built from is
refused (exit 2) rather than built (tests/check: the suite's other steps
use the toolchain meanwhile).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import patchset  # noqa: E402

TOP = Path(__file__).resolve().parents[2]
PHASE = TOP / "scripts" / "phase.sh"
FPC = TOP / "build" / "fpc-trunk" / "bin" / "fpc"
# The Pascal series; KIT_FPC_PATCHES another folder, as for repro/fpc/build.sh
# (tests/check: a fix that changes nothing must fail its check).
PDIR = Path(os.environ.get("KIT_FPC_PATCHES") or TOP / "patches" / "fpc")


def names_text() -> str:
    return (f"fixes: {' '.join(patchset.fixes('fpc'))}\n"
            f"reports: {' '.join(patchset.reports())}\nor: all")


def resolve(name: str) -> tuple[str, list[str]] | None:
    """The variant to build (stock's counterpart) and the fixes it carries,
    or None for a name that is neither a fix, a report nor all."""
    table = patchset.by_name("fpc")
    if name == "all":
        return "all", list(table)
    if name in table:
        fixes = [name]
    elif name in patchset.reports():
        fixes = patchset.report(name)
    else:
        return None
    fixes += [table[f].needs for f in fixes if table[f].needs and table[f].needs not in fixes]
    return "+".join(fixes), fixes


def pascal_patches(variant: str, fixes: list[str]) -> list[Path]:
    """The Pascal patches of the variant, in series order (build.sh's)."""
    names = [ln.split("#", 1)[0].strip() for ln in (PDIR / "series").read_text().splitlines()]
    names = [n[:-len(".patch")] if n.endswith(".patch") else n for n in names if n]
    return [PDIR / f"{n}.patch" for n in names
            if variant == "all" or patchset.fix_of(n) in fixes]


def touched(patches: list[Path]) -> list[str]:
    out = []
    for p in patches:
        for line in p.read_text(errors="replace").splitlines():
            if line.startswith("+++ b/"):
                f = line[len("+++ b/"):].split()[0]
                if f not in out:
                    out.append(f)
    return out


def applied(src: Path, patches: list[Path], work: Path, reverse: bool) -> bool:
    """Whether the patches apply to src's files (reverse: undo, last first)
    in work, a scratch copy of the files they touch; never asks (-t), never
    takes a patch that looks applied already for one to apply (-N)."""
    shutil.rmtree(work, ignore_errors=True)
    for f in touched(patches):
        if not (src / f).is_file():
            return False
        (work / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src / f, work / f)
    for p in (reversed(patches) if reverse else patches):
        r = subprocess.run(["patch", "-s", "-t", "-N", "-p1", "--no-backup-if-mismatch",
                            *(["-R"] if reverse else []), "-d", str(work), "-i", str(p)],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if r.returncode != 0:
            return False
    return True


def udiff(a: Path, b: Path, files: list[str]) -> str:
    """A patch -p1 diff taking a's files to b's."""
    out = ""
    for f in files:
        r = subprocess.run(["diff", "-u", "--label", f"a/{f}", "--label", f"b/{f}",
                            str(a / f), str(b / f)], capture_output=True, text=True, errors="replace")
        if r.returncode > 1:
            raise SystemExit(f"check: diff failed: {r.stderr.strip()}")
        out += r.stdout
    return out


# What a change of is a change of the sources (make check compares them).
SOURCE = (".pp", ".pas", ".p", ".inc", ".lpr", ".msg", ".fpc", ".fpm")


def fpc_packages() -> list[str]:
    """The packages scripts/fpc-trunk.sh copies (its PKGS)."""
    for line in (TOP / "scripts" / "fpc-trunk.sh").read_text().splitlines():
        if line.startswith("PKGS="):
            return line.split("=", 1)[1].strip('"').split()
    return []


def is_source(f: Path) -> bool:
    return f.name.endswith(SOURCE) or f.name.startswith("Makefile")


def differing(tree: Path, tc: Path, sub: str) -> tuple[list[str], list[str]] | None:
    """(files of tree/sub that differ from tc/sub's, source files only in
    tree/sub), paths from the tree's top; None if diff failed.  Files only
    in tc (build outputs) and files that are no source are left out."""
    if not (tree / sub).is_dir():
        return [], []
    r = subprocess.run(["diff", "-rq", "--exclude=.git", str(tree / sub), str(tc / sub)],
                       capture_output=True, text=True, errors="replace")
    if r.returncode > 1 and not r.stdout:
        return None
    changed, new = [], []
    for line in r.stdout.splitlines():
        if line.startswith("Files ") and line.endswith(" differ"):
            f = line[len("Files "):].split(" and ", 1)[0]
            rel = os.path.relpath(f, tree)
            if is_source(Path(rel)):
                changed.append(rel)
        elif line.startswith(f"Only in {tree}"):
            where, name = line[len("Only in "):].split(": ", 1)
            rel = os.path.relpath(os.path.join(where, name), tree)
            path = tree / rel
            if (is_source(path) if path.is_file()
                    else any(is_source(f) for f in path.rglob("*") if f.is_file())):
                new.append(rel)
    return changed, new


def tree_overlay(tree: Path, tc: Path) -> tuple[bool, str]:
    """Whether TREE can be built on the toolchain as it is, and the patch
    of its package files that differ (empty: none)."""
    if not (tree.is_dir() and FPC.exists() and (tc / "compiler").is_dir()):
        return False, ""
    patch_files = []
    for sub in ["compiler", "rtl"] + [f"packages/{p}" for p in fpc_packages()]:
        d = differing(tree, tc, sub)
        if d is None or d[1] or (d[0] and not sub.startswith("packages/")):
            return False, ""
        patch_files += d[0]
    return True, udiff(tc, tree, patch_files)


class Check:
    def __init__(self, name: str, variant: str, fixes: list[str], tree: str | None,
                 keep_toolchain: bool = False):
        self.name, self.variant, self.fixes, self.tree = name, variant, fixes, tree
        self.defects = patchset.fixed_by(variant, "fpc")
        self.builds = TOP / "build" / "check" / name
        self.out = TOP / "results" / "check" / name
        self.env = dict(os.environ, KIT_PHASES=str(TOP / "build" / "check" / "phases.tsv"))
        self.mode = ""
        self.keep_toolchain = keep_toolchain
        self.sets: dict[str, str | None] = {}

    def phase(self, title: str, argv: list[str], log: Path | None = None, **kw) -> int:
        """argv as a phase (scripts/phase.sh: its progress and time); into
        log when given (a line per TEST, FAIL lines shown)."""
        if log is None:
            return subprocess.run([str(PHASE), "run", title, "--", *argv], cwd=TOP,
                                  env=self.env, **kw).returncode
        with open(log, "w") as f:
            p = subprocess.Popen([str(PHASE), "run", title, "--", *argv], cwd=TOP,
                                 env=self.env, stdout=subprocess.PIPE, text=True)
            for line in p.stdout:
                f.write(line)
                if line.startswith("==") or line.startswith("   ...") or "[FAIL]" in line:
                    print(line, end="", flush=True)
            return p.wait()

    def build(self) -> tuple[Path | None, Path] | None:
        """The toolchain, the tools, the two servers: (stock, fix) programs,
        stock None when there is none to build; None when a build failed."""
        nproc = str(os.cpu_count() or 2)
        subprocess.run([str(PHASE), "begin", f"make check {self.name}"], env=self.env, check=True)
        tc_src = TOP / "build" / "fpc-trunk" / "src"
        tree = Path(self.tree) if self.tree else None
        keep, tree_patch = tree_overlay(tree, tc_src) if tree else (False, "")
        if keep:
            print(f"== trunk toolchain: kept (its compiler and RTL sources are the tree's; "
                  f"{plural(tree_patch.count(chr(10) + '+++ '), 'package file')} of the tree over its copy)",
                  flush=True)
            chain = None
        elif self.keep_toolchain and tree:
            print(f"check: --keep-toolchain: {tree} cannot be built on build/fpc-trunk as it is "
                  "(another compiler or RTL, a new or removed source file, or a tarball)")
            raise SystemExit(2)
        else:
            chain = subprocess.Popen([str(PHASE), "run", "trunk toolchain", "--",
                                      str(TOP / "scripts" / "fpc-trunk.sh"), *([self.tree] if self.tree else [])],
                                     cwd=TOP, env=self.env)
        rc = 0
        try:
            if self.phase("C tools", ["make", "--no-print-directory", f"-j{nproc}",
                                      "build/probe", "build/strace-analyse"]) != 0:
                return None
        finally:
            if chain:
                rc = chain.wait()
        if rc == 4:
            raise SystemExit(4)
        if rc != 0 or not FPC.exists():
            print("check: no trunk toolchain (build/fpc-trunk): see above")
            return None
        patches = pascal_patches(self.variant, self.fixes)
        files = touched(patches)
        self.builds.mkdir(parents=True, exist_ok=True)
        # One series for every build (repro/fpc/build.sh and the fpcunit
        # builds read it from KIT_FPC_PATCHES): 'tree' (the tree's package
        # files over the toolchain's copy) first, the kit's, 'unfix' last.
        series = self.builds / "series"
        shutil.rmtree(series, ignore_errors=True)
        series.mkdir(parents=True)
        names = [ln.split("#", 1)[0].strip() for ln in (PDIR / "series").read_text().splitlines()]
        names = [n if n.endswith(".patch") else f"{n}.patch" for n in names if n]
        for n in names:
            shutil.copy(PDIR / n, series / n)
        tree_set = "tree" if tree_patch else ""
        if tree_patch:
            (series / "tree.patch").write_text(tree_patch)
            names.insert(0, "tree.patch")
        view = tree if keep else tc_src   # the files the builds start from
        join = lambda *sets: "+".join(x for x in sets if x) or "stock"   # noqa: E731
        with tempfile.TemporaryDirectory(prefix="kit-check.") as tmp:
            work = Path(tmp) / "work"
            if applied(view, patches, work, reverse=False):
                self.mode = "the kit's patches applied to it"
                stock_set, fix_set = join(tree_set), join(tree_set, self.variant if self.variant != "all" else "")
                if self.variant == "all":
                    fix_set = "all"
            elif applied(view, patches, work, reverse=True):
                self.mode = ("it carries the kit's fix: the fix is the tree as it is, "
                             "stock the tree with the patches reversed")
                (series / "unfix.patch").write_text(udiff(view, work, files))
                names.append("unfix.patch")
                stock_set, fix_set = join(tree_set, "unfix"), join(tree_set)
            else:
                self.mode = ("the kit's patches neither apply nor reverse: the tree is taken "
                             "to carry a fix of its own and measured as it is; no stock column")
                stock_set, fix_set = None, join(tree_set)
        (series / "series").write_text("".join(f"{n}\n" for n in names))
        self.env["KIT_FPC_PATCHES"] = str(series)
        self.sets = {"stock": stock_set, "fix": fix_set}
        todo = [("fix", fix_set)] + ([("stock", stock_set)] if stock_set else [])

        def one(job: tuple[str, str]) -> tuple[str, int]:
            what, s = job
            with open(self.builds / f"{what}.log", "w") as log:
                r = subprocess.run([str(TOP / "repro" / "fpc" / "build.sh"), "--fpc", str(FPC),
                                    "--set", s, "--out", str(self.builds / what)],
                                   cwd=TOP, env=self.env, stdout=log, stderr=log)
            return what, r.returncode
        t0 = time.monotonic()
        print(f"== servers (stock: set {stock_set or '-'}, fix: set {fix_set}; side by side)", flush=True)
        with ThreadPoolExecutor(2) as ex:
            done = dict(ex.map(one, todo))
        secs = time.monotonic() - t0
        bad = [w for w, rc in done.items() if rc != 0]
        for w in bad:
            print(f"check: the {w} server does not build (build/check/{self.name}/{w}.log):")
            print((self.builds / f"{w}.log").read_text()[-1500:])
        print(f"== servers: {secs:.1f} s" + (" (failed)" if bad else ""), flush=True)
        subprocess.run([str(PHASE), "record", "servers", f"{secs:.1f}"], env=self.env)
        if bad:
            return None
        return ((self.builds / "stock" / "fpserver") if stock_set else None,
                self.builds / "fix" / "fpserver")

    def verdicts(self, stock: Path | None, fix: Path) -> dict:
        """defects.measure of each defect on each server, side by side (B7 and
        B8, which load the machine, one at a time)."""
        import kit   # noqa: E402  (after the name is known good: kit starts nothing on import)
        import defects   # noqa: E402  (the registry of measures, repro/defects/)
        kit.raise_fd_limit()
        use_strace = kit.have_strace()
        rows = [kit.Row("fix", self.variant, path=fix)]
        if stock:
            rows.insert(0, kit.Row("stock", "stock", path=stock))
        shutil.rmtree(self.out / "verdicts", ignore_errors=True)
        t0 = time.monotonic()
        print(f"== verdicts ({' '.join(self.defects)} on {' and '.join(r.name for r in rows)})", flush=True)

        def one(rd: tuple) -> tuple:
            r, d = rd
            v = defects.measure(d, r, self.out / "verdicts" / r.name, use_strace)
            print(f"   {d} {r.name}: {v.state} ({time.monotonic() - t0:.1f} s)", flush=True)
            return (r.name, d), v
        jobs = [(r, d) for d in self.defects for r in rows]
        with ThreadPoolExecutor(8) as light, ThreadPoolExecutor(1) as heavy:
            futs = [(heavy if d in defects.HEAVY else light).submit(one, (r, d)) for r, d in jobs]
            got = dict(f.result() for f in futs)
        secs = time.monotonic() - t0
        print(f"== verdicts: {secs:.1f} s", flush=True)
        subprocess.run([str(PHASE), "record", "verdicts", f"{secs:.1f}"], env=self.env)
        with open(self.out / "verdicts.txt", "w") as f:
            for (row, d), v in sorted(got.items(), key=lambda kv: (int(kv[0][1][1:]), kv[0][0])):
                f.write(f"{d} {row}: {v.state}: {v.figure}\n")
        return got

    def tests(self, which: str, argv: list[str]) -> tuple[int, int, int]:
        """A TEST-line tool as a phase, its log in results/check/NAME/:
        (ok, failed, exit)."""
        log = self.out / f"{which}.log"
        rc = self.phase(which, argv, log)
        lines = log.read_text(errors="replace").splitlines()
        return (sum("[ OK ]" in ln for ln in lines if ln.startswith("TEST:")),
                sum("[FAIL]" in ln for ln in lines if ln.startswith("TEST:")), rc)


def plural(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def short(state: str) -> str:
    return {"reproduced": "REPRO", "fixed": "fixed", "inconclusive": "??",
            "n/a": "n/a", "failed": "FAIL"}.get(state, state)


def main() -> int:
    ap = argparse.ArgumentParser(prog="checkfix.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("name", nargs="?", help="a fix, a report or all")
    ap.add_argument("--fpcsrc", metavar="TREE", help="an FPCSource checkout or tarball")
    ap.add_argument("--keep-toolchain", action="store_true",
                    help="refuse a TREE the toolchain would have to be built from")
    ap.add_argument("--no-hazards", action="store_true")
    ap.add_argument("--no-fpcunit", action="store_true")
    a = ap.parse_args()
    got = resolve(a.name) if a.name else None
    if got is None:
        print(("check: no FIX given" if not a.name else f"check: no fix or report named {a.name!r}")
              + " (make check FIX=NAME [FPCSRC=TREE]); the names:\n" + names_text(), file=sys.stderr)
        return 2
    if a.fpcsrc and not Path(a.fpcsrc).exists():
        print(f"check: FPCSRC {a.fpcsrc}: no such tree or tarball", file=sys.stderr)
        return 2
    variant, fixes = got
    tree = str(Path(a.fpcsrc).resolve()) if a.fpcsrc else None
    c = Check(a.name, variant, fixes, tree, a.keep_toolchain)
    c.out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    print(f"check {a.name}: {variant if variant != a.name else 'the fix'} "
          f"(defects {' '.join(c.defects)}) on the real server from "
          f"{tree or 'the snapshot in ../shared/upstream'}", flush=True)
    servers = c.build()
    if servers is None:
        print(f"check {a.name}: FAIL (a build failed)")
        return 1
    stock, fix = servers
    got_v = c.verdicts(stock, fix)
    # The hazard rows and the fpcunit tests side by side: both decide by
    # counts, and the tests mostly wait (stock's wait out their deadlines).
    jobs = {}
    if not a.no_hazards:
        jobs["hazards"] = ["python3", "repro/harness/hazards.py", "--variant", variant,
                           "--real-exe", str(fix), "--no-model",
                           "--json", str(c.out / "hazards" / "hazards.json")]
    if not a.no_fpcunit:
        argv = ["repro/fpc/fpcunit/run.sh", "--tests", " ".join(c.defects)]
        for what, s in c.sets.items():
            if s:
                argv += ["--set", s, "--judge", f"{s}={' '.join(c.defects) if what == 'fix' else ''}"]
        # Its builds in a folder of their own: the suite's fpcunit step may
        # build the same sets in build/fpcunit beside it.
        c.env["KIT_FPCUNIT_OUT"] = str(c.builds / "fpcunit")
        jobs["fpcunit"] = argv
    with ThreadPoolExecutor(2) as ex:
        futs = {k: ex.submit(c.tests, k, v) for k, v in jobs.items()}
        done = {k: f.result() for k, f in futs.items()}
    hz, fu = done.get("hazards"), done.get("fpcunit")
    subprocess.run([str(PHASE), "table"], env=c.env)
    print(f"\ncheck {a.name}: the tree ({tree or 'the snapshot'}): {c.mode}")
    ok = True
    for d in c.defects:
        fs = got_v[("fix", d)]
        ss = got_v.get(("stock", d))
        good = fs.state == "fixed" and (ss is None or ss.state == "reproduced")
        ok &= good
        print(f"{d:<4} stock {short(ss.state) if ss else '-':<6} fix {short(fs.state)}"
              + ("" if good else f"   UNEXPECTED: stock {ss.figure if ss else '-'}; fix {fs.figure}"))
    for what, r in (("hazards", hz), ("fpcunit", fu)):
        if r is None:
            print(f"{what:<8} not run (--no-{what})")
            continue
        n_ok, n_fail, rc = r
        good = rc in (0, 4) and n_fail == 0
        ok &= good
        print(f"{what:<8} {n_ok} of {n_ok + n_fail} checks as expected"
              + (" (skipped: nothing to run it on)" if rc == 4 else "")
              + f" (results/check/{a.name}/{what}.log)")
    print(f"evidence: results/check/{a.name}/ (verdicts.txt: the figures); "
          f"{time.monotonic() - t0:.0f} s")
    print(f"check {a.name}: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
