#!/usr/bin/env python3
"""scripts/matrix-compare.py BEFORE AFTER - two matrix runs' verdicts, row by
row and column by column (each a matrix.json, or the --out folder holding
it): how many cells agree, every one that does not, and each run's rows as
expected.  For a change that must not move a verdict (a move of code): run
the matrix (KIT_REMEASURE=1) before and after it on the same build.
Exit 0 when every row and column of the one is in the other with the same
verdict, 1 otherwise."""
import json
import sys
from pathlib import Path


def load(arg: str) -> dict:
    p = Path(arg)
    doc = json.loads((p / "matrix.json" if p.is_dir() else p).read_text())
    return {r["row"]: r for r in doc["rows"]}


def main() -> int:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    a, b = load(sys.argv[1]), load(sys.argv[2])
    same, cells, diff = 0, 0, []
    for row in sorted(a.keys() | b.keys()):
        if row not in a or row not in b:
            diff.append(f"{row}: only in {'the first' if row in a else 'the second'} run")
            continue
        va, vb = a[row]["verdicts"], b[row]["verdicts"]
        for col in sorted(va.keys() | vb.keys()):
            sa, sb = va.get(col, {}).get("state"), vb.get(col, {}).get("state")
            cells += 1
            if sa == sb:
                same += 1
            else:
                diff.append(f"{row} {col}: {sa} -> {sb}")
    for name, run in (("first", a), ("second", b)):
        bad = [f"{r} ({', '.join(x['mismatches'])})" for r, x in run.items() if not x["as_expected"]]
        print(f"{name} run: {len(run) - len(bad)} of {len(run)} rows as expected"
              + (f"; not: {'; '.join(bad)}" if bad else ""))
    print(f"{same} of {cells} cells the same verdict"
          + "".join(f"\n  differs: {d}" for d in diff))
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
