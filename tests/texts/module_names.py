#!/usr/bin/env python3
"""module_names.py - no Python file of the kit is named after a standard
library module.

A script run as `python3 DIR/x.py` has DIR first on sys.path, so a file
DIR/bisect.py is what the standard library's own `from bisect import ...`
then loads.  Whether that breaks depends on the interpreter: Debian's
python3 imports `random` (and with it `bisect`) only when a script asks,
and failed on `import tempfile` with a circular import, where an
interpreter that had imported them at start-up ran the script.  Found by a
fresh Debian 12 machine's `make test` (repro/bisect/bisect.py, now
introduced.py).

Prints a TEST line per file that shadows a module, or one OK line; exit 1
if any does.
"""
import subprocess
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]


def main() -> int:
    files = subprocess.run(["git", "-C", str(TOP), "ls-files", "*.py"], capture_output=True,
                           text=True, check=True).stdout.split()
    bad = [f for f in files if Path(f).stem in sys.stdlib_module_names]
    for f in bad:
        print(f"TEST: python file names: {f} [FAIL] named after the standard module "
              f"'{Path(f).stem}': run beside it, the standard library imports this file instead")
    if not bad:
        print(f"TEST: python file names [ OK ] {len(files)} files, none named after a standard module")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
