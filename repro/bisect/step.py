#!/usr/bin/env python3
"""step.py DEFECT STEPS.jsonl - the test `git bisect run` calls per commit.

Run in the clone being bisected (introduced.py starts it with --no-checkout,
so the commit is BISECT_HEAD).  Builds the server as it was at that commit
and exits with the kit's verdict: 0 fixed (good), 1 reproduced (bad), 125
skip (does not compile, predates the feature, or inconclusive twice).  The
reason goes to stdout (git bisect run shows it) and, with the figures, as
one JSON line to STEPS.jsonl.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import history  # noqa: E402


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 128   # git bisect run: stop, this is not a verdict
    defect, steps = sys.argv[1], Path(sys.argv[2])
    repo = Path.cwd()
    try:
        sha = history.git(repo, "rev-parse", "--verify", "-q", "BISECT_HEAD")
    except Exception:
        sha = history.git(repo, "rev-parse", "HEAD")
    c = history.commit(repo, sha)
    t0 = time.monotonic()
    outcome, b = history.test(repo, sha, defect)
    rec = {"commit": sha, "upstream": c.upstream, "date": c.date, "subject": c.subject,
           "exit": outcome.code, "state": outcome.state, "reason": outcome.reason,
           "measures": outcome.measures, "build_cached": b.cached if b else None,
           "seconds": round(time.monotonic() - t0, 1)}
    with steps.open("a") as f:
        f.write(json.dumps(rec) + "\n")
    word = {history.GOOD: "good", history.BAD: "bad"}.get(outcome.code, "skip")
    print(f"bisect {defect}: {c.short()} {c.date[:10]} {word} ({outcome.state}): {outcome.reason}",
          flush=True)
    return outcome.code


if __name__ == "__main__":
    sys.exit(main())
