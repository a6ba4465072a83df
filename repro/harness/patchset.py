#!/usr/bin/env python3
"""patchset.py - the one place that says which patch fixes which defect.

Every fact comes from the patches themselves: `patches/series` gives the
names and their order, each patch's DEP-3 header gives `Defect:` (the defect
it fixes) and optionally `Needs:` (another patch without which its defect
stays visible: an interaction the matrix shows as a pair row) and
`Also-Fixes:` (defects its change removes as well, although another patch
is their own fix: the matrix then expects them fixed on its row) and
`Security:` (why the defect is security-relevant: the matrix and the
report mark it, and its texts go to FPC's confidential channel first;
the one place that says so) and `Platforms:` (`unix`: the fix removes its defect on Unix only, the
reason after it; the win64 rows expect it still there) and `Report:`
(the upstream report the fix is
filed in: FPC takes a few reports that each apply and are reviewed alone,
`NN-topic` for a public one, `confidential` for the security one; a report's
variant `report:NAME` carries its fixes and nothing else) and `Defect-Bound:` (bytes: the fix removes its defect only for responses whose
body is at most that large; beyond it the defect's mechanism is back, as on
stock.  The matrix's point fits the bound, so its row is fixed; the sweep
expects clean points only up to the bound.  B3's coalesce-writes: a fix
with a bound writes the body with the header, one without switches Nagle
off).  The Pascal
series in `patches/fpc/` carries upstream's commit messages, no DEP-3
field: its patches belong to the fix of the same name, and a fix that takes
more than one upstream commit has `<fix>.patch` and `<fix>.<part>.patch`
(`poll-can-read.fcl-web`), so a Pascal patch's fix is its name up to the
first dot.  kind "fpc" is the C series' facts for the fixes that have a
Pascal patch.

Used by the Makefile, the kit, the matrix, the unit and hostile tests and the
report.  CLI (for make and shell):
    patchset.py names            fixes in series order
    patchset.py variants         stock, each fix, all
    patchset.py pairs            FIX+NEEDED for every Needs: header
    patchset.py defects          B1 B2 ... (every defect some patch fixes)
    patchset.py defect NAME      the defect NAME fixes
    patchset.py fixing Bn        the patches whose Defect: is Bn
    patchset.py fixed VARIANT [KIND]  the defects VARIANT fixes (variant may
                                 be stock, all, a fix, or FIX+FIX; KIND c,
                                 the default, or fpc)
    patchset.py bound VARIANT Bn the body size up to which VARIANT fixes
                                 Bn, empty when at every size (Defect-Bound:)
    patchset.py pascal FIX       the Pascal patches of FIX, series order
    patchset.py reports          the upstream reports, in their order
    patchset.py report NAME      the fixes filed in report NAME, series order
    patchset.py json             everything, as JSON
    patchset.py make             the same facts as make variables (the
                                 Makefile includes build/patchset.mk, so a
                                 make run starts no Python)
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
SERIES_DIRS = {"c": TOP / "patches", "fpc": TOP / "patches" / "fpc"}


@dataclass(frozen=True)
class Patch:
    name: str          # series name without .patch: the variant name
    path: Path
    defect: str        # "B5"
    needs: str | None  # a fix without which `defect` stays visible
    routine: str       # the upstream routine(s) it changes
    also: tuple        # ("B7",): defects it removes too (Also-Fixes:)
    headers: dict
    bound: int | None = None   # Defect-Bound: fixed only up to this body size
    report: str = ""           # Report: the upstream report it is filed in


def read_headers(path: Path) -> dict[str, str]:
    """DEP-3 fields of a patch: 'Field: value' lines (continuations folded)
    before the diff.  For git format-patch files the fields sit in the body
    after the Subject."""
    fields: dict[str, str] = {}
    last = None
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith(("---", "diff --git", "Index: ")):
            break
        m = re.match(r"^([A-Za-z][A-Za-z0-9-]*): ?(.*)$", line)
        if m:
            last = m.group(1)
            fields[last] = m.group(2)
        elif line.startswith(" ") and last:
            fields[last] += "\n" + line[1:]
        else:
            last = None
    return fields


def series(kind: str = "c") -> list[str]:
    d = SERIES_DIRS[kind]
    names = []
    for line in (d / "series").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.append(line[:-len(".patch")] if line.endswith(".patch") else line)
    return names


def fix_of(pascal_name: str) -> str:
    """The fix a Pascal patch belongs to: its name up to the first dot."""
    return pascal_name.split(".", 1)[0]


def pascal(fix: str) -> list[str]:
    """The Pascal patches (patches/fpc/series names) of a fix, in order."""
    try:
        return [n for n in series("fpc") if fix_of(n) == fix]
    except OSError:
        return []


def patches(kind: str = "c") -> list[Patch]:
    if kind == "fpc":
        return [p for p in patches("c") if pascal(p.name)]
    out = []
    for name in series(kind):
        path = SERIES_DIRS[kind] / f"{name}.patch"
        h = read_headers(path)
        m = re.match(r"(B\d+)\b", h.get("Defect", ""))
        if not m:
            raise SystemExit(f"{path}: no 'Defect: B<n>' header")
        needs = (h.get("Needs") or "").strip() or None
        also = tuple(re.findall(r"B\d+", h.get("Also-Fixes", "")))
        b = (h.get("Defect-Bound") or "").strip()
        out.append(Patch(name, path, m.group(1), needs,
                         h.get("Upstream-Routine", ""), also, h, int(b) if b else None,
                         (h.get("Report") or "").strip()))
    return out


def by_name(kind: str = "c") -> dict[str, Patch]:
    return {p.name: p for p in patches(kind)}


def fixes(kind: str = "c") -> list[str]:
    return [p.name for p in patches(kind)]


def variants(kind: str = "c") -> list[str]:
    return ["stock"] + fixes(kind) + ["all"]


def pairs(kind: str = "c") -> list[str]:
    return [f"{p.name}+{p.needs}" for p in patches(kind) if p.needs]


def defects(kind: str = "c") -> list[str]:
    ds = {p.defect for p in patches(kind)}
    return sorted(ds, key=lambda d: int(d[1:]))


def security(kind: str = "c") -> dict[str, str]:
    """The security-relevant defects (a fix's `Security:` field): defect
    -> why, its first sentence up to the colon being the class."""
    return {p.defect: " ".join(p.headers["Security"].split()) for p in patches(kind)
            if p.headers.get("Security", "").strip()}


def fixing(defect: str, kind: str = "c") -> list[str]:
    """The patches whose Defect: is `defect`, in series order."""
    return [p.name for p in patches(kind) if p.defect == defect]


def fixed_by(variant: str, kind: str = "c") -> list[str]:
    """Defects a variant fixes, counting interactions: a fix whose Needs:
    is absent from the variant does not fix its defect."""
    table = by_name(kind)
    if variant == "stock":
        return []
    names = members(variant) if variant.startswith("report:") else \
        list(table) if variant == "all" else variant.split("+")
    unknown = [n for n in names if n not in table]
    if unknown:
        raise KeyError(f"unknown patch {unknown[0]!r}")
    out = [d for n in names if not table[n].needs or table[n].needs in names
           for d in (table[n].defect, *table[n].also)]
    return sorted(set(out), key=lambda d: int(d[1:]))


def reports(kind: str = "c") -> list[str]:
    """The upstream reports (Report:), in order: the public ones by their
    number, the confidential one last."""
    names = {p.report for p in patches(kind) if p.report}
    return sorted(names, key=lambda r: (r == "confidential", r))


def report(name: str, kind: str = "c") -> list[str]:
    """The fixes filed in report `name`, in series order."""
    out = [p.name for p in patches(kind) if p.report == name]
    if not out:
        raise KeyError(f"unknown report {name!r} (the reports: {' '.join(reports(kind))})")
    return out


def unix_only(variant: str, kind: str = "c") -> list[str]:
    """The defects `variant` fixes on Unix only: every fix of it the variant
    carries says `Platforms: unix`."""
    table = by_name(kind)
    mine = [table[n] for n in members(variant) if n in table]
    out = []
    for d in fixed_by(variant, kind):
        fixes = [p for p in mine if d == p.defect]   # what a fix also removes is not bound to it
        if fixes and all(p.headers.get("Platforms", "").split()[:1] == ["unix"] for p in fixes):
            out.append(d)
    return out


def members(variant: str) -> list[str]:
    """The patches a variant carries (stock: none; all: every one;
    report:NAME the fixes of that upstream report)."""
    if variant == "stock":
        return []
    if variant.startswith("report:"):
        return report(variant[len("report:"):])
    return fixes() if variant == "all" else variant.split("+")


def bound(variant: str, defect: str, kind: str = "c") -> int | None:
    """The body size up to which `variant` fixes `defect` when only
    bounded fixes (Defect-Bound:) of it are in the variant; None when it
    fixes it at every size, or not at all (see fixed_by)."""
    if defect not in fixed_by(variant, kind):
        return None
    table = by_name(kind)
    mine = [table[n] for n in members(variant) if n in table and table[n].defect == defect]
    if not mine or any(p.bound is None for p in mine):
        return None
    return max(p.bound for p in mine)


def make_fragment() -> str:
    """PATCH_NAMES, PATCH_PAIRS, PATCH_DEFECTS, PATCH_DEFECT_<name> and
    PATCH_FIXED_<variant> (every variant and pair) for make."""
    lines = ["# Generated by repro/harness/patchset.py make from patches/series and the",
             "# patches' DEP-3 headers; do not edit.",
             f"PATCH_NAMES := {' '.join(fixes())}",
             f"PATCH_PAIRS := {' '.join(pairs())}",
             f"PATCH_DEFECTS := {' '.join(defects())}"]
    lines += [f"PATCH_DEFECT_{p.name} := {p.defect}" for p in patches()]
    lines += [f"PATCH_FIXED_{v} := {' '.join(fixed_by(v))}" for v in variants() + pairs()]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = argv[0], argv[1:]
    if cmd == "names":
        print(" ".join(fixes()))
    elif cmd == "variants":
        print(" ".join(variants()))
    elif cmd == "pairs":
        print(" ".join(pairs()))
    elif cmd == "defects":
        print(" ".join(defects()))
    elif cmd == "defect" and len(args) == 1:
        print(by_name()[args[0]].defect)
    elif cmd == "fixing" and len(args) == 1:
        print(" ".join(fixing(args[0])))
    elif cmd == "fixed" and len(args) in (1, 2):
        print(" ".join(fixed_by(*args)))
    elif cmd == "bound" and len(args) == 2:
        b = bound(args[0], args[1])
        print("" if b is None else b)
    elif cmd == "pascal" and len(args) == 1:
        print(" ".join(pascal(args[0])))
    elif cmd == "reports":
        print(" ".join(reports()))
    elif cmd == "report" and len(args) == 1:
        print(" ".join(report(args[0])))
    elif cmd == "make":
        print(make_fragment(), end="")
    elif cmd == "json":
        print(json.dumps([{"name": p.name, "defect": p.defect, "needs": p.needs,
                           "also_fixes": list(p.also), "bound": p.bound,
                           "routine": p.routine, "report": p.report}
                          for p in patches()], indent=1))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
